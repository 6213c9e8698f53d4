#include "runtime/cuda_timing.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cupti.h"

/* Run "enqueue" once, after an L2 flush when "o" asks, and store the
 * events' time in "*s". */
static int one_run(rt_cuda_device *d, int (*enqueue)(void *), void *arg,
	const rt_timer_opts *o, double *s, char *err, size_t len)
{
	if (o->flush_cache && rt_cuda_flush_l2(d, err, len))
		return -1;
	return rt_cuda_time(d, enqueue, arg, s, err, len);
}

/* Sum CUPTI's "n" kernel durations "k" into one time per run of the
 * "runs" runs and summarize them in out->kernels; a count of kernels
 * that is not a multiple of the runs leaves it empty, with why. */
static void kernel_times(double *k, int n, int runs, rt_cuda_timing *out)
{
	if (n == 0 || n % runs != 0) {
		snprintf(out->cupti_error, sizeof(out->cupti_error), "CUPTI saw %d kernels "
			"in %d runs", n, runs);
		return;
	}
	int per = n / runs;
	for (int r = 0; r < runs; r++) {
		double sum = 0;
		for (int i = 0; i < per; i++)
			sum += k[r * per + i];
		k[r] = sum;
	}
	out->kernels_per_run = per;
	rt_timing_summarize(k, runs, &out->kernels);
}

/* Stop the CUPTI recording of "runs" runs into out->kernels. */
static void collect_kernels(int runs, rt_cuda_timing *out)
{
	double *k = NULL;
	int n = 0;
	if (rt_cupti_stop(&k, &n, out->cupti_error, sizeof(out->cupti_error)) == 0 &&
	    runs > 0)
		kernel_times(k, n, runs, out);
	free(k);
}

int rt_cuda_time_runs(rt_cuda_device *d, int (*enqueue)(void *arg), void *arg,
	const rt_timer_opts *o, rt_cuda_timing *out, char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (!rt_timer_opts_valid(o)) {
		snprintf(err, len, "invalid timer options");
		return RT_TIME_ERROR;
	}
	double *times = malloc((size_t)o->max_repeats * sizeof(double));
	if (!times) {
		snprintf(err, len, "out of memory");
		return RT_TIME_ERROR;
	}
	double start = rt_now_s(), total = 0, warm = 0;
	int runs = 0, status = 0, warmed = 0;
	for (; status == 0 && warmed < o->warmup && !rt_timer_expired(o, start); warmed++)
		status = one_run(d, enqueue, arg, o, &warm, err, len);
	if (status == 0 && warmed > 0 && rt_timer_gives_up(o, warm)) {
		rt_timing_summarize(&warm, 1, &out->events);
		free(times);
		return RT_TIME_OK;
	}
	bool cupti = status == 0 &&
		rt_cupti_start(out->cupti_error, sizeof(out->cupti_error)) == 0;
	while (status == 0 && !rt_timer_expired(o, start) &&
	       rt_timer_want_more(o, runs, total)) {
		status = one_run(d, enqueue, arg, o, &times[runs], err, len);
		if (status == 0)
			total += times[runs++];
	}
	if (cupti)
		collect_kernels(runs, out);
	rt_timing_summarize(times, runs, &out->events);
	free(times);
	if (status)
		return RT_TIME_ERROR;
	return rt_timer_enough(o, runs, total) ? RT_TIME_OK : RT_TIME_TIMEOUT;
}

const rt_timing *rt_cuda_timing_best(const rt_cuda_timing *t)
{
	return t->kernels.runs ? &t->kernels : &t->events;
}
