#!/usr/bin/env bash
# The napari reader in a real viewer: installs napari with a Qt binding into the venv the README's
# test command made (.venv, Python 3.11) and runs tests/test_napari.py, which adds the Paintera layer
# to napari.Viewer(show=False) on Qt's offscreen platform (no display needed), beside napari-ome-zarr's
# layer of an OME-Zarr export. Fails if that test
# skips, so a broken napari install cannot pass unnoticed.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
started=$SECONDS
ci_install .venv "napari[pyqt6]" napari-ome-zarr
echo "napari: installed in $((SECONDS - started)) s"
export QT_QPA_PLATFORM=offscreen
.venv/bin/python -m pytest -q -p no:cacheprovider -ra tests/test_napari.py | tee /tmp/n5ms-napari.log
if grep -q "^SKIPPED" /tmp/n5ms-napari.log; then
    echo "napari: a test skipped although napari and Qt were installed" >&2
    exit 1
fi
