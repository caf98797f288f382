/* Offline symbolisation of native frames: module-relative pcs to function,
 * file:line and the calls inlined there, with elfutils' libdwfl/libdw when
 * the tree was built with it (GP_HAVE_LIBDW). Each module's ELF is found by
 * its build-id (the .build-id directories of the debuginfo paths), else at
 * its recorded path when the file there has the same build-id. Results are
 * cached per (module, pc). Rules: docs/callsites.md, "## Symbols". */
#ifndef GP_SYMBOLIZE_H
#define GP_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct gp_sym_frame {
  const char *function; /* mangled as found, NULL: no symbol */
  const char *file;     /* NULL: no line information */
  int64_t line;
  int inlined; /* an inlined call: file:line is its call site */
};

/* Why a module could not be read (gp_sym_module_state). */
enum { GP_SYM_OK, GP_SYM_MISSING, GP_SYM_MISMATCH, GP_SYM_NOLIB };

typedef struct gp_sym gp_sym;

gp_sym *gp_sym_new(void); /* NULL: no memory */
void gp_sym_free(gp_sym *s);
/* 1 when the tree can read DWARF (built with libdw). */
int gp_sym_available(void);

/* The frames at pc (an address of the module's file, its vaddr) of module
 * `key` (path, build-id as recorded): innermost (the inlined callee) first,
 * the containing function last; at most cap. Returns how many, 0 when the
 * module or the pc cannot be resolved. The strings stay valid until
 * gp_sym_free. */
size_t gp_sym_lookup(gp_sym *s, uint64_t key, const char *path,
                     const uint8_t *build_id, size_t nbid, uint64_t pc,
                     struct gp_sym_frame *out, size_t cap);
/* Modules looked up so far (their ELF searched for, read or not). */
size_t gp_sym_modules(const gp_sym *s);
/* GP_SYM_* of module key after a lookup. */
int gp_sym_module_state(gp_sym *s, uint64_t key);

#endif
