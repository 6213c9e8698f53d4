/* A CUDA GPU as code generation and launches see it: its architecture
 * and limits, read from the device (runtime/cuda.c) or, without one,
 * taken from NVIDIA's table of compute capabilities for an architecture;
 * what a compiled kernel uses (ptxas's report, runtime/nvrtc.c); and
 * whether that kernel can launch on the GPU with a given grid and block.
 *
 * The target string is "cuda" (the device's architecture, or sm_90
 * where there is no device) or "cuda:sm_NN". */
#ifndef TESSEL_RT_GPU_TARGET_H
#define TESSEL_RT_GPU_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The architecture "cuda" means where no device says otherwise: the
 * project's GPUs are H100 and H200. */
#define RT_CUDA_DEFAULT_SM 90

typedef struct rt_gpu_target {
	char name[256];               /* "NVIDIA H200", or "sm_90" */
	int sm;                       /* compute capability: 90 for 9.0 */
	bool from_device;             /* else the table's limits, and 0 for
	                               * what only a device knows */
	int sm_count;
	int warp_size;
	int64_t max_threads_per_block;
	int64_t max_block[3];
	int64_t max_grid[3];
	int max_regs_per_thread;
	int64_t regs_per_block;
	int64_t regs_per_sm;
	int64_t shared_per_block;     /* without opting in: 48 KiB */
	int64_t shared_per_block_optin;
	int64_t shared_per_sm;
	int64_t l2_bytes;
	int64_t clock_khz;
	int64_t memory_bytes;
} rt_gpu_target;

/* What a compiled kernel uses, per thread and per block (ptxas's
 * "Used N registers, M bytes smem" and "stack frame, spill stores, spill
 * loads" lines). */
typedef struct rt_kernel_usage {
	char name[160];
	int registers;
	int barriers;
	int64_t shared_bytes;         /* static __shared__ per block */
	int64_t stack_bytes;          /* local memory per thread */
	int64_t spill_store_bytes;
	int64_t spill_load_bytes;
} rt_kernel_usage;

/* Parse the CUDA target string "s" ("cuda" or "cuda:sm_NN") into "*sm":
 * NN, or 0 for "cuda" alone.  Return 0, or -1 with a message in "err" of
 * size "len" for a string that is not one, or an architecture not in the
 * table (rt_gpu_target_for_sm). */
int rt_cuda_target_parse(const char *s, int *sm, char *err, size_t len);

/* Fill "t" with the limits of the architecture sm_"sm" from NVIDIA's
 * table (CUDA C++ Programming Guide, technical specifications per
 * compute capability; sm_50 to sm_121).  Return 0, or -1 with a message
 * naming the known architectures. */
int rt_gpu_target_for_sm(int sm, rt_gpu_target *t, char *err, size_t len);

/* Return 0 when a kernel that uses "use" can launch on "t" on a grid of
 * "grid" blocks of "block" threads (x, y, z), with the shared memory of
 * a block up to the opt-in limit when "optin" (else the default 48 KiB);
 * else -1 with the first reason in "why" of size "len" ("a block of 2048
 * threads is more than the 1024 of sm_90"). */
int rt_gpu_launch_check(const rt_gpu_target *t, const rt_kernel_usage *use,
	const int64_t grid[3], const int64_t block[3], bool optin, char *why,
	size_t len);

#endif
