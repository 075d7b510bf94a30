/* SPDX-License-Identifier: MIT */
/* Cluster ISA: CONFIG/EXE, register file, per-PE rewrite, scalar unit, LD/MAC/SFU/ST,
 * zero-skipping, sparse weights, load balancing, SFU modes, weight-queue modes, errors. */
#include <stdio.h>

#include "common.h"

static struct tsim s;
static uint64_t host;	/* 64 KiB host staging buffer */
static struct tcb cb;
static struct tnpu_result res;

/* 1 row x 2 clusters x 2 PEs. */
static void setup(void)
{
	struct tnpu_config cfg = small_cfg();

	cfg.rows = 1;
	cfg.cols = 2;
	cfg.pes = 2;
	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
	host = tsim_buf(&s, 65536);
	tcb_init(&cb);
}

static void teardown(void)
{
	tcb_free(&cb);
	tsim_fini(&s);
}

TestSuite(isa, .init = setup, .fini = teardown);

static uint8_t *H(uint32_t off)
{
	return (uint8_t *)tsim_ptr(&s, host) + off;
}

/* Host bytes [hoff, +len) -> SRAM half 0 [off, +len). */
static void put(uint32_t hoff, uint32_t off, uint32_t len)
{
	tcb_dma(&cb, true, 0, host + hoff, 0, 0, TNPU_DMA_ROW_ALL, 0, off, 0, 0, len, 1, 1);
}

static void get(uint32_t off, uint32_t hoff, uint32_t len)
{
	tcb_dma(&cb, false, 0, host + hoff, 0, 0, 0, 0, off, 0, 0, len, 1, 1);
}

static void config(unsigned ib, struct tnpu_cfg_hdr h, const uint16_t *ins, const struct tnpu_operand *ops)
{
	struct tpkt p;

	tpkt_config(&p, ib, &h, ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
}

static void exe(unsigned ib, uint8_t flags, uint8_t dflags)
{
	struct tpkt p;

	tpkt_exe(&p, ib, flags, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, dflags, p.buf, p.len);
}

static uint32_t run(void)
{
	tsim_run(&s, &cb, 0, &res);
	cb.len = 0;
	return res.error;
}

#define LAST (TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT)

static struct tnpu_operand opnd(uint32_t addr, int32_t cs, int32_t ps, uint32_t pitch, uint16_t rows,
				uint16_t cols, uint8_t dtype, uint8_t flags)
{
	struct tnpu_operand o = { .addr = addr, .col_stride = cs, .pe_stride = ps, .pitch = pitch,
				  .rows = rows, .cols = cols, .dtype = dtype, .flags = flags };

	return o;
}

/* Dot product per PE (c,p): A 1x4 at 0 + c*8 + p*4, B (trans, 1x4) at 64 + c*16 + p*4 -> int32 at 128 + c*8 + p*4. */
Test(isa, per_pe_operand_rewrite_gives_each_pe_its_own_data)
{
	int8_t *a = (int8_t *)H(0), *b = (int8_t *)H(64);
	int32_t *out = (int32_t *)(void *)H(1024);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 8, 4, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(64, 16, 4, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		opnd(128, 8, 4, 4, 1, 1, TNPU_DTYPE_INT32, 0),
	};

	for (int i = 0; i < 64; i++) {
		a[i] = (int8_t)(i * 3 - 50);
		b[i] = (int8_t)(17 - i * 5);
	}
	put(0, 0, 128);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	get(128, 1024, 16);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int c = 0; c < 2; c++)
		for (int p = 0; p < 2; p++) {
			int32_t ref = 0;

			for (int k = 0; k < 4; k++)
				ref += a[c * 8 + p * 4 + k] * b[c * 16 + p * 4 + k];
			cr_assert_eq(out[c * 2 + p], ref, "PE (%d,%d)", c, p);
		}
	cr_assert_eq(res.counters[TNPU_CNT_INSTRUCTIONS], 4);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], 16);
	/* LD bytes: A 4 distinct tiles x 4 B, B 4 x 4 B */
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG] - 1, 32);
}

static uint64_t config_once_exe_many(unsigned n, uint64_t *instr)
{
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 8, 2, 8, TNPU_DTYPE_INT8, 0),
		opnd(64, 0, 0, 2, 8, 2, TNPU_DTYPE_INT8, 0),
		opnd(256, 0, 0, 8, 2, 2, TNPU_DTYPE_INT32, 0),
	};

	config(3, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	for (unsigned i = 0; i < n; i++)
		exe(3, i == n - 1 ? LAST : 0, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	*instr = res.counters[TNPU_CNT_INSTRUCTIONS];
	return res.counters[TNPU_CNT_BYTES_CONFIG];
}

Test(isa, config_once_exe_many_config_bytes_do_not_grow)
{
	uint64_t i1, i16;
	uint64_t c1 = config_once_exe_many(1, &i1);
	uint64_t c16 = config_once_exe_many(16, &i16);

	cr_assert_eq(c1, c16);
	cr_assert_eq(c1, 1 + 16 + 8 + 96);
	cr_assert_eq(i1, 4);
	cr_assert_eq(i16, 16 * 3 + 1, "ST only issues in the LAST EXE");
}

/* 1x16 . 16x1 in four K chunks through the loop body with scalar-unit address updates. */
Test(isa, scalar_unit_walks_operands_and_persists_until_rf_restore)
{
	int8_t *a = (int8_t *)H(0), *b = (int8_t *)H(64);
	int32_t *out = (int32_t *)(void *)H(1024);
	int32_t full = 0, half0 = 0, half1 = 0;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[3] = {
		opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(64, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		opnd(512, 0, 0, 4, 1, 1, TNPU_DTYPE_INT32, 0),
	};

	ops[0].su_delta = 4;
	ops[1].su_delta = 4;
	ops[2].su_delta = 4;	/* each ST goes to the next word */
	for (int i = 0; i < 16; i++) {
		a[i] = (int8_t)(i + 1);
		b[i] = (int8_t)(2 * i - 7);
		full += a[i] * b[i];
		if (i < 8)
			half0 += a[i] * b[i];
		else
			half1 += a[i] * b[i];
	}
	put(0, 0, 128);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .mode = TNPU_CFG_MODE_PIPE4,
					 .loop_end = 2, .repeat = 2 }, ins, ops);
	exe(0, LAST, 0);			/* chunks 0,1 -> out[0] */
	exe(0, LAST, 0);			/* chunks 2,3 (operands persisted) -> out[1] */
	exe(0, 0, TNPU_DISPATCH_F_RF_RESTORE);	/* chunks 0,1 again */
	exe(0, LAST, 0);			/* + chunks 2,3 -> out[0] again (restored ST addr) */
	get(512, 1024, 8);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(out[1], half1);
	cr_assert_eq(out[0], full, "RF_RESTORE restarted the walk; accumulation spans two EXEs");
	(void)half0;
}

Test(isa, scalar_unit_wrap_step_nests_two_loops)
{
	int8_t *a = (int8_t *)H(0);
	int32_t *out = (int32_t *)(void *)H(1024);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[3] = {
		opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(400, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		opnd(512, 0, 0, 4, 1, 1, TNPU_DTYPE_INT32, 0),
	};

	/* A addresses: 0, 4, then wrap (+100) 108, 112 */
	ops[0].su_delta = 4;
	ops[0].su_wrap = 2;
	ops[0].su_wrap_delta = 100;
	memset(H(0), 0, 400);
	for (int k = 0; k < 4; k++) {
		a[0 + k] = 1;
		a[4 + k] = 2;
		a[8 + k] = 50;	/* skipped by the wrap */
		a[108 + k] = 4;
		a[112 + k] = 8;
	}
	memset(H(400), 1, 4);	/* B = ones */
	put(0, 0, 404);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .mode = TNPU_CFG_MODE_PIPE4 |
					 TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .loop_start = 0, .loop_end = 2,
					 .repeat = 4 }, ins, ops);
	exe(0, LAST, 0);
	get(512, 1024, 4);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(out[0], 4 * (1 + 2 + 4 + 8));
}

/* tm x K (A) times K x tn (B) on every PE with zero-skipping. */
Test(isa, zero_skipping_counts_only_nonzero_pairs_and_keeps_results)
{
	uint64_t seed = 11;
	int8_t *a = (int8_t *)H(0), *b = (int8_t *)H(256);
	int32_t *out = (int32_t *)(void *)H(2048);
	int32_t ref[4 * 4];
	uint64_t eff = 0;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 1), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 16, 4, 16, TNPU_DTYPE_INT8, 0),
		opnd(256, 0, 0, 4, 16, 4, TNPU_DTYPE_INT8, 0),
		opnd(1024, 0, 0, 16, 4, 4, TNPU_DTYPE_INT32, 0),
	};

	for (int i = 0; i < 64; i++) {
		a[i] = (trng(&seed) % 3) ? 0 : (int8_t)(trng(&seed) | 1);
		b[i] = (trng(&seed) % 2) ? 0 : (int8_t)(trng(&seed) | 1);
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			ref[i * 4 + j] = 0;
			for (int k = 0; k < 16; k++) {
				ref[i * 4 + j] += a[i * 16 + k] * b[k * 4 + j];
				eff += a[i * 16 + k] != 0 && b[k * 4 + j] != 0;
			}
		}
	put(0, 0, 320);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	get(1024, 2048, 64);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 16; i++)
		cr_assert_eq(out[i], ref[i]);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], 4 * eff, "4 PEs, same tile");
	cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], 4 * 4 * 4 * 16);
	cr_assert_lt(res.counters[TNPU_CNT_MACS_EFFECTIVE], res.counters[TNPU_CNT_MACS_DENSE]);
}

Test(isa, sparse_value_index_weights_match_dense_and_skip_zeros)
{
	uint64_t seed = 5;
	int8_t *a = (int8_t *)H(0), dense[16 * 4];
	struct tnpu_sparse_i8 *sw = (struct tnpu_sparse_i8 *)(void *)H(512);
	int32_t *out = (int32_t *)(void *)H(4096);
	uint64_t eff = 0;
	const int slots = 6;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 16, 4, 16, TNPU_DTYPE_INT8, 0),
		opnd(512, 0, 0, slots * 4, slots, 4, TNPU_DTYPE_INT8, TNPU_OPF_SPARSE),
		opnd(2048, 0, 0, 16, 4, 4, TNPU_DTYPE_INT32, 0),
	};

	memset(dense, 0, sizeof(dense));
	memset(sw, 0, 4 * slots * 4);
	for (int i = 0; i < 64; i++)
		a[i] = (trng(&seed) % 4) ? (int8_t)(trng(&seed) | 1) : 0;
	for (int n = 0; n < 4; n++) {
		int used = 0;

		for (int k = 0; k < 16 && used < slots - 1; k++) {
			if (trng(&seed) % 3)
				continue;
			dense[k * 4 + n] = (int8_t)(trng(&seed) | 1);
			sw[n * slots + used].index = (uint16_t)k;
			sw[n * slots + used].value = dense[k * 4 + n];
			used++;
			for (int i = 0; i < 4; i++)
				eff += a[i * 16 + k] != 0;
		}
		sw[n * slots + used].index = 999;	/* zero-value padding: index ignored */
	}
	put(0, 0, 512 + 4 * slots * 4);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	get(2048, 4096, 64);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			int32_t r = 0;

			for (int k = 0; k < 16; k++)
				r += a[i * 16 + k] * dense[k * 4 + j];
			cr_assert_eq(out[i * 4 + j], r);
		}
	cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], 4 * eff);
	/* an index beyond K is an error */
	sw[0].index = 16;
	sw[0].value = 1;
	put(0, 0, 512 + 4 * slots * 4);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_SPARSE_INDEX);
}

/* Same accumulator through the chained SFU (MAC.CHAIN) and through a decoupled SFU APPLY. */
static uint64_t sfu_run(bool chained, int8_t *outv)
{
	int8_t *a = (int8_t *)H(0), *b = (int8_t *)H(256);
	int32_t *bias = (int32_t *)(void *)H(512);
	uint16_t ins_ch[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
			      TNPU_INSN_ST(0, 2, 0) };
	uint16_t ins_dc[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			      TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops[4] = {
		opnd(0, 0, 0, 16, 4, 16, TNPU_DTYPE_INT8, 0),
		opnd(256, 0, 0, 4, 16, 4, TNPU_DTYPE_INT8, 0),
		opnd(1024, 0, 0, 4, 4, 4, TNPU_DTYPE_INT8, 0),
	};
	struct tnpu_sfu_param sp = { .bias_addr = 512, .scale = 3, .ops = TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU |
				     TNPU_SFU_OP_REQUANT, .shift = 4, .zero_point = -5, .out_dtype = TNPU_DTYPE_INT8 };

	memcpy(&ops[3], &sp, 32);
	for (int i = 0; i < 64; i++) {
		a[i] = (int8_t)(i * 7 - 100);
		b[i] = (int8_t)(31 - i);
	}
	for (int j = 0; j < 4; j++)
		bias[j] = 100 * j - 150;
	put(0, 0, 528);
	if (chained)
		config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 4, .loop_end = 2, .repeat = 1,
						 .sfu_rf = 3 }, ins_ch, ops);
	else
		config(0, (struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 4, .loop_end = 2, .repeat = 1 },
		       ins_dc, ops);
	exe(0, LAST, 0);
	get(1024, 4096, 16);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	memcpy(outv, H(4096), 16);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			int32_t acc = bias[j];
			int64_t q;

			for (int k = 0; k < 16; k++)
				acc += a[i * 16 + k] * b[k * 4 + j];
			acc = acc < 0 ? 0 : acc;
			q = (((int64_t)acc * 3 + 8) >> 4) - 5;
			q = q < -128 ? -128 : (q > 127 ? 127 : q);
			cr_assert_eq(outv[i * 4 + j], (int8_t)q, "(%d,%d)", i, j);
		}
	return res.counters[TNPU_CNT_OQ_ACCESSES];
}

Test(isa, sfu_chained_uses_one_output_queue_access_decoupled_three)
{
	int8_t o1[16], o2[16];
	uint64_t chained = sfu_run(true, o1), decoupled = sfu_run(false, o2);

	cr_assert_eq(memcmp(o1, o2, 16), 0);
	cr_assert_eq(chained, 16 * 4, "1 access x 16 elements x 4 PEs");
	cr_assert_eq(decoupled, 3 * 16 * 4);
}

Test(isa, sfu_clamp_pass_and_fp32_functions)
{
	float *a = (float *)(void *)H(0), *b = (float *)(void *)H(256), *bias = (float *)(void *)H(512);
	float *out = (float *)(void *)H(4096);
	int32_t *raw = (int32_t *)(void *)H(8192);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops[4] = {
		opnd(0, 0, 0, 16, 2, 4, TNPU_DTYPE_FP32, 0),
		opnd(256, 0, 0, 8, 4, 2, TNPU_DTYPE_FP32, 0),
		opnd(1024, 0, 0, 8, 2, 2, TNPU_DTYPE_FP32, 0),
	};
	float two = 2.0f, lo = 0.0f, hi = 6.0f;
	struct tnpu_sfu_param sp = { .bias_addr = 512, .ops = TNPU_SFU_OP_BIAS | TNPU_SFU_OP_CLAMP |
				     TNPU_SFU_OP_REQUANT, .out_dtype = TNPU_DTYPE_FP32 };

	memcpy(&sp.scale, &two, 4);
	memcpy(&sp.lo, &lo, 4);
	memcpy(&sp.hi, &hi, 4);
	memcpy(&ops[3], &sp, 32);
	for (int i = 0; i < 8; i++) {
		a[i] = (float)i - 3.0f;
		b[i] = 0.5f * (float)(i % 3) - 0.25f;
	}
	bias[0] = 1.0f;
	bias[1] = -20.0f;
	put(0, 0, 520);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 4, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	get(1024, 4096, 16);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			float x = bias[j];

			for (int k = 0; k < 4; k++)
				x += a[i * 4 + k] * b[k * 2 + j];
			x = x < 0 ? 0 : (x > 6 ? 6 : x);
			cr_assert_float_eq(out[i * 2 + j], x * 2.0f, 1e-5f);
		}
	/* SFU PASS = raw accumulator into the output queue, 1 access per element */
	{
		uint16_t ins2[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),
				    TNPU_INSN_MAC(0, 0, 2, 0, 0), TNPU_INSN_SFU(TNPU_SFU_FN_PASS, 0, 2),
				    TNPU_INSN_ST(2, 2, 0) };
		struct tnpu_operand o2[3] = {
			opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
			opnd(64, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
			opnd(128, 0, 0, 4, 1, 1, TNPU_DTYPE_INT32, 0),
		};

		memset(H(0), 3, 4);
		memset(H(64), 5, 4);
		put(0, 0, 128);
		config(1, (struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = 3, .loop_end = 2, .repeat = 1 },
		       ins2, o2);
		exe(1, LAST, 0);
		get(128, 8192, 4);
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		cr_assert_eq(raw[0], 60);
		cr_assert_eq(res.counters[TNPU_CNT_OQ_ACCESSES], 4);
	}
}

Test(isa, load_balancing_shares_work_between_neighbour_pes)
{
	/* PE 0 of each cluster has a dense A tile, PE 1 an all-zero one. */
	int8_t *a = (int8_t *)H(0);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0) };
	uint16_t ins_lb[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 1, 0) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 1024, 64, 16, 64, TNPU_DTYPE_INT8, 0),
		opnd(4096, 0, 0, 16, 64, 16, TNPU_DTYPE_INT8, 0),
	};
	uint64_t plain, lb;

	memset(H(0), 0, 2048);
	for (int i = 0; i < 1024; i++)
		a[i] = 1;
	memset(H(4096), 1, 1024);
	put(0, 0, 2048);
	put(4096, 4096, 1024);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 3, .n_operands = 2, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	plain = res.counters[TNPU_CNT_COMPUTE_CYCLES];
	put(0, 0, 2048);
	put(4096, 4096, 1024);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 3, .n_operands = 2, .loop_end = 2, .repeat = 1 }, ins_lb, ops);
	exe(0, LAST, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	lb = res.counters[TNPU_CNT_COMPUTE_CYCLES];
	/* 16x16x64 = 16384 effective MACs on one PE: 1024 cycles alone, 512 shared */
	cr_assert_eq(plain - lb, 16384 / TNPU_RATE_MAC_INT8 / 2);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], 2 * 16384);
}

Test(isa, weight_queue_modes_sq_consumes_rq_keeps_sw_slides)
{
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(64, 0, 0, 4, 4, 1, TNPU_DTYPE_INT8, 0),
	};
	uint16_t ins_sw[] = { TNPU_INSN_LD(0, 0, 1, 0) };
	struct tnpu_operand sw_ops[] = { opnd(64, 0, 0, 4, 8, 4, TNPU_DTYPE_INT8, 0) };

	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 2, .loop_end = 3, .repeat = 1,
					 .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_SQ) }, ins, ops);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_SLOT_EMPTY, "SQ: the second MAC finds the weights consumed");
	cr_assert_eq(res.err_info >> 16, 3);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 2, .loop_end = 3, .repeat = 1,
					 .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ) }, ins, ops);
	exe(0, LAST, 0);
	cr_assert_eq(run(), 0, "RQ keeps the weights: %s", tnpu_err_name(res.error));
	/* SW: each LD slides the 8-row window by one row: only 4 new bytes per PE tile */
	sw_ops[0].su_delta = 4;
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 1, .n_operands = 1, .loop_end = 0, .repeat = 3,
					 .mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_SW) },
	       ins_sw, sw_ops);
	exe(0, 0, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG] - 1, 32 + 4 + 4);
}

Test(isa, malformed_programs_stop_with_documented_errors)
{
	uint16_t good[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			    TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(64, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		opnd(128, 0, 0, 4, 1, 1, TNPU_DTYPE_INT32, 0),
	};
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 };
	struct tnpu_operand bad[3];
	uint16_t ins[4];
	struct tpkt p;

	exe(5, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_IBUF_EMPTY);
	cr_assert_eq(res.err_info, 0 | 5 << 8 | 0xFF << 16);

	memcpy(ins, good, sizeof(ins));
	ins[2] |= 0x0800;	/* MAC reserved bit (bit 10 is DW since the depthwise block) */
	config(0, h, ins, ops);
	cr_assert_eq(run(), TNPU_ERR_INSTR);
	cr_assert_eq(res.err_info >> 16, 2);
	memcpy(ins, good, sizeof(ins));
	ins[0] |= 0x1000;	/* bits [15:12] */
	config(0, h, ins, ops);
	cr_assert_eq(run(), TNPU_ERR_INSTR);
	memcpy(ins, good, sizeof(ins));
	ins[3] = TNPU_INSN_SFU(2, 0, 0);	/* invalid SFU class */
	config(0, h, ins, ops);
	cr_assert_eq(run(), TNPU_ERR_INSTR);

	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_start = 3, .loop_end = 2,
					 .repeat = 1 }, good, ops);
	cr_assert_eq(run(), TNPU_ERR_CONFIG);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 0 }, good, ops);
	cr_assert_eq(run(), TNPU_ERR_CONFIG);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .rf_base = 49, .loop_end = 2,
					 .repeat = 1 }, good, ops);
	cr_assert_eq(run(), TNPU_ERR_CONFIG);
	tpkt_config(&p, 0, &h, good, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len - 1);	/* truncated data */
	cr_assert_eq(run(), TNPU_ERR_CONFIG);
	p.buf[0] |= TNPU_PKT_LAST;	/* reserved bit in a CONFIG byte */
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	cr_assert_eq(run(), TNPU_ERR_PACKET);

	memcpy(bad, ops, sizeof(bad));
	bad[0].dtype = TNPU_DTYPE_INT32;	/* LD of int32 */
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_OPERAND);
	memcpy(bad, ops, sizeof(bad));
	bad[1].dtype = TNPU_DTYPE_FP32;
	bad[1].pitch = 16;
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_DTYPE);
	memcpy(bad, ops, sizeof(bad));
	bad[1].cols = 3;	/* K mismatch */
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_OPERAND);
	memcpy(bad, ops, sizeof(bad));
	bad[2].cols = 2;	/* ST shape */
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_ACC_SHAPE);
	memcpy(bad, ops, sizeof(bad));
	bad[0].addr = s.cfg.sram / 2 - 2;	/* tile crosses the end of the half */
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_addr, s.cfg.sram / 2 - 2);
	memcpy(bad, ops, sizeof(bad));
	bad[0].pe_stride = -8;	/* PE 1 goes below 0 */
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_SRAM_RANGE);
	memcpy(bad, ops, sizeof(bad));
	bad[2].pitch = 2;	/* int32 pitch misaligned */
	bad[2].rows = 1;
	bad[2].addr = 130;
	config(0, h, good, bad);
	exe(0, LAST, 0);
	cr_assert_eq(run(), TNPU_ERR_ALIGN);
	{
		uint16_t ins2[] = { TNPU_INSN_MAC(0, 0, 0, 0, 0) };

		config(0, (struct tnpu_cfg_hdr){ .n_instr = 1, .loop_end = 0, .repeat = 1 }, ins2, ops);
		exe(0, LAST, 0);
		cr_assert_eq(run(), TNPU_ERR_SLOT_EMPTY);
	}
	{
		uint16_t ins3[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),
				    TNPU_INSN_MAC(0, 0, 0, 0, 0), TNPU_INSN_SFU(1, 3, 0) };
		struct tnpu_operand o4[4];
		struct tnpu_sfu_param sp = { .ops = TNPU_SFU_OP_REQUANT, .shift = 63, .out_dtype = TNPU_DTYPE_INT8 };

		memcpy(o4, ops, sizeof(ops));
		memcpy(&o4[3], &sp, 32);
		config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 4, .loop_end = 2, .repeat = 1 },
		       ins3, o4);
		exe(0, LAST, 0);
		cr_assert_eq(run(), TNPU_ERR_SFU_PARAM);
	}
	/* EXE patches: invalid field, then a valid ADDR patch */
	{
		struct tnpu_exe_patch bp = { .rf = 0, .field = 9 };

		config(0, h, good, ops);
		tpkt_exe(&p, 0, LAST, &bp, 1);
		tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
		cr_assert_eq(run(), TNPU_ERR_PACKET);
	}
	/* DISPATCH field errors */
	tpkt_exe(&p, 0, LAST, NULL, 0);
	tcb_dispatch(&cb, 0, 3, 0, 0, p.buf, p.len);
	cr_assert_eq(run(), TNPU_ERR_DISPATCH);
	tpkt_config(&p, 0, &h, good, ops);
	tcb_dispatch(&cb, 0, 0, 0, TNPU_DISPATCH_F_RF_RESTORE, p.buf, p.len);
	cr_assert_eq(run(), TNPU_ERR_DISPATCH);
}

Test(isa, exe_patches_change_an_operand_for_one_edge_tile)
{
	int32_t *out = (int32_t *)(void *)H(1024);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, 0),
		opnd(64, 0, 0, 4, 1, 4, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		opnd(128, 0, 0, 4, 1, 1, TNPU_DTYPE_INT32, 0),
	};
	struct tnpu_exe_patch pt = { .rf = 0, .field = TNPU_PATCH_ADDR, .value = 32 };
	struct tpkt p;

	memset(H(0), 1, 4);
	memset(H(32), 2, 4);
	memset(H(64), 3, 4);
	put(0, 0, 128);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	tpkt_exe(&p, 0, LAST, &pt, 1);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	get(128, 1024, 4);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(out[0], 4 * 2 * 3);
}

static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);	/* test values are exactly representable */
}

static float from_bf16(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

Test(isa, bf16_mac_accumulates_in_fp32_and_skips_signed_zeros)
{
	uint16_t *a = (uint16_t *)(void *)H(0), *b = (uint16_t *)(void *)H(512);
	float *out = (float *)(void *)H(4096);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	/* PE (c,p): A = 4x8 at c*64, B = 8x4 at 512 + p*8 (pitch 16 = two PEs side by side) */
	struct tnpu_operand ops[] = {
		opnd(0, 64, 0, 16, 4, 8, TNPU_DTYPE_BF16, 0),
		opnd(512, 0, 8, 16, 8, 4, TNPU_DTYPE_BF16, 0),
		opnd(1024, 128, 16, 32, 4, 4, TNPU_DTYPE_FP32, 0),
	};
	uint64_t eff = 0;

	for (int i = 0; i < 64; i++)
		a[i] = (i % 5 == 0) ? (i % 2 ? 0x8000 : 0) : to_bf16((float)(i % 7) - 2.5f);
	for (int i = 0; i < 64; i++)
		b[i] = to_bf16(0.25f * (float)(i % 9) - 1.0f);
	put(0, 0, 128);
	put(512, 512, 128);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(0, LAST, 0);
	get(1024, 4096, 256);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (int c = 0; c < 2; c++)
		for (int p = 0; p < 2; p++)
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++) {
					float ref = 0;

					for (int k = 0; k < 8; k++) {
						float x = from_bf16(a[c * 32 + i * 8 + k]);

						ref += x * from_bf16(b[k * 8 + p * 4 + j]);
						eff += x != 0.0f;
					}
					cr_assert_float_eq(out[c * 32 + i * 8 + p * 4 + j], ref, 1e-4f,
							   "PE (%d,%d) [%d][%d]: %g vs %g", c, p, i, j,
							   out[c * 32 + i * 8 + p * 4 + j], ref);
				}
	cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], eff);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], 4 * 4 * 4 * 8);
}

/* A PE's element (i, k) of A and (k, j) of B (trans: B stored n x k) at their operand addresses. */
static uint32_t a_at(const struct tnpu_operand *o, unsigned c, unsigned p, unsigned i, unsigned k, unsigned e)
{
	return o->addr + (uint32_t)((int32_t)c * o->col_stride + (int32_t)p * o->pe_stride) + i * o->pitch + k * e;
}

static uint32_t b_at(const struct tnpu_operand *o, bool trans, unsigned c, unsigned p, unsigned k, unsigned j,
		     unsigned e)
{
	uint32_t t = o->addr + (uint32_t)((int32_t)c * o->col_stride + (int32_t)p * o->pe_stride);

	return trans ? t + j * o->pitch + k * e : t + k * o->pitch + j * e;
}

/* Checks the 2 clusters x 2 PEs of C (at host offset out, PE tiles side by side) against A.B computed
 * from the host copy of the operands: fp32 one fmaf chain in k order from +0 (bit for bit), int8 exact. */
static void check_layout_product(const struct tnpu_operand *A, const struct tnpu_operand *B, bool f32, bool trans,
				 uint32_t out, const char *what)
{
	unsigned e = f32 ? 4 : 1, tm = A->rows, K = A->cols, tn = trans ? B->rows : B->cols;

	for (unsigned c = 0; c < 2; c++)
		for (unsigned p = 0; p < 2; p++)
			for (unsigned i = 0; i < tm; i++)
				for (unsigned j = 0; j < tn; j++) {
					float fs = 0.0f;
					int32_t is = 0;

					for (unsigned k = 0; k < K; k++) {
						const uint8_t *x = H(a_at(A, c, p, i, k, e)), *y = H(b_at(B, trans, c, p, k, j, e));
						float xf, yf;

						memcpy(&xf, x, 4);
						memcpy(&yf, y, 4);
						if (f32)
							fs = fmaf(xf, yf, fs);
						else
							is += (int8_t)*x * (int8_t)*y;
					}
					cr_assert(!memcmp(H(out + ((c * tm + i) * 2 * tn + p * tn + j) * 4), f32 ? (void *)&fs : (void *)&is, 4),
						  "%s: PE (%u,%u) [%u][%u]", what, c, p, i, j);
				}
}

/*
 * Every way a row's operands can lie (A shared, one block per cluster with or without a gap, one per
 * PE; B shared, one block per cluster with its PEs side by side, one per PE; B stored k x n or n x k),
 * fp32 and int8, k on both sides of the kernels' small-k limit and tiles across their micro-tiles:
 * each PE's C is its own A times its own B.  The model runs a row as one GEMM, one per cluster or one
 * per PE depending on the layout; all must agree with the plain reference.
 */
Test(isa, mac_operand_layouts_all_give_each_pe_its_own_product)
{
	static const unsigned shapes[][3] = { { 3, 3, 7 }, { 9, 5, 19 }, { 17, 17, 33 } };	/* tm, tn, K */
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	const uint32_t B0 = 12288, C0 = 24576, OUT = 32768, P = 2;
	uint64_t seed = 0x5eed1234;

	for (unsigned f32 = 0; f32 < 2; f32++) {
		unsigned e = f32 ? 4 : 1;
		uint8_t dt = f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;

		for (uint32_t i = 0; i < C0; i += 4) {
			uint64_t r = trng(&seed);
			float v = (float)(int32_t)(r >> 32) * 0x1p-30f;	/* full mantissas, [-2, 2) */

			memcpy(H(i), f32 ? (void *)&v : (void *)&r, 4);
		}
		for (unsigned sh = 0; sh < 3; sh++) {
			unsigned tm = shapes[sh][0], tn = shapes[sh][1], K = shapes[sh][2];
			uint32_t ap = K * e + 8, tbp = K * e + 12, nbp = P * (tn * e + 16) + 8;
			int32_t at = (int32_t)(tm * ap);
			int32_t alay[4][2] = { { 0, 0 }, { at, 0 }, { at + 64, 0 }, { 2 * (at + 32), at + 32 } };

			for (unsigned trans = 0; trans < 2; trans++) {
				int32_t bt = trans ? (int32_t)(tn * tbp) : (int32_t)(tn * e);
				int32_t bcl = trans ? (int32_t)P * bt + 64 : (int32_t)(K * nbp) + 64;
				int32_t blay[3][2] = { { 0, bt }, { bcl, bt }, { 2 * (bt + 32), bt + 16 } };

				for (unsigned al = 0; al < 4; al++) {
					for (unsigned bl = 0; bl < 3; bl++) {
						struct tnpu_operand ops[] = {
							opnd(0, alay[al][0], alay[al][1], ap, (uint16_t)tm, (uint16_t)K, dt, 0),
							trans ? opnd(B0, blay[bl][0], blay[bl][1], tbp, (uint16_t)tn, (uint16_t)K,
								     dt, TNPU_OPF_TRANS)
							      : opnd(B0, blay[bl][0], blay[bl][1], nbp, (uint16_t)K, (uint16_t)tn,
								     dt, 0),
							opnd(C0, (int32_t)(tm * P * tn * 4), (int32_t)(tn * 4), P * tn * 4, (uint16_t)tm,
							     (uint16_t)tn, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32, 0),
						};
						char what[64];

						put(0, 0, C0);	/* every job starts with a clear SRAM */
						config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2,
										 .repeat = 1 }, ins, ops);
						exe(0, LAST, 0);
						get(C0, OUT, 2 * tm * P * tn * 4);
						cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
						snprintf(what, sizeof(what), "%s shape %u trans %u A %u B %u", f32 ? "fp32" : "int8",
							 sh, trans, al, bl);
						check_layout_product(&ops[0], &ops[1], f32, trans, OUT, what);
					}
				}
			}
		}
	}
}

/* One SFU case: the accumulator of a small GEMM (2 rows per PE tile), then the record's ops (isa.md
 * "SFU parameter record", vector-units.md "SFU residual operand"), the residual tiles and the column
 * vectors laid out side by side over the PEs or apart. */
struct sfu_case {
	uint8_t kind;		/* 0 fp32, 1 int32, 2 int8 (REQUANT), 3 int8 through QCOL records */
	uint8_t ops;		/* BIAS / RELU / CLAMP / RESIDUAL (fp32 and kind 2 may add REQUANT) */
	bool r_whole, v_whole;
	bool v_shared;		/* one column vector for all the PEs of a cluster (bias PE stride 0) */
};

static void sfu_case_run(const struct sfu_case *sc, uint64_t *seed)
{
	enum { TM = 2, TN = 3, K = 4, P = 2, A0 = 0, B0 = 256, V0 = 1024, R0 = 2048, O0 = 4096, OUT = 8192 };
	bool f32 = sc->kind == 0, qcol = sc->kind == 3, i8 = sc->kind >= 2;
	unsigned e = f32 ? 4 : 1, vb = qcol ? 12 : 4, oe = i8 ? 1 : 4;
	uint8_t dt = f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, acc_dt = f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32;
	uint8_t ops = (uint8_t)(sc->ops | (i8 ? TNPU_SFU_OP_REQUANT : 0) | (qcol ? TNPU_SFU_OP_QCOL : 0));
	uint32_t rps = sc->r_whole ? TN * 4 : TN * 4 + 16, rpitch = P * rps + 8;
	int32_t vps = sc->v_shared ? 0 : sc->v_whole ? (int32_t)(TN * vb) : (int32_t)(TN * vb + 8);
	float flo = -0.75f, fhi = 1.5f, fsc = 0.375f;
	int32_t ilo = -3000, ihi = 4000, iscale = 12345;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
	struct tnpu_operand ops_[5] = {
		opnd(A0, TM * K * e, 0, K * e, TM, K, dt, 0),
		opnd(B0, (int32_t)(K * P * TN * e), (int32_t)(TN * e), P * TN * e, K, TN, dt, 0),
		opnd(O0, TM * P * TN * oe, (int32_t)(TN * oe), P * TN * oe, TM, TN, i8 ? TNPU_DTYPE_INT8 : acc_dt, 0),
		{ 0 },
		opnd(R0, (int32_t)(TM * rpitch), (int32_t)rps, rpitch, TM, TN, acc_dt, 0),
	};
	struct tnpu_sfu_param sp = {
		.bias_addr = V0, .bias_col_stride = 2 * vps + 4, .bias_pe_stride = vps, .ops = ops,
		.shift = i8 && !qcol ? 9 : 0, .zero_point = i8 ? -3 : 0, .out_dtype = i8 ? TNPU_DTYPE_INT8 : acc_dt,
	};

	if (f32) {
		memcpy(&sp.lo, &flo, 4);
		memcpy(&sp.hi, &fhi, 4);
		if (ops & TNPU_SFU_OP_REQUANT)
			memcpy(&sp.scale, &fsc, 4);
	} else {
		sp.lo = (uint32_t)ilo;
		sp.hi = (uint32_t)ihi;
		sp.scale = i8 && !qcol ? (uint32_t)iscale : 0;
	}
	for (uint32_t i = 0; i < O0; i += 4) {
		uint64_t r = trng(seed);
		float f = (float)(int32_t)(r >> 32) * 0x1p-28f;
		int32_t v = (int32_t)(r % 20001) - 10000;

		if (i >= V0 && qcol && (i - V0) % 12 == 8)
			v = (int32_t)(r % 20);	/* a QCOL record's shift */
		else if (i >= V0 && qcol && (i - V0) % 12 == 4)
			v = (int32_t)(r >> 40);	/* its multiplier */
		if (f32)
			memcpy(H(i), &f, 4);
		else
			memcpy(H(i), i < V0 ? (void *)&r : (void *)&v, 4);
	}
	memcpy(&ops_[3], &sp, 32);
	put(0, 0, O0);
	config(0, (struct tnpu_cfg_hdr){ .n_instr = 5, .n_operands = (ops & TNPU_SFU_OP_RESIDUAL) ? 5 : 4, .loop_end = 2,
					 .repeat = 1 }, ins, ops_);
	exe(0, LAST, 0);
	get(O0, OUT, 2 * TM * P * TN * oe);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (unsigned c = 0; c < 2; c++)
		for (unsigned p = 0; p < P; p++)
			for (unsigned i = 0; i < TM; i++)
				for (unsigned j = 0; j < TN; j++) {
					const uint8_t *vec = H(V0 + c * (uint32_t)sp.bias_col_stride + p * (uint32_t)vps + vb * j);
					const uint8_t *r = H(R0 + c * TM * rpitch + p * rps + i * rpitch + 4 * j);
					const uint8_t *o = H(OUT + ((c * TM + i) * P * TN + p * TN + j) * oe);
					float fs = 0.0f, fb, fr;
					int32_t is = 0, ib, ir, m = iscale;
					uint32_t sh = sp.shift;
					int64_t y;

					for (unsigned k = 0; k < K; k++) {
						const uint8_t *x = H(A0 + c * TM * K * e + i * K * e + k * e);
						const uint8_t *w = H(B0 + c * K * P * TN * e + p * TN * e + k * P * TN * e + j * e);
						float xf, wf;

						memcpy(&xf, x, 4);
						memcpy(&wf, w, 4);
						if (f32)
							fs = fmaf(xf, wf, fs);
						else
							is += (int8_t)*x * (int8_t)*w;
					}
					memcpy(&fb, vec, 4);
					memcpy(&ib, vec, 4);
					memcpy(&fr, r, 4);
					memcpy(&ir, r, 4);
					if (f32) {
						if (ops & TNPU_SFU_OP_BIAS)
							fs = fs + fb;
						if (ops & TNPU_SFU_OP_RESIDUAL)
							fs = fs + fr;
						if (ops & TNPU_SFU_OP_RELU)
							fs = fs < 0.0f ? 0.0f : fs;
						if (ops & TNPU_SFU_OP_CLAMP)
							fs = fs < flo ? flo : (fs > fhi ? fhi : fs);
						if (ops & TNPU_SFU_OP_REQUANT)
							fs = fs * fsc;
						cr_assert(!memcmp(o, &fs, 4), "fp32 ops 0x%x whole %d/%d PE (%u,%u) [%u][%u]", ops,
							  sc->r_whole, sc->v_whole, c, p, i, j);
						continue;
					}
					if (ops & TNPU_SFU_OP_BIAS)
						is = (int32_t)((uint32_t)is + (uint32_t)ib);
					if (ops & TNPU_SFU_OP_RESIDUAL)
						is = (int32_t)((uint32_t)is + (uint32_t)ir);
					if (ops & TNPU_SFU_OP_RELU)
						is = is < 0 ? 0 : is;
					if (ops & TNPU_SFU_OP_CLAMP)
						is = is < ilo ? ilo : (is > ihi ? ihi : is);
					if (!i8) {
						cr_assert(!memcmp(o, &is, 4), "int32 ops 0x%x whole %d/%d PE (%u,%u) [%u][%u]", ops,
							  sc->r_whole, sc->v_whole, c, p, i, j);
						continue;
					}
					if (qcol) {
						memcpy(&m, vec + 4, 4);
						memcpy(&sh, vec + 8, 4);
						sh = sh > 62 ? 62 : sh;	/* isa.md: a shift above 62 acts as 62 */
					}
					y = (((int64_t)is * m + (sh ? (int64_t)1 << (sh - 1) : 0)) >> sh) - 3;
					y = y < -128 ? -128 : (y > 127 ? 127 : y);
					cr_assert_eq((int8_t)*o, (int8_t)y, "int8 kind %u ops 0x%x whole %d/%d PE (%u,%u) [%u][%u]",
						     sc->kind, ops, sc->r_whole, sc->v_whole, c, p, i, j);
				}
}

/* The SFU on every layout the model runs differently — the column vectors (bias, QCOL records) and
 * the residual tiles side by side over a cluster's PEs (a row of the whole cluster at once) or apart
 * (PE by PE), or one vector shared by the cluster's PEs (repeated across the row once) — fp32, int32,
 * int8 and QCOL int8, every combination of BIAS, RESIDUAL, RELU and CLAMP (and fp32 REQUANT), against
 * the per-element definition in the spec's order: bias, residual, ReLU, clamp, requantisation. */
Test(isa, sfu_every_layout_and_op_matches_the_definition)
{
	static const uint8_t opsets[] = {
		0, TNPU_SFU_OP_BIAS, TNPU_SFU_OP_RELU, TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU, TNPU_SFU_OP_CLAMP,
		TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU | TNPU_SFU_OP_CLAMP,
	};
	uint64_t seed = 0x5eedfe11;

	for (uint8_t kind = 0; kind < 4; kind++)
		for (unsigned o = 0; o < sizeof(opsets) / sizeof(opsets[0]); o++)
			for (unsigned m = 0; m < 32; m++) {
				struct sfu_case sc = { .kind = kind, .ops = opsets[o], .r_whole = m & 2, .v_whole = m & 4,
						       .v_shared = m & 16 };

				if ((kind && (m & 8)) || ((m & 16) && (m & 4)))
					continue;

				if (m & 1)
					sc.ops |= TNPU_SFU_OP_RESIDUAL;
				if (m & 8)
					sc.ops |= TNPU_SFU_OP_REQUANT;	/* fp32: a scale */
				sfu_case_run(&sc, &seed);
			}
}

/*
 * One B per cluster shared by its 16 PEs (B's PE stride 0) and A per PE: the pointwise lowering's
 * pixel blocks over PEs (row mode: a PE's A is an output row's window, rows one stride apart and
 * overlapping, k = S*C).  The model runs such a MAC as one batched product per cluster, over the PEs
 * or over the tile's rows (qemu-device.md "How the model computes"); here two MACs into one
 * accumulator (the second accumulates), every A and B layout, fp32 (bit for bit against one fmaf
 * chain in k order) and int8 (exact), against the plain definition.
 */
static struct tsim s16;
static uint64_t host16;

static void setup16(void)
{
	struct tnpu_config cfg = small_cfg();

	cfg.rows = 1;
	cfg.cols = 2;
	cfg.pes = 16;
	cfg.sram = 512 * 1024;
	cr_assert_eq(tsim_init(&s16, &cfg, 32 << 20), 0);
	host16 = tsim_buf(&s16, 512 * 1024);
	tcb_init(&cb);
}

static void teardown16(void)
{
	tcb_free(&cb);
	tsim_fini(&s16);
}

static uint8_t *H16(uint32_t off)
{
	return (uint8_t *)tsim_ptr(&s16, host16) + off;
}

/* PE (c, p)'s element (i, k) of A (or (k, j) of B) at host offset addr + c*cs + p*ps + ... */
static uint32_t op_at(const struct tnpu_operand *o, unsigned c, unsigned p, unsigned r, unsigned q, unsigned e)
{
	return (uint32_t)((int64_t)o->addr + (int64_t)c * o->col_stride + (int64_t)p * o->pe_stride) + r * o->pitch +
	       q * e;
}

Test(isa16, mac_b_shared_by_the_pes_a_per_pe_matches_the_definition, .init = setup16, .fini = teardown16)
{
	static const unsigned shapes[][3] = {{28, 2, 3}, {1, 6, 40}, {3, 5, 24}, {17, 1, 9}, {2, 16, 11}};
	const uint32_t B0 = 96 * 1024, C0 = 160 * 1024, OUT = 256 * 1024, P = 16;
	uint16_t ins[] = {TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),	  TNPU_INSN_MAC(0, 0, 0, 0, 0),
			  TNPU_INSN_LD(3, 1, 0, 0), TNPU_INSN_MAC(1, 0, 0, 0, 0), TNPU_INSN_ST(0, 2, 1)};
	uint64_t seed = 0x5eed4321;
	unsigned cases = 0;

	for (unsigned f32 = 0; f32 < 2; f32++) {
		unsigned e = f32 ? 4 : 1;
		uint8_t dt = f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;

		for (uint32_t i = 0; i < C0; i += 4) {
			uint64_t r = trng(&seed);
			float v = (float)(int32_t)(r >> 32) * 0x1p-30f; /* full mantissas, [-2, 2) */

			memcpy(H16(i), f32 ? (void *)&v : (void *)&r, 4);
		}
		for (unsigned sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
			unsigned tm = shapes[sh][0], tn = shapes[sh][1], K = shapes[sh][2];
			/* A: rows a window apart (overlapping, as row mode's), stacked, or padded; PEs one
			 * padded image row apart, a cluster's pixels after the other's, or shared */
			uint32_t pitches[3] = {e * (1 + sh % 3), K * e, K * e + 8};

			for (unsigned al = 0; al < 6; al++) {
				uint32_t ap = pitches[al % 3];
				int32_t prow = (int32_t)(tm * ap + 2 * e * K), ps = al < 3    ? prow
										    : al == 3 ? 0
											      : (int32_t)(tm * ap);
				int32_t cs = al >= 4 ? (int32_t)P * ps + 64 : 0;

				for (unsigned bl = 0; bl < 4; bl++) {
					bool trans = bl & 1;
					uint32_t bp = trans ? K * e + 4 * (bl >> 1) : tn * e + 8 * (bl >> 1);
					int32_t bcs = (bl >> 1) ? (int32_t)((trans ? tn : K) * bp + 32) : 0;
					struct tnpu_operand ops[] = {
						opnd(0, cs, ps, ap, (uint16_t)tm, (uint16_t)K, dt, 0),
						trans ? opnd(B0, bcs, 0, bp, (uint16_t)tn, (uint16_t)K, dt,
							     TNPU_OPF_TRANS)
						      : opnd(B0, bcs, 0, bp, (uint16_t)K, (uint16_t)tn, dt, 0),
						opnd(C0, (int32_t)(tm * P * tn * 4), (int32_t)(tn * 4), P * tn * 4,
						     (uint16_t)tm, (uint16_t)tn,
						     f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32, 0),
						opnd(e * 5, cs, ps, ap, (uint16_t)tm, (uint16_t)K, dt, 0),
					};
					struct tpkt pk;

					tcb_dma(&cb, true, 0, host16, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, C0, 1, 1);
					tpkt_config(&pk, 0,
						    &(struct tnpu_cfg_hdr){.n_instr = 6,
									   .n_operands = 4,
									   .loop_end = 5,
									   .repeat = 1,
									   .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ)},
						    ins, ops);
					tcb_dispatch(&cb, 0, 0, 0, 0, pk.buf, pk.len);
					tpkt_exe(&pk, 0, LAST, NULL, 0);
					tcb_dispatch(&cb, 0, 0, 0, 0, pk.buf, pk.len);
					tcb_dma(&cb, false, 0, host16 + OUT, 0, 0, 0, 0, C0, 0, 0, 2 * tm * P * tn * 4,
						1, 1);
					tsim_run(&s16, &cb, 0, &res);
					cb.len = 0;
					cr_assert_eq(res.error, 0, "%s", tnpu_err_name(res.error));
					cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], 2ull * 2 * P * tm * tn * K);
					for (unsigned c = 0; c < 2; c++)
						for (unsigned p = 0; p < P; p++)
							for (unsigned i = 0; i < tm; i++)
								for (unsigned j = 0; j < tn; j++) {
									float fs = 0.0f;
									int32_t is = 0;

									for (unsigned m = 0; m < 2; m++)
										for (unsigned k = 0; k < K; k++) {
											const uint8_t *x = H16(
												op_at(&ops[m ? 3 : 0],
												      c, p, i, k, e));
											const uint8_t *y = H16(
												trans ? op_at(&ops[1],
													      c, 0, j,
													      k, e)
												      : op_at(&ops[1],
													      c, 0, k,
													      j, e));
											float xf, yf;

											memcpy(&xf, x, 4);
											memcpy(&yf, y, 4);
											if (f32)
												fs = fmaf(xf, yf, fs);
											else
												is += (int8_t)*x *
												      (int8_t)*y;
										}
									cr_assert(
										!memcmp(H16(OUT +
											    ((c * tm + i) * P * tn +
											     p * tn + j) *
												    4),
											f32 ? (void *)&fs : (void *)&is,
											4),
										"%s tm %u tn %u K %u A %u B %u: PE "
										"(%u,%u) [%u][%u]",
										f32 ? "fp32" : "int8", tm, tn, K, al,
										bl, c, p, i, j);
								}
					cases++;
				}
			}
		}
	}
	cr_assert_eq(cases, 2 * 5 * 6 * 4);
}
