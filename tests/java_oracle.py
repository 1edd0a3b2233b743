"""The Java label multiset code as a test oracle: ``../shared/tools/lms-oracle/lms-oracle.jar``
(imglib2-label-multisets, n5, n5-imglib2; see its README) driven through files.

Volumes are passed in this package's N5 axis order (x first); the jar's files are x-fastest,
which is Fortran order of such an array. Each call starts a JVM (about half a second), so
callers batch many lists or blocks into one call. :func:`oracle` skips the test when ``java``
or the jar is absent, like the tests on the shared data.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support import SHARED

JAR = SHARED / "tools" / "lms-oracle" / "lms-oracle.jar"
# short-lived JVMs: the quick compiler only and the simplest collector start fastest
JVM_OPTIONS = ("-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class Oracle:
    """The jar's four commands; ``workdir`` holds the exchange files."""

    def __init__(self, java, workdir):
        self.java = java
        self.workdir = Path(workdir)

    def run(self, *args):
        done = subprocess.run([self.java, *JVM_OPTIONS, "-jar", str(JAR), *map(str, args)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise AssertionError(f"lms-oracle {args[0]} failed:\n{done.stderr}")
        return done.stdout

    def argmax(self, lists):
        """Java's argmax (``LabelUtils.getArgMax`` via ``fromBytes``) of ``(ids, counts)`` lists."""
        source, out = self.workdir / "argmax.lists.bin", self.workdir / "argmax.out.bin"
        source.write_bytes(encode_lists(lists))
        self.run("argmax", source, out)
        return np.fromfile(out, "<u8")

    def read(self, root, dataset, missing=None):
        """``(argmax, lists, info)`` of every voxel as ``N5LabelMultisets.openLabelMultiset`` reads them:
        argmax as a uint64 array in N5 axis order, lists (see :func:`decode_lists`) x-fastest."""
        prefix = self.workdir / "read"
        self.run("read", root, dataset, prefix, *(() if missing is None else ("--missing", missing)))
        info = json.loads(Path(f"{prefix}.json").read_text())
        argmax = np.fromfile(f"{prefix}.argmax.bin", "<u8").reshape(info["dimensions"], order="F")
        return argmax, decode_lists(Path(f"{prefix}.lists.bin").read_bytes()), info

    def write(self, labels, block_size, compression, root, dataset, *, all_blocks=False):
        """The conversion helper's write of uint64 ``labels`` (N5 axis order)."""
        source = self.workdir / "write.labels.bin"
        np.asarray(labels, np.uint64).ravel(order="F").astype("<u8").tofile(source)
        dims = ",".join(str(n) for n in np.shape(labels))
        blocks = ",".join(str(b) for b in block_size)
        self.run("write", source, dims, blocks, compression, root, dataset,
                 *(("--all-blocks",) if all_blocks else ()))

    def downsample(self, root, source, target, factors, max_num_entries=-1, *options):
        """One level of label-utilities-spark's downsampling (``LabelMultisetTypeDownscaler``)."""
        self.run("downsample", root, source, target, ",".join(str(f) for f in factors),
                 max_num_entries, *options)


def oracle(workdir):
    """An :class:`Oracle` working in ``workdir``; skips the test without ``java`` or the jar."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not installed (the Java oracle tests need a Java 17+ runtime)")
    if not JAR.exists():
        pytest.skip(f"Java oracle not available ({JAR})")
    return Oracle(java, workdir)


def encode_lists(lists):
    """The jar's LISTS file: int64 count, then per list int32 length and (int64 id, int32 count) entries."""
    entry = np.dtype([("id", "<u8"), ("count", "<u4")])
    parts = [np.int64(len(lists)).astype("<i8").tobytes()]
    for ids, counts in lists:
        entries = np.empty(len(ids), entry)
        entries["id"], entries["count"] = ids, counts
        parts += [np.int32(len(ids)).astype("<i4").tobytes(), entries.tobytes()]
    return b"".join(parts)


def decode_lists(data):
    """``(offsets, ids, counts)``: the lists of a LISTS file in CSR form (stored order)."""
    n_lists = int(np.frombuffer(data, "<i8", 1)[0])
    starts, lengths, position = np.empty(n_lists, np.int64), np.empty(n_lists, np.int64), 8
    for i in range(n_lists):
        n = int.from_bytes(data[position:position + 4], "little")
        starts[i], lengths[i] = position + 4, n
        position += 4 + 12 * n
    offsets = np.zeros(n_lists + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    entry_starts = np.repeat(starts - 12 * offsets[:-1], lengths) + 12 * np.arange(offsets[-1])
    raw = np.frombuffer(data, np.uint8)
    ids = raw[entry_starts[:, None] + np.arange(8)].copy().view("<u8").reshape(-1)
    counts = raw[entry_starts[:, None] + np.arange(8, 12)].copy().view("<u4").reshape(-1)
    return offsets, ids.astype(np.uint64), counts.astype(np.uint32)
