/* A tuning task: one bound op (sizes and dtypes fixed) on one target.
 *
 * The workload key is the op's structural hash (tessel_op_hash) as 16
 * lowercase hex digits: equal for the same computation and sizes whatever
 * the names, so records move between spellings of one op.  Traces name
 * stages and loops, though, so a record made under other names does not
 * replay; callers treat such a record as unusable, not as an error of the
 * op.  The target is described by its canonical string, which is what
 * records store: rt_cpu_target_print's for "cpu", tune_gpu_target_print's
 * for "opencl" (the device's name and limits, read from it when the task
 * is made) and "cuda" (an architecture's limits from NVIDIA's table, no
 * device: its tasks sample sketches and are compiled and checked, but
 * nothing measures them yet).  A GPU kind is one more case of
 * tune_task_init, of the sketches (tuner/sketch_gpu.c, the same for every
 * GPU kind) and of the runner (tuner/measure.c). */
#ifndef TESSEL_TUNER_TASK_H
#define TESSEL_TUNER_TASK_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/target.h"
#include "tuner/gpu_target.h"
#include "tessel/te.h"

#define TUNE_KEY_LEN 17

typedef struct tune_task {
	tessel_ctx *ctx;                /* not owned: errors of schedules go here */
	tessel_op *op;                  /* bound; retained */
	char key[TUNE_KEY_LEN];         /* workload key */
	char *op_text;                  /* normalized .te text, malloc'ed */
	double flops;                   /* per evaluation (0: none, e.g. a copy) */
	rt_target_kind kind;
	const char *target_kind;        /* "cpu", "opencl" or "cuda" */
	rt_cpu_target cpu;              /* the CPU; for a GPU, the host's
	                                 * (features describe loops with it) */
	tune_gpu_target gpu;            /* GPU kinds: the device */
	char target[RT_CPU_TARGET_STR_MAX]; /* canonical target string */
} tune_task;

/* Make "task" for the bound "op" (retained) on the target string "target"
 * (NULL: "cpu", this machine; "opencl": the OpenCL device rt_cl_open
 * picks, described in a child process; "cuda:sm_NN": that architecture,
 * "cuda" alone sm_90).  Return 0, or -1 with the reason in "err" of size
 * "errlen" (an unbound op, an unknown target kind, a bad target string,
 * an unknown CUDA architecture, no OpenCL device). */
int tune_task_init(tune_task *task, tessel_ctx *ctx, tessel_op *op,
	const char *target, char *err, size_t errlen);
/* Release what "task" holds (a zeroed task is fine). */
void tune_task_clear(tune_task *task);

/* Write the workload key of the bound "op" into "key". */
void tune_workload_key(const tessel_op *op, char key[TUNE_KEY_LEN]);

/* Return whether "task" runs on a GPU (bound loops, shared memory). */
static inline bool tune_task_is_gpu(const tune_task *task)
{
	return task->kind != RT_TARGET_CPU;
}

#endif
