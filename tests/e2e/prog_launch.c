/* Launches with every dim3 launch function gpuphase wraps, with grids and
 * blocks whose totals test_record.py ("launch_dims") works out by hand from
 * the call's index i, which each call passes as its dynamic shared memory
 * (the record's bytes):
 *   function   i % 6: cudaLaunchKernel, cudaLaunchKernel_ptsz,
 *              cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz,
 *              __cudaLaunchKernel, __cudaLaunchKernel_ptsz
 *   dimensions i % 8: 5: grid 65536 x 65536 x 2, block 2048 (a grid total
 *              over 2^32, a block over 1024 threads: rejected); 6: grid
 *              2^31 x 2^31 x 4 (x*y*z is 0 modulo 2^64: rejected); 7: block
 *              1024 x 1024 (over 65535 threads: rejected); else grid
 *              (1 + i%5) x (1 + i%3) x (1 + i/3%2), block
 *              32 x (1 + i%4) x (1 + i/5%2); 4, where a dim3 travels in two
 *              registers (x86-64, AArch64): the same dimensions, with the
 *              unused high half of each z word set (the callee must ignore
 *              it)
 * plus a cudaStreamQuery after every third launch (so that launches, which
 * take two ring slots, start at odd and even positions), and a
 * cudaStreamSynchronize every 64 launches.
 * usage: e2e-prog-launch N; prints "launches N rejected R" (the calls that
 * returned cudaErrorInvalidConfiguration) when every other call succeeded. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Not declared by the headers unless per-thread default streams are on
 * (and __cudaLaunchKernel is nvcc 13's, never declared; its kernel handle,
 * cudaKernel_t, is a pointer that CUDA 12.0's headers do not know). */
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t,
                                  cudaStream_t);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *, dim3, dim3, void **,
                                             size_t, cudaStream_t);
cudaError_t __cudaLaunchKernel(void *, dim3, dim3, void **, size_t,
                               cudaStream_t);
cudaError_t __cudaLaunchKernel_ptsz(void *, dim3, dim3, void **, size_t,
                                    cudaStream_t);
/* cudaGetKernel, which CUDA 12.0's headers lack: looked up */
typedef cudaError_t (*get_kernel_fn)(void **, const void *);

volatile int launch_sink;
void k_dims(void) {
  launch_sink = 1;
}

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t,
                                 cudaStream_t);

static void dims_of(long i, dim3 *g, dim3 *b) {
  switch (i % 8) {
  case 5:
    *g = (dim3){65536, 65536, 2};
    *b = (dim3){2048, 1, 1};
    break;
  case 6:
    *g = (dim3){1u << 31, 1u << 31, 4};
    *b = (dim3){32, 1, 1};
    break;
  case 7:
    *g = (dim3){1, 1, 1};
    *b = (dim3){1024, 1024, 1};
    break;
  default:
    *g = (dim3){(unsigned)(1 + i % 5), (unsigned)(1 + i % 3),
                (unsigned)(1 + i / 3 % 2)};
    *b = (dim3){32, (unsigned)(1 + i % 4), (unsigned)(1 + i / 5 % 2)};
  }
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The same launch with each dim3 as the two words it is passed in, the
 * high half of the z word not zero. */
typedef cudaError_t (*words_fn)(const void *, uint64_t, uint64_t, uint64_t,
                                uint64_t, void **, size_t, cudaStream_t);
static cudaError_t launch_words(void *fn, const void *k, dim3 g, dim3 b,
                                size_t smem, cudaStream_t s) {
  uint64_t junk = 0xdead5a5a00000000ull;
  return ((words_fn)fn)(k, g.x | (uint64_t)g.y << 32, g.z | junk,
                        b.x | (uint64_t)b.y << 32, b.z | junk, NULL, smem, s);
}
#endif

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 0;
  if (n <= 0) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 2;
  }
  cudaStream_t s;
  void *kern = NULL;
  get_kernel_fn get_kernel =
      (get_kernel_fn)dlsym(RTLD_DEFAULT, "cudaGetKernel");
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      !get_kernel || get_kernel(&kern, (const void *)k_dims) != cudaSuccess)
    return 1;
  void *fns[6] = {(void *)cudaLaunchKernel,
                  (void *)cudaLaunchKernel_ptsz,
                  (void *)cudaLaunchCooperativeKernel,
                  (void *)cudaLaunchCooperativeKernel_ptsz,
                  (void *)__cudaLaunchKernel,
                  (void *)__cudaLaunchKernel_ptsz};
  long rejected = 0;
  for (long i = 0; i < n; i++) {
    dim3 g, b;
    dims_of(i, &g, &b);
    void *fn = fns[i % 6];
    const void *k = i % 6 >= 4 ? (const void *)kern : (const void *)k_dims;
    cudaError_t r;
#if defined(__x86_64__) || defined(__aarch64__)
    if (i % 8 == 4)
      r = launch_words(fn, k, g, b, (size_t)i, s);
    else
#endif
      r = ((launch_fn)fn)(k, g, b, NULL, (size_t)i, s);
    int bad = i % 8 >= 5;
    if (r == cudaErrorInvalidConfiguration && bad) {
      rejected++;
      cudaGetLastError();
    } else if (r != cudaSuccess || bad) {
      fprintf(stderr, "launch %ld: %d\n", i, (int)r);
      return 1;
    }
    if (i % 3 == 2) {
      cudaError_t q = cudaStreamQuery(s);
      if (q != cudaSuccess && q != cudaErrorNotReady) return 1;
    }
    if (i % 64 == 63 && cudaStreamSynchronize(s) != cudaSuccess) return 1;
  }
  if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
  printf("launches %ld rejected %ld\n", n, rejected);
  return 0;
}
