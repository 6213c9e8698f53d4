/* The CUDA half of the measurer (tuner/runner_cuda.c): a candidate is
 * compiled by NVRTC for the task's architecture and rejected before
 * measurement when the cubin's resources or its launches say it cannot launch
 * there (no device needed); the run itself happens in the measurer's
 * isolated worker process, on the first CUDA device.  The measurer
 * (tuner/measure.c) keeps what every target shares: the seeded inputs,
 * the shared outputs, the check against the interpreter, the batches and
 * error classes. */
#ifndef TESSEL_TUNER_RUNNER_CUDA_H
#define TESSEL_TUNER_RUNNER_CUDA_H

#include <stddef.h>

#include "codegen/cuda_kernel.h"
#include "ir/loop.h"
#include "tuner/gpu_target.h"
#include "tuner/runner_gpu.h"

typedef enum tune_cuda_status {
	TUNE_CUDA_LAUNCHABLE,           /* compiled; every kernel can launch */
	TUNE_CUDA_REJECTED,             /* compiled; a kernel cannot launch */
	TUNE_CUDA_BUILD                 /* not printed or not compiled (or no
	                                 * NVRTC): a bug or a missing library,
	                                 * not a candidate to reject */
} tune_cuda_status;

/* Print "p" as CUDA C, compile it with NVRTC for the architecture sm_NN
 * of "gpu" (gpu->sm) and check every kernel of its plan against that
 * architecture's limits in NVIDIA's table (cg_cuda_check_launch:
 * the cubin's registers and shared memory, block and grid sizes).  The CUDA
 * runner calls it before it measures a candidate and measures only the
 * launchable.  Return the status, with the reason in "msg" of size "len"
 * unless launchable; errors of "p" go to "ctx". */
tune_cuda_status tune_cuda_check(tessel_ctx *ctx, const loop_prog *p,
	const tune_gpu_target *gpu, char *msg, size_t len);
/* The same, keeping the compiled program in "c" when the status is
 * TUNE_CUDA_LAUNCHABLE (freed with cg_cuda_program_free; else empty):
 * the measurer's builder passes it to the worker. */
tune_cuda_status tune_cuda_prepare(tessel_ctx *ctx, const loop_prog *p,
	const tune_gpu_target *gpu, cg_cuda_program *c, char *msg, size_t len);

/* The first CUDA device, held open by the measurer's worker over the
 * candidates of a batch: creating a context takes longer than timing
 * most candidates. */
typedef struct tune_cuda_session tune_cuda_session;

/* In the worker: open the first CUDA device into "*out", refusing one
 * that is not of architecture sm_"sm" (0: any).  Return TUNE_GPU_OK, or
 * TUNE_GPU_NO_DEVICE (TUNE_GPU_RUNTIME when out of memory) with the
 * reason in "msg" of size "len" and "*out" NULL. */
tune_gpu_status tune_cuda_session_open(int sm, tune_cuda_session **out, char *msg,
	size_t len);

/* In the worker: load "compiled" (tune_cuda_prepare's program of "r"->p;
 * NULL or empty: compile "r"->p here) on the device of "s", and time it
 * (tune_gpu_time_built: upload, poison the outputs, time, download)
 * into "timing": the median over runs of its kernels' durations from
 * CUPTI (CUDA events where CUPTI cannot be loaded), the L2 evicted
 * before every run (rt_cuda_time_runs); then unload it.  Return the
 * status, with the reason in "msg" of size "len".  After anything but
 * TUNE_GPU_OK the context may be unusable (a faulting kernel poisons
 * it): close the session. */
tune_gpu_status tune_cuda_session_time(tune_cuda_session *s, const tune_gpu_run *r,
	const cg_cuda_program *compiled, rt_timing *timing, char *msg, size_t len);

/* Close the device and free "s"; NULL is a no-op. */
void tune_cuda_session_close(tune_cuda_session *s);

#endif
