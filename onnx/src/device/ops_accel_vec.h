/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_vec.h - the pieces of the vector units' node kernels (ops_accel_vec.c) that the losses, Hardmax
 * and the quantisers (ops_accel_loss.c) build on.
 */
#ifndef TNPU_ONNX_OPS_ACCEL_VEC_H
#define TNPU_ONNX_OPS_ACCEL_VEC_H

#include "accel_util.h"

/* A reduction over a middle run of axes (or an ArgMax over a middle axis) is one job per leading slice. */
#define VEC_MAX_SLICES 64

/* The device reports CAP_FEATURES bit `bit` (15 the vector units, 25 VEC math). */
bool dev_has(struct onnx_ctx *c, unsigned bit);
/* A device buffer of bytes holding src (or nothing), and t its rows x cols view of dtype dt. */
int dev_mat(struct onnx_ctx *c, struct abufs *bs, const void *src, size_t bytes, enum accel_dtype dt, uint32_t rows,
	    uint32_t cols, struct accel_buffer **b, struct accel_tensor *t);
/* lead x k x trail fits the jobs below (k reduced; trail > 1: at most VEC_MAX_SLICES leading slices). */
bool shape_fits(uint64_t lead, uint64_t k, uint64_t trail);
/* x [lead, k, trail] reduced over k by op into y (lead x trail values of 4 bytes), accel_reduce jobs. */
int reduce_jobs(struct onnx_ctx *c, const float *x, enum accel_reduce_op op, uint64_t lead, uint64_t k, uint64_t trail,
		void *y);
/* Softmax (log: LogSoftmax) of `slices` rows x cols matrices of src into dst (count floats); col_stride != 1:
 * row stride 1 and column stride col_stride elements. */
int softmax_jobs(struct onnx_ctx *c, const float *src, float *dst, size_t count, bool log, uint64_t slices,
		 uint64_t rows, uint64_t cols, uint64_t col_stride);

#endif /* TNPU_ONNX_OPS_ACCEL_VEC_H */
