"""Shared by the CZI test modules: ``chunk_path`` runs a module's tests once per chunk path."""

import pytest

from n5mscodecs.czi import backends


@pytest.fixture(scope="module", params=["native", "python"])
def chunk_path(request):
    """The zstd/LZ4 calls made by the kernels (``native``) or through the Python APIs."""
    if request.param == "native" and not backends.NATIVE_AVAILABLE:
        pytest.skip("this build of zstandard/lz4 does not export the C functions (see test_chunk_libraries)")
    with backends.use_backend(request.param):
        yield request.param
