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
    bspline_weights(t, w);
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
