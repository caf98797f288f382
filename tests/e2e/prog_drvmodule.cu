// The kernels of prog_drvmodule.c, built with nvcc -fatbin. From this
// source: VecAdd_kernel (no shared memory) and Scale_kernel (1024 B of
// static shared memory), both extern "C", so named as written.
extern "C" __global__ void VecAdd_kernel(const float *A, const float *B,
                                         float *C, int N) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}

extern "C" __global__ void Scale_kernel(float *C, float s, int N) {
  __shared__ float tile[256];
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  tile[threadIdx.x] = i < N ? C[i] : 0.0f;
  __syncthreads();
  if (i < N) C[i] = tile[threadIdx.x] * s;
}
