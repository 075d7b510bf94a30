/* SPDX-License-Identifier: MIT */
/*
 * compile_qdq.c - int8 lowering of QDQ graphs (Documentation/onnx.md, "int8 QDQ graphs").
 *
 * A QDQ model computes in float between QuantizeLinear/DequantizeLinear pairs; the patterns
 *   DQ(x), DQ(w) [, DQ(b)] -> Conv | Gemm | MatMul [-> fused Relu/Clip] -> Q
 *   DQ(a), DQ(b) -> Add [-> Relu] -> Q
 *   DQ(x) -> MaxPool | AveragePool | GlobalAveragePool -> Q
 *   DQ(x) -> Flatten | Reshape | Squeeze | Unsqueeze | Identity -> Q   (same scale and zero point)
 * become one int8 device step each, whose input is the DQ's int8 tensor and whose output is the Q's:
 * the float values in between are never materialised and the Q/DQ nodes run nowhere.
 *
 * Activations are INT8 on the device.  A UINT8 tensor is stored in the arena as value - 128 (its byte
 * ^ 0x80; compiled_run.c converts at the host boundary), so every zero point here is in that domain.
 * With x' = x - zx, w' = w - wzp (int8), the convolution's exact int32 accumulator is
 *   acc = sum x w' - zx * sum w' + round(bias / (sx * sw))
 * (the second and third terms one int32 per output channel in the SFU bias; padded taps read zx and
 * cancel), and the output y = sat(round(acc * sx * sw[c] / sy) + zy) is requantised on the device:
 * per tensor in the conv/GEMM epilogue (one job), per channel by accel_requant after an int32 output
 * (two jobs).  Rounding: the device's fixed-point multiplier (31 bits) with round-half-up, where ONNX
 * rounds the float32 result half to even; the two differ only within ~1e-6 LSB of a tie or by the
 * float32 error of the reference's own convolution: within 1 LSB (tests/unit/onnx/test_qdq.c).
 * Relu = max(acc, 0) before the requantisation (requantisation is monotonic and maps 0 to zy); a
 * Clip must be Relu-like (lo 0, or below the output's range) with hi at or above the output's range.
 * Add: one accel_qadd on a device with the vector units' quantised add (CAP_FEATURES bit 20):
 * sat8(((a - za) * Ma + (b - zb) * Mb + round) >> s) + zy) exact in 64 bits, Ma/Mb = sa/sy, sb/sy * 2^s
 * (~31-bit multipliers), one rounding.  Without it: (a - za) * Ma + (b - zb) * Mb in int32 (six jobs),
 * Ma/Mb = sa/S, sb/S in 21-bit fixed point (S = max(sa, sb)), then requantised by S / (2^21 sy).  Average pooling is a depthwise
 * convolution with a kernel of ones (bias -R*S*zx, requantised by sx / (sy R S)); max pooling runs on
 * the int8 values directly (max commutes with the monotonic dequantisation), followed by a 1x1 ones
 * depthwise convolution when the output's quantisation differs.
 *
 * A pattern whose shapes the lowering cannot take falls back: its DQ nodes are lowered again as host
 * steps and the float nodes run as before.
 *
 * The matcher is compile_qdq_match.c, the run-time jobs of the steps runtime/compiled_qdq_jobs.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_util.h"
#include "compile.h"
#include "geom.h"

#include "compile_qdq.h"

/* ---- lowering ------------------------------------------------------------------------------------ */

static int64_t sat_i32(double v, bool *ok)
{
	if (!(v >= -2147483648.0 && v <= 2147483647.0))
		*ok = false;
	return (int64_t)v;
}

/* Effective int8 weights w - wzp (per channel along axis ch_axis of n_ch channels); false if they
 * leave int8 or the scales/zero points do not fit the tensor. */
static bool weights_eff(const struct onnx_model *m, const struct onnx_node *d, int ch_axis, int64_t n_ch,
			int8_t *weff, double *sw)
{
	const struct onnx_tensor *w = qdq_cval(m, d->in[0]), *s = qdq_cval(m, d->in[1]);
	const struct onnx_tensor *z = d->n_in > 2 ? qdq_cval(m, d->in[2]) : NULL;
	int64_t axis = attr_int(d->pb, "axis", 1), inner = 1;

	if (axis < 0)
		axis += w->ndim;
	if (s->count != 1 && (s->count != (size_t)n_ch || axis != ch_axis || w->dims[axis] != n_ch))
		return false;
	if (z && (z->count != s->count || z->dtype != ONNX_INT8))
		return false;
	for (unsigned d2 = (unsigned)ch_axis + 1; d2 < w->ndim; d2++)
		inner *= w->dims[d2];
	for (int64_t c = 0; c < n_ch; c++) {
		sw[c] = ((const float *)s->data)[s->count == 1 ? 0 : c];
		if (!(sw[c] > 0) || !isfinite(sw[c]))
			return false;
	}
	for (size_t i = 0; i < w->count; i++) {
		size_t c = (size_t)(((int64_t)i / inner) % n_ch);
		int32_t v = (int32_t)((const int8_t *)w->data)[i] - (z ? (int32_t)tensor_get_i(z, z->count == 1 ? 0 : c) : 0);

		if (v < -128 || v > 127)
			return false;
		weff[i] = (int8_t)v;
	}
	return true;
}

/* The bias in accumulator units (round(b / (sx * sw[c]))), n_ch values; false if it does not fit. */
static bool bias_acc(const struct onnx_model *m, const struct qpat *p, int64_t n_ch, const double *sw, int64_t *acc)
{
	const struct onnx_tensor *b = NULL, *bs = NULL;
	bool ok = true;

	if (p->bdq >= 0) {
		b = qdq_cval(m, m->nodes[p->bdq].in[0]);
		bs = qdq_cval(m, m->nodes[p->bdq].in[1]);
		if (m->nodes[p->bdq].n_in > 2 && m->nodes[p->bdq].in[2] >= 0) {
			const struct onnx_tensor *z = qdq_cval(m, m->nodes[p->bdq].in[2]);

			for (size_t i = 0; i < z->count; i++)
				if (tensor_get_i(z, i))
					return false;
		}
		if (bs->count != 1 && bs->count != (size_t)n_ch)
			return false;
	} else if (p->bias_f >= 0) {
		b = qdq_cval(m, p->bias_f);
	}
	if (b && b->count != (size_t)n_ch)
		return false;
	for (int64_t c = 0; c < n_ch; c++) {
		double real = 0;

		if (b && bs)
			real = (double)((const int32_t *)b->data)[c] * ((const float *)bs->data)[bs->count == 1 ? 0 : c];
		else if (b)
			real = ((const float *)b->data)[c];
		acc[c] = sat_i32(rint(real / (p->xq[0].scale * sw[c])), &ok);
	}
	return ok;
}

/* The fused activation in the accumulator domain (RELU or none); false if it is not expressible. */
static bool act_of(const struct onnx_node *n, const struct qparam *yq, int *act)
{
	double lo_out = yq->scale * (-128 - yq->zp), hi_out = yq->scale * (127 - yq->zp);

	*act = ACCEL_ACT_NONE;
	if (n->fused_relu)
		*act = ACCEL_ACT_RELU;
	if (n->fused_clamp) {
		if (n->clamp_lo == 0.0f)
			*act = ACCEL_ACT_RELU;
		else if (!(n->clamp_lo <= lo_out))
			return false;
		if (!(n->clamp_hi >= hi_out))
			return false;
	}
	return true;
}

/* Requantisation by r[c] (n channels): per tensor in the step when every r[c] is equal, else arrays. */
static int set_requant(struct onnx_compiled *cm, struct cstep *s, const double *r, int64_t n)
{
	bool same = true;
	uint8_t sh;

	for (int64_t c = 1; c < n; c++)
		same &= r[c] == r[0];
	if (same) {
		if (accel_quant_from_scale(r[0], &s->mult, &sh))
			return ONNX_FALLBACK;
		s->shift = sh;
		s->odt = ACCEL_INT8;
		return 0;
	}
	if (!(cm->geom[6] & (1u << 15)))
		return ONNX_FALLBACK;	/* accel_requant is ISA 2's (CAP_FEATURES bit 15) */
	s->mult = 0;
	s->odt = ACCEL_INT32;
	s->nrq = (uint32_t)n;
	s->rq_off = cm_wimg_add(cm, NULL, (uint64_t)n * 5);
	if (s->rq_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	for (int64_t c = 0; c < n; c++) {
		int32_t mu;

		if (accel_quant_from_scale(r[c], &mu, &sh))
			return ONNX_FALLBACK;
		memcpy(cm->wimg + s->rq_off + 4 * c, &mu, 4);
		cm->wimg[s->rq_off + 4 * n + c] = sh;
	}
	return 0;
}

/* Per-channel requantisation in the conv/GEMM's own epilogue (SFU QCOL, CAP_FEATURES bit 19): K column
 * records {bias, multiplier, shift} at b_off, an INT8 output and mult 0 (what marks the records: see
 * job_conv).  1 = not taken (one scale for every channel, or a device without QCOL): the caller
 * stores the bias and calls set_requant. */
static int qcol_records(struct onnx_compiled *cm, struct cstep *s, const int32_t *bias, const double *r, int64_t K)
{
	int32_t *rec;
	bool same = true;

	for (int64_t c = 1; c < K; c++)
		same &= r[c] == r[0];
	if (same || !(cm->geom[6] & (1u << 19)))
		return 1;
	s->b_off = cm_wimg_add(cm, NULL, (uint64_t)K * 12);
	if (s->b_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	rec = (int32_t *)(void *)(cm->wimg + s->b_off);	/* cm_wimg_add aligns every constant */
	for (int64_t c = 0; c < K; c++) {
		uint8_t sh;

		if (accel_quant_from_scale(r[c], &rec[3 * c + 1], &sh))
			return ONNX_FALLBACK;
		rec[3 * c] = bias[c];
		rec[3 * c + 2] = sh;
	}
	s->mult = 0;
	s->shift = 0;
	s->odt = ACCEL_INT8;
	return 0;
}

static int alloc_y(struct onnx_compiled *cm, const struct qpat *p, unsigned nd, const int64_t *dims)
{
	return onnx_tensor_alloc(cm_val(cm, p->y), (enum onnx_dtype)p->yq.dtype, nd, dims) ? -ENOMEM : 0;
}

/* Pack weights/bias (int8 K x per_k, int32 K) and set the requantisation of a conv/GEMM step. */
static int pack_wb(struct onnx_compiled *cm, struct cstep *s, const struct qpat *p, const int8_t *weff, size_t wn,
		   int64_t K, const double *sw, const int64_t *bacc, bool w_rows)
{
	int32_t *bias = malloc((size_t)K * 4 + 4);
	double *r = malloc((size_t)K * sizeof(double) + 8);
	int ret = 0;

	if (!bias || !r) {
		ret = cm_seterr(cm, -ENOMEM, "out of memory");
		goto out;
	}
	for (int64_t k = 0; k < K; k++) {
		int64_t sum = 0, v;

		/* sum of channel k's weights: rows (OIHW, Gemm transB) or columns (K x N) */
		if (w_rows)
			for (size_t i = 0; i < wn / (size_t)K; i++)
				sum += weff[(size_t)k * (wn / (size_t)K) + i];
		else
			for (size_t i = 0; i < wn / (size_t)K; i++)
				sum += weff[i * (size_t)K + (size_t)k];
		v = bacc[k] - (int64_t)s->izp * sum;
		if (v < INT32_MIN || v > INT32_MAX) {
			ret = ONNX_FALLBACK;
			goto out;
		}
		bias[k] = (int32_t)v;
		r[k] = p->xq[0].scale * sw[k] / p->yq.scale;
	}
	s->w_off = cm_wimg_add(cm, weff, wn);
	if (s->w_off == UINT64_MAX) {
		ret = cm_seterr(cm, -ENOMEM, "weights: out of memory");
		goto out;
	}
	ret = qcol_records(cm, s, bias, r, K);
	if (ret != 1)
		goto out;
	s->b_off = cm_wimg_add(cm, bias, (uint64_t)K * 4);
	if (s->b_off == UINT64_MAX)
		ret = cm_seterr(cm, -ENOMEM, "weights: out of memory");
	else
		ret = set_requant(cm, s, r, K);
out:
	free(bias);
	free(r);
	return ret;
}

static int lower_qconv(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, const struct qpat *p)
{
	struct onnx_model *m = cm->m;
	const struct onnx_tensor *x = cm_val(cm, p->x[0]), *w = qdq_cval(m, m->nodes[p->wdq].in[0]);
	struct conv_geom g;
	int8_t *weff = NULL;
	double *sw = NULL;
	int64_t *bacc = NULL, od[4];
	unsigned ond;
	int ret = ONNX_FALLBACK;

	if (conv_geom(c, x, w, &g) || x->ndim != 4)
		return ONNX_FALLBACK;
	/* libaccel decides what the device runs (#27 B3); the int32 form has the limits of every form */
	if (accel_conv_query(cm->dev, &g, ACCEL_INT8, true, false, false, 0.0f, 0.0f, s->why, sizeof(s->why)))
		return ONNX_FALLBACK;
	weff = malloc(w->count + 1);
	sw = malloc(((size_t)g.k + 1) * sizeof(double));
	bacc = malloc(((size_t)g.k + 1) * sizeof(int64_t));
	if (!weff || !sw || !bacc) {
		ret = cm_seterr(cm, -ENOMEM, "out of memory");
		goto out;
	}
	if (!weights_eff(m, &m->nodes[p->wdq], 0, g.k, weff, sw) || !bias_acc(m, p, g.k, sw, bacc) ||
	    !act_of(c->n, &p->yq, &s->act))
		goto out;
	s->kind = CS_QCONV;
	s->n = g.n, s->c = g.c, s->h = g.h, s->w = g.w, s->k = g.k, s->cg = g.cg, s->kh = g.kh, s->kw = g.kw;
	s->groups = g.groups, s->oh = g.win.oh, s->ow = g.win.ow, s->sh = g.win.sh, s->sw = g.win.sw;
	s->dh = g.win.dh, s->dw = g.win.dw, s->pt = g.win.pt, s->pl = g.win.pl, s->pb = g.win.pb, s->pr = g.win.pr;
	s->izp = p->xq[0].zp;
	s->ozp = p->yq.zp;
	if ((ret = pack_wb(cm, s, p, weff, w->count, g.k, sw, bacc, true)))
		goto out;
	if (s->odt == ACCEL_INT32)
		s->sc_bytes = (uint64_t)(g.n * g.k * g.win.oh * g.win.ow) * 4;
	conv_out_dims(&g, od, &ond);
	ret = alloc_y(cm, p, ond, od);
out:
	free(weff);
	free(sw);
	free(bacc);
	return ret;
}

/* Gemm (transA 0, alpha = beta = 1) and MatMul by a constant 2-D B. */
static int lower_qgemm(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, const struct qpat *p)
{
	struct onnx_model *m = cm->m;
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = cm_val(cm, p->x[0]), *b = qdq_cval(m, m->nodes[p->wdq].in[0]);
	int8_t *weff = NULL;
	double *sw = NULL;
	int64_t *bacc = NULL, od[ONNX_MAX_DIMS];
	unsigned ond;
	int ret = ONNX_FALLBACK;

	if (b->ndim != 2 || x->ndim < 2)
		return ONNX_FALLBACK;
	if (n->op == OP_GEMM) {
		if (x->ndim != 2 || attr_int(n->pb, "transA", 0) || attr_float(n->pb, "alpha", 1.0f) != 1.0f ||
		    attr_float(n->pb, "beta", 1.0f) != 1.0f)
			return ONNX_FALLBACK;
		s->tb = attr_int(n->pb, "transB", 0) != 0;
	}
	s->K = x->dims[x->ndim - 1];
	s->M = (int64_t)(x->count / (size_t)(s->K ? s->K : 1));
	s->N = s->tb ? b->dims[0] : b->dims[1];
	if (!s->K || !s->M || !s->N || (s->tb ? b->dims[1] : b->dims[0]) != s->K || s->M > UINT32_MAX)
		return ONNX_FALLBACK;
	if (p->bias_f >= 0 || p->bdq >= 0) {
		const struct onnx_tensor *bt = p->bias_f >= 0 ? qdq_cval(m, p->bias_f) : qdq_cval(m, m->nodes[p->bdq].in[0]);

		if (!(bt->ndim == 1 || (bt->ndim == 2 && bt->dims[0] == 1)) || bt->count != (size_t)s->N)
			return ONNX_FALLBACK;
	}
	weff = malloc(b->count + 1);
	sw = malloc(((size_t)s->N + 1) * sizeof(double));
	bacc = malloc(((size_t)s->N + 1) * sizeof(int64_t));
	if (!weff || !sw || !bacc) {
		ret = cm_seterr(cm, -ENOMEM, "out of memory");
		goto out;
	}
	if (!weights_eff(m, &m->nodes[p->wdq], s->tb ? 0 : 1, s->N, weff, sw) || !bias_acc(m, p, s->N, sw, bacc) ||
	    !act_of(n, &p->yq, &s->act))
		goto out;
	s->kind = CS_QGEMM;
	s->izp = p->xq[0].zp;
	s->ozp = p->yq.zp;
	if ((ret = pack_wb(cm, s, p, weff, b->count, s->N, sw, bacc, s->tb)))
		goto out;
	if (s->odt == ACCEL_INT32)
		s->sc_bytes = (uint64_t)(s->M * s->N) * 4;
	memcpy(od, x->dims, sizeof(od));
	od[x->ndim - 1] = s->N;
	ond = x->ndim;
	ret = alloc_y(cm, p, ond, od);
out:
	free(weff);
	free(sw);
	free(bacc);
	return ret;
}

static int lower_qpool(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, const struct qpat *p)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = cm_val(cm, p->x[0]);
	bool avg = n->op != OP_MAXPOOL;
	struct pool_geom g;
	int64_t od[ONNX_MAX_DIMS], C, RS;
	unsigned ond;
	int8_t *ones;
	int32_t *bias;
	double r;
	int ret;

	if (x->ndim != 4 || pool_geom(c, x, n->op == OP_GLOBALAVGPOOL, &g))
		return ONNX_FALLBACK;
	if (g.win.dh != 1 || g.win.dw != 1 || g.win.pt >= g.win.kh || g.win.pb + g.win.ceil_extra_h >= g.win.kh ||
	    g.win.pl >= g.win.kw || g.win.pr + g.win.ceil_extra_w >= g.win.kw)
		return ONNX_FALLBACK;
	if (avg && (g.win.ceil_extra_h || g.win.ceil_extra_w ||
		    ((g.win.pt || g.win.pl || g.win.pb || g.win.pr) && !attr_int(n->pb, "count_include_pad", 0) &&
		     !n->pad_counts)))
		return ONNX_FALLBACK;
	pool_out_dims(&g, od, &ond);
	C = g.c;
	s->izp = p->xq[0].zp;
	s->ozp = p->yq.zp;
	if (!avg) {
		s->pw[0] = (uint32_t)g.win.kh, s->pw[1] = (uint32_t)g.win.kw, s->pw[2] = (uint32_t)g.win.sh;
		s->pw[3] = (uint32_t)g.win.sw, s->pw[4] = (uint32_t)g.win.pt, s->pw[5] = (uint32_t)g.win.pl;
		s->pw[6] = (uint32_t)(g.win.pb + g.win.ceil_extra_h), s->pw[7] = (uint32_t)(g.win.pr + g.win.ceil_extra_w);
		s->ad[0] = (uint32_t)g.n, s->ad[1] = (uint32_t)C, s->ad[2] = (uint32_t)g.h, s->ad[3] = (uint32_t)g.w;
		if (p->xq[0].scale_f == p->yq.scale_f && p->xq[0].zp == p->yq.zp) {
			s->kind = CS_QPOOL;
			return alloc_y(cm, p, ond, od);
		}
		/* then a 1x1 ones depthwise conv requantises: acc = x - zx */
		s->qpool = 1;
		s->sc_bytes = (uint64_t)(g.n * C * g.win.oh * g.win.ow);
		s->n = g.n, s->c = C, s->h = g.win.oh, s->w = g.win.ow, s->kh = s->kw = 1;
		s->sh = s->sw = 1;
		RS = 1;
		r = p->xq[0].scale / p->yq.scale;
	} else {
		s->n = g.n, s->c = C, s->h = g.h, s->w = g.w, s->kh = g.win.kh, s->kw = g.win.kw;
		s->sh = g.win.sh, s->sw = g.win.sw, s->pt = g.win.pt, s->pl = g.win.pl, s->pb = g.win.pb, s->pr = g.win.pr;
		RS = g.win.kh * g.win.kw;
		r = p->xq[0].scale / (p->yq.scale * (double)RS);
		if (RS > (1 << 20))
			return ONNX_FALLBACK;
	}
	s->kind = CS_QCONV;
	s->k = C, s->cg = 1, s->groups = C, s->oh = g.win.oh, s->ow = g.win.ow, s->dh = s->dw = 1;
	s->act = ACCEL_ACT_NONE;
	ones = malloc((size_t)(C * s->kh * s->kw) + 1);
	bias = malloc((size_t)C * 4 + 4);
	if (!ones || !bias) {
		free(ones);
		free(bias);
		return cm_seterr(cm, -ENOMEM, "out of memory");
	}
	memset(ones, 1, (size_t)(C * s->kh * s->kw));
	for (int64_t k = 0; k < C; k++)
		bias[k] = (int32_t)(-RS * s->izp);
	s->w_off = cm_wimg_add(cm, ones, (uint64_t)(C * s->kh * s->kw));
	s->b_off = cm_wimg_add(cm, bias, (uint64_t)C * 4);
	free(ones);
	free(bias);
	if (s->w_off == UINT64_MAX || s->b_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	if ((ret = set_requant(cm, s, &r, 1)))
		return ret;
	return alloc_y(cm, p, ond, od);
}

/*
 * The one-job add (the vector units' quantised add, CAP_FEATURES bit 20): Ma = sa/sy * 2^s and
 * Mb = sb/sy * 2^s with the largest s <= 62 that keeps both below 2^31, so the larger uses ~31 bits and
 * the sum is rounded once.  false when even s = 0 overflows (a ratio >= 2^31: no useful quantisation).
 */
static bool qadd1_mults(double ra, double rb, int32_t *ma, int32_t *mb, int *shift)
{
	double big = ra > rb ? ra : rb;
	int s = 62;

	while (s >= 0 && nearbyint(ldexp(big, s)) > 2147483647.0)
		s--;
	if (s < 0 || !(big > 0))
		return false;
	*ma = (int32_t)nearbyint(ldexp(ra, s));
	*mb = (int32_t)nearbyint(ldexp(rb, s));
	*shift = s;
	return true;
}

/* Add of two int8 tensors of one shape (rank <= 4): one accel_qadd job where the device has the
 * quantised add, else six (two int32 rescales each, an int32 add, accel_requant). */
static int lower_qadd(struct onnx_compiled *cm, struct cstep *s, const struct qpat *p)
{
	const struct onnx_tensor *a = cm_val(cm, p->x[0]), *b = cm_val(cm, p->x[1]);
	double S = p->xq[0].scale > p->xq[1].scale ? p->xq[0].scale : p->xq[1].scale, r;
	int32_t ma = (int32_t)lrint(p->xq[0].scale / S * 2097152.0), mb = (int32_t)lrint(p->xq[1].scale / S * 2097152.0);
	int8_t za = (int8_t)p->xq[0].zp, zb = (int8_t)p->xq[1].zp;
	bool one = false;
	int sh = 0;
	uint64_t cnt4;
	int ret;

	if (!(cm->geom[6] & (1u << 15)) || a->ndim != b->ndim || a->ndim > 4 || !a->count || a->count > UINT32_MAX)
		return ONNX_FALLBACK;	/* the vector units and accel_requant are ISA 2's */
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->dims[d] != b->dims[d])
			return ONNX_FALLBACK;
	for (unsigned d = 0; d < 4; d++)
		s->od[d] = d + a->ndim >= 4 ? (uint32_t)a->dims[d + a->ndim - 4] : 1;
	s->kind = CS_QADD;
	s->in[1] = p->x[1];
	s->izp = za, s->izp2 = zb, s->ozp = p->yq.zp;
	s->act = p->relu >= 0 ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	if (cm->geom[6] & (1u << 20))
		one = qadd1_mults(p->xq[0].scale / p->yq.scale, p->xq[1].scale / p->yq.scale, &ma, &mb, &sh);
	s->k_off[0] = cm_wimg_add(cm, &za, 1);
	s->k_off[1] = cm_wimg_add(cm, &ma, 4);
	s->k_off[2] = cm_wimg_add(cm, &zb, 1);
	s->k_off[3] = cm_wimg_add(cm, &mb, 4);
	for (unsigned k = 0; k < 4; k++)
		if (s->k_off[k] == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	if (one) {	/* nrq 0 marks it (cm_qdq_qadd1): Ma, Mb at k_off[1], k_off[3], s in shift */
		s->shift = sh;
		s->odt = ACCEL_INT8;
		return alloc_y(cm, p, a->ndim, a->dims);
	}
	cnt4 = (a->count * 4 + CM_ALIGN - 1) / CM_ALIGN * CM_ALIGN;
	s->sc_bytes = 2 * cnt4;
	r = S / (2097152.0 * p->yq.scale);
	if ((ret = set_requant(cm, s, &r, 1)))
		return ret;
	/* the requantisation is accel_requant's (int32 input) along axis 0: one entry per image */
	s->nrq = s->od[0];
	s->rq_off = cm_wimg_add(cm, NULL, 5ull * s->nrq);
	if (s->rq_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	for (uint32_t i = 0; i < s->nrq; i++) {
		memcpy(cm->wimg + s->rq_off + 4ull * i, &s->mult, 4);
		cm->wimg[s->rq_off + 4ull * s->nrq + i] = (uint8_t)s->shift;
	}
	return alloc_y(cm, p, a->ndim, a->dims);
}

/* DQ -> view -> Q with one quantisation: the view of the int8 tensor. */
static int lower_qview(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, const struct qpat *p)
{
	const struct onnx_tensor *x = cm_val(cm, p->x[0]);
	struct onnx_tensor *fin = cm_val(cm, c->n->in[0]), *fout = cm_val(cm, c->n->out[0]);
	int ret;

	/* the output shape: the view's kernel on a float probe of the input's shape */
	if (onnx_tensor_alloc(fin, ONNX_FLOAT, x->ndim, x->dims))
		return -ENOMEM;
	ret = onnx_run_node(c);
	onnx_tensor_release(fin);
	if (ret) {
		onnx_tensor_release(fout);
		return ONNX_FALLBACK;
	}
	ret = fout->count == x->count ? alloc_y(cm, p, fout->ndim, fout->dims) : ONNX_FALLBACK;
	onnx_tensor_release(fout);
	if (ret)
		return ret;
	s->kind = CS_ALIAS;
	s->out = p->y;
	s->reason = "a view of its int8 input (QDQ; addressing, no step)";
	return 0;
}

/* A pattern the lowering declined: its DQ nodes (already stepped as folded) become host steps again,
 * and the Q/Relu after it run as before. */
static int unabsorb(struct onnx_compiled *cm, const struct qpat *p)
{
	int ds[4] = { p->xdq[0], p->xdq[1], p->wdq, p->bdq };

	cm->qrole[p->anchor] = QR_NONE;
	cm->qrole[p->q] = QR_NONE;
	if (p->relu >= 0)
		cm->qrole[p->relu] = QR_NONE;
	for (unsigned k = 0; k < 4; k++) {
		if (ds[k] < 0 || cm->qrole[ds[k]] != QR_ABSORBED)
			continue;
		cm->qrole[ds[k]] = QR_NONE;
		for (unsigned j = 0; j < cm->n_steps; j++)
			if (cm->steps[j].node == ds[k]) {
				int ret = cm_lower_node(cm, (unsigned)ds[k], &cm->steps[j]);

				if (ret)
					return ret;
			}
	}
	return 0;
}

int cm_qdq_lower(struct onnx_compiled *cm, unsigned i, struct cstep *s)
{
	struct onnx_model *m = cm->m;
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = cm_probe_ctx(cm, i, msg);
	struct qpat p;
	int ret, *uses, *cons;

	if (cm->qrole[i] == QR_ABSORBED) {
		s->kind = CS_QFUSED;
		s->reason = "folded into an int8 device step (QDQ pattern)";
		return 0;
	}
	if (cm->qrole[i] != QR_ANCHOR)
		return ONNX_FALLBACK;
	uses = calloc(m->n_vals + 1, sizeof(int));
	cons = calloc(m->n_vals + 1, sizeof(int));
	if (!uses || !cons) {
		free(uses);
		free(cons);
		return cm_seterr(cm, -ENOMEM, "out of memory");
	}
	qdq_uses_of(m, uses, cons);
	ret = qdq_match(m, uses, cons, i, &p) ? 0 : -EINVAL;
	free(uses);
	free(cons);
	if (ret)
		return cm_seterr(cm, ret, "QDQ: node %u no longer matches", i);
	s->in[0] = p.x[0];
	s->out = p.y;
	ret = ONNX_FALLBACK;
	/* the int8 inputs must be what their zero points say (a DQ of INT32 data, or a zero point that
	 * contradicts its tensor, is the host kernel's to run or to report) */
	for (unsigned k = 0; k < 2; k++)
		if (p.x[k] >= 0 && (!cm_val(cm, p.x[k])->data || (int)cm_val(cm, p.x[k])->dtype != p.xq[k].dtype))
			goto declined;
	switch (m->nodes[i].op) {
	case OP_CONV:
		ret = lower_qconv(cm, &c, s, &p);
		break;
	case OP_GEMM:
	case OP_MATMUL:
		ret = lower_qgemm(cm, &c, s, &p);
		break;
	case OP_ADD:
		ret = lower_qadd(cm, s, &p);
		break;
	case OP_MAXPOOL:
	case OP_AVGPOOL:
	case OP_GLOBALAVGPOOL:
		ret = lower_qpool(cm, &c, s, &p);
		break;
	default:
		ret = lower_qview(cm, &c, s, &p);
		break;
	}
	if (ret < 0)
		return ret;
	if (ret == 0) {
		if (!s->reason)
			s->reason = "int8 device step (QDQ pattern, requantised on the device)";
		return 0;
	}
declined:
	onnx_tensor_release(cm_val(cm, p.y));
	memset(s, 0, sizeof(*s));
	s->node = (int)i;
	s->in[0] = m->nodes[i].n_in ? m->nodes[i].in[0] : -1;
	s->in[1] = -1;
	s->out = m->nodes[i].n_out ? m->nodes[i].out[0] : -1;
	if ((ret = unabsorb(cm, &p)))
		return ret;
	return ONNX_FALLBACK;
}
