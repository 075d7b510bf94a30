/* SPDX-License-Identifier: MIT */
/*
 * ACCEL_SUBMIT_KEEP and accel_job_replay: a kept job's commands run again on new buffer contents and
 * give what a fresh lowering of the same operation gives (checked against plain-C references and
 * against the fresh job), chained by dependencies, after the job they came from is freed (the
 * library's constants live on), and refused with a clear error where a replay would be wrong.
 */
#include "common.h"

#define M 37
#define K 45
#define N 29

static void gemm_ref(const float *a, const float *b, float *c)
{
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float s = 0;

			for (int k = 0; k < K; k++)
				s += a[i * K + k] * b[k * N + j];
			c[i * N + j] = s;
		}
}

struct gemm_fix {
	struct accel_dev *dev;
	struct accel_buffer *ba, *bb, *bc;
	struct accel_tensor a, b, c;
	struct accel_gemm_desc d;
	uint64_t seed;
};

static void gemm_fix_init(struct gemm_fix *f)
{
	memset(f, 0, sizeof(*f));
	f->seed = 0x5eed0001;
	f->dev = open_dev(NULL);
	f->ba = alloc_buf(f->dev, M * K * 4);
	f->bb = alloc_buf(f->dev, K * N * 4);
	f->bc = alloc_buf(f->dev, M * N * 4);
	fill_f32(accel_buffer_ptr(f->ba), M * K, &f->seed);
	fill_f32(accel_buffer_ptr(f->bb), K * N, &f->seed);
	accel_tensor_2d(f->ba, 0, ACCEL_FP32, M, K, &f->a);
	accel_tensor_2d(f->bb, 0, ACCEL_FP32, K, N, &f->b);
	accel_tensor_2d(f->bc, 0, ACCEL_FP32, M, N, &f->c);
	f->d.a = &f->a;
	f->d.b = &f->b;
	f->d.c = &f->c;
}

static void gemm_fix_fini(struct gemm_fix *f)
{
	accel_buffer_free(f->ba);
	accel_buffer_free(f->bb);
	accel_buffer_free(f->bc);
	accel_close(f->dev);
}

/* C against the reference of the buffers' current A and B (values k/32: exact in fp32). */
static void check_gemm(struct gemm_fix *f, const char *what)
{
	float ref[M * N];
	const float *c = accel_buffer_ptr(f->bc);

	gemm_ref(accel_buffer_ptr(f->ba), accel_buffer_ptr(f->bb), ref);
	for (int i = 0; i < M * N; i++)
		cr_assert_eq(c[i], ref[i], "%s: C[%d] = %g, reference %g", what, i, c[i], ref[i]);
}

static void wait_ok(struct accel_dev *dev, struct accel_job *j)
{
	cr_assert_eq(accel_job_wait(j, -1), 0, "%s", accel_last_error(dev));
}

Test(replay, gemm_runs_again_on_new_data)
{
	struct gemm_fix f;
	struct accel_submit keep = { .flags = ACCEL_SUBMIT_KEEP };
	struct accel_job *t = NULL, *r = NULL;
	struct accel_counters ct, cr;

	gemm_fix_init(&f);
	cr_assert_eq(accel_gemm(f.dev, &f.d, &keep, &t), 0, "%s", accel_last_error(f.dev));
	wait_ok(f.dev, t);
	check_gemm(&f, "the kept job");
	for (int round = 0; round < 3; round++) {
		fill_f32(accel_buffer_ptr(f.ba), M * K, &f.seed);
		fill_f32(accel_buffer_ptr(f.bb), K * N, &f.seed);
		memset(accel_buffer_ptr(f.bc), 0x7f, M * N * 4);
		cr_assert_eq(accel_job_replay(t, NULL, &r), 0, "%s", accel_last_error(f.dev));
		wait_ok(f.dev, r);
		check_gemm(&f, "a replay");
		/* the same commands: the same device work */
		cr_assert_eq(accel_job_counters(t, &ct), 0);
		cr_assert_eq(accel_job_counters(r, &cr), 0);
		cr_assert_eq(cr.total_cycles, ct.total_cycles);
		cr_assert_eq(cr.macs_dense, ct.macs_dense);
		cr_assert_eq(cr.hw_jobs, ct.hw_jobs);
		accel_job_free(r);
	}
	accel_job_free(t);
	gemm_fix_fini(&f);
}

/* A replay depends on the jobs in its accel_submit, and on nothing else: a chain of replays of
 * C = A x B then A' = f(C) runs in order (each reads what the one before wrote). */
Test(replay, chained_replays_follow_their_dependencies)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *bx = alloc_buf(dev, 4096 * 4), *by = alloc_buf(dev, 4096 * 4);
	struct accel_tensor x, y;
	struct accel_activation_desc relu = { .input = &x, .output = &y, .act = ACCEL_ACT_RELU };
	struct accel_activation_desc back = { .input = &y, .output = &x, .act = ACCEL_ACT_CLAMP };
	struct accel_submit keep = { .flags = ACCEL_SUBMIT_KEEP };
	struct accel_job *t1 = NULL, *t2 = NULL, *prev = NULL;
	float *px = accel_buffer_ptr(bx), *py = accel_buffer_ptr(by), ref[4096];
	uint64_t seed = 7;

	accel_tensor_2d(bx, 0, ACCEL_FP32, 64, 64, &x);
	accel_tensor_2d(by, 0, ACCEL_FP32, 64, 64, &y);
	back.clamp_lo_f = -0.5f;
	back.clamp_hi_f = 1.0f;
	fill_f32(px, 4096, &seed);
	cr_assert_eq(accel_activation(dev, &relu, &keep, &t1), 0, "%s", accel_last_error(dev));
	{
		struct accel_submit after = { .deps = &t1, .n_deps = 1, .flags = ACCEL_SUBMIT_KEEP };

		cr_assert_eq(accel_activation(dev, &back, &after, &t2), 0, "%s", accel_last_error(dev));
	}
	wait_ok(dev, t2);
	/* x -> relu -> clamp[-0.5, 1] (the relu makes the low bound idle) */
	fill_f32(px, 4096, &seed);
	for (int i = 0; i < 4096; i++)
		ref[i] = px[i] < 0 ? 0 : px[i] > 1 ? 1 : px[i];
	for (int round = 0; round < 4; round++) {
		struct accel_job *a = NULL, *b = NULL;
		struct accel_submit s1 = { .deps = &prev, .n_deps = prev ? 1 : 0 };
		struct accel_submit s2 = { .deps = &a, .n_deps = 1 };

		cr_assert_eq(accel_job_replay(t1, &s1, &a), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_replay(t2, &s2, &b), 0, "%s", accel_last_error(dev));
		accel_job_free(prev);
		accel_job_free(a);
		prev = b;
	}
	wait_ok(dev, prev);
	/* relu and the clamp are idempotent together: four rounds give the first round's result */
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(px[i], ref[i], "x[%d] = %g, reference %g", i, px[i], ref[i]);
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(py[i], ref[i] < 0 ? 0 : ref[i], "y[%d]", i);
	accel_job_free(prev);
	accel_job_free(t1);
	accel_job_free(t2);
	accel_buffer_free(bx);
	accel_buffer_free(by);
	accel_close(dev);
}

/* The library's own constants (here the average pool's 1/RS weights) belong to the commands, not to
 * the first job: a replay of a replay still reads them after the first job is freed. */
Test(replay, constants_outlive_the_first_job)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t C = 8, H = 12, W = 10;
	struct accel_buffer *bi = alloc_buf(dev, C * H * W * 4), *bo = alloc_buf(dev, C * (H / 2) * (W / 2) * 4);
	struct accel_tensor in, out;
	struct accel_pool2d_desc d = { .input = &in, .output = &out, .kind = ACCEL_POOL_AVG, .win_h = 2, .win_w = 2,
				       .stride_h = 2, .stride_w = 2 };
	struct accel_submit keep = { .flags = ACCEL_SUBMIT_KEEP };
	struct accel_job *t = NULL, *r1 = NULL, *r2 = NULL;
	float *pi = accel_buffer_ptr(bi), *po = accel_buffer_ptr(bo);
	uint64_t seed = 11;

	accel_tensor_4d(bi, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, C, H, W, &in);
	accel_tensor_4d(bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, C, H / 2, W / 2, &out);
	fill_f32(pi, C * H * W, &seed);
	cr_assert_eq(accel_pool2d(dev, &d, &keep, &t), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_replay(t, NULL, &r1), 0, "%s", accel_last_error(dev));
	accel_job_free(t);
	wait_ok(dev, r1);
	fill_f32(pi, C * H * W, &seed);
	memset(po, 0, C * (H / 2) * (W / 2) * 4);
	cr_assert_eq(accel_job_replay(r1, NULL, &r2), 0, "%s", accel_last_error(dev));
	accel_job_free(r1);
	wait_ok(dev, r2);
	for (uint32_t c = 0; c < C; c++)
		for (uint32_t y = 0; y < H / 2; y++)
			for (uint32_t x = 0; x < W / 2; x++) {
				const float *p = pi + (c * H + 2 * y) * W + 2 * x;
				float ref = (p[0] + p[1] + p[W] + p[W + 1]) * 0.25f, got = po[(c * H / 2 + y) * (W / 2) + x];

				cr_assert_float_eq(got, ref, 1e-6f, "out[%u,%u,%u] = %g, reference %g", c, y, x, got, ref);
			}
	accel_job_free(r2);
	accel_buffer_free(bi);
	accel_buffer_free(bo);
	accel_close(dev);
}

/* A convolution's replay is bit-identical to lowering it again on the same new data. */
Test(replay, conv_matches_a_fresh_lowering)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t n = 2, c = 16, h = 14, w = 14, k = 24;
	struct accel_buffer *bi = alloc_buf(dev, n * c * h * w), *bw = alloc_buf(dev, k * c * 9),
			    *b1 = alloc_buf(dev, n * k * h * w), *b2 = alloc_buf(dev, n * k * h * w);
	struct accel_tensor in, wt, o1, o2;
	struct accel_conv2d_desc d = { .input = &in, .weights = &wt, .output = &o1, .stride_h = 1, .stride_w = 1,
				       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .dil_h = 1,
				       .dil_w = 1, .groups = 1 };
	struct accel_submit keep = { .flags = ACCEL_SUBMIT_KEEP };
	struct accel_job *t = NULL, *r = NULL;
	uint64_t seed = 13;

	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, n, c, h, w, &in);
	accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, k, c, 3, 3, &wt);
	accel_tensor_4d(b1, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, n, k, h, w, &o1);
	accel_tensor_4d(b2, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, n, k, h, w, &o2);
	d.epi.multiplier = 1 << 20;
	d.epi.shift = 27;
	fill_i8(accel_buffer_ptr(bi), n * c * h * w, &seed);
	fill_i8(accel_buffer_ptr(bw), k * c * 9, &seed);
	cr_assert_eq(accel_conv2d(dev, &d, &keep, &t), 0, "%s", accel_last_error(dev));
	wait_ok(dev, t);
	fill_i8(accel_buffer_ptr(bi), n * c * h * w, &seed);
	fill_i8(accel_buffer_ptr(bw), k * c * 9, &seed);
	cr_assert_eq(accel_job_replay(t, NULL, &r), 0, "%s", accel_last_error(dev));
	wait_ok(dev, r);
	d.output = &o2;
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(memcmp(accel_buffer_ptr(b1), accel_buffer_ptr(b2), n * k * h * w), 0,
		     "the replay's output differs from a fresh lowering's");
	accel_job_free(r);
	accel_job_free(t);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(b1);
	accel_buffer_free(b2);
	accel_close(dev);
}

Test(replay, refused_where_it_would_be_wrong)
{
	struct gemm_fix f;
	struct accel_submit keep = { .flags = ACCEL_SUBMIT_KEEP };
	struct accel_job *t = NULL, *plain = NULL, *r = NULL;
	struct accel_buffer *other;
	struct accel_tensor a2;

	gemm_fix_init(&f);
	cr_assert_eq(accel_job_replay(NULL, NULL, &r), -EINVAL);
	cr_assert_eq(accel_gemm(f.dev, &f.d, NULL, &plain), 0, "%s", accel_last_error(f.dev));
	cr_assert_eq(accel_job_replay(plain, NULL, &r), -EOPNOTSUPP, "a job submitted without KEEP");
	cr_assert(strstr(accel_last_error(f.dev), "ACCEL_SUBMIT_KEEP"), "%s", accel_last_error(f.dev));
	cr_assert_null(r);
	cr_assert_eq(accel_gemm(f.dev, &f.d, &keep, &t), 0, "%s", accel_last_error(f.dev));
	cr_assert_eq(accel_job_replay(t, NULL, NULL), -EINVAL);
	{
		struct accel_submit bad = { .flags = 0x80 };

		cr_assert_eq(accel_job_replay(t, &bad, &r), -EINVAL, "unknown submit flags");
		cr_assert_null(r);
	}
	/* automatic routing picked its path from the first data; the replay is exact on other data */
	{
		struct accel_job *au = NULL;

		cr_assert_eq(accel_auto_gemm(f.dev, &f.d, NULL, &keep, &au, NULL), 0, "%s", accel_last_error(f.dev));
		wait_ok(f.dev, au);
		memset(accel_buffer_ptr(f.ba), 0, M * K * 4 / 2);	/* half of A zero: another density */
		cr_assert_eq(accel_job_replay(au, NULL, &r), 0, "%s", accel_last_error(f.dev));
		wait_ok(f.dev, r);
		check_gemm(&f, "a replay of accel_auto_gemm");
		accel_job_free(au);
		accel_job_free(r);
		r = NULL;
	}
	/* a buffer the commands use is freed (a new one may take its address): -ESTALE, nothing runs */
	wait_ok(f.dev, t);
	accel_buffer_free(f.ba);
	other = alloc_buf(f.dev, M * K * 4);
	accel_tensor_2d(other, 0, ACCEL_FP32, M, K, &a2);
	cr_assert_eq(accel_job_replay(t, NULL, &r), -ESTALE);
	cr_assert(strstr(accel_last_error(f.dev), "freed"), "%s", accel_last_error(f.dev));
	cr_assert_null(r);
	f.ba = other;
	accel_job_free(plain);
	accel_job_free(t);
	gemm_fix_fini(&f);
}
