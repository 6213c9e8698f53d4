/* The C-family printer: loop programs become C source in one of the C
 * dialects (CPU C, CUDA C and OpenCL C: rows of the dialect table).
 *
 * The first half of this header is the interface the rest of tessel
 * uses (cg_target, cg_print_c, cg_kernel_name).  The second half is the
 * printer's own machinery, shared by the dialect files (codegen/cpu_c.c,
 * codegen/cuda_c.c, codegen/opencl_c.c, and the layout of the GPU
 * dialects in codegen/gpu_c.c): the dialect table, the printer state and
 * the shared printing functions. */
#ifndef TESSEL_CG_C_PRINTER_H
#define TESSEL_CG_C_PRINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/arena.h"
#include "ir/loop.h"
#include "ir/strbuf.h"
#include "runtime/target.h"
#include "tessel/te.h"

typedef enum cg_dialect_id {
	CG_DIALECT_C,        /* CPU C, the kernel ABI of tessel/kernel.h */
	CG_DIALECT_CUDA,     /* CUDA C for NVRTC: kernels on a grid (cuda_c.c) */
	CG_DIALECT_OPENCL,   /* OpenCL C: kernels launched on a grid (opencl_c.c) */
	CG_DIALECT_COUNT
} cg_dialect_id;

/* What the printed source is for.  "vector_bytes" is the SIMD register
 * width of the CPU (64 for AVX-512, 32 for AVX2, 16 for SSE or NEON);
 * 0 prints plain scalar C.  "sm" is the CUDA architecture (90 for
 * sm_90), which the source does not depend on: it says what NVRTC
 * compiles it for. */
typedef struct cg_target {
	cg_dialect_id dialect;
	int vector_bytes;
	int sm;
} cg_target;

/* Return the CPU C target for the CPU "cpu" (its vector width); NULL
 * gives plain scalar C. */
static inline cg_target cg_target_cpu(const rt_cpu_target *cpu)
{
	cg_target t = { CG_DIALECT_C, cpu ? cpu->vector_bytes : 0, 0 };
	return t;
}

/* Return the OpenCL C target. */
static inline cg_target cg_target_opencl(void)
{
	cg_target t = { CG_DIALECT_OPENCL, 0, 0 };
	return t;
}

/* Return the CUDA C target for the architecture sm_"sm" (90: sm_90). */
static inline cg_target cg_target_cuda(int sm)
{
	cg_target t = { CG_DIALECT_CUDA, 0, sm };
	return t;
}

/* Print "p" for the target "t" as self-contained source: standard headers,
 * the kernel ABI declarations, the helpers the kernel uses, the outlined
 * bodies of its parallel loops, and the kernel itself, exported under the
 * name cg_kernel_name gives ("t" NULL: plain scalar CPU C).  Return the
 * malloc'ed text, or NULL with the error in "ctx" when "p" cannot run on
 * the target (a loop bound to a GPU index on the CPU, a dialect not
 * printable yet, a bad vector width). */
char *cg_print_c(const loop_prog *p, const cg_target *t, tessel_ctx *ctx);

/* How a GPU program runs: its kernels, launched in order on one queue
 * (a kernel boundary is the only barrier between all blocks), each on
 * a grid of blocks of threads derived from its bound loops (the largest
 * extent bound to each index, 1 where none is), and the global
 * temporaries the runtime allocates ("workspaces"), passed to every
 * kernel after the program's arguments. */
#define CG_KERNEL_NAME_MAX 160

typedef struct cg_launch {
	char name[CG_KERNEL_NAME_MAX];
	int64_t grid[3];     /* blocks along x, y, z */
	int64_t block[3];    /* threads per block along x, y, z */
	int64_t shared_bytes; /* of the shared buffers of a block */
	int min_blocks;      /* of the kernel's block loops (min_blocks_per_sm),
	                      * 0 when none */
} cg_launch;

typedef struct cg_gpu_plan {
	int nkernels;
	cg_launch *kernels;          /* malloc'ed, in launch order */
	int nworkspaces;
	int64_t *workspace_bytes;    /* malloc'ed */
} cg_gpu_plan;

/* Print "p" like cg_print_c for the GPU dialect of "t", and describe in
 * "plan" (freed with cg_gpu_plan_free, also after a failure) how it
 * runs. */
char *cg_print_gpu(const loop_prog *p, const cg_target *t, cg_gpu_plan *plan,
	tessel_ctx *ctx);
void cg_gpu_plan_free(cg_gpu_plan *plan);

/* Write the C identifier of the kernel "p" into "buf" of size "len": its
 * name made a C identifier, with "kernel_" in front when the name is a
 * keyword or library function ("exp" becomes "kernel_exp").  Return the
 * length of the full name, as snprintf does. */
int cg_kernel_name(const loop_prog *p, char *buf, size_t len);

/* ---- the printer's machinery (codegen/ only) --------------------------- */

typedef struct cg_printer cg_printer;

/* Precedence levels of C operators, loosest first. */
enum {
	CG_PREC_NONE,
	CG_PREC_COND,      /* ?: */
	CG_PREC_OR,        /* || */
	CG_PREC_AND,       /* && */
	CG_PREC_BITOR,     /* | */
	CG_PREC_BITAND,    /* & */
	CG_PREC_EQ,        /* == != */
	CG_PREC_REL,       /* < <= > >= */
	CG_PREC_ADD,       /* + - */
	CG_PREC_MUL,       /* * / % */
	CG_PREC_UNARY,     /* - ! ~ (type) */
	CG_PREC_POSTFIX    /* calls, subscripts, names, literals */
};

/* What differs between the C dialects.  Everything the shared printer
 * prints goes through this table; what is structural (the kernel's
 * signature and file layout, loops other than serial and unrolled ones,
 * allocations) goes through its hooks. */
typedef struct cg_dialect {
	const char *name;
	/* C type of an element of a buffer in memory, and of a value in
	 * arithmetic, by dtype (f16 and bf16 are stored as bits and computed
	 * in float). */
	const char *storage_type[TESSEL_DTYPE_COUNT];
	const char *value_type[TESSEL_DTYPE_COUNT];
	/* Qualifier of pointers and arrays of each loop_scope, or "". */
	const char *scope_qualifier[3];
	/* Address space of a pointer into a buffer of each loop_scope, in a
	 * cast ("__local" in OpenCL C, "" in CUDA C, where __shared__ is a
	 * storage class); NULL entries for dialects without them. */
	const char *pointer_space[3];
	/* What aligns a shared array to 16 bytes, after its qualifier, so
	 * that the device compiler can prove four consecutive floats of it
	 * one 128-bit load (a register tile fed from shared memory then
	 * takes a quarter of the load instructions); NULL for none. */
	const char *shared_align;
	const char *restrict_kw;
	/* The attribute a kernel whose blocks should fit a multiprocessor
	 * N at a time declares after its qualifier, with its threads per
	 * block and N ("__launch_bounds__", printed as
	 * "__launch_bounds__(256, 2)"); NULL where the dialect has none. */
	const char *launch_bounds;
	/* What comes before a GPU kernel's name ("__kernel void"), NULL for
	 * CPU C. */
	const char *kernel_qualifier;
	/* Storage class of the helper functions ("static inline"). */
	const char *helper_qualifier;
	/* Whether the scalar f16 conversions may use F16C's instructions
	 * where the compiler targets them (C for x86 hosts; not OpenCL C or
	 * CUDA C, whose compilers may define __F16C__ without the header). */
	bool f16c;
	/* The index a loop of each kind is bound to ("blockIdx.x"), NULL for
	 * kinds that are loops in this dialect or cannot run on it. */
	const char *loop_index[LOOP_KIND_COUNT];
	/* The statement a barrier becomes, NULL for a no-op. */
	const char *barrier;
	/* printf format of the line that unrolls the next loop "%d" times,
	 * NULL when the dialect cannot ask. */
	const char *unroll_pragma;
	/* printf format of a vector type from the element's dtype name and
	 * the lane count ("tsl_%sx%d", "%s%d"); NULL when the dialect has
	 * no vectors. */
	const char *vector_type_format;
	/* Math functions by precision (0: float, 1: double) and operator;
	 * NULL where the operator is not a plain call.  fmin and fmax may
	 * name a scalar helper of the shared printer ("tsl_fmax_f32": inline,
	 * where libm's is a call), emitted when used. */
	const char *unary_fn[2][TESSEL_UNARY_COUNT];
	const char *fmin_fn[2], *fmax_fn[2], *pow_fn[2];
	/* The call that prefetches the line of an address for reading (one
	 * argument), or NULL: prefetches are then not printed. */
	const char *prefetch_fn;
	/* Identifiers the printed code may not give to buffers and
	 * variables: keywords, library names; NULL-terminated. */
	const char *const *reserved;
	/* Rewrite "p", the printer's own copy of the program, into the form
	 * the dialect prints best for "t" (the CPU's register tiles); NULL
	 * for none.
	 * Return 0, or -1 with the error in "ctx". */
	int (*prepare)(loop_prog *p, const cg_target *t, tessel_ctx *ctx);
	/* Print the whole file for the program of "pr" into "pr->out". */
	int (*print_file)(cg_printer *pr);
	/* Print the loop "s" of a kind other than serial and unrolled. */
	void (*print_loop)(cg_printer *pr, const loop_stmt *s);
	/* Print the allocation "s" and its body. */
	void (*print_alloc)(cg_printer *pr, const loop_stmt *s);
	/* Where the serial loop "s" annotated dot_pairs or dot_quads has a
	 * form the dialect sums in groups, print "#if TARGET", that code and
	 * "#else", and return true (the caller prints the plain loop and
	 * "#endif"); else print nothing and return false.  NULL: none. */
	bool (*print_dot_group)(cg_printer *pr, const loop_stmt *s);
} cg_dialect;

extern const cg_dialect cg_dialect_cpu_c;
extern const cg_dialect cg_dialect_opencl_c;
extern const cg_dialect cg_dialect_cuda_c;

/* A range of integer values: "known" when every value lies in [lo, hi]. */
typedef struct cg_range {
	bool known;
	int64_t lo, hi;
} cg_range;

/* A buffer of the program and what the printer knows of it. */
typedef struct cg_buffer_info {
	const loop_buffer *buf;
	const char *name;     /* its C identifier */
	bool stored;          /* some store writes it */
} cg_buffer_info;

#define CG_AFFINE_MAX 32

/* A flat offset as sum(coef[i] * term[i]) + constant, where a term is a
 * loop variable ("var" set) or another expression ("rest" set). */
typedef struct cg_affine {
	int n;
	const loop_var *var[CG_AFFINE_MAX];
	const loop_expr *rest[CG_AFFINE_MAX];
	int64_t coef[CG_AFFINE_MAX];
	int64_t constant;
} cg_affine;

/* The function being printed: the kernel or an outlined parallel body. */
typedef struct cg_function {
	bool outlined;
} cg_function;

/* A helper function or type the printed code uses, emitted once. */
typedef struct cg_helper {
	const char *name;
	const char *text;
} cg_helper;

struct cg_printer {
	const loop_prog *p;
	const cg_dialect *d;
	cg_target target;
	tessel_ctx *ctx;
	bool failed;
	te_arena arena;             /* everything below lives here */
	te_strbuf *out;             /* where statements go */
	int depth;                  /* indentation */
	const char *kernel;         /* the kernel's identifier */
	const char **var_name;      /* by loop_var id */
	cg_range *var_range;        /* by loop_var id */
	int nbufs;
	cg_buffer_info *bufs;
	int ntaken;
	const char **taken;         /* identifiers given out */
	int nhelpers;
	cg_helper *helpers;
	te_strbuf functions;        /* outlined functions, in definition order */
	int noutlined;
	cg_function *fn;
	const loop_var *vector_var; /* the var of the loop printed on vectors */
	int lanes;
	bool lanes_aligned;         /* vector_var runs over multiples of lanes */
	int64_t auto_unroll;        /* auto_unroll_max_step of the nearest
	                             * enclosing loop that has one, or 0 */
	int64_t launch[LOOP_KIND_COUNT]; /* GPU dialects: the launch's extent
	                             * along each bound index of the kernel
	                             * being printed */
	cg_gpu_plan *plan;          /* GPU dialects: where the plan goes */
};

/* ---- shared printing (codegen/c_printer.c) ---- */

/* Record the error "fmt" in the context of "pr" (the first one wins). */
void cg_error(cg_printer *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Start a line at the current indentation of "pr" and print "fmt". */
void cg_line(cg_printer *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print "fmt" at the end of the current line of "pr". */
void cg_put(cg_printer *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Copy "s" into the arena of "pr". */
char *cg_strdup(cg_printer *pr, const char *s);
/* Return a new identifier derived from "base", unused so far in "pr". */
const char *cg_fresh_name(cg_printer *pr, const char *base);
const char *cg_var_name(const cg_printer *pr, const loop_var *v);
cg_buffer_info *cg_buffer(const cg_printer *pr, const loop_buffer *b);
/* Emit the helper "name" with the text "text" once, after those emitted
 * before it. */
void cg_need_helper(cg_printer *pr, const char *name, const char *text);
/* Emit the scalar helper "name" (tsl_floordiv, tsl_f32_to_f16, ...) of the
 * shared printer with the helpers it calls. */
void cg_need_scalar_helper(cg_printer *pr, const char *name);
/* Append "tmpl" to "sb" with "$0" to "$9" replaced by the "n" strings
 * "subst". */
void cg_template(te_strbuf *sb, const char *tmpl, int n, const char *const *subst);
/* Write the helpers of "pr" in order into "sb". */
void cg_write_helpers(const cg_printer *pr, te_strbuf *sb);

/* Return the number of elements the storage of "b" spans. */
int64_t cg_buffer_elems(const loop_buffer *b);
/* Return the range of the integer expression "e". */
cg_range cg_range_of(const cg_printer *pr, const loop_expr *e);
/* Set the range of "v" from the loop "s" that binds it. */
void cg_bind_loop_range(cg_printer *pr, const loop_stmt *s);
/* Decompose the flat offset of the element "index" ("n" indices) of "b"
 * into "aff". */
void cg_affine_offset(const loop_buffer *b, int n, loop_expr *const *index,
	cg_affine *aff);
/* Return the coefficient of "v" in "aff", and in "*clean" whether no
 * other term of "aff" mentions "v". */
int64_t cg_affine_coef(const cg_affine *aff, const loop_var *v, bool *clean);
bool cg_affine_equal(const cg_affine *a, const cg_affine *b);
/* Print the affine "aff" as an int64 expression at precedence "prec". */
void cg_print_affine(cg_printer *pr, const cg_affine *aff, int prec);
/* Print the flat offset of the element "index" of "b". */
void cg_print_offset(cg_printer *pr, const loop_buffer *b, int n,
	loop_expr *const *index);
/* Print "a" + "b" (int64 expressions) simplified. */
void cg_print_sum(cg_printer *pr, const loop_expr *a, const loop_expr *b,
	int64_t extra);

/* Print "e" as a value of its own dtype, at precedence "prec". */
void cg_print_expr(cg_printer *pr, const loop_expr *e, int prec);
/* Print "e" converted to "dt" (tessel's implicit conversion: floats to
 * integers truncate and saturate, integers wrap) at precedence "prec". */
void cg_print_as(cg_printer *pr, const loop_expr *e, tessel_dtype dt, int prec);
/* Print the C literal of the float "v" in the value type of "dt". */
void cg_print_float(cg_printer *pr, double v, tessel_dtype dt, int prec);
/* Return the value a store of "value" into a buffer of the half dtype
 * "dt" converts: without a cast of a float to "dt" at its top, which the
 * store's own narrowing makes (rounding twice gives what rounding once
 * does); "value" itself for other dtypes. */
const loop_expr *cg_stored_value(const loop_expr *value, tessel_dtype dt);
/* Print the value "value" of a store, converted for a buffer of "dt". */
void cg_print_stored_value(cg_printer *pr, const loop_expr *value,
	tessel_dtype dt);
/* Print the statement "s" at the current indentation. */
void cg_print_stmt(cg_printer *pr, const loop_stmt *s);
/* Print "s" one level deeper, as the body of a block the caller opened
 * and closes. */
void cg_print_block_body(cg_printer *pr, const loop_stmt *s);
/* Print the header of a loop over "v" from "min" + "lo_add" while below
 * "min" + "extent" + "hi_add" ("extent" may be NULL), by "step", up to
 * its opening brace. */
void cg_print_for(cg_printer *pr, const loop_var *v, const loop_expr *min,
	int64_t lo_add, const loop_expr *extent, int64_t hi_add, int64_t step);
/* Print the serial or unrolled loop "s" (with its unrolling pragma). */
void cg_print_serial_loop(cg_printer *pr, const loop_stmt *s);
/* Print, at the current indentation, the declarations of the shared
 * buffers allocated anywhere in "s" (the kernel's statement), with the
 * dialect's qualifier of LOOP_SHARED, and return their bytes.  GPU
 * dialects declare them once at the kernel's scope, where OpenCL C
 * requires __local variables (OpenCL C 1.2, 6.5.2) and CUDA accepts
 * __shared__ ones; their allocations then print only their bodies, and
 * ir/loop_barriers.c has placed the barriers. */
int64_t cg_print_shared_decls(cg_printer *pr, const loop_stmt *s);

/* ---- the layout of GPU dialects (codegen/gpu_c.c) ---- */

/* Print the loop "s" of a kind other than serial and unrolled: a loop
 * bound to a block or thread index as that index of the dialect (with a
 * guard when the launch is larger), the others as serial loops. */
void cg_gpu_print_loop(cg_printer *pr, const loop_stmt *s);
/* Print the allocation "s" as a private array of each thread, then its
 * body; a shared buffer is declared at the kernel's scope already
 * (cg_print_shared_decls). */
void cg_gpu_print_alloc(cg_printer *pr, const loop_stmt *s);
/* Print the file of "pr" as GPU kernels, one per statement at the top of
 * the program: a comment, "prelude", the helpers, the kernels; fill
 * pr->plan.  "check" (or NULL) runs after the kernels are printed and
 * may refuse what they use with cg_error.  Return 0, or -1 on error. */
int cg_gpu_print_file(cg_printer *pr, const char *prelude,
	void (*check)(cg_printer *pr));

#endif
