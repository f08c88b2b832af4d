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
