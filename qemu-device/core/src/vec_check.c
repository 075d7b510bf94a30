/* SPDX-License-Identifier: MIT */
/*
 * vec_check.c - a VEC command's decoding and its checks (Documentation/hardware/vector-units.md
 * "Checks", in order): field rules (VEC_DESC), the work bound and pooling window (VEC_SHAPE), the
 * operands' ranges and alignment (SRAM_RANGE, ALIGN).  Every check runs before any row computes
 * (vec_unit.c), so a hostile command costs bounded host time and changes nothing.
 */
#include "vec_cmd.h"

static bool dt_ok(uint8_t dt)
{
	return dt == TNPU_DTYPE_INT8 || dt == TNPU_DTYPE_INT32 || dt == TNPU_DTYPE_FP32;
}

void vec_decode(const uint8_t *c, struct vcmd *v)
{
	memset(v, 0, sizeof(*v));
	v->op = c[8];
	v->fn = c[9];
	v->in = c[10];
	v->out = c[11];
	v->row = c[12];
	v->half = c[13];
	v->vf = c[14];
	v->lut = c[15];
	for (unsigned k = 0; k < 4; k++) {
		v->n[k] = ld32(c + 16 + 4 * k);
		v->d_st[k] = (int32_t)ld32(c + 36 + 4 * k);
		v->a_st[k] = (int32_t)ld32(c + 56 + 4 * k);
		v->b_st[k] = (int32_t)ld32(c + 76 + 4 * k);
	}
	v->d_off = ld32(c + 32);
	v->a_off = ld32(c + 52);
	v->b_off = ld32(c + 72);
	memcpy(v->win_raw, c + 92, 12);
	v->pw.win_h = ld16(c + 92);
	v->pw.win_w = ld16(c + 94);
	v->pw.stride_y = c[96];
	v->pw.stride_x = c[97];
	v->pw.pad_top = c[98];
	v->pw.pad_left = c[99];
	v->pw.in_h = ld16(c + 100);
	v->pw.in_w = ld16(c + 102);
	v->rw.red_len = ld32(c + 92);
	v->rw.red_st = (int32_t)ld32(c + 96);
	v->rw.reserved = ld32(c + 100);
	v->scale = ld32(c + 104);
	v->bias = ld32(c + 108);
	v->shift = c[112];
	v->chan = c[113];
	v->zp = (int16_t)ld16(c + 114);
	v->lo = ld32(c + 116);
	v->hi = ld32(c + 120);
	v->rsvd = ld32(c + 124);
}

static bool b_zero(const struct vcmd *v)
{
	return !v->b_off && !v->b_st[0] && !v->b_st[1] && !v->b_st[2] && !v->b_st[3];
}

static bool win_zero(const struct vcmd *v)
{
	for (unsigned i = 0; i < 12; i++)
		if (v->win_raw[i])
			return false;
	return true;
}

static bool zp_ok(int16_t zp)
{
	return zp >= -128 && zp <= 127;
}

/* Field rules (vector-units.md "Checks" 1): 0 or the byte offset of the first bad field + 1. */
static unsigned check_fields(const struct tnpu_exec *ex, const struct vcmd *v)
{
	bool fnf = v->fn >= TNPU_VEC_FN_FIRST && v->fn <= TNPU_VEC_FN_LAST;
	bool fnp = v->fn >= TNPU_VEC_FN_PARAM_FIRST && v->fn <= TNPU_VEC_FN_PARAM_LAST;	/* lo, hi: fp32 */

	if (v->op > TNPU_VEC_REDUCE)
		return 8 + 1;
	if (!dt_ok(v->in))
		return 10 + 1;
	if (!dt_ok(v->out))
		return 11 + 1;
	if (v->row != 0xFF && v->row >= ex->cfg.rows)
		return 12 + 1;
	if (v->half > 1)
		return 13 + 1;
	/* QADD is BINARY's, LAST REDUCE's: any other op rejects it here, where every reserved bit always was */
	if (v->vf & ~(TNPU_VEC_F_MASK & ~(v->op == TNPU_VEC_BINARY ? 0 : TNPU_VEC_F_QADD) &
		      ~(v->op == TNPU_VEC_REDUCE ? 0 : TNPU_VEC_F_LAST)))
		return 14 + 1;
	for (unsigned k = 0; k < 4; k++)
		if (!v->n[k])
			return 16 + 4 * k + 1;
	if (v->rsvd)
		return 124 + 1;
	switch (v->op) {
	case TNPU_VEC_MAP: {
		bool rq = v->fn == TNPU_VEC_REQUANT, pc = rq && (v->vf & TNPU_VEC_F_PER_CHANNEL);
		bool uses_scale = (rq && !pc) || v->fn == TNPU_VEC_QUANT || v->fn == TNPU_VEC_DEQUANT || fnf;
		bool uses_zp = rq || v->fn == TNPU_VEC_QUANT || v->fn == TNPU_VEC_DEQUANT;

		switch (v->fn) {
		case TNPU_VEC_COPY:
			if (v->out != v->in)
				return 11 + 1;
			break;
		case TNPU_VEC_LUT:
			if (v->in != TNPU_DTYPE_INT8)
				return 10 + 1;
			if (v->out != TNPU_DTYPE_INT8)
				return 11 + 1;
			break;
		case TNPU_VEC_CLAMP:
			if (v->out != v->in)
				return 11 + 1;
			if (v->in == TNPU_DTYPE_INT8 &&
			    ((int32_t)v->lo < -128 || (int32_t)v->lo > 127 || (int32_t)v->hi < -128 || (int32_t)v->hi > 127))
				return 116 + 1;
			break;
		case TNPU_VEC_REQUANT:
			if (v->in == TNPU_DTYPE_FP32)
				return 10 + 1;
			if (v->out != TNPU_DTYPE_INT8)
				return 11 + 1;
			break;
		case TNPU_VEC_QUANT:
			if (v->in != TNPU_DTYPE_FP32)
				return 10 + 1;
			if (v->out != TNPU_DTYPE_INT8)
				return 11 + 1;
			break;
		case TNPU_VEC_DEQUANT:
			if (v->in != TNPU_DTYPE_INT8)
				return 10 + 1;
			if (v->out != TNPU_DTYPE_FP32)
				return 11 + 1;
			break;
		default:
			if (!fnf)
				return 9 + 1;
			if (v->in != TNPU_DTYPE_FP32)
				return 10 + 1;
			if (v->out != TNPU_DTYPE_FP32)
				return 11 + 1;
			break;
		}
		if ((v->vf & TNPU_VEC_F_RELU) && !(v->fn == TNPU_VEC_CLAMP || fnf))
			return 14 + 1;
		if ((v->vf & TNPU_VEC_F_PER_CHANNEL) && !rq)
			return 14 + 1;
		if (v->vf & TNPU_VEC_F_COUNT_PAD)
			return 14 + 1;
		if (v->fn == TNPU_VEC_LUT ? v->lut >= TNPU_VEC_LUTS : v->lut)
			return 15 + 1;
		if (pc ? (v->b_st[0] || v->b_st[1] || v->b_st[2] || v->b_st[3]) : !b_zero(v))
			return 72 + 1;
		if (!win_zero(v))
			return 92 + 1;
		if (!uses_scale && v->scale)
			return 104 + 1;
		if (!fnf && v->bias)
			return 108 + 1;
		if ((rq && !pc) ? v->shift > 62 : v->shift)
			return 112 + 1;
		if (pc ? v->chan > 3 : v->chan)
			return 113 + 1;
		if (uses_zp ? !zp_ok(v->zp) : v->zp)
			return 114 + 1;
		if (v->fn != TNPU_VEC_CLAMP && !fnp && (v->lo || v->hi))
			return 116 + 1;
		if (fnp && v->fn != TNPU_VEC_ELU && v->hi)	/* LEAKY, THRESH: lo only */
			return 120 + 1;
		return 0;
	}
	case TNPU_VEC_BINARY: {
		bool rq = v->in == TNPU_DTYPE_INT8 && v->out == TNPU_DTYPE_INT8;
		bool q = v->vf & TNPU_VEC_F_QADD;	/* lo, hi: zero points; bias: B's multiplier */
		bool cmp = v->fn >= TNPU_VEC_CMP_EQ;

		if (v->fn > TNPU_VEC_CMP_GE)
			return 9 + 1;
		if (v->fn > TNPU_VEC_MIN && v->in != TNPU_DTYPE_FP32)	/* DIV, PRELU, POW, CMP_*: fp32 only */
			return 10 + 1;
		if (cmp ? v->out != TNPU_DTYPE_INT8 : (v->in == TNPU_DTYPE_INT8 ? v->out == TNPU_DTYPE_FP32 : v->out != v->in))
			return 11 + 1;
		if (cmp && (v->vf & TNPU_VEC_F_RELU))	/* a truth value has no ReLU */
			return 14 + 1;
		if ((v->vf & ~(TNPU_VEC_F_RELU | TNPU_VEC_F_QADD)) ||
		    (q && (!rq || (v->fn != TNPU_VEC_ADD && v->fn != TNPU_VEC_SUB))))
			return 14 + 1;
		if (v->lut)
			return 15 + 1;
		if (!win_zero(v))
			return 92 + 1;
		if (!rq && v->scale)
			return 104 + 1;
		if (!q && v->bias)
			return 108 + 1;
		if (rq ? v->shift > 62 : v->shift)
			return 112 + 1;
		if (v->chan)
			return 113 + 1;
		if (rq ? !zp_ok(v->zp) : v->zp)
			return 114 + 1;
		if (q) {
			if ((int32_t)v->lo < -128 || (int32_t)v->lo > 127)
				return 116 + 1;
			if ((int32_t)v->hi < -128 || (int32_t)v->hi > 127)
				return 120 + 1;
		} else if (v->lo || v->hi) {
			return 116 + 1;
		}
		return 0;
	}
	case TNPU_VEC_POOL: {
		bool rq = v->fn == TNPU_VEC_POOL_AVG && v->in == TNPU_DTYPE_INT8;

		if (v->fn > TNPU_VEC_POOL_AVG)
			return 9 + 1;
		if (v->in == TNPU_DTYPE_INT32)
			return 10 + 1;
		if (v->out != v->in)
			return 11 + 1;
		if ((v->vf & ~TNPU_VEC_F_COUNT_PAD) || (v->fn == TNPU_VEC_POOL_MAX && v->vf) ||
		    (rq && !(v->vf & TNPU_VEC_F_COUNT_PAD)))
			return 14 + 1;
		if (v->lut)
			return 15 + 1;
		if (!b_zero(v))
			return 72 + 1;
		if (!rq && v->scale)
			return 104 + 1;
		if (v->bias)
			return 108 + 1;
		if (rq ? v->shift > 62 : v->shift)
			return 112 + 1;
		if (v->chan)
			return 113 + 1;
		if (rq ? !zp_ok(v->zp) : v->zp)
			return 114 + 1;
		if (v->lo || v->hi)
			return 116 + 1;
		return 0;
	}
	default: { /* REDUCE */
		bool f = v->in == TNPU_DTYPE_FP32, mm = v->fn == TNPU_VEC_RED_MAX || v->fn == TNPU_VEC_RED_MIN;
		bool arg = v->fn == TNPU_VEC_RED_ARGMAX || v->fn == TNPU_VEC_RED_ARGMIN;

		if (v->fn > TNPU_VEC_RED_ARGMIN)
			return 9 + 1;
		if ((v->fn == TNPU_VEC_RED_PROD || arg) && !f)	/* PROD, ARGMAX, ARGMIN: fp32 in */
			return 10 + 1;
		if (mm ? v->out != v->in : v->out != (f && !arg ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32))
			return 11 + 1;
		if (v->vf & ~(arg ? TNPU_VEC_F_LAST : 0))
			return 14 + 1;
		if (v->lut)
			return 15 + 1;
		if (!b_zero(v))
			return 72 + 1;
		if (!v->rw.red_len)
			return 92 + 1;
		if (v->rw.reserved)
			return 100 + 1;
		if ((!f || mm || arg || v->fn == TNPU_VEC_RED_PROD) && v->scale)	/* SUM, SUMSQ fp32 only */
			return 104 + 1;
		if (v->bias)
			return 108 + 1;
		if (v->shift)
			return 112 + 1;
		if (v->chan)
			return 113 + 1;
		if (v->zp)
			return 114 + 1;
		if (v->lo || v->hi)
			return 116 + 1;
		return 0;
	}
	}
}

/* Work bounds and the pooling window (Checks 2): 0 or field offset + 1. */
static unsigned check_shape(struct vcmd *v)
{
	const struct tnpu_vec_pool_win *w = &v->pw;

	v->elems = 1;
	for (unsigned k = 0; k < 4; k++) {
		v->elems *= v->n[k];
		if (v->elems > TNPU_VEC_MAX_ELEMS)
			return 16 + 1;
	}
	v->taps = 1;
	if (v->op == TNPU_VEC_POOL) {
		if (!w->win_h || !w->win_w || !w->stride_y || !w->stride_x || !w->in_h || !w->in_w ||
		    w->pad_top >= w->win_h || w->pad_left >= w->win_w ||
		    (int64_t)(v->n[1] - 1) * w->stride_y - w->pad_top >= w->in_h ||
		    (int64_t)(v->n[2] - 1) * w->stride_x - w->pad_left >= w->in_w)
			return 92 + 1;
		v->taps = (uint64_t)w->win_h * w->win_w;
	} else if (v->op == TNPU_VEC_REDUCE) {
		v->taps = v->rw.red_len;
	}
	if (v->taps > TNPU_VEC_MAX_WORK || v->elems * v->taps > TNPU_VEC_MAX_WORK)
		return 92 + 1;
	return 0;
}

/* Byte range [lo, hi) an operand can address; false on misalignment. */
static bool span(uint32_t off, const uint32_t *m, const int32_t *st, unsigned nd, unsigned e, int64_t *lo,
		 int64_t *hi)
{
	*lo = off;
	*hi = (int64_t)off + e;
	if (off % e)
		return false;
	for (unsigned k = 0; k < nd; k++) {
		int64_t x = (int64_t)(m[k] - 1) * st[k];

		if (st[k] % (int32_t)e)
			return false;
		if (x < 0)
			*lo += x;
		else
			*hi += x;
	}
	return true;
}

static uint32_t check_ranges(struct tnpu_exec *ex, const struct vcmd *v)
{
	unsigned ein = esize(v->in), eout = esize(v->out);
	int64_t lo, hi;
	uint32_t m[5];
	int32_t st[5];

	/* destination */
	if (!span(v->d_off, v->n, v->d_st, 4, eout, &lo, &hi))
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 0, v->d_off);
	if (lo < 0 || hi > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, v->d_off);
	/* A */
	memcpy(m, v->n, sizeof(v->n));
	memcpy(st, v->a_st, sizeof(v->a_st));
	if (v->op == TNPU_VEC_POOL) {
		m[1] = v->pw.in_h;
		m[2] = v->pw.in_w;
	}
	m[4] = v->op == TNPU_VEC_REDUCE ? v->rw.red_len : 1;
	st[4] = v->op == TNPU_VEC_REDUCE ? v->rw.red_st : 0;
	if (!span(v->a_off, m, st, 5, ein, &lo, &hi))
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 1, v->a_off);
	if (lo < 0 || hi > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 1, v->a_off);
	/* B: second operand or the per-channel table */
	if (v->op == TNPU_VEC_BINARY) {
		if (!span(v->b_off, v->n, v->b_st, 4, ein, &lo, &hi))
			return tnpu_fail(ex, TNPU_ERR_ALIGN, 2, v->b_off);
		if (lo < 0 || hi > ex->half)
			return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 2, v->b_off);
	} else if (v->op == TNPU_VEC_MAP && (v->vf & TNPU_VEC_F_PER_CHANNEL)) {
		if (v->b_off % 4)
			return tnpu_fail(ex, TNPU_ERR_ALIGN, 2, v->b_off);
		if ((uint64_t)v->b_off + 8ull * v->n[v->chan] > ex->half)
			return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 2, v->b_off);
	}
	return 0;
}

/* ---- element access ---------------------------------------------------------------------- */

uint32_t vec_check(struct tnpu_exec *ex, struct vcmd *v)
{
	unsigned bad = check_fields(ex, v);

	if (bad)
		return tnpu_fail(ex, TNPU_ERR_VEC_DESC, bad - 1, 0);
	bad = check_shape(v);
	if (bad)
		return tnpu_fail(ex, TNPU_ERR_VEC_SHAPE, bad - 1, 0);
	if (check_ranges(ex, v))
		return ex->res->error;
	return 0;
}
