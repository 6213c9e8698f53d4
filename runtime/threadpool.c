/* A fork-join pool for the parallel loops of generated kernels.
 *
 * Each worker owns a cache line holding its next chunk and a sequence
 * number; the caller writes the chunk, bumps the number and wakes the worker
 * only when it sleeps.  Workers count down "remaining" when done.  Both
 * sides spin for a short while before sleeping on a futex; the "sleeping"
 * flags and the words they guard are accessed in sequentially consistent
 * order, so a wake-up is never lost (store flag, then load word, against
 * store word, then load flag). */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/workspace.h"

#define CACHE_LINE 64
#define SPIN_CHECK_CLOCK_EVERY 64

typedef struct rt_worker {
	_Alignas(CACHE_LINE) atomic_uint job_seq;
	atomic_uint sleeping;
	int64_t begin;
	int64_t end;
	tessel_parallel_body body;
	void *closure;
	rt_pool *pool;
	pthread_t thread;
} rt_worker;

struct rt_pool {
	int num_threads;
	int num_workers;
	int started_workers;
	atomic_long spin_ns;
	atomic_bool stopping;
	pthread_mutex_t submit_lock;
	rt_worker *workers;
	bool bound;                /* rt_pool_bind pinned "caller" */
	pthread_t caller;
	cpu_set_t caller_allowed;  /* its CPUs before, restored at the end */
	_Alignas(CACHE_LINE) atomic_uint remaining;
	atomic_uint caller_sleeping;
};

/* Whether the current thread is running a parallel body (every worker
 * always is): parallel_for calls made there run serially. */
static _Thread_local bool in_parallel_body;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep while the futex word "word" holds "expected" (or until a wake-up). */
static void futex_wait(atomic_uint *word, unsigned expected)
{
	syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected,
		NULL, NULL, 0);
}

/* Wake one thread sleeping on the futex word "word". */
static void futex_wake_one(atomic_uint *word)
{
	syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
		0);
}

/* Return true once "spin_ns" nanoseconds have passed since the first call
 * of a spin loop at iteration "i" (the clock is read every few
 * iterations; "deadline" starts at 0).  Past the first
 * RT_POOL_OVERSUBSCRIBED_SPIN_NS the spin yields at each reading of the
 * clock: free when nothing else waits for the core, and a thread that
 * does (another process's, or a pool with more threads than cores) runs
 * instead of waiting out the spin. */
static bool spin_expired(unsigned i, long spin_ns, uint64_t *deadline)
{
	if (spin_ns <= 0)
		return true;
	cpu_relax();
	if (i % SPIN_CHECK_CLOCK_EVERY)
		return false;
	uint64_t now = monotonic_ns();
	if (!*deadline)
		*deadline = now + (uint64_t)spin_ns;
	if (now >= *deadline)
		return true;
	if (*deadline - now < (uint64_t)spin_ns - RT_POOL_OVERSUBSCRIBED_SPIN_NS &&
	    spin_ns > RT_POOL_OVERSUBSCRIBED_SPIN_NS)
		sched_yield();
	return false;
}

/* Spin until "word" holds a value other than "old" and return true, or
 * return false once "spin_ns" nanoseconds have passed. */
static bool spin_while_equal(atomic_uint *word, unsigned old, long spin_ns)
{
	uint64_t deadline = 0;
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) != old)
			return true;
		if (spin_expired(i, spin_ns, &deadline))
			return false;
	}
}

/* Spin until "word" holds zero and return true, or return false once
 * "spin_ns" nanoseconds have passed. */
static bool spin_until_zero(atomic_uint *word, long spin_ns)
{
	uint64_t deadline = 0;
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) == 0)
			return true;
		if (spin_expired(i, spin_ns, &deadline))
			return false;
	}
}

/* Block until the job sequence number of "w" differs from "seen", spinning
 * first; return the new number. */
static unsigned wait_for_job(rt_worker *w, unsigned seen)
{
	long spin_ns = atomic_load_explicit(&w->pool->spin_ns,
					    memory_order_relaxed);
	if (!spin_while_equal(&w->job_seq, seen, spin_ns)) {
		atomic_store(&w->sleeping, 1);
		while (atomic_load(&w->job_seq) == seen)
			futex_wait(&w->job_seq, seen);
		atomic_store(&w->sleeping, 0);
	}
	return atomic_load_explicit(&w->job_seq, memory_order_acquire);
}

/* Count down the chunks "pool" waits for, waking its caller after the last
 * one if it sleeps. */
static void finish_chunk(rt_pool *pool)
{
	if (atomic_fetch_sub(&pool->remaining, 1) == 1 &&
	    atomic_load(&pool->caller_sleeping))
		futex_wake_one(&pool->remaining);
}

/* The loop of the worker "arg": run each chunk it is given until the pool
 * stops. */
static void *worker_main(void *arg)
{
	rt_worker *w = arg;
	in_parallel_body = true;
	unsigned seen = 0;
	for (;;) {
		seen = wait_for_job(w, seen);
		if (atomic_load(&w->pool->stopping))
			return NULL;
		w->body(w->begin, w->end, w->closure);
		finish_chunk(w->pool);
	}
}

/* Hand the chunk ["begin", "end") of "body" with "closure" to the idle
 * worker "w". */
static void post_chunk(rt_worker *w, int64_t begin, int64_t end,
	tessel_parallel_body body, void *closure)
{
	w->begin = begin;
	w->end = end;
	w->body = body;
	w->closure = closure;
	atomic_fetch_add(&w->job_seq, 1);
	if (atomic_load(&w->sleeping))
		futex_wake_one(&w->job_seq);
}

/* Block until every chunk handed out by the caller of "pool" is done,
 * spinning first. */
static void wait_for_workers(rt_pool *pool)
{
	long spin_ns = atomic_load_explicit(&pool->spin_ns, memory_order_relaxed);
	if (spin_until_zero(&pool->remaining, spin_ns))
		return;
	atomic_store(&pool->caller_sleeping, 1);
	for (unsigned left; (left = atomic_load(&pool->remaining)) != 0;)
		futex_wait(&pool->remaining, left);
	atomic_store(&pool->caller_sleeping, 0);
}

/* Store in "begin" and "end" the bounds of chunk "i" of [0, "n") split
 * into "parts" contiguous chunks whose sizes differ by at most one. */
static void chunk_bounds(int64_t n, int parts, int i, int64_t *begin,
	int64_t *end)
{
	int64_t base = n / parts;
	int64_t extra = n % parts;
	*begin = i * base + (i < extra ? i : extra);
	*end = *begin + base + (i < extra ? 1 : 0);
}

/* Run "body" over [0, "n") on the caller and min("n", threads) - 1 workers
 * of "pool", holding its submit lock. */
static void fork_join(rt_pool *pool, int64_t n, tessel_parallel_body body,
	void *closure)
{
	int parts = n < pool->num_threads ? (int)n : pool->num_threads;
	int64_t begin, end;
	atomic_store(&pool->remaining, (unsigned)(parts - 1));
	for (int i = 1; i < parts; i++) {
		chunk_bounds(n, parts, i, &begin, &end);
		post_chunk(&pool->workers[i - 1], begin, end, body, closure);
	}
	chunk_bounds(n, parts, 0, &begin, &end);
	in_parallel_body = true;
	body(begin, end, closure);
	in_parallel_body = false;
	wait_for_workers(pool);
}

/* Run "body" over [0, "n"); see threadpool.h. */
void rt_parallel_for(const tessel_kernel_env *env, int64_t n,
	tessel_parallel_body body, void *closure)
{
	if (n <= 0)
		return;
	rt_pool *pool = env ? env->pool : NULL;
	if (!pool || pool->num_workers == 0 || n == 1 || in_parallel_body) {
		body(0, n, closure);
		return;
	}
	pthread_mutex_lock(&pool->submit_lock);
	fork_join(pool, n, body, closure);
	pthread_mutex_unlock(&pool->submit_lock);
}

/* Stop the started workers of "pool" and wait for them to exit. */
static void stop_workers(rt_pool *pool)
{
	atomic_store(&pool->stopping, true);
	for (int i = 0; i < pool->started_workers; i++) {
		atomic_fetch_add(&pool->workers[i].job_seq, 1);
		futex_wake_one(&pool->workers[i].job_seq);
	}
	for (int i = 0; i < pool->started_workers; i++)
		pthread_join(pool->workers[i].thread, NULL);
	pool->started_workers = 0;
}

/* Start the workers of "pool" with every signal blocked in them, so that
 * signals reach the program's own threads; return 0, or -1 (with the
 * started ones stopped) when a thread cannot be created. */
static int start_workers(rt_pool *pool)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = 0;
	for (int i = 0; i < pool->num_workers && rc == 0; i++) {
		rt_worker *w = &pool->workers[i];
		w->pool = pool;
		rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc == 0)
			pool->started_workers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		stop_workers(pool);
	return rc == 0 ? 0 : -1;
}

/* Return the spin time a new pool of "num_threads" starts with:
 * $TESSEL_POOL_SPIN_NS when it is a non-negative integer, else
 * RT_POOL_DEFAULT_SPIN_NS, or RT_POOL_OVERSUBSCRIBED_SPIN_NS for more
 * threads than CPUs. */
static long default_spin_ns(int num_threads)
{
	const char *v = getenv("TESSEL_POOL_SPIN_NS");
	char *end;
	long ns = v && *v ? strtol(v, &end, 10) : -1;
	if (v && *v && !*end && ns >= 0)
		return ns;
	return num_threads <= rt_num_cpus() ? RT_POOL_DEFAULT_SPIN_NS :
		RT_POOL_OVERSUBSCRIBED_SPIN_NS;
}

/* Return a pool of "num_threads" threads; see threadpool.h. */
rt_pool *rt_pool_new(int num_threads)
{
	if (num_threads <= 0)
		num_threads = rt_num_cpus();
	rt_pool *pool = aligned_alloc(CACHE_LINE, sizeof *pool);
	if (!pool)
		return NULL;
	memset(pool, 0, sizeof *pool);
	pool->num_threads = num_threads;
	pool->num_workers = num_threads - 1;
	atomic_init(&pool->spin_ns, default_spin_ns(num_threads));
	size_t bytes = (size_t)(pool->num_workers ? pool->num_workers : 1) *
		       sizeof(rt_worker);
	pool->workers = aligned_alloc(CACHE_LINE, bytes);
	if (!pool->workers || pthread_mutex_init(&pool->submit_lock, NULL)) {
		free(pool->workers);
		free(pool);
		return NULL;
	}
	memset(pool->workers, 0, bytes);
	if (start_workers(pool) < 0) {
		rt_pool_free(pool);
		return NULL;
	}
	return pool;
}

/* Stop, join and free "pool"; see threadpool.h. */
void rt_pool_free(rt_pool *pool)
{
	if (!pool)
		return;
	stop_workers(pool);
	if (pool->bound && pthread_equal(pool->caller, pthread_self()))
		pthread_setaffinity_np(pool->caller, sizeof(pool->caller_allowed),
			&pool->caller_allowed);
	pthread_mutex_destroy(&pool->submit_lock);
	free(pool->workers);
	free(pool);
}

int rt_pool_num_threads(const rt_pool *pool)
{
	return pool->num_threads;
}

/* Pin the threads of "pool" to CPUs; see threadpool.h. */
int rt_pool_bind(rt_pool *pool)
{
	cpu_set_t allowed;
	if (pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed))
		return -1;
	if (!pool->bound) {
		pool->bound = true;
		pool->caller = pthread_self();
		pool->caller_allowed = allowed;
	}
	int cpus[CPU_SETSIZE], n = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n == 0)
		return -1;
	int here = sched_getcpu(), first = 0;
	for (int k = 0; k < n; k++)
		if (cpus[k] == here)
			first = k;
	int r = 0;
	for (int i = 0; i <= pool->started_workers; i++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpus[(first + i) % n], &one);
		pthread_t t = i == 0 ? pthread_self() : pool->workers[i - 1].thread;
		if (pthread_setaffinity_np(t, sizeof(one), &one))
			r = -1;
	}
	return r;
}

/* Set the spin time of "pool" to "spin_ns"; see threadpool.h. */
void rt_pool_set_spin(rt_pool *pool, long spin_ns)
{
	atomic_store(&pool->spin_ns, spin_ns < 0 ? 0 : spin_ns);
}

static void *env_workspace_alloc(const tessel_kernel_env *env, size_t bytes)
{
	(void)env;
	return rt_workspace_alloc(bytes);
}

static void env_workspace_pop(const tessel_kernel_env *env, int count)
{
	(void)env;
	rt_workspace_pop(count);
}

/* Fill "env" for "pool"; see threadpool.h. */
void rt_pool_env(rt_pool *pool, tessel_kernel_env *env)
{
	env->num_threads = pool ? pool->num_threads : 1;
	env->parallel_for = rt_parallel_for;
	env->pool = pool;
	env->workspace_alloc = env_workspace_alloc;
	env->workspace_pop = env_workspace_pop;
}
