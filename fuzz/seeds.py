"""Seed corpora for the fuzz targets: encoder output, the tests' hand-built vectors and,
when ``../shared`` is present, real Java-written N5 blocks (read in place, never copied
into the project). ``write_seeds(target, directory)`` fills one corpus directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import zstandard

from n5mscodecs import LabelMultisetArray, LabelMultisetVLen, chunked_encode
from n5mscodecs.n5 import N5BlockHeader, n5_block_header, n5_varlen_encode
from n5mscodecs.n5.header import MODE_DEFAULT, MODE_VARLENGTH
from n5mscodecs.payload import label_multiset_encode, n5_label_multiset_encode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support import N5_DATA, hand_list, hand_n5_payload, hand_varlen_block, hand_zarr_payload  # noqa: E402
from targets import (  # noqa: E402
    DATASET_COMPRESSIONS,
    DATASET_POSITIONS,
    VARLEN_CHAINS,
    _dataset,
    shape_prefix,
)

# largest real blocks taken as seeds: big inputs slow every execution
MAX_REAL_SEED = 1 << 17


def sample_arrays():
    rng = np.random.default_rng(0)
    yield LabelMultisetArray.from_labels(rng.integers(0, 4, (2, 3, 2)).astype(np.uint64))
    yield LabelMultisetArray.from_elements([{1: 3, 7: 2}, {}, {2**64 - 2: 1}, {5: 1, 6: 1, 9: 4}])
    yield LabelMultisetArray.from_elements(
        [dict(zip(rng.integers(0, 50, 3).tolist(), rng.integers(1, 9, 3).tolist())) for _ in range(16)]
    ).reshape((4, 4))


def real_varlen_blocks():
    """(chain index, block bytes) for real blocks, smallest first, a few per dataset."""
    if not N5_DATA.exists():
        return
    chain_of = {"raw": 0, "gzip": 1}
    for attributes in sorted(N5_DATA.rglob("attributes.json")):
        meta = json.loads(attributes.read_text())
        if not meta.get("isLabelMultiset"):
            continue
        chain = chain_of.get(meta.get("compression", {}).get("type", "raw"))
        if chain is None:
            continue
        blocks = sorted((p for p in attributes.parent.rglob("*") if p.is_file() and p.name.isdigit()),
                        key=lambda p: p.stat().st_size)
        for block in [b for b in blocks if b.stat().st_size <= MAX_REAL_SEED][:4]:
            yield chain, block.read_bytes()


def seeds(target):
    arrays = list(sample_arrays())
    if target == "n5_varlen":
        for index, chain in enumerate(VARLEN_CHAINS):
            for a in arrays:
                yield bytes([index]) + bytes(n5_varlen_encode(a, chain))
        payload = hand_n5_payload([0, 0, 12], [hand_list([(1, 1)]), hand_list([(3, 2), (4, 1)])])
        yield b"\x00" + hand_varlen_block((3,), payload)
        for chain, block in real_varlen_blocks():
            yield bytes([chain]) + block
    elif target in ("n5_label_multiset", "label_multiset"):
        encode = n5_label_multiset_encode if target == "n5_label_multiset" else label_multiset_encode
        for a in arrays:
            yield shape_prefix(a.shape) + bytes(encode(a))
        lists = [hand_list([(1, 1)]), hand_list([(2, 5), (9, 1)])]
        hand = hand_n5_payload if target == "n5_label_multiset" else hand_zarr_payload
        yield shape_prefix((3,)) + hand([0, 12, 0], lists)
    elif target == "label_multiset_vlen":
        for a in arrays:
            yield bytes(LabelMultisetVLen().encode(a))
    elif target == "czi_chunked":
        image = np.random.default_rng(1).poisson(300, 5000).astype(np.uint16)
        for option, kwargs in [(0, {}), (1, {"codec": "lz4"}), (2, {"hilo": True, "max_chunk_size": 999}),
                               (7, {"codec": "lz4", "hilo": True, "max_chunk_size": 1000}),
                               (3, {"max_chunk_size": 1})]:
            data = image[:7] if kwargs.get("max_chunk_size") == 1 else image
            yield bytes([option]) + bytes(chunked_encode(data, **kwargs))
        yield b"\x00" + bytes(chunked_encode(image, header="minimal"))
        # what libCZI reads too: several frames and skippable frames in a chunk, a repeated header item
        frames = zstandard.ZstdCompressor(level=1).compress(b"one,") + \
            zstandard.ZstdCompressor(level=1, write_content_size=False).compress(b"two")
        skippable = (0x184D2A53).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"meta"
        for chunk in (frames, skippable + frames, frames + skippable):
            yield b"\x02" + b"\x01\x01" + bytes([len(chunk)]) + b"\x03\x01\x07\x00" + chunk
        frame = zstandard.ZstdCompressor(level=1).compress(b"abc")
        yield b"\x00" + b"\x01\x01\x7f\x01\x01" + bytes([len(frame)]) + b"\x03\x01\x03\x04\x01\x00\x00" + frame
    elif target == "n5_header":
        yield N5BlockHeader(MODE_VARLENGTH, (32, 32, 16), 1000).to_bytes()
        yield N5BlockHeader(MODE_DEFAULT, (7, 3), None).to_bytes() + b"\x00" * 8
    elif target == "zarr_codecs":
        boundary = LabelMultisetArray.from_labels(np.arange(2 * 4 * 4, dtype=np.uint64).reshape(2, 4, 4))
        full = boundary.padded((4, 4, 4), 0)
        yield b"\x00" + bytes(n5_varlen_encode(boundary.transpose(), ["n5_label_multiset"]))
        yield b"\x01" + bytes(n5_varlen_encode(full.transpose(), ["n5_label_multiset", "gzip"]))
        yield b"\x02" + bytes(n5_label_multiset_encode(full.transpose()))
        yield b"\x03" + bytes(label_multiset_encode(full))
    elif target == "n5_dataset_block":
        yield from dataset_block_seeds()
    elif target == "label_to_block_mapping":
        interval = np.array([0, 0, 0, 63, 63, 63], ">i8").tobytes()
        yield b"\x02" + struct.pack(">qi", 7, 2) + interval * 2 + struct.pack(">qi", 9, 0)
        yield b"\x00" + struct.pack(">qi", 1, 1) + np.array([0, 9], ">i8").tobytes()
        yield b"\x02" + struct.pack(">qi", 7, 1000) + interval  # a count past the file
        yield b"\x02" + struct.pack(">qi", 7, -1)  # a negative count
    else:
        raise KeyError(target)


def dataset_block_seeds():
    """Blocks of the datasets of ``fuzz_n5_dataset_block``: as written, with the boundary
    headers other writers use (overstated, padded), and with sizes past the grid's bounds."""
    rng = np.random.default_rng(2)
    for compression in range(len(DATASET_COMPRESSIONS)):
        for slot, position in enumerate(DATASET_POSITIONS):
            option = compression << 1 | slot << 3
            labels = _dataset("labels", compression)
            cropped = labels.block_shape(position)
            block = LabelMultisetArray.from_labels(rng.integers(0, 5, cropped).astype(np.uint64))
            yield bytes([option | 1]) + bytes(n5_varlen_encode(block, labels.codec_chain))
            full = block.padded(labels.chunks, 3)
            padded = n5_varlen_encode(full, labels.codec_chain)
            yield bytes([option | 1]) + bytes(padded)  # padded to the full block (header says so)
            # label-utilities-spark's boundary blocks: full-block header dims, cropped voxels
            written = bytes(n5_varlen_encode(block, labels.codec_chain))
            header = n5_block_header(written)
            overstated = N5BlockHeader(MODE_VARLENGTH, labels.chunks, header.num_elements).to_bytes()
            yield bytes([option | 1]) + overstated + written[header.nbytes:]
            # numElements past what a 4^3 block can need: refused before decompressing
            claim = labels.max_payload_bytes() + 1
            yield bytes([option | 1]) + N5BlockHeader(MODE_VARLENGTH, cropped, claim).to_bytes() + b"\0" * 16
            raw = _dataset("raw", compression)
            values = rng.integers(0, 60000, cropped).astype(">u2").tobytes(order="F")
            body = values if raw.compressor is None else raw.compressor.encode(values)
            yield bytes([option]) + N5BlockHeader(MODE_DEFAULT, cropped).to_bytes() + body
            yield bytes([option]) + N5BlockHeader(MODE_DEFAULT, (1024, 1024, 512)).to_bytes() + body
            yield bytes([option]) + N5BlockHeader(MODE_DEFAULT, (2**32 - 1,) * 3).to_bytes() + body


def write_seeds(target, directory):
    """Write the seeds of ``target`` and its regression inputs (``fuzz/regressions/<target>/``:
    what once failed stays in the corpus the fuzzer mutates) into ``directory``; returns how many."""
    os.makedirs(directory, exist_ok=True)
    count = 0
    regressions = ROOT / "fuzz" / "regressions" / target
    found = sorted(regressions.iterdir()) if regressions.is_dir() else []
    for seed in [*seeds(target), *(path.read_bytes() for path in found)]:
        name = hashlib.sha1(seed).hexdigest()
        Path(directory, name).write_bytes(seed)
        count += 1
    return count
