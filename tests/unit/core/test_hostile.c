/* SPDX-License-Identifier: MIT */
/* Hostile input: random and mutated command streams never crash, hang or read out of bounds
 * (run under ASan+UBSan in the sanitizer build); every failure is a documented error code. */
#include "common.h"

static void fuzz_round(struct tsim *s, const struct tcb *cb, uint32_t *err)
{
	struct tnpu_result r1, r2;

	tsim_run(s, cb, 0, &r1);
	cr_assert_lt(r1.error, TNPU_ERR_COUNT);
	cr_assert_neq(r1.error, TNPU_ERR_NOMEM);
	tsim_run(s, cb, 0, &r2);
	cr_assert_eq(r1.error, r2.error, "deterministic error");
	cr_assert_eq(memcmp(r1.counters, r2.counters, sizeof(r1.counters)), 0, "deterministic counters");
	*err = r1.error;
}

Test(hostile, mutated_gemm_programs_fail_cleanly)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb base, cb;
	struct tgemm g = { .m = 32, .n = 16, .k = 32, .tm = 8, .tn = 4, .kt = 16, .pipelined = true };
	uint64_t seed = 0xC0FFEE;
	unsigned seen_ok = 0, seen_err = 0;

	cfg.watchdog_cycles = 1u << 22;
	cr_assert_eq(tsim_init(&s, &cfg, 64 << 20), 0);
	g.a = tsim_buf(&s, 32 * 32);
	g.b = tsim_buf(&s, 32 * 16);
	g.c = tsim_buf(&s, 32 * 16 * 4);
	tcb_init(&base);
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, &cfg, &base), 0);
	for (int it = 0; it < 300; it++) {
		uint32_t err;
		unsigned nmut = 1 + trng(&seed) % 4;

		cb.len = 0;
		tcb_raw(&cb, base.buf, base.len);
		for (unsigned m = 0; m < nmut; m++) {
			size_t pos = trng(&seed) % cb.len;

			switch (trng(&seed) % 3) {
			case 0:
				cb.buf[pos] ^= (uint8_t)(1u << (trng(&seed) % 8));
				break;
			case 1:
				cb.buf[pos] = (uint8_t)trng(&seed);
				break;
			default:
				cb.buf[pos] = (uint8_t)(trng(&seed) % 2 ? 0xFF : 0);
				break;
			}
		}
		fuzz_round(&s, &cb, &err);
		if (err)
			seen_err++;
		else
			seen_ok++;
	}
	cr_log_info("mutations: %u ok, %u errors", seen_ok, seen_err);
	cr_assert_gt(seen_err, 50);
	tcb_free(&base);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(hostile, random_command_words_fail_cleanly)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	uint64_t seed = 1234;

	cfg.watchdog_cycles = 1u << 22;
	cr_assert_eq(tsim_init(&s, &cfg, 64 << 20), 0);
	tcb_init(&cb);
	for (int it = 0; it < 300; it++) {
		uint32_t err;
		unsigned n = 1 + trng(&seed) % 6;

		cb.len = 0;
		for (unsigned c = 0; c < n; c++) {
			uint8_t buf[128];
			uint8_t op = (uint8_t)(trng(&seed) % 9);
			uint32_t size = op == 0 ? 8 : op == 1 || op == 2 ? 64 : op == 3 ? 104 : op == 7 ? 24 : 16;

			for (size_t i = 0; i < sizeof(buf); i++)
				buf[i] = (trng(&seed) % 3) ? (uint8_t)trng(&seed) : 0;
			if (op == 4) {
				size = 16 + 8 * (uint32_t)(1 + trng(&seed) % 12);
				memset(buf + 12, 0, 4);
				buf[12] = (uint8_t)(size - 16 - trng(&seed) % 8);
				buf[16] &= 0xFB;
			}
			buf[0] = op;
			buf[1] &= 1;
			buf[2] = buf[3] = 0;
			memcpy(buf + 4, &size, 4);
			tcb_raw(&cb, buf, size);
		}
		fuzz_round(&s, &cb, &err);
	}
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(hostile, dma_extent_arithmetic_cannot_wrap)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	uint64_t buf;

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	buf = tsim_buf(&s, 4096);
	tcb_init(&cb);
	/* (depth-1)*pz + (height-1)*py wraps 2^64 if summed naively */
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0xFFFFFFFFu, 0xFFFFFFFFu, 16, 0xFFFFFFFFu, 0xFFFFFFFFu);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SRAM_RANGE);
	/* zero pitches, 2^64 rows: refused by the watchdog before any work */
	cb.len = 0;
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0, 0, 4096, 0xFFFFFFFFu, 0xFFFFFFFFu);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_WATCHDOG);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(hostile, im2col_with_huge_indices_stays_in_bounds)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tnpu_cmd_im2col ic = {
		.stride_c = 4, .stride_w = 4 * 65535, .stride_h = 8, .stride_n = 16, .n = 65535, .h = 65535,
		.w = 65535, .c = 65535, .r = 65535, .s = 65535, .oh = 65535, .ow = 65535, .stride_y = 1,
		.stride_x = 1, .dil_y = 255, .dil_x = 255, .pad_top = 255, .pad_left = 255,
		.layout = TNPU_LAYOUT_NHWC, .dtype = TNPU_DTYPE_FP32, .m0 = 0xFFFFFF00u, .mt = 1024,
		.k0 = 0xFFFFFFF0u, .kt = 8, .sram_pitch = 32, .row = 0,
	};

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	ic.src_va = tsim_buf(&s, 4096);
	tcb_init(&cb);
	tcb_im2col(&cb, 0, &ic);
	tsim_run(&s, &cb, 0, &res);
	cr_assert(res.error == TNPU_ERR_TOO_LARGE || res.error == TNPU_ERR_MMU_NOT_PRESENT ||
		  res.error == TNPU_ERR_MMU_VA_RANGE, "%s", tnpu_err_name(res.error));
	/* one input row: tiny footprint, indices near 2^32 */
	ic.n = 1;
	ic.h = 1;
	ic.w = 2;
	ic.c = 1;
	ic.stride_w = 4;
	ic.r = 1;
	ic.s = 1;
	ic.oh = 65535;
	ic.ow = 65535;
	ic.dil_y = ic.dil_x = 1;
	ic.pad_top = ic.pad_left = 0;
	ic.m0 = 0xFFFD0000u;	/* M = 65535^2 = 0xFFFE0001 */
	ic.mt = 512;
	ic.k0 = 0;
	ic.kt = 1;
	ic.sram_pitch = 4;
	cb.len = 0;
	tcb_im2col(&cb, 0, &ic);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], 0, "all taps are padding");
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(hostile, header_only_dispatch_is_a_size_error)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tnpu_cmd_hdr h = { .opcode = TNPU_CMD_DISPATCH, .size = 8 };

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	tcb_raw(&cb, &h, 8);	/* found by libFuzzer: DISPATCH whose size covers only the header */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_SIZE);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(hostile, sfu_shift_is_ignored_without_requant)
{
	/* Found by libFuzzer + UBSan: shift 200 without REQUANT must not be used. */
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tpkt p;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 2, 0) };
	struct tnpu_operand ops[3] = {
		{ .pitch = 4, .rows = 1, .cols = 4, .dtype = TNPU_DTYPE_INT8 },
		{ .addr = 64, .pitch = 4, .rows = 1, .cols = 4, .dtype = TNPU_DTYPE_INT8, .flags = TNPU_OPF_TRANS },
	};
	struct tnpu_sfu_param sp = { .ops = TNPU_SFU_OP_RELU, .shift = 200, .out_dtype = TNPU_DTYPE_INT32 };
	struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 };

	memcpy(&ops[2], &sp, 32);
	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	tpkt_config(&p, 0, &h, ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST, NULL, 0);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, 0, "%s", tnpu_err_name(res.error));
	tcb_free(&cb);
	tsim_fini(&s);
}
