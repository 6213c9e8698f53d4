/* The table of built-in ops and the public API over it: listing ops and
 * their attributes, parsing attribute values from text, generating an op's
 * .te source, and instantiating it (parse, then bind the sizes the text left
 * symbolic from the integer attributes of the same names). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"
#include "ops/ops_impl.h"

static const tessel_loc no_loc = { NULL, 0, 0 };

typedef struct ops_family {
	const ops_def *defs;
	const int *count;
} ops_family;

/* The families in the order `tessel ops` lists them. */
static const ops_family families[] = {
	{ ops_linalg, &ops_linalg_count },
	{ ops_conv, &ops_conv_count },
	{ ops_pool, &ops_pool_count },
	{ ops_norm, &ops_norm_count },
	{ ops_elementwise, &ops_elementwise_count },
	{ ops_reduce, &ops_reduce_count },
	{ ops_shape, &ops_shape_count },
	{ ops_loss, &ops_loss_count },
};

/* Return the "i"-th op over all families, or NULL. */
static const ops_def *op_at(int i)
{
	if (i < 0)
		return NULL;
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		if (i < *families[f].count)
			return &families[f].defs[i];
		i -= *families[f].count;
	}
	return NULL;
}

int tessel_ops_count(void)
{
	int n = 0;
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		n += *families[f].count;
	return n;
}

const char *tessel_ops_name(int i)
{
	const ops_def *def = op_at(i);
	return def ? def->name : NULL;
}

const char *tessel_ops_doc(int i)
{
	const ops_def *def = op_at(i);
	return def ? def->doc : NULL;
}

int tessel_ops_num_attrs(int i)
{
	const ops_def *def = op_at(i);
	return def ? def->nattrs : -1;
}

const tessel_attr_info *tessel_ops_attr(int i, int j)
{
	const ops_def *def = op_at(i);
	if (!def || j < 0 || j >= def->nattrs)
		return NULL;
	return &def->attrs[j].info;
}

int tessel_ops_find(const char *name)
{
	int n = tessel_ops_count();
	for (int i = 0; name && i < n; i++)
		if (strcmp(op_at(i)->name, name) == 0)
			return i;
	return -1;
}

/* ---- reading attributes ------------------------------------------------ */

/* Return the index of attribute "name" of "def", or -1. */
static int find_attr(const ops_def *def, const char *name)
{
	for (int j = 0; j < def->nattrs; j++)
		if (strcmp(def->attrs[j].info.name, name) == 0)
			return j;
	return -1;
}

const ops_value *ops_get(const ops_args *a, const char *name)
{
	int j = find_attr(a->def, name);
	if (j < 0) {
		fprintf(stderr, "tessel: internal error: op '%s' has no "
			"attribute '%s'\n", a->def->name, name);
		abort();
	}
	return &a->v[j];
}

bool ops_has(const ops_args *a, const char *name)
{
	return ops_get(a, name)->present;
}

int64_t ops_int(const ops_args *a, const char *name)
{
	return ops_get(a, name)->i;
}

bool ops_bool(const ops_args *a, const char *name)
{
	return ops_get(a, name)->i != 0;
}

tessel_dtype ops_dtype(const ops_args *a, const char *name)
{
	return ops_get(a, name)->dtype;
}

const char *ops_str(const ops_args *a, const char *name)
{
	return ops_get(a, name)->str;
}

double ops_float(const ops_args *a, const char *name)
{
	return ops_get(a, name)->f;
}

int64_t ops_pair(const ops_args *a, const char *name, int i, int64_t dflt)
{
	const ops_value *v = ops_get(a, name);
	if (v->n == 0)
		return dflt;
	return v->n == 1 ? v->ints[0] : v->ints[i];
}

int ops_fail(const ops_args *a, tessel_error_kind kind, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return te_error(a->ctx, kind, no_loc, "op '%s': %s", a->def->name, msg);
}

int ops_require_float(const ops_args *a, tessel_dtype dt)
{
	if (tessel_dtype_is_float(dt))
		return 0;
	return ops_fail(a, TESSEL_ERR_TYPE,
		"dtype must be a float type (f16, bf16, f32, f64), not %s",
		tessel_dtype_name(dt));
}

/* Return whether products of "from" values sum in "to" without loss: the
 * same dtype, or a wider one of the same kind (i8 or u8 to i32 or i64, i32
 * to i64, f16 or bf16 to f32 or f64, f32 to f64). */
static bool widens(tessel_dtype from, tessel_dtype to)
{
	int rank[TESSEL_DTYPE_COUNT] = { 0 };
	rank[TESSEL_I8] = rank[TESSEL_U8] = 1, rank[TESSEL_I32] = 2, rank[TESSEL_I64] = 3;
	rank[TESSEL_F16] = rank[TESSEL_BF16] = 11, rank[TESSEL_F32] = 12;
	rank[TESSEL_F64] = 13;
	return from == to || (rank[from] && rank[to] > rank[from] &&
		(rank[from] > 10) == (rank[to] > 10));
}

static bool is_byte(tessel_dtype dt)
{
	return dt == TESSEL_I8 || dt == TESSEL_U8;
}

int ops_sum_dtypes(const ops_args *a, ops_sum_types *t)
{
	t->in = ops_dtype(a, "dtype");
	const char *o = ops_str(a, "out_dtype");
	const char *w = ops_str(a, "weight_dtype");
	if (ops_require_numeric(a, t->in))
		return -1;
	t->out = strcmp(o, "same") == 0 ? t->in : (tessel_dtype)tessel_dtype_parse(o, strlen(o));
	t->weight = !w || strcmp(w, "same") == 0 ? t->in
		: (tessel_dtype)tessel_dtype_parse(w, strlen(w));
	if (!widens(t->in, t->out))
		return ops_fail(a, TESSEL_ERR_TYPE, "out_dtype %s: products of %s sum in %s "
			"or a wider dtype of the same kind (i8, u8: i32, i64; f16, bf16: "
			"f32, f64; f32: f64; i32: i64)", o, tessel_dtype_name(t->in),
			tessel_dtype_name(t->in));
	if (t->weight != t->in && !(is_byte(t->in) && is_byte(t->weight) &&
	    (t->out == TESSEL_I32 || t->out == TESSEL_I64)))
		return ops_fail(a, TESSEL_ERR_TYPE, "weight_dtype %s with dtype %s: weights "
			"differ from the data only as the other 8-bit integer type (u8 "
			"data, i8 weights), summed in out_dtype i32 or i64", w,
			tessel_dtype_name(t->in));
	snprintf(t->conv, sizeof(t->conv), "%s%s", t->out == t->in ? "" :
		tessel_dtype_name(t->out), t->out == t->in ? "" : "(");
	return 0;
}

int ops_require_numeric(const ops_args *a, tessel_dtype dt)
{
	if (dt != TESSEL_BOOL)
		return 0;
	return ops_fail(a, TESSEL_ERR_TYPE,
		"dtype must be a number type, not bool");
}

int ops_axis(const ops_args *a, const char *attr, int64_t axis, int rank,
	int *out)
{
	if (axis < -rank || axis >= rank)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute '%s': axis %lld is out of range for rank %d "
			"(valid: %d..%d)", attr, (long long)axis, rank, -rank,
			rank - 1);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

/* ---- parsing attribute text ---------------------------------------------- */

/* Return "s" past any white space. */
static const char *skip_space(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

/* Parse a decimal integer at "*s", advancing "*s"; return 0 or -1. */
static int scan_int(const char **s, int64_t *out)
{
	const char *p = skip_space(*s);
	char *end;
	if (!isdigit((unsigned char)*p) &&
	    !((*p == '-' || *p == '+') && isdigit((unsigned char)p[1])))
		return -1;
	errno = 0;
	long long v = strtoll(p, &end, 10);
	if (errno == ERANGE)
		return -1;
	*out = v;
	*s = skip_space(end);
	return 0;
}

/* Parse all of "text" as a decimal integer into "*out"; return 0 or -1. */
static int parse_int_text(const char *text, int64_t *out)
{
	const char *s = text;
	return scan_int(&s, out) == 0 && *s == 0 ? 0 : -1;
}

/* Parse "text", one of 0, 1, true, false, into "*out"; return 0 or -1. */
static int parse_bool_text(const char *text, int64_t *out)
{
	const char *s = skip_space(text);
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if ((n == 1 && *s == '1') || (n == 4 && strncmp(s, "true", 4) == 0))
		*out = 1;
	else if ((n == 1 && *s == '0') || (n == 5 && strncmp(s, "false", 5) == 0))
		*out = 0;
	else
		return -1;
	return 0;
}

/* Parse "[v, v, ...]", "[]" or a bare "v" into "v"; return 0, -1 on bad
 * syntax, -2 when there are more than OPS_MAX_INTS values. */
static int parse_ints_text(const char *text, ops_value *v)
{
	const char *s = skip_space(text);
	v->n = 0;
	if (*s != '[') {
		v->n = 1;
		return parse_int_text(s, &v->ints[0]);
	}
	s = skip_space(s + 1);
	if (*s == ']')
		return *skip_space(s + 1) == 0 ? 0 : -1;
	for (;;) {
		if (v->n == OPS_MAX_INTS)
			return -2;
		if (scan_int(&s, &v->ints[v->n]))
			return -1;
		v->n++;
		if (*s == ']')
			return *skip_space(s + 1) == 0 ? 0 : -1;
		if (*s != ',')
			return -1;
		s++;
	}
}

/* Parse all of "text" as a finite number into "*out"; return 0 or -1. */
static int parse_float_text(const char *text, double *out)
{
	const char *s = skip_space(text);
	char *end;
	if (!*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *skip_space(end) != 0 || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Return true when "word" is one of the '|'-separated "choices". */
static bool is_choice(const char *choices, const char *word)
{
	size_t n = strlen(word);
	for (const char *c = choices; c && *c;) {
		const char *bar = strchr(c, '|');
		size_t len = bar ? (size_t)(bar - c) : strlen(c);
		if (len == n && strncmp(c, word, n) == 0)
			return true;
		c = bar ? bar + 1 : NULL;
	}
	return false;
}

/* Record that the value "text" of attribute "at" of "def" is not "what". */
static int attr_error(tessel_ctx *ctx, const ops_def *def, const ops_attr *at,
	const char *what, const char *text)
{
	return te_error(ctx, TESSEL_ERR_VALUE, no_loc,
		"attribute '%s' of op '%s': expected %s, not '%s'",
		at->info.name, def->name, what, text);
}

/* Check that the "n" values "vals" of attribute "at" of "def" are below
 * OPS_MAX_VALUE in magnitude and, for a shape, that its element count is
 * at most OPS_MAX_ELEMENTS, so that generators compute without overflow. */
static int check_int_limits(tessel_ctx *ctx, const ops_def *def,
	const ops_attr *at, const int64_t *vals, int n)
{
	int64_t count = 1;
	for (int k = 0; k < n; k++) {
		if (vals[k] > OPS_MAX_VALUE || vals[k] < -OPS_MAX_VALUE)
			return te_error(ctx, TESSEL_ERR_LIMIT, no_loc,
				"attribute '%s' of op '%s': %lld is too large (at most "
				"%lld in magnitude)", at->info.name, def->name,
				(long long)vals[k], (long long)OPS_MAX_VALUE);
		int64_t factor = (at->flags & OPS_SHAPE) ? vals[k] : 1;
		if (__builtin_mul_overflow(count, factor, &count) ||
		    count > OPS_MAX_ELEMENTS)
			return te_error(ctx, TESSEL_ERR_LIMIT, no_loc,
				"attribute '%s' of op '%s': the shape has more than "
				"2^62 elements", at->info.name, def->name);
	}
	return 0;
}

/* Check the values of INT or INTS attribute "at" in "v" against its flags. */
static int check_int_flags(tessel_ctx *ctx, const ops_def *def,
	const ops_attr *at, const ops_value *v, const char *text)
{
	const int64_t *vals = at->info.type == TESSEL_ATTR_INTS ? v->ints : &v->i;
	int n = at->info.type == TESSEL_ATTR_INTS ? v->n : 1;
	bool positive = at->flags & (OPS_SIZE | OPS_SHAPE | OPS_POSITIVE);
	if ((at->flags & OPS_SHAPE) && n > TESSEL_MAX_DIMS)
		return te_error(ctx, TESSEL_ERR_VALUE, no_loc,
			"attribute '%s' of op '%s': %d dimensions; at most %d are "
			"supported", at->info.name, def->name, n, TESSEL_MAX_DIMS);
	if ((at->flags & OPS_PAIR) && n != 1 && n != 2 &&
	    !(n == 0 && (at->flags & OPS_EMPTY_OK)))
		return attr_error(ctx, def, at,
			"one value or two ([height, width])", text);
	for (int k = 0; k < n; k++) {
		if (positive && vals[k] < 1)
			return attr_error(ctx, def, at,
				n == 1 && at->info.type == TESSEL_ATTR_INT
					? "a positive integer" : "positive integers", text);
		if ((at->flags & OPS_NONNEG) && vals[k] < 0)
			return attr_error(ctx, def, at,
				at->info.type == TESSEL_ATTR_INT
					? "a non-negative integer"
					: "non-negative integers", text);
	}
	return check_int_limits(ctx, def, at, vals, n);
}

/* Parse "text" as the value of attribute "at" of "def" into "v". */
static int parse_value(tessel_ctx *ctx, const ops_def *def, const ops_attr *at,
	const char *text, ops_value *v)
{
	int r;
	memset(v, 0, sizeof(*v));
	v->present = true;
	switch (at->info.type) {
	case TESSEL_ATTR_INT:
		if (parse_int_text(text, &v->i))
			return attr_error(ctx, def, at, "an integer", text);
		return check_int_flags(ctx, def, at, v, text);
	case TESSEL_ATTR_BOOL:
		if (parse_bool_text(text, &v->i))
			return attr_error(ctx, def, at, "0, 1, true or false", text);
		return 0;
	case TESSEL_ATTR_INTS:
		r = parse_ints_text(text, v);
		if (r == -2)
			return te_error(ctx, TESSEL_ERR_LIMIT, no_loc,
				"attribute '%s' of op '%s': more than %d values",
				at->info.name, def->name, OPS_MAX_INTS);
		if (r)
			return attr_error(ctx, def, at,
				"a list of integers like [4, 1, 3]", text);
		return check_int_flags(ctx, def, at, v, text);
	case TESSEL_ATTR_DTYPE:
		r = tessel_dtype_parse(text, strlen(text));
		if (r < 0)
			return attr_error(ctx, def, at,
				"a dtype (f32, f64, f16, bf16, i8, u8, i32, i64, bool)", text);
		v->dtype = (tessel_dtype)r;
		return 0;
	case TESSEL_ATTR_FLOAT:
		if (parse_float_text(text, &v->f))
			return attr_error(ctx, def, at, "a finite number", text);
		return 0;
	case TESSEL_ATTR_STR:
		v->str = text;
		if (!is_choice(at->choices, text)) {
			char what[160];
			snprintf(what, sizeof(what), "one of %s", at->choices);
			return attr_error(ctx, def, at, what, text);
		}
		return 0;
	}
	return te_error(ctx, TESSEL_ERR_INTERNAL, no_loc,
		"attribute '%s' of op '%s' has an unknown type", at->info.name,
		def->name);
}

/* Record that "def" has no attribute "key", listing those it has. */
static int unknown_attr(tessel_ctx *ctx, const ops_def *def, const char *key)
{
	char names[320] = "";
	size_t len = 0;
	for (int j = 0; j < def->nattrs && len < sizeof(names); j++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
			j ? ", " : "", def->attrs[j].info.name);
	return te_error(ctx, TESSEL_ERR_NAME, no_loc,
		"op '%s' has no attribute '%s' (attributes: %s)", def->name,
		key ? key : "(null)", names);
}

/* Fill in the defaults of "a" and check the required attributes: every one
 * when "need_all", else all but sizes (which the text can leave symbolic). */
static int finish_args(tessel_ctx *ctx, ops_args *a, bool need_all)
{
	const ops_def *def = a->def;
	for (int j = 0; j < def->nattrs; j++) {
		const ops_attr *at = &def->attrs[j];
		if (a->v[j].present)
			continue;
		if (at->info.def) {
			if (parse_value(ctx, def, at, at->info.def, &a->v[j]))
				return -1;
			continue;
		}
		if (need_all || !(at->flags & OPS_SIZE))
			return te_error(ctx, TESSEL_ERR_VALUE, no_loc,
				"op '%s' needs attribute '%s' (%s)", def->name,
				at->info.name, at->info.doc);
	}
	return 0;
}

/* Parse the attributes keys[k]=values[k] of op "def" into "a". */
static int parse_args(tessel_ctx *ctx, const ops_def *def, int n,
	const char *const *keys, const char *const *values, bool need_all,
	ops_args *a)
{
	memset(a, 0, sizeof(*a));
	a->def = def;
	a->ctx = ctx;
	if (def->nattrs > OPS_MAX_ATTRS)
		return te_error(ctx, TESSEL_ERR_INTERNAL, no_loc,
			"op '%s' has too many attributes", def->name);
	for (int k = 0; k < n; k++) {
		int j = keys[k] ? find_attr(def, keys[k]) : -1;
		if (j < 0)
			return unknown_attr(ctx, def, keys[k]);
		if (a->v[j].present)
			return te_error(ctx, TESSEL_ERR_VALUE, no_loc,
				"attribute '%s' of op '%s' is given twice", keys[k],
				def->name);
		if (!values[k])
			return te_error(ctx, TESSEL_ERR_VALUE, no_loc,
				"attribute '%s' of op '%s' has no value", keys[k],
				def->name);
		if (parse_value(ctx, def, &def->attrs[j], values[k], &a->v[j]))
			return -1;
	}
	return finish_args(ctx, a, need_all);
}

/* Return the op called "name", or NULL with an error in "ctx". */
static const ops_def *find_def(tessel_ctx *ctx, const char *name)
{
	const ops_def *def = op_at(tessel_ops_find(name));
	if (!def)
		te_error(ctx, TESSEL_ERR_NAME, no_loc, "unknown op '%s'",
			name ? name : "(null)");
	return def;
}

/* Return the .te text of "a->def" for "a", malloc'ed, or NULL. */
static char *generate(const ops_args *a)
{
	textbuf tb;
	textbuf_init(&tb);
	if (a->def->gen(a, &tb)) {
		textbuf_free(&tb);
		return NULL;
	}
	char *src = textbuf_take(&tb);
	if (!src)
		te_error(a->ctx, TESSEL_ERR_LIMIT, no_loc,
			"op '%s': out of memory writing its source", a->def->name);
	return src;
}

char *tessel_ops_source(tessel_ctx *ctx, const char *name, int n,
	const char *const *keys, const char *const *values)
{
	ops_args a;
	const ops_def *def = find_def(ctx, name);
	if (!def || parse_args(ctx, def, n, keys, values, false, &a))
		return NULL;
	return generate(&a);
}

/* Store in "*value" the integer attribute of "a" named "sym", a symbol the
 * generated text left unbound; an error if there is none. */
static int symbol_value(const ops_args *a, const char *sym, int64_t *value)
{
	int j = find_attr(a->def, sym);
	if (j < 0 || (a->def->attrs[j].info.type != TESSEL_ATTR_INT &&
		      a->def->attrs[j].info.type != TESSEL_ATTR_BOOL))
		return te_error(a->ctx, TESSEL_ERR_INTERNAL, no_loc,
			"op '%s': its source leaves '%s' symbolic, which is not "
			"an integer attribute", a->def->name, sym);
	*value = a->v[j].i;
	return 0;
}

/* Return "op" bound with its remaining symbols taken from the integer
 * attributes of "a" of the same names. */
static tessel_op *bind_symbols(const ops_args *a, tessel_op *op)
{
	const char *names[OPS_MAX_ATTRS];
	int64_t values[OPS_MAX_ATTRS];
	int n = tessel_op_num_symbols(op);
	if (n == 0 && tessel_op_is_bound(op))
		return tessel_op_retain(op);
	if (n > OPS_MAX_ATTRS) {
		te_error(a->ctx, TESSEL_ERR_INTERNAL, no_loc,
			"op '%s': its source has %d symbols", a->def->name, n);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		names[i] = tessel_op_symbol_name(op, i);
		if (symbol_value(a, names[i], &values[i]))
			return NULL;
	}
	return tessel_op_bind(op, n, names, values);
}

tessel_op *tessel_ops_instantiate(tessel_ctx *ctx, const char *name, int n,
	const char *const *keys, const char *const *values)
{
	ops_args a;
	const ops_def *def = find_def(ctx, name);
	if (!def || parse_args(ctx, def, n, keys, values, true, &a))
		return NULL;
	char *src = generate(&a);
	if (!src)
		return NULL;
	char file[128];
	snprintf(file, sizeof(file), "%s.te", def->name);
	tessel_module *m = tessel_parse(ctx, file, src, strlen(src));
	free(src);
	if (!m)
		return NULL;
	tessel_op *op = tessel_module_find(ctx, m, def->name);
	tessel_op *bound = op ? bind_symbols(&a, op) : NULL;
	tessel_module_free(m);
	return bound;
}
