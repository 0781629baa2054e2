"""The backend's kernels: a hash grid's read and its transpose, and Adam's update, each beside
the NumPy code it must agree with.

* :func:`gather_weighted`, a hash grid's forward read: ``sum_k w[k] * table[index[k]]`` for each
  point and level (4 vertices a read for bilinear levels, 16 for B-splines);
* :func:`scatter_weighted`, its backward: the same sum transposed, ``out[index[k]] += w[k] * g``,
  repeated rows summed;
* :func:`adam_update`, one Adam step on one parameter, optionally on the rows a mask marks only;
* :func:`sine` and :func:`sine_backward`, SIREN's activation ``sin(w0 x)`` and its derivative.

Each takes arrays and follows their device.  NumPy arrays run the reference code, which is what
ironlearn ran before these kernels, operation for operation (the CPU path is unchanged, bit for
bit).  CuPy arrays run in one of two :data:`MODES`:

``kernels`` (the default)
    float32 arrays run hand-written CUDA: one thread a point and level for the read; one a
    vertex read, with ``float2`` atomics on sm_90 and later, for the scatter, where the coarse
    levels (a few hundred rows that every point hits) first sum in shared memory; Adam as one
    elementwise kernel; the sine and its derivative as one elementwise kernel each (one pass
    over the activations, where the reference makes two forward and three backward).  Other
    dtypes take the portable path.
``portable``
    The reference code on CuPy, its scatter through :func:`~ironlearn.backend.scatter_add`
    (``cupyx.scatter_add``).  Neither mode reads anything back to the host.

Choose with :func:`use`, or ``IRONLEARN_KERNELS=portable`` in the environment.  CuPy comes from
:mod:`ironlearn.backend` (the only module that imports it), and nothing compiles until a kernel
first runs.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from . import cuda
from .backend import BackendError, cuda_module, get_array_module, on_device, scatter_add, take_rows

MODES = ("kernels", "portable")
_OFF = ("0", "off", "no")  # IRONLEARN_KERNELS values that also mean portable
_mode = None  # read from the environment at first use


def mode() -> str:
    """The mode CuPy arrays run in now: ``kernels`` or ``portable``.  BackendError when
    ``IRONLEARN_KERNELS`` holds anything else (a typo must not run the mode it tried to avoid)."""
    global _mode
    if _mode is None:
        value = os.environ.get("IRONLEARN_KERNELS", "kernels")
        if value not in MODES + _OFF:
            raise BackendError(f"IRONLEARN_KERNELS={value!r} is not a kernel mode; set it to one of "
                               f"{', '.join(MODES)}, or unset it")
        _mode = "portable" if value in _OFF else value
    return _mode


@contextlib.contextmanager
def use(name: str):
    """Run CuPy arrays in mode ``name`` (one of :data:`MODES`) inside the block."""
    global _mode
    if name not in MODES:
        raise ValueError(f"unknown kernel mode {name!r}: use one of {', '.join(MODES)}")
    before, _mode = mode(), name
    try:
        yield
    finally:
        _mode = before


def compiled(*arrays) -> bool:
    """Whether these arrays take the hand-written kernels: CuPy float32 in ``kernels`` mode."""
    first = arrays[0]
    return (on_device(first) and mode() == "kernels" and all(a.dtype == np.float32 for a in arrays)
            and hasattr(get_array_module(first), "RawModule"))


# -- the hash grid's read ----------------------------------------------------------------------
def gather_weighted(table, indices, weights, spread=None):
    """The weighted sum of the rows each point reads at each level.

    Parameters
    ----------
    table : array ``(rows, F)``
    indices : int array ``(K, n, L)``
        The rows read: ``K`` vertices for each of ``n`` points at ``L`` levels.
    weights : array ``(K, n, L)``
    spread : array ``(K, n, L, F)``, optional
        ``weights`` repeated for each feature, which the NumPy path multiplies by faster.

    Returns
    -------
    array ``(n, L, F)``: ``sum_k weights[k] * table[indices[k]]``.
    """
    if compiled(table, weights):
        return _cuda_gather(table, indices, weights)
    corners = take_rows(table, indices)  # (K, n, L, F)
    corners *= weights[..., None] if spread is None else spread
    mixed = corners[0]
    for k in range(1, len(corners)):
        mixed += corners[k]
    return mixed


def scatter_weighted(out, index, weights, grad, levels=None) -> None:
    """The transpose of :func:`gather_weighted`, written over ``out``: each row of ``out``
    becomes the sum of ``weights[k] * grad`` over the reads of that row.

    Parameters
    ----------
    out : array ``(rows, F)``
        Overwritten.
    index : int array ``(K * n * L,)``
        The row of ``out`` each read adds into (``indices.reshape(-1)``, or renumbered).
    weights : array ``(K, n, L)``
    grad : array ``(n, L, F)``
        d(loss)/d(the read's output).
    levels : (offsets, sizes), optional
        Where each level's rows start in ``out`` and how many it has, when ``index`` holds
        the table's own rows: the kernel then sums the reads of small levels in shared memory.
    """
    if compiled(out, weights, grad) and out.flags.c_contiguous:  # the kernel writes rows of F in place
        _cuda_scatter(out, index, weights, grad, levels)
        return
    xp = get_array_module(out)
    if on_device(out):  # bincount reads the largest index back to the host: a sync
        out.fill(0)
        scatter_add(out, index, (weights[..., None] * grad[None]).reshape(-1, out.shape[1]))
        return
    for f in range(out.shape[1]):
        contribution = weights * grad[None, :, :, f]  # (K, n, L)
        out[:, f] = xp.bincount(index, weights=contribution.reshape(-1), minlength=len(out))


# -- Adam ----------------------------------------------------------------------------------------
def adam_update(param, grad, m, v, scratch, b1: float, b2: float, step_size: float, eps_hat: float,
                touched=None) -> None:
    """One Adam step in place: ``m += (1 - b1)(g - m)``, ``v += (1 - b2)(g^2 - v)``,
    ``param -= step_size * m / (sqrt(v) + eps_hat)``.

    ``step_size`` and ``eps_hat`` carry the bias correction (see :class:`~ironlearn.optim.Adam`).
    ``scratch`` is a buffer like ``param`` (the NumPy path's only temporary).  ``touched``, a
    bool array ``(rows,)``, limits the step to the rows it marks: the others keep their values
    and moments (lazy Adam, for a :class:`~ironlearn.nn.sparse.MaskedGrad`).
    """
    if compiled(param, grad, m, v) and all(a.flags.c_contiguous for a in (param, grad, m, v)):  # not views
        _cuda_adam(param, grad, m, v, b1, b2, step_size, eps_hat, touched)
        return
    xp = get_array_module(param)
    if touched is None:
        _adam_step(xp, param, grad, m, v, scratch, b1, b2, step_size, eps_hat)
        return
    # Lazy: step copies, then keep the marked rows' results.
    stepped = [array.copy() for array in (param, m, v)]
    _adam_step(xp, *stepped[:1], grad, *stepped[1:], scratch, b1, b2, step_size, eps_hat)
    mask = touched.reshape((-1,) + (1,) * (param.ndim - 1))
    for array, new in zip((param, m, v), stepped):
        xp.copyto(array, new, where=mask)


def _adam_step(xp, param, grad, m, v, s, b1, b2, step_size, eps_hat):
    """Adam's step in NumPy (or CuPy) array operations: the one home of its arithmetic outside
    :data:`ironlearn.cuda.ELEMENTWISE`'s ``adam``, through the scratch buffer ``s``, with no
    temporaries."""
    xp.subtract(grad, m, out=s)  # m += (1 - b1) (g - m)
    s *= 1.0 - b1
    m += s
    xp.multiply(grad, grad, out=s)  # v += (1 - b2) (g^2 - v)
    s -= v
    s *= 1.0 - b2
    v += s
    xp.sqrt(v, out=s)
    s += eps_hat
    xp.divide(m, s, out=s)
    s *= step_size
    param -= s


# -- CUDA ----------------------------------------------------------------------------------------
#: Threads a block; points a block sums in shared memory for a coarse level; the shared memory that
#: a level's sums may take (bytes, under the 48 KiB every GPU grants without asking).
BLOCK = 256
SHARED_POINTS = 4096
SHARED_BYTES = 32 * 1024

def _blocks(count: int) -> tuple:
    return (max(1, -(-count // BLOCK)),)


def _contiguous(cupy, array, dtype):
    return cupy.ascontiguousarray(array, dtype=dtype)


def _cuda_gather(table, indices, weights):
    cupy = cuda_module()
    taps, features = indices.shape[0], table.shape[1]
    entries = int(np.prod(indices.shape[1:]))
    out = cupy.empty(indices.shape[1:] + (features,), dtype=np.float32)
    table, indices = _contiguous(cupy, table, np.float32), _contiguous(cupy, indices, np.int64)
    weights = _contiguous(cupy, weights, np.float32)
    cuda.functions("weighted", FEATURES=features)["gather_weighted"](_blocks(entries), (BLOCK,), (
        table, indices, weights, out, np.int64(entries), np.int32(taps)))
    return out


def shared_levels(sizes, features: int, points: int, taps: int) -> list:
    """The levels whose reads :func:`scatter_weighted` sums in shared memory: those whose sums fit
    in :data:`SHARED_BYTES` and that have at most a quarter as many rows as a block has reads
    (below that, adding the block's sums to the table costs about what the reads would)."""
    per_block = min(SHARED_POINTS, points)
    return [level for level, rows in enumerate(sizes[:64])
            if rows * features * 4 <= SHARED_BYTES and 4 * rows <= per_block * taps]


def _cuda_scatter(out, index, weights, grad, levels):
    cupy = cuda_module()
    taps, points, n_levels = weights.shape
    features = out.shape[1]
    entries, total = points * n_levels, taps * points * n_levels
    kernels = cuda.functions("weighted", FEATURES=features)
    index = _contiguous(cupy, index, np.int64)
    weights, grad = _contiguous(cupy, weights, np.float32), _contiguous(cupy, grad, np.float32)
    out.fill(0)
    skip = 0
    if levels is not None:
        offsets, sizes = levels
        per_block = min(SHARED_POINTS, points)
        for level in shared_levels(sizes, features, points, taps):
            skip |= 1 << level
            rows = int(sizes[level])
            kernels["scatter_weighted_shared"](
                (-(-points // per_block),), (BLOCK,),
                (index, weights, grad, out, np.int64(points), np.int32(n_levels), np.int32(taps),
                 np.int32(level), np.int64(offsets[level]), np.int32(rows), np.int64(per_block)),
                shared_mem=rows * features * 4)
    kernels["scatter_weighted"](_blocks(total), (BLOCK,), (
        index, weights, grad, out, np.int64(entries), np.int64(total), np.int32(n_levels), np.uint64(skip)))


def _cuda_adam(param, grad, m, v, b1, b2, step_size, eps_hat, touched):
    dense, masked = cuda.elementwise("adam"), cuda.elementwise("adam_masked")
    scalars = tuple(np.float32(s) for s in (1.0 - b1, 1.0 - b2, step_size, eps_hat))
    if touched is None:
        dense(grad, *scalars, param, m, v)
    else:
        mask = touched.reshape((-1,) + (1,) * (param.ndim - 1))
        masked(grad, mask, *scalars, param, m, v)


# -- SIREN's activation -------------------------------------------------------------------------
def sine(x, w0: float):
    """``sin(w0 * x)``, and what :func:`sine_backward` needs: ``(y, saved)``.

    The reference keeps the argument ``w0 * x`` (a buffer its backward reuses); the kernel keeps
    ``x`` itself, which the layer before made for this one alone.
    """
    if compiled(x):
        return cuda.elementwise("sine")(x, np.float32(w0)), ("x", x)
    arg = x * w0
    return get_array_module(x).sin(arg), ("arg", arg)


def sine_backward(saved, grad_out, w0: float):
    """The gradient through ``sin(w0 * x)``: ``w0 * cos(w0 * x) * grad_out``, from ``saved``."""
    kind, array = saved
    if kind == "x":
        return cuda.elementwise("sine_backward")(array, grad_out, np.float32(w0))
    grad = get_array_module(grad_out).cos(array, out=array)  # the argument's buffer, reused
    grad *= grad_out
    grad *= w0
    return grad
