#include "runtime/isolate.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		snprintf(err, errlen, "did not finish within %.3g s; killed", timeout_s);
		return RT_RUN_TIMEOUT;
	}
	if (r < 0) {
		snprintf(err, errlen, "waiting for the child failed: %s", strerror(errno));
		return RT_RUN_ERROR;
	}
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
