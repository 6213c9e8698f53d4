/* The OpenCL device (runtime/opencl.h).  The few OpenCL 1.2 types,
 * constants and entry points tessel calls are declared here, from the
 * Khronos headers' values, so that building needs no OpenCL headers and
 * running needs no OpenCL library until a device is opened. */
#include "runtime/opencl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_TRUE 1
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_PLATFORM 0x1031
#define CL_PLATFORM_VERSION 0x0901
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_PROGRAM_BUILD_LOG 0x1183

/* The entry points, loaded once per process. */
typedef struct cl_api {
	bool loaded;
	char error[256];
	cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
	cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *,
		cl_uint *);
	cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
	cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
	cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *,
		void (*)(const char *, const void *, size_t, void *), void *, cl_int *);
	cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield,
		cl_int *);
	cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **,
		const size_t *, cl_int *);
	cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
		void (*)(cl_program, void *), void *);
	cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *,
		size_t *);
	cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
	cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
	cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
	cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t,
		const void *, cl_uint, const cl_event *, cl_event *);
	cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t,
		void *, cl_uint, const cl_event *, cl_event *);
	cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint,
		const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *,
		cl_event *);
	cl_int (*Finish)(cl_command_queue);
	cl_int (*ReleaseMemObject)(cl_mem);
	cl_int (*ReleaseKernel)(cl_kernel);
	cl_int (*ReleaseProgram)(cl_program);
	cl_int (*ReleaseCommandQueue)(cl_command_queue);
	cl_int (*ReleaseContext)(cl_context);
} cl_api;

static cl_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* Load libOpenCL.so.1 and its entry points into "api" (never unloaded:
 * ICD loaders and PoCL keep threads and atexit handlers). */
static void load_api(void)
{
	void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(api.error, sizeof(api.error), "OpenCL is not available: %s",
			dlerror());
		return;
	}
	struct { void **slot; const char *name; } fns[] = {
#define FN(n) { (void **)&api.n, "cl" #n }
		FN(GetPlatformIDs), FN(GetPlatformInfo), FN(GetDeviceIDs), FN(GetDeviceInfo),
		FN(CreateContext), FN(CreateCommandQueue), FN(CreateProgramWithSource),
		FN(BuildProgram), FN(GetProgramBuildInfo), FN(CreateKernel),
		FN(SetKernelArg), FN(CreateBuffer), FN(EnqueueWriteBuffer),
		FN(EnqueueReadBuffer), FN(EnqueueNDRangeKernel), FN(Finish),
		FN(ReleaseMemObject), FN(ReleaseKernel), FN(ReleaseProgram),
		FN(ReleaseCommandQueue), FN(ReleaseContext),
#undef FN
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		*fns[i].slot = dlsym(lib, fns[i].name);
		if (!*fns[i].slot) {
			snprintf(api.error, sizeof(api.error), "OpenCL library lacks %s",
				fns[i].name);
			return;
		}
	}
	api.loaded = true;
}

/* Return the name of the OpenCL error code "code". */
static const char *cl_error_name(cl_int code)
{
	static const char *const names[] = {
		[0] = "CL_SUCCESS", [1] = "CL_DEVICE_NOT_FOUND",
		[2] = "CL_DEVICE_NOT_AVAILABLE", [3] = "CL_COMPILER_NOT_AVAILABLE",
		[4] = "CL_MEM_OBJECT_ALLOCATION_FAILURE", [5] = "CL_OUT_OF_RESOURCES",
		[6] = "CL_OUT_OF_HOST_MEMORY", [11] = "CL_BUILD_PROGRAM_FAILURE",
		[30] = "CL_INVALID_VALUE", [31] = "CL_INVALID_DEVICE_TYPE",
		[32] = "CL_INVALID_PLATFORM", [33] = "CL_INVALID_DEVICE",
		[34] = "CL_INVALID_CONTEXT", [36] = "CL_INVALID_COMMAND_QUEUE",
		[38] = "CL_INVALID_MEM_OBJECT", [43] = "CL_INVALID_BUILD_OPTIONS",
		[44] = "CL_INVALID_PROGRAM", [45] = "CL_INVALID_PROGRAM_EXECUTABLE",
		[46] = "CL_INVALID_KERNEL_NAME", [47] = "CL_INVALID_KERNEL_DEFINITION",
		[48] = "CL_INVALID_KERNEL", [49] = "CL_INVALID_ARG_INDEX",
		[50] = "CL_INVALID_ARG_VALUE", [51] = "CL_INVALID_ARG_SIZE",
		[52] = "CL_INVALID_KERNEL_ARGS", [53] = "CL_INVALID_WORK_DIMENSION",
		[54] = "CL_INVALID_WORK_GROUP_SIZE", [55] = "CL_INVALID_WORK_ITEM_SIZE",
		[56] = "CL_INVALID_GLOBAL_OFFSET", [59] = "CL_INVALID_OPERATION",
		[61] = "CL_INVALID_BUFFER_SIZE", [63] = "CL_INVALID_GLOBAL_WORK_SIZE",
	};
	cl_int i = -code;
	if (code == -1001)
		return "CL_PLATFORM_NOT_FOUND_KHR: no OpenCL platform is installed";
	if (i >= 0 && i < (cl_int)(sizeof(names) / sizeof(*names)) && names[i])
		return names[i];
	return "unknown OpenCL error";
}

/* Write "call: NAME (code)" into "err" and return -1. */
static int fail(char *err, size_t len, const char *call, cl_int code)
{
	snprintf(err, len, "%s: %s (%d)", call, cl_error_name(code), (int)code);
	return -1;
}

struct rt_cl_device {
	cl_device_id id;
	cl_context context;
	cl_command_queue queue;
	char name[256];
	char compiler[512];
	int64_t max_threads;
	int64_t local_bytes;
	int compute_units;
	size_t max_sizes[3];
};

#define MAX_KERNELS 256

struct rt_cl_program {
	rt_cl_device *dev;
	cl_program program;
	int nkernels;
	char *names[MAX_KERNELS];
	cl_kernel kernels[MAX_KERNELS];
};

struct rt_cl_buffer {
	rt_cl_device *dev;
	cl_mem mem;
	size_t bytes;
};

/* Find the device to use: the first GPU of any platform, else the first
 * device of the first platform that has one. */
static int pick_device(cl_device_id *out, char *err, size_t len)
{
	cl_platform_id platforms[16];
	cl_uint n = 0;
	cl_int r = api.GetPlatformIDs(16, platforms, &n);
	if (r != CL_SUCCESS && n == 0)
		return fail(err, len, "clGetPlatformIDs", r);
	if (n == 0) {
		snprintf(err, len, "no OpenCL platform (is an ICD such as "
			"pocl-opencl-icd installed?)");
		return -1;
	}
	for (int want_gpu = 1; want_gpu >= 0; want_gpu--)
		for (cl_uint i = 0; i < n && i < 16; i++) {
			cl_uint found = 0;
			if (api.GetDeviceIDs(platforms[i], want_gpu ? CL_DEVICE_TYPE_GPU
					: CL_DEVICE_TYPE_ALL, 1, out, &found) == CL_SUCCESS && found)
				return 0;
		}
	snprintf(err, len, "no OpenCL device on %u platform%s", n, n == 1 ? "" : "s");
	return -1;
}

/* Write into d->compiler the platform's version, then the driver's:
 * "OpenCL 3.0 PoCL 3.1+debian  Linux, ... LLVM 15.0.6, ... / 3.1+debian". */
static void describe_compiler(rt_cl_device *d)
{
	char platform[384] = "", driver[96] = "";
	cl_platform_id id = NULL;
	if (api.GetDeviceInfo(d->id, CL_DEVICE_PLATFORM, sizeof(id), &id, NULL) ==
	    CL_SUCCESS && id)
		api.GetPlatformInfo(id, CL_PLATFORM_VERSION, sizeof(platform) - 1, platform,
			NULL);
	api.GetDeviceInfo(d->id, CL_DRIVER_VERSION, sizeof(driver) - 1, driver, NULL);
	snprintf(d->compiler, sizeof(d->compiler), "%s / %s", platform, driver);
}

rt_cl_device *rt_cl_open(char *err, size_t len)
{
	pthread_once(&api_once, load_api);
	if (!api.loaded) {
		snprintf(err, len, "%s", api.error);
		return NULL;
	}
	rt_cl_device *d = calloc(1, sizeof(*d));
	cl_int r = CL_SUCCESS;
	if (pick_device(&d->id, err, len)) {
		free(d);
		return NULL;
	}
	size_t wg = 0;
	api.GetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof(d->name) - 1, d->name, NULL);
	describe_compiler(d);
	api.GetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(wg), &wg, NULL);
	api.GetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(d->max_sizes),
		d->max_sizes, NULL);
	d->max_threads = (int64_t)wg;
	uint64_t local = 0;
	api.GetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local, NULL);
	d->local_bytes = (int64_t)local;
	uint32_t units = 0;
	api.GetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, NULL);
	d->compute_units = (int)units;
	d->context = api.CreateContext(NULL, 1, &d->id, NULL, NULL, &r);
	if (d->context)
		d->queue = api.CreateCommandQueue(d->context, d->id, 0, &r);
	if (!d->queue) {
		fail(err, len, d->context ? "clCreateCommandQueue" : "clCreateContext", r);
		rt_cl_close(d);
		return NULL;
	}
	return d;
}

void rt_cl_close(rt_cl_device *d)
{
	if (!d)
		return;
	if (d->queue)
		api.ReleaseCommandQueue(d->queue);
	if (d->context)
		api.ReleaseContext(d->context);
	free(d);
}

const char *rt_cl_device_name(const rt_cl_device *d)
{
	return d->name;
}

const char *rt_cl_compiler(const rt_cl_device *d)
{
	return d->compiler;
}

int64_t rt_cl_max_threads(const rt_cl_device *d)
{
	return d->max_threads;
}

int64_t rt_cl_local_bytes(const rt_cl_device *d)
{
	return d->local_bytes;
}

int rt_cl_compute_units(const rt_cl_device *d)
{
	return d->compute_units;
}

/* Append the build log of "p" to "err" (of size "len", holding text). */
static void append_build_log(rt_cl_program *p, char *err, size_t len)
{
	size_t used = strlen(err), size = 0;
	api.GetProgramBuildInfo(p->program, p->dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL,
		&size);
	char *log = malloc(size + 1);
	if (!log || api.GetProgramBuildInfo(p->program, p->dev->id,
			CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS)
		size = 0;
	if (log)
		log[size] = 0;
	if (used + 1 < len)
		snprintf(err + used, len - used, "\n%s", log ? log : "");
	free(log);
}

rt_cl_program *rt_cl_build(rt_cl_device *d, const char *source, char *err,
	size_t len)
{
	cl_int r = CL_SUCCESS;
	rt_cl_program *p = calloc(1, sizeof(*p));
	p->dev = d;
	p->program = api.CreateProgramWithSource(d->context, 1, &source, NULL, &r);
	if (!p->program) {
		fail(err, len, "clCreateProgramWithSource", r);
		free(p);
		return NULL;
	}
	r = api.BuildProgram(p->program, 1, &d->id, "", NULL, NULL);
	if (r != CL_SUCCESS) {
		fail(err, len, "clBuildProgram", r);
		append_build_log(p, err, len);
		rt_cl_program_free(p);
		return NULL;
	}
	return p;
}

void rt_cl_program_free(rt_cl_program *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nkernels; i++) {
		api.ReleaseKernel(p->kernels[i]);
		free(p->names[i]);
	}
	api.ReleaseProgram(p->program);
	free(p);
}

rt_cl_buffer *rt_cl_alloc(rt_cl_device *d, size_t bytes, char *err, size_t len)
{
	cl_int r = CL_SUCCESS;
	rt_cl_buffer *b = calloc(1, sizeof(*b));
	b->dev = d;
	b->bytes = bytes ? bytes : 1;
	b->mem = api.CreateBuffer(d->context, CL_MEM_READ_WRITE, b->bytes, NULL, &r);
	if (!b->mem) {
		fail(err, len, "clCreateBuffer", r);
		free(b);
		return NULL;
	}
	return b;
}

void rt_cl_free(rt_cl_buffer *b)
{
	if (!b)
		return;
	api.ReleaseMemObject(b->mem);
	free(b);
}

int rt_cl_write(rt_cl_buffer *b, const void *src, size_t bytes, char *err,
	size_t len)
{
	if (bytes == 0)
		return 0;
	cl_int r = api.EnqueueWriteBuffer(b->dev->queue, b->mem, CL_TRUE, 0, bytes, src,
		0, NULL, NULL);
	return r == CL_SUCCESS ? 0 : fail(err, len, "clEnqueueWriteBuffer", r);
}

int rt_cl_read(rt_cl_buffer *b, void *dst, size_t bytes, char *err, size_t len)
{
	if (bytes == 0)
		return 0;
	cl_int r = api.EnqueueReadBuffer(b->dev->queue, b->mem, CL_TRUE, 0, bytes, dst,
		0, NULL, NULL);
	return r == CL_SUCCESS ? 0 : fail(err, len, "clEnqueueReadBuffer", r);
}

/* Return the kernel "name" of "p", created on first use; NULL after
 * writing the error. */
static cl_kernel find_kernel(rt_cl_program *p, const char *name, char *err,
	size_t len)
{
	for (int i = 0; i < p->nkernels; i++)
		if (strcmp(p->names[i], name) == 0)
			return p->kernels[i];
	if (p->nkernels == MAX_KERNELS) {
		snprintf(err, len, "more than %d kernels in one program", MAX_KERNELS);
		return NULL;
	}
	cl_int r = CL_SUCCESS;
	cl_kernel k = api.CreateKernel(p->program, name, &r);
	if (!k) {
		fail(err, len, "clCreateKernel", r);
		return NULL;
	}
	p->names[p->nkernels] = strdup(name);
	p->kernels[p->nkernels++] = k;
	return k;
}

/* Check the block "block" against the limits of "d". */
static int check_block(const rt_cl_device *d, const int64_t block[3], char *err,
	size_t len)
{
	int64_t threads = block[0] * block[1] * block[2];
	if (d->max_threads > 0 && threads > d->max_threads) {
		snprintf(err, len, "a block of %lld threads is more than the device's "
			"maximum of %lld (CL_DEVICE_MAX_WORK_GROUP_SIZE)", (long long)threads,
			(long long)d->max_threads);
		return -1;
	}
	for (int i = 0; i < 3; i++)
		if (d->max_sizes[i] > 0 && (uint64_t)block[i] > d->max_sizes[i]) {
			snprintf(err, len, "a block of %lld threads along dimension %d is more "
				"than the device's maximum of %zu", (long long)block[i], i,
				d->max_sizes[i]);
			return -1;
		}
	return 0;
}

int rt_cl_launch(rt_cl_program *p, const char *name, int n,
	rt_cl_buffer *const *bufs, const int64_t grid[3], const int64_t block[3],
	char *err, size_t len)
{
	cl_kernel k = find_kernel(p, name, err, len);
	if (!k || check_block(p->dev, block, err, len))
		return -1;
	for (int i = 0; i < n; i++) {
		cl_int r = api.SetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &bufs[i]->mem);
		if (r != CL_SUCCESS)
			return fail(err, len, "clSetKernelArg", r);
	}
	size_t global[3], local[3];
	for (int i = 0; i < 3; i++) {
		global[i] = (size_t)(grid[i] * block[i]);
		local[i] = (size_t)block[i];
	}
	cl_int r = api.EnqueueNDRangeKernel(p->dev->queue, k, 3, NULL, global, local, 0,
		NULL, NULL);
	return r == CL_SUCCESS ? 0 : fail(err, len, "clEnqueueNDRangeKernel", r);
}

int rt_cl_finish(rt_cl_device *d, char *err, size_t len)
{
	cl_int r = api.Finish(d->queue);
	return r == CL_SUCCESS ? 0 : fail(err, len, "clFinish", r);
}
