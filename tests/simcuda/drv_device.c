/* Simulated driver: device queries, versions and error strings. */
#include <stdio.h>
#include <string.h>

#include "drv.h"

#define SIM_NAME "gpuphase-sim"

static CUresult dev_ok(CUdevice d) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  return d >= 0 && d < gp_cfg.devices ? CUDA_SUCCESS
                                      : CUDA_ERROR_INVALID_DEVICE;
}

/* Fixed H100/H200-like properties; attributes not listed read as 0. The
 * SM count comes from the configuration and the PCI bus id from the
 * ordinal. */
#define A(name, value) {CU_DEVICE_ATTRIBUTE_##name, value},
/* clang-format off */
static const struct {
  CUdevice_attribute attr;
  int value;
} attrs[] = {
    A(COMPUTE_CAPABILITY_MAJOR, 9)
    A(COMPUTE_CAPABILITY_MINOR, 0)
    A(MAX_THREADS_PER_BLOCK, 1024)
    A(MAX_BLOCK_DIM_X, 1024)
    A(MAX_BLOCK_DIM_Y, 1024)
    A(MAX_BLOCK_DIM_Z, 64)
    A(MAX_GRID_DIM_X, 2147483647)
    A(MAX_GRID_DIM_Y, 65535)
    A(MAX_GRID_DIM_Z, 65535)
    A(MAX_SHARED_MEMORY_PER_BLOCK, 49152)
    A(TOTAL_CONSTANT_MEMORY, 65536)
    A(WARP_SIZE, 32)
    A(MAX_PITCH, 2147483647)
    A(MAX_REGISTERS_PER_BLOCK, 65536)
    A(CLOCK_RATE, 1980000)
    A(TEXTURE_ALIGNMENT, 512)
    A(TEXTURE_PITCH_ALIGNMENT, 32)
    A(SURFACE_ALIGNMENT, 512)
    A(GPU_OVERLAP, 1)
    A(CAN_MAP_HOST_MEMORY, 1)
    A(CONCURRENT_KERNELS, 1)
    A(ECC_ENABLED, 1)
    A(MEMORY_CLOCK_RATE, 2619000)
    A(GLOBAL_MEMORY_BUS_WIDTH, 6144)
    A(L2_CACHE_SIZE, 52428800)
    A(MAX_PERSISTING_L2_CACHE_SIZE, 32505856)
    A(MAX_THREADS_PER_MULTIPROCESSOR, 2048)
    A(MAX_BLOCKS_PER_MULTIPROCESSOR, 32)
    A(ASYNC_ENGINE_COUNT, 3)
    A(UNIFIED_ADDRESSING, 1)
    A(STREAM_PRIORITIES_SUPPORTED, 1)
    A(GLOBAL_L1_CACHE_SUPPORTED, 1)
    A(LOCAL_L1_CACHE_SUPPORTED, 1)
    A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472)
    A(MAX_REGISTERS_PER_MULTIPROCESSOR, 65536)
    A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448)
    A(RESERVED_SHARED_MEMORY_PER_BLOCK, 1024)
    A(MANAGED_MEMORY, 1)
    A(CONCURRENT_MANAGED_ACCESS, 1)
    A(COMPUTE_PREEMPTION_SUPPORTED, 1)
    A(COOPERATIVE_LAUNCH, 1)
    A(HOST_REGISTER_SUPPORTED, 1)
    A(MEMORY_POOLS_SUPPORTED, 1)
    A(CLUSTER_LAUNCH, 1)
    A(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2)
    A(MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632)
    A(HOST_NUMA_ID, -1)
};
/* clang-format on */
#undef A

static int attr_value(CUdevice_attribute a, CUdevice d) {
  if (a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) return gp_cfg.sms;
  if (a == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) return 0x18 + d;
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (attrs[i].attr == a) return attrs[i].value;
  return 0;
}

/* A device's PCI bus id ("00000000:BB:00.0", bus 0x18 + ordinal) and
 * UUID ("gpusim", zeros, the ordinal in the last byte), for the driver
 * and the simulated NVML alike. */
GPUSIM_EXPORT int gpusim_device_ids(int dev, char *pci, size_t len,
                                    unsigned char uuid[16]) {
  gp_config_load();
  if (dev < 0 || dev >= gp_cfg.devices) return -1;
  if (pci && len) snprintf(pci, len, "00000000:%02X:00.0", 0x18 + dev);
  if (uuid) {
    memset(uuid, 0, 16);
    memcpy(uuid, "gpusim", 6);
    uuid[15] = (unsigned char)dev;
  }
  return 0;
}

GPUSIM_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  DRV_ENTER(cuDriverGetVersion, driverVersion);
  if (!driverVersion) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *driverVersion = CUDA_VERSION;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  DRV_ENTER(cuDeviceGetCount, count);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!count) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *count = gp_cfg.devices;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  DRV_ENTER(cuDeviceGet, device, ordinal);
  CUresult r = dev_ok(ordinal);
  if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *device = ordinal;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len,
                                               CUdevice dev) {
  DRV_ENTER(cuDeviceGetName, name, len, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && (!name || len <= 0)) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) snprintf(name, (size_t)len, "%s", SIM_NAME);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes,
                                                   CUdevice dev) {
  DRV_ENTER(cuDeviceTotalMem_v2, bytes, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && !bytes) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *bytes = gp_cfg.mem_bytes;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi,
                                                    CUdevice_attribute attrib,
                                                    CUdevice dev) {
  DRV_ENTER(cuDeviceGetAttribute, pi, attrib, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS &&
      (!pi || (int)attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *pi = attr_value(attrib, dev);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  DRV_ENTER(cuDeviceGetUuid_v2, uuid, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && !uuid) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) gpusim_device_ids(dev, NULL, 0, (unsigned char *)uuid->bytes);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len,
                                                   CUdevice dev) {
  DRV_ENTER(cuDeviceGetPCIBusId, pciBusId, len, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && (!pciBusId || len <= 0))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    gpusim_device_ids(dev, pciBusId, (size_t)len, NULL);
  DRV_RETURN(r);
}

/* Every simulated device can reach every other (peer copies run at the
 * HBM rate, see README). */
GPUSIM_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer,
                                                     CUdevice dev,
                                                     CUdevice peerDev) {
  DRV_ENTER(cuDeviceCanAccessPeer, canAccessPeer, dev, peerDev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS) r = dev_ok(peerDev);
  if (r == CUDA_SUCCESS && !canAccessPeer) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *canAccessPeer = dev != peerDev;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least,
                                                           int *greatest) {
  DRV_ENTER(cuCtxGetStreamPriorityRange, least, greatest);
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  DRV_RETURN(CUDA_SUCCESS);
}

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED",
     "operation not permitted"},
};

static int error_index(CUresult e) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == e) return (int)i;
  return -1;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error,
                                                const char **pStr) {
  DRV_ENTER(cuGetErrorString, error, pStr);
  int i = error_index(error);
  if (!pStr) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *pStr = i >= 0 ? errors[i].text : NULL;
  DRV_RETURN(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

GPUSIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error,
                                              const char **pStr) {
  DRV_ENTER(cuGetErrorName, error, pStr);
  int i = error_index(error);
  if (!pStr) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *pStr = i >= 0 ? errors[i].name : NULL;
  DRV_RETURN(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}
