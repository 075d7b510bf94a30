/* SPDX-License-Identifier: MIT */
/* The API contract of accel.h: version, errno names, aliasing, accel_close with live objects, and a
 * message on every error path. */
#include "common.h"

Test(contract, version_matches_the_header)
{
	unsigned num = 0;
	const char *v = accel_version(&num);
	char want[32];

	cr_assert_str_eq(v, ACCEL_VERSION_STRING);
	cr_assert_eq(num, (unsigned)ACCEL_VERSION);
	snprintf(want, sizeof(want), "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
	cr_assert_str_eq(v, want);
	cr_assert_str_eq(accel_version(NULL), v);
	cr_assert(ACCEL_VERSION >= ACCEL_MKVERSION(0, 1, 0));
}

/* Every errno the library can return has a name: its own table, else the C library's. */
Test(contract, strerror_names_every_errno)
{
	char want[32];

	cr_assert_not_null(strstr(accel_strerror(-EISDIR), "EISDIR"), "%s", accel_strerror(-EISDIR));
	cr_assert_not_null(strstr(accel_strerror(-EPERM), "EPERM"), "%s", accel_strerror(-EPERM));
	for (int e = 1; e < 134; e++) {
		const char *s = accel_strerror(-e);

		if (e == 41 || e == 58)	/* holes in Linux's errno numbering */
			continue;
		snprintf(want, sizeof(want), "-E");
		cr_assert(s && !strncmp(s, want, 2) && strlen(s) > 4, "errno %d: \"%s\"", e, s ? s : "(null)");
	}
	cr_assert_str_eq(accel_strerror(0), "success");
}

Test(contract, null_arguments_leave_a_message)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = alloc_buf(dev, 64);
	struct accel_tensor t;

	cr_assert_eq(accel_buffer_alloc(dev, 64, NULL), -EINVAL);
	cr_assert_not_null(strstr(accel_last_error(dev), "NULL"), "message: \"%s\"", accel_last_error(dev));
	/* No buffer: no tensor (was 0 with a tensor of no buffer). */
	cr_assert_eq(accel_tensor_2d(NULL, 0, ACCEL_INT8, 2, 2, &t), -EINVAL);
	cr_assert_eq(accel_tensor_4d(NULL, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 1, 1, 1, &t), -EINVAL);
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 0, 2, &t), -EINVAL);
	cr_assert_neq(accel_last_error(dev)[0], 0);
	accel_buffer_free(b);
	accel_close(dev);
}

/* C = A x B with C placed over A, over B, or over part of them in one buffer: refused with a message
 * (the device stores C tiles while later A/B tiles are still read; it returned 0 and wrong results). */
Test(contract, gemm_refuses_an_output_aliasing_an_input)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t M = 24, K = 20, N = 24;	/* A and C have the same size: C can sit exactly on A */
	struct accel_buffer *buf = alloc_buf(dev, 4 * (M * K + K * N + M * N) + 4096);
	struct accel_tensor A, B, C, bias;
	struct accel_gemm_desc d = { .a = &A, .b = &B, .c = &C };
	uint64_t offB = 4ull * M * K, offC = offB + 4ull * K * N;
	uint64_t s = 7;
	float *p = accel_buffer_ptr(buf);
	int ret;

	fill_f32(p, (size_t)(offC / 4), &s);
	cr_assert_eq(accel_tensor_2d(buf, 0, ACCEL_FP32, M, K, &A), 0);
	cr_assert_eq(accel_tensor_2d(buf, offB, ACCEL_FP32, K, N, &B), 0);
	struct { uint64_t off; const char *what; } bad[] = {
		{ 0, "A" },			/* C exactly on A */
		{ offB, "B" },			/* C exactly on B */
		{ 4ull * M * K / 2, "A" },	/* C over the second half of A and the start of B */
		{ offB + 4ull * K * N - 4, "B" },	/* one element shared with the end of B */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(accel_tensor_2d(buf, bad[i].off, ACCEL_FP32, M, N, &C), 0);
		ret = accel_gemm(dev, &d, NULL, NULL);
		cr_assert_eq(ret, -EINVAL, "case %u: C at %llu: got %d", i, (unsigned long long)bad[i].off, ret);
		cr_assert_not_null(strstr(accel_last_error(dev), "overlaps"), "case %u: %s", i, accel_last_error(dev));
		cr_assert_not_null(strstr(accel_last_error(dev), bad[i].what), "case %u: %s", i, accel_last_error(dev));
	}
	/* The bias must not alias the output either. */
	cr_assert_eq(accel_tensor_2d(buf, offC, ACCEL_FP32, M, N, &C), 0);
	cr_assert_eq(accel_tensor_2d(buf, offC, ACCEL_FP32, 1, N, &bias), 0);
	d.epi.bias = &bias;
	cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
	cr_assert_not_null(strstr(accel_last_error(dev), "bias"), "%s", accel_last_error(dev));
	d.epi.bias = NULL;

	/* Disjoint ranges of one buffer are fine and compute the product. */
	ret = accel_gemm(dev, &d, NULL, NULL);
	cr_assert_eq(ret, 0, "%s", accel_last_error(dev));
	for (uint32_t m = 0; m < M; m++)
		for (uint32_t n = 0; n < N; n++) {
			double ref = 0, mag = 0;

			for (uint32_t k = 0; k < K; k++) {
				double ab = (double)p[m * K + k] * p[offB / 4 + k * N + n];

				ref += ab;
				mag += fabs(ab);
			}
			cr_assert(fabs(p[offC / 4 + m * N + n] - ref) <= F32_RTOL * (1 + mag), "C[%u][%u]", m, n);
		}
	accel_buffer_free(buf);
	accel_close(dev);
}

Test(contract, conv_refuses_an_output_aliasing_its_input)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *buf = alloc_buf(dev, 65536);
	struct accel_tensor in, wt, out;
	struct accel_conv2d_desc d = { .input = &in, .weights = &wt, .output = &out, .stride_h = 1, .stride_w = 1,
				       .dil_h = 1, .dil_w = 1, .groups = 1 };

	cr_assert_eq(accel_tensor_4d(buf, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 8, 6, 6, &in), 0);
	cr_assert_eq(accel_tensor_4d(buf, 4096, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 8, 8, 1, 1, &wt), 0);
	cr_assert_eq(accel_tensor_4d(buf, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, 8, 6, 6, &out), 0);
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	cr_assert_not_null(strstr(accel_last_error(dev), "overlaps input"), "%s", accel_last_error(dev));
	cr_assert_eq(accel_tensor_4d(buf, 8192, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, 8, 6, 6, &out), 0);
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	accel_buffer_free(buf);
	accel_close(dev);
}

/* accel_close with everything still alive: jobs are waited for, then every object is freed (the asan
 * stage's LeakSanitizer fails this test if anything leaks, and ASan if the device wrote freed memory). */
Test(contract, close_waits_for_jobs_and_frees_every_object)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *buf = alloc_buf(dev, 3 * 64 * 64 * 4);
	struct accel_tensor A, B, C;
	struct accel_gemm_desc d = { .a = &A, .b = &B, .c = &C };
	struct accel_job *j1 = NULL, *j2 = NULL;
	struct accel_cmdstream *cs = NULL;
	struct accel_sparse_weights *sw = NULL;
	struct accel_buffer *extra[8];
	uint64_t s = 3;

	fill_f32(accel_buffer_ptr(buf), 2 * 64 * 64, &s);
	cr_assert_eq(accel_tensor_2d(buf, 0, ACCEL_FP32, 64, 64, &A), 0);
	cr_assert_eq(accel_tensor_2d(buf, 64 * 64 * 4, ACCEL_FP32, 64, 64, &B), 0);
	cr_assert_eq(accel_tensor_2d(buf, 2 * 64 * 64 * 4, ACCEL_FP32, 64, 64, &C), 0);
	cr_assert_eq(accel_gemm(dev, &d, NULL, &j1), 0, "%s", accel_last_error(dev));
	struct accel_submit sub = { .deps = &j1, .n_deps = 1 };
	cr_assert_eq(accel_gemm(dev, &d, &sub, &j2), 0, "%s", accel_last_error(dev));
	for (unsigned i = 0; i < 8; i++)
		extra[i] = alloc_buf(dev, 4096 * (i + 1));
	accel_buffer_free(extra[3]);	/* freed by the application: not freed again */
	cr_assert_eq(accel_cs_new(dev, &cs), 0);
	cr_assert_eq(accel_sparse_pack(dev, &B, false, 0, &sw), 0, "%s", accel_last_error(dev));
	accel_close(dev);
}

/*
 * Every error path of a call that has a device (directly or through a buffer, job, graph, command
 * stream or packed weights) leaves a message. Before each call the device holds a known message; the
 * failing call must replace it with its own.
 */
static const char *sentinel(struct accel_dev *dev)
{
	struct accel_buffer *b = NULL;

	cr_assert_eq(accel_buffer_alloc(dev, 0, &b), -EINVAL);
	return accel_last_error(dev);
}

#define SWEEP(call)                                                                                        \
	do {                                                                                               \
		char before_[320];                                                                         \
		snprintf(before_, sizeof(before_), "%s", sentinel(dev));                                   \
		int r_ = (call);                                                                           \
		cr_assert_lt(r_, 0, "%s returned %d", #call, r_);                                          \
		cr_assert(accel_last_error(dev)[0] && strcmp(accel_last_error(dev), before_),             \
			  "%s returned %d (%s) without a message of its own", #call, r_, accel_strerror(r_));    \
		n_paths++;                                                                                 \
	} while (0)

Test(contract, every_error_path_leaves_a_message)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = alloc_buf(dev, 4096), *big = NULL;
	struct accel_tensor t, bad;
	struct accel_job *j = NULL;
	struct accel_cmdstream *cs = NULL;
	struct accel_sparse_weights *sw = NULL, *sw2 = NULL;
	struct accel_graph *g = NULL;
	struct accel_graph_node_info gi;
	struct accel_gemm_desc gd = { 0 };
	struct accel_activation_desc ad = { 0 };
	struct accel_island isl;
	unsigned n_paths = 0, node, ni;
	double dens;
	uint64_t cnt;

	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 16, 16, &t), 0);
	gd.a = gd.b = &t;
	cr_assert_eq(accel_tensor_2d(b, 1024, ACCEL_INT32, 16, 16, &bad), 0);
	gd.c = &bad;
	cr_assert_eq(accel_gemm(dev, &gd, NULL, &j), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_cs_new(dev, &cs), 0);
	cr_assert_eq(accel_sparse_pack(dev, &t, false, 0, &sw), 0, "%s", accel_last_error(dev));

	/* device, buffers, tensors */
	SWEEP(accel_buffer_alloc(dev, 64, NULL));
	SWEEP(accel_buffer_alloc(dev, 1ull << 41, &big));
	SWEEP(accel_query_caps(dev, NULL));
	SWEEP(accel_tensor_2d(b, 0, (enum accel_dtype)99, 1, 1, &t));
	SWEEP(accel_tensor_2d(b, 0, ACCEL_INT8, 1, 1, NULL));
	SWEEP(accel_tensor_4d(b, 0, ACCEL_INT8, (enum accel_layout)7, 1, 1, 1, 1, &t));
	SWEEP(accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 0, 1, 1, 1, &t));
	cr_assert_eq(accel_tensor_2d(b, 0, ACCEL_INT8, 16, 16, &t), 0);
	bad = t;
	bad.offset = 4090;
	SWEEP(accel_tensor_density(&bad, &dens));
	SWEEP(accel_tensor_density(&t, NULL));
	/* operations */
	SWEEP(accel_gemm(dev, NULL, NULL, NULL));
	SWEEP(accel_conv2d(dev, NULL, NULL, NULL));
	SWEEP(accel_pool2d(dev, NULL, NULL, NULL));
	SWEEP(accel_activation(dev, NULL, NULL, NULL));
	SWEEP(accel_activation(dev, &ad, NULL, NULL));
	SWEEP(accel_sparse_gemm(dev, NULL, NULL, NULL));
	SWEEP(accel_qgemm(dev, NULL, NULL, NULL));
	SWEEP(accel_auto_gemm(dev, NULL, NULL, NULL, NULL, NULL));
	SWEEP(accel_plan_conv2d(dev, NULL, NULL, NULL, NULL));
	gd.c = &bad;
	SWEEP(accel_gemm(dev, &gd, NULL, NULL));
	/* jobs */
	SWEEP(accel_job_counters(j, NULL));
	SWEEP(accel_job_row_busy(j, NULL, 3));
	/* traces */
	SWEEP(accel_trace_end(dev));
	SWEEP(accel_trace_event_count(dev, NULL));
	SWEEP(accel_trace_write_json(dev, NULL));
	SWEEP(accel_trace_row_busy(dev, NULL, 4));
	/* command streams */
	SWEEP(accel_cs_new(dev, NULL));
	SWEEP(accel_cs_dma_h2d(cs, 0, NULL));
	SWEEP(accel_cs_dma_d2h(cs, 0, NULL));
	SWEEP(accel_cs_im2col(cs, 0, NULL));
	SWEEP(accel_cs_config(cs, 0, 0, 0, NULL));
	SWEEP(accel_cs_fence(cs, b, 3, 0));
	SWEEP(accel_cs_submit(cs, NULL, NULL));
	/* packed weights */
	SWEEP(accel_sparse_pack(dev, NULL, false, 0, &sw2));
	SWEEP(accel_sparse_pack(dev, &t, false, 0, NULL));
	SWEEP(accel_sparse_info(sw, NULL));
	SWEEP(accel_sparse_unpack(sw, NULL, 0));
	/* islands and graphs */
	SWEEP(accel_query_islands(dev, NULL, 1, &ni));
	SWEEP(accel_query_islands(dev, &isl, 1, NULL));
	SWEEP(accel_graph_new(dev, NULL));
	SWEEP(accel_partition_map(dev, NULL, NULL, NULL));
	if (accel_graph_new(dev, &g) == 0) {
		SWEEP(accel_graph_gemm(g, NULL, &node));
		SWEEP(accel_graph_activation(g, NULL, &node));
		SWEEP(accel_graph_node_info(g, 5, &gi));
		SWEEP(accel_graph_run(g, NULL, NULL, NULL));
		accel_graph_free(g);
	}
	cr_assert_eq(accel_trace_event_count(dev, &cnt), 0);
	cr_log_info("%u error paths checked", n_paths);
	accel_job_free(j);
	accel_sparse_free(sw);
	accel_cs_free(cs);
	accel_buffer_free(b);
	accel_close(dev);
}

/* A plan outlives the device it ran on: accel_close frees the plan's device copy and the plan forgets it
 * (it held a pointer into the closed device before), so the plan runs on a new device and frees cleanly. */
static int run_plan_once(struct accel_plan *plan)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_plan_info info;
	struct accel_buffer *bi, *bw, *bo;
	struct accel_tensor wt, out;
	struct accel_plan_conv_args a;
	int ret;

	cr_assert_eq(accel_plan_info(plan, &info), 0);
	bi = alloc_buf(dev, 4 * 6 * 6);
	bw = alloc_buf(dev, 8 * info.n_offsets);
	bo = alloc_buf(dev, 4 * 8 * info.oh * info.ow);
	cr_assert_eq(accel_tensor_2d(bw, 0, ACCEL_INT8, 8, info.n_offsets, &wt), 0);
	cr_assert_eq(accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NCHW, 1, 8, info.oh, info.ow, &out), 0);
	memset(&a, 0, sizeof(a));
	a.input = bi;
	a.weights = &wt;
	a.output = &out;
	ret = accel_plan_conv2d(dev, plan, &a, NULL, NULL);
	if (ret == -EOPNOTSUPP) {
		accel_close(dev);
		return ret;
	}
	cr_assert_eq(ret, 0, "%s", accel_last_error(dev));
	accel_close(dev);	/* frees bi, bw, bo and the plan's device copy */
	return 0;
}

Test(contract, a_plan_outlives_the_device_it_ran_on)
{
	struct accel_plan_conv_desc d = { .layout = ACCEL_PLAN_NCHW, .dtype = ACCEL_INT8, .n = 1, .c = 4, .h = 6, .w = 6,
					  .k = 8, .r = 3, .s = 3, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1 };
	struct accel_plan *plan = NULL;

	cr_assert_eq(accel_plan_compile(&d, &plan), 0, "%s", accel_plan_last_error());
	if (run_plan_once(plan) == -EOPNOTSUPP) {
		accel_plan_free(plan);
		cr_skip_test("the device has no plan feature");
	}
	cr_assert_eq(run_plan_once(plan), 0);	/* a second device: the plan uploads itself again */
	accel_plan_free(plan);			/* no use of the closed devices */
}
