/* The OpenCL C dialect: a loop program becomes one __kernel per
 * statement at the top of the program, launched in order, its bound
 * loops get_group_id(d) and get_local_id(d) (the layout GPU dialects
 * share: codegen/gpu_c.c).  clBuildProgram accepts the file as it is
 * (OpenCL C 1.2, with cl_khr_fp64 for double).
 *
 * Buffers: shared buffers are __local arrays declared at the kernel's
 * scope (the shared printer's cg_print_shared_decls), aligned to 16
 * bytes, filled by the
 * threads of the block together, with the barriers of ir/loop_barriers.c
 * (barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)); every other
 * allocation below the root (a stage computed inside a loop) is a private
 * array of the thread that computes it.  f16 and bf16 are refused (the
 * conversions use memcpy, which OpenCL C lacks). */
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
	"#define UINT8_MAX 255\n"
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
	"uint32_t", "uint64_t", "INT8_MIN", "INT8_MAX", "UINT8_MAX", "INT32_MIN",
	"INT32_MAX",
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

const cg_dialect cg_dialect_opencl_c = {
	.name = "OpenCL C",
	.storage_type = { "uint8_t", "int8_t", "int32_t", "int64_t", "uint16_t",
		"uint16_t", "float", "double", "uint8_t" },
	.value_type = { "int", "int8_t", "int32_t", "int64_t", "float", "float",
		"float", "double", "uint8_t" },
	.scope_qualifier = { "__global", "__local", "__private" },
	.pointer_space = { "__global", "__local", "__private" },
	.shared_align = "__attribute__((aligned(16)))",
	.restrict_kw = "restrict",
	.kernel_qualifier = "__kernel void",
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
	.print_loop = cg_gpu_print_loop,
	.print_alloc = cg_gpu_print_alloc,
};

/* ---- statements ------------------------------------------------------------ */

/* ---- the file ----------------------------------------------------------------- */

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

/* Print the file of "pr": the kernels, after the prelude and the
 * helpers they use. */
static int opencl_print_file(cg_printer *pr)
{
	return cg_gpu_print_file(pr, opencl_prelude, check_helpers);
}
