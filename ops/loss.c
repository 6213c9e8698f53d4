/* Losses: softmax cross-entropy of logits [N, C] against integer class
 * labels [N], computed with log-sum-exp after subtracting each row's
 * maximum, so that large logits do not overflow. */
#include "ops/ops_impl.h"

/* Write the text of softmax_cross_entropy. */
static int gen_softmax_cross_entropy(const ops_args *a, textbuf *tb)
{
	tessel_dtype dt = ops_dtype(a, "dtype");
	tessel_dtype lt = ops_dtype(a, "label_dtype");
	const char *reduction = ops_str(a, "reduction");
	if (ops_require_float(a, dt))
		return -1;
	if (!tessel_dtype_is_int(lt))
		return ops_fail(a, TESSEL_ERR_TYPE,
			"label_dtype must be an integer type (i8, u8, i32, i64), not %s",
			tessel_dtype_name(lt));
	bool none = reduction[0] == 'n', mean = reduction[0] == 'm';
	emit_op_start(tb, a);
	textbuf_printf(tb, "Logits: %s[N, C], Labels: %s[N]) -> Loss {\n",
		tessel_dtype_name(dt), tessel_dtype_name(lt));
	textbuf_puts(tb,
		"  Max[i] = max(j) Logits[i, j]\n"
		"  SumExp[i] = sum(j) exp(Logits[i, j] - Max[i])\n"
		"  Picked[i] = sum(j in 0..C) select(Labels[i] == j, Logits[i, j], ");
	emit_scalar(tb, dt, 0.0);
	textbuf_printf(tb, ")\n  %s[i] = Max[i] + log(SumExp[i]) - Picked[i]\n",
		none ? "Loss" : "Losses");
	if (mean)
		textbuf_puts(tb, "  Total[] = sum(i) Losses[i]\n"
			"  Loss[] = Total[] / N\n");
	else if (!none)
		textbuf_puts(tb, "  Loss[] = sum(i) Losses[i]\n");
	textbuf_puts(tb, "}\n");
	return 0;
}

static const ops_attr softmax_cross_entropy_attrs[] = {
	{ { "N", TESSEL_ATTR_INT, NULL, "batch size" }, OPS_SIZE, NULL },
	{ { "C", TESSEL_ATTR_INT, NULL, "number of classes" }, OPS_SIZE, NULL },
	{ { "label_dtype", TESSEL_ATTR_DTYPE, "i64",
	    "integer type of Labels (class indices in 0..C-1)" }, 0, NULL },
	{ { "reduction", TESSEL_ATTR_STR, "mean",
	    "mean (0-d Loss), sum (0-d Loss) or none (Loss[N])" },
	  0, "mean|sum|none" },
	{ { "dtype", TESSEL_ATTR_DTYPE, "f32", "element type of Logits and Loss" },
	  0, NULL },
};

const ops_def ops_loss[] = {
	OPS_DEF("softmax_cross_entropy",
		"Loss = mean over rows of logsumexp(Logits[i, :]) - "
		"Logits[i, Labels[i]], as torch.nn.CrossEntropyLoss",
		softmax_cross_entropy_attrs, gen_softmax_cross_entropy, NULL),
};

const int ops_loss_count = OPS_COUNT(ops_loss);
