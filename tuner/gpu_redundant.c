#include "tuner/gpu_redundant.h"

/* Stores a thread makes in one kernel, inside and outside its thread
 * loops, and whether it has any. */
typedef struct thread_work {
	double inside, outside;
	bool threads;
} thread_work;

static bool is_thread(loop_kind k)
{
	return k >= LOOP_THREAD_X && k <= LOOP_THREAD_Z;
}

static bool is_block(loop_kind k)
{
	return k >= LOOP_BLOCK_X && k <= LOOP_BLOCK_Z;
}

/* Add the stores "s" makes per thread, "times" over, to "w"; "in_thread"
 * says whether a thread loop encloses "s". */
static void count(const loop_stmt *s, double times, bool in_thread, thread_work *w)
{
	if (!s)
		return;
	switch (s->kind) {
	case LS_FOR: {
		loop_kind k = s->u.for_.kind;
		const loop_expr *e = s->u.for_.extent;
		double n = e->kind == LX_INT && e->u.ival > 0 ? (double)e->u.ival : 1;
		if (is_thread(k))
			w->threads |= n > 1;
		count(s->u.for_.body, is_thread(k) || is_block(k) ? times : times * n,
			in_thread || is_thread(k), w);
		break;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			count(s->u.seq.items[i], times, in_thread, w);
		break;
	case LS_IF:
		count(s->u.if_.then_, times, in_thread, w);
		count(s->u.if_.else_, times, in_thread, w);
		break;
	case LS_ALLOC:
		count(s->u.alloc.body, times, in_thread, w);
		break;
	case LS_STORE:
		*(in_thread ? &w->inside : &w->outside) += times;
		break;
	case LS_BARRIER:
	case LS_PREFETCH:
		break;
	}
}

/* Whether a kernel below the top-level statement "s" repeats work per
 * thread (see tune_gpu_repeats_work_per_thread). */
static bool repeats(const loop_stmt *s)
{
	if (s->kind == LS_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			if (repeats(s->u.seq.items[i]))
				return true;
		return false;
	}
	if (s->kind == LS_ALLOC && s->u.alloc.buf->scope == LOOP_GLOBAL)
		return repeats(s->u.alloc.body);
	thread_work w = { 0, 0, false };
	count(s, 1, false, &w);
	return w.threads && w.outside > TUNE_GPU_REDUNDANT_SLACK && w.outside > w.inside;
}

bool tune_gpu_repeats_work_per_thread(const loop_prog *p)
{
	return p->body && repeats(p->body);
}
