/* SPDX-License-Identifier: MIT */
/* Writes valid command streams (GEMM int8/fp32, DMA, semaphores, IM2COL, the depthwise block with
 * STREAM bands, the ISA 2 vector units, the decompressing load DMA_DEQ) as fuzzing seeds into argv[1]. */
#include <stdio.h>
#include <string.h>

#include "tnpu_sim.h"

static void save(const char *dir, const char *name, const struct tcb *cb)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(cb->buf, 1, cb->len, f);
	fclose(f);
}

/* A seed of one CONFIG and one EXE on every row: in_len bytes of the data buffer into the storage units,
 * the program, out_len bytes from SRAM offset 1024 back to the buffer's second half. */
static void save_one_exe(const char *dir, const char *name, uint64_t va, const struct tnpu_cfg_hdr *h,
			 const uint16_t *ins, const struct tnpu_operand *ops, uint32_t in_len, uint32_t out_len)
{
	struct tcb cb;
	struct tpkt p;

	tcb_init(&cb);
	tcb_dma(&cb, true, 0, va, 0, 0, 0xFF, 0, 0, 0, 0, in_len, 1, 1);
	tpkt_config(&p, 0, h, ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tcb_dma(&cb, false, 0, va + 32768, 0, 0, 0, 0, 1024, 0, 0, out_len, 1, 1);
	save(dir, name, &cb);
	tcb_free(&cb);
}

int main(int argc, char **argv)
{
	struct tnpu_config cfg;
	struct tcb cb;
	const uint64_t va = 0x100000000ull;	/* the fuzz target's data buffer */

	if (argc < 2)
		return 2;
	tnpu_config_default(&cfg);
	cfg.rows = 2;
	cfg.cols = 2;
	cfg.pes = 4;
	cfg.sram = 64 * 1024;
	for (int f32 = 0; f32 < 2; f32++) {
		for (int piped = 0; piped < 2; piped++) {
			struct tgemm g = { .m = 32, .n = 16, .k = 32, .f32 = f32, .tm = 8, .tn = 4, .kt = 16,
					   .pipelined = piped, .a = va, .b = va + 8192, .c = va + 16384 };
			char name[64];

			tcb_init(&cb);
			if (tgemm_build(&g, &cfg, &cb) == 0) {
				snprintf(name, sizeof(name), "gemm-%s-%s", f32 ? "fp32" : "int8", piped ? "piped" : "serial");
				save(argv[1], name, &cb);
			}
			tcb_free(&cb);
		}
	}
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, va, 64, 512, 0, 1, 0, 16, 256, 16, 4, 2);
	tcb_sem(&cb, true, 1, 0, 3, 1);
	tcb_sem(&cb, false, 1, 2, 3, 1);
	tcb_dma(&cb, false, 1, va + 32768, 64, 512, 0, 1, 0, 16, 256, 16, 4, 2);
	tcb_fence(&cb, va + 60000, 7);
	save(argv[1], "dma-sem-fence", &cb);
	tcb_free(&cb);
	{
		struct tnpu_cmd_im2col ic = {
			.src_va = va, .stride_c = 1, .stride_w = 3, .stride_h = 15, .stride_n = 75, .n = 1, .h = 5,
			.w = 5, .c = 3, .r = 3, .s = 3, .oh = 5, .ow = 5, .stride_y = 1, .stride_x = 1, .dil_y = 1,
			.dil_x = 1, .pad_top = 1, .pad_left = 1, .dtype = TNPU_DTYPE_INT8, .pad_value = 0x80,
			.m0 = 3, .mt = 16, .k0 = 2, .kt = 20, .sram_off = 64, .sram_pitch = 32, .row = 0xFF,
		};
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 1, 1, 1), TNPU_INSN_MAC(0, 1, 2, 1, 1),
				   TNPU_INSN_SFU(1, 3, 2), TNPU_INSN_ST(2, 2, 0) };
		struct tnpu_operand ops[4] = {
			{ .addr = 64, .pitch = 32, .rows = 4, .cols = 20, .col_stride = 128, .su_delta = 32 },
			{ .addr = 2048, .pitch = 24, .rows = 6, .cols = 4, .pe_stride = 96, .flags = TNPU_OPF_SPARSE },
			{ .addr = 8192, .pitch = 4, .rows = 4, .cols = 4, .col_stride = 64, .pe_stride = 16 },
		};
		struct tnpu_sfu_param sp = { .bias_addr = 4096, .scale = 77, .ops = 0xF, .shift = 9, .zero_point = 3,
					     .out_dtype = TNPU_DTYPE_INT8, .lo = 0, .hi = 1000 };
		struct tnpu_cfg_hdr h = { .n_instr = 5, .n_operands = 4, .mode = 3, .loop_start = 1, .loop_end = 2,
					  .repeat = 2, .sfu_rf = 3 };
		struct tpkt p;

		memcpy(&ops[3], &sp, 32);
		tcb_init(&cb);
		tcb_im2col(&cb, 0, &ic);
		tpkt_config(&p, 7, &h, ins, ops);
		tcb_dispatch(&cb, 0, 0xFF, 0, 0, p.buf, p.len);
		tpkt_exe(&p, 7, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
		tcb_dispatch(&cb, 1, 1, 0, 1, p.buf, p.len);
		save(argv[1], "im2col-isa", &cb);
		tcb_free(&cb);
	}
	for (int wide = 0; wide < 2; wide++) {
		/* depthwise block: STREAM AUX weights, STREAM input band, MCAST LD + DW MAC + ST, STREAM D2H;
		 * then the same with a WIDE multicast LD (issue #16) */
		unsigned tn = 4, C = cfg.pes * tn, ow = 8;
		uint32_t pitch = (ow + 2) * C;
		struct tnpu_dw_param dp = { .oh = 1, .ow = (uint16_t)ow, .pix = (uint16_t)C, .r = 3, .s = 3,
					    .stride_y = 1, .stride_x = 1, .dil_y = 1, .dil_x = 1 };
		struct tnpu_operand ops[4] = {
			{ .addr = 0, .col_stride = (int32_t)pitch, .pe_stride = (int32_t)tn, .pitch = pitch, .rows = 3,
			  .cols = (uint16_t)((ow + 1) * C + tn), .su_delta = (int32_t)pitch },
			{ .addr = 16384, .pe_stride = (int32_t)(tn * 9), .pitch = 9, .rows = (uint16_t)tn, .cols = 9,
			  .flags = TNPU_OPF_TRANS },
			{ .addr = 20480, .col_stride = (int32_t)(ow * C * 4), .pe_stride = (int32_t)(tn * 4), .pitch = C * 4,
			  .rows = (uint16_t)ow, .cols = (uint16_t)tn, .dtype = TNPU_DTYPE_INT32 },
		};
		uint16_t ins[] = { TNPU_INSN_LD(1, 0, 1, 0),
				   (uint16_t)(TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST | (wide ? TNPU_LD_WIDE : 0)),
				   TNPU_INSN_MAC(0, 0, 0, 0, 0) | TNPU_MAC_DW, TNPU_INSN_ST(0, 2, 1) };
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_start = 1, .loop_end = 3, .repeat = 2,
					  .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .dw_rf = 3 };
		struct tnpu_cmd_dma_bands b = {
			.hdr = { .opcode = TNPU_CMD_DMA_BANDS_H2D, .flags = TNPU_CMD_F_ASYNC, .size = sizeof(b) },
			.host_va = va + 4096, .host_pitch_z = 9 * C, .sram_off = 16384, .width = 9 * C, .height = 1,
			.depth = 1, .band_len = 1, .axis = TNPU_BANDS_AXIS_Z | TNPU_BANDS_F_AUX | TNPU_BANDS_F_STREAM,
		};
		struct tpkt p;

		memcpy(&ops[3], &dp, 32);
		tcb_init(&cb);
		tcb_raw(&cb, &b, sizeof(b));
		b.host_va = va;
		b.host_pitch_z = pitch;
		b.sram_off = pitch;	/* row 0 stays clean: the padding row */
		b.sram_pitch_z = pitch;
		b.width = pitch - 2 * C;
		b.depth = 4;
		b.band_len = 4;
		b.band_step = 0;
		b.axis = TNPU_BANDS_AXIS_Z | TNPU_BANDS_F_STREAM;
		tcb_raw(&cb, &b, sizeof(b));
		tpkt_config(&p, 0, &h, ins, ops);
		tcb_dispatch(&cb, TNPU_CMD_F_ASYNC, 0xFF, 0, 0, p.buf, p.len);
		tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
		tcb_dispatch(&cb, TNPU_CMD_F_ASYNC, 0xFF, 0, 0, p.buf, p.len);
		b.hdr.opcode = TNPU_CMD_DMA_BANDS_D2H;
		b.host_va = va + 32768;
		b.host_pitch_z = 2048;
		b.sram_off = 20480;
		b.sram_pitch_z = 2048;
		b.width = 2048;
		b.depth = 1;
		b.band_len = 1;
		b.band_step = 1;
		tcb_raw(&cb, &b, sizeof(b));
		tcb_fence(&cb, va + 60000, 9);
		save(argv[1], wide ? "dw-wide" : "dw-stream", &cb);
		tcb_free(&cb);
	}
	{
		/* issue 17: guest-sized loops.  Zero-pitch transfers of 2^32 - 1 rows (DMA_H2D, FILL,
		 * D2H, DMA_BANDS; refused by the watchdog, mutations land next to the limit), and an
		 * H2D that faults half way followed by a D2H of the same SRAM (stale-line handling). */
		struct tnpu_cmd_dma d = { .hdr = { .opcode = TNPU_CMD_DMA_H2D, .size = sizeof(d) },
					  .host_va = va, .width = 1, .height = 0xFFFFFFFFu, .depth = 1 };
		struct tnpu_cmd_dma_bands b = { .hdr = { .opcode = TNPU_CMD_DMA_BANDS_H2D, .size = sizeof(b) },
						.host_va = va, .width = 1, .height = 0xFFFFFFFFu, .depth = 1,
						.band_len = 1 };

		tcb_init(&cb);
		tcb_raw(&cb, &d, sizeof(d));
		d.dma_flags = TNPU_DMA_F_FILL;
		d.fill = 0x5A;
		d.host_va = 0;
		tcb_raw(&cb, &d, sizeof(d));
		d.hdr.opcode = TNPU_CMD_DMA_D2H;
		d.dma_flags = 0;
		d.fill = 0;
		d.host_va = va;
		tcb_raw(&cb, &d, sizeof(d));
		tcb_raw(&cb, &b, sizeof(b));
		save(argv[1], "zero-pitch-huge", &cb);
		tcb_free(&cb);
		tcb_init(&cb);
		tcb_dma(&cb, true, 0, va + 65536 - 4096, 0, 0, 0, 0, 0, 0, 0, 8192, 1, 1);	/* 2nd page unmapped */
		tcb_dma(&cb, false, 0, va, 0, 0, 0, 0, 0, 0, 0, 8192, 1, 1);
		save(argv[1], "h2d-fault-then-d2h", &cb);
		tcb_free(&cb);
	}
	{
		/* ISA 2 vector units: LUT load, int8 LUT map, fp32 exp, broadcast binary, pooling with padding,
		 * a strided reduction, per-channel requantisation, and a GEMM epilogue with a residual operand */
		struct tnpu_cmd_vec_lut l = { .hdr = { .opcode = TNPU_CMD_VEC_LUT, .size = sizeof(l) }, .table = 1 };
		struct tnpu_cmd_vec v;
		float one = 1.0f, q = 0.5f;

		for (int i = 0; i < 256; i++)
			l.entry[i] = (int8_t)(i / 2 - 64);
		tcb_init(&cb);
		tcb_dma(&cb, true, 0, va, 0, 0, 0xFF, 0, 0, 0, 0, 8192, 1, 1);
		tcb_raw(&cb, &l, sizeof(l));
		memset(&v, 0, sizeof(v));
		v.hdr.opcode = TNPU_CMD_VEC;
		v.hdr.size = sizeof(v);
		v.op = TNPU_VEC_MAP;
		v.func = TNPU_VEC_LUT;
		v.lut = 1;
		v.row = 0xFF;
		v.n[0] = v.n[1] = 1;
		v.n[2] = 4;
		v.n[3] = 64;
		v.a_st[2] = v.d_st[2] = 64;
		v.a_st[3] = v.d_st[3] = 1;
		v.d_off = 8192;
		tcb_raw(&cb, &v, sizeof(v));
		v.func = TNPU_VEC_EXP;
		v.lut = 0;
		v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
		v.a_st[2] = v.d_st[2] = 256;
		v.a_st[3] = v.d_st[3] = 4;
		memcpy(&v.scale, &one, 4);
		tcb_raw(&cb, &v, sizeof(v));
		v.op = TNPU_VEC_BINARY;
		v.func = TNPU_VEC_ADD;
		v.scale = 0;
		v.b_off = 1024;
		v.b_st[3] = 4;
		v.vflags = TNPU_VEC_F_RELU;
		tcb_raw(&cb, &v, sizeof(v));
		memset(&v.b_off, 0, 20);
		v.vflags = 0;
		v.op = TNPU_VEC_POOL;
		v.func = TNPU_VEC_POOL_MAX;
		v.in_dtype = v.out_dtype = TNPU_DTYPE_INT8;
		v.n[1] = 4;
		v.n[2] = 4;
		v.n[3] = 8;
		v.a_st[1] = 64;
		v.a_st[2] = 8;
		v.a_st[3] = 1;
		v.d_st[1] = 32;
		v.d_st[2] = 8;
		v.d_st[3] = 1;
		v.win.pool = (struct tnpu_vec_pool_win){ .win_h = 3, .win_w = 3, .stride_y = 2, .stride_x = 2,
							 .pad_top = 1, .pad_left = 1, .in_h = 8, .in_w = 8 };
		tcb_raw(&cb, &v, sizeof(v));
		memset(&v.win, 0, sizeof(v.win));
		v.op = TNPU_VEC_REDUCE;
		v.func = TNPU_VEC_RED_SUM;
		v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
		v.n[1] = v.n[2] = 1;
		v.n[3] = 16;
		v.a_st[3] = 4;
		v.d_st[3] = 4;
		v.win.red.red_len = 32;
		v.win.red.red_st = 64;
		memcpy(&v.scale, &q, 4);
		tcb_raw(&cb, &v, sizeof(v));
		memset(&v.win, 0, sizeof(v.win));
		v.op = TNPU_VEC_MAP;
		v.func = TNPU_VEC_REQUANT;
		v.in_dtype = TNPU_DTYPE_INT32;
		v.out_dtype = TNPU_DTYPE_INT8;
		v.scale = 0;
		v.vflags = TNPU_VEC_F_PER_CHANNEL;
		v.b_off = 4096;
		v.chan_dim = 3;
		v.zero_point = -3;
		v.d_st[3] = 1;
		tcb_raw(&cb, &v, sizeof(v));
		tcb_dma(&cb, false, 0, va + 32768, 0, 0, 1, 0, 8192, 0, 0, 4096, 1, 1);
		save(argv[1], "vec-units", &cb);
		tcb_free(&cb);
	}
	{
		/* SFU residual operand: GEMM 2x4 x 4x2 fp32 with BIAS | RESIDUAL | RELU */
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
				   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3, 0), TNPU_INSN_ST(0, 2, 0) };
		struct tnpu_operand ops[5] = {
			{ .addr = 0, .pitch = 16, .rows = 2, .cols = 4, .dtype = TNPU_DTYPE_FP32 },
			{ .addr = 256, .pitch = 8, .rows = 4, .cols = 2, .dtype = TNPU_DTYPE_FP32 },
			{ .addr = 1024, .pitch = 8, .rows = 2, .cols = 2, .dtype = TNPU_DTYPE_FP32 },
			{ 0 },
			{ .addr = 768, .pitch = 8, .rows = 2, .cols = 2, .dtype = TNPU_DTYPE_FP32 },
		};
		struct tnpu_sfu_param sp = { .bias_addr = 512,
					     .ops = TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RESIDUAL | TNPU_SFU_OP_RELU,
					     .out_dtype = TNPU_DTYPE_FP32 };
		struct tnpu_cfg_hdr h = { .n_instr = 5, .n_operands = 5, .loop_end = 2, .repeat = 1 };

		memcpy(&ops[3], &sp, 32);
		save_one_exe(argv[1], "sfu-residual", va, &h, ins, ops, 1024, 16);
	}
	{
		/* SFU per-column requantisation (QCOL): int8 GEMM 2x4 x 4x2, column records at 512 */
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
				   TNPU_INSN_ST(0, 2, 0) };
		struct tnpu_operand ops[4] = {
			{ .addr = 0, .pitch = 4, .rows = 2, .cols = 4, .dtype = TNPU_DTYPE_INT8 },
			{ .addr = 256, .pitch = 2, .rows = 4, .cols = 2, .dtype = TNPU_DTYPE_INT8 },
			{ .addr = 1024, .pitch = 2, .rows = 2, .cols = 2, .dtype = TNPU_DTYPE_INT8 },
		};
		struct tnpu_sfu_param sp = { .bias_addr = 512, .bias_pe_stride = 24,
					     .ops = TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU | TNPU_SFU_OP_REQUANT |
						    TNPU_SFU_OP_QCOL,
					     .zero_point = -3, .out_dtype = TNPU_DTYPE_INT8 };
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_end = 2, .repeat = 1, .sfu_rf = 3 };

		memcpy(&ops[3], &sp, 32);
		save_one_exe(argv[1], "sfu-qcol", va, &h, ins, ops, 1024, 4);
	}
	{
		/* cluster pairs (CPAIR, CAP_FEATURES bit 21): A's and the output's cluster blocks as
		 * (c & 1) * col_stride + (c >> 1) * su_wrap_delta, with the SFU residual record paired too */
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
				   TNPU_INSN_ST(0, 2, 0) };
		struct tnpu_operand ops[5] = {
			{ .addr = 0, .col_stride = 8, .pitch = 4, .rows = 2, .cols = 4, .dtype = TNPU_DTYPE_INT8,
			  .flags = TNPU_OPF_CPAIR, .su_wrap_delta = 24 },
			{ .addr = 256, .pitch = 2, .rows = 4, .cols = 2, .dtype = TNPU_DTYPE_INT8 },
			{ .addr = 1024, .col_stride = 16, .pe_stride = 64, .pitch = 8, .rows = 2, .cols = 2,
			  .dtype = TNPU_DTYPE_INT32, .flags = TNPU_OPF_CPAIR, .su_wrap_delta = 40 },
			{ 0 },
			{ .addr = 2048, .col_stride = 16, .pe_stride = 64, .pitch = 8, .rows = 2, .cols = 2,
			  .dtype = TNPU_DTYPE_INT32, .flags = TNPU_OPF_CPAIR, .su_wrap_delta = -8 },
		};
		struct tnpu_sfu_param sp = { .ops = TNPU_SFU_OP_RESIDUAL, .out_dtype = TNPU_DTYPE_INT32 };
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 5, .loop_end = 2, .repeat = 1, .sfu_rf = 3,
					  .mode = TNPU_CFG_MODE_PIPE4 };

		memcpy(&ops[3], &sp, 32);
		save_one_exe(argv[1], "cpair", va, &h, ins, ops, 4096, 512);
	}
	{
		/* DMA_DEQ (CAP_FEATURES bit 23): int4 blockwise weights (block 32, fp32 scales, packed zero
		 * points) as the N-major weight tile of an fp32 GEMM step, then int8 per column with fp16
		 * scales as a K-major bf16 tile broadcast to every row; the data buffer's bytes are the codes,
		 * scales (some NaN / infinite: the fuzzer starts from the full value range) and zero points */
		struct tnpu_cmd_dma_deq d = { .hdr = { .opcode = TNPU_CMD_DMA_DEQ, .size = sizeof(d) },
					      .src_va = va, .scale_va = va + 4096, .zp_va = va + 8192,
					      .src_pitch = 64, .scale_pitch = 16, .zp_pitch = 2, .k0 = 32, .kt = 96,
					      .nt = 16, .block = 32, .sram_off = 4096, .sram_pitch = 384,
					      .fmt = TNPU_DEQ_FMT_U4, .out_dtype = TNPU_DTYPE_FP32, .row = 0 };

		tcb_init(&cb);
		tcb_raw(&cb, &d, sizeof(d));
		d = (struct tnpu_cmd_dma_deq){ .hdr = { .opcode = TNPU_CMD_DMA_DEQ, .size = sizeof(d),
							.flags = TNPU_CMD_F_ASYNC },
					       .src_va = va + 12288, .scale_va = va + 16384, .src_pitch = 128,
					       .scale_pitch = 2, .kt = 128, .nt = 8, .sram_off = 0, .sram_pitch = 16,
					       .fmt = TNPU_DEQ_FMT_S8, .out_dtype = TNPU_DTYPE_BF16,
					       .qflags = TNPU_DEQ_F_SCALE_F16 | TNPU_DEQ_F_KN, .row = TNPU_DMA_ROW_ALL,
					       .half = 1 };
		tcb_raw(&cb, &d, sizeof(d));
		tcb_dma(&cb, false, 0, va + 32768, 0, 0, 0, 0, 4096, 0, 0, 6144, 1, 1);
		save(argv[1], "dma-deq", &cb);
		tcb_free(&cb);
	}
	{
		/* row wrap (WRAP, CAP_FEATURES bit 22): A's and the output's rows taken in a packed space of
		 * layout rows of 3 pixels, the layout rows a padded row apart (blocks of 4 pixels across them) */
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
				   TNPU_INSN_ST(0, 2, 0) };
		struct tnpu_operand ops[4] = {
			{ .addr = 4, .col_stride = 16, .pitch = 4, .rows = 4, .cols = 4, .dtype = TNPU_DTYPE_INT8,
			  .flags = TNPU_OPF_WRAP, .su_wrap = 3, .su_wrap_delta = 20, .su_delta = 60 },
			{ .addr = 512, .pitch = 2, .rows = 4, .cols = 2, .dtype = TNPU_DTYPE_INT8 },
			{ .addr = 1032, .col_stride = 32, .pe_stride = 8, .pitch = 32, .rows = 4, .cols = 2,
			  .dtype = TNPU_DTYPE_INT32, .flags = TNPU_OPF_WRAP, .su_wrap = 3, .su_wrap_delta = 160 },
			{ 0 },
		};
		struct tnpu_sfu_param sp = { .out_dtype = TNPU_DTYPE_INT32 };
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 4, .loop_end = 3, .repeat = 1, .sfu_rf = 3,
					  .mode = TNPU_CFG_MODE_PIPE4 };

		memcpy(&ops[3], &sp, 32);
		save_one_exe(argv[1], "wrap", va, &h, ins, ops, 4096, 1024);
	}
	{
		/* VEC BINARY QADD (CAP_FEATURES bit 20): int8 A + B, each with its own zero point and
		 * multiplier, RELU, B broadcast along dim 2; then an in-place SUB */
		struct tnpu_cmd_vec v;

		tcb_init(&cb);
		tcb_dma(&cb, true, 0, va, 0, 0, 0xFF, 0, 0, 0, 0, 4096, 1, 1);
		memset(&v, 0, sizeof(v));
		v.hdr.opcode = TNPU_CMD_VEC;
		v.hdr.size = sizeof(v);
		v.op = TNPU_VEC_BINARY;
		v.func = TNPU_VEC_ADD;
		v.in_dtype = v.out_dtype = TNPU_DTYPE_INT8;
		v.row = 0xFF;
		v.vflags = TNPU_VEC_F_QADD | TNPU_VEC_F_RELU;
		v.n[0] = v.n[1] = 1;
		v.n[2] = 8;
		v.n[3] = 64;
		v.a_st[2] = v.d_st[2] = 64;
		v.a_st[3] = v.d_st[3] = v.b_st[3] = 1;
		v.b_off = 1024;
		v.d_off = 2048;
		v.scale = 1u << 30;
		v.bias = (uint32_t)-(1 << 29);
		v.shift = 31;
		v.zero_point = -5;
		v.lo = (uint32_t)-7;
		v.hi = 12;
		tcb_raw(&cb, &v, sizeof(v));
		v.func = TNPU_VEC_SUB;
		v.vflags = TNPU_VEC_F_QADD;
		v.a_off = 2048;
		v.b_st[2] = 64;
		tcb_raw(&cb, &v, sizeof(v));
		tcb_dma(&cb, false, 0, va + 32768, 0, 0, 1, 0, 2048, 0, 0, 512, 1, 1);
		save(argv[1], "vec-qadd", &cb);
		tcb_free(&cb);
	}
	{
		/* VEC math (CAP_FEATURES bit 25): MAP LOG in place, ELU with its lo/hi parameters, BINARY DIV
		 * with B broadcast, REDUCE ARGMAX with LAST into INT32 */
		struct tnpu_cmd_vec v;
		const float one = 1.0f, alpha = 1.6732632f, gamma = 1.050701f;

		tcb_init(&cb);
		tcb_dma(&cb, true, 0, va, 0, 0, 0xFF, 0, 0, 0, 0, 4096, 1, 1);
		memset(&v, 0, sizeof(v));
		v.hdr.opcode = TNPU_CMD_VEC;
		v.hdr.size = sizeof(v);
		v.op = TNPU_VEC_MAP;
		v.func = TNPU_VEC_LOG;
		v.in_dtype = v.out_dtype = TNPU_DTYPE_FP32;
		v.row = 0xFF;
		v.n[0] = v.n[1] = 1;
		v.n[2] = 8;
		v.n[3] = 64;
		v.a_st[2] = v.d_st[2] = 256;
		v.a_st[3] = v.d_st[3] = 4;
		memcpy(&v.scale, &one, 4);
		tcb_raw(&cb, &v, sizeof(v));
		v.func = TNPU_VEC_ELU;
		memcpy(&v.lo, &alpha, 4);
		memcpy(&v.hi, &gamma, 4);
		v.d_off = 2048;
		tcb_raw(&cb, &v, sizeof(v));
		v.op = TNPU_VEC_BINARY;
		v.func = TNPU_VEC_DIV;
		v.scale = v.lo = v.hi = 0;
		v.b_off = 2048;
		v.b_st[3] = 4;
		tcb_raw(&cb, &v, sizeof(v));
		memset(v.b_st, 0, sizeof(v.b_st));
		v.b_off = 0;
		v.op = TNPU_VEC_REDUCE;
		v.func = TNPU_VEC_RED_ARGMAX;
		v.out_dtype = TNPU_DTYPE_INT32;
		v.vflags = TNPU_VEC_F_LAST;
		v.n[3] = 1;
		v.d_st[2] = 4;
		v.d_off = 3072;
		v.win.red.red_len = 64;
		v.win.red.red_st = 4;
		tcb_raw(&cb, &v, sizeof(v));
		tcb_dma(&cb, false, 0, va + 32768, 0, 0, 1, 0, 2048, 0, 0, 1024, 1, 1);
		save(argv[1], "vec-math", &cb);
		tcb_free(&cb);
	}
	return 0;
}
