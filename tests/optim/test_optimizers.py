import numpy as np
import pytest

from ironlearn.optim import SGD, Adam


def quadratic_grad(p):
    # f(p) = sum(scale * (p - 3)^2), an ill-conditioned bowl with its minimum at 3.
    scale = np.array([1.0, 10.0], np.float32)
    return (2 * scale * (p - 3)).astype(np.float32)


def rosenbrock_grad(p):
    x, y = p
    return np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)], np.float32)


def minimise(optimizer_cls, grad_fn, start, steps, **kwargs):
    params = {"p": np.array(start, np.float32)}
    opt = optimizer_cls(params, **kwargs)
    for _ in range(steps):
        opt.step({"p": grad_fn(params["p"])})
    return params["p"], opt


OPTIMIZERS = [
    (SGD, {"lr": 0.04}),
    (SGD, {"lr": 0.01, "momentum": 0.9}),
    (Adam, {"lr": 0.05}),
]


@pytest.mark.parametrize("cls,kwargs", OPTIMIZERS, ids=["sgd", "sgd-momentum", "adam"])
def test_minimises_a_quadratic(cls, kwargs):
    p, opt = minimise(cls, quadratic_grad, [-2.0, 8.0], 1000, **kwargs)
    np.testing.assert_allclose(p, [3.0, 3.0], atol=1e-3)
    assert p.dtype == np.float32 and opt.step_count == 1000


@pytest.mark.parametrize("cls,kwargs,steps", [
    (SGD, {"lr": 1e-3}, 50_000),
    (SGD, {"lr": 2e-4, "momentum": 0.9}, 30_000),
    (Adam, {"lr": 2e-3}, 20_000),
], ids=["sgd", "sgd-momentum", "adam"])
def test_minimises_rosenbrock(cls, kwargs, steps):
    p, _ = minimise(cls, rosenbrock_grad, [-1.5, 2.0], steps, **kwargs)
    np.testing.assert_allclose(p, [1.0, 1.0], atol=2e-2)


def test_state_dict_resumes_the_same_trajectory():
    straight, _ = minimise(Adam, rosenbrock_grad, [-1.5, 2.0], 200, lr=1e-2)
    half, opt = minimise(Adam, rosenbrock_grad, [-1.5, 2.0], 100, lr=1e-2)
    state = opt.state_dict()
    params = {"p": half.copy()}
    resumed = Adam(params, lr=1e-2)
    resumed.load_state_dict(state)
    for _ in range(100):
        resumed.step({"p": rosenbrock_grad(params["p"])})
    np.testing.assert_array_equal(params["p"], straight)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="momentum"):
        SGD({}, momentum=1.5)
    with pytest.raises(ValueError, match="betas"):
        Adam({}, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="unknown entry"):
        Adam({"p": np.zeros(2, np.float32)}).load_state_dict({"step": 1, "m.q": np.zeros(2)})


def test_state_dict_is_a_copy():
    params = {"p": np.zeros(2, np.float32)}
    opt = Adam(params, lr=0.1)
    opt.step({"p": np.ones(2, np.float32)})
    state = opt.state_dict()
    saved = {k: np.copy(v) for k, v in state.items()}
    opt.step({"p": np.ones(2, np.float32)})
    for key, value in saved.items():
        np.testing.assert_array_equal(state[key], value, err_msg=key)


def test_loading_is_strict_about_what_is_missing():
    params = {"p": np.zeros(2, np.float32), "q": np.zeros(3, np.float32)}
    trained = Adam(params, lr=0.1)
    trained.step({"p": np.ones(2, np.float32), "q": np.ones(3, np.float32)})
    full = trained.state_dict()
    for key in ("v.q", "step"):
        partial = {k: v for k, v in full.items() if k != key}
        with pytest.raises(ValueError, match=f"'{key}'"):
            Adam(params).load_state_dict(partial)
    with pytest.raises(ValueError, match="'m.p'"):  # moments lost after the first step: not a fresh start
        Adam(params).load_state_dict({"step": 1})


def test_a_state_from_before_the_first_step_loads():
    params = {"p": np.zeros(2, np.float32)}
    fresh = Adam(params).state_dict()
    assert fresh == {"step": 0}
    opt = Adam(params)
    opt.step({"p": np.ones(2, np.float32)})
    opt.load_state_dict(fresh)
    assert opt.step_count == 0 and opt.slots == {"m": {}, "v": {}}


def test_moments_that_start_again_late_take_a_fresh_adams_steps():
    """A finished run's checkpoint drops Adam's moments; resumed at step 500, Adam starts them from
    zero there, bias correction included: its steps are a fresh Adam's, not up to 6x larger, and the
    schedule still reads the run's own step.  The state it saves says so, and loads back."""
    grad = np.array([0.5, -2.0], np.float32)
    fresh_params, late_params = {"p": np.ones(2, np.float32)}, {"p": np.ones(2, np.float32)}
    fresh, late = Adam(fresh_params, lr=0.1), Adam(late_params, lr=lambda step: 0.1 if step >= 500 else 9.0)
    late.load_state_dict({"step": 500, "slots_since": 500})
    for _ in range(3):
        fresh.step({"p": grad})
        late.step({"p": grad})
    np.testing.assert_array_equal(late_params["p"], fresh_params["p"])
    assert late.state_dict()["slots_since"] == 500 and late.step_count == 503
    again = Adam({"p": late_params["p"].copy()}, lr=0.1)
    again.load_state_dict(late.state_dict())
    assert again.slots_since == 500
    with pytest.raises(ValueError, match="slots_since"):
        Adam(fresh_params).load_state_dict({"step": 3, "slots_since": 4})


def test_plain_sgd_keeps_no_slots_and_refuses_momentum_state():
    params = {"p": np.zeros(2, np.float32)}
    plain = SGD(params, lr=0.1)
    plain.step({"p": np.ones(2, np.float32)})
    assert plain.state_dict() == {"step": 1}
    SGD(params, lr=0.1).load_state_dict(plain.state_dict())
    heavy = SGD(params, lr=0.1, momentum=0.9)
    heavy.step({"p": np.ones(2, np.float32)})
    with pytest.raises(ValueError, match="unknown entry 'velocity.p'"):
        SGD(params, lr=0.1).load_state_dict(heavy.state_dict())
