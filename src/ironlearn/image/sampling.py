"""Training batches drawn from a picture of any size: positions anywhere inside it, targets
interpolated from its pixels.

A picture fitted only at its pixel centres leaves the network free between them,
and a hash grid fills that freedom with a checkerboard that shows in every render
larger than the picture.  Sampling continuous positions, with targets from a
reconstruction filter, asks the network for a continuous picture instead (as
Instant-NGP and tiny-cuda-nn train on images).  At a pixel centre every filter
here but ``spline`` returns the pixel itself.

Each batch is a pure function of ``(seed, step)``: positions come from a
counter-based hash computed with the array module itself, so a resumed run draws
the same batches, on the CPU or the GPU, with no host<->device copy.  Memory is
the picture (kept once, as it was loaded: uint8 or float32) plus one batch; cost
per step depends on the batch only.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import get_array_module, take_rows, to_host
from ..nn.lattice import Lattice
from ..nn.splines import INTERPOLATIONS, bspline_coefficients
from .coords import axis
from . import batch_kernel
from .io import as_float

FILTERS = ("lanczos", "bicubic", "bilinear", "spline", "centres")

#: The ``spline`` filter: a cubic B-spline whose vertices are this share of the coefficients of
#: the spline through the pixels (``nn.splines.bspline_coefficients``) and the rest the pixels
#: themselves (the smoothing B-spline of the picture).  Halfway, it redraws 200x200 binary drawings
#: thresholded at 474 and 1024 px above bicubic on all 32 (drawing, size) pairs of 16 drawings
#: held out from choosing it, where the spline through the pixels is under bicubic on 21
#: (benchmarks/experiments/drawing_splines.py; measured: docs/benchmark-log.md, 'A lead for the next step').
SPLINE_HALF = 0.5
#: The share of each batch placed on pixel centres, for a picture larger than one batch; the rest
#: lies anywhere, spread evenly: on the 12.6-megapixel test photograph 7/8 beat 3/4, in more steps
#: (on camera at 256 trained this way, more on centres fitted better and redrew worse at 512;
#: measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
#: Only the samples off-centre pay for the filter's 36 reads.
CENTRED = 7 / 8

#: For a picture trained whole each step (:class:`EveryPixel`): samples between pixels per pixel,
#: by mode.  Every sample weighs as much as a pixel in the loss.  A photograph needs many to learn
#: the picture between its pixels; a binary drawing needs only enough to pin the grid there (at 8x,
#: 1/64 and up leave no specks) and keeps its sharpness.  Each sample between costs several pixels'
#: time (its lookups and filter are not cached), so a gray photograph takes 1/16: at equal steps it
#: learns what 1/8 does, in shorter steps.  So does colour, given the loss share that 1/8 had by
#: count; by count, 1/16's 4x render showed specks across flat backgrounds that 1/8 left clean.
#: (Measured on hash-grid pyramids.  A gray thumbnail's one dense B-spline level, the default
#: since, keeps 1/16 at a fifth of the loss.  Measured: docs/benchmark-log.md, 'Measurements the
#: code's comments quoted'.)

BETWEEN = {"binary": 1 / 32, "gray": 1 / 16, "rgb": 1 / 16}

#: The share of each step's loss that the samples between pixels carry, by mode; ``None``: their
#: share of the samples (each weighs as much as a pixel).  For gray, 0.2 fitted and redrew camera
#: better than the count's share and 0.3 fitted no better; colour lost fit with more weight
#: (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').  Colour takes the
#: ninth that 1/8 between had by count, with half as many samples (:data:`BETWEEN`).
BETWEEN_WEIGHT = {"binary": None, "gray": 0.2, "rgb": 1 / 9}

#: ``(share, weight)`` of :data:`BETWEEN` and :data:`BETWEEN_WEIGHT` for the ``spline`` filter, for
#: any mode: a drawing's pixel spline learns the spline between its pixels from many samples
#: weighing half the loss.  Chosen on nine 200x200 drawings (5 s fits from random, redrawn at 474
#: and 1024 px, counting the (drawing, size) pairs above bicubic and Lanczos), then checked on
#: sixteen held out, where it alone redrew every pair above both (measured: docs/benchmark-log.md,
#: 'Measurements the code's comments quoted').
SPLINE_BETWEEN = (1 / 2, 1 / 2)

_GOLDEN, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix64(xp, z):
    """splitmix64's finaliser: a bijection of uint64 whose output bits all depend on every input bit."""
    z = (z ^ (z >> xp.uint64(30))) * xp.uint64(_MIX1)
    z = (z ^ (z >> xp.uint64(27))) * xp.uint64(_MIX2)
    return z ^ (z >> xp.uint64(31))


def step_key(seed: int, step: int) -> int:
    """The hash key of ``(seed, step)`` that :func:`uniform` mixes each position with (worked out
    on the host: a few integer operations, no array)."""
    return int(_mix64(np, np.array([(seed * _GOLDEN + step) % 2**64], dtype=np.uint64))[0])


def uniform(xp, seed: int, step: int, shape) -> "np.ndarray":
    """Uniform float32 numbers in [0, 1) that depend only on ``(seed, step)`` and the position in
    ``shape``: the same on NumPy and CuPy, and different for every step."""
    count = int(np.prod(shape))
    key = step_key(seed, step)
    z = xp.arange(count, dtype=xp.uint64) ^ xp.uint64(key)
    bits = _mix64(xp, z * xp.uint64(_GOLDEN)) >> xp.uint64(40)  # 24 bits: exact in float32
    return (bits.astype(xp.float32) * np.float32(2.0 ** -24)).reshape(shape)


def _keys_weights(t):
    """Keys' cubic convolution (a = -0.5, the "bicubic" of Pillow and OpenCV) at offsets
    ``1 + t, t, 1 - t, 2 - t`` from the four taps; ``t`` in [0, 1)."""
    t2, t3 = t * t, t * t * t
    return (-0.5 * t3 + t2 - 0.5 * t, 1.5 * t3 - 2.5 * t2 + 1, -1.5 * t3 + 2 * t2 + 0.5 * t, 0.5 * t3 - 0.5 * t2)


def _lanczos3(xp, d):
    """Lanczos' windowed sinc with three lobes at distance ``d`` (0 beyond 3)."""
    return xp.where(xp.abs(d) < 3, xp.sinc(d) * xp.sinc(d / 3), 0).astype(np.float32)


def _taps(u, last, kind: str, xp):
    """Indices ``(k, *u.shape)`` and weights ``(k, *u.shape)`` for positions ``u`` in pixel units
    (pixel ``i`` covers ``[i, i + 1)``), clamped at the edges to pixels ``0 .. last`` (a number,
    or an array that broadcasts against ``u``: both axes at once, ``(2, 1)`` for ``u`` of ``(2, m)``)."""
    u = u - 0.5  # pixel centres at whole numbers
    base = xp.floor(u)
    t = u - base
    base = base.astype(xp.int64)
    if kind == "bilinear":
        first, weights = 0, xp.stack((1 - t, t))
    elif kind == "spline":
        first, weights = -1, xp.stack(INTERPOLATIONS["bspline"][1](t)[0])
    elif kind == "lanczos":
        # The six taps in one (6, n) array: one pass of each operation, not six (the offsets
        # made where t is: a list would be a copy to the GPU each batch).
        first = -2
        weights = _lanczos3(xp, t - xp.arange(-2, 4, dtype=t.dtype).reshape((6,) + (1,) * t.ndim))
        weights /= weights.sum(axis=0)  # a partition of unity, as Pillow's
    else:
        first, weights = -1, xp.stack(_keys_weights(t))
    # The taps' pixels in one pass too: the offsets first, first + 1, ... along a new first axis.
    offsets = xp.arange(first, first + len(weights), dtype=xp.int64).reshape((-1,) + (1,) * base.ndim)
    return xp.clip(base + offsets, 0, last), weights


class PictureSampler:
    """Batches of ``(coordinates (n, 2) in [-1, 1], targets (n, channels) in [0, 1])``.

    Parameters
    ----------
    values : array ``(height, width, channels)``, uint8 (0-255) or float32 (0-1)
        The picture, on the device it trains on.  It is read, never copied.
    batch_size : int
    seed : int
    kind : {"lanczos", "bicubic", "bilinear", "spline", "centres"}
        The reconstruction filter between pixels (Lanczos-3, Keys' cubic with a = -0.5,
        bilinear, or the B-spline halfway between the one through the pixels and the one
        smoothing them, :data:`SPLINE_HALF`); ``centres`` samples whole pixels only (the picture
        as a set of points, as full-batch training sees it).  Samples on pixel centres take the
        pixel itself, whatever the filter.
    centred : float
        The share of each batch placed exactly on pixel centres (targets: the pixels
        themselves), which keeps the fit at the picture's own size sharp.

    A hash grid trained on pixel centres alone takes whole tiles instead (:class:`TileSampler`).
    """

    def __init__(self, values, batch_size: int, seed: int = 0, kind: str = "lanczos", centred: float = CENTRED):
        if kind not in FILTERS:
            raise ValueError(f"unknown filter {kind!r}: use one of {', '.join(FILTERS)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1 (got {batch_size})")
        self.values, self.batch_size, self.seed, self.kind = values, int(batch_size), int(seed), kind
        # Each period-th sample lies anywhere; the others sit on pixel centres.
        self.period = max(1, round(1 / (1 - centred))) if centred < 1 else self.batch_size + 1
        xp = get_array_module(values)
        # The samples on centres (all but each period-th) as indices, made on the device once: a
        # boolean mask would make every step count its True entries, which on a GPU reads the
        # count back (a sync).
        self._on_centres = None
        if self.period > 1:
            j = xp.arange(self.batch_size - -(-self.batch_size // self.period), dtype=xp.int64)
            self._on_centres = j + j // (self.period - 1) + 1
        self.height, self.width, self.channels = values.shape
        self.scale = np.float32(1 / 255) if values.dtype == np.uint8 else np.float32(1)
        self._rows = values.reshape(-1, self.channels)  # gathered whole (backend.take_rows)
        # What the filter's taps read, and its scale to [0, 1]: the pixels, or the spline's vertices
        # (made once, on the host, in [0, 1]'s units).
        self._taps_read, self._taps_scale = (self._rows, self.scale) if kind != "spline" else \
            (xp.asarray(halfway_vertices(values).reshape(-1, self.channels)), np.float32(1))
        self._last = xp.asarray([[self.width - 1], [self.height - 1]], dtype=xp.int64)  # the last column and row
        # Positions stay below these (float32 rounding can carry ``255 + 0.99999994`` to 256).
        self._below = (np.nextafter(np.float32(self.width), np.float32(0)),
                       np.nextafter(np.float32(self.height), np.float32(0)))

    @property
    def pixels(self) -> int:
        return self.width * self.height

    def __call__(self, step: int):
        """The batch of ``step``: every sample on its pixel's centre but each ``period``-th, which
        lies anywhere (spread evenly over the picture, since positions run in scan order).
        On a GPU, one kernel draws the same batch (:func:`.batch_kernel.picture_batch`)."""
        if batch_kernel.applies(self):
            return batch_kernel.picture_batch(self, step_key(self.seed, step))
        px, py = self.positions(step)
        xp = get_array_module(px)
        if self.kind == "centres":
            return self.coordinates(*self._centred(px, py)), self.targets(px, py, centres=True)
        anywhere, centred = slice(None, None, self.period), self._on_centres
        targets = xp.empty((self.batch_size, self.channels), dtype=np.float32)
        targets[anywhere] = self.targets(px[anywhere], py[anywhere])
        if centred is not None:
            px[centred], py[centred] = self._centred(px[centred], py[centred])
            targets[centred] = self.targets(px[centred], py[centred], centres=True)
        return self.coordinates(px, py), targets

    @staticmethod
    def _centred(px, py):
        xp = get_array_module(px)
        return xp.floor(px) + np.float32(0.5), xp.floor(py) + np.float32(0.5)

    def positions(self, step: int):
        """Pixel-unit positions ``(px, py)`` of the batch of ``step``, uniform over the picture.

        Stratified in scan order: sample ``i`` lies in the ``i``-th of ``batch_size`` equal
        stretches of the picture read row by row, at a random point of it and a random height
        within its row.  That covers the picture more evenly than independent draws, and the
        batch reads the picture (and the hash tables) in memory order, which makes the gathers
        several times faster on a large picture than random order (with the layout below;
        measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
        """
        xp = get_array_module(self.values)
        u = uniform(xp, self.seed, step, (2, self.batch_size))
        stretch = self.pixels / self.batch_size
        along = (xp.arange(self.batch_size, dtype=xp.float64) + u[0]) * stretch  # float64: exact past 2**24
        row = xp.minimum(xp.floor(along / self.width), self.height - 1)
        px = (along - row * self.width).astype(xp.float32)
        py = row.astype(xp.float32) + u[1]
        return xp.minimum(px, self._below[0]), xp.minimum(py, self._below[1])

    def coordinates(self, px, py):
        """Pixel-unit positions -> network inputs in [-1, 1] (``x = 2 px / width - 1``)."""
        xp = get_array_module(px)
        coords = xp.empty((len(px), 2), dtype=np.float32)
        coords[:, 0] = px * np.float32(2 / self.width) - np.float32(1)
        coords[:, 1] = py * np.float32(2 / self.height) - np.float32(1)
        return coords

    def targets(self, px, py, centres: bool = False):
        """The filtered picture at pixel-unit positions: ``(n, channels)`` float32 in [0, 1].
        With ``centres``, the positions are pixel centres, where every filter gives the pixel."""
        xp = get_array_module(px)
        if centres or self.kind == "centres":
            cols, rows = xp.floor(px).astype(xp.int64), xp.floor(py).astype(xp.int64)
            return self._gather(rows * self.width + cols) * self.scale
        # Both axes in one pass of each operation (a GPU launches half as many): (k, 2, n).
        index, weight = _taps(xp.stack([px, py]), self._last, self.kind, xp)
        (ix, iy), (wx, wy) = index.swapaxes(0, 1), weight.swapaxes(0, 1)  # (k, n) each
        k, n = ix.shape
        # Tap-major (ky, kx, n): every broadcast below runs along the samples, a long inner loop
        # (sample-major (n, ky, kx) runs loops of k values, or copies at each reshape: much the
        # slower; measured: docs/benchmark-log.md, '(f) How far is a step from its floor?').
        flat = iy[:, None, :] * self.width + ix[None, :, :]
        window = take_rows(self._taps_read, flat.reshape(k * k, n)).astype(np.float32)  # (ky kx, n, c)
        weights = (wy * self._taps_scale)[:, None, :] * wx[None, :, :]
        out = xp.einsum("jn,jnc->nc", weights.reshape(k * k, n), window)
        return xp.clip(out, 0, 1, out=out)  # cubic overshoot at hard edges

    def _gather(self, flat):
        return take_rows(self._rows, flat).astype(np.float32)


def halfway_vertices(values) -> np.ndarray:
    """The ``spline`` filter's vertices for a picture ``(height, width, channels)`` (uint8 or float32
    in [0, 1]): :data:`SPLINE_HALF` of the interpolating B-spline's coefficients plus the rest of the
    pixels, float32 in [0, 1]'s units, on the host."""
    pixels = as_float(to_host(values))
    through = bspline_coefficients(pixels)
    through *= np.float32(SPLINE_HALF)
    through += np.float32(1 - SPLINE_HALF) * pixels
    return through


class TileSampler:
    """Batches of whole tiles of pixels: ``(Lattice of the tile's pixel centres, its pixels)``.

    The picture is cut into a grid of tiles of about ``batch_size`` pixels each (``columns x
    rows``, as even as whole pixels allow), and each epoch visits every tile once, in an order
    that is a pure function of ``(seed, epoch)``.  Every pixel then weighs the same, and a hash
    grid reads a tile's dense levels as two matrix products (see :class:`~ironlearn.nn.HashGrid`),
    its gradient and the optimizer's update confined to the rectangle of vertices under the
    tile, an order of magnitude shorter a step than runs of 16 pixels along rows (measured:
    docs/benchmark-log.md, 'Measurements the code's comments quoted').

    Parameters
    ----------
    values : array ``(height, width, channels)``, uint8 (0-255) or float32 (0-1)
        The picture, on the device it trains on; read, never copied whole.
    batch_size : int
        Pixels a tile, about: tiles are about ``sqrt(batch_size)`` pixels across.
    seed : int
    """

    def __init__(self, values, batch_size: int, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1 (got {batch_size})")
        self.values, self.batch_size, self.seed = values, int(batch_size), int(seed)
        self.height, self.width, self.channels = values.shape
        columns = min(self.width, max(1, round(self.width / math.sqrt(self.batch_size))))
        rows = min(self.height, max(1, round(self.width * self.height / columns / self.batch_size)))
        # Tile edges, in pixels, along x and y.
        self._edges = [np.linspace(0, n, count + 1).round().astype(int) for n, count in
                       ((self.width, columns), (self.height, rows))]
        self._axes = axis(self.width), axis(self.height)
        self.scale = np.float32(1 / 255) if values.dtype == np.uint8 else np.float32(1)
        self._order = (None, None)  # (epoch, its order of the tiles)

    @property
    def tiles(self) -> int:
        """Tiles in the picture: steps an epoch."""
        return (len(self._edges[0]) - 1) * (len(self._edges[1]) - 1)

    def __call__(self, step: int):
        epoch, index = divmod(int(step), self.tiles)
        if self._order[0] != epoch:  # drawn on the host: a tile's place is a slice, no device read
            self._order = (epoch, np.argsort(uniform(np, self.seed, epoch, (self.tiles,)), kind="stable"))
        row, column = divmod(int(self._order[1][index]), len(self._edges[0]) - 1)
        (x0, x1), (y0, y1) = self._edges[0][column:column + 2], self._edges[1][row:row + 2]
        lattice = Lattice(self._axes[0][x0:x1], self._axes[1][y0:y1])
        pixels = self.values[y0:y1, x0:x1].reshape(-1, self.channels).astype(np.float32)
        if self.scale != 1:
            pixels *= self.scale
        return lattice, pixels


class EveryPixel:
    """Every pixel each step, plus samples between pixels: the batch of a picture small enough to
    train whole.

    The pixels come as the same coordinate array every step, so a hash grid looks them up once
    for the whole run; that keeps the fit at the picture's own size as sharp and as fast as
    full-batch training.  The samples between pixels (a :class:`PictureSampler` with none on
    centres) ask for a continuous picture, where the pixels alone leave the network free.

    Each step is a list of two terms ``[(pixels' coordinates, pixels, 1 - weight), (coordinates
    between, filtered targets, weight)]`` (see :class:`~ironlearn.train.Trainer`).  ``weight`` is
    the share of the loss the samples between carry; by default, their share of the samples, so
    that the loss is the mean over every sample of the step.
    """

    def __init__(self, values, coordinates, seed: int = 0, kind: str = "lanczos", between: float = BETWEEN["rgb"],
                 weight: float | None = None):
        height, width, channels = values.shape
        self.coordinates = coordinates
        self.pixels = as_float(values).reshape(-1, channels)
        self.between = PictureSampler(values, max(1, round(width * height * between)), seed, kind, centred=0.0)
        by_count = self.between.batch_size / (width * height + self.between.batch_size)
        self.weight = by_count if weight is None else float(weight)
        if not 0 <= self.weight < 1:
            raise ValueError(f"the samples between pixels need a weight in [0, 1) (got {weight})")

    def __call__(self, step: int) -> list:
        return [(self.coordinates, self.pixels, 1 - self.weight), (*self.between(step), self.weight)]
