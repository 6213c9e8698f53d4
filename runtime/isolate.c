#include "runtime/isolate.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void *rt_shared_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void rt_shared_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Return a descriptor that polls readable when "pid" ends (Linux
 * pidfd_open, 5.3), or -1 where the kernel has none. */
static int child_exit_fd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/* Sleep until the child behind "fd" ends or "deadline" passes, without
 * waking in between; return 1 when it ended, 0 at the deadline, -1 on
 * error. */
static int sleep_on_fd(int fd, double deadline)
{
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, (int)ceil(left * 1e3));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* Wait for "pid" for at most "timeout_s" seconds (0: forever); return 1
 * with "*status" set when it ended, 0 on timeout, -1 on error.  The
 * waiting parent must not wake while the child runs: the child is often
 * a timed kernel on every core, and a parent waking every few hundred
 * microseconds took a core from it (docs/tuner.md, "Measurement").
 * Without pidfd, waitpid is polled at intervals growing to 10 ms. */
static int wait_child(pid_t pid, double timeout_s, int *status)
{
	if (timeout_s <= 0)
		return waitpid(pid, status, 0) == pid ? 1 : -1;
	double deadline = now_s() + timeout_s;
	int fd = child_exit_fd(pid);
	if (fd >= 0) {
		int r = sleep_on_fd(fd, deadline);
		close(fd);
		if (r <= 0)
			return r;
		return waitpid(pid, status, 0) == pid ? 1 : -1;
	}
	long pause_ns = 100000;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_s() > deadline)
			return 0;
		nanosleep(&(struct timespec){ 0, pause_ns }, NULL);
		pause_ns = pause_ns < 5000000 ? 2 * pause_ns : 10000000;
	}
}

/* In the child: let a fatal signal kill the process, whatever handlers
 * the parent installed (a sanitizer, a test framework), so that the
 * parent sees the signal rather than the handler's exit status. */
static void restore_fatal_signals(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
}

/* The status of a child that ended with "status" (waitpid's), with what
 * happened in "err" unless it exited 0. */
static rt_run_status ended(int status, char *err, size_t errlen)
{
	if (WIFSIGNALED(status)) {
		snprintf(err, errlen, "killed by signal %d (%s)", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
		return RT_RUN_CRASHED;
	}
	if (WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "failed (exit status %d)", WEXITSTATUS(status));
		return RT_RUN_FAILED;
	}
	return RT_RUN_OK;
}

/* Kill "pid" and reap it. */
static void kill_child(pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

rt_run_status rt_run_isolated(int (*fn)(void *), void *arg, double timeout_s,
	char *err, size_t errlen)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork failed: %s", strerror(errno));
		return RT_RUN_ERROR;
	}
	if (pid == 0) {
		restore_fatal_signals();
		int r = fn(arg);
		_exit(r < 0 || r > 255 ? 255 : r);
	}
	int status = 0;
	int r = wait_child(pid, timeout_s, &status);
	if (r == 0) {
		kill_child(pid);
		snprintf(err, errlen, "did not finish within %.3g s; killed", timeout_s);
		return RT_RUN_TIMEOUT;
	}
	if (r < 0) {
		snprintf(err, errlen, "waiting for the child failed: %s", strerror(errno));
		return RT_RUN_ERROR;
	}
	return ended(status, err, errlen);
}

/* ---- the worker that stays ------------------------------------------------ */

/* What the parent sends on the worker's socket: run a job, or exit. */
enum { WORKER_RUN = 'r', WORKER_QUIT = 'q' };

/* How long a worker that replied with a failure, or closed its socket,
 * gets to exit before it is killed. */
#define WORKER_EXIT_S 5.0

struct rt_worker {
	int (*serve)(void *);
	void *arg;
	pid_t pid;      /* 0: none */
	int fd;         /* the parent's end of the socket */
	int starts;
};

rt_worker *rt_worker_new(int (*serve)(void *), void *arg)
{
	rt_worker *w = calloc(1, sizeof(*w));
	if (w) {
		w->serve = serve;
		w->arg = arg;
		w->fd = -1;
	}
	return w;
}

int rt_worker_starts(const rt_worker *w)
{
	return w->starts;
}

/* In the worker: run a job for each WORKER_RUN on "fd" and reply with
 * its status byte; exit on WORKER_QUIT, when the parent is gone, or
 * after a job that did not return 0. */
static void __attribute__((noreturn)) serve_jobs(const rt_worker *w, int fd)
{
	for (;;) {
		unsigned char c;
		ssize_t n = recv(fd, &c, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1 || c != WORKER_RUN)
			_exit(0);
		int r = w->serve(w->arg);
		unsigned char reply = r < 0 || r > 255 ? 255 : (unsigned char)r;
		if (send(fd, &reply, 1, MSG_NOSIGNAL) != 1 || reply != 0)
			_exit(reply);
	}
}

/* Fork the worker of "w".  Return 0, or -1 with the reason in "err". */
static int start_worker(rt_worker *w, char *err, size_t errlen)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		snprintf(err, errlen, "socketpair failed: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork failed: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		restore_fatal_signals();
		serve_jobs(w, sv[1]);
	}
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	w->starts++;
	return 0;
}

/* Forget the worker of "w", which has ended or been killed and reaped. */
static void forget_worker(rt_worker *w)
{
	close(w->fd);
	w->fd = -1;
	w->pid = 0;
}

/* Reap the worker of "w", which is ending (killed when it takes longer
 * than WORKER_EXIT_S), and return how it ended, with why in "err". */
static rt_run_status reap_worker(rt_worker *w, char *err, size_t errlen)
{
	int status = 0;
	int r = wait_child(w->pid, WORKER_EXIT_S, &status);
	rt_run_status st;
	if (r == 1) {
		st = ended(status, err, errlen);
		if (st == RT_RUN_OK) {
			snprintf(err, errlen, "the worker exited during a job");
			st = RT_RUN_FAILED;
		}
	} else {
		kill_child(w->pid);
		snprintf(err, errlen, "the worker did not exit after its job; killed");
		st = RT_RUN_FAILED;
	}
	forget_worker(w);
	return st;
}

/* Send "c" to the worker of "w".  Return 0, or -1 when it is gone. */
static int send_to_worker(rt_worker *w, unsigned char c)
{
	ssize_t n;
	do
		n = send(w->fd, &c, 1, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

rt_run_status rt_worker_run(rt_worker *w, double timeout_s, char *err, size_t errlen)
{
	char ignored[64];
	if (w->pid && send_to_worker(w, WORKER_RUN))
		reap_worker(w, ignored, sizeof(ignored));
	if (!w->pid) {
		if (start_worker(w, err, errlen))
			return RT_RUN_ERROR;
		if (send_to_worker(w, WORKER_RUN)) {
			reap_worker(w, ignored, sizeof(ignored));
			snprintf(err, errlen, "the worker ended before its first job");
			return RT_RUN_ERROR;
		}
	}
	int r = timeout_s > 0 ? sleep_on_fd(w->fd, now_s() + timeout_s) : 1;
	if (r == 0) {
		kill_child(w->pid);
		forget_worker(w);
		snprintf(err, errlen, "did not finish within %.3g s; killed", timeout_s);
		return RT_RUN_TIMEOUT;
	}
	unsigned char reply;
	ssize_t n = -1;
	while (r > 0 && (n = recv(w->fd, &reply, 1, 0)) < 0 && errno == EINTR)
		;
	if (n < 0) {
		snprintf(err, errlen, "waiting for the worker failed: %s", strerror(errno));
		kill_child(w->pid);
		forget_worker(w);
		return RT_RUN_ERROR;
	}
	if (n == 1 && reply == 0)
		return RT_RUN_OK;
	return reap_worker(w, err, errlen);
}

void rt_worker_free(rt_worker *w)
{
	if (!w)
		return;
	if (w->pid) {
		int status;
		if (send_to_worker(w, WORKER_QUIT) || wait_child(w->pid, 1.0, &status) != 1)
			kill_child(w->pid);
		close(w->fd);
	}
	free(w);
}
