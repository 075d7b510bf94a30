/* SPDX-License-Identifier: MIT */
/*
 * vec_fn.c - the vector unit's fp32 functions (ISA 2, vector-units.md "fp32 approximations").
 *
 * Every function is a fixed sequence of IEEE single-precision adds, multiplies and divides (no fused
 * multiply-add: the file is compiled without contraction), so the QEMU device and the sim backend give
 * the same bits on every host.  The maximum errors against libm are stated in vector-units.md and
 * asserted by tests/unit/core/test_vec.c.
 */
#pragma GCC optimize("fp-contract=off")
/* comparisons and conversions may be evaluated speculatively (if-converted into vector selects): the
 * model never reads the floating-point exception flags */
#pragma GCC optimize("no-trapping-math")

#include <math.h>
#include <string.h>

#include "internal.h"

/* e^(t - k ln2) for k = rint(t / ln2): Cody-Waite range reduction to |r| <= ln2/2 and the degree-7
 * Taylor polynomial (a macro: v_exp and the vectorised exp_run below share it, and a function would
 * not be inlined into the clones). */
#define EXP_POLY(t, k)                                                                                     \
	({                                                                                                 \
		float r_ = ((t) - (k) * 0.693145752f) - (k) * 1.42860677e-6f, p_ = 1.0f / 5040.0f;         \
		p_ = p_ * r_ + 1.0f / 720.0f;                                                              \
		p_ = p_ * r_ + 1.0f / 120.0f;                                                              \
		p_ = p_ * r_ + 1.0f / 24.0f;                                                               \
		p_ = p_ * r_ + 1.0f / 6.0f;                                                                \
		p_ = p_ * r_ + 0.5f;                                                                       \
		p_ = p_ * r_ + 1.0f;                                                                       \
		p_ * r_ + 1.0f;                                                                            \
	})

/* e^t: EXP_POLY, then the exact scaling by 2^k. */
static float v_exp(float t)
{
	float k, p;

	if (t != t)
		return t;
	if (t > 88.7228f)
		return INFINITY;
	if (t < -103.97f)
		return 0.0f;
	k = rintf(t * 1.44269504f);
	p = EXP_POLY(t, k);
	return scalbnf(p, (int)k);
}

static float v_sigmoid(float t)
{
	return 1.0f / (1.0f + v_exp(-t));
}

static float v_tanh(float t)
{
	float a = fabsf(t), y;

	if (t != t)
		return t;
	if (a < 0.0625f) {
		float t2 = t * t;

		return t + t * (t2 * (-1.0f / 3.0f + t2 * (2.0f / 15.0f)));
	}
	if (a > 9.0f)
		return t > 0 ? 1.0f : -1.0f;
	y = 1.0f - 2.0f / (v_exp(2.0f * a) + 1.0f);
	return t > 0 ? y : -y;
}

/* Abramowitz-Stegun 7.1.26 (|error| <= 1.5e-7 in exact arithmetic). */
static float v_erf(float t)
{
	float a = fabsf(t), u, p, y;

	if (t != t)
		return t;
	if (a >= 4.0f)
		return t > 0 ? 1.0f : -1.0f;
	u = 1.0f / (1.0f + 0.3275911f * a);
	p = 1.061405429f;
	p = p * u + -1.453152027f;
	p = p * u + 1.421413741f;
	p = p * u + -0.284496736f;
	p = p * u + 0.254829592f;
	p = p * u;
	y = 1.0f - p * v_exp(-(a * a));
	return t < 0 ? -y : y;
}

/*
 * ln t: t = 2^e * m with m in [sqrt(1/2), sqrt(2)) (subnormals first scaled by 2^23, exactly),
 * f = m - 1 (exact), s = f / (2 + f), log m = 2 atanh s = f - (f^2/2 - s (f^2/2 + R)) with
 * R = z (2/3 + z (2/5 + z (2/7 + z 2/9))), z = s^2 (|s| <= 0.1716: the series' next term is below
 * 2^-30 of the result), and e ln2 split into a 16-bit ln2_hi (e * ln2_hi is exact) and ln2_lo.
 */
static float v_log(float t)
{
	float m, f, s, z, r, hf, dk;
	uint32_t b;
	int e = 0;

	if (t != t || t == INFINITY)
		return t;
	if (t < 0.0f)
		return NAN;
	if (t == 0.0f)
		return -INFINITY;
	if (t < 0x1p-126f) {
		t *= 0x1p23f;
		e = -23;
	}
	memcpy(&b, &t, 4);
	e += (int)(b >> 23) - 127;
	b = (b & 0x7FFFFFu) | 0x3F800000u;
	memcpy(&m, &b, 4);
	if (m > 1.41421356f) {
		m *= 0.5f;
		e++;
	}
	f = m - 1.0f;
	s = f / (2.0f + f);
	z = s * s;
	r = z * (2.0f / 3.0f + z * (2.0f / 5.0f + z * (2.0f / 7.0f + z * (2.0f / 9.0f))));
	hf = 0.5f * f * f;
	dk = (float)e;
	return dk * 0.693145752f - ((hf - (s * (hf + r) + dk * 1.42860677e-6f)) - f);
}

/*
 * a^b: b == 0 or a == 1 -> 1; NaN -> NaN; else exp(b * log|a|), for a < 0 only at an integer b (negated
 * when b is odd; a non-integer b -> NaN); a = 0 -> +0 (b > 0) or +inf (b < 0) through log 0 = -inf.
 */
float tnpu_vec_pow(float a, float b)
{
	float r;
	bool neg = false;

	if (b == 0.0f || a == 1.0f)
		return 1.0f;
	if (a != a || b != b)
		return a + b;
	if (a < 0.0f) {
		if (floorf(b) != b)
			return NAN;
		/* |b| >= 2^24 is even; below, its parity is that of the integer */
		neg = fabsf(b) < 16777216.0f && ((int64_t)b & 1);
		a = -a;
	}
	r = v_exp(b * v_log(a));
	return neg ? -r : r;
}

/* ln(1 + e^t) with the relative accuracy of e^t where it is small: log(u) * x / (u - 1), u = 1 + x
 * rounded (Goldberg's log1p); t > 20: t (e^-t is below half an ulp of t). */
static float v_softplus(float t)
{
	float x, u;

	if (t != t || t > 20.0f)
		return t;
	x = v_exp(t);
	u = 1.0f + x;
	return u == 1.0f ? x : v_log(u) * (x / (u - 1.0f));
}

static float clamp01(float v)
{
	return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

float tnpu_vec_eval(unsigned func, float t)
{
	return tnpu_vec_eval_p(func, t, 0.0f, 0.0f);
}

float tnpu_vec_eval_p(unsigned func, float t, float lo, float hi)
{
	switch (func) {
	case TNPU_VEC_SIGMOID:
		return v_sigmoid(t);
	case TNPU_VEC_TANH:
		return v_tanh(t);
	case TNPU_VEC_EXP:
		return v_exp(t);
	case TNPU_VEC_ERF:
		return v_erf(t);
	case TNPU_VEC_GELU:
		return 0.5f * t * (1.0f + v_erf(t * 0.70710678f));
	case TNPU_VEC_HARDSIGMOID:
		return t != t ? t : clamp01(t);
	case TNPU_VEC_HARDSWISH:
		return t != t ? t : t * clamp01(t / 6.0f + 0.5f);
	case TNPU_VEC_SILU:
		return t * v_sigmoid(t);
	case TNPU_VEC_RECIP:
		return 1.0f / t;
	case TNPU_VEC_RSQRT:
		return 1.0f / sqrtf(t);
	case TNPU_VEC_LOG:
		return v_log(t);
	case TNPU_VEC_SQRT:
		return sqrtf(t);
	case TNPU_VEC_ABS:
		return fabsf(t);
	case TNPU_VEC_NEG:
		return -t;
	case TNPU_VEC_FLOOR:
		return floorf(t);
	case TNPU_VEC_CEIL:
		return ceilf(t);
	case TNPU_VEC_ROUND:
		return rintf(t);	/* the default rounding mode: half to even */
	case TNPU_VEC_SIGN:
		return t > 0.0f ? 1.0f : (t < 0.0f ? -1.0f : t);
	case TNPU_VEC_LEAKY:
		return t < 0.0f ? t * lo : t;
	case TNPU_VEC_ELU:
		return hi * (t > 0.0f ? t : lo * (v_exp(t) - 1.0f));
	case TNPU_VEC_THRESH:
		return t > lo ? t : (t != t ? t : 0.0f);
	case TNPU_VEC_SOFTPLUS:
		return v_softplus(t);
	case TNPU_VEC_SOFTSIGN:	/* +-inf: +-1 */
		return fabsf(t) == INFINITY ? (t > 0 ? 1.0f : -1.0f) : t / (1.0f + fabsf(t));
	default:
		return NAN;
	}
}

/* The float with bits (e + 127) << 23: 2^e, -126 <= e <= 127 (a macro: a function of the default
 * target is not inlined into the clones, and the call keeps the loop from vectorising). */
#define POW2F(e)                                                                                           \
	({                                                                                                 \
		uint32_t b_ = (uint32_t)((e) + 127) << 23;                                                 \
		float f_;                                                                                  \
		memcpy(&f_, &b_, 4);                                                                       \
		f_;                                                                                        \
	})

/*
 * v_exp over a run, in a loop that vectorises: the same operations, and scalbnf(p, k) as
 * (p * 2^(k>>1)) * 2^(k - (k>>1)): p is in [0.70, 1.42] and |k| <= 150 where the result is not one of
 * the special cases, so the first product is exact (normal) and the second rounds once, as scalbnf
 * does (subnormal results and overflow to infinity included).  The special cases are selected last.
 */
TNPU_CLONES
static void exp_run(float *restrict y, const float *restrict t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float x = t[i], k = rintf(x * 1.44269504f), p = EXP_POLY(x, k), v;
		int ki;

		/* k outside [-150, 128] only for the special cases below; bounded so the conversion is defined */
		ki = (int)(k < -160.0f ? -160.0f : (k > 160.0f ? 160.0f : (k != k ? 0.0f : k)));
		v = (p * POW2F(ki >> 1)) * POW2F(ki - (ki >> 1));
		y[i] = x != x ? x : (x > 88.7228f ? INFINITY : (x < -103.97f ? 0.0f : v));
	}
}

/* v_erf over a run: the same operations, every lane computed and the |t| >= 4 lanes selected after
 * (NaN lanes: the caller's per-element pass).  e holds exp(-(a*a)) from exp_run, q the scratch. */
TNPU_CLONES
static void erf_pre(float *restrict q, float *restrict u, const float *restrict t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float a = fabsf(t[i]);

		u[i] = 1.0f / (1.0f + 0.3275911f * a);
		q[i] = -(a * a);
	}
}

TNPU_CLONES
static void erf_post(float *restrict y, const float *restrict u, const float *restrict e, const float *restrict t,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float p = 1.061405429f, r;

		p = p * u[i] + -1.453152027f;
		p = p * u[i] + 1.421413741f;
		p = p * u[i] + -0.284496736f;
		p = p * u[i] + 0.254829592f;
		p = p * u[i];
		r = 1.0f - p * e[i];
		r = t[i] < 0 ? -r : r;
		y[i] = fabsf(t[i]) >= 4.0f ? (t[i] > 0 ? 1.0f : -1.0f) : r;
	}
}

/* GELU's ends: s = t * 0.70710678f before erf, y = 0.5f * t * (1.0f + erf(s)) after. */
TNPU_CLONES
static void gelu_scale(float *restrict s, const float *restrict t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s[i] = t[i] * 0.70710678f;
}

TNPU_CLONES
static void gelu_post(float *restrict y, const float *restrict t, const float *restrict er, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = 0.5f * t[i] * (1.0f + er[i]);
}

/* y = t * s + b over a run (MAP's input scaling), then the function in place. */
TNPU_CLONES
static void scale_run(float *restrict y, const uint8_t *restrict in, size_t n, float s, float b)
{
	for (size_t i = 0; i < n; i++) {
		float x;

		memcpy(&x, in + 4 * i, 4);
		y[i] = x * s + b;
	}
}

TNPU_CLONES
static void sigmoid_tail(float *restrict y, const float *restrict e, const float *restrict t, size_t n, bool silu)
{
	if (silu) {
		for (size_t i = 0; i < n; i++)
			y[i] = t[i] * (1.0f / (1.0f + e[i]));
		return;
	}
	for (size_t i = 0; i < n; i++)
		y[i] = 1.0f / (1.0f + e[i]);
}

TNPU_CLONES
static void relu_run(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

void tnpu_vec_map_run(unsigned func, const uint8_t *in, float *out, size_t n, float scale, float bias, bool relu)
{
	enum { CHUNK = 256 };
	float t[CHUNK], e[CHUNK], u[CHUNK], q[CHUNK], g[CHUNK];

	for (size_t c0 = 0; c0 < n; c0 += CHUNK) {
		size_t m = n - c0 < CHUNK ? n - c0 : CHUNK;
		float *y = out + c0;

		scale_run(t, in + 4 * c0, m, scale, bias);
		switch (func) {
		case TNPU_VEC_EXP:
			exp_run(y, t, m);
			break;
		case TNPU_VEC_SIGMOID:
		case TNPU_VEC_SILU:
			for (size_t i = 0; i < m; i++)
				e[i] = -t[i];
			exp_run(u, e, m);
			sigmoid_tail(y, u, t, m, func == TNPU_VEC_SILU);
			break;
		case TNPU_VEC_ERF:
		case TNPU_VEC_GELU: {
			const float *s = t;

			if (func == TNPU_VEC_GELU) {
				gelu_scale(g, t, m);
				s = g;
			}
			erf_pre(q, u, s, m);
			exp_run(e, q, m);
			if (func == TNPU_VEC_ERF) {
				erf_post(y, u, e, s, m);
			} else {
				erf_post(q, u, e, s, m);
				gelu_post(y, t, q, m);
			}
			break;
		}
		default:
			for (size_t i = 0; i < m; i++)
				y[i] = tnpu_vec_eval(func, t[i]);
			break;
		}
		/* A NaN input's result is the per-element function's: NaN signs and payloads follow how the
		 * compiler arranged that function's operations (1 + e^-t as 1 - t), not IEEE rules */
		for (size_t i = 0; i < m; i++)
			if (t[i] != t[i])
				y[i] = tnpu_vec_eval(func, t[i]);
		if (relu)
			relu_run(y, m);
	}
}
