/* SPDX-License-Identifier: MIT */
/* buffer.c - device-visible buffers (allocation is the backend's job). */
#include <stdlib.h>

#include "internal.h"

int accel_buffer_alloc(struct accel_dev *dev, uint64_t size, struct accel_buffer **out)
{
	struct accel_buffer *b;
	int ret;

	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_buffer_alloc: out (the buffer pointer to fill) is NULL");
	*out = NULL;
	if (!dev)
		return -EINVAL;
	if (!size)
		return accel_seterr(dev, -EINVAL, "accel_buffer_alloc: size must be >= 1");
	if (size > (1ull << 40))
		return accel_seterr(dev, -E2BIG, "accel_buffer_alloc: %llu bytes is too large",
				    (unsigned long long)size);
	b = calloc(1, sizeof(*b));
	if (!b)
		return accel_seterr(dev, -ENOMEM, "accel_buffer_alloc: out of memory");
	b->dev = dev;
	b->size = size;
	b->alloc = (size + ACCEL_PAGE - 1) & ~(uint64_t)(ACCEL_PAGE - 1);
	ret = dev->ops->buf_alloc(dev, b);
	if (ret) {
		free(b);
		return ret;
	}
	b->serial = ++dev->buf_serial;
	accel_obj_add(&dev->objs, &b->link, ACCEL_OBJ_BUFFER);
	*out = b;
	return 0;
}

void accel_buffer_free(struct accel_buffer *buf)
{
	if (!buf)
		return;
	accel_obj_del(&buf->link);
	if (buf->owner_ref && *buf->owner_ref == buf)
		*buf->owner_ref = NULL;
	buf->dev->ops->buf_free(buf->dev, buf);
	free(buf);
}

void *accel_buffer_ptr(const struct accel_buffer *buf)
{
	return buf ? buf->ptr : NULL;
}

uint64_t accel_buffer_size(const struct accel_buffer *buf)
{
	return buf ? buf->size : 0;
}

uint64_t accel_buffer_va(const struct accel_buffer *buf)
{
	return buf ? buf->va : 0;
}
