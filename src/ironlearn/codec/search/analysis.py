"""The encoder's analysis: a picture as the latents of a pyramid at a quantisation step, computed
closed-loop, coarsest level first, rather than trained."""

from __future__ import annotations

import functools

import numpy as np

from ..model.latents import Pyramid, upsampling
from ..shapes import MAX_SYMBOL, level_shape
from .banded import Banded

#: Analysis rounds ``|z| / step + DEADZONE`` down: a value under ``(1 - DEADZONE)`` steps becomes 0,
#: which saves more bits than it costs in error (0.35 against plain rounding's 0.5 gained at both
#: rates tried on the four sporco photographs; measured: docs/benchmark-log.md, 'Measurements the
#: code's comments quoted').
DEADZONE = 0.35
#: Each coarser level's step is the finer one's divided by this (a coarse latent's error spreads
#: over four times the pixels of the level below's)...
LEVEL_RATIO = 2.0
#: ...except that the levels from ``COARSE_LEVEL`` on take steps ``COARSE_GAIN`` times larger
#: (level 4's step is then level 3's): x2 gained on the four sporco photographs, with the filters,
#: and x1.5 and x3 less (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
COARSE_LEVEL, COARSE_GAIN = 4, 2.0


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
    many times as long and, at 8192 pixels, gigabytes of workspace."""
    matrix = upsampling(pixels, pixels, level).astype(np.float64)
    return Banded(matrix), Banded(np.linalg.solve(matrix.T @ matrix, matrix.T))
