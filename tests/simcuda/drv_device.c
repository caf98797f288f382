/* Simulated driver: device queries, versions and error strings. */
#include <stdio.h>
#include <string.h>

#include "drv.h"

#define SIM_NAME "gpuphase-sim"

static CUresult dev_ok(CUdevice d) {
  if (!gp_inited)
    return CUDA_ERROR_NOT_INITIALIZED;
  return d >= 0 && d < gp_cfg.devices ? CUDA_SUCCESS
                                      : CUDA_ERROR_INVALID_DEVICE;
}

/* Fixed H100/H200-like properties; the ones the model uses (SM count)
 * come from the configuration. Unlisted attributes read as 0. */
static int attr_value(CUdevice_attribute a, CUdevice d) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return gp_cfg.sms;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
  case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + d;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 32505856;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
  case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
  case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return -1;
  default: return 0;
  }
}

GPUSIM_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  DRV_ENTER(cuDriverGetVersion, driverVersion);
  if (!driverVersion)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *driverVersion = CUDA_VERSION;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  DRV_ENTER(cuDeviceGetCount, count);
  if (!gp_inited)
    DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!count)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *count = gp_cfg.devices;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  DRV_ENTER(cuDeviceGet, device, ordinal);
  CUresult r = dev_ok(ordinal);
  if (r == CUDA_SUCCESS && !device)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    *device = ordinal;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len,
                                              CUdevice dev) {
  DRV_ENTER(cuDeviceGetName, name, len, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && (!name || len <= 0))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    snprintf(name, (size_t)len, "%s", SIM_NAME);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes,
                                                  CUdevice dev) {
  DRV_ENTER(cuDeviceTotalMem_v2, bytes, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && !bytes)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    *bytes = gp_cfg.mem_bytes;
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
  if (r == CUDA_SUCCESS)
    *pi = attr_value(attrib, dev);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  DRV_ENTER(cuDeviceGetUuid_v2, uuid, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && !uuid)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    memset(uuid, 0, sizeof *uuid);
    memcpy(uuid->bytes, "gpusim", 6);
    uuid->bytes[15] = (char)dev;
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len,
                                                  CUdevice dev) {
  DRV_ENTER(cuDeviceGetPCIBusId, pciBusId, len, dev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS && (!pciBusId || len <= 0))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", 0x18 + dev);
  DRV_RETURN(r);
}

/* Every simulated device can reach every other (peer copies run at the
 * HBM rate, see README). */
GPUSIM_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer,
                                                    CUdevice dev,
                                                    CUdevice peerDev) {
  DRV_ENTER(cuDeviceCanAccessPeer, canAccessPeer, dev, peerDev);
  CUresult r = dev_ok(dev);
  if (r == CUDA_SUCCESS)
    r = dev_ok(peerDev);
  if (r == CUDA_SUCCESS && !canAccessPeer)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    *canAccessPeer = dev != peerDev;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least,
                                                          int *greatest) {
  DRV_ENTER(cuCtxGetStreamPriorityRange, least, greatest);
  if (least)
    *least = 0;
  if (greatest)
    *greatest = -5;
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
};

static int error_index(CUresult e) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == e)
      return (int)i;
  return -1;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error,
                                               const char **pStr) {
  DRV_ENTER(cuGetErrorString, error, pStr);
  int i = error_index(error);
  if (!pStr)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *pStr = i >= 0 ? errors[i].text : NULL;
  DRV_RETURN(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

GPUSIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error,
                                             const char **pStr) {
  DRV_ENTER(cuGetErrorName, error, pStr);
  int i = error_index(error);
  if (!pStr)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *pStr = i >= 0 ? errors[i].name : NULL;
  DRV_RETURN(i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}
