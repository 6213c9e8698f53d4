/* Pooling over NCHW tensors: max_pool2d, avg_pool2d, global_avg_pool.  The
 * sizes N, C, H, W stay symbolic; kernel, stride and padding are written as
 * numbers. */
#include <inttypes.h>

#include "ops/ops_impl.h"

typedef struct pool_geom {
	int64_t kernel[2], stride[2], pad[2];
} pool_geom;

/* Read kernel, stride (default: the kernel, as in PyTorch) and padding,
 * checking PyTorch's rule that padding is at most half the kernel, which
 * keeps at least one input element in every window. */
static int read_pool_geom(const ops_args *a, pool_geom *g)
{
	for (int i = 0; i < 2; i++) {
		g->kernel[i] = ops_pair(a, "kernel", i, 1);
		g->stride[i] = ops_pair(a, "stride", i, g->kernel[i]);
		g->pad[i] = ops_pair(a, "padding", i, 0);
		if (2 * g->pad[i] > g->kernel[i])
			return ops_fail(a, TESSEL_ERR_VALUE,
				"padding %" PRId64 " is more than half the kernel %"
				PRId64, g->pad[i], g->kernel[i]);
	}
	static const char *const sizes[2] = { "H", "W" };
	for (int i = 0; i < 2; i++)
		if (ops_has(a, sizes[i]) &&
		    window_extent(ops_int(a, sizes[i]), g->kernel[i],
			    2 * g->pad[i], 1, g->stride[i]) < 1)
			return ops_fail(a, TESSEL_ERR_SHAPE,
				"the kernel %" PRId64 " is larger than the padded "
				"input (%s=%" PRId64 " + 2*%" PRId64 ")", g->kernel[i],
				sizes[i], ops_int(a, sizes[i]), g->pad[i]);
	return 0;
}

/* Return the lowest finite value of the float type "dt". */
static double lowest(tessel_dtype dt)
{
	switch (dt) {
	case TESSEL_F16: return -65504.0;
	case TESSEL_BF16: return -3.3895313892515355e38;
	case TESSEL_F32: return -3.4028234663852886e38;
	default: return -1.7976931348623157e308;
	}
}

/* Write "  NAME[n, c, y, x] : dt[N, C, OH, OW] =\n      RED(r in 0..KH,
 * s in 0..KW) SRC[n, c, y*sh + r, x*sw + s]\n". */
static void emit_window_reduce(textbuf *tb, const pool_geom *g,
	tessel_dtype dt, const char *name, const char *reduce, const char *src)
{
	textbuf_printf(tb, "  %s[n, c, y, x] : %s[N, C, ", name,
		tessel_dtype_name(dt));
	emit_window_extent(tb, "H", NULL, g->kernel[0], 2 * g->pad[0], 1, g->stride[0]);
	textbuf_puts(tb, ", ");
	emit_window_extent(tb, "W", NULL, g->kernel[1], 2 * g->pad[1], 1, g->stride[1]);
	textbuf_printf(tb, "] =\n      %s(r in 0..%" PRId64 ", s in 0..%" PRId64
		") %s[n, c, ", reduce, g->kernel[0], g->kernel[1], src);
	emit_scaled(tb, "y", g->stride[0]);
	textbuf_puts(tb, " + r, ");
	emit_scaled(tb, "x", g->stride[1]);
	textbuf_puts(tb, " + s]\n");
}

/* Write the text of max_pool2d. */
static int gen_max_pool2d(const ops_args *a, textbuf *tb)
{
	pool_geom g;
	tessel_dtype dt = ops_dtype(a, "dtype");
	if (ops_require_float(a, dt) || read_pool_geom(a, &g))
		return -1;
	bool padded = g.pad[0] > 0 || g.pad[1] > 0;
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[N, C, H, W]) -> Y {\n", tessel_dtype_name(dt));
	if (padded) {
		textbuf_puts(tb, "  # padding holds the lowest finite value; every "
			"window keeps an element of X\n");
		emit_padded_input(tb, false, dt, g.pad, lowest(dt));
	}
	emit_window_reduce(tb, &g, dt, "Y", "max", padded ? "P" : "X");
	textbuf_puts(tb, "}\n");
	return 0;
}

/* Write the number of input elements in the window of output "v" along
 * the dimension of size "size": the kernel, or, with padding, the clipped
 * window min(v*stride - pad + kernel, SIZE) - max(v*stride - pad, 0). */
static void emit_window_count(textbuf *tb, const pool_geom *g, const char *v,
	const char *size, int axis)
{
	if (g->pad[axis] == 0) {
		textbuf_printf(tb, "%" PRId64, g->kernel[axis]);
		return;
	}
	textbuf_puts(tb, "(min(");
	emit_scaled(tb, v, g->stride[axis]);
	emit_offset(tb, g->kernel[axis] - g->pad[axis]);
	textbuf_printf(tb, ", %s) - max(", size);
	emit_scaled(tb, v, g->stride[axis]);
	emit_offset(tb, -g->pad[axis]);
	textbuf_puts(tb, ", 0))");
}

/* Write the text of avg_pool2d. */
static int gen_avg_pool2d(const ops_args *a, textbuf *tb)
{
	pool_geom g;
	tessel_dtype dt = ops_dtype(a, "dtype");
	if (ops_require_float(a, dt) || read_pool_geom(a, &g))
		return -1;
	bool padded = g.pad[0] > 0 || g.pad[1] > 0;
	bool count_pad = ops_bool(a, "count_include_pad");
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[N, C, H, W]) -> Y {\n", tessel_dtype_name(dt));
	if (padded)
		emit_padded_input(tb, false, dt, g.pad, 0.0);
	emit_window_reduce(tb, &g, dt, "Total", "sum", padded ? "P" : "X");
	textbuf_puts(tb, "  Y[n, c, y, x] = Total[n, c, y, x] / ");
	if (count_pad || !padded) {
		textbuf_printf(tb, "%" PRId64 "\n}\n", g.kernel[0] * g.kernel[1]);
		return 0;
	}
	textbuf_puts(tb, "(");
	emit_window_count(tb, &g, "y", "H", 0);
	textbuf_puts(tb, "*");
	emit_window_count(tb, &g, "x", "W", 1);
	textbuf_puts(tb, ")\n}\n");
	return 0;
}

/* Write the text of global_avg_pool. */
static int gen_global_avg_pool(const ops_args *a, textbuf *tb)
{
	tessel_dtype dt = ops_dtype(a, "dtype");
	if (ops_require_float(a, dt))
		return -1;
	const char *t = tessel_dtype_name(dt);
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[N, C, H, W]) -> Y {\n", t);
	textbuf_puts(tb, "  Total[n, c] = sum(h, w) X[n, c, h, w]\n");
	if (ops_bool(a, "keepdims"))
		textbuf_printf(tb, "  Y[n, c, u, v] : %s[N, C, 1, 1] = "
			"Total[n, c] / (H*W)\n}\n", t);
	else
		textbuf_puts(tb, "  Y[n, c] = Total[n, c] / (H*W)\n}\n");
	return 0;
}

#define POOL_SIZE_ATTRS \
	{ { "N", TESSEL_ATTR_INT, NULL, "batch size" }, OPS_SIZE, NULL }, \
	{ { "C", TESSEL_ATTR_INT, NULL, "channels" }, OPS_SIZE, NULL }, \
	{ { "H", TESSEL_ATTR_INT, NULL, "input height" }, OPS_SIZE, NULL }, \
	{ { "W", TESSEL_ATTR_INT, NULL, "input width" }, OPS_SIZE, NULL }

#define POOL_WINDOW_ATTRS \
	{ { "kernel", TESSEL_ATTR_INTS, NULL, "k or [kh, kw]" }, \
	  OPS_PAIR | OPS_POSITIVE, NULL }, \
	{ { "stride", TESSEL_ATTR_INTS, "[]", "s or [sh, sw]; [] = kernel" }, \
	  OPS_PAIR | OPS_POSITIVE | OPS_EMPTY_OK, NULL }, \
	{ { "padding", TESSEL_ATTR_INTS, "0", \
	    "p or [ph, pw] on each side, at most half the kernel" }, \
	  OPS_PAIR | OPS_NONNEG, NULL }

static const ops_attr max_pool2d_attrs[] = {
	POOL_SIZE_ATTRS,
	POOL_WINDOW_ATTRS,
	OPS_ATTR_DTYPE,
};

static const ops_attr avg_pool2d_attrs[] = {
	POOL_SIZE_ATTRS,
	POOL_WINDOW_ATTRS,
	{ { "count_include_pad", TESSEL_ATTR_BOOL, "1",
	    "divide by the whole window (1) or by its elements inside X (0)" },
	  0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr global_avg_pool_attrs[] = {
	POOL_SIZE_ATTRS,
	{ { "keepdims", TESSEL_ATTR_BOOL, "1",
	    "output [N, C, 1, 1] (1) or [N, C] (0)" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

const ops_def ops_pool[] = {
	OPS_DEF("max_pool2d",
		"Y[N, C, OH, OW] = max over each kernel window of X[N, C, H, W] "
		"(NCHW); padding never wins; OH = (H + 2*ph - kh) / sh + 1",
		max_pool2d_attrs, gen_max_pool2d, NULL),
	OPS_DEF("avg_pool2d",
		"Y[N, C, OH, OW] = mean over each kernel window of X[N, C, H, W] "
		"(NCHW), zero padding; count_include_pad as in PyTorch",
		avg_pool2d_attrs, gen_avg_pool2d, NULL),
	OPS_DEF("global_avg_pool",
		"Y[N, C, 1, 1] (or [N, C]) = mean of X[N, C, H, W] over H and W",
		global_avg_pool_attrs, gen_global_avg_pool, NULL),
};

const int ops_pool_count = OPS_COUNT(ops_pool);
