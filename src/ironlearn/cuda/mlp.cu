// A small MLP's forward pass and the chain of its backward pass, one thread a point, every layer of
// it in one launch (ironlearn.nn.fused_mlp launches them; the layers' own code is the reference).
//
// The shape is fixed when the source compiles: IN inputs; HIDDEN hidden layers (0 to 4) of WIDTH
// units, each a Linear then a ReLU; a Linear to OUT outputs; then a sigmoid where SIGMOID is 1.
// Layer l's weight is (its inputs, its outputs), row-major, as ironlearn's Linear holds it; a
// layer past the last is never read (its arguments repeat the last's).
//
// A layer's outputs are summed in registers (their loop unrolled); its inputs are read from the
// thread's own column of shared memory (BLOCK threads a block), whose loop is not unrolled: fully
// unrolled, a 64-wide MLP of four hidden layers took NVRTC two minutes to compile.  A column is
// the thread's alone, so no thread waits for another.
//
// Arrays a pass keeps are stored transposed, a row a unit: thread i writes column i, so that a
// warp's stores are coalesced, and the weights' gradients are matrix products of them as they lie.

#define LAYERS (HIDDEN + 1)
#define LAYER_IN(l) ((l) == 0 ? IN : WIDTH)
#define LAYER_OUT(l) ((l) == HIDDEN ? OUT : WIDTH)
#define WIDEST_(a, b) ((a) > (b) ? (a) : (b))
#define WIDEST WIDEST_(WIDEST_(IN, WIDTH), OUT)
#define COLUMN(k) column[(k) * BLOCK + threadIdx.x]

// Layer l's weight and bias among the kernel's arguments (l is a constant once the loops unroll).
#define WEIGHT(l) ((l) == 0 ? w0 : (l) == 1 ? w1 : (l) == 2 ? w2 : (l) == 3 ? w3 : w4)
#define BIAS(l) ((l) == 0 ? b0 : (l) == 1 ? b1 : (l) == 2 ? b2 : (l) == 3 ? b3 : b4)
#define PARAMETERS                                                                                    \
    const float* __restrict__ w0, const float* __restrict__ b0, const float* __restrict__ w1,         \
        const float* __restrict__ b1, const float* __restrict__ w2, const float* __restrict__ b2,     \
        const float* __restrict__ w3, const float* __restrict__ b3, const float* __restrict__ w4,     \
        const float* __restrict__ b4

// x (n, IN) -> y (n, OUT).  hidden (HIDDEN * WIDTH, n): each hidden layer's output (after its ReLU).
extern "C" __global__ void mlp_forward(const float* __restrict__ x, PARAMETERS, float* __restrict__ hidden,
                                       float* __restrict__ y, const long long n) {
    __shared__ float column[WIDEST * BLOCK];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < IN; ++k) COLUMN(k) = x[i * IN + k];
    float z[WIDEST];
#pragma unroll
    for (int l = 0; l < LAYERS; ++l) {
        const float* w = WEIGHT(l);
        const float* b = BIAS(l);
#pragma unroll
        for (int o = 0; o < LAYER_OUT(l); ++o) z[o] = b[o];
#pragma unroll 2
        for (int k = 0; k < LAYER_IN(l); ++k) {
            const float v = COLUMN(k);
#pragma unroll
            for (int o = 0; o < LAYER_OUT(l); ++o) z[o] += v * w[k * LAYER_OUT(l) + o];
        }
        if (l < HIDDEN) {
#pragma unroll
            for (int o = 0; o < WIDTH; ++o) {
                const float a = z[o] > 0.0f ? z[o] : 0.0f;
                COLUMN(o) = a;
                hidden[((long long)l * WIDTH + o) * n + i] = a;
            }
        } else {
#pragma unroll
            for (int o = 0; o < OUT; ++o) y[i * OUT + o] = SIGMOID ? 1.0f / (1.0f + expf(-z[o])) : z[o];
        }
    }
}

// grad (n, OUT), d(loss)/d(y) -> deltas (HIDDEN * WIDTH + OUT, n), d(loss)/d(each layer's Linear
// output), and grad_in (n, IN), d(loss)/d(x), unless grad_in is null.  y and hidden: the forward's.
extern "C" __global__ void mlp_backward(const float* __restrict__ grad, const float* __restrict__ y,
                                        const float* __restrict__ hidden, PARAMETERS, float* __restrict__ deltas,
                                        float* __restrict__ grad_in, const long long n) {
    __shared__ float column[WIDEST * BLOCK];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float d[WIDEST];
#pragma unroll
    for (int o = 0; o < OUT; ++o) {
        float v = grad[i * OUT + o];
        if (SIGMOID) {
            const float s = y[i * OUT + o];
            v = v * s * (1.0f - s);
        }
        d[o] = v;
        deltas[((long long)HIDDEN * WIDTH + o) * n + i] = v;
    }
#pragma unroll
    for (int l = HIDDEN; l > 0; --l) {  // layer l's delta -> layer l - 1's, through l - 1's ReLU
        const float* w = WEIGHT(l);
#pragma unroll 2
        for (int k = 0; k < WIDTH; ++k) {
            float s = 0.0f;
#pragma unroll
            for (int o = 0; o < LAYER_OUT(l); ++o) s += w[k * LAYER_OUT(l) + o] * d[o];
            COLUMN(k) = s;
        }
#pragma unroll
        for (int k = 0; k < WIDTH; ++k) {
            const long long at = ((long long)(l - 1) * WIDTH + k) * n + i;
            d[k] = hidden[at] > 0.0f ? COLUMN(k) : 0.0f;
            deltas[at] = d[k];
        }
    }
    if (grad_in == nullptr) return;
#pragma unroll 2
    for (int k = 0; k < IN; ++k) {
        float s = 0.0f;
#pragma unroll
        for (int o = 0; o < LAYER_OUT(0); ++o) s += w0[k * LAYER_OUT(0) + o] * d[o];
        grad_in[i * IN + k] = s;
    }
}
