"""The synthesis MLP: what it learns from, and its training in a time given.

A small MLP learns to correct the pyramid's picture from the upsampled latents (Adam on the mean
squared error); :mod:`..quantise` then rounds its weights.
"""

from __future__ import annotations

import time

import numpy as np

from ...image.metrics import psnr_from_mse
from ...optim import Adam
from ...optim.schedules import cosine, warmup_cosine
from ...train.pace import Pace
from ..model import network
from ..model.network import FEATURE_GAIN
from .analysis import spread

#: Adam's peak learning rate for the synthesis MLP (its shape is :mod:`..model.network`'s).
NETWORK_LR = 1e-2
#: Pixels a step of the MLP's training reads, drawn at random.  Against every pixel each step,
#: the MLP's gain on the pyramid's error in 15 s, before its weights are rounded (kodim23,
#: monarch, sail, tulips and astronaut at 0.5 bpp): +0.01 to +0.57 dB in 80-290 steps for all of
#: them, +0.25 to +1.31 dB in 2,700-4,100 steps for 2**13 (2**12 and 2**14 about the same; 2**16
#: +0.18 to +1.08; a learning rate of 2e-2 no better).
MLP_BATCH = 1 << 13
#: Steps timed before the rest are counted to fit the time left (and Adam's schedule is set).
TIMED_STEPS = 3
#: The steps that fit are counted again each time this share of the training time has passed.
REPLAN_SHARE = 1 / 20


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


def train(inputs, residual, seconds, seed, progress, clock=time.perf_counter, held_back: int = 0):
    """Train the MLP that maps ``inputs`` to ``residual`` for about ``seconds`` (read from
    ``clock``) less ``held_back`` steps' time (for what follows, priced in the MLP's own steps),
    on :data:`MLP_BATCH` random pixels a step: ``(net, steps)``.

    The steps that fit are counted after :data:`TIMED_STEPS`, and again each
    :data:`REPLAN_SHARE` of the time at the pace the steps keep (a timed fit's
    :class:`~ironlearn.train.pace.Pace`, which one stalled step does not move): a machine that slows down part-way still ends on time, its
    cosine going on down from the rate reached."""
    net = network.build(inputs.shape[1], residual.shape[1], seed=seed)
    params = net.named_parameters()
    rng = np.random.default_rng(seed)
    started = last = planned = last_report = clock()
    deadline, pace = started + seconds, Pace()
    steps, step, optimizer = 10, 0, None
    while step < steps:
        step += 1
        batch = rng.integers(0, len(inputs), MLP_BATCH) if len(inputs) > MLP_BATCH else slice(None)
        error = net.forward(inputs[batch]) - residual[batch]
        net.backward(error * np.float32(2 / error.size))
        now = clock()
        pace.add(now - last)
        last = now
        if step == TIMED_STEPS:  # as many steps as fit the time
            steps = step + max(0, int((deadline - now) / pace.seconds_per_step) - held_back)
            optimizer = Adam(params, lr=warmup_cosine(NETWORK_LR, NETWORK_LR / 100, steps - step + 1))
            planned = now
        elif optimizer is not None and now - planned >= REPLAN_SHARE * seconds:
            steps = _replanned(optimizer, step, steps, int((deadline - now) / pace.seconds_per_step) - held_back)
            planned = now
        if optimizer is not None:
            optimizer.step(net.named_gradients())
        if progress is not None and now - last_report > 1.0:
            last_report = now
            progress("MLP step", step, steps, psnr_from_mse(float(np.mean(error * error))))
    return net, step


def _replanned(optimizer, step: int, steps: int, left: int) -> int:
    """The step count at ``step`` when ``left`` more steps fit: Adam's cosine re-sized to end
    there, going on from the rate it has reached once past its warm-up (never up)."""
    new = step + max(1, left)
    if new != steps:
        done, schedule = optimizer.step_count, optimizer.schedule
        total = done + new - step + 1  # its index at the last step, plus one
        if done >= schedule.warmup_steps:
            lr = schedule(done)
            optimizer.schedule = cosine(lr, min(schedule.lr_min, lr), total, warmup_steps=done)
        else:
            optimizer.schedule = cosine(schedule.lr_max, schedule.lr_min, max(total, schedule.warmup_steps + 1),
                                        schedule.warmup_steps)
    return new
