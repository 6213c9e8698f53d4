/* How long the threads of this process have waited for a CPU: the time
 * each spent runnable but not running (the run_delay of Linux's
 * /proc/self/task/TID/schedstat), summed over the threads alive.  Taken
 * before and after a timed span, it tells whether another program held
 * the CPUs the timed code needed: a measurement on a busy machine. */
#ifndef TESSEL_RT_CPU_WAIT_H
#define TESSEL_RT_CPU_WAIT_H

#include <stdint.h>

/* Store in *"ns" the run-queue wait, in nanoseconds, of every thread of
 * the calling process since it started.  Return 0, or -1 when the kernel
 * does not report it (no /proc, or schedstat disabled). */
int rt_cpu_wait_ns(uint64_t *ns);

#endif
