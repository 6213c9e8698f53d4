#include "tuner/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gpu_target.h"

void tune_workload_key(const tessel_op *op, char key[TUNE_KEY_LEN])
{
	snprintf(key, TUNE_KEY_LEN, "%016" PRIx64, tessel_op_hash(op));
}

/* Describe the CUDA target "target" ("cuda" or "cuda:sm_NN") in "task":
 * from the first device when it is of that architecture ("cuda" alone:
 * the device's), else from the architecture's table ("cuda" alone:
 * sm_90, RT_CUDA_DEFAULT_SM). */
static int describe_cuda(tune_task *task, const char *target, char *err, size_t errlen)
{
	int sm;
	if (rt_cuda_target_parse(target, &sm, err, errlen))
		return -1;
	return tune_gpu_target_cuda_device(sm, &task->gpu, err, errlen);
}

/* Describe the target "target" of kind "kind" in "task". */
static int describe_target(tune_task *task, rt_target_kind kind, const char *target,
	char *err, size_t errlen)
{
	task->kind = kind;
	if (kind == RT_TARGET_CPU) {
		task->target_kind = "cpu";
		if (rt_cpu_target_parse(target, &task->cpu, err, errlen))
			return -1;
		rt_cpu_target_print(&task->cpu, task->target, sizeof(task->target));
		return 0;
	}
	rt_cpu_target_host(&task->cpu);
	if (kind == RT_TARGET_CUDA) {
		task->target_kind = "cuda";
		if (describe_cuda(task, target, err, errlen))
			return -1;
	} else {
		task->target_kind = "opencl";
		if (tune_gpu_target_opencl(&task->gpu, err, errlen))
			return -1;
	}
	tune_gpu_target_print(task->target_kind, &task->gpu, task->target,
		sizeof(task->target));
	return 0;
}

int tune_task_init(tune_task *task, tessel_ctx *ctx, tessel_op *op,
	const char *target, char *err, size_t errlen)
{
	memset(task, 0, sizeof(*task));
	rt_target_kind kind;
	if (!target)
		target = "cpu";
	if (!tessel_op_is_bound(op)) {
		snprintf(err, errlen, "op '%s' has unbound sizes", tessel_op_name(op));
		return -1;
	}
	size_t word = strcspn(target, " \t");
	bool known = (word == 3 && strncmp(target, "cpu", 3) == 0) ||
		     (word == 6 && strncmp(target, "opencl", 6) == 0) ||
		     (word >= 4 && strncmp(target, "cuda", 4) == 0 &&
		      (word == 4 || target[4] == ':'));
	if (!known) {
		snprintf(err, errlen, "unknown target '%s' (the tuner knows: cpu, opencl, "
			"cuda, cuda:sm_NN)", target);
		return -1;
	}
	if (rt_target_kind_of(target, &kind, err, errlen) ||
	    describe_target(task, kind, target, err, errlen))
		return -1;
	task->op_text = tessel_op_print(op);
	if (!task->op_text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	task->ctx = ctx;
	task->op = tessel_op_retain(op);
	task->flops = tessel_op_flops(op);
	tune_workload_key(op, task->key);
	return 0;
}

void tune_task_clear(tune_task *task)
{
	if (task->op)
		tessel_op_release(task->op);
	free(task->op_text);
	memset(task, 0, sizeof(*task));
}
