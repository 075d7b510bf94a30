/* SPDX-License-Identifier: MIT */
/* Row wrap (CAP_FEATURES bit 22; Documentation/hardware/isa.md "Operand record", WRAP): an operand record
 * with flags bit 3 takes its per-PE rewrite and row index in a packed space of su_wrap rows per layout
 * row, the layout rows su_wrap_delta bytes apart, on LDs into an input slot and STs; range/alignment use
 * the wrapped addresses, malformed or misplaced WRAP records stop with OPERAND, and the costs are those of
 * the same tile without WRAP.  The reference is written here from the spec. */
#define TILE_B_OFF 14336
#include "tile_case.h"

TestSuite(wrap, .init = setup, .fini = teardown);

/* isa.md "Row wrap": row i of PE (c,p) at packed offset c*col_stride + p*pe_stride + i*pitch, i.e. at
 * addr + floor(o / (W*pitch)) * P + o mod (W*pitch); without WRAP a(c,p) + i*pitch. */
static int64_t ref_row(const struct tnpu_operand *o, unsigned c, unsigned p, unsigned i)
{
	int64_t off = (int64_t)c * o->col_stride + (int64_t)p * o->pe_stride + (int64_t)i * o->pitch;

	if (o->flags & TNPU_OPF_WRAP) {
		int64_t span = (int64_t)o->su_wrap * o->pitch;

		return (int64_t)o->addr + off / span * o->su_wrap_delta + off % span;
	}
	return (int64_t)o->addr + off;
}

static unsigned check_into_rows(const struct tile_case *q, const uint8_t *img, uint8_t *want)
{
	return check_into(q, ref_row, img, want);
}

static unsigned check_case(const struct tile_case *q, const uint8_t *img)
{
	return check_tile(q, ref_row, img);
}

/* A random case: A's layout rows of W pixels (KD channels, maybe a gap after each) P bytes apart (gaps of
 * up to two pixels: the padding columns), the clusters' blocks tm or tm - 1 pixels apart (overlapping by
 * one), the PEs on channels or on further pixel blocks; the output the same kind of layout over 32-bit
 * elements (WRAP or plain), the residual plain. */
static struct tile_case rand_case(uint64_t *seed, bool f32)
{
	struct tile_case q = {.tm = 1 + (unsigned)(trng(seed) % 6),
			  .f32 = f32,
			  .residual = trng(seed) % 2,
			  .zskip = trng(seed) % 3 == 0};
	unsigned e = f32 ? 4 : 1, ap = (KD + (unsigned)(trng(seed) % 2) * 4) * e, W = 1 + (unsigned)(trng(seed) % 5);
	unsigned Wo = 1 + (unsigned)(trng(seed) % 6);
	int32_t acs = (int32_t)((q.tm - (q.tm > 1 ? trng(seed) % 2 : 0)) * ap);
	int32_t aps = trng(seed) % 2 ? 0 : (int32_t)(COLS * q.tm * ap);

	q.a = t_opnd(A_OFF, acs, aps, ap, q.tm, KD, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, TNPU_OPF_WRAP);
	q.a.su_wrap = (uint16_t)W;
	q.a.su_wrap_delta = (int32_t)((W + trng(seed) % 3) * ap);
	/* output pixels of PES * TN int32 (the PEs on channels), 48 bytes apart */
	q.o = t_opnd(O_OFF, (int32_t)(q.tm * 48), TN * 4, 48, q.tm, TN, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32,
		     trng(seed) % 4 ? TNPU_OPF_WRAP : 0);
	if (q.o.flags) {
		q.o.su_wrap = (uint16_t)Wo;
		q.o.su_wrap_delta = (int32_t)(Wo * 48 + 16 * (trng(seed) % 3));
	}
	q.r = t_opnd(R_OFF, (int32_t)(q.tm * 48), TN * 4, 48, q.tm, TN, q.o.dtype, 0);
	return q;
}

Test(wrap, every_pe_reads_and_writes_its_wrapped_rows)
{
	uint64_t seed = 0x5eedea01;
	static uint8_t img[IMG];
	unsigned wrapped = 0;

	for (unsigned t = 0; t < 64; t++) {
		struct tile_case q = rand_case(&seed, t % 3 == 2);
		unsigned wrong;

		fill(&seed, q.f32, true);
		memcpy(img, H(0), IMG);
		cr_assert_eq(run_case(&q), 0, "case %u: %s (info 0x%x)", t, tnpu_err_name(res.error), res.err_info);
		wrong = check_case(&q, img);
		cr_assert_eq(wrong, 0, "case %u (tm %u f32 %d zskip %d a %d/%d W %u P %d o %u/%d): %u bytes wrong", t,
			     q.tm, q.f32, q.zskip, q.a.col_stride, q.a.pe_stride, q.a.su_wrap, q.a.su_wrap_delta,
			     q.o.su_wrap, q.o.su_wrap_delta, wrong);
		wrapped += q.a.su_wrap_delta > (int32_t)(q.a.su_wrap * q.a.pitch);
	}
	cr_assert_gt(wrapped, 16, "the sweep has layout rows with gaps");
}

/* The costs of a WRAP tile are those of the same tile without WRAP: every counter (cycles, distribution
 * bytes, MACs, effective MACs with ZSKIP: the same elements) equals the plain run over the same rows
 * copied to a plain layout. */
Test(wrap, costs_are_the_plain_tiles)
{
	uint64_t seed = 0x5eedea02;
	static uint8_t img[IMG];

	for (unsigned t = 0; t < 12; t++) {
		struct tile_case q = rand_case(&seed, t % 2), plain;
		uint64_t cnt[TNPU_CNT_NUM];
		unsigned e = q.f32 ? 4 : 1;

		q.zskip = t % 3 == 0;
		q.a.pe_stride = 0;
		q.a.col_stride = (int32_t)(q.tm * q.a.pitch);
		fill(&seed, q.f32, true);
		cr_assert_eq(run_case(&q), 0, "%s", tnpu_err_name(res.error));
		memcpy(cnt, res.counters, sizeof(cnt));
		memcpy(img, H(0), IMG);
		cr_assert_eq(check_case(&q, img), 0, "case %u", t);
		/* the same A rows packed after each other at A_OFF of the copy (plain: cluster c at c*tm rows) */
		plain = q;
		plain.a.flags = 0;
		plain.a.su_wrap = 0;
		plain.a.su_wrap_delta = 0;
		plain.o.flags = 0;
		plain.o.su_wrap = 0;
		plain.o.su_wrap_delta = 0;
		for (unsigned c = 0; c < COLS; c++)
			for (unsigned i = 0; i < q.tm; i++)
				memcpy(H(A_OFF + (c * q.tm + i) * q.a.pitch), img + ref_row(&q.a, c, 0, i), KD * e);
		cr_assert_eq(run_case(&plain), 0, "%s", tnpu_err_name(res.error));
		for (unsigned k = 0; k < TNPU_CNT_NUM; k++)
			cr_assert_eq(cnt[k], res.counters[k], "case %u counter %u: %llu vs %llu", t, k,
				     (unsigned long long)cnt[k], (unsigned long long)res.counters[k]);
	}
}

/* A WRAP record whose layout row is longer than any tile's reach is the plain record: the same bytes. */
Test(wrap, unreached_wrap_is_the_plain_record)
{
	uint64_t seed = 0x5eedea03;
	static uint8_t img[IMG], out[O_LEN];

	for (unsigned t = 0; t < 8; t++) {
		struct tile_case q = rand_case(&seed, t % 2), plain;

		q.a.su_wrap = 4096;
		q.a.su_wrap_delta = (int32_t)(4096 * q.a.pitch);
		q.o.flags = TNPU_OPF_WRAP;
		q.o.su_wrap = 2048;
		q.o.su_wrap_delta = 2048 * 48;
		plain = q;
		plain.a.flags = plain.o.flags = 0;
		plain.a.su_wrap = plain.o.su_wrap = 0;
		plain.a.su_wrap_delta = plain.o.su_wrap_delta = 0;
		fill(&seed, q.f32, true);
		memcpy(img, H(0), IMG);
		cr_assert_eq(run_case(&q), 0, "%s", tnpu_err_name(res.error));
		memcpy(out, H(HOST_OUT), O_LEN);
		memcpy(H(0), img, IMG);
		cr_assert_eq(run_case(&plain), 0, "%s", tnpu_err_name(res.error));
		cr_assert_eq(memcmp(out, H(HOST_OUT), O_LEN), 0, "case %u", t);
	}
}

/* The scalar unit steps a WRAP record by su_delta after every issue and never wraps (su_wrap and
 * su_wrap_delta are the layout's): a second EXE reads and writes su_delta further on. */
Test(wrap, scalar_unit_steps_without_wrapping)
{
	uint64_t seed = 0x5eedea05;
	static uint8_t img[IMG], want[O_LEN];

	for (unsigned t = 0; t < 8; t++) {
		struct tile_case q = rand_case(&seed, t % 2), q2;

		q.a.su_wrap = (uint16_t)(1 + t % 2);
		q.a.su_wrap_delta = (int32_t)((q.a.su_wrap + 1) * q.a.pitch);
		q.a.su_delta = (int32_t)(q.a.su_wrap_delta * 2);
		q.o.flags = TNPU_OPF_WRAP;
		q.o.su_wrap = 1;
		q.o.su_wrap_delta = 64;
		q.o.su_delta = O_LEN / 2;
		q.residual = false;
		q2 = q;
		q2.a.addr += (uint32_t)q.a.su_delta;
		q2.o.addr += (uint32_t)q.o.su_delta;
		fill(&seed, q.f32, true);
		memcpy(img, H(0), IMG);
		cr_assert_eq(run_exes(&q, 2), 0, "%s", tnpu_err_name(res.error));
		memcpy(want, img + O_OFF, O_LEN);
		check_into_rows(&q, img, want);
		cr_assert_eq(check_into_rows(&q2, img, want), 0, "case %u", t);
	}
}

/* WRAP needs su_wrap >= 1, pitch >= 1, non-negative strides, a row pitch of at least W rows and no other
 * flag; it is refused on the weight queue, with MCAST and on the residual record; the last PE's last row
 * must lie in the half; su_wrap_delta is aligned. */
Test(wrap, malformed_wrap_records_stop)
{
	uint64_t seed = 0x5eedea04;
	struct tile_case q = rand_case(&seed, false), b;

	q.residual = true;
	q.o.flags = TNPU_OPF_WRAP;
	q.o.su_wrap = 3;
	q.o.su_wrap_delta = 3 * 48 + 16;
	memset(H(0), 0, IMG);
	cr_assert_eq(run_case(&q), 0, "%s", tnpu_err_name(res.error));
	b = q;
	b.a.su_wrap = 0;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.pitch = 0;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.col_stride = -(int32_t)b.a.pitch;
	b.a.addr += 8 * b.a.pitch;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.o.pe_stride = -4;
	b.o.addr += 64;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.su_wrap_delta = (int32_t)(b.a.su_wrap * b.a.pitch) - 1;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.flags |= TNPU_OPF_CPAIR;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.r.flags = TNPU_OPF_WRAP;
	b.r.su_wrap = 2;
	b.r.su_wrap_delta = 2 * 48;
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	b = q;
	b.a.flags = TNPU_OPF_WRAP | 1u << 4; /* still reserved */
	cr_assert_eq(run_case(&b), TNPU_ERR_OPERAND);
	/* the last PE's last row past the half (its row 0 and the first PE's inside) */
	b = q;
	b.o.addr = O_OFF;
	b.o.su_wrap = 1;
	b.o.su_wrap_delta = (int32_t)(cfg.sram / 2 - O_OFF) / (int32_t)(COLS * q.tm - 1) + 4;
	b.o.su_wrap_delta &= ~3;
	cr_assert_eq(run_case(&b), TNPU_ERR_SRAM_RANGE);
	b = q;
	b.o.su_wrap_delta += 2; /* int32 tiles: a multiple of 4 */
	cr_assert_eq(run_case(&b), TNPU_ERR_ALIGN);
	/* wrap count x su_wrap_delta past 2^63 (a one-byte layout row, the largest strides): a range
	 * error, not an address that wrapped around into the half */
	b = q;
	b.a.su_wrap = 1;
	b.a.pitch = 1;
	b.a.col_stride = INT32_MAX;
	b.a.pe_stride = INT32_MAX;
	b.a.su_wrap_delta = INT32_MAX;
	cr_assert_eq(run_case(&b), TNPU_ERR_SRAM_RANGE);
	b = q;
	b.o.su_wrap = 1;
	b.o.pitch = 4;
	b.o.col_stride = INT32_MAX - 3;
	b.o.pe_stride = INT32_MAX - 3;
	b.o.su_wrap_delta = INT32_MAX - 3;
	cr_assert_eq(run_case(&b), TNPU_ERR_SRAM_RANGE);
}

/* An LD of a WRAP record to the weight queue or with MCAST stops with OPERAND (isa.md "Row wrap"). */
Test(wrap, wrap_only_on_plain_input_loads)
{
	struct tnpu_operand a = t_opnd(A_OFF, KD, 0, KD, 2, KD, TNPU_DTYPE_INT8, TNPU_OPF_WRAP);
	uint16_t lds[] = {TNPU_INSN_LD(0, 0, 1, 0), TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST, TNPU_INSN_LD(0, 0, 0, 1)};

	a.su_wrap = 3;
	a.su_wrap_delta = 5 * KD;
	for (unsigned i = 0; i < 3; i++) {
		struct tpkt p;

		tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){.n_instr = 1, .n_operands = 1, .repeat = 1}, &lds[i], &a);
		tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
		tpkt_exe(&p, 0, TNPU_PKT_LAST, NULL, 0);
		tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
		cr_assert_eq(run(), i < 2 ? TNPU_ERR_OPERAND : 0, "LD %u: %s", i, tnpu_err_name(res.error));
	}
}
