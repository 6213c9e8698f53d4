/* Traces: the primitives applied to a schedule, in order, with their
 * arguments and decisions, as data that replays deterministically.
 *
 * Text form, one step per line (docs/schedules.md):
 *     split C.i 32 -> C.io C.ii
 *     reorder C.io C.jo C.k C.ii C.ji
 *     parallel C.io
 */
#ifndef TESSEL_SCHEDULE_TRACE_H
#define TESSEL_SCHEDULE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "tessel/te.h"

#define SCH_MAX_ARGS 16

typedef struct sch_step {
	int line;            /* in the text it was parsed from, or 0 */
	char prim[32];
	int nargs;
	char args[SCH_MAX_ARGS][80];
	int nouts;
	char outs[SCH_MAX_ARGS][80];
} sch_step;

struct sch_trace {
	int nsteps;
	int cap;
	sch_step *steps;
};
typedef struct sch_trace sch_trace;
typedef struct sch_state sch_state;

sch_trace *sch_trace_new(void);
void sch_trace_free(sch_trace *t);
void sch_trace_append(sch_trace *t, const sch_step *step);
/* Return the text form of "t", malloc'ed. */
char *sch_trace_to_text(const sch_trace *t);
/* Parse the text form "text" ("file" names it in errors) into a trace;
 * NULL with the error (FILE:LINE:COL) in "ctx". */
sch_trace *sch_trace_parse(tessel_ctx *ctx, const char *file, const char *text);
/* Apply step "step" to "st" (which appends it to st->trace on success). */
int sch_apply_step(sch_state *st, const sch_step *step);
/* Apply every step of "t" to "st"; stop at the first refusal, whose error
 * names the step's line. */
int sch_replay(sch_state *st, const sch_trace *t, const char *file);

/* Helpers for primitives recording themselves. */
void sch_step_init(sch_step *s, const char *prim);
void sch_step_arg(sch_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sch_step_out(sch_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
