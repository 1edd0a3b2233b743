#!/usr/bin/env bash
# ruff, at the version the configuration in pyproject.toml was written for.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"${1:-python3}" -m venv "$venv"
"$venv/bin/pip" install -q "ruff==0.17.6"
"$venv/bin/ruff" check .
