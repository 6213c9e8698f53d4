/* Tensors on the command line (tools/tensors.c). */
#ifndef TESSEL_TOOLS_TENSORS_H
#define TESSEL_TOOLS_TENSORS_H

#include <stdint.h>

#include "tessel/te.h"
#include "tools/cli.h"

/* The data options shared by interp and run: --in NAME=FILE.npy (many),
 * --seed S, --out DIR. */
typedef struct cli_data {
	int nin;
	char *in_names[CLI_MAX_IN];
	const char *in_files[CLI_MAX_IN];
	uint64_t seed;
	const char *out_dir;
} cli_data;

/* Consume argv[*i] when it is one of the data options: return 1 when it
 * was, 0 when not, -1 after printing an error. */
int cli_data_option(cli_data *d, int argc, char **argv, int *i);
void cli_data_free(cli_data *d);

/* Make the inputs of the bound "op" into "in": the --in files, and seeded
 * random data for the others.  Return 0, or 1 after printing an error. */
int cli_make_inputs(const cli_data *d, tessel_op *op, tessel_tensor **in);
/* Allocate the outputs of "op" into "out"; 0, or 1 after an error. */
int cli_make_outputs(tessel_op *op, tessel_tensor **out);
void cli_free_tensors(tessel_tensor **ts, int n);
/* Print the shape, range, mean and first values of "t". */
void cli_summarize(const char *name, const tessel_tensor *t);
/* Write every output as DIR/NAME.npy; 0, or 1 after an error. */
int cli_write_outputs(const cli_data *d, tessel_op *op, tessel_tensor **out);

#endif
