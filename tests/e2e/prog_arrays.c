/* Image-processing style use of CUDA arrays: a 1024 x 512 float image
 * uploaded into an array, filtered four times, read back asynchronously;
 * a 64 x 64 x 16 uchar4 volume uploaded with cudaMemcpy3D; a 3-level
 * mipmap whose level 1 is filled. Prints a checksum of the host data and
 * what it allocated. Model figures (test_fidelity.py): arrays of 2097152,
 * 262144 and 344064 bytes (65536 + 16384 + 4096 floats), all live at
 * once; four copies (2097152 to the image, 2097152 back, 262144 to the
 * volume, 65536 to the mipmap level), four kernels of 264 blocks. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

void arrays_filter(void);
void arrays_filter(void) {}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

#define W 1024
#define H 512

int main(void) {
  float *img = malloc(sizeof(float) * W * H);
  unsigned char *vol = malloc(64 * 64 * 16 * 4);
  if (!img || !vol) return 1;
  for (int i = 0; i < W * H; i++)
    img[i] = (float)(i % 97);
  for (int i = 0; i < 64 * 64 * 16 * 4; i++)
    vol[i] = (unsigned char)(i * 7);
  struct cudaChannelFormatDesc f1 =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  struct cudaChannelFormatDesc u4 =
      cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
  cudaArray_t image, volume, level1;
  cudaMipmappedArray_t mip;
  CHECK(cudaMallocArray(&image, &f1, W, H, 0));
  CHECK(cudaMalloc3DArray(&volume, &u4, (struct cudaExtent){64, 64, 16}, 0));
  CHECK(cudaMallocMipmappedArray(&mip, &f1, (struct cudaExtent){256, 256, 0}, 3,
                                 0));
  CHECK(cudaGetMipmappedArrayLevel(&level1, mip, 1));
  struct cudaExtent e;
  CHECK(cudaArrayGetInfo(NULL, &e, NULL, level1));
  printf("level1=%zux%zu\n", e.width, e.height);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpy2DToArray(image, 0, 0, img, W * sizeof(float),
                            W * sizeof(float), H, cudaMemcpyHostToDevice));
  dim3 grid = {264, 1, 1}, block = {256, 1, 1};
  for (int i = 0; i < 4; i++)
    CHECK(cudaLaunchKernel((const void *)arrays_filter, grid, block, NULL, 0,
                           s));
  float *back;
  CHECK(cudaMallocHost((void **)&back, sizeof(float) * W * H));
  CHECK(cudaMemcpy2DFromArrayAsync(back, W * sizeof(float), image, 0, 0,
                                   W * sizeof(float), H,
                                   cudaMemcpyDeviceToHost, s));
  struct cudaMemcpy3DParms p = {0};
  p.srcPtr = (struct cudaPitchedPtr){vol, 64 * 4, 64, 64};
  p.dstArray = volume;
  p.extent = (struct cudaExtent){64, 64, 16};
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&p));
  CHECK(cudaMemcpy2DToArray(level1, 0, 0, img, 128 * sizeof(float),
                            128 * sizeof(float), 128,
                            cudaMemcpyHostToDevice));
  CHECK(cudaStreamSynchronize(s));

  double sum = 0;
  for (int i = 0; i < W * H; i++)
    sum += img[i];
  unsigned vsum = 0;
  for (int i = 0; i < 64 * 64 * 16 * 4; i++)
    vsum += vol[i];
  printf("checksum=%.0f volume=%u\n", sum, vsum);

  CHECK(cudaFreeMipmappedArray(mip));
  CHECK(cudaFreeArray(volume));
  CHECK(cudaFreeArray(image));
  CHECK(cudaFreeHost(back));
  CHECK(cudaStreamDestroy(s));
  free(img);
  free(vol);

  /* a library's own array, made through the driver entry points */
  __typeof__(&cuArray3DCreate) create = NULL;
  __typeof__(&cuArrayDestroy) destroy = NULL;
  enum cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuArray3DCreate", (void **)&create,
                                         13000, cudaEnableDefault, &q));
  CHECK(cudaGetDriverEntryPointByVersion("cuArrayDestroy", (void **)&destroy,
                                         13000, cudaEnableDefault, &q));
  CUDA_ARRAY3D_DESCRIPTOR d = {256, 256, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  CUarray lib;
  if (!create || !destroy || create(&lib, &d) != CUDA_SUCCESS ||
      destroy(lib) != CUDA_SUCCESS)
    return 1;
  printf("arrays=4\n");
  return 0;
}
