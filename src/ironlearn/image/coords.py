"""Pixel coordinates: pixel centres mapped to [-1, 1] on each axis.

Pixel ``(col, row)`` of a ``width x height`` image sits at
``x = (2 * col + 1) / width - 1`` and ``y = (2 * row + 1) / height - 1``, so a render
at any size samples the same picture (normalised inputs: the original project's
unnormalised coordinates drew an empty white rectangle).
"""

from __future__ import annotations

import numpy as np


def axis(n: int) -> np.ndarray:
    """Centres of ``n`` pixels along one axis, in (-1, 1), float32."""
    return ((2 * np.arange(n, dtype=np.float64) + 1) / n - 1).astype(np.float32)


def pixel_grid(width: int, height: int, rows: slice = slice(None)) -> np.ndarray:
    """Coordinates of the pixels in ``rows``, row-major.

    Returns
    -------
    ndarray, shape ``(n_rows * width, 2)``, float32
        Columns ``(x, y)``; x varies fastest.
    """
    ys = axis(height)[rows]
    xs = axis(width)
    grid = np.empty((len(ys), width, 2), np.float32)
    grid[..., 0] = xs[None, :]
    grid[..., 1] = ys[:, None]
    return grid.reshape(-1, 2)
