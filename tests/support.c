/* Helpers shared by the Criterion suites. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/ops.h"

#include "tests/support.h"

/* LeakSanitizer asks this at exit whether to skip its leak check.  Skip
 * it in Criterion's runner, the process without BoxFort's BXFI_MAP (each
 * test's worker has it): the runner runs only Criterion's code, which now
 * and then loses 48 bytes it callocs when two workers report at once
 * (--jobs 2), and the sanitized build then failed a suite whose tests all
 * passed.  The workers, where the tests run, are checked as before. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return getenv("BXFI_MAP") == NULL;
}

tessel_tensor *test_tensor_like(const tessel_stage *s)
{
	int64_t shape[TESSEL_MAX_DIMS];
	for (int d = 0; d < tessel_stage_ndim(s); d++)
		shape[d] = tessel_stage_dim(s, d);
	return tessel_tensor_new(tessel_stage_dtype(s), tessel_stage_ndim(s), shape,
		NULL, 0);
}

double test_outputs_error(tessel_tensor *const *got, tessel_tensor *const *want, int n)
{
	double worst = 0;
	for (int i = 0; i < n; i++)
		for (int64_t k = 0; k < tessel_tensor_numel(want[i]); k++) {
			double a = tessel_tensor_get(want[i], k), b = tessel_tensor_get(got[i], k);
			double e = fabs(a - b) / (1.0 + fabs(a));
			if (isnan(a) || isnan(b))
				e = isnan(a) == isnan(b) ? 0 : INFINITY;
			if (e > worst)
				worst = e;
		}
	return worst;
}

/* Small attributes for every op of the library (as tests/fuzz/sched_all.sh). */
static const struct { const char *name, *spec; } op_sizes[] = {
	{ "matmul", "M=9;N=7;K=5" },
	{ "batch_matmul", "B=2;M=5;N=4;K=3" },
	{ "dense", "batch=3;in_features=6;out_features=4" },
	{ "conv2d", "N=1;C=3;H=6;W=5;F=4;R=3;S=3;padding=1" },
	{ "max_pool2d", "N=1;C=2;H=7;W=7;kernel=3;stride=2;padding=1" },
	{ "avg_pool2d", "N=1;C=2;H=6;W=6;kernel=2" },
	{ "global_avg_pool", "N=2;C=3;H=4;W=3" },
	{ "softmax", "shape=[4,6]" },
	{ "log_softmax", "shape=[3,2,5]" },
	{ "layer_norm", "shape=[4,7]" },
	{ "batch_norm", "shape=[2,3,3,3]" },
	{ "reduce_sum", "shape=[3,4,5];axes=[0,2]" },
	{ "reduce_mean", "shape=[4,5];axes=[1]" },
	{ "reduce_max", "shape=[5,4];axes=[0];keepdims=1" },
	{ "reduce_min", "shape=[3,6]" },
	{ "reduce_prod", "shape=[3,4];axes=[1]" },
	{ "transpose", "shape=[2,3,4];perm=[2,0,1]" },
	{ "reshape", "shape=[4,6];newshape=[3,-1]" },
	{ "pad", "shape=[3,4];pads=[1,0,2,1]" },
	{ "concat", "shape=[5,3];sizes=[2,3];axis=0" },
	{ "softmax_cross_entropy", "N=4;C=5" },
};

const char *test_library_spec(const char *name)
{
	static const char *const binary[] = { "add", "sub", "mul", "div", "maximum",
		"minimum", "pow", "equal", "not_equal", "less", "less_equal", "greater",
		"greater_equal" };
	for (size_t i = 0; i < sizeof(op_sizes) / sizeof(*op_sizes); i++)
		if (strcmp(op_sizes[i].name, name) == 0)
			return op_sizes[i].spec;
	for (size_t i = 0; i < sizeof(binary) / sizeof(*binary); i++)
		if (strcmp(binary[i], name) == 0)
			return "a=[2,1,3];b=[4,3]";
	return "shape=[3,5]";
}

tessel_op *test_op_new(tessel_ctx *ctx, const char *name, const char *spec)
{
	char text[256], *save = NULL;
	const char *keys[16], *values[16];
	int n = 0;
	snprintf(text, sizeof(text), "%s", spec);
	for (char *kv = strtok_r(text, ";", &save); kv && n < 16;
	     kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');
		cr_assert(eq, "bad spec %s", spec);
		*eq = 0;
		keys[n] = kv;
		values[n++] = eq + 1;
	}
	tessel_op *op = tessel_ops_instantiate(ctx, name, n, keys, values);
	if (!op)
		tessel_ctx_print_error(ctx, stderr);
	cr_assert(op, "instantiating %s", name);
	return op;
}

void test_fixture_init(test_fixture *f, const char *name, const char *spec)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	f->op = test_op_new(f->ctx, name, spec);
	f->nin = tessel_op_num_inputs(f->op);
	f->nout = tessel_op_num_outputs(f->op);
	for (int i = 0; i < f->nin; i++) {
		f->args[i] = test_tensor_like(tessel_op_input_at(f->op, i));
		tessel_tensor_fill_random(f->args[i], 100 + (uint64_t)i);
	}
	for (int i = 0; i < f->nout; i++) {
		f->expected[i] = test_tensor_like(tessel_op_output_at(f->op, i));
		f->args[f->nin + i] = test_tensor_like(tessel_op_output_at(f->op, i));
	}
	for (int i = 0; i < f->nin + f->nout; i++)
		f->data[i] = f->args[i]->data;
	cr_assert_eq(tessel_interp(f->op, f->args, f->expected), 0);
}

void test_fixture_fini(test_fixture *f)
{
	for (int i = 0; i < f->nin + f->nout; i++)
		tessel_tensor_free(f->args[i]);
	for (int i = 0; i < f->nout; i++)
		tessel_tensor_free(f->expected[i]);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

double test_fixture_error(const test_fixture *f)
{
	return test_outputs_error(f->args + f->nin, f->expected, f->nout);
}

void test_fixture_clear_outputs(test_fixture *f)
{
	for (int i = 0; i < f->nout; i++) {
		tessel_tensor *t = f->args[f->nin + i];
		memset(t->data, 0xff, (size_t)tessel_tensor_numel(t) * tessel_dtype_size(t->dtype));
	}
}

char *test_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	if (buf)
		buf[got] = 0;
	fclose(f);
	return buf;
}

/* ---- the scratch directory ---- */

static char scratch[1024];

const char *test_scratch_dir(void)
{
	if (scratch[0])
		return scratch;
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(scratch, sizeof scratch, "%s/tessel-test-XXXXXX",
		tmp && *tmp ? tmp : "/tmp");
	cr_assert(n > 0 && (size_t)n < sizeof scratch, "TMPDIR is too long");
	cr_assert_not_null(mkdtemp(scratch), "mkdtemp %s", scratch);
	return scratch;
}

void test_scratch_make(void)
{
	(void)test_scratch_dir();
}

char *test_scratch_file(char *out, size_t len, const char *name)
{
	int n = snprintf(out, len, "%s/%s", test_scratch_dir(), name);
	cr_assert(n > 0 && (size_t)n < len, "scratch path too long: %s", name);
	return out;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
	struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int test_remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

void test_scratch_remove(void)
{
	if (scratch[0])
		test_remove_tree(scratch);
	scratch[0] = 0;
}

loop_stmt *test_first_store(loop_stmt *s, bool (*want)(const loop_stmt *store))
{
	loop_stmt *found = NULL;
	if (!s)
		return NULL;
	switch (s->kind) {
	case LS_STORE:
		return want(s) ? s : NULL;
	case LS_FOR:
		return test_first_store(s->u.for_.body, want);
	case LS_SEQ:
		for (int i = 0; !found && i < s->u.seq.n; i++)
			found = test_first_store(s->u.seq.items[i], want);
		return found;
	case LS_IF:
		found = test_first_store(s->u.if_.then_, want);
		return found ? found : test_first_store(s->u.if_.else_, want);
	case LS_ALLOC:
		return test_first_store(s->u.alloc.body, want);
	default:
		return NULL;
	}
}
