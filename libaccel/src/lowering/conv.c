/* SPDX-License-Identifier: MIT */
/*
 * conv.c - accel_conv2d through the implicit-im2col load (seed 002, commands.md IM2COL).
 *
 * Convolution as a matmul (seed 001 para 139): rows = output pixels (n, y, x) -> M, columns of A =
 * filter taps x input channels -> K, output channels -> N.  The A tiles are generated on chip by
 * IM2COL commands from the raw input (no im2col buffer in host or device memory); the weights are
 * the transposed B operand (one row of K per output channel: OHWI for NHWC, OIHW for NCHW, which is
 * exactly IM2COL's K order).  Groups are independent problems on channel slices (depthwise = one
 * problem per channel).  NHWC output is stored directly; NCHW output uses a transposing store.
 */
#include <string.h>

#include "epilogue.h"

struct conv_geom {
	uint32_t n, c, h, w, k, r, s, oh, ow, g, cg, kg;
	bool nchw, f32;
	uint32_t e, oe;
};

static int conv_check(struct accel_dev *dev, const struct accel_conv2d_desc *d, struct conv_geom *cg)
{
	const struct accel_tensor *in = d->input, *wt = d->weights, *out = d->output;
	int64_t e;
	uint64_t eh, ew;
	int ret;

	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, wt, "weights")) ||
	    (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = arg_no_overlap(dev, out, "output", in, "input")) ||
	    (ret = arg_no_overlap(dev, out, "output", wt, "weights")) ||
	    (ret = arg_no_overlap(dev, out, "output", d->epi.bias, "the bias")))
		return ret;
	if (in->ndim != 4 || wt->ndim != 4 || out->ndim != 4)
		return accel_seterr(dev, -EINVAL, "conv2d: input, weights and output must be 4-D tensors");
	if (in->dtype != wt->dtype || (in->dtype != ACCEL_INT8 && in->dtype != ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "conv2d: input and weights must both be INT8 or FP32");
	if (wt->layout != in->layout)
		return accel_seterr(dev, -EINVAL, "conv2d: weights layout must match the input layout "
				    "(NHWC input: OHWI weights, NCHW input: OIHW weights)");
	memset(cg, 0, sizeof(*cg));
	cg->f32 = in->dtype == ACCEL_FP32;
	cg->nchw = in->layout == ACCEL_LAYOUT_NCHW;
	e = cg->f32 ? 4 : 1;
	cg->e = (uint32_t)e;
	cg->n = in->shape[0];
	cg->c = in->shape[1];
	cg->h = in->shape[2];
	cg->w = in->shape[3];
	cg->k = wt->shape[0];
	cg->r = wt->shape[2];
	cg->s = wt->shape[3];
	cg->g = d->groups ? d->groups : 0;
	if (!d->groups)
		return accel_seterr(dev, -EINVAL, "conv2d: groups must be >= 1");
	if (!d->stride_h || !d->stride_w || !d->dil_h || !d->dil_w)
		return accel_seterr(dev, -EINVAL, "conv2d: stride and dilation must be >= 1");
	/* IM2COL's stride, dilation and padding fields are 8 bits (commands.md) */
	{
		const struct { const char *name; uint32_t v; } f8[] = {
			{ "stride_h", d->stride_h }, { "stride_w", d->stride_w }, { "dil_h", d->dil_h },
			{ "dil_w", d->dil_w }, { "pad_top", d->pad_top }, { "pad_left", d->pad_left },
			{ "pad_bottom", d->pad_bottom }, { "pad_right", d->pad_right },
		};

		for (unsigned i = 0; i < sizeof(f8) / sizeof(f8[0]); i++)
			if (f8[i].v > 255)
				return accel_limit(dev, -EINVAL, "conv2d: %s %u > 255 (stride, dilation and padding "
						   "must be <= 255: 8-bit IM2COL fields)", f8[i].name, f8[i].v);
	}
	if (cg->c % cg->g || cg->k % cg->g)
		return accel_seterr(dev, -EINVAL, "conv2d: groups (%u) must divide input (%u) and output (%u) channels",
				    cg->g, cg->c, cg->k);
	cg->cg = cg->c / cg->g;
	cg->kg = cg->k / cg->g;
	if (wt->shape[1] != cg->cg)
		return accel_seterr(dev, -EINVAL, "conv2d: weights have %u input channels, expected C/groups = %u",
				    wt->shape[1], cg->cg);
	/* IM2COL's dimensions are 16 bits */
	{
		const struct { const char *name; uint32_t v; } f16[] = {
			{ "input N", cg->n }, { "input H", cg->h }, { "input W", cg->w }, { "input C", cg->c },
			{ "weights R", cg->r }, { "weights S", cg->s },
		};

		for (unsigned i = 0; i < sizeof(f16) / sizeof(f16[0]); i++)
			if (f16[i].v > 65535)
				return accel_limit(dev, -E2BIG, "conv2d: %s %u > 65535 (dimensions above 65535 are not "
						   "supported by IM2COL)", f16[i].name, f16[i].v);
	}
	eh = (uint64_t)d->dil_h * (cg->r - 1) + 1;
	ew = (uint64_t)d->dil_w * (cg->s - 1) + 1;
	if ((uint64_t)cg->h + d->pad_top + d->pad_bottom < eh || (uint64_t)cg->w + d->pad_left + d->pad_right < ew)
		return accel_seterr(dev, -EINVAL, "conv2d: the (dilated) filter is larger than the padded input");
	cg->oh = (uint32_t)(((uint64_t)cg->h + d->pad_top + d->pad_bottom - eh) / d->stride_h + 1);
	cg->ow = (uint32_t)(((uint64_t)cg->w + d->pad_left + d->pad_right - ew) / d->stride_w + 1);
	if (out->shape[0] != cg->n || out->shape[1] != cg->k || out->shape[2] != cg->oh || out->shape[3] != cg->ow)
		return accel_seterr(dev, -EINVAL, "conv2d: output is {%u,%u,%u,%u}, expected {N,K,OH,OW} = {%u,%u,%u,%u}",
				    out->shape[0], out->shape[1], out->shape[2], out->shape[3], cg->n, cg->k, cg->oh,
				    cg->ow);
	if (cg->oh > 65535 || cg->ow > 65535)
		return accel_limit(dev, -E2BIG, "conv2d: output %s %u > 65535 (output dimensions above 65535)",
				   cg->oh > 65535 ? "OH" : "OW", cg->oh > 65535 ? cg->oh : cg->ow);
	/* IM2COL needs the layout's contiguous axis (commands.md). */
	if (cg->nchw ? in->strides[3] != e : in->strides[1] != e)
		return accel_seterr(dev, -EINVAL, "conv2d: the input's %s axis must be contiguous",
				    cg->nchw ? "W" : "C");
	/* Weights: every output channel one contiguous row of K in IM2COL's order. */
	if (cg->nchw ? (wt->strides[3] != e || wt->strides[2] != e * cg->s || wt->strides[1] != e * cg->s * cg->r)
		     : (wt->strides[1] != e || wt->strides[3] != e * cg->cg || wt->strides[2] != e * cg->cg * cg->s))
		return accel_seterr(dev, -EINVAL, "conv2d: weights must be packed %s per output channel",
				    cg->nchw ? "OIHW" : "OHWI");
	if (cg->f32 && (tensor_addr(in) % 4 || tensor_addr(wt) % 4 || wt->strides[0] % 4))
		return accel_seterr(dev, -EINVAL, "conv2d: fp32 tensors must be 4-byte aligned");
	if (d->input_zero_point < -128 || d->input_zero_point > 127 || (cg->f32 && d->input_zero_point))
		return accel_seterr(dev, -EINVAL, "conv2d: input_zero_point must be -128..127 (int8 only)");
	return 0;
}

static int conv_output_ok(struct accel_dev *dev, const struct accel_tensor *out, const struct conv_geom *cg,
			  uint32_t oe)
{
	const int64_t *st = out->strides;

	if (out->layout == ACCEL_LAYOUT_NHWC) {
		if (st[1] != (int64_t)oe || st[2] != st[3] * cg->ow || st[0] != st[2] * cg->oh || st[3] < (int64_t)oe * cg->k)
			return accel_seterr(dev, -EINVAL, "conv2d: NHWC output must be packed over N, H, W "
					    "with contiguous channels");
	} else {
		if (st[3] != (int64_t)oe || st[2] != (int64_t)oe * cg->ow)
			return accel_seterr(dev, -EINVAL, "conv2d: NCHW output needs contiguous H x W planes");
	}
	if (oe == 4 && (tensor_addr(out) % 4 || st[0] % 4 || st[1] % 4 || st[2] % 4 || st[3] % 4))
		return accel_seterr(dev, -EINVAL, "conv2d: 32-bit output must be 4-byte aligned");
	return 0;
}

/* Everything accel_conv2d checks before it lowers (accel_op_supported asks the same): the descriptor,
 * the device's limits, the epilogue (into p) and the output's layout.  Touches no buffer. */
static int conv_validate(struct accel_dev *dev, const struct accel_conv2d_desc *d, struct conv_geom *cg,
			 struct mm_problem *p)
{
	const struct accel_tensor *out = d->output;
	int ret;

	ret = conv_check(dev, d, cg);
	if (ret)
		return ret;
	memset(p, 0, sizeof(*p));
	/* The bias (or column records) covers all K output channels; each group takes its slice below. */
	ret = epi_setup(dev, &d->epi, cg->f32, out->dtype, cg->k, p);
	if (ret)
		return ret;
	ret = conv_output_ok(dev, out, cg, p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4);
	if (ret)
		return ret;
	if (p->res_tensor) {
		/* ISA 2 residual: the implicit-im2col lowering stages it in the C tile (matmul.c) */
		const struct accel_tensor *r = p->res_tensor;

		if (r->ndim != 4 || r->layout != out->layout || memcmp(r->shape, out->shape, sizeof(r->shape)) ||
		    memcmp(r->strides, out->strides, sizeof(r->strides)))
			return accel_seterr(dev, -EINVAL, "conv2d: the residual needs the output's layout, shape and strides");
	}
	return 0;
}

int conv2d_validate(struct accel_dev *dev, const struct accel_conv2d_desc *d)
{
	struct conv_geom cg;
	struct mm_problem p;

	return conv_validate(dev, d, &cg, &p);
}

/* Validate convolution d and set up its matmul problem p (epilogue, IM2COL template, buffers used). */
static int conv_setup(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d, struct conv_geom *cgp,
		      struct mm_problem *pp)
{
	const struct accel_tensor *in = d->input, *wt = d->weights, *out = d->output;
	struct conv_geom cg;
	struct mm_problem p;
	int ret;

	ret = conv_validate(dev, d, &cg, &p);
	if (ret)
		return ret;
	p.f32 = cg.f32;
	p.N = cg.kg;
	p.K = cg.r * cg.s * cg.cg;
	p.a.kind = MM_IM2COL;
	p.a.buf = in->buf;
	p.a.ic.stride_n = (uint64_t)in->strides[0];
	p.a.ic.stride_c = (uint64_t)in->strides[1];
	p.a.ic.stride_h = (uint64_t)in->strides[2];
	p.a.ic.stride_w = (uint64_t)in->strides[3];
	p.a.ic.n = (uint16_t)cg.n;
	p.a.ic.h = (uint16_t)cg.h;
	p.a.ic.w = (uint16_t)cg.w;
	p.a.ic.c = (uint16_t)cg.cg;
	p.a.ic.r = (uint16_t)cg.r;
	p.a.ic.s = (uint16_t)cg.s;
	p.a.ic.oh = (uint16_t)cg.oh;
	p.a.ic.ow = (uint16_t)cg.ow;
	p.a.ic.stride_y = (uint8_t)d->stride_h;
	p.a.ic.stride_x = (uint8_t)d->stride_w;
	p.a.ic.dil_y = (uint8_t)d->dil_h;
	p.a.ic.dil_x = (uint8_t)d->dil_w;
	p.a.ic.pad_top = (uint8_t)d->pad_top;
	p.a.ic.pad_left = (uint8_t)d->pad_left;
	p.a.ic.layout = cg.nchw ? TNPU_LAYOUT_NCHW : TNPU_LAYOUT_NHWC;
	p.a.ic.dtype = cg.f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	p.a.ic.pad_value = cg.f32 ? 0 : (uint32_t)(uint8_t)(int8_t)d->input_zero_point;
	p.b.kind = MM_MAT_T;
	p.b.buf = wt->buf;
	p.b.pitch = (uint64_t)wt->strides[0];
	p.c_buf = out->buf;
	/* sparse (#8): packed weights / activation bitmask / LB (sparse_dispatch.c sets these). */
	if (x->conv_sp) {
		p.b.kind = MM_SPARSE;
		p.b.sp = x->conv_sp;
	}
	p.zskip_a = x->conv_zskip_lb & ACCEL_SPARSE_ZSKIP_A;
	p.mac_lb = x->conv_zskip_lb & ACCEL_SPARSE_LB;
	cs_use(x->cs, in->buf);
	cs_use(x->cs, wt->buf);
	cs_use(x->cs, out->buf);
	cs_use(x->cs, p.bias_buf);
	if (p.res_tensor)
		cs_use(x->cs, p.res_tensor->buf);
	*cgp = cg;
	*pp = p;
	return 0;
}

int conv_prepare(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d, struct mm_problem *p)
{
	struct conv_geom cg;

	return conv_setup(dev, x, d, &cg, p);
}

/* Build the problems of a convolution into x (shared with pooling). */
int conv_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *d)
{
	const struct accel_tensor *in = d->input, *wt = d->weights, *out = d->output;
	struct conv_geom cg;
	struct mm_problem p;
	uint32_t oe;
	int ret;

	ret = conv_setup(dev, x, d, &cg, &p);
	if (ret)
		return ret;
	oe = p.out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	if (cg.g > 1 && cg.cg == 1 && cg.kg == 1 && !x->conv_sp && !x->conv_zskip_lb && x->pin_row == 0xFF &&
	    !p.res_tensor) {
		struct mm_problem q = p;

		ret = conv_dw_lower(dev, x, d, &q);
		if (ret <= 0)
			return ret;
	}
	if ((cg.g == 1 || (cg.cg == 1 && cg.kg == 1)) && !x->no_direct && !x->conv_sp && !x->conv_zskip_lb &&
	    x->pin_row == 0xFF) {
		struct mm_problem q = p;

		q.M = cg.n * cg.oh * cg.ow;
		q.a.ic.src_va = in->buf->va + in->offset;
		if (cg.g == 1 && !x->force_direct) {
			ret = conv_pw_lower(dev, x, d, &q);
			if (ret <= 0)
				return ret;
		}
		if (!p.res_tensor) {
			ret = conv_direct_lower(dev, x, d, &q);
			if (ret <= 0)
				return ret;
		}
	}
	{
		uint64_t bias0 = p.bias_va;
		bool per_batch = out->layout == ACCEL_LAYOUT_NCHW;
		uint32_t nb = per_batch ? cg.n : 1;

		for (uint32_t g = 0; g < cg.g; g++) {
			p.a.ic.src_va = in->buf->va + in->offset + (uint64_t)g * cg.cg * (uint64_t)in->strides[1];
			p.b.va = wt->buf->va + wt->offset + (uint64_t)g * cg.kg * (uint64_t)wt->strides[0];
			p.bias_va = bias0 + (uint64_t)g * cg.kg * mm_col_bytes(&p);
			for (uint32_t b = 0; b < nb; b++) {
				if (per_batch) {
					p.M = cg.oh * cg.ow;
					p.a.m_base = b * p.M;
					p.c_trans = true;
					p.c_va = out->buf->va + out->offset + (uint64_t)b * (uint64_t)out->strides[0] +
						 (uint64_t)g * cg.kg * (uint64_t)out->strides[1];
					p.c_pitch = (uint64_t)out->strides[1];
					if (p.res_tensor) {	/* staged by a transposing load (matmul.c) */
						p.res_va = p.res_tensor->buf->va + p.res_tensor->offset +
							   (uint64_t)b * (uint64_t)out->strides[0] +
							   (uint64_t)g * cg.kg * (uint64_t)out->strides[1];
						p.res_pitch = p.c_pitch;
					}
				} else {
					p.M = cg.n * cg.oh * cg.ow;
					p.a.m_base = 0;
					p.c_va = out->buf->va + out->offset + (uint64_t)g * cg.kg * oe;
					p.c_pitch = (uint64_t)out->strides[3];
					if (p.res_tensor) {
						p.res_va = p.res_tensor->buf->va + p.res_tensor->offset + (uint64_t)g * cg.kg * 4;
						p.res_pitch = p.c_pitch;
					}
				}
				ret = mm_emit(x, &p);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

int accel_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *d, const struct accel_submit *sub,
		 struct accel_job **job)
{
	struct accel_cmdstream cs;
	struct mm_ctx x;
	int ret;

	ret = accel_op_begin(dev, d, "accel_conv2d", job);
	if (ret)
		return ret;
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	ret = conv_lower(dev, &x, d);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
