/* Fork-join overhead and loop throughput of tessel's own thread pool
 * (runtime/threadpool.c) against OpenMP (libgomp, "#pragma omp parallel
 * for schedule(static)"), on the same bodies.  This is the measurement
 * behind the choice of parallel runtime for generated kernels; the numbers
 * and the command are in bench/RESULTS.md.
 *
 *   parallel_overhead [--threads N] [--rounds R] [--spin-ns NS]
 *
 * Each round measures every case with the pool, then with OpenMP (and a
 * serial baseline), pausing between runtimes so that the idle threads of
 * one stop spinning before the other runs; the table gives the median over
 * rounds of each round's median. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/threadpool.h"
#include "runtime/timer.h"

#define MAX_ROUNDS 32
#define FORK_JOIN_CALLS 20000
#define FORK_JOIN_WARMUP 2000
#define COMPUTE_STEPS 256
#define COMPUTE_ELEMENTS (1 << 18)
#define SETTLE_S 0.05

enum runtime { RT_SERIAL, RT_POOL, RT_OPENMP, RT_COUNT };

/* One workload: arrays, sizes and the runtime to use. */
typedef struct bench_case {
	const char *name;
	float *a;
	const float *b;
	int64_t n;
	double bytes;
	int threads;
	tessel_kernel_env env;
	void (*run[RT_COUNT])(void *c);
} bench_case;

typedef struct bench_opts {
	int threads;
	int rounds;
	long spin_ns;
} bench_opts;

static void empty_body(int64_t begin, int64_t end, void *closure)
{
	(void)begin;
	(void)end;
	(void)closure;
	__asm__ __volatile__("" ::: "memory");
}

static void fork_join_pool(bench_case *c)
{
	rt_parallel_for(&c->env, c->threads, empty_body, NULL);
}

static void fork_join_openmp(bench_case *c)
{
	int threads = c->threads;
#pragma omp parallel for schedule(static) num_threads(threads)
	for (int i = 0; i < threads; i++)
		__asm__ __volatile__("" ::: "memory");
}

static int compare_doubles(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, compare_doubles);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Return the median time of one empty fork-join of "c" on "rt", timing
 * each of FORK_JOIN_CALLS calls on its own. */
static double measure_fork_join(bench_case *c, enum runtime rt)
{
	void (*call)(bench_case *) = rt == RT_POOL ? fork_join_pool : fork_join_openmp;
	if (rt == RT_SERIAL)
		return 0;
	double *times = malloc(FORK_JOIN_CALLS * sizeof *times);
	for (int i = 0; i < FORK_JOIN_WARMUP; i++)
		call(c);
	for (int i = 0; i < FORK_JOIN_CALLS; i++) {
		double t0 = rt_now_s();
		call(c);
		times[i] = rt_now_s() - t0;
	}
	double median = median_of(times, FORK_JOIN_CALLS);
	free(times);
	return median;
}

static void scale_range(float *restrict a, const float *restrict b,
	int64_t begin, int64_t end)
{
	for (int64_t i = begin; i < end; i++)
		a[i] = b[i] * 2.0f;
}

static void scale_body(int64_t begin, int64_t end, void *closure)
{
	bench_case *c = closure;
	scale_range(c->a, c->b, begin, end);
}

static void scale_serial(void *arg)
{
	bench_case *c = arg;
	scale_range(c->a, c->b, 0, c->n);
}

static void scale_pool(void *arg)
{
	bench_case *c = arg;
	rt_parallel_for(&c->env, c->n, scale_body, c);
}

static void scale_openmp(void *arg)
{
	bench_case *c = arg;
	float *restrict a = c->a;
	const float *restrict b = c->b;
	int64_t n = c->n;
#pragma omp parallel for schedule(static) num_threads(c->threads)
	for (int64_t i = 0; i < n; i++)
		a[i] = b[i] * 2.0f;
}

static inline float compute_element(float x)
{
	for (int k = 0; k < COMPUTE_STEPS; k++)
		x = x * 0.999f + 0.001f;
	return x;
}

static void compute_range(float *restrict a, const float *restrict b,
	int64_t begin, int64_t end)
{
	for (int64_t i = begin; i < end; i++)
		a[i] = compute_element(b[i]);
}

static void compute_body(int64_t begin, int64_t end, void *closure)
{
	bench_case *c = closure;
	compute_range(c->a, c->b, begin, end);
}

static void compute_serial(void *arg)
{
	bench_case *c = arg;
	compute_range(c->a, c->b, 0, c->n);
}

static void compute_pool(void *arg)
{
	bench_case *c = arg;
	rt_parallel_for(&c->env, c->n, compute_body, c);
}

/* Store in "begin" and "end" chunk "i" of [0, "n") split into "parts"
 * (the pool's static chunks). */
static void chunk_of(int64_t n, int parts, int i, int64_t *begin, int64_t *end)
{
	int64_t base = n / parts, extra = n % parts;
	*begin = i * base + (i < extra ? i : extra);
	*end = *begin + base + (i < extra ? 1 : 0);
}

static void compute_openmp_outlined(void *arg)
{
	bench_case *c = arg;
	int parts = c->threads;
#pragma omp parallel for schedule(static) num_threads(parts)
	for (int i = 0; i < parts; i++) {
		int64_t begin, end;
		chunk_of(c->n, parts, i, &begin, &end);
		compute_body(begin, end, c);
	}
}

static void compute_openmp(void *arg)
{
	bench_case *c = arg;
	float *restrict a = c->a;
	const float *restrict b = c->b;
	int64_t n = c->n;
#pragma omp parallel for schedule(static) num_threads(c->threads)
	for (int64_t i = 0; i < n; i++)
		a[i] = compute_element(b[i]);
}

/* Return the median time of "fn"("c") under rt_time's options for a
 * short benchmark. */
static double time_median(void (*fn)(void *), bench_case *c)
{
	rt_timer_opts o = rt_timer_opts_default();
	o.warmup = 3;
	o.min_repeats = 20;
	o.min_total_s = 0.05;
	o.max_repeats = 100000;
	rt_timing t;
	rt_time(fn, c, &o, &t);
	return t.median_s;
}

/* Return the time of one run of "c" on "rt": the median per call of an
 * empty fork-join, or rt_time's median of the workload. */
static double measure(bench_case *c, enum runtime rt)
{
	if (!c->run[rt])
		return measure_fork_join(c, rt);
	return time_median(c->run[rt], c);
}

/* Wait long enough for the idle threads of the runtime just measured to
 * stop spinning and sleep. */
static void settle(void)
{
	struct timespec ts = { 0, (long)(SETTLE_S * 1e9) };
	nanosleep(&ts, NULL);
}

static float *new_floats(int64_t n)
{
	float *v = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
	if (!v) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (int64_t i = 0; i < n; i++)
		v[i] = (float)(i % 1000) * 0.001f;
	return v;
}

/* Print one row of the table from the per-round medians "t" of "c". */
static void print_row(const bench_case *c, double t[RT_COUNT][MAX_ROUNDS],
	int rounds)
{
	double med[RT_COUNT], lo[RT_COUNT], hi[RT_COUNT];
	for (int rt = 0; rt < RT_COUNT; rt++) {
		med[rt] = median_of(t[rt], rounds);
		lo[rt] = t[rt][0];
		hi[rt] = t[rt][rounds - 1];
	}
	printf("| %-24s |", c->name);
	for (int rt = 0; rt < RT_COUNT; rt++) {
		if (med[rt] == 0) {
			printf(" %-21s |", "-");
			continue;
		}
		char cell[64];
		snprintf(cell, sizeof cell, "%.2f (%.2f-%.2f)", med[rt] * 1e6,
			 lo[rt] * 1e6, hi[rt] * 1e6);
		printf(" %-21s |", cell);
	}
	printf(" %5.2f |", med[RT_OPENMP] / med[RT_POOL]);
	if (c->bytes > 0)
		printf(" %6.1f / %6.1f |\n", c->bytes / med[RT_POOL] * 1e-9,
		       c->bytes / med[RT_OPENMP] * 1e-9);
	else
		printf(" %15s |\n", "");
}

/* Measure "c" on every runtime, "rounds" times, and print its row. */
static void run_case(bench_case *c, int rounds)
{
	double t[RT_COUNT][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++)
		for (int rt = 0; rt < RT_COUNT; rt++) {
			t[rt][r] = measure(c, (enum runtime)rt);
			settle();
		}
	print_row(c, t, rounds);
	fflush(stdout);
}

static bench_opts parse_args(int argc, char **argv)
{
	bench_opts o = { .threads = 2, .rounds = 5, .spin_ns = RT_POOL_DEFAULT_SPIN_NS };
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--threads") == 0)
			o.threads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--rounds") == 0)
			o.rounds = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--spin-ns") == 0)
			o.spin_ns = atol(argv[i + 1]);
	}
	o.threads = o.threads < 1 ? 1 : o.threads;
	o.rounds = o.rounds < 1 ? 1 : o.rounds > MAX_ROUNDS ? MAX_ROUNDS : o.rounds;
	return o;
}

int main(int argc, char **argv)
{
	bench_opts o = parse_args(argc, argv);
	rt_pool *pool = rt_pool_new(o.threads);
	rt_pool_set_spin(pool, o.spin_ns);
	const char *policy = getenv("OMP_WAIT_POLICY");
	printf("threads %d, rounds %d, pool spin %ld ns, OMP_WAIT_POLICY=%s, "
	       "omp_get_max_threads() %d\n\n", o.threads, o.rounds, o.spin_ns,
	       policy ? policy : "(unset)", omp_get_max_threads());
	printf("| case                     | serial us (range)     | pool us (range)       "
	       "| OpenMP us (range)     | OMP/pool | GB/s pool / OMP |\n");
	printf("|--------------------------|-----------------------|-----------------------"
	       "|-----------------------|-------|-----------------|\n");
	int64_t max_n = (64 << 20) / 4;
	float *a = new_floats(max_n), *b = new_floats(max_n);
#define SCALE { scale_serial, scale_pool, scale_openmp }
	bench_case cases[] = {
		{ "fork-join, empty body", a, b, 0, 0, 0, { 0 }, { 0 } },
		{ "a=2b, 64 KiB", a, b, (64 << 10) / 4, 0, 0, { 0 }, SCALE },
		{ "a=2b, 1 MiB", a, b, (1 << 20) / 4, 0, 0, { 0 }, SCALE },
		{ "a=2b, 64 MiB", a, b, (64 << 20) / 4, 0, 0, { 0 }, SCALE },
		{ "256 FMA/elem, 1 MiB", a, b, COMPUTE_ELEMENTS, 0, 0, { 0 },
		  { compute_serial, compute_pool, compute_openmp } },
		{ "same, OMP calls body fn", a, b, COMPUTE_ELEMENTS, 0, 0, { 0 },
		  { compute_serial, compute_pool, compute_openmp_outlined } },
	};
#undef SCALE
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bench_case *c = &cases[i];
		c->threads = o.threads;
		c->bytes = c->run[0] == scale_serial ? 2.0 * 4 * (double)c->n : 0;
		rt_pool_env(pool, &c->env);
		run_case(c, o.rounds);
	}
	free(a);
	free(b);
	rt_pool_free(pool);
	return 0;
}
