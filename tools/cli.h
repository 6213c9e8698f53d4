/* What the subcommands of `tessel` share: SPEC loading, --set lists,
 * --in files, and error reporting. */
#ifndef TESSEL_TOOLS_CLI_H
#define TESSEL_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tessel/ops.h"
#include "tessel/te.h"
#include "tuner/db.h"
#include "tuner/task.h"

#define CLI_MAX_SET 64
#define CLI_MAX_IN 64

/* NAME=VALUE pairs gathered from every --set (values stay text: built-in
 * ops take lists and dtypes, .te ops integers). */
typedef struct cli_set {
	int n;
	char *keys[CLI_MAX_SET];
	char *values[CLI_MAX_SET];
} cli_set;

/* Add the comma-separated NAME=VALUE list "arg" (brackets may hold commas:
 * a=[4,1,3]) to "set".  Return 0, or -1 after printing an error. */
int cli_set_parse(cli_set *set, const char *arg);
void cli_set_free(cli_set *set);

/* The op a SPEC names: FILE.te, FILE.te:NAME, or a built-in op name,
 * bound with "set" when "bind" (every size then required), or as declared
 * otherwise.  Return NULL after printing the error. */
tessel_op *cli_load_op(tessel_ctx *ctx, const char *spec, const cli_set *set,
	bool bind);

typedef struct sch_state sch_state;

/* Read the whole file "path" (at most 16 MiB) into a malloc'ed string;
 * NULL after printing why. */
char *cli_read_text_file(const char *path);
/* Return the schedule of "op" given by the trace file "sched" (NULL: the
 * default schedule); NULL after printing the error. */
sch_state *cli_load_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched);
/* The same for a GPU target: without "sched", the default GPU schedule
 * (schedule/gpu_default.h). */
sch_state *cli_load_gpu_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched);

/* Print "tessel: error: MESSAGE" and return 1 (the exit status). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "tessel: error: --target: WHY", the runtime's message "why" about
 * the --target value without its own "target: " prefix, and return 1. */
int cli_fail_target(const char *why);
/* Print the error recorded in "ctx" and return 1. */
int cli_fail_ctx(tessel_ctx *ctx);

/* Parse "text", the value of option "what", as an integer in [lo, hi]
 * into "*v"; 0, or -1 after printing an error. */
int cli_parse_count(const char *text, const char *what, int lo, int hi, int *v);
/* Parse "text" as a non-negative number of seconds; 0, or -1. */
int cli_parse_seconds(const char *text, const char *what, double *v);
/* Parse "text" as a number in [0, 1]; 0, or -1 after printing an error. */
int cli_parse_fraction(const char *text, const char *what, double *v);

/* Return true when "arg" is "-h" or "--help". */
bool cli_is_help(const char *arg);
/* Print "help" to standard output and return true when one of the "argc"
 * arguments "argv" is "-h" or "--help" (then the command exits 0). */
bool cli_help_asked(int argc, char **argv, const char *help);

/* Return the value of option "name" at argv[*i] ("--name VALUE" or
 * "--name=VALUE"), advancing *i; NULL when argv[*i] is not that option.
 * Sets *missing when the option has no value. */
const char *cli_option(int argc, char **argv, int *i, const char *name,
	bool *missing);

/* Open the record store at "path" (NULL: tune_db_default_path).  When
 * "create" is false a missing file is an error rather than a new, empty
 * store.  Return NULL after printing the error (a refused file is left as
 * it was). */
tune_db *cli_open_db(const char *path, bool create);
/* Fill "out" with the best "ok" record of "task" in "db".  Return 0 when
 * found, 1 when there is none (nothing printed), -1 after printing the
 * error.  Release "out" with tune_record_clear. */
int cli_find_best(tune_db *db, const tune_task *task, tune_record *out);
/* Write "s" to "out" as a JSON string, quotes included. */
void cli_json_string(FILE *out, const char *s);

#endif
