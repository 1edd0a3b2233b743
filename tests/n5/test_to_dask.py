"""``to_dask()``: lazy arrays of labels (label multiset datasets) or values (plain datasets)."""

import pickle

import numpy as np
import pytest
from support import n5_data

da = pytest.importorskip("dask.array")

from n5mscodecs import INVALID, n5  # noqa: E402
from n5mscodecs.demo import voronoi_labels  # noqa: E402
from n5mscodecs.errors import CompressionError, MissingExtraError  # noqa: E402


@pytest.fixture(scope="module")
def labels_dataset(tmp_path_factory):
    labels = voronoi_labels((40, 36, 20), 25, seed=3)
    path = tmp_path_factory.mktemp("dask") / "c.n5" / "labels"
    return n5.write(path, labels, chunks=(16, 16, 16), compression="gzip"), labels


def test_label_dataset_is_a_lazy_uint64_array_one_task_per_block(labels_dataset):
    dataset, labels = labels_dataset
    array = dataset.to_dask()
    assert array.dtype == np.uint64 and array.shape == labels.shape
    assert array.chunks == ((16, 16, 8), (16, 16, 4), (16, 4))
    assert array.numblocks == dataset.grid_shape
    assert np.array_equal(array.compute(scheduler="threads"), labels)
    assert np.array_equal(array[5:30, 3, ::2].compute(), labels[5:30, 3, ::2])
    assert array.name == dataset.to_dask().name  # deterministic: dask can share the graph


def test_missing_blocks_read_as_the_fill_label(labels_dataset, tmp_path):
    dataset, labels = labels_dataset
    copy = n5.write(tmp_path / "copy", labels, chunks=(16, 16, 16), compression="raw")
    (tmp_path / "copy" / "0" / "0" / "0").unlink()
    result = copy.to_dask().compute()
    assert (result[:16, :16, :16] == 0).all()   # {0: 1}, as Paintera reads a missing block
    assert np.array_equal(result[16:], labels[16:])
    assert (n5.open(tmp_path / "copy", fill_label=INVALID).to_dask()[:16, :16, :16] == INVALID).all().compute()


def test_plain_dataset_keeps_its_dtype(tmp_path):
    data = np.arange(30 * 20, dtype=np.int16).reshape(30, 20)
    dataset = n5.write_array(tmp_path / "plain", data, chunks=(8, 8), compression="zstd")
    array = dataset.to_dask()
    assert array.dtype == np.int16 and array.chunksize == (8, 8)
    assert np.array_equal(array.compute(), data)


def test_real_paintera_level_equals_the_element_argmax():
    dataset = n5.open(n5_data("paintera_export_test.n5/paintera_labels/data/s1"))
    assert np.array_equal(dataset.to_dask().compute(), dataset.read().argmax())


def test_corrupt_block_raises_naming_it(tmp_path):
    n5.write(tmp_path / "bad", np.arange(64).reshape(8, 8), chunks=(4, 4), compression="gzip")
    block = tmp_path / "bad" / "1" / "1"
    block.write_bytes(block.read_bytes()[:-5])
    array = n5.open(tmp_path / "bad").to_dask()
    assert array[:4, :4].compute().tolist() == np.arange(64).reshape(8, 8)[:4, :4].tolist()
    with pytest.raises(CompressionError, match=r"bad/1/1"):
        array.compute()


def test_graph_pickles_and_runs_on_a_process_cluster(labels_dataset):
    distributed = pytest.importorskip("distributed")
    dataset, labels = labels_dataset
    array = dataset.to_dask()
    pickle.loads(pickle.dumps(array))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        assert np.array_equal(client.compute(array).result(), labels)
        assert int(client.compute((array == labels[0, 0, 0]).sum()).result()) == int((labels == labels[0, 0, 0]).sum())


def test_missing_dask_names_the_extra(labels_dataset, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingExtraError, match=r"n5mscodecs\[dask\]"):
        labels_dataset[0].to_dask()
