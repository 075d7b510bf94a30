/* SPDX-License-Identifier: MIT */
/* Device, buffers, tensors, jobs, builders and argument validation. */
#include "common.h"

#define ASSERT_ERR(call, err)                                                                              \
	do {                                                                                               \
		int r_ = (call);                                                                           \
		cr_assert_eq(r_, (err), "%s returned %d (%s), expected %d; message: %s", #call, r_,       \
			     accel_strerror(r_), (err), accel_last_error(dev));                            \
		cr_assert_neq(accel_last_error(dev)[0], 0, "%s: no error message", #call);               \
	} while (0)

Test(api, open_nonexistent_device_fails_with_message)
{
	struct accel_dev *dev = (struct accel_dev *)0x1;
	int ret = accel_open("/dev/accel/does-not-exist", &dev);

	char msg[256];

	cr_assert_eq(ret, -ENOENT, "got %d", ret);
	cr_assert_null(dev);
	cr_assert_str_neq(accel_strerror(ret), "");
	cr_assert_eq(accel_open_msg("/dev/accel/does-not-exist", msg, sizeof(msg), &dev), -ENOENT);
	cr_assert_not_null(strstr(msg, "/dev/accel/does-not-exist"), "message: %s", msg);
	/* A file that is not a tnpu DRM node is refused with a clear message. */
	cr_assert_eq(accel_open_msg("/dev/null", msg, sizeof(msg), &dev), -ENODEV);
	cr_assert_not_null(strstr(msg, "not a tnpu device"), "message: %s", msg);
}

Test(api, open_rejects_bad_sim_options)
{
	struct accel_dev *dev = NULL;

	cr_assert_eq(accel_open("sim:rows=0", &dev), -EINVAL);
	cr_assert_eq(accel_open("sim:bogus=1", &dev), -EINVAL);
	cr_assert_eq(accel_open("sim:rows", &dev), -EINVAL);
	cr_assert_eq(accel_open("sim:sram=1000", &dev), -EINVAL);
	cr_assert_eq(accel_open(NULL, NULL), -EINVAL);
}

Test(api, open_null_uses_accel_device_env)
{
	struct accel_dev *dev = NULL;
	struct accel_caps caps;

	if (!test_is_sim())
		cr_skip_test("needs the sim backend");
	setenv("ACCEL_DEVICE", "sim:rows=2,cols=3,pes=5", 1);
	cr_assert_eq(accel_open(NULL, &dev), 0);
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	cr_assert_str_eq(caps.backend, "sim");
	cr_assert_eq(caps.rows, 2);
	cr_assert_eq(caps.cols, 3);
	cr_assert_eq(caps.pes, 5);
	accel_close(dev);
	setenv("ACCEL_DEVICE", "/nonexistent/accel", 1);
	cr_assert_eq(accel_open(NULL, &dev), -ENOENT);
}

Test(api, buffers_and_tensors_are_validated)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = NULL;
	struct accel_tensor t;
	uint64_t ext;

	ASSERT_ERR(accel_buffer_alloc(dev, 0, &b), -EINVAL);
	b = alloc_buf(dev, 100);
	cr_assert_not_null(accel_buffer_ptr(b));
	cr_assert_eq(accel_buffer_size(b), 100);
	cr_assert_neq(accel_buffer_va(b), 0);
	cr_assert_eq(((uint8_t *)accel_buffer_ptr(b))[99], 0, "buffers start zeroed");
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 10, 10, &t), 0);
	cr_assert_eq(accel_tensor_check(&t), 0);
	cr_assert_eq(accel_tensor_extent(&t, &ext), 0);
	cr_assert_eq(ext, 100);
	cr_assert_eq(accel_tensor_2d(b, 1, ACCEL_INT8, 10, 10, &t), 0);
	cr_assert_eq(accel_tensor_check(&t), -ERANGE);
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 0, 10, &t), -EINVAL);
	cr_assert_eq(accel_tensor_2d(b, 0, (enum accel_dtype)9, 1, 1, &t), -EINVAL);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_ROWMAJOR, 1, 1, 1, 1, &t), -EINVAL);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, 5, 2, 2, &t), 0);
	cr_assert_eq(accel_tensor_check(&t), 0);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, 5, 3, 2, &t), 0);
	cr_assert_eq(accel_tensor_check(&t), -ERANGE);
	accel_buffer_free(b);
	accel_buffer_free(NULL);
	accel_close(dev);
}

/* Issue #27 B5: a failed constructor leaves *out all-zero (never the caller's stale bytes), so a
 * caller that misses the error hands the operation a tensor without a buffer: a clean -EINVAL, not a
 * dereference of a garbage buf pointer. */
static bool all_zero(const struct accel_tensor *t)
{
	static const struct accel_tensor z;

	return !memcmp(t, &z, sizeof(z));
}

Test(api, tensor_constructors_zero_the_tensor_on_failure)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = alloc_buf(dev, 4 * 8 * 8 * 4), *bw = alloc_buf(dev, 6 * 4 * 9);
	struct accel_buffer *bo = alloc_buf(dev, 6 * 64 * 4);
	struct accel_tensor t, W, O;
	struct accel_conv2d_desc d;

#define GARBAGE(t) memset(&(t), 0xA5, sizeof(t))	/* an uninitialised stack tensor */
	GARBAGE(t);
	cr_assert_eq(accel_tensor_2d(NULL, 0, ACCEL_INT8, 1, 1, &t), -EINVAL);
	cr_assert(all_zero(&t), "2d, buf NULL");
	GARBAGE(t);
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 0, 10, &t), -EINVAL);
	cr_assert(all_zero(&t), "2d, rows 0");
	GARBAGE(t);
	cr_assert_eq(accel_tensor_2d(b, 0, (enum accel_dtype)9, 1, 1, &t), -EINVAL);
	cr_assert(all_zero(&t), "2d, unknown dtype");
	GARBAGE(t);
	cr_assert_eq(accel_tensor_4d(NULL, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 1, 1, 1, &t), -EINVAL);
	cr_assert(all_zero(&t), "4d, buf NULL");
	GARBAGE(t);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 0, 4, 8, 8, &t), -EINVAL);
	cr_assert(all_zero(&t), "4d, batch 0");
	GARBAGE(t);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_ROWMAJOR, 1, 1, 1, 1, &t), -EINVAL);
	cr_assert(all_zero(&t), "4d, 2-D layout");
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 1, 1, NULL), -EINVAL);
	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 1, 1, 1, NULL), -EINVAL);

	/* the batch-0 input of a convolution whose caller ignored the constructor's error */
	GARBAGE(t);
	(void)accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 0, 4, 8, 8, &t);
	cr_assert_eq(accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 6, 4, 3, 3, &W), 0);
	cr_assert_eq(accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, 6, 8, 8, &O), 0);
	memset(&d, 0, sizeof(d));
	d.input = &t;
	d.weights = &W;
	d.output = &O;
	d.stride_h = d.stride_w = d.dil_h = d.dil_w = d.groups = 1;
	d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "no buffer") != NULL, "%s", accel_last_error(dev));
#undef GARBAGE
	accel_buffer_free(b);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_close(dev);
}

struct gemm_fix {
	struct accel_buffer *ba, *bb, *bc, *bbias;
	struct accel_tensor A, B, C, BIAS;
	struct accel_gemm_desc d;
};

static void gemm_fix_init(struct accel_dev *dev, struct gemm_fix *f, uint32_t m, uint32_t n, uint32_t k)
{
	memset(f, 0, sizeof(*f));
	f->ba = alloc_buf(dev, (uint64_t)m * k);
	f->bb = alloc_buf(dev, (uint64_t)k * n);
	f->bc = alloc_buf(dev, (uint64_t)m * n * 4);
	f->bbias = alloc_buf(dev, (uint64_t)n * 4);
	accel_tensor_2d(f->ba, 0, ACCEL_INT8, m, k, &f->A);
	accel_tensor_2d(f->bb, 0, ACCEL_INT8, k, n, &f->B);
	accel_tensor_2d(f->bc, 0, ACCEL_INT32, m, n, &f->C);
	accel_tensor_2d(f->bbias, 0, ACCEL_INT32, 1, n, &f->BIAS);
	f->d.a = &f->A;
	f->d.b = &f->B;
	f->d.c = &f->C;
}

static void gemm_fix_fini(struct gemm_fix *f)
{
	accel_buffer_free(f->ba);
	accel_buffer_free(f->bb);
	accel_buffer_free(f->bc);
	accel_buffer_free(f->bbias);
}

Test(api, gemm_rejects_every_bad_argument)
{
	struct accel_dev *dev = open_dev(NULL), *dev2 = open_dev(NULL);
	struct gemm_fix f;
	struct accel_gemm_desc d;
	struct accel_tensor t;
	struct accel_buffer *other = alloc_buf(dev2, 4096);

	gemm_fix_init(dev, &f, 8, 6, 4);
	cr_assert_eq(accel_gemm(NULL, &f.d, NULL, NULL), -EINVAL);
	ASSERT_ERR(accel_gemm(dev, NULL, NULL, NULL), -EINVAL);
	d = f.d; d.a = NULL;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.trans_a = true;					/* op(A) 4x8 vs B 4x6 */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.trans_b = true;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.C; t.shape[1] = 5; d = f.d; d.c = &t;			/* C shape */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.B; t.dtype = ACCEL_FP32; t.strides[1] = 4; t.strides[0] = 24; d = f.d; d.b = &t;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -ERANGE);		/* fp32 view overflows the buffer */
	t = f.A; t.strides[1] = 2; d = f.d; d.a = &t;			/* non-contiguous columns */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);		/* named as such, not as a range error */
	cr_assert_not_null(strstr(accel_last_error(dev), "inner stride 2"), "%s", accel_last_error(dev));
	t = f.A; t.shape[0] = 4; t.strides[1] = 2; t.strides[0] = 8; d = f.d; d.a = &t;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.A; t.buf = other; d = f.d; d.a = &t;			/* foreign buffer */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.A; t.ndim = 3; d = f.d; d.a = &t;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.C; t.dtype = ACCEL_FP32; d = f.d; d.c = &t;		/* int8 in, fp32 out */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.epi.multiplier = 5;					/* requant without int8 output */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.C; t.dtype = ACCEL_INT8; t.strides[0] = 6; t.strides[1] = 1; d = f.d; d.c = &t;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);		/* int8 output without multiplier */
	d.epi.multiplier = 1 << 20; d.epi.shift = 63;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d.epi.shift = 20; d.epi.zero_point = 300;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.epi.act = (enum accel_act)7;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.epi.act = ACCEL_ACT_CLAMP; d.epi.clamp_lo_i = 5; d.epi.clamp_hi_i = 4;
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.BIAS; t.shape[1] = 5; d = f.d; d.epi.bias = &t;		/* bias length */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	t = f.BIAS; t.dtype = ACCEL_FP32; d = f.d; d.epi.bias = &t;	/* bias dtype */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	d = f.d; d.epi.scale_f = 2.0f;					/* fp32 scale on int8 */
	ASSERT_ERR(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	{
		struct accel_submit sub = { .flags = ~ACCEL_SUBMIT_KEEP };

		ASSERT_ERR(accel_gemm(dev, &f.d, &sub, NULL), -EINVAL);
		sub.flags = 0;
		sub.n_deps = 1;
		ASSERT_ERR(accel_gemm(dev, &f.d, &sub, NULL), -EINVAL);
	}
	cr_assert_eq(accel_gemm(dev, &f.d, NULL, NULL), 0, "%s", accel_last_error(dev));
	gemm_fix_fini(&f);
	accel_buffer_free(other);
	accel_close(dev2);
	accel_close(dev);
}

Test(api, conv_rejects_every_bad_argument)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *bi = alloc_buf(dev, 4 * 8 * 8 * 4), *bw = alloc_buf(dev, 6 * 4 * 9 * 4);
	struct accel_buffer *bo = alloc_buf(dev, 6 * 8 * 8 * 4);
	struct accel_tensor I, W, O, t;
	struct accel_conv2d_desc d0, d;

	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 4, 8, 8, &I);
	accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 6, 4, 3, 3, &W);
	accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, 6, 8, 8, &O);
	memset(&d0, 0, sizeof(d0));
	d0.input = &I;
	d0.weights = &W;
	d0.output = &O;
	d0.stride_h = d0.stride_w = d0.dil_h = d0.dil_w = d0.groups = 1;
	d0.pad_top = d0.pad_left = d0.pad_bottom = d0.pad_right = 1;
	cr_assert_eq(accel_conv2d(dev, &d0, NULL, NULL), 0, "%s", accel_last_error(dev));
	ASSERT_ERR(accel_conv2d(dev, NULL, NULL, NULL), -EINVAL);
	d = d0; d.stride_h = 0;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.dil_w = 0;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.groups = 0;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.groups = 3;						/* does not divide C = 4 */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.groups = 2;						/* weights have C, not C/2 */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.pad_top = 0;						/* output shape mismatch */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.pad_top = 300;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	t = W; t.layout = ACCEL_LAYOUT_NCHW; d = d0; d.weights = &t;	/* layout mismatch */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	t = I; t.dtype = ACCEL_FP32; t.strides[1] = 4; d = d0; d.input = &t;	/* dtype mismatch */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	t = I; t.offset = 800; d = d0; d.input = &t;			/* past the end of the buffer */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -ERANGE);
	t = I; t.strides[1] = 2; t.shape[1] = 2; d = d0; d.input = &t;	/* channels not contiguous */
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	t = O; t.ndim = 2; d = d0; d.output = &t;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	d = d0; d.input_zero_point = 200;
	ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	{
		struct accel_tensor big;

		accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 6, 4, 11, 11, &big);
		d = d0; d.weights = &big;				/* filter larger than the padded input */
		ASSERT_ERR(accel_conv2d(dev, &d, NULL, NULL), -ERANGE);
	}
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_close(dev);
}

Test(api, async_jobs_with_dependencies_and_identical_counters)
{
	struct accel_dev *dev = open_dev(NULL);
	struct gemm_fix f, g;
	struct accel_job *j1 = NULL, *j2 = NULL, *j3 = NULL;
	struct accel_counters c1, c3;
	uint64_t s = 99;

	gemm_fix_init(dev, &f, 40, 30, 50);
	gemm_fix_init(dev, &g, 40, 30, 50);
	fill_i8(accel_buffer_ptr(f.ba), 40 * 50, &s);
	fill_i8(accel_buffer_ptr(f.bb), 50 * 30, &s);
	memcpy(accel_buffer_ptr(g.ba), accel_buffer_ptr(f.ba), 40 * 50);
	memcpy(accel_buffer_ptr(g.bb), accel_buffer_ptr(f.bb), 50 * 30);
	cr_assert_eq(accel_gemm(dev, &f.d, NULL, &j1), 0);
	{
		struct accel_job *deps[1] = { j1 };
		struct accel_submit sub = { .deps = deps, .n_deps = 1 };

		cr_assert_eq(accel_gemm(dev, &g.d, &sub, &j2), 0, "%s", accel_last_error(dev));
	}
	cr_assert_eq(accel_job_wait(j2, 5000000000ll), 0);
	cr_assert_eq(accel_job_wait(j1, 0), 0);
	cr_assert_eq(accel_job_counters(j1, &c1), 0);
	cr_assert_gt(c1.total_cycles, 0);
	cr_assert_eq(c1.macs_dense >= 40ull * 30 * 50, 1);
	cr_assert_eq(memcmp(accel_buffer_ptr(f.bc), accel_buffer_ptr(g.bc), 40 * 30 * 4), 0);
	/* The same job again gives the same counters (determinism, architecture brief). */
	cr_assert_eq(accel_gemm(dev, &f.d, NULL, &j3), 0);
	cr_assert_eq(accel_job_counters(j3, &c3), 0);
	cr_assert_eq(memcmp(&c1, &c3, sizeof(c1)), 0, "counters differ between identical jobs");
	accel_job_free(j1);
	accel_job_free(j2);
	accel_job_free(j3);
	accel_job_free(NULL);
	cr_assert_eq(accel_job_wait(NULL, 0), -EINVAL);
	gemm_fix_fini(&f);
	gemm_fix_fini(&g);
	accel_close(dev);
}

/* The program of one int8 tile per cluster: A (2 rows of K per cluster) at SRAM 0, B (K x 1 per PE) at
 * 4096, C (int32) at 8192; LD A, LD B (broadcast), MAC, ST C. */
static struct accel_program *tile_program(uint32_t N, uint32_t K)
{
	struct accel_operand a = { .addr = 0, .col_stride = 2 * (int32_t)K, .pitch = K, .rows = 2, .cols = (uint16_t)K,
				   .dtype = ACCEL_INT8 };
	struct accel_operand b = { .addr = 4096, .pe_stride = 1, .pitch = N, .rows = (uint16_t)K, .cols = 1,
				   .dtype = ACCEL_INT8 };
	struct accel_operand c = { .addr = 8192, .col_stride = 2 * (int32_t)N * 4, .pe_stride = 4, .pitch = N * 4,
				   .rows = 2, .cols = 1, .dtype = ACCEL_INT32 };
	struct accel_program *p = NULL;
	unsigned rf_a, rf_b, rf_c;

	cr_assert_eq(accel_program_new(&p), 0);
	cr_assert_eq(accel_program_add_operand(p, &a, &rf_a), 0);
	cr_assert_eq(accel_program_add_operand(p, &b, &rf_b), 0);
	cr_assert_eq(accel_program_add_operand(p, &c, &rf_c), 0);
	cr_assert_eq(accel_program_ld(p, rf_a, 0, false, false), 0);
	cr_assert_eq(accel_program_ld(p, rf_b, 0, true, false), 0);
	cr_assert_eq(accel_program_mac(p, 0, 0, 0, 0), 0);
	cr_assert_eq(accel_program_st(p, 0, rf_c, true), 0);
	return p;
}

/* A hand-built command stream: CONFIG once, one EXE, with the program and stream builders. */
Test(api, builders_run_a_hand_packed_gemm)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	struct accel_program *p = NULL;
	struct accel_cmdstream *cs = NULL;
	struct accel_job *job = NULL;
	struct accel_buffer *ba, *bb, *bc;
	struct accel_counters cnt;
	uint32_t M, N = 0, K = 8;
	uint64_t s = 5;
	int ret;

	accel_query_caps(dev, &caps);
	M = caps.cols * 2;			/* tm = 2 rows per cluster */
	N = caps.pes * 1;			/* tn = 1 column per PE */
	ba = alloc_buf(dev, M * K);
	bb = alloc_buf(dev, K * N);
	bc = alloc_buf(dev, M * N * 4);
	fill_i8(accel_buffer_ptr(ba), M * K, &s);
	fill_i8(accel_buffer_ptr(bb), K * N, &s);
	p = tile_program(N, K);
	cr_assert_eq(accel_program_ld(p, 16, 0, false, false), -EINVAL);
	cr_assert_eq(accel_program_mac(p, 0, 0, 4, 0), -EINVAL);
	cr_assert_eq(accel_cs_new(dev, &cs), 0);
	{
		struct accel_dma la = { .buf = ba, .pitch_y = K, .sram_off = 0, .sram_pitch_y = K, .width = K, .height = M,
					.depth = 1 };
		struct accel_dma lb = { .buf = bb, .pitch_y = N, .sram_off = 4096, .sram_pitch_y = N, .width = N,
					.height = K, .depth = 1 };
		struct accel_dma st = { .buf = bc, .pitch_y = N * 4, .sram_off = 8192, .sram_pitch_y = N * 4,
					.width = N * 4, .height = M, .depth = 1 };
		struct accel_dma bad = la;

		cr_assert_eq(accel_cs_config(cs, 0, 0, 0, p), 0);
		cr_assert_eq(accel_cs_dma_h2d(cs, 0, &la), 0);
		cr_assert_eq(accel_cs_dma_h2d(cs, 0, &lb), 0);
		cr_assert_eq(accel_cs_exe(cs, 0, 0, 0, 0, ACCEL_EXE_LAST | ACCEL_EXE_SHIFT_OUT, NULL, 0), 0);
		cr_assert_eq(accel_cs_dma_d2h(cs, 0, &st), 0);
		bad.height = M + 1;
		ASSERT_ERR(accel_cs_dma_h2d(cs, 0, &bad), -ERANGE);
		bad = la;
		bad.row = 200;
		ASSERT_ERR(accel_cs_dma_h2d(cs, 0, &bad), -EINVAL);
		ASSERT_ERR(accel_cs_dma_h2d(cs, 0x80, &la), -EINVAL);
		ASSERT_ERR(accel_cs_sem_wait(cs, 0, ACCEL_ENGINE_LOAD, 16, 1), -EINVAL);
	}
	ret = accel_cs_submit(cs, NULL, &job);
	cr_assert_eq(ret, 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_counters(job, &cnt), 0);
	cr_assert_gt(cnt.bytes_config, 0);
	cr_assert_eq(cnt.bytes_d2h, M * N * 4);
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t j = 0; j < N; j++) {
			int32_t ref = 0;

			for (uint32_t k = 0; k < K; k++)
				ref += ((int8_t *)accel_buffer_ptr(ba))[i * K + k] * ((int8_t *)accel_buffer_ptr(bb))[k * N + j];
			cr_assert_eq(((int32_t *)accel_buffer_ptr(bc))[i * N + j], ref);
		}
	accel_job_free(job);
	accel_cs_free(cs);
	accel_program_free(p);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
	accel_close(dev);
}

/* One self-contained step of the hand-packed GEMM of the test above: CONFIG, loads, EXE, store; the
 * CONFIG carries @flags (a preemption point before the step). */
static void gemm_step(struct accel_cmdstream *cs, struct accel_program *p, unsigned flags, struct accel_buffer *ba,
		      struct accel_buffer *bb, struct accel_buffer *bc, uint32_t M, uint32_t N, uint32_t K)
{
	struct accel_dma la = { .buf = ba, .pitch_y = K, .sram_off = 0, .sram_pitch_y = K, .width = K, .height = M,
				.depth = 1 };
	struct accel_dma lb = { .buf = bb, .pitch_y = N, .sram_off = 4096, .sram_pitch_y = N, .width = N, .height = K,
				.depth = 1 };
	struct accel_dma st = { .buf = bc, .pitch_y = N * 4, .sram_off = 8192, .sram_pitch_y = N * 4, .width = N * 4,
				.height = M, .depth = 1 };

	cr_assert_eq(accel_cs_config(cs, flags, 0, 0, p), 0);
	cr_assert_eq(accel_cs_dma_h2d(cs, 0, &la), 0);
	cr_assert_eq(accel_cs_dma_h2d(cs, 0, &lb), 0);
	cr_assert_eq(accel_cs_exe(cs, 0, 0, 0, 0, ACCEL_EXE_LAST | ACCEL_EXE_SHIFT_OUT, NULL, 0), 0);
	cr_assert_eq(accel_cs_dma_d2h(cs, 0, &st), 0);
}

/* hardware/queues.md "Preemption": a point between two self-contained steps is a barrier only (no
 * request comes from a single client): both steps' results are right, the counters as without it. */
Test(api, preemption_point_between_self_contained_steps_keeps_results_and_counters)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_caps caps;
	struct accel_program *p = NULL;
	struct accel_buffer *ba, *bb, *bc[2];
	struct accel_counters cnt[2];
	uint32_t M, N, K = 8;
	uint64_t s = 9;

	accel_query_caps(dev, &caps);
	if (!(caps.features & (1u << 24)))
		cr_skip_test("device without preemption points");
	M = caps.cols * 2;
	N = caps.pes;
	ba = alloc_buf(dev, M * K);
	bb = alloc_buf(dev, K * N);
	fill_i8(accel_buffer_ptr(ba), M * K, &s);
	fill_i8(accel_buffer_ptr(bb), K * N, &s);
	p = tile_program(N, K);
	for (unsigned with_point = 0; with_point < 2; with_point++) {
		struct accel_cmdstream *cs = NULL;
		struct accel_job *job = NULL;

		bc[0] = alloc_buf(dev, M * N * 4);
		bc[1] = alloc_buf(dev, M * N * 4);
		cr_assert_eq(accel_cs_new(dev, &cs), 0);
		ASSERT_ERR(accel_cs_config(cs, 0x04, 0, 0, p), -EINVAL);
		gemm_step(cs, p, 0, ba, bb, bc[0], M, N, K);
		gemm_step(cs, p, with_point ? ACCEL_CMD_PREEMPT_POINT : 0, ba, bb, bc[1], M, N, K);
		cr_assert_eq(accel_cs_submit(cs, NULL, &job), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_wait(job, -1), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_counters(job, &cnt[with_point]), 0);
		for (uint32_t i = 0; i < M; i++)
			for (uint32_t j = 0; j < N; j++) {
				int32_t ref = 0;

				for (uint32_t k = 0; k < K; k++)
					ref += ((int8_t *)accel_buffer_ptr(ba))[i * K + k] *
					       ((int8_t *)accel_buffer_ptr(bb))[k * N + j];
				cr_assert_eq(((int32_t *)accel_buffer_ptr(bc[0]))[i * N + j], ref);
				cr_assert_eq(((int32_t *)accel_buffer_ptr(bc[1]))[i * N + j], ref);
			}
		accel_job_free(job);
		accel_cs_free(cs);
		accel_buffer_free(bc[0]);
		accel_buffer_free(bc[1]);
	}
	/* serial steps: the point's barrier costs nothing, every counter is the same */
	cr_assert_eq(memcmp(&cnt[0], &cnt[1], sizeof(cnt[0])), 0);
	accel_program_free(p);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_close(dev);
}

Test(api, device_errors_are_reported_as_eio_with_the_hardware_code)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_cmdstream *cs = NULL;
	struct accel_job *job = NULL;

	cr_assert_eq(accel_cs_new(dev, &cs), 0);
	/* A wait that no earlier signal covers: the device stops the job with SEM_DEADLOCK. */
	cr_assert_eq(accel_cs_sem_wait(cs, 0, ACCEL_ENGINE_LOAD, 3, 1), 0);
	cr_assert_eq(accel_cs_submit(cs, NULL, &job), 0);
	cr_assert_eq(accel_job_wait(job, -1), -EIO);
	cr_assert_not_null(strstr(accel_last_error(dev), "SEM_DEADLOCK"), "message: %s", accel_last_error(dev));
	accel_job_free(job);
	accel_cs_free(cs);
	{
		struct accel_cmdstream *e = NULL;

		cr_assert_eq(accel_cs_new(dev, &e), 0);
		ASSERT_ERR(accel_cs_submit(e, NULL, &job), -EINVAL);	/* empty stream */
		accel_cs_free(e);
	}
	accel_close(dev);
}

Test(api, strerror_names_errors)
{
	cr_assert_str_eq(accel_strerror(0), "success");
	cr_assert_not_null(strstr(accel_strerror(-EINVAL), "EINVAL"));
	cr_assert_not_null(strstr(accel_strerror(-EIO), "EIO"));
	cr_assert_not_null(accel_strerror(-12345));
}

/* Architecture brief: the same job gives bit-identical results and identical counters on the drm and
 * sim backends.  On the host (sim) this compares two sim devices; in the VM it compares the device
 * against an in-process sim of the device's geometry. */
static void run_pair_job(struct accel_dev *dev, uint64_t seed, void *out, size_t out_len, struct accel_counters *cnt)
{
	enum { M = 70, N = 50, K = 90 };
	struct accel_buffer *ba = alloc_buf(dev, M * K * 4), *bb = alloc_buf(dev, K * N * 4), *bc = alloc_buf(dev, M * N * 4);
	struct accel_tensor A, B, C;
	struct accel_gemm_desc d;
	struct accel_job *job;
	uint64_t s = seed;

	accel_tensor_2d(ba, 0, ACCEL_FP32, M, K, &A);
	accel_tensor_2d(bb, 0, ACCEL_FP32, K, N, &B);
	accel_tensor_2d(bc, 0, ACCEL_FP32, M, N, &C);
	for (int i = 0; i < M * K; i++)
		((float *)accel_buffer_ptr(ba))[i] = (float)((int)(xrng(&s) % 2001) - 1000) / 333.0f;
	for (int i = 0; i < K * N; i++)
		((float *)accel_buffer_ptr(bb))[i] = (float)((int)(xrng(&s) % 2001) - 1000) / 777.0f;
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.b = &B;
	d.c = &C;
	d.epi.act = ACCEL_ACT_RELU;
	cr_assert_eq(accel_gemm(dev, &d, NULL, &job), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_job_counters(job, cnt), 0, "%s", accel_last_error(dev));
	accel_job_free(job);
	cr_assert_eq(out_len, (size_t)M * N * 4);
	memcpy(out, accel_buffer_ptr(bc), out_len);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
}

Test(api, device_and_sim_give_identical_results_and_counters)
{
	struct accel_dev *dev = open_dev(NULL), *sim = NULL;
	struct accel_caps caps;
	struct accel_counters c1, c2;
	static float o1[70 * 50], o2[70 * 50];
	char path[128];

	accel_query_caps(dev, &caps);
	snprintf(path, sizeof(path), "sim:rows=%u,cols=%u,pes=%u,sram=%u,clock=%u", caps.rows, caps.cols, caps.pes,
		 caps.sram_bytes, caps.clock_mhz);
	cr_assert_eq(accel_open(path, &sim), 0, "%s", path);
	run_pair_job(dev, 77, o1, sizeof(o1), &c1);
	run_pair_job(sim, 77, o2, sizeof(o2), &c2);
	cr_assert_eq(memcmp(o1, o2, sizeof(o1)), 0, "results differ between %s and %s", caps.backend, path);
	cr_assert_eq(c1.total_cycles, c2.total_cycles, "cycles %llu vs %llu", (unsigned long long)c1.total_cycles,
		     (unsigned long long)c2.total_cycles);
	cr_assert_eq(memcmp(&c1, &c2, sizeof(c1)), 0, "counters differ between %s and %s", caps.backend, path);
	accel_close(sim);
	accel_close(dev);
}
