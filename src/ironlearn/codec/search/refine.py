"""The latents trained, not only computed: the pyramid's latents refined against ``distortion +
lambda * rate``, every level at once, the picture drawn as the file draws it.

The analysis (:func:`.analysis.analyse`) fits each level to what the coarser ones left, coarsest
first, and rounds it: a good start, but greedy, and blind to what a latent costs and to the MLP
that corrects the picture after.  Here every level's latents move together, as real numbers
``y`` rounded on the way forward as the analysis rounds them (toward zero by its dead zone; a
straight-through gradient), down the gradient of the squared error of the picture the file
draws (through the filters, the upsampling, a banded product each way, and the synthesis MLP,
whose weights train with them on Adam where the encoder asks) plus lambda times the bits that each latent costs under its grid's entropy
model (:mod:`..bitstream.entropy`: a quantised Laplace whose scale the neighbours set, made
differentiable as the continuous Laplace's ``-log2`` probability of the latent's bin).

The latents are a model (:class:`Latents`) that the one :class:`~ironlearn.train.Trainer`
trains, as a fit's network is trained, on plain SGD: each level steps by its own curvature (the
squared error's second derivative along one of its latents: its step squared times its
upsampling's column norms), a share :data:`STEP_SIZE` of a Newton step, annealed by a cosine
that :func:`~ironlearn.train.timed.run_planned` keeps to the time given, re-planned as the pace
drifts.  A callback fits the models and each latent's scale again every :data:`MODEL_EVERY`
steps and, with a rate target, moves lambda with the rate (up when over, down when under).  Of
the pyramids seen at the fits, the best that keeps to the target (or the best trade) is
returned: never one worse than the one given.

The encoder runs it once the MLP is trained and its weights rounded (``encoder._tuned``); what it
gains is measured in docs/compression.md, 'The tuning: the latents and the MLP trained together'.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ...backend import Backend, get_array_module
from ...image.metrics import psnr_from_mse
from ...nn import mse
from ...nn.layers import Linear, ReLU
from ...optim import SGD, Adam, cosine
from ...train import Callback, Trainer
from ...train.timed import CosinePlan, run_planned
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
#: less again (measured: docs/benchmark-log.md, 'compression.md as it stood before it became
#: documentation', 'The latents tuned through the MLP').
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
#: picture makes 25 to 30 in a 30 s encode (measured: the same page and section as :data:`STEP_SIZE`).
MOST_STEPS = 100
#: Adam's rate for the MLP's weights when they train with the latents, times the latents' cosine
#: (the MLP's own training starts at 1e-2 and ends at 1e-4).
NET_LR = 1e-3
#: The rate's weight in a step at most (lambda may be up to 1e308: its product must stay finite
#: in float32; each latent then moves a bin a step at most).
MAX_WEIGHT = 1e30


@functools.lru_cache(maxsize=32)
def _operators(pixels: int, level: int):
    """Level ``level``'s upsampling along an axis of ``pixels`` and its transpose, as
    :class:`Banded` matrices, and the mean squared norm of its columns."""
    matrix = upsampling(pixels, pixels, level)
    return Banded(matrix), Banded(np.ascontiguousarray(matrix.T)), float(np.mean((matrix ** 2).sum(axis=0)))


class _Device:
    """The arrays a refinement's arithmetic reads, on the device it runs on (``backend``; on the
    CPU the host's arrays themselves): each level's upsampling and its transpose along each axis,
    its steps and its filter."""

    def __init__(self, pyramid: Pyramid, backend):
        self.backend, self.xp = backend, backend.xp
        height, width = pyramid.height, pyramid.width
        self.steps = [self.put(steps)[:, None, None] for steps in pyramid.steps]
        self.corrections = [None if pyramid.filters[k] is None else self.put(pyramid.corrections(k))
                            for k in range(pyramid.levels)]
        self.operators = [None] + [tuple(self._moved(*_operators(pixels, k)) for pixels in (height, width))
                                   for k in range(1, pyramid.levels)]

    def put(self, array):
        """``array`` on the device, its type kept (on the CPU, itself)."""
        return array if self.backend.device == "cpu" else self.backend.asarray(array, dtype=array.dtype)

    def _moved(self, up, down, norm) -> tuple:
        return up.to(self.backend), down.to(self.backend), norm


class _Synthesis:
    """The synthesis MLP run on a whole picture at once with each pixel a column (the levels'
    grids, laid one after another, are its inputs as they are: no transpose), for its gradient
    with respect to what it reads and, when it trains too, to its weights.  Its layers are the
    decoder's, Linear and ReLU (:func:`..model.network.build`), copied, the feature gain folded
    into the first weights."""

    def __init__(self, net, device: _Device | None = None):
        self.layers, self.backend = [], Backend("cpu") if device is None else device.backend
        put = (lambda array: array) if device is None else device.put
        for layer in net.layers:
            if isinstance(layer, Linear):
                weight = layer.params["weight"] * np.float32(FEATURE_GAIN if not self.layers else 1)
                self.layers.append((put(np.ascontiguousarray(weight.T)), put(layer.params["bias"][:, None].copy())))
            elif not isinstance(layer, ReLU):
                raise TypeError(f"the synthesis MLP holds Linear and ReLU layers (got {type(layer).__name__})")
        self.hidden, self.grads = [], {}

    def named_parameters(self) -> dict:
        """Its weights and biases by name, ``(out, in)`` and ``(out, 1)``: what it trains."""
        return {f"mlp {i} {kind}": array for i, layer in enumerate(self.layers)
                for kind, array in zip(("weight", "bias"), layer)}

    def into(self, net) -> None:
        """Write its weights into ``net`` (the feature gain taken out again)."""
        linear = [layer for layer in net.layers if isinstance(layer, Linear)]
        for i, (layer, (weight, bias)) in enumerate(zip(linear, self.layers)):
            layer.params["weight"][...] = self.backend.to_host(weight.T / np.float32(FEATURE_GAIN if i == 0 else 1))
            layer.params["bias"][...] = self.backend.to_host(bias[:, 0])

    def forward(self, inputs: np.ndarray) -> np.ndarray:
        """``(inputs, pixels)`` -> ``(outputs, pixels)``, keeping each layer's input for :meth:`backward`."""
        self.hidden = [inputs]
        for index, (weight, bias) in enumerate(self.layers):
            inputs = weight @ inputs
            inputs += bias
            if index < len(self.layers) - 1:
                get_array_module(inputs).maximum(inputs, 0, out=inputs)
                self.hidden.append(inputs)
        return inputs

    def backward(self, grad: np.ndarray, weights: bool = False) -> np.ndarray:
        """The gradient ``(outputs, pixels)`` at the last :meth:`forward`'s outputs, carried back
        to its inputs; with ``weights``, its weights' gradients kept in :attr:`grads` by name."""
        for index in reversed(range(len(self.layers))):
            weight, _ = self.layers[index]
            if weights:
                self.grads[f"mlp {index} weight"] = grad @ self.hidden[index].T
                self.grads[f"mlp {index} bias"] = grad.sum(axis=1, keepdims=True)
            grad = weight.T @ grad
            if index > 0:
                grad *= self.hidden[index] > 0
        return grad


class _Joint(SGD):
    """Plain SGD for the latents (their steps made in :meth:`Latents.backward`) and Adam for the
    MLP's weights, at :data:`NET_LR` times the same schedule."""

    def __init__(self, latents: dict, net: dict):
        super().__init__({**latents, **net})
        self.net = Adam(net, lr=lambda step: NET_LR * self.schedule(step))

    def _update_together(self, grads: dict, lr) -> list:
        self.net.step({name: grads[name] for name in self.net.params})
        return [name for name in self.params if name not in self.net.params]


def _drawn(pyramid: Pyramid, integers: list, net: _Synthesis | None = None, device: _Device | None = None):
    """The picture the levels ``integers`` (each ``(C, h, w)``) draw at the pyramid's size, in
    decorrelated colours, through the pyramid's filters and ``net`` (or None): ``(C, H, W)``
    float32, on ``device`` (default the CPU)."""
    device = device or _Device(pyramid, Backend("cpu"))
    height, width, channels = pyramid.height, pyramid.width, pyramid.channels
    levels = device.xp.empty((pyramid.levels, channels, height, width), np.float32)
    for k, q in enumerate(integers):
        grids = q * device.steps[k]
        if device.corrections[k] is not None:
            grids = filtered(grids, device.corrections[k])
        if k > 0:
            (up_y, _, _), (up_x, _, _) = device.operators[k]
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
    return _rate_gradient(y, inverse, get_array_module(inverse).exp(-inverse))


def _rate_gradient(y: np.ndarray, inverse: np.ndarray, across: np.ndarray) -> np.ndarray:
    """:func:`rate_gradient` given ``1 / scale`` and ``e^(-1 / scale)`` (fixed between two fits)."""
    xp = get_array_module(y)
    inside = xp.minimum(xp.abs(y), np.float32(0.5))
    inside -= np.float32(0.5)
    inside *= inverse
    rise = xp.exp(inside, out=inside)  # e^-(1/2 - |y|)/b
    fall = across / rise  # e^-(1/2 + |y|)/b
    spread = rise + fall
    spread *= np.float32(-0.5)
    spread += 1
    xp.maximum(spread, np.float32(1e-12), out=spread)
    rise -= fall
    rise *= inverse
    rise /= spread
    rise *= np.float32(0.5 / math.log(2))
    return xp.copysign(rise, y, out=rise)


def _estimated_bits(integers: list, scales: list) -> float:
    """The latents' bits under the scales of the last fit (a grid's model and its neighbours'
    activity held as they were then): what the rate is steered by between two fits."""
    return sum(float(entropy.laplace_bits(q[np.isfinite(b)], np.log(b[np.isfinite(b)])).sum())
               for q, b in zip(integers, scales))


def _integers(y: np.ndarray) -> np.ndarray:
    """Real latents ``y`` rounded as the analysis rounds, toward zero by :data:`DEADZONE`
    (float32): an integer ``n``'s bin is ``|y|`` in ``[n - DEADZONE, n + 1 - DEADZONE)``."""
    xp = get_array_module(y)
    return xp.copysign(xp.floor(xp.abs(y) + np.float32(DEADZONE)), y)


class Latents:
    """Every level's real latents ``y`` as a model that a :class:`~ironlearn.train.Trainer`
    trains: its forward draws the picture as the file would from the latents rounded (the analysis'
    rounding, :func:`_integers`), through the pyramid's filters and the MLP ``net`` (or None), held
    or, with ``train_net``, trained too; its backward carries the squared error's gradient back to each latent (straight through
    the rounding), adds ``lam / pixels`` times the gradient of the bits each latent costs under the
    scales of the last :meth:`fit`, and scales each level by its Newton step (a share
    :data:`STEP_SIZE` of it), a bin a step at most.  Plain SGD on its cosine then takes the steps."""

    def __init__(self, picture: np.ndarray, pyramid: Pyramid, lam: float, net=None, train_net: bool = False,
                 backend=None):
        height, width, channels = picture.shape
        self.train_net = train_net and net is not None
        self.pyramid, self.pixels, self.lam = pyramid, height * width, lam
        self.device = device = _Device(pyramid, backend or Backend("cpu"))
        self.target = device.put(np.ascontiguousarray(picture.transpose(2, 0, 1)))
        self.synthesis = None if net is None else _Synthesis(net, device)
        # Each latent starts in the middle of its integer's bin.
        self.y = {f"level {k}": device.put(q + np.float32(0.5 - DEADZONE) * np.sign(q).astype(np.float32))
                  for k, q in enumerate(pyramid.latents)}
        # A level's Newton step: one over the squared error's second derivative along one of its
        # latents, 2 / values * step ** 2 * its upsampling's mean squared column norms.
        norms = [1.0] + [_operators(height, k)[2] * _operators(width, k)[2] for k in range(1, pyramid.levels)]
        self.rates = [device.put((STEP_SIZE * height * width * channels / (2 * pyramid.steps[k] ** 2 * norm))
                                 .astype(np.float32))[:, None, None] for k, norm in enumerate(norms)]
        self.integers, self.grads, self._still, self._on_host = list(pyramid.latents), {}, {}, None
        self.fit()

    def named_parameters(self) -> dict:
        return {**self.y, **self.synthesis.named_parameters()} if self.train_net else self.y

    def named_gradients(self) -> dict:
        return self.grads

    def forward(self, _inputs=None) -> np.ndarray:
        """The picture the rounded latents draw, ``(C, H, W)``."""
        self.integers, self._on_host = [_integers(level) for level in self.y.values()], None
        return _drawn(self.pyramid, self.integers, self.synthesis, self.device)

    def error(self) -> float:
        """The mean squared error of the picture that the rounded latents draw."""
        drawn = self.forward()
        drawn -= self.target
        return float(self.device.backend.to_host((drawn * drawn).mean()))

    def current(self) -> Pyramid:
        """The pyramid of the latents the last :meth:`forward` drew (on the host)."""
        return _with(self.pyramid, self._host_integers())

    def _host_integers(self) -> list:
        """:attr:`integers` on the host, copied off a GPU once a forward."""
        if self._on_host is None:
            self._on_host = [self.device.backend.to_host(q) for q in self.integers]
        return self._on_host

    def fit(self) -> float:
        """Fit each grid's entropy model and each latent's scale to the latents the last
        :meth:`forward` drew (what their rate is differentiated under until the next fit); their
        bits.  Empty grids stay empty."""
        current = self.current()
        scales, spent = _scales_and_bits(current)
        put = self.device.put
        self.scales, self.empty = scales, [np.isinf(scale) for scale in scales]
        self.held = [put(empty) for empty in self.empty]
        self.rate_terms = [(put(inverse), put(np.exp(-inverse))) for inverse in (np.float32(1) / scale for scale in scales)]
        self.correction = spent / max(_estimated_bits(self._host_integers(), scales), 1.0)
        return spent

    def estimated_bits(self) -> float:
        """The bits of the latents the last :meth:`forward` drew, under the last fit's scales
        (corrected by the ratio measured at that fit)."""
        return self.correction * _estimated_bits(self._host_integers(), self.scales)

    def backward(self, gradient) -> None:
        channels, height, width = gradient.shape
        pyramid, weight, device = self.pyramid, np.float32(min(self.lam / self.pixels, MAX_WEIGHT)), self.device
        through_net = None if self.synthesis is None else self.synthesis.backward(
            gradient.reshape(channels, -1), weights=self.train_net).reshape(pyramid.levels, channels, height, width)
        if self.train_net:
            self.grads.update(self.synthesis.grads)
        for k, (name, y) in enumerate(self.y.items()):
            if self.empty[k].all():  # a level of empty grids: nothing to carry back (its zeros made once)
                if name not in self._still:
                    self._still[name] = device.xp.zeros_like(y)
                self.grads[name] = self._still[name]
                continue
            at_level = gradient if through_net is None else gradient + through_net[k]
            if k > 0:
                (_, down_y, _), (_, down_x, _) = device.operators[k]
                at_level = device.xp.ascontiguousarray(down_x.right(down_y.left(at_level)))
            if device.corrections[k] is not None:  # a symmetric filter is its own adjoint but at the edges
                at_level = filtered(at_level, device.corrections[k])
            grad = at_level * device.steps[k]
            grad += weight * _rate_gradient(y, *self.rate_terms[k])
            device.xp.copyto(grad, np.float32(0), where=self.held[k])
            grad *= self.rates[k]
            self.grads[name] = device.xp.clip(grad, -1, 1, out=grad)  # a bin a step at most, whatever lambda


class _Steering(Callback):
    """What a refinement does between its steps: every :data:`MODEL_EVERY` steps it fits the
    entropy models again (:meth:`Latents.fit`) and keeps the best pyramid seen at a fit; with a
    rate target ``bits``, every :data:`RATE_EVERY` it moves lambda toward the rate.  At the end it
    draws the last latents once more and counts them as a fit."""

    def __init__(self, latents: Latents, bits: float | None):
        super().__init__(1)
        self.latents, self.bits = latents, bits
        self.best = None  # (mse, bits, pyramid)

    def step(self, trainer) -> None:
        drawn = trainer.step - 1  # the step whose forward drew the latents held
        if drawn % MODEL_EVERY == 0:
            spent = self._seen(trainer.loss)
        elif self.bits is not None and drawn % RATE_EVERY == 0:
            spent = self.latents.estimated_bits()
        if self.bits is not None and drawn % RATE_EVERY == 0:
            self.latents.lam *= min(max((spent / self.bits) ** RATE_FOLLOWING, 1 / LAMBDA_STEP), LAMBDA_STEP)

    def end(self, trainer, error) -> None:
        if error is None:
            self._seen(self.latents.error())

    def _cost(self, mse: float, spent: float) -> tuple:
        """How latents of error ``mse`` and ``spent`` bits rank, the least first: within the
        target the least error, else the best trade at lambda."""
        if self.bits is None:
            return (trade(mse, spent / self.latents.pixels, self.latents.lam),)
        return (spent > self.bits, mse)

    def _seen(self, mse: float) -> float:
        """Count the latents last drawn, whose error is ``mse``: fit the models to them and keep
        them if they are the best yet; their bits."""
        spent = self.latents.fit()
        if self.best is None or self._cost(mse, spent) < self._cost(*self.best[:2]):
            weights = [tuple(array.copy() for array in layer) for layer in self.latents.synthesis.layers] \
                if self.latents.train_net else None
            self.best = (mse, spent, self.latents.current(), weights)
        return spent


def refine(picture: np.ndarray, pyramid: Pyramid, lam: float, until: float, bits: float | None = None,
           steps: int | None = None, net=None, progress=None, train_net: bool = False, backend=None) -> Pyramid:
    """``pyramid``'s latents refined for ``picture`` (``(H, W, C)``, decorrelated colours)
    against ``distortion + lam * bits per pixel`` until the ``time.perf_counter()`` value
    ``until``, the picture drawn as the file draws it: through the pyramid's filters and, when
    given, the synthesis MLP ``net`` (its weights held, or with ``train_net`` trained too: ``net``
    is then left holding the weights trained with the pyramid returned).  With ``bits``, lambda follows the rate
    (:data:`RATE_FOLLOWING`) so that the latents come within them.  The pyramid's steps and
    filters are kept.  Returns the best pyramid seen at a model fit (the given one, when none beat
    it).

    A :class:`~ironlearn.train.Trainer` run of :class:`Latents` on SGD, its cosine sized to the
    steps the time allows and re-sized as their pace drifts (:func:`~ironlearn.train.timed.run_planned`:
    the first plan is :data:`MOST_STEPS`, re-planned after the first step), on the caller's BLAS
    threads.  ``steps``, when given, is how many steps to take whatever the time.  ``progress``,
    if given, is called about every second as ``progress("latents step", step, planned, psnr)``.
    It runs on ``backend`` (default the CPU): the latents, the picture and the MLP copied there
    once, the latents read back at each model fit and rate estimate."""
    latents = Latents(picture, pyramid, lam, net, train_net, backend)
    steering = _Steering(latents, bits)
    optimizer = _Joint(latents.y, latents.synthesis.named_parameters()) if latents.train_net else SGD(latents.y)
    trainer = Trainer(latents, optimizer, mse, batches=lambda step: (None, latents.target),
                      check_every=0, count_callbacks=True, blas_threads=None)
    if steps is not None:
        trainer.optimizer.schedule = cosine(1.0, 0.0, steps)
        trainer.callbacks = [steering]
        trainer.run(steps)
    else:
        def report(trainer, plan):
            progress("latents step", trainer.step, plan.steps, psnr_from_mse(trainer.loss))

        plan = CosinePlan(1.0, 0.0, MOST_STEPS, max(0.0, until - time.perf_counter()), held_back=1, warmup=False,
                          most=MOST_STEPS)
        run_planned(trainer, plan, None if progress is None else report, callbacks=[steering])
    if steering.best is None:  # no time for a step
        return pyramid
    if latents.train_net:
        latents.synthesis.layers = steering.best[3]
        latents.synthesis.into(net)
    return steering.best[2]
