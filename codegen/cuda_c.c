/* The CUDA C dialect: a loop program becomes one extern "C" __global__
 * kernel per statement at the top of the program, launched in order,
 * its bound loops blockIdx and threadIdx (the layout GPU dialects share:
 * codegen/gpu_c.c).  NVRTC compiles the file as it is: it has no
 * standard headers, so the file defines the fixed-width integer types,
 * their limits, NAN and INFINITY itself, and calls only what CUDA
 * provides to device code (expf and its siblings, memcpy).
 *
 * Shared buffers (cache_read into "shared") are __shared__ arrays
 * declared at the kernel's scope, aligned to 16 bytes (so that NVVM
 * loads a register tile's four consecutive floats at once), with __syncthreads() where
 * ir/loop_barriers.c puts barriers; every other allocation below the root
 * (a stage computed inside a loop) is a private array of the thread that
 * computes it, as in OpenCL C.  f16 and bf16 are stored as bits and
 * computed in float with the CPU's conversion helpers (tessel/dtype.h),
 * which compile as device functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

/* The C names the shared printer and its helpers use, for NVRTC. */
static const char cuda_prelude[] =
	"typedef signed char int8_t;\ntypedef unsigned char uint8_t;\n"
	"typedef short int16_t;\ntypedef unsigned short uint16_t;\n"
	"typedef int int32_t;\ntypedef unsigned int uint32_t;\n"
	"typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n"
	"#define INT8_MIN (-128)\n#define INT8_MAX 127\n"
	"#define UINT8_MAX 255\n"
	"#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
	"#define INT64_MIN (-9223372036854775807LL - 1)\n"
	"#define INT64_MAX 9223372036854775807LL\n"
	"#define INFINITY __int_as_float(0x7f800000)\n"
	"#define NAN __int_as_float(0x7fc00000)\n";

/* Keywords of C++ and CUDA, the prelude's names, built-in variables and
 * device functions a buffer or variable could be called. */
static const char *const cuda_reserved[] = {
	"alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
	"bool", "break", "case", "catch", "char", "char16_t", "char32_t", "class",
	"compl", "const", "constexpr", "const_cast", "continue", "decltype",
	"default", "delete", "do", "double", "dynamic_cast", "else", "enum",
	"explicit", "export", "extern", "false", "float", "for", "friend", "goto",
	"if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
	"not", "not_eq", "nullptr", "operator", "or", "or_eq", "private",
	"protected", "public", "register", "reinterpret_cast", "return", "short",
	"signed", "sizeof", "static", "static_assert", "static_cast", "struct",
	"switch", "template", "this", "thread_local", "throw", "true", "try",
	"typedef", "typeid", "typename", "union", "unsigned", "using", "virtual",
	"void", "volatile", "wchar_t", "while", "xor", "xor_eq", "restrict",
	"size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t",
	"uint8_t", "uint16_t", "uint32_t", "uint64_t", "INT8_MIN", "INT8_MAX",
	"UINT8_MAX",
	"INT32_MIN", "INT32_MAX", "INT64_MIN", "INT64_MAX", "NAN", "INFINITY",
	"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
	"uint3", "float2", "float4", "int2", "int4", "half", "std", "cuda",
	"__syncthreads", "atomicAdd", "clock", "assert", "printf", "malloc",
	"free", "memcpy", "memset", "main",
	"exp", "expf", "exp2", "exp2f", "exp10", "exp10f", "expm1", "expm1f",
	"log", "logf", "log2", "log2f", "log10", "log10f", "log1p", "log1pf",
	"sqrt", "sqrtf", "rsqrt", "rsqrtf", "cbrt", "cbrtf", "pow", "powf",
	"tanh", "tanhf", "sinh", "sinhf", "cosh", "coshf", "tan", "tanf", "sin",
	"sinf", "cos", "cosf", "erf", "erff", "erfc", "erfcf", "fabs", "fabsf",
	"floor", "floorf", "ceil", "ceilf", "round", "roundf", "trunc", "truncf",
	"rint", "rintf", "fmin", "fminf", "fmax", "fmaxf", "fmod", "fmodf", "fma",
	"fmaf", "min", "max", "abs", "llabs", "isnan", "isinf", "isfinite",
	"signbit", "copysign", "copysignf", "hypot", "hypotf",
	NULL
};

static int cuda_print_file(cg_printer *pr);

const cg_dialect cg_dialect_cuda_c = {
	.name = "CUDA C",
	.storage_type = { "uint8_t", "int8_t", "int32_t", "int64_t", "uint16_t",
		"uint16_t", "float", "double", "uint8_t" },
	.value_type = { "int", "int8_t", "int32_t", "int64_t", "float", "float",
		"float", "double", "uint8_t" },
	.scope_qualifier = { "", "__shared__", "" },
	.pointer_space = { "", "", "" },
	.shared_align = "__align__(16)",
	.restrict_kw = "__restrict__",
	.kernel_qualifier = "extern \"C\" __global__ void",
	.launch_bounds = "__launch_bounds__",
	.helper_qualifier = "static __device__ inline",
	.loop_index = {
		[LOOP_BLOCK_X] = "blockIdx.x", [LOOP_BLOCK_Y] = "blockIdx.y",
		[LOOP_BLOCK_Z] = "blockIdx.z", [LOOP_THREAD_X] = "threadIdx.x",
		[LOOP_THREAD_Y] = "threadIdx.y", [LOOP_THREAD_Z] = "threadIdx.z",
	},
	.barrier = "__syncthreads();",
	.unroll_pragma = "#pragma unroll %d",
	.vector_type_format = "%s%d",
	.unary_fn = {
		{ [TESSEL_EXP] = "expf", [TESSEL_LOG] = "logf", [TESSEL_SQRT] = "sqrtf",
		  [TESSEL_TANH] = "tanhf", [TESSEL_ERF] = "erff",
		  [TESSEL_ABS] = "fabsf", [TESSEL_FLOOR] = "floorf" },
		{ [TESSEL_EXP] = "exp", [TESSEL_LOG] = "log", [TESSEL_SQRT] = "sqrt",
		  [TESSEL_TANH] = "tanh", [TESSEL_ERF] = "erf",
		  [TESSEL_ABS] = "fabs", [TESSEL_FLOOR] = "floor" },
	},
	.fmin_fn = { "fminf", "fmin" },
	.fmax_fn = { "fmaxf", "fmax" },
	.pow_fn = { "powf", "pow" },
	.reserved = cuda_reserved,
	.print_file = cuda_print_file,
	.print_loop = cg_gpu_print_loop,
	.print_alloc = cg_gpu_print_alloc,
};

/* Print the file of "pr": the kernels, after the prelude and the
 * helpers they use. */
static int cuda_print_file(cg_printer *pr)
{
	return cg_gpu_print_file(pr, cuda_prelude, NULL);
}
