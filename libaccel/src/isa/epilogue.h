/* SPDX-License-Identifier: MIT */
#ifndef ACCEL_EPILOGUE_H
#define ACCEL_EPILOGUE_H
#include "lower.h"
int epi_setup(struct accel_dev *dev, const struct accel_epilogue *ep, bool f32, enum accel_dtype out_dt, uint32_t N,
	      struct mm_problem *p);
/* Validate a tensor argument: well formed, inside its buffer, of this device. */
int conv_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d);
/* conv_lower's validation and problem set-up alone (the fused expansion + depthwise lowering). */
/* The validate-only halves of accel_conv2d, accel_gemm and accel_pool2d (accel_op_supported, op.c). */
int conv2d_validate(struct accel_dev *dev, const struct accel_conv2d_desc *d);
int gemm_validate(struct accel_dev *dev, const struct accel_gemm_desc *d, struct mm_problem *p);
int pool2d_validate(struct accel_dev *dev, const struct accel_pool2d_desc *d);
int conv_prepare(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d, struct mm_problem *p);
int conv_direct_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		      const struct mm_problem *p);
/* conv_direct.c: the estimate of the plan conv_direct_lower (or its IM2COL fallback) would run */
double conv_direct_est(const struct accel_caps *c, const struct accel_conv2d_desc *cd, const struct mm_problem *p);
/* conv_pw.c: a pointwise convolution, or a GEMM with an N x K B, as one streamed GEMM; 1 = not eligible
 * or not faster */
int conv_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p);
int gemm_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct mm_problem *p);
/* conv_pw.c, conv_dw.c: the modeled cycles of what conv_lower runs for a groups-1 / depthwise NHWC
 * convolution (p with M set) */
double conv_pw_est(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p);
double conv_dw_est(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p);
/* The NCHW-described shape of a convolution (batch, channels, image, filter, strides, dilations,
 * top/left padding, output) copied into the same-named uint32_t fields of a lowering's geometry `g`
 * (struct dconv in conv_direct.c, struct dwg in conv_dw.c). */
#define CONV_SHAPE_FILL(g, cd)                                                                        \
	do {                                                                                          \
		(g).N = (cd)->input->shape[0];                                                        \
		(g).C = (cd)->input->shape[1];                                                        \
		(g).H = (cd)->input->shape[2];                                                        \
		(g).W = (cd)->input->shape[3];                                                        \
		(g).K = (cd)->weights->shape[0];                                                      \
		(g).R = (cd)->weights->shape[2];                                                      \
		(g).S = (cd)->weights->shape[3];                                                      \
		(g).sy = (cd)->stride_h;                                                              \
		(g).sx = (cd)->stride_w;                                                              \
		(g).dy = (cd)->dil_h;                                                                 \
		(g).dx = (cd)->dil_w;                                                                 \
		(g).pt = (cd)->pad_top;                                                               \
		(g).pl = (cd)->pad_left;                                                              \
		(g).OH = (cd)->output->shape[2];                                                      \
		(g).OW = (cd)->output->shape[3];                                                      \
	} while (0)
/* conv_dw.c: depthwise on the depthwise block; 1 = not eligible */
int conv_dw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p);
bool conv_dw_takes(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p);
int arg_tensor(struct accel_dev *dev, const struct accel_tensor *t, const char *what);
/* accel_tensor_check, except that in a support query (dev->query) a tensor without a buffer is checked
 * for its shape, strides, layout and dtype only. */
int tensor_usable(struct accel_dev *dev, const struct accel_tensor *t);
/* -EINVAL with a message if the byte ranges (first to one past the last element) of the output out and the
 * input in overlap in one buffer: the device stores output tiles while later input tiles are still read,
 * so no operation works in place. NULL tensors never overlap. */
int arg_no_overlap(struct accel_dev *dev, const struct accel_tensor *out, const char *oname,
		   const struct accel_tensor *in, const char *iname);
/* arg_tensor + a 2-D matrix with contiguous, non-overlapping rows (fp32: 4-byte aligned). */
int mat_arg(struct accel_dev *dev, const struct accel_tensor *t, const char *what);
#endif
