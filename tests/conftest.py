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
