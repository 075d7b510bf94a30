/* SPDX-License-Identifier: MIT */
/* Line state (commands.md "Line state", cycle-model.md "Line-tracked reads"): clean lines are not
 * delivered by a multicast LD, a zero fill cleans lines, an LD waits for exactly the STREAM band row
 * it reads, a STREAM D2H waits for the ST that writes its rows, and the capability bit. */
#include "common.h"

SMALL_SIM_SUITE(stream, 32 << 20, 256 * 1024);

#define AS TNPU_CMD_F_ASYNC


/* AXIS_Z band of `depth` planes (one row of `width` bytes each) for unit 0 (the others' bands are
 * past the last plane: empty). */
static void zbands(bool h2d, uint8_t flags, uint64_t va, uint32_t off, uint32_t width, uint32_t depth)
{
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .size = sizeof(b),
			 .flags = (flags & TNPU_BANDS_F_STREAM) ? AS : 0 },
		.host_va = va, .host_pitch_z = width, .sram_off = off, .sram_pitch_z = width, .width = width,
		.height = 1, .depth = depth, .band_first = 0, .band_step = depth, .band_len = depth,
		.axis = (uint8_t)(TNPU_BANDS_AXIS_Z | flags),
	};

	tcb_raw(&cb, &b, sizeof(b));
}

static void dispatch_f(struct tnpu_cfg_hdr h, const uint16_t *ins, const struct tnpu_operand *ops, uint8_t flags,
		       uint8_t cmd_flags)
{
	struct tpkt p;

	tpkt_config(&p, 0, &h, ins, ops);
	tcb_dispatch(&cb, cmd_flags, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, flags, NULL, 0);
	tcb_dispatch(&cb, cmd_flags, 0, 0, 0, p.buf, p.len);
}

static void dispatch(struct tnpu_cfg_hdr h, const uint16_t *ins, const struct tnpu_operand *ops, uint8_t flags)
{
	dispatch_f(h, ins, ops, flags, AS);
}

/* The multicast block's bytes in lines written this job travel; clean lines read as zero for free. */
Test(stream, mcast_ld_skips_clean_lines_and_a_zero_fill_cleans)
{
	unsigned cols = cfg.cols, pes = cfg.pes;
	uint32_t pitch = 64;	/* one SRAM line per block row */
	struct tnpu_operand ops[1] = { t_opnd(0, (int32_t)(2 * pitch), 4, pitch, 3, 8, TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST;
	uint64_t box_rows = 2 * (cols - 1) + 3, box_w = 4 * (pes - 1) + 8, base;
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };

	/* nothing written: only the 1-byte EXE packet travels */
	dispatch(h, &ld, ops, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	base = res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG];
	cr_assert_eq(base, 1);

	/* rows 0 and 2 written (one as zeros by a plain DMA: written, not clean), row 1 filled then
	 * zero-filled (clean again), the others never written */
	memset(H(0), 5, 64);
	memset(H(64), 0, 64);
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, 64, 1, 1);
	tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, 0, pitch, 64, 7);
	tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, 0, pitch, 64, 0);
	tcb_dma(&cb, true, 0, host + 64, 0, 0, TNPU_DMA_ROW_ALL, 0, 2 * pitch, 0, 0, 64, 1, 1);
	dispatch_f(h, &ld, ops, 0, 0);	/* after the DMAs: an ASYNC EXE would race them (hazards.md) */
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG], 1 + 2 * box_w);
	cr_assert_gt(box_rows, 3);

	/* a partly written line counts whole: 1 byte of row 3 makes its block bytes travel */
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 3 * pitch + 63, 0, 0, 1, 1, 1);
	dispatch_f(h, &ld, ops, 0, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG], 1 + box_w);
}

/* Lines written by DMAs that span many words of the line bitmap (64 lines each), start and end
 * inside a word or on its boundary: a multicast LD over the first 16 KiB delivers exactly their
 * lines (64 bytes each), whatever the writes' overlap. */
Test(stream, mcast_ld_delivers_every_line_a_long_write_touched)
{
	static const uint32_t writes[][2][2] = {	/* up to two (offset, bytes) writes per job */
		{ { 100, 10000 }, { 0, 0 } },	 { { 4095, 2 }, { 0, 0 } },	 { { 8192, 4096 }, { 0, 0 } },
		{ { 130, 1 }, { 4000, 9000 } },	 { { 0, 16384 }, { 0, 0 } },	 { { 64, 4032 }, { 12288, 64 } },
		{ { 1, 4094 }, { 4097, 8190 } },
	};
	struct tnpu_operand ops[1] = { t_opnd(0, 0, 0, 64, 256, 64, TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST;
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };

	memset(H(0), 3, 16384);
	for (unsigned t = 0; t < sizeof(writes) / sizeof(writes[0]); t++) {
		bool line[256] = { false };
		uint64_t want = 0;

		for (unsigned w = 0; w < 2; w++) {
			uint32_t off = writes[t][w][0], len = writes[t][w][1];

			if (!len)
				continue;
			tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, off, 0, 0, len, 1, 1);
			for (uint32_t l = off / 64; l <= (off + len - 1) / 64; l++)
				line[l] = true;
		}
		for (unsigned l = 0; l < 256; l++)
			want += line[l] ? 64 : 0;
		dispatch_f(h, &ld, ops, 0, 0);	/* ordered after the DMAs */
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG], 1 + want,
			     "writes %u: %llu bytes delivered, %llu in written lines", t,
			     (unsigned long long)(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG] - 1),
			     (unsigned long long)want);
	}
}

/* Row busy of one EXE whose single LD reads SRAM row `k` (W bytes) of a STREAM band of D rows. */
static uint64_t busy_reading_row(uint32_t k, uint8_t band_flags, uint32_t D, uint32_t W)
{
	struct tnpu_operand ops[1] = { t_opnd(k * W, 0, 0, W, 1, W, TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0);
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };

	zbands(true, band_flags, host, 0, W, D);
	dispatch(h, &ld, ops, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	return res.row_busy[0];
}

Test(stream, an_ld_waits_for_exactly_the_stream_rows_it_reads)
{
	uint32_t D = 24, W = 1024;	/* 4 port cycles per row */
	uint64_t rc = W / TNPU_RATE_DMA_PORT, b0, b9, b39, plain;

	for (uint32_t i = 0; i < W * D; i++)
		H(0)[i] = (uint8_t)(i * 13 + 1);
	b0 = busy_reading_row(0, TNPU_BANDS_F_STREAM, D, W);
	b9 = busy_reading_row(9, TNPU_BANDS_F_STREAM, D, W);
	b39 = busy_reading_row(23, TNPU_BANDS_F_STREAM, D, W);
	plain = busy_reading_row(23, 0, D, W);
	/* every row lands rc cycles after the previous one; the LD's work follows its row (row 0 lands
	 * before the EXE's pipeline fill is over: no wait) */
	cr_assert_eq(b0, plain);
	cr_assert_gt(b9, plain);
	cr_assert_eq(b39 - b9, 14 * rc);
	/* without STREAM the hardware does not track lines: software would order with a semaphore */
	/* the EXE started before the band finished: the job is shorter than load + compute back to back */
	cr_assert_lt(res.counters[TNPU_CNT_TOTAL_CYCLES],
		     res.counters[TNPU_CNT_LOAD_CYCLES] + plain + TNPU_CYC_JOB);
}

/* A DW run (as in test_dw.c) writing one output tile region of cols * ow * C * 4 bytes at 20480. */
static void dw_program(uint32_t *out_bytes)
{
	unsigned cols = cfg.cols, pes = cfg.pes, tn = 4, C = pes * tn, ow = 8;
	uint32_t pitch = (ow + 2) * C;
	struct tnpu_dw_param dp = { .oh = 1, .ow = (uint16_t)ow, .pix = (uint16_t)C, .r = 3, .s = 3, .stride_y = 1,
				    .stride_x = 1, .dil_y = 1, .dil_x = 1 };
	struct tnpu_operand ops[4] = {
		t_opnd(0, (int32_t)pitch, (int32_t)tn, pitch, 3, (ow + 1) * C + tn, TNPU_DTYPE_INT8, 0),
		t_opnd(16384, 0, (int32_t)(tn * 9), 9, tn, 9, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		t_opnd(20480, (int32_t)(ow * C * 4), (int32_t)(tn * 4), C * 4, ow, tn, TNPU_DTYPE_INT32, 0),
		{ 0 },
	};
	uint16_t ins[] = { TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST,
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_start = 1, .loop_end = 3, .repeat = 1,
				  .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .dw_rf = 3 };

	memcpy(&ops[3], &dp, sizeof(dp));
	for (uint32_t i = 0; i < 16384 + 1024; i++)
		H(0)[i] = (uint8_t)(i * 7 + 3);
	/* input rows and weights, in order (not tracked): the EXE starts after them */
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, 3 * pitch, 1, 1);
	tcb_dma(&cb, true, 0, host + 16384, 0, 0, TNPU_DMA_ROW_ALL, 0, 16384, 0, 0, 1024, 1, 1);
	dispatch_f(h, ins, ops, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, 0);
	*out_bytes = cols * ow * C * 4;
}

Test(stream, a_stream_d2h_waits_for_the_st_that_writes_its_rows)
{
	uint32_t ob;
	uint64_t t_sync, t_stream, t_early;

	/* in order: the D2H waits for the EXE, then pays its setup */
	dw_program(&ob);
	zbands(false, 0, host + 65536, 20480, ob, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	t_sync = res.counters[TNPU_CNT_TOTAL_CYCLES];
	/* STREAM, issued at once: the setup overlaps the EXE, the row goes when the ST has written it */
	dw_program(&ob);
	zbands(false, TNPU_BANDS_F_STREAM, host + 131072, 20480, ob, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	t_stream = res.counters[TNPU_CNT_TOTAL_CYCLES];
	cr_assert_eq(t_sync - t_stream, TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP, "sync %llu stream %llu", (unsigned long long)t_sync, (unsigned long long)t_stream);
	cr_assert_eq(memcmp(H(65536), H(131072), ob), 0);
	{
		uint32_t nz = 0;

		for (uint32_t i = 0; i < ob; i++)
			nz += H(65536)[i] != 0;
		cr_assert_gt(nz, ob / 2, "%u of %u bytes", nz, ob);
	}
	/* a STREAM D2H of lines nobody writes in flight does not wait */
	dw_program(&ob);
	zbands(false, TNPU_BANDS_F_STREAM, host + 196608, 30720, ob, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	t_early = res.counters[TNPU_CNT_STORE_CYCLES];
	cr_assert_eq(t_early, TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (ob + TNPU_RATE_DMA_PORT - 1) / TNPU_RATE_DMA_PORT);
}

Test(stream, stream_flag_rules_and_capability_bit)
{
	struct tnpu_config c;
	struct tnpu_core *core;
	uint64_t v;

	/* AUX stays H2D only, with or without STREAM; other axis bits stay reserved */
	zbands(false, TNPU_BANDS_F_STREAM | TNPU_BANDS_F_AUX, host, 0, 64, 1);
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	zbands(true, TNPU_BANDS_F_STREAM | 0x10, host, 0, 64, 1);
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	zbands(true, TNPU_BANDS_F_STREAM | TNPU_BANDS_F_AUX, host, 0, 64, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	tnpu_config_default(&c);
	cr_assert_eq(tnpu_core_new(&c, &core, NULL, 0), 0);
	cr_assert_eq(tnpu_core_reg_read(core, TNPU_REG_CAP_FEATURES, 4, &v), TNPU_REG_OK);
	cr_assert_eq(v & TNPU_FEAT_STREAM, TNPU_FEAT_STREAM);
	tnpu_core_free(core);
}

/* More STREAM rows than the scoreboard holds (1024 per unit): the newest rows stay exact, merged old
 * rows can only make a reader wait longer, never shorter. */
Test(stream, a_full_scoreboard_stays_exact_for_new_rows_and_never_early)
{
	uint32_t W = 16, D = 2000;	/* 1 port cycle per row; 32000 bytes fit a 32 KiB half */
	uint64_t b1499, b1999, b50, b50_small;

	memset(H(0), 3, (size_t)W * D);
	b1499 = busy_reading_row(1499, TNPU_BANDS_F_STREAM, D, W);
	b1999 = busy_reading_row(1999, TNPU_BANDS_F_STREAM, D, W);
	b50 = busy_reading_row(50, TNPU_BANDS_F_STREAM, D, W);
	b50_small = busy_reading_row(50, TNPU_BANDS_F_STREAM, 100, W);
	cr_assert_eq(b1999 - b1499, 500);
	cr_assert_geq(b50, b50_small, "a merged entry never lets a reader go early");
	cr_assert_lt(b50, b1499);
}
