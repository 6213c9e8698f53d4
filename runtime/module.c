/* Shared objects loaded with dlopen, errors returned as messages. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/module.h"

struct rt_module {
	void *handle;
	char *path;
};

/* Write the message "fmt" into "err" of size "errlen" when "err" is not
 * NULL, always NUL-terminated. */
static void __attribute__((format(printf, 3, 4)))
report(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Return the loader's last message, or "fallback" when it has none. */
static const char *loader_message(const char *fallback)
{
	const char *msg = dlerror();
	return msg ? msg : fallback;
}

/* Load "so_path" with RTLD_NOW | RTLD_LOCAL; see module.h. */
rt_module *rt_module_open(const char *so_path, char *err, size_t errlen)
{
	if (!so_path || !*so_path) {
		report(err, errlen, "module: empty path");
		return NULL;
	}
	rt_module *m = calloc(1, sizeof *m);
	char *path = strdup(so_path);
	if (!m || !path) {
		free(m);
		free(path);
		report(err, errlen, "module: out of memory opening '%s'", so_path);
		return NULL;
	}
	dlerror();
	m->handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
	if (!m->handle) {
		report(err, errlen, "module: cannot open '%s': %s", so_path,
		       loader_message("unknown error"));
		free(path);
		free(m);
		return NULL;
	}
	m->path = path;
	return m;
}

/* Look up "name" in "m"; see module.h. */
void *rt_module_symbol(rt_module *m, const char *name, char *err,
	size_t errlen)
{
	if (!m || !name || !*name) {
		report(err, errlen, "module: %s", !m ? "no module" : "empty symbol name");
		return NULL;
	}
	dlerror();
	void *sym = dlsym(m->handle, name);
	const char *msg = dlerror();
	if (msg || !sym) {
		report(err, errlen, "module '%s': no symbol '%s'%s%s", m->path,
		       name, msg ? ": " : "", msg ? msg : "");
		return NULL;
	}
	return sym;
}

/* Return the path "m" was opened from. */
const char *rt_module_path(const rt_module *m)
{
	return m->path;
}

/* Unload "m"; see module.h. */
void rt_module_close(rt_module *m)
{
	if (!m)
		return;
	dlclose(m->handle);
	free(m->path);
	free(m);
}
