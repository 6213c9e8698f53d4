/* Features of a stored record computed again by this build.
 *
 * A record keeps the feature vector the tessel that measured it computed
 * (tuner/db.h), and its trace.  When TUNE_FEATURES_VERSION changes, the
 * stored vectors are of another version: each version has its own length
 * (TUNE_PROGRAM_FEATURES; tuner/features.h pins the pair), so a stored
 * vector of another length is stale, and the trace, replayed on the
 * workload's op and lowered, gives this build's vector. */
#ifndef TESSEL_TUNER_RECORD_FEATURES_H
#define TESSEL_TUNER_RECORD_FEATURES_H

#include "runtime/target.h"
#include "tessel/te.h"

/* Replay the text "trace" on a fresh schedule of the bound "op", lower it
 * and write its TUNE_PROGRAM_FEATURES features for the target "t" into
 * "out".  Return 0, or -1 with the reason in "ctx" when the trace no
 * longer replays or lowers (the record is then unusable for training). */
int tune_trace_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, float *out);

/* The same for the code features (tuner/code_features.h): replay and
 * lower "trace", compile it for "t" as the tuner's builder does (through
 * the kernel cache, so that a program measured on this machine is found
 * there) and disassemble it with "tool" (cg_code_stats_tool); write its
 * TUNE_CODE_FEATURES features into "out".  Return 0, or -1 with the
 * reason in "ctx" when it does not replay, lower, compile or
 * disassemble. */
int tune_trace_code_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, const char *tool, float *out);

#endif
