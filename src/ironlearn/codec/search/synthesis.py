"""The synthesis MLP: what it learns from, and its training in a time given.

A small MLP learns to correct the pyramid's picture from the upsampled latents (Adam on the mean
squared error); :mod:`..quantise` then rounds its weights.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from ...image.metrics import psnr_from_mse
from ...nn import mse
from ...optim import Adam
from ...optim.schedules import cosine, warmup_cosine
from ...train import Callback, Trainer
from ...train.timed import Replan, calibrate
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
#: Seconds between the progress reports of a long training.
REPORT_SECONDS = 1.0

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


@dataclass(frozen=True)
class Plan:
    """The MLP's timed plan, as :class:`~ironlearn.train.timed.Replan` reads and revises it: the
    cosine ends at ``steps``, when the ``time_budget`` is spent but for the time of ``held_back``
    steps (what follows the training, priced in its steps).  ``anneal_from`` ``(step, rate)``:
    a revised plan's cosine goes on from the rate reached there."""

    steps: int
    time_budget: float
    held_back: int = 0
    anneal_from: tuple[int, float] | None = None
    start_step: int = 0  # Replan's terms for a run that starts anew
    prior_seconds: float = 0.0

    def make_schedule(self):
        if self.anneal_from is None:
            return warmup_cosine(NETWORK_LR, NETWORK_LR * FLOOR, self.steps)
        step, lr = self.anneal_from
        return cosine(lr, min(NETWORK_LR * FLOOR, lr), self.steps, warmup_steps=step)

    def replanned(self, step: int, train_seconds: float, seconds_per_step: float) -> "Plan":
        """The plan at ``step`` after ``train_seconds``, when a step takes ``seconds_per_step``:
        as many steps as the time left allows; past the warm-up the cosine goes on down from the
        rate reached (never up), within it the warm-up is kept and the cosine re-sized."""
        left = int(max(0.0, self.time_budget - train_seconds) / max(seconds_per_step, 1e-9)) - self.held_back
        steps = step + max(1, left)
        if steps == self.steps:
            return self
        schedule = self.make_schedule()
        if step < schedule.warmup_steps:
            return dataclasses.replace(self, steps=max(steps, schedule.warmup_steps + 1))
        return dataclasses.replace(self, steps=steps, anneal_from=(step, schedule(step)))


class Timed:
    """The MLP's training as :class:`~ironlearn.train.timed.Replan` keeps it to its time: the
    plan, and the trainer whose schedule follows it."""

    def __init__(self, plan: Plan, trainer: Trainer):
        self.plan, self.trainer = plan, trainer
        self.stalled_seconds = self.step_seconds = 0.0

    def replan(self, plan: Plan) -> None:
        self.plan = plan
        self.trainer.optimizer.schedule = plan.make_schedule()


class _EndOfPlan(Callback):
    """Stops the training at its plan's last step (the plan moves as Replan revises it), and
    reports its progress now and then."""

    def __init__(self, job: Timed, progress, clock):
        super().__init__(1)
        self.job, self.progress, self.clock = job, progress, clock
        self.reported = clock()

    def step(self, trainer) -> None:
        if trainer.step >= self.job.plan.steps:
            trainer.request_stop()
        if self.progress is not None and self.clock() - self.reported > REPORT_SECONDS:
            self.reported = self.clock()
            self.progress("MLP step", trainer.step, self.job.plan.steps, psnr_from_mse(trainer.loss))


def train(inputs, residual, seconds, seed, progress, clock=time.perf_counter, held_back: int = 0):
    """Train the MLP that maps ``inputs`` to ``residual`` for about ``seconds`` (read from
    ``clock``) less ``held_back`` steps' time (for what follows, priced in the MLP's own steps),
    on :data:`MLP_BATCH` random pixels a step: ``(net, steps)``.

    A timed fit's loop: :func:`~ironlearn.train.timed.calibrate` times a few steps that change
    nothing, and :class:`~ironlearn.train.timed.Replan` counts the steps that fit again as the
    pace drifts, so that a machine that slows down part-way still ends on time, its cosine going
    on down from the rate reached.  The BLAS threads are the caller's (the encoder sets them)."""
    started = clock()
    net = network.build(inputs.shape[1], residual.shape[1], seed=seed)
    rng = np.random.default_rng(seed)

    def batches(step):
        if len(inputs) <= MLP_BATCH:
            return inputs, residual
        chosen = rng.integers(0, len(inputs), MLP_BATCH)
        return inputs[chosen], residual[chosen]

    pace = calibrate(net, {"batches": batches}, clock=clock)
    budget = max(0.0, seconds - (clock() - started))
    plan = Plan(steps=max(1, int(budget / pace) - held_back), time_budget=budget, held_back=held_back)
    trainer = Trainer(net, Adam(net.named_parameters(), lr=plan.make_schedule()), mse, batches=batches,
                      check_every=0, count_callbacks=True, blas_threads=None, clock=clock)
    job = Timed(plan, trainer)
    trainer.callbacks = [Replan(job), _EndOfPlan(job, progress, clock)]
    if plan.steps > 0 and budget > 0:
        trainer.run(time_budget=budget)
    return net, trainer.step
