/* Running a loop program on the OpenCL device in an isolated process,
 * for `tessel run` and `tessel fuzz-sched` (tools/run_opencl.c). */
#ifndef TESSEL_TOOLS_RUN_OPENCL_H
#define TESSEL_TOOLS_RUN_OPENCL_H

#include <stddef.h>

#include "ir/loop.h"
#include "runtime/timer.h"

/* In a child process: open the OpenCL device, build "p", upload its
 * inputs from "args" (one pointer per argument, inputs then outputs;
 * the outputs in shared memory, rt_shared_alloc), run it once, time it
 * with "timer" into "*timing" when both are given, and download the
 * outputs into "args".  The device's name goes into "device" (of size
 * 256) when it is not NULL.  Return 0, or 1 with the reason in "why" of
 * size "len" (a crash or a run past "timeout_s" seconds included). */
int cli_run_opencl(tessel_ctx *ctx, const loop_prog *p, void *const *args,
	const rt_timer_opts *timer, rt_timing *timing, double timeout_s,
	char *device, char *why, size_t len);

#endif
