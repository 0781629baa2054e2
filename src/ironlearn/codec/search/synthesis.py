"""The synthesis MLP: what it learns from, and its training in a time given.

A small MLP learns to correct the pyramid's picture from the upsampled latents (Adam on the mean
squared error); :mod:`..quantise` then rounds its weights.
"""

from __future__ import annotations

import time

import numpy as np

from ...backend import Backend
from ...image.metrics import psnr_from_mse
from ...image.sampling import uniform
from ...nn import mse
from ...optim import Adam
from ...train import Trainer
from ...train.timed import CosinePlan, calibrate, run_planned
from ..model import network
from ..model.network import FEATURE_GAIN
from .analysis import spread

#: Adam's peak learning rate for the synthesis MLP (its shape is :mod:`..model.network`'s).
NETWORK_LR = 1e-2
#: Pixels a step of the MLP's training reads, drawn at random.  Against every pixel each step, it
#: makes many times the steps in the same time and gains more on the pyramid's error, on every
#: picture tried (2**12 and 2**14 about the same, 2**16 less; a learning rate of 2e-2 no better;
#: measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
MLP_BATCH = 1 << 13
#: Adam's rate at the end of the cosine, as a share of :data:`NETWORK_LR`.
FLOOR = 1 / 100

#: The MLP learns from at most this many of a picture's pixels, in whole rows spread over it: its
#: inputs are the levels times the channels floats a pixel (1.4 GB for all of 16.8 MP), and it
#: trains on 8,192 random pixels a step anyway.
MLP_PIXELS = 1 << 20


def mlp_rows(height: int, width: int):
    """The rows the MLP learns from: all of them up to :data:`MLP_PIXELS`, else as many rows as
    fit, spread over the picture in bit-reversed order and sorted."""
    if height * width <= MLP_PIXELS:
        return slice(None)
    return np.sort(spread(height)[:max(1, MLP_PIXELS // width)])


def mlp_problem(pyramid, picture):
    """What the MLP learns from and to: the upsampled latents at the pixels of :func:`mlp_rows`,
    times :data:`FEATURE_GAIN`, and the pyramid's error there, ``(inputs, residual)``."""
    height, width, channels = picture.shape
    rows = mlp_rows(height, width)
    features = pyramid.features(height, width, rows=rows)
    return features * np.float32(FEATURE_GAIN), picture[rows].reshape(-1, channels) - pyramid.summed(features)


def mlp_plan(steps: int, time_budget: float, held_back: int = 0) -> CosinePlan:
    """The MLP's timed plan: Adam's rate warmed up to :data:`NETWORK_LR`, then a cosine down to
    :data:`FLOOR` of it at ``steps``, when ``time_budget`` is spent but for ``held_back`` steps'
    time (what follows the training, priced in its steps)."""
    return CosinePlan(NETWORK_LR, NETWORK_LR * FLOOR, steps, time_budget, held_back)


def train(inputs, residual, seconds, seed, progress, clock=time.perf_counter, held_back: int = 0, backend=None):
    """Train the MLP that maps ``inputs`` to ``residual`` for about ``seconds`` (read from
    ``clock``) less ``held_back`` steps' time (for what follows, priced in the MLP's own steps),
    on :data:`MLP_BATCH` random pixels a step: ``(net, steps)``, the net on the host.

    It trains on ``backend`` (default the CPU): on a GPU, the pixels are copied there once and
    each step's are drawn there (:func:`~ironlearn.image.sampling.uniform`, the same draws as on
    the CPU), so that a step copies nothing.

    A timed fit's loop: :func:`~ironlearn.train.timed.calibrate` times a few steps that change
    nothing, and :class:`~ironlearn.train.timed.Replan` counts the steps that fit again as the
    pace drifts, so that a machine that slows down part-way still ends on time, its cosine going
    on down from the rate reached.  The BLAS threads are the caller's (the encoder sets them)."""
    started = clock()
    backend = backend or Backend("cpu")
    net = network.build(inputs.shape[1], residual.shape[1], seed=seed).to(backend)
    inputs, residual, xp = backend.asarray(inputs), backend.asarray(residual), backend.xp

    def batches(step):
        if len(inputs) <= MLP_BATCH:
            return inputs, residual
        chosen = (uniform(xp, seed, step, (MLP_BATCH,)) * np.float32(len(inputs))).astype(np.int64)
        chosen = xp.minimum(chosen, len(inputs) - 1)  # u * n may round up to n in float32
        return inputs[chosen], residual[chosen]

    pace = calibrate(net, {"batches": batches}, clock=clock)
    budget = max(0.0, seconds - (clock() - started))
    plan = mlp_plan(max(1, int(budget / pace) - held_back), budget, held_back)
    trainer = Trainer(net, Adam(net.named_parameters(), lr=plan.make_schedule()), mse, batches=batches,
                      check_every=0, count_callbacks=True, blas_threads=None, clock=clock)

    def report(trainer, plan):
        progress("MLP step", trainer.step, plan.steps, psnr_from_mse(trainer.loss))

    run_planned(trainer, plan, None if progress is None else report, clock=clock)
    return net.to(Backend("cpu")), trainer.step
