/* Counting a kernel's machine code (codegen/code_stats.h). */
#include "codegen/code_stats.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codegen/compile.h"
#include "codegen/process.h"

#define DISASM_TIMEOUT_S 10.0
#define DISASM_MAX_BYTES (256u << 20)

enum {
	IS_FMA = 1 << 0,
	IS_LOAD = 1 << 1,
	IS_STORE = 1 << 2,
	IS_STACK = 1 << 3,
	IS_BCAST = 1 << 4,
	IS_ZMM = 1 << 5,
};

typedef struct insn {
	uint64_t addr;
	unsigned flags;
} insn;

typedef struct loop_span {
	uint64_t lo, hi;
} loop_span;

typedef struct parse_state {
	insn *insns;
	int ninsns, cap_insns;
	loop_span *loops;
	int nloops, cap_loops;
	bool no_memory;
} parse_state;

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void *grow(void *p, int *cap, size_t elem, bool *failed)
{
	int n = *cap ? *cap * 2 : 256;
	void *q = realloc(p, (size_t)n * elem);
	if (!q) {
		*failed = true;
		return p;
	}
	*cap = n;
	return q;
}

/* The flags of the instruction "op" with the operands "args". */
static unsigned classify(const char *op, const char *args)
{
	unsigned f = 0;
	bool memory = strchr(args, '(') != NULL;
	bool from_memory = memory && memchr(args, '(', strcspn(args, ",")) != NULL;
	if (starts(op, "vfmadd") || starts(op, "vfmsub") || starts(op, "vfnmadd") ||
	    starts(op, "vfnmsub"))
		f |= IS_FMA;
	if (starts(op, "vbroadcast"))
		f |= IS_BCAST;
	if ((starts(op, "vmov") || starts(op, "vbroadcast")) && from_memory)
		f |= IS_LOAD;
	if (starts(op, "vmov") && memory && !from_memory)
		f |= IS_STORE;
	if (strstr(args, "(%rsp") || strstr(args, "(%rbp"))
		f |= IS_STACK;
	if (strstr(args, "%zmm"))
		f |= IS_ZMM;
	return f;
}

static void count(cg_code_counts *c, unsigned f)
{
	c->instructions++;
	c->fma += !!(f & IS_FMA);
	c->vector_loads += !!(f & IS_LOAD);
	c->vector_stores += !!(f & IS_STORE);
	c->stack_refs += !!(f & IS_STACK);
	c->broadcasts += !!(f & IS_BCAST);
	c->zmm += !!(f & IS_ZMM);
}

/* Read one line of objdump's listing ("  addr:\tmnemonic operands") into
 * "p" and "s"; other lines are skipped. */
static void parse_line(parse_state *p, cg_code_stats *s, const char *line, size_t len)
{
	char buf[512], op[64];
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = 0;
	uint64_t addr;
	int at = 0, after_op = 0;
	if (sscanf(buf, " %" SCNx64 ":%n", &addr, &at) != 1 || at == 0 ||
	    sscanf(buf + at, " %63s%n", op, &after_op) != 1)
		return;
	const char *args = buf + at + after_op;
	args += strspn(args, " \t");
	if (p->ninsns == p->cap_insns)
		p->insns = grow(p->insns, &p->cap_insns, sizeof(*p->insns), &p->no_memory);
	if (p->no_memory)
		return;
	unsigned f = classify(op, args);
	p->insns[p->ninsns++] = (insn){ addr, f };
	count(&s->all, f);
	unsigned long long imm;
	if (strcmp(op, "sub") == 0 && sscanf(args, "$0x%llx,%%rsp", &imm) == 1 &&
	    imm < (1ull << 31) && (int)imm > s->frame_bytes)
		s->frame_bytes = (int)imm;
	uint64_t target;
	if (op[0] == 'j' && strcmp(op, "jmp") != 0 &&
	    sscanf(args, "%" SCNx64, &target) == 1 && target < addr) {
		if (p->nloops == p->cap_loops)
			p->loops = grow(p->loops, &p->cap_loops, sizeof(*p->loops),
				&p->no_memory);
		if (!p->no_memory)
			p->loops[p->nloops++] = (loop_span){ target, addr };
	}
}

static bool contains_another(const parse_state *p, int i)
{
	for (int j = 0; j < p->nloops; j++)
		if (j != i && p->loops[i].lo <= p->loops[j].lo &&
		    p->loops[j].hi <= p->loops[i].hi &&
		    (p->loops[j].lo != p->loops[i].lo || p->loops[j].hi != p->loops[i].hi))
			return true;
	return false;
}

/* The innermost loop with the most FMAs, then instructions, into s->inner. */
static void find_inner(const parse_state *p, cg_code_stats *s)
{
	for (int i = 0; i < p->nloops; i++) {
		if (contains_another(p, i))
			continue;
		cg_code_counts c = { 0 };
		for (int k = 0; k < p->ninsns; k++)
			if (p->insns[k].addr >= p->loops[i].lo && p->insns[k].addr <= p->loops[i].hi)
				count(&c, p->insns[k].flags);
		if (c.fma > s->inner.fma ||
		    (c.fma == s->inner.fma && c.instructions > s->inner.instructions))
			s->inner = c;
	}
}

int cg_code_stats_parse(const char *disasm, cg_code_stats *s)
{
	memset(s, 0, sizeof(*s));
	parse_state p = { 0 };
	for (const char *line = disasm; *line;) {
		size_t len = strcspn(line, "\n");
		parse_line(&p, s, line, len);
		line += len + (line[len] == '\n');
	}
	s->loops = p.nloops;
	if (!p.no_memory)
		find_inner(&p, s);
	free(p.insns);
	free(p.loops);
	return s->all.instructions > 0 && !p.no_memory ? 0 : -1;
}

int cg_code_stats_tool(char *path, size_t len)
{
	const char *env = getenv("OBJDUMP");
	return cg_find_program(env && *env ? env : "objdump", path, len);
}

typedef struct text_sink {
	char *data;
	size_t len, cap;
	bool failed;
} text_sink;

static void take_text(const char *data, size_t len, void *arg)
{
	text_sink *t = arg;
	if (t->failed)
		return;
	if (t->len + len + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 1 << 16;
		while (cap < t->len + len + 1)
			cap *= 2;
		char *q = cap <= DISASM_MAX_BYTES ? realloc(t->data, cap) : NULL;
		if (!q) {
			t->failed = true;
			return;
		}
		t->data = q;
		t->cap = cap;
	}
	memcpy(t->data + t->len, data, len);
	t->len += len;
	t->data[t->len] = 0;
}

/* The counts of a shared object are kept beside it in the kernel cache,
 * in "<so>.stats": one line, this tag, then the numbers.  Change the tag
 * when what is counted changes, so that older files are counted again. */
#define STATS_TAG "tessel-code-stats-1"
#define STATS_NUMBERS 16

/* Point "v" at the STATS_NUMBERS counts of "s", in the file's order. */
static void stats_numbers(cg_code_stats *s, int **v)
{
	cg_code_counts *c[2] = { &s->all, &s->inner };
	int k = 0;
	for (int i = 0; i < 2; i++) {
		v[k++] = &c[i]->instructions;
		v[k++] = &c[i]->fma;
		v[k++] = &c[i]->vector_loads;
		v[k++] = &c[i]->vector_stores;
		v[k++] = &c[i]->stack_refs;
		v[k++] = &c[i]->broadcasts;
		v[k++] = &c[i]->zmm;
	}
	v[k++] = &s->loops;
	v[k++] = &s->frame_bytes;
}

static void stats_path(const char *so_path, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s.stats", so_path) >= len)
		path[0] = 0;
}

/* Read the counts kept beside "so_path" into "s"; 0, or -1 when there are
 * none (or of another tag). */
static int read_kept(const char *so_path, cg_code_stats *s)
{
	char path[4096], tag[32];
	stats_path(so_path, path, sizeof path);
	FILE *f = path[0] ? fopen(path, "r") : NULL;
	if (!f)
		return -1;
	int *v[STATS_NUMBERS];
	stats_numbers(s, v);
	bool ok = fscanf(f, "%31s", tag) == 1 && strcmp(tag, STATS_TAG) == 0;
	for (int i = 0; ok && i < STATS_NUMBERS; i++)
		ok = fscanf(f, "%d", v[i]) == 1 && *v[i] >= 0;
	fclose(f);
	return ok ? 0 : -1;
}

/* Keep the counts "s" of "so_path" beside it; a cache that cannot be
 * written only means counting again next time. */
static void keep(const char *so_path, cg_code_stats *s)
{
	char path[4096], line[512], err[256];
	stats_path(so_path, path, sizeof path);
	int *v[STATS_NUMBERS];
	stats_numbers(s, v);
	int n = snprintf(line, sizeof line, "%s", STATS_TAG);
	for (int i = 0; i < STATS_NUMBERS; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %d", *v[i]);
	snprintf(line + n, sizeof line - (size_t)n, "\n");
	if (path[0])
		cg_write_file_atomically(path, line, err, sizeof err);
}

int cg_code_stats_of(const char *tool, const char *so_path, cg_code_stats *s,
	char *err, size_t errlen)
{
	if (read_kept(so_path, s) == 0)
		return 0;
	char *argv[] = { (char *)tool, "-d", "--no-show-raw-insn", "-j", ".text",
		(char *)so_path, NULL };
	text_sink t = { 0 };
	cg_run_result r;
	char how[64];
	int rc = cg_run_captured(tool, argv, DISASM_TIMEOUT_S, take_text, &t, &r);
	if (rc)
		snprintf(err, errlen, "%s cannot be run: %s", tool, strerror(rc));
	else if (r.timed_out)
		snprintf(err, errlen, "%s ran past %g s on %s and was killed", tool,
			DISASM_TIMEOUT_S, so_path);
	else if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		snprintf(err, errlen, "%s failed (%s) on %s%s%.200s", tool,
			cg_describe_end(&r, how, sizeof(how)), so_path,
			r.output[0] ? ": " : "", r.output);
	else if (t.failed)
		snprintf(err, errlen, "the disassembly of %s is too large", so_path);
	else if (cg_code_stats_parse(t.data ? t.data : "", s))
		snprintf(err, errlen, "%s printed no instruction for %s", tool, so_path);
	else {
		free(t.data);
		keep(so_path, s);
		return 0;
	}
	free(t.data);
	return -1;
}
