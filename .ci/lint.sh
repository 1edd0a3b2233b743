#!/usr/bin/env bash
# ruff, at the version the configuration in pyproject.toml was written for.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
ci_venv "$venv" "${1:-python3}"
ci_install "$venv" "ruff==0.17.6"
"$venv/bin/ruff" check .
