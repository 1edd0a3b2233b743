"""N5 containers on object storage, against real servers the tests start on 127.0.0.1: an
S3-compatible server (moto in server mode) and http.server (read-only)."""

import functools
import http.server
import logging
import os
import threading
import time

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, LabelMultisetArray, StorageError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.n5 import storage

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
pytest.importorskip("aiohttp")

SECRET = "not-a-real-secret-0123456789"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server; credentials and endpoint from the standard environment variables."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                             "AWS_ENDPOINT_URL")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=endpoint)
    import boto3

    boto3.client("s3").create_bucket(Bucket="bucket")
    yield endpoint
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


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


def test_label_multisets_on_s3_match_local_files(s3, tmp_path):
    url = "s3://bucket/match.n5/labels"
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


def test_plain_datasets_on_s3(s3):
    data = np.random.default_rng(1).integers(0, 60000, (33, 17), dtype=np.uint16)
    n5.write_array("s3://bucket/plain.n5/raw", data, chunks=(16, 16), compression="zstd")
    assert np.array_equal(n5.open("s3://bucket/plain.n5/raw")[:], data)
    assert list(n5.dataset_paths("s3://bucket/plain.n5")) == ["s3://bucket/plain.n5/raw"]


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
    storage.remove(f"{target}/data/s1/0/0/0")
    storage.remove(f"{target}/data/s2/0/0/0")
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


def test_zarr_store_on_s3(s3):
    zarr = pytest.importorskip("zarr")
    import n5mscodecs.zarr as nz

    n5.write("s3://bucket/zarr.n5/labels", LABELS, chunks=(8, 8, 8))
    array = zarr.open_array(nz.open_n5_store("s3://bucket/zarr.n5", read_only=True), path="labels", mode="r")
    assert np.array_equal(LabelMultisetArray.from_elements(array[:]).argmax(), LABELS)


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
    assert n5ms(["info", "gs://bucket/x.n5"]) == 2  # the CLI reports it, no traceback
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
    started = time.perf_counter()
    assert np.array_equal(n5.open("slowmem://c.n5/labels")[:].argmax(), labels)
    seconds = time.perf_counter() - started
    assert slow_store.most >= 16  # one at a time would take 128 x 20 ms = 2.6 s
    assert seconds < 128 * 0.02 / 4
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


def test_missing_buckets_keys_and_non_n5_places(s3, capsys):
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open("s3://no-such-bucket/x.n5/labels")
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open("s3://bucket/")
    assert n5.read_attributes("s3://bucket/no/such/key") == {}
    assert n5ms(["info", "s3://no-such-bucket/x.n5"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("n5ms: s3://no-such-bucket/x.n5")


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
    assert SECRET not in message and isinstance(raised.value, OSError) and isinstance(raised.value, ValueError)
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


def test_a_server_that_never_answers_fails_within_the_documented_time(silent_server, short_timeouts):
    endpoint, accepted = silent_server
    started = time.perf_counter()
    with pytest.raises(StorageError, match="read failed 3 times.*Timeout"):
        storage.read_bytes("s3://bucket/labels/0/0/0", {"endpoint_url": endpoint})
    elapsed = time.perf_counter() - started
    # one request per attempt: s3fs and botocore do not repeat it underneath
    assert len(accepted) == storage.ATTEMPTS
    assert 3 * storage.READ_TIMEOUT <= elapsed <= storage.worst_case_seconds() + 1
    started = time.perf_counter()
    with pytest.raises(StorageError, match="read failed 3 times"):
        storage.read_bytes(f"{endpoint}/labels/0/0/0")  # http(s) has the same time-outs
    assert time.perf_counter() - started <= storage.worst_case_seconds() + 1


def test_a_dead_server_and_a_bad_client_configuration_fail_fast(short_timeouts):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.perf_counter()
    with pytest.raises(StorageError, match="read failed 3 times"):
        storage.read_bytes("s3://bucket/x", {"endpoint_url": f"http://127.0.0.1:{port}"})
    assert time.perf_counter() - started < 3
    # credentials in the endpoint URL: a client error, not retried, and not printed
    started = time.perf_counter()
    with pytest.raises(StorageError, match="not retried") as raised:
        storage.read_bytes("s3://bucket/x", {"endpoint_url": f"http://user:{SECRET}@127.0.0.1:{port}"})
    assert time.perf_counter() - started < 2 and SECRET not in str(raised.value)
