/* Tests of the .te language and tensor expressions: golden normalized
 * prints, print/parse round trips, inference, binding, structural equality
 * and hashing, every diagnostic in tests/te/errors (NAME.te beside the
 * expected NAME.err), and the ISL texts a context remembers. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/val.h>

#include "ir/isl_text.h"
#include "ir/memo.h"
#include "ir/te_impl.h"
#include "tessel/te.h"

#define TE_DIR TESSEL_SOURCE_DIR "/tests/te"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	size_t got = fread(buf, 1, (size_t)n, f);
	buf[got] = 0;
	fclose(f);
	return buf;
}

static tessel_module *parse_text(tessel_ctx *ctx, const char *src)
{
	tessel_module *m = tessel_parse(ctx, "t.te", src, strlen(src));
	if (!m)
		tessel_ctx_print_error(ctx, stderr);
	return m;
}

/* Bind the only op of "m" with the "# set: A=1,B=2" line of "src"; return
 * 0 when there is no such line or binding succeeds. */
static int bind_as_told(tessel_module *m, const char *src)
{
	const char *line = strstr(src, "# set: ");
	if (!line)
		return 0;
	const char *names[16];
	int64_t values[16];
	char buf[256];
	int n = 0;
	sscanf(line + 7, "%255[^\n]", buf);
	for (char *item = strtok(buf, ","); item && n < 16; item = strtok(NULL, ",")) {
		char *eq = strchr(item, '=');
		*eq = 0;
		names[n] = item;
		values[n++] = atoll(eq + 1);
	}
	tessel_op *op = tessel_op_bind(tessel_module_op(m, 0), n, names, values);
	tessel_op_release(op);
	return op ? 0 : -1;
}

/* Return the error "src" gives as "FILE:LINE:COL: error: MSG" text: from
 * parsing, or from binding as its "# set:" line says. */
static char *error_text(tessel_ctx *ctx, const char *file, const char *src)
{
	tessel_module *m = tessel_parse(ctx, file, src, strlen(src));
	int bound = m ? bind_as_told(m, src) : -1;
	tessel_module_free(m);
	if (bound == 0)
		return strdup("(no error)\n");
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	tessel_ctx_print_error(ctx, out);
	fclose(out);
	return buf;
}

static tessel_op *bind3(tessel_op *op, const char *a, int64_t va, const char *b,
	int64_t vb, const char *c, int64_t vc)
{
	const char *names[] = { a, b, c };
	int64_t values[] = { va, vb, vc };
	return tessel_op_bind(op, c ? 3 : b ? 2 : 1, names, values);
}

static const char matmul_src[] =
	"op matmul(A: f32[M, K], B: f32[K, N]) -> C {\n"
	"  C[i, j] = sum(k) A[i, k] * B[k, j]\n"
	"}\n";

Test(infer, matmul_shapes_are_symbolic)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx, matmul_src);
	cr_assert(m);
	char *text = tessel_op_print(tessel_module_op(m, 0));
	cr_expect_str_eq(text,
		"op matmul(A: f32[M, K], B: f32[K, N]) -> C {\n"
		"  C[i, j] : f32[M, N] = sum(k in 0..K) A[i, k] * B[k, j]\n"
		"}\n");
	free(text);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(infer, bound_matmul_has_extents)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx, matmul_src);
	tessel_op *op = bind3(tessel_module_op(m, 0), "M", 4, "N", 3, "K", 5);
	cr_assert(op);
	tessel_stage *c = tessel_op_output_at(op, 0);
	cr_expect_eq(tessel_stage_dim(c, 0), 4);
	cr_expect_eq(tessel_stage_dim(c, 1), 3);
	cr_expect(tessel_op_is_bound(op));
	char *text = tessel_op_print(op);
	cr_expect_str_eq(text,
		"op matmul(A: f32[4, 5], B: f32[5, 3]) -> C {\n"
		"  C[i, j] : f32[4, 3] = sum(k in 0..5) A[i, k] * B[k, j]\n"
		"}\n");
	free(text);
	tessel_op_release(op);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(infer, conv_ranges_inferred_after_binding)
{
	tessel_ctx *ctx = tessel_ctx_new();
	char *src = read_file(TE_DIR "/ok/issue_examples.te");
	cr_assert(src);
	tessel_module *m = parse_text(ctx, src);
	cr_assert(m);
	const char *names[] = { "N", "C", "H", "W", "F", "R", "S", "stride", "pad" };
	int64_t values[] = { 1, 3, 8, 7, 4, 3, 3, 2, 1 };
	tessel_op *conv = tessel_module_find(ctx, m, "conv2d_relu");
	tessel_op *op = tessel_op_bind(conv, 9, names, values);
	if (!op)
		tessel_ctx_print_error(ctx, stderr);
	cr_assert(op);
	tessel_stage *y = tessel_op_output_at(op, 0);
	cr_expect_eq(tessel_stage_dim(y, 2), (8 + 2 - 3) / 2 + 1);
	cr_expect_eq(tessel_stage_dim(y, 3), (7 + 2 - 3) / 2 + 1);
	tessel_op_release(op);
	free(src);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(infer, shifted_access_shrinks_the_range)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx,
		"op diff(X: f32[N]) -> Y { Y[i] = X[i + 1] - X[i] }\n");
	cr_assert(m);
	char *text = tessel_op_print(tessel_module_op(m, 0));
	cr_expect(strstr(text, "Y[i] : f32[N - 1]"), "%s", text);
	free(text);
	tessel_op *op = bind3(tessel_module_op(m, 0), "N", 1, NULL, 0, NULL, 0);
	cr_expect_null(op, "N=1 leaves Y empty");
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(infer, strided_access_halves_the_range)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx,
		"op down(X: f32[N]) -> Y { Y[i] = X[2*i] + X[2*i + 1] }\n");
	cr_assert(m);
	tessel_op *op = bind3(tessel_module_op(m, 0), "N", 9, NULL, 0, NULL, 0);
	cr_assert(op);
	cr_expect_eq(tessel_stage_dim(tessel_op_output_at(op, 0), 0), 4);
	tessel_op_release(op);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

/* Check that every op of "m" prints, parses back structurally equal with
 * the same hash, and prints the same again; return all prints. */
static char *check_round_trips(tessel_ctx *ctx, tessel_module *m)
{
	char *all = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&all, &len);
	for (int i = 0; i < tessel_module_num_ops(m); i++) {
		tessel_op *op = tessel_module_op(m, i);
		char *text = tessel_op_print(op);
		tessel_module *again = parse_text(ctx, text);
		cr_assert(again, "%s", text);
		tessel_op *op2 = tessel_module_op(again, 0);
		cr_expect(tessel_op_equal(op, op2), "%s", text);
		cr_expect_eq(tessel_op_hash(op), tessel_op_hash(op2));
		char *text2 = tessel_op_print(op2);
		cr_expect_str_eq(text, text2);
		fputs(text, out);
		free(text2);
		free(text);
		tessel_module_free(again);
	}
	fclose(out);
	return all;
}

/* Every tests/te/ok/NAME.te prints as NAME.out and round-trips. */
Test(roundtrip, golden_prints_and_round_trips)
{
	DIR *dir = opendir(TE_DIR "/ok");
	cr_assert(dir);
	struct dirent *de;
	int count = 0;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".te") != 0)
			continue;
		char te[512], golden[512];
		snprintf(te, sizeof(te), "%s/ok/%s", TE_DIR, de->d_name);
		snprintf(golden, sizeof(golden), "%s/ok/%.*s.out", TE_DIR, (int)(len - 3), de->d_name);
		tessel_ctx *ctx = tessel_ctx_new();
		tessel_module *m = tessel_parse_file(ctx, te);
		if (!m)
			tessel_ctx_print_error(ctx, stderr);
		cr_assert(m, "%s", te);
		char *got = check_round_trips(ctx, m);
		char *want = read_file(golden);
		cr_assert(want, "missing %s; it should hold:\n%s", golden, got);
		cr_expect_str_eq(got, want, "%s printed:\n%s", te, got);
		free(got);
		free(want);
		tessel_module_free(m);
		tessel_ctx_free(ctx);
		count++;
	}
	closedir(dir);
	cr_expect_geq(count, 2);
}

Test(hash, names_do_not_matter_sizes_do)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *a = parse_text(ctx, matmul_src);
	tessel_module *b = parse_text(ctx,
		"op mm(P: f32[R, T], Q: f32[T, S]) -> O {\n"
		"  O[x, y] = sum(t) P[x, t] * Q[t, y]\n"
		"}\n");
	cr_assert(a && b);
	tessel_op *a1 = bind3(tessel_module_op(a, 0), "M", 64, "N", 32, "K", 16);
	tessel_op *b1 = tessel_op_bind(tessel_module_op(b, 0), 3,
		(const char *[]){ "R", "S", "T" }, (int64_t[]){ 64, 32, 16 });
	tessel_op *a2 = bind3(tessel_module_op(a, 0), "M", 64, "N", 32, "K", 17);
	cr_assert(a1 && b1 && a2);
	cr_expect(tessel_op_equal(a1, b1));
	cr_expect_eq(tessel_op_hash(a1), tessel_op_hash(b1));
	cr_expect_not(tessel_op_equal(a1, a2));
	cr_expect_neq(tessel_op_hash(a1), tessel_op_hash(a2));
	tessel_op_release(a1);
	tessel_op_release(b1);
	tessel_op_release(a2);
	tessel_module_free(a);
	tessel_module_free(b);
	tessel_ctx_free(ctx);
}

Test(hash, stable_across_runs)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *a = parse_text(ctx, matmul_src);
	tessel_op *op = bind3(tessel_module_op(a, 0), "M", 64, "N", 32, "K", 16);
	cr_assert(op);
	/* The value pins the canonical form and FNV-1a: if it changes, every
	 * tuning database keyed by it is invalidated, so change it knowingly. */
	char hex[32];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)tessel_op_hash(op));
	cr_log_info("matmul 64x32x16 hash %s", hex);
	cr_expect_str_eq(hex, "9cc856941fc4d8ed");
	tessel_op_release(op);
	tessel_module_free(a);
	tessel_ctx_free(ctx);
}

Test(hash, dtype_matters)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *a = parse_text(ctx, "op f(X: f32[4]) -> Y { Y[i] = X[i] * 2.0 }");
	tessel_module *b = parse_text(ctx, "op f(X: f16[4]) -> Y { Y[i] = X[i] * 2.0 }");
	cr_assert(a && b);
	cr_expect_not(tessel_op_equal(tessel_module_op(a, 0), tessel_module_op(b, 0)));
	tessel_module_free(a);
	tessel_module_free(b);
	tessel_ctx_free(ctx);
}

Test(types, weak_literals_take_the_tensor_type)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx,
		"op f(X: f16[4], I: i8[4]) -> A, B, C, D {\n"
		"  A[i] = X[i] * 2.0\n"
		"  B[i] = I[i] + 1\n"
		"  C[i] = select(I[i] > 0, i, 2)\n"
		"  D[i] = X[i] < 0.5\n"
		"}\n");
	cr_assert(m);
	tessel_op *op = tessel_module_op(m, 0);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(op, 0)), TESSEL_F16);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(op, 1)), TESSEL_I8);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(op, 2)), TESSEL_I64);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(op, 3)), TESSEL_BOOL);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(bind, errors_name_the_problem)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = parse_text(ctx, matmul_src);
	tessel_op *op = tessel_module_op(m, 0);
	cr_expect_null(bind3(op, "M", 4, "N", 3, NULL, 0));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "size 'K'"));
	cr_expect_null(bind3(op, "M", 4, "N", 0, "K", 2));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "must be positive"));
	cr_expect_null(bind3(op, "M", 4, "N", 3, "Q", 2));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "no size or attribute 'Q'"));
	cr_expect_null(bind3(op, "M", 1LL << 40, "N", 1LL << 40, "K", 1));
	cr_expect_eq(tessel_ctx_error(ctx)->kind, TESSEL_ERR_LIMIT);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(parse, picks_ops_by_name)
{
	tessel_ctx *ctx = tessel_ctx_new();
	char *src = read_file(TE_DIR "/ok/issue_examples.te");
	tessel_module *m = parse_text(ctx, src);
	cr_assert(m);
	cr_expect_eq(tessel_module_num_ops(m), 3);
	cr_expect(tessel_module_find(ctx, m, "softmax"));
	cr_expect_null(tessel_module_find(ctx, m, NULL));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "FILE.te:NAME"));
	cr_expect_null(tessel_module_find(ctx, m, "nope"));
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "matmul, conv2d_relu, softmax"));
	free(src);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(parse, deep_nesting_is_an_error_not_a_crash)
{
	tessel_ctx *ctx = tessel_ctx_new();
	size_t n = 100000;
	char *src = malloc(n * 2 + 64);
	strcpy(src, "op f(X: f32[4]) -> Y { Y[i] = ");
	size_t len = strlen(src);
	for (size_t i = 0; i < n; i++)
		src[len++] = '(';
	src[len++] = '1';
	for (size_t i = 0; i < n; i++)
		src[len++] = ')';
	strcpy(src + len, " }");
	cr_expect_null(tessel_parse(ctx, "deep.te", src, strlen(src)));
	cr_expect_eq(tessel_ctx_error(ctx)->kind, TESSEL_ERR_LIMIT);
	free(src);
	tessel_ctx_free(ctx);
}

/* Every tests/te/errors/NAME.te gives exactly the diagnostic NAME.err. */
Test(diagnostics, golden_errors)
{
	DIR *dir = opendir(TE_DIR "/errors");
	cr_assert(dir);
	struct dirent *de;
	int count = 0;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".te") != 0)
			continue;
		char te[512], err[512], file[512];
		snprintf(te, sizeof(te), "%s/errors/%s", TE_DIR, de->d_name);
		snprintf(err, sizeof(err), "%s/errors/%.*s.err", TE_DIR, (int)(len - 3), de->d_name);
		snprintf(file, sizeof(file), "%s", de->d_name);
		char *src = read_file(te), *want = read_file(err);
		cr_assert(src && want, "missing %s", err);
		tessel_ctx *ctx = tessel_ctx_new();
		char *got = error_text(ctx, file, src);
		cr_expect_str_eq(got, want, "%s gave: %s", te, got);
		free(got);
		free(src);
		free(want);
		tessel_ctx_free(ctx);
		count++;
	}
	closedir(dir);
	cr_expect_gt(count, 20);
}

/* ---- the memo ------------------------------------------------------------- */

static int memo_frees;

static void count_free(void *p)
{
	memo_frees++;
	free(p);
}

/* A value is found under its key only; a key put again replaces (and
 * frees) the value; more keys than slots each find their own or none;
 * the context frees what is left. */
Test(memo, values_are_found_under_their_keys_and_freed_once)
{
	tessel_ctx *ctx = tessel_ctx_new();
	memo_frees = 0;
	cr_expect_null(te_memo_get(ctx, "a"));
	int *one = malloc(sizeof(int)), *two = malloc(sizeof(int));
	*one = 1;
	*two = 2;
	te_memo_put(ctx, "a", one, count_free);
	cr_assert(te_memo_get(ctx, "a"));
	cr_expect_eq(*(const int *)te_memo_get(ctx, "a"), 1);
	cr_expect_null(te_memo_get(ctx, "b"));
	te_memo_put(ctx, "a", two, count_free);
	cr_expect_eq(memo_frees, 1);
	cr_expect_eq(*(const int *)te_memo_get(ctx, "a"), 2);
	char key[32];
	int puts = 0;
	for (int k = 0; k < TE_MEMO_SLOTS + 100; k += 3, puts++) {
		snprintf(key, sizeof(key), "key %d", k);
		int *v = malloc(sizeof(int));
		*v = k;
		te_memo_put(ctx, key, v, count_free);
	}
	for (int k = 0; k < TE_MEMO_SLOTS + 100; k += 3) {
		snprintf(key, sizeof(key), "key %d", k);
		const int *v = te_memo_get(ctx, key);
		if (v)
			cr_expect_eq(*v, k, "%s", key);
	}
	tessel_ctx_free(ctx);
	cr_expect_eq(memo_frees, puts + 2, "every value freed once");
}

/* ---- ISL texts ------------------------------------------------------------- */

/* A text read twice gives the same set, as ISL reads it, both times. */
Test(isl_text, a_text_read_again_is_the_same_set)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *text = "[n] -> { [i, j] : 0 <= i < n and 0 <= j <= i }";
	isl_set *a = te_isl_read_set(ctx, text);
	isl_set *b = te_isl_read_set(ctx, text);
	isl_set *direct = isl_set_read_from_str(te_isl(ctx), text);
	cr_assert(a && b && direct);
	cr_expect(isl_set_is_equal(a, direct) == isl_bool_true);
	cr_expect(isl_set_is_equal(b, direct) == isl_bool_true);
	isl_set_free(a);
	isl_set_free(b);
	isl_set_free(direct);
	tessel_ctx_free(ctx);
}

/* A text ISL rejects gives NULL every time; a map's text read as a map
 * is not taken for the set of the same text. */
Test(isl_text, rejections_and_kinds_are_kept_apart)
{
	tessel_ctx *ctx = tessel_ctx_new();
	cr_expect_null(te_isl_read_set(ctx, "{ [i] : i < }"));
	cr_expect_null(te_isl_read_set(ctx, "{ [i] : i < }"));
	const char *text = "{ [i] -> [j] : j = i + 1 and 0 <= i < 4 }";
	isl_map *m = te_isl_read_map(ctx, text);
	cr_assert(m);
	isl_map *again = te_isl_read_map(ctx, text);
	cr_expect(isl_map_is_equal(m, again) == isl_bool_true);
	isl_set *range = isl_map_range(isl_map_copy(m));
	isl_set *want = te_isl_read_set(ctx, "{ [j] : 1 <= j <= 4 }");
	cr_expect(isl_set_is_equal(range, want) == isl_bool_true);
	isl_set_free(range);
	isl_set_free(want);
	isl_map_free(again);
	isl_map_free(m);
	tessel_ctx_free(ctx);
}

/* More texts than the table holds: each still reads as its own set,
 * first ones again after the table has moved on. */
Test(isl_text, more_texts_than_slots_each_read_right)
{
	tessel_ctx *ctx = tessel_ctx_new();
	char text[128];
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < TE_MEMO_SLOTS + 100; k += 7) {
			snprintf(text, sizeof(text), "{ [i] : 0 <= i < %d }", k + 1);
			isl_set *s = te_isl_read_set(ctx, text);
			cr_assert(s);
			isl_val *n = isl_set_count_val(s);
			cr_expect_eq(isl_val_get_num_si(n), k + 1, "%s", text);
			isl_val_free(n);
			isl_set_free(s);
		}
	tessel_ctx_free(ctx);
}
