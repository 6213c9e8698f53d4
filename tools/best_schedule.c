#include "tools/best_schedule.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "schedule/state.h"
#include "schedule/trace.h"
#include "tools/cli.h"
#include "tuner/db.h"
#include "tuner/measure.h"
#include "tuner/task.h"

/* Replay the trace of record "r" on a new schedule of "op"; NULL, with the
 * error in "ctx", when it no longer replays. */
static sch_state *replay_record(tessel_ctx *ctx, tessel_op *op,
	const tune_record *r)
{
	char name[64];
	snprintf(name, sizeof(name), "record #%lld", (long long)r->id);
	sch_state *st = sch_state_new(ctx, op);
	sch_trace *t = st ? sch_trace_parse(ctx, name, r->trace) : NULL;
	if (!t || sch_replay(st, t, name)) {
		sch_state_free(st);
		st = NULL;
	}
	sch_trace_free(t);
	return st;
}

cli_record_code cli_compare_record_code(const tune_task *task, const tune_record *r)
{
	if (!r->code_key)
		return CLI_CODE_UNKNOWN;
	tessel_ctx *ctx = tessel_ctx_new();
	sch_state *st = ctx ? replay_record(ctx, task->op, r) : NULL;
	loop_prog *p = st ? sch_program(st) : NULL;
	char key[CG_CODE_KEY_LEN];
	cli_record_code c = p && tune_code_key(task, NULL, ctx, p, key) == 0
		? (strcmp(key, r->code_key) == 0 ? CLI_CODE_SAME : CLI_CODE_OTHER)
		: CLI_CODE_UNKNOWN;
	loop_prog_free(p);
	sch_state_free(st);
	tessel_ctx_free(ctx);
	return c;
}

/* Return the schedule of "task"'s op from record "r" of the store
 * "where", or NULL when its trace no longer replays, saying which in
 * "said" (and which tessel measured it, when another build did, and
 * whether this one makes other code of it). */
static sch_state *schedule_of_record(tessel_ctx *ctx, const tune_task *task,
	const tune_record *r, const char *where, char *said, size_t saidlen)
{
	sch_state *st = replay_record(ctx, task->op, r);
	bool other = tune_record_other_build(r);
	cli_record_code code = st ? cli_compare_record_code(task, r) : CLI_CODE_UNKNOWN;
	if (st)
		snprintf(said, saidlen, "best record #%lld from %s (median %.6g ms%s%s%s%s)",
			(long long)r->id, where, tune_record_time(r) * 1e3,
			isfinite(r->runoff_s) ? " in the run-off" : "",
			other ? ", measured by tessel " : "", other ? r->tessel_version : "",
			code == CLI_CODE_OTHER ? "; this build makes other code of it"
			: code == CLI_CODE_SAME && other ? ", the same code" : "");
	else
		snprintf(said, saidlen, "best record #%lld from %s no longer replays "
			"(%s); default schedule", (long long)r->id, where,
			tessel_ctx_error(ctx)->message);
	return st;
}

sch_state *cli_load_best_schedule(tessel_ctx *ctx, tessel_op *op,
	const char *target, const char *db_path, char *said, size_t saidlen)
{
	char err[1024], where[4096];
	tune_task task;
	if (tune_task_init(&task, ctx, op, target, err, sizeof(err))) {
		cli_fail("%s", err);
		return NULL;
	}
	if (db_path)
		snprintf(where, sizeof(where), "%s", db_path);
	else if (tune_db_default_path(where, sizeof(where)))
		snprintf(where, sizeof(where), "the default record store");
	tune_db *db = cli_open_db(db_path, false);
	tune_record r;
	int found = db ? cli_find_best(db, &task, &r) : -1;
	sch_state *st = NULL;
	if (found == 0) {
		st = schedule_of_record(ctx, &task, &r, where, said, saidlen);
		tune_record_clear(&r);
	} else if (found == 1) {
		snprintf(said, saidlen, "no record for this workload/target in %s; "
			"default schedule", where);
	}
	tessel_ctx_clear_error(ctx);
	if (found >= 0 && !st)
		st = tune_task_is_gpu(&task) ? cli_load_gpu_schedule(ctx, op, NULL) :
		     cli_load_schedule(ctx, op, NULL);
	tune_db_close(db);
	tune_task_clear(&task);
	return st;
}

sch_state *cli_load_chosen_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched,
	const char *db_path, const char *target, bool gpu, char *said, size_t saidlen)
{
	if (db_path)
		return cli_load_best_schedule(ctx, op, target, db_path, said, saidlen);
	if (sched)
		snprintf(said, saidlen, "trace %s", sched);
	else
		snprintf(said, saidlen, "default %sschedule", gpu ? "GPU " : "");
	return gpu ? cli_load_gpu_schedule(ctx, op, sched) : cli_load_schedule(ctx, op, sched);
}
