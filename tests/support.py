"""Shared test helpers: where the real Java-written N5 data is, and payloads built by hand with
struct (independent of the encoders). Importable from every test directory (pytest pythonpath)."""

import contextlib
import logging
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

# Real Java-written data lives beside the checkout (../shared); a user's fresh
# checkout has none, so tests that need it skip.
SHARED = Path(os.environ.get("N5MSCODECS_SHARED", Path(__file__).resolve().parents[2] / "shared"))
N5_DATA = SHARED / "data" / "n5"

SECRET = "not-a-real-secret-0123456789"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with the bucket "bucket"; credentials and endpoint in the
    standard environment variables (set before a LocalCluster that should reach it starts)."""
    moto_server = pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
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
    import s3fs

    # fsspec keeps one file system per set of options: one made for an earlier module's server
    # (its endpoint from the environment then) would be handed out again, pointing nowhere
    s3fs.S3FileSystem.clear_instance_cache()
    boto3.client("s3").create_bucket(Bucket="bucket")
    yield endpoint
    server.stop()
    s3fs.S3FileSystem.clear_instance_cache()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def n5_data(relative):
    path = N5_DATA / relative
    if not path.exists():
        pytest.skip(f"real N5 data not available ({path})")
    return path


def hand_list(entries):
    """List data bytes of one list, built with struct (independent of the encoder)."""
    return struct.pack("<I", len(entries)) + b"".join(struct.pack("<QI", i, c) for i, c in entries)


def hand_n5_payload(voxel_offsets, lists, argmax=()):
    """argMaxSize + argmax values (BE) + int32 BE offsets + LE list data."""
    return (struct.pack(">i", len(argmax)) + b"".join(struct.pack(">q", a) for a in argmax)
            + b"".join(struct.pack(">i", o) for o in voxel_offsets) + b"".join(lists))


def hand_zarr_payload(voxel_offsets, lists):
    return b"".join(struct.pack("<I", o) for o in voxel_offsets) + b"".join(lists)


def hand_varlen_block(dims, body, num_elements=None):
    """Varlength header + body; ``num_elements`` is the uncompressed payload size."""
    num_elements = len(body) if num_elements is None else num_elements
    return (struct.pack(">HH", 1, len(dims)) + struct.pack(f">{len(dims)}I", *dims)
            + struct.pack(">I", num_elements) + body)


@contextlib.contextmanager
def lock_held_elsewhere(target):
    """The writer lock of ``target`` held by a child process, killed at the end (its lock goes
    with it); yields the process."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from n5mscodecs.n5.writing import WriterLock; "
         "WriterLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)", str(target)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def commit_killed_after_blocks(monkeypatch, blocks, *args, **kwargs):
    """``paintera.commit(*args, **kwargs)`` interrupted (KeyboardInterrupt) when it is about to
    place its block number ``blocks + 1``; returns the (level, grid) of the blocks it placed."""
    from n5mscodecs import paintera
    from n5mscodecs.paintera import commit_blocks

    written, original = [], commit_blocks.place_block

    def killed(*write_args, **write_kwargs):
        if len(written) == blocks:
            raise KeyboardInterrupt
        written.append(write_args[1:3])
        return original(*write_args, **write_kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(commit_blocks, "place_block", killed)
        with pytest.raises(KeyboardInterrupt):
            paintera.commit(*args, **kwargs)
    return written
