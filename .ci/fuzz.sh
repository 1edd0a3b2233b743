#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder (atheris + libFuzzer), kernels built with clang
# -fsanitize=fuzzer-no-link,address so native code is both coverage-guided and checked.
# The step is bounded by its budget: BUDGET seconds of wall time for all targets, two fuzzed at a
# time (libFuzzer is single-threaded; the machines have two cores), so each target gets
# BUDGET * 2 / targets seconds (fuzz/run.py --budget: 20 s each for the 9 targets at the default 90).
# Usage: .ci/fuzz.sh [BUDGET]   (default 90). Findings fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
budget=${1:-90}
jobs=2

if ! command -v clang-14 >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          clang-14 libclang-rt-14-dev; } >/dev/null 2>&1 || echo "fuzz: clang-14 could not be installed" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work" build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c' EXIT
rm -rf build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c
ci_venv "$work/venv" python3
python3 -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["zarr"]))' \
    >"$work/requirements.txt"
ci_install "$work/venv" atheris coverage pytest -r "$work/requirements.txt"
# built by pip with no cache of builds: the flags below must reach the compiler
if command -v clang-14 >/dev/null 2>&1; then
    flags="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer"
    CC=clang-14 N5MSCODECS_OPENMP=0 N5MSCODECS_EXTRA_CFLAGS="$flags -O1 -g" N5MSCODECS_EXTRA_LDFLAGS="$flags" \
        "$work/venv/bin/pip" install -q --no-deps -e .
    asan=--asan
else  # still fuzzes, guided by Python coverage only
    echo "fuzz: WARNING: no clang-14, kernels are not coverage-instrumented" >&2
    "$work/venv/bin/pip" install -q --no-deps -e .
    asan=
fi
"$work/venv/bin/python" fuzz/run.py $asan --seed 1 --budget "$budget" --jobs "$jobs" \
    --artifacts "${FUZZ_ARTIFACTS:-fuzz-artifacts}"
