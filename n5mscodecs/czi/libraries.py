"""Find the zstd and LZ4 C functions inside the ``zstandard`` (or ``backports.zstd``) and ``lz4`` packages.

Both packages compile their C library into an extension module. Called
directly from the ``_chunked`` kernels, a chunk costs no Python call, no
intermediate ``bytes`` and no GIL hand-off, and is written straight to its
place in the output. :func:`bind` looks the functions up once; when a build
of those packages does not export them, ``czi_chunked`` keeps using their
Python APIs (the same zstd bytes; valid LZ4 blocks from lz4.block's stream
mode instead of LZ4's one-shot call).
"""

import ctypes
import importlib.util

from . import _chunked

# Modules that may export the functions, tried in order. backports.zstd (optional:
# the PEP 784 backport) builds zstd with its x86-64 assembly decoder, about 5% faster
# on hi/lo chunks than zstandard's build; it is taken only when it bundles the zstd
# release zstandard does, so the bytes we write match the Python-API path.
# zstandard's C backend hides its symbols; its cffi backend exports them (or links a
# shared libzstd).
_BACKPORT_ZSTD = "backports.zstd._zstd"
_ZSTD_MODULES = (_BACKPORT_ZSTD, "zstandard.backend_c", "zstandard._cffi")
_LZ4_MODULES = ("lz4.block._block",)

#: The module whose zstd the kernels call, once :func:`bind` succeeded.
zstd_module: str | None = None

_MIN_ZSTD_VERSION = 10400  # 1.4.0: the one-shot CCtx/DCtx API as used here
_MIN_LZ4_VERSION = 10900  # 1.9.0 (2019): the block API as used here


def zstandard_zstd_version():
    """The zstd release bundled in ``zstandard``, as ``ZSTD_versionNumber`` gives it."""
    import zstandard

    major, minor, release = zstandard.ZSTD_VERSION
    return 10000 * major + 100 * minor + release


def _lookup(modules, prefix, min_version, exact_versions=None):
    """Addresses of ``_chunked.LIBRARY_FUNCTIONS`` starting with ``prefix`` in
    the first of ``modules`` that exports them all, or ``None``. A module named in
    ``exact_versions`` (module -> callable) must have exactly that version."""
    found = _find(modules, prefix, min_version, exact_versions)
    return None if found is None else found[1]


def _find(modules, prefix, min_version, exact_versions=None):
    """``(module, addresses)`` of :func:`_lookup`, or ``None``."""
    names = [name for name in _chunked.LIBRARY_FUNCTIONS if name.startswith(prefix)]
    for module in modules:
        try:
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.origin:
                continue
            library = ctypes.CDLL(spec.origin)
            version = getattr(library, f"{prefix}versionNumber")
            version.restype = ctypes.c_uint
            if version() < min_version:
                continue
            if exact_versions and module in exact_versions and version() != exact_versions[module]():
                continue
            return module, {name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in names}
        except (ImportError, OSError, AttributeError, ValueError):
            continue
    return None


def bind():
    """Bind the library functions into ``_chunked``; return whether they are available."""
    if _chunked.libraries_bound():
        return True
    global zstd_module
    zstd = _find(_ZSTD_MODULES, "ZSTD_", _MIN_ZSTD_VERSION, {_BACKPORT_ZSTD: zstandard_zstd_version})
    lz4 = _lookup(_LZ4_MODULES, "LZ4_", _MIN_LZ4_VERSION)
    if zstd is None or lz4 is None:
        return False
    _chunked.bind_libraries({**zstd[1], **lz4})
    zstd_module = zstd[0]
    return True
