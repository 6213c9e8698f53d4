/* What `tessel run` and `fuzz-sched` share to run a program on a GPU in
 * an isolated child (tools/run_gpu.c): the memory the child leaves its
 * results in, and the run itself.  tools/run_opencl.c and
 * tools/run_cuda.c are the children. */
#ifndef TESSEL_TOOLS_RUN_GPU_H
#define TESSEL_TOOLS_RUN_GPU_H

#include <stddef.h>

/* What the child leaves for its parent, in shared memory. */
typedef struct cli_gpu_report {
	char *device;       /* 256 bytes: the device's name */
	char *error;        /* 1024 bytes: why the child failed */
	void *timing;       /* the timing, or NULL when the run is not timed */
} cli_gpu_report;

enum { CLI_GPU_DEVICE_LEN = 256, CLI_GPU_ERROR_LEN = 1024 };

/* Run "child"("job") in an isolated process for at most "timeout_s"
 * seconds, "report" shared with it (its timing of "timing_bytes" bytes
 * when "timing" is not NULL).  Then copy the timing into "timing" and the
 * device's name into "device" (of size CLI_GPU_DEVICE_LEN) when not
 * NULL.  Return 0, or 1 with "the kernel STATUS: ERROR" in "why" of size
 * "len" (a crash or a timeout included). */
int cli_run_gpu_child(int (*child)(void *job), void *job, cli_gpu_report *report,
	size_t timing_bytes, void *timing, double timeout_s, char *device, char *why,
	size_t len);

#endif
