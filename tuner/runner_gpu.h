/* What the GPU runners (tuner/runner_opencl.c, tuner/runner_cuda.c)
 * share: a kernel built on a device seen through a few calls, and its
 * timed run in the measurer's worker (tuner/runner_gpu.c).  The runners
 * differ in how a device is opened and a program built; the run is the
 * same. */
#ifndef TESSEL_TUNER_RUNNER_GPU_H
#define TESSEL_TUNER_RUNNER_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/loop.h"
#include "runtime/timer.h"

/* What one timed run needs: the program, its arguments (host pointers,
 * inputs then outputs, the outputs in shared memory), the timer, and,
 * for CUDA, the architecture the task is for (the device must be of it;
 * 0 for OpenCL). */
typedef struct tune_gpu_run {
	const loop_prog *p;
	void *const *args;
	const rt_timer_opts *timer;
	int sm;
} tune_gpu_run;

typedef enum tune_gpu_status {
	TUNE_GPU_OK,
	TUNE_GPU_BUILD,     /* the device's compiler refused the program */
	TUNE_GPU_NO_DEVICE, /* the worker could not open the device (or it is
	                     * not the task's): the machine's fault, not the
	                     * candidate's */
	TUNE_GPU_RUNTIME,   /* a launch or a copy failed */
	TUNE_GPU_TIMEOUT    /* the timer ran past its limit */
} tune_gpu_status;

/* A kernel built on a device: its arguments' sizes and roles, and the
 * calls that write one argument's device buffer, upload the inputs, launch
 * every kernel and wait for the last, and download the outputs (each 0,
 * or -1 with the error in "ctx" or, for "fill", in "msg"). */
typedef struct tune_gpu_kernel {
	tessel_ctx *ctx;
	void *k;
	int nargs;
	const size_t *bytes;
	const bool *is_output;
	int (*fill)(void *k, int arg, const void *src, size_t bytes, char *msg, size_t len);
	int (*upload)(tessel_ctx *ctx, void *k, void *const *args);
	int (*launch)(tessel_ctx *ctx, void *k);
	int (*download)(tessel_ctx *ctx, void *k, void *const *args);
	/* Time the launches with the device's own clock into "timing" under
	 * the options "o", returning RT_TIME_OK, RT_TIME_TIMEOUT or
	 * RT_TIME_ERROR (with why in "msg"); NULL: the wall clock to the end
	 * of the last kernel. */
	int (*time)(tessel_ctx *ctx, void *k, const rt_timer_opts *o, rt_timing *timing,
		char *msg, size_t len);
} tune_gpu_kernel;

/* Upload "r"'s inputs to "g", fill its outputs on the device with
 * all-ones bytes (so that an element no kernel writes fails the check),
 * time its launches with "r"'s timer (g->time, or the wall clock to the
 * end of the last kernel: warm-up, repeats, median) into "timing", and
 * download the
 * outputs.  Return the status, with the reason in "msg" of size "len". */
tune_gpu_status tune_gpu_time_built(const tune_gpu_kernel *g, const tune_gpu_run *r,
	rt_timing *timing, char *msg, size_t len);

#endif
