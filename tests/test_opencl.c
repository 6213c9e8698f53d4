/* GPU-style schedules on OpenCL: the bind primitive's rules, the OpenCL C
 * dialect and its launch plans, and kernels run on the OpenCL device
 * (PoCL on the CPU) against the interpreter: random GPU traces over
 * several ops, and the default GPU schedule of every op of the library.
 *
 * Tests that need a device skip, saying why, where there is none, and
 * in the sanitized build (PoCL's LLVM and threads are not built with
 * ASan; see docs/gpu.md).  POCL_CACHE_DIR defaults to the build tree, so
 * that reruns skip PoCL's compiles.  TESSEL_OPENCL_FUZZ_SCALE multiplies
 * the number of random traces (0 skips them), TESSEL_FUZZ_SEED shifts
 * their seeds. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen/c_printer.h"
#include "codegen/opencl_kernel.h"
#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "runtime/opencl.h"
#include "schedule/gpu_default.h"
#include "schedule/primitives.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tests/support.h"
#include "tuner/measure.h"
#include "tuner/task.h"

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

/* Return the OpenCL device, or skip the test saying why there is none. */
static rt_cl_device *open_device(void)
{
	char err[512];
	if (SANITIZED && !getenv("TESSEL_OPENCL_UNDER_ASAN"))
		cr_skip_test("OpenCL tests skip in the sanitized build (PoCL is not "
			"built with ASan; TESSEL_OPENCL_UNDER_ASAN=1 runs them)");
	setenv("POCL_CACHE_DIR", TESSEL_BUILD_DIR "/pocl-cache", 0);
	rt_cl_device *d = rt_cl_open(err, sizeof(err));
	if (!d)
		cr_skip_test("no OpenCL device: %s", err);
	return d;
}

/* Return whether "s" holds a barrier. */
static bool has_barrier(const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR: return has_barrier(s->u.for_.body);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (has_barrier(s->u.seq.items[i]))
				return true;
		return false;
	case LS_IF:
		return has_barrier(s->u.if_.then_) ||
		       (s->u.if_.else_ && has_barrier(s->u.if_.else_));
	case LS_ALLOC: return has_barrier(s->u.alloc.body);
	case LS_BARRIER: return true;
	default: return false;
	}
}

/* Return whether "s" holds a barrier inside a loop bound to a thread
 * index (a shared tile of a stage computed inside the thread loops);
 * "inside" says whether "s" lies in one. */
static bool has_barrier_in_threads(const loop_stmt *s, bool inside)
{
	switch (s->kind) {
	case LS_FOR:
		return has_barrier_in_threads(s->u.for_.body, inside ||
			(s->u.for_.kind >= LOOP_THREAD_X && s->u.for_.kind <= LOOP_THREAD_Z));
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (has_barrier_in_threads(s->u.seq.items[i], inside))
				return true;
		return false;
	case LS_IF:
		return has_barrier_in_threads(s->u.if_.then_, inside) ||
		       (s->u.if_.else_ && has_barrier_in_threads(s->u.if_.else_, inside));
	case LS_ALLOC: return has_barrier_in_threads(s->u.alloc.body, inside);
	case LS_BARRIER: return inside;
	default: return false;
	}
}

/* Programs with barriers inside thread loops that the random traces ran
 * (all tests of this file). */
static int fenced_in_threads;

/* Lower "st", run it on "dev" and return the error against the
 * interpreter (INFINITY when it did not run, with the reason logged);
 * count in "*fenced" (when not NULL) a program with barriers, and in
 * fenced_in_threads one with barriers inside thread loops. */
static double run_on_device_counting(test_fixture *f, rt_cl_device *dev, sch_state *st,
	int *fenced)
{
	loop_prog *p = sch_program(st);
	if (p && fenced && p->body) {
		*fenced += has_barrier(p->body);
		fenced_in_threads += has_barrier_in_threads(p->body, false);
	}
	cg_opencl_kernel k;
	test_fixture_clear_outputs(f);
	int r = p ? cg_opencl_kernel_build(f->ctx, p, dev, &k) : -1;
	if (r == 0) {
		r = cg_opencl_kernel_run(f->ctx, &k, f->data);
		cg_opencl_kernel_free(&k);
	}
	if (r)
		cr_log_error("%s", tessel_ctx_error(f->ctx)->message);
	loop_prog_free(p);
	return r ? INFINITY : test_fixture_error(f);
}

static double run_on_device(test_fixture *f, rt_cl_device *dev, sch_state *st)
{
	return run_on_device_counting(f, dev, st, NULL);
}

/* Return the scaled count of random traces. */
static int scaled(int count)
{
	const char *scale = getenv("TESSEL_OPENCL_FUZZ_SCALE");
	return scale ? count * atoi(scale) : count;
}

/* Run "count" random GPU traces of "f" on "dev"; return how many failed
 * (with their traces logged), count in "*bound" those that bind and in
 * "*fenced" those whose programs have shared buffers and barriers. */
static int fuzz(test_fixture *f, rt_cl_device *dev, const char *what, int count,
	uint64_t seed, int *bound, int *fenced)
{
	const char *shift = getenv("TESSEL_FUZZ_SEED");
	if (shift)
		seed += 1000 * (uint64_t)strtoull(shift, NULL, 10);
	int failed = 0;
	for (int c = 0; c < count; c++) {
		sch_state *st = sch_state_new(f->ctx, f->op);
		cr_assert(st);
		sch_random_gpu_schedule(st, seed * 7919 + (uint64_t)c, 12);
		char *t = sch_trace_to_text(st->trace);
		*bound += strstr(t, "bind ") != NULL;
		double err = run_on_device_counting(f, dev, st, fenced);
		if (err > 1e-5) {
			cr_log_error("%s: random GPU schedule %d (seed %llu) gives error %g:\n%s",
				what, c, (unsigned long long)seed, err, t);
			failed++;
		}
		free(t);
		sch_state_free(st);
	}
	return failed;
}

#define FUZZ_CASE(test, opname, count, spec)                                  \
	Test(opencl_random, test, .timeout = 600)                             \
	{                                                                     \
		rt_cl_device *dev = open_device();                            \
		test_fixture f;                                                    \
		int bound = 0, fenced = 0, n = scaled(count);                 \
		test_fixture_init(&f, opname, spec);                               \
		fenced_in_threads = 0;                                        \
		cr_expect_eq(fuzz(&f, dev, #test, n, __LINE__, &bound,        \
			&fenced), 0);                                         \
		cr_expect(bound * 3 >= n, "%s: only %d of %d traces bind",    \
			#test, bound, n);                                     \
		cr_log_info("%s: %d of %d traces bind, %d use shared "        \
			"memory with barriers, %d of them inside thread loops",  \
			#test, bound, n, fenced, fenced_in_threads);          \
		cr_expect(fenced * 8 >= n, "%s: only %d of %d traces use "    \
			"shared memory", #test, fenced, n);                   \
		test_fixture_fini(&f);                                             \
		rt_cl_close(dev);                                             \
	}

/* 108 traces in all. */
FUZZ_CASE(matmul, "matmul", 24, "M=12;N=10;K=7")
FUZZ_CASE(conv2d, "conv2d", 16, "N=1;C=3;H=6;W=5;F=4;R=3;S=3;padding=1")
FUZZ_CASE(softmax, "softmax", 16, "shape=[5, 7]")
FUZZ_CASE(layer_norm, "layer_norm", 12, "shape=[4, 9]")
FUZZ_CASE(add_broadcast, "add", 12, "a=[2, 1, 3];b=[4, 3]")
FUZZ_CASE(reduce_sum, "reduce_sum", 10, "shape=[3, 4, 5];axes=[0, 2]")
FUZZ_CASE(max_pool2d, "max_pool2d", 10, "N=1;C=2;H=7;W=7;kernel=3;stride=2;padding=1")
FUZZ_CASE(gelu, "gelu", 8, "shape=[6, 5]")

Test(opencl_default, every_op_of_the_library, .timeout = 600)
{
	rt_cl_device *dev = open_device();
	int failed = 0;
	for (int i = 0; i < tessel_ops_count(); i++) {
		const char *name = tessel_ops_name(i);
		test_fixture f;
		test_fixture_init(&f, name, test_library_spec(name));
		sch_state *st = sch_state_new(f.ctx, f.op);
		cr_assert(st);
		if (sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS)) {
			cr_log_error("%s: %s", name, tessel_ctx_error(f.ctx)->message);
			failed++;
		} else {
			double err = run_on_device(&f, dev, st);
			if (err > 1e-5) {
				cr_log_error("%s: the default GPU schedule gives error %g", name, err);
				failed++;
			}
		}
		sch_state_free(st);
		test_fixture_fini(&f);
	}
	cr_expect_eq(failed, 0, "%d ops fail under the default GPU schedule", failed);
	rt_cl_close(dev);
}

/* ---- bind's rules (no device needed) ------------------------------------ */

/* Apply the trace "text" to a fresh schedule of "f"; the last step must be
 * refused with a message containing "want", leaving the trace and the
 * program as the steps before it made them. */
static void expect_refused(test_fixture *f, const char *text, const char *want)
{
	sch_trace *t = sch_trace_parse(f->ctx, "test", text);
	cr_assert(t);
	sch_state *st = sch_state_new(f->ctx, f->op);
	for (int i = 0; i + 1 < t->nsteps; i++)
		cr_assert_eq(sch_apply_step(st, &t->steps[i]), 0, "step %d of %s: %s", i + 1,
			text, tessel_ctx_error(f->ctx)->message);
	char *before = sch_trace_to_text(st->trace);
	loop_prog *p = sch_program(st);
	char *program = loop_prog_print(p);
	cr_assert_neq(sch_apply_step(st, &t->steps[t->nsteps - 1]), 0, "%s was accepted", text);
	const char *msg = tessel_ctx_error(f->ctx)->message;
	cr_expect(strstr(msg, want), "refusal of %s: '%s' lacks '%s'", text, msg, want);
	char *after = sch_trace_to_text(st->trace);
	loop_prog *q = sch_program(st);
	char *program_after = loop_prog_print(q);
	cr_expect_str_eq(after, before);
	cr_expect_str_eq(program_after, program);
	free(before);
	free(after);
	free(program);
	free(program_after);
	loop_prog_free(p);
	loop_prog_free(q);
	sch_trace_free(t);
	sch_state_free(st);
}

Test(bind, refusals)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	expect_refused(&f, "bind C.k blockIdx.x\n", "only threadIdx can bind one");
	expect_refused(&f, "bind C.i blockIdx.w\n", "unknown index 'blockIdx.w'");
	expect_refused(&f, "bind C.i threadIdx.x\nbind C.j blockIdx.x\n",
		"threadIdx loops go inside blockIdx loops");
	expect_refused(&f, "bind C.i blockIdx.x\nbind C.j blockIdx.x\n",
		"C.i is already bound to blockIdx.x");
	expect_refused(&f, "split C.k 4 -> C.ko C.ki\nreorder C.ki C.i\n"
		"bind C.ki threadIdx.x\n", "would have a spatial loop inside it (C.j)");
	expect_refused(&f, "bind C.k threadIdx.x\nbind C.i threadIdx.y\n",
		"would have a thread loop outside it (C.i)");
	expect_refused(&f, "bind C.k threadIdx.x\nsplit C.i 4\nreorder C.k C.io\n",
		"would have a spatial loop inside it");
	expect_refused(&f, "parallel C.i\nbind C.i blockIdx.x\n", "already parallel");
	expect_refused(&f, "bind C.nope blockIdx.x\n", "nope");
	expect_refused(&f, "bind C.i blockIdx.x\nbind C.j threadIdx.x\n"
		"reorder C.j C.i\n", "threadIdx loops go inside blockIdx loops");
	test_fixture_fini(&f);
}

Test(bind, refusals_across_stages)
{
	test_fixture f;
	test_fixture_init(&f, "softmax", "shape=[64, 32]");
	expect_refused(&f, "bind Y.i threadIdx.x\nbind Y.j threadIdx.y\n",
		"2048 threads per block is more than 1024");
	expect_refused(&f, "bind Max.i blockIdx.x\ncompute_at Max E.i\n",
		"'Max' has loops bound to GPU indices");
	expect_refused(&f, "compute_at Max E.i\nbind Max.i blockIdx.x\n",
		"only loops of stages at the root, and threadIdx for stages in shared memory, can be bound");
	test_fixture_fini(&f);
}

Test(bind, reverse_compute_at_outside_a_bound_loop)
{
	test_fixture f;
	test_fixture_init(&f, "dense", "batch=8;in_features=6;out_features=4");
	expect_refused(&f, "bind Z.j threadIdx.x\nreverse_compute_at Y Z.i\n",
		"other blocks or threads write");
	expect_refused(&f, "reverse_compute_at Y Z.i\nbind Z.j threadIdx.x\n",
		"'Y' is computed after Z.i, outside the bound loop Z.j");
	test_fixture_fini(&f);
}

Test(bind, trace_round_trip_and_lowering)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	const char *text = "split C.i 4 -> C.io C.ii\nbind C.io blockIdx.x\n"
		"bind C.ii threadIdx.x\nbind C.j threadIdx.y\n";
	sch_trace *t = sch_trace_parse(f.ctx, "test", text);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_replay(st, t, "test"), 0, "%s", tessel_ctx_error(f.ctx)->message);
	char *again = sch_trace_to_text(st->trace);
	cr_expect_str_eq(again, text);
	char *json = sch_trace_to_json(st->trace);
	sch_trace *back = sch_trace_parse_json(f.ctx, "json", json);
	cr_assert(back);
	char *text2 = sch_trace_to_text(back);
	cr_expect_str_eq(text2, text);
	loop_prog *p = sch_program(st);
	char *printed = loop_prog_print(p);
	cr_expect(strstr(printed, "for io in 0..4 blockIdx.x"), "%s", printed);
	cr_expect(strstr(printed, "for j in 0..12 threadIdx.y"), "%s", printed);
	cr_expect(!cg_print_c(p, NULL, f.ctx), "CPU C accepted a bound loop");
	cr_expect(strstr(tessel_ctx_error(f.ctx)->message, "cannot run on the CPU"), "%s",
		tessel_ctx_error(f.ctx)->message);
	cr_expect_eq(loop_eval(f.ctx, p, f.args), 0);
	cr_expect_lt(test_fixture_error(&f), 1e-5);
	free(printed);
	free(again);
	free(json);
	free(text2);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_trace_free(back);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* ---- the dialect and its plans (no device needed) ----------------------- */

/* Print "f"'s program under "st" as OpenCL C into "*src" with "plan". */
static loop_prog *print_opencl(test_fixture *f, sch_state *st, char **src, cg_gpu_plan *plan)
{
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(f->ctx)->message);
	cg_target t = cg_target_opencl();
	*src = cg_print_gpu(p, &t, plan, f->ctx);
	cr_assert(*src, "%s", tessel_ctx_error(f->ctx)->message);
	return p;
}

Test(opencl_c, launch_plan_of_a_bound_matmul)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	sch_trace *t = sch_trace_parse(f.ctx, "test", "split C.i 4 -> C.io C.ii\n"
		"bind C.io blockIdx.x\nbind C.ii threadIdx.x\nbind C.j threadIdx.y\n");
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_replay(st, t, "test"), 0);
	char *src;
	cg_gpu_plan plan;
	loop_prog *p = print_opencl(&f, st, &src, &plan);
	cr_assert_eq(plan.nkernels, 1);
	cr_expect_eq(plan.nworkspaces, 0);
	cr_expect_str_eq(plan.kernels[0].name, "matmul");
	int64_t grid[3] = { 4, 1, 1 }, block[3] = { 4, 12, 1 };
	for (int d = 0; d < 3; d++) {
		cr_expect_eq(plan.kernels[0].grid[d], grid[d], "grid[%d]", d);
		cr_expect_eq(plan.kernels[0].block[d], block[d], "block[%d]", d);
	}
	cr_expect(strstr(src, "__kernel void matmul("), "%s", src);
	cr_expect(strstr(src, "__global const float *restrict A"), "%s", src);
	cr_expect(strstr(src, "int64_t io = (int64_t)get_group_id(0);"), "%s", src);
	cr_expect(strstr(src, "int64_t j = (int64_t)get_local_id(1);"), "%s", src);
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	test_fixture_fini(&f);
}

Test(opencl_c, one_kernel_per_root_stage_with_workspaces)
{
	test_fixture f;
	test_fixture_init(&f, "softmax", "shape=[4, 6]");
	sch_state *st = sch_state_new(f.ctx, f.op);
	int roots = st->nstages;
	cr_assert_eq(sch_gpu_default(st, 64), 0);
	char *src;
	cg_gpu_plan plan;
	loop_prog *p = print_opencl(&f, st, &src, &plan);
	cr_expect_geq(plan.nkernels, roots);
	cr_expect_eq(plan.nworkspaces, roots - 1);
	for (int k = 0; k < plan.nkernels; k++)
		cr_expect(strstr(src, plan.kernels[k].name), "kernel %s missing", plan.kernels[k].name);
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

Test(opencl_c, refuses_f16)
{
	test_fixture f;
	test_fixture_init(&f, "relu", "shape=[3, 5];dtype=f16");
	sch_state *st = sch_state_new(f.ctx, f.op);
	loop_prog *p = sch_program(st);
	cg_target t = cg_target_opencl();
	cr_expect(!cg_print_c(p, &t, f.ctx));
	cr_expect(strstr(tessel_ctx_error(f.ctx)->message, "f16 and bf16 are not supported"),
		"%s", tessel_ctx_error(f.ctx)->message);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* ---- the device ------------------------------------------------------------ */

Test(opencl_device, build_errors_show_the_log)
{
	char err[4096];
	rt_cl_device *dev = open_device();
	rt_cl_program *p = rt_cl_build(dev, "__kernel void k(__global float *x) { x[0] = y; }",
		err, sizeof(err));
	cr_expect(!p);
	cr_expect(strstr(err, "clBuildProgram: CL_BUILD_PROGRAM_FAILURE"), "%s", err);
	cr_expect(strstr(err, "y"), "no build log: %s", err);
	rt_cl_close(dev);
}

Test(opencl_device, launch_refuses_blocks_beyond_the_device)
{
	char err[1024];
	rt_cl_device *dev = open_device();
	rt_cl_program *p = rt_cl_build(dev, "__kernel void k(__global float *x) { x[0] = 1.0f; }",
		err, sizeof(err));
	cr_assert(p, "%s", err);
	rt_cl_buffer *b = rt_cl_alloc(dev, 4, err, sizeof(err));
	cr_assert(b, "%s", err);
	int64_t grid[3] = { 1, 1, 1 }, block[3] = { rt_cl_max_threads(dev) + 1, 1, 1 };
	cr_expect_neq(rt_cl_launch(p, "k", 1, &b, grid, block, err, sizeof(err)), 0);
	cr_expect(strstr(err, "CL_DEVICE_MAX_WORK_GROUP_SIZE"), "%s", err);
	block[0] = 1;
	cr_expect_eq(rt_cl_launch(p, "k", 1, &b, grid, block, err, sizeof(err)), 0, "%s", err);
	float x = 0;
	cr_expect_eq(rt_cl_finish(dev, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(rt_cl_read(b, &x, 4, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(x, 1.0f);
	rt_cl_free(b);
	rt_cl_program_free(p);
	rt_cl_close(dev);
}

/* ---- shared memory ----------------------------------------------------------- */

/* Tiles of A (rows padded to 8k + 1) and B in shared memory per step of
 * ko, fetched by the 8 x 8 threads of a block (tests/sched/shared_matmul). */
static const char shared_matmul[] =
	"tile C.i C.j 8 8 -> C.io C.jo C.ii C.ji\n"
	"split C.k 6 -> C.ko C.ki\n"
	"reorder C.ko C.ii C.ji C.ki\n"
	"bind C.io blockIdx.y\nbind C.jo blockIdx.x\n"
	"bind C.ii threadIdx.y\nbind C.ji threadIdx.x\n"
	"cache_read A shared C\ncache_read B shared C\n"
	"compute_at A_shared C.ko\ncompute_at B_shared C.ko\n"
	"fuse A_shared.ax0 A_shared.ax1 -> A_shared.f\n"
	"split A_shared.f 8 -> A_shared.fo A_shared.fi\n"
	"split A_shared.fo 8 -> A_shared.fy A_shared.ty\n"
	"bind A_shared.ty threadIdx.y\nbind A_shared.fi threadIdx.x\n"
	"storage_align A_shared.ax0 8 1\n"
	"split B_shared.ax1 8 -> B_shared.o B_shared.t\n"
	"bind B_shared.t threadIdx.x\n";

Test(opencl_shared, tiled_matmul_source_plan_and_device)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=64;N=48;K=30");
	sch_trace *t = sch_trace_parse(f.ctx, "test", shared_matmul);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_replay(st, t, "test"), 0, "%s", tessel_ctx_error(f.ctx)->message);
	char *src;
	cg_gpu_plan plan;
	loop_prog *p = print_opencl(&f, st, &src, &plan);
	cr_expect(strstr(src, "\t__local __attribute__((aligned(16))) float A_shared[69];\n"
		"\t__local __attribute__((aligned(16))) float B_shared[48];\n"),
		"%s", src);
	cr_expect(strstr(src, "barrier(CLK_LOCAL_MEM_FENCE"), "%s", src);
	cr_expect(strstr(src, "A_shared[(ty * 8 + fi) / 6 * 9 + (ty * 8 + fi) % 6]"), "%s", src);
	cr_assert_eq(plan.nkernels, 1);
	cr_expect_eq(plan.kernels[0].shared_bytes, 69 * 4 + 48 * 4);
	cr_expect_eq(plan.kernels[0].block[0], 8);
	cr_expect_eq(plan.kernels[0].block[1], 8);
	rt_cl_device *dev = open_device();
	cr_expect_lt(run_on_device(&f, dev, st), 1e-5);
	cg_opencl_kernel k;
	cr_assert_eq(cg_opencl_kernel_build(f.ctx, p, dev, &k), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	k.plan.kernels[0].shared_bytes = INT64_MAX;
	cr_expect_neq(cg_opencl_kernel_run(f.ctx, &k, f.data), 0);
	cr_expect(strstr(tessel_ctx_error(f.ctx)->message, "CL_DEVICE_LOCAL_MEM_SIZE"), "%s",
		tessel_ctx_error(f.ctx)->message);
	cg_opencl_kernel_free(&k);
	rt_cl_close(dev);
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	test_fixture_fini(&f);
}

static double run_trace(rt_cl_device *dev, const char *name, const char *spec,
	const char *text);

/* A 2 x 2 register tile per thread (C_local at C's thread loop) fed by
 * tiles of A and B in shared memory at C_local.ko, fetched inside C's
 * thread loops by all the threads of the block
 * (tests/sched/shared_local_matmul). */
#define SHARED_LOCAL_TILES \
	"cache_write C local -> C_local\n" \
	"split C.i 16 -> C.io C.ir\nsplit C.j 16 -> C.jo C.jr\n" \
	"split C.ir 2 -> C.ty C.ii\nsplit C.jr 2 -> C.tx C.ji\n" \
	"reorder C.io C.jo C.ty C.tx C.ii C.ji\n" \
	"bind C.io blockIdx.y\nbind C.jo blockIdx.x\n" \
	"bind C.ty threadIdx.y\nbind C.tx threadIdx.x\n"
static const char shared_local_matmul[] =
	SHARED_LOCAL_TILES
	"compute_at C_local C.tx\n"
	"split C_local.k 6 -> C_local.ko C_local.ki\n"
	"reorder C_local.ko C_local.ki C_local.i C_local.j\n"
	"cache_read A shared C_local -> A_shared\ncache_read B shared C_local -> B_shared\n"
	"compute_at A_shared C_local.ko\ncompute_at B_shared C_local.ko\n"
	"fuse A_shared.ax0 A_shared.ax1 -> A_shared.f\n"
	"split A_shared.f 8 -> A_shared.fo A_shared.fi\n"
	"split A_shared.fo 8 -> A_shared.fy A_shared.ty\n"
	"bind A_shared.ty threadIdx.y\nbind A_shared.fi threadIdx.x\n"
	"fuse B_shared.ax0 B_shared.ax1 -> B_shared.f\n"
	"split B_shared.f 8 -> B_shared.fo B_shared.fi\n"
	"bind B_shared.fi threadIdx.x\n";

Test(opencl_shared, register_tile_fed_by_shared_tiles)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=64;N=48;K=30");
	sch_trace *t = sch_trace_parse(f.ctx, "test", shared_local_matmul);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_replay(st, t, "test"), 0, "%s", tessel_ctx_error(f.ctx)->message);
	char *src;
	cg_gpu_plan plan;
	loop_prog *p = print_opencl(&f, st, &src, &plan);
	cr_expect(strstr(src, "\t__local __attribute__((aligned(16))) float A_shared[96];\n"
		"\t__local __attribute__((aligned(16))) float B_shared[96];\n"),
		"%s", src);
	cr_expect(strstr(src, "int64_t tx = (int64_t)get_local_id(0);"), "%s", src);
	cr_expect(strstr(src, "int64_t fi = (int64_t)get_local_id(0);"), "%s", src);
	cr_expect(strstr(src, "float C_local[4];"), "%s", src);
	cr_expect(strstr(src, "C_local[i * 2 + j] += A_shared[ty * 12 + i * 6 + ki] * "
		"B_shared[ki * 16 + tx * 2 + j];"), "%s", src);
	cr_assert_eq(plan.nkernels, 1);
	cr_expect_eq(plan.kernels[0].shared_bytes, 96 * 4 * 2);
	cr_expect_eq(plan.kernels[0].block[0], 8);
	cr_expect_eq(plan.kernels[0].block[1], 8);
	rt_cl_device *dev = open_device();
	cr_expect_lt(run_on_device(&f, dev, st), 1e-5);
	rt_cl_close(dev);
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* Variants on the device: a fetch by fewer threads than the block (the
 * kernel guards it, the barriers stay outside the guard), the accumulator
 * at the outer thread loop (each row of threads computes its rows, the
 * tile is the union over the rows), a non-dividing tile, a conv2d. */
Test(opencl_shared, register_tile_variants_on_the_device, .timeout = 300)
{
	rt_cl_device *dev = open_device();
	cr_expect_lt(run_trace(dev, "matmul", "M=64;N=48;K=30", SHARED_LOCAL_TILES
		"compute_at C_local C.tx\n"
		"split C_local.k 5 -> C_local.ko C_local.ki\n"
		"cache_read A shared C_local -> A_shared\n"
		"compute_at A_shared C_local.ko\n"
		"split A_shared.ax1 4 -> A_shared.o A_shared.t\n"
		"bind A_shared.t threadIdx.x\n"), 1e-5);
	cr_expect_lt(run_trace(dev, "matmul", "M=64;N=48;K=30", SHARED_LOCAL_TILES
		"compute_at C_local C.ty\n"
		"split C_local.k 6 -> C_local.ko C_local.ki\n"
		"cache_read B shared C_local -> B_shared\n"
		"compute_at B_shared C_local.ko\n"
		"split B_shared.ax1 8 -> B_shared.o B_shared.t\n"
		"bind B_shared.t threadIdx.x\n"), 1e-5);
	cr_expect_lt(run_trace(dev, "matmul", "M=50;N=45;K=30",
		"cache_write C local -> C_local\n"
		"split C.i 16 -> C.io C.ir\nsplit C.j 16 -> C.jo C.jr\n"
		"split C.ir 2 -> C.ty C.ii\nsplit C.jr 2 -> C.tx C.ji\n"
		"reorder C.io C.jo C.ty C.tx C.ii C.ji\n"
		"bind C.io blockIdx.y\nbind C.jo blockIdx.x\n"
		"bind C.ty threadIdx.y\nbind C.tx threadIdx.x\n"
		"compute_at C_local C.tx\n"
		"split C_local.k 7 -> C_local.ko C_local.ki\n"
		"cache_read A shared C_local -> A_shared\ncache_read B shared C_local -> B_shared\n"
		"compute_at A_shared C_local.ko\ncompute_at B_shared C_local.ko\n"
		"fuse A_shared.ax0 A_shared.ax1 -> A_shared.f\n"
		"split A_shared.f 8 -> A_shared.fo A_shared.fi\n"
		"bind A_shared.fi threadIdx.x\n"
		"fuse B_shared.ax0 B_shared.ax1 -> B_shared.f\n"
		"split B_shared.f 8 -> B_shared.fo B_shared.fi\n"
		"split B_shared.fo 8 -> B_shared.fy B_shared.ty\n"
		"bind B_shared.ty threadIdx.y\nbind B_shared.fi threadIdx.x\n"), 1e-5);
	rt_cl_close(dev);
}

Test(opencl_shared, refusals_leave_the_state_unchanged)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	expect_refused(&f, "cache_read A shared C\ncompute_at A_shared C.i\n",
		"not inside a loop bound to blockIdx");
	expect_refused(&f, "cache_read A shared C\nbind C.i blockIdx.x\nbind C.j threadIdx.x\n"
		"compute_at A_shared C.j\n", "inside the thread loop C.j");
	expect_refused(&f, "cache_read A shared C\nbind C.i blockIdx.x\n"
		"compute_at A_shared C.j\nbind C.j threadIdx.x\n", "inside the thread loop C.j");
	expect_refused(&f, "cache_read A shared C\nbind C.i blockIdx.x\nbind C.j threadIdx.x\n"
		"compute_at A_shared C.i\nsplit A_shared.ax1 4 -> A_shared.o A_shared.t\n"
		"bind A_shared.t threadIdx.x\nsplit C.j 4\n", "which 'C' does not bind");
	expect_refused(&f, "split C.i 16 -> C.io C.ii\nbind C.io blockIdx.x\n"
		"bind C.ii threadIdx.y\nbind C.j threadIdx.x\ncache_read A shared C\n"
		"compute_at A_shared C.io\nfuse A_shared.ax0 A_shared.ax1 -> A_shared.f\n"
		"split A_shared.f 128 -> A_shared.fo A_shared.fi\nbind A_shared.fi threadIdx.x\n",
		"128 x 16 x 1 threads per block, more than 1024");
	expect_refused(&f, "cache_read A shared C\nbind C.i blockIdx.x\n"
		"compute_at A_shared C.j\ncompute_inline A_shared\nstorage_align A_shared.ax0 4 1\n",
		"inlined");
	expect_refused(&f, "cache_write C local -> C_local\nbind C.i blockIdx.x\n"
		"split C.j 4 -> C.jo C.ji\nbind C.ji threadIdx.x\ncompute_at C_local C.ji\n"
		"cache_read A shared C_local -> A_shared\ncompute_at A_shared C_local.k\n"
		"split A_shared.ax1 8 -> A_shared.o A_shared.t\nbind A_shared.t threadIdx.x\n",
		"shared stage 'A_shared' is computed inside C.ji, bound to threadIdx.x with 4 "
		"iterations, but the block has 8 threads along it");
	expect_refused(&f, "cache_write C local -> C_local\ncache_read A local C_local\n"
		"cache_read A shared A_local\nbind C.i blockIdx.x\nbind C.j threadIdx.x\n"
		"compute_at C_local C.j\ncompute_at A_local C_local.k\n"
		"compute_at A_shared A_local.ax0\n",
		"'A_local' is neither at the root nor computed at a loop of a stage at the root");
	expect_refused(&f, "cache_read A local C\ncache_read A shared A_local\n"
		"fuse C.i C.j -> C.f\nbind C.f blockIdx.x\nsplit C.k 4 -> C.ko C.ki\n"
		"reorder C.ki C.ko\nbind C.ki threadIdx.x\ncompute_at A_local C.f\n"
		"compute_at A_shared A_local.ax0\n", "whose kernel reduces across threads (C.ki)");
	test_fixture_fini(&f);
}

/* ---- cross-thread reductions ------------------------------------------------ */

/* Run the trace "text" for "name" with "spec" on "dev"; return the error
 * against the interpreter, INFINITY when refused or not run. */
static double run_trace(rt_cl_device *dev, const char *name, const char *spec,
	const char *text)
{
	test_fixture f;
	test_fixture_init(&f, name, spec);
	sch_trace *t = sch_trace_parse(f.ctx, "test", text);
	sch_state *st = sch_state_new(f.ctx, f.op);
	double err = INFINITY;
	if (sch_replay(st, t, "test") == 0)
		err = run_on_device(&f, dev, st);
	else
		cr_log_error("%s", tessel_ctx_error(f.ctx)->message);
	sch_trace_free(t);
	sch_state_free(st);
	test_fixture_fini(&f);
	return err;
}

Test(opencl_cross_thread, rows_reduced_by_the_threads_of_a_block, .timeout = 300)
{
	rt_cl_device *dev = open_device();
	static const char *const ops[][2] = {
		{ "reduce_sum", "shape=[5, 7];axes=[1]" },
		{ "reduce_max", "shape=[4, 9];axes=[1]" },
		{ "reduce_min", "shape=[3, 6]" },
		{ "reduce_prod", "shape=[3, 4];axes=[1]" },
	};
	static const char *const factors[] = { "1", "2", "3", "4", "8", "16" };
	for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++)
		for (size_t k = 0; k < sizeof(factors) / sizeof(*factors); k++) {
			char text[512];
			bool rows = strstr(ops[o][1], "axes") != NULL;
			snprintf(text, sizeof(text), "%ssplit Y.%s %s -> Y.ro Y.ri\n"
				"reorder Y.ri Y.ro\nbind Y.ri threadIdx.x\n",
				rows ? "bind Y.i blockIdx.x\n" : "", rows ? "j" : "i", factors[k]);
			double err = run_trace(dev, ops[o][0], ops[o][1], text);
			cr_expect_lt(err, 1e-5, "%s by %s threads: error %g\n%s", ops[o][0],
				factors[k], err, text);
		}
	rt_cl_close(dev);
}

Test(opencl_cross_thread, softmax_and_a_matmul_with_a_shared_tile, .timeout = 300)
{
	rt_cl_device *dev = open_device();
	cr_expect_lt(run_trace(dev, "softmax", "shape=[5, 7]",
		"bind Max.i blockIdx.x\nsplit Max.j 3 -> Max.jo Max.ji\n"
		"reorder Max.ji Max.jo\nbind Max.ji threadIdx.x\ncompute_inline E\n"
		"bind Total.i blockIdx.x\nsplit Total.j 4 -> Total.jo Total.ji\n"
		"reorder Total.ji Total.jo\nbind Total.ji threadIdx.x\n"), 1e-5);
	cr_expect_lt(run_trace(dev, "matmul", "M=6;N=5;K=30",
		"bind C.i blockIdx.x\nbind C.j blockIdx.y\nsplit C.k 8 -> C.ko C.ki\n"
		"reorder C.ki C.ko\nbind C.ki threadIdx.x\ncache_read B shared C\n"
		"compute_at B_shared C.j\nsplit B_shared.ax0 8 -> B_shared.o B_shared.t\n"
		"bind B_shared.t threadIdx.x\n"), 1e-5);
	rt_cl_close(dev);
}

/* An OpenCL program's code key hashes its source and the compiler that
 * builds it (the device's platform and driver versions): the same
 * source under another PoCL is other code. */
Test(opencl_c, code_keys_name_the_source_and_the_compiler)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, 64), 0);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	const char *pocl = "OpenCL 3.0 PoCL 3.1+debian / 3.1+debian";
	char a[CG_CODE_KEY_LEN], b[CG_CODE_KEY_LEN], c[CG_CODE_KEY_LEN], d[CG_CODE_KEY_LEN];
	cr_assert_eq(cg_opencl_code_key(f.ctx, p, pocl, a), 0);
	cr_assert_eq(cg_opencl_code_key(f.ctx, p, pocl, b), 0);
	cr_assert_eq(cg_opencl_code_key(f.ctx, p, "OpenCL 3.0 PoCL 5.0 / 5.0", c), 0);
	cr_expect_eq(strlen(a), 32);
	for (const char *k = a; *k; k++)
		cr_expect((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'f'), "%s", a);
	cr_expect_str_eq(a, b);
	cr_expect_str_neq(a, c);
	sch_state *other = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(other, 32), 0);
	loop_prog *q = sch_program(other);
	cr_assert(q);
	cr_assert_eq(cg_opencl_code_key(f.ctx, q, pocl, d), 0);
	cr_expect_str_neq(a, d, "another schedule, other source");
	sch_state_free(other);
	loop_prog_free(q);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* ---- the tuner's workers ---------------------------------------------------- */

/* Make "f" for the library op "name" and "*task" for it on OpenCL, and
 * return a measurer with the default options (the test is skipped in
 * the sanitized build or without a device). */
static tune_measurer *opencl_measurer(test_fixture *f, const char *name, tune_task *task)
{
	if (SANITIZED && !getenv("TESSEL_OPENCL_UNDER_ASAN"))
		cr_skip_test("OpenCL tests skip in the sanitized build");
	setenv("POCL_CACHE_DIR", TESSEL_BUILD_DIR "/pocl-cache", 0);
	test_fixture_init(f, name, test_library_spec(name));
	char err[512];
	if (tune_task_init(task, f->ctx, f->op, "opencl", err, sizeof(err))) {
		test_fixture_fini(f);
		cr_skip_test("%s", err);
	}
	tune_measurer *m = tune_measurer_new(task, NULL, err, sizeof(err));
	cr_assert(m, "%s", err);
	return m;
}

/* A device the measurer's worker cannot open is the machine's fault, not
 * the candidate's: the batch fails with the reason and nothing is
 * classified (a first device run recorded 64 candidates as build errors
 * when CUDA could not initialize in the workers).  The OpenCL loader of
 * the forked workers is pointed at an empty folder of vendors; the test
 * process never opens OpenCL itself, so theirs starts fresh. */
Test(opencl_tuner, a_device_the_worker_cannot_open_stops_the_batch, .timeout = 120,
	.fini = test_scratch_remove)
{
	test_fixture f;
	tune_task task;
	tune_measurer *m = opencl_measurer(&f, "add", &task);
	char vendors[512];
	test_scratch_file(vendors, sizeof(vendors), "no-vendors");
	cr_assert(mkdir(vendors, 0700) == 0 || errno == EEXIST);
	setenv("OCL_ICD_VENDORS", vendors, 1);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	tune_result r;
	cr_expect_eq(tune_measure_batch(m, &p, 1, &r, NULL), -1);
	cr_expect(strstr(r.msg, "the worker could not open the device"), "%s", r.msg);
	unsetenv("OCL_ICD_VENDORS");
	loop_prog_free(p);
	sch_state_free(st);
	tune_measurer_free(m);
	tune_task_clear(&task);
	test_fixture_fini(&f);
}

/* Opening the device costs more than timing most candidates (PoCL, a
 * CUDA context), so one worker serves a batch: it is forked after the
 * batch is built, sees every candidate, and keeps the device open
 * between them.  Each batch gets its own, and a failure still ends it
 * (tests/test_runtime.c, "worker"). */
Test(opencl_tuner, one_worker_serves_a_batch, .timeout = 300)
{
	test_fixture f;
	tune_task task;
	tune_measurer *m = opencl_measurer(&f, "matmul", &task);
	static const int threads[] = { 32, 64, 128 };
	enum { N = sizeof(threads) / sizeof(threads[0]) };
	sch_state *st[N];
	loop_prog *p[N];
	for (int i = 0; i < N; i++) {
		st[i] = sch_state_new(f.ctx, f.op);
		cr_assert_eq(sch_gpu_default(st[i], threads[i]), 0);
		p[i] = sch_program(st[i]);
		cr_assert(p[i]);
	}
	tune_result r[N];
	double best = INFINITY;
	for (int batch = 1; batch <= 2; batch++) {
		cr_assert_eq(tune_measure_batch(m, p, N, r, NULL), 0, "%s", r[0].msg);
		for (int i = 0; i < N; i++) {
			cr_expect_eq(r[i].error, TUNE_OK, "batch %d, %d threads: %s", batch,
				threads[i], r[i].msg);
			cr_expect_gt(r[i].median_s, 0);
			int passes = r[i].attempts - r[i].retakes;
			if (r[i].median_s <= TUNE_GIVE_UP_FACTOR * best)
				cr_expect_geq(passes, TUNE_DEFAULT_PASSES);
			else
				cr_expect_eq(passes, 1, "given up on in its first pass (%d attempts, "
					"%d of them retaken while disturbed)", r[i].attempts,
					r[i].retakes);
			best = fmin(best, r[i].median_s);
		}
		if (batch == 1)
			cr_expect(r[0].checked, "the first candidate is the best so far and checked");
		for (int i = 0; i < N; i++) {
			char key[CG_CODE_KEY_LEN];
			cr_assert_eq(tune_measurer_code_key(m, f.ctx, p[i], key), 0);
			cr_expect_eq(strlen(r[i].code_key), 32, "%d threads: '%s'", threads[i],
				r[i].code_key);
			cr_expect_str_eq(r[i].code_key, key, "the key it records is the one a "
				"resumed search computes");
		}
		cr_expect_str_neq(r[0].code_key, r[1].code_key);
		cr_expect_eq(tune_measurer_workers_started(m), batch,
			"%d workers for %d batches of %d candidates in %d passes",
			tune_measurer_workers_started(m), batch, N, TUNE_DEFAULT_PASSES);
	}
	for (int i = 0; i < N; i++) {
		loop_prog_free(p[i]);
		sch_state_free(st[i]);
	}
	tune_measurer_free(m);
	tune_task_clear(&task);
	test_fixture_fini(&f);
}

/* A candidate ten times slower than the best (TUNE_GIVE_UP_FACTOR) is
 * measured by its warm-up run in the first pass alone, and the best is
 * not checked again: on an H200 such matmuls took seconds a run, and
 * were run four times each. */
Test(opencl_tuner, a_candidate_far_slower_than_the_best_runs_once, .timeout = 120)
{
	test_fixture f;
	tune_task task;
	tune_measurer *m = opencl_measurer(&f, "matmul", &task);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	tune_measurer_set_best(m, 1e-9);
	tune_result r;
	cr_assert_eq(tune_measure_batch(m, &p, 1, &r, NULL), 0, "%s", r.msg);
	cr_expect_eq(r.error, TUNE_OK, "%s", r.msg);
	cr_expect_eq(r.runs, 1, "%d runs of a candidate past the give-up time", r.runs);
	cr_expect_eq(r.attempts, 1, "%d passes", r.attempts);
	cr_expect_gt(r.median_s, 10e-9);
	cr_expect_not(r.checked);
	loop_prog_free(p);
	sch_state_free(st);
	tune_measurer_free(m);
	tune_task_clear(&task);
	test_fixture_fini(&f);
}

/* Whether "s" stores into an output. */
static bool stores_an_output(const loop_stmt *s)
{
	return s->u.store.buf->is_output;
}

/* A candidate that crashes its batch's worker (a store a terabyte past
 * its output, which PoCL runs on the CPU: SIGSEGV) is classified as a
 * crash, and the candidates after it run in a new worker: two workers
 * for the batch good, bad, good in two passes. */
Test(opencl_tuner, a_crash_ends_the_batch_worker_and_the_next_candidate_gets_a_new_one,
	.timeout = 300)
{
	test_fixture f;
	tune_task task;
	tune_measurer *m = opencl_measurer(&f, "add", &task);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p[3] = { sch_program(st), sch_program(st), sch_program(st) };
	cr_assert(p[0] && p[1] && p[2]);
	loop_stmt *store = test_first_store(p[1]->body, stores_an_output);
	cr_assert(store);
	store->u.store.index[0] = lx_add(p[1], store->u.store.index[0],
		lx_int(p[1], (int64_t)1 << 38));
	tune_result r[3];
	cr_assert_eq(tune_measure_batch(m, p, 3, r, NULL), 0, "%s", r[0].msg);
	cr_expect_eq(r[0].error, TUNE_OK, "%s", r[0].msg);
	cr_expect_eq(r[1].error, TUNE_ERR_CRASH, "%s: %s", tune_error_name(r[1].error),
		r[1].msg);
	cr_expect_eq(r[2].error, TUNE_OK, "%s", r[2].msg);
	cr_expect_eq(tune_measurer_workers_started(m), 2);
	for (int i = 0; i < 3; i++)
		loop_prog_free(p[i]);
	sch_state_free(st);
	tune_measurer_free(m);
	tune_task_clear(&task);
	test_fixture_fini(&f);
}
