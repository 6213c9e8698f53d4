/* The CUDA device (runtime/cuda.h).  The few driver types, constants and
 * entry points tessel calls are declared here, from cuda.h's values, so
 * that building needs no CUDA headers and running needs no driver until
 * a device is opened.  Entry points that cuda.h maps to versioned
 * symbols (cuMemAlloc to cuMemAlloc_v2, ...) are loaded by those names;
 * contexts are primary contexts (cuDevicePrimaryCtxRetain and
 * cuCtxSetCurrent), whose calls have not changed across CUDA 12 and 13
 * as cuCtxCreate's did. */
#include "runtime/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CU_EVENT_DEFAULT 0

/* CUdevice_attribute values. */
enum {
	ATTR_MAX_THREADS_PER_BLOCK = 1,
	ATTR_MAX_BLOCK_DIM_X = 2,
	ATTR_MAX_GRID_DIM_X = 5,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	ATTR_WARP_SIZE = 10,
	ATTR_MAX_REGISTERS_PER_BLOCK = 12,
	ATTR_CLOCK_RATE = 13,
	ATTR_MULTIPROCESSOR_COUNT = 16,
	ATTR_L2_CACHE_SIZE = 38,
	ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
	ATTR_COMPUTE_CAPABILITY_MINOR = 76,
	ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/* The entry points, loaded once per process. */
typedef struct cu_api {
	bool loaded;
	char error[512];
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
		unsigned, unsigned, unsigned, CUstream, void **, void **);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
} cu_api;

static cu_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* Look up "name" in "lib", trying the versioned names first (cuda.h
 * maps "cuMemAlloc" to "cuMemAlloc_v2"); NULL when none is there. */
static void *find_symbol(void *lib, const char *name, const char *const *versions)
{
	char versioned[128];
	for (int i = 0; versions[i]; i++) {
		snprintf(versioned, sizeof(versioned), "%s%s", name, versions[i]);
		void *f = dlsym(lib, versioned);
		if (f)
			return f;
	}
	return NULL;
}

/* Load libcuda.so.1 and its entry points into "api" (never unloaded). */
static void load_api(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(api.error, sizeof(api.error), "CUDA driver not found "
			"(libcuda.so.1): %s", dlerror());
		return;
	}
	static const char *const plain[] = { "", NULL };
	static const char *const v2[] = { "_v2", "", NULL };
	struct { void **slot; const char *name; const char *const *versions; } fns[] = {
#define FN(n, v) { (void **)&api.n, "cu" #n, v }
		FN(GetErrorName, plain), FN(GetErrorString, plain), FN(Init, plain),
		FN(DeviceGetCount, plain), FN(DeviceGet, plain), FN(DeviceGetName, plain),
		FN(DeviceGetAttribute, plain), FN(DeviceTotalMem, v2),
		FN(DevicePrimaryCtxRetain, plain), FN(DevicePrimaryCtxRelease, v2),
		FN(CtxSetCurrent, plain),
		FN(ModuleLoadData, plain), FN(ModuleUnload, plain),
		FN(ModuleGetFunction, plain), FN(MemAlloc, v2), FN(MemFree, v2),
		FN(MemcpyHtoD, v2), FN(MemcpyDtoH, v2), FN(MemcpyDtoDAsync, v2),
		FN(MemsetD32, v2), FN(LaunchKernel, plain),
		FN(StreamSynchronize, plain), FN(EventCreate, plain),
		FN(EventDestroy, v2), FN(EventRecord, plain), FN(EventSynchronize, plain),
		FN(EventElapsedTime, v2),
#undef FN
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		*fns[i].slot = find_symbol(lib, fns[i].name, fns[i].versions);
		if (!*fns[i].slot) {
			snprintf(api.error, sizeof(api.error), "the CUDA driver lacks %s",
				fns[i].name);
			return;
		}
	}
	api.loaded = true;
}

/* Write "call: NAME: description" of the driver's error "r" into "err"
 * and return -1. */
static int fail(char *err, size_t len, const char *call, CUresult r)
{
	const char *name = NULL, *text = NULL;
	if (api.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUDA error";
	if (api.GetErrorString(r, &text) != CUDA_SUCCESS || !text)
		text = "";
	snprintf(err, len, "%s: %s (%d)%s%s", call, name, r, text[0] ? ": " : "", text);
	return -1;
}

#define CHECK(call, args, err, len)                           \
	do {                                                  \
		CUresult r_ = api.call args;                  \
		if (r_ != CUDA_SUCCESS)                       \
			return fail(err, len, "cu" #call, r_); \
	} while (0)

struct rt_cuda_device {
	CUdevice dev;
	CUcontext ctx;
	rt_gpu_target target;
	CUdeviceptr flush;          /* rt_cuda_flush_l2's buffer, or 0 */
	size_t flush_words;
	unsigned flushes;
};

#define MAX_KERNELS 256

struct rt_cuda_module {
	rt_cuda_device *dev;
	CUmodule module;
	int nkernels;
	char *names[MAX_KERNELS];
	CUfunction kernels[MAX_KERNELS];
};

struct rt_cuda_buffer {
	rt_cuda_device *dev;
	CUdeviceptr ptr;
	size_t bytes;
};

/* Read the attribute "attr" of "dev" into "*v". */
static int attribute(CUdevice dev, int attr, int64_t *v, char *err, size_t len)
{
	int x = 0;
	CHECK(DeviceGetAttribute, (&x, attr, dev), err, len);
	*v = x;
	return 0;
}

/* Fill the target of "d" from its attributes. */
static int describe(rt_cuda_device *d, char *err, size_t len)
{
	rt_gpu_target *t = &d->target;
	int64_t major = 0, minor = 0, warp = 0, count = 0;
	if (attribute(d->dev, ATTR_COMPUTE_CAPABILITY_MAJOR, &major, err, len) ||
	    attribute(d->dev, ATTR_COMPUTE_CAPABILITY_MINOR, &minor, err, len))
		return -1;
	if (rt_gpu_target_for_sm((int)(major * 10 + minor), t, NULL, 0))
		memset(t, 0, sizeof(*t));
	t->sm = (int)(major * 10 + minor);
	t->from_device = true;
	t->max_regs_per_thread = 255;
	CHECK(DeviceGetName, (t->name, (int)sizeof(t->name) - 1, d->dev), err, len);
	size_t mem = 0;
	CHECK(DeviceTotalMem, (&mem, d->dev), err, len);
	t->memory_bytes = (int64_t)mem;
	struct { int attr; int64_t *slot; } attrs[] = {
		{ ATTR_MAX_THREADS_PER_BLOCK, &t->max_threads_per_block },
		{ ATTR_MAX_BLOCK_DIM_X, &t->max_block[0] },
		{ ATTR_MAX_BLOCK_DIM_X + 1, &t->max_block[1] },
		{ ATTR_MAX_BLOCK_DIM_X + 2, &t->max_block[2] },
		{ ATTR_MAX_GRID_DIM_X, &t->max_grid[0] },
		{ ATTR_MAX_GRID_DIM_X + 1, &t->max_grid[1] },
		{ ATTR_MAX_GRID_DIM_X + 2, &t->max_grid[2] },
		{ ATTR_MAX_SHARED_MEMORY_PER_BLOCK, &t->shared_per_block },
		{ ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &t->shared_per_block_optin },
		{ ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &t->shared_per_sm },
		{ ATTR_MAX_REGISTERS_PER_BLOCK, &t->regs_per_block },
		{ ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR, &t->regs_per_sm },
		{ ATTR_L2_CACHE_SIZE, &t->l2_bytes },
		{ ATTR_CLOCK_RATE, &t->clock_khz },
		{ ATTR_WARP_SIZE, &warp },
		{ ATTR_MULTIPROCESSOR_COUNT, &count },
	};
	for (size_t i = 0; i < sizeof(attrs) / sizeof(*attrs); i++)
		if (attribute(d->dev, attrs[i].attr, attrs[i].slot, err, len))
			return -1;
	t->warp_size = (int)warp;
	t->sm_count = (int)count;
	return 0;
}

/* Initialize the driver, find the device "ordinal" and make its primary
 * context current into "d". */
static int open_device(rt_cuda_device *d, int ordinal, char *err, size_t len)
{
	int n = 0;
	CHECK(Init, (0), err, len);
	CHECK(DeviceGetCount, (&n), err, len);
	if (ordinal < 0 || ordinal >= n) {
		snprintf(err, len, "no CUDA device %d (the driver sees %d)", ordinal, n);
		return -1;
	}
	CHECK(DeviceGet, (&d->dev, ordinal), err, len);
	CHECK(DevicePrimaryCtxRetain, (&d->ctx, d->dev), err, len);
	CHECK(CtxSetCurrent, (d->ctx), err, len);
	return describe(d, err, len);
}

int rt_cuda_probe(char *err, size_t len)
{
	pthread_once(&api_once, load_api);
	if (api.loaded)
		return 0;
	snprintf(err, len, "%s", api.error);
	return -1;
}

rt_cuda_device *rt_cuda_open(int ordinal, char *err, size_t len)
{
	pthread_once(&api_once, load_api);
	if (!api.loaded) {
		snprintf(err, len, "%s", api.error);
		return NULL;
	}
	rt_cuda_device *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	if (open_device(d, ordinal, err, len)) {
		rt_cuda_close(d);
		return NULL;
	}
	return d;
}

void rt_cuda_close(rt_cuda_device *d)
{
	if (!d)
		return;
	if (d->flush)
		api.MemFree(d->flush);
	if (d->ctx) {
		api.CtxSetCurrent(NULL);
		api.DevicePrimaryCtxRelease(d->dev);
	}
	free(d);
}

const rt_gpu_target *rt_cuda_target(const rt_cuda_device *d)
{
	return &d->target;
}

rt_cuda_module *rt_cuda_load(rt_cuda_device *d, const void *image, char *err,
	size_t len)
{
	rt_cuda_module *m = calloc(1, sizeof(*m));
	m->dev = d;
	CUresult r = api.ModuleLoadData(&m->module, image);
	if (r != CUDA_SUCCESS) {
		fail(err, len, "cuModuleLoadData", r);
		free(m);
		return NULL;
	}
	return m;
}

void rt_cuda_module_free(rt_cuda_module *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nkernels; i++)
		free(m->names[i]);
	api.ModuleUnload(m->module);
	free(m);
}

/* Set "*f" to the kernel "name" of "m", looked up on first use. */
static int find_kernel(rt_cuda_module *m, const char *name, CUfunction *f,
	char *err, size_t len)
{
	for (int i = 0; i < m->nkernels; i++)
		if (strcmp(m->names[i], name) == 0) {
			*f = m->kernels[i];
			return 0;
		}
	if (m->nkernels == MAX_KERNELS) {
		snprintf(err, len, "more than %d kernels in one module", MAX_KERNELS);
		return -1;
	}
	CHECK(ModuleGetFunction, (f, m->module, name), err, len);
	m->names[m->nkernels] = strdup(name);
	m->kernels[m->nkernels++] = *f;
	return 0;
}

rt_cuda_buffer *rt_cuda_alloc(rt_cuda_device *d, size_t bytes, char *err,
	size_t len)
{
	rt_cuda_buffer *b = calloc(1, sizeof(*b));
	b->dev = d;
	b->bytes = bytes ? bytes : 1;
	CUresult r = api.MemAlloc(&b->ptr, b->bytes);
	if (r != CUDA_SUCCESS) {
		fail(err, len, "cuMemAlloc", r);
		free(b);
		return NULL;
	}
	return b;
}

void rt_cuda_free(rt_cuda_buffer *b)
{
	if (!b)
		return;
	api.MemFree(b->ptr);
	free(b);
}

rt_cuda_buffer *rt_cuda_upload(rt_cuda_device *d, const void *src, size_t bytes,
	char *err, size_t len)
{
	rt_cuda_buffer *b = rt_cuda_alloc(d, bytes, err, len);
	if (b && src && rt_cuda_write(b, src, bytes, err, len)) {
		rt_cuda_free(b);
		return NULL;
	}
	return b;
}

int rt_cuda_write(rt_cuda_buffer *b, const void *src, size_t bytes, char *err,
	size_t len)
{
	if (bytes)
		CHECK(MemcpyHtoD, (b->ptr, src, bytes), err, len);
	return 0;
}

int rt_cuda_read(rt_cuda_buffer *b, void *dst, size_t bytes, char *err,
	size_t len)
{
	if (bytes)
		CHECK(MemcpyDtoH, (dst, b->ptr, bytes), err, len);
	return 0;
}

#define MAX_PARAMS 512

int rt_cuda_launch(rt_cuda_module *m, const char *name, int n,
	rt_cuda_buffer *const *bufs, const int64_t grid[3], const int64_t block[3],
	char *err, size_t len)
{
	if (n > MAX_PARAMS) {
		snprintf(err, len, "more than %d kernel parameters", MAX_PARAMS);
		return -1;
	}
	for (int d = 0; d < 3; d++)
		if (grid[d] < 1 || grid[d] > 0x7fffffff || block[d] < 1 ||
		    block[d] > 0x7fffffff) {
			snprintf(err, len, "kernel %s: grid or block size out of range", name);
			return -1;
		}
	CUfunction f = NULL;
	if (find_kernel(m, name, &f, err, len))
		return -1;
	void *params[MAX_PARAMS + 1];
	for (int i = 0; i < n; i++)
		params[i] = (void *)&bufs[i]->ptr;
	CHECK(LaunchKernel, (f, (unsigned)grid[0], (unsigned)grid[1],
		(unsigned)grid[2], (unsigned)block[0], (unsigned)block[1],
		(unsigned)block[2], 0, NULL, params, NULL), err, len);
	return 0;
}

int rt_cuda_sync(rt_cuda_device *d, char *err, size_t len)
{
	(void)d;
	CHECK(StreamSynchronize, (NULL), err, len);
	return 0;
}

int rt_cuda_flush_l2(rt_cuda_device *d, char *err, size_t len)
{
	if (!d->flush) {
		int64_t bytes = 2 * d->target.l2_bytes;
		d->flush_words = (size_t)(bytes > (8 << 20) ? bytes : (8 << 20)) / 4;
		CHECK(MemAlloc, (&d->flush, d->flush_words * 4), err, len);
	}
	CHECK(MemsetD32, (d->flush, ++d->flushes, d->flush_words), err, len);
	return 0;
}

uint64_t rt_cuda_buffer_address(const rt_cuda_buffer *b)
{
	return b->ptr;
}

int rt_cuda_copy_async(rt_cuda_buffer *dst, const rt_cuda_buffer *src, size_t bytes,
	char *err, size_t len)
{
	if (bytes > dst->bytes || bytes > src->bytes) {
		snprintf(err, len, "device copy of %zu bytes between buffers of %zu and "
			"%zu", bytes, src->bytes, dst->bytes);
		return -1;
	}
	CHECK(MemcpyDtoDAsync, (dst->ptr, src->ptr, bytes, NULL), err, len);
	return 0;
}

/* Record "start", launch, record "stop" and wait for it. */
static int timed_launch(CUevent start, CUevent stop, int (*launch)(void *),
	void *arg, char *err, size_t len)
{
	CHECK(EventRecord, (start, NULL), err, len);
	if (launch(arg))
		return -1;
	CHECK(EventRecord, (stop, NULL), err, len);
	CHECK(EventSynchronize, (stop), err, len);
	return 0;
}

int rt_cuda_time(rt_cuda_device *d, int (*launch)(void *arg), void *arg,
	double *seconds, char *err, size_t len)
{
	(void)d;
	CUevent start = NULL, stop = NULL;
	float ms = 0;
	CUresult r = api.EventCreate(&start, CU_EVENT_DEFAULT);
	if (r == CUDA_SUCCESS)
		r = api.EventCreate(&stop, CU_EVENT_DEFAULT);
	int status = r == CUDA_SUCCESS ? 0 : fail(err, len, "cuEventCreate", r);
	if (status == 0)
		status = timed_launch(start, stop, launch, arg, err, len);
	if (status == 0 && (r = api.EventElapsedTime(&ms, start, stop)) != CUDA_SUCCESS)
		status = fail(err, len, "cuEventElapsedTime", r);
	if (start)
		api.EventDestroy(start);
	if (stop)
		api.EventDestroy(stop);
	*seconds = ms * 1e-3;
	return status;
}
