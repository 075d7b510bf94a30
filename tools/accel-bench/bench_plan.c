/* SPDX-License-Identifier: MIT */
/*
 * accel-bench plan: plan-driven (static address plan, seed 004) versus implicit-im2col convolution
 * for NCHW, NHWC and NCHWc inputs.  One JSON object per layout (Documentation/plans.md):
 * model cycles, DMA-in bytes and host time of both, plan compile time, plan upload bytes on the
 * first run and on reuse, and whether both outputs match a CPU reference.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel.h"
#include "subcommands.h"

struct popts {
	uint32_t n, c, h, w, k, r, s, stride, pad, dil, cb;
	bool f32, json;
	bool forced_im2col;	/* sim opened with conv=im2col; a drm device lowers accel_conv2d itself */
	const char *device;
};

struct prun {
	struct accel_counters cnt;
	double wall_ms;
	struct accel_buffer *out;
};

static double ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t prng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* A usage error: the option and what is wrong with it, then the usage (exit status 2). */
static int plan_usage(const char *opt, const char *why)
{
	fprintf(stderr, "accel-bench plan: %s: %s\n", opt, why);
	fprintf(stderr, "usage: accel-bench plan [--n N] [--c C] [--h H] [--w W] [--k K] [--r R] [--s S] [--stride S]\n"
			"                        [--pad P] [--dilation D] [--c-block CB] [--dtype int8|fp32]\n"
			"                        [--device PATH|sim] [--json]\n");
	return 2;
}

static int plan_parse(int argc, char **argv, struct popts *o)
{
	static const struct {
		const char *name;
		size_t off;
	} nums[] = {
		{ "--n", offsetof(struct popts, n) },	     { "--c", offsetof(struct popts, c) },
		{ "--h", offsetof(struct popts, h) },	     { "--w", offsetof(struct popts, w) },
		{ "--k", offsetof(struct popts, k) },	     { "--r", offsetof(struct popts, r) },
		{ "--s", offsetof(struct popts, s) },	     { "--stride", offsetof(struct popts, stride) },
		{ "--pad", offsetof(struct popts, pad) },    { "--dilation", offsetof(struct popts, dil) },
		{ "--c-block", offsetof(struct popts, cb) },
	};

	*o = (struct popts){ .n = 1, .c = 32, .h = 28, .w = 28, .k = 32, .r = 3, .s = 3, .stride = 1, .pad = 1,
			     .dil = 1, .cb = 8 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool done = false;

		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (i + 1 >= argc)
			return plan_usage(a, "unknown option or missing value");
		if (!strcmp(a, "--dtype")) {
			const char *v = argv[++i];

			if (strcmp(v, "int8") && strcmp(v, "fp32"))
				return plan_usage(v, "unsupported --dtype (int8 or fp32)");
			o->f32 = !strcmp(v, "fp32");
			continue;
		}
		if (!strcmp(a, "--device")) {
			o->device = argv[++i];
			continue;
		}
		for (size_t j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
			if (!strcmp(a, nums[j].name)) {
				char *end;
				unsigned long v = strtoul(argv[++i], &end, 0);

				if (*end || v > 65535)
					return plan_usage(a, "expects a number 0..65535");
				*(uint32_t *)(void *)((char *)o + nums[j].off) = (uint32_t)v;
				done = true;
				break;
			}
		}
		if (!done)
			return plan_usage(a, "unknown option");
	}
	if (!o->n || !o->c || !o->h || !o->w || !o->k || !o->r || !o->s || !o->stride || !o->dil || !o->cb ||
	    o->c % o->cb) {
		fprintf(stderr, "accel-bench plan: sizes must be >= 1 and --c-block must divide --c\n");
		return 2;
	}
	return 0;
}

/* Packed input index of logical (b, ch, y, x) in layout L. */
static size_t pidx(const struct popts *o, enum accel_plan_layout L, uint32_t b, uint32_t ch, uint32_t y, uint32_t x)
{
	switch (L) {
	case ACCEL_PLAN_NCHW:
		return (((size_t)b * o->c + ch) * o->h + y) * o->w + x;
	case ACCEL_PLAN_NHWC:
		return (((size_t)b * o->h + y) * o->w + x) * o->c + ch;
	default:
		return ((((size_t)b * (o->c / o->cb) + ch / o->cb) * o->h + y) * o->w + x) * o->cb + ch % o->cb;
	}
}

static int bench_fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "accel-bench plan: %s: %s: %s\n", what, accel_strerror(ret),
		dev ? accel_last_error(dev) : accel_plan_last_error());
	return 1;
}

static int run_plan_conv(struct accel_dev *dev, const struct accel_plan *plan, struct accel_buffer *in,
			 const struct accel_tensor *W, const struct accel_tensor *O, struct prun *r)
{
	struct accel_plan_conv_args a = { .input = in, .weights = W, .output = O };
	struct accel_job *job = NULL;
	double t0 = ms_now();
	int ret = accel_plan_conv2d(dev, plan, &a, NULL, &job);

	if (!ret)
		ret = accel_job_wait(job, -1);
	r->wall_ms = ms_now() - t0;
	if (!ret)
		ret = accel_job_counters(job, &r->cnt);
	accel_job_free(job);
	return ret;
}

/* Compare sampled outputs (NHWC int32/fp32) with a CPU reference from the logical NCHW input. */
static bool check(const struct popts *o, uint32_t oh, uint32_t ow, const void *x, const void *wt,
		  const struct accel_buffer *out)
{
	uint64_t s = 99;

	for (int t = 0; t < 2048; t++) {
		uint32_t b = (uint32_t)(prng(&s) % o->n), k = (uint32_t)(prng(&s) % o->k);
		uint32_t y = (uint32_t)(prng(&s) % oh), xx = (uint32_t)(prng(&s) % ow);
		size_t oi = (((size_t)b * oh + y) * ow + xx) * o->k + k;
		double ref = 0, mag = 0, got;

		for (uint32_t ch = 0; ch < o->c; ch++)
			for (uint32_t ry = 0; ry < o->r; ry++)
				for (uint32_t rx = 0; rx < o->s; rx++) {
					int64_t iy = (int64_t)y * o->stride - o->pad + (int64_t)ry * o->dil;
					int64_t ix = (int64_t)xx * o->stride - o->pad + (int64_t)rx * o->dil;
					size_t wi = (((size_t)k * o->c + ch) * o->r + ry) * o->s + rx, xi;
					double xv, wv;

					if (iy < 0 || iy >= o->h || ix < 0 || ix >= o->w)
						continue;
					xi = (((size_t)b * o->c + ch) * o->h + (size_t)iy) * o->w + (size_t)ix;
					xv = o->f32 ? ((const float *)x)[xi] : ((const int8_t *)x)[xi];
					wv = o->f32 ? ((const float *)wt)[wi] : ((const int8_t *)wt)[wi];
					ref += xv * wv;
					mag += fabs(xv * wv);
				}
		got = o->f32 ? ((const float *)accel_buffer_ptr(out))[oi] : ((const int32_t *)accel_buffer_ptr(out))[oi];
		if (o->f32 ? fabs(got - ref) > 1e-4 * (1 + mag) : got != ref)
			return false;
	}
	return true;
}

static const char *const layout_names[] = { "NCHW", "NHWC", "NCHWc" };

static int bench_layout(struct accel_dev *dev, const struct popts *o, enum accel_plan_layout L, const void *x,
			const void *wt)
{
	uint32_t e = o->f32 ? 4 : 1, eh = o->dil * (o->r - 1) + 1, ew = o->dil * (o->s - 1) + 1, oh, ow;
	size_t in_n = (size_t)o->n * o->c * o->h * o->w, out_b;
	enum accel_dtype dt = o->f32 ? ACCEL_FP32 : ACCEL_INT8, odt = o->f32 ? ACCEL_FP32 : ACCEL_INT32;
	struct accel_plan_conv_desc d = {
		.layout = L, .c_block = L == ACCEL_PLAN_NCHWC ? o->cb : 0, .dtype = dt, .n = o->n, .c = o->c, .h = o->h,
		.w = o->w, .k = o->k, .r = o->r, .s = o->s, .stride_h = o->stride, .stride_w = o->stride,
		.dil_h = o->dil, .dil_w = o->dil, .pad_top = o->pad, .pad_left = o->pad, .pad_bottom = o->pad,
		.pad_right = o->pad,
	};
	struct accel_plan *plan = NULL;
	struct accel_plan_info info;
	struct accel_buffer *bin = NULL, *bwp = NULL, *bin2 = NULL, *bw2 = NULL, *bo1 = NULL, *bo2 = NULL, *bo3 = NULL;
	struct accel_tensor W, O1, O2, O3, I2, W2;
	struct accel_conv2d_desc cd;
	struct accel_job *job = NULL;
	struct prun first, reuse, ic;
	enum accel_layout il = L == ACCEL_PLAN_NHWC ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW;
	double t0, compile_ms;
	bool ok;
	int ret;

	if (o->h + 2 * o->pad < eh || o->w + 2 * o->pad < ew) {
		fprintf(stderr, "accel-bench plan: the filter is larger than the padded input\n");
		return 2;
	}
	oh = (o->h + 2 * o->pad - eh) / o->stride + 1;
	ow = (o->w + 2 * o->pad - ew) / o->stride + 1;
	out_b = (size_t)o->n * o->k * oh * ow * 4;
	t0 = ms_now();
	ret = accel_plan_compile(&d, &plan);
	compile_ms = ms_now() - t0;
	if (ret)
		return bench_fail(NULL, "compile", ret);
	accel_plan_info(plan, &info);
	if ((ret = accel_buffer_alloc(dev, in_n * e, &bin)) ||
	    (ret = accel_buffer_alloc(dev, (size_t)o->k * info.n_offsets * e, &bwp)) ||
	    (ret = accel_buffer_alloc(dev, in_n * e, &bin2)) || (ret = accel_buffer_alloc(dev, in_n * e, &bw2)) ||
	    (ret = accel_buffer_alloc(dev, out_b, &bo1)) || (ret = accel_buffer_alloc(dev, out_b, &bo2)) ||
	    (ret = accel_buffer_alloc(dev, out_b, &bo3))) {
		ret = bench_fail(dev, "buffer", ret);
		goto out;
	}
	accel_buffer_free(bw2);
	bw2 = NULL;
	if ((ret = accel_buffer_alloc(dev, (size_t)o->k * o->c * o->r * o->s * e, &bw2))) {
		ret = bench_fail(dev, "buffer", ret);
		goto out;
	}
	/* Plan-driven input in layout L and the weights in the plan's K order. */
	for (uint32_t b = 0; b < o->n; b++)
		for (uint32_t ch = 0; ch < o->c; ch++)
			for (uint32_t y = 0; y < o->h; y++)
				for (uint32_t xx = 0; xx < o->w; xx++) {
					size_t li = pidx(o, ACCEL_PLAN_NCHW, b, ch, y, xx);

					memcpy((uint8_t *)accel_buffer_ptr(bin) + pidx(o, L, b, ch, y, xx) * e,
					       (const uint8_t *)x + li * e, e);
					/* im2col input: NHWC for NHWC, NCHW otherwise (IM2COL has no NCHWc). */
					memcpy((uint8_t *)accel_buffer_ptr(bin2) +
						       pidx(o, L == ACCEL_PLAN_NHWC ? ACCEL_PLAN_NHWC : ACCEL_PLAN_NCHW, b, ch,
							    y, xx) * e,
					       (const uint8_t *)x + li * e, e);
				}
	accel_plan_pack_weights(plan, wt, accel_buffer_ptr(bwp));
	for (uint32_t k = 0; k < o->k; k++)
		for (uint32_t ch = 0; ch < o->c; ch++)
			for (uint32_t ry = 0; ry < o->r; ry++)
				for (uint32_t rx = 0; rx < o->s; rx++) {
					size_t li = (((size_t)k * o->c + ch) * o->r + ry) * o->s + rx;
					size_t pi = L == ACCEL_PLAN_NHWC ? (((size_t)k * o->r + ry) * o->s + rx) * o->c + ch : li;

					memcpy((uint8_t *)accel_buffer_ptr(bw2) + pi * e, (const uint8_t *)wt + li * e, e);
				}
	if ((ret = accel_tensor_2d(bwp, 0, dt, o->k, info.n_offsets, &W)) ||
	    (ret = accel_tensor_4d(bo1, 0, odt, ACCEL_LAYOUT_NHWC, o->n, o->k, oh, ow, &O1)) ||
	    (ret = accel_tensor_4d(bo2, 0, odt, ACCEL_LAYOUT_NHWC, o->n, o->k, oh, ow, &O2)) ||
	    (ret = accel_tensor_4d(bo3, 0, odt, ACCEL_LAYOUT_NHWC, o->n, o->k, oh, ow, &O3)) ||
	    (ret = accel_tensor_4d(bin2, 0, dt, il, o->n, o->c, o->h, o->w, &I2)) ||
	    (ret = accel_tensor_4d(bw2, 0, dt, il, o->k, o->c, o->r, o->s, &W2))) {
		ret = bench_fail(dev, "tensor", ret);
		goto out;
	}
	if ((ret = run_plan_conv(dev, plan, bin, &W, &O1, &first)) ||
	    (ret = run_plan_conv(dev, plan, bin, &W, &O2, &reuse))) {
		ret = bench_fail(dev, "plan conv", ret);
		goto out;
	}
	memset(&cd, 0, sizeof(cd));
	cd.input = &I2;
	cd.weights = &W2;
	cd.output = &O3;
	cd.stride_h = cd.stride_w = o->stride;
	cd.dil_h = cd.dil_w = o->dil;
	cd.pad_top = cd.pad_left = cd.pad_bottom = cd.pad_right = o->pad;
	cd.groups = 1;
	t0 = ms_now();
	ret = accel_conv2d(dev, &cd, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	ic.wall_ms = ms_now() - t0;
	if (!ret)
		ret = accel_job_counters(job, &ic.cnt);
	accel_job_free(job);
	if (ret) {
		ret = bench_fail(dev, "im2col conv", ret);
		goto out;
	}
	ok = check(o, oh, ow, x, wt, bo1) && check(o, oh, ow, x, wt, bo2) && check(o, oh, ow, x, wt, bo3);
	if (!o->f32)
		ok = ok && !memcmp(accel_buffer_ptr(bo1), accel_buffer_ptr(bo3), out_b) &&
		     !memcmp(accel_buffer_ptr(bo2), accel_buffer_ptr(bo3), out_b);
	if (o->json) {
		printf("{\"op\":\"plan\",\"layout\":\"%s\",\"c_block\":%u,\"dtype\":\"%s\",\"n\":%u,\"c\":%u,\"h\":%u,"
		       "\"w\":%u,\"k\":%u,\"r\":%u,\"s\":%u,\"stride\":%u,\"pad\":%u,\"dilation\":%u,\"oh\":%u,\"ow\":%u,"
		       "\"plan_compile_ms\":%.3f,\"plan_image_bytes\":%u,",
		       layout_names[L], d.c_block, o->f32 ? "fp32" : "int8", o->n, o->c, o->h, o->w, o->k, o->r, o->s,
		       o->stride, o->pad, o->dil, oh, ow, compile_ms, info.image_bytes);
		printf("\"plan\":{\"model_cycles\":%llu,\"dma_in_bytes\":%llu,\"wall_ms\":%.3f,"
		       "\"model_cycles_first\":%llu,\"dma_in_bytes_first\":%llu,\"wall_ms_first\":%.3f,"
		       "\"upload_bytes_first\":%llu,\"upload_bytes_reuse\":%llu,\"plan_misses_first\":%llu,"
		       "\"plan_hits_reuse\":%llu,\"plan_misses_reuse\":%llu,\"hw_jobs\":%u},",
		       (unsigned long long)reuse.cnt.total_cycles, (unsigned long long)reuse.cnt.bytes_h2d, reuse.wall_ms,
		       (unsigned long long)first.cnt.total_cycles, (unsigned long long)first.cnt.bytes_h2d, first.wall_ms,
		       (unsigned long long)first.cnt.plan_misses * info.image_bytes,
		       (unsigned long long)reuse.cnt.plan_misses * info.image_bytes,
		       (unsigned long long)first.cnt.plan_misses, (unsigned long long)reuse.cnt.plan_hits,
		       (unsigned long long)reuse.cnt.plan_misses, reuse.cnt.hw_jobs);
		printf("\"im2col\":{\"lowering\":\"%s\",\"input_layout\":\"%s\",\"model_cycles\":%llu,\"dma_in_bytes\":%llu,\"wall_ms\":%.3f,"
		       "\"hw_jobs\":%u},\"verified\":%s}\n",
		       o->forced_im2col ? "im2col" : "auto", il == ACCEL_LAYOUT_NHWC ? "NHWC" : "NCHW",
		       (unsigned long long)ic.cnt.total_cycles, (unsigned long long)ic.cnt.bytes_h2d, ic.wall_ms,
		       ic.cnt.hw_jobs, ok ? "true" : "false");
	} else {
		printf("%-6s plan: %llu cycles, %llu B in (first run %llu cycles, upload %llu B; reuse upload %llu B), "
		       "compile %.2f ms | im2col (%s): %llu cycles, %llu B in | %s\n",
		       layout_names[L], (unsigned long long)reuse.cnt.total_cycles,
		       (unsigned long long)reuse.cnt.bytes_h2d, (unsigned long long)first.cnt.total_cycles,
		       (unsigned long long)first.cnt.plan_misses * info.image_bytes,
		       (unsigned long long)reuse.cnt.plan_misses * info.image_bytes, compile_ms,
		       il == ACCEL_LAYOUT_NHWC ? "NHWC" : "NCHW", (unsigned long long)ic.cnt.total_cycles,
		       (unsigned long long)ic.cnt.bytes_h2d, ok ? "verified" : "MISMATCH");
	}
	ret = ok ? 0 : 1;
out:
	accel_buffer_free(bin);
	accel_buffer_free(bwp);
	accel_buffer_free(bin2);
	accel_buffer_free(bw2);
	accel_buffer_free(bo1);
	accel_buffer_free(bo2);
	accel_buffer_free(bo3);
	accel_plan_free(plan);
	return ret;
}

int bench_plan_main(int argc, char **argv);	/* registered in subcommands.c */

int bench_plan_main(int argc, char **argv)
{
	struct popts o;
	struct accel_dev *dev = NULL;
	char path[256];
	size_t in_n, w_n;
	void *x, *wt;
	uint64_t s = 7;
	int ret, rc = 0;

	ret = plan_parse(argc, argv, &o);
	if (ret)
		return ret;
	/* On the simulator force the IM2COL lowering, so the comparison is plan vs implicit im2col. */
	if (!o.device || !strncmp(o.device, "sim", 3))
		snprintf(path, sizeof(path), "%s%sconv=im2col", o.device && strlen(o.device) > 4 ? o.device : "sim:",
			 o.device && strlen(o.device) > 4 ? "," : "");
	else
		snprintf(path, sizeof(path), "%s", o.device);
	if (!o.device && getenv("ACCEL_DEVICE") && strncmp(getenv("ACCEL_DEVICE"), "sim", 3))
		snprintf(path, sizeof(path), "%s", getenv("ACCEL_DEVICE"));
	o.forced_im2col = !strncmp(path, "sim", 3);
	ret = accel_open(path, &dev);
	if (ret)
		return bench_fail(dev, path, ret);
	in_n = (size_t)o.n * o.c * o.h * o.w;
	w_n = (size_t)o.k * o.c * o.r * o.s;
	x = malloc(in_n * 4);
	wt = malloc(w_n * 4);
	if (!x || !wt) {
		fprintf(stderr, "accel-bench plan: out of memory\n");
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < in_n; i++) {
		if (o.f32)
			((float *)x)[i] = (float)((int)(prng(&s) % 128) - 64) / 32.0f;
		else
			((int8_t *)x)[i] = (int8_t)prng(&s);
	}
	for (size_t i = 0; i < w_n; i++) {
		if (o.f32)
			((float *)wt)[i] = (float)((int)(prng(&s) % 128) - 64) / 32.0f;
		else
			((int8_t *)wt)[i] = (int8_t)prng(&s);
	}
	for (int L = ACCEL_PLAN_NCHW; L <= ACCEL_PLAN_NCHWC; L++) {
		ret = bench_layout(dev, &o, (enum accel_plan_layout)L, x, wt);
		if (ret == 2) {
			rc = 2;
			break;
		}
		if (ret)
			rc = 1;
	}
out:
	free(x);
	free(wt);
	accel_close(dev);
	return rc;
}
