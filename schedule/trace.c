/* Traces: recording, the text form, and replay. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/strbuf.h"
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

sch_trace *sch_trace_new(void)
{
	return calloc(1, sizeof(sch_trace));
}

void sch_trace_free(sch_trace *t)
{
	if (!t)
		return;
	free(t->steps);
	free(t);
}

void sch_trace_append(sch_trace *t, const sch_step *step)
{
	if (t->nsteps == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		sch_step *grown = realloc(t->steps, sizeof(sch_step) * (size_t)cap);
		if (!grown)
			abort();
		t->steps = grown;
		t->cap = cap;
	}
	t->steps[t->nsteps++] = *step;
}

void sch_step_init(sch_step *s, const char *prim)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->prim, sizeof(s->prim), "%s", prim);
}

void sch_step_arg(sch_step *s, const char *fmt, ...)
{
	va_list ap;
	if (s->nargs == SCH_MAX_ARGS)
		return;
	va_start(ap, fmt);
	vsnprintf(s->args[s->nargs++], sizeof(s->args[0]), fmt, ap);
	va_end(ap);
}

void sch_step_out(sch_step *s, const char *fmt, ...)
{
	va_list ap;
	if (s->nouts == SCH_MAX_ARGS)
		return;
	va_start(ap, fmt);
	vsnprintf(s->outs[s->nouts++], sizeof(s->outs[0]), fmt, ap);
	va_end(ap);
}

char *sch_trace_to_text(const sch_trace *t)
{
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, "");
	for (int i = 0; i < t->nsteps; i++) {
		const sch_step *s = &t->steps[i];
		te_sb_puts(&sb, s->prim);
		for (int a = 0; a < s->nargs; a++)
			te_sb_printf(&sb, " %s", s->args[a]);
		if (s->nouts)
			te_sb_puts(&sb, " ->");
		for (int o = 0; o < s->nouts; o++)
			te_sb_printf(&sb, " %s", s->outs[o]);
		te_sb_puts(&sb, "\n");
	}
	return te_sb_take(&sb);
}

/* Split "line" (modified) into words; return the count or -1 when there
 * are too many. */
static int split_words(char *line, char **words, int max)
{
	int n = 0;
	for (char *w = strtok(line, " \t\r"); w; w = strtok(NULL, " \t\r")) {
		if (n == max)
			return -1;
		words[n++] = w;
	}
	return n;
}

static int parse_line(tessel_ctx *ctx, tessel_loc loc, char *line, sch_step *step)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = 0;
	char *words[2 * SCH_MAX_ARGS + 3];
	int n = split_words(line, words, 2 * SCH_MAX_ARGS + 2);
	if (n < 0)
		return te_error(ctx, TESSEL_ERR_SYNTAX, loc, "too many words in a step");
	if (n == 0)
		return 1;
	sch_step_init(step, words[0]);
	if (strlen(words[0]) >= sizeof(step->prim))
		return te_error(ctx, TESSEL_ERR_SYNTAX, loc, "unknown primitive '%s'",
			words[0]);
	bool outs = false;
	for (int i = 1; i < n; i++) {
		if (strcmp(words[i], "->") == 0) {
			if (outs)
				return te_error(ctx, TESSEL_ERR_SYNTAX, loc, "'->' appears twice");
			outs = true;
			continue;
		}
		if (strlen(words[i]) >= sizeof(step->args[0]))
			return te_error(ctx, TESSEL_ERR_SYNTAX, loc, "word '%.20s...' too long",
				words[i]);
		if ((outs ? step->nouts : step->nargs) == SCH_MAX_ARGS)
			return te_error(ctx, TESSEL_ERR_SYNTAX, loc, "too many arguments");
		if (outs)
			sch_step_out(step, "%s", words[i]);
		else
			sch_step_arg(step, "%s", words[i]);
	}
	return 0;
}

sch_trace *sch_trace_parse(tessel_ctx *ctx, const char *file, const char *text)
{
	sch_trace *t = sch_trace_new();
	int lineno = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		tessel_loc loc = { file, lineno, 1 };
		if (len > 4096) {
			te_error(ctx, TESSEL_ERR_SYNTAX, loc, "line too long");
			sch_trace_free(t);
			return NULL;
		}
		char line[4097];
		memcpy(line, p, len);
		line[len] = 0;
		sch_step step;
		int r = parse_line(ctx, loc, line, &step);
		if (r < 0) {
			sch_trace_free(t);
			return NULL;
		}
		step.line = lineno;
		if (r == 0 && t->nsteps == 10000) {
			te_error(ctx, TESSEL_ERR_LIMIT, loc, "more than 10000 steps");
			sch_trace_free(t);
			return NULL;
		}
		if (r == 0)
			sch_trace_append(t, &step);
		p += len + (nl ? 1 : 0);
	}
	return t;
}

/* Parse "text" as an integer into "*v"; false when it is not one. */
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

static int arity_error(sch_state *st, const sch_step *s, const char *usage)
{
	return sch_refuse(st, "%s: wrong arguments; usage: %s", s->prim, usage);
}

/* Return the stage-local name of the qualified loop "q" (after the dot). */
static const char *local_name(const char *q)
{
	const char *dot = strrchr(q, '.');
	return dot ? dot + 1 : q;
}

static int apply_split(sch_state *st, const sch_step *s)
{
	int64_t f;
	bool nparts = strncmp(s->args[1], "nparts=", 7) == 0;
	if (s->nargs != 2 || (s->nouts != 0 && s->nouts != 2) ||
	    !parse_int(s->args[1] + (nparts ? 7 : 0), &f))
		return arity_error(st, s, "split STAGE.LOOP FACTOR|nparts=N [-> STAGE.OUTER STAGE.INNER]");
	return sch_split(st, s->args[0], f, nparts, s->nouts ? local_name(s->outs[0]) : NULL,
		s->nouts ? local_name(s->outs[1]) : NULL);
}

static int apply_annotation(sch_state *st, const sch_step *s)
{
	int64_t v;
	if (s->nargs != 3 || !parse_int(s->args[2], &v))
		return arity_error(st, s, "annotate STAGE.LOOP KEY VALUE");
	return sch_annotate(st, s->args[0], s->args[1], v);
}

static int apply_tile(sch_state *st, const sch_step *s)
{
	int64_t fx, fy;
	if (s->nargs != 4 || !parse_int(s->args[2], &fx) || !parse_int(s->args[3], &fy))
		return arity_error(st, s, "tile STAGE.X STAGE.Y FX FY");
	return sch_tile(st, s->args[0], s->args[1], fx, fy);
}

static int apply_one_loop(sch_state *st, const sch_step *s,
	int (*fn)(sch_state *, const char *))
{
	if (s->nargs != 1 || s->nouts) {
		char usage[64];
		snprintf(usage, sizeof(usage), "%s %s", s->prim,
			s->prim[0] == 'c' ? "STAGE" : "STAGE.LOOP");
		return arity_error(st, s, usage);
	}
	return fn(st, s->args[0]);
}

int sch_apply_step(sch_state *st, const sch_step *s)
{
	const char *p = s->prim;
	if (strcmp(p, "split") == 0)
		return apply_split(st, s);
	if (strcmp(p, "fuse") == 0) {
		if (s->nargs != 2 || s->nouts > 1)
			return arity_error(st, s, "fuse STAGE.OUTER STAGE.INNER [-> STAGE.FUSED]");
		return sch_fuse(st, s->args[0], s->args[1], s->nouts ? local_name(s->outs[0]) : NULL);
	}
	if (strcmp(p, "reorder") == 0) {
		const char *loops[SCH_MAX_ARGS];
		for (int i = 0; i < s->nargs; i++)
			loops[i] = s->args[i];
		if (s->nouts)
			return arity_error(st, s, "reorder STAGE.LOOP...");
		return sch_reorder(st, s->nargs, loops);
	}
	if (strcmp(p, "tile") == 0)
		return apply_tile(st, s);
	if (strcmp(p, "parallel") == 0)
		return apply_one_loop(st, s, sch_parallel);
	if (strcmp(p, "vectorize") == 0)
		return apply_one_loop(st, s, sch_vectorize);
	if (strcmp(p, "unroll") == 0)
		return apply_one_loop(st, s, sch_unroll);
	if (strcmp(p, "bind") == 0) {
		if (s->nargs != 2 || s->nouts)
			return arity_error(st, s, "bind STAGE.LOOP blockIdx.x|...|threadIdx.z|vthread");
		return sch_bind(st, s->args[0], s->args[1]);
	}
	if (strcmp(p, "annotate") == 0)
		return apply_annotation(st, s);
	if (strcmp(p, "compute_inline") == 0)
		return apply_one_loop(st, s, sch_compute_inline);
	if (strcmp(p, "compute_root") == 0)
		return apply_one_loop(st, s, sch_compute_root);
	if (strcmp(p, "compute_at") == 0) {
		if (s->nargs != 2 || s->nouts)
			return arity_error(st, s, "compute_at STAGE STAGE.LOOP");
		return sch_compute_at(st, s->args[0], s->args[1]);
	}
	if (strcmp(p, "reverse_compute_at") == 0) {
		if (s->nargs != 2 || s->nouts)
			return arity_error(st, s, "reverse_compute_at STAGE STAGE.LOOP");
		return sch_reverse_compute_at(st, s->args[0], s->args[1]);
	}
	if (strcmp(p, "rfactor") == 0) {
		if (s->nargs != 1 || s->nouts > 1)
			return arity_error(st, s, "rfactor STAGE.LOOP [-> NEW]");
		return sch_rfactor(st, s->args[0]);
	}
	if (strcmp(p, "decompose_reduction") == 0) {
		if (s->nargs != 2 || s->nouts)
			return arity_error(st, s, "decompose_reduction STAGE STAGE.LOOP");
		return sch_decompose_reduction(st, s->args[0], s->args[1]);
	}
	if (strcmp(p, "cache_write") == 0) {
		if (s->nargs != 2 || s->nouts > 1)
			return arity_error(st, s, "cache_write STAGE SCOPE [-> NEW]");
		return sch_cache_write(st, s->args[0], s->args[1]);
	}
	if (strcmp(p, "storage_align") == 0) {
		int64_t factor, offset;
		if (s->nargs != 3 || s->nouts || !parse_int(s->args[1], &factor) ||
		    !parse_int(s->args[2], &offset))
			return arity_error(st, s, "storage_align STAGE.AXIS FACTOR OFFSET");
		return sch_storage_align(st, s->args[0], factor, offset);
	}
	if (strcmp(p, "reorder_storage") == 0) {
		const char *axes[SCH_MAX_ARGS];
		for (int i = 0; i < s->nargs; i++)
			axes[i] = s->args[i];
		if (s->nargs < 1 || s->nouts)
			return arity_error(st, s, "reorder_storage STAGE.AXIS...");
		return sch_reorder_storage(st, s->nargs, axes);
	}
	if (strcmp(p, "split_storage") == 0) {
		int64_t factor;
		if (s->nargs != 2 || s->nouts || !parse_int(s->args[1], &factor))
			return arity_error(st, s, "split_storage STAGE.AXIS FACTOR");
		return sch_split_storage(st, s->args[0], factor);
	}
	if (strcmp(p, "prefetch") == 0) {
		int64_t distance;
		if (s->nargs != 3 || s->nouts || !parse_int(s->args[2], &distance))
			return arity_error(st, s, "prefetch STAGE.LOOP INPUT DISTANCE");
		return sch_prefetch(st, s->args[0], s->args[1], distance);
	}
	if (strcmp(p, "stream") == 0) {
		int64_t on;
		if (s->nargs != 2 || s->nouts || !parse_int(s->args[1], &on))
			return arity_error(st, s, "stream STAGE ON");
		return sch_stream(st, s->args[0], on);
	}
	if (strcmp(p, "cache_read") == 0) {
		const char *readers[SCH_MAX_ARGS];
		for (int i = 2; i < s->nargs; i++)
			readers[i - 2] = s->args[i];
		if (s->nargs < 3 || s->nouts > 1)
			return arity_error(st, s, "cache_read TENSOR SCOPE READER... [-> NEW]");
		return sch_cache_read(st, s->args[0], s->args[1], s->nargs - 2, readers);
	}
	return sch_refuse(st, "unknown primitive '%s'", p);
}

int sch_replay(sch_state *st, const sch_trace *t, const char *file)
{
	for (int i = 0; i < t->nsteps; i++)
		if (sch_apply_step(st, &t->steps[i])) {
			tessel_error *e = &st->ctx->err;
			char msg[sizeof(e->message)];
			snprintf(msg, sizeof(msg), "%s", e->message);
			int line = t->steps[i].line ? t->steps[i].line : i + 1;
			return te_error(st->ctx, e->kind, (tessel_loc){ file, line, 1 },
				"step %d (%s): %s", i + 1, t->steps[i].prim, msg);
		}
	return 0;
}

loop_prog *sch_trace_program(tessel_ctx *ctx, tessel_op *op, const char *file,
	const char *text)
{
	sch_state *st = sch_state_new(ctx, op);
	sch_trace *t = st ? sch_trace_parse(ctx, file, text) : NULL;
	loop_prog *p = t && sch_replay(st, t, file) == 0 ? sch_program(st) : NULL;
	sch_trace_free(t);
	sch_state_free(st);
	return p;
}
