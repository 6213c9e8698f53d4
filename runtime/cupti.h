/* Kernel durations from CUPTI's activity records: the time each kernel
 * ran on the device, from its start to its end as the GPU's clock saw
 * them, without the launch overhead and queueing that host timers and
 * CUDA events include.  libcupti is loaded with dlopen when first used
 * (runtime/cuda_lib.h says where it is looked for; $TESSEL_CUPTI names
 * it outright), so that tessel starts without it.  Recording is
 * process-wide, as CUPTI's activity API is: one recording at a time. */
#ifndef TESSEL_RT_CUPTI_H
#define TESSEL_RT_CUPTI_H

#include <stddef.h>

/* Load CUPTI (once) without starting anything.  Return 0, or -1 with why
 * in "err" of size "len". */
int rt_cupti_probe(char *err, size_t len);

/* Start recording the kernels this process runs on any CUDA device.
 * Return 0, or -1 with why (no CUPTI, a recording already started, a
 * CUPTI error). */
int rt_cupti_start(char *err, size_t len);

/* Stop recording, flush CUPTI's buffers, and return the durations in
 * seconds of the kernels that ran since rt_cupti_start, in the order
 * they started, in "*seconds" (malloc'ed; free it) and their number in
 * "*n".  Return 0, or -1 with why (records CUPTI dropped included). */
int rt_cupti_stop(double **seconds, int *n, char *err, size_t len);

#endif
