#include "tuner/gpu_target.h"

#include <stdio.h>
#include <string.h>

#include "runtime/cuda.h"
#include "runtime/gpu_target.h"
#include "runtime/isolate.h"
#include "runtime/opencl.h"
#include "schedule/bound.h"

/* What the child leaves in shared memory. */
typedef struct device_query {
	tune_gpu_target t;
	char error[512];
} device_query;

/* Replace the characters of "s" that a target string cannot hold. */
static void plain_name(char *s)
{
	for (; *s; s++)
		if (*s == ' ' || *s == '"' || *s == '\t' || *s == '\n')
			*s = '_';
}

static int64_t at_most(int64_t v, int64_t limit)
{
	return v > 0 && v < limit ? v : limit;
}

/* The child: open the device and read its limits. */
static int query_opencl(void *arg)
{
	device_query *q = arg;
	rt_cl_device *d = rt_cl_open(q->error, sizeof(q->error));
	if (!d)
		return 1;
	snprintf(q->t.device, sizeof(q->t.device), "%s", rt_cl_device_name(d));
	snprintf(q->t.compiler, sizeof(q->t.compiler), "%s", rt_cl_compiler(d));
	q->t.compute_units = rt_cl_compute_units(d);
	q->t.max_threads = rt_cl_max_threads(d);
	q->t.shared_bytes = rt_cl_local_bytes(d);
	rt_cl_close(d);
	return 0;
}

int tune_gpu_target_opencl(tune_gpu_target *t, char *err, size_t errlen)
{
	static tune_gpu_target known;
	if (known.device[0]) {
		*t = known;
		return 0;
	}
	device_query *q = rt_shared_alloc(sizeof(*q));
	if (!q) {
		snprintf(err, errlen, "out of shared memory");
		return -1;
	}
	char why[256];
	rt_run_status st = rt_run_isolated(query_opencl, q, 60, why, sizeof(why));
	int r = 0;
	if (st != RT_RUN_OK) {
		snprintf(err, errlen, "no OpenCL device: %s", q->error[0] ? q->error : why);
		r = -1;
	} else {
		*t = q->t;
		plain_name(t->device);
		if (!t->device[0])
			snprintf(t->device, sizeof(t->device), "unnamed");
		t->max_threads = at_most(t->max_threads, SCH_MAX_THREADS);
		t->shared_bytes = at_most(t->shared_bytes, SCH_MAX_SHARED_BYTES);
		known = *t;
	}
	rt_shared_free(q, sizeof(*q));
	return r;
}

int tune_gpu_target_cuda(int sm, tune_gpu_target *t, char *err, size_t errlen)
{
	rt_gpu_target arch;
	memset(t, 0, sizeof(*t));
	if (rt_gpu_target_for_sm(sm, &arch, err, errlen))
		return -1;
	snprintf(t->device, sizeof(t->device), "sm_%d", sm);
	t->compute_units = arch.sm_count;
	t->max_threads = at_most(arch.max_threads_per_block, SCH_MAX_THREADS);
	t->shared_bytes = at_most(arch.shared_per_block, SCH_MAX_SHARED_BYTES);
	t->sm = sm;
	return 0;
}

/* What the CUDA child leaves in shared memory. */
typedef struct cuda_query {
	rt_gpu_target t;
	char error[512];
} cuda_query;

static int query_cuda(void *arg)
{
	cuda_query *q = arg;
	rt_cuda_device *d = rt_cuda_open(0, q->error, sizeof(q->error));
	if (!d)
		return 1;
	q->t = *rt_cuda_target(d);
	rt_cuda_close(d);
	return 0;
}

int tune_cuda_device(rt_gpu_target *d, char *err, size_t errlen)
{
	static cuda_query known;
	static bool asked;
	if (!asked && rt_cuda_probe(known.error, sizeof(known.error)) == 0) {
		cuda_query *q = rt_shared_alloc(sizeof(*q));
		if (!q) {
			snprintf(err, errlen, "out of shared memory");
			return -1;
		}
		char status[256];
		if (rt_run_isolated(query_cuda, q, 60, status, sizeof(status)) != RT_RUN_OK &&
		    !q->error[0])
			snprintf(q->error, sizeof(q->error), "%s", status);
		known = *q;
		rt_shared_free(q, sizeof(*q));
	}
	asked = true;
	if (known.error[0]) {
		snprintf(err, errlen, "%s", known.error);
		return -1;
	}
	*d = known.t;
	return 0;
}

int tune_gpu_target_cuda_device(int sm, tune_gpu_target *t, char *err, size_t errlen)
{
	rt_gpu_target d;
	char why[512];
	bool device = tune_cuda_device(&d, why, sizeof(why)) == 0;
	if (!device || (sm && sm != d.sm))
		return tune_gpu_target_cuda(sm ? sm : RT_CUDA_DEFAULT_SM, t, err, errlen);
	memset(t, 0, sizeof(*t));
	snprintf(t->device, sizeof(t->device), "%.127s", d.name);
	plain_name(t->device);
	t->compute_units = d.sm_count;
	t->max_threads = at_most(d.max_threads_per_block, SCH_MAX_THREADS);
	t->shared_bytes = at_most(d.shared_per_block, SCH_MAX_SHARED_BYTES);
	t->sm = d.sm;
	return 0;
}

int tune_gpu_target_print(const char *kind, const tune_gpu_target *t, char *buf,
	size_t len)
{
	char arch[32] = "";
	if (t->sm > 0)
		snprintf(arch, sizeof(arch), " -arch=sm_%d", t->sm);
	return snprintf(buf, len, "%s%s -device=%s -units=%d -threads=%lld -shared=%lld",
		kind, arch, t->device, t->compute_units, (long long)t->max_threads,
		(long long)t->shared_bytes);
}
