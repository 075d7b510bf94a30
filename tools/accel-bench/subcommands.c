/* SPDX-License-Identifier: MIT */
/* The table of accel-bench subcommands beyond gemm/conv (one line per subcommand). */
#include <stddef.h>

#include "subcommands.h"

const struct bench_subcommand bench_subcommands[] = {
	{ "chain", "[--m M --k K --n N --p P] [--band ROWS] [--slots S] [--device PATH|sim:...] [--json]", bench_chain_main },
	{ "islands", "[--m M --k K --n N] [--device sim:islands=...] [--json]", bench_islands_main },
	{ NULL, NULL, NULL },
};
