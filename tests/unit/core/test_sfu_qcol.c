/* SPDX-License-Identifier: MIT */
/* SFU per-column requantisation (ISA 2, CAP_FEATURES bit 19; Documentation/hardware/isa.md, "SFU parameter
 * record"): the QCOL records {bias, multiplier, shift} give every output column its own requantisation,
 * on every PE through the per-PE rewrite, chained, through SFU APPLY and with the residual operand;
 * malformed records stop with SFU_PARAM / SRAM_RANGE.  The reference is written here from the spec. */
#include "common.h"

SMALL_SIM_SUITE(qcol, 16 << 20, 64 * 1024)

enum { TM = 3, KD = 8, TN = 5, A_OFF = 0, B_OFF = 256, B_PS = 64, B_CS = 4 * B_PS, O_OFF = 1024, O_PS = 16,
       O_CS = 4 * O_PS, Q_OFF = 2048, R_OFF = 4096, R_PS = 64, R_CS = 4 * R_PS, HOST_OUT = 16384 };

/* Host bytes [0, len) -> SRAM half 0 of every row; SRAM [off, +len) of row 0 -> host hoff. */
static void put(uint32_t len)
{
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, len, 1, 1);
}

static void get(uint32_t off, uint32_t hoff, uint32_t len)
{
	tcb_dma(&cb, false, 0, host + hoff, 0, 0, 0, 0, off, 0, 0, len, 1, 1);
}

struct qcase {
	uint8_t ops;		/* BIAS / RELU / CLAMP (QCOL and REQUANT always) */
	int32_t lo, hi;
	int16_t zp;
	uint32_t bps;		/* bytes between the PEs' record vectors: 60 side by side, or padded */
	bool chained, residual;
};

static int8_t ref(const struct qcase *q, unsigned c, unsigned pe, unsigned i, unsigned j)
{
	const int8_t *a = (const int8_t *)H(A_OFF), *b = (const int8_t *)H(B_OFF + c * B_CS + pe * B_PS);
	const uint8_t *rec = H(Q_OFF + c * 4 * q->bps + pe * q->bps + 12 * j);
	int32_t v = 0, m, bias;
	uint32_t sh;
	int64_t y;

	for (unsigned k = 0; k < KD; k++)
		v += a[i * KD + k] * b[k * TN + j];
	memcpy(&bias, rec, 4);
	memcpy(&m, rec + 4, 4);
	memcpy(&sh, rec + 8, 4);
	if (q->ops & TNPU_SFU_OP_BIAS)
		v = (int32_t)((uint32_t)v + (uint32_t)bias);
	if (q->residual) {
		int32_t r;

		memcpy(&r, H(R_OFF + c * R_CS + pe * R_PS + (i * TN + j) * 4), 4);
		v = (int32_t)((uint32_t)v + (uint32_t)r);
	}
	if (q->ops & TNPU_SFU_OP_RELU)
		v = v < 0 ? 0 : v;
	if (q->ops & TNPU_SFU_OP_CLAMP)
		v = v < q->lo ? q->lo : (v > q->hi ? q->hi : v);
	if (sh > 62)
		sh = 62;
	y = (((int64_t)v * m + (sh ? (int64_t)1 << (sh - 1) : 0)) >> sh) + q->zp;
	return (int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));
}

/* One int8 GEMM tile per PE of row 0 (every cluster and PE its own B, output and records). */
static uint32_t run_case(const struct qcase *q, struct tnpu_sfu_param *sp)
{
	uint16_t ins_ch[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
			      TNPU_INSN_ST(0, 2, 0) };
	uint16_t ins_dc[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			      TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops[5] = {
		t_opnd(A_OFF, 0, 0, KD, TM, KD, TNPU_DTYPE_INT8, 0),
		t_opnd(B_OFF, B_CS, B_PS, TN, KD, TN, TNPU_DTYPE_INT8, 0),
		t_opnd(O_OFF, O_CS, O_PS, TN, TM, TN, TNPU_DTYPE_INT8, 0),
		{ 0 },
		t_opnd(R_OFF, R_CS, R_PS, TN * 4, TM, TN, TNPU_DTYPE_INT32, 0),
	};
	unsigned nops = q->residual ? 5 : 4;
	struct tpkt p;

	memcpy(&ops[3], sp, 32);
	put(8192);
	if (q->chained)
		tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = (uint8_t)nops, .loop_end = 2,
							   .repeat = 1, .sfu_rf = 3 }, ins_ch, ops);
	else
		tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = (uint8_t)nops, .loop_end = 2,
							   .repeat = 1 }, ins_dc, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	get(O_OFF, HOST_OUT, 2 * O_CS);
	return run();
}

static struct tnpu_sfu_param qparam(const struct qcase *q)
{
	struct tnpu_sfu_param sp = { .bias_addr = Q_OFF, .bias_col_stride = (int32_t)(4 * q->bps),
				     .bias_pe_stride = (int32_t)q->bps,
				     .ops = (uint8_t)(q->ops | TNPU_SFU_OP_QCOL | TNPU_SFU_OP_REQUANT |
						      (q->residual ? TNPU_SFU_OP_RESIDUAL : 0)),
				     .zero_point = q->zp, .out_dtype = TNPU_DTYPE_INT8,
				     .lo = (uint32_t)q->lo, .hi = (uint32_t)q->hi };

	return sp;
}

Test(qcol, every_column_of_every_pe_takes_its_own_multiplier_and_shift)
{
	static const int32_t mults[] = { 0, 1, -1, INT32_MAX, INT32_MIN, 1 << 30, -(1 << 29) };
	uint64_t seed = 0x5eed0c01;

	for (unsigned t = 0; t < 64; t++) {
		struct qcase q = { .ops = (uint8_t)(trng(&seed) & (TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU |
								   TNPU_SFU_OP_CLAMP)),
				   .lo = -(int32_t)(trng(&seed) % 20000), .hi = (int32_t)(trng(&seed) % 20000),
				   .zp = (int16_t)((int)(trng(&seed) % 256) - 128), .bps = t % 2 ? 60 : 64,
				   .chained = t % 4 < 2, .residual = t % 8 >= 6 };
		struct tnpu_sfu_param sp = qparam(&q);
		unsigned wrong = 0;

		for (unsigned i = 0; i < 2048; i++)
			H(0)[i] = (uint8_t)trng(&seed);
		for (unsigned c = 0; c < 2; c++)
			for (unsigned pe = 0; pe < 4; pe++)
				for (unsigned j = 0; j < TN; j++) {
					uint8_t *rec = H(Q_OFF + c * 4 * q.bps + pe * q.bps + 12 * j);
					int32_t bias = (int32_t)(trng(&seed) % 8001) - 4000, m;
					uint32_t sh = (uint32_t)(trng(&seed) % 72);	/* > 62 acts as 62 */

					m = trng(&seed) % 4 ? (int32_t)(trng(&seed) >> 33) * (trng(&seed) % 2 ? 1 : -1)
							    : mults[trng(&seed) % 7];
					if (trng(&seed) % 8 == 0)
						sh = (uint32_t)trng(&seed);	/* any 32-bit shift word */
					memcpy(rec, &bias, 4);
					memcpy(rec + 4, &m, 4);
					memcpy(rec + 8, &sh, 4);
				}
		for (unsigned i = 0; i < 2 * R_CS; i += 4) {
			int32_t r = (int32_t)(trng(&seed) % 20001) - 10000;

			memcpy(H(R_OFF + i), &r, 4);
		}
		cr_assert_eq(run_case(&q, &sp), 0, "case %u: %s", t, tnpu_err_name(res.error));
		for (unsigned c = 0; c < 2; c++)
			for (unsigned pe = 0; pe < 4; pe++)
				for (unsigned i = 0; i < TM; i++)
					for (unsigned j = 0; j < TN; j++) {
						int8_t got = (int8_t)H(HOST_OUT + c * O_CS + pe * O_PS + i * TN + j)[0];

						wrong += got != ref(&q, c, pe, i, j);
					}
		cr_assert_eq(wrong, 0, "case %u (ops 0x%x chained %d residual %d bps %u): %u wrong", t, sp.ops,
			     q.chained, q.residual, q.bps, wrong);
	}
}

/* QCOL needs REQUANT on the int path and the record's own scale and shift 0; the records of every PE
 * must lie inside the half. */
Test(qcol, malformed_records_stop_with_sfu_param_or_sram_range)
{
	struct qcase q = { .ops = TNPU_SFU_OP_BIAS, .bps = 60 };
	struct tnpu_sfu_param sp;

	memset(H(0), 0, 8192);
	sp = qparam(&q);
	cr_assert_eq(run_case(&q, &sp), 0, "%s", tnpu_err_name(res.error));
	sp = qparam(&q);
	sp.ops &= (uint8_t)~TNPU_SFU_OP_REQUANT;
	sp.out_dtype = TNPU_DTYPE_INT32;
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_SFU_PARAM);
	sp = qparam(&q);
	sp.scale = 3;
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_SFU_PARAM);
	sp = qparam(&q);
	sp.shift = 1;
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_SFU_PARAM);
	sp = qparam(&q);
	sp.ops = TNPU_SFU_OP_MASK + 1;	/* bits above QCOL stay reserved */
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_SFU_PARAM);
	/* the last PE's records (12 bytes a column, not the bias's 4) end past the half */
	sp = qparam(&q);
	sp.bias_addr = cfg.sram / 2 - 7 * 60 - 4 * TN - 4;
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_SRAM_RANGE);
	sp.bias_addr += 4 * TN + 4 - 12 * TN;
	cr_assert_eq(run_case(&q, &sp), 0, "%s", tnpu_err_name(res.error));
	sp.bias_addr -= 2;
	cr_assert_eq(run_case(&q, &sp), TNPU_ERR_ALIGN);
}

/* fp32 accumulators have no per-column requantisation. */
Test(qcol, fp32_accumulator_refuses_qcol)
{
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops[4] = {
		t_opnd(0, 0, 0, 16, 2, 4, TNPU_DTYPE_FP32, 0),
		t_opnd(256, 0, 0, 8, 4, 2, TNPU_DTYPE_FP32, 0),
		t_opnd(1024, 0, 0, 8, 2, 2, TNPU_DTYPE_FP32, 0),
	};
	struct tnpu_sfu_param sp = { .bias_addr = 2048, .ops = TNPU_SFU_OP_QCOL | TNPU_SFU_OP_REQUANT,
				     .out_dtype = TNPU_DTYPE_FP32 };
	struct tpkt p;

	memset(H(0), 0, 4096);
	memcpy(&ops[3], &sp, 32);
	put(4096);
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 4, .loop_end = 2, .repeat = 1 }, ins,
		    ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	cr_assert_eq(run(), TNPU_ERR_SFU_PARAM);
}
