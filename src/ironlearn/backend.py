"""The one place that decides which array module runs the maths.

Everything else in ironlearn receives ``xp`` from a :class:`Backend` (or from
``get_array_module`` on an array it holds) and writes its array code once.
Only this module imports ``cupy``, and only when the ``cuda`` device is asked
for, so importing ironlearn never touches a GPU.

Host <-> device copies go one way: :func:`to_host` and :func:`asarray_like`
here, which :meth:`Backend.to_host` and :meth:`Backend.asarray` wrap.  They
happen at I/O boundaries (loading data, saving and loading checkpoints,
rendering), never inside a training step.  Every copy that crosses is counted
(:func:`crossings`; a Backend also counts its own in ``transfers``), and
:meth:`Backend.device_only` turns a crossing, and on a GPU a device sync, into
an error: a test wraps a training step in it to prove the step stays on the
device.  The few device primitives that NumPy and CuPy spell differently
(a scatter-add) live here too; the hand-written CUDA kernels live in
:mod:`ironlearn.kernels`, which gets CuPy from here.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import platform
import warnings

import numpy as np

#: The default floating-point type everywhere: parameters, activations, gradients.
DEFAULT_DTYPE = np.float32

DEVICES = ("cpu", "cuda", "auto")


class BackendError(RuntimeError):
    """A device was asked for that this machine cannot provide."""


class HostTransferError(RuntimeError):
    """A copy between host and device was asked for inside :meth:`Backend.device_only`."""


_cupy = None  # CuPy once imported and checked; get_array_module asks for it many times per step
_cupyx = None
_crossings = 0  # copies that crossed between host and device, through any function here
_device_only = 0  # > 0 inside Backend.device_only: a crossing raises


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


def _import_cupyx():
    """CuPy's ``cupyx`` (scatter-add, sync detection), once CuPy itself is known to work."""
    global _cupyx
    if _cupyx is None:
        _import_cupy()
        import cupyx  # part of CuPy: imported here only, beside cupy

        _cupyx = cupyx
    return _cupyx


def cuda_module():
    """The CuPy module, for :mod:`ironlearn.kernels` (raises :class:`BackendError` without a GPU)."""
    return _import_cupy()


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    try:
        _import_cupy()
    except BackendError:
        return False
    return True


def _on_device(array) -> bool:
    return type(array).__module__.split(".")[0] == "cupy"


def on_device(array) -> bool:
    """True when ``array`` lives on the GPU (a CuPy array)."""
    return _on_device(array)


def crossings() -> int:
    """How many copies have crossed between host and device in this process, through this module."""
    return _crossings


def _cross():
    global _crossings
    if _device_only:
        raise HostTransferError("a copy between host and device inside Backend.device_only() "
                                "(a training step must not make one)")
    _crossings += 1


def get_array_module(array):
    """``numpy`` or ``cupy``, whichever owns ``array`` (without importing cupy needlessly)."""
    return _import_cupy() if _on_device(array) else np


def to_host(array) -> np.ndarray:
    """``array`` as a NumPy array: copied off the GPU when it lives there, else as it is (no copy)."""
    if not _on_device(array):
        return np.asarray(array)
    _cross()
    return array.get()


def _convert(xp, array, dtype):
    # NumPy refuses to read CuPy memory implicitly, and CuPy reads host memory by copying it.
    if xp is np:
        return np.asarray(to_host(array), dtype=dtype)
    if not _on_device(array):
        _cross()
    return xp.asarray(array, dtype=dtype)


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
    array through fancy indexing (measured: docs/benchmark-log.md, 'Measurements the code's
    comments quoted'); CuPy's fancy indexing is already one kernel.
    """
    if _on_device(array) or not isinstance(array, np.ndarray):
        return array[index]
    array = np.ascontiguousarray(array)
    return np.take(_records(array), index).view(array.dtype).reshape(*np.shape(index), array.shape[1])


def put_rows(array, rows, values) -> None:
    """``array[rows] = values`` for a 2-D ``array`` and distinct ``rows``, as :func:`take_rows` reads."""
    if _on_device(array) or not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        array[rows] = values
        return
    np.put(_records(array), rows, _records(np.ascontiguousarray(values, dtype=array.dtype)))


def scatter_add(out, index, values) -> None:
    """``out[index] += values`` with repeated indices summed, in place, on either device.

    NumPy's ``add.at`` on the host; on the GPU ``cupyx.scatter_add``, one atomic kernel that
    never reads anything back (``bincount`` there reads the largest index back to size its
    output: a sync each call).
    """
    if _on_device(out):
        _import_cupyx().scatter_add(out, index, values)
    else:
        np.add.at(out, index, values)


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
        converted = _convert(self.xp, array, self.dtype if dtype is None else dtype)
        if _on_device(array) != (self.device == "cuda"):
            self.transfers += 1
        return converted

    def to_host(self, array) -> np.ndarray:
        """A NumPy copy of a device array (counted), or a host array as it is."""
        host = to_host(array)
        if _on_device(array):
            self.transfers += 1
        return host

    def synchronize(self) -> None:
        """Wait for queued device work; time GPU code only after this."""
        if self.device == "cuda":
            self.xp.cuda.get_current_stream().synchronize()

    @contextlib.contextmanager
    def device_only(self):
        """Inside: a copy between host and device through ironlearn raises
        :class:`HostTransferError`, and on a GPU so does a device sync that CuPy sees (a
        ``float()``, ``.item()``, boolean mask, ``nonzero`` or ``bincount`` on a device array:
        ``cupyx.allow_synchronize(False)``, which raises ``cupyx.DeviceSynchronized``).

        Wrap a training step in it to prove that the step runs on the device alone.  CuPy sees
        only the syncs it makes itself (not cuBLAS's, nor the driver's), so ``benchmarks/gpu``
        also checks that a step returns while the GPU is still busy with earlier work.
        """
        global _device_only
        _device_only += 1
        try:
            with contextlib.ExitStack() as guards:
                allow = getattr(_import_cupyx(), "allow_synchronize", None) if self.device == "cuda" else None
                if allow is not None:
                    with warnings.catch_warnings():  # "will be removed": it is what CuPy has today
                        warnings.simplefilter("ignore")
                        guards.enter_context(allow(False))
                yield self
        finally:
            _device_only -= 1

    @property
    def can_detect_syncs(self) -> bool:
        """Whether :meth:`device_only` turns device syncs into errors here (CuPy with
        ``cupyx.allow_synchronize``); on the CPU there is no device to wait for."""
        return self.device == "cuda" and hasattr(_import_cupyx(), "allow_synchronize")

    def memory_stats(self) -> dict:
        """Bytes held by CuPy's memory pool (empty on the CPU).

        ``pool_used_bytes`` are in arrays now; ``pool_total_bytes`` is what the pool holds, which
        is also its peak, since the pool keeps the blocks it frees for reuse and never gives them
        back unless asked; ``pool_peak_used_bytes`` (inside :meth:`tracking_peak` only) is the most
        bytes in arrays at once.
        """
        if self.device != "cuda":
            return {}
        pool = self.xp.get_default_memory_pool()
        stats = {"pool_used_bytes": int(pool.used_bytes()), "pool_total_bytes": int(pool.total_bytes())}
        if self._peak is not None:
            stats["pool_peak_used_bytes"] = int(self._peak.peak)
        return stats

    def release_unused(self) -> None:
        """Give the GPU back the blocks CuPy's pool keeps but no array uses (nothing on the CPU):
        after a fit's setup, whose one-off arrays (the calibration's steps, the start's spline)
        would otherwise stay held for the whole run."""
        if self.device == "cuda":
            self.xp.get_default_memory_pool().free_all_blocks()

    @contextlib.contextmanager
    def tracking_peak(self):
        """Inside (and in :meth:`memory_stats` after it): the peak of bytes in arrays, from a CuPy
        memory hook called at every allocation (a few microseconds each: not for timing runs).
        Does nothing on the CPU."""
        if self.device != "cuda":
            yield self
            return
        self._peak = _peak_hook(self.xp)
        with self._peak:
            yield self

    _peak = None


def _peak_hook(cupy):
    """A CuPy memory hook that keeps the most bytes the default pool has had in use."""
    pool = cupy.get_default_memory_pool()

    class PeakHook(cupy.cuda.MemoryHook):
        name = "ironlearn_peak"

        def __init__(self):
            self.peak = pool.used_bytes()

        def malloc_postprocess(self, **kwargs):
            self.peak = max(self.peak, pool.used_bytes())

    return PeakHook()


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


def blas_threads(threads: int | None):
    """At most ``threads`` BLAS threads within the block (None: as they are), set in the BLAS
    library itself, which reads its environment only once, at load (threadpoolctl).  One thread
    suits small products: on 2 cores, a second spins while the first works, and beside another
    busy process each product waits for both (the codec's MLP made 1.5 times the steps alone on
    one thread, and its steps on two ran many times as long beside a 2-thread job; measured:
    docs/benchmark-log.md, 'Measurements the code's comments quoted')."""
    if threads is None:
        return contextlib.nullcontext()
    return _limited(threads)


@contextlib.contextmanager
def _limited(threads: int):
    limiter = blas_controller().limit(limits=threads, user_api="blas")
    try:
        yield
    finally:
        limiter.restore_original_limits()
        release_blas()


def release_blas() -> None:
    """Let any thread set the BLAS thread count again.  threadpoolctl (3.8 on) lets only the thread
    that last set OpenBLAS's shared pool set it while that thread lives: a fit in another thread
    (the API called from one, a live page's test) had its counts ignored and ran on what the main
    thread left, with other last bits than the same fit in the main thread."""
    for library in blas_controller().select(user_api="blas").lib_controllers:
        clear = getattr(library, "clear_controlling_thread", None)
        if clear is not None:
            clear()  # only when this thread controls it


@functools.cache
def blas_controller():
    """threadpoolctl's view of the BLAS libraries loaded, made once: a limit set through it takes
    about 23 us, where ``threadpool_limits`` looks the libraries up again each time (426 us), too
    slow for :class:`~ironlearn.train.threads.ThreadPolicy`'s step-by-step changes."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


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

