/* The control of a search: a program measured with every batch to take
 * the machine's drift out of the labels (tuner/control.h). */
#include "tuner/control.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/trace.h"

/* Replay and lower "trace" on the op of "task"; the program and a copy
 * of the trace, or -1 (nothing allocated). */
static int lower_trace(const tune_task *task, const char *trace, loop_prog **prog,
	char **copy)
{
	loop_prog *p = sch_trace_program(task->ctx, task->op, "control", trace);
	char *c = p ? strdup(trace) : NULL;
	if (!c) {
		loop_prog_free(p);
		return -1;
	}
	*prog = p;
	*copy = c;
	return 0;
}

int tune_control_set(tune_control *c, const tune_task *task, const char *trace,
	double ref_s)
{
	loop_prog *p;
	char *copy;
	if (!(ref_s > 0) || !isfinite(ref_s) || lower_trace(task, trace, &p, &copy))
		return -1;
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
	if (c->next_trace && c->next_nrefs > 0 &&
	    !(c->next_label_s > TUNE_CONTROL_FOLLOW * label_s))
		return false;
	if ((c->next_trace && strcmp(c->next_trace, trace) == 0) ||
	    (c->trace && strcmp(c->trace, trace) == 0))
		return false;
	loop_prog *p;
	char *copy;
	if (lower_trace(task, trace, &p, &copy))
		return false;
	free(c->next_trace);
	loop_prog_free(c->next_prog);
	c->next_trace = copy;
	c->next_prog = p;
	c->next_label_s = label_s;
	c->next_nrefs = 0;
	return true;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

_Static_assert(TUNE_CONTROL_HANDOVER <= TUNE_CONTROL_HISTORY,
	"median() sorts at most TUNE_CONTROL_HISTORY values");

/* The median of the "n" values of "v" (0 < n <= TUNE_CONTROL_HISTORY). */
static double median(const double *v, int n)
{
	double s[TUNE_CONTROL_HISTORY];
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), by_value);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

bool tune_control_hand_over(tune_control *c, const tune_result *r, double scale)
{
	if (!c->next_trace || r->not_run || r->error != TUNE_OK)
		return false;
	if (!c->trace)
		scale = 1;
	double t = (isfinite(r->min_s) ? r->min_s : r->median_s) / scale;
	if (!(t > 0) || !isfinite(t))
		return false;
	c->next_refs[c->next_nrefs++] = t;
	if (c->trace && c->next_nrefs < TUNE_CONTROL_HANDOVER)
		return false;
	free(c->trace);
	loop_prog_free(c->prog);
	c->trace = c->next_trace;
	c->prog = c->next_prog;
	c->ref_s = median(c->next_refs, c->next_nrefs);
	c->next_trace = NULL;
	c->next_prog = NULL;
	return true;
}

void tune_control_clear(tune_control *c)
{
	free(c->trace);
	loop_prog_free(c->prog);
	free(c->next_trace);
	loop_prog_free(c->next_prog);
	memset(c, 0, sizeof(*c));
}

void tune_control_note(tune_control *c, double scale)
{
	if (!(scale > 0) || !isfinite(scale))
		return;
	c->history[c->nhistory % TUNE_CONTROL_HISTORY] = scale;
	c->nhistory++;
}

double tune_control_usual(const tune_control *c)
{
	int n = c->nhistory < TUNE_CONTROL_HISTORY ? c->nhistory : TUNE_CONTROL_HISTORY;
	return n < TUNE_CONTROL_MIN_HISTORY ? NAN : median(c->history, n);
}

bool tune_control_unusual(const tune_control *c, double scale)
{
	double usual = tune_control_usual(c);
	if (!(scale > 0) || !(usual > 0))
		return false;
	return scale > TUNE_CONTROL_UNUSUAL * usual;
}

bool tune_control_disturbed(const tune_control *c, const tune_result *r, double scale)
{
	if (tune_control_unusual(c, scale))
		return true;
	return r->error == TUNE_OK && !r->not_run && isfinite(r->min_s) &&
		r->median_s > TUNE_CONTROL_SPREAD * r->min_s;
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
