/* SPDX-License-Identifier: MIT */
/*
 * accel_qadd (ISA 2, CAP_FEATURES bit 20): the int8 add/sub of two differently quantised tensors in one
 * vector-unit pass.  Against a plain-C reference of the documented formula (exact r, one rounding half up)
 * and, for scales turned into multipliers as libaccel.md says, within 1 LSB of the real-valued result;
 * broadcast, layout changes, in-place, many chunks and hardware jobs; validation; -EOPNOTSUPP on a device
 * without the bit (sim option qadd=off).  Runs on the sim and, with ACCEL_DEVICE, in the VM.
 */
#include "common.h"

#define SMALL "sim:rows=2,cols=2,pes=4,sram=65536,cmdbuf=8192"

struct qp {
	int32_t ma, mb;
	int za, zb, zy;
	unsigned shift;
	bool sub, relu;
};

static int8_t ref_qadd(const struct qp *q, int8_t a, int8_t b)
{
	int64_t ra = (int64_t)(a - q->za) * q->ma, rb = (int64_t)(b - q->zb) * q->mb, r = q->sub ? ra - rb : ra + rb;
	int64_t d = (int64_t)1 << q->shift, y;

	if (q->relu && r < 0)
		r = 0;
	r += q->shift ? d / 2 : 0;
	y = r / d - (r % d != 0 && r < 0);	/* floor division */
	y += q->zy;
	return (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
}

/* Multipliers for real scales sa, sb, sy as libaccel.md describes: the largest shift <= 62 that keeps
 * both round(s/sy * 2^shift) below 2^31. */
static void qp_of_scales(double sa, double sb, double sy, struct qp *q)
{
	double big = fmax(sa, sb) / sy;

	q->shift = 62;
	while (q->shift > 0 && nearbyint(big * ldexp(1.0, (int)q->shift)) > 2147483647.0)
		q->shift--;
	q->ma = (int32_t)nearbyint(sa / sy * ldexp(1.0, (int)q->shift));
	q->mb = (int32_t)nearbyint(sb / sy * ldexp(1.0, (int)q->shift));
}

static struct accel_qadd_desc desc_of(const struct qp *q, const struct accel_tensor *a, const struct accel_tensor *b,
				      const struct accel_tensor *o)
{
	struct accel_qadd_desc d = {
		.a = a, .b = b, .out = o, .op = q->sub ? ACCEL_ELT_SUB : ACCEL_ELT_ADD,
		.act = q->relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE, .a_multiplier = q->ma, .b_multiplier = q->mb,
		.a_zero_point = (int16_t)q->za, .b_zero_point = (int16_t)q->zb, .zero_point = (int16_t)q->zy,
		.shift = (uint8_t)q->shift,
	};

	return d;
}

/* A residual add of a quantised network: NHWC 4 x 40 x 51 x 57 on the small geometry (many chunks,
 * rows and hardware jobs), random scales and zero points, ADD/SUB, with and without RELU. */
Test(qadd, nhwc_residual_add_over_many_chunks_matches_the_reference)
{
	struct accel_dev *dev = open_dev(SMALL);
	enum { N = 4, C = 40, H = 51, W = 57, E = N * C * H * W };
	struct accel_buffer *ba = alloc_buf(dev, E), *bb = alloc_buf(dev, E), *bo = alloc_buf(dev, E);
	int8_t *pa = accel_buffer_ptr(ba), *pb = accel_buffer_ptr(bb), *po = accel_buffer_ptr(bo);
	struct accel_tensor a, b, o;
	uint64_t s = 0xadd;
	unsigned near = 0;

	accel_tensor_4d(ba, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, N, C, H, W, &a);
	accel_tensor_4d(bb, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, N, C, H, W, &b);
	accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, N, C, H, W, &o);
	for (int it = 0; it < 6; it++) {
		struct qp q = { 0 };
		double sa = 0.005 + (double)(xrng(&s) % 1000) / 20000.0, sb = 0.005 + (double)(xrng(&s) % 1000) / 20000.0;
		double sy = (sa + sb) * (0.4 + (double)(xrng(&s) % 100) / 100.0);
		struct accel_qadd_desc d;
		struct accel_counters cnt;
		struct accel_job *j = NULL;

		fill_i8(pa, E, &s);
		fill_i8(pb, E, &s);
		q.za = (int)(xrng(&s) % 256) - 128;
		q.zb = (int)(xrng(&s) % 256) - 128;
		q.zy = (int)(xrng(&s) % 256) - 128;
		q.sub = it % 2;
		q.relu = it % 3 == 0;
		qp_of_scales(sa, sb, sy, &q);
		d = desc_of(&q, &a, &b, &o);
		cr_assert_eq(accel_qadd(dev, &d, NULL, &j), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_wait(j, -1), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_counters(j, &cnt), 0);
		cr_assert_eq(cnt.vec_ops, (uint64_t)E, "one element-operation per output");
		if (test_is_sim())
			cr_assert_gt(cnt.hw_jobs, 1, "8 KiB command buffers: several hardware jobs");
		accel_job_free(j);
		for (int i = 0; i < E; i++) {
			double x = sa * (pa[i] - q.za) + (q.sub ? -1 : 1) * sb * (pb[i] - q.zb), y;

			cr_assert_eq(po[i], ref_qadd(&q, pa[i], pb[i]), "iteration %d element %d", it, i);
			/* and within 1 LSB of the real-valued quantised result */
			x = q.relu && x < 0 ? 0 : x;
			y = fmin(fmax(x / sy + q.zy, -128.0), 127.0);
			cr_assert_leq(fabs(po[i] - y), 1.0, "iteration %d element %d: %d vs %f", it, i, po[i], y);
			near += fabs(po[i] - y) <= 0.5 + 1e-6;
		}
	}
	cr_assert_gt(near, 6 * E * 99 / 100, "rounded to nearest almost everywhere (%u)", near);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* b broadcast per channel (1 x C x 1 x 1), a NHWC, out NCHW (a layout change on the way); then 2-D with
 * a broadcast a row, and in place (out = a). */
Test(qadd, broadcast_layouts_and_in_place)
{
	struct accel_dev *dev = open_dev(NULL);
	enum { N = 2, C = 5, H = 7, W = 9, E = N * C * H * W };
	struct accel_buffer *ba = alloc_buf(dev, E), *bb = alloc_buf(dev, C), *bo = alloc_buf(dev, E);
	int8_t *pa = accel_buffer_ptr(ba), *pb = accel_buffer_ptr(bb), *po = accel_buffer_ptr(bo);
	struct accel_tensor a, b, o;
	struct qp q = { .ma = 1 << 29, .mb = -(3 << 27), .za = 5, .zb = -17, .zy = 9, .shift = 30, .relu = true };
	struct accel_qadd_desc d;
	int8_t keep[E];
	uint64_t s = 99;

	fill_i8(pa, E, &s);
	fill_i8(pb, C, &s);
	accel_tensor_4d(ba, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, N, C, H, W, &a);
	accel_tensor_4d(bb, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, 1, C, 1, 1, &b);
	accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, N, C, H, W, &o);
	d = desc_of(&q, &a, &b, &o);
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++)
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++) {
					int8_t va = pa[((n * H + y) * W + x) * C + c];

					cr_assert_eq(po[((n * C + c) * H + y) * W + x], ref_qadd(&q, va, pb[c]), "(%d,%d,%d,%d)", n,
						     c, y, x);
				}
	/* 2-D: a is one row broadcast over 12 rows of b; SUB; in place into b */
	{
		struct accel_tensor r, m;

		q.sub = true;
		q.relu = false;
		accel_tensor_2d(ba, 0, ACCEL_INT8, 1, 30, &r);
		accel_tensor_2d(bo, 0, ACCEL_INT8, 12, 30, &m);
		memcpy(keep, po, 12 * 30);
		d = desc_of(&q, &r, &m, &m);
		cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (int i = 0; i < 12 * 30; i++)
			cr_assert_eq(po[i], ref_qadd(&q, pa[i % 30], keep[i]), "2-D element %d", i);
	}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(qadd, bad_arguments_are_rejected_with_a_message)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *bf = alloc_buf(dev, 65536);
	struct accel_tensor a, c, f, i32;
	struct qp q = { .ma = 1, .mb = 1 };
	struct accel_qadd_desc d;

	accel_tensor_2d(bf, 0, ACCEL_INT8, 8, 8, &a);
	accel_tensor_2d(bf, 0, ACCEL_INT8, 8, 3, &c);
	accel_tensor_2d(bf, 0, ACCEL_FP32, 8, 8, &f);
	accel_tensor_2d(bf, 0, ACCEL_INT32, 8, 8, &i32);
	cr_assert_eq(accel_qadd(dev, NULL, NULL, NULL), -EINVAL);
	d = desc_of(&q, &a, &c, &a);
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "neither equals"), "%s", accel_last_error(dev));
	d = desc_of(&q, &a, &a, &i32);
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "INT8"), "%s", accel_last_error(dev));
	d = desc_of(&q, &f, &f, &f);
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	d = desc_of(&q, &a, &a, &a);
	d.op = ACCEL_ELT_MUL;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "ADD or SUB"), "%s", accel_last_error(dev));
	d.op = ACCEL_ELT_SUB;
	d.act = ACCEL_ACT_SIGMOID;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	d.act = ACCEL_ACT_RELU;
	d.b_zero_point = 128;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "zero points"), "%s", accel_last_error(dev));
	d.b_zero_point = -128;
	d.zero_point = -129;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	d.zero_point = 127;
	d.shift = 63;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "shift"), "%s", accel_last_error(dev));
	d.shift = 62;
	d.a_multiplier = INT32_MIN;	/* any multiplier is valid */
	d.b_multiplier = INT32_MAX;
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	accel_buffer_free(bf);
	accel_close(dev);
}

/* A device without CAP_FEATURES bit 20: -EOPNOTSUPP and a message naming the bit (accel_eltwise still
 * works there). */
Test(qadd, device_without_the_feature_refuses)
{
	struct accel_dev *dev;
	struct accel_buffer *bf;
	struct accel_tensor a;
	struct accel_caps caps;
	struct qp q = { .ma = 1, .mb = 1 };
	struct accel_qadd_desc d;
	struct accel_eltwise_desc e;

	if (!test_is_sim())
		cr_skip_test("needs the sim option qadd=off");
	dev = open_dev("sim:qadd=off");
	accel_query_caps(dev, &caps);
	cr_assert_eq(caps.features & (1u << 20), 0u);
	bf = alloc_buf(dev, 4096);
	accel_tensor_2d(bf, 0, ACCEL_INT8, 8, 8, &a);
	d = desc_of(&q, &a, &a, &a);
	cr_assert_eq(accel_qadd(dev, &d, NULL, NULL), -EOPNOTSUPP);
	cr_assert(strstr(accel_last_error(dev), "bit 20"), "%s", accel_last_error(dev));
	e = (struct accel_eltwise_desc){ .a = &a, .b = &a, .out = &a, .op = ACCEL_ELT_ADD, .multiplier = 1, .shift = 0 };
	cr_assert_eq(accel_eltwise(dev, &e, NULL, NULL), 0, "%s", accel_last_error(dev));
	accel_buffer_free(bf);
	accel_close(dev);
	dev = open_dev("sim:qadd=on");
	accel_query_caps(dev, &caps);
	cr_assert_eq(caps.features & (1u << 20), 1u << 20);
	accel_close(dev);
	cr_assert_neq(accel_open("sim:qadd=maybe", &dev), 0);
}

/* Two dependent async jobs (a + b, then that - b) give what two synchronous calls give. */
Test(qadd, async_dependency)
{
	struct accel_dev *dev = open_dev(NULL);
	enum { E = 40000 };
	struct accel_buffer *ba = alloc_buf(dev, E), *bb = alloc_buf(dev, E), *bt = alloc_buf(dev, E), *bo = alloc_buf(dev, E);
	int8_t *pa = accel_buffer_ptr(ba), *pb = accel_buffer_ptr(bb), *pt = accel_buffer_ptr(bt), *po = accel_buffer_ptr(bo);
	struct accel_tensor a, b, t, o;
	struct qp q1 = { .ma = 3 << 28, .mb = 1 << 29, .za = -3, .zb = 7, .zy = 1, .shift = 30 };
	struct qp q2 = { .ma = 1 << 30, .mb = 1 << 28, .za = 1, .zb = 7, .zy = -2, .shift = 30, .sub = true };
	struct accel_qadd_desc d1, d2;
	struct accel_job *j1 = NULL, *j2 = NULL;
	struct accel_submit sub;
	uint64_t s = 5;

	fill_i8(pa, E, &s);
	fill_i8(pb, E, &s);
	accel_tensor_2d(ba, 0, ACCEL_INT8, 200, 200, &a);
	accel_tensor_2d(bb, 0, ACCEL_INT8, 200, 200, &b);
	accel_tensor_2d(bt, 0, ACCEL_INT8, 200, 200, &t);
	accel_tensor_2d(bo, 0, ACCEL_INT8, 200, 200, &o);
	d1 = desc_of(&q1, &a, &b, &t);
	d2 = desc_of(&q2, &t, &b, &o);
	cr_assert_eq(accel_qadd(dev, &d1, NULL, &j1), 0, "%s", accel_last_error(dev));
	memset(&sub, 0, sizeof(sub));
	sub.deps = &j1;
	sub.n_deps = 1;
	cr_assert_eq(accel_qadd(dev, &d2, &sub, &j2), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(j2, -1), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(j1, -1), 0, "%s", accel_last_error(dev));
	for (int i = 0; i < E; i++) {
		int8_t t1 = ref_qadd(&q1, pa[i], pb[i]);

		cr_assert_eq(pt[i], t1, "element %d", i);
		cr_assert_eq(po[i], ref_qadd(&q2, t1, pb[i]), "element %d", i);
	}
	accel_job_free(j1);
	accel_job_free(j2);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bt);
	accel_buffer_free(bo);
	accel_close(dev);
}
