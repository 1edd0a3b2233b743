# --- whole chunk ranges through the zstd / LZ4 C functions -------------------------
#
# The zstandard and lz4 packages compile those libraries into their extension
# modules; czi/libraries.py looks the functions up there and binds them
# here once. Called from these loops, a chunk costs no Python call, no bytes
# object and no GIL hand-off, and lands straight in its place in the output.

ctypedef unsigned (*zstd_is_error_t)(size_t) noexcept nogil
ctypedef const char* (*zstd_get_error_name_t)(size_t) noexcept nogil
ctypedef void* (*zstd_create_t)() noexcept nogil
ctypedef size_t (*zstd_free_t)(void*) noexcept nogil
ctypedef size_t (*zstd_decompress_dctx_t)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef size_t (*zstd_find_frame_compressed_size_t)(const void*, size_t) noexcept nogil
ctypedef size_t (*zstd_compress_cctx_t)(void*, void*, size_t, const void*, size_t, int) noexcept nogil
ctypedef size_t (*zstd_compress_bound_t)(size_t) noexcept nogil
ctypedef int (*lz4_sizeof_state_t)() noexcept nogil
ctypedef int (*lz4_compress_fast_ext_state_t)(void*, const char*, char*, int, int, int) noexcept nogil
ctypedef int (*lz4_decompress_safe_t)(const char*, char*, int, int) noexcept nogil
ctypedef int (*lz4_compress_bound_t)(int) noexcept nogil

# One function pointer per name of LIBRARY_FUNCTIONS, in that order.
cdef struct Library:
    zstd_is_error_t ZSTD_isError
    zstd_get_error_name_t ZSTD_getErrorName
    zstd_create_t ZSTD_createDCtx
    zstd_free_t ZSTD_freeDCtx
    zstd_decompress_dctx_t ZSTD_decompressDCtx
    zstd_find_frame_compressed_size_t ZSTD_findFrameCompressedSize
    zstd_create_t ZSTD_createCCtx
    zstd_free_t ZSTD_freeCCtx
    zstd_compress_cctx_t ZSTD_compressCCtx
    zstd_compress_bound_t ZSTD_compressBound
    lz4_sizeof_state_t LZ4_sizeofState
    lz4_compress_fast_ext_state_t LZ4_compress_fast_extState
    lz4_decompress_safe_t LZ4_decompress_safe
    lz4_compress_bound_t LZ4_compressBound

cdef Library lib
cdef bint lib_bound = False

LIBRARY_FUNCTIONS = (
    "ZSTD_isError", "ZSTD_getErrorName", "ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_decompressDCtx",
    "ZSTD_findFrameCompressedSize", "ZSTD_createCCtx", "ZSTD_freeCCtx", "ZSTD_compressCCtx",
    "ZSTD_compressBound", "LZ4_sizeofState", "LZ4_compress_fast_extState", "LZ4_decompress_safe",
    "LZ4_compressBound",
)
DEF N_LIBRARY_FUNCTIONS = 14

def bind_libraries(dict addresses):
    """Bind the C functions named in ``LIBRARY_FUNCTIONS`` (name -> address).

    Called once, at import; every address must be non-zero. ``Library`` holds
    one function pointer per name, in ``LIBRARY_FUNCTIONS`` order, so the
    addresses are copied into it as an array.
    """
    global lib, lib_bound
    cdef void* values[N_LIBRARY_FUNCTIONS]
    if lib_bound:
        raise RuntimeError("bind_libraries: already bound")
    if len(LIBRARY_FUNCTIONS) != N_LIBRARY_FUNCTIONS or sizeof(Library) != N_LIBRARY_FUNCTIONS * sizeof(void*):
        raise RuntimeError("bind_libraries: Library and LIBRARY_FUNCTIONS disagree")
    for k, name in enumerate(LIBRARY_FUNCTIONS):
        value = addresses.get(name)
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"bind_libraries: no address for {name}")
        values[k] = <void*><size_t>value
    memcpy(&lib, values, sizeof(Library))
    lib_bound = True


def libraries_bound():
    return lib_bound
