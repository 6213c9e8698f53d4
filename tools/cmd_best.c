/* `tessel best`: the best recorded schedule of an op on a target, read
 * from the record store (docs/tuning-db.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/best_schedule.h"
#include "tools/cli.h"
#include "tools/commands.h"

static const char best_help[] =
	"usage: tessel best SPEC [--set NAME=VALUE,...] [--target TARGET] [--db PATH]\n"
	"                   [--out FILE] [--json]\n"
	"\n"
	"Print the best recorded schedule of an op on TARGET (a CPU target string,\n"
	"default: this machine) from the record store PATH (default: $TESSEL_DB,\n"
	"else ~/.cache/tessel/records.db): the workload key, the record's id, when\n"
	"and by which tessel it was measured, its median time (and GFLOP/s), and\n"
	"its trace in the text form. The best is the fastest of the latest run-off\n"
	"(see tessel tune --help), with its time there, when the op had one, else\n"
	"the record of lowest median time. It prints the trace's code as the tuner did\n"
	"and says when this build makes other code of it than the record ran (its\n"
	"code key differs: another tessel or another compiler), so that the time\n"
	"may not hold. --out FILE also writes the trace to FILE, for\n"
	"`tessel run --sched FILE`. --json prints one JSON object instead (keys\n"
	"found, workload, target, db, and for a record id, median_s, min_s,\n"
	"runoff_s (null: not a run-off's winner), gflops, measured_at,\n"
	"tessel_version, code_key (null: unknown), code (same, other or unknown),\n"
	"trace). Exit 1 when the store holds no\n"
	"correct record of the op on TARGET (with --json, the object then says\n"
	"\"found\": false and still gives the workload key and target).\n";

typedef struct best_args {
	const char *spec, *db, *target, *out;
	cli_set set;
	bool json;
} best_args;

static int parse_best_args(best_args *a, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&a->set, v))
				return -1;
		} else if ((v = cli_option(argc, argv, &i, "--db", &missing))) {
			a->db = v;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			a->target = v;
		} else if ((v = cli_option(argc, argv, &i, "--out", &missing))) {
			a->out = v;
		} else if (strcmp(argv[i], "--json") == 0) {
			a->json = true;
		} else if (missing) {
			return cli_fail("best: %s needs a value", argv[i]);
		} else if (argv[i][0] == '-' || a->spec) {
			return cli_fail("best: unexpected argument '%s' (see tessel best --help)",
				argv[i]);
		} else {
			a->spec = argv[i];
		}
	}
	if (!a->spec)
		return cli_fail("best: missing SPEC (see tessel best --help)");
	return 0;
}

/* Write the trace of record "r" of "task" to the file "path", with a
 * comment saying where it came from.  Return 0, or 1 after printing. */
static int write_trace(const char *path, const tune_task *task,
	const tune_record *r)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return cli_fail("--out %s: %s", path, strerror(errno));
	fprintf(f, "# op: %s, workload %s, on %s\n# record #%lld, median %.6g ms%s%s\n",
		tessel_op_name(task->op), task->key, task->target, (long long)r->id,
		tune_record_time(r) * 1e3, isfinite(r->runoff_s) ? " in the run-off" : "",
		r->trace[0] ? "" : "; the default schedule");
	fputs(r->trace, f);
	if (ferror(f) | fclose(f))
		return cli_fail("--out %s: write error", path);
	return 0;
}

/* cli_record_code as JSON's "code". */
static const char *const code_word[] = {
	[CLI_CODE_UNKNOWN] = "unknown",
	[CLI_CODE_SAME] = "same",
	[CLI_CODE_OTHER] = "other",
};

static void print_json(const tune_task *task, const char *db_path,
	const tune_record *r)
{
	printf("{\"found\": %s, \"op\": ", r ? "true" : "false");
	cli_json_string(stdout, tessel_op_name(task->op));
	printf(", \"workload\": \"%s\", \"target\": ", task->key);
	cli_json_string(stdout, task->target);
	printf(", \"db\": ");
	cli_json_string(stdout, db_path);
	if (r) {
		printf(", \"id\": %lld, \"median_s\": %.9g, \"min_s\": ", (long long)r->id,
			r->cost_median_s);
		if (isfinite(r->cost_min_s))
			printf("%.9g", r->cost_min_s);
		else
			printf("null");
		printf(", \"runoff_s\": ");
		if (isfinite(r->runoff_s))
			printf("%.9g", r->runoff_s);
		else
			printf("null");
		printf(", \"gflops\": ");
		if (task->flops > 0)
			printf("%.6g", task->flops / tune_record_time(r) * 1e-9);
		else
			printf("null");
		printf(", \"measured_at\": ");
		cli_json_string(stdout, r->measured_at);
		printf(", \"tessel_version\": ");
		cli_json_string(stdout, r->tessel_version);
		printf(", \"code_key\": ");
		if (r->code_key)
			cli_json_string(stdout, r->code_key);
		else
			printf("null");
		printf(", \"code\": \"%s\"", code_word[cli_compare_record_code(task, r)]);
		printf(", \"trace\": ");
		cli_json_string(stdout, r->trace);
	}
	printf("}\n");
}

static void print_text(const tune_task *task, const char *db_path,
	const tune_record *r)
{
	printf("op: %s, workload %s, on %s\n", tessel_op_name(task->op), task->key,
		task->target);
	printf("record: #%lld in %s, measured %s by tessel %s\n", (long long)r->id,
		db_path, r->measured_at, r->tessel_version);
	cli_record_code code = cli_compare_record_code(task, r);
	if (code == CLI_CODE_OTHER)
		printf("note: this build (tessel %s) makes other code of the trace than "
		       "the record measured, so its time may differ (the run-off at the "
		       "end of a tessel tune measures the best records again)\n",
		       tune_db_build_version());
	else if (code == CLI_CODE_SAME && tune_record_other_build(r))
		printf("note: this build (tessel %s) makes the same code of the trace\n",
		       tune_db_build_version());
	else if (tune_record_other_build(r))
		printf("note: this is tessel %s; the code it generates for the trace may "
		       "differ from what was measured\n", tune_db_build_version());
	printf("time: median %.6g ms", r->cost_median_s * 1e3);
	if (isfinite(r->cost_min_s))
		printf(", min %.6g ms", r->cost_min_s * 1e3);
	if (isfinite(r->runoff_s))
		printf("; the run-off's winner at %.6g ms", r->runoff_s * 1e3);
	if (task->flops > 0)
		printf(", %.2f GFLOP/s", task->flops / tune_record_time(r) * 1e-9);
	printf("\ntrace:\n%s", r->trace[0] ? r->trace : "(the default schedule)\n");
}

/* Say that "db" holds no correct record of "task"; return 1. */
static int no_record(tune_db *db, const tune_task *task, bool json)
{
	int64_t w = tune_db_find_workload(db, task->key);
	int64_t t = tune_db_find_target(db, task->target);
	int64_t n = w > 0 && t > 0 ? tune_db_count(db, w, t) : 0;
	if (json)
		print_json(task, tune_db_path(db), NULL);
	if (n > 0)
		return cli_fail("no correct record of %s (workload %s) on %s in %s: "
			"all %lld failed", tessel_op_name(task->op), task->key, task->target,
			tune_db_path(db), (long long)n);
	return cli_fail("no record of %s (workload %s) on %s in %s (tessel tune "
		"makes some)", tessel_op_name(task->op), task->key, task->target,
		tune_db_path(db));
}

static int best_op(const best_args *a, tessel_ctx *ctx, tessel_op *op)
{
	char err[1024];
	tune_task task;
	if (tune_task_init(&task, ctx, op, a->target, err, sizeof(err)))
		return cli_fail("%s", err);
	tune_db *db = cli_open_db(a->db, false);
	tune_record r;
	int found = db ? cli_find_best(db, &task, &r) : -1;
	int status = found < 0;
	if (found == 1)
		status = no_record(db, &task, a->json);
	if (found == 0 && a->json)
		print_json(&task, tune_db_path(db), &r);
	else if (found == 0)
		print_text(&task, tune_db_path(db), &r);
	if (found == 0 && a->out)
		status = write_trace(a->out, &task, &r);
	if (found == 0)
		tune_record_clear(&r);
	tune_db_close(db);
	tune_task_clear(&task);
	return status;
}

int cmd_best(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, best_help))
		return 0;
	best_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_best_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = best_op(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}
