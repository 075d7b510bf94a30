/* SPDX-License-Identifier: MIT */
/* compiled_operands.h - accel_tensor descriptors of a compiled plan's values (compiled_operands.c). */
#ifndef TNPU_ONNX_COMPILED_OPERANDS_H
#define TNPU_ONNX_COMPILED_OPERANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "compile.h"

/* The buffer and byte offset of value v (the weight image's part or the arena). */
void cm_place(const struct onnx_compiled *cm, int v, struct accel_buffer **b, uint64_t *off);
/* FP32 4-D descriptor {n, c, h, w} of v's bytes, NHWC or NCHW; a part of an NHWC in-place Concat takes
 * its root's pixel strides. */
int cm_t4l(const struct onnx_compiled *cm, int v, bool nhwc, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
	   struct accel_tensor *t);
/* cm_t4l in NCHW: element-wise operands read as flat arrays. */
int cm_t4(const struct onnx_compiled *cm, int v, uint32_t n, uint32_t c, uint32_t h, uint32_t w,
	  struct accel_tensor *t);
/* A 2-D FP32 descriptor of v's bytes; cm_t2_slice: matrix bi of a stack of rows x cols matrices. */
int cm_t2(const struct onnx_compiled *cm, int v, uint32_t rows, uint32_t cols, struct accel_tensor *t);
int cm_t2_slice(const struct onnx_compiled *cm, int v, uint32_t bi, uint32_t rows, uint32_t cols,
		struct accel_tensor *t);
/* v is stored channels-last (compile_layout.c). */
bool cm_nhwc(const struct onnx_compiled *cm, int v);
/* CS_COPY: the source and destination boxes. */
void cm_copy_tensors(const struct onnx_compiled *cm, const struct cstep *s, struct accel_tensor *x,
		     struct accel_tensor *y);
/* A conv or GEMM step's epilogue: bias, activation, clamp, residual. */
void cm_step_epilogue(const struct cstep *s, const struct accel_tensor *bt, const struct accel_tensor *rt,
		      struct accel_epilogue *e);
/* A CS_CONV/CS_QCONV step's strides, dilations, padding and groups into d. */
void cm_conv_geometry(const struct cstep *s, struct accel_conv2d_desc *d);
/* The accel_conv2d descriptor of a CS_CONV step. */
int cm_conv_desc(const struct onnx_compiled *cm, const struct cstep *s, struct accel_conv2d_desc *d,
		 struct accel_tensor *x, struct accel_tensor *w, struct accel_tensor *y, struct accel_tensor *bt,
		 struct accel_tensor *rt);

/*
 * Rows row0 .. row0+rows-1 along dim 2 of a FLOAT arena value of shape [1, C, L, D] (a KV-cache input or
 * output: [batch, kv_heads, length, head_dim]), as a 4-D descriptor {1, C, rows, D} in the value's own
 * layout.  -ENOENT: v is not in the arena; -EINVAL: not FLOAT rank 4 with batch 1, or the rows do not fit.
 */
int cm_value_rows(const struct onnx_compiled *cm, int v, uint32_t row0, uint32_t rows, struct accel_tensor *t);
/* The host mapping of an arena value's bytes (valid after a run has drained), NULL if v is not in the
 * arena.  Its layout is the value's: check cm_nhwc() for rank 4. */
const void *cm_value_host(const struct onnx_compiled *cm, int v);

#endif
