/* CUDA architectures, their limits, and launch checks (runtime/gpu_target.h). */
#include "runtime/gpu_target.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write the printf-formatted "fmt" into "err" of size "len"; return -1. */
static int __attribute__((format(printf, 3, 4)))
report(char *err, size_t len, const char *fmt, ...)
{
	if (!err || len == 0)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* The limits that differ between compute capabilities (CUDA C++
 * Programming Guide, "Technical Specifications per Compute Capability"):
 * registers per block and per SM, shared memory per block with opt-in
 * and per SM, in KiB. */
typedef struct sm_limits {
	int sm;
	int regs_per_block_k, regs_per_sm_k;
	int shared_optin_kib, shared_per_sm_kib;
} sm_limits;

static const sm_limits sm_table[] = {
	{ 50, 64, 64, 48, 64 }, { 52, 64, 64, 48, 96 }, { 53, 32, 64, 48, 64 },
	{ 60, 64, 64, 48, 64 }, { 61, 64, 64, 48, 96 }, { 62, 32, 64, 48, 64 },
	{ 70, 64, 64, 96, 96 }, { 72, 64, 64, 96, 96 }, { 75, 64, 64, 64, 64 },
	{ 80, 64, 64, 163, 164 }, { 86, 64, 64, 99, 100 }, { 87, 64, 64, 163, 164 },
	{ 89, 64, 64, 99, 100 }, { 90, 64, 64, 227, 228 }, { 100, 64, 64, 227, 228 },
	{ 103, 64, 64, 227, 228 }, { 110, 64, 64, 227, 228 },
	{ 120, 64, 64, 99, 100 }, { 121, 64, 64, 99, 100 },
};

#define NSM ((int)(sizeof(sm_table) / sizeof(*sm_table)))

int rt_gpu_target_for_sm(int sm, rt_gpu_target *t, char *err, size_t len)
{
	const sm_limits *row = NULL;
	for (int i = 0; i < NSM; i++)
		if (sm_table[i].sm == sm)
			row = &sm_table[i];
	if (!row) {
		char known[256] = "";
		size_t n = 0;
		for (int i = 0; i < NSM && n < sizeof(known); i++)
			n += (size_t)snprintf(known + n, sizeof(known) - n, "%ssm_%d",
				i ? " " : "", sm_table[i].sm);
		return report(err, len, "unknown CUDA architecture sm_%d (known: %s)", sm,
			known);
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "sm_%d", sm);
	t->sm = sm;
	t->warp_size = 32;
	t->max_threads_per_block = 1024;
	t->max_block[0] = 1024;
	t->max_block[1] = 1024;
	t->max_block[2] = 64;
	t->max_grid[0] = 2147483647;
	t->max_grid[1] = 65535;
	t->max_grid[2] = 65535;
	t->max_regs_per_thread = 255;
	t->regs_per_block = (int64_t)row->regs_per_block_k * 1024;
	t->regs_per_sm = (int64_t)row->regs_per_sm_k * 1024;
	t->shared_per_block = 48 * 1024;
	t->shared_per_block_optin = (int64_t)row->shared_optin_kib * 1024;
	t->shared_per_sm = (int64_t)row->shared_per_sm_kib * 1024;
	return 0;
}

int rt_cuda_target_parse(const char *s, int *sm, char *err, size_t len)
{
	*sm = 0;
	s += strspn(s, " \t\n\r\f\v");
	size_t n = strcspn(s, " \t\n\r\f\v");
	if (s[n + strspn(s + n, " \t\n\r\f\v")])
		return report(err, len, "target: cuda takes no options; the architecture "
			"is written cuda:sm_NN (cuda:sm_90): '%s'", s);
	if (n < 4 || strncmp(s, "cuda", 4) != 0 || (n > 4 && s[4] != ':'))
		return report(err, len, "target: '%.*s' is not cuda or cuda:sm_NN", (int)n, s);
	if (n == 4)
		return 0;
	const char *arch = s + 5;
	size_t alen = n - 5;
	size_t digits = alen > 3 ? strspn(arch + 3, "0123456789") : 0;
	if (alen < 5 || alen > 8 || strncmp(arch, "sm_", 3) != 0 || digits != alen - 3)
		return report(err, len, "target: '%.*s' is not an architecture sm_NN "
			"(cuda:sm_90, cuda:sm_80)", (int)alen, arch);
	rt_gpu_target t;
	int v = atoi(arch + 3);
	if (rt_gpu_target_for_sm(v, &t, err, len))
		return -1;
	*sm = v;
	return 0;
}

/* Return "n" rounded up to a multiple of "unit". */
static int64_t round_up(int64_t n, int64_t unit)
{
	return (n + unit - 1) / unit * unit;
}

/* Check the grid and block shape of a launch on "t". */
static int check_shape(const rt_gpu_target *t, const int64_t grid[3],
	const int64_t block[3], char *why, size_t len)
{
	static const char axis[] = "xyz";
	for (int d = 0; d < 3; d++) {
		if (grid[d] < 1 || block[d] < 1)
			return report(why, len, "an empty grid or block along %c", axis[d]);
		if (block[d] > t->max_block[d])
			return report(why, len, "a block of %lld threads along %c is more "
				"than the %lld of %s", (long long)block[d], axis[d],
				(long long)t->max_block[d], t->name);
		if (grid[d] > t->max_grid[d])
			return report(why, len, "a grid of %lld blocks along %c is more "
				"than the %lld of %s", (long long)grid[d], axis[d],
				(long long)t->max_grid[d], t->name);
	}
	int64_t threads = block[0] * block[1] * block[2];
	if (threads > t->max_threads_per_block)
		return report(why, len, "a block of %lld threads is more than the %lld "
			"of %s", (long long)threads, (long long)t->max_threads_per_block,
			t->name);
	return 0;
}

/* Check the registers of "use" for blocks of "threads" threads on "t":
 * registers are allocated per warp, 8 per thread at a time. */
static int check_registers(const rt_gpu_target *t, const rt_kernel_usage *use,
	int64_t threads, char *why, size_t len)
{
	if (use->registers > t->max_regs_per_thread)
		return report(why, len, "%s uses %d registers per thread, more than the "
			"%d of %s", use->name, use->registers, t->max_regs_per_thread, t->name);
	int64_t warp = t->warp_size > 0 ? t->warp_size : 32;
	int64_t need = round_up(use->registers, 8) * round_up(threads, warp);
	if (need > t->regs_per_block)
		return report(why, len, "%s needs %lld registers for a block of %lld "
			"threads (%d per thread), more than the %lld of %s", use->name,
			(long long)need, (long long)threads, use->registers,
			(long long)t->regs_per_block, t->name);
	return 0;
}

int rt_gpu_launch_check(const rt_gpu_target *t, const rt_kernel_usage *use,
	const int64_t grid[3], const int64_t block[3], bool optin, char *why,
	size_t len)
{
	if (check_shape(t, grid, block, why, len) ||
	    check_registers(t, use, block[0] * block[1] * block[2], why, len))
		return -1;
	int64_t shared = optin ? t->shared_per_block_optin : t->shared_per_block;
	if (use->shared_bytes > shared)
		return report(why, len, "%s uses %lld bytes of shared memory per block, "
			"more than the %lld of %s%s", use->name, (long long)use->shared_bytes,
			(long long)shared, t->name, optin ? " (opted in)" : " without opting in");
	if (use->stack_bytes > 512 * 1024)
		return report(why, len, "%s uses %lld bytes of local memory per thread, "
			"more than 512 KiB", use->name, (long long)use->stack_bytes);
	return 0;
}
