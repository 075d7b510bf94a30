/* SPDX-License-Identifier: MIT */
/*
 * Each supported op, lowered onto libaccel (sim) and on the CPU reference executor, against a plain-C
 * reference written here (not the importer's host kernels).  Seeded random data; the seed is fixed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"

static struct accel_dev *dev;
static uint32_t rng = 12345;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 12345;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_ops, .init = setup, .fini = teardown);

static float frand(void)
{
	return mb_frand(&rng);
}

static int irand(int lo, int hi)
{
	rng = rng * 1664525u + 1013904223u;
	return lo + (int)((rng >> 8) % (uint32_t)(hi - lo + 1));
}

static float *frand_arr(size_t n)
{
	float *v = malloc(n * sizeof(float));

	for (size_t i = 0; i < n; i++)
		v[i] = frand();
	return v;
}

static void tensor_f(struct onnx_tensor *t, unsigned nd, const int64_t *dims, const float *data)
{
	cr_assert_eq(onnx_tensor_alloc(t, ONNX_FLOAT, nd, dims), 0);
	memcpy(t->data, data, t->count * 4);
}

/* Load b and run it on dev (NULL = CPU reference); returns the onnx_run result. */
static int run(struct mb *b, struct accel_dev *d, unsigned flags, struct onnx_tensor *in, unsigned n_in,
	       struct onnx_tensor *out, struct onnx_run_stats *st)
{
	struct onnx_model *m = NULL;
	char err[512] = "";
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	int ret = onnx_model_load_mem(buf, len, flags, &m, err, sizeof(err));

	cr_assert_eq(ret, 0, "load: %s", err);
	ret = onnx_run(m, d, in, n_in, out, 1, st);
	if (ret)
		cr_log_info("run: %s", onnx_model_error(m));
	onnx_model_free(m);
	return ret;
}

static void expect_close(const struct onnx_tensor *got, const float *ref, size_t n, const char *what)
{
	cr_assert_eq(got->dtype, ONNX_FLOAT, "%s: dtype", what);
	cr_assert_eq(got->count, n, "%s: %zu values, expected %zu", what, got->count, n);
	for (size_t i = 0; i < n; i++) {
		float g = ((const float *)got->data)[i];

		cr_assert(fabsf(g - ref[i]) <= 1e-4f + 1e-3f * fabsf(ref[i]), "%s[%zu]: got %g, expected %g (seed 12345)",
			  what, i, g, ref[i]);
	}
}

/* Run on sim and on the CPU reference; both must match ref; returns sim's accel node count. */
static unsigned check_both(struct mb *b, struct onnx_tensor *in, unsigned n_in, const float *ref, size_t n)
{
	struct onnx_tensor out;
	struct onnx_run_stats st;

	cr_assert_eq(run(b, dev, 0, in, n_in, &out, &st), 0);
	expect_close(&out, ref, n, "sim");
	onnx_tensor_release(&out);
	cr_assert_eq(run(b, NULL, 0, in, n_in, &out, NULL), 0);
	expect_close(&out, ref, n, "cpu");
	onnx_tensor_release(&out);
	return st.accel_nodes;
}

/* Plain reference convolution, NCHW, explicit pads {top, left, bottom, right}. */
static void ref_conv(const float *x, const float *w, const float *bias, float *y, int N, int C, int H, int W, int K,
		     int R, int S, int groups, const int pads[4], const int st[2], const int dl[2], int OH, int OW)
{
	int cg = C / groups, kg = K / groups;

	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++)
			for (int oy = 0; oy < OH; oy++)
				for (int ox = 0; ox < OW; ox++) {
					double s = bias ? bias[k] : 0;

					for (int c = 0; c < cg; c++)
						for (int r = 0; r < R; r++)
							for (int q = 0; q < S; q++) {
								int iy = oy * st[0] - pads[0] + r * dl[0];
								int ix = ox * st[1] - pads[1] + q * dl[1];

								if (iy >= 0 && iy < H && ix >= 0 && ix < W)
									s += (double)x[((n * C + (k / kg) * cg + c) * H + iy) * W + ix] *
									     w[((k * cg + c) * R + r) * S + q];
							}
					y[((n * K + k) * OH + oy) * OW + ox] = (float)s;
				}
}

Test(onnx_ops, conv_matches_reference_with_groups_pads_strides_dilations)
{
	int64_t xd[4] = { 2, 4, 9, 8 }, wd[4] = { 6, 2, 3, 3 }, bd[1] = { 6 };
	int64_t pads[4] = { 1, 0, 2, 1 }, strides[2] = { 2, 1 }, dil[2] = { 1, 2 };
	int p[4] = { 1, 0, 2, 1 }, s[2] = { 2, 1 }, d[2] = { 1, 2 };
	int OH = (9 + 3 - 3) / 2 + 1, OW = (8 + 1 - 5) / 1 + 1;
	float *x = frand_arr(2 * 4 * 9 * 8), *w = frand_arr(6 * 2 * 9), *bias = frand_arr(6);
	float *ref = malloc(2 * 6 * OH * OW * sizeof(float));
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_init(b, "b", ONNX_FLOAT, 1, bd, bias);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w,b", "y");
	mb_attr_i(b, n, "group", 2);
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_ints(b, n, "strides", strides, 2);
	mb_attr_ints(b, n, "dilations", dil, 2);
	mb_output(b, "y");
	ref_conv(x, w, bias, ref, 2, 4, 9, 8, 6, 3, 3, 2, p, s, d, OH, OW);
	tensor_f(&in, 4, xd, x);
	cr_expect_eq(check_both(b, &in, 1, ref, (size_t)(2 * 6 * OH * OW)), 1, "the Conv ran on the device");
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(w);
	free(bias);
	free(ref);
}

Test(onnx_ops, conv_auto_pad_same_upper_pads_the_end)
{
	/* in 7, stride 2, kernel 4: out 4, total pad (4-1)*2+4-7 = 3 -> top/left 1, bottom/right 2 */
	int64_t xd[4] = { 1, 3, 7, 7 }, wd[4] = { 4, 3, 4, 4 }, strides[2] = { 2, 2 };
	int p[4] = { 1, 1, 2, 2 }, s[2] = { 2, 2 }, d[2] = { 1, 1 };
	float *x = frand_arr(3 * 49), *w = frand_arr(4 * 3 * 16), ref[4 * 16];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "y");
	mb_attr_s(b, n, "auto_pad", "SAME_UPPER");
	mb_attr_ints(b, n, "strides", strides, 2);
	mb_output(b, "y");
	ref_conv(x, w, NULL, ref, 1, 3, 7, 7, 4, 4, 4, 1, p, s, d, 4, 4);
	tensor_f(&in, 4, xd, x);
	check_both(b, &in, 1, ref, 64);
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(w);
}

Test(onnx_ops, depthwise_conv_matches_reference)
{
	int64_t xd[4] = { 1, 5, 6, 6 }, wd[4] = { 5, 1, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	int p[4] = { 1, 1, 1, 1 }, s[2] = { 1, 1 }, d[2] = { 1, 1 };
	float *x = frand_arr(5 * 36), *w = frand_arr(5 * 9), ref[5 * 36];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "y");
	mb_attr_i(b, n, "group", 5);
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_output(b, "y");
	ref_conv(x, w, NULL, ref, 1, 5, 6, 6, 5, 3, 3, 5, p, s, d, 6, 6);
	tensor_f(&in, 4, xd, x);
	check_both(b, &in, 1, ref, 180);
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(w);
}

static void ref_gemm(const float *a, const float *bm, const float *c, float *y, int M, int K, int N, bool ta, bool tb,
		     float alpha, float beta, int crows, int ccols)
{
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;

			for (int k = 0; k < K; k++)
				s += (double)(ta ? a[k * M + i] : a[i * K + k]) * (tb ? bm[j * K + k] : bm[k * N + j]);
			y[i * N + j] = (float)(alpha * s +
					       (c ? beta * c[(crows == 1 ? 0 : i) * ccols + (ccols == 1 ? 0 : j)] : 0));
		}
}

static void gemm_case(bool ta, bool tb, float alpha, float beta, int crows, int ccols)
{
	enum { M = 7, K = 13, N = 9 };
	int64_t ad[2] = { ta ? K : M, ta ? M : K }, bd[2] = { tb ? N : K, tb ? K : N }, cd[2] = { crows, ccols };
	float *a = frand_arr(M * K), *bm = frand_arr(K * N), *c = frand_arr((size_t)(crows * ccols)), ref[M * N];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "b", ONNX_FLOAT, 2, bd, bm);
	mb_init(b, "c", ONNX_FLOAT, crows == 1 ? 1 : 2, crows == 1 ? cd + 1 : cd, c);
	mb_input(b, "a");
	n = mb_node(b, "Gemm", "a,b,c", "y");
	mb_attr_i(b, n, "transA", ta);
	mb_attr_i(b, n, "transB", tb);
	mb_attr_f(b, n, "alpha", alpha);
	mb_attr_f(b, n, "beta", beta);
	mb_output(b, "y");
	ref_gemm(a, bm, c, ref, M, K, N, ta, tb, alpha, beta, crows, ccols);
	tensor_f(&in, 2, ad, a);
	cr_expect_eq(check_both(b, &in, 1, ref, M * N), 1, "the Gemm ran on the device");
	onnx_tensor_release(&in);
	mb_free(b);
	free(a);
	free(bm);
	free(c);
}

Test(onnx_ops, gemm_alpha_beta_trans_and_row_bias_match_reference)
{
	gemm_case(true, true, 0.5f, 2.0f, 1, 9);
}

Test(onnx_ops, gemm_with_a_matrix_c_matches_reference)
{
	gemm_case(false, true, 1.0f, 0.75f, 7, 9);
}

Test(onnx_ops, gemm_with_a_column_c_matches_reference)
{
	gemm_case(false, false, 1.5f, 1.0f, 7, 1);
}

Test(onnx_ops, matmul_broadcasts_batches)
{
	/* A {2, 3, 4, 5} x B {3, 5, 6}: B broadcast over the leading 2 */
	int64_t ad[4] = { 2, 3, 4, 5 }, bd[3] = { 3, 5, 6 };
	float *a = frand_arr(120), *bm = frand_arr(90), ref[2 * 3 * 4 * 6];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			ref_gemm(a + (i * 3 + j) * 20, bm + j * 30, NULL, ref + (i * 3 + j) * 24, 4, 5, 6, false, false, 1, 0, 1,
				 1);
	mb_init(b, "b", ONNX_FLOAT, 3, bd, bm);
	mb_input(b, "a");
	mb_node(b, "MatMul", "a,b", "y");
	mb_output(b, "y");
	tensor_f(&in, 4, ad, a);
	check_both(b, &in, 1, ref, 144);
	onnx_tensor_release(&in);
	mb_free(b);
	free(a);
	free(bm);
}

/* An empty batch broadcasts like numpy: A {1, 2, 3} x B {0, 3, 2} is {0, 2, 2} (a 1 takes the other side's
 * size, 0 included); found by the loader fuzzer, where the 1 won and the kernel read past the empty B. */
Test(onnx_ops, matmul_broadcast_against_an_empty_batch_is_empty)
{
	int64_t ad[3] = { 1, 2, 3 }, bd[3] = { 0, 3, 2 };
	float a[6] = { 1, 2, 3, 4, 5, 6 };
	struct accel_dev *devs[2] = { dev, NULL };

	for (unsigned k = 0; k < 2; k++) {
		struct mb *b = mb_new(13);
		struct onnx_tensor in, out;

		mb_init(b, "b", ONNX_FLOAT, 3, bd, NULL);
		mb_input(b, "a");
		mb_node(b, "MatMul", "a,b", "y");
		mb_output(b, "y");
		tensor_f(&in, 3, ad, a);
		cr_assert_eq(run(b, devs[k], 0, &in, 1, &out, NULL), 0, "%s", devs[k] ? "device" : "cpu");
		cr_assert_eq(out.ndim, 3);
		cr_assert(out.dims[0] == 0 && out.dims[1] == 2 && out.dims[2] == 2, "y is {%lld, %lld, %lld}",
			  (long long)out.dims[0], (long long)out.dims[1], (long long)out.dims[2]);
		cr_assert_eq(out.count, 0);
		onnx_tensor_release(&out);
		onnx_tensor_release(&in);
		mb_free(b);
	}
}

Test(onnx_ops, relu_add_flatten_reshape_softmax_chain_matches_reference)
{
	/* y = Softmax(Reshape(Flatten(Relu(x) + bias), {0, -1})) over the last axis */
	int64_t xd[4] = { 2, 3, 2, 2 }, bd[3] = { 3, 1, 1 }, sd[1] = { 2 }, shape[2] = { 0, -1 };
	float *x = frand_arr(24), *bias = frand_arr(3), ref[24];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	for (int n = 0; n < 2; n++) {
		double mx = -INFINITY, sum = 0;
		float t[12];

		for (int i = 0; i < 12; i++) {
			float v = x[n * 12 + i];

			t[i] = (v > 0 ? v : 0) + bias[i / 4];
			mx = t[i] > mx ? t[i] : mx;
		}
		for (int i = 0; i < 12; i++)
			sum += exp(t[i] - mx);
		for (int i = 0; i < 12; i++)
			ref[n * 12 + i] = (float)(exp(t[i] - mx) / sum);
	}
	mb_init(b, "bias", ONNX_FLOAT, 3, bd, bias);
	mb_init(b, "shape", ONNX_INT64, 1, sd, shape);
	mb_input(b, "x");
	mb_node(b, "Relu", "x", "r");
	mb_node(b, "Add", "r,bias", "a");
	mb_node(b, "Flatten", "a", "f");
	mb_node(b, "Reshape", "f,shape", "s");
	mb_node(b, "Softmax", "s", "y");
	mb_output(b, "y");
	tensor_f(&in, 4, xd, x);
	cr_expect_eq(check_both(b, &in, 1, ref, 24), 2, "Relu and Softmax on the device, the rest on the host");
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(bias);
}

static void ref_pool(const float *x, float *y, int NC, int H, int W, int k, int s, int pad, bool max, bool incl, int OH,
		     int OW)
{
	for (int c = 0; c < NC; c++)
		for (int oy = 0; oy < OH; oy++)
			for (int ox = 0; ox < OW; ox++) {
				double acc = max ? -INFINITY : 0;
				int cnt = 0;

				for (int r = 0; r < k; r++)
					for (int q = 0; q < k; q++) {
						int iy = oy * s - pad + r, ix = ox * s - pad + q;

						if (iy < 0 || ix < 0 || iy >= H || ix >= W) {
							cnt += incl;
							continue;
						}
						float v = x[(c * H + iy) * W + ix];

						acc = max ? (v > acc ? v : acc) : acc + v;
						cnt++;
					}
				y[(c * OH + oy) * OW + ox] = (float)(max ? acc : acc / cnt);
			}
}

static void pool_case(const char *op, bool max, bool incl)
{
	int64_t xd[4] = { 2, 3, 7, 7 }, ks[2] = { 3, 3 }, st[2] = { 2, 2 }, pads[4] = { 1, 1, 1, 1 };
	float *x = frand_arr(2 * 3 * 49), ref[2 * 3 * 16];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_input(b, "x");
	n = mb_node(b, op, "x", "y");
	mb_attr_ints(b, n, "kernel_shape", ks, 2);
	mb_attr_ints(b, n, "strides", st, 2);
	mb_attr_ints(b, n, "pads", pads, 4);
	if (!max)
		mb_attr_i(b, n, "count_include_pad", incl);
	mb_output(b, "y");
	ref_pool(x, ref, 6, 7, 7, 3, 2, 1, max, incl, 4, 4);
	tensor_f(&in, 4, xd, x);
	/* an average that does not count the padding: the vector units' AVG_EXCL_PAD */
	cr_expect_eq(check_both(b, &in, 1, ref, 96), 1u, "on the device");
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
}

Test(onnx_ops, maxpool_matches_reference)
{
	pool_case("MaxPool", true, false);
}

Test(onnx_ops, averagepool_counting_padding_runs_on_the_device)
{
	pool_case("AveragePool", false, true);
}

Test(onnx_ops, averagepool_excluding_padding_runs_on_the_vector_units)
{
	pool_case("AveragePool", false, false);
}

Test(onnx_ops, global_average_pool_matches_reference)
{
	int64_t xd[4] = { 2, 4, 5, 3 };
	float *x = frand_arr(120), ref[8];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	for (int c = 0; c < 8; c++) {
		double s = 0;

		for (int i = 0; i < 15; i++)
			s += x[c * 15 + i];
		ref[c] = (float)(s / 15);
	}
	mb_input(b, "x");
	mb_node(b, "GlobalAveragePool", "x", "y");
	mb_output(b, "y");
	tensor_f(&in, 4, xd, x);
	cr_expect_eq(check_both(b, &in, 1, ref, 8), 1);
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
}

Test(onnx_ops, batchnorm_is_folded_into_the_conv_and_matches_reference)
{
	int64_t xd[4] = { 1, 2, 5, 5 }, wd[4] = { 3, 2, 3, 3 }, kd[1] = { 3 };
	int p[4] = { 0, 0, 0, 0 }, s[2] = { 1, 1 }, d[2] = { 1, 1 };
	float *x = frand_arr(50), *w = frand_arr(54), *bias = frand_arr(3), sc[3] = { 0.5f, 2.0f, -1.0f };
	float bb[3] = { 0.1f, -0.2f, 0.3f }, mu[3] = { 0.05f, -0.1f, 0.2f }, var[3] = { 0.9f, 1.5f, 0.25f }, ref[27];
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor in, out;
	char err[256];
	size_t len;

	ref_conv(x, w, bias, ref, 1, 2, 5, 5, 3, 3, 3, 1, p, s, d, 3, 3);
	for (int i = 0; i < 27; i++) {
		int k = i / 9;

		ref[i] = (float)((ref[i] - mu[k]) / sqrt(var[k] + 1e-3) * sc[k] + bb[k]);
	}
	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_init(b, "b", ONNX_FLOAT, 1, kd, bias);
	mb_init(b, "sc", ONNX_FLOAT, 1, kd, sc);
	mb_init(b, "bb", ONNX_FLOAT, 1, kd, bb);
	mb_init(b, "mu", ONNX_FLOAT, 1, kd, mu);
	mb_init(b, "var", ONNX_FLOAT, 1, kd, var);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w,b", "c");
	mb_attr_f(b, mb_node(b, "BatchNormalization", "c,sc,bb,mu,var", "y"), "epsilon", 1e-3f);
	mb_output(b, "y");
	const uint8_t *buf = mb_pack(b, &len);

	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(onnx_model_n_folded(m), 1);
	cr_expect_eq(onnx_model_n_nodes(m), 1);
	onnx_model_free(m);
	tensor_f(&in, 4, xd, x);
	cr_expect_eq(check_both(b, &in, 1, ref, 27), 1);	/* folded: one device node */
	cr_assert_eq(run(b, NULL, ONNX_LOAD_NO_FOLD, &in, 1, &out, NULL), 0);	/* BN as its own node */
	expect_close(&out, ref, 27, "unfolded cpu");
	onnx_tensor_release(&out);
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(w);
	free(bias);
}

Test(onnx_ops, qlinearconv_int8_runs_on_the_device_and_matches_reference)
{
	enum { C = 3, H = 6, W = 6, K = 4 };
	int64_t xd[4] = { 1, C, H, W }, wd[4] = { K, C, 3, 3 }, one[1] = { 1 }, kd[1] = { K }, pads[4] = { 1, 1, 1, 1 };
	uint8_t x[C * H * W], xzp = 120, yzp = 128;
	int8_t w[K * C * 9], wzp = 0;
	int32_t bias[K];
	float xs = 0.02f, ws[K] = { 0.01f, 0.015f, 0.02f, 0.005f }, ys = 0.1f;
	uint8_t ref[K * H * W];
	struct mb *b = mb_new(13);
	struct onnx_tensor in, out;
	struct onnx_run_stats st;

	for (size_t i = 0; i < sizeof(x); i++)
		x[i] = (uint8_t)irand(0, 255);
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = (int8_t)irand(-127, 127);
	for (int k = 0; k < K; k++)
		bias[k] = irand(-500, 500);
	for (int k = 0; k < K; k++)
		for (int oy = 0; oy < H; oy++)
			for (int ox = 0; ox < W; ox++) {
				int32_t acc = bias[k];

				for (int c = 0; c < C; c++)
					for (int r = 0; r < 3; r++)
						for (int q = 0; q < 3; q++) {
							int iy = oy - 1 + r, ix = ox - 1 + q;

							if (iy >= 0 && iy < H && ix >= 0 && ix < W)
								acc += (x[(c * H + iy) * W + ix] - xzp) * w[((k * C + c) * 3 + r) * 3 + q];
						}
				double v = rint(acc * ((double)xs * ws[k] / ys)) + yzp;

				ref[(k * H + oy) * W + ox] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
	mb_init(b, "xs", ONNX_FLOAT, 0, one, &xs);
	mb_init(b, "xzp", ONNX_UINT8, 0, one, &xzp);
	mb_init(b, "w", ONNX_INT8, 4, wd, w);
	mb_init(b, "ws", ONNX_FLOAT, 1, kd, ws);
	mb_init(b, "wzp", ONNX_INT8, 0, one, &wzp);
	mb_init(b, "ys", ONNX_FLOAT, 0, one, &ys);
	mb_init(b, "yzp", ONNX_UINT8, 0, one, &yzp);
	mb_init(b, "bias", ONNX_INT32, 1, kd, bias);
	mb_input(b, "x");
	mb_attr_ints(b, mb_node(b, "QLinearConv", "x,xs,xzp,w,ws,wzp,ys,yzp,bias", "y"), "pads", pads, 4);
	mb_output(b, "y");
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_UINT8, 4, xd), 0);
	memcpy(in.data, x, sizeof(x));
	cr_assert_eq(run(b, dev, 0, &in, 1, &out, &st), 0);
	cr_expect_eq(st.accel_nodes, 1);
	cr_assert_eq(out.dtype, ONNX_UINT8);
	cr_expect_arr_eq(out.data, ref, sizeof(ref));
	onnx_tensor_release(&out);
	cr_assert_eq(run(b, NULL, 0, &in, 1, &out, NULL), 0);
	cr_expect_arr_eq(out.data, ref, sizeof(ref));
	onnx_tensor_release(&out);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops, matmulinteger_uint8_weights_beyond_int8_split_into_two_passes)
{
	enum { M = 5, K = 11, N = 7 };
	int64_t ad[2] = { M, K }, bd[2] = { K, N }, one[1] = { 1 };
	uint8_t a[M * K], bm[K * N], azp = 3, bzp = 130;
	int32_t ref[M * N];
	struct mb *b = mb_new(13);
	struct onnx_tensor in, out;
	struct onnx_run_stats st;

	for (int i = 0; i < M * K; i++)
		a[i] = (uint8_t)irand(0, 255);
	for (int i = 0; i < K * N; i++)
		bm[i] = (uint8_t)irand(0, 255);
	bm[3] = 0;	/* b - 130 = -130 leaves int8: two device passes */
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			int32_t s = 0;

			for (int k = 0; k < K; k++)
				s += (a[i * K + k] - azp) * (bm[k * N + j] - bzp);
			ref[i * N + j] = s;
		}
	mb_init(b, "b", ONNX_UINT8, 2, bd, bm);
	mb_init(b, "azp", ONNX_UINT8, 0, one, &azp);
	mb_init(b, "bzp", ONNX_UINT8, 0, one, &bzp);
	mb_input(b, "a");
	mb_node(b, "MatMulInteger", "a,b,azp,bzp", "y");
	mb_output(b, "y");
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_UINT8, 2, ad), 0);
	memcpy(in.data, a, sizeof(a));
	cr_assert_eq(run(b, dev, 0, &in, 1, &out, &st), 0);
	cr_expect_eq(st.accel_nodes, 1);
	cr_assert_eq(out.dtype, ONNX_INT32);
	cr_expect_arr_eq(out.data, ref, sizeof(ref));
	onnx_tensor_release(&out);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* 3-D convolution (issue 30) runs on the device with a device open (ops_accel_nd.c: one conv2d with the depth
 * taps as channels).  A 1x1x1 kernel of weight 2 doubles each input. */
Test(onnx_ops, conv3d_runs_on_the_device)
{
	int64_t xd[5] = { 1, 1, 3, 3, 3 }, wd[5] = { 1, 1, 1, 1, 1 };
	float w = 2, x[27];
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor in, out;
	struct onnx_run_stats st;
	char err[256];
	size_t len;
	const uint8_t *buf;

	for (int i = 0; i < 27; i++)
		x[i] = (float)i - 13;
	mb_init(b, "w", ONNX_FLOAT, 5, wd, &w);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0);
	tensor_f(&in, 5, xd, x);
	cr_assert_eq(onnx_run(m, dev, &in, 1, &out, 1, &st), 0, "%s", onnx_model_error(m));
	cr_expect_eq(st.accel_nodes, 1);
	cr_expect_eq(st.host_nodes, 0);
	for (int i = 0; i < 27; i++)
		cr_expect_eq(((float *)out.data)[i], 2 * x[i], "[%d]", i);
	onnx_tensor_release(&out);
	onnx_tensor_release(&in);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_ops, run_rejects_a_wrong_number_of_inputs)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor out;
	char err[256];
	size_t len;
	const uint8_t *buf;

	mb_input(b, "x");
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0);
	cr_expect_eq(onnx_run(m, dev, NULL, 0, &out, 1, NULL), -EINVAL);
	cr_expect(strstr(onnx_model_error(m), "1 inputs, 0 given"), "message: %s", onnx_model_error(m));
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_ops, mismatched_shapes_are_an_error_not_a_crash)
{
	int64_t ad[2] = { 2, 3 }, bd[2] = { 4, 5 };
	float bm[20] = { 0 }, a[6] = { 0 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in, out;

	mb_init(b, "b", ONNX_FLOAT, 2, bd, bm);
	mb_input(b, "a");
	mb_node(b, "MatMul", "a,b", "y");
	mb_output(b, "y");
	tensor_f(&in, 2, ad, a);
	cr_expect_eq(run(b, dev, 0, &in, 1, &out, NULL), -EINVAL);
	cr_expect_eq(run(b, NULL, 0, &in, 1, &out, NULL), -EINVAL);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops, relu_after_conv_and_gemm_is_fused_and_matches_reference)
{
	/* x -> Conv -> Relu -> Flatten -> Gemm(C row) -> Relu */
	int64_t xd[4] = { 2, 2, 5, 5 }, wd[4] = { 3, 2, 3, 3 }, gd[2] = { 27, 4 }, cd[1] = { 4 };
	int p[4] = { 0, 0, 0, 0 }, s[2] = { 1, 1 }, d[2] = { 1, 1 };
	float *x = frand_arr(100), *w = frand_arr(54), *gw = frand_arr(108), *gc = frand_arr(4), conv[54], ref[8];
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor in;
	char err[256];
	size_t len;
	const uint8_t *buf;

	ref_conv(x, w, NULL, conv, 2, 2, 5, 5, 3, 3, 3, 1, p, s, d, 3, 3);
	for (int i = 0; i < 54; i++)
		conv[i] = conv[i] > 0 ? conv[i] : 0;
	ref_gemm(conv, gw, gc, ref, 2, 27, 4, false, false, 1, 1, 1, 4);
	for (int i = 0; i < 8; i++)
		ref[i] = ref[i] > 0 ? ref[i] : 0;
	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_init(b, "gw", ONNX_FLOAT, 2, gd, gw);
	mb_init(b, "gc", ONNX_FLOAT, 1, cd, gc);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w", "c");
	mb_node(b, "Relu", "c", "r");
	mb_node(b, "Flatten", "r", "f");
	mb_node(b, "Gemm", "f,gw,gc", "g");
	mb_node(b, "Relu", "g", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 3, "both Relus fused");
	onnx_model_free(m);
	tensor_f(&in, 4, xd, x);
	cr_expect_eq(check_both(b, &in, 1, ref, 8), 2, "Conv and Gemm on the device, Flatten on the host");
	onnx_tensor_release(&in);
	mb_free(b);
	free(x);
	free(w);
	free(gw);
	free(gc);
}
