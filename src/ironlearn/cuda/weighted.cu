// FEATURES is defined before this source: one module for each feature count (add_row: common.cuh).

// One thread a (point, level): out[e] = sum_k weight[k, e] * table[index[k, e]].
extern "C" __global__ void gather_weighted(
        const float* __restrict__ table, const long long* __restrict__ index,
        const float* __restrict__ weight, float* __restrict__ out,
        const long long entries, const int taps) {
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= entries) return;
    float acc[FEATURES];
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) acc[f] = 0.0f;
    for (int k = 0; k < taps; ++k) {
        const long long at = (long long)k * entries + e;
        const float w = weight[at];
        const float* row = table + index[at] * FEATURES;
        #pragma unroll
        for (int f = 0; f < FEATURES; ++f) acc[f] += w * row[f];
    }
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) out[e * FEATURES + f] = acc[f];
}

// One thread a read (k, point, level): out[index] += weight * grad[point, level].  Levels whose
// bit is set in `skip` are summed by scatter_weighted_shared instead.
extern "C" __global__ void scatter_weighted(
        const long long* __restrict__ index, const float* __restrict__ weight,
        const float* __restrict__ grad, float* __restrict__ out,
        const long long entries, const long long total, const int levels,
        const unsigned long long skip) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const long long e = i % entries;
    const int level = (int)(e % levels);
    if (level < 64 && ((skip >> level) & 1ULL)) return;
    add_row(out + index[i] * FEATURES, weight[i], grad + e * FEATURES);
}

// One level of few rows: each block sums the reads of `per_block` points in shared memory, then
// adds its sums to `out` (one global atomic a row, where each read would make one).
extern "C" __global__ void scatter_weighted_shared(
        const long long* __restrict__ index, const float* __restrict__ weight,
        const float* __restrict__ grad, float* __restrict__ out,
        const long long points, const int levels, const int taps, const int level,
        const long long offset, const int rows, const long long per_block) {
    extern __shared__ float sums[];
    for (int j = threadIdx.x; j < rows * FEATURES; j += blockDim.x) sums[j] = 0.0f;
    __syncthreads();
    const long long first = (long long)blockIdx.x * per_block;
    const long long left = points - first;
    const long long count = left < per_block ? left : per_block;
    const long long entries = points * levels;
    for (long long j = threadIdx.x; j < count * taps; j += blockDim.x) {
        const int k = (int)(j / count);
        const long long e = (first + j % count) * levels + level;
        const long long at = (long long)k * entries + e;
        const float w = weight[at];
        const float* g = grad + e * FEATURES;
        float* dst = sums + (index[at] - offset) * FEATURES;
        #pragma unroll
        for (int f = 0; f < FEATURES; ++f) atomicAdd(dst + f, w * g[f]);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < rows * FEATURES; j += blockDim.x) {
        const float s = sums[j];
        if (s != 0.0f) atomicAdd(out + offset * FEATURES + j, s);
    }
}
