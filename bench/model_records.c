/* The cost model on the tuner's own records: the model the search uses
 * (tuner/model.h, default options), trained on the first --train records
 * of a record store in the order they were measured (every workload of
 * the target kind together, as the tuner trains), scored on the records
 * measured after them by the pairwise ranking accuracy within each task
 * (tune_pairwise_accuracy), overall and per workload.  Records that
 * failed count with throughput 0, as in training.
 *
 *   model_records --db PATH [--train N] [--workload ID] [--shuffle SEED]
 *                 [--objective rank|reg]
 *
 * The held-out records are those the search proposed later, so this
 * measures what the tuner needs: whether the model orders the candidates
 * it has not measured yet (candidates the model itself picked as the
 * most promising, a harder set than random schedules).  --workload keeps
 * the records of one workload (its id in the store); --shuffle splits at
 * random instead of by time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/db.h"
#include "tuner/features.h"
#include "tuner/model.h"

typedef struct rows {
	int n, cap;
	float *x;
	double *seconds;
	uint32_t *task;
} rows;

static int64_t only_workload;

static int collect(const tune_record *r, void *arg)
{
	rows *t = arg;
	if (r->nfeatures != TUNE_PROGRAM_FEATURES ||
	    (only_workload && r->workload_id != only_workload))
		return 0;
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->x = realloc(t->x, (size_t)t->cap * TUNE_PROGRAM_FEATURES * sizeof(float));
		t->seconds = realloc(t->seconds, (size_t)t->cap * sizeof(double));
		t->task = realloc(t->task, (size_t)t->cap * sizeof(uint32_t));
		if (!t->x || !t->seconds || !t->task)
			return -1;
	}
	memcpy(t->x + (size_t)t->n * TUNE_PROGRAM_FEATURES, r->features,
		TUNE_PROGRAM_FEATURES * sizeof(float));
	t->seconds[t->n] = strcmp(r->error_class, "ok") == 0 ? r->cost_median_s : INFINITY;
	t->task[t->n] = (uint32_t)r->workload_id;
	t->n++;
	return 0;
}

/* Put the rows of "t" in a random order drawn from "seed". */
static void shuffle(rows *t, uint64_t seed)
{
	float tmp[TUNE_PROGRAM_FEATURES];
	for (int i = t->n - 1; i > 0; i--) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int j = (int)((seed >> 33) % (uint64_t)(i + 1));
		float *a = t->x + (size_t)i * TUNE_PROGRAM_FEATURES;
		float *b = t->x + (size_t)j * TUNE_PROGRAM_FEATURES;
		memcpy(tmp, a, sizeof(tmp));
		memcpy(a, b, sizeof(tmp));
		memcpy(b, tmp, sizeof(tmp));
		double s = t->seconds[i];
		t->seconds[i] = t->seconds[j];
		t->seconds[j] = s;
		uint32_t w = t->task[i];
		t->task[i] = t->task[j];
		t->task[j] = w;
	}
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int ntrain = 500;
	uint64_t shuffle_seed = 0;
	int objective = TUNE_OBJ_RANK;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--db") == 0)
			path = argv[i + 1];
		else if (strcmp(argv[i], "--train") == 0)
			ntrain = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--workload") == 0)
			only_workload = atoll(argv[i + 1]);
		else if (strcmp(argv[i], "--objective") == 0)
			objective = tune_objective_parse(argv[i + 1]);
		else if (strcmp(argv[i], "--shuffle") == 0)
			shuffle_seed = strtoull(argv[i + 1], NULL, 10);
	}
	if (!path || ntrain < 1 || objective < 0) {
		fprintf(stderr, "usage: model_records --db PATH [--train N] [--workload ID] "
			"[--shuffle SEED] [--objective rank|reg]\n");
		return 1;
	}
	char err[1024];
	tune_db *db = tune_db_open(path, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "model_records: %s\n", err);
		return 1;
	}
	rows t = { 0 };
	if (tune_db_foreach(db, 0, 0, collect, &t)) {
		fprintf(stderr, "model_records: reading %s failed\n", path);
		return 1;
	}
	if (t.n <= ntrain) {
		fprintf(stderr, "model_records: %d records, not more than --train %d\n", t.n, ntrain);
		return 1;
	}
	if (shuffle_seed)
		shuffle(&t, shuffle_seed);
	float *y = malloc((size_t)t.n * sizeof(float));
	float *pred = malloc((size_t)t.n * sizeof(float));
	if (!y || !pred || tune_normalize_throughput(t.seconds, t.task, t.n, y)) {
		fprintf(stderr, "model_records: out of memory\n");
		return 1;
	}
	float *ytrain = malloc((size_t)ntrain * sizeof(float));
	if (!ytrain || tune_normalize_throughput(t.seconds, t.task, ntrain, ytrain))
		return 1;
	tune_cost_model_opts mo = tune_cost_model_opts_default();
	mo.objective = (tune_objective)objective;
	tune_cost_model *m = tune_cost_model_new(TUNE_PROGRAM_FEATURES, &mo, err, sizeof(err));
	if (!m || tune_cost_model_train(m, t.x, TUNE_PROGRAM_FEATURES, ytrain, t.task, ntrain,
		err, sizeof(err)) ||
	    tune_cost_model_predict(m, t.x + (size_t)ntrain * TUNE_PROGRAM_FEATURES,
		TUNE_PROGRAM_FEATURES, t.n - ntrain, pred, err, sizeof(err))) {
		fprintf(stderr, "model_records: %s\n", err);
		return 1;
	}
	int held = t.n - ntrain;
	printf("%d records in %s: trained on the first %d, held out %d\n", t.n, path, ntrain,
		held);
	printf("pairwise ranking accuracy on the held-out records: %.3f\n",
		tune_pairwise_accuracy(pred, y + ntrain, t.task + ntrain, held));
	for (int i = ntrain; i < t.n; i++) {
		uint32_t w = t.task[i];
		bool first = true;
		for (int j = ntrain; j < i && first; j++)
			first = t.task[j] != w;
		if (!first)
			continue;
		int k = 0;
		for (int j = ntrain; j < t.n; j++)
			k += t.task[j] == w;
		float *p = malloc((size_t)k * sizeof(float)), *yy = malloc((size_t)k * sizeof(float));
		uint32_t *tt = malloc((size_t)k * sizeof(uint32_t));
		int c = 0;
		for (int j = ntrain; j < t.n; j++)
			if (t.task[j] == w) {
				p[c] = pred[j - ntrain];
				yy[c] = y[j];
				tt[c++] = w;
			}
		printf("  workload #%u: %d held out, accuracy %.3f\n", w, k,
			tune_pairwise_accuracy(p, yy, tt, k));
		free(p);
		free(yy);
		free(tt);
	}
	tune_cost_model_free(m);
	tune_db_close(db);
	free(y);
	free(ytrain);
	free(pred);
	free(t.x);
	free(t.seconds);
	free(t.task);
	return 0;
}
