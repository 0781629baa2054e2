"""Weight initialisers: each draws a float32 host array from an explicit generator."""

from __future__ import annotations

import math
import numbers

import numpy as np


def generator(rng) -> np.random.Generator:
    """``rng`` as a Generator: a Generator as it is, a whole number as the seed of a new one (so
    ``mlp(2, 1, rng=0)`` works as ``rng=np.random.default_rng(0)`` does)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)) or a whole-number seed "
                    f"(got {type(rng).__name__})")


def uniform(rng: np.random.Generator, shape, bound: float) -> np.ndarray:
    """U(-bound, +bound), float32."""
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def xavier_uniform(rng, fan_in: int, fan_out: int) -> np.ndarray:
    """Glorot uniform for tanh/sigmoid layers: bound sqrt(6 / (fan_in + fan_out))."""
    return uniform(rng, (fan_in, fan_out), math.sqrt(6.0 / (fan_in + fan_out)))


def he_uniform(rng, fan_in: int, fan_out: int) -> np.ndarray:
    """He uniform for ReLU layers: bound sqrt(6 / fan_in)."""
    return uniform(rng, (fan_in, fan_out), math.sqrt(6.0 / fan_in))


def siren_uniform(rng, fan_in: int, fan_out: int, w0: float = 30.0, first: bool = False) -> np.ndarray:
    """SIREN (Sitzmann et al. 2020): U(-1/fan_in, 1/fan_in) for the first layer,
    U(-sqrt(6/fan_in)/w0, +sqrt(6/fan_in)/w0) after it, so every sine sees
    arguments spread over a few periods whatever the depth."""
    bound = 1.0 / fan_in if first else math.sqrt(6.0 / fan_in) / w0
    return uniform(rng, (fan_in, fan_out), bound)


INITS = {
    "xavier": xavier_uniform,
    "he": he_uniform,
    "siren": siren_uniform,
    "siren_first": lambda rng, fan_in, fan_out, w0=30.0: siren_uniform(rng, fan_in, fan_out, w0, first=True),
}
