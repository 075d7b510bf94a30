/* SPDX-License-Identifier: MIT */
/* accel_conv2d_pwdw (a 1x1 expansion feeding a depthwise convolution, one job) against a plain-C
 * reference of the two convolutions: seeded sweeps over shapes, strides, padding, batches, int8 zero
 * points, per-channel records and per-tensor requantisation, activations and fp32, on the default
 * geometry, the small one and small storage units (several segments); the same results as the two-job
 * form (ACCEL_PWDW_SPLIT); validation and the one-job flag. */
#include "common.h"

struct pdcase {
	uint32_t n, cin, c, h, w, r, s, sh, sw, pt, pl, pb, pr, dh, dw;
	bool f32;
	bool qcol;		/* int8: per-channel records (else a per-tensor multiplier and a 1 x C bias) */
	int act_pw, act_dw;	/* 0 none, 1 ReLU, 2 clamp */
	int zmid, zout;		/* int8: the intermediate's zero point (the depthwise padding), the output's */
	bool out32;		/* int8: the depthwise output int32 (no requantisation) */
};

struct pdbufs {
	struct accel_buffer *x, *wp, *bp, *mid, *wd, *bd, *out;
	struct accel_tensor X, Wp, Bp, Mid, Wd, Bd, Out;
	uint32_t oh, ow;
	size_t out_bytes, mid_bytes;
};

static uint64_t pd_cycles, pd_oq;	/* device cycles, output-queue accesses and hardware jobs of the last pd_run */
static unsigned pd_hw;

static void pd_alloc(struct accel_dev *dev, const struct pdcase *t, struct pdbufs *B, uint64_t seed)
{
	uint32_t e = t->f32 ? 4 : 1, C = t->c, oe = t->f32 || t->out32 ? 4 : 1;
	enum accel_dtype dt = t->f32 ? ACCEL_FP32 : ACCEL_INT8;
	size_t npix = (size_t)t->n * t->h * t->w;
	uint64_t s = seed;

	memset(B, 0, sizeof(*B));
	B->oh = (t->h + t->pt + t->pb - t->dh * (t->r - 1) - 1) / t->sh + 1;
	B->ow = (t->w + t->pl + t->pr - t->dw * (t->s - 1) - 1) / t->sw + 1;
	B->mid_bytes = npix * C * e;
	B->out_bytes = (size_t)t->n * B->oh * B->ow * C * oe;
	B->x = alloc_buf(dev, npix * t->cin * e);
	B->wp = alloc_buf(dev, (size_t)C * t->cin * e);
	B->bp = alloc_buf(dev, (size_t)C * 12);
	B->mid = alloc_buf(dev, B->mid_bytes);
	B->wd = alloc_buf(dev, (size_t)C * t->r * t->s * e);
	B->bd = alloc_buf(dev, (size_t)C * 12);
	B->out = alloc_buf(dev, B->out_bytes);
	cr_assert_eq(accel_tensor_4d(B->x, 0, dt, ACCEL_LAYOUT_NHWC, t->n, t->cin, t->h, t->w, &B->X), 0);
	cr_assert_eq(accel_tensor_4d(B->wp, 0, dt, ACCEL_LAYOUT_NHWC, C, t->cin, 1, 1, &B->Wp), 0);
	cr_assert_eq(accel_tensor_4d(B->mid, 0, dt, ACCEL_LAYOUT_NHWC, t->n, C, t->h, t->w, &B->Mid), 0);
	cr_assert_eq(accel_tensor_4d(B->wd, 0, dt, ACCEL_LAYOUT_NHWC, C, 1, t->r, t->s, &B->Wd), 0);
	cr_assert_eq(accel_tensor_4d(B->out, 0, t->f32 ? ACCEL_FP32 : t->out32 ? ACCEL_INT32 : ACCEL_INT8,
				     ACCEL_LAYOUT_NHWC, t->n, C, B->oh, B->ow, &B->Out), 0);
	if (t->f32 || !t->qcol) {
		cr_assert_eq(accel_tensor_2d(B->bp, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT32, 1, C, &B->Bp), 0);
		cr_assert_eq(accel_tensor_2d(B->bd, 0, t->f32 ? ACCEL_FP32 : ACCEL_INT32, 1, C, &B->Bd), 0);
	} else {
		cr_assert_eq(accel_tensor_2d(B->bp, 0, ACCEL_INT32, C, 3, &B->Bp), 0);
		cr_assert_eq(accel_tensor_2d(B->bd, 0, ACCEL_INT32, C, 3, &B->Bd), 0);
	}
	if (t->f32) {
		fill_f32(accel_buffer_ptr(B->x), npix * t->cin, &s);
		fill_f32(accel_buffer_ptr(B->wp), (size_t)C * t->cin, &s);
		fill_f32(accel_buffer_ptr(B->wd), (size_t)C * t->r * t->s, &s);
		fill_f32(accel_buffer_ptr(B->bp), C, &s);
		fill_f32(accel_buffer_ptr(B->bd), C, &s);
		return;
	}
	fill_i8(accel_buffer_ptr(B->x), npix * t->cin, &s);
	fill_i8(accel_buffer_ptr(B->wp), (size_t)C * t->cin, &s);
	fill_i8(accel_buffer_ptr(B->wd), (size_t)C * t->r * t->s, &s);
	for (uint32_t k = 0; k < C; k++) {
		int32_t *rp = (int32_t *)accel_buffer_ptr(B->bp), *rd = (int32_t *)accel_buffer_ptr(B->bd);

		if (t->qcol) {	/* {bias, multiplier, shift}: scales that spread the sums over the int8 range */
			rp[3 * k] = (int32_t)(xrng(&s) % 20001) - 10000;
			rp[3 * k + 1] = (int32_t)(1u << 30) + (int32_t)(xrng(&s) % (1u << 29));
			rp[3 * k + 2] = 36 + (int32_t)(xrng(&s) % 4) + (t->cin > 48);
			rd[3 * k] = (int32_t)(xrng(&s) % 20001) - 10000;
			rd[3 * k + 1] = (int32_t)(1u << 30) + (int32_t)(xrng(&s) % (1u << 29));
			rd[3 * k + 2] = 38 + (int32_t)(xrng(&s) % 3) + (t->r * t->s > 9);
		} else {
			rp[k] = (int32_t)(xrng(&s) % 20001) - 10000;
			rd[k] = (int32_t)(xrng(&s) % 20001) - 10000;
		}
	}
}

static void pd_desc(const struct pdcase *t, struct pdbufs *B, struct accel_conv2d_pwdw_desc *d)
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
	d->dw.stride_h = t->sh;
	d->dw.stride_w = t->sw;
	d->dw.pad_top = t->pt;
	d->dw.pad_left = t->pl;
	d->dw.pad_bottom = t->pb;
	d->dw.pad_right = t->pr;
	d->dw.dil_h = t->dh;
	d->dw.dil_w = t->dw;
	d->dw.groups = t->c;
	d->dw.epi.bias = &B->Bd;
	d->pw.epi.act = t->act_pw == 1 ? ACCEL_ACT_RELU : t->act_pw == 2 ? ACCEL_ACT_CLAMP : ACCEL_ACT_NONE;
	d->dw.epi.act = t->act_dw == 1 ? ACCEL_ACT_RELU : t->act_dw == 2 ? ACCEL_ACT_CLAMP : ACCEL_ACT_NONE;
	if (t->f32) {
		d->pw.epi.clamp_lo_f = d->dw.epi.clamp_lo_f = -0.5f;
		d->pw.epi.clamp_hi_f = d->dw.epi.clamp_hi_f = 6;
		return;
	}
	d->pw.epi.clamp_lo_i = -3000;
	d->pw.epi.clamp_hi_i = 1 << 24;
	d->dw.epi.clamp_lo_i = -(1 << 20);
	d->dw.epi.clamp_hi_i = 20000;
	d->pw.epi.zero_point = (int16_t)t->zmid;
	d->dw.input_zero_point = t->zmid;
	if (!t->qcol) {
		cr_assert_eq(accel_quant_from_scale(1.0 / (90.0 * t->cin), &d->pw.epi.multiplier, &d->pw.epi.shift), 0);
		if (!t->out32)
			cr_assert_eq(accel_quant_from_scale(1.0 / (700.0 * t->r * t->s), &d->dw.epi.multiplier,
							    &d->dw.epi.shift), 0);
	}
	if (!t->out32)
		d->dw.epi.zero_point = (int16_t)t->zout;
}

/* The SFU's int path: act(x + bias) in the accumulator domain (wrapping int32), requantised. */
static int64_t sfu_int(int64_t acc, int32_t bias, int act, int32_t lo, int32_t hi, bool rq, int32_t mult,
		       uint32_t shift, int zp)
{
	int32_t x = (int32_t)((uint32_t)acc + (uint32_t)bias);

	if (act == 1 && x < 0)
		x = 0;
	if (act == 2)
		x = x < lo ? lo : x > hi ? hi : x;
	if (!rq)
		return x;
	return ref_requant(x, mult, shift > 62 ? 62 : shift, zp);
}

/* The intermediate element (b, y, x, k) of the reference; *mag its sum of |products| (fp32). */
static double ref_mid(const struct pdcase *t, const struct pdbufs *B, const struct accel_conv2d_pwdw_desc *d,
		      size_t pix, uint32_t k, double *mag)
{
	double a = 0;
	int64_t ia = 0;

	*mag = 0;
	for (uint32_t ci = 0; ci < t->cin; ci++) {
		if (t->f32) {
			double p = (double)((const float *)accel_buffer_ptr(B->x))[pix * t->cin + ci] *
				   ((const float *)accel_buffer_ptr(B->wp))[(size_t)k * t->cin + ci];

			a += p;
			*mag += fabs(p);
		} else {
			ia += ((const int8_t *)accel_buffer_ptr(B->x))[pix * t->cin + ci] *
			      ((const int8_t *)accel_buffer_ptr(B->wp))[(size_t)k * t->cin + ci];
		}
	}
	if (t->f32) {
		a += ((const float *)accel_buffer_ptr(B->bp))[k];
		if (t->act_pw == 1 && a < 0)
			a = 0;
		if (t->act_pw == 2)
			a = a < -0.5 ? -0.5 : a > 6 ? 6 : a;
		return a;
	}
	if (t->qcol) {
		const int32_t *r = (const int32_t *)accel_buffer_ptr(B->bp) + 3 * k;

		return (double)sfu_int(ia, r[0], t->act_pw, d->pw.epi.clamp_lo_i, d->pw.epi.clamp_hi_i, true, r[1],
				       (uint32_t)r[2], t->zmid);
	}
	return (double)sfu_int(ia, ((const int32_t *)accel_buffer_ptr(B->bp))[k], t->act_pw, d->pw.epi.clamp_lo_i,
			       d->pw.epi.clamp_hi_i, true, d->pw.epi.multiplier, d->pw.epi.shift, t->zmid);
}

/* The case, for failure messages. */
static const char *pd_name(const struct pdcase *t)
{
	static char buf[200];

	snprintf(buf, sizeof(buf), "n%u cin%u c%u %ux%u r%u s%u stride %u,%u pad %u,%u,%u,%u dil %u,%u %s%s act %d,%d zp %d,%d%s",
		 t->n, t->cin, t->c, t->h, t->w, t->r, t->s, t->sh, t->sw, t->pt, t->pl, t->pb, t->pr, t->dh, t->dw,
		 t->f32 ? "fp32" : "int8", t->qcol ? " qcol" : "", t->act_pw, t->act_dw, t->zmid, t->zout,
		 t->out32 ? " int32 out" : "");
	return buf;
}

/* Check every output element against the reference of both convolutions. */
static void pd_check(const struct pdcase *t, const struct pdbufs *B, const struct accel_conv2d_pwdw_desc *d,
		     uint64_t seed, const char *what)
{
	uint32_t C = t->c;
	double *mid, *mmag;
	size_t npix = (size_t)t->n * t->h * t->w;

	mid = malloc(npix * C * sizeof(double));
	mmag = malloc(npix * C * sizeof(double));
	cr_assert(mid && mmag);
	for (size_t p = 0; p < npix; p++)
		for (uint32_t k = 0; k < C; k++)
			mid[p * C + k] = ref_mid(t, B, d, p, k, &mmag[p * C + k]);
	for (uint32_t n = 0; n < t->n; n++)
		for (uint32_t y = 0; y < B->oh; y++)
			for (uint32_t x = 0; x < B->ow; x++)
				for (uint32_t k = 0; k < C; k++) {
					size_t oi = (((size_t)n * B->oh + y) * B->ow + x) * C + k;
					double acc = 0, mag = 0;
					int64_t ia = 0;

					for (uint32_t ry = 0; ry < t->r; ry++)
						for (uint32_t rx = 0; rx < t->s; rx++) {
							int64_t iy = (int64_t)y * t->sh - t->pt + (int64_t)ry * t->dh;
							int64_t ix = (int64_t)x * t->sw - t->pl + (int64_t)rx * t->dw;
							size_t wi = ((size_t)k * t->r + ry) * t->s + rx, p;
							double wv;

							if (iy < 0 || ix < 0 || iy >= t->h || ix >= t->w) {
								if (!t->f32)	/* padding reads the zero point */
									ia += (int64_t)t->zmid *
									      ((const int8_t *)accel_buffer_ptr(B->wd))[wi];
								continue;
							}
							p = ((size_t)n * t->h + (size_t)iy) * t->w + (size_t)ix;
							if (!t->f32) {
								ia += (int64_t)mid[p * C + k] *
								      ((const int8_t *)accel_buffer_ptr(B->wd))[wi];
								continue;
							}
							wv = ((const float *)accel_buffer_ptr(B->wd))[wi];
							acc += mid[p * C + k] * wv;
							/* the product's own rounding and the intermediate's */
							mag += fabs(mid[p * C + k] * wv) + fabs(wv) * (1 + mmag[p * C + k]);
						}
					if (t->f32) {
						double got = ((const float *)accel_buffer_ptr(B->out))[oi];

						acc += ((const float *)accel_buffer_ptr(B->bd))[k];
						if (t->act_dw == 1 && acc < 0)
							acc = 0;
						if (t->act_dw == 2)
							acc = acc < -0.5 ? -0.5 : acc > 6 ? 6 : acc;
						cr_assert(fabs(got - acc) <= F32_RTOL * (1 + mag),
							  "%s seed %llu (%s) out(n%u,y%u,x%u,c%u) = %g, expected %g", what,
							  (unsigned long long)seed, pd_name(t), n, y, x, k, got, acc);
					} else {
						const int32_t *rd = (const int32_t *)accel_buffer_ptr(B->bd);
						int64_t ref, got;

						if (t->qcol)
							ref = sfu_int(ia, rd[3 * k], t->act_dw, d->dw.epi.clamp_lo_i,
								      d->dw.epi.clamp_hi_i, true, rd[3 * k + 1],
								      (uint32_t)rd[3 * k + 2], t->zout);
						else
							ref = sfu_int(ia, rd[k], t->act_dw, d->dw.epi.clamp_lo_i,
								      d->dw.epi.clamp_hi_i, !t->out32, d->dw.epi.multiplier,
								      d->dw.epi.shift, t->zout);
						got = t->out32 ? ((const int32_t *)accel_buffer_ptr(B->out))[oi]
							       : ((const int8_t *)accel_buffer_ptr(B->out))[oi];
						cr_assert_eq(got, ref, "%s seed %llu (%s) out(n%u,y%u,x%u,c%u) = %lld, expected %lld",
							     what, (unsigned long long)seed, pd_name(t), n, y, x, k, (long long)got,
							     (long long)ref);
					}
				}
	free(mid);
	free(mmag);
}

static void pd_free(struct pdbufs *B)
{
	accel_buffer_free(B->x);
	accel_buffer_free(B->wp);
	accel_buffer_free(B->bp);
	accel_buffer_free(B->mid);
	accel_buffer_free(B->wd);
	accel_buffer_free(B->bd);
	accel_buffer_free(B->out);
}

/* Run case t with flags; check it against the reference (every output element written); the fused job
 * leaves the intermediate untouched.  Sets pd_cycles, pd_hw.  false: ONE_JOB and no one-job plan. */
static bool pd_run(struct accel_dev *dev, const struct pdcase *t, uint64_t seed, uint32_t flags)
{
	struct pdbufs B;
	struct accel_conv2d_pwdw_desc d;
	struct accel_job *job = NULL;
	struct accel_counters k;
	bool mid_kept = true;
	int ret;

	pd_alloc(dev, t, &B, seed);
	pd_desc(t, &B, &d);
	d.flags = flags;
	memset(accel_buffer_ptr(B.out), 0x5A, B.out_bytes);
	memset(accel_buffer_ptr(B.mid), 0xA5, B.mid_bytes);
	ret = accel_conv2d_pwdw(dev, &d, NULL, &job);
	if (ret == -E2BIG && (flags & ACCEL_PWDW_ONE_JOB)) {
		if (getenv("PD_WHY"))
			fprintf(stderr, "%s: %s\n", pd_name(t), accel_last_error(dev));
		cr_assert(strstr(accel_last_error(dev), "cannot run as one job"), "%s", accel_last_error(dev));
		pd_free(&B);
		return false;
	}
	cr_assert_eq(ret, 0, "seed %llu (%s): %s: %s", (unsigned long long)seed, pd_name(t), accel_strerror(ret),
		     accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0, "seed %llu: %s", (unsigned long long)seed, accel_last_error(dev));
	cr_assert_eq(accel_job_counters(job, &k), 0);
	accel_job_free(job);
	pd_cycles = k.total_cycles;
	pd_oq = k.oq_accesses;
	pd_hw = k.hw_jobs;
	for (size_t i = 0; i < B.mid_bytes; i++)
		mid_kept &= ((const uint8_t *)accel_buffer_ptr(B.mid))[i] == 0xA5;
	if (pd_hw == 1)
		cr_assert(mid_kept, "seed %llu: the one-job form wrote the intermediate", (unsigned long long)seed);
	else
		cr_assert(!mid_kept, "seed %llu: the two-job form must write the intermediate", (unsigned long long)seed);
	pd_check(t, &B, &d, seed, pd_hw == 1 ? "fused" : "two jobs");
	pd_free(&B);
	return true;
}

/* One job where there is one (else the two jobs); true if it ran as one. */
static bool pd_run_any(struct accel_dev *dev, const struct pdcase *t, uint64_t seed)
{
	if (pd_run(dev, t, seed, ACCEL_PWDW_ONE_JOB)) {
		cr_assert_eq(pd_hw, 1);
		return true;
	}
	pd_run(dev, t, seed, 0);
	return false;
}

/* A random case; C a multiple of `cmul` (rows x cols: a fused plan's channel split) or, one in eight,
 * any C. */
static struct pdcase pd_random(uint64_t *s, uint32_t cmul, uint32_t maxhw, bool allow_f32)
{
	struct pdcase t = { 0 };

	t.n = 1 + (uint32_t)(xrng(s) % 4 == 0) * (1 + (uint32_t)(xrng(s) % 2));
	t.cin = 1 + (uint32_t)(xrng(s) % 40);
	t.c = cmul * (1 + (uint32_t)(xrng(s) % 6));
	if (xrng(s) % 8 == 0)
		t.c = 1 + (uint32_t)(xrng(s) % 50);
	t.r = 1 + (uint32_t)(xrng(s) % 4);
	t.s = 1 + (uint32_t)(xrng(s) % 4);
	if (xrng(s) % 2)
		t.r = t.s = 3;
	t.sh = 1 + (uint32_t)(xrng(s) % 3 == 0);
	t.sw = xrng(s) % 4 ? t.sh : 1 + (uint32_t)(xrng(s) % 2);
	t.dh = 1 + (uint32_t)(xrng(s) % 6 == 0);
	t.dw = 1 + (uint32_t)(xrng(s) % 6 == 0);
	t.pt = (uint32_t)(xrng(s) % 3);
	t.pl = (uint32_t)(xrng(s) % 3);
	t.pb = (uint32_t)(xrng(s) % 3);
	t.pr = (uint32_t)(xrng(s) % 3);
	t.h = 1 + (uint32_t)(xrng(s) % maxhw);
	t.w = 1 + (uint32_t)(xrng(s) % maxhw);
	while (t.h + t.pt + t.pb < t.dh * (t.r - 1) + 1)
		t.h++;
	while (t.w + t.pl + t.pr < t.dw * (t.s - 1) + 1)
		t.w++;
	t.f32 = allow_f32 && xrng(s) % 3 == 0;
	t.qcol = xrng(s) % 3 != 0;
	t.act_pw = (int)(xrng(s) % 3);
	t.act_dw = (int)(xrng(s) % 3);
	if (!t.f32) {
		t.zmid = xrng(s) % 4 ? (int)(xrng(s) % 256) - 128 : 0;
		t.zout = (int)(xrng(s) % 256) - 128;
		t.out32 = !t.qcol && xrng(s) % 4 == 0;
	}
	return t;
}

/* MobileNetV2's expansion + depthwise pairs (224 x 224, int8 as its QDQ model: per-channel records,
 * ReLU, the intermediate's zero point -128) and fp32, fused: one job, the reference results, fewer
 * cycles than the two jobs. */
Test(pwdw, mobilenet_v2_pairs_fuse_and_match_reference)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	static const uint32_t pairs[][4] = {	/* H, Cin, C, stride */
		{ 112, 16, 96, 2 }, { 56, 24, 144, 1 }, { 56, 24, 144, 2 }, { 28, 32, 192, 1 }, { 28, 32, 192, 2 },
		{ 14, 64, 384, 1 }, { 14, 96, 576, 1 }, { 14, 96, 576, 2 }, { 7, 160, 960, 1 },
	};

	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	if (caps.rows != 4 || caps.cols != 4 || caps.pes != 16)
		cr_skip_test("default geometry only");
	for (unsigned i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		for (unsigned f = 0; f < 2; f++) {
			struct pdcase t = { .n = 1, .cin = pairs[i][1], .c = pairs[i][2], .h = pairs[i][0],
					    .w = pairs[i][0], .r = 3, .s = 3, .sh = pairs[i][3], .sw = pairs[i][3],
					    .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .f32 = f, .qcol = true,
					    .act_pw = f ? 2 : 1, .act_dw = f ? 2 : 1, .zmid = -128, .zout = -128 };
			uint64_t fused, split;

			if (f)
				t.zmid = t.zout = 0;
			pd_run(dev, &t, 100 + i, 0);
			fused = pd_cycles;
			/* int8: every pair fuses; fp32 where the fused job is the faster */
			cr_assert(pd_hw == 1 || f, "pair %u: two jobs", i);
			pd_run(dev, &t, 100 + i, ACCEL_PWDW_SPLIT);
			split = pd_cycles;
			cr_assert_eq(pd_hw, 2);
			cr_assert(fused <= split, "pair %u %s: fused %llu cycles, two jobs %llu", i, f ? "fp32" : "int8",
				  (unsigned long long)fused, (unsigned long long)split);
		}
	accel_close(dev);
}

Test(pwdw, randomized_sweep_default_geometry)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	uint64_t s = 0xF05EDD01ull;
	unsigned fused = 0;

	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t seed = xrng(&s), st = seed;
		struct pdcase t = pd_random(&st, caps.rows * caps.cols, 30, true);

		fused += pd_run_any(dev, &t, seed);
		if (i % 8 == 0)	/* and as it runs without the flag */
			pd_run(dev, &t, seed, 0);
	}
	cr_assert(fused >= 30, "only %u of 40 cases had a one-job plan", fused);
	accel_close(dev);
}

/* 2 x 2 x 4 PEs, 64 KiB storage units: several segments per image (both halves, padding rows filled
 * again, remainders in every segment), batches. */
Test(pwdw, randomized_sweep_small_geometry)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	uint64_t s = 0x5A11F05Eull;
	unsigned fused = 0;

	for (unsigned i = 0; i < 60; i++) {
		uint64_t seed = xrng(&s), st = seed;
		struct pdcase t = pd_random(&st, 4, 40, true);

		fused += pd_run_any(dev, &t, seed);
	}
	cr_assert(fused >= 45, "only %u of 60 cases had a one-job plan", fused);
	accel_close(dev);
}

/* The default array with 128 KiB storage units: MobileNet-like shapes in several segments. */
Test(pwdw, segments_on_small_storage_units)
{
	struct accel_dev *dev;
	static const uint32_t shapes[][5] = {	/* H, Cin, C, stride, fp32 */
		{ 56, 24, 144, 2, 0 }, { 28, 32, 192, 1, 0 }, { 40, 16, 96, 2, 0 }, { 30, 8, 64, 1, 1 }, { 33, 12, 48, 2, 0 },
	};

	if (!test_is_sim())
		cr_skip_test("sim geometry");
	dev = open_dev("sim:sram=262144");
	for (unsigned i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct pdcase t = { .n = 1 + i % 2, .cin = shapes[i][1], .c = shapes[i][2], .h = shapes[i][0],
				    .w = shapes[i][0] - i, .r = 3, .s = 3, .sh = shapes[i][3], .sw = shapes[i][3], .pt = 1,
				    .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .f32 = shapes[i][4], .qcol = true,
				    .act_pw = 1, .act_dw = 2, .zmid = shapes[i][4] ? 0 : -128, .zout = 5 };

		cr_assert(pd_run(dev, &t, 300 + i, ACCEL_PWDW_ONE_JOB), "shape %u: no one-job plan", i);
	}
	accel_close(dev);
}

/* The expansion's EXEs hosting depthwise iterations (sim option pwdw-host=on: every plan hosts what it
 * can; the last main EXE preloads the run's first window): the reference results on the default
 * geometry, the 2 x 2 x 4 one and small storage units (several segments in both halves, remainders,
 * batches), with int8 zero points, per-channel and per-tensor requantisation, activations, int32
 * outputs and fp32. */
Test(pwdw, hosted_depthwise_iterations_match_reference)
{
	static const struct {
		const char *dev;
		uint32_t maxhw, cases, mbv2, min_fused;
	} cfgs[] = {	/* random cases up to maxhw pixels a side, then mbv2 MobileNet-like ones */
		{ "sim:pwdw-host=on", 30, 24, 16, 32 },
		{ "sim:pwdw-host=all", 0, 0, 16, 14 },
		{ "sim:rows=2,cols=2,pes=4,sram=65536,pwdw-host=all", 40, 60, 0, 45 },
		{ "sim:sram=262144,pwdw-host=all", 0, 0, 12, 10 },
	};
	uint64_t s = 0x4057ED01ull;

	if (!test_is_sim())
		cr_skip_test("sim options");
	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct accel_dev *dev = open_dev(cfgs[i].dev);
		struct accel_caps caps;
		unsigned fused = 0;

		cr_assert_eq(accel_query_caps(dev, &caps), 0);
		for (unsigned j = 0; j < cfgs[i].cases + cfgs[i].mbv2; j++) {
			uint64_t seed = xrng(&s), st = seed;
			struct pdcase t;

			if (j < cfgs[i].cases) {
				t = pd_random(&st, caps.rows * caps.cols, cfgs[i].maxhw, true);
			} else {	/* 3 x 3, stride 1 or 2, pad 1: many row groups, several segments */
				uint32_t k = j - cfgs[i].cases;

				t = (struct pdcase){ .n = 1 + (k % 5 == 4), .cin = 8 + (uint32_t)(seed % 40),
						     .c = 16 * (2 + (uint32_t)(seed >> 6) % 10), .h = 14 + (uint32_t)(seed >> 12) % 50,
						     .r = 3, .s = 3, .sh = 1 + (k % 3 != 0), .pt = 1, .pl = 1, .pb = 1, .pr = 1,
						     .dh = 1, .dw = 1, .f32 = k % 4 == 3, .qcol = k % 6 != 5, .act_pw = 1,
						     .act_dw = 2, .zmid = k % 4 == 3 ? 0 : -128 + (int)(k % 3), .zout = 7,
						     .out32 = k % 6 == 5 && k % 4 != 3 };
				t.w = t.h - (uint32_t)(seed >> 20) % 5;
				t.sw = t.sh;
			}
			fused += pd_run_any(dev, &t, seed);
		}
		cr_assert(fused >= cfgs[i].min_fused, "%s: only %u of %u cases had a one-job plan", cfgs[i].dev, fused,
			  cfgs[i].cases + cfgs[i].mbv2);
		accel_close(dev);
	}
}

/* MobileNetV2's stride-2 pairs (int8 as its QDQ model runs them): the default plan hosts depthwise
 * iterations in the expansion's EXEs -- their SFU APPLY makes three output-queue accesses per element
 * where the run's chained SFU makes one -- and is faster than the best plan without (pwdw-host=off). */
Test(pwdw, hosting_speeds_up_stride_2_pairs)
{
	static const uint32_t pairs[][3] = { { 112, 16, 96 }, { 56, 24, 144 }, { 28, 32, 192 }, { 14, 96, 576 } };
	struct accel_dev *dev, *off;
	struct accel_caps caps;

	if (!test_is_sim())
		cr_skip_test("sim options");
	dev = open_dev("sim");
	off = open_dev("sim:pwdw-host=off");
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	if (caps.rows != 4 || caps.cols != 4 || caps.pes != 16)
		cr_skip_test("default geometry only");
	for (unsigned i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct pdcase t = { .n = 1, .cin = pairs[i][1], .c = pairs[i][2], .h = pairs[i][0], .w = pairs[i][0],
				    .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1,
				    .qcol = true, .act_pw = 1, .act_dw = 1, .zmid = -128, .zout = -128 };
		uint64_t cyc, oq;

		cr_assert(pd_run(dev, &t, 500 + i, ACCEL_PWDW_ONE_JOB));
		cyc = pd_cycles;
		oq = pd_oq;
		cr_assert(pd_run(off, &t, 500 + i, ACCEL_PWDW_ONE_JOB));
		cr_assert(cyc < pd_cycles, "pair %u: %llu cycles hosting, %llu without", i, (unsigned long long)cyc,
			  (unsigned long long)pd_cycles);
		cr_assert(oq > pd_oq, "pair %u: no hosted iteration (%llu output-queue accesses, %llu without)", i,
			  (unsigned long long)oq, (unsigned long long)pd_oq);
	}
	accel_close(off);
	accel_close(dev);
}

/* Cluster pairs (CAP_FEATURES bit 21, CPAIR records) for the expansion's remainder rows: two half image
 * rows per cluster pair (blocks of ceil(W / 2) columns, overlapping by one when W is odd) instead of one
 * run over the rows and their padding columns.  MobileNetV2's 14 x 14 pairs are faster with them than
 * without (sim option cpair=off) and both match the reference; MobileNet-like shapes of even and odd
 * widths match the reference with them where they win (default), wherever they fit (cpair=all, which
 * takes them in many cases, odd widths too) and without them. */
Test(pwdw, cluster_pairs_for_remainder_rows)
{
	static const uint32_t pairs[][4] = { { 14, 96, 576, 2 }, { 14, 96, 576, 1 }, { 14, 64, 384, 1 } };
	struct accel_dev *dev, *off, *all;
	struct accel_caps caps;
	uint64_t s = 0xC9A1F05Eull;
	unsigned used = 0, used_odd = 0;

	if (!test_is_sim())
		cr_skip_test("sim options");
	/* without row wraps, which take these remainders where they tie or win (row_wraps_for_remainder_rows) */
	dev = open_dev("sim:wrap=off");
	off = open_dev("sim:wrap=off,cpair=off");
	all = open_dev("sim:wrap=off,cpair=all");
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	cr_assert(caps.features & (1u << 21));	/* CAP_FEATURES bit 21 */
	cr_assert_eq(accel_query_caps(off, &caps), 0);
	cr_assert(!(caps.features & (1u << 21)));
	if (caps.rows != 4 || caps.cols != 4 || caps.pes != 16)
		cr_skip_test("default geometry only");
	for (unsigned i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		for (unsigned f = 0; f < 2; f++) {
			struct pdcase t = { .n = 1, .cin = pairs[i][1], .c = pairs[i][2], .h = pairs[i][0],
					    .w = pairs[i][0], .r = 3, .s = 3, .sh = pairs[i][3], .sw = pairs[i][3],
					    .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .f32 = f, .qcol = true,
					    .act_pw = f ? 2 : 1, .act_dw = f ? 2 : 1, .zmid = f ? 0 : -128,
					    .zout = f ? 0 : -128 };
			uint64_t cyc;

			cr_assert(pd_run(dev, &t, 700 + i, ACCEL_PWDW_ONE_JOB));
			cyc = pd_cycles;
			cr_assert(pd_run(off, &t, 700 + i, ACCEL_PWDW_ONE_JOB));
			cr_assert(cyc < pd_cycles, "pair %u %s: %llu cycles with cluster pairs, %llu without", i,
				  f ? "fp32" : "int8", (unsigned long long)cyc, (unsigned long long)pd_cycles);
		}
	for (unsigned j = 0; j < 40; j++) {
		uint64_t seed = xrng(&s);
		struct pdcase t = { .n = 1 + (j % 7 == 6), .cin = 8 + (uint32_t)(seed % 40),
				    .c = 16 * (2 + (uint32_t)(seed >> 6) % 12), .h = 6 + 4 * (uint32_t)((seed >> 12) % 5),
				    .r = 3, .s = 3, .sh = 1 + (j % 3 != 0), .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1,
				    .dw = 1, .f32 = j % 4 == 3, .qcol = j % 5 != 4, .act_pw = 1, .act_dw = 2,
				    .zmid = j % 4 == 3 ? 0 : -128 + (int)(j % 3), .zout = 3 };
		uint64_t cyc;
		bool one;

		t.w = t.h - (uint32_t)(seed >> 20) % 4;	/* h 2 mod 4: remainders of 2 rows */
		t.sw = t.sh;
		pd_run_any(dev, &t, seed);
		one = pd_run_any(all, &t, seed);
		cyc = pd_cycles;
		pd_run_any(off, &t, seed);
		if (one && cyc != pd_cycles) {	/* another plan: the pairs' */
			used++;
			used_odd += t.w % 2;
		}
	}
	cr_assert(used >= 6 && used_odd >= 2, "cluster pairs taken in %u cases (%u of odd width)", used, used_odd);
	accel_close(all);
	accel_close(off);
	accel_close(dev);
}

/* Overlapping row groups (no remainder, rows no multiple of the groups' gp rows): the groups at one
 * uniform step, the rows two groups share computed twice, instead of the last group moved up into an
 * EXE of its own.  MobileNetV2's 7 x 7 x 960 pair is faster with them than without (sim option
 * pwdw-ovl=off) and both match the reference; MobileNet-like shapes (several segments on small storage
 * units, batches, the 2 x 2 x 4 geometry) match the reference wherever they fit (pwdw-ovl=all). */
Test(pwdw, overlapping_row_groups_match_reference)
{
	static const struct {
		const char *all, *off;
		uint32_t cases, min_used;
	} cfgs[] = {
		{ "sim:wrap=off,pwdw-ovl=all", "sim:wrap=off,pwdw-ovl=off", 30, 12 },
		{ "sim:sram=262144,wrap=off,pwdw-ovl=all", "sim:sram=262144,wrap=off,pwdw-ovl=off", 16, 3 },
		{ "sim:rows=2,cols=2,pes=4,sram=65536,wrap=off,pwdw-ovl=all",
		  "sim:rows=2,cols=2,pes=4,sram=65536,wrap=off,pwdw-ovl=off", 30, 5 },
	};
	struct pdcase p7 = { .n = 1, .cin = 160, .c = 960, .h = 7, .w = 7, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1,
			     .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .qcol = true, .act_pw = 1, .act_dw = 1,
			     .zmid = -128, .zout = -128 };
	/* half the cases of heights whose rows a uniform step covers (groups of 4 rows: 5, 6, 7, 10, 13, 19;
	 * of 2: 3) or not */
	static const uint32_t hs[8] = { 5, 6, 7, 10, 13, 3, 18, 19 };
	struct accel_dev *dev, *off;
	struct accel_caps caps;
	uint64_t s = 0x0F1A7E5Dull, cyc;

	if (!test_is_sim())
		cr_skip_test("sim options");
	/* without row wraps, whose plan for 7 x 7 x 960 has no row groups (row_wraps_for_remainder_rows) */
	dev = open_dev("sim:wrap=off");
	off = open_dev("sim:wrap=off,pwdw-ovl=off");
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	if (caps.rows == 4 && caps.cols == 4 && caps.pes == 16) {
		cr_assert(pd_run(dev, &p7, 900, ACCEL_PWDW_ONE_JOB));
		cyc = pd_cycles;
		cr_assert(pd_run(off, &p7, 900, ACCEL_PWDW_ONE_JOB));
		cr_assert(cyc < pd_cycles, "7 x 7 x 960: %llu cycles with overlapping groups, %llu without",
			  (unsigned long long)cyc, (unsigned long long)pd_cycles);
	}
	accel_close(off);
	accel_close(dev);
	for (unsigned i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		unsigned used = 0;

		dev = open_dev(cfgs[i].all);
		off = open_dev(cfgs[i].off);
		cr_assert_eq(accel_query_caps(dev, &caps), 0);
		for (unsigned j = 0; j < cfgs[i].cases; j++) {
			uint64_t seed = xrng(&s);
			/* 3 x 3, stride 1 or 2, pad 1, heights of every residue mod 4 */
			struct pdcase t = { .n = 1 + (j % 5 == 4), .cin = 8 + (uint32_t)(seed % 40),
					    .c = caps.rows * caps.pes * (1 + (uint32_t)(seed >> 6) % 6),
					    .h = j % 2 ? hs[(seed >> 12) % 8] : 5 + (uint32_t)(seed >> 12) % 40, .r = 3, .s = 3, .sh = 1 + (j % 3 == 2),
					    .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .f32 = j % 4 == 3,
					    .qcol = j % 6 != 5, .act_pw = 1, .act_dw = 2,
					    .zmid = j % 4 == 3 ? 0 : -128 + (int)(j % 3), .zout = 3 };
			bool one;

			t.w = t.h > 4 ? t.h - (uint32_t)(seed >> 20) % 4 : t.h;
			t.sw = t.sh;
			one = pd_run_any(dev, &t, seed);
			cyc = pd_cycles;
			if (one && pd_run_any(off, &t, seed) && cyc != pd_cycles)	/* another plan: overlapping */
				used++;
		}
		cr_assert(used >= cfgs[i].min_used, "%s: overlapping groups taken in %u of %u cases", cfgs[i].all, used,
			  cfgs[i].cases);
		accel_close(off);
		accel_close(dev);
	}
}

/* Row wraps (CAP_FEATURES bit 22, WRAP records) for the expansion's remainder rows: one sub-tile whose
 * clusters' blocks run across the image rows without the padding columns (7 x 7: 13 pixels per cluster
 * for 49, not 8 row slots or flat runs over 9-wide rows), its channel tiles in an EXE each or all in one
 * (own accumulators and SFU records: 7 x 7 x 960's plan).  MobileNetV2's 7 x 7 x 960 pair is faster with
 * them than without (sim option wrap=off), int8 and fp32, and both match the reference; MobileNet-like
 * shapes (odd and even sizes, several segments, batches) match the reference with them where they win
 * (default), wherever they fit (wrap=all) and without them; the 2 x 2 x 4 geometry too. */
Test(pwdw, row_wraps_for_remainder_rows)
{
	struct accel_dev *dev, *off, *all, *small, *small_off;
	struct accel_caps caps;
	uint64_t s = 0x3A7E5EEDull;
	unsigned used = 0, used_small = 0;

	if (!test_is_sim())
		cr_skip_test("sim options");
	dev = open_dev("sim");
	off = open_dev("sim:wrap=off");
	all = open_dev("sim:wrap=all");
	small = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,wrap=all");
	small_off = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,wrap=off");
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	cr_assert(caps.features & (1u << 22));	/* CAP_FEATURES bit 22 */
	cr_assert_eq(accel_query_caps(off, &caps), 0);
	cr_assert(!(caps.features & (1u << 22)));
	if (caps.rows == 4 && caps.cols == 4 && caps.pes == 16)
		for (unsigned f = 0; f < 2; f++) {
			struct pdcase t = { .n = 1, .cin = 160, .c = 960, .h = 7, .w = 7, .r = 3, .s = 3, .sh = 1,
					    .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .f32 = f,
					    .qcol = true, .act_pw = f ? 2 : 1, .act_dw = f ? 2 : 1, .zmid = f ? 0 : -128,
					    .zout = f ? 0 : -128 };
			uint64_t cyc;

			cr_assert(pd_run(dev, &t, 800 + f, ACCEL_PWDW_ONE_JOB));
			cyc = pd_cycles;
			cr_assert(pd_run(off, &t, 800 + f, ACCEL_PWDW_ONE_JOB));
			cr_assert(cyc < pd_cycles, "7x7x960 %s: %llu cycles with row wraps, %llu without",
				  f ? "fp32" : "int8", (unsigned long long)cyc, (unsigned long long)pd_cycles);
		}
	for (unsigned j = 0; j < 64; j++) {
		uint64_t seed = xrng(&s);
		struct pdcase t = { .n = 1 + (j % 7 == 6), .cin = 8 + (uint32_t)(seed % 40),
				    .c = 16 * (2 + (uint32_t)(seed >> 6) % 12), .h = 5 + (uint32_t)((seed >> 12) % 12),
				    .r = 3, .s = 3, .sh = 1 + (j % 3 == 0), .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1,
				    .dw = 1, .f32 = j % 4 == 3, .qcol = j % 5 != 4, .act_pw = 1, .act_dw = 2,
				    .zmid = j % 4 == 3 ? 0 : -128 + (int)(j % 3), .zout = 3 };
		uint64_t cyc;
		bool one;

		t.w = t.h - (uint32_t)(seed >> 20) % 3;
		t.sw = t.sh;
		pd_run_any(dev, &t, seed);
		one = pd_run_any(all, &t, seed);
		cyc = pd_cycles;
		pd_run_any(off, &t, seed);
		used += one && cyc != pd_cycles;	/* another plan: the row wraps' */
		if (j % 4 == 0) {	/* 2 x 2 x 4 */
			t.c = 4 * (1 + (uint32_t)(seed >> 30) % 6);
			one = pd_run_any(small, &t, seed);
			cyc = pd_cycles;
			pd_run_any(small_off, &t, seed);
			used_small += one && cyc != pd_cycles;
		}
	}
	cr_assert(used >= 6 && used_small >= 2, "row wraps taken in %u cases (2 x 2 x 4: %u)", used, used_small);
	accel_close(small_off);
	accel_close(small);
	accel_close(all);
	accel_close(off);
	accel_close(dev);
}

/* The two-job form (ACCEL_PWDW_SPLIT, and sim:pwdw=off) gives the results the reference gives. */
Test(pwdw, two_job_form_matches_reference)
{
	struct accel_dev *dev = open_dev(NULL), *off;
	uint64_t s = 0x2B0B5ull;

	for (unsigned i = 0; i < 12; i++) {
		uint64_t seed = xrng(&s), st = seed;
		struct pdcase t = pd_random(&st, 16, 20, true);

		pd_run(dev, &t, seed, ACCEL_PWDW_SPLIT);
		cr_assert(pd_hw >= 2);
	}
	accel_close(dev);
	if (!test_is_sim())
		return;
	off = open_dev("sim:pwdw=off");
	{
		struct pdcase t = { .n = 1, .cin = 16, .c = 64, .h = 12, .w = 12, .r = 3, .s = 3, .sh = 1, .sw = 1,
				    .pt = 1, .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .qcol = true, .act_pw = 1,
				    .zmid = -128 };

		pd_run(off, &t, 7, 0);
		cr_assert_eq(pd_hw, 2);
	}
	accel_close(off);
}

/* Bad descriptors: -EINVAL and a message; ONE_JOB where one job cannot take the pair: -E2BIG. */
Test(pwdw, validation_and_one_job_flag)
{
	struct accel_dev *dev = open_dev(NULL);
	struct pdcase t = { .n = 1, .cin = 8, .c = 64, .h = 9, .w = 9, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1,
			    .pb = 1, .pr = 1, .dh = 1, .dw = 1, .qcol = true, .act_pw = 1, .zmid = -128 };
	struct pdbufs B;
	struct accel_conv2d_pwdw_desc d, bad;
	struct accel_tensor other, t2;
	struct accel_job *job = (struct accel_job *)&t;

	pd_alloc(dev, &t, &B, 1);
	pd_desc(&t, &B, &d);
	cr_assert_eq(accel_conv2d_pwdw(dev, NULL, NULL, &job), -EINVAL);
	cr_assert_null(job);
	cr_assert_eq(accel_conv2d_pwdw(NULL, &d, NULL, NULL), -EINVAL);
	/* dw.input is not pw.output */
	bad = d;
	other = B.Mid;
	other.offset = 64;
	other.strides[0] = B.Mid.strides[0];
	accel_buffer_free(B.mid);
	B.mid = alloc_buf(dev, B.mid_bytes + 64);
	B.Mid.buf = other.buf = B.mid;
	bad.dw.input = &other;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "dw.input must be pw.output"), "%s", accel_last_error(dev));
	/* pw is not 1x1 / stride 1 / unpadded */
	bad = d;
	bad.pw.pad_top = 1;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	bad = d;
	bad.pw.stride_h = 2;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	/* dw is not depthwise (a valid grouped convolution) */
	{
		struct accel_buffer *bw2 = alloc_buf(dev, 64 * 2 * 9);

		bad = d;
		cr_assert_eq(accel_tensor_4d(bw2, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 64, 2, 3, 3, &t2), 0);
		bad.dw.weights = &t2;
		bad.dw.groups = 32;
		cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
		cr_assert(strstr(accel_last_error(dev), "depthwise"), "%s", accel_last_error(dev));
		accel_buffer_free(bw2);
	}
	/* a half's own validation names the half */
	bad = d;
	bad.dw.stride_h = 0;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	cr_assert(!strncmp(accel_last_error(dev), "accel_conv2d_pwdw: dw: ", 23), "%s", accel_last_error(dev));
	/* the output overlapping the expansion's input */
	bad = d;
	other = B.X;
	other.buf = B.out;
	bad.pw.input = &other;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "pw.input"), "%s", accel_last_error(dev));
	/* flags */
	bad = d;
	bad.flags = 0x80;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	bad.flags = ACCEL_PWDW_SPLIT | ACCEL_PWDW_ONE_JOB;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -EINVAL);
	/* ONE_JOB: fine where one job takes it, -E2BIG where not (an int32 intermediate is no input of an
	 * int8 depthwise convolution: NCHW here) */
	bad = d;
	bad.flags = ACCEL_PWDW_ONE_JOB;
	cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), 0, "%s", accel_last_error(dev));
	{
		struct accel_tensor x = B.X, o = B.Out, m = B.Mid, wp = B.Wp, wd = B.Wd;

		cr_assert_eq(accel_tensor_4d(B.x, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, 1, t.cin, t.h, t.w, &x), 0);
		cr_assert_eq(accel_tensor_4d(B.mid, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, 1, t.c, t.h, t.w, &m), 0);
		cr_assert_eq(accel_tensor_4d(B.wp, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, t.c, t.cin, 1, 1, &wp), 0);
		cr_assert_eq(accel_tensor_4d(B.wd, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, t.c, 1, 3, 3, &wd), 0);
		cr_assert_eq(accel_tensor_4d(B.out, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, 1, t.c, B.oh, B.ow, &o), 0);
		bad.pw.input = &x;
		bad.pw.weights = &wp;
		bad.pw.output = &m;
		bad.dw.input = &m;
		bad.dw.weights = &wd;
		bad.dw.output = &o;
		cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), -E2BIG);
		cr_assert(strstr(accel_last_error(dev), "cannot run as one job"), "%s", accel_last_error(dev));
		bad.flags = 0;	/* the same pair as two jobs */
		cr_assert_eq(accel_conv2d_pwdw(dev, &bad, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	pd_free(&B);
	accel_close(dev);
}

/* The asynchronous model: a job, its dependency on an earlier job, counters of one hardware job. */
Test(pwdw, asynchronous_job_after_a_dependency)
{
	struct accel_dev *dev = open_dev(NULL);
	struct pdcase t = { .n = 2, .cin = 24, .c = 64, .h = 10, .w = 11, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1,
			    .pl = 1, .pb = 1, .pr = 1, .dh = 1, .dw = 1, .qcol = true, .act_pw = 1, .act_dw = 1,
			    .zmid = -128, .zout = 3 };
	struct pdbufs B;
	struct accel_conv2d_pwdw_desc d;
	struct accel_job *first = NULL, *job = NULL;
	struct accel_submit sub = { 0 };
	struct accel_counters k;

	pd_alloc(dev, &t, &B, 42);
	pd_desc(&t, &B, &d);
	/* the first job computes the output; the second, after it, the same into the same buffer */
	cr_assert_eq(accel_conv2d_pwdw(dev, &d, NULL, &first), 0, "%s", accel_last_error(dev));
	sub.deps = &first;
	sub.n_deps = 1;
	cr_assert_eq(accel_conv2d_pwdw(dev, &d, &sub, &job), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0);
	cr_assert_eq(accel_job_counters(job, &k), 0);
	cr_assert_eq(k.hw_jobs, 1);
	pd_check(&t, &B, &d, 42, "async");
	accel_job_free(first);
	accel_job_free(job);
	pd_free(&B);
	accel_close(dev);
}

/* A repeated pair takes the device's cached plan: the same cycles, and right results in other buffers
 * with other data (the plan's addresses are the call's). */
Test(pwdw, repeated_pair_in_other_buffers)
{
	struct accel_dev *dev = open_dev(NULL);
	struct pdcase t[2] = {
		{ .n = 1, .cin = 24, .c = 64, .h = 14, .w = 14, .r = 3, .s = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1,
		  .pr = 1, .dh = 1, .dw = 1, .qcol = true, .act_pw = 1, .act_dw = 1, .zmid = -128, .zout = -128 },
		{ .n = 2, .cin = 8, .c = 32, .h = 9, .w = 11, .r = 3, .s = 3, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1,
		  .pr = 1, .dh = 1, .dw = 1, .f32 = true, .act_pw = 2, .act_dw = 1 },
	};

	for (unsigned k = 0; k < 2; k++) {
		uint64_t first;

		cr_assert(pd_run(dev, &t[k], 11 + k, ACCEL_PWDW_ONE_JOB));
		first = pd_cycles;
		for (unsigned r = 0; r < 3; r++) {	/* new buffers, new data each time */
			cr_assert(pd_run(dev, &t[k], 100 * r + k, ACCEL_PWDW_ONE_JOB));
			cr_assert_eq(pd_cycles, first, "case %u run %u: %llu cycles, first %llu", k, r,
				     (unsigned long long)pd_cycles, (unsigned long long)first);
		}
	}
	accel_close(dev);
}
