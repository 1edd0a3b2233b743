"""The status codes of every kernel (``_status.pxd``), as the IntEnum ``Status``."""

from enum import IntEnum

class Status(IntEnum):
    OK = 0
    ERR_NO_MEMORY = 1
    ERR_TRUNCATED_COUNT = 10
    ERR_ENTRIES_PAST_END = 11
    ERR_ID_TRUNCATED = 20
    ERR_LENGTH_TRUNCATED = 21
    ERR_PAYLOAD_PAST_END = 22
    ERR_UNKNOWN_ID = 23
    ERR_SIZE_TRUNCATED = 25
    ERR_PAYLOAD_TOO_LONG = 26
    ERR_CHUNK_TOO_LARGE = 27
    ERR_MALFORMED_HEADER = 28
    ERR_ZSTD_MAGIC = 30
    ERR_ZSTD_HEADER = 31
    ERR_ZSTD_CONTENT_SIZE = 32
    ERR_CORRUPT = 33
    ERR_CHUNK_SIZE = 35
    ERR_BLOCK_FULL = 36
