#include "tools/cli.h"

#include "schedule/gpu_default.h"
#include "schedule/state.h"
#include "schedule/trace.h"

static bool parse_int(const char *text, int64_t *v);
static bool parse_number(const char *text, double *v);

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("tessel: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_fail_target(const char *why)
{
	const char *prefix = "target: ";
	if (strncmp(why, prefix, strlen(prefix)) == 0)
		why += strlen(prefix);
	return cli_fail("--target: %s", why);
}

int cli_fail_ctx(tessel_ctx *ctx)
{
	tessel_ctx_print_error(ctx, stderr);
	return 1;
}

int cli_parse_count(const char *text, const char *what, int lo, int hi, int *v)
{
	int64_t x;
	if (!parse_int(text, &x) || x < lo || x > hi)
		return cli_fail("%s expects an integer in %d..%d, got '%s'", what, lo, hi,
			text);
	*v = (int)x;
	return 0;
}

int cli_parse_seconds(const char *text, const char *what, double *v)
{
	double x;
	if (!parse_number(text, &x) || !(x >= 0) || x > 1e6)
		return cli_fail("%s expects a number of seconds, got '%s'", what, text);
	*v = x;
	return 0;
}

int cli_parse_fraction(const char *text, const char *what, double *v)
{
	double x;
	if (!parse_number(text, &x) || !(x >= 0 && x <= 1))
		return cli_fail("%s expects a number in [0, 1], got '%s'", what, text);
	*v = x;
	return 0;
}

bool cli_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool cli_help_asked(int argc, char **argv, const char *help)
{
	for (int i = 0; i < argc; i++)
		if (cli_is_help(argv[i])) {
			fputs(help, stdout);
			return true;
		}
	return false;
}

const char *cli_option(int argc, char **argv, int *i, const char *name,
	bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != 0)
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/* Split "item" (NAME=VALUE) into "set". */
static int set_add(cli_set *set, const char *item, size_t len)
{
	const char *eq = memchr(item, '=', len);
	if (!eq || eq == item)
		return cli_fail("--set expects NAME=VALUE, got '%.*s'", (int)len, item);
	if (set->n == CLI_MAX_SET)
		return cli_fail("--set: more than %d values", CLI_MAX_SET);
	size_t klen = (size_t)(eq - item);
	for (int i = 0; i < set->n; i++)
		if (strlen(set->keys[i]) == klen && memcmp(set->keys[i], item, klen) == 0)
			return cli_fail("--set: '%.*s' is given twice", (int)klen, item);
	set->keys[set->n] = strndup(item, klen);
	set->values[set->n] = strndup(eq + 1, len - klen - 1);
	set->n++;
	return 0;
}

int cli_set_parse(cli_set *set, const char *arg)
{
	const char *start = arg;
	int depth = 0;
	for (const char *p = arg;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || *p == 0) {
			if (p > start && set_add(set, start, (size_t)(p - start)))
				return -1;
			if (*p == 0)
				break;
			start = p + 1;
		}
	}
	if (depth != 0)
		return cli_fail("--set: unbalanced brackets in '%s'", arg);
	return 0;
}

void cli_set_free(cli_set *set)
{
	for (int i = 0; i < set->n; i++) {
		free(set->keys[i]);
		free(set->values[i]);
	}
	set->n = 0;
}

/* Parse "text" as a 64-bit integer, the whole of it. */
static bool parse_int(const char *text, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(text, &end, 10);
	if (errno || end == text || *end)
		return false;
	*v = x;
	return true;
}

/* Parse "text" as a floating-point number, the whole of it. */
static bool parse_number(const char *text, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(text, &end);
	if (errno || end == text || *end)
		return false;
	*v = x;
	return true;
}

static tessel_op *bind_te_op(tessel_ctx *ctx, tessel_op *op, const cli_set *set)
{
	int64_t values[CLI_MAX_SET];
	for (int i = 0; i < set->n; i++)
		if (!parse_int(set->values[i], &values[i])) {
			cli_fail("--set %s=%s: sizes and attributes of .te ops are integers",
				set->keys[i], set->values[i]);
			return NULL;
		}
	tessel_op *bound = tessel_op_bind(op, set->n,
		(const char *const *)set->keys, values);
	if (!bound)
		cli_fail_ctx(ctx);
	return bound;
}

static bool is_te_file(const char *spec)
{
	const char *dot = strstr(spec, ".te");
	return dot && (dot[3] == 0 || dot[3] == ':');
}

static tessel_op *load_te_file(tessel_ctx *ctx, const char *spec,
	const cli_set *set, bool bind)
{
	char path[4096];
	const char *colon = strstr(spec, ".te:");
	size_t plen = colon ? (size_t)(colon + 3 - spec) : strlen(spec);
	if (plen >= sizeof(path)) {
		cli_fail("path too long");
		return NULL;
	}
	memcpy(path, spec, plen);
	path[plen] = 0;
	tessel_module *m = tessel_parse_file(ctx, path);
	if (!m) {
		cli_fail_ctx(ctx);
		return NULL;
	}
	tessel_op *op = tessel_module_find(ctx, m, colon ? colon + 4 : NULL);
	tessel_op *result = NULL;
	if (!op)
		cli_fail_ctx(ctx);
	else if (bind || set->n > 0)
		result = bind_te_op(ctx, op, set);
	else
		result = tessel_op_retain(op);
	tessel_module_free(m);
	return result;
}

static tessel_op *load_builtin(tessel_ctx *ctx, const char *spec,
	const cli_set *set, bool bind)
{
	if (tessel_ops_find(spec) < 0) {
		cli_fail("'%s' is neither a .te file nor a built-in op (see `tessel ops`)",
			spec);
		return NULL;
	}
	tessel_op *op;
	if (bind || set->n > 0) {
		op = tessel_ops_instantiate(ctx, spec, set->n,
			(const char *const *)set->keys, (const char *const *)set->values);
	} else {
		char *src = tessel_ops_source(ctx, spec, set->n,
			(const char *const *)set->keys, (const char *const *)set->values);
		tessel_module *m = src ? tessel_parse(ctx, spec, src, strlen(src)) : NULL;
		op = m ? tessel_op_retain(tessel_module_op(m, 0)) : NULL;
		tessel_module_free(m);
		free(src);
	}
	if (!op)
		cli_fail_ctx(ctx);
	return op;
}

tessel_op *cli_load_op(tessel_ctx *ctx, const char *spec, const cli_set *set,
	bool bind)
{
	if (is_te_file(spec))
		return load_te_file(ctx, spec, set, bind);
	return load_builtin(ctx, spec, set, bind);
}

/* Read the whole file "path" (at most 16 MiB) into a malloc'ed string. */
char *cli_read_text_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		cli_fail("%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	while (buf && (n += fread(buf + n, 1, cap - n, f)) == cap && cap < (16u << 20)) {
		char *grown = realloc(buf, cap * 2 + 1);
		if (!grown)
			break;
		buf = grown;
		cap *= 2;
	}
	bool bad = ferror(f) || n >= (16u << 20);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		cli_fail("%s: cannot read (or larger than 16 MiB)", path);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

/* Return true when "text" is a JSON trace: its first non-space byte is
 * '{' (a text trace starts with a primitive name or a comment). */
static bool is_json_trace(const char *text)
{
	return text[strspn(text, " \t\r\n\v\f")] == '{';
}

/* Return the schedule of "op" given by the trace file "sched", in the JSON
 * form or the text form (NULL: the default schedule); NULL after printing
 * the error. */
sch_state *cli_load_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched)
{
	sch_state *st = sch_state_new(ctx, op);
	if (!st) {
		cli_fail_ctx(ctx);
		return NULL;
	}
	if (!sched)
		return st;
	char *text = cli_read_text_file(sched);
	sch_trace *t = !text ? NULL
		: is_json_trace(text) ? sch_trace_parse_json(ctx, sched, text)
		: sch_trace_parse(ctx, sched, text);
	int r = t ? sch_replay(st, t, sched) : -1;
	if (text && r)
		cli_fail_ctx(ctx);
	sch_trace_free(t);
	free(text);
	if (r) {
		sch_state_free(st);
		return NULL;
	}
	return st;
}

sch_state *cli_load_gpu_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched)
{
	sch_state *st = cli_load_schedule(ctx, op, sched);
	if (st && !sched && sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS)) {
		cli_fail_ctx(ctx);
		sch_state_free(st);
		return NULL;
	}
	return st;
}

tune_db *cli_open_db(const char *path, bool create)
{
	char buf[4096], err[1024];
	struct stat sb;
	if (!path && tune_db_default_path(buf, sizeof(buf))) {
		cli_fail("no --db given and no place for the default record store "
			"($TESSEL_DB, $XDG_CACHE_HOME or $HOME): %s", strerror(errno));
		return NULL;
	}
	if (!path)
		path = buf;
	if (!create && stat(path, &sb) != 0) {
		if (errno == ENOENT)
			cli_fail("no record store at %s (tessel tune or tessel db import "
				"makes one)", path);
		else
			cli_fail("%s: %s", path, strerror(errno));
		return NULL;
	}
	tune_db *db = tune_db_open(path, err, sizeof(err));
	if (!db)
		cli_fail("%s", err);
	return db;
}

int cli_find_best(tune_db *db, const tune_task *task, tune_record *out)
{
	memset(out, 0, sizeof(*out));
	int64_t w = tune_db_find_workload(db, task->key);
	int64_t t = w > 0 ? tune_db_find_target(db, task->target) : w;
	int r = t > 0 ? tune_db_best(db, w, t, out) : t == 0 ? 1 : -1;
	if (r < 0)
		cli_fail("%s", tune_db_error(db));
	return r;
}

void cli_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}
