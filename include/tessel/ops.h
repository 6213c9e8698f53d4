/* The operator library: built-in ops declared once each as tensor
 * expressions (generated .te text), instantiated by name with attributes. */
#ifndef TESSEL_OPS_H
#define TESSEL_OPS_H

#include "tessel/te.h"

typedef enum tessel_attr_type {
	TESSEL_ATTR_INT,    /* 64 */
	TESSEL_ATTR_BOOL,   /* 0 or 1 (also true/false) */
	TESSEL_ATTR_INTS,   /* [4,1,3] (a shape, a list of axes) */
	TESSEL_ATTR_DTYPE,  /* f32 */
	TESSEL_ATTR_STR,    /* a word from a documented set */
	TESSEL_ATTR_FLOAT   /* 1e-5 (a finite number) */
} tessel_attr_type;

typedef struct tessel_attr_info {
	const char *name;
	tessel_attr_type type;
	const char *def;    /* default value as text; NULL when required */
	const char *doc;
} tessel_attr_info;

/* Number of built-in ops and the name, one-line description and attributes
 * of the "i"-th. */
TESSEL_API int tessel_ops_count(void);
TESSEL_API const char *tessel_ops_name(int i);
TESSEL_API const char *tessel_ops_doc(int i);
TESSEL_API int tessel_ops_num_attrs(int i);
TESSEL_API const tessel_attr_info *tessel_ops_attr(int i, int j);
/* Return the index of the op "name", or -1. */
TESSEL_API int tessel_ops_find(const char *name);

/* Return the .te source of op "name" for the attributes keys[k]=values[k]
 * (values as text), malloc'ed; sizes may remain symbolic in it.  NULL with
 * the error in "ctx" on an unknown op or attribute or a bad value. */
TESSEL_API char *tessel_ops_source(__tessel_keep tessel_ctx *ctx,
	const char *name, int n, const char *const *keys,
	const char *const *values);
/* Return op "name" bound with the attributes keys[k]=values[k]: the source
 * above, parsed, finished and bound.  Every attribute without a default
 * must be given. */
TESSEL_API __tessel_give tessel_op *tessel_ops_instantiate(
	__tessel_keep tessel_ctx *ctx, const char *name, int n,
	const char *const *keys, const char *const *values);

#endif
