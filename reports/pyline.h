/* Source line of a Python code unit from a code object's line table, as a
 * PYCODE record keeps it (include/gpuphase/trace_records.h): co_lnotab of
 * 3.9, co_linetable of 3.10 and the location table of 3.11 and later.
 * Uses nothing else of reports/; the shim links it too (preload/pyframes.c
 * checks its reading of live frames against the interpreter with it). */
#ifndef GP_PYLINE_H
#define GP_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/* The line executing at 2-byte code unit `unit`; first_line when the
 * table does not say; -1 when the table is corrupt. Never reads past len. */
int64_t gp_pyline(uint32_t py_version, const uint8_t *tab, size_t len,
                  int64_t first_line, uint64_t unit);

#endif
