/* SPDX-License-Identifier: MIT */
/*
 * dtype.h - element-type helpers of the importer (dtype.c): the 16-bit floating-point conversions and a
 * whole-tensor conversion.  Internal API, for every part of libtnpu-onnx that meets FLOAT16/BFLOAT16/
 * DOUBLE tensors (host kernels, device lowering of FLOAT16/BFLOAT16 weights).
 */
#ifndef TNPU_ONNX_DTYPE_H
#define TNPU_ONNX_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "tnpu_onnx.h"

/* The element types tensors may have, for messages. */
#define ONNX_DTYPES_SUPPORTED "FLOAT, FLOAT16, BFLOAT16, DOUBLE, UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64, BOOL"

/* FLOAT, FLOAT16, BFLOAT16 or DOUBLE. */
bool onnx_dtype_is_float(enum onnx_dtype dt);
/* binary16 / bfloat16 bits <-> binary32; to 16 bits rounds to nearest even, overflow to inf. */
float onnx_f16_to_f32(uint16_t h);
uint16_t onnx_f32_to_f16(float f);
float onnx_bf16_to_f32(uint16_t b);
uint16_t onnx_f32_to_bf16(float f);
/* dst = src as element type dt (allocated here; release with onnx_tensor_release): floating-point
 * values round to nearest (to 16 bits: ties to even), to an integer type they truncate toward zero and
 * saturate, integer to integer wraps, anything to BOOL is v != 0.  0 or -ENOMEM / -E2BIG / -EINVAL. */
int onnx_tensor_convert(struct onnx_tensor *dst, const struct onnx_tensor *src, enum onnx_dtype dt);

#endif /* TNPU_ONNX_DTYPE_H */
