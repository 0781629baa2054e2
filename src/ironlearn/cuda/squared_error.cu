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
