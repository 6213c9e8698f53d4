/* Helpers the op generators share to write readable .te text: the header
 * of an op, index variables, tensor types, literals. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

void emit_list(textbuf *tb, const int64_t *v, int n)
{
	textbuf_puts(tb, "[");
	for (int k = 0; k < n; k++)
		textbuf_printf(tb, "%s%" PRId64, k ? ", " : "", v[k]);
	textbuf_puts(tb, "]");
}

/* Write the value "v" of attribute "at" as attribute text. */
static void emit_attr_value(textbuf *tb, const ops_attr *at,
	const ops_value *v)
{
	switch (at->info.type) {
	case TESSEL_ATTR_INT:
	case TESSEL_ATTR_BOOL:
		textbuf_printf(tb, "%" PRId64, v->i);
		break;
	case TESSEL_ATTR_INTS:
		emit_list(tb, v->ints, v->n);
		break;
	case TESSEL_ATTR_DTYPE:
		textbuf_puts(tb, tessel_dtype_name(v->dtype));
		break;
	case TESSEL_ATTR_FLOAT:
		emit_float(tb, v->f);
		break;
	case TESSEL_ATTR_STR:
		textbuf_puts(tb, v->str);
		break;
	}
}

void emit_op_start(textbuf *tb, const ops_args *a)
{
	const ops_def *def = a->def;
	textbuf_printf(tb, "# %s", def->name);
	for (int j = 0; j < def->nattrs; j++) {
		if (!a->v[j].present)
			continue;
		textbuf_printf(tb, " %s=", def->attrs[j].info.name);
		emit_attr_value(tb, &def->attrs[j], &a->v[j]);
	}
	textbuf_printf(tb, "\nop %s(", def->name);
}

void emit_x_input(textbuf *tb, const ops_args *a)
{
	const ops_value *shape = ops_get(a, "shape");
	emit_op_start(tb, a);
	textbuf_puts(tb, "X: ");
	emit_type(tb, ops_dtype(a, "dtype"), shape->ints, shape->n);
}

const char *emit_var(int d)
{
	static const char *const names[TESSEL_MAX_DIMS] = {
		"i", "j", "k", "l", "m", "n", "o", "p"
	};
	return d >= 0 && d < TESSEL_MAX_DIMS ? names[d] : "?";
}

void emit_vars_except(textbuf *tb, int n, unsigned skip)
{
	bool first = true;
	for (int d = 0; d < n; d++) {
		if (skip & (1u << d))
			continue;
		textbuf_printf(tb, "%s%s", first ? "" : ", ", emit_var(d));
		first = false;
	}
}

void emit_dims(textbuf *tb, const int64_t *dims, int n)
{
	for (int d = 0; d < n; d++)
		textbuf_printf(tb, "%s%" PRId64, d ? ", " : "", dims[d]);
}

void emit_type(textbuf *tb, tessel_dtype dt, const int64_t *dims, int n)
{
	textbuf_printf(tb, "%s[", tessel_dtype_name(dt));
	emit_dims(tb, dims, n);
	textbuf_puts(tb, "]");
}

ops_ref ref_except(const char *name, int n, unsigned skip)
{
	ops_ref r;
	size_t len = (size_t)snprintf(r.text, sizeof(r.text), "%s[", name);
	bool first = true;
	for (int d = 0; d < n && len < sizeof(r.text); d++) {
		if (skip & (1u << d))
			continue;
		len += (size_t)snprintf(r.text + len, sizeof(r.text) - len, "%s%s",
			first ? "" : ", ", emit_var(d));
		first = false;
	}
	if (len < sizeof(r.text))
		snprintf(r.text + len, sizeof(r.text) - len, "]");
	return r;
}

ops_ref ref_vars(const char *name, int n)
{
	return ref_except(name, n, 0);
}

/* Write the shortest decimal text of "v" that reads back as "v" into
 * "buf" of "size" bytes. */
static void shortest_decimal(char *buf, size_t size, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Remove the '+' of a positive exponent ("1e+20" to "1e20") in "buf". */
static void drop_exponent_plus(char *buf)
{
	char *plus = strstr(buf, "e+");
	if (plus)
		memmove(plus + 1, plus + 2, strlen(plus + 2) + 1);
}

void emit_float(textbuf *tb, double v)
{
	char buf[40];
	shortest_decimal(buf, sizeof(buf), v);
	drop_exponent_plus(buf);
	textbuf_puts(tb, buf);
	if (!strpbrk(buf, ".e"))
		textbuf_puts(tb, ".0");
}

void emit_scalar(textbuf *tb, tessel_dtype dt, double v)
{
	if (dt == TESSEL_BOOL)
		textbuf_puts(tb, v != 0.0 ? "true" : "false");
	else if (tessel_dtype_is_int(dt))
		textbuf_printf(tb, "%lld", (long long)v);
	else
		emit_float(tb, v);
}

void emit_offset(textbuf *tb, int64_t c)
{
	if (c > 0)
		textbuf_printf(tb, " + %" PRId64, c);
	else if (c < 0)
		textbuf_printf(tb, " - %" PRId64, -c);
}

void emit_scaled(textbuf *tb, const char *var, int64_t scale)
{
	if (scale == 1)
		textbuf_puts(tb, var);
	else
		textbuf_printf(tb, "%s*%" PRId64, var, scale);
}

void emit_template(textbuf *tb, const char *tmpl, const char *x,
	const char *y)
{
	const char *p = tmpl;
	while (*p) {
		const char *dollar = strchr(p, '$');
		if (!dollar || (dollar[1] != 'a' && dollar[1] != 'b')) {
			size_t n = dollar ? (size_t)(dollar - p) + 1 : strlen(p);
			textbuf_printf(tb, "%.*s", (int)n, p);
			p += n;
			continue;
		}
		textbuf_printf(tb, "%.*s", (int)(dollar - p), p);
		textbuf_puts(tb, dollar[1] == 'a' ? x : y);
		p = dollar + 2;
	}
}

void emit_window_extent(textbuf *tb, const char *size, const char *kernel_name,
	int64_t kernel, int64_t pad_total, int64_t dilation, int64_t stride)
{
	int64_t offset = pad_total - 1 + (kernel_name ? dilation
						      : -dilation * (kernel - 1));
	bool parens = stride != 1 && (kernel_name || offset != 0);
	if (stride == 1)
		offset++;
	textbuf_printf(tb, "%s%s", parens ? "(" : "", size);
	if (kernel_name) {
		textbuf_puts(tb, " - ");
		emit_scaled(tb, kernel_name, dilation);
	}
	emit_offset(tb, offset);
	if (stride != 1)
		textbuf_printf(tb, "%s / %" PRId64 " + 1", parens ? ")" : "", stride);
}

int64_t window_extent(int64_t size, int64_t kernel, int64_t pad_total,
	int64_t dilation, int64_t stride)
{
	int64_t span = size + pad_total - dilation * (kernel - 1) - 1;
	return span < 0 ? 0 : span / stride + 1;
}

/* Write "v >= pad && v < SIZE + pad" for a padded dimension, preceded by
 * " && " unless "*first". */
static void emit_inside(textbuf *tb, const char *v, const char *size,
	int64_t pad, bool *first)
{
	if (pad == 0)
		return;
	textbuf_printf(tb, "%s%s >= %" PRId64 " && %s < %s + %" PRId64,
		*first ? "" : " && ", v, pad, v, size, pad);
	*first = false;
}

void emit_padded_input(textbuf *tb, bool nhwc, tessel_dtype dt,
	const int64_t pad[2], double fill)
{
	bool first = true;
	textbuf_printf(tb, "  P[%s] : %s[N, %sH", nhwc ? "n, h, w, c" : "n, c, h, w",
		tessel_dtype_name(dt), nhwc ? "" : "C, ");
	emit_offset(tb, 2 * pad[0]);
	textbuf_puts(tb, ", W");
	emit_offset(tb, 2 * pad[1]);
	textbuf_puts(tb, nhwc ? ", C] =\n      select(" : "] =\n      select(");
	emit_inside(tb, "h", "H", pad[0], &first);
	emit_inside(tb, "w", "W", pad[1], &first);
	textbuf_puts(tb, nhwc ? ", X[n, h" : ", X[n, c, h");
	emit_offset(tb, -pad[0]);
	textbuf_puts(tb, ", w");
	emit_offset(tb, -pad[1]);
	textbuf_puts(tb, nhwc ? ", c], " : "], ");
	emit_scalar(tb, dt, fill);
	textbuf_puts(tb, ")\n");
}
