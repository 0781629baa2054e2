"""A picture as a small file that decodes at any size: a fitted network, quantised and
entropy-coded (see ``docs/compression.md``).

    data = codec.encode(pixels, bpp=0.25, seconds=30)   # bytes
    again = codec.decode(data)                           # uint8 (H, W, C)
    larger = codec.decode(data, 2 * h, 2 * w)           # the same picture redrawn larger

Laid out by job, after Cool-chic's ``coolchic/``, each layer importing only those before it:

- :mod:`.shapes`: the numbers the model and the format share (levels, a grid's shape, taps);
- :mod:`.model`: the latents and their upsampling, the filters, the synthesis MLP, and the
  picture a file draws (:class:`~.model.decoded.Decoded`);
- :mod:`.bitstream`: the container, the header, the entropy model, and the sections that one
  walk encodes or decodes;
- :mod:`.quantise`: the weights rounded by the rate-distortion trade;
- :mod:`.search`: the encoder (analysis, rate control, filters, the MLP's training, the
  candidates).

The encoder's names load on first use (PEP 562), so reading a file imports nothing of training.
"""

from .bitstream import decode, read, read_header, read_header_path, read_path
from .bitstream.container import CodecError, is_compressed, read_file
from .bitstream.header import MAX_PIXELS, Header
from .model.decoded import Decoded

__all__ = ["MAX_PIXELS", "CodecError", "Compressed", "Decoded", "Header", "TooLong", "compress_array", "decode", "encode",
           "is_compressed", "read", "read_file", "read_header", "read_header_path", "read_path"]

_ENCODER = ("Compressed", "TooLong", "compress_array", "encode")


def __getattr__(name):
    if name in _ENCODER:
        from .search import encoder

        return getattr(encoder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

