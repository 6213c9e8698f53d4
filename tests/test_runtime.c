/* Tests of the runtime pieces behind CPU code generation: modules
 * (dlopen), the thread pool, CPU targets and their strings, the timer, and
 * the compile driver with its kernel cache. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/cpu_wait.h"
#include "runtime/isolate.h"
#include "runtime/module.h"
#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "runtime/workspace.h"
#include "tessel/kernel.h"
#include "tests/support.h"

#ifndef TESSEL_SOURCE_DIR
#define TESSEL_SOURCE_DIR "."
#endif

#define ERR_LEN 4096
#define PATH_LEN 1024

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

/* Return the number of lines of the file "path", 0 when it is missing. */
static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int lines = 0;
	for (int ch; (ch = fgetc(f)) != EOF;)
		lines += ch == '\n';
	fclose(f);
	return lines;
}

/* Return the number of entries of the scratch directory's "sub" whose
 * name contains "part". */
static int count_entries(const char *sub, const char *part)
{
	char dir[PATH_LEN];
	int count = 0;
	DIR *d = opendir(test_scratch_file(dir, sizeof dir, sub));
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		count += strstr(e->d_name, part) != NULL;
	closedir(d);
	return count;
}

/* Kill this test's process (Criterion reports a crash) if it runs longer
 * than "seconds": a deadlock must fail, not hang the suite.  (Criterion's
 * own .timeout leaks memory in its runner under --jobs, which LeakSanitizer
 * reports.) */
static void fail_if_hung(unsigned seconds)
{
	alarm(seconds);
}

/* ---- modules ---- */

Test(module, open_missing_file_reports_loader_message)
{
	char err[ERR_LEN] = "";
	cr_assert_null(rt_module_open("/nonexistent/kernel.so", err, sizeof err));
	cr_assert(strstr(err, "/nonexistent/kernel.so"), "%s", err);
	cr_assert(strstr(err, "No such file"), "%s", err);
}

Test(module, open_empty_path)
{
	char err[ERR_LEN] = "";
	cr_assert_null(rt_module_open("", err, sizeof err));
	cr_assert(strstr(err, "empty path"), "%s", err);
}

Test(module, open_text_file_fails, .init = test_scratch_make, .fini = test_scratch_remove)
{
	char path[PATH_LEN], err[ERR_LEN] = "";
	write_text(test_scratch_file(path, sizeof path, "not.so"), "not an object\n", 0644);
	cr_assert_null(rt_module_open(path, err, sizeof err));
	cr_assert(strstr(err, "cannot open"), "%s", err);
}

Test(module, symbols_found_and_missing)
{
	char err[ERR_LEN] = "";
	rt_module *m = rt_module_open("libm.so.6", err, sizeof err);
	cr_assert_not_null(m, "%s", err);
	cr_assert_str_eq(rt_module_path(m), "libm.so.6");
	double (*cosine)(double) = (double (*)(double))rt_module_symbol(m, "cos", err, sizeof err);
	cr_assert_not_null(cosine, "%s", err);
	cr_assert_float_eq(cosine(0.0), 1.0, 1e-12);
	cr_assert_null(rt_module_symbol(m, "tessel_no_such_symbol", err, sizeof err));
	cr_assert(strstr(err, "tessel_no_such_symbol"), "%s", err);
	cr_assert_null(rt_module_symbol(m, "", err, sizeof err));
	cr_assert_null(rt_module_symbol(NULL, "cos", err, sizeof err));
	rt_module_close(m);
	rt_module_close(NULL);
}

Test(module, tiny_error_buffer_is_terminated)
{
	char err[8];
	memset(err, 'x', sizeof err);
	cr_assert_null(rt_module_open("/nonexistent/kernel.so", err, sizeof err));
	cr_assert_eq(strlen(err), sizeof err - 1);
	cr_assert_null(rt_module_open("/nonexistent/kernel.so", NULL, 0));
}

/* ---- thread pool ---- */

typedef struct visit_counts {
	atomic_int *count;
	atomic_int calls;
	atomic_int max_chunk_calls;
} visit_counts;

static void count_visits(int64_t begin, int64_t end, void *closure)
{
	visit_counts *v = closure;
	cr_assert_leq(begin, end);
	atomic_fetch_add(&v->calls, 1);
	for (int64_t i = begin; i < end; i++)
		atomic_fetch_add_explicit(&v->count[i], 1, memory_order_relaxed);
}

/* Check that parallel_for on a pool of "threads" visits every index of
 * [0, "n") exactly once, in at most min(n, threads) chunks. */
static void check_visits_once(int threads, int64_t n)
{
	rt_pool *pool = rt_pool_new(threads);
	cr_assert_not_null(pool);
	cr_assert_eq(rt_pool_num_threads(pool), threads);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	cr_assert_eq(env.num_threads, threads);
	cr_assert_eq(env.pool, pool);
	visit_counts v = { .count = calloc((size_t)(n > 0 ? n : 1), sizeof(atomic_int)) };
	cr_assert_not_null(v.count);
	env.parallel_for(&env, n, count_visits, &v);
	for (int64_t i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&v.count[i]), 1,
			     "threads %d n %lld: index %lld visited %d times", threads,
			     (long long)n, (long long)i, atomic_load(&v.count[i]));
	int64_t max_chunks = n < threads ? n : threads;
	cr_assert_leq(atomic_load(&v.calls), max_chunks);
	cr_assert_eq(atomic_load(&v.calls) > 0, n > 0);
	free(v.count);
	rt_pool_free(pool);
}

Test(pool, every_index_once)
{
	fail_if_hung(60);
	const int threads[] = { 1, 2, 3, 4, 8 };
	const int64_t sizes[] = { 0, 1, 2, 3, 7, 1000, 1000000 };
	for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
			check_visits_once(threads[t], sizes[s]);
}

/* Record the CPU each chunk ran on in the "int" array "closure". */
static void note_cpu(int64_t begin, int64_t end, void *closure)
{
	int *cpus = closure;
	for (int64_t i = begin; i < end; i++)
		cpus[i] = sched_getcpu();
}

Test(pool, bind_pins_each_thread_to_a_cpu_of_its_own_and_free_gives_them_back)
{
	fail_if_hung(60);
	cpu_set_t before;
	cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
	int allowed = CPU_COUNT(&before);
	for (int threads = 1; threads <= 4; threads++) {
		rt_pool *pool = rt_pool_new(threads);
		cr_assert_not_null(pool);
		cr_assert_eq(rt_pool_bind(pool), 0);
		cpu_set_t mine;
		pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
		cr_expect_eq(CPU_COUNT(&mine), 1, "the caller is pinned to one CPU");
		tessel_kernel_env env;
		rt_pool_env(pool, &env);
		int cpus[4] = { -1, -1, -1, -1 };
		env.parallel_for(&env, threads, note_cpu, cpus);
		for (int i = 0; i < threads; i++)
			for (int j = i + 1; j < threads; j++)
				if (j < allowed)
					cr_expect_neq(cpus[i], cpus[j],
						"threads %d: chunks %d and %d on CPU %d", threads, i, j,
						cpus[i]);
		rt_pool_free(pool);
		cpu_set_t after;
		pthread_getaffinity_np(pthread_self(), sizeof(after), &after);
		cr_expect(CPU_EQUAL(&after, &before), "rt_pool_free gives the caller its CPUs back");
	}
}

static void must_not_run(int64_t begin, int64_t end, void *closure)
{
	(void)begin;
	(void)end;
	(void)closure;
	cr_assert_fail("body called for an empty range");
}

Test(pool, nonpositive_n_is_a_noop)
{
	rt_pool *pool = rt_pool_new(2);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	rt_parallel_for(&env, 0, must_not_run, NULL);
	rt_parallel_for(&env, -5, must_not_run, NULL);
	rt_pool_free(pool);
}

Test(pool, default_thread_count_is_cpu_count)
{
	rt_pool *pool = rt_pool_new(0);
	cr_assert_not_null(pool);
	cr_assert_eq(rt_pool_num_threads(pool), rt_num_cpus());
	rt_pool_free(pool);
	rt_pool_free(NULL);
}

Test(pool, serial_env_without_pool)
{
	tessel_kernel_env env;
	rt_pool_env(NULL, &env);
	cr_assert_eq(env.num_threads, 1);
	cr_assert_null(env.pool);
	visit_counts v = { .count = calloc(100, sizeof(atomic_int)) };
	env.parallel_for(&env, 100, count_visits, &v);
	cr_assert_eq(atomic_load(&v.calls), 1);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(atomic_load(&v.count[i]), 1);
	free(v.count);
}

#define NESTED_OUTER 16
#define NESTED_INNER 100

typedef struct nested_job {
	const tessel_kernel_env *env;
	atomic_int count[NESTED_OUTER * NESTED_INNER];
	atomic_int inner_calls;
} nested_job;

typedef struct nested_row {
	nested_job *job;
	int64_t row;
} nested_row;

static void nested_inner(int64_t begin, int64_t end, void *closure)
{
	nested_row *r = closure;
	atomic_fetch_add(&r->job->inner_calls, 1);
	for (int64_t i = begin; i < end; i++)
		atomic_fetch_add(&r->job->count[r->row * NESTED_INNER + i], 1);
}

static void nested_outer(int64_t begin, int64_t end, void *closure)
{
	nested_job *job = closure;
	for (int64_t row = begin; row < end; row++) {
		nested_row r = { job, row };
		job->env->parallel_for(job->env, NESTED_INNER, nested_inner, &r);
	}
}

Test(pool, nested_calls_run_inline)
{
	fail_if_hung(20);
	for (int threads = 1; threads <= 4; threads++) {
		rt_pool *pool = rt_pool_new(threads);
		tessel_kernel_env env;
		rt_pool_env(pool, &env);
		nested_job *job = calloc(1, sizeof *job);
		job->env = &env;
		for (int rep = 0; rep < 50; rep++)
			env.parallel_for(&env, NESTED_OUTER, nested_outer, job);
		for (int i = 0; i < NESTED_OUTER * NESTED_INNER; i++)
			cr_assert_eq(atomic_load(&job->count[i]), 50);
		cr_assert_eq(atomic_load(&job->inner_calls), 50 * NESTED_OUTER,
			     "nested loops must run as one serial chunk each");
		free(job);
		rt_pool_free(pool);
	}
}

static void add_range(int64_t begin, int64_t end, void *closure)
{
	atomic_llong *sum = closure;
	long long s = 0;
	for (int64_t i = begin; i < end; i++)
		s += i;
	atomic_fetch_add(sum, s);
}

/* Run "calls" parallel_for calls of varying sizes on "env" and check
 * each result. */
static void run_many_sums(const tessel_kernel_env *env, int calls)
{
	for (int c = 0; c < calls; c++) {
		int64_t n = 1 + c % 37;
		atomic_llong sum = 0;
		env->parallel_for(env, n, add_range, &sum);
		cr_assert_eq(atomic_load(&sum), n * (n - 1) / 2, "call %d", c);
	}
}

Test(pool, many_consecutive_calls)
{
	fail_if_hung(60);
	for (int threads = 2; threads <= 3; threads++) {
		rt_pool *pool = rt_pool_new(threads);
		tessel_kernel_env env;
		rt_pool_env(pool, &env);
		run_many_sums(&env, 20000);
		rt_pool_set_spin(pool, 0);
		run_many_sums(&env, 2000);
		rt_pool_free(pool);
	}
}

static void *sums_thread(void *arg)
{
	run_many_sums(arg, 2000);
	return NULL;
}

Test(pool, calls_from_several_threads)
{
	fail_if_hung(60);
	rt_pool *pool = rt_pool_new(2);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	pthread_t other[3];
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&other[i], NULL, sums_thread, &env), 0);
	run_many_sums(&env, 2000);
	for (int i = 0; i < 3; i++)
		pthread_join(other[i], NULL);
	rt_pool_free(pool);
}

/* ---- CPU targets ---- */

/* Check that "s" fails to parse with a message containing "part". */
static void check_parse_error_with(const char *s, const char *part)
{
	rt_cpu_target t;
	char err[ERR_LEN] = "";
	cr_assert_eq(rt_cpu_target_parse(s, &t, err, sizeof err), -1,
		     "'%s' should not parse", s);
	cr_assert(strstr(err, part), "'%s': message '%s' lacks '%s'", s, err, part);
}

/* Parse "s" into "t", which must succeed. */
static void parse_ok(const char *s, rt_cpu_target *t)
{
	char err[ERR_LEN] = "";
	cr_assert_eq(rt_cpu_target_parse(s, t, err, sizeof err), 0, "'%s': %s", s, err);
}

/* Check that "t" prints to a string that parses back to "t" and prints
 * the same again. */
static void check_round_trip(const rt_cpu_target *t)
{
	char first[RT_CPU_TARGET_STR_MAX], second[RT_CPU_TARGET_STR_MAX];
	int n = rt_cpu_target_print(t, first, sizeof first);
	cr_assert_lt(n, (int)sizeof first);
	cr_assert_eq(n, (int)strlen(first));
	rt_cpu_target back;
	parse_ok(first, &back);
	cr_assert(rt_cpu_target_equal(t, &back), "'%s' did not read back", first);
	rt_cpu_target_print(&back, second, sizeof second);
	cr_assert_str_eq(first, second);
}

/* ---- workspace ------------------------------------------------------------- */

/* Blocks are aligned, usable, counted while taken, and given back in
 * the reverse order they were taken, by count. */
Test(workspace, blocks_are_aligned_counted_and_popped_by_count)
{
	rt_workspace_release();
	char *p[3];
	for (int i = 0; i < 3; i++) {
		p[i] = rt_workspace_alloc((size_t)(1000 * (i + 1)));
		cr_assert(p[i]);
		cr_expect_eq((uintptr_t)p[i] % RT_WORKSPACE_ALIGN, 0);
		memset(p[i], i + 1, (size_t)(1000 * (i + 1)));
		cr_expect_eq(rt_workspace_taken(), i + 1);
	}
	cr_expect_eq(p[0][999], 1);
	cr_expect_eq(p[1][1999], 2);
	rt_workspace_pop(1);
	cr_expect_eq(rt_workspace_taken(), 2);
	cr_expect_eq(rt_workspace_alloc(3000), p[2], "the last block given back is reused");
	rt_workspace_pop(10);
	cr_expect_eq(rt_workspace_taken(), 0);
	void *zero = rt_workspace_alloc(0);
	cr_expect(zero);
	rt_workspace_pop(1);
	rt_workspace_release();
}

/* A request takes the smallest kept block that holds it, but never one
 * more than about twice its size. */
Test(workspace, the_smallest_fitting_block_is_reused)
{
	rt_workspace_release();
	void *big = rt_workspace_alloc(1 << 20);
	void *mid = rt_workspace_alloc(300000);
	void *small = rt_workspace_alloc(100000);
	rt_workspace_pop(3);
	cr_expect_eq(rt_workspace_alloc(250000), mid);
	cr_expect_eq(rt_workspace_alloc(90000), small);
	void *tiny = rt_workspace_alloc(1000);
	cr_expect(tiny != big && tiny != mid && tiny != small,
		"a 1000-byte request takes no block of 100 KB or more");
	cr_expect_eq(rt_workspace_alloc(1 << 20), big);
	rt_workspace_pop(4);
	rt_workspace_release();
}

/* A full cache keeps the largest blocks: of ten given back, the eight
 * largest are reused. */
Test(workspace, a_full_cache_keeps_the_largest_blocks)
{
	rt_workspace_release();
	enum { N = RT_WORKSPACE_CACHED + 2 };
	void *p[N];
	for (int i = 0; i < N; i++)
		p[i] = rt_workspace_alloc((size_t)(100000 * (i + 1)));
	rt_workspace_pop(N);
	for (int i = N - 1; i >= N - RT_WORKSPACE_CACHED; i--)
		cr_expect_eq(rt_workspace_alloc((size_t)(100000 * (i + 1))), p[i],
			"block %d kept", i);
	rt_workspace_pop(RT_WORKSPACE_CACHED);
	rt_workspace_release();
}

/* A request memory cannot hold returns NULL and takes nothing. */
Test(workspace, an_impossible_request_returns_null)
{
	cr_expect_null(rt_workspace_alloc(SIZE_MAX - 10));
	cr_expect_eq(rt_workspace_taken(), 0);
}

static void *take_and_exit(void *arg)
{
	(void)arg;
	void *kept = rt_workspace_alloc(200000);
	void *held = rt_workspace_alloc(300000);
	rt_workspace_pop(1);
	return (void *)(uintptr_t)(kept && held && rt_workspace_taken() == 1);
}

/* Each thread has its own blocks, freed when it exits, those it still
 * holds taken as well (the sanitizer build reports a leak otherwise). */
Test(workspace, threads_have_their_own_blocks_freed_at_exit)
{
	rt_workspace_release();
	pthread_t t;
	void *ok = NULL;
	cr_assert_eq(pthread_create(&t, NULL, take_and_exit, NULL), 0);
	cr_assert_eq(pthread_join(t, &ok), 0);
	cr_expect(ok);
	cr_expect_eq(rt_workspace_taken(), 0, "this thread took nothing");
}


Test(target, host_is_sane)
{
	rt_cpu_target t;
	cr_assert_eq(rt_cpu_target_host(&t), 0);
	cr_assert_geq(t.cores, 1);
	cr_assert_eq(t.cores, rt_num_cpus());
	cr_assert_leq(t.cores, sysconf(_SC_NPROCESSORS_CONF));
	cr_assert_eq(t.line_bytes, 64);
	cr_assert_geq(t.l1d_bytes, 4096);
	cr_assert_geq(t.l2_bytes, t.l1d_bytes);
	cr_assert(t.l3_bytes == 0 || t.l3_bytes >= t.l2_bytes);
#if defined(__x86_64__)
	cr_assert_str_eq(t.arch, "x86_64");
	cr_assert_neq(t.vendor[0], 0);
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_SSE2), 1);
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_SSE4_2), !!__builtin_cpu_supports("sse4.2"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX), !!__builtin_cpu_supports("avx"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX2), !!__builtin_cpu_supports("avx2"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_FMA), !!__builtin_cpu_supports("fma"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX512F), !!__builtin_cpu_supports("avx512f"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX512BW), !!__builtin_cpu_supports("avx512bw"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX512VL), !!__builtin_cpu_supports("avx512vl"));
	cr_assert_eq(rt_cpu_has(&t, RT_CPU_AVX512DQ), !!__builtin_cpu_supports("avx512dq"));
	cr_assert_eq(t.vector_bytes, rt_cpu_has(&t, RT_CPU_AVX512F) ? 64 :
				     rt_cpu_has(&t, RT_CPU_AVX2) ? 32 : 16);
#endif
}

Test(target, build_machine_has_avx512)
{
#if !defined(__x86_64__)
	cr_skip_test("not an x86_64 host");
#else
	if (!__builtin_cpu_supports("avx512f"))
		cr_skip_test("this host has no AVX-512 (the build machines do)");
	rt_cpu_target t;
	rt_cpu_target_host(&t);
	cr_assert(rt_cpu_has(&t, RT_CPU_AVX512F));
	cr_assert_eq(rt_cpu_target_isa(&t), RT_ISA_AVX512);
	cr_assert_eq(t.vector_bytes, 64);
#endif
}

Test(target, round_trips)
{
	rt_cpu_target t;
	rt_cpu_target_host(&t);
	check_round_trip(&t);
	const char *strings[] = {
		"cpu",
		"cpu -isa=avx2",
		"cpu -isa=sse -cores=1",
		"cpu -isa=generic -l3=0",
		"cpu -isa=avx512 -vector=32 -l2=1536K -l3=1G",
		"cpu -arch=aarch64 -features=neon,sve -vector=32",
		"cpu -arch=x86_64 -features=none -line=128",
		"cpu -model=\"My \\\"fast\\\" CPU \\\\ 2\" -vendor=\"\"",
		"  cpu   -cores=3\t-l1d=49153  ",
	};
	for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
		parse_ok(strings[i], &t);
		check_round_trip(&t);
	}
}

Test(target, canonical_string_names_every_field)
{
	rt_cpu_target t;
	parse_ok("cpu -arch=x86_64 -vendor=GenuineIntel -model=\"Xeon 8480+\" "
		 "-isa=avx512 -cores=2 -l1d=48K -l2=2M -l3=32M -line=64", &t);
	char buf[RT_CPU_TARGET_STR_MAX];
	rt_cpu_target_print(&t, buf, sizeof buf);
	cr_assert(strncmp(buf, "cpu -arch=x86_64 -vendor=GenuineIntel "
			       "-model=\"Xeon 8480+\" -isa=avx512 -features=sse2,", 80) == 0,
		  "%s", buf);
	cr_assert(strstr(buf, " -vector=64 -cores=2 -l1d=48K -l2=2M -l3=32M -line=64"),
		  "%s", buf);
}

Test(target, overrides_of_the_host)
{
	rt_cpu_target host, t;
	rt_cpu_target_host(&host);
	parse_ok("cpu -isa=avx2", &t);
	cr_assert_not(rt_cpu_has(&t, RT_CPU_AVX512F));
	cr_assert(rt_cpu_has(&t, RT_CPU_AVX2));
	cr_assert(rt_cpu_has(&t, RT_CPU_FMA));
	cr_assert_eq(t.vector_bytes, 32);
	cr_assert_eq(rt_cpu_target_isa(&t), RT_ISA_AVX2);
	cr_assert_eq(t.cores, host.cores);
	cr_assert_eq(t.l2_bytes, host.l2_bytes);
	cr_assert_str_eq(t.model, host.model);

	parse_ok("cpu -isa=avx512 -cores=2 -l1d=48K -l2=2M -l3=32M -vector=64", &t);
	cr_assert(rt_cpu_has(&t, RT_CPU_AVX512F) && rt_cpu_has(&t, RT_CPU_AVX512VL));
	cr_assert_eq(t.cores, 2);
	cr_assert_eq(t.l1d_bytes, 48 * 1024);
	cr_assert_eq(t.l2_bytes, 2 * 1024 * 1024);
	cr_assert_eq(t.l3_bytes, 32 * 1024 * 1024);
	cr_assert_eq(t.vector_bytes, 64);

	parse_ok("cpu -isa=sse", &t);
	cr_assert(rt_cpu_has(&t, RT_CPU_SSE4_2));
	cr_assert_not(rt_cpu_has(&t, RT_CPU_AVX));
	cr_assert_eq(t.vector_bytes, 16);

	parse_ok("cpu -isa=generic", &t);
	cr_assert_eq(t.features, 0);
	cr_assert_eq(t.vector_bytes, 16);
	cr_assert_eq(rt_cpu_target_isa(&t), RT_ISA_GENERIC);

	parse_ok("cpu -l2=3m -l3=0 -line=128 -cores=64 -isa=avx512 -vector=32", &t);
	cr_assert_eq(t.l2_bytes, 3 * 1024 * 1024);
	cr_assert_eq(t.l3_bytes, 0);
	cr_assert_eq(t.line_bytes, 128);
	cr_assert_eq(t.cores, 64);
	cr_assert_eq(t.vector_bytes, 32);

	parse_ok("cpu -features=sse2,avx2,avx512f", &t);
	cr_assert_eq(t.features, (UINT64_C(1) << RT_CPU_SSE2) |
				 (UINT64_C(1) << RT_CPU_AVX2) |
				 (UINT64_C(1) << RT_CPU_AVX512F));
	cr_assert_eq(t.vector_bytes, 64);
	cr_assert_eq(rt_cpu_target_isa(&t), RT_ISA_GENERIC);

	parse_ok("cpu -arch=aarch64", &t);
	cr_assert_str_eq(t.arch, "aarch64");
	cr_assert_eq(t.features, 0);
	cr_assert_eq(t.vendor[0], 0);
}

Test(target, isa_keeps_the_extensions_of_its_level)
{
	rt_cpu_target t;
	parse_ok("cpu -features=sse2,avx_vnni,avx512_vnni,amx_tile", &t);
	char s[RT_CPU_TARGET_STR_MAX];
	rt_cpu_target_print(&t, s, sizeof s);
	cr_assert(strstr(s, "-isa=generic -features=sse2,avx_vnni,avx512_vnni,amx_tile "),
		  "%s", s);
	parse_ok("cpu -isa=sse", &t);
	cr_assert_eq(t.features & ~((UINT64_C(1) << RT_CPU_AVX) - 1), 0);
}

Test(target, parse_errors_name_the_problem)
{
	char long_model[128];
	snprintf(long_model, sizeof long_model, "cpu -model=%0100d", 7);
	const struct {
		const char *s;
		const char *part;
	} cases[] = {
		{ "", "empty target string" },
		{ "   ", "empty target string" },
		{ "gpu -isa=avx2", "unknown target kind 'gpu'" },
		{ "cpux", "unknown target kind 'cpux'" },
		{ "cuda:sm_90", "'cuda:sm_90' is a GPU target; this needs a CPU target" },
		{ "opencl", "'opencl' is a GPU target" },
		{ "cpu isa=avx2", "expected -key=value, got 'isa=avx2'" },
		{ "cpu -foo=1", "unknown key '-foo'" },
		{ "cpu -isa", "key '-isa' needs a value" },
		{ "cpu -isa avx2", "key '-isa' needs a value" },
		{ "cpu -cores=2 -cores=3", "key '-cores' given twice" },
		{ "cpu -isa=avx3", "unknown isa 'avx3'" },
		{ "cpu -isa=", "unknown isa ''" },
		{ "cpu -arch=sparc", "unknown arch 'sparc'" },
		{ "cpu -arch=aarch64 -isa=avx2", "isa 'avx2' needs arch x86_64" },
		{ "cpu -arch=x86_64 -features=avx2,avx1024", "unknown feature 'avx1024'" },
		{ "cpu -arch=x86_64 -features=", "unknown feature ''" },
		{ "cpu -arch=x86_64 -features=avx2,", "unknown feature ''" },
		{ "cpu -arch=x86_64 -features=neon", "feature 'neon' is not available on x86_64" },
		{ "cpu -arch=x86_64 -isa=avx2 -features=sse2", "-isa=avx2 does not match -features" },
		{ "cpu -isa=avx512 -vector=24", "-vector=24: expected a power of two" },
		{ "cpu -isa=avx2 -vector=64", "-vector=64: expected an integer from 4 to 32" },
		{ "cpu -vector=wide", "-vector=wide: expected an integer" },
		{ "cpu -cores=0", "-cores=0: expected an integer from 1" },
		{ "cpu -cores=abc", "-cores=abc: expected an integer" },
		{ "cpu -cores=2x", "-cores=2x: expected an integer" },
		{ "cpu -cores=-2", "-cores=-2: expected an integer" },
		{ "cpu -cores=99999999999999999999", "expected an integer" },
		{ "cpu -l1d=12Q", "-l1d=12Q: expected a size" },
		{ "cpu -l1d=0", "-l1d=0: expected a size in bytes of at least 1" },
		{ "cpu -l2=K", "-l2=K: expected a size" },
		{ "cpu -l3=99999999999G", "-l3=99999999999G: expected a size" },
		{ "cpu -line=48", "-line=48: expected a power of two" },
		{ "cpu -line=8", "-line=8: expected an integer from 16" },
		{ "cpu -model=\"abc", "unterminated quote in the value of -model" },
		{ "cpu -model=\"a\"b", "expected a space after the quoted value of -model" },
		{ long_model, "the value of -model is longer than 63 characters" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		check_parse_error_with(cases[i].s, cases[i].part);
	rt_cpu_target t;
	cr_assert_eq(rt_cpu_target_parse(NULL, &t, NULL, 0), -1);
	char small[6];
	cr_assert_eq(rt_cpu_target_parse("cpu -foo=1", &t, small, sizeof small), -1);
	cr_assert_eq(strlen(small), sizeof small - 1);
}

Test(target, print_reports_full_length_when_truncated)
{
	rt_cpu_target t;
	rt_cpu_target_host(&t);
	char full[RT_CPU_TARGET_STR_MAX], small[10];
	int n = rt_cpu_target_print(&t, full, sizeof full);
	cr_assert_eq(rt_cpu_target_print(&t, small, sizeof small), n);
	cr_assert_eq(strlen(small), sizeof small - 1);
	cr_assert(strncmp(small, full, sizeof small - 1) == 0);
	cr_assert_eq(rt_cpu_target_print(&t, NULL, 0), n);
}

Test(target, names)
{
	cr_assert_str_eq(rt_cpu_feature_name(RT_CPU_SSE4_2), "sse4.2");
	cr_assert_str_eq(rt_cpu_feature_name(RT_CPU_AVX512_VNNI), "avx512_vnni");
	cr_assert_str_eq(rt_cpu_feature_name(RT_CPU_FEATURE_COUNT), "?");
	cr_assert_str_eq(rt_cpu_isa_name(RT_ISA_AVX2), "avx2");
	cr_assert_str_eq(rt_cpu_isa_name(RT_ISA_COUNT), "?");
}

/* ---- timer ---- */

static void busy_wait(double seconds)
{
	double end = rt_now_s() + seconds;
	while (rt_now_s() < end)
		continue;
}

static void busy_2ms(void *arg)
{
	int *calls = arg;
	++*calls;
	busy_wait(0.002);
}

Test(timer, statistics_of_a_busy_loop)
{
	fail_if_hung(30);
	rt_timer_opts o = rt_timer_opts_default();
	o.warmup = 2;
	o.min_repeats = 5;
	o.min_total_s = 0.03;
	int calls = 0;
	rt_timing t;
	cr_assert_eq(rt_time(busy_2ms, &calls, &o, &t), RT_TIME_OK);
	cr_assert_geq(t.runs, 5);
	cr_assert_geq(t.runs * t.mean_s, 0.03 - 1e-9);
	cr_assert_leq(t.runs, o.max_repeats);
	cr_assert_eq(calls, t.runs + 2, "warm-up runs are made but not counted");
	cr_assert_geq(t.min_s, 0.002);
	cr_assert_geq(t.median_s, t.min_s);
	cr_assert_geq(t.mean_s, t.min_s);
	cr_assert_lt(t.median_s, 0.002 + 0.05, "median %g s", t.median_s);
	uint64_t ns;
	if (rt_cpu_wait_ns(&ns) == 0)
		cr_expect(t.cpu_wait >= 0 && isfinite(t.cpu_wait), "cpu wait %g", t.cpu_wait);
	else
		cr_expect(isnan(t.cpu_wait), "unknown without schedstat: %g", t.cpu_wait);
}

/* Spin until *"arg" (an atomic_int) is set. */
static void *spin_until_set(void *arg)
{
	atomic_int *stop = arg;
	while (!atomic_load(stop))
		continue;
	return NULL;
}

/* Pin the calling process to the CPU it runs on; return false when it
 * cannot be pinned. */
static bool pin_to_one_cpu(void)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	int cpu = sched_getcpu();
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) == 0;
}

Test(timer, a_timing_beside_a_thread_that_holds_the_cpu_is_disturbed)
{
	fail_if_hung(30);
	uint64_t before, after;
	if (rt_cpu_wait_ns(&before))
		cr_skip_test("no schedstat in /proc: waits for a CPU are unknown here");
	cr_assert(pin_to_one_cpu(), "sched_setaffinity failed");
	atomic_int stop = 0;
	pthread_t hog;
	cr_assert_eq(pthread_create(&hog, NULL, spin_until_set, &stop), 0);
	rt_timer_opts o = rt_timer_opts_default();
	o.min_total_s = 0.05;
	int calls = 0;
	rt_timing t;
	int r = rt_time(busy_2ms, &calls, &o, &t);
	atomic_store(&stop, 1);
	pthread_join(hog, NULL);
	cr_assert_eq(r, RT_TIME_OK);
	cr_expect(rt_timing_disturbed(&t), "cpu wait %g of the time", t.cpu_wait);
	cr_expect_gt(t.cpu_wait, 0.3, "two threads on one CPU each wait about half the time");
	cr_assert_eq(rt_cpu_wait_ns(&after), 0);
	cr_expect_geq(after, before);
}

static void nothing(void *arg)
{
	(void)arg;
}

Test(timer, repeat_limits)
{
	rt_timer_opts o = rt_timer_opts_default();
	o.min_total_s = 10;
	o.max_repeats = 50;
	rt_timing t;
	cr_assert_eq(rt_time(nothing, NULL, &o, &t), RT_TIME_OK);
	cr_assert_eq(t.runs, 50);
	o.min_total_s = 0;
	o.min_repeats = 7;
	cr_assert_eq(rt_time(nothing, NULL, &o, &t), RT_TIME_OK);
	cr_assert_eq(t.runs, 7);
}

Test(timer, defaults_measure_at_least_a_tenth_of_a_second)
{
	fail_if_hung(30);
	int calls = 0;
	rt_timing t;
	double start = rt_now_s();
	cr_assert_eq(rt_time(busy_2ms, &calls, NULL, &t), RT_TIME_OK);
	cr_assert_geq(rt_now_s() - start, 0.1);
	cr_assert_geq(t.runs, 3);
	cr_assert_geq(t.runs * t.mean_s, 0.1 - 1e-9);
	cr_assert_eq(calls, t.runs + 1);
}

Test(timer, invalid_options)
{
	rt_timing t;
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 0;
	cr_assert_eq(rt_time(nothing, NULL, &o, &t), RT_TIME_ERROR);
	o = rt_timer_opts_default();
	o.max_repeats = 2;
	cr_assert_eq(rt_time(nothing, NULL, &o, &t), RT_TIME_ERROR);
	o = rt_timer_opts_default();
	o.warmup = -1;
	cr_assert_eq(rt_time(nothing, NULL, &o, &t), RT_TIME_ERROR);
	cr_assert_eq(rt_time(NULL, NULL, NULL, &t), RT_TIME_ERROR);
}

static void busy_20ms(void *arg)
{
	(void)arg;
	busy_wait(0.02);
}

Test(timer, timeout_stops_early)
{
	fail_if_hung(30);
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 100;
	o.timeout_s = 0.1;
	rt_timing t;
	double start = rt_now_s();
	cr_assert_eq(rt_time(busy_20ms, NULL, &o, &t), RT_TIME_TIMEOUT);
	cr_assert_lt(rt_now_s() - start, 1.0);
	cr_assert_geq(t.runs, 1);
	cr_assert_lt(t.runs, 100);
	cr_assert_geq(t.median_s, 0.02);
}

static void busy_20ms_counted(void *arg)
{
	++*(int *)arg;
	busy_wait(0.02);
}

/* A first run slower than give_up_s, the warm-up's or else the first
 * timed one, is the whole measurement (and a success); a faster one is
 * repeated as usual. */
Test(timer, a_slow_first_run_is_given_up_on)
{
	fail_if_hung(30);
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 10;
	o.give_up_s = 0.005;
	rt_timing t;
	int calls = 0;
	cr_assert_eq(rt_time(busy_20ms_counted, &calls, &o, &t), RT_TIME_OK);
	cr_expect_eq(calls, 1, "the warm-up run is the measurement, got %d runs", calls);
	cr_expect_eq(t.runs, 1);
	cr_expect_geq(t.median_s, 0.02);
	cr_expect_eq(t.min_s, t.median_s);
	o.warmup = 0;
	calls = 0;
	cr_assert_eq(rt_time(busy_20ms_counted, &calls, &o, &t), RT_TIME_OK);
	cr_expect_eq(calls, 1);
	cr_expect_eq(t.runs, 1);
	cr_expect_geq(t.median_s, 0.02);
	o.warmup = 1;
	o.give_up_s = 1;
	cr_assert_eq(rt_time(busy_20ms, NULL, &o, &t), RT_TIME_OK);
	cr_expect_geq(t.runs, 10);
	o.give_up_s = -1;
	cr_expect_eq(rt_time(busy_20ms, NULL, &o, &t), RT_TIME_ERROR);
}

#define READ_BYTES (4u << 20)

typedef struct read_job {
	float *data;
	size_t n;
	float sum;
} read_job;

static void read_buffer(void *arg)
{
	read_job *job = arg;
	float sum = 0;
	for (size_t i = 0; i < job->n; i += 16)
		sum += job->data[i];
	job->sum += sum;
}

Test(timer, flushing_makes_cached_data_slower)
{
	fail_if_hung(60);
	rt_cpu_target host;
	rt_cpu_target_host(&host);
	read_job job = { .n = READ_BYTES / sizeof(float) };
	job.data = malloc(job.n * sizeof(float));
	for (size_t i = 0; i < job.n; i++)
		job.data[i] = (float)i;
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 15;
	o.min_total_s = 0;
	rt_timing warm, cold;
	bool slower = false;
	for (int attempt = 0; attempt < 3 && !slower; attempt++) {
		o.flush_cache = false;
		cr_assert_eq(rt_time(read_buffer, &job, &o, &warm), RT_TIME_OK);
		o.flush_cache = true;
		cr_assert_eq(rt_time(read_buffer, &job, &o, &cold), RT_TIME_OK);
		cr_assert_eq(cold.runs, 15);
		cr_log_info("4 MiB read: %.1f us cached, %.1f us after flush (fastest runs)",
			    warm.min_s * 1e6, cold.min_s * 1e6);
		slower = cold.min_s > 1.1 * warm.min_s;
	}
	cr_assert(slower, "in three tries the flushed read was never 10%% slower: "
		"cached %g s, flushed %g s (fastest runs; a shared machine's noise "
		"comes and goes, a missing flush does not)", warm.min_s, cold.min_s);
	free(job.data);
}

/* ---- compile ---- */

static const char kernel_source[] =
	"#include \"tessel/kernel.h\"\n"
	"struct scale { const float *in; float *out; };\n"
	"static void body(int64_t begin, int64_t end, void *closure)\n"
	"{\n"
	"\tstruct scale *s = closure;\n"
	"\tfor (int64_t i = begin; i < end; i++)\n"
	"\t\ts->out[i] = 2 * s->in[i] + 1;\n"
	"}\n"
	"int kernel(void *const *args, const tessel_kernel_env *env)\n"
	"{\n"
	"\tstruct scale s = { args[0], args[1] };\n"
	"\tenv->parallel_for(env, 1000, body, &s);\n"
	"\treturn 0;\n"
	"}\n";

static const char *const include_flags[] = { "-I" TESSEL_SOURCE_DIR "/include", NULL };

/* Return options that compile into the scratch directory's "cache". */
static cg_compile_opts scratch_opts(void)
{
	static char cache[PATH_LEN];
	test_scratch_file(cache, sizeof cache, "cache");
	return (cg_compile_opts){ .cache_dir = cache, .extra_flags = include_flags };
}

/* Write a compiler wrapper script "name" into the scratch directory that
 * answers --version and otherwise runs "body" (a shell fragment); its
 * path goes to "path" (PATH_LEN bytes). */
static char *write_fake_cc(char *path, const char *name, const char *body)
{
	char text[4096];
	snprintf(text, sizeof text,
		 "#!/bin/sh\n"
		 "if [ \"$1\" = --version ]; then echo 'fake cc 1.0'; exit 0; fi\n"
		 "%s\n", body);
	write_text(test_scratch_file(path, PATH_LEN, name), text, 0755);
	return path;
}

/* Write a wrapper that counts its compilations in the file "count" and
 * runs cc ("path" and "count": PATH_LEN bytes). */
static char *write_counting_cc(char *path, char *count)
{
	char body[PATH_LEN + 64];
	test_scratch_file(count, PATH_LEN, "count");
	snprintf(body, sizeof body, "echo run >> '%s'\nexec cc \"$@\"", count);
	return write_fake_cc(path, "counting-cc", body);
}

/* Load "so_path", run its kernel on the pool of "threads" and check it
 * computed out = 2 in + 1. */
static void check_kernel_runs(const char *so_path, int threads)
{
	char err[ERR_LEN] = "";
	rt_module *m = rt_module_open(so_path, err, sizeof err);
	cr_assert_not_null(m, "%s", err);
	tessel_kernel_fn kernel = (tessel_kernel_fn)rt_module_symbol(m, "kernel", err, sizeof err);
	cr_assert_not_null(kernel, "%s", err);
	float in[1000], out[1000];
	for (int i = 0; i < 1000; i++)
		in[i] = (float)i;
	rt_pool *pool = rt_pool_new(threads);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	void *args[2] = { in, out };
	cr_assert_eq(kernel(args, &env), 0);
	for (int i = 0; i < 1000; i++)
		cr_assert_float_eq(out[i], 2.0f * (float)i + 1, 0, "out[%d] = %g", i, out[i]);
	rt_pool_free(pool);
	rt_module_close(m);
}

Test(compile, kernel_compiles_loads_and_runs, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	cg_compile_opts o = scratch_opts();
	char so[PATH_LEN], err[ERR_LEN] = "";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	size_t len = strlen(so);
	cr_assert(len > 3 && strcmp(so + len - 3, ".so") == 0, "%s", so);
	char c_path[PATH_LEN];
	snprintf(c_path, sizeof c_path, "%.*s.c", (int)(len - 3), so);
	FILE *f = fopen(c_path, "r");
	cr_assert_not_null(f, "the source is kept beside the object: %s", c_path);
	char kept[sizeof kernel_source + 16] = "";
	size_t got = fread(kept, 1, sizeof kept - 1, f);
	fclose(f);
	cr_assert_eq(got, strlen(kernel_source));
	cr_assert_str_eq(kept, kernel_source);
	check_kernel_runs(so, 2);
	check_kernel_runs(so, 3);
	check_kernel_runs(so, 1);
	cr_assert_eq(count_entries("cache", ".tmp."), 0);
}

Test(compile, second_compile_is_a_cache_hit, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	char cc[PATH_LEN], count[PATH_LEN];
	cg_compile_opts o = scratch_opts();
	o.cc = write_counting_cc(cc, count);
	char so1[PATH_LEN], so2[PATH_LEN], so3[PATH_LEN], so4[PATH_LEN];
	char err[ERR_LEN] = "";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so1, sizeof so1, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(count_lines(count), 1);
	struct stat before, after;
	cr_assert_eq(stat(so1, &before), 0);
	cr_assert_eq(cg_compile_c(&o, kernel_source, so2, sizeof so2, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_str_eq(so1, so2);
	cr_assert_eq(count_lines(count), 1, "a hit must not run the compiler");
	cr_assert_eq(stat(so2, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino);
	cr_assert_eq(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	cr_assert_eq(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);

	char other[sizeof kernel_source + 32];
	snprintf(other, sizeof other, "%s/* v2 */\n", kernel_source);
	cr_assert_eq(cg_compile_c(&o, other, so3, sizeof so3, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_str_neq(so1, so3);
	cr_assert_eq(count_lines(count), 2);

	const char *const o2[] = { "-O2", "-fPIC", "-shared", NULL };
	o.flags = o2;
	cr_assert_eq(cg_compile_c(&o, kernel_source, so4, sizeof so4, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_str_neq(so1, so4, "other flags, other key");
	cr_assert_eq(count_lines(count), 3);
	check_kernel_runs(so4, 2);
}

Test(compile, cc_from_the_environment, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	char cc[PATH_LEN], count[PATH_LEN], so[PATH_LEN], err[ERR_LEN] = "";
	setenv("CC", write_counting_cc(cc, count), 1);
	cg_compile_opts o = scratch_opts();
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(count_lines(count), 1);
}

Test(compile, error_carries_the_diagnostic, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	cg_compile_opts o = scratch_opts();
	char so[PATH_LEN], err[ERR_LEN] = "";
	const char *bad = "int f(void) { return tessel_undeclared_thing; }\n";
	cr_assert_eq(cg_compile_c(&o, bad, so, sizeof so, err, sizeof err),
		     CG_COMPILE_EFAILED);
	cr_assert(strstr(err, "failed (exit status"), "%s", err);
	cr_assert(strstr(err, "tessel_undeclared_thing"), "%s", err);
	cr_assert(strstr(err, "error"), "%s", err);
	cr_assert_eq(count_entries("cache", ".so"), 0, "no object, no temporary left");
	cr_assert_eq(count_entries("cache", ".c"), 1, "the source is kept for inspection");
}

Test(compile, long_diagnostics_are_cut, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	char cc[PATH_LEN], so[PATH_LEN], err[ERR_LEN] = "";
	cg_compile_opts o = scratch_opts();
	o.cc = write_fake_cc(cc, "noisy-cc",
			     "i=0; while [ $i -lt 500 ]; do echo \"line $i: error: noise\" >&2; "
			     "i=$((i+1)); done; exit 3");
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_EFAILED);
	cr_assert(strstr(err, "exit status 3"), "%s", err);
	cr_assert(strstr(err, "line 0: error: noise"), "%s", err);
	cr_assert_null(strstr(err, "line 499"));
	cr_assert(strstr(err, "[...]"), "%s", err);
	cr_assert_lt(strlen(err), 2048 + 512);
}

Test(compile, compiler_without_output_fails, .init = test_scratch_make, .fini = test_scratch_remove)
{
	char cc[PATH_LEN], so[PATH_LEN], err[ERR_LEN] = "";
	cg_compile_opts o = scratch_opts();
	o.cc = write_fake_cc(cc, "lazy-cc", "for a; do out=$a; done; : > \"$out\"; exit 0");
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_EFAILED);
	cr_assert(strstr(err, "wrote no shared object"), "%s", err);
	cr_assert_eq(count_entries("cache", ".so"), 0);
}

Test(compile, missing_compiler_is_a_clear_error, .init = test_scratch_make, .fini = test_scratch_remove)
{
	char so[PATH_LEN], err[ERR_LEN] = "";
	cg_compile_opts o = scratch_opts();
	o.cc = "/nonexistent/cc";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_ENOCC);
	cr_assert_str_eq(err, "C compiler '/nonexistent/cc' not found");
	o.cc = "tessel-no-such-cc --flag";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_ENOCC);
	cr_assert_str_eq(err, "C compiler 'tessel-no-such-cc' not found");
	o.cc = "  ";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_ENOCC);
}

/* Return whether the process "pid" is gone (or a zombie). */
static bool process_gone(pid_t pid)
{
	char path[64], stat_line[512] = "";
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(stat_line, 1, sizeof stat_line - 1, f);
	fclose(f);
	stat_line[n] = 0;
	const char *state = strrchr(stat_line, ')');
	return state && state[1] == ' ' && state[2] == 'Z';
}

Test(compile, timeout_kills_a_hanging_compiler, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(60);
	char cc[PATH_LEN], pids[PATH_LEN], body[PATH_LEN + 64];
	char so[PATH_LEN], err[ERR_LEN] = "";
	test_scratch_file(pids, sizeof pids, "sleeper.pid");
	snprintf(body, sizeof body, "sleep 30 & echo $! > '%s'\nwait", pids);
	cg_compile_opts o = scratch_opts();
	o.cc = write_fake_cc(cc, "hanging-cc", body);
	o.timeout_s = 0.5;
	double start = rt_now_s();
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_ETIMEOUT, "%s", err);
	double took = rt_now_s() - start;
	cr_assert_lt(took, 10.0, "took %g s", took);
	cr_assert(strstr(err, "timed out after 0.5 s"), "%s", err);
	cr_assert(strstr(err, "killed"), "%s", err);
	FILE *f = fopen(pids, "r");
	cr_assert_not_null(f);
	int sleeper = 0;
	cr_assert_eq(fscanf(f, "%d", &sleeper), 1);
	fclose(f);
	for (int i = 0; i < 200 && !process_gone(sleeper); i++)
		usleep(10000);
	cr_assert(process_gone(sleeper), "the compiler's child %d survived", sleeper);
	cr_assert_eq(count_entries("cache", ".so"), 0);
}

Test(compile, version_probe_timeout, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(60);
	char cc[PATH_LEN], so[PATH_LEN], err[ERR_LEN] = "";
	write_text(test_scratch_file(cc, sizeof cc, "mute-cc"), "#!/bin/sh\nexec sleep 30\n", 0755);
	cg_compile_opts o = scratch_opts();
	o.cc = cc;
	o.timeout_s = 0.3;
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_ETIMEOUT);
	cr_assert(strstr(err, "--version' timed out"), "%s", err);
}

Test(compile, concurrent_compilations_share_the_cache, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	enum { PROCESSES = 3 };
	pid_t children[PROCESSES];
	for (int i = 0; i < PROCESSES; i++) {
		children[i] = fork();
		cr_assert_geq(children[i], 0);
		if (children[i] == 0) {
			cg_compile_opts o = scratch_opts();
			char so[PATH_LEN], err[ERR_LEN];
			_exit(cg_compile_c(&o, kernel_source, so, sizeof so, err,
					   sizeof err) == CG_COMPILE_OK ? 0 : 1);
		}
	}
	for (int i = 0; i < PROCESSES; i++) {
		int status;
		cr_assert_eq(waitpid(children[i], &status, 0), children[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	cr_assert_eq(count_entries("cache", ".so"), 1);
	cr_assert_eq(count_entries("cache", ".tmp."), 0);
	cg_compile_opts o = scratch_opts();
	char so[PATH_LEN], err[ERR_LEN] = "";
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	check_kernel_runs(so, 2);
}

Test(compile, default_cache_dir)
{
	char buf[PATH_LEN];
	setenv("TESSEL_CACHE_DIR", "/tmp/tessel-explicit", 1);
	setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
	setenv("HOME", "/home/someone", 1);
	cr_assert_eq(cg_cache_dir_default(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/tmp/tessel-explicit");
	unsetenv("TESSEL_CACHE_DIR");
	cr_assert_eq(cg_cache_dir_default(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/tmp/xdg/tessel/kernels");
	unsetenv("XDG_CACHE_HOME");
	cr_assert_eq(cg_cache_dir_default(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/home/someone/.cache/tessel/kernels");
	cr_assert_eq(cg_cache_dir_default(buf, 8), -1);
	unsetenv("HOME");
	cr_assert_eq(cg_cache_dir_default(buf, sizeof buf), -1);
}

Test(compile, cache_dir_is_created_with_parents, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	char cache[PATH_LEN], so[PATH_LEN], err[ERR_LEN] = "";
	test_scratch_file(cache, sizeof cache, "a/b/c");
	setenv("TESSEL_CACHE_DIR", cache, 1);
	cg_compile_opts o = { .extra_flags = include_flags };
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(strncmp(so, cache, strlen(cache)), 0, "%s", so);
	char file[PATH_LEN];
	write_text(test_scratch_file(file, sizeof file, "plain"), "x", 0644);
	char below[PATH_LEN + 8];
	snprintf(below, sizeof below, "%s/sub", file);
	o.cache_dir = below;
	cr_assert_eq(cg_compile_c(&o, kernel_source, so, sizeof so, err, sizeof err),
		     CG_COMPILE_EIO);
	cr_assert(strstr(err, "cannot create cache directory"), "%s", err);
}

Test(compile, given_version_skips_the_probe, .init = test_scratch_make, .fini = test_scratch_remove)
{
	fail_if_hung(120);
	char cc[PATH_LEN], probes[PATH_LEN], body[2 * PATH_LEN];
	char so1[PATH_LEN], so2[PATH_LEN], version[256], err[ERR_LEN] = "";
	test_scratch_file(probes, sizeof probes, "probes");
	int n = snprintf(body, sizeof body,
		 "#!/bin/sh\n"
		 "if [ \"$1\" = --version ]; then echo probe >> '%s'; exec cc --version; fi\n"
		 "exec cc \"$@\"\n", probes);
	cr_assert_lt(n, (int)sizeof body);
	write_text(test_scratch_file(cc, sizeof cc, "probed-cc"), body, 0755);
	cg_compile_opts o = scratch_opts();
	o.cc = cc;
	cr_assert_eq(cg_compiler_version(&o, version, sizeof version, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(count_lines(probes), 1);
	cr_assert_gt(strlen(version), 0);
	cr_assert_null(strchr(version, '\n'));
	cr_assert_eq(cg_compile_c(&o, kernel_source, so1, sizeof so1, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(count_lines(probes), 2);
	o.cc_version = version;
	cr_assert_eq(cg_compile_c(&o, kernel_source, so2, sizeof so2, err, sizeof err),
		     CG_COMPILE_OK, "%s", err);
	cr_assert_eq(count_lines(probes), 2, "a given version is not probed again");
	cr_assert_str_eq(so1, so2, "the probed and the given version give one key");
	o.cc = "/nonexistent/cc";
	cr_assert_eq(cg_compiler_version(&o, version, sizeof version, err, sizeof err),
		     CG_COMPILE_ENOCC);
}

/* ---- isolated runs ------------------------------------------------------ */

static int write_answer(void *arg)
{
	*(int *)arg = 42;
	return 0;
}

static int crash(void *arg)
{
	(void)arg;
	raise(SIGSEGV);
	return 0;
}

static int hang(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

static int fail(void *arg)
{
	(void)arg;
	return 3;
}

Test(isolate, results_come_back_through_shared_memory)
{
	int *answer = rt_shared_alloc(sizeof(int));
	char err[256] = "";
	cr_assert(answer);
	cr_expect_eq(rt_run_isolated(write_answer, answer, 10, err, sizeof(err)), RT_RUN_OK);
	cr_expect_eq(*answer, 42);
	rt_shared_free(answer, sizeof(int));
}

Test(isolate, a_crash_is_reported_not_suffered)
{
	char err[256] = "";
	cr_expect_eq(rt_run_isolated(crash, NULL, 10, err, sizeof(err)), RT_RUN_CRASHED);
	cr_expect(strstr(err, "signal 11"), "%s", err);
}

Test(isolate, a_hang_is_killed_at_the_time_limit)
{
	char err[256] = "";
	double start = rt_now_s();
	cr_expect_eq(rt_run_isolated(hang, NULL, 0.2, err, sizeof(err)), RT_RUN_TIMEOUT);
	cr_expect_lt(rt_now_s() - start, 5.0);
	cr_expect(strstr(err, "killed"), "%s", err);
}

static int sleep_a_while(void *arg)
{
	(void)arg;
	nanosleep(&(struct timespec){ 0, 300000000 }, NULL);
	return 0;
}

/* The child is usually a kernel timed on every core: a parent that woke
 * to poll it (every 200 us, as it once did) took a core from it and
 * added a third to the median of a parallel matmul. */
Test(isolate, the_parent_sleeps_while_the_child_runs)
{
	char err[256] = "";
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	double start = rt_now_s();
	cr_expect_eq(rt_run_isolated(sleep_a_while, NULL, 10, err, sizeof(err)), RT_RUN_OK,
		"%s", err);
	double waited = rt_now_s() - start;
	getrusage(RUSAGE_SELF, &after);
	long switches = after.ru_nvcsw - before.ru_nvcsw;
	cr_expect_geq(waited, 0.29);
	cr_expect_lt(waited, 2.0, "the parent noticed the end %.3f s late", waited - 0.3);
	cr_expect_lt(switches, 64, "the parent woke %ld times in %.2f s", switches, waited);
}

Test(isolate, a_failure_status_is_reported)
{
	char err[256] = "";
	cr_expect_eq(rt_run_isolated(fail, NULL, 10, err, sizeof(err)), RT_RUN_FAILED);
	cr_expect(strstr(err, "exit status 3"), "%s", err);
}

/* ---- the worker that stays ---------------------------------------------- */

/* A job of the test worker, and what it leaves in shared memory. */
typedef struct worker_jobs {
	enum { JOB_OK, JOB_CRASH, JOB_HANG, JOB_FAIL } next;
	pid_t pid;      /* of the process that ran the last job */
	int jobs;       /* jobs that process has run */
} worker_jobs;

static int serve_test_job(void *arg)
{
	worker_jobs *j = arg;
	static int served;  /* the worker's own count */
	served++;
	j->pid = getpid();
	j->jobs = served;
	switch (j->next) {
	case JOB_CRASH: return crash(NULL);
	case JOB_HANG: return hang(NULL);
	case JOB_FAIL: return fail(NULL);
	default: return 0;
	}
}

/* Run one job of kind "next" in "w"; return its status. */
static rt_run_status run_test_job(rt_worker *w, worker_jobs *j, int next, char *err,
	size_t len)
{
	j->next = next;
	return rt_worker_run(w, 0.5, err, len);
}

Test(worker, jobs_run_one_after_another_in_one_process)
{
	worker_jobs *j = rt_shared_alloc(sizeof(*j));
	rt_worker *w = rt_worker_new(serve_test_job, j);
	cr_assert(j && w);
	char err[256] = "";
	pid_t first = 0;
	for (int k = 1; k <= 3; k++) {
		cr_assert_eq(run_test_job(w, j, JOB_OK, err, sizeof(err)), RT_RUN_OK, "%s", err);
		cr_expect_eq(j->jobs, k, "job %d ran in a process that has served %d", k, j->jobs);
		if (k == 1)
			first = j->pid;
		cr_expect_eq(j->pid, first);
	}
	cr_expect_neq(first, getpid());
	cr_expect_eq(rt_worker_starts(w), 1);
	rt_worker_free(w);
	cr_expect_eq(kill(first, 0), -1, "the worker outlived rt_worker_free");
	rt_shared_free(j, sizeof(*j));
}

/* A crash, a hang or a failure ends the worker with its class; the next
 * job runs in a new one. */
Test(worker, a_job_that_ends_the_worker_is_classified_and_it_is_replaced)
{
	static const struct { int kind; rt_run_status st; const char *why; } cases[] = {
		{ JOB_CRASH, RT_RUN_CRASHED, "signal 11" },
		{ JOB_HANG, RT_RUN_TIMEOUT, "killed" },
		{ JOB_FAIL, RT_RUN_FAILED, "exit status 3" },
	};
	worker_jobs *j = rt_shared_alloc(sizeof(*j));
	rt_worker *w = rt_worker_new(serve_test_job, j);
	cr_assert(j && w);
	char err[256];
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		cr_assert_eq(run_test_job(w, j, JOB_OK, err, sizeof(err)), RT_RUN_OK, "%s", err);
		pid_t before = j->pid;
		err[0] = '\0';
		cr_expect_eq(run_test_job(w, j, cases[c].kind, err, sizeof(err)), cases[c].st,
			"case %zu: %s", c, err);
		cr_expect(strstr(err, cases[c].why), "case %zu: %s", c, err);
		cr_expect_eq(kill(before, 0), -1, "case %zu: the ended worker was not reaped", c);
		cr_assert_eq(run_test_job(w, j, JOB_OK, err, sizeof(err)), RT_RUN_OK, "%s", err);
		cr_expect_neq(j->pid, before);
		cr_expect_eq(j->jobs, 1);
	}
	cr_expect_eq(rt_worker_starts(w), 4);
	rt_worker_free(w);
	rt_shared_free(j, sizeof(*j));
}

/* A worker killed between jobs (by the OOM killer, say) is replaced
 * without the parent dying of SIGPIPE. */
Test(worker, a_worker_killed_while_idle_is_replaced)
{
	worker_jobs *j = rt_shared_alloc(sizeof(*j));
	rt_worker *w = rt_worker_new(serve_test_job, j);
	cr_assert(j && w);
	char err[256] = "";
	cr_assert_eq(run_test_job(w, j, JOB_OK, err, sizeof(err)), RT_RUN_OK, "%s", err);
	pid_t first = j->pid;
	kill(first, SIGKILL);
	nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	cr_expect_eq(run_test_job(w, j, JOB_OK, err, sizeof(err)), RT_RUN_OK, "%s", err);
	cr_expect_neq(j->pid, first);
	cr_expect_eq(rt_worker_starts(w), 2);
	rt_worker_free(w);
	rt_shared_free(j, sizeof(*j));
}

Test(worker, freeing_a_worker_that_never_ran_is_a_noop)
{
	rt_worker_free(rt_worker_new(serve_test_job, NULL));
	rt_worker_free(NULL);
}
