/* SPDX-License-Identifier: MIT */
/* accel_conv2d against a direct CPU convolution (no im2col in the reference). */
#include "common.h"

struct ccase {
	uint32_t n, c, h, w, k, r, s, sh, sw, pt, pl, pb, pr, dh, dw, g;
	bool f32, nchw, out_nchw, bias, relu, requant;
	bool qcol;	/* requant per output channel: K x 3 column records {bias, multiplier, shift} */
	bool res;	/* fp32 / int32 output: an SFU residual (ISA 2) of the output's layout added before the act */
	int zp;
};

static size_t idx4(bool nchw, uint32_t C, uint32_t H, uint32_t W, uint32_t n, uint32_t c, uint32_t y, uint32_t x)
{
	return nchw ? (((size_t)n * C + c) * H + y) * W + x : (((size_t)n * H + y) * W + x) * C + c;
}

static void norm(struct ccase *t)
{
	uint32_t *f[] = { &t->sh, &t->sw, &t->dh, &t->dw, &t->g, &t->n };

	for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!*f[i])
			*f[i] = 1;
}

/* When set, run_conv_norm submits the convolution as a job and stores its counters here. */
static struct accel_counters *conv_cnt_out;

static void run_conv_norm(struct accel_dev *dev, const struct ccase *t, uint64_t seed)
{
	uint32_t e = t->f32 ? 4 : 1, oe = t->f32 ? 4 : (t->requant ? 1 : 4), cg = t->c / t->g, kg = t->k / t->g;
	uint32_t oh = (t->h + t->pt + t->pb - t->dh * (t->r - 1) - 1) / t->sh + 1;
	uint32_t ow = (t->w + t->pl + t->pr - t->dw * (t->s - 1) - 1) / t->sw + 1;
	size_t in_n = (size_t)t->n * t->c * t->h * t->w, w_n = (size_t)t->k * cg * t->r * t->s;
	size_t out_n = (size_t)t->n * t->k * oh * ow;
	struct accel_buffer *bi = alloc_buf(dev, in_n * e), *bw = alloc_buf(dev, w_n * e);
	struct accel_buffer *bo = alloc_buf(dev, out_n * oe), *bb = alloc_buf(dev, (size_t)t->k * 12);
	struct accel_buffer *br = alloc_buf(dev, out_n * 4);
	enum accel_dtype dt = t->f32 ? ACCEL_FP32 : ACCEL_INT8;
	enum accel_layout L = t->nchw ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_NHWC;
	struct accel_tensor I, Wt, O, B, RES;
	struct accel_conv2d_desc d;
	uint64_t s = seed;
	int32_t mult = 0;
	uint8_t shift = 0;
	int ret;

	cr_assert_eq(accel_tensor_4d(bi, 0, dt, L, t->n, t->c, t->h, t->w, &I), 0);
	cr_assert_eq(accel_tensor_4d(bw, 0, dt, L, t->k, cg, t->r, t->s, &Wt), 0);
	cr_assert_eq(accel_tensor_4d(bo, 0, t->f32 ? ACCEL_FP32 : (t->requant ? ACCEL_INT8 : ACCEL_INT32),
				     t->out_nchw ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_NHWC, t->n, t->k, oh, ow, &O), 0);
	cr_assert_eq(accel_tensor_4d(br, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT32, t->out_nchw ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_NHWC,
				     t->n, t->k, oh, ow, &RES), 0);
	if (t->f32)
		fill_f32(accel_buffer_ptr(br), out_n, &s);
	else
		for (size_t i = 0; i < out_n; i++)
			((int32_t *)accel_buffer_ptr(br))[i] = (int32_t)(xrng(&s) % 200001) - 100000;
	if (t->qcol)
		cr_assert_eq(accel_tensor_2d(bb, 0, ACCEL_INT32, t->k, 3, &B), 0);
	else
		cr_assert_eq(accel_tensor_2d(bb, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT32, 1, t->k, &B), 0);
	if (t->f32) {
		fill_f32(accel_buffer_ptr(bi), in_n, &s);
		fill_f32(accel_buffer_ptr(bw), w_n, &s);
		fill_f32(accel_buffer_ptr(bb), t->k, &s);
	} else {
		fill_i8(accel_buffer_ptr(bi), in_n, &s);
		fill_i8(accel_buffer_ptr(bw), w_n, &s);
		for (uint32_t j = 0; j < t->k; j++)
			((int32_t *)accel_buffer_ptr(bb))[j] = (int32_t)(xrng(&s) % 20001) - 10000;
	}
	memset(accel_buffer_ptr(bo), 0x5A, out_n * oe);	/* every output element must be written */
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.weights = &Wt;
	d.output = &O;
	d.stride_h = t->sh;
	d.stride_w = t->sw;
	d.pad_top = t->pt;
	d.pad_left = t->pl;
	d.pad_bottom = t->pb;
	d.pad_right = t->pr;
	d.dil_h = t->dh;
	d.dil_w = t->dw;
	d.groups = t->g;
	d.input_zero_point = t->zp;
	d.epi.bias = t->bias || t->qcol ? &B : NULL;
	d.epi.act = t->relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	d.epi.residual = t->res ? &RES : NULL;
	if (t->qcol) {
		/* channel k: its bias (0 without .bias) and a scale between 1/4 and 4 x the per-tensor one */
		int32_t *rec = accel_buffer_ptr(bb);

		for (uint32_t j = 0; j < t->k; j++) {
			double sc = exp2((double)(xrng(&s) % 2049) / 512.0 - 2.0) / (64.0 * sqrt((double)cg * t->r * t->s));

			rec[3 * j] = t->bias ? (int32_t)(xrng(&s) % 20001) - 10000 : 0;
			cr_assert_eq(accel_quant_from_scale(sc, &rec[3 * j + 1], &shift), 0);
			rec[3 * j + 2] = shift;
		}
		d.epi.zero_point = -5;
	} else if (t->requant) {
		cr_assert_eq(accel_quant_from_scale(1.0 / (64.0 * sqrt((double)cg * t->r * t->s)), &mult, &shift), 0);
		d.epi.multiplier = mult;
		d.epi.shift = shift;
		d.epi.zero_point = -5;
	}
	{
		struct accel_job *job = NULL;

		ret = accel_conv2d(dev, &d, NULL, conv_cnt_out ? &job : NULL);
		cr_assert_eq(ret, 0, "seed %llu conv: %s: %s", (unsigned long long)seed, accel_strerror(ret),
			     accel_last_error(dev));
		if (job) {
			ret = accel_job_wait(job, -1);
			cr_assert_eq(ret, 0, "seed %llu: the job failed: %s", (unsigned long long)seed, accel_last_error(dev));
			cr_assert_eq(accel_job_counters(job, conv_cnt_out), 0);
			accel_job_free(job);
		}
	}
	for (uint32_t n = 0; n < t->n; n++)
		for (uint32_t k = 0; k < t->k; k++)
			for (uint32_t y = 0; y < oh; y++)
				for (uint32_t x = 0; x < ow; x++) {
					uint32_t g = k / kg;
					int64_t isum = 0;
					double fsum = 0, mag = 0;
					size_t oi = idx4(t->out_nchw, t->k, oh, ow, n, k, y, x);

					for (uint32_t c = 0; c < cg; c++)
						for (uint32_t ry = 0; ry < t->r; ry++)
							for (uint32_t rx = 0; rx < t->s; rx++) {
								int64_t iy = (int64_t)y * t->sh - t->pt + (int64_t)ry * t->dh;
								int64_t ix = (int64_t)x * t->sw - t->pl + (int64_t)rx * t->dw;
								size_t wi = t->nchw ? (((size_t)k * cg + c) * t->r + ry) * t->s + rx
										    : (((size_t)k * t->r + ry) * t->s + rx) * cg + c;
								bool in = iy >= 0 && iy < t->h && ix >= 0 && ix < t->w;

								if (t->f32) {
									double v = in ? ((const float *)accel_buffer_ptr(bi))[idx4(
											  t->nchw, t->c, t->h, t->w, n, g * cg + c,
											  (uint32_t)iy, (uint32_t)ix)]
										      : 0.0;
									double p = v * ((const float *)accel_buffer_ptr(bw))[wi];

									fsum += p;
									mag += fabs(p);
								} else {
									int v = in ? ((const int8_t *)accel_buffer_ptr(bi))[idx4(
											     t->nchw, t->c, t->h, t->w, n, g * cg + c,
											     (uint32_t)iy, (uint32_t)ix)]
										   : t->zp;

									isum += (int64_t)v * ((const int8_t *)accel_buffer_ptr(bw))[wi];
								}
							}
					if (t->f32) {
						double got = ((const float *)accel_buffer_ptr(bo))[oi];

						if (t->bias)
							fsum += ((const float *)accel_buffer_ptr(bb))[k];
						if (t->res) {
							fsum += ((const float *)accel_buffer_ptr(br))[oi];
							mag += fabs(((const float *)accel_buffer_ptr(br))[oi]);
						}
						if (t->relu && fsum < 0)
							fsum = 0;
						cr_assert(fabs(got - fsum) <= F32_RTOL * (1 + mag),
							  "seed %llu out(n%u,k%u,y%u,x%u) = %g, expected %g",
							  (unsigned long long)seed, n, k, y, x, got, fsum);
					} else {
						int32_t acc = (int32_t)isum;

						if (t->qcol) {
							const int32_t *rec = (const int32_t *)accel_buffer_ptr(bb) + 3 * k;

							acc += rec[0];
							mult = rec[1];
							shift = (uint8_t)rec[2];
						} else if (t->bias) {
							acc += ((const int32_t *)accel_buffer_ptr(bb))[k];
						}
						if (t->res)
							acc = (int32_t)((uint32_t)acc + (uint32_t)((const int32_t *)accel_buffer_ptr(br))[oi]);
						if (t->relu && acc < 0)
							acc = 0;
						if (t->requant || t->qcol) {
							int8_t got = ((const int8_t *)accel_buffer_ptr(bo))[oi];

							cr_assert_eq(got, ref_requant(acc, mult, shift, -5),
								     "seed %llu out(n%u,k%u,y%u,x%u) = %d, expected %d",
								     (unsigned long long)seed, n, k, y, x, got,
								     ref_requant(acc, mult, shift, -5));
						} else {
							int32_t got = ((const int32_t *)accel_buffer_ptr(bo))[oi];

							cr_assert_eq(got, acc, "seed %llu out(n%u,k%u,y%u,x%u) = %d, expected %d",
								     (unsigned long long)seed, n, k, y, x, got, acc);
						}
					}
				}
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_buffer_free(bb);
	accel_buffer_free(br);
}

/* Fields left 0 in a case mean 1 (stride, dilation, groups, batch). */
static void run_conv_case(struct accel_dev *dev, const struct ccase *t0, uint64_t seed)
{
	struct ccase t = *t0;

	norm(&t);
	run_conv_norm(dev, &t, seed);
}

#define CC(...) ((struct ccase){ __VA_ARGS__ })

Test(conv, int8_3x3_pad1_matches_reference)
{
	struct accel_dev *dev = open_dev(NULL);

	run_conv_case(dev, &CC(.c = 16, .h = 12, .w = 10, .k = 24, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1), 1);
	accel_close(dev);
}

Test(conv, fp32_3x3_matches_reference)
{
	struct accel_dev *dev = open_dev(NULL);

	run_conv_case(dev, &CC(.c = 8, .h = 9, .w = 11, .k = 20, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
			       .f32 = true, .bias = true), 2);
	accel_close(dev);
}

/* The direct lowering's tap loop ends in one SFU APPLY per tile: bias and ReLU run once per output
 * element, not once per tap (a chained MAC would apply the SFU after each of the 9 taps of the LAST
 * EXE).  Results against the CPU reference. */
Test(conv, direct_bias_relu_applies_the_sfu_once_per_output)
{
	struct accel_dev *dev = open_dev("sim:conv=direct");
	struct accel_counters cnt;
	uint64_t outs = 1ull * 64 * 20 * 20;

	if (!test_is_sim())
		cr_skip_test("forces the direct lowering (a sim option)");
	conv_cnt_out = &cnt;
	run_conv_case(dev, &CC(.c = 32, .h = 20, .w = 20, .k = 64, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
			       .f32 = true, .bias = true, .relu = true), 3);
	conv_cnt_out = NULL;
	cr_assert_geq(cnt.sfu_ops, outs);
	cr_assert_lt(cnt.sfu_ops, 2 * outs, "SFU ops %llu for %llu outputs", (unsigned long long)cnt.sfu_ops,
		     (unsigned long long)outs);
	accel_close(dev);
}

/* A 1x1 expansion (MobileNetV2's 16 -> 96 channels at 56x56, fp32, bias + ReLU) is bound by its output
 * bytes: the direct lowering stores the array rows' output blocks as one DMA_BANDS_D2H, every storage
 * unit through its own host port, instead of one 128 B/cycle stream per row (issue #16).  Results
 * against the CPU reference. */
Test(conv, direct_outputs_leave_through_the_host_ports)
{
	struct accel_dev *dev = open_dev("sim:conv=direct");
	struct accel_counters cnt;
	uint64_t obytes = 56ull * 56 * 96 * 4;

	if (!test_is_sim())
		cr_skip_test("forces the direct lowering (a sim option)");
	conv_cnt_out = &cnt;
	run_conv_case(dev, &CC(.c = 16, .h = 56, .w = 56, .k = 96, .r = 1, .s = 1, .f32 = true, .bias = true,
			       .relu = true), 4);
	conv_cnt_out = NULL;
	cr_assert_lt(cnt.store_cycles, obytes / 128 / 2, "store cycles %llu for %llu output bytes",
		     (unsigned long long)cnt.store_cycles, (unsigned long long)obytes);
	accel_close(dev);
}

/* The direct lowering's input band and weights (int8 28x28x128 -> 128, 3x3) reach the storage units
 * through their own host ports (DMA_BANDS_H2D, 256 B/cycle each, in parallel): the load engine is busy
 * at most as long as the footprint's bytes take on one 128 B/cycle stream plus two command setups
 * (the tap-major start loads the weights tap by tap, a setup each; 2 336 cycles with single-stream
 * DMAs, issue #16).  Results against the CPU reference. */
Test(conv, direct_inputs_and_weights_arrive_through_the_host_ports)
{
	struct accel_dev *dev = open_dev("sim:conv=direct");
	struct accel_counters cnt;
	uint64_t footprint = 28ull * 28 * 128 + 128ull * 128 * 9;

	if (!test_is_sim())
		cr_skip_test("forces the direct lowering (a sim option)");
	conv_cnt_out = &cnt;
	run_conv_case(dev, &CC(.c = 128, .h = 28, .w = 28, .k = 128, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
			       .bias = true, .relu = true), 6);
	conv_cnt_out = NULL;
	cr_assert_leq(cnt.load_cycles, footprint / 128 + 2 * 32, "load cycles %llu for a %llu-byte footprint",
		     (unsigned long long)cnt.load_cycles, (unsigned long long)footprint);
	accel_close(dev);
}

Test(conv, edge_cases)
{
	struct accel_dev *dev = open_dev(NULL);
	struct ccase cases[] = {
		CC(.c = 1, .h = 1, .w = 1, .k = 1, .r = 1, .s = 1),					/* 1x1 everything */
		CC(.c = 64, .h = 7, .w = 7, .k = 33, .r = 1, .s = 1),					/* pointwise */
		CC(.c = 5, .h = 15, .w = 13, .k = 7, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1),
		CC(.c = 3, .h = 14, .w = 12, .k = 6, .r = 3, .s = 3, .dh = 2, .dw = 3, .pt = 2, .pl = 3, .pb = 2, .pr = 3),
		CC(.n = 3, .c = 4, .h = 6, .w = 5, .k = 9, .r = 2, .s = 3, .pt = 1, .pb = 0, .pl = 2, .pr = 1),	/* batch */
		CC(.c = 12, .h = 8, .w = 8, .k = 12, .r = 3, .s = 3, .g = 12, .pt = 1, .pl = 1, .pb = 1, .pr = 1),	/* depthwise */
		CC(.c = 8, .h = 8, .w = 6, .k = 16, .r = 3, .s = 3, .g = 4, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = true),
		CC(.c = 3, .h = 11, .w = 11, .k = 8, .r = 5, .s = 5, .sh = 3, .sw = 2, .zp = -7, .pt = 2, .pl = 2, .pb = 2, .pr = 2),
		CC(.c = 6, .h = 7, .w = 9, .k = 10, .r = 3, .s = 3, .nchw = true, .pt = 1, .pl = 1, .pb = 1, .pr = 1),
		CC(.n = 2, .c = 6, .h = 7, .w = 9, .k = 10, .r = 3, .s = 3, .nchw = true, .out_nchw = true, .f32 = true),
		CC(.n = 2, .c = 16, .h = 10, .w = 10, .k = 32, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = true,
		   .relu = true, .requant = true),
		CC(.c = 300, .h = 5, .w = 5, .k = 20, .r = 3, .s = 3, .f32 = true, .relu = true),	/* large K */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_conv_case(dev, &cases[i], 10 + i);
	accel_close(dev);
}

Test(conv, edge_cases_through_im2col_lowering)
{
	/* The same shapes forced through the IM2COL lowering (the default picks the direct form). */
	struct accel_dev *dev = open_dev("sim:conv=im2col");
	struct ccase cases[] = {
		CC(.c = 5, .h = 15, .w = 13, .k = 7, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1),
		CC(.c = 3, .h = 14, .w = 12, .k = 6, .r = 3, .s = 3, .dh = 2, .dw = 3, .pt = 2, .pl = 3, .pb = 2, .pr = 3),
		CC(.n = 3, .c = 4, .h = 6, .w = 5, .k = 9, .r = 2, .s = 3, .pt = 1, .pb = 0, .pl = 2, .pr = 1),
		CC(.c = 3, .h = 11, .w = 11, .k = 8, .r = 5, .s = 5, .sh = 3, .sw = 2, .zp = -7, .pt = 2, .pl = 2, .pb = 2, .pr = 2),
		CC(.n = 2, .c = 16, .h = 10, .w = 10, .k = 32, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = true,
		   .relu = true, .requant = true),
		CC(.c = 40, .h = 6, .w = 6, .k = 20, .r = 3, .s = 3, .f32 = true, .bias = true),
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_conv_case(dev, &cases[i], 40 + i);
	accel_close(dev);
}

Test(conv, direct_lowering_with_bands_batches_and_zero_point)
{
	/* 32 KiB halves: these images do not fit a half, so the direct lowering works in bands of output
	 * rows (pad rows filled per band), batches alternate halves, the zero point pads int8 inputs. */
	struct accel_dev *devs[2] = { open_dev("sim:rows=2,cols=2,pes=4,sram=65536,conv=direct"),
				      open_dev("sim:conv=direct") };
	struct ccase cases[] = {
		CC(.c = 16, .h = 48, .w = 40, .k = 8, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .zp = 5),
		CC(.n = 2, .c = 12, .h = 45, .w = 37, .k = 6, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
		   .pr = 1, .bias = true, .relu = true, .requant = true, .zp = -3),
		CC(.n = 3, .c = 8, .h = 30, .w = 30, .k = 10, .r = 5, .s = 3, .dh = 2, .pt = 4, .pb = 3, .pl = 1, .pr = 1,
		   .f32 = true, .bias = true),
		CC(.c = 24, .h = 20, .w = 20, .k = 24, .r = 3, .s = 3, .g = 24, .pt = 1, .pl = 1, .pb = 1, .pr = 1),	/* depthwise */
		CC(.n = 2, .c = 40, .h = 9, .w = 9, .k = 40, .r = 3, .s = 3, .g = 40, .sh = 2, .sw = 2, .zp = 9, .requant = true),
	};

	/* (The default geometry holds these images whole: the tap-major start then leaves rows without a
	 * second tile, the case that once leaked an accumulator into the next image.) */
	for (unsigned v = 0; v < 2; v++) {
		for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			run_conv_case(devs[v], &cases[i], 60 + 10 * v + i);
		accel_close(devs[v]);
	}
}

Test(conv, long_batches_are_split_into_several_hardware_jobs)
{
	struct accel_dev *dev;

	if (!test_is_sim())
		cr_skip_test("needs a sim with a small command-buffer limit");
	cr_assert_eq(accel_open("sim:rows=2,cols=2,pes=4,sram=65536,cmdbuf=16384,conv=direct", &dev), 0);
	run_conv_case(dev, &CC(.n = 9, .c = 8, .h = 20, .w = 11, .k = 12, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
			       .bias = true, .relu = true, .requant = true, .zp = 2), 70);
	run_conv_case(dev, &CC(.n = 5, .c = 6, .h = 40, .w = 30, .k = 8, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1,
			       .f32 = true), 71);
	accel_close(dev);
}

Test(conv, wide_output_and_many_channels)
{
	/* OW larger than one accumulator tile allows (x chunks) and K spread over every PE. */
	struct accel_dev *dev = open_dev(NULL);

	run_conv_case(dev, &CC(.c = 8, .h = 3, .w = 100, .k = 1024, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
			       .bias = true), 50);
	run_conv_case(dev, &CC(.n = 2, .c = 24, .h = 9, .w = 70, .k = 96, .r = 3, .s = 3, .pl = 1, .pr = 1, .f32 = true,
			       .relu = true), 51);
	accel_close(dev);
}

/* Per-channel requantisation in the convolution's own epilogue (SFU QCOL, ISA 2): every lowering
 * (direct, implicit im2col, depthwise block, grouped), NHWC and NCHW, bands, zero points, many channels. */
Test(conv, per_channel_requant_records_through_every_lowering)
{
	const char *devs[] = { NULL, "sim:conv=im2col", "sim:rows=2,cols=2,pes=4,sram=65536,conv=direct",
			       "sim:rows=2,cols=2,pes=4,sram=65536" };
	struct ccase cases[] = {
		CC(.c = 16, .h = 12, .w = 10, .k = 24, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = true,
		   .relu = true, .zp = 3),
		CC(.n = 2, .c = 12, .h = 45, .w = 37, .k = 6, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
		   .pr = 1, .bias = true, .zp = -3),
		CC(.c = 8, .h = 3, .w = 40, .k = 300, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = true),
		CC(.c = 24, .h = 20, .w = 20, .k = 24, .r = 3, .s = 3, .g = 24, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		   .bias = true, .relu = true, .zp = 7),	/* depthwise */
		CC(.n = 2, .c = 40, .h = 9, .w = 9, .k = 40, .r = 3, .s = 3, .g = 40, .sh = 2, .sw = 2, .zp = 9),
		CC(.c = 8, .h = 7, .w = 9, .k = 12, .r = 3, .s = 3, .g = 2, .pt = 1, .pl = 1, .bias = true),	/* grouped */
		CC(.c = 16, .h = 14, .w = 14, .k = 32, .r = 1, .s = 1, .sh = 2, .sw = 2, .bias = true, .nchw = true,
		   .out_nchw = true),
		CC(.c = 3, .h = 11, .w = 11, .k = 8, .r = 5, .s = 5, .sh = 3, .sw = 2, .zp = -7, .pt = 2, .pl = 2, .pb = 2,
		   .pr = 2, .nchw = true),
	};

	for (unsigned v = 0; v < sizeof(devs) / sizeof(devs[0]); v++) {
		struct accel_dev *dev = open_dev(devs[v]);

		for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct ccase t = cases[i];

			t.qcol = t.requant = true;
			run_conv_case(dev, &t, 900 + 10 * v + i);
		}
		accel_close(dev);
	}
}

Test(conv, small_geometry_randomized_sweep)
{
	uint64_t seed = 0xc0de, s = seed;
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	struct accel_dev *dev2 = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,conv=im2col");
	struct accel_dev *dev3 = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,conv=direct");

	for (int it = 0; it < 36; it++) {
		struct ccase t = CC(.c = 1);
		uint64_t r = xrng(&s);

		t.n = 1 + (uint32_t)(xrng(&s) % 2);
		t.g = (r & 3) == 0 ? 2 : 1;
		t.c = t.g * (1 + (uint32_t)(xrng(&s) % 9));
		t.k = t.g * (1 + (uint32_t)(xrng(&s) % 11));
		t.r = 1 + (uint32_t)(xrng(&s) % 3);
		t.s = 1 + (uint32_t)(xrng(&s) % 3);
		t.sh = 1 + (uint32_t)(xrng(&s) % 2);
		t.sw = 1 + (uint32_t)(xrng(&s) % 2);
		t.dh = 1 + (uint32_t)((r >> 3) & 1);
		t.pt = (uint32_t)(xrng(&s) % 2);
		t.pb = (uint32_t)(xrng(&s) % 2);
		t.pl = (uint32_t)(xrng(&s) % 2);
		t.pr = (uint32_t)(xrng(&s) % 2);
		t.h = t.dh * (t.r - 1) + 1 + (uint32_t)(xrng(&s) % 8);
		t.w = t.s + (uint32_t)(xrng(&s) % 8);
		t.f32 = r & 16;
		t.nchw = r & 32;
		t.out_nchw = (r & 64) && (r & 128);
		t.bias = r & 256;
		t.relu = r & 512;
		t.requant = !t.f32 && (r & 1024);
		t.qcol = t.requant && (r & 2048);
		t.zp = !t.f32 && (r & 4096) ? (int)(xrng(&s) % 255) - 127 : 0;	/* int8 padding value */
		run_conv_case(it % 3 == 0 ? dev : it % 3 == 1 ? dev2 : dev3, &t, seed * 1000 + (uint64_t)it);
	}
	accel_close(dev);
	accel_close(dev2);
	accel_close(dev3);
}

/* Run t on dev_on (pointwise lowering forced) and dev_off (without it), both against the CPU reference;
 * true when the device cycles differ (the forced run really took the pointwise lowering). */
static bool run_pw_pair(struct accel_dev *dev_on, struct accel_dev *dev_off, const struct ccase *t, uint64_t seed)
{
	struct accel_counters on, off;

	memset(&on, 0, sizeof(on));
	memset(&off, 0, sizeof(off));
	conv_cnt_out = &on;
	run_conv_case(dev_on, t, seed);
	conv_cnt_out = &off;
	run_conv_case(dev_off, t, seed);
	conv_cnt_out = NULL;
	return on.total_cycles != off.total_cycles;
}

/* The pointwise lowering (conv_pw.c: a 1x1 stride-1 unpadded NHWC convolution as one streamed GEMM,
 * the units on pixel runs or on channel blocks, the PEs on pixels and/or channels) against the CPU
 * reference: a seeded sweep of odd shapes, batches, int8 (input zero points, per-tensor and per-channel
 * requantisation, int32 output, bias, ReLU) and fp32, forced with pw=on on the default geometry, on
 * 128 KiB storage units and on the small 2x2x4 array with 64 KiB units (several segments alternating
 * halves).  Every case also runs without the lowering (pw=off); nearly all must differ in cycles, so
 * the sweep cannot pass by falling back to the other lowerings. */
Test(conv, pointwise_lowering_sweep)
{
	static const char *const geo[][2] = {
		{ "sim:pw=on", "sim:pw=off" },
		{ "sim:sram=131072,pw=on", "sim:sram=131072,pw=off" },
		{ "sim:rows=2,cols=2,pes=4,sram=65536,pw=on", "sim:rows=2,cols=2,pes=4,sram=65536,pw=off" },
	};
	uint64_t seed = 0x9e11, s = seed;
	unsigned differ = 0, total = 0;

	if (!test_is_sim())
		cr_skip_test("forces the pointwise lowering (a sim option)");
	for (unsigned v = 0; v < sizeof(geo) / sizeof(geo[0]); v++) {
		struct accel_dev *don = open_dev(geo[v][0]), *doff = open_dev(geo[v][1]);

		for (unsigned it = 0; it < 20; it++) {
			struct ccase t = CC(.r = 1, .s = 1);
			uint64_t r = xrng(&s);
			bool big = it % 3 == 2;	/* more pixels than a small half holds */

			t.n = 1 + (uint32_t)(xrng(&s) % 3);
			t.c = 1 + (uint32_t)(xrng(&s) % (big ? 200 : 70));
			t.k = 1 + (uint32_t)(xrng(&s) % (big ? 150 : 70));
			t.h = 1 + (uint32_t)(xrng(&s) % (big ? 40 : 12));
			t.w = 1 + (uint32_t)(xrng(&s) % (big ? 40 : 12));
			t.f32 = r & 1;
			t.bias = r & 2;
			t.relu = r & 4;
			t.requant = !t.f32 && (r & 8);
			t.qcol = t.requant && (r & 16);
			t.res = !t.requant && (r & 64);
			t.zp = !t.f32 && (r & 32) ? (int)(xrng(&s) % 255) - 127 : 0;
			differ += run_pw_pair(don, doff, &t, seed * 1000 + v * 100 + it);
			total++;
		}
		accel_close(don);
		accel_close(doff);
	}
	{
		/* directed: channel blocks per unit and two segments on the small array, the second one's
		 * pixels ending in a partial DMA row that every unit takes (the broadcast tail) */
		struct accel_dev *don = open_dev(geo[2][0]), *doff = open_dev(geo[2][1]);

		differ += run_pw_pair(don, doff,
				      &CC(.c = 200, .h = 7, .w = 9, .k = 150, .r = 1, .s = 1, .requant = true, .qcol = true,
					  .bias = true, .zp = 9),
				      seed * 1000 + 999);
		total++;
		accel_close(don);
		accel_close(doff);
	}
	cr_assert_geq(differ * 10, total * 9, "only %u of %u cases took the pointwise lowering", differ, total);
}

/* Row mode of the same lowering: NHWC convolutions whose filter rows are S*C contiguous elements (up to
 * 4 rows, dilation 1 along x) -- strides, padding with and without an input zero point, row dilation,
 * batches, segments on the small array -- against the CPU reference, forced with pw=on, and again
 * nearly every case must differ from pw=off in cycles. */
Test(conv, pointwise_lowering_row_mode_sweep)
{
	static const char *const geo[][2] = {
		{ "sim:pw=on", "sim:pw=off" },
		{ "sim:rows=2,cols=2,pes=4,sram=65536,pw=on", "sim:rows=2,cols=2,pes=4,sram=65536,pw=off" },
	};
	uint64_t seed = 0x40e5, s = seed;
	unsigned differ = 0, total = 0;

	if (!test_is_sim())
		cr_skip_test("forces the pointwise lowering (a sim option)");
	for (unsigned v = 0; v < sizeof(geo) / sizeof(geo[0]); v++) {
		struct accel_dev *don = open_dev(geo[v][0]), *doff = open_dev(geo[v][1]);

		for (unsigned it = 0; it < 18; it++) {
			struct ccase t = CC(.c = 1);
			uint64_t r = xrng(&s);
			bool big = it % 3 == 2;

			t.n = 1 + (uint32_t)(xrng(&s) % 2);
			t.c = 1 + (uint32_t)(xrng(&s) % (big ? 40 : 12));
			t.k = 1 + (uint32_t)(xrng(&s) % (big ? 70 : 40));
			t.r = 1 + (uint32_t)(xrng(&s) % 4);
			t.s = 1 + (uint32_t)(xrng(&s) % 3);
			t.sh = 1 + (uint32_t)(xrng(&s) % 2);
			t.sw = 1 + (uint32_t)(xrng(&s) % 2);
			t.dh = 1 + (uint32_t)((r >> 7) & 1);
			t.pt = (uint32_t)(xrng(&s) % 2);
			t.pb = (uint32_t)(xrng(&s) % 2);
			t.pl = (uint32_t)(xrng(&s) % 2);
			t.pr = (uint32_t)(xrng(&s) % 2);
			t.h = t.dh * (t.r - 1) + 1 + (uint32_t)(xrng(&s) % (big ? 40 : 9));
			t.w = t.s + (uint32_t)(xrng(&s) % (big ? 40 : 9));
			t.f32 = r & 1;
			t.bias = r & 2;
			t.relu = r & 4;
			t.requant = !t.f32 && (r & 8);
			t.qcol = t.requant && (r & 16);
			t.res = !t.requant && (r & 64);
			t.zp = !t.f32 && (r & 32) ? (int)(xrng(&s) % 255) - 127 : 0;
			differ += run_pw_pair(don, doff, &t, seed * 1000 + v * 100 + it);
			total++;
		}
		accel_close(don);
		accel_close(doff);
	}
	{
		/* directed: several channel tiles with segments in one half, two halves with their own
		 * weights (default geometry and the small array), channel tiles with segments */
		struct {
			unsigned v;
			struct ccase t;
		} dc[] = {
			{ 0, CC(.n = 3, .c = 41, .h = 7, .w = 51, .k = 349, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1,
				.pl = 1, .pb = 1, .pr = 1, .requant = true, .qcol = true, .bias = true, .zp = -128) },
			{ 0, CC(.n = 2, .c = 24, .h = 16, .w = 25, .k = 2, .r = 3, .s = 3, .sh = 2, .sw = 2, .f32 = true,
				.bias = true) },
			{ 1, CC(.n = 3, .c = 15, .h = 59, .w = 23, .k = 82, .r = 2, .s = 2, .sh = 2, .sw = 2,
				.requant = true, .zp = 17) },
			{ 0, CC(.c = 27, .h = 53, .w = 51, .k = 302, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1,
				.pb = 1, .pr = 1, .f32 = true, .relu = true) },
		};

		for (unsigned i = 0; i < sizeof(dc) / sizeof(dc[0]); i++) {
			struct accel_dev *don = open_dev(geo[dc[i].v][0]), *doff = open_dev(geo[dc[i].v][1]);

			differ += run_pw_pair(don, doff, &dc[i].t, seed * 1000 + 900 + i);
			total++;
			accel_close(don);
			accel_close(doff);
		}
	}
	cr_assert_geq(differ * 10, total * 8, "only %u of %u cases took the pointwise lowering", differ, total);
}

/* MobileNetV2's pointwise shapes and stem and ResNet shapes (int8 QDQ: per-channel records, input zero
 * point; fp32: bias + ReLU) take the pointwise lowering by default (faster than the direct and IM2COL
 * estimates) and match the CPU reference; an NCHW 1x1 convolution is not eligible (identical cycles
 * with and without it). */
Test(conv, pointwise_lowering_takes_mobilenet_shapes)
{
	struct accel_dev *dauto, *doff;
	struct ccase cases[] = {
		CC(.c = 144, .h = 56, .w = 56, .k = 24, .r = 1, .s = 1, .requant = true, .qcol = true, .bias = true,
		   .zp = -128),
		CC(.c = 16, .h = 112, .w = 112, .k = 96, .r = 1, .s = 1, .requant = true, .qcol = true, .bias = true,
		   .relu = true, .zp = -128),
		CC(.c = 960, .h = 7, .w = 7, .k = 160, .r = 1, .s = 1, .requant = true, .qcol = true, .bias = true),
		CC(.c = 320, .h = 7, .w = 7, .k = 1280, .r = 1, .s = 1, .requant = true, .qcol = true, .bias = true),
		CC(.n = 2, .c = 32, .h = 28, .w = 28, .k = 192, .r = 1, .s = 1, .f32 = true, .bias = true, .relu = true),
		CC(.c = 64, .h = 14, .w = 14, .k = 384, .r = 1, .s = 1, .bias = true),	/* int32 output */
		/* fp32 with the block's residual fused (the SFU residual operand) */
		CC(.c = 144, .h = 56, .w = 56, .k = 24, .r = 1, .s = 1, .f32 = true, .bias = true, .res = true),
		CC(.c = 576, .h = 14, .w = 14, .k = 96, .r = 1, .s = 1, .f32 = true, .bias = true, .res = true),
		/* row mode: the stem (3x3 stride 2, 3 -> 32, zero point -128), a ResNet 3x3 and 1x1 stride 2 */
		CC(.c = 3, .h = 224, .w = 224, .k = 32, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
		   .pr = 1, .requant = true, .qcol = true, .bias = true, .relu = true, .zp = -128),
		CC(.c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		   .requant = true, .qcol = true, .bias = true, .zp = 3),
		CC(.c = 128, .h = 28, .w = 28, .k = 256, .r = 1, .s = 1, .sh = 2, .sw = 2, .requant = true, .qcol = true,
		   .bias = true),
	};
	struct ccase nchw = CC(.c = 24, .h = 14, .w = 14, .k = 40, .r = 1, .s = 1, .nchw = true, .bias = true);

	if (!test_is_sim())
		cr_skip_test("compares with a sim option (pw=off)");
	dauto = open_dev("sim");
	doff = open_dev("sim:pw=off");
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert(run_pw_pair(dauto, doff, &cases[i], 120 + i), "case %u did not take the pointwise lowering", i);
	norm(&nchw);
	cr_assert(!run_pw_pair(dauto, doff, &nchw, 130), "an NCHW convolution changed with the pointwise lowering");
	accel_close(dauto);
	accel_close(doff);
}

/* Seed 002: no unrolled operand is ever read from memory.  The direct lowering reads every input and
 * weight byte exactly once; IM2COL tiles read only their footprint, far less than explicit im2col. */
static struct accel_counters conv_counters(const char *devname, uint32_t c, uint32_t hw, uint32_t k)
{
	struct accel_dev *dev = open_dev(devname);
	struct accel_buffer *bi = alloc_buf(dev, (uint64_t)c * hw * hw), *bw = alloc_buf(dev, (uint64_t)k * c * 9);
	struct accel_buffer *bo = alloc_buf(dev, (uint64_t)k * hw * hw * 4);
	struct accel_tensor I, W, O;
	struct accel_conv2d_desc d;
	struct accel_counters cnt;
	struct accel_job *job;

	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, c, hw, hw, &I);
	accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, k, c, 3, 3, &W);
	accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, k, hw, hw, &O);
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.weights = &W;
	d.output = &O;
	d.stride_h = d.stride_w = d.dil_h = d.dil_w = d.groups = 1;
	d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
	cr_assert_eq(accel_conv2d(dev, &d, NULL, &job), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_counters(job, &cnt), 0);
	accel_job_free(job);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_close(dev);
	return cnt;
}

Test(conv, host_reads_stay_near_the_input_footprint)
{
	uint32_t c = 32, hw = 20, k = 64;
	uint64_t footprint = (uint64_t)c * hw * hw + (uint64_t)k * c * 9, explicit_a = (uint64_t)hw * hw * 9 * c;
	struct accel_counters direct, im2col;

	if (!test_is_sim())
		cr_skip_test("compares two sim lowerings");
	direct = conv_counters("sim", c, hw, k);
	im2col = conv_counters("sim:conv=im2col", c, hw, k);
	cr_assert_eq(direct.bytes_h2d, footprint, "direct lowering read %llu bytes, footprint %llu",
		     (unsigned long long)direct.bytes_h2d, (unsigned long long)footprint);
	cr_assert_lt(im2col.bytes_h2d, explicit_a, "IM2COL read %llu bytes, explicit im2col would read %llu",
		     (unsigned long long)im2col.bytes_h2d, (unsigned long long)explicit_a);
	cr_assert_eq(direct.bytes_d2h, (uint64_t)k * hw * hw * 4);
}

/* Issue #6: fp32 ResNet-50 3x3 layers whose padded image (and weights) do not fit a 512 KiB half
 * still read at most 1.1x their footprint (input + weights): bands in one half with the weights
 * resident (56x56x64, 28x28x128), or the image in both halves with the weights streamed in K chunks
 * (14x14x256).  Results against the CPU reference. */
Test(conv, fp32_input_larger_than_a_half_reads_near_its_footprint)
{
	struct accel_dev *dev;
	struct ccase cases[] = {
		CC(.c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .f32 = true,
		   .bias = true),
		CC(.c = 128, .h = 28, .w = 28, .k = 128, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .f32 = true),
		CC(.c = 256, .h = 14, .w = 14, .k = 256, .r = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .f32 = true,
		   .bias = true, .relu = true),
	};

	if (!test_is_sim())
		cr_skip_test("needs the default sim geometry (1 MiB storage units)");
	dev = open_dev("sim");
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ccase *t = &cases[i];
		uint64_t in_b = (uint64_t)t->c * t->h * t->w * 4, w_b = (uint64_t)t->k * t->c * 9 * 4;
		struct accel_counters cnt;

		cr_assert_gt((uint64_t)(t->h + 2) * (t->w + 2) * t->c * 4 + w_b, 512 * 1024,
			     "case %u: the padded image and weights should not fit a half", i);
		memset(&cnt, 0, sizeof(cnt));
		conv_cnt_out = &cnt;
		run_conv_case(dev, t, 90 + i);
		conv_cnt_out = NULL;
		cr_assert_leq(cnt.bytes_h2d, (in_b + w_b) * 11 / 10 + (t->bias ? (uint64_t)t->k * 4 * 2 : 0),
			      "case %u: read %llu bytes, footprint %llu", i, (unsigned long long)cnt.bytes_h2d,
			      (unsigned long long)(in_b + w_b));
	}
	accel_close(dev);
}
