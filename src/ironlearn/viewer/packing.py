"""A plan's float32 buffer as the page carries it: deflated, with a compressed picture's latent
grids as the integers they are computed from.

A compressed picture's grids hold about 4/3 of a value a pixel a channel, mostly zeros; as
float32 texels (16 bytes a cell) they made a page hundreds of times its file's size.  The file
itself is range-coded, which a page cannot undo without a decoder of its own.  So the page gets
the integers, sparse, and the browser's own ``DecompressionStream`` inflates them
(``static/network.js``, ``IL.unpack``), which then computes each table as
:meth:`ironlearn.codec.model.latents.Pyramid.values` does, in float64 rounded to float32 once.

The payload (JSON-ready, :func:`pack`)::

    floats   how many float32 the buffer holds
    bytes    the length of the inflated stream
    deflate  base64 of the stream, zlib-deflated (its Adler-32 catches damage)
    parts    in stream order, each {"type", "at", "from", "bytes"}: its bytes in the stream

Parts:

* ``floats``: ``count`` little-endian float32, the buffer's from float ``at`` on;
* ``grid``: a :class:`~.plan.Grid` whose table starts at texel ``at``, with ``cells``
  ``[columns, rows]``, ``channels``, ``steps``, ``gain``, ``corrections`` (null for no filter),
  ``offsets`` and ``nonzero`` (each channel's count).  Its bytes are, for each channel in turn,
  the zeros before each nonzero value (row-major, the previous nonzero's position excluded), then
  for each channel the nonzero values, zig-zagged (``2v`` for ``v >= 0``, ``-2v - 1`` below):
  every number an unsigned LEB128 varint.  Sparse, with the runs apart from the values, is what
  deflated smallest of the layouts measured in docs/viewer.md.

Whatever no grid covers (a grid's unused components, the MLP, the mix) travels as ``floats``.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

from .plan import TEXEL, Plan

#: zlib's strongest, with its most memory and its strategy for small varied bytes (which favours
#: Huffman codes over short matches): 4-6% smaller than the defaults on these streams.
LEVEL, MEMORY_LEVEL, STRATEGY = 9, 9, zlib.Z_FILTERED


def varints(values) -> bytes:
    """Unsigned LEB128 of each of ``values`` (non-negative integers), 7 bits a byte, low first."""
    values = np.asarray(values, np.uint64).ravel()
    if values.size == 0:
        return b""
    groups = np.zeros((values.size, 10), np.uint8)  # 10 * 7 bits hold any uint64
    lengths = np.ones(values.size, np.int64)
    rest = values.copy()
    for b in range(10):
        groups[:, b] = (rest & np.uint64(127)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest > 0
        groups[more, b] |= 128
        lengths += more
    return groups[np.arange(10) < lengths[:, None]].tobytes()


def zigzag(values) -> np.ndarray:
    """Signed integers as unsigned ones, small magnitudes small: 0, -1, 1, -2 -> 0, 1, 2, 3."""
    values = np.asarray(values, np.int64)
    return ((values << 1) ^ (values >> 63)).astype(np.uint64)


def grid_bytes(integers: np.ndarray) -> tuple[bytes, list[int]]:
    """A grid's part (``(channels, rows, columns)`` integers): its bytes and each channel's count of
    nonzero values."""
    runs, values, counts = [], [], []
    for channel in integers.reshape(len(integers), -1):
        found = np.flatnonzero(channel)
        runs.append(varints(np.diff(found, prepend=-1) - 1))
        values.append(varints(zigzag(channel[found])))
        counts.append(len(found))
    return b"".join(runs) + b"".join(values), counts


def _grid_part(grid, channels: int) -> dict:
    return {"type": "grid", "at": grid.table, "cells": [int(grid.integers.shape[2]), int(grid.integers.shape[1])],
            "channels": channels, "steps": [float(s) for s in grid.steps], "gain": grid.gain,
            "corrections": None if grid.corrections is None else grid.corrections.tolist(),
            "offsets": grid.offsets}


def pack(plan: Plan) -> dict:
    """The page's payload for ``plan``'s buffer (see the module docstring)."""
    weights = np.asarray(plan.weights, "<f4")
    parts, chunks, start, covered = [], [], 0, 0
    for grid in sorted(plan.grids, key=lambda g: g.table):
        first = grid.table * TEXEL
        rows, columns = grid.integers.shape[1:]
        if first > covered:
            parts.append({"type": "floats", "at": covered, "count": first - covered})
            chunks.append(weights[covered:first].tobytes())
        encoded, counts = grid_bytes(grid.integers)
        parts.append({**_grid_part(grid, len(grid.integers)), "nonzero": counts})
        chunks.append(encoded)
        covered = first + rows * columns * TEXEL
    if covered < len(weights):
        parts.append({"type": "floats", "at": covered, "count": len(weights) - covered})
        chunks.append(weights[covered:].tobytes())
    for part, chunk in zip(parts, chunks):
        part.update({"from": start, "bytes": len(chunk)})
        start += len(chunk)
    stream = b"".join(chunks)
    return {"floats": len(weights), "bytes": len(stream), "parts": parts,
            "deflate": base64.b64encode(_deflated(stream)).decode("ascii")}


def _deflated(stream: bytes) -> bytes:
    """``stream`` in the zlib format (what ``DecompressionStream("deflate")`` reads)."""
    deflater = zlib.compressobj(LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, MEMORY_LEVEL, STRATEGY)
    return deflater.compress(stream) + deflater.flush()
