/* Tests of the GPU rules of the search space (tuner/sketch_gpu.c) on the
 * OpenCL device (PoCL on the CPU): for every op of the library, a sample
 * of every sketch and a mutation of it replay from their traces, fit the
 * device's limits, and compute on the device what the interpreter
 * computes; the rules give the structure they promise (blocks and
 * threads, shared staging with a cooperative fetch, a local accumulator,
 * cross-thread reductions).
 *
 * The task describes the device in a child process before the test opens
 * it (tuner/gpu_target.h).  Tests skip, saying why, where there is no
 * device and in the sanitized build (as tests/test_opencl.c).  Every
 * timeout is 600 s: with timeouts that differ, Criterion 2.4.1's runner
 * leaked 48 bytes under LeakSanitizer when tests ran on two jobs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "codegen/opencl_kernel.h"
#include "runtime/opencl.h"
#include "schedule/bound.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tuner/gpu_redundant.h"
#include "tuner/runner_opencl.h"
#include "tuner/sketch.h"
#include "tuner/task.h"
#include "tests/support.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The op with its inputs and outputs (tests/support.h), and its task
 * and search space on the OpenCL device. */
typedef struct fixture {
	test_fixture t;
	tune_task task;
	tune_space *space;
} fixture;

/* Skip in the sanitized build; keep PoCL's cache in the build tree. */
static void need_opencl(void)
{
	if (SANITIZED && !getenv("TESSEL_OPENCL_UNDER_ASAN"))
		cr_skip_test("OpenCL tests skip in the sanitized build (PoCL is not "
			"built with ASan; TESSEL_OPENCL_UNDER_ASAN=1 runs them)");
	setenv("POCL_CACHE_DIR", TESSEL_BUILD_DIR "/pocl-cache", 0);
}

/* Instantiate "name" with the attributes "spec" ("K=V;K=V") and make its
 * task on the OpenCL device (skipping when there is none). */
static void fixture_init(fixture *f, const char *name, const char *spec)
{
	char err[512];
	memset(f, 0, sizeof(*f));
	test_fixture_init(&f->t, name, spec);
	if (tune_task_init(&f->task, f->t.ctx, f->t.op, "opencl", err, sizeof(err))) {
		test_fixture_fini(&f->t);
		cr_skip_test("%s", err);
	}
	f->space = tune_space_new(&f->task);
	cr_assert(f->space);
}

static void fixture_fini(fixture *f)
{
	tune_space_free(f->space);
	tune_task_clear(&f->task);
	test_fixture_fini(&f->t);
}

/* Return the OpenCL device (after the tasks described it). */
static rt_cl_device *open_device(void)
{
	char err[512];
	rt_cl_device *d = rt_cl_open(err, sizeof(err));
	if (!d)
		cr_skip_test("no OpenCL device: %s", err);
	return d;
}

/* Check that "st" replays from its text, fits the device's limits and
 * computes the interpreter's outputs on "dev"; return 0, or 1 with the
 * reason and the trace logged. */
static int check_on_device(fixture *f, rt_cl_device *dev, sch_state *st, const char *what)
{
	char *text = sch_trace_to_text(st->trace), msg[256];
	sch_trace *t = text ? sch_trace_parse(f->t.ctx, "sample", text) : NULL;
	sch_state *again = sch_state_new(f->t.ctx, f->t.op);
	int bad = !t || sch_replay(again, t, "sample") != 0;
	char *text2 = bad ? NULL : sch_trace_to_text(again->trace);
	bad = bad || !text2 || strcmp(text, text2) != 0;
	loop_prog *p = bad ? NULL : sch_program(again);
	if (!p) {
		cr_log_error("%s: does not replay or lower: %s\n%s", what,
			tessel_ctx_error(f->t.ctx)->message, text);
		bad = 1;
	} else if (tune_opencl_check_limits(p, &f->task.gpu, NULL, msg, sizeof(msg))) {
		cr_log_error("%s: past the device's limits: %s\n%s", what, msg, text);
		bad = 1;
	} else {
		test_fixture_clear_outputs(&f->t);
		cg_opencl_kernel k;
		int r = cg_opencl_kernel_build(f->t.ctx, p, dev, &k);
		if (r == 0) {
			r = cg_opencl_kernel_run(f->t.ctx, &k, f->t.data);
			cg_opencl_kernel_free(&k);
		}
		double err = r ? INFINITY : test_fixture_error(&f->t);
		if (!(err < 1e-5)) {
			cr_log_error("%s: error %g on the device (%s)\n%s", what, err,
				r ? tessel_ctx_error(f->t.ctx)->message : "wrong values", text);
			bad = 1;
		}
	}
	loop_prog_free(p);
	sch_state_free(again);
	sch_trace_free(t);
	free(text);
	free(text2);
	return bad;
}

/* Sample "n" candidates of every sketch of "f" and mutate each once;
 * check all on "dev".  Return how many failed; count in "*with" the
 * samples whose trace holds "needle" (may be NULL). */
static int sample_all(fixture *f, rt_cl_device *dev, int n, uint64_t seed,
	const char *needle, int *with)
{
	uint64_t rng = seed;
	int failed = 0;
	for (int k = 0; k < tune_space_num_sketches(f->space); k++)
		for (int i = 0; i < n; i++) {
			char what[512], mutated[540];
			snprintf(what, sizeof(what), "%s, sketch %d (%s), sample %d",
				tessel_op_name(f->t.op), k, tune_space_sketch_name(f->space, k), i);
			snprintf(mutated, sizeof(mutated), "%s, mutated", what);
			sch_state *st = tune_space_sample(f->space, k, &rng);
			if (!st) {
				cr_log_error("%s: no sample: %s", what,
					tessel_ctx_error(f->t.ctx)->message);
				failed++;
				continue;
			}
			failed += check_on_device(f, dev, st, what);
			char *text = sch_trace_to_text(st->trace);
			if (needle && with && text && strstr(text, needle))
				(*with)++;
			free(text);
			sch_state *child = tune_space_mutate(f->space, st->trace, &rng);
			if (child) {
				failed += check_on_device(f, dev, child, mutated);
				sch_state_free(child);
			}
			sch_state_free(st);
		}
	return failed;
}

/* Small attributes for every op of the library, large enough to tile. */
static const struct { const char *name, *spec; } op_sizes[] = {
	{ "matmul", "M=16;N=12;K=10" },
	{ "batch_matmul", "B=2;M=6;N=8;K=4" },
	{ "dense", "batch=4;in_features=6;out_features=8" },
	{ "conv2d", "N=1;C=3;H=6;W=6;F=4;R=3;S=3;padding=1" },
	{ "max_pool2d", "N=1;C=2;H=7;W=7;kernel=3;stride=2;padding=1" },
	{ "avg_pool2d", "N=1;C=2;H=6;W=6;kernel=2" },
	{ "global_avg_pool", "N=2;C=3;H=4;W=3" },
	{ "softmax", "shape=[4,24]" },
	{ "log_softmax", "shape=[3,2,16]" },
	{ "layer_norm", "shape=[4,32]" },
	{ "batch_norm", "shape=[2,3,3,3]" },
	{ "reduce_sum", "shape=[3,4,10];axes=[0,2]" },
	{ "reduce_mean", "shape=[4,20];axes=[1]" },
	{ "reduce_max", "shape=[12,4];axes=[0];keepdims=1" },
	{ "reduce_min", "shape=[3,16]" },
	{ "reduce_prod", "shape=[3,8];axes=[1]" },
	{ "transpose", "shape=[2,3,4];perm=[2,0,1]" },
	{ "reshape", "shape=[4,6];newshape=[3,-1]" },
	{ "pad", "shape=[3,4];pads=[1,0,2,1]" },
	{ "concat", "shape=[5,3];sizes=[2,3];axis=0" },
	{ "softmax_cross_entropy", "N=4;C=12" },
};

/* Return the attributes of the op "name": its entry in op_sizes, two
 * broadcasting shapes for binary ops, a shape for the others. */
static const char *spec_of(const char *name)
{
	static const char *const binary[] = { "add", "sub", "mul", "div", "maximum",
		"minimum", "pow", "equal", "not_equal", "less", "less_equal", "greater",
		"greater_equal" };
	for (size_t i = 0; i < sizeof(op_sizes) / sizeof(*op_sizes); i++)
		if (strcmp(op_sizes[i].name, name) == 0)
			return op_sizes[i].spec;
	for (size_t i = 0; i < sizeof(binary) / sizeof(*binary); i++)
		if (strcmp(binary[i], name) == 0)
			return "a=[2,1,8];b=[4,8]";
	return "shape=[6,10]";
}

Test(sketch_gpu, every_op_of_the_library, .timeout = 600)
{
	need_opencl();
	fixture probe;
	fixture_init(&probe, "matmul", spec_of("matmul"));
	fixture_fini(&probe);
	rt_cl_device *dev = open_device();
	int failed = 0, samples = 0;
	for (int i = 0; i < tessel_ops_count(); i++) {
		const char *name = tessel_ops_name(i);
		fixture f;
		fixture_init(&f, name, spec_of(name));
		failed += sample_all(&f, dev, 1, 1 + (uint64_t)i, NULL, NULL);
		samples += tune_space_num_sketches(f.space);
		fixture_fini(&f);
	}
	cr_log_info("%d ops, %d samples (and their mutations)", tessel_ops_count(), samples);
	cr_expect_eq(failed, 0, "%d GPU samples or mutations fail", failed);
	rt_cl_close(dev);
}

/* Run "n" samples of every sketch of "name" and expect "needle" in at
 * least one trace. */
static void expect_structure(const char *name, const char *spec, int n, const char *needle)
{
	need_opencl();
	fixture f;
	fixture_init(&f, name, spec);
	rt_cl_device *dev = open_device();
	int with = 0;
	cr_expect_eq(sample_all(&f, dev, n, 7, needle, &with), 0);
	cr_expect_gt(with, 0, "no sample of %s holds '%s'", name, needle);
	rt_cl_close(dev);
	fixture_fini(&f);
}

Test(sketch_gpu, matmul_stages_shared_tiles, .timeout = 600)
{
	expect_structure("matmul", "M=32;N=24;K=16", 3, "shared C -> ");
}

Test(sketch_gpu, matmul_accumulates_in_registers, .timeout = 600)
{
	expect_structure("matmul", "M=32;N=24;K=16", 3, "cache_write C local");
}

/* The register accumulator fed by tiles in shared memory (TVM's GPU
 * matmul): the tiles are computed at a loop of C_local. */
Test(sketch_gpu, matmul_feeds_registers_from_shared_tiles, .timeout = 600)
{
	expect_structure("matmul", "M=32;N=24;K=16", 3, "shared C_local -> ");
}

Test(sketch_gpu, conv2d_feeds_registers_from_shared_tiles, .timeout = 600)
{
	expect_structure("conv2d", "N=1;C=4;H=8;W=8;F=8;R=3;S=3;padding=1", 3,
		"shared Y_local -> ");
}

/* Return whether the OpenCL C of "st" copies a vector of 2 or 4 floats
 * at once (codegen/gpu_c.c: a vectorized fetch into shared memory). */
static bool fetches_vectors(fixture *f, sch_state *st)
{
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(f->t.ctx)->message);
	cg_target t = cg_target_opencl();
	cg_gpu_plan plan;
	char *src = cg_print_gpu(p, &t, &plan, f->t.ctx);
	cr_assert(src, "%s", tessel_ctx_error(f->t.ctx)->message);
	bool wide = strstr(src, "float4 *)&") || strstr(src, "float2 *)&");
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	return wide;
}

/* The sketches with shared tiles fetch them as vectors in some samples
 * (tuner/sketch_gpu.c: draw_fetch_lanes), which print as vector copies
 * and compute on the device what the interpreter computes. */
Test(sketch_gpu, shared_tiles_are_fetched_as_vectors, .timeout = 600)
{
	need_opencl();
	fixture f;
	fixture_init(&f, "matmul", "M=64;N=64;K=32");
	rt_cl_device *dev = open_device();
	uint64_t rng = 11;
	int wide = 0, failed = 0, samples = 0;
	for (int k = 0; k < tune_space_num_sketches(f.space); k++) {
		if (!strstr(tune_space_sketch_name(f.space, k), "shared"))
			continue;
		for (int i = 0; i < 6; i++) {
			sch_state *st = tune_space_sample(f.space, k, &rng);
			if (!st) {
				tessel_ctx_clear_error(f.t.ctx);
				continue;
			}
			samples++;
			if (fetches_vectors(&f, st)) {
				wide++;
				failed += check_on_device(&f, dev, st, "vector fetch");
			}
			sch_state_free(st);
		}
	}
	cr_log_info("%d of %d samples with shared tiles fetch vectors", wide, samples);
	cr_expect_gt(wide, 0, "no sample of %d fetches vectors", samples);
	cr_expect_eq(failed, 0);
	rt_cl_close(dev);
	fixture_fini(&f);
}

Test(sketch_gpu, softmax_reduces_across_threads, .timeout = 600)
{
	expect_structure("softmax", "shape=[4,64]", 3, "threadIdx.x");
}

Test(sketch_gpu, sketches_of_matmul_and_softmax)
{
	need_opencl();
	fixture f;
	fixture_init(&f, "matmul", "M=32;N=24;K=16");
	cr_expect_eq(tune_space_num_sketches(f.space), 4);
	cr_expect(strstr(tune_space_sketch_name(f.space, 0), "SSSRRSRS, shared"));
	cr_expect(strstr(tune_space_sketch_name(f.space, 1), "SSSRRSRS, local"));
	cr_expect(strstr(tune_space_sketch_name(f.space, 2), "SSSRRSRS, shared+local"), "%s",
		tune_space_sketch_name(f.space, 2));
	cr_expect(f.task.gpu.max_threads > 0 && f.task.gpu.max_threads <= 1024);
	cr_expect(f.task.gpu.shared_bytes > 0 && f.task.gpu.shared_bytes <= 49152);
	cr_expect(strncmp(f.task.target, "opencl -device=", 15) == 0, "%s", f.task.target);
	fixture_fini(&f);
	fixture_init(&f, "softmax", "shape=[4,64]");
	cr_expect(strstr(tune_space_sketch_name(f.space, 0), "cross-thread"), "%s",
		tune_space_sketch_name(f.space, 0));
	fixture_fini(&f);
}

/* A mutation that computes the register tile at the block loop gives
 * every thread the block's whole tile (128 KiB here; it crashed PoCL):
 * refused before it runs.  No device needed: the limits are given. */
Test(sketch_gpu, private_arrays_past_the_limit_are_refused)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { "M", "N", "K" }, *values[] = { "256", "256", "256" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, keys, values);
	cr_assert(op);
	const tune_gpu_target gpu = { .device = "test", .compute_units = 1, .max_threads = 1024,
		.shared_bytes = 49152 };
	const char *text =
		"cache_write C local -> C_local\n"
		"split C.i 256 -> C.io C.ii\nsplit C.ii 8 -> C.iio C.iii\n"
		"split C.j 128 -> C.jo C.ji\nsplit C.ji 4 -> C.jio C.jii\n"
		"reorder C.io C.jo C.iio C.jio C.iii C.jii\n"
		"fuse C.io C.jo -> C.io_jo\nbind C.io_jo blockIdx.x\n"
		"fuse C.iio C.jio -> C.iio_jio\nbind C.iio_jio threadIdx.x\n";
	char at_block[1024], at_thread[1024], msg[256];
	snprintf(at_block, sizeof(at_block), "%scompute_at C_local C.io_jo\n", text);
	snprintf(at_thread, sizeof(at_thread), "%scompute_at C_local C.iio_jio\n", text);
	const char *traces[2] = { at_block, at_thread };
	for (int i = 0; i < 2; i++) {
		sch_trace *t = sch_trace_parse(ctx, "test", traces[i]);
		sch_state *st = sch_state_new(ctx, op);
		cr_assert(t && sch_replay(st, t, "test") == 0, "%s",
			tessel_ctx_error(ctx)->message);
		loop_prog *p = sch_program(st);
		cr_assert(p);
		int r = tune_opencl_check_limits(p, &gpu, NULL, msg, sizeof(msg));
		if (i == 0) {
			cr_expect_eq(r, -1);
			cr_expect(strstr(msg, "131072 bytes of private arrays per thread"), "%s", msg);
		} else {
			cr_expect_eq(r, 0, "%s", msg);
		}
		loop_prog_free(p);
		sch_state_free(st);
		sch_trace_free(t);
	}
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

/* Return the program of the trace "text" of the matmul "op". */
static loop_prog *program_of(tessel_ctx *ctx, tessel_op *op, const char *text)
{
	sch_trace *t = sch_trace_parse(ctx, "test", text);
	sch_state *st = sch_state_new(ctx, op);
	cr_assert(t && sch_replay(st, t, "test") == 0, "%s", tessel_ctx_error(ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(ctx)->message);
	sch_state_free(st);
	sch_trace_free(t);
	return p;
}

/* A register tile computed at the block loop instead of the innermost
 * thread loop is computed whole by every thread (7 of 16 candidates of
 * one round on an H200, 0.7 to 3.2 s a run against 8.2 ms): the GPU
 * rule finds it; at the thread loop, or in a kernel of one thread, it
 * is each thread's own work. */
Test(sketch_gpu, a_register_tile_at_the_block_loop_repeats_work_per_thread)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { "M", "N", "K" }, *values[] = { "512", "512", "512" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, keys, values);
	cr_assert(op);
	const char *text =
		"cache_write C local -> C_local\n"
		"split C.i 32 -> C.io C.ii\nsplit C.ii 4 -> C.iio C.iii\n"
		"split C.j 16 -> C.jo C.ji\nsplit C.ji 2 -> C.jio C.jii\n"
		"reorder C.io C.jo C.iio C.jio C.iii C.jii\n"
		"fuse C.io C.jo -> C.io_jo\nbind C.io_jo blockIdx.x\n"
		"fuse C.iio C.jio -> C.iio_jio\nbind C.iio_jio threadIdx.x\n";
	char at_block[1024], at_thread[1024];
	snprintf(at_block, sizeof(at_block), "%scompute_at C_local C.io_jo\n", text);
	snprintf(at_thread, sizeof(at_thread), "%scompute_at C_local C.iio_jio\n", text);
	loop_prog *p = program_of(ctx, op, at_block);
	cr_expect(tune_gpu_repeats_work_per_thread(p));
	loop_prog_free(p);
	p = program_of(ctx, op, at_thread);
	cr_expect_not(tune_gpu_repeats_work_per_thread(p));
	loop_prog_free(p);
	p = program_of(ctx, op, "split C.i 32 -> C.io C.ii\nbind C.io blockIdx.x\n");
	cr_expect_not(tune_gpu_repeats_work_per_thread(p), "one thread a block");
	loop_prog_free(p);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

/* An op of the library with its task and search space for sm_90, made
 * without a device and without the fixture's reference. */
typedef struct cuda_space {
	tessel_ctx *ctx;
	tessel_op *op;
	tune_task task;
	tune_space *space;
} cuda_space;

static void cuda_space_init(cuda_space *c, const char *name, const char *spec)
{
	char err[512];
	c->ctx = tessel_ctx_new();
	c->op = test_op_new(c->ctx, name, spec);
	cr_assert_eq(tune_task_init(&c->task, c->ctx, c->op, "cuda:sm_90", err, sizeof(err)),
		0, "%s", err);
	c->space = tune_space_new(&c->task);
	cr_assert(c->space);
}

static void cuda_space_fini(cuda_space *c)
{
	tune_space_free(c->space);
	tune_task_clear(&c->task);
	tessel_op_release(c->op);
	tessel_ctx_free(c->ctx);
}

/* The GPU sketches' own samples never repeat work per thread, for every
 * op of the library and a large matmul and convolution (the rule leaves
 * out mutations, not structures the sketches draw). */
Test(sketch_gpu, samples_do_not_repeat_work_per_thread, .timeout = 600)
{
	int ops = tessel_ops_count(), samples = 0;
	for (int i = 0; i < ops + 2; i++) {
		const char *name = i < ops ? tessel_ops_name(i) : i == ops ? "matmul" : "conv2d";
		const char *spec = i < ops ? spec_of(name) : i == ops ? "M=512;N=512;K=512" :
			"N=1;C=64;H=56;W=56;F=64;R=3;S=3;padding=1";
		cuda_space c;
		cuda_space_init(&c, name, spec);
		uint64_t rng = 5 + (uint64_t)i;
		for (int k = 0; k < tune_space_num_sketches(c.space); k++)
			for (int n = 0; n < 4; n++) {
				sch_state *st = tune_space_sample(c.space, k, &rng);
				loop_prog *p = st ? sch_program(st) : NULL;
				if (p) {
					samples++;
					char *trace = sch_trace_to_text(st->trace);
					cr_expect_not(tune_gpu_repeats_work_per_thread(p),
						"%s, sketch %s:\n%s", name,
						tune_space_sketch_name(c.space, k), trace);
					free(trace);
				}
				loop_prog_free(p);
				sch_state_free(st);
			}
		cuda_space_fini(&c);
	}
	cr_log_info("%d samples", samples);
	cr_expect_gt(samples, 4 * ops);
}

/* The most threads a block of a kernel of "p" has, by the CUDA code
 * generator's plan of its launches. */
static int64_t block_threads(const loop_prog *p, tessel_ctx *ctx)
{
	cg_target t = cg_target_cuda(90);
	cg_gpu_plan plan;
	free(cg_print_gpu(p, &t, &plan, ctx));
	int64_t most = 0;
	for (int k = 0; k < plan.nkernels; k++) {
		const int64_t *b = plan.kernels[k].block;
		if (b[0] * b[1] * b[2] > most)
			most = b[0] * b[1] * b[2];
	}
	cg_gpu_plan_free(&plan);
	return most;
}

/* The tiled sketches of a matmul 4096^3 draw blocks of whole warps (32
 * threads): 16-thread blocks leave half of each warp idle. */
Test(sketch_gpu, tiled_samples_fill_whole_warps, .timeout = 300)
{
	cuda_space c;
	cuda_space_init(&c, "matmul", "M=4096;N=4096;K=4096");
	uint64_t rng = 3;
	int samples = 0, warps = 0;
	for (int k = 0; k < tune_space_num_sketches(c.space); k++) {
		if (!strstr(tune_space_sketch_name(c.space, k), "SSSRRSRS"))
			continue;
		for (int n = 0; n < 30; n++) {
			sch_state *st = tune_space_sample(c.space, k, &rng);
			loop_prog *p = st ? sch_program(st) : NULL;
			if (p) {
				int64_t threads = block_threads(p, c.ctx);
				samples++;
				warps += threads % 32 == 0;
			}
			loop_prog_free(p);
			sch_state_free(st);
		}
	}
	cr_log_info("%d of %d tiled samples of whole warps", warps, samples);
	cr_expect_geq(samples, 60);
	cr_expect_geq(warps * 10, samples * 9, "%d of %d samples of whole warps", warps,
		samples);
	cuda_space_fini(&c);
}

/* Return the printed program of "trace" replayed on a fresh op "name"
 * "spec" in a fresh context (nothing remembered from other traces). */
static char *fresh_program(const char *name, const char *spec, const char *trace)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = test_op_new(ctx, name, spec);
	loop_prog *p = program_of(ctx, op, trace);
	char *text = loop_prog_print(p);
	loop_prog_free(p);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
	return text;
}

/* Regions bounded once are remembered per context (ir/memo.h): samples
 * and mutations of the GPU sketches, made one after the other in one
 * context, lower to the programs a fresh context makes of their traces. */
Test(sketch_gpu, remembered_regions_lower_as_fresh_ones, .timeout = 600)
{
	static const struct { const char *name, *spec; } ops[] = {
		{ "matmul", "M=4096;N=4096;K=4096" },
		{ "conv2d", "N=1;C=64;H=56;W=56;F=64;R=3;S=3;padding=1" },
	};
	int checked = 0;
	for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++) {
		cuda_space c;
		cuda_space_init(&c, ops[o].name, ops[o].spec);
		uint64_t rng = 21 + o;
		for (int i = 0; i < 12; i++) {
			sch_state *st = tune_space_sample(c.space, -1, &rng);
			sch_state *child = st ? tune_space_mutate(c.space, st->trace, &rng) : NULL;
			sch_state *both[] = { st, child };
			for (int b = 0; b < 2; b++) {
				loop_prog *p = both[b] ? sch_program(both[b]) : NULL;
				if (!p)
					continue;
				char *warm = loop_prog_print(p);
				char *trace = sch_trace_to_text(both[b]->trace);
				char *fresh = fresh_program(ops[o].name, ops[o].spec, trace);
				cr_expect_str_eq(warm, fresh, "%s:\n%s", ops[o].name, trace);
				checked++;
				free(warm);
				free(fresh);
				free(trace);
				loop_prog_free(p);
			}
			sch_state_free(child);
			sch_state_free(st);
		}
		cuda_space_fini(&c);
	}
	cr_expect_geq(checked, 30, "%d programs", checked);
}

/* The footprints of shared stages remembered while a sample was made
 * (schedule/shared.c) are what ISL computes again on the final state,
 * over samples and mutations of every sketch of ops with shared stages,
 * on a CUDA task (no device needed, so this runs in the sanitized build
 * too). */
Test(sketch_gpu, remembered_shared_footprints_are_computed_again_alike, .timeout = 600)
{
	static const struct { const char *name, *spec; } ops[] = {
		{ "matmul", "M=64;N=48;K=32" },
		{ "conv2d", "N=1;C=4;H=8;W=8;F=8;R=3;S=3;padding=1" },
	};
	int held = 0, checked = 0;
	for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++) {
		test_fixture t;
		test_fixture_init(&t, ops[o].name, ops[o].spec);
		tune_task task;
		char err[512];
		cr_assert_eq(tune_task_init(&task, t.ctx, t.op, "cuda:sm_90", err, sizeof(err)), 0,
			"%s", err);
		tune_space *space = tune_space_new(&task);
		cr_assert(space);
		uint64_t rng = 11 + o;
		for (int k = 0; k < tune_space_num_sketches(space); k++)
			for (int i = 0; i < 3; i++) {
				sch_state *st = tune_space_sample(space, k, &rng);
				sch_state *child = st ? tune_space_mutate(space, st->trace, &rng) : NULL;
				sch_state *both[] = { st, child };
				for (int b = 0; b < 2; b++) {
					if (!both[b])
						continue;
					checked++;
					cr_expect_eq(sch_shared_memo_check(both[b], &held), 0,
						"%s, sketch %d, sample %d%s", ops[o].name, k, i,
						b ? ", mutated" : "");
				}
				sch_state_free(child);
				sch_state_free(st);
			}
		tune_space_free(space);
		tune_task_clear(&task);
		test_fixture_fini(&t);
	}
	cr_expect_gt(held, 12, "%d footprints held in %d states", held, checked);
	cr_log_info("%d remembered footprints in %d states computed again alike", held, checked);
}
