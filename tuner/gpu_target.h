/* A GPU device as the tuner sees it (tuner/gpu_target.c): what the
 * sketches need to keep their samples launchable (threads and shared
 * bytes per block), read from the device's runtime when a task is made,
 * and printed into the target string that records store.  OpenCL's are
 * read from its device; CUDA's from the first device when the driver and
 * a device of the architecture asked for are there, else from the table
 * of the architecture (runtime/gpu_target.h). */
#ifndef TESSEL_TUNER_GPU_TARGET_H
#define TESSEL_TUNER_GPU_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/gpu_target.h"

#define TUNE_GPU_NAME_LEN 128

typedef struct tune_gpu_target {
	char device[TUNE_GPU_NAME_LEN]; /* spaces and quotes made '_' */
	int compute_units;
	int64_t max_threads;            /* per block, at most SCH_MAX_THREADS */
	int64_t shared_bytes;           /* per block, at most SCH_MAX_SHARED_BYTES */
	int sm;                         /* CUDA: the architecture, 90 for
	                                 * sm_90; 0 for OpenCL */
	char compiler[512];             /* OpenCL: what builds its programs
	                                 * (rt_cl_compiler), part of their
	                                 * code keys but not of the target
	                                 * string; "" for CUDA, whose code
	                                 * keys hash the cubin */
} tune_gpu_target;

/* Describe the OpenCL device rt_cl_open picks in "t", asking it in a
 * child process (an OpenCL runtime initialized in the tuner would not
 * survive the fork of each measurement worker), once per process: later
 * calls return the first answer, so that a process may open the device
 * itself after its first task is made.  Limits the device does
 * not report, or reports above the schedule layer's, are the schedule
 * layer's.  Return 0, or -1 with the reason in "err" of size "errlen". */
int tune_gpu_target_opencl(tune_gpu_target *t, char *err, size_t errlen);

/* Describe the CUDA architecture sm_"sm" in "t" from NVIDIA's table
 * (rt_gpu_target_for_sm), without a device: the device is named "sm_NN",
 * its compute units are the table's SM count (0: only a device knows
 * it), its limits the table's, and none above the schedule layer's, as
 * for OpenCL.  Return 0, or -1 with the reason in "err" of size "errlen"
 * (an architecture not in the table). */
int tune_gpu_target_cuda(int sm, tune_gpu_target *t, char *err, size_t errlen);

/* Describe the CUDA target for the architecture sm_"sm" (0: the device's,
 * or sm_90 without one) in "t": from the first CUDA device when it is of
 * that architecture (its name, SM count, threads and shared memory per
 * block, within the schedule layer's limits), else as
 * tune_gpu_target_cuda does from the table.  Return 0, or -1 with the
 * reason in "err" (an architecture not in the table). */
int tune_gpu_target_cuda_device(int sm, tune_gpu_target *t, char *err, size_t errlen);

/* Read the first CUDA device's description into "d", asking it in a child
 * process (the driver initialized in the tuner would not survive the fork
 * of its workers) once per process.  Return 0, or -1 with the reason in
 * "err" (no driver, no device). */
int tune_cuda_device(rt_gpu_target *d, char *err, size_t errlen);

/* Write the canonical string of "t" for the target kind "kind" into
 * "buf" of size "len": "KIND -device=NAME -units=N -threads=N
 * -shared=BYTES", with " -arch=sm_NN" after KIND for CUDA.  Return the
 * length of the full string, as snprintf. */
int tune_gpu_target_print(const char *kind, const tune_gpu_target *t, char *buf,
	size_t len);

#endif
