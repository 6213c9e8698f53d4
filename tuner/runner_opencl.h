/* The OpenCL half of the measurer (tuner/runner_opencl.c): a check of a
 * candidate's launch against the device's limits, made before it runs,
 * and the run itself, made in the measurer's isolated worker process.
 * The measurer (tuner/measure.c) keeps what every target shares: the
 * seeded inputs, the shared outputs, the check against the interpreter,
 * the batches and error classes. */
#ifndef TESSEL_TUNER_RUNNER_OPENCL_H
#define TESSEL_TUNER_RUNNER_OPENCL_H

#include <stddef.h>

#include "codegen/compile.h"
#include "ir/loop.h"
#include "runtime/timer.h"
#include "tuner/gpu_target.h"
#include "tuner/runner_gpu.h"

/* The most bytes of private arrays a thread may hold (register tiles,
 * per-thread copies of a stage computed at a loop).  Past it a GPU
 * spills them to slow local memory, and PoCL, which keeps the private
 * arrays of a whole work-group on a CPU thread's stack, overflows it (a
 * block-sized tile per thread, which a mutated compute location makes,
 * crashed PoCL with 128 KiB per thread). */
#define TUNE_GPU_MAX_PRIVATE_BYTES 8192

/* Return 0 when every kernel of "p" fits "gpu": threads per block and
 * shared bytes per block (of cg_print_gpu's plan) within its limits, and
 * private arrays within TUNE_GPU_MAX_PRIVATE_BYTES per thread; else -1
 * with the reason in "msg" of size "len" (also when "p" does not print
 * as OpenCL C).  When it fits and "key" is not NULL, write into "key" the
 * code key of the source it printed (cg_opencl_source_key, built by
 * gpu->compiler), so that the source is printed once. */
int tune_opencl_check_limits(const loop_prog *p, const tune_gpu_target *gpu,
	char key[CG_CODE_KEY_LEN], char *msg, size_t len);

/* The OpenCL device, held open by the measurer's worker over the
 * candidates of a batch. */
typedef struct tune_opencl_session tune_opencl_session;

/* In the worker: open the device into "*out".  Return TUNE_GPU_OK, or
 * TUNE_GPU_NO_DEVICE (TUNE_GPU_RUNTIME when out of memory) with the
 * reason in "msg" of size "len" and "*out" NULL. */
tune_gpu_status tune_opencl_session_open(tune_opencl_session **out, char *msg, size_t len);

/* In the worker: build "r"->p with clBuildProgram on the device of "s",
 * time it (tune_gpu_time_built: upload, poison the outputs, time to
 * clFinish, download) into "timing", and release it.  Return the
 * status, with the reason in "msg" of size "len"; after anything but
 * TUNE_GPU_OK, close the session. */
tune_gpu_status tune_opencl_session_time(tune_opencl_session *s, const tune_gpu_run *r,
	rt_timing *timing, char *msg, size_t len);

/* Close the device and free "s"; NULL is a no-op. */
void tune_opencl_session_close(tune_opencl_session *s);

#endif
