"""The codec's picture: a pyramid of integer latent grids, upsampled and summed, plus a small MLP.

Level ``k`` of the pyramid holds one grid a colour channel, ``ceil(H / 2**k) x ceil(W / 2**k)``
integers, one per block of ``2**k`` pixels a side, from the picture's own resolution (``k = 0``)
down to 1/64.  Each grid, times its quantisation step, is upsampled to the output size by Keys'
cubic interpolation (a = -0.75, sharper than Pillow's "bicubic"), each of the finest grids first
through a small symmetric filter when the file gives it one (:func:`filtered`, fitted by
:func:`fit_filters`: Cool-chic's learned upsampling, made linear and solved); the levels add up
to the picture, in colours decorrelated by an orthonormal transform (:data:`COLOURS`).  An optional MLP reads every
upsampled grid at a pixel and adds a correction.  Rendering at another size only changes where
the upsampling reads: the file holds a continuous picture.

This is Cool-chic's latent pyramid and synthesis (Ladune et al. 2023), changed so that a CPU
can encode in seconds: because the levels add up, the pyramid is a Laplacian pyramid, and the
encoder *computes* the latents (:func:`analyse`) where Cool-chic trains them from zero for 10**5
steps on a GPU.  The MLP then only refines.

Upsampling is separable, four cells along each axis (:func:`taps`): a render gathers them, so
its work and memory grow with the output; the analysis needs the same reading as matrices
(``U_y z U_x^T``, :func:`upsampling`) for their pseudo-inverses.  The native level at the native
size is the identity and costs nothing.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from ..nn import mlp
from .banded import Banded

#: Largest latent or weight magnitude a file may hold.
MAX_SYMBOL = 1 << 15

#: Levels of the pyramid at most: the native resolution down to 1/64.
MAX_LEVELS = 7
#: Orthonormal colour transforms (rows: the decorrelated channels).  For RGB: the mean, the
#: red-blue difference and the green-against-the-rest difference, each of unit norm, so a
#: squared error is the same in either space.
COLOURS = {1: np.eye(1, dtype=np.float32),
           3: (np.array([[1, 1, 1], [1, 0, -1], [1, -2, 1]]) / np.sqrt([[3], [2], [6]])).astype(np.float32)}
#: Analysis rounds ``|z| / step + DEADZONE`` down: a value under ``(1 - DEADZONE)`` steps becomes 0,
#: which saves more bits than it costs in error (measured on the four sporco photographs:
#: 0.35 against plain rounding's 0.5, +0.03 dB at 0.25 bpp and +0.35 dB at 0.5).
DEADZONE = 0.35
#: Each coarser level's step is the finer one's divided by this (a coarse latent's error spreads
#: over four times the pixels of the level below's)...
LEVEL_RATIO = 2.0
#: ...except that the levels from ``COARSE_LEVEL`` on take steps ``COARSE_GAIN`` times larger
#: (level 4's step is then level 3's).  Measured on the four sporco photographs, with the
#: filters: x2 +0.04 dB at 0.25 bpp and +0.06 dB at 0.5; x1.5 and x3 gained less.
COARSE_LEVEL, COARSE_GAIN = 4, 2.0
#: The finest levels whose grids may pass through a filter, and the filter's reach in cells.
FILTER_LEVELS, FILTER_RADIUS = 4, 3
#: The filter's taps: the cell itself, then one offset of each pair ``(d, -d)`` within
#: :data:`FILTER_RADIUS` steps (a symmetric filter: it sharpens or smooths, and never shifts).
FILTER_OFFSETS = tuple([(0, 0)] + [(dy, dx) for dy in range(FILTER_RADIUS + 1)
                                   for dx in range(-FILTER_RADIUS, FILTER_RADIUS + 1)
                                   if abs(dy) + abs(dx) <= FILTER_RADIUS and (dy, dx) > (0, 0)])
#: Keys' cubic convolution's parameter ``a``, with which the grids are upsampled: -0.75 since format
#: 5, sharper than Pillow's "bicubic" (-0.5, which formats 3 and 4 keep).  Measured without the MLP
#: on kodim23, monarch, sail, tulips and astronaut at 0.5 bpp, every one better: -0.65 +0.06 dB,
#: -0.75 +0.07, -0.85 +0.07, -1 +0.04; a per-level choice added nothing.
CUBIC, CUBIC_BEFORE_5 = -0.75, -0.5
#: Pixels at most that :func:`fit_filters` reads, and about how many a band of its rows holds
#: (small bands: any first few of them, as a deadline may leave, are spread over the picture).
FILTER_FIT_PIXELS, FILTER_BAND_PIXELS = 1 << 19, 1 << 13
#: Bands that :func:`fit_filters` reads whatever its deadline says: the first two (ten rows each
#: at 768x512) gave filters worse than none for four of eight files (sporco's four, two rates);
#: the first three or five, better than none for all eight.
FILTER_MIN_BANDS = 4
#: A grid is filtered only where the rows read hold all its non-zero latents or at least this
#: many: fewer, of more, leave its 13 taps free to take values that the rows not read pay for (a
#: grid of 20 latents, 2 of them read, gave a tap of -128 and cost 2.6 dB).
FILTER_MIN_LATENTS = 64


def zeros(shape) -> np.ndarray:
    """A read-only int32 grid of zeros of ``shape`` that takes no memory (one zero, broadcast):
    what the decoder holds for a level whose grids the file leaves empty."""
    return np.broadcast_to(np.zeros((), np.int32), shape)


def level_shape(height: int, width: int, level: int) -> tuple[int, int]:
    """The grid of level ``level`` for a ``height x width`` picture: one value per block of
    ``2**level`` pixels a side, rounded up."""
    return -(-height // (1 << level)), -(-width // (1 << level))


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
        q, exponent = self.filters[k]
        # The edge rows padding repeats are the grid's own only at its edges; elsewhere the band
        # holds FILTER_RADIUS real rows each side, and the filter reads no further.
        return filtered(scaled, q * np.float32(2.0 ** exponent))[:, first - low:last - low]

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


def rounded(z: np.ndarray) -> np.ndarray:
    """Values in steps, ``z``, as a file's integers: rounded with the dead zone :data:`DEADZONE`
    and clipped to what a file holds (only a tiny step on a small picture reaches the clip; the
    finer levels correct what it leaves, as they correct the rounding)."""
    magnitude = np.abs(z)  # in place from here: at 16.8 MP each temporary is 400 MB
    magnitude += DEADZONE
    np.floor(magnitude, out=magnitude)
    np.minimum(magnitude, MAX_SYMBOL, out=magnitude)
    return np.copysign(magnitude, z, out=magnitude).astype(np.int32)


def analyse(picture: np.ndarray, step: float, levels: int) -> Pyramid:
    """The pyramid of ``picture`` (``(H, W, C)``, decorrelated colours) at quantisation step
    ``step`` for level 0, halved at each coarser level (the slope of distortion against rate is
    then about equal across levels; but see :data:`COARSE_GAIN`).

    Closed-loop, coarsest level first: each level is the least-squares fit of what the coarser
    ones, already quantised, left over, quantised with the dead zone :data:`DEADZONE`; so each
    level corrects the rounding of those above it, and level 0 (the identity) ends the error at
    its own rounding."""
    height, width, channels = picture.shape
    steps = step / LEVEL_RATIO ** np.arange(levels)[:, None] * np.ones((1, channels))
    steps[COARSE_LEVEL:] *= COARSE_GAIN
    pyramid = Pyramid(height, width, channels, levels, steps)
    pyramid.latents = [np.empty((channels, *level_shape(height, width, k)), np.int32) for k in range(levels)]
    # A channel at a time: the channels do not mix, and a 16.8 MP picture's float64 residual and
    # its products take a third of the memory (1.2 GB for the three at once).
    for c in range(channels):
        residual = picture[None, :, :, c].astype(np.float64)  # (1, H, W)
        for k in reversed(range(1, levels)):
            (up_y, fit_y), (up_x, fit_x) = _projection(height, k), _projection(width, k)
            step = float(pyramid.steps[k, c])
            q = rounded(fit_x.right(fit_y.left(residual)) / step)
            pyramid.latents[k][c] = q[0]
            residual -= up_x.right(up_y.left(q * step))
        residual /= float(pyramid.steps[0, c])  # level 0 is the identity
        pyramid.latents[0][c] = rounded(residual)[0]
    return pyramid


def prepare_analysis(height: int, width: int, levels: int) -> None:
    """Compute (and cache) what :func:`analyse` reads for a ``height x width`` picture, so that
    timing an analysis times the analysis alone."""
    for k in range(1, levels):
        _projection(height, k), _projection(width, k)


def _padded(grids: np.ndarray) -> np.ndarray:
    """``grids`` ``(C, h, w)`` with :data:`FILTER_RADIUS` cells around, its edges repeated (as
    upsampling clamps them)."""
    r = FILTER_RADIUS
    return np.pad(grids, ((0, 0), (r, r), (r, r)), mode="edge")


def _padded_rows(pyramid: Pyramid, k: int, first: int, last: int) -> np.ndarray:
    """Rows ``first:last`` of level ``k``'s :meth:`~Pyramid.values` as :func:`_padded` holds them,
    with :data:`FILTER_RADIUS` rows and columns around: ``_padded(values)[:, first:last + 2r]``
    computed from those rows alone."""
    r, h = FILTER_RADIUS, pyramid.latents[k].shape[1]
    low, high = max(0, first - r), min(h, last + r)
    rows = pyramid.values(k, slice(low, high))
    return np.pad(rows, ((0, 0), (r - (first - low), r - (high - last)), (r, r)), mode="edge")


def _shifted(padded: np.ndarray, first: int, last: int, dy: int, dx: int) -> np.ndarray:
    """Rows ``first:last`` of the grid that ``padded`` (:func:`_padded`) holds, shifted by ``(dy, dx)``."""
    r, w = FILTER_RADIUS, padded.shape[2] - 2 * FILTER_RADIUS
    return padded[:, r + first + dy:r + last + dy, r + dx:r + dx + w]


def _tap(padded: np.ndarray, first: int, last: int, j: int) -> np.ndarray:
    """What tap ``j`` of :data:`FILTER_OFFSETS` reads in rows ``first:last`` of the grids that
    ``padded`` holds: the grid itself for the centre, else the grid shifted by the tap's offset
    ``d`` plus the grid shifted by ``-d``."""
    dy, dx = FILTER_OFFSETS[j]
    read = _shifted(padded, first, last, dy, dx)
    return read if j == 0 else read + _shifted(padded, first, last, -dy, -dx)


def _pairs(padded: np.ndarray, first: int, last: int) -> np.ndarray:
    """Every tap's :func:`_tap`: ``(taps, C, last - first, w)``."""
    return np.stack([_tap(padded, first, last, j) for j in range(len(FILTER_OFFSETS))])


def filtered(grids: np.ndarray, corrections: np.ndarray) -> np.ndarray:
    """``grids`` ``(C, h, w)`` through each channel's symmetric filter: the grid plus
    ``corrections`` ``(C, taps)`` times what each tap reads (:func:`_tap`), a tap at a time
    (the memory of two grids, not of one a tap)."""
    padded, h = _padded(grids), grids.shape[1]
    corrections = corrections.astype(grids.dtype)[:, :, None, None]
    out = grids * (1 + corrections[:, 0])
    for j in range(1, len(FILTER_OFFSETS)):
        out += corrections[:, j] * _tap(padded, 0, h, j)
    return out


def fit_filters(picture: np.ndarray, pyramid: Pyramid, until: float | None = None) -> dict:
    """The least-squares filters of the finest :data:`FILTER_LEVELS` levels for ``picture``
    (``(H, W, C)``, decorrelated colours), with the pyramid's own filters off: for each channel,
    ``(gram, moment, count)`` of the normal equations (``gram`` and ``moment`` over the taps of
    every filtered level, level-major), whose solution ``solve(gram, moment)`` are the
    corrections.  Read on at most :data:`FILTER_FIT_PIXELS` pixels, in bands spread over the
    picture, taken in an order whose every prefix is spread too (:func:`spread`) and, past the
    ``time.perf_counter()`` value ``until`` (when given), no more of them after the first
    :data:`FILTER_MIN_BANDS`.  The taps of a grid with under :data:`FILTER_MIN_LATENTS` of its
    non-zero latents in the rows read, and not all of them, are left out (zero in ``gram`` and
    ``moment``: its corrections solve to zero)."""
    height, width, channels = picture.shape
    levels = [k for k in range(min(FILTER_LEVELS, pyramid.levels)) if np.any(pyramid.latents[k])]
    if not levels:
        return {"levels": [], "gram": None, "moment": None, "count": 0}
    plain = pyramid.unfiltered()
    # Level 0 is read a band of rows at a time (whole, its values and their padded copy took
    # 800 MB at 16.8 MP); the coarser levels are a quarter of its size and less.
    values = [None] + [plain.values(k) for k in range(1, plain.levels)]
    padded = {k: _padded(values[k]) for k in levels if k > 0}
    band = max(1, FILTER_BAND_PIXELS // width)
    starts = range(0, height, band)
    if len(starts) * band * width > FILTER_FIT_PIXELS:  # spread the bands over the picture
        keep = max(1, FILTER_FIT_PIXELS // (band * width))
        starts = [starts[i] for i in np.linspace(0, len(starts) - 1, keep).round().astype(int)]
    n_taps = len(FILTER_OFFSETS)
    gram = np.zeros((channels, n_taps * len(levels), n_taps * len(levels)))
    moment = np.zeros((channels, n_taps * len(levels)))
    seen = {k: np.zeros(pyramid.latents[k].shape[1], bool) for k in levels}  # the grid rows read
    count = 0
    for read_so_far, top in enumerate(np.asarray(starts)[spread(len(starts))]):
        if read_so_far >= FILTER_MIN_BANDS and until is not None and time.perf_counter() > until:
            break
        rows = slice(top, min(top + band, height))
        error = picture[rows].reshape(-1, channels) - plain.summed(plain.features(height, width, rows, None, values))
        columns = []
        for k in levels:
            if k == 0:
                read = _pairs(_padded_rows(plain, 0, rows.start, rows.stop), 0, rows.stop - rows.start)
                seen[k][rows] = True
            else:  # the grid rows that the band's rows read, then upsampled
                index_y, weight_y = (along[rows] for along in taps(height, height, k, None, pyramid.cubic))
                first, last = int(index_y.min()), int(index_y.max()) + 1
                slab = _pairs(padded[k], first, last).reshape(n_taps * channels, last - first, -1)
                read = upsample(slab, (index_y - first, weight_y), taps(width, width, k, None, pyramid.cubic))
                seen[k][first:last] = True
            columns.append(read.reshape(n_taps, channels, -1))
        # (C, levels * taps, pixels): products by BLAS, where einsum's own loops took 20 times as long
        design = np.ascontiguousarray(np.concatenate(columns).astype(np.float64).transpose(1, 0, 2))
        gram += design @ design.transpose(0, 2, 1)
        moment += (design @ error.T[:, :, None])[..., 0]
        count += error.shape[0]
    for i, k in enumerate(levels):
        for c in range(channels):
            read = np.count_nonzero(pyramid.latents[k][c][seen[k]])
            if read < FILTER_MIN_LATENTS and read < np.count_nonzero(pyramid.latents[k][c]):
                part = slice(i * n_taps, (i + 1) * n_taps)
                gram[c, part, :] = gram[c, :, part] = moment[c, part] = 0
    return {"levels": levels, "gram": gram, "moment": moment, "count": count}


def spread(n: int) -> np.ndarray:
    """``range(n)`` in bit-reversed order (van der Corput's): each first few are spread over the
    whole range, so that a fit cut short still sees all of the picture's parts."""
    bits = max(1, (n - 1).bit_length())
    order = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)]
    return np.array([i for i in order if i < n], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _projection(pixels: int, level: int):
    """``(U, pinv(U))`` of level ``level`` along an axis of ``pixels``, in float64, as
    :class:`Banded` matrices (cached: rate control analyses the same picture a dozen times).

    The pseudo-inverse is solved from the normal equations, ``(U^T U)^-1 U^T``: cubic upsampling's
    ``U^T U`` is well conditioned (about 2.2 at every level and size measured), and an SVD took
    ten times as long and, at 8192 pixels, gigabytes of workspace."""
    matrix = upsampling(pixels, pixels, level).astype(np.float64)
    return Banded(matrix), Banded(np.linalg.solve(matrix.T @ matrix, matrix.T))


def synthesis(inputs: int, channels: int, width: int, depth: int, seed: int = 0):
    """The MLP that reads a pixel's ``inputs`` upsampled grids and corrects its ``channels``;
    its last layer starts at zero, so a new MLP changes nothing."""
    net = mlp(inputs, channels, width=width, depth=depth, rng=np.random.default_rng(seed))
    net.layers[-1].params["weight"][...] = 0
    return net
