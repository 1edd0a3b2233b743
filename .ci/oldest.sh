#!/usr/bin/env bash
# The oldest dependencies pyproject.toml admits, against the installed package: a fresh venv with
# the wheel built from the sdist (built with numpy >= 2.0 under build isolation, as users' builds
# are; .ci/dist.sh's, see .ci/lib.sh) and the test extra, the core dependencies (and zarr) pinned
# to their floors by .ci/oldest-constraints.txt; then the test suite and the doctests from the
# checkout's files with the uncompiled package directory removed, so only the installed package
# can be imported. This is also the Python 3.11 run of the installed sdist.
# The other test dependencies resolve to whatever fits the pinned floors.
# Usage: .ci/oldest.sh [PYTHON]   (default python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/.ci/lib.sh"
py=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

wheel=$(ci_wheel "$py")
ci_sources "$work/src"
# The test extra without zarr-n5, whose releases need zarr >= 3.1.5 (above the zarr floor
# tested here); the tests that compare with it skip, the other CI steps run them.
"$py" - "$work/src/pyproject.toml" >"$work/test-requirements.txt" <<'PY'
import sys
import tomllib

test = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]
print("\n".join(requirement for requirement in test if not requirement.startswith("zarr-n5")))
PY

ci_venv "$work/venv" "$py"
# pytest-xdist: CI's own, for -n 2 below (not in the extras)
ci_install "$work/venv" -c "$repo/.ci/oldest-constraints.txt" -r "$work/test-requirements.txt" "$wheel" pytest-xdist
"$N5MS_UV" pip check --python "$work/venv/bin/python"
"$work/venv/bin/python" - "$repo/.ci/oldest-constraints.txt" <<'PY'
"""Every pin of the constraints file is what got installed."""
import sys
from importlib.metadata import version

pins = [line.split("#")[0].strip() for line in open(sys.argv[1])]
wrong = [f"{name}: {version(name)} installed, {pinned} pinned"
         for name, pinned in (pin.split("==") for pin in pins if pin) if version(name) != pinned]
print("oldest:", ", ".join(f"{pin}" for pin in pins if pin))
sys.exit("\n".join(wrong) if wrong else 0)
PY
echo "oldest: installed in $((SECONDS - started)) s"

cd "$work/src"
rm -r n5mscodecs
ci_shared
"$work/venv/bin/python" -c 'import n5mscodecs, n5mscodecs.zarr; print("installed:", n5mscodecs.__file__, n5mscodecs.__version__)'
"$work/venv/bin/n5ms" --help >/dev/null
# two workers (the machines have two cores; much of the suite waits on servers, children and time-outs)
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q -m "not slow" -n 2 tests  # the slow ones: once, in the README step
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q --pyargs n5mscodecs  # doctests (addopts)
echo "oldest: all tests passed in $((SECONDS - started)) s"
