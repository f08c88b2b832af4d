// The GPU smoke test's kernels, behind a C interface: nvcc compiles this file only, and the test
// itself stays plain C++ (stint's headers never pass through nvcc's front end).

#include <cuda_runtime.h>

constexpr int tile = 16;

// c = a * b for n x n row-major matrices, one thread per element of c.
__global__ void stint_smoke_matmul(const float* a, const float* b, float* c, int n) {
    const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (row >= n || col >= n) return;
    float sum = 0.0F;
    for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
    c[row * n + col] = sum;
}

// The cheapest kernel there is: what a launch costs, with nothing to run.
__global__ void stint_smoke_empty() {}

extern "C" int stint_smoke_matmul_launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const dim3 block(tile, tile);
    const dim3 grid((n + tile - 1) / tile, (n + tile - 1) / tile);
    stint_smoke_matmul<<<grid, block, 0, stream>>>(a, b, c, n);
    return static_cast<int>(cudaGetLastError());
}

extern "C" int stint_smoke_empty_launch(cudaStream_t stream) {
    stint_smoke_empty<<<1, 1, 0, stream>>>();
    return static_cast<int>(cudaGetLastError());
}

// For the GPU check (tests/gpu/check.cpp).

// Spins for `ns` nanoseconds of the GPU's own global timer: a kernel of known length.
__global__ void stint_check_spin(unsigned long long ns) {
    unsigned long long start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned long long now = start;
    while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

__global__ void stint_check_add_one(float* x) { x[threadIdx.x] += 1.0F; }

extern "C" int stint_check_spin_launch(unsigned long long ns, cudaStream_t stream) {
    stint_check_spin<<<1, 1, 0, stream>>>(ns);
    return static_cast<int>(cudaGetLastError());
}

// The empty kernel as a driver-API function, for a launch through cuLaunchKernel.
extern "C" int stint_check_empty_function(cudaFunction_t* function) {
    return static_cast<int>(cudaGetFuncBySymbol(function, reinterpret_cast<const void*>(&stint_smoke_empty)));
}

// A graph of three kernels (captured from a stream), instantiated: launching it is one cudaGraphLaunch.
extern "C" int stint_check_make_graph(float* x, cudaStream_t stream, cudaGraphExec_t* exec) {
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
    for (int i = 0; i < 3; ++i) stint_check_add_one<<<1, 32, 0, stream>>>(x);
    if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) return 2;
    const cudaError_t made = cudaGraphInstantiate(exec, graph, 0);
    cudaGraphDestroy(graph);
    return static_cast<int>(made);
}
