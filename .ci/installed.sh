#!/usr/bin/env bash
# The installed package: a fresh venv with the wheel built from the sdist (.ci/dist.sh's, or one
# built now; see .ci/lib.sh) and the test extra, then the test suite and the doctests from the
# unpacked sdist with its uncompiled package directory removed, so that only the installed
# package can be imported (also by the tests' `python -c` subprocesses), and the demo through the
# installed `n5ms` entry point.
# Usage: .ci/installed.sh PYTHON   (default: python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/.ci/lib.sh"
py=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
echo "=== installed: $("$py" --version) ==="

wheel=$(ci_wheel "$py")
sdist=$(ls "$(dirname "$wheel")"/n5mscodecs-*.tar.gz 2>/dev/null | head -1 || true)
ci_venv "$work/venv" "$py"
ci_install "$work/venv" "$wheel[test]" pytest-xdist  # xdist: CI's own, for -n 2 below (not in the extras)
"$N5MS_UV" pip check --python "$work/venv/bin/python"
echo "installed: $(basename "$wheel") and the test extra in $((SECONDS - started)) s"

mkdir "$work/unpacked"
if [ -n "$sdist" ]; then
    tar -xzf "$sdist" -C "$work/unpacked"
    cd "$work/unpacked"/n5mscodecs-*/
else  # a wheel built from the checkout: its files, as the sdist holds them
    ci_sources "$work/unpacked/src"
    cd "$work/unpacked/src"
fi
rm -r n5mscodecs
ci_shared
"$work/venv/bin/python" -c 'import n5mscodecs, n5mscodecs.zarr; print("installed:", n5mscodecs.__file__, n5mscodecs.__version__)'
"$work/venv/bin/n5ms" demo --quiet
# two workers (the machines have two cores; much of the suite waits on servers, children and time-outs)
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q -m "not slow" -n 2 tests  # the slow ones: once, in the README step
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q --pyargs n5mscodecs  # doctests (addopts)
echo "installed: all tests passed in $((SECONDS - started)) s"
