/* The learned cost model: gradient-boosted trees (XGBoost, through its C
 * API) over fixed-length feature vectors of candidate programs
 * (tuner/features.h), predicting a score whose order is the order of
 * measured throughput within a task (docs/cost-model.md).
 *
 * Records of several tasks (workloads) train one model.  Labels are
 * normalized throughput per task, best time / time in (0, 1]
 * (tune_normalize_throughput), so that tasks of different sizes share one
 * scale; failed candidates get 0.  Two objectives are selectable: pairwise
 * ranking within each task (rank:pairwise, the default: chosen by
 * measurement, docs/cost-model.md) and squared error on the normalized
 * throughput (reg:squarederror).
 *
 * A model is retrained from scratch on all the records it is given;
 * saved, it is XGBoost's JSON model with tessel's options and the feature
 * version as attributes, so that it can live in the records database and
 * start a later run, another shape or another CPU warm.
 *
 * Errors: functions that can fail take "err" of size "errlen" and write a
 * message there (XGBoost's own, from XGBGetLastError, where it failed). */
#ifndef TESSEL_TUNER_MODEL_H
#define TESSEL_TUNER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tune_cost_model tune_cost_model;

typedef enum tune_objective {
	TUNE_OBJ_RANK,        /* rank:pairwise, one group per task */
	TUNE_OBJ_REGRESSION,  /* reg:squarederror on normalized throughput */
	TUNE_OBJ_COUNT
} tune_objective;

typedef struct tune_cost_model_opts {
	tune_objective objective;
	int rounds;              /* boosting rounds */
	int max_depth;
	double eta;              /* learning rate */
	double min_child_weight;
	double subsample;        /* fraction of rows per tree, (0, 1] */
	double colsample;        /* fraction of features per tree, (0, 1] */
	int pair_samples;        /* rank:pairwise: pairs drawn per record and
	                          * round (XGBoost's num_pairsample), >= 1 */
	uint64_t seed;
	int nthread;             /* 0: XGBoost's default (all cores) */
} tune_cost_model_opts;

/* Return the default options (rank:pairwise; the values measured in
 * docs/cost-model.md). */
tune_cost_model_opts tune_cost_model_opts_default(void);

/* Return the name of "o" as XGBoost spells it ("rank:pairwise"), or NULL. */
const char *tune_objective_name(tune_objective o);
/* Return the objective named "name" (XGBoost's spelling, or "rank" /
 * "reg"), or -1. */
int tune_objective_parse(const char *name);

/* Return an untrained model of "nfeatures" features with the options
 * "opts" (NULL: the defaults), or NULL with the reason in "err" of size
 * "errlen" (nfeatures < 1, invalid options). */
tune_cost_model *tune_cost_model_new(int nfeatures, const tune_cost_model_opts *opts,
	char *err, size_t errlen);
/* Free "m"; NULL is allowed. */
void tune_cost_model_free(tune_cost_model *m);

int tune_cost_model_nfeatures(const tune_cost_model *m);
const tune_cost_model_opts *tune_cost_model_options(const tune_cost_model *m);
/* Return whether "m" has been trained (or loaded trained). */
bool tune_cost_model_trained(const tune_cost_model *m);

/* Make "prior" (trained, with the features of "m"; NULL: none) the model
 * "m" builds on: in training, every row starts from the prior's score
 * (XGBoost's base margin), so that the trees of "m" learn what the prior
 * orders wrongly among the rows "m" is given; in prediction, the score of
 * "m" is the prior's plus its trees'.  "m" borrows "prior", which must
 * outlive its use by "m".  A model over a prior cannot be saved (its trees
 * mean nothing without the prior).  Return 0, or -1 with the reason in
 * "err". */
int tune_cost_model_set_prior(tune_cost_model *m, tune_cost_model *prior, char *err,
	size_t errlen);

/* Train "m" from scratch on "n" records: row i of "X" (n rows of "ncols"
 * floats, row-major; NaN is a missing value) has the label "y"[i]
 * (normalized throughput, higher is better) and belongs to the task
 * "task"[i] (any ids; rows need not be sorted).  On success the new trees
 * replace the old; on failure "m" is unchanged.  Return 0, or -1 with the
 * reason in "err": "ncols" is not the model's feature count, "n" < 1, a
 * label is not finite, or XGBoost failed. */
int tune_cost_model_train(tune_cost_model *m, const float *X, int ncols, const float *y,
	const uint32_t *task, int n, char *err, size_t errlen);

/* Write into "out" the scores of the "n" rows of "X" ("ncols" floats each):
 * higher means faster within a task (with the regression objective, an
 * estimate of normalized throughput).  Return 0, or -1 with the reason in
 * "err": "m" is untrained, "ncols" is not its feature count, or XGBoost
 * failed. */
int tune_cost_model_predict(tune_cost_model *m, const float *X, int ncols, int n,
	float *out, char *err, size_t errlen);

/* Store in "blob" (malloc'ed; the caller frees it) and "len" the trained
 * "m" as XGBoost's JSON model with tessel's attributes.  Return 0, or -1
 * with the reason in "err" (untrained, or over a prior). */
int tune_cost_model_save(tune_cost_model *m, void **blob, size_t *len, char *err,
	size_t errlen);

/* Return the model saved in "blob" of "len" bytes, trained, with the
 * options it was saved with (nthread from "opts" when not NULL, else the
 * default).  When "nfeatures" > 0 the model must have that many features.
 * Return NULL with the reason in "err" when the blob is not a tessel
 * model, its features are of another version (TUNE_FEATURES_VERSION) or
 * count, or XGBoost refuses it. */
tune_cost_model *tune_cost_model_load(const void *blob, size_t len, int nfeatures,
	const tune_cost_model_opts *opts, char *err, size_t errlen);

/* Return the fraction of pairs of records of the same task ("task"[i]),
 * with different labels "y", that the scores "pred" order as the labels
 * do (a tie in the scores counts one half); -1 when there is no such
 * pair among the "n" records. */
double tune_pairwise_accuracy(const float *pred, const float *y,
	const uint32_t *task, int n);
/* The same over the pairs whose labels differ by more than the factor
 * "margin" (>= 1): the larger label above "margin" times the smaller (a
 * label of 0, a failed candidate, is below any positive one).  With
 * normalized throughput as labels, "margin" 1.03 leaves out the pairs
 * whose times are within 3% of each other: closer than the noise of a
 * measurement, so their order is a coin toss (docs/cost-model.md). */
double tune_pairwise_accuracy_margin(const float *pred, const float *y,
	const uint32_t *task, int n, double margin);
/* The counts behind tune_pairwise_accuracy_margin: into "correct" the
 * pairs the scores order as the labels (a tie one half), into "pairs"
 * all the pairs it counts.  Return 0, or -1 when memory runs out. */
int tune_pairwise_counts(const float *pred, const float *y, const uint32_t *task,
	int n, double margin, double *correct, double *pairs);

/* Write into "y" the normalized throughput of "n" measurements: the best
 * (smallest positive finite) time of the record's task, "task"[i],
 * divided by "seconds"[i]; 0 for a measurement that is not positive and
 * finite (a failed candidate).  Return 0, or -1 when memory runs out. */
int tune_normalize_throughput(const double *seconds, const uint32_t *task, int n,
	float *y);

#endif
