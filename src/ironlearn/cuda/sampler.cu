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
    bspline_weights(t, w);
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
