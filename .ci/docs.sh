#!/usr/bin/env bash
# Build the Sphinx site in docs/ with warnings as errors (and nitpicky references).
#
#   bash .ci/docs.sh [PYTHON]        PYTHON defaults to python3
#
# Makes a temporary venv, installs the package (the wheel built from the sdist, see
# .ci/lib.sh: autodoc imports its compiled kernels) with the zarr, dask and cli extras
# and docs/requirements.txt, runs
# sphinx-build -W --keep-going -n, then runs the pages' Python examples
# (docs/check_examples.py; DOCS_SKIP_EXAMPLES=1 skips that). Exits non-zero on
# any warning or failing example.
# Set DOCS_HTML_DIR to keep the HTML there; by default it goes to the temporary
# directory, which is removed at the end.
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
repo=$(pwd)
source .ci/lib.sh

python=${1:-python3}
started=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/n5ms-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
html=${DOCS_HTML_DIR:-$tmp/html}
case "$html" in /*) ;; *) html="$caller/$html" ;; esac

echo "=== docs: $("$python" --version) ==="
wheel=$(ci_wheel "$python")
ci_venv "$tmp/venv" "$python"
ci_install "$tmp/venv" "$wheel[zarr,dask,cli]" -r docs/requirements.txt

cd "$tmp"   # nothing of the build lands in the checkout
venv/bin/python -c 'import n5mscodecs, n5mscodecs.zarr; print("docs: n5mscodecs", n5mscodecs.__version__, "from", n5mscodecs.__file__)'
venv/bin/python -m sphinx -W --keep-going -n -q -b html -d "$tmp/doctrees" "$repo/docs" "$html"
echo "docs: sphinx build passed"
if [ "${DOCS_SKIP_EXAMPLES:-0}" != 1 ]; then
    venv/bin/python "$repo/docs/check_examples.py"
fi

echo "docs: passed in $(( $(date +%s) - started )) s${DOCS_HTML_DIR:+: $html}"
