/* SPDX-License-Identifier: MIT */
/* VEC BINARY QADD (ISA 2, CAP_FEATURES bit 20; Documentation/hardware/vector-units.md, "Quantised add"):
 * an int8 ADD/SUB whose operands each have their own zero point (lo, hi) and multiplier (scale, bias),
 * rounded once.  Random commands (broadcast strides, RELU, every shift) against a per-element reference
 * written here from the spec in 128-bit arithmetic with an explicit floor division; hand-computed
 * rounding ties and saturation; the cycle model of a plain BINARY; malformed commands. */
#include <stdio.h>

#include "common.h"

SMALL_SIM_SUITE(qadd, 16 << 20, 64 * 1024)

enum { A_OFF = 0, B_OFF = 8192, D_OFF = 16384, HOST_OUT = 32768 };

/* Host bytes [0, len) -> SRAM half 0 of every row; SRAM [off, +len) of row 0 -> host hoff. */
static void put(uint32_t len)
{
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, len, 1, 1);
}

static void get(uint32_t off, uint32_t hoff, uint32_t len)
{
	tcb_dma(&cb, false, 0, host + hoff, 0, 0, 0, 0, off, 0, 0, len, 1, 1);
}

static struct tnpu_cmd_vec qcmd(uint8_t fn)
{
	struct tnpu_cmd_vec v;

	memset(&v, 0, sizeof(v));
	v.hdr.opcode = TNPU_CMD_VEC;
	v.hdr.size = sizeof(v);
	v.op = TNPU_VEC_BINARY;
	v.func = fn;
	v.in_dtype = v.out_dtype = TNPU_DTYPE_INT8;
	v.vflags = TNPU_VEC_F_QADD;
	for (int k = 0; k < 4; k++)
		v.n[k] = 1;
	return v;
}

/* n packed int8 elements in dim 3: A at A_OFF, B at B_OFF, out at D_OFF. */
static void packed(struct tnpu_cmd_vec *v, uint32_t n)
{
	v->n[3] = n;
	v->a_st[3] = v->b_st[3] = v->d_st[3] = 1;
	v->a_off = A_OFF;
	v->b_off = B_OFF;
	v->d_off = D_OFF;
}

static uint32_t run_one(const struct tnpu_cmd_vec *v)
{
	tcb_raw(&cb, v, sizeof(*v));
	return run();
}

/* The spec's definition of one element: exact r, RELU, round half up by a floor division, zero point,
 * saturation. */
static int8_t ref(const struct tnpu_cmd_vec *v, int8_t a, int8_t b)
{
	__int128 ra = (__int128)(a - (int32_t)v->lo) * (int32_t)v->scale;
	__int128 rb = (__int128)(b - (int32_t)v->hi) * (int32_t)v->bias;
	__int128 r = v->func == TNPU_VEC_SUB ? ra - rb : ra + rb, d = (__int128)1 << v->shift, q, y;

	if ((v->vflags & TNPU_VEC_F_RELU) && r < 0)
		r = 0;
	if (v->shift)
		r += d / 2;
	q = r / d;
	if (r % d != 0 && r < 0)
		q -= 1;	/* floor, not C's truncation */
	y = q + v->zero_point;
	return (int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));
}

/* ---- random commands against the per-element definition ------------------------------------ */

static int32_t rnd_mult(uint64_t *seed)
{
	switch (trng(seed) % 6) {
	case 0: return (int32_t)(uint32_t)trng(seed);				/* anything, sign included */
	case 1: return trng(seed) % 2 ? INT32_MAX : INT32_MIN;
	case 2: return (int32_t)(trng(seed) % 5) - 2;				/* tiny, 0, negative */
	default: return (int32_t)((1u << 30) + (uint32_t)(trng(seed) % (1u << 30)));	/* a ~31-bit scale */
	}
}

Test(qadd, random_commands_match_the_per_element_definition)
{
	uint64_t seed = 0x9add;
	unsigned inner = 0, ties = 0;

	for (int it = 0; it < 400; it++) {
		struct tnpu_cmd_vec v = qcmd(trng(&seed) % 2 ? TNPU_VEC_ADD : TNPU_VEC_SUB);
		int8_t *a = (int8_t *)H(A_OFF), *b = (int8_t *)H(B_OFF), *o = (int8_t *)H(HOST_OUT);
		uint32_t n[4], idx[4], out = 0;
		int32_t ast[4], bst[4];

		/* dims 1..4, 1..3, 1..5, 1..40; A and B packed in their own dim order, either one broadcast
		 * (stride 0) along random dims; the destination packed */
		n[0] = 1 + trng(&seed) % 4, n[1] = 1 + trng(&seed) % 3, n[2] = 1 + trng(&seed) % 5;
		n[3] = 1 + trng(&seed) % 40;
		for (int k = 3, sa = 1, sb = 1; k >= 0; k--) {
			bool bca = trng(&seed) % 5 == 0, bcb = trng(&seed) % 3 == 0;

			ast[k] = bca ? 0 : sa;
			bst[k] = bcb ? 0 : sb;
			sa *= bca ? 1 : (int)n[k];
			sb *= bcb ? 1 : (int)n[k];
		}
		for (int k = 3, sd = 1; k >= 0; k--) {
			v.n[k] = n[k];
			v.d_st[k] = sd;
			v.a_st[k] = ast[k];
			v.b_st[k] = bst[k];
			sd *= (int)n[k];
		}
		v.a_off = A_OFF;
		v.b_off = B_OFF;
		v.d_off = D_OFF;
		v.lo = (uint32_t)((int32_t)(trng(&seed) % 256) - 128);
		v.hi = (uint32_t)((int32_t)(trng(&seed) % 256) - 128);
		v.scale = (uint32_t)rnd_mult(&seed);
		v.bias = (uint32_t)rnd_mult(&seed);
		v.shift = (uint8_t)(trng(&seed) % 4 ? 24 + trng(&seed) % 16 : trng(&seed) % 63);
		v.zero_point = (int16_t)((int32_t)(trng(&seed) % 256) - 128);
		v.vflags |= trng(&seed) % 3 == 0 ? TNPU_VEC_F_RELU : 0;
		for (int i = 0; i < 8192; i++) {
			a[i] = (int8_t)trng(&seed);
			b[i] = (int8_t)trng(&seed);
		}
		/* small operands now and then: exact ties (r = odd multiple of 2^(s-1)) happen */
		if (it % 4 == 0) {
			v.shift = (uint8_t)(1 + trng(&seed) % 31);
			v.scale = 1u << (v.shift - 1);
			v.bias = trng(&seed) % 2 ? v.scale : 0;
		}
		put(16384);
		tcb_raw(&cb, &v, sizeof(v));
		get(D_OFF, HOST_OUT, 4 * 3 * 5 * 40);
		cr_assert_eq(run(), 0, "iteration %d: %s (err_info %u)", it, tnpu_err_name(res.error), res.err_info);
		for (idx[0] = 0; idx[0] < n[0]; idx[0]++)
			for (idx[1] = 0; idx[1] < n[1]; idx[1]++)
				for (idx[2] = 0; idx[2] < n[2]; idx[2]++)
					for (idx[3] = 0; idx[3] < n[3]; idx[3]++, out++) {
						int64_t pa = 0, pb = 0;
						int8_t want;

						for (int k = 0; k < 4; k++) {
							pa += (int64_t)idx[k] * ast[k];
							pb += (int64_t)idx[k] * bst[k];
						}
						want = ref(&v, a[pa], b[pb]);
						cr_assert_eq(o[out], want, "iteration %d element %u: %d, expected %d", it, out,
							     o[out], want);
						inner += want > -128 && want < 127;
						ties += v.shift && (((int64_t)(a[pa] - (int32_t)v.lo) * (int32_t)v.scale +
								     (int64_t)(b[pb] - (int32_t)v.hi) * (int32_t)v.bias) &
								    (((int64_t)1 << v.shift) - 1)) == (int64_t)1 << (v.shift - 1);
					}
	}
	printf("# qadd random: %u unsaturated outputs, %u ties\n", inner, ties);
	cr_assert_gt(inner, 5000, "the sweep reaches unsaturated outputs");
	cr_assert_gt(ties, 500, "the sweep reaches rounding ties");
}

/* ---- hand-computed cases -------------------------------------------------------------------- */

/* Ma = Mb = 2^(s-1) with s = 1: y = round_half_up((A' + B') / 2) — once.  Rounding each rescaled operand
 * first (the six-command path) would give 1 + 1 = 2 for A' = B' = 1. */
Test(qadd, rounds_half_up_once)
{
	static const int8_t A[] = { 1, -1, 3, -3, 1, 0, -2, 5 }, B[] = { 0, 0, 0, 0, 1, -1, -1, -4 };
	static const int8_t want[] = { 1, 0, 2, -1, 1, 0, -1, 1 };	/* 0.5 -0.5 1.5 -1.5 1 -0.5 -1.5 0.5 */
	struct tnpu_cmd_vec v = qcmd(TNPU_VEC_ADD);
	int8_t *o = (int8_t *)H(HOST_OUT);

	memcpy(H(A_OFF), A, 8);
	memcpy(H(B_OFF), B, 8);
	put(B_OFF + 64);
	packed(&v, 8);
	v.scale = v.bias = 1;
	v.shift = 1;
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 8);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 8; i++)
		cr_assert_eq(o[i], want[i], "element %d: %d, expected %d", i, o[i], want[i]);
}

/* Zero points, SUB, saturation at both ends, extreme multipliers, shift 0 and 62, RELU. */
Test(qadd, zero_points_saturation_and_relu)
{
	struct tnpu_cmd_vec v = qcmd(TNPU_VEC_SUB);
	int8_t *a = (int8_t *)H(A_OFF), *b = (int8_t *)H(B_OFF), *o = (int8_t *)H(HOST_OUT);

	a[0] = 10, b[0] = 10;		/* (10-3)*3 - (10+2)*2 = 21 - 24 = -3, + zp 4 = 1 */
	a[1] = 127, b[1] = -128;	/* 124*3 - (-126)*2 = 624 -> 127 */
	a[2] = -128, b[2] = 127;	/* -131*3 - 129*2 = -651 -> -128 */
	a[3] = 3, b[3] = -2;		/* 0 - 0 = 0 -> zp */
	put(B_OFF + 64);
	packed(&v, 4);
	v.lo = 3;
	v.hi = (uint32_t)-2;
	v.scale = 3;
	v.bias = 2;
	v.zero_point = 4;
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 4);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(o[0], 1);
	cr_assert_eq(o[1], 127);
	cr_assert_eq(o[2], -128);
	cr_assert_eq(o[3], 4);
	/* RELU clamps r (before the zero point): -3 -> 0 -> zp; 624 stays */
	v.vflags |= TNPU_VEC_F_RELU;
	put(B_OFF + 64);	/* a new job: the storage units start over */
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 4);
	cr_assert_eq(run(), 0);
	cr_assert_eq(o[0], 4);
	cr_assert_eq(o[1], 127);
	cr_assert_eq(o[2], 4);
	/* INT32_MIN multipliers: A' = -128, B' = -1, r = 2^38 + 2^31 (exact in 64 bits) */
	v = qcmd(TNPU_VEC_ADD);
	packed(&v, 1);
	a[0] = -128, b[0] = -128;
	v.lo = 0;
	v.hi = (uint32_t)-127;	/* B' = -1 */
	v.scale = v.bias = 0x80000000u;
	v.shift = 62;
	put(B_OFF + 64);
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(o[0], 0);	/* (r + 2^61) >> 62 = 0 */
	v.shift = 39;
	put(B_OFF + 64);
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(o[0], 1);	/* (r + 2^38) >> 39 = (2^39 + 2^31) >> 39 = 1 */
	/* shift 0: no rounding term, y = r + zp */
	v.scale = 1;
	v.bias = (uint32_t)-1;
	v.lo = (uint32_t)-100;
	v.hi = 0;
	v.shift = 0;
	v.zero_point = -1;
	a[0] = -90, b[0] = 20;	/* 10 - 20 = -10, -1 = -11 */
	put(B_OFF + 64);
	tcb_raw(&cb, &v, sizeof(v));
	get(D_OFF, HOST_OUT, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(o[0], -11);
}

/* In place (the destination is A) and on every row of the island at once, each on its own SRAM. */
Test(qadd, in_place_on_every_row)
{
	struct tnpu_cmd_vec v = qcmd(TNPU_VEC_ADD);
	int8_t *a = (int8_t *)H(A_OFF), *b = (int8_t *)H(B_OFF), *o = (int8_t *)H(HOST_OUT);

	for (int i = 0; i < 100; i++) {
		a[i] = (int8_t)(i * 5 - 250);
		b[i] = (int8_t)(77 - i * 3);
	}
	put(B_OFF + 128);
	packed(&v, 100);
	v.d_off = A_OFF;
	v.row = 0xFF;
	v.scale = 1u << 29;	/* 0.5 at s = 30 */
	v.bias = 3u << 28;	/* 0.75 */
	v.shift = 30;
	v.lo = 7;
	v.hi = (uint32_t)-9;
	v.zero_point = -20;
	tcb_raw(&cb, &v, sizeof(v));
	get(A_OFF, HOST_OUT, 100);
	tcb_dma(&cb, false, 0, host + HOST_OUT + 128, 0, 0, 1, 0, A_OFF, 0, 0, 100, 1, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 100; i++) {
		int8_t want = ref(&v, a[i], b[i]);

		cr_assert_eq(o[i], want, "row 0 element %d", i);
		cr_assert_eq(o[128 + i], want, "row 1 element %d", i);
	}
}

/* ---- cycle model: exactly a BINARY's ---------------------------------------------------------- */

Test(qadd, costs_what_a_plain_binary_costs)
{
	struct tnpu_cmd_vec v = qcmd(TNPU_VEC_ADD), p;
	uint64_t busy, ops, vcyc, comp;

	put(B_OFF + 4096);
	packed(&v, 1000);
	v.scale = 12345;
	v.bias = (uint32_t)-777;
	v.shift = 20;
	p = v;
	p.vflags = 0;
	p.bias = 0;
	cr_assert_eq(run_one(&p), 0);
	busy = res.row_busy[0], ops = res.counters[TNPU_CNT_VEC_OPS], vcyc = res.counters[TNPU_CNT_VEC_CYCLES];
	comp = res.counters[TNPU_CNT_COMPUTE_CYCLES];
	cr_assert_eq(busy, TNPU_CYC_VEC + (1000 + TNPU_VEC_LANES - 1) / TNPU_VEC_LANES);
	cr_assert_eq(run_one(&v), 0);
	cr_assert_eq(res.row_busy[0], busy);
	cr_assert_eq(res.counters[TNPU_CNT_VEC_OPS], ops);
	cr_assert_eq(ops, 1000);
	cr_assert_eq(res.counters[TNPU_CNT_VEC_CYCLES], vcyc);
	cr_assert_eq(res.counters[TNPU_CNT_COMPUTE_CYCLES], comp);
}

/* ---- malformed commands: VEC_DESC at the first bad field ------------------------------------ */

Test(qadd, malformed_commands_fail_at_their_field)
{
	struct tnpu_cmd_vec v;
	static const uint8_t bad_fn[] = { TNPU_VEC_MUL, TNPU_VEC_MAX, TNPU_VEC_MIN };

	for (unsigned i = 0; i < sizeof(bad_fn); i++) {	/* only ADD and SUB */
		v = qcmd(bad_fn[i]);
		cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
		cr_assert_eq(res.err_info, 14);
	}
	v = qcmd(TNPU_VEC_ADD);	/* INT8 -> INT32 */
	v.out_dtype = TNPU_DTYPE_INT32;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v = qcmd(TNPU_VEC_ADD);	/* INT32, FP32 */
	v.in_dtype = v.out_dtype = TNPU_DTYPE_INT32;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v = qcmd(TNPU_VEC_ADD);	/* zero points outside int8 */
	v.lo = 128;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 116);
	v.lo = (uint32_t)-128;
	v.hi = (uint32_t)-129;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 120);
	v.hi = 127;
	v.zero_point = 128;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 114);
	v.zero_point = 0;
	v.shift = 63;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 112);
	v.shift = 62;
	v.reserved = 1;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 124);
	v.reserved = 0;
	v.vflags |= 1u << 4;	/* still reserved */
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v.vflags = TNPU_VEC_F_QADD | TNPU_VEC_F_RELU;	/* all of the above fixed: it runs */
	v.scale = v.bias = 0xFFFFFFFFu;
	cr_assert_eq(run_one(&v), 0, "%s at %u", tnpu_err_name(res.error), res.err_info);
	/* without QADD the fields keep their old rules: bias and lo/hi must be 0 */
	v.vflags = 0;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 108);
	v.bias = 0;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 116);
	/* the bit on other ops is reserved there, rejected at vflags before any other field */
	v = qcmd(0);
	v.op = TNPU_VEC_MAP;
	v.func = TNPU_VEC_REQUANT;
	v.in_dtype = TNPU_DTYPE_INT32;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v.op = TNPU_VEC_POOL;
	v.func = TNPU_VEC_POOL_MAX;
	v.in_dtype = TNPU_DTYPE_INT8;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	v.op = TNPU_VEC_REDUCE;
	v.func = TNPU_VEC_RED_SUM;
	v.out_dtype = TNPU_DTYPE_INT32;
	v.win.red.red_len = 1;
	cr_assert_eq(run_one(&v), TNPU_ERR_VEC_DESC);
	cr_assert_eq(res.err_info, 14);
	/* ranges: B outside the half */
	v = qcmd(TNPU_VEC_ADD);
	packed(&v, 64);
	v.b_off = 32 * 1024 - 32;
	cr_assert_eq(run_one(&v), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_info, 2);
}

/* Random QADD commands with random sizes, strides and offsets and one mutated byte in a tenth: each
 * completes or stops with an error code (the sanitizer builds run this too). */
Test(qadd, random_hostile_commands_complete_or_fail_cleanly)
{
	static const int32_t strides[] = { 0, 1, -1, 3, 64, 4096, -32768, 0x7FFFFFFF, (int32_t)0x80000000 };
	uint64_t seed = 0xbadadd;
	unsigned done = 0;

	for (int it = 0; it < 1500; it++) {
		struct tnpu_cmd_vec v = qcmd(trng(&seed) % 2 ? TNPU_VEC_ADD : TNPU_VEC_SUB);
		uint8_t *raw = (uint8_t *)&v;

		for (int k = 0; k < 4; k++) {
			v.n[k] = trng(&seed) % 4 ? 1 + (uint32_t)(trng(&seed) % (k == 3 ? 64 : 5))
						 : (uint32_t)trng(&seed) >> (trng(&seed) % 32);
			v.a_st[k] = trng(&seed) % 4 ? (int32_t)(trng(&seed) % 9) : strides[trng(&seed) % 9];
			v.b_st[k] = trng(&seed) % 4 ? (int32_t)(trng(&seed) % 9) : strides[trng(&seed) % 9];
			v.d_st[k] = trng(&seed) % 4 ? (int32_t)(trng(&seed) % 9) : strides[trng(&seed) % 9];
		}
		v.a_off = (uint32_t)(trng(&seed) % 40000);
		v.b_off = (uint32_t)(trng(&seed) % 40000);
		v.d_off = (uint32_t)(trng(&seed) % 40000);
		v.row = trng(&seed) % 4 ? (uint8_t)(trng(&seed) % 2) : 0xFF;
		v.scale = (uint32_t)trng(&seed);
		v.bias = (uint32_t)trng(&seed);
		v.shift = (uint8_t)(trng(&seed) % 64);
		v.lo = (uint32_t)((int32_t)(trng(&seed) % 300) - 150);
		v.hi = (uint32_t)((int32_t)(trng(&seed) % 300) - 150);
		v.zero_point = (int16_t)((int32_t)(trng(&seed) % 300) - 150);
		v.vflags |= (uint8_t)(trng(&seed) % 2);
		if (trng(&seed) % 10 == 0)
			raw[8 + trng(&seed) % 120] = (uint8_t)trng(&seed);
		tcb_raw(&cb, &v, sizeof(v));
		run();
		cr_assert(res.error == 0 || res.error == TNPU_ERR_VEC_DESC || res.error == TNPU_ERR_VEC_SHAPE ||
				  res.error == TNPU_ERR_SRAM_RANGE || res.error == TNPU_ERR_ALIGN ||
				  res.error == TNPU_ERR_ISLAND_ACCESS,
			  "iteration %d: %s", it, tnpu_err_name(res.error));
		done += res.error == 0;
	}
	printf("# qadd hostile commands: %u completed\n", done);
	cr_assert_gt(done, 50, "the generator reaches the data path");
}
