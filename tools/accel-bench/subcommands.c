/* SPDX-License-Identifier: MIT */
/* The table of accel-bench subcommands beyond gemm/conv (one line per subcommand). */
#include <stddef.h>

#include "subcommands.h"

const struct bench_subcommand bench_subcommands[] = {
	{ NULL, NULL, NULL },
};
