// What several sources share: the registry (cuda/__init__.py) puts this file before each
// source that lists it.

// The cubic B-spline's four weights at fraction t of a cell.
__device__ __forceinline__ void bspline_weights(const float t, float* w) {
    const float s = 1.0f - t, t2 = t * t, t3 = t * t * t;
    w[0] = s * s * s / 6.0f;
    w[1] = (3.0f * t3 - 6.0f * t2 + 4.0f) / 6.0f;
    w[2] = (-3.0f * t3 + 3.0f * t2 + 3.0f * t + 1.0f) / 6.0f;
    w[3] = t3 / 6.0f;
}

#ifdef FEATURES
// dst[f] += w * g[f] for a row of FEATURES floats, atomically: one float2 atomic where the
// GPU has them (sm_90 on), else one a float.
__device__ __forceinline__ void add_row(float* dst, const float w, const float* g) {
#if FEATURES == 2 && !defined(IRONLEARN_SCALAR_ATOMICS) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2*>(dst), make_float2(w * g[0], w * g[1]));
#else
    #pragma unroll
    for (int f = 0; f < FEATURES; ++f) atomicAdd(dst + f, w * g[f]);
#endif
}
#endif
