/* Timing with warm-up, repeats, median and optional cache flushing. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cpu_wait.h"
#include "runtime/target.h"
#include "runtime/timer.h"

#define FLUSH_STRIDE 64

rt_timer_opts rt_timer_opts_default(void)
{
	return (rt_timer_opts){
		.warmup = 1,
		.min_repeats = 3,
		.max_repeats = 1000,
		.min_total_s = 0.1,
		.flush_cache = false,
		.flush_bytes = 0,
		.timeout_s = 0,
	};
}

double rt_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool rt_timer_opts_valid(const rt_timer_opts *o)
{
	return o->warmup >= 0 && o->min_repeats >= 1 &&
	       o->max_repeats >= o->min_repeats && o->min_total_s >= 0 &&
	       o->timeout_s >= 0 && o->give_up_s >= 0;
}

/* Return the size of the flush buffer for "o": flush_bytes, or twice the
 * host's L3 (or L2 when it has no L3). */
static size_t flush_size(const rt_timer_opts *o)
{
	if (o->flush_bytes)
		return o->flush_bytes;
	rt_cpu_target host;
	rt_cpu_target_host(&host);
	int64_t last = host.l3_bytes ? host.l3_bytes : host.l2_bytes;
	return (size_t)(2 * last);
}

/* Write then read every cache line of "buf" of "len" bytes, evicting what
 * the caches held before. */
static void flush_caches(unsigned char *buf, size_t len)
{
	memset(buf, (int)(len & 0xff), len);
	unsigned char sum = 0;
	for (size_t i = 0; i < len; i += FLUSH_STRIDE)
		sum ^= buf[i];
	volatile unsigned char sink = sum;
	(void)sink;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void rt_timing_summarize(double *times, int n, rt_timing *out)
{
	memset(out, 0, sizeof *out);
	out->runs = n;
	out->cpu_wait = NAN;
	if (n == 0)
		return;
	qsort(times, (size_t)n, sizeof *times, compare_doubles);
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += times[i];
	out->min_s = times[0];
	out->mean_s = sum / n;
	out->median_s = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

bool rt_timing_disturbed(const rt_timing *t)
{
	return t->cpu_wait > RT_DISTURBED_CPU_WAIT;
}

bool rt_timer_expired(const rt_timer_opts *o, double start)
{
	return o->timeout_s > 0 && rt_now_s() - start > o->timeout_s;
}

/* Run "fn"("arg") "o"->warmup times, flushing first when "flush" is not
 * NULL, and store the time of the last run in "*last" (0 without
 * warm-up); return false when the timeout ended the warm-up. */
static bool warm_up(void (*fn)(void *), void *arg, const rt_timer_opts *o,
	unsigned char *flush, size_t flush_len, double start, double *last)
{
	*last = 0;
	for (int i = 0; i < o->warmup; i++) {
		if (rt_timer_expired(o, start))
			return false;
		if (flush)
			flush_caches(flush, flush_len);
		double t0 = rt_now_s();
		fn(arg);
		*last = rt_now_s() - t0;
	}
	return true;
}

bool rt_timer_gives_up(const rt_timer_opts *o, double run_s)
{
	return o->give_up_s > 0 && run_s > o->give_up_s;
}

/* Whether "o" gives up after "runs" runs of "total" seconds. */
static bool gives_up(const rt_timer_opts *o, int runs, double total)
{
	return runs == 1 && rt_timer_gives_up(o, total);
}

bool rt_timer_want_more(const rt_timer_opts *o, int runs, double total)
{
	return runs < o->max_repeats && !gives_up(o, runs, total) &&
	       (runs < o->min_repeats || total < o->min_total_s);
}

bool rt_timer_enough(const rt_timer_opts *o, int runs, double total)
{
	return runs >= o->min_repeats || gives_up(o, runs, total);
}

/* Time "fn"("arg"); see timer.h. */
int rt_time(void (*fn)(void *), void *arg, const rt_timer_opts *o,
	rt_timing *out)
{
	rt_timer_opts defaults = rt_timer_opts_default();
	o = o ? o : &defaults;
	memset(out, 0, sizeof *out);
	if (!fn || !rt_timer_opts_valid(o))
		return RT_TIME_ERROR;
	size_t flush_len = o->flush_cache ? flush_size(o) : 0;
	unsigned char *flush = flush_len ? malloc(flush_len) : NULL;
	double *times = malloc((size_t)o->max_repeats * sizeof *times);
	if (!times || (flush_len && !flush)) {
		free(flush);
		free(times);
		return RT_TIME_ERROR;
	}
	double start = rt_now_s();
	int runs = 0;
	double total = 0, timed_from = 0;
	uint64_t wait_from = 0, wait_to;
	double warm;
	bool in_time = warm_up(fn, arg, o, flush, flush_len, start, &warm);
	if (in_time && o->warmup > 0 && rt_timer_gives_up(o, warm)) {
		times[runs] = warm;
		total += times[runs++];
		in_time = false;
	}
	bool waits = in_time && rt_cpu_wait_ns(&wait_from) == 0;
	if (waits)
		timed_from = rt_now_s();
	while (in_time && rt_timer_want_more(o, runs, total)) {
		if (flush)
			flush_caches(flush, flush_len);
		double t0 = rt_now_s();
		fn(arg);
		times[runs] = rt_now_s() - t0;
		total += times[runs++];
		in_time = !rt_timer_expired(o, start);
	}
	double span = rt_now_s() - timed_from;
	rt_timing_summarize(times, runs, out);
	if (waits && rt_cpu_wait_ns(&wait_to) == 0 && span > 0)
		out->cpu_wait = (double)(wait_to - wait_from) * 1e-9 / span;
	free(flush);
	free(times);
	return rt_timer_enough(o, runs, total) ? RT_TIME_OK : RT_TIME_TIMEOUT;
}
