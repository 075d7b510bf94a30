/* SPDX-License-Identifier: MIT */
/* GEMM and convolution through hand-packed programs vs a CPU reference. */
#include "common.h"

static void run_gemm_i8(const struct tnpu_config *cfg, uint32_t m, uint32_t n, uint32_t k, uint32_t tm,
			uint32_t tn, uint32_t kt, bool pipelined, uint64_t seed)
{
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tgemm g = { .m = m, .n = n, .k = k, .tm = tm, .tn = tn, .kt = kt, .pipelined = pipelined };
	uint64_t rs = seed;

	cr_assert_eq(tsim_init(&s, cfg, 64ull << 20), 0);
	g.a = tsim_buf(&s, (uint64_t)m * k);
	g.b = tsim_buf(&s, (uint64_t)k * n);
	g.c = tsim_buf(&s, (uint64_t)m * n * 4);
	int8_t *a = tsim_ptr(&s, g.a), *b = tsim_ptr(&s, g.b);
	int32_t *c = tsim_ptr(&s, g.c), *ref = malloc((size_t)m * n * 4);

	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (int8_t)trng(&rs);
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (int8_t)trng(&rs);
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, cfg, &cb), 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	ref_gemm_i8(m, n, k, a, b, ref);
	for (size_t i = 0; i < (size_t)m * n; i++)
		cr_assert_eq(c[i], ref[i], "seed %llu: C[%zu] = %d, expected %d", (unsigned long long)seed, i, c[i],
			     ref[i]);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], (uint64_t)m * n * k);
	cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], (uint64_t)m * n * k);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_D2H], (uint64_t)m * n * 4);
	free(ref);
	tcb_free(&cb);
	tsim_fini(&s);
}

static void run_gemm_f32(const struct tnpu_config *cfg, uint32_t m, uint32_t n, uint32_t k, uint32_t tm,
			 uint32_t tn, uint32_t kt, bool pipelined, uint64_t seed)
{
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tgemm g = { .m = m, .n = n, .k = k, .f32 = true, .tm = tm, .tn = tn, .kt = kt,
			   .pipelined = pipelined };
	uint64_t rs = seed;

	cr_assert_eq(tsim_init(&s, cfg, 64ull << 20), 0);
	g.a = tsim_buf(&s, (uint64_t)m * k * 4);
	g.b = tsim_buf(&s, (uint64_t)k * n * 4);
	g.c = tsim_buf(&s, (uint64_t)m * n * 4);
	float *a = tsim_ptr(&s, g.a), *b = tsim_ptr(&s, g.b), *c = tsim_ptr(&s, g.c);
	float *ref = malloc((size_t)m * n * 4);

	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (float)((int)(trng(&rs) % 2001) - 1000) / 1000.0f;
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (float)((int)(trng(&rs) % 2001) - 1000) / 1000.0f;
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, cfg, &cb), 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	ref_gemm_f32(m, n, k, a, b, ref);
	for (size_t i = 0; i < (size_t)m * n; i++)
		cr_assert(fabsf(c[i] - ref[i]) <= 1e-4f * k, "seed %llu: C[%zu] = %g, expected %g",
			  (unsigned long long)seed, i, c[i], ref[i]);
	free(ref);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(gemm, int8_matches_reference_small_geometry_serial)
{
	struct tnpu_config cfg = small_cfg();

	run_gemm_i8(&cfg, 32, 32, 48, 4, 4, 16, false, 1);
}

Test(gemm, int8_matches_reference_small_geometry_pipelined)
{
	struct tnpu_config cfg = small_cfg();

	run_gemm_i8(&cfg, 64, 48, 64, 8, 4, 16, true, 2);
}

Test(gemm, int8_matches_reference_partial_rows)
{
	struct tnpu_config cfg = small_cfg();

	/* M = 1.5 row blocks: the last outer tile uses one row only. */
	run_gemm_i8(&cfg, 24, 16, 32, 4, 4, 8, true, 3);
}

Test(gemm, fp32_matches_reference_small_geometry)
{
	struct tnpu_config cfg = small_cfg();

	run_gemm_f32(&cfg, 32, 32, 48, 4, 4, 16, true, 4);
}

Test(gemm, int8_and_fp32_on_default_geometry)
{
	struct tnpu_config cfg;

	tnpu_config_default(&cfg);
	run_gemm_i8(&cfg, 256, 256, 128, 32, 16, 64, true, 5);
	run_gemm_f32(&cfg, 256, 256, 128, 32, 16, 64, true, 6);
}

/* ---- convolution through IM2COL + the GEMM program ------------------------------ */

struct conv_case {
	uint32_t n, h, w, c, r, s, cout, sy, sx, dy, dx, pt, pl, oh, ow;
	uint8_t layout;
	bool f32;
};

/* Independent explicit im2col of the spec formula (commands.md, IM2COL). */
static void explicit_im2col(const struct conv_case *cc, const void *in, void *A, uint32_t pad)
{
	uint32_t M = cc->n * cc->oh * cc->ow, K = cc->r * cc->s * cc->c, e = cc->f32 ? 4 : 1;

	for (uint32_t m = 0; m < M; m++) {
		uint32_t b = m / (cc->oh * cc->ow), y = (m / cc->ow) % cc->oh, x = m % cc->ow;

		for (uint32_t k = 0; k < K; k++) {
			uint32_t ry, rx, ch;
			int64_t iy, ix;
			const void *src = &pad;

			if (cc->layout == TNPU_LAYOUT_NHWC) {
				ch = k % cc->c;
				rx = (k / cc->c) % cc->s;
				ry = k / (cc->c * cc->s);
			} else {
				rx = k % cc->s;
				ry = (k / cc->s) % cc->r;
				ch = k / (cc->s * cc->r);
			}
			iy = (int64_t)y * cc->sy - cc->pt + ry * cc->dy;
			ix = (int64_t)x * cc->sx - cc->pl + rx * cc->dx;
			if (iy >= 0 && iy < cc->h && ix >= 0 && ix < cc->w) {
				size_t idx = cc->layout == TNPU_LAYOUT_NHWC
						     ? (((size_t)b * cc->h + iy) * cc->w + ix) * cc->c + ch
						     : (((size_t)b * cc->c + ch) * cc->h + iy) * cc->w + ix;

				src = (const uint8_t *)in + idx * e;
			}
			memcpy((uint8_t *)A + ((size_t)m * K + k) * e, src, e);
		}
	}
}

static void run_conv(const struct conv_case *cc, uint64_t seed)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tpkt pkt;
	uint32_t e = cc->f32 ? 4 : 1, M = cc->n * cc->oh * cc->ow, K = cc->r * cc->s * cc->c;
	uint32_t tm = 2, tn = cc->cout / 4, Mb = 2 * tm;
	uint32_t a_off = 0, b_off = 8192, c_off = 16384;
	size_t in_elems = (size_t)cc->n * cc->h * cc->w * cc->c;
	uint64_t rs = seed, in_va, w_va, out_va;
	uint32_t pad = cc->f32 ? 0 : 0xF9;	/* int8 pad value -7 exercises pad_value */
	void *A;

	cfg.rows = 1;
	cfg.cols = 2;
	cfg.pes = 4;
	cr_assert_eq(M % Mb, 0);
	cr_assert_eq(tsim_init(&s, &cfg, 32 << 20), 0);
	in_va = tsim_buf(&s, in_elems * e);
	w_va = tsim_buf(&s, (size_t)K * cc->cout * e);
	out_va = tsim_buf(&s, (size_t)M * cc->cout * 4);
	for (size_t i = 0; i < in_elems; i++) {
		if (cc->f32)
			((float *)tsim_ptr(&s, in_va))[i] = (float)((int)(trng(&rs) % 200) - 100) / 50.0f;
		else
			((int8_t *)tsim_ptr(&s, in_va))[i] = (int8_t)trng(&rs);
	}
	for (size_t i = 0; i < (size_t)K * cc->cout; i++) {
		if (cc->f32)
			((float *)tsim_ptr(&s, w_va))[i] = (float)((int)(trng(&rs) % 200) - 100) / 50.0f;
		else
			((int8_t *)tsim_ptr(&s, w_va))[i] = (int8_t)trng(&rs);
	}
	tcb_init(&cb);
	{
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 };
		uint16_t ins[4] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),
				    TNPU_INSN_MAC(0, 0, 0, 0, 0), TNPU_INSN_ST(0, 2, 1) };
		struct tnpu_operand ops[3] = {
			{ .addr = a_off, .col_stride = (int32_t)(tm * K * e), .pitch = K * e, .rows = (uint16_t)tm,
			  .cols = (uint16_t)K, .dtype = cc->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8 },
			{ .addr = b_off, .pe_stride = (int32_t)(tn * e), .pitch = cc->cout * e, .rows = (uint16_t)K,
			  .cols = (uint16_t)tn, .dtype = cc->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8 },
			{ .addr = c_off, .col_stride = (int32_t)(tm * cc->cout * 4), .pe_stride = (int32_t)(tn * 4),
			  .pitch = cc->cout * 4, .rows = (uint16_t)tm, .cols = (uint16_t)tn,
			  .dtype = cc->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32 },
		};

		tpkt_config(&pkt, 0, &h, ins, ops);
		tcb_dispatch(&cb, 0, 0, 0, 0, pkt.buf, pkt.len);
	}
	for (int h = 0; h < 2; h++)
		tcb_dma(&cb, true, 0, w_va, cc->cout * e, 0, 0, (uint8_t)h, b_off, cc->cout * e, 0, cc->cout * e, K, 1);
	for (uint32_t m0 = 0, step = 0; m0 < M; m0 += Mb, step++) {
		struct tnpu_cmd_im2col ic = {
			.src_va = in_va, .n = (uint16_t)cc->n, .h = (uint16_t)cc->h, .w = (uint16_t)cc->w,
			.c = (uint16_t)cc->c, .r = (uint16_t)cc->r, .s = (uint16_t)cc->s, .oh = (uint16_t)cc->oh,
			.ow = (uint16_t)cc->ow, .stride_y = (uint8_t)cc->sy, .stride_x = (uint8_t)cc->sx,
			.dil_y = (uint8_t)cc->dy, .dil_x = (uint8_t)cc->dx, .pad_top = (uint8_t)cc->pt,
			.pad_left = (uint8_t)cc->pl, .layout = cc->layout,
			.dtype = cc->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, .pad_value = pad, .m0 = m0, .mt = Mb,
			.k0 = 0, .kt = K, .sram_off = a_off, .sram_pitch = K * e, .row = 0, .half = (uint8_t)(step & 1),
		};

		if (cc->layout == TNPU_LAYOUT_NHWC) {
			ic.stride_c = e;
			ic.stride_w = (uint64_t)cc->c * e;
			ic.stride_h = (uint64_t)cc->w * cc->c * e;
			ic.stride_n = (uint64_t)cc->h * cc->w * cc->c * e;
		} else {
			ic.stride_w = e;
			ic.stride_h = (uint64_t)cc->w * e;
			ic.stride_c = (uint64_t)cc->h * cc->w * e;
			ic.stride_n = (uint64_t)cc->c * cc->h * cc->w * e;
		}
		tcb_im2col(&cb, 0, &ic);
		tpkt_exe(&pkt, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
		tcb_dispatch(&cb, 0, 0, (uint8_t)(step & 1), 0, pkt.buf, pkt.len);
		tcb_dma(&cb, false, 0, out_va + (uint64_t)m0 * cc->cout * 4, cc->cout * 4, 0, 0, (uint8_t)(step & 1),
			c_off, cc->cout * 4, 0, cc->cout * 4, Mb, 1);
	}
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	A = malloc((size_t)M * K * e);
	explicit_im2col(cc, tsim_ptr(&s, in_va), A, pad);
	if (cc->f32) {
		float *ref = malloc((size_t)M * cc->cout * 4), *out = tsim_ptr(&s, out_va);

		ref_gemm_f32(M, cc->cout, K, A, tsim_ptr(&s, w_va), ref);
		for (size_t i = 0; i < (size_t)M * cc->cout; i++)
			cr_assert(fabsf(out[i] - ref[i]) <= 1e-3f * (1 + fabsf(ref[i])), "out[%zu] %g vs %g", i,
				  out[i], ref[i]);
		free(ref);
	} else {
		int32_t *ref = malloc((size_t)M * cc->cout * 4), *out = tsim_ptr(&s, out_va);

		ref_gemm_i8(M, cc->cout, K, A, tsim_ptr(&s, w_va), ref);
		for (size_t i = 0; i < (size_t)M * cc->cout; i++)
			cr_assert_eq(out[i], ref[i], "seed %llu out[%zu]", (unsigned long long)seed, i);
		free(ref);
	}
	free(A);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(conv, int8_nhwc_3x3_pad1_stride1_bit_exact)
{
	struct conv_case cc = { .n = 2, .h = 6, .w = 5, .c = 3, .r = 3, .s = 3, .cout = 8, .sy = 1, .sx = 1,
				.dy = 1, .dx = 1, .pt = 1, .pl = 1, .oh = 6, .ow = 5 };

	run_conv(&cc, 21);
}

Test(conv, int8_nchw_stride2_dilation2_bit_exact)
{
	struct conv_case cc = { .n = 1, .h = 9, .w = 8, .c = 4, .r = 3, .s = 2, .cout = 4, .sy = 2, .sx = 2,
				.dy = 2, .dx = 2, .pt = 2, .pl = 1, .oh = 4, .ow = 4, .layout = TNPU_LAYOUT_NCHW };

	run_conv(&cc, 22);
}

Test(conv, fp32_nhwc_matches_reference)
{
	struct conv_case cc = { .n = 1, .h = 7, .w = 7, .c = 5, .r = 3, .s = 3, .cout = 8, .sy = 2, .sx = 1,
				.dy = 1, .dx = 1, .pt = 1, .pl = 1, .oh = 4, .ow = 7, .f32 = true };

	run_conv(&cc, 23);
}

Test(conv, implicit_im2col_reads_only_the_input_footprint)
{
	/* Seed 002: 5x5x3 input, two 3x3x3 filters, stride 1 -> A is 9 x 27 (243 elements); 75 are read. */
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	uint64_t in;
	struct tnpu_cmd_im2col ic = {
		.stride_c = 1, .stride_w = 3, .stride_h = 15, .stride_n = 75, .n = 1, .h = 5, .w = 5, .c = 3,
		.r = 3, .s = 3, .oh = 3, .ow = 3, .stride_y = 1, .stride_x = 1, .dil_y = 1, .dil_x = 1,
		.layout = TNPU_LAYOUT_NHWC, .dtype = TNPU_DTYPE_INT8, .m0 = 0, .mt = 9, .k0 = 0, .kt = 27,
		.sram_off = 0, .sram_pitch = 27, .row = 0, .half = 0,
	};

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	in = tsim_buf(&s, 75);
	ic.src_va = in;
	tcb_init(&cb);
	tcb_im2col(&cb, 0, &ic);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], 75);
	/* invalid descriptors */
	cb.len = 0;
	ic.kt = 28;
	tcb_im2col(&cb, 0, &ic);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CONV_DESC);
	cb.len = 0;
	ic.kt = 27;
	ic.stride_c = 2;	/* channels must be contiguous for NHWC */
	tcb_im2col(&cb, 0, &ic);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CONV_DESC);
	tcb_free(&cb);
	tsim_fini(&s);
}
