"""A model's plan buffer as the page carries it: its float32s deflated, then base64'd.

The browser's own ``DecompressionStream`` inflates it (``static/unpack.js``, ``IL.unpack``).  A
compressed picture's page carries its file instead, which the page decodes itself
(``static/ilcdecode.js``).

The payload (JSON-ready, :func:`pack`)::

    floats   how many float32 the buffer holds
    bytes    the length of the inflated stream
    deflate  base64 of the stream, zlib-deflated (its Adler-32 catches damage)
    parts    in stream order, each {"type", "at", "count", "from", "bytes"}: its bytes in the stream

Its one kind of part, ``floats``, holds ``count`` little-endian float32, the buffer's from float
``at`` on.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

from .plan import DrawingPlan

#: zlib's strongest, with its most memory and its strategy for small varied bytes (which favours
#: Huffman codes over short matches).
LEVEL, MEMORY_LEVEL, STRATEGY = 9, 9, zlib.Z_FILTERED


def pack(plan: DrawingPlan) -> dict:
    """The page's payload for ``plan``'s buffer (see the module docstring)."""
    stream = np.asarray(plan.weights, "<f4").tobytes()
    parts = [{"type": "floats", "at": 0, "count": len(plan.weights), "from": 0, "bytes": len(stream)}]
    return {"floats": len(plan.weights), "bytes": len(stream), "parts": parts,
            "deflate": base64.b64encode(_deflated(stream)).decode("ascii")}


def _deflated(stream: bytes) -> bytes:
    """``stream`` in the zlib format (what ``DecompressionStream("deflate")`` reads)."""
    deflater = zlib.compressobj(LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, MEMORY_LEVEL, STRATEGY)
    return deflater.compress(stream) + deflater.flush()
