/* SPDX-License-Identifier: MIT */
/*
 * vec_ops.c - the public operations on the ISA 2 vector units: accel_eltwise, the vector-unit
 * functions of accel_activation, max pooling, accel_softmax, accel_layernorm, accel_transpose,
 * accel_requant and accel_qadd.  Validation here, lowering in vec_lower.c (Documentation/libaccel.md "Vector-unit
 * operations").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue.h"
#include "vec_lower.h"
#include "vec_ops.h"

static uint8_t hw_dt(enum accel_dtype d)
{
	return d == ACCEL_INT8 ? TNPU_DTYPE_INT8 : (d == ACCEL_INT32 ? TNPU_DTYPE_INT32 : TNPU_DTYPE_FP32);
}

static int run(struct accel_dev *dev, struct vx_job *j, const struct accel_tensor *const *ts, unsigned n_ts,
	       struct accel_buffer **owned, unsigned n_owned, const struct accel_submit *sub, struct accel_job **job)
{
	struct accel_cmdstream cs;
	int ret;

	cs_init(&cs, dev);
	for (unsigned i = 0; i < n_ts; i++)
		if (ts[i])
			cs_use(&cs, ts[i]->buf);
	for (unsigned i = 0; i < n_owned; i++)
		cs_use(&cs, owned[i]);
	ret = vx_lower(dev, &cs, j);
	return accel_op_submit(dev, &cs, ret, sub, owned, n_owned, job);
}

static void job_init(struct vx_job *j, const struct accel_tensor *out)
{
	memset(j, 0, sizeof(*j));
	j->chan_in = -1;
	for (unsigned d = 0; d < 4; d++)
		j->n[d] = d < 4 - out->ndim ? 1 : out->shape[d - (4 - out->ndim)];
	vx_opnd_of(out, &j->out);
}

static bool int8_q_ok(int32_t m, uint8_t shift, int16_t zp)
{
	(void)m;
	return shift <= 62 && zp >= -128 && zp <= 127;
}

int vm_need(struct accel_dev *dev, const char *what)
{
	if (!(dev->caps.features & TNPU_FEAT_VEC_MATH))
		return accel_seterr(dev, -EOPNOTSUPP, "%s: the device has no VEC math (CAP_FEATURES bit 25)", what);
	return 0;
}

/* ---- accel_eltwise ------------------------------------------------------------------------- */

/* numpy broadcasting of a and b to out: one ndim, each dim equal to out's or 1. */
static int bcast_check(struct accel_dev *dev, const struct accel_tensor *a, const struct accel_tensor *b,
		       const struct accel_tensor *out, const char *what)
{
	if (a->ndim != out->ndim || b->ndim != out->ndim)
		return accel_seterr(dev, -EINVAL, "%s: a, b and out need the same ndim", what);
	for (unsigned i = 0; i < out->ndim; i++)
		if ((a->shape[i] != out->shape[i] && a->shape[i] != 1) || (b->shape[i] != out->shape[i] && b->shape[i] != 1))
			return accel_seterr(dev, -EINVAL, "%s: dim %u of a (%u) / b (%u) neither equals out's (%u) nor 1", what,
					    i, a->shape[i], b->shape[i], out->shape[i]);
	return 0;
}

/* Everything accel_eltwise checks before it lowers (accel_op_supported asks the same). */
int eltwise_validate(struct accel_dev *dev, const struct accel_eltwise_desc *d)
{
	enum accel_dtype dt;
	bool cmp;
	int ret;

	if ((ret = arg_tensor(dev, d->a, "a")) || (ret = arg_tensor(dev, d->b, "b")) ||
	    (ret = arg_tensor(dev, d->out, "out")))
		return ret;
	if ((ret = vx_need(dev, "accel_eltwise")))
		return ret;
	dt = d->a->dtype;
	if ((unsigned)d->op > ACCEL_ELT_GE)
		return accel_seterr(dev, -EINVAL, "eltwise: op: unknown op %d", (int)d->op);
	cmp = d->op >= ACCEL_ELT_EQ;
	if (d->b->dtype != dt)
		return accel_seterr(dev, -EINVAL, "eltwise: a and b need the same dtype");
	if (cmp ? (dt != ACCEL_FP32 || d->out->dtype != ACCEL_INT8)
		: dt == ACCEL_FP32 ? d->out->dtype != ACCEL_FP32
				   : (dt == ACCEL_INT32 ? d->out->dtype != ACCEL_INT32 : d->out->dtype == ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "eltwise: output dtype must be FP32 (FP32), INT32 (INT32) or INT8/INT32 (INT8); "
				    "a comparison: FP32 in, INT8 out");
	if ((ret = bcast_check(dev, d->a, d->b, d->out, "eltwise")))
		return ret;
	if (d->op > ACCEL_ELT_MIN) {	/* DIV, PRELU, POW, the comparisons */
		if ((ret = vm_need(dev, "eltwise DIV/PRELU/POW/comparison")))
			return ret;
		if (dt != ACCEL_FP32)
			return accel_seterr(dev, -EINVAL, "eltwise: DIV, PRELU, POW and the comparisons are FP32 only");
	}
	if (d->act != ACCEL_ACT_NONE && (d->act != ACCEL_ACT_RELU || cmp))
		return accel_seterr(dev, -EINVAL, "eltwise: act must be NONE or RELU (a comparison: NONE)");
	if (d->out->dtype == ACCEL_INT8 && !cmp && !int8_q_ok(d->multiplier, d->shift, d->zero_point))
		return accel_seterr(dev, -EINVAL, "eltwise: shift must be 0..62 and zero_point -128..127");
	return 0;
}

int accel_eltwise(struct accel_dev *dev, const struct accel_eltwise_desc *d, const struct accel_submit *sub,
		  struct accel_job **job)
{
	const struct accel_tensor *ts[3];
	enum accel_dtype dt;
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_eltwise", job);
	if (ret)
		return ret;
	if ((ret = eltwise_validate(dev, d)))
		return ret;
	dt = d->a->dtype;
	job_init(&j, d->out);
	j.n_in = 2;
	vx_opnd_of(d->a, &j.in[0]);
	vx_opnd_of(d->b, &j.in[1]);
	j.tmpl = vx_cmd(TNPU_VEC_BINARY, (uint8_t)d->op, hw_dt(dt), hw_dt(d->out->dtype));
	j.tmpl.vflags = d->act == ACCEL_ACT_RELU ? TNPU_VEC_F_RELU : 0;
	if (d->out->dtype == ACCEL_INT8 && dt == ACCEL_INT8) {	/* not a comparison: its input is FP32 */
		j.tmpl.scale = d->multiplier ? (uint32_t)d->multiplier : 1u << 30;
		j.tmpl.shift = d->multiplier ? d->shift : 30;
		j.tmpl.zero_point = d->zero_point;
	}
	ts[0] = d->a;
	ts[1] = d->b;
	ts[2] = d->out;
	return run(dev, &j, ts, 3, NULL, 0, sub, job);
}

/* ---- accel_qadd ---------------------------------------------------------------------------- */

int accel_qadd(struct accel_dev *dev, const struct accel_qadd_desc *d, const struct accel_submit *sub,
	       struct accel_job **job)
{
	const struct accel_tensor *ts[3];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_qadd", job);
	if (ret)
		return ret;
	if ((ret = arg_tensor(dev, d->a, "a")) || (ret = arg_tensor(dev, d->b, "b")) ||
	    (ret = arg_tensor(dev, d->out, "out")))
		return ret;
	if ((ret = vx_need(dev, "accel_qadd")))
		return ret;
	if (!(dev->caps.features & TNPU_FEAT_VEC_QADD))
		return accel_seterr(dev, -EOPNOTSUPP, "accel_qadd: the device's vector units have no quantised add "
				    "(CAP_FEATURES bit 20); rescale each input with accel_eltwise and requantise the sum");
	if (d->a->dtype != ACCEL_INT8 || d->b->dtype != ACCEL_INT8 || d->out->dtype != ACCEL_INT8)
		return accel_seterr(dev, -EINVAL, "qadd: a, b and out must be INT8");
	if ((ret = bcast_check(dev, d->a, d->b, d->out, "qadd")))
		return ret;
	if (d->op != ACCEL_ELT_ADD && d->op != ACCEL_ELT_SUB)
		return accel_seterr(dev, -EINVAL, "qadd: op must be ADD or SUB (%d)", (int)d->op);
	if (d->act != ACCEL_ACT_NONE && d->act != ACCEL_ACT_RELU)
		return accel_seterr(dev, -EINVAL, "qadd: act must be NONE or RELU");
	if (d->a_zero_point < -128 || d->a_zero_point > 127 || d->b_zero_point < -128 || d->b_zero_point > 127 ||
	    d->zero_point < -128 || d->zero_point > 127)
		return accel_seterr(dev, -EINVAL, "qadd: zero points must be -128..127 (a %d, b %d, out %d)",
				    d->a_zero_point, d->b_zero_point, d->zero_point);
	if (d->shift > 62)
		return accel_seterr(dev, -EINVAL, "qadd: shift must be 0..62 (%u)", d->shift);
	job_init(&j, d->out);
	j.n_in = 2;
	vx_opnd_of(d->a, &j.in[0]);
	vx_opnd_of(d->b, &j.in[1]);
	/* vector-units.md "Quantised add": lo/hi the zero points, scale/bias the multipliers */
	j.tmpl = vx_cmd(TNPU_VEC_BINARY, (uint8_t)d->op, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);
	j.tmpl.vflags = (uint8_t)(TNPU_VEC_F_QADD | (d->act == ACCEL_ACT_RELU ? TNPU_VEC_F_RELU : 0));
	j.tmpl.scale = (uint32_t)d->a_multiplier;
	j.tmpl.bias = (uint32_t)d->b_multiplier;
	j.tmpl.lo = (uint32_t)(int32_t)d->a_zero_point;
	j.tmpl.hi = (uint32_t)(int32_t)d->b_zero_point;
	j.tmpl.shift = d->shift;
	j.tmpl.zero_point = d->zero_point;
	ts[0] = d->a;
	ts[1] = d->b;
	ts[2] = d->out;
	return run(dev, &j, ts, 3, NULL, 0, sub, job);
}

/* ---- accel_activation: vector-unit functions ----------------------------------------------- */

static const uint8_t act_fn[] = {
	[ACCEL_ACT_SIGMOID] = TNPU_VEC_SIGMOID, [ACCEL_ACT_TANH] = TNPU_VEC_TANH, [ACCEL_ACT_EXP] = TNPU_VEC_EXP,
	[ACCEL_ACT_GELU] = TNPU_VEC_GELU, [ACCEL_ACT_ERF] = TNPU_VEC_ERF,
	[ACCEL_ACT_HARDSIGMOID] = TNPU_VEC_HARDSIGMOID, [ACCEL_ACT_HARDSWISH] = TNPU_VEC_HARDSWISH,
	[ACCEL_ACT_SILU] = TNPU_VEC_SILU, [ACCEL_ACT_RECIP] = TNPU_VEC_RECIP, [ACCEL_ACT_RSQRT] = TNPU_VEC_RSQRT,
	[ACCEL_ACT_LOG] = TNPU_VEC_LOG, [ACCEL_ACT_SQRT] = TNPU_VEC_SQRT, [ACCEL_ACT_ABS] = TNPU_VEC_ABS,
	[ACCEL_ACT_NEG] = TNPU_VEC_NEG, [ACCEL_ACT_FLOOR] = TNPU_VEC_FLOOR, [ACCEL_ACT_CEIL] = TNPU_VEC_CEIL,
	[ACCEL_ACT_ROUND] = TNPU_VEC_ROUND, [ACCEL_ACT_SIGN] = TNPU_VEC_SIGN, [ACCEL_ACT_LEAKYRELU] = TNPU_VEC_LEAKY,
	[ACCEL_ACT_ELU] = TNPU_VEC_ELU, [ACCEL_ACT_THRESHOLDEDRELU] = TNPU_VEC_THRESH,
	[ACCEL_ACT_SOFTPLUS] = TNPU_VEC_SOFTPLUS, [ACCEL_ACT_SOFTSIGN] = TNPU_VEC_SOFTSIGN,
};

/* The exact function in double precision (the INT8 tables). */
static double act_ref(enum accel_act a, double x, double alpha, double beta)
{
	switch (a) {
	case ACCEL_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case ACCEL_ACT_TANH: return tanh(x);
	case ACCEL_ACT_EXP: return exp(x);
	case ACCEL_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case ACCEL_ACT_ERF: return erf(x);
	case ACCEL_ACT_HARDSIGMOID: return fmin(fmax(alpha * x + beta, 0.0), 1.0);
	case ACCEL_ACT_HARDSWISH: return x * fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
	case ACCEL_ACT_SILU: return x / (1.0 + exp(-x));
	case ACCEL_ACT_RECIP: return 1.0 / x;
	case ACCEL_ACT_RSQRT: return 1.0 / sqrt(x);
	case ACCEL_ACT_LOG: return log(x);
	case ACCEL_ACT_SQRT: return sqrt(x);
	case ACCEL_ACT_ABS: return fabs(x);
	case ACCEL_ACT_NEG: return -x;
	case ACCEL_ACT_FLOOR: return floor(x);
	case ACCEL_ACT_CEIL: return ceil(x);
	case ACCEL_ACT_ROUND: return nearbyint(x);
	case ACCEL_ACT_SIGN: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
	case ACCEL_ACT_LEAKYRELU: return x < 0 ? alpha * x : x;
	case ACCEL_ACT_ELU: return (beta == 0 ? 1.0 : beta) * (x > 0 ? x : alpha * expm1(x));
	case ACCEL_ACT_THRESHOLDEDRELU: return x > alpha ? x : 0.0;
	case ACCEL_ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
	default: return x / (1.0 + fabs(x));	/* SOFTSIGN */
	}
}

void accel_act_lut(enum accel_act a, float alpha, float beta, float in_scale, int32_t in_zp, float out_scale,
		   int32_t out_zp, int8_t lut[256])
{
	for (int i = 0; i < 256; i++) {
		double x = (double)in_scale * (i - 128 - in_zp), y = act_ref(a, x, alpha, beta) / out_scale + out_zp;

		if (y != y)
			y = out_zp;
		y = nearbyint(fmin(fmax(y, -128.0), 127.0));
		lut[i] = (int8_t)y;
	}
}

/* The vector-unit functions' checks (the tensors passed arg_tensor). */
int activation_vec_validate(struct accel_dev *dev, const struct accel_activation_desc *d)
{
	int ret;

	if ((ret = vx_need(dev, "accel_activation")))
		return ret;
	if (d->input->ndim != d->output->ndim || d->input->dtype != d->output->dtype)
		return accel_seterr(dev, -EINVAL, "activation: input and output need the same shape and dtype");
	for (unsigned i = 0; i < d->input->ndim; i++)
		if (d->input->shape[i] != d->output->shape[i])
			return accel_seterr(dev, -EINVAL, "activation: input and output need the same shape and dtype");
	if (d->input->dtype != ACCEL_INT8 && d->input->dtype != ACCEL_FP32)
		return accel_seterr(dev, -EINVAL, "activation: dtype must be INT8 or FP32");
	/* INT8 functions are tables: any device with vector units; FP32 ones past RSQRT need VEC math */
	if (d->input->dtype == ACCEL_FP32 && d->act > ACCEL_ACT_RSQRT && (ret = vm_need(dev, "accel_activation")))
		return ret;
	if (d->input->dtype != ACCEL_FP32 &&
	    (!(d->in_scale > 0) || !(d->out_scale > 0) || d->in_zero_point < -128 || d->in_zero_point > 127 ||
	     d->out_zero_point < -128 || d->out_zero_point > 127))
		return accel_seterr(dev, -EINVAL, "activation: INT8 functions need in_scale, out_scale > 0 and zero points -128..127");
	return 0;
}

int accel_activation_vec(struct accel_dev *dev, const struct accel_activation_desc *d, const struct accel_submit *sub,
			 struct accel_job **job)
{
	const struct accel_tensor *ts[2] = { d->input, d->output };
	float alpha = d->alpha, beta = d->beta;
	struct tnpu_cmd_vec_lut lut;
	struct vx_job j;
	bool f32;
	int ret;

	if ((ret = activation_vec_validate(dev, d)))
		return ret;
	f32 = d->input->dtype == ACCEL_FP32;
	if (d->act == ACCEL_ACT_HARDSIGMOID && alpha == 0.0f && beta == 0.0f) {
		alpha = 0.2f;
		beta = 0.5f;
	}
	job_init(&j, d->output);
	j.n_in = 1;
	vx_opnd_of(d->input, &j.in[0]);
	if (f32) {
		j.tmpl = vx_cmd(TNPU_VEC_MAP, act_fn[d->act], TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
		j.tmpl.scale = vx_f32(d->act == ACCEL_ACT_HARDSIGMOID ? alpha : 1.0f);
		j.tmpl.bias = vx_f32(d->act == ACCEL_ACT_HARDSIGMOID ? beta : 0.0f);
		/* the parametric functions' alpha (and ELU's scale) as fp32 bits in lo, hi */
		if (d->act == ACCEL_ACT_LEAKYRELU || d->act == ACCEL_ACT_ELU || d->act == ACCEL_ACT_THRESHOLDEDRELU)
			j.tmpl.lo = vx_f32(alpha);
		if (d->act == ACCEL_ACT_ELU)
			j.tmpl.hi = vx_f32(beta == 0.0f ? 1.0f : beta);
	} else {
		memset(&lut, 0, sizeof(lut));
		lut.hdr.opcode = TNPU_CMD_VEC_LUT;
		lut.hdr.size = sizeof(lut);
		accel_act_lut(d->act, alpha, beta, d->in_scale, d->in_zero_point, d->out_scale, d->out_zero_point,
			      lut.entry);
		j.prologue = &lut;
		j.prologue_len = sizeof(lut);
		j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_LUT, TNPU_DTYPE_INT8, TNPU_DTYPE_INT8);
	}
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

/* ---- accel_quant --------------------------------------------------------------------------- */

int accel_quant(struct accel_dev *dev, const struct accel_quant_desc *d, const struct accel_submit *sub,
		struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	bool q;
	int ret;

	ret = accel_op_begin(dev, d, "accel_quant", job);
	if (ret)
		return ret;
	if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")) ||
	    (ret = vx_need(dev, "accel_quant")))
		return ret;
	q = d->input->dtype == ACCEL_FP32;
	if (!(q ? d->output->dtype == ACCEL_INT8 : d->input->dtype == ACCEL_INT8 && d->output->dtype == ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "quant: FP32 -> INT8 or INT8 -> FP32");
	if (d->input->ndim != d->output->ndim)
		return accel_seterr(dev, -EINVAL, "quant: input and output need the same shape");
	for (unsigned i = 0; i < d->input->ndim; i++)
		if (d->input->shape[i] != d->output->shape[i])
			return accel_seterr(dev, -EINVAL, "quant: input and output need the same shape");
	if (!isfinite(d->scale) || d->zero_point < -128 || d->zero_point > 127)
		return accel_seterr(dev, -EINVAL, "quant: scale %g must be finite and zero_point %d in -128..127",
				    (double)d->scale, d->zero_point);
	job_init(&j, d->output);
	j.n_in = 1;
	vx_opnd_of(d->input, &j.in[0]);
	j.tmpl = vx_cmd(TNPU_VEC_MAP, q ? TNPU_VEC_QUANT : TNPU_VEC_DEQUANT, q ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8,
			q ? TNPU_DTYPE_INT8 : TNPU_DTYPE_FP32);
	j.tmpl.scale = vx_f32(d->scale);
	j.tmpl.zero_point = d->zero_point;
	ts[0] = d->input;
	ts[1] = d->output;
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

/* ---- accel_transpose ----------------------------------------------------------------------- */

/* Everything accel_transpose checks before it lowers (accel_op_supported asks the same). */
int transpose_validate(struct accel_dev *dev, const struct accel_transpose_desc *d)
{
	unsigned nd, seen = 0;
	int ret;

	if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")))
		return ret;
	if ((ret = vx_need(dev, "accel_transpose")))
		return ret;
	nd = d->input->ndim;
	if (d->output->ndim != nd || d->output->dtype != d->input->dtype)
		return accel_seterr(dev, -EINVAL, "transpose: input and output need the same ndim and dtype");
	for (unsigned i = 0; i < nd; i++) {
		if (d->perm[i] >= nd || (seen & (1u << d->perm[i])))
			return accel_seterr(dev, -EINVAL, "transpose: perm[%u] %u: perm is not a permutation of 0..%u", i,
					    d->perm[i], nd - 1);
		seen |= 1u << d->perm[i];
		if (d->output->shape[i] != d->input->shape[d->perm[i]])
			return accel_seterr(dev, -EINVAL, "transpose: output dim %u must be input dim %u (%u)", i, d->perm[i],
					    d->input->shape[d->perm[i]]);
	}
	return 0;
}

int accel_transpose(struct accel_dev *dev, const struct accel_transpose_desc *d, const struct accel_submit *sub,
		    struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	unsigned nd;
	int ret;

	ret = accel_op_begin(dev, d, "accel_transpose", job);
	if (ret)
		return ret;
	if ((ret = transpose_validate(dev, d)))
		return ret;
	nd = d->input->ndim;
	job_init(&j, d->output);
	j.n_in = 1;
	j.in[0].va = tensor_addr(d->input);
	j.in[0].e = (unsigned)accel_dtype_size(d->input->dtype);
	for (unsigned i = 0; i < nd; i++)
		j.in[0].st[4 - nd + i] = d->output->shape[i] > 1 ? (uint64_t)d->input->strides[d->perm[i]] : 0;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, hw_dt(d->input->dtype), hw_dt(d->input->dtype));
	ts[0] = d->input;
	ts[1] = d->output;
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

/* ---- accel_requant ------------------------------------------------------------------------- */

int accel_requant(struct accel_dev *dev, const struct accel_requant_desc *d, const struct accel_submit *sub,
		  struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct accel_buffer *tab = NULL;
	struct vx_job j;
	uint32_t C;
	int ret;

	ret = accel_op_begin(dev, d, "accel_requant", job);
	if (ret)
		return ret;
	if ((ret = arg_tensor(dev, d->input, "input")) || (ret = arg_tensor(dev, d->output, "output")))
		return ret;
	if ((ret = vx_need(dev, "accel_requant")))
		return ret;
	if ((d->input->dtype != ACCEL_INT32 && d->input->dtype != ACCEL_INT8) || d->output->dtype != ACCEL_INT8)
		return accel_seterr(dev, -EINVAL, "requant: INT32 or INT8 input, INT8 output");
	if (d->input->ndim != d->output->ndim)
		return accel_seterr(dev, -EINVAL, "requant: input and output need the same shape");
	for (unsigned i = 0; i < d->input->ndim; i++)
		if (d->input->shape[i] != d->output->shape[i])
			return accel_seterr(dev, -EINVAL, "requant: input and output need the same shape");
	if (d->axis >= d->input->ndim || !d->multiplier || !d->shift)
		return accel_seterr(dev, -EINVAL, "requant: axis must be < ndim, multiplier and shift non-NULL");
	if (d->zero_point < -128 || d->zero_point > 127)
		return accel_seterr(dev, -EINVAL, "requant: zero_point must be -128..127");
	C = d->input->shape[d->axis];
	for (uint32_t c = 0; c < C; c++)
		if (d->shift[c] > 62)
			return accel_seterr(dev, -EINVAL, "requant: shift[%u] = %u > 62", c, d->shift[c]);
	ret = accel_buffer_alloc(dev, (uint64_t)C * 8, &tab);
	if (ret)
		return ret;
	for (uint32_t c = 0; c < C; c++) {
		uint32_t rec[2] = { (uint32_t)d->multiplier[c], d->shift[c] };

		memcpy((uint8_t *)tab->ptr + 8ull * c, rec, 8);
	}
	job_init(&j, d->output);
	j.n_in = 2;
	vx_opnd_of(d->input, &j.in[0]);
	j.in[1].va = tab->va;
	j.in[1].e = 8;
	j.chan_in = 1;
	if (C > 1)
		j.in[1].st[4 - d->input->ndim + d->axis] = 8;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_REQUANT, hw_dt(d->input->dtype), TNPU_DTYPE_INT8);
	j.tmpl.vflags = TNPU_VEC_F_PER_CHANNEL;
	j.tmpl.chan_dim = (uint8_t)(4 - d->input->ndim + d->axis);
	j.tmpl.zero_point = d->zero_point;
	ts[0] = d->input;
	ts[1] = d->output;
	return run(dev, &j, ts, 2, &tab, 1, sub, job);
}

/* ---- accel_softmax / accel_layernorm: row chunks with per-row scratch ---------------------- */

/* A REDUCE of in-place operand p (rows of the chunk) into scratch at `to` (ARGMAX/ARGMIN: INT32, vflags
 * LAST or 0; the scale only for SUM and SUMSQ). */
static void reduce_rows_vf(struct accel_cmdstream *cs, const struct vx_chunk *c, const struct vx_place *p, uint8_t fn,
			   float scale, uint32_t to, unsigned flags, uint8_t vf)
{
	bool arg = fn == TNPU_VEC_RED_ARGMAX || fn == TNPU_VEC_RED_ARGMIN;
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_REDUCE, fn, TNPU_DTYPE_FP32, arg ? TNPU_DTYPE_INT32 : TNPU_DTYPE_FP32);

	for (int k = 0; k < 3; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = p->st[k];
	}
	v.d_st[2] = 4;
	v.d_st[1] = (int32_t)(4 * c->sz[2]);
	v.d_st[0] = (int32_t)(4 * c->sz[2] * c->sz[1]);
	v.a_off = p->off;
	v.d_off = to;
	v.win.red.red_len = c->sz[3];
	v.win.red.red_st = p->st[3];
	v.scale = fn == TNPU_VEC_RED_SUM || fn == TNPU_VEC_RED_SUMSQ ? vx_f32(scale) : 0;
	v.vflags = vf;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

static void reduce_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, const struct vx_place *p, uint8_t fn,
			float scale, uint32_t to, unsigned flags)
{
	reduce_rows_vf(cs, c, p, fn, scale, to, flags, 0);
}

/* d = f(a) over the chunk's whole box, a and d placements (in place when they are one). */
static void map_box(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, const struct vx_place *a,
		    const struct vx_place *d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_MAP, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	for (int k = 0; k < 4; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = a->st[k];
		v.d_st[k] = d->st[k];
	}
	v.a_off = a->off;
	v.d_off = d->off;
	v.scale = vx_f32(1.0f);
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* d = a op b over the chunk's per-row values (units of dims 0..2, packed fp32 at the offsets). */
static void bin_units(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, uint32_t a, uint32_t b,
		      uint32_t d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_BINARY, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	v.n[3] = c->sz[0] * c->sz[1] * c->sz[2];
	v.a_st[3] = v.b_st[3] = v.d_st[3] = 4;
	v.a_off = a;
	v.b_off = b;
	v.d_off = d;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* d = a op b, b either the per-row scratch at `s` (bp NULL) or an operand placement. */
static void bin_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, const struct vx_place *a,
		     const struct vx_place *bp, uint32_t s, const struct vx_place *d, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_BINARY, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	for (int k = 0; k < 4; k++) {
		v.n[k] = c->sz[k];
		v.a_st[k] = a->st[k];
		v.d_st[k] = d->st[k];
		v.b_st[k] = bp ? bp->st[k] : 0;
	}
	if (!bp) {
		v.b_st[2] = 4;
		v.b_st[1] = (int32_t)(4 * c->sz[2]);
		v.b_st[0] = (int32_t)(4 * c->sz[2] * c->sz[1]);
	}
	v.a_off = a->off;
	v.b_off = bp ? bp->off : s;
	v.d_off = d->off;
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* y = f(x*scale + bias) over n elements of the chunk: the whole out box (rows = false) or the
 * per-row scratch at s (rows = true). */
static void map_rows(struct accel_cmdstream *cs, const struct vx_chunk *c, uint8_t fn, float bias, bool rows,
		     uint32_t s, unsigned flags)
{
	struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_MAP, fn, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);

	if (rows) {
		v.n[3] = c->sz[0] * c->sz[1] * c->sz[2];
		v.a_st[3] = v.d_st[3] = 4;
		v.a_off = v.d_off = s;
	} else {
		for (int k = 0; k < 4; k++) {
			v.n[k] = c->sz[k];
			v.a_st[k] = v.d_st[k] = c->out.st[k];
		}
		v.a_off = v.d_off = c->out.off;
	}
	v.scale = vx_f32(1.0f);
	v.bias = vx_f32(bias);
	v.row = (uint8_t)c->row;
	v.half = (uint8_t)c->half;
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

static uint32_t units_of(const struct vx_chunk *c)
{
	return c->sz[0] * c->sz[1] * c->sz[2];
}

static void softmax_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	uint32_t m = c->scratch, s = c->scratch + 4 * units_of(c);

	(void)j;
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_MAX, 1.0f, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	map_rows(cs, c, TNPU_VEC_EXP, 0.0f, false, 0, f);
	reduce_rows(cs, c, &c->out, TNPU_VEC_RED_SUM, 1.0f, s, f);
	map_rows(cs, c, TNPU_VEC_RECIP, 0.0f, true, s, f);
	bin_rows(cs, c, TNPU_VEC_MUL, &c->out, NULL, s, &c->out, f);
}

/* (x - m) - ln sum exp(x - m): the exponentials go into the input's own (loaded) box, the result stays
 * exact where softmax's would round to 0 (log of a tiny probability). */
static void log_softmax_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	uint32_t m = c->scratch, s = c->scratch + 4 * units_of(c);

	(void)j;
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_MAX, 1.0f, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	map_box(cs, c, TNPU_VEC_EXP, &c->out, &c->in[0], f);
	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, 1.0f, s, f);
	map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, s, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->out, NULL, s, &c->out, f);
}

static int rows_arg(struct accel_dev *dev, const struct accel_tensor *in, const struct accel_tensor *out,
		    const char *what)
{
	int ret;

	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = vx_need(dev, what)))
		return ret;
	if (in->ndim != 2 || out->ndim != 2 || in->dtype != ACCEL_FP32 || out->dtype != ACCEL_FP32 ||
	    in->shape[0] != out->shape[0] || in->shape[1] != out->shape[1])
		return accel_seterr(dev, -EINVAL, "%s: input and output must be 2-D FP32 of the same shape", what);
	return 0;
}

static void rows_job(struct vx_job *j, const struct accel_tensor *in, const struct accel_tensor *out)
{
	job_init(j, out);
	j->n_in = 1;
	vx_opnd_of(in, &j->in[0]);
	j->keep_last = true;
	j->extra_per_unit = 8;
	/* the reduction axis keeps its stride even when it has one element */
	j->out.st[3] = (uint64_t)out->strides[1];
	j->in[0].st[3] = (uint64_t)in->strides[1];
}

/* Everything accel_softmax checks before it lowers (accel_op_supported asks the same). */
int softmax_validate(struct accel_dev *dev, const struct accel_softmax_desc *d)
{
	return rows_arg(dev, d->input, d->output, "accel_softmax");
}

int accel_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d, const struct accel_submit *sub,
		  struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_softmax", job);
	if (ret)
		return ret;
	if ((ret = softmax_validate(dev, d)))
		return ret;
	rows_job(&j, d->input, d->output);
	j.emit = softmax_emit;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

int accel_log_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d, const struct accel_submit *sub,
		      struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_log_softmax", job);
	if (ret)
		return ret;
	if ((ret = rows_arg(dev, d->input, d->output, "accel_log_softmax")) || (ret = vm_need(dev, "accel_log_softmax")))
		return ret;
	rows_job(&j, d->input, d->output);
	j.emit = log_softmax_emit;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

/* One REDUCE, or (VEC math) a MAP before it (L1: |x|) or after it (L2: sqrt, LOGSUM: ln), or LOGSUMEXP's
 * max + ln sum exp(x - max) with the exponentials in the input's loaded box. */
static void reduce_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	const struct accel_reduce_desc *d = j->ctx;
	static const uint8_t fn[] = {
		[ACCEL_REDUCE_SUM] = TNPU_VEC_RED_SUM,	    [ACCEL_REDUCE_MEAN] = TNPU_VEC_RED_SUM,
		[ACCEL_REDUCE_MAX] = TNPU_VEC_RED_MAX,	    [ACCEL_REDUCE_SUMSQ] = TNPU_VEC_RED_SUMSQ,
		[ACCEL_REDUCE_MIN] = TNPU_VEC_RED_MIN,	    [ACCEL_REDUCE_PROD] = TNPU_VEC_RED_PROD,
		[ACCEL_REDUCE_L1] = TNPU_VEC_RED_SUM,	    [ACCEL_REDUCE_L2] = TNPU_VEC_RED_SUMSQ,
		[ACCEL_REDUCE_LOGSUM] = TNPU_VEC_RED_SUM,   [ACCEL_REDUCE_LOGSUMEXP] = TNPU_VEC_RED_MAX,
		[ACCEL_REDUCE_ARGMAX] = TNPU_VEC_RED_ARGMAX, [ACCEL_REDUCE_ARGMIN] = TNPU_VEC_RED_ARGMIN,
		[ACCEL_REDUCE_ARGMAX_LAST] = TNPU_VEC_RED_ARGMAX, [ACCEL_REDUCE_ARGMIN_LAST] = TNPU_VEC_RED_ARGMIN,
	};
	bool last = d->op == ACCEL_REDUCE_ARGMAX_LAST || d->op == ACCEL_REDUCE_ARGMIN_LAST;
	uint32_t o = c->out.off;

	if (d->op == ACCEL_REDUCE_L1)
		map_box(cs, c, TNPU_VEC_ABS, &c->in[0], &c->in[0], f);
	reduce_rows_vf(cs, c, &c->in[0], fn[d->op], d->op == ACCEL_REDUCE_MEAN ? 1.0f / (float)c->sz[3] : 1.0f, o, f,
		       last ? TNPU_VEC_F_LAST : 0);
	if (d->op == ACCEL_REDUCE_L2)
		map_rows(cs, c, TNPU_VEC_SQRT, 0.0f, true, o, f);
	if (d->op == ACCEL_REDUCE_LOGSUM)
		map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, o, f);
	if (d->op == ACCEL_REDUCE_LOGSUMEXP) {
		bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, o, &c->in[0], f);
		map_box(cs, c, TNPU_VEC_EXP, &c->in[0], &c->in[0], f);
		reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, 1.0f, c->scratch, f);
		map_rows(cs, c, TNPU_VEC_LOG, 0.0f, true, c->scratch, f);
		bin_units(cs, c, TNPU_VEC_ADD, o, c->scratch, o, f);
	}
}

int accel_reduce(struct accel_dev *dev, const struct accel_reduce_desc *d, const struct accel_submit *sub,
		 struct accel_job **job)
{
	const struct accel_tensor *ts[2];
	const struct accel_tensor *in, *out;
	struct vx_job j;
	bool arg;
	int ret;

	ret = accel_op_begin(dev, d, "accel_reduce", job);
	if (ret)
		return ret;
	in = d->input;
	out = d->output;
	if ((ret = arg_tensor(dev, in, "input")) || (ret = arg_tensor(dev, out, "output")))
		return ret;
	if ((ret = vx_need(dev, "accel_reduce")))
		return ret;
	if ((unsigned)d->op > ACCEL_REDUCE_ARGMIN_LAST)
		return accel_seterr(dev, -EINVAL, "reduce: unknown op %d", (int)d->op);
	arg = d->op >= ACCEL_REDUCE_ARGMAX;
	if (in->ndim != 2 || out->ndim != 2 || in->dtype != ACCEL_FP32 || out->dtype != (arg ? ACCEL_INT32 : ACCEL_FP32) ||
	    out->shape[0] != in->shape[0] || out->shape[1] != 1)
		return accel_seterr(dev, -EINVAL, "reduce: a 2-D FP32 input (rows x cols) and a rows x 1 %s output",
				    arg ? "INT32" : "FP32");
	if (d->op > ACCEL_REDUCE_SUMSQ && (ret = vm_need(dev, "accel_reduce")))
		return ret;
	job_init(&j, in);
	vx_opnd_of(out, &j.out);	/* broadcast along the reduced axis: one element per row */
	j.n_in = 1;
	vx_opnd_of(in, &j.in[0]);
	j.in[0].st[3] = (uint64_t)in->strides[1];
	j.keep_last = true;
	j.extra_per_unit = d->op == ACCEL_REDUCE_LOGSUMEXP ? 4 : 0;
	j.emit = reduce_emit;
	j.ctx = d;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = in;
	ts[1] = out;
	return run(dev, &j, ts, 2, NULL, 0, sub, job);
}

static void layernorm_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c, unsigned f)
{
	const struct accel_layernorm_desc *d = j->ctx;
	uint32_t m = c->scratch, v = c->scratch + 4 * units_of(c);
	float invL = 1.0f / (float)c->sz[3];

	reduce_rows(cs, c, &c->in[0], TNPU_VEC_RED_SUM, invL, m, f);
	bin_rows(cs, c, TNPU_VEC_SUB, &c->in[0], NULL, m, &c->out, f);
	reduce_rows(cs, c, &c->out, TNPU_VEC_RED_SUMSQ, invL, v, f);
	map_rows(cs, c, TNPU_VEC_RSQRT, d->epsilon, true, v, f);
	bin_rows(cs, c, TNPU_VEC_MUL, &c->out, NULL, v, &c->out, f);
	if (d->gamma)
		bin_rows(cs, c, TNPU_VEC_MUL, &c->out, &c->in[1], 0, &c->out, f);
	if (d->beta)
		bin_rows(cs, c, TNPU_VEC_ADD, &c->out, &c->in[d->gamma ? 2 : 1], 0, &c->out, f);
}

static int vec_arg(struct accel_dev *dev, const struct accel_tensor *t, uint32_t L, const char *what,
		   struct vx_opnd *o)
{
	int ret = arg_tensor(dev, t, what);

	if (ret)
		return ret;
	if (t->ndim != 2 || t->dtype != ACCEL_FP32 || (uint64_t)t->shape[0] * t->shape[1] != L ||
	    (t->shape[0] != 1 && t->shape[1] != 1))
		return accel_seterr(dev, -EINVAL, "layernorm: %s must be a 1 x %u (or %u x 1) FP32 vector", what, L, L);
	memset(o, 0, sizeof(*o));
	o->va = tensor_addr(t);
	o->e = 4;
	o->st[3] = (uint64_t)(t->shape[1] != 1 ? t->strides[1] : t->strides[0]);
	return 0;
}

/* Everything accel_layernorm checks before it lowers (accel_op_supported asks the same). */
int layernorm_validate(struct accel_dev *dev, const struct accel_layernorm_desc *d)
{
	struct vx_opnd o;
	int ret;

	if ((ret = rows_arg(dev, d->input, d->output, "accel_layernorm")))
		return ret;
	if (!(d->epsilon >= 0) || isinf(d->epsilon))
		return accel_seterr(dev, -EINVAL, "layernorm: epsilon %g: must be finite and >= 0", (double)d->epsilon);
	if (d->gamma && (ret = vec_arg(dev, d->gamma, d->input->shape[1], "gamma", &o)))
		return ret;
	if (d->beta && (ret = vec_arg(dev, d->beta, d->input->shape[1], "beta", &o)))
		return ret;
	return 0;
}

int accel_layernorm(struct accel_dev *dev, const struct accel_layernorm_desc *d, const struct accel_submit *sub,
		    struct accel_job **job)
{
	const struct accel_tensor *ts[4];
	struct vx_job j;
	int ret;

	ret = accel_op_begin(dev, d, "accel_layernorm", job);
	if (ret)
		return ret;
	if ((ret = layernorm_validate(dev, d)))
		return ret;
	rows_job(&j, d->input, d->output);
	if (d->gamma && (ret = vec_arg(dev, d->gamma, d->input->shape[1], "gamma", &j.in[j.n_in++])))
		return ret;
	if (d->beta && (ret = vec_arg(dev, d->beta, d->input->shape[1], "beta", &j.in[j.n_in++])))
		return ret;
	j.emit = layernorm_emit;
	j.ctx = d;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, TNPU_DTYPE_FP32, TNPU_DTYPE_FP32);
	ts[0] = d->input;
	ts[1] = d->output;
	ts[2] = d->gamma;
	ts[3] = d->beta;
	return run(dev, &j, ts, 4, NULL, 0, sub, job);
}

/* ---- accel_pool2d MAX ---------------------------------------------------------------------- */

struct pool_geo {
	uint32_t C, H, W, OH, OW, e;
};

/* SRAM bytes of a band of cnt output rows of nb whole images (nb > 1 only when cnt is the whole map) */
static uint64_t pool_chunk_bytes(const struct accel_pool2d_desc *d, const struct pool_geo *g, uint32_t cnt,
				 uint32_t nb)
{
	uint64_t rows = ACCEL_MIN((uint64_t)(cnt - 1) * d->stride_h + d->win_h, g->H);

	return ((nb * rows * g->W * g->C * g->e + 63) & ~63ull) +
	       (((uint64_t)nb * cnt * g->OW * g->C * g->e + 63) & ~63ull);
}

static bool pool_chunk_ok(const struct accel_pool2d_desc *d, const struct pool_geo *g, uint32_t cnt, uint32_t nb,
			  uint32_t half)
{
	uint64_t el = (uint64_t)nb * cnt * g->OW * g->C;

	return pool_chunk_bytes(d, g, cnt, nb) <= half && el <= TNPU_VEC_MAX_ELEMS &&
	       el * d->win_h * d->win_w <= TNPU_VEC_MAX_WORK;
}

int accel_pool_vec(struct accel_dev *dev, const struct accel_pool2d_desc *d, uint32_t oh, uint32_t ow,
		       const struct accel_submit *sub, struct accel_job **job)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	struct pool_geo g = { in->shape[1], in->shape[2], in->shape[3], oh, ow, (uint32_t)accel_dtype_size(in->dtype) };
	uint32_t half = dev->caps.sram_bytes / 2, rows = dev->caps.rows, cnt, nb;
	unsigned A = TNPU_CMD_F_ASYNC;
	struct accel_cmdstream cs;
	struct vx_opnd io, oo;
	uint64_t i = 0;
	int ret = 0;

	if (!(dev->caps.features & TNPU_FEAT_VEC) || d->stride_h > 255 || d->stride_w > 255 || d->pad_top > 255 ||
	    d->pad_left > 255 || d->win_h > 65535 || d->win_w > 65535 || g.H > 65535 || g.W > 65535 ||
	    !pool_chunk_ok(d, &g, 1, 1, half))
		return 1;
	{
		uint32_t lo = 1, hi = oh;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo + 1) / 2;

			if (pool_chunk_ok(d, &g, mid, 1, half))
				lo = mid;
			else
				hi = mid - 1;
		}
		cnt = lo;
	}
	/* at least two bands per row of the array (all vector units busy, loads overlapping compute) */
	if ((uint64_t)in->shape[0] * ACCEL_DIV_UP(oh, cnt) < 2ull * rows)
		cnt = ACCEL_MAX(1u, (uint32_t)ACCEL_DIV_UP((uint64_t)oh * in->shape[0], 2ull * rows));
	cnt = ACCEL_MIN(cnt, oh);
	/*
	 * Small maps (a batch of MNIST-sized images): one command pools nb whole images, images in
	 * dimension 0 and channels innermost, instead of one command and two DMAs per image; still at
	 * least two commands per row of the array.
	 */
	nb = 1;
	if (cnt == oh) {
		uint32_t most = (uint32_t)ACCEL_MAX(1ull, in->shape[0] / (2ull * rows));

		while (nb < most && pool_chunk_ok(d, &g, oh, nb * 2 > most ? most : nb * 2, half))
			nb = nb * 2 > most ? most : nb * 2;
	}
	vx_opnd_of(in, &io);
	vx_opnd_of(out, &oo);
	cs_init(&cs, dev);
	cs_use(&cs, in->buf);
	cs_use(&cs, out->buf);
	for (uint32_t n = 0; n < in->shape[0]; n += nb)
		for (uint32_t oy0 = 0; oy0 < oh; oy0 += cnt) {
			uint32_t c_n = ACCEL_MIN(cnt, oh - oy0), c_b = ACCEL_MIN(nb, in->shape[0] - n);
			int64_t y_first = (int64_t)oy0 * d->stride_h - d->pad_top;
			uint32_t iy_lo = (uint32_t)ACCEL_MAX(y_first, 0);
			uint32_t iy_hi = (uint32_t)ACCEL_MIN((int64_t)(oy0 + c_n - 1) * d->stride_h - d->pad_top + d->win_h,
							     (int64_t)g.H);
			uint32_t ilo[4] = { n, 0, iy_lo, 0 }, isz[4] = { c_b, g.C, iy_hi - iy_lo, g.W };
			uint32_t olo[4] = { n, 0, oy0, 0 }, osz[4] = { c_b, g.C, c_n, ow };
			unsigned row = (unsigned)(i % rows), hf = (unsigned)((i / rows) % 2);
			struct vx_place pi, po;
			/* AVG_EXCL_PAD: POOL AVG without COUNT_PAD divides by the taps inside the input */
			struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_POOL, d->kind == ACCEL_POOL_MAX ? TNPU_VEC_POOL_MAX :
						       TNPU_VEC_POOL_AVG, in->dtype == ACCEL_FP32 ?
						       TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, 0);
			uint64_t ib = vx_place_box(&io, isz, 0, &pi);

			vx_place_box(&oo, osz, (uint32_t)((ib + 63) & ~63ull), &po);
			v.out_dtype = v.in_dtype;
			v.row = (uint8_t)row;
			v.half = (uint8_t)hf;
			/* VEC POOL: dims 1 and 2 are the window's y and x, 0 and 3 any others (isa.md) */
			v.n[0] = c_b;
			v.n[1] = c_n;
			v.n[2] = ow;
			v.n[3] = g.C;
			v.a_off = pi.off;
			v.d_off = po.off;
			for (int k = 0; k < 4; k++) {
				v.a_st[k] = pi.st[k == 3 ? 1 : (k == 0 ? 0 : k + 1)];
				v.d_st[k] = po.st[k == 3 ? 1 : (k == 0 ? 0 : k + 1)];
			}
			v.win.pool = (struct tnpu_vec_pool_win){
				.win_h = (uint16_t)d->win_h, .win_w = (uint16_t)d->win_w, .stride_y = (uint8_t)d->stride_h,
				.stride_x = (uint8_t)d->stride_w, .pad_top = (uint8_t)(iy_lo - y_first),
				.pad_left = (uint8_t)d->pad_left, .in_h = (uint16_t)(iy_hi - iy_lo), .in_w = (uint16_t)g.W,
			};
			v.hdr.flags = (uint8_t)A;
			if (i >= 2ull * rows)
				cs_sem(&cs, false, A, TNPU_ENGINE_LOAD, 2, 1);
			vx_dma_box(&cs, true, A, &io, ilo, isz, &pi, row, hf);
			cs_sem(&cs, true, A, TNPU_ENGINE_LOAD, 0, 1);
			cs_sem(&cs, false, A, TNPU_ENGINE_COMPUTE, 0, 1);
			cs_raw(&cs, &v, sizeof(v));
			cs_sem(&cs, true, A, TNPU_ENGINE_COMPUTE, 1, 1);
			cs_sem(&cs, false, A, TNPU_ENGINE_STORE, 1, 1);
			vx_dma_box(&cs, false, A, &oo, olo, osz, &po, row, hf);
			cs_sem(&cs, true, A, TNPU_ENGINE_STORE, 2, 1);
			i++;
			if (cs_segment_len(&cs) > dev->caps.max_cmdbuf / 2) {
				cs_cut(&cs);
				i = 0;
			}
		}
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
