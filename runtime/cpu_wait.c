/* The run-queue wait of this process's threads, from /proc. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/cpu_wait.h"

/* Read the second field (run_delay) of the schedstat file of thread
 * "tid" under the open task directory "dir" into *"ns".  Return 0, or -1
 * when it cannot be read (the thread may have exited meanwhile). */
static int thread_wait_ns(int dir, const char *tid, uint64_t *ns)
{
	char path[300], text[128];
	snprintf(path, sizeof(path), "%s/schedstat", tid);
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	text[len] = '\0';
	uint64_t run, wait;
	return sscanf(text, "%" SCNu64 " %" SCNu64, &run, &wait) == 2 ? (*ns = wait, 0) : -1;
}

int rt_cpu_wait_ns(uint64_t *ns)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	uint64_t sum = 0;
	int threads = 0;
	for (struct dirent *e; (e = readdir(d));) {
		uint64_t w;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (thread_wait_ns(dirfd(d), e->d_name, &w) == 0) {
			sum += w;
			threads++;
		}
	}
	closedir(d);
	if (threads == 0)
		return -1;
	*ns = sum;
	return 0;
}
