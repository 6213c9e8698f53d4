#include "tuner/round_robin.h"

#include <math.h>
#include <string.h>

/* Kernels at least this long per run need no warm-up run per visit: a
 * cold start costs little beside them, and they are the expensive ones. */
#define WARM_BELOW_S 5e-3

tune_rr_plan tune_rr_plan_for(double alone_s, const rt_timer_opts *timer)
{
	tune_rr_plan p = { .visits = TUNE_RR_MAX_VISITS, .runs = 1, .warm = true };
	if (!(alone_s > 0))
		return p;
	if (alone_s < TUNE_RR_VISIT_S)
		p.runs = (int)ceil(TUNE_RR_VISIT_S / alone_s - 1e-6);
	double visits = ceil(timer->min_total_s / (p.runs * alone_s));
	double least = timer->min_repeats < TUNE_RR_MAX_VISITS ? timer->min_repeats
		: TUNE_RR_MAX_VISITS;
	p.visits = (int)fmin(fmax(visits, least), TUNE_RR_MAX_VISITS);
	p.warm = alone_s < WARM_BELOW_S;
	return p;
}

double tune_rr_estimate_s(const tune_rr_plan *plans, const double *alone_s, int n)
{
	double total = 0;
	for (int i = 0; i < n; i++)
		total += plans[i].visits * (plans[i].runs + plans[i].warm) * alone_s[i];
	return total;
}

/* Whether a kernel with "visits" of "rounds" takes part in round "r":
 * the rounds where floor(r * visits / rounds) steps up. */
static bool visits_round(int visits, int rounds, int r)
{
	return (long)(r + 1) * visits / rounds > (long)r * visits / rounds;
}

void tune_rr_time(int n, void (*run)(void *arg, int i), void *arg,
	const tune_rr_plan *plans, double budget_s, volatile const int *stop,
	tune_rr_log *logs)
{
	int rounds = 0;
	for (int i = 0; i < n; i++) {
		logs[i] = (tune_rr_log){ .runs = plans[i].runs };
		if (plans[i].visits > rounds)
			rounds = plans[i].visits;
	}
	double start = rt_now_s();
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < n; k++) {
			int step = r % 2 ? n - 1 - k : k;
			int i = (int)(((long)r * 7 + step) % n);
			if (!visits_round(plans[i].visits, rounds, r))
				continue;
			if ((stop && *stop) || rt_now_s() - start > budget_s)
				return;
			if (plans[i].warm)
				run(arg, i);
			double t0 = rt_now_s();
			for (int j = 0; j < plans[i].runs; j++)
				run(arg, i);
			logs[i].s[logs[i].visits++] = (rt_now_s() - t0) / plans[i].runs;
		}
}

void tune_rr_summary(const tune_rr_log *log, rt_timing *out)
{
	double s[TUNE_RR_MAX_VISITS];
	memcpy(s, log->s, (size_t)log->visits * sizeof(double));
	rt_timing_summarize(s, log->visits, out);
	if (log->visits == 0)
		out->median_s = out->min_s = out->mean_s = NAN;
	out->runs = log->visits * log->runs;
}
