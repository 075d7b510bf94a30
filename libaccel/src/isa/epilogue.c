/* SPDX-License-Identifier: MIT */
/* epilogue.c - SFU epilogue (bias, activation, requantisation) shared by gemm and conv. */
#include <math.h>
#include <string.h>

#include "lower.h"
#include "epilogue.h"

int accel_quant_from_scale(double scale, int32_t *multiplier, uint8_t *shift)
{
	int exp;
	double m;
	int64_t q;
	int s;

	if (!multiplier || !shift || !(scale > 0) || scale >= 2147483648.0)
		return -EINVAL;
	/* scale = m * 2^exp with m in [0.5, 1): multiplier = round(m * 2^31), shift = 31 - exp. */
	m = frexp(scale, &exp);
	q = llround(m * 2147483648.0);
	if (q == 2147483648ll) {
		q /= 2;
		exp++;
	}
	s = 31 - exp;
	while (s > 62) {
		q >>= 1;
		s--;
	}
	while (s < 0) {
		return -ERANGE;
	}
	if (q == 0)
		return -ERANGE;
	*multiplier = (int32_t)q;
	*shift = (uint8_t)s;
	return 0;
}

/* The bias is per-column requantisation records (N x 3 INT32 {bias, multiplier, shift}, ISA 2 QCOL):
 * an int8 -> INT8 op whose multiplier is 0 (a 1 x 3 bias of a 3-column op is a plain one). */
static bool epi_is_qcol(const struct accel_epilogue *ep, bool f32, enum accel_dtype out_dt, uint32_t N)
{
	const struct accel_tensor *b = ep->bias;

	return b && !f32 && out_dt == ACCEL_INT8 && !ep->multiplier && b->ndim == 2 && b->shape[0] == N &&
	       b->shape[1] == 3;
}

/* Validate the epilogue for an op with N output columns and fill the problem's SFU fields. */
int epi_setup(struct accel_dev *dev, const struct accel_epilogue *ep, bool f32, enum accel_dtype out_dt, uint32_t N,
	      struct mm_problem *p)
{
	struct tnpu_sfu_param *s = &p->sfu;

	memset(s, 0, sizeof(*s));
	p->use_sfu = false;
	if (f32) {
		if (out_dt != ACCEL_FP32)
			return accel_seterr(dev, -EINVAL, "fp32 operands need an FP32 output");
		p->out_dtype = TNPU_DTYPE_FP32;
		s->out_dtype = TNPU_DTYPE_FP32;
	} else if (out_dt == ACCEL_INT32) {
		p->out_dtype = TNPU_DTYPE_INT32;
		s->out_dtype = TNPU_DTYPE_INT32;
	} else if (out_dt == ACCEL_INT8) {
		p->out_dtype = TNPU_DTYPE_INT8;
		s->out_dtype = TNPU_DTYPE_INT8;
	} else {
		return accel_seterr(dev, -EINVAL, "int8 operands need an INT32 or INT8 output");
	}
	if (ep->bias) {
		const struct accel_tensor *b = ep->bias;
		int ret = tensor_usable(dev, b);
		bool qcol = epi_is_qcol(ep, f32, out_dt, N);

		if (ret)
			return accel_seterr(dev, ret, "bias tensor is malformed or outside its buffer");
		if (b->buf && b->buf->dev != dev)
			return accel_seterr(dev, -EINVAL, "bias buffer belongs to another device");
		if (qcol) {
			if (!(dev->caps.features & TNPU_FEAT_SFU_QCOL))
				return accel_seterr(dev, -EOPNOTSUPP, "per-column requantisation records: the device has "
						    "no SFU_QCOL (CAP_FEATURES bit 19)");
			if (b->strides[0] != 12 || b->strides[1] != 4 || tensor_addr(b) % 4)
				return accel_seterr(dev, -EINVAL, "column records must be a contiguous, 4-byte aligned "
						    "%u x 3 INT32 tensor", N);
			if (ep->multiplier || ep->shift)
				return accel_seterr(dev, -EINVAL, "column records carry the multipliers and shifts: "
						    "multiplier and shift must be 0");
		} else if (b->ndim != 2 || b->shape[0] != 1 || b->shape[1] != N || b->strides[1] != 4) {
			return accel_seterr(dev, -EINVAL, "bias must be a contiguous 1 x %u tensor%s", N,
					    !f32 && out_dt == ACCEL_INT8 ? " (or, with multiplier 0, N x 3 INT32 column records)"
									 : "");
		}
		if (b->dtype != (f32 ? ACCEL_FP32 : ACCEL_INT32))
			return accel_seterr(dev, -EINVAL, "bias dtype must be %s", f32 ? "FP32" : "INT32");
		s->ops |= qcol ? TNPU_SFU_OP_BIAS | TNPU_SFU_OP_QCOL : TNPU_SFU_OP_BIAS;
		p->bias_buf = b->buf;
		p->bias_va = tensor_addr(b);
	}
	switch (ep->act) {
	case ACCEL_ACT_NONE:
		break;
	case ACCEL_ACT_RELU:
		s->ops |= TNPU_SFU_OP_RELU;
		break;
	case ACCEL_ACT_CLAMP:
		s->ops |= TNPU_SFU_OP_CLAMP;
		if (f32) {
			if (!(ep->clamp_lo_f <= ep->clamp_hi_f))
				return accel_seterr(dev, -EINVAL, "clamp_lo_f must be <= clamp_hi_f");
			memcpy(&s->lo, &ep->clamp_lo_f, 4);
			memcpy(&s->hi, &ep->clamp_hi_f, 4);
		} else {
			if (ep->clamp_lo_i > ep->clamp_hi_i)
				return accel_seterr(dev, -EINVAL, "clamp_lo_i must be <= clamp_hi_i");
			s->lo = (uint32_t)ep->clamp_lo_i;
			s->hi = (uint32_t)ep->clamp_hi_i;
		}
		break;
	default:
		return accel_seterr(dev, -EINVAL, "unknown activation %d", (int)ep->act);
	}
	if (!f32 && out_dt == ACCEL_INT8) {
		if (ep->shift > 62)
			return accel_seterr(dev, -EINVAL, "requantisation shift %u > 62", ep->shift);
		if (ep->zero_point < -128 || ep->zero_point > 127)
			return accel_seterr(dev, -EINVAL, "zero_point %d outside -128..127", ep->zero_point);
		if (!ep->multiplier && !(s->ops & TNPU_SFU_OP_QCOL))
			return accel_seterr(dev, -EINVAL, "INT8 output needs a requantisation multiplier "
					    "(or N x 3 column records as the bias)");
		s->ops |= TNPU_SFU_OP_REQUANT;
		s->scale = (uint32_t)ep->multiplier;
		s->shift = ep->shift;
		s->zero_point = ep->zero_point;
	} else if (!f32) {
		if (ep->multiplier || ep->shift || ep->zero_point)
			return accel_seterr(dev, -EINVAL, "requantisation needs an INT8 output");
	}
	if (f32 && ep->scale_f != 0.0f && ep->scale_f != 1.0f) {
		if (!isfinite(ep->scale_f))
			return accel_seterr(dev, -EINVAL, "scale_f must be finite");
		s->ops |= TNPU_SFU_OP_REQUANT;
		memcpy(&s->scale, &ep->scale_f, 4);
	}
	if (!f32 && ep->scale_f != 0.0f)
		return accel_seterr(dev, -EINVAL, "scale_f applies to fp32 operations only");
	if (ep->residual) {
		const struct accel_tensor *r = ep->residual;
		int ret = tensor_usable(dev, r);

		if (ret)
			return accel_seterr(dev, ret, "residual tensor is malformed or outside its buffer");
		if (r->buf && r->buf->dev != dev)
			return accel_seterr(dev, -EINVAL, "residual buffer belongs to another device");
		if (!(dev->caps.features & TNPU_FEAT_SFU_RESIDUAL))
			return accel_seterr(dev, -EOPNOTSUPP, "residual: the device has no SFU residual operand (ISA 2)");
		if (r->dtype != (f32 ? ACCEL_FP32 : ACCEL_INT32) || (s->ops & TNPU_SFU_OP_REQUANT))
			return accel_seterr(dev, -EINVAL, "residual must be %s and the output 32-bit without requantisation",
					    f32 ? "FP32" : "INT32");
		if (tensor_addr(r) % 4)
			return accel_seterr(dev, -EINVAL, "residual must be 4-byte aligned");
		s->ops |= TNPU_SFU_OP_RESIDUAL;
		p->res_tensor = r;
		p->res_buf = r->buf;
	}
	p->use_sfu = s->ops != 0;
	return 0;
}
