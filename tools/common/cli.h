/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the command-line conventions every tnpu tool follows (Documentation/tools.md, "Conventions"):
 * --help prints to stdout and exits 0, --version prints "TOOL (tnpu) VERSION" and exits 0, a usage error
 * prints "TOOL: OPTION: REASON" and a pointer to --help on stderr and exits 2, numbers are checked.
 */
#ifndef TNPU_TOOLS_CLI_H
#define TNPU_TOOLS_CLI_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TNPU_VERSION
#define TNPU_VERSION "unknown"
#endif

#define CLI_EXIT_USAGE 2

static inline int cli_version(const char *prog)
{
	printf("%s (tnpu) %s\n", prog, TNPU_VERSION);
	return 0;
}

/* A usage error: "prog: message" and the pointer to --help on stderr; returns CLI_EXIT_USAGE. */
static inline int __attribute__((format(printf, 2, 3))) cli_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
	return CLI_EXIT_USAGE;
}

/* Parse the value of option opt as an unsigned integer in [min, max]; 0 or a usage error (2). */
static inline int cli_u32(const char *prog, const char *opt, const char *val, unsigned long min, unsigned long max,
			  uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!val)
		return cli_usage_error(prog, "%s: needs a value", opt);
	errno = 0;
	v = strtoul(val, &end, 10);
	if (!*val || *end || errno || val[0] == '-')
		return cli_usage_error(prog, "%s: '%s' is not a number", opt, val);
	if (v < min || v > max)
		return cli_usage_error(prog, "%s: %lu is out of range (%lu..%lu)", opt, v, min, max);
	*out = (uint32_t)v;
	return 0;
}

#endif
