/* SPDX-License-Identifier: MIT */
/*
 * accel-bench subcommands beyond gemm/conv.  Each lives in its own bench_<name>.c, takes the
 * subcommand's argv (argv[0] = the subcommand name), prints its JSON to stdout and returns the
 * process exit status (0 ok and verified, 1 failure, 2 usage).  Register one in subcommands.c.
 */
#ifndef ACCEL_BENCH_SUBCOMMANDS_H
#define ACCEL_BENCH_SUBCOMMANDS_H

struct bench_subcommand {
	const char *name;
	const char *usage;	/* one line, without "accel-bench NAME" */
	int (*main)(int argc, char **argv);
};

int bench_chain_main(int argc, char **argv);	/* bench_chain.c (chain #9) */
int bench_islands_main(int argc, char **argv);	/* bench_islands.c (chain #9) */

/* NULL-name terminated. */
extern const struct bench_subcommand bench_subcommands[];

#endif
