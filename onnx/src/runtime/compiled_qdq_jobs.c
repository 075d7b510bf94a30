// SPDX-License-Identifier: MIT
/*
 * compiled_qdq_jobs.c - the jobs of the int8 QDQ steps (compile_qdq.c), built at run time:
 * compiled_run.c calls cm_qdq_job for k = 0, 1, ... until it returns 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_util.h"
#include "compile.h"
#include "geom.h"

#include "compile_qdq.h"
#include "compiled_operands.h"

/* ---- execution (compiled_run.c calls cm_qdq_job for k = 0, 1, ... until it returns 1) ------------- */

static enum accel_layout lay(const struct onnx_compiled *cm, int v)
{
	return cm->vals[v].nhwc ? ACCEL_LAYOUT_NHWC : ACCEL_LAYOUT_NCHW;
}

/* The tensor constructors' errors (a zero dimension) return from the job builders below as the job's
 * error, with the constructor's message in accel_last_error (compiled_run.c step_err). */
static int vt(const struct onnx_compiled *cm, int v, enum accel_dtype dt, const uint32_t d[4], struct accel_tensor *t)
{
	const struct cval *cv = &cm->vals[v];
	uint64_t off = cv->off;
	struct accel_buffer *b = cv->loc == LOC_WEIGHT ? cm_wbuf_at(cm, cv->off, &off) : cm->arena;

	return accel_tensor_4d(b, off, dt, lay(cm, v), d[0], d[1], d[2], d[3], t);
}

static int at4(struct accel_buffer *b, uint64_t off, enum accel_dtype dt, enum accel_layout l, const uint32_t d[4],
	       struct accel_tensor *t)
{
	return accel_tensor_4d(b, off, dt, l, d[0], d[1], d[2], d[3], t);
}

bool cm_qdq_qcol(const struct cstep *s)
{
	return (s->kind == CS_QCONV || s->kind == CS_QGEMM) && s->odt == ACCEL_INT8 && !s->mult;
}

bool cm_qdq_qadd1(const struct cstep *s)
{
	return s->kind == CS_QADD && !s->nrq;
}

unsigned cm_qdq_jobs(const struct cstep *s)
{
	switch (s->kind) {
	case CS_QCONV:
		return (unsigned)s->qpool + 1 + (s->odt == ACCEL_INT32);
	case CS_QGEMM:
		return 1 + (s->odt == ACCEL_INT32);
	case CS_QADD:
		return cm_qdq_qadd1(s) ? 1 : 6;
	case CS_QPOOL:
		return 1;
	default:
		return 0;
	}
}

static int job_pool(struct onnx_compiled *cm, const struct cstep *s, struct accel_tensor *out,
		    const struct accel_submit *sub, struct accel_job **job)
{
	struct accel_pool2d_desc d;
	struct accel_tensor x;
	int ret;

	memset(&d, 0, sizeof(d));
	if ((ret = vt(cm, s->in[0], ACCEL_INT8, s->ad, &x)))
		return ret;
	d.input = &x;
	d.output = out;
	d.kind = ACCEL_POOL_MAX;
	d.win_h = s->pw[0], d.win_w = s->pw[1], d.stride_h = s->pw[2], d.stride_w = s->pw[3];
	d.pad_top = s->pw[4], d.pad_left = s->pw[5], d.pad_bottom = s->pw[6], d.pad_right = s->pw[7];
	return accel_pool2d(cm->dev, &d, sub, job);
}

static int job_requant(struct onnx_compiled *cm, const struct cstep *s, struct accel_tensor *in,
		       struct accel_tensor *out, uint32_t axis, const struct accel_submit *sub, struct accel_job **job)
{
	struct accel_requant_desc d = {
		.input = in, .output = out, .axis = axis, .zero_point = (int16_t)s->ozp,
		.multiplier = (const int32_t *)(cm->wimg + s->rq_off), .shift = cm->wimg + s->rq_off + 4ull * s->nrq,
	};

	return accel_requant(cm->dev, &d, sub, job);
}

/* The accel_conv2d descriptor of a CS_QCONV step's convolution (its tensors in x, w, y, bt); 0 or a
 * constructor's -errno. */
static int qconv_desc(const struct onnx_compiled *cm, const struct cstep *s, struct accel_conv2d_desc *d,
		      struct accel_tensor *x, struct accel_tensor *w, struct accel_tensor *y, struct accel_tensor *bt)
{
	uint32_t xd[4] = { (uint32_t)s->n, (uint32_t)s->c, (uint32_t)s->h, (uint32_t)s->w };
	uint32_t wd[4] = { (uint32_t)s->k, (uint32_t)s->cg, (uint32_t)s->kh, (uint32_t)s->kw };
	uint32_t yd[4] = { (uint32_t)s->n, (uint32_t)s->k, (uint32_t)s->oh, (uint32_t)s->ow };
	int ret;

	memset(d, 0, sizeof(*d));
	/* OHWI weights for an NHWC input; QCOL: column records {bias, multiplier, shift}, K x 3 */
	if ((ret = s->qpool ? at4(cm->arena, s->sc_off, ACCEL_INT8, lay(cm, s->in[0]), xd, x)
			    : vt(cm, s->in[0], ACCEL_INT8, xd, x)) ||
	    (ret = at4(cm->wbuf, s->w_off, ACCEL_INT8, lay(cm, s->in[0]), wd, w)) ||
	    (ret = s->odt == ACCEL_INT32 ? at4(cm->arena, s->sc_off, ACCEL_INT32, lay(cm, s->out), yd, y)
					 : vt(cm, s->out, ACCEL_INT8, yd, y)) ||
	    (ret = cm_qdq_qcol(s) ? accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_INT32, (uint32_t)s->k, 3, bt)
				  : accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_INT32, 1, (uint32_t)s->k, bt)))
		return ret;
	d->input = x;
	d->weights = w;
	d->output = y;
	cm_conv_geometry(s, d);
	d->input_zero_point = s->izp;
	d->epi.bias = bt;
	d->epi.act = (enum accel_act)s->act;
	if (s->odt == ACCEL_INT8) {
		d->epi.multiplier = s->mult;
		d->epi.shift = (uint8_t)s->shift;
		d->epi.zero_point = (int16_t)s->ozp;
	}
	return 0;
}

static int job_conv(struct onnx_compiled *cm, const struct cstep *s, unsigned k, const struct accel_submit *sub,
		    struct accel_job **job, const char **what)
{
	uint32_t xd[4] = { (uint32_t)s->n, (uint32_t)s->c, (uint32_t)s->h, (uint32_t)s->w };
	uint32_t yd[4] = { (uint32_t)s->n, (uint32_t)s->k, (uint32_t)s->oh, (uint32_t)s->ow };
	struct accel_tensor x, w, y, bt, acc;
	struct accel_conv2d_desc d;
	int ret;

	/* the pool's output (scratch) is laid out like the input, the int32 accumulators like the output;
	 * NHWC input: OHWI weights (compile_layout.c repacked them) */
	if (s->qpool && k == 0) {
		*what = "accel_pool2d (int8 max)";
		if ((ret = at4(cm->arena, s->sc_off, ACCEL_INT8, lay(cm, s->in[0]), xd, &y)))
			return ret;
		return job_pool(cm, s, &y, sub, job);
	}
	k -= (unsigned)s->qpool;
	if (k == 1) {
		*what = "accel_requant";
		if ((ret = at4(cm->arena, s->sc_off, ACCEL_INT32, lay(cm, s->out), yd, &acc)) ||
		    (ret = vt(cm, s->out, ACCEL_INT8, yd, &y)))
			return ret;
		return job_requant(cm, s, &acc, &y, 1, sub, job);
	}
	if (s->pair >= 0) {	/* compile_fuse_pwdw.c: the depthwise step's convolution after it */
		struct accel_conv2d_pwdw_desc pd = { .flags = 0 };
		struct accel_tensor x2, w2, y2, bt2;
		struct cstep q = cm->steps[s->pair];

		q.kind = CS_QCONV;	/* fused away, it describes its convolution as it did */
		*what = "accel_conv2d_pwdw (int8)";
		if ((ret = qconv_desc(cm, s, &pd.pw, &x, &w, &y, &bt)) ||
		    (ret = qconv_desc(cm, &q, &pd.dw, &x2, &w2, &y2, &bt2)))
			return ret;
		return accel_conv2d_pwdw(cm->dev, &pd, sub, job);
	}
	*what = "accel_conv2d (int8)";
	if ((ret = qconv_desc(cm, s, &d, &x, &w, &y, &bt)))
		return ret;
	return accel_conv2d(cm->dev, &d, sub, job);
}

static int job_gemm(struct onnx_compiled *cm, const struct cstep *s, unsigned k, const struct accel_submit *sub,
		    struct accel_job **job, const char **what)
{
	struct accel_tensor a, b, c, bt;
	struct accel_gemm_desc d;
	const struct cval *xv = &cm->vals[s->in[0]], *yv = &cm->vals[s->out];
	uint32_t M = (uint32_t)s->M, N = (uint32_t)s->N, K = (uint32_t)s->K;
	int ret;

	if (k == 1) {
		*what = "accel_requant";
		if ((ret = accel_tensor_2d(cm->arena, s->sc_off, ACCEL_INT32, M, N, &a)) ||
		    (ret = accel_tensor_2d(cm->arena, yv->off, ACCEL_INT8, M, N, &c)))
			return ret;
		return job_requant(cm, s, &a, &c, 1, sub, job);
	}
	*what = "accel_gemm (int8)";
	memset(&d, 0, sizeof(d));
	if ((ret = accel_tensor_2d(cm->arena, xv->off, ACCEL_INT8, M, K, &a)) ||
	    (ret = accel_tensor_2d(cm->wbuf, s->w_off, ACCEL_INT8, s->tb ? N : K, s->tb ? K : N, &b)) ||
	    (ret = s->odt == ACCEL_INT32 ? accel_tensor_2d(cm->arena, s->sc_off, ACCEL_INT32, M, N, &c)
					 : accel_tensor_2d(cm->arena, yv->off, ACCEL_INT8, M, N, &c)) ||
	    (ret = cm_qdq_qcol(s) ? accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_INT32, N, 3, &bt)
				  : accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_INT32, 1, N, &bt)))
		return ret;
	d.a = &a;
	d.b = &b;
	d.c = &c;
	d.trans_b = s->tb;
	d.epi.bias = &bt;
	d.epi.act = (enum accel_act)s->act;
	if (s->odt == ACCEL_INT8) {
		d.epi.multiplier = s->mult;
		d.epi.shift = (uint8_t)s->shift;
		d.epi.zero_point = (int16_t)s->ozp;
	}
	return accel_gemm(cm->dev, &d, sub, job);
}

/* One job: accel_qadd, the multipliers in the weight image (lower_qadd). */
static int job_add1(struct onnx_compiled *cm, const struct cstep *s, const struct accel_submit *sub,
		    struct accel_job **job, const char **what)
{
	struct accel_tensor a, b, out;
	struct accel_qadd_desc d;
	int ret;

	*what = "accel_qadd";
	memset(&d, 0, sizeof(d));
	if ((ret = vt(cm, s->in[0], ACCEL_INT8, s->od, &a)) || (ret = vt(cm, s->in[1], ACCEL_INT8, s->od, &b)) ||
	    (ret = vt(cm, s->out, ACCEL_INT8, s->od, &out)))
		return ret;
	d.a = &a;
	d.b = &b;
	d.out = &out;
	d.op = ACCEL_ELT_ADD;
	d.act = (enum accel_act)s->act;
	memcpy(&d.a_multiplier, cm->wimg + s->k_off[1], 4);
	memcpy(&d.b_multiplier, cm->wimg + s->k_off[3], 4);
	d.a_zero_point = (int16_t)s->izp;
	d.b_zero_point = (int16_t)s->izp2;
	d.zero_point = (int16_t)s->ozp;
	d.shift = (uint8_t)s->shift;
	return accel_qadd(cm->dev, &d, sub, job);
}

/* (a - za) * Ma + (b - zb) * Mb in int32, then requantised. */
static int job_add(struct onnx_compiled *cm, const struct cstep *s, unsigned k, const struct accel_submit *sub,
		   struct accel_job **job, const char **what)
{
	static const uint32_t one[4] = { 1, 1, 1, 1 };
	uint64_t t1 = s->sc_off, t2 = s->sc_off + s->sc_bytes / 2;
	struct accel_tensor a, b, out;
	struct accel_eltwise_desc d;
	unsigned opnd = k < 2 ? 0 : 1;
	enum accel_layout tl = lay(cm, s->out);	/* the int32 temporaries: the output's layout */
	int ret;

	if (cm_qdq_qadd1(s))
		return job_add1(cm, s, sub, job, what);
	memset(&d, 0, sizeof(d));
	if (k == 5) {
		*what = "accel_requant";
		if ((ret = at4(cm->arena, t1, ACCEL_INT32, tl, s->od, &a)) ||
		    (ret = vt(cm, s->out, ACCEL_INT8, s->od, &out)))
			return ret;
		return job_requant(cm, s, &a, &out, 0, sub, job);
	}
	*what = "accel_eltwise (int8 add)";
	if (k == 4) {
		ret = at4(cm->arena, t1, ACCEL_INT32, tl, s->od, &a);
		ret = ret ? ret : at4(cm->arena, t2, ACCEL_INT32, tl, s->od, &b);
		ret = ret ? ret : at4(cm->arena, t1, ACCEL_INT32, tl, s->od, &out);
		d.op = ACCEL_ELT_ADD;
		d.act = (enum accel_act)s->act;
	} else if (k % 2 == 0) {	/* t = x - zx: int8 -> exact int32 */
		ret = vt(cm, s->in[opnd], ACCEL_INT8, s->od, &a);
		ret = ret ? ret : at4(cm->wbuf, s->k_off[2 * opnd], ACCEL_INT8, ACCEL_LAYOUT_NCHW, one, &b);
		ret = ret ? ret : at4(cm->arena, opnd ? t2 : t1, ACCEL_INT32, tl, s->od, &out);
		d.op = ACCEL_ELT_SUB;
	} else {		/* t *= M */
		ret = at4(cm->arena, opnd ? t2 : t1, ACCEL_INT32, tl, s->od, &a);
		ret = ret ? ret : at4(cm->wbuf, s->k_off[2 * opnd + 1], ACCEL_INT32, ACCEL_LAYOUT_NCHW, one, &b);
		ret = ret ? ret : at4(cm->arena, opnd ? t2 : t1, ACCEL_INT32, tl, s->od, &out);
		d.op = ACCEL_ELT_MUL;
	}
	if (ret)
		return ret;
	d.a = &a;
	d.b = &b;
	d.out = &out;
	return accel_eltwise(cm->dev, &d, sub, job);
}

int cm_qdq_job(struct onnx_compiled *cm, const struct cstep *s, unsigned k, const struct accel_submit *sub,
	       struct accel_job **job, const char **what)
{
	if (k >= cm_qdq_jobs(s))
		return 1;
	switch (s->kind) {
	case CS_QCONV:
		return job_conv(cm, s, k, sub, job, what);
	case CS_QGEMM:
		return job_gemm(cm, s, k, sub, job, what);
	case CS_QADD:
		return job_add(cm, s, k, sub, job, what);
	case CS_QPOOL: {
		struct accel_tensor y;
		uint32_t yd[4] = { s->ad[0], s->ad[1], 0, 0 };
		const struct cval *cv = &cm->vals[s->out];

		int ret;

		yd[2] = (uint32_t)cv->dims[2];
		yd[3] = (uint32_t)cv->dims[3];
		*what = "accel_pool2d (int8 max)";
		if ((ret = vt(cm, s->out, ACCEL_INT8, yd, &y)))
			return ret;
		return job_pool(cm, s, &y, sub, job);
	}
	default:
		return 1;
	}
}
