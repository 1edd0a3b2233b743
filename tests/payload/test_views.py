"""One decode function per layer, the view chosen by ``labels=`` (issue 28): the multisets and
the labels of one payload or block agree at every layer, whichever function is called."""

import numpy as np
import pytest

from n5mscodecs import N5LabelMultiset, N5Varlen
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.multiset import LabelMultisetArray
from n5mscodecs.n5 import n5_varlen_decode, n5_varlen_decode_labels, n5_varlen_encode
from n5mscodecs.payload import (
    N5_LAYOUT,
    ZARR_LAYOUT,
    LabelMultisetCodec,
    LabelMultisetVLen,
    decode_payload,
    decode_payload_labels,
    encode_payload,
)

CHAIN = [{"name": "n5_label_multiset"}, {"name": "gzip", "configuration": {"level": 1}}]


def multisets(shape=(6, 5, 4)):
    """Lists with ties, zero counts, duplicate ids and reserved ids, several voxels per list."""
    rng = np.random.default_rng(3)
    lists = [{int(k): int(c) for k, c in zip(rng.integers(0, 9, 3), rng.integers(0, 3, 3))} for _ in range(20)]
    lists += [{2**64 - 2: 1, 4: 1}, {}, {2**63 + 1: 2, 3: 2}]
    index = rng.integers(0, len(lists), shape)
    return LabelMultisetArray.from_elements(np.array(lists, dtype=object)[index.reshape(-1)], shape)


@pytest.mark.parametrize("layout", [N5_LAYOUT, ZARR_LAYOUT])
@pytest.mark.parametrize("rule", ["spec", "java"])
def test_payload_views_agree(layout, rule):
    data = multisets()
    payload = encode_payload(data, layout)
    decoded = decode_payload(payload, data.shape, layout)
    assert decoded == data and decoded.index.flags.f_contiguous == (layout is N5_LAYOUT)
    labels = decode_payload(payload, data.shape, layout, labels=True, rule=rule)
    assert labels.dtype == np.uint64 and np.array_equal(labels, data.argmax(rule=rule))
    assert np.array_equal(decode_payload_labels(payload, data.shape, layout, rule=rule), labels)
    in_c = decode_payload(payload, data.shape, layout, labels=True, rule=rule, order="C")
    assert in_c.flags.c_contiguous and np.array_equal(in_c, labels)
    # order="C" holds for the multisets too: their index is C-contiguous
    multisets_c = decode_payload(payload, data.shape, layout, order="C", rule=rule)
    assert multisets_c.index.flags.c_contiguous and multisets_c == data


def test_payload_view_arguments_are_checked():
    payload = encode_payload(multisets(), N5_LAYOUT)
    for labels in (False, True):
        with pytest.raises(ConfigurationError, match="order"):
            decode_payload(payload, (6, 5, 4), N5_LAYOUT, labels=labels, order="F")
        with pytest.raises(ConfigurationError, match="rule"):
            decode_payload(payload, (6, 5, 4), N5_LAYOUT, labels=labels, rule="imglib")


@pytest.mark.parametrize("rule", ["spec", "java"])
def test_varlen_views_agree(rule):
    data = multisets()
    block = n5_varlen_encode(data, CHAIN)
    assert n5_varlen_decode(block, CHAIN) == data
    labels = n5_varlen_decode(block, CHAIN, labels=True, rule=rule, order="C")
    assert labels.flags.c_contiguous and np.array_equal(labels, data.argmax(rule=rule))
    assert np.array_equal(n5_varlen_decode_labels(block, CHAIN, rule=rule), labels)
    # the cropped shape a dataset reader passes, in both views
    cropped = n5_varlen_encode(data[:3, :2, :4], CHAIN)
    assert n5_varlen_decode(cropped, CHAIN, shape=(3, 2, 4)) == data[:3, :2, :4]
    assert np.array_equal(n5_varlen_decode(cropped, CHAIN, shape=(3, 2, 4), labels=True),
                          data[:3, :2, :4].argmax())


@pytest.mark.parametrize("codec", [N5LabelMultiset(), LabelMultisetCodec(), N5Varlen(CHAIN)],
                         ids=lambda c: c.codec_id)
def test_numcodecs_out_chooses_the_view(codec):
    data = multisets()
    encoded = codec.encode(data)
    labels = codec.decode(encoded, out=np.zeros(data.shape, np.uint64))
    assert np.array_equal(labels, data.argmax())
    signed = codec.decode(encoded, out=np.zeros(data.shape, np.int64))
    assert np.array_equal(signed.view(np.uint64), data.argmax())
    elements = codec.decode(encoded, out=np.empty(data.shape, object))
    assert LabelMultisetArray.from_elements(elements) == data


def test_vlen_out_chooses_the_view():
    codec = LabelMultisetVLen()
    data = multisets((30,))
    encoded = codec.encode(data)
    assert np.array_equal(codec.decode(encoded, out=np.zeros(30, np.uint64)), data.argmax())
    assert LabelMultisetArray.from_elements(codec.decode(encoded)) == data
    assert LabelMultisetArray.from_elements(codec.decode(encoded, out=np.empty(30, object))) == data
