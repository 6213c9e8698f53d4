/* reverse_compute_at: compute a consumer inside a loop of its producer,
 * after the producer's body, over the elements that iteration produced.
 *
 * requires: the consumer reads the producer directly and only with its
 *   own index variables as indices (elementwise and broadcasting
 *   consumers: bias, activation, casts), the same way at every read; the
 *   producer is at the root and its loops up to the chosen one are
 *   spatial, so each iteration finishes the elements it writes; the
 *   consumer is at the root, and every other computed stage it reads is
 *   computed before the producer
 * guarantees: per iteration of the loop, lowering computes the consumer
 *   over exactly the box of elements the producer wrote there (ISL), so
 *   the union over iterations is the whole consumer, each element once */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

/* The consumer's axis that indexes each dimension of the producer. */
typedef struct read_map {
	int axis[TESSEL_MAX_DIMS];
	bool seen;
	bool ok;
	const char *why;
} read_map;

static void check_read(read_map *m, const tessel_expr *e)
{
	int axis[TESSEL_MAX_DIMS];
	for (int d = 0; d < e->u.access.n; d++) {
		const tessel_expr *x = e->u.access.index[d];
		if (x->kind != TE_VAR || x->u.var->is_reduce) {
			m->ok = false;
			m->why = "an index is not one of its index variables";
			return;
		}
		axis[d] = x->u.var->index;
		for (int k = 0; k < d; k++)
			if (axis[k] == axis[d]) {
				m->ok = false;
				m->why = "an index variable indexes two dimensions";
				return;
			}
	}
	if (m->seen && memcmp(axis, m->axis, sizeof(int) * (size_t)e->u.access.n) != 0) {
		m->ok = false;
		m->why = "it reads the producer in two different ways";
		return;
	}
	memcpy(m->axis, axis, sizeof(int) * (size_t)e->u.access.n);
	m->seen = true;
}

static void walk(read_map *m, const tessel_expr *e, const tessel_stage *p)
{
	switch (e->kind) {
	case TE_ACCESS:
		if (e->u.access.tensor == p)
			check_read(m, e);
		for (int i = 0; i < e->u.access.n; i++)
			walk(m, e->u.access.index[i], p);
		return;
	case TE_UNARY: walk(m, e->u.un.a, p); return;
	case TE_BINARY: walk(m, e->u.bin.a, p); walk(m, e->u.bin.b, p); return;
	case TE_SELECT:
		walk(m, e->u.sel.cond, p);
		walk(m, e->u.sel.then_, p);
		walk(m, e->u.sel.else_, p);
		return;
	case TE_CAST: walk(m, e->u.cast.a, p); return;
	default: return;
	}
}

/* Return the first computed stage "c" reads (directly or through inlined
 * stages), other than "p", that is not computed before "p" at the root;
 * -1 when there is none. */
static int late_producer(const sch_state *st, int c, int p)
{
	for (int k = 0; k < st->nstages; k++) {
		if (k == p || k == c || !sch_reads(st, c, k) ||
		    st->stages[k].attach == SCH_INLINE)
			continue;
		if (st->stages[k].attach != SCH_ROOT || k > p)
			return k;
	}
	return -1;
}

int sch_map_reverse_read(const sch_state *st, int c, int p, int *axis);

/* Fill "axis" with the consumer axis that indexes each producer dimension;
 * return 0, or -1 (with no error recorded) when the reads do not fit. */
int sch_map_reverse_read(const sch_state *st, int c, int p, int *axis)
{
	read_map m = { .ok = true };
	walk(&m, st->stages[c].te->body, st->stages[p].te);
	if (!m.ok || !m.seen)
		return -1;
	memcpy(axis, m.axis, sizeof(int) * (size_t)st->stages[p].te->ndim);
	return 0;
}

static int check_reverse(sch_state *st, int c, int p, int it, const char *stage,
	const char *loop)
{
	const sch_stage *cs = &st->stages[c], *ps = &st->stages[p];
	if (c == p)
		return sch_refuse(st, "reverse_compute_at %s %s: a stage cannot be computed "
			"in its own loop", stage, loop);
	int after = sch_stage_after(st, c);
	if (after >= 0)
		return sch_refuse(st, "reverse_compute_at %s %s: '%s' is computed after a "
			"loop of '%s'; move it first", stage, loop, st->stages[after].name, stage);
	if (cs->attach != SCH_ROOT || ps->attach != SCH_ROOT)
		return sch_refuse(st, "reverse_compute_at %s %s: both stages must be "
			"computed at the root", stage, loop);
	if (sch_stage_has_bound(cs))
		return sch_refuse(st, "reverse_compute_at %s %s: '%s' has loops bound to "
			"GPU indices; only stages at the root can have them", stage, loop, stage);
	for (int q = sch_leaf_pos(ps, it) + 1; q < ps->nleaves; q++)
		if (sch_kind_is_block(ps->iters[ps->leaves[q]].kind) ||
		    sch_kind_is_thread(ps->iters[ps->leaves[q]].kind))
			return sch_refuse(st, "reverse_compute_at %s %s: the bound loop %s.%s "
				"is inside it ('%s' would read what other blocks or threads "
				"write)", stage, loop, ps->name, ps->iters[ps->leaves[q]].name, stage);
	read_map m = { .ok = true };
	walk(&m, cs->te->body, ps->te);
	if (!m.seen)
		return sch_refuse(st, "reverse_compute_at %s %s: '%s' does not read '%s' "
			"directly", stage, loop, stage, ps->name);
	if (!m.ok)
		return sch_refuse(st, "reverse_compute_at %s %s: the loop does not cover "
			"what '%s' needs: %s", stage, loop, stage, m.why);
	for (int q = 0; q <= sch_leaf_pos(ps, it); q++)
		if (ps->iters[ps->leaves[q]].reduce)
			return sch_refuse(st, "reverse_compute_at %s %s: reduction loop %s.%s "
				"is not finished inside it", stage, loop, ps->name,
				ps->iters[ps->leaves[q]].name);
	int axis[TESSEL_MAX_DIMS];
	memcpy(axis, m.axis, sizeof(axis));
	for (int d = 0; d < ps->te->ndim; d++)
		if (cs->te->extent[axis[d]] != ps->te->extent[d])
			return sch_refuse(st, "reverse_compute_at %s %s: the loop does not "
				"cover what '%s' needs: its axis %s spans %lld elements, '%s' "
				"only %lld", stage, loop, stage, cs->te->axes[axis[d]]->name,
				(long long)cs->te->extent[axis[d]], ps->name,
				(long long)ps->te->extent[d]);
	int late = late_producer(st, c, p);
	if (late >= 0)
		return sch_refuse(st, "reverse_compute_at %s %s: '%s' also reads '%s', "
			"which is not computed before '%s'", stage, loop, stage,
			st->stages[late].name, ps->name);
	return 0;
}

static int reverse_compute_at_unchecked(sch_state *st, const char *stage, const char *loop)
{
	int c = sch_find_stage(st, stage), p, it;
	if (c < 0 || sch_find_loop(st, loop, &p, &it) ||
	    check_reverse(st, c, p, it, stage, loop))
		return -1;
	sch_stage *cs = &st->stages[c];
	cs->attach = SCH_AFTER;
	cs->attach_stage = p;
	cs->attach_iter = it;
	sch_step step;
	sch_step_init(&step, "reverse_compute_at");
	sch_step_arg(&step, "%s", stage);
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c: a stage that holds shared tiles must stay computed
 * at a loop of a root stage). */
int sch_reverse_compute_at(sch_state *st, const char *stage, const char *loop)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "reverse_compute_at %s %s", stage, loop);
	sch_guard_begin(st, &snap);
	return sch_guard_end(st, &snap, reverse_compute_at_unchecked(st, stage, loop), what);
}
