"""The codecs through zarr-python 2.18 (run by CI in an environment with ``zarr<3``).

zarr 2 hands compressors and object codecs chunks in the array's memory order
and reshapes what they return in that order, so F-ordered arrays come back
transposed inside each chunk unless the codecs follow numcodecs' rule.
"""

import json

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
if int(zarr.__version__.split(".")[0]) >= 3:
    pytest.skip("zarr 2 only (CI runs this module with zarr<3)", allow_module_level=True)

import zarr_v2_cases as cases  # noqa: E402

from n5mscodecs import CziChunked, LabelMultiset, LabelMultisetVLen  # noqa: E402


def create(root, name):
    kind, order, fill = cases.CASES[name]
    options = {"compressor": cases.CZI, "dtype": "<u2"} if kind == "czi" else {
        "dtype": object, "object_codec": LabelMultisetVLen(), "compressor": None}
    return zarr.open(str(root / name), mode="w", shape=cases.SHAPE, chunks=cases.CHUNKS, order=order,
                     **options, **fill)


@pytest.mark.parametrize("name", list(cases.CASES))
def test_round_trip_in_both_orders(tmp_path, name):
    kind, _, fill = cases.CASES[name]
    array = create(tmp_path, name)
    cases.write(array, kind)
    cases.check_reads(array, kind, fill.get("fill_value", 0))  # zarr 2's default fill is 0


def test_chunks_hold_memory_order(tmp_path):
    cases.write_all(create, tmp_path)
    cases.check_chunks_in_memory_order(tmp_path)


def test_partial_write_with_fill_none_writes_empty_multisets(tmp_path):
    array = create(tmp_path, "lm_F_none")
    array[5, 8] = LabelMultiset([4], [1])
    chunk = LabelMultisetVLen().decode((tmp_path / "lm_F_none" / "1.2").read_bytes())
    assert sorted(e.num_entries for e in chunk) == [0] * 15 + [1]  # zarr 2 stores whole edge chunks
    assert array[4, 8] == LabelMultiset() and array[0, 0] is None  # a missing chunk reads as fill


def test_default_fill_value_is_zero(tmp_path):
    create(tmp_path, "lm_C")
    assert json.loads((tmp_path / "lm_C" / ".zarray").read_text())["fill_value"] == 0


def test_writes_the_committed_fixture(tmp_path):
    cases.write_all(create, tmp_path)
    cases.check_same_files(tmp_path, cases.WRITTEN_BY_ZARR2)


@pytest.mark.parametrize("name", list(cases.CASES))
def test_reads_what_zarr3_wrote(name):
    kind, _, fill = cases.CASES[name]
    array = zarr.open(str(cases.WRITTEN_BY_ZARR3 / name), mode="r")
    got = array[:]
    if kind == "czi":
        np.testing.assert_array_equal(got, cases.expected(kind, 0))
    else:
        # zarr 3 writes the fill value as the integer id (INVALID by default), which zarr 2
        # hands out for missing chunks and this package reads as that label
        want = cases.expected(kind, array.fill_value)
        if "fill_value" in fill:  # null: zarr 3 filled the written chunk with {INVALID: 1}
            assert array.fill_value is None and got[5, 0] is None and got[4, 8].num_entries == 1
            want[4:, 8:] = got[4:, 8:]
            want[5, 8] = cases.elements()[5, 8]
        assert cases.as_multisets(got) == cases.as_multisets(want)


def test_czi_codec_in_zarr2_metadata():
    array = zarr.open(str(cases.WRITTEN_BY_ZARR2 / "czi_F"), mode="r")
    assert isinstance(array.compressor, CziChunked) and array.compressor == cases.CZI


def test_zarr2_reads_an_ngff_04_export():
    """tests/fixtures/ome_zarr_04: ``paintera.to_ome_zarr(version="0.4")`` of a Paintera source
    made from the labels below (x, y, z) with resolution (4, 4, 40) and offset (1, 2, 3)."""
    from pathlib import Path

    root = zarr.open_group(str(Path(__file__).parents[1] / "fixtures" / "ome_zarr_04" / "labels.zarr"), mode="r")
    labels = np.arange(10 * 8 * 6, dtype=np.uint64).reshape(10, 8, 6) // 7
    labels[0, 0, 0] = 0  # INVALID in the source: the NGFF background
    assert np.array_equal(root["s0"][...], labels.T)
    assert root["s1"].shape == (3, 4, 5) and root["s1"].dtype == np.uint64
    multiscale = root.attrs["multiscales"][0]
    assert multiscale["version"] == "0.4" and root.attrs["image-label"]["version"] == "0.4"
    assert multiscale["datasets"][1]["coordinateTransformations"] == [
        {"type": "scale", "scale": [80.0, 8.0, 8.0]}, {"type": "translation", "translation": [23.0, 4.0, 3.0]}]
