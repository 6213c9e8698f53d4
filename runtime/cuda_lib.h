/* Finding the CUDA toolkit's libraries at run time (NVRTC, CUPTI, cuBLAS,
 * cuDNN), so that tessel links none of them, starts without them, and
 * says where it looked when one is missing. */
#ifndef TESSEL_RT_CUDA_LIB_H
#define TESSEL_RT_CUDA_LIB_H

#include <stddef.h>

/* One entry point to resolve: where to store it, and its name. */
typedef struct rt_lib_symbol {
	void **slot;
	const char *name;
} rt_lib_symbol;

/* Open the first library of "names" (sonames, preferred first, NULL
 * after the last) found at the path in the environment variable "env"
 * (when "env" is not NULL and the variable is set), in $CUDA_HOME/lib64,
 * $CUDA_PATH/lib64, the loader's path, or /usr/local/cuda/lib64; never
 * closed.  NULL with "WHAT not found (...places...): loader error" in
 * "err" of size "len". */
void *rt_cuda_lib_open(const char *what, const char *const *names, const char *env,
	char *err, size_t len);

/* Resolve the "n" symbols "syms" in "lib".  Return 0, or -1 with "WHAT
 * lacks NAME" in "err". */
int rt_cuda_lib_resolve(void *lib, const char *what, const rt_lib_symbol *syms,
	int n, char *err, size_t len);

#endif
