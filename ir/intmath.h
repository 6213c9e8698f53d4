/* Integer arithmetic shared by the IR's folding, simplification and
 * evaluation: floor division and modulo (tessel's integer "/" and "%"
 * round toward minus infinity) and the greatest common divisor. */
#ifndef TESSEL_IR_INTMATH_H
#define TESSEL_IR_INTMATH_H

#include <stdint.h>

/* Return "a" / "b" rounded down ("b" != 0, not INT64_MIN / -1). */
static inline int64_t te_floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Return "a" - "b" * te_floor_div("a", "b"), of the sign of "b". */
static inline int64_t te_floor_mod(int64_t a, int64_t b)
{
	int64_t r = a % b;
	return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* Return the greatest common divisor of |"a"| and |"b"| (0 for 0, 0),
 * for values above INT64_MIN. */
static inline int64_t te_gcd(int64_t a, int64_t b)
{
	a = a < 0 ? -a : a;
	b = b < 0 ? -b : b;
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

#endif
