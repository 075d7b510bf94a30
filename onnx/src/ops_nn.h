/* SPDX-License-Identifier: MIT */
/* ops_nn.h - ConvTranspose's geometry, shared by its host kernel (ops_nn.c) and device lowering. */
#ifndef TNPU_ONNX_OPS_NN_H
#define TNPU_ONNX_OPS_NN_H

#include "internal.h"

struct ct_geom {
	unsigned sp;			/* spatial dimensions: 1..3 (unused ones are 1) */
	int64_t N, C, M, Cg, Mg, group;
	int64_t in[3], k[3], st[3], dl[3], opad[3], od[3];
	int64_t pads[6];		/* begin[sp], end[sp]; an end may be negative (output_shape) */
};
int ct_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *w,
	    const struct onnx_tensor *b, struct ct_geom *g);

#endif /* TNPU_ONNX_OPS_NN_H */
