/* The OpenCL C dialect: a loop program becomes one __kernel per
 * statement at the top of the program (inside its global temporaries),
 * launched in order (codegen/c_printer.h: cg_gpu_plan), so that a stage
 * computed at the root is finished by every block before the next one
 * reads it.  clBuildProgram accepts the file as it is (OpenCL C 1.2,
 * with cl_khr_fp64 for double).
 *
 * A loop bound to a block or thread index is not a loop: its variable is
 * get_group_id(d) or get_local_id(d), guarded by "if (v < extent)" when
 * the launch is larger than the loop (two loops bound to the same index
 * with different extents).  Everything outside the thread loops runs in
 * every thread of a block; the bind primitive's rules (schedule/bind.c)
 * keep such code to private work.  Parallel, vectorized and vthread
 * loops run as serial loops in each thread.
 *
 * Buffers: the program's arguments and its global temporaries (allocated
 * at the root) are __global kernel parameters, arguments first; shared
 * buffers are __local arrays declared at the kernel's scope (the shared
 * printer's cg_print_shared_decls), filled by the threads of the block
 * together, with the barriers of ir/loop_barriers.c
 * (barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)); every other
 * allocation (a stage computed inside a loop) is a private array of the
 * thread that computes it.  f16 and bf16 are refused (the conversions
 * use memcpy, which OpenCL C lacks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

/* The C names the shared printer and its helpers use, in OpenCL C. */
static const char opencl_prelude[] =
	"#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
	"\n"
	"typedef char int8_t;\ntypedef uchar uint8_t;\ntypedef short int16_t;\n"
	"typedef ushort uint16_t;\ntypedef int int32_t;\ntypedef uint uint32_t;\n"
	"typedef long int64_t;\ntypedef ulong uint64_t;\n"
	"#define INT8_MIN (-128)\n#define INT8_MAX 127\n"
	"#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
	"#define INT64_MIN (-9223372036854775807L - 1)\n"
	"#define INT64_MAX 9223372036854775807L\n";

#define VECTORS(t) t, t "2", t "3", t "4", t "8", t "16"

/* Keywords, types, and built-in functions a buffer or variable could be
 * called. */
static const char *const opencl_reserved[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do",
	"double", "else", "enum", "extern", "float", "for", "goto", "if",
	"inline", "int", "long", "register", "restrict", "return", "short",
	"signed", "sizeof", "static", "struct", "switch", "typedef", "union",
	"unsigned", "void", "volatile", "while", "bool", "true", "false",
	"kernel", "global", "local", "constant", "private", "read_only",
	"write_only", "read_write", "uniform", "pipe", "image2d_t", "image3d_t",
	"sampler_t", "event_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
	"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
	"uint32_t", "uint64_t", "INT8_MIN", "INT8_MAX", "INT32_MIN", "INT32_MAX",
	"INT64_MIN", "INT64_MAX", "NAN", "INFINITY", "HUGE_VALF", "MAXFLOAT",
	VECTORS("char"), VECTORS("uchar"), VECTORS("short"), VECTORS("ushort"),
	VECTORS("int"), VECTORS("uint"), VECTORS("long"), VECTORS("ulong"),
	VECTORS("float"), VECTORS("double"), VECTORS("half"),
	"get_global_id", "get_local_id", "get_group_id", "get_global_size",
	"get_local_size", "get_num_groups", "get_work_dim", "get_global_offset",
	"barrier", "mem_fence", "read_mem_fence", "write_mem_fence",
	"exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt",
	"rsqrt", "cbrt", "pow", "pown", "powr", "tanh", "sinh", "cosh", "tan",
	"sin", "cos", "erf", "erfc", "fabs", "floor", "ceil", "round", "trunc",
	"rint", "fmin", "fmax", "fmod", "fma", "mad", "min", "max", "clamp",
	"mix", "sign", "step", "select", "dot", "cross", "length", "normalize",
	"abs", "isnan", "isinf", "isfinite", "signbit", "copysign", "hypot",
	"memcpy", "printf", "main",
	NULL
};

static int opencl_print_file(cg_printer *pr);
static void opencl_print_loop(cg_printer *pr, const loop_stmt *s);
static void opencl_print_alloc(cg_printer *pr, const loop_stmt *s);

const cg_dialect cg_dialect_opencl_c = {
	.name = "OpenCL C",
	.storage_type = { "uint8_t", "int8_t", "int32_t", "int64_t", "uint16_t",
		"uint16_t", "float", "double" },
	.value_type = { "int", "int8_t", "int32_t", "int64_t", "float", "float",
		"float", "double" },
	.scope_qualifier = { "__global", "__local", "__private" },
	.restrict_kw = "restrict",
	.helper_qualifier = "static inline",
	.loop_index = {
		[LOOP_BLOCK_X] = "get_group_id(0)", [LOOP_BLOCK_Y] = "get_group_id(1)",
		[LOOP_BLOCK_Z] = "get_group_id(2)", [LOOP_THREAD_X] = "get_local_id(0)",
		[LOOP_THREAD_Y] = "get_local_id(1)", [LOOP_THREAD_Z] = "get_local_id(2)",
	},
	.barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
	.unroll_pragma = "#pragma unroll %d",
	.vector_type_format = "%s%d",
	.unary_fn = {
		{ [TESSEL_EXP] = "exp", [TESSEL_LOG] = "log", [TESSEL_SQRT] = "sqrt",
		  [TESSEL_TANH] = "tanh", [TESSEL_ERF] = "erf",
		  [TESSEL_ABS] = "fabs", [TESSEL_FLOOR] = "floor" },
		{ [TESSEL_EXP] = "exp", [TESSEL_LOG] = "log", [TESSEL_SQRT] = "sqrt",
		  [TESSEL_TANH] = "tanh", [TESSEL_ERF] = "erf",
		  [TESSEL_ABS] = "fabs", [TESSEL_FLOOR] = "floor" },
	},
	.fmin_fn = { "fmin", "fmin" },
	.fmax_fn = { "fmax", "fmax" },
	.pow_fn = { "pow", "pow" },
	.reserved = opencl_reserved,
	.print_file = opencl_print_file,
	.print_loop = opencl_print_loop,
	.print_alloc = opencl_print_alloc,
};

/* ---- the structure of the program --------------------------------------- */

/* The kernels and workspaces of a program, as statements and buffers. */
typedef struct ocl_parts {
	int nkernels, nworkspaces;
	const loop_stmt *kernel[256];
	const loop_buffer *workspace[256];
} ocl_parts;

/* Add the kernels and workspaces of the top-level statement "s" to
 * "parts": a sequence holds kernels, a global allocation holds a
 * workspace around them, anything else is a kernel. */
static void split_top(cg_printer *pr, const loop_stmt *s, ocl_parts *parts)
{
	if (s->kind == LS_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			split_top(pr, s->u.seq.items[i], parts);
	} else if (s->kind == LS_ALLOC && s->u.alloc.buf->scope == LOOP_GLOBAL) {
		if (parts->nworkspaces == 256) {
			cg_error(pr, "more than 256 global temporaries");
			return;
		}
		parts->workspace[parts->nworkspaces++] = s->u.alloc.buf;
		split_top(pr, s->u.alloc.body, parts);
	} else if (parts->nkernels == 256) {
		cg_error(pr, "more than 256 kernels");
	} else {
		parts->kernel[parts->nkernels++] = s;
	}
}

static bool is_bound(loop_kind k)
{
	return k >= LOOP_BLOCK_X && k <= LOOP_THREAD_Z;
}

/* Raise "launch" to the extents of the loops bound in "s". */
static void gather_launch(cg_printer *pr, const loop_stmt *s, int64_t *launch)
{
	switch (s->kind) {
	case LS_FOR:
		if (is_bound(s->u.for_.kind)) {
			const loop_expr *e = s->u.for_.extent;
			if (e->kind != LX_INT || e->u.ival < 1) {
				cg_error(pr, "a loop bound to %s needs a constant positive "
					"extent", loop_kind_name(s->u.for_.kind));
				return;
			}
			if (e->u.ival > launch[s->u.for_.kind])
				launch[s->u.for_.kind] = e->u.ival;
		}
		gather_launch(pr, s->u.for_.body, launch);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather_launch(pr, s->u.seq.items[i], launch);
		break;
	case LS_IF:
		gather_launch(pr, s->u.if_.then_, launch);
		if (s->u.if_.else_)
			gather_launch(pr, s->u.if_.else_, launch);
		break;
	case LS_ALLOC:
		gather_launch(pr, s->u.alloc.body, launch);
		break;
	default:
		break;
	}
}

/* ---- statements ------------------------------------------------------------ */

/* Print the loop "s" bound to a block or thread index: its variable is
 * the index, guarded when the launch is larger than the loop. */
static void print_bound(cg_printer *pr, const loop_stmt *s)
{
	loop_kind kind = s->u.for_.kind;
	const loop_expr *min = s->u.for_.min;
	int64_t extent = s->u.for_.extent->u.ival;
	const char *name = cg_var_name(pr, s->u.for_.var);
	bool guard = extent < pr->launch[kind];
	cg_bind_loop_range(pr, s);
	cg_line(pr, "{\n");
	pr->depth++;
	cg_line(pr, "int64_t %s = ", name);
	if (min->kind != LX_INT || min->u.ival != 0) {
		cg_print_expr(pr, min, CG_PREC_ADD);
		cg_put(pr, " + ");
	}
	cg_put(pr, "(int64_t)%s;\n", pr->d->loop_index[kind]);
	if (guard) {
		cg_line(pr, "if ((int64_t)%s < %lld) {\n", pr->d->loop_index[kind],
			(long long)extent);
		cg_print_block_body(pr, s->u.for_.body);
		cg_line(pr, "}\n");
	} else {
		cg_print_stmt(pr, s->u.for_.body);
	}
	pr->depth--;
	cg_line(pr, "}\n");
}

/* Print the loop "s": bound loops through their index, the others (the
 * CPU's parallel and vector loops, vthread) as serial loops. */
static void opencl_print_loop(cg_printer *pr, const loop_stmt *s)
{
	if (is_bound(s->u.for_.kind))
		print_bound(pr, s);
	else
		cg_print_serial_loop(pr, s);
}

/* Print the allocation "s" as a private array of each thread, then its
 * body; a shared buffer is declared at the kernel's scope already. */
static void opencl_print_alloc(cg_printer *pr, const loop_stmt *s)
{
	const loop_buffer *b = s->u.alloc.buf;
	if (b->scope == LOOP_SHARED) {
		cg_print_stmt(pr, s->u.alloc.body);
		return;
	}
	const cg_buffer_info *info = cg_buffer(pr, b);
	int64_t n = cg_buffer_elems(b);
	cg_line(pr, "%s %s[%lld];\n", pr->d->storage_type[b->dtype],
		info ? info->name : b->name, (long long)(n > 0 ? n : 1));
	cg_print_stmt(pr, s->u.alloc.body);
}

/* ---- the file ----------------------------------------------------------------- */

/* Print the parameter of kernel "b": a __global pointer, const when no
 * kernel stores into it. */
static void print_param(cg_printer *pr, const loop_buffer *b, bool first)
{
	const cg_buffer_info *info = cg_buffer(pr, b);
	cg_put(pr, "%s\n\t__global %s%s *restrict %s", first ? "" : ",",
		info && !info->stored ? "const " : "", pr->d->storage_type[b->dtype],
		info ? info->name : b->name);
}

/* Print the kernel "k" of "parts" as "launch". */
static void print_kernel(cg_printer *pr, const ocl_parts *parts, int k,
	cg_launch *launch)
{
	const loop_prog *p = pr->p;
	cg_line(pr, "/* grid %lld x %lld x %lld, blocks of %lld x %lld x %lld */\n",
		(long long)launch->grid[0], (long long)launch->grid[1],
		(long long)launch->grid[2], (long long)launch->block[0],
		(long long)launch->block[1], (long long)launch->block[2]);
	cg_line(pr, "__kernel void %s(", launch->name);
	for (int i = 0; i < p->nargs; i++)
		print_param(pr, p->args[i], i == 0);
	for (int i = 0; i < parts->nworkspaces; i++)
		print_param(pr, parts->workspace[i], i == 0 && p->nargs == 0);
	if (p->nargs + parts->nworkspaces == 0)
		cg_put(pr, "void");
	cg_put(pr, ")\n{\n");
	pr->depth = 1;
	launch->shared_bytes = cg_print_shared_decls(pr, parts->kernel[k]);
	cg_print_stmt(pr, parts->kernel[k]);
	pr->depth = 0;
	cg_line(pr, "}\n\n");
}

/* Fill "launch" for kernel "k" of "parts" (and pr->launch for printing
 * it). */
static void plan_kernel(cg_printer *pr, const ocl_parts *parts, int k,
	cg_launch *launch)
{
	for (int i = 0; i < LOOP_KIND_COUNT; i++)
		pr->launch[i] = 1;
	gather_launch(pr, parts->kernel[k], pr->launch);
	if (parts->nkernels == 1)
		snprintf(launch->name, sizeof(launch->name), "%s", pr->kernel);
	else
		snprintf(launch->name, sizeof(launch->name), "%s",
			cg_fresh_name(pr, pr->kernel));
	for (int d = 0; d < 3; d++) {
		launch->grid[d] = pr->launch[LOOP_BLOCK_X + d];
		launch->block[d] = pr->launch[LOOP_THREAD_X + d];
	}
}

/* Refuse the helpers OpenCL C cannot compile (the f16 and bf16
 * conversions use memcpy). */
static void check_helpers(cg_printer *pr)
{
	for (int i = 0; i < pr->nhelpers; i++)
		if (strstr(pr->helpers[i].name, "f16")) {
			cg_error(pr, "f16 and bf16 are not supported in OpenCL C yet");
			return;
		}
}

/* Copy the launches and workspaces into pr->plan, when asked for. */
static void fill_plan(cg_printer *pr, const ocl_parts *parts, const cg_launch *launches)
{
	cg_gpu_plan *plan = pr->plan;
	if (!plan)
		return;
	plan->nkernels = parts->nkernels;
	plan->kernels = malloc(sizeof(cg_launch) * (size_t)(parts->nkernels + 1));
	memcpy(plan->kernels, launches, sizeof(cg_launch) * (size_t)parts->nkernels);
	plan->nworkspaces = parts->nworkspaces;
	plan->workspace_bytes = malloc(sizeof(int64_t) * (size_t)(parts->nworkspaces + 1));
	for (int i = 0; i < parts->nworkspaces; i++) {
		int64_t n = cg_buffer_elems(parts->workspace[i]);
		plan->workspace_bytes[i] = (n > 0 ? n : 1) *
			(int64_t)tessel_dtype_size(parts->workspace[i]->dtype);
	}
}

/* Print the file of "pr": the kernels first (which emits the helpers),
 * then the prelude, the helpers and the kernels in that order. */
static int opencl_print_file(cg_printer *pr)
{
	ocl_parts *parts = te_arena_alloc(&pr->arena, sizeof(*parts));
	memset(parts, 0, sizeof(*parts));
	if (pr->p->body)
		split_top(pr, pr->p->body, parts);
	cg_launch *launches = te_arena_alloc(&pr->arena,
		sizeof(cg_launch) * (size_t)(parts->nkernels + 1));
	te_strbuf kernels = { 0 }, *file = pr->out;
	pr->out = &kernels;
	for (int k = 0; k < parts->nkernels && !pr->failed; k++) {
		plan_kernel(pr, parts, k, &launches[k]);
		print_kernel(pr, parts, k, &launches[k]);
	}
	check_helpers(pr);
	pr->out = file;
	if (pr->failed) {
		te_sb_free(&kernels);
		return -1;
	}
	fill_plan(pr, parts, launches);
	cg_put(pr, "/* Kernel %s, generated by tessel for OpenCL C: %d kernel%s "
		"launched in order", pr->kernel, parts->nkernels,
		parts->nkernels == 1 ? "" : "s");
	if (parts->nworkspaces)
		cg_put(pr, ", %d global temporar%s after the arguments",
			parts->nworkspaces, parts->nworkspaces == 1 ? "y" : "ies");
	cg_put(pr, ". */\n%s\n", opencl_prelude);
	cg_write_helpers(pr, pr->out);
	te_sb_puts(pr->out, te_sb_str(&kernels));
	te_sb_free(&kernels);
	return 0;
}
