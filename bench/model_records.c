/* The cost model on the tuner's own records: how well the model the
 * search uses (tuner/model.h) orders, within one task, candidates it was
 * not trained on.  docs/cost-model.md ("Measuring the model") gives the
 * protocol and the numbers.
 *
 *   model_records --db PATH [--train N] [--workload ID] [--shuffle SEED]
 *                 [--others none|past|all] [--others-cap K] [--prior]
 *                 [--margin M]
 *                 [--recompute]
 *                 [--pooled] [--store] [--objective rank|reg]
 *                 [--rounds R] [--depth D] [--eta E] [--min-child-weight W]
 *                 [--subsample F] [--colsample F] [--pairs P]
 *                 [--seed S] [--next B] [--dump PATH] [--time median|min]
 *                 [--raw] [--picks WORD] [--bags K] [--bag-fraction F]
 *                 [--structures] [--code]
 *
 * Per workload of the store with more than N (500) records: train on its
 * first N records in the order they were measured (--shuffle SEED: N
 * drawn at random instead), test on the rest of that workload.  With
 * --others past the training set also holds every record of other
 * workloads measured before the workload's N-th (what the tuner had at
 * that point); with --others all, every record of other workloads.  Of
 * those, a uniform sample of at most K (--others-cap, by default
 * TUNE_OTHER_ROWS) trains, drawn as the tuner draws it (tuner/
 * reservoir.h, in record order, seeded with --seed).  With --prior the
 * sample trains a model of its own, and the workload's records train
 * over it (tuner/model.h, tune_cost_model_set_prior), as the tuner
 * does; without, one model trains on both.  The
 * score is the pairwise ranking accuracy over held-out pairs of the same
 * workload, once over every pair whose times differ and once over the
 * pairs whose times differ by more than the factor M (default 1.03: 3%,
 * above the noise of a measurement).  Failed records count with
 * throughput 0, as in training.
 *
 * --pooled is the earlier protocol: the first N records of the store,
 * whatever their workload, train, and all the later ones are scored
 * (pairs still within a workload): mostly a measure of transfer to
 * workloads never seen.  Records stored by another feature version
 * (tuner/record_features.h) have their trace replayed on their workload's
 * op and this build's features computed; --recompute does so for every
 * record, and --store writes them into the store (which must then be a
 * copy one may change).  --dump PATH writes one line per held-out record
 * (workload, record id, seconds, model score) for a look at which pairs
 * the model orders wrongly.
 *
 * --code trains and scores on the program features followed by the
 * code features (tuner/code_features.h), as the search's code model
 * does; records stored without them have them computed (their trace
 * replayed, compiled through the kernel cache, disassembled).  It does
 * not combine with --others.
 *
 * --next B scores what the search sees, which retrains the model after
 * every measured batch: each workload's records after its first N are
 * cut in batches of B in time order, and each batch is scored by a model
 * trained on every record of the workload before it (and with --others
 * on the sample of other workloads' records); the pairs of all batches
 * of a workload are pooled (pairs across batches are not counted).
 *
 * A record's time, for training and scoring alike, is its fastest repeat
 * (cost_min_s; on the CPU since 2026-11-25 its fastest visit of the batch
 * timed together) over its batch's scale where the record has one (the
 * control's drift, tuner/control.h), as the tuner trains its model
 * (tune_label_seconds); --time median takes its median instead, the
 * protocol before 2026-11-25, and --raw leaves out the scale, as every
 * number before 2026-11-26 did.
 *
 * --picks WORD scores only the held-out records the search measured for
 * that reason (records.pick, tuner/search.h: model, novel, random,
 * all, default); training is unchanged.  "model" gives the records the
 * model chose itself, "novel" the exploration picks of the structures
 * measured least, "random" those drawn at random (before a model, and
 * the exploration picks of stores tuned before the twentieth session;
 * docs/cost-model.md, "The later records are the model's own picks");
 * records of stores before schema version 3 have no pick and are never
 * scored with it.
 *
 * --bags K scores with the mean of K models instead of one, each trained
 * on its own random draw of --bag-fraction (0.7) of the training rows,
 * without replacement, and its own seed: a bagged ensemble, the way some
 * tuners estimate the model's uncertainty (docs/cost-model.md, "Tried
 * and not adopted").
 *
 * --structures splits each workload's held-out pairs (time or random
 * split) in two: pairs of records of one schedule structure (the trace
 * without its numbers, tuner/novelty.h), which differ only in split
 * factors, unroll limits and the like, and pairs of two structures, and
 * gives the accuracy of each (docs/cost-model.md, "Where the later
 * records fail"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tuner/code_features.h"
#include "tuner/control.h"
#include "tuner/db.h"
#include "tuner/features.h"
#include "tuner/model.h"
#include "tuner/novelty.h"
#include "tuner/record_features.h"
#include "tuner/reservoir.h"
#include "tuner/search.h"

#define MAX_WORKLOADS 256

typedef struct rows {
	int width;              /* features a row (--code: with the code's) */
	int n, cap;
	float *x;
	double *seconds;
	uint32_t *task;
	int64_t *ids;           /* the record of each row */
	bool *picked;           /* its pick is the one --picks asks for */
	uint64_t *structure;    /* its trace's skeleton (tuner/novelty.h; 0
	                         * without --structures) */
} rows;

/* The op and target of each workload, for --recompute. */
typedef struct workload_op {
	tessel_op *op;
	bool tried;
} workload_op;

typedef struct options {
	const char *path;
	int ntrain;
	int64_t only_workload;
	uint64_t shuffle_seed;
	int others;             /* 0 none, 1 past, 2 all */
	int others_cap;         /* a sample of at most this many of them */
	bool prior;             /* --prior: they train a prior, the workload's
	                         * records a model over it */
	double margin;
	const char *label;
	const char *dump;
	bool fastest;           /* --time min */
	int next;               /* --next B: batches of B, each after all before */
	bool recompute, pooled, store;
	bool code;              /* --code: the features of the compiled code
	                         * too, as the tuner's code model has them */
	bool raw;               /* --raw: times as measured, not over their
	                         * batch's scale */
	const char *picks;      /* --picks: score only records of this pick */
	int bags;               /* --bags K: the mean of K models */
	bool structures;        /* --structures: pairs of one structure apart */
	double bag_fraction;    /* of the training rows each of them sees */
	tune_cost_model_opts model;
} options;

typedef struct reader {
	rows *t;
	tune_db *db;
	tessel_ctx *ctx;
	rt_cpu_target cpu;
	bool recompute;
	bool fastest;           /* the fastest repeat as the time */
	bool raw;               /* ignore the batches' scales */
	const char *picks;      /* the pick scored (NULL: every record) */
	bool structures;        /* hash each record's trace skeleton */
	int64_t only_workload;  /* read only its records (0: all) */
	int recomputed;
	int code_recomputed;    /* code features computed (--code) */
	char disasm[4096];      /* for them */
	workload_op ops[MAX_WORKLOADS];
	int unusable;
} reader;

static int rows_grow(rows *t)
{
	if (t->n < t->cap)
		return 0;
	t->cap = t->cap ? 2 * t->cap : 1024;
	t->x = realloc(t->x, (size_t)t->cap * t->width * sizeof(float));
	t->seconds = realloc(t->seconds, (size_t)t->cap * sizeof(double));
	t->task = realloc(t->task, (size_t)t->cap * sizeof(uint32_t));
	t->ids = realloc(t->ids, (size_t)t->cap * sizeof(int64_t));
	t->picked = realloc(t->picked, (size_t)t->cap * sizeof(bool));
	t->structure = realloc(t->structure, (size_t)t->cap * sizeof(uint64_t));
	return t->x && t->seconds && t->task && t->ids && t->picked && t->structure ? 0 : -1;
}

/* Return the op of workload "id" parsed from the store (NULL when it does
 * not parse). */
static tessel_op *workload_op_of(reader *rd, int64_t id)
{
	workload_op *w = &rd->ops[id];
	if (w->tried)
		return w->op;
	w->tried = true;
	sqlite3_stmt *st = NULL;
	sqlite3 *sql = tune_db_sqlite(rd->db);
	if (sqlite3_prepare_v2(sql, "SELECT op_text FROM workloads WHERE id = ?1", -1, &st,
		    NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		tessel_module *m = tessel_parse(rd->ctx, "workload", text, strlen(text));
		tessel_op *op = m ? tessel_module_find(rd->ctx, m, NULL) : NULL;
		if (op && tessel_op_is_bound(op))
			w->op = tessel_op_retain(op);
		else if (op)
			w->op = tessel_op_bind(op, 0, NULL, NULL);
		tessel_module_free(m);
	}
	sqlite3_finalize(st);
	return w->op;
}

/* Compute the features of this build for record "r" into "out".  Return
 * 0 or -1. */
static int recompute(reader *rd, const tune_record *r, float *out)
{
	if (r->workload_id < 1 || r->workload_id >= MAX_WORKLOADS)
		return -1;
	tessel_op *op = workload_op_of(rd, r->workload_id);
	return op ? tune_trace_features(rd->ctx, op, r->trace, &rd->cpu, out) : -1;
}

/* Compute the code features of record "r" into "out" (compiling it
 * through the kernel cache); 0 or -1. */
static int recompute_code(reader *rd, const tune_record *r, float *out)
{
	if (r->workload_id < 1 || r->workload_id >= MAX_WORKLOADS || !rd->disasm[0])
		return -1;
	tessel_op *op = workload_op_of(rd, r->workload_id);
	return op ? tune_trace_code_features(rd->ctx, op, r->trace, &rd->cpu, rd->disasm,
		out) : -1;
}

static int collect(const tune_record *r, void *arg)
{
	reader *rd = arg;
	rows *t = rd->t;
	if (rd->only_workload && r->workload_id != rd->only_workload)
		return 0;
	if (rows_grow(t))
		return -1;
	float *x = t->x + (size_t)t->n * t->width;
	bool current = r->nfeatures == TUNE_PROGRAM_FEATURES ||
		       r->nfeatures == TUNE_RECORD_FEATURES;
	if (!rd->recompute && current)
		memcpy(x, r->features, TUNE_PROGRAM_FEATURES * sizeof(float));
	else if (recompute(rd, r, x)) {
		rd->unusable++;
		return 0;
	} else {
		rd->recomputed++;
	}
	if (t->width == TUNE_RECORD_FEATURES) {
		if (!rd->recompute && r->nfeatures == TUNE_RECORD_FEATURES)
			memcpy(x + TUNE_PROGRAM_FEATURES, r->features + TUNE_PROGRAM_FEATURES,
				TUNE_CODE_FEATURES * sizeof(float));
		else if (recompute_code(rd, r, x + TUNE_PROGRAM_FEATURES)) {
			rd->unusable++;
			return 0;
		} else {
			rd->code_recomputed++;
		}
	}
	t->ids[t->n] = r->id;
	bool ok = strcmp(r->error_class, "ok") == 0;
	t->seconds[t->n] = tune_label_seconds(ok, r->cost_median_s,
		rd->fastest ? r->cost_min_s : NAN, rd->raw ? NAN : r->cost_scale);
	t->task[t->n] = (uint32_t)r->workload_id;
	t->picked[t->n] = !rd->picks || (r->pick && strcmp(r->pick, rd->picks) == 0);
	t->structure[t->n] = rd->structures ? tune_trace_skeleton(r->trace) : 0;
	t->n++;
	return 0;
}

/* Read the target of the store's records into "cpu" (the first CPU
 * one); a store of GPU records has none, and its features were made
 * for the host, as the tuner's GPU tasks make them. */
static int store_target(tune_db *db, rt_cpu_target *cpu)
{
	sqlite3_stmt *st = NULL;
	char err[256];
	int rc = -1;
	if (sqlite3_prepare_v2(tune_db_sqlite(db), "SELECT description FROM targets "
		    "WHERE kind = 'cpu' ORDER BY id LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		rc = rt_cpu_target_parse((const char *)sqlite3_column_text(st, 0), cpu, err,
			sizeof(err));
	sqlite3_finalize(st);
	return rc;
}

/* Store the features of every row of "t" (record "ids"[i]) in "db", so
 * that later runs read them instead of computing them again. */
static int store_features(tune_db *db, const rows *t, const int64_t *ids)
{
	int r = tune_db_begin(db);
	for (int i = 0; r == 0 && i < t->n; i++)
		r = tune_db_set_features(db, ids[i], t->x + (size_t)i * t->width, t->width);
	if (r == 0)
		return tune_db_commit(db);
	tune_db_rollback(db);
	return -1;
}

/* Draw a random order of "idx"[0..n) from "seed". */
static void shuffle(int *idx, int n, uint64_t seed)
{
	for (int i = n - 1; i > 0; i--) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int j = (int)((seed >> 33) % (uint64_t)(i + 1));
		int k = idx[i];
		idx[i] = idx[j];
		idx[j] = k;
	}
}

/* One train/test split of the rows of "t": row indices. */
typedef struct split {
	int *train, *test;
	int ntrain, ntest;
} split;

/* The score of one split; with --structures also over the pairs of one
 * structure and over those of two (-1 where there is no such pair). */
typedef struct score {
	double all, beyond;
	double same_all, same_beyond, other_all, other_beyond;
	double same_pairs, other_pairs;
} score;

static int compare_floats(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Turn the normalized throughputs "y" of "n" rows of tasks "task" into
 * the labels "label" names: "log" log2 of it (failed: -10), "rank" the
 * fraction of the task's rows it beats, "grade" that fraction in 16
 * integer grades (rank:ndcg's relevance). */
static void relabel(float *y, const uint32_t *task, int n, const char *label)
{
	if (strcmp(label, "throughput") == 0)
		return;
	float *v = malloc((size_t)n * sizeof(float)), *out = malloc((size_t)n * sizeof(float));
	for (int i = 0; i < n; i++) {
		int m = 0;
		for (int j = 0; j < n; j++)
			if (task[j] == task[i])
				v[m++] = y[j];
		qsort(v, (size_t)m, sizeof(float), compare_floats);
		int below = 0;
		while (below < m && v[below] < y[i])
			below++;
		double frac = m > 1 ? (double)below / (m - 1) : 1;
		if (strcmp(label, "log") == 0)
			out[i] = y[i] > 0 ? log2f(y[i]) : -10;
		else if (strcmp(label, "rank") == 0)
			out[i] = (float)frac;
		else
			out[i] = (float)floor(frac * 15.999);
	}
	memcpy(y, out, (size_t)n * sizeof(float));
	free(v);
	free(out);
}

/* Append a line per held-out row of "s" (its "seconds" and score "pred")
 * to the file "path" (none when NULL). */
static void dump_scores(const rows *t, const split *s, const double *seconds,
	const float *pred, const char *path)
{
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	for (int i = 0; i < s->ntest; i++) {
		int r = s->test[i];
		fprintf(f, "%u\t%lld\t%.9g\t%.9g\n", t->task[r], (long long)t->ids[r],
			seconds[i], (double)pred[i]);
	}
	fclose(f);
}

/* Copy the features, times and tasks of the rows "idx"[0..n) of "t" into
 * "x", "sec" and "task", and their normalized throughputs into "y".
 * Return 0 or -1. */
static int gather(const rows *t, const int *idx, int n, float *x, double *sec,
	uint32_t *task, float *y)
{
	for (int i = 0; i < n; i++) {
		int r = idx[i];
		memcpy(x + (size_t)i * t->width, t->x + (size_t)r * t->width,
			(size_t)t->width * sizeof(float));
		sec[i] = t->seconds[r];
		task[i] = t->task[r];
	}
	return tune_normalize_throughput(sec, task, n, y);
}

/* Return a model with "o" (its seed "seed") over "prior" (NULL: none)
 * trained on the rows "idx"[0..n) of "t", or NULL (the reason in
 * "err"). */
static tune_cost_model *train_rows(const rows *t, const int *idx, int n,
	const options *o, uint64_t seed, tune_cost_model *prior, char *err, size_t errlen)
{
	float *x = malloc((size_t)n * t->width * sizeof(float));
	float *y = malloc((size_t)n * sizeof(float));
	double *sec = malloc((size_t)n * sizeof(double));
	uint32_t *task = malloc((size_t)n * sizeof(uint32_t));
	tune_cost_model_opts mo = o->model;
	mo.seed = seed;
	tune_cost_model *m = NULL;
	int rc = x && y && sec && task ? 0 : -1;
	if (rc == 0)
		rc = gather(t, idx, n, x, sec, task, y);
	if (rc == 0) {
		relabel(y, task, n, o->label);
		m = tune_cost_model_new(t->width, &mo, err, errlen);
		rc = m ? tune_cost_model_set_prior(m, prior, err, errlen) : -1;
	}
	if (rc == 0)
		rc = tune_cost_model_train(m, x, t->width, y, task, n, err, errlen);
	free(x);
	free(y);
	free(sec);
	free(task);
	if (rc == 0)
		return m;
	tune_cost_model_free(m);
	return NULL;
}

/* Train one model with "o" (its seed "seed") over "prior" on the rows
 * "idx"[0..n) of "t" and add its scores of the "ntest" rows "testx" to
 * "sum".  Return 0 or -1 (the reason in "err"). */
static int train_and_add(const rows *t, const int *idx, int n, const options *o,
	uint64_t seed, tune_cost_model *prior, const float *testx, int ntest, float *sum,
	char *err, size_t errlen)
{
	float *pred = malloc((size_t)ntest * sizeof(float));
	tune_cost_model *m = pred ? train_rows(t, idx, n, o, seed, prior, err, errlen) : NULL;
	int rc = m ? tune_cost_model_predict(m, testx, t->width, ntest, pred,
		err, errlen) : -1;
	for (int i = 0; rc == 0 && i < ntest; i++)
		sum[i] += pred[i];
	tune_cost_model_free(m);
	free(pred);
	return rc;
}

/* Number the held-out rows "s->test" of "t" by (workload, structure)
 * into "group": rows of one workload and one structure share a number. */
static int number_structures(const rows *t, const split *s, uint32_t *group)
{
	int *first = malloc((size_t)s->ntest * sizeof(int)), ngroups = 0;
	if (!first)
		return -1;
	for (int i = 0; i < s->ntest; i++) {
		int r = s->test[i], g = 0;
		while (g < ngroups && (t->task[first[g]] != t->task[r] ||
			t->structure[first[g]] != t->structure[r]))
			g++;
		if (g == ngroups)
			first[ngroups++] = r;
		group[i] = (uint32_t)g;
	}
	free(first);
	return 0;
}

/* Fill the --structures fields of "out": the accuracy of the scores
 * "pred" over the held-out pairs of "s" of one structure and over those
 * of two, all pairs and beyond "margin" (labels "y", workloads "task"). */
static int score_structures(const rows *t, const split *s, const float *pred,
	const float *y, const uint32_t *task, double margin, score *out)
{
	uint32_t *group = malloc((size_t)s->ntest * sizeof(uint32_t));
	if (!group || number_structures(t, s, group)) {
		free(group);
		return -1;
	}
	double c[2][2], p[2][2];   /* [all pairs, one structure][all, beyond] */
	int rc = 0;
	for (int m = 0; m < 2 && rc == 0; m++) {
		double mg = m ? margin : 1;
		rc = tune_pairwise_counts(pred, y, task, s->ntest, mg, &c[0][m], &p[0][m]) ||
			tune_pairwise_counts(pred, y, group, s->ntest, mg, &c[1][m], &p[1][m]);
	}
	free(group);
	if (rc)
		return -1;
	out->same_all = p[1][0] > 0 ? c[1][0] / p[1][0] : -1;
	out->same_beyond = p[1][1] > 0 ? c[1][1] / p[1][1] : -1;
	out->other_all = p[0][0] > p[1][0] ? (c[0][0] - c[1][0]) / (p[0][0] - p[1][0]) : -1;
	out->other_beyond = p[0][1] > p[1][1] ?
		(c[0][1] - c[1][1]) / (p[0][1] - p[1][1]) : -1;
	out->same_pairs = p[1][0];
	out->other_pairs = p[0][0] - p[1][0];
	return 0;
}

/* Train a model with "o" on the rows "s->train" of "t", score it on
 * "s->test".  With --bags K > 1 the score of a row is the mean of K
 * models, each trained on its own random --bag-fraction of the training
 * rows with its own seed.  Return 0 or -1 (the reason printed). */
static int evaluate(const rows *t, const split *s, const options *o, score *out)
{
	int ntest = s->ntest;
	float *x = malloc((size_t)ntest * t->width * sizeof(float));
	float *y = malloc((size_t)ntest * sizeof(float));
	float *pred = calloc((size_t)ntest, sizeof(float));
	double *sec = malloc((size_t)ntest * sizeof(double));
	uint32_t *task = malloc((size_t)ntest * sizeof(uint32_t));
	int *own = malloc(((size_t)s->ntrain + 1) * sizeof(int));
	int *bag = malloc(((size_t)s->ntrain + 1) * sizeof(int));
	int *others = malloc(((size_t)s->ntrain + 1) * sizeof(int));
	int nown = 0, nothers = 0;
	tune_cost_model *prior = NULL;
	char err[1024] = "";
	int rc = x && y && pred && sec && task && own && bag && others ? 0 : -1;
	for (int i = 0; rc == 0 && i < s->ntrain; i++) {
		if (o->prior && t->task[s->train[i]] != t->task[s->test[0]])
			others[nothers++] = s->train[i];
		else
			own[nown++] = s->train[i];
	}
	if (rc == 0 && nothers > 0 &&
	    !(prior = train_rows(t, others, nothers, o, o->model.seed, NULL, err, sizeof(err))))
		rc = -1;
	int nbag = o->bags > 1 ? (int)ceil(o->bag_fraction * nown) : nown;
	if (rc == 0)
		rc = gather(t, s->test, ntest, x, sec, task, y);
	for (int b = 0; rc == 0 && b < o->bags; b++) {
		memcpy(bag, own, (size_t)nown * sizeof(int));
		if (o->bags > 1)
			shuffle(bag, nown, o->model.seed * 7919 + (uint64_t)b + 1);
		rc = train_and_add(t, bag, nbag, o, o->model.seed + (uint64_t)b, prior, x, ntest,
			pred, err, sizeof(err));
	}
	if (rc)
		fprintf(stderr, "model_records: %s\n", err[0] ? err : "out of memory");
	else {
		out->all = tune_pairwise_accuracy(pred, y, task, ntest);
		out->beyond = tune_pairwise_accuracy_margin(pred, y, task, ntest, o->margin);
		if (o->structures && (rc = score_structures(t, s, pred, y, task, o->margin, out)))
			fprintf(stderr, "model_records: out of memory\n");
		dump_scores(t, s, sec, pred, o->dump);
	}
	free(x);
	free(y);
	free(pred);
	free(sec);
	free(task);
	free(own);
	free(bag);
	free(others);
	tune_cost_model_free(prior);
	return rc ? -1 : 0;
}

/* Split the rows of workload "w" of "t" into "s" under "o"; return 0, 1
 * when the workload has too few records, -1 when memory runs out. */
static int split_workload(const rows *t, uint32_t w, const options *o, split *s)
{
	int *mine = malloc((size_t)t->n * sizeof(int)), nmine = 0;
	s->train = malloc((size_t)t->n * sizeof(int));
	s->test = malloc((size_t)t->n * sizeof(int));
	s->ntrain = s->ntest = 0;
	if (!mine || !s->train || !s->test) {
		free(mine);
		return -1;
	}
	for (int i = 0; i < t->n; i++)
		if (t->task[i] == w)
			mine[nmine++] = i;
	if (nmine <= o->ntrain) {
		free(mine);
		return 1;
	}
	if (o->shuffle_seed)
		shuffle(mine, nmine, o->shuffle_seed);
	int last = -1;
	for (int i = 0; i < nmine; i++) {
		if (i < o->ntrain) {
			s->train[s->ntrain++] = mine[i];
			last = mine[i] > last ? mine[i] : last;
		} else {
			s->test[s->ntest++] = mine[i];
		}
	}
	tune_reservoir others = tune_reservoir_make(o->others_cap, o->model.seed);
	int first_other = s->ntrain;
	for (int i = 0; i < t->n && o->others; i++)
		if (t->task[i] != w && (o->others == 2 || i < last)) {
			int slot = tune_reservoir_offer(&others);
			if (slot < 0)
				continue;
			s->train[first_other + slot] = i;
			if (first_other + slot == s->ntrain)
				s->ntrain++;
		}
	free(mine);
	return 0;
}

static void split_free(split *s)
{
	free(s->train);
	free(s->test);
}

/* Keep in "idx"[0..n) the rows of "t" of the pick --picks asks for, in
 * order; return how many. */
static int keep_picked(const rows *t, int *idx, int n)
{
	int kept = 0;
	for (int i = 0; i < n; i++)
		if (t->picked[idx[i]])
			idx[kept++] = idx[i];
	return kept;
}

/* The pairs of rows "test"[0..n) of "t" whose times differ, and those
 * whose times differ by more than the factor "margin". */
static void count_pairs(const rows *t, const int *test, int n, double margin,
	double *all, double *beyond)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double a = t->seconds[test[i]], b = t->seconds[test[j]];
			double hi = a > b ? a : b, lo = a > b ? b : a;
			if (hi == lo)
				continue;
			*all += 1;
			*beyond += !isfinite(hi) || hi > margin * lo;
		}
}

/* Score workload "w" of "t" batch by batch (--next): return 0 with the
 * pooled score in "out", 1 when it has too few records, -1 on failure. */
static int next_batches(const rows *t, uint32_t w, const options *o, score *out,
	int *nbatches, int *ntest)
{
	split s;
	int r = split_workload(t, w, o, &s);
	if (r) {
		split_free(&s);
		return r;
	}
	int *mine = malloc((size_t)(s.ntrain + s.ntest) * sizeof(int)), nmine = 0;
	int *others = malloc(((size_t)s.ntrain + 1) * sizeof(int)), nothers = 0;
	int *train = malloc(((size_t)s.ntrain + s.ntest + 1) * sizeof(int));
	int *batch = malloc(((size_t)o->next + 1) * sizeof(int));
	if (!mine || !others || !train || !batch) {
		free(mine);
		free(others);
		free(train);
		free(batch);
		split_free(&s);
		return -1;
	}
	for (int i = 0; i < s.ntrain; i++) {
		if (t->task[s.train[i]] == w)
			mine[nmine++] = s.train[i];
		else
			others[nothers++] = s.train[i];
	}
	for (int i = 0; i < s.ntest; i++)
		mine[nmine++] = s.test[i];
	double ok_all = 0, ok_beyond = 0, pairs_all = 0, pairs_beyond = 0;
	*nbatches = *ntest = 0;
	for (int start = o->ntrain; r == 0 && start < nmine; start += o->next) {
		int end = start + o->next < nmine ? start + o->next : nmine;
		memcpy(batch, mine + start, (size_t)(end - start) * sizeof(int));
		memcpy(train, mine, (size_t)start * sizeof(int));
		memcpy(train + start, others, (size_t)nothers * sizeof(int));
		split b = { train, batch, start + nothers, keep_picked(t, batch, end - start) };
		double all = 0, beyond = 0;
		score sc;
		count_pairs(t, b.test, b.ntest, o->margin, &all, &beyond);
		if (all == 0)
			continue;
		if (evaluate(t, &b, o, &sc)) {
			r = -1;
			break;
		}
		ok_all += sc.all * all;
		pairs_all += all;
		if (beyond > 0) {
			ok_beyond += sc.beyond * beyond;
			pairs_beyond += beyond;
		}
		(*nbatches)++;
		*ntest += b.ntest;
	}
	out->all = pairs_all > 0 ? ok_all / pairs_all : -1;
	out->beyond = pairs_beyond > 0 ? ok_beyond / pairs_beyond : -1;
	free(mine);
	free(others);
	free(train);
	free(batch);
	split_free(&s);
	return r;
}

/* Score every workload of "t" with more than "o->ntrain" records (or
 * only "o->only_workload"), one line each, and the mean. */
static int per_workload(const rows *t, const options *o)
{
	bool seen[MAX_WORKLOADS] = { false };
	double sum_all = 0, sum_beyond = 0;
	int nw = 0;
	for (int i = 0; i < t->n; i++) {
		uint32_t w = t->task[i];
		if (w >= MAX_WORKLOADS || seen[w] || (o->only_workload && w != o->only_workload))
			continue;
		seen[w] = true;
		split s = { 0 };
		score sc;
		int r, nbatches = 0, ntest = 0;
		if (o->next) {
			r = next_batches(t, w, o, &sc, &nbatches, &ntest);
			if (r == 0)
				printf("  workload #%u: %d batches of %d after its first %d, "
					"%d records: accuracy %.3f, beyond %.0f%% %.3f\n", w,
					nbatches, o->next, o->ntrain, ntest, sc.all,
					(o->margin - 1) * 100, sc.beyond);
		} else {
			r = split_workload(t, w, o, &s);
			if (r == 0)
				s.ntest = keep_picked(t, s.test, s.ntest);
			if (r == 0 && s.ntest < 2) {
				printf("  workload #%u: fewer than 2 held-out records of pick "
					"\"%s\"\n", w, o->picks);
				r = 1;
			}
			if (r == 0 && evaluate(t, &s, o, &sc))
				r = -1;
			if (r == 0)
				printf("  workload #%u: trained on %d (%d of its own), held out "
					"%d: accuracy %.3f, beyond %.0f%% %.3f\n", w, s.ntrain,
					o->ntrain, s.ntest, sc.all, (o->margin - 1) * 100,
					sc.beyond);
			if (r == 0 && o->structures)
				printf("    one structure: %.0f pairs, accuracy %.3f, beyond %.0f%% %.3f; "
					"two structures: %.0f pairs, accuracy %.3f, beyond %.0f%% %.3f\n",
					sc.same_pairs, sc.same_all, (o->margin - 1) * 100, sc.same_beyond,
					sc.other_pairs, sc.other_all, (o->margin - 1) * 100,
					sc.other_beyond);
		}
		if (r == 0) {
			sum_all += sc.all;
			sum_beyond += sc.beyond;
			nw++;
		}
		if (!o->next)
			split_free(&s);
		if (r < 0)
			return -1;
	}
	if (nw == 0) {
		fprintf(stderr, "model_records: no workload has more than %d records%s\n",
			o->ntrain, o->picks ? " and 2 held-out records of that pick" : "");
		return -1;
	}
	printf("mean over %d workloads: accuracy %.3f, beyond %.0f%% %.3f\n", nw,
		sum_all / nw, (o->margin - 1) * 100, sum_beyond / nw);
	return 0;
}

/* The earlier protocol: the first "o->ntrain" rows of "t" train. */
static int pooled(const rows *t, const options *o)
{
	split s = { malloc((size_t)t->n * sizeof(int)), malloc((size_t)t->n * sizeof(int)),
		0, 0 };
	score sc;
	int rc = -1;
	if (s.train && s.test && t->n > o->ntrain) {
		for (int i = 0; i < t->n; i++)
			if (i < o->ntrain)
				s.train[s.ntrain++] = i;
			else
				s.test[s.ntest++] = i;
		s.ntest = keep_picked(t, s.test, s.ntest);
		rc = evaluate(t, &s, o, &sc);
	}
	if (rc == 0)
		printf("pooled: trained on the first %d, held out %d: accuracy %.3f, "
			"beyond %.0f%% %.3f\n", s.ntrain, s.ntest, sc.all,
			(o->margin - 1) * 100, sc.beyond);
	split_free(&s);
	return rc;
}

/* Parse the command line into "o"; return 0, or -1 on a bad option. */
static int parse_args(int argc, char **argv, options *o)
{
	*o = (options){ .ntrain = 500, .others_cap = TUNE_OTHER_ROWS, .margin = 1.03, .label = "throughput", .fastest = true,
		.bags = 1, .bag_fraction = 0.7, .model = tune_cost_model_opts_default() };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool flag = true;
		if (strcmp(a, "--recompute") == 0)
			o->recompute = true;
		else if (strcmp(a, "--pooled") == 0)
			o->pooled = true;
		else if (strcmp(a, "--store") == 0)
			o->store = true;
		else if (strcmp(a, "--raw") == 0)
			o->raw = true;
		else if (strcmp(a, "--structures") == 0)
			o->structures = true;
		else if (strcmp(a, "--prior") == 0)
			o->prior = true;
		else if (strcmp(a, "--code") == 0)
			o->code = true;
		else
			flag = false;
		if (flag)
			continue;
		if (!v)
			return -1;
		else if (strcmp(a, "--db") == 0)
			o->path = v;
		else if (strcmp(a, "--train") == 0)
			o->ntrain = atoi(v);
		else if (strcmp(a, "--workload") == 0)
			o->only_workload = atoll(v);
		else if (strcmp(a, "--shuffle") == 0)
			o->shuffle_seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--others") == 0)
			o->others = strcmp(v, "past") == 0 ? 1 : strcmp(v, "all") == 0 ? 2 :
				strcmp(v, "none") == 0 ? 0 : -1;
		else if (strcmp(a, "--others-cap") == 0)
			o->others_cap = atoi(v);
		else if (strcmp(a, "--label") == 0)
			o->label = v;
		else if (strcmp(a, "--margin") == 0)
			o->margin = atof(v);
		else if (strcmp(a, "--objective") == 0)
			o->model.objective = (tune_objective)tune_objective_parse(v);
		else if (strcmp(a, "--rounds") == 0)
			o->model.rounds = atoi(v);
		else if (strcmp(a, "--depth") == 0)
			o->model.max_depth = atoi(v);
		else if (strcmp(a, "--eta") == 0)
			o->model.eta = atof(v);
		else if (strcmp(a, "--min-child-weight") == 0)
			o->model.min_child_weight = atof(v);
		else if (strcmp(a, "--subsample") == 0)
			o->model.subsample = atof(v);
		else if (strcmp(a, "--colsample") == 0)
			o->model.colsample = atof(v);
		else if (strcmp(a, "--pairs") == 0)
			o->model.pair_samples = atoi(v);
		else if (strcmp(a, "--seed") == 0)
			o->model.seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--next") == 0)
			o->next = atoi(v);
		else if (strcmp(a, "--dump") == 0)
			o->dump = v;
		else if (strcmp(a, "--picks") == 0)
			o->picks = v;
		else if (strcmp(a, "--bags") == 0)
			o->bags = atoi(v);
		else if (strcmp(a, "--bag-fraction") == 0)
			o->bag_fraction = atof(v);
		else if (strcmp(a, "--time") == 0 && (strcmp(v, "min") == 0 ||
			strcmp(v, "median") == 0))
			o->fastest = strcmp(v, "min") == 0;
		else
			return -1;
		i++;
	}
	return o->path && o->ntrain >= 1 && o->next >= 0 && o->bags >= 1 &&
		o->bag_fraction > 0 && o->bag_fraction <= 1 &&
		(!o->next || (!o->shuffle_seed && !o->pooled)) &&
		(!o->structures || (!o->next && !o->pooled)) && o->others >= 0 && o->others_cap >= 0 && o->margin >= 1 &&
		(!o->prior || (o->others && !o->pooled)) && (!o->code || !o->others) &&
		(int)o->model.objective >= 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	options o;
	if (parse_args(argc, argv, &o)) {
		fprintf(stderr, "usage: model_records --db PATH [--train N] [--workload ID] "
			"[--shuffle SEED] [--others none|past|all] [--others-cap K] [--prior] [--margin M] [--recompute] "
			"[--pooled] [--store] [--objective rank|reg] [--rounds R] [--depth D] "
			"[--eta E] [--min-child-weight W] [--subsample F] [--colsample F] [--pairs P] [--seed S] [--next B] [--dump PATH] "
			"[--time median|min] [--raw] [--picks WORD] [--bags K] [--bag-fraction F] "
			"[--structures] [--code]\n");
		return 1;
	}
	char err[1024];
	tune_db *db = tune_db_open(o.path, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "model_records: %s\n", err);
		return 1;
	}
	rows t = { .width = o.code ? TUNE_RECORD_FEATURES : TUNE_PROGRAM_FEATURES };
	reader rd = { .t = &t, .db = db, .recompute = o.recompute, .fastest = o.fastest,
		.raw = o.raw, .picks = o.picks, .structures = o.structures, .only_workload = o.others ? 0 : o.only_workload };
	rd.ctx = tessel_ctx_new();
	if (rd.ctx && store_target(db, &rd.cpu))
		rt_cpu_target_host(&rd.cpu);
	if (o.code && cg_code_stats_tool(rd.disasm, sizeof(rd.disasm))) {
		fprintf(stderr, "model_records: --code needs objdump (or $OBJDUMP)\n");
		return 1;
	}
	if (!rd.ctx) {
		fprintf(stderr, "model_records: out of memory\n");
		return 1;
	}
	if (tune_db_foreach(db, 0, 0, collect, &rd)) {
		fprintf(stderr, "model_records: reading %s failed\n", o.path);
		return 1;
	}
	printf("%d records in %s", t.n, o.path);
	if (rd.recomputed)
		printf(", features of %d computed again", rd.recomputed);
	if (rd.code_recomputed)
		printf(", code features of %d computed", rd.code_recomputed);
	if (rd.unusable)
		printf(" (%d records no longer replay, left out)", rd.unusable);
	printf("; %s, %s split%s%s%s%s\n", tune_objective_name(o.model.objective),
		o.shuffle_seed ? "random" : "time",
		o.others == 2 ? ", other workloads all" : o.others == 1 ?
		", other workloads measured before" : "", o.prior ? " as a prior" : "",
		o.picks ? ", scoring the picks " : "", o.picks ? o.picks : "");
	if (o.store && store_features(db, &t, t.ids)) {
		fprintf(stderr, "model_records: %s\n", tune_db_error(db));
		return 1;
	}
	int rc = o.pooled ? pooled(&t, &o) : per_workload(&t, &o);
	for (int i = 0; i < MAX_WORKLOADS; i++)
		tessel_op_release(rd.ops[i].op);
	tessel_ctx_free(rd.ctx);
	free(t.ids);
	free(t.picked);
	free(t.structure);
	tune_db_close(db);
	free(t.x);
	free(t.seconds);
	free(t.task);
	return rc ? 1 : 0;
}
