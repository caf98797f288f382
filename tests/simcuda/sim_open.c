/* How libcudart and libcupti find the simulated driver. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpusim.h"

/* First by soname, like the real libraries (so an interposed dlopen sees
 * it); if that finds nothing or a real driver, the libcuda.so.1 next to
 * this library. The fallback matters where $ORIGIN is not honoured, e.g.
 * under ASan, whose dlopen interceptor hides the calling library. */
void *gp_sim_open_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h && dlsym(h, "gpusim_api_enter")) return h;
  if (h) dlclose(h);
  Dl_info self;
  char path[4096];
  if (!dladdr((void *)gp_sim_open_driver, &self) || !self.dli_fname)
    return NULL;
  const char *slash = strrchr(self.dli_fname, '/');
  int dir = slash ? (int)(slash - self.dli_fname) : 0;
  if (snprintf(path, sizeof path, "%.*s%slibcuda.so.1", dir, self.dli_fname,
               slash ? "/" : "./") >= (int)sizeof path)
    return NULL;
  return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}
