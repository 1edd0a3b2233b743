"""A fragment-segment-assignment whose blocks are missing or short is refused on every read
path, naming the dataset and the block, as Java's reader fails (issue 51, item 2)."""

import json
import struct

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, n5, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.demo import voronoi_labels


@pytest.fixture()
def source(tmp_path):
    labels = voronoi_labels((12, 20, 24), 30, seed=2).T.copy().astype(np.uint64) + 1
    target = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, target, block_size=8, factors=[2], resolution=(4, 4, 40))
    paintera.write_assignment(target, {3: 40, 5: 40, 7: 41})
    return target


def _damage(dataset, how):
    if how == "segments block missing":
        (dataset / "0" / "1").unlink()
        return "0/1"
    if how == "fragments block missing":
        (dataset / "0" / "0").unlink()
        return "0/0"
    if how == "short block":  # header dims [1, 1]: one of the three pairs
        (dataset / "0" / "1").write_bytes(struct.pack(">HHII", 0, 2, 1, 1) + struct.pack(">Q", 40))
        attributes = json.loads((dataset / "attributes.json").read_text())
        (dataset / "attributes.json").write_text(json.dumps({**attributes, "compression": {"type": "raw"}}))
        n5.open(dataset, mode="r+").write_block((0, 0), np.array([[3], [5], [7]], np.uint64))  # raw too
        return "0/1"
    assert how == "pairs declared, no blocks"
    for column in (dataset / "0" / "0", dataset / "0" / "1"):
        column.unlink()
    return "0/0"


READERS = {
    "read_assignment": lambda target, out: paintera.read_assignment(target),
    "export_argmax": lambda target, out: paintera.export_argmax(target / "data" / "s0", out / "a.n5" / "s0"),
    "to_dask": lambda target, out: n5.open(target / "data" / "s0").to_dask(),
    "open_pyramid": lambda target, out: paintera.open_pyramid(target),
    "to_ome_zarr": lambda target, out: paintera.to_ome_zarr(target, out / "o.zarr"),
    "zarr open_labels": lambda target, out: __import__("n5mscodecs.zarr", fromlist=["open_labels"]).open_labels(
        target.parent, "labels/data/s0"),
}


@pytest.mark.parametrize("how", ["segments block missing", "fragments block missing", "short block",
                                 "pairs declared, no blocks"])
def test_a_damaged_assignment_is_refused_on_every_read_path(source, tmp_path, how, capsys):
    dataset = source / "fragment-segment-assignment"
    block = _damage(dataset, how)
    for name, read in READERS.items():
        if name in ("to_ome_zarr", "zarr open_labels"):
            pytest.importorskip("zarr")
        with pytest.raises(ConfigurationError, match=f"fragment-segment-assignment.*block {block}") as raised:
            read(source, tmp_path / name.replace(" ", "-"))
        assert "fragment-segment-assignment" in str(raised.value), name
    assert n5ms(["argmax", str(source / "data" / "s0"), str(tmp_path / "cli.n5" / "s0"), "--quiet"]) == 2
    assert f"block {block}" in capsys.readouterr().err
    assert not (tmp_path / "a.n5" / "s0").exists()  # refused before anything was written


def test_an_intact_assignment_and_an_empty_one_still_read(source):
    assert paintera.read_assignment(source).to_dict() == {3: 40, 5: 40, 7: 41}
    paintera.write_assignment(source, {})  # dimensions [0, 2]: no block is needed
    assert len(paintera.read_assignment(source)) == 0
