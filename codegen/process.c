/* Running a helper program with a time limit (codegen/process.h). */
#include "codegen/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double cg_monotonic_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Return whether "path" is an executable regular file. */
static bool is_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* Write into "path" of size "len" where the program "name" is: "name"
 * itself when it holds a slash, else the first match in $PATH.  Return 0,
 * or -1 when it is not found. */
int cg_find_program(const char *name, char *path, size_t len)
{
	if (strchr(name, '/')) {
		snprintf(path, len, "%s", name);
		return is_executable(path) ? 0 : -1;
	}
	const char *dirs = getenv("PATH");
	dirs = dirs && *dirs ? dirs : "/usr/local/bin:/usr/bin:/bin";
	while (*dirs) {
		size_t dir_len = strcspn(dirs, ":");
		int n = snprintf(path, len, "%.*s/%s", (int)dir_len, dirs, name);
		if (dir_len > 0 && n > 0 && (size_t)n < len && is_executable(path))
			return 0;
		dirs += dir_len + (dirs[dir_len] == ':');
	}
	return -1;
}

/* Start "argv" (the program at "path") with stdout and stderr on
 * "out_fd", stdin on /dev/null, default signal handling and an empty
 * signal mask, in a new process group; store its id in "pid" and return
 * 0, or an errno value. */
static int spawn_in_group(const char *path, char *const argv[], int out_fd,
	pid_t *pid)
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
	posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
				 POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	int rc = posix_spawn(pid, path, &actions, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	return rc;
}

/* Keep the first CG_OUTPUT_MAX bytes of the "len" bytes at "data" in "r". */
static void keep_output(cg_run_result *r, const char *data, size_t len)
{
	size_t room = CG_OUTPUT_MAX - r->output_len;
	size_t take = len < room ? len : room;
	memcpy(r->output + r->output_len, data, take);
	r->output_len += take;
	r->output[r->output_len] = 0;
	r->output_truncated |= take < len;
}

/* Return the milliseconds left until "deadline", rounded up, at least 0. */
static int ms_until(double deadline)
{
	double left = deadline - cg_monotonic_s();
	if (left <= 0)
		return 0;
	return left > INT_MAX / 1000.0 ? INT_MAX : (int)(left * 1000) + 1;
}

/* Read "fd" into "r" until end of file; return false when "deadline"
 * passes first. */
static bool read_until_eof(int fd, double deadline, cg_output_sink sink,
	void *arg, cg_run_result *r)
{
	char chunk[4096];
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ready = poll(&p, 1, ms_until(deadline));
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0)
			return false;
		ssize_t got = ready < 0 ? 0 : read(fd, chunk, sizeof chunk);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return true;
		keep_output(r, chunk, (size_t)got);
		if (sink)
			sink(chunk, (size_t)got, arg);
	}
}

/* Reap "pid" into "status"; return false when "deadline" passes first. */
static bool wait_until(pid_t pid, double deadline, int *status)
{
	const struct timespec pause = { 0, 1000000 };
	for (;;) {
		pid_t done = waitpid(pid, status, WNOHANG);
		if (done == pid || (done < 0 && errno != EINTR))
			return true;
		if (cg_monotonic_s() >= deadline)
			return false;
		nanosleep(&pause, NULL);
	}
}

/* Kill the process group led by "pid" and reap "pid" into "status". */
static void kill_group(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		continue;
}

/* Run "argv" (the program at "path") for at most "timeout_s" seconds,
 * collecting how it ended and the start of its output in "r".  Return 0,
 * or an errno value when it cannot be started. */
int cg_run_captured(const char *path, char *const argv[], double timeout_s,
	cg_output_sink sink, void *arg, cg_run_result *r)
{
	memset(r, 0, sizeof *r);
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return errno;
	pid_t pid;
	int rc = spawn_in_group(path, argv, fds[1], &pid);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return rc;
	}
	double deadline = cg_monotonic_s() + timeout_s;
	r->timed_out = !read_until_eof(fds[0], deadline, sink, arg, r) ||
		       !wait_until(pid, deadline, &r->status);
	if (r->timed_out)
		kill_group(pid, &r->status);
	close(fds[0]);
	return 0;
}

/* Describe in "buf" of size "len" how the process of "r" ended. */
const char *cg_describe_end(const cg_run_result *r, char *buf, size_t len)
{
	if (WIFEXITED(r->status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(r->status));
	else if (WIFSIGNALED(r->status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(r->status));
	else
		snprintf(buf, len, "status %d", r->status);
	return buf;
}
