/* CPU targets: host detection (cpuid, xgetbv, sched_getaffinity, sysfs
 * caches) and the target string, parsed and printed canonically. */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define RT_TARGET_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "runtime/gpu_target.h"
#include "runtime/target.h"

#define BIT(f) (UINT64_C(1) << (f))
#define KIB INT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

#define DEFAULT_L1D (32 * KIB)
#define DEFAULT_L2 (1 * MIB)
#define DEFAULT_L3 (8 * MIB)
#define DEFAULT_LINE 64
#define MAX_CACHE_INDEX 16
#define MAX_CORES 65536
#define SYSFS_CACHE "/sys/devices/system/cpu/cpu0/cache"

#define SSE_LEVEL                                                        \
	(BIT(RT_CPU_SSE2) | BIT(RT_CPU_SSE3) | BIT(RT_CPU_SSSE3) |        \
	 BIT(RT_CPU_SSE4_1) | BIT(RT_CPU_SSE4_2) | BIT(RT_CPU_POPCNT))
#define AVX2_LEVEL                                                       \
	(SSE_LEVEL | BIT(RT_CPU_AVX) | BIT(RT_CPU_F16C) | BIT(RT_CPU_FMA) | \
	 BIT(RT_CPU_BMI1) | BIT(RT_CPU_BMI2) | BIT(RT_CPU_AVX2))
#define AVX512_LEVEL                                                     \
	(AVX2_LEVEL | BIT(RT_CPU_AVX512F) | BIT(RT_CPU_AVX512CD) |        \
	 BIT(RT_CPU_AVX512BW) | BIT(RT_CPU_AVX512DQ) | BIT(RT_CPU_AVX512VL))
#define AVX512_EXTRAS                                                    \
	(BIT(RT_CPU_AVX_VNNI) | BIT(RT_CPU_AVX512_VNNI) |                  \
	 BIT(RT_CPU_AVX512_BF16) | BIT(RT_CPU_AVX512_FP16) |               \
	 BIT(RT_CPU_AMX_TILE) | BIT(RT_CPU_AMX_INT8) | BIT(RT_CPU_AMX_BF16))

static const char *const isa_names[RT_ISA_COUNT] = {
	"generic", "sse", "avx2", "avx512"
};

/* The features each ISA level requires, and the optional extensions of
 * that level a target keeps when it is restricted to it. */
static const uint64_t isa_baseline[RT_ISA_COUNT] = {
	0, SSE_LEVEL, AVX2_LEVEL, AVX512_LEVEL
};
static const uint64_t isa_extras[RT_ISA_COUNT] = {
	0, 0, BIT(RT_CPU_AVX_VNNI), AVX512_EXTRAS
};

static const char *const known_arches[] = {
	"x86_64", "aarch64", "riscv64", "ppc64le", "ppc64", "unknown"
};

static const struct {
	const char *name;
	const char *arch;
} feature_info[RT_CPU_FEATURE_COUNT] = {
	[RT_CPU_SSE2] = { "sse2", "x86_64" },
	[RT_CPU_SSE3] = { "sse3", "x86_64" },
	[RT_CPU_SSSE3] = { "ssse3", "x86_64" },
	[RT_CPU_SSE4_1] = { "sse4.1", "x86_64" },
	[RT_CPU_SSE4_2] = { "sse4.2", "x86_64" },
	[RT_CPU_POPCNT] = { "popcnt", "x86_64" },
	[RT_CPU_AVX] = { "avx", "x86_64" },
	[RT_CPU_F16C] = { "f16c", "x86_64" },
	[RT_CPU_FMA] = { "fma", "x86_64" },
	[RT_CPU_BMI1] = { "bmi1", "x86_64" },
	[RT_CPU_BMI2] = { "bmi2", "x86_64" },
	[RT_CPU_AVX2] = { "avx2", "x86_64" },
	[RT_CPU_AVX_VNNI] = { "avx_vnni", "x86_64" },
	[RT_CPU_AVX512F] = { "avx512f", "x86_64" },
	[RT_CPU_AVX512CD] = { "avx512cd", "x86_64" },
	[RT_CPU_AVX512BW] = { "avx512bw", "x86_64" },
	[RT_CPU_AVX512DQ] = { "avx512dq", "x86_64" },
	[RT_CPU_AVX512VL] = { "avx512vl", "x86_64" },
	[RT_CPU_AVX512_VNNI] = { "avx512_vnni", "x86_64" },
	[RT_CPU_AVX512_BF16] = { "avx512_bf16", "x86_64" },
	[RT_CPU_AVX512_FP16] = { "avx512_fp16", "x86_64" },
	[RT_CPU_AMX_TILE] = { "amx_tile", "x86_64" },
	[RT_CPU_AMX_INT8] = { "amx_int8", "x86_64" },
	[RT_CPU_AMX_BF16] = { "amx_bf16", "x86_64" },
	[RT_CPU_NEON] = { "neon", "aarch64" },
	[RT_CPU_SVE] = { "sve", "aarch64" },
};

/* Write the message "fmt" into "err" of size "errlen" when "err" is not
 * NULL, always NUL-terminated; return -1. */
static int __attribute__((format(printf, 3, 4)))
report(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Copy "src" into "dst" of size "len", truncating, NUL-terminated. */
static void copy_name(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

const char *rt_cpu_feature_name(rt_cpu_feature f)
{
	return (unsigned)f < RT_CPU_FEATURE_COUNT ? feature_info[f].name : "?";
}

const char *rt_cpu_isa_name(rt_cpu_isa isa)
{
	return (unsigned)isa < RT_ISA_COUNT ? isa_names[isa] : "?";
}

/* Return the ISA level of the feature set "features". */
static rt_cpu_isa isa_of_features(uint64_t features)
{
	rt_cpu_isa isa = RT_ISA_GENERIC;
	for (int level = 1; level < RT_ISA_COUNT; level++)
		if ((features & isa_baseline[level]) == isa_baseline[level])
			isa = (rt_cpu_isa)level;
	return isa;
}

rt_cpu_isa rt_cpu_target_isa(const rt_cpu_target *t)
{
	return isa_of_features(t->features);
}

/* Return the vector width in bytes that "features" suggest by default. */
static int default_vector_bytes(uint64_t features)
{
	if (features & BIT(RT_CPU_AVX512F))
		return 64;
	if (features & BIT(RT_CPU_AVX2))
		return 32;
	return 16;
}

/* Return the widest vector in bytes that "features" can operate on. */
static int max_vector_bytes(uint64_t features)
{
	if (features & BIT(RT_CPU_SVE))
		return 256;
	if (features & BIT(RT_CPU_AVX512F))
		return 64;
	if (features & BIT(RT_CPU_AVX))
		return 32;
	return 16;
}

/* Return the number of CPUs in the affinity mask of this process, trying
 * larger masks for machines with more than CPU_SETSIZE CPUs. */
int rt_num_cpus(void)
{
	for (int ncpu = CPU_SETSIZE; ncpu <= (1 << 20); ncpu *= 2) {
		cpu_set_t *set = CPU_ALLOC(ncpu);
		if (!set)
			return 1;
		size_t size = CPU_ALLOC_SIZE(ncpu);
		CPU_ZERO_S(size, set);
		int rc = sched_getaffinity(0, size, set);
		int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
		CPU_FREE(set);
		if (rc == 0)
			return count > 0 ? count : 1;
		if (errno != EINVAL)
			return 1;
	}
	return 1;
}

static const char *host_arch(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
	return "ppc64le";
#elif defined(__powerpc64__)
	return "ppc64";
#else
	return "unknown";
#endif
}

#ifdef RT_TARGET_X86
enum cpuid_reg { EAX, EBX, ECX, EDX };

/* Register state the OS must save for a feature to be usable (XCR0). */
enum os_state {
	STATE_NONE = 0,
	STATE_YMM = 0x6,
	STATE_ZMM = 0xe6,
	STATE_TILE = 0x60000
};

static const struct {
	rt_cpu_feature feature;
	unsigned leaf, subleaf;
	enum cpuid_reg reg;
	unsigned bit;
	enum os_state state;
} x86_feature_bits[] = {
	{ RT_CPU_SSE2, 1, 0, EDX, 26, STATE_NONE },
	{ RT_CPU_SSE3, 1, 0, ECX, 0, STATE_NONE },
	{ RT_CPU_SSSE3, 1, 0, ECX, 9, STATE_NONE },
	{ RT_CPU_SSE4_1, 1, 0, ECX, 19, STATE_NONE },
	{ RT_CPU_SSE4_2, 1, 0, ECX, 20, STATE_NONE },
	{ RT_CPU_POPCNT, 1, 0, ECX, 23, STATE_NONE },
	{ RT_CPU_AVX, 1, 0, ECX, 28, STATE_YMM },
	{ RT_CPU_F16C, 1, 0, ECX, 29, STATE_YMM },
	{ RT_CPU_FMA, 1, 0, ECX, 12, STATE_YMM },
	{ RT_CPU_BMI1, 7, 0, EBX, 3, STATE_NONE },
	{ RT_CPU_BMI2, 7, 0, EBX, 8, STATE_NONE },
	{ RT_CPU_AVX2, 7, 0, EBX, 5, STATE_YMM },
	{ RT_CPU_AVX_VNNI, 7, 1, EAX, 4, STATE_YMM },
	{ RT_CPU_AVX512F, 7, 0, EBX, 16, STATE_ZMM },
	{ RT_CPU_AVX512CD, 7, 0, EBX, 28, STATE_ZMM },
	{ RT_CPU_AVX512BW, 7, 0, EBX, 30, STATE_ZMM },
	{ RT_CPU_AVX512DQ, 7, 0, EBX, 17, STATE_ZMM },
	{ RT_CPU_AVX512VL, 7, 0, EBX, 31, STATE_ZMM },
	{ RT_CPU_AVX512_VNNI, 7, 0, ECX, 11, STATE_ZMM },
	{ RT_CPU_AVX512_BF16, 7, 1, EAX, 5, STATE_ZMM },
	{ RT_CPU_AVX512_FP16, 7, 0, EDX, 23, STATE_ZMM },
	{ RT_CPU_AMX_TILE, 7, 0, EDX, 24, STATE_TILE },
	{ RT_CPU_AMX_INT8, 7, 0, EDX, 25, STATE_TILE },
	{ RT_CPU_AMX_BF16, 7, 0, EDX, 22, STATE_TILE },
};

/* Store in "r" the registers of cpuid leaf "leaf", subleaf "subleaf", all
 * zero when the CPU does not have that leaf. */
static void cpuid(unsigned leaf, unsigned subleaf, unsigned r[4])
{
	if (!__get_cpuid_count(leaf, subleaf, &r[EAX], &r[EBX], &r[ECX],
			       &r[EDX]))
		r[EAX] = r[EBX] = r[ECX] = r[EDX] = 0;
}

/* Return the register state the OS saves (XCR0), or 0 without OSXSAVE. */
static uint64_t os_saved_state(void)
{
	unsigned r[4];
	cpuid(1, 0, r);
	if (!(r[ECX] & (1u << 27)))
		return 0;
	unsigned lo, hi;
	__asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* Return the features the CPU reports and the OS enables. */
static uint64_t x86_features(void)
{
	uint64_t saved = os_saved_state();
	uint64_t features = 0;
	size_t n = sizeof x86_feature_bits / sizeof x86_feature_bits[0];
	for (size_t i = 0; i < n; i++) {
		unsigned r[4];
		cpuid(x86_feature_bits[i].leaf, x86_feature_bits[i].subleaf, r);
		uint64_t state = x86_feature_bits[i].state;
		if (((r[x86_feature_bits[i].reg] >> x86_feature_bits[i].bit) & 1) &&
		    (saved & state) == state)
			features |= BIT(x86_feature_bits[i].feature);
	}
	return features;
}

/* Store the vendor string of cpuid leaf 0 in "vendor" of size "len". */
static void x86_vendor(char *vendor, size_t len)
{
	unsigned r[4];
	cpuid(0, 0, r);
	char name[13];
	memcpy(name, &r[EBX], 4);
	memcpy(name + 4, &r[EDX], 4);
	memcpy(name + 8, &r[ECX], 4);
	name[12] = 0;
	copy_name(vendor, len, name);
}

/* Store the brand string (cpuid 0x80000002-4), without surrounding
 * spaces, in "model" of size "len". */
static void x86_model(char *model, size_t len)
{
	char brand[49] = { 0 };
	if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u)
		for (unsigned i = 0; i < 3; i++) {
			unsigned r[4];
			cpuid(0x80000002u + i, 0, r);
			memcpy(brand + 16 * i, r, sizeof r);
		}
	char *start = brand;
	while (*start == ' ')
		start++;
	size_t n = strlen(start);
	while (n > 0 && start[n - 1] == ' ')
		start[--n] = 0;
	copy_name(model, len, start);
}
#endif

/* Fill the ISA fields of "t" (features, vendor, model) for the host. */
static void detect_isa(rt_cpu_target *t)
{
#ifdef RT_TARGET_X86
	t->features = x86_features();
	x86_vendor(t->vendor, sizeof t->vendor);
	x86_model(t->model, sizeof t->model);
#elif defined(__aarch64__) && defined(__linux__)
	unsigned long hwcap = getauxval(AT_HWCAP);
	t->features = (hwcap & HWCAP_ASIMD) ? BIT(RT_CPU_NEON) : 0;
#ifdef HWCAP_SVE
	t->features |= (hwcap & HWCAP_SVE) ? BIT(RT_CPU_SVE) : 0;
#endif
#else
	t->features = 0;
#endif
}

/* Parse the size "s" (decimal bytes with an optional K, M or G suffix,
 * either case) into "bytes"; return 0, or -1 when it is not one. */
static int parse_size(const char *s, int64_t *bytes)
{
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	long long value = strtoll(s, &end, 10);
	int64_t unit = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': unit = KIB; end++; break;
	case 'M': unit = MIB; end++; break;
	case 'G': unit = GIB; end++; break;
	default: break;
	}
	if (errno || *end || __builtin_mul_overflow((int64_t)value, unit, bytes))
		return -1;
	return 0;
}

/* Read the first line of the file "dir"/"name" into "buf" of size "len",
 * without its newline; return 0, or -1 when it cannot be read. */
static int read_sysfs(const char *dir, const char *name, char *buf, size_t len)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *line = fgets(buf, (int)len, f);
	fclose(f);
	if (!line)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Record in "t" the cache described by the sysfs directory "dir", if it
 * is a data or unified cache of level 1 to 3; return -1 when "dir" does
 * not describe a cache. */
static int read_cache_index(const char *dir, rt_cpu_target *t)
{
	char level[16], type[32], size[32], line[16];
	int64_t bytes;
	if (read_sysfs(dir, "level", level, sizeof level) < 0 ||
	    read_sysfs(dir, "type", type, sizeof type) < 0)
		return -1;
	if (strcmp(type, "Instruction") == 0)
		return 0;
	if (read_sysfs(dir, "size", size, sizeof size) < 0 ||
	    parse_size(size, &bytes) < 0 || bytes <= 0)
		return 0;
	int64_t *field = strcmp(level, "1") == 0 ? &t->l1d_bytes :
			 strcmp(level, "2") == 0 ? &t->l2_bytes :
			 strcmp(level, "3") == 0 ? &t->l3_bytes : NULL;
	if (field)
		*field = bytes;
	int64_t line_bytes;
	if (read_sysfs(dir, "coherency_line_size", line, sizeof line) == 0 &&
	    parse_size(line, &line_bytes) == 0 && line_bytes > 0 &&
	    line_bytes <= 4096)
		t->line_bytes = (int)line_bytes;
	return 0;
}

/* Fill the cache fields of "t" from sysfs, with defaults for what it does
 * not say. */
static void detect_caches(rt_cpu_target *t)
{
	t->l1d_bytes = t->l2_bytes = t->l3_bytes = 0;
	t->line_bytes = 0;
	for (int i = 0; i < MAX_CACHE_INDEX; i++) {
		char dir[128];
		snprintf(dir, sizeof dir, SYSFS_CACHE "/index%d", i);
		read_cache_index(dir, t);
	}
	t->l1d_bytes = t->l1d_bytes ? t->l1d_bytes : DEFAULT_L1D;
	t->l2_bytes = t->l2_bytes ? t->l2_bytes : DEFAULT_L2;
	t->l3_bytes = t->l3_bytes ? t->l3_bytes : DEFAULT_L3;
	t->line_bytes = t->line_bytes ? t->line_bytes : DEFAULT_LINE;
}

/* Describe the host in "t"; see target.h. */
int rt_cpu_target_host(rt_cpu_target *t)
{
	memset(t, 0, sizeof *t);
	copy_name(t->arch, sizeof t->arch, host_arch());
	detect_isa(t);
	t->vector_bytes = default_vector_bytes(t->features);
	t->cores = rt_num_cpus();
	detect_caches(t);
	return 0;
}

bool rt_cpu_target_equal(const rt_cpu_target *a, const rt_cpu_target *b)
{
	return strcmp(a->arch, b->arch) == 0 &&
	       strcmp(a->vendor, b->vendor) == 0 &&
	       strcmp(a->model, b->model) == 0 && a->features == b->features &&
	       a->vector_bytes == b->vector_bytes && a->cores == b->cores &&
	       a->l1d_bytes == b->l1d_bytes && a->l2_bytes == b->l2_bytes &&
	       a->l3_bytes == b->l3_bytes && a->line_bytes == b->line_bytes;
}

/* The keys of a target string, in the order they are applied and
 * printed. */
enum target_key {
	KEY_ARCH,
	KEY_VENDOR,
	KEY_MODEL,
	KEY_ISA,
	KEY_FEATURES,
	KEY_VECTOR,
	KEY_CORES,
	KEY_L1D,
	KEY_L2,
	KEY_L3,
	KEY_LINE,
	KEY_COUNT
};

static const char *const key_names[KEY_COUNT] = {
	"arch", "vendor", "model", "isa", "features", "vector", "cores",
	"l1d", "l2", "l3", "line"
};

/* The value of each key a target string gives, NULL for the others. */
typedef struct target_settings {
	const char *value[KEY_COUNT];
} target_settings;

static char *skip_spaces(char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* Return the key named by the "len" bytes at "name", or KEY_COUNT. */
static enum target_key find_key(const char *name, size_t len)
{
	for (int k = 0; k < KEY_COUNT; k++)
		if (strlen(key_names[k]) == len && memcmp(key_names[k], name, len) == 0)
			return (enum target_key)k;
	return KEY_COUNT;
}

/* Unescape in place the double-quoted value that starts at "*p" (on its
 * opening quote) of key "key"; leave "*p" after the closing quote and
 * return the value, or NULL with a message in "err". */
static char *read_quoted(char **p, const char *key, char *err, size_t errlen)
{
	char *value = *p;
	char *out = value;
	char *in = value + 1;
	for (; *in && *in != '"'; in++) {
		if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
			in++;
		*out++ = *in;
	}
	if (*in != '"') {
		report(err, errlen, "target: unterminated quote in the value of -%s", key);
		return NULL;
	}
	*out = 0;
	*p = in + 1;
	if (**p && !isspace((unsigned char)**p)) {
		report(err, errlen,
		       "target: expected a space after the quoted value of -%s", key);
		return NULL;
	}
	return value;
}

/* Read the value of key "key" at "*p", NUL-terminated in place, and leave
 * "*p" after it; return the value, or NULL with a message in "err". */
static char *read_value(char **p, const char *key, char *err, size_t errlen)
{
	if (**p == '"')
		return read_quoted(p, key, err, errlen);
	char *value = *p;
	*p += strcspn(*p, " \t\n\r\f\v");
	if (**p)
		*(*p)++ = 0;
	return value;
}

/* Read the option "-key=value" at "*p" of the writable string into "set"
 * and leave "*p" after it; return 0, or -1 with a message in "err". */
static int read_option(char **p, target_settings *set, char *err,
	size_t errlen)
{
	char *option = *p;
	if (*option != '-')
		return report(err, errlen, "target: expected -key=value, got '%.*s'",
			      (int)strcspn(option, " \t\n"), option);
	char *name = option + 1;
	size_t name_len = strcspn(name, "= \t\n\r\f\v");
	enum target_key key = find_key(name, name_len);
	if (key == KEY_COUNT)
		return report(err, errlen, "target: unknown key '-%.*s'",
			      (int)name_len, name);
	if (name[name_len] != '=')
		return report(err, errlen, "target: key '-%s' needs a value (-%s=...)",
			      key_names[key], key_names[key]);
	if (set->value[key])
		return report(err, errlen, "target: key '-%s' given twice",
			      key_names[key]);
	*p = name + name_len + 1;
	set->value[key] = read_value(p, key_names[key], err, errlen);
	return set->value[key] ? 0 : -1;
}

/* Split the writable target string "text" into "set"; return 0, or -1
 * with a message in "err". */
static int read_settings(char *text, target_settings *set, char *err,
	size_t errlen)
{
	char *p = skip_spaces(text);
	size_t kind_len = strcspn(p, " \t\n\r\f\v");
	if (kind_len == 0)
		return report(err, errlen, "target: empty target string");
	bool gpu = (kind_len == 6 && memcmp(p, "opencl", 6) == 0) ||
		(kind_len >= 4 && memcmp(p, "cuda", 4) == 0 &&
		 (kind_len == 4 || p[4] == ':'));
	if (gpu)
		return report(err, errlen, "target: '%.*s' is a GPU target; this needs "
			"a CPU target (cpu ...)", (int)kind_len, p);
	if (kind_len != 3 || memcmp(p, "cpu", 3) != 0)
		return report(err, errlen,
			      "target: unknown target kind '%.*s' (expected cpu, opencl or cuda)",
			      (int)kind_len, p);
	p += kind_len;
	while (*(p = skip_spaces(p)))
		if (read_option(&p, set, err, errlen) < 0)
			return -1;
	return 0;
}

/* Parse the decimal integer "s" of key "key" into "out", which must lie in
 * ["min", "max"]; return 0, or -1 with a message in "err". */
static int parse_int_in(const char *s, const char *key, long min, long max,
	int *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long value = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || value < min ||
	    value > max)
		return report(err, errlen,
			      "target: -%s=%s: expected an integer from %ld to %ld",
			      key, s, min, max);
	*out = (int)value;
	return 0;
}

static bool is_power_of_two(long v)
{
	return v > 0 && (v & (v - 1)) == 0;
}

static int apply_arch(const char *value, rt_cpu_target *t, char *err,
	size_t errlen)
{
	size_t n = sizeof known_arches / sizeof known_arches[0];
	size_t i = 0;
	while (i < n && strcmp(known_arches[i], value) != 0)
		i++;
	if (i == n)
		return report(err, errlen,
			      "target: unknown arch '%s' (expected x86_64, aarch64, "
			      "riscv64, ppc64le, ppc64 or unknown)", value);
	if (strcmp(t->arch, value) != 0) {
		copy_name(t->arch, sizeof t->arch, value);
		t->features = 0;
		t->vendor[0] = t->model[0] = 0;
	}
	return 0;
}

/* Set the name field "field" of size "len" of key "key" to "value". */
static int apply_name(const char *value, const char *key, char *field,
	size_t len, char *err, size_t errlen)
{
	if (strlen(value) >= len)
		return report(err, errlen,
			      "target: the value of -%s is longer than %zu characters",
			      key, len - 1);
	copy_name(field, len, value);
	return 0;
}

/* Restrict "t" to the ISA level named "value": its baseline features plus
 * the extensions of that level "t" already has. */
static int apply_isa(const char *value, rt_cpu_target *t, char *err,
	size_t errlen)
{
	int isa = 0;
	while (isa < RT_ISA_COUNT && strcmp(isa_names[isa], value) != 0)
		isa++;
	if (isa == RT_ISA_COUNT)
		return report(err, errlen,
			      "target: unknown isa '%s' (expected avx512, avx2, sse "
			      "or generic)", value);
	if (isa != RT_ISA_GENERIC && strcmp(t->arch, "x86_64") != 0)
		return report(err, errlen, "target: isa '%s' needs arch x86_64, not %s",
			      value, t->arch);
	t->features = isa_baseline[isa] | (t->features & isa_extras[isa]);
	return 0;
}

/* Return the feature named by the "len" bytes at "name", or
 * RT_CPU_FEATURE_COUNT. */
static rt_cpu_feature find_feature(const char *name, size_t len)
{
	for (int f = 0; f < RT_CPU_FEATURE_COUNT; f++)
		if (strlen(feature_info[f].name) == len &&
		    memcmp(feature_info[f].name, name, len) == 0)
			return (rt_cpu_feature)f;
	return RT_CPU_FEATURE_COUNT;
}

/* Set the features of "t" to the comma-separated list "value" (or
 * "none"). */
static int apply_features(const char *value, rt_cpu_target *t, char *err,
	size_t errlen)
{
	uint64_t features = 0;
	bool none = strcmp(value, "none") == 0;
	for (const char *p = value; !none;) {
		size_t len = strcspn(p, ",");
		rt_cpu_feature f = find_feature(p, len);
		if (f == RT_CPU_FEATURE_COUNT)
			return report(err, errlen, "target: unknown feature '%.*s' in -features",
				      (int)len, p);
		if (strcmp(feature_info[f].arch, t->arch) != 0)
			return report(err, errlen,
				      "target: feature '%s' is not available on %s",
				      feature_info[f].name, t->arch);
		features |= BIT(f);
		if (!p[len])
			break;
		p += len + 1;
	}
	t->features = features;
	return 0;
}

/* Check that the -isa "isa_value", when given, names the level of the
 * features of "t". */
static int check_isa_matches(const char *isa_value, const rt_cpu_target *t,
	char *err, size_t errlen)
{
	const char *level = isa_names[isa_of_features(t->features)];
	if (isa_value && strcmp(isa_value, level) != 0)
		return report(err, errlen,
			      "target: -isa=%s does not match -features, which "
			      "make isa %s", isa_value, level);
	return 0;
}

/* Set the vector width of "t" to "value", or to the default of its
 * features when "value" is NULL. */
static int apply_vector(const char *value, rt_cpu_target *t, char *err,
	size_t errlen)
{
	int max = max_vector_bytes(t->features);
	if (!value) {
		t->vector_bytes = default_vector_bytes(t->features);
		return 0;
	}
	int bytes;
	if (parse_int_in(value, "vector", 4, max, &bytes, err, errlen) < 0)
		return -1;
	if (!is_power_of_two(bytes))
		return report(err, errlen,
			      "target: -vector=%s: expected a power of two", value);
	t->vector_bytes = bytes;
	return 0;
}

/* Set the cache size "field" of key "key" to "value", which must be at
 * least "min" bytes. */
static int apply_cache_size(const char *value, const char *key, int64_t min,
	int64_t *field, char *err, size_t errlen)
{
	int64_t bytes;
	if (parse_size(value, &bytes) < 0 || bytes < min)
		return report(err, errlen,
			      "target: -%s=%s: expected a size in bytes of at least "
			      "%lld, with an optional K, M or G suffix (e.g. 48K)",
			      key, value, (long long)min);
	*field = bytes;
	return 0;
}

static int apply_line(const char *value, rt_cpu_target *t, char *err,
	size_t errlen)
{
	int bytes;
	if (parse_int_in(value, "line", 16, 4096, &bytes, err, errlen) < 0)
		return -1;
	if (!is_power_of_two(bytes))
		return report(err, errlen,
			      "target: -line=%s: expected a power of two", value);
	t->line_bytes = bytes;
	return 0;
}

/* Apply "set" to "t" in key order; return 0, or -1 with a message. */
static int apply_settings(const target_settings *set, rt_cpu_target *t,
	char *err, size_t errlen)
{
	const char *const *v = set->value;
	if ((v[KEY_ARCH] && apply_arch(v[KEY_ARCH], t, err, errlen) < 0) ||
	    (v[KEY_VENDOR] && apply_name(v[KEY_VENDOR], "vendor", t->vendor,
					 sizeof t->vendor, err, errlen) < 0) ||
	    (v[KEY_MODEL] && apply_name(v[KEY_MODEL], "model", t->model,
					sizeof t->model, err, errlen) < 0) ||
	    (v[KEY_ISA] && apply_isa(v[KEY_ISA], t, err, errlen) < 0) ||
	    (v[KEY_FEATURES] &&
	     (apply_features(v[KEY_FEATURES], t, err, errlen) < 0 ||
	      check_isa_matches(v[KEY_ISA], t, err, errlen) < 0)) ||
	    apply_vector(v[KEY_VECTOR], t, err, errlen) < 0 ||
	    (v[KEY_CORES] && parse_int_in(v[KEY_CORES], "cores", 1, MAX_CORES,
					  &t->cores, err, errlen) < 0) ||
	    (v[KEY_L1D] && apply_cache_size(v[KEY_L1D], "l1d", 1,
					    &t->l1d_bytes, err, errlen) < 0) ||
	    (v[KEY_L2] && apply_cache_size(v[KEY_L2], "l2", 0, &t->l2_bytes,
					   err, errlen) < 0) ||
	    (v[KEY_L3] && apply_cache_size(v[KEY_L3], "l3", 0, &t->l3_bytes,
					   err, errlen) < 0) ||
	    (v[KEY_LINE] && apply_line(v[KEY_LINE], t, err, errlen) < 0))
		return -1;
	return 0;
}

/* Parse the target string "s" into "t"; see target.h. */
int rt_cpu_target_parse(const char *s, rt_cpu_target *t, char *err,
	size_t errlen)
{
	if (!s)
		return report(err, errlen, "target: empty target string");
	char *text = strdup(s);
	if (!text)
		return report(err, errlen, "target: out of memory");
	target_settings set = { { 0 } };
	rt_cpu_target_host(t);
	int rc = read_settings(text, &set, err, errlen) < 0 ||
			 apply_settings(&set, t, err, errlen) < 0 ? -1 : 0;
	free(text);
	return rc;
}

/* Text written with snprintf semantics: "used" counts every byte asked
 * for, even those that did not fit in "buf" of size "len". */
typedef struct print_buf {
	char *buf;
	size_t len;
	size_t used;
} print_buf;

static void __attribute__((format(printf, 2, 3)))
put(print_buf *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = out->used < out->len ? out->len - out->used : 0;
	int n = vsnprintf(room ? out->buf + out->used : NULL, room, fmt, ap);
	va_end(ap);
	out->used += n > 0 ? (size_t)n : 0;
}

/* Return whether "value" must be quoted to read back as one value. */
static bool needs_quotes(const char *value)
{
	if (!*value)
		return true;
	for (const char *p = value; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._,:+/@()-", *p))
			return true;
	return false;
}

/* Write " -key=value", quoting and escaping "value" when it needs it. */
static void put_name(print_buf *out, const char *key, const char *value)
{
	if (!needs_quotes(value)) {
		put(out, " -%s=%s", key, value);
		return;
	}
	put(out, " -%s=\"", key);
	for (const char *p = value; *p; p++)
		put(out, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
	put(out, "\"");
}

/* Write " -key=SIZE" with the largest unit that divides "bytes". */
static void put_size(print_buf *out, const char *key, int64_t bytes)
{
	static const struct {
		int64_t unit;
		char suffix;
	} units[] = { { GIB, 'G' }, { MIB, 'M' }, { KIB, 'K' } };
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (bytes > 0 && bytes % units[i].unit == 0) {
			put(out, " -%s=%lld%c", key,
			    (long long)(bytes / units[i].unit), units[i].suffix);
			return;
		}
	put(out, " -%s=%lld", key, (long long)bytes);
}

static void put_features(print_buf *out, uint64_t features)
{
	put(out, " -features=");
	if (!features)
		put(out, "none");
	const char *sep = "";
	for (int f = 0; f < RT_CPU_FEATURE_COUNT; f++)
		if (features & BIT(f)) {
			put(out, "%s%s", sep, feature_info[f].name);
			sep = ",";
		}
}

/* Write the canonical string of "t"; see target.h. */
int rt_cpu_target_print(const rt_cpu_target *t, char *buf, size_t len)
{
	print_buf out = { buf, len, 0 };
	if (len)
		buf[0] = 0;
	put(&out, "cpu");
	put_name(&out, "arch", t->arch);
	put_name(&out, "vendor", t->vendor);
	put_name(&out, "model", t->model);
	put(&out, " -isa=%s", rt_cpu_isa_name(rt_cpu_target_isa(t)));
	put_features(&out, t->features);
	put(&out, " -vector=%d -cores=%d", t->vector_bytes, t->cores);
	put_size(&out, "l1d", t->l1d_bytes);
	put_size(&out, "l2", t->l2_bytes);
	put_size(&out, "l3", t->l3_bytes);
	put(&out, " -line=%d", t->line_bytes);
	return (int)out.used;
}

int rt_target_kind_of(const char *s, rt_target_kind *kind, char *err,
	size_t errlen)
{
	*kind = RT_TARGET_CPU;
	if (!s)
		return 0;
	s += strspn(s, " \t\n\r\f\v");
	size_t n = strcspn(s, " \t\n\r\f\v");
	int sm = 0;
	if (n >= 4 && memcmp(s, "cuda", 4) == 0 && (n == 4 || s[4] == ':')) {
		*kind = RT_TARGET_CUDA;
		return rt_cuda_target_parse(s, &sm, err, errlen);
	}
	if (n != 6 || memcmp(s, "opencl", 6) != 0)
		return 0;
	*kind = RT_TARGET_OPENCL;
	if (s[n + strspn(s + n, " \t\n\r\f\v")])
		return report(err, errlen, "target: opencl takes no options yet: '%s'", s);
	return 0;
}
