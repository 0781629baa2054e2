"""The synthesis MLP: what it learns from, and its training in a time given.

A small MLP learns to correct the pyramid's picture from the upsampled latents (Adam on the mean
squared error); :mod:`.quantise` then rounds its weights.
"""

from __future__ import annotations

import time

import numpy as np

from ..image.metrics import psnr_from_mse
from ..optim import Adam
from ..optim.schedules import warmup_cosine
from .pyramid import synthesis

#: The synthesis MLP: hidden width and layers, and Adam's peak learning rate.
WIDTH, DEPTH, NETWORK_LR = 16, 2, 1e-2
#: Pixels a step of the MLP's training reads, drawn at random.  Against every pixel each step,
#: the MLP's gain on the pyramid's error in 15 s, before its weights are rounded (kodim23,
#: monarch, sail, tulips and astronaut at 0.5 bpp): +0.01 to +0.57 dB in 80-290 steps for all of
#: them, +0.25 to +1.31 dB in 2,700-4,100 steps for 2**13 (2**12 and 2**14 about the same; 2**16
#: +0.18 to +1.08; a learning rate of 2e-2 no better).
MLP_BATCH = 1 << 13
#: The MLP reads the upsampled latents times this: they are small (a fraction of the picture's
#: range), and the MLP's initialisation expects inputs of about 1.
FEATURE_GAIN = 10.0
#: Steps timed before the rest are counted to fit the time left (and Adam's schedule is set).
TIMED_STEPS = 3


def mlp_problem(pyramid, picture):
    """What the MLP learns from and to: the upsampled latents at each pixel, times
    :data:`FEATURE_GAIN`, and the pyramid's error there, ``(inputs, residual)``."""
    height, width, channels = picture.shape
    features = pyramid.features(height, width)
    return features * np.float32(FEATURE_GAIN), picture.reshape(-1, channels) - pyramid.summed(features)


def train(inputs, residual, seconds, seed, progress):
    """Train the MLP that maps ``inputs`` to ``residual`` for about ``seconds``, on
    :data:`MLP_BATCH` random pixels a step: ``(net, steps)``."""
    net = synthesis(inputs.shape[1], residual.shape[1], WIDTH, DEPTH, seed)
    params = net.named_parameters()
    rng = np.random.default_rng(seed)
    started = last_report = time.perf_counter()
    steps, step, optimizer = 10, 0, None
    while step < steps:
        step += 1
        batch = rng.integers(0, len(inputs), MLP_BATCH) if len(inputs) > MLP_BATCH else slice(None)
        error = net.forward(inputs[batch]) - residual[batch]
        net.backward(error * np.float32(2 / error.size))
        if step == TIMED_STEPS:  # as many steps as fit the time
            left = seconds - (time.perf_counter() - started)
            steps = max(TIMED_STEPS, int(left / ((time.perf_counter() - started) / TIMED_STEPS)))
            optimizer = Adam(params, lr=warmup_cosine(NETWORK_LR, NETWORK_LR / 100, steps))
        if optimizer is not None:
            optimizer.step(net.named_gradients())
        if progress is not None and time.perf_counter() - last_report > 1.0:
            last_report = time.perf_counter()
            progress("MLP step", step, steps, psnr_from_mse(float(np.mean(error * error))))
    return net, step
