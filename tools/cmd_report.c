/* `tessel report`: one self-contained HTML page on the record store: a
 * table of the tuning tasks (workload on target) and, per task, the best
 * time so far against the trial number as inline SVG. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const char report_help[] =
	"usage: tessel report [--db PATH] --out FILE\n"
	"\n"
	"Write an HTML report of the record store PATH (default: $TESSEL_DB, else\n"
	"~/.cache/tessel/records.db) to FILE (- is standard output): one page, no\n"
	"external assets and no scripts. A table lists every task (a workload on a\n"
	"target): the op, its records and errors, the best time and GFLOP/s (as\n"
	"tessel best chooses it: the winner of the latest run-off, with its time\n"
	"there, when the task had one), the default schedule's time (its record\n"
	"has the empty trace) and the speedup over it; a section per task draws\n"
	"the best median so far against the trial number (records in the order\n"
	"they were stored) and shows the best trace.\n";

/* What the records of one workload on one target add up to. */
typedef struct report_task {
	int64_t workload, target;
	int records, errors;
	double best_s, default_s;
	double fastest_s;          /* the lowest recorded median */
	bool runoff;               /* the best won the latest run-off and
	                            * best_s is its time there */
	int64_t best_id;
	char *best_trace;
	double *times;             /* per trial: its median time, NAN on error */
	int cap;
	char *key, *op_text, *target_text;
	double flops;              /* NAN when unknown */
} report_task;

typedef struct report {
	report_task *tasks;
	int n, cap;
	int64_t records;
} report;

static report_task *find_task(report *rep, int64_t workload, int64_t target)
{
	for (int i = rep->n - 1; i >= 0; i--)
		if (rep->tasks[i].workload == workload && rep->tasks[i].target == target)
			return &rep->tasks[i];
	if (rep->n == rep->cap) {
		int cap = rep->cap ? rep->cap * 2 : 8;
		report_task *grown = realloc(rep->tasks, (size_t)cap * sizeof(*grown));
		if (!grown)
			return NULL;
		rep->tasks = grown;
		rep->cap = cap;
	}
	report_task *t = &rep->tasks[rep->n++];
	*t = (report_task){ .workload = workload, .target = target, .best_s = NAN,
		.default_s = NAN, .flops = NAN };
	return t;
}

/* Add record "r" to its task in "arg" (a report).  Return 0, or 1 when out
 * of memory. */
static int add_record(const tune_record *r, void *arg)
{
	report *rep = arg;
	report_task *t = find_task(rep, r->workload_id, r->target_id);
	if (!t)
		return 1;
	if (t->records == t->cap) {
		int cap = t->cap ? t->cap * 2 : 64;
		double *grown = realloc(t->times, (size_t)cap * sizeof(*grown));
		if (!grown)
			return 1;
		t->times = grown;
		t->cap = cap;
	}
	bool ok = strcmp(r->error_class, "ok") == 0;
	t->times[t->records++] = ok ? r->cost_median_s : NAN;
	rep->records++;
	if (!ok) {
		t->errors++;
		return 0;
	}
	if (r->trace[0] == 0 && !(r->cost_median_s >= t->default_s))
		t->default_s = r->cost_median_s;
	if (!(r->cost_median_s >= t->best_s)) {
		char *trace = strdup(r->trace);
		if (!trace)
			return 1;
		free(t->best_trace);
		t->best_trace = trace;
		t->best_s = r->cost_median_s;
		t->best_id = r->id;
	}
	return 0;
}

/* Make the best of each task of "rep" the one tune_db_best chooses when
 * that is a run-off's winner.  Return 0, or 1 after printing the error. */
static int take_runoff_winners(tune_db *db, report *rep)
{
	for (int i = 0; i < rep->n; i++) {
		report_task *t = &rep->tasks[i];
		t->fastest_s = t->best_s;
		tune_record best;
		int r = tune_db_best(db, t->workload, t->target, &best);
		if (r < 0)
			return cli_fail("%s", tune_db_error(db));
		if (r == 0 && isfinite(best.runoff_s)) {
			char *trace = strdup(best.trace);
			if (!trace) {
				tune_record_clear(&best);
				return cli_fail("out of memory");
			}
			free(t->best_trace);
			t->best_trace = trace;
			t->best_s = best.runoff_s;
			t->best_id = best.id;
			t->runoff = true;
		}
		if (r == 0)
			tune_record_clear(&best);
	}
	return 0;
}

/* Return column "col" of the row "st" stands on, strdup'ed ("" for NULL). */
static char *column_text(sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	return strdup(v ? (const char *)v : "");
}

/* Fill in the workload key, op text, flops and target string of every task
 * of "rep" from "db".  Return 0, or 1 after printing the error. */
static int describe_tasks(tune_db *db, report *rep)
{
	sqlite3 *sql = tune_db_sqlite(db);
	sqlite3_stmt *w = NULL, *t = NULL;
	int status = 0;
	if (sqlite3_prepare_v2(sql, "SELECT key, op_text, flops FROM workloads "
		"WHERE id = ?1", -1, &w, NULL) != SQLITE_OK
		|| sqlite3_prepare_v2(sql, "SELECT description FROM targets "
		"WHERE id = ?1", -1, &t, NULL) != SQLITE_OK)
		status = 1;
	for (int i = 0; i < rep->n && status == 0; i++) {
		report_task *task = &rep->tasks[i];
		sqlite3_reset(w);
		sqlite3_reset(t);
		sqlite3_bind_int64(w, 1, task->workload);
		sqlite3_bind_int64(t, 1, task->target);
		if (sqlite3_step(w) != SQLITE_ROW || sqlite3_step(t) != SQLITE_ROW) {
			status = 1;
			break;
		}
		task->key = column_text(w, 0);
		task->op_text = column_text(w, 1);
		if (sqlite3_column_type(w, 2) != SQLITE_NULL)
			task->flops = sqlite3_column_double(w, 2);
		task->target_text = column_text(t, 0);
		if (!task->key || !task->op_text || !task->target_text)
			status = 1;
	}
	if (status)
		cli_fail("%s: reading workloads and targets: %s", tune_db_path(db),
			sqlite3_errmsg(sql));
	sqlite3_finalize(w);
	sqlite3_finalize(t);
	return status;
}

static void report_free(report *rep)
{
	for (int i = 0; i < rep->n; i++) {
		report_task *t = &rep->tasks[i];
		free(t->best_trace);
		free(t->times);
		free(t->key);
		free(t->op_text);
		free(t->target_text);
	}
	free(rep->tasks);
}

/* Write "s" to "out" with &, <, >, " and ' escaped for HTML text and
 * attribute values. */
static void html(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
	}
}

/* Write the first line of "s" to "out", escaped. */
static void html_first_line(FILE *out, const char *s)
{
	size_t n = strcspn(s, "\n");
	char line[512];
	snprintf(line, sizeof(line), "%.*s%s", (int)(n < 500 ? n : 500), s,
		n < 500 ? "" : "...");
	html(out, line);
}

/* Write the time "seconds" in ms, or "-" when unknown. */
static void print_ms(FILE *out, double seconds)
{
	if (isfinite(seconds))
		fprintf(out, "%.4g", seconds * 1e3);
	else
		fputs("-", out);
}

/* Write the op's name, taken from the op text "text" ("op NAME(..."). */
static void html_op_name(FILE *out, const char *text)
{
	const char *p = strncmp(text, "op ", 3) == 0 ? text + 3 : text;
	char name[128];
	size_t n = strcspn(p, "( \n");
	snprintf(name, sizeof(name), "%.*s", (int)(n < 127 ? n : 127), p);
	html(out, name[0] ? name : "?");
}

static const char page_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<title>tessel tuning report</title>\n<style>\n"
	"body { font-family: sans-serif; margin: 2em; color: #222; }\n"
	"table { border-collapse: collapse; }\n"
	"th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }\n"
	"td.num { text-align: right; font-variant-numeric: tabular-nums; }\n"
	"th { background: #f0f0f0; }\n"
	"code, pre { font-family: monospace; }\n"
	"pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; }\n"
	"section { margin-top: 2em; border-top: 1px solid #ddd; }\n"
	"svg text { font-family: sans-serif; font-size: 11px; fill: #333; }\n"
	"p.note { font-size: small; color: #555; }\n"
	"</style>\n</head>\n<body>\n";

static void print_table_row(FILE *out, const report_task *t, int i)
{
	fprintf(out, "<tr><td><a href=\"#task-%d\">%d</a></td><td><code>", i + 1, i + 1);
	html(out, t->key);
	fputs("</code></td><td><code>", out);
	html_first_line(out, t->op_text);
	fputs("</code></td><td><code>", out);
	html(out, t->target_text);
	fprintf(out, "</code></td><td class=\"num\">%d</td><td class=\"num\">%d</td>"
		"<td class=\"num\">", t->records, t->errors);
	print_ms(out, t->best_s);
	fputs("</td><td class=\"num\">", out);
	if (t->flops > 0 && isfinite(t->best_s))
		fprintf(out, "%.2f", t->flops / t->best_s * 1e-9);
	else
		fputs("-", out);
	fputs("</td><td class=\"num\">", out);
	print_ms(out, t->default_s);
	fputs("</td><td class=\"num\">", out);
	if (isfinite(t->default_s) && isfinite(t->best_s))
		fprintf(out, "%.2fx", t->default_s / t->best_s);
	else
		fputs("-", out);
	fputs("</td></tr>\n", out);
}

/* Return a round step (1, 2 or 5 times a power of ten) near "span"/5. */
static double tick_step(double span)
{
	double raw = span / 5;
	double p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* The plot area of a curve, in SVG user units, and its scales. */
typedef struct plot {
	double left, top, width, height;
	double xmax, ymax;
} plot;

static double plot_x(const plot *p, double trial)
{
	return p->left + (p->xmax > 1 ? (trial - 1) / (p->xmax - 1) : 0.5) * p->width;
}

static double plot_y(const plot *p, double ms)
{
	return p->top + p->height * (1 - ms / p->ymax);
}

static void print_axes(FILE *out, const plot *p)
{
	double bottom = p->top + p->height, right = p->left + p->width;
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#333\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#333\"/>\n", p->left, p->top, p->left, bottom, p->left, bottom,
		right, bottom);
	double ys = tick_step(p->ymax);
	for (double v = 0; v <= p->ymax * (1 + 1e-9); v += ys)
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e4e4e4\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"end\">%.4g</text>\n", p->left, plot_y(p, v), right,
			plot_y(p, v), p->left - 6, plot_y(p, v) + 4, v);
	double xs = p->xmax > 1 ? fmax(1, round(tick_step(p->xmax - 1))) : 1;
	for (double v = 1; v <= p->xmax; v += xs)
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#333\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">%.0f</text>\n", plot_x(p, v), bottom,
			plot_x(p, v), bottom + 4, plot_x(p, v), bottom + 16, v);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">trial</text>\n"
		"<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">"
		"best median time so far (ms)</text>\n", p->left + p->width / 2,
		bottom + 34, p->top + p->height / 2);
}

/* Draw each correct trial as a dot (those above the plot left out), each
 * failed one as a red mark on the trial axis, and the best time so far as
 * a step line. */
static void print_curve(FILE *out, const plot *p, const report_task *t)
{
	double best = NAN, bottom = p->top + p->height;
	bool started = false;
	for (int i = 0; i < t->records; i++) {
		double ms = t->times[i] * 1e3;
		if (isnan(ms))
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"#d22\" stroke-width=\"2\"/>\n", plot_x(p, i + 1),
				bottom - 6, plot_x(p, i + 1), bottom);
		else if (ms <= p->ymax)
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#9bb\"/>\n",
				plot_x(p, i + 1), plot_y(p, ms));
	}
	fputs("<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"", out);
	for (int i = 0; i < t->records; i++) {
		double ms = t->times[i] * 1e3;
		if (isnan(ms) || ms >= best)
			continue;
		if (started)
			fprintf(out, " %.1f,%.1f", plot_x(p, i + 1), plot_y(p, best));
		best = ms;
		fprintf(out, "%s%.1f,%.1f", started ? " " : "", plot_x(p, i + 1),
			plot_y(p, best));
		started = true;
	}
	if (started)
		fprintf(out, " %.1f,%.1f", plot_x(p, t->records), plot_y(p, best));
	fputs("\"/>\n", out);
}

/* Draw the tuning curve of "t" as an SVG element. */
static void print_svg(FILE *out, const report_task *t)
{
	plot p = { 70, 15, 560, 220, t->records, 0 };
	for (int i = 0; i < t->records; i++)
		if (!isnan(t->times[i])) {
			p.ymax = t->times[i] * 1e3 * 1.1;
			break;
		}
	if (isfinite(t->default_s))
		p.ymax = fmax(p.ymax, t->default_s * 1e3 * 1.1);
	if (!(p.ymax > 0)) {
		fputs("<p>No trial ran correctly: no curve.</p>\n", out);
		return;
	}
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"660\" "
		"height=\"290\" viewBox=\"0 0 660 290\" role=\"img\">\n<title>best time "
		"so far against trial number</title>\n");
	print_axes(out, &p);
	if (isfinite(t->default_s))
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n<text x=\"%.1f\" "
			"y=\"%.1f\" text-anchor=\"end\">default schedule</text>\n", p.left,
			plot_y(&p, t->default_s * 1e3), p.left + p.width,
			plot_y(&p, t->default_s * 1e3), p.left + p.width - 4,
			plot_y(&p, t->default_s * 1e3) - 4);
	print_curve(out, &p, t);
	fputs("</svg>\n", out);
}

static void print_section(FILE *out, const report_task *t, int i)
{
	fprintf(out, "<section id=\"task-%d\">\n<h2>%d. ", i + 1, i + 1);
	html_op_name(out, t->op_text);
	fputs(" on <code>", out);
	html(out, t->target_text);
	fputs("</code></h2>\n<p>workload <code>", out);
	html(out, t->key);
	fprintf(out, "</code>: %d records, %d errors; best ", t->records, t->errors);
	print_ms(out, t->best_s);
	fputs(" ms", out);
	if (t->best_id)
		fprintf(out, " (record #%lld)", (long long)t->best_id);
	if (t->runoff) {
		fputs(", the winner of the latest run-off, with its time there; the "
			"fastest recorded median was ", out);
		print_ms(out, t->fastest_s);
		fputs(" ms", out);
	}
	fputs(".</p>\n<details><summary>op</summary>\n<pre>", out);
	html(out, t->op_text);
	fputs("</pre>\n</details>\n", out);
	print_svg(out, t);
	fputs("<p class=\"note\">Red line: the best median time so far; dots: "
		"each correct trial; red marks on the axis: failed trials; dashed: the "
		"default schedule.</p>\n", out);
	if (t->best_trace) {
		fputs("<p>best trace:</p>\n<pre>", out);
		html(out, t->best_trace[0] ? t->best_trace : "(the default schedule)");
		fputs("</pre>\n", out);
	}
	fputs("</section>\n", out);
}

static void print_page(FILE *out, const report *rep, const char *db_path)
{
	char now[TUNE_TIME_LEN];
	tune_db_now(now);
	fputs(page_head, out);
	fputs("<h1>tessel tuning report</h1>\n<p>Record store <code>", out);
	html(out, db_path);
	fprintf(out, "</code>: %d tasks, %lld records; written %s.</p>\n", rep->n,
		(long long)rep->records, now);
	if (rep->n == 0)
		fputs("<p>The store holds no records yet.</p>\n", out);
	else
		fputs("<table>\n<tr><th>#</th><th>workload</th><th>op</th><th>target</th>"
			"<th>records</th><th>errors</th><th>best (ms)</th><th>GFLOP/s</th>"
			"<th>default (ms)</th><th>speedup</th></tr>\n", out);
	for (int i = 0; i < rep->n; i++)
		print_table_row(out, &rep->tasks[i], i);
	if (rep->n)
		fputs("</table>\n", out);
	for (int i = 0; i < rep->n; i++)
		print_section(out, &rep->tasks[i], i);
	fputs("</body>\n</html>\n", out);
}

/* Write the page of "rep" to "path" (- : standard output).  Return 0, or 1
 * after printing the error. */
static int write_page(const report *rep, const char *db_path, const char *path)
{
	bool to_stdout = strcmp(path, "-") == 0;
	FILE *out = to_stdout ? stdout : fopen(path, "w");
	if (!out)
		return cli_fail("--out %s: %s", path, strerror(errno));
	print_page(out, rep, db_path);
	if (to_stdout)
		return fflush(out) || ferror(out) ? cli_fail("write error on stdout") : 0;
	if (ferror(out) | fclose(out)) {
		remove(path);
		return cli_fail("--out %s: write error", path);
	}
	fprintf(stderr, "wrote %s: %d tasks, %lld records\n", path, rep->n,
		(long long)rep->records);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, report_help))
		return 0;
	const char *db_path = NULL, *out = NULL;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--db", &missing)))
			db_path = v;
		else if ((v = cli_option(argc, argv, &i, "--out", &missing)))
			out = v;
		else if (missing)
			return cli_fail("report: %s needs a value", argv[i]);
		else
			return cli_fail("report: unexpected argument '%s' (see tessel report "
				"--help)", argv[i]);
	}
	if (!out)
		return cli_fail("report: missing --out FILE (see tessel report --help)");
	tune_db *db = cli_open_db(db_path, false);
	if (!db)
		return 1;
	report rep = { 0 };
	int r = tune_db_foreach(db, 0, 0, add_record, &rep);
	int status = r < 0 ? cli_fail("%s", tune_db_error(db))
		: r > 0 ? cli_fail("out of memory") : describe_tasks(db, &rep);
	if (status == 0)
		status = take_runoff_winners(db, &rep);
	if (status == 0)
		status = write_page(&rep, tune_db_path(db), out);
	report_free(&rep);
	tune_db_close(db);
	return status;
}
