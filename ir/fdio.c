#include "ir/fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

/* Write ("out") or read the "len" bytes at "p" to or from "fd" whole,
 * through short transfers and interruptions; 0, or -1 at an error or the
 * end of the file. */
static int transfer_all(int fd, char *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int te_write_all(int fd, const void *data, size_t len)
{
	return transfer_all(fd, (char *)data, len, true);
}

int te_read_all(int fd, void *buf, size_t len)
{
	return transfer_all(fd, buf, len, false);
}
