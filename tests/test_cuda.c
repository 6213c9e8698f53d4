/* CUDA without a GPU, and on one when there is: the CUDA C dialect of
 * every op of the library (default GPU schedule) and of random GPU
 * traces compiled by NVRTC for sm_90 and sm_80 with ptxas's report of
 * every kernel; the report's parser; the launch checks that reject
 * candidates (too many threads, registers or shared memory); NVRTC's
 * log on a syntax error; CUDA target strings; and, where libcuda.so.1
 * and a GPU are, the default GPU schedule of several ops run on the
 * device against the interpreter.
 *
 * Tests that need NVRTC skip, saying why, where it is not installed;
 * tests that need the driver skip where it is not (CI never has one).
 * Unlike PoCL, NVRTC runs cleanly in the sanitized build (no ASan or
 * LeakSanitizer reports with NVRTC 13.0), so these tests run there too.
 * TESSEL_CUDA_FUZZ_SCALE multiplies the number of random traces (0 skips
 * them). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "codegen/cuda_kernel.h"
#include "ir/compare.h"
#include "ir/loop.h"
#include "runtime/cuda.h"
#include "runtime/cuda_timing.h"
#include "runtime/cupti.h"
#include "runtime/gpu_target.h"
#include "runtime/nvrtc.h"
#include "runtime/target.h"
#include "schedule/gpu_default.h"
#include "schedule/primitives.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tests/support.h"
#include "tuner/gpu_target.h"
#include "tuner/measure.h"
#include "tuner/runner_cuda.h"
#include "tuner/sketch.h"
#include "tuner/task.h"

/* Skip the test, saying why, when NVRTC cannot be used. */
static void need_nvrtc(void)
{
	char err[1024];
	int major, minor;
	if (rt_nvrtc_version(&major, &minor, err, sizeof(err)))
		cr_skip_test("%s", err);
}

/* Return the limits of sm_"sm" from the table. */
static rt_gpu_target target_of(int sm)
{
	rt_gpu_target t;
	char err[512];
	cr_assert_eq(rt_gpu_target_for_sm(sm, &t, err, sizeof(err)), 0, "%s", err);
	return t;
}

/* Whether what the cubin says kernel "use" of "c" uses is what ptxas
 * reported in the log (true where the log has no report of it: it has
 * been seen empty on a GPU machine). */
static bool same_as_reported(const rt_cubin *c, const rt_kernel_usage *use)
{
	rt_kernel_usage *reported = NULL;
	int n = rt_ptxas_parse(c->log, &reported);
	bool same = true;
	for (int i = 0; i < n; i++)
		if (strcmp(reported[i].name, use->name) == 0)
			same = reported[i].registers == use->registers &&
			       reported[i].barriers == use->barriers &&
			       reported[i].shared_bytes == use->shared_bytes &&
			       reported[i].stack_bytes == use->stack_bytes &&
			       reported[i].spill_store_bytes == use->spill_store_bytes;
	free(reported);
	return same;
}

/* Compile "st" for sm_"sm" and check what ptxas reports of every kernel
 * of its plan, and that each launch fits the architecture.  Return 0; 1
 * when the launch checks refuse it (a legal schedule over the limits:
 * what they are for); or -1 after logging why under the name "what". */
static int compile_and_check(test_fixture *f, sch_state *st, int sm, const char *what)
{
	loop_prog *p = sch_program(st);
	cg_cuda_program c;
	int r = p ? cg_cuda_compile(f->ctx, p, sm, &c) : -1;
	if (r) {
		cr_log_error("%s (sm_%d): %s", what, sm, tessel_ctx_error(f->ctx)->message);
		if (p)
			cg_cuda_program_free(&c);
		loop_prog_free(p);
		return -1;
	}
	for (int i = 0; r == 0 && i < c.plan.nkernels; i++) {
		const rt_kernel_usage *use = rt_cubin_kernel(&c.cubin, c.plan.kernels[i].name);
		if (!use || use->registers <= 0) {
			cr_log_error("%s (sm_%d): no usage of kernel %s:\n%s", what, sm,
				c.plan.kernels[i].name, c.cubin.log);
			r = -1;
		} else if (!same_as_reported(&c.cubin, use)) {
			cr_log_error("%s (sm_%d): the cubin and ptxas's report disagree on "
				"kernel %s:\n%s", what, sm, use->name, c.cubin.log);
			r = -1;
		}
	}
	rt_gpu_target t = target_of(sm);
	if (r == 0 && (c.cubin.size < 4 || memcmp(c.cubin.image, "\177ELF", 4) != 0)) {
		cr_log_error("%s (sm_%d): the cubin is not an ELF file", what, sm);
		r = -1;
	}
	if (r == 0 && strstr(c.source, "#include")) {
		cr_log_error("%s: the source includes a header NVRTC lacks", what);
		r = -1;
	}
	if (r == 0 && cg_cuda_check_launch(f->ctx, &c, &t)) {
		cr_log_info("%s (sm_%d): %s", what, sm, tessel_ctx_error(f->ctx)->message);
		r = tessel_ctx_error(f->ctx)->kind == TESSEL_ERR_LIMIT ? 1 : -1;
	}
	cg_cuda_program_free(&c);
	loop_prog_free(p);
	return r;
}

/* ---- NVRTC: every op, random traces ---------------------------------- */

Test(cuda_nvrtc, every_op_of_the_library_for_sm_90_and_sm_80, .timeout = 600)
{
	need_nvrtc();
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
			failed += compile_and_check(&f, st, 90, name) != 0;
			failed += compile_and_check(&f, st, 80, name) != 0;
		}
		sch_state_free(st);
		test_fixture_fini(&f);
	}
	cr_expect_eq(failed, 0, "%d compiles of library ops failed", failed);
	cr_expect_gt(tessel_ops_count(), 40);
}

/* Return the scaled count of random traces. */
static int scaled(int count)
{
	const char *scale = getenv("TESSEL_CUDA_FUZZ_SCALE");
	return scale ? count * atoi(scale) : count;
}

/* Random traces must compile with a report of every kernel; the launch
 * checks may refuse a few (bind allows 1024 threads along any index,
 * CUDA 64 along z), never most. */
#define FUZZ_CASE(test, opname, count, spec)                                    \
	Test(cuda_random, test, .timeout = 600)                                 \
	{                                                                       \
		need_nvrtc();                                                   \
		test_fixture f;                                                 \
		int failed = 0, refused = 0, n = scaled(count);                 \
		test_fixture_init(&f, opname, spec);                            \
		for (int c = 0; c < n; c++) {                                   \
			sch_state *st = sch_state_new(f.ctx, f.op);             \
			sch_random_gpu_schedule(st, __LINE__ * 7919 + c, 12);   \
			int r = compile_and_check(&f, st, c % 2 ? 80 : 90, #test); \
			refused += r > 0;                                       \
			if (r < 0) {                                            \
				char *t = sch_trace_to_text(st->trace);         \
				cr_log_error("trace %d:\n%s", c, t);            \
				free(t);                                        \
				failed++;                                       \
			}                                                       \
			sch_state_free(st);                                     \
		}                                                               \
		cr_expect_eq(failed, 0, "%d of %d traces failed", failed, n);   \
		cr_expect(refused * 4 <= n, "%d of %d traces refused", refused, n); \
		test_fixture_fini(&f);                                          \
	}

/* 108 traces in all (as tests/test_opencl.c), half for each architecture. */
FUZZ_CASE(matmul, "matmul", 24, "M=12;N=10;K=7")
FUZZ_CASE(conv2d, "conv2d", 16, "N=1;C=3;H=6;W=5;F=4;R=3;S=3;padding=1")
FUZZ_CASE(softmax, "softmax", 16, "shape=[5, 7]")
FUZZ_CASE(layer_norm, "layer_norm", 12, "shape=[4, 9]")
FUZZ_CASE(add_broadcast, "add", 12, "a=[2, 1, 3];b=[4, 3]")
FUZZ_CASE(reduce_sum, "reduce_sum", 10, "shape=[3, 4, 5];axes=[0, 2]")
FUZZ_CASE(max_pool2d, "max_pool2d", 10, "N=1;C=2;H=7;W=7;kernel=3;stride=2;padding=1")
FUZZ_CASE(gelu, "gelu", 8, "shape=[6, 5]")

/* ---- the GPU sketches on CUDA tasks ------------------------------------ */

/* What sampling the sketches of the library on one architecture gave. */
typedef struct sketch_counts {
	int launchable, rejected, failed;
} sketch_counts;

/* Lower "st" and check it with tune_cuda_check for the task "task";
 * count the outcome in "n", logging rejections and failures (with the
 * trace) under the name "what". */
static void check_candidate(const tune_task *task, sch_state *st, const char *what,
	sketch_counts *n)
{
	char msg[1024];
	loop_prog *p = sch_program(st);
	tune_cuda_status r = p ? tune_cuda_check(task->ctx, p, &task->gpu, msg, sizeof(msg)) :
		TUNE_CUDA_BUILD;
	if (!p)
		snprintf(msg, sizeof(msg), "%s", tessel_ctx_error(task->ctx)->message);
	if (r == TUNE_CUDA_LAUNCHABLE) {
		n->launchable++;
	} else if (r == TUNE_CUDA_REJECTED && msg[0]) {
		cr_log_info("%s: rejected: %s", what, msg);
		n->rejected++;
	} else {
		char *text = sch_trace_to_text(st->trace);
		cr_log_error("%s: %s\n%s", what, msg, text ? text : "");
		free(text);
		n->failed++;
	}
	loop_prog_free(p);
}

/* Sample "per_sketch" candidates of every GPU sketch of every op of the
 * library on a task for "target", mutate the first of each once, and
 * check them all; return the counts. */
static sketch_counts sample_library(const char *target, int per_sketch)
{
	sketch_counts n = { 0 };
	for (int i = 0; i < tessel_ops_count(); i++) {
		const char *name = tessel_ops_name(i);
		test_fixture f;
		tune_task task;
		char err[512], what[512];
		test_fixture_init(&f, name, test_library_spec(name));
		cr_assert_eq(tune_task_init(&task, f.ctx, f.op, target, err, sizeof(err)), 0,
			"%s", err);
		tune_space *space = tune_space_new(&task);
		cr_assert(space);
		uint64_t rng = 1 + (uint64_t)i;
		for (int k = 0; k < tune_space_num_sketches(space); k++)
			for (int j = 0; j < per_sketch; j++) {
				snprintf(what, sizeof(what), "%s, %s, sketch %d (%s), sample %d",
					target, name, k, tune_space_sketch_name(space, k), j);
				sch_state *st = tune_space_sample(space, k, &rng);
				if (!st) {
					cr_log_error("%s: no sample: %s", what,
						tessel_ctx_error(f.ctx)->message);
					n.failed++;
					continue;
				}
				check_candidate(&task, st, what, &n);
				sch_state *child = j ? NULL :
					tune_space_mutate(space, st->trace, &rng);
				if (child) {
					strncat(what, ", mutated", sizeof(what) - strlen(what) - 1);
					check_candidate(&task, child, what, &n);
					sch_state_free(child);
				}
				sch_state_free(st);
			}
		tune_space_free(space);
		tune_task_clear(&task);
		test_fixture_fini(&f);
	}
	return n;
}

/* Every candidate compiles, with no error from NVRTC, and either can
 * launch or is rejected with a reason; at least 90% can launch. */
static void expect_sketches_compile(const char *target)
{
	need_nvrtc();
	sketch_counts n = sample_library(target, 2);
	int total = n.launchable + n.rejected + n.failed;
	cr_log_info("%s: %d candidates, %d launchable, %d rejected, %d failed", target, total,
		n.launchable, n.rejected, n.failed);
	cr_expect_eq(n.failed, 0, "%s: %d of %d candidates failed", target, n.failed, total);
	cr_expect_gt(total, 2 * tessel_ops_count());
	cr_expect_geq(n.launchable * 10, total * 9, "%s: only %d of %d candidates launch",
		target, n.launchable, total);
}

Test(cuda_sketch, every_op_of_the_library_for_sm_90, .timeout = 600)
{
	expect_sketches_compile("cuda:sm_90");
}

Test(cuda_sketch, every_op_of_the_library_for_sm_80, .timeout = 600)
{
	expect_sketches_compile("cuda:sm_80");
}

Test(cuda_sketch, tasks_describe_the_architecture)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=32;N=24;K=16");
	tune_task task;
	char err[1024];
	cr_assert_eq(tune_task_init(&task, f.ctx, f.op, "cuda", err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(task.target_kind, "cuda");
	cr_expect(tune_task_is_gpu(&task));
	cr_expect_eq(task.gpu.sm, RT_CUDA_DEFAULT_SM);
	cr_expect_eq(task.gpu.max_threads, 1024);
	cr_expect_eq(task.gpu.shared_bytes, 49152);
	rt_gpu_target device;
	char why[512];
	if (tune_cuda_device(&device, why, sizeof(why)) == 0 && device.sm == RT_CUDA_DEFAULT_SM) {
		char units[64];
		snprintf(units, sizeof(units), " -units=%d -threads=1024 -shared=49152",
			device.sm_count);
		cr_expect(strncmp(task.target, "cuda -arch=sm_90 -device=", 25) == 0 &&
			strstr(task.target, units), "%s", task.target);
	} else {
		cr_expect_str_eq(task.target, "cuda -arch=sm_90 -device=sm_90 -units=0 "
			"-threads=1024 -shared=49152");
	}
	tune_space *space = tune_space_new(&task);
	cr_assert(space);
	cr_expect_eq(tune_space_num_sketches(space), 4);
	cr_expect(strstr(tune_space_sketch_name(space, 0), "SSSRRSRS, shared"), "%s",
		tune_space_sketch_name(space, 0));
	cr_expect(strstr(tune_space_sketch_name(space, 2), "SSSRRSRS, shared+local"), "%s",
		tune_space_sketch_name(space, 2));
	tune_space_free(space);
	tune_measurer *m = tune_measurer_new(&task, NULL, err, sizeof(err));
	if (rt_cuda_probe(why, sizeof(why)) == 0) {
		cr_expect(m || strstr(err, "no CUDA device") || strstr(err, "but the device is"),
			"%s", err);
	} else {
		cr_expect_null(m);
		cr_expect(strstr(err, "tessel cannot measure on CUDA here: CUDA driver not "
			"found (libcuda.so.1)"), "%s", err);
	}
	tune_measurer_free(m);
	tune_task_clear(&task);
	cr_assert_eq(tune_task_init(&task, f.ctx, f.op, "cuda:sm_80", err, sizeof(err)), 0,
		"%s", err);
	cr_expect(strncmp(task.target, "cuda -arch=sm_80 ", 17) == 0, "%s", task.target);
	tune_task_clear(&task);
	cr_expect_neq(tune_task_init(&task, f.ctx, f.op, "cuda:sm_1000", err, sizeof(err)), 0);
	cr_expect(strstr(err, "unknown CUDA architecture sm_1000"), "%s", err);
	cr_expect_neq(tune_task_init(&task, f.ctx, f.op, "cudax", err, sizeof(err)), 0);
	cr_expect(strstr(err, "unknown target 'cudax'"), "%s", err);
	test_fixture_fini(&f);
}

/* A CUDA program's code key hashes its source and the cubin NVRTC makes
 * of it for the task's architecture: the tuner compares the keys of
 * records other builds measured with what this one makes (no device
 * needed). */
Test(cuda_nvrtc, code_keys_name_the_cubin_of_the_architecture)
{
	need_nvrtc();
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=32;N=24;K=16");
	tune_task t80, t90;
	char err[512];
	cr_assert_eq(tune_task_init(&t80, f.ctx, f.op, "cuda:sm_80", err, sizeof(err)), 0,
		"%s", err);
	cr_assert_eq(tune_task_init(&t90, f.ctx, f.op, "cuda:sm_90", err, sizeof(err)), 0,
		"%s", err);
	loop_prog *p[2];
	sch_state *st[2];
	for (int i = 0; i < 2; i++) {
		st[i] = sch_state_new(f.ctx, f.op);
		cr_assert_eq(sch_gpu_default(st[i], 32 << i), 0);
		p[i] = sch_program(st[i]);
		cr_assert(p[i]);
	}
	char a[CG_CODE_KEY_LEN], b[CG_CODE_KEY_LEN], c[CG_CODE_KEY_LEN], d[CG_CODE_KEY_LEN];
	cr_assert_eq(tune_code_key(&t80, NULL, f.ctx, p[0], a), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	cr_assert_eq(tune_code_key(&t80, NULL, f.ctx, p[0], b), 0);
	cr_assert_eq(tune_code_key(&t90, NULL, f.ctx, p[0], c), 0);
	cr_assert_eq(tune_code_key(&t80, NULL, f.ctx, p[1], d), 0);
	cr_expect_eq(strlen(a), 32);
	cr_expect_str_eq(a, b, "the same program, the same key");
	cr_expect_str_neq(a, c, "another architecture, another cubin");
	cr_expect_str_neq(a, d, "another schedule, other code");
	cg_cuda_program prog;
	cr_assert_eq(cg_cuda_compile(f.ctx, p[0], 80, &prog), 0);
	cg_cuda_program_key(&prog, b);
	cr_expect_str_eq(a, b, "the key of what the measurer compiles");
	cg_cuda_program_free(&prog);
	for (int i = 0; i < 2; i++) {
		loop_prog_free(p[i]);
		sch_state_free(st[i]);
	}
	tune_task_clear(&t80);
	tune_task_clear(&t90);
	test_fixture_fini(&f);
}

/* Return what tune_cuda_check says of "trace" on matmul of size "n" for
 * sm_80, with its reason in "msg" of size "len". */
static tune_cuda_status check_matmul_trace(const char *n, const char *trace, char *msg,
	size_t len)
{
	char spec[64], err[512];
	snprintf(spec, sizeof(spec), "M=%s;N=%s;K=64", n, n);
	test_fixture f;
	test_fixture_init(&f, "matmul", spec);
	tune_task task;
	cr_assert_eq(tune_task_init(&task, f.ctx, f.op, "cuda:sm_80", err, sizeof(err)), 0,
		"%s", err);
	sch_trace *t = sch_trace_parse(f.ctx, "test", trace);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert(t && sch_replay(st, t, "test") == 0, "%s", tessel_ctx_error(f.ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	msg[0] = 0;
	tune_cuda_status r = tune_cuda_check(f.ctx, p, &task.gpu, msg, len);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	tune_task_clear(&task);
	test_fixture_fini(&f);
	return r;
}

/* A register tile of 8 x 8 per thread, unrolled: 96 registers a thread
 * with NVRTC 13.0 for sm_80, which a block of 32 x 32 threads cannot
 * have (98304 of 65536) and one of 16 x 16 can. */
Test(cuda_sketch, a_candidate_past_the_registers_is_rejected_before_measurement)
{
	need_nvrtc();
	static const char tile[] = "cache_write C local -> C_local\n"
		"split C.i 8 -> C.io C.ii\nsplit C.j 8 -> C.jo C.ji\n"
		"reorder C.io C.jo C.ii C.ji\nbind C.io threadIdx.y\nbind C.jo threadIdx.x\n"
		"compute_at C_local C.jo\nreorder C_local.k C_local.i C_local.j\n"
		"unroll C_local.i\nunroll C_local.j\nunroll C.ii\nunroll C.ji\n";
	char msg[1024];
	cr_expect_eq(check_matmul_trace("128", tile, msg, sizeof(msg)), TUNE_CUDA_LAUNCHABLE,
		"%s", msg);
	cr_expect_eq(check_matmul_trace("256", tile, msg, sizeof(msg)), TUNE_CUDA_REJECTED,
		"%s", msg);
	cr_expect(strstr(msg, "cannot launch on sm_80") && strstr(msg, "registers for a "
		"block of 1024 threads"), "%s", msg);
}

/* Replay tests/sched/"name".trace, then the steps "more" (or NULL), on a
 * matmul of "spec" into "f" and "*st"; return its program. */
static loop_prog *replay_matmul_trace(test_fixture *f, const char *spec, const char *name,
	const char *more, sch_state **st)
{
	char path[512];
	snprintf(path, sizeof(path), TESSEL_SOURCE_DIR "/tests/sched/%s.trace", name);
	char *file = test_read_file(path), *text = NULL;
	cr_assert(file, "%s", path);
	cr_assert(asprintf(&text, "%s%s", file, more ? more : "") > 0);
	free(file);
	test_fixture_init(f, "matmul", spec);
	sch_trace *t = sch_trace_parse(f->ctx, name, text);
	*st = sch_state_new(f->ctx, f->op);
	cr_assert(t && sch_replay(*st, t, name) == 0, "%s", tessel_ctx_error(f->ctx)->message);
	sch_trace_free(t);
	free(text);
	loop_prog *p = sch_program(*st);
	cr_assert(p, "%s", tessel_ctx_error(f->ctx)->message);
	return p;
}

/* The register tile fed by shared tiles (tests/sched/shared_local_matmul):
 * NVRTC compiles it for sm_90 and sm_80 with the tiles' 768 bytes of
 * shared memory and a barrier, and it can launch. */
Test(cuda_nvrtc, register_tile_fed_by_shared_tiles)
{
	need_nvrtc();
	test_fixture f;
	sch_state *st;
	loop_prog *p = replay_matmul_trace(&f, "M=64;N=48;K=30", "shared_local_matmul", NULL, &st);
	const int sms[2] = { 90, 80 };
	for (int i = 0; i < 2; i++) {
		cg_cuda_program c;
		cr_assert_eq(cg_cuda_compile(f.ctx, p, sms[i], &c), 0, "%s",
			tessel_ctx_error(f.ctx)->message);
		const rt_kernel_usage *use = rt_cubin_kernel(&c.cubin, "matmul");
		cr_assert(use, "%s", c.cubin.log);
		cr_expect_eq(use->shared_bytes, 768, "%s", c.cubin.log);
		cr_expect_geq(use->barriers, 1, "%s", c.cubin.log);
		rt_gpu_target target = target_of(sms[i]);
		cr_expect_eq(cg_cuda_check_launch(f.ctx, &c, &target), 0, "%s",
			tessel_ctx_error(f.ctx)->message);
		cg_cuda_program_free(&c);
	}
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* Shared arrays are aligned to 16 bytes, so that NVVM proves four
 * consecutive floats of a tile one load: the 8 x 8 register tile of
 * tests/sched/shared_register_tile_matmul reads its 16 operands a step
 * from shared memory as ld.shared.v4.f32 only (32 a tile of k, where
 * scalar loads took 128), for sm_90 and sm_80. */
Test(cuda_nvrtc, a_register_tile_loads_four_floats_from_shared_memory_at_once)
{
	need_nvrtc();
	test_fixture f;
	sch_state *st;
	loop_prog *p = replay_matmul_trace(&f, "M=256;N=256;K=64", "shared_register_tile_matmul",
		NULL, &st);
	const int sms[2] = { 90, 80 };
	for (int i = 0; i < 2; i++) {
		cg_target target = cg_target_cuda(sms[i]);
		char *source = cg_print_c(p, &target, f.ctx), *ptx = NULL, err[4096];
		cr_assert(source, "%s", tessel_ctx_error(f.ctx)->message);
		cr_assert_eq(rt_nvrtc_ptx(source, "test.cu", sms[i], &ptx, err, sizeof(err)), 0,
			"%s", err);
		int vector = 0, scalar = 0;
		for (const char *at = ptx; (at = strstr(at, "ld.shared.")); at++)
			vector += strncmp(at, "ld.shared.v4.f32", 16) == 0,
			scalar += strncmp(at, "ld.shared.f32", 13) == 0;
		cr_expect_eq(vector, 32, "sm_%d: %d ld.shared.v4.f32", sms[i], vector);
		cr_expect_eq(scalar, 0, "sm_%d: %d scalar ld.shared.f32", sms[i], scalar);
		free(ptx);
		free(source);
	}
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* Count in "text" the occurrences of "needle". */
static int count_of(const char *text, const char *needle)
{
	int n = 0;
	for (const char *at = text; (at = strstr(at, needle)); at++)
		n++;
	return n;
}

/* The classic blocking with its tiles fetched as vectors
 * (tests/sched/shared_vector_fetch_matmul): each thread copies four
 * floats of A and four of B a step as one 128-bit load from global
 * memory and one store to shared memory, and NVRTC keeps them so; a row
 * of A_shared padded to 33 floats (storage_align) starts its vectors off
 * 16 bytes, so A's fetch stays scalar and B's is still vectors. */
Test(cuda_nvrtc, tiles_fetched_as_vectors_move_128_bits_at_once)
{
	need_nvrtc();
	static const char *const more[2] = { NULL, "storage_align A_shared.ax0 32 1\n" };
	for (int i = 0; i < 2; i++) {
		test_fixture f;
		sch_state *st;
		loop_prog *p = replay_matmul_trace(&f, "M=256;N=256;K=64",
			"shared_vector_fetch_matmul", more[i], &st);
		cg_target target = cg_target_cuda(90);
		char *source = cg_print_c(p, &target, f.ctx), *ptx = NULL, err[4096];
		cr_assert(source, "%s", tessel_ctx_error(f.ctx)->message);
		cr_expect_eq(count_of(source, "*(float4 *)&A_shared["), i == 0, "%s", source);
		cr_expect_eq(count_of(source, "*(float4 *)&B_shared["), 1, "%s", source);
		cr_expect_eq(count_of(source, "*(const float4 *)&B["), 1, "%s", source);
		cr_assert_eq(rt_nvrtc_ptx(source, "test.cu", 90, &ptx, err, sizeof(err)), 0,
			"%s", err);
		int wide = count_of(ptx, "ld.global.nc.v4."), scalar = count_of(ptx, "ld.global.nc.f32") +
			count_of(ptx, "ld.global.nc.u32");
		cr_expect_eq(wide, i == 0 ? 2 : 1, "%d ld.global.nc.v4", wide);
		cr_expect_eq(scalar, i == 0 ? 0 : 4, "%d scalar global loads", scalar);
		cr_expect_eq(count_of(ptx, "st.shared.v4."), i == 0 ? 2 : 1);
		free(ptx);
		free(source);
		loop_prog_free(p);
		sch_state_free(st);
		test_fixture_fini(&f);
	}
}

/* min_blocks_per_sm on the block loop of the register-tile matmul:
 * the kernel declares __launch_bounds__(256, 2), and ptxas keeps each
 * thread within the 128 registers that two blocks of 256 threads leave
 * (65536 a multiprocessor), for sm_90 and sm_80. */
Test(cuda_nvrtc, min_blocks_per_sm_bounds_the_registers)
{
	need_nvrtc();
	test_fixture f;
	sch_state *st;
	loop_prog_free(replay_matmul_trace(&f, "M=256;N=256;K=64", "shared_register_tile_matmul",
		NULL, &st));
	cr_assert_eq(sch_annotate(st, "C.io", "min_blocks_per_sm", 2), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(f.ctx)->message);
	const int sms[2] = { 90, 80 };
	for (int i = 0; i < 2; i++) {
		cg_cuda_program c;
		cr_assert_eq(cg_cuda_compile(f.ctx, p, sms[i], &c), 0, "%s",
			tessel_ctx_error(f.ctx)->message);
		cr_expect(strstr(c.source, "__global__ void __launch_bounds__(256, 2) matmul("),
			"%s", c.source);
		cr_expect_eq(c.plan.kernels[0].min_blocks, 2);
		const rt_kernel_usage *use = rt_cubin_kernel(&c.cubin, "matmul");
		cr_assert(use, "%s", c.cubin.log);
		cr_expect_leq(use->registers, 128, "sm_%d: %d registers", sms[i], use->registers);
		cg_cuda_program_free(&c);
	}
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* Return the min_blocks_per_sm a trace text asks for, 0 when none. */
static int min_blocks_of(const char *trace)
{
	const char *at = strstr(trace, "min_blocks_per_sm ");
	return at ? atoi(at + strlen("min_blocks_per_sm ")) : 0;
}

/* The CUDA search draws min_blocks_per_sm for some tiled samples of a
 * large matmul, where it caps the registers (two or four blocks of 128
 * to 512 threads), and every one of them compiles and fits; mutation
 * changes it; OpenCL, which has no such bound, never draws it. */
Test(cuda_sketch, min_blocks_per_sm_is_drawn_and_mutated_on_cuda_only, .timeout = 300)
{
	need_nvrtc();
	const char *targets[2] = { "cuda:sm_90", "opencl" };
	for (int g = 0; g < 2; g++) {
		test_fixture f;
		tune_task task;
		char err[512];
		test_fixture_init(&f, "matmul", "M=512;N=512;K=512");
		if (tune_task_init(&task, f.ctx, f.op, targets[g], err, sizeof(err))) {
			cr_assert_eq(g, 1, "%s", err);
			test_fixture_fini(&f);
			continue;
		}
		tune_space *space = tune_space_new(&task);
		uint64_t rng = 5;
		int drawn = 0, mutated = 0;
		for (int k = 0; k < tune_space_num_sketches(space); k++)
			for (int j = 0; j < 6; j++) {
				sch_state *st = tune_space_sample(space, k, &rng);
				if (!st)
					continue;
				char *trace = sch_trace_to_text(st->trace);
				bool has = strstr(trace, "min_blocks_per_sm") != NULL;
				drawn += has;
				if (has && g == 0 && drawn <= 2) {
					loop_prog *p = sch_program(st);
					char msg[512];
					cr_expect(p && tune_cuda_check(f.ctx, p, &task.gpu, msg,
						sizeof(msg)) != TUNE_CUDA_BUILD, "%s\n%s", msg, trace);
					loop_prog_free(p);
				}
				for (int m = 0; has && !mutated && m < 20; m++) {
					sch_state *child = tune_space_mutate(space, st->trace, &rng);
					char *ct = child ? sch_trace_to_text(child->trace) : NULL;
					mutated += ct && min_blocks_of(ct) != min_blocks_of(trace);
					free(ct);
					sch_state_free(child);
				}
				free(trace);
				sch_state_free(st);
			}
		if (g == 0) {
			cr_expect_gt(drawn, 0, "no CUDA sample asks for blocks per multiprocessor");
			cr_expect_gt(mutated, 0);
		} else {
			cr_expect_eq(drawn, 0, "%d OpenCL samples ask for blocks per multiprocessor",
				drawn);
		}
		tune_space_free(space);
		tune_task_clear(&task);
		test_fixture_fini(&f);
	}
}

Test(cuda_nvrtc, f16_bf16_and_u8_compile)
{
	need_nvrtc();
	const char *ops[] = { "relu", "relu", "matmul" };
	const char *specs[] = { "shape=[3, 5];dtype=f16", "shape=[3, 5];dtype=bf16",
		"M=5;N=7;K=9;dtype=u8;weight_dtype=i8;out_dtype=i32" };
	for (int i = 0; i < 3; i++) {
		test_fixture f;
		test_fixture_init(&f, ops[i], specs[i]);
		sch_state *st = sch_state_new(f.ctx, f.op);
		cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
		cr_expect_eq(compile_and_check(&f, st, 90, specs[i]), 0);
		sch_state_free(st);
		test_fixture_fini(&f);
	}
}

/* ---- the dialect ------------------------------------------------------ */

Test(cuda_c, kernels_indices_and_plan)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=16;N=12;K=8");
	sch_trace *t = sch_trace_parse(f.ctx, "test", "split C.i 4 -> C.io C.ii\n"
		"bind C.io blockIdx.x\nbind C.ii threadIdx.x\nbind C.j threadIdx.y\n");
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_replay(st, t, "test"), 0);
	loop_prog *p = sch_program(st);
	cg_target target = cg_target_cuda(90);
	cg_gpu_plan plan;
	char *src = cg_print_gpu(p, &target, &plan, f.ctx);
	cr_assert(src, "%s", tessel_ctx_error(f.ctx)->message);
	cr_assert_eq(plan.nkernels, 1);
	cr_expect_eq(plan.kernels[0].grid[0], 4);
	cr_expect_eq(plan.kernels[0].block[0], 4);
	cr_expect_eq(plan.kernels[0].block[1], 12);
	cr_expect(strstr(src, "extern \"C\" __global__ void matmul("), "%s", src);
	cr_expect(strstr(src, "const float *__restrict__ A"), "%s", src);
	cr_expect(strstr(src, "int64_t io = (int64_t)blockIdx.x;"), "%s", src);
	cr_expect(strstr(src, "int64_t j = (int64_t)threadIdx.y;"), "%s", src);
	cr_expect(!strstr(src, "#include"), "NVRTC has no standard headers:\n%s", src);
	free(src);
	cg_gpu_plan_free(&plan);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	test_fixture_fini(&f);
}

Test(cuda_c, float_math_names)
{
	test_fixture f;
	test_fixture_init(&f, "gelu", "shape=[6, 5]");
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	cg_target target = cg_target_cuda(90);
	char *src = cg_print_c(p, &target, f.ctx);
	cr_assert(src, "%s", tessel_ctx_error(f.ctx)->message);
	cr_expect(strstr(src, "erff(") || strstr(src, "tanhf("), "%s", src);
	free(src);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* ---- ptxas's report and the launch checks ------------------------------ */

/* ptxas's report for two kernels as NVRTC 13.0 writes it for sm_80. */
static const char ptxas_log[] =
	"ptxas info    : 0 bytes gmem\n"
	"ptxas info    : Compiling entry function 'k2' for 'sm_80'\n"
	"ptxas info    : Function properties for k2\n"
	"ptxas         .     2400 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
	"ptxas info    : Used 32 registers, used 0 barriers, 2400 bytes cumulative stack size, 360 bytes cmem[0]\n"
	"ptxas info    : Compile time = 208.619 ms\n"
	"ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
	"ptxas info    : Function properties for k\n"
	"ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
	"ptxas info    : Used 14 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]\n"
	"ptxas info    : Compile time = 6.572 ms\n";

Test(ptxas, report_parsed_per_kernel)
{
	rt_kernel_usage *k = NULL;
	int n = rt_ptxas_parse(ptxas_log, &k);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(k[0].name, "k2");
	cr_expect_eq(k[0].registers, 32);
	cr_expect_eq(k[0].stack_bytes, 2400);
	cr_expect_eq(k[0].spill_store_bytes, 8);
	cr_expect_eq(k[0].spill_load_bytes, 12);
	cr_expect_eq(k[0].shared_bytes, 0);
	cr_expect_str_eq(k[1].name, "k");
	cr_expect_eq(k[1].registers, 14);
	cr_expect_eq(k[1].barriers, 1);
	cr_expect_eq(k[1].shared_bytes, 4096);
	free(k);
	cr_expect_eq(rt_ptxas_parse("", &k), 0);
	free(k);
}

Test(ptxas, nvrtc_reports_shared_memory_and_barriers)
{
	need_nvrtc();
	char err[4096];
	rt_cubin c;
	int r = rt_nvrtc_compile("extern \"C\" __global__ void k(float *x)\n{\n"
		"\t__shared__ float s[8192];\n\ts[threadIdx.x] = x[threadIdx.x];\n"
		"\t__syncthreads();\n\tx[threadIdx.x] = s[8191 - threadIdx.x];\n}\n",
		"shared.cu", 90, &c, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	const rt_kernel_usage *k = rt_cubin_kernel(&c, "k");
	cr_assert(k, "%s", c.log);
	cr_expect_eq(k->shared_bytes, 32768, "%s", c.log);
	cr_expect_eq(k->barriers, 1, "%s", c.log);
	cr_expect_gt(k->registers, 0);
	rt_cubin_free(&c);
}

/* The usage read from the cubin is ptxas's, for sm_80 and sm_90 (the
 * shared size of sm_90 cubins includes the driver's reserved 1 KiB), for
 * a kernel with a stack frame too; a file that is not a cubin, or one
 * cut short, is refused with a reason. */
Test(ptxas, the_cubin_gives_what_ptxas_reports)
{
	need_nvrtc();
	static const char source[] = "extern \"C\" __global__ void k(float *x, int n)\n{\n"
		"\t__shared__ float s[3000];\n\tfloat a[64];\n"
		"\tfor (int i = 0; i < 64; i++) a[i] = x[(i * n) % 4096];\n"
		"\ts[threadIdx.x] = a[n & 63];\n\t__syncthreads();\n"
		"\tx[threadIdx.x] = s[2999 - threadIdx.x];\n}\n"
		"extern \"C\" __global__ void plain(float *x) { x[threadIdx.x] += 1; }\n";
	static const int archs[] = { 80, 90 };
	char err[4096];
	for (int a = 0; a < 2; a++) {
		rt_cubin c;
		cr_assert_eq(rt_nvrtc_compile(source, "usage.cu", archs[a], &c, err,
			sizeof(err)), 0, "%s", err);
		rt_kernel_usage *reported = NULL;
		cr_expect_eq(rt_ptxas_parse(c.log, &reported), 2, "%s", c.log);
		cr_assert_eq(c.nkernels, 2);
		for (int i = 0; i < 2; i++) {
			const rt_kernel_usage *k = rt_cubin_kernel(&c, reported[i].name);
			cr_assert(k, "sm_%d: %s", archs[a], reported[i].name);
			cr_expect(same_as_reported(&c, k), "sm_%d, %s: %d registers, %d barriers, "
				"%lld shared, %lld stack from the cubin; the log:\n%s", archs[a],
				k->name, k->registers, k->barriers, (long long)k->shared_bytes,
				(long long)k->stack_bytes, c.log);
		}
		const rt_kernel_usage *k = rt_cubin_kernel(&c, "k");
		cr_expect_eq(k->shared_bytes, 12000);
		cr_expect_eq(k->barriers, 1);
		cr_expect_gt(k->stack_bytes, 0, "%s", c.log);
		free(reported);
		rt_kernel_usage *none = NULL;
		cr_expect_eq(rt_cubin_usage("not a cubin", 11, &none, err, sizeof(err)), -1);
		cr_expect(strstr(err, "not a 64-bit little-endian ELF file"), "%s", err);
		cr_expect_null(none);
		for (size_t cut = 64; cut < c.size; cut += c.size / 7) {
			cr_expect_eq(rt_cubin_usage(c.image, cut, &none, err, sizeof(err)), -1,
				"a cubin cut to %zu of %zu bytes", cut, c.size);
			cr_expect_null(none);
		}
		rt_cubin_free(&c);
	}
}

Test(launch_check, blocks_registers_and_shared_memory)
{
	rt_gpu_target t = target_of(90);
	rt_kernel_usage use = { .name = "k", .registers = 32 };
	int64_t grid[3] = { 4, 1, 1 }, block[3] = { 256, 1, 1 };
	char why[512];
	cr_expect_eq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0,
		"%s", why);
	block[0] = 2048;
	cr_expect_neq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0);
	cr_expect(strstr(why, "2048 threads") && strstr(why, "1024"), "%s", why);
	block[0] = 64;
	block[2] = 128;
	cr_expect_neq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0);
	cr_expect(strstr(why, "along z"), "%s", why);
	block[0] = 1024;
	block[2] = 1;
	use.registers = 128;
	cr_expect_neq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0);
	cr_expect(strstr(why, "registers"), "%s", why);
	use.registers = 64;
	cr_expect_eq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0,
		"%s", why);
	use.shared_bytes = 64 * 1024;
	cr_expect_neq(rt_gpu_launch_check(&t, &use, grid, block, false, why, sizeof(why)), 0);
	cr_expect(strstr(why, "shared memory") && strstr(why, "49152"), "%s", why);
	cr_expect_eq(rt_gpu_launch_check(&t, &use, grid, block, true, why, sizeof(why)), 0,
		"%s", why);
	use.shared_bytes = 228 * 1024;
	cr_expect_neq(rt_gpu_launch_check(&t, &use, grid, block, true, why, sizeof(why)), 0);
	cr_expect(strstr(why, "232448"), "%s", why);
	rt_gpu_target ampere = target_of(80);
	use.shared_bytes = 164 * 1024;
	cr_expect_neq(rt_gpu_launch_check(&ampere, &use, grid, block, true, why, sizeof(why)), 0);
	cr_expect(strstr(why, "sm_80"), "%s", why);
}

Test(launch_check, a_compiled_candidate_with_2048_threads_is_rejected)
{
	need_nvrtc();
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=64;N=48;K=8");
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	cg_cuda_program c;
	cr_assert_eq(cg_cuda_compile(f.ctx, p, 90, &c), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	rt_gpu_target t = target_of(90);
	cr_expect_eq(cg_cuda_check_launch(f.ctx, &c, &t), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	c.plan.kernels[0].block[0] = 2048;
	cr_expect_neq(cg_cuda_check_launch(f.ctx, &c, &t), 0);
	cr_expect_eq(tessel_ctx_error(f.ctx)->kind, TESSEL_ERR_LIMIT);
	cr_expect(strstr(tessel_ctx_error(f.ctx)->message, "cannot launch on sm_90: a block "
		"of 2048 threads"), "%s", tessel_ctx_error(f.ctx)->message);
	cg_cuda_program_free(&c);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
}

/* ---- NVRTC's errors ------------------------------------------------------ */

Test(cuda_nvrtc, syntax_errors_show_the_log)
{
	need_nvrtc();
	char err[4096];
	rt_cubin c;
	int r = rt_nvrtc_compile("extern \"C\" __global__ void k(float *x) { x[0] = y; }\n",
		"bad.cu", 90, &c, err, sizeof(err));
	cr_expect_neq(r, 0);
	cr_expect(strstr(err, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION"), "%s", err);
	cr_expect(strstr(err, "bad.cu") && strstr(err, "\"y\" is undefined"),
		"no compile log: %s", err);
	rt_cubin_free(&c);
}

Test(cuda_nvrtc, architectures_nvrtc_lacks_are_refused)
{
	need_nvrtc();
	char err[4096];
	rt_cubin c;
	cr_expect_neq(rt_nvrtc_compile("extern \"C\" __global__ void k(void) {}\n", "k.cu",
		37, &c, err, sizeof(err)), 0);
	cr_expect(strstr(err, "cannot compile for sm_37") && strstr(err, "sm_90"), "%s", err);
	rt_cubin_free(&c);
}

/* ---- target strings -------------------------------------------------------- */

Test(cuda_target, strings)
{
	char err[512];
	int sm = -1;
	rt_target_kind kind;
	cr_expect_eq(rt_cuda_target_parse("cuda", &sm, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(sm, 0);
	cr_expect_eq(rt_cuda_target_parse("cuda:sm_80", &sm, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(sm, 80);
	cr_expect_neq(rt_cuda_target_parse("cuda:sm_1000", &sm, err, sizeof(err)), 0);
	cr_expect(strstr(err, "unknown CUDA architecture sm_1000"), "%s", err);
	cr_expect_neq(rt_cuda_target_parse("cuda:foo", &sm, err, sizeof(err)), 0);
	cr_expect(strstr(err, "'foo' is not an architecture sm_NN"), "%s", err);
	cr_expect_neq(rt_cuda_target_parse("cuda -arch=sm_90", &sm, err, sizeof(err)), 0);
	cr_expect_eq(rt_target_kind_of("cuda:sm_90", &kind, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(kind, RT_TARGET_CUDA);
	cr_expect_neq(rt_target_kind_of("cuda:sm_9", &kind, err, sizeof(err)), 0);
	cr_expect_eq(rt_target_kind_of("cudax", &kind, err, sizeof(err)), 0);
	cr_expect_eq(kind, RT_TARGET_CPU);
	rt_gpu_target t = target_of(90);
	cr_expect_eq(t.shared_per_block_optin, 227 * 1024);
	cr_expect_eq(t.regs_per_block, 65536);
	cr_expect_eq(t.max_regs_per_thread, 255);
}

/* ---- CUPTI ---------------------------------------------------------------- */

/* CUPTI loads with every entry point tessel uses (or the test skips,
 * saying where it looked); stopping what was never started is refused;
 * without a driver starting fails with CUPTI's own error, with one it
 * records nothing until a kernel runs. */
Test(cupti, loads_and_refuses_out_of_order_calls)
{
	char err[1024];
	if (rt_cupti_probe(err, sizeof(err)))
		cr_skip_test("%s", err);
	double *s = NULL;
	int n = -1;
	cr_expect_eq(rt_cupti_stop(&s, &n, err, sizeof(err)), -1);
	cr_expect(strstr(err, "no CUPTI recording is running"), "%s", err);
	cr_expect_null(s);
	cr_expect_eq(n, 0);
	if (rt_cupti_start(err, sizeof(err))) {
		cr_log_info("no recording here: %s", err);
		cr_expect(strstr(err, "cuptiActivity"), "%s", err);
		return;
	}
	cr_expect_eq(rt_cupti_start(err, sizeof(err)), -1, "one recording at a time");
	cr_expect(strstr(err, "already running"), "%s", err);
	cr_assert_eq(rt_cupti_stop(&s, &n, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(n, 0);
	free(s);
}

static int never_enqueued(void *arg)
{
	(void)arg;
	cr_assert_fail("enqueued despite invalid options");
	return -1;
}

/* The CUDA timer takes the CPU timer's options and refuses the same
 * invalid ones, before it touches a device. */
Test(cuda_timing, invalid_options_are_refused_before_the_device)
{
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 0;
	rt_cuda_timing t;
	char err[256] = "";
	cr_expect_eq(rt_cuda_time_runs(NULL, never_enqueued, NULL, &o, &t, err,
		sizeof(err)), RT_TIME_ERROR);
	cr_expect_str_eq(err, "invalid timer options");
	o = rt_timer_opts_default();
	o.timeout_s = -1;
	cr_expect_eq(rt_cuda_time_runs(NULL, never_enqueued, NULL, &o, &t, err,
		sizeof(err)), RT_TIME_ERROR);
	cr_expect_eq(t.kernels.runs, 0);
	cr_expect_eq(t.events.runs, 0);
}

/* ---- the device ------------------------------------------------------------ */

/* Return the first CUDA device, or skip the test saying why there is
 * none. */
static rt_cuda_device *open_device(void)
{
	char err[1024];
	need_nvrtc();
	rt_cuda_device *d = rt_cuda_open(0, err, sizeof(err));
	if (!d)
		cr_skip_test("no CUDA device: %s", err);
	return d;
}

Test(cuda_device, default_schedules_against_the_interpreter, .timeout = 600)
{
	rt_cuda_device *dev = open_device();
	const rt_gpu_target *t = rt_cuda_target(dev);
	cr_log_info("device %s, sm_%d, %d SMs", t->name, t->sm, t->sm_count);
	cr_expect_gt(t->sm_count, 0);
	cr_expect_gt(t->regs_per_block, 0);
	static const char *const ops[] = { "matmul", "softmax", "conv2d", "layer_norm",
		"reduce_sum", "gelu", "add", "max_pool2d" };
	int failed = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++) {
		test_fixture f;
		test_fixture_init(&f, ops[i], test_library_spec(ops[i]));
		sch_state *st = sch_state_new(f.ctx, f.op);
		cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
		loop_prog *p = sch_program(st);
		cg_cuda_kernel k;
		test_fixture_clear_outputs(&f);
		int r = cg_cuda_kernel_build(f.ctx, p, dev, &k);
		if (r == 0) {
			r = cg_cuda_kernel_run(f.ctx, &k, f.data);
			cg_cuda_kernel_free(&k);
		}
		double err = r ? INFINITY : test_fixture_error(&f);
		if (r)
			cr_log_error("%s: %s", ops[i], tessel_ctx_error(f.ctx)->message);
		if (err > 1e-5) {
			cr_log_error("%s: the default GPU schedule gives error %g", ops[i], err);
			failed++;
		}
		loop_prog_free(p);
		sch_state_free(st);
		test_fixture_fini(&f);
	}
	cr_expect_eq(failed, 0);
	rt_cuda_close(dev);
}

static int enqueue_kernel(void *arg)
{
	test_fixture *f = ((void **)arg)[0];
	return cg_cuda_kernel_enqueue(f->ctx, ((void **)arg)[1]);
}

/* CUPTI times each run's kernels: one duration per kernel of the plan,
 * no longer than the events around the same launches, the L2 flushed
 * before each run. */
Test(cuda_device, cupti_times_every_kernel_of_a_run, .timeout = 300)
{
	rt_cuda_device *dev = open_device();
	test_fixture f;
	test_fixture_init(&f, "softmax", test_library_spec("softmax"));
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	cg_cuda_kernel k;
	cr_assert_eq(cg_cuda_kernel_build(f.ctx, p, dev, &k), 0, "%s",
		tessel_ctx_error(f.ctx)->message);
	cr_assert_eq(cg_cuda_kernel_upload(f.ctx, &k, f.data), 0);
	rt_timer_opts o = rt_timer_opts_default();
	o.min_repeats = 10;
	o.min_total_s = 0.01;
	o.flush_cache = true;
	rt_cuda_timing t;
	char err[1024];
	void *call[2] = { &f, &k };
	cr_assert_eq(rt_cuda_time_runs(dev, enqueue_kernel, call, &o, &t, err, sizeof(err)),
		RT_TIME_OK, "%s", err);
	cr_expect_eq(t.kernels.runs, t.events.runs, "CUPTI: %s", t.cupti_error);
	cr_expect_eq(t.kernels_per_run, k.program.plan.nkernels);
	cr_expect_gt(t.kernels.median_s, 0);
	cr_expect_leq(t.kernels.median_s, t.events.median_s * 1.05 + 2e-6,
		"kernels %g s, events %g s", t.kernels.median_s, t.events.median_s);
	cr_log_info("softmax: kernels %.3g us (CUPTI), events %.3g us, %d runs",
		t.kernels.median_s * 1e6, t.events.median_s * 1e6, t.kernels.runs);
	cg_cuda_kernel_free(&k);
	loop_prog_free(p);
	sch_state_free(st);
	test_fixture_fini(&f);
	rt_cuda_close(dev);
}

/* The tuner's path on a device: candidates compiled and checked with
 * NVRTC in this process, then timed and checked in a forked worker,
 * which must still be able to initialize CUDA (nothing in the tuner's
 * process may: the device is asked in a child too).  One worker serves
 * the batch, its context open from one candidate to the next. */
Test(cuda_device, the_tuner_measures_in_forked_workers, .timeout = 300)
{
	need_nvrtc();
	rt_gpu_target device;
	char err[1024];
	if (tune_cuda_device(&device, err, sizeof(err)))
		cr_skip_test("no CUDA device: %s", err);
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=96;N=80;K=64");
	tune_task task;
	cr_assert_eq(tune_task_init(&task, f.ctx, f.op, "cuda", err, sizeof(err)), 0, "%s", err);
	sch_state *st = sch_state_new(f.ctx, f.op);
	cr_assert_eq(sch_gpu_default(st, SCH_GPU_DEFAULT_THREADS), 0);
	loop_prog *p = sch_program(st);
	cr_assert_eq(tune_cuda_check(f.ctx, p, &task.gpu, err, sizeof(err)),
		TUNE_CUDA_LAUNCHABLE, "%s", err);
	tune_measurer *m = tune_measurer_new(&task, NULL, err, sizeof(err));
	cr_assert(m, "%s", err);
	tune_result r[2];
	loop_prog *progs[2] = { p, p };
	cr_assert_eq(tune_measure_batch(m, progs, 2, r, NULL), 0, "%s", r[0].msg);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(r[i].error, TUNE_OK, "%s: %s", tune_error_name(r[i].error), r[i].msg);
		cr_expect_gt(r[i].median_s, 0);
	}
	cr_expect(r[0].checked, "the first best is checked against the interpreter");
	cr_expect_leq(r[0].rel_error, te_tolerance(TESSEL_F32), "%g", r[0].rel_error);
	cr_expect_eq(tune_measurer_workers_started(m), 1,
		"%d workers for a batch of 2 candidates", tune_measurer_workers_started(m));
	tune_measurer_free(m);
	loop_prog_free(p);
	sch_state_free(st);
	tune_task_clear(&task);
	test_fixture_fini(&f);
}
