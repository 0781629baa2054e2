"""One launch a pass: a hash grid's read over every level, its gradient, and a batch of samples
from a picture, each as a single CUDA kernel.

On a GPU a training step of the hash-grid pyramid was bound by Python, not the GPU: the read
worked out its vertices and weights in a few dozen array operations, the sampler in as many,
and every launch costs the host tens of microseconds (issue 52; docs/benchmarks.md, the GPU
section).  Here each of those passes is one kernel that works out what it reads as it reads it:

* :func:`read_grid`: every level of a :class:`~ironlearn.nn.HashGrid` at points ``(n, 2)``, a
  level per ``blockIdx.y`` (tiny-cuda-nn's layout), dense and hashed levels alike;
* :func:`read_grid_backward`: the table's gradient, zeroed once and summed with atomics (the
  coarse levels in shared memory first), marking the rows read for a lazy update where the
  layer asks for a :class:`~ironlearn.nn.sparse.MaskedGrad`;
* :func:`picture_batch`: a :class:`~ironlearn.image.sampling.PictureSampler`'s batch, positions
  from the same counter-based hash and targets through the same filter.

The NumPy twin of each is the code it replaces, which still runs on the CPU and in the
``portable`` kernel mode: ``HashGrid._lookup`` with :func:`~ironlearn.kernels.gather_weighted`
and :func:`~ironlearn.kernels.scatter_weighted`, and ``PictureSampler``'s own array code.
``tests/test_kernels.py`` checks that they agree on a GPU, and ``tests/test_kernels_compile.py``
compiles every source here on the CPU.  The layer and the sampler ask :func:`applies` and call
these only for CuPy float32 arrays in the ``kernels`` mode (see :mod:`ironlearn.kernels`).
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

__device__ __forceinline__ void point_reads(const float* x, const long long p, const float* lf,
                                            const long long* li, const float shift, float* wx, long long* vx,
                                            float* wy, long long* vy) {
    axis_read(x[2 * p], lf[0], lf[2], lf[4], li[4], shift, wx, vx);
    axis_read(x[2 * p + 1], lf[1], lf[3], lf[5], li[5], shift, wy, vy);
}

// One thread a point, one blockIdx.y a level: out[p, level, :] = sum of weight * table row.
extern "C" __global__ void read_grid(
        const float* __restrict__ x, const float* __restrict__ table, const float* __restrict__ level_floats,
        const long long* __restrict__ level_ints, float* __restrict__ out, const long long n,
        const int levels, const float shift) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    const int level = blockIdx.y;
    const long long* li = level_ints + level * NI;
    float wx[TAPS], wy[TAPS];
    long long vx[TAPS], vy[TAPS];
    point_reads(x, p, level_floats + level * NF, li, shift, wx, vx, wy, vy);
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
        point_reads(x, p, lf, li, shift, wx, vx, wy, vy);
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
"""

_GRID_KERNELS = ("read_grid", "read_grid_backward")


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
    taps = 4 if grid.interpolation == "linear" else 16
    shared = set(kernels.shared_levels(grid.sizes, grid.features, POINTS_A_BLOCK, taps))
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


def _taps(grid) -> int:
    return 2 if grid.interpolation == "linear" else 4


def read_grid(grid, x):
    """Every level of ``grid`` read at points ``x`` ``(n, 2)`` in [-1, 1]: ``(n, levels * features)``,
    as ``HashGrid.forward`` returns it (without the detail level)."""
    xp = get_array_module(x)
    x = xp.ascontiguousarray(x)
    floats, ints, _ = levels_on(grid, xp)
    n, features = len(x), grid.features
    out = xp.empty((n, grid.levels * features), dtype=np.float32)
    if n:
        _grid_functions(features, _taps(grid))["read_grid"](
            (-(-n // BLOCK), grid.levels), (BLOCK,),
            (x, grid.params["table"], floats, ints, out, np.int64(n), np.int32(grid.levels), _shift(grid)))
    return out


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
    _grid_functions(features, _taps(grid))["read_grid_backward"](
        (-(-n // POINTS_A_BLOCK), grid.levels), (BLOCK,),
        (x, grad_out, floats, ints, out, np.uint64(0) if touched is None else touched, np.int64(n), np.int32(grid.levels),
         _shift(grid), np.int64(POINTS_A_BLOCK)), shared_mem=shared_bytes)


def _shift(grid):
    return np.float32(0.5 if grid.centred else 0.0)


# -- a picture's batch -------------------------------------------------------------------------------
_SAMPLER_SOURCE = r"""
// PIXEL (the picture's type), TAP (the type the filter reads: the picture, or the spline's float
// vertices) and KIND (0 bilinear, 1 bicubic, 2 lanczos, 3 spline, 4 centres) are defined before
// this source.  The arithmetic is PictureSampler's, step for step (image/sampling.py).
#define GOLDEN 0x9E3779B97F4A7C15ULL
#if KIND == 0
#define TAPS 2
#define FIRST 0
#elif KIND == 2
#define TAPS 6
#define FIRST (-2)
#else
#define TAPS 4
#define FIRST (-1)
#endif

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// sampling.uniform: the number at flat position i of the step whose key is `key`.
__device__ __forceinline__ float uniform(const unsigned long long i, const unsigned long long key) {
    return (float)(mix64((i ^ key) * GOLDEN) >> 40) * 5.9604644775390625e-08f;  // 2**-24
}

__device__ __forceinline__ float sinc(const float d) {
    if (d == 0.0f) return 1.0f;
    const float y = 3.14159265358979323846f * d;
    return sinf(y) / y;
}

__device__ __forceinline__ void filter_weights(const float t, float* w) {
#if KIND == 0
    w[0] = 1.0f - t;
    w[1] = t;
#elif KIND == 1
    const float t2 = t * t, t3 = t * t * t;
    w[0] = -0.5f * t3 + t2 - 0.5f * t;
    w[1] = 1.5f * t3 - 2.5f * t2 + 1.0f;
    w[2] = -1.5f * t3 + 2.0f * t2 + 0.5f * t;
    w[3] = 0.5f * t3 - 0.5f * t2;
#elif KIND == 2
    float sum = 0.0f;
    #pragma unroll
    for (int o = 0; o < TAPS; ++o) {
        const float d = t - (float)(FIRST + o);
        w[o] = fabsf(d) < 3.0f ? sinc(d) * sinc(d / 3.0f) : 0.0f;
        sum += w[o];
    }
    #pragma unroll
    for (int o = 0; o < TAPS; ++o) w[o] /= sum;
#else
    const float s = 1.0f - t, t2 = t * t, t3 = t * t * t;
    w[0] = s * s * s / 6.0f;
    w[1] = (3.0f * t3 - 6.0f * t2 + 4.0f) / 6.0f;
    w[2] = (-3.0f * t3 + 3.0f * t2 + 3.0f * t + 1.0f) / 6.0f;
    w[3] = t3 / 6.0f;
#endif
}

__device__ __forceinline__ void filter_taps(const float p, const long long last, float* w, long long* v) {
    const float u = p - 0.5f;
    const float base = floorf(u);
    filter_weights(u - base, w);
    #pragma unroll
    for (int o = 0; o < TAPS; ++o) {
        const long long q = (long long)base + FIRST + o;
        v[o] = q < 0 ? 0 : (q > last ? last : q);
    }
}

// One thread a sample: its position, its coordinates in [-1, 1], and its target.
extern "C" __global__ void picture_batch(
        const PIXEL* __restrict__ pixels, const TAP* __restrict__ taps_read, float* __restrict__ coords,
        float* __restrict__ targets, const long long n, const int width, const int height, const int channels,
        const unsigned long long key, const double stretch, const long long period, const float below_x,
        const float below_y, const float scale, const float taps_scale, const float to_x, const float to_y) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double along = ((double)i + (double)uniform(i, key)) * stretch;
    const double row = fmin(floor(along / width), (double)(height - 1));
    float px = fminf((float)(along - row * width), below_x);
    float py = fminf((float)row + uniform(n + i, key), below_y);
    const bool centre = KIND == 4 || i % period != 0;
    if (centre) {
        px = floorf(px) + 0.5f;
        py = floorf(py) + 0.5f;
    }
    coords[2 * i] = px * to_x - 1.0f;
    coords[2 * i + 1] = py * to_y - 1.0f;
    float* out = targets + i * channels;
    if (centre) {
        const PIXEL* pixel = pixels + ((long long)floorf(py) * width + (long long)floorf(px)) * channels;
        for (int c = 0; c < channels; ++c) out[c] = (float)pixel[c] * scale;
        return;
    }
#if KIND != 4
    float wx[TAPS], wy[TAPS];
    long long vx[TAPS], vy[TAPS];
    filter_taps(px, width - 1, wx, vx);
    filter_taps(py, height - 1, wy, vy);
    for (int c = 0; c < channels; ++c) {
        float acc = 0.0f;
        #pragma unroll
        for (int j = 0; j < TAPS; ++j) {
            #pragma unroll
            for (int k = 0; k < TAPS; ++k)
                acc += (wy[j] * taps_scale) * wx[k] * (float)taps_read[(vy[j] * width + vx[k]) * channels + c];
        }
        out[c] = fminf(fmaxf(acc, 0.0f), 1.0f);  // cubic overshoot at hard edges
    }
#endif
}
"""

#: The sampler's filters as the kernel numbers them (``KIND``).
SAMPLER_KINDS = {"bilinear": 0, "bicubic": 1, "lanczos": 2, "spline": 3, "centres": 4}
_C_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.float32): "float"}


def sampler_options(kind: str, pixel, tap) -> tuple:
    """NVRTC's options for the sampler's kernel: the filter and the arrays' element types."""
    return ("--std=c++14", "--fmad=false", f"-DKIND={SAMPLER_KINDS[kind]}", f"-DPIXEL={_C_TYPES[np.dtype(pixel)]}",
            f"-DTAP={_C_TYPES[np.dtype(tap)]}")


@functools.cache
def _sampler_function(kind: str, pixel: str, tap: str):
    module = cuda_module().RawModule(code=_SAMPLER_SOURCE, options=sampler_options(kind, pixel, tap))
    return module.get_function("picture_batch")


def samples(sampler) -> bool:
    """Whether ``sampler`` (a PictureSampler) draws its batches by :func:`picture_batch`."""
    values, taps_read = sampler.values, sampler._taps_read
    return (on_device(values) and kernels.mode() == "kernels" and hasattr(get_array_module(values), "RawModule")
            and values.dtype in _C_TYPES and taps_read.dtype in _C_TYPES)


def picture_batch(sampler, key: int):
    """The batch ``(coordinates (n, 2), targets (n, channels))`` of a PictureSampler whose step
    has the hash key ``key`` (``sampling.step_key``), in one launch."""
    xp = get_array_module(sampler.values)
    n, channels = sampler.batch_size, sampler.channels
    coords = xp.empty((n, 2), dtype=np.float32)
    targets = xp.empty((n, channels), dtype=np.float32)
    pixels = xp.ascontiguousarray(sampler.values)
    taps_read = xp.ascontiguousarray(sampler._taps_read)
    function = _sampler_function(sampler.kind, pixels.dtype.str, taps_read.dtype.str)
    function((-(-n // BLOCK),), (BLOCK,), (
        pixels, taps_read, coords, targets, np.int64(n), np.int32(sampler.width), np.int32(sampler.height),
        np.int32(channels), np.uint64(key), np.float64(sampler.pixels / n), np.int64(sampler.period),
        np.float32(sampler._below[0]), np.float32(sampler._below[1]), np.float32(sampler.scale),
        np.float32(sampler._taps_scale), np.float32(2 / sampler.width), np.float32(2 / sampler.height)))
    return coords, targets
