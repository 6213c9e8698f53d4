#include "tuner/fork_map.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/fdio.h"

/* A message on a pipe: a job's number (-1: the end of a call's jobs)
 * and the length of the bytes that follow. */
typedef struct frame {
	int32_t i;
	uint32_t len;
} frame;

typedef struct copy {
	pid_t pid;
	int to, from;     /* pipes: jobs to the copy, results from it */
	bool alive;
} copy;

/* How long a copy may stay silent while the parent waits for its
 * results before it is taken for stuck and ended (a copy forked while
 * another thread of the process held a lock without a fork handler, such
 * as ASan's allocator, waits on that lock forever): longer than any
 * call's jobs take. */
#define DEFAULT_PATIENCE_S 300

struct tune_fork_pool {
	int workers;
	copy *copies;
	double patience_s;
};

/* Write the frame of job "i" and its "len" bytes "buf" to "fd". */
static int send_frame(int fd, int32_t i, const void *buf, size_t len)
{
	frame f = { i, buf && len <= UINT32_MAX ? (uint32_t)len : 0 };
	return te_write_all(fd, &f, sizeof(f)) || (f.len && te_write_all(fd, buf, f.len)) ? -1 : 0;
}

/* Read a frame from "fd" into "*f" and its bytes into "*buf" (malloc'd,
 * NULL when empty); return 0, or -1 at the end of the pipe or when out
 * of memory. */
static int recv_frame(int fd, frame *f, void **buf)
{
	*buf = NULL;
	if (te_read_all(fd, f, sizeof(*f)))
		return -1;
	if (f->len == 0)
		return 0;
	*buf = malloc(f->len);
	if (!*buf || te_read_all(fd, *buf, f->len)) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return 0;
}

/* A job a copy holds: its frame, input and result. */
typedef struct held_job {
	frame f;
	void *in, *out;
	size_t len;
} held_job;

/* One call's jobs in a copy. */
typedef struct jobs {
	int n, cap;
	held_job *job;
} jobs;

static void jobs_clear(jobs *j)
{
	for (int i = 0; i < j->n; i++) {
		free(j->job[i].in);
		free(j->job[i].out);
	}
	j->n = 0;
}

static int jobs_add(jobs *j, frame f, void *in)
{
	if (j->n == j->cap) {
		int cap = j->cap ? 2 * j->cap : 64;
		held_job *more = realloc(j->job, (size_t)cap * sizeof(*more));
		if (!more)
			return -1;
		j->job = more;
		j->cap = cap;
	}
	j->job[j->n++] = (held_job){ f, in, NULL, 0 };
	return 0;
}

/* In a copy: take a call's jobs from "in" up to its end (frame -1), run
 * them, and answer each on "out" with its result, then the end: the
 * copy reads a whole call before it writes, so that neither side waits
 * for the other on a full pipe.  Exit, without the parent's exit
 * handlers, when "in" closes. */
static void __attribute__((noreturn)) serve(int in, int out, tune_map_job job, void *arg)
{
	signal(SIGINT, SIG_IGN);
	jobs j = { 0 };
	for (;;) {
		frame f;
		void *input;
		if (recv_frame(in, &f, &input))
			_exit(0);
		if (f.i >= 0) {
			if (jobs_add(&j, f, input))
				_exit(1);
			continue;
		}
		for (int k = 0; k < j.n; k++) {
			held_job *h = &j.job[k];
			job(h->f.i, h->in, h->f.len, arg, &h->out, &h->len);
		}
		for (int k = 0; k < j.n; k++)
			if (send_frame(out, j.job[k].f.i, j.job[k].out, j.job[k].len))
				_exit(1);
		if (send_frame(out, -1, NULL, 0))
			_exit(1);
		jobs_clear(&j);
	}
}

tune_fork_pool *tune_fork_pool_new(int workers, tune_map_job job, void *arg)
{
	if (workers < 2)
		return NULL;
	tune_fork_pool *pool = calloc(1, sizeof(*pool));
	copy *c = pool ? calloc((size_t)workers, sizeof(*c)) : NULL;
	if (!c) {
		free(pool);
		return NULL;
	}
	pool->copies = c;
	pool->patience_s = DEFAULT_PATIENCE_S;
	for (int k = 0; k < workers; k++) {
		int to[2], from[2];
		if (pipe2(to, O_CLOEXEC))
			break;
		if (pipe2(from, O_CLOEXEC)) {
			close(to[0]);
			close(to[1]);
			break;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(to[1]);
			close(from[0]);
			for (int j = 0; j < k; j++) {
				close(c[j].to);
				close(c[j].from);
			}
			serve(to[0], from[1], job, arg);
		}
		close(to[0]);
		close(from[1]);
		if (pid < 0) {
			close(to[1]);
			close(from[0]);
			break;
		}
		c[k] = (copy){ pid, to[1], from[0], true };
		pool->workers = k + 1;
	}
	if (pool->workers < 2) {
		tune_fork_pool_free(pool);
		return NULL;
	}
	return pool;
}

/* Stop using copy "c": close its pipes, end it (an idle copy would end
 * at the end of its pipe, a stuck one never) and reap it. */
static void retire(copy *c)
{
	if (!c->alive)
		return;
	close(c->to);
	close(c->from);
	kill(c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->alive = false;
}

/* Return whether "fd" has something to read within "seconds". */
static bool readable_within(int fd, double seconds)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int r;
	while ((r = poll(&p, 1, (int)(seconds * 1000))) < 0 && errno == EINTR)
		;
	return r > 0;
}

/* Send copy "k" of "pool" its jobs of the "n" "in", then the end; a
 * copy that died is retired, and the SIGPIPE its pipe raises is taken
 * here instead of ending the tuner. */
static void send_jobs(tune_fork_pool *pool, int k, int n, const void *const *in,
	const size_t *in_len)
{
	copy *c = &pool->copies[k];
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	for (int i = k; c->alive && i < n; i += pool->workers)
		if (send_frame(c->to, i, in[i], in_len[i]))
			retire(c);
	if (c->alive && send_frame(c->to, -1, NULL, 0))
		retire(c);
	sigset_t pending;
	const struct timespec now = { 0, 0 };
	if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
	    !sigismember(&old, SIGPIPE))
		sigtimedwait(&pipe_set, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Read copy "k"'s results into "out" and "len" up to its end frame. */
static void take_results(tune_fork_pool *pool, int k, int n, void **out, size_t *len)
{
	copy *c = &pool->copies[k];
	while (c->alive) {
		frame f;
		void *buf;
		if (!readable_within(c->from, pool->patience_s) || recv_frame(c->from, &f, &buf)) {
			retire(c);
			return;
		}
		if (f.i < 0)
			return;
		if (f.i >= n || f.i % pool->workers != k || out[f.i]) {
			free(buf);
			retire(c);
			return;
		}
		out[f.i] = buf;
		len[f.i] = buf ? f.len : 0;
	}
}

void tune_fork_map(tune_fork_pool *pool, tune_map_job job, void *arg, int n,
	const void *const *in, const size_t *in_len, void **out, size_t *len)
{
	memset(out, 0, (size_t)n * sizeof(*out));
	memset(len, 0, (size_t)n * sizeof(*len));
	int workers = pool ? pool->workers : 1;
	bool *here = calloc((size_t)workers, sizeof(*here));
	if (!here)
		return;
	for (int k = 0; k < workers; k++) {
		here[k] = !pool || !pool->copies[k].alive;
		if (!here[k])
			send_jobs(pool, k, n, in, in_len);
	}
	for (int k = 0; k < workers; k++)
		if (!here[k])
			take_results(pool, k, n, out, len);
	for (int k = 0; k < workers; k++)
		if (here[k])
			for (int i = k; i < n; i += workers)
				job(i, in[i], in_len[i], arg, &out[i], &len[i]);
	free(here);
}

void tune_fork_pool_set_patience(tune_fork_pool *pool, double seconds)
{
	if (pool && seconds > 0)
		pool->patience_s = seconds;
}

void tune_fork_pool_free(tune_fork_pool *pool)
{
	if (!pool)
		return;
	for (int k = 0; k < pool->workers; k++)
		retire(&pool->copies[k]);
	free(pool->copies);
	free(pool);
}
