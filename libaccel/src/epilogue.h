/* SPDX-License-Identifier: MIT */
#ifndef ACCEL_EPILOGUE_H
#define ACCEL_EPILOGUE_H
#include "lower.h"
int epi_setup(struct accel_dev *dev, const struct accel_epilogue *ep, bool f32, enum accel_dtype out_dt, uint32_t N,
	      struct mm_problem *p);
/* Validate a tensor argument: well formed, inside its buffer, of this device. */
int conv_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d);
int conv_direct_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		      const struct mm_problem *p);
/* conv_dw.c: depthwise on the depthwise block; 1 = not eligible */
int conv_dw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p);
int arg_tensor(struct accel_dev *dev, const struct accel_tensor *t, const char *what);
/* arg_tensor + a 2-D matrix with contiguous, non-overlapping rows (fp32: 4-byte aligned). */
int mat_arg(struct accel_dev *dev, const struct accel_tensor *t, const char *what);
#endif
