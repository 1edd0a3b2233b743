"""Hostile block sizes (issue 51, items 11-14): an ``attributes.json`` whose ``blockSize`` (or a
zarr chunk shape) lets a small block claim gigabytes. Each read runs in a child process that
reports its own peak resident memory (VmHWM), under an address-space limit so that a
regression fails there instead of exhausting the machine."""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from n5mscodecs import n5
from n5mscodecs.n5.header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

PEAK_LIMIT_MB = 400  # the child's whole peak: Python, numpy, zarr and the package are about 100 MB
ADDRESS_LIMIT = 6 << 30  # a regression hits MemoryError there (2-4 GB were measured before the fix)


def zstd_rle(nbytes):
    """A zstd frame of ``nbytes`` zero bytes in RLE blocks of 128 KiB: 4 bytes per block, so
    2 GiB takes 64 KiB, as the blocks of the issue (no compressor is run)."""
    frame = struct.pack("<IB", 0xFD2FB528, 0xE0) + struct.pack("<Q", nbytes)  # single segment, 8-byte size
    blocks = []
    for start in range(0, nbytes, 1 << 17):
        size, last = min(1 << 17, nbytes - start), start + (1 << 17) >= nbytes
        blocks.append(((size << 3) | (1 << 1) | last).to_bytes(3, "little") + b"\0")
    return frame + b"".join(blocks)


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_attributes(path, attributes):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "attributes.json"), "w") as f:
        json.dump(attributes, f)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sizes")
    zstd = {"type": "zstd", "level": 3}
    # item 11: a plain dataset of blockSize [2^28] uint64, its one block 64 KiB of zstd claiming 2 GiB
    plain = root / "c.n5" / "plain"
    write_attributes(plain, {"dimensions": [1 << 28], "blockSize": [1 << 28], "dataType": "uint64",
                             "compression": zstd})
    write_file(plain / "0", N5BlockHeader(MODE_DEFAULT, (1 << 28,)).to_bytes() + zstd_rle(1 << 31))
    # item 12: a label multiset dataset of blockSize 256^3, one block whose numElements is 2 GiB
    labels = root / "c.n5" / "labels"
    write_attributes(labels, {"dimensions": [256] * 3, "blockSize": [256] * 3, "dataType": "uint8",
                              "compression": zstd, "isLabelMultiset": True})
    write_file(labels / "0" / "0" / "0",
               N5BlockHeader(MODE_VARLENGTH, (256,) * 3, 1 << 31).to_bytes() + zstd_rle(1 << 31))
    # item 14: a fragment-segment-assignment of blockSize [2^28, 1], each block claiming 2 GiB
    source = root / "p.n5" / "source"
    n5.write(source, np.ones((8, 8, 8), np.uint64), chunks=4)
    assignment = root / "p.n5" / "source.fragment-segment-assignment"
    write_attributes(assignment, {"dimensions": [1 << 28, 2], "blockSize": [1 << 28, 1], "dataType": "uint64",
                                  "compression": zstd})
    for column in (0, 1):
        write_file(assignment / "0" / str(column),
                   N5BlockHeader(MODE_DEFAULT, (1 << 28, 1)).to_bytes() + zstd_rle(1 << 31))
    # item 13: zarr v3 arrays with n5_default, chunk shape 1024^3 uint8; a 32 KiB chunk claiming
    # 1 GiB, and a small chunk (header dims 2^3) that zarr's chunk would still make 1 GiB of
    zarr = pytest.importorskip("zarr", minversion="3")
    import n5mscodecs.zarr as nz

    for name, dims in (("big", (1024,) * 3), ("small", (2,) * 3)):
        codec = nz.N5DefaultZarrCodec.from_compression(3, "zstd", "uint8")
        array = zarr.create_array(zarr.storage.LocalStore(root / f"{name}.zarr"), shape=(1024,) * 3,
                                  chunks=(1024,) * 3, dtype="uint8", serializer=codec, compressors=None)
        block = N5BlockHeader(MODE_DEFAULT, dims).to_bytes() + zstd_rle(int(np.prod(dims)))
        write_file(root / f"{name}.zarr" / "c" / "0" / "0" / "0", block)
        assert array.metadata.chunk_grid.chunk_shape == (1024,) * 3
    return root


CHILD = r"""
import json, os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[3]), int(sys.argv[3])))
import numpy as np, zarr
from n5mscodecs import N5msCodecsError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.zarr import N5Store

root, case = sys.argv[1], sys.argv[2]
c = os.path.join(root, "c.n5")
cases = {
    "plain [0:10]": lambda: n5.open(os.path.join(c, "plain"))[0:10],
    "plain [...]": lambda: n5.open(os.path.join(c, "plain"))[...],
    "plain zarr": lambda: zarr.open_array(N5Store(zarr.storage.LocalStore(c)), path="plain", mode="r")[0:10],
    "plain info --check": lambda: n5ms(["info", "--check", os.path.join(c, "plain")]),
    "labels read_labels": lambda: n5.open(os.path.join(c, "labels")).read_labels(),
    "labels [0:4]": lambda: n5.open(os.path.join(c, "labels"))[0:4, 0:4, 0:4],
    "labels zarr labels": lambda: zarr.open_array(N5Store(zarr.storage.LocalStore(c), multisets="labels"),
                                                  path="labels", mode="r")[0:4, 0:4, 0:4],
    "zarr n5_default": lambda: zarr.open_array(os.path.join(root, "big.zarr"), mode="r")[0:2, 0:2, 0:2],
    "zarr n5_default small header": lambda: zarr.open_array(os.path.join(root, "small.zarr"),
                                                            mode="r")[0:2, 0:2, 0:2],
    "assignment": lambda: paintera.read_assignment(os.path.join(root, "p.n5", "source")),
}
try:
    result = cases[case]()
    outcome = f"ok {result!r}"[:300]
except N5msCodecsError as error:
    outcome = type(error).__name__ + ": " + str(error)
except MemoryError as error:
    outcome = "MemoryError"
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps([outcome, peak]))
"""


def read_in_child(root, case):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), case, str(ADDRESS_LIMIT)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    outcome, peak = json.loads(lines[-1])
    return outcome, peak, "\n".join(lines[:-1])


@pytest.mark.parametrize("case, field", [
    ("plain [0:10]", r"blockSize \[268435456\]"),
    ("plain [...]", r"blockSize \[268435456\]"),
    ("plain zarr", r"chunk shape \[268435456\]"),
    ("labels read_labels", "numElements 2147483648"),
    ("labels [0:4]", "numElements 2147483648"),
    ("labels zarr labels", "numElements 2147483648"),
    ("zarr n5_default", r"chunk shape \[1024, 1024, 1024\]"),
    ("zarr n5_default small header", r"chunk shape \[1024, 1024, 1024\]"),
    ("assignment", r"blockSize \[268435456, 1\]"),
])
def test_a_block_size_a_real_dataset_never_has_is_refused_in_bounded_memory(root, case, field):
    import re

    outcome, peak, _ = read_in_child(root, case)
    assert outcome.split(":")[0] in ("N5HeaderError", "ConfigurationError"), outcome
    assert re.search(field, outcome), outcome
    assert re.search(r"(more than|exceeds) the (268435456|134217728) bytes", outcome), outcome
    assert peak < PEAK_LIMIT_MB, (case, peak)


def test_info_check_lists_such_a_block_as_bad(root):
    outcome, peak, printed = read_in_child(root, "plain info --check")
    assert outcome == "ok 1", outcome  # exit 1: problems found, no traceback
    assert "BAD" in printed and "blockSize [268435456]" in printed
    assert peak < PEAK_LIMIT_MB
