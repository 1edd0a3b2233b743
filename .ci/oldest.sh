#!/usr/bin/env bash
# The oldest dependencies pyproject.toml admits: a fresh venv with the core dependencies
# (and zarr) pinned to their floors by .ci/oldest-constraints.txt, the package built from a
# copy of the checkout (build isolation still builds against numpy >= 2.0, as for users),
# then the test suite from the checkout's tests against the installed package.
# The other test dependencies resolve to whatever fits the pinned floors.
# Usage: .ci/oldest.sh [PYTHON]   (default python3)
set -euo pipefail
py=${1:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Build from a copy of the tracked and untracked-but-not-ignored files, as .ci/dist.sh does,
# so the checkout's in-place extensions are left alone.
mkdir "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard \
    | (cd "$repo" && tar --null -T - --ignore-failed-read -cf -) \
    | tar -xf - -C "$work/src"

# The test extra without zarr-n5, whose releases need zarr >= 3.1.5 (above the zarr floor
# tested here); the tests that compare with it skip, the other CI steps run them.
"$py" - "$work/src/pyproject.toml" >"$work/test-requirements.txt" <<'PY'
import sys
import tomllib

test = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]
print("\n".join(requirement for requirement in test if not requirement.startswith("zarr-n5")))
PY

"$py" -m venv "$work/venv"
# -c applies to the installed requirements, not to the isolated build environment
"$work/venv/bin/pip" install -q -c "$repo/.ci/oldest-constraints.txt" -r "$work/test-requirements.txt" "$work/src" \
    >"$work/install.log" 2>&1 || { grep -v "is ignored" "$work/install.log" | tail -50; exit 1; }
"$work/venv/bin/pip" check
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

# Tests from the copy with its uncompiled package directory removed, so only the
# installed package can be imported (also by the tests' `python -c` subprocesses).
cd "$work/src"
rm -r n5mscodecs
if [ -z "${N5MSCODECS_SHARED:-}" ] && [ -d "$repo/../shared" ]; then
    export N5MSCODECS_SHARED="$repo/../shared"  # the real N5 data, when present beside the checkout
fi
"$work/venv/bin/python" -m pytest -p no:cacheprovider -q tests
echo "oldest: all tests passed in ${SECONDS}s"
