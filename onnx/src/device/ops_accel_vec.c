/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_vec.c - node kernels on the vector units (ISA 2, CAP_FEATURES bit 15; VEC math, bit 25):
 * the fp32 functions (vec_act_of), element-wise arithmetic with numpy broadcasting, the reductions over
 * one run of axes, ArgMax/ArgMin (the device's INT32 indices widened to INT64), Softmax/LogSoftmax,
 * LayerNormalization with its Mean and InvStdDev, Sum and Mean of several operands (the losses, Hardmax
 * and the quantisers, built on these: ops_accel_loss.c).  They run a model node by node (shapes that depend on
 * input data) and the host steps of a compiled plan; the plan's own steps (compile_lower.c) take the
 * same operators where they can.  What the device cannot express (another element type, rank > 4, axes
 * that are no single run, more than VEC_MAX_SLICES slices) returns ONNX_FALLBACK: the host kernel runs it.
 */
#include <stdio.h>
#include <string.h>

#include "accel_util.h"
#include "ops_common.h"
#include "ops_accel_vec.h"
#include "vec_act.h"

bool dev_has(struct onnx_ctx *c, unsigned bit)
{
	struct accel_caps caps;

	return !accel_query_caps(c->dev, &caps) && ((caps.features >> bit) & 1);
}

int vec_act_of(const struct onnx_node *n, struct vec_act *va)
{
	char buf[16];

	memset(va, 0, sizeof(*va));
	switch (n->op) {
	case OP_SIGMOID: va->act = ACCEL_ACT_SIGMOID; return 0;
	case OP_TANH: va->act = ACCEL_ACT_TANH; return 0;
	case OP_EXP: va->act = ACCEL_ACT_EXP; return 0;
	case OP_ERF: va->act = ACCEL_ACT_ERF; return 0;
	case OP_HARDSWISH: va->act = ACCEL_ACT_HARDSWISH; return 0;
	case OP_RECIPROCAL: va->act = ACCEL_ACT_RECIP; return 0;
	case OP_GELU:
		if (strcmp(attr_string(n->pb, "approximate", buf, sizeof(buf), "none"), "none"))
			return ONNX_FALLBACK;
		va->act = ACCEL_ACT_GELU;
		return 0;
	case OP_HARDSIGMOID:
		va->act = ACCEL_ACT_HARDSIGMOID;
		va->alpha = attr_float(n->pb, "alpha", 0.2f);
		va->beta = attr_float(n->pb, "beta", 0.5f);
		/* 0, 0 means "the defaults" to accel_activation */
		return va->alpha == 0.0f && va->beta == 0.0f ? ONNX_FALLBACK : 0;
	default:
		break;
	}
	va->vmath = true;
	switch (n->op) {
	case OP_LOG: va->act = ACCEL_ACT_LOG; return 0;
	case OP_SQRT: va->act = ACCEL_ACT_SQRT; return 0;
	case OP_ABS: va->act = ACCEL_ACT_ABS; return 0;
	case OP_NEG: va->act = ACCEL_ACT_NEG; return 0;
	case OP_FLOOR: va->act = ACCEL_ACT_FLOOR; return 0;
	case OP_CEIL: va->act = ACCEL_ACT_CEIL; return 0;
	case OP_ROUND: va->act = ACCEL_ACT_ROUND; return 0;
	case OP_SIGN: va->act = ACCEL_ACT_SIGN; return 0;
	case OP_SOFTPLUS: va->act = ACCEL_ACT_SOFTPLUS; return 0;
	case OP_SOFTSIGN: va->act = ACCEL_ACT_SOFTSIGN; return 0;
	case OP_LEAKYRELU:
		va->act = ACCEL_ACT_LEAKYRELU;
		va->alpha = attr_float(n->pb, "alpha", 0.01f);
		return 0;
	case OP_THRESHOLDEDRELU:
		va->act = ACCEL_ACT_THRESHOLDEDRELU;
		va->alpha = attr_float(n->pb, "alpha", 1.0f);
		return 0;
	case OP_ELU:
		va->act = ACCEL_ACT_ELU;
		va->alpha = attr_float(n->pb, "alpha", 1.0f);
		va->beta = 1.0f;
		return 0;
	case OP_SELU:	/* gamma * Elu(alpha); the defaults are the specification's constants */
		va->act = ACCEL_ACT_ELU;
		va->alpha = attr_float(n->pb, "alpha", 1.67326319217681884765625f);
		va->beta = attr_float(n->pb, "gamma", 1.05070102214813232421875f);
		return 0;
	default:
		return ONNX_FALLBACK;
	}
}

/* A device buffer of bytes holding src (or nothing), and t its rows x cols fp32 (or INT32) view. */
int dev_mat(struct onnx_ctx *c, struct abufs *bs, const void *src, size_t bytes, enum accel_dtype dt,
		   uint32_t rows, uint32_t cols, struct accel_buffer **b, struct accel_tensor *t)
{
	int ret = abuf_new(c, bs, src, bytes, b);

	if (ret)
		return ret;
	ret = accel_tensor_2d(*b, 0, dt, rows, cols, t);
	return ret ? node_err(c, ret, "device tensor: %s", accel_last_error(c->dev)) : 0;
}

/* ---- the fp32 functions ---------------------------------------------------------------------- */

int accel_vec_unary(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct accel_activation_desc d;
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *yb;
	struct accel_tensor xt, yt;
	struct accel_job *job = NULL;
	struct vec_act va;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !x->count || x->count > UINT32_MAX || vec_act_of(c->n, &va) ||
	    !dev_has(c, 15) || (va.vmath && !dev_has(c, 25)))
		return ONNX_FALLBACK;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	if ((ret = dev_mat(c, &bs, x->data, x->count * 4, ACCEL_FP32, 1, (uint32_t)x->count, &xb, &xt)) ||
	    (ret = dev_mat(c, &bs, NULL, x->count * 4, ACCEL_FP32, 1, (uint32_t)x->count, &yb, &yt)))
		goto out;
	memset(&d, 0, sizeof(d));
	d.input = &xt;
	d.output = &yt;
	d.act = va.act;
	d.alpha = va.alpha;
	d.beta = va.beta;
	ret = accel_activation(c->dev, &d, NULL, &job);
	ret = ajob_finish(c, ret, job, "accel_activation");
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

/* ---- element-wise arithmetic ------------------------------------------------------------------- */

static int elt_op_of(enum onnx_op op, enum accel_eltwise_op *e, bool *vmath)
{
	*vmath = false;
	switch (op) {
	case OP_ADD: *e = ACCEL_ELT_ADD; return 0;
	case OP_SUB: *e = ACCEL_ELT_SUB; return 0;
	case OP_MUL: *e = ACCEL_ELT_MUL; return 0;
	case OP_MAX: *e = ACCEL_ELT_MAX; return 0;
	case OP_MIN: *e = ACCEL_ELT_MIN; return 0;
	case OP_DIV: *e = ACCEL_ELT_DIV; *vmath = true; return 0;
	case OP_PRELU: *e = ACCEL_ELT_PRELU; *vmath = true; return 0;
	case OP_POW: *e = ACCEL_ELT_POW; *vmath = true; return 0;
	case OP_EQUAL: *e = ACCEL_ELT_EQ; *vmath = true; return 0;
	case OP_LESS: *e = ACCEL_ELT_LT; *vmath = true; return 0;
	case OP_LESSEQUAL: *e = ACCEL_ELT_LE; *vmath = true; return 0;
	case OP_GREATER: *e = ACCEL_ELT_GT; *vmath = true; return 0;
	case OP_GREATEREQUAL: *e = ACCEL_ELT_GE; *vmath = true; return 0;
	default: return ONNX_FALLBACK;
	}
}

/* a op b with numpy broadcasting of FLOAT operands of rank <= 4 (PRelu: the slope broadcast to x; a
 * comparison: a BOOL output). */
int accel_vec_binary(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	struct accel_eltwise_desc d;
	struct abufs bs = { .n = 0 };
	struct accel_buffer *ab, *bb, *yb;
	struct accel_tensor at, bt, yt;
	struct accel_job *job = NULL;
	uint32_t da[4], db[4], dy[4];
	int64_t od[4];
	size_t cnt = 1, ye;
	unsigned nd;
	bool vmath, cmp;
	int ret;

	memset(&d, 0, sizeof(d));
	if (elt_op_of(c->n->op, &d.op, &vmath) || c->n->n_in != 2 || !a || !b || a->dtype != ONNX_FLOAT ||
	    b->dtype != ONNX_FLOAT || a->ndim > 4 || b->ndim > 4 || !a->count || !b->count || !dev_has(c, 15) ||
	    (vmath && !dev_has(c, 25)))
		return ONNX_FALLBACK;
	cmp = d.op >= ACCEL_ELT_EQ;
	ye = cmp ? 1 : 4;
	nd = a->ndim > b->ndim ? a->ndim : b->ndim;
	for (unsigned i = 0; i < 4; i++) {
		int64_t x = i + a->ndim >= 4 ? a->dims[i + a->ndim - 4] : 1;
		int64_t y = i + b->ndim >= 4 ? b->dims[i + b->ndim - 4] : 1;

		if ((x != y && x != 1 && y != 1) || x > UINT32_MAX || y > UINT32_MAX ||
		    (d.op == ACCEL_ELT_PRELU && y > x))
			return ONNX_FALLBACK;	/* the host kernel reports it */
		da[i] = (uint32_t)x;
		db[i] = (uint32_t)y;
		dy[i] = da[i] > db[i] ? da[i] : db[i];
		od[i] = dy[i];
		cnt *= dy[i];
	}
	/* a comparison's INT8 truth values are the bytes of an ONNX BOOL */
	if ((ret = out_alloc(c, 0, cmp ? ONNX_BOOL : ONNX_FLOAT, nd, od + 4 - nd)))
		return ret < 0 ? ret : 0;
	if ((ret = abuf_new(c, &bs, a->data, a->count * 4, &ab)) || (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb)) ||
	    (ret = abuf_new(c, &bs, NULL, cnt * ye, &yb)))
		goto out;
	if ((ret = accel_tensor_4d(ab, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, da[0], da[1], da[2], da[3], &at)) ||
	    (ret = accel_tensor_4d(bb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, db[0], db[1], db[2], db[3], &bt)) ||
	    (ret = accel_tensor_4d(yb, 0, cmp ? ACCEL_INT8 : ACCEL_FP32, ACCEL_LAYOUT_NCHW, dy[0], dy[1], dy[2], dy[3],
				   &yt))) {
		ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
		goto out;
	}
	d.a = &at;
	d.b = &bt;
	d.out = &yt;
	ret = accel_eltwise(c->dev, &d, NULL, &job);
	ret = ajob_finish(c, ret, job, "accel_eltwise");
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), cnt * ye);
out:
	abufs_free(&bs);
	return ret;
}

/* ---- reductions over one run of axes, ArgMax/ArgMin over one axis -------------------------------- */

/* x seen as [lead, k, trail] reduced over k by op into y (lead x trail values of ysz bytes): one job when
 * trail is 1, else one per leading slice (each the trail x k matrix of strides 4 and 4·trail bytes). */
int reduce_jobs(struct onnx_ctx *c, const float *x, enum accel_reduce_op op, uint64_t lead, uint64_t k,
		       uint64_t trail, void *y)
{
	bool arg = op >= ACCEL_REDUCE_ARGMAX;
	uint64_t slices = trail == 1 ? 1 : lead, rows = trail == 1 ? lead : trail;
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *yb;
	int ret;

	if ((ret = abuf_new(c, &bs, x, lead * k * trail * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, lead * trail * 4, &yb)))
		goto out;
	for (uint64_t s = 0; s < slices && !ret; s++) {
		struct accel_tensor xt, yt;
		struct accel_reduce_desc d = { .input = &xt, .output = &yt, .op = op };
		struct accel_job *job = NULL;

		if ((ret = accel_tensor_2d(xb, s * k * trail * 4, ACCEL_FP32, (uint32_t)rows, (uint32_t)k, &xt)) ||
		    (ret = accel_tensor_2d(yb, s * trail * 4, arg ? ACCEL_INT32 : ACCEL_FP32, (uint32_t)rows, 1, &yt))) {
			ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
			break;
		}
		if (trail != 1) {
			xt.strides[0] = 4;
			xt.strides[1] = (int64_t)(4 * trail);
		}
		ret = accel_reduce(c->dev, &d, NULL, &job);
		ret = ajob_finish(c, ret, job, "accel_reduce");
	}
	if (!ret)
		memcpy(y, accel_buffer_ptr(yb), lead * trail * 4);
out:
	abufs_free(&bs);
	return ret;
}

bool shape_fits(uint64_t lead, uint64_t k, uint64_t trail)
{
	return lead && k && trail && k <= UINT32_MAX && (trail == 1 ? lead <= UINT32_MAX : lead <= VEC_MAX_SLICES) &&
	       trail <= UINT32_MAX;
}

static int reduce_op_of(enum onnx_op op, enum accel_reduce_op *r, bool *vmath)
{
	static const struct {
		enum onnx_op op;
		enum accel_reduce_op r;
	} map[] = {
		{ OP_REDUCESUM, ACCEL_REDUCE_SUM },	       { OP_REDUCEMEAN, ACCEL_REDUCE_MEAN },
		{ OP_REDUCEMAX, ACCEL_REDUCE_MAX },	       { OP_REDUCESUMSQUARE, ACCEL_REDUCE_SUMSQ },
		{ OP_REDUCEMIN, ACCEL_REDUCE_MIN },	       { OP_REDUCEPROD, ACCEL_REDUCE_PROD },
		{ OP_REDUCEL1, ACCEL_REDUCE_L1 },	       { OP_REDUCEL2, ACCEL_REDUCE_L2 },
		{ OP_REDUCELOGSUM, ACCEL_REDUCE_LOGSUM },      { OP_REDUCELOGSUMEXP, ACCEL_REDUCE_LOGSUMEXP },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].op == op) {
			*r = map[i].r;
			*vmath = map[i].r > ACCEL_REDUCE_SUMSQ;
			return 0;
		}
	return ONNX_FALLBACK;
}

int accel_vec_reduce(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	uint64_t lead = 1, k = 1, trail = 1;
	int64_t od[ONNX_MAX_DIMS];
	enum accel_reduce_op op;
	unsigned first, end, nd = 0;
	bool vmath, keep;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !x->count || !x->ndim || reduce_op_of(c->n->op, &op, &vmath) ||
	    !dev_has(c, 15) || (vmath && !dev_has(c, 25)) || !reduce_axis_run(c, x, &first, &end))
		return ONNX_FALLBACK;
	keep = attr_int(c->n->pb, "keepdims", 1) != 0;
	for (unsigned d = 0; d < x->ndim; d++) {
		*(d < first ? &lead : d < end ? &k : &trail) *= (uint64_t)x->dims[d];
		if (d < first || d >= end)
			od[nd++] = x->dims[d];
		else if (keep)
			od[nd++] = 1;
	}
	if (!shape_fits(lead, k, trail))
		return ONNX_FALLBACK;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, nd, od)))
		return ret < 0 ? ret : 0;
	return reduce_jobs(c, x->data, op, lead, k, trail, node_out(c, 0)->data);
}

/* ArgMax/ArgMin of a FLOAT tensor over axis: the device's INT32 indices, widened. */
int accel_vec_arg(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	bool keep = attr_int(c->n->pb, "keepdims", 1) != 0, last = attr_int(c->n->pb, "select_last_index", 0) != 0;
	bool mx = c->n->op == OP_ARGMAX;
	uint64_t lead = 1, k, trail = 1;
	int64_t axis = attr_int(c->n->pb, "axis", 0), od[ONNX_MAX_DIMS];
	enum accel_reduce_op op;
	struct onnx_tensor *y;
	int32_t *idx;
	unsigned nd = 0;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !x->count || !x->ndim || axis < -(int64_t)x->ndim ||
	    axis >= (int64_t)x->ndim || !dev_has(c, 15) || !dev_has(c, 25))
		return ONNX_FALLBACK;	/* the host kernel reports a bad axis */
	if (axis < 0)
		axis += x->ndim;
	k = (uint64_t)x->dims[axis];
	for (unsigned d = 0; d < x->ndim; d++) {
		if ((int64_t)d < axis)
			lead *= (uint64_t)x->dims[d];
		else if ((int64_t)d > axis)
			trail *= (uint64_t)x->dims[d];
		if ((int64_t)d != axis)
			od[nd++] = x->dims[d];
		else if (keep)
			od[nd++] = 1;
	}
	if (!shape_fits(lead, k, trail))
		return ONNX_FALLBACK;
	op = mx ? (last ? ACCEL_REDUCE_ARGMAX_LAST : ACCEL_REDUCE_ARGMAX)
		: (last ? ACCEL_REDUCE_ARGMIN_LAST : ACCEL_REDUCE_ARGMIN);
	idx = malloc(lead * trail * 4);
	if (!idx)
		return node_err(c, -ENOMEM, "out of memory");
	ret = reduce_jobs(c, x->data, op, lead, k, trail, idx);
	if (!ret && !(ret = out_alloc(c, 0, ONNX_INT64, nd, od))) {
		y = node_out(c, 0);
		for (size_t i = 0; i < y->count; i++)
			((int64_t *)y->data)[i] = idx[i];
	}
	free(idx);
	return ret < 0 ? ret : 0;
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------------------ */

/* rows x cols fp32 softmax (or log-softmax) of src into dst; with col_stride != 1 each of the `slices`
 * slices is a rows x cols matrix of row stride 1 and column stride col_stride elements. */
int softmax_jobs(struct onnx_ctx *c, const float *src, float *dst, size_t count, bool log, uint64_t slices,
			uint64_t rows, uint64_t cols, uint64_t col_stride)
{
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *yb;
	int ret;

	if ((ret = abuf_new(c, &bs, src, count * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, count * 4, &yb)))
		goto out;
	for (uint64_t s = 0; s < slices && !ret; s++) {
		struct accel_tensor xt, yt;
		struct accel_softmax_desc d = { .input = &xt, .output = &yt };
		struct accel_job *job = NULL;
		uint64_t off = s * rows * cols * 4;

		if ((ret = accel_tensor_2d(xb, off, ACCEL_FP32, (uint32_t)rows, (uint32_t)cols, &xt)) ||
		    (ret = accel_tensor_2d(yb, off, ACCEL_FP32, (uint32_t)rows, (uint32_t)cols, &yt))) {
			ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
			break;
		}
		if (col_stride != 1) {
			xt.strides[0] = yt.strides[0] = 4;
			xt.strides[1] = yt.strides[1] = (int64_t)(4 * col_stride);
		}
		ret = (log ? accel_log_softmax : accel_softmax)(c->dev, &d, NULL, &job);
		ret = ajob_finish(c, ret, job, log ? "accel_log_softmax" : "accel_softmax");
	}
	if (!ret)
		memcpy(dst, accel_buffer_ptr(yb), count * 4);
out:
	abufs_free(&bs);
	return ret;
}

/* Softmax/LogSoftmax before opset 13 over the 2-D view at axis; from opset 13 over one axis: the last as
 * one rows x cols job, another as one trail x k job per leading slice (column stride trail). */
int accel_vec_softmax(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	bool log = c->n->op == OP_LOGSOFTMAX, old = c->m->opset < 13;
	int64_t axis = attr_int(c->n->pb, "axis", old ? 1 : -1);
	uint64_t lead = 1, k = 1, trail = 1;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !x->count || !x->ndim || !dev_has(c, 15) || (log && !dev_has(c, 25)))
		return ONNX_FALLBACK;
	if (axis < 0)
		axis += x->ndim;
	if (axis < 0 || axis >= (int64_t)x->ndim)
		return ONNX_FALLBACK;
	for (unsigned d = 0; d < x->ndim; d++)
		*((int64_t)d < axis ? &lead : ((int64_t)d == axis || old) ? &k : &trail) *= (uint64_t)x->dims[d];
	if (!shape_fits(lead, k, trail))
		return ONNX_FALLBACK;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	if (trail == 1)
		return softmax_jobs(c, x->data, node_out(c, 0)->data, x->count, log, 1, lead, k, 1);
	return softmax_jobs(c, x->data, node_out(c, 0)->data, x->count, log, lead, trail, k, trail);
}

/* SoftmaxCrossEntropyLoss's log-probabilities over C of x [N, C, D] on the device: D = 1 one N x C
 * job, else one D x C job per batch (column stride D). */
/* ---- LayerNormalization -------------------------------------------------------------------------- */

/* One job of the layer norm's statistics: ret of the call, then its wait. */
#define LN_JOB(call, what)                                                                                 \
	do {                                                                                               \
		struct accel_job *job_ = NULL;                                                             \
                                                                                                           \
		ret = (call);                                                                              \
		ret = ajob_finish(c, ret, job_, what);                                                     \
	} while (0)

/*
 * Y = accel_layernorm over the rows x cols matrix of the dimensions before and from axis, with Scale and
 * B (each of cols elements) as gamma and beta.  Mean and InvStdDev, when asked for, as the
 * specification's function body computes them in float: mean = ReduceMean(x), d = x - mean,
 * var = ReduceMean(d * d), InvStdDev = 1 / sqrt(var + epsilon) (accel_reduce, accel_eltwise and the
 * RSQRT function).
 */
int accel_vec_layernorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *g = node_in(c, 1), *b = node_in(c, 2);
	bool stats = (c->n->n_out > 1 && c->n->out[1] >= 0) || (c->n->n_out > 2 && c->n->out[2] >= 0);
	float eps = layernorm_epsilon(c->n);
	int64_t axis = layernorm_axis(c->n), sdims[ONNX_MAX_DIMS];
	uint64_t rows = 1, cols = 1;
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *yb, *gb, *bb = NULL, *mb, *tb, *eb;
	struct accel_tensor xt, yt, gt, bt, mt, tt, rt, et;
	int ret;

	if (!x || !g || x->dtype != ONNX_FLOAT || g->dtype != ONNX_FLOAT || (b && b->dtype != ONNX_FLOAT) ||
	    !x->count || !x->ndim || !c->n->n_out || c->n->out[0] < 0 || attr_int(c->n->pb, "stash_type", 1) != 1 ||
	    !dev_has(c, 15) ||
	    !(eps >= 0) || isinf(eps))
		return ONNX_FALLBACK;
	if (axis < 0)
		axis += x->ndim;
	if (axis < 0 || axis >= (int64_t)x->ndim)
		return ONNX_FALLBACK;	/* the host kernel reports it */
	for (unsigned d = 0; d < x->ndim; d++) {
		*((int64_t)d < axis ? &rows : &cols) *= (uint64_t)x->dims[d];
		sdims[d] = (int64_t)d < axis ? x->dims[d] : 1;
	}
	if (rows > UINT32_MAX || cols > UINT32_MAX || g->count != cols || (b && b->count != cols))
		return ONNX_FALLBACK;	/* Scale/B broadcast along other dimensions: the host */
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)) < 0 || (ret = out_alloc(c, 1, ONNX_FLOAT, x->ndim, sdims)) < 0 ||
	    (ret = out_alloc(c, 2, ONNX_FLOAT, x->ndim, sdims)) < 0)
		return ret;
	if ((ret = dev_mat(c, &bs, x->data, x->count * 4, ACCEL_FP32, (uint32_t)rows, (uint32_t)cols, &xb, &xt)) ||
	    (ret = dev_mat(c, &bs, NULL, x->count * 4, ACCEL_FP32, (uint32_t)rows, (uint32_t)cols, &yb, &yt)) ||
	    (ret = dev_mat(c, &bs, g->data, cols * 4, ACCEL_FP32, 1, (uint32_t)cols, &gb, &gt)) ||
	    (b && (ret = dev_mat(c, &bs, b->data, cols * 4, ACCEL_FP32, 1, (uint32_t)cols, &bb, &bt))))
		goto out;
	{
		struct accel_layernorm_desc d = { .input = &xt, .output = &yt, .gamma = &gt, .beta = b ? &bt : NULL,
						  .epsilon = eps };

		LN_JOB(accel_layernorm(c->dev, &d, NULL, &job_), "accel_layernorm");
	}
	if (!ret && stats) {
		/* mean (rows x 1), then d and d * d in tb, var, var + eps, InvStdDev into mb's second half */
		if ((ret = dev_mat(c, &bs, NULL, rows * 8, ACCEL_FP32, (uint32_t)rows, 1, &mb, &mt)) ||
		    (ret = dev_mat(c, &bs, NULL, x->count * 4, ACCEL_FP32, (uint32_t)rows, (uint32_t)cols, &tb, &tt)) ||
		    (ret = dev_mat(c, &bs, &eps, 4, ACCEL_FP32, 1, 1, &eb, &et)))
			goto out;
		if ((ret = accel_tensor_2d(mb, rows * 4, ACCEL_FP32, (uint32_t)rows, 1, &rt))) {
			ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
			goto out;
		}
		{
			struct accel_reduce_desc mean = { .input = &xt, .output = &mt, .op = ACCEL_REDUCE_MEAN };
			struct accel_eltwise_desc sub = { .a = &xt, .b = &mt, .out = &tt, .op = ACCEL_ELT_SUB };
			struct accel_eltwise_desc sq = { .a = &tt, .b = &tt, .out = &yt, .op = ACCEL_ELT_MUL };
			struct accel_reduce_desc var = { .input = &yt, .output = &rt, .op = ACCEL_REDUCE_MEAN };
			struct accel_eltwise_desc add = { .a = &rt, .b = &et, .out = &mt, .op = ACCEL_ELT_ADD };
			struct accel_activation_desc rs = { .input = &mt, .output = &rt, .act = ACCEL_ACT_RSQRT };

			/* Y is copied out first: its buffer holds d * d after */
			memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * 4);
			LN_JOB(accel_reduce(c->dev, &mean, NULL, &job_), "accel_reduce");
			if (!ret && c->n->n_out > 1 && c->n->out[1] >= 0)
				memcpy(node_out(c, 1)->data, accel_buffer_ptr(mb), rows * 4);
			if (!ret)
				LN_JOB(accel_eltwise(c->dev, &sub, NULL, &job_), "accel_eltwise");
			if (!ret)
				LN_JOB(accel_eltwise(c->dev, &sq, NULL, &job_), "accel_eltwise");
			if (!ret)
				LN_JOB(accel_reduce(c->dev, &var, NULL, &job_), "accel_reduce");
			if (!ret)
				LN_JOB(accel_eltwise(c->dev, &add, NULL, &job_), "accel_eltwise");
			if (!ret)
				LN_JOB(accel_activation(c->dev, &rs, NULL, &job_), "accel_activation");
			if (!ret && c->n->n_out > 2 && c->n->out[2] >= 0)
				memcpy(node_out(c, 2)->data, (const float *)accel_buffer_ptr(mb) + rows, rows * 4);
		}
	} else if (!ret) {
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * 4);
	}
out:
	abufs_free(&bs);
	return ret;
}

/* ---- Sum/Mean (Max/Min) of several operands ----------------------------------------------------- */

/* Sum or Mean of 2..6 FLOAT operands of rank <= 4 with numpy broadcasting: one accel_eltwise ADD per
 * operand into the output's buffer, Mean then a MUL by 1/n; Max and Min of 3..6 likewise with MAX, MIN
 * (two operands: the host node by node, as Add). */
int accel_vec_variadic(struct onnx_ctx *c)
{
	const unsigned n = c->n->n_in;
	uint32_t dy[4] = { 1, 1, 1, 1 }, di[6][4];
	struct abufs bs = { .n = 0 };
	struct accel_buffer *yb, *ib[6], *sb;
	struct accel_tensor yt, it[6], st;
	unsigned nd = 0;
	int64_t od[4];
	size_t cnt = 1;
	int ret;

	if (n < 2 || n > 6 || !dev_has(c, 15) || ((c->n->op == OP_MAX || c->n->op == OP_MIN) && n < 3))
		return ONNX_FALLBACK;	/* the output, the operands and Mean's 1/n: 8 buffers */
	for (unsigned k = 0; k < n; k++) {
		const struct onnx_tensor *a = node_in(c, k);

		if (!a || a->dtype != ONNX_FLOAT || a->ndim > 4 || !a->count)
			return ONNX_FALLBACK;
		nd = a->ndim > nd ? a->ndim : nd;
		for (unsigned i = 0; i < 4; i++) {
			int64_t v = i + a->ndim >= 4 ? a->dims[i + a->ndim - 4] : 1;

			if (v > UINT32_MAX || (v != dy[i] && v != 1 && dy[i] != 1))
				return ONNX_FALLBACK;	/* the host kernel reports it */
			di[k][i] = (uint32_t)v;
			dy[i] = v > dy[i] ? (uint32_t)v : dy[i];
		}
	}
	for (unsigned i = 0; i < 4; i++) {
		od[i] = dy[i];
		cnt *= dy[i];
	}
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, nd, od + 4 - nd)))
		return ret < 0 ? ret : 0;
	if ((ret = abuf_new(c, &bs, NULL, cnt * 4, &yb)))
		goto out;
	if ((ret = accel_tensor_4d(yb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, dy[0], dy[1], dy[2], dy[3], &yt)))
		goto terr;
	for (unsigned k = 0; k < n && !ret; k++) {
		const struct onnx_tensor *a = node_in(c, k);
		struct accel_eltwise_desc d = { .out = &yt, .op = c->n->op == OP_MAX ? ACCEL_ELT_MAX :
								   c->n->op == OP_MIN ? ACCEL_ELT_MIN : ACCEL_ELT_ADD };
		struct accel_job *job = NULL;
		unsigned slot = k;

		if ((ret = abuf_new(c, &bs, a->data, a->count * 4, &ib[slot])))
			goto out;
		if ((ret = accel_tensor_4d(ib[slot], 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, di[k][0], di[k][1], di[k][2], di[k][3],
					   &it[slot])))
			goto terr;
		if (k == 0)
			continue;
		d.a = k == 1 ? &it[0] : &yt;	/* y = x0 + x1, then y += x_k */
		d.b = &it[slot];
		ret = accel_eltwise(c->dev, &d, NULL, &job);
		ret = ajob_finish(c, ret, job, "accel_eltwise");
	}
	if (!ret && c->n->op == OP_MEAN) {
		struct accel_eltwise_desc d = { .a = &yt, .b = &st, .out = &yt, .op = ACCEL_ELT_MUL };
		struct accel_job *job = NULL;
		float inv = 1.0f / (float)n;

		if ((ret = abuf_new(c, &bs, &inv, 4, &sb)))
			goto out;
		if ((ret = accel_tensor_4d(sb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 1, 1, 1, &st)))
			goto terr;
		ret = accel_eltwise(c->dev, &d, NULL, &job);
		ret = ajob_finish(c, ret, job, "accel_eltwise");
	}
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), cnt * 4);
	goto out;
terr:
	ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
out:
	abufs_free(&bs);
	return ret;
}

/* Hardmax: 1 at the first maximum along axis (opset < 13: of each row of the 2-D coercion at axis), the
 * device's ARGMAX (NaN the maximum, as numpy's argmax); the one-hot rows written here. */
