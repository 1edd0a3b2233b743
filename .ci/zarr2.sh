#!/usr/bin/env bash
# The codecs through zarr-python 2.18: a fresh venv with zarr<3 (and so numcodecs<0.16) and the
# installed package (the wheel built from the sdist, see .ci/lib.sh), then the zarr 2 tests and the
# codec contract (tests/zarr_integration/test_zarr2.py skips where zarr 3 is installed, so it runs
# only here), from the checkout's files with the uncompiled package directory removed.
# Usage: .ci/zarr2.sh [PYTHON]   (default python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/.ci/lib.sh"
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=$(ci_wheel "$python")
ci_venv "$work/venv" "$python"
ci_install "$work/venv" "zarr<3" "pytest>=8" "hypothesis>=6" "$wheel"
"$work/venv/bin/python" -c 'import zarr, numcodecs; print("zarr", zarr.__version__, "numcodecs", numcodecs.__version__)'
"$work/venv/bin/python" -c 'import zarr, sys; sys.exit(zarr.__version__.startswith("2.") is False)'
ci_sources "$work/src"
cd "$work/src"
rm -r n5mscodecs
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q tests/zarr_integration/test_zarr2.py tests/test_codec_contract.py
