/* The cost model over XGBoost's C API (tuner/model.h).  Every XGBoost
 * call is checked; its message (XGBGetLastError) becomes ours.
 *
 * Training sorts the records by task (stably) so that each task is one
 * contiguous query group, as rank:pairwise needs (Burges, "From RankNet
 * to LambdaRank to LambdaMART", 2010: the pairwise logistic loss); the
 * regression objective ignores the groups.  Tessel's options and the
 * feature version travel as booster attributes inside the JSON model.
 * A model over a prior gives every row the prior's score as its base
 * margin, in training and in prediction alike, so that its trees add to
 * the prior's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "tuner/features.h"
#include "tuner/model.h"

#define ATTR_PARAMS "tessel_params"
#define ATTR_VERSION "tessel_features_version"

struct tune_cost_model {
	int nfeatures;
	tune_cost_model_opts opts;
	BoosterHandle booster;   /* NULL until trained */
	tune_cost_model *prior;  /* borrowed; NULL: none */
};

static const char *const objective_names[TUNE_OBJ_COUNT] = {
	"rank:pairwise", "reg:squarederror"
};

tune_cost_model_opts tune_cost_model_opts_default(void)
{
	return (tune_cost_model_opts){
		.objective = TUNE_OBJ_RANK,
		.rounds = 200,
		.max_depth = 6,
		.eta = 0.1,
		.min_child_weight = 1,
		.subsample = 1,
		.colsample = 1,
		.pair_samples = 20,
		.seed = 0,
		.nthread = 0,
	};
}

const char *tune_objective_name(tune_objective o)
{
	return (unsigned)o < TUNE_OBJ_COUNT ? objective_names[o] : NULL;
}

int tune_objective_parse(const char *name)
{
	if (strcmp(name, "rank") == 0)
		return TUNE_OBJ_RANK;
	if (strcmp(name, "reg") == 0)
		return TUNE_OBJ_REGRESSION;
	for (int o = 0; o < TUNE_OBJ_COUNT; o++)
		if (strcmp(name, objective_names[o]) == 0)
			return o;
	return -1;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write the message "fmt" into "err" of size "errlen"; return -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Check the XGBoost status "rc" of the call "what": 0, or -1 with
 * XGBoost's last error in "err". */
static int xgb_check(int rc, const char *what, char *err, size_t errlen)
{
	if (rc == 0)
		return 0;
	return fail(err, errlen, "xgboost: %s: %s", what, XGBGetLastError());
}

/* Check "o": return 0, or -1 naming the first invalid option in "err". */
static int check_opts(const tune_cost_model_opts *o, char *err, size_t errlen)
{
	if ((unsigned)o->objective >= TUNE_OBJ_COUNT)
		return fail(err, errlen, "unknown objective %d", (int)o->objective);
	if (o->rounds < 1 || o->rounds > 100000)
		return fail(err, errlen, "rounds must be in [1, 100000], not %d", o->rounds);
	if (o->max_depth < 1 || o->max_depth > 64)
		return fail(err, errlen, "max_depth must be in [1, 64], not %d", o->max_depth);
	if (!(o->eta > 0 && o->eta <= 1))
		return fail(err, errlen, "eta must be in (0, 1], not %g", o->eta);
	if (!(o->min_child_weight >= 0) || !isfinite(o->min_child_weight))
		return fail(err, errlen, "min_child_weight must be >= 0");
	if (!(o->subsample > 0 && o->subsample <= 1))
		return fail(err, errlen, "subsample must be in (0, 1], not %g", o->subsample);
	if (!(o->colsample > 0 && o->colsample <= 1))
		return fail(err, errlen, "colsample must be in (0, 1], not %g", o->colsample);
	if (o->pair_samples < 1 || o->pair_samples > 1000)
		return fail(err, errlen, "pair_samples must be in [1, 1000], not %d",
			o->pair_samples);
	if (o->nthread < 0)
		return fail(err, errlen, "nthread must be >= 0, not %d", o->nthread);
	return 0;
}

tune_cost_model *tune_cost_model_new(int nfeatures, const tune_cost_model_opts *opts,
	char *err, size_t errlen)
{
	tune_cost_model_opts o = opts ? *opts : tune_cost_model_opts_default();
	if (nfeatures < 1) {
		fail(err, errlen, "a model needs at least one feature, not %d", nfeatures);
		return NULL;
	}
	if (check_opts(&o, err, errlen))
		return NULL;
	tune_cost_model *m = calloc(1, sizeof(*m));
	if (!m) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	m->nfeatures = nfeatures;
	m->opts = o;
	return m;
}

void tune_cost_model_free(tune_cost_model *m)
{
	if (!m)
		return;
	if (m->booster)
		XGBoosterFree(m->booster);
	free(m);
}

int tune_cost_model_nfeatures(const tune_cost_model *m)
{
	return m->nfeatures;
}

const tune_cost_model_opts *tune_cost_model_options(const tune_cost_model *m)
{
	return &m->opts;
}

bool tune_cost_model_trained(const tune_cost_model *m)
{
	return m->booster != NULL;
}

int tune_cost_model_set_prior(tune_cost_model *m, tune_cost_model *prior, char *err,
	size_t errlen)
{
	if (prior && !prior->booster)
		return fail(err, errlen, "the prior is not trained");
	if (prior && prior->nfeatures != m->nfeatures)
		return fail(err, errlen, "the prior has %d features, the model %d",
			prior->nfeatures, m->nfeatures);
	if (prior == m)
		return fail(err, errlen, "a model cannot be its own prior");
	m->prior = prior;
	return 0;
}

/* Set the XGBoost parameter "name" of "b" to the formatted value. */
static int set_param(BoosterHandle b, char *err, size_t errlen, const char *name,
	const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int set_param(BoosterHandle b, char *err, size_t errlen, const char *name,
	const char *fmt, ...)
{
	char value[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	return xgb_check(XGBoosterSetParam(b, name, value), name, err, errlen);
}

/* Write tessel's options "o" in the text form of the "tessel_params"
 * attribute into "buf" of size "len". */
static void params_text(const tune_cost_model_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s %d %d %.17g %.17g %.17g %.17g %llu %d",
		objective_names[o->objective], o->rounds, o->max_depth, o->eta,
		o->min_child_weight, o->subsample, o->colsample,
		(unsigned long long)o->seed, o->pair_samples);
}

/* Parse the "tessel_params" text "s" into "o"; return 0 or -1.  Models
 * saved before pair_samples existed have 8 fields and drew one pair. */
static int params_parse(const char *s, tune_cost_model_opts *o)
{
	char objective[32];
	unsigned long long seed;
	o->pair_samples = 1;
	int n = sscanf(s, "%31s %d %d %lg %lg %lg %lg %llu %d", objective, &o->rounds,
		&o->max_depth, &o->eta, &o->min_child_weight, &o->subsample,
		&o->colsample, &seed, &o->pair_samples);
	if (n != 8 && n != 9)
		return -1;
	int obj = tune_objective_parse(objective);
	if (obj < 0)
		return -1;
	o->objective = (tune_objective)obj;
	o->seed = seed;
	return 0;
}

/* Set the training parameters and tessel's attributes of "b" from "m". */
static int configure(const tune_cost_model *m, BoosterHandle b, char *err, size_t errlen)
{
	const tune_cost_model_opts *o = &m->opts;
	char params[256], version[16];
	params_text(o, params, sizeof(params));
	snprintf(version, sizeof(version), "%d", TUNE_FEATURES_VERSION);
	if (set_param(b, err, errlen, "verbosity", "0") ||
	    set_param(b, err, errlen, "objective", "%s", objective_names[o->objective]) ||
	    set_param(b, err, errlen, "tree_method", "hist") ||
	    set_param(b, err, errlen, "max_depth", "%d", o->max_depth) ||
	    set_param(b, err, errlen, "eta", "%.17g", o->eta) ||
	    set_param(b, err, errlen, "min_child_weight", "%.17g", o->min_child_weight) ||
	    set_param(b, err, errlen, "subsample", "%.17g", o->subsample) ||
	    set_param(b, err, errlen, "colsample_bytree", "%.17g", o->colsample) ||
	    set_param(b, err, errlen, "seed", "%llu", (unsigned long long)(o->seed & 0x7fffffff)))
		return -1;
	if (o->nthread > 0 && set_param(b, err, errlen, "nthread", "%d", o->nthread))
		return -1;
	if (o->objective == TUNE_OBJ_RANK &&
	    set_param(b, err, errlen, "num_pairsample", "%d", o->pair_samples))
		return -1;
	return xgb_check(XGBoosterSetAttr(b, ATTR_PARAMS, params), "set attribute",
		       err, errlen) ||
	       xgb_check(XGBoosterSetAttr(b, ATTR_VERSION, version), "set attribute",
		       err, errlen) ? -1 : 0;
}

typedef struct task_row {
	uint32_t task;
	int row;
} task_row;

static int compare_task_rows(const void *a, const void *b)
{
	const task_row *x = a, *y = b;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return (x->row > y->row) - (x->row < y->row);
}

/* Return the rows of "task" (n of them) sorted by task, then row; NULL
 * when memory runs out. */
static task_row *sort_by_task(const uint32_t *task, int n)
{
	task_row *r = malloc((size_t)n * sizeof(*r));
	if (!r)
		return NULL;
	for (int i = 0; i < n; i++)
		r[i] = (task_row){ task[i], i };
	qsort(r, (size_t)n, sizeof(*r), compare_task_rows);
	return r;
}

/* The training set of tune_cost_model_train: rows grouped by task. */
typedef struct train_set {
	float *X, *y;
	unsigned *groups;
	int ngroups;
} train_set;

static void train_set_free(train_set *s)
{
	free(s->X);
	free(s->y);
	free(s->groups);
}

static int make_train_set(train_set *s, const float *X, int ncols, const float *y,
	const uint32_t *task, int n)
{
	memset(s, 0, sizeof(*s));
	task_row *order = sort_by_task(task, n);
	s->X = malloc((size_t)n * (size_t)ncols * sizeof(float));
	s->y = malloc((size_t)n * sizeof(float));
	s->groups = calloc((size_t)n, sizeof(unsigned));
	if (!order || !s->X || !s->y || !s->groups) {
		free(order);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int r = order[i].row;
		memcpy(s->X + (size_t)i * ncols, X + (size_t)r * ncols,
			(size_t)ncols * sizeof(float));
		s->y[i] = y[r];
		if (i == 0 || order[i].task != order[i - 1].task)
			s->ngroups++;
		s->groups[s->ngroups - 1]++;
	}
	free(order);
	return 0;
}

/* Boost "m"'s options' rounds on "dtrain" into a new booster in "out". */
static int boost(const tune_cost_model *m, DMatrixHandle dtrain, BoosterHandle *out,
	char *err, size_t errlen)
{
	BoosterHandle b = NULL;
	if (xgb_check(XGBoosterCreate(&dtrain, 1, &b), "create booster", err, errlen))
		return -1;
	int r = configure(m, b, err, errlen);
	for (int i = 0; r == 0 && i < m->opts.rounds; i++)
		r = xgb_check(XGBoosterUpdateOneIter(b, i, dtrain), "boost", err, errlen);
	if (r) {
		XGBoosterFree(b);
		return -1;
	}
	*out = b;
	return 0;
}

/* Set the prior's scores of the "n" rows "X" of "d" as its base margin
 * when "m" has a prior. */
static int set_base_margin(const tune_cost_model *m, DMatrixHandle d, const float *X,
	int n, char *err, size_t errlen)
{
	if (!m->prior)
		return 0;
	float *margin = malloc((size_t)n * sizeof(float));
	if (!margin)
		return fail(err, errlen, "out of memory");
	int r = tune_cost_model_predict(m->prior, X, m->nfeatures, n, margin, err, errlen);
	if (r == 0)
		r = xgb_check(XGDMatrixSetFloatInfo(d, "base_margin", margin, (bst_ulong)n),
			"set base margin", err, errlen);
	free(margin);
	return r;
}

int tune_cost_model_train(tune_cost_model *m, const float *X, int ncols, const float *y,
	const uint32_t *task, int n, char *err, size_t errlen)
{
	if (ncols != m->nfeatures)
		return fail(err, errlen, "the records have %d features, the model %d",
			ncols, m->nfeatures);
	if (n < 1)
		return fail(err, errlen, "no records to train on");
	for (int i = 0; i < n; i++)
		if (!isfinite(y[i]))
			return fail(err, errlen, "label %d is not finite", i);
	train_set s;
	if (make_train_set(&s, X, ncols, y, task, n)) {
		train_set_free(&s);
		return fail(err, errlen, "out of memory");
	}
	DMatrixHandle d = NULL;
	BoosterHandle b = NULL;
	int r = xgb_check(XGDMatrixCreateFromMat(s.X, (bst_ulong)n, (bst_ulong)ncols,
		NAN, &d), "create matrix", err, errlen);
	if (r == 0)
		r = xgb_check(XGDMatrixSetFloatInfo(d, "label", s.y, (bst_ulong)n),
			"set labels", err, errlen);
	if (r == 0)
		r = xgb_check(XGDMatrixSetUIntInfo(d, "group", s.groups,
			(bst_ulong)s.ngroups), "set groups", err, errlen);
	if (r == 0)
		r = set_base_margin(m, d, s.X, n, err, errlen);
	if (r == 0)
		r = boost(m, d, &b, err, errlen);
	if (d)
		XGDMatrixFree(d);
	train_set_free(&s);
	if (r)
		return -1;
	if (m->booster)
		XGBoosterFree(m->booster);
	m->booster = b;
	return 0;
}

int tune_cost_model_predict(tune_cost_model *m, const float *X, int ncols, int n,
	float *out, char *err, size_t errlen)
{
	if (!m->booster)
		return fail(err, errlen, "the model is not trained");
	if (ncols != m->nfeatures)
		return fail(err, errlen, "the rows have %d features, the model %d",
			ncols, m->nfeatures);
	if (n < 1)
		return 0;
	DMatrixHandle d = NULL;
	bst_ulong len = 0;
	const float *res = NULL;
	int r = xgb_check(XGDMatrixCreateFromMat(X, (bst_ulong)n, (bst_ulong)ncols, NAN,
		&d), "create matrix", err, errlen);
	if (r == 0)
		r = set_base_margin(m, d, X, n, err, errlen);
	if (r == 0)
		r = xgb_check(XGBoosterPredict(m->booster, d, 0, 0, 0, &len, &res),
			"predict", err, errlen);
	if (r == 0 && len != (bst_ulong)n)
		r = fail(err, errlen, "xgboost: predicted %llu values for %d rows",
			(unsigned long long)len, n);
	if (r == 0)
		memcpy(out, res, (size_t)n * sizeof(float));
	if (d)
		XGDMatrixFree(d);
	return r;
}

int tune_cost_model_save(tune_cost_model *m, void **blob, size_t *len, char *err,
	size_t errlen)
{
	if (!m->booster)
		return fail(err, errlen, "the model is not trained");
	if (m->prior)
		return fail(err, errlen, "a model over a prior cannot be saved alone");
	bst_ulong n = 0;
	const char *buf = NULL;
	if (xgb_check(XGBoosterSaveModelToBuffer(m->booster, "{\"format\": \"json\"}",
		    &n, &buf), "save", err, errlen))
		return -1;
	void *copy = malloc(n ? (size_t)n : 1);
	if (!copy)
		return fail(err, errlen, "out of memory");
	memcpy(copy, buf, (size_t)n);
	*blob = copy;
	*len = (size_t)n;
	return 0;
}

/* Read the attribute "key" of "b" into "buf" of size "size"; return 0, or
 * -1 with the reason in "err" when it is absent. */
static int get_attr(BoosterHandle b, const char *key, char *buf, size_t size,
	char *err, size_t errlen)
{
	const char *value = NULL;
	int success = 0;
	if (xgb_check(XGBoosterGetAttr(b, key, &value, &success), "get attribute",
		    err, errlen))
		return -1;
	if (!success || !value)
		return fail(err, errlen, "not a tessel model (no attribute %s)", key);
	snprintf(buf, size, "%s", value);
	return 0;
}

/* Check what "b" says of itself against "nfeatures" and fill "m". */
static int adopt_loaded(tune_cost_model *m, BoosterHandle b, int nfeatures, char *err,
	size_t errlen)
{
	char params[256], version[32];
	bst_ulong nf = 0;
	if (get_attr(b, ATTR_VERSION, version, sizeof(version), err, errlen) ||
	    get_attr(b, ATTR_PARAMS, params, sizeof(params), err, errlen) ||
	    xgb_check(XGBoosterGetNumFeature(b, &nf), "number of features", err, errlen))
		return -1;
	if (atoi(version) != TUNE_FEATURES_VERSION)
		return fail(err, errlen, "the model was trained on features version %s, "
			"this build computes version %d", version, TUNE_FEATURES_VERSION);
	if (params_parse(params, &m->opts) || check_opts(&m->opts, err, errlen))
		return fail(err, errlen, "bad %s attribute '%s'", ATTR_PARAMS, params);
	if (nf < 1 || nf > 1000000)
		return fail(err, errlen, "the model has %llu features",
			(unsigned long long)nf);
	if (nfeatures > 0 && (bst_ulong)nfeatures != nf)
		return fail(err, errlen, "the model has %llu features, not %d",
			(unsigned long long)nf, nfeatures);
	m->nfeatures = (int)nf;
	m->booster = b;
	return 0;
}

tune_cost_model *tune_cost_model_load(const void *blob, size_t len, int nfeatures,
	const tune_cost_model_opts *opts, char *err, size_t errlen)
{
	tune_cost_model *m = calloc(1, sizeof(*m));
	BoosterHandle b = NULL;
	if (!m) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	m->opts = tune_cost_model_opts_default();
	m->opts.nthread = opts ? opts->nthread : m->opts.nthread;
	int r = xgb_check(XGBoosterCreate(NULL, 0, &b), "create booster", err, errlen);
	if (r == 0)
		r = xgb_check(XGBoosterLoadModelFromBuffer(b, blob, (bst_ulong)len),
			"load", err, errlen);
	if (r == 0)
		r = adopt_loaded(m, b, nfeatures, err, errlen);
	if (r == 0 && m->opts.nthread > 0)
		r = set_param(b, err, errlen, "nthread", "%d", m->opts.nthread);
	if (r == 0)
		return m;
	if (b)
		XGBoosterFree(b);
	m->booster = NULL;
	tune_cost_model_free(m);
	return NULL;
}

/* Whether the labels "a" and "b" differ by more than the factor
 * "margin". */
static bool labels_differ(float a, float b, double margin)
{
	float hi = a > b ? a : b, lo = a > b ? b : a;
	return hi > lo && (double)hi > margin * (double)lo;
}

/* The pairwise accuracy of the task group "r"[0..n) over the pairs whose
 * labels differ by more than "margin": correct pairs (a tie in scores one
 * half) into "correct", pairs into "pairs". */
static void group_pairs(const task_row *r, int n, const float *pred, const float *y,
	double margin, double *correct, double *pairs)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			float yi = y[r[i].row], yj = y[r[j].row];
			float pi = pred[r[i].row], pj = pred[r[j].row];
			if (!labels_differ(yi, yj, margin))
				continue;
			*pairs += 1;
			if (pi == pj)
				*correct += 0.5;
			else if ((pi > pj) == (yi > yj))
				*correct += 1;
		}
}

int tune_pairwise_counts(const float *pred, const float *y, const uint32_t *task,
	int n, double margin, double *correct, double *pairs)
{
	*correct = *pairs = 0;
	if (n < 2)
		return 0;
	task_row *r = sort_by_task(task, n);
	if (!r)
		return -1;
	for (int start = 0; start < n;) {
		int end = start + 1;
		while (end < n && r[end].task == r[start].task)
			end++;
		group_pairs(r + start, end - start, pred, y, margin, correct, pairs);
		start = end;
	}
	free(r);
	return 0;
}

double tune_pairwise_accuracy_margin(const float *pred, const float *y,
	const uint32_t *task, int n, double margin)
{
	double correct, pairs;
	if (tune_pairwise_counts(pred, y, task, n, margin, &correct, &pairs))
		return -1;
	return pairs > 0 ? correct / pairs : -1;
}

double tune_pairwise_accuracy(const float *pred, const float *y,
	const uint32_t *task, int n)
{
	return tune_pairwise_accuracy_margin(pred, y, task, n, 1);
}

int tune_normalize_throughput(const double *seconds, const uint32_t *task, int n,
	float *y)
{
	if (n < 1)
		return 0;
	task_row *r = sort_by_task(task, n);
	if (!r)
		return -1;
	for (int start = 0; start < n;) {
		int end = start;
		double best = INFINITY;
		while (end < n && r[end].task == r[start].task) {
			double s = seconds[r[end].row];
			if (s > 0 && isfinite(s) && s < best)
				best = s;
			end++;
		}
		for (int i = start; i < end; i++) {
			double s = seconds[r[i].row];
			y[r[i].row] = s > 0 && isfinite(s) ? (float)(best / s) : 0.0f;
		}
		start = end;
	}
	free(r);
	return 0;
}
