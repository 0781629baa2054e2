import numpy as np
import pytest

from helpers import numeric_grad
from ironlearn.nn import bce, mse


@pytest.mark.parametrize("loss", [mse, bce])
def test_loss_gradient_matches_finite_differences(rng, loss):
    pred = rng.uniform(0.05, 0.95, size=(6, 2))
    target = (rng.uniform(size=(6, 2)) > 0.5).astype(np.float64)
    _, grad = loss(pred.copy(), target)
    numeric = numeric_grad(lambda: float(loss(pred.copy(), target)[0]), pred)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_mse_value():
    value, _ = mse(np.array([[1.0], [3.0]]), np.array([[0.0], [0.0]]))
    assert float(value) == pytest.approx(5.0)


def test_bce_clips_exact_zeros_and_ones():
    pred = np.array([[0.0], [1.0], [1.0], [0.0]], np.float32)
    target = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    value, grad = bce(pred, target)
    assert np.isfinite(value) and np.isfinite(grad).all()
    assert float(value) > 1.0  # confidently wrong points cost a lot...
    assert value.dtype == grad.dtype == np.float32


def test_bce_perfect_prediction_costs_almost_nothing():
    target = np.array([[1.0], [0.0]], np.float32)
    value, _ = bce(target.copy(), target)
    assert 0 <= float(value) < 1e-5
