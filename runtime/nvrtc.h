/* NVRTC, the CUDA runtime compiler, loaded with dlopen at run time (so
 * that tessel starts, and its tests pass, where there is none): CUDA C
 * source to a cubin for one architecture, with ptxas's report of what
 * each kernel uses (registers, shared memory, stack, spills).  NVRTC
 * needs no GPU.
 *
 * The library is the first that loads of: the file $TESSEL_NVRTC;
 * libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so in $CUDA_HOME/lib64,
 * in $CUDA_PATH/lib64, on the loader's path, in /usr/local/cuda/lib64
 * (the calls tessel makes are the same in NVRTC 12 and 13).  Functions that
 * can fail return 0, or -1 with a message in "err" of size "len" naming
 * the NVRTC call and its error ("nvrtcCompileProgram:
 * NVRTC_ERROR_COMPILATION"), followed by the compile log. */
#ifndef TESSEL_RT_NVRTC_H
#define TESSEL_RT_NVRTC_H

#include <stddef.h>

#include "runtime/gpu_target.h"

typedef struct rt_cubin {
	void *image;                /* malloc'ed, "size" bytes */
	size_t size;
	int sm;
	char *log;                  /* NVRTC's log, ptxas's report included */
	int nkernels;
	rt_kernel_usage *kernels;   /* malloc'ed, from the cubin (rt_cubin_usage) */
} rt_cubin;

/* Load NVRTC if needed and write its version into "*major" and
 * "*minor".  Return -1 when there is none ("NVRTC not found ..."). */
int rt_nvrtc_version(int *major, int *minor, char *err, size_t len);

/* Compile "source" (called "file" in messages) for sm_"sm" with ptxas's
 * report on into "out" (freed with rt_cubin_free, also after a failure).
 * Refused when NVRTC cannot compile for sm_"sm" (the message lists what
 * it can).  NVRTC's cache is off (--no-cache, where NVRTC has it): the
 * cache loads the CUDA driver and calls cuInit in the compiling process,
 * and a child forked after that cannot use CUDA (cuInit fails with
 * CUDA_ERROR_NOT_INITIALIZED), which is how the tuner's workers start. */
int rt_nvrtc_compile(const char *source, const char *file, int sm, rt_cubin *out,
	char *err, size_t len);
void rt_cubin_free(rt_cubin *c);

/* Compile "source" to PTX for the virtual architecture compute_"sm" into
 * "*ptx" (malloc'ed, NUL-terminated; NULL on failure): what NVVM made of
 * the source before ptxas (which loads are vectorized, what the index
 * arithmetic became).  Errors as rt_nvrtc_compile. */
int rt_nvrtc_ptx(const char *source, const char *file, int sm, char **ptx, char *err,
	size_t len);

/* Return what the kernel "name" of "c" uses, or NULL when neither the
 * cubin nor ptxas's report gives it. */
const rt_kernel_usage *rt_cubin_kernel(const rt_cubin *c, const char *name);

/* Parse ptxas's report in "log" ("Compiling entry function 'k'", "N bytes
 * stack frame, N bytes spill stores, N bytes spill loads", "Used N
 * registers, used N barriers, N bytes smem") into "*kernels" (malloc'ed,
 * in the order of the log).  Return their number. */
int rt_ptxas_parse(const char *log, rt_kernel_usage **kernels);

/* Read what each kernel of the cubin "image" of "size" bytes uses
 * (registers, barriers, static shared memory, stack frame; not spills,
 * which only ptxas's report gives) into "*kernels" (malloc'ed, NULL on
 * failure) from its ELF sections (runtime/cubin_usage.c).  Return their
 * number, or -1 with the reason in "err" of size "len" for a file that
 * is not a cubin or is malformed. */
int rt_cubin_usage(const void *image, size_t size, rt_kernel_usage **kernels, char *err,
	size_t len);

#endif
