/* Helpers shared by the Criterion suites (tests/support.c). */
#ifndef TESSEL_TESTS_SUPPORT_H
#define TESSEL_TESTS_SUPPORT_H

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

#endif
