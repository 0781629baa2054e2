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
