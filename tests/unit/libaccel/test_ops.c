/* SPDX-License-Identifier: MIT */
/* Pooling, activations and quantisation helpers against CPU references. */
#include "common.h"

static void run_act(struct accel_dev *dev, bool f32, enum accel_act act, uint32_t len, uint64_t seed)
{
	uint32_t e = f32 ? 4 : 1;
	struct accel_buffer *bi = alloc_buf(dev, (uint64_t)len * e), *bo = alloc_buf(dev, (uint64_t)len * e);
	struct accel_tensor I, O;
	struct accel_activation_desc d;
	uint64_t s = seed;
	int ret;

	accel_tensor_2d(bi, 0, f32 ? ACCEL_FP32 : ACCEL_INT8, 1, len, &I);
	accel_tensor_2d(bo, 0, f32 ? ACCEL_FP32 : ACCEL_INT8, 1, len, &O);
	if (f32)
		fill_f32(accel_buffer_ptr(bi), len, &s);
	else
		fill_i8(accel_buffer_ptr(bi), len, &s);
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.output = &O;
	d.act = act;
	d.clamp_lo_i = -3;
	d.clamp_hi_i = 50;
	d.clamp_lo_f = 0.0f;
	d.clamp_hi_f = 0.75f;
	ret = accel_activation(dev, &d, NULL, NULL);
	cr_assert_eq(ret, 0, "activation: %s", accel_last_error(dev));
	for (uint32_t i = 0; i < len; i++) {
		if (f32) {
			float x = ((float *)accel_buffer_ptr(bi))[i], y = ((float *)accel_buffer_ptr(bo))[i];
			float ref = act == ACCEL_ACT_RELU ? (x < 0 ? 0 : x) : act == ACCEL_ACT_CLAMP ? fminf(fmaxf(x, 0.0f), 0.75f) : x;

			cr_assert_eq(y, ref, "seed %llu [%u]: %g -> %g, expected %g", (unsigned long long)seed, i, x, y, ref);
		} else {
			int x = ((int8_t *)accel_buffer_ptr(bi))[i], y = ((int8_t *)accel_buffer_ptr(bo))[i];
			int ref = act == ACCEL_ACT_RELU ? (x < 0 ? 0 : x) : act == ACCEL_ACT_CLAMP ? (x < -3 ? -3 : x > 50 ? 50 : x) : x;

			cr_assert_eq(y, ref, "seed %llu [%u]: %d -> %d, expected %d", (unsigned long long)seed, i, x, y, ref);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
}

Test(ops, activations_are_exact)
{
	struct accel_dev *dev = open_dev(NULL);

	run_act(dev, false, ACCEL_ACT_RELU, 1000, 1);
	run_act(dev, false, ACCEL_ACT_CLAMP, 77, 2);
	run_act(dev, true, ACCEL_ACT_RELU, 4099, 3);
	run_act(dev, true, ACCEL_ACT_CLAMP, 64, 4);
	run_act(dev, true, ACCEL_ACT_NONE, 5, 5);
	accel_close(dev);
}

static void run_pool(struct accel_dev *dev, bool f32, enum accel_pool_kind kind, bool nchw, uint32_t n, uint32_t c,
		     uint32_t h, uint32_t w, uint32_t win, uint32_t stride, uint32_t pad, uint64_t seed)
{
	uint32_t e = f32 ? 4 : 1, oh = (h + 2 * pad - win) / stride + 1, ow = (w + 2 * pad - win) / stride + 1;
	enum accel_layout L = nchw ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_NHWC;
	enum accel_dtype dt = f32 ? ACCEL_FP32 : ACCEL_INT8;
	struct accel_buffer *bi = alloc_buf(dev, (uint64_t)n * c * h * w * e);
	struct accel_buffer *bo = alloc_buf(dev, (uint64_t)n * c * oh * ow * e);
	struct accel_tensor I, O;
	struct accel_pool2d_desc d;
	int32_t mult;
	uint8_t shift;
	uint64_t s = seed;
	int ret;

	accel_tensor_4d(bi, 0, dt, L, n, c, h, w, &I);
	accel_tensor_4d(bo, 0, dt, L, n, c, oh, ow, &O);
	if (f32)
		fill_f32(accel_buffer_ptr(bi), (size_t)n * c * h * w, &s);
	else
		fill_i8(accel_buffer_ptr(bi), (size_t)n * c * h * w, &s);
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.output = &O;
	d.kind = kind;
	d.win_h = d.win_w = win;
	d.stride_h = d.stride_w = stride;
	d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = pad;
	ret = accel_pool2d(dev, &d, NULL, NULL);
	cr_assert_eq(ret, 0, "pool: %s", accel_last_error(dev));
	cr_assert_eq(accel_quant_from_scale(1.0 / (win * win), &mult, &shift), 0);
	for (uint32_t b = 0; b < n; b++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t y = 0; y < oh; y++)
				for (uint32_t x = 0; x < ow; x++) {
					double fs = 0, fm = -INFINITY;
					int32_t is = 0, im = -128;

					for (uint32_t ry = 0; ry < win; ry++)
						for (uint32_t rx = 0; rx < win; rx++) {
							int64_t iy = (int64_t)y * stride - pad + ry, ix = (int64_t)x * stride - pad + rx;
							size_t ii;

							if (iy < 0 || ix < 0 || iy >= h || ix >= w)
								continue;
							ii = nchw ? (((size_t)b * c + ch) * h + iy) * w + ix
								  : (((size_t)b * h + iy) * w + ix) * c + ch;
							if (f32) {
								double v = ((float *)accel_buffer_ptr(bi))[ii];

								fs += v;
								fm = v > fm ? v : fm;
							} else {
								int v = ((int8_t *)accel_buffer_ptr(bi))[ii];

								is += v;
								im = v > im ? v : im;
							}
						}
					{
						size_t oi = nchw ? (((size_t)b * c + ch) * oh + y) * ow + x
								 : (((size_t)b * oh + y) * ow + x) * c + ch;

						if (f32) {
							double got = ((float *)accel_buffer_ptr(bo))[oi];
							double ref = kind == ACCEL_POOL_MAX ? fm : fs / (win * win);

							cr_assert(fabs(got - ref) <= 1e-5 * (1 + fabs(ref)), "seed %llu pool %g vs %g",
								  (unsigned long long)seed, got, ref);
						} else {
							int got = ((int8_t *)accel_buffer_ptr(bo))[oi];
							int ref = kind == ACCEL_POOL_MAX ? im : ref_requant(is, mult, shift, 0);

							cr_assert_eq(got, ref, "seed %llu pool (b%u c%u y%u x%u) %d vs %d",
								     (unsigned long long)seed, b, ch, y, x, got, ref);
						}
					}
				}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
}

Test(ops, pooling_matches_reference)
{
	struct accel_dev *dev = open_dev(NULL);

	run_pool(dev, false, ACCEL_POOL_MAX, false, 2, 5, 9, 8, 3, 2, 1, 11);
	run_pool(dev, true, ACCEL_POOL_MAX, true, 1, 3, 7, 7, 2, 2, 0, 12);
	run_pool(dev, false, ACCEL_POOL_AVG, false, 1, 6, 8, 9, 3, 1, 1, 13);
	run_pool(dev, true, ACCEL_POOL_AVG, false, 2, 4, 6, 6, 2, 2, 0, 14);
	run_pool(dev, true, ACCEL_POOL_AVG, true, 1, 3, 5, 7, 3, 2, 1, 15);
	accel_close(dev);
}

/* Cycles of an fp32 global average pool of an [n, c, hw, hw] NHWC image (random values). */
static uint64_t global_avg_cycles(struct accel_dev *dev, uint32_t n, uint32_t c, uint32_t hw)
{
	struct accel_buffer *bi = alloc_buf(dev, (uint64_t)n * c * hw * hw * 4), *bo = alloc_buf(dev, (uint64_t)n * c * 4);
	struct accel_pool2d_desc d = { .kind = ACCEL_POOL_AVG, .win_h = hw, .win_w = hw, .stride_h = 1, .stride_w = 1 };
	struct accel_tensor I, O;
	struct accel_counters ct;
	struct accel_job *job = NULL;
	uint64_t s = 5;

	accel_tensor_4d(bi, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, n, c, hw, hw, &I);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, n, c, 1, 1, &O);
	fill_f32(accel_buffer_ptr(bi), (size_t)n * c * hw * hw, &s);
	d.input = &I;
	d.output = &O;
	cr_assert_eq(accel_pool2d(dev, &d, NULL, &job), 0, "pool: %s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0);
	cr_assert_eq(accel_job_counters(job, &ct), 0);
	accel_job_free(job);
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	return ct.total_cycles;
}

/* An fp32 global average pool of an NHWC image (a squeeze-and-excite gate's input) from 14 x 14 on
 * runs as one [1 x H*W] x [H*W x C] GEMM per image: the reference's means (and a 7 x 7 one's, still the
 * depthwise form), and EfficientNet-B0's first SE pool (112 x 112 x 32) and a 14 x 14 x 672 one in well
 * under the 482 108 and 190 439 cycles of the depthwise-convolution form. */
Test(ops, global_average_pool_nhwc_matches_reference_as_a_gemm)
{
	struct accel_dev *dev = open_dev(NULL);
	uint64_t cyc;

	run_pool(dev, true, ACCEL_POOL_AVG, false, 2, 40, 28, 28, 28, 1, 0, 16);
	run_pool(dev, true, ACCEL_POOL_AVG, false, 1, 5, 14, 14, 14, 1, 0, 17);
	run_pool(dev, true, ACCEL_POOL_AVG, false, 2, 9, 7, 7, 7, 1, 0, 18);
	cyc = global_avg_cycles(dev, 1, 32, 112);
	cr_assert_lt(cyc, 50000, "112x112x32 global average pool: %llu cycles", (unsigned long long)cyc);
	cyc = global_avg_cycles(dev, 1, 672, 14);
	cr_assert_lt(cyc, 20000, "14x14x672 global average pool: %llu cycles", (unsigned long long)cyc);
	accel_close(dev);
}

/* Below 14 x 14 the depthwise form is kept only where the depthwise block takes the layer: SqueezeNet's
 * 13 x 13 x 1000 class map (a channel count the block cannot split) took 255 246 cycles as per-channel
 * problems on the direct lowering; it is a GEMM now, with the reference's means.  ResNet-18's
 * 7 x 7 x 512 pool stays on the block (517 cycles against the GEMM's 649). */
Test(ops, small_global_average_pool_the_depthwise_block_refuses_is_a_gemm)
{
	struct accel_dev *dev = open_dev(NULL);
	uint64_t cyc;

	run_pool(dev, true, ACCEL_POOL_AVG, false, 1, 1000, 13, 13, 13, 1, 0, 19);
	run_pool(dev, true, ACCEL_POOL_AVG, false, 2, 520, 13, 13, 13, 1, 0, 20);
	cyc = global_avg_cycles(dev, 1, 1000, 13);
	cr_assert_lt(cyc, 20000, "13x13x1000 global average pool: %llu cycles", (unsigned long long)cyc);
	cyc = global_avg_cycles(dev, 1, 512, 7);
	cr_assert_lt(cyc, 600, "7x7x512 global average pool: %llu cycles (the depthwise block: 517)",
		     (unsigned long long)cyc);
	accel_close(dev);
}

Test(ops, quant_from_scale_is_accurate)
{
	static const double scales[] = { 1.0, 0.5, 1.0 / 9, 0.00123, 3.75, 1e-6, 1000.0 };

	for (unsigned i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
		int32_t m;
		uint8_t sh;

		cr_assert_eq(accel_quant_from_scale(scales[i], &m, &sh), 0);
		cr_assert(fabs(ldexp(m, -sh) / scales[i] - 1) < 1e-8, "scale %g -> %d >> %u", scales[i], m, sh);
	}
	{
		int32_t m;
		uint8_t sh;

		cr_assert_eq(accel_quant_from_scale(0.0, &m, &sh), -EINVAL);
		cr_assert_eq(accel_quant_from_scale(-1.0, &m, &sh), -EINVAL);
		cr_assert_eq(accel_quant_from_scale(NAN, &m, &sh), -EINVAL);
	}
}
