/* SPDX-License-Identifier: MIT */
/*
 * dtype.c - element types: sizes, names, and the conversions between the 16-bit floating-point types
 * (FLOAT16 = IEEE binary16, BFLOAT16 = the top half of a binary32) and FLOAT.
 *
 * Tensors keep the element type they are declared with (initialisers, inputs, outputs, Cast's result);
 * a host kernel written for FLOAT sees FLOAT16, BFLOAT16 and DOUBLE operands widened to FLOAT and its
 * FLOAT results narrowed back (exec.c, onnx_dtype_compute_f32), and a device step takes FLOAT weights:
 * whoever needs them as FLOAT calls onnx_tensor_convert().  Documentation/onnx.md, "Element types".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t onnx_dtype_size(enum onnx_dtype dt)
{
	switch (dt) {
	case ONNX_UINT8:
	case ONNX_INT8:
	case ONNX_BOOL:
		return 1;
	case ONNX_UINT16:
	case ONNX_INT16:
	case ONNX_FLOAT16:
	case ONNX_BFLOAT16:
		return 2;
	case ONNX_FLOAT:
	case ONNX_INT32:
	case ONNX_UINT32:
		return 4;
	case ONNX_INT64:
	case ONNX_DOUBLE:
	case ONNX_UINT64:
		return 8;
	}
	return 0;
}

const char *onnx_dtype_name(int dt)
{
	static const char *const names[] = {
		[0] = "UNDEFINED", [1] = "FLOAT", [2] = "UINT8", [3] = "INT8", [4] = "UINT16", [5] = "INT16",
		[6] = "INT32", [7] = "INT64", [8] = "STRING", [9] = "BOOL", [10] = "FLOAT16", [11] = "DOUBLE",
		[12] = "UINT32", [13] = "UINT64", [14] = "COMPLEX64", [15] = "COMPLEX128", [16] = "BFLOAT16",
	};

	return dt >= 0 && dt <= 16 ? names[dt] : "unknown";
}

bool onnx_dtype_is_float(enum onnx_dtype dt)
{
	return dt == ONNX_FLOAT || dt == ONNX_FLOAT16 || dt == ONNX_BFLOAT16 || dt == ONNX_DOUBLE;
}

float onnx_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);	/* inf, NaN (payload kept) */
	} else if (exp) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else {	/* zero or subnormal: man * 2^-24, exact in binary32 */
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	memcpy(&f, &bits, 4);
	return f;
}

/* Round to nearest, ties to even (as numpy's astype(float16)); overflow gives inf, NaN stays NaN. */
uint16_t onnx_f32_to_f16(float f)
{
	uint32_t x, sign, man;
	int exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int)((x >> 23) & 0xff);
	man = x & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	exp -= 127 - 15;
	if (exp >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {	/* subnormal half (or zero): shift the mantissa with its implicit one */
		uint32_t m = man | 0x800000, shift = (uint32_t)(14 - exp), r, half;

		if (exp < -10)
			return (uint16_t)sign;
		r = m >> shift;
		half = 1u << (shift - 1);
		if ((m & (2 * half - 1)) > half || ((m & (2 * half - 1)) == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	{
		uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++;	/* a carry into the exponent is the right result (up to inf) */
		return (uint16_t)h;
	}
}

float onnx_bf16_to_f32(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

/* Round to nearest even (as PyTorch's .to(torch.bfloat16)); NaN stays a quiet NaN. */
uint16_t onnx_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

int onnx_tensor_convert(struct onnx_tensor *dst, const struct onnx_tensor *src, enum onnx_dtype dt)
{
	int ret = onnx_tensor_alloc(dst, dt, src->ndim, src->dims);

	if (ret)
		return ret;
	if (dt == src->dtype) {
		memcpy(dst->data, src->data, src->count * onnx_dtype_size(dt));
		return 0;
	}
	for (size_t i = 0; i < src->count; i++) {
		if (onnx_dtype_is_float(src->dtype) || onnx_dtype_is_float(dt))
			tensor_set(dst, i, tensor_get(src, i));
		else
			tensor_set_i(dst, i, tensor_get_i(src, i));
	}
	return 0;
}

/* Operators whose host kernels take every element type as it is: they move, select or convert elements
 * and never compute in FLOAT. */
static bool dtype_native(enum onnx_op op)
{
	switch (op) {
	case OP_CAST: case OP_CASTLIKE: case OP_IDENTITY: case OP_RESHAPE: case OP_FLATTEN: case OP_SQUEEZE:
	case OP_UNSQUEEZE: case OP_TRANSPOSE: case OP_CONCAT: case OP_SPLIT: case OP_SLICE: case OP_GATHER:
	case OP_GATHERELEMENTS: case OP_GATHERND: case OP_EXPAND: case OP_TILE: case OP_SHAPE: case OP_SIZE:
	case OP_WHERE: case OP_SCATTERELEMENTS: case OP_SCATTER: case OP_SCATTERND: case OP_DEPTHTOSPACE:
	case OP_SPACETODEPTH: case OP_TRILU: case OP_CONSTANT: case OP_CONSTANTOFSHAPE: case OP_EYELIKE:
	case OP_COMPRESS: case OP_NONZERO: case OP_ISNAN: case OP_ISINF: case OP_REVERSESEQUENCE: case OP_UNIQUE:
		return true;
	default:
		return false;
	}
}

/* A type whose values a FLOAT kernel computes on as FLOAT. */
static bool dtype_widened(enum onnx_dtype dt)
{
	return dt == ONNX_FLOAT16 || dt == ONNX_BFLOAT16 || dt == ONNX_DOUBLE;
}

/* Operators whose host kernels compute DOUBLE in double (the arithmetic the backend tests check to
 * double's precision, with values beyond FLOAT's range). */
static bool double_native(enum onnx_op op)
{
	switch (op) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_EQUAL: case OP_GREATER: case OP_LESS:
	case OP_GREATEREQUAL: case OP_LESSEQUAL:
		return true;
	default:
		return false;
	}
}

bool onnx_dtype_needs_f32(const struct onnx_ctx *c)
{
	if (dtype_native(c->n->op))
		return false;
	for (unsigned i = 0; i < c->n->n_in; i++) {
		const struct onnx_tensor *t = node_in(c, i);

		if (t && t->data && dtype_widened(t->dtype) && !(t->dtype == ONNX_DOUBLE && double_native(c->n->op)))
			return true;
	}
	return false;
}

int onnx_dtype_compute_f32(struct onnx_ctx *c, onnx_kernel k)
{
	struct onnx_tensor *sub;
	enum onnx_dtype narrow = ONNX_FLOAT;
	int ret = 0;

	if (!onnx_dtype_needs_f32(c))
		return k(c);
	sub = calloc(c->n->n_in, sizeof(*sub));
	if (!sub)
		return node_err(c, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < c->n->n_in && !ret; i++) {
		const struct onnx_tensor *t = node_in(c, i);

		if (!t || !t->data || !dtype_widened(t->dtype) ||
		    (t->dtype == ONNX_DOUBLE && double_native(c->n->op)))
			continue;
		if (narrow == ONNX_FLOAT)
			narrow = t->dtype;	/* the results take the first such operand's type */
		if ((ret = onnx_tensor_convert(&sub[i], t, ONNX_FLOAT)))
			ret = node_err(c, ret, "input %u: cannot widen %s to FLOAT", i, onnx_dtype_name(t->dtype));
	}
	if (!ret) {
		c->in_sub = sub;
		ret = k(c);
		c->in_sub = NULL;
	}
	for (unsigned i = 0; i < c->n->n_out && !ret; i++) {
		struct onnx_tensor *y, n;

		if (c->n->out[i] < 0 || !(y = node_out(c, i))->data || y->dtype != ONNX_FLOAT)
			continue;
		if ((ret = onnx_tensor_convert(&n, y, narrow))) {
			ret = node_err(c, ret, "output %u: cannot narrow FLOAT to %s", i, onnx_dtype_name(narrow));
			break;
		}
		onnx_tensor_release(y);
		*y = n;
	}
	for (unsigned i = 0; i < c->n->n_in; i++)
		onnx_tensor_release(&sub[i]);
	free(sub);
	return ret;
}
