"""The latents trained, not only computed: the analysis's pyramid refined against ``distortion +
lambda * rate``, every level at once.

The analysis (:func:`.analysis.analyse`) fits each level to what the coarser ones left, coarsest
first, and rounds it: a good start, but greedy, and blind to what a latent costs.  Here every
level's latents move together, as real numbers ``y`` rounded on the way forward (a
straight-through gradient), down the gradient of the squared error (through the upsampling, a
banded product each way) plus lambda times the bits that each latent costs under its grid's
entropy model (:mod:`..bitstream.entropy`: a quantised Laplace whose scale the neighbours set,
made differentiable as the continuous Laplace's ``-log2`` probability of the latent's bin).

Each level steps by its own curvature (the squared error's second derivative along one of its
latents: its step squared times its upsampling's column norms), a share :data:`STEP_SIZE` of a
Newton step, annealed by a cosine over the time given.  The models and each latent's scale are
fitted again every :data:`MODEL_EVERY` steps; with a rate target, lambda follows the rate there
(up when over, down when under).  Of the pyramids seen then, the best that keeps to the target
(or the best trade) is returned: never one worse than the analysis's.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ..bitstream import entropy
from ..bitstream.sections import latent_models
from ..model.latents import Pyramid, upsampling
from .banded import Banded
from .ratecontrol import trade

#: A level's step, as a share of its Newton step (its own curvature alone: the levels overlap,
#: so a full step overshoots; 0.5 diverged on kodim23 and monarch, 0.3 did not).
STEP_SIZE = 0.15
#: Steps between the entropy models' fits (each latent's scale, and the rate, measured then).
MODEL_EVERY = 20
#: The smallest scale a latent's rate is differentiated at: under it, a bin's bits rise so
#: steeply that one step throws the latent far past the next bin.
MIN_SCALE = 0.05
#: How lambda follows a rate target, each step: times ``(rate / target) ** RATE_FOLLOWING``,
#: within ``1 / LAMBDA_STEP`` and ``LAMBDA_STEP``.
RATE_FOLLOWING, LAMBDA_STEP = 4.0, 1.1
#: Steps between two estimates of the rate (and two moves of lambda) between fits.
RATE_EVERY = 4


@functools.lru_cache(maxsize=32)
def _operators(pixels: int, level: int):
    """Level ``level``'s upsampling along an axis of ``pixels`` and its transpose, as
    :class:`Banded` matrices, and the mean squared norm of its columns."""
    matrix = upsampling(pixels, pixels, level)
    return Banded(matrix), Banded(np.ascontiguousarray(matrix.T)), float(np.mean((matrix ** 2).sum(axis=0)))


def _drawn(pyramid: Pyramid, integers: list) -> np.ndarray:
    """The picture the levels ``integers`` (each ``(C, h, w)``) draw at the pyramid's size, in
    decorrelated colours, unfiltered: ``(C, H, W)`` float32."""
    height, width = pyramid.height, pyramid.width
    out = np.zeros((pyramid.channels, height, width), np.float32)
    for k, q in enumerate(integers):
        grids = q * pyramid.steps[k][:, None, None]
        if k == 0:
            out += grids
        else:
            (up_y, _, _), (up_x, _, _) = _operators(height, k), _operators(width, k)
            out += up_x.right(up_y.left(grids))
    return out


def _with(pyramid: Pyramid, integers: list) -> Pyramid:
    refined = Pyramid(pyramid.height, pyramid.width, pyramid.channels, pyramid.levels, pyramid.steps, pyramid.cubic)
    refined.latents = [q.astype(np.int32) for q in integers]
    return refined


def _scales_and_bits(pyramid: Pyramid) -> tuple[list, float]:
    """Each latent's Laplace scale under its grid's best model (inf in a grid of zeros, which the
    file holds for free and which stays so), and the latents' bits."""
    models = latent_models(pyramid)
    scales = []
    for k in range(pyramid.levels):
        level = np.full(pyramid.latents[k].shape, np.inf)
        for c in range(pyramid.channels):
            if models[k, c] is None:
                continue
            parent = pyramid.latents[k + 1][c] if k + 1 < pyramid.levels else None
            log_scales = models[k, c][0].log_scales()[entropy.classes(entropy.activity(pyramid.latents[k][c], parent))]
            level[c] = np.exp(np.maximum(log_scales, math.log(MIN_SCALE)))
        scales.append(level.astype(np.float32))
    return scales, sum(found[1] for found in models.values() if found is not None)


def rate_gradient(y: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The derivative in ``y`` of ``-log2`` of the probability of the bin ``[y - 1/2, y + 1/2]``
    under a Laplace of mean 0 and ``scale``: the bits a latent costs, made continuous.  Past
    ``|y| = 1/2`` they grow linearly; within it, as ``-log2(1 - (e^-(1/2 - y)/b + e^-(1/2 + y)/b) / 2)``."""
    out = np.sign(y) / (scale * np.float32(math.log(2)))
    near = np.abs(y) < 0.5
    y_in, b_in = y[near], scale[near]
    rise, fall = np.exp(-(0.5 - y_in) / b_in), np.exp(-(0.5 + y_in) / b_in)
    out[near] = 0.5 * (rise - fall) / b_in / (np.maximum(1 - 0.5 * (rise + fall), 1e-12) * np.float32(math.log(2)))
    return out


def _estimated_bits(integers: list, scales: list) -> float:
    """The latents' bits under the scales of the last fit (a grid's model and its neighbours'
    activity held as they were then): what the rate is steered by between two fits."""
    return sum(float(entropy.laplace_bits(q[np.isfinite(b)], np.log(b[np.isfinite(b)])).sum())
               for q, b in zip(integers, scales))


def refine(picture: np.ndarray, pyramid: Pyramid, lam: float, until: float, bits: float | None = None,
           steps: int | None = None) -> Pyramid:
    """``pyramid``'s latents refined for ``picture`` (``(H, W, C)``, decorrelated colours)
    against ``distortion + lam * bits per pixel`` until the ``time.perf_counter()`` value
    ``until``; with ``bits``, lambda follows the rate at each step (:data:`RATE_FOLLOWING`) so
    that the latents come within them.  The pyramid's steps are kept and its filters dropped
    (fit them after).  Returns the best pyramid seen at a model fit (the analysis's own, when
    none beat it).  ``steps``, when given, is how many steps to take whatever the time (the
    cosine runs over them; else over the steps that the time left allows at the steps' pace)."""
    height, width, channels = picture.shape
    pixels, target = height * width, picture.transpose(2, 0, 1)
    curvature = [2.0 / (pixels * channels) * pyramid.steps[k] ** 2 *
                 (1.0 if k == 0 else _operators(height, k)[2] * _operators(width, k)[2])
                 for k in range(pyramid.levels)]
    y = [q.astype(np.float32) for q in pyramid.latents]
    started = last = time.perf_counter()
    best, step, longest = None, 0, 0.0
    while True:
        integers = [np.round(level) for level in y]
        error = _drawn(pyramid, integers) - target
        out_of_time = step >= steps if steps is not None else last + longest > until
        if step % MODEL_EVERY == 0 or out_of_time:
            current = _with(pyramid, integers)
            scales, spent = _scales_and_bits(current)
            correction = spent / max(_estimated_bits(integers, scales), 1.0)
            mse = float(np.mean(error * error))
            cost = (bits is not None and spent > bits, trade(mse, spent / pixels, lam) if bits is None else mse)
            if best is None or cost < best[0]:
                best = (cost, current)
            if out_of_time:
                return best[1]
        elif bits is not None and step % RATE_EVERY == 0:
            spent = correction * _estimated_bits(integers, scales)
        if bits is not None and step % RATE_EVERY == 0:
            lam *= min(max((spent / bits) ** RATE_FOLLOWING, 1 / LAMBDA_STEP), LAMBDA_STEP)
        planned = steps or step + max(1.0, (until - last) / max((last - started) / max(step, 1), 1e-9))
        share = 0.5 * (1 + math.cos(math.pi * min(1.0, step / planned)))
        gradient = error * np.float32(2.0 / (pixels * channels))
        for k in range(pyramid.levels):
            if k == 0:
                back = gradient
            else:
                (_, down_y, _), (_, down_x, _) = _operators(height, k), _operators(width, k)
                back = down_x.right(down_y.left(gradient))
            grad = back * pyramid.steps[k][:, None, None] + lam / pixels * rate_gradient(y[k], scales[k])
            grad[np.isinf(scales[k])] = 0  # an empty grid stays empty
            y[k] -= (STEP_SIZE * share) * grad / curvature[k][:, None, None]
        step += 1
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
