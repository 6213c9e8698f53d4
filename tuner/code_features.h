/* Features of a candidate's compiled code for the cost model: what the C
 * compiler made of its loop program (codegen/code_stats.h), as a vector
 * that follows the program features (tuner/features.h) in a record.
 *
 * The program features describe the loops before the compiler sees them;
 * among candidates of one structure that differ in split factors, the
 * compiler's choices (registers or spills, vector width, unrolling) are
 * what sets them apart, and the program features only imply them.  They
 * cost a compilation, so the search uses them to order a short list of
 * the best-scored candidates (docs/cost-model.md, "Code features"), and
 * the records of measured candidates keep them.
 *
 * Every value is log2(1 + x) of a count, except the three ratios, which
 * are differences of such logs. */
#ifndef TESSEL_TUNER_CODE_FEATURES_H
#define TESSEL_TUNER_CODE_FEATURES_H

#include <stddef.h>

#include "codegen/code_stats.h"
#include "tuner/features.h"

/* Bumped whenever a code feature changes meaning. */
#define TUNE_CODE_FEATURES_VERSION 1

enum tune_code_feature {
	TC_INSTRUCTIONS,
	TC_FMA,
	TC_VECTOR_LOADS,
	TC_VECTOR_STORES,
	TC_STACK_REFS,
	TC_BROADCASTS,
	TC_ZMM,
	TC_LOOPS,
	TC_INNER_INSTRUCTIONS,  /* of the innermost loop with the most FMAs */
	TC_INNER_FMA,
	TC_INNER_VECTOR_LOADS,
	TC_INNER_VECTOR_STORES,
	TC_INNER_STACK_REFS,
	TC_FRAME_BYTES,
	TC_INNER_FMA_PER_LOAD,  /* log2(1 + fma) - log2(1 + loads), inner */
	TC_INNER_STACK_SHARE,   /* log2(1 + stack refs) - log2(1 + instructions), inner */
	TC_FMA_SHARE,           /* log2(1 + fma) - log2(1 + instructions), all */
	TUNE_CODE_FEATURES
};

/* A record's features: the program's, then (when it was compiled with a
 * disassembler at hand) the code's. */
#define TUNE_RECORD_FEATURES (TUNE_PROGRAM_FEATURES + TUNE_CODE_FEATURES)

_Static_assert(TUNE_CODE_FEATURES_VERSION == 1 && TUNE_CODE_FEATURES == 17,
	"a change of the code features needs a new TUNE_CODE_FEATURES_VERSION");

/* Write the TUNE_CODE_FEATURES floats of "s" into "out". */
void tune_code_features(const cg_code_stats *s, float *out);

/* Write the name of code feature "i" ("code.inner_fma") into "buf" of
 * size "len"; return 0, or -1 when "i" is out of range. */
int tune_code_feature_name(int i, char *buf, size_t len);

#endif
