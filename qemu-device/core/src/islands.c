/* SPDX-License-Identifier: MIT */
/*
 * Islands (chain #9, seed 000 paras 53-62): groups of consecutive cluster rows with their own
 * capabilities (data types, clock) and SRAM windows.  Parsing of the `islands=` spec, validation
 * and the island capability registers (Documentation/hardware/islands-and-chaining.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ALL_DTYPES (TNPU_CAP_DTYPE_INT8 | TNPU_CAP_DTYPE_FP32 | TNPU_CAP_DTYPE_BF16)

static int perr(char *msg, size_t msglen, const char *spec, const char *what)
{
	if (msg && msglen)
		snprintf(msg, msglen, "tnpu: islands=%s: %s", spec, what);
	return -EINVAL;
}

static int parse_dtypes(const char *s, size_t n, uint8_t *out)
{
	uint8_t m = 0;

	while (n) {
		const char *plus = memchr(s, '+', n);
		size_t len = plus ? (size_t)(plus - s) : n;

		if (len == 2 && !strncmp(s, "i8", 2))
			m |= TNPU_CAP_DTYPE_INT8;
		else if (len == 3 && !strncmp(s, "f32", 3))
			m |= TNPU_CAP_DTYPE_FP32;
		else if (len == 4 && !strncmp(s, "bf16", 4))
			m |= TNPU_CAP_DTYPE_BF16;
		else if (len == 3 && !strncmp(s, "all", 3))
			m |= ALL_DTYPES;
		else
			return -EINVAL;
		if (!plus)
			break;
		n -= len + 1;
		s = plus + 1;
		if (!n)
			return -EINVAL;
	}
	*out = m;
	return m ? 0 : -EINVAL;
}

/* One decimal number of at most `max`, the whole of [s, s+n). */
static int parse_num(const char *s, size_t n, unsigned max, unsigned *out)
{
	unsigned v = 0;

	if (!n || n > 3)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < 1 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int tnpu_islands_parse(const char *spec, struct tnpu_config *cfg, char *msg, size_t msglen)
{
	struct tnpu_island_cfg isl[TNPU_MAX_ISLANDS];
	unsigned n = 0;
	const char *p = spec;

	if (!cfg)
		return -EINVAL;
	memset(isl, 0, sizeof(isl));
	if (!spec || !*spec) {
		cfg->n_islands = 0;
		memset(cfg->islands, 0, sizeof(cfg->islands));
		return 0;
	}
	for (;;) {
		/* '/' separates islands too: QEMU -device and sim: option strings split on ','. */
		const char *comma = strpbrk(p, ",/");
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *c1 = memchr(p, ':', len), *c2 = NULL;
		unsigned rows, div = 1;
		uint8_t dt = ALL_DTYPES;

		if (n == TNPU_MAX_ISLANDS)
			return perr(msg, msglen, spec, "at most 8 islands");
		if (c1)
			c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - p));
		if (parse_num(p, c1 ? (size_t)(c1 - p) : len, TNPU_MAX_ROWS, &rows))
			return perr(msg, msglen, spec, "each island is ROWS[:DTYPES[:CLKDIV]] with ROWS 1..16");
		if (c1 && parse_dtypes(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : len - (size_t)(c1 + 1 - p), &dt))
			return perr(msg, msglen, spec, "DTYPES is i8, f32, bf16 joined by '+', or all");
		if (c2 && parse_num(c2 + 1, len - (size_t)(c2 + 1 - p), TNPU_ISLAND_MAX_CLKDIV, &div))
			return perr(msg, msglen, spec, "CLKDIV must be 1..8");
		isl[n].rows = (uint8_t)rows;
		isl[n].dtypes = dt;
		isl[n].clkdiv = (uint8_t)div;
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	cfg->n_islands = n;
	memcpy(cfg->islands, isl, sizeof(isl));
	return 0;
}

/* Part of tnpu_config_validate(): NULL or what is wrong. */
const char *tnpu_islands_check(const struct tnpu_config *cfg)
{
	unsigned sum = 0;

	if (!cfg->n_islands)
		return NULL;
	if (cfg->n_islands > TNPU_MAX_ISLANDS)
		return "at most 8 islands";
	for (unsigned i = 0; i < cfg->n_islands; i++) {
		const struct tnpu_island_cfg *c = &cfg->islands[i];

		if (!c->rows || !c->dtypes || (c->dtypes & ~ALL_DTYPES) || c->clkdiv < 1 ||
		    c->clkdiv > TNPU_ISLAND_MAX_CLKDIV || c->reserved)
			return "an island needs >= 1 row, a non-empty dtype set and clkdiv 1..8";
		sum += c->rows;
	}
	if (sum != cfg->rows)
		return "the islands' rows must add up to rows";
	return NULL;
}

unsigned tnpu_config_islands(const struct tnpu_config *cfg, struct tnpu_island_cfg out[TNPU_MAX_ISLANDS],
			     uint8_t first[TNPU_MAX_ISLANDS])
{
	unsigned n = cfg->n_islands, r = 0;

	memset(out, 0, sizeof(*out) * TNPU_MAX_ISLANDS);
	if (!n) {
		out[0] = (struct tnpu_island_cfg){ .rows = (uint8_t)cfg->rows, .dtypes = ALL_DTYPES, .clkdiv = 1 };
		first[0] = 0;
		return 1;
	}
	for (unsigned i = 0; i < n; i++) {
		out[i] = cfg->islands[i];
		first[i] = (uint8_t)r;
		r += out[i].rows;
	}
	return n;
}

uint32_t tnpu_island_reg(const struct tnpu_config *cfg, uint64_t off, bool *found)
{
	struct tnpu_island_cfg isl[TNPU_MAX_ISLANDS];
	uint8_t first[TNPU_MAX_ISLANDS];
	unsigned n = tnpu_config_islands(cfg, isl, first), i, r;

	*found = true;
	if (off == TNPU_REG_ISLANDS)
		return n | ((uint32_t)TNPU_NUM_RINGS << 8) | (12u << 16);
	if (off == TNPU_REG_RING_MEM)
		return TNPU_RING_MEM_BYTES;
	if (off < TNPU_REG_ISL_BASE || off >= TNPU_REG_ISL(TNPU_MAX_ISLANDS, 0)) {
		*found = false;
		return 0;
	}
	i = (unsigned)(off - TNPU_REG_ISL_BASE) / TNPU_REG_ISL_STRIDE;
	r = (unsigned)(off - TNPU_REG_ISL_BASE) % TNPU_REG_ISL_STRIDE;
	if (i >= n)
		return 0;	/* absent islands read 0 */
	switch (r) {
	case TNPU_ISL_ROWS:
		return first[i] | ((uint32_t)isl[i].rows << 8) | ((uint32_t)isl[i].clkdiv << 16);
	case TNPU_ISL_DTYPES:
		return isl[i].dtypes;
	case TNPU_ISL_SRAM_BASE:
		return (uint32_t)first[i] * cfg->sram;
	case TNPU_ISL_SRAM_SIZE:
		return (uint32_t)isl[i].rows * cfg->sram;
	}
	*found = false;
	return 0;
}
