#!/usr/bin/env bash
# mypy on the package, at the version and with the configuration in pyproject.toml (the typecheck
# extra, [tool.mypy]). A fresh venv gets the package's dependencies and that extra, not the package
# itself: mypy reads the source tree, and the kernels through their .pyi stubs, so nothing is built.
# Usage: .ci/typecheck.sh [PYTHON]   (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ci_venv "$work/venv" "${1:-python3}"
"$work/venv/bin/python" - >"$work/requirements.txt" <<'PY'
import tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["typecheck"]))
PY
ci_install "$work/venv" -r "$work/requirements.txt"
"$work/venv/bin/mypy" --version
"$work/venv/bin/mypy"
