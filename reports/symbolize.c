/* Offline symbolisation with libdwfl (symbolize.h). One Dwfl per module,
 * opened when one of its frames is first shown: a report that shows ten
 * frames reads the DWARF of the few modules they are in. */
#include "symbolize.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gp_config.h"
#include "u64map.h"

#if GP_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#endif

#define MAX_INLINE 16 /* frames of one pc: the function and its inlines */

struct smod {
  int state; /* GP_SYM_*; -1 not tried */
#if GP_HAVE_LIBDW
  Dwfl *dwfl;
  Dwfl_Module *mod;
#endif
  struct gp_u64map cache; /* pc -> (first frame << 8) | count */
};

struct gp_sym {
  struct gp_u64map by_key; /* module key -> index */
  struct smod *m;
  size_t nm, capm;
  struct gp_sym_frame *fr; /* the cached frames */
  size_t nfr, capfr;
};

int gp_sym_available(void) {
  return GP_HAVE_LIBDW;
}

gp_sym *gp_sym_new(void) {
  return calloc(1, sizeof(gp_sym));
}

void gp_sym_free(gp_sym *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nm; i++) {
#if GP_HAVE_LIBDW
    if (s->m[i].dwfl) dwfl_end(s->m[i].dwfl);
#endif
    gp_u64map_free(&s->m[i].cache);
  }
  gp_u64map_free(&s->by_key);
  free(s->m);
  free(s->fr);
  free(s);
}

static int grow(void **v, size_t *cap, size_t need, size_t elt) {
  if (need <= *cap) return 0;
  size_t n = *cap ? 2 * *cap : 16;
  while (n < need)
    n *= 2;
  void *p = realloc(*v, n * elt);
  if (!p) return -1;
  *v = p;
  *cap = n;
  return 0;
}

#if GP_HAVE_LIBDW
static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* libelf's version handshake, once per process: files are read by several
 * threads at once (gpuphase-report -j). */
static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static int elf_ok;
static void elf_init(void) {
  elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

/* 1 when the ELF file at path has exactly this build-id (nbid 0: any). */
static int same_build_id(const char *path, const uint8_t *bid, size_t nbid) {
  pthread_once(&elf_once, elf_init);
  if (!elf_ok) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = 0;
  Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  if (e && elf_kind(e) == ELF_K_ELF) {
    const void *p = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &p);
    ok = !nbid || (n > 0 && (size_t)n == nbid && !memcmp(p, bid, nbid));
  }
  if (e) elf_end(e);
  close(fd);
  return ok;
}

/* Where the build-id says the file is: DIR/.build-id/xx/rest(.debug) for
 * each directory of $GPUPHASE_DEBUGINFO_PATH (colon-separated) and then
 * /usr/lib/debug. 1 and path set when one with that build-id exists. */
static int by_build_id(const uint8_t *bid, size_t nbid, char *path,
                       size_t cap) {
  if (!nbid || nbid > 64) return 0;
  char hex[130];
  for (size_t i = 0; i < nbid; i++)
    snprintf(hex + 2 * i, 3, "%02x", bid[i]);
  const char *env = getenv("GPUPHASE_DEBUGINFO_PATH");
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s%s/usr/lib/debug", env ? env : "",
           env && *env ? ":" : "");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
       d = strtok_r(NULL, ":", &save)) {
    static const char *const suffix[] = {".debug", ""};
    for (int k = 0; k < 2; k++) {
      snprintf(path, cap, "%s/.build-id/%.2s/%s%s", d, hex, hex + 2, suffix[k]);
      if (same_build_id(path, bid, nbid) == 1) return 1;
    }
  }
  return 0;
}

static void open_module(struct smod *m, const char *path, const uint8_t *bid,
                        size_t nbid) {
  char found[4200];
  const char *file = NULL;
  int at_path = path && *path ? same_build_id(path, bid, nbid) : -1;
  if (by_build_id(bid, nbid, found, sizeof found))
    file = found;
  else if (at_path == 1)
    file = path;
  if (!file) {
    m->state = at_path == 0 ? GP_SYM_MISMATCH : GP_SYM_MISSING;
    return;
  }
  m->state = GP_SYM_MISSING;
  if (!(m->dwfl = dwfl_begin(&callbacks))) return;
  dwfl_report_begin(m->dwfl);
  m->mod =
      dwfl_report_elf(m->dwfl, path && *path ? path : file, file, -1, 0, false);
  dwfl_report_end(m->dwfl, NULL, NULL);
  if (m->mod) m->state = GP_SYM_OK;
}

/* The linkage (mangled) name of a function DIE, else its name; sym (the
 * symbol table's name at the pc, qualified) comes before the plain DWARF
 * name, which C++ leaves unqualified. */
static const char *die_name(Dwarf_Die *die, const char *sym) {
  Dwarf_Attribute at;
  const char *n = NULL;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
    n = dwarf_formstring(&at);
  if (!n && sym) return sym;
  if (!n && dwarf_attr_integrate(die, DW_AT_name, &at))
    n = dwarf_formstring(&at);
  return n;
}

/* The function DIEs containing pc under die, outermost first: the
 * subprogram, then the inlined calls nested in it (namespaces and classes
 * are looked into, lexical blocks passed through). Returns the depth. */
static int find_chain(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *chain,
                      int depth) {
  Dwarf_Die child;
  if (depth >= MAX_INLINE || dwarf_child(die, &child) != 0) return depth;
  do {
    int tag = dwarf_tag(&child);
    switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type: {
      if (depth) break; /* only around the outermost function */
      int d = find_chain(&child, pc, chain, depth);
      if (d > depth) return d;
      break;
    }
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_lexical_block:
      if (dwarf_haspc(&child, pc) != 1) break;
      if (tag == DW_TAG_lexical_block)
        return find_chain(&child, pc, chain, depth);
      if (tag == DW_TAG_inlined_subroutine && !depth) break;
      chain[depth] = child;
      return find_chain(&chain[depth], pc, chain, depth + 1);
    default:
      break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return depth;
}

/* Frames at addr: the line table's line for the innermost, then for each
 * inlined call its DW_AT_call_file/line in the caller. */
static size_t resolve(Dwfl_Module *mod, uint64_t pc, struct gp_sym_frame *out,
                      size_t cap) {
  Dwarf_Addr bias = 0;
  if (!dwfl_module_getelf(mod, &bias)) return 0;
  Dwarf_Addr addr = pc + bias;
  const char *sym = dwfl_module_addrname(mod, addr);
  const char *file = NULL;
  int line = 0;
  Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
  if (l) file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
  size_t n = 0;
  Dwarf_Addr cbias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &cbias);
  if (!cu) { /* no .debug_aranges (clang): the CU that holds the pc */
    while ((cu = dwfl_module_nextcu(mod, cu, &cbias)) &&
           dwarf_haspc(cu, addr - cbias) != 1)
      ;
    Dwarf_Line *dl = cu && !l ? dwarf_getsrc_die(cu, addr - cbias) : NULL;
    if (dl) {
      file = dwarf_linesrc(dl, NULL, NULL);
      dwarf_lineno(dl, &line);
    }
  }
  Dwarf_Die chain[MAX_INLINE];
  int nc = cu ? find_chain(cu, addr - cbias, chain, 0) : 0;
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  if (nc > 0 && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = NULL;
  /* chain: outermost (the subprogram) first; frames: innermost first */
  for (int i = nc; i-- > 0 && n < cap;) {
    int tag = dwarf_tag(&chain[i]);
    const char *name =
        die_name(&chain[i], tag == DW_TAG_subprogram ? sym : NULL);
    out[n++] = (struct gp_sym_frame){name, file, line, 0};
    if (tag == DW_TAG_subprogram) break;
    /* the caller's frame is at this inlined call's site */
    Dwarf_Attribute at;
    Dwarf_Word fi = 0, ln = 0;
    file = NULL;
    line = 0;
    if (files &&
        dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &at), &fi) == 0)
      file = dwarf_filesrc(files, fi, NULL, NULL);
    if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &at), &ln) == 0)
      line = (int)ln;
  }
  if (n > 0) { /* the callee of an inlined call is the inlined frame */
    for (size_t k = 0; k + 1 < n; k++)
      out[k].inlined = 1;
    out[n - 1].inlined = 0;
  }
  if (!n && (sym || file) && cap)
    out[n++] = (struct gp_sym_frame){sym, file, line, 0};
  return n;
}
#endif

static struct smod *module(gp_sym *s, uint64_t key, const char *path,
                           const uint8_t *bid, size_t nbid) {
  uint64_t *v = gp_u64map_get(&s->by_key, key);
  if (v) return &s->m[*v];
  if (grow((void **)&s->m, &s->capm, s->nm + 1, sizeof *s->m) < 0 ||
      gp_u64map_put(&s->by_key, key, s->nm) < 0)
    return NULL;
  struct smod *m = &s->m[s->nm++];
  memset(m, 0, sizeof *m);
  m->state = GP_SYM_NOLIB;
#if GP_HAVE_LIBDW
  open_module(m, path, bid, nbid);
#else
  (void)path, (void)bid, (void)nbid;
#endif
  return m;
}

size_t gp_sym_modules(const gp_sym *s) {
  return s->nm;
}

int gp_sym_module_state(gp_sym *s, uint64_t key) {
  uint64_t *v = gp_u64map_get(&s->by_key, key);
  return v ? s->m[*v].state : GP_SYM_MISSING;
}

size_t gp_sym_lookup(gp_sym *s, uint64_t key, const char *path,
                     const uint8_t *bid, size_t nbid, uint64_t pc,
                     struct gp_sym_frame *out, size_t cap) {
  struct smod *m = module(s, key, path, bid, nbid);
  if (!m || m->state != GP_SYM_OK) return 0;
  uint64_t *c = gp_u64map_get(&m->cache, pc);
  if (!c) {
    size_t n = 0;
    struct gp_sym_frame tmp[MAX_INLINE];
#if GP_HAVE_LIBDW
    n = resolve(m->mod, pc, tmp, MAX_INLINE);
#endif
    if (grow((void **)&s->fr, &s->capfr, s->nfr + n, sizeof *s->fr) < 0 ||
        gp_u64map_put(&m->cache, pc, ((uint64_t)s->nfr << 8) | n) < 0)
      return 0;
    memcpy(s->fr + s->nfr, tmp, n * sizeof *tmp);
    s->nfr += n;
    c = gp_u64map_get(&m->cache, pc);
  }
  size_t n = (size_t)(*c & 0xff), first = (size_t)(*c >> 8);
  if (n > cap) n = cap;
  memcpy(out, s->fr + first, n * sizeof *out);
  return n;
}
