/* The CPU C dialect: kernels with the ABI of tessel/kernel.h, parallel
 * loops outlined into functions the runtime's parallel_for runs, vector
 * loops on GCC vector extensions, allocations on the stack or the heap.
 *
 * The file: standard headers, the kernel ABI declarations (a verbatim
 * copy of tessel/kernel.h), the helpers the kernel uses, the outlined
 * parallel bodies, then the kernel.
 *
 * Allocations: buffers of at most CPU_STACK_BYTES are arrays declared
 * where the allocation is, aligned to 64 bytes; larger ones are taken
 * from the runtime's workspace (env->workspace_alloc) once, at the entry
 * of the function that contains them (the kernel or the outlined body,
 * so once per thread's chunk rather than once per loop iteration), and
 * given back before it returns: the runtime keeps them for the next call
 * (runtime/workspace.h says why not malloc).  A failed allocation makes
 * the kernel return 1.
 *
 * Vector loops (LOOP_VECTORIZED, constant extent, no loop inside): the
 * body is printed once on vectors of "lanes" elements when every access
 * is contiguous in the loop's variable (coefficient 1 in the flat
 * offset), invariant in it, or a load of every other element
 * (coefficient 2: two vector loads and a shuffle), every value it varies
 * is a float (f16 and bf16 computed in float), and no select, && or || that varies with it
 * has a load in a branch it may skip.  Invariant subexpressions are
 * computed as scalars and broadcast; intrinsics without a vector form run
 * lane by lane in small helpers; a remainder runs as scalar code.  Any
 * other vectorized loop runs as a scalar loop, marked "#pragma GCC
 * ivdep" when its accesses show no dependence between iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

#define CPU_STACK_BYTES 65536
#define CPU_ALIGN 64

/* The declarations of tessel/kernel.h, copied verbatim (tests check). */
static const char kernel_abi[] =
	"/* The body of a parallel loop, outlined: run iterations [begin, end). */\n"
	"typedef void (*tessel_parallel_body)(int64_t begin, int64_t end, void *closure);\n"
	"\n"
	"/* What a kernel may ask of the runtime while it runs. */\n"
	"typedef struct tessel_kernel_env {\n"
	"\tint num_threads;\n"
	"\t/* Run \"body\" over [0, n) split into chunks across the pool's threads\n"
	"\t * and return when all are done. */\n"
	"\tvoid (*parallel_for)(const struct tessel_kernel_env *env, int64_t n,\n"
	"\t\ttessel_parallel_body body, void *closure);\n"
	"\tvoid *pool;\n"
	"\t/* Return \"bytes\" bytes of scratch memory aligned to 64 bytes for the\n"
	"\t * calling thread, or NULL when memory runs out.  Kernels take their\n"
	"\t * large temporaries here rather than from malloc, so that a runtime\n"
	"\t * can keep them from one call to the next. */\n"
	"\tvoid *(*workspace_alloc)(const struct tessel_kernel_env *env, size_t bytes);\n"
	"\t/* Give back the last \"count\" blocks workspace_alloc gave the calling\n"
	"\t * thread, last first (by count, so that no pointer to scratch memory\n"
	"\t * escapes the kernel). */\n"
	"\tvoid (*workspace_pop)(const struct tessel_kernel_env *env, int count);\n"
	"} tessel_kernel_env;\n"
	"\n"
	"/* A kernel: \"args\" holds one data pointer per buffer argument (inputs,\n"
	" * then outputs, in the op's order).  Returns 0. */\n"
	"typedef int (*tessel_kernel_fn)(void *const *args, const tessel_kernel_env *env);\n";

/* A function of math.h with its float and long double variants. */
#define MATH_FN(name) name, name "f", name "l"

/* Keywords, and the names the included headers declare that a kernel,
 * buffer or variable could be called. */
static const char *const cpu_reserved[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do",
	"double", "else", "enum", "extern", "float", "for", "goto", "if",
	"inline", "int", "long", "register", "restrict", "return", "short",
	"signed", "sizeof", "static", "struct", "switch", "typedef", "union",
	"unsigned", "void", "volatile", "while", "bool", "true", "false",
	"asm", "typeof", "main", "NULL", "INFINITY", "NAN", "HUGE_VAL",
	"INT8_MIN", "INT8_MAX", "UINT8_MAX", "INT32_MIN", "INT32_MAX", "INT64_MIN",
	"INT64_MAX",
	"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
	"uint32_t", "uint64_t", "intptr_t", "uintptr_t", "size_t",
	"tessel_parallel_body", "tessel_kernel_env", "tessel_kernel_fn",
	"isnan", "isinf", "isfinite", "isnormal", "signbit", "fpclassify",
	MATH_FN("acos"), MATH_FN("asin"), MATH_FN("atan"), MATH_FN("atan2"),
	MATH_FN("cos"), MATH_FN("sin"), MATH_FN("tan"), MATH_FN("acosh"),
	MATH_FN("asinh"), MATH_FN("atanh"), MATH_FN("cosh"), MATH_FN("sinh"),
	MATH_FN("tanh"), MATH_FN("exp"), MATH_FN("exp2"), MATH_FN("expm1"),
	MATH_FN("frexp"), MATH_FN("ilogb"), MATH_FN("ldexp"), MATH_FN("log"),
	MATH_FN("log10"), MATH_FN("log1p"), MATH_FN("log2"), MATH_FN("logb"),
	MATH_FN("modf"), MATH_FN("scalbn"), MATH_FN("scalbln"), MATH_FN("cbrt"),
	MATH_FN("fabs"), MATH_FN("hypot"), MATH_FN("pow"), MATH_FN("sqrt"),
	MATH_FN("erf"), MATH_FN("erfc"), MATH_FN("lgamma"), MATH_FN("tgamma"),
	MATH_FN("ceil"), MATH_FN("floor"), MATH_FN("nearbyint"), MATH_FN("rint"),
	MATH_FN("lrint"), MATH_FN("llrint"), MATH_FN("round"), MATH_FN("lround"),
	MATH_FN("llround"), MATH_FN("trunc"), MATH_FN("fmod"), MATH_FN("remainder"),
	MATH_FN("remquo"), MATH_FN("copysign"), MATH_FN("nan"), MATH_FN("nextafter"),
	MATH_FN("nexttoward"), MATH_FN("fdim"), MATH_FN("fmax"), MATH_FN("fmin"),
	MATH_FN("fma"),
	"abs", "labs", "llabs", "div", "ldiv", "lldiv", "atoi", "atol", "atoll",
	"atof", "strtod", "strtof", "strtol", "strtoll", "strtoul", "malloc",
	"calloc", "realloc", "free", "aligned_alloc", "exit", "abort", "atexit",
	"rand", "srand", "qsort", "bsearch", "getenv", "system",
	"memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strcpy",
	"strncpy", "strcat", "strncat", "strcmp", "strncmp", "strchr", "strrchr",
	"strstr", "strtok", "strdup", "strerror", "strspn", "strcspn", "strpbrk",
	"strcoll", "strxfrm",
	NULL
};

static int cpu_prepare(loop_prog *p, const cg_target *t, tessel_ctx *ctx);
static int cpu_print_file(cg_printer *pr);
static void cpu_print_loop(cg_printer *pr, const loop_stmt *s);
static void cpu_print_alloc(cg_printer *pr, const loop_stmt *s);
static bool cpu_print_dot_group(cg_printer *pr, const loop_stmt *s);

const cg_dialect cg_dialect_cpu_c = {
	.name = "C",
	.storage_type = { "uint8_t", "int8_t", "int32_t", "int64_t", "uint16_t",
		"uint16_t", "float", "double", "uint8_t" },
	.value_type = { "int", "int8_t", "int32_t", "int64_t", "float", "float",
		"float", "double", "uint8_t" },
	.scope_qualifier = { "", "", "" },
	.restrict_kw = "restrict",
	.helper_qualifier = "static inline",
	.f16c = true,
	.barrier = NULL,
	.unroll_pragma = "#pragma GCC unroll %d",
	.vector_type_format = "tsl_%sx%d",
	.unary_fn = {
		{ [TESSEL_EXP] = "expf", [TESSEL_LOG] = "logf", [TESSEL_SQRT] = "sqrtf",
		  [TESSEL_TANH] = "tanhf", [TESSEL_ERF] = "erff",
		  [TESSEL_ABS] = "fabsf", [TESSEL_FLOOR] = "floorf" },
		{ [TESSEL_EXP] = "exp", [TESSEL_LOG] = "log", [TESSEL_SQRT] = "sqrt",
		  [TESSEL_TANH] = "tanh", [TESSEL_ERF] = "erf",
		  [TESSEL_ABS] = "fabs", [TESSEL_FLOOR] = "floor" },
	},
	.fmin_fn = { "tsl_fmin_f32", "tsl_fmin_f64" },
	.fmax_fn = { "tsl_fmax_f32", "tsl_fmax_f64" },
	.pow_fn = { "powf", "pow" },
	.prefetch_fn = "__builtin_prefetch",
	.reserved = cpu_reserved,
	.prepare = cpu_prepare,
	.print_file = cpu_print_file,
	.print_loop = cpu_print_loop,
	.print_alloc = cpu_print_alloc,
	.print_dot_group = cpu_print_dot_group,
};

/* ---- the printer's own passes ---------------------------------------------- */

/* Rewrite the printer's copy of the program: tiles accumulated in place
 * across a serial loop become local buffers (ir/loop_promote.c), which
 * the compiler keeps in registers, and the vectors every row of such a
 * tile reads are read once and kept in registers too
 * (ir/loop_pin_loads.c; 32 vector registers with AVX-512, 16 below).
 * The program is not verified again: it may be one a test made invalid
 * on purpose, and the passes keep valid programs valid
 * (tests/test_loop.c, "loop_promote"). */
static int cpu_prepare(loop_prog *p, const cg_target *t, tessel_ctx *ctx)
{
	(void)ctx;
	int registers = t->vector_bytes >= 64 ? 32 : 16;
	int changed = loop_promote_accumulators(p,
		(int64_t)registers * (t->vector_bytes > 0 ? t->vector_bytes : 16));
	changed += loop_pin_loads(p, t->vector_bytes, registers);
	if (changed)
		loop_simplify(p);
	return 0;
}

/* ---- buffers -------------------------------------------------------------- */

/* Return whether values of "dt" are floats (f16 and bf16 included). */
static bool is_float(tessel_dtype dt)
{
	return tessel_dtype_is_float(dt);
}

/* Return the bytes the allocation of "b" takes, rounded up to CPU_ALIGN
 * (INT64_MAX rounded down when it would overflow). */
static int64_t alloc_bytes(const loop_buffer *b)
{
	int64_t n = cg_buffer_elems(b), bytes;
	if (__builtin_mul_overflow(n > 0 ? n : 1, (int64_t)tessel_dtype_size(b->dtype),
	    &bytes) || bytes > INT64_MAX - CPU_ALIGN)
		return INT64_MAX / CPU_ALIGN * CPU_ALIGN;
	return (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
}

/* Return whether the allocation of "b" is too large for the stack. */
static bool on_heap(const loop_buffer *b)
{
	return alloc_bytes(b) > CPU_STACK_BYTES;
}

/* Write the C type of a pointer to the elements of "b" into "buf" of
 * size "len" ("const float *restrict"). */
static void pointer_type(const cg_printer *pr, const loop_buffer *b, char *buf,
	size_t len)
{
	const cg_buffer_info *info = cg_buffer(pr, b);
	bool readonly = info && !info->stored;
	const char *scope = pr->d->scope_qualifier[b->scope];
	snprintf(buf, len, "%s%s%s%s *%s", scope, *scope ? " " : "",
		readonly ? "const " : "", pr->d->storage_type[b->dtype], pr->d->restrict_kw);
}

/* Return the C identifier of "b". */
static const char *buffer_name(const cg_printer *pr, const loop_buffer *b)
{
	const cg_buffer_info *info = cg_buffer(pr, b);
	return info ? info->name : b->name;
}

/* ---- walking statements ---------------------------------------------------- */

/* A list of statements, buffers or variables gathered by a walk. */
typedef struct cpu_list {
	int n;
	const void **item;
} cpu_list;

/* Return whether "x" is in "l". */
static bool list_has(const cpu_list *l, const void *x)
{
	for (int i = 0; i < l->n; i++)
		if (l->item[i] == x)
			return true;
	return false;
}

/* Append "x" to "l" (in the arena of "pr") unless it is there. */
static void list_add(cg_printer *pr, cpu_list *l, const void *x)
{
	if (!list_has(l, x))
		te_push(&pr->arena, (void ***)&l->item, &l->n, (void *)x);
}

/* Add to "heap" the heap allocations of "s" that the function printing
 * "s" makes: those outside the parallel loops inside "s". */
static void gather_heap_allocs(cg_printer *pr, const loop_stmt *s, cpu_list *heap)
{
	switch (s->kind) {
	case LS_FOR:
		if (s->u.for_.kind != LOOP_PARALLEL)
			gather_heap_allocs(pr, s->u.for_.body, heap);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather_heap_allocs(pr, s->u.seq.items[i], heap);
		break;
	case LS_IF:
		gather_heap_allocs(pr, s->u.if_.then_, heap);
		if (s->u.if_.else_)
			gather_heap_allocs(pr, s->u.if_.else_, heap);
		break;
	case LS_ALLOC:
		if (on_heap(s->u.alloc.buf))
			list_add(pr, heap, s->u.alloc.buf);
		gather_heap_allocs(pr, s->u.alloc.body, heap);
		break;
	default:
		break;
	}
}

/* Return whether "s" has a statement for which "pred" holds, looking
 * into parallel loops when "into_parallel". */
static bool any_stmt(const loop_stmt *s, bool (*pred)(const loop_stmt *),
	bool into_parallel)
{
	if (pred(s))
		return true;
	switch (s->kind) {
	case LS_FOR:
		if (s->u.for_.kind == LOOP_PARALLEL && !into_parallel)
			return false;
		return any_stmt(s->u.for_.body, pred, into_parallel);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (any_stmt(s->u.seq.items[i], pred, into_parallel))
				return true;
		return false;
	case LS_IF:
		return any_stmt(s->u.if_.then_, pred, into_parallel) ||
			(s->u.if_.else_ && any_stmt(s->u.if_.else_, pred, into_parallel));
	case LS_ALLOC:
		return any_stmt(s->u.alloc.body, pred, into_parallel);
	default:
		return false;
	}
}

/* Return whether "s" allocates on the heap. */
static bool is_heap_alloc(const loop_stmt *s)
{
	return s->kind == LS_ALLOC && on_heap(s->u.alloc.buf);
}

/* Return whether "s" is a parallel loop. */
static bool is_parallel_loop(const loop_stmt *s)
{
	return s->kind == LS_FOR && s->u.for_.kind == LOOP_PARALLEL;
}

/* Return whether "s" is a loop of any kind. */
static bool is_loop(const loop_stmt *s)
{
	return s->kind == LS_FOR;
}

/* Return whether the parallel loop "s" may fail (allocates on the heap). */
static bool parallel_may_fail(const loop_stmt *s)
{
	return any_stmt(s->u.for_.body, is_heap_alloc, true);
}

/* Return whether "s" is a parallel loop that may fail. */
static bool is_failing_parallel(const loop_stmt *s)
{
	return is_parallel_loop(s) && parallel_may_fail(s);
}

/* Return whether "s" has a parallel loop outside other parallel loops
 * (one that may fail, when "failing_only"). */
static bool has_direct_parallel(const loop_stmt *s, bool failing_only)
{
	return any_stmt(s, failing_only ? is_failing_parallel : is_parallel_loop,
		false);
}

/* ---- functions: heap allocations, failure --------------------------------- */

/* Print the statement that records a failure in the current function. */
static void print_failure(cg_printer *pr)
{
	if (pr->fn->outlined)
		cg_line(pr, "__atomic_store_n(&captured->status, 1, __ATOMIC_RELAXED);\n");
	else
		cg_line(pr, "status = 1;\n");
}

/* The helper through which kernels take workspace: declared malloc-like,
 * so that the compiler knows that what it returns aliases nothing else,
 * as it knew of aligned_alloc, and not inlined, since gcc forgets the
 * attribute of a function it inlined (a conv2d's inner loop then
 * reloaded its weights after every store to the accumulator). */
static const char workspace_helper[] =
	"static __attribute__((noinline, malloc, assume_aligned(64), alloc_size(2)))\n"
	"void *tsl_workspace(const tessel_kernel_env *env, size_t bytes)\n"
	"{\n"
	"\treturn env->workspace_alloc(env, bytes);\n"
	"}\n";

/* Print the allocations "heap" at the entry of the current function, and
 * what it does when one fails: give back the others and return. */
static void print_heap_entry(cg_printer *pr, const cpu_list *heap)
{
	char type[128];
	if (!heap->n)
		return;
	cg_need_helper(pr, "tsl_workspace", workspace_helper);
	for (int i = 0; i < heap->n; i++) {
		const loop_buffer *b = heap->item[i];
		pointer_type(pr, b, type, sizeof(type));
		cg_line(pr, "%s %s = tsl_workspace(env, %lld);\n", type,
			buffer_name(pr, b), (long long)alloc_bytes(b));
	}
	cg_line(pr, "if (");
	for (int i = 0; i < heap->n; i++)
		cg_put(pr, "%s!%s", i ? " || " : "", buffer_name(pr, heap->item[i]));
	cg_put(pr, ") {\n");
	pr->depth++;
	if (heap->n > 1) {
		cg_line(pr, "env->workspace_pop(env, ");
		for (int i = 0; i < heap->n; i++)
			cg_put(pr, "%s(%s != 0)", i ? " + " : "", buffer_name(pr, heap->item[i]));
		cg_put(pr, ");\n");
	}
	if (pr->fn->outlined) {
		print_failure(pr);
		cg_line(pr, "return;\n");
	} else {
		cg_line(pr, "return 1;\n");
	}
	pr->depth--;
	cg_line(pr, "}\n");
}

/* Print the return of the allocations "heap" to the workspace. */
static void print_heap_exit(cg_printer *pr, const cpu_list *heap)
{
	if (heap->n)
		cg_line(pr, "env->workspace_pop(env, %d);\n", heap->n);
}

/* Print the allocation "s": an aligned array where it is for a small
 * buffer (heap buffers were allocated at the function's entry), then its
 * body. */
static void cpu_print_alloc(cg_printer *pr, const loop_stmt *s)
{
	const loop_buffer *b = s->u.alloc.buf;
	if (!on_heap(b)) {
		int64_t n = cg_buffer_elems(b);
		const char *scope = pr->d->scope_qualifier[b->scope];
		cg_line(pr, "%s%s%s %s[%lld] __attribute__((aligned(%d)));\n", scope,
			*scope ? " " : "", pr->d->storage_type[b->dtype], buffer_name(pr, b),
			(long long)(n > 0 ? n : 1), CPU_ALIGN);
	}
	cg_print_stmt(pr, s->u.alloc.body);
}

/* ---- parallel loops -------------------------------------------------------- */

/* What the outlined body of a parallel loop captures. */
typedef struct captures {
	cpu_list bound_vars;    /* bound inside the loop, the loop's own included */
	cpu_list inner_bufs;    /* allocated inside the loop */
	cpu_list vars;          /* captured variables, by id */
	cpu_list bufs;          /* captured buffers, arguments first */
	bool env;               /* runs a parallel loop or allocates itself */
	bool status;            /* may fail */
} captures;

/* Add the variables and buffers "e" uses that the loop does not bind to
 * the captures "c". */
static void capture_expr(cg_printer *pr, captures *c, const loop_expr *e)
{
	switch (e->kind) {
	case LX_VAR:
		if (!list_has(&c->bound_vars, e->u.var))
			list_add(pr, &c->vars, e->u.var);
		break;
	case LX_LOAD:
		if (!list_has(&c->inner_bufs, e->u.load.buf))
			list_add(pr, &c->bufs, e->u.load.buf);
		for (int i = 0; i < e->u.load.n; i++)
			capture_expr(pr, c, e->u.load.index[i]);
		break;
	case LX_UNARY:
		capture_expr(pr, c, e->u.un.a);
		break;
	case LX_BINARY:
		capture_expr(pr, c, e->u.bin.a);
		capture_expr(pr, c, e->u.bin.b);
		break;
	case LX_SELECT:
		capture_expr(pr, c, e->u.sel.cond);
		capture_expr(pr, c, e->u.sel.then_);
		capture_expr(pr, c, e->u.sel.else_);
		break;
	case LX_CAST:
		capture_expr(pr, c, e->u.cast.a);
		break;
	default:
		break;
	}
}

/* Gather what "s" binds ("binding") or else what it uses from outside. */
static void capture_stmt(cg_printer *pr, captures *c, const loop_stmt *s,
	bool binding)
{
	switch (s->kind) {
	case LS_FOR:
		if (binding) {
			list_add(pr, &c->bound_vars, s->u.for_.var);
		} else {
			c->env |= s->u.for_.kind == LOOP_PARALLEL;
			capture_expr(pr, c, s->u.for_.min);
			capture_expr(pr, c, s->u.for_.extent);
		}
		capture_stmt(pr, c, s->u.for_.body, binding);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			capture_stmt(pr, c, s->u.seq.items[i], binding);
		break;
	case LS_STORE:
		if (binding)
			break;
		if (!list_has(&c->inner_bufs, s->u.store.buf))
			list_add(pr, &c->bufs, s->u.store.buf);
		for (int i = 0; i < s->u.store.n; i++)
			capture_expr(pr, c, s->u.store.index[i]);
		capture_expr(pr, c, s->u.store.value);
		break;
	case LS_IF:
		if (!binding)
			capture_expr(pr, c, s->u.if_.cond);
		capture_stmt(pr, c, s->u.if_.then_, binding);
		if (s->u.if_.else_)
			capture_stmt(pr, c, s->u.if_.else_, binding);
		break;
	case LS_ALLOC:
		if (binding)
			list_add(pr, &c->inner_bufs, s->u.alloc.buf);
		capture_stmt(pr, c, s->u.alloc.body, binding);
		break;
	case LS_PREFETCH:
		if (binding)
			break;
		if (!list_has(&c->inner_bufs, s->u.prefetch.buf))
			list_add(pr, &c->bufs, s->u.prefetch.buf);
		for (int i = 0; i < s->u.prefetch.n; i++)
			capture_expr(pr, c, s->u.prefetch.index[i]);
		break;
	case LS_BARRIER:
		break;
	}
}

/* Return the position of "b" in the naming order of "pr" (arguments
 * first). */
static int buffer_rank(const cg_printer *pr, const loop_buffer *b)
{
	for (int i = 0; i < pr->nbufs; i++)
		if (pr->bufs[i].buf == b)
			return i;
	return pr->nbufs;
}

/* Sort the buffers "l" in the naming order of "pr". */
static void sort_buffers(const cg_printer *pr, cpu_list *l)
{
	for (int i = 1; i < l->n; i++)
		for (int j = i; j > 0 && buffer_rank(pr, l->item[j]) <
		     buffer_rank(pr, l->item[j - 1]); j--) {
			const void *t = l->item[j];
			l->item[j] = l->item[j - 1];
			l->item[j - 1] = t;
		}
}

/* Sort the variables "l" by id. */
static void sort_vars(cpu_list *l)
{
	for (int i = 1; i < l->n; i++)
		for (int j = i; j > 0 && ((const loop_var *)l->item[j])->id <
		     ((const loop_var *)l->item[j - 1])->id; j--) {
			const void *t = l->item[j];
			l->item[j] = l->item[j - 1];
			l->item[j - 1] = t;
		}
}

/* Fill "c" with what the parallel loop "s" captures. */
static void gather_captures(cg_printer *pr, const loop_stmt *s, captures *c)
{
	memset(c, 0, sizeof(*c));
	list_add(pr, &c->bound_vars, s->u.for_.var);
	capture_stmt(pr, c, s->u.for_.body, true);
	capture_expr(pr, c, s->u.for_.min);
	capture_stmt(pr, c, s->u.for_.body, false);
	c->status = parallel_may_fail(s);
	c->env |= c->status;
	sort_buffers(pr, &c->bufs);
	sort_vars(&c->vars);
}

/* Print the definition of "type", the closure struct of the captures "c":
 * the environment when the body runs parallel loops, the buffers and
 * variables it uses, its failure status when it may fail. */
static void print_closure_type(cg_printer *pr, const captures *c, const char *type)
{
	char ptr[128];
	cg_line(pr, "typedef struct %s {\n", type);
	pr->depth++;
	if (c->env)
		cg_line(pr, "const tessel_kernel_env *env;\n");
	for (int i = 0; i < c->bufs.n; i++) {
		pointer_type(pr, c->bufs.item[i], ptr, sizeof(ptr));
		cg_line(pr, "%s %s;\n", ptr, buffer_name(pr, c->bufs.item[i]));
	}
	for (int i = 0; i < c->vars.n; i++)
		cg_line(pr, "int64_t %s;\n", cg_var_name(pr, c->vars.item[i]));
	if (c->status)
		cg_line(pr, "int status;\n");
	if (!c->env && !c->bufs.n && !c->vars.n && !c->status)
		cg_line(pr, "int unused;\n");
	pr->depth--;
	cg_line(pr, "} %s;\n\n", type);
}

/* Print the statements of a function: heap allocations, "status" when a
 * parallel loop inside may fail, "body" (inside the chunk loop of
 * "own_loop" for an outlined function), frees, and the kernel's return. */
static void print_function_body(cg_printer *pr, const loop_stmt *body,
	const loop_stmt *own_loop);

/* Print the outlined function "name" of the parallel loop "s" with the
 * closure type "type" into the functions of "pr". */
static void print_outlined(cg_printer *pr, const loop_stmt *s, const captures *c,
	const char *name, const char *type)
{
	char ptr[128];
	te_strbuf sb = { 0 }, *saved_out = pr->out;
	cg_function fn = { .outlined = true }, *saved_fn = pr->fn;
	int saved_depth = pr->depth;
	pr->out = &sb;
	pr->fn = &fn;
	pr->depth = 0;
	print_closure_type(pr, c, type);
	cg_line(pr, "static void %s(int64_t begin, int64_t end, void *closure)\n{\n",
		name);
	pr->depth = 1;
	cg_line(pr, "%s *captured = closure;\n", type);
	if (c->env)
		cg_line(pr, "const tessel_kernel_env *env = captured->env;\n");
	for (int i = 0; i < c->bufs.n; i++) {
		const char *b = buffer_name(pr, c->bufs.item[i]);
		pointer_type(pr, c->bufs.item[i], ptr, sizeof(ptr));
		cg_line(pr, "%s %s = captured->%s;\n", ptr, b, b);
	}
	for (int i = 0; i < c->vars.n; i++) {
		const char *v = cg_var_name(pr, c->vars.item[i]);
		cg_line(pr, "int64_t %s = captured->%s;\n", v, v);
	}
	print_function_body(pr, s->u.for_.body, s);
	pr->depth = 0;
	cg_line(pr, "}\n\n");
	te_sb_puts(&pr->functions, te_sb_str(&sb));
	te_sb_free(&sb);
	pr->out = saved_out;
	pr->fn = saved_fn;
	pr->depth = saved_depth;
}

/* Print the header of the loop "s" inside its outlined function: over
 * its chunk [begin, end), shifted by its min. */
static void print_chunk_loop(cg_printer *pr, const loop_stmt *s)
{
	const char *v = cg_var_name(pr, s->u.for_.var);
	const loop_expr *min = s->u.for_.min;
	cg_bind_loop_range(pr, s);
	if (min->kind == LX_INT && min->u.ival == 0) {
		cg_line(pr, "for (int64_t %s = begin; %s < end; %s++) {\n", v, v, v);
		return;
	}
	cg_line(pr, "for (int64_t %s = ", v);
	cg_print_as(pr, min, TESSEL_I64, CG_PREC_ADD);
	cg_put(pr, " + begin; %s < ", v);
	cg_print_as(pr, min, TESSEL_I64, CG_PREC_ADD);
	cg_put(pr, " + end; %s++) {\n", v);
}

/* Print the parallel loop "s": its body outlined, and the call that runs
 * it on the thread pool. */
static void print_parallel(cg_printer *pr, const loop_stmt *s)
{
	char name[400], type[420], closure[32];
	int k = pr->noutlined++;
	captures c;
	snprintf(name, sizeof(name), "%s_parallel%d", pr->kernel, k);
	snprintf(type, sizeof(type), "%s_closure", name);
	snprintf(closure, sizeof(closure), "closure%d", k);
	gather_captures(pr, s, &c);
	print_outlined(pr, s, &c, name, type);
	cg_line(pr, "%s %s = {\n", type, closure);
	pr->depth++;
	if (c.env)
		cg_line(pr, ".env = env,\n");
	for (int i = 0; i < c.bufs.n; i++) {
		const char *b = buffer_name(pr, c.bufs.item[i]);
		cg_line(pr, ".%s = %s,\n", b, b);
	}
	for (int i = 0; i < c.vars.n; i++) {
		const char *v = cg_var_name(pr, c.vars.item[i]);
		cg_line(pr, ".%s = %s,\n", v, v);
	}
	pr->depth--;
	cg_line(pr, "};\n");
	cg_line(pr, "env->parallel_for(env, ");
	cg_print_as(pr, s->u.for_.extent, TESSEL_I64, CG_PREC_NONE);
	cg_put(pr, ", %s, &%s);\n", name, closure);
	if (c.status) {
		cg_line(pr, "if (%s.status) {\n", closure);
		pr->depth++;
		print_failure(pr);
		pr->depth--;
		cg_line(pr, "}\n");
	}
}

/* ---- vector loops ----------------------------------------------------------- */

/* How a value inside a vector loop is computed: the same for every lane
 * (a scalar), as a vector of floats or doubles, as a mask of int32 lanes
 * (-1 true, 0 false), or not at all on vectors. */
typedef enum vclass { V_SCALAR, V_F32, V_F64, V_MASK, V_NONE } vclass;

/* Return the vector class of values of the float "dt". */
static vclass float_class(tessel_dtype dt)
{
	return dt == TESSEL_F64 ? V_F64 : V_F32;
}

/* Return whether a value of class "c" can be an operand of float
 * arithmetic (a scalar is broadcast). */
static bool arith_class(vclass c)
{
	return c == V_SCALAR || c == V_F32 || c == V_F64;
}

/* Return the stride of the access "index" of "b" in the vector variable
 * of "pr" (elements from one lane to the next), or 0 when its offset is
 * not affine in it. */
static int64_t lane_stride(const cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	cg_affine aff;
	bool clean;
	cg_affine_offset(b, n, index, &aff);
	int64_t k = cg_affine_coef(&aff, pr->vector_var, &clean);
	return clean ? k : 0;
}

/* Return whether the access "index" of "b" is contiguous in the vector
 * variable of "pr". */
static bool contiguous(const cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	return lane_stride(pr, b, n, index) == 1;
}

/* Return whether the load "e" reads every other element along the
 * vector variable of "pr" (a pooling window or a convolution of stride
 * 2): two vector loads and a shuffle, where the lanes would otherwise be
 * read one by one.  Half-precision buffers are left to scalar code. */
static bool every_other(const cg_printer *pr, const loop_expr *e)
{
	const loop_buffer *b = e->u.load.buf;
	return b->dtype != TESSEL_F16 && b->dtype != TESSEL_BF16 &&
	       lane_stride(pr, b, e->u.load.n, e->u.load.index) == 2;
}

static vclass vector_class(const cg_printer *pr, const loop_expr *e);

/* Return the vector class of the varying unary "e". */
static vclass unary_class(const cg_printer *pr, const loop_expr *e)
{
	vclass a = vector_class(pr, e->u.un.a);
	if (e->u.un.op == TESSEL_NOT)
		return a == V_MASK ? V_MASK : V_NONE;
	if (!is_float(e->dtype) || (a != V_F32 && a != V_F64))
		return V_NONE;
	return float_class(e->dtype);
}

/* Return the vector class of the varying binary "e": comparisons of
 * floats give masks, && and || of masks give masks when their right side
 * loads nothing, float arithmetic gives float vectors. */
static vclass binary_class(const cg_printer *pr, const loop_expr *e)
{
	tessel_binary op = e->u.bin.op;
	vclass a = vector_class(pr, e->u.bin.a), b = vector_class(pr, e->u.bin.b);
	if (op >= TESSEL_LT && op <= TESSEL_NE)
		return arith_class(a) && arith_class(b) ? V_MASK : V_NONE;
	if (op == TESSEL_AND || op == TESSEL_OR) {
		bool masks = (a == V_MASK || a == V_SCALAR) && (b == V_MASK || b == V_SCALAR);
		return masks && !loop_expr_has_load(e->u.bin.b) ? V_MASK : V_NONE;
	}
	if (!is_float(e->dtype) || !arith_class(a) || !arith_class(b))
		return V_NONE;
	return float_class(e->dtype);
}

/* Return the vector class of the varying select "e": a float vector
 * when its condition is invariant, or a mask and no branch loads. */
static vclass select_class(const cg_printer *pr, const loop_expr *e)
{
	vclass c = vector_class(pr, e->u.sel.cond);
	if (!is_float(e->dtype) || !arith_class(vector_class(pr, e->u.sel.then_)) ||
	    !arith_class(vector_class(pr, e->u.sel.else_)))
		return V_NONE;
	if (c == V_SCALAR)
		return float_class(e->dtype);
	if (c == V_MASK && !loop_expr_has_load(e->u.sel.then_) &&
	    !loop_expr_has_load(e->u.sel.else_))
		return float_class(e->dtype);
	return V_NONE;
}

/* Return how "e" is computed in the vector loop of "pr". */
static vclass vector_class(const cg_printer *pr, const loop_expr *e)
{
	if (!loop_expr_uses_var(e, pr->vector_var))
		return V_SCALAR;
	switch (e->kind) {
	case LX_LOAD:
		if (!is_float(e->dtype) || (!every_other(pr, e) &&
		    !contiguous(pr, e->u.load.buf, e->u.load.n, e->u.load.index)))
			return V_NONE;
		return float_class(e->dtype);
	case LX_UNARY:
		return unary_class(pr, e);
	case LX_BINARY:
		return binary_class(pr, e);
	case LX_SELECT:
		return select_class(pr, e);
	case LX_CAST: {
		vclass a = vector_class(pr, e->u.cast.a);
		if (!is_float(e->u.cast.to) || (a != V_F32 && a != V_F64))
			return V_NONE;
		return float_class(e->u.cast.to);
	}
	default:
		return V_NONE;
	}
}

/* Return whether the statement "s" can run on vectors in the vector loop
 * of "pr". */
static bool vector_stmt_ok(const cg_printer *pr, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_STORE:
		return is_float(s->u.store.buf->dtype) &&
			contiguous(pr, s->u.store.buf, s->u.store.n, s->u.store.index) &&
			arith_class(vector_class(pr, s->u.store.value));
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (!vector_stmt_ok(pr, s->u.seq.items[i]))
				return false;
		return true;
	case LS_IF:
		return !loop_expr_uses_var(s->u.if_.cond, pr->vector_var) &&
			vector_stmt_ok(pr, s->u.if_.then_) &&
			(!s->u.if_.else_ || vector_stmt_ok(pr, s->u.if_.else_));
	case LS_BARRIER:
		return true;
	default:
		return false;
	}
}

/* One access of a loop body: its buffer and flat offset. */
typedef struct access {
	const loop_buffer *buf;
	bool store;
	cg_affine aff;
} access;

typedef struct access_list {
	int n, cap;
	access *item;
} access_list;

/* Append the access "index" of "b" (a store when "store") to "l". */
static void add_access(cg_printer *pr, access_list *l, const loop_buffer *b,
	int n, loop_expr *const *index, bool store)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		access *grown = te_arena_alloc(&pr->arena, sizeof(access) * (size_t)cap);
		if (l->n)
			memcpy(grown, l->item, sizeof(access) * (size_t)l->n);
		l->item = grown;
		l->cap = cap;
	}
	access *a = &l->item[l->n++];
	a->buf = b;
	a->store = store;
	cg_affine_offset(b, n, index, &a->aff);
}

/* Append the loads of "e" to "l". */
static void gather_expr_accesses(cg_printer *pr, access_list *l, const loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		add_access(pr, l, e->u.load.buf, e->u.load.n, e->u.load.index, false);
		for (int i = 0; i < e->u.load.n; i++)
			gather_expr_accesses(pr, l, e->u.load.index[i]);
		break;
	case LX_UNARY:
		gather_expr_accesses(pr, l, e->u.un.a);
		break;
	case LX_BINARY:
		gather_expr_accesses(pr, l, e->u.bin.a);
		gather_expr_accesses(pr, l, e->u.bin.b);
		break;
	case LX_SELECT:
		gather_expr_accesses(pr, l, e->u.sel.cond);
		gather_expr_accesses(pr, l, e->u.sel.then_);
		gather_expr_accesses(pr, l, e->u.sel.else_);
		break;
	case LX_CAST:
		gather_expr_accesses(pr, l, e->u.cast.a);
		break;
	default:
		break;
	}
}

/* Append the loads and stores of "s" to "l". */
static void gather_accesses(cg_printer *pr, access_list *l, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		gather_expr_accesses(pr, l, s->u.for_.min);
		gather_expr_accesses(pr, l, s->u.for_.extent);
		gather_accesses(pr, l, s->u.for_.body);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather_accesses(pr, l, s->u.seq.items[i]);
		break;
	case LS_STORE:
		add_access(pr, l, s->u.store.buf, s->u.store.n, s->u.store.index, true);
		for (int i = 0; i < s->u.store.n; i++)
			gather_expr_accesses(pr, l, s->u.store.index[i]);
		gather_expr_accesses(pr, l, s->u.store.value);
		break;
	case LS_IF:
		gather_expr_accesses(pr, l, s->u.if_.cond);
		gather_accesses(pr, l, s->u.if_.then_);
		if (s->u.if_.else_)
			gather_accesses(pr, l, s->u.if_.else_);
		break;
	case LS_ALLOC:
		gather_accesses(pr, l, s->u.alloc.body);
		break;
	default:
		break;
	}
}

/* Return whether the accesses "x" and "y" to one buffer may touch one
 * element in two iterations of the loop over "v" (of extent "n", or -1
 * when not constant): unless they are the same access, they must move
 * with "v" alike over ranges that never meet. */
static bool may_conflict(const cg_affine *x, const cg_affine *y,
	const loop_var *v, int64_t n)
{
	bool clean_x, clean_y;
	int64_t kx = cg_affine_coef(x, v, &clean_x), ky = cg_affine_coef(y, v, &clean_y);
	if (cg_affine_equal(x, y))
		return false;
	if (!clean_x || !clean_y || kx != ky || n < 0)
		return true;
	cg_affine bx = *x, by = *y;
	for (int i = 0; i < bx.n; i++)
		bx.coef[i] = bx.var[i] == v ? 0 : bx.coef[i];
	for (int i = 0; i < by.n; i++)
		by.coef[i] = by.var[i] == v ? 0 : by.coef[i];
	bx.constant = by.constant = 0;
	int64_t gap, span;
	if (!cg_affine_equal(&bx, &by) ||
	    __builtin_sub_overflow(x->constant, y->constant, &gap) ||
	    __builtin_mul_overflow(kx, n - 1, &span) || gap == INT64_MIN ||
	    span == INT64_MIN)
		return true;
	return (gap < 0 ? -gap : gap) <= (span < 0 ? -span : span);
}

/* Return whether the iterations of the loop "s" are independent as its
 * accesses show: every store moves with the loop's variable, and every
 * other access to a stored buffer is the same access or never meets it. */
static bool iterations_independent(cg_printer *pr, const loop_stmt *s)
{
	access_list l = { 0 };
	const loop_var *v = s->u.for_.var;
	const loop_expr *extent = s->u.for_.extent;
	int64_t n = extent->kind == LX_INT ? extent->u.ival : -1;
	gather_accesses(pr, &l, s->u.for_.body);
	for (int i = 0; i < l.n; i++) {
		if (!l.item[i].store)
			continue;
		bool clean;
		if (cg_affine_coef(&l.item[i].aff, v, &clean) == 0 || !clean)
			return false;
		for (int j = 0; j < l.n; j++)
			if (l.item[j].buf == l.item[i].buf &&
			    may_conflict(&l.item[j].aff, &l.item[i].aff, v, n))
				return false;
	}
	return true;
}

/* Return whether "e" computes or loads a double anywhere. */
static bool node_is_f64(const loop_expr *e)
{
	switch (e->kind) {
	case LX_UNARY:
		return e->dtype == TESSEL_F64 || node_is_f64(e->u.un.a);
	case LX_BINARY:
		return e->dtype == TESSEL_F64 || node_is_f64(e->u.bin.a) ||
			node_is_f64(e->u.bin.b);
	case LX_SELECT:
		return e->dtype == TESSEL_F64 || node_is_f64(e->u.sel.cond) ||
			node_is_f64(e->u.sel.then_) || node_is_f64(e->u.sel.else_);
	case LX_CAST:
		return e->dtype == TESSEL_F64 || node_is_f64(e->u.cast.a);
	default:
		return e->dtype == TESSEL_F64;
	}
}

/* Return whether "s" computes or stores doubles. */
static bool stmt_has_f64(const loop_stmt *s)
{
	switch (s->kind) {
	case LS_STORE:
		return s->u.store.buf->dtype == TESSEL_F64 || node_is_f64(s->u.store.value);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (stmt_has_f64(s->u.seq.items[i]))
				return true;
		return false;
	case LS_IF:
		return stmt_has_f64(s->u.if_.then_) ||
			(s->u.if_.else_ && stmt_has_f64(s->u.if_.else_));
	default:
		return false;
	}
}

/* Return the lanes of a vector of the target's width (of doubles when
 * "f64") halved until they fit "extent" iterations, or 0 below 2. */
static int fit_lanes(const cg_printer *pr, bool f64, int64_t extent)
{
	int lanes = pr->target.vector_bytes / (f64 ? 8 : 4);
	while (lanes > extent)
		lanes /= 2;
	return lanes >= 2 ? lanes : 0;
}

/* Return the lane count the vectorized loop "s" runs with, or 0 when it
 * runs as scalar code. */
static int vector_lanes(cg_printer *pr, const loop_stmt *s)
{
	const loop_expr *extent = s->u.for_.extent;
	if (!pr->d->vector_type_format || pr->target.vector_bytes == 0 ||
	    extent->kind != LX_INT || extent->u.ival < 2 ||
	    any_stmt(s->u.for_.body, is_loop, true) || !iterations_independent(pr, s))
		return 0;
	pr->vector_var = s->u.for_.var;
	bool ok = vector_stmt_ok(pr, s->u.for_.body);
	pr->vector_var = NULL;
	if (!ok)
		return 0;
	return fit_lanes(pr, stmt_has_f64(s->u.for_.body), extent->u.ival);
}

/* Write the name of the vector type of "c" (V_F32, V_F64, V_MASK or,
 * with "wide_mask", int64 lanes) into "buf" and emit its typedef. */
static const char *vector_type(cg_printer *pr, vclass c, bool wide_mask, char *buf,
	size_t len)
{
	static const char *const elem[] = { "f32", "f64", "i32", "i64" };
	static const char *const ctype[] = { "float", "double", "int32_t", "int64_t" };
	static const int size[] = { 4, 8, 4, 8 };
	int k = c == V_F32 ? 0 : c == V_F64 ? 1 : wide_mask ? 3 : 2;
	char text[200];
	snprintf(buf, len, pr->d->vector_type_format, elem[k], pr->lanes);
	snprintf(text, sizeof(text), "typedef %s %s __attribute__((vector_size(%d)));\n",
		ctype[k], buf, size[k] * pr->lanes);
	cg_need_helper(pr, buf, text);
	return buf;
}

/* Emit the vector helper "name" of "pr" for vectors of class "c" whose
 * definition "tmpl" has "$0" for the vector type, "$1" for the mask type,
 * "$2" for the element type, "$3" for the lane count, "$4" for the
 * storage class, "$5" for the name, "$6" and "$7" for "x" and "m"
 * repeated once per lane, "$8" for the vector exp of class "c" (emitted
 * first, where used). */
static const char *vexp_helper(cg_printer *pr, vclass c, char *buf, size_t len);

static void need_vector_helper(cg_printer *pr, const char *name, vclass c,
	const char *tmpl)
{
	char type[64], mask[64] = "", lanes[16], exp_name[64] = "";
	if (strstr(tmpl, "$8"))
		vexp_helper(pr, c, exp_name, sizeof(exp_name));
	te_strbuf xs = { 0 }, ms = { 0 }, sb = { 0 };
	vector_type(pr, c, false, type, sizeof(type));
	if (strstr(tmpl, "$1"))
		vector_type(pr, V_MASK, false, mask, sizeof(mask));
	snprintf(lanes, sizeof(lanes), "%d", pr->lanes);
	for (int l = 0; l < pr->lanes; l++) {
		te_sb_puts(&xs, l ? ", x" : "x");
		te_sb_puts(&ms, l ? ", m" : "m");
	}
	const char *subst[] = { type, mask, c == V_F64 ? "double" : "float", lanes,
		pr->d->helper_qualifier, name, te_sb_str(&xs), te_sb_str(&ms), exp_name };
	cg_template(&sb, tmpl, 9, subst);
	cg_need_helper(pr, name, te_sb_str(&sb));
	te_sb_free(&sb);
	te_sb_free(&xs);
	te_sb_free(&ms);
}

/* Write the name of the helper "op" for the class "c" ("tsl_vload_f32x16")
 * into "buf" of size "len" and return it. */
static const char *vector_helper_name(cg_printer *pr, const char *op, vclass c,
	char *buf, size_t len)
{
	char type[32];
	vector_type(pr, c, false, type, sizeof(type));
	snprintf(buf, len, "tsl_%s_%s", op, type + 4);
	return buf;
}

static const char splat_tmpl[] =
	"$4 $0 $5($2 x)\n{\n\treturn ($0){ $6 };\n}\n";
static const char mask_tmpl[] =
	"$4 $1 $5(int c)\n{\n\tint32_t m = c ? -1 : 0;\n"
	"\treturn ($1){ $7 };\n}\n";
static const char load_tmpl[] =
	"$4 $0 $5(const $2 *p)\n{\n\t$0 r;\n"
	"\tmemcpy(&r, p, sizeof(r));\n\treturn r;\n}\n";
static const char store_tmpl[] =
	"$4 void $5($2 *p, $0 v)\n{\n\tmemcpy(p, &v, sizeof(v));\n}\n";
static const char select_tmpl[] =
	"$4 $0 $5($1 m, $0 a, $0 b)\n{\n"
	"\treturn ($0)((($1)a & m) | (($1)b & ~m));\n}\n";

/* Return the helper that selects lanes of class "c" by a mask, emitted. */
static const char *select_helper(cg_printer *pr, vclass c, char *buf, size_t len)
{
	vector_helper_name(pr, "vselect", c, buf, len);
	if (c == V_F32) {
		need_vector_helper(pr, buf, c, select_tmpl);
		return buf;
	}
	char wide[64], type[64], mask[64];
	te_strbuf text = { 0 };
	vector_type(pr, V_MASK, true, wide, sizeof(wide));
	vector_type(pr, c, false, type, sizeof(type));
	vector_type(pr, V_MASK, false, mask, sizeof(mask));
	te_sb_printf(&text, "%s %s %s(%s m, %s a, %s b)\n{\n"
		"\t%s w = __builtin_convertvector(m, %s);\n"
		"\treturn (%s)(((%s)a & w) | ((%s)b & ~w));\n}\n",
		pr->d->helper_qualifier, type, buf, mask, type, type, wide, wide,
		type, wide, wide);
	cg_need_helper(pr, buf, te_sb_str(&text));
	te_sb_free(&text);
	return buf;
}

/* Return the helper computing the float min or max ("is_max") of lanes
 * of class "c" with fmin's NaN rule, emitted: for 16 floats under
 * AVX-512, vmaxps (which gives "b" where either is NaN) then "a" where
 * "b" is NaN, so that a reduction's chain through "a" is two
 * instructions, not four. */
static const char *minmax_helper(cg_printer *pr, bool is_max, vclass c, char *buf,
	size_t len)
{
	char select[80], mask[64], type[64];
	te_strbuf text = { 0 };
	select_helper(pr, c, select, sizeof(select));
	vector_type(pr, c, false, type, sizeof(type));
	vector_type(pr, V_MASK, false, mask, sizeof(mask));
	vector_helper_name(pr, is_max ? "vmax" : "vmin", c, buf, len);
	const char *cmp = is_max ? ">" : "<";
	bool avx512 = c == V_F32 && pr->lanes == 16;
	if (avx512)
		te_sb_printf(&text, "#if defined(__AVX512F__)\n#include <immintrin.h>\n"
			"%s %s %s(%s a, %s b)\n{\n"
			"\t__m512 r = _mm512_%s_ps((__m512)a, (__m512)b);\n"
			"\treturn (%s)_mm512_mask_mov_ps(r, _mm512_cmp_ps_mask((__m512)b, "
			"(__m512)b, _CMP_UNORD_Q), (__m512)a);\n}\n#else\n",
			pr->d->helper_qualifier, type, buf, type, type, is_max ? "max" : "min",
			type);
	if (c == V_F32)
		te_sb_printf(&text, "%s %s %s(%s a, %s b)\n{\n"
			"\treturn %s((a %s b) | (b != b), a, b);\n}\n",
			pr->d->helper_qualifier, type, buf, type, type, select, cmp);
	else
		te_sb_printf(&text, "%s %s %s(%s a, %s b)\n{\n"
			"\treturn %s(__builtin_convertvector((a %s b) | (b != b), %s), a, b);\n}\n",
			pr->d->helper_qualifier, type, buf, type, type, select, cmp, mask);
	if (avx512)
		te_sb_puts(&text, "#endif\n");
	cg_need_helper(pr, buf, te_sb_str(&text));
	te_sb_free(&text);
	return buf;
}

/* Return the helper applying the scalar expression "lane" (of "a[l]" and
 * "b[l]") to each lane of class "c", under the name "op", emitted; with
 * "binary" it takes two vectors. */
static const char *lanewise_helper(cg_printer *pr, const char *op, vclass c,
	bool binary, const char *lane, char *buf, size_t len)
{
	char type[64];
	te_strbuf text = { 0 };
	vector_helper_name(pr, op, c, buf, len);
	vector_type(pr, c, false, type, sizeof(type));
	te_sb_printf(&text, "%s %s %s(%s a", pr->d->helper_qualifier, type, buf, type);
	if (binary)
		te_sb_printf(&text, ", %s b", type);
	te_sb_printf(&text, ")\n{\n\t%s r = { 0 };\n"
		"\tfor (int l = 0; l < %d; l++)\n\t\tr[l] = %s;\n\treturn r;\n}\n",
		type, pr->lanes, lane);
	cg_need_helper(pr, buf, te_sb_str(&text));
	te_sb_free(&text);
	return buf;
}

/* exp of float lanes on vectors (Cephes expf: Moshier, "Methods and
 * Programs for Mathematical Functions", 1989): n = round(x log2 e),
 * x - n ln 2 in two parts, a degree-6 polynomial, times 2^n built in the
 * exponent bits; within 2 ulp of expf over its range, with expf's
 * overflow to infinity, underflow to 0 (denormal results flushed) and
 * NaN.  The input is clamped to [-88.38, 88.73] so that n stays within
 * [-127, 128]; 2^128 has no exponent bits, so where n is 128 the product
 * takes 2^127 and is doubled (exact: the result is finite below the
 * overflow bound).  One vector instruction stream instead of a call per
 * lane. */
#define VEXP_F32_PORTABLE \
	"$4 $0 $5($0 x)\n{\n" \
	"\tconst $0 zero = { 0 };\n" \
	"\t$1 over = x > 88.72283935546875f, under = x < -87.33654022216797f;\n" \
	"\t$1 hi = x > 88.7228393554688f, lo = x < -88.3762626647949f;\n" \
	"\t$0 c = ($0)((($1)x & ~(hi | lo)) | (($1)(zero + 88.7228393554688f) & hi) |\n" \
	"\t\t(($1)(zero - 88.3762626647949f) & lo));\n" \
	"\t$0 fx = c * 1.44269504088896341f + 0.5f;\n" \
	"\t$1 n = __builtin_convertvector(fx, $1);\n" \
	"\tn += __builtin_convertvector(n, $0) > fx;\n" \
	"\t$0 t = __builtin_convertvector(n, $0);\n" \
	"\tc = c - t * 0.693359375f + t * 2.12194440e-4f;\n" \
	"\t$0 y = zero + 1.9875691500e-4f;\n" \
	"\ty = y * c + 1.3981999507e-3f;\n" \
	"\ty = y * c + 8.3334519073e-3f;\n" \
	"\ty = y * c + 4.1665795894e-2f;\n" \
	"\ty = y * c + 1.6666665459e-1f;\n" \
	"\ty = y * c + 5.0000001201e-1f;\n" \
	"\ty = y * (c * c) + c + 1.0f;\n" \
	"\t$1 top = n > 127;\n" \
	"\ty = y * ($0)((n + top + 127) << 23);\n" \
	"\ty = y + ($0)(($1)y & top);\n" \
	"\ty = ($0)((($1)y & ~over) | (($1)(zero + __builtin_inff()) & over));\n" \
	"\treturn ($0)(($1)y & ~under);\n}\n"

static const char vexp_f32_tmpl[] = VEXP_F32_PORTABLE;

/* The same exp on 8 float lanes where the compiler targets AVX2 and FMA:
 * the input clamped by vminps and vmaxps (which keep a NaN), n rounded
 * by vroundps, the polynomial in FMAs, 2^n from the exponent bits (where
 * n is 128, the polynomial doubled and 2^127), and the overflow and underflow
 * applied by a blend and a mask: about two thirds of the instructions of
 * the portable form, which is the one compiled otherwise. */
static const char vexp_f32x8_tmpl[] =
	"#if defined(__AVX2__) && defined(__FMA__)\n#include <immintrin.h>\n"
	"$4 $0 $5($0 x)\n{\n"
	"\t__m256 v = (__m256)x;\n"
	"\t__m256 over = _mm256_cmp_ps(v, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ);\n"
	"\t__m256 under = _mm256_cmp_ps(v, _mm256_set1_ps(-87.33654022216797f), _CMP_LT_OQ);\n"
	"\tv = _mm256_max_ps(_mm256_set1_ps(-87.5f), v);\n"
	"\tv = _mm256_min_ps(_mm256_set1_ps(88.75f), v);\n"
	"\t__m256 t = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),\n"
	"\t\t_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);\n"
	"\t__m256 c = _mm256_fnmadd_ps(t, _mm256_set1_ps(0.693359375f), v);\n"
	"\tc = _mm256_fnmadd_ps(t, _mm256_set1_ps(-2.12194440e-4f), c);\n"
	"\t__m256 y = _mm256_set1_ps(1.9875691500e-4f);\n"
	"\ty = _mm256_fmadd_ps(y, c, _mm256_set1_ps(1.3981999507e-3f));\n"
	"\ty = _mm256_fmadd_ps(y, c, _mm256_set1_ps(8.3334519073e-3f));\n"
	"\ty = _mm256_fmadd_ps(y, c, _mm256_set1_ps(4.1665795894e-2f));\n"
	"\ty = _mm256_fmadd_ps(y, c, _mm256_set1_ps(1.6666665459e-1f));\n"
	"\ty = _mm256_fmadd_ps(y, c, _mm256_set1_ps(5.0000001201e-1f));\n"
	"\ty = _mm256_fmadd_ps(y, _mm256_mul_ps(c, c), _mm256_add_ps(c, _mm256_set1_ps(1.0f)));\n"
	"\t__m256 t127 = _mm256_min_ps(t, _mm256_set1_ps(127.0f));\n"
	"\ty = _mm256_fmadd_ps(y, _mm256_sub_ps(t, t127), y);\n"
	"\t__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(t127),\n"
	"\t\t_mm256_set1_epi32(127)), 23);\n"
	"\ty = _mm256_mul_ps(y, _mm256_castsi256_ps(e));\n"
	"\ty = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), over);\n"
	"\treturn ($0)_mm256_andnot_ps(under, y);\n}\n"
	"#else\n" VEXP_F32_PORTABLE "#endif\n";

/* The same exp on 16 float lanes where the compiler targets AVX-512: the
 * same reduction and polynomial, with n rounded by vrndscaleps and 2^n
 * applied by vscalefps, which gives the overflow to infinity and the
 * underflow to 0 (through denormals, as expf) without masks; the input
 * is clamped first (by vminps and vmaxps, which keep a NaN) so that
 * infinities reduce to finite arguments.  About half the instructions of
 * the portable form, which is the one compiled otherwise. */
static const char vexp_f32x16_tmpl[] =
	"#if defined(__AVX512F__)\n#include <immintrin.h>\n"
	"$4 $0 $5($0 x)\n{\n"
	"\t__m512 v = _mm512_min_ps(_mm512_set1_ps(89.0f), (__m512)x);\n"
	"\tv = _mm512_max_ps(_mm512_set1_ps(-110.0f), v);\n"
	"\t__m512 t = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),\n"
	"\t\t_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);\n"
	"\t__m512 c = _mm512_fnmadd_ps(t, _mm512_set1_ps(0.693359375f), v);\n"
	"\tc = _mm512_fnmadd_ps(t, _mm512_set1_ps(-2.12194440e-4f), c);\n"
	"\t__m512 y = _mm512_set1_ps(1.9875691500e-4f);\n"
	"\ty = _mm512_fmadd_ps(y, c, _mm512_set1_ps(1.3981999507e-3f));\n"
	"\ty = _mm512_fmadd_ps(y, c, _mm512_set1_ps(8.3334519073e-3f));\n"
	"\ty = _mm512_fmadd_ps(y, c, _mm512_set1_ps(4.1665795894e-2f));\n"
	"\ty = _mm512_fmadd_ps(y, c, _mm512_set1_ps(1.6666665459e-1f));\n"
	"\ty = _mm512_fmadd_ps(y, c, _mm512_set1_ps(5.0000001201e-1f));\n"
	"\ty = _mm512_fmadd_ps(y, _mm512_mul_ps(c, c), _mm512_add_ps(c, _mm512_set1_ps(1.0f)));\n"
	"\treturn ($0)_mm512_scalef_ps(y, t);\n}\n"
	"#else\n" VEXP_F32_PORTABLE "#endif\n";

#undef VEXP_F32_PORTABLE

/* The opening of an odd function of float lanes computed on |x|: "a" is
 * |x|, "z" its square, "sign" the sign bits to put back. */
#define ODD_F32_PRELUDE \
	"$4 $0 $5($0 x)\n{\n" \
	"\tconst $0 zero = { 0 };\n" \
	"\tconst $1 sbit = ($1){ 0 } - 2147483647 - 1;\n" \
	"\t$1 sign = ($1)x & sbit;\n" \
	"\t$0 a = ($0)(($1)x & ~sbit);\n" \
	"\t$0 z = a * a;\n"

/* erf of float lanes on vectors: erf(|x|) as |x| P(x^2) up to 0.875,
 * beyond as 1 - exp(-x^2) Q(1/|x|) with |x| clamped at 3.92 (where erf
 * rounds to 1), the sign put back; P of degree 6 and Q of degree 10 fitted
 * by least squares (relative error) at Chebyshev nodes of each piece.
 * Evaluated in float, within 1.6e-7 (2.7 ulp) of erf over [-5, 5];
 * NaN stays NaN, infinities give +-1.  "$8" is the vector exp. */
static const char verf_f32_tmpl[] =
	ODD_F32_PRELUDE
	"\t$0 p = zero + 8.714059830e-05f;\n"
	"\tp = p * z - 8.220518085e-04f;\n"
	"\tp = p * z + 5.207621495e-03f;\n"
	"\tp = p * z - 2.686196868e-02f;\n"
	"\tp = p * z + 1.128374098e-01f;\n"
	"\tp = p * z - 3.761263673e-01f;\n"
	"\tp = (p * z + 1.128379167e+00f) * a;\n"
	"\t$1 big = a > 3.92f;\n"
	"\t$0 c = ($0)((($1)a & ~big) | (($1)(zero + 3.92f) & big));\n"
	"\t$0 t = 1.0f / c;\n"
	"\t$0 q = zero - 2.109835636e-02f;\n"
	"\tq = q * t + 1.581059106e-01f;\n"
	"\tq = q * t - 5.185446782e-01f;\n"
	"\tq = q * t + 9.603950920e-01f;\n"
	"\tq = q * t - 1.052631418e+00f;\n"
	"\tq = q * t + 5.789833852e-01f;\n"
	"\tq = q * t + 7.812824219e-02f;\n"
	"\tq = q * t - 3.304293767e-01f;\n"
	"\tq = q * t + 1.188149609e-02f;\n"
	"\tq = q * t + 5.627178079e-01f;\n"
	"\tq = q * t + 7.547377393e-05f;\n"
	"\t$0 r = 1.0f - $8(-(c * c)) * q;\n"
	"\t$1 small = a <= 0.875f;\n"
	"\t$0 y = ($0)((($1)p & small) | (($1)r & ~small));\n"
	"\treturn ($0)(($1)y | sign);\n}\n";

/* tanh of float lanes on vectors: |x| + |x|^3 P(x^2) below 0.625 (P of
 * degree 5, fitted as erf's), 1 - 2 / (exp(2|x|) + 1) from there, the
 * sign put back; within 7.9e-8 (1.3 ulp) of tanh over [-12, 12], NaN
 * stays NaN, infinities give +-1.  "$8" is the vector exp. */
static const char vtanh_f32_tmpl[] =
	ODD_F32_PRELUDE
	"\t$0 p = zero + 2.148984179e-03f;\n"
	"\tp = p * z - 8.184661756e-03f;\n"
	"\tp = p * z + 2.170400044e-02f;\n"
	"\tp = p * z - 5.394745418e-02f;\n"
	"\tp = p * z + 1.333321250e-01f;\n"
	"\tp = p * z - 3.333333101e-01f;\n"
	"\tp = a + a * z * p;\n"
	"\t$0 r = 1.0f - 2.0f / ($8(a + a) + 1.0f);\n"
	"\t$1 small = a < 0.625f;\n"
	"\t$0 y = ($0)((($1)p & small) | (($1)r & ~small));\n"
	"\treturn ($0)(($1)y | sign);\n}\n";

#undef ODD_F32_PRELUDE

/* log of float lanes on vectors: x = m 2^e with m in [sqrt(1/2), sqrt(2))
 * (denormals scaled by 2^23 first), log(1 + f) = f - f^2/2 + f^3 P(f) for
 * f = m - 1 (P of degree 7, fitted as erf's), plus e ln 2 in two parts;
 * within 0.86 ulp over the positive floats; -inf at 0, NaN below 0 and
 * for NaN, inf at inf. */
static const char vlog_f32_tmpl[] =
	"$4 $0 $5($0 x)\n{\n"
	"\tconst $0 zero = { 0 };\n"
	"\t$1 sub = x < 1.17549435e-38f;\n"
	"\t$1 i = (($1)(x * 8388608.0f) & sub) | (($1)x & ~sub);\n"
	"\t$1 e = ((i >> 23) & 0xff) - 127 - (sub & 23);\n"
	"\t$0 m = ($0)((i & 0x007fffff) | 0x3f800000);\n"
	"\t$1 big = m > 1.41421356f;\n"
	"\tm = ($0)((($1)(m * 0.5f) & big) | (($1)m & ~big));\n"
	"\te -= big;\n"
	"\t$0 f = m - 1.0f;\n"
	"\t$0 z = f * f;\n"
	"\t$0 p = zero - 7.362867872e-02f;\n"
	"\tp = p * f + 1.262032749e-01f;\n"
	"\tp = p * f - 1.320210421e-01f;\n"
	"\tp = p * f + 1.422711404e-01f;\n"
	"\tp = p * f - 1.662136991e-01f;\n"
	"\tp = p * f + 1.999982657e-01f;\n"
	"\tp = p * f - 2.500085194e-01f;\n"
	"\tp = p * f + 3.333335405e-01f;\n"
	"\t$0 y = f * z * p - 0.5f * z + f;\n"
	"\t$0 ef = __builtin_convertvector(e, $0);\n"
	"\ty = y + ef * -2.12194440e-4f;\n"
	"\ty = y + ef * 0.693359375f;\n"
	"\t$1 bad = (x < 0.0f) | (x != x), nil = x == 0.0f, top = x == __builtin_inff();\n"
	"\treturn ($0)((($1)y & ~(bad | nil | top)) | (($1)(zero + __builtin_nanf(\"\")) & bad) |\n"
	"\t\t(($1)(zero - __builtin_inff()) & nil) | (($1)(zero + __builtin_inff()) & top));\n}\n";

/* The logistic sigmoid of float lanes on the vector exp ("$8"): 1 / (1 +
 * exp(-x)), 0 where exp overflows and 1 where it underflows. */
static const char vsigmoid_f32_tmpl[] =
	"$4 $0 $5($0 x)\n{\n\treturn 1.0f / (1.0f + $8(-x));\n}\n";

/* Emit the vector exp of class "c" (floats); return its name in "buf". */
static const char *vexp_helper(cg_printer *pr, vclass c, char *buf, size_t len)
{
	need_vector_helper(pr, vector_helper_name(pr, "vexp", c, buf, len), c,
		pr->lanes == 16 ? vexp_f32x16_tmpl : pr->lanes == 8 ? vexp_f32x8_tmpl
		: vexp_f32_tmpl);
	return buf;
}

/* Return the vector helper of the unary "op" for class "c": exp, log,
 * erf, tanh and sigmoid of floats on vectors, the others lane by lane. */
static const char *unary_helper(cg_printer *pr, tessel_unary op, vclass c,
	char *buf, size_t len)
{
	static const char *const on_vectors[TESSEL_UNARY_COUNT] = {
		[TESSEL_LOG] = vlog_f32_tmpl, [TESSEL_ERF] = verf_f32_tmpl,
		[TESSEL_TANH] = vtanh_f32_tmpl, [TESSEL_SIGMOID] = vsigmoid_f32_tmpl
	};
	if (op == TESSEL_EXP && c == V_F32)
		return vexp_helper(pr, c, buf, len);
	static const char *const names[TESSEL_UNARY_COUNT] = {
		[TESSEL_EXP] = "vexp", [TESSEL_LOG] = "vlog", [TESSEL_SQRT] = "vsqrt",
		[TESSEL_RSQRT] = "vrsqrt", [TESSEL_TANH] = "vtanh", [TESSEL_ERF] = "verf",
		[TESSEL_SIGMOID] = "vsigmoid", [TESSEL_ABS] = "vabs",
		[TESSEL_FLOOR] = "vfloor"
	};
	if (c == V_F32 && on_vectors[op]) {
		need_vector_helper(pr, vector_helper_name(pr, names[op], c, buf, len), c,
			on_vectors[op]);
		return buf;
	}
	int k = c == V_F64;
	const char *one = k ? "1.0" : "1.0f";
	const cg_dialect *d = pr->d;
	char lane[200];
	if (op == TESSEL_RSQRT)
		snprintf(lane, sizeof(lane), "%s / %s(a[l])", one, d->unary_fn[k][TESSEL_SQRT]);
	else if (op == TESSEL_SIGMOID)
		snprintf(lane, sizeof(lane), "%s / (%s + %s(-a[l]))", one, one,
			d->unary_fn[k][TESSEL_EXP]);
	else
		snprintf(lane, sizeof(lane), "%s(a[l])", d->unary_fn[k][op]);
	return lanewise_helper(pr, names[op], c, false, lane, buf, len);
}

static void print_vexpr(cg_printer *pr, const loop_expr *e, vclass want, int prec);

/* Print the invariant "e" broadcast to a vector of class "want". */
static void print_splat(cg_printer *pr, const loop_expr *e, vclass want)
{
	char name[80];
	if (want == V_MASK) {
		need_vector_helper(pr, vector_helper_name(pr, "vmask", V_MASK, name,
			sizeof(name)), V_MASK, mask_tmpl);
		cg_put(pr, "%s(", name);
		cg_print_as(pr, e, TESSEL_BOOL, CG_PREC_NONE);
	} else {
		need_vector_helper(pr, vector_helper_name(pr, "splat", want, name,
			sizeof(name)), want, splat_tmpl);
		cg_put(pr, "%s(", name);
		cg_print_as(pr, e, want == V_F64 ? TESSEL_F64 : TESSEL_F32, CG_PREC_NONE);
	}
	cg_put(pr, ")");
}

/* Emit the helper "name" that loads every other element from "p" into
 * a vector of class "c": the vectors at p and at p + lanes - 1 (the last
 * element read is the last lane's, so nothing past the access is
 * touched) and a shuffle of their even elements (__builtin_shufflevector:
 * GCC 12 and clang; a loop over the lanes elsewhere). */
static void need_vload_every_other(cg_printer *pr, const char *name, vclass c)
{
	char load[80];
	need_vector_helper(pr, vector_helper_name(pr, "vload", c, load, sizeof(load)), c,
		load_tmpl);
	te_strbuf t = { 0 };
	te_sb_printf(&t, "$4 $0 $5(const $2 *p)\n{\n"
		"#if defined(__clang__) || __GNUC__ >= 12\n"
		"\treturn __builtin_shufflevector(%s(p), %s(p + $3 - 1)", load, load);
	for (int l = 0; l < pr->lanes; l++)
		te_sb_printf(&t, ", %d", 2 * l < pr->lanes ? 2 * l : 2 * l + 1);
	te_sb_puts(&t, ");\n#else\n\t$0 r;\n\tfor (int l = 0; l < $3; l++)\n"
		"\t\tr[l] = p[2 * l];\n\treturn r;\n#endif\n}\n");
	need_vector_helper(pr, name, c, te_sb_str(&t));
	te_sb_free(&t);
}

/* F16C's conversions of a vector of f16 to float and back (round to
 * nearest even, as tsl_f32_to_f16; a NaN stays a NaN, its payload as
 * the hardware keeps it), by lane count: the macro that says the target
 * has them, the integer register of the halves and its zero, the
 * intrinsics' prefix and float register, and the bytes of the halves. */
typedef struct f16_isa {
	const char *guard, *halves, *zero, *prefix, *floats;
	int bytes;
} f16_isa;

static const f16_isa f16_isas[] = {
	[16] = { "__AVX512F__", "__m256i", "_mm256_setzero_si256", "_mm512", "__m512", 32 },
	[8] = { "__F16C__", "__m128i", "_mm_setzero_si128", "_mm256", "__m256", 16 },
	[4] = { "__F16C__", "__m128i", "_mm_setzero_si128", "_mm", "__m128", 8 },
};

/* Write into "t" the helper "$5" converting a vector of halves ("load":
 * from "p"; else to "p", from "v") lane by lane with the scalar
 * conversion "convert", or, for f16 where the target has them, by
 * F16C's instructions (f16_isas). */
static void half_helper(cg_printer *pr, te_strbuf *t, bool load, bool f16,
	const char *convert)
{
	const f16_isa *isa = f16 && pr->lanes <= 16 && f16_isas[pr->lanes].guard ?
		&f16_isas[pr->lanes] : NULL;
	if (isa)
		te_sb_puts(t, "#if defined(__F16C__) || defined(__AVX512F__)\n"
			"#include <immintrin.h>\n#endif\n");
	te_sb_puts(t, load ? "$4 $0 $5(const uint16_t *p)\n{\n" :
		"$4 void $5(uint16_t *p, $0 v)\n{\n");
	if (isa && load)
		te_sb_printf(t, "#if defined(%s)\n\t%s h = %s();\n\tmemcpy(&h, p, %d);\n"
			"\treturn ($0)%s_cvtph_ps(h);\n#else\n", isa->guard, isa->halves,
			isa->zero, isa->bytes, isa->prefix);
	else if (isa)
		te_sb_printf(t, "#if defined(%s)\n\t%s h = %s_cvtps_ph((%s)v, "
			"_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);\n"
			"\tmemcpy(p, &h, %d);\n#else\n", isa->guard, isa->halves, isa->prefix,
			isa->floats, isa->bytes);
	if (load)
		te_sb_printf(t, "\t$0 r = { 0 };\n\tfor (int l = 0; l < $3; l++)\n"
			"\t\tr[l] = %s(p[l]);\n\treturn r;\n", convert);
	else
		te_sb_printf(t, "\tfor (int l = 0; l < $3; l++)\n\t\tp[l] = %s(v[l]);\n",
			convert);
	if (isa)
		te_sb_puts(t, "#endif\n");
	te_sb_puts(t, "}\n");
}

/* Return whether the vectorized loop "s", run from iteration "lo" in
 * steps of "lanes", takes only multiples of the lanes as its variable. */
static bool starts_aligned(const loop_stmt *s, int64_t lo, int lanes)
{
	const loop_expr *min = s->u.for_.min;
	return min->kind == LX_INT && (min->u.ival + lo) % lanes == 0;
}

/* Return whether the contiguous vector access "index" of "b" lies at an
 * address aligned to the vector in every iteration: "b" is a local
 * buffer of floats (the stack's arrays and the workspace's blocks are
 * aligned to CPU_ALIGN), the vector no wider, and its offset a multiple
 * of the lanes (the vector variable's runs start at one).  Such an
 * access is printed as the vector it is, not copied through memcpy: gcc
 * then keeps a tile accumulated there in registers without copying it
 * from one register to another in every iteration. */
static bool aligned_vector(const cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	if (b->scope != LOOP_LOCAL || (b->dtype != TESSEL_F32 && b->dtype != TESSEL_F64) ||
	    pr->lanes * (int)tessel_dtype_size(b->dtype) > CPU_ALIGN || !pr->lanes_aligned)
		return false;
	cg_affine aff;
	bool clean;
	cg_affine_offset(b, n, index, &aff);
	if (cg_affine_coef(&aff, pr->vector_var, &clean) != 1 || !clean ||
	    aff.constant % pr->lanes)
		return false;
	for (int i = 0; i < aff.n; i++)
		if (aff.var[i] != pr->vector_var && aff.coef[i] % pr->lanes)
			return false;
	return true;
}

/* What keeps a vector of "bytes" in a register: an empty asm statement
 * that takes it there and gives it back changed, as far as the compiler
 * knows, so that it cannot fold a load of it into each instruction that
 * uses it; nothing where the target has no register of that width. */
static void in_register_helper(cg_printer *pr, int bytes, char *name, size_t len)
{
	static const struct {
		int bytes;
		const char *guard, *constraint;
	} widths[] = {
		{ 64, "__AVX512F__", "v" },
		{ 32, "__AVX__", "x" },
		{ 16, "__SSE__", "x" },
	};
	snprintf(name, len, "TSL_IN_REGISTER_%d", bytes);
	for (size_t i = 0; i < sizeof(widths) / sizeof(*widths); i++) {
		if (widths[i].bytes != bytes)
			continue;
		char text[400];
		snprintf(text, sizeof(text),
			"#if defined(%s)\n#define %s(v) __asm__(\"\" : \"+%s\"(v))\n"
			"#else\n#define %s(v) ((void)0)\n#endif\n", widths[i].guard, name,
			widths[i].constraint, name);
		cg_need_helper(pr, name, text);
		return;
	}
	char text[200];
	snprintf(text, sizeof(text), "#define %s(v) ((void)0)\n", name);
	cg_need_helper(pr, name, text);
}

/* Print the aligned vector access "index" of "b" as an lvalue. */
static void print_aligned_vector(cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	char type[64];
	vector_type(pr, float_class(b->dtype), false, type, sizeof(type));
	cg_put(pr, "*(%s *)&%s[", type, buffer_name(pr, b));
	cg_print_offset(pr, b, n, index);
	cg_put(pr, "]");
}

/* Print the load "e", contiguous or of every other element, as a vector. */
static void print_vload(cg_printer *pr, const loop_expr *e)
{
	const loop_buffer *b = e->u.load.buf;
	char name[80], op[32];
	vclass c = float_class(b->dtype);
	if (aligned_vector(pr, b, e->u.load.n, e->u.load.index)) {
		cg_put(pr, "(");
		print_aligned_vector(pr, b, e->u.load.n, e->u.load.index);
		cg_put(pr, ")");
		return;
	}
	if (every_other(pr, e)) {
		need_vload_every_other(pr, vector_helper_name(pr, "vload_s2", c, name,
			sizeof(name)), c);
		cg_put(pr, "%s(&%s[", name, buffer_name(pr, b));
		cg_print_offset(pr, b, e->u.load.n, e->u.load.index);
		cg_put(pr, "])");
		return;
	}
	bool half = b->dtype == TESSEL_F16 || b->dtype == TESSEL_BF16;
	const char *convert = b->dtype == TESSEL_F16 ? "tsl_f16_to_f32" : "tsl_bf16_to_f32";
	snprintf(op, sizeof(op), "vload%s", b->dtype == TESSEL_F16 ? "_f16" :
		b->dtype == TESSEL_BF16 ? "_bf16" : "");
	vector_helper_name(pr, op, c, name, sizeof(name));
	if (half) {
		te_strbuf t = { 0 };
		cg_need_scalar_helper(pr, convert);
		half_helper(pr, &t, true, b->dtype == TESSEL_F16, convert);
		need_vector_helper(pr, name, c, te_sb_str(&t));
		te_sb_free(&t);
	} else {
		need_vector_helper(pr, name, c, load_tmpl);
	}
	cg_put(pr, "%s(&%s[", name, buffer_name(pr, b));
	cg_print_offset(pr, b, e->u.load.n, e->u.load.index);
	cg_put(pr, "])");
}

/* Print the comparison "e" of vectors as a mask. */
static void print_vcompare(cg_printer *pr, const loop_expr *e, int prec)
{
	static const char *const sym[] = { "<", "<=", ">", ">=", "==", "!=" };
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	vclass ca = vector_class(pr, a), cb = vector_class(pr, b);
	bool wide = ca == V_F64 || cb == V_F64 || (ca == V_SCALAR && a->dtype == TESSEL_F64) ||
		(cb == V_SCALAR && b->dtype == TESSEL_F64);
	vclass c = wide ? V_F64 : V_F32;
	char mask[64];
	(void)prec;
	if (wide)
		cg_put(pr, "__builtin_convertvector(");
	else
		cg_put(pr, "(");
	print_vexpr(pr, a, c, CG_PREC_REL);
	cg_put(pr, " %s ", sym[e->u.bin.op - TESSEL_LT]);
	print_vexpr(pr, b, c, CG_PREC_REL + 1);
	if (wide)
		cg_put(pr, ", %s)", vector_type(pr, V_MASK, false, mask, sizeof(mask)));
	else
		cg_put(pr, ")");
}

/* Print the float operator "e" on vectors of class "c". */
static void print_varith(cg_printer *pr, const loop_expr *e, vclass c, int prec)
{
	static const char *const sym[] = { "+", "-", "*", "/" };
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	char name[80];
	int k = c == V_F64;
	if (op <= TESSEL_DIV) {
		int level = op <= TESSEL_SUB ? CG_PREC_ADD : CG_PREC_MUL;
		bool paren = level < prec;
		if (paren)
			cg_put(pr, "(");
		print_vexpr(pr, a, c, level);
		cg_put(pr, " %s ", sym[op]);
		print_vexpr(pr, b, c, level + 1);
		if (paren)
			cg_put(pr, ")");
		return;
	}
	if (op == TESSEL_MIN || op == TESSEL_MAX) {
		minmax_helper(pr, op == TESSEL_MAX, c, name, sizeof(name));
	} else {
		char lane[200];
		if (op == TESSEL_POW)
			snprintf(lane, sizeof(lane), "%s(a[l], b[l])", pr->d->pow_fn[k]);
		else
			snprintf(lane, sizeof(lane), "a[l] - %s(a[l] / b[l]) * b[l]",
				pr->d->unary_fn[k][TESSEL_FLOOR]);
		lanewise_helper(pr, op == TESSEL_POW ? "vpow" : "vmod", c, true, lane,
			name, sizeof(name));
	}
	cg_put(pr, "%s(", name);
	print_vexpr(pr, a, c, CG_PREC_NONE);
	cg_put(pr, ", ");
	print_vexpr(pr, b, c, CG_PREC_NONE);
	cg_put(pr, ")");
}

/* Print the varying binary "e" of class "c" on vectors. */
static void print_vbinary(cg_printer *pr, const loop_expr *e, vclass c, int prec)
{
	tessel_binary op = e->u.bin.op;
	if (op >= TESSEL_LT && op <= TESSEL_NE) {
		print_vcompare(pr, e, prec);
	} else if (op == TESSEL_AND || op == TESSEL_OR) {
		cg_put(pr, "(");
		print_vexpr(pr, e->u.bin.a, V_MASK, CG_PREC_UNARY);
		cg_put(pr, op == TESSEL_AND ? " & " : " | ");
		print_vexpr(pr, e->u.bin.b, V_MASK, CG_PREC_UNARY);
		cg_put(pr, ")");
	} else {
		print_varith(pr, e, c, prec);
	}
}

/* Print the varying unary "e" of class "c" on vectors: NOT and NEG as
 * operators, intrinsics lane by lane. */
static void print_vunary(cg_printer *pr, const loop_expr *e, vclass c, int prec)
{
	char name[80];
	bool paren = prec > CG_PREC_UNARY;
	switch (e->u.un.op) {
	case TESSEL_NOT:
	case TESSEL_NEG:
		if (paren)
			cg_put(pr, "(");
		cg_put(pr, e->u.un.op == TESSEL_NOT ? "~" : "-");
		print_vexpr(pr, e->u.un.a, c, CG_PREC_POSTFIX);
		if (paren)
			cg_put(pr, ")");
		return;
	default:
		unary_helper(pr, e->u.un.op, c, name, sizeof(name));
		cg_put(pr, "%s(", name);
		print_vexpr(pr, e->u.un.a, c, CG_PREC_NONE);
		cg_put(pr, ")");
		return;
	}
}

/* Print the varying select "e" of class "c": "?:" on an invariant
 * condition (one branch evaluated), a blend on a mask. */
static void print_vselect(cg_printer *pr, const loop_expr *e, vclass c, int prec)
{
	char name[80];
	if (vector_class(pr, e->u.sel.cond) == V_SCALAR) {
		bool paren = prec > CG_PREC_COND;
		if (paren)
			cg_put(pr, "(");
		cg_print_expr(pr, e->u.sel.cond, CG_PREC_OR);
		cg_put(pr, " ? ");
		print_vexpr(pr, e->u.sel.then_, c, CG_PREC_NONE);
		cg_put(pr, " : ");
		print_vexpr(pr, e->u.sel.else_, c, CG_PREC_COND);
		if (paren)
			cg_put(pr, ")");
		return;
	}
	cg_put(pr, "%s(", select_helper(pr, c, name, sizeof(name)));
	print_vexpr(pr, e->u.sel.cond, V_MASK, CG_PREC_NONE);
	cg_put(pr, ", ");
	print_vexpr(pr, e->u.sel.then_, c, CG_PREC_NONE);
	cg_put(pr, ", ");
	print_vexpr(pr, e->u.sel.else_, c, CG_PREC_NONE);
	cg_put(pr, ")");
}

/* Print the cast "e" of a vector: to a half type by rounding each lane,
 * between float and double by conversion. */
static void print_vcast(cg_printer *pr, const loop_expr *e, int prec)
{
	tessel_dtype to = e->u.cast.to;
	char name[80], lane[80];
	if (to != TESSEL_F16 && to != TESSEL_BF16) {
		print_vexpr(pr, e->u.cast.a, float_class(to), prec);
		return;
	}
	const char *round = to == TESSEL_F16 ? "tsl_round_f16" : "tsl_round_bf16";
	cg_need_scalar_helper(pr, round);
	snprintf(lane, sizeof(lane), "%s(a[l])", round);
	lanewise_helper(pr, to == TESSEL_F16 ? "vround_f16" : "vround_bf16", V_F32,
		false, lane, name, sizeof(name));
	cg_put(pr, "%s(", name);
	print_vexpr(pr, e->u.cast.a, V_F32, CG_PREC_NONE);
	cg_put(pr, ")");
}

/* Print the varying "e", of class "c", as computed on vectors. */
static void print_vnode(cg_printer *pr, const loop_expr *e, vclass c, int prec)
{
	switch (e->kind) {
	case LX_LOAD:
		print_vload(pr, e);
		break;
	case LX_UNARY:
		print_vunary(pr, e, c, prec);
		break;
	case LX_BINARY:
		print_vbinary(pr, e, c, prec);
		break;
	case LX_SELECT:
		print_vselect(pr, e, c, prec);
		break;
	case LX_CAST:
		print_vcast(pr, e, prec);
		break;
	default:
		cg_error(pr, "internal: expression cannot be printed on vectors");
		break;
	}
}

/* Print "e" as a vector of class "want": broadcast when invariant,
 * converted between float and double lanes when needed. */
static void print_vexpr(cg_printer *pr, const loop_expr *e, vclass want, int prec)
{
	vclass c = vector_class(pr, e);
	char type[64];
	if (c == V_SCALAR) {
		print_splat(pr, e, want);
	} else if (c == want) {
		print_vnode(pr, e, c, prec);
	} else {
		cg_put(pr, "__builtin_convertvector(");
		print_vnode(pr, e, c, CG_PREC_NONE);
		cg_put(pr, ", %s)", vector_type(pr, want, false, type, sizeof(type)));
	}
}

/* Write into "t" the helper "$5" storing a vector of "bytes" bytes at "p"
 * with the non-temporal store of its width where the compiler targets
 * it and "p" is aligned to the vector (the instruction requires it),
 * with a plain store elsewhere. */
static void stream_helper(te_strbuf *t, int bytes)
{
	static const struct {
		int bytes;
		const char *guard, *store, *type;
	} widths[] = {
		{ 64, "__AVX512F__", "_mm512_stream_si512", "__m512i" },
		{ 32, "__AVX__", "_mm256_stream_si256", "__m256i" },
		{ 16, "__SSE2__", "_mm_stream_si128", "__m128i" },
	};
	const char *guard = NULL, *store = NULL, *type = NULL;
	for (size_t i = 0; i < sizeof(widths) / sizeof(*widths); i++)
		if (widths[i].bytes == bytes) {
			guard = widths[i].guard;
			store = widths[i].store;
			type = widths[i].type;
		}
	if (guard)
		te_sb_printf(t, "#if defined(%s)\n#include <immintrin.h>\n#endif\n", guard);
	te_sb_puts(t, "$4 void $5($2 *p, $0 v)\n{\n");
	if (guard)
		te_sb_printf(t, "#if defined(%s)\n"
			"\tif (((uintptr_t)p & %d) == 0) {\n"
			"\t\t%s((%s *)p, (%s)v);\n\t\treturn;\n\t}\n#endif\n",
			guard, bytes - 1, store, type, type);
	te_sb_puts(t, "\tmemcpy(p, &v, sizeof(v));\n}\n");
}

/* Return whether "s" stores into a buffer stored streaming. */
static bool is_stream_store(const loop_stmt *s)
{
	return s->kind == LS_STORE && s->u.store.buf->stream;
}

/* Print the store "s" of a vector: non-temporal where its buffer is
 * stored streaming (but for halves, which are converted first). */
static void print_vstore(cg_printer *pr, const loop_stmt *s)
{
	const loop_buffer *b = s->u.store.buf;
	char name[80], op[32];
	vclass c = float_class(b->dtype);
	bool half = b->dtype == TESSEL_F16 || b->dtype == TESSEL_BF16;
	bool stream = b->stream && !half;
	if (aligned_vector(pr, b, s->u.store.n, s->u.store.index)) {
		cg_line(pr, "%s", "");
		print_aligned_vector(pr, b, s->u.store.n, s->u.store.index);
		cg_put(pr, " = ");
		print_vexpr(pr, cg_stored_value(s->u.store.value, b->dtype), c, CG_PREC_NONE);
		cg_put(pr, ";\n");
		if (b->pinned) {
			char keep[64];
			in_register_helper(pr, pr->lanes * (int)tessel_dtype_size(b->dtype), keep,
				sizeof(keep));
			cg_line(pr, "%s(", keep);
			print_aligned_vector(pr, b, s->u.store.n, s->u.store.index);
			cg_put(pr, ");\n");
		}
		return;
	}
	snprintf(op, sizeof(op), "%s%s", stream ? "vstream" : "vstore",
		b->dtype == TESSEL_F16 ? "_f16" : b->dtype == TESSEL_BF16 ? "_bf16" : "");
	vector_helper_name(pr, op, c, name, sizeof(name));
	te_strbuf t = { 0 };
	if (stream)
		stream_helper(&t, pr->lanes * (c == V_F64 ? 8 : 4));
	if (half) {
		const char *convert = b->dtype == TESSEL_F16 ? "tsl_f32_to_f16" :
			"tsl_f32_to_bf16";
		cg_need_scalar_helper(pr, convert);
		half_helper(pr, &t, false, b->dtype == TESSEL_F16, convert);
	}
	cg_line(pr, "%s(&%s[", name, buffer_name(pr, b));
	cg_print_offset(pr, b, s->u.store.n, s->u.store.index);
	cg_put(pr, "], ");
	print_vexpr(pr, cg_stored_value(s->u.store.value, b->dtype), c, CG_PREC_NONE);
	cg_put(pr, ");\n");
	need_vector_helper(pr, name, c, half || stream ? te_sb_str(&t) : store_tmpl);
	te_sb_free(&t);
}

/* Print the statement "s" of a vector loop body (vector_stmt_ok holds). */
static void print_vector_stmt(cg_printer *pr, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_STORE:
		print_vstore(pr, s);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			print_vector_stmt(pr, s->u.seq.items[i]);
		break;
	case LS_IF:
		cg_line(pr, "if (");
		cg_print_expr(pr, s->u.if_.cond, CG_PREC_NONE);
		cg_put(pr, ") {\n");
		pr->depth++;
		print_vector_stmt(pr, s->u.if_.then_);
		pr->depth--;
		if (s->u.if_.else_) {
			cg_line(pr, "} else {\n");
			pr->depth++;
			print_vector_stmt(pr, s->u.if_.else_);
			pr->depth--;
		}
		cg_line(pr, "}\n");
		break;
	default:
		break;
	}
}

/* A reduction update "A[i] = A[i] op x" in a vectorized loop whose
 * variable "i" does not use. */
typedef struct vreduction {
	const loop_stmt *store;
	tessel_binary op;
	const loop_expr *x;
	vclass c;
} vreduction;

/* Return whether "e" loads the element the store "s" writes. */
static bool is_stored_element(const loop_expr *e, const loop_stmt *s)
{
	if (e->kind != LX_LOAD || e->u.load.buf != s->u.store.buf ||
	    e->u.load.n != s->u.store.n)
		return false;
	for (int d = 0; d < e->u.load.n; d++)
		if (!loop_expr_equal(e->u.load.index[d], s->u.store.index[d]))
			return false;
	return true;
}

/* Return whether the body of the vectorized loop "s" is one update of a
 * float element invariant in the loop by +, *, min or max with an operand
 * that runs on vectors (and reads nothing of the updated buffer), and
 * describe it in "r".  schedule/vectorize.c lets a reduction loop be
 * vectorized: its lanes then accumulate apart and are combined at the
 * end, a reassociation the schedule asked for, as rfactor does. */
static bool vector_reduction(cg_printer *pr, const loop_stmt *s, vreduction *r)
{
	const loop_stmt *b = s->u.for_.body;
	while (b->kind == LS_SEQ && b->u.seq.n == 1)
		b = b->u.seq.items[0];
	if (b->kind != LS_STORE)
		return false;
	const loop_buffer *buf = b->u.store.buf;
	const loop_expr *v = b->u.store.value;
	if ((buf->dtype != TESSEL_F32 && buf->dtype != TESSEL_F64) ||
	    v->kind != LX_BINARY || v->dtype != buf->dtype)
		return false;
	tessel_binary op = v->u.bin.op;
	if (op != TESSEL_ADD && op != TESSEL_MUL && op != TESSEL_MIN && op != TESSEL_MAX)
		return false;
	for (int d = 0; d < b->u.store.n; d++)
		if (loop_expr_uses_var(b->u.store.index[d], s->u.for_.var))
			return false;
	const loop_expr *x = is_stored_element(v->u.bin.a, b) ? v->u.bin.b :
		is_stored_element(v->u.bin.b, b) ? v->u.bin.a : NULL;
	if (!x || loop_expr_loads(x, buf))
		return false;
	pr->vector_var = s->u.for_.var;
	vclass c = vector_class(pr, x);
	pr->vector_var = NULL;
	if (c != float_class(buf->dtype))
		return false;
	*r = (vreduction){ b, op, x, c };
	return true;
}

/* Print the element the reduction "r" updates, "A[offset]". */
static void print_reduced_element(cg_printer *pr, const vreduction *r)
{
	const loop_stmt *st = r->store;
	cg_put(pr, "%s[", buffer_name(pr, st->u.store.buf));
	cg_print_offset(pr, st->u.store.buf, st->u.store.n, st->u.store.index);
	cg_put(pr, "]");
}

/* Print the vectorized reduction "r" of loop "s" over whole vectors of
 * "lanes" iterations: an accumulator vector from the operator's identity,
 * then its lanes folded into the element in order.  The remainder runs as
 * scalar code after. */
static void print_vector_reduction(cg_printer *pr, const loop_stmt *s,
	const vreduction *r, int lanes, int64_t whole)
{
	static const char *const identity[] = { [TESSEL_ADD] = "-0.0",
		[TESSEL_MUL] = "1.0", [TESSEL_MIN] = "INFINITY", [TESSEL_MAX] = "-INFINITY" };
	const char *var = cg_var_name(pr, s->u.for_.var);
	char type[64], splat[80], minmax[80];
	int k = r->c == V_F64;
	bool minmax_op = r->op == TESSEL_MIN || r->op == TESSEL_MAX;
	pr->vector_var = s->u.for_.var;
	pr->lanes = lanes;
	pr->lanes_aligned = starts_aligned(s, 0, lanes);
	vector_type(pr, r->c, false, type, sizeof(type));
	need_vector_helper(pr, vector_helper_name(pr, "splat", r->c, splat, sizeof(splat)),
		r->c, splat_tmpl);
	cg_line(pr, "{\n");
	pr->depth++;
	cg_line(pr, "%s %s_acc = %s(%s);\n", type, var, splat, identity[r->op]);
	cg_print_for(pr, s->u.for_.var, s->u.for_.min, 0, NULL, whole, lanes);
	pr->depth++;
	cg_line(pr, "%s_acc = ", var);
	if (minmax_op) {
		minmax_helper(pr, r->op == TESSEL_MAX, r->c, minmax, sizeof(minmax));
		cg_put(pr, "%s(%s_acc, ", minmax, var);
		print_vexpr(pr, r->x, r->c, CG_PREC_NONE);
		cg_put(pr, ");\n");
	} else {
		cg_put(pr, "%s_acc %s ", var, r->op == TESSEL_ADD ? "+" : "*");
		print_vexpr(pr, r->x, r->c, r->op == TESSEL_ADD ? CG_PREC_ADD + 1 :
			CG_PREC_MUL + 1);
		cg_put(pr, ";\n");
	}
	pr->depth--;
	cg_line(pr, "}\n");
	pr->vector_var = NULL;
	pr->lanes_aligned = false;
	cg_line(pr, "for (int %s_l = 0; %s_l < %d; %s_l++) {\n", var, var, lanes, var);
	pr->depth++;
	cg_line(pr, "%s", "");
	print_reduced_element(pr, r);
	if (minmax_op) {
		const char *fn = r->op == TESSEL_MAX ? pr->d->fmax_fn[k] : pr->d->fmin_fn[k];
		cg_need_scalar_helper(pr, fn);
		cg_put(pr, " = %s(", fn);
		print_reduced_element(pr, r);
		cg_put(pr, ", %s_acc[%s_l]);\n", var, var);
	} else {
		cg_put(pr, " %s= %s_acc[%s_l];\n", r->op == TESSEL_ADD ? "+" : "*", var, var);
	}
	pr->depth--;
	cg_line(pr, "}\n");
	pr->depth--;
	cg_line(pr, "}\n");
}

/* Return whether the vectorized loop "s" is a reduction that runs on
 * vectors (vector_reduction), with its lane count in "*lanes". */
static bool reduction_lanes(cg_printer *pr, const loop_stmt *s, vreduction *r,
	int *lanes)
{
	const loop_expr *extent = s->u.for_.extent;
	if (!pr->d->vector_type_format || pr->target.vector_bytes == 0 ||
	    extent->kind != LX_INT || !vector_reduction(pr, s, r))
		return false;
	*lanes = fit_lanes(pr, r->c == V_F64, extent->u.ival);
	return *lanes > 0;
}

/* Print the vectorized loop "s" as scalar code, marked independent when
 * it is innermost and its accesses show it. */
static void print_scalar_vector_loop(cg_printer *pr, const loop_stmt *s)
{
	if (!any_stmt(s->u.for_.body, is_loop, true) && iterations_independent(pr, s))
		cg_line(pr, "#pragma GCC ivdep\n");
	cg_print_for(pr, s->u.for_.var, s->u.for_.min, 0, s->u.for_.extent, 0, 1);
	cg_print_block_body(pr, s->u.for_.body);
	cg_line(pr, "}\n");
}

/* Print the iterations [lo, hi) of the vectorized loop "s" on vectors of
 * "lanes" lanes (hi - lo a multiple of lanes). */
static void print_vector_run(cg_printer *pr, const loop_stmt *s, int64_t lo,
	int64_t hi, int lanes)
{
	pr->vector_var = s->u.for_.var;
	pr->lanes = lanes;
	pr->lanes_aligned = starts_aligned(s, lo, lanes);
	cg_print_for(pr, s->u.for_.var, s->u.for_.min, lo, NULL, hi, lanes);
	pr->depth++;
	print_vector_stmt(pr, s->u.for_.body);
	pr->depth--;
	cg_line(pr, "}\n");
	pr->vector_var = NULL;
	pr->lanes_aligned = false;
}

/* Print the vectorized loop "s": a loop over whole vectors of "lanes"
 * iterations, then the remainder on vectors of half, a quarter... of the
 * lanes while they fit, down to 16 bytes (a tile of 40 floats: 2 x 16,
 * then 8), and the last iterations as scalar code; a reduction's
 * remainder is scalar. */
static void print_vectorized(cg_printer *pr, const loop_stmt *s)
{
	cg_bind_loop_range(pr, s);
	int lanes = vector_lanes(pr, s);
	vreduction red;
	bool reduction = !lanes && reduction_lanes(pr, s, &red, &lanes);
	if (!lanes) {
		print_scalar_vector_loop(pr, s);
		return;
	}
	int64_t extent = s->u.for_.extent->u.ival;
	int64_t whole = extent / lanes * lanes;
	if (reduction) {
		print_vector_reduction(pr, s, &red, lanes, whole);
	} else {
		print_vector_run(pr, s, 0, whole, lanes);
		int least = lanes * 16 / pr->target.vector_bytes;
		for (int l = lanes / 2; l >= 2 && l >= least && whole < extent; l /= 2) {
			int64_t upto = whole + (extent - whole) / l * l;
			if (upto > whole)
				print_vector_run(pr, s, whole, upto, l);
			whole = upto;
		}
	}
	if (whole == extent)
		return;
	cg_print_for(pr, s->u.for_.var, s->u.for_.min, whole, NULL, extent, 1);
	cg_print_block_body(pr, s->u.for_.body);
	cg_line(pr, "}\n");
}

/* ---- sums of products in groups ------------------------------------------ */

/* What a loop annotated dot_pairs or dot_quads sums in groups: the
 * accumulator's dtype, the operands' dtypes (each "operand" or
 * "alt_operand"), the macro of the instruction's extension, the target's
 * vector bytes it needs, and the bytes of one vector of operands per
 * iteration.  The last kind, pairs of 8-bit integers widened to i16 and
 * summed by AVX2's vpmaddwd, is "int_pairs". */
typedef struct dot_kind {
	int group;
	tessel_dtype acc, operand, alt_operand;
	const char *guard;
	int vector_bytes, lane_bytes;
} dot_kind;

static const dot_kind dot_kinds[] = {
	{ 2, TESSEL_F32, TESSEL_BF16, TESSEL_BF16, "__AVX512BF16__", 64, 32 },
	{ 4, TESSEL_I32, TESSEL_I8, TESSEL_U8, "__AVX512VNNI__", 64, 16 },
	{ 2, TESSEL_I32, TESSEL_I8, TESSEL_U8, "__AVX2__", 32, 8 },
};
static const dot_kind *const int_pairs = &dot_kinds[2];

/* A loop of "kind->group" iterations whose body is the vectorized loop
 * "vec" of at least one whole vector of i32 or f32 lanes, whose body
 * updates the element "store" of kind->acc (contiguous along it, the
 * same in every iteration) by adding the product of the loads of
 * kind->operand "lanes" (contiguous along it, or "packed": the group's
 * elements of each lane adjacent, lane after lane, as a vector of
 * groups) and "bcast" (invariant in it). */
typedef struct dot_group {
	const dot_kind *kind;
	const loop_stmt *vec, *store;
	const loop_expr *lanes, *bcast;
	bool packed;
} dot_group;

/* Return "e" without the conversions to "dt" around it (exact for the
 * values and products a dot group takes). */
static const loop_expr *uncast_to(const loop_expr *e, tessel_dtype dt)
{
	while (e->kind == LX_CAST && e->u.cast.to == dt)
		e = e->u.cast.a;
	return e;
}

static const loop_stmt *only_stmt(const loop_stmt *s)
{
	while (s->kind == LS_SEQ && s->u.seq.n == 1)
		s = s->u.seq.items[0];
	return s;
}

/* Return the load of an operand of "kind" under conversions to its
 * accumulator's dtype at "e", or NULL. */
static const loop_expr *operand_load(const loop_expr *e, const dot_kind *kind)
{
	e = uncast_to(e, kind->acc);
	if (e->kind != LX_LOAD)
		return NULL;
	tessel_dtype dt = e->u.load.buf->dtype;
	return dt == kind->operand || dt == kind->alt_operand ? e : NULL;
}

/* Return whether the load "e" reads, along the vector variable of "pr"
 * and the group loop's variable "g", the "group" elements of each lane
 * side by side and the lanes one group apart (a packed operand). */
static bool packed_groups(const cg_printer *pr, const loop_expr *e, const loop_var *g,
	int group)
{
	cg_affine aff;
	bool clean, clean_g;
	cg_affine_offset(e->u.load.buf, e->u.load.n, e->u.load.index, &aff);
	int64_t lane_step = cg_affine_coef(&aff, pr->vector_var, &clean);
	int64_t group_step = cg_affine_coef(&aff, g, &clean_g);
	return clean && clean_g && lane_step == group && group_step == 1;
}

/* Return the kind of the dot group "group" summed into "acc" on a target
 * with vectors of "vector_bytes", or NULL. */
static const dot_kind *dot_kind_of(int group, tessel_dtype acc, int vector_bytes)
{
	for (size_t i = 0; i < sizeof(dot_kinds) / sizeof(*dot_kinds); i++)
		if (dot_kinds[i].group == group && dot_kinds[i].acc == acc &&
		    dot_kinds[i].vector_bytes == vector_bytes)
			return &dot_kinds[i];
	return NULL;
}

/* Return whether the loop "s" annotated with a dot group has the form
 * of its kind on the target of "pr", described in "d". */
static bool match_dot_group(cg_printer *pr, const loop_stmt *s, dot_group *d)
{
	const loop_stmt *v = only_stmt(s->u.for_.body);
	if (s->u.for_.extent->kind != LX_INT || v->kind != LS_FOR ||
	    v->u.for_.kind != LOOP_VECTORIZED || v->u.for_.extent->kind != LX_INT)
		return false;
	const loop_stmt *st = only_stmt(v->u.for_.body);
	if (st->kind != LS_STORE)
		return false;
	const dot_kind *kind = dot_kind_of(s->u.for_.dot_group, st->u.store.buf->dtype,
		pr->target.vector_bytes);
	if (!kind || s->u.for_.extent->u.ival != kind->group ||
	    v->u.for_.extent->u.ival < kind->vector_bytes / 4)
		return false;
	for (int i = 0; i < st->u.store.n; i++)
		if (loop_expr_uses_var(st->u.store.index[i], s->u.for_.var))
			return false;
	const loop_expr *sum = st->u.store.value;
	if (sum->kind != LX_BINARY || sum->u.bin.op != TESSEL_ADD)
		return false;
	const loop_expr *prod = is_stored_element(sum->u.bin.a, st) ? sum->u.bin.b :
		is_stored_element(sum->u.bin.b, st) ? sum->u.bin.a : NULL;
	prod = prod ? uncast_to(prod, kind->acc) : NULL;
	if (!prod || prod->kind != LX_BINARY || prod->u.bin.op != TESSEL_MUL)
		return false;
	const loop_expr *x = operand_load(prod->u.bin.a, kind);
	const loop_expr *y = operand_load(prod->u.bin.b, kind);
	if (!x || !y)
		return false;
	const loop_var *lane = v->u.for_.var;
	pr->vector_var = lane;
	bool ok = contiguous(pr, st->u.store.buf, st->u.store.n, st->u.store.index);
	bool x_lanes = contiguous(pr, x->u.load.buf, x->u.load.n, x->u.load.index);
	bool y_lanes = contiguous(pr, y->u.load.buf, y->u.load.n, y->u.load.index);
	bool x_packed = packed_groups(pr, x, s->u.for_.var, kind->group);
	bool y_packed = packed_groups(pr, y, s->u.for_.var, kind->group);
	pr->vector_var = NULL;
	const loop_expr *lanes = x_lanes || x_packed ? x : y_lanes || y_packed ? y : NULL;
	const loop_expr *bcast = lanes == x ? y : x;
	if (!ok || !lanes || loop_expr_uses_var(bcast, lane))
		return false;
	*d = (dot_group){ kind, v, st, lanes, bcast, lanes == x ? x_packed : y_packed };
	return true;
}

/* Print "name[offset]" of the access "index" of "b". */
static void print_element(cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	cg_put(pr, "%s[", buffer_name(pr, b));
	cg_print_offset(pr, b, n, index);
	cg_put(pr, "]");
}

/* Print the statements that sum the groups of "d" into tsl_acc from
 * tsl_quads (the groups of the lanes) and tsl_bytes (the group of the
 * invariant operand), each with the first iteration's element in the
 * highest bits of a bf16 pair and the lowest byte of a quad.  vpdpbusd
 * multiplies unsigned bytes (its first operand) by signed ones: a u8
 * operand with an i8 one takes it as is; two i8 operands offset the
 * invariant one by 128 (as u8) and take 128 times the sum of the other
 * off; two u8 operands offset the varying one by -128 (as i8) and add 128
 * times the sum of the invariant one.  Int pairs (vpmaddwd) multiply
 * i16 pairs, the operands widened, the first iteration's in the lower
 * half.  Each is exact in i32's wrapping arithmetic. */
static void print_dot_sum(cg_printer *pr, const dot_group *d)
{
	if (d->kind == int_pairs) {
		cg_line(pr, "tsl_acc = _mm256_add_epi32(tsl_acc, _mm256_madd_epi16(tsl_quads, "
			"_mm256_set1_epi32((int)tsl_bytes)));\n");
		return;
	}
	if (d->kind->group == 2) {
		cg_line(pr, "tsl_acc = _mm512_dpbf16_ps(tsl_acc, "
			"(__m512bh)_mm512_set1_epi32((int)tsl_bytes), (__m512bh)tsl_quads);\n");
		return;
	}
	bool lanes_u8 = d->lanes->u.load.buf->dtype == TESSEL_U8;
	bool bcast_u8 = d->bcast->u.load.buf->dtype == TESSEL_U8;
	if (lanes_u8 != bcast_u8) {
		cg_line(pr, "__m512i tsl_quad = _mm512_set1_epi32((int)tsl_bytes);\n");
		cg_line(pr, "tsl_acc = _mm512_dpbusd_epi32(tsl_acc, %s);\n", lanes_u8 ?
			"tsl_quads, tsl_quad" : "tsl_quad, tsl_quads");
	} else if (!lanes_u8) {
		cg_line(pr, "__m512i tsl_bias = _mm512_set1_epi32((int)0x80808080u);\n");
		cg_line(pr, "__m512i tsl_quad = _mm512_set1_epi32((int)(tsl_bytes ^ "
			"0x80808080u));\n");
		cg_line(pr, "tsl_acc = _mm512_sub_epi32(_mm512_dpbusd_epi32(tsl_acc, "
			"tsl_quad, tsl_quads), _mm512_dpbusd_epi32(_mm512_setzero_si512(), "
			"tsl_bias, tsl_quads));\n");
	} else {
		cg_line(pr, "__m512i tsl_quad = _mm512_set1_epi32((int)tsl_bytes);\n");
		cg_line(pr, "tsl_acc = _mm512_add_epi32(_mm512_dpbusd_epi32(tsl_acc, "
			"tsl_quad, _mm512_xor_si512(tsl_quads, _mm512_set1_epi32((int)"
			"0x80808080u))), _mm512_set1_epi32((int)(128u * ((tsl_bytes & 0xffu) + "
			"(tsl_bytes >> 8 & 0xffu) + (tsl_bytes >> 16 & 0xffu) + "
			"(tsl_bytes >> 24)))));\n");
	}
}

/* Return whether the group's elements of the load "e" are adjacent in
 * memory, in the order of the group loop's variable "g": one load of 4
 * bytes. */
static bool group_adjacent(const loop_expr *e, const loop_var *g)
{
	cg_affine aff;
	bool clean;
	cg_affine_offset(e->u.load.buf, e->u.load.n, e->u.load.index, &aff);
	return cg_affine_coef(&aff, g, &clean) == 1 && clean;
}

/* Print tsl_quads, the groups of the lanes of "d" as print_dot_sum takes
 * them, from tsl_lanes: one vector of packed groups (a bf16 pair's halves
 * swapped), or the group's iterations of a contiguous operand
 * interleaved; int pairs' bytes widened to i16. */
static void print_groups(cg_printer *pr, const dot_group *d)
{
	if (d->kind == int_pairs) {
		const char *widen = d->lanes->u.load.buf->dtype == TESSEL_U8 ?
			"_mm256_cvtepu8_epi16" : "_mm256_cvtepi8_epi16";
		cg_line(pr, "__m256i tsl_quads = %s(%s);\n", widen, d->packed ? "tsl_lanes[0]" :
			"_mm_unpacklo_epi8(tsl_lanes[0], tsl_lanes[1])");
		return;
	}
	if (d->packed) {
		cg_line(pr, "__m512i tsl_quads = %s;\n", d->kind->group == 2 ?
			"_mm512_rol_epi32(tsl_lanes[0], 16)" : "tsl_lanes[0]");
	} else if (d->kind->group == 2) {
		cg_line(pr, "__m512i tsl_quads = _mm512_or_si512(_mm512_slli_epi32("
			"_mm512_cvtepu16_epi32(tsl_lanes[0]), 16), "
			"_mm512_cvtepu16_epi32(tsl_lanes[1]));\n");
	} else {
		cg_line(pr, "__m512i tsl_quads = _mm512_or_si512(_mm512_or_si512("
			"_mm512_cvtepu8_epi32(tsl_lanes[0]), _mm512_slli_epi32("
			"_mm512_cvtepu8_epi32(tsl_lanes[1]), 8)), _mm512_or_si512("
			"_mm512_slli_epi32(_mm512_cvtepu8_epi32(tsl_lanes[2]), 16), "
			"_mm512_slli_epi32(_mm512_cvtepu8_epi32(tsl_lanes[3]), 24)));\n");
	}
}

/* Print the loop "s" annotated with a dot group, where it has the form of
 * its kind, as one instruction per whole vector (the lanes past the last
 * whole vector in plain loops after): AVX512 BF16's vdpbf16ps for
 * pairs of bf16, the first iteration in the odd half, which it adds
 * first, so that the sums are the plain loop's bit for bit (a product of
 * two bf16 values is exact in f32); AVX512 VNNI's vpdpbusd for quads of
 * i8 or u8; AVX2's vpmaddwd for pairs of them (print_dot_sum).  Per
 * vector of 16 (int pairs 8) lanes, the invariant operand's group
 * is broadcast; a packed operand's groups are one load (bf16 pairs
 * swapped in each 32 bits), a contiguous operand's iterations are
 * interleaved (print_groups). */
static bool cpu_print_dot_group(cg_printer *pr, const loop_stmt *s)
{
	dot_group d;
	if (!match_dot_group(pr, s, &d))
		return false;
	const dot_kind *k = d.kind;
	char include[160];
	snprintf(include, sizeof(include), "#if defined(%s)\n#include <immintrin.h>\n"
		"#endif\n", k->guard);
	char helper[64];
	snprintf(helper, sizeof(helper), "tsl_dot_include%s", k->guard);
	cg_need_helper(pr, helper, include);
	const loop_expr *l = d.lanes, *b = d.bcast;
	const loop_stmt *st = d.store;
	int lanes = k->vector_bytes / 4, lane_bytes = d.packed ? k->group * k->lane_bytes :
		k->lane_bytes;
	const char *acc_type = k->acc == TESSEL_F32 ? "__m512" : k->vector_bytes == 64 ?
		"__m512i" : "__m256i";
	cg_line(pr, "#if defined(%s)\n", k->guard);
	cg_bind_loop_range(pr, s);
	cg_bind_loop_range(pr, d.vec);
	int64_t extent = d.vec->u.for_.extent->u.ival, whole = extent / lanes * lanes;
	cg_print_for(pr, d.vec->u.for_.var, d.vec->u.for_.min, 0, NULL, whole, lanes);
	pr->depth++;
	cg_line(pr, "%s tsl_lanes[%d];\n", lane_bytes == 64 ? "__m512i" : lane_bytes == 32 ?
		"__m256i" : "__m128i", d.packed ? 1 : k->group);
	bool adjacent = k != int_pairs && group_adjacent(b, s->u.for_.var);
	if (adjacent)
		cg_line(pr, "uint32_t tsl_bytes;\n");
	else
		cg_line(pr, "uint32_t tsl_elem[%d];\n", k->group);
	for (int g = 0; g < k->group; g++) {
		cg_line(pr, "{\n");
		pr->depth++;
		cg_line(pr, "const int64_t %s = %d;\n", cg_var_name(pr, s->u.for_.var), g);
		if (k == int_pairs && !d.packed) {
			cg_line(pr, "tsl_lanes[%d] = _mm_loadl_epi64((const __m128i *)&", g);
			print_element(pr, l->u.load.buf, l->u.load.n, l->u.load.index);
			cg_put(pr, ");\n");
		} else if (!d.packed || g == 0) {
			cg_line(pr, "memcpy(&tsl_lanes[%d], &", g);
			print_element(pr, l->u.load.buf, l->u.load.n, l->u.load.index);
			cg_put(pr, ", %d);\n", lane_bytes);
		}
		if (adjacent && g == 0) {
			cg_line(pr, "memcpy(&tsl_bytes, &");
			print_element(pr, b->u.load.buf, b->u.load.n, b->u.load.index);
			cg_put(pr, ", 4);\n");
		} else if (!adjacent) {
			cg_line(pr, "tsl_elem[%d] = %s", g, k == int_pairs ? "(uint16_t)(int16_t)" :
				k->group == 2 ? "" : "(uint8_t)");
			print_element(pr, b->u.load.buf, b->u.load.n, b->u.load.index);
			cg_put(pr, ";\n");
		}
		pr->depth--;
		cg_line(pr, "}\n");
	}
	if (adjacent && k->group == 2)
		cg_line(pr, "tsl_bytes = tsl_bytes << 16 | tsl_bytes >> 16;\n");
	else if (k == int_pairs)
		cg_line(pr, "uint32_t tsl_bytes = tsl_elem[0] | tsl_elem[1] << 16;\n");
	else if (!adjacent && k->group == 2)
		cg_line(pr, "uint32_t tsl_bytes = tsl_elem[0] << 16 | tsl_elem[1];\n");
	else if (!adjacent)
		cg_line(pr, "uint32_t tsl_bytes = tsl_elem[0] | tsl_elem[1] << 8 | "
			"tsl_elem[2] << 16 | tsl_elem[3] << 24;\n");
	print_groups(pr, &d);
	cg_line(pr, "%s tsl_acc;\n", acc_type);
	cg_line(pr, "memcpy(&tsl_acc, &");
	print_element(pr, st->u.store.buf, st->u.store.n, st->u.store.index);
	cg_put(pr, ", %d);\n", k->vector_bytes);
	print_dot_sum(pr, &d);
	cg_line(pr, "memcpy(&");
	print_element(pr, st->u.store.buf, st->u.store.n, st->u.store.index);
	cg_put(pr, ", &tsl_acc, %d);\n", k->vector_bytes);
	pr->depth--;
	cg_line(pr, "}\n");
	if (whole < extent) {
		cg_print_for(pr, s->u.for_.var, s->u.for_.min, 0, s->u.for_.extent, 0, 1);
		pr->depth++;
		cg_print_for(pr, d.vec->u.for_.var, d.vec->u.for_.min, whole, NULL, extent, 1);
		cg_print_block_body(pr, d.vec->u.for_.body);
		cg_line(pr, "}\n");
		pr->depth--;
		cg_line(pr, "}\n");
	}
	cg_line(pr, "#else\n");
	return true;
}

/* Print the parallel or vectorized loop "s"; loops bound to GPU indices
 * are an error on the CPU. */
static void cpu_print_loop(cg_printer *pr, const loop_stmt *s)
{
	loop_kind kind = s->u.for_.kind;
	if (kind == LOOP_PARALLEL)
		print_parallel(pr, s);
	else if (kind == LOOP_VECTORIZED)
		print_vectorized(pr, s);
	else
		cg_error(pr, "loop bound to %s cannot run on the CPU", loop_kind_name(kind));
}

/* ---- the file ----------------------------------------------------------------- */

/* What orders the non-temporal stores of a function before what follows
 * it (they are weakly ordered: another thread that the pool's join lets
 * read the output must find them in memory). */
static const char stream_fence_text[] =
	"#if defined(__SSE__)\n#include <immintrin.h>\n#endif\n"
	"static inline void tsl_stream_fence(void)\n{\n"
	"#if defined(__SSE__)\n\t_mm_sfence();\n#endif\n}\n";

/* Print the statements of a function: heap allocations, "status" when a
 * parallel loop inside may fail, "body" (inside the chunk loop of
 * "own_loop" for an outlined function), the fence of its streaming
 * stores, frees, and the kernel's return. */
static void print_function_body(cg_printer *pr, const loop_stmt *body,
	const loop_stmt *own_loop)
{
	cpu_list heap = { 0 };
	gather_heap_allocs(pr, body, &heap);
	print_heap_entry(pr, &heap);
	bool status = !pr->fn->outlined && has_direct_parallel(body, true);
	if (status)
		cg_line(pr, "int status = 0;\n");
	if (!pr->fn->outlined && !has_direct_parallel(body, false))
		cg_line(pr, "(void)env;\n");
	if (own_loop) {
		print_chunk_loop(pr, own_loop);
		cg_print_block_body(pr, body);
		cg_line(pr, "}\n");
	} else {
		cg_print_stmt(pr, body);
	}
	if (any_stmt(body, is_stream_store, false)) {
		cg_need_helper(pr, "tsl_stream_fence", stream_fence_text);
		cg_line(pr, "tsl_stream_fence();\n");
	}
	print_heap_exit(pr, &heap);
	if (!pr->fn->outlined)
		cg_line(pr, "return %s;\n", status ? "status" : "0");
}

/* Print the kernel function of "pr". */
static void print_kernel(cg_printer *pr)
{
	char type[128];
	const loop_prog *p = pr->p;
	cg_function fn = { .outlined = false };
	static const loop_stmt empty = { .kind = LS_SEQ };
	pr->fn = &fn;
	cg_line(pr, "int %s(void *const *args, const tessel_kernel_env *env)\n{\n",
		pr->kernel);
	pr->depth = 1;
	for (int i = 0; i < p->nargs; i++) {
		pointer_type(pr, p->args[i], type, sizeof(type));
		cg_line(pr, "%s %s = args[%d];\n", type, buffer_name(pr, p->args[i]), i);
	}
	if (!p->nargs)
		cg_line(pr, "(void)args;\n");
	print_function_body(pr, p->body ? p->body : &empty, NULL);
	pr->depth = 0;
	cg_line(pr, "}\n");
	pr->fn = NULL;
}

/* Print the file of "pr": the kernel first (which emits the helpers and
 * outlined functions), then headers, ABI, helpers, outlined functions
 * and the kernel in that order. */
static int cpu_print_file(cg_printer *pr)
{
	te_strbuf kernel = { 0 }, *file = pr->out;
	pr->out = &kernel;
	print_kernel(pr);
	pr->out = file;
	if (pr->failed) {
		te_sb_free(&kernel);
		return -1;
	}
	cg_put(pr, "/* Kernel %s, generated by tessel for the CPU", pr->kernel);
	if (pr->target.vector_bytes)
		cg_put(pr, " (vectors of %d bytes)", pr->target.vector_bytes);
	cg_put(pr, ". */\n");
	cg_put(pr, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
		"#include <string.h>\n\n");
	cg_put(pr, "#ifndef TESSEL_KERNEL_H\n#define TESSEL_KERNEL_H\n\n%s\n#endif\n\n",
		kernel_abi);
	cg_write_helpers(pr, pr->out);
	te_sb_puts(pr->out, pr->functions.data ? pr->functions.data : "");
	te_sb_puts(pr->out, te_sb_str(&kernel));
	te_sb_free(&kernel);
	return 0;
}
