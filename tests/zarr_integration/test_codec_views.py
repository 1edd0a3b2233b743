"""The zarr v3 label multiset codecs decode a chunk as the numcodecs codecs do, in both views:
the label_multiset data type (elements) and uint64 (the labels view)."""

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import LabelMultisetArray, LabelMultisetCodec, N5LabelMultiset, N5Varlen  # noqa: E402

CHAIN = ["n5_label_multiset", {"name": "gzip", "configuration": {"level": 1}}]


@pytest.mark.parametrize("serializer, numcodecs_codec", [
    (nz.LabelMultisetZarrCodec(), LabelMultisetCodec()),
    (nz.N5LabelMultisetZarrCodec(), N5LabelMultiset()),
    (nz.N5VarlenZarrCodec(codecs=CHAIN), N5Varlen(CHAIN)),
], ids=["label_multiset", "n5_label_multiset", "n5_varlen"])
def test_zarr_and_numcodecs_codecs_decode_a_chunk_alike(tmp_path, serializer, numcodecs_codec):
    shape = (6, 5, 4)
    rng = np.random.default_rng(5)
    lists = [{int(k): int(c) for k, c in zip(rng.integers(0, 6, 2), rng.integers(0, 3, 2))} for _ in range(12)]
    data = LabelMultisetArray.from_elements(np.array(lists, dtype=object)[rng.integers(0, 12, 120)], shape)
    array = zarr.create_array(tmp_path / "a", shape=shape, chunks=shape, dtype=nz.LabelMultisetDType(),
                              serializer=serializer, compressors=None)
    array[...] = data.to_elements()
    chunk = (tmp_path / "a" / "c" / "0" / "0" / "0").read_bytes()
    elements = zarr.open_array(tmp_path / "a")[...]
    assert LabelMultisetArray.from_elements(elements) == data
    assert LabelMultisetArray.from_elements(numcodecs_codec.decode(chunk, out=np.empty(shape, object))) == data
    labels = nz.open_labels(tmp_path, "a")[...]
    assert np.array_equal(labels, numcodecs_codec.decode(chunk, out=np.zeros(shape, np.uint64)))
    assert np.array_equal(labels, data.argmax())
