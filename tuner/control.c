/* The control of a search: a program measured with every batch to take
 * the machine's drift out of the labels (tuner/control.h). */
#include "tuner/control.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/state.h"
#include "schedule/trace.h"

int tune_control_set(tune_control *c, const tune_task *task, const char *trace,
	double ref_s)
{
	if (!(ref_s > 0) || !isfinite(ref_s))
		return -1;
	sch_state *st = sch_state_new(task->ctx, task->op);
	sch_trace *tr = st ? sch_trace_parse(task->ctx, "control", trace) : NULL;
	loop_prog *p = tr && sch_replay(st, tr, "control") == 0 ? sch_program(st) : NULL;
	char *copy = p ? strdup(trace) : NULL;
	sch_trace_free(tr);
	sch_state_free(st);
	if (!copy) {
		loop_prog_free(p);
		return -1;
	}
	free(c->trace);
	loop_prog_free(c->prog);
	c->trace = copy;
	c->prog = p;
	c->ref_s = ref_s;
	return 0;
}

bool tune_control_follow(tune_control *c, const tune_task *task, const char *trace,
	double label_s)
{
	if (c->trace && !(c->ref_s > TUNE_CONTROL_FOLLOW * label_s))
		return false;
	return tune_control_set(c, task, trace, label_s) == 0;
}

void tune_control_clear(tune_control *c)
{
	free(c->trace);
	loop_prog_free(c->prog);
	memset(c, 0, sizeof(*c));
}

void tune_control_note(tune_control *c, double scale)
{
	if (!(scale > 0) || !isfinite(scale))
		return;
	c->history[c->nhistory % TUNE_CONTROL_HISTORY] = scale;
	c->nhistory++;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double tune_control_usual(const tune_control *c)
{
	int n = c->nhistory < TUNE_CONTROL_HISTORY ? c->nhistory : TUNE_CONTROL_HISTORY;
	if (n < TUNE_CONTROL_MIN_HISTORY)
		return NAN;
	double v[TUNE_CONTROL_HISTORY];
	memcpy(v, c->history, (size_t)n * sizeof(double));
	qsort(v, (size_t)n, sizeof(double), by_value);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool tune_control_unusual(const tune_control *c, double scale)
{
	double usual = tune_control_usual(c);
	if (!(scale > 0) || !(usual > 0))
		return false;
	return scale > TUNE_CONTROL_UNUSUAL * usual;
}

double tune_control_scale(const tune_control *c, const tune_result *r)
{
	if (!c->trace || r->not_run || r->error != TUNE_OK)
		return NAN;
	double t = isfinite(r->min_s) ? r->min_s : r->median_s;
	return t > 0 && isfinite(t) ? t / c->ref_s : NAN;
}

double tune_label_seconds(bool ok, double median_s, double min_s, double scale)
{
	if (!ok)
		return INFINITY;
	double t = isfinite(min_s) ? min_s : median_s;
	return scale > 0 && isfinite(scale) ? t / scale : t;
}
