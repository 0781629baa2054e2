"""The problems the original Iron Learn solved first, learned by the same engine."""

import numpy as np

from ironlearn.nn import Linear, Sequential, Sigmoid, bce, mlp, mse
from ironlearn.optim import SGD, Adam, cosine
from ironlearn.train import Trainer


def test_xor_to_full_accuracy(backend):
    x = backend.asarray([[0, 0], [0, 1], [1, 0], [1, 1]])
    y = backend.asarray([[0], [1], [1], [0]])
    model = mlp(2, 1, width=8, depth=1, activation="tanh", final_activation="sigmoid",
                rng=np.random.default_rng(0)).to(backend)
    Trainer(model, Adam(model.named_parameters(), lr=0.05), bce, x, y).run(500)
    pred = backend.to_host(model(x))
    np.testing.assert_array_equal(pred > 0.5, backend.to_host(y) > 0.5)


def test_logistic_regression_separates_two_clouds(backend):
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(-1.5, 1, (200, 2)), rng.normal(1.5, 1, (200, 2))])
    labels = np.repeat([[0.0], [1.0]], 200, axis=0)
    model = Sequential(Linear(2, 1, rng=rng), Sigmoid()).to(backend)
    x, y = backend.asarray(points), backend.asarray(labels)
    Trainer(model, SGD(model.named_parameters(), lr=0.5), bce, x, y).run(300)
    accuracy = ((backend.to_host(model(x)) > 0.5) == (labels > 0.5)).mean()
    assert accuracy > 0.95  # the clouds overlap a little; chance is 0.5
    weight = backend.to_host(model.layers[0].params["weight"]).ravel()
    assert (weight > 0).all()  # the boundary faces the right way


def test_one_dimensional_function_to_small_mse(backend):
    grid = np.linspace(-1, 1, 256)[:, None]
    x, y = backend.asarray(grid), backend.asarray(np.sin(np.pi * grid) * 0.5)
    model = mlp(1, 1, width=32, depth=2, activation="tanh", rng=np.random.default_rng(0)).to(backend)
    trainer = Trainer(model, Adam(model.named_parameters(), lr=cosine(1e-2, 1e-4, 2000)), mse, x, y).run(2000)
    assert trainer.loss < 1e-4
