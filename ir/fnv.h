/* FNV-1a, 64 bits, over the bytes of a string: a fixed function of bytes,
 * so a hash is the same on every machine and in every run (workload keys,
 * trace hashes, the tuner's sets of seen programs, the ISL text cache). */
#ifndef TESSEL_IR_FNV_H
#define TESSEL_IR_FNV_H

#include <stdint.h>

static inline uint64_t te_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

#endif
