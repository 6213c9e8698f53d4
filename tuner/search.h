/* The evolutionary search of one task (tuner/search.c; docs/tuner.md).
 *
 * Rounds until the trials are spent, the search stops improving, or the
 * caller interrupts:
 *   1. a population of candidates: samples of the sketches
 *      (tuner/sketch.h) and mutations of the best measured traces (of this
 *      run and of earlier ones in the record store);
 *   2. generations of evolution guided by the cost model (tuner/model.h):
 *      candidates are lowered, their features predicted, the fitter ones
 *      mutated again;
 *   3. a batch of the best-predicted programs not measured before (by
 *      trace and by program text), a fraction of it kept for exploration
 *      (the best-predicted of the structures measured least, tuner/
 *      novelty.h), measured (tuner/measure.h) and committed to the store
 *      in one transaction;
 *   4. the model retrained on every record of the task, over a prior
 *      trained once, as the store is read, on a sample of the records of
 *      other workloads of the target kind (tune_cost_model_set_prior).
 * The default schedule is measured first, as the baseline.  The model is
 * loaded from the store when one was saved (another shape, another run),
 * guides until the task's own model trains, and a model of the task's
 * records and the sample together is saved back at the end.  Unless
 * interrupted, the search ends with a run-off of the task's fastest
 * records (tuner/runoff.h), which chooses the best. */
#ifndef TESSEL_TUNER_SEARCH_H
#define TESSEL_TUNER_SEARCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "tuner/db.h"
#include "tuner/measure.h"
#include "tuner/runoff.h"
#include "tuner/task.h"

/* Where a search stands, for progress displays. */
typedef struct tune_progress {
	int trials;          /* measured in this run */
	int trials_total;    /* asked for */
	int errors;          /* of those, failed (any error class) */
	int known;           /* records of the task found in the store */
	int round;
	double best_s;       /* best checked time of the task, NAN when none */
	double default_s;    /* the default schedule's time, NAN when unknown */
	double flops;        /* per run of the op (0: not a compute op) */
	double elapsed_s;
	double eta_s;        /* estimated time left, NAN before the first batch */
	int runoff;          /* > 0: the run-off of at most this many
	                      * records (tuner/runoff.h) is being measured */
	bool done;           /* the last call, after the search ended */
} tune_progress;

/* Why the search measured a record (tune_record.pick): the target's
 * default schedule; among the best the cost model scored in a larger
 * pool; drawn at random from the pool (every pick before a model
 * guides); the exploration picks after (the epsilon share): the
 * best-scored member of the schedule structure measured least
 * (tuner/novelty.h); the whole pool, no larger than the batch.  The
 * "model" picks carry the model's selection wholly, the "novel" ones
 * only within their structure (docs/cost-model.md, "The later records
 * are the model's own picks"). */
#define TUNE_PICK_DEFAULT "default"
#define TUNE_PICK_MODEL "model"
#define TUNE_PICK_RANDOM "random"
#define TUNE_PICK_NOVEL "novel"
#define TUNE_PICK_ALL "all"
/* A stored record of the task measured again, first: its code key says
 * this build makes other code of its trace (tune_summary.other_code). */
#define TUNE_PICK_AGAIN "again"

/* The default of tune_search_opts.other_rows: a sample this large orders
 * a workload's later records as well as all the other records of a store
 * of 24,000 to 28,000 (docs/cost-model.md, "Other workloads in the
 * store"), and keeps the prior's one training near a second on 2 cores
 * (docs/cost-model.md, "A prior of the other workloads"). */
#define TUNE_OTHER_ROWS 4096

typedef struct tune_search_opts {
	int trials;          /* candidates to measure, > 0 */
	int batch;           /* measured per round */
	int population;      /* candidates evolved per round */
	int generations;     /* rounds of evolution per round */
	int evolve_jobs;     /* processes that make the members of a
	                      * generation (0: one per CPU; the members
	                      * are the same for any number) */
	double epsilon;      /* fraction of each batch kept for exploration */
	int code_shortlist;  /* batches' worth of the best-scored candidates
	                      * built each round and ordered again by the
	                      * model of their compiled code (CPU, with a
	                      * disassembler); 0 (the default) or 1: none.
	                      * 2 orders the later records better, but found
	                      * no clearly faster kernels and took 1.2 to
	                      * 1.7x as long (docs/cost-model.md, "Code
	                      * features") */
	int early_stop;      /* stop after this many trials without a better
	                      * time (0: never) */
	int min_train;       /* records of the task before its model trains
	                      * (until then the saved model or the prior
	                      * guides, if any) */
	int runoff;          /* at the end, this many of the fastest records of
	                      * the task are measured again together and the
	                      * fastest there becomes the best
	                      * (tuner/runoff.h; 0 or 1: no run-off) */
	int other_rows;      /* a uniform sample of at most this many records
	                      * of the store's other workloads of the target
	                      * trains the prior the task's model is trained
	                      * over (0: none; tuner/reservoir.h) */
	uint64_t seed;
	tune_measure_opts measure;
	/* Called after each batch and at the end; may be NULL. */
	void (*progress)(const tune_progress *p, void *arg);
	void *progress_arg;
	/* The search ends after the batch in flight when *stop becomes
	 * nonzero (a signal handler's flag); may be NULL. */
	volatile sig_atomic_t *stop;
	/* Log lines (sketches, model training) go here when not NULL. */
	void (*log)(const char *line, void *arg);
	void *log_arg;
} tune_search_opts;

/* Return the defaults: 64 trials, batches of 16, population 64,
 * 2 generations, epsilon 0.1, no short list ordered by the code, early
 * stop after 300 trials, train from 16
 * records and on at most TUNE_OTHER_ROWS of other workloads, a run-off of
 * TUNE_RUNOFF_DEFAULT records, seed 1,
 * tune_measure_opts_default(). */
tune_search_opts tune_search_opts_default(void);

/* What a search did. */
typedef struct tune_summary {
	int trials;          /* measured in this run */
	int errors;
	int known;           /* records of the task the store already had */
	int other_code;      /* of those, the ones this build makes other code
	                      * of (their code key differs; of the task's 32
	                      * fastest records of other builds): neither
	                      * parents nor training rows nor known programs,
	                      * and measured again, fastest first, before the
	                      * search's own picks */
	int measured_again;  /* of "trials", those */
	int rounds;
	double best_s;       /* NAN when no candidate ran correctly */
	double default_s;    /* NAN when not measured (it was known) */
	int64_t best_record; /* id in the store, 0 when none: the run-off's
	                      * winner when there was one, with best_s its
	                      * time there */
	tune_runoff_summary runoff; /* entrants 0: none (interrupted, too few
	                      * records, or switched off) */
	char *best_trace;    /* text form, malloc'ed; NULL when none */
	bool early_stopped;
	bool exhausted;      /* sampling and mutation found no program not
	                      * measured yet: the space is covered */
	bool interrupted;
	int error_counts[TUNE_ERR_COUNT];
	int retaken;         /* measurements taken again because their
	                      * threads waited for CPUs (rt_timing_disturbed) */
	int disturbed;       /* trials whose kept measurement was still
	                      * disturbed after its retries */
	int batches_retaken; /* batches measured again because their control
	                      * ran far from its usual time (tuner/control.h) */
} tune_summary;

void tune_summary_clear(tune_summary *s);

/* Search schedules of "task" with the options "o" (NULL: the defaults),
 * keeping every measurement in "db".  Fill "out".  Return 0 (also when
 * interrupted or every candidate failed: see "out"), or -1 with the reason
 * in "err" of size "errlen" when the search itself could not go on (the
 * store failed, invalid options); what was committed stays committed. */
int tune_search(const tune_task *task, tune_db *db, const tune_search_opts *o,
	tune_summary *out, char *err, size_t errlen);

#endif
