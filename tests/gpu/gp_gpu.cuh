// What the ground-truth programs of this folder share: a kernel that spins
// on %globaltimer for a set time (GP_SPIN_KERNEL(name) defines one of that
// name, so that a program can tell its phases apart by kernel name), and
// CK(x), which ends the program with the CUDA error's text.
#ifndef GP_GPU_CUH
#define GP_GPU_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define GP_SPIN_KERNEL(name)                                                   \
  __global__ void name(unsigned long long ns) {                                \
    unsigned long long t0, t;                                                  \
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));                     \
    do {                                                                       \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));                    \
    } while (t - t0 < ns);                                                     \
  }

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                 \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#endif
