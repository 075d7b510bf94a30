/* SPDX-License-Identifier: MIT */
/*
 * ops_nd.c - Conv, MaxPool and AveragePool over three spatial dimensions (5-D tensors; issue 30), host
 * kernels written from the ONNX specification: `pads`, `strides`, `dilations`, `auto_pad`, `group`,
 * `ceil_mode`, `count_include_pad`.  libaccel's conv2d and pool2d are 2-D, so these run on the host;
 * 1-D and 2-D stay with ops_host.c / ops_accel.c.
 */
#include <stdio.h>

#include "ops_common.h"

/* The window geometry of a 5-D X with kernel k (already known). */
static int nd_resolve(const struct onnx_ctx *c, const struct onnx_tensor *x, bool ceil_mode, struct nd_geom *g)
{
	int64_t v[2 * ND];
	char buf[16];
	const char *ap = attr_string(c->n->pb, "auto_pad", buf, sizeof(buf), "NOTSET");
	int n;

	for (int i = 0; i < ND; i++) {
		g->in[i] = x->dims[2 + i];
		g->s[i] = g->d[i] = 1;
		g->pb[i] = g->pe[i] = 0;
		if (g->k[i] < 1)
			return node_err(c, -EINVAL, "kernel dimension %d is %lld (>= 1)", i, (long long)g->k[i]);
	}
	if ((n = attr_ints(c->n->pb, "strides", v, ND)) >= 0) {
		if (n != ND)
			return node_err(c, -EINVAL, "strides has %d values (%d)", n, ND);
		memcpy(g->s, v, sizeof(g->s));
	}
	if ((n = attr_ints(c->n->pb, "dilations", v, ND)) >= 0) {
		if (n != ND)
			return node_err(c, -EINVAL, "dilations has %d values (%d)", n, ND);
		memcpy(g->d, v, sizeof(g->d));
	}
	if ((n = attr_ints(c->n->pb, "pads", v, 2 * ND)) >= 0) {
		if (n != 2 * ND)
			return node_err(c, -EINVAL, "pads has %d values (%d)", n, 2 * ND);
		memcpy(g->pb, v, sizeof(g->pb));
		memcpy(g->pe, v + ND, sizeof(g->pe));
	}
	for (int i = 0; i < ND; i++) {
		int64_t ext;

		if (g->s[i] < 1 || g->d[i] < 1 || g->pb[i] < 0 || g->pe[i] < 0 || g->s[i] > ONNX_MAX_DIM_SIZE ||
		    g->d[i] > ONNX_MAX_DIM_SIZE || g->pb[i] > ONNX_MAX_DIM_SIZE || g->pe[i] > ONNX_MAX_DIM_SIZE)
			return node_err(c, -EINVAL, "strides, dilations (>= 1) or pads (>= 0) out of range at %d", i);
		ext = (g->k[i] - 1) * g->d[i] + 1;
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t o = (g->in[i] + g->s[i] - 1) / g->s[i], tot = (o - 1) * g->s[i] + ext - g->in[i];

			tot = tot < 0 ? 0 : tot;
			g->pb[i] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
			g->pe[i] = tot - g->pb[i];
		} else if (!strcmp(ap, "VALID")) {
			g->pb[i] = g->pe[i] = 0;
		} else if (strcmp(ap, "NOTSET")) {
			return node_err(c, -EINVAL, "auto_pad '%s' (NOTSET, SAME_UPPER, SAME_LOWER, VALID)", ap);
		}
		if (g->in[i] + g->pb[i] + g->pe[i] < ext)
			return node_err(c, -EINVAL, "the window (%lld) is larger than padded dimension %d (%lld)",
					(long long)ext, i, (long long)(g->in[i] + g->pb[i] + g->pe[i]));
		g->out[i] = (g->in[i] + g->pb[i] + g->pe[i] - ext) / g->s[i] + 1;
		if (ceil_mode && (g->in[i] + g->pb[i] + g->pe[i] - ext) % g->s[i] &&
		    g->out[i] * g->s[i] < g->in[i] + g->pb[i])	/* the extra window starts inside */
			g->out[i]++;
	}
	return 0;
}

int conv3d_geom(struct onnx_ctx *c, struct conv3d_geom *g3)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	int64_t ks[ND];

	g3->groups = attr_int(c->n->pb, "group", 1);
	if (!x || !w || x->ndim != 5 || w->ndim != 5 || x->dtype != ONNX_FLOAT || w->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X and W must both be 5-D floating-point tensors");
	g3->n = x->dims[0], g3->c = x->dims[1], g3->k = w->dims[0], g3->cg = w->dims[1];
	if (g3->groups < 1 || g3->c != g3->cg * g3->groups || g3->k % g3->groups)
		return node_err(c, -EINVAL, "channels: X has %lld, W is %lldx%lld, group %lld", (long long)g3->c,
				(long long)g3->k, (long long)g3->cg, (long long)g3->groups);
	if (b && (b->ndim != 1 || b->dims[0] != g3->k || b->dtype != ONNX_FLOAT))
		return node_err(c, -EINVAL, "B must be a [%lld] tensor", (long long)g3->k);
	memcpy(g3->nd.k, w->dims + 2, sizeof(g3->nd.k));
	if (attr_ints(c->n->pb, "kernel_shape", ks, ND) >= 0 && memcmp(ks, g3->nd.k, sizeof(ks)))
		return node_err(c, -EINVAL, "kernel_shape does not match W");
	return nd_resolve(c, x, false, &g3->nd);
}

int host_conv3d(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	int64_t groups, N, C, K, cg, kg, od[5];
	struct conv3d_geom g3;
	struct nd_geom g;
	float *y;
	int ret;

	if ((ret = conv3d_geom(c, &g3)))
		return ret;
	g = g3.nd;
	N = g3.n, C = g3.c, K = g3.k, cg = g3.cg, groups = g3.groups;
	kg = K / groups;
	od[0] = N, od[1] = K, od[2] = g.out[0], od[3] = g.out[1], od[4] = g.out[2];
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, 5, od)))
		return ret < 0 ? ret : 0;
	y = node_out(c, 0)->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++) {
			int64_t g0 = k / kg;

			for (int64_t o0 = 0; o0 < g.out[0]; o0++)
				for (int64_t o1 = 0; o1 < g.out[1]; o1++)
					for (int64_t o2 = 0; o2 < g.out[2]; o2++) {
						double acc = b ? ((const float *)b->data)[k] : 0;

						for (int64_t ci = 0; ci < cg; ci++)
							for (int64_t a0 = 0; a0 < g.k[0]; a0++) {
								int64_t i0 = o0 * g.s[0] - g.pb[0] + a0 * g.d[0];

								if (i0 < 0 || i0 >= g.in[0])
									continue;
								for (int64_t a1 = 0; a1 < g.k[1]; a1++) {
									int64_t i1 = o1 * g.s[1] - g.pb[1] + a1 * g.d[1];

									if (i1 < 0 || i1 >= g.in[1])
										continue;
									for (int64_t a2 = 0; a2 < g.k[2]; a2++) {
										int64_t i2 = o2 * g.s[2] - g.pb[2] + a2 * g.d[2];

										if (i2 < 0 || i2 >= g.in[2])
											continue;
										acc += (double)((const float *)x->data)[(((n * C + g0 * cg + ci) * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2] *
										       ((const float *)w->data)[(((k * cg + ci) * g.k[0] + a0) * g.k[1] + a1) * g.k[2] + a2];
									}
								}
							}
						if (c->n->fused_relu && acc < 0)
							acc = 0;
						if (c->n->fused_clamp)
							acc = acc < c->n->clamp_lo ? c->n->clamp_lo : acc > c->n->clamp_hi ? c->n->clamp_hi : acc;
						y[(((n * K + k) * g.out[0] + o0) * g.out[1] + o1) * g.out[2] + o2] = (float)acc;
					}
		}
	return 0;
}

int pool3d_geom(struct onnx_ctx *c, bool max, struct nd_geom *g)
{
	const struct onnx_tensor *x = node_in(c, 0);
	int ret;

	if (!x || x->ndim != 5 || x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X must be a 5-D floating-point tensor");
	if (c->n->n_out > 1 && c->n->out[1] >= 0)
		return node_err(c, -EOPNOTSUPP, "the Indices output is not supported");
	if (attr_ints(c->n->pb, "kernel_shape", g->k, ND) != ND)
		return node_err(c, -EINVAL, "kernel_shape must have %d values", ND);
	if ((ret = nd_resolve(c, x, attr_int(c->n->pb, "ceil_mode", 0) != 0, g)))
		return ret;
	if (!max && (g->d[0] != 1 || g->d[1] != 1 || g->d[2] != 1))
		return node_err(c, -EINVAL, "AveragePool has no dilations before opset 19");
	return 0;
}

int host_pool3d(struct onnx_ctx *c, bool max)
{
	const struct onnx_tensor *x = node_in(c, 0);
	bool incl = attr_int(c->n->pb, "count_include_pad", 0) != 0;
	int64_t od[5], NC;
	struct nd_geom g;
	int ret;

	if ((ret = pool3d_geom(c, max, &g)))
		return ret;
	NC = x->dims[0] * x->dims[1];
	od[0] = x->dims[0], od[1] = x->dims[1], od[2] = g.out[0], od[3] = g.out[1], od[4] = g.out[2];
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, 5, od)))
		return ret < 0 ? ret : 0;
	for (int64_t p = 0; p < NC; p++)
		for (int64_t o0 = 0; o0 < g.out[0]; o0++)
			for (int64_t o1 = 0; o1 < g.out[1]; o1++)
				for (int64_t o2 = 0; o2 < g.out[2]; o2++) {
					double acc = max ? -INFINITY : 0;
					int64_t cnt = 0, o[ND] = { o0, o1, o2 }, lo[ND], hi[ND];

					for (int i = 0; i < ND; i++) {	/* the padded window, clipped to the end pads */
						lo[i] = o[i] * g.s[i] - g.pb[i];
						hi[i] = lo[i] + (g.k[i] - 1) * g.d[i];
						if (hi[i] > g.in[i] - 1 + g.pe[i])
							hi[i] = g.in[i] - 1 + g.pe[i];
					}
					for (int64_t i0 = lo[0]; i0 <= hi[0]; i0 += g.d[0])
						for (int64_t i1 = lo[1]; i1 <= hi[1]; i1 += g.d[1])
							for (int64_t i2 = lo[2]; i2 <= hi[2]; i2 += g.d[2]) {
								bool inside = i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] &&
									      i2 >= 0 && i2 < g.in[2];
								double v;

								if (!inside) {
									cnt += incl;
									continue;
								}
								v = ((const float *)x->data)[((p * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2];
								acc = max ? (v > acc || v != v ? v : acc) : acc + v;
								cnt++;
							}
					((float *)node_out(c, 0)->data)[((p * g.out[0] + o0) * g.out[1] + o1) * g.out[2] + o2] =
						(float)(max ? acc : acc / (double)(cnt ? cnt : 1));
				}
	return 0;
}
