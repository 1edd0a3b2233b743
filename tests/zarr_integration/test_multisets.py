"""write_label_multisets / read_multisets / read_labels: the columnar path of zarr ``label_multiset``
arrays. The chunk files must be those zarr's own (object) path writes for the same input."""

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.codecs import ZstdCodec
from zarr.storage import LocalStore

import n5mscodecs.zarr as nz
from n5mscodecs import LabelMultiset, LabelMultisetArray, LabelMultisetVLen
from n5mscodecs.errors import ArgumentError, ConfigurationError
from n5mscodecs.zarr import read_labels, read_multisets, write_label_multisets

SHAPE, CHUNKS = (20, 23, 18), (8, 8, 8)  # edge chunks on every axis


def _labels(seed=0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 40, shape) * 3 + 1).astype(np.uint64)  # never the fill label 0


def _multisets(seed=1):
    """Lists of several entries (with shared and repeated lists), from downsampling labels."""
    big = _labels(seed, tuple(2 * n for n in SHAPE))
    return LabelMultisetArray.from_labels(big).downsample(2)


def _create(path, zarr_format=3, serializer=None, order="C", **extra):
    options = dict(shape=SHAPE, chunks=CHUNKS, dtype=nz.LabelMultisetDType(), fill_value="0x0", overwrite=True,
                   **extra)
    if zarr_format == 3:
        return zarr.create_array(path, serializer=serializer or nz.LabelMultisetZarrCodec(),
                                 compressors=[ZstdCodec(level=3)], **options)
    return zarr.create_array(path, zarr_format=2, filters=[LabelMultisetVLen()], compressors=[numcodecs.Zstd(level=3)],
                             order=order, **options)


def _chunk_files(root):
    """{relative path: bytes} of every chunk file (metadata left out)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs", ".zgroup")}


# (region, data maker): whole array, a region over chunk edges, an int index, writes over existing data
REGIONS = [
    (None, lambda values: values),
    ((slice(3, 17), slice(5, 23), slice(0, 9)), lambda values: values[3:17, 5:23, 0:9]),
    ((4, slice(None), slice(2, 11)), lambda values: values[4, :, 2:11]),
]


@pytest.mark.parametrize("kind", ["labels", "multisets"])
@pytest.mark.parametrize("fmt", [
    (3, None, "C"), (3, nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}]), "C"),
    (3, nz.N5LabelMultisetZarrCodec(), "C"), (2, None, "C"), (2, None, "F")],
    ids=["label_multiset", "n5_varlen", "n5_label_multiset", "v2", "v2-F"])
def test_same_chunk_files_as_zarr(tmp_path, kind, fmt):
    zarr_format, serializer, order = fmt
    values = _labels() if kind == "labels" else _multisets()
    old, new = (_create(tmp_path / name, zarr_format, serializer, order) for name in ("old", "new"))
    base = _labels(7)
    old[...] = base  # existing chunks under every partial write
    write_label_multisets(new, base)
    for region, part in REGIONS[1:]:
        data = part(values)
        old[region] = data.to_elements() if kind == "multisets" else data
        write_label_multisets(new, data, region)
        assert _chunk_files(tmp_path / "old") == _chunk_files(tmp_path / "new")
    expected = base.copy()
    for region, part in REGIONS[1:]:
        data = part(values)
        expected[region] = data.argmax() if kind == "multisets" else data
    assert np.array_equal(read_labels(new), expected)
    elements = zarr.open_array(tmp_path / "new", mode="r")[2:3, 0:4, 5][0].tolist()
    if kind == "labels":
        assert elements == [LabelMultiset([int(v)], [1]) for v in expected[2, 0:4, 5]]


def test_same_chunk_files_whole_array(tmp_path):
    old, new = (_create(tmp_path / name) for name in ("old", "new"))
    values = _multisets()
    old[...] = values.to_elements()
    write_label_multisets(new, values, concurrency=2)
    files = _chunk_files(tmp_path / "new")
    assert len(files) == 3 * 3 * 3 and files == _chunk_files(tmp_path / "old")


def test_reads_against_elements(tmp_path):
    values = _multisets()
    array = _create(tmp_path / "a")
    write_label_multisets(array, values[0:16, 0:16, 0:16], (slice(0, 16),) * 3)  # the rest: missing chunks
    expected = np.full(SHAPE, 0, np.uint64)
    expected[0:16, 0:16, 0:16] = values[0:16, 0:16, 0:16].argmax()
    for region in [None, (slice(5, 19), slice(3, 21), 7), (Ellipsis, slice(-4, None)), (slice(2, 3),)]:
        elements = np.asarray(array[region if region is not None else ...], dtype=object)
        multisets = read_multisets(array, region)
        assert multisets.shape == elements.shape
        assert multisets.equals(LabelMultisetArray.from_elements(elements))
        labels = read_labels(array, region, concurrency=1)
        assert labels.dtype == np.uint64 and np.array_equal(labels, expected[region if region is not None else ...])
    assert read_multisets(array, (19, 22, 17)).shape == ()
    assert int(read_labels(array, (1, 2, 3))) == expected[1, 2, 3]


def test_read_labels_rule_java(tmp_path):
    array = _create(tmp_path / "a")
    tie = np.array([[[LabelMultiset([2**63 + 5, 4], [1, 1])]]], dtype=object)  # spec: 4, java: 2**63 + 5
    array[0:1, 0:1, 0:1] = tie
    assert int(read_labels(array, (0, 0, 0))) == 4
    assert int(read_labels(array, (0, 0, 0), rule="java")) == 2**63 + 5


def test_fill_value_chunks_are_removed(tmp_path):
    array = _create(tmp_path / "a")
    write_label_multisets(array, _labels())
    write_label_multisets(array, 0, (slice(0, 8), slice(0, 8), slice(0, 8)))   # the fill label everywhere
    write_label_multisets(array, LabelMultisetArray.full((8, 8, 8), 0), (slice(8, 16),) * 3)
    files = _chunk_files(tmp_path / "a")
    assert "c/0/0/0" not in files and "c/1/1/1" not in files and len(files) == 25
    assert np.all(read_labels(array, (slice(0, 16),) * 3)[0:8, 0:8, 0:8] == 0)
    with zarr.config.set({"array.write_empty_chunks": True}):  # (with_config needs zarr >= 3.1.2)
        keep = zarr.open_array(tmp_path / "a", mode="r+")
    write_label_multisets(keep, 0, (slice(0, 8),) * 3)
    assert "c/0/0/0" in _chunk_files(tmp_path / "a")


def test_sharded_array_goes_through_zarr(tmp_path):
    sharded = zarr.create_array(tmp_path / "s", shape=SHAPE, chunks=CHUNKS, shards=(16, 16, 16),
                                dtype=nz.LabelMultisetDType(), fill_value="0x0")
    values = _multisets()
    write_label_multisets(sharded, values)
    write_label_multisets(sharded, 9, (slice(0, 3), 5))
    expected = values.argmax()
    expected[0:3, 5] = 9
    assert np.array_equal(read_labels(sharded), expected)
    assert read_multisets(sharded, (slice(4, 9),)).equals(values[4:9])


def test_n5_store_writes_java_blocks(tmp_path):
    """Through N5Store the store crops boundary blocks: the same files as zarr's path."""
    for name in ("old", "new"):
        root = zarr.open_group(nz.N5Store(LocalStore(tmp_path / f"{name}.n5")), mode="w")
        root.create_array("l", shape=SHAPE, chunks=CHUNKS, dtype=nz.LabelMultisetDType(), fill_value="0x0",
                          serializer=nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}, "gzip"]),
                          compressors=None, chunk_key_encoding={"name": "v2", "separator": "/"})
    values = _multisets()
    old = zarr.open_array(nz.N5Store(LocalStore(tmp_path / "old.n5")), path="l", mode="r+")
    new = zarr.open_array(nz.N5Store(LocalStore(tmp_path / "new.n5")), path="l", mode="r+")
    old[...] = values.to_elements()
    write_label_multisets(new, values)
    old_blocks = {k: v for k, v in _chunk_files(tmp_path / "old.n5").items() if not k.endswith(".json")}
    new_blocks = {k: v for k, v in _chunk_files(tmp_path / "new.n5").items() if not k.endswith(".json")}
    assert len(new_blocks) == 27
    # gzip headers carry no time in N5 blocks written by the package: the bytes themselves
    assert old_blocks == new_blocks
    assert np.array_equal(nz.open_labels(str(tmp_path / "new.n5"), "l")[...], values.argmax())


def test_errors(tmp_path):
    array = _create(tmp_path / "a")
    plain = zarr.create_array(tmp_path / "u", shape=(4,), chunks=(2,), dtype="uint64")
    with pytest.raises(ConfigurationError, match="array: needs the label_multiset data type"):
        write_label_multisets(plain, np.zeros(4, np.uint64))
    with pytest.raises(ConfigurationError, match="label_multiset data type"):
        read_labels(plain)
    with pytest.raises(ArgumentError, match="^data: shape"):
        write_label_multisets(array, np.zeros((3, 3, 3), np.uint64), (slice(0, 2),) * 3)
    with pytest.raises(ArgumentError, match="^region: slices of step 1"):
        read_labels(array, (slice(0, 10, 2),))
    with pytest.raises(ArgumentError, match="^region: index 20 is out of bounds"):
        read_multisets(array, (20,))
    with pytest.raises(ArgumentError, match="^region: too many indices: 4 for 3"):
        read_labels(array, (0, 0, 0, 0))
    with pytest.raises(ArgumentError, match="^region: slices, ints and Ellipsis"):
        read_labels(array, ([1, 2],))
    with pytest.raises(ArgumentError, match="^region: slices, ints and Ellipsis"):
        read_labels(array, (True,))   # numpy reads a bool as a mask, never as index 1
    with pytest.raises(ArgumentError, match="^region: at most one Ellipsis"):
        read_labels(array, (Ellipsis, 0, Ellipsis))
    with pytest.raises(ConfigurationError, match="negative label"):
        write_label_multisets(array, np.full((2, 2, 2), -3), (slice(0, 2),) * 3)
    with pytest.raises(ValueError, match="rule"):
        read_labels(array, rule="max")
    with pytest.raises(ArgumentError, match="^concurrency: an int >= 1"):
        write_label_multisets(array, 1, concurrency=0)
    assert _chunk_files(tmp_path / "a") == {}  # nothing was written


def test_ome_zarr_multisets_same_chunk_files(tmp_path, monkeypatch):
    """to_ome_zarr(multisets=True) writes the chunk files zarr's object path wrote before it."""
    from n5mscodecs import paintera
    from n5mscodecs.demo import voronoi_labels

    labels = voronoi_labels((36, 30, 20), 25, seed=3)
    labels[0:8, 0:8, 0:8] = 0   # a background block: equal to the fill value {0: 1}, not stored
    source = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, source, block_size=8, factors=[2, 2])
    paintera.to_ome_zarr(source, tmp_path / "new.zarr", multisets=True, compressors=[ZstdCodec(level=3)])

    calls = []

    def object_path(array, data, region):
        calls.append(region)
        array[region] = data.to_elements()

    monkeypatch.setattr(nz, "write_label_multisets", object_path)
    paintera.to_ome_zarr(source, tmp_path / "old.zarr", multisets=True, compressors=[ZstdCodec(level=3)])
    new = {k: v for k, v in _chunk_files(tmp_path / "new.zarr").items() if "/c/" in k}
    assert len(calls) >= len(new) > 0
    assert {k.split("/")[0] for k in new} == {"s0", "s1", "s2"}
    assert "s0/c/0/0/0" not in new and "s0/c/0/0/1" in new
    assert new == {k: v for k, v in _chunk_files(tmp_path / "old.zarr").items() if "/c/" in k}
    monkeypatch.undo()
    from n5mscodecs.cli import main

    assert main(["ome-zarr", str(source), str(tmp_path / "cli.zarr"), "--multisets", "--quiet"]) == 0
    level = zarr.open_array(tmp_path / "cli.zarr" / "s1", mode="r")
    assert np.array_equal(read_labels(level), LabelMultisetArray.from_labels(labels).downsample(2).argmax().T)
