/* Simulated driver: reading a module image (drv_image.c). */
#ifndef GPUSIM_DRV_IMAGE_H
#define GPUSIM_DRV_IMAGE_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A kernel as its image describes it. */
typedef struct gp_kdesc {
  char *name;
  int regs, static_shmem, local, max_threads;
  int ptx_version, binary_version;
} gp_kdesc;

/* A global variable (__device__ or __constant__). */
typedef struct gp_gdesc {
  char *name;
  size_t size;
} gp_gdesc;

typedef struct gp_image {
  gp_kdesc *k;
  size_t nk, capk;
  gp_gdesc *g;
  size_t ng, capg;
} gp_image;

/* Length to pass for an image in memory whose length is not known
 * (cuModuleLoadData): it is taken from the image's own headers. */
#define GP_IMAGE_UNSIZED ((size_t)-1)

/* Reads an ELF cubin, a fatbin (or nvcc's wrapper of one, unsized only)
 * or PTX text. CUDA_ERROR_INVALID_IMAGE: not an image;
 * CUDA_ERROR_INVALID_PTX: PTX the device cannot take;
 * CUDA_ERROR_NO_BINARY_FOR_GPU: nothing for the device's architecture;
 * CUDA_ERROR_NOT_SUPPORTED: a form this build cannot read (an ELF image
 * without libelf, an entry compressed other than with zstd). On success
 * *im is filled (gp_image_free it). */
CUresult gp_image_read(const void *image, size_t n, gp_image *im);
void gp_image_free(gp_image *im);

#endif
