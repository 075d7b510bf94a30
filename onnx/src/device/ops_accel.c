/* SPDX-License-Identifier: MIT */
/*
 * ops_accel.c - lowering of the compute operators onto libaccel: Conv -> accel_conv2d (NCHW input,
 * OIHW weights, bias in the SFU epilogue; 1-D as H = 1), Gemm/MatMul -> accel_gemm (alpha as the
 * epilogue scale, a row-vector C as the epilogue bias), Relu -> accel_activation, MaxPool /
 * AveragePool / GlobalAveragePool -> accel_pool2d.  Cases outside what the device lowering expresses
 * return ONNX_FALLBACK and run on the host kernel (Documentation/onnx.md lists them).
 */
#include <stdio.h>
#include <string.h>

#include "accel_util.h"
#include "ops_common.h"
#include "ops_nn.h"

int abuf_new(struct onnx_ctx *c, struct abufs *bs, const void *src, size_t bytes, struct accel_buffer **out)
{
	int ret;

	if (bs->n == sizeof(bs->b) / sizeof(bs->b[0]))
		return node_err(c, -ENOMEM, "too many device buffers");
	ret = accel_buffer_alloc(c->dev, bytes ? bytes : 1, out);
	if (ret)
		return node_err(c, ret, "device buffer of %zu bytes: %s", bytes, accel_last_error(c->dev));
	bs->b[bs->n++] = *out;
	if (src)
		memcpy(accel_buffer_ptr(*out), src, bytes);
	return 0;
}

/* A device tensor its constructor rejected (a zero dimension, an unknown dtype): the node's error, with
 * libaccel's reason, never an uninitialised tensor handed to the operation. */
static int tensor_err(struct onnx_ctx *c, int ret)
{
	return node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
}

void abufs_free(struct abufs *bs)
{
	for (unsigned i = 0; i < bs->n; i++)
		accel_buffer_free(bs->b[i]);
	bs->n = 0;
}

int ajob_finish(struct onnx_ctx *c, int ret, struct accel_job *job, const char *what)
{
	struct accel_counters k;

	if (ret)
		return node_err(c, ret, "%s: %s", what, accel_last_error(c->dev));
	ret = accel_job_wait(job, -1);
	if (ret) {
		node_err(c, ret, "%s job: %s", what, accel_last_error(c->dev));
		accel_job_free(job);
		return ret;
	}
	if (c->stats && !accel_job_counters(job, &k))
		accel_counters_add(&c->stats->counters, &k);
	accel_job_free(job);
	c->on_accel = true;
	return 0;
}

/* A packed NCHW (ndim 4) or row-major (ndim 2: {1, k}) tensor without a buffer: the shape a support
 * query (accel_op_supported) validates before any memory exists. */
static void shape_only(enum accel_dtype dt, unsigned ndim, const uint32_t *sh, struct accel_tensor *t)
{
	int64_t e = (int64_t)accel_dtype_size(dt);

	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = ndim;
	t->layout = ndim == 4 ? ACCEL_LAYOUT_NCHW : ACCEL_LAYOUT_ROWMAJOR;
	for (unsigned i = 0; i < ndim; i++)
		t->shape[i] = sh[i];
	t->strides[ndim - 1] = e;
	for (unsigned i = ndim - 1; i-- > 0;)
		t->strides[i] = t->strides[i + 1] * sh[i + 1];
}

/* The accel_conv2d descriptor of a Conv node (tensors x, w, y, bt already built; bt NULL: no bias). */
static void conv_fill(const struct conv_geom *g, int32_t zp, bool relu, bool clamp, float lo, float hi,
		      const struct accel_tensor *xt, const struct accel_tensor *wt, const struct accel_tensor *yt,
		      const struct accel_tensor *bt, struct accel_conv2d_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->input = xt;
	d->weights = wt;
	d->output = yt;
	d->stride_h = (uint32_t)g->win.sh;
	d->stride_w = (uint32_t)g->win.sw;
	d->dil_h = (uint32_t)g->win.dh;
	d->dil_w = (uint32_t)g->win.dw;
	d->pad_top = (uint32_t)g->win.pt;
	d->pad_left = (uint32_t)g->win.pl;
	d->pad_bottom = (uint32_t)g->win.pb;
	d->pad_right = (uint32_t)g->win.pr;
	d->groups = (uint32_t)g->groups;
	d->input_zero_point = zp;
	d->epi.bias = bt;
	if (relu)
		d->epi.act = ACCEL_ACT_RELU;	/* int8 family nodes are never fused (fold.c) */
	if (clamp) {	/* Clip (ReLU6 and any other constant bounds): the SFU's CLAMP */
		d->epi.act = ACCEL_ACT_CLAMP;
		d->epi.clamp_lo_f = lo;
		d->epi.clamp_hi_f = hi;
	}
}

int accel_conv_query(struct accel_dev *dev, const struct conv_geom *g, enum accel_dtype dt, bool bias, bool relu,
		     bool clamp, float lo, float hi, char *why, size_t len)
{
	const enum accel_dtype acc = dt == ACCEL_INT8 ? ACCEL_INT32 : ACCEL_FP32;
	const uint32_t xs[4] = { (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->h, (uint32_t)g->w };
	const uint32_t ws[4] = { (uint32_t)g->k, (uint32_t)g->cg, (uint32_t)g->kh, (uint32_t)g->kw };
	const uint32_t ys[4] = { (uint32_t)g->n, (uint32_t)g->k, (uint32_t)g->win.oh, (uint32_t)g->win.ow };
	const uint32_t bs[2] = { 1, (uint32_t)g->k };
	struct accel_tensor xt, wt, yt, bt;
	struct accel_conv2d_desc d;
	struct accel_op op;

	/* an ONNX value wider than libaccel's 32-bit fields: refused before the narrowing above matters */
	const int64_t wide[] = { g->n, g->c, g->h, g->w, g->k, g->cg, g->kh, g->kw, g->win.oh, g->win.ow,
				 g->win.sh, g->win.sw, g->win.dh, g->win.dw, g->win.pt, g->win.pl, g->win.pb,
				 g->win.pr, g->groups };

	for (unsigned i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
		if (wide[i] < 0 || wide[i] > UINT32_MAX) {
			snprintf(why, len, "conv2d: a dimension, stride, dilation or padding beyond 32 bits (%lld)",
				 (long long)wide[i]);
			return -EOPNOTSUPP;
		}
	shape_only(dt, 4, xs, &xt);
	shape_only(dt, 4, ws, &wt);
	shape_only(acc, 4, ys, &yt);
	shape_only(acc, 2, bs, &bt);
	conv_fill(g, 0, relu, clamp, lo, hi, &xt, &wt, &yt, bias ? &bt : NULL, &d);
	op = ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &d);
	return accel_op_supported(dev, &op, why, len);
}

int accel_conv_run(struct onnx_ctx *c, const struct conv_geom *g, enum accel_dtype dt, struct accel_buffer *xb,
		   struct accel_buffer *wb, struct accel_buffer *bb, struct accel_buffer *yb, int32_t zp)
{
	struct accel_tensor xt, wt, yt, bt;
	struct accel_conv2d_desc d;
	struct accel_job *job = NULL;
	char why[160];
	int ret;

	/* what the device cannot take (libaccel's answer: strides and padding past its 8-bit fields, planes
	 * past 16 bits, ...) runs on the host */
	if (accel_conv_query(c->dev, g, dt, bb != NULL, c->n->fused_relu, c->n->fused_clamp, c->n->clamp_lo,
			     c->n->clamp_hi, why, sizeof(why)) == -EOPNOTSUPP)
		return ONNX_FALLBACK;
	if ((ret = accel_tensor_4d(xb, 0, dt, ACCEL_LAYOUT_NCHW, (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->h,
				   (uint32_t)g->w, &xt)) ||
	    (ret = accel_tensor_4d(wb, 0, dt, ACCEL_LAYOUT_NCHW, (uint32_t)g->k, (uint32_t)g->cg, (uint32_t)g->kh,
				   (uint32_t)g->kw, &wt)) ||
	    (ret = accel_tensor_4d(yb, 0, dt == ACCEL_INT8 ? ACCEL_INT32 : ACCEL_FP32, ACCEL_LAYOUT_NCHW,
				   (uint32_t)g->n, (uint32_t)g->k, (uint32_t)g->win.oh, (uint32_t)g->win.ow, &yt)) ||
	    (bb && (ret = accel_tensor_2d(bb, 0, dt == ACCEL_INT8 ? ACCEL_INT32 : ACCEL_FP32, 1, (uint32_t)g->k, &bt))))
		return tensor_err(c, ret);
	conv_fill(g, zp, c->n->fused_relu, c->n->fused_clamp, c->n->clamp_lo, c->n->clamp_hi, &xt, &wt, &yt,
		  bb ? &bt : NULL, &d);
	ret = accel_conv2d(c->dev, &d, NULL, &job);
	return ajob_finish(c, ret, job, "accel_conv2d");
}

static int accel_conv(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	struct accel_buffer *xb, *wb, *bb = NULL, *yb;
	struct abufs bs = { .n = 0 };
	struct onnx_tensor *y;
	struct conv_geom g;
	int64_t od[4];
	unsigned ond;
	int ret;

	if (x && x->ndim == 5)
		return accel_conv3d(c);	/* ops_accel_nd.c */
	if ((ret = conv_geom(c, x, w, &g)))
		return ret;
	if (x->dtype != ONNX_FLOAT || w->dtype != ONNX_FLOAT || (b && (b->dtype != ONNX_FLOAT || b->count != (size_t)g.k)))
		return ONNX_FALLBACK;	/* the host kernel reports the type error */
	conv_out_dims(&g, od, &ond);
	ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, ond, od);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) || (ret = abuf_new(c, &bs, w->data, w->count * 4, &wb)) ||
	    (b && (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb))) ||
	    (ret = abuf_new(c, &bs, NULL, y->count * 4, &yb)))
		goto out;
	ret = accel_conv_run(c, &g, ACCEL_FP32, xb, wb, bb, yb, 0);
	if (!ret)
		memcpy(y->data, accel_buffer_ptr(yb), y->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

int accel_conv_i8(struct onnx_ctx *c, const struct conv_geom *g, const int8_t *x8, const int8_t *w8,
		  const int32_t *bias, int32_t x_zp, int32_t *acc)
{
	size_t nx = (size_t)(g->n * g->c * g->h * g->w), nw = (size_t)(g->k * g->cg * g->kh * g->kw);
	size_t ny = (size_t)(g->n * g->k * g->win.oh * g->win.ow);
	struct accel_buffer *xb, *wb, *bb = NULL, *yb;
	struct abufs bs = { .n = 0 };
	int ret;

	if ((ret = abuf_new(c, &bs, x8, nx, &xb)) || (ret = abuf_new(c, &bs, w8, nw, &wb)) ||
	    (bias && (ret = abuf_new(c, &bs, bias, (size_t)g->k * 4, &bb))) ||
	    (ret = abuf_new(c, &bs, NULL, ny * 4, &yb)))
		goto out;
	ret = accel_conv_run(c, g, ACCEL_INT8, xb, wb, bb, yb, x_zp);
	if (!ret)
		memcpy(acc, accel_buffer_ptr(yb), ny * 4);
out:
	abufs_free(&bs);
	return ret;
}

int accel_requant_i32(struct onnx_ctx *c, const int32_t *acc, size_t count, int64_t n_ch, int64_t inner,
		      const double *r, int32_t zp, int8_t *out)
{
	struct accel_buffer *ab, *ob;
	struct abufs bs = { .n = 0 };
	struct accel_tensor at, ot;
	struct accel_requant_desc d;
	struct accel_job *job = NULL;
	struct accel_caps caps;
	int32_t *mult = NULL;
	uint8_t *shift = NULL;
	size_t outer = count / (size_t)(n_ch * inner);
	int ret = ONNX_FALLBACK;

	if (accel_query_caps(c->dev, &caps) || !(caps.features & (1u << 15)) || !count || n_ch <= 0 || inner <= 0 ||
	    outer * (size_t)(n_ch * inner) != count || outer > UINT32_MAX || n_ch > UINT32_MAX || inner > UINT32_MAX)
		return ONNX_FALLBACK;
	mult = malloc((size_t)n_ch * sizeof(*mult));
	shift = malloc((size_t)n_ch);
	if (!mult || !shift) {
		ret = node_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (int64_t k = 0; k < n_ch; k++)
		if (accel_quant_from_scale(r[k], &mult[k], &shift[k]))
			goto out;	/* ONNX_FALLBACK */
	if ((ret = abuf_new(c, &bs, acc, count * 4, &ab)) || (ret = abuf_new(c, &bs, NULL, count, &ob)))
		goto out;
	if ((ret = accel_tensor_4d(ab, 0, ACCEL_INT32, ACCEL_LAYOUT_NCHW, (uint32_t)outer, (uint32_t)n_ch,
				   (uint32_t)inner, 1, &at)) ||
	    (ret = accel_tensor_4d(ob, 0, ACCEL_INT8, ACCEL_LAYOUT_NCHW, (uint32_t)outer, (uint32_t)n_ch,
				   (uint32_t)inner, 1, &ot))) {
		ret = tensor_err(c, ret);
		goto out;
	}
	memset(&d, 0, sizeof(d));
	d.input = &at;
	d.output = &ot;
	d.axis = 1;
	d.multiplier = mult;
	d.shift = shift;
	d.zero_point = (int16_t)zp;
	ret = accel_requant(c->dev, &d, NULL, &job);
	ret = ajob_finish(c, ret, job, "accel_requant");
	if (!ret)
		memcpy(out, accel_buffer_ptr(ob), count);
out:
	abufs_free(&bs);
	free(mult);
	free(shift);
	return ret;
}

int accel_gemm_query(struct accel_dev *dev, int64_t M, int64_t K, int64_t N, bool ta, bool tb, bool bias, int act,
		     float lo, float hi, float scale, char *why, size_t len)
{
	const uint32_t as[2] = { (uint32_t)(ta ? K : M), (uint32_t)(ta ? M : K) };
	const uint32_t bs[2] = { (uint32_t)(tb ? N : K), (uint32_t)(tb ? K : N) };
	const uint32_t cs[2] = { (uint32_t)M, (uint32_t)N }, vs[2] = { 1, (uint32_t)N };
	struct accel_tensor at, bt, ct, vt;
	struct accel_gemm_desc d;
	struct accel_op op;

	if (M <= 0 || K <= 0 || N <= 0 || M > UINT32_MAX || K > UINT32_MAX || N > UINT32_MAX) {
		snprintf(why, len, "gemm: M, K, N (%lld, %lld, %lld) outside 1..2^32-1", (long long)M, (long long)K,
			 (long long)N);
		return -EOPNOTSUPP;
	}
	shape_only(ACCEL_FP32, 2, as, &at);
	shape_only(ACCEL_FP32, 2, bs, &bt);
	shape_only(ACCEL_FP32, 2, cs, &ct);
	shape_only(ACCEL_FP32, 2, vs, &vt);
	memset(&d, 0, sizeof(d));
	d.a = &at;
	d.b = &bt;
	d.c = &ct;
	d.trans_a = ta;
	d.trans_b = tb;
	d.epi.bias = bias ? &vt : NULL;
	d.epi.act = (enum accel_act)act;
	d.epi.clamp_lo_f = lo;
	d.epi.clamp_hi_f = hi;
	d.epi.scale_f = scale != 1.0f ? scale : 0.0f;
	op = ACCEL_OP_INIT(ACCEL_OP_GEMM, gemm, &d);
	return accel_op_supported(dev, &op, why, len);
}

/* One GEMM on device buffers: C[M x N] = op(A) op(B) with the given epilogue. */
int gemm_run(struct onnx_ctx *c, enum accel_dtype dt, struct accel_buffer *ab, uint64_t aoff,
		    struct accel_buffer *bb, uint64_t boff, struct accel_buffer *cb, uint64_t coff, int64_t M, int64_t K,
		    int64_t N, bool ta, bool tb, const struct accel_epilogue *epi)
{
	struct accel_tensor at, bt, ct;
	struct accel_gemm_desc d;
	struct accel_job *job = NULL;
	int ret;

	memset(&d, 0, sizeof(d));
	if ((ret = accel_tensor_2d(ab, aoff, dt, (uint32_t)(ta ? K : M), (uint32_t)(ta ? M : K), &at)) ||
	    (ret = accel_tensor_2d(bb, boff, dt, (uint32_t)(tb ? N : K), (uint32_t)(tb ? K : N), &bt)) ||
	    (ret = accel_tensor_2d(cb, coff, dt == ACCEL_INT8 ? ACCEL_INT32 : ACCEL_FP32, (uint32_t)M, (uint32_t)N,
				   &ct)))
		return tensor_err(c, ret);
	d.a = &at;
	d.b = &bt;
	d.c = &ct;
	d.trans_a = ta;
	d.trans_b = tb;
	if (epi)
		d.epi = *epi;
	ret = accel_gemm(c->dev, &d, NULL, &job);
	return ajob_finish(c, ret, job, "accel_gemm");
}

int accel_gemm_i8(struct onnx_ctx *c, int64_t M, int64_t K, int64_t N, const int8_t *a8, const int8_t *b8,
		  const int32_t *bias, int32_t *acc)
{
	struct accel_buffer *ab, *bb, *cb, *zb = NULL;
	struct abufs bs = { .n = 0 };
	struct accel_epilogue epi;
	struct accel_tensor zt;
	int ret;

	memset(&epi, 0, sizeof(epi));
	if ((ret = abuf_new(c, &bs, a8, (size_t)(M * K), &ab)) || (ret = abuf_new(c, &bs, b8, (size_t)(K * N), &bb)) ||
	    (bias && (ret = abuf_new(c, &bs, bias, (size_t)N * 4, &zb))) ||
	    (ret = abuf_new(c, &bs, NULL, (size_t)(M * N) * 4, &cb)))
		goto out;
	if (zb) {
		if ((ret = accel_tensor_2d(zb, 0, ACCEL_INT32, 1, (uint32_t)N, &zt))) {
			ret = tensor_err(c, ret);
			goto out;
		}
		epi.bias = &zt;
	}
	ret = gemm_run(c, ACCEL_INT8, ab, 0, bb, 0, cb, 0, M, K, N, false, false, &epi);
	if (!ret)
		memcpy(acc, accel_buffer_ptr(cb), (size_t)(M * N) * 4);
out:
	abufs_free(&bs);
	return ret;
}

static int accel_gemm_op(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1), *cm = node_in(c, 2);
	bool ta = attr_int(c->n->pb, "transA", 0), tb = attr_int(c->n->pb, "transB", 0);
	float alpha = attr_float(c->n->pb, "alpha", 1.0f), beta = attr_float(c->n->pb, "beta", 1.0f);
	struct accel_buffer *ab, *bb, *cb, *zb = NULL;
	struct abufs bs = { .n = 0 };
	struct accel_epilogue epi;
	struct accel_tensor zt;
	bool row_bias;
	int64_t M, K, N, dims[2];
	struct onnx_tensor *y;
	int ret;

	if (a->dtype != ONNX_FLOAT || b->dtype != ONNX_FLOAT || a->ndim != 2 || b->ndim != 2 || alpha == 0.0f)
		return ONNX_FALLBACK;
	M = ta ? a->dims[1] : a->dims[0];
	K = ta ? a->dims[0] : a->dims[1];
	N = tb ? b->dims[0] : b->dims[1];
	if ((tb ? b->dims[1] : b->dims[0]) != K || !M || !N || !K)
		return ONNX_FALLBACK;
	/* C as a 1 x N row: the SFU adds it before the scale, so it is pre-divided by alpha */
	row_bias = cm && cm->dtype == ONNX_FLOAT && beta != 0.0f &&
		   ((cm->ndim == 1 && cm->dims[0] == N) || (cm->ndim == 2 && cm->dims[0] == 1 && cm->dims[1] == N));
	dims[0] = M;
	dims[1] = N;
	ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, 2, dims);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	memset(&epi, 0, sizeof(epi));
	if ((ret = abuf_new(c, &bs, a->data, a->count * 4, &ab)) || (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb)) ||
	    (ret = abuf_new(c, &bs, NULL, y->count * 4, &cb)))
		goto out;
	if (row_bias) {
		if ((ret = abuf_new(c, &bs, NULL, (size_t)N * 4, &zb)))
			goto out;
		for (int64_t j = 0; j < N; j++)
			((float *)accel_buffer_ptr(zb))[j] = beta * ((const float *)cm->data)[j] / alpha;
		if ((ret = accel_tensor_2d(zb, 0, ACCEL_FP32, 1, (uint32_t)N, &zt))) {
			ret = tensor_err(c, ret);
			goto out;
		}
		epi.bias = &zt;
	}
	if (alpha != 1.0f)
		epi.scale_f = alpha;
	/* the SFU applies ReLU before the scale: same sign for alpha > 0; else and after a host C add, host */
	if (c->n->fused_relu && alpha > 0.0f && !(cm && !row_bias && beta != 0.0f))
		epi.act = ACCEL_ACT_RELU;
	/* CLAMP bounds apply before the scale: only without one */
	if (c->n->fused_clamp && alpha == 1.0f && !(cm && !row_bias && beta != 0.0f)) {
		epi.act = ACCEL_ACT_CLAMP;
		epi.clamp_lo_f = c->n->clamp_lo;
		epi.clamp_hi_f = c->n->clamp_hi;
	}
	ret = gemm_run(c, ACCEL_FP32, ab, 0, bb, 0, cb, 0, M, K, N, ta, tb, &epi);
	if (ret)
		goto out;
	memcpy(y->data, accel_buffer_ptr(cb), y->count * 4);
	if (cm && !row_bias && beta != 0.0f)
		ret = gemm_bias_add(c, cm, beta, y);	/* other broadcasts of C: host */
	if (!ret && epi.act == ACCEL_ACT_NONE)
		fused_act_host(c, y);
out:
	abufs_free(&bs);
	return ret;
}

static int accel_matmul(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	struct accel_buffer *ab, *bb, *cb;
	struct abufs bs = { .n = 0 };
	struct matmul_geom g;
	struct onnx_tensor *y;
	bool b_shared;
	int ret;

	if (a->dtype != ONNX_FLOAT || b->dtype != ONNX_FLOAT)
		return ONNX_FALLBACK;
	if ((ret = matmul_geom(c, a, b, &g)))
		return ret;
	if (!g.m || !g.k || !g.nn || !g.batch)
		return ONNX_FALLBACK;
	ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, g.out_ndim, g.out_dims);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	if ((ret = abuf_new(c, &bs, a->data, a->count * 4, &ab)) || (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb)) ||
	    (ret = abuf_new(c, &bs, NULL, y->count * 4, &cb)))
		goto out;
	/* one B for every batch and A not broadcast: a single (batch*M) x K GEMM */
	b_shared = b->ndim <= 2 && (size_t)(g.batch * g.m * g.k) == a->count;
	if (b_shared) {
		ret = gemm_run(c, ACCEL_FP32, ab, 0, bb, 0, cb, 0, g.batch * g.m, g.k, g.nn, false, false, NULL);
	} else {
		for (int64_t bi = 0; !ret && bi < g.batch; bi++) {
			int64_t ao, bo;

			matmul_batch_offsets(&g, bi, &ao, &bo);
			ret = gemm_run(c, ACCEL_FP32, ab, (uint64_t)ao * 4, bb, (uint64_t)bo * 4, cb,
				       (uint64_t)(bi * g.m * g.nn) * 4, g.m, g.k, g.nn, false, false, NULL);
		}
	}
	if (!ret)
		memcpy(y->data, accel_buffer_ptr(cb), y->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

static int accel_act(struct onnx_ctx *c, enum accel_act act, float lo, float hi)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct accel_activation_desc d;
	struct accel_buffer *xb, *yb;
	struct abufs bs = { .n = 0 };
	struct accel_tensor xt, yt;
	struct accel_job *job = NULL;
	enum accel_dtype dt;
	size_t es;
	int ret;

	if (x->dtype != ONNX_FLOAT && x->dtype != ONNX_INT8)
		return ONNX_FALLBACK;
	if (!x->count)
		return ONNX_FALLBACK;
	dt = x->dtype == ONNX_FLOAT ? ACCEL_FP32 : ACCEL_INT8;
	es = onnx_dtype_size(x->dtype);
	ret = onnx_tensor_alloc(node_out(c, 0), x->dtype, x->ndim, x->dims);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	if ((ret = abuf_new(c, &bs, x->data, x->count * es, &xb)) || (ret = abuf_new(c, &bs, NULL, x->count * es, &yb)))
		goto out;
	if ((ret = accel_tensor_2d(xb, 0, dt, 1, (uint32_t)x->count, &xt)) ||
	    (ret = accel_tensor_2d(yb, 0, dt, 1, (uint32_t)x->count, &yt))) {
		ret = tensor_err(c, ret);
		goto out;
	}
	memset(&d, 0, sizeof(d));
	d.input = &xt;
	d.output = &yt;
	d.act = act;
	d.clamp_lo_f = lo;
	d.clamp_hi_f = hi;
	ret = accel_activation(c->dev, &d, NULL, &job);
	ret = ajob_finish(c, ret, job, "accel_activation");
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * es);
out:
	abufs_free(&bs);
	return ret;
}

static int accel_relu(struct onnx_ctx *c)
{
	return accel_act(c, ACCEL_ACT_RELU, 0, 0);
}

/* A standalone FLOAT Clip with bounds lo <= hi: the SFU's CLAMP (the int8 path would need the bounds
 * in the int8 domain: host). */
static int accel_clip(struct onnx_ctx *c)
{
	float lo, hi;

	if (node_in(c, 0)->dtype != ONNX_FLOAT || clip_runtime_bounds(c, &lo, &hi) || !(lo <= hi))
		return ONNX_FALLBACK;
	return accel_act(c, ACCEL_ACT_CLAMP, lo, hi);
}

/* The pool2d descriptor of g (window, strides, padding bottom/right including the ceil_mode overhang). */
static void pool_desc(const struct pool_geom *g, enum accel_pool_kind kind, struct accel_pool2d_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->win_h = (uint32_t)g->win.kh;
	d->win_w = (uint32_t)g->win.kw;
	d->stride_h = (uint32_t)g->win.sh;
	d->stride_w = (uint32_t)g->win.sw;
	d->pad_top = (uint32_t)g->win.pt;
	d->pad_left = (uint32_t)g->win.pl;
	d->pad_bottom = (uint32_t)(g->win.pb + g->win.ceil_extra_h);
	d->pad_right = (uint32_t)(g->win.pr + g->win.ceil_extra_w);
}

int accel_pool_query(struct accel_dev *dev, const struct pool_geom *g, enum accel_pool_kind kind, char *why,
		     size_t len)
{
	const int64_t wide[] = { g->n, g->c, g->h, g->w, g->win.oh, g->win.ow, g->win.kh, g->win.kw, g->win.sh,
				 g->win.sw, g->win.pt, g->win.pl, g->win.pb + g->win.ceil_extra_h,
				 g->win.pr + g->win.ceil_extra_w };
	const uint32_t xs[4] = { (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->h, (uint32_t)g->w };
	const uint32_t ys[4] = { (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->win.oh, (uint32_t)g->win.ow };
	struct accel_tensor xt, yt;
	struct accel_pool2d_desc d;
	struct accel_op op;

	for (unsigned i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
		if (wide[i] < 0 || wide[i] > UINT32_MAX) {
			snprintf(why, len, "pool2d: a dimension, window, stride or padding beyond 32 bits (%lld)",
				 (long long)wide[i]);
			return -EOPNOTSUPP;
		}
	shape_only(ACCEL_FP32, 4, xs, &xt);
	shape_only(ACCEL_FP32, 4, ys, &yt);
	pool_desc(g, kind, &d);
	d.input = &xt;
	d.output = &yt;
	op = ACCEL_OP_INIT(ACCEL_OP_POOL2D, pool2d, &d);
	return accel_op_supported(dev, &op, why, len);
}

int accel_pool_run(struct onnx_ctx *c, const struct pool_geom *g, enum accel_pool_kind kind,
		   struct accel_buffer *xb, struct accel_buffer *yb)
{
	struct accel_pool2d_desc d;
	struct accel_tensor xt, yt;
	struct accel_job *job = NULL;
	char why[160];
	int ret;

	/* the device pool has no dilation; the depthwise average counts padding (count_include_pad = 1)
	 * and would count the ceil_mode overhang too: an average that counts neither is the vector units'
	 * AVG_EXCL_PAD; the rest (padding smaller than the window, the planes and fields an average pool's
	 * depthwise convolution takes) is libaccel's answer */
	if (g->win.dh != 1 || g->win.dw != 1)
		return ONNX_FALLBACK;
	if (kind == ACCEL_POOL_AVG && (ret = pool_avg_kind(c->n, g, &kind)))
		return ret;
	if (accel_pool_query(c->dev, g, kind, why, sizeof(why)))
		return ONNX_FALLBACK;
	pool_desc(g, kind, &d);
	if ((ret = accel_tensor_4d(xb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, (uint32_t)g->n, (uint32_t)g->c, (uint32_t)g->h,
				   (uint32_t)g->w, &xt)) ||
	    (ret = accel_tensor_4d(yb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, (uint32_t)g->n, (uint32_t)g->c,
				   (uint32_t)g->win.oh, (uint32_t)g->win.ow, &yt)))
		return tensor_err(c, ret);
	d.input = &xt;
	d.output = &yt;
	ret = accel_pool2d(c->dev, &d, NULL, &job);
	return ajob_finish(c, ret, job, "accel_pool2d");
}

static int accel_pool(struct onnx_ctx *c, enum accel_pool_kind kind, bool global)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct accel_buffer *xb, *yb;
	struct abufs bs = { .n = 0 };
	struct pool_geom g;
	struct onnx_tensor *y;
	int64_t od[ONNX_MAX_DIMS];
	unsigned ond;
	int ret;

	if (x && x->ndim == 5 && !global)
		return accel_pool3d(c, kind);	/* ops_accel_nd.c */
	if (x->dtype != ONNX_FLOAT || (c->n->n_out > 1 && c->n->out[1] >= 0))
		return ONNX_FALLBACK;	/* MaxPool's Indices: the host */
	if ((ret = pool_geom(c, x, global, &g)))
		return ret;
	pool_out_dims(&g, od, &ond);
	ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, ond, od);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, y->count * 4, &yb)))
		goto out;
	ret = accel_pool_run(c, &g, kind, xb, yb);
	if (!ret)
		memcpy(y->data, accel_buffer_ptr(yb), y->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

int pool_avg_kind(const struct onnx_node *n, const struct pool_geom *g, enum accel_pool_kind *kind)
{
	bool counted = attr_int(n->pb, "count_include_pad", 0) || n->pad_counts;
	bool padded = g->win.pt || g->win.pl || g->win.pb || g->win.pr;

	if (!g->win.ceil_extra_h && !g->win.ceil_extra_w && (!padded || counted))
		return 0;	/* the depthwise average's count R*S is right */
	if (counted)
		return ONNX_FALLBACK;	/* padding counted but the ceil overhang not: the host */
	*kind = ACCEL_POOL_AVG_EXCL_PAD;
	return 0;
}

static int accel_maxpool(struct onnx_ctx *c)
{
	return accel_pool(c, ACCEL_POOL_MAX, false);
}

static int accel_avgpool(struct onnx_ctx *c)
{
	return accel_pool(c, ACCEL_POOL_AVG, false);
}

static int accel_gap(struct onnx_ctx *c)
{
	return accel_pool(c, ACCEL_POOL_AVG, true);
}

static int accel_gmp(struct onnx_ctx *c)
{
	return accel_pool(c, ACCEL_POOL_MAX, true);
}

/*
 * 2-D ConvTranspose as a device convolution: the input with (stride - 1) zeros inserted between pixels,
 * the kernel flipped and its in/out channels swapped per group, stride 1, the same dilation, padding
 * (k - 1)·d - pad at the start and (k - 1)·d - pad + output_padding at the end.  A pad larger than
 * (k - 1)·d (a negative equivalent padding) or an input that would grow past the tensor limit: host.
 */
static int accel_convtranspose(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	struct accel_buffer *xb, *wb, *bb = NULL, *yb;
	struct abufs bs = { .n = 0 };
	struct conv_geom cg;
	struct ct_geom g;
	int64_t zh, zw, pb[2], pe[2], od[4];
	size_t zcount;
	float *z, *wf;
	int ret;

	if (!x || !w || x->ndim != 4 || ct_geom(c, x, w, b, &g) || !g.N || !g.C || !g.M || !g.in[0] || !g.in[1])
		return ONNX_FALLBACK;	/* the host kernel reports any error */
	for (int d = 0; d < 2; d++) {
		pb[d] = (g.k[d] - 1) * g.dl[d] - g.pads[d];
		pe[d] = (g.k[d] - 1) * g.dl[d] - g.pads[d + 2] + g.opad[d];
		if (pb[d] < 0 || pe[d] < 0 || pb[d] > (1LL << 20) || pe[d] > (1LL << 20))
			return ONNX_FALLBACK;
	}
	zh = (g.in[0] - 1) * g.st[0] + 1;
	zw = (g.in[1] - 1) * g.st[1] + 1;
	zcount = tensor_count(4, (int64_t[]){ g.N, g.C, zh, zw });
	if (zcount > ONNX_MAX_TENSOR_BYTES / 4 || !g.od[0] || !g.od[1])
		return ONNX_FALLBACK;
	memset(&cg, 0, sizeof(cg));
	cg.spatial = 2;
	cg.n = g.N;
	cg.c = g.C;
	cg.h = zh;
	cg.w = zw;
	cg.k = g.M;
	cg.cg = g.Cg;
	cg.kh = g.k[0];
	cg.kw = g.k[1];
	cg.groups = g.group;
	cg.win.kh = g.k[0];
	cg.win.kw = g.k[1];
	cg.win.sh = cg.win.sw = 1;
	cg.win.dh = g.dl[0];
	cg.win.dw = g.dl[1];
	cg.win.pt = pb[0];
	cg.win.pl = pb[1];
	cg.win.pb = pe[0];
	cg.win.pr = pe[1];
	cg.win.oh = g.od[0];
	cg.win.ow = g.od[1];
	od[0] = g.N;
	od[1] = g.M;
	od[2] = g.od[0];
	od[3] = g.od[1];
	ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, 4, od);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	if ((ret = abuf_new(c, &bs, NULL, zcount * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, w->count * 4, &wb)) ||
	    (b && (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb))) ||
	    (ret = abuf_new(c, &bs, NULL, node_out(c, 0)->count * 4, &yb)))
		goto out;
	z = accel_buffer_ptr(xb);
	memset(z, 0, zcount * 4);
	for (int64_t nc = 0; nc < g.N * g.C; nc++)
		for (int64_t i = 0; i < g.in[0]; i++)
			for (int64_t j = 0; j < g.in[1]; j++)
				z[(nc * zh + i * g.st[0]) * zw + j * g.st[1]] =
					((const float *)x->data)[(nc * g.in[0] + i) * g.in[1] + j];
	wf = accel_buffer_ptr(wb);	/* W[c][m][r][s] (c in group gi) -> Wc[gi*Mg + m][c][R-1-r][S-1-s] */
	for (int64_t ci = 0; ci < g.C; ci++)
		for (int64_t m = 0; m < g.Mg; m++)
			for (int64_t r = 0; r < g.k[0]; r++)
				for (int64_t q = 0; q < g.k[1]; q++) {
					int64_t gi = ci / g.Cg, cl = ci % g.Cg;

					wf[(((gi * g.Mg + m) * g.Cg + cl) * g.k[0] + (g.k[0] - 1 - r)) * g.k[1] + (g.k[1] - 1 - q)] =
						((const float *)w->data)[((ci * g.Mg + m) * g.k[0] + r) * g.k[1] + q];
				}
	ret = accel_conv_run(c, &cg, ACCEL_FP32, xb, wb, bb, yb, 0);
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), node_out(c, 0)->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

/* ReduceMean over H and W of a FLOAT NCHW tensor (MnasNet, SE blocks) is global average pooling. */
static int accel_reducemean(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t axes[ONNX_MAX_DIMS];
	unsigned n, mask;
	bool given;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || x->ndim != 4 || !x->dims[2] || !x->dims[3])
		return ONNX_FALLBACK;
	if (axes_of(c, 18, 1, axes, &n, &given) || !given || axes_mask(c, axes, n, 4, &mask) || mask != 0xcu)
		return ONNX_FALLBACK;	/* the host kernel reports any error */
	ret = accel_pool(c, ACCEL_POOL_AVG, true);
	if (!ret && !attr_int(c->n->pb, "keepdims", 1))
		node_out(c, 0)->ndim = 2;	/* {N, C, 1, 1} -> {N, C} */
	return ret;
}

/* Global average pooling over H and W, else the vector units' row mean over one run of axes. */
static int accel_reducemean_any(struct onnx_ctx *c)
{
	int ret = accel_reducemean(c);

	return ret == ONNX_FALLBACK ? accel_vec_reduce(c) : ret;
}

int accel_qlinearconv(struct onnx_ctx *c);
int accel_qlinearmatmul(struct onnx_ctx *c);
int accel_convinteger(struct onnx_ctx *c);
int accel_matmulinteger(struct onnx_ctx *c);

const onnx_kernel onnx_accel_kernels[OP_COUNT] = {
	[OP_CONV] = accel_conv,
	[OP_GEMM] = accel_gemm_op,
	[OP_MATMUL] = accel_matmul,
	[OP_RELU] = accel_relu,
	[OP_CLIP] = accel_clip,
	[OP_MAXPOOL] = accel_maxpool,
	[OP_AVGPOOL] = accel_avgpool,
	[OP_GLOBALAVGPOOL] = accel_gap,
	[OP_GLOBALMAXPOOL] = accel_gmp,
	[OP_REDUCEMEAN] = accel_reducemean_any,
	[OP_CONVTRANSPOSE] = accel_convtranspose,
	[OP_QLINEARCONV] = accel_qlinearconv,
	[OP_QLINEARMATMUL] = accel_qlinearmatmul,
	[OP_CONVINTEGER] = accel_convinteger,
	[OP_MATMULINTEGER] = accel_matmulinteger,
	/* the vector units (ops_accel_vec.c) */
	[OP_SIGMOID] = accel_vec_unary, [OP_TANH] = accel_vec_unary, [OP_EXP] = accel_vec_unary,
	[OP_ERF] = accel_vec_unary, [OP_GELU] = accel_vec_unary, [OP_HARDSIGMOID] = accel_vec_unary,
	[OP_HARDSWISH] = accel_vec_unary, [OP_RECIPROCAL] = accel_vec_unary, [OP_LOG] = accel_vec_unary,
	[OP_SQRT] = accel_vec_unary, [OP_ABS] = accel_vec_unary, [OP_NEG] = accel_vec_unary,
	[OP_FLOOR] = accel_vec_unary, [OP_CEIL] = accel_vec_unary, [OP_ROUND] = accel_vec_unary,
	[OP_SIGN] = accel_vec_unary, [OP_SOFTPLUS] = accel_vec_unary, [OP_SOFTSIGN] = accel_vec_unary,
	[OP_LEAKYRELU] = accel_vec_unary, [OP_THRESHOLDEDRELU] = accel_vec_unary, [OP_ELU] = accel_vec_unary,
	[OP_SELU] = accel_vec_unary,
	/* Add, Sub, Mul, Max, Min node by node stay on the host: a copy to the device and back costs more
	 * than the operation (the compiled plan runs them on the device, in place in its arena) */
	[OP_DIV] = accel_vec_binary, [OP_PRELU] = accel_vec_binary, [OP_POW] = accel_vec_binary,
	[OP_EQUAL] = accel_vec_binary, [OP_LESS] = accel_vec_binary, [OP_LESSEQUAL] = accel_vec_binary,
	[OP_GREATER] = accel_vec_binary, [OP_GREATEREQUAL] = accel_vec_binary,
	[OP_REDUCESUM] = accel_vec_reduce, [OP_REDUCEMAX] = accel_vec_reduce, [OP_REDUCESUMSQUARE] = accel_vec_reduce,
	[OP_REDUCEMIN] = accel_vec_reduce, [OP_REDUCEPROD] = accel_vec_reduce, [OP_REDUCEL1] = accel_vec_reduce,
	[OP_REDUCEL2] = accel_vec_reduce, [OP_REDUCELOGSUM] = accel_vec_reduce,
	[OP_REDUCELOGSUMEXP] = accel_vec_reduce,
	[OP_ARGMAX] = accel_vec_arg, [OP_ARGMIN] = accel_vec_arg,
	[OP_SOFTMAX] = accel_vec_softmax, [OP_LOGSOFTMAX] = accel_vec_softmax,
	[OP_SCELOSS] = accel_vec_sceloss,
	[OP_LAYERNORM] = accel_vec_layernorm,
	[OP_RESIZE] = accel_resize, [OP_UPSAMPLE] = accel_resize,
	[OP_BATCHNORM] = accel_batchnorm, [OP_INSTANCENORM] = accel_instancenorm,
	[OP_SUM] = accel_vec_variadic, [OP_MEAN] = accel_vec_variadic, [OP_HARDMAX] = accel_vec_hardmax,
	[OP_MAX] = accel_vec_variadic, [OP_MIN] = accel_vec_variadic,
	[OP_NLLLOSS] = accel_vec_nllloss,
	[OP_RNN] = accel_rnn, [OP_GRU] = accel_rnn, [OP_LSTM] = accel_rnn,
	[OP_QUANTIZELINEAR] = accel_vec_qdq, [OP_DEQUANTIZELINEAR] = accel_vec_qdq,
	[OP_DYNQUANTIZELINEAR] = accel_vec_dynq,
};
