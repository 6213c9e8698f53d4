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

/* Return whether the flat offset "aff" of an access in the vectorized
 * loop over "v" of "lanes" iterations (from 0) steps by one element with
 * "v" and starts every run of lanes at a multiple of "lanes": each other
 * term's coefficient and the constant are multiples of it. */
static bool lanes_aligned(const cg_affine *aff, const loop_var *v, int64_t lanes)
{
	bool clean;
	if (cg_affine_coef(aff, v, &clean) != 1 || !clean || aff->constant % lanes)
		return false;
	for (int i = 0; i < aff->n; i++)
		if (aff->var[i] != v && aff->coef[i] % lanes)
			return false;
	return true;
}

/* Return "aff" without its terms in "v": the offset of lane 0. */
static cg_affine lane_zero(const cg_affine *aff, const loop_var *v)
{
	cg_affine z = *aff;
	for (int i = 0; i < z.n; i++)
		if (z.var[i] == v)
			z.coef[i] = 0;
	return z;
}

/* Return whether a vector of up to 4 f32 may be read or written at an
 * aligned offset of "b": kernel arguments and global temporaries come
 * from the device's allocator (256-byte aligned, docs/gpu.md), shared
 * arrays are declared aligned to 16 bytes; a thread's private arrays
 * have no alignment to rely on. */
static bool vector_buffer_ok(const cg_printer *pr, const loop_buffer *b)
{
	if (b->dtype != TESSEL_F32 || !pr->d->pointer_space[b->scope])
		return false;
	return b->scope == LOOP_GLOBAL || (b->scope == LOOP_SHARED && pr->d->shared_align);
}

/* Print "*(space float4 *)&name[offset]" for the lane-0 offset "aff" of
 * "b", read-only when "load". */
static void print_vector_ref(cg_printer *pr, const loop_buffer *b, const cg_affine *aff,
	int64_t lanes, bool load)
{
	const cg_buffer_info *info = cg_buffer(pr, b);
	const char *space = pr->d->pointer_space[b->scope];
	char type[32];
	snprintf(type, sizeof(type), pr->d->vector_type_format, "float", (int)lanes);
	cg_put(pr, "*(%s%s%s%s *)&%s[", load ? "const " : "", space, space[0] ? " " : "",
		type, info ? info->name : b->name);
	cg_print_affine(pr, aff, 0);
	cg_put(pr, "]");
}

/* Print the vectorized loop "s" as one vector copy when it is one: a
 * constant 2 or 4 iterations from 0 of a store of a load, f32 to f32,
 * both contiguous in its variable and starting at a multiple of the
 * lanes in buffers aligned for them (the cooperative fetch of a tile
 * into shared memory, TVM's vectorized fetch: one 128-bit load and
 * store per thread where there were four).  Return whether it did. */
static bool print_vector_copy(cg_printer *pr, const loop_stmt *s)
{
	const loop_expr *min = s->u.for_.min, *extent = s->u.for_.extent;
	const loop_stmt *body = s->u.for_.body;
	if (!pr->d->vector_type_format || min->kind != LX_INT || min->u.ival != 0 ||
	    extent->kind != LX_INT || (extent->u.ival != 2 && extent->u.ival != 4) ||
	    body->kind != LS_STORE || body->u.store.value->kind != LX_LOAD)
		return false;
	int64_t lanes = extent->u.ival;
	const loop_var *v = s->u.for_.var;
	const loop_expr *load = body->u.store.value;
	const loop_buffer *dst = body->u.store.buf, *src = load->u.load.buf;
	cg_affine to, from;
	cg_affine_offset(dst, body->u.store.n, body->u.store.index, &to);
	cg_affine_offset(src, load->u.load.n, load->u.load.index, &from);
	if (!vector_buffer_ok(pr, dst) || !vector_buffer_ok(pr, src) ||
	    !lanes_aligned(&to, v, lanes) || !lanes_aligned(&from, v, lanes))
		return false;
	cg_affine to0 = lane_zero(&to, v), from0 = lane_zero(&from, v);
	cg_line(pr, "%s", "");
	print_vector_ref(pr, dst, &to0, lanes, false);
	cg_put(pr, " = ");
	print_vector_ref(pr, src, &from0, lanes, true);
	cg_put(pr, ";\n");
	return true;
}

void cg_gpu_print_loop(cg_printer *pr, const loop_stmt *s)
{
	if (is_bound(s->u.for_.kind))
		print_bound(pr, s);
	else if (s->u.for_.kind != LOOP_VECTORIZED || !print_vector_copy(pr, s))
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
