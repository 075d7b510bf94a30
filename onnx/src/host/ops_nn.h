/* SPDX-License-Identifier: MIT */
/* ops_nn.h - ConvTranspose's geometry and Resize's taps, shared by the host kernels (ops_nn.c) and the
 * device lowerings. */
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

/* Resize/Upsample as per-axis taps (ops_nn.c), shared by the host kernel and the device's (ops_accel_resize.c):
 * output element i along axis d reads input indices taps[d][4 i + k].idx (edge-clamped) with weights .w,
 * k < ntap[d][i]; outs[d][i] marks a tf_crop_and_resize coordinate outside the input (extrap). */
struct rs_tap {
	int64_t idx;
	double w;
};
struct rs_plan {
	unsigned nd;
	int mode;			/* 0 nearest, 1 linear, 2 cubic */
	bool crop;			/* tf_crop_and_resize */
	double extrap;
	int64_t dims[ONNX_MAX_DIMS];	/* the output's */
	struct rs_tap *taps[ONNX_MAX_DIMS];
	unsigned *ntap[ONNX_MAX_DIMS];
	bool *outs[ONNX_MAX_DIMS];
};
/* Attributes, scales/sizes/roi checked (the node's error) and the taps computed; rs_plan_free after. */
int rs_plan_make(struct onnx_ctx *c, const struct onnx_tensor *x, struct rs_plan *pl);
void rs_plan_free(struct rs_plan *pl);

#endif /* TNPU_ONNX_OPS_NN_H */
