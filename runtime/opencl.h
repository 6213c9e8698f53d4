/* An OpenCL device: libOpenCL.so.1 loaded with dlopen at run time (so
 * that tessel starts, and its tests pass, where there is none), one
 * context and in-order queue, programs built from source, buffers, and
 * launches on a grid of work-groups.  PoCL runs it on any CPU, which is
 * how GPU-style schedules are checked without a GPU.
 *
 * Every function that can fail returns 0 (or an object), or -1 (NULL)
 * with a message in "err" of size "len" naming the OpenCL call and its
 * error code ("clBuildProgram: CL_BUILD_PROGRAM_FAILURE"), followed by
 * the build log for a program that does not build. */
#ifndef TESSEL_RT_OPENCL_H
#define TESSEL_RT_OPENCL_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_cl_device rt_cl_device;
typedef struct rt_cl_program rt_cl_program;
typedef struct rt_cl_buffer rt_cl_buffer;

/* Open the first GPU of the platforms, else their first device of any
 * kind (PoCL's CPU device). */
rt_cl_device *rt_cl_open(char *err, size_t len);
void rt_cl_close(rt_cl_device *d);
/* Return the device's name ("cpu-haswell-...", "NVIDIA H100"). */
const char *rt_cl_device_name(const rt_cl_device *d);
/* Return what builds its programs: the platform's version, then the
 * driver's ("OpenCL 3.0 PoCL 3.1+debian ... LLVM 15.0.6 ... / 3.1+debian"),
 * the part of a program's code key (codegen/compile.h) that its source
 * does not give. */
const char *rt_cl_compiler(const rt_cl_device *d);
/* Return CL_DEVICE_MAX_WORK_GROUP_SIZE: the most threads per block. */
int64_t rt_cl_max_threads(const rt_cl_device *d);
/* Return CL_DEVICE_LOCAL_MEM_SIZE: the most shared (__local) bytes per
 * block, 0 when the device does not say. */
int64_t rt_cl_local_bytes(const rt_cl_device *d);
/* Return CL_DEVICE_MAX_COMPUTE_UNITS (streaming multiprocessors, or the
 * CPU cores PoCL runs on), 0 when the device does not say. */
int rt_cl_compute_units(const rt_cl_device *d);

/* Build "source" (OpenCL C) for "d". */
rt_cl_program *rt_cl_build(rt_cl_device *d, const char *source, char *err,
	size_t len);
void rt_cl_program_free(rt_cl_program *p);

/* A device buffer of "bytes" bytes (at least 1). */
rt_cl_buffer *rt_cl_alloc(rt_cl_device *d, size_t bytes, char *err, size_t len);
void rt_cl_free(rt_cl_buffer *b);
/* Copy "bytes" bytes from the host to "b", or back; both wait. */
int rt_cl_write(rt_cl_buffer *b, const void *src, size_t bytes, char *err,
	size_t len);
int rt_cl_read(rt_cl_buffer *b, void *dst, size_t bytes, char *err, size_t len);

/* Enqueue the kernel "name" of "p" with the "n" buffers "bufs" as its
 * arguments on a grid of "grid" blocks of "block" threads (x, y, z).
 * Refused when a block has more threads than the device allows. */
int rt_cl_launch(rt_cl_program *p, const char *name, int n,
	rt_cl_buffer *const *bufs, const int64_t grid[3], const int64_t block[3],
	char *err, size_t len);
/* Wait until everything enqueued on "d" is done. */
int rt_cl_finish(rt_cl_device *d, char *err, size_t len);

#endif
