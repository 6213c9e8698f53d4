/* The memory bandwidth a kernel can hope for: a STREAM-like copy
 * (McCalpin's "Copy", a[i] = b[i], a plain loop compiled like tessel's
 * kernels, not memcpy) over arrays well beyond the last-level cache, on
 * tessel's own thread pool, so that memory-bound kernels
 * (softmax, layer_norm) are compared with what this machine can move.
 *
 *   stream_copy [--threads N] [--mib M] [--min-time S]
 *
 * Prints the median and best bandwidth in GB/s (10^9 bytes a second,
 * counting the bytes read and the bytes written, as STREAM does) and one
 * JSON line for scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"

typedef struct copy_job {
	float *dst;
	const float *src;
	int64_t n;
	int chunks;
	tessel_kernel_env *env;
} copy_job;

static void copy_chunk(int64_t begin, int64_t end, void *closure)
{
	const copy_job *j = closure;
	int64_t per = (j->n + j->chunks - 1) / j->chunks;
	for (int64_t c = begin; c < end; c++) {
		int64_t lo = c * per, hi = lo + per < j->n ? lo + per : j->n;
		for (int64_t i = lo; i < hi; i++)
			j->dst[i] = j->src[i];
	}
}

static void run_copy(void *arg)
{
	copy_job *j = arg;
	j->env->parallel_for(j->env, j->chunks, copy_chunk, j);
}

int main(int argc, char **argv)
{
	int threads = rt_num_cpus();
	double mib = 256, min_time = 1.0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--threads") == 0)
			threads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--mib") == 0)
			mib = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--min-time") == 0)
			min_time = atof(argv[i + 1]);
		else {
			fprintf(stderr, "usage: stream_copy [--threads N] [--mib M] [--min-time S]\n");
			return 1;
		}
	}
	if (threads < 1 || !(mib > 0) || !(min_time > 0)) {
		fprintf(stderr, "stream_copy: threads, size and time must be positive\n");
		return 1;
	}
	int64_t n = (int64_t)(mib * 1024 * 1024 / sizeof(float));
	float *a = aligned_alloc(64, (size_t)n * sizeof(float));
	float *b = aligned_alloc(64, (size_t)n * sizeof(float));
	if (!a || !b) {
		fprintf(stderr, "stream_copy: out of memory\n");
		return 1;
	}
	for (int64_t i = 0; i < n; i++) {
		a[i] = 0;
		b[i] = (float)i;
	}
	rt_pool *pool = rt_pool_new(threads);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	copy_job job = { a, b, n, threads * 8, &env };
	rt_timer_opts o = rt_timer_opts_default();
	o.min_total_s = min_time;
	o.min_repeats = 5;
	rt_timing t;
	if (rt_time(run_copy, &job, &o, &t) != RT_TIME_OK) {
		fprintf(stderr, "stream_copy: timing failed\n");
		return 1;
	}
	double bytes = 2.0 * (double)n * sizeof(float);
	printf("copy of %.0f MiB on %d threads: median %.2f GB/s, best %.2f GB/s "
	       "(%d runs)\n", mib, threads, bytes / t.median_s * 1e-9,
		bytes / t.min_s * 1e-9, t.runs);
	printf("{\"threads\": %d, \"mib\": %g, \"median_gbs\": %.4g, \"best_gbs\": %.4g}\n",
		threads, mib, bytes / t.median_s * 1e-9, bytes / t.min_s * 1e-9);
	rt_pool_free(pool);
	free(a);
	free(b);
	return 0;
}
