import json
import struct

import numpy as np
import pytest
from support import n5_data

from n5mscodecs import INVALID, LabelMultisetArray, n5
from n5mscodecs.errors import CompressionError, ConfigurationError
from n5mscodecs.n5 import n5_block_header, n5_varlen_decode, n5_varlen_encode

PAINTERA = "paintera_export_test.n5"


def expand_entries(a):
    """(voxel, id, count) for every stored entry, voxel in C order."""
    lengths = a.list_lengths()[a.index.reshape(-1)]
    voxel = np.repeat(np.arange(a.size), lengths)
    starts = a.list_offsets[a.index.reshape(-1)]
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    entry = np.repeat(starts, lengths) + within
    return voxel, a.ids[entry], a.counts[entry].astype(np.int64)


def summed(voxel, ids, counts):
    """Multiset sum per (voxel, id) as sorted arrays: an independent numpy reference."""
    keys = np.stack([voxel.astype(np.uint64), ids])
    unique, inverse = np.unique(keys, axis=1, return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=counts, minlength=unique.shape[1]).astype(np.int64)
    return unique[0], unique[1], total


def test_every_downscale_block_round_trips_byte_identically():
    root = n5_data("downscaleTest.n5/sourceImg")
    ds = n5.open(root)
    assert ds.shape == (80, 64, 64) and ds.chunks == (32, 32, 32) and ds.grid_shape == (3, 2, 2)
    for grid in np.ndindex(*ds.grid_shape):
        data = ds.read_block_bytes(grid)
        block = ds.read_block(grid)
        assert block.shape == ds.block_shape(grid)
        assert n5_block_header(data).shape == block.shape  # x=2 blocks truncated to 16
        assert n5_varlen_encode(block, ds.codec_chain) == data


def test_downscale_dataset_selection_matches_blocks():
    ds = n5.open(n5_data("downscaleTest.n5/sourceImg"))
    whole = ds[:]
    assert whole.shape == (80, 64, 64)
    block = ds.read_block((2, 1, 0))
    assert whole[64:80, 32:64, 0:32] == block
    part = ds[60:70, 31, ::3]
    assert part.shape == (10, 22)
    assert part == whole[60:70, 31, ::3]
    assert np.array_equal(part.argmax(), whole.argmax()[60:70, 31, ::3])


@pytest.mark.parametrize("level", ["s0", "s2"])
def test_paintera_argmax_equals_scalar_export(level):
    labels = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/{level}"))
    scalar = n5.open(n5_data(f"{PAINTERA}/scalar_export_{level}/{level}"))
    expected = scalar[:]
    assert expected.shape == labels.shape
    argmax = labels[:].argmax()
    argmax[argmax == INVALID] = 0  # Paintera exports INVALID as 0
    assert np.array_equal(argmax, expected.astype(np.uint64))


def test_paintera_s2_ties_go_to_the_smaller_id():
    s2 = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/s2"))[:].canonical()
    counts_max = np.zeros(s2.n_lists, np.int64)
    n_ties = np.zeros(s2.n_lists, np.int64)
    for i in range(s2.n_lists):
        c = s2.element(i).counts
        if c.size:
            counts_max[i] = c.max()
            n_ties[i] = (c == c.max()).sum()
    tied = (n_ties > 1)[s2.index]
    assert tied.sum() == 41  # as the data README says
    scalar = n5.open(n5_data(f"{PAINTERA}/scalar_export_s2/s2"))[:]
    assert np.array_equal(s2.argmax()[tied], scalar[tied].astype(np.uint64))


def test_paintera_s1_is_count_sum_downsampling_of_s0():
    s0_ds = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/s0"))
    s0 = s0_ds[:]
    s1 = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/s1"))[:]
    # where s0 blocks are missing, Java wrote {0: 0} into s1
    present = np.zeros(s0.shape, bool)
    for grid in np.ndindex(*s0_ds.grid_shape):
        if s0_ds.read_block_bytes(grid) is not None:
            region = tuple(slice(g * c, (g + 1) * c) for g, c in zip(grid, s0_ds.chunks))
            present[region] = True
    covered = present.reshape(50, 2, 50, 2, 50, 2).all(axis=(1, 3, 5))
    assert (~covered).sum() > 0
    zero = s1.to_elements()[~covered]
    assert all(element.as_dict() == {0: 0} for element in set(zero))

    voxel, ids, counts = expand_entries(s0)
    i, j, k = np.unravel_index(voxel, s0.shape)
    parent = np.ravel_multi_index((i // 2, j // 2, k // 2), s1.shape)
    keep = covered.reshape(-1)[parent]
    expected = summed(parent[keep], ids[keep], counts[keep])
    voxel1, ids1, counts1 = expand_entries(s1)
    keep1 = covered.reshape(-1)[voxel1]
    actual = summed(voxel1[keep1], ids1[keep1], counts1[keep1])
    for e, a in zip(expected, actual):
        assert np.array_equal(e, a)


def test_write_read_round_trip_with_truncated_boundary_blocks(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 30, (37, 20, 9)).astype(np.uint64)
    ds = n5.write(tmp_path / "labels", labels, chunks=(16, 16, 4), compression={"type": "gzip", "level": 6})
    attributes = json.loads((tmp_path / "labels" / "attributes.json").read_text())
    assert attributes == {"dataType": "uint8", "compression": {"type": "gzip", "level": 6, "useZlib": False},
                          "blockSize": [16, 16, 4], "dimensions": [37, 20, 9], "isLabelMultiset": True,
                          "maxId": int(labels.max())}
    header = n5_block_header((tmp_path / "labels" / "2" / "1" / "2").read_bytes())
    assert header.shape == (5, 4, 1)  # truncated like Java
    back = n5.open(tmp_path / "labels")
    assert np.array_equal(back[:].argmax(), labels)
    assert ds[3:30, 2, 1:8] == LabelMultisetArray.from_labels(labels[3:30, 2, 1:8])


def test_write_refuses_existing_unless_overwrite(tmp_path):
    n5.write(tmp_path / "a", np.zeros((4, 4), np.uint64), (2, 2))
    with pytest.raises(FileExistsError):
        n5.write(tmp_path / "a", np.zeros((4, 4), np.uint64), (2, 2))
    n5.write(tmp_path / "a", np.ones((4, 4), np.uint64), (2, 2), overwrite=True)
    assert n5.open(tmp_path / "a")[:].argmax().tolist() == [[1] * 4] * 4
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigurationError, match="refusing"):
        n5.write(tmp_path / "other", np.zeros((2,), np.uint64), (2,), overwrite=True)


def test_blocks_without_positive_counts_are_not_written(tmp_path):
    lists = LabelMultisetArray(np.array([[0, 0, 1, 1]]).reshape(4, 1), [0, 1, 2],
                               np.array([5, 6], np.uint64), np.array([0, 3], np.uint32))
    n5.write(tmp_path / "z", lists, chunks=(2, 1))
    assert not (tmp_path / "z" / "0" / "0").exists()
    assert (tmp_path / "z" / "1" / "0").exists()
    assert n5.open(tmp_path / "z")[0, 0] .as_dict() == {0: 1}
    assert n5.open(tmp_path / "z", fill_label=INVALID)[0, 0].as_dict() == {INVALID: 1}


def test_background_blocks_are_skipped_unless_asked(tmp_path):
    labels = np.zeros((4, 6), np.uint64)
    labels[3, 5] = 7
    n5.write(tmp_path / "s", labels, chunks=(2, 2))
    assert sorted(n5.open(tmp_path / "s").present_blocks()) == [(1, 2)]
    assert np.array_equal(n5.open(tmp_path / "s").read_labels(), labels)
    # {0: 2} is not what a missing block reads as: written
    doubled = LabelMultisetArray(np.zeros((2, 2), np.int32), [0, 1], np.zeros(1, np.uint64), [2])
    n5.write(tmp_path / "d", doubled, chunks=(2, 2))
    assert n5.open(tmp_path / "d").present_blocks() == [(0, 0)]
    n5.write(tmp_path / "a", labels, chunks=(2, 2), write_background_blocks=True)
    assert len(n5.open(tmp_path / "a").present_blocks()) == 6


def test_overstated_and_padded_boundary_blocks_are_read(tmp_path):
    labels = np.arange(5 * 3, dtype=np.uint64).reshape(5, 3)
    ds = n5.write(tmp_path / "d", labels, chunks=(4, 4), compression="raw")
    # label-utilities-spark: header claims the full block size, payload holds the cropped count
    boundary = tmp_path / "d" / "1" / "0"
    data = boundary.read_bytes()
    assert n5_block_header(data).shape == (1, 3)
    boundary.write_bytes(data[:4] + struct.pack(">II", 4, 4) + data[12:])
    assert np.array_equal(n5.open(tmp_path / "d")[:].argmax(), labels)
    # a padded writer: full block size in header and payload
    padded = np.full((4, 4), 99, np.uint64)
    padded[:1, :3] = labels[4:, :]
    boundary.write_bytes(n5_varlen_encode(padded))
    assert np.array_equal(n5.open(tmp_path / "d")[:].argmax(), labels)
    assert np.array_equal(n5.open(tmp_path / "d").read_labels(), labels)
    assert ds.read_block((1, 0)).shape == (1, 3)
    assert ds.read_block_labels((1, 0)).shape == (1, 3)


def test_default_mode_dataset_round_trip(tmp_path):
    data = np.arange(7 * 5, dtype=np.uint16).reshape(7, 5)
    n5.write_array(tmp_path / "s", data, chunks=(4, 4), compression="gzip")
    block = (tmp_path / "s" / "1" / "1").read_bytes()
    assert n5_block_header(block).shape == (3, 1)
    ds = n5.open(tmp_path / "s")
    assert ds.dtype == np.uint16
    assert np.array_equal(ds[:], data)
    assert np.array_equal(ds[2:6, 4], data[2:6, 4])


def test_unique_labels_blocks_are_varlength_uint64():
    ds = n5.open(n5_data(f"{PAINTERA}/paintera_labels/unique-labels/s0"))
    labels = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/s0"))
    block = ds.read_block((0, 0, 0))
    assert block.dtype == np.uint64 and block.ndim == 1
    assert sorted(block.tolist()) == labels.read_block((0, 0, 0)).unique_labels().tolist()


def test_open_rejects_groups():
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open_dataset(n5_data(PAINTERA))


def test_decode_errors_name_the_block(tmp_path):
    n5.write(tmp_path / "e", np.ones((2, 2), np.uint64), (2, 2), compression="raw")
    block = tmp_path / "e" / "0" / "0"
    block.write_bytes(block.read_bytes()[:-3])
    with pytest.raises(ValueError, match=r"e/0/0"):
        n5.open(tmp_path / "e")[:]
    with pytest.raises(ValueError, match=r"e/0/0"):
        n5.open(tmp_path / "e").read_labels()


@pytest.mark.parametrize("compression", ["gzip", "zstd", "xz"])
def test_corrupt_compressed_blocks_name_the_block(tmp_path, compression):
    n5.write(tmp_path / "l", np.arange(16).reshape(4, 4), (2, 2), compression=compression)
    n5.write_array(tmp_path / "p", np.arange(16).reshape(4, 4), (2, 2), compression=compression)
    for name in ("l", "p"):
        block = tmp_path / name / "1" / "0"
        block.write_bytes(block.read_bytes()[:-6])
        with pytest.raises(CompressionError, match=rf"{name}/1/0: {compression}"):
            n5.open(tmp_path / name)[:]


@pytest.mark.parametrize("level", ["s0", "s1", "s2"])
def test_read_labels_equals_argmax_of_elements(level):
    ds = n5.open(n5_data(f"{PAINTERA}/paintera_labels/data/{level}"))
    expected = ds.read().argmax()
    assert np.array_equal(ds.read_labels(), expected)
    assert np.array_equal(ds.read_labels((slice(3, 40), 7, slice(None, None, 3))), expected[3:40, 7, ::3])
    assert ds.read_labels((1, 2, 3)) == expected[1, 2, 3]


def test_varlen_decode_of_real_truncated_block_uses_header():
    data = n5_data("downscaleTest.n5/sourceImg/2/0/1").read_bytes()
    assert n5_varlen_decode(data).shape == (16, 32, 32)


def test_lz4_dataset_with_a_block_size_writers_refuse_is_read(tmp_path):
    labels = np.arange(24, dtype=np.uint64).reshape(4, 6)
    n5.write(tmp_path / "c.n5" / "l", labels, chunks=(4, 4), compression={"type": "lz4", "blockSize": 64})
    attributes_file = tmp_path / "c.n5" / "l" / "attributes.json"
    attributes = json.loads(attributes_file.read_text())
    attributes["compression"]["blockSize"] = 6  # as z5py writes it
    attributes_file.write_text(json.dumps(attributes))
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "l")[:].argmax(), labels)
