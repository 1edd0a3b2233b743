"""zarr v2-format arrays written the same way by zarr 2.18 (``test_zarr2.py``) and by
zarr 3 (``test_zarr.py``), in C and F order. Each side checks that it still writes
its committed fixture and reads the other side's, so the fixtures cannot go stale.
"""

import json
from pathlib import Path

import numpy as np

from n5mscodecs import CziChunked, LabelMultiset, LabelMultisetArray, chunked_decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WRITTEN_BY_ZARR2 = FIXTURES / "zarr2_written"
WRITTEN_BY_ZARR3 = FIXTURES / "zarr3_written_v2"
SHAPE, CHUNKS = (6, 9), (4, 4)
LABELS = np.arange(54, dtype="<u2").reshape(SHAPE)
CZI = CziChunked(codec="lz4", max_chunk_size=10)
# name: (kind, order, fill_value keyword or absent)
CASES = {
    "czi_C": ("czi", "C", {}),
    "czi_F": ("czi", "F", {}),
    "lm_C": ("lm", "C", {}),
    "lm_F": ("lm", "F", {}),
    "lm_F_none": ("lm", "F", {"fill_value": None}),
}


def elements():
    out = np.empty(SHAPE, object)
    for index in np.ndindex(SHAPE):
        out[index] = LabelMultiset([int(LABELS[index]), 1000], [2, 1])
    return out


def write(array, kind):
    """The writes every case gets: whole chunks, one partial chunk, one chunk left missing."""
    source = LABELS if kind == "czi" else elements()
    array[:4, :] = source[:4]
    array[5, 8] = source[5, 8]


def write_all(create, root):
    """Every case, each array made by ``create(root, name)`` (zarr 2's or zarr 3's API)."""
    for name, (kind, _, _) in CASES.items():
        write(create(root, name), kind)


def expected(kind, fill):
    """What reading the whole array gives, as a LabelMultisetArray (lm) or labels (czi)."""
    if kind == "czi":
        values = np.zeros(SHAPE, "<u2")
        values[:4] = LABELS[:4]
        values[5, 8] = LABELS[5, 8]
        return values
    values = np.empty(SHAPE, object)
    values[...] = fill
    values[:4] = elements()[:4]
    values[5, 8] = elements()[5, 8]
    return values


def check_reads(array, kind, fill):
    """``array`` (written by :func:`write`) reads back right, whole and in parts."""
    want = expected(kind, fill)
    for selection in (np.s_[:], np.s_[1:6, 2:9], np.s_[5, :], np.s_[3:5, 3:5]):
        got = array[selection]
        if kind == "czi":
            np.testing.assert_array_equal(got, want[selection])
        else:
            assert as_multisets(got) == as_multisets(want[selection])


def as_multisets(values):
    return LabelMultisetArray.coerce(np.asarray(values, dtype=object))


def chunk_files(root):
    return sorted(p.name for p in Path(root).iterdir() if not p.name.startswith("."))


def check_same_files(written, committed):
    """Metadata equal; vlen chunks byte-identical; CZI chunks decode to the same bytes."""
    for name, (kind, _, _) in CASES.items():
        a, b = Path(written) / name, Path(committed) / name
        assert json.loads((a / ".zarray").read_text()) == json.loads((b / ".zarray").read_text()), name
        assert chunk_files(a) == chunk_files(b), name
        for chunk in chunk_files(a):
            mine, theirs = (a / chunk).read_bytes(), (b / chunk).read_bytes()
            if kind == "czi":  # compressed bytes may differ between LZ4 versions
                assert bytes(chunked_decode(mine)) == bytes(chunked_decode(theirs)), (name, chunk)
            else:
                assert mine == theirs, (name, chunk)


def check_chunks_in_memory_order(root):
    """Each stored chunk holds its values in the array's order (numcodecs' rule)."""
    from n5mscodecs import LabelMultisetVLen

    for name, (kind, order, _) in CASES.items():
        chunk = Path(root) / name / "0.0"
        values = LABELS[:4, :4]
        if kind == "czi":
            assert bytes(chunked_decode(chunk.read_bytes())) == values.tobytes(order=order), name
        else:
            flat = LabelMultisetVLen().decode(chunk.read_bytes())
            assert [e.ids[0] for e in flat] == values.ravel(order=order).tolist(), name
