/* What the C compiler made of a kernel, counted in its machine code.
 *
 * Two schedules that differ in a split factor lower to loop programs
 * whose features differ by a little, while the compiler may keep one's
 * register tile in registers and spill the other's, or vectorize one
 * and not the other.  These counts, read from the disassembly of the
 * compiled shared object (GNU objdump; x86-64 mnemonics in AT&T syntax,
 * other ISAs count instructions and loops only), say what it did. */
#ifndef TESSEL_CG_CODE_STATS_H
#define TESSEL_CG_CODE_STATS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cg_code_counts {
	int instructions;
	int fma;            /* fused multiply-adds (vfmadd..., vfnmsub...) */
	int vector_loads;   /* vmov... and vbroadcast... from memory */
	int vector_stores;  /* vmov... to memory */
	int stack_refs;     /* memory operands based on %rsp or %rbp:
	                     * spills, and local arrays left in memory */
	int broadcasts;     /* vbroadcast... */
	int zmm;            /* instructions naming a 512-bit register */
} cg_code_counts;

typedef struct cg_code_stats {
	cg_code_counts all;   /* the whole .text section */
	cg_code_counts inner; /* the innermost loop with the most FMAs (then
	                       * instructions): the likely hot loop */
	int loops;            /* backward conditional branches */
	int frame_bytes;      /* the largest "sub $N,%rsp": stack frame */
} cg_code_stats;

/* Count into "s" the text "disasm" that `objdump -d --no-show-raw-insn`
 * printed.  Return 0, or -1 when it holds no instruction. */
int cg_code_stats_parse(const char *disasm, cg_code_stats *s);

/* Find the disassembler: $OBJDUMP, else "objdump" in $PATH; write its
 * path into "path" of size "len".  Return 0, or -1 when there is none. */
int cg_code_stats_tool(char *path, size_t len);

/* Disassemble the .text section of the shared object "so_path" with the
 * disassembler "tool" (cg_code_stats_tool) and count it into "s".
 * The counts are kept beside the object ("SO_PATH.stats") and read from
 * there the next time, so that a kernel of the cache is disassembled once
 * (a tuner's short list, then its measurement, then `model_records
 * --code`).  Return 0, or -1 with the reason in "err" of size "errlen":
 * it cannot be run, fails, runs past 10 s, or prints no instruction. */
int cg_code_stats_of(const char *tool, const char *so_path, cg_code_stats *s,
	char *err, size_t errlen);

#endif
