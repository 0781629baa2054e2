"""Losses: each returns ``(value, grad)``.

``value`` is a 0-d array on the predictions' device: reading it back to the
host is the caller's choice (and a GPU sync), so a training step never does it.
``grad`` is d(value)/d(pred), with the shape of ``pred``.
"""

from __future__ import annotations

from .. import fused
from ..backend import get_array_module


def mse(pred, target):
    """Mean squared error over every element.

    Parameters
    ----------
    pred, target : arrays of the same shape ``(batch, channels)``
    """
    return fused.squared_error(pred, target)  # on a GPU, two launches


def bce(pred, target, eps: float = 1e-7):
    """Binary cross-entropy of probabilities ``pred`` against 0/1 (or soft) ``target``.

    Predictions are clipped to ``[eps, 1 - eps]`` first, so a prediction of
    exactly 0 or 1 gives a large but finite loss instead of ``log(0) = -inf``
    and a NaN gradient.
    """
    xp = get_array_module(pred)
    p = xp.clip(pred, eps, 1.0 - eps)
    one_minus_p = 1.0 - p
    value = -(target * xp.log(p) + (1.0 - target) * xp.log(one_minus_p)).mean()
    grad = (p - target) / (p * one_minus_p)
    grad *= 1.0 / pred.size
    return value, grad

