/* SPDX-License-Identifier: MIT */
/*
 * vec_cmd.h - a VEC command decoded (vec_check.c: decoding and every check of vector-units.md "Checks"),
 * shared with its execution (vec_unit.c).
 */
#ifndef TNPU_CORE_VEC_CMD_H
#define TNPU_CORE_VEC_CMD_H

#include <string.h>

#include "internal.h"

/* Decoded command (host byte order). */
struct vcmd {
	uint8_t op, fn, in, out, row, half, vf, lut, shift, chan;
	uint32_t n[4], d_off, a_off, b_off;
	int32_t d_st[4], a_st[4], b_st[4];
	struct tnpu_vec_pool_win pw;
	struct tnpu_vec_red_win rw;
	uint8_t win_raw[12];
	uint32_t scale, bias, lo, hi, rsvd;
	int16_t zp;
	uint64_t elems, taps;
};

static inline unsigned esize(uint8_t dt)
{
	return dt == TNPU_DTYPE_INT8 ? 1 : 4;
}

static inline float f32_of(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

/* Decode the 128-byte VEC command c into v. */
void vec_decode(const uint8_t *c, struct vcmd *v);
/* The field, shape and range checks in the spec's order: 0, or the job's error (tnpu_fail recorded). */
uint32_t vec_check(struct tnpu_exec *ex, struct vcmd *v);

#endif /* TNPU_CORE_VEC_CMD_H */
