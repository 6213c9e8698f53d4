#include "codegen/cpu_kernel.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "ir/te_impl.h"

void cg_cpu_flags(const rt_cpu_target *cpu, const char **flags)
{
	int n = 0;
	rt_cpu_target host;
	rt_cpu_isa isa = cpu ? rt_cpu_target_isa(cpu) : RT_ISA_GENERIC;
	bool native = rt_cpu_target_host(&host) == 0 && rt_cpu_target_isa(&host) == isa;
	flags[n++] = "-O3";
	if (native && isa != RT_ISA_GENERIC)
		flags[n++] = "-march=native";
	switch (native ? RT_ISA_COUNT : isa) {
	case RT_ISA_AVX512:
		flags[n++] = "-march=skylake-avx512";
		break;
	case RT_ISA_AVX2:
		flags[n++] = "-march=haswell";
		break;
	case RT_ISA_SSE:
		flags[n++] = "-msse4.2";
		break;
	default:
		break;
	}
	if (isa == RT_ISA_AVX512)
		flags[n++] = "-mprefer-vector-width=512";
	flags[n++] = "-fno-math-errno";
	flags[n++] = "-falign-loops=32";
	flags[n++] = "-fPIC";
	flags[n++] = "-shared";
	flags[n++] = "-std=gnu17";
	flags[n] = NULL;
}

static int compile_error(tessel_ctx *ctx, const char *err)
{
	return te_error(ctx, TESSEL_ERR_IO, (tessel_loc){ NULL, 0, 0 }, "%s", err);
}

/* Write into "key" the key of the cached object "so_path": its name
 * without ".so" (compile.h: the cache keeps each object as KEY.so). */
static void key_of_object(const char *so_path, char key[CG_CODE_KEY_LEN])
{
	const char *base = strrchr(so_path, '/');
	base = base ? base + 1 : so_path;
	size_t n = strcspn(base, ".");
	snprintf(key, CG_CODE_KEY_LEN, "%.*s", (int)(n < CG_CODE_KEY_LEN ? n : 0), base);
}

/* Fill "o" with "opts" (NULL: defaults), completed with the flags of
 * "cpu" (into "flags", room for 10) and libm. */
static void cpu_compile_opts(const rt_cpu_target *cpu, const cg_compile_opts *opts,
	const char **flags, cg_compile_opts *o)
{
	static const char *const libm[] = { "-lm", NULL };
	*o = opts ? *opts : (cg_compile_opts){ 0 };
	if (!o->extra_flags)
		o->extra_flags = libm;
	if (!o->flags) {
		cg_cpu_flags(cpu, flags);
		o->flags = flags;
	}
}

/* Print "p" for "cpu" and fill "o" as cpu_compile_opts does; return the
 * source (malloc'ed), or NULL with the error in "ctx". */
static char *print_for(tessel_ctx *ctx, const loop_prog *p, const rt_cpu_target *cpu,
	const cg_compile_opts *opts, const char **flags, cg_compile_opts *o)
{
	cg_target t = cg_target_cpu(cpu);
	char *source = cg_print_c(p, &t, ctx);
	if (source)
		cpu_compile_opts(cpu, opts, flags, o);
	return source;
}

int cg_cpu_kernel_key(tessel_ctx *ctx, const loop_prog *p, const rt_cpu_target *cpu,
	const cg_compile_opts *opts, char key[CG_CODE_KEY_LEN])
{
	const char *flags[10];
	cg_compile_opts o;
	char *source = print_for(ctx, p, cpu, opts, flags, &o);
	if (!source)
		return -1;
	char err[1024];
	int r = cg_compile_key(&o, source, key, err, sizeof(err));
	free(source);
	return r ? compile_error(ctx, err) : 0;
}

int cg_cpu_kernel_compile(tessel_ctx *ctx, const loop_prog *p,
	const rt_cpu_target *cpu, const cg_compile_opts *opts, cg_cpu_kernel *k)
{
	memset(k, 0, sizeof(*k));
	const char *flags[10];
	cg_compile_opts o;
	char *source = print_for(ctx, p, cpu, opts, flags, &o);
	if (!source)
		return -1;
	char err[4096];
	int r = cg_compile_c(&o, source, k->so_path, sizeof(k->so_path), err, sizeof(err));
	free(source);
	if (r)
		return compile_error(ctx, err);
	key_of_object(k->so_path, k->key);
	return 0;
}

int cg_cpu_kernel_load(tessel_ctx *ctx, const loop_prog *p, cg_cpu_kernel *k)
{
	char err[1024], name[512];
	k->module = rt_module_open(k->so_path, err, sizeof(err));
	if (!k->module)
		return compile_error(ctx, err);
	cg_kernel_name(p, name, sizeof(name));
	k->fn = (tessel_kernel_fn)rt_module_symbol(k->module, name, err, sizeof(err));
	if (!k->fn) {
		rt_module_close(k->module);
		k->module = NULL;
		return compile_error(ctx, err);
	}
	return 0;
}

int cg_cpu_kernel_build(tessel_ctx *ctx, const loop_prog *p,
	const rt_cpu_target *cpu, const cg_compile_opts *opts, cg_cpu_kernel *k)
{
	if (cg_cpu_kernel_compile(ctx, p, cpu, opts, k))
		return -1;
	return cg_cpu_kernel_load(ctx, p, k);
}

void cg_cpu_kernel_close(cg_cpu_kernel *k)
{
	if (k->module)
		rt_module_close(k->module);
	k->module = NULL;
	k->fn = NULL;
}
