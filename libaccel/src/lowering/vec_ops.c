/* SPDX-License-Identifier: MIT */
/*
 * vec_ops.c - the public operations on the ISA 2 vector units: accel_eltwise, the vector-unit
 * functions of accel_activation, accel_quant, accel_softmax, accel_log_softmax, accel_layernorm,
 * accel_reduce, accel_transpose, accel_requant and accel_qadd (pooling: vec_pool.c).  Validation here,
 * lowering in vec_lower.c (Documentation/libaccel.md "Vector-unit operations").
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

int vx_run(struct accel_dev *dev, struct vx_job *j, const struct accel_tensor *const *ts, unsigned n_ts,
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

void vx_job_init(struct vx_job *j, const struct accel_tensor *out)
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
	vx_job_init(&j, d->out);
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
	return vx_run(dev, &j, ts, 3, NULL, 0, sub, job);
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
	vx_job_init(&j, d->out);
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
	return vx_run(dev, &j, ts, 3, NULL, 0, sub, job);
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
	vx_job_init(&j, d->output);
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
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
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
	vx_job_init(&j, d->output);
	j.n_in = 1;
	vx_opnd_of(d->input, &j.in[0]);
	j.tmpl = vx_cmd(TNPU_VEC_MAP, q ? TNPU_VEC_QUANT : TNPU_VEC_DEQUANT, q ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8,
			q ? TNPU_DTYPE_INT8 : TNPU_DTYPE_FP32);
	j.tmpl.scale = vx_f32(d->scale);
	j.tmpl.zero_point = d->zero_point;
	ts[0] = d->input;
	ts[1] = d->output;
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
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
	vx_job_init(&j, d->output);
	j.n_in = 1;
	j.in[0].va = tensor_addr(d->input);
	j.in[0].e = (unsigned)accel_dtype_size(d->input->dtype);
	for (unsigned i = 0; i < nd; i++)
		j.in[0].st[4 - nd + i] = d->output->shape[i] > 1 ? (uint64_t)d->input->strides[d->perm[i]] : 0;
	j.tmpl = vx_cmd(TNPU_VEC_MAP, TNPU_VEC_COPY, hw_dt(d->input->dtype), hw_dt(d->input->dtype));
	ts[0] = d->input;
	ts[1] = d->output;
	return vx_run(dev, &j, ts, 2, NULL, 0, sub, job);
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
	vx_job_init(&j, d->output);
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
	return vx_run(dev, &j, ts, 2, &tab, 1, sub, job);
}
