/* Simulated runtime: device management, versions and error strings.
 * Device properties are read from the driver's attributes, as the real
 * runtime does. */
#include <pthread.h>
#include <string.h>

#include "rt.h"

#define ERRORS(X)                                                              \
  X(cudaSuccess, "no error")                                                   \
  X(cudaErrorInvalidValue, "invalid argument")                                 \
  X(cudaErrorMemoryAllocation, "out of memory")                                \
  X(cudaErrorInitializationError, "initialization error")                      \
  X(cudaErrorCudartUnloading, "driver shutting down")                          \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")           \
  X(cudaErrorInvalidPitchValue, "invalid pitch argument")                      \
  X(cudaErrorInvalidSymbol, "invalid device symbol")                           \
  X(cudaErrorInvalidHostPointer, "invalid host pointer")                       \
  X(cudaErrorInvalidDevicePointer, "invalid device pointer")                   \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")      \
  X(cudaErrorInsufficientDriver,                                               \
    "CUDA driver version is insufficient for CUDA runtime version")            \
  X(cudaErrorMissingConfiguration, "__global__ function call is not "          \
                                   "configured")                               \
  X(cudaErrorInvalidDeviceFunction, "invalid device function")                 \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                   \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                          \
  X(cudaErrorDeviceUninitialized, "invalid device context")                    \
  X(cudaErrorPeerAccessUnsupported, "peer access is not supported between "    \
                                    "these two devices")                       \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                 \
  X(cudaErrorSymbolNotFound, "named symbol not found")                         \
  X(cudaErrorNotReady, "device not ready")                                     \
  X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled")       \
  X(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled")         \
  X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested "      \
                                          "memory range is already mapped")    \
  X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a "      \
                                      "registered memory region")              \
  X(cudaErrorNotPermitted, "operation not permitted")                          \
  X(cudaErrorNotSupported, "operation not supported")                          \
  X(cudaErrorUnknown, "unknown error")

static const char *error_text(cudaError_t e, bool name) {
  switch (e) {
#define X(code, text)                                                          \
  case code:                                                                   \
    return name ? #code : text;
    ERRORS(X)
#undef X
  default:
    return "unrecognized error code";
  }
}

/* API calls like any other, but they must answer even when the driver
 * cannot be loaded. */
RT_API const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
  cudaGetErrorString_v3020_params prm = {error};
  gpusim_api_frame fr;
  bool framed =
      gp_rt_enter(&fr, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020,
                  "cudaGetErrorString", &prm, NULL);
  const char *text = error_text(error, false);
  if (framed) gp_rt_exit(&fr, cudaSuccess);
  return text;
}

RT_API const char *CUDARTAPI cudaGetErrorName(cudaError_t error) {
  cudaGetErrorName_v6050_params prm = {error};
  gpusim_api_frame fr;
  bool framed =
      gp_rt_enter(&fr, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050,
                  "cudaGetErrorName", &prm, NULL);
  const char *text = error_text(error, true);
  if (framed) gp_rt_exit(&fr, cudaSuccess);
  return text;
}

RT_API cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion) {
  RT_ENTER(cudaDriverGetVersion, v3020, driverVersion);
  if (!driverVersion) RT_RETURN(cudaErrorInvalidValue);
  *driverVersion = CUDA_VERSION;
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion) {
  RT_ENTER(cudaRuntimeGetVersion, v3020, runtimeVersion);
  if (!runtimeVersion) RT_RETURN(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaGetDeviceCount(int *count) {
  RT_ENTER(cudaGetDeviceCount, v3020, count);
  if (!count) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, device_count, count));
}

static bool valid_device(int d) {
  int n = 0;
  return gp_drv.device_count(&n) == CUDA_SUCCESS && d >= 0 && d < n;
}

/* As in CUDA 12+, setting a device also initialises its context. */
RT_API cudaError_t CUDARTAPI cudaSetDevice(int device) {
  RT_ENTER(cudaSetDevice, v3020, device);
  if (!valid_device(device)) RT_RETURN(cudaErrorInvalidDevice);
  RT_RETURN(gp_rt_set_device(device));
}

RT_API cudaError_t CUDARTAPI cudaInitDevice(int device,
                                            unsigned int deviceFlags,
                                            unsigned int flags) {
  RT_ENTER(cudaInitDevice, v12000, device, deviceFlags, flags);
  if (!valid_device(device)) RT_RETURN(cudaErrorInvalidDevice);
  RT_RETURN(gp_rt_primary(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

RT_API cudaError_t CUDARTAPI cudaGetDevice(int *device) {
  RT_ENTER(cudaGetDevice, v3020, device);
  if (!device) RT_RETURN(cudaErrorInvalidValue);
  *device = gp_rt_device();
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags) {
  RT_ENTER(cudaSetDeviceFlags, v3020, flags);
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned int *flags) {
  RT_ENTER(cudaGetDeviceFlags, v7000, flags);
  if (!flags) RT_RETURN(cudaErrorInvalidValue);
  *flags = 0;
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value,
                                                    enum cudaDeviceAttr attr,
                                                    int device) {
  RT_ENTER(cudaDeviceGetAttribute, v5000, value, attr, device);
  if (!value) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, device_attr, value, (CUdevice_attribute)attr, device));
}

/* cudaDeviceProp fields and the driver attributes they come from. */
#define PROP_INTS(X)                                                           \
  X(warpSize, WARP_SIZE)                                                       \
  X(maxThreadsPerBlock, MAX_THREADS_PER_BLOCK)                                 \
  X(maxThreadsDim[0], MAX_BLOCK_DIM_X)                                         \
  X(maxThreadsDim[1], MAX_BLOCK_DIM_Y)                                         \
  X(maxThreadsDim[2], MAX_BLOCK_DIM_Z)                                         \
  X(maxGridSize[0], MAX_GRID_DIM_X)                                            \
  X(maxGridSize[1], MAX_GRID_DIM_Y)                                            \
  X(maxGridSize[2], MAX_GRID_DIM_Z)                                            \
  X(sharedMemPerBlock, MAX_SHARED_MEMORY_PER_BLOCK)                            \
  X(totalConstMem, TOTAL_CONSTANT_MEMORY)                                      \
  X(regsPerBlock, MAX_REGISTERS_PER_BLOCK)                                     \
  X(memPitch, MAX_PITCH)                                                       \
  X(major, COMPUTE_CAPABILITY_MAJOR)                                           \
  X(minor, COMPUTE_CAPABILITY_MINOR)                                           \
  X(textureAlignment, TEXTURE_ALIGNMENT)                                       \
  X(texturePitchAlignment, TEXTURE_PITCH_ALIGNMENT)                            \
  X(surfaceAlignment, SURFACE_ALIGNMENT)                                       \
  X(multiProcessorCount, MULTIPROCESSOR_COUNT)                                 \
  X(canMapHostMemory, CAN_MAP_HOST_MEMORY)                                     \
  X(concurrentKernels, CONCURRENT_KERNELS)                                     \
  X(ECCEnabled, ECC_ENABLED)                                                   \
  X(pciBusID, PCI_BUS_ID)                                                      \
  X(asyncEngineCount, ASYNC_ENGINE_COUNT)                                      \
  X(unifiedAddressing, UNIFIED_ADDRESSING)                                     \
  X(memoryBusWidth, GLOBAL_MEMORY_BUS_WIDTH)                                   \
  X(l2CacheSize, L2_CACHE_SIZE)                                                \
  X(persistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE)                    \
  X(maxThreadsPerMultiProcessor, MAX_THREADS_PER_MULTIPROCESSOR)               \
  X(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED)                    \
  X(globalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED)                         \
  X(localL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED)                           \
  X(sharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)          \
  X(regsPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR)                   \
  X(managedMemory, MANAGED_MEMORY)                                             \
  X(concurrentManagedAccess, CONCURRENT_MANAGED_ACCESS)                        \
  X(computePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED)                  \
  X(cooperativeLaunch, COOPERATIVE_LAUNCH)                                     \
  X(sharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)                 \
  X(maxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR)                 \
  X(accessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE)                  \
  X(reservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK)               \
  X(hostRegisterSupported, HOST_REGISTER_SUPPORTED)                            \
  X(memoryPoolsSupported, MEMORY_POOLS_SUPPORTED)                              \
  X(clusterLaunch, CLUSTER_LAUNCH)

static CUresult fill_props(struct cudaDeviceProp *p, int dev) {
  int v;
  CUresult r;
  memset(p, 0, sizeof *p);
  if ((r = gp_drv.device_name(p->name, sizeof p->name, dev)) != CUDA_SUCCESS)
    return r;
  if ((r = gp_drv.device_mem(&p->totalGlobalMem, dev)) != CUDA_SUCCESS)
    return r;
  gp_drv.device_uuid((CUuuid *)&p->uuid, dev);
#define X(field, attr)                                                         \
  if ((r = gp_drv.device_attr(&v, CU_DEVICE_ATTRIBUTE_##attr, dev))) return r; \
  p->field = v;
  PROP_INTS(X)
#undef X
  p->hostNumaId = -1;
  return CUDA_SUCCESS;
}

RT_API cudaError_t CUDARTAPI
cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  RT_ENTER(cudaGetDeviceProperties, v12000, prop, device);
  if (!prop) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(gp_rt_error(fill_props(prop, device)));
}

RT_API cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  RT_ENTER0(cudaDeviceSynchronize, v3020);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, ctx_sync, NULL));
}

/* Peer access enabled, per (device, peer): see peer_set below. */
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static bool peer_on[GPUSIM_MAX_DEVICES][GPUSIM_MAX_DEVICES];

static void peer_forget(int dev) {
  if (dev < 0 || dev >= GPUSIM_MAX_DEVICES) return;
  pthread_mutex_lock(&peer_lock);
  memset(peer_on[dev], 0, sizeof peer_on[dev]);
  pthread_mutex_unlock(&peer_lock);
}

RT_API cudaError_t CUDARTAPI cudaDeviceReset(void) {
  RT_ENTER0(cudaDeviceReset, v3020);
  RT_NEED_CTX();
  cudaError_t e = DRV(gp_drv, primary_reset, gp_rt_device());
  if (e == cudaSuccess) peer_forget(gp_rt_device());
  RT_RETURN(e);
}

RT_API cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total) {
  RT_ENTER(cudaMemGetInfo, v3020, free, total);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, mem_info, free, total));
}

RT_API cudaError_t CUDARTAPI
cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  RT_ENTER(cudaDeviceGetStreamPriorityRange, v5050, leastPriority,
           greatestPriority);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, ctx_prio, leastPriority, greatestPriority));
}

RT_API cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer,
                                                     int device,
                                                     int peerDevice) {
  RT_ENTER(cudaDeviceCanAccessPeer, v4000, canAccessPeer, device, peerDevice);
  RT_RETURN(DRV(gp_drv, device_peer, canAccessPeer, device, peerDevice));
}

/* Peer access is possible between any two devices of the simulation and
 * changes nothing it models, but it is kept per (device, peer) pair for
 * CUDA's results: enabling it twice, or disabling it when it is not
 * enabled, fails, as does naming the current device itself; a device
 * reset forgets the device's. */
static cudaError_t peer_set(int peer, bool on) {
  int dev = gp_rt_device();
  if (!valid_device(peer) || peer == dev || dev < 0 || dev >= GPUSIM_MAX_DEVICES)
    return cudaErrorInvalidDevice;
  pthread_mutex_lock(&peer_lock);
  bool was = peer_on[dev][peer];
  if (was != on) peer_on[dev][peer] = on;
  pthread_mutex_unlock(&peer_lock);
  if (was == on)
    return on ? cudaErrorPeerAccessAlreadyEnabled : cudaErrorPeerAccessNotEnabled;
  return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice,
                                                        unsigned int flags) {
  RT_ENTER(cudaDeviceEnablePeerAccess, v4000, peerDevice, flags);
  RT_NEED_CTX();
  if (flags) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(peer_set(peerDevice, true));
}

RT_API cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peerDevice) {
  RT_ENTER(cudaDeviceDisablePeerAccess, v4000, peerDevice);
  RT_NEED_CTX();
  RT_RETURN(peer_set(peerDevice, false));
}

RT_API cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char *pciBusId, int len,
                                                   int device) {
  RT_ENTER(cudaDeviceGetPCIBusId, v4010, pciBusId, len, device);
  RT_RETURN(DRV(gp_drv, device_pci, pciBusId, len, device));
}

RT_API cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool,
                                                         int device) {
  RT_ENTER(cudaDeviceGetDefaultMemPool, v11020, memPool, device);
  RT_RETURN(DRV(gp_drv, device_pool, (CUmemoryPool *)memPool, device));
}

/* Limits are accepted and read back as 0: nothing in the model uses
 * them. */
RT_API cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit limit,
                                                size_t value) {
  RT_ENTER(cudaDeviceSetLimit, v3020, limit, value);
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t *pValue,
                                                enum cudaLimit limit) {
  RT_ENTER(cudaDeviceGetLimit, v3020, pValue, limit);
  if (!pValue) RT_RETURN(cudaErrorInvalidValue);
  *pValue = 0;
  RT_RETURN(cudaSuccess);
}

RT_API struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(
    int x, int y, int z, int w, enum cudaChannelFormatKind f) {
  struct cudaChannelFormatDesc d = {x, y, z, w, f};
  return d;
}
