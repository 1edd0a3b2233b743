#!/usr/bin/env bash
# The test suite on Python 3.13, as the README's test command runs it on 3.11: a fresh venv,
# the package installed editable from this checkout with the test extra (the kernels are
# compiled in place, next to other Pythons' builds: each has its own cpython-3XX suffix; uv
# installs, see .ci/lib.sh), then pytest. An extra requirement with no 3.13 wheel (and no build) is skipped and said so; the
# tests that need it skip (pytest -ra lists every skip with its reason at the end).
# Usage: .ci/py313.sh [PYTHON3.13]   (default: python3.13 on PATH, else pyenv's 3.13.x)
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh

is_313() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; }
python=${1:-}
if [ -z "$python" ]; then  # python3.13 on PATH when it runs (a pyenv shim may not), else pyenv's
    for candidate in "$(command -v python3.13 || true)" "$HOME"/.pyenv/versions/3.13*/bin/python3.13 \
                     /root/.pyenv/versions/3.13*/bin/python3.13; do
        [ -x "$candidate" ] && is_313 "$candidate" && { python=$candidate; break; }
    done
fi
[ -n "$python" ] || { echo "py313: no working python3.13 found" >&2; exit 1; }
is_313 "$python" || { echo "py313: $python is not Python 3.13" >&2; exit 1; }
echo "=== py313: $("$python" --version) ($python) ==="

started=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ci_venv "$work/venv" "$python"
pip=(ci_install "$work/venv")

if ! "${pip[@]}" -e ".[test]" >"$work/install.log" 2>&1; then
    tail -20 "$work/install.log"
    echo "py313: the test extra does not install as a whole; its requirements one by one:"
    "${pip[@]}" -e .
    "$work/venv/bin/python" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]))' \
        >"$work/requirements"
    while read -r requirement; do
        "${pip[@]}" "$requirement" >>"$work/install.log" 2>&1 \
            || echo "py313: SKIPPED requirement '$requirement': no Python 3.13 wheel or build (its tests skip)"
    done <"$work/requirements"
fi
"${pip[@]}" pytest-xdist  # CI's own, for -n 2 below (not in the extras)
echo "py313: installed in $((SECONDS - started)) s"
"$work/venv/bin/python" - <<'EOF'
import importlib.metadata as md


def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "MISSING"


names = ["numpy", "numcodecs", "zstandard", "lz4", "zarr", "dask", "imagecodecs", "tifffile", "s3fs", "moto"]
print("py313:", ", ".join(f"{name} {version(name)}" for name in names))
EOF

# two workers (the machines have two cores; much of the suite waits on servers, children and time-outs)
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q -m "not slow" -n 2  # the slow ones: once, in the README step
echo "py313: passed in $((SECONDS - started)) s"
