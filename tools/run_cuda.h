/* Running a loop program on a CUDA device in an isolated process, for
 * `tessel run` (tools/run_cuda.c). */
#ifndef TESSEL_TOOLS_RUN_CUDA_H
#define TESSEL_TOOLS_RUN_CUDA_H

#include <stddef.h>

#include "ir/loop.h"
#include "runtime/cuda_timing.h"
#include "runtime/timer.h"

/* In a child process: open the first CUDA device (refused when "sm" is
 * not 0 and not the device's architecture), compile "p" with NVRTC for
 * it, check its launches, upload its inputs from "args" (one pointer per
 * argument, inputs then outputs; the outputs in shared memory,
 * rt_shared_alloc), run it once, time it with "timer" into "*timing"
 * when both are given (rt_cuda_time_runs: CUPTI's kernel durations, and
 * CUDA events around the same launches; the L2 evicted before each run
 * when timer->flush_cache), and download the outputs into "args".  The device's name goes into
 * "device" (of size 256) when it is not NULL.  Return 0, or 1 with the
 * reason in "why" of size "len" (no driver, a crash or a run past
 * "timeout_s" seconds included). */
int cli_run_cuda(tessel_ctx *ctx, const loop_prog *p, int sm, void *const *args,
	const rt_timer_opts *timer, rt_cuda_timing *timing,
	double timeout_s, char *device, char *why, size_t len);

#endif
