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
/* Return the program of the trace text "text" ("file" names it in
 * errors) replayed on a fresh state of the bound "op", lowered; NULL with
 * the error in "ctx". */
struct loop_prog *sch_trace_program(tessel_ctx *ctx, tessel_op *op, const char *file,
	const char *text);

/* Helpers for primitives recording themselves. */
void sch_step_init(sch_step *s, const char *prim);
void sch_step_arg(sch_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sch_step_out(sch_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The JSON form (schedule/trace_json.c; docs/schedules.md, "JSON form"):
 *     {"tessel_trace": 1, "steps": [
 *       {"prim": "split", "args": ["C.i", "32"], "outs": ["C.io", "C.ii"], "decisions": [32]}
 *     ]}
 * It holds exactly what the text form holds, plus each step's decisions. */
#define SCH_TRACE_JSON_VERSION 1
/* The most steps a JSON trace may hold. */
#define SCH_TRACE_JSON_MAX_STEPS 10000

/* A decision of a step: an argument the tuner samples and may mutate.
 * Integers: split's factor (or nparts), tile's two factors, annotate's
 * value; loop names (categorical): compute_at's and reverse_compute_at's
 * loop.  The decision is the text of argument "arg" of its step. */
typedef struct sch_decision {
	int arg;          /* index in the step's args */
	bool is_int;      /* an integer (in "value"), else a loop name */
	int64_t value;
} sch_decision;

/* Store the decisions of step "s" in "out", in argument order, and return
 * how many there are.  An argument that should be an integer but does not
 * parse as one is not a decision (replay refuses the step). */
int sch_step_decisions(const sch_step *s, sch_decision out[SCH_MAX_ARGS]);
/* Return the JSON form of "t", malloc'ed: one step per line, keys in the
 * order tessel_trace, steps; prim, args, outs, decisions. */
char *sch_trace_to_json(const sch_trace *t);
/* Parse the JSON form "text" ("file" names it in errors) into a trace;
 * NULL with the error (FILE:LINE:COL) in "ctx".  Strict: only this
 * schema, integers only, ASCII escapes only; a step's "decisions", when
 * given, must be those its arguments give. */
sch_trace *sch_trace_parse_json(tessel_ctx *ctx, const char *file,
	const char *text);

#endif
