/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_nd.c - Conv over three spatial dimensions (5-D tensors, video models; issue #30) on the
 * device. libaccel's convolution is 2-D, so the depth taps become channels ("depth im2col"):
 *
 *   X2[n*OD + od][c*KD + a][h][w] = X[n][c][od*sd - pd + a*dd][h][w]   (0 outside the depth)
 *
 * and W [K][C/g][KD][KH][KW] is read as [K][(C/g)*KD][KH][KW]: the same bytes, and group g's channels
 * c*KD + a stay one contiguous block. One 2-D convolution of X2 over H and W with the node's strides,
 * pads and dilations there computes every output depth at once; its Y2 [N*OD][K][OH][OW] is Y
 * [N][K][OD][OH][OW] with the depth moved. X2 holds KD/sd times X's bytes: above 1 GiB, or what
 * libaccel refuses, the host kernel (ops_nd.c) runs it.
 */
#include <string.h>

#include "accel_util.h"
#include "ops_common.h"

#define CONV3D_MAX_COL_BYTES (1ull << 30)

/* X2 from X: every (n, od) plane set of C*KD channels, zeros for taps outside the depth. */
static void depth_im2col(const struct conv3d_geom *g3, const float *x, float *x2)
{
	const struct nd_geom *g = &g3->nd;
	size_t plane = (size_t)(g->in[1] * g->in[2]);

	for (int64_t n = 0; n < g3->n; n++)
		for (int64_t od = 0; od < g->out[0]; od++)
			for (int64_t ch = 0; ch < g3->c; ch++)
				for (int64_t a = 0; a < g->k[0]; a++) {
					int64_t id = od * g->s[0] - g->pb[0] + a * g->d[0];
					float *dst = x2 + (((size_t)(n * g->out[0] + od) * (size_t)g3->c + (size_t)ch) *
								   (size_t)g->k[0] + (size_t)a) * plane;

					if (id < 0 || id >= g->in[0])
						memset(dst, 0, plane * sizeof(*dst));
					else
						memcpy(dst, x + ((size_t)(n * g3->c + ch) * (size_t)g->in[0] + (size_t)id) * plane,
						       plane * sizeof(*dst));
				}
}

/* Y [N][K][OD][OH][OW] from Y2 [N*OD][K][OH][OW]. */
static void depth_to_5d(const struct conv3d_geom *g3, const float *y2, float *y)
{
	const struct nd_geom *g = &g3->nd;
	size_t plane = (size_t)(g->out[1] * g->out[2]);

	for (int64_t n = 0; n < g3->n; n++)
		for (int64_t od = 0; od < g->out[0]; od++)
			for (int64_t k = 0; k < g3->k; k++)
				memcpy(y + ((size_t)(n * g3->k + k) * (size_t)g->out[0] + (size_t)od) * plane,
				       y2 + ((size_t)(n * g->out[0] + od) * (size_t)g3->k + (size_t)k) * plane,
				       plane * sizeof(*y));
}

int accel_conv3d(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	struct accel_buffer *xb, *wb, *bb = NULL, *yb;
	struct abufs bs = { .n = 0 };
	struct conv3d_geom g3;
	struct conv_geom g2;
	const struct nd_geom *g = &g3.nd;
	int64_t od[5];
	double col;
	int ret;

	/* the host kernel reports malformed nodes with their reason */
	if (conv3d_geom(c, &g3))
		return ONNX_FALLBACK;
	col = (double)g3.n * (double)g->out[0] * (double)g3.c * (double)g->k[0] * (double)g->in[1] * (double)g->in[2] * 4;
	if (col > (double)CONV3D_MAX_COL_BYTES || !x->count)
		return ONNX_FALLBACK;
	memset(&g2, 0, sizeof(g2));
	g2.spatial = 2;
	g2.n = g3.n * g->out[0], g2.c = g3.c * g->k[0], g2.h = g->in[1], g2.w = g->in[2];
	g2.k = g3.k, g2.cg = g3.cg * g->k[0], g2.kh = g->k[1], g2.kw = g->k[2], g2.groups = g3.groups;
	g2.win = (struct win2d){ .kh = g->k[1], .kw = g->k[2], .sh = g->s[1], .sw = g->s[2], .dh = g->d[1],
				 .dw = g->d[2], .pt = g->pb[1], .pl = g->pb[2], .pb = g->pe[1], .pr = g->pe[2],
				 .oh = g->out[1], .ow = g->out[2] };
	od[0] = g3.n, od[1] = g3.k, od[2] = g->out[0], od[3] = g->out[1], od[4] = g->out[2];
	if (onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, 5, od))
		return node_err(c, -ENOMEM, "cannot allocate the output");
	if ((ret = abuf_new(c, &bs, NULL, (size_t)col, &xb)) || (ret = abuf_new(c, &bs, w->data, w->count * 4, &wb)) ||
	    (b && (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb))) ||
	    (ret = abuf_new(c, &bs, NULL, node_out(c, 0)->count * 4, &yb)))
		goto out;
	depth_im2col(&g3, x->data, accel_buffer_ptr(xb));
	ret = accel_conv_run(c, &g2, ACCEL_FP32, xb, wb, bb, yb, 0);
	if (!ret)
		depth_to_5d(&g3, accel_buffer_ptr(yb), node_out(c, 0)->data);
out:
	abufs_free(&bs);
	return ret;
}

/* The 2-D window of one stage of a separable 3-D pool: dimensions i (rows) and j (columns) of g; a
 * column dimension j < 0 is a window of 1 over a plane of @w columns. */
static void stage_geom(const struct nd_geom *g, int i, int j, int64_t n, int64_t ch, int64_t w, struct pool_geom *pg)
{
	memset(pg, 0, sizeof(*pg));
	pg->spatial = 2, pg->rank = 4, pg->n = n, pg->c = ch, pg->h = g->in[i], pg->w = j < 0 ? w : g->in[j];
	pg->win.kh = g->k[i], pg->win.sh = g->s[i], pg->win.dh = g->d[i];
	pg->win.pt = g->pb[i], pg->win.pb = g->pe[i], pg->win.oh = g->out[i];
	/* ceil_mode's last window past the end padding (nd_resolve counted it in out) */
	pg->win.ceil_extra_h = (g->out[i] - 1) * g->s[i] + (g->k[i] - 1) * g->d[i] + 1 - (g->in[i] + g->pb[i] + g->pe[i]);
	if (pg->win.ceil_extra_h < 0)
		pg->win.ceil_extra_h = 0;
	if (j < 0) {
		pg->win.kw = pg->win.sw = pg->win.dw = 1, pg->win.ow = w;
		return;
	}
	pg->win.kw = g->k[j], pg->win.sw = g->s[j], pg->win.dw = g->d[j];
	pg->win.pl = g->pb[j], pg->win.pr = g->pe[j], pg->win.ow = g->out[j];
	pg->win.ceil_extra_w = (g->out[j] - 1) * g->s[j] + (g->k[j] - 1) * g->d[j] + 1 - (g->in[j] + g->pb[j] + g->pe[j]);
	if (pg->win.ceil_extra_w < 0)
		pg->win.ceil_extra_w = 0;
}

/*
 * MaxPool / AveragePool of a 5-D X as two 2-D pools on the device: over H and W of every depth plane
 * (X viewed as [N, C*D, H, W]), then over D (the result viewed as [N*C, 1, D, OH*OW] with a KD x 1
 * window). A box window is separable: the max of maxima is the max; for the average, the window's
 * count is the product of its per-dimension counts (padding counted or not, the ceil_mode overhang
 * never), so the mean over D of the means over H x W is the 3-D mean. Dilations, and what libaccel
 * refuses, run on the host.
 */
int accel_pool3d(struct onnx_ctx *c, enum accel_pool_kind kind)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct accel_buffer *xb, *tb, *yb;
	struct abufs bs = { .n = 0 };
	struct pool_geom hw, dep;
	struct nd_geom g;
	int64_t od[5], N, C;
	int ret;

	if (pool3d_geom(c, kind == ACCEL_POOL_MAX, &g) || g.d[0] != 1 || g.d[1] != 1 || g.d[2] != 1 || !x->count)
		return ONNX_FALLBACK;	/* the host kernel reports malformed nodes */
	N = x->dims[0], C = x->dims[1];
	stage_geom(&g, 1, 2, N, C * g.in[0], 0, &hw);
	stage_geom(&g, 0, -1, N * C, 1, g.out[1] * g.out[2], &dep);
	od[0] = N, od[1] = C, od[2] = g.out[0], od[3] = g.out[1], od[4] = g.out[2];
	if (onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, 5, od))
		return node_err(c, -ENOMEM, "cannot allocate the output");
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) ||
	    (ret = abuf_new(c, &bs, NULL, (size_t)(N * C * g.in[0] * g.out[1] * g.out[2]) * 4, &tb)) ||
	    (ret = abuf_new(c, &bs, NULL, node_out(c, 0)->count * 4, &yb)))
		goto out;
	ret = accel_pool_run(c, &hw, kind, xb, tb);
	if (!ret)
		ret = accel_pool_run(c, &dep, kind, tb, yb);
	if (!ret)
		memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), node_out(c, 0)->count * 4);
out:
	abufs_free(&bs);
	return ret;
}
