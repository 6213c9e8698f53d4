/* Internals of the operator library.
 *
 * Every built-in op is an ops_def: a name, a description, a table of
 * attributes and a generator that writes the op's .te text for parsed
 * attribute values.  The registry (ops/registry.c) parses and validates the
 * attribute text, calls the generator, and for tessel_ops_instantiate parses
 * the text and binds the sizes the text left symbolic from the integer
 * attributes of the same names.  Each family of ops lives in its own file
 * and exports its table (ops_linalg, ops_conv, ...). */
#ifndef TESSEL_OPS_IMPL_H
#define TESSEL_OPS_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "tessel/ops.h"
#include "ops/textbuf.h"

#define OPS_MAX_ATTRS 16  /* attributes of one op */
#define OPS_MAX_INTS 64   /* values of one INTS attribute */
#define OPS_MAX_VALUE INT64_C(2147483647)     /* magnitude of an integer */
#define OPS_MAX_ELEMENTS (INT64_C(1) << 62)   /* elements of a shape */

/* Checks on an attribute beyond its type, done by the registry. */
enum ops_attr_flag {
	OPS_SIZE = 1 << 0,      /* INT: a size the text names; >= 1; may stay
				 * symbolic in tessel_ops_source */
	OPS_SHAPE = 1 << 1,     /* INTS: a shape: at most TESSEL_MAX_DIMS
				 * extents, each >= 1 */
	OPS_POSITIVE = 1 << 2,  /* INT or INTS: every value >= 1 */
	OPS_NONNEG = 1 << 3,    /* INT or INTS: every value >= 0 */
	OPS_PAIR = 1 << 5,      /* INTS: one value, or two (height, width) */
	OPS_EMPTY_OK = 1 << 6   /* INTS with OPS_PAIR: [] is allowed too (the
				 * op's documented default) */
};

typedef struct ops_attr {
	tessel_attr_info info;
	unsigned flags;
	const char *choices;  /* STR: the allowed words,
			       * separated by '|' */
} ops_attr;

/* The value of one attribute after parsing. */
typedef struct ops_value {
	bool present;                 /* given, or defaulted */
	int64_t i;                    /* INT, BOOL */
	int n;                        /* INTS: number of values */
	int64_t ints[OPS_MAX_INTS];   /* INTS */
	tessel_dtype dtype;           /* DTYPE */
	const char *str;              /* STR: the caller's text or the default */
	double f;                     /* FLOAT */
} ops_value;

typedef struct ops_def ops_def;

/* The attributes an op is generated for: v[j] belongs to def->attrs[j]. */
typedef struct ops_args {
	const ops_def *def;
	tessel_ctx *ctx;
	ops_value v[OPS_MAX_ATTRS];
} ops_args;

/* Write the .te text of op "a->def" for the attributes "a" into "tb".
 * Return 0, or -1 with the error recorded through ops_fail. */
typedef int (*ops_gen_fn)(const ops_args *a, textbuf *tb);

struct ops_def {
	const char *name;
	const char *doc;
	const ops_attr *attrs;
	int nattrs;
	ops_gen_fn gen;
	const void *data;  /* what the generator needs beyond the attributes */
};

#define OPS_COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))
#define OPS_DEF(name, doc, attrs, gen, data) \
	{ name, doc, attrs, OPS_COUNT(attrs), gen, data }

/* Attributes many ops share. */
#define OPS_ATTR_DTYPE \
	{ { "dtype", TESSEL_ATTR_DTYPE, "f32", "element type" }, 0, NULL }
/* The dtype of the output and of the sum of a matmul or convolution. */
#define OPS_ATTR_OUT_DTYPE \
	{ { "out_dtype", TESSEL_ATTR_STR, "same", "dtype of the output and of the " \
	    "sum: same (dtype), or wider: i32 for i8 inputs (quantized), f32 for " \
	    "f16 or bf16" }, 0, "same|f64|f32|f16|bf16|i64|i32|i8|u8" }
#define OPS_ATTR_WEIGHT_DTYPE(operand) \
	{ { "weight_dtype", TESSEL_ATTR_STR, "same", "dtype of " operand ": same " \
	    "(dtype), or the other 8-bit integer type with a wider out_dtype " \
	    "(u8 data, i8 weights)" }, 0, "same|i8|u8" }
#define OPS_ATTR_SHAPE(doc) \
	{ { "shape", TESSEL_ATTR_INTS, NULL, doc }, OPS_SHAPE, NULL }

/* The families, one table per file. */
extern const ops_def ops_linalg[];
extern const int ops_linalg_count;
extern const ops_def ops_conv[];
extern const int ops_conv_count;
extern const ops_def ops_pool[];
extern const int ops_pool_count;
extern const ops_def ops_norm[];
extern const int ops_norm_count;
extern const ops_def ops_elementwise[];
extern const int ops_elementwise_count;
extern const ops_def ops_reduce[];
extern const int ops_reduce_count;
extern const ops_def ops_shape[];
extern const int ops_shape_count;
extern const ops_def ops_loss[];
extern const int ops_loss_count;

/* ---- reading attributes (ops/registry.c) ------------------------------ */

/* Return the value of the attribute "name" of "a"; the name must be one of
 * the op's attributes (a generator bug otherwise). */
const ops_value *ops_get(const ops_args *a, const char *name);
/* Return true when attribute "name" of "a" was given or has a default. */
bool ops_has(const ops_args *a, const char *name);
int64_t ops_int(const ops_args *a, const char *name);
bool ops_bool(const ops_args *a, const char *name);
tessel_dtype ops_dtype(const ops_args *a, const char *name);
const char *ops_str(const ops_args *a, const char *name);
double ops_float(const ops_args *a, const char *name);
/* Return value "i" of the OPS_PAIR attribute "name": its only value, or
 * its "i"-th (0 height, 1 width); "dflt" when it is []. */
int64_t ops_pair(const ops_args *a, const char *name, int i, int64_t dflt);

/* Record an error of "kind" about op "a->def", the message prefixed with
 * "op 'NAME': "; return -1. */
int ops_fail(const ops_args *a, tessel_error_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Return 0 when "dt" (the value of attribute "dtype") is a float type, else
 * -1 with an error. */
int ops_require_float(const ops_args *a, tessel_dtype dt);
/* Return 0 when "dt" is an integer or float type (not bool), else -1. */
int ops_require_numeric(const ops_args *a, tessel_dtype dt);
/* The dtypes of an op that sums products of its data and its weights:
 * the data's ("dtype"), the weights' ("weight_dtype"; "same": the
 * data's), the output's and the sum's ("out_dtype"; "same": the data's),
 * and the conversion of each operand in the sum ("i32(" or "").  */
typedef struct ops_sum_types {
	tessel_dtype in, weight, out;
	char conv[16];
} ops_sum_types;

/* Read the ops_sum_types of "a" into "*t".  The output is the data's dtype
 * or a wider one of the same kind (i8 or u8 to i32 or i64, i32 to i64, f16
 * or bf16 to f32 or f64, f32 to f64); the weights are the data's dtype, or
 * the other 8-bit integer type when the sum is wider (u8 data and i8
 * weights, quantized).  Return 0, or -1 through ops_fail. */
int ops_sum_dtypes(const ops_args *a, ops_sum_types *t);
/* Store in "*out" the axis "axis" (negative counts from the end) of a
 * tensor of rank "rank"; error naming attribute "attr" when out of range. */
int ops_axis(const ops_args *a, const char *attr, int64_t axis, int rank,
	int *out);

/* ---- writing .te text (ops/emit.c) ------------------------------------ */

/* Write the comment line and the "op NAME(" that start every op. */
void emit_op_start(textbuf *tb, const ops_args *a);
/* Write the start of the op and its first parameter "X: dtype[shape]"
 * from the attributes "shape" and "dtype". */
void emit_x_input(textbuf *tb, const ops_args *a);
/* Return the name of the index variable of axis "d" (i, j, k, ...). */
const char *emit_var(int d);
/* Write the index variables of the first "n" axes, leaving out the axes
 * whose bit is set in "skip" ("i, k" for n 3 and skip 1 << 1). */
void emit_vars_except(textbuf *tb, int n, unsigned skip);
/* Write "2, 3, 4" for the "n" extents "dims". */
void emit_dims(textbuf *tb, const int64_t *dims, int n);
/* Write "f32[2, 3, 4]". */
void emit_type(textbuf *tb, tessel_dtype dt, const int64_t *dims, int n);
/* The text of a short access such as "X[i, k]", by value so that it can
 * be used inside one expression: textbuf_puts(tb, ref_vars("X", 2).text). */
#define OPS_REF_LEN 160
typedef struct ops_ref {
	char text[OPS_REF_LEN];
} ops_ref;
/* Return "NAME[i, j, k]", tensor "name" of rank "n" at the index variables
 * of its axes. */
ops_ref ref_vars(const char *name, int n);
/* Return "NAME[...]" at the variables of the axes not in "skip". */
ops_ref ref_except(const char *name, int n, unsigned skip);
/* Write the float literal "v" (finite), always with a '.' or exponent. */
void emit_float(textbuf *tb, double v);
/* Write "v" as a literal of "dt": an integer for integer types (v must
 * be integral), true/false for bool, a float literal otherwise. */
void emit_scalar(textbuf *tb, tessel_dtype dt, double v);
/* Write " + c", " - c", or nothing when "c" is 0. */
void emit_offset(textbuf *tb, int64_t c);
/* Write "var*scale" ("var" alone when "scale" is 1). */
void emit_scaled(textbuf *tb, const char *var, int64_t scale);
/* Write the extent of a sliding window's output along a dimension of size
 * "size" (a name): (size + pad_total - dilation*(kernel - 1) - 1) / stride
 * + 1, simplified.  The kernel extent is the name "kernel_name", or the
 * number "kernel" when "kernel_name" is NULL. */
void emit_window_extent(textbuf *tb, const char *size, const char *kernel_name,
	int64_t kernel, int64_t pad_total, int64_t dilation, int64_t stride);
/* Return that extent for a size "size" and a kernel "kernel" (both known),
 * or a value below 1 when the window does not fit. */
int64_t window_extent(int64_t size, int64_t kernel, int64_t pad_total,
	int64_t dilation, int64_t stride);
/* Write the stage "P", the 4-D input "X" (sizes N, C, H, W; NCHW, or
 * NHWC when "nhwc") surrounded by pad[0] rows and pad[1] columns of "fill"
 * on each side.  Some pad is not 0. */
void emit_padded_input(textbuf *tb, bool nhwc, tessel_dtype dt,
	const int64_t pad[2], double fill);
/* Write "tmpl" with "$a" replaced by "x" and "$b" by "y". */
void emit_template(textbuf *tb, const char *tmpl, const char *x,
	const char *y);
/* Write "[2, 3, 4]" (for error messages and comments). */
void emit_list(textbuf *tb, const int64_t *v, int n);

#endif
