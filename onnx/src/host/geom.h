/* SPDX-License-Identifier: MIT */
/* geom.h - shape inference for Conv, pooling and MatMul (geom.c). */
#ifndef TNPU_ONNX_GEOM_H
#define TNPU_ONNX_GEOM_H

#include "internal.h"

/* Conv over NCHW (or NCW as H = 1). */
struct conv_geom {
	unsigned spatial;	/* 1 or 2 */
	int64_t n, c, h, w, k, cg, kh, kw, groups;
	struct win2d win;
};
int conv_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *w,
	      struct conv_geom *g);
void conv_out_dims(const struct conv_geom *g, int64_t *dims, unsigned *ndim);

/*
 * Pooling over NCHW (or NCW as H = 1). A global pool of a 5-D X pools N x C x (D*H) x W: the same
 * bytes, with an output of rank 5.
 */
struct pool_geom {
	unsigned spatial;
	unsigned rank;		/* of X and Y */
	int64_t n, c, h, w;
	struct win2d win;
};
int pool_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, bool global, struct pool_geom *g);
void pool_out_dims(const struct pool_geom *g, int64_t *dims, unsigned *ndim);

/* MatMul with numpy broadcasting of the batch dimensions; 1-D operands promoted and dropped. */
struct matmul_geom {
	int64_t m, k, nn, batch;
	unsigned nbatch;
	int64_t bdims[ONNX_MAX_DIMS], adims[ONNX_MAX_DIMS], bbdims[ONNX_MAX_DIMS];
	bool a_vec, b_vec;
	unsigned out_ndim;
	int64_t out_dims[ONNX_MAX_DIMS];
};
int matmul_geom(const struct onnx_ctx *c, const struct onnx_tensor *a, const struct onnx_tensor *b,
		struct matmul_geom *g);
/* Element offsets of batch bi's A and B matrices. */
void matmul_batch_offsets(const struct matmul_geom *g, int64_t bi, int64_t *aoff, int64_t *boff);

/* CPU reference kernels reused by the accel fallbacks and the int8 family (ops_host.c). */
void relu_f32(struct onnx_tensor *t);
void fused_act_host(const struct onnx_ctx *c, struct onnx_tensor *t);
int gemm_bias_add(const struct onnx_ctx *c, const struct onnx_tensor *cm, float beta, struct onnx_tensor *y);

#endif /* TNPU_ONNX_GEOM_H */
