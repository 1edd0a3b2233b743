"""Object storage: block reads with many requests in flight, and the storage layer's choice.

    python benchmarks/bench_remote.py [--repeat N] [--latency-ms 20]

1. 256 label multiset blocks read through a store that adds ``--latency-ms`` to
   every request (an in-process fsspec file system): the default (16 requests in
   flight) against one request at a time, in the same run. Target: <= 0.5 s.
2. The same 256 blocks on a local S3 server (moto in its own process on 127.0.0.1):
   ``n5.open(...)[:]`` (fetch + decode), and the bare fetch of the 256 objects by
   fsspec/s3fs (what n5mscodecs uses) and by obstore (if installed), both with
   16 requests in flight.
Needs the ``test`` extra (fsspec, s3fs, moto[server]); obstore is optional.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from timing import median_time

from n5mscodecs import n5

BLOCKS = (8, 8, 4)  # 256 blocks of 16^3
CHUNK = 16


def latency_filesystem(latency):
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class Slow(MemoryFileSystem):
        protocol = "benchslow"
        root_marker = "/"

        def cat_file(self, path, start=None, end=None, **kwargs):
            time.sleep(latency)
            return super().cat_file(path, start, end, **kwargs)

    fsspec.register_implementation("benchslow", Slow, clobber=True)


def labels():
    shape = tuple(b * CHUNK for b in BLOCKS)
    return (np.arange(np.prod(shape), dtype=np.uint64).reshape(shape) // 1031) % 200


def row(name, value, unit, target=None, ok=None):
    verdict = "" if target is None else f"  (target {target})  {'PASS' if ok else 'MISS'}"
    print(f"  {name:<58} {value:9.3f} {unit}{verdict}")


def start_s3():
    """moto's S3 server in its own process (as a real server would be: no GIL shared with us)."""
    import socket
    import subprocess
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(endpoint, timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=endpoint)
    import boto3

    boto3.client("s3").create_bucket(Bucket="bench")
    return server, endpoint


def obstore_fetch(endpoint, keys):
    try:
        import obstore
        from obstore.store import S3Store
    except ImportError:
        return None
    store = S3Store("bench", endpoint=endpoint, access_key_id="testing", secret_access_key="testing",
                    region="us-east-1", client_options={"allow_http": True})

    async def fetch_all():
        limit = asyncio.Semaphore(16)

        async def one(key):
            async with limit:
                return await (await obstore.get_async(store, key)).bytes_async()

        return await asyncio.gather(*(one(k) for k in keys))

    return lambda: asyncio.run(fetch_all())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    data = labels()
    print(f"n5mscodecs remote storage benchmarks (median of {args.repeat}; 256 blocks of 16^3, raw)")

    print(f"1. a store adding {args.latency_ms:.0f} ms to every request")
    latency_filesystem(args.latency_ms / 1000)
    n5.write("benchslow://c.n5/labels", data, chunks=(CHUNK,) * 3, compression="raw")
    dataset = n5.open("benchslow://c.n5/labels")
    default = median_time(lambda: dataset.read(), args.repeat)
    sequential = median_time(lambda: dataset.read(threads=1), max(1, args.repeat // 3))
    row("default (16 requests in flight)", default, "s", "<= 0.5 s", default <= 0.5)
    row("one request at a time", sequential, "s")
    row("ratio", sequential / default, "x")

    print("2. a local S3 server (moto) on 127.0.0.1")
    server, endpoint = start_s3()
    try:
        n5.write("s3://bench/c.n5/labels", data, chunks=(CHUNK,) * 3, compression="raw")
        s3_dataset = n5.open("s3://bench/c.n5/labels")
        keys = [f"c.n5/labels/{'/'.join(map(str, g))}" for g in np.ndindex(*BLOCKS)]
        import fsspec

        fs = fsspec.filesystem("s3")
        paths = [f"bench/{k}" for k in keys]
        pool = ThreadPoolExecutor(16)
        row("n5.open(...)[:] (fetch + decode, 16 in flight)", median_time(lambda: s3_dataset.read(), args.repeat), "s")
        row("fetch only: fsspec/s3fs cat_file, 16 threads",
            median_time(lambda: list(pool.map(fs.cat_file, paths)), args.repeat), "s")
        row("fetch only: fsspec/s3fs cat (its own async batching)",
            median_time(lambda: fs.cat(paths), args.repeat), "s")
        fetch = obstore_fetch(endpoint, keys)
        if fetch is None:
            print("  obstore is not installed: no obstore comparison")
        else:
            row("fetch only: obstore get_async, 16 in flight", median_time(fetch, args.repeat), "s")
        row("fetch only: one request at a time (s3fs)",
            median_time(lambda: [fs.cat_file(p) for p in paths], max(1, args.repeat // 3)), "s")
        pool.shutdown()
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
