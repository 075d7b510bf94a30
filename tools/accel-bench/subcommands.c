/* SPDX-License-Identifier: MIT */
/* The table of accel-bench subcommands beyond gemm/conv (one line per subcommand). */
#include <stddef.h>

#include "subcommands.h"

int bench_plan_main(int argc, char **argv);	/* bench_plan.c */

const struct bench_subcommand bench_subcommands[] = {
	{ "plan", "[--n N --c C --h H --w W --k K --r R --s S --stride S --pad P --dilation D --c-block CB --dtype int8|fp32] [--device PATH|sim] [--json]", bench_plan_main },
	{ NULL, NULL, NULL },
};
