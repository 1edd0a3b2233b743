# cython: freethreading_compatible = True
"""Byte-crunching kernels for CZI chunked (mode 7) payloads.

Everything here runs without the GIL and reports problems only as ``Status``
codes plus a byte position; the Python modules turn them into messages. The
chunk loops (``decode_chunks``, ``encode_chunks``) call the zstd and LZ4 C
functions that ``libraries`` binds at import.

One extension module in three files by concern: ``_header.pxi`` (varints,
the header walk, the one-call header read and write), ``_library.pxi`` (the
table of zstd/LZ4 functions) and ``_chunks.pxi`` (hi/lo packing, staging and
the chunk loops).

Header varints are little-endian 7-bit groups with a continuation bit, bounded
to ``max_bytes``; the last allowed byte carries 8 value bits.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove

from n5mscodecs._bytes cimport load_u32_le
from n5mscodecs._status cimport *  # every Status code: OK, ERR_...

import numpy as np

cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <stdint.h>
    /* Ask for transparent huge pages on a fresh large allocation: first-touch
       page faults otherwise dominate copying tens of MiB into new memory. */
    static void n5ms_advise_huge_pages(void* start, size_t size) {
        const uintptr_t huge = (uintptr_t)1 << 21;
        uintptr_t first = ((uintptr_t)start + huge - 1) & ~(huge - 1);
        uintptr_t last = ((uintptr_t)start + size) & ~(huge - 1);
        if (last > first) madvise((void*)first, last - first, MADV_HUGEPAGE);
    }
    #else
    static void n5ms_advise_huge_pages(void* start, size_t size) { (void)start; (void)size; }
    #endif
    """
    void n5ms_advise_huge_pages(void* start, size_t size) nogil

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <emmintrin.h>
    /* Streaming (non-temporal) stores for output far larger than the caches:
       they skip reading each destination line first, which halves the memory
       traffic of writing it. */
    static void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst,
                                       Py_ssize_t words) {
        Py_ssize_t i = 0;
        for (; i < words && ((uintptr_t)(dst + 2 * i) & 15); i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
        for (; i + 16 <= words; i += 16) {
            __m128i l = _mm_loadu_si128((const __m128i*)(low + i));
            __m128i h = _mm_loadu_si128((const __m128i*)(high + i));
            _mm_stream_si128((__m128i*)(dst + 2 * i), _mm_unpacklo_epi8(l, h));
            _mm_stream_si128((__m128i*)(dst + 2 * i + 16), _mm_unpackhi_epi8(l, h));
        }
        for (; i < words; i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
    }
    static void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        Py_ssize_t i = 0;
        for (; i < n && ((uintptr_t)(dst + i) & 15); i++) dst[i] = src[i];
        for (; i + 64 <= n; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i*)(src + i));
            __m128i b = _mm_loadu_si128((const __m128i*)(src + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i*)(src + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i*)(src + i + 48));
            _mm_stream_si128((__m128i*)(dst + i), a);
            _mm_stream_si128((__m128i*)(dst + i + 16), b);
            _mm_stream_si128((__m128i*)(dst + i + 32), c);
            _mm_stream_si128((__m128i*)(dst + i + 48), d);
        }
        if (i < n) memcpy(dst + i, src + i, (size_t)(n - i));
    }
    /* Streaming stores are weakly ordered: fence before the data is handed on. */
    static void n5ms_store_fence(void) { _mm_sfence(); }
    #else
    static void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst,
                                       Py_ssize_t words) {
        for (Py_ssize_t i = 0; i < words; i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
    }
    static void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        memcpy(dst, src, (size_t)n);
    }
    static void n5ms_store_fence(void) {}
    #endif
    """
    void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst, Py_ssize_t words) nogil
    void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) nogil
    void n5ms_store_fence() nogil

cdef enum:
    # Header chunk ids.
    ID_END_OF_HEADER = 0
    ID_CHUNK_SIZES = 1
    ID_COMPRESSION_METHOD = 2
    ID_DECOMPRESSED_SIZES = 3
    ID_PREPROCESSING = 4

CHUNK_SIZES = ID_CHUNK_SIZES
COMPRESSION_METHOD = ID_COMPRESSION_METHOD
DECOMPRESSED_SIZES = ID_DECOMPRESSED_SIZES
PREPROCESSING = ID_PREPROCESSING

cdef enum:
    # hi/lo (un)packing handles this many 16-bit words per prange iteration.
    HILO_BLOCK_WORDS = 32768

cdef enum:
    MAX_VARINT_4 = (1 << 29) - 1  # the largest value of a 4-byte header varint

cdef extern from "Python.h":
    # as PyObject*, not object: the result is resized in place before anyone sees it
    PyObject* new_bytes "PyBytes_FromStringAndSize"(const char* data, Py_ssize_t size)
    int resize_bytes "_PyBytes_Resize"(PyObject** data, Py_ssize_t size) except -1


include "_header.pxi"
include "_library.pxi"
include "_chunks.pxi"
