/* SPDX-License-Identifier: MIT */
/*
 * plan_compile.c - the static plan generator (seed 004): a conv layer -> per-output-pixel base
 * addresses + one shared offset list, for NCHW, NHWC and NCHWc inputs (Documentation/plans.md).
 *
 * Base m is the byte offset of input element (b, channel 0, y*stride - pad_top, x*stride - pad_left),
 * which may lie outside the tensor; offset k is the byte distance of (channel, ry*dil, rx*dil) from
 * that corner.  Borders: offset k belongs to validity group ry*S + rx (its filter tap) and base m
 * carries a mask of the taps that land inside the input.  Seed 004 leaves padding open; a per-tap
 * mask costs 8 bytes per base and keeps the offset list shared by every PE.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan_static.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "plan images and files are little-endian; add byte swapping for this host"
#endif

static _Thread_local char plan_err[256];
static atomic_uint plan_next_handle = 1;

int plan_seterr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(plan_err, sizeof(plan_err), fmt, ap);
	va_end(ap);
	return err;
}

const char *accel_plan_last_error(void)
{
	return plan_err;
}

uint64_t plan_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

struct accel_plan *plan_alloc(void)
{
	struct accel_plan *p = calloc(1, sizeof(*p));
	unsigned h;

	if (!p)
		return NULL;
	/* Unique within the process; the pid term keeps two processes that inherit one context id and
	 * page-table root (plans.md "Cache") from naming the same plan alike. */
	do
		h = atomic_fetch_add(&plan_next_handle, 1) + (unsigned)getpid() * 2654435761u;
	while (h == 0 || h == TNPU_PLAN_HANDLE_ALL);
	p->handle = h;
	return p;
}

int plan_geometry(const struct accel_plan_conv_desc *d, struct accel_plan *p)
{
	uint64_t eh, ew, oh, ow, M, K, bytes;

	if (!d)
		return plan_seterr(-EINVAL, "plan: descriptor is NULL");
	if (d->layout > ACCEL_PLAN_NCHWC)
		return plan_seterr(-EINVAL, "plan: unknown layout %d", (int)d->layout);
	if (d->dtype != ACCEL_INT8 && d->dtype != ACCEL_FP32)
		return plan_seterr(-EINVAL, "plan: dtype must be INT8 or FP32");
	if (!d->n || !d->c || !d->h || !d->w || !d->k || !d->r || !d->s)
		return plan_seterr(-EINVAL, "plan: n, c, h, w, k, r, s must be >= 1");
	if (!d->stride_h || !d->stride_w || !d->dil_h || !d->dil_w)
		return plan_seterr(-EINVAL, "plan: stride and dilation must be >= 1");
	if (d->layout == ACCEL_PLAN_NCHWC ? !d->c_block || d->c % d->c_block : d->c_block != 0)
		return plan_seterr(-EINVAL, "plan: c_block must divide C (%u) for NCHWc and be 0 otherwise", d->c);
	if ((uint64_t)d->r * d->s > TNPU_PLAN_MAX_GROUPS)
		return plan_seterr(-E2BIG, "plan: filter %ux%u has more than %u taps (one validity group each)", d->r,
				   d->s, TNPU_PLAN_MAX_GROUPS);
	if (d->n > 65535 || d->c > 65535 || d->h > 65535 || d->w > 65535 || d->k > 65535 || d->r > 255 ||
	    d->s > 255 || d->stride_h > 255 || d->stride_w > 255 || d->dil_h > 255 || d->dil_w > 255 ||
	    d->pad_top > 255 || d->pad_left > 255 || d->pad_bottom > 255 || d->pad_right > 255)
		return plan_seterr(-E2BIG, "plan: dimensions above 65535 or stride/dilation/padding above 255");
	eh = (uint64_t)d->dil_h * (d->r - 1) + 1;
	ew = (uint64_t)d->dil_w * (d->s - 1) + 1;
	if ((uint64_t)d->h + d->pad_top + d->pad_bottom < eh || (uint64_t)d->w + d->pad_left + d->pad_right < ew)
		return plan_seterr(-EINVAL, "plan: the (dilated) filter is larger than the padded input");
	oh = ((uint64_t)d->h + d->pad_top + d->pad_bottom - eh) / d->stride_h + 1;
	ow = ((uint64_t)d->w + d->pad_left + d->pad_right - ew) / d->stride_w + 1;
	M = (uint64_t)d->n * oh * ow;
	K = (uint64_t)d->r * d->s * d->c;
	bytes = sizeof(struct tnpu_plan_hdr) + M * sizeof(struct tnpu_plan_base) + K * sizeof(struct tnpu_plan_offset);
	if (bytes > UINT32_MAX / 2)
		return plan_seterr(-E2BIG, "plan: %llu base records are too many", (unsigned long long)M);
	/* Offsets are signed 32-bit byte distances: the footprint of one output pixel must fit. */
	if ((uint64_t)d->c * d->h * d->w * (d->dtype == ACCEL_FP32 ? 4 : 1) > INT32_MAX)
		return plan_seterr(-E2BIG, "plan: one input image is larger than 2 GiB");
	p->d = *d;
	p->oh = (uint32_t)oh;
	p->ow = (uint32_t)ow;
	p->M = (uint32_t)M;
	p->K = (uint32_t)K;
	p->e = d->dtype == ACCEL_FP32 ? 4 : 1;
	p->image_bytes = (uint32_t)bytes;
	return 0;
}

/* Element strides (in elements) of the packed input; for NCHWc the channel is split below. */
struct strides {
	int64_t n, h, w;
};

static struct strides layout_strides(const struct accel_plan_conv_desc *d)
{
	struct strides st;
	int64_t C = d->c, H = d->h, W = d->w;

	switch (d->layout) {
	case ACCEL_PLAN_NCHW:
		st = (struct strides){ .n = C * H * W, .h = W, .w = 1 };
		break;
	case ACCEL_PLAN_NHWC:
		st = (struct strides){ .n = H * W * C, .h = W * C, .w = C };
		break;
	default:
		st = (struct strides){ .n = C * H * W, .h = W * d->c_block, .w = d->c_block };
		break;
	}
	return st;
}

static int64_t channel_off(const struct accel_plan_conv_desc *d, uint32_t ch)
{
	switch (d->layout) {
	case ACCEL_PLAN_NCHW:
		return (int64_t)ch * d->h * d->w;
	case ACCEL_PLAN_NHWC:
		return ch;
	default:
		return (int64_t)(ch / d->c_block) * d->h * d->w * d->c_block + ch % d->c_block;
	}
}

/* The plan's K order: the order in which weights are packed for this layout (OIHW for NCHW, OHWI
 * for NHWC, O,C/cb,R,S,cb for NCHWc), so consecutive k walk the contiguous axis where they can. */
static void k_split(const struct accel_plan_conv_desc *d, uint32_t k, uint32_t *ch, uint32_t *ry, uint32_t *rx)
{
	switch (d->layout) {
	case ACCEL_PLAN_NCHW:
		*rx = k % d->s;
		*ry = (k / d->s) % d->r;
		*ch = k / (d->s * d->r);
		break;
	case ACCEL_PLAN_NHWC:
		*ch = k % d->c;
		*rx = (k / d->c) % d->s;
		*ry = k / (d->c * d->s);
		break;
	default: {
		uint32_t cb = d->c_block, ci = k % cb, t = k / cb;

		*rx = t % d->s;
		*ry = (t / d->s) % d->r;
		*ch = (t / (d->s * d->r)) * cb + ci;
		break;
	}
	}
}

int accel_plan_compile(const struct accel_plan_conv_desc *d, struct accel_plan **out)
{
	struct accel_plan *p;
	struct tnpu_plan_hdr h;
	struct strides st;
	uint8_t *img;
	int ret;

	if (!out)
		return plan_seterr(-EINVAL, "accel_plan_compile: out is NULL");
	*out = NULL;
	p = plan_alloc();
	if (!p)
		return plan_seterr(-ENOMEM, "accel_plan_compile: out of memory");
	ret = plan_geometry(d, p);
	if (ret) {
		free(p);
		return ret;
	}
	p->image = img = calloc(1, p->image_bytes);
	if (!img) {
		ret = plan_seterr(-ENOMEM, "accel_plan_compile: out of memory for a %u-byte plan", p->image_bytes);
		free(p);
		return ret;
	}
	memset(&h, 0, sizeof(h));
	h.magic = TNPU_PLAN_MAGIC;
	h.version = TNPU_PLAN_VERSION;
	h.elem_size = (uint8_t)p->e;
	h.n_groups = (uint8_t)(d->r * d->s);
	h.n_bases = p->M;
	h.n_offsets = p->K;
	h.bytes = p->image_bytes;
	memcpy(img, &h, sizeof(h));
	st = layout_strides(d);
	{
		struct tnpu_plan_base *bases = (struct tnpu_plan_base *)(void *)(img + sizeof(h));
		uint64_t row_mask[256], all_taps = h.n_groups == 64 ? ~0ull : (1ull << h.n_groups) - 1;
		uint32_t m = 0;

		for (uint32_t b = 0; b < d->n; b++) {
			for (uint32_t y = 0; y < p->oh; y++) {
				int64_t iy0 = (int64_t)y * d->stride_h - d->pad_top;

				/* Taps whose row is inside the input, per filter row. */
				for (uint32_t ry = 0; ry < d->r; ry++) {
					int64_t iy = iy0 + (int64_t)ry * d->dil_h;

					row_mask[ry] = iy >= 0 && iy < d->h ? ~0ull : 0;
				}
				for (uint32_t x = 0; x < p->ow; x++, m++) {
					int64_t ix0 = (int64_t)x * d->stride_w - d->pad_left;
					uint64_t mask = 0;

					for (uint32_t ry = 0; ry < d->r; ry++)
						for (uint32_t rx = 0; rx < d->s; rx++) {
							int64_t ix = ix0 + (int64_t)rx * d->dil_w;

							if (row_mask[ry] && ix >= 0 && ix < d->w)
								mask |= 1ull << (ry * d->s + rx);
						}
					bases[m].base = ((int64_t)b * st.n + iy0 * st.h + ix0 * st.w) * p->e;
					bases[m].mask = mask & all_taps;
				}
			}
		}
	}
	{
		struct tnpu_plan_offset *offs =
			(struct tnpu_plan_offset *)(void *)(img + sizeof(h) + (size_t)p->M * sizeof(struct tnpu_plan_base));

		for (uint32_t k = 0; k < p->K; k++) {
			uint32_t ch, ry, rx;

			k_split(d, k, &ch, &ry, &rx);
			offs[k].offset = (int32_t)((channel_off(d, ch) + (int64_t)ry * d->dil_h * st.h +
						    (int64_t)rx * d->dil_w * st.w) * p->e);
			offs[k].group = (uint8_t)(ry * d->s + rx);
		}
	}
	p->tag = plan_fnv1a(img, p->image_bytes, PLAN_FNV_INIT);
	*out = p;
	return 0;
}

void accel_plan_free(struct accel_plan *plan)
{
	if (!plan)
		return;
	accel_buffer_free(plan->buf);
	free(plan->image);
	free(plan);
}

int accel_plan_info(const struct accel_plan *plan, struct accel_plan_info *out)
{
	if (!plan || !out)
		return plan_seterr(-EINVAL, "accel_plan_info: plan and out must not be NULL");
	memset(out, 0, sizeof(*out));
	out->desc = plan->d;
	out->oh = plan->oh;
	out->ow = plan->ow;
	out->n_bases = plan->M;
	out->n_offsets = plan->K;
	out->image_bytes = plan->image_bytes;
	out->tag = plan->tag;
	return 0;
}

int accel_plan_pack_weights(const struct accel_plan *plan, const void *oihw, void *dst)
{
	const struct accel_plan_conv_desc *d;

	if (!plan || !oihw || !dst)
		return plan_seterr(-EINVAL, "accel_plan_pack_weights: arguments must not be NULL");
	d = &plan->d;
	for (uint32_t o = 0; o < d->k; o++)
		for (uint32_t k = 0; k < plan->K; k++) {
			uint32_t ch, ry, rx;
			size_t src;

			k_split(d, k, &ch, &ry, &rx);
			src = (((size_t)o * d->c + ch) * d->r + ry) * d->s + rx;
			memcpy((uint8_t *)dst + ((size_t)o * plan->K + k) * plan->e, (const uint8_t *)oihw + src * plan->e,
			       plan->e);
		}
	return 0;
}

int plan_image_check(const struct accel_plan *p)
{
	struct tnpu_plan_hdr h;
	const struct tnpu_plan_offset *offs;
	const struct tnpu_plan_base *bases;
	uint32_t groups = p->d.r * p->d.s;
	uint64_t all = groups == 64 ? ~0ull : (1ull << groups) - 1;

	if (p->image_bytes < sizeof(h))
		return plan_seterr(-EINVAL, "plan image is shorter than its header");
	memcpy(&h, p->image, sizeof(h));
	if (h.magic != TNPU_PLAN_MAGIC || h.version != TNPU_PLAN_VERSION || h.elem_size != p->e ||
	    h.n_groups != groups || h.n_bases != p->M || h.n_offsets != p->K || h.bytes != p->image_bytes ||
	    h.reserved[0] || h.reserved[1] || h.reserved[2])
		return plan_seterr(-EINVAL, "plan image header does not match the layer description");
	bases = (const struct tnpu_plan_base *)(const void *)(p->image + sizeof(h));
	offs = (const struct tnpu_plan_offset *)(const void *)(p->image + sizeof(h) + (size_t)p->M * sizeof(*bases));
	for (uint32_t m = 0; m < p->M; m++)
		if (bases[m].mask & ~all)
			return plan_seterr(-EINVAL, "plan image: base %u has mask bits beyond %u groups", m, groups);
	for (uint32_t k = 0; k < p->K; k++)
		if (offs[k].group >= groups || offs[k].reserved[0] || offs[k].reserved[1] || offs[k].reserved[2])
			return plan_seterr(-EINVAL, "plan image: offset %u has an invalid group", k);
	return 0;
}
