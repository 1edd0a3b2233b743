"""Traps a new zarr user falls into, closed by n5mscodecs.zarr.defaults: the data type string
alone gives a working array, array-to-bytes label codecs cannot become v2 filters, and N5Store
says what to pass when zarr adds its default compressor."""

import json

import numcodecs
import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.storage import LocalStore  # noqa: E402

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import LabelMultiset, LabelMultisetVLen, N5Varlen, argmax_elements  # noqa: E402
from n5mscodecs.errors import ConfigurationError  # noqa: E402

LABELS = np.arange(20, dtype=np.uint64).reshape(4, 5) % 7


def files(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_data_type_string_alone_gives_a_working_array(tmp_path, zarr_format):
    array = zarr.create_array(tmp_path / "a", shape=(4, 5), chunks=(2, 3), dtype="label_multiset",
                              zarr_format=zarr_format)
    array[:] = LABELS
    array[1, 1] = {3: 2, 4: 1}
    back = zarr.open_array(tmp_path / "a", mode="r")[:]
    expected = LABELS.copy()
    expected[1, 1] = 3
    assert np.array_equal(argmax_elements(back), expected)
    assert back[1, 1] == LabelMultiset([3, 4], [2, 1])
    if zarr_format == 3:
        document = json.loads((tmp_path / "a" / "zarr.json").read_text())
        assert document["codecs"][0] == {"name": "label_multiset"}
    else:
        document = json.loads((tmp_path / "a" / ".zarray").read_text())
        assert document["dtype"] == "|O" and document["filters"] == [{"id": "label_multiset_vlen"}]


@pytest.mark.parametrize("codec", [
    N5Varlen(),
    numcodecs.get_codec({"id": "n5_label_multiset"}),
    numcodecs.get_codec({"id": "label_multiset"}),
])
def test_array_to_bytes_codecs_are_refused_as_v2_filters(tmp_path, codec):
    with pytest.raises(ConfigurationError, match=rf"{codec.codec_id} cannot be the object codec.*label_multiset_vlen"):
        zarr.create_array(tmp_path / "a", shape=(4, 5), chunks=(2, 3), dtype=nz.LabelMultisetDType(),
                          zarr_format=2, filters=[codec], compressors=None)
    assert files(tmp_path) == []  # nothing written


def test_an_existing_array_with_such_a_filter_fails_at_open(tmp_path):
    zarr.create_array(tmp_path / "a", shape=(4, 5), chunks=(2, 3), dtype=nz.LabelMultisetDType(),
                      zarr_format=2, filters=[LabelMultisetVLen()], compressors=None)
    document = json.loads((tmp_path / "a" / ".zarray").read_text())
    document["filters"] = [N5Varlen().get_config()]  # what an older version let zarr write
    (tmp_path / "a" / ".zarray").write_text(json.dumps(document))
    with pytest.raises(ConfigurationError, match="n5_varlen cannot be the object codec"):
        zarr.open_array(tmp_path / "a", mode="r")


def test_other_data_types_keep_zarrs_defaults(tmp_path):
    from zarr.codecs import BytesCodec

    plain = zarr.create_array(tmp_path / "u", shape=(3,), chunks=(3,), dtype="uint16")
    assert isinstance(plain.metadata.codecs[0], BytesCodec)
    text = zarr.create_array(tmp_path / "s", shape=(3,), chunks=(3,), dtype=str, zarr_format=2)
    assert [f.codec_id for f in text.metadata.filters] == ["vlen-utf8"]


def test_n5store_names_the_compressor_zarr_added(tmp_path):
    store = nz.N5Store(LocalStore(tmp_path / "c.n5"))
    serializer = nz.N5VarlenZarrCodec(codecs=["n5_label_multiset", "gzip"])
    with pytest.raises(ConfigurationError, match=r"compressors \(zstd\) after the n5_varlen.*compressors=None"):
        zarr.create_array(store, name="labels", shape=(8, 8), chunks=(4, 4), dtype=nz.LabelMultisetDType(),
                          chunk_key_encoding={"name": "v2", "separator": "/"}, serializer=serializer)
    assert files(tmp_path) == []
    array = zarr.create_array(store, name="labels", shape=(8, 8), chunks=(4, 4), dtype=nz.LabelMultisetDType(),
                              chunk_key_encoding={"name": "v2", "separator": "/"}, serializer=serializer,
                              compressors=None)
    array[:] = np.arange(64).reshape(8, 8)
    assert json.loads((tmp_path / "c.n5" / "labels" / "attributes.json").read_text())["compression"]["type"] == "gzip"
