/* SPDX-License-Identifier: MIT */
/*
 * weight_share.c - one device copy of a model's weights for all its compiled forms (issue 29: "weights
 * uploaded once").
 *
 * A decoder runs compiled once per shape bucket, and each compiled form used to upload its own weight
 * image: GPT-2-small's 494 MB once per bucket.  The image is the model's constants in lowering order
 * (the same for every bucket of one model) followed by the values computed from the input shapes
 * (compile_known.c), which differ per bucket.  So a compiled form keeps the first part, its *prefix*,
 * in a device buffer shared by every compiled form on the same device whose prefix has the same bytes
 * (found by size and hash, confirmed byte for byte), reference-counted; the known values go into a
 * small buffer of its own (the tail).  Offsets stay the image's: cm_wbuf_at() says which buffer holds
 * one.  Compiled-model files keep the whole image (a loaded plan uploads it as one prefix).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

struct wshare {
	struct wshare *next;
	struct accel_dev *dev;
	uint64_t bytes, hash;
	unsigned refs;
	struct accel_buffer *buf;
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wshare *shares;

/* A fast 64-bit hash of the prefix (words; the byte-for-byte comparison decides). */
static uint64_t image_hash(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (uint64_t i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	for (uint64_t i = n & ~7ull; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int cm_weights_upload(struct onnx_compiled *cm)
{
	uint64_t pre = cm->wprefix <= cm->wbytes ? cm->wprefix : cm->wbytes, tail = cm->wbytes - pre;
	uint64_t h = image_hash(cm->wimg, pre);
	struct wshare *e;
	int ret = 0;

	cm->wprefix = pre;
	pthread_mutex_lock(&share_lock);
	for (e = shares; e; e = e->next)
		if (e->dev == cm->dev && e->bytes == pre && e->hash == h &&
		    (!pre || !memcmp(accel_buffer_ptr(e->buf), cm->wimg, pre)))
			break;
	if (e) {
		e->refs++;
	} else {
		e = calloc(1, sizeof(*e));
		if (!e)
			ret = -ENOMEM;
		else if ((ret = accel_buffer_alloc(cm->dev, pre ? pre : 1, &e->buf)))
			free(e);
		if (!ret) {
			if (pre)
				memcpy(accel_buffer_ptr(e->buf), cm->wimg, pre);	/* the one upload */
			e->dev = cm->dev;
			e->bytes = pre;
			e->hash = h;
			e->refs = 1;
			e->next = shares;
			shares = e;
		}
	}
	pthread_mutex_unlock(&share_lock);
	if (ret)
		return cm_seterr(cm, ret, "weight buffer of %llu bytes: %s", (unsigned long long)pre,
				 ret == -ENOMEM ? "out of memory" : accel_last_error(cm->dev));
	cm->wshare = e;
	cm->wbuf = e->buf;
	if (!tail)
		return 0;
	ret = accel_buffer_alloc(cm->dev, tail, &cm->wtail);
	if (ret)
		return cm_seterr(cm, ret, "known values' buffer of %llu bytes: %s", (unsigned long long)tail,
				 accel_last_error(cm->dev));
	memcpy(accel_buffer_ptr(cm->wtail), cm->wimg + pre, tail);
	return 0;
}

void cm_weights_release(struct onnx_compiled *cm)
{
	struct wshare *e = cm->wshare, **pp;

	accel_buffer_free(cm->wtail);
	cm->wtail = NULL;
	cm->wbuf = NULL;
	cm->wshare = NULL;
	if (!e)
		return;
	pthread_mutex_lock(&share_lock);
	if (--e->refs) {
		pthread_mutex_unlock(&share_lock);
		return;
	}
	for (pp = &shares; *pp && *pp != e; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = e->next;
	pthread_mutex_unlock(&share_lock);
	accel_buffer_free(e->buf);
	free(e);
}

struct accel_buffer *cm_wbuf_at(const struct onnx_compiled *cm, uint64_t off, uint64_t *boff)
{
	if (off >= cm->wprefix && cm->wtail) {
		*boff = off - cm->wprefix;
		return cm->wtail;
	}
	*boff = off;
	return cm->wbuf;
}
