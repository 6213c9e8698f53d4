/* Running code that may crash or hang in a child process, with shared
 * memory for its results: how `tessel run` and the tuner's runner keep a
 * faulty kernel from taking the tool down. */
#ifndef TESSEL_RT_ISOLATE_H
#define TESSEL_RT_ISOLATE_H

#include <stddef.h>

typedef enum rt_run_status {
	RT_RUN_OK = 0,        /* the child returned 0 */
	RT_RUN_FAILED = 1,    /* the child returned another value */
	RT_RUN_CRASHED = 2,   /* the child died of a signal */
	RT_RUN_TIMEOUT = 3,   /* the child ran past the time limit; killed */
	RT_RUN_ERROR = 4      /* fork or wait failed */
} rt_run_status;

/* Return "bytes" of zeroed memory shared with child processes forked
 * after this call (page-aligned), or NULL. */
void *rt_shared_alloc(size_t bytes);
void rt_shared_free(void *p, size_t bytes);

/* Run "fn"("arg") in a forked child and wait at most "timeout_s" seconds
 * (0: no limit).  The child sees a copy of the parent's memory except
 * shared allocations, which it can write results to.  On anything but
 * RT_RUN_OK, "err" says what happened ("killed by SIGSEGV", ...). */
rt_run_status rt_run_isolated(int (*fn)(void *), void *arg, double timeout_s,
	char *err, size_t errlen);

#endif
