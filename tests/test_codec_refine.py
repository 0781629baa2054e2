"""The latents trained, not only computed (codec/search/refine.py): refinement never leaves the
analysis's pyramid worse, keeps within a rate target, and trades better on a picture with detail;
its rate gradient is the derivative of the bits it stands for."""

import math
import time

import numpy as np
import pytest

from helpers import waves
from ironlearn.codec.model.latents import COLOURS
from ironlearn.codec.search.analysis import analyse
from ironlearn.codec.search.ratecontrol import distortion, latent_bits, trade
from ironlearn.codec.search.refine import rate_gradient, refine


def _picture(height=96, width=128):
    return (waves(height, width, 3).astype(np.float32) / 255) @ COLOURS[3].T


def _continuous_bits(y, scale):
    """``-log2`` of the Laplace's probability of the bin around ``y``: what rate_gradient differentiates."""
    m = np.abs(y)  # the Laplace is symmetric: the bin's probability, without cancelling terms
    far = 0.5 * (np.exp(-(m - 0.5) / scale) - np.exp(-(m + 0.5) / scale))
    near = 1 - 0.5 * (np.exp(-(0.5 - m) / scale) + np.exp(-(0.5 + m) / scale))
    return -np.log2(np.where(m >= 0.5, far, near))


@pytest.mark.parametrize("scale", [0.05, 0.7, 6.0])
def test_the_rate_gradient_is_the_derivative_of_the_bits(scale):
    y = np.array([-3.2, -0.7, -0.3, -0.01, 0.2, 0.45, 0.55, 2.5], np.float32)
    b = np.full_like(y, scale)
    h = 1e-3
    numeric = (_continuous_bits(y.astype(np.float64) + h, scale) - _continuous_bits(y.astype(np.float64) - h, scale)) / (2 * h)
    assert np.allclose(rate_gradient(y, b), numeric, rtol=2e-3, atol=1e-3)


def test_refinement_trades_better_and_never_worse():
    picture = _picture()
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = analyse(picture, 0.05, 5)
    lam = 1e-3
    before = trade(distortion(picture, pyramid), latent_bits(pyramid) / pixels, lam)
    refined = refine(picture, pyramid, lam, until=math.inf, steps=60)
    after = trade(distortion(picture, refined), latent_bits(refined) / pixels, lam)
    assert after < before
    assert refined.steps is pyramid.steps or np.array_equal(refined.steps, pyramid.steps)
    assert all(q.dtype == np.int32 for q in refined.latents)


def test_refinement_keeps_within_a_rate_and_its_time():
    picture = _picture()
    pyramid = analyse(picture, 0.05, 5)
    bits = 0.9 * latent_bits(pyramid)  # less than the analysis took: it must come down to them
    started = time.perf_counter()
    refined = refine(picture, pyramid, 1e-3, until=started + 1.0, bits=bits)
    assert time.perf_counter() - started < 1.0 + 0.5  # a step and a fit past the deadline at most
    assert latent_bits(refined) <= bits


def test_an_empty_grid_stays_empty():
    picture = _picture(64, 64)
    pyramid = analyse(picture, 0.05, 4)
    pyramid.latents[3] = np.zeros_like(pyramid.latents[3])
    refined = refine(picture, pyramid, 1e-3, until=math.inf, steps=30)
    assert not refined.latents[3].any()
