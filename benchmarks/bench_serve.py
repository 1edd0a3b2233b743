"""Load test of ``n5ms serve`` (issue 52): the demo's Paintera source (Voronoi labels, 64^3
blocks, gzip, a merge applied) served over HTTP on 127.0.0.1, read by ``--clients`` concurrent
clients (threads, each with its own keep-alive connection), each fetching ``--loops`` chunks
picked at random from every level. Reports requests per second and the p50/p99 latency, once
with a cold cache (each chunk computed: read, argmax, assignment, encode; ``--cache 0``) and once
warm (the default 256 MiB cache). Fails (exit 1) on any error or wrong-sized answer.

    python benchmarks/bench_serve.py [--size 256] [--clients 50] [--loops 40] [--encoding gzip]

The clients run in the same process as the server (2 cores here: they compete for them), so the
figures are a floor of what the server does for remote clients.
"""

import argparse
import http.client
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

from n5mscodecs import paintera
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.paintera.serve import DEFAULT_CACHE_BYTES, serve


def load(server, keys, clients, loops, seed):
    """(latencies in seconds, errors) of ``clients`` threads each fetching ``loops`` random keys."""
    latencies, errors = [], []
    lock = threading.Lock()
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    start = threading.Barrier(clients)

    def client(number):
        rng = random.Random(seed + number)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine, bad = [], []
        start.wait()
        for _ in range(loops):
            key = rng.choice(keys)
            began = time.perf_counter()
            try:
                connection.request("GET", key)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200 or not body:
                    bad.append(f"{key}: {response.status}")
            except OSError as exc:
                bad.append(f"{key}: {exc}")
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine.append(time.perf_counter() - began)
        connection.close()
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--loops", type=int, default=40)
    parser.add_argument("--encoding", choices=("gzip", "raw"), default="gzip")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-serve-")
    failed = False
    try:
        source = f"{work}/demo.n5/labels"
        paintera.convert(voronoi_labels((args.size,) * 3, args.labels, 0), source, block_size=64,
                         compression={"type": "gzip", "level": 6})
        paintera.merge_fragments(source, [1, 2, 3])
        pyramid = paintera.open_pyramid(source)
        keys = []
        for k, shape in enumerate(pyramid.shapes):
            grid = [-(-n // 64) for n in shape[::-1]]
            keys += [f"/labels/s{k}/" + "/".join(map(str, p)) for p in np.ndindex(*grid)]
        print(f"{args.size}^3 Voronoi labels, {len(pyramid)} levels, {len(keys)} chunks of 64^3, "
              f"{args.encoding}; {args.clients} clients x {args.loops} requests")
        for label, cache in (("cold (no cache)", 0), ("warm (256 MiB cache)", DEFAULT_CACHE_BYTES)):
            with serve(source, encoding=args.encoding, cache_bytes=cache) as server:
                if cache:
                    load(server, keys, 4, len(keys), 0)   # fill the cache
                began = time.perf_counter()
                latencies, errors = load(server, keys, args.clients, args.loops, 1)
                seconds = time.perf_counter() - began
            latencies.sort()
            p50 = statistics.median(latencies) * 1000
            p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000
            print(f"  {label:22s} {len(latencies)} requests in {seconds:.2f} s ({len(latencies) / seconds:.0f}/s), "
                  f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, errors {len(errors)}")
            if errors:
                failed = True
                print("    " + "\n    ".join(errors[:5]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
