/* A bump allocator: objects allocated together are freed together.  One per
 * op (and, later, per candidate program the tuner builds), so that IR nodes
 * need no individual ownership. */
#ifndef TESSEL_IR_ARENA_H
#define TESSEL_IR_ARENA_H

#include <stddef.h>

typedef struct te_arena_chunk te_arena_chunk;

typedef struct te_arena {
	te_arena_chunk *head;
	size_t used;      /* bytes used in head */
	size_t capacity;  /* bytes available in head */
} te_arena;

void te_arena_init(te_arena *a);
/* Free every object allocated in "a"; "a" stays usable. */
void te_arena_reset(te_arena *a);
/* Return "size" zeroed bytes aligned to 16, valid until the next reset.
 * Aborts on out-of-memory: arenas hold IR, whose size the callers bound. */
void *te_arena_alloc(te_arena *a, size_t size);
/* Return a copy of "s" (of "len" bytes, plus a terminating NUL) in "a". */
char *te_arena_strndup(te_arena *a, const char *s, size_t len);
char *te_arena_strdup(te_arena *a, const char *s);

/* Print "tessel: out of memory" and abort: what the IR does when memory
 * runs out (arenas, string buffers, the passes' own arrays). */
_Noreturn void te_out_of_memory(void);

#endif
