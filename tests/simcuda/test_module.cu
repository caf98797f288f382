// The module of the module self-test (test_module.c), built with nvcc as a
// cubin, fatbins and PTX. Its facts the test expects, from this source:
// two kernels, mod_scale (extern "C", at most 256 threads per block,
// 1024 B of static shared memory) and mod_add (C++: _Z7mod_addPKfPfi, no
// shared memory); two variables, mod_table (256 B) and mod_coef (16 B).
// mod_twice is a device function, no kernel: with -rdc=true it stays in
// the cubin as a function symbol of its own.
__device__ float mod_table[64];
__constant__ int mod_coef[4];

extern "C" __global__ void __launch_bounds__(256)
    mod_scale(float *x, float s, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) x[i] = tile[255 - threadIdx.x] * s * mod_coef[i & 3];
}

__device__ __noinline__ float mod_twice(float x) { return 2.0f * x; }

__global__ void mod_add(const float *a, float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += mod_twice(a[i]) + mod_table[i & 63];
}
