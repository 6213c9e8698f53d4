/* The run-off at the end of a search: the fastest records measured again
 * together, and the store told which won (tuner/runoff.h). */
#include "tuner/runoff.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fnv.h"
#include "schedule/trace.h"

static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whether the program "p" prints as one of the "n" hashes "seen"; if
 * not, add its hash there. */
static bool seen_before(const loop_prog *p, uint64_t *seen, int n)
{
	char *text = loop_prog_print(p);
	uint64_t h = text ? te_fnv1a(text) : 0;
	free(text);
	for (int i = 0; i < n; i++)
		if (seen[i] == h)
			return true;
	seen[n] = h;
	return false;
}

/* Fill "times" and the rest of "out" from the results "res" of the
 * "n" entrants "recs". */
static void tally(const tune_record *recs, const tune_result *res, int n,
	tune_runoff_time *times, tune_runoff_summary *out)
{
	out->winner_s = NAN;
	out->fastest = recs[0].id;
	out->fastest_s = res[0].error == TUNE_OK ? res[0].median_s : NAN;
	for (int i = 0; i < n; i++) {
		bool ok = res[i].error == TUNE_OK;
		times[i] = (tune_runoff_time){ recs[i].id, ok ? res[i].median_s : NAN,
			tune_error_name(res[i].error) };
		out->failed += !ok;
		if (ok && !(res[i].median_s >= out->winner_s)) {
			out->winner = recs[i].id;
			out->winner_s = res[i].median_s;
			out->winner_recorded_s = recs[i].cost_median_s;
		}
	}
}

int tune_runoff(const tune_task *task, tune_db *db, int64_t workload, int64_t target,
	tune_measurer *m, int k, volatile const int *stop, tune_runoff_summary *out,
	char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->winner_s = out->winner_recorded_s = out->fastest_s = NAN;
	if (k < 2)
		return 0;
	int want = 2 * k, n = 0;
	tune_record *fetched = calloc((size_t)want, sizeof(*fetched));
	tune_record *recs = calloc((size_t)k, sizeof(*recs));
	loop_prog **progs = calloc((size_t)k, sizeof(*progs));
	uint64_t *seen = calloc((size_t)k + 1, sizeof(*seen));
	tune_result *res = calloc((size_t)k, sizeof(*res));
	tune_runoff_time *times = calloc((size_t)k, sizeof(*times));
	int got = fetched && recs && progs && seen && res && times ?
		tune_db_fastest(db, workload, target, want, fetched) : -2;
	int r = 0;
	if (got < 0)
		r = fail(err, errlen, "%s", got == -2 ? "out of memory" : tune_db_error(db));
	for (int i = 0; i < got && n < k; i++) {
		loop_prog *p = sch_trace_program(task->ctx, task->op, "record", fetched[i].trace);
		if (!p) {
			out->unlowered++;
		} else if (seen_before(p, seen, n)) {
			loop_prog_free(p);
		} else {
			progs[n] = p;
			recs[n++] = fetched[i];
			fetched[i] = (tune_record){ 0 };
		}
	}
	if (r == 0 && n >= 2) {
		for (int i = 0; i < n; i++)
			res[i] = (tune_result){ .error = TUNE_ERR_RUNTIME };
		tune_measurer_set_best(m, INFINITY);
		double usual = tune_measurer_min_time(m);
		tune_measurer_set_min_time(m, TUNE_RUNOFF_TIME_FACTOR * usual);
		if (tune_measure_batch(m, progs, n, res, stop))
			r = fail(err, errlen, "measuring the run-off: %s", res[0].msg);
		tune_measurer_set_min_time(m, usual);
	}
	bool cut_short = false;
	for (int i = 0; i < n; i++)
		cut_short |= res[i].not_run;
	if (r == 0 && n >= 2 && !cut_short) {
		out->entrants = n;
		tally(recs, res, n, times, out);
		out->id = tune_db_add_runoff(db, workload, target, times, n);
		if (!out->id)
			r = fail(err, errlen, "storing the run-off: %s", tune_db_error(db));
	}
	for (int i = 0; fetched && i < want; i++)
		tune_record_clear(&fetched[i]);
	for (int i = 0; recs && i < n; i++) {
		tune_record_clear(&recs[i]);
		loop_prog_free(progs[i]);
	}
	free(fetched);
	free(recs);
	free(progs);
	free(seen);
	free(res);
	free(times);
	return r;
}
