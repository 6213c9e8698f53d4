/* The schedule an op gets from a command's options: the best record of
 * its workload on a target in the record store (--db), replayed, or the
 * default schedule when there is none or it no longer replays; else a
 * trace file (--sched); else the default schedule of the target's kind. */
#ifndef TESSEL_TOOLS_BEST_SCHEDULE_H
#define TESSEL_TOOLS_BEST_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>

#include "tessel/te.h"

typedef struct sch_state sch_state;
typedef struct tune_task tune_task;
typedef struct tune_record tune_record;

/* Return the schedule of the bound "op" from the best "ok" record of
 * ("op", "target") (NULL target: this machine) in the record store
 * "db_path" (NULL: tune_db_default_path), or the default schedule (of
 * the target's kind: the default GPU schedule for opencl) when the store
 * has no such record or its trace no longer replays.  "said" (of
 * size "saidlen") receives one line, without newline, that says which:
 * "best record #4 from PATH (median 0.0263 ms)", "no record for this
 * workload/target in PATH; default schedule", ...  Return NULL after
 * printing the error (a missing or refused store, a bad target). */
sch_state *cli_load_best_schedule(tessel_ctx *ctx, tessel_op *op,
	const char *target, const char *db_path, char *said, size_t saidlen);

/* How the code this build makes of a record's trace compares with the
 * code the record measured. */
typedef enum cli_record_code {
	CLI_CODE_UNKNOWN,   /* the record has no code key (measured before
	                     * tessel stored them), or its trace no longer
	                     * replays or compiles */
	CLI_CODE_SAME,      /* the same code key: the same code */
	CLI_CODE_OTHER      /* this build (or compiler) makes other code */
} cli_record_code;

/* Replay the trace of record "r" on the op of "task" and make its code
 * key as the tuner's measurer does (on the CPU from the C source, the
 * compiler and its flags, compiling nothing; on CUDA from NVRTC's cubin,
 * no device needed; on OpenCL from the source and the device's compiler
 * versions: tune_code_key), then compare it with the record's.
 * Errors are not reported: they make the answer unknown. */
cli_record_code cli_compare_record_code(const tune_task *task,
	const tune_record *r);

/* Return the schedule of the bound "op" that a command's options give:
 * with "db_path", cli_load_best_schedule; else the trace file "sched"
 * ("trace PATH" in "said"); else the default schedule, of a GPU when
 * "gpu" ("default schedule", "default GPU schedule").  Return NULL after
 * printing the error. */
sch_state *cli_load_chosen_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched,
	const char *db_path, const char *target, bool gpu, char *said, size_t saidlen);

#endif
