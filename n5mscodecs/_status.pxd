# One status-code scheme for every kernel: a kernel returns OK or one of these,
# never raises and never returns None; the Python layer turns codes into
# messages (it sees them as the IntEnum n5mscodecs._status.Status).
cpdef enum Status:
    OK = 0
    ERR_NO_MEMORY = 1
    # label multiset list data
    ERR_TRUNCATED_COUNT = 10      # fewer than 4 bytes left for numEntries
    ERR_ENTRIES_PAST_END = 11     # numEntries runs past the list data
    # CZI chunked header
    ERR_ID_TRUNCATED = 20         # data ends inside (or before) a header chunk id
    ERR_LENGTH_TRUNCATED = 21     # data ends inside a payload length
    ERR_PAYLOAD_PAST_END = 22     # payload length runs past the data
    ERR_UNKNOWN_ID = 23
    ERR_SIZE_TRUNCATED = 25       # a size varint runs past its payload
    ERR_PAYLOAD_TOO_LONG = 26     # writer: payload length above the 3-byte maximum
    ERR_CHUNK_TOO_LARGE = 27      # writer: a compressed size above the 4-byte varint maximum
    ERR_MALFORMED_HEADER = 28     # the one-call header read failed; the step-by-step checks name why
    # CZI chunks
    ERR_ZSTD_MAGIC = 30           # chunk does not start with a zstd frame magic
    ERR_ZSTD_HEADER = 31          # zstd frame header truncated or reserved bit set
    ERR_ZSTD_CONTENT_SIZE = 32    # a zstd frame records more content than DecompressedSizes
    ERR_CORRUPT = 33              # the codec rejected a chunk (detail: its error code)
    ERR_CHUNK_SIZE = 35           # a chunk decompressed to another size (detail: the size)
    ERR_BLOCK_FULL = 36           # encode: the staging block is full (detail: bytes needed)
