/* A loop program made into OpenCL kernels on a device: printed as
 * OpenCL C, built with clBuildProgram, its global temporaries allocated,
 * run with the launches of its plan (codegen/opencl_kernel.c). */
#ifndef TESSEL_CG_OPENCL_KERNEL_H
#define TESSEL_CG_OPENCL_KERNEL_H

#include "codegen/c_printer.h"
#include "codegen/compile.h"
#include "ir/loop.h"
#include "runtime/opencl.h"

typedef struct cg_opencl_kernel {
	rt_cl_device *dev;          /* not owned */
	rt_cl_program *program;
	cg_gpu_plan plan;
	int nargs;                  /* the program's arguments */
	int nparams;                /* arguments, then workspaces */
	rt_cl_buffer **params;
	size_t *bytes;              /* of each parameter */
	bool *is_output;            /* of each argument */
} cg_opencl_kernel;

/* Print "p" as OpenCL C, build it for "dev", and allocate its arguments
 * and temporaries on the device into "k".  Return 0, or -1 with the error
 * (the build log included) in "ctx"; "k" is then empty. */
int cg_opencl_kernel_build(tessel_ctx *ctx, const loop_prog *p, rt_cl_device *dev,
	cg_opencl_kernel *k);
/* Write into "key" the code key of "p" built by the OpenCL compiler
 * "compiler" (rt_cl_compiler): the hash of its OpenCL C source and of
 * "compiler" (cg_opencl_source_key), without a device.  Return 0, or -1
 * with the printer's error in "ctx". */
int cg_opencl_code_key(tessel_ctx *ctx, const loop_prog *p, const char *compiler,
	char key[CG_CODE_KEY_LEN]);
/* Write into "key" the code key of the OpenCL C "source" (cg_print_gpu's)
 * built by "compiler". */
void cg_opencl_source_key(const char *source, const char *compiler,
	char key[CG_CODE_KEY_LEN]);
/* Copy the inputs among "args" (one host pointer per argument of the
 * program, inputs then outputs) to the device. */
int cg_opencl_kernel_upload(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args);
/* Launch every kernel in order and wait for the last. */
int cg_opencl_kernel_launch(tessel_ctx *ctx, cg_opencl_kernel *k);
/* Copy the outputs back into their host pointers among "args". */
int cg_opencl_kernel_download(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args);
/* Upload, launch and download. */
int cg_opencl_kernel_run(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args);
void cg_opencl_kernel_free(cg_opencl_kernel *k);

#endif
