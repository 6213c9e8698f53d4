/* NVRTC (runtime/nvrtc.h).  The few NVRTC types and entry points tessel
 * calls are declared here, from nvrtc.h's values, so that building needs
 * no CUDA headers and running needs no NVRTC until something compiles. */
#include "runtime/nvrtc.h"

#include "runtime/cuda_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_INVALID_OPTION 5

/* The entry points, loaded once per process. */
typedef struct nvrtc_api {
	bool loaded;
	char error[1024];
	const char *(*GetErrorString)(nvrtcResult);
	nvrtcResult (*Version)(int *, int *);
	nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
		const char *const *, const char *const *);
	nvrtcResult (*DestroyProgram)(nvrtcProgram *);
	nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
	nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetPTX)(nvrtcProgram, char *);
	nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
	/* Since CUDA 11.2; NULL before. */
	nvrtcResult (*GetNumSupportedArchs)(int *);
	nvrtcResult (*GetSupportedArchs)(int *);
} nvrtc_api;

static nvrtc_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* Load NVRTC and its entry points into "api" (never unloaded). */
static void load_api(void)
{
	static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12",
		"libnvrtc.so", NULL };
	void *lib = rt_cuda_lib_open("NVRTC", names, "TESSEL_NVRTC", api.error,
		sizeof(api.error));
	if (!lib)
		return;
	rt_lib_symbol fns[] = {
#define FN(n) { (void **)&api.n, "nvrtc" #n }
		FN(GetErrorString), FN(Version), FN(CreateProgram), FN(DestroyProgram),
		FN(CompileProgram), FN(GetCUBINSize), FN(GetCUBIN), FN(GetPTXSize),
		FN(GetPTX), FN(GetProgramLogSize), FN(GetProgramLog),
#undef FN
	};
	if (rt_cuda_lib_resolve(lib, "the NVRTC library", fns,
			(int)(sizeof(fns) / sizeof(*fns)), api.error, sizeof(api.error)))
		return;
	*(void **)&api.GetNumSupportedArchs = dlsym(lib, "nvrtcGetNumSupportedArchs");
	*(void **)&api.GetSupportedArchs = dlsym(lib, "nvrtcGetSupportedArchs");
	api.loaded = true;
}

/* Load the library once; 0, or -1 with its error in "err". */
static int loaded(char *err, size_t len)
{
	pthread_once(&api_once, load_api);
	if (api.loaded)
		return 0;
	snprintf(err, len, "%s", api.error);
	return -1;
}

/* Write "call: NVRTC_ERROR_..." into "err" and return -1. */
static int fail(char *err, size_t len, const char *call, nvrtcResult r)
{
	snprintf(err, len, "%s: %s (%d)", call, api.GetErrorString(r), r);
	return -1;
}

int rt_nvrtc_version(int *major, int *minor, char *err, size_t len)
{
	if (loaded(err, len))
		return -1;
	nvrtcResult r = api.Version(major, minor);
	return r == NVRTC_SUCCESS ? 0 : fail(err, len, "nvrtcVersion", r);
}

/* Return 0 when NVRTC compiles for sm_"sm" (or cannot say), else -1 with
 * the architectures it can compile for. */
static int check_arch(int sm, char *err, size_t len)
{
	int n = 0;
	if (!api.GetNumSupportedArchs || api.GetNumSupportedArchs(&n) != NVRTC_SUCCESS ||
	    n <= 0 || n > 256)
		return 0;
	int archs[256];
	if (api.GetSupportedArchs(archs) != NVRTC_SUCCESS)
		return 0;
	for (int i = 0; i < n; i++)
		if (archs[i] == sm)
			return 0;
	int major = 0, minor = 0;
	api.Version(&major, &minor);
	size_t used = (size_t)snprintf(err, len, "NVRTC %d.%d cannot compile for "
		"sm_%d; it compiles for", major, minor, sm);
	for (int i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(err + used, len - used, " sm_%d", archs[i]);
	return -1;
}

/* Copy the log of "prog" into c->log. */
static void take_log(nvrtcProgram prog, rt_cubin *c)
{
	size_t size = 0;
	if (api.GetProgramLogSize(prog, &size) != NVRTC_SUCCESS)
		size = 0;
	c->log = calloc(size + 1, 1);
	if (size && api.GetProgramLog(prog, c->log) != NVRTC_SUCCESS)
		c->log[0] = 0;
	c->log[size] = 0;
}

/* Copy the cubin of the compiled "prog" into "c". */
static int take_cubin(nvrtcProgram prog, rt_cubin *c, char *err, size_t len)
{
	nvrtcResult r = api.GetCUBINSize(prog, &c->size);
	if (r != NVRTC_SUCCESS)
		return fail(err, len, "nvrtcGetCUBINSize", r);
	c->image = malloc(c->size ? c->size : 1);
	r = api.GetCUBIN(prog, c->image);
	if (r != NVRTC_SUCCESS)
		return fail(err, len, "nvrtcGetCUBIN", r);
	return 0;
}

/* Fill c->kernels from the cubin, with the spills ptxas reported in the
 * log (which the cubin does not record); from the log alone when the
 * cubin cannot be read.  The cubin is what the launch checks rely on: a
 * compile NVRTC takes from a cache has no report (seen on a GPU machine
 * before compiles were made with --no-cache). */
static void read_usage(rt_cubin *c)
{
	char err[256];
	rt_kernel_usage *reported = NULL;
	int nreported = rt_ptxas_parse(c->log, &reported);
	c->nkernels = rt_cubin_usage(c->image, c->size, &c->kernels, err, sizeof(err));
	if (c->nkernels < 0) {
		c->nkernels = nreported;
		c->kernels = reported;
		return;
	}
	for (int i = 0; i < c->nkernels; i++)
		for (int j = 0; j < nreported; j++)
			if (strcmp(c->kernels[i].name, reported[j].name) == 0) {
				c->kernels[i].spill_store_bytes = reported[j].spill_store_bytes;
				c->kernels[i].spill_load_bytes = reported[j].spill_load_bytes;
			}
	free(reported);
}

/* Compile "prog" for "arch" (a --gpu-architecture option) with ptxas's
 * report when "report", and NVRTC's cache off where NVRTC has one;
 * return NVRTC's result. */
static nvrtcResult compile(nvrtcProgram prog, const char *arch, bool report)
{
	const char *options[3] = { arch, "--no-cache", "--ptxas-options=-v" };
	int n = report ? 3 : 2;
	nvrtcResult r = api.CompileProgram(prog, n, options);
	if (r == NVRTC_ERROR_INVALID_OPTION) {
		options[1] = options[2];
		r = api.CompileProgram(prog, n - 1, options);
	}
	return r;
}

/* Put NVRTC's failure "r" of compiling "prog" into "err", with its log
 * ("log" when given, else read here); return -1. */
static int compile_failed(nvrtcProgram prog, nvrtcResult r, const char *log, char *err,
	size_t len)
{
	rt_cubin c = { 0 };
	if (!log) {
		take_log(prog, &c);
		log = c.log;
	}
	fail(err, len, "nvrtcCompileProgram", r);
	size_t used = strlen(err);
	if (used + 1 < len)
		snprintf(err + used, len - used, "\n%s", log ? log : "");
	free(c.log);
	return -1;
}

/* Load NVRTC, check "sm", create the program of "source" in "*prog" and
 * compile it for --gpu-architecture="prefix"_"sm" ("sm": a cubin;
 * "compute": PTX) with ptxas's report when "report".  Return 0 with the
 * compile's result in "*r" (destroy "*prog" after), or -1 with the error
 * in "err" when nothing was compiled. */
static int create_and_compile(const char *source, const char *file, const char *prefix,
	int sm, bool report, nvrtcProgram *prog, nvrtcResult *r, char *err, size_t len)
{
	if (loaded(err, len) || check_arch(sm, err, len))
		return -1;
	nvrtcResult c = api.CreateProgram(prog, source, file, 0, NULL, NULL);
	if (c != NVRTC_SUCCESS)
		return fail(err, len, "nvrtcCreateProgram", c);
	char arch[64];
	snprintf(arch, sizeof(arch), "--gpu-architecture=%s_%d", prefix, sm);
	*r = compile(*prog, arch, report);
	return 0;
}

int rt_nvrtc_compile(const char *source, const char *file, int sm, rt_cubin *out,
	char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	out->sm = sm;
	nvrtcProgram prog = NULL;
	nvrtcResult r;
	if (create_and_compile(source, file, "sm", sm, true, &prog, &r, err, len))
		return -1;
	take_log(prog, out);
	int status = r != NVRTC_SUCCESS ? compile_failed(prog, r, out->log, err, len)
		: take_cubin(prog, out, err, len);
	api.DestroyProgram(&prog);
	if (status == 0)
		read_usage(out);
	return status;
}

int rt_nvrtc_ptx(const char *source, const char *file, int sm, char **ptx, char *err,
	size_t len)
{
	*ptx = NULL;
	nvrtcProgram prog = NULL;
	nvrtcResult r;
	if (create_and_compile(source, file, "compute", sm, false, &prog, &r, err, len))
		return -1;
	int status = 0;
	size_t size = 0;
	if (r != NVRTC_SUCCESS)
		status = compile_failed(prog, r, NULL, err, len);
	else if ((r = api.GetPTXSize(prog, &size)) != NVRTC_SUCCESS)
		status = fail(err, len, "nvrtcGetPTXSize", r);
	else if (!(*ptx = calloc(size + 1, 1)))
		status = -1, snprintf(err, len, "out of memory for %zu bytes of PTX", size);
	else if ((r = api.GetPTX(prog, *ptx)) != NVRTC_SUCCESS)
		status = fail(err, len, "nvrtcGetPTX", r);
	api.DestroyProgram(&prog);
	if (status) {
		free(*ptx);
		*ptx = NULL;
	}
	return status;
}

void rt_cubin_free(rt_cubin *c)
{
	free(c->image);
	free(c->log);
	free(c->kernels);
	memset(c, 0, sizeof(*c));
}

const rt_kernel_usage *rt_cubin_kernel(const rt_cubin *c, const char *name)
{
	for (int i = 0; i < c->nkernels; i++)
		if (strcmp(c->kernels[i].name, name) == 0)
			return &c->kernels[i];
	return NULL;
}

/* ---- ptxas's report ------------------------------------------------------ */

/* Return the number before "unit" in "line" (0 when absent). */
static long long number_before(const char *line, const char *unit)
{
	const char *at = strstr(line, unit);
	if (!at)
		return 0;
	const char *p = at;
	while (p > line && p[-1] == ' ')
		p--;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return atoll(p);
}

/* Copy the name quoted with '' after "key" in "line" into "name" of size
 * "len"; return whether there was one. */
static bool quoted_after(const char *line, const char *key, char *name, size_t len)
{
	const char *at = strstr(line, key);
	if (!at)
		return false;
	at += strlen(key);
	size_t n = strcspn(at, "'\n");
	snprintf(name, len, "%.*s", (int)n, at);
	return true;
}

/* Read one line of the report into "k", the kernel being compiled (NULL
 * before the first); "props" is the function the last "Function
 * properties for" line named. */
static void parse_line(const char *line, rt_kernel_usage *k, const char *props)
{
	if (!k)
		return;
	if (strstr(line, "bytes stack frame") && strcmp(props, k->name) == 0) {
		k->stack_bytes = number_before(line, " bytes stack frame");
		k->spill_store_bytes = number_before(line, " bytes spill stores");
		k->spill_load_bytes = number_before(line, " bytes spill loads");
	} else if (strstr(line, "Used ") && strstr(line, " registers")) {
		k->registers = (int)number_before(line, " registers");
		k->barriers = (int)number_before(line, " barriers");
		k->shared_bytes = number_before(line, " bytes smem");
	}
}

int rt_ptxas_parse(const char *log, rt_kernel_usage **kernels)
{
	int n = 0, cap = 8;
	rt_kernel_usage *ks = calloc((size_t)cap, sizeof(*ks));
	char props[160] = "", line[1024];
	for (const char *p = log && ks ? log : ""; *p;) {
		size_t m = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)(m < sizeof(line) ? m : sizeof(line) - 1), p);
		p += m + (p[m] == '\n');
		char name[160];
		if (quoted_after(line, "Compiling entry function '", name, sizeof(name))) {
			if (n == cap) {
				rt_kernel_usage *more = realloc(ks, sizeof(*ks) * (size_t)cap * 2);
				if (!more)
					break;
				ks = more;
				cap *= 2;
			}
			memset(&ks[n], 0, sizeof(*ks));
			snprintf(ks[n++].name, sizeof(ks->name), "%s", name);
		} else if (strstr(line, "Function properties for ")) {
			snprintf(props, sizeof(props), "%s",
				strstr(line, "Function properties for ") + 24);
		} else {
			parse_line(line, n ? &ks[n - 1] : NULL, props);
		}
	}
	*kernels = ks;
	return n;
}
