"""codec/portable.py: exp and log to about an ulp, from exactly rounded operations only, and the
arithmetic each format's files are coded with."""

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream import entropy
from ironlearn.codec.bitstream import portable


def ulps(value, exact) -> float:
    return abs(value - exact) / math.ulp(exact)


@pytest.mark.parametrize("x", np.random.default_rng(0).uniform(-12, 12, 300).tolist() + [0.0, -12.0, 12.0, 1e-12])
def test_exp_is_within_an_ulp_of_e_to_the_x(x):
    getcontext().prec = 40
    assert ulps(portable.exp(x), float(Decimal(x).exp())) <= 1


@pytest.mark.parametrize("x", np.exp(np.random.default_rng(1).uniform(-20, 30, 300)).tolist() + [0.2, 0.5, 1.0, 2.0])
def test_log_is_within_two_ulps_of_the_logarithm(x):
    getcontext().prec = 40
    exact = float(Decimal(x).ln())
    assert portable.log(x) == exact == 0.0 if x == 1.0 else ulps(portable.log(x), exact) <= 2


def test_each_format_has_its_arithmetic():
    """Files from format 6 on use these; format 5's were coded with the C library's, and are read so.
    The two differ now and then in the last bit, which is why the format changed."""
    assert portable.for_version(container.VERSION) == portable.CURRENT == (portable.exp, portable.log)
    assert portable.for_version(5) == (math.exp, math.log)
    xs = np.random.default_rng(2).uniform(-12, 12, 2000)
    assert any(portable.exp(x) != math.exp(x) for x in xs)
    assert np.abs(entropy.class_log_activity(portable.log) - entropy.class_log_activity(math.log)).max() < 1e-14
