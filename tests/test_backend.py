import sys
import types

import numpy as np
import pytest

from ironlearn import backend as be


def test_cpu_backend_is_numpy_float32():
    b = be.Backend("cpu")
    assert b.xp is np and b.dtype == np.float32
    assert b.asarray([1, 2]).dtype == np.float32


def test_unknown_device_is_a_clear_error():
    with pytest.raises(be.BackendError, match="unknown device 'tpu'"):
        be.get_backend("tpu")


@pytest.mark.skipif(be.cuda_available(), reason="a GPU is present")
def test_cuda_without_cupy_is_one_clear_line():
    with pytest.raises(be.BackendError) as info:
        be.Backend("cuda")
    message = str(info.value)
    assert "cuda" in message and "\n" not in message


@pytest.mark.skipif(be.cuda_available(), reason="a GPU is present")
def test_auto_falls_back_to_cpu_with_a_notice():
    notices = []
    b = be.get_backend("auto", notify=notices.append)
    assert b.device == "cpu" and len(notices) == 1 and "CPU" in notices[0]


def test_round_trip_and_transfer_count(backend):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    device = backend.asarray(host)
    assert backend.xp.asarray(device).shape == (2, 3)
    np.testing.assert_array_equal(backend.to_host(device), host)
    assert backend.transfers == (2 if backend.device == "cuda" else 0)
    backend.synchronize()


def test_get_array_module_follows_the_array(backend):
    assert be.get_array_module(backend.asarray([1.0])) is backend.xp


def test_an_array_already_on_the_device_is_not_a_transfer(backend):
    device = backend.asarray(np.ones(3))
    before = backend.transfers
    assert backend.asarray(device) is device  # same device and dtype: not even a copy
    assert backend.transfers == before


def test_module_level_conversions_follow_the_target(backend):
    device = backend.asarray(np.zeros(3))
    host = be.to_host(device)
    assert type(host) is np.ndarray and host.dtype == np.float32
    moved = be.asarray_like(device, np.array([1, 2, 3], np.float64))
    assert be.get_array_module(moved) is backend.xp and moved.dtype == np.float32
    back = be.asarray_like(np.zeros(1, np.float64), device)
    assert type(back) is np.ndarray and back.dtype == np.float64
    array = np.ones(2, np.float32)
    assert be.to_host(array) is array and be.asarray_like(array, array) is array


def test_cupy_is_resolved_once(monkeypatch):
    # A stand-in CuPy that counts how often it is asked for its GPUs: get_array_module runs
    # many times per step, and each ask is a CUDA runtime call.
    asked = []
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: asked.append(1) or 1))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(be, "_cupy", None, raising=False)
    device_array = type("ndarray", (), {"__module__": "cupy._core.core"})()
    assert all(be.get_array_module(device_array) is fake for _ in range(5))
    assert len(asked) == 1


@pytest.mark.skipif(not be.cuda_available(), reason="no GPU with CuPy here")
def test_cuda_release_unused_gives_the_pools_free_blocks_back():
    backend = be.Backend("cuda")
    pool = backend.xp.get_default_memory_pool()
    kept = backend.xp.ones(1 << 20, dtype=backend.xp.float32)
    dropped = backend.xp.ones(1 << 22, dtype=backend.xp.float32)
    size = dropped.nbytes
    del dropped
    held = pool.total_bytes()
    assert held - pool.used_bytes() >= size
    backend.release_unused()
    # Whole free chunks go back; a chunk an array still uses in part stays (CuPy's pool).
    assert pool.total_bytes() <= held - size and pool.used_bytes() >= kept.nbytes
