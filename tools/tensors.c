/* Tensors on the command line: inputs from --in files or seeded random
 * data, outputs allocated for an op, summaries, and --out files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/compare.h"
#include "tools/cli.h"
#include "tools/tensors.h"

static int add_input_file(cli_data *a, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return cli_fail("--in expects NAME=FILE.npy, got '%s'", arg);
	if (a->nin == CLI_MAX_IN)
		return cli_fail("--in: more than %d inputs", CLI_MAX_IN);
	a->in_names[a->nin] = strndup(arg, (size_t)(eq - arg));
	a->in_files[a->nin] = eq + 1;
	a->nin++;
	return 0;
}

static int parse_seed(const char *text, uint64_t *seed)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-')
		return cli_fail("--seed expects a non-negative integer, got '%s'", text);
	*seed = v;
	return 0;
}

void cli_free_tensors(tessel_tensor **ts, int n)
{
	for (int i = 0; i < n; i++)
		tessel_tensor_free(ts[i]);
}

static void shape_text(char *buf, size_t len, tessel_dtype dt, int ndim,
	const int64_t *shape)
{
	int n = snprintf(buf, len, "%s[", tessel_dtype_name(dt));
	for (int d = 0; d < ndim && n > 0 && (size_t)n < len; d++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", d ? ", " : "",
			(long long)shape[d]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "]");
}

/* Return the tensor in the .npy "file", or NULL after printing why. */
static tessel_tensor *load_input(const char *file)
{
	char err[512];
	tessel_tensor *t = tessel_npy_load(file, err, sizeof(err));
	if (!t)
		cli_fail("%s", err);
	return t;
}

int cli_make_inputs(const cli_data *a, tessel_op *op, tessel_tensor **in)
{
	for (int k = 0; k < a->nin; k++) {
		bool found = false;
		for (int i = 0; i < tessel_op_num_inputs(op); i++)
			found |= strcmp(tessel_stage_name(tessel_op_input_at(op, i)),
					a->in_names[k]) == 0;
		if (!found)
			return cli_fail("--in %s: op '%s' has no input '%s'",
				a->in_names[k], tessel_op_name(op), a->in_names[k]);
	}
	for (int i = 0; i < tessel_op_num_inputs(op); i++) {
		tessel_stage *s = tessel_op_input_at(op, i);
		int64_t shape[TESSEL_MAX_DIMS];
		for (int d = 0; d < tessel_stage_ndim(s); d++)
			shape[d] = tessel_stage_dim(s, d);
		const char *file = NULL;
		for (int k = 0; k < a->nin; k++)
			if (strcmp(a->in_names[k], tessel_stage_name(s)) == 0)
				file = a->in_files[k];
		char err[512];
		if (file) {
			in[i] = load_input(file);
		} else {
			in[i] = tessel_tensor_new(tessel_stage_dtype(s),
				tessel_stage_ndim(s), shape, err, sizeof(err));
			if (in[i])
				tessel_tensor_fill_random(in[i], te_input_seed(a->seed, i));
			else
				cli_fail("input '%s': %s", tessel_stage_name(s), err);
		}
		if (!in[i])
			return cli_free_tensors(in, i), 1;
	}
	return 0;
}

int cli_make_outputs(tessel_op *op, tessel_tensor **out)
{
	for (int i = 0; i < tessel_op_num_outputs(op); i++) {
		tessel_stage *s = tessel_op_output_at(op, i);
		int64_t shape[TESSEL_MAX_DIMS];
		char err[512];
		for (int d = 0; d < tessel_stage_ndim(s); d++)
			shape[d] = tessel_stage_dim(s, d);
		out[i] = tessel_tensor_new(tessel_stage_dtype(s), tessel_stage_ndim(s),
			shape, err, sizeof(err));
		if (!out[i]) {
			cli_free_tensors(out, i);
			return cli_fail("output '%s': %s", tessel_stage_name(s), err);
		}
	}
	return 0;
}

void cli_summarize(const char *name, const tessel_tensor *t)
{
	char shape[256];
	shape_text(shape, sizeof(shape), t->dtype, t->ndim, t->shape);
	int64_t n = tessel_tensor_numel(t);
	double lo = INFINITY, hi = -INFINITY, sum = 0;
	for (int64_t i = 0; i < n; i++) {
		double v = tessel_tensor_get(t, i);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sum += v;
	}
	printf("%s: %s  min %.6g  max %.6g  mean %.6g\n", name, shape, lo, hi,
		n ? sum / (double)n : 0.0);
	printf("  [");
	for (int64_t i = 0; i < n && i < 8; i++)
		printf("%s%.6g", i ? ", " : "", tessel_tensor_get(t, i));
	printf("%s]\n", n > 8 ? ", ..." : "");
}

int cli_write_outputs(const cli_data *a, tessel_op *op, tessel_tensor **out)
{
	if (mkdir(a->out_dir, 0777) != 0 && errno != EEXIST)
		return cli_fail("--out %s: %s", a->out_dir, strerror(errno));
	for (int i = 0; i < tessel_op_num_outputs(op); i++) {
		char path[4096], err[512];
		snprintf(path, sizeof(path), "%s/%s.npy", a->out_dir,
			tessel_stage_name(tessel_op_output_at(op, i)));
		if (tessel_npy_save(path, out[i], err, sizeof(err)))
			return cli_fail("%s", err);
		printf("wrote %s\n", path);
	}
	return 0;
}

int cli_data_option(cli_data *d, int argc, char **argv, int *i)
{
	bool missing = false;
	const char *v;
	if ((v = cli_option(argc, argv, i, "--in", &missing)))
		return add_input_file(d, v) ? -1 : 1;
	if ((v = cli_option(argc, argv, i, "--seed", &missing)))
		return parse_seed(v, &d->seed) ? -1 : 1;
	if ((v = cli_option(argc, argv, i, "--out", &missing))) {
		d->out_dir = v;
		return 1;
	}
	if (missing)
		return cli_fail("%s needs a value", argv[*i]) ? -1 : -1;
	return 0;
}

void cli_data_free(cli_data *d)
{
	for (int i = 0; i < d->nin; i++)
		free(d->in_names[i]);
	d->nin = 0;
}
