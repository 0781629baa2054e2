"""A picture as a small file that decodes at any size: a fitted network, quantised and
entropy-coded (see ``docs/compression.md``).

    data = codec.encode(pixels, bpp=0.25, seconds=30)   # bytes
    again = codec.decode(data)                           # uint8 (H, W, C)
    larger = codec.decode(data, 2 * h, 2 * w)           # the same picture redrawn larger

Its modules, after Cool-chic's ``coolchic/``: :mod:`.encoder` (arguments, candidates, the
cheapest), :mod:`.ratecontrol`, :mod:`.pyramid` (the latents), :mod:`.synthesis` (the MLP),
:mod:`.quantise` (weights and filters rounded), :mod:`.entropy` (the latents' model),
:mod:`.bitstream` (one walk that encodes or decodes the sections), :mod:`.header`,
:mod:`.container` (the bytes around them) and :mod:`.decoded` (the picture read back).
The encoder's names load on first use (PEP 562), so reading a file imports nothing of training.
"""

from .bitstream import decode, read, read_header, read_header_path, read_path
from .container import CodecError
from .decoded import Decoded
from .header import Header

__all__ = ["CodecError", "Compressed", "Decoded", "Header", "TooLong", "compress_array", "decode", "encode", "read", "read_header",
           "read_header_path", "read_path"]

_ENCODER = ("Compressed", "TooLong", "compress_array", "encode")


def __getattr__(name):
    if name in _ENCODER:
        from . import encoder

        return getattr(encoder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

