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

#include <math.h>

#include "internal.h"

/* e^t: Cody-Waite range reduction to |r| <= ln2/2, degree-7 Taylor polynomial, exact scaling. */
static float v_exp(float t)
{
	float k, r, p;

	if (t != t)
		return t;
	if (t > 88.7228f)
		return INFINITY;
	if (t < -103.97f)
		return 0.0f;
	k = rintf(t * 1.44269504f);
	r = (t - k * 0.693145752f) - k * 1.42860677e-6f;
	p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
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

static float clamp01(float v)
{
	return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

float tnpu_vec_eval(unsigned func, float t)
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
	default:
		return NAN;
	}
}
