"""Rounding the numbers a file holds besides the latents, each tensor to the step ``2**e`` that
the rate-distortion trade picks: the synthesis MLP's weights here, and with the same
:func:`weight_code` the finest levels' filters (:func:`.search.filters.fit_filters`).

A tensor's integers are coded under one quantised Laplace (:mod:`.bitstream.sections`) whose log-scale,
as the header stores it, is the one under which they take the fewest bits.
"""

from __future__ import annotations

import numpy as np

from .bitstream.entropy import best_log_scale, laplace_size
from .bitstream.header import STEP_EXPONENTS
from .shapes import MAX_SYMBOL


def weight_code(weight, exponent):
    """A tensor rounded to steps of ``2**exponent``: its integers and their model's log-scale."""
    q = np.clip(np.round(weight / 2.0 ** exponent), -MAX_SYMBOL, MAX_SYMBOL).astype(np.int32)
    return q, best_log_scale(q)


def quantise_weights(net, inputs, residual, lam, sample: int = 1 << 15, seed: int = 0) -> list:
    """Each MLP tensor's step, chosen in turn to minimise distortion + lambda * rate (the
    distortion measured on ``sample`` random pixels of ``inputs`` -> ``residual``):
    ``[(integers, exponent, log_scale)]``.  The MLP is left holding the rounded weights."""
    pixels = len(inputs)
    chosen_pixels = np.random.default_rng(seed).choice(pixels, min(sample, pixels), replace=False)
    inputs, residual = inputs[chosen_pixels], residual[chosen_pixels]
    chosen = []
    for weight in net.named_parameters().values():
        original = weight.copy()
        best = None
        for exponent in STEP_EXPONENTS:
            q, log_scale = weight_code(original, exponent)
            weight[...] = q * np.float32(2.0 ** exponent)
            error = net.forward(inputs) - residual
            cost = float(np.mean(error * error)) + lam * laplace_size(q, log_scale) / pixels
            if best is None or cost < best[0]:
                best = (cost, q, exponent, log_scale)
        _, q, exponent, log_scale = best
        weight[...] = q * np.float32(2.0 ** exponent)
        chosen.append((q, exponent, log_scale))
    return chosen
