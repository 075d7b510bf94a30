/* SPDX-License-Identifier: MIT */
/*
 * libaccel on VEC math (CAP_FEATURES bit 25, issue #30): accel_activation's LOG .. SOFTSIGN (fp32 on the
 * vector units, int8 through tables), accel_eltwise DIV, PRELU and POW with broadcast, accel_reduce MIN, PROD,
 * L1, L2, LOGSUM, LOGSUMEXP and ARGMAX/ARGMIN (first and last index), accel_log_softmax, and
 * -EOPNOTSUPP on a device without the bit.  References are double-precision libm, computed here.  Runs
 * on the sim and, with ACCEL_DEVICE, in the VM.
 */
#include "common.h"

#define SMALL "sim:rows=2,cols=2,pes=4,sram=65536,cmdbuf=8192"

static float *F(struct accel_buffer *b)
{
	return accel_buffer_ptr(b);
}

/* Values spread over [-6, 6) with many exact ties (multiples of 1/8). */
static void fill_wide(float *p, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((int)(xrng(s) % 96) - 48) / 8.0f;
}

static double act_ref(enum accel_act a, double x, double alpha, double beta)
{
	switch (a) {
	case ACCEL_ACT_LOG: return log(x);
	case ACCEL_ACT_SQRT: return sqrt(x);
	case ACCEL_ACT_ABS: return fabs(x);
	case ACCEL_ACT_NEG: return -x;
	case ACCEL_ACT_FLOOR: return floor(x);
	case ACCEL_ACT_CEIL: return ceil(x);
	case ACCEL_ACT_ROUND: return nearbyint(x);
	case ACCEL_ACT_SIGN: return x > 0 ? 1 : (x < 0 ? -1 : 0);
	case ACCEL_ACT_LEAKYRELU: return x < 0 ? alpha * x : x;
	case ACCEL_ACT_ELU: return beta * (x > 0 ? x : alpha * expm1(x));
	case ACCEL_ACT_THRESHOLDEDRELU: return x > alpha ? x : 0;
	case ACCEL_ACT_SOFTPLUS: return log1p(exp(x));
	default: return x / (1 + fabs(x));
	}
}

Test(vmath, activations_fp32_and_int8_tables)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t R = 37, C = 29;
	struct accel_buffer *bi = alloc_buf(dev, R * C * 4), *bo = alloc_buf(dev, R * C * 4);
	struct accel_buffer *qi = alloc_buf(dev, R * C), *qo = alloc_buf(dev, R * C);
	struct accel_tensor in, out, qin, qout;
	uint64_t s = 5;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, C, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, C, &out);
	accel_tensor_2d(qi, 0, ACCEL_INT8, R, C, &qin);
	accel_tensor_2d(qo, 0, ACCEL_INT8, R, C, &qout);
	fill_wide(F(bi), R * C, &s);
	for (uint32_t i = 0; i < R * C; i++)
		((int8_t *)accel_buffer_ptr(qi))[i] = (int8_t)(xrng(&s) & 0xFF);
	for (int a = ACCEL_ACT_LOG; a <= ACCEL_ACT_SOFTSIGN; a++) {
		bool pos = a == ACCEL_ACT_LOG || a == ACCEL_ACT_SQRT;
		float alpha = a == ACCEL_ACT_THRESHOLDEDRELU ? 1.0f : (a == ACCEL_ACT_LEAKYRELU ? 0.01f : 1.6732632f);
		float beta = a == ACCEL_ACT_ELU ? 1.050701f : 0.0f;
		struct accel_activation_desc d = { .input = &in, .output = &out, .act = (enum accel_act)a,
						   .alpha = alpha, .beta = beta };
		struct accel_activation_desc q = { .input = &qin, .output = &qout, .act = (enum accel_act)a,
						   .alpha = alpha, .beta = beta, .in_scale = 0.05f, .out_scale = 0.04f,
						   .in_zero_point = pos ? -128 : 3, .out_zero_point = -5 };

		if (pos)	/* log and sqrt of positive inputs: |x| + 1/64 */
			for (uint32_t i = 0; i < R * C; i++)
				F(bi)[i] = fabsf(F(bi)[i]) + 1.0f / 64;
		cr_assert_eq(accel_activation(dev, &d, NULL, NULL), 0, "act %d: %s", a, accel_last_error(dev));
		for (uint32_t i = 0; i < R * C; i++) {
			double r = act_ref((enum accel_act)a, F(bi)[i], alpha, beta == 0 ? 1 : beta);

			cr_assert(fabs(F(bo)[i] - r) <= 1e-6 * (1 + fabs(r)), "act %d x %g: %g vs %g", a, F(bi)[i], F(bo)[i],
				  r);
		}
		/* int8: a table of the exact function, requantised (round half to even, saturated) */
		cr_assert_eq(accel_activation(dev, &q, NULL, NULL), 0, "int8 act %d: %s", a, accel_last_error(dev));
		for (uint32_t i = 0; i < R * C; i++) {
			int8_t x = ((int8_t *)accel_buffer_ptr(qi))[i];
			double y = act_ref((enum accel_act)a, (double)0.05f * (x - q.in_zero_point), alpha, beta == 0 ? 1 : beta) /
				       (double)0.04f - 5;

			y = isnan(y) ? -5 : nearbyint(fmin(fmax(y, -128), 127));
			cr_assert_eq(((int8_t *)accel_buffer_ptr(qo))[i], (int8_t)y, "int8 act %d x %d", a, x);
		}
		if (pos)
			fill_wide(F(bi), R * C, &s);
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_buffer_free(qi);
	accel_buffer_free(qo);
	accel_close(dev);
}

Test(vmath, eltwise_div_and_prelu_broadcast_per_channel)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t N = 2, C = 7, H = 5, W = 9;
	struct accel_buffer *ba = alloc_buf(dev, N * C * H * W * 4), *bb = alloc_buf(dev, C * 4);
	struct accel_buffer *bo = alloc_buf(dev, N * C * H * W * 4);
	struct accel_tensor a, b, o;
	uint64_t s = 9;

	accel_tensor_4d(ba, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, C, H, W, &a);
	accel_tensor_4d(bb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, C, 1, 1, &b);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, C, H, W, &o);
	fill_wide(F(ba), N * C * H * W, &s);
	for (uint32_t c = 0; c < C; c++)
		F(bb)[c] = (float)(c + 1) * (c & 1 ? -0.3f : 0.7f);
	for (int op = ACCEL_ELT_DIV; op <= ACCEL_ELT_POW; op++) {
		struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = (enum accel_eltwise_op)op };

		cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), 0, "op %d: %s", op, accel_last_error(dev));
		for (uint32_t i = 0; i < N * C * H * W; i++) {
			float x = F(ba)[i], w = F(bb)[(i / (H * W)) % C];
			float r = op == ACCEL_ELT_DIV ? x / w : (x < 0 ? x * w : x);

			if (op == ACCEL_ELT_POW) {	/* exp(w log x): NaN for x < 0 at a non-integer w */
				double p = pow(x, w);

				cr_assert(isnan(p) ? isnan(F(bo)[i]) : (F(bo)[i] == p || fabs(F(bo)[i] - p) <= 1e-5 * (1 + fabs(p))),
					  "pow(%g, %g) = %g, libm %g", x, w, F(bo)[i], p);
				continue;
			}
			cr_assert_eq(F(bo)[i], r, "op %d i %u: %g vs %g", op, i, F(bo)[i], r);	/* IEEE: exact */
		}
	}
	{	/* comparisons: INT8 truth values (NaN compares false) */
		struct accel_buffer *bq = alloc_buf(dev, N * C * H * W);
		struct accel_tensor q;

		F(ba)[3] = NAN;
		accel_tensor_4d(bq, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, N, C, H, W, &q);
		for (int op = ACCEL_ELT_EQ; op <= ACCEL_ELT_GE; op++) {
			struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &q, .op = (enum accel_eltwise_op)op };

			cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), 0, "op %d: %s", op, accel_last_error(dev));
			for (uint32_t i = 0; i < N * C * H * W; i++) {
				float x = F(ba)[i], w = F(bb)[(i / (H * W)) % C];
				int r = op == ACCEL_ELT_EQ ? x == w : op == ACCEL_ELT_LT ? x < w : op == ACCEL_ELT_LE ? x <= w :
					op == ACCEL_ELT_GT ? x > w : x >= w;

				cr_assert_eq(((int8_t *)accel_buffer_ptr(bq))[i], r, "op %d i %u", op, i);
			}
			d.out = &o;	/* an FP32 output: -EINVAL */
			cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), -EINVAL);
		}
		accel_buffer_free(bq);
	}
	{	/* fp32 only */
		struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = ACCEL_ELT_DIV };
		struct accel_tensor ai = a, bi = b, oi = o;

		ai.dtype = bi.dtype = oi.dtype = ACCEL_INT32;
		d.a = &ai, d.b = &bi, d.out = &oi;
		cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), -EINVAL);
	}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* One row's reference: the value (or the index, for the ARG ops) in double precision. */
static double reduce_ref(enum accel_reduce_op op, const float *x, uint32_t L)
{
	double acc = op == ACCEL_REDUCE_PROD ? 1 : 0, m = x[0];
	uint32_t at = 0;

	for (uint32_t k = 0; k < L; k++) {
		double v = x[k];

		m = op == ACCEL_REDUCE_MIN || op == ACCEL_REDUCE_ARGMIN || op == ACCEL_REDUCE_ARGMIN_LAST ? fmin(m, v)
													    : fmax(m, v);
		acc = op == ACCEL_REDUCE_PROD ? acc * v
					      : acc + (op == ACCEL_REDUCE_L1 ? fabs(v) : (op == ACCEL_REDUCE_L2 ? v * v : v));
	}
	switch (op) {
	case ACCEL_REDUCE_MIN: return m;
	case ACCEL_REDUCE_PROD: return acc;
	case ACCEL_REDUCE_L1: return acc;
	case ACCEL_REDUCE_L2: return sqrt(acc);
	case ACCEL_REDUCE_LOGSUM: return log(acc);
	case ACCEL_REDUCE_LOGSUMEXP: {
		double e = 0;

		for (uint32_t k = 0; k < L; k++)
			e += exp(x[k] - m);
		return m + log(e);
	}
	default:	/* ARG*: the first (or last) index of the extreme */
		for (uint32_t k = 0; k < L; k++)
			if (x[k] == m) {
				at = k;
				if (op == ACCEL_REDUCE_ARGMAX || op == ACCEL_REDUCE_ARGMIN)
					break;
			}
		return at;
	}
}

Test(vmath, reduce_min_prod_norms_logsums_and_arg)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t R = 130, L = 21;
	struct accel_buffer *bi = alloc_buf(dev, R * L * 4), *bo = alloc_buf(dev, R * 4);
	struct accel_tensor in, out;
	uint64_t s = 23;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	for (int op = ACCEL_REDUCE_MIN; op <= ACCEL_REDUCE_ARGMIN_LAST; op++) {
		bool arg = op >= ACCEL_REDUCE_ARGMAX;
		struct accel_reduce_desc d = { .input = &in, .output = &out, .op = (enum accel_reduce_op)op };

		accel_tensor_2d(bo, 0, arg ? ACCEL_INT32 : ACCEL_FP32, R, 1, &out);
		fill_wide(F(bi), R * L, &s);
		if (op == ACCEL_REDUCE_PROD)	/* products of values near 1 */
			for (uint32_t i = 0; i < R * L; i++)
				F(bi)[i] = 1.0f + F(bi)[i] / 64.0f;
		if (op == ACCEL_REDUCE_LOGSUM)
			for (uint32_t i = 0; i < R * L; i++)
				F(bi)[i] = fabsf(F(bi)[i]) + 0.125f;
		cr_assert_eq(accel_reduce(dev, &d, NULL, NULL), 0, "op %d: %s", op, accel_last_error(dev));
		for (uint32_t r = 0; r < R; r++) {
			double ref = reduce_ref((enum accel_reduce_op)op, F(bi) + r * L, L);

			if (arg)
				cr_assert_eq(((int32_t *)accel_buffer_ptr(bo))[r], (int32_t)ref, "op %d row %u", op, r);
			else
				cr_assert(fabs(F(bo)[r] - ref) <= 2e-6 * (1 + fabs(ref)), "op %d row %u: %g vs %g", op, r,
					  F(bo)[r], ref);
		}
	}
	{	/* ARG writes INT32 */
		struct accel_reduce_desc d = { .input = &in, .output = &out, .op = ACCEL_REDUCE_ARGMAX };

		accel_tensor_2d(bo, 0, ACCEL_FP32, R, 1, &out);
		cr_assert_eq(accel_reduce(dev, &d, NULL, NULL), -EINVAL);
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* LogSoftmax stays exact where softmax underflows: rows spanning 200 (log-probabilities down to -200). */
Test(vmath, log_softmax_rows_with_a_wide_range)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t R = 70, L = 33;
	struct accel_buffer *bi = alloc_buf(dev, R * L * 4), *bo = alloc_buf(dev, R * L * 4);
	struct accel_tensor in, out;
	struct accel_softmax_desc d = { .input = &in, .output = &out };
	uint64_t s = 31;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, L, &out);
	fill_wide(F(bi), R * L, &s);
	for (uint32_t r = 0; r < R; r++)
		F(bi)[r * L + r % L] = -200.0f + (float)r;
	cr_assert_eq(accel_log_softmax(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t r = 0; r < R; r++) {
		const float *x = F(bi) + r * L;
		double m = -INFINITY, e = 0;

		for (uint32_t k = 0; k < L; k++)
			m = fmax(m, x[k]);
		for (uint32_t k = 0; k < L; k++)
			e += exp(x[k] - m);
		for (uint32_t k = 0; k < L; k++) {
			double ref = x[k] - m - log(e);

			cr_assert(fabs(F(bo)[r * L + k] - ref) <= 2e-6 * (1 + fabs(ref)), "row %u col %u: %g vs %g", r, k,
				  F(bo)[r * L + k], ref);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* A device without CAP_FEATURES bit 25 refuses the fp32 functions (its int8 tables still run). */
Test(vmath, a_device_without_vec_math_refuses_with_eopnotsupp)
{
	struct accel_dev *dev;
	struct accel_buffer *b, *bo, *q;
	struct accel_tensor t, o, qt;

	if (!test_is_sim())
		cr_skip_test("a sim option");
	dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536,vecmath=off");
	b = alloc_buf(dev, 64 * 4);
	bo = alloc_buf(dev, 64 * 4);
	q = alloc_buf(dev, 64);
	accel_tensor_2d(b, 0, ACCEL_FP32, 8, 8, &t);
	accel_tensor_2d(bo, 0, ACCEL_FP32, 8, 8, &o);
	accel_tensor_2d(q, 0, ACCEL_INT8, 8, 8, &qt);
	{
		struct accel_activation_desc d = { .input = &t, .output = &o, .act = ACCEL_ACT_LOG };
		struct accel_activation_desc dq = { .input = &qt, .output = &qt, .act = ACCEL_ACT_SOFTPLUS,
						    .in_scale = 0.1f, .out_scale = 0.1f };

		cr_assert_eq(accel_activation(dev, &d, NULL, NULL), -EOPNOTSUPP);
		cr_assert(strstr(accel_last_error(dev), "bit 25"), "%s", accel_last_error(dev));
		cr_assert_eq(accel_activation(dev, &dq, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	{
		struct accel_eltwise_desc d = { .a = &t, .b = &t, .out = &o, .op = ACCEL_ELT_DIV };
		struct accel_softmax_desc sd = { .input = &t, .output = &o };
		struct accel_tensor col;
		struct accel_reduce_desc rd = { .input = &t, .output = &col, .op = ACCEL_REDUCE_L2 };

		accel_tensor_2d(bo, 0, ACCEL_FP32, 8, 1, &col);
		cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), -EOPNOTSUPP);
		cr_assert_eq(accel_log_softmax(dev, &sd, NULL, NULL), -EOPNOTSUPP);
		cr_assert_eq(accel_reduce(dev, &rd, NULL, NULL), -EOPNOTSUPP);
		rd.op = ACCEL_REDUCE_SUMSQ;	/* the older reductions still run */
		cr_assert_eq(accel_reduce(dev, &rd, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	accel_buffer_free(b);
	accel_buffer_free(bo);
	accel_buffer_free(q);
	accel_close(dev);
}

/* accel_pool2d AVG_EXCL_PAD: the fp32 average over the taps inside the input (ONNX count_include_pad 0,
 * and a ceil_mode overhang as extra bottom/right padding never counted), NCHW and NHWC. */
Test(vmath, average_pool_excluding_padding)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t N = 2, C = 5, H = 9, W = 7, R = 3, S = 3, st = 2, pt = 1, pl = 1, pb = 2, pr = 1;
	const uint32_t OH = (H + pt + pb - R) / st + 1, OW = (W + pl + pr - S) / st + 1;
	struct accel_buffer *bi = alloc_buf(dev, N * C * H * W * 4), *bo = alloc_buf(dev, N * C * OH * OW * 4);
	struct accel_tensor in, out;
	uint64_t s = 77;

	fill_wide(F(bi), N * C * H * W, &s);
	for (int nhwc = 0; nhwc < 2; nhwc++) {
		enum accel_layout lay = nhwc ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW;
		struct accel_pool2d_desc d = { .input = &in, .output = &out, .kind = ACCEL_POOL_AVG_EXCL_PAD,
					       .win_h = R, .win_w = S, .stride_h = st, .stride_w = st,
					       .pad_top = pt, .pad_left = pl, .pad_bottom = pb, .pad_right = pr };

		accel_tensor_4d(bi, 0, ACCEL_FP32, lay, N, C, H, W, &in);
		accel_tensor_4d(bo, 0, ACCEL_FP32, lay, N, C, OH, OW, &out);
		cr_assert_eq(accel_pool2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t n = 0; n < N; n++)
			for (uint32_t c = 0; c < C; c++)
				for (uint32_t y = 0; y < OH; y++)
					for (uint32_t x = 0; x < OW; x++) {
						double sum = 0;
						int cnt = 0;
						float got;

						for (uint32_t r = 0; r < R; r++)
							for (uint32_t q = 0; q < S; q++) {
								int64_t iy = (int64_t)(y * st + r) - pt, ix = (int64_t)(x * st + q) - pl;

								if (iy < 0 || ix < 0 || iy >= H || ix >= W)
									continue;
								sum += *(float *)((char *)accel_buffer_ptr(bi) + n * in.strides[0] +
										  c * in.strides[1] + iy * in.strides[2] +
										  ix * in.strides[3]);
								cnt++;
							}
						got = *(float *)((char *)accel_buffer_ptr(bo) + n * out.strides[0] + c * out.strides[1] +
								 y * out.strides[2] + x * out.strides[3]);
						cr_assert(fabs(got - sum / cnt) <= 1e-6 * (1 + fabs(sum / cnt)),
							  "layout %d (%u,%u,%u,%u): %g vs %g", nhwc, n, c, y, x, got, sum / cnt);
					}
	}
	{	/* FP32 only */
		struct accel_buffer *q = alloc_buf(dev, N * C * H * W), *qo = alloc_buf(dev, N * C * OH * OW);
		struct accel_pool2d_desc d = { .input = &in, .output = &out, .kind = ACCEL_POOL_AVG_EXCL_PAD,
					       .win_h = R, .win_w = S, .stride_h = st, .stride_w = st };

		accel_tensor_4d(q, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, N, C, H, W, &in);
		accel_tensor_4d(qo, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, N, C, (H - R) / st + 1, (W - S) / st + 1, &out);
		cr_assert_eq(accel_pool2d(dev, &d, NULL, NULL), -EINVAL);
		accel_buffer_free(q);
		accel_buffer_free(qo);
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}
