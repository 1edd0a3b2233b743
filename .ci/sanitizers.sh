#!/usr/bin/env bash
# The test suite against kernels built with AddressSanitizer + UndefinedBehaviorSanitizer (gcc).
# Usage: .ci/sanitizers.sh [python]   (default python3). Any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}

venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")" build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c' EXIT
rm -rf build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c
"$python" -m venv "$venv"

# Python itself is not instrumented, so the ASan runtime is preloaded; UBSan
# errors are made fatal at compile time (-fno-sanitize-recover) so none slips by.
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
N5MSCODECS_EXTRA_CFLAGS="$sanitize -O1 -g" N5MSCODECS_EXTRA_LDFLAGS="$sanitize" CC=gcc \
    "$venv/bin/pip" install -q -e ".[test]"

asan_runtime=$(gcc -print-file-name=libasan.so)
# detect_leaks=0: CPython's interned objects and arenas are reported as leaks at exit.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Every kernel must link the ASan runtime. ldd's output is captured first: under
# pipefail, `ldd | grep -q` fails at random when grep exits before ldd is done (SIGPIPE).
for kernel in n5mscodecs/*/_*.so; do
    linked=$(ldd "$kernel")
    case "$linked" in
        *libasan*) ;;
        *) printf 'kernel %s is not instrumented:\n%s\n' "$kernel" "$linked" >&2; exit 1 ;;
    esac
done
# tensorstore's own C++ runtime aborts when loaded under the ASan runtime (no report: it is not
# instrumented); its interop tests exercise tensorstore, not our kernels, and run in every other step.
# The object storage tests (S3 and GCS servers, time-outs) exercise networking, not kernels: they
# run in every other step too.
LD_PRELOAD="$asan_runtime" "$venv/bin/python" -m pytest -q -p no:cacheprovider -k "not tensorstore" \
    --ignore=tests/n5/test_remote.py
echo "sanitizers: clean"
