/* SPDX-License-Identifier: MIT */
/* The table of accel-bench subcommands beyond gemm/conv (one line per subcommand). */
#include <stddef.h>

#include "subcommands.h"

int bench_sparse_main(int argc, char **argv);
int bench_partition_main(int argc, char **argv);
int bench_plan_main(int argc, char **argv);	/* bench_plan.c */
int bench_vec_main(int argc, char **argv);	/* bench_vec.c (#16) */
int bench_model_main(int argc, char **argv);	/* bench_model.c (#16: whole models, compiled) */
int bench_pwdw_main(int argc, char **argv);	/* bench_pwdw.c (#16: expansion + depthwise in one job) */

const struct bench_subcommand bench_subcommands[] = {
	{ "chain", "[--m M --k K --n N --p P] [--band ROWS] [--slots S] [--device PATH|sim:...] [--json]", bench_chain_main },
	{ "islands", "[--m M --k K --n N] [--device sim:islands=...] [--json]", bench_islands_main },
	{ "sparse", "[--json] [--device PATH|sim] [--m M --n N --k K] [--zeros F,...]", bench_sparse_main },
	{ "partition", "[--json] [--device PATH|sim]", bench_partition_main },
	{ "plan", "[--n N --c C --h H --w W --k K --r R --s S --stride S --pad P --dilation D --c-block CB --dtype int8|fp32] [--device PATH|sim] [--json]", bench_plan_main },
	{ "vec", "[--json] [--device PATH|sim]", bench_vec_main },
	{ "model", "MODEL.onnx [--dtype fp32|int8] [--device PATH|sim] [--repeat N] [--seed S] [--nchw] [--no-pwdw] [--json]", bench_model_main },
	{ "pwdw", "--h H [--w W] --cin CIN --c C --stride S [--n N] [--r R --s S --pad P] [--dtype int8|fp32] [--zp Z] [--device PATH|sim] [--trace FILE] [--json]", bench_pwdw_main },
	{ NULL, NULL, NULL },
};
