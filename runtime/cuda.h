/* A CUDA device through the driver API: libcuda.so.1 loaded with dlopen
 * at run time (so that tessel starts, and its tests pass, where there is
 * no GPU), its primary context, its limits as a GPU target, modules
 * loaded from cubins, buffers, launches on a grid of blocks, and launch
 * times from CUDA events.
 *
 * Every function that can fail returns 0 (or an object), or -1 (NULL)
 * with a message in "err" of size "len" naming the driver call and its
 * error ("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE: invalid argument");
 * without a driver, "CUDA driver not found (libcuda.so.1): ...". */
#ifndef TESSEL_RT_CUDA_H
#define TESSEL_RT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/gpu_target.h"

typedef struct rt_cuda_device rt_cuda_device;
typedef struct rt_cuda_module rt_cuda_module;
typedef struct rt_cuda_buffer rt_cuda_buffer;

/* Return 0 when the driver library loads with every entry point tessel
 * uses, else -1 with the reason; the driver is not initialized (cuInit),
 * so a process may still fork workers that open the device. */
int rt_cuda_probe(char *err, size_t len);

/* Open the device "ordinal" (0: the first) and make its primary context
 * current in this thread. */
rt_cuda_device *rt_cuda_open(int ordinal, char *err, size_t len);
void rt_cuda_close(rt_cuda_device *d);
/* Return the device's name, architecture and limits. */
const rt_gpu_target *rt_cuda_target(const rt_cuda_device *d);

/* Load the cubin "image" into "d". */
rt_cuda_module *rt_cuda_load(rt_cuda_device *d, const void *image, char *err,
	size_t len);
void rt_cuda_module_free(rt_cuda_module *m);

/* A device buffer of "bytes" bytes (at least 1). */
rt_cuda_buffer *rt_cuda_alloc(rt_cuda_device *d, size_t bytes, char *err,
	size_t len);
void rt_cuda_free(rt_cuda_buffer *b);
/* A device buffer of "bytes" bytes holding a copy of "src" (NULL:
 * uninitialized). */
rt_cuda_buffer *rt_cuda_upload(rt_cuda_device *d, const void *src, size_t bytes,
	char *err, size_t len);
/* Copy "bytes" bytes from the host to "b", or back; both wait. */
int rt_cuda_write(rt_cuda_buffer *b, const void *src, size_t bytes, char *err,
	size_t len);
int rt_cuda_read(rt_cuda_buffer *b, void *dst, size_t bytes, char *err,
	size_t len);

/* Launch the kernel "name" of "m" with the "n" buffers "bufs" as its
 * pointer arguments on a grid of "grid" blocks of "block" threads
 * (x, y, z), on the default stream. */
int rt_cuda_launch(rt_cuda_module *m, const char *name, int n,
	rt_cuda_buffer *const *bufs, const int64_t grid[3], const int64_t block[3],
	char *err, size_t len);
/* Wait until everything launched on "d" is done. */
int rt_cuda_sync(rt_cuda_device *d, char *err, size_t len);

/* The device address of "b", for libraries that take raw pointers
 * (cuBLAS, cuDNN). */
uint64_t rt_cuda_buffer_address(const rt_cuda_buffer *b);
/* Enqueue a copy of "bytes" bytes from "src" to "dst" on the default
 * stream, without waiting. */
int rt_cuda_copy_async(rt_cuda_buffer *dst, const rt_cuda_buffer *src, size_t bytes,
	char *err, size_t len);

/* Evict the device's L2 cache: write a buffer of twice its size (8 MiB
 * at least; allocated on first use, freed with the device) and wait. */
int rt_cuda_flush_l2(rt_cuda_device *d, char *err, size_t len);

/* Record an event before and after "launch"("arg") (which returns 0 or
 * -1 with its own error), wait, and write the time between them in
 * seconds into "*seconds". */
int rt_cuda_time(rt_cuda_device *d, int (*launch)(void *arg), void *arg,
	double *seconds, char *err, size_t len);

#endif
