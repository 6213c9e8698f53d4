/* Helpers shared by the Criterion suites (tests/support.c). */
#ifndef TESSEL_TESTS_SUPPORT_H
#define TESSEL_TESTS_SUPPORT_H

#include <stdbool.h>

#include "ir/loop.h"
#include "tessel/te.h"
#include "tessel/tensor.h"

/* Return a new tensor of the dtype and shape of stage "s" (uninitialized
 * data), or NULL when memory runs out. */
tessel_tensor *test_tensor_like(const tessel_stage *s);

/* Return the largest |got - want| / (1 + |want|) over the elements of the
 * "n" pairs "got"[i], "want"[i]: infinite where exactly one of the two is
 * NaN, 0 where both are. */
double test_outputs_error(tessel_tensor *const *got, tessel_tensor *const *want, int n);

/* Return small attributes ("K=V;K=V") for the library op "name": its
 * own for the ops that need them (as tests/fuzz/sched_all.sh), a shape
 * for unary ops, two broadcasting shapes for binary ones. */
const char *test_library_spec(const char *name);

/* An op of the library with seeded random inputs, the interpreter's
 * outputs ("expected"), and outputs to compute into; "data" holds the
 * pointers of "args" (inputs, then outputs). */
typedef struct test_fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	int nin, nout;
	tessel_tensor *args[32];
	tessel_tensor *expected[16];
	void *data[32];
} test_fixture;

/* Return the library op "name" with the attributes "spec" ("K=V;K=V")
 * in "ctx", asserting that it exists; nothing is computed (the
 * fixture's reference of a large op takes minutes). */
tessel_op *test_op_new(tessel_ctx *ctx, const char *name, const char *spec);

/* Instantiate the op "name" with the attributes "spec" ("K=V;K=V") into
 * "f" (a Criterion assertion fails when it cannot). */
void test_fixture_init(test_fixture *f, const char *name, const char *spec);
void test_fixture_fini(test_fixture *f);
/* Return the largest relative difference between the outputs of "f" and
 * the interpreter's (test_outputs_error). */
double test_fixture_error(const test_fixture *f);
/* Fill the outputs of "f" with NaN bytes, so that stale values fail. */
void test_fixture_clear_outputs(test_fixture *f);
/* Return the contents of the file "path" (malloc'ed, NUL-terminated), or
 * NULL when it cannot be read. */
char *test_read_file(const char *path);

/* The scratch directory of this test process (Criterion runs each test
 * in a process of its own): made under $TMPDIR (else /tmp) on the first
 * call, the same path after that. */
const char *test_scratch_dir(void);
/* Make the scratch directory now (a suite's .init), so that processes
 * the test forks share it. */
void test_scratch_make(void);
/* Write the path of "name" in the scratch directory into "out" (of size
 * "len") and return "out". */
char *test_scratch_file(char *out, size_t len, const char *name);
/* Remove "path" and everything below it (links are not followed);
 * return 0 or -1. */
int test_remove_tree(const char *path);
/* Remove the scratch directory and everything in it, if this process
 * made one (a suite's .fini); the next test_scratch_dir makes a new one. */
void test_scratch_remove(void);

/* Return the first store under "s", in program order, for which "want"
 * is true, or NULL: where a test breaks a program on purpose. */
loop_stmt *test_first_store(loop_stmt *s, bool (*want)(const loop_stmt *store));

#endif
