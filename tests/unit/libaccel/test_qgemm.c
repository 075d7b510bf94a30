/* SPDX-License-Identifier: MIT */
/*
 * accel_qgemm: GEMM with packed int8 / int4 weights expanded by the decompressing load (issue #29).
 * Every case dequantises the packed weights here in plain C from the spec (commands.md "DMA_DEQ"),
 * multiplies in double and compares; the same dequantised W through accel_gemm (trans_b) must give
 * bit-identical C (the device's fp32 sum runs over k in order whatever the tiling).
 */
#include "common.h"

struct qcase {
	enum accel_qformat fmt;
	uint32_t m, n, k, block;
	bool zp, f16, trans_a, bias;
};

struct qbufs {
	struct accel_buffer *codes, *scales, *zps;
	struct accel_qweights w;
	float *deq;		/* N x K, the reference dequantisation */
};

static double f16_value(uint16_t h)
{
	int ex = (h >> 10) & 31, m = h & 1023;
	double v = ex ? ldexp(1024 + m, ex - 25) : ldexp(m, -24);

	return (h >> 15) ? -v : v;
}

/* Random packed weights of c, column pitches a little above one column's bytes. */
static void make_weights(struct accel_dev *dev, const struct qcase *c, uint64_t *rs, struct qbufs *q)
{
	unsigned bits = c->fmt == ACCEL_QFMT_UINT4 ? 4 : 8;
	uint32_t nb = c->block ? (c->k + c->block - 1) / c->block : 1;
	uint64_t cb = bits == 4 ? (c->k + 1) / 2 : c->k, zb = bits == 4 ? (nb + 1) / 2 : nb;
	uint64_t cp = cb + 3, sp = (uint64_t)nb * (c->f16 ? 2 : 4) + 4, zp = zb + 1;
	uint8_t *codes, *scales, *zps = NULL;

	memset(q, 0, sizeof(*q));
	q->codes = alloc_buf(dev, cp * c->n);
	q->scales = alloc_buf(dev, sp * c->n);
	codes = accel_buffer_ptr(q->codes);
	scales = accel_buffer_ptr(q->scales);
	for (uint64_t i = 0; i < cp * c->n; i++)
		codes[i] = (uint8_t)xrng(rs);
	for (uint64_t col = 0; col < c->n; col++)
		for (uint32_t b = 0; b < nb; b++) {
			double v = ldexp(1.0 + (double)(xrng(rs) % 1024) / 1024.0, -(int)(xrng(rs) % 6) - 4);

			if (c->f16) {
				/* a binary16 normal value: 1.m x 2^(e-15) with e in 5..10 */
				uint16_t h = (uint16_t)((xrng(rs) & 1) << 15 | (5 + xrng(rs) % 6) << 10 | xrng(rs) % 1024);

				memcpy(scales + col * sp + 2 * b, &h, 2);
			} else {
				float f = (float)((xrng(rs) & 1) ? -v : v);

				memcpy(scales + col * sp + 4 * b, &f, 4);
			}
		}
	if (c->zp) {
		q->zps = alloc_buf(dev, zp * c->n);
		zps = accel_buffer_ptr(q->zps);
		for (uint64_t i = 0; i < zp * c->n; i++)
			zps[i] = (uint8_t)xrng(rs);
	}
	q->w = (struct accel_qweights){ .format = c->fmt, .k = c->k, .n = c->n, .block = c->block, .scale_f16 = c->f16,
					.codes = q->codes, .scales = q->scales, .zero_points = q->zps,
					.code_pitch = cp, .scale_pitch = sp, .zp_pitch = zp };
	/* the reference: W[k][n] = (code - zero point) * scale, one rounding to fp32 */
	q->deq = malloc(sizeof(float) * c->n * c->k);
	for (uint32_t col = 0; col < c->n; col++)
		for (uint32_t k = 0; k < c->k; k++) {
			uint32_t b = c->block ? k / c->block : 0;
			const uint8_t *cc = codes + col * cp, *zz = zps ? zps + col * zp : NULL;
			int code, z;
			double s;

			if (bits == 4) {
				code = (k & 1) ? cc[k / 2] >> 4 : cc[k / 2] & 15;
				z = zz ? ((b & 1) ? zz[b / 2] >> 4 : zz[b / 2] & 15) : 8;
			} else if (c->fmt == ACCEL_QFMT_INT8) {
				code = (int8_t)cc[k];
				z = zz ? (int8_t)zz[b] : 0;
			} else {
				code = cc[k];
				z = zz ? zz[b] : 128;
			}
			if (c->f16) {
				uint16_t h;

				memcpy(&h, scales + col * sp + 2 * b, 2);
				s = f16_value(h);
			} else {
				float f;

				memcpy(&f, scales + col * sp + 4 * b, 4);
				s = f;
			}
			q->deq[(size_t)col * c->k + k] = (float)((double)(code - z) * s);
		}
}

static void free_weights(struct qbufs *q)
{
	accel_buffer_free(q->codes);
	accel_buffer_free(q->scales);
	accel_buffer_free(q->zps);
	free(q->deq);
}

/* Runs c through accel_qgemm and through accel_gemm on the dequantised W; returns the qgemm's counters. */
static void run_qcase(struct accel_dev *dev, const struct qcase *c, uint64_t seed, struct accel_counters *cnt)
{
	uint64_t rs = seed;
	struct qbufs q;
	uint32_t ar = c->trans_a ? c->k : c->m, ac = c->trans_a ? c->m : c->k;
	struct accel_buffer *ba = alloc_buf(dev, (uint64_t)ar * ac * 4), *bc = alloc_buf(dev, (uint64_t)c->m * c->n * 4);
	struct accel_buffer *bc2 = alloc_buf(dev, (uint64_t)c->m * c->n * 4), *bw = alloc_buf(dev, (uint64_t)c->n * c->k * 4);
	struct accel_buffer *bbias = alloc_buf(dev, (uint64_t)c->n * 4);
	struct accel_tensor A, C, C2, W, BIAS;
	struct accel_qgemm_desc d;
	struct accel_gemm_desc g;
	struct accel_job *job = NULL;
	const float *a, *got, *want;
	int ret;

	make_weights(dev, c, &rs, &q);
	cr_assert_eq(accel_tensor_2d(ba, 0, ACCEL_FP32, ar, ac, &A), 0);
	cr_assert_eq(accel_tensor_2d(bc, 0, ACCEL_FP32, c->m, c->n, &C), 0);
	cr_assert_eq(accel_tensor_2d(bc2, 0, ACCEL_FP32, c->m, c->n, &C2), 0);
	cr_assert_eq(accel_tensor_2d(bw, 0, ACCEL_FP32, c->n, c->k, &W), 0);
	cr_assert_eq(accel_tensor_2d(bbias, 0, ACCEL_FP32, 1, c->n, &BIAS), 0);
	fill_f32(accel_buffer_ptr(ba), (size_t)ar * ac, &rs);
	fill_f32(accel_buffer_ptr(bbias), c->n, &rs);
	memcpy(accel_buffer_ptr(bw), q.deq, sizeof(float) * c->n * c->k);
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.c = &C;
	d.trans_a = c->trans_a;
	d.w = &q.w;
	d.epi.bias = c->bias ? &BIAS : NULL;
	ret = accel_qgemm(dev, &d, NULL, &job);
	cr_assert_eq(ret, 0, "seed %llu qgemm %ux%ux%u: %s: %s", (unsigned long long)seed, c->m, c->n, c->k,
		     accel_strerror(ret), accel_last_error(dev));
	cr_assert_eq(accel_job_wait(job, -1), 0, "seed %llu: %s", (unsigned long long)seed, accel_last_error(dev));
	if (cnt)
		cr_assert_eq(accel_job_counters(job, cnt), 0);
	accel_job_free(job);
	memset(&g, 0, sizeof(g));
	g.a = &A;
	g.b = &W;
	g.c = &C2;
	g.trans_a = c->trans_a;
	g.trans_b = true;
	g.epi.bias = d.epi.bias;
	ret = accel_gemm(dev, &g, NULL, NULL);
	cr_assert_eq(ret, 0, "%s", accel_last_error(dev));
	a = accel_buffer_ptr(ba);
	got = accel_buffer_ptr(bc);
	want = accel_buffer_ptr(bc2);
	for (uint32_t i = 0; i < c->m; i++)
		for (uint32_t j = 0; j < c->n; j++) {
			double sum = c->bias ? ((const float *)accel_buffer_ptr(bbias))[j] : 0, mag = fabs(sum);
			float x = got[(size_t)i * c->n + j], y = want[(size_t)i * c->n + j];

			for (uint32_t p = 0; p < c->k; p++) {
				double t = (double)a[c->trans_a ? (size_t)p * c->m + i : (size_t)i * c->k + p] *
					   q.deq[(size_t)j * c->k + p];

				sum += t;
				mag += fabs(t);
			}
			cr_assert(fabs(x - sum) <= F32_RTOL * (1 + mag), "seed %llu fmt %d block %u %ux%ux%u C[%u][%u] = %g, "
				  "expected %g", (unsigned long long)seed, (int)c->fmt, c->block, c->m, c->n, c->k, i, j, x, sum);
			cr_assert(!memcmp(&x, &y, 4), "seed %llu C[%u][%u]: qgemm %a, gemm on the dequantised W %a",
				  (unsigned long long)seed, i, j, x, y);
		}
	free_weights(&q);
	accel_buffer_free(ba);
	accel_buffer_free(bc);
	accel_buffer_free(bc2);
	accel_buffer_free(bw);
	accel_buffer_free(bbias);
}

Test(qgemm, int4_blockwise_matches_dequantise_then_gemm)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	static const struct qcase cases[] = {
		{ ACCEL_QFMT_UINT4, 1, 40, 256, 32, false, false, false, false },	/* decode: one token */
		{ ACCEL_QFMT_UINT4, 7, 33, 300, 32, true, false, false, true },		/* K not a block multiple */
		{ ACCEL_QFMT_UINT4, 17, 9, 512, 128, true, false, true, false },
		{ ACCEL_QFMT_UINT4, 5, 70, 192, 64, false, true, false, true },		/* fp16 scales */
		{ ACCEL_QFMT_UINT4, 3, 5, 1001, 16, true, false, false, false },	/* odd K, many K tiles */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_qcase(dev, &cases[i], 400 + i, NULL);
	accel_close(dev);
}

Test(qgemm, int8_per_column_matches_dequantise_then_gemm)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=65536");
	static const struct qcase cases[] = {
		{ ACCEL_QFMT_INT8, 1, 64, 200, 0, false, false, false, false },
		{ ACCEL_QFMT_INT8, 9, 31, 77, 0, true, false, false, true },
		{ ACCEL_QFMT_UINT8, 4, 19, 130, 0, true, false, true, false },
		{ ACCEL_QFMT_UINT8, 2, 8, 64, 32, false, true, false, false },	/* int8 blockwise (MatMulNBits bits 8) */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_qcase(dev, &cases[i], 500 + i, NULL);
	accel_close(dev);
}

Test(qgemm, decode_reads_the_packed_bytes_only)
{
	/* one token through a 768 x 768 int4 layer (block 32, fp32 scales): the host reads the codes and
	 * scales (768 x (384 + 96) bytes) and A, not 768 x 768 fp32 weights */
	struct accel_dev *dev = open_dev(NULL);
	struct qcase c = { ACCEL_QFMT_UINT4, 1, 768, 768, 32, false, false, false, false };
	struct accel_counters cnt;

	run_qcase(dev, &c, 600, &cnt);
	cr_assert_geq(cnt.bytes_h2d, 768ull * (384 + 96), "%llu", (unsigned long long)cnt.bytes_h2d);
	cr_assert_lt(cnt.bytes_h2d, 768ull * 768 * 4 / 5, "%llu bytes read", (unsigned long long)cnt.bytes_h2d);
	accel_close(dev);
}

Test(qgemm, bad_weights_are_refused_naming_the_field)
{
	struct accel_dev *dev = open_dev(NULL);
	struct qcase c = { ACCEL_QFMT_UINT4, 2, 8, 64, 32, true, false, false, false };
	struct accel_buffer *ba = alloc_buf(dev, 2 * 64 * 4), *bc = alloc_buf(dev, 2 * 8 * 4);
	struct accel_tensor A, C;
	struct accel_qgemm_desc d;
	struct accel_qweights w;
	struct accel_job *job = NULL;
	uint64_t rs = 700;
	struct qbufs q;

	make_weights(dev, &c, &rs, &q);
	cr_assert_eq(accel_tensor_2d(ba, 0, ACCEL_FP32, 2, 64, &A), 0);
	cr_assert_eq(accel_tensor_2d(bc, 0, ACCEL_FP32, 2, 8, &C), 0);
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.c = &C;
	d.w = &w;
	w = q.w;
	w.format = (enum accel_qformat)7;
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "format"), "%s", accel_last_error(dev));
	w = q.w;
	w.block = 48;
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "block 48"), "%s", accel_last_error(dev));
	w = q.w;
	w.k = 65;	/* op(A) has K = 64 (and the codes buffer has room for 65 nibbles) */
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "inner dimensions"), "%s", accel_last_error(dev));
	w = q.w;
	w.codes_offset = 64;	/* the last column runs past its buffer */
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -ERANGE);
	cr_assert(strstr(accel_last_error(dev), "codes"), "%s", accel_last_error(dev));
	w = q.w;
	w.scale_pitch = 4;	/* below one column's 2 scales */
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "scales pitch"), "%s", accel_last_error(dev));
	w = q.w;
	w.zp_offset = q.w.zp_pitch * 8;
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -ERANGE);
	cr_assert(strstr(accel_last_error(dev), "zero points"), "%s", accel_last_error(dev));
	w = q.w;
	A.dtype = ACCEL_INT8;
	A.strides[1] = 1;
	A.strides[0] = 64;
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "FP32"), "%s", accel_last_error(dev));
	d.w = NULL;
	cr_assert_eq(accel_qgemm(dev, &d, NULL, &job), -EINVAL);
	free_weights(&q);
	accel_buffer_free(ba);
	accel_buffer_free(bc);
	accel_close(dev);
}
