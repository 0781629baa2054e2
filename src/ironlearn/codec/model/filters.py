"""The filters that the finest levels' grids may pass through before upsampling: each a small
symmetric one a channel (Cool-chic's learned upsampling, made linear; the encoder solves them
by least squares, :mod:`..search.filters`).  A filter's taps read a grid shifted by each offset
of :data:`~..shapes.FILTER_OFFSETS` and by its opposite."""

from __future__ import annotations

import numpy as np

from ...backend import get_array_module
from ..shapes import FILTER_OFFSETS, FILTER_RADIUS


def pad(grids: np.ndarray) -> np.ndarray:
    """``grids`` ``(C, h, w)`` with :data:`FILTER_RADIUS` cells around, its edges repeated (as
    upsampling clamps them)."""
    r = FILTER_RADIUS
    return get_array_module(grids).pad(grids, ((0, 0), (r, r), (r, r)), mode="edge")


def pad_rows(pyramid, k: int, first: int, last: int) -> np.ndarray:
    """Rows ``first:last`` of level ``k``'s :meth:`~Pyramid.values` as :func:`pad` holds them,
    with :data:`FILTER_RADIUS` rows and columns around: ``pad(values)[:, first:last + 2r]``
    computed from those rows alone."""
    r, h = FILTER_RADIUS, pyramid.latents[k].shape[1]
    low, high = max(0, first - r), min(h, last + r)
    rows = pyramid.values(k, slice(low, high))
    return np.pad(rows, ((0, 0), (r - (first - low), r - (high - last)), (r, r)), mode="edge")


def _shifted(padded: np.ndarray, first: int, last: int, dy: int, dx: int) -> np.ndarray:
    """Rows ``first:last`` of the grid that ``padded`` (:func:`pad`) holds, shifted by ``(dy, dx)``."""
    r, w = FILTER_RADIUS, padded.shape[2] - 2 * FILTER_RADIUS
    return padded[:, r + first + dy:r + last + dy, r + dx:r + dx + w]


def tap(padded: np.ndarray, first: int, last: int, j: int, out: np.ndarray | None = None) -> np.ndarray:
    """What tap ``j`` of :data:`FILTER_OFFSETS` reads in rows ``first:last`` of the grids that
    ``padded`` holds: the grid itself for the centre, else the grid shifted by the tap's offset
    ``d`` plus the grid shifted by ``-d`` (into ``out`` when given)."""
    dy, dx = FILTER_OFFSETS[j]
    read = _shifted(padded, first, last, dy, dx)
    return read if j == 0 else get_array_module(padded).add(read, _shifted(padded, first, last, -dy, -dx), out=out)


def pairs(padded: np.ndarray, first: int, last: int) -> np.ndarray:
    """Every tap's :func:`tap`: ``(taps, C, last - first, w)``."""
    return np.stack([tap(padded, first, last, j) for j in range(len(FILTER_OFFSETS))])


def filtered(grids: np.ndarray, corrections: np.ndarray) -> np.ndarray:
    """``grids`` ``(C, h, w)`` through each channel's symmetric filter: the grid plus
    ``corrections`` ``(C, taps)`` times what each tap reads (:func:`tap`), a tap at a time into
    one scratch grid (the memory of three grids, not of one a tap).  NumPy or CuPy arrays, both
    on one device."""
    padded, h = pad(grids), grids.shape[1]
    corrections = corrections.astype(grids.dtype)[:, :, None, None]
    out = grids * (1 + corrections[:, 0])
    read = get_array_module(grids).empty_like(out)
    for j in range(1, len(FILTER_OFFSETS)):
        tap(padded, 0, h, j, out=read)
        read *= corrections[:, j]
        out += read
    return out
