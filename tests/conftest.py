"""Shared fixtures: every backend test runs on NumPy, and on CuPy where a GPU is present."""

import numpy as np
import pytest

from ironlearn.backend import Backend, cuda_available

BACKENDS = ["cpu"] + (["cuda"] if cuda_available() else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    """A float32 Backend on each available device."""
    return Backend(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def numeric_grad(f, array, eps=1e-6):
    """Central finite differences of scalar ``f()`` with respect to every entry of ``array`` (in place)."""
    grad = np.zeros_like(array)
    flat, gflat = array.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = f()
        flat[i] = old - eps
        down = f()
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return grad


def check_layer_gradients(layer, x, rtol=1e-5, atol=1e-7):
    """float64 finite-difference check of a layer's input and parameter gradients."""
    layer.to(Backend("cpu", np.float64))
    x = x.astype(np.float64)
    out = layer.forward(x.copy())
    upstream = np.random.default_rng(0).normal(size=out.shape)

    def objective():
        return float((layer.forward(x.copy()) * upstream).sum())

    layer.forward(x.copy())
    grad_in = layer.backward(upstream.copy())
    analytic = {name: g.copy() for name, g in layer.grads.items()}
    if grad_in is not None:
        np.testing.assert_allclose(grad_in, numeric_grad(objective, x), rtol=rtol, atol=atol)
    for name, param in layer.params.items():
        np.testing.assert_allclose(analytic[name], numeric_grad(objective, param), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of {name}")
