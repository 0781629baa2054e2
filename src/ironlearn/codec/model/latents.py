"""The codec's picture: a pyramid of integer latent grids, upsampled and summed, plus a small MLP.

Level ``k`` of the pyramid holds one grid a colour channel, ``ceil(H / 2**k) x ceil(W / 2**k)``
integers, one per block of ``2**k`` pixels a side, from the picture's own resolution (``k = 0``)
down to 1/64.  Each grid, times its quantisation step, is upsampled to the output size by Keys'
cubic interpolation (a = -0.75, sharper than Pillow's "bicubic"), each of the finest grids first
through a small symmetric filter when the file gives it one (:func:`.filters.filtered`, fitted
by :func:`..search.filters.fit_filters`: Cool-chic's learned upsampling, made linear and
solved); the levels add up to the picture, in colours decorrelated by an orthonormal transform
(:data:`COLOURS`).  An optional MLP (:mod:`.network`) reads every upsampled grid at a pixel and
adds a correction.  Rendering at another size only changes where
the upsampling reads: the file holds a continuous picture.

This is Cool-chic's latent pyramid and synthesis (Ladune et al. 2023), changed so that a CPU
can encode in seconds: because the levels add up, the pyramid is a Laplacian pyramid, and the
encoder *computes* the latents (:func:`..search.analysis.analyse`) where Cool-chic trains them from zero for 10**5
steps on a GPU.  The MLP then only refines.

Upsampling is separable, four cells along each axis (:func:`taps`): a render gathers them, so
its work and memory grow with the output; the analysis needs the same reading as matrices
(``U_y z U_x^T``, :func:`upsampling`) for their pseudo-inverses.  The native level at the native
size is the identity and costs nothing.
"""

from __future__ import annotations

import functools

import numpy as np

from ..shapes import FILTER_RADIUS, MAX_LEVELS, level_shape
from .filters import filtered

#: Orthonormal colour transforms (rows: the decorrelated channels).  For RGB: the mean, the
#: red-blue difference and the green-against-the-rest difference, each of unit norm, so a
#: squared error is the same in either space.
COLOURS = {1: np.eye(1, dtype=np.float32),
           3: (np.array([[1, 1, 1], [1, 0, -1], [1, -2, 1]]) / np.sqrt([[3], [2], [6]])).astype(np.float32)}
#: Keys' cubic convolution's parameter ``a``, with which the grids are upsampled: -0.75 since format
#: 5, sharper than Pillow's "bicubic" (-0.5, which formats 3 and 4 keep): without the MLP, on
#: kodim23, monarch, sail, tulips and astronaut at 0.5 bpp, -0.65 to -1 all did better, -0.75 and
#: -0.85 the most, and a per-level choice added nothing (measured: docs/benchmark-log.md,
#: 'Measurements the code's comments quoted').
CUBIC, CUBIC_BEFORE_5 = -0.75, -0.5


def zeros(shape) -> np.ndarray:
    """A read-only int32 grid of zeros of ``shape`` that takes no memory (one zero, broadcast):
    what the decoder holds for a level whose grids the file leaves empty."""
    return np.broadcast_to(np.zeros((), np.int32), shape)


@functools.lru_cache(maxsize=64)
def taps(size_out: int, pixels: int, level: int, span: tuple[float, float] | None = None, cubic: float = CUBIC):
    """How a level's grid is read along one axis at the centres of ``size_out`` output pixels
    spanning ``span`` ``(low, high)`` of the picture's ``pixels`` (in its pixels: pixel ``i``
    covers ``[i, i + 1]``; default all of them, ``(0, pixels)``): Keys' cubic convolution
    (``a = cubic``, :data:`CUBIC`) on four cells, their indices clamped at the edges.

    Returns ``(index, weight)``, int64 and float32 ``(size_out, 4)``: output pixel ``i`` is
    ``sum(weight[i] * grid[index[i]])``.  Cached and read-only: rate control and banded renders
    ask for the same ones again."""
    cells = -(-pixels // (1 << level))
    low, high = (0, pixels) if span is None else span
    centres = low + (np.arange(size_out) + 0.5) * ((high - low) / size_out)  # in the picture's pixels
    position = centres / (1 << level) - 0.5  # in the level's cells, cell j centred at j
    base = np.floor(position).astype(np.int64)
    t = position - base
    t2, t3 = t * t, t * t * t
    a = cubic
    weight = np.stack([a * (t3 - 2 * t2 + t), (a + 2) * t3 - (a + 3) * t2 + 1,
                       -(a + 2) * t3 + (2 * a + 3) * t2 - a * t, a * (t2 - t3)], axis=1).astype(np.float32)
    index = np.clip(base[:, None] + np.arange(-1, 3), 0, cells - 1)
    index.setflags(write=False)
    weight.setflags(write=False)
    return index, weight


@functools.lru_cache(maxsize=64)
def upsampling(size_out: int, pixels: int, level: int, span: tuple[float, float] | None = None,
               cubic: float = CUBIC) -> np.ndarray:
    """:func:`taps` as a dense ``(size_out, cells)`` matrix (for the analysis, which needs its
    pseudo-inverse).  At the native size, level 0's matrix is the identity.  Cached, read-only."""
    index, weight = taps(size_out, pixels, level, span, cubic)
    matrix = np.zeros((size_out, -(-pixels // (1 << level))))
    np.add.at(matrix, (np.arange(size_out)[:, None], index), weight)
    matrix = matrix.astype(np.float32)
    matrix.setflags(write=False)
    return matrix


def upsample(grids: np.ndarray, along_y, along_x) -> np.ndarray:
    """``grids`` ``(C, h, w)`` read at the output rows and columns of ``along_y`` and ``along_x``
    (each an ``(index, weight)`` pair of :func:`taps`, or rows of one): ``(C, rows, columns)``
    float32.

    Columns first, by gathering four cells, on only the grid rows that the output rows read (a
    band of rows reads few); then the rows, as a product with the small ``(rows, those)`` matrix
    of their weights.  The work grows with the output, not with output times cells as the dense
    :func:`upsampling` matrices' would (at 4000x3000 they took three times as long)."""
    (index_y, weight_y), (index_x, weight_x) = along_y, along_x
    first, last = int(index_y.min()), int(index_y.max()) + 1
    columns = sum(weight_x[:, t] * grids[:, first:last, index_x[:, t]] for t in range(4))
    rows = np.zeros((len(index_y), last - first), np.float32)
    np.add.at(rows, (np.arange(len(index_y))[:, None], index_y - first), weight_y)
    return rows @ columns


class Pyramid:
    """The latent grids and their steps, for a ``height x width`` picture of ``channels``.

    Attributes
    ----------
    latents : list of int32 arrays
        Level ``k``'s grids, ``(channels, *level_shape(height, width, k))``, finest first; a
        level not set is :func:`zeros` (read-only, no memory).
    steps : float32 array ``(levels, channels)``
        Each grid's quantisation step: its integers times the step, filtered, are what
        upsampling reads (:meth:`values`).
    filters : list
        For each level, None (no filter) or ``(q, exponent)``: the filter's corrections are
        ``q * 2**exponent``, int32 ``q`` ``(channels, len(FILTER_OFFSETS))`` (:func:`filtered`).
    cubic : float
        Keys' ``a`` that upsampling reads the grids with (:data:`CUBIC`; a file's format says).
    """

    def __init__(self, height: int, width: int, channels: int, levels: int, steps=None, cubic: float = CUBIC):
        if not 1 <= levels <= MAX_LEVELS:
            raise ValueError(f"levels must lie in 1..{MAX_LEVELS} (got {levels})")
        self.height, self.width, self.channels, self.levels = height, width, channels, levels
        self.latents = [zeros((channels, *level_shape(height, width, k))) for k in range(levels)]  # until set
        self.steps = np.ones((levels, channels), np.float32) if steps is None else np.asarray(steps, np.float32)
        self.filters = [None] * levels
        self.cubic = cubic

    def unfiltered(self) -> "Pyramid":
        """This pyramid without its filters (sharing its latents and steps)."""
        plain = Pyramid(self.height, self.width, self.channels, self.levels, self.steps, self.cubic)
        plain.latents = self.latents
        return plain

    def is_empty(self, k: int) -> bool:
        """Whether level ``k`` is known to be zeros without reading it: held as one broadcast zero
        (:func:`zeros`), so that renders skip it and a file of empty grids costs no memory."""
        grids = self.latents[k]
        return not any(grids.strides) and not grids.flat[0]

    def values(self, k: int, rows: slice = slice(None)) -> np.ndarray:
        """Level ``k``'s grids as upsampling reads them, its rows ``rows`` (a step-1 slice): the
        integers times their steps, through the level's filter if it has one; ``(channels, rows,
        w)`` (read-only zeros that take no memory for an empty level).  A band is computed from
        its rows and the filter's reach around them, to the same values as the whole grid's."""
        shape = self.latents[k].shape
        first, last, _ = rows.indices(shape[1])
        if self.is_empty(k):
            return np.broadcast_to(np.zeros((), np.float32), (shape[0], last - first, shape[2]))
        if self.filters[k] is None:
            return self.latents[k][:, first:last] * self.steps[k][:, None, None]
        low, high = max(0, first - FILTER_RADIUS), min(shape[1], last + FILTER_RADIUS)
        scaled = self.latents[k][:, low:high] * self.steps[k][:, None, None]
        # The edge rows padding repeats are the grid's own only at its edges; elsewhere the band
        # holds FILTER_RADIUS real rows each side, and the filter reads no further.
        return filtered(scaled, self.corrections(k))[:, first - low:last - low]

    def corrections(self, k: int) -> np.ndarray | None:
        """Level ``k``'s filter as :func:`filtered` takes it, ``(channels, taps)`` float32, or None."""
        if self.filters[k] is None:
            return None
        q, exponent = self.filters[k]
        return q * np.float32(2.0 ** exponent)

    def features(self, height: int, width: int, rows=slice(None), region=None, values=None) -> np.ndarray:
        """The grids' :meth:`values`, upsampled to ``height x width`` and read at output rows
        ``rows``: ``(pixels, levels * channels)``, level-major.

        ``region`` ``(left, top, right, bottom)``, in the picture's pixels (pixel ``(i, j)``
        covers ``[i, i + 1] x [j, j + 1]``), is what the ``height x width`` output spans:
        default the whole picture, ``(0, 0, self.width, self.height)``.  ``values``, the list of
        every level's :meth:`values`, saves computing them again for each band of a render."""
        span_x = span_y = None
        if region is not None:
            span_x, span_y = (float(region[0]), float(region[2])), (float(region[1]), float(region[3]))
        row_ids = np.arange(height)[rows]
        out = np.empty((len(row_ids), width, self.levels, self.channels), np.float32)
        for k in range(self.levels):
            if self.is_empty(k):
                out[:, :, k] = 0
                continue
            if k == 0 and (height, width) == (self.height, self.width) and region is None:
                if values is None or values[0] is None:  # only the rows read
                    band = slice(int(row_ids.min()), int(row_ids.max()) + 1) if len(row_ids) else slice(0, 0)
                    out[:, :, k] = self.values(0, band)[:, row_ids - band.start].transpose(1, 2, 0)
                else:
                    out[:, :, k] = values[0][:, row_ids].transpose(1, 2, 0)
                continue
            scaled = self.values(k) if values is None else values[k]
            index_y, weight_y = taps(height, self.height, k, span_y, self.cubic)
            along_x = taps(width, self.width, k, span_x, self.cubic)
            out[:, :, k] = upsample(scaled, (index_y[row_ids], weight_y[row_ids]), along_x).transpose(1, 2, 0)
        return out.reshape(-1, self.levels * self.channels)

    def summed(self, features: np.ndarray) -> np.ndarray:
        """The picture the levels make: :meth:`features` summed over the levels, ``(pixels, channels)``."""
        return features.reshape(-1, self.levels, self.channels).sum(axis=1)
