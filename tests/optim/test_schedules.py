import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironlearn.optim import Adam, constant, cosine, default_warmup_steps, warmup_cosine


def test_constant():
    assert constant(0.1)(0) == constant(0.1)(10**9) == 0.1


def test_cosine_matches_the_closed_form():
    lr_max, lr_min, total, warmup = 1e-2, 1e-4, 1000, 100
    schedule = cosine(lr_max, lr_min, total, warmup)
    for step in range(0, 1200, 7):
        if step < warmup:
            expected = lr_max * (step + 1) / warmup
        else:
            progress = min((step - warmup) / (total - warmup), 1.0)
            expected = lr_min + (lr_max - lr_min) * (1 + math.cos(math.pi * progress)) / 2
        assert schedule(step) == pytest.approx(expected, rel=1e-12)
    assert schedule(warmup) == pytest.approx(lr_max) and schedule(total) == pytest.approx(lr_min)


def test_cosine_continues_after_resume():
    schedule = cosine(1e-2, 0.0, 100)
    params = {"p": np.zeros(3, np.float32)}
    first = Adam(params, lr=schedule)
    seen = []
    for _ in range(40):
        seen.append(first.next_lr)
        first.step({"p": np.ones(3, np.float32)})
    resumed = Adam(params, lr=cosine(1e-2, 0.0, 100))
    resumed.load_state_dict(first.state_dict())
    assert resumed.next_lr == schedule(40) < seen[0]
    assert resumed.next_lr != 1e-2  # not restarted at lr_max


@pytest.mark.parametrize("kwargs,message", [
    ({"lr_max": -1, "lr_min": 0, "total_steps": 10}, "lr_max"),
    ({"lr_max": 1, "lr_min": 2, "total_steps": 10}, "lr_min"),
    ({"lr_max": 1, "lr_min": 0, "total_steps": 0}, "total_steps"),
    ({"lr_max": 1, "lr_min": 0, "total_steps": 10, "warmup_steps": 10}, "warmup_steps"),
])
def test_cosine_validates_at_once(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cosine(**kwargs)
    with pytest.raises(ValueError, match="positive"):
        constant(float("nan"))


@pytest.mark.parametrize("total,warmup", [
    (1, 0), (3, 0), (4, 1), (100, 25), (199, 49), (200, 50), (2500, 50), (2600, 52), (5000, 100), (10**7, 100),
])
def test_default_warmup_steps(total, warmup):
    assert default_warmup_steps(total) == warmup


def test_warmup_cosine_is_cosine_with_the_default_warm_up():
    lr_max, lr_min, total = 2e-2, 2e-4, 1000
    schedule = warmup_cosine(lr_max, lr_min, total)
    assert schedule == cosine(lr_max, lr_min, total, warmup_steps=50)
    assert schedule(0) == pytest.approx(lr_max / 50) and schedule(49) == pytest.approx(lr_max)
    progress = (600 - 50) / (total - 50)
    assert schedule(600) == pytest.approx(lr_min + (lr_max - lr_min) * (1 + math.cos(math.pi * progress)) / 2)
    assert schedule(total) == pytest.approx(lr_min)
    assert warmup_cosine(1e-3, 1e-5, 1).warmup_steps == 0  # a one-step run has no room to warm up


@settings(max_examples=60, deadline=None)
@given(lr_max=st.floats(1e-6, 10.0), fraction=st.floats(0.0, 1.0), total=st.integers(1, 3000),
       warmup_share=st.floats(0.0, 0.99))
def test_cosine_never_increases_after_warm_up(lr_max, fraction, total, warmup_share):
    warmup = min(int(total * warmup_share), total - 1)
    schedule = cosine(lr_max, lr_max * fraction, total, warmup)
    rates = [schedule(step) for step in range(total + 3)]
    after = rates[warmup:]
    assert all(later <= earlier for earlier, later in zip(after, after[1:]))
    assert all(0 < rate <= lr_max for rate in rates[:warmup])  # warm-up climbs to lr_max
    ulp = 1e-15 * lr_max  # lr_min + (lr_max - lr_min) rounds back to lr_max only within an ulp
    assert all(lr_max * fraction - ulp <= rate <= lr_max + ulp for rate in after)
    assert rates[warmup] == pytest.approx(lr_max, rel=1e-15) and rates[-1] == lr_max * fraction
