/* `tessel ops`: the built-in ops and their attributes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const char ops_help[] =
	"usage: tessel ops [NAME]\n"
	"\n"
	"List the built-in ops with their attributes; with NAME, describe one\n"
	"and print its tensor expression.\n";

static const char *attr_type_name(tessel_attr_type t)
{
	static const char *name[] = { "int", "bool", "ints", "dtype", "str", "float" };
	return name[t];
}

static void describe_op(int i, bool verbose)
{
	printf("%-22s %s\n", tessel_ops_name(i), tessel_ops_doc(i));
	for (int j = 0; j < tessel_ops_num_attrs(i); j++) {
		const tessel_attr_info *a = tessel_ops_attr(i, j);
		printf("    %-18s %-6s %s%s\n", a->name, attr_type_name(a->type),
			a->def ? "= " : "(required)", a->def ? a->def : "");
		if (verbose && a->doc)
			printf("        %s\n", a->doc);
	}
}

int cmd_ops(int argc, char **argv)
{
	if (argc > 0 && cli_is_help(argv[0])) {
		fputs(ops_help, stdout);
		return 0;
	}
	if (argc > 1)
		return cli_fail("ops: too many arguments (see tessel ops --help)");
	if (argc == 0) {
		for (int i = 0; i < tessel_ops_count(); i++)
			describe_op(i, false);
		return 0;
	}
	int i = tessel_ops_find(argv[0]);
	if (i < 0)
		return cli_fail("ops: no built-in op '%s'", argv[0]);
	describe_op(i, true);
	tessel_ctx *ctx = tessel_ctx_new();
	char *src = tessel_ops_source(ctx, argv[0], 0, NULL, NULL);
	if (src)
		printf("\n%s", src);
	else
		printf("\n(its tensor expression depends on attributes: "
		       "tessel check %s --set ...)\n", argv[0]);
	free(src);
	tessel_ctx_free(ctx);
	return 0;
}

