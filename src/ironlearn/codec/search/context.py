"""The encoder's side of the learned context model: fit a network to a pyramid's latents, round
its weights, and keep it for the grids where it spends fewer bits than their two numbers.

The network (:mod:`..bitstream.context`) is trained by Adam on an importance sample of the coded
latents (each drawn with a chance that grows with the bits the two-number model spends on it:
every costly latent kept), against the bits of each integer under its Laplace,
``-log2(CDF(x + 1/2) - CDF(x - 1/2))`` capped at the range coder's 24, for as long as it is
given.  Its weights are then rounded to :data:`WEIGHT_BITS` bits a tensor, and each grid is coded
under the network only where its bits, counted over every latent with the exact arithmetic of
the decoder, fall below the two-number model's; the network is kept only where what it saves
passes what its weights and header cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ...backend import Backend, get_array_module
from ...nn import Linear, ReLU, Sequential
from ...optim import Adam
from ...train import Trainer
from ...train.timed import CosinePlan, calibrate, run_planned
from ..bitstream import context as learned
from ..bitstream import entropy
from ..bitstream.entropy import best_log_scale, laplace_size
from ..bitstream.sections import grids, latent_models
from ..model.latents import Pyramid

#: The network's width (:data:`..bitstream.context.MAX_HIDDEN` at most; 8 keeps a colour
#: picture's networks within the decoder's multiply-adds).
HIDDEN = 8
#: The precisions tried for the weights, in bits with the sign (a step of ``2**e`` a tensor, its
#: largest weight in that many bits): the one that leaves the fewest bits in all is kept.
WEIGHT_BITS = (6, 8, 10)
#: The latents Adam trains on, drawn by importance, and its learning rate (a cosine to 0 over
#: the time given): on sporco's four at 0.25 and 0.5 bpp, 2 s fits, 30,000 and 0.03 saved 5.8%
#: of the latents' bits, against 5.2% for 0.01 and 4.4% for 10,000 (docs/compression.md).
SAMPLE, LEARNING_RATE = 30000, 0.03
#: A grid's bits under the network are counted on about this many of its latents (a grid's
#: choice, and the saving that rate control plans with, need no more).
CHOICE_CELLS = 1 << 15
#: The header's bytes for a context model: its width, a shift an input, 7 bytes a tensor, a byte a grid.
HEADER_BYTES = 1 + learned.INPUTS + 7 * 2 * (learned.DEPTH + 1)


def symbol_bits(y, mean, log_scale):
    """Bits of integers ``y`` under Laplaces of ``mean`` and ``log_scale``, and their gradients
    as to each: ``(bits, d/d mean, d/d log_scale)``, the bits capped at the range coder's floor.
    NumPy or CuPy arrays, as given."""
    xp = get_array_module(y)
    with np.errstate(over="ignore"):  # expm1(1 / b) for the narrowest scales: its quotient is 0
        return _symbol_bits(xp, y, mean, xp.exp(xp.clip(log_scale, *entropy.LOG_SCALE_RANGE)))


def _symbol_bits(xp, y, mean, b):
    u = y - mean
    far = xp.abs(u) >= 0.5
    au = xp.where(far, xp.abs(u), 0.5)
    # Both bin edges on one side: P = e^{-(|u| - 1/2) / b} (1 - e^{-1/b}) / 2.
    far_nats = (au - 0.5) / b + math.log(2) - xp.log(-xp.expm1(-1 / b))
    far_du = -xp.sign(u) / b
    far_ds = -(au - 0.5) / b + (1 / b) / xp.expm1(1 / b)
    # The bin holds the mean: P = 1 - (e1 + e2) / 2.
    un = xp.where(far, 0.0, u)
    e1, e2 = xp.exp(-(0.5 - un) / b), xp.exp(-(0.5 + un) / b)
    p = 1 - (e1 + e2) / 2
    near_nats = -xp.log(p)
    near_du = -(e1 - e2) / (2 * b) / p
    near_ds = (e1 * (0.5 - un) + e2 * (0.5 + un)) / (2 * b) / p
    nats = xp.where(far, far_nats, near_nats)
    capped = nats > entropy.FLOOR_BITS * math.log(2)
    grad = [xp.where(capped, 0, xp.where(far, g_far, g_near)) / math.log(2)
            for g_far, g_near in ((far_du, near_du), (far_ds, near_ds))]
    return xp.minimum(nats / math.log(2), entropy.FLOOR_BITS), grad[0], grad[1]


def coded_grids(pyramid: Pyramid, models: dict):
    """``(index, grid, parent, entropy.Model)`` of every grid that costs bits, ``index`` its
    place in the header's level-major order; ``models`` from :func:`..bitstream.sections.latent_models`."""
    for k, c, q, parent in grids(pyramid):
        if models[k, c] is not None:
            above = parent if parent is not None and not pyramid.is_empty(k + 1) else None
            yield k * pyramid.channels + c, q, above, models[k, c][0]


def _cells(shape, chunk: int = 1 << 16):
    """All cells of a grid of ``shape``, ``(rows, columns)`` about ``chunk`` at a time."""
    h, w = shape
    for start in range(0, h * w, chunk):
        yield np.divmod(np.arange(start, min(h * w, start + chunk)), w)


def training_sample(pyramid: Pyramid, models: dict, rng) -> tuple:
    """An importance sample of the coded latents: their raw inputs ``(n, INPUTS)``, two-number
    log-scales ``(n,)``, values ``(n,)`` and weights ``(n,)`` (one over the chance each was
    drawn with, over the latents' count)."""
    coded = list(coded_grids(pyramid, models))
    total = sum(q.size for _, q, _, _ in coded)
    spend = sum(found[1] for found in models.values() if found is not None) + 0.005 * total
    raws, todays, ys, weights = [], [], [], []
    for _, q, parent, model in coded:
        around = learned.Surroundings(q, parent, model.log_scales())
        for rows, columns in _cells(q.shape):
            raw, today = around.raw(rows, columns)
            y = q[rows, columns].astype(np.float64)
            chance = np.minimum(1.0, (entropy.laplace_bits(y, today) + 0.005) * SAMPLE / spend)
            pick = np.flatnonzero(rng.random(len(y)) < chance)
            raws.append(raw[pick]), todays.append(today[pick]), ys.append(y[pick]), weights.append(1 / chance[pick])
    return np.concatenate(raws), np.concatenate(todays), np.concatenate(ys), np.concatenate(weights) / total


def shifts_for(raw: np.ndarray) -> tuple:
    """Each input's shift: the power of two that brings its largest magnitude within 1."""
    largest = np.maximum(np.abs(raw).max(0), 1.0) if len(raw) else np.ones(raw.shape[1])
    return tuple(int(s) for s in np.clip(np.ceil(np.log2(largest)), 0, learned.MAX_SHIFT))


def _start(hidden: int, rng) -> list:
    """A network's first weights ``[[W, b]]``: its outputs 0 (mean 0, the two-number scale)."""
    layers = [[rng.normal(0, 1 / math.sqrt(m), (m, n)).astype(np.float32), np.zeros(n, np.float32)]
              for m, n in learned.layer_shapes(hidden)]
    layers[-1][0][:] = 0
    return layers


def _network(layers) -> Sequential:
    """The float network of weights ``[[W, b]]`` as training takes it: ReLU between the layers
    (the file's exact arithmetic is :func:`..bitstream.context.forward`)."""
    net = []
    for i, (w, b) in enumerate(layers):
        linear = Linear(*w.shape, rng=np.random.default_rng(0))
        linear.params.update(weight=np.array(w, np.float32), bias=np.array(b, np.float32))
        net += [linear] if i == len(layers) - 1 else [linear, ReLU()]
    return Sequential(*net)


def code_length(out, target):
    """The loss of the network's outputs ``out`` (each latent's mean and log-scale offset) against
    ``target`` (columns: the latent, its two-number log-scale, its weight in the sample): the
    weighted bits of the sample and their gradient, as :mod:`ironlearn.nn.losses` returns a loss."""
    y, today, weight = target[:, 0], target[:, 1], target[:, 2]
    bits, d_mean, d_scale = symbol_bits(y, out[:, 0], today + out[:, 1])
    xp = get_array_module(out)
    grad = xp.stack([d_mean, d_scale], 1) * weight[:, None]
    return xp.asarray((bits * weight).sum(), np.float32), grad.astype(np.float32)


def train(x, today, y, weight, seconds: float, rng, start=None, backend=None) -> list:
    """The network ``[[W, b]]`` (float32, on the host) fitted by Adam to the sample ``(x, today,
    y, weight)`` (``x`` the inputs as :func:`..bitstream.context.scaled` gives them) for
    ``seconds``, its learning rate a cosine to 0 over that time (a timed run:
    :func:`~ironlearn.train.timed.run_planned`), from the weights ``start`` (``[(W, b)]``) or from
    :func:`_start`'s, on ``backend`` (default the CPU; the sample copied there once)."""
    started = time.perf_counter()
    backend = backend or Backend("cpu")
    net = _network(_start(HIDDEN, rng) if start is None else start).to(backend)
    data = {"inputs": backend.asarray(x.astype(np.float32)),
            "targets": backend.asarray(np.stack([y, today, weight], 1).astype(np.float32))}
    if seconds > 0:
        pace = calibrate(net, data, loss=code_length)
        budget = max(0.0, seconds - (time.perf_counter() - started))
        plan = CosinePlan(LEARNING_RATE, 0.0, max(1, int(budget / pace)), budget, warmup=False)
        trainer = Trainer(net, Adam(net.named_parameters(), lr=plan.make_schedule()), code_length, **data,
                          check_every=0, blas_threads=None)
        run_planned(trainer, plan)
    return [[backend.to_host(layer.params["weight"]), backend.to_host(layer.params["bias"])]
            for layer in net.layers if isinstance(layer, Linear)]


def rounded(layers, bits: int) -> tuple:
    """Each tensor of ``layers`` as ``(integers, exponent)``: its largest weight in ``bits`` bits
    with its sign, within what the header allows."""
    tensors = []
    for tensor in (t for layer in layers for t in layer):
        largest = max(float(np.abs(tensor).max()), 2.0 ** -30)
        exponent = min(max(math.ceil(math.log2(largest)) - (bits - 1), -14), 0)
        q = np.clip(np.round(tensor / 2.0 ** exponent), -learned.MAX_WEIGHT, learned.MAX_WEIGHT).astype(np.int32)
        tensors.append((q, exponent))
    return tuple(tensors)


def grid_bits(context: learned.ContextModel, q, parent, model: entropy.Model, cells: int = CHOICE_CELLS) -> float:
    """The bits grid ``q`` takes under ``context``, with the decoder's exact arithmetic: counted
    on every ``stride``-th of its latents where it has more than ``cells`` (``stride`` to leave
    about that many), and scaled to the whole grid."""
    around = learned.Surroundings(q, parent, model.log_scales())
    stride = max(1, q.size // cells)
    rows, columns = np.divmod(np.arange(0, q.size, stride), q.shape[1])
    means, scales = learned.predict(around, rows, columns, context, int(np.abs(q).max()))
    bits = symbol_bits(q[rows, columns].astype(np.float64), means, np.log(scales))[0]
    return float(bits.sum()) * q.size / len(rows)


@dataclass(frozen=True)
class Fitted:
    """A context model fitted to one pyramid: the model (each grid's choice made for that
    pyramid), the share of the two-number model's latent bits it saves there and those bits,
    and what its weights and header cost, in bits."""

    context: learned.ContextModel
    saving: float
    saved: float
    cost: float

    def room(self, bits: float, share: float = 1.0) -> float:
        """The two-number model's latent bits that take about ``bits`` under this model, counting
        on ``share`` of its saving: what rate control aims at, so that the bits the model saves
        go to the picture."""
        return max(bits - self.cost, 0.0) / (1 - share * self.saving)

    def for_pyramid(self, pyramid: Pyramid) -> learned.ContextModel | None:
        """The model with each grid's choice made for ``pyramid``, or None where it does not pay there."""
        chosen = choose(self.context, pyramid)
        return None if chosen is None else chosen.context


def fit(pyramid: Pyramid, seconds: float, seed: int = 0, start: Fitted | None = None,
        backend=None) -> Fitted | None:
    """The context model that codes ``pyramid``'s latents in the fewest bits, trained for what
    is left of ``seconds`` after its sample is drawn and its choice of grids is priced, or None
    where no network saves more than it costs.  The choice reads every grid once a precision
    (:data:`WEIGHT_BITS`), about as many cells as the sample in all: it is priced at the
    sample's time (on kodim23, 0.21 s for the sample and 0.23 for the choices; unpriced, a
    1.5 s fit took 1.8).  From ``start`` (a model fitted before: its inputs' shifts and
    weights), where given; the network trains on ``backend`` (default the CPU)."""
    models = latent_models(pyramid)
    if not any(found is not None for found in models.values()):
        return None
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    raw, today, y, weight = training_sample(pyramid, models, rng)
    sampling = time.perf_counter() - started
    shifts = shifts_for(raw) if start is None else start.context.shifts
    layers = train(learned.scaled(raw, shifts), today, y, weight, max(seconds - 2 * sampling, 0.0), rng,
                   None if start is None else start.context.layers, backend)
    every = (True,) * (pyramid.levels * pyramid.channels)
    found = [choose(learned.ContextModel(shifts, rounded(layers, bits), every), pyramid, models) for bits in WEIGHT_BITS]
    return max((f for f in found if f is not None), key=lambda f: f.saved - f.cost, default=None)


def choose(context: learned.ContextModel, pyramid: Pyramid, models: dict | None = None) -> Fitted | None:
    """``context`` with each grid of ``pyramid`` coded under it only where it spends fewer bits
    than the grid's two numbers, or None where the bits it saves do not pay for its weights and header."""
    models = latent_models(pyramid) if models is None else models
    flags, saved, today = [False] * (pyramid.levels * pyramid.channels), 0.0, 0.0
    for index, q, parent, model in coded_grids(pyramid, models):
        bits = models[divmod(index, pyramid.channels)][1]
        gain = bits - grid_bits(context, q, parent, model)
        today += bits
        if gain > 8:  # the grid's flag byte
            flags[index], saved = True, saved + gain
    cost = 8 * HEADER_BYTES + sum(laplace_size(q, best_log_scale(q)) for q, _ in context.tensors if q.any())
    if saved <= cost:
        return None
    return Fitted(learned.ContextModel(context.shifts, context.tensors, tuple(flags)), saved / today, saved, cost)
