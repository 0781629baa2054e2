"""The latents trained, not only computed: the pyramid's latents refined against ``distortion +
lambda * rate``, every level at once, the picture drawn as the file draws it.

The analysis (:func:`.analysis.analyse`) fits each level to what the coarser ones left, coarsest
first, and rounds it: a good start, but greedy, and blind to what a latent costs and to the MLP
that corrects the picture after.  Here every level's latents move together, as real numbers
``y`` rounded on the way forward as the analysis rounds them (toward zero by its dead zone; a
straight-through gradient), down the gradient of the squared error of the picture the file
draws (through the filters, the upsampling, a banded product each way, and the synthesis MLP,
its weights held) plus lambda times the bits that each latent costs under its grid's entropy
model (:mod:`..bitstream.entropy`: a quantised Laplace whose scale the neighbours set, made
differentiable as the continuous Laplace's ``-log2`` probability of the latent's bin).

Each level steps by its own curvature (the squared error's second derivative along one of its
latents: its step squared times its upsampling's column norms), a share :data:`STEP_SIZE` of a
Newton step, annealed by a cosine over the time given.  The models and each latent's scale are
fitted again every :data:`MODEL_EVERY` steps; with a rate target, lambda follows the rate
(up when over, down when under).  Of the pyramids seen at the fits, the best that keeps to the
target (or the best trade) is returned: never one worse than the one given.

The encoder runs it once the MLP is trained and its weights rounded (``encoder._tuned``); what it
gains is measured in docs/compression.md, 'The latents tuned through the MLP'.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ...image.metrics import psnr_from_mse
from ...nn.layers import Linear, ReLU
from ..bitstream import entropy
from ..bitstream.sections import latent_models
from ..model.filters import filtered
from ..model.latents import Pyramid, upsampling
from ..model.network import FEATURE_GAIN
from ..shapes import MAX_SYMBOL
from .analysis import DEADZONE
from .banded import Banded
from .ratecontrol import trade

#: A level's step, as a share of its Newton step (its own curvature alone: the levels overlap, so
#: a full step overshoots).  Through the MLP, 20 steps from the same start on sporco's four at
#: 0.25 bpp: 0.08 gained +0.03 to +0.19 dB, 0.15 up to +0.52, 0.25 +0.20 to +0.69, 0.35 and 0.5
#: less again (docs/compression.md, 'The latents tuned through the MLP').
STEP_SIZE = 0.25
#: Steps between the entropy models' fits (each latent's scale, and the rate, measured then): the
#: best pyramid is chosen among those seen at the fits, and a refinement has 20 to 40 steps.
MODEL_EVERY = 10
#: The smallest scale a latent's rate is differentiated at: under it, a bin's bits rise so
#: steeply that one step throws the latent far past the next bin.
MIN_SCALE = 0.05
#: How lambda follows a rate target, each step: times ``(rate / target) ** RATE_FOLLOWING``,
#: within ``1 / LAMBDA_STEP`` and ``LAMBDA_STEP``.
RATE_FOLLOWING, LAMBDA_STEP = 4.0, 1.1
#: Steps between two estimates of the rate (and two moves of lambda) between fits.
RATE_EVERY = 4
#: Steps at most, whatever the time: a small picture's take milliseconds, where a 768x512
#: picture makes 25 to 30 in a 30 s encode.
MOST_STEPS = 100
#: The rate's weight in a step at most (lambda may be up to 1e308: its product must stay finite
#: in float32; each latent then moves a bin a step at most).
MAX_WEIGHT = 1e30


@functools.lru_cache(maxsize=32)
def _operators(pixels: int, level: int):
    """Level ``level``'s upsampling along an axis of ``pixels`` and its transpose, as
    :class:`Banded` matrices, and the mean squared norm of its columns."""
    matrix = upsampling(pixels, pixels, level)
    return Banded(matrix), Banded(np.ascontiguousarray(matrix.T)), float(np.mean((matrix ** 2).sum(axis=0)))


class _Frozen:
    """The synthesis MLP held still, run on a whole picture at once with each pixel a column (the
    levels' grids, laid one after another, are its inputs as they are: no transpose), for its
    gradient with respect to what it reads.  Its layers are the decoder's, Linear and ReLU
    (:func:`..model.network.build`), the feature gain folded into the first weights."""

    def __init__(self, net):
        self.layers = []
        for layer in net.layers:
            if isinstance(layer, Linear):
                weight = layer.params["weight"] * np.float32(FEATURE_GAIN if not self.layers else 1)
                self.layers.append((np.ascontiguousarray(weight.T), layer.params["bias"][:, None]))
            elif not isinstance(layer, ReLU):
                raise TypeError(f"the synthesis MLP holds Linear and ReLU layers (got {type(layer).__name__})")
        self.hidden = []

    def forward(self, inputs: np.ndarray) -> np.ndarray:
        """``(inputs, pixels)`` -> ``(outputs, pixels)``, keeping each hidden layer for :meth:`backward`."""
        self.hidden = []
        for index, (weight, bias) in enumerate(self.layers):
            inputs = weight @ inputs
            inputs += bias
            if index < len(self.layers) - 1:
                np.maximum(inputs, 0, out=inputs)
                self.hidden.append(inputs)
        return inputs

    def backward(self, grad: np.ndarray) -> np.ndarray:
        """The gradient ``(outputs, pixels)`` at the last :meth:`forward`'s outputs, carried back
        to its inputs."""
        for (weight, _), hidden in zip(reversed(self.layers), [*reversed(self.hidden), None]):
            grad = weight.T @ grad
            if hidden is not None:
                grad *= hidden > 0
        return grad


def _drawn(pyramid: Pyramid, integers: list, net: _Frozen | None = None) -> np.ndarray:
    """The picture the levels ``integers`` (each ``(C, h, w)``) draw at the pyramid's size, in
    decorrelated colours, through the pyramid's filters and ``net`` (or None): ``(C, H, W)``
    float32."""
    height, width, channels = pyramid.height, pyramid.width, pyramid.channels
    levels = np.empty((pyramid.levels, channels, height, width), np.float32)
    for k, q in enumerate(integers):
        grids = q * pyramid.steps[k][:, None, None]
        if pyramid.filters[k] is not None:
            grids = filtered(grids, pyramid.corrections(k))
        if k > 0:
            (up_y, _, _), (up_x, _, _) = _operators(height, k), _operators(width, k)
            grids = up_x.right(up_y.left(grids))
        levels[k] = grids
    out = levels.sum(axis=0)
    if net is not None:
        out += net.forward(levels.reshape(pyramid.levels * channels, -1)).reshape(out.shape)
    return out


def _with(pyramid: Pyramid, integers: list) -> Pyramid:
    refined = Pyramid(pyramid.height, pyramid.width, pyramid.channels, pyramid.levels, pyramid.steps, pyramid.cubic)
    refined.latents = [np.clip(q, -MAX_SYMBOL, MAX_SYMBOL).astype(np.int32) for q in integers]
    refined.filters = list(pyramid.filters)
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
    ``|y| = 1/2`` they grow linearly; within it, as ``-log2(1 - (e^-(1/2 - y)/b + e^-(1/2 + y)/b) / 2)``,
    whose derivative at ``|y| = 1/2`` is the line's: one formula serves both, ``|y|`` held at 1/2."""
    inverse = np.float32(1) / scale
    return _rate_gradient(y, inverse, np.exp(-inverse))


def _rate_gradient(y: np.ndarray, inverse: np.ndarray, across: np.ndarray) -> np.ndarray:
    """:func:`rate_gradient` given ``1 / scale`` and ``e^(-1 / scale)`` (fixed between two fits)."""
    inside = np.minimum(np.abs(y), np.float32(0.5))
    inside -= np.float32(0.5)
    inside *= inverse
    rise = np.exp(inside, out=inside)  # e^-(1/2 - |y|)/b
    fall = across / rise  # e^-(1/2 + |y|)/b
    spread = rise + fall
    spread *= np.float32(-0.5)
    spread += 1
    np.maximum(spread, np.float32(1e-12), out=spread)
    rise -= fall
    rise *= inverse
    rise /= spread
    rise *= np.float32(0.5 / math.log(2))
    return np.copysign(rise, y, out=rise)


def _estimated_bits(integers: list, scales: list) -> float:
    """The latents' bits under the scales of the last fit (a grid's model and its neighbours'
    activity held as they were then): what the rate is steered by between two fits."""
    return sum(float(entropy.laplace_bits(q[np.isfinite(b)], np.log(b[np.isfinite(b)])).sum())
               for q, b in zip(integers, scales))


def _integers(y: np.ndarray) -> np.ndarray:
    """Real latents ``y`` rounded as the analysis rounds, toward zero by :data:`DEADZONE`
    (float32): an integer ``n``'s bin is ``|y|`` in ``[n - DEADZONE, n + 1 - DEADZONE)``."""
    return np.copysign(np.floor(np.abs(y) + np.float32(DEADZONE)), y)


def refine(picture: np.ndarray, pyramid: Pyramid, lam: float, until: float, bits: float | None = None,
           steps: int | None = None, net=None, progress=None) -> Pyramid:
    """``pyramid``'s latents refined for ``picture`` (``(H, W, C)``, decorrelated colours)
    against ``distortion + lam * bits per pixel`` until the ``time.perf_counter()`` value
    ``until``, the picture drawn as the file draws it: through the pyramid's filters and, when
    given, the synthesis MLP ``net`` (its weights held).  With ``bits``, lambda follows the rate
    at each step (:data:`RATE_FOLLOWING`) so that the latents come within them.  The pyramid's
    steps and filters are kept.  Returns the best pyramid seen at a model fit (the given one,
    when none beat it).  ``steps``, when given, is how many steps to take whatever the time (the
    cosine runs over them; else over the steps that the time left allows at the steps' pace, at
    most :data:`MOST_STEPS`).
    ``progress``, if given, is called at each fit as ``progress("latents step", step, planned, psnr)``."""
    height, width, channels = picture.shape
    pixels, target = height * width, picture.transpose(2, 0, 1)
    curvature = [2.0 / (pixels * channels) * pyramid.steps[k] ** 2 *
                 (1.0 if k == 0 else _operators(height, k)[2] * _operators(width, k)[2])
                 for k in range(pyramid.levels)]
    # Each latent starts in the middle of its integer's bin.
    y = [q + np.float32(0.5 - DEADZONE) * np.sign(q).astype(np.float32) for q in pyramid.latents]
    frozen = None if net is None else _Frozen(net)
    started = last = time.perf_counter()
    best, step, longest = None, 0, 0.0
    while True:
        integers = [_integers(level) for level in y]
        error = _drawn(pyramid, integers, frozen)
        error -= target
        out_of_time = step >= steps if steps is not None else last + longest > until or step >= MOST_STEPS
        planned = steps or min(MOST_STEPS, step + max(1.0, (until - last) / max((last - started) / max(step, 1), 1e-9)))
        if step % MODEL_EVERY == 0 or out_of_time:
            current = _with(pyramid, integers)
            scales, spent = _scales_and_bits(current)
            held = [np.isinf(scale) for scale in scales]  # empty grids stay empty
            rate_terms = [(inverse, np.exp(-inverse)) for inverse in (np.float32(1) / scale for scale in scales)]
            correction = spent / max(_estimated_bits(integers, scales), 1.0)
            mse = float(np.mean(error * error))
            cost = (bits is not None and spent > bits, trade(mse, spent / pixels, lam) if bits is None else mse)
            if best is None or cost < best[0]:
                best = (cost, current)
            if progress is not None:
                progress("latents step", step, int(planned), psnr_from_mse(mse))
            if out_of_time:
                return best[1]
        elif bits is not None and step % RATE_EVERY == 0:
            spent = correction * _estimated_bits(integers, scales)
        if bits is not None and step % RATE_EVERY == 0:
            lam *= min(max((spent / bits) ** RATE_FOLLOWING, 1 / LAMBDA_STEP), LAMBDA_STEP)
        share = 0.5 * (1 + math.cos(math.pi * min(1.0, step / planned)))
        _step(pyramid, y, error, frozen, rate_terms, held, lam / pixels, [STEP_SIZE * share / c for c in curvature])
        step += 1
        now = time.perf_counter()
        longest, last = max(longest, now - last), now


def _step(pyramid: Pyramid, y: list, error: np.ndarray, frozen, rate_terms: list, held: list, weight: float,
          rates: list) -> None:
    """One step of every level's real latents ``y`` (in place) down the squared ``error``'s
    gradient (``(C, H, W)``, the drawn picture less the original) plus ``weight`` times their
    bits', each level at its ``rates`` ``(C,)``; latents where ``held`` stay."""
    channels, height, width = error.shape
    gradient = error * np.float32(2.0 / error.size)
    through_net = None if frozen is None else frozen.backward(gradient.reshape(channels, -1)).reshape(
        pyramid.levels, channels, height, width)
    for k in range(pyramid.levels):
        if held[k].all():
            continue
        at_level = gradient if through_net is None else gradient + through_net[k]
        if k > 0:
            (_, down_y, _), (_, down_x, _) = _operators(height, k), _operators(width, k)
            at_level = np.ascontiguousarray(down_x.right(down_y.left(at_level)))
        if pyramid.filters[k] is not None:  # a symmetric filter is its own adjoint but at the edges
            at_level = filtered(at_level, pyramid.corrections(k))
        grad = at_level * pyramid.steps[k][:, None, None]
        grad += np.float32(min(weight, MAX_WEIGHT)) * _rate_gradient(y[k], *rate_terms[k])
        grad[held[k]] = 0
        grad *= rates[k].astype(np.float32)[:, None, None]
        y[k] -= np.clip(grad, -1, 1, out=grad)  # a bin a step at most, whatever lambda
