#!/usr/bin/env bash
# The kernels built with AddressSanitizer + UndefinedBehaviorSanitizer (gcc), under the tests that
# drive them: every test module of the codecs, payloads, multisets, N5 blocks, CZI chunks and zarr
# paths, the property-based, hostile-input, robustness, fuzz-regression, concurrency and Java-oracle
# tests. Left out, because they exercise no kernel code that the modules above do not: the object
# storage servers (tests/n5/test_remote.py), the Paintera pyramid/CLI/demo/napari workflows and the
# kill/lock tests (they run the same kernels on generated labels), tensorstore (its own C++ runtime
# aborts under the ASan runtime). All of them run in every other step.
# Usage: .ci/sanitizers.sh [python]   (default python3). Any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
python=${1:-python3}

work=$(mktemp -d)
trap 'rm -rf "$work" build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c' EXIT
rm -rf build n5mscodecs/*.so n5mscodecs/*/*.so n5mscodecs/*.c n5mscodecs/*/*.c
ci_venv "$work/venv" "$python"
"$python" -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"]))' \
    >"$work/requirements.txt"
ci_install "$work/venv" -r "$work/requirements.txt" pytest-xdist  # xdist: CI's own, for -n 2 below

# Python itself is not instrumented, so the ASan runtime is preloaded; UBSan
# errors are made fatal at compile time (-fno-sanitize-recover) so none slips by.
# The package is built by pip (no cache of builds: the flags below must reach the compiler).
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
N5MSCODECS_EXTRA_CFLAGS="$sanitize -O1 -g" N5MSCODECS_EXTRA_LDFLAGS="$sanitize" CC=gcc \
    "$work/venv/bin/pip" install -q --no-deps -e .

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
# two workers (the machines have two cores); they inherit LD_PRELOAD and the options above
LD_PRELOAD="$asan_runtime" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 -k "not tensorstore" \
    tests/payload tests/multiset tests/czi tests/n5 tests/zarr_integration \
    tests/test_properties.py tests/test_hostile.py tests/test_robustness.py tests/test_fuzz_targets.py \
    tests/test_concurrency.py tests/test_java_oracle.py tests/test_codec_contract.py \
    --ignore=tests/n5/test_remote.py --ignore=tests/n5/test_remote_listings.py
LD_PRELOAD="$asan_runtime" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider n5mscodecs  # doctests
echo "sanitizers: clean"
