/* The control of a search (tuner/control.c): one program of the task,
 * measured again with every batch, whose change in time says how much
 * slower or faster the machine ran that batch.
 *
 * On a shared machine a program's time drifts by several percent between
 * batches measured minutes apart, in the same direction for every program
 * of a batch (docs/cost-model.md, "The control"), while programs timed
 * together in turns keep their order.  A batch's scale is its control's
 * fastest visit over the control's reference time, and the time a record
 * teaches the cost model is its own fastest visit over its batch's scale:
 * every record then speaks in the units of one moment, as if the whole
 * store had been measured at once.  The scale is stored with the record
 * (records.cost_scale); measured times are stored as they were.
 *
 * The control is the task's best program (tune_control_follow): close to
 * the candidates a search measures, and cheap to run again.  When the
 * best becomes much faster it is measured beside the control in the next
 * TUNE_CONTROL_HANDOVER batches, takes as its reference the median of its
 * fastest visits there over those batches' scales, and takes over
 * (tune_control_hand_over): the units carry from control to control, and
 * no reference is a time that was picked for being fast.  A batch the
 * control says was measured in a disturbed moment is measured again
 * (tune_control_disturbed): one that ran much slower than usual, which
 * the scale alone over-corrects (the control slowed 1.75x where its
 * candidates slowed about 1.6x), and one whose control's visits spread
 * far above its fastest, where the fastest visits of the candidates say
 * more about luck than about the programs (in one batch of matmul
 * 128x3072x768 the candidates' fastest visits were twice their usual
 * time while the control's was its usual one; docs/cost-model.md, "The
 * control"). */
#ifndef TESSEL_TUNER_CONTROL_H
#define TESSEL_TUNER_CONTROL_H

#include <stdbool.h>

#include "ir/loop.h"
#include "tuner/measure.h"
#include "tuner/task.h"

/* A new best becomes the next control when the control's reference time
 * is more than this factor above the best's time: every change adds the
 * error of one ratio measured in turns (about 1%) to the units. */
#define TUNE_CONTROL_FOLLOW 1.2

/* Batches a next control is measured in beside the control before it
 * takes over, its reference the median of theirs: one batch's can be
 * far off (softmax [4096,1024]: a hand-over on one batch made every later
 * label 1.42x too slow; docs/tuner.md), and every later label inherits a
 * reference's error. */
#define TUNE_CONTROL_HANDOVER 3

/* A batch whose scale is this factor above the median of the last
 * TUNE_CONTROL_HISTORY scales (at least TUNE_CONTROL_MIN_HISTORY of
 * them) was measured in a slow moment of the machine, and is measured
 * again (tuner/search.c), at most TUNE_CONTROL_RETRIES times.  The
 * scales of successive controls are in the same units, so the history
 * carries over when the control changes. */
#define TUNE_CONTROL_UNUSUAL 1.25
#define TUNE_CONTROL_HISTORY 8
#define TUNE_CONTROL_MIN_HISTORY 3
#define TUNE_CONTROL_RETRIES 2

/* A batch whose control's median visit is more than this factor above
 * its fastest was measured in a disturbed moment (the 90th percentile of
 * the ratio over the candidates of quiet stores is 1.09 to 1.18). */
#define TUNE_CONTROL_SPREAD 1.2

typedef struct tune_control {
	char *trace;        /* NULL: no control yet */
	loop_prog *prog;    /* its lowered program */
	double ref_s;       /* its fastest time in the units of the labels */
	char *next_trace;   /* NULL: none; the next control, measured with */
	loop_prog *next_prog;  /* the next batches to learn its reference */
	double next_label_s;   /* its label time when it was chosen */
	double next_refs[TUNE_CONTROL_HANDOVER];  /* its reference by batch */
	int next_nrefs;     /* batches measured (after a hand-over: the
	                     * ones its reference is the median of) */
	double history[TUNE_CONTROL_HISTORY];  /* the last batches' scales */
	int nhistory;       /* scales noted, all time */
} tune_control;

/* Make the program of "trace" (a trace of task's op) the control of "c",
 * with reference time "ref_s" (> 0; a stored best's label time); the
 * history of scales stays.  Return 0, or -1 when it
 * does not replay or lower (then "c" is left as it was). */
int tune_control_set(tune_control *c, const tune_task *task, const char *trace,
	double ref_s);

/* Make "trace", a new best whose fastest time in the labels' units is
 * "label_s", the next control when there is no control or the control is
 * TUNE_CONTROL_FOLLOW times slower; a next control not yet handed over
 * is replaced, but once a batch has measured it only by a best
 * TUNE_CONTROL_FOLLOW times faster than it was (so that a search whose
 * best improves a little every batch still hands over).  Return whether
 * it was taken. */
bool tune_control_follow(tune_control *c, const tune_task *task, const char *trace,
	double label_s);

/* After a batch that measured the next control of "c" ("r") beside the
 * control (batch scale "scale"): note its fastest visit over the scale,
 * and once TUNE_CONTROL_HANDOVER batches have, make it the control, its
 * reference the median of those.  Without a control the batch defines
 * the units (scale 1) and the next control takes over at once.  A next
 * control that failed, or a batch without a scale, notes nothing.
 * Return whether it took over. */
bool tune_control_hand_over(tune_control *c, const tune_result *r, double scale);

void tune_control_clear(tune_control *c);

/* Note "scale", the kept scale of a batch (NAN is ignored). */
void tune_control_note(tune_control *c, double scale);

/* The usual scale of the last batches: the median of the noted ones;
 * NAN while fewer than TUNE_CONTROL_MIN_HISTORY were noted. */
double tune_control_usual(const tune_control *c);

/* Whether a batch of scale "scale" is to be measured again: it is more
 * than TUNE_CONTROL_UNUSUAL times the usual scale (a faster machine than
 * usual is not retried: the scale corrects it).  A NAN scale or usual is
 * not unusual. */
bool tune_control_unusual(const tune_control *c, double scale);

/* Whether a batch whose control of "c" measured "r" with scale "scale"
 * is to be measured again: its scale is unusual, or the control's median
 * visit is more than TUNE_CONTROL_SPREAD times its fastest. */
bool tune_control_disturbed(const tune_control *c, const tune_result *r, double scale);

/* The scale of a batch in which the control of "c" measured "r": its
 * fastest visit (its median if none) over its reference time; NAN when
 * the control failed, was not run, or there is none. */
double tune_control_scale(const tune_control *c, const tune_result *r);

/* The time a record teaches the cost model: its fastest repeat when known
 * (on the CPU the fastest visit of the batch timed together, the most
 * repeatable of its times), else its median, over its batch's "scale"
 * when that is known (> 0); INFINITY when it failed ("ok" false). */
double tune_label_seconds(bool ok, double median_s, double min_s, double scale);

#endif
