/* Demangling of C++ kernel names for the renderers (demangle.c). */
#ifndef GP_DEMANGLE_H
#define GP_DEMANGLE_H

#include <stddef.h>

/* The demangled form of a mangled C++ name (malloc'd), or NULL when name is
 * not one or no demangler is available. */
char *gp_demangle(const char *name);

/* The qualified function name of a demangled declaration, without return
 * type, template arguments and parameters ("void ns::k<4>(int)" ->
 * "ns::k"); cut to cap - 1 bytes. Returns its length. */
size_t gp_short_name(const char *demangled, char *out, size_t cap);

#endif
