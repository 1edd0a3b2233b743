"""N5Store against zarr's own store test suite (zarr.testing.store.StoreTests), over a MemoryStore.

N5Store differs from a plain store in two ways, by design; the tests that meet them are
expected to fail (strictly: a test that starts passing is reported):

- it translates ``zarr.json`` documents to and from ``attributes.json``, so a ``zarr.json``
  key must hold JSON (StoreTests writes ``b"bar"`` and other bytes there);
- it wraps a store it is given: ``N5Store(store)``, not ``N5Store.open(...)``.
"""

import pytest

pytest.importorskip("zarr", minversion="3")
store_testing = pytest.importorskip("zarr.testing.store")
pytest.importorskip("pytest_asyncio")  # StoreTests has async fixtures

from zarr.core.buffer import cpu  # noqa: E402
from zarr.storage import MemoryStore  # noqa: E402

from n5mscodecs.zarr import N5Store  # noqa: E402

_OPENED_BY_CLASS = {"test_store_open_read_only", "test_store_context_manager", "test_read_only_store_raises",
                    "test_with_read_only_store"}
_NON_JSON_ZARR_JSON = {"test_set", "test_set_many", "test_get_partial_values", "test_exists", "test_delete",
                       "test_delete_dir", "test_list", "test_list_prefix", "test_list_empty_path", "test_list_dir",
                       "test_get_bytes", "test_get_bytes_sync"}


class TestN5StoreConformance(store_testing.StoreTests[N5Store, cpu.Buffer]):
    store_cls = N5Store
    buffer_cls = cpu.Buffer

    async def set(self, store, key, value):
        await store._store.set(key, value)  # bypasses N5Store, as StoreTests asks

    async def get(self, store, key):
        return await store._store.get(key, prototype=cpu.buffer_prototype)

    @pytest.fixture(autouse=True)
    def _differences_by_design(self, request):
        if request.config.getini("asyncio_mode") != "auto":  # StoreTests' fixtures are plain async ones
            pytest.skip("StoreTests needs pytest-asyncio with asyncio_mode=auto")
        name = request.node.originalname
        if name in _OPENED_BY_CLASS:
            request.applymarker(pytest.mark.xfail(reason="N5Store wraps a store: no N5Store.open", strict=True))
        elif name in _NON_JSON_ZARR_JSON and (name != "test_set" or "zarr.json" in request.node.name) and (
                name != "test_get_partial_values" or "zarr.json" in str(request.node.callspec.params)):
            request.applymarker(pytest.mark.xfail(reason="a zarr.json key must hold JSON", strict=True))

    @pytest.fixture
    def store_kwargs(self):
        return {"store": MemoryStore()}

    @pytest.fixture
    async def store(self, store_kwargs):
        return N5Store(**store_kwargs)

    def test_store_repr(self, store):
        assert repr(store).startswith("N5Store(")

    def test_store_supports_writes(self, store):
        assert store.supports_writes

    def test_store_supports_listing(self, store):
        assert store.supports_listing
