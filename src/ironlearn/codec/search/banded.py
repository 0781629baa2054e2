"""A matrix whose rows are non-zero only near a diagonal, multiplied a block of rows at a time:
what the pyramid's analysis projects with (:func:`.analysis.analyse`)."""

from __future__ import annotations

import numpy as np

from ...backend import get_array_module

#: A projection's entries below this share of its largest are dropped (its pseudo-inverse's rows
#: fall by about 0.38 a cell: beyond 16 cells they are under 1.2e-7 of their peak, under float32's
#: rounding of the picture), and its rows are multiplied in blocks of this many.
BAND_TOLERANCE, BAND_ROWS = 1e-9, 64


class Banded:
    """A matrix whose rows are non-zero only near a diagonal, as blocks of :data:`BAND_ROWS` rows
    with the columns they reach: products with it cost rows x band x n, not rows x columns x n
    (the analysis's dense products made a 4096x4096 encode's analysis many times as slow;
    measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').  Built from the
    dense matrix, entries under :data:`BAND_TOLERANCE` of its largest dropped."""

    def __init__(self, dense: np.ndarray):
        self.shape, self.dtype = dense.shape, dense.dtype
        floor = BAND_TOLERANCE * np.abs(dense).max()
        self.blocks = []
        for first in range(0, dense.shape[0], BAND_ROWS):
            rows = dense[first:first + BAND_ROWS]
            reached = np.flatnonzero(np.abs(rows).max(axis=0) > floor)
            low, high = (int(reached[0]), int(reached[-1]) + 1) if len(reached) else (0, 0)
            self.blocks.append((first, low, high, np.ascontiguousarray(rows[:, low:high])))

    def to(self, backend) -> "Banded":
        """This matrix with its blocks on ``backend``'s device (a copy; itself on the host's)."""
        if backend.device == "cpu":
            return self
        moved = object.__new__(Banded)
        moved.shape, moved.dtype = self.shape, self.dtype
        moved.blocks = [(first, low, high, backend.asarray(block, dtype=block.dtype)) for first, low, high, block in self.blocks]
        return moved

    def left(self, grids: np.ndarray) -> np.ndarray:
        """``self @ grids[c]`` for each ``c``: ``(C, rows, n)`` of ``grids`` ``(C, columns, n)``, in
        the wider of their two types (NumPy or CuPy, as ``grids`` and the blocks are)."""
        xp = get_array_module(grids)
        out = xp.empty((grids.shape[0], self.shape[0], grids.shape[2]), np.result_type(grids.dtype, self.dtype))
        for first, low, high, block in self.blocks:
            out[:, first:first + len(block)] = block @ grids[:, low:high]
        return out

    def right(self, grids: np.ndarray) -> np.ndarray:
        """``grids[c] @ self.T`` for each ``c``: ``(C, n, rows)`` of ``grids`` ``(C, n, columns)``
        (through :meth:`left` on the transpose: its blocks then read whole rows, where slices of
        columns took twice as long)."""
        return self.left(get_array_module(grids).ascontiguousarray(grids.transpose(0, 2, 1))).transpose(0, 2, 1)
