/* Whole reads and writes on file descriptors (ir/fdio.c), retried after
 * signals and short transfers: the compiler's temporary files
 * (codegen/compile.c) and the pipes of the search's copies
 * (tuner/fork_map.c). */
#ifndef TESSEL_IR_FDIO_H
#define TESSEL_IR_FDIO_H

#include <stddef.h>

/* Write the "len" bytes of "data" to "fd"; return 0, or -1 (errno set;
 * a write of nothing counts as a failure). */
int te_write_all(int fd, const void *data, size_t len);

/* Read exactly "len" bytes from "fd" into "buf"; return 0, or -1 at the
 * end of the file or on an error. */
int te_read_all(int fd, void *buf, size_t len);

#endif
