/* Timing a batch's candidates together (tuner/round_robin.c): one process
 * holds every kernel and times them in turns, a visit of each per round,
 * so that a slow phase of the machine (another tenant of the host, a
 * change of clock) falls on all of them alike instead of on whichever
 * candidate was being timed.  On the project's 2-vCPU VM two
 * measurements of the same 60 records of matmul 512^3 or of an NHWC
 * conv, a minute apart, ordered 0.72 to 0.75 of the pairs alike when
 * each record ran in a worker of its own, 0.88 to 0.89 when each sample
 * was timed in turns (docs/tuner.md, "Measurement").  tuner/measure.c
 * runs this in a worker after each candidate has run alone once, which
 * catches crashes and hangs and gives the time the plan of its visits
 * needs. */
#ifndef TESSEL_TUNER_ROUND_ROBIN_H
#define TESSEL_TUNER_ROUND_ROBIN_H

#include <stdbool.h>

#include "runtime/timer.h"

/* At most this many visits per candidate, the rounds of a session. */
#define TUNE_RR_MAX_VISITS 32

/* A visit times at least this long, repeating a short kernel. */
#define TUNE_RR_VISIT_S 1e-3

/* How one candidate is visited. */
typedef struct tune_rr_plan {
	int visits;          /* rounds it takes part in, 1..TUNE_RR_MAX_VISITS */
	int runs;            /* timed runs per visit, their mean the visit's time */
	bool warm;           /* an untimed run first (kernels under 5 ms) */
} tune_rr_plan;

/* What a session measured of one candidate (in shared memory). */
typedef struct tune_rr_log {
	int visits;          /* visits made */
	int runs;            /* timed runs per visit */
	double s[TUNE_RR_MAX_VISITS];  /* each visit's time per run */
} tune_rr_log;

/* Plan the visits of a kernel that took "alone_s" per run when timed
 * alone, so that its timed runs add up to the timer's min_total_s (at
 * least min_repeats visits, at most TUNE_RR_MAX_VISITS). */
tune_rr_plan tune_rr_plan_for(double alone_s, const rt_timer_opts *timer);

/* Return the time the "n" plans "plans" of kernels of "alone_s" seconds
 * per run should take in all. */
double tune_rr_estimate_s(const tune_rr_plan *plans, const double *alone_s, int n);

/* Time the "n" kernels run(arg, i) in rounds: in round r, each kernel
 * whose plan has a visit there (its visits spread evenly over the
 * rounds) is visited, from a kernel that moves each round and in the
 * other direction every other round, so that none always follows the
 * same one.  A visit is an optional warm-up
 * run, then plans[i].runs timed runs; their mean goes to logs[i].
 * Stops before a visit once "budget_s" has passed or *"stop" (may be
 * NULL) is set; the logs hold the visits made. */
void tune_rr_time(int n, void (*run)(void *arg, int i), void *arg,
	const tune_rr_plan *plans, double budget_s, volatile const int *stop,
	tune_rr_log *logs);

/* The statistics of the visits in "log" into "out" (rt_timing_summarize:
 * median, fastest, mean; NAN when there is none), with "out"->runs the
 * runs timed. */
void tune_rr_summary(const tune_rr_log *log, rt_timing *out);

#endif
