/* SPDX-License-Identifier: MIT */
/*
 * libaccel on the ISA 2 vector units (#16): accel_eltwise (broadcast, layouts, int8 requantisation),
 * accel_activation's vector-unit functions (fp32 and int8 tables), device max pooling, accel_softmax,
 * accel_layernorm, accel_transpose, accel_requant, their validation, and the async model.  References
 * are plain C (double-precision libm), computed here.  Runs on the sim and, with ACCEL_DEVICE, in the VM.
 */
#include "common.h"

#define SMALL "sim:rows=2,cols=2,pes=4,sram=65536,cmdbuf=8192"

static struct accel_buffer *buf_of(struct accel_dev *dev, uint64_t bytes)
{
	return alloc_buf(dev, bytes);
}

static float *F(struct accel_buffer *b)
{
	return accel_buffer_ptr(b);
}

static void counters(struct accel_job *j, struct accel_counters *c)
{
	cr_assert_eq(accel_job_counters(j, c), 0);
}

/* ---- eltwise --------------------------------------------------------------------------------- */

static void eltwise_f32(struct accel_dev *dev, enum accel_eltwise_op op, uint64_t seed)
{
	const uint32_t N = 2, C = 13, H = 9, W = 11;
	struct accel_buffer *ba = buf_of(dev, N * C * H * W * 4), *bb = buf_of(dev, C * 4), *bo = buf_of(dev, N * C * H * W * 4);
	struct accel_tensor a, b, o;
	struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = op, .act = ACCEL_ACT_RELU };
	struct accel_counters cnt;
	struct accel_job *j = NULL;
	uint64_t s = seed;
	int ret;

	accel_tensor_4d(ba, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, N, C, H, W, &a);
	accel_tensor_4d(bb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, C, 1, 1, &b);	/* per-channel, broadcast */
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, C, H, W, &o);	/* and a layout change */
	fill_f32(F(ba), N * C * H * W, &s);
	fill_f32(F(bb), C, &s);
	ret = accel_eltwise(dev, &d, NULL, &j);
	cr_assert_eq(ret, 0, "eltwise: %s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(j, -1), 0, "%s", accel_last_error(dev));
	counters(j, &cnt);
	cr_assert_gt(cnt.vec_ops, 0);
	accel_job_free(j);
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t y = 0; y < H; y++)
				for (uint32_t x = 0; x < W; x++) {
					float va = F(ba)[((n * H + y) * W + x) * C + c], vb = F(bb)[c], r;

					switch (op) {
					case ACCEL_ELT_ADD: r = va + vb; break;
					case ACCEL_ELT_SUB: r = va - vb; break;
					case ACCEL_ELT_MUL: r = va * vb; break;
					case ACCEL_ELT_MAX: r = va > vb ? va : vb; break;
					default: r = va < vb ? va : vb; break;
					}
					r = r < 0 ? 0 : r;
					cr_assert_eq(F(bo)[((n * C + c) * H + y) * W + x], r, "op %d (%u,%u,%u,%u)", op, n, c, y, x);
				}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bo);
}

Test(vec, eltwise_fp32_broadcast_relu_and_layout_change)
{
	struct accel_dev *dev = open_dev(NULL);

	for (int op = ACCEL_ELT_ADD; op <= ACCEL_ELT_MIN; op++)
		eltwise_f32(dev, (enum accel_eltwise_op)op, 100 + op);
	accel_close(dev);
}

/* The residual add of a ResNet block at int8 (QLinearAdd with equal scales folded into one
 * multiplier), on the small geometry so the tensor spans many chunks, rows and hardware jobs. */
Test(vec, eltwise_int8_requantised_over_many_chunks)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t M = 900, N = 517;
	struct accel_buffer *ba = buf_of(dev, M * N), *bb = buf_of(dev, M * N), *bo = buf_of(dev, M * N);
	struct accel_buffer *b32 = buf_of(dev, M * N * 4);
	struct accel_tensor a, b, o, o32;
	struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = ACCEL_ELT_ADD, .multiplier = 1518500250,
					.shift = 31, .zero_point = -3 };
	struct accel_counters cnt;
	struct accel_job *j = NULL;
	uint64_t s = 7;

	accel_tensor_2d(ba, 0, ACCEL_INT8, M, N, &a);
	accel_tensor_2d(bb, 0, ACCEL_INT8, M, N, &b);
	accel_tensor_2d(bo, 0, ACCEL_INT8, M, N, &o);
	accel_tensor_2d(b32, 0, ACCEL_INT32, M, N, &o32);
	fill_i8(accel_buffer_ptr(ba), M * N, &s);
	fill_i8(accel_buffer_ptr(bb), M * N, &s);
	cr_assert_eq(accel_eltwise(dev, &d, NULL, &j), 0, "%s", accel_last_error(dev));
	counters(j, &cnt);
	if (test_is_sim())
		cr_assert_gt(cnt.hw_jobs, 1, "8 KiB command buffers: several hardware jobs");
	accel_job_free(j);
	d.out = &o32;
	d.op = ACCEL_ELT_MUL;
	cr_assert_eq(accel_eltwise(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t i = 0; i < M * N; i++) {
		int8_t x = ((int8_t *)accel_buffer_ptr(ba))[i], y = ((int8_t *)accel_buffer_ptr(bb))[i];

		cr_assert_eq(((int8_t *)accel_buffer_ptr(bo))[i], ref_requant(x + y, 1518500250, 31, -3), "i %u", i);
		cr_assert_eq(((int32_t *)accel_buffer_ptr(b32))[i], x * y, "i %u", i);
	}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bo);
	accel_buffer_free(b32);
	accel_close(dev);
}

/* ---- activation -------------------------------------------------------------------------------- */

static double ref_act(enum accel_act a, double x)
{
	switch (a) {
	case ACCEL_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case ACCEL_ACT_TANH: return tanh(x);
	case ACCEL_ACT_EXP: return exp(x);
	case ACCEL_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case ACCEL_ACT_ERF: return erf(x);
	case ACCEL_ACT_HARDSIGMOID: return fmin(fmax(0.2 * x + 0.5, 0.0), 1.0);
	case ACCEL_ACT_HARDSWISH: return x * fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
	case ACCEL_ACT_SILU: return x / (1.0 + exp(-x));
	case ACCEL_ACT_RECIP: return 1.0 / x;
	default: return 1.0 / sqrt(x);
	}
}

Test(vec, activation_fp32_functions_within_the_documented_error)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t R = 37, C = 53;
	struct accel_buffer *bi = buf_of(dev, R * C * 4), *bo = buf_of(dev, R * C * 4);
	struct accel_tensor in, out;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, C, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, C, &out);
	for (int act = ACCEL_ACT_SIGMOID; act <= ACCEL_ACT_RSQRT; act++) {
		struct accel_activation_desc d = { .input = &in, .output = &out, .act = (enum accel_act)act };
		bool pos = act == ACCEL_ACT_RECIP || act == ACCEL_ACT_RSQRT;

		for (uint32_t i = 0; i < R * C; i++)
			F(bi)[i] = pos ? 0.01f + (float)i / 97.0f : ((float)i - R * C / 2.0f) / 80.0f;
		cr_assert_eq(accel_activation(dev, &d, NULL, NULL), 0, "act %d: %s", act, accel_last_error(dev));
		for (uint32_t i = 0; i < R * C; i++) {
			double x = F(bi)[i], r = ref_act((enum accel_act)act, x);

			cr_assert(fabs(F(bo)[i] - r) <= 2e-6 * fmax(1.0, fmax(fabs(r), fabs(x))), "act %d x %g: %.9g vs %.9g",
				  act, x, F(bo)[i], r);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(vec, activation_int8_through_a_table_of_the_exact_function)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *bi = buf_of(dev, 4096), *bo = buf_of(dev, 4096);
	struct accel_tensor in, out;
	const enum accel_act acts[] = { ACCEL_ACT_SIGMOID, ACCEL_ACT_TANH, ACCEL_ACT_GELU, ACCEL_ACT_HARDSWISH,
					ACCEL_ACT_SILU };

	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 16, 16, 16, &in);
	accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 16, 16, 16, &out);
	for (int i = 0; i < 4096; i++)
		((int8_t *)accel_buffer_ptr(bi))[i] = (int8_t)(i * 7);
	for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); k++) {
		struct accel_activation_desc d = { .input = &in, .output = &out, .act = acts[k], .in_scale = 0.05f,
						   .in_zero_point = 3, .out_scale = 1.0f / 128, .out_zero_point = -10 };

		cr_assert_eq(accel_activation(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (int i = 0; i < 4096; i++) {
			int q = ((int8_t *)accel_buffer_ptr(bi))[i];
			double y = nearbyint(ref_act(acts[k], 0.05f * (double)(q - 3)) * 128.0 - 10);

			y = y < -128 ? -128 : (y > 127 ? 127 : y);
			cr_assert_eq(((int8_t *)accel_buffer_ptr(bo))[i], (int8_t)y, "act %d q %d", acts[k], q);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* ---- pooling ------------------------------------------------------------------------------- */

/* ResNet-18's stem max pool (3x3 stride 2 pad 1 over 112x112x64) on the device: bigger than a
 * storage-unit half, so it is cut into row bands over every row of the array. */
Test(vec, max_pool_runs_on_the_device_in_row_bands)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t C = 64, H = 112, W = 112, OH = 56, OW = 56;
	struct accel_buffer *bi = buf_of(dev, C * H * W), *bo = buf_of(dev, C * OH * OW);
	struct accel_tensor in, out;
	struct accel_pool2d_desc d = { .input = &in, .output = &out, .kind = ACCEL_POOL_MAX, .win_h = 3, .win_w = 3,
				       .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
				       .pad_right = 1 };
	struct accel_counters cnt;
	struct accel_job *j = NULL;
	const int8_t *x;
	uint64_t s = 3;

	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &in);
	accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, OH, OW, &out);
	fill_i8(accel_buffer_ptr(bi), C * H * W, &s);
	cr_assert_eq(accel_pool2d(dev, &d, NULL, &j), 0, "%s", accel_last_error(dev));
	counters(j, &cnt);
	cr_assert_gt(cnt.hw_jobs, 0, "max pooling is a device job now");
	cr_assert_eq(cnt.vec_ops, (uint64_t)C * OH * OW * 9);
	printf("# vec max-pool 112x112x64 int8 3x3/2: %llu cycles, %llu vector-unit cycles (all rows)\n",
	       (unsigned long long)cnt.total_cycles, (unsigned long long)cnt.vec_cycles);
	accel_job_free(j);
	x = accel_buffer_ptr(bi);
	for (uint32_t y = 0; y < OH; y++)
		for (uint32_t xo = 0; xo < OW; xo++)
			for (uint32_t c = 0; c < C; c++) {
				int m = -129;

				for (int ry = 0; ry < 3; ry++)
					for (int rx = 0; rx < 3; rx++) {
						int iy = (int)y * 2 - 1 + ry, ix = (int)xo * 2 - 1 + rx;

						if (iy >= 0 && ix >= 0 && iy < (int)H && ix < (int)W && x[(iy * W + ix) * C + c] > m)
							m = x[(iy * W + ix) * C + c];
					}
				cr_assert_eq(((int8_t *)accel_buffer_ptr(bo))[(y * OW + xo) * C + c], m);
			}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* A batch of small maps (Fashion-MNIST's 28x28x8 after its first conv, 40 images): several whole
 * images per vector-unit command, in both layouts; every output against a plain-C max with NaNs. */
static void pool_batch(enum accel_layout layout)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t N = 40, C = 8, H = 28, W = 28, OH = 14, OW = 14;
	struct accel_buffer *bi = buf_of(dev, N * C * H * W * 4), *bo = buf_of(dev, N * C * OH * OW * 4);
	struct accel_tensor in, out;
	struct accel_pool2d_desc d = { .input = &in, .output = &out, .kind = ACCEL_POOL_MAX, .win_h = 2, .win_w = 2,
				       .stride_h = 2, .stride_w = 2 };
	struct accel_counters cnt;
	struct accel_job *j = NULL;
	bool nhwc = layout == ACCEL_LAYOUT_NHWC;
	const float *x = F(bi), *y = F(bo);
	uint64_t s = 5;

	accel_tensor_4d(bi, 0, ACCEL_FP32, layout, N, C, H, W, &in);
	accel_tensor_4d(bo, 0, ACCEL_FP32, layout, N, C, OH, OW, &out);
	fill_f32(F(bi), N * C * H * W, &s);
	for (uint32_t i = 0; i < N * C * H * W; i += 977)
		F(bi)[i] = NAN;
	cr_assert_eq(accel_pool2d(dev, &d, NULL, &j), 0, "%s", accel_last_error(dev));
	counters(j, &cnt);
	cr_assert_gt(cnt.hw_jobs, 0);
	cr_assert_eq(cnt.vec_ops, (uint64_t)N * C * OH * OW * 4);
	accel_job_free(j);
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t oy = 0; oy < OH; oy++)
				for (uint32_t ox = 0; ox < OW; ox++) {
					float m = 0, v;
					size_t o = nhwc ? (((size_t)n * OH + oy) * OW + ox) * C + c
							: (((size_t)n * C + c) * OH + oy) * OW + ox;

					for (uint32_t t = 0; t < 4; t++) {
						uint32_t iy = oy * 2 + t / 2, ix = ox * 2 + t % 2;
						size_t i = nhwc ? (((size_t)n * H + iy) * W + ix) * C + c
								: (((size_t)n * C + c) * H + iy) * W + ix;

						if (!t || x[i] > m || x[i] != x[i])
							m = x[i];
					}
					v = y[o];
					cr_assert(memcmp(&v, &m, 4) == 0, "image %u channel %u (%u,%u): %g, want %g", n, c, oy,
						  ox, v, m);
				}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(vec, max_pool_of_a_batch_of_small_maps_nhwc)
{
	pool_batch(ACCEL_LAYOUT_NHWC);
}

Test(vec, max_pool_of_a_batch_of_small_maps_nchw)
{
	pool_batch(ACCEL_LAYOUT_NCHW);
}

/* ---- softmax and layernorm ---------------------------------------------------------------- */

Test(vec, softmax_rows_match_double_reference)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t R = 200, L = 77;
	struct accel_buffer *bi = buf_of(dev, R * L * 4), *bo = buf_of(dev, R * L * 4);
	struct accel_tensor in, out;
	struct accel_softmax_desc d = { .input = &in, .output = &out };
	uint64_t s = 11;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, L, &out);
	for (uint32_t i = 0; i < R * L; i++)
		F(bi)[i] = (float)((int)(xrng(&s) % 2001) - 1000) / 100.0f;
	cr_assert_eq(accel_softmax(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t r = 0; r < R; r++) {
		double m = -INFINITY, sum = 0;

		for (uint32_t k = 0; k < L; k++)
			m = fmax(m, F(bi)[r * L + k]);
		for (uint32_t k = 0; k < L; k++)
			sum += exp(F(bi)[r * L + k] - m);
		for (uint32_t k = 0; k < L; k++) {
			double ref = exp(F(bi)[r * L + k] - m) / sum;

			cr_assert(fabs(F(bo)[r * L + k] - ref) <= 2e-6 * ref + 1e-12, "(%u,%u) %g vs %g", r, k,
				  F(bo)[r * L + k], ref);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(vec, layernorm_matches_double_reference)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t R = 64, L = 384;
	struct accel_buffer *bi = buf_of(dev, R * L * 4), *bo = buf_of(dev, R * L * 4), *bg = buf_of(dev, L * 4),
			    *bb = buf_of(dev, L * 4);
	struct accel_tensor in, out, g, b;
	struct accel_layernorm_desc d = { .input = &in, .output = &out, .gamma = &g, .beta = &b, .epsilon = 1e-5f };
	uint64_t s = 5;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, L, &out);
	accel_tensor_2d(bg, 0, ACCEL_FP32, 1, L, &g);
	accel_tensor_2d(bb, 0, ACCEL_FP32, L, 1, &b);
	fill_f32(F(bi), R * L, &s);
	for (uint32_t i = 0; i < R * L; i++)
		F(bi)[i] += 3.0f;	/* a non-zero mean */
	fill_f32(F(bg), L, &s);
	fill_f32(F(bb), L, &s);
	cr_assert_eq(accel_layernorm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t r = 0; r < R; r++) {
		double mean = 0, var = 0;

		for (uint32_t k = 0; k < L; k++)
			mean += F(bi)[r * L + k];
		mean /= L;
		for (uint32_t k = 0; k < L; k++)
			var += (F(bi)[r * L + k] - mean) * (F(bi)[r * L + k] - mean);
		var /= L;
		for (uint32_t k = 0; k < L; k++) {
			double ref = (F(bi)[r * L + k] - mean) / sqrt(var + 1e-5) * F(bg)[k] + F(bb)[k];

			cr_assert(fabs(F(bo)[r * L + k] - ref) <= 1e-5 * (1 + fabs(ref)), "(%u,%u) %g vs %g", r, k,
				  F(bo)[r * L + k], ref);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_buffer_free(bg);
	accel_buffer_free(bb);
	accel_close(dev);
}

/* ---- transpose and requant ---------------------------------------------------------------- */

Test(vec, transpose_2d_4d_and_layout_changes)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t N = 2, C = 19, H = 13, W = 17;
	struct accel_buffer *bi = buf_of(dev, N * C * H * W * 4), *bo = buf_of(dev, N * C * H * W * 4);
	struct accel_tensor in, out;
	struct accel_transpose_desc d = { .input = &in, .output = &out, .perm = { 0, 1, 2, 3 } };

	for (uint32_t i = 0; i < N * C * H * W; i++)
		F(bi)[i] = (float)i;
	/* NCHW -> NHWC: the identity perm with another layout */
	accel_tensor_4d(bi, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, C, H, W, &in);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, N, C, H, W, &out);
	cr_assert_eq(accel_transpose(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t y = 0; y < H; y++)
				for (uint32_t x = 0; x < W; x++)
					cr_assert_eq(F(bo)[((n * H + y) * W + x) * C + c], F(bi)[((n * C + c) * H + y) * W + x]);
	/* a 4-D permutation {N, W, C, H} of the NCHW input, NCHW output */
	d.perm[1] = 3;
	d.perm[2] = 1;
	d.perm[3] = 2;
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, W, C, H, &out);
	cr_assert_eq(accel_transpose(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t y = 0; y < H; y++)
				for (uint32_t x = 0; x < W; x++)
					cr_assert_eq(F(bo)[((n * W + x) * C + c) * H + y], F(bi)[((n * C + c) * H + y) * W + x]);
	/* 2-D int8 transpose */
	{
		struct accel_tensor a2, t2;
		struct accel_transpose_desc d2 = { .input = &a2, .output = &t2, .perm = { 1, 0 } };

		accel_tensor_2d(bi, 0, ACCEL_INT8, 97, 131, &a2);
		accel_tensor_2d(bo, 0, ACCEL_INT8, 131, 97, &t2);
		cr_assert_eq(accel_transpose(dev, &d2, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t i = 0; i < 97; i++)
			for (uint32_t j = 0; j < 131; j++)
				cr_assert_eq(((int8_t *)accel_buffer_ptr(bo))[j * 97 + i],
					     ((int8_t *)accel_buffer_ptr(bi))[i * 131 + j]);
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(vec, requant_per_channel_nchw_and_nhwc)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t C = 24, H = 7, W = 9;
	struct accel_buffer *bi = buf_of(dev, C * H * W * 4), *bo = buf_of(dev, C * H * W);
	struct accel_tensor in, out;
	int32_t mult[24];
	uint8_t shift[24];
	struct accel_requant_desc d = { .input = &in, .output = &out, .axis = 1, .multiplier = mult, .shift = shift,
					.zero_point = 5 };
	uint64_t s = 9;

	for (uint32_t c = 0; c < C; c++) {
		mult[c] = (int32_t)(1073741824u + 33554432u * c);
		shift[c] = (uint8_t)(36 + c % 5);
	}
	for (uint32_t i = 0; i < C * H * W; i++)
		((int32_t *)accel_buffer_ptr(bi))[i] = (int32_t)(xrng(&s) % 200001) - 100000;
	for (int layout = ACCEL_LAYOUT_NHWC; layout <= ACCEL_LAYOUT_NCHW; layout++) {
		accel_tensor_4d(bi, 0, ACCEL_INT32, (enum accel_layout)layout, 1, C, H, W, &in);
		accel_tensor_4d(bo, 0, ACCEL_INT8, (enum accel_layout)layout, 1, C, H, W, &out);
		cr_assert_eq(accel_requant(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t c = 0; c < C; c++)
			for (uint32_t p = 0; p < H * W; p++) {
				uint32_t o = layout == ACCEL_LAYOUT_NHWC ? p * C + c : c * H * W + p;

				cr_assert_eq(((int8_t *)accel_buffer_ptr(bo))[o],
					     ref_requant(((int32_t *)accel_buffer_ptr(bi))[o], mult[c], shift[c], 5),
					     "layout %d c %u p %u", layout, c, p);
			}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* ---- validation and the async model ------------------------------------------------------- */

Test(vec, bad_arguments_are_rejected_with_a_message)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = buf_of(dev, 65536);
	struct accel_tensor a, c, i8;
	struct accel_eltwise_desc e = { .a = &a, .b = &c, .out = &a };
	struct accel_transpose_desc t = { .input = &a, .output = &a, .perm = { 0, 0 } };
	struct accel_softmax_desc sm = { .input = &i8, .output = &i8 };
	struct accel_activation_desc ac = { .input = &i8, .output = &i8, .act = ACCEL_ACT_SIGMOID };

	accel_tensor_2d(b, 0, ACCEL_FP32, 8, 8, &a);
	accel_tensor_2d(b, 0, ACCEL_FP32, 8, 3, &c);
	accel_tensor_2d(b, 0, ACCEL_INT8, 8, 8, &i8);
	cr_assert_eq(accel_eltwise(dev, &e, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "neither equals"), "%s", accel_last_error(dev));
	e.b = &a;
	e.op = (enum accel_eltwise_op)9;
	cr_assert_eq(accel_eltwise(dev, &e, NULL, NULL), -EINVAL);
	cr_assert_eq(accel_eltwise(dev, NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(accel_transpose(dev, &t, NULL, NULL), -EINVAL);
	cr_assert_eq(accel_softmax(dev, &sm, NULL, NULL), -EINVAL);
	cr_assert_eq(accel_activation(dev, &ac, NULL, NULL), -EINVAL, "int8 needs scales");
	cr_assert(strstr(accel_last_error(dev), "in_scale"), "%s", accel_last_error(dev));
	accel_buffer_free(b);
	accel_close(dev);
}

/* transpose -> eltwise (dependent), both async: the same results as synchronous calls. */
Test(vec, async_jobs_with_dependencies)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b1 = buf_of(dev, 64 * 48 * 4), *b2 = buf_of(dev, 64 * 48 * 4), *b3 = buf_of(dev, 64 * 48 * 4);
	struct accel_tensor x, xt, y;
	struct accel_transpose_desc t = { .input = &x, .output = &xt, .perm = { 1, 0 } };
	struct accel_eltwise_desc e = { .a = &xt, .b = &xt, .out = &y, .op = ACCEL_ELT_MUL };
	struct accel_job *j1 = NULL, *j2 = NULL;
	struct accel_submit sub = { .deps = &j1, .n_deps = 1 };
	uint64_t s = 1;

	accel_tensor_2d(b1, 0, ACCEL_FP32, 64, 48, &x);
	accel_tensor_2d(b2, 0, ACCEL_FP32, 48, 64, &xt);
	accel_tensor_2d(b3, 0, ACCEL_FP32, 48, 64, &y);
	fill_f32(F(b1), 64 * 48, &s);
	cr_assert_eq(accel_transpose(dev, &t, NULL, &j1), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_eltwise(dev, &e, &sub, &j2), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(j2, -1), 0);
	for (uint32_t i = 0; i < 64; i++)
		for (uint32_t k = 0; k < 48; k++)
			cr_assert_eq(F(b3)[k * 64 + i], F(b1)[i * 48 + k] * F(b1)[i * 48 + k]);
	accel_job_free(j1);
	accel_job_free(j2);
	accel_buffer_free(b1);
	accel_buffer_free(b2);
	accel_buffer_free(b3);
	accel_close(dev);
}

/* ---- the SFU residual epilogue ------------------------------------------------------------- */

/* C = relu(A x B + bias + R): fp32 over several output blocks and K steps (small geometry), and
 * int8 x int8 -> INT32 + INT32 residual. */
Test(vec, gemm_epilogue_residual_fp32_and_int32)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	const uint32_t M = 45, N = 37, K = 70;
	struct accel_buffer *ba = buf_of(dev, M * K * 4), *bb = buf_of(dev, K * N * 4), *bc = buf_of(dev, M * N * 4),
			    *br = buf_of(dev, M * N * 4), *bs = buf_of(dev, N * 4);
	struct accel_tensor a, b, c, r, bias;
	struct accel_gemm_desc d = { .a = &a, .b = &b, .c = &c };
	uint64_t s = 21;

	accel_tensor_2d(ba, 0, ACCEL_FP32, M, K, &a);
	accel_tensor_2d(bb, 0, ACCEL_FP32, K, N, &b);
	accel_tensor_2d(bc, 0, ACCEL_FP32, M, N, &c);
	accel_tensor_2d(br, 0, ACCEL_FP32, M, N, &r);
	accel_tensor_2d(bs, 0, ACCEL_FP32, 1, N, &bias);
	fill_f32(F(ba), M * K, &s);
	fill_f32(F(bb), K * N, &s);
	fill_f32(F(br), M * N, &s);
	fill_f32(F(bs), N, &s);
	d.epi.bias = &bias;
	d.epi.act = ACCEL_ACT_RELU;
	d.epi.residual = &r;
	cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t j = 0; j < N; j++) {
			double acc = 0, mag = 0;

			for (uint32_t k = 0; k < K; k++) {
				acc += (double)F(ba)[i * K + k] * F(bb)[k * N + j];
				mag += fabs((double)F(ba)[i * K + k] * F(bb)[k * N + j]);
			}
			acc += F(bs)[j] + F(br)[i * N + j];
			acc = acc < 0 ? 0 : acc;
			cr_assert(fabs(F(bc)[i * N + j] - acc) <= F32_RTOL * (1 + mag + fabs(F(br)[i * N + j])), "(%u,%u) %g vs %g",
				  i, j, F(bc)[i * N + j], acc);
		}
	/* int8 -> INT32 with an INT32 residual: exact */
	{
		struct accel_tensor a8, b8, c32, r32;
		struct accel_gemm_desc d8 = { .a = &a8, .b = &b8, .c = &c32, .epi = { .residual = &r32 } };

		accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &a8);
		accel_tensor_2d(bb, 0, ACCEL_INT8, K, N, &b8);
		accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &c32);
		accel_tensor_2d(br, 0, ACCEL_INT32, M, N, &r32);
		fill_i8(accel_buffer_ptr(ba), M * K, &s);
		fill_i8(accel_buffer_ptr(bb), K * N, &s);
		for (uint32_t i = 0; i < M * N; i++)
			((int32_t *)accel_buffer_ptr(br))[i] = (int32_t)(xrng(&s) % 100001) - 50000;
		cr_assert_eq(accel_gemm(dev, &d8, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t i = 0; i < M; i++)
			for (uint32_t j = 0; j < N; j++) {
				int32_t acc = ((int32_t *)accel_buffer_ptr(br))[i * N + j];

				for (uint32_t k = 0; k < K; k++)
					acc += ((int8_t *)accel_buffer_ptr(ba))[i * K + k] * ((int8_t *)accel_buffer_ptr(bb))[k * N + j];
				cr_assert_eq(((int32_t *)accel_buffer_ptr(bc))[i * N + j], acc, "(%u,%u)", i, j);
			}
		/* a requantised INT8 output cannot take a residual */
		d8.c = &a8;
		accel_tensor_2d(bc, 0, ACCEL_INT8, M, N, &c32);
		d8.c = &c32;
		d8.epi.multiplier = 1 << 30;
		d8.epi.shift = 30;
		cr_assert_eq(accel_gemm(dev, &d8, NULL, NULL), -EINVAL);
	}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
	accel_buffer_free(br);
	accel_buffer_free(bs);
	accel_close(dev);
}

/* A ResNet basic block's second convolution: out = relu(conv3x3(x) + bias + skip), NHWC fp32. */
Test(vec, conv2d_epilogue_residual_nhwc)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t C = 16, H = 10, W = 12, K = 16;
	struct accel_buffer *bx = buf_of(dev, C * H * W * 4), *bw = buf_of(dev, K * C * 9 * 4),
			    *bo = buf_of(dev, K * H * W * 4), *bk = buf_of(dev, K * H * W * 4), *bs = buf_of(dev, K * 4);
	struct accel_tensor x, w, o, skip, bias;
	struct accel_conv2d_desc d = { .input = &x, .weights = &w, .output = &o, .stride_h = 1, .stride_w = 1,
				       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .dil_h = 1,
				       .dil_w = 1, .groups = 1 };
	uint64_t s = 8;

	accel_tensor_4d(bx, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &x);
	accel_tensor_4d(bw, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, K, C, 3, 3, &w);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, K, H, W, &o);
	accel_tensor_4d(bk, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, K, H, W, &skip);
	accel_tensor_2d(bs, 0, ACCEL_FP32, 1, K, &bias);
	fill_f32(F(bx), C * H * W, &s);
	fill_f32(F(bw), K * C * 9, &s);
	fill_f32(F(bk), K * H * W, &s);
	fill_f32(F(bs), K, &s);
	d.epi.bias = &bias;
	d.epi.act = ACCEL_ACT_RELU;
	d.epi.residual = &skip;
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t xo = 0; xo < W; xo++)
			for (uint32_t k = 0; k < K; k++) {
				double acc = 0, mag = 0;

				for (int ry = 0; ry < 3; ry++)
					for (int rx = 0; rx < 3; rx++) {
						int iy = (int)y - 1 + ry, ix = (int)xo - 1 + rx;

						if (iy < 0 || ix < 0 || iy >= (int)H || ix >= (int)W)
							continue;
						for (uint32_t c = 0; c < C; c++) {
							double p = (double)F(bx)[(iy * W + ix) * C + c] * F(bw)[((k * 3 + ry) * 3 + rx) * C + c];

							acc += p;
							mag += fabs(p);
						}
					}
				acc += F(bs)[k] + F(bk)[(y * W + xo) * K + k];
				acc = acc < 0 ? 0 : acc;
				cr_assert(fabs(F(bo)[(y * W + xo) * K + k] - acc) <= F32_RTOL * (1 + mag + 2), "(%u,%u,%u) %g vs %g", y,
					  xo, k, F(bo)[(y * W + xo) * K + k], acc);
			}
	accel_buffer_free(bx);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_buffer_free(bk);
	accel_buffer_free(bs);
	accel_close(dev);
}

/* out = act(conv(x) + bias + skip) with NCHW tensors (the ONNX compiler's layout): batch 2, two groups,
 * stride 2, on a geometry that tiles M and N; the residual is staged by a transposing load.  Reference:
 * the convolution summed in double from its definition.  Returns the output (for the device/sim pair). */
static void conv_residual_nchw(struct accel_dev *dev, enum accel_act act, float *got)
{
	const uint32_t N = 2, C = 6, H = 11, W = 9, K = 10, G = 2, R = 3, S = 3, CG = C / G, KG = K / G;
	const uint32_t OH = (H + 2 - R) / 2 + 1, OW = (W + 2 - S) / 2 + 1;
	struct accel_buffer *bx = buf_of(dev, N * C * H * W * 4), *bw = buf_of(dev, K * CG * R * S * 4),
			    *bo = buf_of(dev, N * K * OH * OW * 4), *bk = buf_of(dev, N * K * OH * OW * 4),
			    *bs = buf_of(dev, K * 4);
	struct accel_tensor x, w, o, skip, bias;
	struct accel_conv2d_desc d = { .input = &x, .weights = &w, .output = &o, .stride_h = 2, .stride_w = 2,
				       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .dil_h = 1,
				       .dil_w = 1, .groups = G };
	uint64_t s = 21;

	accel_tensor_4d(bx, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, C, H, W, &x);
	accel_tensor_4d(bw, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, K, CG, R, S, &w);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, K, OH, OW, &o);
	accel_tensor_4d(bk, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, N, K, OH, OW, &skip);
	accel_tensor_2d(bs, 0, ACCEL_FP32, 1, K, &bias);
	fill_f32(F(bx), N * C * H * W, &s);
	fill_f32(F(bw), K * CG * R * S, &s);
	fill_f32(F(bk), N * K * OH * OW, &s);
	fill_f32(F(bs), K, &s);
	d.epi.bias = &bias;
	d.epi.act = act;
	d.epi.clamp_lo_f = -0.5f;
	d.epi.clamp_hi_f = 0.75f;
	d.epi.residual = &skip;
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t k = 0; k < K; k++)
			for (uint32_t y = 0; y < OH; y++)
				for (uint32_t xo = 0; xo < OW; xo++) {
					uint32_t g = k / KG, oi = ((n * K + k) * OH + y) * OW + xo;
					double acc = 0, mag = 0;

					for (uint32_t c = 0; c < CG; c++)
						for (uint32_t ry = 0; ry < R; ry++)
							for (uint32_t rx = 0; rx < S; rx++) {
								int iy = (int)(y * 2 + ry) - 1, ix = (int)(xo * 2 + rx) - 1;
								double p;

								if (iy < 0 || ix < 0 || iy >= (int)H || ix >= (int)W)
									continue;
								p = (double)F(bx)[((n * C + g * CG + c) * H + iy) * W + ix] *
								    F(bw)[((k * CG + c) * R + ry) * S + rx];
								acc += p;
								mag += fabs(p);
							}
					acc += F(bs)[k] + F(bk)[oi];
					if (act == ACCEL_ACT_RELU)
						acc = acc < 0 ? 0 : acc;
					else if (act == ACCEL_ACT_CLAMP)
						acc = acc < -0.5 ? -0.5 : (acc > 0.75 ? 0.75 : acc);
					cr_assert(fabs(F(bo)[oi] - acc) <= F32_RTOL * (1 + mag + 2), "act %d (%u,%u,%u,%u) %g vs %g",
						  act, n, k, y, xo, F(bo)[oi], acc);
				}
	if (got)
		memcpy(got, F(bo), N * K * OH * OW * 4);
	/* a residual of another layout or shape than the output is refused */
	accel_tensor_4d(bk, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, N, K, OH, OW, &skip);
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "residual"), "%s", accel_last_error(dev));
	accel_buffer_free(bx);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_buffer_free(bk);
	accel_buffer_free(bs);
}

Test(vec, conv2d_epilogue_residual_nchw)
{
	struct accel_dev *dev = open_dev(NULL), *small = open_dev(SMALL);

	conv_residual_nchw(dev, ACCEL_ACT_NONE, NULL);
	conv_residual_nchw(dev, ACCEL_ACT_RELU, NULL);
	conv_residual_nchw(small, ACCEL_ACT_RELU, NULL);
	conv_residual_nchw(small, ACCEL_ACT_CLAMP, NULL);
	accel_close(small);
	accel_close(dev);
}

/* The NCHW residual epilogue gives bit-identical results on the device (in the VM: drm) and on an
 * in-process sim of its geometry. */
Test(vec, conv2d_residual_nchw_device_and_sim_bit_identical)
{
	struct accel_dev *dev = open_dev(NULL), *sim = NULL;
	struct accel_caps caps;
	static float o1[2 * 10 * 6 * 5], o2[2 * 10 * 6 * 5];
	char path[128];

	accel_query_caps(dev, &caps);
	snprintf(path, sizeof(path), "sim:rows=%u,cols=%u,pes=%u,sram=%u,clock=%u", caps.rows, caps.cols, caps.pes,
		 caps.sram_bytes, caps.clock_mhz);
	cr_assert_eq(accel_open(path, &sim), 0, "%s", path);
	conv_residual_nchw(dev, ACCEL_ACT_RELU, o1);
	conv_residual_nchw(sim, ACCEL_ACT_RELU, o2);
	cr_assert_eq(memcmp(o1, o2, sizeof(o1)), 0, "results differ between %s and %s", caps.backend, path);
	accel_close(sim);
	accel_close(dev);
}

/* The vector-unit operations give bit-identical results and counters on the device (in the VM: the
 * drm backend) and on an in-process sim of the device's geometry (on the host: two sims). */
static void vec_pair_job(struct accel_dev *dev, float *out, struct accel_counters *c)
{
	const uint32_t R = 96, L = 80;
	struct accel_buffer *bi = buf_of(dev, R * L * 4), *bo = buf_of(dev, R * L * 4);
	struct accel_tensor in, o;
	struct accel_softmax_desc sm = { .input = &in, .output = &o };
	struct accel_activation_desc ac = { .input = &o, .output = &o, .act = ACCEL_ACT_GELU };
	struct accel_job *j1 = NULL, *j2 = NULL;
	struct accel_submit sub = { .deps = &j1, .n_deps = 1 };
	struct accel_counters c2;
	uint64_t s = 31;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, L, &o);
	fill_f32(F(bi), R * L, &s);
	cr_assert_eq(accel_softmax(dev, &sm, NULL, &j1), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_activation(dev, &ac, &sub, &j2), 0, "%s", accel_last_error(dev));
	counters(j1, c);
	counters(j2, &c2);
	accel_counters_add(c, &c2);
	memcpy(out, F(bo), R * L * 4);
	accel_job_free(j1);
	accel_job_free(j2);
	accel_buffer_free(bi);
	accel_buffer_free(bo);
}

Test(vec, device_and_sim_are_bit_identical)
{
	struct accel_dev *dev = open_dev(NULL), *sim = NULL;
	struct accel_caps caps;
	struct accel_counters c1, c2;
	static float o1[96 * 80], o2[96 * 80];
	char path[128];

	accel_query_caps(dev, &caps);
	snprintf(path, sizeof(path), "sim:rows=%u,cols=%u,pes=%u,sram=%u,clock=%u", caps.rows, caps.cols, caps.pes,
		 caps.sram_bytes, caps.clock_mhz);
	cr_assert_eq(accel_open(path, &sim), 0, "%s", path);
	vec_pair_job(dev, o1, &c1);
	vec_pair_job(sim, o2, &c2);
	cr_assert_eq(memcmp(o1, o2, sizeof(o1)), 0, "results differ between %s and %s", caps.backend, path);
	cr_assert_eq(c1.total_cycles, c2.total_cycles);
	cr_assert_eq(c1.vec_cycles, c2.vec_cycles);
	cr_assert_eq(c1.vec_ops, c2.vec_ops);
	cr_assert_eq(c1.bytes_h2d, c2.bytes_h2d);
	accel_close(sim);
	accel_close(dev);
}

Test(vec, reduce_rows_sum_mean_max_sumsq)
{
	struct accel_dev *dev = open_dev(SMALL);
	const uint32_t R = 300, L = 45;
	struct accel_buffer *bi = buf_of(dev, R * L * 4), *bo = buf_of(dev, R * 4);
	struct accel_tensor in, out;
	uint64_t s = 17;

	accel_tensor_2d(bi, 0, ACCEL_FP32, R, L, &in);
	accel_tensor_2d(bo, 0, ACCEL_FP32, R, 1, &out);
	fill_f32(F(bi), R * L, &s);
	for (int op = ACCEL_REDUCE_SUM; op <= ACCEL_REDUCE_SUMSQ; op++) {
		struct accel_reduce_desc d = { .input = &in, .output = &out, .op = (enum accel_reduce_op)op };

		cr_assert_eq(accel_reduce(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t r = 0; r < R; r++) {
			double acc = op == ACCEL_REDUCE_MAX ? -INFINITY : 0;

			for (uint32_t k = 0; k < L; k++) {
				double x = F(bi)[r * L + k];

				acc = op == ACCEL_REDUCE_MAX ? fmax(acc, x) : acc + (op == ACCEL_REDUCE_SUMSQ ? x * x : x);
			}
			if (op == ACCEL_REDUCE_MEAN)
				acc /= L;
			cr_assert(fabs(F(bo)[r] - acc) <= 1e-5 * (1 + fabs(acc)), "op %d row %u: %g vs %g", op, r, F(bo)[r], acc);
		}
	}
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* ---- summed counters (issue #27 B6) ------------------------------------------------------------ */

/* accel_counters_add: every 64-bit counter added (a distinct value per field, from a walk over the
 * struct, so a counter added later is covered too), hw_jobs added, busy_rows the maximum, pad kept. */
Test(vec, counters_add_adds_every_field)
{
	struct accel_counters sum, add;
	uint64_t *s = (uint64_t *)&sum, *a = (uint64_t *)&add;
	const size_t n = sizeof(sum) / sizeof(uint64_t);
	const size_t hw = offsetof(struct accel_counters, hw_jobs) / sizeof(uint64_t);
	const size_t busy = offsetof(struct accel_counters, busy_rows) / sizeof(uint64_t);

	cr_assert_eq(sizeof(sum) % sizeof(uint64_t), 0);
	for (size_t i = 0; i < n; i++) {
		s[i] = 0x1000000000ull * (i + 1) + 3 * i;
		a[i] = 0x10000ull * (i + 7) + 5 * i;
	}
	sum.hw_jobs = 7;
	sum.pad = 0;
	add.hw_jobs = 11;
	add.pad = 0;
	sum.busy_rows = 3;
	add.busy_rows = 4;
	accel_counters_add(&sum, &add);
	for (size_t i = 0; i < n; i++)
		if (i != hw && i != busy)
			cr_assert_eq(s[i], 0x1000000000ull * (i + 1) + 3 * i + 0x10000ull * (i + 7) + 5 * i,
				     "64-bit field %zu (byte offset %zu) not added", i, i * sizeof(uint64_t));
	cr_assert_eq(sum.hw_jobs, 18);
	cr_assert_eq(sum.pad, 0);
	cr_assert_eq(sum.busy_rows, 4, "busy_rows is a maximum (rows used)");
	{
		size_t v = offsetof(struct accel_counters, vec_ops) / sizeof(uint64_t);

		cr_assert_eq(sum.vec_ops, 0x1000000000ull * (v + 1) + 3 * v + 0x10000ull * (v + 7) + 5 * v);
	}
	add.busy_rows = 2;
	accel_counters_add(&sum, &add);
	cr_assert_eq(sum.busy_rows, 4);
	accel_counters_add(&sum, NULL);	/* no-op, no crash */
	accel_counters_add(NULL, &add);
}

/* A GEMM (no vector unit) and a sigmoid (vector units) summed: the sum keeps the sigmoid's vec_ops and
 * vec_cycles (a hand-written sum of only the fields before hw_jobs lost them). */
Test(vec, counters_add_keeps_the_vector_unit_counters)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t R = 16, C = 64;
	struct accel_buffer *bi = buf_of(dev, R * C * 4), *bo = buf_of(dev, R * C * 4), *bg = buf_of(dev, C * C * 4);
	struct accel_tensor in, out, w;
	struct accel_activation_desc ad = { .input = &in, .output = &out, .act = ACCEL_ACT_SIGMOID };
	struct accel_gemm_desc gd = { .a = &out, .b = &w, .c = &in };
	struct accel_counters sum, k1, k2;
	struct accel_job *j1 = NULL, *j2 = NULL;
	uint64_t s = 0x27b6;

	cr_assert_eq(accel_tensor_2d(bi, 0, ACCEL_FP32, R, C, &in), 0);
	cr_assert_eq(accel_tensor_2d(bo, 0, ACCEL_FP32, R, C, &out), 0);
	cr_assert_eq(accel_tensor_2d(bg, 0, ACCEL_FP32, C, C, &w), 0);
	fill_f32(F(bi), R * C, &s);
	fill_f32(F(bg), C * C, &s);
	cr_assert_eq(accel_activation(dev, &ad, NULL, &j1), 0, "%s", accel_last_error(dev));
	{
		struct accel_submit sub = { .deps = &j1, .n_deps = 1 };

		cr_assert_eq(accel_gemm(dev, &gd, &sub, &j2), 0, "%s", accel_last_error(dev));
	}
	counters(j1, &k1);
	counters(j2, &k2);
	cr_assert_gt(k1.vec_ops, 0, "the sigmoid runs on the vector units");
	cr_assert_gt(k1.vec_cycles, 0);
	cr_assert_gt(k2.macs_dense, 0);
	memset(&sum, 0, sizeof(sum));
	accel_counters_add(&sum, &k1);
	accel_counters_add(&sum, &k2);
	cr_assert_eq(sum.vec_ops, k1.vec_ops + k2.vec_ops);
	cr_assert_eq(sum.vec_cycles, k1.vec_cycles + k2.vec_cycles);
	cr_assert_eq(sum.macs_dense, k1.macs_dense + k2.macs_dense);
	cr_assert_eq(sum.total_cycles, k1.total_cycles + k2.total_cycles);
	cr_assert_eq(sum.hw_jobs, k1.hw_jobs + k2.hw_jobs);
	accel_job_free(j1);
	accel_job_free(j2);
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_buffer_free(bg);
	accel_close(dev);
}
