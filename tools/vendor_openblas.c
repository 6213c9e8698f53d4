/* OpenBLAS, loaded with dlopen: cblas_sgemm for the GEMM problems (matmul,
 * batch_matmul one product per entry, dense with the bias copied into the
 * output rows first, timed).  OpenBLAS reads OPENBLAS_CORETYPE and
 * OPENBLAS_NUM_THREADS when it is loaded: OPENBLAS_CORETYPE is set to
 * SkylakeX when unset on an AVX-512 CPU (OpenBLAS 0.3.21 misdetects these
 * CPUs as Haswell and runs about 5x slower), and the thread count is set
 * both in the environment and with openblas_set_num_threads, then read
 * back. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "tools/vendor.h"

/* The CBLAS constants (cblas.h), and the signature of cblas_sgemm. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void sgemm_fn(int order, int trans_a, int trans_b, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb, float beta,
	float *c, int ldc);

static struct openblas {
	void *lib;
	sgemm_fn *sgemm;
	void (*set_num_threads)(int);
	int (*get_num_threads)(void);
	char *(*get_config)(void);
	char *(*get_corename)(void);
	bool coretype_given;
} ob;

typedef struct sgemm_job {
	const float *a, *b, *bias;
	float *c;
	int batch, m, n, k;
	int trans_a, trans_b;
} sgemm_job;

static bool openblas_supports(const vendor_problem *p)
{
	return p->kind == VENDOR_GEMM && p->dtype == TESSEL_F32 &&
		p->out_dtype == TESSEL_F32 && p->m <= INT_MAX && p->n <= INT_MAX &&
		p->k <= INT_MAX && p->batch <= INT_MAX;
}

/* Find "name" in the loaded library into "*fn"; -1 with why in "err". */
static int find_symbol(const char *name, void *fn, size_t size, char *err,
	size_t errlen)
{
	void *sym = dlsym(ob.lib, name);
	if (!sym) {
		snprintf(err, errlen, "dlsym: %s", dlerror());
		return -1;
	}
	memcpy(fn, &sym, size);
	return 0;
}

/* Set OPENBLAS_CORETYPE (when unset, on AVX-512) and OPENBLAS_NUM_THREADS
 * for OpenBLAS to read when it is loaded. */
static void set_environment(int threads)
{
	char n[16];
	rt_cpu_target host;
	rt_cpu_target_host(&host);
	ob.coretype_given = getenv("OPENBLAS_CORETYPE") != NULL;
	if (!ob.coretype_given && rt_cpu_target_isa(&host) == RT_ISA_AVX512)
		setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
	snprintf(n, sizeof(n), "%d", threads);
	setenv("OPENBLAS_NUM_THREADS", n, 1);
}

static int openblas_load(const vendor_env *env, char *err, size_t errlen)
{
	int threads = env->threads;
	static const char *const names[] = { "libopenblas.so.0", "libopenblas.so" };
	if (!ob.lib) {
		set_environment(threads);
		for (size_t i = 0; i < 2 && !ob.lib; i++)
			if (!(ob.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) && i == 0)
				snprintf(err, errlen, "dlopen: %s", dlerror());
		if (!ob.lib)
			return -1;
		if (find_symbol("cblas_sgemm", &ob.sgemm, sizeof(ob.sgemm), err, errlen) ||
		    find_symbol("openblas_set_num_threads", &ob.set_num_threads,
			sizeof(ob.set_num_threads), err, errlen) ||
		    find_symbol("openblas_get_num_threads", &ob.get_num_threads,
			sizeof(ob.get_num_threads), err, errlen) ||
		    find_symbol("openblas_get_config", &ob.get_config,
			sizeof(ob.get_config), err, errlen) ||
		    find_symbol("openblas_get_corename", &ob.get_corename,
			sizeof(ob.get_corename), err, errlen)) {
			dlclose(ob.lib);
			ob.lib = NULL;
			return -1;
		}
	}
	ob.set_num_threads(threads);
	return 0;
}

/* Copy Bias[n] into each of the "m" rows of "c". */
static void fill_bias(float *c, const float *bias, int m, int n)
{
	for (int i = 0; i < m; i++)
		memcpy(c + (size_t)i * (size_t)n, bias, (size_t)n * sizeof(float));
}

static void sgemm_run(void *arg)
{
	sgemm_job *j = arg;
	size_t sa = (size_t)j->m * (size_t)j->k, sb = (size_t)j->k * (size_t)j->n;
	size_t sc = (size_t)j->m * (size_t)j->n;
	for (int e = 0; e < j->batch; e++) {
		if (j->bias)
			fill_bias(j->c + e * sc, j->bias, j->m, j->n);
		ob.sgemm(CBLAS_ROW_MAJOR, j->trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
			j->trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, j->m, j->n, j->k, 1.0f,
			j->a + e * sa, j->trans_a ? j->m : j->k, j->b + e * sb,
			j->trans_b ? j->k : j->n, j->bias ? 1.0f : 0.0f, j->c + e * sc, j->n);
	}
}

/* Write "OpenBLAS 0.3.21" (the first two words of its configuration)
 * into "buf". */
static void library_version(char *buf, size_t len)
{
	const char *config = ob.get_config();
	const char *space = config ? strchr(config, ' ') : NULL;
	const char *end = space ? strchr(space + 1, ' ') : NULL;
	int n = end ? (int)(end - config) : config ? (int)strlen(config) : 0;
	snprintf(buf, len, "%.*s", n, config ? config : "");
}

static int openblas_prepare(const vendor_env *env, const vendor_problem *p,
	const void *const *in, void *out, vendor_run *r, char *err, size_t errlen)
{
	(void)env;
	sgemm_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*j = (sgemm_job){ in[0], in[1], p->bias ? in[2] : NULL, out, (int)p->batch,
		(int)p->m, (int)p->n, (int)p->k, p->trans_a, p->trans_b };
	char version[64];
	library_version(version, sizeof(version));
	int threads = ob.get_num_threads();
	snprintf(r->name, sizeof(r->name), "%s cblas_sgemm (core %s%s, %d thread%s)",
		version, ob.get_corename(), ob.coretype_given ? " from OPENBLAS_CORETYPE" : "",
		threads, threads == 1 ? "" : "s");
	r->run = sgemm_run;
	r->finish = NULL;
	r->release = free;
	r->arg = j;
	return 0;
}

static int openblas_probe(char *what, size_t len)
{
	vendor_env env = { rt_num_cpus(), NULL };
	if (openblas_load(&env, what, len))
		return -1;
	char version[64];
	library_version(version, sizeof(version));
	snprintf(what, len, "%s (core %s)", version, ob.get_corename());
	return 0;
}

const vendor vendor_openblas = {
	"openblas", false, openblas_supports, openblas_load, openblas_prepare,
	openblas_probe
};
