/* A program that uses only the driver API (no libcudart in the process):
 * cuInit, a context, an allocation, N synchronous host-to-device copies of
 * 1 MiB and a context synchronisation. Prints "copies=N".
 *
 *   prog N          on the primary context of device 0, from main: which
 *                   CUPTI the shim picks when no runtime says where CUDA
 *                   lives (test_record.py driver_cupti)
 *   prog N ctx D    on a thread whose context comes from cuCtxCreate on
 *                   device D (ctx2: cuCtxCreate_v2, found with dlsym), then
 *                   cuCtxDestroy: every call of that thread is on device D
 *                   (test_record.py ctx_device)
 *   prog N ctxpop D a context created on device D, popped (the primary
 *                   context of the other device of two current again),
 *                   then destroyed: the cuCtxDestroy is about device D
 *   prog N popnone D  the primary context of device D pushed onto an empty
 *                   stack and popped: no context is current after the pop
 *   prog N managed  on device 0's primary context: a 1 MiB managed
 *                   allocation prefetched to device 0 on a stream
 *                   (cuMemPrefetchAsync_v2: one 1 MiB MANAGED copy),
 *                   attached to the stream, a captured graph of one
 *                   1000-byte memset uploaded (cuGraphUpload) and launched
 *                   twice, the stream synchronised; the N copies first */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                  \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static int n_copies = 4, ctx_dev, ctx_v2;
static char host[1 << 20];

static int copies(void) {
  CUdeviceptr p;
  CK(cuMemAlloc(&p, sizeof host));
  for (int i = 0; i < n_copies; i++) CK(cuMemcpyHtoD(p, host, sizeof host));
  CK(cuCtxSynchronize());
  CK(cuMemFree(p));
  return 0;
}

#if CUDA_VERSION < 12020 /* declared by cuda.h from 12.2 on */
CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
                                       CUmemLocation location,
                                       unsigned int flags, CUstream hStream);
#endif

/* The stream-ordered calls on managed memory and graphs that are not
 * kernels or copies (the "managed" mode above). */
static int managed(void) {
  CUstream s;
  CUdeviceptr m;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL));
  CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
  CK(cuMemPrefetchAsync_v2(m, 1 << 20, loc, 0, s));
  CK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_GLOBAL));
  CUgraph g;
  CUgraphExec ge;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuMemsetD8Async(m, 0, 1000, s));
  CK(cuStreamEndCapture(s, &g));
  CK(cuGraphInstantiate(&ge, g, 0));
  CK(cuGraphUpload(ge, s));
  CK(cuGraphLaunch(ge, s));
  CK(cuGraphLaunch(ge, s));
  CK(cuStreamSynchronize(s));
  CK(cuGraphExecDestroy(ge));
  CK(cuGraphDestroy(g));
  CK(cuMemFree(m));
  CK(cuStreamDestroy(s));
  return 0;
}

typedef CUresult (*create_v2_fn)(CUcontext *, unsigned int, CUdevice);

static void *ctx_thread(void *arg) {
  (void)arg;
  CUdevice dev;
  CUcontext ctx;
  static int rc = 1;
  if (cuDeviceGet(&dev, ctx_dev) != CUDA_SUCCESS) return &rc;
  if (ctx_v2) {
    create_v2_fn f = (create_v2_fn)dlsym(RTLD_DEFAULT, "cuCtxCreate_v2");
    if (!f || f(&ctx, 0, dev) != CUDA_SUCCESS) return &rc;
  } else if (cuCtxCreate(&ctx, NULL, 0, dev) != CUDA_SUCCESS) {
    return &rc;
  }
  if (copies() != 0 || cuCtxDestroy(ctx) != CUDA_SUCCESS) return &rc;
  static int ok = 0;
  return &ok;
}

int main(int argc, char **argv) {
  if (argc > 1) n_copies = atoi(argv[1]);
  CK(cuInit(0));
  if (argc > 3 && (strcmp(argv[2], "ctx") == 0 || strcmp(argv[2], "ctx2") == 0)) {
    ctx_dev = atoi(argv[3]);
    ctx_v2 = strcmp(argv[2], "ctx2") == 0;
    pthread_t t;
    void *res = NULL;
    if (pthread_create(&t, NULL, ctx_thread, NULL) != 0 ||
        pthread_join(t, &res) != 0 || !res || *(int *)res != 0) {
      fprintf(stderr, "context thread failed\n");
      return 1;
    }
  } else if (argc > 3 && strcmp(argv[2], "ctxpop") == 0) {
    CUdevice d, other;
    CUcontext p, c, out;
    CK(cuDeviceGet(&d, atoi(argv[3])));
    CK(cuDeviceGet(&other, 1 - atoi(argv[3])));
    CK(cuDevicePrimaryCtxRetain(&p, other));
    CK(cuCtxSetCurrent(p));
    CK(cuCtxCreate(&c, NULL, 0, d));
    if (copies() != 0) return 1;
    CK(cuCtxPopCurrent(&out));
    CK(cuCtxDestroy(c));
    CK(cuDevicePrimaryCtxRelease(other));
  } else if (argc > 3 && strcmp(argv[2], "popnone") == 0) {
    CUdevice d;
    CUcontext p, out, cur = NULL;
    CK(cuDeviceGet(&d, atoi(argv[3])));
    CK(cuDevicePrimaryCtxRetain(&p, d));
    CK(cuCtxPushCurrent(p));
    CK(cuCtxPopCurrent(&out));
    CK(cuCtxGetCurrent(&cur));
    if (cur) return 1; /* the stack was empty before the push */
    CK(cuDevicePrimaryCtxRelease(d));
  } else {
    CUdevice dev;
    CUcontext ctx;
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    if (copies() != 0) return 1;
    if (argc > 2 && strcmp(argv[2], "managed") == 0 && managed() != 0)
      return 1;
    CK(cuDevicePrimaryCtxRelease(dev));
  }
  printf("copies=%d\n", n_copies);
  return 0;
}
