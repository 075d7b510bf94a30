/* SPDX-License-Identifier: MIT */
/*
 * plan_conv.c - accel_plan_conv2d: a convolution whose A operand is gathered through a static plan
 * (seed 004; Documentation/plans.md).  The matmul engine (matmul.c) is the same for every layout:
 * its A tiles come from GATHER commands instead of IM2COL, and every hardware job that gathers
 * starts with a PLAN_LOAD, which the device serves from its plan cache after the first upload.
 */
#include <string.h>

#include "epilogue.h"
#include "plan_static.h"

void plan_emit_gather(struct mm_ctx *x, const struct mm_src *a, unsigned row, unsigned half, uint32_t m0,
		      uint32_t mt, uint32_t k0, uint32_t kt, uint32_t sram_off, uint32_t pitch)
{
	struct tnpu_cmd_gather g = a->gather;
	unsigned seg = x->cs->n_cuts + 1;

	/* Jobs start from a clean command processor and may run on any queue (each has its own plan
	 * cache), so every job names the plan before its first GATHER; a resident plan costs only
	 * the command decode. */
	if (x->plan_seg != seg || x->plan_handle != g.handle) {
		struct tnpu_cmd_plan_load pl = {
			.hdr = { .opcode = TNPU_CMD_PLAN_LOAD, .flags = TNPU_CMD_F_ASYNC, .size = sizeof(pl) },
			.plan_va = a->plan_va, .handle = g.handle, .bytes = a->plan_bytes, .tag = a->plan_tag,
		};

		cs_raw(x->cs, &pl, sizeof(pl));
		x->plan_seg = seg;
		x->plan_handle = g.handle;
	}
	g.hdr = (struct tnpu_cmd_hdr){ .opcode = TNPU_CMD_GATHER, .flags = TNPU_CMD_F_ASYNC, .size = sizeof(g) };
	g.m0 = m0;
	g.mt = mt;
	g.k0 = k0;
	g.kt = kt;
	g.sram_off = sram_off;
	g.sram_pitch = pitch;
	g.row = (uint8_t)row;
	g.half = (uint8_t)half;
	cs_raw(x->cs, &g, sizeof(g));
}

/* The plan's device copy for dev (uploaded by PLAN_LOAD on a plan-cache miss). */
static int plan_device_copy(struct accel_dev *dev, struct accel_plan *p)
{
	int ret;

	if (p->dev == dev && p->buf)
		return 0;
	accel_buffer_free(p->buf);
	p->buf = NULL;
	p->dev = NULL;
	ret = accel_buffer_alloc(dev, p->image_bytes, &p->buf);
	if (ret)
		return ret;
	memcpy(accel_buffer_ptr(p->buf), p->image, p->image_bytes);
	p->buf->owner_ref = &p->buf;	/* accel_close(dev) frees the copy and clears p->buf */
	p->dev = dev;
	return 0;
}

static int check_args(struct accel_dev *dev, const struct accel_plan *p, const struct accel_plan_conv_args *a,
		      uint32_t oe)
{
	const struct accel_plan_conv_desc *d = &p->d;
	const struct accel_tensor *wt = a->weights, *out = a->output;
	const int64_t *st = out->strides;
	uint64_t in_bytes = (uint64_t)d->n * d->c * d->h * d->w * p->e;
	enum accel_dtype dt = p->e == 4 ? ACCEL_FP32 : ACCEL_INT8;

	if (!a->input || a->input->dev != dev)
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: input buffer missing or of another device");
	if (a->input_offset > a->input->size || a->input->size - a->input_offset < in_bytes)
		return accel_seterr(dev, -ERANGE, "accel_plan_conv2d: input needs %llu bytes at offset %llu, buffer has %llu",
				    (unsigned long long)in_bytes, (unsigned long long)a->input_offset,
				    (unsigned long long)a->input->size);
	if (p->e == 4 && (a->input->va + a->input_offset) % 4)
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: fp32 input must be 4-byte aligned");
	if (wt->ndim != 2 || wt->dtype != dt || wt->shape[0] != d->k || wt->shape[1] != p->K ||
	    wt->strides[1] != (int64_t)p->e || wt->strides[0] < (int64_t)p->e * p->K || wt->strides[0] % p->e ||
	    (wt->buf->va + wt->offset) % p->e)
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: weights must be a 2-D %s tensor %u x %u with "
				    "contiguous rows (accel_plan_pack_weights)", dt == ACCEL_FP32 ? "FP32" : "INT8",
				    d->k, p->K);
	if (out->ndim != 4 || out->shape[0] != d->n || out->shape[1] != d->k || out->shape[2] != p->oh ||
	    out->shape[3] != p->ow)
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: output must be {N,K,OH,OW} = {%u,%u,%u,%u}", d->n,
				    d->k, p->oh, p->ow);
	if (out->layout == ACCEL_LAYOUT_NHWC) {
		if (st[1] != (int64_t)oe || st[2] != st[3] * p->ow || st[0] != st[2] * p->oh || st[3] < (int64_t)oe * d->k)
			return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: NHWC output must be packed over N, H, W "
					    "with contiguous channels");
	} else if (out->layout == ACCEL_LAYOUT_NCHW) {
		if (st[3] != (int64_t)oe || st[2] != (int64_t)oe * p->ow)
			return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: NCHW output needs contiguous H x W planes");
	} else {
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: output layout must be NHWC or NCHW");
	}
	if (oe == 4 && ((out->buf->va + out->offset) % 4 || st[0] % 4 || st[1] % 4 || st[2] % 4 || st[3] % 4))
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: 32-bit output must be 4-byte aligned");
	if (a->input_zero_point < -128 || a->input_zero_point > 127 || (p->e == 4 && a->input_zero_point))
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: input_zero_point must be -128..127 (int8 only)");
	return 0;
}

static int plan_lower(struct accel_dev *dev, struct mm_ctx *x, struct accel_plan *p,
		      const struct accel_plan_conv_args *a)
{
	const struct accel_plan_conv_desc *d = &p->d;
	const struct accel_tensor *wt = a->weights, *out = a->output;
	bool f32 = p->e == 4;
	struct mm_problem pr;
	uint32_t oe;
	int ret;

	if (!(dev->caps.features & TNPU_FEAT_PLAN))
		return accel_seterr(dev, -EOPNOTSUPP, "accel_plan_conv2d: the device has no static-plan support "
				    "(CAP_FEATURES bit 13)");
	if (p->image_bytes > TNPU_PLAN_CACHE_BYTES)
		return accel_seterr(dev, -E2BIG, "accel_plan_conv2d: the plan (%u bytes) exceeds the device plan "
				    "cache (%u bytes); split the layer over the batch or output rows",
				    p->image_bytes, TNPU_PLAN_CACHE_BYTES);
	if ((ret = arg_tensor(dev, wt, "weights")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	memset(&pr, 0, sizeof(pr));
	ret = epi_setup(dev, &a->epi, f32, out->dtype, d->k, &pr);
	if (ret)
		return ret;
	oe = pr.out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	ret = check_args(dev, p, a, oe);
	if (ret)
		return ret;
	ret = plan_device_copy(dev, p);
	if (ret)
		return ret;
	pr.f32 = f32;
	pr.N = d->k;
	pr.K = p->K;
	pr.a.kind = MM_GATHER;
	pr.a.buf = a->input;
	pr.a.gather.src_va = a->input->va + a->input_offset;
	pr.a.gather.handle = p->handle;
	pr.a.gather.pad_value = f32 ? 0 : (uint32_t)(uint8_t)(int8_t)a->input_zero_point;
	pr.a.plan_buf = p->buf;
	pr.a.plan_va = p->buf->va;
	pr.a.plan_tag = p->tag;
	pr.a.plan_bytes = p->image_bytes;
	/* Geometry for the tiling cost model (plan_tiling.c reads it like an IM2COL footprint). */
	pr.a.ic.n = (uint16_t)d->n;
	pr.a.ic.h = (uint16_t)d->h;
	pr.a.ic.w = (uint16_t)d->w;
	pr.a.ic.c = (uint16_t)d->c;
	pr.a.ic.r = (uint16_t)d->r;
	pr.a.ic.s = (uint16_t)d->s;
	pr.a.ic.oh = (uint16_t)p->oh;
	pr.a.ic.ow = (uint16_t)p->ow;
	pr.a.ic.stride_y = (uint8_t)d->stride_h;
	pr.a.ic.stride_x = (uint8_t)d->stride_w;
	pr.a.ic.dil_y = (uint8_t)d->dil_h;
	pr.a.ic.dil_x = (uint8_t)d->dil_w;
	pr.b.kind = MM_MAT_T;
	pr.b.buf = wt->buf;
	pr.b.va = wt->buf->va + wt->offset;
	pr.b.pitch = (uint64_t)wt->strides[0];
	pr.c_buf = out->buf;
	cs_use(x->cs, a->input);
	cs_use(x->cs, wt->buf);
	cs_use(x->cs, out->buf);
	cs_use(x->cs, pr.bias_buf);
	cs_use(x->cs, p->buf);
	if (out->layout == ACCEL_LAYOUT_NCHW) {
		/* Transposing store per batch image: rows of one image are one NCHW plane column. */
		for (uint32_t b = 0; b < d->n; b++) {
			pr.M = p->oh * p->ow;
			pr.a.m_base = b * pr.M;
			pr.c_trans = true;
			pr.c_va = out->buf->va + out->offset + (uint64_t)b * (uint64_t)out->strides[0];
			pr.c_pitch = (uint64_t)out->strides[1];
			ret = mm_emit(x, &pr);
			if (ret)
				return ret;
		}
		return 0;
	}
	pr.M = p->M;
	pr.c_va = out->buf->va + out->offset;
	pr.c_pitch = (uint64_t)out->strides[3];
	return mm_emit(x, &pr);
}

int accel_plan_conv2d(struct accel_dev *dev, const struct accel_plan *plan, const struct accel_plan_conv_args *a,
		      const struct accel_submit *sub, struct accel_job **job)
{
	struct accel_cmdstream cs;
	struct mm_ctx x;
	int ret;

	ret = accel_op_begin(dev, a, "accel_plan_conv2d", job);
	if (ret)
		return ret;
	if (!plan || !a->weights || !a->output)
		return accel_seterr(dev, -EINVAL, "accel_plan_conv2d: plan, weights and output must not be NULL");
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	/* The device copy is a cache inside the (logically const) plan. */
	ret = plan_lower(dev, &x, (struct accel_plan *)(uintptr_t)plan, a);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
