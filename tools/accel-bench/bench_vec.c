/* SPDX-License-Identifier: MIT */
/*
 * accel-bench vec [--json] [--device PATH|sim]: the ISA 2 vector units (#16) on network-sized
 * layers: residual adds, activations (fp32 functions, int8 tables), ResNet's stem max pool, a
 * transformer's softmax and layernorm, a layout change, per-channel requantisation, and a GEMM
 * whose residual add is fused into the SFU epilogue against the same GEMM followed by accel_eltwise.
 * One JSON object per case: model cycles of the whole job (DMA included), vector-unit cycles and
 * element-operations, elements per cycle, hw_jobs, wall ms, verified (sampled outputs against a
 * plain-C reference).  Exit 0 only when every case verified.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel.h"
#include "subcommands.h"

int bench_vec_main(int argc, char **argv);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct vcase {
	const char *name;
	uint64_t elems;
	struct accel_counters c;
	double ms;
	bool ok;
};

static bool json;

static void report(const struct vcase *v)
{
	if (json)
		printf("{\"case\":\"%s\",\"elements\":%llu,\"model_cycles\":%llu,\"vec_cycles\":%llu,\"vec_ops\":%llu,"
		       "\"elements_per_cycle\":%.2f,\"dma_in_bytes\":%llu,\"dma_out_bytes\":%llu,\"hw_jobs\":%u,"
		       "\"wall_ms\":%.2f,\"verified\":%s}\n",
		       v->name, (unsigned long long)v->elems, (unsigned long long)v->c.total_cycles,
		       (unsigned long long)v->c.vec_cycles, (unsigned long long)v->c.vec_ops,
		       v->c.total_cycles ? (double)v->elems / v->c.total_cycles : 0.0, (unsigned long long)v->c.bytes_h2d,
		       (unsigned long long)v->c.bytes_d2h, v->c.hw_jobs, v->ms, v->ok ? "true" : "false");
	else
		printf("%-28s %10llu elements %9llu cycles (vector units %9llu, all rows) %6.2f el/cycle %s\n", v->name,
		       (unsigned long long)v->elems, (unsigned long long)v->c.total_cycles,
		       (unsigned long long)v->c.vec_cycles, v->c.total_cycles ? (double)v->elems / v->c.total_cycles : 0.0,
		       v->ok ? "verified" : "MISMATCH");
}

/* Run one op (fn returns 0 and a job), record its counters and wall time. */
#define RUN(v, dev, call)                                                                             \
	do {                                                                                          \
		struct accel_job *j_ = NULL;                                                          \
		double t0_ = now_ms();                                                                \
		int r_ = (call);                                                                      \
		if (!r_)                                                                              \
			r_ = accel_job_wait(j_, -1);                                                  \
		(v)->ms = now_ms() - t0_;                                                             \
		if (r_) {                                                                             \
			fprintf(stderr, "accel-bench vec %s: %s: %s\n", (v)->name, accel_strerror(r_),  \
				accel_last_error(dev));                                               \
			(v)->ok = false;                                                              \
		} else {                                                                              \
			accel_job_counters(j_, &(v)->c);                                              \
		}                                                                                     \
		accel_job_free(j_);                                                                   \
	} while (0)

static struct accel_buffer *B(struct accel_dev *dev, uint64_t bytes)
{
	struct accel_buffer *b = NULL;

	if (accel_buffer_alloc(dev, bytes, &b)) {
		fprintf(stderr, "accel-bench vec: alloc %llu: %s\n", (unsigned long long)bytes, accel_last_error(dev));
		exit(1);
	}
	return b;
}

/* The tensor constructors, checked as B checks allocations (the shapes are this file's constants). */
static void T2(struct accel_dev *dev, struct accel_buffer *b, uint64_t off, enum accel_dtype dt, uint32_t rows,
	       uint32_t cols, struct accel_tensor *t)
{
	if (accel_tensor_2d(b, off, dt, rows, cols, t)) {
		fprintf(stderr, "accel-bench vec: tensor: %s\n", accel_last_error(dev));
		exit(1);
	}
}

static void T4(struct accel_dev *dev, struct accel_buffer *b, uint64_t off, enum accel_dtype dt, enum accel_layout l,
	       uint32_t n, uint32_t c, uint32_t h, uint32_t w, struct accel_tensor *t)
{
	if (accel_tensor_4d(b, off, dt, l, n, c, h, w, t)) {
		fprintf(stderr, "accel-bench vec: tensor: %s\n", accel_last_error(dev));
		exit(1);
	}
}

static void fill_f(float *p, uint64_t n, uint32_t seed)
{
	for (uint64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)((int)(seed >> 20) % 512 - 256) / 64.0f;
	}
}

static void fill_b(int8_t *p, uint64_t n, uint32_t seed)
{
	for (uint64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (int8_t)(seed >> 24);
	}
}

int bench_vec_main(int argc, char **argv)
{
	const char *path = "sim";
	struct accel_dev *dev = NULL;
	struct accel_caps caps;
	bool all_ok = true;
	char msg[256];
	enum { C = 64, H = 56, W = 56, SH = 112, SW = 112 };
	const uint64_t E = (uint64_t)C * H * W;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			path = argv[++i];
		else {
			fprintf(stderr, "usage: accel-bench vec [--json] [--device PATH|sim]\n");
			return 2;
		}
	}
	if (accel_open_msg(path, msg, sizeof(msg), &dev)) {
		fprintf(stderr, "accel-bench vec: cannot open %s: %s\n", path, msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	{	/* residual add fp32 + relu, 56x56x64 NHWC */
		struct accel_buffer *ba = B(dev, E * 4), *bb = B(dev, E * 4), *bo = B(dev, E * 4);
		struct accel_tensor a, b, o;
		struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = ACCEL_ELT_ADD, .act = ACCEL_ACT_RELU };
		struct vcase v = { "eltwise-add-relu-fp32", E, { 0 }, 0, true };
		float *pa = accel_buffer_ptr(ba), *pb = accel_buffer_ptr(bb), *po = accel_buffer_ptr(bo);

		T4(dev, ba, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &a);
		T4(dev, bb, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &b);
		T4(dev, bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &o);
		fill_f(pa, E, 1);
		fill_f(pb, E, 2);
		RUN(&v, dev, accel_eltwise(dev, &d, NULL, &j_));
		for (uint64_t i = 0; i < E && v.ok; i += 97)
			v.ok = po[i] == fmaxf(pa[i] + pb[i], 0.0f);
		report(&v);
		all_ok &= v.ok;
		/* int8 with requantisation */
		{
			struct accel_tensor a8, b8, o8;
			struct accel_eltwise_desc d8 = { .a = &a8, .b = &b8, .out = &o8, .op = ACCEL_ELT_ADD,
							 .multiplier = 1 << 30, .shift = 31 };
			struct vcase v8 = { "eltwise-add-int8-requant", E, { 0 }, 0, true };
			int8_t *qa = accel_buffer_ptr(ba), *qb = accel_buffer_ptr(bb), *qo = accel_buffer_ptr(bo);

			T4(dev, ba, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &a8);
			T4(dev, bb, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &b8);
			T4(dev, bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &o8);
			fill_b(qa, E, 3);
			fill_b(qb, E, 4);
			RUN(&v8, dev, accel_eltwise(dev, &d8, NULL, &j_));
			for (uint64_t i = 0; i < E && v8.ok; i += 89) {
				int64_t r = (((int64_t)(qa[i] + qb[i]) << 30) + (1ll << 30)) >> 31;

				v8.ok = qo[i] == (r < -128 ? -128 : r > 127 ? 127 : r);
			}
			report(&v8);
			all_ok &= v8.ok;
		}
		/* the quantised add of two differently quantised int8 tensors (CAP_FEATURES bit 20): one pass
		 * where a device without it needs six (onnx.md "int8 QDQ graphs") */
		if (caps.features & (1u << 20)) {
			struct accel_tensor a8, b8, o8;
			struct accel_qadd_desc dq = { .a = &a8, .b = &b8, .out = &o8, .op = ACCEL_ELT_ADD,
						      .act = ACCEL_ACT_RELU, .a_multiplier = 3 << 28, .b_multiplier = 5 << 27,
						      .a_zero_point = -7, .b_zero_point = 12, .zero_point = -100, .shift = 30 };
			struct vcase vq = { "qadd-int8-relu", E, { 0 }, 0, true };
			int8_t *qa = accel_buffer_ptr(ba), *qb = accel_buffer_ptr(bb), *qo = accel_buffer_ptr(bo);

			T4(dev, ba, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &a8);
			T4(dev, bb, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &b8);
			T4(dev, bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &o8);
			fill_b(qa, E, 3);
			fill_b(qb, E, 4);
			RUN(&vq, dev, accel_qadd(dev, &dq, NULL, &j_));
			for (uint64_t i = 0; i < E && vq.ok; i += 89) {
				int64_t r = (int64_t)(qa[i] + 7) * (3 << 28) + (int64_t)(qb[i] - 12) * (5 << 27);

				r = ((r < 0 ? 0 : r) + (1ll << 29)) >> 30;
				r -= 100;
				vq.ok = qo[i] == (r < -128 ? -128 : r > 127 ? 127 : r);
			}
			report(&vq);
			all_ok &= vq.ok;
		}
		/* activations: fp32 sigmoid / gelu, int8 table */
		{
			const enum accel_act acts[] = { ACCEL_ACT_SIGMOID, ACCEL_ACT_GELU, ACCEL_ACT_SILU };
			const char *names[] = { "activation-sigmoid-fp32", "activation-gelu-fp32", "activation-silu-fp32" };

			for (int k = 0; k < 3; k++) {
				struct accel_activation_desc ad = { .input = &a, .output = &o, .act = acts[k] };
				struct vcase va = { names[k], E, { 0 }, 0, true };

				fill_f(pa, E, 5);
				RUN(&va, dev, accel_activation(dev, &ad, NULL, &j_));
				for (uint64_t i = 0; i < E && va.ok; i += 101) {
					double x = pa[i], r = k == 0 ? 1 / (1 + exp(-x)) : k == 1 ? 0.5 * x * (1 + erf(x / sqrt(2.0)))
												       : x / (1 + exp(-x));

					va.ok = fabs(po[i] - r) <= 2e-6 * fmax(1, fabs(x));
				}
				report(&va);
				all_ok &= va.ok;
			}
		}
		{
			struct accel_tensor a8, o8;
			struct accel_activation_desc ad = { .input = &a8, .output = &o8, .act = ACCEL_ACT_SIGMOID,
							    .in_scale = 1.0f / 16, .out_scale = 1.0f / 256, .out_zero_point = -128 };
			struct vcase va = { "activation-sigmoid-int8-lut", E, { 0 }, 0, true };
			int8_t *qa = accel_buffer_ptr(ba), *qo = accel_buffer_ptr(bo);

			T4(dev, ba, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &a8);
			T4(dev, bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &o8);
			fill_b(qa, E, 6);
			RUN(&va, dev, accel_activation(dev, &ad, NULL, &j_));
			for (uint64_t i = 0; i < E && va.ok; i += 83) {
				double y = nearbyint(256 / (1 + exp(-qa[i] / 16.0))) - 128;

				va.ok = qo[i] == (y > 127 ? 127 : y);
			}
			report(&va);
			all_ok &= va.ok;
		}
		/* NCHW -> NHWC layout change, fp32 */
		{
			struct accel_tensor ti, to;
			struct accel_transpose_desc td = { .input = &ti, .output = &to, .perm = { 0, 1, 2, 3 } };
			struct vcase vt = { "transpose-nchw-to-nhwc-fp32", E, { 0 }, 0, true };

			T4(dev, ba, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, C, H, W, &ti);
			T4(dev, bo, 0, ACCEL_FP32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &to);
			fill_f(pa, E, 7);
			RUN(&vt, dev, accel_transpose(dev, &td, NULL, &j_));
			for (uint64_t i = 0; i < E && vt.ok; i += 79) {
				uint64_t c = i / (H * W), p = i % (H * W);

				vt.ok = po[p * C + c] == pa[i];
			}
			report(&vt);
			all_ok &= vt.ok;
		}
		/* per-channel requantisation int32 -> int8 */
		{
			struct accel_tensor ti, to;
			int32_t mult[C];
			uint8_t shift[C];
			struct accel_requant_desc rd = { .input = &ti, .output = &to, .axis = 1, .multiplier = mult, .shift = shift };
			struct vcase vr = { "requant-per-channel-int32", E, { 0 }, 0, true };
			int32_t *xa = accel_buffer_ptr(ba);
			int8_t *qo = accel_buffer_ptr(bo);

			for (int c = 0; c < C; c++) {
				mult[c] = 1073741824 + c * 1000003;
				shift[c] = (uint8_t)(38 + c % 3);
			}
			T4(dev, ba, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, C, H, W, &ti);
			T4(dev, bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &to);
			for (uint64_t i = 0; i < E; i++)
				xa[i] = (int32_t)(i * 2654435761u % 40000001u) - 20000000;
			RUN(&vr, dev, accel_requant(dev, &rd, NULL, &j_));
			for (uint64_t i = 0; i < E && vr.ok; i += 71) {
				int c = (int)(i % C);
				int64_t r = ((int64_t)xa[i] * mult[c] + (1ll << (shift[c] - 1))) >> shift[c];

				vr.ok = qo[i] == (r < -128 ? -128 : r > 127 ? 127 : r);
			}
			report(&vr);
			all_ok &= vr.ok;
		}
		accel_buffer_free(ba);
		accel_buffer_free(bb);
		accel_buffer_free(bo);
	}
	{	/* ResNet stem max pool 3x3/2 pad 1, 112x112x64 */
		for (int f32 = 0; f32 < 2; f32++) {
			uint64_t ie = (uint64_t)C * SH * SW, e = f32 ? 4 : 1;
			struct accel_buffer *bi = B(dev, ie * e), *bo = B(dev, E * e);
			struct accel_tensor ti, to;
			struct accel_pool2d_desc pd = { .input = &ti, .output = &to, .kind = ACCEL_POOL_MAX, .win_h = 3, .win_w = 3,
							.stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
							.pad_right = 1 };
			struct vcase vp = { f32 ? "maxpool-3x3s2-112x112x64-fp32" : "maxpool-3x3s2-112x112x64-int8", E, { 0 }, 0,
					    true };

			T4(dev, bi, 0, f32 ? ACCEL_FP32 : ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, SH, SW, &ti);
			T4(dev, bo, 0, f32 ? ACCEL_FP32 : ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &to);
			if (f32)
				fill_f(accel_buffer_ptr(bi), ie, 8);
			else
				fill_b(accel_buffer_ptr(bi), ie, 8);
			RUN(&vp, dev, accel_pool2d(dev, &pd, NULL, &j_));
			for (uint64_t i = 0; i < E && vp.ok; i += 67) {
				uint64_t c = i % C, p = i / C, oy = p / W, ox = p % W;
				double m = -INFINITY, got;

				for (int ry = 0; ry < 3; ry++)
					for (int rx = 0; rx < 3; rx++) {
						int64_t iy = (int64_t)oy * 2 - 1 + ry, ix = (int64_t)ox * 2 - 1 + rx;
						uint64_t k;

						if (iy < 0 || ix < 0 || iy >= SH || ix >= SW)
							continue;
						k = ((uint64_t)iy * SW + (uint64_t)ix) * C + c;
						m = fmax(m, f32 ? ((float *)accel_buffer_ptr(bi))[k] : ((int8_t *)accel_buffer_ptr(bi))[k]);
					}
				got = f32 ? ((float *)accel_buffer_ptr(bo))[i] : ((int8_t *)accel_buffer_ptr(bo))[i];
				vp.ok = got == m;
			}
			report(&vp);
			all_ok &= vp.ok;
			accel_buffer_free(bi);
			accel_buffer_free(bo);
		}
	}
	{	/* transformer: softmax over 12 heads x 128 x 128 scores, layernorm 128 x 768 */
		const uint32_t R = 12 * 128, L = 128, LR = 128, LL = 768;
		struct accel_buffer *bi = B(dev, (uint64_t)R * L * 4), *bo = B(dev, (uint64_t)R * L * 4);
		struct accel_tensor ti, to;
		struct accel_softmax_desc sd = { .input = &ti, .output = &to };
		struct accel_layernorm_desc ld = { .input = &ti, .output = &to, .epsilon = 1e-5f };
		struct vcase vs = { "softmax-1536x128-fp32", (uint64_t)R * L, { 0 }, 0, true };
		struct vcase vl = { "layernorm-128x768-fp32", (uint64_t)LR * LL, { 0 }, 0, true };
		float *x = accel_buffer_ptr(bi), *y = accel_buffer_ptr(bo);

		T2(dev, bi, 0, ACCEL_FP32, R, L, &ti);
		T2(dev, bo, 0, ACCEL_FP32, R, L, &to);
		fill_f(x, (uint64_t)R * L, 9);
		RUN(&vs, dev, accel_softmax(dev, &sd, NULL, &j_));
		for (uint32_t r = 0; r < R && vs.ok; r += 37) {
			double s = 0;

			for (uint32_t k = 0; k < L; k++)
				s += y[r * L + k];
			vs.ok = fabs(s - 1) < 1e-5;
		}
		report(&vs);
		all_ok &= vs.ok;
		T2(dev, bi, 0, ACCEL_FP32, LR, LL, &ti);
		T2(dev, bo, 0, ACCEL_FP32, LR, LL, &to);
		RUN(&vl, dev, accel_layernorm(dev, &ld, NULL, &j_));
		for (uint32_t r = 0; r < LR && vl.ok; r += 13) {
			double m = 0, v = 0;

			for (uint32_t k = 0; k < LL; k++)
				m += x[r * LL + k] / LL;
			for (uint32_t k = 0; k < LL; k++)
				v += (x[r * LL + k] - m) * (x[r * LL + k] - m) / LL;
			for (uint32_t k = 0; k < LL && vl.ok; k += 31)
				vl.ok = fabs(y[r * LL + k] - (x[r * LL + k] - m) / sqrt(v + 1e-5)) < 1e-4;
		}
		report(&vl);
		all_ok &= vl.ok;
		accel_buffer_free(bi);
		accel_buffer_free(bo);
	}
	{	/* fused residual: fp32 GEMM 3136 x 64 x 576 (a ResNet 3x3 conv as GEMM) + bias + skip + relu */
		const uint32_t M = 3136, N = 64, K = 576;
		struct accel_buffer *ba = B(dev, (uint64_t)M * K * 4), *bw = B(dev, (uint64_t)K * N * 4),
				    *bc = B(dev, (uint64_t)M * N * 4), *br = B(dev, (uint64_t)M * N * 4), *bt = B(dev, (uint64_t)M * N * 4);
		struct accel_tensor a, w, c, r, t;
		struct accel_gemm_desc g = { .a = &a, .b = &w, .c = &c, .epi = { .act = ACCEL_ACT_RELU, .residual = &r } };
		struct accel_gemm_desc g2 = { .a = &a, .b = &w, .c = &t };
		struct accel_eltwise_desc e = { .a = &t, .b = &r, .out = &t, .op = ACCEL_ELT_ADD, .act = ACCEL_ACT_RELU };
		struct vcase vf = { "gemm-residual-fused-fp32", (uint64_t)M * N, { 0 }, 0, true };
		struct vcase v1 = { "gemm-then-eltwise: gemm", (uint64_t)M * N, { 0 }, 0, true };
		struct vcase v2 = { "gemm-then-eltwise: add", (uint64_t)M * N, { 0 }, 0, true };

		T2(dev, ba, 0, ACCEL_FP32, M, K, &a);
		T2(dev, bw, 0, ACCEL_FP32, K, N, &w);
		T2(dev, bc, 0, ACCEL_FP32, M, N, &c);
		T2(dev, br, 0, ACCEL_FP32, M, N, &r);
		T2(dev, bt, 0, ACCEL_FP32, M, N, &t);
		fill_f(accel_buffer_ptr(ba), (uint64_t)M * K, 10);
		fill_f(accel_buffer_ptr(bw), (uint64_t)K * N, 11);
		fill_f(accel_buffer_ptr(br), (uint64_t)M * N, 12);
		RUN(&vf, dev, accel_gemm(dev, &g, NULL, &j_));
		RUN(&v1, dev, accel_gemm(dev, &g2, NULL, &j_));
		RUN(&v2, dev, accel_eltwise(dev, &e, NULL, &j_));
		/* the fused and the two-step results agree (same sums, same adds) */
		for (uint64_t i = 0; i < (uint64_t)M * N && vf.ok; i += 53)
			vf.ok = fabsf(((float *)accel_buffer_ptr(bc))[i] - ((float *)accel_buffer_ptr(bt))[i]) <=
				1e-5f * (1 + fabsf(((float *)accel_buffer_ptr(bt))[i]));
		report(&vf);
		report(&v1);
		report(&v2);
		if (!json)
			printf("fused residual: %llu cycles vs %llu (gemm + eltwise)\n", (unsigned long long)vf.c.total_cycles,
			       (unsigned long long)(v1.c.total_cycles + v2.c.total_cycles));
		all_ok &= vf.ok && v1.ok && v2.ok;
		accel_buffer_free(ba);
		accel_buffer_free(bw);
		accel_buffer_free(bc);
		accel_buffer_free(br);
		accel_buffer_free(bt);
	}
	accel_close(dev);
	return all_ok ? 0 : 1;
}
