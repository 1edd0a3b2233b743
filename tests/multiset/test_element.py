"""LabelMultiset as a read-only Mapping of id -> count (issue 28)."""

import pickle
from collections.abc import Mapping

import numpy as np
import pytest

from n5mscodecs import LabelMultiset, LabelMultisetArray
from n5mscodecs.errors import InputTypeError, LabelMultisetFormatError
from n5mscodecs.multiset import INVALID


def test_is_a_mapping_of_total_counts_in_ascending_id_order():
    m = LabelMultiset([7, 5, 7], [1, 2, 3])  # stored unsorted, 7 twice
    assert isinstance(m, Mapping)
    assert len(m) == 2 and m.num_entries == 3
    assert list(m) == [5, 7]
    assert list(m.keys()) == [5, 7] and list(m.values()) == [2, 4] and list(m.items()) == [(5, 2), (7, 4)]
    assert dict(m) == {5: 2, 7: 4}
    assert m[7] == 4 and m[np.uint64(5)] == 2
    assert 5 in m and 6 not in m and "5" not in m
    assert m.get(6) is None and m.get(6, 0) == 0
    with pytest.raises(KeyError):
        m[6]
    # the stored entries are untouched
    assert m.ids.tolist() == [7, 5, 7] and m.counts.tolist() == [1, 2, 3]


def test_equals_any_mapping_with_the_same_items():
    m = LabelMultiset([7, 5], [1, 2])
    assert m == {5: 2, 7: 1} and {5: 2, 7: 1} == m
    assert m != {5: 2} and m != {5: 2, 7: 2}
    assert m == LabelMultiset({7: 1, 5: 2})
    assert m != [(5, 2), (7, 1)]  # not a mapping: not equal
    assert LabelMultiset({5: 0}) != LabelMultiset()  # a zero count is an entry (Java writes them)
    assert LabelMultiset() == {}


def test_constructor_takes_a_mapping_and_repr_is_a_valid_call():
    for m in (LabelMultiset([7, 5, 7], [1, 2, 3]), LabelMultiset(), LabelMultiset([2**64 - 2], [2**32 - 1])):
        text = repr(m)
        again = eval(text, {"LabelMultiset": LabelMultiset})
        assert again == m and repr(again) == text
    assert repr(LabelMultiset([7, 5], [1, 2])) == "LabelMultiset({5: 2, 7: 1})"
    assert repr(LabelMultiset()) == "LabelMultiset({})"
    assert LabelMultiset(LabelMultiset({3: 1})) == {3: 1}
    assert LabelMultiset({INVALID: 1}).ids.dtype == np.uint64
    with pytest.raises(InputTypeError):
        LabelMultiset({3: 1}, [1])
    with pytest.raises(LabelMultisetFormatError):
        LabelMultiset({3: 2**32})


def test_hash_follows_equality_and_survives_pickling():
    a, b = LabelMultiset([7, 5], [1, 2]), LabelMultiset({5: 2, 7: 1})
    assert hash(a) == hash(b) and len({a, b}) == 1
    back = pickle.loads(pickle.dumps(a))
    assert back == a and hash(back) == hash(a) and back.ids.tolist() == [7, 5]


def test_read_only():
    m = LabelMultiset({5: 2})
    with pytest.raises(TypeError):
        m[5] = 3
    with pytest.raises(AttributeError):
        m.update({6: 1})
    with pytest.raises(ValueError):
        m.counts[0] = 1
    assert not m.ids.flags.writeable


def test_numpy_keeps_it_one_object():
    m, n = LabelMultiset({1: 1}), LabelMultiset({2: 1})  # same length: numpy would stack their ids
    for array in (np.array([m, n]), np.array([m, n], dtype=object), np.asarray([[m], [n]])):
        assert array.dtype == object and array.reshape(-1)[0] is m
    assert np.array([m, n]).shape == (2,)
    assert np.asarray(m).shape == () and np.asarray(m)[()] is m
    filled = np.full((2, 3), m, dtype=object)
    assert filled.shape == (2, 3) and filled[1, 2] is m
    with pytest.raises(TypeError):
        np.asarray(m, dtype=np.uint64)
    a = LabelMultisetArray.from_elements(np.array([m, n, m]))
    assert a.argmax().tolist() == [1, 2, 1] and a.n_lists == 2

