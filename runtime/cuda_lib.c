#include "runtime/cuda_lib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NAMES = 8, PATH_LEN = 512 };

/* Append the candidate paths of "names" to "paths" in the order of
 * rt_cuda_lib_open; return their number. */
static int candidates(const char *const *names, const char *env,
	char paths[][PATH_LEN], int max)
{
	int n = 0, nnames = 0;
	while (nnames < MAX_NAMES && names[nnames])
		nnames++;
	const char *explicit = env ? getenv(env) : NULL;
	if (explicit && explicit[0] && n < max)
		snprintf(paths[n++], PATH_LEN, "%s", explicit);
	const char *homes[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH") };
	for (int h = 0; h < 2; h++)
		for (int k = 0; homes[h] && homes[h][0] && k < nnames && n < max; k++)
			snprintf(paths[n++], PATH_LEN, "%s/lib64/%s", homes[h], names[k]);
	for (int k = 0; k < nnames && n < max; k++)
		snprintf(paths[n++], PATH_LEN, "%s", names[k]);
	for (int k = 0; k < nnames && n < max; k++)
		snprintf(paths[n++], PATH_LEN, "/usr/local/cuda/lib64/%s", names[k]);
	return n;
}

void *rt_cuda_lib_open(const char *what, const char *const *names, const char *env,
	char *err, size_t len)
{
	char paths[1 + 4 * MAX_NAMES][PATH_LEN];
	int n = candidates(names, env, paths, 1 + 4 * MAX_NAMES);
	const char *last = "";
	for (int i = 0; i < n; i++) {
		void *lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
		if (lib)
			return lib;
		last = dlerror();
	}
	char list[256] = "";
	for (int k = 0; k < MAX_NAMES && names[k]; k++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			k ? " or " : "", names[k]);
	if (env)
		snprintf(err, len, "%s not found (%s in $%s, $CUDA_HOME/lib64, "
			"$CUDA_PATH/lib64, the loader's path or /usr/local/cuda/lib64): %s",
			what, list, env, last ? last : "");
	else
		snprintf(err, len, "%s not found (%s in $CUDA_HOME/lib64, $CUDA_PATH/lib64, "
			"the loader's path or /usr/local/cuda/lib64): %s", what, list,
			last ? last : "");
	return NULL;
}

int rt_cuda_lib_resolve(void *lib, const char *what, const rt_lib_symbol *syms,
	int n, char *err, size_t len)
{
	for (int i = 0; i < n; i++) {
		*syms[i].slot = dlsym(lib, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(err, len, "%s lacks %s", what, syms[i].name);
			return -1;
		}
	}
	return 0;
}
