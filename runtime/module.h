/* Shared objects loaded at run time: compiled kernels and exported
 * libraries.  A thin layer over dlopen that reports failures as values. */
#ifndef TESSEL_RT_MODULE_H
#define TESSEL_RT_MODULE_H

#include <stddef.h>

typedef struct rt_module rt_module;

/* Load the shared object at "so_path" with every symbol resolved now
 * (RTLD_NOW) and kept private to it (RTLD_LOCAL).  Return the module, or
 * NULL with the loader's message in "err" of size "errlen". */
rt_module *rt_module_open(const char *so_path, char *err, size_t errlen);

/* Return the address of the symbol "name" of "m", or NULL with a message in
 * "err" of size "errlen" when "m" does not define it. */
void *rt_module_symbol(rt_module *m, const char *name, char *err,
	size_t errlen);

/* Return the path "m" was opened from. */
const char *rt_module_path(const rt_module *m);

/* Unload "m"; pointers obtained from it become invalid.  NULL is allowed. */
void rt_module_close(rt_module *m);

#endif
