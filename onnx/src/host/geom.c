/* SPDX-License-Identifier: MIT */
/* geom.c - shape inference shared by the host and accel kernels: Conv/pool geometry, MatMul batching. */
#include <string.h>

#include "geom.h"

int conv_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *w,
	      struct conv_geom *g)
{
	int64_t ks[2];
	int nk;

	memset(g, 0, sizeof(*g));
	if (!x || !w)
		return node_err(c, -EINVAL, "needs X and W");
	if (x->ndim == 5 || w->ndim == 5)
		return node_err(c, -EOPNOTSUPP, "3-D convolution (5-D tensors) is not supported");
	if ((x->ndim != 3 && x->ndim != 4) || w->ndim != x->ndim)
		return node_err(c, -EINVAL, "X and W must both be 3-D or 4-D (got %u-D and %u-D)", x->ndim, w->ndim);
	g->spatial = x->ndim - 2;
	g->n = x->dims[0];
	g->c = x->dims[1];
	g->h = g->spatial == 2 ? x->dims[2] : 1;
	g->w = x->dims[x->ndim - 1];
	g->k = w->dims[0];
	g->cg = w->dims[1];
	g->kh = g->spatial == 2 ? w->dims[2] : 1;
	g->kw = w->dims[w->ndim - 1];
	g->groups = attr_int(c->n->pb, "group", 1);
	if (g->groups < 1 || g->groups > (g->c ? g->c : 1) || g->c != g->cg * g->groups || g->k % g->groups)
		return node_err(c, -EINVAL, "channels: X has %lld, W is %lldx%lld, group %lld", (long long)g->c,
				(long long)g->k, (long long)g->cg, (long long)g->groups);
	nk = attr_ints(c->n->pb, "kernel_shape", ks, 2);
	if (nk >= 0 && (nk != (int)g->spatial || (g->spatial == 2 ? ks[0] != g->kh || ks[1] != g->kw : ks[0] != g->kw)))
		return node_err(c, -EINVAL, "kernel_shape does not match W");
	return win_resolve(c, g->spatial, g->h, g->w, g->kh, g->kw, false, &g->win);
}

void conv_out_dims(const struct conv_geom *g, int64_t *dims, unsigned *ndim)
{
	dims[0] = g->n;
	dims[1] = g->k;
	if (g->spatial == 2) {
		dims[2] = g->win.oh;
		dims[3] = g->win.ow;
		*ndim = 4;
	} else {
		dims[2] = g->win.ow;
		*ndim = 3;
	}
}

int pool_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, bool global, struct pool_geom *g)
{
	int64_t ks[2];
	int nk;

	memset(g, 0, sizeof(*g));
	if (x->ndim == 5 && !global)
		return node_err(c, -EOPNOTSUPP, "3-D pooling (5-D tensors) is not supported");
	if (x->ndim < 3 || x->ndim > 5)
		return node_err(c, -EINVAL, "X must be 3-D to 5-D (got %u-D)", x->ndim);
	g->rank = x->ndim;
	g->spatial = x->ndim == 3 ? 1 : 2;
	g->n = x->dims[0];
	g->c = x->dims[1];
	g->h = x->ndim == 5 ? x->dims[2] * x->dims[3] : g->spatial == 2 ? x->dims[2] : 1;
	g->w = x->dims[x->ndim - 1];
	if (global) {
		g->win.kh = g->h;
		g->win.kw = g->w;
		g->win.sh = g->win.sw = g->win.dh = g->win.dw = 1;
		g->win.oh = g->win.ow = 1;
		return 0;
	}
	nk = attr_ints(c->n->pb, "kernel_shape", ks, 2);
	if (nk != (int)g->spatial)
		return node_err(c, -EINVAL, "kernel_shape must have %u values", g->spatial);
	if (g->spatial == 1) {
		ks[1] = ks[0];
		ks[0] = 1;
	}
	if (attr_int(c->n->pb, "storage_order", 0) != 0)
		return node_err(c, -EOPNOTSUPP, "storage_order 1 is not supported");
	if (c->n->n_out > 1 && c->n->out[1] >= 0)
		return node_err(c, -EOPNOTSUPP, "the Indices output is not supported");
	return win_resolve(c, g->spatial, g->h, g->w, ks[0], ks[1], attr_int(c->n->pb, "ceil_mode", 0) != 0,
			   &g->win);
}

void pool_out_dims(const struct pool_geom *g, int64_t *dims, unsigned *ndim)
{
	dims[0] = g->n;
	dims[1] = g->c;
	if (g->rank == 5) {	/* global only */
		dims[2] = dims[3] = dims[4] = 1;
		*ndim = 5;
	} else if (g->spatial == 2) {
		dims[2] = g->win.oh;
		dims[3] = g->win.ow;
		*ndim = 4;
	} else {
		dims[2] = g->win.ow;
		*ndim = 3;
	}
}

int matmul_geom(const struct onnx_ctx *c, const struct onnx_tensor *a, const struct onnx_tensor *b,
		struct matmul_geom *g)
{
	int64_t ad[ONNX_MAX_DIMS], bd[ONNX_MAX_DIMS];
	unsigned an = a->ndim, bn = b->ndim, nb;

	memset(g, 0, sizeof(*g));
	if (!an || !bn)
		return node_err(c, -EINVAL, "MatMul operands must be at least 1-D");
	memcpy(ad, a->dims, sizeof(ad));
	memcpy(bd, b->dims, sizeof(bd));
	g->a_vec = an == 1;
	g->b_vec = bn == 1;
	if (g->a_vec) {
		ad[1] = ad[0];
		ad[0] = 1;
		an = 2;
	}
	if (g->b_vec) {
		bd[1] = 1;
		bn = 2;
	}
	g->m = ad[an - 2];
	g->k = ad[an - 1];
	g->nn = bd[bn - 1];
	if (bd[bn - 2] != g->k)
		return node_err(c, -EINVAL, "inner dimensions differ (%lld vs %lld)", (long long)g->k,
				(long long)bd[bn - 2]);
	nb = (an > bn ? an : bn) - 2;
	if (nb + 2 > ONNX_MAX_DIMS)
		return node_err(c, -EINVAL, "too many dimensions");
	g->nbatch = nb;
	g->batch = 1;
	for (unsigned i = 0; i < nb; i++) {
		int64_t da = (int)i - (int)(nb - (an - 2)) >= 0 ? ad[i - (nb - (an - 2))] : 1;
		int64_t db = (int)i - (int)(nb - (bn - 2)) >= 0 ? bd[i - (nb - (bn - 2))] : 1;

		if (da != db && da != 1 && db != 1)
			return node_err(c, -EINVAL, "batch dimensions %lld and %lld do not broadcast", (long long)da,
					(long long)db);
		g->bdims[i] = da == 1 ? db : da;	/* numpy: a 1 takes the other size, 0 included */
		g->adims[i] = da;
		g->bbdims[i] = db;
		g->batch *= g->bdims[i];
	}
	/* output dims */
	g->out_ndim = 0;
	for (unsigned i = 0; i < nb; i++)
		g->out_dims[g->out_ndim++] = g->bdims[i];
	if (!g->a_vec)
		g->out_dims[g->out_ndim++] = g->m;
	if (!g->b_vec)
		g->out_dims[g->out_ndim++] = g->nn;
	return 0;
}

void matmul_batch_offsets(const struct matmul_geom *g, int64_t bi, int64_t *aoff, int64_t *boff)
{
	int64_t ai = 0, bj = 0, as = 1, bs = 1;

	for (int i = (int)g->nbatch - 1; i >= 0; i--) {
		int64_t idx = bi % g->bdims[i];

		bi /= g->bdims[i];
		ai += (g->adims[i] == 1 ? 0 : idx) * as;
		bj += (g->bbdims[i] == 1 ? 0 : idx) * bs;
		as *= g->adims[i];
		bs *= g->bbdims[i];
	}
	*aoff = ai * g->m * g->k;
	*boff = bj * g->k * g->nn;
}
