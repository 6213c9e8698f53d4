/* CUPTI's activity API (runtime/cupti.h).  The few types, constants and
 * entry points tessel calls are declared here from cupti_activity.h and
 * cupti_result.h, so that building needs no CUPTI headers.  A kernel
 * record (CUpti_ActivityKernel1 to 10, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
 * begins with the same fields in every version: its kind, four bytes of
 * cache and register fields, two 4-byte cache configurations, then the
 * start and end timestamps in nanoseconds, at byte offsets 16 and 24;
 * only those are read. */
#include "runtime/cupti.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_lib.h"

typedef int CUptiResult;
typedef struct CUctx_st *CUcontext;

#define CUPTI_SUCCESS 0
#define CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10
#define CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1

enum { BUFFER_BYTES = 4 << 20, RECORD_ALIGN = 8 };

typedef struct kernel_record_head {
	uint32_t kind;
	uint8_t cache_config, shared_memory_config;
	uint16_t registers_per_thread;
	uint32_t partitioned_requested, partitioned_executed;
	uint64_t start, end;
} kernel_record_head;

typedef void (*request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*complete_fn)(CUcontext ctx, uint32_t stream, uint8_t *buffer,
	size_t size, size_t valid);

typedef struct cupti_api {
	bool loaded;
	char error[1024];
	CUptiResult (*GetResultString)(CUptiResult, const char **);
	CUptiResult (*ActivityEnable)(int);
	CUptiResult (*ActivityDisable)(int);
	CUptiResult (*ActivityRegisterCallbacks)(request_fn, complete_fn);
	CUptiResult (*ActivityFlushAll)(uint32_t);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, void **);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
} cupti_api;

/* What a recording has collected: kernels' (start, end) pairs. */
typedef struct recording {
	pthread_mutex_t lock;
	bool active;
	uint64_t (*spans)[2];
	int n, cap;
	size_t dropped;
	bool out_of_memory;
} recording;

static cupti_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static recording rec = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void load_api(void)
{
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12",
		"libcupti.so", NULL };
	void *lib = rt_cuda_lib_open("CUPTI", names, "TESSEL_CUPTI", api.error,
		sizeof(api.error));
	if (!lib)
		return;
	rt_lib_symbol fns[] = {
#define FN(n) { (void **)&api.n, "cupti" #n }
		FN(GetResultString), FN(ActivityEnable), FN(ActivityDisable),
		FN(ActivityRegisterCallbacks), FN(ActivityFlushAll),
		FN(ActivityGetNextRecord), FN(ActivityGetNumDroppedRecords),
#undef FN
	};
	if (rt_cuda_lib_resolve(lib, "the CUPTI library", fns,
			(int)(sizeof(fns) / sizeof(*fns)), api.error, sizeof(api.error)) == 0)
		api.loaded = true;
}

int rt_cupti_probe(char *err, size_t len)
{
	pthread_once(&api_once, load_api);
	if (api.loaded)
		return 0;
	snprintf(err, len, "%s", api.error);
	return -1;
}

/* Write "call: description (code)" of CUPTI's error "r" into "err" and
 * return -1. */
static int fail(char *err, size_t len, const char *call, CUptiResult r)
{
	const char *text = NULL;
	if (api.GetResultString(r, &text) != CUPTI_SUCCESS || !text)
		text = "unknown CUPTI error";
	snprintf(err, len, "%s: %s (%d)", call, text, r);
	return -1;
}

static void request_buffer(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(RECORD_ALIGN, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

/* Append the span of one kernel record to "rec" (under its lock). */
static void append_span(const kernel_record_head *k)
{
	if (rec.n == rec.cap) {
		int cap = rec.cap ? 2 * rec.cap : 1024;
		void *grown = realloc(rec.spans, (size_t)cap * sizeof(*rec.spans));
		if (!grown) {
			rec.out_of_memory = true;
			return;
		}
		rec.spans = grown;
		rec.cap = cap;
	}
	rec.spans[rec.n][0] = k->start;
	rec.spans[rec.n][1] = k->end;
	rec.n++;
}

/* CUPTI hands back a full (or flushed) buffer: keep its kernels' spans. */
static void complete_buffer(CUcontext ctx, uint32_t stream, uint8_t *buffer,
	size_t size, size_t valid)
{
	(void)size;
	pthread_mutex_lock(&rec.lock);
	void *record = NULL;
	while (valid && api.ActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
		kernel_record_head k;
		memcpy(&k, record, sizeof(k));
		if (k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec.active)
			append_span(&k);
	}
	size_t dropped = 0;
	if (api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
		rec.dropped += dropped;
	pthread_mutex_unlock(&rec.lock);
	free(buffer);
}

int rt_cupti_start(char *err, size_t len)
{
	static bool registered;
	if (rt_cupti_probe(err, len))
		return -1;
	pthread_mutex_lock(&rec.lock);
	bool busy = rec.active;
	if (!busy) {
		rec.active = true;
		rec.n = 0;
		rec.dropped = 0;
		rec.out_of_memory = false;
	}
	pthread_mutex_unlock(&rec.lock);
	if (busy) {
		snprintf(err, len, "a CUPTI recording is already running in this process");
		return -1;
	}
	CUptiResult r = CUPTI_SUCCESS;
	if (!registered && (r = api.ActivityRegisterCallbacks(request_buffer,
			complete_buffer)) != CUPTI_SUCCESS) {
		rec.active = false;
		return fail(err, len, "cuptiActivityRegisterCallbacks", r);
	}
	registered = true;
	if ((r = api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
		rec.active = false;
		return fail(err, len, "cuptiActivityEnable", r);
	}
	return 0;
}

static int compare_spans(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Move the spans recorded into "*seconds" and "*n", in start order. */
static int take_spans(double **seconds, int *n, char *err, size_t len)
{
	*seconds = NULL;
	*n = 0;
	if (rec.dropped || rec.out_of_memory) {
		snprintf(err, len, "CUPTI dropped %zu kernel records%s", rec.dropped,
			rec.out_of_memory ? " (out of memory)" : "");
		return -1;
	}
	qsort(rec.spans, (size_t)rec.n, sizeof(*rec.spans), compare_spans);
	*seconds = malloc((size_t)(rec.n ? rec.n : 1) * sizeof(double));
	if (!*seconds) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	for (int i = 0; i < rec.n; i++)
		(*seconds)[i] = rec.spans[i][1] > rec.spans[i][0]
			? (double)(rec.spans[i][1] - rec.spans[i][0]) * 1e-9 : 0.0;
	*n = rec.n;
	return 0;
}

int rt_cupti_stop(double **seconds, int *n, char *err, size_t len)
{
	*seconds = NULL;
	*n = 0;
	if (!api.loaded || !rec.active) {
		snprintf(err, len, "no CUPTI recording is running");
		return -1;
	}
	CUptiResult r = api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	CUptiResult d = api.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	pthread_mutex_lock(&rec.lock);
	int status = r != CUPTI_SUCCESS ? fail(err, len, "cuptiActivityFlushAll", r)
		: d != CUPTI_SUCCESS ? fail(err, len, "cuptiActivityDisable", d)
		: take_spans(seconds, n, err, len);
	rec.active = false;
	pthread_mutex_unlock(&rec.lock);
	return status;
}
