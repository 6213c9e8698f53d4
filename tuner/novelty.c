/* Counts of measured schedule structures (tuner/novelty.h).  A search
 * meets a hundred or so structures in a thousand trials, so an array
 * searched in order does. */
#include "tuner/novelty.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ir/fnv.h"

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

uint64_t tune_trace_skeleton(const char *trace)
{
	uint64_t h = TE_FNV1A_EMPTY;
	const char *p = trace;
	while (*p) {
		const char *end = p;
		while (isdigit((unsigned char)*end))
			end++;
		bool alone = end > p && (p == trace || !name_char(p[-1])) && !name_char(*end);
		if (alone) {
			h = te_fnv1a_byte(h, '#');
			p = end;
			continue;
		}
		if (end == p)
			end = p + 1;
		for (; p < end; p++)
			h = te_fnv1a_byte(h, (unsigned char)*p);
	}
	return h ? h : 1;
}

int tune_novelty_count(const tune_novelty *nv, uint64_t skeleton)
{
	for (int i = 0; i < nv->n; i++)
		if (nv->skeleton[i] == skeleton)
			return nv->count[i];
	return 0;
}

int tune_novelty_add(tune_novelty *nv, uint64_t skeleton)
{
	for (int i = 0; i < nv->n; i++)
		if (nv->skeleton[i] == skeleton) {
			nv->count[i]++;
			return 0;
		}
	if (nv->n == nv->cap) {
		int cap = nv->cap ? 2 * nv->cap : 64;
		uint64_t *s = realloc(nv->skeleton, (size_t)cap * sizeof(*s));
		if (!s)
			return -1;
		nv->skeleton = s;
		int *c = realloc(nv->count, (size_t)cap * sizeof(*c));
		if (!c)
			return -1;
		nv->count = c;
		nv->cap = cap;
	}
	nv->skeleton[nv->n] = skeleton;
	nv->count[nv->n++] = 1;
	return 0;
}

void tune_novelty_clear(tune_novelty *nv)
{
	free(nv->skeleton);
	free(nv->count);
	*nv = (tune_novelty){ 0 };
}
