/* Running a helper program (the C compiler, the disassembler) with a time
 * limit: through posix_spawn with an argument vector (never a shell), in
 * its own process group so that a timeout kills it with its children,
 * its stdout and stderr read from one pipe. */
#ifndef TESSEL_CG_PROCESS_H
#define TESSEL_CG_PROCESS_H

#include <stdbool.h>
#include <stddef.h>

#define CG_OUTPUT_MAX 2048

/* Receives every chunk of "len" bytes at "data" the program prints. */
typedef void (*cg_output_sink)(const char *data, size_t len, void *arg);

/* How a program ended, and the start of what it printed. */
typedef struct cg_run_result {
	bool timed_out;
	int status;                     /* as waitpid gives it */
	char output[CG_OUTPUT_MAX + 1]; /* the first CG_OUTPUT_MAX bytes */
	size_t output_len;
	bool output_truncated;
} cg_run_result;

/* Seconds on the monotonic clock. */
double cg_monotonic_s(void);

/* Write into "path" of size "len" where the program "name" is: "name"
 * itself when it holds a slash, else the first match in $PATH.  Return 0,
 * or -1 when it is not found. */
int cg_find_program(const char *name, char *path, size_t len);

/* Run "argv" (the program at "path") for at most "timeout_s" seconds,
 * collecting how it ended and the start of its output in "r", and giving
 * all of its output to "sink" (NULL: none) with "arg".  Return 0, or an
 * errno value when it cannot be started. */
int cg_run_captured(const char *path, char *const argv[], double timeout_s,
	cg_output_sink sink, void *arg, cg_run_result *r);

/* Describe in "buf" of size "len" how the program of "r" ended ("exit
 * status 1", "killed by signal 9"); return "buf". */
const char *cg_describe_end(const cg_run_result *r, char *buf, size_t len);

#endif
