/* SPDX-License-Identifier: MIT */
/*
 * vec_unit.c - ISA 2 vector units (device-ops #16): VEC_LUT and VEC.
 *
 * One vector unit per storage unit reads and writes its own SRAM half: element-wise MAP (copy, LUT,
 * clamp, requantisation, fp32 functions in vec_fn.c), BINARY with broadcast strides (and QADD: an int8
 * add/sub whose operands have their own zero points and multipliers, CAP_FEATURES bit 20), POOL (max /
 * average over a window with implicit padding) and REDUCE (sum, max, sum of squares along one
 * strided axis; VEC math's min, product, arg-max).  Spec: Documentation/hardware/vector-units.md.
 * Every check (vec_check.c) runs before any row computes, every input is read before any output is
 * written (in-place is well defined), and the work of one command is bounded (VEC_SHAPE), so hostile
 * commands cost bounded host time.
 */
#include <math.h>
#include <stdlib.h>

#include "vec_cmd.h"

uint32_t tnpu_vec_cmd_size(uint8_t op)
{
	if (op == TNPU_CMD_VEC_LUT)
		return sizeof(struct tnpu_cmd_vec_lut);
	if (op == TNPU_CMD_VEC)
		return sizeof(struct tnpu_cmd_vec);
	return 0;
}

static int64_t ld_i(const uint8_t *p, uint8_t dt)
{
	if (dt == TNPU_DTYPE_INT8)
		return (int8_t)p[0];
	return (int32_t)ld32(p);
}

static float ld_f(const uint8_t *p)
{
	return f32_of(ld32(p));
}

static int8_t sat8(int64_t x)
{
	return (int8_t)(x < -128 ? -128 : (x > 127 ? 127 : x));
}

/*
 * SFU REQUANT formula (isa.md): sat8(((x*M + rnd) >> s) + zp), exact.  x is at most an int8 average
 * pool's sum, 2^26 taps x 128 = 2^33 in magnitude, so x*M needs up to 65 bits (issue #28: signed
 * overflow in 64): the product, rounding and arithmetic shift run in 128 bits, the same result
 * wherever 64 sufficed.
 */
static int8_t requant(int64_t x, int32_t m, unsigned s, int16_t zp)
{
	__int128 y = (__int128)x * m + (s ? (__int128)1 << (s - 1) : 0);

	y = (y >> s) + zp;
	return (int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));
}

/* int8 average pooling: channels summed at a time (their int64 sums: 32 KiB, not 8 bytes per channel) */
#define VEC_SUM_CHANNELS 4096u

/* Results are kept as 32-bit words (int32 / fp32 bits / int8 sign-extended) until written. */
union val {
	int32_t i;
	float f;
};

static float fmax_nan(float a, float b)
{
	if (a != a || b != b)
		return a + b;
	return a > b ? a : b;
}

static float fmin_nan(float a, float b)
{
	if (a != a || b != b)
		return a + b;
	return a < b ? a : b;
}

static union val map_one(const struct vcmd *v, const int8_t *lut, const uint8_t *p, const uint8_t *half,
			 const uint32_t *idx)
{
	union val r;

	switch (v->fn) {
	case TNPU_VEC_COPY:
		r.i = v->in == TNPU_DTYPE_INT8 ? (int8_t)p[0] : (int32_t)ld32(p);
		return r;
	case TNPU_VEC_LUT:
		r.i = lut[(int8_t)p[0] + 128];
		return r;
	case TNPU_VEC_CLAMP:
		if (v->in == TNPU_DTYPE_FP32) {
			float x = ld_f(p), lo = f32_of(v->lo), hi = f32_of(v->hi);

			r.f = x < lo ? lo : (x > hi ? hi : x);
			if ((v->vf & TNPU_VEC_F_RELU) && r.f < 0)
				r.f = 0;
		} else {
			int64_t x = ld_i(p, v->in), lo = (int32_t)v->lo, hi = (int32_t)v->hi;

			x = x < lo ? lo : (x > hi ? hi : x);
			if ((v->vf & TNPU_VEC_F_RELU) && x < 0)
				x = 0;
			r.i = (int32_t)x;
		}
		return r;
	case TNPU_VEC_REQUANT:
		if (v->vf & TNPU_VEC_F_PER_CHANNEL) {
			const uint8_t *e = half + v->b_off + 8ull * idx[v->chan];
			uint32_t s = ld32(e + 4);

			/* a shift above 62 saturates like a shift of 62 would not: define it as 62 */
			r.i = requant(ld_i(p, v->in), (int32_t)ld32(e), s > 62 ? 62 : s, v->zp);
		} else {
			r.i = requant(ld_i(p, v->in), (int32_t)v->scale, v->shift, v->zp);
		}
		return r;
	case TNPU_VEC_QUANT: {
		float x = ld_f(p) * f32_of(v->scale);

		if (x != x)
			r.i = v->zp;
		else
			r.i = sat8((int64_t)fmax(fmin((double)rintf(x) + v->zp, 1e6), -1e6));
		return r;
	}
	case TNPU_VEC_DEQUANT:
		r.f = (float)((int8_t)p[0] - v->zp) * f32_of(v->scale);
		return r;
	default: {
		float t = ld_f(p) * f32_of(v->scale) + f32_of(v->bias);

		r.f = tnpu_vec_eval_p(v->fn, t, f32_of(v->lo), f32_of(v->hi));
		if ((v->vf & TNPU_VEC_F_RELU) && r.f < 0)
			r.f = 0;
		return r;
	}
	}
}

static union val bin_one(const struct vcmd *v, const uint8_t *pa, const uint8_t *pb)
{
	union val r;

	if (v->in == TNPU_DTYPE_FP32) {
		float a = ld_f(pa), b = ld_f(pb);

		switch (v->fn) {
		case TNPU_VEC_ADD: r.f = a + b; break;
		case TNPU_VEC_SUB: r.f = a - b; break;
		case TNPU_VEC_MUL: r.f = a * b; break;
		case TNPU_VEC_MAX: r.f = fmax_nan(a, b); break;
		case TNPU_VEC_MIN: r.f = fmin_nan(a, b); break;
		case TNPU_VEC_DIV: r.f = a / b; break;
		case TNPU_VEC_PRELU: r.f = a < 0.0f ? a * b : a; break;
		case TNPU_VEC_POW: r.f = tnpu_vec_pow(a, b); break;
		default:	/* CMP_*: an INT8 truth value */
			r.i = v->fn == TNPU_VEC_CMP_EQ ? a == b : v->fn == TNPU_VEC_CMP_LT ? a < b :
			      v->fn == TNPU_VEC_CMP_LE ? a <= b : v->fn == TNPU_VEC_CMP_GT ? a > b : a >= b;
			return r;
		}
		if ((v->vf & TNPU_VEC_F_RELU) && r.f < 0)
			r.f = 0;
		return r;
	}
	if (v->in == TNPU_DTYPE_INT32) {
		uint32_t a = ld32(pa), b = ld32(pb);

		switch (v->fn) {
		case TNPU_VEC_ADD: r.i = (int32_t)(a + b); break;
		case TNPU_VEC_SUB: r.i = (int32_t)(a - b); break;
		case TNPU_VEC_MUL: r.i = (int32_t)(a * b); break;
		case TNPU_VEC_MAX: r.i = (int32_t)a > (int32_t)b ? (int32_t)a : (int32_t)b; break;
		default: r.i = (int32_t)a < (int32_t)b ? (int32_t)a : (int32_t)b; break;
		}
		if ((v->vf & TNPU_VEC_F_RELU) && r.i < 0)
			r.i = 0;
		return r;
	}
	if (v->vf & TNPU_VEC_F_QADD) {	/* each operand its own zero point and multiplier, one rounding */
		int64_t ra = (int64_t)((int8_t)pa[0] - (int32_t)v->lo) * (int32_t)v->scale;
		int64_t rb = (int64_t)((int8_t)pb[0] - (int32_t)v->hi) * (int32_t)v->bias;
		int64_t x = v->fn == TNPU_VEC_SUB ? ra - rb : ra + rb;

		if ((v->vf & TNPU_VEC_F_RELU) && x < 0)
			x = 0;
		r.i = requant(x, 1, v->shift, v->zp);
		return r;
	}
	{
		int32_t a = (int8_t)pa[0], b = (int8_t)pb[0], x;

		switch (v->fn) {
		case TNPU_VEC_ADD: x = a + b; break;
		case TNPU_VEC_SUB: x = a - b; break;
		case TNPU_VEC_MUL: x = a * b; break;
		case TNPU_VEC_MAX: x = a > b ? a : b; break;
		default: x = a < b ? a : b; break;
		}
		if ((v->vf & TNPU_VEC_F_RELU) && x < 0)
			x = 0;
		r.i = v->out == TNPU_DTYPE_INT8 ? requant(x, (int32_t)v->scale, v->shift, v->zp) : x;
		return r;
	}
}

/* One tap of a window over a run of n channels packed in the input (channel stride = the element):
 * the per-channel operations of pool_run's general loops, in loops the compiler vectorises (inside
 * pool_row's clones). */
/* A little-endian fp32 element: a plain load on little-endian hosts (which vectorises; ld32's byte
 * assembly does not), ld_f elsewhere. */
static inline float ld_f_run(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	float f;

	memcpy(&f, p, 4);
	return f;
#else
	return ld_f(p);
#endif
}

static inline __attribute__((always_inline)) void pool_tap_f32(union val *restrict o, const uint8_t *restrict p, uint32_t n, bool avg, bool first)
{
	/* the results as plain 32-bit words (a union member access does not vectorise) */
	if (avg) {
		for (uint32_t c = 0; c < n; c++) {
			float y;

			memcpy(&y, &o[c], 4);
			y += ld_f_run(p + 4 * (size_t)c);
			memcpy(&o[c], &y, 4);
		}
		return;
	}
	for (uint32_t c = 0; c < n; c++) {
		float x = ld_f_run(p + 4 * (size_t)c), y;

		memcpy(&y, &o[c], 4);
		y = first || x > y || x != x ? x : y;
		memcpy(&o[c], &y, 4);
	}
}

static inline __attribute__((always_inline)) void pool_tap_max_i8(union val *restrict o, const uint8_t *restrict p, uint32_t n, bool first)
{
	for (uint32_t c = 0; c < n; c++) {
		int32_t x = (int8_t)p[c], y;

		memcpy(&y, &o[c], 4);
		y = first || x > y ? x : y;
		memcpy(&o[c], &y, 4);
	}
}

/*
 * One window position (i[0], i[1], i[2]) for all n[3] channels at once: which taps are inside the image
 * depends only on the position, so the taps run outer and the channels inner (a contiguous run in NHWC),
 * each channel seeing its taps in the same order as a per-element loop would — the same result bits.
 */
static inline __attribute__((always_inline)) void pool_run(const struct vcmd *v, const uint8_t *half,
							     const uint32_t *i, union val *out, int64_t *sum)
{
	const struct tnpu_vec_pool_win *w = &v->pw;
	int64_t y0 = (int64_t)i[1] * w->stride_y - w->pad_top, x0 = (int64_t)i[2] * w->stride_x - w->pad_left;
	int64_t base = (int64_t)v->a_off + (int64_t)i[0] * v->a_st[0];
	int64_t cst = v->a_st[3];
	uint32_t nc = v->n[3];
	bool f = v->in == TNPU_DTYPE_FP32, avg = v->fn == TNPU_VEC_POOL_AVG, any = false;
	int64_t cnt = 0;

	for (uint32_t c = 0; c < nc; c++)
		out[c].i = 0;	/* also fp32 +0.0 and the int8 max of an empty window */
	if (sum)
		memset(sum, 0, nc * sizeof(*sum));
	for (unsigned ry = 0; ry < w->win_h; ry++) {
		int64_t iy = y0 + ry;

		if (iy < 0 || iy >= w->in_h)
			continue;
		for (unsigned rx = 0; rx < w->win_w; rx++) {
			int64_t ix = x0 + rx;
			const uint8_t *p;

			if (ix < 0 || ix >= w->in_w)
				continue;
			p = half + base + iy * v->a_st[1] + ix * v->a_st[2];
			cnt++;
			if (f && cst == 4) {
				pool_tap_f32(out, p, nc, avg, !any);
			} else if (!f && !avg && cst == 1) {
				pool_tap_max_i8(out, p, nc, !any);
			} else if (f && avg) {
				for (uint32_t c = 0; c < nc; c++)
					out[c].f += ld_f(p + c * cst);
			} else if (f && !any) {
				for (uint32_t c = 0; c < nc; c++)
					out[c].f = ld_f(p + c * cst);
			} else if (f) {
				for (uint32_t c = 0; c < nc; c++) {
					float x = ld_f(p + c * cst);

					if (x > out[c].f || x != x)
						out[c].f = x;
				}
			} else if (avg) {
				for (uint32_t c = 0; c < nc; c++)
					sum[c] += (int8_t)p[c * cst];
			} else if (!any) {
				for (uint32_t c = 0; c < nc; c++)
					out[c].i = (int8_t)p[c * cst];
			} else {
				for (uint32_t c = 0; c < nc; c++) {
					int32_t x = (int8_t)p[c * cst];

					if (x > out[c].i)
						out[c].i = x;
				}
			}
			any = true;
		}
	}
	if (v->vf & TNPU_VEC_F_COUNT_PAD)
		cnt = (int64_t)w->win_h * w->win_w;
	if (!avg)
		return;
	for (uint32_t c = 0; c < nc; c++) {
		if (f)
			out[c].f = out[c].f / (float)cnt;
		else
			out[c].i = requant(sum[c], (int32_t)v->scale, v->shift, v->zp);
	}
}

/* The window positions (i[0], i[1], 0 .. n[2]-1) of a row, one call (compiled per x86-64 level, so
 * the channel loops of pool_run vectorise inside it), outputs in order from out. */
TNPU_CLONES
static void pool_row(const struct vcmd *v, const uint8_t *half, uint32_t i0, uint32_t i1, union val *out, int64_t *sum)
{
	uint32_t i[4] = { i0, i1, 0, 0 };

	if (sum && v->n[3] > VEC_SUM_CHANNELS) {
		/* int8 average over more channels than the sums hold: runs of VEC_SUM_CHANNELS channels, each
		 * channel's taps in the same order (channels are independent: the same result bits) */
		struct vcmd run = *v;

		for (; i[2] < v->n[2]; i[2]++, out += v->n[3])
			for (uint32_t c0 = 0; c0 < v->n[3]; c0 += VEC_SUM_CHANNELS) {
				/* A(0, 0, 0, c0) is an address of the operand (Checks 3), so it fits */
				run.a_off = (uint32_t)((int64_t)v->a_off + (int64_t)c0 * v->a_st[3]);
				run.n[3] = TNPU_MIN(v->n[3] - c0, VEC_SUM_CHANNELS);
				pool_run(&run, half, i, out + c0, sum);
			}
		return;
	}
	for (; i[2] < v->n[2]; i[2]++, out += v->n[3])
		pool_run(v, half, i, out, sum);
}

static union val red_one(const struct vcmd *v, const uint8_t *p)
{
	uint32_t L = v->rw.red_len;
	int32_t st = v->rw.red_st;
	union val r;

	if (v->in == TNPU_DTYPE_FP32) {
		float acc = 0;

		if (v->fn == TNPU_VEC_RED_MAX || v->fn == TNPU_VEC_RED_MIN) {
			bool mx = v->fn == TNPU_VEC_RED_MAX;

			acc = ld_f(p);
			for (uint32_t k = 1; k < L; k++) {
				float x = ld_f(p + (int64_t)k * st);

				if ((mx ? x > acc : x < acc) || x != x)
					acc = x;
			}
			r.f = acc;
			return r;
		}
		if (v->fn == TNPU_VEC_RED_ARGMAX || v->fn == TNPU_VEC_RED_ARGMIN) {
			/* NaN ranks above every number for ARGMAX, below for ARGMIN; a tie keeps the first
			 * index, or with LAST the last */
			bool mx = v->fn == TNPU_VEC_RED_ARGMAX, last = v->vf & TNPU_VEC_F_LAST;
			uint32_t at = 0;

			acc = ld_f(p);
			for (uint32_t k = 1; k < L; k++) {
				float x = ld_f(p + (int64_t)k * st);
				bool better = acc == acc && (x != x || (mx ? x > acc : x < acc));
				bool tie = last && (x == acc || (x != x && acc != acc));

				if (better || tie) {
					acc = x;
					at = k;
				}
			}
			r.i = (int32_t)at;
			return r;
		}
		if (v->fn == TNPU_VEC_RED_PROD) {
			acc = 1.0f;
			for (uint32_t k = 0; k < L; k++)
				acc *= ld_f(p + (int64_t)k * st);
			r.f = acc;
			return r;
		}
		for (uint32_t k = 0; k < L; k++) {
			float x = ld_f(p + (int64_t)k * st);

			acc += v->fn == TNPU_VEC_RED_SUMSQ ? x * x : x;
		}
		r.f = acc * f32_of(v->scale);
		return r;
	}
	if (v->fn == TNPU_VEC_RED_MAX || v->fn == TNPU_VEC_RED_MIN) {
		int64_t m = ld_i(p, v->in);

		for (uint32_t k = 1; k < L; k++) {
			int64_t x = ld_i(p + (int64_t)k * st, v->in);

			m = (v->fn == TNPU_VEC_RED_MAX ? x > m : x < m) ? x : m;
		}
		r.i = (int32_t)m;
		return r;
	}
	{
		uint32_t acc = 0;

		for (uint32_t k = 0; k < L; k++) {
			int64_t x = ld_i(p + (int64_t)k * st, v->in);

			acc += v->fn == TNPU_VEC_RED_SUMSQ ? (uint32_t)(x * x) : (uint32_t)x;
		}
		r.i = (int32_t)acc;
		return r;
	}
}

/* MAP of an fp32 function, FP32 in and out, over packed input runs (little-endian hosts): map_one's
 * bits through tnpu_vec_map_run. */
static bool map_run_fast(const struct vcmd *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return v->op == TNPU_VEC_MAP && v->fn >= TNPU_VEC_FN_FIRST && v->fn <= TNPU_VEC_FN_LAST &&
	       !(v->fn >= TNPU_VEC_FN_PARAM_FIRST && v->fn <= TNPU_VEC_FN_PARAM_LAST) && v->in == TNPU_DTYPE_FP32 && v->out == TNPU_DTYPE_FP32 && v->a_st[3] == 4;
#else
	(void)v;
	return false;
#endif
}

/* BINARY ADD/SUB/MUL of FP32 runs, A packed and B packed or one element broadcast (b_st[3] 0), FP32
 * out (little-endian hosts): a loop that vectorises, then bin_one again for every lane with a NaN
 * operand (which NaN an add returns depends on how the compiler ordered its operands). */
static bool bin_run_fast(const struct vcmd *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return v->op == TNPU_VEC_BINARY && v->in == TNPU_DTYPE_FP32 && v->out == TNPU_DTYPE_FP32 &&
	       v->fn <= TNPU_VEC_MUL && !(v->vf & TNPU_VEC_F_QADD) && v->a_st[3] == 4 &&
	       (v->b_st[3] == 4 || v->b_st[3] == 0);
#else
	(void)v;
	return false;
#endif
}

TNPU_CLONES
static void bin_run_f32(const struct vcmd *v, const uint8_t *restrict pa, const uint8_t *restrict pb, float *restrict y,
			uint32_t n)
{
	size_t sb = v->b_st[3] ? 4 : 0;

	for (uint32_t c = 0; c < n; c++) {
		float a, b, r;

		memcpy(&a, pa + 4 * (size_t)c, 4);
		memcpy(&b, pb + sb * c, 4);
		r = v->fn == TNPU_VEC_ADD ? a + b : (v->fn == TNPU_VEC_SUB ? a - b : a * b);
		y[c] = r;
	}
	if (v->vf & TNPU_VEC_F_RELU)
		for (uint32_t c = 0; c < n; c++)
			y[c] = y[c] < 0.0f ? 0.0f : y[c];
}

static void bin_run(const struct vcmd *v, const uint8_t *pa, const uint8_t *pb, union val *out, uint32_t n)
{
	size_t sb = v->b_st[3] ? 4 : 0;

	bin_run_f32(v, pa, pb, (float *)(void *)out, n);
	for (uint32_t c = 0; c < n; c++) {
		float a, b;

		memcpy(&a, pa + 4 * (size_t)c, 4);
		memcpy(&b, pb + sb * c, 4);
		if (a != a || b != b)
			out[c] = bin_one(v, pa + 4 * (size_t)c, pb + sb * c);
	}
}

/* Lane-cycles per element-tap (vector-units.md "Cycle model"): the fp32 functions and DIV 4, the
 * exact select/round functions 1. */
static unsigned vec_cost(const struct vcmd *v)
{
	if (v->op == TNPU_VEC_BINARY)	/* POW: a log and an exp */
		return v->fn == TNPU_VEC_DIV ? TNPU_VEC_FN_COST : (v->fn == TNPU_VEC_POW ? 2 * TNPU_VEC_FN_COST : 1);
	if (v->op != TNPU_VEC_MAP || v->fn < TNPU_VEC_FN_FIRST)
		return 1;
	switch (v->fn) {
	case TNPU_VEC_ABS: case TNPU_VEC_NEG: case TNPU_VEC_FLOOR: case TNPU_VEC_CEIL: case TNPU_VEC_ROUND:
	case TNPU_VEC_SIGN: case TNPU_VEC_LEAKY: case TNPU_VEC_THRESH:
		return 1;
	default:
		return TNPU_VEC_FN_COST;
	}
}

/* Compute every output of one row into out[] (output order), then write them. */
static uint32_t run_row(struct tnpu_exec *ex, const struct vcmd *v, unsigned r, union val *out, int64_t *sum)
{
	struct row_state *rs = &ex->rows[r];
	uint8_t *half = rs->sram + (uint64_t)v->half * ex->half;
	unsigned eout = esize(v->out), ein = esize(v->in);
	uint64_t o = 0;
	uint32_t i[4];

	for (i[0] = 0; i[0] < v->n[0]; i[0]++)
		for (i[1] = 0; i[1] < v->n[1]; i[1]++) {
			/* per element-tap: a POOL window or REDUCE length multiplies the work (issue #28) */
			if (tnpu_stopped(ex, 1 + (uint64_t)v->n[2] * v->n[3] * v->taps / 4))
				return tnpu_stop_fail(ex);
			if (v->op == TNPU_VEC_POOL) {
				pool_row(v, half, i[0], i[1], out + o, sum);
				o += (uint64_t)v->n[2] * v->n[3];
				continue;
			}
			for (i[2] = 0; i[2] < v->n[2]; i[2]++) {
				if (bin_run_fast(v)) {
					int64_t a = (int64_t)v->a_off, b = (int64_t)v->b_off;

					for (unsigned k = 0; k < 3; k++) {
						a += (int64_t)i[k] * v->a_st[k];
						b += (int64_t)i[k] * v->b_st[k];
					}
					bin_run(v, half + a, half + b, out + o, v->n[3]);
					o += v->n[3];
					continue;
				}
				if (map_run_fast(v)) {	/* a packed run of an fp32 function: vectorised */
					int64_t a = (int64_t)v->a_off + (int64_t)i[0] * v->a_st[0] +
						    (int64_t)i[1] * v->a_st[1] + (int64_t)i[2] * v->a_st[2];

					tnpu_vec_map_run(v->fn, half + a, (float *)(void *)(out + o), v->n[3],
							 f32_of(v->scale), f32_of(v->bias), v->vf & TNPU_VEC_F_RELU);
					o += v->n[3];
					continue;
				}
				for (i[3] = 0; i[3] < v->n[3]; i[3]++, o++) {
					int64_t a = (int64_t)v->a_off, b = (int64_t)v->b_off;

					for (unsigned k = 0; k < 4; k++) {
						a += (int64_t)i[k] * v->a_st[k];
						b += (int64_t)i[k] * v->b_st[k];
					}
					switch (v->op) {
					case TNPU_VEC_MAP:
						out[o] = map_one(v, ex->vec_lut[v->lut], half + a, half, i);
						break;
					case TNPU_VEC_BINARY:
						out[o] = bin_one(v, half + a, half + b);
						break;
					default:
						out[o] = red_one(v, half + a);
						break;
					}
				}
			}
		}
	(void)ein;
	/* Write phase: every input was read above (in-place operations are well defined). */
	o = 0;
	for (i[0] = 0; i[0] < v->n[0]; i[0]++)
		for (i[1] = 0; i[1] < v->n[1]; i[1]++)
			for (i[2] = 0; i[2] < v->n[2]; i[2]++) {
				int64_t d0 = (int64_t)v->d_off + (int64_t)i[0] * v->d_st[0] + (int64_t)i[1] * v->d_st[1] +
					     (int64_t)i[2] * v->d_st[2];
				int64_t lo = d0, hi = d0 + eout;

				if (v->n[3] && v->d_st[3] == (int64_t)eout && eout == 4) {
					/* a packed run of 32-bit results: one copy, the same bytes */
					memcpy(half + d0, out + o, (size_t)v->n[3] * 4);
					o += v->n[3];
					i[3] = v->n[3];
					hi = d0 + (int64_t)v->n[3] * 4;
					sram_mark(rs, (uint64_t)v->half * ex->half + lo, (uint64_t)v->half * ex->half + hi);
					continue;
				}
				for (i[3] = 0; i[3] < v->n[3]; i[3]++, o++) {
					int64_t d = d0 + (int64_t)i[3] * v->d_st[3];
					uint8_t *p = half + d;

					if (eout == 1)
						p[0] = (uint8_t)out[o].i;
					else
						memcpy(p, &out[o], 4);
					lo = TNPU_MIN(lo, d);
					hi = TNPU_MAX(hi, d + eout);
				}
				/* The row's written lines: the span of this innermost run (exact for
				 * packed runs, the usual case; a strided run marks the lines between). */
				sram_mark(rs, (uint64_t)v->half * ex->half + lo, (uint64_t)v->half * ex->half + hi);
			}
	return 0;
}

/* Row timeline shared by VEC and VEC_LUT (as DISPATCH: issue on compute, then every row busy). */
static void rows_busy(struct tnpu_exec *ex, unsigned r0, unsigned r1, uint64_t s, uint64_t issue, uint64_t busy)
{
	uint64_t done = 0;

	ex->F[TNPU_ENGINE_COMPUTE] = s + issue;
	tnpu_trace_emit(ex, TNPU_ENGINE_COMPUTE, TNPU_TRACE_ROW_NONE, TNPU_TRACE_DISPATCH, s, s + issue);
	for (unsigned r = r0; r <= r1; r++) {
		uint64_t start = TNPU_MAX(ex->R[r], s + issue), end = start + busy * ex->isl[ex->cur].clkdiv;

		ex->R[r] = end;
		ex->res->row_busy[r] += busy;
		tnpu_trace_emit(ex, TNPU_ENGINE_COMPUTE, r, TNPU_TRACE_EXE, start, end);
		if (end > ex->compute_end) {
			ex->res->counters[TNPU_CNT_COMPUTE_CYCLES] += end - TNPU_MAX(start, ex->compute_end);
			ex->compute_end = end;
		}
		done = TNPU_MAX(done, end);
	}
	ex->P = done;
}

static uint32_t cmd_lut(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	unsigned r0, r1;
	uint64_t s;

	if (c[8] >= TNPU_VEC_LUTS)
		return tnpu_fail(ex, TNPU_ERR_VEC_DESC, 8, 0);
	for (unsigned i = 9; i < 16; i++)
		if (c[i])
			return tnpu_fail(ex, TNPU_ERR_VEC_DESC, i, 0);
	if (tnpu_island_rows(ex, 0, true, &r0, &r1))
		return ex->res->error;
	memcpy(ex->vec_lut[c[8]], c + 16, 256);
	ex->res->counters[TNPU_CNT_BYTES_DISPATCH] += 256;
	s = TNPU_MAX(ex->F[TNPU_ENGINE_COMPUTE], async ? 0 : ex->P);
	rows_busy(ex, r0, r1, s, TNPU_CYC_CMD + 2, 2);
	return 0;
}

uint32_t tnpu_vec_cmd(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	struct vcmd v;
	unsigned r0 = 0, r1 = 0;
	uint64_t s, busy, cost;
	union val *out;
	int64_t *sum = NULL;
	uint32_t err = 0;

	if (c[0] == TNPU_CMD_VEC_LUT)
		return cmd_lut(ex, c, async);
	vec_decode(c, &v);
	if (vec_check(ex, &v))
		return ex->res->error;
	if (tnpu_island_rows(ex, v.row, v.row == 0xFF, &r0, &r1))
		return ex->res->error;
	cost = vec_cost(&v);
	busy = TNPU_CYC_VEC + div_ceil_u64(v.elems * v.taps * cost, TNPU_VEC_LANES);
	s = TNPU_MAX(ex->F[TNPU_ENGINE_COMPUTE], async ? 0 : ex->P);
	/* Refuse work the watchdog would stop anyway before spending host time on it. */
	for (unsigned r = r0; r <= r1; r++)
		if (TNPU_MAX(ex->R[r], s + TNPU_CYC_CMD) + busy * ex->isl[ex->cur].clkdiv > ex->cfg.watchdog_cycles)
			return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	/* int8 average pooling sums a channel run's taps in 64 bits (65535² taps × 128 overflow 32) */
	bool i8_avg = v.op == TNPU_VEC_POOL && v.fn == TNPU_VEC_POOL_AVG && v.in != TNPU_DTYPE_FP32;
	size_t out_bytes = v.elems * sizeof(*out), sum_bytes = VEC_SUM_CHANNELS * sizeof(*sum);

	/*
	 * Host memory (qemu-device.md "Host resources", issue #28): the outputs of every element (up to
	 * 16 MiB) live until the write phase; an anonymous mapping returns them when the command ends (a
	 * malloc block would stay in the worker's arena once glibc's mmap threshold has risen).  An idle
	 * IM2COL/GATHER box scratch goes first, so the two never add up.
	 */
	tnpu_scratch_trim(ex);
	out = tnpu_host_alloc(out_bytes);
	if (i8_avg)
		sum = malloc(sum_bytes);
	if (!out || (i8_avg && !sum)) {
		tnpu_host_free(out, out_bytes);
		return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
	}
	for (unsigned r = r0; r <= r1 && !err; r++)
		err = run_row(ex, &v, r, out, sum);
	free(sum);
	tnpu_host_free(out, out_bytes);
	if (err)
		return err;
	ex->res->counters[TNPU_CNT_VEC_OPS] += v.elems * v.taps * (r1 - r0 + 1);
	ex->res->counters[TNPU_CNT_VEC_CYCLES] += busy * (r1 - r0 + 1);
	rows_busy(ex, r0, r1, s, TNPU_CYC_CMD, busy);
	return 0;
}
