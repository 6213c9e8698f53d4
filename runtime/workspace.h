/* Scratch memory for generated CPU kernels (the workspace_alloc and
 * workspace_pop of include/tessel/kernel.h): each thread keeps the
 * blocks its kernels give back and hands them out again, so that a
 * kernel called over and over does not go back to malloc on every call.
 * glibc returns memory freed at the top of a heap to the system once
 * more than its trim threshold is free there, and a kernel that
 * allocated it again then faulted every page of it in on each call:
 * a conv2d whose chunks allocate 860 KiB ran at 0.64 ms in one process
 * and 0.49 ms in another, depending on what else its heap held
 * (bench/RESULTS.md, "Scratch memory that faults on every call").
 *
 * Blocks are given back in the reverse order they were taken, by count
 * rather than by pointer: a kernel that passed its scratch pointers to a
 * function the compiler cannot see would let them escape, and the
 * compiler would then assume they may alias the kernel's arguments (the
 * same conv2d compiled so ran 3.3 to 3.7 times slower, its accumulators no
 * longer kept in registers).
 *
 * A thread's cache holds at most RT_WORKSPACE_CACHED blocks, the largest
 * it was given back; they are freed when the thread exits, or by
 * rt_workspace_release. */
#ifndef TESSEL_RT_WORKSPACE_H
#define TESSEL_RT_WORKSPACE_H

#include <stddef.h>

/* Alignment of every block, in bytes. */
#define RT_WORKSPACE_ALIGN 64

/* Blocks a thread keeps for reuse. */
#define RT_WORKSPACE_CACHED 8

/* Return "bytes" bytes (at least one) aligned to RT_WORKSPACE_ALIGN,
 * uninitialized, and push them on the calling thread's stack of taken
 * blocks: the smallest cached block that holds them (and is at most
 * about twice as large), else a new one; NULL when memory runs out
 * (nothing is pushed then). */
void *rt_workspace_alloc(size_t bytes);

/* Give back the last "count" blocks the calling thread took and has not
 * given back (all of them when it holds fewer): it keeps them for
 * reuse, or frees those its full cache has no room for. */
void rt_workspace_pop(int count);

/* Return how many blocks the calling thread holds taken. */
int rt_workspace_taken(void);

/* Free the blocks the calling thread keeps for reuse (not those it holds
 * taken). */
void rt_workspace_release(void);

#endif
