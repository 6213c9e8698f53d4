/* The CPU a kernel is generated and tuned for: architecture, ISA features,
 * vector width, cores and caches.  Detected from the host, or written as a
 * target string ("cpu -isa=avx2 -cores=8 -l2=2M") that overrides the host
 * field by field; the canonical string is what tuning records store. */
#ifndef TESSEL_RT_TARGET_H
#define TESSEL_RT_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rt_cpu_feature {
	RT_CPU_SSE2,
	RT_CPU_SSE3,
	RT_CPU_SSSE3,
	RT_CPU_SSE4_1,
	RT_CPU_SSE4_2,
	RT_CPU_POPCNT,
	RT_CPU_AVX,
	RT_CPU_F16C,
	RT_CPU_FMA,
	RT_CPU_BMI1,
	RT_CPU_BMI2,
	RT_CPU_AVX2,
	RT_CPU_AVX_VNNI,
	RT_CPU_AVX512F,
	RT_CPU_AVX512CD,
	RT_CPU_AVX512BW,
	RT_CPU_AVX512DQ,
	RT_CPU_AVX512VL,
	RT_CPU_AVX512_VNNI,
	RT_CPU_AVX512_BF16,
	RT_CPU_AVX512_FP16,
	RT_CPU_AMX_TILE,
	RT_CPU_AMX_INT8,
	RT_CPU_AMX_BF16,
	RT_CPU_NEON,
	RT_CPU_SVE,
	RT_CPU_FEATURE_COUNT
} rt_cpu_feature;

/* Instruction-set levels, each including the ones before it: generic (plain
 * C), sse (SSE2 to SSE4.2, POPCNT: x86-64-v2), avx2 (AVX, AVX2, FMA, F16C,
 * BMI1/2: x86-64-v3), avx512 (AVX-512 F, CD, BW, DQ, VL: x86-64-v4). */
typedef enum rt_cpu_isa {
	RT_ISA_GENERIC,
	RT_ISA_SSE,
	RT_ISA_AVX2,
	RT_ISA_AVX512,
	RT_ISA_COUNT
} rt_cpu_isa;

#define RT_CPU_NAME_LEN 64
/* Enough for any canonical target string. */
#define RT_CPU_TARGET_STR_MAX 1024

typedef struct rt_cpu_target {
	char arch[16];
	char vendor[RT_CPU_NAME_LEN];
	char model[RT_CPU_NAME_LEN];
	uint64_t features;
	int vector_bytes;
	int cores;
	int64_t l1d_bytes;
	int64_t l2_bytes;
	int64_t l3_bytes;
	int line_bytes;
} rt_cpu_target;

/* Return the number of CPUs this process may run on (sched_getaffinity),
 * at least 1. */
int rt_num_cpus(void);

/* Describe the machine this runs on in "t": the features the CPU has and
 * the OS enables (cpuid and xgetbv on x86), cores from the affinity mask,
 * caches from /sys/devices/system/cpu/cpu0/cache (defaults where absent).
 * Return 0. */
int rt_cpu_target_host(rt_cpu_target *t);

/* Parse the target string "s" into "t", starting from the host and
 * overriding the fields it names:
 *   cpu [-arch=A] [-vendor=V] [-model=M] [-isa=avx512|avx2|sse|generic]
 *       [-features=F,F,...|none] [-vector=BYTES] [-cores=N]
 *       [-l1d=SIZE] [-l2=SIZE] [-l3=SIZE] [-line=BYTES]
 * SIZE is bytes with an optional K, M or G suffix; values with spaces are
 * double-quoted.  -isa keeps the host's optional extensions of that level
 * and drops the rest; -features gives the exact set.  The vector width
 * follows the features unless given.  Keys may come in any order, each at
 * most once.  Return 0, or -1 with a message naming the bad key or value
 * in "err" of size "errlen" ("t" is then unspecified). */
int rt_cpu_target_parse(const char *s, rt_cpu_target *t, char *err,
	size_t errlen);

/* Write the canonical string of "t" (every key, fixed order) into "buf" of
 * size "len"; it parses back to "t" on any host.  Return the length of the
 * full string, as snprintf does (>= "len" means it was truncated). */
int rt_cpu_target_print(const rt_cpu_target *t, char *buf, size_t len);

/* The kinds of target: a CPU (the target strings above), an OpenCL
 * device (runtime/opencl.h), whose string is "opencl" alone for now: the
 * device is the one rt_cl_open picks, its limits read at run time; or a
 * CUDA GPU, "cuda" or "cuda:sm_NN" (runtime/gpu_target.h). */
typedef enum rt_target_kind {
	RT_TARGET_CPU,
	RT_TARGET_OPENCL,
	RT_TARGET_CUDA
} rt_target_kind;

/* Set "*kind" from the first word of the target string "s" (NULL: the
 * host CPU).  Return 0, or -1 with a message in "err" of size "errlen"
 * for an unknown kind, an opencl target with options, or a cuda target
 * that rt_cuda_target_parse refuses. */
int rt_target_kind_of(const char *s, rt_target_kind *kind, char *err,
	size_t errlen);

/* Return whether "a" and "b" describe the same target. */
bool rt_cpu_target_equal(const rt_cpu_target *a, const rt_cpu_target *b);

/* Return whether "t" has "f". */
static inline bool rt_cpu_has(const rt_cpu_target *t, rt_cpu_feature f)
{
	return (t->features >> f) & 1;
}

/* Return the highest ISA level whose features "t" has. */
rt_cpu_isa rt_cpu_target_isa(const rt_cpu_target *t);

/* Return the name of "f" ("avx512f", "sse4.2", ...) or of "isa". */
const char *rt_cpu_feature_name(rt_cpu_feature f);
const char *rt_cpu_isa_name(rt_cpu_isa isa);

#endif
