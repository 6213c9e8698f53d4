/* The C-family printer, shared by the dialects: identifiers, helpers,
 * expressions with tessel's semantics (ir/interp.c), flat offsets,
 * stores, conditionals and serial loops.  What differs between dialects
 * is read from the dialect table (codegen/c_printer.h); loops of other
 * kinds, allocations and the layout of the file are the dialect's hooks.
 *
 * Semantics printed (the reference interpreter's):
 *  - float arithmetic in the value type of the node's dtype (f16 and bf16
 *    in float, rounded when stored or cast); integers exactly, wrapping to
 *    their dtype, through int64 helpers unless the ranges of the operands
 *    prove the plain C operator cannot overflow;
 *  - integer division and modulo are floor division and floor modulo
 *    (plain / and % when the divisor is a positive constant and the
 *    dividend is provably non-negative);
 *  - casts from float to integer truncate toward zero and saturate, NaN
 *    to 0; casts between integers wrap;
 *  - select, && and || evaluate only what they need (C's ?:, && and ||);
 *  - min and max of floats are fmin and fmax. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

static const cg_dialect *const dialects[CG_DIALECT_COUNT] = {
	[CG_DIALECT_C] = &cg_dialect_cpu_c,
	[CG_DIALECT_CUDA] = &cg_dialect_cuda_c,
	[CG_DIALECT_OPENCL] = &cg_dialect_opencl_c,
};

static const char *const dialect_names[CG_DIALECT_COUNT] = {
	"C", "CUDA C", "OpenCL C"
};

/* Identifiers every dialect's generated code defines itself. */
static const char *const printer_names[] = {
	"args", "env", "status", "closure", "captured", "begin", "end", NULL
};

/* ---- output ------------------------------------------------------------- */

void cg_error(cg_printer *pr, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	if (pr->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	te_error(pr->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
		"kernel '%s': %s", pr->p->name, msg);
	pr->failed = true;
}

/* Start a line of "pr" at its indentation with the printf-formatted "fmt". */
void cg_line(cg_printer *pr, const char *fmt, ...)
{
	va_list ap;
	for (int i = 0; i < pr->depth; i++)
		te_sb_puts(pr->out, "\t");
	va_start(ap, fmt);
	te_sb_vprintf(pr->out, fmt, ap);
	va_end(ap);
}

/* Continue the current line of "pr" with the printf-formatted "fmt". */
void cg_put(cg_printer *pr, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	te_sb_vprintf(pr->out, fmt, ap);
	va_end(ap);
}

/* Return a copy of "s" that lives as long as "pr". */
char *cg_strdup(cg_printer *pr, const char *s)
{
	return te_arena_strdup(&pr->arena, s);
}

/* Open a parenthesis in "pr" when "paren". */
static void open_paren(cg_printer *pr, bool paren)
{
	if (paren)
		te_sb_puts(pr->out, "(");
}

/* Close the parenthesis open_paren opened in "pr" when "paren". */
static void close_paren(cg_printer *pr, bool paren)
{
	if (paren)
		te_sb_puts(pr->out, ")");
}

/* ---- identifiers ---------------------------------------------------------- */

/* Write "name" made a C identifier into "out" of size "len": characters
 * other than letters, digits and '_' become '_'; a name starting with a
 * digit or looking like a reserved or helper name gets a "v" in front. */
static void mangle(const char *name, char *out, size_t len)
{
	size_t k = 0;
	bool prefix = !name || !*name || (*name >= '0' && *name <= '9') ||
		strncmp(name, "tsl_", 4) == 0 || name[0] == '_';
	if (prefix && k + 1 < len)
		out[k++] = 'v';
	for (const char *c = name ? name : ""; *c && k + 1 < len; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			(*c >= '0' && *c <= '9') || *c == '_';
		out[k++] = ok ? *c : '_';
	}
	out[k] = 0;
}

/* Return whether "name" is reserved by the dialect "d" or the printer. */
static bool name_reserved(const cg_dialect *d, const char *name)
{
	for (const char *const *r = d->reserved; *r; r++)
		if (strcmp(*r, name) == 0)
			return true;
	for (const char *const *r = printer_names; *r; r++)
		if (strcmp(*r, name) == 0)
			return true;
	return false;
}

/* Return whether "name" is given out in "pr" or reserved by its dialect. */
static bool name_taken(const cg_printer *pr, const char *name)
{
	for (int i = 0; i < pr->ntaken; i++)
		if (strcmp(pr->taken[i], name) == 0)
			return true;
	return name_reserved(pr->d, name);
}

/* Mark "name" as given out in "pr". */
static const char *take_name(cg_printer *pr, const char *name)
{
	const char *copy = cg_strdup(pr, name);
	te_push(&pr->arena, (void ***)&pr->taken, &pr->ntaken, (void *)copy);
	return copy;
}

/* Return "base" made a C identifier and, with a numeric suffix when
 * needed, unlike any identifier "pr" gave out or reserves; mark it taken. */
const char *cg_fresh_name(cg_printer *pr, const char *base)
{
	char name[300], candidate[320];
	mangle(base, name, sizeof(name));
	snprintf(candidate, sizeof(candidate), "%s", name);
	for (int n = 1; name_taken(pr, candidate); n++)
		snprintf(candidate, sizeof(candidate), "%s_%d", name, n);
	return take_name(pr, candidate);
}

/* Write the name of "p" made a C identifier into "buf" of size "len",
 * with "kernel_" in front of a name some dialect reserves ("exp"). */
int cg_kernel_name(const loop_prog *p, char *buf, size_t len)
{
	char name[300];
	mangle(p->name, name, sizeof(name));
	bool reserved = false;
	for (int d = 0; d < CG_DIALECT_COUNT; d++)
		reserved |= dialects[d] && name_reserved(dialects[d], name);
	return snprintf(buf, len, "%s%s", reserved ? "kernel_" : "", name);
}

/* Return the C identifier "pr" gave the variable "v". */
const char *cg_var_name(const cg_printer *pr, const loop_var *v)
{
	if (v->id >= 0 && v->id < pr->p->nvars && pr->var_name[v->id])
		return pr->var_name[v->id];
	return "tsl_unbound_var";
}

/* Return what "pr" knows of the buffer "b", or NULL for a buffer the
 * program never mentions. */
cg_buffer_info *cg_buffer(const cg_printer *pr, const loop_buffer *b)
{
	for (int i = 0; i < pr->nbufs; i++)
		if (pr->bufs[i].buf == b)
			return &pr->bufs[i];
	return NULL;
}

/* Give the buffer "b" of "pr" a name, once. */
static cg_buffer_info *name_buffer(cg_printer *pr, const loop_buffer *b)
{
	cg_buffer_info *info = cg_buffer(pr, b);
	if (info)
		return info;
	cg_buffer_info *grown = te_arena_alloc(&pr->arena,
		sizeof(*grown) * (size_t)(pr->nbufs + 1));
	if (pr->nbufs)
		memcpy(grown, pr->bufs, sizeof(*grown) * (size_t)pr->nbufs);
	pr->bufs = grown;
	info = &pr->bufs[pr->nbufs++];
	info->buf = b;
	info->name = cg_fresh_name(pr, b->name);
	return info;
}

/* Give the variable "v" of "pr" a name, once. */
static void name_var(cg_printer *pr, const loop_var *v)
{
	if (v->id >= 0 && v->id < pr->p->nvars && !pr->var_name[v->id])
		pr->var_name[v->id] = cg_fresh_name(pr, v->name);
}

static void name_expr(cg_printer *pr, const loop_expr *e);

/* Name the variables and buffers of the "n" expressions "e". */
static void name_exprs(cg_printer *pr, int n, loop_expr *const *e)
{
	for (int i = 0; i < n; i++)
		name_expr(pr, e[i]);
}

/* Name the variables and buffers "e" mentions. */
static void name_expr(cg_printer *pr, const loop_expr *e)
{
	switch (e->kind) {
	case LX_VAR:
		name_var(pr, e->u.var);
		break;
	case LX_LOAD:
		name_buffer(pr, e->u.load.buf);
		name_exprs(pr, e->u.load.n, e->u.load.index);
		break;
	case LX_UNARY:
		name_expr(pr, e->u.un.a);
		break;
	case LX_BINARY:
		name_expr(pr, e->u.bin.a);
		name_expr(pr, e->u.bin.b);
		break;
	case LX_SELECT:
		name_expr(pr, e->u.sel.cond);
		name_expr(pr, e->u.sel.then_);
		name_expr(pr, e->u.sel.else_);
		break;
	case LX_CAST:
		name_expr(pr, e->u.cast.a);
		break;
	default:
		break;
	}
}

/* Name the variables and buffers of "s" in the order they appear, and
 * note which buffers are stored to. */
static void name_stmt(cg_printer *pr, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		name_var(pr, s->u.for_.var);
		name_expr(pr, s->u.for_.min);
		name_expr(pr, s->u.for_.extent);
		name_stmt(pr, s->u.for_.body);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			name_stmt(pr, s->u.seq.items[i]);
		break;
	case LS_STORE:
		name_buffer(pr, s->u.store.buf)->stored = true;
		name_exprs(pr, s->u.store.n, s->u.store.index);
		name_expr(pr, s->u.store.value);
		break;
	case LS_IF:
		name_expr(pr, s->u.if_.cond);
		name_stmt(pr, s->u.if_.then_);
		if (s->u.if_.else_)
			name_stmt(pr, s->u.if_.else_);
		break;
	case LS_ALLOC:
		name_buffer(pr, s->u.alloc.buf);
		name_stmt(pr, s->u.alloc.body);
		break;
	case LS_PREFETCH:
		name_buffer(pr, s->u.prefetch.buf);
		name_exprs(pr, s->u.prefetch.n, s->u.prefetch.index);
		break;
	case LS_BARRIER:
		break;
	}
}

/* Return the number of parallel loops in "s". */
static int count_parallel(const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		return (s->u.for_.kind == LOOP_PARALLEL) +
			count_parallel(s->u.for_.body);
	case LS_SEQ: {
		int n = 0;
		for (int i = 0; i < s->u.seq.n; i++)
			n += count_parallel(s->u.seq.items[i]);
		return n;
	}
	case LS_IF:
		return count_parallel(s->u.if_.then_) +
			(s->u.if_.else_ ? count_parallel(s->u.if_.else_) : 0);
	case LS_ALLOC:
		return count_parallel(s->u.alloc.body);
	default:
		return 0;
	}
}

/* Reserve the names of the kernel of "pr" and of its outlined functions,
 * then name its buffers (arguments first) and variables. */
static void name_program(cg_printer *pr)
{
	char name[400];
	cg_kernel_name(pr->p, name, sizeof(name));
	pr->kernel = take_name(pr, name);
	int nparallel = pr->p->body ? count_parallel(pr->p->body) : 0;
	for (int k = 0; k < nparallel; k++) {
		snprintf(name, sizeof(name), "%s_parallel%d", pr->kernel, k);
		take_name(pr, name);
		snprintf(name, sizeof(name), "%s_parallel%d_closure", pr->kernel, k);
		take_name(pr, name);
		snprintf(name, sizeof(name), "closure%d", k);
		take_name(pr, name);
	}
	for (int i = 0; i < pr->p->nargs; i++)
		name_buffer(pr, pr->p->args[i]);
	if (pr->p->body)
		name_stmt(pr, pr->p->body);
}

/* ---- helpers ------------------------------------------------------------ */

void cg_need_helper(cg_printer *pr, const char *name, const char *text)
{
	for (int i = 0; i < pr->nhelpers; i++)
		if (strcmp(pr->helpers[i].name, name) == 0)
			return;
	cg_helper *grown = te_arena_alloc(&pr->arena,
		sizeof(*grown) * (size_t)(pr->nhelpers + 1));
	if (pr->nhelpers)
		memcpy(grown, pr->helpers, sizeof(*grown) * (size_t)pr->nhelpers);
	pr->helpers = grown;
	pr->helpers[pr->nhelpers].name = cg_strdup(pr, name);
	pr->helpers[pr->nhelpers].text = cg_strdup(pr, text);
	pr->nhelpers++;
}

/* Append the helpers "pr" emitted, in order, each followed by a blank
 * line, to "sb". */
void cg_write_helpers(const cg_printer *pr, te_strbuf *sb)
{
	for (int i = 0; i < pr->nhelpers; i++) {
		te_sb_puts(sb, pr->helpers[i].text);
		te_sb_puts(sb, "\n");
	}
}

/* Append "tmpl" to "sb" with each "$k" (k < "n") replaced by "subst"[k]. */
void cg_template(te_strbuf *sb, const char *tmpl, int n, const char *const *subst)
{
	for (const char *c = tmpl; *c; c++) {
		if (c[0] == '$' && c[1] >= '0' && c[1] < '0' + n) {
			te_sb_puts(sb, subst[c[1] - '0']);
			c++;
		} else {
			char one[2] = { *c, 0 };
			te_sb_puts(sb, one);
		}
	}
}

/* A scalar helper: its name, the helpers it calls, its definition after
 * the storage class ("$0" stands for the dialect's floor function of the
 * helper's precision). */
typedef struct scalar_helper {
	const char *name;
	const char *deps[2];
	const char *text;
} scalar_helper;

/* The conversions are tessel_f32_to_f16 and its siblings of
 * tessel/dtype.h, and must stay identical to them. */
static const scalar_helper scalar_helpers[] = {
	{ "tsl_f32_to_f16", { NULL }, "uint16_t tsl_f32_to_f16(float f)\n{\n"
	  "\tuint32_t x;\n\tmemcpy(&x, &f, 4);\n"
	  "\tuint32_t sign = (x >> 16) & 0x8000u;\n"
	  "\tuint32_t exp = (x >> 23) & 0xffu;\n"
	  "\tuint32_t mant = x & 0x7fffffu;\n"
	  "\tif (exp == 0xff)\n"
	  "\t\treturn (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));\n"
	  "\tint e = (int)exp - 127 + 15;\n"
	  "\tif (e >= 31)\n\t\treturn (uint16_t)(sign | 0x7c00u);\n"
	  "\tif (e <= 0) {\n"
	  "\t\tif (e < -10)\n\t\t\treturn (uint16_t)sign;\n"
	  "\t\tmant |= 0x800000u;\n"
	  "\t\tuint32_t shift = (uint32_t)(14 - e);\n"
	  "\t\tuint32_t half = mant >> shift;\n"
	  "\t\tuint32_t rem = mant & ((1u << shift) - 1);\n"
	  "\t\tuint32_t mid = 1u << (shift - 1);\n"
	  "\t\tif (rem > mid || (rem == mid && (half & 1)))\n\t\t\thalf++;\n"
	  "\t\treturn (uint16_t)(sign | half);\n\t}\n"
	  "\tuint32_t half = ((uint32_t)e << 10) | (mant >> 13);\n"
	  "\tuint32_t rem = mant & 0x1fffu;\n"
	  "\tif (rem > 0x1000u || (rem == 0x1000u && (half & 1)))\n\t\thalf++;\n"
	  "\treturn (uint16_t)(sign | half);\n}\n" },
	{ "tsl_f16_to_f32", { NULL }, "float tsl_f16_to_f32(uint16_t h)\n{\n"
	  "\tuint32_t sign = ((uint32_t)h & 0x8000u) << 16;\n"
	  "\tuint32_t exp = (h >> 10) & 0x1fu;\n"
	  "\tuint32_t mant = h & 0x3ffu;\n"
	  "\tuint32_t x;\n"
	  "\tif (exp == 0x1f) {\n"
	  "\t\tx = sign | 0x7f800000u | (mant << 13);\n"
	  "\t} else if (exp == 0) {\n"
	  "\t\tif (mant == 0) {\n\t\t\tx = sign;\n\t\t} else {\n"
	  "\t\t\tint e = -1;\n"
	  "\t\t\tdo {\n\t\t\t\te++;\n\t\t\t\tmant <<= 1;\n"
	  "\t\t\t} while (!(mant & 0x400u));\n"
	  "\t\t\tx = sign | ((uint32_t)(127 - 15 - e) << 23) |\n"
	  "\t\t\t    ((mant & 0x3ffu) << 13);\n\t\t}\n"
	  "\t} else {\n"
	  "\t\tx = sign | ((exp + 127 - 15) << 23) | (mant << 13);\n\t}\n"
	  "\tfloat f;\n\tmemcpy(&f, &x, 4);\n\treturn f;\n}\n" },
	{ "tsl_f32_to_bf16", { NULL }, "uint16_t tsl_f32_to_bf16(float f)\n{\n"
	  "\tuint32_t x;\n\tmemcpy(&x, &f, 4);\n"
	  "\tif ((x & 0x7fffffffu) > 0x7f800000u)\n"
	  "\t\treturn (uint16_t)((x >> 16) | 0x40u);\n"
	  "\tx += 0x7fffu + ((x >> 16) & 1u);\n"
	  "\treturn (uint16_t)(x >> 16);\n}\n" },
	{ "tsl_bf16_to_f32", { NULL }, "float tsl_bf16_to_f32(uint16_t b)\n{\n"
	  "\tuint32_t x = (uint32_t)b << 16;\n"
	  "\tfloat f;\n\tmemcpy(&f, &x, 4);\n\treturn f;\n}\n" },
	{ "tsl_round_f16", { "tsl_f32_to_f16", "tsl_f16_to_f32" },
	  "float tsl_round_f16(float x)\n{\n"
	  "\treturn tsl_f16_to_f32(tsl_f32_to_f16(x));\n}\n" },
	{ "tsl_round_bf16", { "tsl_f32_to_bf16", "tsl_bf16_to_f32" },
	  "float tsl_round_bf16(float x)\n{\n"
	  "\treturn tsl_bf16_to_f32(tsl_f32_to_bf16(x));\n}\n" },
	{ "tsl_f2i_i8", { NULL }, "int8_t tsl_f2i_i8(double v)\n{\n"
	  "\tif (v != v)\n\t\treturn 0;\n"
	  "\tif (v <= -128.0)\n\t\treturn INT8_MIN;\n"
	  "\tif (v >= 127.0)\n\t\treturn INT8_MAX;\n"
	  "\treturn (int8_t)v;\n}\n" },
	{ "tsl_f2i_u8", { NULL }, "uint8_t tsl_f2i_u8(double v)\n{\n"
	  "\tif (v != v || v <= 0.0)\n\t\treturn 0;\n"
	  "\tif (v >= 255.0)\n\t\treturn UINT8_MAX;\n"
	  "\treturn (uint8_t)v;\n}\n" },
	{ "tsl_f2i_i32", { NULL }, "int32_t tsl_f2i_i32(double v)\n{\n"
	  "\tif (v != v)\n\t\treturn 0;\n"
	  "\tif (v <= -2147483648.0)\n\t\treturn INT32_MIN;\n"
	  "\tif (v >= 2147483647.0)\n\t\treturn INT32_MAX;\n"
	  "\treturn (int32_t)v;\n}\n" },
	{ "tsl_f2i_i64", { NULL }, "int64_t tsl_f2i_i64(double v)\n{\n"
	  "\tif (v != v)\n\t\treturn 0;\n"
	  "\tif (v <= -9223372036854775808.0)\n\t\treturn INT64_MIN;\n"
	  "\tif (v >= 9223372036854775807.0)\n\t\treturn INT64_MAX;\n"
	  "\treturn (int64_t)v;\n}\n" },
	{ "tsl_floordiv", { NULL },
	  "int64_t tsl_floordiv(int64_t a, int64_t b)\n{\n"
	  "\tif (b == 0)\n\t\treturn 0;\n"
	  "\tif (b == -1)\n\t\treturn (int64_t)(0 - (uint64_t)a);\n"
	  "\tint64_t q = a / b;\n"
	  "\treturn (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n}\n" },
	{ "tsl_floormod", { NULL },
	  "int64_t tsl_floormod(int64_t a, int64_t b)\n{\n"
	  "\tif (b == 0 || b == -1)\n\t\treturn 0;\n"
	  "\tint64_t r = a % b;\n"
	  "\treturn (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n}\n" },
	{ "tsl_wrap_add", { NULL },
	  "int64_t tsl_wrap_add(int64_t a, int64_t b)\n{\n"
	  "\treturn (int64_t)((uint64_t)a + (uint64_t)b);\n}\n" },
	{ "tsl_wrap_sub", { NULL },
	  "int64_t tsl_wrap_sub(int64_t a, int64_t b)\n{\n"
	  "\treturn (int64_t)((uint64_t)a - (uint64_t)b);\n}\n" },
	{ "tsl_wrap_mul", { NULL },
	  "int64_t tsl_wrap_mul(int64_t a, int64_t b)\n{\n"
	  "\treturn (int64_t)((uint64_t)a * (uint64_t)b);\n}\n" },
	{ "tsl_wrap_neg", { NULL },
	  "int64_t tsl_wrap_neg(int64_t a)\n{\n"
	  "\treturn (int64_t)(0 - (uint64_t)a);\n}\n" },
	{ "tsl_iabs", { NULL },
	  "int64_t tsl_iabs(int64_t a)\n{\n"
	  "\treturn a < 0 ? (int64_t)(0 - (uint64_t)a) : a;\n}\n" },
	{ "tsl_ipow", { NULL },
	  "int64_t tsl_ipow(int64_t base, int64_t exp)\n{\n"
	  "\tuint64_t result = 1, b = (uint64_t)base;\n"
	  "\tif (exp < 0)\n\t\treturn 0;\n"
	  "\tfor (uint64_t e = (uint64_t)exp; e; e >>= 1) {\n"
	  "\t\tif (e & 1)\n\t\t\tresult *= b;\n\t\tb *= b;\n\t}\n"
	  "\treturn (int64_t)result;\n}\n" },
	{ "tsl_imin", { NULL },
	  "int64_t tsl_imin(int64_t a, int64_t b)\n{\n"
	  "\treturn a < b ? a : b;\n}\n" },
	{ "tsl_imax", { NULL },
	  "int64_t tsl_imax(int64_t a, int64_t b)\n{\n"
	  "\treturn a > b ? a : b;\n}\n" },
	{ "tsl_floormod_f32", { NULL },
	  "float tsl_floormod_f32(float a, float b)\n{\n"
	  "\treturn a - $0(a / b) * b;\n}\n" },
	{ "tsl_floormod_f64", { NULL },
	  "double tsl_floormod_f64(double a, double b)\n{\n"
	  "\treturn a - $0(a / b) * b;\n}\n" },
	{ "tsl_fmax_f32", { NULL },
	  "float tsl_fmax_f32(float a, float b)\n{\n"
	  "\treturn (a > b || b != b) ? a : b;\n}\n" },
	{ "tsl_fmin_f32", { NULL },
	  "float tsl_fmin_f32(float a, float b)\n{\n"
	  "\treturn (a < b || b != b) ? a : b;\n}\n" },
	{ "tsl_fmax_f64", { NULL },
	  "double tsl_fmax_f64(double a, double b)\n{\n"
	  "\treturn (a > b || b != b) ? a : b;\n}\n" },
	{ "tsl_fmin_f64", { NULL },
	  "double tsl_fmin_f64(double a, double b)\n{\n"
	  "\treturn (a < b || b != b) ? a : b;\n}\n" },
};

/* The scalar helpers that F16C's instructions compute where the dialect
 * allows them (cg_dialect.f16c): the statement that does. */
static const struct {
	const char *name, *stmt;
} f16c_helpers[] = {
	{ "tsl_f32_to_f16", "\treturn (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | "
	  "_MM_FROUND_NO_EXC);\n" },
	{ "tsl_f16_to_f32", "\treturn _cvtsh_ss(h);\n" },
};

/* Return the F16C statement of the helper "name" for the dialect of
 * "pr", or NULL. */
static const char *f16c_statement(const cg_printer *pr, const char *name)
{
	for (size_t i = 0; pr->d->f16c && i < sizeof(f16c_helpers) / sizeof(*f16c_helpers); i++)
		if (strcmp(f16c_helpers[i].name, name) == 0)
			return f16c_helpers[i].stmt;
	return NULL;
}

/* Make the body of the helper in "sb" compute by "stmt" where the
 * target has F16C, keeping the portable body for the others. */
static void splice_f16c(te_strbuf *sb, const char *stmt)
{
	const char *text = te_sb_str(sb);
	const char *open = strstr(text, "\n{\n");
	size_t head = (size_t)(open - text) + 3, len = strlen(text);
	te_strbuf out = { 0 };
	te_sb_printf(&out, "%.*s#if defined(__F16C__)\n%s#else\n%.*s#endif\n}\n",
		(int)head, text, stmt, (int)(len - head - 2), text + head);
	te_sb_free(sb);
	*sb = out;
}

/* Emit the scalar helper "name" of scalar_helpers into "pr", after the
 * helpers it calls; unknown names emit nothing. */
void cg_need_scalar_helper(cg_printer *pr, const char *name)
{
	for (size_t i = 0; i < sizeof(scalar_helpers) / sizeof(*scalar_helpers); i++) {
		const scalar_helper *h = &scalar_helpers[i];
		if (strcmp(h->name, name) != 0)
			continue;
		for (int k = 0; k < 2 && h->deps[k]; k++)
			cg_need_scalar_helper(pr, h->deps[k]);
		te_strbuf sb = { 0 };
		const char *floor_fn =
			pr->d->unary_fn[strstr(name, "f64") != NULL][TESSEL_FLOOR];
		const char *f16c = f16c_statement(pr, name);
		if (f16c)
			te_sb_puts(&sb, "#if defined(__F16C__)\n#include <immintrin.h>\n#endif\n");
		te_sb_printf(&sb, "%s ", pr->d->helper_qualifier);
		cg_template(&sb, h->text, 1, &floor_fn);
		if (f16c)
			splice_f16c(&sb, f16c);
		cg_need_helper(pr, name, te_sb_str(&sb));
		te_sb_free(&sb);
		return;
	}
}

/* Print a call of the scalar helper "name" (emitting it) up to its "(". */
static void call_helper(cg_printer *pr, const char *name)
{
	cg_need_scalar_helper(pr, name);
	cg_put(pr, "%s(", name);
}

/* ---- facts about expressions --------------------------------------------- */

static bool is_float(tessel_dtype dt)
{
	return tessel_dtype_is_float(dt);
}

/* Return 1 when "dt" computes in double, 0 in float. */
static int precision(tessel_dtype dt)
{
	return dt == TESSEL_F64;
}

/* Return whether "op" compares two values into a bool. */
static bool is_comparison(tessel_binary op)
{
	return op >= TESSEL_LT && op <= TESSEL_NE;
}

/* Return whether "a" and "b" are structurally equal (same kinds, dtypes,
 * operators, literals bit for bit, variables and buffers). */

/* Return whether "e" is integer index arithmetic: i64 operators over
 * literals and loop variables only, whose values the loops bound. */
static bool is_pure_index(const loop_expr *e)
{
	if (e->dtype != TESSEL_I64 && e->dtype != TESSEL_BOOL)
		return false;
	switch (e->kind) {
	case LX_INT:
	case LX_BOOL:
	case LX_VAR:
		return true;
	case LX_UNARY:
		return e->u.un.op == TESSEL_NEG && is_pure_index(e->u.un.a);
	case LX_BINARY:
		return e->u.bin.op != TESSEL_POW && is_pure_index(e->u.bin.a) &&
			is_pure_index(e->u.bin.b);
	case LX_SELECT:
		return is_pure_index(e->u.sel.cond) && is_pure_index(e->u.sel.then_) &&
			is_pure_index(e->u.sel.else_);
	default:
		return false;
	}
}

/* ---- ranges of integer values -------------------------------------------- */

static const cg_range unknown_range = { false, 0, 0 };

/* Return the known range ["lo", "hi"]. */
static cg_range make_range(int64_t lo, int64_t hi)
{
	cg_range r = { true, lo, hi };
	return r;
}

/* Return the range of every value of the integer or bool dtype "dt". */
static cg_range dtype_range(tessel_dtype dt)
{
	int64_t lo, hi;
	if (dt == TESSEL_I64 || (!tessel_dtype_is_int(dt) && dt != TESSEL_BOOL))
		return unknown_range;
	tessel_int_limits(dt, &lo, &hi);
	return make_range(lo, hi);
}

/* Return whether every value of "r" is a value of "dt". */
static bool range_fits(cg_range r, tessel_dtype dt)
{
	if (!r.known)
		return false;
	cg_range d = dtype_range(dt);
	return !d.known || (r.lo >= d.lo && r.hi <= d.hi);
}

/* Return "r" as the values of "dt" hold it after wrapping. */
static cg_range wrap_range(cg_range r, tessel_dtype dt)
{
	return range_fits(r, dt) ? r : dtype_range(dt);
}

/* Return the range of "a op b" for the ranges "a" and "b", computed
 * exactly (unknown when an end overflows int64). */
static cg_range binary_range(tessel_binary op, cg_range a, cg_range b,
	const loop_expr *divisor)
{
	int64_t c[4];
	if (op == TESSEL_MOD && divisor->kind == LX_INT && divisor->u.ival > 0)
		return make_range(0, divisor->u.ival - 1);
	if (!a.known || !b.known)
		return unknown_range;
	switch (op) {
	case TESSEL_ADD:
		if (__builtin_add_overflow(a.lo, b.lo, &c[0]) ||
		    __builtin_add_overflow(a.hi, b.hi, &c[1]))
			return unknown_range;
		return make_range(c[0], c[1]);
	case TESSEL_SUB:
		if (__builtin_sub_overflow(a.lo, b.hi, &c[0]) ||
		    __builtin_sub_overflow(a.hi, b.lo, &c[1]))
			return unknown_range;
		return make_range(c[0], c[1]);
	case TESSEL_MUL:
		if (__builtin_mul_overflow(a.lo, b.lo, &c[0]) ||
		    __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
		    __builtin_mul_overflow(a.hi, b.lo, &c[2]) ||
		    __builtin_mul_overflow(a.hi, b.hi, &c[3]))
			return unknown_range;
		break;
	case TESSEL_DIV:
		if (divisor->kind != LX_INT || divisor->u.ival <= 0)
			return unknown_range;
		c[0] = c[1] = a.lo / divisor->u.ival - (a.lo % divisor->u.ival < 0);
		c[2] = c[3] = a.hi / divisor->u.ival - (a.hi % divisor->u.ival < 0);
		break;
	case TESSEL_MIN:
		return make_range(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
	case TESSEL_MAX:
		return make_range(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
	default:
		return unknown_range;
	}
	cg_range r = make_range(c[0], c[0]);
	for (int i = 1; i < 4; i++) {
		r.lo = c[i] < r.lo ? c[i] : r.lo;
		r.hi = c[i] > r.hi ? c[i] : r.hi;
	}
	return r;
}

/* Return the range of the integer unary "e" before wrapping. */
static cg_range unary_range(const cg_printer *pr, const loop_expr *e)
{
	cg_range a = cg_range_of(pr, e->u.un.a);
	switch (e->u.un.op) {
	case TESSEL_NOT:
		return make_range(0, 1);
	case TESSEL_NEG:
		if (!a.known || a.lo == INT64_MIN)
			return unknown_range;
		return make_range(-a.hi, -a.lo);
	case TESSEL_ABS:
		if (!a.known || a.lo == INT64_MIN)
			return unknown_range;
		if (a.lo >= 0)
			return a;
		return make_range(a.hi < 0 ? -a.hi : 0,
			-a.lo > a.hi ? -a.lo : a.hi);
	case TESSEL_FLOOR:
		return a;
	default:
		return unknown_range;
	}
}

/* Return the range of the integer node "e" before it wraps to its dtype:
 * the exact result of its operator on its operands' ranges. */
static cg_range exact_range(const cg_printer *pr, const loop_expr *e)
{
	switch (e->kind) {
	case LX_INT:
	case LX_BOOL:
		return make_range(e->u.ival, e->u.ival);
	case LX_VAR:
		if (e->u.var->id >= 0 && e->u.var->id < pr->p->nvars)
			return pr->var_range[e->u.var->id];
		return unknown_range;
	case LX_LOAD:
		return dtype_range(e->dtype);
	case LX_UNARY:
		if (is_float(e->u.un.a->dtype))
			return dtype_range(e->dtype);
		return unary_range(pr, e);
	case LX_BINARY:
		if (is_comparison(e->u.bin.op) || e->u.bin.op == TESSEL_AND ||
		    e->u.bin.op == TESSEL_OR)
			return make_range(0, 1);
		if (is_float(e->u.bin.a->dtype) || is_float(e->u.bin.b->dtype))
			return dtype_range(e->dtype);
		return binary_range(e->u.bin.op, cg_range_of(pr, e->u.bin.a),
			cg_range_of(pr, e->u.bin.b), e->u.bin.b);
	case LX_SELECT: {
		cg_range a = cg_range_of(pr, e->u.sel.then_);
		cg_range b = cg_range_of(pr, e->u.sel.else_);
		if (!a.known || !b.known)
			return unknown_range;
		return make_range(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
	}
	case LX_CAST:
		if (is_float(e->u.cast.a->dtype))
			return dtype_range(e->dtype);
		return cg_range_of(pr, e->u.cast.a);
	default:
		return unknown_range;
	}
}

/* Return the range of the values of the integer or bool "e" (unknown for
 * floats), after wrapping to its dtype. */
cg_range cg_range_of(const cg_printer *pr, const loop_expr *e)
{
	if (is_float(e->dtype))
		return unknown_range;
	return wrap_range(exact_range(pr, e), e->dtype);
}

/* Record in "pr" the range of the variable of the loop "s": from the
 * smallest min to the largest min + extent - 1, when both are bounded. */
void cg_bind_loop_range(cg_printer *pr, const loop_stmt *s)
{
	const loop_var *v = s->u.for_.var;
	if (v->id < 0 || v->id >= pr->p->nvars)
		return;
	cg_range lo = cg_range_of(pr, s->u.for_.min);
	cg_range n = cg_range_of(pr, s->u.for_.extent);
	int64_t hi;
	if (!lo.known || !n.known || n.hi < 1 ||
	    __builtin_add_overflow(lo.hi, n.hi - 1, &hi)) {
		pr->var_range[v->id] = unknown_range;
		return;
	}
	pr->var_range[v->id] = make_range(lo.lo, hi);
}

/* ---- affine offsets ------------------------------------------------------- */

/* Add "scale" times the term "var" or "rest" to "aff"; false when full. */
static bool affine_term(cg_affine *aff, const loop_var *var, const loop_expr *rest,
	int64_t scale)
{
	for (int i = 0; i < aff->n; i++) {
		if (aff->var[i] == var && aff->rest[i] == rest)
			return !__builtin_add_overflow(aff->coef[i], scale, &aff->coef[i]);
	}
	if (aff->n == CG_AFFINE_MAX)
		return false;
	aff->var[aff->n] = var;
	aff->rest[aff->n] = rest;
	aff->coef[aff->n] = scale;
	aff->n++;
	return true;
}

/* Add "scale" times "e" to "aff", splitting sums and products by
 * constants; false on overflow or when "aff" is full. */
static bool affine_add(cg_affine *aff, const loop_expr *e, int64_t scale)
{
	int64_t k;
	if (e->dtype != TESSEL_I64)
		return affine_term(aff, NULL, e, scale);
	switch (e->kind) {
	case LX_INT:
		return !__builtin_mul_overflow(e->u.ival, scale, &k) &&
			!__builtin_add_overflow(aff->constant, k, &aff->constant);
	case LX_VAR:
		return affine_term(aff, e->u.var, NULL, scale);
	case LX_UNARY:
		if (e->u.un.op != TESSEL_NEG || scale == INT64_MIN)
			break;
		return affine_add(aff, e->u.un.a, -scale);
	case LX_BINARY: {
		const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
		if (e->u.bin.op == TESSEL_ADD)
			return affine_add(aff, a, scale) && affine_add(aff, b, scale);
		if (e->u.bin.op == TESSEL_SUB && scale != INT64_MIN)
			return affine_add(aff, a, scale) && affine_add(aff, b, -scale);
		if (e->u.bin.op != TESSEL_MUL)
			break;
		if (b->kind == LX_INT && !__builtin_mul_overflow(b->u.ival, scale, &k))
			return affine_add(aff, a, k);
		if (a->kind == LX_INT && !__builtin_mul_overflow(a->u.ival, scale, &k))
			return affine_add(aff, b, k);
		break;
	}
	default:
		break;
	}
	return affine_term(aff, NULL, e, scale);
}

/* Fill "aff" with "scale" * "e" kept whole when it cannot be split. */
static void affine_of(cg_affine *aff, const loop_expr *e, int64_t scale)
{
	cg_affine saved = *aff;
	if (!affine_add(aff, e, scale)) {
		*aff = saved;
		affine_term(aff, NULL, e, scale);
	}
}

/* Fill "aff" with the flat offset sum(index[d] * strides[d]) of "b",
 * split into loop-variable terms where the indices are affine. */
void cg_affine_offset(const loop_buffer *b, int n, loop_expr *const *index,
	cg_affine *aff)
{
	memset(aff, 0, sizeof(*aff));
	for (int d = 0; d < n; d++)
		affine_of(aff, index[d], b->strides[d]);
}

/* Return the coefficient of "v" in "aff"; set "*clean" to whether no
 * non-affine term of "aff" mentions "v". */
int64_t cg_affine_coef(const cg_affine *aff, const loop_var *v, bool *clean)
{
	int64_t coef = 0;
	*clean = true;
	for (int i = 0; i < aff->n; i++) {
		if (aff->var[i] == v)
			coef += aff->coef[i];
		else if (aff->rest[i] && aff->coef[i] &&
			 loop_expr_uses_var(aff->rest[i], v))
			*clean = false;
	}
	return coef;
}

/* Return whether "a" and "b" are the same sum, term by term (terms with
 * equal expressions merged, zero coefficients ignored). */
bool cg_affine_equal(const cg_affine *a, const cg_affine *b)
{
	if (a->constant != b->constant)
		return false;
	for (int pass = 0; pass < 2; pass++) {
		const cg_affine *x = pass ? b : a, *y = pass ? a : b;
		for (int i = 0; i < x->n; i++) {
			int64_t cx = 0, cy = 0;
			for (int j = 0; j < x->n; j++)
				if (x->var[j] == x->var[i] && (x->var[i] ||
				    loop_expr_equal(x->rest[j], x->rest[i])))
					cx += x->coef[j];
			for (int j = 0; j < y->n; j++)
				if (y->var[j] == x->var[i] && (x->var[i] ||
				    (y->rest[j] && loop_expr_equal(y->rest[j], x->rest[i]))))
					cy += y->coef[j];
			if (cx != cy)
				return false;
		}
	}
	return true;
}

/* Print the term "i" of "aff" with the magnitude of its coefficient. */
static void print_affine_term(cg_printer *pr, const cg_affine *aff, int i,
	bool leading)
{
	int64_t c = aff->coef[i];
	bool unit = c == 1 || c == -1;
	int prec = unit && leading ? CG_PREC_ADD : CG_PREC_MUL;
	if (aff->var[i])
		te_sb_puts(pr->out, cg_var_name(pr, aff->var[i]));
	else
		cg_print_as(pr, aff->rest[i], TESSEL_I64,
			leading && c < 0 ? CG_PREC_UNARY : prec);
	if (!unit) {
		if (c == INT64_MIN)
			cg_put(pr, " * INT64_MIN");
		else
			cg_put(pr, " * %lld", (long long)(c < 0 ? -c : c));
	}
}

/* Return the precedence level of the printed "aff". */
static int affine_level(const cg_affine *aff)
{
	int terms = aff->constant != 0;
	int64_t only = 0;
	for (int i = 0; i < aff->n; i++) {
		if (aff->coef[i]) {
			terms++;
			only = aff->coef[i];
		}
	}
	if (terms > 1)
		return CG_PREC_ADD;
	if (terms == 0)
		return CG_PREC_POSTFIX;
	if (aff->constant != 0)
		return aff->constant < 0 ? CG_PREC_UNARY : CG_PREC_POSTFIX;
	if (only < 0)
		return CG_PREC_UNARY;
	return only == 1 ? CG_PREC_POSTFIX : CG_PREC_MUL;
}

/* Print "aff" at precedence "prec": terms in order of appearance, the
 * constant last, "0" when empty. */
void cg_print_affine(cg_printer *pr, const cg_affine *aff, int prec)
{
	bool paren = affine_level(aff) < prec;
	bool leading = true;
	open_paren(pr, paren);
	for (int i = 0; i < aff->n; i++) {
		if (!aff->coef[i])
			continue;
		if (leading && aff->coef[i] < 0)
			cg_put(pr, "-");
		else if (!leading)
			cg_put(pr, aff->coef[i] < 0 ? " - " : " + ");
		print_affine_term(pr, aff, i, leading);
		leading = false;
	}
	if (leading && aff->constant == INT64_MIN)
		cg_put(pr, "INT64_MIN");
	else if (leading)
		cg_put(pr, "%lld", (long long)aff->constant);
	else if (aff->constant == INT64_MIN)
		cg_put(pr, " + INT64_MIN");
	else if (aff->constant)
		cg_put(pr, " %c %lld", aff->constant < 0 ? '-' : '+',
			(long long)(aff->constant < 0 ? -aff->constant : aff->constant));
	close_paren(pr, paren);
}

/* Print the flat offset of the element "index" of "b" from its strides. */
void cg_print_offset(cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	cg_affine aff;
	cg_affine_offset(b, n, index, &aff);
	cg_print_affine(pr, &aff, CG_PREC_NONE);
}

/* Print "a" + "b" + "extra" ("b" may be NULL) as one affine sum, at the
 * precedence of an operand of "<". */
void cg_print_sum(cg_printer *pr, const loop_expr *a, const loop_expr *b,
	int64_t extra)
{
	cg_affine aff;
	memset(&aff, 0, sizeof(aff));
	affine_of(&aff, a, 1);
	if (b)
		affine_of(&aff, b, 1);
	if (__builtin_add_overflow(aff.constant, extra, &aff.constant))
		cg_error(pr, "loop bound overflows");
	cg_print_affine(pr, &aff, CG_PREC_REL + 1);
}

/* Return 1 + the largest flat offset of "b" (0 when a dimension is
 * empty, INT64_MAX when it overflows): the elements its storage spans,
 * padding included. */
int64_t cg_buffer_elems(const loop_buffer *b)
{
	int64_t n = 1, span;
	for (int d = 0; d < b->ndim; d++) {
		if (b->shape[d] <= 0)
			return 0;
		if (__builtin_mul_overflow(b->shape[d] - 1, b->strides[d], &span) ||
		    __builtin_add_overflow(n, span, &n))
			return INT64_MAX;
	}
	return n;
}

/* ---- literals ------------------------------------------------------------- */

static void print_int(cg_printer *pr, int64_t v, int prec)
{
	if (v == INT64_MIN) {
		cg_put(pr, "INT64_MIN");
		return;
	}
	bool paren = v < 0 && prec > CG_PREC_UNARY;
	open_paren(pr, paren);
	cg_put(pr, "%lld", (long long)v);
	close_paren(pr, paren);
}

/* Write the shortest decimal form of "v" that reads back as the same
 * float ("single") or double into "buf" of size "len". */
static void shortest_decimal(double v, bool single, char *buf, size_t len)
{
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buf, len, "%.*g", digits, v);
		if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".e"))
		snprintf(buf + strlen(buf), len - strlen(buf), ".0");
}

/* Print "v" as the shortest C literal that reads back as the same float
 * (with an "f") or double, by the value type of "dt"; NAN and INFINITY
 * for the special values. */
void cg_print_float(cg_printer *pr, double v, tessel_dtype dt, int prec)
{
	bool single = precision(dt) == 0;
	char buf[64];
	if (single)
		v = (float)v;
	bool paren = signbit(v) && prec > CG_PREC_UNARY;
	open_paren(pr, paren);
	if (isnan(v)) {
		cg_put(pr, "NAN");
	} else if (isinf(v)) {
		cg_put(pr, v < 0 ? "-INFINITY" : "INFINITY");
	} else {
		shortest_decimal(v, single, buf, sizeof(buf));
		cg_put(pr, "%s%s", buf, single ? "f" : "");
	}
	close_paren(pr, paren);
}

/* Print the literal "e" as a value of "dt" (converted at print time). */
static void print_literal_as(cg_printer *pr, const loop_expr *e, tessel_dtype dt,
	int prec)
{
	if (e->kind == LX_FLOAT && is_float(dt))
		cg_print_float(pr, e->u.fval, dt, prec);
	else if (e->kind == LX_FLOAT)
		print_int(pr, tessel_float_to_int(dt, e->u.fval), prec);
	else if (is_float(dt))
		cg_print_float(pr, (double)e->u.ival, dt, prec);
	else
		print_int(pr, tessel_wrap_int(dt, e->u.ival), prec);
}

/* Return whether "e" is an integer, float or bool literal. */
static bool is_literal(const loop_expr *e)
{
	return e->kind == LX_INT || e->kind == LX_FLOAT || e->kind == LX_BOOL;
}

/* ---- conversions ------------------------------------------------------- */

/* Return the name of the saturating float-to-integer helper for "dt". */
static const char *f2i_helper(tessel_dtype dt)
{
	return dt == TESSEL_I8 ? "tsl_f2i_i8" : dt == TESSEL_U8 ? "tsl_f2i_u8"
		: dt == TESSEL_I32 ? "tsl_f2i_i32" : "tsl_f2i_i64";
}

/* Print the float "e" converted to the integer or bool "dt". */
static void print_float_to_int(cg_printer *pr, const loop_expr *e,
	tessel_dtype dt, int prec)
{
	if (dt == TESSEL_BOOL) {
		bool paren = prec > CG_PREC_EQ;
		open_paren(pr, paren);
		cg_print_expr(pr, e, CG_PREC_REL);
		cg_put(pr, " != 0");
		close_paren(pr, paren);
		return;
	}
	call_helper(pr, f2i_helper(dt));
	cg_print_expr(pr, e, CG_PREC_NONE);
	cg_put(pr, ")");
}

/* Print the start of the conversion of a double computed next to the
 * integer or bool "dt" at precedence "prec"; return whether a parenthesis
 * was opened. */
static bool begin_float_to_int(cg_printer *pr, tessel_dtype dt, int prec)
{
	if (dt != TESSEL_BOOL) {
		call_helper(pr, f2i_helper(dt));
		return false;
	}
	bool paren = prec > CG_PREC_EQ;
	open_paren(pr, paren);
	return paren;
}

/* Close what begin_float_to_int opened for "dt" and "paren". */
static void end_float_to_int(cg_printer *pr, tessel_dtype dt, bool paren)
{
	if (dt != TESSEL_BOOL) {
		cg_put(pr, ")");
		return;
	}
	cg_put(pr, " != 0");
	close_paren(pr, paren);
}

/* Print "(type)" and "e" at unary precedence, in parentheses when
 * "prec" is tighter. */
static void print_c_cast(cg_printer *pr, const char *type, const loop_expr *e,
	int prec)
{
	bool paren = prec > CG_PREC_UNARY;
	open_paren(pr, paren);
	cg_put(pr, "(%s)", type);
	cg_print_expr(pr, e, CG_PREC_UNARY);
	close_paren(pr, paren);
}

/* Print "e" as a value of "dt" at precedence "prec", converted as the
 * interpreter converts: floats to integers truncate and saturate (NaN to
 * 0), integers wrap (only when their range does not fit), anything to
 * bool is "!= 0", floats keep their value (f64 to f32 rounds, as C does). */
void cg_print_as(cg_printer *pr, const loop_expr *e, tessel_dtype dt, int prec)
{
	tessel_dtype from = e->dtype;
	const cg_dialect *d = pr->d;
	if (from == dt) {
		cg_print_expr(pr, e, prec);
	} else if (is_literal(e)) {
		print_literal_as(pr, e, dt, prec);
	} else if (is_float(dt)) {
		if (is_float(from) && strcmp(d->value_type[from], d->value_type[dt]) == 0)
			cg_print_expr(pr, e, prec);
		else
			print_c_cast(pr, d->value_type[dt], e, prec);
	} else if (is_float(from)) {
		print_float_to_int(pr, e, dt, prec);
	} else if (from == TESSEL_BOOL || range_fits(cg_range_of(pr, e), dt)) {
		cg_print_expr(pr, e, prec);
	} else if (dt == TESSEL_BOOL) {
		bool paren = prec > CG_PREC_EQ;
		open_paren(pr, paren);
		cg_print_expr(pr, e, CG_PREC_REL);
		cg_put(pr, " != 0");
		close_paren(pr, paren);
	} else {
		print_c_cast(pr, d->value_type[dt], e, prec);
	}
}

/* Print the explicit cast "e": floats round to the target ("tsl_round_f16"
 * for half types), floats to integers saturate, integers wrap. */
static void print_cast(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.cast.a;
	tessel_dtype to = e->u.cast.to;
	if (is_literal(a) && is_float(to)) {
		double v = a->kind == LX_FLOAT ? a->u.fval : (double)a->u.ival;
		cg_print_float(pr, tessel_round_to(to, v), to, prec);
	} else if (to == TESSEL_F16 || to == TESSEL_BF16) {
		call_helper(pr, to == TESSEL_F16 ? "tsl_round_f16" : "tsl_round_bf16");
		cg_print_expr(pr, a, CG_PREC_NONE);
		cg_put(pr, ")");
	} else {
		cg_print_as(pr, a, to, prec);
	}
}

/* ---- operators ------------------------------------------------------------ */

/* Return "e" printed as "dt" at precedence "prec" into a new string (the
 * caller frees it) rather than into "pr->out". */
static char *print_to_string(cg_printer *pr, const loop_expr *e, tessel_dtype dt,
	int prec)
{
	te_strbuf sb = { 0 }, *saved = pr->out;
	pr->out = &sb;
	cg_print_as(pr, e, dt, prec);
	pr->out = saved;
	return te_sb_take(&sb);
}

/* Print the unary minus of "e" converted to "dt", never writing "--". */
static void print_negation(cg_printer *pr, const loop_expr *e, tessel_dtype dt,
	int prec)
{
	char *text = print_to_string(pr, e, dt, CG_PREC_UNARY);
	bool paren = prec > CG_PREC_UNARY;
	open_paren(pr, paren);
	if (text[0] == '-')
		cg_put(pr, "-(%s)", text);
	else
		cg_put(pr, "-%s", text);
	close_paren(pr, paren);
	free(text);
}

/* Print the helper call "name(a, b)" with both operands as "dt". */
static void print_call2(cg_printer *pr, const char *name, const loop_expr *a,
	const loop_expr *b, tessel_dtype dt)
{
	cg_put(pr, "%s(", name);
	cg_print_as(pr, a, dt, CG_PREC_NONE);
	cg_put(pr, ", ");
	cg_print_as(pr, b, dt, CG_PREC_NONE);
	cg_put(pr, ")");
}

/* Print the infix "a op b" at the level "level", both operands as "dt". */
static void print_infix(cg_printer *pr, const char *op, const loop_expr *a,
	const loop_expr *b, tessel_dtype dt, int level, int prec)
{
	bool paren = level < prec;
	open_paren(pr, paren);
	cg_print_as(pr, a, dt, level);
	cg_put(pr, " %s ", op);
	cg_print_as(pr, b, dt, level + 1);
	close_paren(pr, paren);
}

static const char *const binary_symbol[TESSEL_BINARY_COUNT] = {
	"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
	NULL, NULL, NULL
};

/* Return the precedence of the C operator for "op". */
static int binary_level(tessel_binary op)
{
	switch (op) {
	case TESSEL_ADD: case TESSEL_SUB: return CG_PREC_ADD;
	case TESSEL_MUL: case TESSEL_DIV: case TESSEL_MOD: return CG_PREC_MUL;
	case TESSEL_LT: case TESSEL_LE: case TESSEL_GT: case TESSEL_GE:
		return CG_PREC_REL;
	case TESSEL_EQ: case TESSEL_NE: return CG_PREC_EQ;
	case TESSEL_AND: return CG_PREC_AND;
	case TESSEL_OR: return CG_PREC_OR;
	default: return CG_PREC_POSTFIX;
	}
}

/* Return the precedence an operand "x" of the logical or comparison
 * "op" is printed at: && inside || and comparisons inside comparisons
 * get parentheses, as compilers suggest. */
static int logical_operand_prec(tessel_binary op, const loop_expr *x, bool right)
{
	int level = binary_level(op);
	bool x_cmp = x->kind == LX_BINARY && is_comparison(x->u.bin.op);
	bool x_and = x->kind == LX_BINARY && x->u.bin.op == TESSEL_AND;
	if ((is_comparison(op) && x_cmp) || (op == TESSEL_OR && x_and))
		return CG_PREC_UNARY;
	return level + right;
}

/* Print the comparison "e": in the operands' common type, in double when
 * only one is a float (as the interpreter compares). */
static void print_comparison(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	bool mixed = is_float(a->dtype) != is_float(b->dtype);
	bool paren = binary_level(op) < prec;
	open_paren(pr, paren);
	cg_print_as(pr, a, mixed ? TESSEL_F64 : a->dtype, logical_operand_prec(op, a, false));
	cg_put(pr, " %s ", binary_symbol[op]);
	cg_print_as(pr, b, mixed ? TESSEL_F64 : b->dtype, logical_operand_prec(op, b, true));
	close_paren(pr, paren);
}

/* Print the && or || "e": C evaluates the right operand only when the
 * left one does not decide, as the interpreter does. */
static void print_logical(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	bool paren = binary_level(op) < prec;
	open_paren(pr, paren);
	cg_print_expr(pr, a, logical_operand_prec(op, a, false));
	cg_put(pr, " %s ", binary_symbol[op]);
	cg_print_expr(pr, b, logical_operand_prec(op, b, true));
	close_paren(pr, paren);
}

/* Print the float operator "op" on "a" and "b" computed in "dt". */
static void print_float_op(cg_printer *pr, tessel_binary op, const loop_expr *a,
	const loop_expr *b, tessel_dtype dt, int prec)
{
	int k = precision(dt);
	switch (op) {
	case TESSEL_MOD:
		cg_need_scalar_helper(pr, k ? "tsl_floormod_f64" : "tsl_floormod_f32");
		print_call2(pr, k ? "tsl_floormod_f64" : "tsl_floormod_f32", a, b, dt);
		break;
	case TESSEL_MIN:
		cg_need_scalar_helper(pr, pr->d->fmin_fn[k]);
		print_call2(pr, pr->d->fmin_fn[k], a, b, dt);
		break;
	case TESSEL_MAX:
		cg_need_scalar_helper(pr, pr->d->fmax_fn[k]);
		print_call2(pr, pr->d->fmax_fn[k], a, b, dt);
		break;
	case TESSEL_POW:
		print_call2(pr, pr->d->pow_fn[k], a, b, dt);
		break;
	default:
		print_infix(pr, binary_symbol[op], a, b, dt, binary_level(op), prec);
		break;
	}
}

/* Print the start of a wrap of an integer result to "dt" when "wrap":
 * a C cast for i8 and i32, "!= 0" for bool.  Return whether a
 * parenthesis was opened. */
static bool begin_wrap(cg_printer *pr, tessel_dtype dt, bool wrap, int prec)
{
	if (!wrap || dt == TESSEL_I64)
		return false;
	bool paren = prec > (dt == TESSEL_BOOL ? CG_PREC_EQ : CG_PREC_UNARY);
	open_paren(pr, paren);
	if (dt != TESSEL_BOOL)
		cg_put(pr, "(%s)", pr->d->value_type[dt]);
	return paren;
}

/* Close what begin_wrap opened for "dt", "wrap" and "paren". */
static void end_wrap(cg_printer *pr, tessel_dtype dt, bool wrap, bool paren)
{
	if (wrap && dt == TESSEL_BOOL)
		cg_put(pr, " != 0");
	close_paren(pr, paren);
}

/* Return the wrapping helper computing the integer "op". */
static const char *int_helper(tessel_binary op)
{
	switch (op) {
	case TESSEL_ADD: return "tsl_wrap_add";
	case TESSEL_SUB: return "tsl_wrap_sub";
	case TESSEL_MUL: return "tsl_wrap_mul";
	case TESSEL_DIV: return "tsl_floordiv";
	case TESSEL_MOD: return "tsl_floormod";
	case TESSEL_MIN: return "tsl_imin";
	case TESSEL_MAX: return "tsl_imax";
	default: return "tsl_ipow";
	}
}

/* Return whether C computes "a op b" of the integer dtypes of "a" and
 * "b" in int (both narrower than int64), rather than int64. */
static bool computed_in_int(const loop_expr *a, const loop_expr *b)
{
	return a->dtype != TESSEL_I64 && b->dtype != TESSEL_I64;
}

/* Return whether the integer node "e" may print as the plain C operator:
 * + - * whose exact result fits the type C computes it in, / and % by a
 * positive constant of a non-negative dividend. */
static bool plain_int_op(const cg_printer *pr, const loop_expr *e)
{
	tessel_binary op = e->u.bin.op;
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	if (op == TESSEL_DIV || op == TESSEL_MOD) {
		cg_range ra = cg_range_of(pr, a);
		return b->kind == LX_INT && b->u.ival > 0 && ra.known && ra.lo >= 0;
	}
	if (op != TESSEL_ADD && op != TESSEL_SUB && op != TESSEL_MUL)
		return false;
	if (is_pure_index(e))
		return true;
	cg_range r = exact_range(pr, e);
	return computed_in_int(a, b) ? range_fits(r, TESSEL_I32) : r.known;
}

/* Print the integer operator "e", wrapped to its dtype: the plain C
 * operator when it cannot overflow, else an int64 helper. */
static void print_int_op(cg_printer *pr, const loop_expr *e, int prec)
{
	tessel_binary op = e->u.bin.op;
	tessel_dtype dt = e->dtype;
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	bool wrap = !is_pure_index(e) && !range_fits(exact_range(pr, e), dt);
	bool paren = begin_wrap(pr, dt, wrap, prec);
	int inner = wrap && dt != TESSEL_BOOL ? CG_PREC_POSTFIX : wrap ? CG_PREC_REL : prec;
	if (plain_int_op(pr, e)) {
		print_infix(pr, binary_symbol[op], a, b,
			a->dtype == b->dtype ? a->dtype : dt, binary_level(op), inner);
	} else {
		cg_need_scalar_helper(pr, int_helper(op));
		print_call2(pr, int_helper(op), a, b, TESSEL_I64);
	}
	end_wrap(pr, dt, wrap, paren);
}

/* Print the binary "e": comparisons, logical operators, float arithmetic
 * in the node's dtype (in double, then to the integer dtype, when only
 * operands are floats), integer arithmetic. */
static void print_binary(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	tessel_dtype dt = e->dtype;
	if (is_comparison(op)) {
		print_comparison(pr, e, prec);
	} else if (op == TESSEL_AND || op == TESSEL_OR) {
		print_logical(pr, e, prec);
	} else if (is_float(dt)) {
		print_float_op(pr, op, a, b, dt, prec);
	} else if (is_float(a->dtype) || is_float(b->dtype)) {
		bool paren = begin_float_to_int(pr, dt, prec);
		print_float_op(pr, op, a, b, TESSEL_F64, dt == TESSEL_BOOL ? CG_PREC_REL :
			CG_PREC_NONE);
		end_float_to_int(pr, dt, paren);
	} else {
		print_int_op(pr, e, prec);
	}
}

/* Print the float intrinsic or operator "op" on "a" computed in "dt". */
static void print_float_unary(cg_printer *pr, tessel_unary op, const loop_expr *a,
	tessel_dtype dt, int prec)
{
	int k = precision(dt);
	const char *one = k ? "1.0" : "1.0f";
	const cg_dialect *d = pr->d;
	bool paren = prec > CG_PREC_MUL;
	switch (op) {
	case TESSEL_NEG:
		print_negation(pr, a, dt, prec);
		return;
	case TESSEL_RSQRT:
		open_paren(pr, paren);
		cg_put(pr, "%s / %s(", one, d->unary_fn[k][TESSEL_SQRT]);
		break;
	case TESSEL_SIGMOID:
		open_paren(pr, paren);
		cg_put(pr, "%s / (%s + %s(", one, one, d->unary_fn[k][TESSEL_EXP]);
		print_negation(pr, a, dt, CG_PREC_NONE);
		cg_put(pr, "))");
		close_paren(pr, paren);
		return;
	default:
		paren = false;
		cg_put(pr, "%s(", d->unary_fn[k][op]);
		break;
	}
	cg_print_as(pr, a, dt, CG_PREC_NONE);
	cg_put(pr, ")");
	close_paren(pr, paren);
}

/* Print the integer NEG, ABS or FLOOR "e", wrapping to its dtype: a
 * negation that cannot overflow the type C computes it in is the plain
 * operator. */
static void print_int_unary(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.un.a;
	tessel_dtype dt = e->dtype;
	cg_range r = exact_range(pr, e);
	bool wrap = !is_pure_index(e) && !range_fits(r, dt);
	bool plain = is_pure_index(e) ||
		(a->dtype != TESSEL_I64 ? range_fits(r, TESSEL_I32) : r.known);
	if (e->u.un.op == TESSEL_FLOOR) {
		cg_print_as(pr, a, dt, prec);
		return;
	}
	bool paren = begin_wrap(pr, dt, wrap, prec);
	int inner = wrap && dt != TESSEL_BOOL ? CG_PREC_POSTFIX : wrap ? CG_PREC_REL : prec;
	if (e->u.un.op == TESSEL_NEG && plain) {
		print_negation(pr, a, a->dtype, inner);
	} else {
		call_helper(pr, e->u.un.op == TESSEL_NEG ? "tsl_wrap_neg" : "tsl_iabs");
		cg_print_expr(pr, a, CG_PREC_NONE);
		cg_put(pr, ")");
	}
	end_wrap(pr, dt, wrap, paren);
}

/* Print the unary "e": NOT on any truth value, float intrinsics in the
 * node's dtype (in double for integer nodes), integer NEG, ABS, FLOOR. */
static void print_unary(cg_printer *pr, const loop_expr *e, int prec)
{
	const loop_expr *a = e->u.un.a;
	tessel_unary op = e->u.un.op;
	tessel_dtype dt = e->dtype;
	bool int_exact = op == TESSEL_NEG || op == TESSEL_ABS || op == TESSEL_FLOOR;
	if (op == TESSEL_NOT) {
		bool paren = prec > CG_PREC_UNARY;
		open_paren(pr, paren);
		cg_put(pr, "!");
		cg_print_expr(pr, a, CG_PREC_UNARY);
		close_paren(pr, paren);
	} else if (is_float(dt)) {
		print_float_unary(pr, op, a, dt, prec);
	} else if (is_float(a->dtype) || !int_exact) {
		bool paren = begin_float_to_int(pr, dt, prec);
		print_float_unary(pr, op, a, TESSEL_F64, dt == TESSEL_BOOL ? CG_PREC_REL :
			CG_PREC_NONE);
		end_float_to_int(pr, dt, paren);
	} else {
		print_int_unary(pr, e, prec);
	}
}

/* Print the select "e" as C's "?:", which evaluates only the chosen
 * branch. */
static void print_select(cg_printer *pr, const loop_expr *e, int prec)
{
	bool paren = prec > CG_PREC_COND;
	open_paren(pr, paren);
	cg_print_expr(pr, e->u.sel.cond, CG_PREC_OR);
	cg_put(pr, " ? ");
	cg_print_as(pr, e->u.sel.then_, e->dtype, CG_PREC_NONE);
	cg_put(pr, " : ");
	cg_print_as(pr, e->u.sel.else_, e->dtype, CG_PREC_COND);
	close_paren(pr, paren);
}

/* Print the load "e": the element, converted from its storage type. */
static void print_load(cg_printer *pr, const loop_expr *e)
{
	const loop_buffer *b = e->u.load.buf;
	const cg_buffer_info *info = cg_buffer(pr, b);
	const char *convert = b->dtype == TESSEL_F16 ? "tsl_f16_to_f32" :
		b->dtype == TESSEL_BF16 ? "tsl_bf16_to_f32" : NULL;
	if (convert)
		call_helper(pr, convert);
	cg_put(pr, "%s[", info ? info->name : b->name);
	cg_print_offset(pr, b, e->u.load.n, e->u.load.index);
	cg_put(pr, "]");
	if (convert)
		cg_put(pr, ")");
}

/* Print "e" as a value of its dtype, in parentheses when its operator
 * binds looser than "prec". */
void cg_print_expr(cg_printer *pr, const loop_expr *e, int prec)
{
	switch (e->kind) {
	case LX_INT:
	case LX_FLOAT:
	case LX_BOOL:
		print_literal_as(pr, e, e->dtype, prec);
		break;
	case LX_VAR:
		cg_put(pr, "%s", cg_var_name(pr, e->u.var));
		break;
	case LX_LOAD:
		print_load(pr, e);
		break;
	case LX_UNARY:
		print_unary(pr, e, prec);
		break;
	case LX_BINARY:
		print_binary(pr, e, prec);
		break;
	case LX_SELECT:
		print_select(pr, e, prec);
		break;
	case LX_CAST:
		print_cast(pr, e, prec);
		break;
	}
}

/* ---- statements ---------------------------------------------------------- */

const loop_expr *cg_stored_value(const loop_expr *value, tessel_dtype dt)
{
	bool half = dt == TESSEL_F16 || dt == TESSEL_BF16;
	if (half && value->kind == LX_CAST && value->u.cast.to == dt &&
	    is_float(value->u.cast.a->dtype) && value->u.cast.a->dtype != TESSEL_F64)
		return value->u.cast.a;
	return value;
}

void cg_print_stored_value(cg_printer *pr, const loop_expr *value,
	tessel_dtype dt)
{
	value = cg_stored_value(value, dt);
	if (dt == TESSEL_F16 || dt == TESSEL_BF16) {
		call_helper(pr, dt == TESSEL_F16 ? "tsl_f32_to_f16" : "tsl_f32_to_bf16");
		cg_print_as(pr, value, TESSEL_F32, CG_PREC_NONE);
		cg_put(pr, ")");
		return;
	}
	cg_print_as(pr, value, dt, CG_PREC_NONE);
}

/* Return the operator of the store "s" as "x op= y" ("+", "-", "*"), or
 * NULL: a float store whose value combines the element it overwrites. */
static const char *compound_operator(const loop_stmt *s)
{
	const loop_expr *v = s->u.store.value;
	const loop_buffer *b = s->u.store.buf;
	if ((b->dtype != TESSEL_F32 && b->dtype != TESSEL_F64) ||
	    v->kind != LX_BINARY || v->dtype != b->dtype)
		return NULL;
	if (v->u.bin.op != TESSEL_ADD && v->u.bin.op != TESSEL_SUB &&
	    v->u.bin.op != TESSEL_MUL)
		return NULL;
	const loop_expr *a = v->u.bin.a;
	if (a->kind != LX_LOAD || a->u.load.buf != b || a->u.load.n != s->u.store.n)
		return NULL;
	for (int i = 0; i < a->u.load.n; i++)
		if (!loop_expr_equal(a->u.load.index[i], s->u.store.index[i]))
			return NULL;
	return binary_symbol[v->u.bin.op];
}

/* Print the store "s" as an assignment, "op=" when its value combines
 * the element it overwrites. */
static void print_store(cg_printer *pr, const loop_stmt *s)
{
	const loop_buffer *b = s->u.store.buf;
	const cg_buffer_info *info = cg_buffer(pr, b);
	const char *op = compound_operator(s);
	cg_line(pr, "%s[", info ? info->name : b->name);
	cg_print_offset(pr, b, s->u.store.n, s->u.store.index);
	if (op) {
		cg_put(pr, "] %s= ", op);
		cg_print_as(pr, s->u.store.value->u.bin.b, b->dtype, CG_PREC_NONE);
	} else {
		cg_put(pr, "] = ");
		cg_print_stored_value(pr, s->u.store.value, b->dtype);
	}
	cg_put(pr, ";\n");
}

/* Print the prefetch "s" as the dialect's prefetch call on the element's
 * address; nothing where the dialect has none (a prefetch is a hint). */
static void print_prefetch(cg_printer *pr, const loop_stmt *s)
{
	const loop_buffer *b = s->u.prefetch.buf;
	const cg_buffer_info *info = cg_buffer(pr, b);
	if (!pr->d->prefetch_fn)
		return;
	cg_line(pr, "%s(&%s[", pr->d->prefetch_fn, info ? info->name : b->name);
	cg_print_offset(pr, b, s->u.prefetch.n, s->u.prefetch.index);
	cg_put(pr, "]);\n");
}

/* Print "s" one level deeper than the current indentation. */
void cg_print_block_body(cg_printer *pr, const loop_stmt *s)
{
	pr->depth++;
	cg_print_stmt(pr, s);
	pr->depth--;
}

/* Print the conditional "s", with braces on both branches. */
static void print_if(cg_printer *pr, const loop_stmt *s)
{
	cg_line(pr, "if (");
	cg_print_expr(pr, s->u.if_.cond, CG_PREC_NONE);
	cg_put(pr, ") {\n");
	cg_print_block_body(pr, s->u.if_.then_);
	if (s->u.if_.else_) {
		cg_line(pr, "} else {\n");
		cg_print_block_body(pr, s->u.if_.else_);
	}
	cg_line(pr, "}\n");
}

/* Print the header of a loop over "v" in [min + "lo_add", min + "extent"
 * + "hi_add") ("extent" may be NULL) by "step", up to its "{". */
void cg_print_for(cg_printer *pr, const loop_var *v, const loop_expr *min,
	int64_t lo_add, const loop_expr *extent, int64_t hi_add, int64_t step)
{
	const char *name = cg_var_name(pr, v);
	cg_line(pr, "for (int64_t %s = ", name);
	cg_print_sum(pr, min, NULL, lo_add);
	cg_put(pr, "; %s < ", name);
	cg_print_sum(pr, min, extent, hi_add);
	if (step == 1)
		cg_put(pr, "; %s++) {\n", name);
	else
		cg_put(pr, "; %s += %lld) {\n", name, (long long)step);
}

/* Return how many statements one run of "s" executes, counting a loop of
 * a non-constant extent as too many and a vector loop as one; the count
 * saturates above "cap". */
static int64_t stmt_steps(const loop_stmt *s, int64_t cap)
{
	int64_t n = 0;
	switch (s->kind) {
	case LS_FOR: {
		const loop_expr *e = s->u.for_.extent;
		if (e->kind != LX_INT)
			return cap + 1;
		int64_t body = stmt_steps(s->u.for_.body, cap);
		if (s->u.for_.kind == LOOP_VECTORIZED)
			return body;
		return e->u.ival > 0 && body > cap / e->u.ival ? cap + 1 : e->u.ival * body;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n && n <= cap; i++)
			n += stmt_steps(s->u.seq.items[i], cap);
		return n;
	case LS_IF:
		n = stmt_steps(s->u.if_.then_, cap);
		return s->u.if_.else_ ? n + stmt_steps(s->u.if_.else_, cap) : n;
	case LS_ALLOC:
		return stmt_steps(s->u.alloc.body, cap);
	default:
		return 1;
	}
}

/* Print the pragma that unrolls the loop "s", when it asks for one: an
 * unrolled loop, or a loop of constant extent whose whole run executes at
 * most auto_unroll_max_step statements (TVM's meaning of the annotation,
 * which holds for the annotated loop and every loop inside it). */
static void print_unroll(cg_printer *pr, const loop_stmt *s)
{
	const loop_expr *extent = s->u.for_.extent;
	int64_t n = 0;
	if (extent->kind == LX_INT && s->u.for_.kind == LOOP_UNROLLED)
		n = extent->u.ival;
	else if (extent->kind == LX_INT && pr->auto_unroll > 0 &&
		 stmt_steps(s, pr->auto_unroll) <= pr->auto_unroll)
		n = extent->u.ival;
	if (n <= 1 || !pr->d->unroll_pragma)
		return;
	cg_line(pr, pr->d->unroll_pragma, (int)(n > 65534 ? 65534 : n));
	cg_put(pr, "\n");
}

/* Print the serial or unrolled loop "s", after the pragma that unrolls
 * it when it asks for unrolling. */
void cg_print_serial_loop(cg_printer *pr, const loop_stmt *s)
{
	int64_t outer_limit = pr->auto_unroll;
	if (s->u.for_.unroll_limit > 0)
		pr->auto_unroll = s->u.for_.unroll_limit;
	bool paired = s->u.for_.dot_group && pr->d->print_dot_group &&
		pr->d->print_dot_group(pr, s);
	cg_bind_loop_range(pr, s);
	print_unroll(pr, s);
	cg_print_for(pr, s->u.for_.var, s->u.for_.min, 0, s->u.for_.extent, 0, 1);
	cg_print_block_body(pr, s->u.for_.body);
	cg_line(pr, "}\n");
	if (paired)
		cg_line(pr, "#endif\n");
	pr->auto_unroll = outer_limit;
}

/* Print "s" at the current indentation; loops of other kinds than serial
 * and unrolled, and allocations, through the dialect. */
void cg_print_stmt(cg_printer *pr, const loop_stmt *s)
{
	if (pr->failed)
		return;
	switch (s->kind) {
	case LS_FOR:
		if (s->u.for_.kind == LOOP_SERIAL || s->u.for_.kind == LOOP_UNROLLED)
			cg_print_serial_loop(pr, s);
		else
			pr->d->print_loop(pr, s);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			cg_print_stmt(pr, s->u.seq.items[i]);
		break;
	case LS_STORE:
		print_store(pr, s);
		break;
	case LS_IF:
		print_if(pr, s);
		break;
	case LS_ALLOC:
		pr->d->print_alloc(pr, s);
		break;
	case LS_BARRIER:
		if (pr->d->barrier)
			cg_line(pr, "%s\n", pr->d->barrier);
		break;
	case LS_PREFETCH:
		print_prefetch(pr, s);
		break;
	}
}

int64_t cg_print_shared_decls(cg_printer *pr, const loop_stmt *s)
{
	int64_t bytes = 0;
	switch (s->kind) {
	case LS_FOR:
		return cg_print_shared_decls(pr, s->u.for_.body);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			bytes += cg_print_shared_decls(pr, s->u.seq.items[i]);
		return bytes;
	case LS_IF:
		bytes = cg_print_shared_decls(pr, s->u.if_.then_);
		if (s->u.if_.else_)
			bytes += cg_print_shared_decls(pr, s->u.if_.else_);
		return bytes;
	case LS_ALLOC: {
		const loop_buffer *b = s->u.alloc.buf;
		if (b->scope == LOOP_SHARED) {
			const cg_buffer_info *info = cg_buffer(pr, b);
			int64_t n = cg_buffer_elems(b);
			n = n > 0 ? n : 1;
			cg_line(pr, "%s%s%s %s %s[%lld];\n",
				pr->d->scope_qualifier[LOOP_SHARED],
				pr->d->shared_align ? " " : "",
				pr->d->shared_align ? pr->d->shared_align : "",
				pr->d->storage_type[b->dtype], info ? info->name : b->name,
				(long long)n);
			bytes = n * (int64_t)tessel_dtype_size(b->dtype);
		}
		return bytes + cg_print_shared_decls(pr, s->u.alloc.body);
	}
	default:
		return 0;
	}
}

/* ---- the entry point ------------------------------------------------------ */

/* Check that "t" names a printable dialect and a vector width. */
static int check_target(tessel_ctx *ctx, const loop_prog *p, const cg_target *t)
{
	tessel_loc none = { NULL, 0, 0 };
	if ((unsigned)t->dialect >= CG_DIALECT_COUNT)
		return te_error(ctx, TESSEL_ERR_VALUE, none, "unknown dialect %d",
			(int)t->dialect);
	if (!dialects[t->dialect])
		return te_error(ctx, TESSEL_ERR_VALUE, none,
			"kernel '%s': printing %s is not supported yet", p->name,
			dialect_names[t->dialect]);
	int w = t->vector_bytes;
	if (w != 0 && (w < 8 || w > 128 || (w & (w - 1))))
		return te_error(ctx, TESSEL_ERR_VALUE, none,
			"vector width %d bytes is not 0 or a power of two from 8 to 128", w);
	return 0;
}

/* Print "p" for "t" (see c_printer.h): name everything, then let the
 * dialect lay out the file (and, for a GPU dialect, fill "plan"). */
static char *print_source(const loop_prog *p, const cg_target *t,
	cg_gpu_plan *plan, tessel_ctx *ctx)
{
	static const cg_target plain_c = { CG_DIALECT_C, 0, 0 };
	if (!t)
		t = &plain_c;
	if (check_target(ctx, p, t) < 0)
		return NULL;
	loop_prog *own = NULL;
	if (dialects[t->dialect]->prepare) {
		own = loop_prog_clone(p);
		if (!own) {
			te_error(ctx, TESSEL_ERR_LIMIT, (tessel_loc){ NULL, 0, 0 },
				"kernel '%s': out of memory", p->name);
			return NULL;
		}
		if (dialects[t->dialect]->prepare(own, t, ctx)) {
			loop_prog_free(own);
			return NULL;
		}
		p = own;
	}
	te_strbuf out = { 0 };
	cg_printer pr = {
		.p = p, .d = dialects[t->dialect], .target = *t, .ctx = ctx,
		.out = &out, .plan = plan,
	};
	te_arena_init(&pr.arena);
	pr.var_name = te_arena_alloc(&pr.arena, sizeof(char *) * (size_t)(p->nvars + 1));
	pr.var_range = te_arena_alloc(&pr.arena,
		sizeof(cg_range) * (size_t)(p->nvars + 1));
	name_program(&pr);
	int r = pr.d->print_file(&pr);
	te_sb_free(&pr.functions);
	te_arena_reset(&pr.arena);
	loop_prog_free(own);
	if (r < 0 || pr.failed) {
		te_sb_free(&out);
		return NULL;
	}
	return te_sb_take(&out);
}

char *cg_print_c(const loop_prog *p, const cg_target *t, tessel_ctx *ctx)
{
	return print_source(p, t, NULL, ctx);
}

char *cg_print_gpu(const loop_prog *p, const cg_target *t, cg_gpu_plan *plan,
	tessel_ctx *ctx)
{
	memset(plan, 0, sizeof(*plan));
	if (t->dialect == CG_DIALECT_C) {
		te_error(ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
			"kernel '%s': C is not a GPU dialect", p->name);
		return NULL;
	}
	return print_source(p, t, plan, ctx);
}

void cg_gpu_plan_free(cg_gpu_plan *plan)
{
	free(plan->kernels);
	free(plan->workspace_bytes);
	memset(plan, 0, sizeof(*plan));
}
