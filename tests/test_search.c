/* The evolutionary search end to end on small ops: the best found is
 * correct (against the interpreter) and faster than the default schedule;
 * a re-run resumes without measuring again; a tuner killed with SIGKILL
 * leaves a sound store holding whole batches; two tuners share a file. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/loop_eval.h"
#include "runtime/timer.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "codegen/code_stats.h"
#include "tuner/code_features.h"
#include "tuner/control.h"
#include "tuner/db.h"
#include "tuner/features.h"
#include "tuner/fork_map.h"
#include "tuner/novelty.h"
#include "tuner/reservoir.h"
#include "tuner/search.h"
#include "tuner/task.h"
#include "tests/support.h"

typedef struct fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	tune_task task;
	char dir[64];
	char db_path[128];
} fixture;

static void fixture_init(fixture *f, const char *name, int n, const char **keys,
	const char **values)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	f->op = tessel_ops_instantiate(f->ctx, name, n, keys, values);
	cr_assert(f->op, "instantiating %s", name);
	char err[512];
	cr_assert_eq(tune_task_init(&f->task, f->ctx, f->op, NULL, err, sizeof(err)), 0,
		"%s", err);
	snprintf(f->dir, sizeof(f->dir), "/tmp/tessel-search-XXXXXX");
	cr_assert(mkdtemp(f->dir));
	snprintf(f->db_path, sizeof(f->db_path), "%s/records.db", f->dir);
}

static void fixture_fini(fixture *f)
{
	cr_expect_eq(test_remove_tree(f->dir), 0, "removing %s", f->dir);
	tune_task_clear(&f->task);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

static void small_matmul(fixture *f)
{
	const char *k[] = { "M", "N", "K" }, *v[] = { "48", "64", "32" };
	fixture_init(f, "matmul", 3, k, v);
}

static tune_search_opts quick_opts(int trials, uint64_t seed)
{
	tune_search_opts o = tune_search_opts_default();
	o.trials = trials;
	o.batch = 8;
	o.population = 48;
	o.generations = 2;
	o.min_train = 8;
	o.seed = seed;
	o.measure.timer.min_total_s = 0.005;
	o.measure.timer.min_repeats = 3;
	o.measure.timeout_s = 10;
	return o;
}

static tune_db *open_db(const fixture *f)
{
	char err[512];
	tune_db *db = tune_db_open(f->db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	return db;
}

static int64_t count_records(const fixture *f)
{
	tune_db *db = open_db(f);
	int64_t n = tune_db_count(db, 0, 0);
	cr_expect_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	tune_db_close(db);
	return n;
}

/* Replay "trace" on the op of "f", evaluate the program directly and
 * return its largest relative error against the interpreter. */
static double trace_error(fixture *f, const char *trace)
{
	sch_trace *t = sch_trace_parse(f->ctx, "best", trace);
	cr_assert(t);
	sch_state *st = sch_state_new(f->ctx, f->op);
	cr_assert_eq(sch_replay(st, t, "best"), 0, "%s", tessel_ctx_error(f->ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	tessel_tensor *args[8], *want;
	int nin = tessel_op_num_inputs(f->op);
	for (int i = 0; i < nin; i++) {
		args[i] = test_tensor_like(tessel_op_input_at(f->op, i));
		tessel_tensor_fill_random(args[i], 7 + (uint64_t)i);
	}
	args[nin] = test_tensor_like(tessel_op_output_at(f->op, 0));
	want = test_tensor_like(tessel_op_output_at(f->op, 0));
	cr_assert_eq(tessel_interp(f->op, args, &want), 0);
	cr_assert_eq(loop_eval(f->ctx, p, args), 0);
	double worst = test_outputs_error(args + nin, &want, 1);
	for (int i = 0; i <= nin; i++)
		tessel_tensor_free(args[i]);
	tessel_tensor_free(want);
	loop_prog_free(p);
	sch_state_free(st);
	sch_trace_free(t);
	return worst;
}

static void count_progress(const tune_progress *p, void *arg)
{
	(*(int *)arg)++;
	cr_expect_leq(p->trials, p->trials_total);
}

/* Where the "n" records "recs" hold the record of id "id", -1 when not. */
static int holds(const tune_record *recs, int n, int64_t id)
{
	for (int i = 0; i < n; i++)
		if (recs[i].id == id)
			return i;
	return -1;
}

/* One short run (each is a tuning run: they are what the suite waits
 * for): the best is correct and faster than the default schedule, the
 * model is saved, and the run ends with a run-off of its fastest
 * records, whose winner stands as the best until another run-off. */
Test(search, finds_a_correct_schedule_faster_than_the_default_by_a_runoff)
{
	fixture f;
	small_matmul(&f);
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(32, 1);
	o.runoff = 4;
	int calls = 0;
	o.progress = count_progress;
	o.progress_arg = &calls;
	tune_summary s;
	char err[512];
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.trials, 32);
	cr_expect(calls >= 2);
	cr_assert(isfinite(s.best_s) && isfinite(s.default_s));
	cr_expect_lt(s.best_s, s.default_s, "best %g s, default %g s", s.best_s, s.default_s);
	cr_assert(s.best_trace && s.best_record > 0);
	cr_expect_lt(trace_error(&f, s.best_trace), 1e-5);
	tune_model m;
	cr_expect_eq(tune_db_load_model(db, "cpu", &m), 0, "the model is saved");
	tune_model_clear(&m);

	tune_runoff_summary kept = s.runoff, *ro = &kept;
	cr_assert_eq(ro->entrants, 4, "32 trials give 4 distinct correct programs");
	cr_expect_eq(ro->failed, 0);
	cr_assert_gt(ro->id, 0, "the run-off is stored");
	cr_expect_eq(s.best_record, ro->winner, "the run-off's winner is the best");
	cr_expect_eq(s.best_s, ro->winner_s, "with its time in the run-off");
	int64_t w = tune_db_find_workload(db, f.task.key);
	int64_t t = tune_db_find_target(db, f.task.target);
	tune_record fastest[4], best;
	cr_assert_eq(tune_db_fastest(db, w, t, 4, fastest), 4);
	cr_expect_eq(ro->fastest, fastest[0].id);
	int at = holds(fastest, 4, ro->winner);
	cr_assert(at >= 0, "the winner is one of the 4 fastest recorded");
	cr_expect_eq(ro->winner_recorded_s, fastest[at].cost_median_s);
	for (int i = 0; i < 4; i++)
		tune_record_clear(&fastest[i]);
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_expect_eq(best.id, ro->winner);
	cr_expect_eq(best.runoff_s, ro->winner_s);
	cr_expect_str_eq(best.trace, s.best_trace);
	tune_record_clear(&best);
	tune_summary_clear(&s);

	o.runoff = 0;
	o.trials = 8;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.runoff.entrants, 0);
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	cr_expect_eq(best.id, ro->winner, "without a new run-off the last one stands");
	cr_expect_eq(s.best_record, best.id);
	tune_record_clear(&best);
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

Test(search, a_rerun_resumes_without_measuring_again)
{
	fixture f;
	small_matmul(&f);
	tune_summary s;
	char err[512];
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(16, 3);
	o.runoff = 0;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.runoff.entrants, 0, "no run-off asked for");
	double first_best = s.best_s;
	tune_summary_clear(&s);
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.known, 16);
	cr_expect_eq(s.trials, 16);
	cr_expect(isnan(s.default_s), "the default schedule is not measured again");
	cr_expect_leq(s.best_s, first_best);
	cr_expect_eq(tune_db_count(db, 0, 0), 32, "nothing was measured twice");
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

/* Run "sql" on the store of "db"; return the first column of its first
 * row (0 when it has none). */
static int64_t store_sql(tune_db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_prepare_v2(tune_db_sqlite(db), sql, -1, &st, NULL), SQLITE_OK,
		"%s: %s", sql, sqlite3_errmsg(tune_db_sqlite(db)));
	int rc = sqlite3_step(st);
	cr_assert(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql,
		sqlite3_errmsg(tune_db_sqlite(db)));
	int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return v;
}

Test(search, records_of_other_code_are_measured_again_first)
{
	fixture f;
	small_matmul(&f);
	tune_summary s;
	char err[512];
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(16, 7);
	o.runoff = 0;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	tune_summary_clear(&s);
	cr_expect_eq(store_sql(db, "SELECT count(*) FROM records WHERE error_class = 'ok' "
		"AND (code_key IS NULL OR length(code_key) <> 32)"), 0,
		"every record that ran has its code key");
	/* the three fastest as another build that made other code of them;
	 * the fourth as another build that made the same code */
	store_sql(db, "UPDATE records SET code_key = '0123456789abcdef0123456789abcdef', "
		"tessel_version = '0.0.1', measured_at = '2020-01-01T00:00:00Z' WHERE id IN "
		"(SELECT id FROM records WHERE error_class = 'ok' ORDER BY cost_median_s "
		"LIMIT 3)");
	store_sql(db, "UPDATE records SET tessel_version = '0.0.1' WHERE id = (SELECT id "
		"FROM records WHERE error_class = 'ok' ORDER BY cost_median_s LIMIT 1 OFFSET 3)");
	o.trials = 8;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.known, 16);
	cr_expect_eq(s.other_code, 3);
	cr_expect_eq(s.measured_again, 3);
	cr_expect_eq(s.trials, 8);
	cr_expect_eq(tune_db_count(db, 0, 0), 16 + 5, "measured again in place, not added");
	cr_expect_eq(store_sql(db, "SELECT count(*) FROM records WHERE pick = 'again' AND "
		"code_key <> '0123456789abcdef0123456789abcdef' AND measured_at > '2021' AND "
		"tessel_version <> '0.0.1'"), 3, "the three hold this build's measurement");
	cr_expect_eq(store_sql(db, "SELECT count(*) FROM records WHERE tessel_version = "
		"'0.0.1'"), 1, "the record of the same code is kept");
	cr_expect_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

typedef struct scales {
	int n;
	double scale[64];
	bool ok[64];
	char pick[64][16];
} scales;

static int collect_scales(const tune_record *r, void *arg)
{
	scales *c = arg;
	if (c->n < 64) {
		c->scale[c->n] = r->cost_scale;
		c->ok[c->n] = strcmp(r->error_class, "ok") == 0;
		snprintf(c->pick[c->n], sizeof c->pick[0], "%s", r->pick ? r->pick : "(null)");
	}
	c->n++;
	return 0;
}

/* Every batch after the first carries its control's scale, and every
 * record why it was measured: the default and random picks before a
 * model, then per batch of 8 seven model picks and one exploration
 * pick (epsilon 0.1). */
Test(search, records_carry_their_batch_scale_and_their_pick)
{
	fixture f;
	small_matmul(&f);
	tune_summary s;
	char err[512];
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(24, 5);
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	tune_summary_clear(&s);
	o.trials = 8;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	tune_summary_clear(&s);
	scales c = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, collect_scales, &c), 0);
	cr_assert_eq(c.n, 32, "the control is measured, not recorded");
	for (int i = 0; i < 8; i++)
		cr_expect(isnan(c.scale[i]), "record %d: the first batch has no control", i);
	for (int b = 1; b < 4; b++) {
		double first = NAN;
		for (int i = 8 * b; i < 8 * b + 8; i++) {
			if (!c.ok[i]) {
				cr_expect(isnan(c.scale[i]), "a failed record has no scale");
				continue;
			}
			cr_expect(c.scale[i] > 0.25 && c.scale[i] < 4,
				"record %d: scale %g", i, c.scale[i]);
			if (isnan(first))
				first = c.scale[i];
			cr_expect_eq(c.scale[i], first, "one scale per batch (%d)", b);
		}
	}
	cr_expect_str_eq(c.pick[0], TUNE_PICK_DEFAULT);
	for (int i = 1; i < 8; i++)
		cr_expect_str_eq(c.pick[i], TUNE_PICK_RANDOM, "record %d: before a model", i);
	for (int b = 1; b < 3; b++)
		for (int i = 8 * b; i < 8 * b + 8; i++)
			cr_expect_str_eq(c.pick[i], i < 8 * b + 7 ? TUNE_PICK_MODEL : TUNE_PICK_NOVEL,
				"record %d: 7 of 8 by the model, first", i);
	tune_db_close(db);
	fixture_fini(&f);
}

typedef struct code_log {
	int rounds_ordered;  /* round lines that ordered candidates by code */
	int ordered;         /* candidates ordered, over them */
} code_log;

static void note_code_rounds(const char *line, void *arg)
{
	code_log *l = arg;
	const char *at = strstr(line, " ordered by their code");
	int n = 0;
	if (!at)
		return;
	while (at > line && at[-1] >= '0' && at[-1] <= '9')
		at--;
	if (sscanf(at, "%d", &n) == 1 && n > 0) {
		l->rounds_ordered++;
		l->ordered += n;
	}
}

typedef struct widths {
	int n, with_code, ok_without_code;
} widths;

static int collect_widths(const tune_record *r, void *arg)
{
	widths *w = arg;
	w->n++;
	w->with_code += r->nfeatures == TUNE_RECORD_FEATURES;
	w->ok_without_code += strcmp(r->error_class, "ok") == 0 &&
		r->nfeatures != TUNE_RECORD_FEATURES;
	return 0;
}

/* With a short list asked for and a disassembler at hand, every measured
 * candidate's record keeps the features of its compiled code after the
 * program's, and once the code model has trained, each round builds a
 * short list of two batches' worth and orders it by their code; the
 * best found is still correct.  Without one, records keep the program's
 * features alone and nothing is ordered by code. */
Test(search, records_keep_their_code_features_and_the_short_list_is_ordered_by_them)
{
	char tool[4096];
	if (cg_code_stats_tool(tool, sizeof(tool)))
		cr_skip_test("no disassembler (objdump) to read the code with");
	fixture f;
	small_matmul(&f);
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(32, 4);
	cr_expect_eq(o.code_shortlist, 0, "off by default");
	o.code_shortlist = 2;
	code_log l = { 0 };
	o.log = note_code_rounds;
	o.log_arg = &l;
	tune_summary s;
	char err[512];
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(l.rounds_ordered, 3, "rounds 2 to 4 order their short list");
	cr_expect_eq(l.ordered, 3 * 2 * o.batch, "two batches' worth each");
	widths w = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, collect_widths, &w), 0);
	cr_expect_eq(w.n, 32);
	cr_expect_eq(w.ok_without_code, 0, "every built candidate has its code read");
	cr_expect_geq(w.with_code, 24);
	cr_assert(s.best_trace);
	cr_expect_lt(trace_error(&f, s.best_trace), 1e-5);
	tune_summary_clear(&s);
	o.code_shortlist = 0;
	o.trials = 16;
	l = (code_log){ 0 };
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(l.rounds_ordered, 0);
	widths later = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, collect_widths, &later), 0);
	cr_expect_eq(later.n, 48);
	cr_expect_eq(later.with_code, w.with_code, "the new records have no code features");
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

/* A skeleton leaves out the integers that stand alone (split factors,
 * limits, distances), not those in names; counts are per skeleton. */
Test(search, structures_are_traces_without_their_numbers)
{
	uint64_t a = tune_trace_skeleton("split C.i 8 -> C.io C.ii\nvectorize C.ii\n");
	cr_expect_eq(a, tune_trace_skeleton("split C.i 16 -> C.io C.ii\nvectorize C.ii\n"));
	cr_expect_neq(a, tune_trace_skeleton("split C.j 8 -> C.jo C.ji\nvectorize C.ji\n"));
	cr_expect_neq(tune_trace_skeleton("fuse W.ax0 W.ax1 -> f\n"),
		tune_trace_skeleton("fuse W.ax1 W.ax0 -> f\n"));
	cr_expect_eq(tune_trace_skeleton("annotate C.ko auto_unroll_max_step 64\n"),
		tune_trace_skeleton("annotate C.ko auto_unroll_max_step 512\n"));
	cr_expect_neq(tune_trace_skeleton("prefetch C.t X 2\n"),
		tune_trace_skeleton("prefetch C.t X2 2\n"));
	tune_novelty nv = { 0 };
	cr_expect_eq(tune_novelty_count(&nv, a), 0);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(tune_novelty_add(&nv, i % 3 ? a : (uint64_t)i + 7), 0);
	cr_expect_eq(tune_novelty_count(&nv, a), 66);
	cr_expect_eq(tune_novelty_count(&nv, 7), 1);
	cr_expect_eq(tune_novelty_count(&nv, 8), 0);
	tune_novelty_clear(&nv);
	cr_expect_eq(nv.n, 0);
}

Test(reservoir, keeps_the_first_items_then_each_with_the_same_chance)
{
	tune_reservoir r = tune_reservoir_make(3, 7);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(tune_reservoir_offer(&r), i);
	for (int i = 0; i < 100; i++) {
		int slot = tune_reservoir_offer(&r);
		cr_expect(slot >= -1 && slot < 3, "slot %d", slot);
	}
	cr_expect_eq(r.seen, 103);
	tune_reservoir none = tune_reservoir_make(0, 7);
	for (int i = 0; i < 10; i++)
		cr_expect_eq(tune_reservoir_offer(&none), -1);
	enum { ITEMS = 20, CAP = 5, DRAWS = 4000 };
	int kept[ITEMS] = { 0 };
	for (uint64_t seed = 1; seed <= DRAWS; seed++) {
		int sample[CAP];
		tune_reservoir d = tune_reservoir_make(CAP, seed);
		for (int i = 0; i < ITEMS; i++) {
			int slot = tune_reservoir_offer(&d);
			if (slot >= 0)
				sample[slot] = i;
		}
		for (int k = 0; k < CAP; k++)
			kept[sample[k]]++;
	}
	for (int i = 0; i < ITEMS; i++)
		cr_expect(fabs(kept[i] / (double)DRAWS - (double)CAP / ITEMS) < 0.03,
			"item %d kept in %d of %d samples", i, kept[i], DRAWS);
}

typedef struct feature_census {
	int n, current;
	int64_t ids[64];
} feature_census;

static int census(const tune_record *r, void *arg)
{
	feature_census *c = arg;
	if (c->n < 64)
		c->ids[c->n] = r->id;
	c->n++;
	c->current += r->nfeatures == TUNE_PROGRAM_FEATURES;
	return 0;
}

typedef struct log_lines {
	char text[4096];
} log_lines;

static void keep_log_line(const char *line, void *arg)
{
	log_lines *l = arg;
	size_t used = strlen(l->text);
	snprintf(l->text + used, sizeof(l->text) - used, "%s\n", line);
}

/* Run a search of "task" in "db" under "o" that must succeed. */
static void search_ok(const tune_task *task, tune_db *db, const tune_search_opts *o)
{
	tune_summary s;
	char err[512];
	cr_assert_eq(tune_search(task, db, o, &s, err, sizeof(err)), 0, "%s", err);
	tune_summary_clear(&s);
}

Test(search, a_sample_of_other_workloads_trains_a_prior)
{
	fixture f, g;
	small_matmul(&f);
	const char *k[] = { "M", "N", "K" }, *v[] = { "32", "32", "32" };
	fixture_init(&g, "matmul", 3, k, v);
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(16, 5);
	search_ok(&f.task, db, &o);
	log_lines l = { "" };
	o = quick_opts(8, 6);
	o.other_rows = 5;
	o.log = keep_log_line;
	o.log_arg = &l;
	search_ok(&g.task, db, &o);
	cr_expect(strstr(l.text, "5 of the 16 records of other workloads in the store "
		"train a prior"), "%s", l.text);
	tune_model saved;
	cr_assert_eq(tune_db_load_model(db, "cpu", &saved), 0);
	cr_expect_eq(saved.n_records, 8 + 5, "the saved model is of the task's 8 records "
		"and the sample's 5, not %lld", (long long)saved.n_records);
	tune_model_clear(&saved);
	l.text[0] = 0;
	o.other_rows = 0;
	search_ok(&g.task, db, &o);
	cr_expect(strstr(l.text, "0 of the 16 records of other workloads in the store "
		"train; the task's records alone do"), "%s", l.text);

	feature_census first = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, census, &first), 0);
	float stale[3] = { 1, 2, 3 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tune_db_set_features(db, first.ids[i], stale, 3), 0, "%s",
			tune_db_error(db));
	l.text[0] = 0;
	o.other_rows = 64;
	search_ok(&g.task, db, &o);
	cr_expect(strstr(l.text, "4 records of other workloads have features of another "
		"version"), "%s", l.text);
	cr_expect(strstr(l.text, "12 of the 12 records of other workloads in the store "
		"train a prior"), "the stale ones are left out: %s", l.text);
	tune_db_close(db);
	fixture_fini(&g);
	fixture_fini(&f);
}

/* The traces of a store, in the order they were recorded. */
typedef struct traces {
	int n;
	char *text[64];
} traces;

static int collect_traces(const tune_record *r, void *arg)
{
	traces *t = arg;
	if (t->n < 64)
		t->text[t->n++] = strdup(r->trace);
	return 0;
}

/* The members of a population are made in forked copies of the tuner,
 * each from its own seed: the first batch (drawn before any model) is
 * the same with one process, three, or one per CPU. */
Test(search, the_population_is_the_same_made_by_any_number_of_processes)
{
	fixture f;
	small_matmul(&f);
	const int jobs[] = { 1, 3, 0 };
	traces t[3] = { { 0 } };
	for (int k = 0; k < 3; k++) {
		char path[160];
		snprintf(path, sizeof(path), "%s/jobs%d.db", f.dir, jobs[k]);
		char err[512];
		tune_db *db = tune_db_open(path, err, sizeof(err));
		cr_assert(db, "%s", err);
		tune_search_opts o = quick_opts(8, 9);
		o.evolve_jobs = jobs[k];
		tune_summary s;
		cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
		tune_summary_clear(&s);
		cr_assert_eq(tune_db_foreach(db, 0, 0, collect_traces, &t[k]), 0);
		tune_db_close(db);
	}
	cr_assert_eq(t[0].n, 8);
	for (int k = 1; k < 3; k++) {
		cr_assert_eq(t[k].n, t[0].n, "evolve_jobs %d", jobs[k]);
		for (int i = 0; i < t[0].n; i++)
			cr_expect_str_eq(t[k].text[i], t[0].text[i], "record %d, evolve_jobs %d", i,
				jobs[k]);
	}
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < t[k].n; i++)
			free(t[k].text[i]);
	fixture_fini(&f);
}

/* A job of the fork_map tests: the square of its input, or, in a copy,
 * for the input -1 the death of that copy and for -2 a copy stuck for
 * good. */
static void square_or_die(int i, const void *in, size_t in_len, void *arg, void **out,
	size_t *len)
{
	(void)i;
	int v;
	cr_assert_eq(in_len, sizeof(v));
	memcpy(&v, in, sizeof(v));
	if (v == -1 && getpid() != *(pid_t *)arg)
		_exit(3);
	while (v == -2 && getpid() != *(pid_t *)arg)
		pause();
	int *r = malloc(sizeof(*r));
	*r = v * v;
	*out = r;
	*len = sizeof(*r);
}

/* Run square_or_die over the "n" ints "v" in "pool" (the parent's pid
 * "parent"), the results into "out" and "len". */
static void map_squares(tune_fork_pool *pool, pid_t *parent, int n, int *v, void **out,
	size_t *len)
{
	const void *in[n];
	size_t in_len[n];
	for (int i = 0; i < n; i++) {
		in[i] = &v[i];
		in_len[i] = sizeof(v[i]);
	}
	tune_fork_map(pool, square_or_die, parent, n, in, in_len, out, len);
}

/* Jobs run in the copies give their results in order; a copy that dies
 * loses its jobs of that call, and its share of later calls runs in the
 * parent. */
Test(fork_map, copies_run_jobs_and_a_dead_copy_is_replaced_by_the_parent)
{
	pid_t parent = getpid();
	tune_fork_pool *pool = tune_fork_pool_new(3, square_or_die, &parent);
	cr_assert(pool);
	enum { N = 10 };
	int v[N];
	size_t len[N];
	void *out[N];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			v[i] = round == 1 && i == 4 ? -1 : i + round;
		map_squares(pool, &parent, N, v, out, len);
		for (int i = 0; i < N; i++) {
			bool lost = round == 1 && i % 3 == 4 % 3;
			if (lost) {
				cr_expect_null(out[i], "round %d, job %d of the dead copy", round, i);
			} else {
				cr_assert(out[i], "round %d, job %d", round, i);
				cr_expect_eq(len[i], sizeof(int));
				cr_expect_eq(*(int *)out[i], v[i] * v[i], "round %d, job %d", round, i);
			}
			free(out[i]);
		}
	}
	tune_fork_pool_free(pool);
	cr_expect_null(tune_fork_pool_new(1, square_or_die, &parent), "one worker: no copies");
}

/* A copy that never answers (one forked while another thread held a
 * lock it then waits on) is ended after the pool's patience, its jobs of
 * that call lost, its share of later calls run in the parent; freeing
 * the pool does not wait for it. */
Test(fork_map, a_stuck_copy_is_ended_after_the_patience)
{
	pid_t parent = getpid();
	tune_fork_pool *pool = tune_fork_pool_new(2, square_or_die, &parent);
	cr_assert(pool);
	tune_fork_pool_set_patience(pool, 1);
	enum { N = 6 };
	int v[N];
	size_t len[N];
	void *out[N];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++)
			v[i] = round == 0 && i == 3 ? -2 : i;
		double t0 = rt_now_s();
		map_squares(pool, &parent, N, v, out, len);
		double took = rt_now_s() - t0;
		if (round == 0)
			cr_expect(took >= 0.9 && took < 30, "waited %.2f s for the stuck copy", took);
		for (int i = 0; i < N; i++) {
			if (round == 0 && i % 2 == 1) {
				cr_expect_null(out[i], "job %d of the stuck copy", i);
			} else {
				cr_assert(out[i], "round %d, job %d", round, i);
				cr_expect_eq(*(int *)out[i], v[i] * v[i]);
			}
			free(out[i]);
		}
	}
	tune_fork_pool_free(pool);
}

Test(search, records_of_another_feature_version_get_this_builds_features)
{
	fixture f;
	small_matmul(&f);
	tune_summary s;
	char err[512];
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(16, 5);
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	tune_summary_clear(&s);
	feature_census before = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, census, &before), 0);
	cr_assert_eq(before.n, 16);
	float stale[3] = { 1, 2, 3 };
	for (int i = 0; i < before.n; i++)
		cr_assert_eq(tune_db_set_features(db, before.ids[i], stale, 3), 0, "%s",
			tune_db_error(db));
	o.trials = 8;
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.known, 16);
	tune_summary_clear(&s);
	feature_census after = { 0 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, census, &after), 0);
	cr_expect_eq(after.n, 24);
	cr_expect_eq(after.current, 24, "the 16 stale records were computed again");
	tune_db_close(db);
	fixture_fini(&f);
}

Test(search, a_tuner_killed_mid_run_leaves_whole_batches)
{
	fixture f;
	small_matmul(&f);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char err[512];
		tune_db *db = tune_db_open(f.db_path, err, sizeof(err));
		tune_search_opts o = quick_opts(100000, 5);
		o.early_stop = 0;
		tune_summary s;
		tune_search(&f.task, db, &o, &s, err, sizeof(err));
		_exit(0);
	}
	double deadline = rt_now_s() + 60;
	int64_t n = 0;
	while (rt_now_s() < deadline && n < 16) {
		usleep(50000);
		if (access(f.db_path, F_OK) == 0)
			n = count_records(&f);
	}
	usleep(100000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_geq(n, 16, "the tuner committed batches before it was killed");
	n = count_records(&f);
	cr_expect_eq(n % 8, 0, "whole batches of 8 only, got %lld", (long long)n);
	tune_db *db = open_db(&f);
	tune_search_opts o = quick_opts(8, 6);
	tune_summary s;
	char err[512];
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(s.known, n);
	cr_expect_eq(tune_db_count(db, 0, 0), n + 8);
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

Test(search, two_tuners_share_one_store)
{
	fixture f;
	small_matmul(&f);
	pid_t pids[2];
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			char err[512];
			tune_db *db = tune_db_open(f.db_path, err, sizeof(err));
			tune_search_opts o = quick_opts(16, 11 + (uint64_t)i);
			tune_summary s;
			int r = db ? tune_search(&f.task, db, &o, &s, err, sizeof(err)) : -1;
			if (r)
				fprintf(stderr, "tuner %d: %s\n", i, err);
			tune_db_close(db);
			_exit(r ? 1 : 0);
		}
	}
	for (int i = 0; i < 2; i++) {
		int status;
		waitpid(pids[i], &status, 0);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tuner %d failed", i);
	}
	int64_t n = count_records(&f);
	cr_expect_geq(n, 16);
	cr_expect_leq(n, 32);
	fixture_fini(&f);
}

Test(search, an_interrupt_ends_the_search_cleanly)
{
	fixture f;
	small_matmul(&f);
	tune_db *db = open_db(&f);
	volatile sig_atomic_t stop = 1;
	tune_search_opts o = quick_opts(16, 1);
	o.stop = &stop;
	tune_summary s;
	char err[512];
	cr_assert_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect(s.interrupted);
	cr_expect_eq(s.trials, 0);
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

/* The interrupt of an_interrupt_records_only_what_was_measured: the
 * search's progress callback notes the first committed batch, and a
 * thread sets "stop" a second later, while the second batch is measured
 * (0.2 s a candidate and pass), unless evolving and building it took
 * longer.  The thread only polls and sleeps: the search forks its copies
 * (tuner/fork_map.c) while it runs, and a thread inside malloc at that
 * moment would leave ASan's allocator locked in the copies, which have
 * no fork handler for it (glibc's malloc has one). */
typedef struct stopper {
	volatile sig_atomic_t first_batch;
	volatile sig_atomic_t *stop;
} stopper;

static void note_first_batch(const tune_progress *p, void *arg)
{
	stopper *st = arg;
	if (p->trials >= 8)
		st->first_batch = 1;
}

static void *stop_after_first_batch(void *arg)
{
	stopper *st = arg;
	for (double deadline = rt_now_s() + 60; !st->first_batch && rt_now_s() < deadline; )
		usleep(5000);
	usleep(1000000);
	*st->stop = 1;
	return NULL;
}

static int count_not_run(const tune_record *r, void *arg)
{
	*(int *)arg += r->error_msg && strstr(r->error_msg, "not run") != NULL;
	return 0;
}

Test(search, an_interrupt_records_only_what_was_measured)
{
	fixture f;
	small_matmul(&f);
	tune_db *db = open_db(&f);
	volatile sig_atomic_t stop = 0;
	tune_search_opts o = quick_opts(100000, 9);
	o.early_stop = 0;
	o.measure.timer.min_total_s = 0.2;
	o.stop = &stop;
	stopper st = { 0, &stop };
	o.progress = note_first_batch;
	o.progress_arg = &st;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, stop_after_first_batch, &st), 0);
	tune_summary s;
	char err[512];
	int r = tune_search(&f.task, db, &o, &s, err, sizeof(err));
	pthread_join(t, NULL);
	cr_assert_eq(r, 0, "%s", err);
	cr_expect(s.interrupted);
	cr_expect_geq(s.trials, 8);
	cr_expect_eq(tune_db_count(db, 0, 0), s.trials,
		"every trial counted is a record, and only those");
	int not_run = 0;
	cr_expect_eq(tune_db_foreach(db, 0, 0, count_not_run, &not_run), 0);
	cr_expect_eq(not_run, 0, "candidates the interrupt kept from running are not recorded");
	cr_expect_eq(s.runoff.entrants, 0, "an interrupted search holds no run-off");
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

Test(search, bad_options_are_refused)
{
	fixture f;
	small_matmul(&f);
	tune_db *db = open_db(&f);
	tune_summary s;
	char err[512];
	tune_search_opts o = quick_opts(0, 1);
	cr_expect_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), -1);
	cr_expect(strstr(err, "trials"), "%s", err);
	tune_summary_clear(&s);
	o = quick_opts(4, 1);
	o.other_rows = -1;
	cr_expect_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), -1);
	cr_expect(strstr(err, "other_rows"), "%s", err);
	tune_summary_clear(&s);
	o = quick_opts(4, 1);
	o.measure.timeout_s = -1;
	cr_expect_eq(tune_search(&f.task, db, &o, &s, err, sizeof(err)), -1);
	cr_expect(strstr(err, "timeout"), "%s", err);
	tune_summary_clear(&s);
	tune_db_close(db);
	fixture_fini(&f);
}

Test(search, unknown_targets_are_refused)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *k[] = { "M", "N", "K" }, *v[] = { "4", "4", "4" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, k, v);
	tune_task t;
	char err[512];
	cr_expect_eq(tune_task_init(&t, ctx, op, "tpu", err, sizeof(err)), -1);
	cr_expect(strstr(err, "unknown target"), "%s", err);
	cr_expect_eq(tune_task_init(&t, ctx, op, "cpu -cores=banana", err, sizeof(err)), -1);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

Test(control, scales_labels_and_hands_over_to_a_faster_best)
{
	fixture f;
	small_matmul(&f);
	const char *split = "split C.i 8 -> C.io C.ii\n";
	tune_control c = { 0 };
	tune_result r = { .error = TUNE_OK, .median_s = 3e-3, .min_s = 2e-3 };
	cr_expect(isnan(tune_control_scale(&c, &r)), "no control, no scale");
	cr_assert_eq(tune_control_set(&c, &f.task, "", 1e-3), 0, "the bare op lowers");
	cr_assert(c.prog && c.trace);
	cr_expect_float_eq(tune_control_scale(&c, &r), 2.0, 1e-12, "the fastest visit");
	r.min_s = NAN;
	cr_expect_float_eq(tune_control_scale(&c, &r), 3.0, 1e-12, "the median when no fastest");
	r.not_run = true;
	cr_expect(isnan(tune_control_scale(&c, &r)));
	r = (tune_result){ .error = TUNE_ERR_TIMEOUT, .median_s = NAN, .min_s = NAN };
	cr_expect(isnan(tune_control_scale(&c, &r)));

	cr_expect_eq(tune_label_seconds(true, 3e-3, 2e-3, 2.0), 1e-3);
	cr_expect_eq(tune_label_seconds(true, 3e-3, 2e-3, NAN), 2e-3);
	cr_expect_eq(tune_label_seconds(true, 3e-3, NAN, 0), 3e-3);
	cr_expect(isinf(tune_label_seconds(false, 3e-3, 2e-3, 2.0)));

	cr_expect_not(tune_control_follow(&c, &f.task, split, 0.9e-3),
		"a best within TUNE_CONTROL_FOLLOW keeps the control");
	cr_expect_null(c.next_trace);
	cr_expect_not(tune_control_follow(&c, &f.task, "", 0.5e-3), "the control itself");
	cr_expect_not(tune_control_follow(&c, &f.task, "no such primitive", 0.5e-3));
	cr_expect(tune_control_follow(&c, &f.task, split, 0.5e-3));
	cr_assert(c.next_prog && c.next_trace);
	cr_expect_eq(c.ref_s, 1e-3, "the control stays until the hand-over");
	tune_result failed = { .error = TUNE_ERR_CRASH, .median_s = NAN };
	cr_expect_not(tune_control_hand_over(&c, &failed, 2.0));
	cr_expect_not_null(c.next_trace, "a failed next control is tried again");
	tune_result next = { .error = TUNE_OK, .median_s = 1.2e-3, .min_s = 1.1e-3 };
	cr_expect_not(tune_control_hand_over(&c, &next, NAN), "no scale, no reference");
	cr_expect_eq(c.next_nrefs, 0);
	cr_assert_eq(TUNE_CONTROL_HANDOVER, 3);
	cr_expect_not(tune_control_hand_over(&c, &next, 2.0), "one batch of three");
	tune_result off = { .error = TUNE_OK, .median_s = 2.5e-3, .min_s = 2.4e-3 };
	cr_expect_not(tune_control_hand_over(&c, &off, 2.0), "a batch far off");
	cr_expect_eq(c.ref_s, 1e-3, "the control stays until the last of them");
	cr_expect(tune_control_hand_over(&c, &next, 2.2));
	cr_expect_float_eq(c.ref_s, 0.55e-3, 1e-15,
		"the median of its fastest visits in the batches' units: 0.55, 1.2, 0.5");
	cr_expect_str_eq(c.trace, split);
	cr_expect_null(c.next_trace);
	cr_expect(tune_control_follow(&c, &f.task, "", 0.2e-3));
	cr_expect_eq(c.next_nrefs, 0, "a new next control starts counting again");
	cr_expect_not(tune_control_hand_over(&c, &next, 1.0));
	cr_expect_not(tune_control_follow(&c, &f.task, "split C.j 4 -> C.jo C.ji\n",
		0.19e-3), "a next control measured once stays for a best a little faster");
	cr_expect(tune_control_follow(&c, &f.task, "split C.j 4 -> C.jo C.ji\n", 0.1e-3),
		"a much faster best replaces it");
	cr_expect_eq(c.next_nrefs, 0, "and its batches");
	tune_control_clear(&c);
	cr_assert_eq(tune_control_set(&c, &f.task, split, 0.55e-3), 0);
	cr_expect_neq(tune_control_set(&c, &f.task, "no such primitive", 1e-3), 0);
	cr_expect_neq(tune_control_set(&c, &f.task, "", 0), 0);
	cr_expect_float_eq(c.ref_s, 0.55e-3, 1e-15, "a refused control leaves the old one");
	tune_control_clear(&c);
	cr_expect_null(c.prog);

	cr_expect(tune_control_follow(&c, &f.task, "", 1e-3), "the first control");
	cr_expect(tune_control_hand_over(&c, &next, NAN),
		"without a control the batch defines the units");
	cr_expect_eq(c.ref_s, 1.1e-3);
	tune_control_clear(&c);
	fixture_fini(&f);
}

Test(control, a_batch_far_from_the_usual_scale_is_unusual)
{
	tune_control c = { 0 };
	cr_expect(isnan(tune_control_usual(&c)));
	tune_control_note(&c, 1.0);
	tune_control_note(&c, NAN);
	tune_control_note(&c, 1.1);
	cr_expect(isnan(tune_control_usual(&c)), "two scales are too few");
	cr_expect_not(tune_control_unusual(&c, 3.0), "nothing is unusual yet");
	tune_control_note(&c, 0.9);
	cr_expect_float_eq(tune_control_usual(&c), 1.0, 1e-12);
	cr_expect_not(tune_control_unusual(&c, 1.2));
	cr_expect(tune_control_unusual(&c, 1.3));
	cr_expect_not(tune_control_unusual(&c, 0.5), "a faster machine is scaled, not retried");
	cr_expect_not(tune_control_unusual(&c, NAN));
	for (int i = 0; i < TUNE_CONTROL_HISTORY; i++)
		tune_control_note(&c, 2.0);
	cr_expect_eq(tune_control_usual(&c), 2.0, "the oldest scales are forgotten");
	cr_expect(tune_control_unusual(&c, 2.6));

	tune_result quiet = { .error = TUNE_OK, .median_s = 1.05e-3, .min_s = 1e-3 };
	tune_result spread = { .error = TUNE_OK, .median_s = 1.3e-3, .min_s = 1e-3 };
	cr_expect_not(tune_control_disturbed(&c, &quiet, 2.0));
	cr_expect(tune_control_disturbed(&c, &quiet, 2.6), "a slow batch");
	cr_expect(tune_control_disturbed(&c, &spread, 2.0),
		"visits far above the fastest: a disturbed moment");
	spread.error = TUNE_ERR_TIMEOUT;
	cr_expect_not(tune_control_disturbed(&c, &spread, NAN));
}
