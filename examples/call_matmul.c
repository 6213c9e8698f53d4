/* Call a kernel tessel generated from a program of one's own: the C that
 * `tessel codegen` prints for the best record of a tuned matmul,
 * compiled beside this file, with no tessel library at all.
 *
 *   tessel tune matmul --set M=256,N=256,K=256 --trials 200 --db mm.db
 *   tessel codegen matmul --set M=256,N=256,K=256 --db mm.db > matmul.c
 *   cc -O3 -march=native -std=gnu17 -Iinclude -DM=256 -DN=256 -DK=256 \
 *       examples/call_matmul.c matmul.c -lm -o call_matmul
 *   ./call_matmul
 *
 * The generated source carries its own copy of the declarations of
 * include/tessel/kernel.h and defines one function named after the op,
 * taking the data pointers of its inputs, then its outputs, in the op's
 * order.  The caller gives it a tessel_kernel_env: how to run a parallel
 * loop (here one thread runs every iteration; a program with a thread
 * pool hands the chunks to it) and where scratch memory comes from.  The
 * program checks C against a plain triple loop in double precision and
 * exits 1 when an element is off. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "tessel/kernel.h"

#ifndef M
#define M 64
#endif
#ifndef N
#define N 64
#endif
#ifndef K
#define K 64
#endif

int matmul(void *const *args, const tessel_kernel_env *env);

/* Run the whole loop on the calling thread. */
static void serial_for(const tessel_kernel_env *env, int64_t n,
	tessel_parallel_body body, void *closure)
{
	(void)env;
	body(0, n, closure);
}

/* The blocks workspace_alloc gave, last on top (one thread here). */
static void *scratch[64];
static int nscratch;

static void *scratch_alloc(const tessel_kernel_env *env, size_t bytes)
{
	(void)env;
	if (nscratch == (int)(sizeof(scratch) / sizeof(scratch[0])))
		return NULL;
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (p)
		scratch[nscratch++] = p;
	return p;
}

static void scratch_pop(const tessel_kernel_env *env, int count)
{
	(void)env;
	while (count-- > 0 && nscratch > 0)
		free(scratch[--nscratch]);
}

int main(void)
{
	float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
	float *c = malloc(sizeof(float) * M * N);
	if (!a || !b || !c) {
		fprintf(stderr, "call_matmul: out of memory\n");
		return 1;
	}
	unsigned seed = 12345;
	for (int i = 0; i < M * K; i++)
		a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.0f - 0.5f;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.0f - 0.5f;
	tessel_kernel_env env = { .num_threads = 1, .parallel_for = serial_for,
		.workspace_alloc = scratch_alloc, .workspace_pop = scratch_pop };
	void *args[] = { a, b, c };
	int status = matmul(args, &env);
	double worst = 0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double want = 0, scale = 0;
			for (int k = 0; k < K; k++) {
				want += (double)a[i * K + k] * b[k * N + j];
				scale += fabs((double)a[i * K + k] * b[k * N + j]);
			}
			double err = fabs(c[i * N + j] - want) / (scale > 0 ? scale : 1);
			worst = err > worst ? err : worst;
		}
	bool ok = status == 0 && worst < 1e-5 && nscratch == 0;
	printf("matmul %dx%dx%d: kernel returned %d, worst relative error %.3g, "
		"scratch blocks left %d: %s\n", M, N, K, status, worst, nscratch,
		ok ? "ok" : "WRONG");
	free(a);
	free(b);
	free(c);
	return ok ? 0 : 1;
}
