#include "runtime/isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

/* Wait for "pid" for at most "timeout_s" seconds (0: forever); return 1
 * with "*status" set when it ended, 0 on timeout, -1 on error. */
static int wait_child(pid_t pid, double timeout_s, int *status)
{
	double deadline = now_s() + timeout_s;
	struct timespec pause = { 0, 200000 };
	for (;;) {
		pid_t r = waitpid(pid, status, timeout_s > 0 ? WNOHANG : 0);
		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (timeout_s > 0 && now_s() > deadline)
			return 0;
		if (timeout_s > 0)
			nanosleep(&pause, NULL);
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
