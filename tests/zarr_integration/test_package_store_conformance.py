"""PackageStore (zarr over the package's store) against zarr's own store test suite
(zarr.testing.store.StoreTests), over a local directory and over fsspec's memory file system."""

import pytest

pytest.importorskip("zarr", minversion="3")
store_testing = pytest.importorskip("zarr.testing.store")
pytest.importorskip("pytest_asyncio")  # StoreTests has async fixtures

from zarr.core.buffer import cpu  # noqa: E402

from n5mscodecs.zarr.store import PackageStore  # noqa: E402


class TestPackageStoreConformance(store_testing.StoreTests[PackageStore, cpu.Buffer]):
    store_cls = PackageStore
    buffer_cls = cpu.Buffer

    @pytest.fixture(autouse=True)
    def _needs_auto_mode(self, request):
        if request.config.getini("asyncio_mode") != "auto":
            pytest.skip("StoreTests needs pytest-asyncio with asyncio_mode=auto")

    async def set(self, store, key, value):
        store.store.set(key, value.to_bytes())

    async def get(self, store, key):
        return cpu.Buffer.from_bytes(store.store.get(key))

    @pytest.fixture
    def store_kwargs(self, tmp_path):
        from n5mscodecs.n5 import open_store

        return {"store": open_store(tmp_path / "c.n5")}

    @pytest.fixture
    async def store(self, store_kwargs):
        return await PackageStore.open(**store_kwargs)

    def test_store_repr(self, store):
        assert repr(store).startswith("PackageStore(")


class TestPackageStoreOverFsspecConformance(TestPackageStoreConformance):
    """The same over the package's FsspecStore (fsspec's memory file system)."""

    @pytest.fixture
    def store_kwargs(self, tmp_path):
        pytest.importorskip("fsspec")
        from n5mscodecs.n5 import open_store

        return {"store": open_store(f"memory://{tmp_path.name}/c.n5")}
