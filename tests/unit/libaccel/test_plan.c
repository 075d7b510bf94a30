/* SPDX-License-Identifier: MIT */
/*
 * Static address plans (seed 004): plan-driven conv == implicit-im2col conv == CPU reference for
 * NCHW, NHWC and NCHWc; the device plan cache; plan files (round trip, corrupt files).
 */
#include <unistd.h>

#include "common.h"

struct pcase {
	enum accel_plan_layout layout;
	uint32_t cb, n, c, h, w, k, r, s, sh, sw, dh, dw, pt, pl, pb, pr;
	bool f32, out_nchw;
	int zp;
};

/* Logical element (b, ch, y, x) of the packed input in the case's layout. */
static size_t in_idx(const struct pcase *t, uint32_t b, uint32_t ch, uint32_t y, uint32_t x)
{
	switch (t->layout) {
	case ACCEL_PLAN_NCHW:
		return (((size_t)b * t->c + ch) * t->h + y) * t->w + x;
	case ACCEL_PLAN_NHWC:
		return (((size_t)b * t->h + y) * t->w + x) * t->c + ch;
	default:
		return ((((size_t)b * (t->c / t->cb) + ch / t->cb) * t->h + y) * t->w + x) * t->cb + ch % t->cb;
	}
}

static void out_dims(const struct pcase *t, uint32_t *oh, uint32_t *ow)
{
	*oh = (t->h + t->pt + t->pb - t->dh * (t->r - 1) - 1) / t->sh + 1;
	*ow = (t->w + t->pl + t->pr - t->dw * (t->s - 1) - 1) / t->sw + 1;
}

static struct accel_plan_conv_desc desc_of(const struct pcase *t)
{
	struct accel_plan_conv_desc d = {
		.layout = t->layout, .c_block = t->layout == ACCEL_PLAN_NCHWC ? t->cb : 0,
		.dtype = t->f32 ? ACCEL_FP32 : ACCEL_INT8, .n = t->n, .c = t->c, .h = t->h, .w = t->w, .k = t->k,
		.r = t->r, .s = t->s, .stride_h = t->sh, .stride_w = t->sw, .dil_h = t->dh, .dil_w = t->dw,
		.pad_top = t->pt, .pad_left = t->pl, .pad_bottom = t->pb, .pad_right = t->pr,
	};

	return d;
}

/* Direct CPU convolution on logical NCHW input x and OIHW weights wt; out[b][o][y][x] as double. */
static void ref_conv(const struct pcase *t, const void *x, const void *wt, double *out, double *mag)
{
	uint32_t oh, ow;

	out_dims(t, &oh, &ow);
	for (uint32_t b = 0; b < t->n; b++)
		for (uint32_t o = 0; o < t->k; o++)
			for (uint32_t y = 0; y < oh; y++)
				for (uint32_t xx = 0; xx < ow; xx++) {
					double acc = 0, m = 0;

					for (uint32_t ch = 0; ch < t->c; ch++)
						for (uint32_t ry = 0; ry < t->r; ry++)
							for (uint32_t rx = 0; rx < t->s; rx++) {
								int64_t iy = (int64_t)y * t->sh - t->pt + (int64_t)ry * t->dh;
								int64_t ix = (int64_t)xx * t->sw - t->pl + (int64_t)rx * t->dw;
								size_t wi = (((size_t)o * t->c + ch) * t->r + ry) * t->s + rx;
								bool in = iy >= 0 && iy < t->h && ix >= 0 && ix < t->w;
								size_t xi = in ? (((size_t)b * t->c + ch) * t->h + (size_t)iy) * t->w +
										 (size_t)ix : 0;
								double a, w;

								if (t->f32) {
									a = in ? ((const float *)x)[xi] : 0.0;
									w = ((const float *)wt)[wi];
								} else {
									a = in ? ((const int8_t *)x)[xi] : t->zp;
									w = ((const int8_t *)wt)[wi];
								}
								acc += a * w;
								m += fabs(a * w);
							}
					out[(((size_t)b * t->k + o) * oh + y) * ow + xx] = acc;
					if (mag)
						mag[(((size_t)b * t->k + o) * oh + y) * ow + xx] = m;
				}
}

struct run {
	struct accel_buffer *bo;
	struct accel_counters cnt;
};

static double out_at(const struct pcase *t, const struct accel_buffer *bo, uint32_t b, uint32_t o, uint32_t y,
		     uint32_t x)
{
	uint32_t oh, ow;
	size_t i;

	out_dims(t, &oh, &ow);
	i = t->out_nchw ? (((size_t)b * t->k + o) * oh + y) * ow + x : (((size_t)b * oh + y) * ow + x) * t->k + o;
	return t->f32 ? ((const float *)accel_buffer_ptr(bo))[i] : ((const int32_t *)accel_buffer_ptr(bo))[i];
}

static struct accel_buffer *new_out(struct accel_dev *dev, const struct pcase *t, struct accel_tensor *O)
{
	uint32_t oh, ow;
	struct accel_buffer *bo;

	out_dims(t, &oh, &ow);
	bo = alloc_buf(dev, (size_t)t->n * t->k * oh * ow * 4);
	cr_assert_eq(accel_tensor_4d(bo, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT32,
				     t->out_nchw ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_NHWC, t->n, t->k, oh, ow, O), 0);
	return bo;
}

/* Plan-driven conv of logical x / OIHW wt; returns the output buffer (caller frees). */
static struct accel_buffer *run_plan(struct accel_dev *dev, const struct accel_plan *plan, const struct pcase *t,
				     const void *x, const void *wt, struct accel_counters *cnt)
{
	uint32_t e = t->f32 ? 4 : 1;
	size_t in_n = (size_t)t->n * t->c * t->h * t->w;
	struct accel_plan_info info;
	struct accel_buffer *bi = alloc_buf(dev, in_n * e), *bw, *bo;
	struct accel_tensor W, O;
	struct accel_plan_conv_args a;
	struct accel_job *job = NULL;
	uint8_t *pi = accel_buffer_ptr(bi);
	int ret;

	cr_assert_eq(accel_plan_info(plan, &info), 0);
	bw = alloc_buf(dev, (size_t)t->k * info.n_offsets * e);
	for (uint32_t b = 0; b < t->n; b++)
		for (uint32_t ch = 0; ch < t->c; ch++)
			for (uint32_t y = 0; y < t->h; y++)
				for (uint32_t xx = 0; xx < t->w; xx++)
					memcpy(pi + in_idx(t, b, ch, y, xx) * e,
					       (const uint8_t *)x + ((((size_t)b * t->c + ch) * t->h + y) * t->w + xx) * e, e);
	cr_assert_eq(accel_plan_pack_weights(plan, wt, accel_buffer_ptr(bw)), 0);
	cr_assert_eq(accel_tensor_2d(bw, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT8, t->k, info.n_offsets, &W), 0);
	bo = new_out(dev, t, &O);
	memset(&a, 0, sizeof(a));
	a.input = bi;
	a.weights = &W;
	a.output = &O;
	a.input_zero_point = t->zp;
	ret = accel_plan_conv2d(dev, plan, &a, NULL, &job);
	cr_assert_eq(ret, 0, "accel_plan_conv2d: %s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0, "plan job: %s", accel_last_error(dev));
	if (cnt)
		cr_assert_eq(accel_job_counters(job, cnt), 0);
	accel_job_free(job);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	return bo;
}

/* The same conv through accel_conv2d (implicit im2col): NHWC for NHWC cases, NCHW otherwise. */
static struct accel_buffer *run_im2col(struct accel_dev *dev, const struct pcase *t, const void *x, const void *wt)
{
	uint32_t e = t->f32 ? 4 : 1;
	bool nhwc = t->layout == ACCEL_PLAN_NHWC;
	enum accel_layout L = nhwc ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW;
	enum accel_dtype dt = t->f32 ? ACCEL_FP32 : ACCEL_INT8;
	size_t in_n = (size_t)t->n * t->c * t->h * t->w, w_n = (size_t)t->k * t->c * t->r * t->s;
	struct accel_buffer *bi = alloc_buf(dev, in_n * e), *bw = alloc_buf(dev, w_n * e), *bo;
	struct accel_tensor I, W, O;
	struct accel_conv2d_desc d;
	uint8_t *pi = accel_buffer_ptr(bi), *pw = accel_buffer_ptr(bw);
	int ret;

	cr_assert_eq(accel_tensor_4d(bi, 0, dt, L, t->n, t->c, t->h, t->w, &I), 0);
	cr_assert_eq(accel_tensor_4d(bw, 0, dt, L, t->k, t->c, t->r, t->s, &W), 0);
	for (uint32_t b = 0; b < t->n; b++)
		for (uint32_t ch = 0; ch < t->c; ch++)
			for (uint32_t y = 0; y < t->h; y++)
				for (uint32_t xx = 0; xx < t->w; xx++) {
					size_t li = (((size_t)b * t->c + ch) * t->h + y) * t->w + xx;
					size_t pi_ = nhwc ? (((size_t)b * t->h + y) * t->w + xx) * t->c + ch : li;

					memcpy(pi + pi_ * e, (const uint8_t *)x + li * e, e);
				}
	for (uint32_t o = 0; o < t->k; o++)
		for (uint32_t ch = 0; ch < t->c; ch++)
			for (uint32_t ry = 0; ry < t->r; ry++)
				for (uint32_t rx = 0; rx < t->s; rx++) {
					size_t li = (((size_t)o * t->c + ch) * t->r + ry) * t->s + rx;
					size_t pw_ = nhwc ? (((size_t)o * t->r + ry) * t->s + rx) * t->c + ch : li;

					memcpy(pw + pw_ * e, (const uint8_t *)wt + li * e, e);
				}
	bo = new_out(dev, t, &O);
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.weights = &W;
	d.output = &O;
	d.stride_h = t->sh;
	d.stride_w = t->sw;
	d.dil_h = t->dh;
	d.dil_w = t->dw;
	d.pad_top = t->pt;
	d.pad_left = t->pl;
	d.pad_bottom = t->pb;
	d.pad_right = t->pr;
	d.groups = 1;
	d.input_zero_point = t->zp;
	ret = accel_conv2d(dev, &d, NULL, NULL);
	cr_assert_eq(ret, 0, "accel_conv2d: %s", accel_last_error(dev));
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	return bo;
}

static void random_case(uint64_t *s, enum accel_plan_layout layout, bool f32, struct pcase *t)
{
	memset(t, 0, sizeof(*t));
	t->layout = layout;
	t->f32 = f32;
	t->cb = layout == ACCEL_PLAN_NCHWC ? 2u << (xrng(s) % 3) : 1;
	t->n = 1 + xrng(s) % 2;
	t->c = layout == ACCEL_PLAN_NCHWC ? t->cb * (1 + xrng(s) % 3) : 1 + xrng(s) % 9;
	t->h = 3 + xrng(s) % 11;
	t->w = 3 + xrng(s) % 11;
	t->k = 1 + xrng(s) % 20;
	t->r = 1 + xrng(s) % 3;
	t->s = 1 + xrng(s) % 3;
	t->sh = 1 + xrng(s) % 2;
	t->sw = 1 + xrng(s) % 2;
	t->dh = 1 + xrng(s) % 2;
	t->dw = 1 + xrng(s) % 2;
	t->pt = xrng(s) % 3;
	t->pl = xrng(s) % 3;
	t->pb = xrng(s) % 3;
	t->pr = xrng(s) % 3;
	while (t->h + t->pt + t->pb < t->dh * (t->r - 1) + 1)
		t->pb++;
	while (t->w + t->pl + t->pr < t->dw * (t->s - 1) + 1)
		t->pr++;
	t->out_nchw = xrng(s) & 1;
	t->zp = f32 ? 0 : (int)(xrng(s) % 256) - 128;
}

static void check_layout(enum accel_plan_layout layout, bool f32, uint64_t seed)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,conv=im2col");
	uint64_t s = seed;

	for (int it = 0; it < 6; it++) {
		struct pcase t;
		struct accel_plan *plan = NULL;
		struct accel_buffer *bp, *bc;
		uint32_t oh, ow, e = f32 ? 4 : 1;
		size_t in_n, w_n, out_n;
		void *x, *wt;
		double *ref, *mag;
		int ret;

		random_case(&s, layout, f32, &t);
		out_dims(&t, &oh, &ow);
		in_n = (size_t)t.n * t.c * t.h * t.w;
		w_n = (size_t)t.k * t.c * t.r * t.s;
		out_n = (size_t)t.n * t.k * oh * ow;
		x = malloc(in_n * e);
		wt = malloc(w_n * e);
		ref = malloc(out_n * sizeof(double));
		mag = malloc(out_n * sizeof(double));
		if (f32) {
			fill_f32(x, in_n, &s);
			fill_f32(wt, w_n, &s);
		} else {
			fill_i8(x, in_n, &s);
			fill_i8(wt, w_n, &s);
		}
		{
			struct accel_plan_conv_desc d = desc_of(&t);

			ret = accel_plan_compile(&d, &plan);
		}
		cr_assert_eq(ret, 0, "compile: %s", accel_plan_last_error());
		ref_conv(&t, x, wt, ref, mag);
		bp = run_plan(dev, plan, &t, x, wt, NULL);
		bc = run_im2col(dev, &t, x, wt);
		for (uint32_t b = 0; b < t.n; b++)
			for (uint32_t o = 0; o < t.k; o++)
				for (uint32_t y = 0; y < oh; y++)
					for (uint32_t xx = 0; xx < ow; xx++) {
						size_t i = (((size_t)b * t.k + o) * oh + y) * ow + xx;
						double gp = out_at(&t, bp, b, o, y, xx), gc = out_at(&t, bc, b, o, y, xx);

						if (f32) {
							double tol = F32_RTOL * (1 + mag[i]);

							cr_assert(fabs(gp - ref[i]) <= tol && fabs(gc - ref[i]) <= tol,
								  "seed %llu it %d layout %d (%u,%u,%u,%u): plan %g im2col %g ref %g",
								  (unsigned long long)seed, it, layout, b, o, y, xx, gp, gc, ref[i]);
						} else {
							cr_assert(gp == ref[i] && gc == ref[i],
								  "seed %llu it %d layout %d (%u,%u,%u,%u): plan %g im2col %g ref %g",
								  (unsigned long long)seed, it, layout, b, o, y, xx, gp, gc, ref[i]);
						}
					}
		accel_buffer_free(bp);
		accel_buffer_free(bc);
		accel_plan_free(plan);
		free(x);
		free(wt);
		free(ref);
		free(mag);
	}
	accel_close(dev);
}

Test(plan, int8_plan_conv_equals_im2col_and_cpu_nchw)
{
	check_layout(ACCEL_PLAN_NCHW, false, 101);
}

Test(plan, int8_plan_conv_equals_im2col_and_cpu_nhwc)
{
	check_layout(ACCEL_PLAN_NHWC, false, 102);
}

Test(plan, int8_plan_conv_equals_im2col_and_cpu_nchwc)
{
	check_layout(ACCEL_PLAN_NCHWC, false, 103);
}

Test(plan, fp32_plan_conv_within_tolerance_nchw)
{
	check_layout(ACCEL_PLAN_NCHW, true, 201);
}

Test(plan, fp32_plan_conv_within_tolerance_nhwc)
{
	check_layout(ACCEL_PLAN_NHWC, true, 202);
}

Test(plan, fp32_plan_conv_within_tolerance_nchwc)
{
	check_layout(ACCEL_PLAN_NCHWC, true, 203);
}

static const struct pcase fixed = { .layout = ACCEL_PLAN_NCHWC, .cb = 4, .n = 1, .c = 8, .h = 9, .w = 7, .k = 5,
				    .r = 3, .s = 3, .sh = 2, .sw = 1, .dh = 1, .dw = 2, .pt = 1, .pl = 2, .pb = 1,
				    .pr = 2, .zp = -3 };

Test(plan, reused_plan_is_not_uploaded_again)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_plan_conv_desc d = desc_of(&fixed);
	struct accel_plan *plan = NULL;
	struct accel_plan_info info;
	struct accel_counters c1, c2;
	int8_t x[8 * 9 * 7], wt[5 * 8 * 9];
	uint64_t s = 7;

	fill_i8(x, sizeof(x), &s);
	fill_i8(wt, sizeof(wt), &s);
	cr_assert_eq(accel_plan_compile(&d, &plan), 0, "%s", accel_plan_last_error());
	cr_assert_eq(accel_plan_info(plan, &info), 0);
	accel_buffer_free(run_plan(dev, plan, &fixed, x, wt, &c1));
	accel_buffer_free(run_plan(dev, plan, &fixed, x, wt, &c2));
	cr_assert_eq(c1.plan_misses, 1);
	cr_assert_eq(c2.plan_misses, 0);
	cr_assert_geq(c2.plan_hits, 1);
	cr_assert_eq(c1.bytes_h2d - c2.bytes_h2d, info.image_bytes);
	cr_assert_lt(c2.load_cycles, c1.load_cycles);
	accel_plan_free(plan);
	accel_close(dev);
}

static char *tmp_path(const char *tag)
{
	const char *dir = getenv("TMPDIR");
	char *p = malloc(512);

	snprintf(p, 512, "%s/tnpu-plan-%s-%d.bin", dir && *dir ? dir : "/tmp", tag, (int)getpid());
	return p;
}

static long file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;

	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fclose(f);
	return n;
}

Test(plan, save_load_round_trip_runs_the_same_conv)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_plan_conv_desc d = desc_of(&fixed);
	struct accel_plan *plan = NULL, *back = NULL;
	struct accel_plan_info a, b;
	struct accel_buffer *o1, *o2;
	uint32_t oh, ow;
	int8_t x[8 * 9 * 7], wt[5 * 8 * 9];
	uint64_t s = 9;
	char *path = tmp_path("rt");

	fill_i8(x, sizeof(x), &s);
	fill_i8(wt, sizeof(wt), &s);
	cr_assert_eq(accel_plan_compile(&d, &plan), 0);
	cr_assert_eq(accel_plan_save(plan, path), 0, "%s", accel_plan_last_error());
	cr_assert_eq(accel_plan_load(path, &back), 0, "%s", accel_plan_last_error());
	cr_assert_eq(accel_plan_info(plan, &a), 0);
	cr_assert_eq(accel_plan_info(back, &b), 0);
	cr_assert(!memcmp(&a, &b, sizeof(a)));
	cr_assert_eq(file_size(path), 128 + (long)a.image_bytes + 8);
	o1 = run_plan(dev, plan, &fixed, x, wt, NULL);
	o2 = run_plan(dev, back, &fixed, x, wt, NULL);
	out_dims(&fixed, &oh, &ow);
	cr_assert(!memcmp(accel_buffer_ptr(o1), accel_buffer_ptr(o2), (size_t)fixed.k * oh * ow * 4));
	accel_buffer_free(o1);
	accel_buffer_free(o2);
	accel_plan_free(plan);
	accel_plan_free(back);
	unlink(path);
	free(path);
	accel_close(dev);
}

/* Write a modified copy of the saved plan file and expect load to fail with msg_part. */
static void expect_bad_file(const uint8_t *img, long n, long at, int xor_byte, long new_len, const char *msg_part)
{
	char *path = tmp_path("bad");
	struct accel_plan *p = (struct accel_plan *)1;
	uint8_t *copy = malloc((size_t)n);
	FILE *f;
	int ret;

	memcpy(copy, img, (size_t)n);
	if (at >= 0)
		copy[at] ^= (uint8_t)xor_byte;
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(copy, 1, (size_t)new_len, f), (size_t)new_len);
	fclose(f);
	ret = accel_plan_load(path, &p);
	cr_assert_eq(ret, -EINVAL, "case %s: got %d", msg_part, ret);
	cr_assert_null(p);
	cr_assert(strstr(accel_plan_last_error(), msg_part), "message '%s' lacks '%s'", accel_plan_last_error(),
		  msg_part);
	unlink(path);
	free(path);
	free(copy);
}

Test(plan, corrupt_or_truncated_files_are_rejected)
{
	struct accel_plan_conv_desc d = desc_of(&fixed);
	struct accel_plan *plan = NULL;
	char *path = tmp_path("src");
	uint8_t *img;
	long n;
	FILE *f;

	cr_assert_eq(accel_plan_compile(&d, &plan), 0);
	cr_assert_eq(accel_plan_save(plan, path), 0);
	n = file_size(path);
	img = malloc((size_t)n);
	f = fopen(path, "rb");
	cr_assert_eq(fread(img, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	expect_bad_file(img, n, 0, 0x20, n, "not a tnpu plan file");
	expect_bad_file(img, n, 8, 0x02, n, "version");
	expect_bad_file(img, n, 200, 0x01, n, "checksum");
	expect_bad_file(img, n, n - 1, 0x80, n, "checksum");
	expect_bad_file(img, n, -1, 0, n - 3, "truncated");
	expect_bad_file(img, n, -1, 0, 100, "truncated");
	expect_bad_file(img, n, 16 + 4 * 8, 0x01, n, "corrupt");	/* r changed: sizes disagree */
	{
		struct accel_plan *p = NULL;

		cr_assert_eq(accel_plan_load("/nonexistent/tnpu.plan", &p), -ENOENT);
		cr_assert(strstr(accel_plan_last_error(), "/nonexistent/tnpu.plan"));
	}
	unlink(path);
	free(path);
	free(img);
	accel_plan_free(plan);
}

Test(plan, bad_descriptors_and_arguments_get_clear_errors)
{
	struct pcase t = fixed;
	struct accel_plan_conv_desc d;
	struct accel_plan *plan = NULL;
	struct accel_dev *dev;
	struct accel_buffer *bi, *bw, *bo;
	struct accel_tensor W, O;
	struct accel_plan_conv_args a;

	t.r = 9;
	t.s = 8;
	t.h = t.w = 20;
	d = desc_of(&t);
	cr_assert_eq(accel_plan_compile(&d, &plan), -E2BIG);
	cr_assert(strstr(accel_plan_last_error(), "taps"));
	d = desc_of(&fixed);
	d.c_block = 3;
	cr_assert_eq(accel_plan_compile(&d, &plan), -EINVAL);
	cr_assert(strstr(accel_plan_last_error(), "c_block"));
	d = desc_of(&fixed);
	d.stride_h = 0;
	cr_assert_eq(accel_plan_compile(&d, &plan), -EINVAL);
	cr_assert_null(plan);

	dev = open_dev(NULL);
	d = desc_of(&fixed);
	cr_assert_eq(accel_plan_compile(&d, &plan), 0);
	bi = alloc_buf(dev, 8 * 9 * 7);
	bw = alloc_buf(dev, 5 * 72);
	bo = new_out(dev, &fixed, &O);
	cr_assert_eq(accel_tensor_2d(bw, 0, ACCEL_INT8, 5, 71, &W), 0);	/* K is 72 */
	memset(&a, 0, sizeof(a));
	a.input = bi;
	a.weights = &W;
	a.output = &O;
	cr_assert_eq(accel_plan_conv2d(dev, plan, &a, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "weights"), "%s", accel_last_error(dev));
	cr_assert_eq(accel_tensor_2d(bw, 0, ACCEL_INT8, 5, 72, &W), 0);
	a.input_offset = 8;	/* input no longer fits its buffer */
	cr_assert_eq(accel_plan_conv2d(dev, plan, &a, NULL, NULL), -ERANGE);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_plan_free(plan);
	accel_close(dev);
}
