#!/usr/bin/env bash
# n5ms serve in a real browser: installs Debian's chromium and chromium-driver (when missing) and
# the neuroglancer and selenium packages into the venv the README's test command made (.venv,
# Python 3.11), then runs tests/paintera/test_neuroglancer.py: the neuroglancer client that the
# neuroglancer package ships, headless, shows the served source pixel for pixel as the static
# argmax export, and a merge changes it. No internet after the installs (SE_OFFLINE: selenium
# uses the chromedriver on PATH). Fails if the test skips, so a broken install cannot pass unnoticed.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
started=$SECONDS
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    $as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium chromium-driver >/dev/null
fi
ci_install .venv neuroglancer selenium
echo "browser: installed in $((SECONDS - started)) s"
export SE_OFFLINE=true
.venv/bin/python -m pytest -q -p no:cacheprovider -ra -m browser tests/paintera/test_neuroglancer.py \
    | tee /tmp/n5ms-browser.log
if grep -q "^SKIPPED" /tmp/n5ms-browser.log; then
    echo "browser: the neuroglancer test skipped although chromium and neuroglancer were installed" >&2
    exit 1
fi
