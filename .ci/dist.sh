#!/usr/bin/env bash
# Distribution check: build the sdist and wheel, check their metadata and contents,
# check the conda-forge recipe against pyproject.toml (.ci/recipe_check.py), then
# install the wheel built from the sdist (build isolation pulls Cython and numpy)
# in a fresh venv and run the test suite and the doctests against the installed package.
# Usage: .ci/dist.sh [PYTHON]   (default: python3)
set -euo pipefail
py=${1:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "=== dist: $("$py" --version) ==="

# Build from a copy of the tracked and untracked-but-not-ignored files, so the
# checkout gets no generated .c files or egg-info and stray build output cannot leak in.
mkdir "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard \
    | (cd "$repo" && tar --null -T - --ignore-failed-read -cf -) \
    | tar -xf - -C "$work/src"

"$py" -m venv "$work/tools"
"$work/tools/bin/pip" install -q build twine py-rattler-build==0.73.0
"$work/tools/bin/python" "$work/src/.ci/recipe_check.py"
(cd "$work/src" && "$work/tools/bin/python" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1) \
    || { tail -50 "$work/build.log"; exit 1; }
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
(wheel,) = dist.glob("*.whl")
errors = []

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

with zipfile.ZipFile(wheel) as whl:
    wheel_files = set(whl.namelist())
    (entry_points_txt,) = [n for n in wheel_files if n.endswith(".dist-info/entry_points.txt")]
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.optionxform = str
    entry_points.read_string(whl.read(entry_points_txt).decode())
modules = {name for name in sdist_files if name.startswith("n5mscodecs/") and name.endswith(".py")}
errors += [f"wheel lacks {name}" for name in sorted(modules - wheel_files)]
for pyx in sorted(name for name in sdist_files if name.startswith("n5mscodecs/") and name.endswith(".pyx")):
    stem = pyx[: -len(".pyx")]
    if not any(n.startswith(stem + ".") and n.endswith((".so", ".pyd")) for n in wheel_files):
        errors.append(f"wheel lacks the compiled extension of {pyx}")
    if stem + ".pyi" not in wheel_files:
        errors.append(f"wheel lacks the type stub of {pyx} ({stem}.pyi)")

project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
expected = dict(project["entry-points"], console_scripts=project["scripts"])
for group, names in expected.items():
    found = dict(entry_points[group]) if entry_points.has_section(group) else {}
    if found != names:
        errors.append(f"wheel entry points [{group}] are {found}, pyproject.toml says {names}")

print(f"sdist {sdist.name}: {len(sdist_files)} entries; wheel {wheel.name}: {len(wheel_files)} files; "
      f"entry point groups {sorted(expected)}")
if errors:
    sys.exit("dist contents:\n  " + "\n  ".join(errors))
EOF

# Fresh venv: install the wheel (not editable; `build` compiled it from the unpacked
# sdist, so it is what installing the sdist would build, without compiling twice),
# run the tests from the unpacked sdist with its uncompiled package directory
# removed, so that only the installed package can be imported (also by the tests'
# `python -c` subprocesses).
"$py" -m venv "$work/test"
sdist=$(ls "$work/dist"/*.tar.gz)
wheel=$(ls "$work/dist"/*.whl)
"$work/test/bin/pip" install -q "$wheel[test]" >"$work/install.log" 2>&1 \
    || { tail -50 "$work/install.log"; exit 1; }
"$work/test/bin/pip" check
mkdir "$work/unpacked"
tar -xzf "$sdist" -C "$work/unpacked"
cd "$work/unpacked"/n5mscodecs-*/
rm -r n5mscodecs
"$work/test/bin/python" -c 'import n5mscodecs, n5mscodecs.zarr; print("installed:", n5mscodecs.__file__, n5mscodecs.__version__)'
"$work/test/bin/n5ms" --help >/dev/null
if [ -z "${N5MSCODECS_SHARED:-}" ] && [ -d "$repo/../shared" ]; then
    export N5MSCODECS_SHARED="$repo/../shared"  # the real N5 data, when present beside the checkout
fi
"$work/test/bin/python" -m pytest -p no:cacheprovider -q tests
"$work/test/bin/python" -m pytest -p no:cacheprovider -q --pyargs n5mscodecs  # doctests (addopts)

echo "dist: all checks passed in ${SECONDS}s"
