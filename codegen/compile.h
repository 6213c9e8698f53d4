/* Compiling generated C into shared objects with the system C compiler,
 * through a content-addressed cache of kernels. */
#ifndef TESSEL_CG_COMPILE_H
#define TESSEL_CG_COMPILE_H

#include <stddef.h>

/* The flags used when cg_compile_opts.flags is NULL. */
#define CG_DEFAULT_FLAGS "-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared", \
	"-std=gnu17"
#define CG_DEFAULT_TIMEOUT_S 60.0

/* Room for a code key: 32 lowercase hex digits and a NUL.  A code key
 * names what a kernel is made of: the cache key of a compiled C kernel
 * (below), or the hash of another binary (cg_code_key_of_parts); two
 * compilations with the same key run the same code. */
#define CG_CODE_KEY_LEN 33

typedef struct cg_compile_opts {
	/* The compiler command: NULL means $CC, else "cc".  Split on spaces,
	 * so "ccache gcc" works (no quoting). */
	const char *cc;
	/* NULL-terminated flags placed before the source; NULL means
	 * CG_DEFAULT_FLAGS. */
	const char *const *flags;
	/* NULL-terminated flags placed after the source (-fopenmp, -lm, -I...);
	 * NULL means none. */
	const char *const *extra_flags;
	/* NULL means cg_cache_dir_default(). */
	const char *cache_dir;
	/* Seconds the compiler may run before it is killed; 0 means
	 * CG_DEFAULT_TIMEOUT_S. */
	double timeout_s;
	/* The compiler's version line from cg_compiler_version, so that a
	 * caller compiling many kernels probes once; NULL means probe on every
	 * call (a few milliseconds, the whole cost of a cache hit). */
	const char *cc_version;
} cg_compile_opts;

/* What went wrong, for the tuner's error classes. */
enum cg_compile_status {
	CG_COMPILE_OK = 0,
	CG_COMPILE_EIO = -1,
	CG_COMPILE_ENOCC = -2,
	CG_COMPILE_EFAILED = -3,
	CG_COMPILE_ETIMEOUT = -4
};

/* Compile the C text "source" into a shared object with the options "o"
 * (NULL: all defaults) and write its path into "so_path" of size "so_len".
 * The object lives in the cache directory as KEY.so, where KEY hashes the
 * compiler (its command, resolved path and first line of --version), the
 * flags and "source"; when it is already there nothing is compiled.
 * Otherwise "source" is kept as KEY.c beside it and the compiler writes a
 * temporary file that is renamed into place, so concurrent compilations of
 * one kernel never expose a partial object.  Return CG_COMPILE_OK, or a
 * negative cg_compile_status with a message in "err" of size "errlen": the
 * compiler is missing, it failed (the message holds the start of its
 * output), it ran past the timeout (it and its children are killed), or a
 * file could not be written. */
int cg_compile_c(const cg_compile_opts *o, const char *source, char *so_path,
	size_t so_len, char *err, size_t errlen);

/* Write into "key" the key under which cg_compile_c would cache "source"
 * compiled with "o" (NULL: all defaults), compiling nothing (the
 * compiler's version is probed unless "o" gives it).  Return
 * CG_COMPILE_OK, or a negative cg_compile_status with a message in "err"
 * of size "errlen". */
int cg_compile_key(const cg_compile_opts *o, const char *source,
	char key[CG_CODE_KEY_LEN], char *err, size_t errlen);

/* Write into "key" the code key of the "n" byte strings "data"[i] of
 * "len"[i] bytes (a kernel's source and its cubin, say): a 128-bit FNV-1a
 * hash of them in order, the same on every machine. */
void cg_code_key_of_parts(int n, const void *const *data, const size_t *len,
	char key[CG_CODE_KEY_LEN]);

/* Run the compiler of "o" (NULL: the default) with --version and write the
 * first line it prints into "buf" of size "len", for
 * cg_compile_opts.cc_version.  Return CG_COMPILE_OK, or a negative
 * cg_compile_status with a message in "err" of size "errlen". */
int cg_compiler_version(const cg_compile_opts *o, char *buf, size_t len,
	char *err, size_t errlen);

/* Write the default cache directory into "buf" of size "len":
 * $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel/kernels, else
 * $HOME/.cache/tessel/kernels.  Return 0, or -1 when none is set or the
 * name does not fit. */
int cg_cache_dir_default(char *buf, size_t len);

/* Write the text "data" to "path" through a temporary file beside it,
 * renamed over it once whole: a reader, another tuner sharing the cache
 * included, sees the old file or the new one, never part of it.  Return
 * CG_COMPILE_OK, or CG_COMPILE_EIO with a message in "err". */
int cg_write_file_atomically(const char *path, const char *data, char *err,
	size_t errlen);

#endif
