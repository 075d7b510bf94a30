/* SPDX-License-Identifier: MIT */
/* VEC math (CAP_FEATURES bit 25, issue #30; Documentation/hardware/vector-units.md): the MAP functions
 * LOG .. SOFTSIGN with their error bounds against double-precision libm, the exact ones bit for bit
 * against C, the parameters in lo/hi; BINARY DIV and PRELU with broadcast; REDUCE MIN, PROD, ARGMAX,
 * ARGMIN (ties, LAST, NaN); the cycle model; malformed commands.  References are plain C, never the
 * model. */
#include <float.h>
#include <stdio.h>

#include "common.h"

SMALL_SIM_SUITE(vmath, 16 << 20, 256 * 1024)

enum { A_OFF = 0, B_OFF = 8192, D_OFF = 16384, HOST_OUT = 65536 };

static float *HF(uint32_t off)
{
	return (float *)(void *)H(off);
}

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/* Host bytes [0, len) -> SRAM half 0 of every row at 0; SRAM [off, +len) of row 0 -> host hoff. */
static void put(uint32_t len)
{
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, len, 1, 1);
}

static void get(uint32_t off, uint32_t hoff, uint32_t len)
{
	tcb_dma(&cb, false, 0, host + hoff, 0, 0, 0, 0, off, 0, 0, len, 1, 1);
}

/* An fp32 VEC command on row 0 over n packed elements: A at A_OFF, B at B_OFF, out at D_OFF. */
static struct tnpu_cmd_vec vcmd(uint8_t op, uint8_t fn, uint32_t n)
{
	struct tnpu_cmd_vec v;

	memset(&v, 0, sizeof(v));
	v.hdr.opcode = TNPU_CMD_VEC;
	v.hdr.size = sizeof(v);
	v.op = op;
	v.func = fn;
	v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
	for (int k = 0; k < 3; k++)
		v.n[k] = 1;
	v.n[3] = n;
	v.a_off = A_OFF;
	v.d_off = D_OFF;
	v.a_st[3] = v.d_st[3] = 4;
	if (op == TNPU_VEC_BINARY) {
		v.b_off = B_OFF;
		v.b_st[3] = 4;
	}
	return v;
}

static uint32_t run_one(const struct tnpu_cmd_vec *v)
{
	tcb_raw(&cb, v, sizeof(*v));
	return run();
}

/* ---- the fp32 functions against libm --------------------------------------------------------- */

static double ref_fn(unsigned fn, double t, double lo, double hi)
{
	switch (fn) {
	case TNPU_VEC_LOG: return log(t);
	case TNPU_VEC_SQRT: return sqrt(t);
	case TNPU_VEC_SOFTPLUS: return t > 30 ? t + exp(-t) : log1p(exp(t));
	case TNPU_VEC_SOFTSIGN: return t / (1.0 + fabs(t));
	case TNPU_VEC_ELU: return hi * (t > 0 ? t : lo * expm1(t));
	default: return NAN;
	}
}

struct bound {
	unsigned fn;
	const char *name;
	bool rel;	/* relative where the reference is a normal float, else absolute / max(1, |t|) */
	double lim;
	float lo, hi;
};

/* vector-units.md "Maximum errors" */
static const struct bound bounds[] = {
	{ TNPU_VEC_LOG, "log", true, 2.0 * FLT_EPSILON, 0, 0 },
	{ TNPU_VEC_SQRT, "sqrt", true, FLT_EPSILON / 2, 0, 0 },
	{ TNPU_VEC_SOFTPLUS, "softplus", true, 4.0 * FLT_EPSILON, 0, 0 },
	{ TNPU_VEC_SOFTSIGN, "softsign", true, 2.0 * FLT_EPSILON, 0, 0 },
	{ TNPU_VEC_ELU, "elu", false, 4e-7, 1.0f, 1.0f },
	{ TNPU_VEC_ELU, "selu", false, 1e-6, 1.67326319f, 1.05070102f },
};

/* Every 2^-12 on [-20, 20], 2^20 log-spaced points of both signs from 20 to 1e30, then for LOG and
 * SQRT 2^20 log-spaced points from the smallest subnormal to 20 (else infinities: skipped). */
static float sweep_point(int i, bool small)
{
	if (i <= (20 << 12))
		return (float)i / 4096.0f;
	i -= (20 << 12) + 1;
	if (i >= (1 << 20))
		return small ? (float)(FLT_TRUE_MIN * pow(20.0 / FLT_TRUE_MIN, (double)(i - (1 << 20)) / (1 << 20)))
			     : INFINITY;
	return (float)(((i & 1) ? -1.0 : 1.0) * 20.0 * pow(1e30 / 20.0, (double)i / (1 << 20)));
}

Test(vmath, functions_meet_their_stated_max_error)
{
	for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
		const struct bound *b = &bounds[k];
		bool small = b->fn == TNPU_VEC_LOG || b->fn == TNPU_VEC_SQRT;
		double worst = 0;
		float at = 0;

		for (int i = -(20 << 12); i <= (20 << 12) + (2 << 20); i++) {
			float t = sweep_point(i, small), y;
			double ref, err;

			if ((small && t <= 0) || isinf(t))
				continue;
			y = tnpu_vec_eval_p(b->fn, t, b->lo, b->hi);
			ref = ref_fn(b->fn, t, b->lo, b->hi);
			if (b->rel) {
				if (fabs(ref) < FLT_MIN || fabs(ref) > FLT_MAX)
					continue;
				err = fabs((double)y - ref) / fabs(ref);
			} else {
				err = fabs((double)y - ref) / fmax(1.0, fabs((double)t));
			}
			if (!(err <= worst)) {
				worst = err;
				at = t;
			}
		}
		printf("# vec math %-9s max %s error %.3g at t = %.9g (bound %.3g)\n", b->name,
		       b->rel ? "relative" : "absolute", worst, at, b->lim);
		cr_expect(worst <= b->lim, "%s: max error %.3g at %.9g > %.3g", b->name, worst, at, b->lim);
	}
	/* special values */
	cr_assert(isnan(tnpu_vec_eval(TNPU_VEC_LOG, -1.0f)));
	cr_assert(isnan(tnpu_vec_eval(TNPU_VEC_LOG, NAN)));
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_LOG, 0.0f), -INFINITY);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_LOG, -0.0f), -INFINITY);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_LOG, INFINITY), INFINITY);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_LOG, 1.0f), 0.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SOFTPLUS, 100.0f), 100.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SOFTPLUS, -200.0f), 0.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SOFTSIGN, INFINITY), 1.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SOFTSIGN, -INFINITY), -1.0f);
}

/* The exact functions, on random bits (every exponent, NaNs, infinities): bit for bit what C gives. */
static float exact_ref(unsigned fn, float t, float lo)
{
	switch (fn) {
	case TNPU_VEC_ABS: return fabsf(t);
	case TNPU_VEC_NEG: return -t;
	case TNPU_VEC_FLOOR: return floorf(t);
	case TNPU_VEC_CEIL: return ceilf(t);
	case TNPU_VEC_ROUND: return nearbyintf(t);
	case TNPU_VEC_SIGN: return t > 0 ? 1.0f : (t < 0 ? -1.0f : t);
	case TNPU_VEC_LEAKY: return t < 0 ? t * lo : t;
	default: return t > lo ? t : (isnan(t) ? t : 0.0f);	/* THRESH */
	}
}

Test(vmath, exact_functions_are_bit_exact)
{
	static const unsigned fns[] = { TNPU_VEC_ABS,  TNPU_VEC_NEG,  TNPU_VEC_FLOOR, TNPU_VEC_CEIL,
					TNPU_VEC_ROUND, TNPU_VEC_SIGN, TNPU_VEC_LEAKY, TNPU_VEC_THRESH };
	uint64_t seed = 7;

	for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
		for (int i = 0; i < 1 << 18; i++) {
			uint32_t b = (uint32_t)trng(&seed);
			float t, y, r, lo = fns[k] == TNPU_VEC_THRESH ? 1.5f : 0.01f;

			memcpy(&t, &b, 4);
			if (i < 8)	/* halves: round to even; signed zeros */
				t = (float[]){ 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 0.0f, -0.0f, 8388609.0f }[i];
			y = tnpu_vec_eval_p(fns[k], t, lo, 0);
			r = exact_ref(fns[k], t, lo);
			if (isnan(r))
				cr_assert(isnan(y), "fn %u t %a", fns[k], t);
			else
				cr_assert_eq(fbits(y), fbits(r), "fn %u t %a: %a vs %a", fns[k], t, y, r);
		}
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_ROUND, 2.5f), 2.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_ROUND, -3.5f), -4.0f);
}

/* The device path: t = x*scale + bias, the parameters from lo/hi as fp32 bits, RELU after. */
Test(vmath, map_applies_pre_affine_and_parameters)
{
	static const struct {
		unsigned fn;
		float sc, bi, lo, hi;
	} c[] = {
		{ TNPU_VEC_LOG, 1.0f, 9.0f, 0, 0 },	    { TNPU_VEC_SQRT, 0.5f, 5.0f, 0, 0 },
		{ TNPU_VEC_LEAKY, 1.0f, 0.0f, 0.1f, 0 },    { TNPU_VEC_ELU, 2.0f, 0.0f, 1.6732632f, 1.050701f },
		{ TNPU_VEC_THRESH, 1.0f, 0.0f, 1.0f, 0 },   { TNPU_VEC_SOFTPLUS, 1.0f, 0.0f, 0, 0 },
		{ TNPU_VEC_SOFTSIGN, 1.0f, 0.0f, 0, 0 },    { TNPU_VEC_NEG, 1.0f, 0.0f, 0, 0 },
		{ TNPU_VEC_ROUND, 3.0f, 0.25f, 0, 0 },
	};

	for (int i = 0; i < 256; i++)
		HF(0)[i] = (float)(i - 128) / 16.0f;
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++)
		for (int relu = 0; relu < 2; relu++) {
			struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, (uint8_t)c[k].fn, 256);

			v.scale = fbits(c[k].sc);
			v.bias = fbits(c[k].bi);
			v.lo = fbits(c[k].lo);
			v.hi = fbits(c[k].hi);
			v.vflags = relu ? TNPU_VEC_F_RELU : 0;
			put(1024);
			tcb_raw(&cb, &v, sizeof(v));
			get(D_OFF, HOST_OUT, 1024);
			cr_assert_eq(run(), 0, "fn %u: %s", c[k].fn, tnpu_err_name(res.error));
			for (int i = 0; i < 256; i++) {
				float t = HF(0)[i] * c[k].sc + c[k].bi, y = HF(HOST_OUT)[i];
				double r = c[k].fn == TNPU_VEC_LEAKY ? (t < 0 ? t * (double)c[k].lo : t)
					   : c[k].fn == TNPU_VEC_THRESH ? (t > c[k].lo ? t : 0)
					   : c[k].fn == TNPU_VEC_NEG	? -t
					   : c[k].fn == TNPU_VEC_ROUND	? nearbyint(t)
									: ref_fn(c[k].fn, t, c[k].lo, c[k].hi);

				if (relu && r < 0)
					r = 0;
				cr_assert(fabs(y - r) <= 2e-6 * fmax(1.0, fabs(r)), "fn %u t %g: %g vs %g", c[k].fn, t, y, r);
			}
		}
	/* the cycle model: LOG 4 lane-cycles an element, NEG 1 */
	{
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_LOG, 256);

		v.scale = fbits(1.0f);
		cr_assert_eq(run_one(&v), 0);
		cr_assert_eq(res.row_busy[0], TNPU_CYC_VEC + 256 * TNPU_VEC_FN_COST / TNPU_VEC_LANES);
		v.func = TNPU_VEC_NEG;
		cr_assert_eq(run_one(&v), 0);
		cr_assert_eq(res.row_busy[0], TNPU_CYC_VEC + 256 / TNPU_VEC_LANES);
	}
}

/* ---- BINARY DIV, PRELU and POW ------------------------------------------------------------------- */

/* POW against double-precision pow: relative error within (4 + |b ln|a||) 2^-23 where the result is a
 * normal float (exp's argument carries the rounding of b ln|a|); negative bases at integer exponents with
 * the sign of an odd one; the special cases exactly. */
Test(vmath, pow_meets_its_bound_and_special_cases)
{
	uint64_t seed = 99;
	double worst = 0;

	for (int i = 0; i < 1 << 20; i++) {
		float a = (float)(trng(&seed) % 2000000) / 10000.0f, b = (float)((int)(trng(&seed) % 4001) - 2000) / 100.0f;
		double ref, t, err;
		float y;

		if (i & 1) {	/* negative bases at integer exponents */
			a = -a;
			b = rintf(b / 4);
		}
		y = tnpu_vec_pow(a, b);
		ref = pow(a, b);
		t = fabs(b * log(fabs(a)));
		/* a normal result below e^88.72 (exp's overflow cut-off is 88.7228, a hair under ln FLT_MAX) */
		if (fabs(ref) < FLT_MIN || fabs(ref) > 3.3e38)
			continue;
		err = fabs(y - ref) / fabs(ref) / ((4 + t) * FLT_EPSILON);
		worst = err > worst ? err : worst;
		cr_assert(err <= 1, "pow(%a, %a) = %a, libm %a", a, b, y, ref);
	}
	printf("# vec math pow       max relative error %.3g of its bound (4 + |b ln|a||) 2^-23\n", worst);
	cr_assert_eq(tnpu_vec_pow(NAN, 0.0f), 1.0f);
	cr_assert_eq(tnpu_vec_pow(1.0f, NAN), 1.0f);
	cr_assert(isnan(tnpu_vec_pow(-2.0f, 0.5f)));
	cr_assert(isnan(tnpu_vec_pow(NAN, 2.0f)));
	cr_assert_eq(tnpu_vec_pow(0.0f, 3.0f), 0.0f);
	cr_assert_eq(tnpu_vec_pow(0.0f, -1.0f), INFINITY);
	cr_assert_eq(tnpu_vec_pow(-2.0f, 3.0f), -8.0f);
	cr_assert_eq(tnpu_vec_pow(-2.0f, 2.0f), 4.0f);
	cr_assert_eq(tnpu_vec_pow(-INFINITY, 3.0f), -INFINITY);
	cr_assert_eq(tnpu_vec_pow(INFINITY, -1.0f), 0.0f);
	cr_assert_eq(tnpu_vec_pow(2.0f, 10.0f), 1024.0f);
}

/* ---- BINARY DIV and PRELU ------------------------------------------------------------------------ */

Test(vmath, binary_div_and_prelu_with_broadcast)
{
	float *a = HF(A_OFF), *b = HF(B_OFF);
	uint64_t seed = 11;

	for (int i = 0; i < 512; i++) {
		a[i] = (float)((int)(trng(&seed) % 2001) - 1000) / 37.0f;
		b[i] = (float)((int)(trng(&seed) % 2001) - 1000) / 53.0f;
	}
	a[0] = 1.0f, b[0] = 0.0f;	/* inf */
	a[1] = 0.0f, b[1] = 0.0f;	/* NaN */
	for (int fn = TNPU_VEC_DIV; fn <= TNPU_VEC_POW; fn++)
		for (int bc = 0; bc < 2; bc++) {	/* B packed, or B's first 16 broadcast over 32 rows */
			struct tnpu_cmd_vec v = vcmd(TNPU_VEC_BINARY, (uint8_t)fn, 16);

			v.n[2] = 32;
			v.a_st[2] = v.d_st[2] = 64;
			v.b_st[2] = bc ? 0 : 64;
			put(B_OFF + 2048);
			tcb_raw(&cb, &v, sizeof(v));
			get(D_OFF, HOST_OUT, 2048);
			cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
			for (int i = 0; i < 512; i++) {
				float x = a[i], w = b[bc ? i % 16 : i], y = HF(HOST_OUT)[i];
				float r = fn == TNPU_VEC_DIV ? x / w : (x < 0 ? x * w : x);

				if (fn == TNPU_VEC_POW) {	/* the unit's function, and libm's value */
					double p = pow(x, w);

					cr_assert(isnan(p) ? isnan(y) : fbits(y) == fbits(tnpu_vec_pow(x, w)), "pow i %d", i);
					cr_assert(!isfinite(p) || fabs(p) > FLT_MAX || fabs(y - p) <= 1e-4 * fabs(p) + 1e-30,
						  "pow(%g, %g) = %g, libm %g", x, w, y, p);
				} else if (isnan(r)) {
					cr_assert(isnan(y), "fn %d i %d", fn, i);
				} else {
					cr_assert_eq(fbits(y), fbits(r), "fn %d bc %d i %d: %g vs %g", fn, bc, i, y, r);
				}
			}
			/* DIV 4 lane-cycles an element, PRELU 1, POW 8 */
			cr_assert_eq(res.row_busy[0], TNPU_CYC_VEC + 512 * (fn == TNPU_VEC_DIV ? TNPU_VEC_FN_COST :
									    fn == TNPU_VEC_POW ? 2 * TNPU_VEC_FN_COST : 1) /
								     TNPU_VEC_LANES);
		}
}

/* BINARY CMP_EQ .. CMP_GE: FP32 operands (ties, signed zeros, NaN, B broadcast) to INT8 truth values. */
Test(vmath, comparisons_write_int8_truth_values)
{
	float *a = HF(A_OFF), *b = HF(B_OFF);
	uint64_t seed = 5;

	for (int i = 0; i < 256; i++) {
		a[i] = (float)((int)(trng(&seed) % 7) - 3) * 0.5f;
		b[i] = (float)((int)(trng(&seed) % 7) - 3) * 0.5f;
	}
	a[3] = NAN, b[5] = NAN, a[7] = -0.0f, b[7] = 0.0f;
	for (int fn = TNPU_VEC_CMP_EQ; fn <= TNPU_VEC_CMP_GE; fn++)
		for (int bc = 0; bc < 2; bc++) {
			struct tnpu_cmd_vec v = vcmd(TNPU_VEC_BINARY, (uint8_t)fn, 64);

			v.out_dtype = TNPU_DTYPE_INT8;
			v.n[2] = 4;
			v.a_st[2] = 256;
			v.b_st[2] = bc ? 0 : 256;
			v.d_st[2] = 64;
			v.d_st[3] = 1;
			put(B_OFF + 1024);
			tcb_raw(&cb, &v, sizeof(v));
			get(D_OFF, HOST_OUT, 256);
			cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
			for (int i = 0; i < 256; i++) {
				float x = a[i], w = b[bc ? i % 64 : i];
				int r = fn == TNPU_VEC_CMP_EQ ? x == w : fn == TNPU_VEC_CMP_LT ? x < w :
					fn == TNPU_VEC_CMP_LE ? x <= w : fn == TNPU_VEC_CMP_GT ? x > w : x >= w;

				cr_assert_eq(H(HOST_OUT)[i], r, "fn %d bc %d i %d: %g vs %g", fn, bc, i, x, w);
			}
		}
}

/* ---- REDUCE MIN, PROD, ARGMAX, ARGMIN ---------------------------------------------------------- */

/* The spec's ARG rule: NaN ranks above (ARGMAX) or below (ARGMIN) every number; a tie keeps the first
 * index, with LAST the last. */
static int32_t ref_arg(const float *x, int n, int st, bool mx, bool last)
{
	int at = 0;

	for (int k = 1; k < n; k++) {
		float c = x[at * st], v = x[k * st];
		bool better = !isnan(c) && (isnan(v) || (mx ? v > c : v < c));
		bool tie = last && (v == c || (isnan(v) && isnan(c)));

		if (better || tie)
			at = k;
	}
	return at;
}

Test(vmath, reduce_min_prod_and_arg_over_rows_and_columns)
{
	float *a = HF(A_OFF);
	uint64_t seed = 3;

	/* 24 x 20 matrix with many ties (values from 9 levels) and two NaNs */
	for (int i = 0; i < 480; i++)
		a[i] = (float)((int)(trng(&seed) % 9) - 4) * 0.5f;
	a[7 * 20 + 5] = NAN;
	a[9 * 20 + 3] = NAN;
	a[9 * 20 + 11] = NAN;
	for (int fn = TNPU_VEC_RED_MIN; fn <= TNPU_VEC_RED_ARGMIN; fn++)
		for (int col = 0; col < 2; col++)
			for (int last = 0; last < 2; last++) {
				bool arg = fn >= TNPU_VEC_RED_ARGMAX;
				int nout = col ? 20 : 24, len = col ? 24 : 20, st = col ? 20 : 1;
				struct tnpu_cmd_vec v = vcmd(TNPU_VEC_REDUCE, (uint8_t)fn, (uint32_t)nout);

				if (last && !arg)
					continue;
				v.out_dtype = arg ? TNPU_DTYPE_INT32 : TNPU_DTYPE_FP32;
				v.a_st[3] = col ? 4 : 80;
				v.win.red.red_len = (uint32_t)len;
				v.win.red.red_st = st * 4;
				v.vflags = last ? TNPU_VEC_F_LAST : 0;
				put(2048);
				tcb_raw(&cb, &v, sizeof(v));
				get(D_OFF, HOST_OUT, (uint32_t)nout * 4);
				cr_assert_eq(run(), 0, "fn %d: %s", fn, tnpu_err_name(res.error));
				for (int o = 0; o < nout; o++) {
					const float *x = a + (col ? o : o * 20);

					if (arg) {
						int32_t got;

						memcpy(&got, H(HOST_OUT) + 4 * o, 4);
						cr_assert_eq(got, ref_arg(x, len, st, fn == TNPU_VEC_RED_ARGMAX, last),
							     "fn %d col %d last %d out %d", fn, col, last, o);
					} else {
						float r = fn == TNPU_VEC_RED_PROD ? 1.0f : x[0], y = HF(HOST_OUT)[o];

						for (int k = fn == TNPU_VEC_RED_PROD ? 0 : 1; k < len; k++)
							r = fn == TNPU_VEC_RED_PROD ? r * x[k * st]
										    : (x[k * st] < r || isnan(x[k * st]) ? x[k * st] : r);
						if (isnan(r))
							cr_assert(isnan(y), "fn %d out %d", fn, o);
						else
							cr_assert_eq(fbits(y), fbits(r), "fn %d col %d out %d: %g vs %g", fn, col,
								     o, y, r);
					}
				}
			}
}

/* ---- malformed commands ------------------------------------------------------------------------- */

Test(vmath, malformed_commands_fail_with_their_codes)
{
	struct tnpu_cmd_vec v;

	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_DIV, 16);	/* DIV on int32 */
	v.in_dtype = v.out_dtype = TNPU_DTYPE_INT32;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 10);
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_CMP_GE, 16);	/* a comparison writes INT8 */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 11);
	v.out_dtype = TNPU_DTYPE_INT8;
	v.d_st[3] = 1;
	v.vflags = TNPU_VEC_F_RELU;	/* and has no ReLU */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_CMP_GE + 1, 16);	/* unknown BINARY func */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 9);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_LEAKY, 16);	/* LEAKY uses lo only */
	v.hi = fbits(1.0f);
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 120);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_LOG, 16);	/* lo, hi are not LOG's */
	v.lo = fbits(1.0f);
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 116);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_SOFTSIGN + 1, 16);	/* past the last function */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 9);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_ARGMAX, 4);	/* ARGMAX writes INT32 */
	v.win.red.red_len = 4;
	v.win.red.red_st = 4;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 11);
	v.out_dtype = TNPU_DTYPE_INT32;
	v.in_dtype = TNPU_DTYPE_INT8;	/* ARGMAX reads fp32 */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 10);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, 4);	/* LAST is ARGMAX/ARGMIN's */
	v.win.red.red_len = 4;
	v.win.red.red_st = 4;
	v.vflags = TNPU_VEC_F_LAST;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_NEG, 4);	/* LAST is REDUCE's */
	v.vflags = TNPU_VEC_F_LAST;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_PROD, 4);	/* PROD applies no scale */
	v.win.red.red_len = 4;
	v.win.red.red_st = 4;
	v.scale = fbits(2.0f);
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 104);
	/* the device keeps working */
	v.scale = 0;
	cr_assert_eq(run_one(&v), 0, "%s", tnpu_err_name(res.error));
}
