"""A picture as a small file that decodes at any size: a fitted network, quantised and
entropy-coded (see ``docs/compression.md``).

    data = codec.encode(pixels, bpp=0.25, seconds=30)   # bytes
    again = codec.decode(data)                           # uint8 (H, W, C)
    larger = codec.decode(data, 2 * h, 2 * w)           # the same picture redrawn larger
"""

from .codec import Compressed, Decoded, Header, compress_array, decode, encode, read, read_header, read_header_path, read_path
from .container import CodecError

__all__ = ["CodecError", "Compressed", "Decoded", "Header", "compress_array", "decode", "encode", "read", "read_header",
           "read_header_path", "read_path"]
