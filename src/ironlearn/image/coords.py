"""Pixel coordinates: pixel centres mapped to [-1, 1] on each axis.

Pixel ``(col, row)`` of a ``width x height`` image sits at
``x = (2 * col + 1) / width - 1`` and ``y = (2 * row + 1) / height - 1``, so a render
at any size samples the same picture (normalised inputs: the original project's
unnormalised coordinates drew an empty white rectangle).

A *view* ``(x0, y0, x1, y1)`` narrows that to a region of the square: the same
pixel centres, spread over ``[x0, x1] x [y0, y1]`` instead of ``[-1, 1]**2``
(y grows downward with the rows, as everywhere in ironlearn).
"""

from __future__ import annotations

import reprlib

import numpy as np

from ..checks import is_finite, is_number


FULL_VIEW = (-1.0, -1.0, 1.0, 1.0)
#: The largest coordinate a view may name: a thousand times the picture's half-width.  Past it
#: float32 coordinates lose the pixel pitch, and past about 3e38 they overflow.
VIEW_LIMIT = 1000.0


def axis(n: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """Centres of ``n`` pixels along one axis spanning ``[low, high]`` (default (-1, 1)), float32."""
    centres = (2 * np.arange(n, dtype=np.float64) + 1) / n - 1
    if (low, high) != (-1.0, 1.0):
        centres = low + (high - low) * (centres + 1) / 2
    return centres.astype(np.float32)


def parse_view(text: str) -> tuple[float, float, float, float]:
    """``"x0,y0,x1,y1"`` -> a view with ``x0 < x1`` and ``y0 < y1``. Raises ValueError."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"view {text!r} is not x0,y0,x1,y1 (four numbers)") from None
    return check_view(values, text)


def check_view(view, text: str | None = None) -> tuple[float, float, float, float]:
    """``view`` ``(x0, y0, x1, y1)`` as floats if it is one (four finite numbers, x0 < x1 and y0 < y1,
    within +-:data:`VIEW_LIMIT`); else ValueError quoting ``text`` (default: the numbers)."""
    # A bool is no coordinate, and an int past a float's range (10**400) is no finite one: float()
    # would raise OverflowError for it.
    if not isinstance(view, (tuple, list)) or len(view) != 4 or not all(is_number(v) for v in view):
        raise ValueError(f"view {reprlib.repr(view) if text is None else text!r} is not x0,y0,x1,y1 (four numbers)")
    if not all(is_finite(v) for v in view):
        shown = ",".join(reprlib.repr(v) for v in view) if text is None else text
        raise ValueError(f"view {shown!r} is not x0,y0,x1,y1 (four finite numbers)")
    values = tuple(float(v) for v in view)
    text = text if text is not None else ",".join(f"{v:g}" for v in values)
    if max(abs(v) for v in values) > VIEW_LIMIT:
        raise ValueError(f"view {text!r} reaches past +-{VIEW_LIMIT:g}; the picture spans [-1, 1] on each "
                         "axis, so give numbers near that")
    x0, y0, x1, y1 = values
    if not (x0 < x1 and y0 < y1):
        raise ValueError(f"view {text!r} needs x0 < x1 and y0 < y1 (y grows downward)")
    return values


def pixel_grid(width: int, height: int, rows: slice = slice(None), view=None) -> np.ndarray:
    """Coordinates of the pixels in ``rows``, row-major.

    Parameters
    ----------
    width, height : int
        Pixels of the whole render.
    rows : slice
        The rows wanted (a band of a tiled render).
    view : (x0, y0, x1, y1), optional
        The region of the [-1, 1] square the render spans; default the whole square.

    Returns
    -------
    ndarray, shape ``(n_rows * width, 2)``, float32
        Columns ``(x, y)``; x varies fastest.
    """
    x0, y0, x1, y1 = FULL_VIEW if view is None else view
    ys = axis(height, y0, y1)[rows]
    xs = axis(width, x0, x1)
    grid = np.empty((len(ys), width, 2), np.float32)
    grid[..., 0] = xs[None, :]
    grid[..., 1] = ys[:, None]
    return grid.reshape(-1, 2)
