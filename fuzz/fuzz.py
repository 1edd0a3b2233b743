"""Run one fuzz target under atheris (libFuzzer): ``python fuzz/fuzz.py TARGET [libFuzzer args]``.

The package's Python modules are instrumented here; the Cython kernels give
native coverage when built with ``-fsanitize=fuzzer-no-link`` (see .ci/fuzz.sh).
"""

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["n5mscodecs", "targets"]):
    import targets


def main():
    target = targets.TARGETS[sys.argv[1]]
    if sys.argv[1] == "zarr_codecs":
        targets._zarr_arrays.get()  # build the arrays before fuzzing, not in the first input
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
