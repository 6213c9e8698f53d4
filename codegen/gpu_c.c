/* The layout GPU dialects share (OpenCL C, CUDA C): a loop program
 * becomes one kernel per statement at the top of the program (inside its
 * global temporaries), launched in order (codegen/c_printer.h:
 * cg_gpu_plan), so that a stage computed at the root is finished by
 * every block before the next one reads it.
 *
 * A loop bound to a block or thread index is not a loop: its variable is
 * the dialect's index (get_group_id(d), blockIdx.x, ...), guarded by
 * "if (v < extent)" when the launch is larger than the loop (two loops
 * bound to the same index with different extents).  Everything outside
 * the thread loops runs in every thread of a block; the bind primitive's
 * rules (schedule/bind.c) keep such code to private work.  Parallel,
 * vectorized and vthread loops run as serial loops in each thread.
 *
 * The program's arguments and its global temporaries are the kernels'
 * pointer parameters, arguments first; every other allocation is a
 * private array of each thread, or a shared buffer declared at the
 * kernel's scope (cg_gpu_print_alloc, both dialects' print_alloc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

/* The kernels and workspaces of a program, as statements and buffers. */
typedef struct gpu_parts {
	int nkernels, nworkspaces;
	const loop_stmt *kernel[256];
	const loop_buffer *workspace[256];
} gpu_parts;

/* Add the kernels and workspaces of the top-level statement "s" to
 * "parts": a sequence holds kernels, a global allocation holds a
 * workspace around them, anything else is a kernel. */
static void split_top(cg_printer *pr, const loop_stmt *s, gpu_parts *parts)
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
static void gather_launch(cg_printer *pr, const loop_stmt *s, int64_t *launch,
	int *min_blocks)
{
	switch (s->kind) {
	case LS_FOR:
		if (s->u.for_.min_blocks > *min_blocks)
			*min_blocks = s->u.for_.min_blocks;
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
		gather_launch(pr, s->u.for_.body, launch, min_blocks);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather_launch(pr, s->u.seq.items[i], launch, min_blocks);
		break;
	case LS_IF:
		gather_launch(pr, s->u.if_.then_, launch, min_blocks);
		if (s->u.if_.else_)
			gather_launch(pr, s->u.if_.else_, launch, min_blocks);
		break;
	case LS_ALLOC:
		gather_launch(pr, s->u.alloc.body, launch, min_blocks);
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

void cg_gpu_print_alloc(cg_printer *pr, const loop_stmt *s)
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

void cg_gpu_print_loop(cg_printer *pr, const loop_stmt *s)
{
	if (is_bound(s->u.for_.kind))
		print_bound(pr, s);
	else
		cg_print_serial_loop(pr, s);
}

/* ---- the file ----------------------------------------------------------------- */

/* Print the parameter of kernel "b": a pointer to global memory, const
 * when no kernel stores into it. */
static void print_param(cg_printer *pr, const loop_buffer *b, bool first)
{
	const cg_buffer_info *info = cg_buffer(pr, b);
	const char *global = pr->d->scope_qualifier[LOOP_GLOBAL];
	cg_put(pr, "%s\n\t%s%s%s%s *%s %s", first ? "" : ",", global,
		global[0] ? " " : "", info && !info->stored ? "const " : "",
		pr->d->storage_type[b->dtype], pr->d->restrict_kw,
		info ? info->name : b->name);
}

/* Print the kernel "k" of "parts" as "launch". */
static void print_kernel(cg_printer *pr, const gpu_parts *parts, int k,
	cg_launch *launch)
{
	const loop_prog *p = pr->p;
	cg_line(pr, "/* grid %lld x %lld x %lld, blocks of %lld x %lld x %lld */\n",
		(long long)launch->grid[0], (long long)launch->grid[1],
		(long long)launch->grid[2], (long long)launch->block[0],
		(long long)launch->block[1], (long long)launch->block[2]);
	cg_line(pr, "%s ", pr->d->kernel_qualifier);
	if (launch->min_blocks && pr->d->launch_bounds)
		cg_put(pr, "%s(%lld, %d) ", pr->d->launch_bounds, (long long)(launch->block[0] *
			launch->block[1] * launch->block[2]), launch->min_blocks);
	cg_put(pr, "%s(", launch->name);
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
static void plan_kernel(cg_printer *pr, const gpu_parts *parts, int k,
	cg_launch *launch)
{
	for (int i = 0; i < LOOP_KIND_COUNT; i++)
		pr->launch[i] = 1;
	launch->min_blocks = 0;
	gather_launch(pr, parts->kernel[k], pr->launch, &launch->min_blocks);
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

/* Copy the launches and workspaces into pr->plan, when asked for. */
static void fill_plan(cg_printer *pr, const gpu_parts *parts, const cg_launch *launches)
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

int cg_gpu_print_file(cg_printer *pr, const char *prelude,
	void (*check)(cg_printer *pr))
{
	gpu_parts *parts = te_arena_alloc(&pr->arena, sizeof(*parts));
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
	if (check && !pr->failed)
		check(pr);
	pr->out = file;
	if (pr->failed) {
		te_sb_free(&kernels);
		return -1;
	}
	fill_plan(pr, parts, launches);
	cg_put(pr, "/* Kernel %s, generated by tessel for %s: %d kernel%s "
		"launched in order", pr->kernel, pr->d->name, parts->nkernels,
		parts->nkernels == 1 ? "" : "s");
	if (parts->nworkspaces)
		cg_put(pr, ", %d global temporar%s after the arguments",
			parts->nworkspaces, parts->nworkspaces == 1 ? "y" : "ies");
	cg_put(pr, ". */\n%s\n", prelude);
	cg_write_helpers(pr, pr->out);
	te_sb_puts(pr->out, te_sb_str(&kernels));
	te_sb_free(&kernels);
	return 0;
}
