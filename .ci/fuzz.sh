#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder (atheris + libFuzzer), kernels built with clang
# -fsanitize=fuzzer-no-link,address so native code is both coverage-guided and checked.
# Usage: .ci/fuzz.sh [seconds per target]   (default 30; 7 targets). Findings fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}

if ! command -v clang-14 >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 libclang-rt-14-dev; } \
        >/dev/null 2>&1 || echo "fuzz: clang-14 could not be installed" >&2
fi

venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")" build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c' EXIT
rm -rf build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c
python3 -m venv "$venv"
"$venv/bin/pip" install -q atheris coverage pytest
if command -v clang-14 >/dev/null 2>&1; then
    flags="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer"
    CC=clang-14 N5MSCODECS_OPENMP=0 N5MSCODECS_EXTRA_CFLAGS="$flags -O1 -g" N5MSCODECS_EXTRA_LDFLAGS="$flags" \
        "$venv/bin/pip" install -q -e ".[zarr]"
    asan=--asan
else  # still fuzzes, guided by Python coverage only
    echo "fuzz: WARNING: no clang-14, kernels are not coverage-instrumented" >&2
    "$venv/bin/pip" install -q -e ".[zarr]"
    asan=
fi
"$venv/bin/python" fuzz/run.py $asan --seed 1 --seconds "$seconds" --artifacts "${FUZZ_ARTIFACTS:-fuzz-artifacts}"
