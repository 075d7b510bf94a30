/* SPDX-License-Identifier: MIT */
/* ISA 2 vector units (device-ops #16, Documentation/hardware/vector-units.md): VEC_LUT and VEC
 * (MAP, BINARY with broadcast, POOL, REDUCE), the fp32 functions' error bounds against libm, the cycle
 * model and counters, malformed commands, and the SFU residual operand.  References are plain C
 * (double precision libm for the functions), never the model. */
#include <float.h>
#include <malloc.h>
#include <stdio.h>

#include "common.h"

static struct tsim s;
static uint64_t host;	/* 256 KiB host staging buffer */
static struct tcb cb;
static struct tnpu_result res;
static struct tnpu_config cfg;

/* 2 rows x 2 clusters x 2 PEs, 64 KiB storage units (32 KiB halves). */
static void setup(void)
{
	cfg = small_cfg();
	cfg.cols = 2;
	cfg.pes = 2;
	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
	host = tsim_buf(&s, 256 * 1024);
	tcb_init(&cb);
}

static void teardown(void)
{
	tcb_free(&cb);
	tsim_fini(&s);
}

TestSuite(vec, .init = setup, .fini = teardown);

static uint8_t *H(uint32_t off)
{
	return (uint8_t *)tsim_ptr(&s, host) + off;
}

static float *HF(uint32_t off)
{
	return (float *)(void *)H(off);
}

/* Host bytes [hoff, +len) -> SRAM half 0 [off, +len) of every row. */
static void put(uint32_t hoff, uint32_t off, uint32_t len)
{
	tcb_dma(&cb, true, 0, host + hoff, 0, 0, TNPU_DMA_ROW_ALL, 0, off, 0, 0, len, 1, 1);
}

static void get(uint8_t row, uint32_t off, uint32_t hoff, uint32_t len)
{
	tcb_dma(&cb, false, 0, host + hoff, 0, 0, row, 0, off, 0, 0, len, 1, 1);
}

static uint32_t run(void)
{
	tsim_run(&s, &cb, 0, &res);
	cb.len = 0;
	return res.error;
}

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/* A VEC command on row 0 with packed dims: dst/A/B offsets, the caller fills the rest. */
static struct tnpu_cmd_vec vcmd(uint8_t op, uint8_t fn, uint8_t in, uint8_t out)
{
	struct tnpu_cmd_vec v;

	memset(&v, 0, sizeof(v));
	v.hdr.opcode = TNPU_CMD_VEC;
	v.hdr.size = sizeof(v);
	v.op = op;
	v.func = fn;
	v.in_dtype = in;
	v.out_dtype = out;
	for (int k = 0; k < 4; k++)
		v.n[k] = 1;
	return v;
}

static void emit(const struct tnpu_cmd_vec *v)
{
	tcb_raw(&cb, v, sizeof(*v));
}

/* Packed 2-D layout helper: rows x cols of element size e at off, innermost dims 2, 3. */
static void dims2(struct tnpu_cmd_vec *v, uint32_t rows, uint32_t cols, unsigned e)
{
	v->n[2] = rows;
	v->n[3] = cols;
	v->d_st[2] = v->a_st[2] = (int32_t)(cols * e);
	v->d_st[3] = v->a_st[3] = (int32_t)e;
	if (v->op == TNPU_VEC_BINARY) {	/* B is only an operand of BINARY (else its fields are 0) */
		v->b_st[2] = v->d_st[2];
		v->b_st[3] = v->d_st[3];
	}
}

/* ---- fp32 functions: max error against libm over a dense sweep ---------------------------- */

static double ref_fn(unsigned fn, double t)
{
	switch (fn) {
	case TNPU_VEC_SIGMOID: return 1.0 / (1.0 + exp(-t));
	case TNPU_VEC_TANH: return tanh(t);
	case TNPU_VEC_EXP: return exp(t);
	case TNPU_VEC_ERF: return erf(t);
	case TNPU_VEC_GELU: return 0.5 * t * (1.0 + erf(t / sqrt(2.0)));
	case TNPU_VEC_HARDSIGMOID: return t < 0 ? 0 : (t > 1 ? 1 : t);
	case TNPU_VEC_HARDSWISH: { double h = t / 6 + 0.5; return t * (h < 0 ? 0 : (h > 1 ? 1 : h)); }
	case TNPU_VEC_SILU: return t / (1.0 + exp(-t));
	case TNPU_VEC_RECIP: return 1.0 / t;
	default: return 1.0 / sqrt(t);
	}
}

/* The bounds of vector-units.md "Maximum errors": relative (where the reference is a normal float)
 * or absolute scaled by max(1, |t|). */
struct bound {
	unsigned fn;
	const char *name;
	bool rel;
	double lim;
};

static const struct bound bounds[] = {
	{ TNPU_VEC_EXP, "exp", true, 4.0 * FLT_EPSILON },
	{ TNPU_VEC_SIGMOID, "sigmoid", true, 5.0 * FLT_EPSILON },
	{ TNPU_VEC_SILU, "silu", false, 2e-6 },
	{ TNPU_VEC_TANH, "tanh", false, 4e-7 },
	{ TNPU_VEC_ERF, "erf", false, 5e-7 },
	{ TNPU_VEC_GELU, "gelu", false, 5e-7 },
	{ TNPU_VEC_HARDSIGMOID, "hardsigmoid", false, FLT_EPSILON },
	{ TNPU_VEC_HARDSWISH, "hardswish", false, 2.0 * FLT_EPSILON },
	{ TNPU_VEC_RECIP, "recip", true, FLT_EPSILON },
	{ TNPU_VEC_RSQRT, "rsqrt", true, FLT_EPSILON },
};

static void sweep(const struct bound *b, double *worst, float *at)
{
	*worst = 0;
	*at = 0;
	for (int i = -(20 << 12); i <= (20 << 12) + (1 << 20); i++) {
		float t;
		double ref, err;
		float y;

		if (i <= (20 << 12))
			t = (float)i / 4096.0f;
		else	/* 2^20 log-spaced points of both signs beyond 20, up to 1e30 */
			t = (float)(((i & 1) ? -1.0 : 1.0) * 20.0 * pow(1e30 / 20.0, (double)(i - (20 << 12)) / (1 << 20)));
		if ((b->fn == TNPU_VEC_RECIP || b->fn == TNPU_VEC_RSQRT) && t <= 0)
			continue;
		y = tnpu_vec_eval(b->fn, t);
		ref = ref_fn(b->fn, (double)t);
		if (b->rel) {
			if (fabs(ref) < FLT_MIN || fabs(ref) > FLT_MAX)
				continue;
			err = fabs((double)y - ref) / fabs(ref);
		} else {
			err = fabs((double)y - ref) / fmax(1.0, fabs((double)t));
		}
		if (!(err <= *worst)) {
			*worst = err;
			*at = t;
		}
	}
}

Test(vec, fp32_functions_meet_their_stated_max_error)
{
	for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
		double worst;
		float at;

		sweep(&bounds[k], &worst, &at);
		printf("# vec fp32 %-11s max %s error %.3g at t = %.9g (bound %.3g)\n", bounds[k].name,
		       bounds[k].rel ? "relative" : "absolute", worst, at, bounds[k].lim);
		cr_expect(worst <= bounds[k].lim, "%s: max error %.3g at %.9g > %.3g", bounds[k].name, worst, at,
			  bounds[k].lim);
	}
	/* special values */
	cr_assert(isnan(tnpu_vec_eval(TNPU_VEC_EXP, NAN)));
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_EXP, 100.0f), INFINITY);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_EXP, -200.0f), 0.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SIGMOID, -200.0f), 0.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_SIGMOID, 200.0f), 1.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_TANH, -50.0f), -1.0f);
	cr_assert_eq(tnpu_vec_eval(TNPU_VEC_RECIP, 0.0f), INFINITY);
}

/* The device path of MAP applies t = x*scale + bias and the same functions. */
Test(vec, map_fp32_functions_match_the_function_unit_with_pre_affine)
{
	const unsigned fns[] = { TNPU_VEC_SIGMOID, TNPU_VEC_TANH, TNPU_VEC_EXP, TNPU_VEC_GELU, TNPU_VEC_SILU,
				 TNPU_VEC_HARDSWISH, TNPU_VEC_HARDSIGMOID, TNPU_VEC_RSQRT };

	for (int i = 0; i < 256; i++)
		HF(0)[i] = (float)(i - 128) / 16.0f;
	for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
		float sc = fns[k] == TNPU_VEC_HARDSIGMOID ? 0.2f : 1.0f, bi = fns[k] == TNPU_VEC_HARDSIGMOID ? 0.5f : 0.0f;
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, (uint8_t)fns[k], TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

		if (fns[k] == TNPU_VEC_RSQRT)
			bi = 9.0f;	/* rsqrt(x + 9) > 0 for x >= -8 */
		dims2(&v, 16, 16, 4);
		v.d_off = 4096;
		v.scale = fbits(sc);
		v.bias = fbits(bi);
		put(0, 0, 1024);
		emit(&v);
		get(0, 4096, 8192, 1024);
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		for (int i = 0; i < 256; i++) {
			float t = HF(0)[i] * sc + bi, y = HF(8192)[i];

			cr_assert_eq(fbits(y), fbits(tnpu_vec_eval(fns[k], t)), "fn %u i %d", fns[k], i);
			cr_assert(fabs(y - ref_fn(fns[k], t)) <= 2e-6 * fmax(1.0, fabs(ref_fn(fns[k], t))),
				  "fn %u t %g: %g vs %g", fns[k], t, y, ref_fn(fns[k], t));
		}
	}
}

/* The vectorised MAP of packed fp32 runs (tnpu_vec_map_run: exp with its scaling as two exact
 * power-of-two products) gives tnpu_vec_eval's bits for every function, on a sweep of 2^20 inputs
 * spread over every exponent and on the special values: NaN, infinities, the exp cut-offs and their
 * neighbours, subnormal and overflowing exp results, signed zeros; with the pre-affine and ReLU. */
Test(vec, map_runs_give_the_per_element_bits)
{
	static const unsigned fns[] = { TNPU_VEC_SIGMOID, TNPU_VEC_TANH, TNPU_VEC_EXP, TNPU_VEC_ERF, TNPU_VEC_GELU,
					TNPU_VEC_HARDSIGMOID, TNPU_VEC_HARDSWISH, TNPU_VEC_SILU, TNPU_VEC_RECIP,
					TNPU_VEC_RSQRT };
	static const float special[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.7228f, 88.72281f, 88.72279f,
					 -103.97f, -103.96999f, -103.97001f, -87.33655f, -87.5f, -95.0f, -100.0f,
					 -103.9f, 88.0f, 88.7f, 1e-30f, -1e-30f, FLT_MAX, -FLT_MAX, 1.0f, -1.0f };
	enum { N = 1 << 20 };
	const size_t ns = sizeof(special) / sizeof(special[0]);
	uint8_t *in = malloc((N + ns) * 4);
	float *out = malloc((N + ns) * 4);
	uint32_t x = 12345;

	cr_assert(in && out);
	for (size_t i = 0; i < N; i++) {	/* random bits: every exponent, NaNs included */
		x = x * 1664525u + 1013904223u;
		memcpy(in + 4 * i, &x, 4);
	}
	for (size_t i = 0; i < ns; i++)
		memcpy(in + 4 * (N + i), &special[i], 4);
	for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
		for (int variant = 0; variant < 2; variant++) {
			float sc = variant ? 0.75f : 1.0f, bi = variant ? -0.5f : 0.0f;

			tnpu_vec_map_run(fns[k], in, out, N + ns, sc, bi, variant);
			for (size_t i = 0; i < N + ns; i++) {
				float t, want;

				memcpy(&t, in + 4 * i, 4);
				want = tnpu_vec_eval(fns[k], t * sc + bi);
				if (variant && want < 0)
					want = 0;
				cr_assert_eq(fbits(out[i]), fbits(want), "fn %u variant %d input %zu (t %.9g): %.9g vs %.9g",
					     fns[k], variant, i, t * sc + bi, out[i], want);
			}
		}
	free(in);
	free(out);
}

/* ---- MAP: LUT, requant per channel, quant/dequant, copy (transpose) ----------------------- */

Test(vec, lut_tables_are_programmable_and_zero_at_job_start)
{
	struct tnpu_cmd_vec_lut l;
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_LUT, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);
	int8_t *in = (int8_t *)H(0), *out = (int8_t *)H(4096);

	memset(&l, 0, sizeof(l));
	l.hdr.opcode = TNPU_CMD_VEC_LUT;
	l.hdr.size = sizeof(l);
	l.table = 2;
	for (int i = 0; i < 256; i++) {
		double x = (i - 128) / 16.0;

		l.entry[i] = (int8_t)lrint(127.0 / (1.0 + exp(-x)));	/* sigmoid, output scale 1/127 */
		in[i] = (int8_t)(i - 128);
	}
	put(0, 0, 256);
	tcb_raw(&cb, &l, sizeof(l));
	dims2(&v, 1, 256, 1);
	v.d_off = 1024;
	v.lut = 2;
	emit(&v);
	get(0, 1024, 4096, 256);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 256; i++)
		cr_assert_eq(out[i], l.entry[i], "i %d", i);
	/* next job: tables are zero again */
	put(0, 0, 256);
	emit(&v);
	get(0, 1024, 4096, 256);
	cr_assert_eq(run(), 0);
	for (int i = 0; i < 256; i++)
		cr_assert_eq(out[i], 0);
}

Test(vec, requant_per_channel_and_quant_dequant)
{
	int32_t *acc = (int32_t *)(void *)H(0);
	uint32_t *tab = (uint32_t *)(void *)H(1024);
	int8_t *out = (int8_t *)H(8192);
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_REQUANT, TNPU_DTYPE_INT32, TNPU_DTYPE_INT8);
	const int C = 8, P = 12;

	for (int i = 0; i < P * C; i++)
		acc[i] = (i * 7919) % 20001 - 10000;
	for (int c = 0; c < C; c++) {
		tab[2 * c] = (uint32_t)(1000000 + 377777 * c);
		tab[2 * c + 1] = (uint32_t)(24 + c % 3);
	}
	put(0, 0, 2048);
	dims2(&v, P, C, 4);
	v.d_st[2] = C;
	v.d_st[3] = 1;
	v.d_off = 4096;
	v.vflags = TNPU_VEC_F_PER_CHANNEL;
	v.b_off = 1024;
	v.b_st[2] = v.b_st[3] = 0;
	v.chan_dim = 3;
	v.zero_point = -5;
	emit(&v);
	get(0, 4096, 8192, (uint32_t)(P * C));
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int p = 0; p < P; p++)
		for (int c = 0; c < C; c++) {
			int64_t x = acc[p * C + c], m = (int32_t)tab[2 * c], sh = tab[2 * c + 1];
			int64_t y = ((x * m + (1ll << (sh - 1))) >> sh) - 5;

			y = y < -128 ? -128 : (y > 127 ? 127 : y);
			cr_assert_eq(out[p * C + c], y, "p %d c %d", p, c);
		}
	/* QUANT then DEQUANT round trip: round half to even, saturation, zero point */
	{
		float *x = HF(0), *back = HF(16384);
		struct tnpu_cmd_vec q = vcmd(TNPU_VEC_MAP, TNPU_VEC_QUANT, TNPU_DTYPE_FP32, TNPU_DTYPE_INT8);
		struct tnpu_cmd_vec d = vcmd(TNPU_VEC_MAP, TNPU_VEC_DEQUANT, TNPU_DTYPE_INT8, TNPU_DTYPE_FP32);

		for (int i = 0; i < 64; i++)
			x[i] = (float)(i - 32) * 0.25f + ((i % 4 == 0) ? 0.125f : 0.0f);
		put(0, 0, 256);
		dims2(&q, 1, 64, 4);
		q.d_st[3] = 1;
		q.d_off = 1024;
		q.scale = fbits(2.0f);
		q.zero_point = 3;
		emit(&q);
		dims2(&d, 1, 64, 1);
		d.d_st[3] = 4;
		d.a_off = 1024;
		d.d_off = 2048;
		d.scale = fbits(0.5f);
		d.zero_point = 3;
		emit(&d);
		get(0, 1024, 8192, 64);
		get(0, 2048, 16384, 256);
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		for (int i = 0; i < 64; i++) {
			double r = nearbyint((double)x[i] * 2.0) + 3;

			r = r < -128 ? -128 : (r > 127 ? 127 : r);
			cr_assert_eq(out[i], (int8_t)r, "i %d x %g", i, x[i]);
			cr_assert_eq(back[i], (float)((r - 3) * 0.5), "i %d", i);
		}
	}
}

Test(vec, copy_with_permuted_strides_transposes_and_slices)
{
	float *a = HF(0), *t = HF(8192);
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	const int R = 7, C = 13;

	for (int i = 0; i < R * C; i++)
		a[i] = (float)i * 1.5f - 3.0f;
	put(0, 0, R * C * 4);
	/* out[j][i] = a[i][j]: iterate (j, i), read a at j*4 + i*C*4, write packed R-wide rows */
	v.n[2] = C;
	v.n[3] = R;
	v.a_st[2] = 4;
	v.a_st[3] = C * 4;
	v.d_st[2] = R * 4;
	v.d_st[3] = 4;
	v.d_off = 4096;
	emit(&v);
	get(0, 4096, 8192, R * C * 4);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < R; i++)
		for (int j = 0; j < C; j++)
			cr_assert_eq(t[j * R + i], a[i * C + j]);
}

/* ---- BINARY with broadcast ---------------------------------------------------------------- */

Test(vec, binary_fp32_broadcast_and_relu)
{
	float *a = HF(0), *b = HF(4096), *o = HF(16384);
	const int R = 9, C = 24;
	const uint8_t fns[] = { TNPU_VEC_ADD, TNPU_VEC_SUB, TNPU_VEC_MUL, TNPU_VEC_MAX, TNPU_VEC_MIN };

	for (int i = 0; i < R * C; i++)
		a[i] = (float)((i * 37) % 101) / 7.0f - 6.0f;
	for (int j = 0; j < C; j++)
		b[j] = (float)j / 3.0f - 4.0f;
	for (size_t f = 0; f < sizeof(fns); f++) {
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_BINARY, fns[f], TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

		put(0, 0, 8192);	/* every job starts with zeroed storage units */
		dims2(&v, R, C, 4);
		v.b_off = 4096;
		v.b_st[2] = 0;	/* one row of B broadcast over the rows of A */
		v.d_off = 12288;
		v.vflags = f == 0 ? TNPU_VEC_F_RELU : 0;
		emit(&v);
		get(0, 12288, 16384, R * C * 4);
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		for (int i = 0; i < R; i++)
			for (int j = 0; j < C; j++) {
				float x = a[i * C + j], y = b[j], r;

				switch (fns[f]) {
				case TNPU_VEC_ADD: r = x + y; r = r < 0 ? 0 : r; break;
				case TNPU_VEC_SUB: r = x - y; break;
				case TNPU_VEC_MUL: r = x * y; break;
				case TNPU_VEC_MAX: r = x > y ? x : y; break;
				default: r = x < y ? x : y; break;
				}
				cr_assert_eq(o[i * C + j], r, "fn %u (%d,%d)", fns[f], i, j);
			}
	}
}

/* A per-row scalar broadcast along the run (b_st[3] 0: squeeze-and-excite's per-channel scale) and
 * packed runs of odd length, with NaNs, infinities and signed zeros in both operands: every result the
 * element-wise definition's (NaN where it gives NaN). */
Test(vec, binary_fp32_scalar_broadcast_runs_with_nan_and_inf)
{
	float *a = HF(0), *b = HF(4096), *o = HF(16384);
	const int R = 5, C = 37;
	const uint8_t fns[] = { TNPU_VEC_ADD, TNPU_VEC_SUB, TNPU_VEC_MUL };
	const float odd[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f };

	for (int i = 0; i < R * C; i++)
		a[i] = i % 11 == 3 ? odd[i % 6] : (float)((i * 37) % 101) / 7.0f - 6.0f;
	for (int r = 0; r < R; r++)
		b[r] = r == 2 ? NAN : (r == 4 ? -INFINITY : (float)r - 1.5f);
	for (size_t f = 0; f < sizeof(fns); f++)
		for (int relu = 0; relu < 2; relu++) {
			struct tnpu_cmd_vec v = vcmd(TNPU_VEC_BINARY, fns[f], TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

			put(0, 0, 8192);
			dims2(&v, R, C, 4);
			v.b_off = 4096;
			v.b_st[2] = 4;	/* one element of B per row ... */
			v.b_st[3] = 0;	/* ... broadcast along it */
			v.d_off = 12288;
			v.vflags = relu ? TNPU_VEC_F_RELU : 0;
			emit(&v);
			get(0, 12288, 16384, R * C * 4);
			cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
			for (int i = 0; i < R; i++)
				for (int j = 0; j < C; j++) {
					float x = a[i * C + j], y = b[i], r;

					r = fns[f] == TNPU_VEC_ADD ? x + y : (fns[f] == TNPU_VEC_SUB ? x - y : x * y);
					if (relu && r < 0)
						r = 0;
					if (r != r)
						cr_assert(isnan(o[i * C + j]), "fn %u relu %d (%d,%d): %g, want NaN", fns[f],
							  relu, i, j, o[i * C + j]);
					else
						cr_assert_eq(fbits(o[i * C + j]), fbits(r), "fn %u relu %d (%d,%d): %g vs %g",
							     fns[f], relu, i, j, o[i * C + j], r);
				}
		}
}

Test(vec, binary_int8_requantised_add_and_int32_wrap)
{
	int8_t *a = (int8_t *)H(0), *b = (int8_t *)H(1024), *o = (int8_t *)H(8192);
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_ADD, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);
	int32_t mult = 1518500250;	/* 1/sqrt(2) * 2^31 */

	for (int i = 0; i < 512; i++) {
		a[i] = (int8_t)(i * 13);
		b[i] = (int8_t)(100 - i * 7);
	}
	put(0, 0, 2048);
	dims2(&v, 2, 256, 1);
	v.b_off = 1024;
	v.d_off = 4096;
	v.scale = (uint32_t)mult;
	v.shift = 31;
	v.zero_point = 2;
	emit(&v);
	get(0, 4096, 8192, 512);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 512; i++) {
		int64_t r = (((int64_t)(a[i] + b[i]) * mult + (1ll << 30)) >> 31) + 2;

		r = r < -128 ? -128 : (r > 127 ? 127 : r);
		cr_assert_eq(o[i], r, "i %d", i);
	}
	{
		int32_t *x = (int32_t *)(void *)H(0), *r32 = (int32_t *)(void *)H(16384);
		struct tnpu_cmd_vec m = vcmd(TNPU_VEC_BINARY, TNPU_VEC_MUL, TNPU_DTYPE_INT32, TNPU_DTYPE_INT32);

		x[0] = 0x40000001;
		x[1] = -7;
		x[256] = 4;
		x[257] = 0x7fffffff;
		put(0, 0, 2048);
		dims2(&m, 1, 2, 4);
		m.b_off = 1024;
		m.d_off = 4096;
		emit(&m);
		get(0, 4096, 16384, 8);
		cr_assert_eq(run(), 0);
		cr_assert_eq(r32[0], (int32_t)(0x40000001u * 4u));
		cr_assert_eq(r32[1], (int32_t)((uint32_t)-7 * 0x7fffffffu));
	}
}

/* ---- POOL ---------------------------------------------------------------------------------- */

/* NHWC H x W x C int8 max pooling 3x3 stride 2 pad 1 (ResNet's stem), and fp32 average without
 * counting the padding. */
Test(vec, pool_max_int8_and_avg_fp32_nhwc_with_padding)
{
	const int Hh = 11, W = 10, C = 5, K = 3, S = 2, P = 1;
	const int OH = (Hh + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
	int8_t *in = (int8_t *)H(0), *out = (int8_t *)H(65536);
	float *fin = HF(131072), *fout = HF(196608);
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_MAX, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);

	for (int i = 0; i < Hh * W * C; i++) {
		in[i] = (int8_t)((i * 97 + 11) % 256 - 128);
		fin[i] = (float)((i * 31) % 53) / 5.0f - 4.0f;
	}
	put(0, 0, (uint32_t)(Hh * W * C));
	put(131072, 4096, (uint32_t)(Hh * W * C * 4));
	v.n[1] = (uint32_t)OH;
	v.n[2] = (uint32_t)OW;
	v.n[3] = (uint32_t)C;
	v.a_st[1] = W * C;
	v.a_st[2] = C;
	v.a_st[3] = 1;
	v.d_off = 1024;
	v.d_st[1] = OW * C;
	v.d_st[2] = C;
	v.d_st[3] = 1;
	v.win.pool = (struct tnpu_vec_pool_win){ .win_h = K, .win_w = K, .stride_y = S, .stride_x = S, .pad_top = P,
						 .pad_left = P, .in_h = (uint16_t)Hh, .in_w = (uint16_t)W };
	emit(&v);
	get(0, 1024, 65536, (uint32_t)(OH * OW * C));
	/* fp32 average */
	v.func = TNPU_VEC_POOL_AVG;
	v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
	v.a_off = 4096;
	v.a_st[1] = W * C * 4;
	v.a_st[2] = C * 4;
	v.a_st[3] = 4;
	v.d_off = 16384;
	v.d_st[1] = OW * C * 4;
	v.d_st[2] = C * 4;
	v.d_st[3] = 4;
	emit(&v);
	get(0, 16384, 196608, (uint32_t)(OH * OW * C * 4));
	cr_assert_eq(run(), 0, "%s info %u", tnpu_err_name(res.error), res.err_info);
	for (int y = 0; y < OH; y++)
		for (int x = 0; x < OW; x++)
			for (int c = 0; c < C; c++) {
				int m = -1000, n = 0;
				float sum = 0;

				for (int ry = 0; ry < K; ry++)
					for (int rx = 0; rx < K; rx++) {
						int iy = y * S - P + ry, ix = x * S - P + rx;

						if (iy < 0 || ix < 0 || iy >= Hh || ix >= W)
							continue;
						m = in[(iy * W + ix) * C + c] > m ? in[(iy * W + ix) * C + c] : m;
						sum += fin[(iy * W + ix) * C + c];
						n++;
					}
				cr_assert_eq(out[(y * OW + x) * C + c], m, "max (%d,%d,%d)", y, x, c);
				cr_assert_eq(fout[(y * OW + x) * C + c], sum / (float)n, "avg (%d,%d,%d)", y, x, c);
			}
	/* work = outputs x taps: 64 lanes; VEC_OPS counts both commands */
	{
		uint64_t work = (uint64_t)OH * OW * C * K * K;

		cr_assert_eq(res.counters[TNPU_CNT_VEC_OPS], 2 * work);
		cr_assert_eq(res.counters[TNPU_CNT_VEC_CYCLES], 2 * (TNPU_CYC_VEC + (work + 63) / 64));
	}
}

/* Issue #28: the int8 average's exact sum reaches 2^26 taps x -128 = -2^33, and x·M with M = 2^31 - 1
 * needs 65 bits: requant() overflowed int64 (UBSan: signed-integer-overflow; the wrapped product gave
 * 0 here).  The exact formula: (-2^33 (2^31 - 1) + 2^61) >> 62 = floor(-3.5 + 2^-29) = -4, and with
 * M = -2^31: (2^64 + 2^61) >> 62 = 4. */
Test(vec, int8_avg_pool_requantises_the_widest_sum_exactly, .timeout = 120)
{
	static const struct {
		uint32_t scale;
		int8_t want;
	} cases[] = { { 0x7FFFFFFFu, -4 }, { 0x80000000u, 4 } };
	struct tnpu_config c = small_cfg();
	struct tsim t;
	struct tcb b;
	struct tnpu_result r;
	uint64_t va;

	c.host_work = 1ull << 40;	/* 2^26 element-taps: past the small array's budget */
	cr_assert_eq(tsim_init(&t, &c, 16 << 20), 0);
	va = tsim_buf(&t, 4096);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_AVG, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);
		uint8_t *h = tsim_ptr(&t, va);

		h[0] = 0x80;	/* -128 at SRAM 0; every tap reads it (strides 0) */
		h[64] = 0x55;
		v.vflags = TNPU_VEC_F_COUNT_PAD;
		v.scale = cases[i].scale;
		v.shift = 62;
		v.d_off = 64;
		v.win.pool = (struct tnpu_vec_pool_win){ .win_h = 8192, .win_w = 8192, .stride_y = 1, .stride_x = 1,
							 .in_h = 8192, .in_w = 8192 };
		tcb_init(&b);
		tcb_dma(&b, true, 0, va, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1);
		tcb_raw(&b, &v, sizeof(v));
		tcb_dma(&b, false, 0, va + 64, 0, 0, 0, 0, 64, 0, 0, 1, 1, 1);
		tsim_run(&t, &b, 0, &r);
		ASSERT_OK(r);
		cr_assert_eq((int8_t)h[64], cases[i].want, "M = 0x%08x: %d, the exact formula gives %d", cases[i].scale,
			     (int8_t)h[64], cases[i].want);
		tcb_free(&b);
	}
	tsim_fini(&t);
}

/* Issue #28: the VEC output buffer (4 bytes per output element, 16 MiB at 2^22) was a plain malloc.
 * After one big block glibc raises its mmap threshold, so the next smaller one comes from the
 * worker's arena and stays resident when freed: 16 idle workers held +260 MiB.  Now the buffers are
 * anonymous mappings returned when the command ends: the heap does not grow across VEC jobs, and the
 * executor keeps no more than its small scratch. */
static void big_copy(struct tcb *b, uint32_t outs)
{
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);

	v.n[2] = outs / 1024;
	v.n[3] = 1024;	/* every output reads byte 0 and writes byte 64 (strides 0) */
	v.d_off = 64;
	tcb_raw(b, &v, sizeof(v));
}

Test(vec, big_vec_buffers_are_returned_at_the_end_of_the_command)
{
	struct tnpu_config c = small_cfg();
	struct tsim t;
	struct tcb b;
	struct tnpu_result r;
	struct mallinfo2 m0, m1;

	cr_assert_eq(tsim_init(&t, &c, 16 << 20), 0);
	tcb_init(&b);
	big_copy(&b, 1u << 22);	/* 16 MiB of outputs */
	tsim_run(&t, &b, 0, &r);
	ASSERT_OK(r);
	m0 = mallinfo2();
	b.len = 0;
	big_copy(&b, 1u << 21);	/* 8 MiB: under glibc's raised threshold */
	tsim_run(&t, &b, 0, &r);
	ASSERT_OK(r);
	m1 = mallinfo2();
	cr_log_info("heap %zu -> %zu bytes, %zu free in it", m0.arena, m1.arena, m1.fordblks);
	cr_assert_lt(m1.arena, m0.arena + (1u << 20), "the heap grew by %zu bytes across a VEC job",
		     m1.arena - m0.arena);
	cr_assert_leq(tnpu_exec_scratch_bytes(t.ex), (size_t)1 << 20);
	tcb_free(&b);
	tsim_fini(&t);
}

/* ---- REDUCE and a device Softmax ------------------------------------------------------------- */

/* POOL as vector-units.md defines it, one output element at a time (the model runs the channels of a
 * window position together): max with NaN propagation in tap order, fp32 sums in tap order from 0.0,
 * int8 sums requantised. */
static void pool_ref(const struct tnpu_cmd_vec *v, const uint8_t *a, uint8_t *d)
{
	const struct tnpu_vec_pool_win *w = &v->win.pool;
	bool f = v->in_dtype == TNPU_DTYPE_FP32;

	for (uint32_t i0 = 0; i0 < v->n[0]; i0++)
		for (uint32_t i1 = 0; i1 < v->n[1]; i1++)
			for (uint32_t i2 = 0; i2 < v->n[2]; i2++)
				for (uint32_t i3 = 0; i3 < v->n[3]; i3++) {
					float mf = 0, sf = 0;
					int64_t mi = 0, si = 0, cnt = 0;
					int64_t o = (int64_t)i0 * v->d_st[0] + (int64_t)i1 * v->d_st[1] +
						    (int64_t)i2 * v->d_st[2] + (int64_t)i3 * v->d_st[3];

					for (int ry = 0; ry < w->win_h; ry++)
						for (int rx = 0; rx < w->win_w; rx++) {
							int64_t iy = (int64_t)i1 * w->stride_y - w->pad_top + ry;
							int64_t ix = (int64_t)i2 * w->stride_x - w->pad_left + rx;
							const uint8_t *q;

							if (iy < 0 || ix < 0 || iy >= w->in_h || ix >= w->in_w)
								continue;
							q = a + (int64_t)i0 * v->a_st[0] + iy * v->a_st[1] + ix * v->a_st[2] +
							    (int64_t)i3 * v->a_st[3];
							if (f) {
								float x;

								memcpy(&x, q, 4);
								sf += x;
								if (!cnt || x > mf || x != x)
									mf = x;
							} else {
								si += (int8_t)q[0];
								if (!cnt || (int8_t)q[0] > mi)
									mi = (int8_t)q[0];
							}
							cnt++;
						}
					if (v->vflags & TNPU_VEC_F_COUNT_PAD)
						cnt = (int64_t)w->win_h * w->win_w;
					if (f) {
						float r = v->func == TNPU_VEC_POOL_MAX ? mf : sf / (float)cnt;

						memcpy(d + o, &r, 4);
					} else if (v->func == TNPU_VEC_POOL_MAX) {
						d[o] = (uint8_t)(int8_t)mi;
					} else {
						int64_t y = si * (int32_t)v->scale + (v->shift ? (int64_t)1 << (v->shift - 1) : 0);

						y = (y >> v->shift) + v->zero_point;
						d[o] = (uint8_t)(int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));
					}
				}
}

/* Random windows, strides, paddings, batch/channel dims and both channel placements (NHWC: channels
 * in dim 3, contiguous; NCHW: channels in dim 0), fp32 inputs with NaNs and signed zeros: every
 * output equals the per-element reference bit for bit. */
Test(vec, pool_random_geometries_match_the_per_element_definition)
{
	uint64_t seed = 0x9001;
	unsigned done = 0;

	for (int it = 0; it < 300; it++) {
		bool f = trng(&seed) % 2, nhwc = trng(&seed) % 2;
		unsigned e = f ? 4 : 1;
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_POOL, (uint8_t)(trng(&seed) % 2), f ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8,
					     f ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8);
		struct tnpu_vec_pool_win *w = &v.win.pool;
		uint32_t B = 1 + trng(&seed) % 3, C = 1 + trng(&seed) % 11, OH = 1 + trng(&seed) % 5, OW = 1 + trng(&seed) % 5;
		uint32_t ih, iw, in_bytes, out_bytes;
		uint8_t *a = H(0), *want = H(131072), *got = H(196608);

		w->win_h = (uint16_t)(1 + trng(&seed) % 3);
		w->win_w = (uint16_t)(1 + trng(&seed) % 3);
		w->stride_y = (uint8_t)(1 + trng(&seed) % 3);
		w->stride_x = (uint8_t)(1 + trng(&seed) % 3);
		w->pad_top = (uint8_t)(trng(&seed) % w->win_h);
		w->pad_left = (uint8_t)(trng(&seed) % w->win_w);
		/* big enough that every window has a valid tap, sometimes smaller than the last window */
		{
			int64_t full_h = (int64_t)(OH - 1) * w->stride_y + w->win_h - w->pad_top;
			int64_t full_w = (int64_t)(OW - 1) * w->stride_x + w->win_w - w->pad_left;
			int64_t min_h = (int64_t)(OH - 1) * w->stride_y - w->pad_top + 1;
			int64_t min_w = (int64_t)(OW - 1) * w->stride_x - w->pad_left + 1;

			min_h = min_h < 1 ? 1 : min_h;
			min_w = min_w < 1 ? 1 : min_w;
			ih = (uint32_t)(trng(&seed) % 2 ? full_h : min_h + (int64_t)(trng(&seed) % (uint64_t)(full_h - min_h + 1)));
			iw = (uint32_t)(trng(&seed) % 2 ? full_w : min_w + (int64_t)(trng(&seed) % (uint64_t)(full_w - min_w + 1)));
		}
		w->in_h = (uint16_t)ih;
		w->in_w = (uint16_t)iw;
		if (v.func == TNPU_VEC_POOL_AVG && !f) {
			v.vflags = TNPU_VEC_F_COUNT_PAD;
			v.scale = (uint32_t)(trng(&seed) % 70000) - 20000;
			v.shift = (uint8_t)(trng(&seed) % 20);
			v.zero_point = (int16_t)(trng(&seed) % 21) - 10;
		}
		in_bytes = B * C * ih * iw * e;
		out_bytes = B * C * OH * OW * e;
		if (in_bytes > 16384 || out_bytes > 8192)
			continue;
		v.n[0] = nhwc ? B : C;
		v.n[1] = OH;
		v.n[2] = OW;
		v.n[3] = nhwc ? C : B;
		/* input: NHWC (b, y, x, c) or CHW per image with images innermost-but-one (c, y, x, b) */
		v.a_st[1] = (int32_t)(iw * (nhwc ? C : B) * e);
		v.a_st[2] = (int32_t)((nhwc ? C : B) * e);
		v.a_st[3] = (int32_t)e;
		v.a_st[0] = (int32_t)(ih * iw * (nhwc ? C : B) * e);
		v.d_off = 16384;
		v.d_st[3] = (int32_t)e;
		v.d_st[2] = (int32_t)(v.n[3] * e);
		v.d_st[1] = (int32_t)(OW * v.n[3] * e);
		v.d_st[0] = (int32_t)(OH * OW * v.n[3] * e);
		for (uint32_t k = 0; k < in_bytes / e; k++) {
			uint32_t r = (uint32_t)trng(&seed);

			if (f) {
				float x = (float)((int)(r % 2001) - 1000) / 64.0f;

				if (r % 37 == 0)
					x = NAN;
				else if (r % 41 == 0)
					x = -0.0f;
				memcpy(a + 4 * k, &x, 4);
			} else {
				a[k] = (uint8_t)r;
			}
		}
		pool_ref(&v, a, want);
		put(0, 0, in_bytes);
		emit(&v);
		get(0, 16384, 196608, out_bytes);
		cr_assert_eq(run(), 0, "iteration %d: %s info %u", it, tnpu_err_name(res.error), res.err_info);
		cr_assert(!memcmp(got, want, out_bytes), "iteration %d: %s %s %s differs from the definition", it,
			  f ? "fp32" : "int8", v.func == TNPU_VEC_POOL_MAX ? "max" : "avg", nhwc ? "NHWC" : "NCHW");
		done++;
	}
	cr_assert_gt(done, 150, "most geometries fit the storage unit (%u)", done);
}

/* int8 average over more channels than the model sums at a time (4096): the channel runs give the
 * per-element definition's bits, with the channels ascending and descending (a_st[3] = -1). */
Test(vec, int8_avg_pool_over_5000_channels_matches_the_definition)
{
	const uint32_t C = 5000;
	uint8_t *a = H(0), *want = H(131072), *got = H(196608);
	uint64_t seed = 0xc5000;

	for (int desc = 0; desc < 2; desc++) {
		struct tnpu_cmd_vec v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_AVG, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);

		v.vflags = TNPU_VEC_F_COUNT_PAD;
		v.scale = 12345;
		v.shift = 14;
		v.zero_point = -3;
		v.win.pool = (struct tnpu_vec_pool_win){ .win_h = 2, .win_w = 2, .stride_y = 1, .stride_x = 1,
							 .in_h = 2, .in_w = 2 };
		v.n[3] = C;
		v.a_off = desc ? C - 1 : 0;
		v.a_st[3] = desc ? -1 : 1;
		v.a_st[2] = (int32_t)C;
		v.a_st[1] = (int32_t)(2 * C);
		v.d_off = 20480;
		v.d_st[3] = 1;
		for (uint32_t k = 0; k < 4 * C; k++)
			a[k] = (uint8_t)trng(&seed);
		pool_ref(&v, a + v.a_off, want);
		put(0, 0, 4 * C);
		emit(&v);
		get(0, 20480, 196608, C);
		cr_assert_eq(run(), 0, "%s info %u", tnpu_err_name(res.error), res.err_info);
		cr_assert(!memcmp(got, want, C), "%s channels differ from the definition", desc ? "descending" : "ascending");
	}
}

Test(vec, reduce_rows_and_columns_and_softmax_pipeline)
{
	const int R = 6, L = 50;
	float *x = HF(0), *o = HF(65536);
	struct tnpu_cmd_vec v;

	for (int i = 0; i < R * L; i++)
		x[i] = (float)((i * 53) % 97) / 9.0f - 5.0f;
	put(0, 0, R * L * 4);
	/* row max -> 2048.., column sums (scale 1/R) -> 4096.. */
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_MAX, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = R;
	v.a_st[3] = L * 4;
	v.d_st[3] = 4;
	v.d_off = 2048;
	v.win.red = (struct tnpu_vec_red_win){ .red_len = L, .red_st = 4 };
	emit(&v);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = L;
	v.a_st[3] = 4;
	v.d_st[3] = 4;
	v.d_off = 4096;
	v.scale = fbits(1.0f / R);
	v.win.red = (struct tnpu_vec_red_win){ .red_len = R, .red_st = L * 4 };
	emit(&v);
	/* softmax of every row, in place at 8192: x - max (broadcast), exp, sum, recip, mul */
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_SUB, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	dims2(&v, R, L, 4);
	v.d_off = 8192;
	v.b_off = 2048;
	v.b_st[2] = 4;
	v.b_st[3] = 0;
	emit(&v);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_EXP, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	dims2(&v, R, L, 4);
	v.a_off = v.d_off = 8192;
	v.scale = fbits(1.0f);
	emit(&v);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = R;
	v.a_off = 8192;
	v.a_st[3] = L * 4;
	v.d_st[3] = 4;
	v.d_off = 3072;
	v.scale = fbits(1.0f);
	v.win.red = (struct tnpu_vec_red_win){ .red_len = L, .red_st = 4 };
	emit(&v);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_RECIP, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = R;
	v.a_st[3] = v.d_st[3] = 4;
	v.a_off = v.d_off = 3072;
	v.scale = fbits(1.0f);
	emit(&v);
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_MUL, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	dims2(&v, R, L, 4);
	v.a_off = v.d_off = 8192;
	v.b_off = 3072;
	v.b_st[2] = 4;
	v.b_st[3] = 0;
	emit(&v);
	get(0, 2048, 65536, 4 * R);
	get(0, 4096, 65536 + 1024, 4 * L);
	get(0, 8192, 65536 + 4096, 4 * R * L);
	cr_assert_eq(run(), 0, "%s info %u", tnpu_err_name(res.error), res.err_info);
	for (int i = 0; i < R; i++) {
		float m = x[i * L];
		double sum = 0;

		for (int j = 1; j < L; j++)
			m = x[i * L + j] > m ? x[i * L + j] : m;
		cr_assert_eq(o[i], m, "row max %d", i);
		for (int j = 0; j < L; j++)
			sum += exp((double)x[i * L + j] - m);
		for (int j = 0; j < L; j++) {
			double ref = exp((double)x[i * L + j] - m) / sum;

			cr_assert(fabs(o[1024 + i * L + j] - ref) <= 2e-6 * ref + 1e-9, "softmax (%d,%d) %g vs %g", i,
				  j, o[1024 + i * L + j], ref);
		}
	}
	for (int j = 0; j < L; j++) {
		float sum = 0;

		for (int i = 0; i < R; i++)
			sum += x[i * L + j];
		cr_assert_eq(o[256 + j], sum * (1.0f / R), "column mean %d", j);
	}
}

/* ---- broadcast rows, timeline ---------------------------------------------------------------- */

Test(vec, broadcast_rows_run_in_parallel_each_on_its_own_sram)
{
	float *a = HF(0), *o = HF(8192);
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_MAP, TNPU_VEC_SIGMOID, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	for (int i = 0; i < 1024; i++)
		a[i] = (float)i / 100.0f - 5.0f;
	tcb_dma(&cb, true, 0, host, 0, 0, 0, 0, 0, 0, 0, 2048, 1, 1);
	tcb_dma(&cb, true, 0, host + 2048, 0, 0, 1, 0, 0, 0, 0, 2048, 1, 1);
	v.row = 0xFF;
	dims2(&v, 1, 512, 4);
	v.d_off = 4096;
	v.scale = fbits(1.0f);
	emit(&v);
	get(0, 4096, 8192, 2048);
	get(1, 4096, 8192 + 2048, 2048);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 1024; i++)
		cr_assert_eq(fbits(o[i]), fbits(tnpu_vec_eval(TNPU_VEC_SIGMOID, a[i])), "i %d", i);
	/* each row busy CYC_VEC + 512*4/64 cycles, both rows at once */
	cr_assert_eq(res.row_busy[0], TNPU_CYC_VEC + 512 * TNPU_VEC_FN_COST / TNPU_VEC_LANES);
	cr_assert_eq(res.row_busy[1], res.row_busy[0]);
	cr_assert_eq(res.counters[TNPU_CNT_VEC_OPS], 1024);
	cr_assert_eq(res.counters[TNPU_CNT_COMPUTE_CYCLES], res.row_busy[0]);
}

/* ---- malformed commands: an error, never a crash or unbounded work -------------------------- */

static uint32_t run_one(const struct tnpu_cmd_vec *v)
{
	emit(v);
	return run();
}

Test(vec, malformed_commands_fail_with_their_codes)
{
	struct tnpu_cmd_vec v;

	v = vcmd(7, 0, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 8);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_SIGMOID, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);	/* fp32 function on int8 */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 10);
	v = vcmd(TNPU_VEC_MAP, 9, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);	/* unassigned func */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_ADD, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[1] = 0;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	v = vcmd(TNPU_VEC_BINARY, TNPU_VEC_ADD, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.reserved = 1;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 124);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);	/* red_len 0 */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_REQUANT, TNPU_DTYPE_INT32, TNPU_DTYPE_INT8);
	v.shift = 63;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_AVG, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);	/* int8 avg needs COUNT_PAD */
	v.win.pool = (struct tnpu_vec_pool_win){ 2, 2, 1, 1, 0, 0, 4, 4 };
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.row = 2;	/* the small geometry has 2 rows */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	/* shape overflow: 2^32 outputs of one broadcast element, and a huge reduction */
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[0] = v.n[1] = 65536;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_SHAPE);
	v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = 1 << 20;
	v.win.red.red_len = 1 << 10;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_SHAPE);
	v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_MAX, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);	/* pad >= window */
	v.win.pool = (struct tnpu_vec_pool_win){ 2, 2, 1, 1, 2, 0, 4, 4 };
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_SHAPE);
	v = vcmd(TNPU_VEC_POOL, TNPU_VEC_POOL_MAX, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);	/* windows past the input */
	v.n[1] = 5;
	v.win.pool = (struct tnpu_vec_pool_win){ 2, 2, 1, 1, 0, 0, 4, 4 };
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_SHAPE);
	/* ranges and alignment */
	v = vcmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	v.n[3] = 16;
	v.a_st[3] = 4;
	v.d_st[3] = -4;	/* negative stride from 0 leaves the half */
	cr_assert_eq(run_one(&v), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_info, 0);
	v.d_st[3] = 4;
	v.a_off = 32 * 1024 - 8;
	cr_assert_eq(run_one(&v), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_info, 1);
	v.a_off = 2;
	cr_assert_eq(run_one(&v), TNPU_ERR_ALIGN);
	/* LUT: bad table */
	{
		struct tnpu_cmd_vec_lut l;

		memset(&l, 0, sizeof(l));
		l.hdr.opcode = TNPU_CMD_VEC_LUT;
		l.hdr.size = sizeof(l);
		l.table = 4;
		tcb_raw(&cb, &l, sizeof(l));
		cr_assert_eq(run(), TNPU_ERR_VEC_DESC);
	}
}

/* The biggest legal command (2^26 element-taps) is bounded work and the watchdog refuses it first
 * when it would overrun. */
Test(vec, watchdog_refuses_a_command_before_doing_its_work)
{
	struct tnpu_config c2 = cfg;
	struct tsim s2;
	struct tnpu_result r2;
	struct tcb cb2;
	struct tnpu_cmd_vec v = vcmd(TNPU_VEC_REDUCE, TNPU_VEC_RED_SUM, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	c2.watchdog_cycles = 10000;
	cr_assert_eq(tsim_init(&s2, &c2, 1 << 20), 0);
	tcb_init(&cb2);
	v.n[3] = 1 << 16;
	v.win.red.red_len = 1 << 10;
	tcb_raw(&cb2, &v, sizeof(v));
	tsim_run(&s2, &cb2, 0, &r2);
	cr_assert_eq(r2.error, TNPU_ERR_WATCHDOG);
	tcb_free(&cb2);
	tsim_fini(&s2);
}

/* ---- SFU residual operand (CAP_FEATURES bit 16) ----------------------------------------------- */

/* C = A x B (2x4 x 4x2, fp32) + bias + R, then ReLU; through SFU APPLY, the residual record in the
 * register-file entry after the SFU record. */
Test(vec, sfu_residual_adds_a_second_operand_before_the_activation)
{
	float *a = HF(0), *b = HF(256), *bias = HF(512), *r = HF(768), *out = HF(4096);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops[5] = {
		t_opnd(0, 0, 0, 16, 2, 4, TNPU_DTYPE_FP32, 0),
		t_opnd(256, 0, 0, 8, 4, 2, TNPU_DTYPE_FP32, 0),
		t_opnd(1024, 0, 0, 8, 2, 2, TNPU_DTYPE_FP32, 0),
		{ 0 },
		t_opnd(768, 0, 0, 8, 2, 2, TNPU_DTYPE_FP32, 0),
	};
	struct tnpu_sfu_param sp = { .bias_addr = 512, .ops = TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RESIDUAL | TNPU_SFU_OP_RELU,
				     .out_dtype = TNPU_DTYPE_FP32 };
	struct tpkt p;
	uint64_t sfu_plain;

	memcpy(&ops[3], &sp, 32);
	for (int i = 0; i < 8; i++) {
		a[i] = (float)i - 3.0f;
		b[i] = 0.5f * (float)(i % 3) - 0.25f;
	}
	bias[0] = 1.0f;
	bias[1] = -2.0f;
	r[0] = 10.0f;
	r[1] = -30.0f;
	r[2] = 0.125f;
	r[3] = 3.0f;
	put(0, 0, 1024);
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 5, .loop_end = 2, .repeat = 1 }, ins,
		    ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	get(0, 1024, 4096, 16);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			float x = 0;

			for (int k = 0; k < 4; k++)
				x += a[i * 4 + k] * b[k * 2 + j];
			x = (x + bias[j]) + r[i * 2 + j];
			x = x < 0 ? 0 : x;
			cr_assert_float_eq(out[i * 2 + j], x, 1e-6f, "(%d,%d)", i, j);
		}
	sfu_plain = res.row_busy[0];
	/* a residual record of the wrong shape is ACC_SHAPE; the record at window index 15 has no
	 * successor: SFU_PARAM */
	ops[4].rows = 1;
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 5, .loop_end = 2, .repeat = 1 }, ins,
		    ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	cr_assert_eq(run(), TNPU_ERR_ACC_SHAPE);
	(void)sfu_plain;
}

/* Random VEC commands (mostly well-formed for their op, with edge and huge sizes, strides and offsets,
 * and one random byte mutated in a tenth of them): every one either completes or stops with an error
 * code; never a crash, a hang or an out-of-range access (the sanitizer builds run this too). */
static uint32_t pick(uint64_t *seed, uint32_t small)
{
	static const uint32_t dims[] = { 1, 2, 3, 7, 64, 1000, 65536, 0, 0xFFFFFFFFu };

	return trng(seed) % 4 ? (uint32_t)(1 + trng(seed) % small) : dims[trng(seed) % 9];
}

static int32_t pick_st(uint64_t *seed, unsigned e)
{
	static const int32_t strides[] = { 0, 1, 4, -4, 64, 4096, -32768, 0x7FFFFFFF, (int32_t)0x80000000 };

	return trng(seed) % 4 ? (int32_t)(e * (trng(seed) % 12)) : strides[trng(seed) % 9];
}

Test(vec, random_commands_complete_or_fail_cleanly)
{
	static const uint8_t map_fn[] = { 0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 };
	uint64_t seed = 0x5eed;
	unsigned count[64] = { 0 };

	for (int it = 0; it < 3000; it++) {
		struct tnpu_cmd_vec v;
		uint8_t *raw = (uint8_t *)&v;
		uint8_t dt = (uint8_t)(trng(&seed) % 3);
		unsigned e;

		memset(&v, 0, sizeof(v));
		v.hdr.opcode = TNPU_CMD_VEC;
		v.hdr.size = sizeof(v);
		v.op = (uint8_t)(trng(&seed) % 4);
		v.in_dtype = v.out_dtype = dt;
		switch (v.op) {
		case TNPU_VEC_MAP:
			v.func = map_fn[trng(&seed) % sizeof(map_fn)];
			if (v.func >= 16 || v.func == TNPU_VEC_QUANT)
				v.in_dtype = TNPU_DTYPE_FP32;
			if (v.func == TNPU_VEC_LUT || v.func == TNPU_VEC_DEQUANT)
				v.in_dtype = TNPU_DTYPE_INT8;
			if (v.func == TNPU_VEC_REQUANT && v.in_dtype == TNPU_DTYPE_FP32)
				v.in_dtype = TNPU_DTYPE_INT32;
			v.out_dtype = v.func >= 16 || v.func == TNPU_VEC_DEQUANT ? TNPU_DTYPE_FP32
				      : (v.func >= TNPU_VEC_REQUANT || v.func == TNPU_VEC_LUT) ? TNPU_DTYPE_INT8
											 : v.in_dtype;
			if (v.func >= 16 || v.func == TNPU_VEC_QUANT || v.func == TNPU_VEC_DEQUANT)
				v.scale = 0x3F800000u;
			if (v.func == TNPU_VEC_REQUANT) {
				v.scale = (uint32_t)trng(&seed);
				v.shift = (uint8_t)(trng(&seed) % 63);
				if (trng(&seed) % 2) {
					v.vflags = TNPU_VEC_F_PER_CHANNEL;
					v.scale = v.shift = 0;
					v.chan_dim = (uint8_t)(trng(&seed) % 4);
					v.b_off = (uint32_t)(8 * (trng(&seed) % 100));
				}
			}
			if (v.func == TNPU_VEC_LUT)
				v.lut = (uint8_t)(trng(&seed) % 4);
			if (v.func == TNPU_VEC_CLAMP && v.in_dtype == TNPU_DTYPE_INT8) {
				v.lo = (uint32_t)-5;
				v.hi = 9;
			}
			break;
		case TNPU_VEC_BINARY:
			v.func = (uint8_t)(trng(&seed) % 5);
			if (dt == TNPU_DTYPE_INT8 && trng(&seed) % 2) {
				v.out_dtype = TNPU_DTYPE_INT32;
			} else if (dt == TNPU_DTYPE_INT8) {
				v.scale = (uint32_t)trng(&seed);
				v.shift = (uint8_t)(trng(&seed) % 63);
			}
			v.vflags = (uint8_t)(trng(&seed) % 2);
			break;
		case TNPU_VEC_POOL:
			v.func = (uint8_t)(trng(&seed) % 2);
			v.in_dtype = v.out_dtype = dt == TNPU_DTYPE_INT32 ? TNPU_DTYPE_INT8 : dt;
			if (v.func == TNPU_VEC_POOL_AVG && v.in_dtype == TNPU_DTYPE_INT8) {
				v.vflags = TNPU_VEC_F_COUNT_PAD;
				v.scale = (uint32_t)trng(&seed);
				v.shift = (uint8_t)(trng(&seed) % 63);
			}
			v.win.pool = (struct tnpu_vec_pool_win){ (uint16_t)pick(&seed, 4), (uint16_t)pick(&seed, 4),
								 (uint8_t)(1 + trng(&seed) % 3), (uint8_t)(1 + trng(&seed) % 3),
								 (uint8_t)(trng(&seed) % 3), (uint8_t)(trng(&seed) % 3),
								 (uint16_t)pick(&seed, 20), (uint16_t)pick(&seed, 20) };
			break;
		default:
			v.func = (uint8_t)(trng(&seed) % 3);
			v.out_dtype = v.func == TNPU_VEC_RED_MAX ? dt : (dt == TNPU_DTYPE_FP32 ? dt : TNPU_DTYPE_INT32);
			if (dt == TNPU_DTYPE_FP32 && v.func != TNPU_VEC_RED_MAX)
				v.scale = 0x3F800000u;
			v.win.red.red_len = pick(&seed, 30);
			v.win.red.red_st = pick_st(&seed, 4);
			break;
		}
		e = v.in_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
		v.row = trng(&seed) % 4 ? (uint8_t)(trng(&seed) % 2) : 0xFF;
		for (int k = 0; k < 4; k++) {
			v.n[k] = pick(&seed, k == 3 ? 40 : 6);
			v.d_st[k] = pick_st(&seed, v.out_dtype == TNPU_DTYPE_INT8 ? 1 : 4);
			v.a_st[k] = pick_st(&seed, e);
			if (v.op == TNPU_VEC_BINARY)
				v.b_st[k] = pick_st(&seed, e);
		}
		v.d_off = (uint32_t)(4 * (trng(&seed) % 6000));
		v.a_off = (uint32_t)(4 * (trng(&seed) % 6000));
		if (v.op == TNPU_VEC_BINARY)
			v.b_off = (uint32_t)(4 * (trng(&seed) % 6000));
		if (trng(&seed) % 10 == 0)
			raw[8 + trng(&seed) % 120] = (uint8_t)trng(&seed);
		emit(&v);
		run();
		cr_assert(res.error == 0 || res.error == TNPU_ERR_VEC_DESC || res.error == TNPU_ERR_VEC_SHAPE ||
				  res.error == TNPU_ERR_SRAM_RANGE || res.error == TNPU_ERR_ALIGN ||
				  res.error == TNPU_ERR_ISLAND_ACCESS ||
				  /* the host-work budget: 2^26 element-taps (VEC_SHAPE's limit) on both rows of this
				   * 8-PE array are 2^25 units of its 2^21 (cycle-model.md "Host-work budget") */
				  (res.error == TNPU_ERR_WATCHDOG && res.err_info == 1),
			  "iteration %d: %s", it, tnpu_err_name(res.error));
		count[res.error < 64 ? res.error : 63]++;
	}
	printf("# vec random commands: %u completed, %u VEC_DESC, %u VEC_SHAPE, %u SRAM_RANGE, %u ALIGN\n", count[0],
	       count[TNPU_ERR_VEC_DESC], count[TNPU_ERR_VEC_SHAPE], count[TNPU_ERR_SRAM_RANGE], count[TNPU_ERR_ALIGN]);
	cr_assert_gt(count[0], 300, "the generator reaches the data paths");
}
