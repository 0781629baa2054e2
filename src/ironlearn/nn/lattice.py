"""Points on a grid, given by their two axes: the input of a network that reads a picture's pixels.

A batch of pixel centres, a whole picture or a tile of one, is a lattice: every ``(x, y)`` of
``xs`` and ``ys``.  A :class:`~ironlearn.nn.HashGrid` reads a dense level at a lattice's points
as two small matrix products (the read is separable), where reading point by point gathers 4 or
16 table rows a point; and its gradient then falls on one rectangle of the level.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Lattice:
    """The points ``(xs[i], ys[j])``, row-major: ``j`` outer, ``i`` inner (x varies fastest), as
    :func:`~ironlearn.image.coords.pixel_grid` lays out a picture's pixels.

    Parameters
    ----------
    xs, ys : array-like, float
        Coordinates in [-1, 1] along x and y, kept on the host as float32: a lattice's axes
        are small (a few hundred values) and a layer reads them to plan its products.

    ``len(lattice)`` is the number of points; :meth:`points` gives them as an ``(n, 2)`` array
    for a layer that reads points one by one.
    """

    def __init__(self, xs, ys):
        self.xs = np.ascontiguousarray(xs, dtype=np.float32).reshape(-1)
        self.ys = np.ascontiguousarray(ys, dtype=np.float32).reshape(-1)
        self._points = {}

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``: ``(len(ys), len(xs))``."""
        return len(self.ys), len(self.xs)

    def __len__(self) -> int:
        return len(self.xs) * len(self.ys)

    def points(self, xp=np):
        """The ``(n, 2)`` float32 points on ``xp``'s device, made once per module: the same array
        each call, so that a layer can cache what it derives from them."""
        key = xp.__name__
        if key not in self._points:
            grid = np.empty(self.shape + (2,), np.float32)
            grid[..., 0] = self.xs[None, :]
            grid[..., 1] = self.ys[:, None]
            self._points[key] = xp.asarray(grid.reshape(-1, 2))
        return self._points[key]

    def __repr__(self) -> str:
        return f"Lattice({len(self.xs)} x {len(self.ys)})"


class AxisRead:
    """How a lattice's points along one axis read a grid's vertices there: a matrix of 1-D weights,
    ``points x vertices``, kept as dense blocks of a few points each and the few vertices they
    read.  The matrix is banded (nearby points read nearby vertices), and its products as blocks
    cost a few percent of the dense ones' arithmetic (a 256-pixel tile of a level of a vertex per
    pixel: blocks of 32 points read 35 vertices of 259).

    Parameters
    ----------
    first : int
        The first vertex the points read; the matrix's columns are vertices ``first`` on.
    matrix : ndarray ``(points, vertices)``, float32, on the host
    xp : module
        The array module (device) the blocks live on.
    features : int, optional
        For :meth:`across`: the blocks are also kept as ``kron(block.T, eye(features))``, which
        mixes the vertices of rows of ``vertices * features`` values (feature fastest) without
        transposing them.
    """

    BLOCK = 32  # points a block: 2.6x fewer operations than 64, and 4x the calls, and faster
    # (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted')

    def __init__(self, first: int, matrix: np.ndarray, xp, features: int | None = None):
        self.first = int(first)
        self.points, self.vertices = matrix.shape
        self.features = features
        self.blocks = []  # (first point, end, first vertex, end, weights (points, vertices), spread or None)
        for p0 in range(0, self.points, self.BLOCK):
            p1 = min(p0 + self.BLOCK, self.points)
            read = np.flatnonzero(matrix[p0:p1].any(axis=0))
            v0, v1 = (int(read[0]), int(read[-1]) + 1) if len(read) else (0, 1)
            block = matrix[p0:p1, v0:v1]
            spread = None if features is None else xp.asarray(np.kron(block.T, np.eye(features, dtype=np.float32)))
            self.blocks.append((p0, p1, v0, v1, xp.asarray(block), spread))

    def down(self, values, xp):
        """``matrix @ values``: ``values`` ``(vertices, k)`` -> ``(points, k)``."""
        out = xp.empty((self.points, values.shape[1]), dtype=values.dtype)
        for p0, p1, v0, v1, block, _ in self.blocks:
            xp.matmul(block, values[v0:v1], out=out[p0:p1])
        return out

    def down_transposed(self, grad, xp):
        """``matrix.T @ grad``: ``grad`` ``(points, k)`` -> ``(vertices, k)``."""
        out = xp.zeros((self.vertices, grad.shape[1]), dtype=grad.dtype)
        for p0, p1, v0, v1, block, _ in self.blocks:
            out[v0:v1] += block.T @ grad[p0:p1]
        return out

    def across(self, values, xp):
        """Each row of ``values``, ``(m, vertices * features)``, read at the points: ``(m, points *
        features)``, ``out[j, i, f] = sum over a of matrix[i, a] * values[j, a, f]``."""
        f = self.features
        out = xp.empty((values.shape[0], self.points * f), dtype=values.dtype)
        for p0, p1, v0, v1, _, spread in self.blocks:
            out[:, p0 * f:p1 * f] = values[:, v0 * f:v1 * f] @ spread
        return out

    def across_transposed(self, grad, xp):
        """The transpose of :meth:`across`: ``grad`` ``(m, points * features)`` -> ``(m, vertices *
        features)``."""
        f = self.features
        out = xp.zeros((grad.shape[0], self.vertices * f), dtype=grad.dtype)
        for p0, p1, v0, v1, _, spread in self.blocks:
            out[:, v0 * f:v1 * f] += grad[:, p0 * f:p1 * f] @ spread.T
        return out


class Reads(NamedTuple):
    """Where a batch of points reads a :class:`~ironlearn.nn.HashGrid` (``K`` vertices a point and level)."""

    indices: object  # (K, n, L) table rows
    weights: object  # (K, n, L)
    fractions: object  # (2, n, L) positions within the cell, along x and y
    # The weights repeated for each feature, (K, n, L, F): forward then weighs the gathered
    # features in one contiguous product, where broadcasting over F (a loop of 2) took far longer
    # (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
    spread: object


class LevelReads(NamedTuple):
    """A :class:`HashGrid`'s levels as ``(L, 1)`` arrays on a device, for reading every level at once."""

    axes: tuple  # along x, then y: (cells, last vertex, last cell's first vertex) in the coordinates'
    #              dtype, and the last vertex as int64
    sides: object  # int64: vertices across a dense level's rows
    offsets: object  # int64: each level's first row in the table
    masks: object  # uint64: rows - 1 of a hashed level
    hashed: object  # bool
    any_hashed: bool
    all_hashed: bool

    @classmethod
    def of(cls, grid, xp, dtype) -> "LevelReads":
        def on(values, kind):  # a column: levels down, to broadcast against (n,) points across
            return xp.asarray(np.asarray(values, dtype=kind).reshape(-1, 1))

        axes = tuple((on(cells, dtype), on(np.subtract(sides, 1), dtype), on(np.maximum(np.subtract(sides, 2), 0), dtype),
                      on(np.subtract(sides, 1), np.int64))
                     for cells, sides in ((grid.resolutions, grid.sides), (grid.resolutions_y, grid.sides_y)))
        return cls(axes, on(grid.sides, np.int64), on(grid.offsets, np.int64), on(np.subtract(grid.sizes, 1), np.uint64),
                   on(grid.hashed, bool), any(grid.hashed), all(grid.hashed))
