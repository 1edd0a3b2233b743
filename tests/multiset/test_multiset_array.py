import numpy as np
import pytest

from n5mscodecs import INVALID, LabelMultiset, LabelMultisetArray, LabelMultisetFormatError
from n5mscodecs.errors import ConfigurationError, InputTypeError
from n5mscodecs.multiset.array import per_voxel


def lists_array(lists, index):
    """A LabelMultisetArray from Python lists of (id, count) pairs."""
    offsets = np.cumsum([0] + [len(entries) for entries in lists])
    ids = [i for entries in lists for i, _ in entries]
    counts = [c for entries in lists for _, c in entries]
    return LabelMultisetArray(np.asarray(index), offsets, np.array(ids, np.uint64), np.array(counts, np.uint32))


def reference_argmax(entries, rule):
    """Straight transcription of the two rules, for comparison with the kernel."""
    best, best_count = INVALID, 0
    for label, count in entries:
        if rule == "spec":
            if count > best_count or (count == best_count and label < best):
                best, best_count = label, count
        else:   # LabelUtils.getArgMax: Java's signed long ids and int counts
            count = count - 2**32 if count >= 2**31 else count
            if count > best_count or (count == best_count and signed(label) < signed(best)):
                best, best_count = label, count
    return best


def signed(label):
    return label - 2**64 if label >= 2**63 else label


def test_fixed_contract_names_and_dtypes():
    a = LabelMultisetArray.from_labels(np.array([[3, 3, 9], [9, 3, 1]], np.uint64))
    assert a.shape == (2, 3)
    assert a.index.shape == (2, 3) and a.index.dtype.kind == "i"
    assert a.list_offsets.dtype == np.int64 and a.list_offsets.size == a.n_lists + 1
    assert a.ids.dtype == np.uint64 and a.counts.dtype == np.uint32
    # first-encounter order in C order: 3, 9, 1
    assert a.ids.tolist() == [3, 9, 1]
    assert a.index.tolist() == [[0, 0, 1], [1, 0, 2]]


@pytest.mark.parametrize("rule", ["spec", "java"])
def test_argmax_rules_against_reference(rule):
    lists = [
        [],                                    # empty -> INVALID
        [(5, 0), (2, 0)],                      # only zero counts: spec picks 2, java INVALID
        [(7, 3), (4, 3), (9, 1)],              # tie -> smaller id (4)
        [(2**63 + 5, 2), (10, 2)],             # tie, reserved-range id: unsigned 10, signed 2**63+5
        [(INVALID, 4), (1, 4)],                # INVALID is -2 in Java
        [(8, 1), (8, 5), (3, 5)],              # duplicates kept as stored
        [(2**63 + 1, 0), (3, 0)],              # a zero count below INVALID (signed): java picks it
        [(1, 2**31), (2, 5)],                  # 2**31 is negative in Java: never wins
    ]
    a = lists_array(lists, np.arange(len(lists)))
    expected = [reference_argmax(entries, rule) for entries in lists]
    assert a.argmax(rule=rule).tolist() == expected


def test_argmax_rules_differ_where_documented():
    a = lists_array([[], [(5, 0), (2, 0)], [(2**63 + 5, 2), (10, 2)]], [0, 1, 2])
    assert a.argmax().tolist() == [INVALID, 2, 10]
    assert a.argmax(rule="java").tolist() == [INVALID, INVALID, 2**63 + 5]
    with pytest.raises(ConfigurationError, match="rule"):
        a.argmax(rule="paintera")


def test_argmax_random_lists_match_reference():
    rng = np.random.default_rng(1)
    ids = [0, 1, 2, 3, 4, 5, 2**63 - 1, 2**63, 2**63 + 2, 2**64 - 4, INVALID, 2**64 - 1]
    counts = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**32 - 1]
    lists = [[(ids[rng.integers(len(ids))], counts[rng.integers(len(counts))]) for _ in range(rng.integers(0, 7))]
             for _ in range(300)]
    a = lists_array(lists, np.arange(300))
    for rule in ("spec", "java"):
        assert a.argmax(rule=rule, threads=2).tolist() == [reference_argmax(e, rule) for e in lists]


def test_canonical_sorts_and_merges():
    a = lists_array([[(9, 1), (2, 3), (9, 4)], [(2**64 - 1, 1), (0, 2)], []], [[0, 1, 2]])
    c = a.canonical()
    assert [c.element(i).ids.tolist() for i in range(3)] == [[2, 9], [0, 2**64 - 1], []]
    assert [c.element(i).counts.tolist() for i in range(3)] == [[3, 5], [2, 1], []]
    assert c == a  # same multisets
    # decoding keeps the stored order: the original is untouched
    assert a.element(0).ids.tolist() == [9, 2, 9]


def test_canonical_long_lists_use_the_same_rule():
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 40, 500).astype(np.uint64)
    counts = rng.integers(0, 10, 500).astype(np.uint32)
    a = LabelMultisetArray(np.zeros((1,), np.int32), [0, 500], ids, counts)
    c = a.canonical()
    expected = {}
    for i, n in zip(ids.tolist(), counts.tolist()):
        expected[i] = expected.get(i, 0) + n
    assert c.element(0).ids.tolist() == sorted(expected)
    assert c.element(0).counts.tolist() == [expected[k] for k in sorted(expected)]


def test_equality_is_by_content():
    a = lists_array([[(1, 2), (3, 1)], [(5, 1)]], [[0, 1], [1, 0]])
    b = lists_array([[(5, 1)], [(3, 1), (1, 2)], [(5, 1)]], [[1, 0], [2, 1]])
    assert a == b
    c = lists_array([[(1, 2), (3, 1)], [(5, 2)]], [[0, 1], [1, 0]])
    assert a != c
    d = lists_array([[(1, 2)], [(5, 1)]], [[0, 0], [1, 1]])
    assert d != d.transpose()  # same shape, transposed content differs
    assert (a == 3) is False


def test_slicing_is_cheap_and_elements_are_returned():
    labels = np.arange(60, dtype=np.uint64).reshape(3, 4, 5) % 7
    a = LabelMultisetArray.from_labels(labels)
    view = a[1:, ::2, 3]
    assert view.shape == (2, 2)
    assert view.ids is a.ids  # shares the lists
    assert np.array_equal(view.argmax(), labels[1:, ::2, 3])
    assert a[2, 3, 4] == LabelMultiset([labels[2, 3, 4]], [1])
    assert np.array_equal(a.transpose(2, 0, 1).argmax(), labels.transpose(2, 0, 1))
    assert np.array_equal(a.T.argmax(), labels.T)
    with pytest.raises(IndexError):
        a[[0, 1]]


def test_object_array_round_trip_shares_elements():
    a = LabelMultisetArray.from_labels(np.array([[4, 4], [4, 6]], np.uint64))
    objects = a.to_elements()
    assert objects.dtype == object and objects.shape == (2, 2)
    assert objects[0, 0] is objects[1, 0]  # one element per distinct list
    assert objects[1, 1] == LabelMultiset.from_mapping({6: 1})
    back = LabelMultisetArray.from_elements(objects)
    assert back == a and back.n_lists == 2


def test_from_elements_accepts_mappings_pairs_and_ints():
    a = LabelMultisetArray.from_elements([{1: 2, 3: 1}, [(3, 1), (1, 2)], 7, LabelMultiset()], shape=(2, 2))
    assert a[0, 0] == a[0, 1]
    assert a[1, 0].as_dict() == {7: 1}
    assert a[1, 1].num_entries == 0 and a[1, 1].argmax == INVALID
    with pytest.raises(ConfigurationError, match="shape"):
        LabelMultisetArray.from_elements([1, 2, 3], shape=(2, 2))
    with pytest.raises(InputTypeError, match="element"):
        LabelMultisetArray.from_elements([object()])
    with pytest.raises(LabelMultisetFormatError, match="element"):
        LabelMultisetArray.from_elements([[(1,)]])


def test_element_is_hashable_immutable_and_not_a_sequence():
    m = LabelMultiset([3, 1, 3], [1, 1, 2])
    assert m == LabelMultiset([1, 3], [1, 3])
    assert len({m, LabelMultiset([1, 3], [1, 3])}) == 1
    # a Mapping since issue 28, yet numpy still stores it as one object, never as its ids
    other = LabelMultiset({4: 1})
    assert np.array([m, other], dtype=object).shape == (2,)
    assert np.array([m, other]).dtype == object and np.array([m, other])[1] is other
    assert np.full((2, 2), other, dtype=object)[1, 1] is other
    with pytest.raises(ValueError):
        m.ids[0] = 5
    holder = np.empty(1, object)
    holder[0] = m
    assert holder[0] is m


def test_compact_drops_unused_and_duplicate_lists():
    a = lists_array([[(1, 1)], [(2, 1)], [(1, 1)], [(9, 9)]], [[2, 0], [1, 0]])
    c = a.compact()
    assert c.n_lists == 2 and c == a
    assert c.unique_labels().tolist() == [1, 2]


def test_full_and_positive_counts():
    f = LabelMultisetArray.full((2, 3))
    assert f.argmax().tolist() == [[INVALID] * 3] * 2
    assert f.has_positive_counts()
    zero = lists_array([[(4, 0)], []], [0, 1])
    assert not zero.has_positive_counts()


def test_validation_names_the_field():
    with pytest.raises(LabelMultisetFormatError, match="index"):
        LabelMultisetArray(np.array([0, 2]), [0, 1, 2], np.array([1, 2], np.uint64), np.array([1, 1]))
    with pytest.raises(LabelMultisetFormatError, match="list_offsets"):
        LabelMultisetArray(np.array([0]), [0, 3], np.array([1, 2], np.uint64), np.array([1, 1]))
    with pytest.raises(LabelMultisetFormatError, match="counts"):
        LabelMultisetArray(np.array([0]), [0, 1], np.array([1], np.uint64), np.array([-1]))
    with pytest.raises(ConfigurationError, match="labels"):
        LabelMultisetArray.from_labels(np.array([1.5]))


def test_assemble_joins_list_tables_and_fills_missing_pieces():
    from n5mscodecs.multiset import assemble

    left = LabelMultisetArray.from_elements([{1: 2}, {3: 1}], shape=(1, 2))
    right = LabelMultisetArray.from_labels(np.array([[7]], np.uint64))
    whole = assemble((2, 3), [((slice(0, 1), slice(0, 2)), left), ((slice(0, 1), slice(2, 3)), right),
                              ((slice(1, 2), slice(0, 3)), None)], fill=5)
    assert [[e.as_dict() for e in row] for row in whole.to_elements()] == [
        [{1: 2}, {3: 1}, {7: 1}], [{5: 1}, {5: 1}, {5: 1}]]
    assert whole.n_lists == left.n_lists + right.n_lists + 1  # joined as stored, one fill list
    assert whole.index.dtype == np.int32


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("value_dtype", [np.uint64, np.int64])
def test_per_voxel_gathers_in_the_index_order(order, index_dtype, value_dtype):
    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**62, 50).astype(value_dtype)
    index = np.asarray(rng.integers(0, 50, (4, 5, 6)), dtype=index_dtype, order=order)
    result = per_voxel(values, index)
    expected = np.array([[[values[index[a, b, c]] for c in range(6)] for b in range(5)] for a in range(4)])
    assert result.dtype == value_dtype and np.array_equal(result, expected)
    assert result.flags.f_contiguous == (order == "F")
    # a strided index and other dtypes take numpy's path, with the same values
    assert np.array_equal(per_voxel(values, index[:, ::2]), expected[:, ::2])
    assert np.array_equal(per_voxel(values.astype(np.uint32), index), expected.astype(np.uint32))


@pytest.mark.parametrize("bad", [-1, 50, 2**31 - 1])
def test_per_voxel_rejects_indices_outside_the_values(bad):
    index = np.zeros((3, 3), np.int32)
    index[1, 2] = bad
    with pytest.raises(IndexError, match="outside 0..49"):
        per_voxel(np.arange(50, dtype=np.uint64), index)
    with pytest.raises(IndexError, match="outside"):
        per_voxel(np.zeros(0, np.uint64), index)
