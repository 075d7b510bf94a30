/* SPDX-License-Identifier: MIT */
/*
 * ops_loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13), host kernels written
 * from the ONNX specification (its reference: loss[n, d] = -input[n, target[n, d], d] · weight[target],
 * 0 where target == ignore_index; "mean" divides by the summed weights of the counted elements).  Both
 * are element gathers and a reduction: no MACs for the PE array.
 */
#include <stdio.h>

#include "ops_common.h"

struct loss_geom {
	int64_t n, c, d;	/* batch, classes, product of the extra dimensions */
	int red;		/* 0 none, 1 sum, 2 mean */
	bool has_ignore;
	int64_t ignore;
};

/* Shapes and attributes shared by both losses: x [N, C, d1...], target [N, d1...] (integers), weight [C]. */
static int loss_check(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *t,
		      const struct onnx_tensor *w, struct loss_geom *g)
{
	char buf[16];
	const char *red = attr_string(c->n->pb, "reduction", buf, sizeof(buf), "mean");

	g->red = !strcmp(red, "none") ? 0 : !strcmp(red, "sum") ? 1 : !strcmp(red, "mean") ? 2 : -1;
	if (g->red < 0)
		return node_err(c, -EINVAL, "reduction '%s' (none, sum or mean)", red);
	g->has_ignore = attr_find(c->n->pb, "ignore_index") != NULL;
	g->ignore = attr_int(c->n->pb, "ignore_index", 0);
	if (x->ndim < 2)
		return node_err(c, -EINVAL, "input has rank %u (needs [N, C, ...])", x->ndim);
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "input: element type %s (a floating-point type)", onnx_dtype_name(x->dtype));
	if (!is_int_type(t->dtype))
		return node_err(c, -EINVAL, "target: element type %s (an integer type)", onnx_dtype_name(t->dtype));
	if (t->ndim != x->ndim - 1 || t->dims[0] != x->dims[0])
		return node_err(c, -EINVAL, "target has rank %u / batch %lld; input [N, C, ...] needs [N, ...]", t->ndim,
				t->ndim ? (long long)t->dims[0] : 0LL);
	for (unsigned i = 1; i < t->ndim; i++)
		if (t->dims[i] != x->dims[i + 1])
			return node_err(c, -EINVAL, "target dimension %u is %lld, input's %u is %lld", i,
					(long long)t->dims[i], i + 1, (long long)x->dims[i + 1]);
	g->n = x->dims[0];
	g->c = x->dims[1];
	g->d = 1;
	for (unsigned i = 2; i < x->ndim; i++)
		g->d *= x->dims[i];
	if (w && (w->ndim != 1 || w->dims[0] != g->c || w->dtype != ONNX_FLOAT))
		return node_err(c, -EINVAL, "weight must be a [C] = [%lld] tensor of the input's type", (long long)g->c);
	return 0;
}

/* Every target in 0..C-1 or ignore_index: else the node's error naming it. */
static int targets_check(const struct onnx_ctx *c, const struct onnx_tensor *t, const struct loss_geom *g)
{
	for (size_t i = 0; i < t->count; i++) {
		int64_t k = tensor_get_i(t, i);

		if (!(g->has_ignore && k == g->ignore) && (k < 0 || k >= g->c))
			return node_err(c, -EINVAL, "target %lld at %zu is out of range for %lld classes", (long long)k, i,
					(long long)g->c);
	}
	return 0;
}

/* gx[n·D + d] = x[n, t[n, d], d] on the host (0 where ignored). */
static int host_gather(struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *t, int64_t N,
		       int64_t C, int64_t D, bool has_ignore, int64_t ignore, float *gx)
{
	(void)c;
	for (int64_t n = 0; n < N; n++)
		for (int64_t d = 0; d < D; d++) {
			int64_t k = tensor_get_i(t, (size_t)(n * D + d));

			gx[n * D + d] = has_ignore && k == ignore ? 0.0f : ((const float *)x->data)[(n * C + k) * D + d];
		}
	return 0;
}

/* The loss of gx (the gathered log-probabilities, [N, D]) into output 0. */
static int nll_finish(const struct onnx_ctx *c, const float *gx, const struct onnx_tensor *t,
		      const struct onnx_tensor *w, const struct loss_geom *g)
{
	double sum = 0, wsum = 0;
	struct onnx_tensor *y;
	int ret;

	if (g->red == 0)
		ret = out_alloc(c, 0, ONNX_FLOAT, t->ndim, t->dims);
	else
		ret = out_alloc(c, 0, ONNX_FLOAT, 0, NULL);
	if (ret)
		return ret < 0 ? ret : 0;
	y = node_out(c, 0);
	for (int64_t n = 0; n < g->n; n++)
		for (int64_t d = 0; d < g->d; d++) {
			size_t ti = (size_t)(n * g->d + d);
			int64_t k = tensor_get_i(t, ti);
			double l = 0, wk = 0;

			if (!(g->has_ignore && k == g->ignore)) {
				wk = w ? ((const float *)w->data)[k] : 1.0;
				l = -(double)gx[ti] * wk;
			}
			if (g->red == 0)
				((float *)y->data)[ti] = (float)l;
			sum += l;
			wsum += wk;
		}
	if (g->red == 1)
		((float *)y->data)[0] = (float)sum;
	else if (g->red == 2)
		((float *)y->data)[0] = (float)(sum / wsum);
	return 0;
}

/* The NLL of the log-probabilities x ([N, C, D]) into output 0: targets checked, gathered by gather. */
static int nll_of(struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *t,
		  const struct onnx_tensor *w, const struct loss_geom *g, nll_gather_fn gather)
{
	float *gx;
	int ret;

	if ((ret = targets_check(c, t, g)))
		return ret;
	gx = malloc((size_t)(g->n * g->d) * sizeof(float) + 1);
	if (!gx)
		return node_err(c, -ENOMEM, "out of memory");
	ret = gather(c, x, t, g->n, g->c, g->d, g->has_ignore, g->ignore, gx);
	if (!ret)
		ret = nll_finish(c, gx, t, w, g);
	free(gx);
	return ret;
}

int nll_loss(struct onnx_ctx *c, nll_gather_fn gather)
{
	const struct onnx_tensor *x, *t, *w = node_in(c, 2);
	struct loss_geom g;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "target", &t)) ||
	    (ret = loss_check(c, x, t, w, &g)))
		return ret;
	return nll_of(c, x, t, w, &g, gather);
}

static int host_nllloss(struct onnx_ctx *c)
{
	return nll_loss(c, host_gather);
}

/* LogSoftmax over axis 1 of x [N, C, D] in double precision. */
static int host_logp(struct onnx_ctx *c, const struct onnx_tensor *x, int64_t N, int64_t C, int64_t D, float *lp)
{
	(void)c;
	for (int64_t n = 0; n < N; n++)
		for (int64_t d = 0; d < D; d++) {
			const float *xs = (const float *)x->data + n * C * D + d;
			float *ls = lp + n * C * D + d;
			double mx = -INFINITY, s = 0;

			for (int64_t k = 0; k < C; k++)
				mx = xs[k * D] > mx ? xs[k * D] : mx;
			for (int64_t k = 0; k < C; k++)
				s += exp(xs[k * D] - mx);
			for (int64_t k = 0; k < C; k++)
				ls[k * D] = (float)(xs[k * D] - mx - log(s));
		}
	return 0;
}

int sce_loss(struct onnx_ctx *c, sce_logp_fn logp)
{
	const struct onnx_tensor *x, *t, *w = node_in(c, 2);
	struct onnx_tensor lp;
	struct loss_geom g;
	int ret;

	if ((ret = in_req(c, 0, "scores", &x)) || (ret = in_req(c, 1, "labels", &t)) ||
	    (ret = loss_check(c, x, t, w, &g)))
		return ret;
	if ((ret = onnx_tensor_alloc(&lp, ONNX_FLOAT, x->ndim, x->dims)))
		return node_err(c, ret, "cannot allocate the log-probabilities");
	ret = logp(c, x, g.n, g.c, g.d, lp.data);
	if (!ret) {
		struct onnx_tensor lpt = lp;	/* the log-probabilities, gathered on the host */

		ret = nll_of(c, &lpt, t, w, &g, host_gather);
	}
	if (!ret && c->n->n_out > 1 && c->n->out[1] >= 0) {
		onnx_tensor_release(node_out(c, 1));
		*node_out(c, 1) = lp;
		return 0;
	}
	onnx_tensor_release(&lp);
	return ret;
}

/* log_prob = LogSoftmax over axis 1, then the NLL of it; output 1 (optional) is log_prob. */
static int host_sceloss(struct onnx_ctx *c)
{
	return sce_loss(c, host_logp);
}

const onnx_kernel onnx_loss_kernels[OP_COUNT] = {
	[OP_NLLLOSS] = host_nllloss,
	[OP_SCELOSS] = host_sceloss,
};
