/* SPDX-License-Identifier: MIT */
/* builder.h - build small ONNX models in memory with the protobuf-c structs (tests only). */
#ifndef TEST_ONNX_BUILDER_H
#define TEST_ONNX_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "tnpu_onnx.h"

struct mb;	/* a model under construction; everything it allocates is freed by mb_free */

struct mb *mb_new(int64_t opset);
void mb_free(struct mb *b);
/* Node with inputs/outputs given as a comma-separated list ("x,w,b"; "" for an absent optional). */
Onnx__NodeProto *mb_node(struct mb *b, const char *op, const char *inputs, const char *outputs);
void mb_attr_i(struct mb *b, Onnx__NodeProto *n, const char *name, int64_t v);
void mb_attr_f(struct mb *b, Onnx__NodeProto *n, const char *name, float v);
void mb_attr_s(struct mb *b, Onnx__NodeProto *n, const char *name, const char *v);
void mb_attr_ints(struct mb *b, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t cnt);
/* Initializer (data copied, raw_data). */
void mb_init(struct mb *b, const char *name, enum onnx_dtype dt, unsigned ndim, const int64_t *dims,
	     const void *data);
/* The tests' seeded random floats in [-1, 1) (one LCG, state in *rng), and an initializer filled with them. */
float mb_frand(uint32_t *rng);
void mb_init_rand(struct mb *b, const char *name, unsigned ndim, const int64_t *dims, uint32_t *rng);
void mb_input(struct mb *b, const char *name);
void mb_output(struct mb *b, const char *name);
/* A graph output declared with its type and shape (INT64_MIN: a symbolic dim). */
void mb_output_typed(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims);
/* Graph input with a declared tensor type; a dimension INT64_MIN is symbolic ("N"). */
void mb_input_typed(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims);
/* A value_info entry (the declared type of an intermediate value), dimensions as mb_input_typed. */
void mb_value_info(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims);
/* Serialize; the buffer belongs to b. */
const uint8_t *mb_pack(struct mb *b, size_t *len);

#endif
