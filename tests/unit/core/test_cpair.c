/* SPDX-License-Identifier: MIT */
/* Cluster pairs (CAP_FEATURES bit 21; Documentation/hardware/isa.md "Operand record", CPAIR): an operand
 * record with flags bit 2 rewrites cluster c's address as (c & 1)*col_stride + (c >> 1)*su_wrap_delta, on
 * LDs into either slot, STs and the SFU residual record; its range/alignment is checked for every
 * cluster and malformed CPAIR records stop with OPERAND.  The reference is written here from the spec. */
#define TILE_B_OFF 12288
#include "tile_case.h"

TestSuite(cpair, .init = setup, .fini = teardown);

static int64_t ref_addr(const struct tnpu_operand *o, unsigned c, unsigned p)
{
	int64_t a = (int64_t)o->addr + (int64_t)p * o->pe_stride;

	if (o->flags & TNPU_OPF_CPAIR)
		return a + (int64_t)(c % 2) * o->col_stride + (int64_t)(c / 2) * o->su_wrap_delta;
	return a + (int64_t)c * o->col_stride;
}

/* Row i of PE (c, p)'s tile: its rewritten address (ref_addr) plus i rows. */
static int64_t ref_row(const struct tnpu_operand *o, unsigned c, unsigned p, unsigned i)
{
	return ref_addr(o, c, p) + (int64_t)i * o->pitch;
}

/* The expected output area: the input's bytes there, then every PE's tile written in (c, p) order. */
static unsigned check_case(const struct tile_case *q, const uint8_t *img)
{
	return check_tile(q, ref_row, img);
}

/* A random case: A's clusters a half-block apart within a pair, the pairs a row pitch apart (any sign,
 * gaps or overlaps), the PEs on channels; the output the same layout over 32-bit elements. */
static struct tile_case rand_case(uint64_t *seed, bool f32)
{
	struct tile_case q = {.tm = 1 + (unsigned)(trng(seed) % 5), .f32 = f32, .residual = trng(seed) % 2};
	unsigned e = f32 ? 4 : 1, ae = KD * e;
	int32_t acs = (int32_t)(q.tm + trng(seed) % 3) * (int32_t)ae,
		aps = (int32_t)(2 * q.tm + trng(seed) % 4) * (int32_t)ae;
	int32_t ocs = (int32_t)(q.tm * 48 + 4 * (trng(seed) % 4)),
		ops2 = (int32_t)(2 * q.tm * 48 + 16 * (trng(seed) % 4));

	if (trng(seed) % 3 == 0)
		aps = -aps;
	if (trng(seed) % 3 == 0)
		ops2 = -ops2;
	q.a = t_opnd(aps < 0 ? 4096 : A_OFF, acs, 0, ae, q.tm, KD, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8,
		     TNPU_OPF_CPAIR);
	q.a.su_wrap_delta = aps;
	q.o = t_opnd(ops2 < 0 ? O_OFF + 4096 : O_OFF, ocs, TN * 4, 48, q.tm, TN,
		     f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32, trng(seed) % 4 ? TNPU_OPF_CPAIR : 0);
	q.o.su_wrap_delta = ops2;
	q.r = t_opnd(R_OFF, 4 * 48, TN * 4, 48, q.tm, TN, q.o.dtype, TNPU_OPF_CPAIR);
	q.r.su_wrap_delta = -2 * 48;
	q.r.addr += 2 * 48;
	return q;
}

Test(cpair, every_cluster_reads_and_writes_its_pair_block)
{
	uint64_t seed = 0x5eedc9a1;
	static uint8_t img[IMG];

	for (unsigned t = 0; t < 48; t++) {
		struct tile_case q = rand_case(&seed, t % 3 == 2);
		unsigned wrong;

		fill(&seed, q.f32, false);
		memcpy(img, H(0), IMG);
		cr_assert_eq(run_case(&q), 0, "case %u: %s (info 0x%x)", t, tnpu_err_name(res.error), res.err_info);
		wrong = check_case(&q, img);
		cr_assert_eq(wrong, 0, "case %u (tm %u f32 %d res %d a %d/%d o %d/%d/%u): %u bytes wrong", t, q.tm,
			     q.f32, q.residual, q.a.col_stride, q.a.su_wrap_delta, q.o.col_stride, q.o.su_wrap_delta,
			     q.o.flags, wrong);
	}
}

/* A CPAIR record whose pair stride is twice its col_stride addresses what the plain record does: the
 * same bytes, the same cycles and counters (LD bytes count every cluster's distinct tile). */
Test(cpair, pair_stride_of_two_blocks_is_the_plain_record)
{
	uint64_t seed = 0x5eedc9a2;
	static uint8_t img[IMG], out[O_LEN];

	for (unsigned t = 0; t < 8; t++) {
		struct tile_case q = rand_case(&seed, t % 2), plain;
		uint64_t cnt[TNPU_CNT_NUM];

		q.a.su_wrap_delta = 2 * q.a.col_stride;
		q.a.addr = A_OFF;
		q.o.flags = TNPU_OPF_CPAIR;
		q.o.su_wrap_delta = 2 * q.o.col_stride;
		q.o.addr = O_OFF;
		plain = q;
		plain.a.flags = plain.o.flags = 0;
		plain.a.su_wrap_delta = plain.o.su_wrap_delta = 0;
		fill(&seed, q.f32, false);
		memcpy(img, H(0), IMG);
		cr_assert_eq(run_case(&q), 0, "%s", tnpu_err_name(res.error));
		cr_assert_eq(check_case(&q, img), 0, "case %u", t);
		memcpy(out, H(HOST_OUT), O_LEN);
		memcpy(cnt, res.counters, sizeof(cnt));
		memcpy(H(0), img, IMG);
		cr_assert_eq(run_case(&plain), 0, "%s", tnpu_err_name(res.error));
		cr_assert_eq(memcmp(out, H(HOST_OUT), O_LEN), 0, "case %u", t);
		for (unsigned k = 0; k < TNPU_CNT_NUM; k++)
			cr_assert_eq(cnt[k], res.counters[k], "case %u counter %u: %llu vs %llu", t, k,
				     (unsigned long long)cnt[k], (unsigned long long)res.counters[k]);
	}
}

/* CPAIR needs su_wrap 0 and no SPARSE; TRANS stays a weight-queue flag; every cluster's tile (not only
 * the corner clusters') must lie in the half, the pair stride aligned. */
Test(cpair, malformed_pair_records_stop)
{
	uint64_t seed = 0x5eedc9a3;
	struct tile_case q = rand_case(&seed, false), b;

	q.residual = true;
	memset(H(0), 0, IMG);
	cr_assert_eq(run_case(&q), 0, "%s", tnpu_err_name(res.error));
	b = q;
	b.a.su_wrap = 1;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.flags |= TNPU_OPF_TRANS;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.o.flags = TNPU_OPF_CPAIR;
	b.o.su_wrap = 2;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.r.su_wrap = 3;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.r.flags |= TNPU_OPF_SPARSE;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.flags |= 1u << 4; /* still reserved */
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	/* cluster 1 (pair 0, second) past the half; clusters 0 and 3 (the plain rewrite's corners) inside */
	b = q;
	b.a.addr = 0;
	b.a.col_stride = (int32_t)(cfg.sram / 2 - 4);
	b.a.su_wrap_delta = -b.a.col_stride;
	cr_assert_eq(run_case(&b), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_addr, cfg.sram / 2 - 4, "err_addr 0x%llx", (unsigned long long)res.err_addr);
	b = q;
	b.o.flags = TNPU_OPF_CPAIR;
	b.o.addr = O_OFF;
	b.o.col_stride = 4 * 48;
	b.o.su_wrap_delta = (int32_t)(cfg.sram / 2) - O_OFF - 4 * 48;
	cr_assert_eq(run_case(&b), TNPU_ERR_SRAM_RANGE);
	b = q;
	b.o.flags = TNPU_OPF_CPAIR;
	b.o.su_wrap_delta += 2; /* int32 tiles: a multiple of 4 */
	cr_assert_eq(run_case(&b), TNPU_ERR_ALIGN);
}
