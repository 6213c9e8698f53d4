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

/* A worker process that runs one job after another and is replaced when
 * a job ends it: what the tuner's GPU runners use, so that a device is
 * opened once per batch rather than once per candidate.  The worker is
 * forked on its first job and sees the caller's memory as it was then;
 * each job's inputs and results go through shared memory the caller
 * allocated before. */
typedef struct rt_worker rt_worker;

/* A worker that runs "serve"("arg") for each job; none is forked yet.
 * "serve" returns 0 to go on serving, any other value to end the worker
 * after the job (a job that left its process unfit for the next one).
 * NULL when out of memory. */
rt_worker *rt_worker_new(int (*serve)(void *), void *arg);

/* Run one job in the worker, forking one first when there is none, and
 * wait at most "timeout_s" seconds (0: no limit) without waking.  As
 * rt_run_isolated: RT_RUN_OK when "serve" returned 0 (the worker stays),
 * RT_RUN_FAILED when it returned another value or the worker exited,
 * RT_RUN_CRASHED when it died of a signal, RT_RUN_TIMEOUT when it ran
 * past the limit and was killed, RT_RUN_ERROR when no worker could be
 * forked; on anything but RT_RUN_OK the worker is gone, "err" says why,
 * and the next job forks a new one. */
rt_run_status rt_worker_run(rt_worker *w, double timeout_s, char *err, size_t errlen);

/* The processes "w" has forked so far. */
int rt_worker_starts(const rt_worker *w);

/* End the worker (asked to exit, killed when it has not within a second)
 * and free "w"; NULL is a no-op. */
void rt_worker_free(rt_worker *w);

#endif
