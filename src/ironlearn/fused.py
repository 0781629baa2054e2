"""One launch a pass: a hash grid's read over every level, its gradient, Adam's update of many
parameters and the squared error, each as a single CUDA kernel (a picture's batch has its own,
in :mod:`ironlearn.image.batch_kernel`).

On a GPU a training step of the hash-grid pyramid was bound by Python, not the GPU: the read
worked out its vertices and weights in a few dozen array operations, the sampler in as many,
and every launch costs the host tens of microseconds (issue 52; docs/benchmarks.md, 'GPU: how
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
``tests/test_kernels.py`` checks that they agree on a GPU, and ``tests/test_kernels_compile.py``
compiles every source here on the CPU.  They run only for CuPy float32 arrays in the ``kernels``
mode (:func:`applies`; see :mod:`ironlearn.kernels`).
"""

from __future__ import annotations

import functools

import numpy as np

from . import kernels
from .backend import cuda_module, get_array_module, on_device

#: Threads a block, and points a block of the gradient's kernel walks (so that a coarse level's
#: sums in shared memory cover many reads before they go to the table).
BLOCK = 256
POINTS_A_BLOCK = 4 * BLOCK

#: A level's numbers, as the kernels read them: ``_FLOATS`` float32 and ``_INTS`` int64 a level.
_FLOATS = ("cells_x", "cells_y", "last_x", "last_y", "corner_max_x", "corner_max_y")
_INTS = ("sides_x", "offset", "mask", "hashed", "last_index_x", "last_index_y", "shared_rows", "unused")

_GRID_SOURCE = r"""
// FEATURES (a row's floats) and TAPS (vertices read along an axis: 2 bilinear, 4 B-spline) are
// defined before this source.  Each level has 6 floats and 8 int64s (fused.py's _FLOATS, _INTS).
#define NF 6
#define NI 8
#if TAPS == 2
#define FIRST 0
#else
#define FIRST (-1)
#endif

__device__ __forceinline__ void weights_along(const float t, float* w) {
#if TAPS == 2
    w[0] = 1.0f - t;
    w[1] = t;
#else
    const float s = 1.0f - t, t2 = t * t, t3 = t * t * t;
    w[0] = s * s * s / 6.0f;
    w[1] = (3.0f * t3 - 6.0f * t2 + 4.0f) / 6.0f;
    w[2] = (-3.0f * t3 + 3.0f * t2 + 3.0f * t + 1.0f) / 6.0f;
    w[3] = t3 / 6.0f;
#endif
}

// Along one axis: the vertices read (clamped to the level) and their weights.
__device__ __forceinline__ void axis_read(const float coord, const float cells, const float last,
                                          const float corner_max, const long long last_index,
                                          const float shift, float* w, long long* v) {
    const float unit = (coord + 1.0f) * 0.5f;
    const float position = fminf(fmaxf(unit * cells - shift, 0.0f), last);
    const float corner = fminf(floorf(position), corner_max);
    const long long first = (long long)corner;
    weights_along(position - corner, w);
    #pragma unroll
    for (int o = 0; o < TAPS; ++o) {
        const long long q = first + FIRST + o;
        v[o] = q < 0 ? 0 : (q > last_index ? last_index : q);
    }
}

// The table row of vertex (ix, iy): Instant-NGP's spatial hash on a hashed level.
__device__ __forceinline__ long long row_of(const long long ix, const long long iy, const long long* li) {
    const long long r = li[3]
        ? (long long)(((unsigned long long)ix ^ ((unsigned long long)iy * 2654435761ULL)) & (unsigned long long)li[2])
        : iy * li[0] + ix;
    return r + li[1];
}

__device__ __forceinline__ void point_reads(const float cx, const float cy, const float* lf,
                                            const long long* li, const float shift, float* wx, long long* vx,
                                            float* wy, long long* vy) {
    axis_read(cx, lf[0], lf[2], lf[4], li[4], shift, wx, vx);
    axis_read(cy, lf[1], lf[3], lf[5], li[5], shift, wy, vy);
}

// Point p's coordinates: row p of x (n, 2), or, for a lattice (xs != 0), (xs[p % across], ys[p / across]).
__device__ __forceinline__ void coordinates(const float* x, const float* xs, const float* ys, const long long across,
                                            const long long p, float* cx, float* cy) {
    if (xs) {
        *cx = xs[p % across];
        *cy = ys[p / across];
    } else {
        *cx = x[2 * p];
        *cy = x[2 * p + 1];
    }
}

// One thread a point, one blockIdx.y a level: out[p, level, :] = sum of weight * table row.
extern "C" __global__ void read_grid(
        const float* __restrict__ x, const float* __restrict__ xs, const float* __restrict__ ys,
        const long long across, const float* __restrict__ table, const float* __restrict__ level_floats,
        const long long* __restrict__ level_ints, float* __restrict__ out, const long long n,
        const int levels, const float shift) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    const int level = blockIdx.y;
    const long long* li = level_ints + level * NI;
    float wx[TAPS], wy[TAPS], cx, cy;
    long long vx[TAPS], vy[TAPS];
    coordinates(x, xs, ys, across, p, &cx, &cy);
    point_reads(cx, cy, level_floats + level * NF, li, shift, wx, vx, wy, vy);
    float acc[FEATURES];
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) acc[f] = 0.0f;
    #pragma unroll
    for (int j = 0; j < TAPS; ++j) {
        #pragma unroll
        for (int i = 0; i < TAPS; ++i) {
            const float w = wx[i] * wy[j];
            const float* row = table + row_of(vx[i], vy[j], li) * FEATURES;
            #pragma unroll
            for (int f = 0; f < FEATURES; ++f) acc[f] += w * row[f];
        }
    }
    float* dst = out + ((long long)p * levels + level) * FEATURES;
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) dst[f] = acc[f];
}

__device__ __forceinline__ void add_row(float* dst, const float w, const float* g) {
#if FEATURES == 2 && !defined(IRONLEARN_SCALAR_ATOMICS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2*>(dst), make_float2(w * g[0], w * g[1]));
#else
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) atomicAdd(dst + f, w * g[f]);
#endif
}

// The transpose of read_grid into `out` (zeroed before), a block per `per_block` points of one
// level.  A level with shared_rows > 0 sums its reads in shared memory first (one global atomic a
// row and block); `touched`, where given, marks every row read.
extern "C" __global__ void read_grid_backward(
        const float* __restrict__ x, const float* __restrict__ grad, const float* __restrict__ level_floats,
        const long long* __restrict__ level_ints, float* __restrict__ out, unsigned char* __restrict__ touched,
        const long long n, const int levels, const float shift, const long long per_block) {
    extern __shared__ float sums[];
    const int level = blockIdx.y;
    const long long* li = level_ints + level * NI;
    const float* lf = level_floats + level * NF;
    const long long offset = li[1], shared_rows = li[6];
    if (shared_rows) {
        for (long long j = threadIdx.x; j < shared_rows * FEATURES; j += blockDim.x) sums[j] = 0.0f;
        __syncthreads();
    }
    const long long first = (long long)blockIdx.x * per_block;
    const long long end = first + per_block < n ? first + per_block : n;
    for (long long p = first + threadIdx.x; p < end; p += blockDim.x) {
        float wx[TAPS], wy[TAPS];
        long long vx[TAPS], vy[TAPS];
        point_reads(x[2 * p], x[2 * p + 1], lf, li, shift, wx, vx, wy, vy);
        const float* g = grad + ((long long)p * levels + level) * FEATURES;
        #pragma unroll
        for (int j = 0; j < TAPS; ++j) {
            #pragma unroll
            for (int i = 0; i < TAPS; ++i) {
                const float w = wx[i] * wy[j];
                const long long row = row_of(vx[i], vy[j], li);
                if (touched) touched[row] = 1;
                if (shared_rows) {
                    float* dst = sums + (row - offset) * FEATURES;
                    #pragma unroll
                    for (int f = 0; f < FEATURES; ++f) atomicAdd(dst + f, w * g[f]);
                } else {
                    add_row(out + row * FEATURES, w, g);
                }
            }
        }
    }
    if (shared_rows) {
        __syncthreads();
        for (long long j = threadIdx.x; j < shared_rows * FEATURES; j += blockDim.x) {
            const float s = sums[j];
            if (s != 0.0f) atomicAdd(out + offset * FEATURES + j, s);
        }
    }
}

// A lattice's read of one dense level, transposed into the rectangle of vertices it read: `block`
// (zeroed before) holds rows y0 .. of `width` vertices from x0, of the level's `sides_x` across.
extern "C" __global__ void read_lattice_backward(
        const float* __restrict__ xs, const float* __restrict__ ys, const long long across,
        const float* __restrict__ grad, const float* __restrict__ level_floats,
        const long long* __restrict__ level_ints, float* __restrict__ block, const long long n, const int levels,
        const int level, const float shift, const long long y0, const long long x0, const long long width) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    const long long* li = level_ints + level * NI;
    float wx[TAPS], wy[TAPS];
    long long vx[TAPS], vy[TAPS];
    point_reads(xs[p % across], ys[p / across], level_floats + level * NF, li, shift, wx, vx, wy, vy);
    const float* g = grad + ((long long)p * levels + level) * FEATURES;
    #pragma unroll
    for (int j = 0; j < TAPS; ++j) {
        #pragma unroll
        for (int i = 0; i < TAPS; ++i)
            add_row(block + ((vy[j] - y0) * width + (vx[i] - x0)) * FEATURES, wx[i] * wy[j], g);
    }
}
"""

_GRID_KERNELS = ("read_grid", "read_grid_backward", "read_lattice_backward")


def applies(*arrays) -> bool:
    """Whether these arrays take the fused kernels: CuPy float32 in the ``kernels`` mode."""
    return kernels.compiled(*arrays)


def grid_options(features: int, taps: int) -> tuple:
    """NVRTC's options for the grid's kernels (tests/test_kernels_compile.py compiles with these)."""
    return ("--std=c++14", "--fmad=false", f"-DFEATURES={features}", f"-DTAPS={taps}")


@functools.cache
def _grid_functions(features: int, taps: int) -> dict:
    cupy = cuda_module()
    options = grid_options(features, taps)
    try:
        module = cupy.RawModule(code=_GRID_SOURCE, options=options)
        return {name: module.get_function(name) for name in _GRID_KERNELS}
    except Exception:  # CompileException: a compiler without float2 atomics
        module = cupy.RawModule(code=_GRID_SOURCE, options=options + ("-DIRONLEARN_SCALAR_ATOMICS",))
        return {name: module.get_function(name) for name in _GRID_KERNELS}


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
        _grid_functions(grid.features, grid.taps)["read_grid"](
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
        _grid_functions(grid.features, grid.taps)["read_lattice_backward"](
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
    _grid_functions(features, grid.taps)["read_grid_backward"](
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
    _adam_many_function()((blocks, len(updates)), (BLOCK,), (
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


_ADAM_MANY = r"""
// Adam on several parameters, one blockIdx.y each: `arrays` holds (param, grad, m, v) addresses a
// parameter, `sizes` their lengths.  The arithmetic is _ADAM_STEP's.
extern "C" __global__ void adam_many(const unsigned long long* __restrict__ arrays,
                                     const long long* __restrict__ sizes, const float one_minus_b1,
                                     const float one_minus_b2, const float step_size, const float eps_hat) {
    const int t = blockIdx.y;
    float* param = reinterpret_cast<float*>(arrays[4 * t]);
    const float* grad = reinterpret_cast<const float*>(arrays[4 * t + 1]);
    float* m = reinterpret_cast<float*>(arrays[4 * t + 2]);
    float* v = reinterpret_cast<float*>(arrays[4 * t + 3]);
    const long long size = sizes[t];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size; i += (long long)gridDim.x * blockDim.x) {
        const float g = grad[i];
        float mi = m[i], vi = v[i];
        mi += (g - mi) * one_minus_b1;
        vi += (g * g - vi) * one_minus_b2;
        m[i] = mi;
        v[i] = vi;
        param[i] -= mi / (sqrtf(vi) + eps_hat) * step_size;
    }
}
"""


@functools.cache
def _adam_many_function():
    # CuPy's own options (no --fmad=false), as the ElementwiseKernel of one parameter compiles.
    return cuda_module().RawModule(code=_ADAM_MANY, options=("--std=c++14",)).get_function("adam_many")


# -- the squared error ------------------------------------------------------------------------------
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
    _squared_error_function()((min(-(-n // BLOCK), 1024),), (BLOCK,), (
        pred, target, grad, value, np.int64(n), np.float32(2.0 / n), np.float32(1.0 / n)))
    return value, grad


_SQUARED_ERROR = r"""
// grad = (pred - target) * scale; *value += the block's sum of (pred - target)^2, times inv_n.
extern "C" __global__ void squared_error(const float* __restrict__ pred, const float* __restrict__ target,
                                         float* __restrict__ grad, float* __restrict__ value, const long long n,
                                         const float scale, const float inv_n) {
    __shared__ float warps[32];
    float sum = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float d = pred[i] - target[i];
        grad[i] = d * scale;
        sum += d * d;
    }
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warps[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < (int)(blockDim.x / 32) ? warps[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) atomicAdd(value, sum * inv_n);
    }
}
"""


@functools.cache
def _squared_error_function():
    return cuda_module().RawModule(code=_SQUARED_ERROR, options=("--std=c++14",)).get_function("squared_error")
