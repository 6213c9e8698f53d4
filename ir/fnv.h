/* FNV-1a, 64 bits, over the bytes of a string: a fixed function of bytes,
 * so a hash is the same on every machine and in every run (workload keys,
 * trace hashes, the tuner's sets of seen programs and structures, the ISL
 * text cache). */
#ifndef TESSEL_IR_FNV_H
#define TESSEL_IR_FNV_H

#include <stdint.h>

/* The hash of no bytes, and the hash "h" extended by the byte "c": for
 * callers that hash bytes other than those of one string. */
#define TE_FNV1A_EMPTY 0xcbf29ce484222325ull

static inline uint64_t te_fnv1a_byte(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ull;
}

static inline uint64_t te_fnv1a(const char *s)
{
	uint64_t h = TE_FNV1A_EMPTY;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = te_fnv1a_byte(h, *p);
	return h;
}

#endif
