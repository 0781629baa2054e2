"""The latents trained, not only computed (codec/search/refine.py): refinement never leaves the
analysis's pyramid worse, keeps within a rate target, and trades better on a picture with detail,
also drawn through the filters and the MLP as the decoder draws it; its rate gradient is the
derivative of the bits it stands for, and the MLP's gradient the derivative of what it draws."""

import math
import time

import numpy as np
import pytest

from helpers import waves
from ironlearn.codec.model.latents import COLOURS
from ironlearn.codec.search.analysis import analyse
from ironlearn.codec.search.ratecontrol import distortion, latent_bits, trade
from ironlearn.codec.bitstream import read, write
from ironlearn.codec.model.network import FEATURE_GAIN, build
from ironlearn.codec.quantise import quantise_weights
from ironlearn.codec.search.encoder import _decoded_error
from ironlearn.codec.search.filters import fit_filters
from ironlearn.codec.search.refine import _drawn, _Synthesis, rate_gradient, refine
from ironlearn.codec.search.synthesis import mlp_problem, train


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


def _trained_mlp(picture, pyramid, lam):
    """An MLP trained a moment on ``pyramid``'s error and its weights rounded, as the encoder
    makes one: ``(net, weights)``."""
    inputs, residual = mlp_problem(pyramid, picture)
    net, _ = train(inputs, residual, 0.5, 0, None)
    return net, quantise_weights(net, inputs, residual, lam)


def test_the_frozen_mlp_draws_what_the_decoder_draws():
    picture = _picture(64, 96)
    pyramid = analyse(picture, 0.05, 4)
    fit_filters(picture, pyramid, 1e-3, math.inf)
    net, _ = _trained_mlp(picture, pyramid, 1e-3)
    drawn = _drawn(pyramid, [q.astype(np.float32) for q in pyramid.latents], _Synthesis(net))
    features = pyramid.features(64, 96)
    decoded = pyramid.summed(features) + net.forward(features * np.float32(FEATURE_GAIN))
    assert np.allclose(drawn.reshape(3, -1).T, decoded, atol=1e-5)


def test_the_frozen_mlps_gradient_is_its_derivative():
    rng = np.random.default_rng(1)
    net = build(12, 3, seed=2)
    net.layers[-1].params["weight"][...] = rng.normal(0, 0.3, net.layers[-1].params["weight"].shape)
    frozen = _Synthesis(net)
    inputs, direction = rng.normal(0, 0.1, (2, 12, 50))
    weights = rng.normal(0, 1, (3, 50))
    frozen.forward(inputs.astype(np.float32))
    analytic = float(np.sum(frozen.backward(weights.astype(np.float32)) * direction))
    h = 1e-3
    numeric = (np.sum(weights * frozen.forward((inputs + h * direction).astype(np.float32)))
               - np.sum(weights * frozen.forward((inputs - h * direction).astype(np.float32)))) / (2 * h)
    assert analytic == pytest.approx(numeric, rel=2e-2)


def test_the_mlps_weight_gradients_are_their_derivatives():
    """Trained with the latents, the MLP's weights follow their own gradient."""
    rng = np.random.default_rng(1)
    net = build(12, 3, seed=2)
    frozen = _Synthesis(net)
    inputs = rng.normal(0, 0.5, (12, 50)).astype(np.float32)
    weights = rng.normal(0, 1, (3, 50)).astype(np.float32)
    frozen.forward(inputs)
    frozen.backward(weights, weights=True)
    h = 1e-2
    for name, param in frozen.named_parameters().items():
        direction = rng.normal(0, 1, param.shape).astype(np.float32)
        analytic = float(np.sum(frozen.grads[name] * direction))
        param += h * direction
        up = float(np.sum(weights * frozen.forward(inputs)))
        param -= 2 * h * direction
        down = float(np.sum(weights * frozen.forward(inputs)))
        param += h * direction
        assert analytic == pytest.approx((up - down) / (2 * h), rel=2e-2, abs=1e-3), name


def test_refinement_through_the_mlp_and_filters_makes_a_better_file():
    """The latents refined as the file draws them (filters, MLP) trade better once written and
    read back: the refinement's picture is the decoder's."""
    picture = _picture()
    target = np.round(np.clip(picture @ COLOURS[3], 0, 1) * 255).astype(np.uint8)
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = analyse(picture, 0.05, 5)
    lam = 1e-3
    fit_filters(picture, pyramid, lam, math.inf)
    net, weights = _trained_mlp(picture, pyramid, lam)

    def traded(pyr):
        data = write(pyr, (net, weights))
        return trade(_decoded_error(read(data), target), 8 * len(data) / pixels, lam)

    refined = refine(picture, pyramid, lam, until=math.inf, steps=40, net=net)
    assert refined.filters == pyramid.filters
    assert traded(refined) < traded(pyramid)


def test_the_mlp_trained_with_the_latents_and_rounded_again_makes_a_better_file():
    """Trained together, the net is left holding the weights drawn with the pyramid returned; its
    weights rounded again, the file trades better than the one it started from."""
    picture = _picture()
    target = np.round(np.clip(picture @ COLOURS[3], 0, 1) * 255).astype(np.uint8)
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = analyse(picture, 0.05, 5)
    lam = 1e-3
    net, weights = _trained_mlp(picture, pyramid, lam)
    before = [p.copy() for p in net.named_parameters().values()]
    started = trade(_decoded_error(read(write(pyramid, (net, weights))), target), 8 * len(write(pyramid, (net, weights))) / pixels, lam)
    refined = refine(picture, pyramid, lam, until=math.inf, steps=40, net=net, train_net=True)
    assert any(not np.array_equal(a, b) for a, b in zip(before, net.named_parameters().values()))
    inputs, residual = mlp_problem(refined, picture)
    data = write(refined, (net, quantise_weights(net, inputs, residual, lam)))
    assert trade(_decoded_error(read(data), target), 8 * len(data) / pixels, lam) < started


@pytest.mark.parametrize("bits", [None, 3000.0])
def test_the_refinement_runs_on_a_device_as_on_the_cpu_and_its_steps_copy_nothing(monkeypatch, bits):
    """``compress --device cuda``: the latents, the picture, the filters and the MLP go to the
    device once; a step copies nothing and never syncs (the pretend GPU raises at either; the
    model fits and rate estimates between steps read the latents back); the pyramid and the MLP
    it returns are the CPU's, bit for bit."""
    import copy

    from strict_device import guard_every_step, strict_device

    from ironlearn.backend import Backend

    picture = _picture()
    pyramid = analyse(picture, 0.05, 5)
    fit_filters(picture, pyramid, 1e-3, math.inf)
    net, _ = _trained_mlp(picture, pyramid, 1e-3)
    host_net, device_net = copy.deepcopy(net), copy.deepcopy(net)
    on_cpu = refine(picture, pyramid, 1e-3, until=math.inf, bits=bits, steps=12, net=host_net, train_net=True)
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        guard_every_step(monkeypatch, device, backend)
        on_device = refine(picture, pyramid, 1e-3, until=math.inf, bits=bits, steps=12, net=device_net,
                           train_net=True, backend=backend)
    for got, want in zip(on_device.latents, on_cpu.latents):
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)
    for name, value in host_net.named_parameters().items():
        np.testing.assert_array_equal(device_net.named_parameters()[name], value, err_msg=name)
