/* The subcommands of `tessel`, one file each (tools/cmd_NAME.c).  Each
 * takes the arguments after its name and returns the exit status. */
#ifndef TESSEL_TOOLS_COMMANDS_H
#define TESSEL_TOOLS_COMMANDS_H

int cmd_check(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_interp(int argc, char **argv);
int cmd_lower(int argc, char **argv);
int cmd_codegen(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_fuzz_sched(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
