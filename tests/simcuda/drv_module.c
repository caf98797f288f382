/* Simulated driver: modules (cuModuleLoad*, cuModuleGetFunction,
 * cuModuleGetGlobal), the library API of CUDA 12 (cuLibrary*, cuKernel*)
 * and function attributes. A module's kernels are CUfunctions like
 * gpusim_function's, named and described by the image (drv_image.c), and
 * launch with every launch entry point. See README.md ("Modules"). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drv.h"
#include "drv_image.h"

typedef struct sim_global {
  const char *name;
  size_t size;
  uintptr_t addr; /* device memory, taken at the first cuModuleGetGlobal */
} sim_global;

typedef struct sim_module {
  struct sim_module *next;
  int dev;
  bool lib; /* a library's: not unloaded by cuModuleUnload or a reset */
  sim_function *fn;
  size_t nfn;
  sim_global *glob;
  size_t nglob;
} sim_module;

typedef struct sim_library {
  struct sim_library *next;
  sim_module *mod;
} sim_library;

static sim_module *modules;
static sim_library *libraries;

/* Kernel names are interned for the process lifetime: the activity
 * records of a module's kernels outlive the module. */
typedef struct name_node {
  struct name_node *next;
  char name[];
} name_node;
static name_node *names;

static const char *intern(const char *s) {
  for (name_node *n = names; n; n = n->next)
    if (strcmp(n->name, s) == 0) return n->name;
  size_t len = strlen(s);
  name_node *n = malloc(sizeof *n + len + 1);
  if (!n) return NULL;
  memcpy(n->name, s, len + 1);
  n->next = names;
  names = n;
  return n->name;
}

/* ---- modules (under gp_lock) ---- */

static void module_free(sim_module *m) {
  for (size_t i = 0; i < m->nfn; i++)
    gp_function_unlink(&m->fn[i]);
  for (size_t i = 0; i < m->nglob; i++)
    if (m->glob[i].addr) gp_dev_free(m->glob[i].addr);
  free(m->fn);
  free(m->glob);
  free(m);
}

static CUresult module_make(const gp_image *im, int dev, bool lib,
                            sim_module **out) {
  sim_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->dev = dev;
  m->lib = lib;
  m->fn = calloc(im->nk ? im->nk : 1, sizeof *m->fn);
  m->glob = calloc(im->ng ? im->ng : 1, sizeof *m->glob);
  if (!m->fn || !m->glob) {
    module_free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < im->nk; i++) {
    const gp_kdesc *k = &im->k[i];
    sim_function *f = &m->fn[i];
    if (!(f->name = (char *)intern(k->name))) {
      module_free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    gp_function_init(f);
    f->mod = m;
    f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = k->max_threads;
    f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] = k->static_shmem;
    f->attr[CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES] = k->local;
    f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] = k->regs;
    f->attr[CU_FUNC_ATTRIBUTE_PTX_VERSION] = k->ptx_version;
    f->attr[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = k->binary_version;
    int dyn = 49152 - k->static_shmem;
    f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] =
        dyn > 0 ? dyn : 0;
    m->nfn++;
    gp_function_link(f);
  }
  for (size_t i = 0; i < im->ng; i++) {
    if (!(m->glob[i].name = intern(im->g[i].name))) {
      module_free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->glob[i].size = im->g[i].size;
    m->nglob++;
  }
  m->next = modules;
  modules = m;
  *out = m;
  return CUDA_SUCCESS;
}

static sim_module *module_check(CUmodule h) {
  for (sim_module *m = modules; m; m = m->next)
    if ((CUmodule)m == h) return m;
  return NULL;
}

static void module_drop(sim_module *m) {
  for (sim_module **pp = &modules; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  module_free(m);
}

/* A reset destroys the device's modules; libraries keep theirs, whose
 * variables get new memory at their next lookup. */
void gp_device_reset_modules(int dev) {
  for (sim_module **pp = &modules; *pp;) {
    sim_module *m = *pp;
    if (m->dev != dev) {
      pp = &m->next;
    } else if (m->lib) {
      for (size_t i = 0; i < m->nglob; i++)
        m->glob[i].addr = 0; /* freed with the device's memory */
      pp = &m->next;
    } else {
      *pp = m->next;
      module_free(m);
    }
  }
}

/* ---- loading ---- */

/* The whole file, NUL-terminated (PTX is text). */
static CUresult read_file(const char *path, char **out, size_t *len) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_FILE_NOT_FOUND;
  struct stat st;
  CUresult r = CUDA_SUCCESS;
  char *buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    r = CUDA_ERROR_FILE_NOT_FOUND;
  else if (st.st_size > (1 << 30))
    r = CUDA_ERROR_INVALID_IMAGE;
  else if (!(buf = malloc((size_t)st.st_size + 1)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  size_t got = 0;
  while (r == CUDA_SUCCESS && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      r = CUDA_ERROR_FILE_NOT_FOUND;
    else
      got += (size_t)n;
  }
  close(fd);
  if (r != CUDA_SUCCESS) {
    free(buf);
    return r;
  }
  buf[got] = '\0';
  *out = buf;
  *len = got;
  return CUDA_SUCCESS;
}

/* Reads the image, then makes the module on `dev` (the current
 * context's, or for a library the current one if any, else device 0). */
static CUresult load(const void *image, size_t n, bool lib, sim_module **out) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  sim_ctx *c = gp_current_ctx();
  if (!c && !lib) return CUDA_ERROR_INVALID_CONTEXT;
  gp_image im;
  CUresult r = gp_image_read(image, n, &im);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&gp_lock);
  r = module_make(&im, c ? c->dev : 0, lib, out);
  pthread_mutex_unlock(&gp_lock);
  gp_image_free(&im);
  return r;
}

static CUresult load_path(const char *path, bool lib, sim_module **out) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!lib && !gp_current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
  char *buf;
  size_t len;
  CUresult r = read_file(path, &buf, &len);
  if (r != CUDA_SUCCESS) return r;
  r = load(buf, len, lib, out);
  free(buf);
  return r;
}

static CUresult module_out(CUmodule *out, CUresult r, sim_module *m) {
  if (out) *out = r == CUDA_SUCCESS ? (CUmodule)m : NULL;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module,
                                            const char *fname) {
  DRV_ENTER(cuModuleLoad, module, fname);
  sim_module *m = NULL;
  CUresult r = load_path(fname, false, &m);
  DRV_RETURN(module_out(module, r, m));
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module,
                                                const void *image) {
  DRV_ENTER(cuModuleLoadData, module, image);
  sim_module *m = NULL;
  CUresult r = load(image, GP_IMAGE_UNSIZED, false, &m);
  DRV_RETURN(module_out(module, r, m));
}

/* JIT options only steer a compiler, which the simulation does not have;
 * their values are not read. */
GPUSIM_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module,
                                                  const void *image,
                                                  unsigned int numOptions,
                                                  CUjit_option *options,
                                                  void **optionValues) {
  DRV_ENTER(cuModuleLoadDataEx, module, image, numOptions, options,
            optionValues);
  sim_module *m = NULL;
  CUresult r = numOptions && (!options || !optionValues)
                   ? CUDA_ERROR_INVALID_VALUE
                   : load(image, GP_IMAGE_UNSIZED, false, &m);
  DRV_RETURN(module_out(module, r, m));
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module,
                                                     const void *fatCubin) {
  DRV_ENTER(cuModuleLoadFatBinary, module, fatCubin);
  sim_module *m = NULL;
  CUresult r = load(fatCubin, GP_IMAGE_UNSIZED, false, &m);
  DRV_RETURN(module_out(module, r, m));
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  DRV_ENTER(cuModuleUnload, hmod);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_module *m = module_check(hmod);
  CUresult r = !m       ? CUDA_ERROR_INVALID_HANDLE
               : m->lib ? CUDA_ERROR_NOT_PERMITTED
                        : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) module_drop(m);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

static CUresult get_function(CUfunction *out, CUmodule h, const char *name) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  *out = NULL;
  pthread_mutex_lock(&gp_lock);
  sim_module *m = module_check(h);
  CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
  for (size_t i = 0; m && i < m->nfn; i++)
    if (strcmp(m->fn[i].name, name) == 0) {
      *out = (CUfunction)&m->fn[i];
      r = CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc,
                                                   CUmodule hmod,
                                                   const char *name) {
  DRV_ENTER(cuModuleGetFunction, hfunc, hmod, name);
  DRV_RETURN(get_function(hfunc, hmod, name));
}

static CUresult get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule h,
                           const char *name) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&gp_lock);
  sim_module *m = module_check(h);
  CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
  for (size_t i = 0; m && i < m->nglob; i++) {
    sim_global *g = &m->glob[i];
    if (strcmp(g->name, name) != 0) continue;
    r = g->addr ? CUDA_SUCCESS
                : gp_dev_alloc(m->dev, g->size ? g->size : 1, false, &g->addr);
    if (r == CUDA_SUCCESS && dptr) *dptr = (CUdeviceptr)g->addr;
    if (r == CUDA_SUCCESS && bytes) *bytes = g->size;
    break;
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr,
                                                    size_t *bytes,
                                                    CUmodule hmod,
                                                    const char *name) {
  DRV_ENTER(cuModuleGetGlobal_v2, dptr, bytes, hmod, name);
  DRV_RETURN(get_global(dptr, bytes, hmod, name));
}

/* Lazy unless CUDA_MODULE_LOADING=EAGER, as in CUDA 12.2 and later; the
 * simulation loads everything at once either way. */
GPUSIM_EXPORT CUresult CUDAAPI
cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  DRV_ENTER(cuModuleGetLoadingMode, mode);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!mode) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  const char *e = getenv("CUDA_MODULE_LOADING");
  *mode = e && strcmp(e, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING
                                       : CU_MODULE_LAZY_LOADING;
  DRV_RETURN(CUDA_SUCCESS);
}

/* count: the number of kernels; list: up to `n` of them, in image order.
 * A library's kernels are its module's. */
static CUresult enumerate(sim_module *m, unsigned *count, CUfunction *list,
                          unsigned n) {
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (count) *count = (unsigned)m->nfn;
  if (list) {
    if (n > m->nfn) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++)
      list[i] = (CUfunction)&m->fn[i];
  }
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count,
                                                        CUmodule mod) {
  DRV_ENTER(cuModuleGetFunctionCount, count, mod);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!count) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  CUresult r = enumerate(module_check(mod), count, NULL, 0);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuModuleEnumerateFunctions(
    CUfunction *functions, unsigned int numFunctions, CUmodule mod) {
  DRV_ENTER(cuModuleEnumerateFunctions, functions, numFunctions, mod);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!functions) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  CUresult r = enumerate(module_check(mod), NULL, functions, numFunctions);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* ---- libraries ---- */

static sim_library *library_check(CUlibrary h) {
  for (sim_library *l = libraries; l; l = l->next)
    if ((CUlibrary)l == h) return l;
  return NULL;
}

static CUresult library_add(CUlibrary *out, CUresult r, sim_module *m) {
  sim_library *l = NULL;
  if (r == CUDA_SUCCESS && !(l = calloc(1, sizeof *l))) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&gp_lock);
    module_drop(m);
    pthread_mutex_unlock(&gp_lock);
  } else if (r == CUDA_SUCCESS) {
    l->mod = m;
    pthread_mutex_lock(&gp_lock);
    l->next = libraries;
    libraries = l;
    pthread_mutex_unlock(&gp_lock);
  }
  if (out) *out = (CUlibrary)l;
  return r;
}

static bool options_ok(unsigned nj, CUjit_option *jo, void **jv, unsigned nl,
                       CUlibraryOption *lo, void **lv) {
  return (!nj || (jo && jv)) && (!nl || (lo && lv));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuLibraryLoadData(CUlibrary *library, const void *code,
                  CUjit_option *jitOptions, void **jitOptionsValues,
                  unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                  void **libraryOptionValues, unsigned int numLibraryOptions) {
  DRV_ENTER(cuLibraryLoadData, library, code, jitOptions, jitOptionsValues,
            numJitOptions, libraryOptions, libraryOptionValues,
            numLibraryOptions);
  sim_module *m = NULL;
  CUresult r = !library || !options_ok(numJitOptions, jitOptions,
                                       jitOptionsValues, numLibraryOptions,
                                       libraryOptions, libraryOptionValues)
                   ? CUDA_ERROR_INVALID_VALUE
                   : load(code, GP_IMAGE_UNSIZED, true, &m);
  DRV_RETURN(library_add(library, r, m));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLibraryLoadFromFile(
    CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
    void **jitOptionsValues, unsigned int numJitOptions,
    CUlibraryOption *libraryOptions, void **libraryOptionValues,
    unsigned int numLibraryOptions) {
  DRV_ENTER(cuLibraryLoadFromFile, library, fileName, jitOptions,
            jitOptionsValues, numJitOptions, libraryOptions,
            libraryOptionValues, numLibraryOptions);
  sim_module *m = NULL;
  CUresult r = !library || !options_ok(numJitOptions, jitOptions,
                                       jitOptionsValues, numLibraryOptions,
                                       libraryOptions, libraryOptionValues)
                   ? CUDA_ERROR_INVALID_VALUE
                   : load_path(fileName, true, &m);
  DRV_RETURN(library_add(library, r, m));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
  DRV_ENTER(cuLibraryUnload, library);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_library *l = library_check(library);
  if (l) {
    for (sim_library **pp = &libraries; *pp; pp = &(*pp)->next)
      if (*pp == l) {
        *pp = l->next;
        break;
      }
    module_drop(l->mod);
    free(l);
  }
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(l ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* A CUkernel is the library's function itself: cuKernelGetFunction hands
 * back the same handle in every context, and a CUkernel cast to
 * CUfunction launches, as in the real driver. */
GPUSIM_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel,
                                                  CUlibrary library,
                                                  const char *name) {
  DRV_ENTER(cuLibraryGetKernel, pKernel, library, name);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pKernel) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_library *l = library_check(library);
  pthread_mutex_unlock(&gp_lock);
  if (!l) DRV_RETURN(CUDA_ERROR_INVALID_HANDLE);
  CUfunction f;
  CUresult r = get_function(&f, (CUmodule)l->mod, name);
  *pKernel = r == CUDA_SUCCESS ? (CUkernel)f : NULL;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod,
                                                  CUlibrary library) {
  DRV_ENTER(cuLibraryGetModule, pMod, library);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pMod) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_library *l = library_check(library);
  *pMod = l ? (CUmodule)l->mod : NULL;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(l ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* The function of a library's kernel, under gp_lock; NULL if `p` is none. */
static sim_function *lib_function(const void *p) {
  for (sim_library *l = libraries; l; l = l->next)
    for (size_t i = 0; i < l->mod->nfn; i++)
      if ((const void *)&l->mod->fn[i] == p) return &l->mod->fn[i];
  return NULL;
}

GPUSIM_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc,
                                                   CUkernel kernel) {
  DRV_ENTER(cuKernelGetFunction, pFunc, kernel);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) DRV_RETURN(r);
  if (!pFunc) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = lib_function(kernel);
  pthread_mutex_unlock(&gp_lock);
  *pFunc = (CUfunction)f;
  DRV_RETURN(f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

GPUSIM_EXPORT CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count,
                                                       CUlibrary lib) {
  DRV_ENTER(cuLibraryGetKernelCount, count, lib);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!count) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_library *l = library_check(lib);
  CUresult r = enumerate(l ? l->mod : NULL, count, NULL, 0);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuLibraryEnumerateKernels(
    CUkernel *kernels, unsigned int numKernels, CUlibrary lib) {
  DRV_ENTER(cuLibraryEnumerateKernels, kernels, numKernels, lib);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!kernels) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_library *l = library_check(lib);
  CUresult r =
      enumerate(l ? l->mod : NULL, NULL, (CUfunction *)kernels, numKernels);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuKernelGetName(const char **name,
                                               CUkernel hfunc) {
  DRV_ENTER(cuKernelGetName, name, hfunc);
  if (!name) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = lib_function(hfunc);
  pthread_mutex_unlock(&gp_lock);
  *name = f ? f->name : NULL;
  DRV_RETURN(f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* ---- function attributes (any simulated CUfunction) ---- */

static sim_function *function_lookup(CUfunction h) {
  return gp_function_find(h);
}

GPUSIM_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int *pi,
                                                  CUfunction_attribute attrib,
                                                  CUfunction hfunc) {
  DRV_ENTER(cuFuncGetAttribute, pi, attrib, hfunc);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pi || (unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = function_lookup(hfunc);
  if (f) *pi = f->attr[attrib];
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* The attributes a program may set, with the device's limits. */
static CUresult set_attr(sim_function *f, CUfunction_attribute a, int v) {
  int max = 0, min = 0;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    max = 232448 - f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    min = -1;
    max = 100;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    max = 8;
    break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    max = 1;
    break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    max = CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (v < min || v > max) return CUDA_ERROR_INVALID_VALUE;
  f->attr[a] = v;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc,
                                                  CUfunction_attribute attrib,
                                                  int value) {
  DRV_ENTER(cuFuncSetAttribute, hfunc, attrib, value);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = function_lookup(hfunc);
  CUresult r = f ? set_attr(f, attrib, value) : CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc,
                                                    CUfunc_cache config) {
  DRV_ENTER(cuFuncSetCacheConfig, hfunc, config);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = function_lookup(hfunc);
  CUresult r = !f ? CUDA_ERROR_INVALID_HANDLE
               : (unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL
                   ? CUDA_ERROR_INVALID_VALUE
                   : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) f->cache = config;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod,
                                               CUfunction hfunc) {
  DRV_ENTER(cuFuncGetModule, hmod, hfunc);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!hmod) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_function *f = function_lookup(hfunc);
  CUresult r = !f        ? CUDA_ERROR_INVALID_HANDLE
               : !f->mod ? CUDA_ERROR_NOT_FOUND
                         : CUDA_SUCCESS;
  *hmod = r == CUDA_SUCCESS ? (CUmodule)f->mod : NULL;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}
