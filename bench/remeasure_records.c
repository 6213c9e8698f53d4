/* How repeatable the tuner's labels are: a sample of one workload's
 * stored records, measured again twice by one measurer in one process,
 * the way the tuner measures (tuner/measure.h: a fresh worker per
 * candidate, the same seeded inputs), the second pass in reverse order so
 * that a drift of the machine does not look like agreement.  It prints
 * how often two measurements order a pair of programs the same way:
 * stored against each pass, and the two passes against each other (by
 * their medians, then by their fastest repeats), and the stored fastest
 * repeats against each pass's, as stored and over their batch's scale
 * (the labels the cost model learns, tuner/control.h).  No
 * cost model can order the stored times better than the measurements
 * order each other, so the agreement of the two passes is the ceiling of
 * the model's pairwise accuracy on those records (docs/cost-model.md,
 * "How much of the gap is noise").
 *
 *   remeasure_records --db PATH --workload ID [--from K] [--sample N]
 *                     [--seed S] [--min-time S] [--passes P] [--dump PATH]
 *
 * The sample is N (40) "ok" records drawn at random from the workload's
 * records after its first K (0), in the order they were stored.  Each
 * measurement is the tuner's with P passes (TUNE_DEFAULT_PASSES): on the
 * CPU, each record alone in a worker, then the whole sample timed
 * together in one worker, in turns (tuner/round_robin.h); --passes 1
 * shows what one worker per record gives.  --dump
 * writes one line per record: its id, the stored median, the medians of
 * the two passes, the stored label (fastest visit over the batch's scale)
 * and the fastest visits of the two passes, in seconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "schedule/state.h"
#include "schedule/trace.h"
#include "tuner/control.h"
#include "tuner/db.h"
#include "tuner/measure.h"
#include "tuner/task.h"

typedef struct options {
	const char *path;
	const char *dump;
	int64_t workload;
	int from, sample, passes;
	uint64_t seed;
	double min_time;
} options;

/* One stored record: its trace, id and stored times. */
typedef struct item {
	char *trace;
	int64_t id;
	double median_s;     /* stored median */
	double fastest_s;    /* stored fastest repeat (the median if none) */
	double label_s;      /* the fastest over the batch's scale, as the
	                      * cost model learns it (tuner/control.h) */
} item;

/* The records of the workload after the first "from", "ok" only. */
typedef struct sample {
	int seen, n, cap;
	int from;
	item *items;
} sample;

static int collect(const tune_record *r, void *arg)
{
	sample *s = arg;
	if (s->seen++ < s->from || strcmp(r->error_class, "ok") != 0)
		return 0;
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 256;
		item *more = realloc(s->items, (size_t)cap * sizeof(item));
		if (!more)
			return -1;
		s->items = more;
		s->cap = cap;
	}
	item *it = &s->items[s->n];
	if (!(it->trace = strdup(r->trace)))
		return -1;
	it->id = r->id;
	it->median_s = r->cost_median_s;
	it->fastest_s = tune_label_seconds(true, r->cost_median_s, r->cost_min_s, NAN);
	it->label_s = tune_label_seconds(true, r->cost_median_s, r->cost_min_s,
		r->cost_scale);
	s->n++;
	return 0;
}

/* Keep "want" of the records of "s" drawn at random from "seed"
 * (Fisher-Yates on the front of the arrays). */
static void draw(sample *s, int want, uint64_t seed)
{
	for (int i = 0; i < s->n && i < want; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int j = i + (int)((seed >> 33) % (uint64_t)(s->n - i));
		item t = s->items[i];
		s->items[i] = s->items[j];
		s->items[j] = t;
	}
	for (int i = want; i < s->n; i++)
		free(s->items[i].trace);
	if (s->n > want)
		s->n = want;
}

/* Return the bound op of workload "id" in "db" parsed into "ctx", or
 * NULL. */
static tessel_op *workload_op(tune_db *db, tessel_ctx *ctx, int64_t id)
{
	sqlite3_stmt *st = NULL;
	tessel_op *op = NULL;
	if (sqlite3_prepare_v2(tune_db_sqlite(db), "SELECT op_text FROM workloads WHERE id = ?1",
		    -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		tessel_module *m = tessel_parse(ctx, "workload", text, strlen(text));
		tessel_op *found = m ? tessel_module_find(ctx, m, NULL) : NULL;
		if (found)
			op = tessel_op_is_bound(found) ? tessel_op_retain(found)
				: tessel_op_bind(found, 0, NULL, NULL);
		tessel_module_free(m);
	}
	sqlite3_finalize(st);
	return op;
}

/* Return the fraction of the pairs among "n" programs, both measured in
 * "a" and in "b" and apart by more than "margin" in "a", that "b"
 * orders as "a" does (NAN: a failed measurement). */
static double agreement(const double *a, const double *b, int n, double margin)
{
	long same = 0, pairs = 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			if (!isfinite(a[i] + a[j] + b[i] + b[j]) || a[i] == a[j])
				continue;
			double lo = fmin(a[i], a[j]), hi = fmax(a[i], a[j]);
			if (hi <= lo * margin)
				continue;
			pairs++;
			same += (a[i] < a[j]) == (b[i] < b[j]);
		}
	return pairs ? (double)same / (double)pairs : NAN;
}

static int compare_doubles(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* Print the 10th, 50th and 90th percentiles of "b"[i] / "a"[i]. */
static void print_ratios(const char *what, const double *a, const double *b, int n)
{
	double r[n > 0 ? n : 1];
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(a[i]) && isfinite(b[i]) && a[i] > 0)
			r[k++] = b[i] / a[i];
	if (k == 0)
		return;
	qsort(r, (size_t)k, sizeof(double), compare_doubles);
	printf("  %-22s ratio p10 %.3f, median %.3f, p90 %.3f\n", what, r[k / 10], r[k / 2],
		r[(9 * k) / 10]);
}

static void print_pair(const char *what, const double *a, const double *b, int n)
{
	printf("  %-22s %.3f of pairs, %.3f beyond 3%%, %.3f beyond 10%%\n", what,
		agreement(a, b, n, 1.0), agreement(a, b, n, 1.03), agreement(a, b, n, 1.10));
}

static int parse_args(int argc, char **argv, options *o)
{
	*o = (options){ .sample = 40, .seed = 1, .min_time = 0.05,
		.passes = TUNE_DEFAULT_PASSES };
	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return -1;
		if (strcmp(argv[i], "--db") == 0)
			o->path = v;
		else if (strcmp(argv[i], "--workload") == 0)
			o->workload = atoll(v);
		else if (strcmp(argv[i], "--from") == 0)
			o->from = atoi(v);
		else if (strcmp(argv[i], "--sample") == 0)
			o->sample = atoi(v);
		else if (strcmp(argv[i], "--seed") == 0)
			o->seed = strtoull(v, NULL, 10);
		else if (strcmp(argv[i], "--min-time") == 0)
			o->min_time = atof(v);
		else if (strcmp(argv[i], "--passes") == 0)
			o->passes = atoi(v);
		else if (strcmp(argv[i], "--dump") == 0)
			o->dump = v;
		else
			return -1;
	}
	return o->path && o->workload > 0 && o->from >= 0 && o->sample >= 2 && o->passes >= 1 &&
		o->min_time >= 0 ? 0 : -1;
}

/* Measure "progs" in the order "order" into "out"[i] (the median) and
 * "fastest"[i] for progs[i]. */
static int measure(tune_measurer *m, loop_prog **progs, const int *order, int n,
	double *out, double *fastest, int *disturbed)
{
	loop_prog **in_order = calloc((size_t)n, sizeof(*in_order));
	tune_result *res = calloc((size_t)n, sizeof(*res));
	int r = in_order && res ? 0 : -1;
	for (int i = 0; r == 0 && i < n; i++) {
		in_order[i] = progs[order[i]];
		res[i] = (tune_result){ .error = TUNE_ERR_RUNTIME };
	}
	if (r == 0 && tune_measure_batch(m, in_order, n, res, NULL)) {
		fprintf(stderr, "remeasure_records: %s\n", res[0].msg);
		r = -1;
	}
	for (int i = 0; r == 0 && i < n; i++) {
		out[order[i]] = res[i].error == TUNE_OK ? res[i].median_s : NAN;
		fastest[order[i]] = res[i].error == TUNE_OK ? res[i].min_s : NAN;
		*disturbed += tune_result_disturbed(&res[i]);
	}
	free(in_order);
	free(res);
	return r;
}

/* Write the "n" records' ids and times to the file "path"; return 0, or
 * -1 with a message on stderr. */
static int dump(const char *path, const int64_t *ids, const double *stored,
	const double *first, const double *second, const double *label,
	const double *first_min, const double *second_min, int n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "# id stored_s first_s second_s label_s first_min_s second_min_s\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "%lld %.9g %.9g %.9g %.9g %.9g %.9g\n", (long long)ids[i], stored[i],
			first[i], second[i], label[i], first_min[i], second_min[i]);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	options o;
	if (parse_args(argc, argv, &o)) {
		fprintf(stderr, "usage: remeasure_records --db PATH --workload ID [--from K] "
			"[--sample N] [--seed S] [--min-time S] [--passes P] [--dump PATH]\n");
		return 1;
	}
	char err[1024];
	tune_db *db = tune_db_open(o.path, err, sizeof(err));
	tessel_ctx *ctx = tessel_ctx_new();
	if (!db || !ctx) {
		fprintf(stderr, "remeasure_records: %s\n", db ? "out of memory" : err);
		return 1;
	}
	tessel_op *op = workload_op(db, ctx, o.workload);
	sample s = { .from = o.from };
	if (!op || tune_db_foreach(db, o.workload, 0, collect, &s)) {
		fprintf(stderr, "remeasure_records: no workload %lld in %s\n",
			(long long)o.workload, o.path);
		return 1;
	}
	draw(&s, o.sample, o.seed);
	tune_task task;
	if (tune_task_init(&task, ctx, op, NULL, err, sizeof(err))) {
		fprintf(stderr, "remeasure_records: %s\n", err);
		return 1;
	}
	tune_measure_opts mo = tune_measure_opts_default();
	mo.timer.min_total_s = o.min_time;
	mo.passes = o.passes;
	tune_measurer *m = tune_measurer_new(&task, &mo, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "remeasure_records: %s\n", err);
		return 1;
	}
	int n = 0;
	loop_prog *progs[s.n > 0 ? s.n : 1];
	double stored[s.n > 0 ? s.n : 1], first[s.n > 0 ? s.n : 1], second[s.n > 0 ? s.n : 1];
	double first_min[s.n > 0 ? s.n : 1], second_min[s.n > 0 ? s.n : 1];
	double fastest[s.n > 0 ? s.n : 1], label[s.n > 0 ? s.n : 1];
	int64_t ids[s.n > 0 ? s.n : 1];
	for (int i = 0; i < s.n; i++)
		if ((progs[n] = sch_trace_program(ctx, op, "record", s.items[i].trace))) {
			ids[n] = s.items[i].id;
			fastest[n] = s.items[i].fastest_s;
			label[n] = s.items[i].label_s;
			stored[n++] = s.items[i].median_s;
		}
	int forward[n > 0 ? n : 1], backward[n > 0 ? n : 1], disturbed = 0;
	for (int i = 0; i < n; i++)
		forward[i] = i, backward[i] = n - 1 - i;
	if (measure(m, progs, forward, n, first, first_min, &disturbed) ||
	    measure(m, progs, backward, n, second, second_min, &disturbed))
		return 1;
	printf("workload %lld of %s: %d records after the first %d measured twice "
	       "(%d of %d stored records replayed; %d measurements disturbed)\n",
		(long long)o.workload, o.path, n, o.from, n, s.n, disturbed);
	printf("order agreement (ceiling of a model's pairwise accuracy):\n");
	print_pair("stored vs first pass", stored, first, n);
	print_pair("stored vs second pass", stored, second, n);
	print_pair("first vs second pass", first, second, n);
	print_pair("  their fastest repeats", first_min, second_min, n);
	print_pair("stored fastest vs first pass's", fastest, first_min, n);
	print_pair("  over the batch's scale", label, first_min, n);
	print_pair("stored fastest vs second pass's", fastest, second_min, n);
	print_pair("  over the batch's scale", label, second_min, n);
	printf("time ratios:\n");
	print_ratios("first / stored", stored, first, n);
	print_ratios("second / first", first, second, n);
	if (o.dump && dump(o.dump, ids, stored, first, second, label, first_min,
				  second_min, n))
		return 1;
	for (int i = 0; i < n; i++)
		loop_prog_free(progs[i]);
	for (int i = 0; i < s.n; i++)
		free(s.items[i].trace);
	free(s.items);
	tune_measurer_free(m);
	tune_task_clear(&task);
	tessel_op_release(op);
	tune_db_close(db);
	tessel_ctx_free(ctx);
	return 0;
}
