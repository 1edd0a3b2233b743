"""N5 containers on object storage, against real servers the tests start on 127.0.0.1: an
S3-compatible server (moto in server mode), a GCS JSON API server (gcp-storage-emulator,
gcsfs pointed at it through STORAGE_EMULATOR_HOST) and http.server (read-only)."""

import asyncio
import functools
import http.server
import logging
import os
import re
import threading
import time
import types

import numpy as np
import pytest
from support import SECRET

from n5mscodecs import ConfigurationError, LabelMultisetArray, StorageError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.n5 import open_store, storage

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
pytest.importorskip("aiohttp")

@pytest.fixture(scope="module")
def gcs():
    """A gcp-storage-emulator server with the bucket "bucket" (in memory); gcsfs, through
    STORAGE_EMULATOR_HOST, anonymous (no credential lookup, which could ask a metadata server).
    Yields the server's request handler class, for injecting failures."""
    emulator = pytest.importorskip("gcp_storage_emulator.server", reason="gcp-storage-emulator is not installed")
    pytest.importorskip("gcsfs")
    import fsspec

    # gcsfs reads this at import: its bucket-type probe uses gRPC, which the emulator lacks (60 s time-outs)
    if os.environ.get("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT") != "false":  # conftest.py sets it unless already set
        pytest.skip("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT is not 'false': gcsfs would wait on gRPC probes")
    logging.getLogger("gcp_storage_emulator").setLevel(logging.CRITICAL)  # it logs every 404 as an error
    read_raw, read_data, http_module = emulator._read_raw_data, emulator._read_data, emulator.server
    # a backlog of 5 connections (http.server's) drops the SYNs of 16 requests in flight: 1 s retransmits
    emulator.server = types.SimpleNamespace(HTTPServer=_BackloggedHTTPServer)
    emulator._read_raw_data = lambda handler: _keep(handler, read_raw(handler))
    emulator._read_data = lambda handler, query: _exact_upload(handler, read_data(handler, query))
    server = emulator.create_server("127.0.0.1", 0, in_memory=True, default_bucket="bucket")
    server.start()
    server._api._httpd.handle_error = lambda *args: None  # a client closing early is no test failure
    saved = os.environ.get("STORAGE_EMULATOR_HOST"), fsspec.config.conf.get("gs")
    os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{server._api._httpd.server_address[1]}"
    fsspec.config.conf["gs"] = {"token": "anon"}
    yield emulator.RequestHandler
    server.stop()
    emulator._read_raw_data, emulator._read_data, emulator.server = read_raw, read_data, http_module
    if saved[0] is None:
        os.environ.pop("STORAGE_EMULATOR_HOST", None)
    else:
        os.environ["STORAGE_EMULATOR_HOST"] = saved[0]
    if saved[1] is None:
        fsspec.config.conf.pop("gs", None)
    else:
        fsspec.config.conf["gs"] = saved[1]


class _BackloggedHTTPServer(http.server.HTTPServer):
    request_queue_size = 64


def _keep(handler, raw):
    handler.n5ms_raw_body = raw
    return raw


def _exact_upload(handler, parsed):
    """The uploaded object exactly as sent. The emulator parses gcsfs's multipart uploads
    (LF line ends) with the email package, which takes a CR ending the object for part of
    the line break before the closing boundary and drops it (one block in 256 ends so)."""
    raw = getattr(handler, "n5ms_raw_body", None)
    if not isinstance(parsed, dict) or "content" not in parsed or raw is None:
        return parsed
    boundary = handler.headers.get_param("boundary").encode()
    closing = raw.rindex(b"\n--" + boundary + b"--")
    start = raw.index(b"\n\n", raw.index(b"--" + boundary, raw.index(b"--" + boundary) + 1)) + 2
    parsed["content"] = raw[start:closing]
    return parsed


@pytest.fixture(params=["s3", "gs"])
def bucket(request):
    """The URL of the bucket "bucket" on each object store server in turn."""
    request.getfixturevalue("s3" if request.param == "s3" else "gcs")
    return f"{request.param}://bucket"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A directory served read-only by http.server; yields (directory, base URL)."""
    root = tmp_path_factory.mktemp("served")
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


LABELS = (np.arange(20 * 18 * 9, dtype=np.uint64).reshape(20, 18, 9) // 11) % 40


def test_label_multisets_match_local_files(bucket, tmp_path):
    url = f"{bucket}/match.n5/labels"
    n5.write(url, LABELS, chunks=(8, 8, 4), compression={"type": "gzip", "level": 6})
    local = n5.write(tmp_path / "match.n5" / "labels", LABELS, chunks=(8, 8, 4),
                     compression={"type": "gzip", "level": 6})
    remote = n5.open(url)
    assert isinstance(remote, n5.LabelMultisetDataset) and remote.shape == LABELS.shape
    assert np.array_equal(remote[:].argmax(), LABELS)
    assert np.array_equal(remote[3:17, 2:5, 8].argmax(), LABELS[3:17, 2:5, 8])
    assert remote.present_blocks() == local.present_blocks()
    for grid in local.present_blocks():  # the same bytes as on disk (gzip is deterministic here)
        assert remote.read_block_bytes(grid) == local.read_block_bytes(grid)
    assert n5.read_attributes(url) == n5.read_attributes(tmp_path / "match.n5" / "labels")
    with pytest.raises(FileExistsError, match="overwrite"):
        n5.write(url, LABELS, chunks=(8, 8, 4))
    n5.write(url, LABELS[:4], chunks=(8, 8, 4), overwrite=True)
    assert n5.open(url).shape == (4, 18, 9) and len(n5.open(url).present_blocks()) == 3 * 3


def test_plain_datasets(bucket):
    data = np.random.default_rng(1).integers(0, 60000, (33, 17), dtype=np.uint16)
    n5.write_array(f"{bucket}/plain.n5/raw", data, chunks=(16, 16), compression="zstd")
    assert np.array_equal(n5.open(f"{bucket}/plain.n5/raw")[:], data)
    assert list(n5.dataset_paths(f"{bucket}/plain.n5")) == [f"{bucket}/plain.n5/raw"]


def test_a_zarr_fsspec_store_on_s3_becomes_this_packages_store(s3):
    zarr_storage = pytest.importorskip("zarr.storage")
    labels = (np.arange(32 * 24 * 16, dtype=np.uint64).reshape(32, 24, 16) // 61) % 9
    zarr_store = zarr_storage.FsspecStore.from_url("s3://bucket/zarr-fsspec.n5/labels",
                                                   storage_options={"endpoint_url": s3})
    store = open_store(zarr_store)
    assert type(store).__name__ == "UrlStore" and store.location == "s3://bucket/zarr-fsspec.n5/labels"
    n5.write(zarr_store, labels, chunks=(16, 16, 16))
    assert np.array_equal(n5.open("s3://bucket/zarr-fsspec.n5/labels")[...].argmax(), labels)
    assert np.array_equal(n5.open(zarr_store)[...].argmax(), labels)


def test_groups_on_object_stores(bucket):
    root = n5.open(f"{bucket}/groups.n5", mode="w")
    root.require_group("volumes").create_label_multiset_dataset("labels", LABELS, chunks=8)
    root.attrs["resolution"] = [4, 4, 40]
    opened = n5.open(f"{bucket}/groups.n5")
    labels = opened["volumes/labels"]
    assert list(opened) == ["volumes"] and "volumes/labels" in opened and opened.attrs["resolution"] == [4, 4, 40]
    assert labels.store.fs is opened.store.fs  # the file system is resolved once, when the container is opened
    assert np.array_equal(n5.open(f"{bucket}/groups.n5/volumes/labels", multisets="labels")[:], LABELS)
    assert np.array_equal(labels[5:9].argmax(), LABELS[5:9])


def test_storage_options_instead_of_environment(s3, monkeypatch):
    n5.write("s3://bucket/options.n5/labels", LABELS, chunks=(10, 9, 9))
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    options = {"endpoint_url": s3, "key": "testing", "secret": SECRET}
    dataset = n5.open("s3://bucket/options.n5/labels", storage_options=options)
    assert np.array_equal(dataset[:].argmax(), LABELS)
    # credentials never appear in errors or reprs
    with pytest.raises(ConfigurationError) as raised:
        n5.open("s3://bucket/options.n5/missing", storage_options=options)
    assert SECRET not in str(raised.value) and "missing" in str(raised.value)
    assert SECRET not in repr(dataset.__dict__.get("name")) and SECRET not in dataset.name


def test_paintera_convert_to_s3_and_resume(s3, tmp_path):
    labels = voronoi_labels((40, 36, 20), 25, seed=5)
    target = "s3://bucket/paintera.n5/labels"
    summary = paintera.convert(labels, target, block_size=16, factors=[2, 2], compression="gzip")
    local = paintera.convert(labels, tmp_path / "p.n5" / "labels", block_size=16, factors=[2, 2], compression="gzip")
    assert summary.level_shapes == local.level_shapes and summary.max_id == local.max_id
    for level in range(3):
        ours = n5.open(f"{target}/data/s{level}")[:]
        assert ours == n5.open(tmp_path / "p.n5" / "labels" / "data" / f"s{level}")[:]
        assert paintera.read_label_to_block_mapping(target, level) == paintera.read_label_to_block_mapping(
            tmp_path / "p.n5" / "labels", level)
    assert np.array_equal(n5.open(f"{target}/data/s0")[:].argmax(), labels)
    # resume: remove some blocks as if interrupted, mark incomplete, convert again
    attributes = n5.read_attributes(target)
    attributes["n5mscodecs:conversion"]["complete"] = False
    n5.write_attributes(target, attributes)
    open_store(f"{target}/data/s1/0/0/0").delete("")
    open_store(f"{target}/data/s2/0/0/0").delete("")
    again = paintera.convert(labels, target, block_size=16, factors=[2, 2], compression="gzip", resume=True)
    assert again.blocks_written == 2
    assert n5.open(f"{target}/data/s2")[:] == n5.open(tmp_path / "p.n5" / "labels" / "data" / "s2")[:]


def test_cli_on_s3(s3, tmp_path, capsys):
    n5.write("s3://bucket/cli.n5/labels", LABELS, chunks=(8, 8, 8))
    assert n5ms(["info", "s3://bucket/cli.n5"]) == 0
    out = capsys.readouterr().out
    assert "s3://bucket/cli.n5: N5 group" in out and "labels: label multiset, shape [20, 18, 9]" in out
    assert n5ms(["argmax", "s3://bucket/cli.n5/labels", "s3://bucket/cli.n5/argmax"]) == 0
    assert np.array_equal(n5.open("s3://bucket/cli.n5/argmax")[:], LABELS)
    np.save(tmp_path / "labels.npy", np.ascontiguousarray(LABELS.T))
    assert n5ms(["convert", str(tmp_path / "labels.npy"), "s3://bucket/cli.n5/source", "--block-size", "8",
                 "--quiet", "--storage-option", f"endpoint_url={s3}"]) == 0
    assert np.array_equal(n5.open("s3://bucket/cli.n5/source/data/s0")[:].argmax(), LABELS)
    assert n5ms(["info", "s3://bucket/no-such.n5"]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_zarr_store(bucket):
    zarr = pytest.importorskip("zarr")
    import n5mscodecs.zarr as nz

    n5.write(f"{bucket}/zarr.n5/labels", LABELS, chunks=(8, 8, 8))
    array = zarr.open_array(nz.open_n5_store(f"{bucket}/zarr.n5", read_only=True), path="labels", mode="r")
    assert np.array_equal(LabelMultisetArray.from_elements(array[:]).argmax(), LABELS)
    # a plain dataset written through zarr (n5_default), read back by n5.open
    root = zarr.open_group(nz.open_n5_store(f"{bucket}/zarr.n5"), mode="r+")
    plain = root.create_array("plain", shape=(20, 9), chunks=(8, 8), dtype="int16", fill_value=0, compressors=None,
                              serializer=nz.N5DefaultZarrCodec.from_compression(2, "gzip", "int16"),
                              chunk_key_encoding={"name": "v2", "separator": "/"})
    plain[:] = LABELS[:, 0, :].astype(np.int16) - 20
    assert np.array_equal(n5.open(f"{bucket}/zarr.n5/plain")[:], LABELS[:, 0, :].astype(np.int16) - 20)


def test_http_is_read_only(served):
    root, base = served
    n5.write(root / "web.n5" / "labels", LABELS, chunks=(8, 8, 8), compression="gzip")
    dataset = n5.open(f"{base}/web.n5/labels")
    assert np.array_equal(dataset[:].argmax(), LABELS)
    assert np.array_equal(dataset[5:9].argmax(), LABELS[5:9])
    with pytest.raises(ConfigurationError, match="read-only"):
        n5.write(f"{base}/web.n5/other", LABELS, chunks=(8, 8, 8))
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open(f"{base}/web.n5/missing")


def test_urls_without_the_remote_extra_name_it(monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_fsspec(name, *args, **kwargs):
        if name == "fsspec" or name.startswith("fsspec."):
            raise ImportError("No module named 'fsspec'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_fsspec)
    with pytest.raises(ConfigurationError, match=r"'remote' extra: pip install 'n5mscodecs\[remote\]'"):
        n5.open("s3://bucket/x.n5/labels")
    assert n5ms(["info", "gs://bucket/x.n5"]) == 3  # the missing extra, named; no traceback
    assert "n5mscodecs[remote]" in capsys.readouterr().err


def test_credentials_in_urls_are_not_shown():
    assert storage.display("https://user:secret@example.org/a.n5") == "https://example.org/a.n5"
    assert storage.display("s3://bucket/a.n5") == "s3://bucket/a.n5"


@pytest.fixture()
def slow_store():
    """An fsspec memory file system whose reads take 20 ms, counting requests in flight."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    class Slow(MemoryFileSystem):
        protocol = "slowmem"
        in_flight = 0
        most = 0
        lock = threading.Lock()
        root_marker = "/"

        def cat_file(self, path, start=None, end=None, **kwargs):
            with Slow.lock:
                Slow.in_flight += 1
                Slow.most = max(Slow.most, Slow.in_flight)
            try:
                time.sleep(0.02)
                return super().cat_file(path, start, end, **kwargs)
            finally:
                with Slow.lock:
                    Slow.in_flight -= 1

    fsspec.register_implementation("slowmem", Slow, clobber=True)
    yield Slow


def test_block_reads_keep_16_requests_in_flight(slow_store):
    labels = (np.arange(64 * 64 * 16, dtype=np.uint64).reshape(64, 64, 16) // 97) % 50
    n5.write("slowmem://c.n5/labels", labels, chunks=(8, 8, 8), compression="raw")  # 8 * 8 * 2 = 128 blocks
    slow_store.most = 0
    assert np.array_equal(n5.open("slowmem://c.n5/labels")[:].argmax(), labels)
    assert slow_store.most >= 16  # requests overlap: one at a time would take 128 x 20 ms
    slow_store.most = 0
    n5.open("slowmem://c.n5/labels").read(threads=2)
    assert slow_store.most == 2  # configurable


def test_java_written_containers_read_the_same_from_s3(s3):
    """The real Java-written containers, uploaded to S3, read bit for bit as from disk."""
    import fsspec
    from support import n5_data

    fs = fsspec.filesystem("s3")
    for name, datasets in (("paintera_export_test.n5", ["paintera_labels/data/s0", "paintera_labels/data/s2",
                                                        "paintera_labels/unique-labels/s1"]),
                           ("downscaleTest.n5", ["sourceImg"])):
        local_root = n5_data(name)
        fs.put(str(local_root), f"bucket/java/{name}", recursive=True)
        for dataset in datasets:
            local = n5.open(local_root / dataset)
            remote = n5.open(f"s3://bucket/java/{name}/{dataset}")
            assert remote.attributes == local.attributes
            assert remote.present_blocks() == local.present_blocks()
            for grid in local.present_blocks():
                assert remote.read_block_bytes(grid) == local.read_block_bytes(grid)
            if isinstance(local, n5.LabelMultisetDataset):
                assert remote[:] == local[:]
    s2 = "s3://bucket/java/paintera_export_test.n5/paintera_labels"
    assert paintera.read_label_to_block_mapping(s2, 2) == paintera.read_label_to_block_mapping(
        n5_data("paintera_export_test.n5") / "paintera_labels", 2)


def test_convert_s3_to_s3_on_a_process_cluster(s3, tmp_path):
    distributed = pytest.importorskip("distributed")
    import pickle

    labels = voronoi_labels((48, 40, 24), 30, seed=6)
    n5.write_array("s3://bucket/cluster.n5/source", labels, chunks=(16, 16, 16), compression="raw")
    source = paintera.open_label_source("s3://bucket/cluster.n5/source")
    assert SECRET.encode() not in pickle.dumps(source)  # credentials stay in the environment
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster:
        summary = paintera.convert("s3://bucket/cluster.n5/source", "s3://bucket/cluster.n5/labels",
                                   block_size=16, factors=[2], scheduler=cluster.scheduler_address)
    local = paintera.convert(labels, tmp_path / "c.n5" / "labels", block_size=16, factors=[2])
    assert summary.blocks_written == local.blocks_written and summary.max_id == local.max_id
    for level in range(2):
        remote = n5.open(f"s3://bucket/cluster.n5/labels/data/s{level}")
        ours = n5.open(tmp_path / "c.n5" / "labels" / "data" / f"s{level}")
        assert remote.attributes == ours.attributes
        for grid in ours.present_blocks():
            assert remote.read_block_bytes(grid) == ours.read_block_bytes(grid)
    # the lookup, built as tasks on the cluster (scan and merge through S3): the same files
    for level in range(2):
        remote = n5.open(f"s3://bucket/cluster.n5/labels/label-to-block-mapping/s{level}")
        ours = n5.open(tmp_path / "c.n5" / "labels" / "label-to-block-mapping" / f"s{level}")
        assert remote.present_blocks() == ours.present_blocks() != []
        assert all(remote.read_block_bytes(grid) == ours.read_block_bytes(grid) for grid in ours.present_blocks())
    assert not any(".tmp-" in key for key in n5.open_store("s3://bucket/cluster.n5/labels").list_dir())
    assert summary.n_labels == local.n_labels == 30


def test_missing_buckets_keys_and_non_n5_places(bucket, capsys):
    scheme = bucket.split(":")[0]
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open(f"{scheme}://no-such-bucket/x.n5/labels")
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open(f"{bucket}/")
    assert n5.read_attributes(f"{bucket}/no/such/key") == {}
    assert n5ms(["info", f"{scheme}://no-such-bucket/x.n5"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(f"n5ms: {scheme}://no-such-bucket/x.n5")


@pytest.fixture()
def flaky_store():
    """An fsspec memory file system whose reads fail ``failures`` times per object first
    (an OSError as a dropped connection or a 503 would give), then succeed."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    class Flaky(MemoryFileSystem):
        protocol = "flakymem"
        root_marker = "/"
        failures = 0
        seen = {}

        def cat_file(self, path, start=None, end=None, **kwargs):
            count = Flaky.seen[path] = Flaky.seen.get(path, 0) + 1
            if count <= Flaky.failures:
                raise ConnectionResetError("connection reset by peer (injected)")
            return super().cat_file(path, start, end, **kwargs)

    fsspec.register_implementation("flakymem", Flaky, clobber=True)
    yield Flaky


def test_transient_failures_are_retried_then_named(flaky_store, monkeypatch):
    monkeypatch.setattr(storage, "RETRY_DELAY", 0.001)
    n5.write("flakymem://f.n5/labels", LABELS, chunks=(8, 8, 8), compression="raw")
    flaky_store.failures, flaky_store.seen = 2, {}
    assert np.array_equal(n5.open("flakymem://f.n5/labels")[:].argmax(), LABELS)
    assert max(flaky_store.seen.values()) == 3  # two failures, then the answer
    flaky_store.failures, flaky_store.seen = 100, {}
    options = {"secret": SECRET}
    with pytest.raises(StorageError) as raised:
        n5.open("flakymem://f.n5/labels", storage_options=options)
    message = str(raised.value)
    assert "flakymem://f.n5/labels/attributes.json: read failed 5 times (ConnectionResetError" in message
    assert SECRET not in message and isinstance(raised.value, OSError) and not isinstance(raised.value, ValueError)
    flaky_store.failures = 0
    dataset = n5.open("flakymem://f.n5/labels", storage_options=options)
    flaky_store.failures, flaky_store.seen = 100, {}
    with pytest.raises(StorageError, match=r"flakymem://f.n5/labels/0/1/0: read failed"):
        dataset.read_block((0, 1, 0))


def test_refusals_are_storage_errors_at_once(flaky_store, monkeypatch):
    n5.write("flakymem://p.n5/labels", LABELS, chunks=(8, 8, 8), compression="raw")
    calls = []

    def refuse(self, path, start=None, end=None, **kwargs):
        calls.append(path)
        raise PermissionError("403 Forbidden (injected)")

    monkeypatch.setattr(flaky_store, "cat_file", refuse)
    with pytest.raises(StorageError, match=r"flakymem://p.n5/labels/attributes.json: read: access denied"):
        n5.open("flakymem://p.n5/labels")
    assert len(calls) == 1  # not retried


class _FailingSource(paintera.LabelSource):
    """A source whose read of one region fails, as a dropped connection would."""

    def read(self, region):
        if region[0].start == 16:
            raise OSError("connection reset")
        return super().read(region)


def test_a_failed_conversion_on_s3_is_incomplete_and_locked_while_running(s3):
    from n5mscodecs import IncompleteError, TargetInUseError
    from n5mscodecs.n5.writing import LOCK_NAME, WriterLock

    labels = voronoi_labels((40, 36, 20), 25, seed=5).astype(np.uint32)
    good = paintera.open_label_source(labels)
    target = "s3://bucket/failed.n5/labels"
    with pytest.raises(OSError, match="connection reset"):
        paintera.convert(_FailingSource("array", None, good.shape, good.dtype, labels), target, block_size=16,
                         factors=[2], threads=1)
    assert open_store(f"{target}/data/s0/0/0/0").exists()  # blocks were written, and yet:
    with pytest.raises(IncompleteError, match="INCOMPLETE"):
        n5.open(f"{target}/data/s0")
    assert n5ms(["info", target]) == 1
    with WriterLock(target):  # a running writer's lock object refuses a second one
        assert open_store(f"{target}/{LOCK_NAME}").exists()
        with pytest.raises(TargetInUseError, match="being written by process"):
            paintera.convert(labels, target, block_size=16, factors=[2], resume=True)
    assert not open_store(f"{target}/{LOCK_NAME}").exists()
    paintera.convert(labels, target, block_size=16, factors=[2], resume=True)
    assert np.array_equal(n5.open(f"{target}/data/s0").read_labels(), labels)


def test_an_s3_lock_of_a_dead_writer_says_when_it_is_stale_and_how_to_break_it(s3, tmp_path, capsys):
    """issue 51: a commit whose writer died was refused for 95-118 s without saying so."""
    import signal
    import subprocess
    import sys

    from n5mscodecs import TargetInUseError
    from n5mscodecs.n5.writing import LOCK_NAME

    source = "s3://bucket/dead.n5/labels"
    paintera.convert(np.ones((8, 8, 8), np.uint64), source, block_size=8)
    holder = subprocess.Popen(  # a writer killed while it holds the lock (the environment names the server)
        [sys.executable, "-c", "import sys, time; from n5mscodecs.n5.writing import WriterLock; "
         "WriterLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)", source],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with pytest.raises(TargetInUseError, match=r"counts as abandoned in \d+ s, or remove it now with "
                                               rf"`n5ms unlock {source} --force`") as refused:
        paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), (0, 0, 0))
    assert f"process {holder.pid} on " in str(refused.value)
    assert n5ms(["unlock", source]) == 2   # a fresh heartbeat needs --force
    assert "--force" in capsys.readouterr().err
    assert open_store(source).get_json(LOCK_NAME)["pid"] == holder.pid   # still there
    assert n5ms(["unlock", source, "--force"]) == 0
    assert f"removed the writer lock of {source} (process {holder.pid} on " in capsys.readouterr().out
    assert open_store(source).get_json(LOCK_NAME) is None
    assert paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), (0, 0, 0)).max_id == 7
    assert n5ms(["unlock", source]) == 0 and "no writer lock" in capsys.readouterr().out
    # a lock whose heartbeat is older than STALE_SECONDS goes without --force
    open_store(source).set_json(LOCK_NAME, {"pid": 1, "host": "h", "heartbeat": time.time() - 500})
    assert n5ms(["unlock", source]) == 0
    assert open_store(source).get_json(LOCK_NAME) is None


def test_ome_zarr_export_from_and_to_s3(s3):
    zarr = pytest.importorskip("zarr")
    labels = voronoi_labels((24, 20, 16), 9, seed=8).astype(np.uint32)
    source = "s3://bucket/ome.n5/labels"
    paintera.convert(labels, source, block_size=8, factors=[2])
    summary = paintera.to_ome_zarr(source, "s3://bucket/ome.zarr", version="0.5")
    assert summary.level_shapes == [(24, 20, 16)[::-1], (12, 10, 8)[::-1]]
    group = zarr.open_group("s3://bucket/ome.zarr", mode="r", storage_options={"endpoint_url": s3})
    assert np.array_equal(group["s0"][...], labels.T)
    assert group.attrs["ome"]["multiscales"][0]["datasets"][1]["path"] == "s1"


# --- GCS (gcp-storage-emulator): what the S3 tests above cover, in small cases -------------

def test_paintera_convert_and_resume_and_cli_on_gcs(gcs, tmp_path, capsys):
    labels = voronoi_labels((24, 20, 12), 12, seed=5)
    target = "gs://bucket/paintera.n5/labels"
    summary = paintera.convert(labels, target, block_size=8, factors=[2], compression="gzip")
    local = paintera.convert(labels, tmp_path / "p.n5" / "labels", block_size=8, factors=[2], compression="gzip")
    assert summary.level_shapes == local.level_shapes and summary.blocks_written == local.blocks_written
    for level in range(2):
        ours = n5.open(tmp_path / "p.n5" / "labels" / "data" / f"s{level}")
        remote = n5.open(f"{target}/data/s{level}")
        for grid in ours.present_blocks():
            assert remote.read_block_bytes(grid) == ours.read_block_bytes(grid)
    attributes = n5.read_attributes(target)  # resume after an interruption that lost two blocks
    attributes["n5mscodecs:conversion"]["complete"] = False
    n5.write_attributes(target, attributes)
    open_store(f"{target}/data/s0/0/0/0").delete("")
    open_store(f"{target}/data/s1/0/0/0").delete("")
    again = paintera.convert(labels, target, block_size=8, factors=[2], compression="gzip", resume=True)
    assert again.blocks_written == 2
    assert np.array_equal(n5.open(f"{target}/data/s0").read_labels(), labels)
    assert n5ms(["info", "gs://bucket/paintera.n5"]) == 0
    assert "labels/data/s0: label multiset, shape [24, 20, 12]" in capsys.readouterr().out
    assert n5ms(["argmax", f"{target}/data/s1", "gs://bucket/paintera.n5/argmax"]) == 0
    assert np.array_equal(n5.open("gs://bucket/paintera.n5/argmax")[:], n5.open(f"{target}/data/s1").read_labels())
    assert n5ms(["zarr-json", "gs://bucket/paintera.n5"]) == 0
    assert open_store("gs://bucket/paintera.n5/argmax/zarr.json").exists()


def test_injected_server_errors_on_gcs_are_retried(gcs, monkeypatch):
    """The emulator answers 503 to the first reads of one block: the read still succeeds."""
    import gcsfs.retry

    real_sleep = asyncio.sleep
    monkeypatch.setattr(gcsfs.retry, "asyncio", types.SimpleNamespace(sleep=lambda _: real_sleep(0.01)))
    n5.write_array("gs://bucket/flaky.n5/raw", LABELS[:, :, 0], chunks=(8, 8), compression="raw")
    served_get, failures = gcs.do_GET, []

    def do_get(handler):
        if "flaky.n5%2Fraw%2F1%2F1" in handler.path and "alt=media" in handler.path and len(failures) < 2:
            failures.append(handler.path)
            handler.send_response(503)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        served_get(handler)

    monkeypatch.setattr(gcs, "do_GET", do_get)
    assert np.array_equal(n5.open("gs://bucket/flaky.n5/raw")[:], LABELS[:, :, 0])
    assert len(failures) == 2


@pytest.fixture
def silent_server():
    """A server on 127.0.0.1 that accepts connections and never answers; yields (endpoint,
    accepted connections)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:  # closed at the end of the test
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    listener.close()
    for connection in accepted:
        connection.close()


@pytest.fixture
def short_timeouts(monkeypatch):
    for key, value in (("CONNECT_TIMEOUT", 0.5), ("READ_TIMEOUT", 0.5), ("ATTEMPTS", 3), ("RETRY_DELAY", 0.01)):
        monkeypatch.setattr(storage, key, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def hang_guard_seconds():
    """How long a failing request may take before a test calls it a hang: far beyond the
    configured time-outs (``storage.never_answered_seconds()``), so that a busy machine never trips
    it. Tests assert what failed and how often it was tried, never how long it took."""
    return 10 * storage.never_answered_seconds() + 30


def _outcome_within(seconds, call):
    """The exception ``call()`` raised in a daemon thread (None if none); the test fails if the
    call is still running after ``seconds`` (a regression must not hang the run)."""
    outcome = []

    def run():
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still waiting after {seconds} s")
    return outcome[0]


def test_a_server_that_never_answers_fails_after_the_configured_attempts(silent_server, short_timeouts):
    endpoint, accepted = silent_server
    guard = hang_guard_seconds()
    error = _outcome_within(guard, lambda: open_store("s3://bucket/labels/0/0/0", {"endpoint_url": endpoint}).get())
    assert isinstance(error, StorageError) and re.search("read failed 3 times.*Timeout", str(error)), repr(error)
    # one request per attempt: s3fs and botocore do not repeat it underneath
    assert len(accepted) == storage.ATTEMPTS
    accepted.clear()
    error = _outcome_within(guard, lambda: open_store(f"{endpoint}/labels/0/0/0").get())  # http(s): the same
    assert isinstance(error, StorageError) and re.search("read failed 3 times.*Timeout", str(error)), repr(error)
    assert len(accepted) == storage.ATTEMPTS


def test_a_dead_server_and_a_bad_client_configuration_fail_without_waiting(short_timeouts):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    guard = hang_guard_seconds()
    # a refused connection is retried (it may be a restarting server), never waited on for a time-out
    error = _outcome_within(guard, lambda: open_store("s3://bucket/x", {"endpoint_url": f"http://127.0.0.1:{port}"}).get())
    assert isinstance(error, StorageError) and "read failed 3 times" in str(error), repr(error)
    assert "Timeout" not in str(error), repr(error)
    # credentials in the endpoint URL: a client error, not retried, and not printed
    error = _outcome_within(
        guard, lambda: open_store("s3://bucket/x", {"endpoint_url": f"http://user:{SECRET}@127.0.0.1:{port}"}).get())
    assert isinstance(error, StorageError) and "not retried" in str(error), repr(error)
    assert SECRET not in str(error)


# --- zarr over URLs: the package's store, its time-outs, retries and StorageError (issue 42, item 8) -----

def _zarr_openers(endpoint):
    import n5mscodecs.zarr as nz

    return {"http": lambda: nz.open_n5_store(f"{endpoint}/c.n5", read_only=True),
            "s3": lambda: nz.open_n5_store("s3://bucket/c.n5", storage_options={"endpoint_url": endpoint}),
            "labels": lambda: nz.open_labels(f"{endpoint}/c.n5", "labels")}


@pytest.mark.parametrize("url", ["http", "s3", "labels"])
def test_zarr_over_a_server_that_never_answers_fails_within_the_documented_time(silent_server, short_timeouts, url):
    zarr = pytest.importorskip("zarr", minversion="3")
    endpoint, _ = silent_server
    opener = _zarr_openers(endpoint)[url]
    error = _outcome_within(hang_guard_seconds(),
                            lambda: opener() if url == "labels" else zarr.open_array(opener(), path="labels", mode="r"))
    assert isinstance(error, StorageError) and re.search("failed 3 times.*Timeout", str(error)), repr(error)


@pytest.mark.parametrize("url", ["http", "s3"])
def test_zarr_over_a_dead_port_fails_fast_with_a_storage_error(short_timeouts, url):
    import socket

    zarr = pytest.importorskip("zarr", minversion="3")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    opener = _zarr_openers(endpoint)[url]
    error = _outcome_within(hang_guard_seconds(), lambda: zarr.open_array(opener(), path="labels", mode="r"))
    assert isinstance(error, StorageError) and "failed 3 times" in str(error), repr(error)
    assert "Timeout" not in str(error), repr(error)  # refused at once, no time-out waited for


class _FlakyHandler(QuietHandler):
    """Answers the first GET of each path with 503 and the second of each block with half its
    body (the connection then closed), then serves it."""

    seen: dict = {}

    def do_GET(self):
        count = _FlakyHandler.seen[self.path] = _FlakyHandler.seen.get(self.path, 0) + 1
        if count == 1:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = self.translate_path(self.path)
        if count == 2 and self.path.rsplit("/", 1)[-1].isdigit() and os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def flaky_served(tmp_path):
    handler = functools.partial(_FlakyHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _FlakyHandler.seen = {}
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_zarr_over_http_retries_a_503_and_a_dropped_body(flaky_served, monkeypatch):
    zarr = pytest.importorskip("zarr", minversion="3")
    import n5mscodecs.zarr as nz

    monkeypatch.setattr(storage, "RETRY_DELAY", 0.01)
    root, base = flaky_served
    n5.write(root / "c.n5" / "labels", LABELS, chunks=(8, 8, 8), compression="raw")
    array = zarr.open_array(nz.open_n5_store(f"{base}/c.n5", read_only=True), path="labels", mode="r")
    error = _outcome_within(60, lambda: np.testing.assert_array_equal(
        LabelMultisetArray.from_elements(array[:]).argmax(), LABELS))
    assert error is None, repr(error)
    blocks = {path: count for path, count in _FlakyHandler.seen.items() if path.rsplit("/", 1)[-1].isdigit()}
    assert len(blocks) == 3 * 3 * 2 and set(blocks.values()) == {3}  # a 503, half a body, then the block
    assert _FlakyHandler.seen["/c.n5/labels/attributes.json"] >= 2  # its first answer was a 503 too
    _FlakyHandler.seen = {}
    assert np.array_equal(nz.open_labels(f"{base}/c.n5", "labels")[:], LABELS)  # the labels view too
