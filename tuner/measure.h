/* Measuring candidates (tuner/measure.c): a builder that compiles a batch
 * of loop programs in parallel (one compiler job per core, through the
 * content-addressed kernel cache), and a runner that executes each in an
 * isolated worker process with a time limit, times it (warm-up, repeats
 * until a minimum time, median; optionally flushing caches), and keeps
 * its outputs.  A candidate that fails to build, crashes, hangs or
 * computes a wrong result gets an error class and tuning goes on: the
 * worker that died is replaced.  On the CPU each run forks a worker; on
 * a GPU one worker serves the candidates of a batch, opening the device
 * once, and is replaced after any candidate that fails (rt_worker).
 *
 * Every candidate that becomes the best so far (faster than every checked
 * candidate of this measurer, and than the time given to
 * tune_measurer_set_best) is checked against the float64 reference
 * interpreter on the measurer's seeded random inputs (te_input_seed, as
 * `tessel run --seed`) before it is accepted; the reference is computed
 * once, on the first such check.  The outputs live in shared memory
 * allocated once per measurer; each worker fills them with all-ones bytes
 * before it runs, so that an element a kernel never writes fails. */
#ifndef TESSEL_TUNER_MEASURE_H
#define TESSEL_TUNER_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/compile.h"
#include "ir/loop.h"
#include "runtime/timer.h"
#include "tuner/code_features.h"
#include "tuner/task.h"

typedef enum tune_error {
	TUNE_OK,
	TUNE_ERR_LOWER,    /* the schedule did not lower (set by the caller) */
	TUNE_ERR_BUILD,    /* the C compiler refused the kernel */
	TUNE_ERR_CRASH,    /* the worker died of a signal */
	TUNE_ERR_TIMEOUT,  /* the worker ran past the time limit; killed */
	TUNE_ERR_RUNTIME,  /* the kernel returned an error, or the worker failed */
	TUNE_ERR_WRONG,    /* outputs differ from the interpreter's */
	TUNE_ERR_COUNT
} tune_error;

/* The name stored in records: "ok", "lower", "build", "crash", "timeout",
 * "runtime", "wrong". */
const char *tune_error_name(tune_error e);

typedef struct tune_measure_opts {
	int build_jobs;        /* compilers at once (0: one per CPU this
	                        * process may run on) */
	int threads;           /* kernel threads (0: the target's cores) */
	double timeout_s;      /* per candidate run, > 0: the timer stops
	                        * there (timer.timeout_s, when set, only if
	                        * shorter) and the worker is killed 0.5 s
	                        * later */
	rt_timer_opts timer;   /* warm-up, repeats, minimum time, flush */
	int passes;            /* >= 1: times each candidate is timed
	                        * (TUNE_DEFAULT_PASSES): on the CPU the last
	                        * of two or more times the batch together,
	                        * in turns in one worker, and gives the
	                        * result; otherwise each pass runs each
	                        * candidate in a fresh worker, the batch in
	                        * turn forward and backward, and the fastest
	                        * pass is the result */
	uint64_t seed;         /* of the random inputs */
	int64_t check_full_cost; /* the check of a new best evaluates the op in
	                        * full up to this cost (0:
	                        * TE_CHECK_FULL_COST), else at chosen
	                        * elements (te_check_reference) */
	bool read_code;        /* CPU: read the code features of what is
	                        * built (tune_result.code), with the
	                        * disassembler cg_code_stats_tool finds */
} tune_measure_opts;

/* On GPUs, a candidate whose warm-up or first timed run is this many
 * times slower than the best so far is measured by that run alone
 * (rt_timer_opts, give_up_s), in the first pass only: a session on a
 * lent GPU has minutes, and sampled matmuls 4096^3 took 0.7 to 3.2 s a
 * run on an H200 (four runs each before). */
#define TUNE_GIVE_UP_FACTOR 10

/* Two passes: each candidate alone (crashes, hangs, a first time), then
 * the batch together.  On the 2-vCPU build VM one kernel timed in
 * separate workers a few seconds apart varies by tens of percent; timed
 * in turns with the rest of its batch, by a few (tuner/round_robin.h,
 * docs/tuner.md, "Measurement"). */
#define TUNE_DEFAULT_PASSES 2

/* Return the defaults: a build job per core, the target's cores, 10 s,
 * 1 warm-up, at least 3 repeats and 0.05 s, no flush, two passes,
 * seed 1. */
tune_measure_opts tune_measure_opts_default(void);

typedef struct tune_result {
	tune_error error;
	char msg[256];         /* why, for errors ("" when ok) */
	double median_s;       /* NAN unless ok: the lowest of the passes'
	                        * medians */
	double min_s;          /* NAN unless ok: the fastest repeat of all */
	int runs;              /* repeats timed, over all passes */
	bool not_run;          /* stopped before it was measured: nothing
	                        * is known of it (error TUNE_ERR_RUNTIME) */
	bool checked;          /* compared with the interpreter (and passed
	                        * when ok) */
	double rel_error;      /* of the check, NAN when not checked */
	double cpu_wait;       /* how long the kernel's threads waited for a
	                        * CPU while it was timed (summed over its
	                        * threads), over the time it was timed; NAN
	                        * when unknown (not a CPU task, no schedstat) */
	int attempts;          /* runs in a worker: one a pass, more when
	                        * a measurement was disturbed or it was run
	                        * again for its check */
	int retakes;           /* measurements taken again because they were
	                        * disturbed */
	char code_key[CG_CODE_KEY_LEN]; /* what it ran (codegen/compile.h):
	                        * the kernel cache's key of its object (CPU)
	                        * or the hash of its source and cubin (CUDA);
	                        * "" when not built or for OpenCL */
	bool has_code;         /* "code" holds the features of its compiled
	                        * code (tune_measure_opts.read_code) */
	float code[TUNE_CODE_FEATURES];
} tune_result;

/* A CPU measurement whose threads waited for CPUs (rt_timing_disturbed)
 * is taken again in a fresh worker, up to this many times, and the least
 * disturbed kept. */
#define TUNE_DISTURBED_RETRIES 2

/* Whether "r" is a measurement still disturbed after its retries. */
bool tune_result_disturbed(const tune_result *r);

typedef struct tune_measurer tune_measurer;

/* Return 0 when candidates of "task" can run here, else -1 with the
 * reason in "err" of size "errlen": CUDA tasks need the driver
 * (libcuda.so.1) and a first device of the task's architecture, asked in
 * a child process (without them they are only sampled, compiled and
 * checked, tune_cuda_check in tuner/runner_cuda.h).  tune_measurer_new
 * refuses the same tasks. */
int tune_measure_can_run(const tune_task *task, char *err, size_t errlen);

/* Make a measurer for "task" (kept by pointer: it must outlive the
 * measurer) with the options "o" (NULL: the defaults): allocates the
 * seeded random inputs.  NULL with the reason in "err" of size "errlen". */
tune_measurer *tune_measurer_new(const tune_task *task, const tune_measure_opts *o,
	char *err, size_t errlen);
void tune_measurer_free(tune_measurer *m);

/* Make "seconds" the best time so far: candidates slower than it need no
 * check (a best known from the records, already checked when it was
 * measured, or a best confirmed by a second measurement). */
void tune_measurer_set_best(tune_measurer *m, double seconds);

/* The least time of timed runs each candidate's measurement takes from
 * now on (tune_measure_opts.timer.min_total_s at first), and setting it
 * ("seconds" >= 0): on the CPU, when the batch is timed together, the
 * time of that pass (the passes alone stay short); otherwise of every
 * pass. */
double tune_measurer_min_time(const tune_measurer *m);
void tune_measurer_set_min_time(tune_measurer *m, double seconds);

/* Write into "key" the code key (tune_result.code_key) a measurer of
 * "task" compiling C with "cc" (NULL: the defaults) records for "p":
 * on the CPU the kernel cache's key of its object, without compiling
 * it; for OpenCL the hash of its source and of the device's compiler
 * (tune_gpu_target.compiler); for CUDA the hash of its source and the
 * cubin NVRTC makes of it.  Return 0, or -1 with the error in "ctx". */
int tune_code_key(const tune_task *task, const cg_compile_opts *cc, tessel_ctx *ctx,
	const loop_prog *p, char key[CG_CODE_KEY_LEN]);
/* tune_code_key for the task and compile options of "m". */
int tune_measurer_code_key(const tune_measurer *m, tessel_ctx *ctx,
	const loop_prog *p, char key[CG_CODE_KEY_LEN]);

/* Build the "n" programs "progs" in parallel, then run and time each in an
 * isolated worker (the batch's, on a GPU), checking every one that becomes the best; fill
 * "out"[i] for progs[i].  A NULL program is skipped (its result is left
 * as the caller set it); one whose arguments are not the op's inputs and
 * outputs (dtype, shape, dense strides) is TUNE_ERR_BUILD.  Return 0, or
 * -1 when the measurer itself failed (no candidate's fault: out of
 * memory, fork failed, a GPU its worker could not open), with a message
 * in out[0].msg.  Each candidate
 * is timed in "passes" passes (tune_measure_opts).  Those that run
 * candidates alone take the batch in turn forward and backward so that a
 * slow phase of the machine does not fall on the same candidates twice;
 * a candidate that fails in any pass keeps that error.  On the CPU, with
 * two passes or more and no cache flush, the candidates that ran alone
 * without error (for at most 0.01 s of repeats each) are then timed
 * together in one worker, and each new best, in batch order, runs alone
 * once more for the outputs its check compares; otherwise the check
 * follows a candidate's last pass.
 * Stops early, with the rest marked TUNE_ERR_RUNTIME "not run:
 * interrupted" and not_run (candidates whose passes were not all taken
 * included), when *"stop" (may be NULL) becomes true; it is polled
 * before each compilation and each run (candidates that already failed
 * to build keep that error). */
int tune_measure_batch(tune_measurer *m, loop_prog *const *progs, int n,
	tune_result *out, volatile const int *stop);

/* Build the "n" programs "progs" as tune_measure_batch builds them (in
 * parallel, through the kernel cache, so that measuring them later
 * compiles nothing) without running them, and fill each result "out[i]":
 * TUNE_ERR_BUILD when it does not build, else its code features when
 * tune_measurer_reads_code.  A NULL program is skipped.  Return 0, or -1
 * when the build jobs could not start (the reason in out[0].msg). */
int tune_build_batch(tune_measurer *m, loop_prog *const *progs, int n,
	tune_result *out, volatile const int *stop);

/* Whether "m" reads the code features of what it builds: CPU tasks
 * whose options ask for it (read_code), when the disassembler
 * (cg_code_stats_tool) is found. */
bool tune_measurer_reads_code(const tune_measurer *m);

/* How many candidates "m" built whose code it could not read although it
 * reads code (they have no code features), with in "why" the reason for
 * the last of them ("" when none). */
int tune_measurer_code_unread(const tune_measurer *m, const char **why);

/* The worker processes "m" has forked so far. */
int tune_measurer_workers_started(const tune_measurer *m);

/* Seconds tune_measure_batch has spent so far: building its candidates,
 * running them (the checks included), and checking new bests against
 * the interpreter (the reference's first computation included); of the
 * running, on GPUs, the workers' opening of the device and the runner's
 * work per candidate (loading, copying, timing, copying back), and for
 * every target the timed runs themselves (runs x median). */
typedef struct tune_measure_times {
	double build_s, run_s, check_s;
	double open_s, runner_s, timed_s;
} tune_measure_times;

tune_measure_times tune_measurer_times(const tune_measurer *m);

#endif
