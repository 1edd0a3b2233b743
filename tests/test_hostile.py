"""Hostile and broken containers (issue 27): bounded memory, no hangs, no escape from the
container root, readable errors. The bombs run in one subprocess that reports its own peak
resident memory; the special files there must fail within its time-out."""

import functools
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import zstandard
from support import hand_list, hand_n5_payload, hand_varlen_block

from n5mscodecs import ConfigurationError, LookupFormatError, N5HeaderError, StorageError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.n5 import n5_varlen_decode
from n5mscodecs.n5.compression import Blosc
from n5mscodecs.n5.header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader
from n5mscodecs.paintera.lookup import parse_mapping_file
from n5mscodecs.payload import N5_LAYOUT, max_payload_size

CLAIM = 512 << 20  # what each bomb's header claims
PEAK_LIMIT_MB = 150  # the reading process's whole peak (Python, numpy, zarr and n5mscodecs included)


def zstd_zeros(nbytes):
    """A zstd frame of ``nbytes`` zero bytes, made in 1 MiB steps (about 16 KB for 512 MiB)."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = bytes(1 << 20)
    parts = [compressor.compress(chunk[:min(1 << 20, nbytes - start)]) for start in range(0, nbytes, 1 << 20)]
    return b"".join(parts) + compressor.flush()


def write_file(path, data):
    """``data`` at ``path`` (parents made), bypassing the package's writer."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def label_dataset(path, payload_size):
    """A 32^3 zstd label multiset dataset whose one block holds ``payload_size`` zero bytes: argMaxSize 0,
    every offset 0 (the empty list at byte 0), then empty lists that no voxel refers to."""
    dataset = n5.write(path, np.zeros((32, 32, 32), np.uint64), chunks=(32, 32, 32), compression="zstd")
    block = N5BlockHeader(MODE_VARLENGTH, (32, 32, 32), payload_size).to_bytes() + zstd_zeros(payload_size)
    write_file(dataset.block_path((0, 0, 0)), block)
    return block


READER = r"""
import json, os, resource, sys
import numcodecs, numpy as np, zarr
from n5mscodecs import N5msCodecsError, n5
from n5mscodecs.zarr import N5Store

root = sys.argv[1]
zstd_chain = [{"name": "n5_label_multiset"}, {"name": "zstd"}]
with open(os.path.join(root, "bomb.block"), "rb") as f:
    bomb = f.read()
with open(os.path.join(root, "chain.block"), "rb") as f:
    chain_bomb = f.read()
cases = {
    "codec.decode": lambda: numcodecs.get_codec({"id": "n5_varlen", "codecs": zstd_chain}).decode(bomb),
    "n5.open()[:]": lambda: n5.open(os.path.join(root, "bomb.n5", "labels"))[:],
    "read_labels": lambda: n5.open(os.path.join(root, "bomb.n5", "labels")).read_labels(),
    "zarr elements": lambda: zarr.open_array(N5Store(zarr.storage.LocalStore(os.path.join(root, "bomb.n5"))),
                                             path="labels", mode="r")[:],
    "gzip+zstd chain": lambda: numcodecs.get_codec(
        {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}, {"name": "gzip"}, {"name": "zstd"}]}
    ).decode(chain_bomb),
    "plain header": lambda: n5.open(os.path.join(root, "plain.n5", "raw"))[:],
    "near bound": lambda: n5.open(os.path.join(root, "near.n5", "labels"))[:],
    "near bound labels": lambda: n5.open(os.path.join(root, "near.n5", "labels")).read_labels(),
    "near bound zarr": lambda: zarr.open_array(N5Store(zarr.storage.LocalStore(os.path.join(root, "near.n5"))),
                                               path="labels", mode="r")[:],
    "fifo": lambda: n5.open(os.path.join(root, "special.n5", "raw"))[0:4, 0:4],
    "/dev/zero": lambda: n5.open(os.path.join(root, "special.n5", "raw"))[4:8, 0:4],
    "/dev/zero, links allowed": lambda: n5.open(os.path.join(root, "special.n5", "raw"),
                                                allow_outside_root=True)[4:8, 0:4],
    "directory": lambda: n5.open(os.path.join(root, "special.n5", "raw"))[0:4, 4:8],
}
def peak_mb():
    # VmHWM: this process's own high-water mark (ru_maxrss would start from the parent's at fork)
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


results = {}
for name, read in cases.items():
    try:
        read()
        outcome = "ok"
    except N5msCodecsError as error:
        outcome = type(error).__name__ + ": " + str(error)
    results[name] = [outcome, peak_mb()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Bombs and special files, and what one subprocess reading each of them reports."""
    root = tmp_path_factory.mktemp("hostile")
    bomb = label_dataset(root / "bomb.n5" / "labels", CLAIM)
    (root / "bomb.block").write_bytes(bomb)
    # near the bound of a 32^3 block (64 entries per voxel): decodes, within the memory bound
    label_dataset(root / "near.n5" / "labels", max_payload_size(32**3, N5_LAYOUT) - 4096)
    # [n5_label_multiset, gzip, zstd] whose outer zstd stage inflates to CLAIM bytes for a 1-voxel payload
    (root / "chain.block").write_bytes(hand_varlen_block((1,), zstd_zeros(CLAIM), 20))
    # a 64^3 uint8 dataset whose block header claims 1024 x 1024 x 512
    plain = n5.create_array_dataset(root / "plain.n5" / "raw", (64, 64, 64), (64, 64, 64), np.uint8,
                                    compression="zstd")
    header = N5BlockHeader(MODE_DEFAULT, (1024, 1024, 512)).to_bytes()
    write_file(plain.block_path((0, 0, 0)), header + zstd_zeros(CLAIM))
    special = n5.create_array_dataset(root / "special.n5" / "raw", (8, 8), (4, 4), np.uint8, compression="raw")
    os.makedirs(os.path.join(special.path, "0"))
    os.mkfifo(os.path.join(special.path, "0", "0"))
    os.makedirs(os.path.join(special.path, "1"))
    os.symlink("/dev/zero", os.path.join(special.path, "1", "0"))
    os.makedirs(os.path.join(special.path, "0", "1"))
    # a FIFO or /dev/zero read would block or never end: the time-out turns that into a failure
    done = subprocess.run([sys.executable, "-c", READER, str(root)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout.splitlines()[-1])


def test_bombs_are_refused_before_inflating_on_every_path(hostile):
    _, results = hostile
    for name in ("codec.decode", "n5.open()[:]", "read_labels", "zarr elements"):
        assert results[name][0].startswith("N5HeaderError") and "numElements 536870912 exceeds" in results[name][0]
    assert results["gzip+zstd chain"][0].startswith("CompressionError")
    assert "zstd: payload decompresses past" in results["gzip+zstd chain"][0]
    assert results["plain header"][0].startswith("N5HeaderError")
    assert "dims [1024, 1024, 512]" in results["plain header"][0] and "blockSize [64, 64, 64]" in results[
        "plain header"][0]
    for name in ("near bound", "near bound labels", "near bound zarr"):
        assert results[name][0] == "ok", results[name]


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's allocator (quarantine, shadow memory) changes resident memory; "
                           "measured in the other CI runs")
def test_peak_memory_of_every_read_is_bounded(hostile):
    _, results = hostile
    peak = max(maxrss for _, maxrss in results.values())
    assert peak < PEAK_LIMIT_MB, {name: round(maxrss) for name, (_, maxrss) in results.items()}


def test_special_files_are_refused_unread_naming_the_file(hostile):
    root, results = hostile
    for name, what in (("fifo", "a FIFO, not a regular file"), ("directory", "a directory, not a regular file"),
                       ("/dev/zero", "resolves to /dev/zero, outside the container root"),
                       ("/dev/zero, links allowed", "a device, not a regular file")):
        outcome, _ = results[name]
        assert outcome.startswith("StorageError") and what in outcome, outcome
    assert "special.n5/raw/0/0" in results["fifo"][0]


def test_info_check_reports_special_files_as_bad(hostile, capsys):
    root, _ = hostile
    assert n5ms(["info", "--check", str(root / "special.n5" / "raw")]) == 1
    out = capsys.readouterr().out
    assert out.count("BAD") == 3 and "a directory, not a regular file" in out and "a FIFO" in out
    assert "/dev/zero" in out


# ---------------------------------------------------------------------------------------------
# the root is a boundary


def test_reads_do_not_follow_links_out_of_the_container(tmp_path):
    outside = n5.write_array(tmp_path / "outside.n5" / "raw", np.arange(16, dtype=np.uint8).reshape(4, 4), (4, 4))
    inside = n5.create_array_dataset(tmp_path / "c.n5" / "raw", (4, 4), (4, 4), np.uint8)
    os.makedirs(os.path.join(inside.path, "0"))
    os.symlink(outside.block_path((0, 0)), os.path.join(inside.path, "0", "0"))
    with pytest.raises(StorageError, match="outside the container root"):
        n5.open(inside.path)[:]
    opted_in = n5.open(inside.path, allow_outside_root=True)
    assert np.array_equal(opted_in[:], outside[:])
    # a link that stays inside the root is fine
    os.symlink(inside.path, tmp_path / "c.n5" / "alias")
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "alias", allow_outside_root=True)[:], outside[:])


@pytest.mark.parametrize("container", ["p.n5", "plain"])  # inside a *.n5 container, or not
def test_resume_does_not_write_or_remove_outside_the_target(tmp_path, container):
    labels = np.arange(8 * 8 * 8, dtype=np.uint64).reshape(8, 8, 8) // 50
    target = tmp_path / container / "labels"
    paintera.convert(labels, target, block_size=4, factors=[2])
    outside = tmp_path / "precious"
    (outside / "s0").mkdir(parents=True)
    (outside / "s0" / "keep").write_text("keep me")
    # an interrupted conversion whose label-to-block-mapping is a link to a directory outside
    attributes = n5.read_attributes(target)
    attributes[paintera.CONVERSION_KEY]["complete"] = False
    n5.write_attributes(target, attributes)
    import shutil

    shutil.rmtree(target / "label-to-block-mapping")
    os.symlink(outside, target / "label-to-block-mapping")
    with pytest.raises(StorageError, match="outside the container root"):
        paintera.convert(labels, target, block_size=4, factors=[2], resume=True)
    assert (outside / "s0" / "keep").read_text() == "keep me" and sorted(os.listdir(outside)) == ["s0"]
    assert os.listdir(outside / "s0") == ["keep"]


def test_write_block_rejects_positions_off_the_grid(tmp_path):
    plain = n5.create_array_dataset(tmp_path / "c.n5" / "raw", (8, 8), (4, 4), np.uint8)
    labels = n5.write(tmp_path / "c.n5" / "labels", np.zeros((8, 8), np.uint64), chunks=(4, 4))
    for position in ((-1, 0), (2, 0), (0, 0, 0)):
        with pytest.raises(ConfigurationError, match="outside the grid"):
            plain.write_block(position, np.zeros((4, 4), np.uint8))
        with pytest.raises(ConfigurationError, match="outside the grid"):
            labels.write_block(position, np.ones((4, 4), np.uint64))
    with pytest.raises(ConfigurationError, match="does not fit blockSize"):
        plain.write_block((0, 0), np.zeros((5, 4), np.uint8))
    assert sorted(os.listdir(plain.path)) == ["attributes.json"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_honour_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        dataset = n5.write_array(tmp_path / "c.n5" / "raw", np.ones((4, 4), np.uint8), (4, 4))
        with open(tmp_path / "plain-open", "w"):
            pass
    finally:
        os.umask(previous)
    expected = os.stat(tmp_path / "plain-open").st_mode & 0o777
    assert expected == 0o666 & ~umask
    for path in (dataset.block_path((0, 0)), os.path.join(dataset.path, "attributes.json")):
        assert os.stat(path).st_mode & 0o777 == expected
    assert not [name for name in os.listdir(dataset.path) if name.startswith(".tmp-")]


# ---------------------------------------------------------------------------------------------
# malformed attributes: the package's error naming the file and field, exit 2 in the CLI

MALFORMED = {
    "negative dimensions": ({"dimensions": [-8, 8, 8]}, "dimensions"),
    "dimensions not a list": ({"dimensions": "8,8,8"}, "dimensions"),
    "dimensions not integers": ({"dimensions": [8.5, 8, 8]}, "dimensions"),
    "blockSize 1e11": ({"blockSize": [1e11, 1, 1]}, "blockSize"),
    "blockSize zero": ({"blockSize": [0, 4, 4]}, "blockSize"),
    "blockSize of too many voxels": ({"blockSize": [2**16, 2**16, 2]}, "blockSize"),
    "ndim mismatch": ({"blockSize": [4, 4]}, "blockSize"),
    "70 dimensions": ({"dimensions": [1] * 70, "blockSize": [1] * 70}, "dimensions"),
    "compression type 5": ({"compression": {"type": 5}}, "compression"),
    "gzip level x": ({"compression": {"type": "gzip", "level": "x"}}, "compression"),
    "no blockSize": ({"blockSize": None}, "blockSize"),
}


def malformed_dataset(root, change):
    dataset = n5.write(root / "c.n5" / "labels", np.ones((4, 4, 4), np.uint64), chunks=(4, 4, 4))
    attributes = n5.read_attributes(dataset.path)
    for key, value in change.items():
        if value is None:
            del attributes[key]
        else:
            attributes[key] = value
    n5.write_attributes(dataset.path, attributes)
    return dataset.path


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_attributes_are_rejected_at_open_naming_the_field(tmp_path, case, capsys):
    change, field = MALFORMED[case]
    path = malformed_dataset(tmp_path, change)
    with pytest.raises(ConfigurationError, match=field) as raised:
        n5.open(path)
    assert "labels" in str(raised.value)
    assert n5ms(["info", str(tmp_path / "c.n5")]) == 2
    assert n5ms(["zarr-json", str(tmp_path / "c.n5")]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and field in captured.out + captured.err


@pytest.mark.parametrize("content", [b"", b'{"dimensions": [4, 4', b"[1, 2]", b"\xff\xfe"])
def test_unreadable_attributes_json_names_the_file(tmp_path, content, capsys):
    path = malformed_dataset(tmp_path, {})
    with open(os.path.join(path, "attributes.json"), "wb") as f:
        f.write(content)
    with pytest.raises(ConfigurationError, match="attributes.json"):
        n5.open(path)
    assert n5ms(["info", path]) == 2
    assert "attributes.json" in capsys.readouterr().err


def test_string_compression_and_string_group_attributes_print_no_traceback(tmp_path, capsys):
    path = malformed_dataset(tmp_path, {"compression": "gzip"})
    assert n5.open(path).compressor.name == "gzip"
    group = tmp_path / "c.n5"
    n5.write_attributes(group, {"painteraData": "label", paintera.CONVERSION_KEY: "x"})
    assert n5ms(["info", str(group)]) == 0
    n5.write_attributes(group, {"painteraData": {"type": "label"}, paintera.CONVERSION_KEY: "x"})
    assert n5ms(["info", str(group)]) == 0
    assert "not a JSON object" in capsys.readouterr().out


def test_huge_dims_and_headers_give_package_errors(tmp_path):
    dataset = n5.create_array_dataset(tmp_path / "c.n5" / "big", (2**62, 2**62), (1, 1), np.uint64)
    try:
        import dask.array  # noqa: F401
    except ImportError:  # the dask extra is optional; the header checks below still run
        pass
    else:
        with pytest.raises(ConfigurationError, match="to_dask: grid .* has more than 1048576 blocks"):
            dataset.to_dask()
    with pytest.raises(ConfigurationError, match=f"spans {2**124} blocks"):
        dataset[:]
    assert dataset[5:7, 2**61].tolist() == [0, 0]
    # prod(dims) * itemsize past 2**63 (int64 would wrap): refused from the header, nothing inflated
    header = N5BlockHeader(MODE_DEFAULT, (2**32 - 1, 2**32 - 1)).to_bytes()
    write_file(dataset.block_path((0, 0)), header + b"\0" * 64)
    with pytest.raises(N5HeaderError, match="exceed blockSize"):
        dataset.read_block((0, 0))
    with pytest.raises(N5HeaderError, match="ndim is 70"):
        n5_varlen_decode(hand_varlen_block((1,) * 70, b"\0" * 8))


def test_label_to_block_mapping_files_are_checked(tmp_path):
    good = struct.pack(">qi", 7, 1) + np.array([0, 0, 0, 3, 3, 3], ">i8").tobytes()
    assert parse_mapping_file(good, 3, "f") == {7: [((0, 0, 0), (3, 3, 3))]}
    for body, what in ((good[:10], "need 12 bytes"), (struct.pack(">qi", 7, -1), "count -1"),
                       (struct.pack(">qi", 7, 1000) + good[12:], "count 1000")):
        with pytest.raises(LookupFormatError, match=what):
            parse_mapping_file(body, 3, "f")
    # through the reader, naming the file
    target = tmp_path / "p.n5" / "labels"
    paintera.convert(np.ones((4, 4, 4), np.uint64), target, block_size=4)
    mapping = n5.open(target / "label-to-block-mapping" / "s0", "r+")
    mapping.write_varlength_block((0,), np.frombuffer(struct.pack(">qi", 1, 99), np.int8), dims=(10000,))
    with pytest.raises(LookupFormatError, match="label-to-block-mapping/s0/0: id 1 at byte 0: count 99"):
        paintera.read_label_to_block_mapping(target, 0)
    attributes = n5.read_attributes(target / "data" / "s0")
    n5.write_attributes(target / "data" / "s0", {**attributes, "dimensions": 4})
    with pytest.raises(ConfigurationError, match="dimensions must be a list"):
        paintera.read_label_to_block_mapping(target, 0)


def test_small_blocks_of_long_lists_are_read_by_the_bare_codec():
    # a pyramid's top level: one voxel holding every label of the dataset
    from n5mscodecs import LabelMultisetArray, N5Varlen

    top = LabelMultisetArray.from_elements([{label: 1 for label in range(3000)}])
    codec = N5Varlen([{"name": "n5_label_multiset"}, {"name": "gzip"}])
    assert codec.decode(codec.encode(top)) == top


def test_unreferenced_lists_are_not_decoded():
    lists = [hand_list([(5, 1)]), hand_list([]), hand_list([(7, 2), (9, 3)]), hand_list([(11, 1)])]
    starts = np.cumsum([0] + [len(item) for item in lists])
    payload = hand_n5_payload([starts[2], starts[3], starts[2]], lists)
    block = hand_varlen_block((3,), payload)
    decoded = n5_varlen_decode(block)
    assert decoded.n_lists == 2 and decoded.argmax().tolist() == [9, 11, 9]
    assert [m.as_dict() for m in decoded.to_elements()] == [{7: 2, 9: 3}, {11: 1}, {7: 2, 9: 3}]


def test_blosc_compresses_with_one_thread(monkeypatch):
    import threading

    from numcodecs import blosc

    threads = []
    compress = blosc.compress

    def spy(*args, **kwargs):
        threads.append(threading.current_thread())
        return compress(*args, **kwargs)

    monkeypatch.setattr(blosc, "compress", spy)
    data = np.random.default_rng(0).integers(0, 4, 1 << 16, np.uint8).tobytes()
    encoded = Blosc("zstd", 5).encode(data)
    # numcodecs uses its global thread pool only when called from the main thread
    assert threads and all(thread is not threading.main_thread() for thread in threads)
    assert Blosc().decode(encoded) == data
    assert all(Blosc("zstd", 5).encode(data) == encoded for _ in range(8))


def test_storage_confinement_without_a_container_name(tmp_path):
    # outside any *.n5 directory, a dataset's own directory is its root
    dataset = n5.create_array_dataset(tmp_path / "plain" / "raw", (4,), (4,), np.uint8, compression="raw")
    os.makedirs(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "0").write_bytes(N5BlockHeader(MODE_DEFAULT, (4,)).to_bytes() + b"abcd")
    os.symlink(tmp_path / "elsewhere" / "0", os.path.join(dataset.path, "0"))
    with pytest.raises(StorageError, match="outside the container root"):
        dataset.read_block((0,))
    assert n5.open_store(dataset.path, read_outside=True).get("0").endswith(b"abcd")


def test_padded_boundary_blocks_are_decompressed_once(tmp_path, monkeypatch):
    from n5mscodecs import LabelMultisetArray
    from n5mscodecs.n5 import n5_varlen_encode
    from n5mscodecs.n5.compression import Gzip

    labels = np.arange(6 * 5 * 4, dtype=np.uint64).reshape(6, 5, 4)
    dataset = n5.write(tmp_path / "c.n5" / "labels", labels, chunks=(4, 4, 4))
    # zarr-python and tensorstore pad boundary blocks to the full block
    padded = LabelMultisetArray.from_labels(labels[4:, 4:, :]).padded((4, 4, 4), 0)
    write_file(dataset.block_path((1, 1, 0)), n5_varlen_encode(padded, dataset.codec_chain))
    calls = []
    decode = Gzip.decode
    monkeypatch.setattr(Gzip, "decode", lambda self, *args, **kwargs: calls.append(1) or decode(self, *args, **kwargs))
    assert np.array_equal(dataset.read_block((1, 1, 0)).argmax(), labels[4:, 4:, :])
    assert np.array_equal(dataset.read_block_labels((1, 1, 0)), labels[4:, 4:, :])
    assert len(calls) == 2  # one decompression per read


def test_argmax_of_a_dataset_with_huge_dims_lists_its_blocks(tmp_path, capsys):
    source = malformed_dataset(tmp_path, {"dimensions": [2**40, 2**40, 4]})  # one 4^3 block on disk
    assert n5ms(["argmax", source, str(tmp_path / "c.n5" / "argmax"), "--quiet"]) == 0
    assert f"1 of {2**38 * 2**38} blocks present" in capsys.readouterr().out
    assert n5.open(tmp_path / "c.n5" / "argmax")[0:4, 0:4, 0:4].tolist() == np.ones((4, 4, 4)).tolist()


def test_zstd_never_reserves_more_than_its_input_can_expand_to():
    """A fuzzer finding: a 40-byte block claiming 1.1 GB of payload made zstd's decode reserve a
    1.1 GB buffer before it found that the bytes are no zstd frame."""
    import tracemalloc

    from n5mscodecs.errors import CompressionError
    from n5mscodecs.n5.compression import compressor_from_config

    zstd = compressor_from_config({"type": "zstd"})
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError, match="zstd"):
            zstd.decode(b"\x28\xb5\x2f\xfd" + b"\x00" * 36, 1_114_402_659)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    assert bytes(zstd.decode(zstd.encode(bytes(1 << 20)), 1 << 20)) == bytes(1 << 20)  # real data fits the bound


# ---------------------------------------------------------------------------------------------
# every listing sees what a read sees (issue 42, item 6)


def _linked_block_source(tmp_path):
    """A 8x8x4 label multiset dataset of 2x2x1 blocks of 4^3 whose block directory ``1`` (x = 1)
    is moved elsewhere inside the container and replaced by a symbolic link to it."""
    labels = (np.arange(8 * 8 * 4, dtype=np.uint64).reshape(4, 8, 8) % 7 + 1).transpose(2, 1, 0).copy()
    source = n5.write(tmp_path / "c.n5" / "labels", labels, chunks=(4, 4, 4))
    os.rename(os.path.join(source.path, "1"), tmp_path / "c.n5" / "moved")
    os.symlink(tmp_path / "c.n5" / "moved", os.path.join(source.path, "1"))
    return source, labels


def test_walks_follow_links_inside_the_root_as_reads_do(tmp_path, capsys):
    source, labels = _linked_block_source(tmp_path)
    assert np.array_equal(n5.open(source.path).read_labels(), labels)  # the read follows the link
    assert n5.open(source.path).present_blocks() == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]
    target = tmp_path / "out.n5" / "argmax"
    assert n5ms(["argmax", source.path, str(target), "--quiet"]) == 0
    assert np.array_equal(n5.open(target)[:], labels)  # not 0 where the linked blocks are
    capsys.readouterr()
    assert n5ms(["info", "--check", source.path]) == 0
    assert "4/4 blocks present" in capsys.readouterr().out


def test_walks_refuse_links_out_of_the_root_naming_them(tmp_path, capsys):
    source, _ = _linked_block_source(tmp_path)
    link = os.path.join(source.path, "1")
    os.unlink(link)
    os.rename(tmp_path / "c.n5" / "moved", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", link)
    with pytest.raises(StorageError, match="labels/1.*outside the container root"):
        n5.open(source.path).present_blocks()
    assert n5.open(source.path, allow_outside_root=True).present_blocks()[-1] == (1, 1, 0)  # opted in
    assert n5ms(["argmax", source.path, str(tmp_path / "out.n5" / "argmax"), "--quiet"]) == 2
    assert "outside the container root" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out.n5" / "argmax" / "0")
    assert n5ms(["info", "--check", source.path]) == 1
    assert "labels/1" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["unreadable", "dangling", "loop"])
def test_walks_report_what_they_cannot_list(tmp_path, monkeypatch, capsys, kind):
    source, _ = _linked_block_source(tmp_path)
    link = os.path.join(source.path, "1")
    if kind == "unreadable":  # (the tests run as root: chmod 000 would not stop them)
        scandir = os.scandir

        def refusing(path="."):
            if isinstance(path, int):   # a directory's descriptor (shutil.rmtree's clean-up)
                return scandir(path)
            if os.fspath(path).rstrip("/").endswith("/moved") or os.fspath(path).endswith("labels/1"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", refusing)
        match = "labels/1: list: Permission denied"
    elif kind == "dangling":
        os.unlink(link)
        os.symlink(tmp_path / "c.n5" / "nothing", link)
        match = "labels/1: list: a symbolic link to a missing file"
    else:
        os.symlink(os.path.join(source.path, "1"), tmp_path / "c.n5" / "moved" / "0" / "9")
        match = "a symbolic link loop"
    with pytest.raises(StorageError, match=match):
        n5.open(source.path).present_blocks()
    assert n5ms(["argmax", source.path, str(tmp_path / "out.n5" / "argmax"), "--quiet"]) == 2
    assert match.split(": ")[-1] in capsys.readouterr().err
    assert n5ms(["info", "--check", source.path]) == 1
    assert match.split(": ")[-1] in capsys.readouterr().out


def test_a_dangling_block_link_is_an_error_not_a_missing_block(tmp_path):
    source, _ = _linked_block_source(tmp_path)
    block = os.path.join(source.path, "0", "0", "0")
    os.unlink(block)
    os.symlink(tmp_path / "c.n5" / "gone", block)
    with pytest.raises(StorageError, match="a symbolic link to a missing file"):
        n5.open(source.path).read_labels()


# ---------------------------------------------------------------------------------------------
# labels that are not non-negative integers are refused by every writer (issue 42, item 7)

BARE_CODECS = [{"id": "n5_label_multiset"}, {"id": "label_multiset"}, {"id": "label_multiset_vlen"},
               {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}, {"name": "gzip"}]}]


def _elements(value, n=2):
    elements = np.empty(n, object)
    for i in range(n):
        elements[i] = value
    return elements


@pytest.mark.parametrize("config", BARE_CODECS, ids=lambda c: c["id"])
@pytest.mark.parametrize("data", [
    np.array([-1, 5]), np.array([2**64 - 1, 5], np.uint64), _elements({1.5: 1}), _elements({-1: 1}),
    _elements({"3": 1}), _elements([(1.0, 2)]), _elements({2**64: 1}), _elements(2**64 - 1),
], ids=["int -1", "uint64 TRANSPARENT", "float id", "negative id", "string id", "float pair", "id >= 2**64",
        "reserved int element"])
def test_bare_codecs_refuse_labels_that_are_not_non_negative_ids(config, data):
    import numcodecs

    codec = numcodecs.get_codec(dict(config))
    with pytest.raises(ValueError, match="labels|ids") as error:
        codec.encode(data)
    assert isinstance(error.value, ConfigurationError | TypeError)
    with pytest.raises(ValueError, match="labels|ids"):  # as the writers do
        n5.write(f"/nonexistent-{os.getpid()}/never.n5/x", data, chunks=(2,))


@pytest.mark.parametrize("config", BARE_CODECS, ids=lambda c: c["id"])
def test_reserved_accept_is_the_one_way_to_write_reserved_ids(config):
    import numcodecs

    assert "reserved" not in numcodecs.get_codec(dict(config)).get_config()  # older configs: equal
    codec = numcodecs.get_codec({**config, "reserved": "accept"})
    assert codec.get_config()["reserved"] == "accept"
    assert numcodecs.get_codec(codec.get_config()) == codec
    labels = np.array([-1, 5, -3], np.int64)
    block = codec.encode(labels)
    if config["id"] == "label_multiset_vlen":
        decoded = codec.decode(block)
        assert [dict(e) for e in decoded] == [{2**64 - 1: 1}, {5: 1}, {2**64 - 3: 1}]
    else:
        out = np.empty(3, np.uint64)
        codec.decode(block, out=out)
        assert out.tolist() == [2**64 - 1, 5, 2**64 - 3]
    from n5mscodecs import LabelMultiset
    assert LabelMultiset({-2: 1}, reserved="accept") == {2**64 - 2: 1}
    with pytest.raises(ConfigurationError, match="reserved must be one of"):
        numcodecs.get_codec({**config, "reserved": "yes"})


def test_a_float_id_is_never_truncated():
    from n5mscodecs import LabelMultiset, LabelMultisetArray

    for value in ({1.5: 1}, {np.float32(2): 1}, [(1.0, 2)]):
        with pytest.raises(TypeError, match="integers"):
            LabelMultiset.coerce(value)
    with pytest.raises(TypeError, match="integers"):
        LabelMultisetArray.from_elements(np.array([1, 1.5, 2], object))  # ints at both ends
    assert LabelMultiset({np.uint64(2**64 - 1): 1, True: 2}) == {2**64 - 1: 1, 1: 2}


# ---------------------------------------------------------------------------------------------
# numcodecs paths are bounded without a dataset (issue 42, item 10)


def _traced_peak(function):
    import tracemalloc

    tracemalloc.start()
    try:
        try:
            function()
            outcome = None
        except Exception as error:  # noqa: BLE001 - the outcome is asserted by the caller
            outcome = error
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_n5_varlen_codec_bounds_a_block_by_its_size_without_a_shape():
    import bz2

    import numcodecs

    claim = 256 << 20
    zstd_block = N5BlockHeader(MODE_VARLENGTH, (1024, 1024, 64), claim).to_bytes() + zstd_zeros(claim)
    plain = 64 << 20  # a mode-0 ("plain") block: numElements is the header dims' voxel count
    plain_block = N5BlockHeader(MODE_DEFAULT, (1024, 256, 256)).to_bytes() + bz2.compress(bytes(plain), 9)
    assert len(zstd_block) < 9000 and len(plain_block) < 300
    def varlen(compressor, **options):
        return numcodecs.get_codec({"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}, {"name": compressor}],
                                    **options})

    for block, compressor in ((zstd_block, "zstd"), (plain_block, "bzip2")):
        error, peak = _traced_peak(functools.partial(varlen(compressor).decode, block))
        assert isinstance(error, N5HeaderError) and "numElements" in str(error) and "max_ratio" in str(error), error
        assert peak < 8 << 20, peak
    # a larger max_ratio (or the expected shape) lets the claim through to the decoders' own checks
    codec = varlen("bzip2", max_ratio=1e9)
    assert codec.get_config()["max_ratio"] == 1e9 and numcodecs.get_codec(codec.get_config()) == codec
    with pytest.raises(ValueError, match="listEntryOffsets"):
        codec.decode(plain_block)
    # real data never reaches the bound: constant 64^3 blocks, the best compressed there are
    labels = np.full((64, 64, 64), 7, np.uint64)
    for compressor in ("gzip", "zstd", "xz", "bzip2"):
        codec = varlen(compressor)
        assert "max_ratio" not in codec.get_config()
        assert np.array_equal(codec.decode(codec.encode(labels), out=np.empty(labels.shape, np.uint64)), labels)
        assert np.array_equal(codec.decode(codec.encode(labels)).argmax(), labels)


def test_czi_chunked_codec_bounds_the_declared_size_without_out():
    import numcodecs

    from n5mscodecs import ChunkedFormatError
    from n5mscodecs.czi import chunked_encode

    payload = bytes(chunked_encode(np.zeros(256 << 20, np.uint8), codec="zstd", max_chunk_size=1 << 28))
    codec = numcodecs.get_codec({"id": "czi_chunked"})
    error, peak = _traced_peak(lambda: codec.decode(payload))
    assert isinstance(error, ChunkedFormatError) and "DecompressedSizes" in str(error), error
    assert peak < 8 << 20, peak
    assert "max_ratio" not in codec.get_config()
    generous = numcodecs.get_codec({"id": "czi_chunked", "max_ratio": 1 << 16})
    assert numcodecs.get_codec(generous.get_config()) == generous
    assert len(generous.decode(payload)) == 256 << 20
    # what this codec writes with its defaults decodes without out= at any size: zeros compress 3,119:1
    zeros = np.zeros(64 << 20, np.uint8)
    assert np.array_equal(codec.decode(codec.encode(zeros)), zeros)
    with pytest.raises(ConfigurationError, match="max_ratio"):
        numcodecs.get_codec({"id": "czi_chunked", "max_ratio": 0})
