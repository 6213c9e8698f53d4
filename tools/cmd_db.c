/* `tessel db`: move tuning records between stores as JSON lines
 * (tune_db_export_jsonl, tune_db_import_jsonl) and describe a store. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const char db_help[] =
	"usage: tessel db export [--db PATH] [--workload KEY] [--target TARGET]\n"
	"                        [--ok-only] [--out FILE]\n"
	"       tessel db import FILE... [--db PATH]\n"
	"       tessel db info [--db PATH]\n"
	"\n"
	"The record store PATH (default: $TESSEL_DB, else\n"
	"~/.cache/tessel/records.db) holds what `tessel tune` measured;\n"
	"docs/tuning-db.md describes it and the JSON-lines form.\n"
	"\n"
	"export   write the records (oldest first) as JSON lines to FILE (default:\n"
	"         standard output): all of them, or those of the workload KEY (as\n"
	"         `tessel best --json` prints it), of TARGET (a stored target string,\n"
	"         or a CPU target string as `tessel run` takes), correct ones only.\n"
	"import   read JSON lines from each FILE (- is standard input) into PATH,\n"
	"         creating it when missing, one transaction per file; records\n"
	"         already stored are skipped, so importing twice changes nothing. A\n"
	"         malformed line fails its file, which then adds nothing. Prints\n"
	"         the lines read and the records added and skipped.\n"
	"info     print the schema version and how many targets, workloads,\n"
	"         records and cost models PATH holds; the targets; and a line per\n"
	"         task (workload on a target): its key and op, its records and\n"
	"         failures, and its best median time.\n";

typedef struct db_args {
	const char *db, *workload, *target, *out;
	const char *files[256];
	int nfiles;
	bool ok_only;
} db_args;

/* Parse the arguments after the subcommand "sub"; which options it takes
 * is checked by the caller. */
static int parse_db_args(db_args *a, const char *sub, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--db", &missing))) {
			a->db = v;
		} else if ((v = cli_option(argc, argv, &i, "--workload", &missing))) {
			a->workload = v;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			a->target = v;
		} else if ((v = cli_option(argc, argv, &i, "--out", &missing))) {
			a->out = v;
		} else if (strcmp(argv[i], "--ok-only") == 0) {
			a->ok_only = true;
		} else if (missing) {
			return cli_fail("db %s: %s needs a value", sub, argv[i]);
		} else if (argv[i][0] == '-' && argv[i][1] != 0) {
			return cli_fail("db %s: unexpected argument '%s' (see tessel db --help)",
				sub, argv[i]);
		} else if (a->nfiles == (int)(sizeof(a->files) / sizeof(a->files[0]))) {
			return cli_fail("db %s: too many files", sub);
		} else {
			a->files[a->nfiles++] = argv[i];
		}
	}
	return 0;
}

/* Return the target of the filter: "target" itself when "db" stores it,
 * else its canonical CPU target string in "buf"; NULL after printing. */
static const char *filter_target(tune_db *db, const char *target, char *buf,
	size_t len)
{
	int64_t id = tune_db_find_target(db, target);
	if (id < 0) {
		cli_fail("%s", tune_db_error(db));
		return NULL;
	}
	if (id > 0)
		return target;
	rt_cpu_target cpu;
	char err[512];
	if (rt_cpu_target_parse(target, &cpu, err, sizeof(err))) {
		cli_fail_target(err);
		return NULL;
	}
	rt_cpu_target_print(&cpu, buf, len);
	return buf;
}

static int db_export(const db_args *a)
{
	if (a->nfiles)
		return cli_fail("db export: unexpected argument '%s' (see tessel db --help)",
			a->files[0]);
	tune_db *db = cli_open_db(a->db, false);
	if (!db)
		return 1;
	char target[RT_CPU_TARGET_STR_MAX];
	tune_db_filter filter = { a->workload, NULL, a->ok_only };
	int status = 0;
	if (a->target && !(filter.target = filter_target(db, a->target, target,
		sizeof(target))))
		status = 1;
	bool to_stdout = !a->out || strcmp(a->out, "-") == 0;
	FILE *out = status || to_stdout ? stdout : fopen(a->out, "w");
	if (!out)
		status = cli_fail("--out %s: %s", a->out, strerror(errno));
	int64_t n = status ? 0 : tune_db_export_jsonl(db, out, &filter);
	if (n < 0)
		status = cli_fail("%s", tune_db_error(db));
	if (out && !to_stdout && (fclose(out) || status)) {
		status = status ? status : cli_fail("--out %s: write error", a->out);
		remove(a->out);
	}
	if (status == 0 && !to_stdout)
		fprintf(stderr, "exported %lld records to %s\n", (long long)n, a->out);
	tune_db_close(db);
	return status;
}

/* Import the JSON lines of "in" ("name" names it) into "db" and print
 * what happened.  Return 0, or 1 after printing the error. */
static int import_file(tune_db *db, FILE *in, const char *name)
{
	tune_db_import_stats s = { 0 };
	if (tune_db_import_jsonl(db, in, name, &s))
		return cli_fail("%s", tune_db_error(db));
	printf("%s: %lld lines, %lld added, %lld skipped\n", name, (long long)s.lines,
		(long long)s.added, (long long)s.skipped);
	return 0;
}

static int db_import(const db_args *a)
{
	if (a->workload || a->target || a->out || a->ok_only)
		return cli_fail("db import takes FILE... and --db PATH only "
			"(see tessel db --help)");
	if (a->nfiles == 0)
		return cli_fail("db import: no FILE to import (- is standard input)");
	FILE *in[256] = { 0 };
	int status = 0;
	for (int i = 0; i < a->nfiles && status == 0; i++) {
		in[i] = strcmp(a->files[i], "-") == 0 ? stdin : fopen(a->files[i], "r");
		if (!in[i])
			status = cli_fail("%s: %s", a->files[i], strerror(errno));
	}
	tune_db *db = status ? NULL : cli_open_db(a->db, true);
	if (status == 0 && !db)
		status = 1;
	for (int i = 0; i < a->nfiles && status == 0; i++)
		status = import_file(db, in[i], strcmp(a->files[i], "-") == 0
			? "<stdin>" : a->files[i]);
	for (int i = 0; i < a->nfiles; i++)
		if (in[i] && in[i] != stdin)
			fclose(in[i]);
	tune_db_close(db);
	return status;
}

/* Return the count the query "sql" selects, its parameter ?1 bound to
 * "param" (NULL: none), or -1 on error. */
static int64_t query_count(tune_db *db, const char *sql, const char *param)
{
	sqlite3_stmt *st = NULL;
	int64_t n = -1;
	if (sqlite3_prepare_v2(tune_db_sqlite(db), sql, -1, &st, NULL) == SQLITE_OK &&
	    (!param || sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC) == SQLITE_OK) &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Return text column "col" of the row "st" stands on, "?" for NULL. */
static const char *column_or_unknown(sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	return v ? (const char *)v : "?";
}

/* Print the value of "key" in the meta table of "db" ("?" when absent). */
static void print_meta(tune_db *db, const char *label, const char *key)
{
	sqlite3_stmt *st = NULL;
	const char *v = "?";
	if (sqlite3_prepare_v2(tune_db_sqlite(db), "SELECT value FROM meta "
		"WHERE key = ?1", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			v = column_or_unknown(st, 0);
	}
	printf("%s: %s\n", label, v);
	sqlite3_finalize(st);
}

/* Print the stored targets of "db", a line each: its id and string.
 * Return 0, or -1 on a database error. */
static int print_targets(tune_db *db)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(tune_db_sqlite(db), "SELECT id, description FROM targets "
		"ORDER BY id", -1, &st, NULL) != SQLITE_OK)
		return -1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		printf("  #%lld %s\n", (long long)sqlite3_column_int64(st, 0),
			column_or_unknown(st, 1));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Print the op's signature: the first line of "op_text" without "op "
 * and the opening brace. */
static void print_signature(const char *op_text)
{
	if (strncmp(op_text, "op ", 3) == 0)
		op_text += 3;
	size_t n = strcspn(op_text, "{\n");
	while (n > 0 && op_text[n - 1] == ' ')
		n--;
	printf("%.*s", (int)n, op_text);
}

/* Print the tasks of "db" (a workload on a target), a line each in the
 * order they were first measured: the workload key, the op's signature,
 * the target's id, the records and failures, and the best median time,
 * as `tessel best` chooses it, with its throughput.  Return 0, or -1 on
 * a database error. */
static int print_tasks(tune_db *db)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(tune_db_sqlite(db), "SELECT w.key, w.op_text, w.flops, "
		"r.target_id, count(*), sum(r.error_class <> 'ok'), r.workload_id "
		"FROM records r JOIN workloads w ON w.id = r.workload_id "
		"GROUP BY r.workload_id, r.target_id ORDER BY min(r.id)", -1, &st,
		NULL) != SQLITE_OK)
		return -1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		printf("  %s ", column_or_unknown(st, 0));
		print_signature(column_or_unknown(st, 1));
		long long n = sqlite3_column_int64(st, 4);
		printf(" on #%lld: %lld record%s (%lld failed), best ",
			(long long)sqlite3_column_int64(st, 3), n, n == 1 ? "" : "s",
			(long long)sqlite3_column_int64(st, 5));
		tune_record best;
		int found = tune_db_best(db, sqlite3_column_int64(st, 6),
			sqlite3_column_int64(st, 3), &best);
		if (found < 0) {
			rc = SQLITE_ERROR;
			break;
		}
		if (found == 1) {
			printf("none\n");
			continue;
		}
		double best_s = tune_record_time(&best), flops = sqlite3_column_double(st, 2);
		printf("%.4g ms", best_s * 1e3);
		if (flops > 0 && best_s > 0)
			printf(" (%.1f GFLOP/s)", flops / best_s * 1e-9);
		printf("%s\n", isfinite(best.runoff_s) ? " in the run-off" : "");
		tune_record_clear(&best);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int db_info(const db_args *a)
{
	if (a->nfiles || a->workload || a->target || a->out || a->ok_only)
		return cli_fail("db info takes --db PATH only (see tessel db --help)");
	tune_db *db = cli_open_db(a->db, false);
	if (!db)
		return 1;
	int64_t targets = query_count(db, "SELECT count(*) FROM targets", NULL);
	int64_t workloads = query_count(db, "SELECT count(*) FROM workloads", NULL);
	int64_t records = query_count(db, "SELECT count(*) FROM records", NULL);
	int64_t ok = query_count(db, "SELECT count(*) FROM records "
		"WHERE error_class = 'ok'", NULL);
	int64_t models = query_count(db, "SELECT count(*) FROM models", NULL);
	int64_t runoffs = query_count(db, "SELECT count(*) FROM runoffs", NULL);
	int64_t others = query_count(db, "SELECT count(*) FROM records "
		"WHERE tessel_version <> ?1", tune_db_build_version());
	int status = 0;
	if (targets < 0 || workloads < 0 || records < 0 || ok < 0 || models < 0 ||
	    runoffs < 0 || others < 0) {
		status = cli_fail("%s: %s", tune_db_path(db),
			sqlite3_errmsg(tune_db_sqlite(db)));
	} else {
		printf("store: %s\n", tune_db_path(db));
		print_meta(db, "schema version", "schema_version");
		print_meta(db, "created by", "created_by");
		print_meta(db, "created at", "created_at");
		printf("targets: %lld\n", (long long)targets);
		if (print_targets(db) == 0) {
			printf("workloads: %lld\nrecords: %lld (%lld ok, %lld failed)\n"
				"measured by other builds than this (tessel %s): %lld\n"
				"run-offs: %lld\nmodels: %lld\ntasks:\n", (long long)workloads,
				(long long)records, (long long)ok, (long long)(records - ok),
				tune_db_build_version(), (long long)others,
				(long long)runoffs, (long long)models);
			if (print_tasks(db))
				status = 1;
		} else {
			status = 1;
		}
		if (status)
			cli_fail("%s: %s", tune_db_path(db), sqlite3_errmsg(tune_db_sqlite(db)));
	}
	tune_db_close(db);
	return status;
}

int cmd_db(int argc, char **argv)
{
	if (argc < 1)
		return cli_fail("db: missing subcommand: export, import or info "
			"(see tessel db --help)");
	if (cli_help_asked(argc, argv, db_help))
		return 0;
	static const struct {
		const char *name;
		int (*run)(const db_args *a);
	} subs[] = { { "export", db_export }, { "import", db_import }, { "info", db_info } };
	for (size_t s = 0; s < sizeof(subs) / sizeof(subs[0]); s++) {
		if (strcmp(argv[0], subs[s].name) != 0)
			continue;
		db_args a = { 0 };
		if (parse_db_args(&a, argv[0], argc - 1, argv + 1))
			return 1;
		return subs[s].run(&a);
	}
	return cli_fail("db: unknown subcommand '%s' (export, import or info; see "
		"tessel db --help)", argv[0]);
}
