"""HTTP servers without directory listings, hostile bodies and failing listings (issue 51,
items 1, 15, 16 and 17), against http.server on 127.0.0.1."""

import functools
import http.server
import threading

import numpy as np
import pytest

from n5mscodecs import StorageError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.n5 import open_store, storage

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

LABELS = (np.arange(20 * 18 * 9, dtype=np.uint64).reshape(20, 18, 9) // 11) % 40 + 1


class Handler(http.server.SimpleHTTPRequestHandler):
    """http.server, quiet; ``listings=False`` answers every directory URL with 404 (as object
    stores, CDNs and most static hosting do); ``failures[path]`` answers that many GETs of a
    path with 503 first."""

    listings = True
    failures: dict = {}
    seen: dict = {}

    def log_message(self, *args):
        pass

    def send_head(self):
        self.seen[self.path] = self.seen.get(self.path, 0) + 1
        if self.failures.get(self.path, 0) > 0:
            self.failures[self.path] -= 1
            self.send_error(503)
            return None
        return super().send_head()

    def list_directory(self, path):
        if not self.listings:
            self.send_error(404)
            return None
        return super().list_directory(path)


def _serve(tmp_path, handler):
    if issubclass(handler, http.server.SimpleHTTPRequestHandler):
        handler = functools.partial(handler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def served(tmp_path):
    """(root directory, base URL, handler class) of a server whose behaviour a test sets."""
    handler = type("H", (Handler,), {"listings": True, "failures": {}, "seen": {}})
    server, base = _serve(tmp_path, handler)
    yield tmp_path, base, handler
    server.shutdown()
    server.server_close()


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(storage, "RETRY_DELAY", 0.001)


def _labels_source(root):
    """A label multiset dataset with two of its 18 blocks missing (all background: not written)."""
    labels = LABELS.copy()
    labels[8:16, 8:16, :] = 0
    dataset = n5.write(root / "web.n5" / "labels", labels, chunks=(8, 8, 8), compression="gzip")
    assert len(dataset.present_blocks()) == 16
    return labels, dataset


# --- item 1: no directory listings ---------------------------------------------------------


def test_blocks_of_a_server_without_listings_are_found_by_their_grid(served, fast_retries):
    root, base, handler = served
    handler.listings = False
    labels, local = _labels_source(root)
    remote = n5.open(f"{base}/web.n5/labels")
    assert remote.present_blocks() == local.present_blocks()  # the missing block is absent (a 404)
    assert list(remote.iter_chunks()) == list(local.iter_chunks())
    handler.listings = True  # a server that lists: the listing is used
    assert n5.open(f"{base}/web.n5/labels").present_blocks() == local.present_blocks()


def test_argmax_of_a_server_without_listings_exports_every_block(served, fast_retries, tmp_path_factory):
    root, base, handler = served
    handler.listings = False
    labels, _ = _labels_source(root)
    out = tmp_path_factory.mktemp("out")
    summary = paintera.export_argmax(f"{base}/web.n5/labels", out / "a.n5" / "argmax")
    assert summary.blocks_present == 16
    assert np.array_equal(n5.open(out / "a.n5" / "argmax")[:], labels)
    assert n5ms(["argmax", f"{base}/web.n5/labels", str(out / "b.n5" / "argmax"), "--quiet"]) == 0
    assert np.array_equal(n5.open(out / "b.n5" / "argmax")[:], labels)


def test_info_of_a_dataset_on_a_server_without_listings(served, fast_retries, capsys):
    root, base, handler = served
    handler.listings = False
    _labels_source(root)
    assert n5ms(["info", "--check", f"{base}/web.n5/labels"]) == 0
    out = capsys.readouterr().out
    assert "16/18 blocks present" in out and "checked 16 blocks on local threads" in out and "all readable" in out


def test_a_grid_too_large_to_probe_without_listings_is_refused(served, fast_retries, monkeypatch):
    from n5mscodecs.n5 import listing

    root, base, handler = served
    handler.listings = False
    _labels_source(root)
    monkeypatch.setattr(listing, "MAX_PROBED_BLOCKS", 10)
    with pytest.raises(StorageError, match="no directory listings.*18 blocks"):
        n5.open(f"{base}/web.n5/labels").present_blocks()


def test_a_block_probe_that_keeps_failing_is_an_error_not_a_missing_block(served, fast_retries):
    root, base, handler = served
    handler.listings = False
    _labels_source(root)
    handler.failures["/web.n5/labels/0/1/0"] = 100
    with pytest.raises(StorageError, match=r"web.n5/labels/0/1/0: look up failed 5 times"):
        n5.open(f"{base}/web.n5/labels").present_blocks()


# --- item 17: listings are retried -------------------------------------------------------------


def test_a_transient_503_on_a_listing_is_retried_then_named(served, fast_retries, tmp_path_factory, capsys):
    root, base, handler = served
    labels, _ = _labels_source(root)
    out = tmp_path_factory.mktemp("out")
    handler.failures["/web.n5/labels/"] = 1
    handler.failures["/web.n5/labels/0/"] = 1
    assert n5ms(["argmax", f"{base}/web.n5/labels", str(out / "a.n5" / "argmax"), "--quiet"]) == 0
    assert np.array_equal(n5.open(out / "a.n5" / "argmax")[:], labels)
    handler.failures["/web.n5/labels/1/"] = 100
    capsys.readouterr()
    assert n5ms(["argmax", f"{base}/web.n5/labels", str(out / "b.n5" / "argmax"), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "web.n5/labels/1: list failed 5 times" in error and "Traceback" not in error


def test_s3_listings_are_retried(fast_retries):
    """The same retries for an object store's listing (a memory file system failing the first
    listing of each prefix as a dropped connection would)."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class Flaky(MemoryFileSystem):
        protocol = "flakylist"
        root_marker = "/"
        failures, seen = 1, {}

        def ls(self, path, detail=True, **kwargs):
            count = Flaky.seen[path] = Flaky.seen.get(path, 0) + 1
            if count <= Flaky.failures:
                raise ConnectionResetError("connection reset by peer (injected)")
            return super().ls(path, detail=detail, **kwargs)

    fsspec.register_implementation("flakylist", Flaky, clobber=True)
    dataset = n5.write("flakylist://l.n5/labels", LABELS, chunks=(8, 8, 8), compression="raw")
    Flaky.seen = {}
    assert len(dataset.present_blocks()) == 18
    Flaky.failures, Flaky.seen = 100, {}
    with pytest.raises(StorageError, match=r"flakylist://l.n5/labels: list failed 5 times \(ConnectionResetError"):
        dataset.present_blocks()


# --- items 15 and 16: bounded bodies and a deadline per request ----------------------------------


class _HostileBody(http.server.BaseHTTPRequestHandler):
    """Answers every GET with 200 and a body: ``size`` bytes at once (Content-Length
    ``declared``, or none), or a slow drip of one byte per ``drip`` seconds."""

    size, declared, drip, sent = 0, None, None, {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        if self.declared is not None:
            self.send_header("Content-Length", str(self.declared))
        self.end_headers()
        sent = 0
        try:
            if self.drip is not None:
                import time

                for _ in range(10_000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    sent += 1
                    time.sleep(self.drip)
            else:
                chunk = b"\0" * (1 << 16)
                while sent < self.size:
                    self.wfile.write(chunk)
                    sent += len(chunk)
        except OSError:  # the client hung up: what a bounded read does
            pass
        finally:
            type(self).sent[self.path] = sent


@pytest.fixture
def hostile(tmp_path):
    handler = type("Hostile", (_HostileBody,), {"sent": {}})
    server, base = _serve(tmp_path, handler)
    yield base, handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("declared", [None, 1 << 31])
def test_a_huge_body_is_read_only_up_to_the_bound(hostile, fast_retries, declared):
    """Item 15: a 2 GiB body for one block was read until memory ran out."""
    import tracemalloc

    base, handler = hostile
    handler.size, handler.declared = 64 << 20, declared  # more than the bound; the server stops there
    store = open_store(f"{base}/c.n5/d")
    tracemalloc.start()
    try:
        with pytest.raises(StorageError, match=r"c.n5/d/0/0: read: .*more than the 1048576"):
            store.get("0/0", max_size=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_a_slow_drip_body_hits_the_request_deadline(hostile, monkeypatch):
    """Item 16: a body dripping one byte at a time kept a read going past every bound; the
    deadline is for the whole request, not per read."""
    base, handler = hostile
    handler.drip = 0.05  # each read gets a byte well within READ_TIMEOUT
    for key, value in (("READ_TIMEOUT", 2.0), ("REQUEST_DEADLINE", 0.5), ("ATTEMPTS", 2), ("RETRY_DELAY", 0.01)):
        monkeypatch.setattr(storage, key, value)
    with pytest.raises(StorageError, match=r"c.n5/d/0/0: read failed 2 times \(.*deadline of 0.5 s"):
        open_store(f"{base}/c.n5/d").get("0/0", max_size=1 << 20)
    with pytest.raises(StorageError, match=r"c.n5/d/0/0: read failed 2 times \(.*deadline of 0.5 s"):
        open_store(f"{base}/c.n5/d").get("0/0")  # unbounded reads (fsspec's cat_file) too


def test_a_slow_drip_body_from_s3_hits_the_request_deadline(hostile, monkeypatch):
    """The deadline holds for object stores too (s3fs pointed at the same server: botocore's
    time-outs are per read)."""
    pytest.importorskip("s3fs")
    base, handler = hostile
    handler.drip = 0.05
    for key, value in (("READ_TIMEOUT", 2.0), ("REQUEST_DEADLINE", 0.5), ("ATTEMPTS", 2), ("RETRY_DELAY", 0.01)):
        monkeypatch.setattr(storage, key, value)
    options = {"endpoint_url": base, "key": "testing", "secret": "testing"}
    with pytest.raises(StorageError, match=r"s3://bucket/c.n5/d/0/0: read failed 2 times \(.*deadline of 0.5 s"):
        open_store("s3://bucket/c.n5/d", options).get("0/0", max_size=1 << 20)


def test_the_documented_worst_case_covers_the_deadline():
    assert storage.REQUEST_DEADLINE >= storage.CONNECT_TIMEOUT + storage.READ_TIMEOUT
    backoff = sum(storage.RETRY_DELAY * 2**k for k in range(storage.ATTEMPTS - 1))
    assert storage.worst_case_seconds() == storage.ATTEMPTS * storage.REQUEST_DEADLINE + backoff
    assert storage.never_answered_seconds() == storage.ATTEMPTS * (storage.CONNECT_TIMEOUT + storage.READ_TIMEOUT) \
        + backoff == 101.5


def test_info_of_a_group_on_a_server_without_listings_says_why(served, fast_retries, capsys):
    root, base, handler = served
    handler.listings = False
    _labels_source(root)
    assert n5ms(["info", f"{base}/web.n5"]) == 2
    assert "no directory listings" in capsys.readouterr().err


def test_a_mapping_built_from_a_server_without_listings_finds_every_subtree(served, fast_retries, tmp_path,
                                                                              monkeypatch):
    """Scan tasks find their subtrees by listing; where the store cannot list, by the grid's
    first axes (each subtree's blocks then found block by block): a silent empty scan would
    build a mapping without ids."""
    from n5mscodecs.paintera import mapping_build
    from n5mscodecs.paintera.cluster import local_engine

    root, base, handler = served
    monkeypatch.setattr(mapping_build, "SCAN_BLOCKS", 4)   # (3, 3, 2) blocks: subtrees of the first axis
    paintera.convert(LABELS, root / "p.n5" / "labels", block_size=8, factors=[2], lookup_block_size=5)
    handler.listings = False
    engine = local_engine(1)
    counted = [mapping_build.build_label_to_block_mapping(
        engine, open_store(tmp_path / f"parts-{where}"), 0, 5, {"type": "raw"}, write=False,
        reading=open_store(location)) for where, location in
        [("disk", root / "p.n5" / "labels"), ("web", f"{base}/p.n5/labels")]]
    engine.executor.shutdown()
    assert counted[0].pairs > 0 and counted[0].labels == np.unique(LABELS).size
    assert counted[1] == counted[0]
