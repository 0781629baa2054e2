import math
import warnings

import numpy as np
import pytest

from helpers import check_layer_gradients
from ironlearn.backend import Backend, get_array_module
from ironlearn.nn import Linear, ReLU, Sigmoid, Sine, Tanh
from ironlearn.nn import init as initializers
from ironlearn.arrays import outer


@pytest.mark.parametrize("init", ["xavier", "he", "siren_first", "siren"])
def test_linear_gradients(rng, init):
    check_layer_gradients(Linear(3, 4, rng=rng, init=init), rng.normal(size=(5, 3)))


@pytest.mark.parametrize("layer", [Tanh(), Sigmoid(), Sine(w0=3.0), Sine(w0=30.0)], ids=repr)
def test_activation_gradients(rng, layer):
    check_layer_gradients(layer, rng.normal(size=(4, 3)) * 0.5)


def test_relu_gradient_away_from_the_kink(rng):
    x = rng.normal(size=(4, 3))
    x[np.abs(x) < 0.1] = 0.5  # finite differences are undefined at 0
    check_layer_gradients(ReLU(), x)


def test_sigmoid_does_not_overflow():
    y = Sigmoid().forward(np.array([[-1e4, 0.0, 1e4]], np.float32))
    np.testing.assert_allclose(y, [[0.0, 0.5, 1.0]])
    assert np.isfinite(y).all()


def test_sigmoid_keeps_its_lower_tail_without_warnings():
    x = np.array([-100.0, -88.0, -30.0, -18.0, 18.0, 88.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = Sigmoid().forward(x)
    expected = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(y[1:], expected[1:], rtol=1e-6)  # tanh's form gave 0 below -18
    assert y[0] == 0.0


def test_a_linear_layer_of_one_input_or_one_output_is_its_matrix_product(rng):
    x = rng.normal(size=(300, 1)).astype(np.float32)
    wide, narrow = Linear(1, 32, rng=rng), Linear(32, 1, rng=rng)
    wide.params["bias"][...] = rng.normal(size=32)
    np.testing.assert_array_equal(outer(x, wide.params["weight"]), x @ wide.params["weight"])
    np.testing.assert_array_equal(wide.forward(x), x @ wide.params["weight"] + wide.params["bias"])
    grad = rng.normal(size=(300, 1)).astype(np.float32)
    narrow.forward(rng.normal(size=(300, 32)).astype(np.float32))
    np.testing.assert_array_equal(narrow.backward(grad), grad @ narrow.params["weight"].T)


def test_siren_initialisation_bounds():
    rng = np.random.default_rng(0)
    first = initializers.siren_uniform(rng, 2, 10_000, first=True)
    later = initializers.siren_uniform(rng, 256, 256, w0=30.0)
    assert np.abs(first).max() <= 1 / 2 and np.abs(first).max() > 0.49
    bound = math.sqrt(6 / 256) / 30
    assert np.abs(later).max() <= bound and np.abs(later).max() > 0.99 * bound
    assert first.dtype == later.dtype == np.float32


def test_linear_skips_input_gradient_when_not_needed(rng):
    layer = Linear(2, 3, rng=rng)
    layer.forward(np.ones((4, 2), np.float32))
    assert layer.backward(np.ones((4, 3), np.float32), need_grad_in=False) is None
    np.testing.assert_allclose(layer.grads["bias"], [4, 4, 4])


def test_unknown_init_is_refused(rng):
    with pytest.raises(ValueError, match="unknown init"):
        Linear(2, 3, rng=rng, init="zeros")


def test_repr_shows_constructor_arguments(rng):
    assert repr(Linear(2, 3, rng=rng, init="he")) == "Linear(in_features=2, out_features=3, init='he')"
    assert repr(Sine(15)) == "Sine(w0=15.0)"


def test_to_drops_what_forward_cached_on_the_old_backend(rng, backend):
    # Linear keeps a ones-vector between steps: a model moved CPU -> GPU with the same batch
    # size would otherwise hand the old NumPy vector to CuPy.
    layer = Linear(3, 2, rng=rng)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    layer.forward(x)
    layer.backward(np.ones((4, 2), np.float32))
    old_ones = layer._ones_cache
    target = Backend(backend.device, np.float64)
    layer.to(target)
    assert layer._ones_cache is not old_ones and layer._x is None
    layer.forward(target.asarray(x))
    grad_in = layer.backward(target.asarray(np.ones((4, 2))))
    for array in (grad_in, *layer.grads.values()):
        assert get_array_module(array) is target.xp and array.dtype == np.float64
