/* Self-test: modules and libraries of the simulated driver, with the
 * driver alone (this program links libcuda.so.1 and libcupti.so.13 only).
 *
 *   sim_test_module                 PTX text written here, bad images,
 *                                   missing files, handles, attributes
 *   sim_test_module DIR             also the images nvcc built from
 *                                   test_module.cu into DIR (meson)
 *   sim_test_module --no-nvcc       exits 77 (skipped): no nvcc to build them
 *                                   (or no libelf to read them)
 *
 * Expected kernel facts come from the sources (test_module.cu, the PTX
 * below); expected durations from the model (README.md): a kernel of B
 * blocks takes ceil(B / 132) waves of 10 us. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpusim.h"
#include "test_records.h"
#include "test_util.h"

static const char ptx_src[] = "// hand-written\n"
                              ".version 8.0\n"
                              ".target sm_90\n"
                              ".address_size 64\n"
                              ".global .align 8 .u64 ptx_counter[4];\n"
                              "/* .entry not_a_kernel( */\n"
                              ".visible .entry ptx_one(.param .u64 p)\n"
                              ".maxntid 128, 2, 1\n"
                              "{\n"
                              "  .shared .align 4 .b8 buf[512];\n"
                              "  .shared .align 4 .f32 more[2][4];\n"
                              "  ret;\n"
                              "}\n"
                              ".visible .entry ptx_two()\n"
                              "{\n"
                              "  ret;\n"
                              "}\n";

static int attr(CUfunction f, CUfunction_attribute a) {
  int v = -12345;
  CHECK_EQ(cuFuncGetAttribute(&v, a, f), CUDA_SUCCESS);
  return v;
}

static const char *fname(CUfunction f) {
  const char *n = NULL;
  CHECK_EQ(cuFuncGetName(&n, f), CUDA_SUCCESS);
  return n ? n : "";
}

/* One launch of `f` with B blocks: its record has the module's name, the
 * launch's dims and dynamic shared memory, the image's registers and
 * static shared memory, and lasts ceil(B / 132) waves. */
static void check_launch(CUfunction f, const char *name, unsigned blocks,
                         unsigned shmem, bool ex) {
  rec_clear();
  if (ex) {
    CUlaunchConfig c = {.gridDimX = blocks,
                        .gridDimY = 1,
                        .gridDimZ = 1,
                        .blockDimX = 128,
                        .blockDimY = 1,
                        .blockDimZ = 1,
                        .sharedMemBytes = shmem};
    CHECK_EQ(cuLaunchKernelEx(&c, f, NULL, NULL), CUDA_SUCCESS);
  } else {
    CHECK_EQ(
        cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, shmem, NULL, NULL, NULL),
        CUDA_SUCCESS);
  }
  CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1);
  const CUpti_ActivityKernel10 *k = KERNEL(0);
  if (strcmp(k->name, name) != 0) {
    fprintf(stderr, "kernel record named %s, expected %s\n", k->name, name);
    test_failures++;
  }
  CHECK_EQ(k->gridX, blocks);
  CHECK_EQ(k->blockX, 128);
  CHECK_EQ(k->dynamicSharedMemory, shmem);
  CHECK_EQ(k->registersPerThread, attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS));
  CHECK_EQ(k->staticSharedMemory, attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  CHECK_EQ(k->end - k->start, (blocks + 131) / 132 * 10000ull);
}

static void test_ptx(void) {
  CUmodule m = NULL;
  CHECK_EQ(cuModuleLoadData(&m, ptx_src), CUDA_SUCCESS);
  REQUIRE(m);
  unsigned n = 0;
  CHECK_EQ(cuModuleGetFunctionCount(&n, m), CUDA_SUCCESS);
  CHECK_EQ(n, 2); /* the commented-out .entry is none */
  CUfunction fs[2] = {NULL, NULL}, one = NULL, two = NULL;
  CHECK_EQ(cuModuleEnumerateFunctions(fs, 2, m), CUDA_SUCCESS);
  CHECK_EQ(cuModuleEnumerateFunctions(fs, 3, m), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuModuleGetFunction(&one, m, "ptx_one"), CUDA_SUCCESS);
  CHECK_EQ(cuModuleGetFunction(&two, m, "ptx_two"), CUDA_SUCCESS);
  CHECK(fs[0] == one && fs[1] == two);
  CHECK(strcmp(fname(one), "ptx_one") == 0);
  CUfunction f = one;
  CHECK_EQ(cuModuleGetFunction(&f, m, "ptx_three"), CUDA_ERROR_NOT_FOUND);
  CHECK(f == NULL);
  CHECK_EQ(cuModuleGetFunction(&f, m, "not_a_kernel"), CUDA_ERROR_NOT_FOUND);
  /* 512 B + 2 x 4 x 4 B of shared memory; 128 x 2 x 1 threads at most;
   * registers: PTX is not compiled, the documented default */
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 544);
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 256);
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
           49152 - 544);
  CHECK_EQ(attr(two, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
  CHECK_EQ(attr(two, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
  CHECK_EQ(attr(two, CU_FUNC_ATTRIBUTE_PTX_VERSION), 90);
  int v;
  CHECK_EQ(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, one),
           CUDA_ERROR_INVALID_VALUE);
  /* settable attributes, within the device's limits */
  CHECK_EQ(cuFuncSetAttribute(
               one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000),
           CUDA_SUCCESS);
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 100000);
  CHECK_EQ(cuFuncSetAttribute(one,
                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              232448 - 544 + 1),
           CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuFuncSetAttribute(
               one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50),
           CUDA_SUCCESS);
  CHECK_EQ(attr(one, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), 50);
  CHECK_EQ(cuFuncSetAttribute(one, CU_FUNC_ATTRIBUTE_NUM_REGS, 16),
           CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuFuncSetCacheConfig(one, CU_FUNC_CACHE_PREFER_SHARED),
           CUDA_SUCCESS);
  CHECK_EQ(cuFuncSetCacheConfig(one, (CUfunc_cache)7),
           CUDA_ERROR_INVALID_VALUE);
  CUmodule back = NULL;
  CHECK_EQ(cuFuncGetModule(&back, one), CUDA_SUCCESS);
  CHECK(back == m);
  /* a __device__ variable: device memory of its size */
  CUdeviceptr p = 0, p2 = 0;
  size_t bytes = 0, free0, free1, free2, total;
  CHECK_EQ(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  CHECK_EQ(cuModuleGetGlobal(&p, &bytes, m, "ptx_counter"), CUDA_SUCCESS);
  CHECK_EQ(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  CHECK_EQ(free0 - free1, 512); /* 32 B, rounded to 512 */
  CHECK_EQ(bytes, 32);
  CHECK_EQ(cuModuleGetGlobal(&p2, NULL, m, "ptx_counter"), CUDA_SUCCESS);
  CHECK(p != 0 && p == p2);
  CUpointer_attribute pa = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  unsigned type = 0;
  CHECK_EQ(cuPointerGetAttribute(&type, pa, p), CUDA_SUCCESS);
  CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
  CHECK_EQ(cuModuleGetGlobal(&p, &bytes, m, "nothing"), CUDA_ERROR_NOT_FOUND);
  check_launch(one, "ptx_one", 264, 0, false);
  check_launch(two, "ptx_two", 133, 64, true);
  CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  /* after unload: the handles are gone, the variable's memory freed */
  CHECK_EQ(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuModuleGetFunction(&f, m, "ptx_one"), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuLaunchKernel(one, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
           CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, one),
           CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuMemGetInfo(&free2, &total), CUDA_SUCCESS);
  CHECK_EQ(free2, free0);
  /* the private hook's kernels are not a module's */
  CUfunction g = gpusim_function("ptx_one");
  CHECK(g != NULL && g != one);
  CHECK_EQ(cuFuncGetModule(&back, g), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(attr(g, CU_FUNC_ATTRIBUTE_NUM_REGS), 32);
}

static void test_bad(void) {
  CUmodule m = (CUmodule)&m;
  CHECK_EQ(cuModuleLoad(&m, "/nonexistent/mod.cubin"),
           CUDA_ERROR_FILE_NOT_FOUND);
  CHECK(m == NULL);
  CHECK_EQ(cuModuleLoad(&m, "/"), CUDA_ERROR_FILE_NOT_FOUND);
  CHECK_EQ(cuModuleLoadData(&m, "hello, world"), CUDA_ERROR_INVALID_IMAGE);
  CHECK_EQ(cuModuleLoadData(&m, ""), CUDA_ERROR_INVALID_IMAGE);
  CHECK_EQ(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
  /* PTX for a newer device, PTX without .version/.target */
  static const char newer[] = ".version 8.8\n.target sm_100\n"
                              ".address_size 64\n.entry k() { ret; }\n";
  CHECK_EQ(cuModuleLoadData(&m, newer), CUDA_ERROR_INVALID_PTX);
  CHECK_EQ(cuModuleLoadData(&m, ".entry k() { ret; }"), CUDA_ERROR_INVALID_PTX);
  /* an ELF header for x86-64, not a cubin; an ELF header with nothing
   * after it */
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  elf[18] = 62; /* EM_X86_64 */
  elf[52] = 64; /* e_ehsize */
  CHECK_EQ(cuModuleLoadData(&m, elf), CUDA_ERROR_INVALID_IMAGE);
  /* (from a file: in memory, the driver would read as far as the header
   * says) */
  elf[18] = 190;    /* EM_CUDA */
  elf[0x28] = 0xff; /* section headers past the end */
  elf[0x3a] = 64;
  elf[0x3c] = 3;
  char tmp[] = "/tmp/sim_test_module_XXXXXX";
  int fd = mkstemp(tmp);
  REQUIRE(fd >= 0 && write(fd, elf, sizeof elf) == (ssize_t)sizeof elf);
  close(fd);
  CHECK_EQ(cuModuleLoad(&m, tmp), CUDA_ERROR_INVALID_IMAGE);
  unlink(tmp);
  /* fatbin headers: an entry that runs past the container; an empty
   * container has nothing for the device */
  unsigned char fat[16 + 64] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 64};
  fat[16] = 2;  /* ELF */
  fat[20] = 64; /* header size */
  fat[24] = 1;  /* payload size: 1 byte too many */
  CHECK_EQ(cuModuleLoadData(&m, fat), CUDA_ERROR_INVALID_IMAGE);
  CHECK_EQ(cuModuleLoadFatBinary(&m, fat), CUDA_ERROR_INVALID_IMAGE);
  fat[8] = 0;
  CHECK_EQ(cuModuleLoadFatBinary(&m, fat), CUDA_ERROR_NO_BINARY_FOR_GPU);
  CHECK(m == NULL);
  CHECK_EQ(cuModuleUnload((CUmodule)&m), CUDA_ERROR_INVALID_HANDLE);
  /* the errors a load gives have names */
  static const CUresult errs[] = {
      CUDA_ERROR_FILE_NOT_FOUND, CUDA_ERROR_INVALID_IMAGE,
      CUDA_ERROR_INVALID_PTX, CUDA_ERROR_NO_BINARY_FOR_GPU,
      CUDA_ERROR_NOT_PERMITTED};
  static const char *const err_names[] = {
      "CUDA_ERROR_FILE_NOT_FOUND", "CUDA_ERROR_INVALID_IMAGE",
      "CUDA_ERROR_INVALID_PTX", "CUDA_ERROR_NO_BINARY_FOR_GPU",
      "CUDA_ERROR_NOT_PERMITTED"};
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    const char *s = NULL;
    CHECK_EQ(cuGetErrorName(errs[i], &s), CUDA_SUCCESS);
    CHECK(s && strcmp(s, err_names[i]) == 0);
    CHECK_EQ(cuGetErrorString(errs[i], &s), CUDA_SUCCESS);
  }
  CUmoduleLoadingMode mode = 0;
  CHECK_EQ(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
  CHECK_EQ(mode, CU_MODULE_LAZY_LOADING);
}

static void test_library_ptx(void) {
  CUlibrary lib = NULL;
  CHECK_EQ(cuLibraryLoadData(&lib, ptx_src, NULL, NULL, 0, NULL, NULL, 0),
           CUDA_SUCCESS);
  REQUIRE(lib);
  unsigned n = 0;
  CHECK_EQ(cuLibraryGetKernelCount(&n, lib), CUDA_SUCCESS);
  CHECK_EQ(n, 2);
  CUkernel k = NULL, ks[2];
  CHECK_EQ(cuLibraryGetKernel(&k, lib, "ptx_two"), CUDA_SUCCESS);
  CHECK_EQ(cuLibraryEnumerateKernels(ks, 2, lib), CUDA_SUCCESS);
  CHECK(ks[1] == k);
  CHECK_EQ(cuLibraryGetKernel(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(cuLibraryGetKernel(&k, lib, "ptx_two"), CUDA_SUCCESS);
  const char *name = NULL;
  CHECK_EQ(cuKernelGetName(&name, k), CUDA_SUCCESS);
  CHECK(name && strcmp(name, "ptx_two") == 0);
  CUfunction f = NULL;
  CHECK_EQ(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
  REQUIRE(f);
  check_launch(f, "ptx_two", 1, 0, false);
  check_launch((CUfunction)k, "ptx_two", 265, 0, false); /* 3 waves */
  CUmodule m = NULL;
  CHECK_EQ(cuLibraryGetModule(&m, lib), CUDA_SUCCESS);
  CHECK_EQ(cuModuleUnload(m), CUDA_ERROR_NOT_PERMITTED);
  CUfunction g = NULL;
  CHECK_EQ(cuModuleGetFunction(&g, m, "ptx_two"), CUDA_SUCCESS);
  CHECK(g == f);
  CHECK_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  CHECK_EQ(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuLibraryLoadFromFile(&lib, "/nonexistent.fatbin", NULL, NULL, 0,
                                 NULL, NULL, 0),
           CUDA_ERROR_FILE_NOT_FOUND);
}

/* ---- the images nvcc built from test_module.cu ---- */

static char dir[4096];

static const char *path(const char *file) {
  static char buf[8192];
  snprintf(buf, sizeof buf, "%s/%s", dir, file);
  return buf;
}

static char *slurp(const char *file) {
  FILE *fp = fopen(path(file), "rb");
  REQUIRE(fp);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  REQUIRE(n > 0 && n < sizeof buf - 1);
  buf[n] = '\0';
  return buf;
}

/* Kernels and variables as test_module.cu declares them. */
static void check_module(CUmodule m, const char *what, bool cubin) {
  fprintf(stderr, "module: %s\n", what);
  unsigned n = 0;
  CHECK_EQ(cuModuleGetFunctionCount(&n, m), CUDA_SUCCESS);
  CHECK_EQ(n, 2);
  CUfunction scale = NULL, add = NULL;
  CHECK_EQ(cuModuleGetFunction(&scale, m, "mod_scale"), CUDA_SUCCESS);
  CHECK_EQ(cuModuleGetFunction(&add, m, "_Z7mod_addPKfPfi"), CUDA_SUCCESS);
  CHECK_EQ(cuModuleGetFunction(&add, m, "mod_add"), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(cuModuleGetFunction(&add, m, "_Z9mod_twicef"), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(cuModuleGetFunction(&add, m, "_Z7mod_addPKfPfi"), CUDA_SUCCESS);
  REQUIRE(scale && add);
  CHECK_EQ(attr(scale, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 256);
  CHECK_EQ(attr(add, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
  CHECK_EQ(attr(scale, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 1024);
  CHECK_EQ(attr(add, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
  CHECK_EQ(attr(scale, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
  int regs = attr(add, CU_FUNC_ATTRIBUTE_NUM_REGS);
  /* ptxas's count (.nv.info) is some small number; PTX's the default */
  if (cubin)
    CHECK(regs > 0 && regs <= 255);
  else
    CHECK_EQ(regs, 32);
  size_t bytes = 0;
  CUdeviceptr p = 0;
  CHECK_EQ(cuModuleGetGlobal(&p, &bytes, m, "mod_table"), CUDA_SUCCESS);
  CHECK_EQ(bytes, 256);
  CHECK_EQ(cuModuleGetGlobal(&p, &bytes, m, "mod_coef"), CUDA_SUCCESS);
  CHECK_EQ(bytes, 16);
  check_launch(scale, "mod_scale", 300, 256, false);
  check_launch(add, "_Z7mod_addPKfPfi", 132, 0, true);
}

static void test_nvcc(void) {
  static const struct {
    const char *file;
    bool cubin; /* the module comes from an ELF image */
  } images[] = {
      {"test_module.cubin", true},        /* nvcc -cubin -arch=sm_90 */
      {"test_module.fatbin", true},       /* -fatbin: sm_90 ELF + zstd PTX */
      {"test_module_zstd.fatbin", true},  /* ELF compressed too */
      {"test_module_multi.fatbin", true}, /* sm_80, sm_90 ELF; PTX */
      {"test_module_ptx.fatbin", false},  /* PTX only (compressed) */
      {"test_module.ptx", false},
  };
  for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
    CUmodule m = NULL, d = NULL;
    CHECK_EQ(cuModuleLoad(&m, path(images[i].file)), CUDA_SUCCESS);
    REQUIRE(m);
    check_module(m, images[i].file, images[i].cubin);
    CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
    /* the same image from memory, whose length the driver is not told */
    CHECK_EQ(cuModuleLoadData(&d, slurp(images[i].file)), CUDA_SUCCESS);
    REQUIRE(d);
    check_module(d, images[i].file, images[i].cubin);
    CHECK_EQ(cuModuleUnload(d), CUDA_SUCCESS);
  }
  CUmodule m = NULL;
  CHECK_EQ(cuModuleLoadFatBinary(&m, slurp("test_module.fatbin")),
           CUDA_SUCCESS);
  CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  CUjit_option opt = CU_JIT_MAX_REGISTERS;
  void *val = (void *)(uintptr_t)32;
  CHECK_EQ(cuModuleLoadDataEx(&m, slurp("test_module.cubin"), 1, &opt, &val),
           CUDA_SUCCESS);
  CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  /* a cubin for sm_80 does not run on a 9.0 device */
  CHECK_EQ(cuModuleLoad(&m, path("test_module_sm80.cubin")),
           CUDA_ERROR_NO_BINARY_FOR_GPU);
  /* a cubin cut short */
  char *img = slurp("test_module.cubin");
  char cut[] = "/tmp/sim_test_module_XXXXXX";
  int fd = mkstemp(cut);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, img, 1000) == 1000);
  close(fd);
  CHECK_EQ(cuModuleLoad(&m, cut), CUDA_ERROR_INVALID_IMAGE);
  unlink(cut);
  /* the library API from a file */
  CUlibrary lib = NULL;
  CHECK_EQ(cuLibraryLoadFromFile(&lib, path("test_module.fatbin"), NULL, NULL,
                                 0, NULL, NULL, 0),
           CUDA_SUCCESS);
  CUkernel k = NULL;
  CUfunction f = NULL;
  CHECK_EQ(cuLibraryGetKernel(&k, lib, "mod_scale"), CUDA_SUCCESS);
  CHECK_EQ(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
  check_launch(f, "mod_scale", 1000, 0, false); /* 8 waves */
  CHECK_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

/* Threads loading, launching from and unloading modules at once (under
 * TSan: races; ASan: a record naming a freed function). */
enum { LOAD_THREADS = 4, LOADS = 50 };
static CUcontext main_ctx;

static void *load_loop(void *arg) {
  (void)arg;
  static int fail = 1;
  if (cuCtxSetCurrent(main_ctx) != CUDA_SUCCESS) return &fail;
  for (int i = 0; i < LOADS; i++) {
    CUmodule m;
    CUfunction f;
    if (cuModuleLoadData(&m, ptx_src) != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, m, "ptx_one") != CUDA_SUCCESS ||
        cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) !=
            CUDA_SUCCESS ||
        cuModuleUnload(m) != CUDA_SUCCESS)
      return &fail;
  }
  return NULL;
}

static void test_threads(void) {
  rec_clear();
  pthread_t t[LOAD_THREADS];
  for (int i = 0; i < LOAD_THREADS; i++)
    REQUIRE(pthread_create(&t[i], NULL, load_loop, NULL) == 0);
  for (int i = 0; i < LOAD_THREADS; i++) {
    void *res = &res;
    REQUIRE(pthread_join(t[i], &res) == 0);
    CHECK(res == NULL);
  }
  CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  rec_flush();
  int n = rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  CHECK_EQ(n, LOAD_THREADS * LOADS);
  for (int i = 0; i < n; i++)
    CHECK(strcmp(KERNEL(i)->name, "ptx_one") == 0);
}

/* The module entry points are also reachable by cuGetProcAddress. */
static void test_proc_address(void) {
  static const char *const names[][2] = {
      {"cuModuleLoad", "cuModuleLoad"},
      {"cuModuleGetGlobal", "cuModuleGetGlobal_v2"},
      {"cuModuleGetFunction", "cuModuleGetFunction"},
      {"cuLibraryLoadData", "cuLibraryLoadData"},
      {"cuKernelGetFunction", "cuKernelGetFunction"},
      {"cuFuncGetAttribute", "cuFuncGetAttribute"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *fn = NULL;
    CHECK_EQ(cuGetProcAddress(names[i][0], &fn, 13000,
                              CU_GET_PROC_ADDRESS_DEFAULT, NULL),
             CUDA_SUCCESS);
    if (!fn || fn != dlsym(RTLD_DEFAULT, names[i][1])) {
      fprintf(stderr, "cuGetProcAddress(%s): not %s\n", names[i][0],
              names[i][1]);
      test_failures++;
    }
  }
}

/* Damaged images, by path (so of known length): each loads or fails with
 * one of the load errors, never crashes (run it under ASan). */
static void test_mutations(void) {
  static const char *const files[] = {
      "test_module.cubin", "test_module.fatbin", "test_module_multi.fatbin",
      "test_module_ptx.fatbin", "test_module_zstd.fatbin"};
  static char img[1 << 20];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  char tmp[] = "/tmp/sim_test_module_XXXXXX";
  int fd = mkstemp(tmp);
  REQUIRE(fd >= 0);
  int loaded = 0, failed = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    FILE *fp = fopen(path(files[f]), "rb");
    REQUIRE(fp);
    size_t n = fread(img, 1, sizeof img, fp);
    fclose(fp);
    for (int i = 0; i < 300; i++) {
      static char m[1 << 20];
      memcpy(m, img, n);
      size_t len = n;
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      int flips = 1 + (int)(seed >> 60) % 4;
      for (int j = 0; j < flips; j++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* mostly in the headers, where lengths and offsets are */
        size_t at = (seed >> 33) % (j == 0 && n > 256 ? 256 : n);
        m[at] = (char)(seed >> 8);
      }
      if (i % 10 == 9) len = (seed >> 20) % n;
      REQUIRE(ftruncate(fd, 0) == 0 && pwrite(fd, m, len, 0) == (ssize_t)len);
      CUmodule mod = NULL;
      CUresult r = cuModuleLoad(&mod, tmp);
      if (r == CUDA_SUCCESS) {
        loaded++;
        CHECK_EQ(cuModuleUnload(mod), CUDA_SUCCESS);
      } else {
        failed++;
        CHECK(r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_INVALID_PTX ||
              r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
              r == CUDA_ERROR_NOT_SUPPORTED);
      }
    }
  }
  close(fd);
  unlink(tmp);
  CHECK(loaded > 0 && failed > 0);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--no-nvcc") == 0) {
    printf("module images: skipped (no nvcc to build test_module.cu, or no "
           "libelf to read them)\n");
    return 77;
  }
  CUmodule m;
  CHECK_EQ(cuModuleLoadData(&m, ptx_src), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuModuleLoadData(&m, ptx_src), CUDA_ERROR_INVALID_CONTEXT);
  rec_start();
  CUdevice dev;
  CUcontext ctx;
  CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CHECK_EQ(cuCtxCreate(&ctx, NULL, 0, dev), CUDA_SUCCESS);
  test_ptx();
  test_bad();
  test_library_ptx();
  test_proc_address();
  main_ctx = ctx;
  test_threads();
  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
    test_nvcc();
    test_mutations();
  }
  CHECK_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
  return test_result(argc > 1 ? "module (with nvcc images)" : "module");
}
