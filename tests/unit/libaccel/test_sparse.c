/* SPDX-License-Identifier: MIT */
/* sparse (#8): packing round trip, sparse GEMM/conv bit-exact vs dense vs CPU, dispatcher routing,
 * partition invariants, overlap/non-overlap convolution through a partition, time folding. */
#include "common.h"

/* Weights with a given share of zeros (percent). */
static void fill_sparse_i8(int8_t *p, size_t n, unsigned zero_pct, uint64_t *s)
{
	for (size_t i = 0; i < n; i++) {
		int8_t v = (int8_t)xrng(s);

		p[i] = (xrng(s) % 100) < zero_pct ? 0 : (v ? v : 1);
	}
}

static void ref_gemm(uint32_t M, uint32_t N, uint32_t K, const int8_t *a, const int8_t *w, int32_t *c)
{
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t n = 0; n < N; n++) {
			int32_t s = 0;

			for (uint32_t k = 0; k < K; k++)
				s += a[(size_t)i * K + k] * w[(size_t)k * N + n];
			c[(size_t)i * N + n] = s;
		}
}

Test(sparse, pack_round_trip_int8_and_fp32_drops_zero_weights)
{
	struct accel_dev *dev = open_dev(NULL);
	uint64_t seed = 11;

	for (unsigned zp = 0; zp <= 95; zp += 19) {
		uint32_t K = 37 + zp, N = 23, kb = zp % 2 ? 16 : 0;
		struct accel_buffer *b = alloc_buf(dev, (uint64_t)K * N * 4);
		struct accel_tensor t;
		struct accel_sparse_weights *sw;
		struct accel_sparse_info si;
		int8_t *w = accel_buffer_ptr(b), back[132 * 23];
		uint64_t nnz = 0;

		fill_sparse_i8(w, (size_t)K * N, zp, &seed);
		for (size_t i = 0; i < (size_t)K * N; i++)
			nnz += w[i] != 0;
		accel_tensor_2d(b, 0, ACCEL_INT8, K, N, &t);
		cr_assert_eq(accel_sparse_pack(dev, &t, false, kb, &sw), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_sparse_info(sw, &si), 0);
		cr_assert_eq(si.nnz, nnz);
		cr_assert_eq(si.k, K);
		cr_assert_eq(si.n, N);
		cr_assert_eq(si.packed_bytes, si.slots * 4);
		cr_assert_geq(si.slots, nnz);
		cr_assert_eq(accel_sparse_unpack(sw, back, sizeof(back)), 0);
		cr_assert_eq(memcmp(back, w, (size_t)K * N), 0, "zeros %u%%", zp);
		accel_sparse_free(sw);
		/* fp32, transposed (N x K) input */
		{
			float *f = accel_buffer_ptr(b), fb[132 * 23], exp[132 * 23];

			for (size_t i = 0; i < (size_t)K * N; i++)
				f[i] = (xrng(&seed) % 100) < zp ? 0.0f : (float)((int)(xrng(&seed) % 64) + 1) / 8.0f;
			accel_tensor_2d(b, 0, ACCEL_FP32, N, K, &t);
			cr_assert_eq(accel_sparse_pack(dev, &t, true, kb, &sw), 0, "%s", accel_last_error(dev));
			cr_assert_eq(accel_sparse_unpack(sw, fb, sizeof(fb)), 0);
			for (uint32_t k = 0; k < K; k++)
				for (uint32_t n = 0; n < N; n++)
					exp[k * N + n] = f[n * K + k];
			cr_assert_eq(memcmp(fb, exp, (size_t)K * N * 4), 0);
			accel_sparse_free(sw);
		}
		accel_buffer_free(b);
	}
	accel_close(dev);
}

Test(sparse, sparse_gemm_is_bit_exact_with_dense_and_cpu_on_random_layers)
{
	struct accel_dev *dev = open_dev("sim:rows=2,cols=2,pes=4,sram=262144");
	static const unsigned zps[] = { 0, 25, 50, 75, 90, 95 };
	uint64_t seed = 2026;

	for (unsigned t = 0; t < 12; t++) {
		uint64_t s0 = seed;
		uint32_t M = 1 + (uint32_t)(xrng(&seed) % 70), N = 1 + (uint32_t)(xrng(&seed) % 50);
		uint32_t K = 1 + (uint32_t)(xrng(&seed) % 300), kb = t % 3 ? 64 : 0;
		unsigned zp = zps[t % 6], flags = t & 3;
		struct accel_buffer *ba = alloc_buf(dev, (uint64_t)M * K), *bw = alloc_buf(dev, (uint64_t)K * N);
		struct accel_buffer *bc = alloc_buf(dev, (uint64_t)M * N * 4), *bd = alloc_buf(dev, (uint64_t)M * N * 4);
		struct accel_tensor ta, tw, tc, td;
		struct accel_sparse_weights *sw;
		int32_t *ref = calloc((size_t)M * N, 4);
		int8_t *a = accel_buffer_ptr(ba), *w = accel_buffer_ptr(bw);

		fill_sparse_i8(a, (size_t)M * K, zp / 2, &seed);	/* activations with zeros too */
		fill_sparse_i8(w, (size_t)K * N, zp, &seed);
		ref_gemm(M, N, K, a, w, ref);
		accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta);
		accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw);
		accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &tc);
		accel_tensor_2d(bd, 0, ACCEL_INT32, M, N, &td);
		{
			struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &td };

			cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		}
		cr_assert_eq(accel_sparse_pack(dev, &tw, false, kb, &sw), 0, "%s", accel_last_error(dev));
		{
			struct accel_sparse_gemm_desc d = { .a = &ta, .c = &tc, .w = sw, .flags = flags };

			cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), 0, "seed %llu %ux%ux%u: %s",
				     (unsigned long long)s0, M, N, K, accel_last_error(dev));
		}
		cr_assert_eq(memcmp(accel_buffer_ptr(bd), ref, (size_t)M * N * 4), 0, "dense vs cpu, seed %llu",
			     (unsigned long long)s0);
		cr_assert_eq(memcmp(accel_buffer_ptr(tc.buf), ref, (size_t)M * N * 4), 0,
			     "sparse vs cpu, seed %llu %ux%ux%u zeros %u%% flags %u", (unsigned long long)s0, M, N, K, zp,
			     flags);
		accel_sparse_free(sw);
		free(ref);
		accel_buffer_free(ba);
		accel_buffer_free(bw);
		accel_buffer_free(bc);
		accel_buffer_free(bd);
	}
	accel_close(dev);
}

Test(sparse, sparse_gemm_requantised_int8_output_matches_dense)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t M = 40, N = 72, K = 200;
	uint64_t seed = 77;
	struct accel_buffer *ba = alloc_buf(dev, M * K), *bw = alloc_buf(dev, K * N), *bc = alloc_buf(dev, M * N),
			    *bd = alloc_buf(dev, M * N);
	struct accel_tensor ta, tw, tc, td;
	struct accel_sparse_weights *sw;
	struct accel_epilogue epi = { .act = ACCEL_ACT_RELU, .multiplier = 1 << 30, .shift = 40, .zero_point = 3 };

	fill_sparse_i8(accel_buffer_ptr(ba), M * K, 30, &seed);
	fill_sparse_i8(accel_buffer_ptr(bw), K * N, 80, &seed);
	accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta);
	accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw);
	accel_tensor_2d(bc, 0, ACCEL_INT8, M, N, &tc);
	accel_tensor_2d(bd, 0, ACCEL_INT8, M, N, &td);
	{
		struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &td, .epi = epi };

		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	cr_assert_eq(accel_sparse_pack(dev, &tw, false, 0, &sw), 0);
	{
		struct accel_sparse_gemm_desc d = { .a = &ta, .c = &tc, .w = sw, .epi = epi,
						    .flags = ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB };

		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	cr_assert_eq(memcmp(accel_buffer_ptr(bc), accel_buffer_ptr(bd), M * N), 0);
	accel_sparse_free(sw);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_buffer_free(bd);
	accel_close(dev);
}

Test(sparse, sparse_gemm_skips_work_and_rejects_bad_input)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t M = 128, N = 128, K = 256;
	uint64_t seed = 5;
	struct accel_buffer *ba = alloc_buf(dev, M * K), *bw = alloc_buf(dev, K * N), *bc = alloc_buf(dev, M * N * 4);
	struct accel_tensor ta, tw, tc, bad;
	struct accel_sparse_weights *sw;
	struct accel_counters cnt;
	struct accel_job *job;
	uint64_t nnz = 0;
	int8_t *w = accel_buffer_ptr(bw);

	fill_i8(accel_buffer_ptr(ba), M * K, &seed);
	for (uint32_t i = 0; i < M * K; i++)
		((int8_t *)accel_buffer_ptr(ba))[i] |= 1;	/* no activation zeros */
	fill_sparse_i8(w, K * N, 90, &seed);
	for (uint32_t i = 0; i < K * N; i++)
		nnz += w[i] != 0;
	accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta);
	accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw);
	accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &tc);
	cr_assert_eq(accel_sparse_pack(dev, &tw, false, 0, &sw), 0);
	{
		struct accel_sparse_gemm_desc d = { .a = &ta, .c = &tc, .w = sw };

		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, &job), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_job_counters(job, &cnt), 0);
		accel_job_free(job);
		/* effective MACs = M x non-zero weights (dense activations), independent of tiling */
		cr_assert_eq(cnt.macs_effective, (uint64_t)M * nnz);
		d.flags = 0x80;
		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), -EINVAL);
		d.flags = 0;
		accel_tensor_2d(bc, 0, ACCEL_INT32, M, N - 1, &bad);
		d.c = &bad;
		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), -EINVAL);
		cr_assert(strlen(accel_last_error(dev)) > 0);
		d.c = &tc;
		d.w = NULL;
		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), -EINVAL);
	}
	{
		struct accel_sparse_weights *other = NULL;

		cr_assert_eq(accel_sparse_pack(dev, &tw, false, 70000, &other), -EINVAL);
		cr_assert_null(other);
	}
	accel_sparse_free(sw);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_close(dev);
}

static void ref_conv(uint32_t C, uint32_t H, uint32_t W, uint32_t KO, uint32_t R, const int8_t *in, const int8_t *wt,
		     int32_t *out, uint32_t stride, uint32_t pad, uint32_t OH, uint32_t OW)
{
	for (uint32_t oy = 0; oy < OH; oy++)
		for (uint32_t ox = 0; ox < OW; ox++)
			for (uint32_t k = 0; k < KO; k++) {
				int32_t s = 0;

				for (uint32_t ry = 0; ry < R; ry++)
					for (uint32_t rx = 0; rx < R; rx++) {
						int iy = (int)(oy * stride + ry) - (int)pad, ix = (int)(ox * stride + rx) - (int)pad;

						if (iy < 0 || iy >= (int)H || ix < 0 || ix >= (int)W)
							continue;
						for (uint32_t c = 0; c < C; c++)
							s += in[((size_t)iy * W + ix) * C + c] *
							     wt[(((size_t)k * R + ry) * R + rx) * C + c];
					}
				out[((size_t)oy * OW + ox) * KO + k] = s;
			}
}

struct convfix {
	struct accel_dev *dev;
	struct accel_buffer *bi, *bw, *bo;
	struct accel_tensor ti, tw, to;
	struct accel_conv2d_desc d;
	int32_t *ref;
	uint32_t C, H, W, KO, R, OH, OW;
};

static void conv_setup(struct convfix *f, struct accel_dev *dev, uint32_t C, uint32_t H, uint32_t W, uint32_t KO,
		       uint32_t R, uint32_t stride, uint32_t pad, unsigned wz, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->C = C, f->H = H, f->W = W, f->KO = KO, f->R = R;
	f->OH = (H + 2 * pad - R) / stride + 1;
	f->OW = (W + 2 * pad - R) / stride + 1;
	f->bi = alloc_buf(dev, (uint64_t)C * H * W);
	f->bw = alloc_buf(dev, (uint64_t)KO * C * R * R);
	f->bo = alloc_buf(dev, (uint64_t)KO * f->OH * f->OW * 4);
	/* activation density falls along H: the partitioner has something to balance */
	for (uint32_t y = 0; y < H; y++)
		fill_sparse_i8((int8_t *)accel_buffer_ptr(f->bi) + (size_t)y * W * C, (size_t)W * C, 90 * y / H, &seed);
	fill_sparse_i8(accel_buffer_ptr(f->bw), (size_t)KO * C * R * R, wz, &seed);
	accel_tensor_4d(f->bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &f->ti);
	accel_tensor_4d(f->bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, KO, C, R, R, &f->tw);
	accel_tensor_4d(f->bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, KO, f->OH, f->OW, &f->to);
	f->d = (struct accel_conv2d_desc){ .input = &f->ti, .weights = &f->tw, .output = &f->to, .stride_h = stride,
					   .stride_w = stride, .pad_top = pad, .pad_left = pad, .pad_bottom = pad,
					   .pad_right = pad, .dil_h = 1, .dil_w = 1, .groups = 1 };
	f->ref = calloc((size_t)KO * f->OH * f->OW, 4);
	ref_conv(C, H, W, KO, R, accel_buffer_ptr(f->bi), accel_buffer_ptr(f->bw), f->ref, stride, pad, f->OH, f->OW);
}

static void conv_check_out(struct convfix *f, const char *what)
{
	cr_assert_eq(memcmp(accel_buffer_ptr(f->bo), f->ref, (size_t)f->KO * f->OH * f->OW * 4), 0, "%s", what);
	memset(accel_buffer_ptr(f->bo), 0x5a, (size_t)f->KO * f->OH * f->OW * 4);
}

static void conv_teardown(struct convfix *f)
{
	free(f->ref);
	accel_buffer_free(f->bi);
	accel_buffer_free(f->bw);
	accel_buffer_free(f->bo);
}

Test(sparse, sparse_conv2d_matches_dense_conv_and_cpu)
{
	struct accel_dev *dev = open_dev(NULL);
	struct convfix f;
	struct accel_sparse_weights *sw;

	for (unsigned t = 0; t < 3; t++) {
		conv_setup(&f, dev, 8 + 5 * t, 13, 11, 20 + 7 * t, 3, 1 + (t == 2), 1, 40 * t + 5, 100 + t);
		cr_assert_eq(accel_conv2d(dev, &f.d, NULL, NULL), 0, "%s", accel_last_error(dev));
		conv_check_out(&f, "dense conv");
		cr_assert_eq(accel_sparse_pack_conv(dev, &f.tw, 0, &sw), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_sparse_conv2d(dev, &f.d, sw, ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB, NULL, NULL), 0,
			     "%s", accel_last_error(dev));
		conv_check_out(&f, "sparse conv");
		accel_sparse_free(sw);
		conv_teardown(&f);
	}
	accel_close(dev);
}

Test(sparse, sparse_conv2d_nchw_oihw_matches_dense_conv)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t N = 2, C = 7, H = 9, W = 10, KO = 19, R = 3;
	struct accel_buffer *bi = alloc_buf(dev, N * C * H * W), *bw = alloc_buf(dev, KO * C * R * R),
			    *bo = alloc_buf(dev, N * KO * H * W * 4), *bd = alloc_buf(dev, N * KO * H * W * 4);
	struct accel_tensor ti, tw, to, td;
	struct accel_sparse_weights *sw;
	uint64_t seed = 31;

	fill_sparse_i8(accel_buffer_ptr(bi), N * C * H * W, 40, &seed);
	fill_sparse_i8(accel_buffer_ptr(bw), KO * C * R * R, 70, &seed);
	accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, N, C, H, W, &ti);
	accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, KO, C, R, R, &tw);
	accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NCHW, N, KO, H, W, &to);
	accel_tensor_4d(bd, 0, ACCEL_INT32, ACCEL_LAYOUT_NCHW, N, KO, H, W, &td);
	{
		struct accel_conv2d_desc d = { .input = &ti, .weights = &tw, .output = &td, .stride_h = 1, .stride_w = 1,
					       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
					       .dil_h = 1, .dil_w = 1, .groups = 1 };

		cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_sparse_pack_conv(dev, &tw, 32, &sw), 0, "%s", accel_last_error(dev));
		d.output = &to;
		cr_assert_eq(accel_sparse_conv2d(dev, &d, sw, ACCEL_SPARSE_ZSKIP_A, NULL, NULL), 0, "%s",
			     accel_last_error(dev));
		cr_assert_eq(memcmp(accel_buffer_ptr(bo), accel_buffer_ptr(bd), N * KO * H * W * 4), 0);
		d.groups = 7;
		cr_assert_eq(accel_sparse_conv2d(dev, &d, sw, 0, NULL, NULL), -EOPNOTSUPP);
	}
	accel_sparse_free(sw);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_buffer_free(bd);
	accel_close(dev);
}

Test(sparse, dispatcher_routes_by_documented_thresholds)
{
	struct accel_route_info ri;
	struct accel_dev *dev = open_dev(NULL);
	uint32_t M = 64, N = 96, K = 128;
	uint64_t seed = 9;
	struct accel_buffer *ba = alloc_buf(dev, M * K), *bw = alloc_buf(dev, K * N), *bc = alloc_buf(dev, M * N * 4);
	struct accel_tensor ta, tw, tc;
	struct accel_sparse_weights *sw;
	int32_t *ref = calloc(M * N, 4);

	cr_assert_eq(accel_sparse_route(1.0, 1.0, true, 0, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_DENSE);
	cr_assert_eq(accel_sparse_route(ACCEL_SPARSE_W_THRESHOLD, 1.0, true, 0, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_SPARSE);
	cr_assert_eq(accel_sparse_route(ACCEL_SPARSE_W_THRESHOLD + 0.01, 1.0, true, 0, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_DENSE);
	cr_assert_eq(accel_sparse_route(0.1, 1.0, false, 0, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_DENSE, "no packed weights: dense");
	cr_assert_eq(accel_sparse_route(1.0, ACCEL_SPARSE_A_THRESHOLD, true, 0, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_ZSKIP);
	cr_assert_eq(ri.flags, ACCEL_SPARSE_ZSKIP_A);
	cr_assert_eq(accel_sparse_route(0.3, 0.5, true, 0.2, 0, &ri), 0);
	cr_assert_eq(ri.route, ACCEL_ROUTE_ZSKIP, "explicit weight threshold");

	/* measured densities of real tensors drive accel_auto_gemm; results stay exact */
	for (unsigned t = 0; t < 3; t++) {
		static const unsigned wz[] = { 0, 80, 10 }, az[] = { 0, 0, 50 };
		static const enum accel_route want[] = { ACCEL_ROUTE_DENSE, ACCEL_ROUTE_SPARSE, ACCEL_ROUTE_ZSKIP };
		struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &tc };

		fill_sparse_i8(accel_buffer_ptr(ba), M * K, az[t], &seed);
		fill_sparse_i8(accel_buffer_ptr(bw), K * N, wz[t], &seed);
		accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta);
		accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw);
		accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &tc);
		ref_gemm(M, N, K, accel_buffer_ptr(ba), accel_buffer_ptr(bw), ref);
		cr_assert_eq(accel_sparse_pack(dev, &tw, false, 0, &sw), 0);
		cr_assert_eq(accel_auto_gemm(dev, &d, sw, NULL, NULL, &ri), 0, "%s", accel_last_error(dev));
		cr_assert_eq(ri.route, want[t], "case %u: route %d (w %.2f a %.2f)", t, ri.route, ri.weight_density,
			     ri.act_density);
		cr_assert_eq(memcmp(accel_buffer_ptr(bc), ref, M * N * 4), 0, "case %u", t);
		if (ri.route == ACCEL_ROUTE_SPARSE)
			cr_assert_lt(ri.est_sparse_cycles, ri.est_dense_cycles, "sparse only when the planner agrees");
		accel_sparse_free(sw);
	}
	{
		struct accel_gemm_desc d = { .a = NULL, .b = &tw, .c = &tc };

		cr_assert_eq(accel_sparse_pack(dev, &tw, false, 0, &sw), 0);
		cr_assert_eq(accel_auto_gemm(dev, &d, sw, NULL, NULL, &ri), -EINVAL);
		cr_assert(strlen(accel_last_error(dev)) > 0);
		accel_sparse_free(sw);
	}
	free(ref);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_close(dev);
}

static void check_partition(const struct accel_partition *p, uint32_t H, uint32_t rows, bool balanced, double thr)
{
	uint32_t next = 0;

	cr_assert_gt(p->n_cells, 0);
	for (uint32_t i = 0; i < p->n_cells; i++) {
		const struct accel_part_cell *c = &p->cell[i];

		/* disjoint and covering: consecutive ranges from 0 to H */
		cr_assert_eq(c->y0, next, "cell %u starts at %u, expected %u", i, c->y0, next);
		cr_assert_gt(c->y1, c->y0);
		cr_assert_leq(c->in_y0, c->y0);
		cr_assert_geq(c->in_y1, c->y1);
		cr_assert_lt(c->row, rows);
		if (i)
			cr_assert_geq(c->row, p->cell[i - 1].row, "neighbours go to the same or the next row");
		next = c->y1;
	}
	cr_assert_eq(next, H);
	if (balanced) {
		cr_assert(p->within_threshold, "spread %.4f above %.4f", p->spread, thr);
		cr_assert_leq(p->spread, thr);
	}
}

Test(sparse, partition_is_disjoint_covering_and_within_threshold)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t C = 8, H = 200, W = 64;
	struct accel_buffer *b = alloc_buf(dev, (uint64_t)C * H * W);
	struct accel_partition *pe = calloc(1, sizeof(*pe)), *pb = calloc(1, sizeof(*pb));
	struct accel_tensor t;
	uint64_t seed = 3;

	for (uint32_t y = 0; y < H; y++)
		fill_sparse_i8((int8_t *)accel_buffer_ptr(b) + (size_t)y * W * C, (size_t)W * C, 95 * y / H, &seed);
	accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &t);
	for (uint32_t m = 2; m <= 8; m *= 2) {
		/* one map row is up to 512 non-zeros: 0.1 is reachable at row granularity for m <= 8 */
		struct accel_part_opts o = { .m = m, .metric = ACCEL_PART_NNZ, .threshold = 0.1, .rows = 4, .halo = 1 };
		uint64_t total = 0, sum = 0;

		o.even = true;
		cr_assert_eq(accel_partition_map(dev, &t, &o, pe), 0, "%s", accel_last_error(dev));
		check_partition(pe, H, 4, false, 0);
		cr_assert_gt(pe->spread, 0.1, "the gradient makes the even grid unbalanced");
		o.even = false;
		cr_assert_eq(accel_partition_map(dev, &t, &o, pb), 0, "%s", accel_last_error(dev));
		check_partition(pb, H, 4, true, 0.1);
		cr_assert_eq(pb->n_cells, m);
		/* the metric is the non-zero count: recount independently */
		for (uint32_t i = 0; i < pb->n_cells; i++) {
			uint64_t nz = 0;

			for (uint32_t y = pb->cell[i].y0; y < pb->cell[i].y1; y++)
				for (uint32_t x = 0; x < W * C; x++)
					nz += ((int8_t *)accel_buffer_ptr(b))[(size_t)y * W * C + x] != 0;
			cr_assert_eq(pb->cell[i].nnz, nz);
			sum += nz;
			cr_assert_eq(pb->cell[i].in_y0, pb->cell[i].y0 ? pb->cell[i].y0 - 1 : 0, "halo 1");
		}
		for (uint32_t i = 0; i < W * C * H; i++)
			total += ((int8_t *)accel_buffer_ptr(b))[i] != 0;
		cr_assert_eq(sum, total);
	}
	/* density metric on a map whose density repeats every 10 rows: reachable */
	{
		struct accel_part_opts o = { .m = 4, .metric = ACCEL_PART_DENSITY, .threshold = 0.05, .rows = 4 };

		for (uint32_t y = 0; y < H; y++)
			fill_sparse_i8((int8_t *)accel_buffer_ptr(b) + (size_t)y * W * C, (size_t)W * C, (y % 10) * 9, &seed);
		cr_assert_eq(accel_partition_map(dev, &t, &o, pb), 0);
		check_partition(pb, H, 4, true, 0.05);
	}
	/* bad input */
	{
		struct accel_part_opts o = { .m = 0 };

		cr_assert_eq(accel_partition_map(dev, &t, &o, pb), -EINVAL);
		cr_assert(strlen(accel_last_error(dev)) > 0);
		o.m = H + 1;
		cr_assert_eq(accel_partition_map(dev, &t, &o, pb), -EINVAL);
	}
	free(pe);
	free(pb);
	accel_buffer_free(b);
	accel_close(dev);
}

Test(sparse, time_folding_splits_sub_maps_larger_than_a_storage_unit)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t C = 4, H = 64, W = 32;
	struct accel_buffer *b = alloc_buf(dev, (uint64_t)C * H * W);
	struct accel_partition *p = calloc(1, sizeof(*p));
	struct accel_part_opts o = { .m = 2, .metric = ACCEL_PART_NNZ, .even = true, .rows = 2, .fold_bytes = 1000 };
	struct accel_tensor t;
	uint64_t seed = 4;

	fill_sparse_i8(accel_buffer_ptr(b), (size_t)C * H * W, 50, &seed);
	accel_tensor_4d(b, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &t);
	cr_assert_eq(accel_partition_map(dev, &t, &o, p), 0, "%s", accel_last_error(dev));
	/* 32 rows x 128 B per sub-map = 4096 B > 1000: folds of at most 7 rows (896 B) */
	check_partition(p, H, 2, false, 0);
	cr_assert_eq(p->n_cells, 10);
	for (uint32_t i = 0; i < p->n_cells; i++) {
		cr_assert_leq((uint64_t)(p->cell[i].y1 - p->cell[i].y0) * W * C, 1000);
		cr_assert_eq(p->cell[i].sub, i / 5);
		cr_assert_eq(p->cell[i].fold, i % 5);
		cr_assert_eq(p->cell[i].row, p->cell[i].sub, "folds stay on their sub-map's row");
	}
	free(p);
	accel_buffer_free(b);
	accel_close(dev);
}

Test(sparse, partitioned_conv_overlap_and_partial_sum_modes_equal_unpartitioned)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_partition *p = calloc(1, sizeof(*p));
	struct accel_caps caps;
	struct convfix f;
	struct accel_sparse_weights *sw;
	uint64_t busy[16];

	accel_query_caps(dev, &caps);
	for (unsigned t = 0; t < 3; t++) {
		uint32_t stride = t == 2 ? 2 : 1;
		struct accel_part_opts o = { .m = t == 1 ? 3 : caps.rows, .metric = ACCEL_PART_NNZ, .threshold = 0.1,
					     .halo = 1, .fold_bytes = t == 1 ? 1500 : 0 };

		conv_setup(&f, dev, 6, 29, 13, 40, 3, stride, 1, 60, 500 + t);
		cr_assert_eq(accel_partition_map(dev, &f.ti, &o, p), 0, "%s", accel_last_error(dev));
		cr_assert_eq(accel_partition_conv2d(dev, &f.d, NULL, ACCEL_SPARSE_ZSKIP_A, p, ACCEL_PART_OVERLAP, NULL,
						    busy), 0, "%s", accel_last_error(dev));
		conv_check_out(&f, "overlap, dense weights");
		cr_assert_eq(accel_sparse_pack_conv(dev, &f.tw, 0, &sw), 0);
		cr_assert_eq(accel_partition_conv2d(dev, &f.d, sw, ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB, p,
						    ACCEL_PART_OVERLAP, NULL, NULL), 0, "%s", accel_last_error(dev));
		conv_check_out(&f, "overlap, packed weights");
		if (stride == 1) {
			cr_assert_eq(accel_partition_conv2d(dev, &f.d, sw, 0, p, ACCEL_PART_NONOVERLAP, NULL, NULL), 0,
				     "%s", accel_last_error(dev));
			conv_check_out(&f, "non-overlap partial sums");
		} else {
			cr_assert_eq(accel_partition_conv2d(dev, &f.d, sw, 0, p, ACCEL_PART_NONOVERLAP, NULL, NULL),
				     -EINVAL, "non-overlap needs stride 1");
		}
		accel_sparse_free(sw);
		conv_teardown(&f);
	}
	free(p);
	accel_close(dev);
}

Test(sparse, balanced_partition_evens_out_row_busy_cycles)
{
	struct accel_dev *dev = open_dev("sim:rows=4,cols=4,pes=16");
	struct accel_partition *pe = calloc(1, sizeof(*pe)), *pb = calloc(1, sizeof(*pb));
	struct accel_part_opts o = { .metric = ACCEL_PART_NNZ, .even = true, .halo = 1 };
	struct convfix f;
	struct accel_caps caps;
	uint64_t be[16], bb[16], mxe = 0, mxb = 0, se = 0, sb = 0;
	unsigned R;

	accel_query_caps(dev, &caps);
	R = caps.rows;
	if (R < 2)
		cr_skip_test("needs at least two array rows");
	o.m = R;
	conv_setup(&f, dev, 16, 64, 32, 128, 3, 1, 1, 0, 42);
	cr_assert_eq(accel_partition_map(dev, &f.ti, &o, pe), 0);
	o.even = false;
	cr_assert_eq(accel_partition_map(dev, &f.ti, &o, pb), 0);
	cr_assert_eq(accel_partition_conv2d(dev, &f.d, NULL, ACCEL_SPARSE_ZSKIP_A, pe, ACCEL_PART_OVERLAP, NULL, be), 0);
	conv_check_out(&f, "even");
	cr_assert_eq(accel_partition_conv2d(dev, &f.d, NULL, ACCEL_SPARSE_ZSKIP_A, pb, ACCEL_PART_OVERLAP, NULL, bb), 0);
	conv_check_out(&f, "balanced");
	if (!test_is_sim() && !be[0] && !bb[0])
		cr_skip_test("the device's ROW_BUSY registers were overwritten by another job");
	for (unsigned r = 0; r < R; r++) {
		mxe = be[r] > mxe ? be[r] : mxe;
		mxb = bb[r] > mxb ? bb[r] : mxb;
		se += be[r];
		sb += bb[r];
	}
	cr_assert_lt((double)mxb * R / sb, (double)mxe * R / se, "balanced %.3f vs even %.3f", (double)mxb * R / sb,
		     (double)mxe * R / se);
	free(pe);
	free(pb);
	conv_teardown(&f);
	accel_close(dev);
}

Test(sparse, job_row_busy_agrees_with_the_job_counters)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t M = 300, N = 200, K = 256;
	uint64_t seed = 8, busy[16], mx = 0, sum = 0, used = 0;
	struct accel_buffer *ba = alloc_buf(dev, M * K), *bw = alloc_buf(dev, K * N), *bc = alloc_buf(dev, M * N * 4);
	struct accel_tensor ta, tw, tc;
	struct accel_sparse_weights *sw;
	struct accel_counters cnt;
	struct accel_caps caps;
	struct accel_job *job;
	int n;

	accel_query_caps(dev, &caps);
	fill_sparse_i8(accel_buffer_ptr(ba), M * K, 20, &seed);
	fill_sparse_i8(accel_buffer_ptr(bw), K * N, 60, &seed);
	accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta);
	accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw);
	accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &tc);
	cr_assert_eq(accel_sparse_pack(dev, &tw, false, 0, &sw), 0);
	{
		struct accel_sparse_gemm_desc d = { .a = &ta, .c = &tc, .w = sw,
						    .flags = ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB };

		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, &job), 0, "%s", accel_last_error(dev));
	}
	cr_assert_eq(accel_job_counters(job, &cnt), 0);
	n = accel_job_row_busy(job, busy, 16);
	if (n == -EOPNOTSUPP && !test_is_sim())
		cr_skip_test("another job completed before the ROW_BUSY registers were read");
	cr_assert_eq(n, (int)caps.rows, "%s", accel_last_error(dev));
	for (int r = 0; r < n; r++) {
		mx = busy[r] > mx ? busy[r] : mx;
		sum += busy[r];
		used += busy[r] != 0;
	}
	if (cnt.hw_jobs == 1)
		cr_assert_eq(mx, cnt.row_busy_max);
	cr_assert_eq(sum, cnt.row_busy_sum);
	cr_assert_eq(used, cnt.busy_rows);
	cr_assert_gt(cnt.lb_macs_moved, 0, "uneven columns: LB moves work");
	cr_assert_leq(cnt.row_busy_max, cnt.compute_cycles);
	accel_job_free(job);
	accel_sparse_free(sw);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_close(dev);
}

Test(sparse, repartition_of_a_layer_output_follows_its_measured_density)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_partition *p = calloc(1, sizeof(*p)), *q = calloc(1, sizeof(*q));
	struct accel_part_opts o = { .m = 3, .metric = ACCEL_PART_NNZ, .threshold = 0.1, .rows = 3, .halo = 1 };
	struct convfix f;
	const int32_t *out;
	uint64_t total = 0, sum = 0;

	/* layer 1 on a density gradient; its int32 output is the next layer's input map */
	conv_setup(&f, dev, 4, 60, 16, 8, 3, 1, 1, 50, 606);
	cr_assert_eq(accel_partition_map(dev, &f.ti, &o, p), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_partition_conv2d(dev, &f.d, NULL, ACCEL_SPARSE_ZSKIP_A, p, ACCEL_PART_OVERLAP, NULL, NULL), 0,
		     "%s", accel_last_error(dev));
	out = accel_buffer_ptr(f.bo);
	cr_assert_eq(memcmp(out, f.ref, (size_t)f.KO * f.OH * f.OW * 4), 0);
	cr_assert_eq(accel_partition_map(dev, &f.to, &o, q), 0, "%s", accel_last_error(dev));
	check_partition(q, f.OH, 3, true, 0.1);
	for (uint32_t i = 0; i < q->n_cells; i++) {
		uint64_t nz = 0;

		for (uint32_t y = q->cell[i].y0; y < q->cell[i].y1; y++)
			for (uint32_t x = 0; x < f.OW * f.KO; x++)
				nz += out[(size_t)y * f.OW * f.KO + x] != 0;
		cr_assert_eq(q->cell[i].nnz, nz, "cell %u", i);
		sum += nz;
	}
	for (size_t i = 0; i < (size_t)f.KO * f.OH * f.OW; i++)
		total += out[i] != 0;
	cr_assert_eq(sum, total);
	conv_teardown(&f);
	free(p);
	free(q);
	accel_close(dev);
}

Test(sparse, sparse_gemm_fp32_and_transposed_a_match_dense)
{
	struct accel_dev *dev = open_dev(NULL);
	uint32_t M = 37, N = 45, K = 150;
	uint64_t seed = 12;
	struct accel_buffer *ba = alloc_buf(dev, M * K * 4), *bw = alloc_buf(dev, K * N * 4),
			    *bc = alloc_buf(dev, M * N * 4), *bd = alloc_buf(dev, M * N * 4);
	struct accel_tensor ta, tw, tc, td;
	struct accel_sparse_weights *sw;
	float *a = accel_buffer_ptr(ba), *w = accel_buffer_ptr(bw), *c, *dref;

	/* fp32: values k/32 make every product and partial sum exact, so summation order cannot matter */
	fill_f32(a, M * K, &seed);
	fill_f32(w, K * N, &seed);
	for (uint32_t i = 0; i < K * N; i++)
		if (xrng(&seed) % 100 < 70)
			w[i] = 0.0f;
	accel_tensor_2d(ba, 0, ACCEL_FP32, M, K, &ta);
	accel_tensor_2d(bw, 0, ACCEL_FP32, K, N, &tw);
	accel_tensor_2d(bc, 0, ACCEL_FP32, M, N, &tc);
	accel_tensor_2d(bd, 0, ACCEL_FP32, M, N, &td);
	{
		struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &td };

		cr_assert_eq(accel_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	cr_assert_eq(accel_sparse_pack(dev, &tw, false, 64, &sw), 0, "%s", accel_last_error(dev));
	{
		struct accel_sparse_gemm_desc d = { .a = &ta, .c = &tc, .w = sw, .flags = ACCEL_SPARSE_ZSKIP_A };

		cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
	}
	c = accel_buffer_ptr(bc);
	dref = accel_buffer_ptr(bd);
	cr_assert_eq(memcmp(c, dref, M * N * 4), 0, "fp32 sparse vs dense");
	/* int8 with A stored transposed (K x M) */
	{
		struct accel_buffer *at = alloc_buf(dev, M * K), *wi = alloc_buf(dev, K * N), *ci = alloc_buf(dev, M * N * 4);
		struct accel_tensor tat, twi, tci;
		struct accel_sparse_weights *swi;
		int8_t *A = accel_buffer_ptr(at), *W = accel_buffer_ptr(wi), *an = malloc(M * K);
		int32_t *ref = calloc(M * N, 4);

		fill_sparse_i8(A, M * K, 30, &seed);
		fill_sparse_i8(W, K * N, 60, &seed);
		for (uint32_t k = 0; k < K; k++)
			for (uint32_t i = 0; i < M; i++)
				an[i * K + k] = A[k * M + i];
		ref_gemm(M, N, K, an, W, ref);
		accel_tensor_2d(at, 0, ACCEL_INT8, K, M, &tat);
		accel_tensor_2d(wi, 0, ACCEL_INT8, K, N, &twi);
		accel_tensor_2d(ci, 0, ACCEL_INT32, M, N, &tci);
		cr_assert_eq(accel_sparse_pack(dev, &twi, false, 0, &swi), 0);
		{
			struct accel_sparse_gemm_desc d = { .a = &tat, .trans_a = true, .c = &tci, .w = swi,
							    .flags = ACCEL_SPARSE_LB };

			cr_assert_eq(accel_sparse_gemm(dev, &d, NULL, NULL), 0, "%s", accel_last_error(dev));
		}
		cr_assert_eq(memcmp(accel_buffer_ptr(ci), ref, M * N * 4), 0, "trans_a");
		accel_sparse_free(swi);
		free(an);
		free(ref);
		accel_buffer_free(at);
		accel_buffer_free(wi);
		accel_buffer_free(ci);
	}
	accel_sparse_free(sw);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_buffer_free(bd);
	accel_close(dev);
}

Test(sparse, auto_conv2d_routes_and_stays_exact)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_route_info ri;
	struct accel_sparse_weights *sw;
	struct convfix f;

	/* dense weights, input density rising 100 % -> 10 %: the activation bitmask */
	conv_setup(&f, dev, 16, 24, 24, 64, 3, 1, 1, 0, 900);
	cr_assert_eq(accel_auto_conv2d(dev, &f.d, NULL, NULL, NULL, &ri), 0, "%s", accel_last_error(dev));
	cr_assert_eq(ri.route, ACCEL_ROUTE_ZSKIP, "act density %.2f", ri.act_density);
	conv_check_out(&f, "auto, no packing");
	conv_teardown(&f);
	/* 90 % zero weights, packed: sparse unless the planner says the packing is slower */
	conv_setup(&f, dev, 16, 24, 24, 64, 3, 1, 1, 90, 901);
	cr_assert_eq(accel_sparse_pack_conv(dev, &f.tw, 0, &sw), 0);
	cr_assert_eq(accel_auto_conv2d(dev, &f.d, sw, NULL, NULL, &ri), 0, "%s", accel_last_error(dev));
	cr_assert_gt(ri.est_dense_cycles, 0);
	cr_assert_eq(ri.route == ACCEL_ROUTE_SPARSE, ri.est_sparse_cycles < ri.est_dense_cycles, "route %d, est %.0f / %.0f",
		     ri.route, ri.est_sparse_cycles, ri.est_dense_cycles);
	conv_check_out(&f, "auto, packed");
	/* grouped layers cannot use the packing: never sparse */
	f.d.groups = 2;
	cr_assert_eq(accel_auto_conv2d(dev, &f.d, sw, NULL, NULL, &ri), -EINVAL, "weights have C, not C/2 channels");
	accel_sparse_free(sw);
	conv_teardown(&f);
	accel_close(dev);
}
