"""How a grid is read between its vertices: separable 1-D weights (bilinear or a uniform cubic
B-spline) and the B-spline coefficients that make a spline pass through given samples."""

from __future__ import annotations

import numpy as np


def _linear_weights(t):
    """Bilinear reads along one axis: weights of the vertices at offsets 0 and 1 from the cell's
    first, and their derivatives in ``t`` (the position within the cell, in [0, 1])."""
    return (1 - t, t), (-1.0, 1.0)


def _bspline_weights(t):
    """Uniform cubic B-spline along one axis: weights of the vertices at offsets -1, 0, 1, 2 from
    the cell's first, and their derivatives in ``t``.  Every weight is non-negative, they sum to 1,
    and the curve they make is twice continuously differentiable across vertices."""
    s = 1 - t
    t2, t3 = t * t, t * t * t
    weights = (s * s * s / 6, (3 * t3 - 6 * t2 + 4) / 6, (-3 * t3 + 3 * t2 + 3 * t + 1) / 6, t3 / 6)
    slopes = (-s * s / 2, (3 * t2 - 4 * t) / 2, (-3 * t2 + 2 * t + 1) / 2, t2 / 2)
    return weights, slopes


def bspline_coefficients(samples: np.ndarray, axes=(0, 1)) -> np.ndarray:
    """Vertex values whose cubic B-spline passes through ``samples`` at the vertices, along each
    of ``axes`` (a new array shaped as ``samples``, float32 for float32 samples, else float64).

    At a vertex the B-spline weighs it and its two neighbours 1/6, 4/6, 1/6, and
    :class:`HashGrid` repeats the edge vertex past an edge (5/6 and 1/6 there): inverting that
    tridiagonal system along an axis (the Thomas algorithm, vectorised across the other axes) is
    what ``scipy.ndimage.spline_filter`` does for its own edge rule.
    """
    values = np.array(samples, dtype=np.result_type(samples, np.float32))  # one copy, solved in place
    for axis in axes:
        right = np.moveaxis(values, axis, 0)
        n = len(right)
        if n == 1:
            continue
        diagonal = np.full(n, 4.0)
        diagonal[[0, -1]] = 5.0
        # Forward sweep: eliminate the sub-diagonal (all ones), then substitute back.
        right *= 6
        scaled = np.empty(n)
        scaled[0] = diagonal[0]
        for i in range(1, n):
            ratio = 1.0 / scaled[i - 1]
            scaled[i] = diagonal[i] - ratio
            right[i] -= ratio * right[i - 1]
        right[-1] /= scaled[-1]
        for i in range(n - 2, -1, -1):
            right[i] -= right[i + 1]
            right[i] /= scaled[i]
    return values


#: How :class:`HashGrid` reads a level between its vertices: the vertex offsets along each axis
#: and the 1-D weights (with their derivatives) that make the read separable.
INTERPOLATIONS = {"linear": ((0, 1), _linear_weights), "bspline": ((-1, 0, 1, 2), _bspline_weights)}
