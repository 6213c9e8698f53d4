/* Conventions of the public API, stated once.
 *
 * Ownership (after ISL's __isl_give/__isl_take/__isl_keep):
 *   __tessel_give  the function returns a new reference the caller must
 *                  release (tessel_*_free or tessel_*_release);
 *   __tessel_take  the function takes over the caller's reference, even when
 *                  it fails;
 *   __tessel_keep  the function only borrows the argument for the call.
 * Expressions (tessel_expr) belong to the op they were made for and live
 * exactly as long as it; they are never freed one by one.  Ops are reference
 * counted because the tuner, the graph and the user may all hold one.
 *
 * Errors: a function that can fail returns NULL or -1 and records the error
 * (kind, message, source location) in its tessel_ctx, where
 * tessel_ctx_error() reads it.  Nothing prints or exits on its own. */
#ifndef TESSEL_API_H
#define TESSEL_API_H

#define __tessel_give
#define __tessel_take
#define __tessel_keep

#if defined(__GNUC__)
#define TESSEL_API __attribute__((visibility("default")))
#else
#define TESSEL_API
#endif

#endif
