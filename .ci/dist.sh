#!/usr/bin/env bash
# Distribution check: one sdist, and from it (unpacked, build isolation pulling Cython and numpy)
# one wheel per Python given; their metadata (twine) and contents checked against the source
# tree and pyproject.toml; the conda-forge recipe checked against pyproject.toml
# (.ci/recipe_check.py). The wheels are what installing the sdist builds: they go to
# $N5MS_CI_WHEELS when set, where the steps that test the installed package take them
# (.ci/installed.sh, .ci/oldest.sh, .ci/zarr2.sh, .ci/docs.sh), so the package is compiled once per Python.
# Usage: .ci/dist.sh PYTHON [PYTHON ...]   (default: python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/.ci/lib.sh"
[ $# -gt 0 ] || set -- python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# Built from a copy of the tracked and untracked-but-not-ignored files, so the
# checkout gets no generated .c files or egg-info and stray build output cannot leak in.
ci_sources "$work/src"
ci_venv "$work/tools" python3
ci_install "$work/tools" build twine py-rattler-build==0.73.0
"$work/tools/bin/python" "$work/src/.ci/recipe_check.py"
(cd "$work/src" && "$work/tools/bin/python" -m build --sdist --outdir "$work/dist" . >"$work/build.log" 2>&1) \
    || { tail -50 "$work/build.log"; exit 1; }
sdist=$(ls "$work/dist"/*.tar.gz)
for py in "$@"; do
    echo "=== dist: a wheel from the sdist for $("$py" --version) ==="
    "$N5MS_UV" build -q --wheel --python "$py" --out-dir "$work/dist" "$sdist" >"$work/build.log" 2>&1 \
        || { tail -50 "$work/build.log"; exit 1; }
done
"$work/tools/bin/twine" check --strict "$work/dist"/*

"$work/tools/bin/python" - "$work/dist" "$work/src" <<'EOF'
"""Contents of the sdist and the wheel, against the source tree and pyproject.toml."""
import configparser
import re
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

dist, src = Path(sys.argv[1]), Path(sys.argv[2])
(sdist,) = dist.glob("*.tar.gz")
wheels = sorted(dist.glob("*.whl"))
errors = [] if wheels else ["no wheel was built"]

version = re.search(r'__version__ = "(.+)"', (src / "n5mscodecs/_version.py").read_text())[1]
if not sdist.name == f"n5mscodecs-{version}.tar.gz":
    errors.append(f"sdist {sdist.name} does not carry version {version}")
changelog_heading = re.search(r"^## (\S+)", (src / "CHANGELOG.md").read_text(), re.M)[1]
if changelog_heading != version:
    errors.append(f"CHANGELOG.md's first entry is {changelog_heading}, the version is {version}")

with tarfile.open(sdist) as tar:
    sdist_files = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
required = {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "LICENSE",
            "conftest.py", "tests/support.py", "tests/czi/test_czi_chunked.py", "docs/index.md",
            "n5mscodecs/multiset/_kernels.pyx", "n5mscodecs/multiset/_hash_table.pxd", "n5mscodecs/py.typed",
            "n5mscodecs/zarr/codecs.py"}
required |= {p.relative_to(src).as_posix() for pattern in
             ("n5mscodecs/**/*.py", "n5mscodecs/**/*.pyi", "n5mscodecs/**/*.pyx", "n5mscodecs/**/*.pxd", "n5mscodecs/**/*.pxi", "tests/**/*.py",
              "docs/**/*.md", "docs/**/*.rst", "docs/**/*.py", "docs/**/*.txt", "benchmarks/*.py",
              "fuzz/*.py", "fuzz/regressions/*/*", "tests/fixtures/**/*")
             for p in src.glob(pattern) if "_build" not in p.parts and p.is_file()}
errors += [f"sdist lacks {name}" for name in sorted(required - sdist_files)]
errors += [f"sdist holds generated {name}" for name in sorted(sdist_files)
           if name.endswith((".c", ".so", ".pyd")) or "__pycache__" in name]

project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
expected = dict(project["entry-points"], console_scripts=project["scripts"])
modules = {name for name in sdist_files if name.startswith("n5mscodecs/") and name.endswith(".py")}
for wheel in wheels:
    with zipfile.ZipFile(wheel) as whl:
        wheel_files = set(whl.namelist())
        (entry_points_txt,) = [n for n in wheel_files if n.endswith(".dist-info/entry_points.txt")]
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str
        entry_points.read_string(whl.read(entry_points_txt).decode())
    errors += [f"{wheel.name} lacks {name}" for name in sorted(modules - wheel_files)]
    for pyx in sorted(name for name in sdist_files if name.startswith("n5mscodecs/") and name.endswith(".pyx")):
        stem = pyx[: -len(".pyx")]
        if not any(n.startswith(stem + ".") and n.endswith((".so", ".pyd")) for n in wheel_files):
            errors.append(f"{wheel.name} lacks the compiled extension of {pyx}")
        if stem + ".pyi" not in wheel_files:
            errors.append(f"{wheel.name} lacks the type stub of {pyx} ({stem}.pyi)")
    for group, names in expected.items():
        found = dict(entry_points[group]) if entry_points.has_section(group) else {}
        if found != names:
            errors.append(f"{wheel.name} entry points [{group}] are {found}, pyproject.toml says {names}")
    print(f"wheel {wheel.name}: {len(wheel_files)} files; entry point groups {sorted(expected)}")

print(f"sdist {sdist.name}: {len(sdist_files)} entries")
if errors:
    sys.exit("dist contents:\n  " + "\n  ".join(errors))
EOF

if [ -n "${N5MS_CI_WHEELS:-}" ]; then
    mkdir -p "$N5MS_CI_WHEELS"
    cp "$work/dist"/*.whl "$sdist" "$N5MS_CI_WHEELS"/
fi
echo "dist: all checks passed in $((SECONDS - started)) s"
