import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import n5_data

from n5mscodecs import INVALID, LabelMultisetArray, n5
from n5mscodecs.errors import ConfigurationError

PAINTERA = "paintera_export_test.n5/paintera_labels/data"


def random_lists(rng, shape, n_lists=40, max_entries=5, max_id=12):
    """Unsorted lists with duplicate ids, zero counts and an empty list."""
    lengths = rng.integers(0, max_entries + 1, n_lists)
    lengths[0] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ids = rng.integers(0, max_id, offsets[-1]).astype(np.uint64)
    counts = rng.integers(0, 50, offsets[-1]).astype(np.uint32)
    index = rng.integers(0, n_lists, shape).astype(np.int32)
    return LabelMultisetArray(index, offsets, ids, counts)


def reference_downsample(array, factors, max_num_entries=-1, keep="highest"):
    """Per output voxel, a dict {id: summed count} computed with plain Python."""
    elements = array.to_elements()
    out_shape = tuple(-(-n // f) for n, f in zip(array.shape, factors))
    result = np.empty(out_shape, object)
    for out in np.ndindex(*out_shape):
        window = tuple(slice(o * f, (o + 1) * f) for o, f in zip(out, factors))
        total = {}
        for element in elements[window].reshape(-1):
            for label, count in zip(element.ids.tolist(), element.counts.tolist()):
                total[label] = total.get(label, 0) + count
        if 0 < max_num_entries < len(total):
            sign = -1 if keep == "highest" else 1
            kept = sorted(total.items(), key=lambda item: (sign * item[1], item[0]))[:max_num_entries]
            total = dict(kept)
        result[out] = dict(sorted(total.items()))
    return result


def signed(value, bits):
    return value - (1 << bits) if value >> (bits - 1) else value


def reference_java_window(elements, max_num_entries):
    """One window as Java's LabelMultisetTypeDownscaler writes it, with Python integers:
    [(id, count), ...] in signed id order, counts modulo 2**32, its cut, {0: 0} when empty."""
    total = {}
    for element in elements:
        for label, count in zip(element.ids.tolist(), element.counts.tolist()):
            total[label] = (total.get(label, 0) + count) % 2**32
    entries = sorted(total.items(), key=lambda item: signed(item[0], 64))
    if 0 < max_num_entries < len(entries):
        by_count = sorted(entries, key=lambda item: (signed(item[1], 32), -signed(item[0], 64)))
        entries = sorted(by_count[:max_num_entries], key=lambda item: signed(item[0], 64))
    return entries or [(0, 0)]


@pytest.mark.parametrize("max_num_entries", [-1, 1, 3])
def test_java_rule_matches_python_model_of_the_java_downscaler(max_num_entries):
    rng = np.random.default_rng(max_num_entries + 5)
    array = random_lists(rng, (9, 7, 5))
    edge_ids = np.array([2**63, 2**63 + 1, 2**64 - 3, 2**63 - 1], np.uint64)
    swap = rng.random(array.ids.size) < 0.3
    ids = np.where(swap, rng.choice(edge_ids, array.ids.size), array.ids)
    counts = np.where(rng.random(array.ids.size) < 0.2, np.uint32(2**31 + 7), array.counts).astype(np.uint32)
    array = LabelMultisetArray(array.index, array.list_offsets, ids, counts)
    result = array.downsample((2, 3, 2), max_num_entries, rule="java")
    elements = array.to_elements()
    for out in np.ndindex(*result.shape):
        window = elements[tuple(slice(o * f, (o + 1) * f) for o, f in zip(out, (2, 3, 2)))].reshape(-1)
        element = result[out]
        assert list(zip(element.ids.tolist(), element.counts.tolist())) == reference_java_window(
            window, max_num_entries)


def as_dicts(array):
    """Per voxel {id: count} in stored order (to check sorting and merging too)."""
    out = np.empty(array.shape, object)
    for v in np.ndindex(*array.shape):
        element = array[v]
        out[v] = dict(zip(element.ids.tolist(), element.counts.tolist()))
        assert element.ids.tolist() == sorted(out[v]), "output lists are sorted by id, ids unique"
    return out


@pytest.mark.parametrize("shape, factors", [((7, 5, 6), (2, 2, 2)), ((9, 4, 5), (3, 1, 2)), ((11, 6), (4, 3)),
                                            ((13,), (5,))])
def test_matches_python_reference_with_partial_edge_windows(shape, factors):
    array = random_lists(np.random.default_rng(sum(shape)), shape)
    result = array.downsample(factors)
    assert result.shape == tuple(-(-n // f) for n, f in zip(shape, factors))
    expected = reference_downsample(array, factors)
    assert (as_dicts(result) == expected).all()


@pytest.mark.parametrize("keep", ["highest", "lowest"])
def test_max_num_entries_keeps_highest_or_lowest_counts_ties_to_smaller_id(keep):
    array = random_lists(np.random.default_rng(5), (8, 6, 6), max_id=6)
    result = array.downsample((2, 3, 2), max_num_entries=2, keep=keep)
    assert (as_dicts(result) == reference_downsample(array, (2, 3, 2), 2, keep)).all()
    assert result.entries_per_voxel().max() == 2


def test_tie_breaking_by_hand():
    # window: {5: 2, 9: 2, 1: 1, 3: 3} -> highest two: 3 (3), then 5 (2, smaller id than 9)
    array = LabelMultisetArray(np.array([0, 1]), [0, 2, 4], np.array([5, 9, 1, 3], np.uint64),
                               np.array([2, 2, 1, 3], np.uint32))
    assert array.downsample(2, 2)[0].as_dict() == {3: 3, 5: 2}
    assert array.downsample(2, 2, keep="lowest")[0].as_dict() == {1: 1, 5: 2}
    assert array.downsample(2, 0)[0].as_dict() == {1: 1, 3: 3, 5: 2, 9: 2}


def test_identical_windows_share_one_list_and_runs_multiply():
    labels = np.zeros((8, 8, 8), np.uint64)
    labels[4:] = 7
    result = LabelMultisetArray.from_labels(labels).downsample(2)
    assert result.n_lists == 2
    assert result[0, 0, 0].as_dict() == {0: 8} and result[3, 3, 3].as_dict() == {7: 8}


def test_counts_saturate_instead_of_wrapping():
    array = LabelMultisetArray(np.zeros((2, 2), np.int32), [0, 1], np.array([4], np.uint64),
                               np.array([2**31 + 5], np.uint32))
    assert array.downsample(2)[0, 0].as_dict() == {4: 2**32 - 1}


def test_empty_lists_give_empty_lists():
    array = LabelMultisetArray(np.zeros((3, 3), np.int32), [0, 0], np.zeros(0, np.uint64), np.zeros(0, np.uint32))
    result = array.downsample(2)
    assert result.shape == (2, 2) and result.ids.size == 0
    assert result.argmax().tolist() == [[INVALID] * 2] * 2


def test_strided_views_and_index_dtypes():
    array = random_lists(np.random.default_rng(9), (10, 8, 6))
    view = array.transpose(2, 0, 1)[1:, ::2]
    expected = reference_downsample(view, (2, 2, 2))
    assert (as_dicts(view.downsample(2)) == expected).all()
    wide = LabelMultisetArray(view.index.astype(np.uint16), view.list_offsets, view.ids, view.counts)
    assert wide.downsample(2) == view.downsample(2)


def test_threaded_slabs_equal_one_slab(monkeypatch):
    from n5mscodecs.multiset import array as multiset_array

    array = random_lists(np.random.default_rng(2), (33, 20, 20), n_lists=300)
    single = array.downsample(2, threads=1)
    monkeypatch.setattr(multiset_array, "_PARALLEL_DOWNSAMPLE_VOXELS", 0)
    sliced = array.downsample(2, threads=3)
    assert sliced == single
    assert sliced.shape == (17, 10, 10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 7), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
       st.integers(0, 2**32 - 1))
def test_total_count_is_preserved(n0, n1, f0, f1, max_entries, seed):
    array = random_lists(np.random.default_rng(seed), (n0, n1), max_entries=max_entries)
    result = array.downsample((f0, f1))
    total_in = array.counts.astype(np.int64)[_entry_of_voxels(array)].sum()
    total_out = result.counts.astype(np.int64)[_entry_of_voxels(result)].sum()
    assert total_in == total_out


def _entry_of_voxels(array):
    flat = array.index.reshape(-1)
    lengths = array.list_lengths()[flat]
    starts = np.repeat(array.list_offsets[flat], lengths)
    return starts + np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)


@pytest.mark.parametrize("factors, message", [((2, 2), "factors"), (0, "factors"), ((2, 1.5, 2), "factors")])
def test_bad_factors_raise_naming_the_field(factors, message):
    array = random_lists(np.random.default_rng(0), (4, 4, 4))
    with pytest.raises(ConfigurationError, match=message):
        array.downsample(factors)


def test_bad_keep_and_dimensions():
    array = random_lists(np.random.default_rng(0), (4, 4, 4))
    with pytest.raises(ConfigurationError, match="keep"):
        array.downsample(2, 3, keep="java")
    with pytest.raises(ConfigurationError, match="dimensions"):
        array.reshape(1, 4, 4, 4).downsample(2)


def paintera_s0_with_missing_blocks_as_java_reads_them():
    """s0 with missing blocks as {0: 0}: what Java's downscaler writes for windows without data."""
    s0 = n5.open(n5_data(f"{PAINTERA}/s0"), fill_label=INVALID)[:]  # missing blocks as {INVALID: 1}
    assert INVALID not in n5.open(n5_data(f"{PAINTERA}/s1"))[:].unique_labels()
    ids, counts = s0.ids.copy(), s0.counts.copy()
    missing = ids == INVALID
    assert missing.sum() == 1
    ids[missing], counts[missing] = 0, 0
    return LabelMultisetArray(s0.index, s0.list_offsets, ids, counts)


def test_downsampling_paintera_s0_reproduces_s1():
    s0 = paintera_s0_with_missing_blocks_as_java_reads_them()
    s1 = n5.open(n5_data(f"{PAINTERA}/s1"))[:]
    result = s0.downsample(2)
    assert result.shape == s1.shape == (50, 50, 50)
    assert result == s1  # every voxel the same multiset
    assert np.array_equal(result.argmax(), s1.argmax())


def test_java_rule_with_missing_blocks_as_no_data_reproduces_paintera_s1_entry_for_entry():
    """Paintera's downsampler skipped the missing s0 blocks: empty windows, which Java writes as {0: 0}."""
    s0 = n5.open(n5_data(f"{PAINTERA}/s0"), fill_label=INVALID)[:]
    (position,) = np.flatnonzero(s0.ids == INVALID)
    offsets = s0.list_offsets.copy()
    offsets[np.searchsorted(offsets, position, side="right"):] -= 1   # that list becomes empty
    no_data = LabelMultisetArray(s0.index, offsets, np.delete(s0.ids, position), np.delete(s0.counts, position))
    s1 = n5.open(n5_data(f"{PAINTERA}/s1"))[:]
    result = no_data.downsample(2, rule="java")
    assert stored_lists(result) == stored_lists(s1)   # entry for entry, in Java's order
    assert ([0], [0]) in stored_lists(result)


def stored_lists(array):
    """Every voxel's list as stored: ``[(ids, counts), ...]`` in C order."""
    bounds = array.list_offsets.tolist()
    lists = [(array.ids[a:b].tolist(), array.counts[a:b].tolist()) for a, b in zip(bounds[:-1], bounds[1:])]
    return [lists[k] for k in array.index.ravel().tolist()]


def test_downsampling_paintera_s1_reproduces_s2_with_partial_windows():
    s1 = n5.open(n5_data(f"{PAINTERA}/s1"))[:]
    s2 = n5.open(n5_data(f"{PAINTERA}/s2"))[:]
    result = s1.downsample(2)
    assert result.shape == s2.shape == (25, 25, 25)
    assert result == s2
    # and block by block, as the pyramid writer downsamples (32 = 2 x 16: windows never straddle blocks)
    s1_ds = n5.open(n5_data(f"{PAINTERA}/s1"))
    for grid in np.ndindex(*s1_ds.grid_shape):
        block = s1_ds.read_block(grid)
        region = tuple(slice(g * 16, g * 16 + -(-n // 2)) for g, n in zip(grid, block.shape))
        assert block.downsample(2) == s2[region]
