"""One launch a pass: a hash grid's read over every level, its gradient, Adam's update of many
parameters and the squared error, each as a single CUDA kernel (a picture's batch has its own,
in :mod:`ironlearn.image.batch_kernel`).

On a GPU a training step of the hash-grid pyramid was bound by Python, not the GPU: the read
worked out its vertices and weights in a few dozen array operations, the sampler in as many,
and every launch costs the host tens of microseconds (docs/benchmarks.md, 'GPU: how
fast is a step, against PyTorch?').  Here each of those passes is one kernel that works out what it reads as it reads it:

* :func:`read_grid`: every level of a :class:`~ironlearn.nn.HashGrid` at points ``(n, 2)`` or at
  a lattice's, a level per ``blockIdx.y`` (tiny-cuda-nn's layout), dense and hashed levels alike;
* :func:`read_grid_backward`: the table's gradient, zeroed once and summed with atomics (the
  coarse levels in shared memory first), marking the rows read for a lazy update where the
  layer asks for a :class:`~ironlearn.nn.sparse.MaskedGrad`; :func:`read_lattice_backward`, a
  lattice's, into the rectangle of a level it read (a :class:`~ironlearn.nn.sparse.BlockGrad`);
* :func:`adam_update_many`: Adam on every dense parameter in one launch, where each took one;
* :func:`squared_error`: the mean squared error and its gradient in two launches, not five.

The NumPy twin of each is the code it replaces, which still runs on the CPU and in the
``portable`` kernel mode: ``HashGrid._lookup`` with :func:`~ironlearn.kernels.gather_weighted`
and :func:`~ironlearn.kernels.scatter_weighted` (a lattice's: two matrix products a level), :func:`~ironlearn.kernels.adam_update` once a
parameter, and the array code of the squared error.
``tests/test_kernels.py`` checks that they agree on a GPU; their CUDA sources are in
:mod:`ironlearn.cuda`, which ``tests/test_kernels_compile.py`` compiles on the CPU.  They run only for CuPy float32 arrays in the ``kernels``
mode (:func:`applies`; see :mod:`ironlearn.kernels`).
"""

from __future__ import annotations

import numpy as np

from . import cuda, kernels
from .backend import cuda_module, get_array_module, on_device

#: Threads a block, and points a block of the gradient's kernel walks (so that a coarse level's
#: sums in shared memory cover many reads before they go to the table).
BLOCK = 256
POINTS_A_BLOCK = 4 * BLOCK

#: A level's numbers, as the kernels read them: ``_FLOATS`` float32 and ``_INTS`` int64 a level.
_FLOATS = ("cells_x", "cells_y", "last_x", "last_y", "corner_max_x", "corner_max_y")
_INTS = ("sides_x", "offset", "mask", "hashed", "last_index_x", "last_index_y", "shared_rows", "unused")

def applies(*arrays) -> bool:
    """Whether these arrays take the fused kernels: CuPy float32 in the ``kernels`` mode."""
    return kernels.compiled(*arrays)


def level_table(grid) -> tuple:
    """A grid's levels as the kernels read them, on the host: ``(floats (L, 6), ints (L, 8))``
    (the columns :data:`_FLOATS` and :data:`_INTS`), the numbers ``HashGrid._lookup`` reads."""
    sides_x, sides_y = np.asarray(grid.sides), np.asarray(grid.sides_y)
    floats = np.stack([grid.resolutions, grid.resolutions_y, sides_x - 1, sides_y - 1,
                       np.maximum(sides_x - 2, 0), np.maximum(sides_y - 2, 0)], axis=1).astype(np.float32)
    shared = set(kernels.shared_levels(grid.sizes, grid.features, POINTS_A_BLOCK, grid.taps ** 2))
    shared_rows = [size if level in shared else 0 for level, size in enumerate(grid.sizes)]
    ints = np.stack([sides_x, grid.offsets, np.subtract(grid.sizes, 1), grid.hashed, sides_x - 1, sides_y - 1,
                     shared_rows, np.zeros(grid.levels)], axis=1).astype(np.int64)
    return floats, ints


def levels_on(grid, xp):
    """:func:`level_table` on the grid's device, and the shared memory the gradient's kernel
    needs (bytes: the largest level it sums there), made once (kept in ``grid._fused_levels``)."""
    if grid._fused_levels is None:
        floats, ints = level_table(grid)
        grid._fused_levels = (xp.asarray(floats), xp.asarray(ints), int(ints[:, 6].max()) * grid.features * 4)
    return grid._fused_levels


def read_grid(grid, x=None, lattice=None):
    """Every level of ``grid`` read at points ``x`` ``(n, 2)`` in [-1, 1], or at the points of
    ``lattice``, a pair ``(xs, ys)`` of its axes on the device: ``(n, levels * features)``, as
    ``HashGrid.forward`` returns it (without the detail level)."""
    floats, ints, _ = levels_on(grid, get_array_module(grid.params["table"]))
    points, (xs, ys, across, n) = _points(x, lattice)
    out = get_array_module(floats).empty((n, grid.levels * grid.features), dtype=np.float32)
    if n:
        cuda.functions("grid", FEATURES=grid.features, TAPS=grid.taps)["read_grid"](
            (-(-n // BLOCK), grid.levels), (BLOCK,),
            (points, xs, ys, across, grid.params["table"], floats, ints, out, np.int64(n), np.int32(grid.levels),
             _shift(grid)))
    return out


def _points(x, lattice):
    """The kernels' point arguments: ``x`` (or a null pointer) and ``(xs, ys, across, n)``."""
    null = np.uint64(0)
    if lattice is None:
        x = get_array_module(x).ascontiguousarray(x)
        return x, (null, null, np.int64(0), len(x))
    xs, ys = lattice
    return null, (xs, ys, np.int64(len(xs)), len(xs) * len(ys))


def read_lattice_backward(grid, lattice, grad_out, level: int, block, corner) -> None:
    """The gradient of level ``level`` of :func:`read_grid`'s read of ``lattice`` (``(xs, ys)`` on
    the device), written over ``block``: the ``(h, w, features)`` rectangle of vertices the
    lattice reads, from vertex ``corner = (y0, x0)`` of the level (a dense one)."""
    xp = get_array_module(block)
    floats, ints, _ = levels_on(grid, xp)
    _, (xs, ys, across, n) = _points(None, lattice)
    grad_out = xp.ascontiguousarray(grad_out, dtype=np.float32)
    block.fill(0)
    if n:
        cuda.functions("grid", FEATURES=grid.features, TAPS=grid.taps)["read_lattice_backward"](
            (-(-n // BLOCK),), (BLOCK,),
            (xs, ys, across, grad_out, floats, ints, block, np.int64(n), np.int32(grid.levels), np.int32(level),
             _shift(grid), np.int64(corner[0]), np.int64(corner[1]), np.int64(block.shape[1])))


def read_grid_backward(grid, x, grad_out, out, touched=None) -> None:
    """The table's gradient of :func:`read_grid`'s read at ``x``, written over ``out`` (``(rows,
    features)``, C-contiguous), given ``grad_out`` ``(n, levels * features)``; ``touched``, a
    bool array ``(rows,)`` of False, gets each row read marked."""
    xp = get_array_module(x)
    x, grad_out = xp.ascontiguousarray(x), xp.ascontiguousarray(grad_out, dtype=np.float32)
    floats, ints, shared_bytes = levels_on(grid, xp)
    n, features = len(x), grid.features
    out.fill(0)
    if not n:
        return
    cuda.functions("grid", FEATURES=features, TAPS=grid.taps)["read_grid_backward"](
        (-(-n // POINTS_A_BLOCK), grid.levels), (BLOCK,),
        (x, grad_out, floats, ints, out, np.uint64(0) if touched is None else touched, np.int64(n), np.int32(grid.levels),
         _shift(grid), np.int64(POINTS_A_BLOCK)), shared_mem=shared_bytes)


def _shift(grid):
    return np.float32(0.5 if grid.centred else 0.0)


# -- Adam on many parameters ---------------------------------------------------------------------
def adam_update_many(updates, b1: float, b2: float, step_size: float, eps_hat: float) -> None:
    """:func:`adam_update` of every ``(param, grad, m, v)`` in ``updates``, dense, with the same
    scalars: on a GPU in one launch (one ``blockIdx.y`` a parameter), where each parameter took
    one.  It applies where :func:`adam_many_applies` says so; the table of the arrays' addresses is
    copied to the GPU when they change (the first step), not each step."""
    cupy = cuda_module()
    table, sizes, longest = _adam_table(cupy, tuple(updates))
    blocks = min(-(-longest // BLOCK), 4096)
    cuda.functions("adam_many")["adam_many"]((blocks, len(updates)), (BLOCK,), (
        table, sizes, *(np.float32(a) for a in (1.0 - b1, 1.0 - b2, step_size, eps_hat))))


def adam_many_applies(param, grad) -> bool:
    """Whether :func:`adam_update_many` takes this parameter: CuPy float32 arrays, contiguous,
    in the ``kernels`` mode."""
    return (on_device(grad) and applies(param, grad)  # a plain array, not a MaskedGrad or a BlockGrad
            and param.flags.c_contiguous and grad.flags.c_contiguous)


_adam_tables = {}  # addresses of (param, grad, m, v) of each parameter -> (table, sizes, longest) on the GPU


def _adam_table(cupy, updates):
    key = tuple(array.data.ptr for arrays in updates for array in arrays)
    if key not in _adam_tables:
        if len(_adam_tables) > 8:  # a model moved or reloaded: its old addresses will not come back
            _adam_tables.clear()
        sizes = [param.size for param, *_ in updates]
        _adam_tables[key] = (cupy.asarray(np.array(key, dtype=np.uint64)), cupy.asarray(np.array(sizes, np.int64)),
                             max(sizes))
    return _adam_tables[key]


def squared_error(pred, target):
    """The mean squared error and its gradient, ``(value, 2 (pred - target) / size)``: on a GPU in
    two launches (the value's zero; one pass for the gradient and the sum), not five."""
    if not (applies(pred, target) and pred.shape == target.shape):
        diff = pred - target
        value = (diff * diff).mean()
        diff *= 2.0 / diff.size
        return value, diff
    xp = get_array_module(pred)
    pred, target = xp.ascontiguousarray(pred), xp.ascontiguousarray(target)
    value, grad = xp.zeros((), dtype=np.float32), xp.empty_like(pred)
    n = pred.size
    cuda.functions("squared_error")["squared_error"]((min(-(-n // BLOCK), 1024),), (BLOCK,), (
        pred, target, grad, value, np.int64(n), np.float32(2.0 / n), np.float32(1.0 / n)))
    return value, grad
