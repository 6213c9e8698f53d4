/* The measurer on small matmuls: correct candidates are timed and the best
 * so far checked against the interpreter; wrong, crashing, hanging and
 * unbuildable candidates get their error class while the rest of the batch
 * still measures; a stop flag and a known best are honoured.  Each test
 * compiles into its own kernel cache.  And the timed run both GPU runners
 * share, on a fake device kernel in host memory. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/compare.h"
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/state.h"
#include "tessel/ops.h"
#include "runtime/cpu_wait.h"
#include "runtime/timer.h"
#include "codegen/code_stats.h"
#include "tuner/measure.h"
#include "tuner/round_robin.h"
#include "tuner/runner_gpu.h"
#include "tuner/task.h"
#include "tests/support.h"

typedef struct fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	tune_task task;
	char cache[64];
} fixture;

static void fixture_init(fixture *f, const char *size)
{
	memset(f, 0, sizeof(*f));
	const char *k[] = { "M", "N", "K" }, *v[] = { size, size, size };
	f->ctx = tessel_ctx_new();
	f->op = tessel_ops_instantiate(f->ctx, "matmul", 3, k, v);
	cr_assert(f->op);
	char err[512];
	cr_assert_eq(tune_task_init(&f->task, f->ctx, f->op, NULL, err, sizeof(err)), 0,
		"%s", err);
	snprintf(f->cache, sizeof(f->cache), "/tmp/tessel-measure-XXXXXX");
	cr_assert(mkdtemp(f->cache));
	setenv("TESSEL_CACHE_DIR", f->cache, 1);
}

static void fixture_fini(fixture *f)
{
	cr_expect_eq(test_remove_tree(f->cache), 0, "removing %s", f->cache);
	tune_task_clear(&f->task);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

/* Quick options: short timing, a short timeout. */
static tune_measure_opts quick_opts(void)
{
	tune_measure_opts o = tune_measure_opts_default();
	o.timer.min_total_s = 0.005;
	o.timeout_s = 5;
	return o;
}

static tune_measurer *new_measurer(fixture *f, const tune_measure_opts *o)
{
	char err[512];
	tune_measurer *m = tune_measurer_new(&f->task, o, err, sizeof(err));
	cr_assert(m, "%s", err);
	return m;
}

/* The program of the default schedule of "f"'s op after "split" of C.j by
 * "factor" (0: none) and "parallel" C.i. */
static loop_prog *program(fixture *f, int64_t factor, bool parallel)
{
	sch_state *st = sch_state_new(f->ctx, f->op);
	cr_assert(st);
	if (factor)
		cr_assert_eq(sch_split(st, "C.j", factor, false, NULL, NULL), 0, "%s",
			tessel_ctx_error(f->ctx)->message);
	if (parallel)
		cr_assert_eq(sch_parallel(st, "C.i"), 0, "%s", tessel_ctx_error(f->ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(f->ctx)->message);
	sch_state_free(st);
	return p;
}

/* Whether "s" stores a constant (the initialization of the accumulator). */
static bool stores_a_constant(const loop_stmt *s)
{
	return s->u.store.value->kind == LX_FLOAT;
}

/* The default program with its accumulator starting at 1, not 0. */
static loop_prog *wrong_program(fixture *f)
{
	loop_prog *p = program(f, 0, false);
	loop_stmt *s = test_first_store(p->body, stores_a_constant);
	cr_assert(s);
	s->u.store.value->u.fval = 1.0;
	return p;
}

/* The default program initializing C[2^40, j]: far out of any mapping. */
static loop_prog *crashing_program(fixture *f)
{
	loop_prog *p = program(f, 0, false);
	loop_stmt *s = test_first_store(p->body, stores_a_constant);
	cr_assert(s);
	s->u.store.index[0] = lx_int(p, (int64_t)1 << 40);
	return p;
}

/* The default program repeated 2^50 times. */
static loop_prog *hanging_program(fixture *f)
{
	loop_prog *p = program(f, 0, false);
	p->body = ls_for(p, loop_var_new(p, "forever"), lx_int(p, 0),
		lx_int(p, (int64_t)1 << 50), LOOP_SERIAL, p->body);
	return p;
}

static void expect_ok_checked(const tune_result *r)
{
	cr_expect_eq(r->error, TUNE_OK, "%s: %s", tune_error_name(r->error), r->msg);
	cr_expect_str_empty(r->msg);
	cr_expect(r->checked);
	cr_expect_leq(r->rel_error, te_tolerance(TESSEL_F32), "rel error %g", r->rel_error);
	cr_expect_gt(r->median_s, 0);
	cr_expect_leq(r->min_s, r->median_s);
	cr_expect_geq(r->runs, 3);
}

Test(measure, error_names)
{
	const char *want[] = { "ok", "lower", "build", "crash", "timeout", "runtime", "wrong" };
	for (int e = 0; e < TUNE_ERR_COUNT; e++)
		cr_expect_str_eq(tune_error_name((tune_error)e), want[e]);
}

Test(measure, defaults)
{
	tune_measure_opts o = tune_measure_opts_default();
	cr_expect_eq(o.build_jobs, 0);
	cr_expect_eq(o.threads, 0);
	cr_expect_eq(o.timeout_s, 10);
	cr_expect_eq(o.timer.warmup, 1);
	cr_expect_eq(o.timer.min_repeats, 3);
	cr_expect_eq(o.timer.min_total_s, 0.05);
	cr_expect_not(o.timer.flush_cache);
	cr_expect_eq(o.passes, TUNE_DEFAULT_PASSES);
	cr_expect_eq(o.seed, 1);
}

/* Expect a measurer with the options "o" to be refused with a message
 * that names "what". */
static void expect_refused(const tune_measure_opts *o, const char *what)
{
	fixture f;
	fixture_init(&f, "8");
	char err[512] = "";
	cr_expect_null(tune_measurer_new(&f.task, o, err, sizeof(err)));
	cr_expect(strstr(err, what), "%s", err);
	fixture_fini(&f);
}

Test(measure, rejects_fewer_than_one_pass)
{
	tune_measure_opts o = quick_opts();
	o.passes = 0;
	expect_refused(&o, "passes");
}

Test(measure, rejects_a_timeout_that_is_not_positive)
{
	tune_measure_opts o = quick_opts();
	o.timeout_s = 0;
	expect_refused(&o, "timeout");
}

/* Measure the default program of "f" alone in a batch with the options
 * "o" (NULL: the defaults) into "r". */
static void measure_default(fixture *f, const tune_measure_opts *o, tune_result *r)
{
	tune_measurer *m = new_measurer(f, o);
	loop_prog *p = program(f, 0, false);
	cr_assert_eq(tune_measure_batch(m, &p, 1, r, NULL), 0, "%s", r->msg);
	loop_prog_free(p);
	tune_measurer_free(m);
}

Test(measure, a_correct_candidate_is_timed_and_checked)
{
	fixture f;
	fixture_init(&f, "32");
	tune_result r;
	measure_default(&f, NULL, &r);
	expect_ok_checked(&r);
	tune_measure_opts o = tune_measure_opts_default();
	cr_expect_geq(r.attempts, o.passes + 1, "a worker a pass, one more for the check");
	/* The runs are planned from a time measured alone, which noise can
	 * make up to about 2x slower than the batch's median; CI once saw
	 * 1996 runs of 14.3 us (28.5 ms) against 32 planned visits of 1 ms. */
	double planned_s = TUNE_RR_MAX_VISITS * TUNE_RR_VISIT_S;
	cr_expect_gt(r.median_s * r.runs, 0.5 * planned_s,
		"the batch timed together for min_total_s or %d visits of %g s: %d runs "
		"of %g s", TUNE_RR_MAX_VISITS, TUNE_RR_VISIT_S, r.runs, r.median_s);
	cr_expect_leq(r.min_s, r.median_s);
	fixture_fini(&f);
}

/* Spin until *"arg" (an atomic_int) is set. */
static void *spin_until_set(void *arg)
{
	atomic_int *stop = arg;
	while (!atomic_load(stop))
		continue;
	return NULL;
}

Test(measure, a_measurement_disturbed_by_a_busy_cpu_is_taken_again)
{
	uint64_t ns;
	if (rt_cpu_wait_ns(&ns))
		cr_skip_test("no schedstat in /proc: waits for a CPU are unknown here");
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	o.threads = 1;
	o.passes = 1;
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *p = program(&f, 0, false);
	tune_result r;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	bool waited = false;
	for (int attempt = 0; attempt < 3 && !waited; attempt++) {
		atomic_int stop = 0;
		pthread_t hog;
		cr_assert_eq(pthread_create(&hog, NULL, spin_until_set, &stop), 0);
		tune_measurer_set_best(m, INFINITY);
		int failed = tune_measure_batch(m, &p, 1, &r, NULL);
		atomic_store(&stop, 1);
		pthread_join(hog, NULL);
		cr_assert_eq(failed, 0, "%s", r.msg);
		expect_ok_checked(&r);
		cr_log_info("attempt %d: %d workers, cpu wait %g", attempt, r.attempts,
			r.cpu_wait);
		waited = tune_result_disturbed(&r);
	}
	cr_expect(waited, "in three tries a worker sharing its only CPU with a "
		"spinning thread never waited for it: cpu wait %g", r.cpu_wait);
	cr_expect_eq(r.attempts, 1 + TUNE_DISTURBED_RETRIES,
		"a worker that waits each time is taken again each time");
	cr_expect_eq(r.retakes, TUNE_DISTURBED_RETRIES);
	loop_prog_free(p);
	tune_measurer_free(m);
	fixture_fini(&f);
}

Test(measure, a_batch_skips_null_programs)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *progs[] = { program(&f, 0, false), NULL, program(&f, 8, false),
		program(&f, 4, true), program(&f, 16, true) };
	int n = sizeof(progs) / sizeof(progs[0]);
	tune_result out[5];
	for (int i = 0; i < n; i++)
		out[i] = (tune_result){ .error = TUNE_ERR_LOWER, .msg = "set by the caller" };
	cr_assert_eq(tune_measure_batch(m, progs, n, out, NULL), 0, "%s", out[0].msg);
	cr_expect_eq(out[1].error, TUNE_ERR_LOWER);
	cr_expect_str_eq(out[1].msg, "set by the caller");
	expect_ok_checked(&out[0]);
	double best = out[0].median_s;
	for (int i = 2; i < n; i++) {
		cr_expect_eq(out[i].error, TUNE_OK, "%d: %s", i, out[i].msg);
		cr_expect_gt(out[i].median_s, 0);
		if (out[i].median_s < best) {
			expect_ok_checked(&out[i]);
			best = out[i].median_s;
		} else {
			cr_expect_not(out[i].checked, "%d is not the best", i);
			cr_expect(isnan(out[i].rel_error));
		}
	}
	for (int i = 0; i < n; i++)
		loop_prog_free(progs[i]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

/* Building alone runs nothing: each result says whether it built, and
 * with a disassembler at hand holds its code's features; the kernels
 * are then in the cache, and measuring them reads the same features. */
Test(measure, a_batch_built_without_running_has_its_code_read)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	o.read_code = true;
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *progs[] = { program(&f, 0, false), NULL, program(&f, 8, true) };
	tune_result built[3], measured[3];
	built[1] = measured[1] = (tune_result){ .error = TUNE_ERR_LOWER };
	int workers = tune_measurer_workers_started(m);
	cr_assert_eq(tune_build_batch(m, progs, 3, built, NULL), 0, "%s", built[0].msg);
	cr_expect_eq(tune_measurer_workers_started(m), workers, "nothing ran");
	cr_expect_eq(built[1].error, TUNE_ERR_LOWER, "a NULL program is left alone");
	char tool[4096];
	bool reads = cg_code_stats_tool(tool, sizeof(tool)) == 0;
	cr_expect_eq(tune_measurer_reads_code(m), reads);
	for (int i = 0; i < 3; i += 2) {
		cr_expect_eq(built[i].error, TUNE_OK, "%d: %s", i, built[i].msg);
		cr_expect(isnan(built[i].median_s), "%d was not timed", i);
		cr_expect_eq(built[i].has_code, reads);
	}
	if (reads) {
		cr_expect_gt(built[0].code[TC_INSTRUCTIONS], 0);
		cr_expect_gt(built[0].code[TC_LOOPS], 0);
		cr_expect_neq(memcmp(built[0].code, built[2].code, sizeof(built[0].code)), 0,
			"two programs, two codes");
	}
	cr_assert_eq(tune_measure_batch(m, progs, 3, measured, NULL), 0, "%s",
		measured[0].msg);
	for (int i = 0; i < 3; i += 2) {
		cr_expect_eq(measured[i].error, TUNE_OK, "%d: %s", i, measured[i].msg);
		cr_expect_eq(measured[i].has_code, reads);
		for (int k = 0; k < TUNE_CODE_FEATURES; k++)
			cr_expect_eq(built[i].code[k], measured[i].code[k],
				"%d: the same code measured (feature %d: %g, %g)", i, k,
				built[i].code[k], measured[i].code[k]);
	}
	for (int i = 0; i < 3; i++)
		loop_prog_free(progs[i]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

Test(measure, a_wrong_best_is_caught_and_not_kept)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *progs[] = { wrong_program(&f), program(&f, 0, false) };
	tune_result out[2];
	cr_assert_eq(tune_measure_batch(m, progs, 2, out, NULL), 0, "%s", out[0].msg);
	cr_expect_eq(out[0].error, TUNE_ERR_WRONG, "%s: %s", tune_error_name(out[0].error),
		out[0].msg);
	cr_expect(out[0].checked);
	cr_expect_gt(out[0].rel_error, te_tolerance(TESSEL_F32));
	cr_expect(strstr(out[0].msg, "relative error"), "%s", out[0].msg);
	cr_expect(isnan(out[0].median_s));
	expect_ok_checked(&out[1]);
	loop_prog_free(progs[0]);
	loop_prog_free(progs[1]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

/* Measure "bad" (taken) then the default program of "f" in one batch
 * with the options "o" into "out"; the second must pass its check. */
static void measure_bad_then_good(fixture *f, const tune_measure_opts *o, loop_prog *bad,
	tune_result out[2])
{
	tune_measurer *m = new_measurer(f, o);
	loop_prog *progs[] = { bad, program(f, 0, false) };
	cr_assert_eq(tune_measure_batch(m, progs, 2, out, NULL), 0, "%s", out[0].msg);
	expect_ok_checked(&out[1]);
	loop_prog_free(progs[0]);
	loop_prog_free(progs[1]);
	tune_measurer_free(m);
}

/* An op too costly to evaluate in full (here by a lowered threshold) is
 * checked at chosen elements: the right program passes, the wrong one is
 * caught. */
Test(measure, a_large_op_is_checked_at_chosen_elements)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	o.check_full_cost = 1;
	tune_result out[2];
	measure_bad_then_good(&f, &o, wrong_program(&f), out);
	cr_expect_eq(out[0].error, TUNE_ERR_WRONG, "%s: %s", tune_error_name(out[0].error),
		out[0].msg);
	fixture_fini(&f);
}

Test(measure, a_crash_is_classified_and_the_next_candidate_runs)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	tune_result out[2];
	measure_bad_then_good(&f, &o, crashing_program(&f), out);
	cr_expect_eq(out[0].error, TUNE_ERR_CRASH, "%s: %s", tune_error_name(out[0].error),
		out[0].msg);
	cr_expect(strstr(out[0].msg, "signal"), "%s", out[0].msg);
	cr_expect(isnan(out[0].median_s));
	cr_expect_not(out[0].checked);
	fixture_fini(&f);
}

Test(measure, a_hang_times_out)
{
	fixture f;
	fixture_init(&f, "16");
	tune_measure_opts o = quick_opts();
	o.timeout_s = 0.5;
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *progs[] = { hanging_program(&f), program(&f, 0, false) };
	tune_result out[2];
	double start = rt_now_s();
	cr_assert_eq(tune_measure_batch(m, progs, 2, out, NULL), 0, "%s", out[0].msg);
	cr_expect_lt(rt_now_s() - start, 5.0);
	cr_expect_eq(out[0].error, TUNE_ERR_TIMEOUT, "%s: %s", tune_error_name(out[0].error),
		out[0].msg);
	cr_expect(isnan(out[0].median_s));
	expect_ok_checked(&out[1]);
	loop_prog_free(progs[0]);
	loop_prog_free(progs[1]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

/* A build that fails keeps the compiler's message, measured or built alone. */
Test(measure, a_build_error_keeps_the_compiler_message)
{
	fixture f;
	fixture_init(&f, "8");
	setenv("CC", "false", 1);
	tune_measurer *m = new_measurer(&f, NULL);
	loop_prog *p = program(&f, 0, false);
	tune_result r;
	for (int build_only = 0; build_only < 2; build_only++) {
		cr_assert_eq(build_only ? tune_build_batch(m, &p, 1, &r, NULL) :
			tune_measure_batch(m, &p, 1, &r, NULL), 0, "%s", r.msg);
		cr_expect_eq(r.error, TUNE_ERR_BUILD, "%s: %s", tune_error_name(r.error), r.msg);
		cr_expect(strstr(r.msg, "C compiler 'false' failed"), "%s", r.msg);
		cr_expect(isnan(r.median_s));
		cr_expect_not(r.has_code);
	}
	loop_prog_free(p);
	tune_measurer_free(m);
	unsetenv("CC");
	fixture_fini(&f);
}

Test(measure, a_program_for_another_op_is_refused)
{
	fixture f, g;
	fixture_init(&g, "16");
	loop_prog *p = program(&g, 0, false);
	fixture_init(&f, "8");
	tune_measurer *m = new_measurer(&f, NULL);
	tune_result r;
	cr_assert_eq(tune_measure_batch(m, &p, 1, &r, NULL), 0, "%s", r.msg);
	cr_expect_eq(r.error, TUNE_ERR_BUILD, "%s: %s", tune_error_name(r.error), r.msg);
	cr_expect(strstr(r.msg, "differs from the op's"), "%s", r.msg);
	loop_prog_free(p);
	tune_measurer_free(m);
	fixture_fini(&f);
	fixture_fini(&g);
}

Test(measure, a_stop_flag_leaves_the_rest_not_run)
{
	fixture f;
	fixture_init(&f, "8");
	tune_measurer *m = new_measurer(&f, NULL);
	loop_prog *progs[] = { program(&f, 0, false), NULL, program(&f, 4, false) };
	tune_result out[3];
	out[1] = (tune_result){ .error = TUNE_ERR_LOWER };
	volatile int stop = 1;
	cr_assert_eq(tune_measure_batch(m, progs, 3, out, &stop), 0, "%s", out[0].msg);
	for (int i = 0; i < 3; i += 2) {
		cr_expect_eq(out[i].error, TUNE_ERR_RUNTIME);
		cr_expect_str_eq(out[i].msg, "not run: interrupted");
		cr_expect(out[i].not_run);
		cr_expect_not(out[i].checked);
	}
	cr_expect_eq(out[1].error, TUNE_ERR_LOWER);
	cr_expect_not(out[1].not_run);
	loop_prog_free(progs[0]);
	loop_prog_free(progs[2]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

Test(measure, a_known_best_leaves_slower_candidates_unchecked)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	tune_measurer *m = new_measurer(&f, &o);
	tune_measurer_set_best(m, 1e-12);
	loop_prog *progs[] = { program(&f, 0, false), wrong_program(&f) };
	tune_result out[2];
	cr_assert_eq(tune_measure_batch(m, progs, 2, out, NULL), 0, "%s", out[0].msg);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(out[i].error, TUNE_OK, "%d: %s", i, out[i].msg);
		cr_expect_not(out[i].checked);
		cr_expect(isnan(out[i].rel_error));
		cr_expect_gt(out[i].median_s, 1e-12);
	}
	loop_prog_free(progs[0]);
	loop_prog_free(progs[1]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

Test(measure, one_pass_or_a_cache_flush_times_each_candidate_alone)
{
	fixture f;
	fixture_init(&f, "32");
	tune_measure_opts o = quick_opts();
	for (int flush = 0; flush < 2; flush++) {
		o.passes = flush ? 2 : 1;
		o.timer.flush_cache = flush;
		o.timer.flush_bytes = 1 << 20;
		tune_result r;
		measure_default(&f, &o, &r);
		expect_ok_checked(&r);
		cr_expect_eq(r.attempts - r.retakes, o.passes, "flush %d: no worker for a "
			"together pass nor for the check", flush);
	}
	fixture_fini(&f);
}

Test(measure, the_batch_timed_together_keeps_its_order_of_speed)
{
	fixture f;
	fixture_init(&f, "64");
	tune_measure_opts o = quick_opts();
	o.timer.min_total_s = 0.02;
	tune_measurer *m = new_measurer(&f, &o);
	loop_prog *progs[] = { program(&f, 0, false), program(&f, 16, true) };
	progs[0]->body = ls_for(progs[0], loop_var_new(progs[0], "again"), lx_int(progs[0], 0),
		lx_int(progs[0], 8), LOOP_SERIAL, progs[0]->body);
	tune_result out[2];
	cr_assert_eq(tune_measure_batch(m, progs, 2, out, NULL), 0, "%s", out[0].msg);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(out[i].error, TUNE_OK, "%d: %s", i, out[i].msg);
		cr_expect_geq(out[i].attempts, 2, "%d ran alone, then together", i);
	}
	cr_expect_gt(out[0].median_s, 2 * out[1].median_s,
		"the default schedule 8 times (%g s) against one parallel pass (%g s)",
		out[0].median_s, out[1].median_s);
	cr_expect(out[0].checked, "the first is the best so far");
	expect_ok_checked(&out[1]);
	loop_prog_free(progs[0]);
	loop_prog_free(progs[1]);
	tune_measurer_free(m);
	fixture_fini(&f);
}

/* ---- timing in turns (tuner/round_robin.c) -------------------------------- */

Test(round_robin, plans_fill_the_minimum_time_within_the_visit_limits)
{
	rt_timer_opts t = rt_timer_opts_default();
	t.min_total_s = 0.05;
	t.min_repeats = 3;
	tune_rr_plan p = tune_rr_plan_for(2e-6, &t);
	cr_expect_eq(p.runs, 500, "a visit of a 2 us kernel lasts 1 ms");
	cr_expect_eq(p.visits, TUNE_RR_MAX_VISITS);
	cr_expect(p.warm);
	p = tune_rr_plan_for(2.5e-3, &t);
	cr_expect_eq(p.runs, 1);
	cr_expect_eq(p.visits, 20);
	cr_expect(p.warm);
	p = tune_rr_plan_for(0.5, &t);
	cr_expect_eq(p.runs, 1);
	cr_expect_eq(p.visits, 3, "min_repeats visits of a slow kernel");
	cr_expect_not(p.warm);
	p = tune_rr_plan_for(NAN, &t);
	cr_expect_eq(p.visits, TUNE_RR_MAX_VISITS);
	tune_rr_plan plans[] = { { 4, 2, true }, { 2, 1, false } };
	double alone[] = { 0.1, 1.0 };
	cr_expect_float_eq(tune_rr_estimate_s(plans, alone, 2), 4 * 3 * 0.1 + 2 * 1.0, 1e-12);
}

typedef struct visit_trace {
	int calls[3];
	int order[64];
	int n;
} visit_trace;

static void record_call(void *arg, int i)
{
	visit_trace *t = arg;
	t->calls[i]++;
	if (t->n < 64)
		t->order[t->n++] = i;
}

Test(round_robin, visits_are_spread_over_the_rounds)
{
	tune_rr_plan plans[] = { { 8, 1, false }, { 2, 3, true }, { 4, 1, true } };
	tune_rr_log logs[3];
	visit_trace t = { 0 };
	tune_rr_time(3, record_call, &t, plans, 10.0, NULL, logs);
	int want_calls[] = { 8, 2 * 4, 4 * 2 };
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(logs[i].visits, plans[i].visits, "%d", i);
		cr_expect_eq(logs[i].runs, plans[i].runs);
		cr_expect_eq(t.calls[i], want_calls[i], "%d: %d calls", i, t.calls[i]);
		for (int v = 0; v < logs[i].visits; v++)
			cr_expect_geq(logs[i].s[v], 0);
	}
	int before = 0;
	for (int k = 0; k < t.n && t.order[k] != 1; k++)
		before += t.order[k] == 0;
	cr_expect_eq(before, 3, "kernel 1's two visits are in rounds 4 and 8, after "
		"three of kernel 0's (%d)", before);
	rt_timing summary;
	tune_rr_summary(&logs[1], &summary);
	cr_expect_eq(summary.runs, 6);
	cr_expect_leq(summary.min_s, summary.median_s);
}

Test(round_robin, a_spent_budget_or_a_stop_ends_the_session)
{
	tune_rr_plan plans[] = { { 4, 1, false }, { 4, 1, false } };
	tune_rr_log logs[2];
	visit_trace t = { 0 };
	tune_rr_time(2, record_call, &t, plans, -1.0, NULL, logs);
	cr_expect_eq(t.n, 0);
	rt_timing summary;
	tune_rr_summary(&logs[0], &summary);
	cr_expect(isnan(summary.median_s) && isnan(summary.min_s));
	cr_expect_eq(summary.runs, 0);
	volatile int stop = 1;
	tune_rr_time(2, record_call, &t, plans, 10.0, &stop, logs);
	cr_expect_eq(t.n, 0);
	cr_expect_eq(logs[1].visits, 0);
}

/* ---- the timed run both GPU runners share (tuner/runner_gpu.c) ---------- */

/* A device kernel made of host memory: two arguments, an input and an
 * output of 8 floats; "fail" names the call that fails. */
typedef struct fake_kernel {
	tessel_ctx *ctx;
	float device[2][8];
	int uploads, launches, downloads, fills;
	const char *fail;
	double launch_s;        /* each launch busy-waits this long */
	bool device_clock;      /* time with fake_time, not the wall clock */
} fake_kernel;

static int fake_fill(void *k, int arg, const void *src, size_t bytes, char *msg, size_t len)
{
	fake_kernel *f = k;
	f->fills++;
	if (f->fail && strcmp(f->fail, "fill") == 0) {
		snprintf(msg, len, "fill failed");
		return -1;
	}
	memcpy(f->device[arg], src, bytes);
	return 0;
}

static int fake_upload(tessel_ctx *ctx, void *k, void *const *args)
{
	(void)ctx;
	fake_kernel *f = k;
	f->uploads++;
	memcpy(f->device[0], args[0], sizeof(f->device[0]));
	return 0;
}

static int fake_launch(tessel_ctx *ctx, void *k)
{
	fake_kernel *f = k;
	f->launches++;
	if (f->fail && strcmp(f->fail, "launch") == 0)
		return te_error(ctx, TESSEL_ERR_IO, (tessel_loc){ 0 }, "launch failed");
	double until = rt_now_s() + f->launch_s;
	while (rt_now_s() < until)
		;
	for (int i = 0; i < 8; i++)
		f->device[1][i] = 2 * f->device[0][i];
	return 0;
}

static int fake_download(tessel_ctx *ctx, void *k, void *const *args)
{
	(void)ctx;
	fake_kernel *f = k;
	f->downloads++;
	memcpy(args[1], f->device[1], sizeof(f->device[1]));
	return 0;
}

/* A device clock: launch o->min_repeats times and report 1 ms each; fail
 * as "fail" == "time" says. */
static int fake_time(tessel_ctx *ctx, void *k, const rt_timer_opts *o,
	rt_timing *timing, char *msg, size_t len)
{
	fake_kernel *f = k;
	if (f->fail && strcmp(f->fail, "time") == 0) {
		snprintf(msg, len, "device clock failed");
		return RT_TIME_ERROR;
	}
	for (int i = 0; i < o->min_repeats; i++)
		if (fake_launch(ctx, k))
			return RT_TIME_ERROR;
	*timing = (rt_timing){ 1e-3, 1e-3, 1e-3, o->min_repeats, NAN };
	return RT_TIME_OK;
}

/* Run the shared timing on a fake kernel; return its status. */
static tune_gpu_status fake_run(fake_kernel *f, rt_timer_opts *timer, float *in,
	float *out, rt_timing *timing, char *msg, size_t len)
{
	static const size_t bytes[2] = { 8 * sizeof(float), 8 * sizeof(float) };
	static const bool is_output[2] = { false, true };
	void *args[2] = { in, out };
	tune_gpu_kernel g = { f->ctx, f, 2, bytes, is_output, fake_fill, fake_upload,
		fake_launch, fake_download, f->device_clock ? fake_time : NULL };
	tune_gpu_run r = { NULL, args, timer, 0 };
	return tune_gpu_time_built(&g, &r, timing, msg, len);
}

/* Upload, the output poisoned before any launch, warm-up and timed
 * launches, download; a failing fill or launch is a runtime error with
 * its reason; a timer past its limit a timeout. */
Test(gpu_runner, shared_timing_and_its_errors)
{
	fake_kernel f = { .ctx = tessel_ctx_new() };
	rt_timer_opts timer = rt_timer_opts_default();
	timer.min_total_s = 0;
	float in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8] = { 0 };
	rt_timing timing;
	char msg[256];
	cr_assert_eq(fake_run(&f, &timer, in, out, &timing, msg, sizeof(msg)), TUNE_GPU_OK,
		"%s", msg);
	cr_expect_eq(f.uploads, 1);
	cr_expect_eq(f.fills, 1, "only the output is poisoned");
	cr_expect_geq(f.launches, timer.warmup + timer.min_repeats);
	cr_expect_eq(timing.runs, f.launches - timer.warmup);
	cr_expect_eq(f.downloads, 1);
	for (int i = 0; i < 8; i++)
		cr_expect_eq(out[i], 2 * in[i]);

	fake_kernel bad = { .ctx = f.ctx, .fail = "fill" };
	cr_expect_eq(fake_run(&bad, &timer, in, out, &timing, msg, sizeof(msg)),
		TUNE_GPU_RUNTIME);
	cr_expect_str_eq(msg, "fill failed");
	cr_expect_eq(bad.launches, 0, "nothing ran after the failed fill");

	bad = (fake_kernel){ .ctx = f.ctx, .fail = "launch" };
	cr_expect_eq(fake_run(&bad, &timer, in, out, &timing, msg, sizeof(msg)),
		TUNE_GPU_RUNTIME);
	cr_expect(strstr(msg, "launch failed"), "%s", msg);
	tessel_ctx_clear_error(f.ctx);

	fake_kernel slow = { .ctx = f.ctx, .launch_s = 0.02 };
	timer.min_repeats = 50;
	timer.timeout_s = 0.1;
	cr_expect_eq(fake_run(&slow, &timer, in, out, &timing, msg, sizeof(msg)),
		TUNE_GPU_TIMEOUT);
	cr_expect(strstr(msg, "timed runs within"), "%s", msg);
	tessel_ctx_free(f.ctx);
}

/* A kernel with its own clock (CUDA's CUPTI) is timed by it, not by the
 * wall clock; its failure is a runtime error with its reason, and the
 * outputs are still checked through the download. */
Test(gpu_runner, device_clock_replaces_the_wall_clock)
{
	fake_kernel f = { .ctx = tessel_ctx_new(), .device_clock = true, .launch_s = 0.002 };
	rt_timer_opts timer = rt_timer_opts_default();
	float in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8] = { 0 };
	rt_timing timing;
	char msg[256];
	cr_assert_eq(fake_run(&f, &timer, in, out, &timing, msg, sizeof(msg)), TUNE_GPU_OK,
		"%s", msg);
	cr_expect_eq(timing.median_s, 1e-3, "the device's time, not the 2 ms wall time");
	cr_expect_eq(timing.runs, timer.min_repeats);
	cr_expect_eq(f.launches, timer.min_repeats);
	cr_expect_eq(f.downloads, 1);
	for (int i = 0; i < 8; i++)
		cr_expect_eq(out[i], 2 * in[i]);

	fake_kernel bad = { .ctx = f.ctx, .device_clock = true, .fail = "time" };
	cr_expect_eq(fake_run(&bad, &timer, in, out, &timing, msg, sizeof(msg)),
		TUNE_GPU_RUNTIME);
	cr_expect_str_eq(msg, "device clock failed");
	cr_expect_eq(bad.downloads, 0, "nothing downloaded after the failed timing");
	tessel_ctx_free(f.ctx);
}
