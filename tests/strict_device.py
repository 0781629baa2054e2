"""A pretend GPU for the CPU: NumPy arrays that fail where CuPy would wait for the device.

On a GPU, ``float(x)``, ``x.item()``, a boolean mask, ``nonzero``, ``unique`` or ``bincount``
make the host wait for the device (a sync), and ``xp.asarray(host data)`` copies to it.  NumPy
does all of these silently, so a CPU run cannot show them.  :func:`strict_device` swaps the
backend's CuPy for this module's stand-in: arrays of :class:`DeviceArray`, which the backend
takes for CuPy arrays (so every ``xp is not np`` path runs) and which raise :class:`HiddenSync`
or :class:`HiddenCopy` at each of those.  The hand-written kernels are not there (no
``RawModule``): :mod:`ironlearn.kernels` runs its portable path.
"""

from __future__ import annotations

import contextlib
import time
import types

import numpy as np

from ironlearn import backend as be


class HiddenSync(AssertionError):
    """Code asked a device array for something only the host knows."""


class HiddenCopy(AssertionError):
    """Code copied host data to the device outside the backend's counted transfers."""


#: NumPy functions whose CuPy versions read the device back (their output's size depends on the data).
SYNCING = {np.nonzero, np.flatnonzero, np.argwhere, np.unique, np.bincount, np.count_nonzero,
           np.extract, np.compress}


def _is_mask(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == bool for k in keys)


class DeviceArray(np.ndarray):
    """A NumPy array that behaves as a CuPy one where a step must not touch the host."""

    def get(self):
        return np.array(self.view(np.ndarray))

    def _sync(self, what):
        raise HiddenSync(f"{what} on a device array (a sync on a GPU)")

    def __float__(self):
        self._sync("float()")

    def __int__(self):
        self._sync("int()")

    def __bool__(self):
        self._sync("bool() (a Python branch on a device value)")

    def __index__(self):
        self._sync("a device array as an index")

    def item(self, *args):
        self._sync(".item()")

    def tolist(self):
        self._sync(".tolist()")

    def nonzero(self):
        self._sync("nonzero")

    def __getitem__(self, key):
        if _is_mask(key):
            self._sync("a boolean mask")
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        if _is_mask(key):
            self._sync("a boolean mask")
        super().__setitem__(key, value)

    def __array_function__(self, func, types, args, kwargs):
        if func in SYNCING:
            self._sync(f"numpy.{func.__name__}")
        return super().__array_function__(func, types, args, kwargs)


DeviceArray.__module__ = "cupy._strict"  # what backend.on_device looks at


def _device(value):
    if isinstance(value, np.ndarray) and not isinstance(value, DeviceArray):
        return value.view(DeviceArray)
    return value


class _StrictModule(types.ModuleType):
    """``cupy`` for :class:`DeviceArray`: NumPy's functions, their arrays kept on the "device"."""

    ndarray = DeviceArray
    strict = False  # inside strict_device(forbid=True): xp.asarray(host data) raises

    def __getattr__(self, name):
        value = getattr(np, name)
        if isinstance(value, (type, np.ufunc)) or not callable(value):
            return value  # dtypes and ufuncs (ufuncs keep DeviceArray inputs as they are)
        if name in ("asarray", "array", "ascontiguousarray"):
            return self._to_device(value)

        def on_device(*args, **kwargs):
            result = value(*args, **kwargs)
            return tuple(map(_device, result)) if isinstance(result, tuple) else _device(result)

        return on_device

    def _to_device(self, convert):
        def to_device(data, *args, **kwargs):
            if self.strict and not isinstance(data, DeviceArray):
                raise HiddenCopy(f"xp.{convert.__name__}() of host data (a copy to the GPU)")
            result = convert(data, *args, **kwargs)
            if not isinstance(data, DeviceArray) and np.shares_memory(result, data):
                result = result.copy()  # a copy to the device never shares the host's memory
            return _device(result)

        return to_device


class _Event:
    def record(self):
        self.at = time.perf_counter()


class _Pool:
    def used_bytes(self):
        return 0

    total_bytes = used_bytes

    def free_all_blocks(self):
        pass


class _MemoryHook:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _fake_cupy():
    module = _StrictModule("cupy")
    stream = types.SimpleNamespace(synchronize=lambda: None, done=True)
    properties = {"name": b"pretend GPU", "major": 0, "minor": 0, "totalGlobalMem": 0}
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDeviceProperties=lambda device: properties,
                                    driverGetVersion=lambda: 0, runtimeGetVersion=lambda: 0)
    module.cuda = types.SimpleNamespace(runtime=runtime, get_current_stream=lambda: stream, Event=_Event,
                                        get_elapsed_time=lambda a, b: (b.at - a.at) * 1000, MemoryHook=_MemoryHook)
    module.get_default_memory_pool = _Pool
    module.RawKernel = lambda code, name: (lambda grid, block, args, **options: None)  # not RawModule: no kernels
    return module


def _scatter_add(out, index, values):
    np.add.at(out.view(np.ndarray), np.asarray(index), np.asarray(values))


@contextlib.contextmanager
def strict_device(monkeypatch):
    """Inside: ``Backend("cuda")`` is the pretend GPU.  Yields its module; set ``module.strict``
    to make any copy of host data to it raise."""
    module = _fake_cupy()
    monkeypatch.setattr(be, "_cupy", module)
    monkeypatch.setattr(be, "_cupyx", types.SimpleNamespace(scatter_add=_scatter_add))
    yield module


@contextlib.contextmanager
def forbidding(module):
    """Inside: a copy of host data to the pretend GPU raises :class:`HiddenCopy`."""
    module.strict = True
    try:
        yield
    finally:
        module.strict = False


def guard_every_step(monkeypatch, module, backend) -> None:
    """Run every :class:`~ironlearn.train.Trainer` step inside :func:`forbidding` ``module`` and
    ``backend.device_only()``: a step that copies host data to the device, or syncs, raises."""
    from ironlearn.train import Trainer

    step = Trainer.train_step

    def guarded(trainer):
        with forbidding(module), backend.device_only():
            step(trainer)

    monkeypatch.setattr(Trainer, "train_step", guarded)
