/* A loop program made into a callable CPU kernel: printed as C, compiled
 * into the kernel cache, loaded (codegen/cpu_kernel.c). */
#ifndef TESSEL_CG_CPU_KERNEL_H
#define TESSEL_CG_CPU_KERNEL_H

#include "codegen/compile.h"
#include "ir/loop.h"
#include "runtime/module.h"
#include "runtime/target.h"
#include "tessel/kernel.h"

typedef struct cg_cpu_kernel {
	rt_module *module;
	tessel_kernel_fn fn;
	char so_path[4096];
	char key[CG_CODE_KEY_LEN];  /* the code key: the kernel cache's key of
	                             * its object (compile.h) */
} cg_cpu_kernel;

/* Print "p" for the CPU "cpu", compile it with "opts" (NULL: defaults,
 * with -march chosen from "cpu"'s ISA) and load it into "k".  Return 0,
 * or -1 with the error (the compiler's log included) in "ctx". */
int cg_cpu_kernel_build(tessel_ctx *ctx, const loop_prog *p,
	const rt_cpu_target *cpu, const cg_compile_opts *opts, cg_cpu_kernel *k);
/* Compile "p" only, writing the shared object's path and its code key
 * into "k". */
int cg_cpu_kernel_compile(tessel_ctx *ctx, const loop_prog *p,
	const rt_cpu_target *cpu, const cg_compile_opts *opts, cg_cpu_kernel *k);
/* Write into "key" the code key cg_cpu_kernel_compile would give "p"
 * with the same arguments, compiling nothing.  Return 0, or -1 with the
 * error in "ctx". */
int cg_cpu_kernel_key(tessel_ctx *ctx, const loop_prog *p, const rt_cpu_target *cpu,
	const cg_compile_opts *opts, char key[CG_CODE_KEY_LEN]);
/* Load the compiled "k" (in the process that will call it). */
int cg_cpu_kernel_load(tessel_ctx *ctx, const loop_prog *p, cg_cpu_kernel *k);
void cg_cpu_kernel_close(cg_cpu_kernel *k);

/* Fill "flags" (NULL-terminated, at most 9 entries) with the compiler
 * flags for the CPU "cpu": -O3, -march for its ISA level, no errno from
 * math functions (kernels never read it; sqrt becomes an instruction),
 * loops aligned to 32 bytes (a register tile's loop that straddles a
 * fetch window ran a fifth slower on Zen 3), PIC, shared. */
void cg_cpu_flags(const rt_cpu_target *cpu, const char **flags);

#endif
