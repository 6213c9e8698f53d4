/* libFuzzer target for the two trace parsers: the text form
 * (sch_trace_parse) and the JSON form (sch_trace_parse_json).  Any bytes
 * must give a trace or an error located in the input; every trace that
 * parses, from either form, must round-trip:
 *     trace -> text -> trace -> text      identical texts
 *     trace -> JSON -> trace -> JSON      identical JSON
 *     trace -> JSON -> trace -> text      the text of the first trace */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/trace.h"

static void fail(const char *what, const char *a, const char *b)
{
	fprintf(stderr, "round trip failed: %s\n--- first:\n%s\n--- second:\n%s\n",
		what, a, b ? b : "(did not parse)");
	abort();
}

static void check_error(tessel_ctx *ctx, const char *file)
{
	const tessel_error *e = tessel_ctx_error(ctx);
	if (e->kind != TESSEL_ERR_SYNTAX || !e->loc.file || strcmp(e->loc.file, file) != 0 ||
	    e->loc.line < 1 || e->loc.col < 1 || !e->message[0]) {
		fprintf(stderr, "unlocated error: %s\n", e->message);
		abort();
	}
}

static void check_round_trips(tessel_ctx *ctx, const sch_trace *t)
{
	char *text = sch_trace_to_text(t), *json = sch_trace_to_json(t);
	sch_trace *from_text = sch_trace_parse(ctx, "again.trace", text);
	sch_trace *from_json = sch_trace_parse_json(ctx, "again.json", json);
	char *text2 = from_text ? sch_trace_to_text(from_text) : NULL;
	char *json2 = from_json ? sch_trace_to_json(from_json) : NULL;
	char *text3 = from_json ? sch_trace_to_text(from_json) : NULL;
	if (!text2 || strcmp(text, text2) != 0)
		fail("text", text, text2);
	if (!json2 || strcmp(json, json2) != 0)
		fail("JSON", json, json2);
	if (strcmp(text, text3) != 0)
		fail("JSON to text", text, text3);
	free(text);
	free(json);
	free(text2);
	free(json2);
	free(text3);
	sch_trace_free(from_text);
	sch_trace_free(from_json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	tessel_ctx *ctx = tessel_ctx_new();
	sch_trace *t = sch_trace_parse(ctx, "fuzz.trace", text);
	if (t)
		check_round_trips(ctx, t);
	else
		check_error(ctx, "fuzz.trace");
	sch_trace_free(t);
	t = sch_trace_parse_json(ctx, "fuzz.json", text);
	if (t)
		check_round_trips(ctx, t);
	else
		check_error(ctx, "fuzz.json");
	sch_trace_free(t);
	tessel_ctx_free(ctx);
	free(text);
	return 0;
}
