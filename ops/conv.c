/* 2-D convolution (cross-correlation, as in every deep-learning framework)
 * in NCHW or NHWC, with stride, zero padding, dilation and groups.  The
 * sizes N, H, W, R, S (and C, F without groups) stay symbolic in the text;
 * stride, padding, dilation and groups are written as numbers. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops_impl.h"

typedef struct conv_geom {
	bool nhwc;
	int64_t stride[2], pad[2], dilation[2];
	int64_t groups;
	char cg[48];  /* input channels per group: "C", a number, or "C / G" */
	char fg[48];  /* output channels per group, likewise */
} conv_geom;

/* Write into "buf" the per-group share of size "name" split in "groups":
 * the name itself, its known quotient, or the symbolic division. */
static void group_share(const ops_args *a, const char *name, int64_t groups,
	char *buf, size_t size)
{
	if (groups == 1)
		snprintf(buf, size, "%s", name);
	else if (ops_has(a, name))
		snprintf(buf, size, "%" PRId64, ops_int(a, name) / groups);
	else
		snprintf(buf, size, "%s / %" PRId64, name, groups);
}

/* Check that "groups" divides the size "name" of "a" when it is known. */
static int check_divides(const ops_args *a, const char *name, int64_t groups)
{
	if (!ops_has(a, name) || ops_int(a, name) % groups == 0)
		return 0;
	return ops_fail(a, TESSEL_ERR_VALUE,
		"groups=%" PRId64 " does not divide %s=%" PRId64, groups, name,
		ops_int(a, name));
}

/* Check that the output along "size" (height or width, "axis" 0 or 1)
 * is non-empty when the size and kernel "kernel" are known. */
static int check_extent(const ops_args *a, const conv_geom *g,
	const char *size, const char *kernel, int axis)
{
	if (!ops_has(a, size) || !ops_has(a, kernel))
		return 0;
	int64_t n = ops_int(a, size), k = ops_int(a, kernel);
	if (window_extent(n, k, 2 * g->pad[axis], g->dilation[axis],
		    g->stride[axis]) >= 1)
		return 0;
	return ops_fail(a, TESSEL_ERR_SHAPE,
		"the kernel (%s=%" PRId64 ", dilation %" PRId64 ") is larger than "
		"the padded input (%s=%" PRId64 " + 2*%" PRId64 ")", kernel, k,
		g->dilation[axis], size, n, g->pad[axis]);
}

/* Read the attributes of "a" into "g" and check them against the sizes
 * that are known. */
static int read_geom(const ops_args *a, conv_geom *g)
{
	g->nhwc = ops_str(a, "layout")[1] == 'H';
	for (int i = 0; i < 2; i++) {
		g->stride[i] = ops_pair(a, "stride", i, 1);
		g->pad[i] = ops_pair(a, "padding", i, 0);
		g->dilation[i] = ops_pair(a, "dilation", i, 1);
	}
	g->groups = ops_int(a, "groups");
	group_share(a, "C", g->groups, g->cg, sizeof(g->cg));
	group_share(a, "F", g->groups, g->fg, sizeof(g->fg));
	if (check_divides(a, "C", g->groups) || check_divides(a, "F", g->groups))
		return -1;
	return check_extent(a, g, "H", "R", 0) || check_extent(a, g, "W", "S", 1);
}

/* Return true when the size text "text" is the number 1. */
static bool is_one(const char *text)
{
	return text[0] == '1' && text[1] == 0;
}

/* Write "text" in parentheses when it is a division ("C / 2"). */
static void emit_factor(textbuf *tb, const char *text)
{
	textbuf_printf(tb, strchr(text, '/') ? "(%s)" : "%s", text);
}

/* Write the input channel read for output channel f and reduction
 * variable c: c itself, or c within the group of f. */
static void emit_in_channel(textbuf *tb, const conv_geom *g)
{
	if (g->groups == 1) {
		textbuf_puts(tb, "c");
		return;
	}
	bool parens = !is_one(g->fg) && !is_one(g->cg);
	textbuf_puts(tb, parens ? "(f" : "f");
	if (!is_one(g->fg)) {
		textbuf_puts(tb, " / ");
		emit_factor(tb, g->fg);
	}
	textbuf_puts(tb, parens ? ")" : "");
	if (!is_one(g->cg)) {
		textbuf_puts(tb, "*");
		emit_factor(tb, g->cg);
	}
	textbuf_puts(tb, " + c");
}

/* Write "y*stride + r*dilation" for spatial axis "axis". */
static void emit_window_index(textbuf *tb, const conv_geom *g,
	const char *out, const char *k, int axis)
{
	emit_scaled(tb, out, g->stride[axis]);
	textbuf_puts(tb, " + ");
	emit_scaled(tb, k, g->dilation[axis]);
}

/* Write the stage Y of "dt": the reduction over c, r, s of the products
 * of "src" and Wt, each element converted by "conv" ("f32(" or ""). */
static void emit_output(textbuf *tb, const conv_geom *g, tessel_dtype dt,
	const char *src, const char *conv)
{
	const char *end = conv[0] ? ")" : "";
	textbuf_printf(tb, "  Y[%s] : %s[N, %s", g->nhwc ? "n, y, x, f" : "n, f, y, x",
		tessel_dtype_name(dt), g->nhwc ? "" : "F, ");
	emit_window_extent(tb, "H", "R", 0, 2 * g->pad[0], g->dilation[0],
		g->stride[0]);
	textbuf_puts(tb, ", ");
	emit_window_extent(tb, "W", "S", 0, 2 * g->pad[1], g->dilation[1],
		g->stride[1]);
	textbuf_printf(tb, "%s] =\n      sum(c in 0..%s, r in 0..R, s in 0..S) "
		"%s%s[n, ", g->nhwc ? ", F" : "", g->cg, conv, src);
	if (!g->nhwc) {
		emit_in_channel(tb, g);
		textbuf_puts(tb, ", ");
	}
	emit_window_index(tb, g, "y", "r", 0);
	textbuf_puts(tb, ", ");
	emit_window_index(tb, g, "x", "s", 1);
	if (g->nhwc) {
		textbuf_puts(tb, ", ");
		emit_in_channel(tb, g);
	}
	textbuf_printf(tb, g->nhwc ? "]%s * %sWt[r, s, c, f]%s\n" :
		"]%s * %sWt[f, c, r, s]%s\n", end, conv, end);
}

/* Write the text of conv2d. */
static int gen_conv2d(const ops_args *a, textbuf *tb)
{
	conv_geom g;
	ops_sum_types st;
	if (ops_sum_dtypes(a, &st) || read_geom(a, &g))
		return -1;
	const char *t = tessel_dtype_name(st.in), *w = tessel_dtype_name(st.weight);
	bool padded = g.pad[0] > 0 || g.pad[1] > 0;
	emit_op_start(tb, a);
	if (g.nhwc)
		textbuf_printf(tb, "X: %s[N, H, W, C], Wt: %s[R, S, %s, F]) -> Y {\n",
			t, w, g.cg);
	else
		textbuf_printf(tb, "X: %s[N, C, H, W], Wt: %s[F, %s, R, S]) -> Y {\n",
			t, w, g.cg);
	if (padded)
		emit_padded_input(tb, g.nhwc, st.in, g.pad, 0.0);
	emit_output(tb, &g, st.out, padded ? "P" : "X", st.conv);
	textbuf_puts(tb, "}\n");
	return 0;
}

static const ops_attr conv2d_attrs[] = {
	{ { "N", TESSEL_ATTR_INT, NULL, "batch size" }, OPS_SIZE, NULL },
	{ { "C", TESSEL_ATTR_INT, NULL, "input channels" }, OPS_SIZE, NULL },
	{ { "H", TESSEL_ATTR_INT, NULL, "input height" }, OPS_SIZE, NULL },
	{ { "W", TESSEL_ATTR_INT, NULL, "input width" }, OPS_SIZE, NULL },
	{ { "F", TESSEL_ATTR_INT, NULL, "output channels (filters)" }, OPS_SIZE, NULL },
	{ { "R", TESSEL_ATTR_INT, NULL, "kernel height" }, OPS_SIZE, NULL },
	{ { "S", TESSEL_ATTR_INT, NULL, "kernel width" }, OPS_SIZE, NULL },
	{ { "stride", TESSEL_ATTR_INTS, "1", "s or [sh, sw]" },
	  OPS_PAIR | OPS_POSITIVE, NULL },
	{ { "padding", TESSEL_ATTR_INTS, "0",
	    "zeros on each side: p or [ph, pw]" }, OPS_PAIR | OPS_NONNEG, NULL },
	{ { "dilation", TESSEL_ATTR_INTS, "1", "d or [dh, dw]" },
	  OPS_PAIR | OPS_POSITIVE, NULL },
	{ { "groups", TESSEL_ATTR_INT, "1",
	    "channel groups; must divide C and F (groups = C = F: depthwise)" },
	  OPS_POSITIVE, NULL },
	{ { "layout", TESSEL_ATTR_STR, "NCHW",
	    "NCHW (weight [F, C/groups, R, S]) or NHWC (weight [R, S, C/groups, F])" },
	  0, "NCHW|NHWC" },
	OPS_ATTR_DTYPE,
	OPS_ATTR_WEIGHT_DTYPE("Wt"),
	OPS_ATTR_OUT_DTYPE,
};

const ops_def ops_conv[] = {
	OPS_DEF("conv2d",
		"2-D convolution: NCHW X[N, C, H, W] * Wt[F, C/groups, R, S] (OIHW) "
		"-> Y[N, F, OH, OW], or NHWC X[N, H, W, C] * Wt[R, S, C/groups, F] "
		"(HWIO) -> Y[N, OH, OW, F]; OH = (H + 2*ph - dh*(R-1) - 1) / sh + 1; "
		"stride, padding, dilation are one value or [h, w]",
		conv2d_attrs, gen_conv2d, NULL),
};

const int ops_conv_count = OPS_COUNT(ops_conv);
