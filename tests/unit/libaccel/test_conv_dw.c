/* SPDX-License-Identifier: MIT */
/* Depthwise accel_conv2d (groups == C == K, NHWC) against a direct CPU depthwise convolution:
 * a randomized sweep over edge sizes, strides, padding, dilation, batches and output types, on the
 * default geometry, a small one (segments, x chunks) and with the depthwise block switched off. */
#include <unistd.h>

#include "common.h"

struct dwcase {
	uint32_t n, c, h, w, r, s, sh, sw, pt, pl, pb, pr, dh, dw;
	int out;	/* 0 int8 requantised, 1 int32, 2 fp32 */
	bool bias, relu;
	int zp;		/* int8: input_zero_point, the value padding taps read */
};

static uint64_t last_cycles;	/* device cycles of dw_run's convolution */

static void dw_run(struct accel_dev *dev, const struct dwcase *t, uint64_t seed)
{
	bool f32 = t->out == 2;
	uint32_t e = f32 ? 4 : 1, oe = t->out == 0 ? 1 : 4, C = t->c;
	uint32_t oh = (t->h + t->pt + t->pb - t->dh * (t->r - 1) - 1) / t->sh + 1;
	uint32_t ow = (t->w + t->pl + t->pr - t->dw * (t->s - 1) - 1) / t->sw + 1;
	size_t in_n = (size_t)t->n * C * t->h * t->w, w_n = (size_t)C * t->r * t->s, out_n = (size_t)t->n * C * oh * ow;
	struct accel_buffer *bi = alloc_buf(dev, in_n * e), *bw = alloc_buf(dev, w_n * e);
	struct accel_buffer *bo = alloc_buf(dev, out_n * oe), *bb = alloc_buf(dev, (size_t)C * 4);
	enum accel_dtype dt = f32 ? ACCEL_FP32 : ACCEL_INT8;
	struct accel_tensor I, Wt, O, B;
	struct accel_conv2d_desc d;
	uint64_t s = seed;
	int32_t mult = 0;
	uint8_t shift = 0;
	int ret;

	cr_assert_eq(accel_tensor_4d(bi, 0, dt, ACCEL_LAYOUT_NHWC, t->n, C, t->h, t->w, &I), 0);
	cr_assert_eq(accel_tensor_4d(bw, 0, dt, ACCEL_LAYOUT_NHWC, C, 1, t->r, t->s, &Wt), 0);
	cr_assert_eq(accel_tensor_4d(bo, 0, f32 ? ACCEL_FP32 : (t->out == 0 ? ACCEL_INT8 : ACCEL_INT32),
				     ACCEL_LAYOUT_NHWC, t->n, C, oh, ow, &O), 0);
	cr_assert_eq(accel_tensor_2d(bb, 0, f32 ? ACCEL_FP32 : ACCEL_INT32, 1, C, &B), 0);
	if (f32) {
		fill_f32(accel_buffer_ptr(bi), in_n, &s);
		fill_f32(accel_buffer_ptr(bw), w_n, &s);
		fill_f32(accel_buffer_ptr(bb), C, &s);
	} else {
		fill_i8(accel_buffer_ptr(bi), in_n, &s);
		fill_i8(accel_buffer_ptr(bw), w_n, &s);
		for (uint32_t j = 0; j < C; j++)
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
	d.groups = C;
	d.input_zero_point = f32 ? 0 : t->zp;
	d.epi.bias = t->bias ? &B : NULL;
	d.epi.act = t->relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	if (t->out == 0) {
		cr_assert_eq(accel_quant_from_scale(1.0 / (8.0 * t->r * t->s), &mult, &shift), 0);
		d.epi.multiplier = mult;
		d.epi.shift = shift;
		d.epi.zero_point = 3;
	}
	{
		struct accel_job *job = NULL;
		struct accel_counters k;

		ret = accel_conv2d(dev, &d, NULL, &job);
		cr_assert_eq(ret, 0, "seed %llu: %s: %s", (unsigned long long)seed, accel_strerror(ret),
			     accel_last_error(dev));
		cr_assert_eq(accel_job_wait(job, -1), 0, "seed %llu: %s", (unsigned long long)seed, accel_last_error(dev));
		cr_assert_eq(accel_job_counters(job, &k), 0);
		last_cycles = k.total_cycles;
		accel_job_free(job);
	}
	for (uint32_t n = 0; n < t->n; n++)
		for (uint32_t y = 0; y < oh; y++)
			for (uint32_t x = 0; x < ow; x++)
				for (uint32_t k = 0; k < C; k++) {
					size_t oi = (((size_t)n * oh + y) * ow + x) * C + k;
					int64_t isum = 0;
					double fsum = 0, mag = 0;

					for (uint32_t ry = 0; ry < t->r; ry++)
						for (uint32_t rx = 0; rx < t->s; rx++) {
							int64_t iy = (int64_t)y * t->sh - t->pt + (int64_t)ry * t->dh;
							int64_t ix = (int64_t)x * t->sw - t->pl + (int64_t)rx * t->dw;
							size_t wi = ((size_t)k * t->r + ry) * t->s + rx;
							size_t ii = (((size_t)n * t->h + (size_t)iy) * t->w + (size_t)ix) * C + k;

							if (iy < 0 || iy >= t->h || ix < 0 || ix >= t->w) {
								if (!f32)	/* padding reads the zero point */
									isum += (int64_t)t->zp *
										((const int8_t *)accel_buffer_ptr(bw))[wi];
								continue;
							}
							if (f32) {
								double p = (double)((const float *)accel_buffer_ptr(bi))[ii] *
									   ((const float *)accel_buffer_ptr(bw))[wi];

								fsum += p;
								mag += fabs(p);
							} else {
								isum += (int64_t)((const int8_t *)accel_buffer_ptr(bi))[ii] *
									((const int8_t *)accel_buffer_ptr(bw))[wi];
							}
						}
					if (f32) {
						double got = ((const float *)accel_buffer_ptr(bo))[oi];

						if (t->bias)
							fsum += ((const float *)accel_buffer_ptr(bb))[k];
						if (t->relu && fsum < 0)
							fsum = 0;
						cr_assert(fabs(got - fsum) <= F32_RTOL * (1 + mag),
							  "seed %llu out(n%u,y%u,x%u,c%u) = %g, expected %g", (unsigned long long)seed,
							  n, y, x, k, got, fsum);
					} else {
						int32_t acc = (int32_t)isum;

						if (t->bias)
							acc += ((const int32_t *)accel_buffer_ptr(bb))[k];
						if (t->relu && acc < 0)
							acc = 0;
						if (t->out == 0) {
							int8_t got = ((const int8_t *)accel_buffer_ptr(bo))[oi];

							cr_assert_eq(got, ref_requant(acc, mult, shift, 3),
								     "seed %llu out(n%u,y%u,x%u,c%u) = %d, expected %d",
								     (unsigned long long)seed, n, y, x, k, got,
								     ref_requant(acc, mult, shift, 3));
						} else {
							int32_t got = ((const int32_t *)accel_buffer_ptr(bo))[oi];

							cr_assert_eq(got, acc, "seed %llu out(n%u,y%u,x%u,c%u) = %d, expected %d",
								     (unsigned long long)seed, n, y, x, k, got, acc);
						}
					}
				}
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_buffer_free(bb);
}

/* Random case with C a multiple of `cmul` (the PEs per cluster: the depthwise block's channel split)
 * or, one case in eight, any C (other lowerings). */
static struct dwcase dw_random(uint64_t *s, uint32_t cmul, uint32_t maxhw)
{
	struct dwcase t = { 0 };

	t.n = 1 + (uint32_t)(xrng(s) % 3 == 0) * (1 + (uint32_t)(xrng(s) % 2));
	t.c = cmul * (1 + (uint32_t)(xrng(s) % 4));
	if (xrng(s) % 8 == 0)
		t.c = 1 + (uint32_t)(xrng(s) % 40);
	t.r = 1 + (uint32_t)(xrng(s) % 5);
	t.s = 1 + (uint32_t)(xrng(s) % 5);
	t.sh = 1 + (uint32_t)(xrng(s) % 3 == 0);
	t.sw = 1 + (uint32_t)(xrng(s) % 3 == 0);
	t.dh = 1 + (uint32_t)(xrng(s) % 4 == 0);
	t.dw = 1 + (uint32_t)(xrng(s) % 4 == 0);
	t.pt = (uint32_t)(xrng(s) % 3);
	t.pl = (uint32_t)(xrng(s) % 3);
	t.pb = (uint32_t)(xrng(s) % 3);
	t.pr = (uint32_t)(xrng(s) % 3);
	t.h = 1 + (uint32_t)(xrng(s) % maxhw);
	t.w = 1 + (uint32_t)(xrng(s) % maxhw);
	/* the dilated filter must fit the padded input */
	while (t.h + t.pt + t.pb < t.dh * (t.r - 1) + 1)
		t.h++;
	while (t.w + t.pl + t.pr < t.dw * (t.s - 1) + 1)
		t.w++;
	t.out = (int)(xrng(s) % 3);
	t.bias = xrng(s) & 1;
	t.relu = xrng(s) % 3 == 0;
	if (t.out != 2 && xrng(s) % 2)
		t.zp = (int)(xrng(s) % 256) - 128;
	return t;
}

Test(conv_dw, mobilenet_3x3_layers_match_reference)
{
	struct accel_dev *dev = open_dev(NULL);
	struct dwcase cases[] = {
		{ .n = 1, .c = 32, .h = 112, .w = 112, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true, .relu = true },
		{ .n = 1, .c = 128, .h = 56, .w = 56, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true },
		{ .n = 1, .c = 256, .h = 28, .w = 28, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 1 },
		{ .n = 1, .c = 512, .h = 14, .w = 14, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 2, .bias = true },
		/* stride 2 (MobileNet's downsampling depthwise layers) */
		{ .n = 2, .c = 64, .h = 56, .w = 56, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 0, .pl = 0, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .relu = true },
		/* 33 output columns per unit x 32 channels per PE > 1024: two x chunks per unit */
		{ .n = 1, .c = 512, .h = 5, .w = 132, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true },
		/* fp32 112 x 112 x 32: several segments (the image does not fit a half) */
		{ .n = 1, .c = 32, .h = 112, .w = 112, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 2 },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		dw_run(dev, &cases[i], 1000 + i);
	accel_close(dev);
}

Test(conv_dw, randomized_sweep_default_geometry)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	uint64_t s = 0x5EED0D3Full;

	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	for (unsigned i = 0; i < 60; i++) {
		uint64_t seed = xrng(&s);
		uint64_t st = seed;
		struct dwcase t = dw_random(&st, caps.pes, 40);

		dw_run(dev, &t, seed);
	}
	accel_close(dev);
}

/* 2 x 2 x 4 PEs, 64 KiB storage units: many segments, x chunks, pad rows re-zeroed per half. */
Test(conv_dw, randomized_sweep_small_geometry)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	uint64_t s = 0xD3A7F00Dull;

	for (unsigned i = 0; i < 60; i++) {
		uint64_t seed = xrng(&s);
		uint64_t st = seed;
		struct dwcase t = dw_random(&st, 4, 70);

		dw_run(dev, &t, seed);
	}
	accel_close(dev);
}

/* The same cases through the other lowerings (depthwise block off): identical results. */
Test(conv_dw, block_off_gives_the_same_results)
{
	struct accel_dev *dev;
	uint64_t s = 0xB10C0FFull;

	if (!test_is_sim())
		cr_skip_test("sim option dw=off");
	dev = open_dev("sim:dw=off");
	for (unsigned i = 0; i < 12; i++) {
		uint64_t seed = xrng(&s);
		uint64_t st = seed;
		struct dwcase t = dw_random(&st, 16, 24);

		dw_run(dev, &t, seed);
	}
	accel_close(dev);
}

/* Each of the block's four mappings forced (units split columns or channels, clusters split rows or
 * channels; sim option dw=col|col-kc|ch|ch-kc), with STREAM bands (stream=only) and without
 * (stream=off), with WIDE multicast windows (default) and without (dw-wide=off): the same reference
 * results, including the AXIS_G
 * channel bands, batches (both halves), several segments and stride/dilation/padding variants. */
Test(conv_dw, every_mapping_matches_reference)
{
	static const char *const maps[] = { "col", "col-kc", "ch", "ch-kc" };
	struct dwcase fixed[] = {
		{ .n = 2, .c = 32, .h = 9, .w = 11, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true, .relu = true },
		{ .n = 1, .c = 16, .h = 40, .w = 7, .r = 3, .s = 3, .sh = 2, .sw = 1, .pt = 1, .pl = 2, .pb = 0, .pr = 2,
		  .dh = 1, .dw = 2, .out = 1, .bias = true },
		{ .n = 1, .c = 48, .h = 13, .w = 5, .r = 5, .s = 3, .sh = 1, .sw = 2, .pt = 2, .pl = 1, .pb = 2, .pr = 1,
		  .dh = 1, .dw = 1, .out = 2 },
		/* batch, stride 2, one segment per image: the halves' padding rows are not re-zeroed */
		{ .n = 5, .c = 32, .h = 10, .w = 9, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true },
	};

	if (!test_is_sim())
		cr_skip_test("sim option dw=<mapping>");
	/* every mapping with and without line-tracked (STREAM) bands and WIDE multicast */
	for (unsigned m = 0; m < 16; m++) {
		char spec[96];
		struct accel_dev *dev;
		uint64_t s = 0xC0FFEE00ull + m;

		snprintf(spec, sizeof(spec), "sim:rows=2,cols=2,pes=4,sram=65536,dw=%s,stream=%s,dw-wide=%s",
			 maps[m % 4], m % 8 < 4 ? "only" : "off", m < 8 ? "on" : "off");
		dev = open_dev(spec);
		for (unsigned i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			dw_run(dev, &fixed[i], 2000 + 10 * m + i);
		for (unsigned i = 0; i < 16; i++) {
			uint64_t seed = xrng(&s);
			uint64_t st = seed;
			struct dwcase t = dw_random(&st, 16, 30);

			dw_run(dev, &t, seed);
		}
		accel_close(dev);
	}
}

/* A non-zero int8 input zero point (a QDQ graph's uint8 activations: onnx/src/compile/compile_qdq.c) stays on
 * the depthwise block: padding taps read it from FILLs of the padding rows and columns only.  Every
 * mapping, with STREAM bands and with semaphores, one and several segments per image, batches (both
 * halves; padding rows re-filled where another segment's image rows were), stride 1 and 2, padding on
 * both sides or one (column fills with and without the guard bytes around the input area), against
 * the reference; fp32 (no zero point) alike.  On the default geometry the block takes fewer cycles
 * than the other lowerings. */
Test(conv_dw, input_zero_point_pads_on_the_block)
{
	static const char *const maps[] = { "col", "col-kc", "ch", "ch-kc" };
	struct dwcase t[] = {
		{ .n = 1, .c = 96, .h = 56, .w = 56, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 1, .bias = true, .zp = -128 },
		{ .n = 2, .c = 32, .h = 21, .w = 19, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true, .relu = true, .zp = 77 },
	};
	/* 2 x 2 x 4 PEs, 64 KiB storage units */
	struct dwcase small[] = {
		/* one segment per image, two images: both halves, left and right padding columns */
		{ .n = 2, .c = 32, .h = 9, .w = 11, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .bias = true, .relu = true, .zp = -128 },
		/* several segments per image and two images: padding rows re-filled on each half */
		{ .n = 2, .c = 32, .h = 100, .w = 20, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1,
		  .pr = 1, .dh = 1, .dw = 1, .out = 1, .zp = 77 },
		/* stride 2, several segments, three images */
		{ .n = 3, .c = 16, .h = 300, .w = 13, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
		  .pr = 1, .dh = 1, .dw = 1, .out = 0, .bias = true, .zp = -1 },
		/* padding right and below only (TF "SAME" at stride 2), then left and above only */
		{ .n = 2, .c = 32, .h = 10, .w = 9, .r = 3, .s = 3, .sh = 2, .sw = 2, .pb = 1, .pr = 1, .dh = 1, .dw = 1,
		  .out = 0, .bias = true, .zp = -128 },
		{ .n = 1, .c = 16, .h = 40, .w = 14, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 2, .pl = 2, .dh = 1, .dw = 1,
		  .out = 1, .zp = 100 },
		/* wide padding, a dilated and a strided axis */
		{ .n = 1, .c = 16, .h = 40, .w = 7, .r = 3, .s = 3, .sh = 2, .sw = 1, .pt = 1, .pl = 2, .pb = 0, .pr = 2,
		  .dh = 1, .dw = 2, .out = 0, .bias = true, .zp = 5 },
		{ .n = 1, .c = 48, .h = 13, .w = 5, .r = 5, .s = 3, .sh = 1, .sw = 2, .pt = 2, .pl = 1, .pb = 2, .pr = 1,
		  .dh = 1, .dw = 1, .out = 0, .zp = 127 },
		/* fp32: no zero point, the same geometry */
		{ .n = 2, .c = 32, .h = 100, .w = 20, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1,
		  .pr = 1, .dh = 1, .dw = 1, .out = 2, .bias = true },
	};
	uint64_t block = 0, off = 0;
	struct accel_dev *dev;

	dev = open_dev(NULL);
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		dw_run(dev, &t[i], 3000 + i);
		if (i == 0)
			block = last_cycles;
	}
	accel_close(dev);
	if (!test_is_sim())
		return;
	dev = open_dev("sim:dw=off");
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		dw_run(dev, &t[i], 3000 + i);
		if (i == 0)
			off = last_cycles;
	}
	accel_close(dev);
	cr_assert_lt(block, off, "block %llu cycles, other lowerings %llu", (unsigned long long)block,
		     (unsigned long long)off);
	for (unsigned m = 0; m < 8; m++) {
		char spec[96];

		snprintf(spec, sizeof(spec), "sim:rows=2,cols=2,pes=4,sram=65536,dw=%s,stream=%s", maps[m % 4],
			 m < 4 ? "only" : "off");
		dev = open_dev(spec);
		for (unsigned i = 0; i < sizeof(small) / sizeof(small[0]); i++)
			dw_run(dev, &small[i], 3100 + 10 * m + i);
		accel_close(dev);
	}
}

/* Load-lane and row-0 events of a trace (accel_trace_write_json's one event per line). */
struct dw_ev {
	unsigned n_load;
	uint64_t load_end[64], load_off[64], exe_start;
};

static void dw_trace_events(const char *path, struct dw_ev *ev)
{
	FILE *f = fopen(path, "r");
	char line[512];

	cr_assert_not_null(f);
	memset(ev, 0, sizeof(*ev));
	while (fgets(line, sizeof(line), f)) {
		char name[32];
		unsigned tid, off;
		unsigned long long s, e;
		const char *p = strstr(line, "\"name\":\"");

		if (!p || !strstr(line, "\"ph\":\"X\"") ||
		    sscanf(p, "\"name\":\"%31[^\"]\"", name) != 1 || !strstr(line, "\"tid\":") ||
		    sscanf(strstr(line, "\"tid\":"), "\"tid\":%u,\"args\":{\"cmd_offset\":%u,\"start_cycle\":%llu,"
			   "\"end_cycle\":%llu", &tid, &off, &s, &e) != 4)
			continue;
		if (tid == 1 && ev->n_load < 64) {	/* the load engine: DMA in */
			ev->load_end[ev->n_load] = e;
			ev->load_off[ev->n_load++] = off;
		}
		if (tid == 10 && !strcmp(name, "EXE"))	/* row 0: the last EXE is the run's */
			ev->exe_start = s;
	}
	fclose(f);
}

/* The padding FILLs are plain writes, which a STREAM plan's line tracking does not order: the run's EXE
 * must start after every load-engine transfer before the input band has ended (a semaphore), else it
 * could read padding the FILL has not written yet (the model computes in command order either way, so
 * only the timeline shows it). */
Test(conv_dw, stream_run_starts_after_the_padding_fills)
{
	static const char *const specs[] = { "sim:stream=only,dw=col", "sim:stream=only,dw=ch" };
	struct dwcase t = { .n = 1, .c = 256, .h = 14, .w = 14, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1,
			    .pb = 1, .pr = 1, .dh = 1, .dw = 1, .out = 0, .bias = true, .zp = -128 };
	char path[64];

	if (!test_is_sim())
		cr_skip_test("job timelines need the sim backend");
	snprintf(path, sizeof(path), "/tmp/libaccel-dwzp-%ld.json", (long)getpid());
	for (unsigned sp = 0; sp < 2; sp++) {
		struct accel_dev *dev = open_dev(specs[sp]);
		struct dw_ev ev, ev0;
		unsigned band = 0;

		for (int z = 0; z < 2; z++) {
			struct dw_ev *e = z ? &ev : &ev0;

			t.zp = z ? -128 : 0;
			cr_assert_eq(accel_trace_begin(dev), 0, "%s", accel_last_error(dev));
			dw_run(dev, &t, 4000 + sp);
			cr_assert_eq(accel_trace_end(dev), 0);
			cr_assert_eq(accel_trace_write_json(dev, path), 0, "%s", accel_last_error(dev));
			dw_trace_events(path, e);
			unlink(path);
		}
		/* the zero point adds transfers before the band (the FILLs) */
		cr_assert_gt(ev.n_load, ev0.n_load, "%s: %u load transfers, %u at zero point 0", specs[sp], ev.n_load,
			     ev0.n_load);
		for (unsigned i = 1; i < ev.n_load; i++)
			if (ev.load_off[i] > ev.load_off[band])
				band = i;
		for (unsigned i = 0; i < ev.n_load; i++)
			cr_assert(i == band || ev.load_end[i] <= ev.exe_start,
				  "%s: load transfer at command offset %llu ends at cycle %llu, after the run's EXE "
				  "started (%llu)", specs[sp], (unsigned long long)ev.load_off[i],
				  (unsigned long long)ev.load_end[i], (unsigned long long)ev.exe_start);
		accel_close(dev);
	}
}
