/* SPDX-License-Identifier: MIT */
/*
 * ops_detect.c - the detection and sampling operators of issue 30, host kernels written from the ONNX
 * specification: NonMaxSuppression (greedy, per batch and class), GridSample (opset 16: bilinear,
 * nearest, bicubic; zeros, border, reflection padding) and Unique (opset 11).  Data-dependent control
 * and gathers: no device lowering.
 */
#include <stdio.h>

#include "ops_common.h"

/* ---- NonMaxSuppression ---- */

static double iou(const float *a, const float *b, bool center)
{
	double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2, ih, iw, inter, uni;

	if (center) {	/* [x_center, y_center, width, height] */
		ax1 = a[0] - a[2] / 2, ax2 = a[0] + a[2] / 2, ay1 = a[1] - a[3] / 2, ay2 = a[1] + a[3] / 2;
		bx1 = b[0] - b[2] / 2, bx2 = b[0] + b[2] / 2, by1 = b[1] - b[3] / 2, by2 = b[1] + b[3] / 2;
	} else {	/* [y1, x1, y2, x2], any diagonal pair of corners */
		ay1 = fmin(a[0], a[2]), ay2 = fmax(a[0], a[2]), ax1 = fmin(a[1], a[3]), ax2 = fmax(a[1], a[3]);
		by1 = fmin(b[0], b[2]), by2 = fmax(b[0], b[2]), bx1 = fmin(b[1], b[3]), bx2 = fmax(b[1], b[3]);
	}
	ih = fmin(ay2, by2) - fmax(ay1, by1);
	iw = fmin(ax2, bx2) - fmax(ax1, bx1);
	if (ih <= 0 || iw <= 0)
		return 0;
	inter = ih * iw;
	uni = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter;
	return uni > 0 ? inter / uni : 0;
}

static _Thread_local const float *nms_scores;

static int nms_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	if (nms_scores[a] != nms_scores[b])
		return nms_scores[a] < nms_scores[b] ? 1 : -1;
	return a < b ? -1 : a > b;	/* ties: the lower index first */
}

static int host_nms(struct onnx_ctx *c)
{
	const struct onnx_tensor *boxes, *scores, *mo = node_in(c, 2), *it = node_in(c, 3), *st = node_in(c, 4);
	bool center = attr_int(c->n->pb, "center_point_box", 0) != 0;
	int64_t maxo = 0, nb, nc, ns, n_sel = 0, *sel = NULL, *order = NULL, dims[2];
	double iou_th = 0, sc_th = -INFINITY;
	size_t cap = 0;
	int ret;

	if ((ret = in_req(c, 0, "boxes", &boxes)) || (ret = in_req(c, 1, "scores", &scores)))
		return ret;
	if (boxes->ndim != 3 || boxes->dims[2] != 4 || boxes->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "boxes must be a floating-point [batches, boxes, 4] tensor");
	if (scores->ndim != 3 || scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1] ||
	    scores->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "scores must be a floating-point [%lld, classes, %lld] tensor",
				(long long)boxes->dims[0], (long long)boxes->dims[1]);
	if ((mo && mo->count > 1) || (it && it->count > 1) || (st && st->count > 1))
		return node_err(c, -EINVAL, "max_output_boxes_per_class, iou_threshold and score_threshold are scalars");
	if (mo && mo->count)
		maxo = tensor_get_i(mo, 0);
	if (it && it->count)
		iou_th = tensor_get(it, 0);
	if (st && st->count)
		sc_th = tensor_get(st, 0);
	if (iou_th < 0 || iou_th > 1)
		return node_err(c, -EINVAL, "iou_threshold %g (0 to 1)", iou_th);
	nb = boxes->dims[0], nc = scores->dims[1], ns = boxes->dims[1];
	order = malloc((size_t)(ns ? ns : 1) * sizeof(*order));
	if (!order)
		return node_err(c, -ENOMEM, "out of memory");
	for (int64_t b = 0; b < nb && maxo > 0; b++)
		for (int64_t k = 0; k < nc; k++) {
			const float *sc = (const float *)scores->data + (b * nc + k) * ns;
			const float *bx = (const float *)boxes->data + b * ns * 4;
			int64_t n = 0, first = n_sel;

			for (int64_t i = 0; i < ns; i++)
				if (sc[i] > sc_th)
					order[n++] = i;
			nms_scores = sc;
			qsort(order, (size_t)n, sizeof(*order), nms_cmp);
			for (int64_t i = 0; i < n && n_sel - first < maxo; i++) {
				bool keep = true;

				for (int64_t j = first; j < n_sel && keep; j++)
					keep = iou(bx + order[i] * 4, bx + sel[j * 3 + 2] * 4, center) <= iou_th;
				if (!keep)
					continue;
				if ((size_t)n_sel == cap) {
					int64_t *ns2 = realloc(sel, (cap = cap ? 2 * cap : 64) * 3 * sizeof(*sel));

					if (!ns2) {
						free(sel);
						free(order);
						return node_err(c, -ENOMEM, "out of memory");
					}
					sel = ns2;
				}
				sel[n_sel * 3] = b, sel[n_sel * 3 + 1] = k, sel[n_sel * 3 + 2] = order[i];
				n_sel++;
			}
		}
	free(order);
	dims[0] = n_sel, dims[1] = 3;
	if ((ret = out_alloc(c, 0, ONNX_INT64, 2, dims)) == 0 && n_sel)
		memcpy(node_out(c, 0)->data, sel, (size_t)n_sel * 3 * sizeof(*sel));
	free(sel);
	return ret < 0 ? ret : 0;
}

/* ---- GridSample ---- */

enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_FAR 1125899906842624.0	/* 2^50: a sampling coordinate's bound */

static double gs_reflect(double x, double lo, double hi)
{
	double rng = hi - lo, d, r;
	int64_t n;

	if (rng <= 0)
		return lo;
	if (x < lo) {
		d = lo - x, n = (int64_t)(d / rng), r = d - (double)n * rng;
		return n % 2 == 0 ? lo + r : hi - r;
	}
	if (x > hi) {
		d = x - hi, n = (int64_t)(d / rng), r = d - (double)n * rng;
		return n % 2 == 0 ? hi - r : lo + r;
	}
	return x;
}

struct gs {
	const float *img;
	int64_t h, w;
	enum gs_pad pad;
	double lo_x, lo_y, hi_x, hi_y;
};

static double gs_pixel(const struct gs *g, int64_t r, int64_t col)
{
	if (g->pad == GS_ZEROS)
		return r < 0 || r >= g->h || col < 0 || col >= g->w ? 0 : g->img[r * g->w + col];
	if (g->pad == GS_BORDER) {
		col = col < 0 ? 0 : col >= g->w ? g->w - 1 : col;
		r = r < 0 ? 0 : r >= g->h ? g->h - 1 : r;
	} else {
		col = (int64_t)gs_reflect((double)col, g->lo_x, g->hi_x);
		r = (int64_t)gs_reflect((double)r, g->lo_y, g->hi_y);
		col = col < 0 ? 0 : col >= g->w ? g->w - 1 : col;
		r = r < 0 ? 0 : r >= g->h ? g->h - 1 : r;
	}
	return g->img[r * g->w + col];
}

static void cubic_coeffs(double x, double *k)
{
	const double a = -0.75;

	k[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
	k[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
	k[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
	k[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

static int host_gridsample(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *grid;
	char mb[16], pb[16];
	const char *mode = attr_string(c->n->pb, "mode", mb, sizeof(mb), "bilinear");
	const char *pad = attr_string(c->n->pb, "padding_mode", pb, sizeof(pb), "zeros");
	bool ac = attr_int(c->n->pb, "align_corners", 0) != 0;
	int m = !strcmp(mode, "bilinear") ? 0 : !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "bicubic") ? 2 : -1;
	int64_t dims[4], N, C, oh, ow;
	struct gs g;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "grid", &grid)))
		return ret;
	if (m < 0)
		return node_err(c, -EINVAL, "mode '%s' (bilinear, nearest or bicubic)", mode);
	g.pad = !strcmp(pad, "zeros") ? GS_ZEROS : !strcmp(pad, "border") ? GS_BORDER : GS_REFLECTION;
	if (g.pad == GS_REFLECTION && strcmp(pad, "reflection"))
		return node_err(c, -EINVAL, "padding_mode '%s' (zeros, border or reflection)", pad);
	if (x->ndim != 4 || x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X must be a floating-point [N, C, H, W] tensor (rank %u)", x->ndim);
	if (grid->ndim != 4 || grid->dims[0] != x->dims[0] || grid->dims[3] != 2 || grid->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "grid must be a floating-point [%lld, H_out, W_out, 2] tensor",
				(long long)x->dims[0]);
	N = x->dims[0], C = x->dims[1], g.h = x->dims[2], g.w = x->dims[3], oh = grid->dims[1], ow = grid->dims[2];
	dims[0] = N, dims[1] = C, dims[2] = oh, dims[3] = ow;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, 4, dims)))
		return ret < 0 ? ret : 0;
	g.lo_x = ac ? 0 : -0.5, g.lo_y = ac ? 0 : -0.5;
	g.hi_x = ac ? (double)g.w - 1 : (double)g.w - 0.5, g.hi_y = ac ? (double)g.h - 1 : (double)g.h - 0.5;
	for (int64_t n = 0; n < N; n++)
		for (int64_t ch = 0; ch < C; ch++) {
			g.img = (const float *)x->data + (n * C + ch) * g.h * g.w;
			for (int64_t i = 0; i < oh * ow; i++) {
				const float *gp = (const float *)grid->data + (n * oh * ow + i) * 2;
				double px = ac ? (gp[0] + 1) / 2 * (double)(g.w - 1) : ((gp[0] + 1) * (double)g.w - 1) / 2;
				double py = ac ? (gp[1] + 1) / 2 * (double)(g.h - 1) : ((gp[1] + 1) * (double)g.h - 1) / 2;
				double v;

				/* a grid of any floats: NaN, infinities and values far outside the image are
				 * brought into what an int64_t holds exactly (beyond 2^50 nothing is left to
				 * interpolate or fold; NaN samples as the lowest corner) */
				px = fmin(fmax(px, -GS_FAR), GS_FAR);
				py = fmin(fmax(py, -GS_FAR), GS_FAR);
				if (m == 1) {
					px = nearbyint(px);
					py = nearbyint(py);
				}
				if (px < g.lo_x || px > g.hi_x || py < g.lo_y || py > g.hi_y) {
					if (g.pad == GS_BORDER) {
						px = fmin(fmax(px, 0), (double)g.w - 1);
						py = fmin(fmax(py, 0), (double)g.h - 1);
					} else if (g.pad == GS_REFLECTION) {
						px = gs_reflect(px, g.lo_x, g.hi_x);
						py = gs_reflect(py, g.lo_y, g.hi_y);
					}
				}
				if (m == 1) {
					v = gs_pixel(&g, (int64_t)py, (int64_t)px);
				} else if (m == 0) {
					double x1 = floor(px), y1 = floor(py), dx = px - x1, dy = py - y1;

					v = (1 - dy) * ((1 - dx) * gs_pixel(&g, (int64_t)y1, (int64_t)x1) +
							dx * gs_pixel(&g, (int64_t)y1, (int64_t)x1 + 1)) +
					    dy * ((1 - dx) * gs_pixel(&g, (int64_t)y1 + 1, (int64_t)x1) +
						  dx * gs_pixel(&g, (int64_t)y1 + 1, (int64_t)x1 + 1));
				} else {
					double x0 = floor(px) - 1, y0 = floor(py) - 1, kx[4], ky[4];

					cubic_coeffs(px - x0 - 1, kx);
					cubic_coeffs(py - y0 - 1, ky);
					v = 0;
					for (int a = 0; a < 4; a++) {
						double row = 0;

						for (int b = 0; b < 4; b++)
							row += kx[b] * gs_pixel(&g, (int64_t)y0 + a, (int64_t)x0 + b);
						v += ky[a] * row;
					}
				}
				((float *)node_out(c, 0)->data)[(n * C + ch) * oh * ow + i] = (float)v;
			}
		}
	return 0;
}

/* ---- Unique ---- */

struct uq {
	const struct onnx_tensor *x;
	int64_t outer, n, inner;	/* slice i: x[o, i, in] for every o, in */
};
static _Thread_local const struct uq *uq_cur;

static int uq_slice_cmp(const struct uq *u, int64_t a, int64_t b)
{
	for (int64_t o = 0; o < u->outer; o++)
		for (int64_t in = 0; in < u->inner; in++) {
			double va = tensor_get(u->x, (size_t)((o * u->n + a) * u->inner + in));
			double vb = tensor_get(u->x, (size_t)((o * u->n + b) * u->inner + in));

			if (va != vb)
				return va < vb ? -1 : 1;
		}
	return 0;
}

static int uq_sort_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	int r = uq_slice_cmp(uq_cur, a, b);

	return r ? r : (a < b ? -1 : a > b);
}

static int host_unique(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	const Onnx__AttributeProto *ap = attr_find(c->n->pb, "axis");
	bool sorted = attr_int(c->n->pb, "sorted", 1) != 0;
	int64_t axis = 0, nu = 0, *first, *inv, *cnt, *rank, dims[ONNX_MAX_DIMS];
	struct uq u = { 0 };
	unsigned nd;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	u.x = x;
	u.outer = u.inner = 1;
	if (ap) {
		if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x->ndim, &axis)))
			return ret;
		for (unsigned d = 0; d < (unsigned)axis; d++)
			u.outer *= x->dims[d];
		for (unsigned d = (unsigned)axis + 1; d < x->ndim; d++)
			u.inner *= x->dims[d];
		u.n = x->dims[axis];
		nd = x->ndim;
		memcpy(dims, x->dims, sizeof(dims));
	} else {
		u.n = (int64_t)x->count;
		nd = 1;
	}
	first = malloc((size_t)(u.n + 1) * sizeof(int64_t));
	inv = malloc((size_t)(u.n + 1) * sizeof(int64_t));
	cnt = calloc((size_t)(u.n + 1), sizeof(int64_t));
	rank = malloc((size_t)(u.n + 1) * sizeof(int64_t));
	if (!first || !inv || !cnt || !rank) {
		ret = node_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (int64_t i = 0; i < u.n; i++) {	/* first occurrences, in order */
		int64_t k = 0;

		while (k < nu && uq_slice_cmp(&u, first[k], i))
			k++;
		if (k == nu)
			first[nu++] = i;
		inv[i] = k;
		cnt[k]++;
	}
	if (sorted) {	/* reorder the unique slices ascending, lexicographically */
		int64_t *perm = malloc((size_t)(nu + 1) * sizeof(int64_t)), *c2 = malloc((size_t)(nu + 1) * sizeof(int64_t));

		if (!perm || !c2) {
			free(perm);
			free(c2);
			ret = node_err(c, -ENOMEM, "out of memory");
			goto out;
		}
		memcpy(perm, first, (size_t)nu * sizeof(int64_t));
		uq_cur = &u;
		qsort(perm, (size_t)nu, sizeof(int64_t), uq_sort_cmp);
		for (int64_t k = 0; k < nu; k++)	/* old unique number of sorted position k */
			for (int64_t j = 0; j < nu; j++)
				if (first[j] == perm[k])
					rank[j] = k;
		for (int64_t k = 0; k < nu; k++)
			c2[rank[k]] = cnt[k];
		for (int64_t i = 0; i < u.n; i++)
			inv[i] = rank[inv[i]];
		memcpy(first, perm, (size_t)nu * sizeof(int64_t));
		memcpy(cnt, c2, (size_t)nu * sizeof(int64_t));
		free(perm);
		free(c2);
	}
	dims[ap ? axis : 0] = nu;
	if ((ret = out_alloc(c, 0, x->dtype, nd, dims)) < 0 || (ret = out_alloc(c, 1, ONNX_INT64, 1, &nu)) < 0 ||
	    (ret = out_alloc(c, 2, ONNX_INT64, 1, &u.n)) < 0 || (ret = out_alloc(c, 3, ONNX_INT64, 1, &nu)) < 0)
		goto out;
	es = onnx_dtype_size(x->dtype);
	for (int64_t o = 0; o < u.outer; o++)
		for (int64_t k = 0; k < nu; k++)
			memcpy((char *)node_out(c, 0)->data + (size_t)((o * nu + k) * u.inner) * es,
			       (const char *)x->data + (size_t)((o * u.n + first[k]) * u.inner) * es, (size_t)u.inner * es);
	if (c->n->n_out > 1 && c->n->out[1] >= 0)
		memcpy(node_out(c, 1)->data, first, (size_t)nu * sizeof(int64_t));
	if (c->n->n_out > 2 && c->n->out[2] >= 0)
		memcpy(node_out(c, 2)->data, inv, (size_t)u.n * sizeof(int64_t));
	if (c->n->n_out > 3 && c->n->out[3] >= 0)
		memcpy(node_out(c, 3)->data, cnt, (size_t)nu * sizeof(int64_t));
	ret = 0;
out:
	free(first);
	free(inv);
	free(cnt);
	free(rank);
	return ret;
}

const onnx_kernel onnx_detect_kernels[OP_COUNT] = {
	[OP_NMS] = host_nms,
	[OP_GRIDSAMPLE] = host_gridsample,
	[OP_UNIQUE] = host_unique,
};
