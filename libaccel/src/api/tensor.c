/* SPDX-License-Identifier: MIT */
/* tensor.c - tensor descriptors: construction and validation. */
#include <string.h>

#include "internal.h"

size_t accel_dtype_size(enum accel_dtype dt)
{
	switch (dt) {
	case ACCEL_INT8: return 1;
	case ACCEL_INT32: return 4;
	case ACCEL_FP32: return 4;
	default: return 0;
	}
}

int accel_tensor_2d(struct accel_buffer *buf, uint64_t offset, enum accel_dtype dt, uint32_t rows,
		    uint32_t cols, struct accel_tensor *out)
{
	size_t e = accel_dtype_size(dt);

	/* first, on every path: a caller that misses the error holds a tensor without a buffer, which
	 * every operation rejects, never stale stack bytes (issue #27) */
	if (out)
		memset(out, 0, sizeof(*out));
	if (!buf)
		return -EINVAL;
	if (!out || !e || !rows || !cols)
		return accel_seterr(buf->dev, -EINVAL, "accel_tensor_2d: %s", !out ? "out is NULL"
				    : !e ? "unknown dtype" : "rows and cols must be >= 1");
	out->buf = buf;
	out->offset = offset;
	out->dtype = dt;
	out->layout = ACCEL_LAYOUT_ROWMAJOR;
	out->ndim = 2;
	out->shape[0] = rows;
	out->shape[1] = cols;
	out->strides[0] = (int64_t)cols * (int64_t)e;
	out->strides[1] = (int64_t)e;
	return 0;
}

int accel_tensor_4d(struct accel_buffer *buf, uint64_t offset, enum accel_dtype dt, enum accel_layout layout,
		    uint32_t n, uint32_t c, uint32_t h, uint32_t w, struct accel_tensor *out)
{
	int64_t e = (int64_t)accel_dtype_size(dt);

	if (out)	/* as accel_tensor_2d */
		memset(out, 0, sizeof(*out));
	if (!buf)
		return -EINVAL;
	if (!out || !e || !n || !c || !h || !w)
		return accel_seterr(buf->dev, -EINVAL, "accel_tensor_4d: %s", !out ? "out is NULL"
				    : !e ? "unknown dtype" : "n, c, h and w must be >= 1");
	if (layout != ACCEL_LAYOUT_NHWC && layout != ACCEL_LAYOUT_NCHW)
		return accel_seterr(buf->dev, -EINVAL, "accel_tensor_4d: layout must be ACCEL_LAYOUT_NHWC or _NCHW");
	out->buf = buf;
	out->offset = offset;
	out->dtype = dt;
	out->layout = layout;
	out->ndim = 4;
	out->shape[0] = n;
	out->shape[1] = c;
	out->shape[2] = h;
	out->shape[3] = w;
	if (layout == ACCEL_LAYOUT_NHWC) {
		out->strides[1] = e;
		out->strides[3] = e * c;
		out->strides[2] = e * c * w;
		out->strides[0] = e * c * w * h;
	} else {
		out->strides[3] = e;
		out->strides[2] = e * w;
		out->strides[1] = e * w * h;
		out->strides[0] = e * w * h * c;
	}
	return 0;
}

int accel_tensor_extent(const struct accel_tensor *t, uint64_t *bytes)
{
	uint64_t ext;

	if (!t || !bytes || (t->ndim != 2 && t->ndim != 4) || !accel_dtype_size(t->dtype))
		return -EINVAL;
	ext = accel_dtype_size(t->dtype);
	for (unsigned i = 0; i < t->ndim; i++) {
		if (!t->shape[i] || t->strides[i] < 0)
			return -EINVAL;
		if (t->shape[i] > 1 && (uint64_t)t->strides[i] > (1ull << 40))
			return -EINVAL;
		ext += (uint64_t)(t->shape[i] - 1) * (uint64_t)t->strides[i];
	}
	*bytes = ext;
	return 0;
}

int accel_tensor_check(const struct accel_tensor *t)
{
	uint64_t ext;

	if (!t || !t->buf)
		return -EINVAL;
	if (accel_tensor_extent(t, &ext))
		return -EINVAL;
	if (t->ndim == 2 && t->layout != ACCEL_LAYOUT_ROWMAJOR)
		return -EINVAL;
	if (t->ndim == 4 && t->layout != ACCEL_LAYOUT_NHWC && t->layout != ACCEL_LAYOUT_NCHW)
		return -EINVAL;
	if (t->offset > t->buf->size || ext > t->buf->size - t->offset)
		return -ERANGE;
	return 0;
}

int accel_tensor_va(const struct accel_tensor *t, uint64_t *va)
{
	*va = t->buf->va + t->offset;
	return 0;
}
