#!/usr/bin/env bash
# The codecs through zarr-python 2.18: a fresh venv with zarr<3 (and so numcodecs<0.16),
# the package built in place as the README does, then the zarr 2 tests and the codec
# contract (tests/zarr_integration/test_zarr2.py skips where zarr 3 is installed, so it runs only here).
# Usage: .ci/zarr2.sh [PYTHON]   (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$python" -m venv "$venv"
"$venv/bin/pip" install -q "zarr<3" "pytest>=8" "hypothesis>=6"
"$venv/bin/pip" install -q -e .
"$venv/bin/python" -c 'import zarr, numcodecs; print("zarr", zarr.__version__, "numcodecs", numcodecs.__version__)'
"$venv/bin/python" -c 'import zarr, sys; sys.exit(zarr.__version__.startswith("2.") is False)'
"$venv/bin/python" -m pytest -p no:cacheprovider -q tests/zarr_integration/test_zarr2.py tests/test_codec_contract.py
