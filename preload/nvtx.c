/* NVTX injection: loaded through NVTX_INJECTION64_PATH (set by `gpuphase
 * run`), the library receives nvtx ranges from torch.cuda.nvtx, the nvtx3
 * headers and libnvToolsExt, and records them as phases. Push/pop and
 * start/end ranges, domains and registered strings are supported; marks,
 * categories and resource naming are left to NVTX's no-op defaults. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "gp_shim.h"
#include "gpuphase/trace_records.h"

/* Handles we give out. Never freed: in-flight ring events may still point
 * at them, and programs register few of them. */
struct gp_nvtx_domain {
  char name[GP_RANGE_NAME_MAX + 1];
};
struct gp_nvtx_string {
  char text[GP_RANGE_NAME_MAX + 1];
};

/* Push/pop depth per thread and domain (NVTX keeps a stack per domain):
 * the first MAX_DOMAINS domains a thread uses get their own, later ones
 * share the last slot. */
#define MAX_DOMAINS 8
static GP_TLS struct {
  const void *domain;
  int depth, used;
} stacks[MAX_DOMAINS];
static _Atomic uint64_t next_range_id = 1;

static int *depth_of(const void *domain) {
  for (int i = 0; i < MAX_DOMAINS; i++) {
    if (stacks[i].used && stacks[i].domain == domain) return &stacks[i].depth;
    if (!stacks[i].used) {
      stacks[i].used = 1;
      stacks[i].domain = domain;
      return &stacks[i].depth;
    }
  }
  return &stacks[MAX_DOMAINS - 1].depth;
}

static size_t utf8_of_wide(const wchar_t *w, char *out, size_t cap) {
  size_t n = 0;
  for (; w && *w; w++) {
    uint32_t c = (uint32_t)*w;
    char buf[4];
    size_t k;
    if (c < 0x80) buf[0] = (char)c, k = 1;
    else if (c < 0x800) buf[0] = (char)(0xC0 | c >> 6), buf[1] = (char)(0x80 | (c & 0x3F)), k = 2;
    else if (c < 0x10000) buf[0] = (char)(0xE0 | c >> 12), buf[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
                          buf[2] = (char)(0x80 | (c & 0x3F)), k = 3;
    else if (c < 0x110000) buf[0] = (char)(0xF0 | c >> 18), buf[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
                           buf[2] = (char)(0x80 | ((c >> 6) & 0x3F)), buf[3] = (char)(0x80 | (c & 0x3F)), k = 4;
    else continue;
    if (n + k >= cap) break;
    memcpy(out + n, buf, k);
    n += k;
  }
  out[n] = 0;
  return n;
}

/* The message of an event: ASCII, wide, or a registered string. */
static const char *message_of(const nvtxEventAttributes_t *a, char *buf,
                              size_t cap) {
  if (!a) return NULL;
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii;
  case NVTX_MESSAGE_TYPE_UNICODE:
    utf8_of_wide(a->message.unicode, buf, cap);
    return buf;
  case NVTX_MESSAGE_TYPE_REGISTERED:
    return a->message.registered
               ? ((const struct gp_nvtx_string *)(const void *)a->message.registered)->text
               : NULL;
  default: return NULL;
  }
}

static int push(const char *name, const void *domain) {
  gp_range_record(GPUPHASE_RANGE_PUSH, name, 0, domain);
  return (*depth_of(domain))++;
}

/* A pop with nothing pushed in its domain is an error (-1, as NVTX
 * specifies) and still recorded: the report counts unmatched ends. */
static int pop(const void *domain) {
  int *d = depth_of(domain);
  gp_range_record(GPUPHASE_RANGE_POP, NULL, 0, domain);
  if (*d <= 0) return -1;
  return --*d;
}

static nvtxRangeId_t start(const char *name, const void *domain) {
  uint64_t id = atomic_fetch_add(&next_range_id, 1);
  gp_range_record(GPUPHASE_RANGE_START, name, id, domain);
  return id;
}

static void end(nvtxRangeId_t id, const void *domain) {
  gp_range_record(GPUPHASE_RANGE_END, NULL, id, domain);
}

/* ---- core module ---- */
static int NVTX_API push_a(const char *m) {
  return push(m, NULL);
}
static int NVTX_API push_w(const wchar_t *m) {
  char buf[GP_RANGE_NAME_MAX + 1];
  utf8_of_wide(m, buf, sizeof buf);
  return push(buf, NULL);
}
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) {
  char buf[GP_RANGE_NAME_MAX + 1];
  return push(message_of(a, buf, sizeof buf), NULL);
}
static int NVTX_API pop_core(void) {
  return pop(NULL);
}
static nvtxRangeId_t NVTX_API start_a(const char *m) {
  return start(m, NULL);
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m) {
  char buf[GP_RANGE_NAME_MAX + 1];
  utf8_of_wide(m, buf, sizeof buf);
  return start(buf, NULL);
}
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) {
  char buf[GP_RANGE_NAME_MAX + 1];
  return start(message_of(a, buf, sizeof buf), NULL);
}
static void NVTX_API end_core(nvtxRangeId_t id) {
  end(id, NULL);
}

/* ---- domains (core2 module) ---- */
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name) {
  struct gp_nvtx_domain *d = calloc(1, sizeof *d);
  if (d && name) strncpy(d->name, name, GP_RANGE_NAME_MAX);
  return (nvtxDomainHandle_t)(void *)d;
}
static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name) {
  struct gp_nvtx_domain *d = calloc(1, sizeof *d);
  if (d) utf8_of_wide(name, d->name, sizeof d->name);
  return (nvtxDomainHandle_t)(void *)d;
}
static void NVTX_API domain_destroy(nvtxDomainHandle_t d) {
  (void)d; /* kept: see above */
}
static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d,
                                              const char *s) {
  (void)d;
  struct gp_nvtx_string *r = calloc(1, sizeof *r);
  if (r && s) strncpy(r->text, s, GP_RANGE_NAME_MAX);
  return (nvtxStringHandle_t)(void *)r;
}
static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d,
                                              const wchar_t *s) {
  (void)d;
  struct gp_nvtx_string *r = calloc(1, sizeof *r);
  if (r) utf8_of_wide(s, r->text, sizeof r->text);
  return (nvtxStringHandle_t)(void *)r;
}
static int NVTX_API domain_push(nvtxDomainHandle_t d,
                                const nvtxEventAttributes_t *a) {
  char buf[GP_RANGE_NAME_MAX + 1];
  return push(message_of(a, buf, sizeof buf), d);
}
static int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  return pop(d);
}
static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d,
                                           const nvtxEventAttributes_t *a) {
  char buf[GP_RANGE_NAME_MAX + 1];
  return start(message_of(a, buf, sizeof buf), d);
}
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  end(id, d);
}

static void set_slot(NvtxFunctionTable t, unsigned n, unsigned id,
                     NvtxFunctionPointer f) {
  if (t && id < n && t[id]) *t[id] = f;
}

#define SLOT(t, n, id, f) set_slot(t, n, id, (NvtxFunctionPointer)(void *)(f))

GP_EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!get) return 0;
  const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
    return 0;
  NvtxFunctionTable t = NULL;
  unsigned n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
    SLOT(t, n, NVTX_CBID_CORE_RangePushA, push_a);
    SLOT(t, n, NVTX_CBID_CORE_RangePushW, push_w);
    SLOT(t, n, NVTX_CBID_CORE_RangePushEx, push_ex);
    SLOT(t, n, NVTX_CBID_CORE_RangePop, pop_core);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartA, start_a);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartW, start_w);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartEx, start_ex);
    SLOT(t, n, NVTX_CBID_CORE_RangeEnd, end_core);
  }
  t = NULL;
  n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
    SLOT(t, n, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
    SLOT(t, n, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
    SLOT(t, n, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, register_a);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, register_w);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangePushEx, domain_push);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
  }
  return 1;
}
