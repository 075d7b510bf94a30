/* SPDX-License-Identifier: MIT */
/*
 * DMA_DEQ, the weight-decompressing load (commands.md "DMA_DEQ", CAP_FEATURES bit 23, issue #29):
 * every tile is compared bit for bit with a plain-C dequantiser written here from the spec (double
 * arithmetic for the one rounding, its own binary16 decoding and bf16 rounding), then the cycle charge,
 * the byte count, every error case and the hazard records.
 */
#include "common.h"

SMALL_SIM_SUITE(deq, 16 << 20, 4 << 20)

/* ---- the reference (commands.md "DMA_DEQ" Definition) ---------------------------------------- */

static double ref_f16(uint16_t h)
{
	int sign = h >> 15, ex = (h >> 10) & 31, m = h & 1023;
	double v;

	if (ex == 31)
		v = m ? NAN : INFINITY;
	else if (ex == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, ex - 25);
	return sign ? -v : v;
}

/* fp32 -> bf16 by comparing the two neighbours exactly (ties to the even mantissa). */
static uint16_t ref_bf16(float f)
{
	uint32_t u, lo_u;
	float lo;
	double dlo, dhi, x = f;

	memcpy(&u, &f, 4);
	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	lo_u = u & 0xFFFF0000u;		/* towards zero */
	memcpy(&lo, &lo_u, 4);
	if ((double)lo == x)
		return (uint16_t)(lo_u >> 16);
	dlo = fabs(x - (double)lo);
	/* the next bf16 away from zero; past the largest finite one it is 2^128 (rounds to infinity) */
	if ((lo_u & 0x7FFFFFFFu) == 0x7F7F0000u)
		dhi = fabs(fabs(x) - ldexp(1.0, 128));
	else {
		uint32_t hi_u = lo_u + 0x10000u;
		float hi;

		memcpy(&hi, &hi_u, 4);
		dhi = fabs(x - (double)hi);
	}
	if (dlo < dhi || (dlo == dhi && !((lo_u >> 16) & 1)))
		return (uint16_t)(lo_u >> 16);
	return (uint16_t)((lo_u + 0x10000u) >> 16);
}

struct qt {			/* one DMA_DEQ case */
	unsigned fmt, block, kn, f16, bf16, row, half;
	uint32_t k0, kt, nt, src_pitch, scale_pitch, zp_pitch, off, pitch;
	uint64_t src, scl, zp;	/* VAs (zp 0: default) */
};

static float ref_elem(const struct qt *q, uint32_t n, uint64_t k)
{
	const uint8_t *c = tsim_ptr(&s, q->src + (uint64_t)n * q->src_pitch);
	uint64_t b = q->block ? k / q->block : 0;
	int code, z;
	double sc;

	if (q->fmt == TNPU_DEQ_FMT_U4)
		code = (k & 1) ? c[k / 2] >> 4 : c[k / 2] & 15;
	else
		code = q->fmt == TNPU_DEQ_FMT_S8 ? (int8_t)c[k] : c[k];
	if (q->f16) {
		const uint8_t *p = (const uint8_t *)tsim_ptr(&s, q->scl + (uint64_t)n * q->scale_pitch) + 2 * b;

		sc = ref_f16((uint16_t)(p[0] | p[1] << 8));
	} else {
		float f;

		memcpy(&f, (const uint8_t *)tsim_ptr(&s, q->scl + (uint64_t)n * q->scale_pitch) + 4 * b, 4);
		sc = f;
	}
	if (!q->zp) {
		z = q->fmt == TNPU_DEQ_FMT_S8 ? 0 : q->fmt == TNPU_DEQ_FMT_U8 ? 128 : 8;
	} else {
		const uint8_t *zp = tsim_ptr(&s, q->zp + (uint64_t)n * q->zp_pitch);

		if (q->fmt == TNPU_DEQ_FMT_U4)
			z = (b & 1) ? zp[b / 2] >> 4 : zp[b / 2] & 15;
		else
			z = q->fmt == TNPU_DEQ_FMT_S8 ? (int8_t)zp[b] : zp[b];
	}
	/* (code - z) * scale is exact in double (9 x 24 bits): the float conversion is the one rounding */
	return (float)((double)(code - z) * sc);
}

static struct tnpu_cmd_dma_deq cmd_of(const struct qt *q)
{
	struct tnpu_cmd_dma_deq c = {
		.hdr = { .opcode = TNPU_CMD_DMA_DEQ, .size = sizeof(c) },
		.src_va = q->src, .scale_va = q->scl, .zp_va = q->zp, .src_pitch = q->src_pitch,
		.scale_pitch = q->scale_pitch, .zp_pitch = q->zp_pitch, .k0 = q->k0, .kt = q->kt, .nt = q->nt,
		.block = q->block, .sram_off = q->off, .sram_pitch = q->pitch, .fmt = (uint8_t)q->fmt,
		.out_dtype = q->bf16 ? TNPU_DTYPE_BF16 : TNPU_DTYPE_FP32,
		.qflags = (uint8_t)((q->f16 ? TNPU_DEQ_F_SCALE_F16 : 0) | (q->kn ? TNPU_DEQ_F_KN : 0)),
		.row = (uint8_t)q->row, .half = (uint8_t)q->half,
	};

	return c;
}

static uint64_t host_next;	/* bump allocator in the 4 MiB host buffer */

static uint64_t halloc(uint64_t bytes)
{
	uint64_t va = host + host_next;

	host_next += (bytes + 63) & ~63ull;
	cr_assert_leq(host_next, 4u << 20);
	return va;
}

static void fill_random(uint64_t va, uint64_t bytes, uint64_t *rs)
{
	uint8_t *p = tsim_ptr(&s, va);

	for (uint64_t i = 0; i < bytes; i++)
		p[i] = (uint8_t)trng(rs);
}

/* Scales: random normal values of both signs over a few binades (and the caller adds specials). */
static void fill_scales(const struct qt *q, uint64_t va, uint64_t count, uint64_t *rs)
{
	uint8_t *p = tsim_ptr(&s, va);

	for (uint64_t i = 0; i < count; i++) {
		uint64_t r = trng(rs);

		if (q->f16) {
			uint16_t h = (uint16_t)(((r >> 8) & 1) << 15 | (uint16_t)(8 + (r >> 9) % 14) << 10 | (r >> 20) % 1024);

			memcpy(p + 2 * i, &h, 2);
		} else {
			float f = (float)ldexp((double)(r >> 40) / (1 << 24) + 0.5, (int)((r >> 4) % 16) - 12);

			if (r & 1)
				f = -f;
			memcpy(p + 4 * i, &f, 4);
		}
	}
}

/* Allocate and fill the three streams of q for columns of `klen` codes (a whole packed column). */
static void make_streams(struct qt *q, uint64_t klen, bool zp, uint64_t *rs)
{
	uint64_t nb = q->block ? (klen + q->block - 1) / q->block : 1;
	uint64_t cbytes = q->fmt == TNPU_DEQ_FMT_U4 ? (klen + 1) / 2 : klen;
	uint64_t zbytes = q->fmt == TNPU_DEQ_FMT_U4 ? (nb + 1) / 2 : nb;

	q->src_pitch = (uint32_t)cbytes;
	q->scale_pitch = (uint32_t)(nb * (q->f16 ? 2 : 4));
	q->zp_pitch = (uint32_t)zbytes;
	q->src = halloc(cbytes * q->nt);
	q->scl = halloc((uint64_t)q->scale_pitch * q->nt);
	fill_random(q->src, cbytes * q->nt, rs);
	fill_scales(q, q->scl, nb * q->nt, rs);
	q->zp = 0;
	if (zp) {
		q->zp = halloc(zbytes * q->nt);
		fill_random(q->zp, zbytes * q->nt, rs);
	}
}

/* Run q (one job: the DMA_DEQ, then a D2H of its lines from `row` to the host), compare every element. */
static void run_and_compare(const struct qt *q, unsigned row, uint64_t seed)
{
	struct tnpu_cmd_dma_deq c = cmd_of(q);
	uint32_t e = q->bf16 ? 2 : 4, lines = q->kn ? q->kt : q->nt, lb = (q->kn ? q->nt : q->kt) * e;
	uint64_t out = halloc((uint64_t)lines * lb);

	tcb_raw(&cb, &c, sizeof(c));
	tcb_dma(&cb, false, 0, out, lb, 0, (uint8_t)row, (uint8_t)q->half, q->off, q->pitch, 0, lb, lines, 1);
	run();
	ASSERT_OK(res);
	for (uint32_t n = 0; n < q->nt; n++)
		for (uint32_t j = 0; j < q->kt; j++) {
			float want = ref_elem(q, n, (uint64_t)q->k0 + j);
			const uint8_t *got = (const uint8_t *)tsim_ptr(&s, out) +
					     (q->kn ? (uint64_t)j * lb + (uint64_t)n * e : (uint64_t)n * lb + (uint64_t)j * e);

			if (q->bf16) {
				uint16_t g, w = ref_bf16(want);

				memcpy(&g, got, 2);
				cr_assert_eq(g, w, "seed %llu fmt %u block %u: column %u code %u bf16 0x%04x, want 0x%04x",
					     (unsigned long long)seed, q->fmt, q->block, n, q->k0 + j, g, w);
			} else {
				uint32_t g, w;

				memcpy(&g, got, 4);
				memcpy(&w, &want, 4);
				cr_assert(g == w || (isnan(want) && (g & 0x7FFFFFFFu) > 0x7F800000u),
					  "seed %llu fmt %u block %u kn %u: column %u code %u 0x%08x, want 0x%08x",
					  (unsigned long long)seed, q->fmt, q->block, q->kn, n, q->k0 + j, g, w);
			}
		}
}

static struct qt basic(unsigned fmt, unsigned block, uint32_t kt, uint32_t nt)
{
	struct qt q = { .fmt = fmt, .block = block, .kt = kt, .nt = nt, .pitch = kt * 4 };

	return q;
}

Test(deq, s8_per_column_with_and_without_zero_points_matches_reference)
{
	uint64_t rs = 11;

	for (int zp = 0; zp < 2; zp++) {
		struct qt q = basic(TNPU_DEQ_FMT_S8, 0, 96, 12);

		make_streams(&q, 96, zp, &rs);
		run_and_compare(&q, 0, 11);
	}
}

Test(deq, u8_per_column_default_zero_point_is_128)
{
	uint64_t rs = 12;
	struct qt q = basic(TNPU_DEQ_FMT_U8, 0, 40, 5);

	make_streams(&q, 40, false, &rs);
	memset(tsim_ptr(&s, q.src), 128, 40);	/* column 0: every code 128 - 128 = 0 */
	run_and_compare(&q, 0, 12);
}

Test(deq, u4_blocks_32_64_128_symmetric_and_with_zero_points_match_reference)
{
	static const unsigned blocks[] = { 32, 64, 128 };
	uint64_t rs = 13;

	for (unsigned i = 0; i < 3; i++)
		for (int zp = 0; zp < 2; zp++) {
			struct qt q = basic(TNPU_DEQ_FMT_U4, blocks[i], 256, 8);

			make_streams(&q, 512, zp, &rs);
			q.k0 = 128;	/* the tile is the second quarter... of a 512-code column */
			run_and_compare(&q, 0, 13);
		}
}

Test(deq, u4_odd_first_code_starts_at_the_high_nibble)
{
	uint64_t rs = 14;
	struct qt q = basic(TNPU_DEQ_FMT_U4, 32, 37, 3);

	make_streams(&q, 128, true, &rs);
	q.k0 = 31;	/* high nibble of byte 15, crosses from block 0 into block 1 */
	q.pitch = 40 * 4;
	run_and_compare(&q, 0, 14);
}

Test(deq, u4_low_nibble_is_the_first_code)
{
	/* one column, codes 0x1 then 0xF in one byte, scale 1, default zero point 8: -7, 7 */
	struct qt q = basic(TNPU_DEQ_FMT_U4, 0, 2, 1);
	float one = 1.0f, got[2];
	uint64_t out;

	q.src = halloc(1);
	q.scl = halloc(4);
	*(uint8_t *)tsim_ptr(&s, q.src) = 0xF1;
	memcpy(tsim_ptr(&s, q.scl), &one, 4);
	struct tnpu_cmd_dma_deq c = cmd_of(&q);

	out = halloc(8);
	tcb_raw(&cb, &c, sizeof(c));
	tcb_dma(&cb, false, 0, out, 8, 0, 0, 0, 0, 8, 0, 8, 1, 1);
	cr_assert_eq(run(), 0);
	memcpy(got, tsim_ptr(&s, out), 8);
	cr_assert_eq(got[0], -7.0f);
	cr_assert_eq(got[1], 7.0f);
}

Test(deq, fp16_scales_and_bf16_output_match_reference_on_special_values)
{
	uint64_t rs = 15;
	struct qt q = basic(TNPU_DEQ_FMT_S8, 16, 64, 4);
	uint16_t *sc;

	q.f16 = 1;
	q.bf16 = 1;
	q.pitch = 64 * 2;
	make_streams(&q, 64, true, &rs);
	sc = tsim_ptr(&s, q.scl);
	sc[0] = 0x0001;		/* the smallest subnormal */
	sc[1] = 0x7C00;		/* +inf */
	sc[2] = 0xFE00;		/* a negative NaN */
	sc[3] = 0x8000;		/* -0 */
	sc[4] = 0x7BFF;		/* 65504 */
	sc[5] = 0x3C01;		/* 1 + 2^-10: products land between bf16 values */
	run_and_compare(&q, 0, 15);
}

Test(deq, bf16_rounds_ties_to_even)
{
	/* scale 1 + 2^-8 (fp32): code 1 gives 1 + 2^-8, halfway between bf16 1 and 1 + 2^-7 -> 1.0 (even);
	 * code 3 gives 3 + 3*2^-8 = 0x4040C000: halfway -> 0x4041 (the even neighbour of 0x4040 + 1) */
	struct qt q = basic(TNPU_DEQ_FMT_S8, 0, 2, 1);
	float sc = 1.0f + 0x1p-8f;
	uint16_t got[2];
	uint64_t out;

	q.bf16 = 1;
	q.pitch = 4;
	q.src = halloc(2);
	q.scl = halloc(4);
	((int8_t *)tsim_ptr(&s, q.src))[0] = 1;
	((int8_t *)tsim_ptr(&s, q.src))[1] = 3;
	memcpy(tsim_ptr(&s, q.scl), &sc, 4);
	struct tnpu_cmd_dma_deq c = cmd_of(&q);

	out = halloc(4);
	tcb_raw(&cb, &c, sizeof(c));
	tcb_dma(&cb, false, 0, out, 4, 0, 0, 0, 0, 4, 0, 4, 1, 1);
	cr_assert_eq(run(), 0);
	memcpy(got, tsim_ptr(&s, out), 4);
	cr_assert_eq(got[0], 0x3F80);
	cr_assert_eq(got[1], 0x4041);
	cr_assert_eq(ref_bf16(1.0f + 0x1p-8f), 0x3F80);
	cr_assert_eq(ref_bf16(3.0f + 3 * 0x1p-8f), 0x4041);
}

Test(deq, kn_layout_and_broadcast_write_every_row)
{
	uint64_t rs = 16;
	struct qt q = basic(TNPU_DEQ_FMT_U4, 32, 64, 10);

	make_streams(&q, 64, true, &rs);
	q.kn = 1;
	q.row = TNPU_DMA_ROW_ALL;
	q.half = 1;
	q.off = 256;
	q.pitch = 48;	/* lines of 10 x 4 bytes, 8 bytes of gap */
	run_and_compare(&q, 0, 16);
	run_and_compare(&q, 1, 16);
}

Test(deq, chunk_boundary_at_2_to_the_20_codes_keeps_scales_and_zero_points)
{
	/* a tile across code 2^20 of 2^20 + 256-code columns: the model reads in aligned 2^20-code
	 * chunks; per column (block 0) the second chunk must reuse the column's one scale and zero point */
	uint64_t rs = 17;

	for (unsigned block = 0; block <= 64; block += 64) {
		struct qt q = basic(TNPU_DEQ_FMT_U4, block, 512, 2);

		host_next = 0;
		make_streams(&q, (1u << 20) + 256, true, &rs);
		q.k0 = (1u << 20) - 256;
		run_and_compare(&q, 0, 17);
	}
}

Test(deq, random_sweep_matches_reference)
{
	uint64_t seed = 0xDE0ull, rs = seed;

	for (int it = 0; it < 150; it++) {
		struct qt q = { 0 };
		uint32_t klen, e;

		host_next = 0;
		q.fmt = (unsigned)(trng(&rs) % 3);
		q.block = (trng(&rs) & 1) ? 0 : 16u << (trng(&rs) % 5);
		q.kn = trng(&rs) & 1;
		q.f16 = trng(&rs) & 1;
		q.bf16 = trng(&rs) & 1;
		q.half = trng(&rs) & 1;
		q.nt = 1 + (uint32_t)(trng(&rs) % 24);
		q.kt = 1 + (uint32_t)(trng(&rs) % 200);
		q.k0 = (uint32_t)(trng(&rs) % 300);
		klen = q.k0 + q.kt + (uint32_t)(trng(&rs) % 40);
		e = q.bf16 ? 2 : 4;
		q.pitch = (q.kn ? q.nt : q.kt) * e + e * (uint32_t)(trng(&rs) % 3);
		q.off = e * (uint32_t)(trng(&rs) % 64);
		make_streams(&q, klen, trng(&rs) & 1, &rs);
		run_and_compare(&q, 0, seed);
	}
}

/* ---- timing and counters (cycle-model.md "DMA_DEQ") ---------------------------------------- */

Test(deq, cycles_are_the_packed_bytes_over_the_dma_or_the_expansion_rate)
{
	uint64_t rs = 18;
	struct {
		unsigned fmt, block, f16;
		uint32_t kt, nt;
		bool zp;
	} cases[] = {
		{ TNPU_DEQ_FMT_U4, 32, 0, 256, 16, true },	/* 128 + 32 + 4 B/column: 21 DMA, 16 expansion */
		{ TNPU_DEQ_FMT_S8, 0, 0, 256, 16, false },	/* 256 + 4 B/column: 33 DMA, 16 expansion */
		{ TNPU_DEQ_FMT_U4, 128, 1, 64, 3, false },	/* small: setup dominates */
	};

	for (unsigned i = 0; i < 3; i++) {
		struct qt q = basic(cases[i].fmt, cases[i].block, cases[i].kt, cases[i].nt);
		uint64_t nb, cbytes, zbytes, P, want;
		struct tnpu_cmd_dma_deq c;

		q.f16 = cases[i].f16;
		host_next = 0;
		make_streams(&q, cases[i].kt, cases[i].zp, &rs);
		nb = q.block ? (q.kt + q.block - 1) / q.block : 1;
		cbytes = q.fmt == TNPU_DEQ_FMT_U4 ? (q.kt + 1) / 2 : q.kt;
		zbytes = cases[i].zp ? (q.fmt == TNPU_DEQ_FMT_U4 ? (nb + 1) / 2 : nb) : 0;
		P = q.nt * (cbytes + nb * (q.f16 ? 2 : 4) + zbytes);
		c = cmd_of(&q);
		tcb_raw(&cb, &c, sizeof(c));
		cr_assert_eq(run(), 0);
		want = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP +
		       (uint64_t)fmax(ceil((double)P / 128), ceil((double)q.kt * q.nt / 256));
		cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], P, "case %u", i);
		cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], want, "case %u", i);
		cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES], want + TNPU_CYC_JOB, "case %u", i);
	}
}

Test(deq, an_int4_tile_loads_in_a_sixth_of_the_fp32_dma_time)
{
	/* the same 1024 x 64 weight tile: fp32 by DMA_H2D (4 bytes a weight) against U4 + fp32 scales per
	 * 32 codes (0.625 bytes a weight): the load engine's busy time follows the bytes */
	uint64_t rs = 19, fp32, deq;
	struct qt q = basic(TNPU_DEQ_FMT_U4, 32, 1024, 4);
	struct tnpu_cmd_dma_deq c;

	make_streams(&q, 1024, false, &rs);
	tcb_dma(&cb, true, 0, q.src, 4096, 0, 0, 0, 0, 4096, 0, 4096, 4, 1);
	cr_assert_eq(run(), 0);
	fp32 = res.counters[TNPU_CNT_LOAD_CYCLES];
	c = cmd_of(&q);
	tcb_raw(&cb, &c, sizeof(c));
	cr_assert_eq(run(), 0);
	deq = res.counters[TNPU_CNT_LOAD_CYCLES];
	cr_assert_eq(fp32, TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 4 * 32);
	cr_assert_eq(deq, TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 20);	/* 4 x (512 + 128) B / 128 */
}

/* ---- errors (commands.md "Checks") ------------------------------------------------------------ */

static uint32_t run_cmd(const struct tnpu_cmd_dma_deq *c)
{
	tcb_raw(&cb, c, sizeof(*c));
	return run();
}

static struct tnpu_cmd_dma_deq good(void)
{
	static uint64_t rs = 20;
	struct qt q = basic(TNPU_DEQ_FMT_U4, 32, 64, 4);

	host_next = 0;
	make_streams(&q, 64, true, &rs);
	return cmd_of(&q);
}

#define EXPECT_DESC(field_off, mutate)                                                                   \
	do {                                                                                             \
		struct tnpu_cmd_dma_deq c = good();                                                      \
		mutate;                                                                                  \
		cr_assert_eq(run_cmd(&c), TNPU_ERR_DEQ_DESC, "%s", #mutate);                              \
		cr_assert_eq(res.err_info, field_off, "%s: ERR_INFO %u", #mutate, res.err_info);          \
		cr_assert_eq(res.err_cmd_offset, 0);                                                     \
	} while (0)

Test(deq, every_field_rule_is_deq_desc_naming_the_field)
{
	cr_assert_eq(run_cmd((struct tnpu_cmd_dma_deq[]){ good() }), 0);
	EXPECT_DESC(68, c.fmt = 3);
	EXPECT_DESC(69, c.out_dtype = TNPU_DTYPE_INT8);
	EXPECT_DESC(69, c.out_dtype = TNPU_DTYPE_INT32);
	EXPECT_DESC(70, c.qflags = 4);
	EXPECT_DESC(71, c.row = 2);
	EXPECT_DESC(72, c.half = 2);
	EXPECT_DESC(73, c.reserved[6] = 1);
	EXPECT_DESC(48, c.kt = 0);
	EXPECT_DESC(52, c.nt = 0);
	EXPECT_DESC(44, (c.k0 = 0xFFFFFFF0u, c.kt = 17));
	EXPECT_DESC(56, c.block = 48);		/* not a power of two */
	EXPECT_DESC(56, c.block = 8);		/* below 16 */
	EXPECT_DESC(56, c.block = 8192);	/* above 4096 */
	EXPECT_DESC(64, c.sram_pitch = 64 * 4 - 4);
	EXPECT_DESC(64, (c.qflags = TNPU_DEQ_F_KN, c.sram_pitch = 4 * 4 - 4));
	cr_assert_str_eq(tnpu_err_name(TNPU_ERR_DEQ_DESC), "DEQ_DESC");
}

Test(deq, range_alignment_and_size_errors)
{
	struct tnpu_cmd_dma_deq c = good();

	c.sram_off = 32 * 1024 - 3 * 256;	/* 4 lines of 256 bytes from 3 lines before the end */
	cr_assert_eq(run_cmd(&c), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_addr, c.sram_off);
	c = good();
	c.sram_pitch = 0xFFFFFFF0u;
	cr_assert_eq(run_cmd(&c), TNPU_ERR_SRAM_RANGE);
	c = good();
	c.sram_off = 2;
	cr_assert_eq(run_cmd(&c), TNPU_ERR_ALIGN);
	c.out_dtype = TNPU_DTYPE_BF16;	/* 2-byte elements: offset 2 is aligned */
	cr_assert_eq(run_cmd(&c), 0);
	c.sram_off = 3;
	cr_assert_eq(run_cmd(&c), TNPU_ERR_ALIGN);
	c = good();
	c.hdr.size = 72;
	tcb_raw(&cb, &c, 72);
	cr_assert_eq(run(), TNPU_ERR_CMD_SIZE);
}

Test(deq, host_stream_past_the_va_space_is_va_range_naming_the_stream)
{
	struct tnpu_cmd_dma_deq c = good();

	c.zp_pitch = 0x80000000u;
	c.zp_va = (1ull << 48) - 0x100000000ull;	/* column 2's zero points are past 2^48 */
	cr_assert_eq(run_cmd(&c), TNPU_ERR_MMU_VA_RANGE);
	cr_assert_eq(res.err_addr, c.zp_va);
	c = good();
	c.src_va = UINT64_MAX - 8;
	cr_assert_eq(run_cmd(&c), TNPU_ERR_MMU_VA_RANGE);
	cr_assert_eq(res.err_addr, c.src_va);
}

Test(deq, an_unmapped_scale_is_an_mmu_fault_at_its_address)
{
	/* columns 0 and 1 have their scales at the end of the buffer, column 2's are in the unmapped page
	 * after it */
	struct qt q = basic(TNPU_DEQ_FMT_U4, 32, 64, 3);
	uint64_t rs = 21, end = host + (4u << 20);

	make_streams(&q, 64, false, &rs);
	q.scl = end - 16;	/* 8 bytes per column */
	memset(tsim_ptr(&s, end - 16), 0x3F, 16);
	struct tnpu_cmd_dma_deq c = cmd_of(&q);

	tcb_nop(&cb, 0);
	cr_assert_eq(run_cmd(&c), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(res.err_addr, end);
	cr_assert_eq(res.err_cmd_offset, 8);
	cr_assert_eq((res.err_info >> 4) & 15, 1, "engine load + 1");
}

/* ---- hazard records (hazards.md) -------------------------------------------------------------- */

Test(deq, async_store_of_the_lines_it_loads_is_a_hazard)
{
	struct tnpu_cmd_dma_deq c = good();
	struct tnpu_hazard hz;

	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	c.hdr.flags = TNPU_CMD_F_ASYNC;
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host + (2u << 20), 256, 0, 0, 0, 0, 256, 0, 256, 4, 1);
	tcb_raw(&cb, &c, sizeof(c));
	cr_assert_eq(run(), 0);
	cr_assert_eq(tnpu_exec_hazard(s.ex, &hz), 1);
	/* the same with the DMA_DEQ on the other half is clean */
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	c.half = 1;
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host + (2u << 20), 256, 0, 0, 0, 0, 256, 0, 256, 4, 1);
	tcb_raw(&cb, &c, sizeof(c));
	cr_assert_eq(run(), 0);
	cr_assert_eq(tnpu_exec_hazard(s.ex, &hz), 0);
}

Test(deq, async_store_into_its_packed_codes_is_a_hazard)
{
	struct tnpu_cmd_dma_deq c = good();
	struct tnpu_hazard hz;

	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	c.hdr.flags = TNPU_CMD_F_ASYNC;
	c.half = 1;
	/* the store engine overwrites column 1's codes while the load engine reads them */
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, c.src_va + c.src_pitch, 32, 0, 0, 0, 0, 32, 0, 32, 1, 1);
	tcb_raw(&cb, &c, sizeof(c));
	cr_assert_eq(run(), 0);
	cr_assert_eq(tnpu_exec_hazard(s.ex, &hz), 1);
	cr_assert_eq(hz.lo, c.src_va + c.src_pitch);
}
