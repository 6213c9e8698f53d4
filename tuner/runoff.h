/* The run-off at the end of a search (tuner/runoff.c; docs/tuner.md,
 * "The run-off").  Of a few hundred noisy measurements the fastest is
 * partly the luckiest: on the 2-vCPU build VM a matmul 1024^3 kernel
 * kept as the best at 15.4 ms ran at 0.70 of OpenBLAS in an interleaved
 * harness where another run's best ran at 0.83.  So the fastest records
 * of the task (distinct programs) are measured again, together, timed in
 * turns in one worker (tuner/round_robin.h) for TUNE_RUNOFF_TIME_FACTOR
 * times a trial's time, each one checked against the interpreter when it
 * becomes the run-off's best; the run-off is stored, and the record store
 * then chooses its fastest (tune_db_best).  The records themselves keep
 * the times they were measured at: those are the cost model's labels. */
#ifndef TESSEL_TUNER_RUNOFF_H
#define TESSEL_TUNER_RUNOFF_H

#include <stdint.h>

#include "tuner/db.h"
#include "tuner/measure.h"
#include "tuner/task.h"

/* The fastest records a run-off measures by default. */
#define TUNE_RUNOFF_DEFAULT 8
/* Each entrant is timed this many times the trial's minimum time
 * (tune_measure_opts.timer.min_total_s). */
#define TUNE_RUNOFF_TIME_FACTOR 10

/* What a run-off found. */
typedef struct tune_runoff_summary {
	int entrants;          /* records measured (0: no run-off) */
	int failed;            /* of them, failed in the run-off */
	int unlowered;         /* records skipped: their trace no longer
	                        * lowers */
	int64_t winner;        /* its fastest record, 0 when none ran */
	double winner_s;       /* its median there */
	double winner_recorded_s; /* its median when it was recorded */
	int64_t fastest;       /* the fastest record by recorded median */
	double fastest_s;      /* its median in the run-off (NAN: failed) */
	int64_t id;            /* of the stored run-off, 0 when none */
} tune_runoff_summary;

/* Measure again the at most "k" fastest records (distinct programs) of
 * "task" ("workload" on "target" in "db") with "m", all in one batch, and
 * store the run-off when at least two ran and nothing stopped it.  Does
 * nothing when fewer than two records lower.  Fills "out".  Return 0 (also
 * when *"stop" cut it short: nothing is stored), or -1 with the reason in
 * "err" of size "errlen" (the store or the measurer failed). */
int tune_runoff(const tune_task *task, tune_db *db, int64_t workload, int64_t target,
	tune_measurer *m, int k, volatile const int *stop, tune_runoff_summary *out,
	char *err, size_t errlen);

#endif
