import numpy as np
import pytest

from ironlearn.nn import Sequential, bce, classic, mlp, mse, siren


def test_classic_matches_the_original_network():
    model = classic(rng=np.random.default_rng(0))
    assert model.num_parameters == 99_457
    widths = [layer.config()["out_features"] for layer in model.layers if "out_features" in layer.config()]
    assert widths == [128, 128, 256, 128, 64, 64, 64, 1]
    assert type(model.layers[-1]).__name__ == "Sigmoid" and type(model.layers[1]).__name__ == "Tanh"


def test_dotted_names_and_repr():
    model = mlp(2, 1, width=8, depth=2, rng=np.random.default_rng(0))
    assert list(model.named_parameters())[:3] == ["layers.0.weight", "layers.0.bias", "layers.2.weight"]
    text = repr(model)
    assert "Linear(in_features=2, out_features=8, init='he')" in text and f"{model.num_parameters:,} parameters" in text


def test_state_dict_round_trip_through_config():
    model = siren(2, 3, width=16, depth=2, w0=20.0, rng=np.random.default_rng(0))
    rebuilt = Sequential.from_config(model.config())
    rebuilt.load_state_dict(model.state_dict())
    x = np.random.default_rng(1).uniform(-1, 1, (10, 2)).astype(np.float32)
    np.testing.assert_array_equal(model(x), rebuilt(x))


def test_strict_loading_names_the_problem():
    model = mlp(2, 1, width=4, depth=1, rng=np.random.default_rng(0))
    state = model.state_dict()
    del state["layers.0.bias"]
    with pytest.raises(ValueError, match="missing \\['layers.0.bias'\\]"):
        model.load_state_dict(state)
    state = model.state_dict()
    state["layers.9.weight"] = np.zeros(1)
    with pytest.raises(ValueError, match="unexpected \\['layers.9.weight'\\]"):
        model.load_state_dict(state)
    state = model.state_dict()
    state["layers.0.weight"] = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="layers.0.weight: saved shape"):
        model.load_state_dict(state)


@pytest.mark.parametrize("build,loss", [
    (lambda rng: siren(2, 1, width=16, depth=2, rng=rng), mse),
    (lambda rng: classic(rng=rng), bce),
    (lambda rng: mlp(2, 3, width=16, depth=2, activation="tanh", final_activation="sigmoid", rng=rng), mse),
])
def test_float32_through_a_training_step(backend, build, loss):
    from ironlearn.optim import Adam

    model = build(np.random.default_rng(0)).to(backend)
    out = model.layers[-2].config().get("out_features", 1)
    x = backend.asarray(np.random.default_rng(1).uniform(-1, 1, (32, 2)))
    y = backend.asarray(np.random.default_rng(2).uniform(0, 1, (32, out)))
    activations = [x]
    for layer in model.layers:
        activations.append(layer.forward(activations[-1]))
    value, grad = loss(activations[-1], y)
    model.backward(grad)
    Adam(model.named_parameters(), lr=1e-3).step(model.named_gradients())
    arrays = [*activations, value, grad, *model.named_parameters().values(), *model.named_gradients().values()]
    assert {a.dtype for a in arrays} == {np.dtype(np.float32)}


def test_preset_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown activation"):
        mlp(2, 1, activation="swish", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 1"):
        siren(2, 1, depth=0, rng=np.random.default_rng(0))


def test_the_package_exports_every_network_builder():
    import inspect

    import ironlearn
    from ironlearn.nn import presets

    builders = {name for name, fn in vars(presets).items()
                if inspect.isfunction(fn) and fn.__module__ == presets.__name__ and not name.startswith("_")}
    assert builders == {"classic", "fourier", "hashgrid", "mlp", "siren"}
    for name in builders | {"FourierFeatures", "HashGrid"}:
        assert name in ironlearn.__all__ and getattr(ironlearn, name) is getattr(ironlearn.nn, name)
