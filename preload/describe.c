/* Device properties for DEVICE records and thread names for THREAD
 * records, read on the writer thread. */
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gp_apitab.h"
#include "gp_describe.h"
#include "gp_fd.h"

#define MAX_DEVICES 64

static uint8_t device_state[MAX_DEVICES]; /* 0 unknown, 1 written, 2.. tries */

typedef CUresult (*cu_dev_get_fn)(CUdevice *, int);
typedef CUresult (*cu_name_fn)(char *, int, CUdevice);
typedef CUresult (*cu_mem_fn)(size_t *, CUdevice);
typedef CUresult (*cu_attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*cu_version_fn)(int *);
typedef int (*rt_version_fn)(int *); /* cudaError_t: 0 is cudaSuccess */

/* The driver's and runtime's versions, for every DEVICE record: asked once
 * each (until known). Both getters only return a number and need no
 * initialised context, so the writer thread may call them; the runtime's
 * is the real one (its CUPTI callback, if any, comes to an internal
 * thread and is not recorded). 0 when unknown, e.g. a program that only
 * uses the driver API. */
static void versions(void *cuda, uint64_t *driver, uint64_t *runtime) {
  static int drv, rt;
  if (!drv) {
    cu_version_fn f = (cu_version_fn)dlsym(cuda, "cuDriverGetVersion");
    int v = 0;
    if (f && f(&v) == CUDA_SUCCESS && v > 0) drv = v;
  }
  if (!rt) {
    rt_version_fn f = (rt_version_fn)gp_real_runtime("cudaRuntimeGetVersion");
    int v = 0;
    if (f && f(&v) == 0 && v > 0) rt = v;
  }
  *driver = (uint64_t)drv;
  *runtime = (uint64_t)rt;
}

static void attributes(cu_attr_fn attr, CUdevice d, struct gpuphase_device *p) {
#define ATTR(a) (attr(&v, a, d) == CUDA_SUCCESS && v > 0 ? (uint64_t)v : 0)
  int v;
  p->sms = ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->cc_major = ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p->cc_minor = ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p->max_threads_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p->max_blocks_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p->regs_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p->smem_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p->warp_size = ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p->clock_khz = ATTR(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  p->mem_clock_khz = ATTR(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  p->mem_bus_width = ATTR(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
#undef ATTR
}

int gp_describe_device(uint32_t dev, struct gpuphase_device *p, char *name,
                       size_t cap) {
  if (dev >= MAX_DEVICES || device_state[dev] == 1 || device_state[dev] > 50)
    return 0;
  device_state[dev]++;
  if (device_state[dev] == 1) device_state[dev] = 2;
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  cu_dev_get_fn dev_get = (cu_dev_get_fn)dlsym(h, "cuDeviceGet");
  cu_name_fn get_name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
  cu_mem_fn total_mem = (cu_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
  cu_attr_fn attr = (cu_attr_fn)dlsym(h, "cuDeviceGetAttribute");
  CUdevice d;
  size_t mem = 0;
  name[0] = 0;
  if (!dev_get || !get_name || !total_mem || !attr ||
      dev_get(&d, (int)dev) != CUDA_SUCCESS ||
      get_name(name, (int)cap, d) != CUDA_SUCCESS ||
      total_mem(&mem, d) != CUDA_SUCCESS) {
    dlclose(h);
    return 0;
  }
  memset(p, 0, sizeof *p);
  p->device = dev;
  p->mem_total = mem;
  attributes(attr, d, p);
  versions(h, &p->driver_version, &p->runtime_version);
  device_state[dev] = 1;
  dlclose(h);
  return 1;
}

void gp_describe_thread(pid_t tid, char *name, size_t cap) {
  char path[64];
  name[0] = 0;
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  int fd = gp_fd_high(open(path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return;
  ssize_t n = read(fd, name, cap - 1);
  close(fd);
  name[n > 0 ? n : 0] = 0;
  char *nl = strchr(name, '\n');
  if (nl) *nl = 0;
}

void gp_describe_reset(void) {
  memset(device_state, 0, sizeof device_state);
}
