"""The fuzz targets' oracles on their seed corpora and on every saved finding.

fuzz/regressions/<target>/ holds inputs that once failed a target (crash,
unexpected exception type, inconsistent result); each must now pass.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import n5mscodecs

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))

import seeds  # noqa: E402
import targets  # noqa: E402


def regression_inputs(target):
    directory = FUZZ / "regressions" / target
    return sorted(directory.iterdir()) if directory.is_dir() else []


@pytest.mark.parametrize("target", sorted(targets.TARGETS))
def test_seeds_and_regressions_pass(target):
    if target == "zarr_codecs":
        pytest.importorskip("zarr")
    inputs = list(seeds.seeds(target)) + [p.read_bytes() for p in regression_inputs(target)]
    assert inputs
    for data in inputs:
        targets.TARGETS[target](data)


def test_targets_reject_what_they_should():
    # an oracle that never fails proves nothing: a decoder returning garbage must trip it
    with pytest.raises(AssertionError):
        targets.check_multisets(targets.LabelMultisetArray.from_labels([[1, 2]]), shape=(3,))


def test_chunk_paths_that_disagree_are_a_finding(monkeypatch):
    if not targets.backends.NATIVE_AVAILABLE:
        pytest.skip("only one chunk path in this build of zstandard/lz4")
    payload = n5mscodecs.chunked_encode(b"abcdefgh" * 100, codec="lz4", max_chunk_size=100)
    targets.fuzz_czi_chunked(b"\x00" + payload)
    decode = targets.chunked_decode_on_path
    monkeypatch.setattr(targets, "chunked_decode_on_path", lambda native, *a, **k: decode(native, *a, **k)[native:])
    with pytest.raises(AssertionError, match="chunk paths disagree"):
        targets.fuzz_czi_chunked(b"\x00" + payload)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
@pytest.mark.parametrize("target", sorted(targets.TARGETS))
def test_arbitrary_bytes(target, data):
    """Every decoder raises only N5msCodecsError on arbitrary bytes, or returns a consistent result."""
    if target == "zarr_codecs":
        pytest.importorskip("zarr")
    targets.TARGETS[target](data)
