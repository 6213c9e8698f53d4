#include "tuner/search.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/fnv.h"
#include "runtime/target.h"
#include "runtime/timer.h"
#include "schedule/gpu_default.h"
#include "schedule/random.h"
#include "tuner/code_features.h"
#include "tuner/control.h"
#include "tuner/features.h"
#include "tuner/fork_map.h"
#include "tuner/gpu_redundant.h"
#include "tuner/model.h"
#include "tuner/novelty.h"
#include "tuner/record_features.h"
#include "tuner/reservoir.h"
#include "tuner/sketch.h"

/* The best measured traces kept as parents for mutation. */
#define ELITES 16
/* Attempts to make one population member before giving up on it. */
#define MEMBER_ATTEMPTS 4

tune_search_opts tune_search_opts_default(void)
{
	return (tune_search_opts){
		.trials = 64,
		.batch = 16,
		.population = 64,
		.generations = 2,
		.epsilon = 0.1,
		.code_shortlist = 0,
		.early_stop = 300,
		.min_train = 16,
		.other_rows = TUNE_OTHER_ROWS,
		.runoff = TUNE_RUNOFF_DEFAULT,
		.seed = 1,
		.measure = tune_measure_opts_default(),
	};
}

void tune_summary_clear(tune_summary *s)
{
	free(s->best_trace);
	memset(s, 0, sizeof(*s));
}

/* ---- a set of 64-bit hashes ---------------------------------------------- */

typedef struct hash_set {
	uint64_t *slots;     /* 0 marks an empty slot; hashes are never 0 */
	size_t cap, n;
} hash_set;

/* The hash of "s" in a hash_set (never 0). */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = te_fnv1a(s);
	return h ? h : 1;
}

static bool set_has(const hash_set *s, uint64_t h)
{
	if (!s->cap)
		return false;
	for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->slots[i] == h)
			return true;
		if (!s->slots[i])
			return false;
	}
}

static int set_add(hash_set *s, uint64_t h);

static int set_grow(hash_set *s)
{
	hash_set bigger = { calloc(s->cap ? s->cap * 2 : 1024, sizeof(uint64_t)),
		s->cap ? s->cap * 2 : 1024, 0 };
	if (!bigger.slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			set_add(&bigger, s->slots[i]);
	free(s->slots);
	*s = bigger;
	return 0;
}

/* Add "h"; return 1 when it was new, 0 when present, -1 out of memory. */
static int set_add(hash_set *s, uint64_t h)
{
	if ((s->n + 1) * 2 > s->cap && set_grow(s))
		return -1;
	for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (s->slots[i] == h)
			return 0;
		if (!s->slots[i]) {
			s->slots[i] = h;
			s->n++;
			return 1;
		}
	}
}

/* ---- the search's state ---------------------------------------------------- */

/* One candidate program: its trace, lowered program and features. */
typedef struct candidate {
	char *trace;
	uint64_t trace_hash;
	uint64_t prog_hash;
	loop_prog *prog;
	float *features;
	float score;
	bool is_default;     /* the target's default schedule */
	const char *pick;    /* why it is measured: TUNE_PICK_* */
} candidate;

/* A measured trace kept as a parent. */
typedef struct elite {
	double seconds;
	sch_trace *trace;
} elite;

/* Rows a model trains on: features, times, tasks. */
typedef struct train_set {
	int width;            /* features a row: TUNE_PROGRAM_FEATURES, or
	                       * TUNE_RECORD_FEATURES with the code's */
	int n, cap;
	float *x;             /* n * width */
	double *seconds;      /* INFINITY for failed candidates */
	uint32_t *task;
} train_set;

/* Records of the task whose stored features were of another version:
 * their ids and the training rows with this build's features, written
 * back to the store once it has been read. */
typedef struct stale_set {
	int n, cap;
	int64_t *id;
	int *row;
} stale_set;

/* A stored record of the task that another build measured, with a code
 * key. */
typedef struct again_record {
	int64_t id;
	double seconds;      /* its stored median; INFINITY when it failed */
	char *trace;
	char *code_key;
} again_record;

/* The records of the task that this build makes other code of, to
 * measure again fastest first ("next" is the first not taken yet): the
 * AGAIN_CHECKS fastest of those another build measured with a code key
 * are compared (a comparison lowers the trace, about 10 ms).  Their ids
 * (load_record passes over them) and trace hashes (whenever one of them
 * is measured again, its new measurement replaces its row). */
typedef struct again_list {
	int n, cap, next;
	again_record *rec;
	hash_set ids;
	hash_set traces;
	bool taking;         /* again_candidates is describing them */
} again_list;

#define AGAIN_CHECKS 32

typedef struct search {
	const tune_task *task;
	tune_db *db;
	const tune_search_opts *o;
	tune_summary *sum;
	char *err;
	size_t errlen;
	int64_t workload_id, target_id;
	tune_space *space;
	tune_measurer *measurer;
	tune_cost_model *model;  /* of the task's records over the prior, or
	                          * the one saved in the store */
	int model_rows;          /* rows the model was trained on */
	train_set train;         /* every record of the task */
	tune_cost_model *code_model; /* of the task's records with their code
	                          * features: orders the short list */
	int code_model_rows;
	train_set code_train;    /* the task's records that have them */
	int code_unread_told;    /* candidates whose code was not read, as
	                          * last said in the log */
	tune_reservoir sample;   /* of the records of other workloads */
	train_set others;        /* the sample: row i is its slot i */
	tune_cost_model *prior;  /* trained once on "others"; NULL without */
	long long stale_others;  /* records of other workloads left out: their
	                          * features are of another version */
	stale_set stale;
	hash_set measured_traces;  /* of this task, in the store */
	again_list again;
	hash_set measured_progs;   /* of this task, measured in this run */
	tune_novelty structures;   /* measured, of this task: in the store and
	                            * in this run */
	elite elites[ELITES];
	int nelites;
	uint64_t rng;
	double start_s;
	int since_better;        /* trials since the best time or the least
	                          * label improved */
	double best_label_s;     /* the label time of the best record */
	double least_label_s;    /* the least label time of the task so far */
	tune_control control;    /* measured with every batch */
	tune_fork_pool *copies;  /* that make members (make_members), or NULL */
} search;

static int fail(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(search *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void logf_(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logf_(search *s, const char *fmt, ...)
{
	if (!s->o->log)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->o->log(line, s->o->log_arg);
}

static void candidate_clear(candidate *c)
{
	free(c->trace);
	loop_prog_free(c->prog);
	free(c->features);
	memset(c, 0, sizeof(*c));
}

/* Keep "trace" (text) as a parent when it is among the ELITES fastest. */
static void elite_offer(search *s, const char *trace, double seconds)
{
	int worst = -1;
	if (s->nelites == ELITES) {
		worst = 0;
		for (int i = 1; i < ELITES; i++)
			if (s->elites[i].seconds > s->elites[worst].seconds)
				worst = i;
		if (s->elites[worst].seconds <= seconds)
			return;
	}
	sch_trace *t = sch_trace_parse(s->task->ctx, "record", trace);
	if (!t)
		return;
	if (worst < 0)
		worst = s->nelites++;
	else
		sch_trace_free(s->elites[worst].trace);
	s->elites[worst] = (elite){ seconds, t };
}

/* Write row "row" of "t" (one that exists). */
static void train_put(train_set *t, int row, const float *x, double seconds,
	uint32_t task)
{
	memcpy(t->x + (size_t)row * t->width, x, (size_t)t->width * sizeof(float));
	t->seconds[row] = seconds;
	t->task[row] = task;
}

static int train_add(train_set *t, const float *x, double seconds, uint32_t task)
{
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 256;
		float *nx = realloc(t->x, (size_t)cap * t->width * sizeof(float));
		if (!nx)
			return -1;
		t->x = nx;
		double *ns = realloc(t->seconds, (size_t)cap * sizeof(double));
		if (!ns)
			return -1;
		t->seconds = ns;
		uint32_t *nt = realloc(t->task, (size_t)cap * sizeof(uint32_t));
		if (!nt)
			return -1;
		t->task = nt;
		t->cap = cap;
	}
	train_put(t, t->n++, x, seconds, task);
	return 0;
}

/* Whether the search orders a short list by the candidates' code (and
 * so keeps a model of it). */
static bool orders_by_code(const search *s)
{
	return s->o->code_shortlist >= 2;
}

/* Offer a record of another workload to the sample of "s": it takes a
 * new row or replaces the row of its slot, or is left out. */
static int offer_other(search *s, const float *x, double seconds, uint32_t task)
{
	int slot = tune_reservoir_offer(&s->sample);
	if (slot < 0)
		return 0;
	if (slot < s->others.n) {
		train_put(&s->others, slot, x, seconds, task);
		return 0;
	}
	return train_add(&s->others, x, seconds, task);
}

static void train_free(train_set *t)
{
	free(t->x);
	free(t->seconds);
	free(t->task);
}

/* ---- what the store already knows -------------------------------------------- */

static int stale_add(stale_set *t, int64_t id, int row)
{
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 64;
		int64_t *ni = realloc(t->id, (size_t)cap * sizeof(*ni));
		if (!ni)
			return -1;
		t->id = ni;
		int *nr = realloc(t->row, (size_t)cap * sizeof(*nr));
		if (!nr)
			return -1;
		t->row = nr;
		t->cap = cap;
	}
	t->id[t->n] = id;
	t->row[t->n++] = row;
	return 0;
}

/* Add record "r" (of time "seconds") to the training rows.  A record of
 * another workload is offered to the sample when its stored features are
 * this build's, and left out otherwise.  A record of the task is added
 * with its stored features when they are this build's, else with
 * features computed again from its trace (remembered for the
 * write-back). */
static int train_record(search *s, const tune_record *r, double seconds)
{
	bool current = r->nfeatures == TUNE_PROGRAM_FEATURES ||
		       r->nfeatures == TUNE_RECORD_FEATURES;
	if (r->workload_id != s->workload_id) {
		if (current)
			return offer_other(s, r->features, seconds, (uint32_t)r->workload_id);
		s->stale_others++;
		return 0;
	}
	if (r->nfeatures == TUNE_RECORD_FEATURES && orders_by_code(s) &&
	    train_add(&s->code_train, r->features, seconds, (uint32_t)r->workload_id))
		return -1;
	if (current)
		return train_add(&s->train, r->features, seconds, (uint32_t)r->workload_id);
	float x[TUNE_PROGRAM_FEATURES];
	if (tune_trace_features(s->task->ctx, s->task->op, r->trace, &s->task->cpu, x))
		return 0;
	return train_add(&s->train, x, seconds, (uint32_t)r->workload_id) ||
		stale_add(&s->stale, r->id, s->train.n - 1) ? -1 : 0;
}

/* Store this build's features of the stale records in one batch; a
 * failure only costs the next run the same work again. */
static void write_back_features(search *s)
{
	if (s->stale.n == 0)
		return;
	int r = tune_db_begin(s->db);
	for (int i = 0; r == 0 && i < s->stale.n; i++)
		r = tune_db_set_features(s->db, s->stale.id[i],
			s->train.x + (size_t)s->stale.row[i] * s->train.width,
			TUNE_PROGRAM_FEATURES);
	if (r == 0)
		r = tune_db_commit(s->db);
	else
		tune_db_rollback(s->db);
	if (r == 0)
		logf_(s, "cost model: features of %d records computed again (version %d)",
			s->stale.n, TUNE_FEATURES_VERSION);
	else
		logf_(s, "cost model: features of %d records not stored (%s)", s->stale.n,
			tune_db_error(s->db));
}


static int load_record(const tune_record *r, void *arg)
{
	search *s = arg;
	if (set_has(&s->again.ids, (uint64_t)r->id)) {
		s->sum->known++;
		return 0;
	}
	bool ok = strcmp(r->error_class, "ok") == 0;
	double seconds = ok ? r->cost_median_s : INFINITY;
	double label = tune_label_seconds(ok, r->cost_median_s, r->cost_min_s,
		r->cost_scale);
	if (train_record(s, r, label))
		return -1;
	if (r->workload_id != s->workload_id)
		return 0;
	s->sum->known++;
	if (set_add(&s->measured_traces, fnv1a(r->trace)) < 0 ||
	    tune_novelty_add(&s->structures, tune_trace_skeleton(r->trace)))
		return -1;
	if (ok) {
		elite_offer(s, r->trace, seconds);
		s->least_label_s = fmin(s->least_label_s, label);
		if (!(s->sum->best_s <= seconds)) {
			s->sum->best_s = seconds;
			s->best_label_s = label;
			s->sum->best_record = r->id;
			free(s->sum->best_trace);
			s->sum->best_trace = strdup(r->trace);
		}
	}
	return 0;
}

/* Return a new model over "prior" (NULL: none) trained on the rows "t",
 * labelled by normalized throughput; NULL when training fails (logged). */
static tune_cost_model *train_model(search *s, const train_set *t, tune_cost_model *prior)
{
	float *y = malloc((size_t)t->n * sizeof(float) + 1);
	char why[512] = "out of memory";
	tune_cost_model_opts mo = tune_cost_model_opts_default();
	mo.seed = s->o->seed;
	tune_cost_model *m = y && tune_normalize_throughput(t->seconds, t->task, t->n, y) == 0 ?
		tune_cost_model_new(t->width, &mo, why, sizeof(why)) : NULL;
	if (m && (tune_cost_model_set_prior(m, prior, why, sizeof(why)) ||
		  tune_cost_model_train(m, t->x, t->width, y, t->task, t->n,
			  why, sizeof(why)))) {
		tune_cost_model_free(m);
		m = NULL;
	}
	if (!m)
		logf_(s, "cost model: training failed (%s)", why);
	free(y);
	return m;
}

/* Train the prior on the sample of other workloads' records, once: they
 * do not change during the search, so each retraining only fits the
 * task's records over it (tuner/model.h, tune_cost_model_set_prior). */
static void train_prior(search *s)
{
	if (s->stale_others)
		logf_(s, "cost model: %lld records of other workloads have features of "
			"another version and train nothing until a run on their own "
			"workload computes them again", s->stale_others);
	if (s->others.n == 0) {
		if (s->sample.seen)
			logf_(s, "cost model: 0 of the %lld records of other workloads in the "
				"store train; the task's records alone do",
				(long long)s->sample.seen);
		return;
	}
	double t0 = rt_now_s();
	s->prior = train_model(s, &s->others, NULL);
	if (s->prior)
		logf_(s, "cost model: %d of the %lld records of other workloads in the "
			"store train a prior (in %.2f s); the task's records train over it",
			s->others.n, (long long)s->sample.seen, rt_now_s() - t0);
}


/* Note record "r" of the task in the again_list "arg" when another build
 * measured it with a code key; 0, or 1 when out of memory. */
static int note_other_build(const tune_record *r, void *arg)
{
	again_list *a = arg;
	if (!r->code_key || !tune_record_other_build(r))
		return 0;
	if (a->n == a->cap) {
		int cap = a->cap ? 2 * a->cap : 64;
		again_record *rec = realloc(a->rec, (size_t)cap * sizeof(*rec));
		if (!rec)
			return 1;
		a->rec = rec;
		a->cap = cap;
	}
	again_record *k = &a->rec[a->n];
	k->id = r->id;
	k->seconds = strcmp(r->error_class, "ok") == 0 ? r->cost_median_s : INFINITY;
	k->trace = strdup(r->trace);
	k->code_key = strdup(r->code_key);
	a->n++;
	return !k->trace || !k->code_key;
}

static int by_seconds(const void *a, const void *b)
{
	double x = ((const again_record *)a)->seconds, y = ((const again_record *)b)->seconds;
	return (x > y) - (x < y);
}

static void again_record_free(again_record *k)
{
	free(k->trace);
	free(k->code_key);
}

/* Return whether this build makes other code of the trace of "k" than
 * its code key says ran.  A trace that no longer replays counts as the
 * same code: nothing could measure it again. */
static bool makes_other_code(search *s, const again_record *k)
{
	char key[CG_CODE_KEY_LEN];
	loop_prog *p = sch_trace_program(s->task->ctx, s->task->op, "record", k->trace);
	bool other = p && tune_measurer_code_key(s->measurer, s->task->ctx, p, key) == 0 &&
		strcmp(key, k->code_key) != 0;
	loop_prog_free(p);
	tessel_ctx_clear_error(s->task->ctx);
	return other;
}

/* Fill s->again with the records of the task that this build makes other
 * code of, fastest first, of the AGAIN_CHECKS fastest that other builds
 * measured with a code key.  Return as tune_db_foreach. */
static int find_other_code(search *s)
{
	again_list *a = &s->again;
	int r = tune_db_foreach(s->db, s->workload_id, s->target_id, note_other_build, a);
	if (a->n)
		qsort(a->rec, (size_t)a->n, sizeof(*a->rec), by_seconds);
	int kept = 0;
	for (int i = 0; i < a->n; i++) {
		if (r == 0 && i < AGAIN_CHECKS && makes_other_code(s, &a->rec[i])) {
			if (set_add(&a->ids, (uint64_t)a->rec[i].id) < 0 ||
			    set_add(&a->traces, fnv1a(a->rec[i].trace)) < 0)
				r = 1;
			a->rec[kept++] = a->rec[i];
		} else {
			again_record_free(&a->rec[i]);
		}
	}
	a->n = kept;
	s->sum->other_code = kept;
	return r;
}

/* Read the records of the target (training rows; the task's measured
 * traces, best and parents) and the newest saved model. */
static int load_store(search *s)
{
	int r = find_other_code(s);
	if (r == 0)
		r = tune_db_foreach(s->db, 0, s->target_id, load_record, s);
	if (r)
		return fail(s, "reading the records of %s: %s", tune_db_path(s->db),
			r < 0 ? tune_db_error(s->db) : "out of memory");
	if (s->again.n)
		logf_(s, "%d of the task's %d records were measured by other builds, and "
			"this build makes other code of them: measuring them again first, "
			"fastest first", s->again.n, s->sum->known);
	write_back_features(s);
	train_prior(s);
	tune_model saved;
	r = tune_db_load_model(s->db, s->task->target_kind, &saved);
	if (r < 0)
		return fail(s, "%s", tune_db_error(s->db));
	if (r == 0) {
		char why[512];
		tune_cost_model *m = tune_cost_model_load(saved.blob, saved.len,
			TUNE_PROGRAM_FEATURES, NULL, why, sizeof(why));
		if (m) {
			tune_cost_model_free(s->model);
			s->model = m;
			s->model_rows = (int)saved.n_records;
			logf_(s, "cost model: loaded from the store (trained on %lld records)",
				(long long)saved.n_records);
		} else {
			logf_(s, "cost model: the saved one is unusable (%s); starting cold", why);
		}
		tune_model_clear(&saved);
	}
	if (isfinite(s->sum->best_s))
		tune_measurer_set_best(s->measurer, s->sum->best_s);
	if (s->sum->best_trace && tune_control_set(&s->control, s->task,
		s->sum->best_trace, s->best_label_s))
		logf_(s, "control: the best record does not lower; the first batch "
			"goes without one");
	return 0;
}

/* ---- making candidates ----------------------------------------------------- */

/* Return whether a program of trace hash "h" is not to be measured: the
 * store or this run has it, or it is a record of other code that only
 * again_candidates measures (so that it is measured once, and in its
 * place). */
static bool is_known(const search *s, uint64_t h)
{
	return set_has(&s->measured_traces, h) ||
	       (!s->again.taking && set_has(&s->again.traces, h));
}

/* Describe the state "st" as candidate "c": its trace, lowered program
 * and features.  Return 0, or -1 when it is refused: a trace or program
 * measured before, a program that does not lower, or one that repeats
 * a block's work in every thread on a GPU (tuner/gpu_redundant.h). */
static int describe(search *s, sch_state *st, candidate *c)
{
	memset(c, 0, sizeof(*c));
	c->trace = sch_trace_to_text(st->trace);
	if (!c->trace)
		return -1;
	c->trace_hash = fnv1a(c->trace);
	if (is_known(s, c->trace_hash))
		goto refuse;
	c->prog = sch_program(st);
	if (!c->prog ||
	    (tune_task_is_gpu(s->task) && tune_gpu_repeats_work_per_thread(c->prog)))
		goto refuse;
	char *text = loop_prog_print(c->prog);
	if (!text)
		goto refuse;
	c->prog_hash = fnv1a(text);
	free(text);
	if (set_has(&s->measured_progs, c->prog_hash))
		goto refuse;
	c->features = malloc(TUNE_PROGRAM_FEATURES * sizeof(float));
	if (!c->features ||
	    tune_program_features(c->prog, &s->task->cpu, c->features))
		goto refuse;
	return 0;
refuse:
	candidate_clear(c);
	return -1;
}

/* Take "c" into a population unless its program is in "seen"; return
 * 0, or -1 (and clear "c") when it is not taken. */
static int take_unseen(hash_set *seen, candidate *c)
{
	if (set_has(seen, c->prog_hash) || set_add(seen, c->prog_hash) < 0) {
		candidate_clear(c);
		return -1;
	}
	return 0;
}

/* Describe "st" as candidate "c" of a population with the programs
 * "seen"; return 0 or -1 as describe and take_unseen. */
static int make_candidate(search *s, sch_state *st, hash_set *seen, candidate *c)
{
	return describe(s, st, c) == 0 ? take_unseen(seen, c) : -1;
}

/* Lower the trace of "c" again when it came back from make_member as
 * text and features (in a copy or in this process: tuner/fork_map.h);
 * only the measured batch needs its program.  Return 0, or -1 with the
 * reason in the error. */
static int lower_again(search *s, candidate *c)
{
	if (!c->prog)
		c->prog = sch_trace_program(s->task->ctx, s->task->op, "candidate", c->trace);
	return c->prog ? 0 : -1;
}

/* Pick a parent: one of the elites, the faster more often. */
static const sch_trace *pick_elite(search *s)
{
	if (!s->nelites)
		return NULL;
	int a = (int)(sch_rng_next(&s->rng) % (uint64_t)s->nelites);
	int b = (int)(sch_rng_next(&s->rng) % (uint64_t)s->nelites);
	return s->elites[s->elites[a].seconds <= s->elites[b].seconds ? a : b].trace;
}

/* A new state: a mutation of "parent" (NULL: of an elite, or a sample
 * when there is none), a fresh sketch sample when mutation fails. */
static sch_state *new_member(search *s, const sch_trace *parent)
{
	if (!parent)
		parent = pick_elite(s);
	sch_state *st = parent ? tune_space_mutate(s->space, parent, &s->rng) : NULL;
	return st ? st : tune_space_sample(s->space, -1, &s->rng);
}

/* One member of a population to make, as a job of tune_fork_map, from
 * its own random state: a mutation of the trace "parent" (a sample when
 * it fails) or, without one, a sample.  As bytes: the seed, then the
 * parent's text and its terminating zero, if any. */
typedef struct member_job {
	uint64_t seed;
	char *parent;
} member_job;

/* A described candidate as bytes: its hashes, its features, its trace
 * with the terminating zero. */
typedef struct member_head {
	uint64_t trace_hash, prog_hash;
	float features[TUNE_PROGRAM_FEATURES];
} member_head;

/* Make the member of the job "in" ("in_len" bytes, member_job) for the
 * search "arg", with MEMBER_ATTEMPTS tries for a sample, and write it
 * as a member_head and its trace into "*out" of "*len" bytes (nothing
 * when refused).  Only the job's seed draws, so the member is the same
 * in any process. */
static void make_member(int i, const void *in, size_t in_len, void *arg, void **out,
	size_t *len)
{
	(void)i;
	search *s = arg;
	uint64_t seed;
	const char *text = (const char *)in + sizeof(seed);
	if (in_len < sizeof(seed) || (in_len > sizeof(seed) && text[in_len - sizeof(seed) - 1]))
		return;
	memcpy(&seed, in, sizeof(seed));
	uint64_t rng = s->rng;
	s->rng = seed;
	sch_trace *parent = in_len > sizeof(seed) ?
		sch_trace_parse(s->task->ctx, "candidate", text) : NULL;
	for (int a = 0; a < MEMBER_ATTEMPTS && !*out; a++) {
		sch_state *st = parent ? new_member(s, parent) :
			tune_space_sample(s->space, -1, &s->rng);
		candidate c;
		if (st && describe(s, st, &c) == 0) {
			size_t tlen = strlen(c.trace) + 1;
			member_head *h = malloc(sizeof(*h) + tlen);
			if (h) {
				h->trace_hash = c.trace_hash;
				h->prog_hash = c.prog_hash;
				memcpy(h->features, c.features, sizeof(h->features));
				memcpy(h + 1, c.trace, tlen);
				*out = h;
				*len = sizeof(*h) + tlen;
			}
			candidate_clear(&c);
		}
		sch_state_free(st);
		if (parent)
			break;
	}
	sch_trace_free(parent);
	tessel_ctx_clear_error(s->task->ctx);
	s->rng = rng;
}

/* Read the member "buf" of "len" bytes (make_member) into "c", its
 * program not lowered; return 0, or -1 when it is malformed. */
static int read_member(const void *buf, size_t len, candidate *c)
{
	memset(c, 0, sizeof(*c));
	const member_head *h = buf;
	if (!buf || len <= sizeof(*h) || ((const char *)buf)[len - 1] != '\0')
		return -1;
	c->trace = strdup((const char *)(h + 1));
	c->features = malloc(sizeof(h->features));
	if (!c->trace || !c->features) {
		candidate_clear(c);
		return -1;
	}
	memcpy(c->features, h->features, sizeof(h->features));
	c->trace_hash = h->trace_hash;
	c->prog_hash = h->prog_hash;
	return 0;
}

/* Make the "n" members "jobs" in the search's copies (tuner/fork_map.h)
 * and add those not measured since the copies were forked and whose
 * programs are not in "seen" to "pop"; return how many were added. */
static int make_members(search *s, const member_job *jobs, int n, hash_set *seen,
	candidate *pop)
{
	size_t *in_len = calloc((size_t)n + 1, sizeof(*in_len));
	size_t *len = calloc((size_t)n + 1, sizeof(*len));
	char **in = calloc((size_t)n + 1, sizeof(*in));
	void **out = calloc((size_t)n + 1, sizeof(*out));
	int k = 0, made = 0;
	for (; in && in_len && made < n; made++) {
		const char *parent = jobs[made].parent;
		size_t plen = parent ? strlen(parent) + 1 : 0;
		in_len[made] = sizeof(jobs[made].seed) + plen;
		if (!(in[made] = malloc(in_len[made])))
			break;
		memcpy(in[made], &jobs[made].seed, sizeof(jobs[made].seed));
		if (parent)
			memcpy(in[made] + sizeof(jobs[made].seed), parent, plen);
	}
	if (made == n && out && len) {
		tune_fork_map(s->copies, make_member, s, n, (const void *const *)in, in_len, out,
			len);
		for (int i = 0; i < n; i++)
			if (read_member(out[i], len[i], &pop[k]) == 0 &&
			    !is_known(s, pop[k].trace_hash) &&
			    !set_has(&s->measured_progs, pop[k].prog_hash) &&
			    take_unseen(seen, &pop[k]) == 0)
				k++;
			else
				candidate_clear(&pop[k]);
	}
	for (int i = 0; i < n; i++) {
		free(in ? in[i] : NULL);
		free(out ? out[i] : NULL);
	}
	free(in);
	free(out);
	free(in_len);
	free(len);
	return k;
}

/* Fill "pop" with up to "n" new candidates: half mutations of the elites
 * (when there are any), the rest sketch samples. */
static int initial_population(search *s, hash_set *seen, candidate *pop, int n)
{
	member_job *jobs = calloc((size_t)n + 1, sizeof(*jobs));
	if (!jobs)
		return 0;
	for (int i = 0; i < n; i++) {
		const sch_trace *elite = s->nelites && i < n / 2 ? pick_elite(s) : NULL;
		jobs[i] = (member_job){ sch_rng_next(&s->rng),
			elite ? sch_trace_to_text(elite) : NULL };
	}
	int k = make_members(s, jobs, n, seen, pop);
	for (int i = 0; i < n; i++)
		free(jobs[i].parent);
	free(jobs);
	return k;
}

/* The model that scores candidates: the task's (over the prior, or the
 * saved one), else the prior alone, else none. */
static tune_cost_model *scorer(const search *s)
{
	return s->model && tune_cost_model_trained(s->model) ? s->model : s->prior;
}

static bool model_ready(const search *s)
{
	return scorer(s) != NULL;
}

/* Score the "n" candidates of "pop" with the model (0 without one). */
static void score(search *s, candidate *pop, int n)
{
	if (!model_ready(s) || n == 0) {
		for (int i = 0; i < n; i++)
			pop[i].score = 0;
		return;
	}
	float *x = calloc((size_t)n * TUNE_PROGRAM_FEATURES, sizeof(float));
	float *y = calloc((size_t)n, sizeof(float));
	char why[512];
	if (x && y) {
		for (int i = 0; i < n; i++)
			memcpy(x + (size_t)i * TUNE_PROGRAM_FEATURES, pop[i].features,
				TUNE_PROGRAM_FEATURES * sizeof(float));
		if (tune_cost_model_predict(scorer(s), x, TUNE_PROGRAM_FEATURES, n, y, why,
			sizeof(why)) == 0)
			for (int i = 0; i < n; i++)
				pop[i].score = y[i];
		else
			logf_(s, "cost model: prediction failed (%s)", why);
	}
	free(x);
	free(y);
}

/* The better of two random members of "pop". */
static int tournament(search *s, const candidate *pop, int n)
{
	int a = (int)(sch_rng_next(&s->rng) % (uint64_t)n);
	int b = (int)(sch_rng_next(&s->rng) % (uint64_t)n);
	return pop[a].score >= pop[b].score ? a : b;
}

static int by_score_desc(const void *pa, const void *pb)
{
	const candidate *a = pa, *b = pb;
	return (a->score < b->score) - (a->score > b->score);
}

/* Evolve a population for the configured generations and gather every
 * candidate seen into "pool" (capacity "cap"), scored; return its size.
 * A generation's parents are drawn here, its members made in parallel
 * (make_members). */
static int evolve(search *s, candidate *pool, int cap)
{
	hash_set seen = { 0 };
	int npop = s->o->population;
	member_job *jobs = calloc((size_t)npop + 1, sizeof(*jobs));
	if (!jobs)
		return 0;
	int n = initial_population(s, &seen, pool, npop < cap ? npop : cap);
	score(s, pool, n);
	int gen_start = 0, gen_n = n;
	for (int g = 0; g < s->o->generations && model_ready(s) && gen_n > 0; g++) {
		int want = npop < cap - n ? npop : cap - n;
		for (int i = 0; i < want; i++) {
			int parent = gen_start + tournament(s, pool + gen_start, gen_n);
			jobs[i] = (member_job){ sch_rng_next(&s->rng), pool[parent].trace };
		}
		int made = make_members(s, jobs, want, &seen, pool + n);
		n += made;
		score(s, pool + n - made, made);
		gen_start = n - made;
		gen_n = made;
	}
	free(jobs);
	free(seen.slots);
	return n;
}

typedef struct ranked {
	int index;
	float key;
} ranked;

static int by_key_desc(const void *pa, const void *pb)
{
	const ranked *a = pa, *b = pb;
	if (a->key != b->key)
		return (a->key < b->key) - (a->key > b->key);
	return (a->index > b->index) - (a->index < b->index);
}

/* Score the "n" candidates "pool" by their code with the code model into
 * "order" (the key -INFINITY for those that did not build or whose code
 * was not read); return 0, or -1 when it cannot be done. */
static int score_code(search *s, candidate *pool, int n, ranked *order)
{
	loop_prog **progs = calloc((size_t)n, sizeof(*progs));
	tune_result *res = calloc((size_t)n, sizeof(*res));
	float *x = malloc((size_t)n * TUNE_RECORD_FEATURES * sizeof(float));
	float *y = malloc((size_t)n * sizeof(float));
	int *row = malloc((size_t)n * sizeof(int));
	int r = -1, rows = 0;
	char why[512] = "out of memory";
	if (progs && res && x && y && row) {
		for (int i = 0; i < n; i++) {
			progs[i] = lower_again(s, &pool[i]) == 0 ? pool[i].prog : NULL;
			tessel_ctx_clear_error(s->task->ctx);
		}
		if (tune_build_batch(s->measurer, progs, n, res, (volatile const int *)s->o->stop))
			snprintf(why, sizeof(why), "%s", res[0].msg);
		else {
			for (int i = 0; i < n; i++) {
				row[i] = -1;
				if (!progs[i] || res[i].error != TUNE_OK || !res[i].has_code)
					continue;
				float *xr = x + (size_t)rows * TUNE_RECORD_FEATURES;
				memcpy(xr, pool[i].features, TUNE_PROGRAM_FEATURES * sizeof(float));
				memcpy(xr + TUNE_PROGRAM_FEATURES, res[i].code, sizeof(res[i].code));
				row[i] = rows++;
			}
			r = rows == 0 ? 0 : tune_cost_model_predict(s->code_model, x,
				TUNE_RECORD_FEATURES, rows, y, why, sizeof(why));
		}
	}
	for (int i = 0; r == 0 && i < n; i++)
		order[i] = (ranked){ i, row[i] >= 0 ? y[row[i]] : -INFINITY };
	if (r)
		logf_(s, "cost model: the code was not scored (%s)", why);
	free(progs);
	free(res);
	free(x);
	free(y);
	free(row);
	return r;
}

/* Order "pool" of "n" best first: by the program model's score, then the
 * first code_shortlist x "want" of them again by the code model once it
 * is trained, those that do not build or lack code features after the
 * others in their order.  They are built for it, and measuring them
 * later finds them in the kernel cache.  Return how many the code model
 * ordered. */
static int order_pool(search *s, candidate *pool, int n, int want)
{
	qsort(pool, (size_t)n, sizeof(*pool), by_score_desc);
	int list = s->o->code_shortlist * want;
	int k = n < list ? n : list;
	if (!s->code_model || k <= want || !tune_measurer_reads_code(s->measurer))
		return 0;
	ranked *order = malloc((size_t)k * sizeof(*order));
	candidate *moved = malloc((size_t)k * sizeof(*moved));
	int ordered = 0;
	if (order && moved && score_code(s, pool, k, order) == 0) {
		qsort(order, (size_t)k, sizeof(*order), by_key_desc);
		for (int i = 0; i < k; i++)
			moved[i] = pool[order[i].index];
		memcpy(pool, moved, (size_t)k * sizeof(*pool));
		ordered = k;
	}
	free(order);
	free(moved);
	return ordered;
}

/* The times the structure "k" was measured: in the store, and among
 * the "ntaken" skeletons "taken" already in the batch. */
static int times_measured(const search *s, uint64_t k, const uint64_t *taken, int ntaken)
{
	int c = tune_novelty_count(&s->structures, k);
	for (int i = 0; i < ntaken; i++)
		c += taken[i] == k;
	return c;
}

/* The index of the best-scored member of the structure measured least
 * among "pool[from..n)". */
static int least_measured(const search *s, const candidate *pool, int from, int n,
	const uint64_t *taken, int ntaken)
{
	int best = from, best_count = INT_MAX;
	for (int i = from; i < n; i++) {
		int c = times_measured(s, tune_trace_skeleton(pool[i].trace), taken, ntaken);
		if (c < best_count || (c == best_count && pool[i].score > pool[best].score)) {
			best = i;
			best_count = c;
		}
	}
	return best;
}

/* Move the batch to measure to the front of "pool", ordered best first
 * (order_pool): the first ones, then a fraction for exploration, each
 * marked with its pick; return its size.  Before a model guides, the
 * exploration picks are drawn at random; after, each is the best-scored
 * member of the structure measured least so far, the batch's picks
 * counted (tuner/novelty.h). */
static int select_batch(search *s, candidate *pool, int n, int want)
{
	if (n <= want) {
		for (int i = 0; i < n; i++)
			pool[i].pick = TUNE_PICK_ALL;
		return n;
	}
	bool guided = model_ready(s);
	int explore = guided ? (int)lround(want * s->o->epsilon) : want;
	int greedy = want - explore;
	uint64_t taken[want > 0 ? want : 1];
	for (int i = 0; i < want; i++) {
		int j = i;
		if (i >= greedy)
			j = guided ? least_measured(s, pool, i, n, taken, i) :
				i + (int)(sch_rng_next(&s->rng) % (uint64_t)(n - i));
		candidate tmp = pool[i];
		pool[i] = pool[j];
		pool[j] = tmp;
		pool[i].pick = i < greedy ? TUNE_PICK_MODEL :
			guided ? TUNE_PICK_NOVEL : TUNE_PICK_RANDOM;
		taken[i] = tune_trace_skeleton(pool[i].trace);
	}
	return want;
}

/* ---- measuring and recording -------------------------------------------------- */

/* Tell the progress callback where the search stands ("runoff" > 0: its
 * run-off of at most that many records is starting). */
static void report_progress(search *s, bool done, int runoff)
{
	if (!s->o->progress)
		return;
	const tune_summary *m = s->sum;
	double elapsed = rt_now_s() - s->start_s;
	tune_progress p = {
		.trials = m->trials,
		.trials_total = s->o->trials,
		.errors = m->errors,
		.known = m->known,
		.round = m->rounds,
		.best_s = m->best_s,
		.default_s = m->default_s,
		.flops = s->task->flops,
		.elapsed_s = elapsed,
		.eta_s = m->trials ? elapsed / m->trials * (s->o->trials - m->trials) : NAN,
		.runoff = runoff,
		.done = done,
	};
	s->o->progress(&p, s->o->progress_arg);
}

/* Commit the measured "batch" ("res"[i] for batch[i]) in one transaction
 * and update the search: best, parents, training rows.  Candidates an
 * interrupt kept from being measured (not_run) are left out: nothing is
 * known of them, and a later run may measure them.  Each ok record
 * carries the batch's "scale" (NAN: unknown); a new best may become the
 * next control. */
static int record_batch(search *s, candidate *batch, const tune_result *res, int n,
	double scale)
{
	float *x = malloc((size_t)(n > 0 ? n : 1) * TUNE_RECORD_FEATURES * sizeof(float));
	if (!x)
		return fail(s, "out of memory");
	if (tune_db_begin(s->db)) {
		free(x);
		return fail(s, "%s", tune_db_error(s->db));
	}
	for (int i = 0; i < n; i++) {
		bool ok = res[i].error == TUNE_OK;
		if (res[i].not_run)
			continue;
		float *xi = x + (size_t)i * TUNE_RECORD_FEATURES;
		memcpy(xi, batch[i].features, TUNE_PROGRAM_FEATURES * sizeof(float));
		memcpy(xi + TUNE_PROGRAM_FEATURES, res[i].code, sizeof(res[i].code));
		tune_record r = {
			.workload_id = s->workload_id,
			.target_id = s->target_id,
			.trace = batch[i].trace,
			.features = xi,
			.nfeatures = res[i].has_code ? TUNE_RECORD_FEATURES :
				TUNE_PROGRAM_FEATURES,
			.cost_median_s = ok ? res[i].median_s : NAN,
			.cost_min_s = ok ? res[i].min_s : NAN,
			.cost_scale = scale,
			.pick = batch[i].pick,
			.code_key = res[i].code_key[0] ? res[i].code_key : NULL,
			.error_class = tune_error_name(res[i].error),
			.error_msg = ok ? NULL : res[i].msg,
		};
		if (set_has(&s->again.traces, batch[i].trace_hash) ?
		    tune_db_replace_record(s->db, &r) : tune_db_add_record(s->db, &r, NULL)) {
			char why[512];
			snprintf(why, sizeof(why), "%s", tune_db_error(s->db));
			tune_db_rollback(s->db);
			free(x);
			return fail(s, "recording a batch in %s: %s", tune_db_path(s->db), why);
		}
	}
	if (tune_db_commit(s->db)) {
		free(x);
		return fail(s, "committing a batch to %s: %s", tune_db_path(s->db),
			tune_db_error(s->db));
	}
	for (int i = 0; i < n; i++) {
		bool ok = res[i].error == TUNE_OK;
		double seconds = ok ? res[i].median_s : INFINITY;
		double label = tune_label_seconds(ok, res[i].median_s, res[i].min_s, scale);
		if (res[i].not_run)
			continue;
		s->sum->trials++;
		s->sum->measured_again += set_has(&s->again.traces, batch[i].trace_hash);
		s->sum->error_counts[res[i].error]++;
		s->sum->errors += !ok;
		s->sum->retaken += res[i].retakes;
		s->sum->disturbed += tune_result_disturbed(&res[i]);
		s->since_better++;
		if (set_add(&s->measured_traces, batch[i].trace_hash) < 0 ||
		    set_add(&s->measured_progs, batch[i].prog_hash) < 0 ||
		    tune_novelty_add(&s->structures, tune_trace_skeleton(batch[i].trace)) ||
		    train_add(&s->train, batch[i].features, label,
			    (uint32_t)s->workload_id) ||
		    (res[i].has_code && train_add(&s->code_train,
			    x + (size_t)i * TUNE_RECORD_FEATURES, label,
			    (uint32_t)s->workload_id))) {
			free(x);
			return fail(s, "out of memory");
		}
		if (batch[i].is_default && ok)
			s->sum->default_s = seconds;
		if (!ok)
			continue;
		elite_offer(s, batch[i].trace, seconds);
		if (label < s->least_label_s) {
			s->least_label_s = label;
			s->since_better = 0;
		}
		if (!(s->sum->best_s <= seconds) && res[i].checked) {
			s->sum->best_s = seconds;
			s->best_label_s = label;
			free(s->sum->best_trace);
			s->sum->best_trace = strdup(batch[i].trace);
			s->since_better = 0;
		}
	}
	free(x);
	if (s->sum->best_trace && (!s->control.trace || isfinite(scale)) &&
	    tune_control_follow(&s->control, s->task,
		s->sum->best_trace, s->best_label_s))
		logf_(s, "control: the best (%.4g ms in the labels' units) is measured "
			"with the next %s, to take over", s->best_label_s * 1e3,
			s->control.trace ? "batches" : "batch");
	return 0;
}

/* Say in the log when candidates were built whose code could not be
 * read (the code model leaves them out, and if none is read it never
 * trains): at the first, then each time their number has doubled. */
static void tell_unread_code(search *s)
{
	const char *why;
	int n = tune_measurer_code_unread(s->measurer, &why);
	if (n == 0 || n < 2 * s->code_unread_told)
		return;
	logf_(s, "cost model: the compiled code of %d candidate%s so far could not "
		"be read, so the code model leaves %s out (the last: %s)", n,
		n == 1 ? "" : "s", n == 1 ? "it" : "them", why);
	s->code_unread_told = n;
}

/* Retrain the model of the task's records over the prior, and the model
 * of their code features, when enough new ones came. */
static void retrain(search *s)
{
	if (orders_by_code(s))
		tell_unread_code(s);
	if (s->train.n >= s->o->min_train && s->train.n != s->model_rows) {
		tune_cost_model *m = train_model(s, &s->train, s->prior);
		if (m) {
			tune_cost_model_free(s->model);
			s->model = m;
			s->model_rows = s->train.n;
		}
	}
	if (orders_by_code(s) && s->code_train.n >= s->o->min_train &&
	    s->code_train.n != s->code_model_rows) {
		tune_cost_model *m = train_model(s, &s->code_train, NULL);
		if (m) {
			tune_cost_model_free(s->code_model);
			s->code_model = m;
			s->code_model_rows = s->code_train.n;
		}
	}
}

/* Append every row of "src" to "dst"; 0 or -1. */
static int train_append(train_set *dst, const train_set *src)
{
	for (int i = 0; i < src->n; i++)
		if (train_add(dst, src->x + (size_t)i * src->width, src->seconds[i],
			src->task[i]))
			return -1;
	return 0;
}

/* Save a model of every row for later runs: the task's model, or, when
 * it is one over the prior (which cannot be saved alone), one trained
 * on the task's rows and the sample together, as later runs read it. */
static void save_model(search *s)
{
	tune_cost_model *m = scorer(s), *whole = NULL;
	int rows = s->model_rows;
	if (s->prior) {
		train_set all = { .width = TUNE_PROGRAM_FEATURES };
		m = train_append(&all, &s->train) == 0 && train_append(&all, &s->others) == 0 ?
			train_model(s, &all, NULL) : NULL;
		whole = m;
		rows = all.n;
		train_free(&all);
	}
	if (!m)
		return;
	void *blob = NULL;
	size_t len = 0;
	char why[512];
	if (tune_cost_model_save(m, &blob, &len, why, sizeof(why)))
		logf_(s, "cost model: not saved (%s)", why);
	else if (!tune_db_save_model(s->db, s->task->target_kind, rows, blob, len,
		"{\"features\": \"program\"}"))
		logf_(s, "cost model: not saved (%s)", tune_db_error(s->db));
	free(blob);
	tune_cost_model_free(whole);
}

/* The default schedule as a candidate, unless it was measured before:
 * the bare op on a CPU, the default GPU schedule (schedule/gpu_default.c)
 * on a GPU. */
static int default_candidate(search *s, candidate *c)
{
	sch_state *st = sch_state_new(s->task->ctx, s->task->op);
	if (!st)
		return -1;
	if (tune_task_is_gpu(s->task) && sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS)) {
		sch_state_free(st);
		return -1;
	}
	hash_set seen = { 0 };
	int r = make_candidate(s, st, &seen, c);
	c->is_default = r == 0;
	c->pick = TUNE_PICK_DEFAULT;
	free(seen.slots);
	sch_state_free(st);
	return r;
}

/* Fill "out" (room for "room") with the next records to measure again,
 * as candidates; return how many. */
static int again_candidates(search *s, candidate *out, int room)
{
	int n = 0;
	hash_set seen = { 0 };
	while (n < room && s->again.next < s->again.n) {
		const char *trace = s->again.rec[s->again.next++].trace;
		s->again.taking = true;
		sch_trace *t = sch_trace_parse(s->task->ctx, "record", trace);
		sch_state *st = t ? sch_state_new(s->task->ctx, s->task->op) : NULL;
		if (st && sch_replay(st, t, "record") == 0 &&
		    make_candidate(s, st, &seen, &out[n]) == 0) {
			out[n].pick = TUNE_PICK_AGAIN;
			n++;
		}
		s->again.taking = false;
		tessel_ctx_clear_error(s->task->ctx);
		sch_state_free(st);
		sch_trace_free(t);
	}
	free(seen.slots);
	return n;
}

/* Measure again, once and each alone, the candidates of the batch
 * ("progs", results "res") that would become the best, fastest first
 * while one is faster than the best so far, checking each against the
 * interpreter, and keep the slower of its two medians: of many noisy
 * measurements the fastest is partly the luckiest, and a best that does
 * not hold on a second run should neither steer the search nor be
 * applied.  The fastest repeat stays the batch's, timed in turns with
 * the rest of it and its control, as the label needs.  A second run that
 * fails makes the candidate's result that failure (one cut short by an
 * interrupt keeps the first).  Return 0, or -1 when the measurer failed (message in
 * res[0].msg). */
static int confirm_bests(search *s, loop_prog **progs, tune_result *res, int n)
{
	double best = isnan(s->sum->best_s) ? INFINITY : s->sum->best_s;
	int order[n], k = 0;
	for (int i = 0; i < n; i++) {
		if (res[i].error != TUNE_OK)
			continue;
		int j = k++;
		for (; j > 0 && res[order[j - 1]].median_s > res[i].median_s; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (int j = 0; j < k && res[order[j]].median_s < best; j++) {
		int i = order[j];
		tune_result *r = &res[i], second = { .error = TUNE_ERR_RUNTIME };
		tune_measurer_set_best(s->measurer, INFINITY);
		if (tune_measure_batch(s->measurer, &progs[i], 1, &second,
			(volatile const int *)s->o->stop)) {
			res[0] = second;
			return -1;
		}
		if (second.error != TUNE_OK && s->o->stop && *s->o->stop)
			break;
		if (second.error != TUNE_OK) {
			*r = second;
			continue;
		}
		r->median_s = fmax(r->median_s, second.median_s);
		r->runs += second.runs;
		r->checked = second.checked;
		r->rel_error = second.rel_error;
		if (r->checked && r->median_s < best)
			best = r->median_s;
	}
	tune_measurer_set_best(s->measurer, best);
	return 0;
}

/* Measure the "n" programs "progs" (room for n + 2) and with them the
 * control and the next control, results in "res" (room for n + 2), and
 * set "*scale" to the batch's scale (NAN: no control, or it failed; 1
 * where the next control measured here becomes the first).  A batch the
 * control says was measured in a disturbed moment of the machine
 * (tune_control_disturbed) is measured again after a pause (1 s, then
 * 2 s), up to TUNE_CONTROL_RETRIES times, and the attempt where the
 * control's median was lowest kept.
 * Return 0, or -1 when the measurer failed (message in res[0].msg). */
static int measure_with_control(search *s, loop_prog **progs, int n,
	tune_result *res, double *scale)
{
	int total = n, next = -1;
	if (s->control.prog)
		progs[total++] = s->control.prog;
	if (s->control.next_prog) {
		next = total;
		progs[total++] = s->control.next_prog;
	}
	tune_result again[total];
	double usual = tune_control_usual(&s->control), kept_median = NAN;
	for (int attempt = 0; attempt <= TUNE_CONTROL_RETRIES; attempt++) {
		tune_result *out = attempt ? again : res;
		for (int i = 0; i < total; i++)
			out[i] = (tune_result){ .error = TUNE_ERR_RUNTIME };
		if (tune_measure_batch(s->measurer, progs, total, out,
			(volatile const int *)s->o->stop)) {
			res[0] = out[0];
			return -1;
		}
		if (!s->control.prog)
			break;
		double sc = tune_control_scale(&s->control, &out[n]);
		if (attempt == 0 || (isfinite(sc) && !(out[n].median_s >= kept_median))) {
			if (attempt)
				memcpy(res, again, (size_t)total * sizeof(*res));
			*scale = sc;
			kept_median = res[n].median_s;
		}
		if (!tune_control_disturbed(&s->control, &res[n], *scale) ||
		    attempt == TUNE_CONTROL_RETRIES || (s->o->stop && *s->o->stop))
			break;
		logf_(s, "control: the machine ran this batch at %.3f of the control's "
			"time (%.3f usually), its visits at %.3f of its fastest; measuring "
			"it again", sc, usual, out[n].median_s / out[n].min_s);
		s->sum->batches_retaken++;
		nanosleep(&(struct timespec){ .tv_sec = attempt + 1 }, NULL);
	}
	tune_control_note(&s->control, *scale);
	if (next >= 0 && tune_control_hand_over(&s->control, &res[next], *scale)) {
		if (!isfinite(*scale))
			*scale = 1;
		double lo = INFINITY, hi = 0;
		for (int i = 0; i < s->control.next_nrefs; i++) {
			lo = fmin(lo, s->control.next_refs[i]);
			hi = fmax(hi, s->control.next_refs[i]);
		}
		if (s->control.next_nrefs > 1)
			logf_(s, "control: %.4g ms in the labels' units from now on (the "
				"median of %d batches, %.4g to %.4g ms)", s->control.ref_s * 1e3,
				s->control.next_nrefs, lo * 1e3, hi * 1e3);
		else
			logf_(s, "control: %.4g ms in the labels' units from now on",
				s->control.ref_s * 1e3);
	}
	return 0;
}

/* One round: evolve, pick a batch, measure (bests twice), record,
 * retrain. */
static int round_(search *s, candidate *pool, int cap, tune_result *res)
{
	int left = s->o->trials - s->sum->trials;
	int want = s->o->batch < left ? s->o->batch : left;
	int n = 0, first = 0;
	double t0 = rt_now_s();
	if (s->sum->rounds == 0 && default_candidate(s, &pool[0]) == 0)
		n = first = 1;
	n = first += again_candidates(s, pool + first, want - first);
	n += evolve(s, pool + first, cap - first);
	double t_evolved = rt_now_s();
	int by_code = order_pool(s, pool + first, n - first, want - first);
	double t1 = rt_now_s();
	int picked = first + select_batch(s, pool + first, n - first, want - first);
	if (picked == 0 || (s->o->stop && *s->o->stop)) {
		for (int i = 0; i < n; i++)
			candidate_clear(&pool[i]);
		return picked == 0;
	}
	loop_prog *progs[picked + 2];
	for (int i = 0; i < picked; i++) {
		if (lower_again(s, &pool[i])) {
			for (int k = 0; k < n; k++)
				candidate_clear(&pool[k]);
			return fail(s, "lowering a candidate again: %s",
				tessel_ctx_error(s->task->ctx)->message);
		}
		progs[i] = pool[i].prog;
	}
	double scale = NAN;
	int workers = tune_measurer_workers_started(s->measurer);
	tune_measure_times before = tune_measurer_times(s->measurer);
	if (measure_with_control(s, progs, picked, res, &scale) ||
	    confirm_bests(s, progs, res, picked))
		return fail(s, "measuring: %s", res[0].msg);
	double t2 = rt_now_s();
	int r = record_batch(s, pool, res, picked, scale);
	for (int i = 0; i < n; i++)
		candidate_clear(&pool[i]);
	s->sum->rounds++;
	if (r)
		return r;
	retrain(s);
	workers = tune_measurer_workers_started(s->measurer) - workers;
	tune_measure_times after = tune_measurer_times(s->measurer);
	logf_(s, "round %d: %d candidates evolved in %.2f s, %d ordered by their code in "
		"%.2f s, %d measured in %.2f s (building "
		"%.2f s, running %.2f s: checking %.2f s, opening the device %.2f s, in the "
		"runner %.2f s, timed runs %.2f s) by %d worker%s (the machine at %.3f of the "
		"control's time), recorded and trained in %.2f s",
		s->sum->rounds, n, t_evolved - t0, by_code, t1 - t_evolved, picked, t2 - t1,
		after.build_s - before.build_s,
		after.run_s - before.run_s, after.check_s - before.check_s,
		after.open_s - before.open_s, after.runner_s - before.runner_s,
		after.timed_s - before.timed_s, workers, workers == 1 ? "" : "s", scale,
		rt_now_s() - t2);
	report_progress(s, false, 0);
	return 0;
}

/* Hold the run-off of the task's fastest records and say what it found;
 * the best is then its winner.  Return 0, or -1 with the reason in the
 * error. */
static int run_runoff(search *s)
{
	tune_runoff_summary *ro = &s->sum->runoff;
	double t0 = rt_now_s();
	tune_measure_times before = tune_measurer_times(s->measurer);
	if (s->o->runoff >= 2)
		report_progress(s, false, s->o->runoff);
	if (tune_runoff(s->task, s->db, s->workload_id, s->target_id, s->measurer,
		s->o->runoff, (volatile const int *)s->o->stop, ro, s->err, s->errlen))
		return -1;
	if (s->o->stop && *s->o->stop)
		s->sum->interrupted = true;
	if (ro->unlowered)
		logf_(s, "run-off: %d of the fastest records no longer lower; left out",
			ro->unlowered);
	if (!ro->entrants)
		return 0;
	tune_measure_times after = tune_measurer_times(s->measurer);
	logf_(s, "run-off: the %d fastest records measured again together in %.1f s "
		"(building %.2f s, running %.2f s: checking %.2f s, timed runs %.2f s; "
		"%d failed): record %lld wins at %.4g ms (recorded at %.4g ms); the "
		"fastest recorded, record %lld, took %.4g ms there", ro->entrants,
		rt_now_s() - t0, after.build_s - before.build_s, after.run_s - before.run_s,
		after.check_s - before.check_s, after.timed_s - before.timed_s, ro->failed,
		(long long)ro->winner, ro->winner_s * 1e3, ro->winner_recorded_s * 1e3,
		(long long)ro->fastest, ro->fastest_s * 1e3);
	return 0;
}

static int check_opts(search *s)
{
	const tune_search_opts *o = s->o;
	if (o->trials < 1)
		return fail(s, "the number of trials must be positive, not %d", o->trials);
	if (o->batch < 1 || o->population < 1 || o->generations < 0 || o->evolve_jobs < 0 ||
	    o->other_rows < 0 || o->code_shortlist < 0 || o->runoff < 0)
		return fail(s, "batch and population must be positive, generations, "
			"evolve_jobs, other_rows, code_shortlist and runoff not negative");
	if (!(o->epsilon >= 0 && o->epsilon <= 1))
		return fail(s, "epsilon must be in [0, 1]");
	if (!(o->measure.timeout_s > 0))
		return fail(s, "the timeout must be positive");
	return 0;
}

static int search_setup(search *s)
{
	if (check_opts(s))
		return -1;
	s->target_id = tune_db_target(s->db, s->task->target_kind, s->task->target);
	s->workload_id = s->target_id ? tune_db_workload(s->db, s->task->key,
		s->task->op_text, s->task->flops > 0 ? s->task->flops : NAN) : 0;
	if (!s->target_id || !s->workload_id)
		return fail(s, "%s", tune_db_error(s->db));
	s->space = tune_space_new(s->task);
	if (!s->space)
		return fail(s, "analysing the op: %s", tessel_ctx_error(s->task->ctx)->message);
	for (int i = 0; i < tune_space_num_sketches(s->space); i++)
		logf_(s, "sketch %d: %s", i, tune_space_sketch_name(s->space, i));
	tune_measure_opts mo = s->o->measure;
	mo.read_code = orders_by_code(s);
	s->measurer = tune_measurer_new(s->task, &mo, s->err, s->errlen);
	if (!s->measurer)
		return -1;
	if (mo.read_code && !tune_task_is_gpu(s->task) &&
	    !tune_measurer_reads_code(s->measurer))
		logf_(s, "cost model: no disassembler (objdump, or $OBJDUMP) to read the "
			"candidates' compiled code; the model of their programs alone picks");
	s->sample = tune_reservoir_make(s->o->other_rows, s->o->seed);
	if (load_store(s))
		return -1;
	s->copies = tune_fork_pool_new(s->o->evolve_jobs > 0 ? s->o->evolve_jobs :
		rt_num_cpus(), make_member, s);
	return 0;
}

static void search_teardown(search *s)
{
	tune_fork_pool_free(s->copies);
	tune_control_clear(&s->control);
	for (int i = 0; i < s->nelites; i++)
		sch_trace_free(s->elites[i].trace);
	tune_space_free(s->space);
	tune_measurer_free(s->measurer);
	tune_cost_model_free(s->model);
	tune_cost_model_free(s->prior);
	tune_cost_model_free(s->code_model);
	train_free(&s->train);
	train_free(&s->code_train);
	train_free(&s->others);
	free(s->stale.id);
	free(s->stale.row);
	free(s->measured_traces.slots);
	free(s->measured_progs.slots);
	for (int i = 0; i < s->again.n; i++)
		again_record_free(&s->again.rec[i]);
	free(s->again.rec);
	free(s->again.ids.slots);
	free(s->again.traces.slots);
	tune_novelty_clear(&s->structures);
}

int tune_search(const tune_task *task, tune_db *db, const tune_search_opts *o,
	tune_summary *out, char *err, size_t errlen)
{
	tune_search_opts defaults = tune_search_opts_default();
	memset(out, 0, sizeof(*out));
	out->best_s = NAN;
	out->default_s = NAN;
	search s = {
		.task = task, .db = db, .o = o ? o : &defaults, .sum = out,
		.err = err, .errlen = errlen, .start_s = rt_now_s(),
		.train.width = TUNE_PROGRAM_FEATURES,
		.others.width = TUNE_PROGRAM_FEATURES,
		.code_train.width = TUNE_RECORD_FEATURES,
		.least_label_s = INFINITY,
	};
	s.rng = s.o->seed ^ 0x9e3779b97f4a7c15ull;
	int r = search_setup(&s);
	int cap = s.o->population * (s.o->generations + 1) + 1;
	candidate *pool = r ? NULL : calloc((size_t)cap, sizeof(*pool));
	tune_result *res = r ? NULL : calloc((size_t)s.o->batch + 2, sizeof(*res));
	if (!r && (!pool || !res))
		r = fail(&s, "out of memory");
	while (r == 0 && out->trials < s.o->trials) {
		if (s.o->stop && *s.o->stop) {
			out->interrupted = true;
			break;
		}
		if (s.o->early_stop > 0 && s.since_better >= s.o->early_stop) {
			out->early_stopped = true;
			break;
		}
		r = round_(&s, pool, cap, res);
		if (r > 0) {
			logf_(&s, "the search space has no new candidates left");
			out->exhausted = true;
			r = 0;
			break;
		}
	}
	if (s.o->stop && *s.o->stop)
		out->interrupted = true;
	if (r == 0 && !out->interrupted)
		r = run_runoff(&s);
	save_model(&s);
	tune_record best;
	if (s.workload_id && tune_db_best(db, s.workload_id, s.target_id, &best) == 0) {
		out->best_record = best.id;
		if (isfinite(best.runoff_s)) {
			out->best_s = best.runoff_s;
			free(out->best_trace);
			out->best_trace = strdup(best.trace);
		}
		tune_record_clear(&best);
	}
	report_progress(&s, true, 0);
	free(pool);
	free(res);
	search_teardown(&s);
	return r;
}
