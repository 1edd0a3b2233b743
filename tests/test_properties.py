"""Property-based round trips for every codec: arbitrary multisets, shapes and chunk sizes."""

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from n5mscodecs import LabelMultisetArray, chunked_decode, chunked_encode, n5
from n5mscodecs.errors import LabelMultisetFormatError
from n5mscodecs.payload import N5_LAYOUT, ZARR_LAYOUT, decode_payload, decode_payload_labels, encode_payload

ID = st.one_of(st.integers(0, 40), st.integers(0, 2**64 - 1))  # small ids repeat, large ones probe the width
multiset = st.dictionaries(ID, st.integers(0, 2**32 - 1), max_size=4)
positive_multiset = st.dictionaries(ID, st.integers(1, 2**32 - 1), min_size=1, max_size=3)
shapes = st.lists(st.integers(0, 5), min_size=1, max_size=4).map(tuple)

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def multiset_arrays(draw, shape=shapes, element=multiset):
    shape = draw(shape)
    elements = draw(st.lists(element, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    if not elements:
        return LabelMultisetArray.from_labels(np.zeros(shape, np.uint64))
    return LabelMultisetArray.from_elements(elements).reshape(shape)


NUMCODECS_CONFIGS = [
    {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}]},
    {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}, {"name": "gzip", "configuration": {"level": 1}}]},
    {"id": "n5_varlen", "codecs": ["label_multiset", {"type": "lz4"}]},
    {"id": "n5_varlen", "codecs": ["n5_label_multiset", {"type": "xz"}]},
]


@SETTINGS
@given(array=multiset_arrays(), config=st.sampled_from(NUMCODECS_CONFIGS))
def test_n5_varlen_round_trip(array, config):
    codec = numcodecs.get_codec(dict(config))
    back = codec.decode(codec.encode(array))
    assert back == array and back.shape == array.shape
    assert np.array_equal(back.argmax(), array.argmax())


@SETTINGS
@given(array=multiset_arrays(), codec_id=st.sampled_from(["n5_label_multiset", "label_multiset"]))
def test_payload_codecs_round_trip(array, codec_id):
    codec = numcodecs.get_codec({"id": codec_id, "shape": list(array.shape)})
    assert codec.decode(codec.encode(array)) == array
    # canonical form (sorted, merged) survives too, and equality ignores stored order
    canonical = array.canonical()
    assert codec.decode(codec.encode(canonical)).canonical() == canonical


@SETTINGS
@given(array=multiset_arrays(), layout=st.sampled_from([N5_LAYOUT, ZARR_LAYOUT]), threads=st.integers(1, 3))
def test_labels_decode_equals_argmax_of_the_full_decode(array, layout, threads):
    payload = encode_payload(array, layout)
    labels = decode_payload_labels(payload, array.shape, layout, threads=threads)
    assert labels.dtype == np.uint64
    assert np.array_equal(labels, decode_payload(payload, array.shape, layout).argmax())
    assert np.array_equal(labels, array.argmax())
    in_c_order = decode_payload_labels(payload, array.shape, layout, threads=threads, order="C")
    assert in_c_order.flags.c_contiguous and np.array_equal(in_c_order, labels)


@SETTINGS
@given(array=multiset_arrays(), layout=st.sampled_from([N5_LAYOUT, ZARR_LAYOUT]),
       flips=st.lists(st.tuples(st.integers(0, 2**16), st.integers(1, 255)), min_size=1, max_size=3))
def test_labels_decode_rejects_what_the_full_decode_rejects(array, layout, flips):
    payload = bytearray(encode_payload(array, layout))
    for position, xor in flips:
        if payload:
            payload[position % len(payload)] ^= xor
    try:
        expected = decode_payload(payload, array.shape, layout).argmax()
    except LabelMultisetFormatError as exc:
        for order in ("K", "C"):
            with pytest.raises(LabelMultisetFormatError) as raised:
                decode_payload_labels(payload, array.shape, layout, order=order)
            assert str(raised.value) == str(exc)
    else:
        assert np.array_equal(decode_payload_labels(payload, array.shape, layout), expected)
        assert np.array_equal(decode_payload_labels(payload, array.shape, layout, order="C"), expected)


@SETTINGS
@given(array=multiset_arrays())
def test_label_multiset_vlen_round_trip(array):
    codec = numcodecs.get_codec({"id": "label_multiset_vlen"})
    elements = codec.decode(codec.encode(array.to_elements()))
    assert LabelMultisetArray.from_elements(elements) == array.reshape(-1)


@SETTINGS
@given(data=st.binary(max_size=3000), codec=st.sampled_from(["zstd", "lz4"]), hilo=st.booleans(),
       chunk=st.integers(1, 4000), threads=st.integers(1, 3))
def test_czi_chunked_round_trip(data, codec, hilo, chunk, threads):
    config = {"id": "czi_chunked", "codec": codec, "max_chunk_size": chunk, "hilo": hilo}
    numcodec = numcodecs.get_codec(config)
    assert bytes(numcodec.decode(numcodec.encode(data))) == data
    payload = chunked_encode(data, codec=codec, max_chunk_size=chunk, hilo=hilo, threads=threads)
    assert payload == bytes(numcodec.encode(data))  # thread count never changes the bytes
    assert bytes(chunked_decode(payload, threads=threads)) == data


@st.composite
def arrays_and_chunks(draw, element=multiset):
    array = draw(multiset_arrays(st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple), element))
    chunks = tuple(draw(st.integers(1, s + 1)) for s in array.shape)
    return array, chunks


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=arrays_and_chunks(positive_multiset), compression=st.sampled_from(["raw", "gzip", "zstd"]))
def test_n5_dataset_round_trip(tmp_path, case, compression):
    array, chunks = case
    dataset = n5.write(tmp_path / "d", array, chunks, compression=compression, overwrite=True)
    assert n5.open(dataset.path)[:] == array
    assert n5.open(dataset.path)[tuple(slice(s // 2, None) for s in array.shape)] == \
        array[tuple(slice(s // 2, None) for s in array.shape)]


@pytest.fixture(scope="module")
def zarr_serializers():
    pytest.importorskip("zarr")
    import n5mscodecs.zarr as nz
    return [nz.LabelMultisetZarrCodec(), nz.N5LabelMultisetZarrCodec(),
            nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}, {"name": "gzip"}])]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=arrays_and_chunks(), which=st.integers(0, 2))
def test_zarr_round_trip_any_chunking(zarr_serializers, case, which):
    import zarr
    from zarr.storage import MemoryStore

    import n5mscodecs.zarr as nz
    array, chunks = case
    z = zarr.create_array(MemoryStore(), shape=array.shape, chunks=chunks, dtype=nz.LabelMultisetDType(),
                          serializer=zarr_serializers[which], compressors=None)
    z[...] = array.to_elements()
    assert LabelMultisetArray.from_elements(z[...]) == array
