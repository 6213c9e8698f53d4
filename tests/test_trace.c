/* Tests of traces: the JSON form (writer, strict reader, round trips with
 * the text form, malformed inputs), and the primitives as data:
 *
 * - tests/sched/NAME.trace (a "# op: SPEC --set ..." line, then a trace)
 *   replays to exactly the program in NAME.loop, which computes what the
 *   interpreter computes, twice the same, and the same again through the
 *   JSON form and through its recorded trace;
 * - tests/sched/errors/NAME.trace gives exactly the diagnostic NAME.err
 *   at its last step, and that refused step changes nothing (trace text
 *   and lowered program identical before and after). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tests/support.h"

#define SCHED_DIR TESSEL_SOURCE_DIR "/tests/sched"
#define MAX_SET 16

/* Return the error recorded in "ctx" as the line tessel prints. */
static char *error_line(tessel_ctx *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	tessel_ctx_print_error(ctx, out);
	fclose(out);
	return buf;
}

/* The NAME=VALUE list of a "--set" ("a=[4,1],b=2": brackets hold commas),
 * split in place. */
typedef struct set_list {
	int n;
	const char *keys[MAX_SET];
	const char *values[MAX_SET];
	int64_t ints[MAX_SET];
} set_list;

static void set_parse(char *text, set_list *set)
{
	int depth = 0;
	char *item = text;
	for (char *p = text;; p++) {
		depth += (*p == '[') - (*p == ']');
		if ((*p == ',' && depth == 0) || *p == 0) {
			bool last = *p == 0;
			*p = 0;
			char *eq = strchr(item, '=');
			cr_assert(eq && set->n < MAX_SET, "bad --set item '%s'", item);
			*eq = 0;
			set->keys[set->n] = item;
			set->values[set->n] = eq + 1;
			set->ints[set->n++] = atoll(eq + 1);
			if (last)
				break;
			item = p + 1;
		}
	}
}

/* Return the op named by a "SPEC --set ..." line: a built-in op, or
 * FILE.te:NAME relative to the source root. */
static tessel_op *load_op(tessel_ctx *ctx, const char *line)
{
	char buf[512], spec[256] = "", sets[256] = "";
	snprintf(buf, sizeof(buf), "%s", line);
	cr_assert(sscanf(buf, "%255s --set %255s", spec, sets) >= 1, "bad op line '%s'", line);
	set_list set = { 0 };
	if (sets[0])
		set_parse(sets, &set);
	char *colon = strstr(spec, ".te:");
	tessel_op *op;
	if (colon) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%.*s", TESSEL_SOURCE_DIR,
			(int)(colon + 3 - spec), spec);
		tessel_module *m = tessel_parse_file(ctx, path);
		cr_assert(m, "%s", tessel_ctx_error(ctx)->message);
		tessel_op *decl = tessel_module_find(ctx, m, colon + 4);
		cr_assert(decl, "%s", tessel_ctx_error(ctx)->message);
		op = tessel_op_bind(decl, set.n, set.keys, set.ints);
		tessel_module_free(m);
	} else {
		op = tessel_ops_instantiate(ctx, spec, set.n, set.keys, set.values);
	}
	cr_assert(op, "loading '%s': %s", line, tessel_ctx_error(ctx)->message);
	return op;
}

/* Return the op of the "# op: " line of "src". */
static tessel_op *op_of(tessel_ctx *ctx, const char *src, const char *name)
{
	cr_assert(strncmp(src, "# op: ", 6) == 0, "%s: the first line must be '# op: SPEC ...'",
		name);
	char line[512];
	sscanf(src + 6, "%511[^\n]", line);
	return load_op(ctx, line);
}

/* Return the printed program of "st", or NULL with the error in the
 * context. */
static char *program_text(sch_state *st)
{
	loop_prog *p = sch_program(st);
	char *text = p ? loop_prog_print(p) : NULL;
	loop_prog_free(p);
	return text;
}

/* Replay "t" on a fresh state of "op"; return the program text (the
 * recorded trace's text in "*trace" when not NULL), or NULL. */
static char *replay_program(tessel_ctx *ctx, tessel_op *op, const sch_trace *t,
	const char *file, char **trace)
{
	sch_state *st = sch_state_new(ctx, op);
	cr_assert(st);
	char *text = sch_replay(st, t, file) == 0 ? program_text(st) : NULL;
	if (trace)
		*trace = sch_trace_to_text(st->trace);
	sch_state_free(st);
	return text;
}

/* Call "fn" with the name (without ".trace") of every NAME.trace in "dir";
 * return how many there were. */
static int each_trace(const char *dir, void (*fn)(const char *dir, const char *name))
{
	DIR *d = opendir(dir);
	cr_assert(d, "cannot open %s", dir);
	struct dirent *de;
	int count = 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= 6 || strcmp(de->d_name + len - 6, ".trace") != 0)
			continue;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(len - 6), de->d_name);
		fn(dir, name);
		count++;
	}
	closedir(d);
	return count;
}

/* ---- the JSON form ------------------------------------------------------ */

static sch_trace *parse_text_ok(tessel_ctx *ctx, const char *text)
{
	sch_trace *t = sch_trace_parse(ctx, "t.trace", text);
	cr_assert(t, "%s", tessel_ctx_error(ctx)->message);
	return t;
}

static sch_trace *parse_json_ok(tessel_ctx *ctx, const char *json)
{
	sch_trace *t = sch_trace_parse_json(ctx, "t.json", json);
	cr_assert(t, "%s\nin:\n%s", tessel_ctx_error(ctx)->message, json);
	return t;
}

/* Check text -> trace -> JSON -> trace -> text and JSON -> trace -> JSON
 * for the text trace "text", whose text form must be "canonical". */
static void check_round_trips(tessel_ctx *ctx, const char *text, const char *canonical)
{
	sch_trace *t = parse_text_ok(ctx, text);
	char *json = sch_trace_to_json(t);
	sch_trace *j = parse_json_ok(ctx, json);
	char *text2 = sch_trace_to_text(j), *json2 = sch_trace_to_json(j);
	cr_expect_str_eq(text2, canonical);
	cr_expect_str_eq(json2, json);
	sch_trace_free(t);
	sch_trace_free(j);
	free(json);
	free(text2);
	free(json2);
}

Test(text, a_trace_text_lowers_to_the_program_its_replay_gives)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = load_op(ctx, "matmul --set M=20,N=24,K=12");
	const char *text = "split C.i 4 -> C.io C.ii\nparallel C.io\n";
	sch_trace *t = sch_trace_parse(ctx, "t.trace", text);
	cr_assert(t);
	char *want = replay_program(ctx, op, t, "t.trace", NULL);
	cr_assert(want);
	loop_prog *p = sch_trace_program(ctx, op, "t.trace", text);
	cr_assert(p, "%s", tessel_ctx_error(ctx)->message);
	char *got = loop_prog_print(p);
	cr_expect_str_eq(got, want);
	free(got);
	free(want);
	loop_prog_free(p);
	sch_trace_free(t);
	cr_expect_null(sch_trace_program(ctx, op, "t.trace", "split C.i 4 -> C.io C.ii\n"
		"split C.q 2 -> a b\n"));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "step 2"), "%s",
		tessel_ctx_error(ctx)->message);
	cr_expect_null(sch_trace_program(ctx, op, "t.trace", "no such primitive\n"));
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

Test(json, writes_one_step_per_line_with_decisions)
{
	tessel_ctx *ctx = tessel_ctx_new();
	sch_trace *t = parse_text_ok(ctx,
		"split C.i 32 -> C.io C.ii\n"
		"split C.j nparts=4\n"
		"tile C.io C.k 2 5 -> C.ioo C.ko C.ioi C.ki\n"
		"annotate C.io auto_unroll_max_step 16\n"
		"compute_at A_local C.k\n"
		"parallel C.io\n");
	char *json = sch_trace_to_json(t);
	cr_expect_str_eq(json,
		"{\"tessel_trace\": 1, \"steps\": [\n"
		"  {\"prim\": \"split\", \"args\": [\"C.i\", \"32\"], \"outs\": [\"C.io\", \"C.ii\"], \"decisions\": [32]},\n"
		"  {\"prim\": \"split\", \"args\": [\"C.j\", \"nparts=4\"], \"outs\": [], \"decisions\": [4]},\n"
		"  {\"prim\": \"tile\", \"args\": [\"C.io\", \"C.k\", \"2\", \"5\"], \"outs\": [\"C.ioo\", \"C.ko\", \"C.ioi\", \"C.ki\"], \"decisions\": [2, 5]},\n"
		"  {\"prim\": \"annotate\", \"args\": [\"C.io\", \"auto_unroll_max_step\", \"16\"], \"outs\": [], \"decisions\": [16]},\n"
		"  {\"prim\": \"compute_at\", \"args\": [\"A_local\", \"C.k\"], \"outs\": [], \"decisions\": [\"C.k\"]},\n"
		"  {\"prim\": \"parallel\", \"args\": [\"C.io\"], \"outs\": [], \"decisions\": []}\n"
		"]}\n");
	free(json);
	sch_trace_free(t);
	sch_trace *empty = sch_trace_new();
	json = sch_trace_to_json(empty);
	cr_expect_str_eq(json, "{\"tessel_trace\": 1, \"steps\": []}\n");
	free(json);
	sch_trace_free(empty);
	tessel_ctx_free(ctx);
}

Test(json, decisions_name_their_arguments)
{
	tessel_ctx *ctx = tessel_ctx_new();
	sch_trace *t = parse_text_ok(ctx,
		"split C.i nparts=3\n"
		"tile C.i C.j 4 8\n"
		"reverse_compute_at D C.j\n"
		"split C.i x\n"
		"tile C.i C.j 4\n"
		"fuse C.i C.j\n");
	sch_decision d[SCH_MAX_ARGS];
	cr_assert_eq(sch_step_decisions(&t->steps[0], d), 1);
	cr_expect(d[0].arg == 1 && d[0].is_int && d[0].value == 3);
	cr_assert_eq(sch_step_decisions(&t->steps[1], d), 2);
	cr_expect(d[0].arg == 2 && d[0].value == 4 && d[1].arg == 3 && d[1].value == 8);
	cr_assert_eq(sch_step_decisions(&t->steps[2], d), 1);
	cr_expect(d[0].arg == 1 && !d[0].is_int);
	cr_expect_eq(sch_step_decisions(&t->steps[3], d), 0);
	cr_expect_eq(sch_step_decisions(&t->steps[4], d), 1);
	cr_expect_eq(sch_step_decisions(&t->steps[5], d), 0);
	sch_trace_free(t);
	tessel_ctx_free(ctx);
}

Test(json, round_trips_with_the_text_form)
{
	tessel_ctx *ctx = tessel_ctx_new();
	check_round_trips(ctx, "", "");
	check_round_trips(ctx,
		"# a comment\n"
		"split   C.i 32   -> C.io C.ii   # trailing comment\n"
		"\n"
		"split C.j nparts=4\n"
		"split C.k 007\n"
		"split C.k -9223372036854775808\n"
		"annotate C.i auto_unroll_max_step +16\n"
		"weird \"quote\\back\x01\x7f\f\v \xc3\xa9 -> x\n"
		"reorder\n",
		"split C.i 32 -> C.io C.ii\n"
		"split C.j nparts=4\n"
		"split C.k 007\n"
		"split C.k -9223372036854775808\n"
		"annotate C.i auto_unroll_max_step +16\n"
		"weird \"quote\\back\x01\x7f\f\v \xc3\xa9 -> x\n"
		"reorder\n");
	tessel_ctx_free(ctx);
}

Test(json, reads_any_key_order_spaces_and_escapes)
{
	tessel_ctx *ctx = tessel_ctx_new();
	sch_trace *t = parse_json_ok(ctx,
		" \r\n\t{ \"tessel_trace\" : 1 ,\n"
		"  \"steps\" : [ { \"decisions\" : [ \"C\\/\\u002ej\" ] , \"args\" : [ \"\\u0041\", \"C\\/.j\" ],\n"
		"    \"prim\" : \"compute_at\" } , {\"args\": [\"C.i\", \"-3\"], \"prim\": \"split\", \"outs\": []},\n"
		"    {\"prim\": \"s\\\"\\\\\\b\\f\\u007f\", \"args\": []} ] } \n");
	cr_assert_eq(t->nsteps, 3);
	cr_expect_str_eq(t->steps[0].prim, "compute_at");
	cr_expect_str_eq(t->steps[0].args[0], "A");
	cr_expect_str_eq(t->steps[0].args[1], "C/.j");
	cr_expect_eq(t->steps[0].line, 3);
	cr_expect_eq(t->steps[1].line, 4);
	cr_expect_eq(t->steps[2].line, 5);
	cr_expect_str_eq(t->steps[2].prim, "s\"\\\b\f\x7f");
	sch_trace_free(t);
	tessel_ctx_free(ctx);
}

/* A malformed JSON trace and the exact error it gives. */
typedef struct bad_json {
	const char *json;
	const char *error;
} bad_json;

#define V "{\"tessel_trace\": 1, "
#define STEP(body) V "\"steps\": [{" body "}]}"

static const bad_json bad_jsons[] = {
	{ "", "t.json:1:1: error: expected '{' at the start of a JSON trace, found the end of the input" },
	{ "  \n split C.i 4", "t.json:2:2: error: expected '{' at the start of a JSON trace, found 's'" },
	{ "[]", "t.json:1:1: error: expected '{' at the start of a JSON trace, found '['" },
	{ "{}", "t.json:1:2: error: missing key \"tessel_trace\" (the format version)" },
	{ "{\"steps\": [], \"tessel_trace\": 1}", "t.json:1:2: error: the first key must be \"tessel_trace\" (the format version), not \"steps\"" },
	{ "{\"tessel_trace\": 2, \"steps\": []}", "t.json:1:18: error: unsupported trace format version 2 (this tessel reads version 1)" },
	{ "{\"tessel_trace\": 0}", "t.json:1:18: error: unsupported trace format version 0 (this tessel reads version 1)" },
	{ "{\"tessel_trace\": \"1\"}", "t.json:1:18: error: expected the format version (an integer), found '\"'" },
	{ "{\"tessel_trace\": 1.0}", "t.json:1:18: error: the format version must be an integer (no fraction or exponent)" },
	{ "{\"tessel_trace\": 1e0}", "t.json:1:18: error: the format version must be an integer (no fraction or exponent)" },
	{ "{\"tessel_trace\": 01}", "t.json:1:18: error: numbers cannot have leading zeros" },
	{ "{\"tessel_trace\": -}", "t.json:1:18: error: expected the format version (an integer), found '-'" },
	{ "{\"tessel_trace\": 99999999999999999999}", "t.json:1:18: error: integer 99999999999999999999 is out of range" },
	{ "{\"tessel_trace\": 1}", "t.json:1:19: error: missing key \"steps\"" },
	{ "{\"tessel_trace\": 1 \"steps\": []}", "t.json:1:20: error: expected ',' or '}' after a value in the trace, found '\"'" },
	{ V "\"steps\": [], \"steps\": []}", "t.json:1:34: error: duplicate key \"steps\"" },
	{ V "\"tessel_trace\": 1}", "t.json:1:21: error: duplicate key \"tessel_trace\"" },
	{ V "\"Steps\": []}", "t.json:1:21: error: unknown key \"Steps\" (a trace has tessel_trace and steps)" },
	{ V "\"steps\": [],}", "t.json:1:33: error: expected a key (a string), found '}'" },
	{ V "\"steps\": []} x", "t.json:1:34: error: unexpected 'x' after the end of the trace" },
	{ V "\"steps\": []}{}", "t.json:1:33: error: unexpected '{' after the end of the trace" },
	{ V "\"steps\": {}}", "t.json:1:30: error: expected '[' to start the list of steps, found '{'" },
	{ V "\"steps\": [[]]}", "t.json:1:31: error: expected '{' to start a step, found '['" },
	{ V "\"steps\": [{}]}", "t.json:1:32: error: step 1: missing key \"prim\"" },
	{ STEP("\"prim\": \"split\""), "t.json:1:47: error: step 1: missing key \"args\"" },
	{ STEP("\"prim\": \"split\", \"args\": []") "x", "t.json:1:62: error: unexpected 'x' after the end of the trace" },
	{ STEP("\"prim\": \"split\", \"prim\": \"fuse\""), "t.json:1:49: error: step 1: duplicate key \"prim\"" },
	{ STEP("\"prim\": \"split\", \"arg\": []"), "t.json:1:49: error: step 1: unknown key \"arg\" (a step has prim, args, outs, decisions)" },
	{ STEP("\"prim\": \"split\" \"args\": []"), "t.json:1:48: error: expected ',' or '}' in a step, found '\"'" },
	{ STEP("\"prim\": \"split\", \"args\": [\"C.i\" \"4\"]"), "t.json:1:64: error: expected ',' or ']' in a list of arguments, found '\"'" },
	{ STEP("\"prim\": \"split\", \"args\": [\"C.i\",]"), "t.json:1:64: error: expected an argument (a string), found ']'" },
	{ STEP("\"prim\": \"split\", \"args\": [4]"), "t.json:1:58: error: expected an argument (a string), found '4'" },
	{ STEP("\"prim\": \"split\", \"args\": \"C.i\""), "t.json:1:57: error: expected '[' to start a list, found '\"'" },
	{ STEP("\"prim\": 7, \"args\": []"), "t.json:1:40: error: expected a primitive name (a string), found '7'" },
	{ STEP("\"prim\": \"\", \"args\": []"), "t.json:1:40: error: step 1: an empty string is not a valid primitive name" },
	{ STEP("\"prim\": \"split C.i\", \"args\": []"), "t.json:1:40: error: step 1: a primitive name cannot contain spaces, tabs, line breaks or '#'" },
	{ STEP("\"prim\": \"a\", \"args\": [\"#\"]"), "t.json:1:54: error: step 1: an argument cannot contain spaces, tabs, line breaks or '#'" },
	{ STEP("\"prim\": \"a\", \"args\": [], \"outs\": [\"->\"]"), "t.json:1:66: error: step 1: \"->\" is not a valid output" },
	{ STEP("\"prim\": \"a\", \"args\": [\"x\\ty\"]"), "t.json:1:54: error: step 1: an argument cannot contain spaces, tabs, line breaks or '#'" },
	{ STEP("\"prim\": \"a\", \"args\": [\"x\ty\"]"), "t.json:1:56: error: control character 0x09 in a string (write it as \\u0009)" },
	{ STEP("\"prim\": \"a\\x\", \"args\": []"), "t.json:1:42: error: unknown escape: backslash before 'x'" },
	{ STEP("\"prim\": \"a\\u12\", \"args\": []"), "t.json:1:42: error: \\u needs four hex digits" },
	{ STEP("\"prim\": \"a\\u00e9\", \"args\": []"), "t.json:1:42: error: \\u00E9 is not ASCII; only \\u0001 to \\u007F are supported" },
	{ STEP("\"prim\": \"a\\u0000\", \"args\": []"), "t.json:1:42: error: \\u0000 (NUL) cannot appear in a string" },
	{ STEP("\"prim\": \"abcdefghijklmnopqrstuvwxyz0123456\", \"args\": []"), "t.json:1:40: error: a primitive name is too long (at most 31 bytes)" },
	{ STEP("\"prim\": \"a\", \"args\": [\"C.i\"], \"decisions\": [1.5]"), "t.json:1:76: error: a decision must be an integer (no fraction or exponent)" },
	{ STEP("\"prim\": \"a\", \"args\": [\"C.i\"], \"decisions\": [true]"), "t.json:1:76: error: expected a decision (an integer or a loop name), found 't'" },
	{ STEP("\"prim\": \"a\", \"args\": [\"C.i\"], \"decisions\": [null]"), "t.json:1:76: error: expected a decision (an integer or a loop name), found 'n'" },
	{ STEP("\"prim\": \"a\", \"args\": [\"C.i\"], \"decisions\": {}"), "t.json:1:75: error: expected '[' to start the list of decisions, found '{'" },
	{ STEP("\"prim\": \"a\", \"args\": [\"C.i\"], \"decisions\": [4]"), "t.json:1:75: error: step 1: decisions [4] do not match the arguments, which give []" },
	{ STEP("\"prim\": \"split\", \"args\": [\"C.i\", \"4\"], \"decisions\": [5]"), "t.json:1:84: error: step 1: decisions [5] do not match the arguments, which give [4]" },
	{ STEP("\"prim\": \"split\", \"args\": [\"C.i\", \"4\"], \"decisions\": [\"4\"]"), "t.json:1:84: error: step 1: decisions [\"4\"] do not match the arguments, which give [4]" },
	{ STEP("\"prim\": \"compute_at\", \"args\": [\"A\", \"C.i\"], \"decisions\": [\"C.j\"]"), "t.json:1:89: error: step 1: decisions [\"C.j\"] do not match the arguments, which give [\"C.i\"]" },
	{ STEP("\"prim\": \"split\", \"args\": [\"C.i\", \"4\"], \"decisions\": [-9223372036854775809]"), "t.json:1:85: error: integer -9223372036854775809 is out of range" },
	{ STEP("\"prim\": \"a\", \"args\": [\"\\u00"), "t.json:1:55: error: \\u needs four hex digits" },
	{ V "\"steps\": [{\"prim\": \"a\", \"args\": [\"\\", "t.json:1:54: error: unterminated string" },
	{ V "\"steps\": [{\"prim\": \"a\", \"args\": [\"x", "t.json:1:54: error: unterminated string" },
	{ V "\"steps\": [{\"prim\": \"a\", \"args\": []},\n  {\"prim\": \"b\", \"args\": [], \"x\": 1}]}", "t.json:2:29: error: step 2: unknown key \"x\" (a step has prim, args, outs, decisions)" },
	{ V "\"steps\": [{\"prim\": \"a\", \"args\": []} {}]}", "t.json:1:57: error: expected ',' or ']' after a step, found '{'" },
	{ V "\"steps\": [\xef\xbb\xbf]}", "t.json:1:31: error: expected '{' to start a step, found byte 0xef" },
};

Test(json, malformed_inputs_give_exact_errors)
{
	tessel_ctx *ctx = tessel_ctx_new();
	for (size_t i = 0; i < sizeof(bad_jsons) / sizeof(bad_jsons[0]); i++) {
		sch_trace *t = sch_trace_parse_json(ctx, "t.json", bad_jsons[i].json);
		cr_expect_null(t, "accepted: %s", bad_jsons[i].json);
		sch_trace_free(t);
		if (t)
			continue;
		cr_expect_eq(tessel_ctx_error(ctx)->kind, TESSEL_ERR_SYNTAX);
		char *got = error_line(ctx);
		char want[1024];
		snprintf(want, sizeof(want), "%s\n", bad_jsons[i].error);
		cr_expect_str_eq(got, want, "for %s\n got: %s want: %s", bad_jsons[i].json,
			got, want);
		free(got);
	}
	tessel_ctx_free(ctx);
}

/* Return a JSON trace of "n" steps "{"prim":"a","args":[]}", malloc'ed. */
static char *json_of_steps(size_t n)
{
	const char *one = "{\"prim\":\"a\",\"args\":[]}";
	char *json = malloc(64 + n * (strlen(one) + 1));
	char *p = json + sprintf(json, V "\"steps\": [");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? "," : "", one);
	strcpy(p, "]}");
	return json;
}

Test(json, limits_are_errors_not_crashes)
{
	tessel_ctx *ctx = tessel_ctx_new();
	size_t depth = 100000;
	char *deep = malloc(2 * depth + 64);
	int n = sprintf(deep, V "\"steps\": ");
	memset(deep + n, '[', depth);
	memset(deep + n + depth, ']', depth);
	strcpy(deep + n + 2 * depth, "}");
	cr_expect_null(sch_trace_parse_json(ctx, "t.json", deep));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message,
		"expected '{' to start a step, found '['");
	memset(deep, '{', 2 * depth);
	deep[2 * depth] = 0;
	cr_expect_null(sch_trace_parse_json(ctx, "t.json", deep));
	free(deep);

	char *many = json_of_steps(SCH_TRACE_JSON_MAX_STEPS + 1);
	cr_expect_null(sch_trace_parse_json(ctx, "t.json", many));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message, "more than 10000 steps");
	free(many);
	many = json_of_steps(SCH_TRACE_JSON_MAX_STEPS);
	sch_trace *t = sch_trace_parse_json(ctx, "t.json", many);
	cr_expect(t && t->nsteps == SCH_TRACE_JSON_MAX_STEPS);
	sch_trace_free(t);
	free(many);

	char json[4096];
	char *p = json + sprintf(json, V "\"steps\": [{\"prim\": \"reorder\", \"args\": [");
	for (int i = 0; i <= SCH_MAX_ARGS; i++)
		p += sprintf(p, "%s\"C.l%d\"", i ? ", " : "", i);
	strcpy(p, "]}]}");
	cr_expect_null(sch_trace_parse_json(ctx, "t.json", json));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message, "step 1: more than 16 arguments");
	p = json + sprintf(json, V "\"steps\": [{\"prim\": \"a\", \"args\": [\"");
	memset(p, 'x', 80);
	strcpy(p + 80, "\"]}]}");
	cr_expect_null(sch_trace_parse_json(ctx, "t.json", json));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message,
		"an argument is too long (at most 79 bytes)");
	p[79] = 0;
	strcpy(p + 79, "\"]}]}");
	t = sch_trace_parse_json(ctx, "t.json", json);
	cr_expect(t && strlen(t->steps[0].args[0]) == 79);
	sch_trace_free(t);
	tessel_ctx_free(ctx);
}

/* A valid JSON trace that uses every part of the schema. */
static const char full_json[] =
	"{\"tessel_trace\": 1, \"steps\": [\n"
	"  {\"prim\": \"split\", \"args\": [\"C.i\", \"nparts=4\"], \"outs\": [\"C.io\", \"C.ii\"], \"decisions\": [4]},\n"
	"  {\"prim\": \"compute_at\", \"args\": [\"A\\u005flocal\", \"C.io\"], \"outs\": [], \"decisions\": [\"C.io\"]},\n"
	"  {\"prim\": \"annotate\", \"args\": [\"C.io\", \"auto_unroll_max_step\", \"-12\"], \"decisions\": [-12]},\n"
	"  {\"prim\": \"q\\\"\\\\\\/\\b\\f\\u0001\", \"args\": []}\n"
	"]}\n";

/* Every proper prefix of a valid trace is refused with a located error,
 * except those that end after the closing brace. */
Test(json, truncated_inputs_are_refused)
{
	tessel_ctx *ctx = tessel_ctx_new();
	size_t len = strlen(full_json);
	const char *close = strrchr(full_json, '}');
	for (size_t k = 0; k <= len; k++) {
		char *prefix = strndup(full_json, k);
		sch_trace *t = sch_trace_parse_json(ctx, "t.json", prefix);
		bool complete = k > (size_t)(close - full_json);
		cr_expect_eq(t != NULL, complete, "prefix of %zu bytes", k);
		if (!t) {
			const tessel_error *e = tessel_ctx_error(ctx);
			cr_expect(e->kind == TESSEL_ERR_SYNTAX && e->loc.line >= 1 &&
				e->loc.col >= 1, "prefix of %zu bytes: %s", k, e->message);
		}
		sch_trace_free(t);
		free(prefix);
	}
	tessel_ctx_free(ctx);
}

/* Every one-byte change of a valid trace is refused with a located error
 * or read as a trace that round-trips. */
Test(json, one_byte_changes_are_refused_or_round_trip)
{
	static const char bytes[] = "{}[]\":,\\ 0-9ux\n\x01\x80";
	tessel_ctx *ctx = tessel_ctx_new();
	size_t len = strlen(full_json);
	char *json = strdup(full_json);
	for (size_t k = 0; k < len; k++) {
		for (const char *b = bytes; *b; b++) {
			json[k] = *b;
			sch_trace *t = sch_trace_parse_json(ctx, "t.json", json);
			if (t) {
				char *again = sch_trace_to_json(t);
				sch_trace *u = parse_json_ok(ctx, again);
				char *twice = sch_trace_to_json(u);
				cr_expect_str_eq(twice, again);
				free(again);
				free(twice);
				sch_trace_free(u);
			} else {
				cr_expect(tessel_ctx_error(ctx)->loc.line >= 1);
			}
			sch_trace_free(t);
		}
		json[k] = full_json[k];
	}
	free(json);
	tessel_ctx_free(ctx);
}

/* Random legal schedules round-trip through the JSON form and replay to
 * the same program. */
Test(json, random_schedules_round_trip_and_replay)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *ops[] = {
		load_op(ctx, "matmul --set M=24,N=20,K=9"),
		load_op(ctx, "softmax --set shape=[5,7]"),
		load_op(ctx, "conv2d --set N=1,C=2,H=6,W=5,F=3,R=3,S=3,padding=1"),
	};
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (uint64_t seed = 1; seed <= 15; seed++) {
			sch_state *st = sch_state_new(ctx, ops[o]);
			sch_random_schedule(st, seed, 12);
			char *program = program_text(st);
			char *text = sch_trace_to_text(st->trace);
			char *json = sch_trace_to_json(st->trace);
			sch_trace *t = parse_json_ok(ctx, json);
			char *text2 = sch_trace_to_text(t), *json2 = sch_trace_to_json(t);
			cr_expect_str_eq(text2, text);
			cr_expect_str_eq(json2, json);
			char *replayed = replay_program(ctx, ops[o], t, "t.json", NULL);
			cr_expect(program && replayed && strcmp(program, replayed) == 0,
				"%s", json);
			free(program);
			free(text);
			free(json);
			free(text2);
			free(json2);
			free(replayed);
			sch_trace_free(t);
			sch_state_free(st);
		}
		tessel_op_release(ops[o]);
	}
	tessel_ctx_free(ctx);
}

/* ---- golden programs ---------------------------------------------------- */

static tessel_tensor *tensor_like(const tessel_stage *s)
{
	int64_t shape[TESSEL_MAX_DIMS];
	for (int d = 0; d < tessel_stage_ndim(s); d++)
		shape[d] = tessel_stage_dim(s, d);
	return tessel_tensor_new(tessel_stage_dtype(s), tessel_stage_ndim(s), shape,
		NULL, 0);
}

/* Return the largest relative difference between "got" and "want". */
static double largest_error(const tessel_tensor *got, const tessel_tensor *want)
{
	double worst = 0;
	for (int64_t k = 0; k < tessel_tensor_numel(want); k++) {
		double a = tessel_tensor_get(want, k), b = tessel_tensor_get(got, k);
		double e = isnan(a) != isnan(b) ? INFINITY : fabs(a - b) / (1.0 + fabs(a));
		if (e > worst)
			worst = e;
	}
	return worst;
}

/* Evaluate the program of "t" on "op" and compare its outputs with the
 * interpreter's: a golden program must also be a correct one. */
static void check_computes_op(tessel_ctx *ctx, tessel_op *op, const sch_trace *t,
	const char *name)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op);
	tessel_tensor *args[32], *want[16];
	cr_assert(nin + nout <= 32 && nout <= 16);
	for (int i = 0; i < nin; i++) {
		args[i] = tensor_like(tessel_op_input_at(op, i));
		tessel_tensor_fill_random(args[i], 7 + (uint64_t)i);
	}
	for (int i = 0; i < nout; i++) {
		want[i] = tensor_like(tessel_op_output_at(op, i));
		args[nin + i] = tensor_like(tessel_op_output_at(op, i));
	}
	cr_assert_eq(tessel_interp(op, args, want), 0);
	sch_state *st = sch_state_new(ctx, op);
	cr_assert_eq(sch_replay(st, t, name), 0);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	cr_assert_eq(loop_eval(ctx, p, args), 0, "%s: %s", name,
		tessel_ctx_error(ctx)->message);
	for (int i = 0; i < nout; i++)
		cr_expect_leq(largest_error(args[nin + i], want[i]), 1e-5,
			"%s: output %d differs from the interpreter", name, i);
	loop_prog_free(p);
	sch_state_free(st);
	for (int i = 0; i < nin + nout; i++)
		tessel_tensor_free(args[i]);
	for (int i = 0; i < nout; i++)
		tessel_tensor_free(want[i]);
}

static void check_golden(const char *dir, const char *name)
{
	char path[512], loop_path[512], file[300];
	snprintf(path, sizeof(path), "%s/%s.trace", dir, name);
	snprintf(loop_path, sizeof(loop_path), "%s/%s.loop", dir, name);
	snprintf(file, sizeof(file), "%s.trace", name);
	char *src = test_read_file(path), *want = test_read_file(loop_path);
	cr_assert(src && want, "missing %s", loop_path);
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = op_of(ctx, src, name);
	sch_trace *t = sch_trace_parse(ctx, file, src);
	cr_assert(t, "%s", tessel_ctx_error(ctx)->message);
	char *recorded = NULL;
	char *first = replay_program(ctx, op, t, file, &recorded);
	cr_assert(first, "%s: %s", name, tessel_ctx_error(ctx)->message);
	cr_expect_str_eq(first, want, "%s: the program differs from %s.loop:\n%s", name,
		name, first);
	check_computes_op(ctx, op, t, name);
	char *second = replay_program(ctx, op, t, file, NULL);
	cr_expect(second && strcmp(first, second) == 0, "%s: replaying twice differs", name);
	char *json = sch_trace_to_json(t);
	sch_trace *j = parse_json_ok(ctx, json);
	char *via_json = replay_program(ctx, op, j, "t.json", NULL);
	cr_expect(via_json && strcmp(first, via_json) == 0, "%s: the JSON form differs", name);
	sch_trace *r = parse_text_ok(ctx, recorded);
	char *via_recorded = replay_program(ctx, op, r, "recorded.trace", NULL);
	cr_expect(via_recorded && strcmp(first, via_recorded) == 0,
		"%s: the recorded trace replays differently:\n%s", name, recorded);
	free(via_recorded);
	sch_trace_free(r);
	free(via_json);
	sch_trace_free(j);
	free(json);
	free(second);
	free(first);
	free(recorded);
	sch_trace_free(t);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
	free(src);
	free(want);
}

/* Every tests/sched/NAME.trace lowers to exactly NAME.loop, which
 * computes what the interpreter computes. */
Test(golden, programs)
{
	cr_expect_geq(each_trace(SCHED_DIR, check_golden), 30);
}

/* ---- refusals ----------------------------------------------------------- */

static void check_refusal(const char *dir, const char *name)
{
	char path[512], err_path[512], file[300];
	snprintf(path, sizeof(path), "%s/%s.trace", dir, name);
	snprintf(err_path, sizeof(err_path), "%s/%s.err", dir, name);
	snprintf(file, sizeof(file), "%s.trace", name);
	char *src = test_read_file(path), *want = test_read_file(err_path);
	cr_assert(src && want, "missing %s", err_path);
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = op_of(ctx, src, name);
	sch_trace *t = sch_trace_parse(ctx, file, src);
	cr_assert(t && t->nsteps >= 1, "%s: no steps", name);
	sch_state *st = sch_state_new(ctx, op);
	cr_assert(st);
	cr_expect_neq(sch_replay(st, t, file), 0, "%s: the trace was accepted", name);
	char *got = error_line(ctx);
	cr_expect_str_eq(got, want, "%s gave: %s", name, got);
	sch_state_free(st);

	st = sch_state_new(ctx, op);
	int last = t->nsteps - 1;
	t->nsteps = last;
	cr_assert_eq(sch_replay(st, t, file), 0, "%s: a step before the last is refused: %s",
		name, tessel_ctx_error(ctx)->message);
	t->nsteps = last + 1;
	char *trace_before = sch_trace_to_text(st->trace), *program_before = program_text(st);
	cr_assert(program_before, "%s: %s", name, tessel_ctx_error(ctx)->message);
	cr_expect_neq(sch_apply_step(st, &t->steps[last]), 0);
	char *trace_after = sch_trace_to_text(st->trace), *program_after = program_text(st);
	cr_expect_str_eq(trace_after, trace_before, "%s: the refusal changed the trace", name);
	cr_expect(program_after && strcmp(program_after, program_before) == 0,
		"%s: the refusal changed the program:\n%s", name,
		program_after ? program_after : tessel_ctx_error(ctx)->message);
	free(trace_before);
	free(trace_after);
	free(program_before);
	free(program_after);
	sch_state_free(st);
	free(got);
	sch_trace_free(t);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
	free(src);
	free(want);
}

/* Every tests/sched/errors/NAME.trace is refused at its last step with
 * exactly NAME.err, and the refusal changes nothing. */
Test(golden, refusals)
{
	cr_expect_geq(each_trace(SCHED_DIR "/errors", check_refusal), 30);
}

/* Random primitive calls, legal or not: every refused call leaves the
 * trace and the program as they were. */
Test(golden, random_refusals_change_nothing)
{
	static const char *const specs[] = {
		"examples/ops.te:matmul --set M=12,N=10,K=7",
		"examples/ops.te:conv2d_relu --set N=1,C=2,H=5,W=5,F=2,R=3,S=3,stride=1,pad=1",
		"softmax --set shape=[3,7]",
		"layer_norm --set shape=[4,6]",
		"conv2d --set N=1,C=2,H=6,W=5,F=3,R=3,S=3,padding=1,stride=2",
		"add --set a=[2,1,3],b=[4,3]",
		"softmax_cross_entropy --set N=4,C=5",
	};
	tessel_ctx *ctx = tessel_ctx_new();
	int refused = 0;
	for (size_t o = 0; o < sizeof(specs) / sizeof(specs[0]); o++) {
		tessel_op *op = load_op(ctx, specs[o]);
		for (uint64_t seed = 1; seed <= 12; seed++) {
			sch_state *st = sch_state_new(ctx, op);
			uint64_t rng = seed * 7919 + o;
			for (int k = 0; k < 16; k++) {
				char *trace = sch_trace_to_text(st->trace), *program = program_text(st);
				if (sch_random_step(st, &rng) != 0) {
					const char *why = tessel_ctx_error(ctx)->message;
					char *trace2 = sch_trace_to_text(st->trace), *program2 = program_text(st);
					cr_expect_str_eq(trace2, trace, "%s, seed %llu: a refusal (%s) "
						"changed the trace", specs[o], (unsigned long long)seed, why);
					cr_expect(program && program2 && strcmp(program, program2) == 0,
						"%s, seed %llu: a refusal (%s) changed the program",
						specs[o], (unsigned long long)seed, why);
					free(trace2);
					free(program2);
					refused++;
				}
				free(trace);
				free(program);
			}
			sch_state_free(st);
		}
		tessel_op_release(op);
	}
	cr_expect_gt(refused, 50);
	tessel_ctx_free(ctx);
}
