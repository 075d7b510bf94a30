/* SPDX-License-Identifier: MIT */
/* Depthwise block: DW MAC against a CPU reference, multicast LD distribution bytes, DW EXE timing,
 * DMA_BANDS_H2D/D2H (planes and row bytes), and bad encodings -> documented error codes. */
#include "common.h"

SMALL_SIM_SUITE(dw, 32 << 20, 256 * 1024);

#define LAST (TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT)
#define MAX(a, b) ((a) > (b) ? (a) : (b))


static struct tnpu_operand dwrec(const struct tnpu_dw_param *p)
{
	struct tnpu_operand o;

	memcpy(&o, p, sizeof(o));
	return o;
}

static void dispatch(unsigned ib, struct tnpu_cfg_hdr h, const uint16_t *ins, const struct tnpu_operand *ops,
		     uint8_t exe_flags, unsigned n_exe)
{
	struct tpkt p;

	tpkt_config(&p, ib, &h, ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	for (unsigned i = 0; i < n_exe; i++) {
		tpkt_exe(&p, ib, exe_flags, NULL, 0);
		tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	}
}

static int32_t rnd8(uint64_t *st)
{
	return (int32_t)(trng(st) % 255) - 127;
}

/* One randomized DW MAC on row 0: image (IH x IW pixels x C channels) at SRAM 0, weights after it,
 * output tile of every PE after that; compared with a CPU reference computed from the host data. */
static void dw_case_expect(uint64_t seed, bool f32, bool trans, unsigned repeat, uint32_t want);

static void dw_case(uint64_t seed, bool f32, bool trans, unsigned repeat)
{
	dw_case_expect(seed, f32, trans, repeat, 0);
}

/* Channels per PE of the next cases (0: 1..3 at random), and how many of them fit the storage unit
 * (a case too large for it is skipped when tn is forced). */
static unsigned dw_tn, dw_fitted;

/* dw_case that expects error `want` (0: success, checked against the CPU reference). */
static void dw_case_expect(uint64_t seed, bool f32, bool trans, unsigned repeat, uint32_t want)
{
	uint64_t st = seed;
	unsigned cols = cfg.cols, pes = cfg.pes;
	unsigned tn = dw_tn ? (trng(&st), dw_tn) : 1 + trng(&st) % 3, oh = 1 + trng(&st) % 3, ow = 1 + trng(&st) % 5;
	unsigned r = 1 + trng(&st) % 3, sx = 1 + trng(&st) % 2, sy = 1 + trng(&st) % 2;
	unsigned dy = 1 + trng(&st) % 2, dx = 1 + trng(&st) % 2, s_ = 1 + trng(&st) % 3;
	unsigned C = pes * tn, e = f32 ? 4 : 1, tm = oh * ow, taps = r * s_;
	unsigned arows = (oh - 1) * sy + (r - 1) * dy + 1, apix = (ow - 1) * sx + (s_ - 1) * dx + 1;
	unsigned IH = (cols - 1) * oh * sy + arows, IW = apix + 1, pitch = IW * C * e;
	uint32_t img = 0, wof = (IH * pitch + 63) & ~63u, oof = (wof + taps * C * e + 63) & ~63u;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST, TNPU_INSN_LD(1, 0, 1, 0),
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_dw_param dp = { .oh = (uint16_t)oh, .ow = (uint16_t)ow, .pix = (uint16_t)C, .r = (uint8_t)r,
				    .s = (uint8_t)s_, .stride_y = (uint8_t)sy, .stride_x = (uint8_t)sx,
				    .dil_y = (uint8_t)dy, .dil_x = (uint8_t)dx };
	struct tnpu_operand ops[4] = {
		t_opnd(img, (int32_t)(oh * sy * pitch), (int32_t)(tn * e), pitch, arows, ((ow - 1) * sx + (s_ - 1) * dx) * C + tn,
		     f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, 0),
		/* weights: [tap][C] (rows = taps) or, TRANS, [C][tap] (rows = tn of the PE) */
		trans ? t_opnd(wof, 0, (int32_t)(tn * taps * e), taps * e, tn, taps, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8,
			     TNPU_OPF_TRANS)
		      : t_opnd(wof, 0, (int32_t)(tn * e), C * e, taps, tn, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, 0),
		t_opnd(oof, (int32_t)(tm * C * 4), (int32_t)(tn * 4), C * 4, tm, tn, f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32, 0),
		dwrec(&dp),
	};
	uint32_t hin = 0, hw = 64 * 1024, hout = 128 * 1024;
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_end = 3, .repeat = (uint16_t)repeat,
				  .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .dw_rf = 3 };

	if (seed & 1)	/* WIDE multicast: same results (isa.md "WIDE") */
		ins[0] |= TNPU_LD_WIDE;

	if (dw_tn && oof + cols * tm * C * 4 > cfg.sram / 2)
		return;
	dw_fitted++;
	cr_assert_leq(oof + cols * tm * C * 4, cfg.sram / 2, "seed %llu: test case too large", (unsigned long long)seed);
	for (unsigned i = 0; i < IH * IW * C; i++) {
		if (f32) {
			/* full mantissas: the products round, so the order of the chain shows in the bits */
			float v = (float)rnd8(&st) / 16.0f + (float)rnd8(&st) * 0x1.234567p-13f;

			memcpy(H(hin + 4 * i), &v, 4);
		} else {
			*(int8_t *)H(hin + i) = (int8_t)rnd8(&st);
		}
	}
	for (unsigned i = 0; i < taps * C; i++) {
		if (f32) {
			float v = (float)rnd8(&st) / 32.0f + (float)rnd8(&st) * 0x1.7654321p-14f;

			memcpy(H(hw + 4 * i), &v, 4);
		} else {
			*(int8_t *)H(hw + i) = (int8_t)rnd8(&st);
		}
	}
	tcb_dma(&cb, true, 0, host + hin, 0, 0, 0, 0, img, 0, 0, IH * pitch, 1, 1);
	tcb_dma(&cb, true, 0, host + hw, 0, 0, 0, 0, wof, 0, 0, taps * C * e, 1, 1);
	dispatch(0, h, ins, ops, LAST, 1);
	tcb_dma(&cb, false, 0, host + hout, 0, 0, 0, 0, oof, 0, 0, cols * tm * C * 4, 1, 1);
	cr_assert_eq(run(), want, "seed %llu: %s", (unsigned long long)seed, tnpu_err_name(res.error));
	if (want)
		return;
	for (unsigned c = 0; c < cols; c++)
		for (unsigned p = 0; p < pes; p++)
			for (unsigned oy = 0; oy < oh; oy++)
				for (unsigned ox = 0; ox < ow; ox++)
					for (unsigned k = 0; k < tn; k++) {
						unsigned ch = p * tn + k, o = ((c * tm + oy * ow + ox) * C + ch) * 4;
						int64_t si = 0;
						double sf = 0;
						float chain = 0.0f;	/* isa.md "DW MAC": one fmaf chain in (ry, rx) order */

						for (unsigned ry = 0; ry < r; ry++)
							for (unsigned rx = 0; rx < s_; rx++) {
								unsigned iy = c * oh * sy + oy * sy + ry * dy, ix = ox * sx + rx * dx;
								unsigned ai = (iy * IW + ix) * C + ch;
								/* host weights: [tap][C] for plain, [C][tap] for TRANS */
								unsigned wi = trans ? ch * taps + ry * s_ + rx : (ry * s_ + rx) * C + ch;

								if (f32) {
									float a, w;

									memcpy(&a, H(hin + 4 * ai), 4);
									memcpy(&w, trans ? H(hw + 4 * wi) : H(hw + 4 * wi), 4);
									sf += (double)a * w;
									chain = fmaf(a, w, chain);
								} else {
									si += (int64_t)*(int8_t *)H(hin + ai) * *(int8_t *)H(hw + wi);
								}
							}
						if (f32) {
							float got;

							memcpy(&got, H(hout + o), 4);
							cr_assert_float_eq(got, (float)sf, 1e-4 + 1e-5 * fabs(sf),
									   "seed %llu PE (%u,%u) px (%u,%u) ch %u", (unsigned long long)seed,
									   c, p, oy, ox, k);
							cr_assert(!memcmp(&got, &chain, 4), "seed %llu PE (%u,%u) px (%u,%u) ch %u: %a, chain %a",
								  (unsigned long long)seed, c, p, oy, ox, k, (double)got, (double)chain);
						} else {
							int32_t got;

							memcpy(&got, H(hout + o), 4);
							cr_assert_eq(got, (int32_t)si, "seed %llu PE (%u,%u) px (%u,%u) ch %u",
								     (unsigned long long)seed, c, p, oy, ox, k);
						}
					}
	/* every DW MAC: tm * tn * taps MACs per PE; a repeated DW MAC overwrites (results above) */
	cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], (uint64_t)repeat * tm * tn * taps * cols * pes);
}

/* Weights in the TRANS layout are stored [C][tap] on the host; in plain layout [tap][C]. The
 * plain case reuses hw as [tap][C] directly. */
Test(dw, dw_mac_int8_matches_cpu_reference)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		dw_case(seed * 0x9E3779B97F4A7C15ull, false, seed & 1, 1);
	/* runs of channels across the model's vector loops and its 64-channel blocks */
	for (unsigned t = 0; t < 3; t++) {
		static const unsigned tns[] = { 17, 40, 67 };

		dw_tn = tns[t];
		dw_fitted = 0;
		for (uint64_t seed = 1; seed <= 400 && dw_fitted < 12; seed++)
			dw_case(seed * 0xD1B54A32D192ED03ull + t, false, seed & 1, 1);
		cr_assert_geq(dw_fitted, 3, "tn %u: %u cases fitted", dw_tn, dw_fitted);
		dw_tn = 0;
	}
}

Test(dw, dw_mac_fp32_matches_cpu_reference)
{
	for (uint64_t seed = 1; seed <= 20; seed++)
		dw_case(seed * 0xD1B54A32D192ED03ull, true, seed & 1, 1);
	/* runs of channels across the model's vector loops and its 64-channel blocks */
	for (unsigned t = 0; t < 3; t++) {
		static const unsigned tns[] = { 17, 40, 67 };

		dw_tn = tns[t];
		dw_fitted = 0;
		for (uint64_t seed = 1; seed <= 400 && dw_fitted < 12; seed++)
			dw_case(seed * 0x9E3779B97F4A7C15ull + t, true, seed & 1, 1);
		cr_assert_geq(dw_fitted, 3, "tn %u: %u cases fitted", dw_tn, dw_fitted);
		dw_tn = 0;
	}
}

/* chain #9: a DW MAC obeys its island's data types like any MAC (it skipped the check). */
Test(dw, dw_mac_on_an_int8_island_refuses_fp32)
{
	char msg[160];

	tsim_fini(&s);
	cr_assert_eq(tnpu_islands_parse("1:i8,1", &cfg, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(tsim_init(&s, &cfg, 32 << 20), 0);
	host = tsim_buf(&s, 256 * 1024);
	dw_case_expect(11, true, false, 1, TNPU_ERR_ISLAND_CAP);
	dw_case_expect(12, false, false, 1, 0);	/* int8 runs */
}

Test(dw, dw_mac_overwrites_the_accumulator)
{
	/* the loop body runs 3 times on the same data: results equal one run, MACs count 3 runs */
	dw_case(77, false, true, 3);
	dw_case(78, true, false, 2);
}

/* Multicast LD: the row's tiles as one block of rows; a slide by d rows moves only d rows. */
Test(dw, mcast_ld_moves_the_block_once_and_slides)
{
	unsigned cols = cfg.cols, pes = cfg.pes;
	uint32_t pitch = 64;
	/* PE (c, p): 3 rows x 8 bytes at c*2 rows + p*4 bytes: block = (2*(cols-1) + 3) rows x (4*(pes-1)+8) B */
	struct tnpu_operand ops[1] = { t_opnd(0, (int32_t)(2 * pitch), 4, pitch, 3, 8, TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST, ld_plain = TNPU_INSN_LD(0, 0, 0, 0);
	uint64_t box_rows = 2 * (cols - 1) + 3, box_w = 4 * (pes - 1) + 8, base;
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };
	struct tnpu_exe_patch pt = { .rf = 0, .field = TNPU_PATCH_ADDR, .value = 2 * pitch };
	struct tpkt p;

	dispatch(0, h, &ld_plain, ops, 0, 1);
	cr_assert_eq(run(), 0);
	base = res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG];
	/* unicast: every PE's 24-byte tile (cols * pes distinct tiles), plus the 1-byte EXE packet */
	cr_assert_eq(base, 1 + (uint64_t)cols * pes * 24);

	/* the block's lines hold data (clean lines are not delivered: test_stream.c) */
	tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, 0, 0, (uint32_t)((box_rows + 2) * pitch), 1);
	dispatch(0, h, &ld, ops, 0, 1);
	tpkt_exe(&p, 0, 0, &pt, 1);	/* same record two rows lower: a slide by 2 */
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	cr_assert_eq(run(), 0);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG],
		     1 + box_rows * box_w + 9 + 2 * box_w);
}

/* The input buffer holds the bytes of the half it was loaded from: the same record in an EXE on the
 * other half moves the whole block again (the record's addr is half-relative). */
Test(dw, mcast_ld_on_the_other_half_moves_the_whole_block)
{
	unsigned cols = cfg.cols, pes = cfg.pes;
	uint32_t pitch = 64;
	struct tnpu_operand ops[1] = { t_opnd(0, (int32_t)(2 * pitch), 4, pitch, 3, 8, TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST;
	uint64_t box_rows = 2 * (cols - 1) + 3, box_w = 4 * (pes - 1) + 8;
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };
	uint8_t exe = TNPU_PKT_EXE;

	for (uint8_t half = 0; half < 2; half++)
		tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, half, 0, (uint32_t)((box_rows + 2) * pitch), 1);
	dispatch(0, h, &ld, ops, 0, 1);
	tcb_dispatch(&cb, 0, 0, 0, 0, &exe, 1);	/* same half, same record: nothing moves */
	tcb_dispatch(&cb, 0, 0, 1, 0, &exe, 1);	/* the other half: the whole block */
	cr_assert_eq(run(), 0);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG],
		     1 + box_rows * box_w + 1 + 1 + box_rows * box_w);
}

/*
 * Issue #28: the block's width comes from one PE (PE (c, 1): a row down less 4 bytes, byte 12 of 16)
 * and its height from another (PE (1, 3): rows 3.., bytes 4..8), so the rectangle's last row runs 8
 * bytes past every tile.  The block ends at the furthest tile's last byte: 19 rows x 16 B - 8.
 */
#define CUT_PITCH 16u
#define CUT_ROWS 16u
#define CUT_BLOCK ((CUT_ROWS + 3) * CUT_PITCH - 8)	/* 296 bytes, the unicast tiles 8 x 64 */

static void mcast_cut_ld(uint8_t half, uint32_t addr)
{
	struct tnpu_operand ops[1] = { t_opnd(addr, (int32_t)CUT_PITCH, (int32_t)CUT_PITCH - 4, CUT_PITCH, CUT_ROWS, 4,
					      TNPU_DTYPE_INT8, 0) };
	uint16_t ld = TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST;
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };
	uint8_t exe = TNPU_PKT_EXE;
	struct tpkt p;

	cr_assert_eq(cfg.cols, 2);
	cr_assert_eq(cfg.pes, 4);
	tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, half, 0, (uint32_t)(cfg.sram / 2), 1);	/* every line written */
	tpkt_config(&p, 0, &h, &ld, ops);
	tcb_dispatch(&cb, 0, 0, half, 0, p.buf, p.len);
	tcb_dispatch(&cb, 0, 0, half, 0, &exe, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
}

Test(dw, mcast_block_ends_at_the_furthest_tile)
{
	mcast_cut_ld(0, 0);
	/* the old rectangle counted 304 bytes: 8 no PE reads */
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG], 1 + CUT_BLOCK);
}

/* The same block with its furthest tile ending at the storage unit's last byte: the old rectangle
 * read the written-line bitmap past its end (ASan: heap-buffer-overflow) and counted what it found. */
Test(dw, mcast_block_at_the_end_of_the_unit_stays_inside)
{
	mcast_cut_ld(1, (uint32_t)(cfg.sram / 2 - CUT_BLOCK));
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG], 1 + CUT_BLOCK);
}

/* A DW run overlaps SFU/ST with the MACs; the last tile's drain is exposed. */
Test(dw, dw_exe_busy_follows_the_cycle_model)
{
	unsigned cols = cfg.cols, pes = cfg.pes, tn = 4, C = pes * tn, ow = 8, reps = 4;
	uint32_t pitch = (ow + 2) * C;
	struct tnpu_dw_param dp = { .oh = 1, .ow = (uint16_t)ow, .pix = (uint16_t)C, .r = 3, .s = 3, .stride_y = 1,
				    .stride_x = 1, .dil_y = 1, .dil_x = 1 };
	struct tnpu_operand ops[4] = {
		t_opnd(0, (int32_t)pitch, (int32_t)tn, pitch, 3, (ow + 1) * C + tn, TNPU_DTYPE_INT8, 0),
		t_opnd(16384, 0, (int32_t)(tn * 9), 9, tn, 9, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		t_opnd(20480, (int32_t)(ow * C * 4), (int32_t)(tn * 4), C * 4, ow, tn, TNPU_DTYPE_INT32, 0),
		dwrec(&dp),
	};
	uint16_t ins[] = { TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST,
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_start = 1, .loop_end = 3,
				  .repeat = (uint16_t)reps, .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .dw_rf = 3 };
	uint64_t issued = 1 + 3 * reps, mac = (ow * tn * 9 + 15) / 16, sfu = (ow * tn + 63) / 64,
		 st = (ow * tn * 4 * pes + 127) / 128, dist, box_w = (uint64_t)(ow + 2) * C, config_busy, busy;

	/* weights unicast (pes distinct tiles of tn*9 B), then one full block, then slides of 0 rows */
	dist = 1 + (uint64_t)pes * tn * 9 + (cols + 2) * box_w;
	dispatch(0, h, ins, ops, LAST, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	config_busy = (1 + 16 + 8 + 128 + 127) / 128;
	busy = TNPU_CYC_EXE + issued + MAX(MAX((dist + 127) / 128, reps * mac), reps * (sfu + st)) +
	       (reps * (sfu + st) + reps - 1) / reps;
	cr_assert_eq(res.counters[TNPU_CNT_COMPUTE_CYCLES], config_busy + busy);
}

static void bands(bool h2d, uint8_t axis, uint64_t va, uint64_t pz, uint32_t off, uint32_t spz, uint32_t width,
		  uint32_t depth, int32_t first, uint32_t step, uint32_t len)
{
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .size = sizeof(b) },
		.host_va = va, .host_pitch_z = pz, .sram_off = off, .sram_pitch_z = spz, .width = width, .height = 1,
		.depth = depth, .band_first = first, .band_step = step, .band_len = len, .axis = axis,
	};

	tcb_raw(&cb, &b, sizeof(b));
}

Test(dw, dma_bands_planes_overlap_read_once)
{
	uint32_t W = 40, D = 10;
	uint8_t *in = H(0);

	for (uint32_t i = 0; i < W * D; i++)
		in[i] = (uint8_t)(i * 7 + 3);
	/* unit u: planes [-1 + 4u, -1 + 4u + 6) of 10 (overlap 2), at SRAM plane z - (-1 + 4u) */
	bands(true, TNPU_BANDS_AXIS_Z, host, W, 100, 64, W, D, -1, 4, 6);
	for (unsigned u = 0; u < cfg.rows; u++)
		tcb_dma(&cb, false, 0, host + 8192 + u * 1024, 0, 0, (uint8_t)u, 0, 100, 0, 0, 6 * 64, 1, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (unsigned u = 0; u < cfg.rows; u++)
		for (int j = 0; j < 6; j++) {
			int z = -1 + 4 * (int)u + j;

			for (uint32_t x = 0; x < W; x++) {
				uint8_t want = z >= 0 && z < (int)D ? in[z * W + x] : 0;

				cr_assert_eq(*H(8192 + u * 1024 + j * 64 + x), want, "unit %u plane %d x %u", u, z, x);
			}
		}
	/* host planes read once: union of [-1,5) and [3,9) clipped = 9 planes */
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], 9ull * W);
	/* ports in parallel: the longest band (6 planes, unit 1) at 1 cycle per 40-byte row */
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 6);
}

Test(dw, dma_bands_row_bytes_and_store_back)
{
	uint32_t W = 600, D = 3;
	uint8_t *in = H(0);

	for (uint32_t i = 0; i < W * D; i++)
		in[i] = (uint8_t)(i * 13 + 1);
	/* unit u: bytes [-8 + 300u, -8 + 300u + 316) of every row */
	bands(true, TNPU_BANDS_AXIS_X, host, W, 0, 1024, W, D, -8, 300, 316);
	/* back: unit u's own 300 bytes from SRAM byte 8 to host bytes [300u, 300u + 300) */
	bands(false, TNPU_BANDS_AXIS_X, host + 16384, W, 8, 1024, W, D, 0, 300, 300);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(memcmp(H(16384), in, W * D), 0);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], (uint64_t)W * D);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_D2H], (uint64_t)W * D);
	/* unit 0 takes 308 bytes per row (2 port cycles), unit 1 308 (clipped): 3 rows x 2 */
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 3 * 2);
	cr_assert_eq(res.counters[TNPU_CNT_STORE_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 3 * 2);
}

static void gbands(bool h2d, uint8_t axis, uint64_t va, uint64_t pz, uint32_t off, uint32_t spz, uint32_t width,
		   uint32_t depth, int32_t first, uint32_t step, uint32_t len, uint16_t group)
{
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .size = sizeof(b),
			 .flags = TNPU_CMD_F_ASYNC },
		.host_va = va, .host_pitch_z = pz, .sram_off = off, .sram_pitch_z = spz, .width = width, .height = 1,
		.depth = depth, .band_first = first, .band_step = step, .band_len = len, .axis = axis,
		.group = group,
	};

	tcb_raw(&cb, &b, sizeof(b));
}

/* AXIS_G: unit u takes bytes [first + u*step, + len) of every group (a pixel's channels), packed. */
Test(dw, dma_bands_groups_split_every_pixel_and_store_back)
{
	uint32_t G = 6, NG = 50, W = G * NG, D = 3;
	uint8_t *in = H(0);

	for (uint32_t i = 0; i < W * D; i++)
		in[i] = (uint8_t)(i * 11 + 5);
	/* unit 0: bytes [0, 3) of each 6-byte group, unit 1: [3, 6); SRAM rows of 50 * 3 bytes at pitch 1024 */
	gbands(true, TNPU_BANDS_AXIS_G, host, W, 16, 1024, W, D, 0, 3, 3, (uint16_t)G);
	for (unsigned u = 0; u < cfg.rows; u++)
		tcb_dma(&cb, false, 0, host + 8192 + u * 4096, 0, 0, (uint8_t)u, 0, 16, 0, 0, 3 * 1024, 1, 1);
	/* back: the same bands into a second host image */
	gbands(false, TNPU_BANDS_AXIS_G, host + 32768, W, 16, 1024, W, D, 0, 3, 3, (uint16_t)G);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (unsigned u = 0; u < cfg.rows; u++)
		for (uint32_t z = 0; z < D; z++)
			for (uint32_t g = 0; g < NG; g++)
				for (uint32_t x = 0; x < 3; x++)
					cr_assert_eq(*H(8192 + u * 4096 + z * 1024 + g * 3 + x), in[z * W + g * G + u * 3 + x],
						     "unit %u row %u group %u byte %u", u, z, g, x);
	cr_assert_eq(memcmp(H(32768), in, W * D), 0);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], (uint64_t)W * D);
	/* the bands back + the two plain per-unit copies */
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_D2H], (uint64_t)W * D + cfg.rows * 3 * 1024ull);
	/* each unit moves 150 packed bytes per row: 1 port cycle per row (+ the plain 3 KiB copies) */
	cr_assert_eq(res.counters[TNPU_CNT_STORE_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + D +
		     cfg.rows * (TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 3 * 1024 / TNPU_RATE_DMA));

	/* overlapping bands (halo of one byte each side): host bytes still read once, packed at g * len */
	gbands(true, TNPU_BANDS_AXIS_G, host, W, 0, 1024, W, 1, -1, 3, 5, (uint16_t)G);
	for (unsigned u = 0; u < cfg.rows; u++)
		tcb_dma(&cb, false, 0, host + 8192 + u * 4096, 0, 0, (uint8_t)u, 0, 0, 0, 0, 1024, 1, 1);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	for (unsigned u = 0; u < cfg.rows; u++)
		for (uint32_t g = 0; g < NG; g++)
			for (int j = 0; j < 5; j++) {
				int x = -1 + 3 * (int)u + j;
				uint8_t want = x >= 0 && x < (int)G ? in[g * G + (uint32_t)x] : 0;

				cr_assert_eq(*H(8192 + u * 4096 + g * 5 + (uint32_t)j), want, "unit %u group %u x %d", u, g, x);
			}
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], (uint64_t)W);
	/* unit 0: [0, 4) = 4 bytes x 50 groups = 200 -> 1 cycle; unit 1: [2, 6) the same */
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 1);
}

/* AUX: the load engine only issues it (CYC_CMD + its port cycles); its setup overlaps the next band
 * transfer, and a SEM_SIGNAL on the load engine waits for it (cycle-model.md). */
Test(dw, dma_bands_aux_overlaps_the_band_queue)
{
	uint32_t W = 512, D = 20, A = 32;	/* AUX: 32 rows of 512 bytes = 2 port cycles each */
	uint64_t aux_end = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 2ull * A;
	uint64_t load_free = TNPU_CYC_CMD + 2ull * A;
	uint64_t band_end = load_free + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 2ull * D;
	uint8_t *in = H(0);

	for (uint32_t i = 0; i < W * A; i++)
		in[i] = (uint8_t)(i * 3 + 7);
	gbands(true, TNPU_BANDS_AXIS_Z | TNPU_BANDS_F_AUX, host, 0, 0, 0, W, 1, 0, 0, 1, 0);
	{
		/* the AUX transfer: A rows of W bytes (height A) into every unit */
		struct tnpu_cmd_dma_bands *b = (struct tnpu_cmd_dma_bands *)(cb.buf + cb.len - sizeof(*b));

		b->height = A;
		b->host_pitch_y = W;
		b->sram_pitch_y = W;
	}
	/* a band transfer behind it on the load engine: starts after the issue, not after the AUX setup */
	gbands(true, TNPU_BANDS_AXIS_Z, host, W, 20000, W, W, D, 0, 0, D, 0);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES], MAX(aux_end, band_end) + TNPU_CYC_JOB);
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], aux_end + (band_end - load_free));
	cr_assert_lt(band_end, aux_end + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 2ull * D, "the setups overlap");

	/* SEM_SIGNAL on the load engine covers the AUX queue: the store waits for the AUX data */
	gbands(true, TNPU_BANDS_AXIS_Z | TNPU_BANDS_F_AUX, host, 0, 0, 0, W, 1, 0, 0, 1, 0);
	{
		struct tnpu_cmd_dma_bands *b = (struct tnpu_cmd_dma_bands *)(cb.buf + cb.len - sizeof(*b));

		b->height = A;
		b->host_pitch_y = W;
		b->sram_pitch_y = W;
	}
	tcb_sem(&cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 0, 1);
	tcb_sem(&cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 0, 1);
	gbands(false, TNPU_BANDS_AXIS_Z, host + 65536, 0, 0, 0, W, 1, 0, 0, 1, 0);
	{
		struct tnpu_cmd_dma_bands *b = (struct tnpu_cmd_dma_bands *)(cb.buf + cb.len - sizeof(*b));

		b->height = A;
		b->host_pitch_y = W;
		b->sram_pitch_y = W;
	}
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(memcmp(H(65536), in, (size_t)W * A), 0);
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES],
		     aux_end + TNPU_CYC_CMD + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 2ull * A + TNPU_CYC_JOB);
}

/* A good job after every bad one: errors stop the job, the device keeps working. */
static void good_job(void)
{
	tcb_nop(&cb, 0);
	cr_assert_eq(run(), 0);
}

Test(dw, bad_encodings_stop_with_documented_errors)
{
	struct tnpu_dw_param ok = { .oh = 1, .ow = 2, .pix = 4, .r = 3, .s = 3, .stride_y = 1, .stride_x = 1,
				    .dil_y = 1, .dil_x = 1 };
	struct tnpu_operand a = t_opnd(0, 0, 1, 64, 3, 4 * 4 + 1, TNPU_DTYPE_INT8, 0);
	struct tnpu_operand w = t_opnd(1024, 0, 1, 4, 9, 1, TNPU_DTYPE_INT8, 0);
	struct tnpu_operand o = t_opnd(2048, 64, 8, 4, 2, 1, TNPU_DTYPE_INT32, 0);
	struct tnpu_operand a_wrap = a;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_end = 3, .repeat = 1, .dw_rf = 3 };

	a_wrap.flags = TNPU_OPF_WRAP;
	a_wrap.su_wrap = 3;
	a_wrap.su_wrap_delta = 3 * 64;
	struct {
		struct tnpu_dw_param p;
		struct tnpu_operand a, w;
		uint32_t err;
	} cases[] = {
		{ ok, a, w, 0 },
		{ { .oh = 0, .ow = 2, .pix = 4, .r = 3, .s = 3, .stride_y = 1, .stride_x = 1, .dil_y = 1, .dil_x = 1 },
		  a, w, TNPU_ERR_DW_PARAM },
		{ { .oh = 1, .ow = 2, .pix = 4, .r = 3, .s = 3, .stride_y = 1, .stride_x = 0, .dil_y = 1, .dil_x = 1 },
		  a, w, TNPU_ERR_DW_PARAM },
		{ { .oh = 1, .ow = 2, .pix = 4, .r = 3, .s = 3, .stride_y = 1, .stride_x = 1, .dil_y = 1, .dil_x = 1,
		    .reserved[5] = 1 }, a, w, TNPU_ERR_DW_PARAM },
		/* weights must have r*s rows */
		{ ok, a, t_opnd(1024, 0, 1, 4, 8, 1, TNPU_DTYPE_INT8, 0), TNPU_ERR_DW_SHAPE },
		/* window needs 3 input rows and (1 + 2) * 4 + 1 elements */
		{ ok, t_opnd(0, 0, 1, 64, 2, 17, TNPU_DTYPE_INT8, 0), w, TNPU_ERR_DW_SHAPE },
		{ ok, t_opnd(0, 0, 1, 64, 3, 12, TNPU_DTYPE_INT8, 0), w, TNPU_ERR_DW_SHAPE },
		/* tm * tn above the accumulator */
		{ { .oh = 33, .ow = 32, .pix = 1, .r = 1, .s = 1, .stride_y = 1, .stride_x = 1, .dil_y = 1, .dil_x = 1 },
		  t_opnd(0, 0, 0, 32, 33, 32, TNPU_DTYPE_INT8, 0), t_opnd(1024, 0, 0, 1, 1, 1, TNPU_DTYPE_INT8, 0),
		  TNPU_ERR_DW_SHAPE },
		/* sparse weights are not a DW operand */
		{ ok, a, t_opnd(1024, 0, 4, 4, 9, 1, TNPU_DTYPE_INT8, TNPU_OPF_SPARSE), TNPU_ERR_DW_SHAPE },
		/* dtype mismatch */
		{ ok, a, t_opnd(1024, 0, 4, 4, 9, 1, TNPU_DTYPE_FP32, 0), TNPU_ERR_DTYPE },
		/* a window is never a WRAP tile (isa.md "Row wrap"; the LD itself is valid) */
		{ ok, a_wrap, w, TNPU_ERR_OPERAND },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tnpu_operand ops[4] = { cases[i].a, cases[i].w, o, dwrec(&cases[i].p) };

		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), cases[i].err, "case %u: %s", i, tnpu_err_name(res.error));
		if (cases[i].err) {
			cr_assert_eq(res.err_info, 0 | 0 << 8 | 2u << 16, "case %u: info 0x%x", i, res.err_info);
			good_job();
		}
	}
	/* CONFIG: dw_rf must name a window entry */
	{
		struct tnpu_operand ops[4] = { a, w, o, dwrec(&ok) };

		h.dw_rf = 16;
		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), TNPU_ERR_CONFIG);
		good_job();
		h.dw_rf = 3;
		/* MAC bit 11 stays reserved; LD bit 11 (WIDE) needs MCAST; MCAST needs a dense tile */
		ins[2] |= 0x0800;
		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), TNPU_ERR_INSTR);
		ins[2] &= (uint16_t)~0x0800u;
		ins[0] = (uint16_t)((ins[0] & ~TNPU_LD_MCAST) | TNPU_LD_WIDE);
		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), TNPU_ERR_INSTR);
		ins[0] = TNPU_INSN_LD(1, 0, 1, 0) | TNPU_LD_MCAST;
		ops[1] = t_opnd(1024, 0, 4, 4, 9, 1, TNPU_DTYPE_INT8, TNPU_OPF_SPARSE);
		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), TNPU_ERR_OPERAND);
		good_job();
	}
	/* DMA_BANDS: field rules, SRAM range, size */
	bands(true, 3, host, 64, 0, 64, 64, 1, 0, 1, 1);
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	bands(true, TNPU_BANDS_AXIS_Z | 0x20, host, 64, 0, 64, 64, 1, 0, 1, 1);	/* reserved axis bit */
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	bands(false, TNPU_BANDS_AXIS_Z | TNPU_BANDS_F_AUX, host, 64, 0, 64, 64, 1, 0, 1, 1);	/* AUX is H2D only */
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	bands(true, TNPU_BANDS_AXIS_Z, host, 64, 0, 64, 64, 1, 0, 1, 0);
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	bands(false, TNPU_BANDS_AXIS_Z, host, 64, 0, 64, 0, 1, 0, 1, 1);
	cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
	bands(true, TNPU_BANDS_AXIS_Z, host, 64, 0, cfg.sram / 4, 64, 4, 0, 2, 3);
	cr_assert_eq(run(), TNPU_ERR_SRAM_RANGE);
	bands(true, TNPU_BANDS_AXIS_X, host, 64, cfg.sram / 2 - 32, 64, 64, 1, 0, 8, 33);
	cr_assert_eq(run(), TNPU_ERR_SRAM_RANGE);
	{
		struct tnpu_cmd_dma_bands b = {
			.hdr = { .opcode = TNPU_CMD_DMA_BANDS_H2D, .size = sizeof(b) }, .host_va = host,
			.width = 8, .height = 1, .depth = 1, .band_len = 1, .group = 1,
		};

		tcb_raw(&cb, &b, sizeof(b));
		cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
		b.axis = TNPU_BANDS_AXIS_G;	/* group 1 divides width 8: valid with axis G */
		tcb_raw(&cb, &b, sizeof(b));
		cr_assert_eq(run(), 0);
		b.group = 3;	/* not a divisor of width */
		tcb_raw(&cb, &b, sizeof(b));
		cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
		b.group = 0;	/* axis G needs a group */
		tcb_raw(&cb, &b, sizeof(b));
		cr_assert_eq(run(), TNPU_ERR_DMA_DESC);
		b.axis = TNPU_BANDS_AXIS_Z;
		b.hdr.size = 64;
		tcb_raw(&cb, &b, 64);
		cr_assert_eq(run(), TNPU_ERR_CMD_SIZE);
		b.hdr.opcode = 0x16;	/* still unallocated */
		b.hdr.size = sizeof(b);
		tcb_raw(&cb, &b, sizeof(b));
		cr_assert_eq(run(), TNPU_ERR_CMD_OPCODE);
	}
	good_job();
}

/* WIDE (isa.md): the MCAST block crosses at 256 B/cycle, everything else (weights, packet) at 128;
 * the delivered-bytes counter and the results are the narrow run's. */
Test(dw, wide_mcast_halves_the_window_distribution)
{
	/* a 1x1 stride-2 window: 1 MAC per output element, so the row waits for the distribution */
	unsigned cols = cfg.cols, pes = cfg.pes, tn = 4, C = pes * tn, ow = 32, reps = 1;
	struct tnpu_dw_param dp = { .oh = 1, .ow = (uint16_t)ow, .pix = (uint16_t)C, .r = 1, .s = 1, .stride_y = 2,
				    .stride_x = 2, .dil_y = 1, .dil_x = 1 };
	uint32_t ow_in = 2 * ow - 1, ipitch = (ow_in + 1) * C;
	struct tnpu_operand ops[4] = {
		t_opnd(0, (int32_t)(2 * ipitch), (int32_t)tn, ipitch, 1, (ow_in - 1) * C + tn, TNPU_DTYPE_INT8, 0),
		t_opnd(8192, 0, (int32_t)tn, 1, tn, 1, TNPU_DTYPE_INT8, TNPU_OPF_TRANS),
		t_opnd(12288, (int32_t)(ow * C * 4), (int32_t)(tn * 4), C * 4, ow, tn, TNPU_DTYPE_INT32, 0),
		dwrec(&dp),
	};
	uint16_t ins[] = { TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST,
			   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_start = 1, .loop_end = 3,
				  .repeat = (uint16_t)reps, .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .dw_rf = 3 };
	uint64_t issued = 1 + 3 * reps, mac = (ow * tn + 15) / 16, sfu = (ow * tn + 63) / 64,
		 st = (ow * tn * 4 * pes + 127) / 128, narrow[2], wide[2], wb = (uint64_t)pes * tn, box, busy[2];

	box = (uint64_t)(2 * (cols - 1) + 1) * ow_in * C;
	for (int wd = 0; wd < 2; wd++) {
		uint64_t *r = wd ? wide : narrow;

		ins[1] = (uint16_t)(TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST | (wd ? TNPU_LD_WIDE : 0));
		/* every line of the window written (a job starts clean), so the whole block is delivered */
		tcb_dma_fill(&cb, 0, TNPU_DMA_ROW_ALL, 0, 0, 8192, 1);
		dispatch(0, h, ins, ops, LAST, 1);
		cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
		r[0] = res.counters[TNPU_CNT_COMPUTE_CYCLES];
		r[1] = res.counters[TNPU_CNT_BYTES_DISPATCH] - res.counters[TNPU_CNT_BYTES_CONFIG];
	}
	cr_assert_eq(narrow[1], wide[1]);
	cr_assert_eq(narrow[1], 1 + wb + box);	/* the EXE byte, the weights, the block */
	/* dist: narrow ⌈(1 + wb + box)/128⌉; wide ⌈(2(1 + wb) + box)/256⌉ (only the block is WIDE) */
	for (int wd = 0; wd < 2; wd++) {
		uint64_t dist = wd ? (2 * (1 + wb) + box + 255) / 256 : (1 + wb + box + 127) / 128;

		busy[wd] = TNPU_CYC_EXE + issued + MAX(dist, MAX(reps * mac, reps * (sfu + st))) +
			   (reps * (sfu + st) + reps - 1) / reps;
	}
	cr_assert_eq(narrow[0], (1 + 16 + 8 + 128 + 127) / 128 + busy[0]);	/* CONFIG parse + the EXE */
	cr_assert_eq(wide[0], (1 + 16 + 8 + 128 + 127) / 128 + busy[1]);
	cr_assert_gt(narrow[0], wide[0]);
}

/* CAP_FEATURES bit 7 (bit 17: WIDE) and CAP_PORTS describe the depthwise block (registers.md). */
Test(dw, capability_registers_advertise_the_block)
{
	struct tnpu_config c;
	struct tnpu_core *core;
	uint64_t v;

	tnpu_config_default(&c);
	c.rows = 3;
	cr_assert_eq(tnpu_core_new(&c, &core, NULL, 0), 0);
	cr_assert_eq(tnpu_core_reg_read(core, TNPU_REG_CAP_FEATURES, 4, &v), TNPU_REG_OK);
	cr_assert_eq(v & TNPU_FEAT_DEPTHWISE, TNPU_FEAT_DEPTHWISE);
	cr_assert_eq(v & TNPU_FEAT_DW_WIDE, TNPU_FEAT_DW_WIDE);
	cr_assert_eq(tnpu_core_reg_read(core, TNPU_REG_CAP_PORTS, 4, &v), TNPU_REG_OK);
	cr_assert_eq(TNPU_CAP_PORTS_RATE(v), 256);
	cr_assert_eq(TNPU_CAP_PORTS_NUM(v), 3);
	tnpu_core_free(core);
}
