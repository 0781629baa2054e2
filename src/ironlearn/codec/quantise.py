"""Rounding the numbers a file holds besides the latents, each tensor to the step ``2**e`` that
the rate-distortion trade picks: the synthesis MLP's weights, and the finest levels' filters.

A tensor's integers are coded under one quantised Laplace (:mod:`.bitstream`) whose log-scale,
as the header stores it, is the one under which they take the fewest bits.
"""

from __future__ import annotations

import math

import numpy as np

from . import entropy
from .entropy import laplace_bits
from .header import MAX_SYMBOL, STEP_EXPONENTS
from .pyramid import FILTER_OFFSETS, Pyramid, fit_filters as least_squares_filters


def laplace_size(symbols, log_scale) -> float:
    """Bits to code ``symbols`` under a Laplace of log-scale ``log_scale``."""
    return float(laplace_bits(symbols, log_scale).sum())


def mean_log_scale(symbols) -> float:
    """The continuous Laplace's estimate of ``symbols``' log-scale: ``log mean |q|``."""
    return math.log(max(float(np.mean(np.abs(symbols))), 1e-3))


def best_log_scale(symbols) -> float:
    """The log-scale (as the header stores it) under which ``symbols`` take the fewest bits: a
    search from :func:`mean_log_scale`, in steps of 1/16."""
    guess = mean_log_scale(symbols)
    candidates = [entropy.header_float(guess + d / 16) for d in range(-48, 17)]
    sample = symbols.reshape(-1)[:: max(1, symbols.size // 20000)]  # a fixed subsample: the search is cheap
    return min(candidates, key=lambda s: laplace_size(sample, s))


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


def fit_filters(picture, pyramid: Pyramid, lam: float, until: float | None = None) -> None:
    """Give the pyramid's finest levels the filters that :func:`.pyramid.fit_filters` finds
    (reading the picture until ``until``), each level's rounded to the step ``2**e`` that
    minimises distortion + ``lam`` * rate (the others held at their least-squares values); a
    level whose filter does not pay for its bits gets none."""
    fit = least_squares_filters(picture, pyramid, until)
    levels, gram, moment = fit["levels"], fit["gram"], fit["moment"]
    if not levels:
        return
    channels, taps = pyramid.channels, len(FILTER_OFFSETS)
    # (C, levels * taps); a pseudo-inverse, since a channel may be all zeros (gray in colour)
    chosen = (np.linalg.pinv(gram, rcond=1e-10, hermitian=True) @ moment[..., None])[..., 0]
    norm = fit["count"] * channels
    pixels = pyramid.height * pyramid.width

    def distortion(corrections):  # the change in mean squared error that they make
        return float(np.einsum("ci,cij,cj->", corrections, gram, corrections)
                     - 2 * np.einsum("ci,ci->", corrections, moment)) / norm

    for i, k in enumerate(levels):
        part = slice(i * taps, (i + 1) * taps)
        trial = chosen.copy()
        trial[:, part] = 0
        best = (distortion(trial), np.zeros((channels, taps)), None)
        for exponent in STEP_EXPONENTS:
            q, log_scale = weight_code(chosen[:, part], exponent)
            if not q.any():
                continue
            trial[:, part] = q * 2.0 ** exponent
            cost = distortion(trial) + lam * laplace_size(q, log_scale) / pixels
            if cost < best[0]:
                best = (cost, trial[:, part].copy(), (q, exponent))
        chosen[:, part] = best[1]
        pyramid.filters[k] = best[2]
