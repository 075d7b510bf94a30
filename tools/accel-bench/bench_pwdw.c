/* SPDX-License-Identifier: MIT */
/*
 * accel-bench pwdw --h H [--w W] --cin CIN --c C --stride S [--n N] [--r R --s S --pad P]
 *                  [--dtype int8|fp32] [--zp Z] [--device PATH|sim] [--trace FILE] [--json]
 *
 * A MobileNet inverted residual's expansion (1x1, CIN -> C, ReLU6) and depthwise layer (R x S, stride
 * S, padding P, ReLU6) through accel_conv2d_pwdw: the fused job, the same pair as two jobs
 * (ACCEL_PWDW_SPLIT), the pointwise convolution alone and the depthwise one alone (accel_conv2d), each
 * checked against a CPU reference (int8 exact, fp32 within the libaccel tolerance).  int8 as a QDQ
 * model runs it: per-channel requantisation records, the intermediate's zero point -128 (uint8 0; --zp)
 * as the depthwise padding.  dw_util_fused = depthwise MACs / ((fused cycles - pointwise-alone cycles) x
 * peak MACs/cycle): the cycles the depthwise layer adds to its expansion (Documentation/tools.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "cli.h"
#include "subcommands.h"

#define PROG "accel-bench pwdw"

int bench_pwdw_main(int argc, char **argv);

struct pwdw_opts {
	uint32_t n, h, w, cin, c, r, s, stride, pad;
	int32_t zp;	/* int8: the intermediate's zero point (the expansion's output, the depthwise padding) */
	bool f32, json;
	const char *device, *trace;
};

static uint64_t xr(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static int8_t sat8(int64_t v)
{
	return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/* The SFU's int path with a QCOL record: act(x + bias) (clamp in the accumulator domain), requantised. */
static int8_t requant(int64_t acc, const int32_t *rec, int32_t lo, int32_t hi, int zp)
{
	int64_t x = (int32_t)((uint32_t)acc + (uint32_t)rec[0]);

	x = x < lo ? lo : x > hi ? hi : x;
	return sat8(((x * rec[1] + (rec[2] ? 1ll << (rec[2] - 1) : 0)) >> rec[2]) + zp);
}

struct pwdw_bufs {
	struct accel_buffer *x, *wp, *bp, *mid, *wd, *bd, *out;
	struct accel_tensor X, Wp, Bp, Mid, Wd, Bd, Out;
	uint32_t oh, ow;
};

static struct accel_buffer *balloc(struct accel_dev *dev, uint64_t n)
{
	struct accel_buffer *b = NULL;

	return accel_buffer_alloc(dev, n ? n : 1, &b) ? NULL : b;
}

/* Host reference of the output element (b, y, x, k). */
static double ref_out(const struct pwdw_opts *o, const struct pwdw_bufs *B, uint32_t b, uint32_t y, uint32_t x, uint32_t k,
		      double *mag)
{
	uint32_t C = o->c, Ci = o->cin;
	double acc = 0;
	int64_t iacc = 0;

	*mag = 0;
	for (uint32_t ry = 0; ry < o->r; ry++)
		for (uint32_t rx = 0; rx < o->s; rx++) {
			int64_t iy = (int64_t)y * o->stride - o->pad + ry, ix = (int64_t)x * o->stride - o->pad + rx;
			size_t wi = ((size_t)k * o->r + ry) * o->s + rx;

			if (iy < 0 || ix < 0 || iy >= o->h || ix >= o->w) {
				if (!o->f32)	/* padding reads the intermediate's zero point */
					iacc += o->zp * ((int8_t *)accel_buffer_ptr(B->wd))[wi];
				continue;
			}
			size_t pix = ((size_t)b * o->h + (size_t)iy) * o->w + (size_t)ix;

			if (o->f32) {
				double m = ((float *)accel_buffer_ptr(B->bp))[k];

				for (uint32_t ci = 0; ci < Ci; ci++)
					m += (double)((float *)accel_buffer_ptr(B->x))[pix * Ci + ci] *
					     ((float *)accel_buffer_ptr(B->wp))[(size_t)k * Ci + ci];
				m = fmin(fmax(m, 0), 6);
				acc += m * ((float *)accel_buffer_ptr(B->wd))[wi];
				*mag += fabs(m * ((float *)accel_buffer_ptr(B->wd))[wi]);
			} else {
				int64_t m = 0;

				for (uint32_t ci = 0; ci < Ci; ci++)
					m += ((int8_t *)accel_buffer_ptr(B->x))[pix * Ci + ci] *
					     ((int8_t *)accel_buffer_ptr(B->wp))[(size_t)k * Ci + ci];
				iacc += requant(m, (int32_t *)accel_buffer_ptr(B->bp) + 3 * k, 0, 1 << 30, o->zp) *
					((int8_t *)accel_buffer_ptr(B->wd))[wi];
			}
		}
	if (o->f32) {
		acc += ((float *)accel_buffer_ptr(B->bd))[k];
		return fmin(fmax(acc, 0), 6);
	}
	(void)C;
	return requant(iacc, (int32_t *)accel_buffer_ptr(B->bd) + 3 * k, 0, 1 << 30, -128);
}

static int pwdw_setup(struct accel_dev *dev, const struct pwdw_opts *o, struct pwdw_bufs *B)
{
	uint32_t e = o->f32 ? 4 : 1, C = o->c;
	enum accel_dtype dt = o->f32 ? ACCEL_FP32 : ACCEL_INT8;
	uint64_t s = 0x5eedu, npix = (uint64_t)o->n * o->h * o->w;

	B->oh = (o->h + 2 * o->pad - o->r) / o->stride + 1;
	B->ow = (o->w + 2 * o->pad - o->s) / o->stride + 1;
	B->x = balloc(dev, npix * o->cin * e);
	B->wp = balloc(dev, (uint64_t)C * o->cin * e);
	B->bp = balloc(dev, (uint64_t)C * 12);
	B->mid = balloc(dev, npix * C * e);
	B->wd = balloc(dev, (uint64_t)C * o->r * o->s * e);
	B->bd = balloc(dev, (uint64_t)C * 12);
	B->out = balloc(dev, (uint64_t)o->n * B->oh * B->ow * C * e);
	if (!B->x || !B->wp || !B->bp || !B->mid || !B->wd || !B->bd || !B->out)
		return -1;
	/* fp32: 1 x C biases; int8: QCOL records {bias, multiplier, shift}, C x 3 */
	if (accel_tensor_4d(B->x, 0, dt, ACCEL_LAYOUT_NHWC, o->n, o->cin, o->h, o->w, &B->X) ||
	    accel_tensor_4d(B->wp, 0, dt, ACCEL_LAYOUT_NHWC, C, o->cin, 1, 1, &B->Wp) ||
	    accel_tensor_4d(B->mid, 0, dt, ACCEL_LAYOUT_NHWC, o->n, C, o->h, o->w, &B->Mid) ||
	    accel_tensor_4d(B->wd, 0, dt, ACCEL_LAYOUT_NHWC, C, 1, o->r, o->s, &B->Wd) ||
	    accel_tensor_4d(B->out, 0, dt, ACCEL_LAYOUT_NHWC, o->n, C, B->oh, B->ow, &B->Out) ||
	    accel_tensor_2d(B->bp, 0, o->f32 ? ACCEL_FP32 : ACCEL_INT32, o->f32 ? 1 : C, o->f32 ? C : 3, &B->Bp) ||
	    accel_tensor_2d(B->bd, 0, o->f32 ? ACCEL_FP32 : ACCEL_INT32, o->f32 ? 1 : C, o->f32 ? C : 3, &B->Bd)) {
		fprintf(stderr, "%s: tensor: %s\n", PROG, accel_last_error(dev));
		return -1;
	}
	for (uint64_t i = 0; i < npix * o->cin; i++)
		if (o->f32)
			((float *)accel_buffer_ptr(B->x))[i] = (float)((int)(xr(&s) % 128) - 64) / 32.0f;
		else
			((int8_t *)accel_buffer_ptr(B->x))[i] = (int8_t)xr(&s);
	for (uint64_t i = 0; i < (uint64_t)C * o->cin; i++)
		if (o->f32)
			((float *)accel_buffer_ptr(B->wp))[i] = (float)((int)(xr(&s) % 128) - 64) / 256.0f;
		else
			((int8_t *)accel_buffer_ptr(B->wp))[i] = (int8_t)xr(&s);
	for (uint64_t i = 0; i < (uint64_t)C * o->r * o->s; i++)
		if (o->f32)
			((float *)accel_buffer_ptr(B->wd))[i] = (float)((int)(xr(&s) % 128) - 64) / 64.0f;
		else
			((int8_t *)accel_buffer_ptr(B->wd))[i] = (int8_t)xr(&s);
	for (uint32_t k = 0; k < C; k++) {
		if (o->f32) {
			((float *)accel_buffer_ptr(B->bp))[k] = (float)((int)(xr(&s) % 64) - 16) / 16.0f;
			((float *)accel_buffer_ptr(B->bd))[k] = (float)((int)(xr(&s) % 64) - 32) / 16.0f;
		} else {
			int32_t *rp = (int32_t *)accel_buffer_ptr(B->bp) + 3 * k, *rd = (int32_t *)accel_buffer_ptr(B->bd) + 3 * k;

			/* scales near what a calibrated layer has: the accumulators' spread over ~256 steps */
			rp[0] = (int32_t)(xr(&s) % 4001) - 2000;
			rp[1] = (int32_t)(1u << 30) + (int32_t)(xr(&s) % (1u << 29));
			rp[2] = 30 + (int32_t)(xr(&s) % 3) + (o->cin > 64);
			rd[0] = (int32_t)(xr(&s) % 4001) - 2000;
			rd[1] = (int32_t)(1u << 30) + (int32_t)(xr(&s) % (1u << 29));
			rd[2] = 38 + (int32_t)(xr(&s) % 2);
		}
	}
	return 0;
}

static void pwdw_descs(const struct pwdw_opts *o, struct pwdw_bufs *B, struct accel_conv2d_pwdw_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->pw.input = &B->X;
	d->pw.weights = &B->Wp;
	d->pw.output = &B->Mid;
	d->pw.stride_h = d->pw.stride_w = d->pw.dil_h = d->pw.dil_w = d->pw.groups = 1;
	d->pw.epi.bias = &B->Bp;
	d->dw.input = &B->Mid;
	d->dw.weights = &B->Wd;
	d->dw.output = &B->Out;
	d->dw.stride_h = d->dw.stride_w = o->stride;
	d->dw.pad_top = d->dw.pad_left = d->dw.pad_bottom = d->dw.pad_right = o->pad;
	d->dw.dil_h = d->dw.dil_w = 1;
	d->dw.groups = o->c;
	d->dw.epi.bias = &B->Bd;
	if (o->f32) {	/* ReLU6 */
		d->pw.epi.act = d->dw.epi.act = ACCEL_ACT_CLAMP;
		d->pw.epi.clamp_lo_f = d->dw.epi.clamp_lo_f = 0;
		d->pw.epi.clamp_hi_f = d->dw.epi.clamp_hi_f = 6;
	} else {	/* a QDQ ReLU6: a ReLU below the output range's top, zero point -128 (uint8 0) */
		d->pw.epi.act = d->dw.epi.act = ACCEL_ACT_RELU;
		d->pw.epi.zero_point = o->zp;
		d->dw.epi.zero_point = -128;
		d->dw.input_zero_point = o->zp;
	}
}

/* Run one operation; its cycles and hardware jobs. */
static int run1(struct accel_dev *dev, const struct accel_conv2d_pwdw_desc *d, int which, uint64_t *cycles,
		unsigned *hw)
{
	struct accel_job *job = NULL;
	struct accel_counters k;
	int ret;

	ret = which == 2 ? accel_conv2d(dev, &d->pw, NULL, &job)
	      : which == 3 ? accel_conv2d(dev, &d->dw, NULL, &job)
			   : accel_conv2d_pwdw(dev, d, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	if (!ret)
		ret = accel_job_counters(job, &k);
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", PROG, accel_strerror(ret), accel_last_error(dev));
		accel_job_free(job);
		return ret;
	}
	*cycles = k.total_cycles;
	*hw = k.hw_jobs;
	accel_job_free(job);
	return 0;
}

static bool verify(const struct pwdw_opts *o, const struct pwdw_bufs *B)
{
	uint64_t s = 99, total = (uint64_t)o->n * B->oh * B->ow * o->c;

	for (int t = 0; t < 4096; t++) {
		uint64_t i = total <= 4096 ? (uint64_t)t % total : xr(&s) % total;
		uint32_t k = (uint32_t)(i % o->c), x = (uint32_t)(i / o->c % B->ow), y = (uint32_t)(i / o->c / B->ow % B->oh);
		uint32_t b = (uint32_t)(i / o->c / B->ow / B->oh);
		double mag, ref = ref_out(o, B, b, y, x, k, &mag);

		if (o->f32) {
			double got = ((float *)accel_buffer_ptr(B->out))[i];

			if (fabs(got - ref) > 1e-4 * (1 + mag) + 1e-5 * fabs(ref))
				return false;
		} else if (((int8_t *)accel_buffer_ptr(B->out))[i] != (int8_t)ref) {
			return false;
		}
	}
	return true;
}

int bench_pwdw_main(int argc, char **argv)
{
	struct pwdw_opts o = { .n = 1, .r = 3, .s = 3, .pad = 1, .zp = -128 };
	struct { const char *name; uint32_t *v; uint32_t min, max; bool req; } nums[] = {
		{ "--h", &o.h, 1, 65535, true }, { "--w", &o.w, 1, 65535, false }, { "--cin", &o.cin, 1, 65535, true },
		{ "--c", &o.c, 1, 65535, true }, { "--stride", &o.stride, 1, 255, true }, { "--n", &o.n, 1, 4096, false },
		{ "--r", &o.r, 1, 255, false }, { "--s", &o.s, 1, 255, false }, { "--pad", &o.pad, 0, 255, false },
	};
	bool seen[sizeof(nums) / sizeof(nums[0])] = { false };
	struct accel_dev *dev;
	struct accel_caps caps;
	struct pwdw_bufs B;
	struct accel_conv2d_pwdw_desc d;
	uint64_t cyc[4];
	unsigned hw[4];
	bool ok[4];
	char msg[256];
	int ret;

	for (int i = 1; i < argc; i++) {
		bool done = false;

		if (!strcmp(argv[i], "--json")) {
			o.json = true;
			continue;
		}
		if (!strcmp(argv[i], "--zp")) {
			char *end;
			long v = i + 1 < argc ? strtol(argv[i + 1], &end, 0) : 0;

			if (i + 1 >= argc || *end || end == argv[i + 1] || v < -128 || v > 127)
				return cli_usage_error(PROG, "--zp: needs a value in -128..127");
			o.zp = (int32_t)v;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--dtype") || !strcmp(argv[i], "--device") || !strcmp(argv[i], "--trace")) {
			if (i + 1 >= argc)
				return cli_usage_error(PROG, "%s: needs a value", argv[i]);
			if (!strcmp(argv[i], "--device")) {
				o.device = argv[++i];
				continue;
			}
			if (!strcmp(argv[i], "--trace")) {
				o.trace = argv[++i];
				continue;
			}
			i++;
			if (strcmp(argv[i], "int8") && strcmp(argv[i], "fp32"))
				return cli_usage_error(PROG, "--dtype: '%s' is not supported (int8 or fp32)", argv[i]);
			o.f32 = !strcmp(argv[i], "fp32");
			continue;
		}
		for (unsigned j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
			if (strcmp(argv[i], nums[j].name))
				continue;
			ret = cli_u32(PROG, argv[i], i + 1 < argc ? argv[i + 1] : NULL, nums[j].min, nums[j].max, nums[j].v);
			if (ret)
				return ret;
			i++;
			seen[j] = done = true;
			break;
		}
		if (!done)
			return cli_usage_error(PROG, "%s: unknown option", argv[i]);
	}
	for (unsigned j = 0; j < sizeof(nums) / sizeof(nums[0]); j++)
		if (nums[j].req && !seen[j])
			return cli_usage_error(PROG, "missing %s (required)", nums[j].name);
	if (!seen[1])
		o.w = o.h;
	if (o.h + 2 * o.pad < o.r || o.w + 2 * o.pad < o.s)
		return cli_usage_error(PROG, "the filter is larger than the padded image");
	ret = accel_open_msg(o.device, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", PROG, accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	memset(&B, 0, sizeof(B));
	if (pwdw_setup(dev, &o, &B)) {
		fprintf(stderr, "%s: cannot set up the buffers and tensors\n", PROG);
		accel_close(dev);
		return 1;
	}
	pwdw_descs(&o, &B, &d);
	/* 0 fused, 1 two jobs, 2 pointwise alone, 3 depthwise alone (its input: the pointwise output) */
	for (int which = 0; which < 4; which++) {
		d.flags = which == 1 ? ACCEL_PWDW_SPLIT : 0;
		memset(accel_buffer_ptr(B.out), 0x5A, (size_t)o.n * B.oh * B.ow * o.c * (o.f32 ? 4 : 1));
		if (!which && o.trace && (ret = accel_trace_begin(dev))) {
			fprintf(stderr, "%s: --trace: %s: %s\n", PROG, accel_strerror(ret), accel_last_error(dev));
			accel_close(dev);
			return 1;
		}
		ret = run1(dev, &d, which, &cyc[which], &hw[which]);
		if (!ret && !which && o.trace && ((ret = accel_trace_end(dev)) || (ret = accel_trace_write_json(dev, o.trace))))
			fprintf(stderr, "%s: --trace: %s: %s\n", PROG, accel_strerror(ret), accel_last_error(dev));
		if (ret) {
			accel_close(dev);
			return 1;
		}
		ok[which] = which == 2 || verify(&o, &B);
	}
	{
		double peak = (double)caps.rows * caps.cols * caps.pes * (o.f32 ? caps.rate_fp32 : caps.rate_int8);
		double dw_macs = (double)o.n * B.oh * B.ow * o.c * o.r * o.s, pw_macs = (double)o.n * o.h * o.w * o.c * o.cin;
		double add = (double)cyc[0] - (double)cyc[2];
		bool all = ok[0] && ok[1] && ok[3];

		printf("{\"op\":\"pwdw\",\"n\":%u,\"h\":%u,\"w\":%u,\"cin\":%u,\"c\":%u,\"r\":%u,\"s\":%u,\"stride\":%u,"
		       "\"pad\":%u,\"zp\":%d,\"oh\":%u,\"ow\":%u,\"dtype\":\"%s\",\"device\":\"%s\",\"fused_cycles\":%llu,"
		       "\"fused_hw_jobs\":%u,\"split_cycles\":%llu,\"pw_cycles\":%llu,\"dw_cycles\":%llu,"
		       "\"pw_macs\":%.0f,\"dw_macs\":%.0f,\"dw_added_cycles\":%.0f,\"dw_util_fused\":%.4f,"
		       "\"dw_util_alone\":%.4f,\"pair_util_fused\":%.4f,\"pair_util_split\":%.4f,\"verified\":%s}\n",
		       o.n, o.h, o.w, o.cin, o.c, o.r, o.s, o.stride, o.pad, o.f32 ? 0 : o.zp, B.oh, B.ow, o.f32 ? "fp32" : "int8",
		       caps.backend, (unsigned long long)cyc[0], hw[0], (unsigned long long)cyc[1],
		       (unsigned long long)cyc[2], (unsigned long long)cyc[3], pw_macs, dw_macs, add,
		       add > 0 ? dw_macs / (add * peak) : 0.0, dw_macs / ((double)cyc[3] * peak),
		       (dw_macs + pw_macs) / ((double)cyc[0] * peak), (dw_macs + pw_macs) / ((double)cyc[1] * peak),
		       all ? "true" : "false");
		fflush(stdout);
		accel_close(dev);
		return all ? 0 : 1;
	}
}
