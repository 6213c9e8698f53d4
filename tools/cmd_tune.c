/* `tessel tune`: search schedules of an op (tuner/search.h), keeping
 * every measurement in the record store, with a progress bar on a
 * terminal and one line per batch otherwise. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tuner/db.h"
#include "tuner/search.h"
#include "tuner/task.h"

static const char tune_help[] =
	"usage: tessel tune SPEC [--set NAME=VALUE,...] --trials N [--db PATH]\n"
	"                   [--target TARGET] [--timeout S] [--seed S] [--batch N]\n"
	"                   [--threads N] [--min-time S] [--passes N] [--flush]\n"
	"                   [--early-stop N] [--epsilon E] [--jobs N]\n"
	"                   [--other-records N] [--shortlist K] [--runoff K]\n"
	"                   [--verbose]\n"
	"\n"
	"Search for a fast schedule of an op on the CPU or the OpenCL device:\n"
	"sketches of the op's stages sampled and evolved under a learned cost\n"
	"model, N candidates compiled and measured in isolated processes (a\n"
	"crash or a hang past --timeout S, default 10, is recorded and tuning\n"
	"goes on), each new best checked against the reference interpreter.\n"
	"Every measurement is stored in the record store PATH (default:\n"
	"$TESSEL_DB, else ~/.cache/tessel/records.db); a re-run resumes without\n"
	"measuring any program twice, but for records another build measured\n"
	"that this build makes other code of (their code key differs), which it\n"
	"measures again first. Ctrl-C stops after committing what was\n"
	"measured. TARGET is a CPU target string (default: this machine) or\n"
	"opencl: the device `tessel run --target opencl` uses, with the GPU\n"
	"sketches, kernels built by clBuildProgram and timed to clFinish.\n"
	"cuda and cuda:sm_NN: the first CUDA GPU (libcuda.so.1; refused without\n"
	"it), candidates compiled by NVRTC for the architecture, those ptxas says\n"
	"cannot launch rejected, the rest timed by CUPTI (the kernels' own\n"
	"durations), the L2 evicted before each run; a candidate ten times\n"
	"slower than the best is timed by one run.\n"
	"--early-stop N ends the search after N trials without a better time\n"
	"(default 300; 0: never); it also ends, saying so, when no program is\n"
	"left that was not measured (a small op's space). --epsilon E is the\n"
	"fraction of each batch kept for exploration (default 0.1): each such\n"
	"pick is the best-scored candidate of the schedule structure (the trace\n"
	"without its numbers) measured least so far. --min-time is the measured\n"
	"time per candidate and pass (default 0.05 s). Each candidate is timed\n"
	"in --passes N passes (default 2): on the CPU it first runs alone in a\n"
	"fresh worker (briefly, to catch a crash or a hang), then the last pass\n"
	"times the whole batch in one worker, in turns, so that a slow moment of\n"
	"the machine slows all candidates alike (with --flush, and on GPUs, each\n"
	"pass runs each candidate alone and the fastest pass is kept). --jobs N\n"
	"is how many processes compile the candidates and make each population\n"
	"(default: one per CPU this process may use); the populations do not\n"
	"depend on it. The cost model trains on every record of the op in the\n"
	"store, over a prior model trained once on a sample of at most\n"
	"--other-records N (default 4096; 0: none) of the records of other\n"
	"workloads there.\n"
	"With --shortlist K (CPU; default 0: off), each round compiles the\n"
	"best-scored K batches' worth of candidates, reads their machine code\n"
	"(objdump: instructions, FMAs, vector loads and stores, stack accesses,\n"
	"loops) and, once 16 records have it, orders them again by a second\n"
	"model of the program and those counts, which picks the batch; each\n"
	"round takes about twice the compilations.\n"
	"At the end (unless interrupted) the --runoff K fastest records of the\n"
	"op in the store (default 8; 0: none), distinct programs, are measured\n"
	"again together for ten times --min-time each: of many noisy\n"
	"measurements the fastest is partly the luckiest. The run-off is stored\n"
	"and its fastest is the best from then on.\n"
	"`tessel best` and `tessel run --db` use the result.\n";

typedef struct tune_args {
	const char *spec, *db, *target;
	cli_set set;
	tune_search_opts o;
	bool have_trials, verbose;
} tune_args;

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
	signal(SIGINT, SIG_DFL);
}

static int parse_seed(const char *v, uint64_t *seed)
{
	char *end;
	errno = 0;
	unsigned long long s = strtoull(v, &end, 10);
	if (!*v || *end || errno || v[0] == '-')
		return cli_fail("--seed: '%s' is not a non-negative integer", v);
	*seed = s;
	return 0;
}

static int parse_tune_option(tune_args *a, int argc, char **argv, int *i)
{
	bool missing = false;
	const char *v;
	tune_search_opts *o = &a->o;
	if ((v = cli_option(argc, argv, i, "--set", &missing)))
		return cli_set_parse(&a->set, v);
	if ((v = cli_option(argc, argv, i, "--db", &missing))) {
		a->db = v;
		return 0;
	}
	if ((v = cli_option(argc, argv, i, "--target", &missing))) {
		a->target = v;
		return 0;
	}
	if ((v = cli_option(argc, argv, i, "--trials", &missing))) {
		a->have_trials = true;
		if (cli_parse_count(v, "--trials", 1, 1000000, &o->trials))
			return -1;
		return 0;
	}
	if ((v = cli_option(argc, argv, i, "--batch", &missing)))
		return cli_parse_count(v, "--batch", 1, 4096, &o->batch);
	if ((v = cli_option(argc, argv, i, "--jobs", &missing))) {
		if (cli_parse_count(v, "--jobs", 1, 1024, &o->evolve_jobs))
			return -1;
		o->measure.build_jobs = o->evolve_jobs;
		return 0;
	}
	if ((v = cli_option(argc, argv, i, "--threads", &missing)))
		return cli_parse_count(v, "--threads", 0, 1024, &o->measure.threads);
	if ((v = cli_option(argc, argv, i, "--epsilon", &missing)))
		return cli_parse_fraction(v, "--epsilon", &o->epsilon);
	if ((v = cli_option(argc, argv, i, "--other-records", &missing)))
		return cli_parse_count(v, "--other-records", 0, 1000000, &o->other_rows);
	if ((v = cli_option(argc, argv, i, "--shortlist", &missing)))
		return cli_parse_count(v, "--shortlist", 0, 64, &o->code_shortlist);
	if ((v = cli_option(argc, argv, i, "--runoff", &missing)))
		return cli_parse_count(v, "--runoff", 0, 64, &o->runoff);
	if ((v = cli_option(argc, argv, i, "--early-stop", &missing)))
		return cli_parse_count(v, "--early-stop", 0, 1000000, &o->early_stop);
	if ((v = cli_option(argc, argv, i, "--seed", &missing))) {
		if (parse_seed(v, &o->seed))
			return -1;
		o->measure.seed = o->seed;
		return 0;
	}
	if ((v = cli_option(argc, argv, i, "--timeout", &missing))) {
		if (cli_parse_seconds(v, "--timeout", &o->measure.timeout_s))
			return -1;
		return o->measure.timeout_s > 0 ? 0 : cli_fail("--timeout must be positive");
	}
	if ((v = cli_option(argc, argv, i, "--min-time", &missing)))
		return cli_parse_seconds(v, "--min-time", &o->measure.timer.min_total_s);
	if ((v = cli_option(argc, argv, i, "--passes", &missing)))
		return cli_parse_count(v, "--passes", 1, 100, &o->measure.passes);
	if (strcmp(argv[*i], "--flush") == 0) {
		o->measure.timer.flush_cache = true;
		return 0;
	}
	if (strcmp(argv[*i], "--verbose") == 0) {
		a->verbose = true;
		return 0;
	}
	if (missing)
		return cli_fail("tune: %s needs a value", argv[*i]);
	if (argv[*i][0] == '-' || a->spec)
		return cli_fail("tune: unexpected argument '%s' (see tessel tune --help)",
			argv[*i]);
	a->spec = argv[*i];
	return 0;
}

static int parse_tune_args(tune_args *a, int argc, char **argv)
{
	a->o = tune_search_opts_default();
	for (int i = 0; i < argc; i++)
		if (parse_tune_option(a, argc, argv, &i))
			return -1;
	if (!a->spec)
		return cli_fail("tune: missing SPEC (see tessel tune --help)");
	if (!a->have_trials)
		return cli_fail("tune: missing --trials N (how many candidates to measure)");
	return 0;
}

/* What the display rates: the op's float operations per run, or its
 * integer ones where it has none (a quantized matmul), and whether
 * stderr is a terminal. */
typedef struct display {
	double flops, int_ops;
	bool tty;
} display;

/* "12.3 GFLOP/s (0.456 ms)", "12.3 GOP/s (...)" for integer work, or the
 * time alone for an op without arithmetic. */
static void format_speed(char *buf, size_t len, double seconds, const display *d)
{
	if (!isfinite(seconds))
		snprintf(buf, len, "none yet");
	else if (d->flops > 0 || d->int_ops > 0)
		snprintf(buf, len, "%.1f %s (%.4g ms)",
			(d->flops > 0 ? d->flops : d->int_ops) / seconds * 1e-9,
			d->flops > 0 ? "GFLOP/s" : "GOP/s", seconds * 1e3);
	else
		snprintf(buf, len, "%.4g ms", seconds * 1e3);
}

static void format_duration(char *buf, size_t len, double s)
{
	if (!isfinite(s))
		snprintf(buf, len, "?");
	else if (s >= 60)
		snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(buf, len, "%ds", (int)ceil(s));
}

/* The progress display: a bar redrawn in place on a terminal, a line per
 * batch otherwise. */
static void show_progress(const tune_progress *p, void *arg)
{
	const display *d = arg;
	bool tty = d->tty;
	char best[64], left[32];
	format_speed(best, sizeof(best), p->best_s, d);
	format_duration(left, sizeof(left), p->done ? 0 : p->eta_s);
	if (p->runoff) {
		fprintf(stderr, "%stune: run-off: measuring at most %d of the fastest records "
			"again together%s\n", tty ? "\r\033[K" : "", p->runoff,
			tty ? "..." : "");
		return;
	}
	if (tty) {
		int width = 24;
		int full = p->trials_total ? width * p->trials / p->trials_total : width;
		char bar[32];
		for (int i = 0; i < width; i++)
			bar[i] = i < full ? '#' : '.';
		bar[width] = '\0';
		fprintf(stderr, "\r[%s] %d/%d trials, %d errors, best %s, %s left\033[K%s",
			bar, p->trials, p->trials_total, p->errors, best, left,
			p->done ? "\n" : "");
	} else if (!p->done) {
		fprintf(stderr, "tune: %d/%d trials, %d errors, best %s, %s left\n",
			p->trials, p->trials_total, p->errors, best, left);
	}
	fflush(stderr);
}

static void show_log(const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, "tune: %s\n", line);
}

static void print_summary(const tune_task *task, const tune_summary *s,
	const char *db_path)
{
	char best[64], def[64];
	display d = { task->flops, tessel_op_int_ops(task->op), false };
	format_speed(best, sizeof(best), s->best_s, &d);
	format_speed(def, sizeof(def), s->default_s, &d);
	printf("task: %s, workload %s, on %s\n", tessel_op_name(task->op), task->key,
		task->target);
	printf("trials: %d measured in %d rounds, %d errors", s->trials, s->rounds,
		s->errors);
	const char *sep = " (";
	for (int e = 1; e < TUNE_ERR_COUNT; e++)
		if (s->error_counts[e]) {
			printf("%s%s %d", sep, tune_error_name((tune_error)e), s->error_counts[e]);
			sep = ", ";
		}
	printf("%s; %d found in the store", sep[0] == ',' ? ")" : "", s->known);
	if (s->other_code)
		printf(" (this build makes other code of %d of them; %d measured again)",
			s->other_code, s->measured_again);
	printf("\n");
	if (s->retaken)
		printf("disturbed: %d measurements taken again because the kernel's threads "
			"waited for a CPU; %d trials still disturbed (their times may be too "
			"slow)\n",
			s->retaken, s->disturbed);
	if (s->batches_retaken)
		printf("unusual moments: %d batches measured again because their control "
			"ran far from its usual time\n", s->batches_retaken);
	if (s->interrupted)
		printf("interrupted: every measured batch is committed\n");
	else if (s->early_stopped)
		printf("stopped early: no better time in the last trials\n");
	else if (s->exhausted)
		printf("stopped: the search space has no program left that was not "
			"measured\n");
	const tune_runoff_summary *ro = &s->runoff;
	if (ro->entrants)
		printf("run-off: the %d fastest records measured again together, %d "
			"failed; #%lld won at %.4g ms (recorded at %.4g ms), the fastest "
			"recorded (#%lld) took %.4g ms there\n", ro->entrants, ro->failed,
			(long long)ro->winner, ro->winner_s * 1e3, ro->winner_recorded_s * 1e3,
			(long long)ro->fastest, ro->fastest_s * 1e3);
	printf("best: %s", best);
	if (isfinite(s->default_s) && isfinite(s->best_s))
		printf(", %.2fx the default schedule (%s)", s->default_s / s->best_s, def);
	printf("\n");
	if (s->best_record)
		printf("record: #%lld in %s\n", (long long)s->best_record, db_path);
	if (s->best_trace)
		printf("trace:\n%s", s->best_trace[0] ? s->best_trace : "(the default schedule)\n");
}

static int tune_op(tune_args *a, tessel_ctx *ctx, tessel_op *op)
{
	char err[1024], path[4096];
	tune_task task;
	if (tune_task_init(&task, ctx, op, a->target, err, sizeof(err)))
		return cli_fail("%s", err);
	if (tune_measure_can_run(&task, err, sizeof(err))) {
		tune_task_clear(&task);
		return cli_fail("%s", err);
	}
	if (!a->db && tune_db_default_path(path, sizeof(path))) {
		tune_task_clear(&task);
		return cli_fail("no --db given and no cache directory for the default store");
	}
	tune_db *db = tune_db_open(a->db ? a->db : path, err, sizeof(err));
	if (!db) {
		tune_task_clear(&task);
		return cli_fail("%s", err);
	}
	display shown = { task.flops, tessel_op_int_ops(task.op), isatty(STDERR_FILENO) };
	a->o.progress = show_progress;
	a->o.progress_arg = &shown;
	a->o.stop = &interrupted;
	if (a->verbose)
		a->o.log = show_log;
	struct sigaction sa = { .sa_handler = on_sigint }, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	tune_summary s;
	int r = tune_search(&task, db, &a->o, &s, err, sizeof(err));
	sigaction(SIGINT, &old, NULL);
	int status = 0;
	if (r)
		status = cli_fail("%s", err);
	print_summary(&task, &s, tune_db_path(db));
	if (status == 0 && !isfinite(s.best_s))
		status = cli_fail("no candidate ran correctly");
	if (status == 0 && s.interrupted)
		status = 130;
	tune_summary_clear(&s);
	tune_db_close(db);
	tune_task_clear(&task);
	return status;
}

int cmd_tune(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, tune_help))
		return 0;
	tune_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_tune_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = tune_op(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}
