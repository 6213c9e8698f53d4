/* Traces: the JSON form, and the decisions of a step.
 *
 *     {"tessel_trace": 1, "steps": [
 *       {"prim": "split", "args": ["C.i", "32"], "outs": ["C.io", "C.ii"], "decisions": [32]},
 *       {"prim": "parallel", "args": ["C.io"], "outs": [], "decisions": []}
 *     ]}
 *
 * docs/schedules.md ("JSON form") is the specification.  The reader is a
 * strict parser of exactly this schema in the syntax of RFC 8259 (objects,
 * arrays, strings, integers), not a general JSON parser: it never
 * recurses (nesting is bounded by the schema), reads nothing past the NUL
 * that ends "text", and refuses what the schema does not name, so that
 * every JSON trace is also a text trace and the two forms round-trip. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/strbuf.h"
#include "ir/te_impl.h"
#include "schedule/trace.h"

#define WORD_MAX ((int)sizeof(((sch_step *)0)->args[0]))

/* The decision arguments of each primitive: their indices (-1 ends), and
 * whether they are integers; "prefix" may precede an integer. */
static const struct decision_rule {
	const char *prim;
	int args[3];
	bool is_int;
	const char *prefix;
} decision_rules[] = {
	{ "split", { 1, -1 }, true, "nparts=" },
	{ "tile", { 2, 3, -1 }, true, NULL },
	{ "annotate", { 2, -1 }, true, NULL },
	{ "prefetch", { 2, -1 }, true, NULL },
	{ "stream", { 1, -1 }, true, NULL },
	{ "compute_at", { 1, -1 }, false, NULL },
	{ "reverse_compute_at", { 1, -1 }, false, NULL },
};

/* A decision as it appears in JSON: an integer or a string. */
typedef struct json_decision {
	bool is_int;
	int64_t value;
	char text[WORD_MAX];
} json_decision;

/* The reader's position in the text. */
typedef struct json_in {
	tessel_ctx *ctx;
	const char *file;
	const char *p;
	int line, col;
	int step;          /* the number of the step being read (from 1), or 0 */
} json_in;

/* Parse "text" as a whole decimal integer into "*v", as replay does. */
static bool parse_int_arg(const char *text, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(text, &end, 10);
	if (errno || end == text || *end)
		return false;
	*v = x;
	return true;
}

/* Store in "out" the decisions rule "r" finds in step "s"; return how
 * many. */
static int rule_decisions(const struct decision_rule *r, const sch_step *s,
	sch_decision *out)
{
	int n = 0;
	for (int k = 0; r->args[k] >= 0; k++) {
		int a = r->args[k];
		if (a >= s->nargs)
			continue;
		const char *text = s->args[a];
		size_t plen = r->prefix ? strlen(r->prefix) : 0;
		if (plen && strncmp(text, r->prefix, plen) == 0)
			text += plen;
		int64_t v = 0;
		if (r->is_int && !parse_int_arg(text, &v))
			continue;
		out[n++] = (sch_decision){ .arg = a, .is_int = r->is_int, .value = v };
	}
	return n;
}

int sch_step_decisions(const sch_step *s, sch_decision out[SCH_MAX_ARGS])
{
	for (size_t i = 0; i < sizeof(decision_rules) / sizeof(decision_rules[0]); i++)
		if (strcmp(s->prim, decision_rules[i].prim) == 0)
			return rule_decisions(&decision_rules[i], s, out);
	return 0;
}

/* Store the decisions of "s" in their JSON shape in "out"; return how
 * many. */
static int json_decisions_of(const sch_step *s, json_decision *out)
{
	sch_decision d[SCH_MAX_ARGS];
	int n = sch_step_decisions(s, d);
	for (int i = 0; i < n; i++) {
		out[i] = (json_decision){ .is_int = d[i].is_int, .value = d[i].value };
		if (!d[i].is_int)
			snprintf(out[i].text, sizeof(out[i].text), "%s", s->args[d[i].arg]);
	}
	return n;
}

/* Append "s" to "sb" as a JSON string: quotes, backslashes and control
 * characters escaped, other bytes as they are. */
static void put_string(te_strbuf *sb, const char *s)
{
	te_sb_puts(sb, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		const char *esc = NULL;
		switch (*c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default: break;
		}
		if (esc)
			te_sb_puts(sb, esc);
		else if (*c < 0x20 || *c == 0x7f)
			te_sb_printf(sb, "\\u%04x", *c);
		else
			te_sb_printf(sb, "%c", *c);
	}
	te_sb_puts(sb, "\"");
}

/* Append the "n" strings "v" to "sb" as a JSON list. */
static void put_strings(te_strbuf *sb, int n, const char (*v)[WORD_MAX])
{
	te_sb_puts(sb, "[");
	for (int i = 0; i < n; i++) {
		if (i)
			te_sb_puts(sb, ", ");
		put_string(sb, v[i]);
	}
	te_sb_puts(sb, "]");
}

/* Append the "n" decisions "d" to "sb" as a JSON list. */
static void put_decisions(te_strbuf *sb, int n, const json_decision *d)
{
	te_sb_puts(sb, "[");
	for (int i = 0; i < n; i++) {
		if (i)
			te_sb_puts(sb, ", ");
		if (d[i].is_int)
			te_sb_printf(sb, "%lld", (long long)d[i].value);
		else
			put_string(sb, d[i].text);
	}
	te_sb_puts(sb, "]");
}

/* Append step "s" to "sb" as one line of the JSON form. */
static void put_step(te_strbuf *sb, const sch_step *s)
{
	json_decision d[SCH_MAX_ARGS];
	int n = json_decisions_of(s, d);
	te_sb_puts(sb, "  {\"prim\": ");
	put_string(sb, s->prim);
	te_sb_puts(sb, ", \"args\": ");
	put_strings(sb, s->nargs, s->args);
	te_sb_puts(sb, ", \"outs\": ");
	put_strings(sb, s->nouts, s->outs);
	te_sb_puts(sb, ", \"decisions\": ");
	put_decisions(sb, n, d);
	te_sb_puts(sb, "}");
}

char *sch_trace_to_json(const sch_trace *t)
{
	te_strbuf sb = { 0 };
	te_sb_printf(&sb, "{\"tessel_trace\": %d, \"steps\": [", SCH_TRACE_JSON_VERSION);
	for (int i = 0; i < t->nsteps; i++) {
		te_sb_puts(&sb, i ? ",\n" : "\n");
		put_step(&sb, &t->steps[i]);
	}
	te_sb_puts(&sb, t->nsteps ? "\n]}\n" : "]}\n");
	return te_sb_take(&sb);
}

/* Return the location of the reader's position. */
static tessel_loc here(const json_in *in)
{
	return (tessel_loc){ in->file, in->line, in->col };
}

/* Record the error "fmt" at "loc" and return -1. */
static int fail_at(json_in *in, tessel_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_at(json_in *in, tessel_loc loc, const char *fmt, ...)
{
	char msg[sizeof(in->ctx->err.message)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return te_error(in->ctx, TESSEL_ERR_SYNTAX, loc, "%s", msg);
}

/* Move past one byte (never past the end). */
static void advance(json_in *in)
{
	if (!*in->p)
		return;
	if (*in->p == '\n') {
		in->line++;
		in->col = 1;
	} else {
		in->col++;
	}
	in->p++;
}

/* Move past JSON whitespace (space, tab, line feed, carriage return). */
static void skip_space(json_in *in)
{
	while (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r')
		advance(in);
}

/* Describe the byte at the reader's position for an error message, in
 * "buf". */
static const char *found(const json_in *in, char buf[24])
{
	unsigned char c = (unsigned char)*in->p;
	if (!c)
		return "the end of the input";
	if (c < 0x20 || c >= 0x7f)
		snprintf(buf, 24, "byte 0x%02x", c);
	else
		snprintf(buf, 24, "'%c'", c);
	return buf;
}

/* Skip spaces and expect the byte "c"; "what" says where, for the error. */
static int expect(json_in *in, char c, const char *what)
{
	char buf[24];
	skip_space(in);
	if (*in->p != c)
		return fail_at(in, here(in), "expected '%c' %s, found %s", c, what,
			found(in, buf));
	advance(in);
	return 0;
}

/* Skip spaces; when the next byte is "c", move past it and return true. */
static bool accept(json_in *in, char c)
{
	skip_space(in);
	if (*in->p != c)
		return false;
	advance(in);
	return true;
}

/* Return the value of the hex digit "c", or -1. */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Read the \uXXXX escape at the reader's "u"; return its byte or -1. */
static int read_unicode_escape(json_in *in, tessel_loc at)
{
	advance(in);
	int v = 0;
	for (int k = 0; k < 4; k++) {
		int d = hex_digit(*in->p);
		if (d < 0)
			return fail_at(in, at, "\\u needs four hex digits");
		v = v * 16 + d;
		advance(in);
	}
	if (v == 0)
		return fail_at(in, at, "\\u0000 (NUL) cannot appear in a string");
	if (v > 0x7f)
		return fail_at(in, at, "\\u%04X is not ASCII; only \\u0001 to \\u007F are "
			"supported", (unsigned)v);
	return v;
}

/* Read the escape at the reader's backslash; return its byte or -1. */
static int read_escape(json_in *in)
{
	tessel_loc at = here(in);
	advance(in);
	char c = *in->p;
	const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
	const char *hit = c ? strchr(from, c) : NULL;
	if (hit) {
		advance(in);
		return (unsigned char)to[hit - from];
	}
	if (c == 'u')
		return read_unicode_escape(in, at);
	char buf[24];
	return fail_at(in, at, "unknown escape: backslash before %s", found(in, buf));
}

/* Read a string into "buf" ("cap" bytes with the NUL); "what" names it
 * in errors. */
static int read_string(json_in *in, char *buf, size_t cap, const char *what)
{
	char fb[24];
	skip_space(in);
	tessel_loc start = here(in);
	if (*in->p != '"')
		return fail_at(in, start, "expected %s (a string), found %s", what,
			found(in, fb));
	advance(in);
	size_t n = 0;
	for (;;) {
		unsigned char c = (unsigned char)*in->p;
		int byte = c;
		if (!c || (c == '\\' && !in->p[1]))
			return fail_at(in, start, "unterminated string");
		if (c == '"')
			break;
		if (c < 0x20)
			return fail_at(in, here(in), "control character 0x%02x in a string "
				"(write it as \\u%04x)", c, c);
		if (c == '\\')
			byte = read_escape(in);
		else
			advance(in);
		if (byte < 0)
			return -1;
		if (n + 1 >= cap)
			return fail_at(in, start, "%s is too long (at most %zu bytes)", what,
				cap - 1);
		buf[n++] = (char)byte;
	}
	advance(in);
	buf[n] = 0;
	return 0;
}

/* Return true when "c" is a decimal digit. */
static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Return the number of digits at "p", counting at most "max". */
static size_t count_digits(const char *p, size_t max)
{
	size_t n = 0;
	while (n < max && is_digit(p[n]))
		n++;
	return n;
}

/* Read a JSON integer (no fraction, no exponent) that fits in int64_t. */
static int read_int(json_in *in, int64_t *v, const char *what)
{
	char fb[24];
	skip_space(in);
	tessel_loc start = here(in);
	const char *p = in->p;
	bool neg = *p == '-';
	p += neg;
	if (!is_digit(*p))
		return fail_at(in, start, "expected %s (an integer), found %s", what,
			found(in, fb));
	if (p[0] == '0' && is_digit(p[1]))
		return fail_at(in, start, "numbers cannot have leading zeros");
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, mag = 0;
	const char *digits = p;
	for (; is_digit(*p); p++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (mag > (limit - d) / 10)
			return fail_at(in, start, "integer %s%.*s is out of range",
				neg ? "-" : "", (int)count_digits(digits, 40), digits);
		mag = mag * 10 + d;
	}
	if (*p == '.' || *p == 'e' || *p == 'E')
		return fail_at(in, start, "%s must be an integer (no fraction or exponent)",
			what);
	while (in->p < p)
		advance(in);
	*v = neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
	return 0;
}

/* Return the indefinite article for "noun". */
static const char *article(const char *noun)
{
	return strchr("aeiou", noun[0]) ? "an" : "a";
}

/* Refuse the string "w" read at "at" as a "what" of a step when the text
 * form could not hold it as one word there ("->" separates the arguments
 * from the outputs; as the first word it is a primitive name, if unknown). */
static int check_word(json_in *in, tessel_loc at, const char *w, const char *what,
	bool first)
{
	if (!w[0])
		return fail_at(in, at, "step %d: an empty string is not a valid %s",
			in->step, what);
	if (!first && strcmp(w, "->") == 0)
		return fail_at(in, at, "step %d: \"->\" is not a valid %s", in->step, what);
	if (strpbrk(w, " \t\r\n#"))
		return fail_at(in, at, "step %d: %s %s cannot contain spaces, tabs, line "
			"breaks or '#'", in->step, article(what), what);
	return 0;
}

/* Read a list of at most SCH_MAX_ARGS words into "v" and "*n". */
static int read_words(json_in *in, char (*v)[WORD_MAX], int *n, const char *what)
{
	char fb[24];
	if (expect(in, '[', "to start a list"))
		return -1;
	if (accept(in, ']'))
		return 0;
	for (;;) {
		skip_space(in);
		tessel_loc at = here(in);
		if (*n == SCH_MAX_ARGS)
			return fail_at(in, at, "step %d: more than %d %ss", in->step,
				SCH_MAX_ARGS, what);
		char noun[32];
		snprintf(noun, sizeof(noun), "%s %s", article(what), what);
		if (read_string(in, v[*n], WORD_MAX, noun) ||
		    check_word(in, at, v[*n], what, false))
			return -1;
		(*n)++;
		if (accept(in, ']'))
			return 0;
		if (!accept(in, ','))
			return fail_at(in, here(in), "expected ',' or ']' in a list of %ss, "
				"found %s", what, found(in, fb));
	}
}

/* Read one decision, an integer or a string, into "d". */
static int read_decision(json_in *in, json_decision *d)
{
	char fb[24];
	skip_space(in);
	if (*in->p == '"') {
		d->is_int = false;
		return read_string(in, d->text, sizeof(d->text), "a decision");
	}
	if (*in->p == '-' || is_digit(*in->p)) {
		d->is_int = true;
		return read_int(in, &d->value, "a decision");
	}
	return fail_at(in, here(in), "expected a decision (an integer or a loop "
		"name), found %s", found(in, fb));
}

/* Read a list of at most SCH_MAX_ARGS decisions into "d" and "*n". */
static int read_decisions(json_in *in, json_decision *d, int *n)
{
	char fb[24];
	if (expect(in, '[', "to start the list of decisions"))
		return -1;
	if (accept(in, ']'))
		return 0;
	for (;;) {
		skip_space(in);
		if (*n == SCH_MAX_ARGS)
			return fail_at(in, here(in), "step %d: more than %d decisions",
				in->step, SCH_MAX_ARGS);
		if (read_decision(in, &d[*n]))
			return -1;
		(*n)++;
		if (accept(in, ']'))
			return 0;
		if (!accept(in, ','))
			return fail_at(in, here(in), "expected ',' or ']' in a list of "
				"decisions, found %s", found(in, fb));
	}
}

/* Return true when the "n" decisions "a" equal the "m" decisions "b". */
static bool same_decisions(int n, const json_decision *a, int m,
	const json_decision *b)
{
	if (n != m)
		return false;
	for (int i = 0; i < n; i++)
		if (a[i].is_int != b[i].is_int ||
		    (a[i].is_int ? a[i].value != b[i].value : strcmp(a[i].text, b[i].text) != 0))
			return false;
	return true;
}

/* Refuse the decisions "d" ("n" of them, read at "at") unless they are
 * those the arguments of "step" give. */
static int check_decisions(json_in *in, tessel_loc at, const sch_step *step,
	int n, const json_decision *d)
{
	json_decision want[SCH_MAX_ARGS];
	int m = json_decisions_of(step, want);
	if (same_decisions(n, d, m, want))
		return 0;
	te_strbuf got = { 0 }, wanted = { 0 };
	put_decisions(&got, n, d);
	put_decisions(&wanted, m, want);
	fail_at(in, at, "step %d: decisions %s do not match the arguments, which "
		"give %s", in->step, te_sb_str(&got), te_sb_str(&wanted));
	te_sb_free(&got);
	te_sb_free(&wanted);
	return -1;
}

enum { KEY_PRIM, KEY_ARGS, KEY_OUTS, KEY_DECISIONS, NKEYS };
static const char *const step_keys[NKEYS] = { "prim", "args", "outs", "decisions" };

/* The parts of a step read so far. */
typedef struct step_reading {
	bool seen[NKEYS];
	tessel_loc decisions_at;
	int ndecisions;
	json_decision decisions[SCH_MAX_ARGS];
} step_reading;

/* Read the value of key "key" of a step into "step" and "r". */
static int read_step_value(json_in *in, int key, sch_step *step, step_reading *r)
{
	skip_space(in);
	tessel_loc at = here(in);
	switch (key) {
	case KEY_PRIM:
		if (read_string(in, step->prim, sizeof(step->prim), "a primitive name"))
			return -1;
		return check_word(in, at, step->prim, "primitive name", true);
	case KEY_ARGS:
		return read_words(in, step->args, &step->nargs, "argument");
	case KEY_OUTS:
		return read_words(in, step->outs, &step->nouts, "output");
	default:
		r->decisions_at = at;
		return read_decisions(in, r->decisions, &r->ndecisions);
	}
}

/* Read one key of a step and its value. */
static int read_step_member(json_in *in, sch_step *step, step_reading *r)
{
	char key[WORD_MAX];
	skip_space(in);
	tessel_loc at = here(in);
	if (read_string(in, key, sizeof(key), "a key"))
		return -1;
	int k = 0;
	while (k < NKEYS && strcmp(key, step_keys[k]) != 0)
		k++;
	if (k == NKEYS)
		return fail_at(in, at, "step %d: unknown key \"%.40s\" (a step has prim, "
			"args, outs, decisions)", in->step, key);
	if (r->seen[k])
		return fail_at(in, at, "step %d: duplicate key \"%s\"", in->step, key);
	r->seen[k] = true;
	if (expect(in, ':', "after a key"))
		return -1;
	return read_step_value(in, k, step, r);
}

/* Read one step object into "step" (its line is where it starts); the
 * keys prim and args are required, and decisions, when given, must be
 * those of the arguments. */
static int read_step(json_in *in, sch_step *step)
{
	char fb[24];
	step_reading r = { 0 };
	if (expect(in, '{', "to start a step"))
		return -1;
	sch_step_init(step, "");
	step->line = in->line;
	if (!accept(in, '}')) {
		for (;;) {
			if (read_step_member(in, step, &r))
				return -1;
			if (accept(in, '}'))
				break;
			if (!accept(in, ','))
				return fail_at(in, here(in), "expected ',' or '}' in a step, found %s",
					found(in, fb));
		}
	}
	tessel_loc end = { in->file, in->line, in->col - 1 };
	for (int k = KEY_PRIM; k <= KEY_ARGS; k++)
		if (!r.seen[k])
			return fail_at(in, end, "step %d: missing key \"%s\"", in->step,
				step_keys[k]);
	if (r.seen[KEY_DECISIONS])
		return check_decisions(in, r.decisions_at, step, r.ndecisions, r.decisions);
	return 0;
}

/* Read the list of steps into "t" (at most SCH_TRACE_JSON_MAX_STEPS). */
static int read_steps(json_in *in, sch_trace *t)
{
	char fb[24];
	if (expect(in, '[', "to start the list of steps"))
		return -1;
	if (accept(in, ']'))
		return 0;
	for (;;) {
		skip_space(in);
		if (t->nsteps == SCH_TRACE_JSON_MAX_STEPS)
			return fail_at(in, here(in), "more than %d steps",
				SCH_TRACE_JSON_MAX_STEPS);
		in->step = t->nsteps + 1;
		sch_step step;
		if (read_step(in, &step))
			return -1;
		sch_trace_append(t, &step);
		if (accept(in, ']'))
			return 0;
		if (!accept(in, ','))
			return fail_at(in, here(in), "expected ',' or ']' after a step, found %s",
				found(in, fb));
	}
}

/* Read the opening brace and the version, which must come first. */
static int read_version(json_in *in)
{
	char key[WORD_MAX];
	if (expect(in, '{', "at the start of a JSON trace"))
		return -1;
	skip_space(in);
	tessel_loc at = here(in);
	if (*in->p == '}')
		return fail_at(in, at, "missing key \"tessel_trace\" (the format version)");
	if (read_string(in, key, sizeof(key), "a key"))
		return -1;
	if (strcmp(key, "tessel_trace") != 0)
		return fail_at(in, at, "the first key must be \"tessel_trace\" (the format "
			"version), not \"%.40s\"", key);
	if (expect(in, ':', "after a key"))
		return -1;
	skip_space(in);
	at = here(in);
	int64_t version;
	if (read_int(in, &version, "the format version"))
		return -1;
	if (version != SCH_TRACE_JSON_VERSION)
		return fail_at(in, at, "unsupported trace format version %lld (this tessel "
			"reads version %d)", (long long)version, SCH_TRACE_JSON_VERSION);
	return 0;
}

/* Read a whole JSON trace into "t": the version, the steps, and nothing
 * after the closing brace. */
static int read_trace(json_in *in, sch_trace *t)
{
	char fb[24], key[WORD_MAX];
	bool have_steps = false;
	if (read_version(in))
		return -1;
	while (!accept(in, '}')) {
		if (expect(in, ',', "or '}' after a value in the trace"))
			return -1;
		skip_space(in);
		tessel_loc at = here(in);
		if (read_string(in, key, sizeof(key), "a key"))
			return -1;
		if (strcmp(key, "steps") != 0 && strcmp(key, "tessel_trace") != 0)
			return fail_at(in, at, "unknown key \"%.40s\" (a trace has tessel_trace "
				"and steps)", key);
		if (strcmp(key, "tessel_trace") == 0 || have_steps)
			return fail_at(in, at, "duplicate key \"%s\"", key);
		have_steps = true;
		if (expect(in, ':', "after a key") || read_steps(in, t))
			return -1;
		in->step = 0;
	}
	if (!have_steps)
		return fail_at(in, (tessel_loc){ in->file, in->line, in->col - 1 },
			"missing key \"steps\"");
	skip_space(in);
	if (*in->p)
		return fail_at(in, here(in), "unexpected %s after the end of the trace",
			found(in, fb));
	return 0;
}

sch_trace *sch_trace_parse_json(tessel_ctx *ctx, const char *file, const char *text)
{
	json_in in = { ctx, file, text, 1, 1, 0 };
	sch_trace *t = sch_trace_new();
	if (read_trace(&in, t)) {
		sch_trace_free(t);
		return NULL;
	}
	return t;
}
