/* Call sites end to end on this very binary (built with -g): MODULE records
 * name it (its path, its build-id read from its own ELF note, its load bias
 * from dl_iterate_phdr), FRAME pcs point into functions below whose lines
 * the __LINE__ markers give, and API/KERNEL records with hand-worked
 * timings make the attribution's sync_idle and host_wait known. Expected
 * values: the comment above test_timeline. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callsites.h"
#include "gp_config.h"
#include "jsonw.h"
#include "pipeline.h"
#include "render.h"
#include "render_callsites.h"
#include "symbolize.h"
#include "tl.h"
#include "util.h"
#include "writer.h"
#include "reader_ext.h"

/* ---- functions whose addresses the frames take ---- */

static void *g_ret;
__attribute__((noinline)) static void grab(void) {
  g_ret = __builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

/* Each marker sits on the line of the call it marks (keep it there). */
static int line_a, line_b, line_inl, line_call, line_cxx;
// clang-format off
__attribute__((noinline)) static void site_a(void) {
  grab(); line_a = __LINE__;
}
__attribute__((noinline)) static void site_b(void) {
  grab(); line_b = __LINE__;
}
static inline __attribute__((always_inline)) void inl_leaf(void) {
  grab(); line_inl = __LINE__;
}
__attribute__((noinline)) static void outer_fn(void) {
  inl_leaf(); line_call = __LINE__;
}
/* a C++ method as the linker sees it: ns::Box<int>::get() */
void cxx_get(void) __asm__("_ZN2ns3BoxIiE3getEv");
__attribute__((noinline)) void cxx_get(void) {
  grab(); line_cxx = __LINE__;
}
// clang-format on

/* the return address grab() saw, as a FRAME pc: minus the bias, minus 1 */
static uint64_t base, pc_a, pc_b, pc_inl, pc_cxx;
static uint8_t build_id[64];
static size_t nbid;
static char self[4096];

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (info->dlpi_name && *info->dlpi_name) return 0; /* the executable */
  base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_NOTE) continue;
    const char *n = (const char *)(info->dlpi_addr + p->p_vaddr);
    const char *end = n + p->p_memsz;
    while (n + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)n;
      const char *name = n + sizeof *h;
      const char *desc = name + ((h->n_namesz + 3) & ~3u);
      if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
          !memcmp(name, "GNU", 4) && h->n_descsz <= sizeof build_id) {
        memcpy(build_id, desc, h->n_descsz);
        nbid = h->n_descsz;
      }
      n = desc + ((h->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void locate(void) {
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  self[k > 0 ? k : 0] = 0;
  dl_iterate_phdr(phdr_cb, NULL);
  site_a();
  pc_a = (uint64_t)(uintptr_t)g_ret - base - 1;
  site_b();
  pc_b = (uint64_t)(uintptr_t)g_ret - base - 1;
  outer_fn();
  pc_inl = (uint64_t)(uintptr_t)g_ret - base - 1;
  cxx_get();
  pc_cxx = (uint64_t)(uintptr_t)g_ret - base - 1;
}

/* ---- records ---- */

enum {
  S_SELF = 1,
  S_CUDART,
  S_GONE,
  S_TORCH,
  S_PY,
  S_TRAIN,
  S_TENSOR,
  S_TRNAME,
  S_TENSNAME,
  S_SYNC,
  S_LAUNCH,
  S_MEMCPY,
  S_AMP
};
enum { M_SELF = 1, M_CUDART, M_GONE, M_MIS, M_TORCH, M_PY };
enum { A_LAUNCH = 1, A_SYNC, A_MEMCPY };
/* stacks (innermost nodes) */
enum {
  ST_INL = 12,
  ST_B = 22,
  ST_PY = 41,
  ST_L = 51,
  ST_GONE = 61,
  ST_CXX = 71,
  ST_MIS = 81
};
static const uint8_t other_id[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                     11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

static void module(struct tl *t, uint64_t id, uint64_t path, const uint8_t *bid,
                   size_t n, uint64_t b) {
  struct gpuphase_module *m = &tl_add(t, GPUPHASE_REC_MODULE)->u.module;
  m->module = id;
  m->path = path;
  m->build_id.data = (const char *)bid;
  m->build_id.len = n;
  m->base = b;
  m->size = 1ull << 30;
  m->start = 1;
}

static void frame(struct tl *t, uint64_t node, uint64_t parent, uint64_t kind,
                  uint64_t mod, uint64_t pc, uint64_t flags) {
  struct gpuphase_frame *f = &tl_add(t, GPUPHASE_REC_FRAME)->u.frame;
  *f = (struct gpuphase_frame){node, parent, kind, mod, pc, flags};
}

static void pycode(struct tl *t, uint64_t code, uint64_t file, uint64_t name,
                   uint64_t first) {
  struct gpuphase_pycode *p = &tl_add(t, GPUPHASE_REC_PYCODE)->u.pycode;
  p->code = code;
  p->file = file;
  p->name = name;
  p->first_line = first;
  p->py_version = 0x030b00f0;
}

static void meta(struct tl *t) {
  tl_str(t, S_SELF, self);
  tl_str(t, S_CUDART, "/usr/local/cuda/lib64/libcudart.so.12");
  tl_str(t, S_GONE, "/nonexistent/libgone.so");
  tl_str(t, S_TORCH,
         "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so");
  tl_str(t, S_PY, "/usr/bin/python3.11");
  tl_str(t, S_TRAIN, "/home/me/train.py");
  tl_str(t, S_TENSOR, "/venv/lib/python3.11/site-packages/torch/_tensor.py");
  tl_str(t, S_TRNAME, "Trainer.step");
  tl_str(t, S_TENSNAME, "Tensor.item");
  tl_str(t, S_SYNC, "cudaStreamSynchronize");
  tl_str(t, S_LAUNCH, "cudaLaunchKernel");
  tl_str(t, S_MEMCPY, "cudaMemcpy");
  tl_str(t, S_AMP, "<lambda & co>");
  tl_api_def(t, A_LAUNCH, S_LAUNCH, GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC);
  tl_api_def(t, A_SYNC, S_SYNC, GPUPHASE_API_SYNC);
  tl_api_def(t, A_MEMCPY, S_MEMCPY, GPUPHASE_API_COPY);
  tl_device(t, 0, 100);
  module(t, M_SELF, S_SELF, build_id, nbid, base);
  module(t, M_CUDART, S_CUDART, other_id, 20, 0x7f0000000000);
  module(t, M_GONE, S_GONE, other_id, 20, 0x7f1000000000);
  module(t, M_MIS, S_SELF, other_id, 20, base); /* same file, other id */
  module(t, M_TORCH, S_TORCH, other_id, 20, 0x7f2000000000);
  module(t, M_PY, S_PY, other_id, 20, 0x400000);
  pycode(t, 1, S_TRAIN, S_TRNAME, 142);
  pycode(t, 2, S_TENSOR, S_TENSNAME, 1000);
  /* ST_INL: cudart <- inl_leaf in outer_fn; ST_L: cudart <- site_a <-
   * outer_fn; ST_B: site_b <- TRUNCATED */
  frame(t, 11, 0, GPUPHASE_FRAME_NATIVE, M_SELF, pc_inl, 0);
  frame(t, 12, 11, GPUPHASE_FRAME_NATIVE, M_CUDART, 0x10, 0);
  frame(t, 13, 11, GPUPHASE_FRAME_NATIVE, M_SELF, pc_a, 0);
  frame(t, 21, 0, GPUPHASE_FRAME_TRUNCATED, 0, 0, 0);
  frame(t, 22, 21, GPUPHASE_FRAME_NATIVE, M_SELF, pc_b, 0);
  /* ST_PY: cudart <- libtorch_cuda <- Tensor.item <- Trainer.step (entry)
   * <- python3.11 (the evaluation loop) <- python3.11 */
  frame(t, 46, 0, GPUPHASE_FRAME_NATIVE, M_PY, 0x1000, 0);
  frame(t, 45, 46, GPUPHASE_FRAME_NATIVE, M_PY, 0x2000, 0);
  frame(t, 44, 45, GPUPHASE_FRAME_PYTHON, 1, 7, GPUPHASE_FRAME_ENTRY);
  frame(t, 43, 44, GPUPHASE_FRAME_PYTHON, 2, 3, 0);
  frame(t, 42, 43, GPUPHASE_FRAME_NATIVE, M_TORCH, 0x500, 0);
  frame(t, 41, 42, GPUPHASE_FRAME_NATIVE, M_CUDART, 0x20, 0);
  frame(t, 51, 13, GPUPHASE_FRAME_NATIVE, M_CUDART, 0x30, 0); /* launch */
  frame(t, 61, 0, GPUPHASE_FRAME_NATIVE, M_GONE, 0x1234, 0);
  frame(t, 71, 0, GPUPHASE_FRAME_NATIVE, M_SELF, pc_cxx, 0);
  frame(t, 81, 0, GPUPHASE_FRAME_NATIVE, M_MIS, pc_a, 0);
}

static struct gpuphase_api *call(struct tl *t, uint64_t th, uint64_t api,
                                 uint64_t s, uint64_t e, uint64_t stack) {
  struct gpuphase_api *a = tl_api(t, th, api, s, e, 0, 0);
  a->stack = stack;
  return a;
}

/* Device 0, thread 1 unless said:
 *   launch [100,110) ST_L; kernel [110,400); sync A [120,500) ST_INL
 *     -> sync idle [400,500) 100 to ST_INL
 *   host wait [500,700) 200, ended by launch [700,710) ST_L, after ST_INL
 *   kernel [710,800); sync B [720,1000) ST_B -> sync idle 200 to ST_B
 *   host wait [1000,1100) 100, ended by sync [1100,1150) ST_INL (sync idle
 *     50), after ST_B
 *   host wait [1150,1200) 50, ended by sync P [1200,1300) ST_PY (sync idle
 *     100: thread 2's sync C [1210,1290) ST_CXX and cudaMemcpy E
 *     [1220,1230) ST_MIS block meanwhile, P started first), after ST_INL
 *   host wait [1300,1400) 100, ended by a sync with no stack [1400,1450)
 *     (sync idle 50, not captured), after P (the last call to return)
 *   launch [1450,1460) ST_GONE; kernel [1460,1500)
 * Window [100,1500): kernel 420, launch 30, sync idle 500, host wait 450.
 * ST_INL: 2 calls, blocked 380 + 50, idle 150, 1 gap of 100, after 250.
 * ST_B: 1 call, 280, idle 200, after 100.  ST_PY: 1, 100, idle 100, 1 gap
 * of 50, after 100.  ST_L: 2 launches, 1 gap of 200.  ST_CXX: 1, 80, 0.
 * ST_MIS: 1, 10, 0.  Not captured: 1 call, 50 blocked, sync idle 50, host
 * wait 100. */
static void timeline(struct tl *t) {
  call(t, 1, A_LAUNCH, 100, 110, ST_L);
  tl_kernel(t, 0, 110, 400, 0, 1, 1);
  call(t, 1, A_SYNC, 120, 500, ST_INL);
  call(t, 1, A_LAUNCH, 700, 710, ST_L);
  tl_kernel(t, 0, 710, 800, 0, 1, 1);
  call(t, 1, A_SYNC, 720, 1000, ST_B);
  call(t, 1, A_SYNC, 1100, 1150, ST_INL);
  call(t, 1, A_SYNC, 1200, 1300, ST_PY);
  call(t, 2, A_SYNC, 1210, 1290, ST_CXX);
  call(t, 2, A_MEMCPY, 1220, 1230, ST_MIS);
  call(t, 1, A_SYNC, 1400, 1450, 0);
  call(t, 1, A_LAUNCH, 1450, 1460, ST_GONE);
  tl_kernel(t, 0, 1460, 1500, 0, 1, 1);
}

static const struct gp_cs_site *site(const struct gp_cs_res *cs,
                                     const char *api, const char *fn) {
  for (size_t i = 0; i < cs->n; i++)
    if (!strcmp(cs->v[i].api, api) && cs->v[i].nframes &&
        !strcmp(cs->v[i].frames[0].function, fn))
      return &cs->v[i];
  fprintf(stderr, "no site %s at %s\n", api, fn);
  for (size_t i = 0; i < cs->n; i++) {
    fprintf(stderr, "  site %s:", cs->v[i].api);
    for (size_t j = 0; j < cs->v[i].nframes; j++)
      fprintf(stderr, " [%s %s:%lld i%d]", cs->v[i].frames[j].function,
              cs->v[i].frames[j].file ? cs->v[i].frames[j].file : "-",
              (long long)cs->v[i].frames[j].line, cs->v[i].frames[j].inlined);
    fprintf(stderr, "\n");
  }
  tl_failures++;
  return NULL;
}

static int has_suffix(const char *s, const char *suf) {
  size_t a = s ? strlen(s) : 0, b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}
#define SUFFIX(s, suf) EQ(has_suffix((s), (suf)), 1)
#define STR(s, want) EQ((s) && !strcmp((s), (want)), 1)

static struct gp_proc_res *run(int all) {
  struct tl t;
  tl_init(&t);
  t.o.frames_all = all;
  meta(&t);
  timeline(&t);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  return r;
}

/* A stack with no user frame: cudart <- libtorch_cuda <- Tensor.item (in
 * site-packages, the program's own code installed with pip, say) <- the
 * interpreter. The site is named by the innermost Python frame, a line of
 * Python, not by a native library's frame. And "lib/python_jobs" is not
 * the standard library: a file there is the user's. */
static void test_python_fallback(void) {
  struct tl t;
  tl_init(&t);
  meta(&t);
  tl_str(&t, 90, "/home/me/lib/python_jobs/job.py");
  tl_str(&t, 91, "job_step");
  pycode(&t, 9, 90, 91, 10);
  frame(&t, 96, 0, GPUPHASE_FRAME_NATIVE, M_PY, 0x1000, 0);
  frame(&t, 93, 96, GPUPHASE_FRAME_PYTHON, 2, 3, GPUPHASE_FRAME_ENTRY);
  frame(&t, 92, 93, GPUPHASE_FRAME_NATIVE, M_TORCH, 0x600, 0);
  frame(&t, 91, 92, GPUPHASE_FRAME_NATIVE, M_CUDART, 0x40, 0);
  frame(&t, 95, 96, GPUPHASE_FRAME_PYTHON, 9, 2, GPUPHASE_FRAME_ENTRY);
  frame(&t, 94, 95, GPUPHASE_FRAME_NATIVE, M_CUDART, 0x50, 0);
  call(&t, 1, A_SYNC, 100, 200, 91);
  call(&t, 1, A_SYNC, 300, 400, 94);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  const struct gp_cs_res *cs = r->callsites;
  const struct gp_cs_site *s = site(cs, "cudaStreamSynchronize", "Tensor.item");
  if (s) {
    EQ(s->frames[0].python, 1);
    EQ(s->frames[0].line, 1000);
  }
  s = site(cs, "cudaStreamSynchronize", "job_step");
  if (s) EQ(s->frames[0].python, 1);
  gp_res_free(r);
}

static void test_collapsed(void) {
  struct gp_proc_res *r = run(0);
  const struct gp_cs_res *cs = r->callsites;
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 420, 0, 30, 500, 450);
  EQ(cs->has_stacks, 1);
  EQ(cs->sync_idle_ns, 500);
  EQ(cs->host_wait_ns, 450);
  EQ(cs->sync_uncaptured_ns, 50);
  EQ(cs->host_wait_uncaptured_ns, 100);
  EQ(cs->calls_uncaptured, 1);
  EQ(cs->blocked_uncaptured_ns, 50);
  /* ST_INL collapses to the innermost user frame: outer_fn's inlined
   * callee inl_leaf, at grab()'s line in it */
  const struct gp_cs_site *s = site(cs, "cudaStreamSynchronize", "inl_leaf");
  if (s) {
    EQ(s->nframes, 1);
    EQ(s->count, 2);
    EQ(s->blocked_ns, 430);
    EQ(s->idle_ns, 150);
    EQ(s->gaps, 1);
    EQ(s->gap_ns, 100);
    EQ(s->after_ns, 250);
    EQ(gp_hist_pct(&s->dur, 95), 380);
    EQ(s->frames[0].line, line_inl);
    EQ(s->frames[0].inlined, 1);
    SUFFIX(s->frames[0].file, "test_callsites.c");
  }
  if ((s = site(cs, "cudaStreamSynchronize", "site_b"))) {
    EQ(s->count, 1);
    EQ(s->blocked_ns, 280);
    EQ(s->idle_ns, 200);
    EQ(s->after_ns, 100);
    EQ(s->truncated, 1);
    EQ(s->frames[0].line, line_b);
  }
  /* Python: Tensor.item is in site-packages, Trainer.step is the user's */
  if ((s = site(cs, "cudaStreamSynchronize", "Trainer.step"))) {
    EQ(s->count, 1);
    EQ(s->blocked_ns, 100);
    EQ(s->idle_ns, 100);
    EQ(s->gaps, 1);
    EQ(s->gap_ns, 50);
    EQ(s->after_ns, 100);
    EQ(s->frames[0].python, 1);
    EQ(s->frames[0].line, 142);
    STR(s->frames[0].file, "/home/me/train.py");
  }
  /* the launches' innermost user frame is site_a (cudart is CUDA's) */
  if ((s = site(cs, "cudaLaunchKernel", "site_a"))) {
    EQ(s->launches, 2);
    EQ(s->gaps, 1);
    EQ(s->gap_ns, 200);
    EQ(s->frames[0].line, line_a);
  }
  if ((s = site(cs, "cudaLaunchKernel", "libgone.so+0x1234"))) {
    EQ(s->launches, 1);
    EQ(s->frames[0].file == NULL, 1);
  }
  if ((s = site(cs, "cudaStreamSynchronize", "ns::Box<int>::get"))) {
    EQ(s->count, 1);
    EQ(s->blocked_ns, 80);
    EQ(s->idle_ns, 0);
    EQ(s->frames[0].line, line_cxx);
  }
  char mis[64];
  snprintf(mis, sizeof mis, "%s+0x%llx", strrchr(self, '/') + 1,
           (unsigned long long)pc_a);
  if ((s = site(cs, "cudaMemcpy", mis))) {
    EQ(s->count, 1);
    EQ(s->blocked_ns, 10);
  }
  /* sync idle is the largest category (500 of 1400): the finding names
   * the blocking site of the most sync idle, site_b, 200 of the 980 ns of
   * GPU idle time (launch 30 + sync idle 500 + host wait 450) */
  const char *text = NULL;
  for (size_t i = 0; i < r->nfindings; i++)
    if (!strcmp(r->findings[i].rule, "sync_bound")) text = r->findings[i].text;
  EQ(text && strstr(text, "; 20% of GPU idle time is spent while a host "
                          "thread is blocked in cudaStreamSynchronize from "
                          "site_b (test_callsites.c:"),
     1);
  /* only the modules of shown frames are looked up: the test binary's,
   * the mismatched one's and the gone one's; not libcudart, libtorch_cuda
   * or python3.11, whose frames the collapse hides */
  EQ(cs->modules_read, 3);
  /* two processes added together: the same sites, twice the figures */
  struct gp_proc_res *sum = gp_res_new_sum();
  EQ(gp_res_merge(sum, r), 0);
  EQ(gp_res_merge(sum, r), 0);
  const struct gp_cs_site *t2 =
      site(sum->callsites, "cudaStreamSynchronize", "inl_leaf");
  if (t2) {
    EQ(t2->count, 4);
    EQ(t2->idle_ns, 300);
    EQ(t2->gap_ns, 200);
    EQ(gp_hist_pct(&t2->dur, 95), 380);
  }
  EQ(sum->callsites->n, cs->n);
  EQ(sum->callsites->sync_idle_ns, 1000);
  EQ(sum->callsites->host_wait_uncaptured_ns, 200);
  gp_res_free(sum);
  /* sites by GPU idle explained (sync idle, then host wait ended) */
  EQ(cs->v[0].idle_ns + cs->v[0].gap_ns, 250);
  gp_res_free(r);
}

static void test_all_frames(void) {
  struct gp_proc_res *r = run(1);
  const struct gp_cs_res *cs = r->callsites;
  /* ST_INL in full: cudart, inl_leaf (inlined) at grab()'s line, outer_fn
   * at inl_leaf()'s call line */
  const struct gp_cs_site *s =
      site(cs, "cudaStreamSynchronize", "libcudart.so.12+0x10");
  if (s && s->nframes == 3) {
    STR(s->frames[1].function, "inl_leaf");
    EQ(s->frames[1].line, line_inl);
    EQ(s->frames[1].inlined, 1);
    STR(s->frames[2].function, "outer_fn");
    EQ(s->frames[2].line, line_call);
    EQ(s->frames[2].inlined, 0);
    EQ(s->count, 2);
    EQ(s->idle_ns, 150);
  } else {
    EQ(s ? s->nframes : 0, 3);
  }
  EQ(cs->modules_read, 5); /* all but python3.11's, dropped */
  /* Python: the interpreter's two frames give way to the Python frames */
  s = site(cs, "cudaStreamSynchronize", "libcudart.so.12+0x20");
  if (s && s->nframes == 4) {
    STR(s->frames[1].function, "libtorch_cuda.so+0x500");
    STR(s->frames[2].function, "Tensor.item");
    EQ(s->frames[2].line, 1000);
    STR(s->frames[3].function, "Trainer.step");
    EQ(s->frames[3].python, 1);
  } else {
    EQ(s ? s->nframes : 0, 4);
  }
  gp_res_free(r);
}

/* ---- hostile call-site records: bounded, never a crash or a hang ---- */

static void hostile(struct tl *t) {
  meta(t);
  frame(t, 900, 901, GPUPHASE_FRAME_NATIVE, M_SELF, pc_a, 0); /* a cycle */
  frame(t, 901, 900, GPUPHASE_FRAME_NATIVE, M_SELF, pc_b, 0);
  for (uint64_t i = 0; i < 5000; i++) /* deeper than shown */
    frame(t, 1000 + i, i ? 999 + i : 0, GPUPHASE_FRAME_NATIVE, M_GONE, i, 0);
  frame(t, 7000, 0, GPUPHASE_FRAME_NATIVE, M_SELF, 1ull << 40, 0);
  frame(t, 7001, 0, 99, 12345, 0, 0);                   /* unknown kind */
  frame(t, 7002, 0, GPUPHASE_FRAME_PYTHON, 77, 0, 0);   /* unknown code */
  frame(t, 7003, 0, GPUPHASE_FRAME_NATIVE, 4242, 5, 0); /* unknown module */
  frame(t, 7004, 0, GPUPHASE_FRAME_PYTHON, 3, 0, 0);
  frame(t, 7004, 7000, GPUPHASE_FRAME_NATIVE, 1, 0, 0); /* written twice */
  pycode(t, 3, S_TRAIN, S_AMP, 1);
  uint64_t stacks[] = {900, 5999, 7000, 7001, 7002, 7003, 7004, 123456};
  for (size_t i = 0; i < sizeof stacks / sizeof *stacks; i++)
    call(t, 1, A_SYNC, 100 + 10 * i, 105 + 10 * i, stacks[i]);
}

static void test_hostile(void) {
  struct tl t;
  tl_init(&t);
  hostile(&t);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  const struct gp_cs_res *cs = r->callsites;
  EQ(cs->calls_uncaptured, 1); /* node 123456 is not in the trace */
  if (gp_sym_available()) {
    const struct gp_cs_site *s = site(cs, "cudaStreamSynchronize", "site_a");
    if (s) EQ(s->truncated, 1);
    char far[64];
    snprintf(far, sizeof far, "%s+0x%llx", strrchr(self, '/') + 1, 1ull << 40);
    site(cs, "cudaStreamSynchronize", far);
  }
  site(cs, "cudaStreamSynchronize", "?+0x5");
  /* every row is a site or not captured: counts add up */
  uint64_t n = cs->calls_uncaptured;
  for (size_t i = 0; i < cs->n; i++)
    n += cs->v[i].count;
  EQ(n, 8);
  /* the renderers take all of it */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_report_set set = {&r, 1, r, NULL};
  struct gp_render_opts ro = {.top = 50};
  EQ(gp_render_text(f, &set, &ro), 0);
  EQ(gp_render_json(f, &set, &ro), 0);
  EQ(gp_render_html(f, &set, &ro), 0);
  EQ(gp_render_folded(f, &set, &ro), 0);
  fclose(f);
  /* the HTML escapes a name with <, & and > */
  EQ(strstr(buf, "&lt;lambda &amp; co&gt;") != NULL, 1);
  EQ(strstr(buf, "<lambda & co>") != NULL, 1); /* as is in folded */
  free(buf);
  gp_res_free(r);
}

/* ---- through a trace file: the sorted reader, JSON and folded output ---- */

static void put(gp_writer *w, uint32_t src, const struct gpuphase_record *r) {
  if (gp_writer_add(w, src, r) != GPUPHASE_OK) abort();
}

/* The records of the in-memory test written to a trace file: metadata in
 * source 0 (MODULE included, since the shim may write it anywhere), calls
 * of thread t in source t, kernels in source 100. */
static void write_tl(const char *path, struct tl *t, int module_in_thread) {
  struct gp_process_info info = {0};
  info.host = "h";
  info.pid = 1;
  info.rank = info.local_rank = -1;
  info.cmdline = "test";
  info.clock = "clock_gettime";
  int err = 0;
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  gp_writer *w = gp_writer_open(dup(fileno(f)), &info, 0, &err);
  fclose(f);
  if (!w) abort();
  for (size_t i = 0; i < t->n; i++) {
    struct gpuphase_record *r = &t->v[i];
    if (r->kind == GPUPHASE_REC_STRING) {
      uint64_t id =
          gp_writer_intern(w, r->u.string.text.data, r->u.string.text.len);
      if (id != r->u.string.id) abort(); /* ids follow the order */
      continue;
    }
    uint32_t src = r->kind == GPUPHASE_REC_API      ? (uint32_t)r->u.api.thread
                   : r->kind == GPUPHASE_REC_KERNEL ? 100
                   : r->kind == GPUPHASE_REC_MODULE && module_in_thread ? 1
                                                                        : 0;
    if (r->kind == GPUPHASE_REC_MODULE && module_in_thread)
      r->u.module.start = 5000; /* seen mapped after the calls started */
    put(w, src, r);
  }
  if (gp_writer_close(w, NULL) != GPUPHASE_OK) abort();
}

static void write_trace(const char *path, int module_in_thread) {
  struct tl t;
  tl_init(&t);
  meta(&t);
  timeline(&t);
  write_tl(path, &t, module_in_thread);
  tl_free(&t);
}

static void test_sorted_module(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/cs_sorted.gpt", dir);
  write_trace(path, 1);
  int code = 0;
  char err[256];
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, sizeof err);
  EQ(rd != NULL, 1);
  if (!rd) return;
  const struct gpuphase_record *rec;
  int modules = 0, bad = 0;
  while (gp_reader_next_ref(rd, &rec) == 1) {
    if (rec->kind == GPUPHASE_REC_MODULE) modules++;
    if (rec->kind == GPUPHASE_REC_API && modules < 6) bad++;
  }
  gpuphase_reader_close(rd);
  EQ(modules, 6);
  EQ(bad, 0); /* every MODULE before the first API */
  unlink(path);
}

static uint64_t json_u64(const char *s, const char *key) {
  const char *p = strstr(s, key);
  return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

static void test_file_outputs(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/cs_out.gpt", dir);
  write_trace(path, 0);
  struct gp_report_opts o = {0};
  o.warmup = -1;
  int st;
  char err[256];
  struct gp_proc_res *r =
      gp_report_file(path, &o, NULL, NULL, &st, err, sizeof err);
  EQ(r != NULL, 1);
  if (!r) return;
  EQ(r->diag.late, 0);
  struct gp_report_set set = {&r, 1, r, NULL};
  for (int wb = 0; wb < 2; wb++) { /* folded, parsed back and summed */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct gp_render_opts ro = {.weight_blocked = wb};
    EQ(gp_render_folded(f, &set, &ro), 0);
    fclose(f);
    uint64_t sum = 0, lines = 0;
    for (char *l = buf, *nl; l && *l; l = nl ? nl + 1 : NULL) {
      nl = strchr(l, '\n');
      if (nl) *nl = 0;
      char *sp = strrchr(l, ' ');
      EQ(sp != NULL, 1);
      if (sp) sum += strtoull(sp + 1, NULL, 10);
      lines++;
    }
    /* idle: all sync idle and host wait; blocked: every blocking call */
    EQ(sum, wb ? 430 + 280 + 100 + 80 + 10 + 50 : 500 + 450);
    free(buf);
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_render_opts ro = {.top = 0};
  EQ(gp_render_json(f, &set, &ro), 0);
  fclose(f);
  EQ(strstr(buf, "\"callsites\": [") != NULL, 1);
  EQ(json_u64(buf, "\"sync_idle_ns\": "), 500);
  EQ(json_u64(buf, "\"host_wait_not_captured_ns\": "), 100);
  /* the first entry: the blocking site of the most sync idle, site_b */
  const char *p = strstr(buf, "\"callsites\": [");
  EQ(json_u64(p, "\"gpu_idle_ns\": "), 200);
  EQ(strstr(p, "\"kind\": \"blocking\"") != NULL, 1);
  EQ(strstr(p, "\"kind\": \"idle_end\"") != NULL, 1);
  EQ(strstr(p, "\"kind\": \"launch\"") != NULL, 1);
  EQ(strstr(p, "\"python\": true") != NULL, 1);
  /* gpu_idle_ns over the entries + not captured = device idle explained */
  uint64_t tot = 0;
  const char *stop = strstr(p, "\"callsites_totals\"");
  for (const char *q = strstr(p, "\"gpu_idle_ns\": "); q && q < stop;
       q = strstr(q + 1, "\"gpu_idle_ns\": "))
    tot += strtoull(q + strlen("\"gpu_idle_ns\": "), NULL, 10);
  EQ(tot + 50 + 100, 500 + 450);
  free(buf);
  /* text: the section, one line per site within 100 columns */
  buf = NULL;
  f = open_memstream(&buf, &len);
  EQ(gp_render_text(f, &set, &ro), 0);
  fclose(f);
  EQ(strstr(buf, "Where the host waits") != NULL, 1);
  EQ(strstr(buf, "no call-site records") == NULL, 1);
  size_t widest = 0;
  for (char *l = buf; *l;) {
    char *nl = strchr(l, '\n');
    size_t w = nl ? (size_t)(nl - l) : strlen(l);
    widest = w > widest ? w : widest;
    l += w + (nl != NULL);
  }
  EQ(widest <= 100, 1);
  free(buf);
  gp_res_free(r);
  if (!getenv("GP_CS_KEEP")) unlink(path); /* kept: to look at by hand */
}

/* An async copy decided blocking late (attribution.md, worked example 3):
 * call [100,200) ST_B whose pageable copy runs [300,350), then a launch
 * [400,410) ST_L. Sync idle 100 (booked as launch until the copy record
 * shows pageable memory) goes to ST_B; host wait [200,300) ends with the
 * copy itself (no call: not captured), [350,400) with the launch (50 to
 * ST_L); both gaps come after the copy call (150). */
static void test_late_blocking(void) {
  struct tl t;
  tl_init(&t);
  meta(&t);
  tl_str(&t, S_AMP + 1, "cudaMemcpyAsync");
  tl_api_def(&t, 4, S_AMP + 1, GPUPHASE_API_COPY | GPUPHASE_API_ASYNC);
  struct gpuphase_api *c = call(&t, 1, 4, 100, 200, ST_B);
  c->corr = 5;
  tl_copy(&t, 0, 300, 350, 1000, GPUPHASE_COPY_HTOD, TL_PAGEABLE, TL_DEVMEM, 5);
  call(&t, 1, A_LAUNCH, 400, 410, ST_L);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  CATS(tl_dev(r, 0)->bd, 0, 50, 10, 100, 150);
  const struct gp_cs_res *cs = r->callsites;
  const struct gp_cs_site *s = site(cs, "cudaMemcpyAsync", "site_b");
  if (s) {
    EQ(s->count, 1);
    EQ(s->blocked_ns, 100);
    EQ(s->idle_ns, 100);
    EQ(s->after_ns, 150);
  }
  if ((s = site(cs, "cudaLaunchKernel", "site_a"))) EQ(s->gap_ns, 50);
  EQ(cs->sync_uncaptured_ns, 0);
  EQ(cs->host_wait_uncaptured_ns, 100);
  gp_res_free(r);
}

/* A device first named mid-run starts as a copy of the "any device"
 * timeline (attribution.md §1), call sites included: a sync with device
 * -1 [100,200) ST_B blocks device 0 and the device 1 that a kernel names
 * at [300,400): 100 ns of sync idle on each, 200 to ST_B. The gaps after
 * it, [200,400) on device 0 (the window ends) and [200,300) on device 1
 * (its kernel starts), are ended by no call: not captured, but after
 * ST_B (300). */
static void test_device_added(void) {
  struct tl t;
  tl_init(&t);
  meta(&t);
  struct gpuphase_api *a = call(&t, 1, A_SYNC, 100, 200, ST_B);
  a->device = -1;
  tl_kernel(&t, 1, 300, 400, 0, 1, 1);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  CATS(tl_dev(r, 0)->bd, 0, 0, 0, 100, 200);
  CATS(tl_dev(r, 1)->bd, 100, 0, 0, 100, 100);
  const struct gp_cs_res *cs = r->callsites;
  const struct gp_cs_site *s = site(cs, "cudaStreamSynchronize", "site_b");
  if (s) {
    EQ(s->idle_ns, 200);
    EQ(s->after_ns, 300);
    EQ(s->gap_ns, 0);
  }
  EQ(cs->sync_idle_ns, 200);
  EQ(cs->sync_uncaptured_ns, 0);
  EQ(cs->host_wait_uncaptured_ns, 300);
  gp_res_free(r);
}

static void test_no_records(void) {
  struct tl t;
  tl_init(&t);
  tl_str(&t, S_SYNC, "cudaStreamSynchronize");
  tl_api_def(&t, A_SYNC, S_SYNC, GPUPHASE_API_SYNC);
  call(&t, 1, A_SYNC, 100, 200, 0);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_report_set set = {&r, 1, r, NULL};
  struct gp_render_opts ro = {.top = 0};
  EQ(gp_render_text(f, &set, &ro), 0);
  EQ(gp_render_json(f, &set, &ro), 0);
  fclose(f);
  const char *h = strstr(buf, "GPUPHASE_STACKS");
  EQ(h != NULL, 1);
  EQ(h && strstr(h + 1, "GPUPHASE_STACKS") == NULL, 1); /* said once */
  EQ(strstr(buf, "\"callsites\": []") != NULL, 1);
  free(buf);
  gp_res_free(r);
}

/* Symbol versions of dynamic symbols are not part of a frame's name. */
static void test_fn_name(void) {
  static const char *const cases[][2] = {
      {"__libc_start_main@@GLIBC_2.34", "__libc_start_main"},
      {"memcpy@GLIBC_2.2.5", "memcpy"},
      {"plain_fn", "plain_fn"},
      /* C functions' clones: the function's name (docs/callsites.md) */
      {"do_sync.constprop.0", "do_sync"},
      {"msort_with_tmp.part.0", "msort_with_tmp"},
      {"f.isra.0.cold", "f"},
      {"main.cold", "main"},
      {"g.llvm.1234567", "g"},
      {"v1.2", "v1.2"},
      {"a.b.7", "a.b.7"},
      {".cold", ".cold"},
      {"x.part", "x"},
      /* an inlined C++ function named by DWARF (no linkage name) */
      {"__invoke_impl<void, main()::<lambda()>&>", "__invoke_impl"},
      {"foo<int>.part.0", "foo"},
      {"_M_invoke", "_M_invoke"},
      {"_ZN2ml3BoxIiE3getEv@@V1", "ml::Box<int>::get"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *n = gp_cs_fn_name(cases[i][0]);
    if (!n || strcmp(n, cases[i][1])) {
      fprintf(stderr, "FAIL: name of %s: %s\n", cases[i][0], n ? n : "(null)");
      tl_failures++;
    }
    free(n);
  }
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  locate();
  test_fn_name();
  test_python_fallback();
  if (argc > 2 && !strcmp(argv[1], "--write-corpus")) {
    /* the seeds of tests/fuzz/corpus/report: call sites, and hostile ones */
    char path[4096];
    struct tl t;
    snprintf(path, sizeof path, "%s/callsites.gph", argv[2]);
    write_trace(path, 1);
    tl_init(&t);
    hostile(&t);
    snprintf(path, sizeof path, "%s/callsites-hostile.gph", argv[2]);
    write_tl(path, &t, 0);
    tl_free(&t);
    return 0;
  }
  if (!nbid) {
    fprintf(stderr, "test_callsites: no build-id note in %s\n", self);
    return 1;
  }
  test_no_records();
  test_sorted_module(dir);
  test_hostile();
  if (!gp_sym_available()) {
    fprintf(stderr, "test_callsites: built without libdw: symbol tests "
                    "skipped\n");
    return tl_failures ? 1 : 77;
  }
  test_collapsed();
  test_all_frames();
  test_late_blocking();
  test_device_added();
  test_file_outputs(dir);
  if (tl_failures) fprintf(stderr, "%d failures\n", tl_failures);
  return tl_failures ? 1 : 0;
}
