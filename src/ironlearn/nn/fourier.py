"""Random Fourier features (Tancik et al. 2020): a fixed random Gaussian projection
``z = 2 pi x B`` of ``(n, 2)`` coordinates in [-1, 1], encoded as ``[sin z, cos z]`` for a small
MLP to turn into pixels."""

from __future__ import annotations

import math

import numpy as np

from ..backend import get_array_module
from .layers import Layer, bound_arguments, check_count, check_positive, register


@register
class FourierFeatures(Layer):
    """Random Fourier features: ``[sin(2 pi x B), cos(2 pi x B)]``.

    Parameters
    ----------
    in_features : int
        Coordinate dimension (2 for images).
    frequencies : int
        Columns of ``B``; the output has ``2 * frequencies`` features.
    sigma : float
        Standard deviation of ``B``'s entries, in cycles per unit of input:
        larger sigma, finer detail (and more noise when too large).
    rng : numpy.random.Generator

    ``B`` is a buffer: saved and loaded with the model, never trained.
    """

    _cached = ("_out",)

    def __init__(self, in_features: int = 2, frequencies: int = 128, sigma: float = 10.0, *, rng):
        super().__init__()
        if frequencies < 1 or not sigma > 0:
            raise ValueError(f"need frequencies >= 1 and sigma > 0 (got {frequencies}, {sigma})")
        self.in_features, self.frequencies, self.sigma = in_features, frequencies, float(sigma)
        projection = rng.normal(0.0, self.sigma, size=(in_features, frequencies)) * (2 * math.pi)
        self.buffers = {"projection": projection.astype(np.float32)}

    def config(self) -> dict:
        return {"in_features": self.in_features, "frequencies": self.frequencies, "sigma": self.sigma}

    @classmethod
    def shapes(cls, config: dict) -> tuple[dict, int, int]:
        arguments = bound_arguments(cls, config)
        n_in = check_count(arguments["in_features"], "in_features")
        frequencies = check_count(arguments["frequencies"], "frequencies")
        check_positive(arguments["sigma"], "sigma")
        return {"projection": (n_in, frequencies)}, n_in, 2 * frequencies

    def forward(self, x):
        xp = get_array_module(x)
        z = x @ self.buffers["projection"]
        m = self.frequencies
        out = xp.empty((len(x), 2 * m), dtype=z.dtype)
        xp.sin(z, out=out[:, :m])
        xp.cos(z, out=out[:, m:])
        self._out = out  # holds sin z and cos z: all that backward needs
        return out

    def backward(self, grad_out, need_grad_in: bool = True):
        if not need_grad_in:
            return None
        m = self.frequencies
        sin_z, cos_z = self._out[:, :m], self._out[:, m:]
        # d sin z = cos z dz, d cos z = -sin z dz
        grad_z = grad_out[:, :m] * cos_z - grad_out[:, m:] * sin_z
        return grad_z @ self.buffers["projection"].T
