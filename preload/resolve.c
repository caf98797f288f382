/* Finding real functions, and handing our wrappers to code that looks CUDA
 * functions up by itself: dlsym on a libcuda/libcudart handle (cuBLAS,
 * cuDNN, NCCL, Triton, ctypes), cuGetProcAddress and
 * cudaGetDriverEntryPoint. The rule everywhere: return our wrapper only for
 * exactly the function the real lookup returned; anything else unchanged. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

#include "gp_apitab.h"
#include "gp_shim.h"
#include "gpuphase/trace_records.h"

/* cuda.h maps the name to _v2; we define both exported symbols. */
#undef cuGetProcAddress
GP_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                    int cudaVersion, cuuint64_t flags);

typedef void *(*dlsym_fn)(void *, const char *);
__attribute__((visibility("hidden"))) dlsym_fn gp_real_dlsym_ptr;

/* dlsym is called by others before our constructor ran, e.g. by a
 * sanitizer runtime setting itself up: until then this path must run no
 * instrumented code and do nothing but forward. */
#define GP_RAW __attribute__((no_sanitize("address", "undefined")))
__attribute__((visibility("hidden"))) int gp_dlsym_ready;

__attribute__((visibility("hidden"), used)) GP_RAW dlsym_fn
gp_resolve_real_dlsym(void) {
  if (!gp_real_dlsym_ptr) {
    dlsym_fn f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f) f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    gp_real_dlsym_ptr = f;
  }
  return gp_real_dlsym_ptr;
}

static GP_RAW void *real_dlsym(void *h, const char *name) {
  dlsym_fn f = gp_resolve_real_dlsym();
  return f ? f(h, name) : NULL;
}

void *gp_real_runtime(const char *name) {
  void *f = real_dlsym(RTLD_NEXT, name);
  if (f) return f;
  /* A runtime opened with RTLD_LOCAL (e.g. by ctypes) is not in the global
   * scope: look it up by soname. */
  static const char *const sonames[] = {"libcudart.so.13", "libcudart.so.12",
                                        "libcudart.so"};
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0] && !f; i++) {
    void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    f = real_dlsym(h, name);
    dlclose(h);
  }
  return f;
}

static void *real_driver(const char *name) {
  void *f = real_dlsym(RTLD_NEXT, name);
  if (f) return f;
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return NULL;
  f = real_dlsym(h, name);
  dlclose(h);
  return f;
}

void *gp_real_layer(uint32_t layer, const char *name) {
  return layer == GPUPHASE_LAYER_DRIVER ? real_driver(name)
                                        : gp_real_runtime(name);
}

void gp_track_ctx_device(struct gp_tstate *ts) {
  static CUresult (*get_device)(CUdevice *);
  if (!get_device)
    get_device = (CUresult(*)(CUdevice *))real_driver("cuCtxGetDevice");
  CUdevice d;
  if (get_device && get_device(&d) == CUDA_SUCCESS)
    ts->device = (int32_t)d;
  else if (get_device) /* no context left current (popped, destroyed, set
                        * to NULL): the runtime's next call binds its own
                        * device's primary context */
    ts->device = ts->rt_device;
}

int gp_ctx_device_of(void *ctx) {
  static CUresult (*get)(CUdevice *, CUcontext);
  static int looked;
  if (!looked) {
    get = (CUresult(*)(CUdevice *, CUcontext))real_driver("cuCtxGetDevice_v2");
    looked = 1;
  }
  CUdevice d;
  return ctx && get && get(&d, (CUcontext)ctx) == CUDA_SUCCESS ? (int)d : -1;
}

int gp_runtime_abi12(void *fn) {
  Dl_info info;
  if (!dladdr(fn, &info) || !info.dli_fname) return 0;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return strncmp(base, "libcudart.so.12", 15) == 0;
}

static const void *our_base(void) {
  static const void *base;
  Dl_info me;
  if (!base && dladdr((void *)gp_real_layer, &me)) base = me.dli_fbase;
  return base;
}

/* Lookups by CUPTI and by gpuphase itself keep the real functions. */
static int excluded_caller(const void *ret) {
  Dl_info caller;
  if (!ret || !dladdr(ret, &caller)) return 0;
  if (caller.dli_fbase == our_base()) return 1;
  return caller.dli_fname && strstr(caller.dli_fname, "libcupti") != NULL;
}

/* Our wrapper for the real function at p, or p itself. */
static void *wrap_pointer(void *p) {
  Dl_info info;
  if (!p || !dladdr(p, &info) || !info.dli_sname || info.dli_saddr != p)
    return p;
  /* Already ours (a library whose own symbol references bind to the
   * preloaded definitions hands out our wrappers): never a real function. */
  if (info.dli_fbase == our_base()) return p;
  if (strcmp(info.dli_sname, "cuGetProcAddress_v2") == 0)
    return (void *)cuGetProcAddress_v2;
  if (strcmp(info.dli_sname, "cuGetProcAddress") == 0)
    return (void *)cuGetProcAddress;
  const struct gp_wrap_entry *e = gp_wrap_lookup(info.dli_sname);
  if (!e) return p;
  void *real = __atomic_load_n(e->real, __ATOMIC_ACQUIRE);
  if (real == e->unresolved) {
    /* first use: the function the lookup found is the real one (and, for
     * a variant A wrapper, says which parameters it takes: before real is
     * published, as first_NAME does) */
    if (e->abi12) __atomic_store_n(e->abi12, gp_runtime_abi12(p), __ATOMIC_RELAXED);
    __atomic_store_n(e->real, p, __ATOMIC_RELEASE);
    real = p;
  }
  return real == p ? e->wrapper : p;
}

/* ---- dlsym ---- */
void *gp_dlsym_wrap(const char *name, void *p, const void *caller);
/* Reached by a jump from the dlsym entry below, so the return address is the
 * original caller's. */
__attribute__((visibility("hidden"), used, noinline)) GP_RAW void *
gp_dlsym_other(void *handle, const char *name) {
  void *p = real_dlsym(handle, name);
  if (!__atomic_load_n(&gp_dlsym_ready, __ATOMIC_ACQUIRE)) return p;
  if (!p || !name || (name[0] != 'c' && name[0] != '_')) return p;
  return gp_dlsym_wrap(name, p, __builtin_return_address(0));
}

/* The instrumented part, reached once we are initialised. */
__attribute__((visibility("hidden"), noinline)) void *
gp_dlsym_wrap(const char *name, void *p, const void *caller) {
  if (strncmp(name, "cu", 2) != 0 && strncmp(name, "__cuda", 6) != 0) return p;
  if (excluded_caller(caller)) return p;
  return wrap_pointer(p);
}

#if defined(__x86_64__)
/* dlsym(RTLD_NEXT, ...) depends on who calls it: jump (not call) into the
 * real dlsym so that glibc sees the application's return address. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  endbr64\n"
        "  cmpq $-1, %rdi\n"
        "  jne gp_dlsym_other\n"
        "  movq gp_real_dlsym_ptr(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call gp_resolve_real_dlsym\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#endif

/* ---- entry-point resolvers ---- */
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

GP_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                       int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *st) {
  static gpa2_fn real;
  if (!real) real = (gpa2_fn)real_driver("cuGetProcAddress_v2");
  if (!real) return CUDA_ERROR_NOT_FOUND;
  CUresult r = real(symbol, pfn, cudaVersion, flags, st);
  if (r == CUDA_SUCCESS && pfn && *pfn &&
      !excluded_caller(__builtin_return_address(0)))
    *pfn = wrap_pointer(*pfn);
  return r;
}

/* The CUDA 11.3-12.x resolver, still exported by current drivers. */
GP_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                    int cudaVersion, cuuint64_t flags) {
  static gpa1_fn real;
  if (!real) real = (gpa1_fn)real_driver("cuGetProcAddress");
  if (!real) return CUDA_ERROR_NOT_FOUND;
  CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn && *pfn &&
      !excluded_caller(__builtin_return_address(0)))
    *pfn = wrap_pointer(*pfn);
  return r;
}

typedef cudaError_t (*gdep_fn)(const char *, void **, unsigned long long,
                               enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*gdepv_fn)(const char *, void **, unsigned int,
                                unsigned long long,
                                enum cudaDriverEntryPointQueryResult *);

#define ENTRY_POINT(NAME)                                                      \
  GP_EXPORT cudaError_t NAME(const char *symbol, void **funcPtr,               \
                             unsigned long long flags,                         \
                             enum cudaDriverEntryPointQueryResult *st) {       \
    static gdep_fn real;                                                       \
    if (!real) real = (gdep_fn)gp_real_runtime(#NAME);                         \
    if (!real) return cudaErrorSharedObjectSymbolNotFound;                     \
    cudaError_t r = real(symbol, funcPtr, flags, st);                          \
    if (r == cudaSuccess && funcPtr && *funcPtr)                               \
      *funcPtr = wrap_pointer(*funcPtr);                                       \
    return r;                                                                  \
  }
#define ENTRY_POINT_V(NAME)                                                    \
  GP_EXPORT cudaError_t NAME(const char *symbol, void **funcPtr,               \
                             unsigned int cudaVersion,                         \
                             unsigned long long flags,                         \
                             enum cudaDriverEntryPointQueryResult *st) {       \
    static gdepv_fn real;                                                      \
    if (!real) real = (gdepv_fn)gp_real_runtime(#NAME);                        \
    if (!real) return cudaErrorSharedObjectSymbolNotFound;                     \
    cudaError_t r = real(symbol, funcPtr, cudaVersion, flags, st);             \
    if (r == cudaSuccess && funcPtr && *funcPtr)                               \
      *funcPtr = wrap_pointer(*funcPtr);                                       \
    return r;                                                                  \
  }

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *, void **,
                                         unsigned long long,
                                         enum cudaDriverEntryPointQueryResult *);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *, void **, unsigned int, unsigned long long,
    enum cudaDriverEntryPointQueryResult *);

ENTRY_POINT(cudaGetDriverEntryPoint)
ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)
ENTRY_POINT_V(cudaGetDriverEntryPointByVersion)
ENTRY_POINT_V(cudaGetDriverEntryPointByVersion_ptsz)
