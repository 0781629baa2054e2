"""The one place that decides which array module runs the maths.

Everything else in ironlearn receives ``xp`` from a :class:`Backend` (or from
``get_array_module`` on an array it holds) and writes its array code once.
Only this module imports ``cupy``, and only when the ``cuda`` device is asked
for, so importing ironlearn never touches a GPU.

Host <-> device copies go one way: :func:`to_host` and :func:`asarray_like`
here, which :meth:`Backend.to_host` and :meth:`Backend.asarray` wrap.  They
happen at I/O boundaries (loading data, saving and loading checkpoints,
rendering), never inside a training step.  The Backend methods count the
copies that cross, so a test can prove that a step copies nothing; the
module-level functions serve code that holds arrays but no Backend (saving
and loading states) and count nothing.
"""

from __future__ import annotations

import ctypes
import functools
import platform

import numpy as np

#: The default floating-point type everywhere: parameters, activations, gradients.
DEFAULT_DTYPE = np.float32

DEVICES = ("cpu", "cuda", "auto")


class BackendError(RuntimeError):
    """A device was asked for that this machine cannot provide."""


_cupy = None  # CuPy once imported and checked; get_array_module asks for it many times per step


def _import_cupy():
    """CuPy, imported and checked for a GPU once per process."""
    global _cupy
    if _cupy is None:
        _cupy = _load_cupy()
    return _cupy


def _load_cupy():
    try:
        import cupy  # the only cupy import in ironlearn
    except Exception as exc:  # ImportError, or a broken CUDA install raising anything
        raise BackendError(
            "device 'cuda' needs CuPy: install it with `pip install ironlearn[gpu]` "
            f"(import failed: {type(exc).__name__}: {exc})"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise BackendError(f"device 'cuda' asked for, but CuPy sees no usable GPU ({exc})") from None
    if count < 1:
        raise BackendError("device 'cuda' asked for, but CuPy sees no GPU")
    return cupy


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    try:
        _import_cupy()
    except BackendError:
        return False
    return True


def _on_device(array) -> bool:
    return type(array).__module__.split(".")[0] == "cupy"


def get_array_module(array):
    """``numpy`` or ``cupy``, whichever owns ``array`` (without importing cupy needlessly)."""
    return _import_cupy() if _on_device(array) else np


def to_host(array) -> np.ndarray:
    """``array`` as a NumPy array: copied off the GPU when it lives there, else as it is (no copy)."""
    return array.get() if _on_device(array) else np.asarray(array)


def _convert(xp, array, dtype):
    # NumPy refuses to read CuPy memory implicitly, and CuPy reads host memory by copying it.
    return np.asarray(to_host(array), dtype=dtype) if xp is np else xp.asarray(array, dtype=dtype)


def asarray_like(like, array):
    """``array`` on ``like``'s device (NumPy or CuPy) with ``like``'s dtype.

    Copies only when it must: across devices, or to change the dtype.
    """
    return _convert(get_array_module(like), array, like.dtype)


def _records(array):
    """A C-contiguous ``(rows, k)`` NumPy array seen as ``rows`` one-item records of k values."""
    return array.view(np.dtype((np.void, array.itemsize * array.shape[1]))).reshape(-1)


def take_rows(array, index):
    """``array[index]`` for a 2-D ``array``: shape ``index.shape + (k,)``.

    NumPy gathers one-item records through ``take`` several times faster than rows of a 2-D
    array through fancy indexing (463,890 rows of two float32 out of 4.6 million: 2.2 ms against
    8.0 ms; a hash grid's corners: 3.5 ms against 48); CuPy's fancy indexing is already one kernel.
    """
    if not isinstance(array, np.ndarray):
        return array[index]
    array = np.ascontiguousarray(array)
    return np.take(_records(array), index).view(array.dtype).reshape(*np.shape(index), array.shape[1])


def put_rows(array, rows, values) -> None:
    """``array[rows] = values`` for a 2-D ``array`` and distinct ``rows``, as :func:`take_rows` reads."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        array[rows] = values
        return
    np.put(_records(array), rows, _records(np.ascontiguousarray(values, dtype=array.dtype)))


class Backend:
    """An array module (NumPy or CuPy) with ironlearn's dtype policy.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        ``cpu`` runs on NumPy; ``cuda`` runs on CuPy and fails with a one-line
        :class:`BackendError` when CuPy or a GPU is missing.
    dtype : numpy dtype, default float32
        The floating type for parameters and data.
    """

    def __init__(self, device: str = "cpu", dtype=DEFAULT_DTYPE):
        if device not in ("cpu", "cuda"):
            raise BackendError(f"unknown device {device!r}: use 'cpu' or 'cuda'")
        self.device = device
        self.dtype = np.dtype(dtype)
        self.xp = _import_cupy() if device == "cuda" else np
        if device == "cpu":
            keep_freed_memory()
        self.transfers = 0  # copies that crossed between host and device through this backend

    def __repr__(self) -> str:
        return f"Backend(device={self.device!r}, dtype={self.dtype.name})"

    # -- transfers: the only ways data crosses between host and device ----------
    def asarray(self, array, dtype=None):
        """``array`` (host data, or an array on either device) on this backend's device, as
        ``dtype`` (default: the backend's); counted when it crosses."""
        if _on_device(array) != (self.device == "cuda"):
            self.transfers += 1
        return _convert(self.xp, array, self.dtype if dtype is None else dtype)

    def to_host(self, array) -> np.ndarray:
        """A NumPy copy of a device array (counted), or a host array as it is."""
        if _on_device(array):
            self.transfers += 1
        return to_host(array)

    def synchronize(self) -> None:
        """Wait for queued device work; time GPU code only after this."""
        if self.device == "cuda":
            self.xp.cuda.get_current_stream().synchronize()

    def memory_stats(self) -> dict:
        """Bytes held by CuPy's memory pool (empty on the CPU)."""
        if self.device != "cuda":
            return {}
        pool = self.xp.get_default_memory_pool()
        return {"pool_used_bytes": int(pool.used_bytes()), "pool_total_bytes": int(pool.total_bytes())}


@functools.cache
def keep_freed_memory() -> bool:
    """Let this process keep the memory it frees for the next step, as CuPy's pool does on a GPU.

    A training step allocates the same large temporaries each time (activations of the whole
    batch, megabytes each).  glibc's malloc returns such memory to the system as soon as it is
    freed, and the next step's arrays then fault every page back in, zero-filled by the kernel:
    see ``benchmarks/page_faults.py`` and docs/benchmarks.md.  It raises malloc's mmap threshold,
    trim threshold and top pad (``mallopt``), so freed memory stays in the process (at most its
    peak, which is what the fit needs anyway).  Elsewhere than glibc it does nothing.  Returns
    whether it applied.
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    # Setting any of these turns off glibc's own adjustment of the mmap threshold, so it is set
    # too, to its largest (32 MiB): blocks below it come from the heap, which now keeps them.
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    return all(libc.mallopt(option, value) == 1 for option, value in
               ((m_mmap_threshold, 32 << 20), (m_trim_threshold, 1 << 30), (m_top_pad, 64 << 20)))


def get_backend(device: str = "cpu", *, notify=None) -> Backend:
    """Resolve ``cpu``, ``cuda`` or ``auto`` to a :class:`Backend`.

    ``auto`` picks the GPU when CuPy sees one, else the CPU, calling
    ``notify(message)`` (when given) with a one-line notice.
    """
    if device not in DEVICES:
        raise BackendError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    if device == "auto":
        if cuda_available():
            return Backend("cuda")
        if notify is not None:
            notify("device auto: no GPU with CuPy found, running on the CPU")
        return Backend("cpu")
    return Backend(device)

