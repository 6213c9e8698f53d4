/* The calling convention of generated CPU kernels, shared by the code
 * generator (which writes kernels against it), the runtime (which calls
 * them) and exported libraries.  Header-only and dependency-free: generated
 * sources include a copy of these declarations verbatim. */
#ifndef TESSEL_KERNEL_H
#define TESSEL_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* The body of a parallel loop, outlined: run iterations [begin, end). */
typedef void (*tessel_parallel_body)(int64_t begin, int64_t end, void *closure);

/* What a kernel may ask of the runtime while it runs. */
typedef struct tessel_kernel_env {
	int num_threads;
	/* Run "body" over [0, n) split into chunks across the pool's threads
	 * and return when all are done. */
	void (*parallel_for)(const struct tessel_kernel_env *env, int64_t n,
		tessel_parallel_body body, void *closure);
	void *pool;
	/* Return "bytes" bytes of scratch memory aligned to 64 bytes for the
	 * calling thread, or NULL when memory runs out.  Kernels take their
	 * large temporaries here rather than from malloc, so that a runtime
	 * can keep them from one call to the next. */
	void *(*workspace_alloc)(const struct tessel_kernel_env *env, size_t bytes);
	/* Give back the last "count" blocks workspace_alloc gave the calling
	 * thread, last first (by count, so that no pointer to scratch memory
	 * escapes the kernel). */
	void (*workspace_pop)(const struct tessel_kernel_env *env, int count);
} tessel_kernel_env;

/* A kernel: "args" holds one data pointer per buffer argument (inputs,
 * then outputs, in the op's order).  Returns 0. */
typedef int (*tessel_kernel_fn)(void *const *args, const tessel_kernel_env *env);

#endif
