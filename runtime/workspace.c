/* Per-thread stacks and caches of scratch blocks; see workspace.h.  Each
 * block is one aligned_alloc: a header of RT_WORKSPACE_ALIGN bytes that
 * holds its capacity, then the memory handed out. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/workspace.h"

/* The blocks of one thread: those taken (a stack, in order) and those
 * kept for reuse, as handed-out pointers. */
typedef struct workspace {
	void **taken;
	int ntaken, taken_cap;
	void *kept[RT_WORKSPACE_CACHED];
	int nkept;
	bool registered;   /* freed at the thread's exit */
} workspace;

static _Thread_local workspace thread_workspace;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static bool exit_key_made;

static char *base_of(void *p)
{
	return (char *)p - RT_WORKSPACE_ALIGN;
}

static size_t capacity_of(void *p)
{
	return *(const size_t *)base_of(p);
}

static void release_kept(workspace *w)
{
	for (int i = 0; i < w->nkept; i++)
		free(base_of(w->kept[i]));
	w->nkept = 0;
}

static void on_thread_exit(void *arg)
{
	workspace *w = arg;
	release_kept(w);
	for (int i = 0; i < w->ntaken; i++)
		free(base_of(w->taken[i]));
	free(w->taken);
	*w = (workspace){ 0 };
}

static void make_exit_key(void)
{
	exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* Arrange for "w" to be freed when the calling thread exits; return
 * whether it will be. */
static bool free_at_exit(workspace *w)
{
	if (!w->registered) {
		pthread_once(&exit_once, make_exit_key);
		w->registered = exit_key_made && pthread_setspecific(exit_key, w) == 0;
	}
	return w->registered;
}

/* Return whether a kept block of "capacity" bytes serves a request of
 * "bytes": it holds them and is at most twice as large (and a page), so
 * that a small request does not take the block a large one would
 * reuse. */
static bool fits(size_t capacity, size_t bytes)
{
	return capacity >= bytes && capacity - bytes <= bytes + 4096;
}

/* Take the smallest kept block of "w" that serves "bytes", or NULL. */
static void *take_kept(workspace *w, size_t bytes)
{
	int best = -1;
	for (int i = 0; i < w->nkept; i++)
		if (fits(capacity_of(w->kept[i]), bytes) &&
		    (best < 0 || capacity_of(w->kept[i]) < capacity_of(w->kept[best])))
			best = i;
	if (best < 0)
		return NULL;
	void *p = w->kept[best];
	w->kept[best] = w->kept[--w->nkept];
	return p;
}

/* Return a new block of at least "bytes" bytes, or NULL. */
static void *new_block(size_t bytes)
{
	if (bytes > SIZE_MAX / 2)
		return NULL;
	size_t rounded = (bytes + RT_WORKSPACE_ALIGN - 1) / RT_WORKSPACE_ALIGN *
			 RT_WORKSPACE_ALIGN;
	if (rounded == 0)
		rounded = RT_WORKSPACE_ALIGN;
	char *base = aligned_alloc(RT_WORKSPACE_ALIGN, rounded + RT_WORKSPACE_ALIGN);
	if (!base)
		return NULL;
	*(size_t *)base = rounded;
	return base + RT_WORKSPACE_ALIGN;
}

/* Keep "p" in "w" for reuse, or free it when the cache is full of
 * larger blocks (or the thread's exit cannot free the cache). */
static void keep(workspace *w, void *p)
{
	if (w->nkept < RT_WORKSPACE_CACHED) {
		w->kept[w->nkept++] = p;
		return;
	}
	int smallest = 0;
	for (int i = 1; i < w->nkept; i++)
		if (capacity_of(w->kept[i]) < capacity_of(w->kept[smallest]))
			smallest = i;
	if (capacity_of(w->kept[smallest]) >= capacity_of(p)) {
		free(base_of(p));
		return;
	}
	free(base_of(w->kept[smallest]));
	w->kept[smallest] = p;
}

/* Push "p" on the taken blocks of "w"; false when memory runs out. */
static bool push_taken(workspace *w, void *p)
{
	if (w->ntaken == w->taken_cap) {
		int cap = w->taken_cap ? 2 * w->taken_cap : 16;
		void **t = realloc(w->taken, (size_t)cap * sizeof(*t));
		if (!t)
			return false;
		w->taken = t;
		w->taken_cap = cap;
	}
	w->taken[w->ntaken++] = p;
	return true;
}

/* Take a block for "bytes" bytes; see workspace.h. */
void *rt_workspace_alloc(size_t bytes)
{
	workspace *w = &thread_workspace;
	if (!free_at_exit(w))
		return NULL;
	void *p = take_kept(w, bytes);
	if (!p && !(p = new_block(bytes)))
		return NULL;
	if (!push_taken(w, p)) {
		keep(w, p);
		return NULL;
	}
	return p;
}

/* Give back the last "count" taken blocks; see workspace.h. */
void rt_workspace_pop(int count)
{
	workspace *w = &thread_workspace;
	for (; count > 0 && w->ntaken > 0; count--)
		keep(w, w->taken[--w->ntaken]);
}

int rt_workspace_taken(void)
{
	return thread_workspace.ntaken;
}

void rt_workspace_release(void)
{
	release_kept(&thread_workspace);
}
