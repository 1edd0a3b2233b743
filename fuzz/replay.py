"""Run inputs through a fuzz target without the fuzzer: ``python fuzz/replay.py TARGET PATH...``.

PATH is a file or a directory of inputs. Used to measure line coverage of a
finished corpus and to reproduce a finding under a debugger.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import targets  # noqa: E402


def main(argv):
    target = targets.TARGETS[argv[0]]
    paths = [p for arg in argv[1:] for p in (sorted(Path(arg).iterdir()) if Path(arg).is_dir() else [Path(arg)])]
    for path in paths:
        target(path.read_bytes())
    print(f"{argv[0]}: {len(paths)} inputs replayed")


if __name__ == "__main__":
    main(sys.argv[1:])
