"""The codec's network: a pyramid of latent grids, upsampled to the picture and read by a small MLP.

This is Cool-chic's design (Ladune et al. 2023) at its simplest.  Level ``k`` of the pyramid is
a grid of ``ceil(H / 2**k) x ceil(W / 2**k)`` numbers, one per block of ``2**k`` pixels a side,
from the picture's own resolution (``k = 0``) down to 1/64.  Each level is upsampled to the
output size by Keys' cubic interpolation (the "bicubic" of Pillow), and at each output pixel the
``L`` upsampled values feed a small ReLU MLP (ironlearn's :func:`~ironlearn.nn.mlp`) that
gives the pixel.  Rendering at another size only changes where the upsampling reads: the file
holds a continuous picture.

Upsampling is separable, a matrix along each axis (``U_y z U_x^T``), so forward and backward
are matrix products that BLAS runs at full speed; the native level (``k = 0``) at the native
size is the identity and costs nothing.
"""

from __future__ import annotations

import math

import numpy as np

from ..nn import mlp
from ..nn.layers import Layer

#: Levels of the pyramid at most: the native resolution down to 1/64.
MAX_LEVELS = 7


def level_shape(height: int, width: int, level: int) -> tuple[int, int]:
    """The grid of level ``level`` for a ``height x width`` picture: one value per block of
    ``2**level`` pixels a side, rounded up."""
    return -(-height // (1 << level)), -(-width // (1 << level))


def upsampling(size_out: int, pixels: int, level: int) -> np.ndarray:
    """The ``(size_out, cells)`` matrix that reads a level's grid along one axis at the centres of
    ``size_out`` output pixels spanning the picture's ``pixels``: Keys' cubic convolution
    (a = -0.5), clamped at the edges.  At the native size, level 0's matrix is the identity."""
    cells = -(-pixels // (1 << level))
    centres = (np.arange(size_out) + 0.5) * (pixels / size_out)  # in the picture's pixels
    position = centres / (1 << level) - 0.5  # in the level's cells, cell j centred at j
    base = np.floor(position).astype(np.int64)
    t = position - base
    t2, t3 = t * t, t * t * t
    weights = (-0.5 * t3 + t2 - 0.5 * t, 1.5 * t3 - 2.5 * t2 + 1, -1.5 * t3 + 2 * t2 + 0.5 * t, 0.5 * t3 - 0.5 * t2)
    matrix = np.zeros((size_out, cells))
    rows = np.arange(size_out)
    for offset, weight in zip((-1, 0, 1, 2), weights):
        np.add.at(matrix, (rows, np.clip(base + offset, 0, cells - 1)), weight)
    return matrix.astype(np.float32)


class LatentPyramid(Layer):
    """The latent grids as one layer: no input; its output is ``(H_out * W_out, levels)``, the
    levels upsampled to the output size, one column a level.

    Parameters
    ----------
    height, width : int
        The picture's size, which fixes each level's grid.
    levels : int
        ``1 .. MAX_LEVELS``.

    The grids are the parameters ``level0`` ... (float32, zeros to start, as Cool-chic's).
    :meth:`resize` sets the output size (the picture's own by default).  ``values``, when set
    (a list like the grids: their noisy or rounded values), is what forward reads instead of
    the parameters; the gradient is the same either way (rounding passes it straight through).
    """

    _cached = ("_matrices",)
    values = None

    def __init__(self, height: int, width: int, levels: int):
        super().__init__()
        if not 1 <= levels <= MAX_LEVELS:
            raise ValueError(f"levels must lie in 1..{MAX_LEVELS} (got {levels})")
        self.height, self.width, self.levels = height, width, levels
        self.params = {f"level{k}": np.zeros(level_shape(height, width, k), np.float32) for k in range(levels)}
        self.grads = {name: np.zeros_like(grid) for name, grid in self.params.items()}
        self.resize(height, width)

    def resize(self, height: int, width: int) -> None:
        """Upsample to ``height x width`` from now on."""
        self.out_height, self.out_width = height, width
        self._matrices = [(upsampling(height, self.height, k), upsampling(width, self.width, k))
                          for k in range(self.levels)]

    def grids(self) -> list:
        """The parameters, coarsest last."""
        return [self.params[f"level{k}"] for k in range(self.levels)]

    def _native(self, k: int) -> bool:
        return k == 0 and (self.out_height, self.out_width) == (self.height, self.width)

    def forward(self, x=None):
        """The levels upsampled, ``(H_out * W_out, levels)`` (``x`` is ignored: the pyramid is the
        network's input)."""
        grids = self.grids() if self.values is None else self.values
        out = np.empty((self.out_height, self.out_width, self.levels), np.float32)
        for k, (along_y, along_x) in enumerate(self._matrices):
            out[:, :, k] = grids[k] if self._native(k) else along_y @ grids[k] @ along_x.T
        return out.reshape(-1, self.levels)

    def backward(self, grad_out, need_grad_in: bool = False):
        grad = grad_out.reshape(self.out_height, self.out_width, self.levels)
        for k, (along_y, along_x) in enumerate(self._matrices):
            g = np.ascontiguousarray(grad[:, :, k])
            self.grads[f"level{k}"][...] = g if self._native(k) else along_y.T @ g @ along_x
        return None


def synthesis(levels: int, channels: int, width: int, depth: int, seed: int = 0):
    """The MLP that turns a pixel's ``levels`` latent values into its ``channels``."""
    return mlp(levels, channels, width=width, depth=depth, rng=np.random.default_rng(seed))


def laplace_bits(values, log_scale: float):
    """Bits to code each of ``values`` (integers, or integers plus noise) under a Laplace of mean
    0 and scale ``exp(log_scale)`` quantised to bins of width 1, with the derivatives of those
    bits in each value and in ``log_scale``: ``(bits, d_values, d_log_scale)``.

    The probability of a bin is floored at 2**-16 (the range coder's precision), where the
    derivatives are zero."""
    b = math.exp(log_scale)
    upper, lower = values + 0.5, values - 0.5

    def cdf(x):
        return 0.5 + 0.5 * np.sign(x) * (1 - np.exp(-np.abs(x) / b))

    def pdf(x):
        return np.exp(-np.abs(x) / b) / (2 * b)

    p = cdf(upper) - cdf(lower)
    floor = p < 2.0 ** -16
    p = np.where(floor, 2.0 ** -16, p)
    bits = -np.log2(p)
    scale = np.where(floor, 0.0, -1 / (math.log(2) * p))
    d_values = scale * (pdf(upper) - pdf(lower))
    # d cdf(x) / d b = -x exp(-|x| / b) / (2 b^2), and d b / d log_scale = b
    d_b = (-upper * np.exp(-np.abs(upper) / b) + lower * np.exp(-np.abs(lower) / b)) / (2 * b * b)
    d_log_scale = float(np.sum(scale * d_b) * b)
    return bits, d_values, d_log_scale
