"""n5ms serve: a converted Paintera source with merges, served live over HTTP (a real
ThreadingHTTPServer on 127.0.0.1), read by zarr-python through fsspec's HTTP file system and by
raw HTTP requests: every level equals the argmax export, merges made while serving show,
escapes are refused, INCOMPLETE sources answer 503, and the CLI prints its URL first."""

import functools
import http.client
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

zarr = pytest.importorskip("zarr")
pytest.importorskip("aiohttp")   # fsspec's HTTP file system

from n5mscodecs import n5, paintera  # noqa: E402
from n5mscodecs.demo import voronoi_labels  # noqa: E402
from n5mscodecs.errors import ArgumentError, ConfigurationError, MissingExtraError  # noqa: E402
from n5mscodecs.n5.writing import WriterLock, incomplete_marker, mark_complete, write_marked  # noqa: E402
from n5mscodecs.paintera._httpd import HttpError, request_key  # noqa: E402
from n5mscodecs.paintera.serve import ChunkCache, serve  # noqa: E402

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

LEVELS = 3
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def merged(tmp_path):
    """A source of three levels (blocks of 8, resolution 4,4,40, offset 8,0,0) with merges."""
    labels = voronoi_labels((12, 20, 24), 30, seed=2).T.copy().astype(np.uint64) + 1   # N5 order
    target = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, target, block_size=8, factors=[2, 2], resolution=(4, 4, 40), offset=(8, 0, 0))
    paintera.merge_fragments(target, [1, 2, 3])
    paintera.write_assignment(target, paintera.read_assignment(target).updated({10: 11}))
    return target


def exported(source, level, where):
    """``n5ms argmax`` of level ``level`` (segments), read back (N5 order)."""
    paintera.export_argmax(source / "data" / f"s{level}", where / f"argmax{level}.n5" / "s0", overwrite=True)
    return n5.open(where / f"argmax{level}.n5" / "s0").read()


def get(url, headers=None, method="GET", path=None):
    """(status, headers, body) of one request, the path sent exactly as given."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path if path is not None else parts.path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize(("ngff", "encoding"), [("0.4", "gzip"), ("0.4", "raw"), ("0.5", "gzip")])
def test_zarr_over_http_reads_every_level_as_the_argmax_export(merged, tmp_path, ngff, encoding):
    lookup = paintera.read_assignment(merged)
    with serve(merged, ngff=ngff, encoding=encoding) as server:
        group = zarr.open_group(server.source_url("labels"), mode="r")
        multiscale = (group.attrs["multiscales"] if ngff == "0.4" else group.attrs["ome"]["multiscales"])[0]
        pyramid = paintera.open_pyramid(merged)
        for k in range(LEVELS):
            expected = exported(merged, k, tmp_path)
            array = group[f"s{k}"]
            assert array.dtype == np.uint64 and array.chunks == (8, 8, 8)
            assert np.array_equal(array[...], expected.T)
            fragments = n5.open(merged / "data" / f"s{k}").read_labels()
            assert (lookup(fragments) != fragments).any()   # the merges matter at every level
            scale, translation = multiscale["datasets"][k]["coordinateTransformations"]
            assert scale["scale"] == list(pyramid.voxel_sizes[k][::-1])
            assert translation["translation"] == list(pyramid.offsets[k][::-1])
        assert multiscale["datasets"][0]["coordinateTransformations"][1]["translation"] == [0.0, 0.0, 8.0]
        assert server.errors == 0


def test_fragments_and_plain_datasets(merged, tmp_path):
    fragments = n5.open(merged / "data" / "s0").read_labels()
    plain = np.arange(10 * 9 * 5, dtype=np.uint64).reshape(10, 9, 5)
    n5.write_array(tmp_path / "plain.n5" / "ids", plain, chunks=(4, 4, 4))
    with serve([merged, tmp_path / "plain.n5" / "ids"], assignment=None) as server:
        assert list(server.sources) == ["labels", "ids"]
        root = zarr.open_group(server.url, mode="r")
        assert np.array_equal(root["labels/s0"][...], fragments.T)
        assert np.array_equal(root["ids/s0"][...], plain.T)
        state = server.neuroglancer_state()
        assert [layer["source"] for layer in state["layers"]] == [f"zarr://{server.url}labels/",
                                                                  f"zarr://{server.url}ids/"]


def test_http_semantics_cors_range_etag(merged):
    with serve(merged, encoding="raw") as server:
        url = server.url + "labels/s0/0/1/2"
        status, headers, body = get(url)
        assert status == 200 and len(body) == 8 ** 3 * 8
        assert headers["access-control-allow-origin"] == "*" and headers["cache-control"] == "no-cache"
        assert headers["accept-ranges"] == "bytes" and headers["etag"].startswith('"')
        assert "last-modified" in headers
        status, headers_304, _ = get(url, {"If-None-Match": headers["etag"]})
        assert status == 304 and headers_304["etag"] == headers["etag"]
        status, ranged, part = get(url, {"Range": "bytes=8-23"})
        assert status == 206 and part == body[8:24] and ranged["content-range"] == f"bytes 8-23/{len(body)}"
        status, _, tail = get(url, {"Range": "bytes=-5"})
        assert status == 206 and tail == body[-5:]
        status, refused, _ = get(url, {"Range": f"bytes={len(body)}-"})
        assert status == 416 and refused["content-range"] == f"bytes */{len(body)}"
        status, _, whole = get(url, {"Range": "bytes=0-1,4-5"})   # several ranges: the whole body
        assert status == 200 and whole == body
        status, head, empty = get(url, method="HEAD")
        assert status == 200 and empty == b"" and int(head["content-length"]) == len(body)
        status, preflight, _ = get(url, {"Origin": "https://example.org", "Access-Control-Request-Method": "GET",
                                         "Access-Control-Request-Headers": "range",
                                         "Access-Control-Request-Private-Network": "true"}, "OPTIONS")
        assert status == 204 and preflight["access-control-allow-origin"] == "*"
        assert "GET" in preflight["access-control-allow-methods"]
        assert preflight["access-control-allow-headers"] == "range"
        assert preflight["access-control-allow-private-network"] == "true"
        assert get(url, method="PUT")[0] == 405 and get(url, method="DELETE")[0] == 405
        status, _, missing = get(server.url + "labels/s0/9/9/9")   # outside the grid
        assert status == 404 and b"outside the grid" in missing
        assert get(server.url + "labels/s7/.zarray")[0] == 404
        assert get(server.url + "nothing/.zattrs")[0] == 404
        index = json.loads(get(server.url)[2])
        assert index["sources"] == {"labels": server.source_url("labels")} and index["ngff"] == "0.4"


def test_escapes_are_refused(merged, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP SECRET")
    block = merged / "data" / "s0" / "0" / "0" / "0"
    block.unlink()
    block.symlink_to(secret)    # a block that leaves the container
    with serve(merged) as server:
        for path in ["/../secret.txt", "/labels/../../secret.txt", "/labels/%2e%2e/%2e%2e/secret.txt",
                     "/labels/%2E%2E/x", "/labels/s0/..%2f..%2fsecret.txt", "/labels//s0", "/labels/./s0/.zarray",
                     "/labels/s0/%00", "/labels/s0/%ff"]:
            status, headers, body = get(server.url, path=path)
            assert status == 400, path
            assert headers["content-type"].startswith("text/plain") and b"Traceback" not in body
        status, _, body = get(server.url + "labels/s0/0/0/0")
        assert status == 500 and b"TOP SECRET" not in body and b"Traceback" not in body
        assert b"labels/data/s0/0/0/0" in body   # names the block
        for _ in range(200):   # the handler counts the answer after sending it
            if server.errors:
                break
            time.sleep(0.01)
        assert server.errors == 1


def test_unreadable_block_names_the_block(merged):
    (merged / "data" / "s1" / "1" / "0" / "0").write_bytes(b"\x00\x03garbage")
    lines = []
    with serve(merged, log=lines.append) as server:
        status, _, body = get(server.url + "labels/s1/0/0/1")
        assert status == 500 and b"labels/data/s1/1/0/0" in body and b"Traceback" not in body
        assert get(server.url + "labels/s1/0/0/0")[0] == 200   # the others still read
    assert len(lines) == 1 and "500" in lines[0]


def test_concurrent_reads_agree(merged, tmp_path):
    expected = exported(merged, 0, tmp_path).T
    with serve(merged, encoding="raw", cache_bytes=64 * 2**10) as server:   # a small cache: most are computed
        keys = [(z, y, x) for z in range(1) for y in range(3) for x in range(2)]

        def read(i):
            z, y, x = keys[i % len(keys)]
            status, _, body = get(f"{server.url}labels/s0/{z}/{y}/{x}")
            chunk = np.frombuffer(body, "<u8").reshape(8, 8, 8)
            region = expected[z * 8:(z + 1) * 8, y * 8:(y + 1) * 8, x * 8:(x + 1) * 8]
            return status, np.array_equal(chunk[tuple(slice(0, n) for n in region.shape)], region)

        with ThreadPoolExecutor(64) as pool:
            results = list(pool.map(read, range(64 * 4)))
        assert results == [(200, True)] * len(results)
        assert server.errors == 0 and server.cache.size <= 64 * 2**10


def test_a_merge_made_while_serving_shows_on_the_next_read(merged, tmp_path):
    with serve(merged) as server:
        array = zarr.open_array(server.source_url("labels") + "s0", mode="r")
        before = array[...]
        assert np.array_equal(before, exported(merged, 0, tmp_path).T)
        status, headers, _ = get(server.url + "labels/s0/0/0/0")
        present = np.unique(before[:8, :8, :8])
        paintera.merge_fragments(merged, [int(present[0]), int(present[1])])
        after = exported(merged, 0, tmp_path).T
        assert not np.array_equal(after, before)
        for _ in range(200):   # shows at once locally; a bounded wait in case the machine is slow
            if np.array_equal(array[...], after):
                break
            time.sleep(0.05)
        assert np.array_equal(array[...], after)
        status, _, _ = get(server.url + "labels/s0/0/0/0", {"If-None-Match": headers["etag"]})
        assert status == 200   # the old validator no longer matches


def test_incomplete_sources_answer_503(merged):
    level = merged / "data" / "s1"
    with serve(merged) as server:
        assert get(server.url + "labels/s1/0/0/0")[0] == 200
        attributes = json.loads((level / "attributes.json").read_text())
        write_marked(n5.open_store(level), attributes, incomplete_marker("n5ms commit", "run it again"))
        for key in ("labels/s1/0/0/0", "labels/s1/.zarray"):
            status, headers, body = get(server.url + key)
            assert status == 503 and b"INCOMPLETE" in body and b"run it again" in body, key
            assert headers["retry-after"] == "1"
        assert get(server.url + "labels/s0/0/0/0")[0] == 200   # the finished levels still read
        mark_complete(level)
        assert get(server.url + "labels/s1/0/0/0")[0] == 200
    # an interrupted conversion: every request for the source is refused, also at start
    source_attributes = json.loads((merged / "attributes.json").read_text())
    (merged / "attributes.json").write_text(json.dumps({**source_attributes, paintera.CONVERSION_KEY: {
        "complete": False}}))
    with serve(merged) as server:
        for key in ("labels/.zattrs", "labels/s0/.zarray", "labels/s0/0/0/0"):
            status, _, body = get(server.url + key)
            assert status == 503 and b"INCOMPLETE" in body, key


def test_bad_arguments_are_refused(merged):
    with pytest.raises(ArgumentError, match="version"):
        serve(merged, ngff="0.6")
    with pytest.raises(ArgumentError, match="port"):
        serve(merged, port=70000)
    with pytest.raises(ArgumentError, match="names"):
        serve(merged, names=["../x"])
    with pytest.raises(ArgumentError, match="encoding"):
        serve(merged, encoding="zstd")
    with pytest.raises(ConfigurationError, match="not a label multiset dataset|does not exist"):
        serve(merged.parent / "nothing")


def test_chunk_cache_is_bounded_and_computes_once():
    cache = ChunkCache(100)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.05)
        return b"x" * 40

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda _: cache.get("a", compute), range(8))) == {b"x" * 40}
    assert len(calls) == 1
    for key in "bcdef":
        cache.get(key, lambda: b"y" * 40)
    assert cache.size <= 100 and cache.get("f", lambda: b"") == b"y" * 40
    assert cache.get("big", lambda: b"z" * 500) == b"z" * 500 and cache.size <= 100   # too big: not kept


def test_cli_prints_the_url_first_and_stops_on_ctrl_c(merged):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "n5mscodecs", "serve", str(merged), "--port", "0",
                                "--additional-assignment", "5=77"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    try:
        lines = [process.stdout.readline() for _ in range(3)]
        url = lines[0].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        assert lines[1].startswith("https://") and "#!" in lines[1] and "zarr%3A%2F%2Fhttp" in lines[1]
        assert lines[2].strip() == url + "labels/"
        array = zarr.open_array(url + "labels/s0", mode="r")
        assert (array[...] == 77).any()
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in stderr and "stopped" in stderr


def test_cli_refuses_bad_sources(tmp_path):
    from n5mscodecs.cli import main

    assert main(["serve", str(tmp_path / "nothing")]) == 2
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tmp_path), "--port", "70000"])
    assert exit_.value.code == 2


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_a_source_on_a_web_server_is_served_through_the_package_stores(merged, tmp_path):
    """A source read over HTTP (fsspec through the package's UrlStore), served again."""
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        remote = f"http://127.0.0.1:{web.server_address[1]}/p.n5/labels"
        with serve(remote) as server:
            group = zarr.open_group(server.source_url("labels"), mode="r")
            for k in range(LEVELS):
                assert np.array_equal(group[f"s{k}"][...], exported(merged, k, tmp_path).T)
            assert server.errors == 0
    finally:
        web.shutdown()
        web.server_close()


def test_a_request_waits_for_a_writer_that_holds_the_lock(merged):
    """While a writer holds the source's lock, an INCOMPLETE level is waited for (a commit in
    progress), and the answer is the finished data, not a 503."""
    level = merged / "data" / "s0"
    attributes = json.loads((level / "attributes.json").read_text())
    with serve(merged, encoding="raw") as server:
        before = get(server.url + "labels/s0/0/0/0")[2]
        answers = []
        with WriterLock(n5.open_store(merged)):
            write_marked(n5.open_store(level), attributes, incomplete_marker("n5ms commit", "run it again"))
            asking = threading.Thread(target=lambda: answers.append(get(server.url + "labels/s0/0/0/0")))
            asking.start()
            time.sleep(0.3)   # the request is waiting (it may be answered only after the lock is given up)
            assert answers == []
            mark_complete(level)
        asking.join(timeout=30)
        assert answers[0][0] == 200 and answers[0][2] == before


def test_viewer_without_the_view_extra_names_it(merged, monkeypatch):
    monkeypatch.setitem(sys.modules, "neuroglancer", None)   # as if not installed
    with pytest.raises(MissingExtraError, match=r"n5mscodecs\[view\]"):
        serve(merged, viewer=True)


def test_a_commit_made_while_serving_shows_at_every_level(merged, tmp_path):
    with serve(merged) as server:
        group = zarr.open_group(server.source_url("labels"), mode="r")
        before = [group[f"s{k}"][...] for k in range(LEVELS)]
        paintera.commit(merged, np.full((9, 9, 5), 999, np.uint64), (2, 3, 4))   # N5 order, s0 voxels
        for k in range(LEVELS):
            expected = exported(merged, k, tmp_path).T
            assert np.array_equal(group[f"s{k}"][...], expected)
            assert (expected == 999).any() and not np.array_equal(expected, before[k])


def test_block_segments_come_in_n5_voxel_order(merged):
    """The exports' block step gives the labels read_block_labels gives, lookup applied, laid out as
    N5 stores voxels (x fastest), so that the served chunk (z, y, x) needs no transposing copy."""
    from n5mscodecs.paintera.argmax import block_segments

    lookup = paintera.read_assignment(merged)
    dataset = n5.open(merged / "data" / "s0")
    for position in dataset.present_blocks():
        segments = block_segments(dataset, position, lookup=lookup)
        assert np.array_equal(segments, lookup(dataset.read_block_labels(position)))
        assert segments.T.flags.c_contiguous and segments.dtype == np.uint64


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("/.%2eEfF5cC0a_\\\x00") + ["%2e", "%2E", "%2f", "..", "%00", "%ff"]),
                max_size=20).map("".join))
def test_request_paths_are_keys_or_refused(path):
    """Whatever the path, it becomes plain key parts (no dot segment, separator or control
    character in them) or a 4xx refusal."""
    try:
        parts = request_key("/" + path)
    except HttpError as exc:
        assert 400 <= exc.status < 500
        return
    for part in parts:
        assert part not in ("", ".", "..") and "/" not in part and "\\" not in part
        assert all(ord(c) >= 32 for c in part)
