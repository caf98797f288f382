/* The calling thread's Python frames, read from the interpreter's structs
 * without the GIL and without calling into the interpreter from a capture
 * (docs/callsites.md, "Python frames").
 *
 * Found with dlsym(RTLD_DEFAULT): works where libpython is linked into the
 * executable (Debian's python3) or loaded globally (libpython3.x.so). The
 * thread's state comes from PyGILState_GetThisThreadState (a TLS read that
 * stays set while the thread has released the GIL); from it the frame chain:
 *   3.9, 3.10  tstate->frame, frame objects: f_back, f_code, f_lasti
 *              (bytes in 3.9, code units in 3.10); each frame object is run
 *              by its own _PyEval_EvalFrameDefault call: every one is ENTRY;
 *   3.11       tstate->cframe->current_frame, _PyInterpreterFrame: previous,
 *              f_code, prev_instr, is_entry (ENTRY);
 *   3.12       as 3.11, no is_entry: frames owned by the C stack (owner 3)
 *              mark where one evaluation-loop call starts; skipped, and
 *              the Python frame just inside one (or the outermost) is ENTRY;
 *   3.13, 3.14 tstate->current_frame, offsets from _PyRuntime.debug_offsets
 *              (cookie "xdebugpy"; free-threaded builds refused); frames
 *              with owner >= 3 (C stack, interpreter) or whose executable is
 *              not a code object are skipped; in 3.14 f_executable is a
 *              _PyStackRef whose low bits are tags.
 * The offsets of 3.9-3.12 are our own tables from those versions' headers
 * (Include/cpython/pystate.h, Include/cpython/frameobject.h,
 * Include/internal/pycore_frame.h, Include/cpython/code.h,
 * Include/cpython/unicodeobject.h, Include/cpython/bytesobject.h).
 * Tested here: 3.9.18, 3.10.13, 3.11.7 (pyenv and Debian's statically
 * linked 3.11), 3.12.1, 3.13.0. 3.14: from its pycore_debug_offsets.h only.
 *
 * Why direct reads are safe enough: a process_vm_readv of our own memory
 * would make every capture a system call, and a copy that survives faults
 * would need a SIGSEGV handler of our own in the application. Instead the
 * layout is checked once against the C API (below) and captures then read
 * directly, only along the calling thread's own frame chain: while that
 * thread is inside a C call, only it could push or pop its frames, each
 * frame holds a reference to its code object, and the code object to its
 * strings. Every pointer is still checked (non-null, aligned, in the user
 * half of the address space), code, str and bytes objects by their type
 * pointer, and the walk is bounded. What this cannot survive is memory the
 * interpreter frees under us: a daemon thread's state freed by Py_Finalize
 * while it sits in a CUDA call; Py_IsInitialized (a field read), checked
 * first, closes most of that window.
 *
 * The check: gp_py_start schedules a callback with Py_AddPendingCall
 * (documented callable from any thread without the GIL); the interpreter
 * runs it in its main thread holding the GIL. There the raw walk of that
 * thread's frames is compared with PyEval_GetFrame / PyFrame_GetBack /
 * PyFrame_GetCode / PyFrame_GetLineNumber, and each code object's
 * description with its co_filename, co_qualname (co_name before 3.11),
 * co_firstlineno and line table attributes. Until it has run, captures
 * return 0; on any difference capture turns off with one stderr line. */
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gp_pyframes.h"
#include "pyline.h"

#define GP_FRAME_ENTRY 1u /* GPUPHASE_FRAME_ENTRY (trace_records.h) */

/* Frames followed per capture at most, skipped ones included. */
#define WALK_LIMIT 4096

/* gp_warn of the shim when linked with it (it honours GPUPHASE_QUIET);
 * the test library has its own line. */
void gp_warn(const char *fmt, ...) __attribute__((weak, format(printf, 1, 2)));

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (gp_warn) {
    gp_warn("%s", msg);
  } else {
    char line[300];
    int n = snprintf(line, sizeof line, "gpuphase: %s\n", msg);
    if (n > 0) {
      ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
      (void)w;
    }
  }
}

enum { ST_NONE, ST_PENDING, ST_CHECKING, ST_ON, ST_OFF };
static _Atomic int state = ST_NONE;
static _Atomic int started; /* gp_py_start ran (its result in start_result) */
static int start_result;

/* How the frames of one version are laid out. */
enum { FR_OBJECT, FR_INTERP311, FR_INTERP312, FR_INTERP313 };
static struct layout {
  uint32_t version; /* PY_VERSION_HEX */
  int minor, kind;
  /* thread state */
  uint32_t ts_frame;        /* frame (3.9/3.10), current_frame (3.13+) */
  uint32_t ts_cframe, cf_current; /* 3.11/3.12 */
  /* frame */
  uint32_t f_back, f_code, f_instr, f_owner, f_entry;
  int lasti_bytes; /* 3.9: f_lasti counts bytes */
  int code_tagged; /* 3.14: f_executable is a _PyStackRef */
  /* code object */
  uint32_t co_filename, co_name, co_firstlineno, co_linetable, co_adaptive;
  /* objects */
  uint32_t ob_type, str_length, str_state, str_ascii_size, str_compact_size;
  uint32_t bytes_size, bytes_sval;
} L;

/* From the interpreter, found at start. */
static struct {
  void *(*get_ts)(void);
  int (*is_initialized)(void);
  int (*add_pending)(int (*)(void *), void *);
  uintptr_t code_type, str_type, bytes_type;
  /* the check (GIL held) */
  void *(*eval_get_frame)(void);
  void *(*frame_get_code)(void *);
  void *(*frame_get_back)(void *);
  int (*frame_get_line)(void *);
  void *(*get_attr)(void *, const char *);
  const char *(*str_utf8)(void *);
  char *(*bytes_data)(void *);
  intptr_t (*bytes_size)(void *);
  long long (*long_value)(void *);
  void (*decref)(void *);
  void (*err_clear)(void);
  void *eval_fn;
} P;

/* ---- plain reads, for pointers already judged plausible */
static inline int plausible(uintptr_t p) {
  return p >= 4096 && p < ((uintptr_t)1 << 47) && !(p & 7);
}
static inline uintptr_t rd_ptr(uintptr_t p, uint32_t off) {
  return *(const uintptr_t *)(p + off);
}
static inline int32_t rd_i32(uintptr_t p, uint32_t off) {
  return *(const int32_t *)(p + off);
}
static inline int is_type(const struct layout *l, uintptr_t obj, uintptr_t type) {
  return plausible(obj) && rd_ptr(obj, l->ob_type) == type;
}

/* The code object of a frame; 0 when it is not one. */
static inline uintptr_t frame_code(const struct layout *l, uintptr_t f) {
  uintptr_t c = rd_ptr(f, l->f_code);
  if (l->code_tagged)
    c &= ~(uintptr_t)3;
  return is_type(l, c, P.code_type) ? c : 0;
}

/* The frame's 2-byte code unit. */
static inline uint32_t frame_unit(const struct layout *l, uintptr_t f, uintptr_t code) {
  if (l->kind == FR_OBJECT) {
    int32_t lasti = rd_i32(f, l->f_instr);
    if (lasti < 0)
      return 0;
    return l->lasti_bytes ? (uint32_t)lasti / 2 : (uint32_t)lasti;
  }
  uintptr_t ip = rd_ptr(f, l->f_instr), base = code + l->co_adaptive;
  if (ip < base || ip - base > ((uintptr_t)1 << 32))
    return 0; /* not started (ip one unit before the code) */
  return (uint32_t)((ip - base) / 2);
}

/* Python frames after 3.11 that are not code: C-stack entry frames and
 * 3.13's other executables. */
static inline int frame_skipped(const struct layout *l, uintptr_t f) {
  if (l->kind == FR_INTERP312 || l->kind == FR_INTERP313)
    return *(const uint8_t *)(f + l->f_owner) >= 3;
  return 0;
}

static inline uint64_t code_tag(const struct layout *l, uintptr_t code) {
  uint64_t lt = rd_ptr(code, l->co_linetable), nm = rd_ptr(code, l->co_name);
  uint64_t fl = (uint64_t)(uint32_t)rd_i32(code, l->co_firstlineno);
  return lt ^ ((nm << 21) | (nm >> 43)) ^ (fl * 0x9e3779b97f4a7c15ull);
}

static uintptr_t first_frame(const struct layout *l, uintptr_t ts) {
  if (l->kind == FR_INTERP311 || l->kind == FR_INTERP312) {
    uintptr_t cf = rd_ptr(ts, l->ts_cframe);
    if (!plausible(cf))
      return 0;
    return rd_ptr(cf, l->cf_current);
  }
  return rd_ptr(ts, l->ts_frame);
}

/* The raw walk, innermost first. */
static int walk(struct gp_pyframe *out, int max) {
  /* a copy the stores to out cannot alias (-fno-strict-aliasing) */
  const struct layout lay = L, *l = &lay;
  if (max <= 0 || !P.is_initialized())
    return 0;
  uintptr_t ts = (uintptr_t)P.get_ts();
  if (!plausible(ts))
    return 0;
  uintptr_t f = first_frame(l, ts), prev = 0;
  int n = 0;
  for (int steps = 0; f && steps < WALK_LIMIT; steps++) {
    if (!plausible(f) || f == prev)
      break;
    uintptr_t code;
    int skip = frame_skipped(l, f);
    if (skip || !(code = frame_code(l, f))) {
      if (!skip && l->kind != FR_INTERP313)
        break; /* not a code object where one must be */
      /* a frame of the C stack: the run just inside it ends there */
      if (skip && n > 0)
        out[n - 1].flags |= GP_FRAME_ENTRY;
      prev = f;
      f = rd_ptr(f, l->f_back);
      continue;
    }
    if (n == max)
      break; /* one frame past the end was looked at: done */
    out[n].code = code;
    out[n].tag = code_tag(l, code);
    out[n].unit = frame_unit(l, f, code);
    out[n].flags = 0;
    if (l->kind == FR_OBJECT ||
        (l->kind == FR_INTERP311 && *(const uint8_t *)(f + l->f_entry)))
      out[n].flags = GP_FRAME_ENTRY;
    n++;
    prev = f;
    f = rd_ptr(f, l->f_back);
  }
  if (!f && n > 0)
    out[n - 1].flags |= GP_FRAME_ENTRY; /* the outermost of all */
  return n;
}

int gp_py_capture(struct gp_pyframe *out, int max) {
  if (atomic_load_explicit(&state, memory_order_acquire) != ST_ON)
    return 0;
  return walk(out, max);
}

/* ---- describing a code object */

static size_t utf8_put(char *dst, size_t at, size_t cap, uint32_t c) {
  char b[4];
  size_t k;
  if (c < 0x80) {
    b[0] = (char)c;
    k = 1;
  } else if (c < 0x800) {
    b[0] = (char)(0xc0 | (c >> 6));
    b[1] = (char)(0x80 | (c & 63));
    k = 2;
  } else if (c < 0x10000) {
    b[0] = (char)(0xe0 | (c >> 12));
    b[1] = (char)(0x80 | ((c >> 6) & 63));
    b[2] = (char)(0x80 | (c & 63));
    k = 3;
  } else {
    b[0] = (char)(0xf0 | ((c >> 18) & 7));
    b[1] = (char)(0x80 | ((c >> 12) & 63));
    b[2] = (char)(0x80 | ((c >> 6) & 63));
    b[3] = (char)(0x80 | (c & 63));
    k = 4;
  }
  if (at + k > cap - 1)
    return 0; /* truncated, never inside a character */
  memcpy(dst + at, b, k);
  return k;
}

/* A str object's text as UTF-8: compact strings (every code object's),
 * ASCII copied, Latin-1/UCS-2/UCS-4 encoded; anything else "?". */
static void read_str(uintptr_t s, char *dst, size_t cap) {
  strcpy(dst, "?");
  if (!is_type(&L, s, P.str_type))
    return;
  int64_t len = *(const int64_t *)(s + L.str_length);
  uint32_t st = *(const uint32_t *)(s + L.str_state);
  unsigned kind = (st >> 2) & 7, compact = (st >> 5) & 1, ascii = (st >> 6) & 1;
  if (!compact || len < 0 || len > (1 << 24))
    return;
  size_t at = 0;
  if (ascii) {
    size_t n = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
    memcpy(dst, (const char *)(s + L.str_ascii_size), n);
    dst[n] = 0;
    return;
  }
  const uint8_t *data = (const uint8_t *)(s + L.str_compact_size);
  if (kind != 1 && kind != 2 && kind != 4)
    return;
  for (int64_t i = 0; i < len; i++) {
    uint32_t c = kind == 1   ? data[i]
                 : kind == 2 ? ((const uint16_t *)data)[i]
                             : ((const uint32_t *)data)[i];
    size_t k = utf8_put(dst, at, cap, c);
    if (!k)
      break;
    at += k;
  }
  dst[at] = 0;
}

static int describe(uintptr_t code, struct gp_pycode_desc *d) {
  if (!is_type(&L, code, P.code_type))
    return -1;
  read_str(rd_ptr(code, L.co_filename), d->file, sizeof d->file);
  read_str(rd_ptr(code, L.co_name), d->name, sizeof d->name);
  d->first_line = rd_i32(code, L.co_firstlineno);
  d->py_version = L.version;
  d->linetable_len = 0;
  uintptr_t b = rd_ptr(code, L.co_linetable);
  if (!is_type(&L, b, P.bytes_type))
    return -1;
  int64_t n = *(const int64_t *)(b + L.bytes_size);
  if (n < 0)
    return -1;
  const uint8_t *t = (const uint8_t *)(b + L.bytes_sval);
  if (n > (int64_t)sizeof d->linetable) {
    /* cut between two entries, so that the units past the cut read as
     * "not said" (the first line) rather than as a corrupt table: 3.11+
     * entries start with a byte whose high bit is set; 3.9/3.10 tables are
     * pairs (the size is even) */
    n = sizeof d->linetable;
    if (L.minor >= 11)
      while (n > 0 && !(t[n] & 0x80))
        n--;
  }
  memcpy(d->linetable, t, (size_t)n);
  d->linetable_len = (uint32_t)n;
  return 0;
}

int gp_py_describe(uint64_t code, struct gp_pycode_desc *d) {
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s != ST_ON && s != ST_CHECKING)
    return -1;
  return describe((uintptr_t)code, d);
}

/* ---- the check, in the interpreter's main thread with the GIL held */

#define CHECK_FRAMES 256
static int check_tries;

static void turn_off(const char *why) {
  atomic_store_explicit(&state, ST_OFF, memory_order_release);
  say("Python call sites off: %s", why);
}

/* 0 when the attribute matches the text or number; 1 when not. */
static int attr_str_differs(void *code, const char *attr, const char *want,
                            size_t cap) {
  void *o = P.get_attr(code, attr);
  if (!o) {
    P.err_clear();
    return 1;
  }
  const char *s = P.str_utf8(o);
  int bad;
  if (!s) {
    P.err_clear();
    bad = 1;
  } else if (!strcmp(want, "?")) {
    bad = 0; /* a string this reader does not decode */
  } else {
    size_t n = strlen(want);
    /* equal, or a truncation of it */
    bad = strncmp(s, want, n) || (s[n] && n + 4 < cap);
  }
  P.decref(o);
  return bad;
}

static int desc_differs(void *code, const struct gp_pycode_desc *d) {
  if (attr_str_differs(code, "co_filename", d->file, sizeof d->file) ||
      attr_str_differs(code, L.minor >= 11 ? "co_qualname" : "co_name", d->name,
                       sizeof d->name))
    return 1;
  void *o = P.get_attr(code, "co_firstlineno");
  if (!o) {
    P.err_clear();
    return 1;
  }
  long long fl = P.long_value(o);
  P.decref(o);
  if (fl != d->first_line)
    return 1;
  o = P.get_attr(code, L.minor == 9 ? "co_lnotab" : "co_linetable");
  if (!o) {
    P.err_clear();
    return 1;
  }
  const char *t = P.bytes_data(o);
  intptr_t n = P.bytes_size(o);
  int bad = !t || n < (intptr_t)d->linetable_len ||
            (n <= (intptr_t)sizeof d->linetable && n != (intptr_t)d->linetable_len) ||
            memcmp(t, d->linetable, d->linetable_len);
  if (!t)
    P.err_clear();
  P.decref(o);
  return bad;
}

static int check_cb(void *arg) {
  (void)arg;
  int expect = ST_PENDING;
  if (!atomic_compare_exchange_strong(&state, &expect, ST_CHECKING))
    return 0;
  static struct gp_pyframe raw[CHECK_FRAMES];
  static struct gp_pycode_desc desc;
  int n = walk(raw, CHECK_FRAMES);
  char why[160] = "";
  int i = 0;
  void *f = P.eval_get_frame(); /* borrowed */
  int own = 0;                  /* f is a reference of ours */
  while (f && !why[0]) {
    if (i >= n && n == CHECK_FRAMES)
      break; /* a deeper stack than compared: the first ones agreed */
    if (i >= n) {
      snprintf(why, sizeof why, "the frame walk found %d frames, the interpreter more", n);
      break;
    }
    void *code = P.frame_get_code(f); /* new reference */
    int line = P.frame_get_line(f);
    if ((uintptr_t)code != raw[i].code) {
      snprintf(why, sizeof why, "frame %d: code object differs", i);
    } else if (describe(raw[i].code, &desc)) {
      snprintf(why, sizeof why, "frame %d: code object unreadable", i);
    } else if (desc_differs(code, &desc)) {
      snprintf(why, sizeof why, "frame %d: code object fields differ", i);
    } else {
      int64_t got = gp_pyline(desc.py_version, desc.linetable, desc.linetable_len,
                              desc.first_line, raw[i].unit);
      uintptr_t b = rd_ptr(raw[i].code, L.co_linetable);
      int cut = *(const int64_t *)(b + L.bytes_size) > (int64_t)desc.linetable_len;
      if (!cut && got != line) /* (a cut table's last lines are not said) */
        snprintf(why, sizeof why, "frame %d: line %lld, the interpreter says %d", i,
                 (long long)got, line);
    }
    if (code)
      P.decref(code);
    void *back = P.frame_get_back(f); /* new reference */
    if (own)
      P.decref(f);
    f = back;
    own = 1;
    i++;
  }
  if (own && f)
    P.decref(f);
  if (!why[0] && i < n)
    snprintf(why, sizeof why, "the frame walk found %d frames, the interpreter %d", n, i);
  if (!why[0] && n > 0 && n < CHECK_FRAMES && !(raw[n - 1].flags & GP_FRAME_ENTRY))
    snprintf(why, sizeof why, "the outermost frame is not marked as an entry");
  if (!why[0] && n == 0) {
    /* nothing to compare: try again at the next opportunity */
    atomic_store(&state, ST_PENDING);
    if (++check_tries < 100 && P.add_pending(check_cb, NULL) == 0)
      return 0;
    snprintf(why, sizeof why, "no Python frame to check the layout against");
  }
  if (why[0]) {
    char msg[220];
    snprintf(msg, sizeof msg, "Python %u.%u: frame layout check failed (%s)",
             L.version >> 24, (L.version >> 16) & 0xff, why);
    turn_off(msg);
  } else {
    atomic_store_explicit(&state, ST_ON, memory_order_release);
  }
  return 0;
}

/* ---- start */

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

/* PY_VERSION_HEX from a version text: "3.10.13 (main, ...", "3.12.0rc1". */
static uint32_t parse_version(const char *s) {
  unsigned v[3] = {0, 0, 0};
  int i = 0;
  for (; i < 3; i++) {
    if (*s < '0' || *s > '9')
      break;
    while (*s >= '0' && *s <= '9' && v[i] < 1000)
      v[i] = v[i] * 10 + (unsigned)(*s++ - '0');
    if (*s != '.')
      break;
    s++;
  }
  if (i < 2 || v[0] > 255 || v[1] > 255 || v[2] > 255)
    return 0;
  unsigned level = 0xf, serial = 0;
  if (s[0] == 'a' || s[0] == 'b' || (s[0] == 'r' && s[1] == 'c')) {
    level = s[0] == 'a' ? 0xa : s[0] == 'b' ? 0xb : 0xc;
    s += s[0] == 'r' ? 2 : 1;
    while (*s >= '0' && *s <= '9' && serial < 16)
      serial = serial * 10 + (unsigned)(*s++ - '0');
  }
  return v[0] << 24 | v[1] << 16 | v[2] << 8 | level << 4 | (serial & 15);
}

/* The static tables of 3.9-3.12. */
static int layout_static(int minor) {
  L.ob_type = 8;
  L.str_length = 16;
  L.str_state = 32;
  L.bytes_size = 16;
  L.bytes_sval = 32;
  L.str_ascii_size = minor >= 12 ? 40 : 48;
  L.str_compact_size = minor >= 12 ? 56 : 72;
  switch (minor) {
  case 9:
  case 10:
    L.kind = FR_OBJECT;
    L.ts_frame = 24;
    L.f_back = 24;
    L.f_code = 32;
    L.f_instr = minor == 9 ? 104 : 96;
    L.lasti_bytes = minor == 9;
    L.co_firstlineno = 40;
    L.co_filename = 104;
    L.co_name = 112;
    L.co_linetable = 120; /* co_lnotab in 3.9 */
    return 1;
  case 11:
    L.kind = FR_INTERP311;
    L.ts_cframe = 56;
    L.cf_current = 8;
    L.f_code = 32;
    L.f_back = 48;
    L.f_instr = 56;
    L.f_entry = 68;
    L.f_owner = 69;
    L.co_firstlineno = 72;
    L.co_filename = 112;
    L.co_name = 128; /* co_qualname */
    L.co_linetable = 136;
    L.co_adaptive = 184;
    return 1;
  case 12:
    L.kind = FR_INTERP312;
    L.ts_cframe = 56;
    L.cf_current = 0;
    L.f_code = 0;
    L.f_back = 8;
    L.f_instr = 56;
    L.f_owner = 70;
    L.co_firstlineno = 68;
    L.co_filename = 112;
    L.co_name = 128;
    L.co_linetable = 136;
    L.co_adaptive = 192;
    return 1;
  }
  return 0;
}

/* 3.13 and 3.14 from _PyRuntime.debug_offsets: the index of each field in
 * that array of uint64_t, from pycore_runtime.h of 3.13 and
 * pycore_debug_offsets.h of 3.14. 3.14's development had two layouts
 * (with and without interpreter_state.code_object_generation and
 * tlbc_generation, interpreter_frame.tlbc_index, code_object.co_tlbc);
 * both are tried, and a table is taken only where the fields whose values
 * are known (thread state prev/next/interp 0/8/16, PyObject size 16 and
 * ob_type 8, bytes ob_size 16 and ob_sval 32, str length 16) have them. */
struct dbg_index {
  int ts_prev, ts_next, ts_interp, ts_current_frame;
  int f_previous, f_executable, f_instr_ptr, f_owner;
  int co_filename, co_qualname, co_linetable, co_firstlineno, co_adaptive;
  int ob_type, bytes_size, bytes_sval, str_state, str_length, str_ascii_size;
};
static const struct dbg_index dbg313 = {20, 21, 22, 23, 29, 30, 31, 33, 35, 37, 38,
                                        39, 43, 45, 65, 66, 68, 69, 70};
static const struct dbg_index dbg314[] = {
    {23, 24, 25, 26, 32, 33, 34, 36, 40, 42, 43, 44, 48, 51, 75, 76, 78, 79, 80},
    {21, 22, 23, 24, 30, 31, 32, 34, 37, 39, 40, 41, 45, 47, 71, 72, 74, 75, 76},
};

static int dbg_fits(const uint64_t *d, const struct dbg_index *x) {
  if (d[x->ts_prev] != 0 || d[x->ts_next] != 8 || d[x->ts_interp] != 16 ||
      d[x->ob_type] != 8 || d[x->ob_type - 1] != 16 || d[x->bytes_size] != 16 ||
      d[x->bytes_sval] != 32 || d[x->str_length] != 16)
    return 0;
  for (const int *p = &x->ts_prev; p <= &x->str_ascii_size; p++)
    if (d[*p] > 4096)
      return 0;
  return 1;
}

static const char *layout_debug_offsets(int minor) {
  const uint64_t *d = sym("_PyRuntime");
  if (!d)
    return "no _PyRuntime symbol";
  if (memcmp(d, "xdebugpy", 8))
    return "no debug offsets in _PyRuntime";
  if ((d[1] >> 16) != (L.version >> 16))
    return "debug offsets of another version";
  if (d[2])
    return "free-threaded build (not supported)";
  const struct dbg_index *x = NULL;
  if (minor == 13)
    x = dbg_fits(d, &dbg313) ? &dbg313 : NULL;
  else
    for (size_t i = 0; i < sizeof dbg314 / sizeof dbg314[0] && !x; i++)
      x = dbg_fits(d, &dbg314[i]) ? &dbg314[i] : NULL;
  if (!x)
    return "unexpected debug offsets";
  L.kind = FR_INTERP313;
  L.ts_frame = (uint32_t)d[x->ts_current_frame];
  L.f_back = (uint32_t)d[x->f_previous];
  L.f_code = (uint32_t)d[x->f_executable];
  L.f_instr = (uint32_t)d[x->f_instr_ptr];
  L.f_owner = (uint32_t)d[x->f_owner];
  L.code_tagged = minor >= 14;
  L.co_filename = (uint32_t)d[x->co_filename];
  L.co_name = (uint32_t)d[x->co_qualname];
  L.co_linetable = (uint32_t)d[x->co_linetable];
  L.co_firstlineno = (uint32_t)d[x->co_firstlineno];
  L.co_adaptive = (uint32_t)d[x->co_adaptive];
  L.ob_type = (uint32_t)d[x->ob_type];
  L.bytes_size = (uint32_t)d[x->bytes_size];
  L.bytes_sval = (uint32_t)d[x->bytes_sval];
  L.str_state = (uint32_t)d[x->str_state];
  L.str_length = (uint32_t)d[x->str_length];
  L.str_ascii_size = (uint32_t)d[x->str_ascii_size];
  /* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8 */
  L.str_compact_size = L.str_ascii_size + 16;
  return NULL;
}

static int start(void) {
  P.is_initialized = (int (*)(void))sym("Py_IsInitialized");
  P.get_ts = (void *(*)(void))sym("PyGILState_GetThisThreadState");
  if (!P.is_initialized || !P.get_ts || !P.is_initialized())
    return 0; /* no interpreter (or not yet one) in this process */
  const unsigned long *pv = sym("Py_Version");
  if (pv) {
    L.version = (uint32_t)*pv;
  } else {
    /* Before 3.11: Py_GetVersion snprintf's compile-time constants into a
     * static buffer on every call: no Python object, no GIL needed
     * (documented callable before Py_Initialize). A concurrent caller
     * rewrites the same bytes; done once, at start. */
    const char *(*getv)(void) = (const char *(*)(void))sym("Py_GetVersion");
    L.version = getv ? parse_version(getv()) : 0;
  }
  L.minor = (int)((L.version >> 16) & 0xff);
  if ((L.version >> 24) != 3 || L.minor < 9 || L.minor > 14) {
    say("Python call sites off: Python %u.%u is not supported (3.9 to 3.14 are)",
        L.version >> 24, (unsigned)L.minor);
    return 0;
  }
  struct {
    void *dst;
    const char *name;
  } need[] = {
      {&P.add_pending, "Py_AddPendingCall"},
      {&P.eval_get_frame, "PyEval_GetFrame"},
      {&P.frame_get_code, "PyFrame_GetCode"},
      {&P.frame_get_back, "PyFrame_GetBack"},
      {&P.frame_get_line, "PyFrame_GetLineNumber"},
      {&P.get_attr, "PyObject_GetAttrString"},
      {&P.str_utf8, "PyUnicode_AsUTF8"},
      {&P.bytes_data, "PyBytes_AsString"},
      {&P.bytes_size, "PyBytes_Size"},
      {&P.long_value, "PyLong_AsLongLong"},
      {&P.decref, "Py_DecRef"},
      {&P.err_clear, "PyErr_Clear"},
  };
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
    void *p = sym(need[i].name);
    if (!p) {
      say("Python call sites off: the interpreter has no %s", need[i].name);
      return 0;
    }
    memcpy(need[i].dst, &p, sizeof p);
  }
  P.code_type = (uintptr_t)sym("PyCode_Type");
  P.str_type = (uintptr_t)sym("PyUnicode_Type");
  P.bytes_type = (uintptr_t)sym("PyBytes_Type");
  P.eval_fn = sym("_PyEval_EvalFrameDefault");
  if (!P.code_type || !P.str_type || !P.bytes_type) {
    say("Python call sites off: the interpreter's type objects are not visible");
    return 0;
  }
  const char *why = NULL;
  if (L.minor <= 12)
    layout_static(L.minor);
  else
    why = layout_debug_offsets(L.minor);
  if (why) {
    say("Python call sites off: Python %u.%u: %s", L.version >> 24,
        (unsigned)L.minor, why);
    return 0;
  }
#ifdef GP_PYFRAMES_TEST_SKEW
  /* Test-only build (tests/e2e): a deliberately wrong layout, which the
   * check must catch. */
  L.co_filename = L.co_name;
#endif
  atomic_store(&state, ST_PENDING);
  if (P.add_pending(check_cb, NULL) != 0) {
    turn_off("could not schedule the layout check");
    return 0;
  }
  return 1;
}

int gp_py_start(void) {
  int expect = 0;
  if (atomic_compare_exchange_strong(&started, &expect, 1)) {
    start_result = start();
    atomic_store(&started, 2);
  }
  while (atomic_load(&started) != 2)
    ; /* another thread is starting: a few microseconds */
  return start_result;
}

int gp_py_eval_ranges(uintptr_t *lo, uintptr_t *hi, int max) {
  if (max < 1)
    return 0;
  void *fn = P.eval_fn ? P.eval_fn : sym("_PyEval_EvalFrameDefault");
  if (!fn)
    return 0;
  Dl_info info;
  const ElfW(Sym) *s = NULL;
  if (!dladdr1(fn, &info, (void **)&s, RTLD_DL_SYMENT) || !s || !s->st_size)
    return 0;
  /* The compiler's cold part (_PyEval_EvalFrameDefault.cold) is a local
   * symbol, absent from the dynamic symbol table: not handled. */
  lo[0] = (uintptr_t)fn;
  hi[0] = (uintptr_t)fn + s->st_size;
  return 1;
}

void gp_py_after_fork(void) {
  /* The child shares the interpreter, its layout and our verdict; a check
   * that another thread of the parent was running is cut by the fork. */
  int expect = ST_CHECKING;
  if (atomic_compare_exchange_strong(&state, &expect, ST_OFF))
    say("Python call sites off: the layout check was cut by fork");
}
