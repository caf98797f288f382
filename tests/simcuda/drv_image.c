/* Simulated driver: what a module image holds. Reads an ELF cubin (with
 * libelf), a fatbin container (picking the entry for the device's
 * architecture, zstd-compressed entries included) or PTX text, and lists
 * its kernels (with their attributes) and its global variables. Nothing is
 * compiled or run: see README.md ("Modules") for the rules. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "drv_image.h"

#if GPUSIM_HAVE_LIBELF
#include <gelf.h>
#include <libelf.h>
#endif

/* The simulated device is compute capability 9.0. */
#define SIM_ARCH 90
/* Images bigger than this are refused (they would be no test input). */
#define MAX_IMAGE ((size_t)1 << 30)

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_FLAG_COMPRESS 0x2000u /* older compression: not read */
#define FATBIN_FLAG_ZSTD 0x8000u

void gp_image_free(gp_image *im) {
  for (size_t i = 0; i < im->nk; i++)
    free(im->k[i].name);
  for (size_t i = 0; i < im->ng; i++)
    free(im->g[i].name);
  free(im->k);
  free(im->g);
  memset(im, 0, sizeof *im);
}

static gp_kdesc *add_kernel(gp_image *im, const char *name, size_t len) {
  if (im->nk == im->capk) {
    size_t cap = im->capk ? 2 * im->capk : 8;
    gp_kdesc *k = realloc(im->k, cap * sizeof *k);
    if (!k) return NULL;
    im->k = k;
    im->capk = cap;
  }
  gp_kdesc *k = &im->k[im->nk];
  memset(k, 0, sizeof *k);
  if (!(k->name = strndup(name, len))) return NULL;
  k->regs = 32;
  k->max_threads = 1024;
  k->ptx_version = k->binary_version = SIM_ARCH;
  im->nk++;
  return k;
}

static bool add_global(gp_image *im, const char *name, size_t len,
                       size_t size) {
  if (im->ng == im->capg) {
    size_t cap = im->capg ? 2 * im->capg : 8;
    gp_gdesc *g = realloc(im->g, cap * sizeof *g);
    if (!g) return false;
    im->g = g;
    im->capg = cap;
  }
  gp_gdesc *g = &im->g[im->ng];
  if (!(g->name = strndup(name, len))) return false;
  g->size = size;
  im->ng++;
  return true;
}

/* ---- PTX text ---- */

/* The text without comments, as a NUL-terminated copy. */
static char *ptx_strip(const char *s, size_t n) {
  char *o = malloc(n + 1), *w = o;
  if (!o) return NULL;
  for (size_t i = 0; i < n;) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n')
        i++;
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
        i++;
      i += 2;
      *w++ = ' ';
    } else if (s[i] == '"') { /* strings (file names) may hold anything */
      *w++ = ' ';
      for (i++; i < n && s[i] != '"'; i++)
        ;
      i++;
    } else {
      *w++ = s[i++];
    }
  }
  *w = '\0';
  return o;
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Bytes of one element of a PTX fundamental type (.b8 ... .f64), 0 if
 * `t` is not one. */
static size_t ptx_type_size(const char *t, size_t len) {
  static const char *const names[] = {
      ".b8",  ".u8",  ".s8",  ".b16", ".u16", ".s16", ".f16", ".bf16",
      ".b32", ".u32", ".s32", ".f32", ".b64", ".u64", ".s64", ".f64"};
  static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 2, 2,
                                 4, 4, 4, 4, 8, 8, 8, 8};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i]) == len && memcmp(names[i], t, len) == 0)
      return sizes[i];
  return 0;
}

/* One whitespace-separated token from *p, its length in *len. */
static const char *token(const char **p, size_t *len) {
  const char *s = *p;
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
    s++;
  if (!*s) return NULL;
  const char *e = s;
  while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r')
    e++;
  *p = e;
  *len = (size_t)(e - s);
  return s;
}

/* A `.global`/`.shared` declaration after its state space token: its
 * name and size (element size x every [N]); false if it is none. */
static bool ptx_decl(const char **p, const char **name, size_t *nlen,
                     size_t *size) {
  size_t elem = 0, len;
  const char *t;
  while (!elem) {
    if (!(t = token(p, &len))) return false;
    if (len == 6 && memcmp(t, ".align", 6) == 0) {
      if (!token(p, &len)) return false;
      continue;
    }
    if (*t != '.') return false;
    elem = ptx_type_size(t, len);
  }
  if (!(t = token(p, &len)) || !ident_char(*t)) return false;
  *name = t;
  for (*nlen = 0; *nlen < len && ident_char(t[*nlen]); (*nlen)++)
    ;
  *size = elem;
  for (const char *b = t + *nlen; *b == '['; b = strchr(b, ']') + 1) {
    char *end;
    unsigned long long d = strtoull(b + 1, &end, 10);
    if (*end != ']' || d == 0 || d > MAX_IMAGE / *size) return false;
    *size *= d;
  }
  return true;
}

/* Kernels are the `.entry` directives; globals the module-scope `.global`
 * and `.const` declarations; a kernel's static shared memory the
 * `.shared` declarations inside its body, its thread limit `.maxntid`. The
 * `.target` must be one the device can JIT for (sm_N, N <= 90). */
static CUresult ptx_read(const char *text, size_t n, gp_image *im) {
  char *s = ptx_strip(text, n);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = CUDA_SUCCESS;
  bool version = false, target = false;
  int depth = 0;
  gp_kdesc *cur = NULL;
  const char *p = s, *t;
  size_t len;
  while (r == CUDA_SUCCESS && (t = token(&p, &len))) {
    for (size_t i = 0; i < len; i++)
      depth += t[i] == '{' ? 1 : t[i] == '}' ? -1 : 0;
    if (depth <= 0 && memchr(t, '}', len)) cur = NULL;
    if (len == 8 && memcmp(t, ".version", 8) == 0) {
      version = true;
    } else if (len == 7 && memcmp(t, ".target", 7) == 0) {
      const char *a = token(&p, &len);
      target = a && len > 3 && memcmp(a, "sm_", 3) == 0;
      if (!target || strtol(a + 3, NULL, 10) > SIM_ARCH)
        r = CUDA_ERROR_INVALID_PTX;
    } else if (len == 6 && memcmp(t, ".entry", 6) == 0) {
      const char *nm = token(&p, &len);
      size_t nl = 0;
      while (nm && nl < len && ident_char(nm[nl]))
        nl++;
      if (!nm || nl == 0)
        r = CUDA_ERROR_INVALID_PTX;
      else if (!(cur = add_kernel(im, nm, nl)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (len == 8 && memcmp(t, ".maxntid", 8) == 0 && cur) {
      long long n3 = 1;
      for (int i = 0; i < 3 && n3 > 0; i++) {
        const char *d = token(&p, &len);
        n3 *= d ? strtol(d, NULL, 10) : 0;
        if (!d || !memchr(d, ',', len)) break;
      }
      if (n3 > 0 && n3 <= 1024) cur->max_threads = (int)n3;
    } else if ((len == 7 && memcmp(t, ".global", 7) == 0 && depth == 0) ||
               (len == 6 && memcmp(t, ".const", 6) == 0 && depth == 0) ||
               (len == 7 && memcmp(t, ".shared", 7) == 0 && cur)) {
      bool global = t[1] != 's';
      const char *nm;
      size_t nl, size;
      if (!ptx_decl(&p, &nm, &nl, &size)) continue;
      if (!global)
        cur->static_shmem += (int)size;
      else if (!add_global(im, nm, nl, size))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  free(s);
  if (r == CUDA_SUCCESS && (!version || !target)) r = CUDA_ERROR_INVALID_PTX;
  return r;
}

/* ---- ELF cubin ---- */

#if GPUSIM_HAVE_LIBELF
#define STO_CUDA_ENTRY 0x10
/* .nv.info attribute formats and the attributes read */
#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f
#define RESERVED_SMEM 1024 /* ptxas's system block in .nv.shared.<k> */

static int cubin_arch(const GElf_Ehdr *eh) {
  /* ELF ABI version 8 (CUDA 12 and later) moved the SM to bits 8..15 */
  return eh->e_ident[EI_ABIVERSION] >= 8 ? (int)((eh->e_flags >> 8) & 0xff)
                                         : (int)(eh->e_flags & 0xff);
}

/* A cubin built for sm_XY runs on devices XZ with Z >= Y. */
static bool arch_runs(int arch) {
  return arch / 10 == SIM_ARCH / 10 && arch % 10 <= SIM_ARCH % 10;
}

static gp_kdesc *kernel_of_sym(gp_image *im, const size_t *ksym, size_t sym) {
  for (size_t i = 0; i < im->nk; i++)
    if (ksym[i] == sym) return &im->k[i];
  return NULL;
}

/* Reads a .nv.info section: the module-wide one (own NULL: registers and
 * frame size per kernel symbol) or a kernel's own (its thread limit). */
static void nv_info(Elf_Data *d, gp_image *im, const size_t *ksym,
                    gp_kdesc *own) {
  const unsigned char *b = d->d_buf;
  size_t n = d->d_size;
  for (size_t i = 0; i + 4 <= n;) {
    unsigned fmt = b[i], attr = b[i + 1];
    size_t vlen = fmt == EIFMT_SVAL ? (size_t)(b[i + 2] | b[i + 3] << 8) : 0;
    const unsigned char *v = b + i + 4;
    i += 4 + vlen;
    if (i > n) break;
    uint32_t w[3] = {0, 0, 0};
    memcpy(w, v, vlen < sizeof w ? vlen : sizeof w);
    if (own) {
      if (attr == EIATTR_MAX_THREADS && vlen >= 12) {
        uint64_t t = (uint64_t)w[0] * w[1] * w[2];
        if (t > 0 && t <= 1024) own->max_threads = (int)t;
      }
      continue;
    }
    gp_kdesc *k = vlen >= 8 ? kernel_of_sym(im, ksym, w[0]) : NULL;
    if (!k || w[1] > INT32_MAX) continue;
    if (attr == EIATTR_REGCOUNT)
      k->regs = (int)w[1];
    else if (attr == EIATTR_FRAME_SIZE)
      k->local = (int)w[1];
  }
}

static CUresult elf_scan(Elf *e, gp_image *im) {
  GElf_Ehdr eh;
  size_t shstr;
  if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_CUDA ||
      elf_getshdrstrndx(e, &shstr) != 0)
    return CUDA_ERROR_INVALID_IMAGE;
  Elf_Scn *symscn = NULL, *scn = NULL;
  GElf_Shdr sh;
  while ((scn = elf_nextscn(e, scn)))
    if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) symscn = scn;
  if (!symscn) return CUDA_ERROR_INVALID_IMAGE;
  Elf_Data *syms = elf_getdata(symscn, NULL);
  if (!syms || !gelf_getshdr(symscn, &sh) || sh.sh_entsize == 0)
    return CUDA_ERROR_INVALID_IMAGE;
  size_t nsym = sh.sh_size / sh.sh_entsize, strndx = sh.sh_link;
  size_t *ksym = calloc(nsym ? nsym : 1, sizeof *ksym);
  if (!ksym) return CUDA_ERROR_OUT_OF_MEMORY;
  bool reserved = false;
  CUresult r = CUDA_SUCCESS;
  for (size_t i = 0; i < nsym && r == CUDA_SUCCESS; i++) {
    GElf_Sym s;
    const char *nm;
    if (!gelf_getsym(syms, (int)i, &s) ||
        !(nm = elf_strptr(e, strndx, s.st_name))) {
      r = CUDA_ERROR_INVALID_IMAGE;
      break;
    }
    if (strncmp(nm, ".nv.reservedSmem", 16) == 0) reserved = true;
    if (s.st_shndx == SHN_UNDEF || !*nm) continue;
    if (GELF_ST_TYPE(s.st_info) == STT_FUNC && (s.st_other & STO_CUDA_ENTRY)) {
      ksym[im->nk] = i;
      if (!add_kernel(im, nm, strlen(nm)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
      else
        im->k[im->nk - 1].ptx_version = im->k[im->nk - 1].binary_version =
            cubin_arch(&eh);
    } else if (GELF_ST_TYPE(s.st_info) == STT_OBJECT) {
      Elf_Scn *in = elf_getscn(e, s.st_shndx);
      const char *sn =
          in && gelf_getshdr(in, &sh) ? elf_strptr(e, shstr, sh.sh_name) : NULL;
      if (sn &&
          (strncmp(sn, ".nv.global", 10) == 0 ||
           strncmp(sn, ".nv.constant", 12) == 0) &&
          !add_global(im, nm, strlen(nm), s.st_size))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  for (scn = NULL; r == CUDA_SUCCESS && (scn = elf_nextscn(e, scn));) {
    const char *sn;
    if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(e, shstr, sh.sh_name)))
      continue;
    if (strncmp(sn, ".nv.shared.", 11) == 0) {
      for (size_t i = 0; i < im->nk; i++)
        if (strcmp(im->k[i].name, sn + 11) == 0) {
          uint64_t sz = sh.sh_size;
          if (reserved && sz >= RESERVED_SMEM) sz -= RESERVED_SMEM;
          im->k[i].static_shmem = sz > INT32_MAX ? INT32_MAX : (int)sz;
        }
    } else if (strcmp(sn, ".nv.info") == 0 ||
               strncmp(sn, ".nv.info.", 9) == 0) {
      Elf_Data *d = elf_getdata(scn, NULL);
      gp_kdesc *own = NULL;
      for (size_t i = 0; sn[8] && i < im->nk; i++)
        if (strcmp(im->k[i].name, sn + 9) == 0) own = &im->k[i];
      if (!d || (sn[8] && !own)) continue;
      nv_info(d, im, ksym, own);
    }
  }
  free(ksym);
  if (r == CUDA_SUCCESS && !arch_runs(cubin_arch(&eh)))
    r = CUDA_ERROR_NO_BINARY_FOR_GPU;
  return r;
}

static void elf_init(void) {
  elf_version(EV_CURRENT);
}

static CUresult elf_read(const void *p, size_t n, gp_image *im) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, elf_init);
  /* libelf may write to the image it reads: give it a copy */
  char *copy = malloc(n);
  if (!copy) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(copy, p, n);
  Elf *e = elf_memory(copy, n);
  CUresult r = CUDA_ERROR_INVALID_IMAGE;
  if (e && elf_kind(e) == ELF_K_ELF && gelf_getclass(e) == ELFCLASS64)
    r = elf_scan(e, im);
  elf_end(e);
  free(copy);
  return r;
}

#endif

/* ---- fatbin container ---- */

typedef struct fat_entry {
  uint16_t kind, version;
  uint32_t header_size;
  uint64_t size;
  uint32_t compressed_size, unknown0;
  uint16_t minor, major;
  uint32_t arch;
  uint32_t name_offset, name_len;
  uint64_t flags, zero, uncompressed_size;
} fat_entry;

static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The payload of one entry, decompressed if it is zstd: *buf is then
 * malloc'ed. NULL payload: an entry that cannot be read. */
static CUresult fat_payload(const fat_entry *fe, const unsigned char *data,
                            const void **out, size_t *len, void **buf) {
  *buf = NULL;
  *out = NULL;
  if (fe->flags & FATBIN_FLAG_ZSTD) {
    size_t want = fe->uncompressed_size;
    if (want == 0 || want > MAX_IMAGE || fe->compressed_size > fe->size)
      return CUDA_ERROR_INVALID_IMAGE;
    if (!(*buf = malloc(want + 1))) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t got = ZSTD_decompress(*buf, want, data, fe->compressed_size);
    if (ZSTD_isError(got) || got != want) {
      free(*buf);
      *buf = NULL;
      return CUDA_ERROR_INVALID_IMAGE;
    }
    ((char *)*buf)[want] = '\0';
    *out = *buf;
    *len = want;
  } else if (!(fe->flags & FATBIN_FLAG_COMPRESS)) {
    *out = data;
    *len = fe->size;
  }
  return CUDA_SUCCESS;
}

/* The ELF entry with the highest architecture the device runs, else the
 * PTX entry with the highest target the device can JIT for. */
static CUresult fat_read(const unsigned char *p, size_t n, gp_image *im) {
  if (n < 16 || rd32(p) != FATBIN_MAGIC) return CUDA_ERROR_INVALID_IMAGE;
  size_t hs = (size_t)(p[6] | p[7] << 8);
  uint64_t fat = rd64(p + 8);
  if (hs < 16 || hs > n || fat > n - hs) return CUDA_ERROR_INVALID_IMAGE;
  const unsigned char *best_elf = NULL, *best_ptx = NULL;
  fat_entry elf_e = {0}, ptx_e = {0};
  for (uint64_t off = hs; off < hs + fat;) {
    if (hs + fat - off < 64) return CUDA_ERROR_INVALID_IMAGE;
    const unsigned char *q = p + off;
    fat_entry fe = {
        .kind = (uint16_t)(q[0] | q[1] << 8),
        .header_size = rd32(q + 4),
        .size = rd64(q + 8),
        .compressed_size = rd32(q + 16),
        .arch = rd32(q + 28),
        .flags = rd64(q + 40),
        .uncompressed_size = rd64(q + 56),
    };
    if (fe.header_size < 64 || fe.header_size > hs + fat - off ||
        fe.size > hs + fat - off - fe.header_size)
      return CUDA_ERROR_INVALID_IMAGE;
    const unsigned char *data = q + fe.header_size;
    if (fe.kind == FATBIN_KIND_ELF && fe.arch / 10 == SIM_ARCH / 10 &&
        fe.arch % 10 <= SIM_ARCH % 10 && (!best_elf || fe.arch > elf_e.arch)) {
      best_elf = data;
      elf_e = fe;
    } else if (fe.kind == FATBIN_KIND_PTX && fe.arch <= SIM_ARCH &&
               (!best_ptx || fe.arch > ptx_e.arch)) {
      best_ptx = data;
      ptx_e = fe;
    }
    off += fe.header_size + fe.size;
  }
  const fat_entry *fe = best_elf ? &elf_e : &ptx_e;
  const unsigned char *data = best_elf ? best_elf : best_ptx;
  if (!data) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  const void *img;
  size_t len;
  void *buf;
  CUresult r = fat_payload(fe, data, &img, &len, &buf);
  if (r == CUDA_SUCCESS && !img) r = CUDA_ERROR_NOT_SUPPORTED;
  if (r == CUDA_SUCCESS && best_elf) {
#if GPUSIM_HAVE_LIBELF
    r = elf_read(img, len, im);
#else
    r = CUDA_ERROR_NOT_SUPPORTED;
#endif
  } else if (r == CUDA_SUCCESS) {
    const char *nul = memchr(img, '\0', len);
    r = ptx_read(img, nul ? (size_t)(nul - (const char *)img) : len, im);
  }
  free(buf);
  return r;
}

/* ---- any image ---- */

/* Compares byte by byte, so never reads past the NUL of a short text. */
static bool starts(const unsigned char *p, const char *magic) {
  for (size_t i = 0; i < 4; i++)
    if (p[i] != (unsigned char)magic[i]) return false;
  return true;
}
#define ELF_MAG "\177ELF"
#define FAT_MAG "\x50\xed\x55\xba"
#define FATC_MAG "\xb1\x43\x62\x46"

/* How many bytes an image in memory spans, from its own headers: the
 * driver's cuModuleLoadData is given no length. 0: not an image. */
static size_t image_extent(const unsigned char *p, int *kind) {
  if (starts(p, ELF_MAG)) {
    *kind = 'E';
    if (p[4] != 2) return 0; /* ELFCLASS64 */
    uint64_t phoff = rd64(p + 0x20), shoff = rd64(p + 0x28);
    uint16_t phent, phnum, shent, shnum;
    memcpy(&phent, p + 0x36, 2);
    memcpy(&phnum, p + 0x38, 2);
    memcpy(&shent, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    uint64_t a = phoff + (uint64_t)phent * phnum;
    uint64_t b = shoff + (uint64_t)shent * shnum;
    uint64_t end = a > b ? a : b;
    if (end < 64) end = 64;
    return end > MAX_IMAGE || phoff > MAX_IMAGE || shoff > MAX_IMAGE
               ? 0
               : (size_t)end;
  }
  if (starts(p, FAT_MAG)) {
    *kind = 'F';
    uint64_t hs = (uint64_t)(p[6] | p[7] << 8), fat = rd64(p + 8);
    return fat > MAX_IMAGE ? 0 : (size_t)(hs + fat);
  }
  *kind = 'P';
  size_t len = strnlen((const char *)p, MAX_IMAGE);
  return len < MAX_IMAGE ? len : 0;
}

CUresult gp_image_read(const void *image, size_t n, gp_image *im) {
  memset(im, 0, sizeof *im);
  if (!image) return CUDA_ERROR_INVALID_VALUE;
  const unsigned char *p = image;
  if (n == GP_IMAGE_UNSIZED) {
    /* the fatbin wrapper nvcc embeds points at the container */
    if (starts(p, FATC_MAG)) {
      const void *data;
      memcpy(&data, p + 8, sizeof data);
      if (!data) return CUDA_ERROR_INVALID_IMAGE;
      p = data;
    }
  }
  CUresult r;
  int kind = 0;
  if (n == GP_IMAGE_UNSIZED) {
    n = image_extent(p, &kind);
    if (n == 0) return CUDA_ERROR_INVALID_IMAGE;
  } else if (n >= 4 && memcmp(p, "\177ELF", 4) == 0) {
    kind = 'E';
  } else if (n >= 16 && rd32(p) == FATBIN_MAGIC) {
    kind = 'F';
  } else {
    const char *nul = memchr(p, '\0', n);
    if (nul) n = (size_t)(nul - (const char *)p);
    kind = 'P';
  }
  if (kind == 'E') {
#if GPUSIM_HAVE_LIBELF
    r = elf_read(p, n, im);
#else
    r = CUDA_ERROR_NOT_SUPPORTED;
#endif
  } else if (kind == 'F') {
    r = fat_read(p, n, im);
  } else {
    /* text that is no PTX at all is a bad image, not bad PTX */
    r = memmem(p, n, ".version", 8) || memmem(p, n, ".entry", 6)
            ? ptx_read((const char *)p, n, im)
            : CUDA_ERROR_INVALID_IMAGE;
  }
  if (r != CUDA_SUCCESS) gp_image_free(im);
  return r;
}
