#include "tuner/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tune_workload_key(const tessel_op *op, char key[TUNE_KEY_LEN])
{
	snprintf(key, TUNE_KEY_LEN, "%016" PRIx64, tessel_op_hash(op));
}

/* The kind of the target string "s": its first word. */
static int target_kind(const char *s, char *kind, size_t len)
{
	size_t n = strcspn(s, " \t");
	if (n == 0 || n >= len)
		return -1;
	memcpy(kind, s, n);
	kind[n] = '\0';
	return 0;
}

int tune_task_init(tune_task *task, tessel_ctx *ctx, tessel_op *op,
	const char *target, char *err, size_t errlen)
{
	memset(task, 0, sizeof(*task));
	char kind[32];
	if (!target)
		target = "cpu";
	if (!tessel_op_is_bound(op)) {
		snprintf(err, errlen, "op '%s' has unbound sizes", tessel_op_name(op));
		return -1;
	}
	if (target_kind(target, kind, sizeof(kind)) || strcmp(kind, "cpu") != 0) {
		snprintf(err, errlen, "unknown target '%s' (the tuner knows: cpu)", target);
		return -1;
	}
	if (rt_cpu_target_parse(target, &task->cpu, err, errlen))
		return -1;
	rt_cpu_target_print(&task->cpu, task->target, sizeof(task->target));
	task->op_text = tessel_op_print(op);
	if (!task->op_text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	task->ctx = ctx;
	task->op = tessel_op_retain(op);
	task->target_kind = "cpu";
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
