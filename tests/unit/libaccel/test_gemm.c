/* SPDX-License-Identifier: MIT */
/* accel_gemm against an independent CPU reference. */
#include "common.h"

struct gcase {
	uint32_t m, n, k;
	bool f32, ta, tb, bias, relu, requant;
	bool res;	/* fp32 / int32 output: an SFU residual (ISA 2), M x N, added before the activation */
};

/* When set, run_gemm_case submits the GEMM as a job and stores its counters here. */
static struct accel_counters *gemm_cnt_out;

/* Reference: C = op(A) op(B) (+ bias, relu, requant) in int64 / double. */
static void run_gemm_case(struct accel_dev *dev, const struct gcase *g, uint64_t seed)
{
	uint32_t e = g->f32 ? 4 : 1, oe = g->f32 ? 4 : (g->requant ? 1 : 4);
	uint32_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
	uint32_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
	struct accel_buffer *ba = alloc_buf(dev, (uint64_t)ar * ac * e), *bb = alloc_buf(dev, (uint64_t)br * bc * e);
	struct accel_buffer *bcb = alloc_buf(dev, (uint64_t)g->m * g->n * oe), *bbias = alloc_buf(dev, (uint64_t)g->n * 4);
	struct accel_buffer *bres = alloc_buf(dev, (uint64_t)g->m * g->n * 4);
	struct accel_tensor A, B, C, BIAS, RES;
	struct accel_gemm_desc d;
	uint64_t s = seed;
	int32_t mult = 0;
	uint8_t shift = 0;
	int ret;

	cr_assert_eq(accel_tensor_2d(ba, 0, g->f32 ? ACCEL_FP32 : ACCEL_INT8, ar, ac, &A), 0);
	cr_assert_eq(accel_tensor_2d(bb, 0, g->f32 ? ACCEL_FP32 : ACCEL_INT8, br, bc, &B), 0);
	cr_assert_eq(accel_tensor_2d(bcb, 0, g->f32 ? ACCEL_FP32 : (g->requant ? ACCEL_INT8 : ACCEL_INT32), g->m, g->n,
				     &C), 0);
	cr_assert_eq(accel_tensor_2d(bbias, 0, g->f32 ? ACCEL_FP32 : ACCEL_INT32, 1, g->n, &BIAS), 0);
	cr_assert_eq(accel_tensor_2d(bres, 0, g->f32 ? ACCEL_FP32 : ACCEL_INT32, g->m, g->n, &RES), 0);
	if (g->f32)
		fill_f32(accel_buffer_ptr(bres), (size_t)g->m * g->n, &s);
	else
		for (size_t i = 0; i < (size_t)g->m * g->n; i++)
			((int32_t *)accel_buffer_ptr(bres))[i] = (int32_t)(xrng(&s) % 200001) - 100000;
	if (g->f32) {
		fill_f32(accel_buffer_ptr(ba), (size_t)ar * ac, &s);
		fill_f32(accel_buffer_ptr(bb), (size_t)br * bc, &s);
		fill_f32(accel_buffer_ptr(bbias), g->n, &s);
	} else {
		fill_i8(accel_buffer_ptr(ba), (size_t)ar * ac, &s);
		fill_i8(accel_buffer_ptr(bb), (size_t)br * bc, &s);
		for (uint32_t j = 0; j < g->n; j++)
			((int32_t *)accel_buffer_ptr(bbias))[j] = (int32_t)(xrng(&s) % 20001) - 10000;
	}
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.b = &B;
	d.c = &C;
	d.trans_a = g->ta;
	d.trans_b = g->tb;
	d.epi.bias = g->bias ? &BIAS : NULL;
	d.epi.act = g->relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	d.epi.residual = g->res ? &RES : NULL;
	if (g->requant) {
		cr_assert_eq(accel_quant_from_scale(1.0 / (64.0 * sqrt((double)g->k)), &mult, &shift), 0);
		d.epi.multiplier = mult;
		d.epi.shift = shift;
		d.epi.zero_point = 3;
	}
	{
		struct accel_job *job = NULL;

		ret = accel_gemm(dev, &d, NULL, gemm_cnt_out ? &job : NULL);
		cr_assert_eq(ret, 0, "seed %llu gemm %ux%ux%u: %s: %s", (unsigned long long)seed, g->m, g->n, g->k,
			     accel_strerror(ret), accel_last_error(dev));
		if (job) {
			ret = accel_job_wait(job, -1);
			cr_assert_eq(ret, 0, "seed %llu: the job failed: %s", (unsigned long long)seed, accel_last_error(dev));
			cr_assert_eq(accel_job_counters(job, gemm_cnt_out), 0);
			accel_job_free(job);
		}
	}
	for (uint32_t i = 0; i < g->m; i++) {
		for (uint32_t j = 0; j < g->n; j++) {
			if (g->f32) {
				const float *a = accel_buffer_ptr(ba), *b = accel_buffer_ptr(bb);
				double sum = 0, mag = 0, got = ((const float *)accel_buffer_ptr(bcb))[(size_t)i * g->n + j];

				for (uint32_t p = 0; p < g->k; p++) {
					double x = a[g->ta ? (size_t)p * g->m + i : (size_t)i * g->k + p];
					double y = b[g->tb ? (size_t)j * g->k + p : (size_t)p * g->n + j];

					sum += x * y;
					mag += fabs(x * y);
				}
				if (g->bias)
					sum += ((const float *)accel_buffer_ptr(bbias))[j], mag += fabs(((const float *)accel_buffer_ptr(bbias))[j]);
				if (g->res) {
					double rv = ((const float *)accel_buffer_ptr(bres))[(size_t)i * g->n + j];

					sum += rv;
					mag += fabs(rv);
				}
				if (g->relu && sum < 0)
					sum = 0;
				cr_assert(fabs(got - sum) <= F32_RTOL * (1 + mag),
					  "seed %llu %ux%ux%u C[%u][%u] = %g, expected %g", (unsigned long long)seed, g->m,
					  g->n, g->k, i, j, got, sum);
			} else {
				const int8_t *a = accel_buffer_ptr(ba), *b = accel_buffer_ptr(bb);
				int64_t sum = 0;
				int32_t acc;

				for (uint32_t p = 0; p < g->k; p++)
					sum += (int64_t)a[g->ta ? (size_t)p * g->m + i : (size_t)i * g->k + p] *
					       b[g->tb ? (size_t)j * g->k + p : (size_t)p * g->n + j];
				acc = (int32_t)(uint32_t)sum;
				if (g->bias)
					acc = (int32_t)((uint32_t)acc + (uint32_t)((const int32_t *)accel_buffer_ptr(bbias))[j]);
				if (g->res)
					acc = (int32_t)((uint32_t)acc +
							(uint32_t)((const int32_t *)accel_buffer_ptr(bres))[(size_t)i * g->n + j]);
				if (g->relu && acc < 0)
					acc = 0;
				if (g->requant) {
					int8_t got = ((const int8_t *)accel_buffer_ptr(bcb))[(size_t)i * g->n + j];

					cr_assert_eq(got, ref_requant(acc, mult, shift, 3),
						     "seed %llu %ux%ux%u C[%u][%u] = %d, expected %d",
						     (unsigned long long)seed, g->m, g->n, g->k, i, j, got,
						     ref_requant(acc, mult, shift, 3));
				} else {
					int32_t got = ((const int32_t *)accel_buffer_ptr(bcb))[(size_t)i * g->n + j];

					cr_assert_eq(got, acc, "seed %llu %ux%ux%u C[%u][%u] = %d, expected %d",
						     (unsigned long long)seed, g->m, g->n, g->k, i, j, got, acc);
				}
			}
		}
	}
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bcb);
	accel_buffer_free(bbias);
	accel_buffer_free(bres);
}

Test(gemm, int8_matches_reference_on_basic_shape)
{
	struct accel_dev *dev = open_dev(NULL);
	struct gcase g = { .m = 64, .n = 48, .k = 40 };

	run_gemm_case(dev, &g, 1);
	accel_close(dev);
}

Test(gemm, fp32_matches_reference_on_basic_shape)
{
	struct accel_dev *dev = open_dev(NULL);
	struct gcase g = { .m = 33, .n = 70, .k = 29, .f32 = true };

	run_gemm_case(dev, &g, 2);
	accel_close(dev);
}

/* A classifier (1 x 512 x 1000 fp32, transposed weights): the array rows take consecutive N blocks and
 * load them as one DMA_BANDS_H2D, each storage unit through its own host port, so the 2 MB of weights
 * take well under the 16 000 cycles of one 128 B/cycle stream (issue #16).  Results against the CPU
 * reference. */
Test(gemm, classifier_weights_load_through_the_host_ports)
{
	struct accel_dev *dev = open_dev("sim");
	struct accel_counters cnt;
	uint64_t wbytes = 512ull * 1000 * 4;

	if (!test_is_sim())
		cr_skip_test("needs the default sim geometry");
	gemm_cnt_out = &cnt;
	run_gemm_case(dev, &(struct gcase){ .m = 1, .n = 1000, .k = 512, .f32 = true, .tb = true, .bias = true }, 5);
	gemm_cnt_out = NULL;
	cr_assert_lt(cnt.load_cycles, wbytes / 128 / 2, "load cycles %llu for %llu weight bytes",
		     (unsigned long long)cnt.load_cycles, (unsigned long long)wbytes);
	accel_close(dev);
}

/* C = A . B^T with B stored N x K (a Linear layer's weights, A and C row-major) runs as a pointwise
 * convolution of M pixels (conv_pw.c) when that is faster: a seeded sweep forced with pw=on (M from 1,
 * odd N and K, int8 with bias, ReLU and requantisation or int32, fp32, residuals) on the default geometry and the
 * small 2x2x4 array (several segments), each case against the CPU reference and against pw=off, from
 * which nearly all must differ in cycles (the sweep really took the lowering).  The classifier shape
 * (1 x 1280 x 1000 int8) takes it by default. */
Test(gemm, transposed_weights_run_as_a_pointwise_convolution)
{
	static const char *const geo[][2] = {
		{ "sim:pw=on", "sim:pw=off" },
		{ "sim:rows=2,cols=2,pes=4,sram=65536,pw=on", "sim:rows=2,cols=2,pes=4,sram=65536,pw=off" },
	};
	uint64_t seed = 0x6e33, s = seed;
	unsigned differ = 0, total = 0;
	struct accel_counters on, off;

	if (!test_is_sim())
		cr_skip_test("forces the pointwise lowering (a sim option)");
	for (unsigned v = 0; v < 2; v++) {
		struct accel_dev *don = open_dev(geo[v][0]), *doff = open_dev(geo[v][1]);

		for (unsigned it = 0; it < 12; it++) {
			struct gcase g = { .tb = true };
			uint64_t r = xrng(&s);

			g.m = it % 4 == 0 ? 1 : 1 + (uint32_t)(xrng(&s) % (r & 1 ? 400 : 30));
			g.n = 1 + (uint32_t)(xrng(&s) % (r & 2 ? 300 : 40));
			g.k = 1 + (uint32_t)(xrng(&s) % (r & 4 ? 500 : 40));
			g.f32 = r & 8;
			g.bias = r & 16;
			g.relu = r & 32;
			g.requant = !g.f32 && (r & 64);
			g.res = !g.requant && (r & 128);
			gemm_cnt_out = &on;
			run_gemm_case(don, &g, seed * 1000 + v * 100 + it);
			gemm_cnt_out = &off;
			run_gemm_case(doff, &g, seed * 1000 + v * 100 + it);
			gemm_cnt_out = NULL;
			differ += on.total_cycles != off.total_cycles;
			total++;
		}
		accel_close(don);
		accel_close(doff);
	}
	cr_assert_geq(differ * 10, total * 9, "only %u of %u cases took the pointwise lowering", differ, total);
	{
		struct accel_dev *dauto = open_dev("sim"), *doff = open_dev("sim:pw=off");
		struct gcase g = { .m = 1, .n = 1000, .k = 1280, .tb = true, .bias = true, .requant = true };

		gemm_cnt_out = &on;
		run_gemm_case(dauto, &g, 77);
		gemm_cnt_out = &off;
		run_gemm_case(doff, &g, 77);
		gemm_cnt_out = NULL;
		cr_assert_lt(on.total_cycles, off.total_cycles, "classifier: %llu cycles, %llu without the pointwise lowering",
			     (unsigned long long)on.total_cycles, (unsigned long long)off.total_cycles);
		accel_close(dauto);
		accel_close(doff);
	}
}

Test(gemm, edge_shapes_on_small_geometry)
{
	/* 2x2x4 array with 64 KiB storage units: every shape below needs edge tiles in M, N and K. */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 }, { 1, 17, 1 }, { 9, 1, 3 }, { 7, 9, 1 }, { 5, 13, 300 }, { 17, 33, 70 },
		{ 40, 3, 5000 }, { 100, 100, 100 },
	};
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");

	for (unsigned i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct gcase g = { .m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2] };

		run_gemm_case(dev, &g, 100 + i);
		g.f32 = true;
		run_gemm_case(dev, &g, 200 + i);
	}
	accel_close(dev);
}

Test(gemm, transposes_bias_relu_requant)
{
	struct accel_dev *dev = open_dev(NULL);
	struct gcase cases[] = {
		{ .m = 37, .n = 21, .k = 19, .ta = true },
		{ .m = 37, .n = 21, .k = 19, .tb = true },
		{ .m = 37, .n = 21, .k = 19, .ta = true, .tb = true, .f32 = true },
		{ .m = 50, .n = 70, .k = 90, .bias = true, .relu = true },
		{ .m = 50, .n = 70, .k = 90, .bias = true, .relu = true, .f32 = true },
		{ .m = 50, .n = 70, .k = 90, .bias = true, .requant = true },
		{ .m = 65, .n = 31, .k = 300, .relu = true, .requant = true, .tb = true },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_gemm_case(dev, &cases[i], 300 + i);
	accel_close(dev);
}

Test(gemm, randomized_sweep)
{
	uint64_t seed = 0x5eed, s = seed;
	struct accel_dev *dev = open_dev(NULL);

	for (int it = 0; it < 24; it++) {
		struct gcase g;
		uint64_t r = xrng(&s);

		memset(&g, 0, sizeof(g));
		g.m = 1 + (uint32_t)(xrng(&s) % (r & 1 ? 300 : 20));
		g.n = 1 + (uint32_t)(xrng(&s) % (r & 2 ? 300 : 20));
		g.k = 1 + (uint32_t)(xrng(&s) % (r & 4 ? 700 : 9));
		g.f32 = r & 8;
		g.ta = (r >> 4) % 5 == 0;
		g.tb = (r >> 7) % 3 == 0;
		g.bias = r & 1024;
		g.relu = r & 2048;
		g.requant = !g.f32 && (r & 4096);
		run_gemm_case(dev, &g, seed * 1000 + (uint64_t)it);
	}
	accel_close(dev);
}

Test(gemm, long_streams_are_split_into_several_hardware_jobs)
{
	/* A 64 KiB command-buffer limit forces the lowering to cut the stream at block boundaries; every
	 * segment re-sends CONFIG and restarts the pipeline (jobs start from a clean device state). */
	struct accel_dev *dev;
	struct gcase g = { .m = 300, .n = 200, .k = 3000, .bias = true, .relu = true, .requant = true };
	struct gcase f = { .m = 130, .n = 70, .k = 2000, .f32 = true, .tb = true };

	if (!test_is_sim())
		cr_skip_test("needs a sim with a small command-buffer limit");
	cr_assert_eq(accel_open("sim:rows=2,cols=2,pes=4,sram=65536,cmdbuf=65536", &dev), 0);
	run_gemm_case(dev, &g, 900);
	run_gemm_case(dev, &f, 901);
	{
		struct accel_buffer *ba = alloc_buf(dev, 300 * 3000), *bb = alloc_buf(dev, 3000 * 200);
		struct accel_buffer *bc = alloc_buf(dev, 300 * 200 * 4);
		struct accel_tensor A, B, C;
		struct accel_gemm_desc d;
		struct accel_counters cnt;
		struct accel_job *job;

		accel_tensor_2d(ba, 0, ACCEL_INT8, 300, 3000, &A);
		accel_tensor_2d(bb, 0, ACCEL_INT8, 3000, 200, &B);
		accel_tensor_2d(bc, 0, ACCEL_INT32, 300, 200, &C);
		memset(&d, 0, sizeof(d));
		d.a = &A;
		d.b = &B;
		d.c = &C;
		cr_assert_eq(accel_gemm(dev, &d, NULL, &job), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_counters(job, &cnt), 0);
		cr_assert_gt(cnt.hw_jobs, 1, "expected a split stream, got %u hardware job(s)", cnt.hw_jobs);
		accel_job_free(job);
		accel_buffer_free(ba);
		accel_buffer_free(bb);
		accel_buffer_free(bc);
	}
	accel_close(dev);
}

/* Per-column requantisation records (ISA 2 SFU QCOL): C[i][j] = sat8(((acc + bias_j) * M_j + rnd) >> s_j
 * + zp) with every column its own M_j, s_j; across N blocks and rows, then the argument errors. */
Test(gemm, per_column_requant_records)
{
	const char *devs[] = { NULL, "sim:rows=2,cols=2,pes=4,sram=65536" };
	uint32_t M = 45, N = 150, K = 70;
	uint64_t s = 0x9c01;

	for (unsigned v = 0; v < 2; v++) {
		struct accel_dev *dev = open_dev(devs[v]);
		struct accel_buffer *ba = alloc_buf(dev, M * K), *bb = alloc_buf(dev, K * N), *bc = alloc_buf(dev, M * N);
		struct accel_buffer *br = alloc_buf(dev, N * 12);
		struct accel_tensor A, B, C, R;
		struct accel_gemm_desc d;
		int8_t *a = accel_buffer_ptr(ba), *b = accel_buffer_ptr(bb), *c = accel_buffer_ptr(bc);
		int32_t *rec = accel_buffer_ptr(br);
		unsigned wrong = 0;

		fill_i8(a, M * K, &s);
		fill_i8(b, K * N, &s);
		for (uint32_t j = 0; j < N; j++) {
			uint8_t sh;

			rec[3 * j] = (int32_t)(xrng(&s) % 40001) - 20000;
			cr_assert_eq(accel_quant_from_scale(exp2((double)(xrng(&s) % 4097) / 512.0 - 12.0), &rec[3 * j + 1],
							    &sh), 0);
			rec[3 * j + 2] = sh;
		}
		cr_assert_eq(accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &A), 0);
		cr_assert_eq(accel_tensor_2d(bb, 0, ACCEL_INT8, K, N, &B), 0);
		cr_assert_eq(accel_tensor_2d(bc, 0, ACCEL_INT8, M, N, &C), 0);
		cr_assert_eq(accel_tensor_2d(br, 0, ACCEL_INT32, N, 3, &R), 0);
		memset(&d, 0, sizeof(d));
		d.a = &A;
		d.b = &B;
		d.c = &C;
		d.epi.bias = &R;
		d.epi.act = ACCEL_ACT_RELU;
		d.epi.zero_point = 11;
		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		for (uint32_t i = 0; i < M; i++)
			for (uint32_t j = 0; j < N; j++) {
				int32_t acc = rec[3 * j];

				for (uint32_t k = 0; k < K; k++)
					acc += a[i * K + k] * b[k * N + j];
				acc = acc < 0 ? 0 : acc;
				wrong += c[i * N + j] != ref_requant(acc, rec[3 * j + 1], (unsigned)rec[3 * j + 2], 11);
			}
		cr_assert_eq(wrong, 0, "device %u: %u of %u outputs differ", v, wrong, M * N);
		/* records with a per-tensor multiplier too, a non-contiguous record tensor, a fp32 op */
		d.epi.multiplier = 3;
		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
		d.epi.multiplier = 0;
		d.epi.shift = 2;
		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
		d.epi.shift = 0;
		R.strides[0] = 16;
		R.shape[0] = N / 2;
		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), -EINVAL);
		cr_assert(strstr(accel_last_error(dev), "1 x 150") != NULL, "%s", accel_last_error(dev));
		accel_buffer_free(ba);
		accel_buffer_free(bb);
		accel_buffer_free(bc);
		accel_buffer_free(br);
		accel_close(dev);
	}
}

/* C = A x B (int8) requantised to int8 with records rec (N x {bias, multiplier, shift}) when qcol, else
 * with rec[0..N) as a per-tensor bias and mult/shift/zp; the outputs that differ from the reference. */
static unsigned gemm_i8_requant_wrong(struct accel_dev *dev, uint32_t M, uint32_t N, uint32_t K, bool qcol,
				      uint64_t seed)
{
	struct accel_buffer *ba = alloc_buf(dev, (uint64_t)M * K), *bb = alloc_buf(dev, (uint64_t)K * N);
	struct accel_buffer *bc = alloc_buf(dev, (uint64_t)M * N), *br = alloc_buf(dev, (uint64_t)N * 12);
	int8_t *a = accel_buffer_ptr(ba), *b = accel_buffer_ptr(bb), *c = accel_buffer_ptr(bc);
	int32_t *rec = accel_buffer_ptr(br), *acc = calloc(N, sizeof(*acc));
	struct accel_tensor A, B, C, R;
	struct accel_gemm_desc d;
	int32_t mult;
	uint8_t shift;
	unsigned wrong = 0;
	uint64_t s = seed;
	int ret;

	cr_assert(acc);
	fill_i8(a, (size_t)M * K, &s);
	fill_i8(b, (size_t)K * N, &s);
	cr_assert_eq(accel_quant_from_scale(1.0 / (64.0 * sqrt((double)K)), &mult, &shift), 0);
	for (uint32_t j = 0; j < N; j++) {
		uint8_t sh;

		if (!qcol) {
			rec[j] = (int32_t)(xrng(&s) % 20001) - 10000;
			continue;
		}
		rec[3 * j] = (int32_t)(xrng(&s) % 40001) - 20000;
		cr_assert_eq(accel_quant_from_scale(exp2((double)(xrng(&s) % 4097) / 512.0 - 12.0), &rec[3 * j + 1],
						    &sh), 0);
		rec[3 * j + 2] = sh;
	}
	cr_assert_eq(accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &A), 0);
	cr_assert_eq(accel_tensor_2d(bb, 0, ACCEL_INT8, K, N, &B), 0);
	cr_assert_eq(accel_tensor_2d(bc, 0, ACCEL_INT8, M, N, &C), 0);
	cr_assert_eq(accel_tensor_2d(br, 0, ACCEL_INT32, qcol ? N : 1, qcol ? 3 : N, &R), 0);
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.b = &B;
	d.c = &C;
	d.epi.bias = &R;
	d.epi.zero_point = 5;
	if (!qcol) {
		d.epi.multiplier = mult;
		d.epi.shift = shift;
	}
	ret = accel_gemm(dev, &d, NULL, NULL);
	cr_expect_eq(ret, 0, "%ux%ux%u %s: %s: %s", M, N, K, qcol ? "per-column" : "per-tensor", accel_strerror(ret),
		     accel_last_error(dev));
	for (uint32_t i = 0; !ret && i < M; i++) {
		memset(acc, 0, N * sizeof(*acc));
		for (uint32_t k = 0; k < K; k++)
			for (uint32_t j = 0; j < N; j++)
				acc[j] += a[(size_t)i * K + k] * b[(size_t)k * N + j];
		for (uint32_t j = 0; j < N; j++) {
			int8_t want = qcol ? ref_requant(acc[j] + rec[3 * j], rec[3 * j + 1],
							 (unsigned)rec[3 * j + 2], 5)
					   : ref_requant(acc[j] + rec[j], mult, shift, 5);

			wrong += c[(size_t)i * N + j] != want;
		}
	}
	free(acc);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
	accel_buffer_free(br);
	return ret ? M * N : wrong;
}

/* Issue #27 B1: the plan cache handed the per-tensor GEMM's plan (4-byte bias columns) to the
 * per-column requantisation of the same shape (12-byte records), whose records then overran the
 * storage-unit half (-EIO SRAM_RANGE).  Both in one thread (one test process), each checked. */
Test(gemm, per_column_requant_after_per_tensor_of_the_same_shape)
{
	static const struct {
		const char *dev;
		uint32_t M, N, K;
	} cases[] = {
		{ "sim:sram=65536", 8, 4096, 1024 },
		{ "sim:sram=65536", 1, 8192, 256 },
		{ NULL, 1, 65536, 1024 },	/* the default geometry */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct accel_dev *dev = open_dev(cases[i].dev);
		unsigned w;

		w = gemm_i8_requant_wrong(dev, cases[i].M, cases[i].N, cases[i].K, false, 0x2701 + i);
		cr_expect_eq(w, 0, "case %u per-tensor: %u outputs differ", i, w);
		w = gemm_i8_requant_wrong(dev, cases[i].M, cases[i].N, cases[i].K, true, 0x2781 + i);
		cr_expect_eq(w, 0, "case %u per-column: %u outputs differ", i, w);
		accel_close(dev);
	}
}
