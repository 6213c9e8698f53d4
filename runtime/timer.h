/* Wall-clock timing of a function, the way candidates are measured: warm-up
 * runs, repeats until a minimum total time, median of the individual runs,
 * optionally with the caches flushed before each run; and whether another
 * program held the CPUs meanwhile. */
#ifndef TESSEL_RT_TIMER_H
#define TESSEL_RT_TIMER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rt_timing {
	double median_s;
	double min_s;
	double mean_s;
	int runs;
	/* The time the threads of this process spent waiting for a CPU
	 * (runtime/cpu_wait.h) while the timed runs went on, summed over the
	 * threads, over the time they took: near 0 when each thread had a
	 * CPU of its own, high when another program held the cores the
	 * timed code needed or the scheduler kept two of its threads on one
	 * CPU.  NAN
	 * when unknown (no schedstat; timers of other clocks). */
	double cpu_wait;
} rt_timing;

typedef struct rt_timer_opts {
	/* Untimed runs first (default 1). */
	int warmup;
	/* Timed runs: at least min_repeats (default 3), at most max_repeats
	 * (default 1000), and more until min_total_s seconds have been
	 * measured (default 0.1). */
	int min_repeats;
	int max_repeats;
	double min_total_s;
	/* Before each run, write then read a buffer twice the size of the L3
	 * cache (or flush_bytes when not 0), so that data comes from memory
	 * (default false).  Flushing is not timed. */
	bool flush_cache;
	size_t flush_bytes;
	/* Stop once this much wall time (warm-up and flushes included) has
	 * passed; 0 means no limit (the default). */
	double timeout_s;
	/* Stop after the last warm-up run or the first timed run when it
	 * alone took longer than this, and let that one run be the
	 * measurement; 0 means never (the default).  A tuner gives up so on
	 * candidates far slower than its best, whose exact time matters
	 * little. */
	double give_up_s;
} rt_timer_opts;

enum {
	RT_TIME_OK = 0,
	RT_TIME_TIMEOUT = 1,
	RT_TIME_ERROR = -1
};

/* A cpu_wait above which a timing was disturbed: its threads waited for
 * CPUs (another program held them, or the scheduler kept two of the
 * threads on one), and its times may be too slow.  On this project's
 * 2-core machine, tuning beside other work gave 12% of the candidates
 * medians of exactly 8 or 16 ms (2 and 4 scheduler ticks) for programs
 * of 0.8 or 2 ms; beside one busy loop 0.5 to 0.8; two threads of an
 * unpinned pool on one CPU 0.2 to 0.3 (rt_pool_bind prevents it).  An
 * idle worker of a pinned pool that a kernel thread (kworker) keeps from
 * its CPU for a few ms counts too though nothing waited for it: 0.03 to
 * 0.10 over 0.17 s of a one-thread kernel, up to 0.28 over 0.05 s, with
 * an unchanged median; the threshold sits above most of that. */
#define RT_DISTURBED_CPU_WAIT 0.15

/* Return whether "t" was disturbed: its cpu_wait is above
 * RT_DISTURBED_CPU_WAIT (never when unknown). */
bool rt_timing_disturbed(const rt_timing *t);

/* Return the default options. */
rt_timer_opts rt_timer_opts_default(void);

/* Time "fn"("arg") with the options "o" (NULL: the defaults) and store the
 * statistics of the timed runs in "out".  Return RT_TIME_OK (also after
 * giving up on a slow first run, give_up_s); RT_TIME_TIMEOUT when the
 * timeout ended the measurement before min_repeats runs ("out" then
 * holds the runs made, perhaps none); or
 * RT_TIME_ERROR for invalid options (min_repeats < 1, max_repeats <
 * min_repeats, negative times) or when memory runs out. */
int rt_time(void (*fn)(void *), void *arg, const rt_timer_opts *o,
	rt_timing *out);

/* Return whether "o" is valid: see rt_time's RT_TIME_ERROR. */
bool rt_timer_opts_valid(const rt_timer_opts *o);

/* For timers of other clocks (runtime/cuda_timing.c), the CPU timer's
 * rules: whether more than o->timeout_s has passed since "start" (never
 * without a timeout); whether another timed run is wanted after "runs"
 * runs of "total" seconds in all; and the statistics of the "n" run
 * times "times" (sorted in place) into "out". */
bool rt_timer_expired(const rt_timer_opts *o, double start);
bool rt_timer_want_more(const rt_timer_opts *o, int runs, double total);
/* Whether one run of "run_s" seconds (the last warm-up run, or the
 * first timed one) is slower than o->give_up_s and so the whole
 * measurement. */
bool rt_timer_gives_up(const rt_timer_opts *o, double run_s);
/* Whether "runs" runs of "total" seconds are a measurement: min_repeats
 * of them, or one slower than give_up_s. */
bool rt_timer_enough(const rt_timer_opts *o, int runs, double total);
void rt_timing_summarize(double *times, int n, rt_timing *out);

/* Return the CLOCK_MONOTONIC time in seconds. */
double rt_now_s(void);

#endif
