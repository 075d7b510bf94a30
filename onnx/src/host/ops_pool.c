/* SPDX-License-Identifier: MIT */
/*
 * ops_pool.c - issue 30's pooling relatives, host kernels written from the ONNX specification: MaxPool
 * with its Indices output (`storage_order` 0 row-major, 1 column-major; flat indices over the whole
 * tensor), MaxUnpool (`output_shape` or the default size) and RoiAlign (opsets 10 and 16: `mode`
 * avg/max, `coordinate_transformation_mode` half_pixel (16's default) or output_half_pixel (opset 10's
 * only behaviour), `sampling_ratio`, `spatial_scale`; the bilinear sampling rules of the
 * specification's reference and ONNX Runtime).  Gathers by data-dependent positions: no device lowering.
 */
#include <stdio.h>

#include "ops_common.h"

/* MaxPool of a 3-D or 4-D X with the Indices output: flat indices into X, the row-major (storage_order 0) or
 * column-major (1) position within the plane plus the plane's offset; ties: the first maximum. */
int host_maxpool_indices(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t ks[2], so = attr_int(c->n->pb, "storage_order", 0), od[4], h, w, nc;
	unsigned sp;
	struct win2d g;
	float *y;
	int64_t *ind;
	int nk, ret;

	if (!x || (x->ndim != 3 && x->ndim != 4) || x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X must be a 3-D or 4-D floating-point tensor with the Indices output");
	if (so != 0 && so != 1)
		return node_err(c, -EINVAL, "storage_order %lld (0 or 1)", (long long)so);
	sp = x->ndim - 2;
	nk = attr_ints(c->n->pb, "kernel_shape", ks, 2);
	if (nk != (int)sp)
		return node_err(c, -EINVAL, "kernel_shape must have %u values", sp);
	if (sp == 1)
		ks[1] = ks[0], ks[0] = 1;
	h = sp == 2 ? x->dims[2] : 1;
	w = x->dims[x->ndim - 1];
	if ((ret = win_resolve(c, sp, h, w, ks[0], ks[1], attr_int(c->n->pb, "ceil_mode", 0) != 0, &g)))
		return ret;
	od[0] = x->dims[0], od[1] = x->dims[1];
	if (sp == 2)
		od[2] = g.oh, od[3] = g.ow;
	else
		od[2] = g.ow;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, od)) < 0 || (ret = out_alloc(c, 1, ONNX_INT64, x->ndim, od)) < 0)
		return ret;
	y = c->n->out[0] >= 0 ? node_out(c, 0)->data : NULL;
	ind = c->n->n_out > 1 && c->n->out[1] >= 0 ? node_out(c, 1)->data : NULL;
	nc = x->dims[0] * x->dims[1];
	for (int64_t p = 0; p < nc; p++)
		for (int64_t oy = 0; oy < g.oh; oy++)
			for (int64_t ox = 0; ox < g.ow; ox++) {
				size_t o = (size_t)((p * g.oh + oy) * g.ow + ox);
				float mx = -INFINITY;
				int64_t best = -1;

				for (int64_t r = 0; r < g.kh; r++)
					for (int64_t q = 0; q < g.kw; q++) {
						int64_t iy = oy * g.sh - g.pt + r * g.dh, ix = ox * g.sw - g.pl + q * g.dw;
						float v;

						if (iy < 0 || ix < 0 || iy >= h || ix >= w)
							continue;
						v = ((const float *)x->data)[(p * h + iy) * w + ix];
						if (best < 0 || v > mx) {
							mx = v;
							best = p * h * w + (so ? ix * h + iy : iy * w + ix);
						}
					}
				if (y)
					y[o] = mx;
				if (ind)
					ind[o] = best < 0 ? 0 : best;
			}
	return 0;
}

/* MaxUnpool: Y (zeros) with Y.flat[I[i]] = X[i]; Y's shape from output_shape, else
 * (in − 1) · stride + kernel − pads per spatial dimension. */
static int host_maxunpool(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *idx, *os = node_in(c, 2);
	int64_t ks[ONNX_MAX_DIMS], st[ONNX_MAX_DIMS], pads[2 * ONNX_MAX_DIMS] = { 0 }, od[ONNX_MAX_DIMS];
	int64_t dd[ONNX_MAX_DIMS], dst[ONNX_MAX_DIMS], ost[ONNX_MAX_DIMS];
	size_t dcount;
	unsigned sp;
	size_t es;
	int nk, ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "I", &idx)))
		return ret;
	if (x->ndim < 3 || idx->dtype != ONNX_INT64 || idx->count != x->count)
		return node_err(c, -EINVAL, "X must have rank >= 3 and I be INT64 of X's shape");
	sp = x->ndim - 2;
	nk = attr_ints(c->n->pb, "kernel_shape", ks, ONNX_MAX_DIMS);
	if (nk != (int)sp)
		return node_err(c, -EINVAL, "kernel_shape must have %u values", sp);
	for (unsigned d = 0; d < sp; d++)
		st[d] = 1;
	if (attr_ints(c->n->pb, "strides", st, ONNX_MAX_DIMS) > (int)sp ||
	    attr_ints(c->n->pb, "pads", pads, 2 * ONNX_MAX_DIMS) > (int)(2 * sp))
		return node_err(c, -EINVAL, "strides or pads have more values than %u spatial dimensions", sp);
	dd[0] = od[0] = x->dims[0], dd[1] = od[1] = x->dims[1];
	for (unsigned d = 0; d < sp; d++) {	/* the size the indices refer to */
		if (st[d] < 1 || ks[d] < 1 || pads[d] < 0 || pads[sp + d] < 0)
			return node_err(c, -EINVAL, "strides, kernel_shape (>= 1) or pads (>= 0) out of range at %u", d);
		dd[2 + d] = od[2 + d] = (x->dims[2 + d] - 1) * st[d] + ks[d] - pads[d] - pads[sp + d];
	}
	if (os) {	/* a larger output: each index keeps its coordinates in the default size */
		if (!is_int_type(os->dtype) || os->count != x->ndim)
			return node_err(c, -EINVAL, "output_shape must hold %u integers", x->ndim);
		for (unsigned d = 0; d < x->ndim; d++) {
			od[d] = tensor_get_i(os, d);
			if (od[d] < dd[d])
				return node_err(c, -EINVAL, "output_shape dimension %u is %lld, below the unpooled %lld", d,
						(long long)od[d], (long long)dd[d]);
		}
	}
	for (unsigned d = 0; d < x->ndim; d++)
		if (od[d] < 0 || od[d] > ONNX_MAX_DIM_SIZE)
			return node_err(c, -EINVAL, "output dimension %u is %lld", d, (long long)od[d]);
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, od)))
		return ret < 0 ? ret : 0;
	es = onnx_dtype_size(x->dtype);
	strides_of(x->ndim, dd, dst);
	strides_of(x->ndim, od, ost);
	dcount = tensor_count(x->ndim, dd);
	for (size_t i = 0; i < x->count; i++) {
		int64_t k = ((const int64_t *)idx->data)[i], o = 0;

		if (k < 0 || (size_t)k >= dcount)
			return node_err(c, -EINVAL, "index %lld at %zu is out of range for the unpooled %zu elements",
					(long long)k, i, dcount);
		for (unsigned d = 0; d < x->ndim; d++)
			o += (k / dst[d]) % dd[d] * ost[d];
		memcpy((char *)node_out(c, 0)->data + (size_t)o * es, (const char *)x->data + i * es, es);
	}
	return 0;
}

/* One bilinear sample of plane p (h x w) at (y, x) under RoiAlign's rules; 0 outside [-1, size]. */
static double roi_sample(const float *p, int64_t h, int64_t w, double y, double x, bool max)
{
	int64_t yl, xl, yh, xh;
	double ly, lx, v[4], k[4], r = 0;

	if (!(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w))	/* NaN too */
		return 0;
	y = y <= 0 ? 0 : y;
	x = x <= 0 ? 0 : x;
	yl = (int64_t)y, xl = (int64_t)x;
	if (yl >= h - 1)
		yh = yl = h - 1, y = (double)yl;
	else
		yh = yl + 1;
	if (xl >= w - 1)
		xh = xl = w - 1, x = (double)xl;
	else
		xh = xl + 1;
	ly = y - (double)yl, lx = x - (double)xl;
	k[0] = (1 - ly) * (1 - lx), k[1] = (1 - ly) * lx, k[2] = ly * (1 - lx), k[3] = ly * lx;
	v[0] = p[yl * w + xl], v[1] = p[yl * w + xh], v[2] = p[yh * w + xl], v[3] = p[yh * w + xh];
	for (int i = 0; i < 4; i++)
		r = max ? (i ? fmax(r, k[i] * v[i]) : k[i] * v[i]) : r + k[i] * v[i];
	return r;
}

/* Bilinear samples one roi may take (its grid per bin x bins x channels): 2^32, far beyond any roi
 * inside its image. */
#define ROI_MAX_SAMPLES 4294967296.0

static int host_roialign(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *rois, *bi;
	char mb[8], cb[24];
	const char *mode = attr_string(c->n->pb, "mode", mb, sizeof(mb), "avg");
	/* opset 10 has no coordinate_transformation_mode and no half-pixel offset; 16 added both, half_pixel
	 * the default */
	const char *ctm = attr_string(c->n->pb, "coordinate_transformation_mode", cb, sizeof(cb),
				      c->m->opset < 16 ? "output_half_pixel" : "half_pixel");
	int64_t oh = attr_int(c->n->pb, "output_height", 1), ow = attr_int(c->n->pb, "output_width", 1);
	int64_t sr = attr_int(c->n->pb, "sampling_ratio", 0), od[4], C, H, W, nr;
	float scale = attr_float(c->n->pb, "spatial_scale", 1.0f);
	bool half = !strcmp(ctm, "half_pixel"), max = !strcmp(mode, "max");
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "rois", &rois)) ||
	    (ret = in_req(c, 2, "batch_indices", &bi)))
		return ret;
	if (!max && strcmp(mode, "avg"))
		return node_err(c, -EINVAL, "mode '%s' (avg or max)", mode);
	if (!half && strcmp(ctm, "output_half_pixel"))
		return node_err(c, -EINVAL, "coordinate_transformation_mode '%s' (half_pixel or output_half_pixel)", ctm);
	if (x->ndim != 4 || x->dtype != ONNX_FLOAT || rois->ndim != 2 || rois->dims[1] != 4 || rois->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X must be [N, C, H, W] and rois [R, 4], floating-point");
	if (!is_int_type(bi->dtype) || bi->count != (size_t)rois->dims[0])
		return node_err(c, -EINVAL, "batch_indices must hold %lld integers", (long long)rois->dims[0]);
	if (oh < 1 || ow < 1 || sr < 0 || oh > ONNX_MAX_DIM_SIZE || ow > ONNX_MAX_DIM_SIZE)
		return node_err(c, -EINVAL, "output_height/output_width (>= 1) or sampling_ratio (>= 0) out of range");
	C = x->dims[1], H = x->dims[2], W = x->dims[3], nr = rois->dims[0];
	od[0] = nr, od[1] = C, od[2] = oh, od[3] = ow;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, 4, od)))
		return ret < 0 ? ret : 0;
	for (int64_t r = 0; r < nr; r++) {
		const float *b = (const float *)rois->data + r * 4;
		int64_t n = tensor_get_i(bi, (size_t)r);
		double off = half ? 0.5 : 0, x0 = b[0] * scale - off, y0 = b[1] * scale - off;
		double rw = b[2] * scale - off - x0, rh = b[3] * scale - off - y0, bh, bw;
		int64_t gh, gw, cnt;

		if (n < 0 || n >= x->dims[0])
			return node_err(c, -EINVAL, "batch_indices[%lld] = %lld (0 to %lld)", (long long)r, (long long)n,
					(long long)(x->dims[0] - 1));
		if (!half) {
			rw = fmax(rw, 1);
			rh = fmax(rh, 1);
		}
		bh = rh / (double)oh, bw = rw / (double)ow;
		{
			/* the adaptive grid grows with the roi: bounded, so a huge or non-finite roi is an
			 * error, not a conversion out of range or years of sampling */
			double gy = sr > 0 ? (double)sr : ceil(rh / (double)oh), gx = sr > 0 ? (double)sr : ceil(rw / (double)ow);

			if (!(gy >= 0 && gx >= 0) || gy * gx * (double)oh * (double)ow * (double)C > ROI_MAX_SAMPLES)
				return node_err(c, -EINVAL, "rois[%lld] = (%g, %g, %g, %g): a sampling grid of %g x %g per "
						"bin over %lld x %lld bins and %lld channels exceeds %g samples (or is not "
						"finite)", (long long)r, b[0], b[1], b[2], b[3], gy, gx, (long long)oh,
						(long long)ow, (long long)C, ROI_MAX_SAMPLES);
			gh = (int64_t)gy, gw = (int64_t)gx;
		}
		cnt = gh * gw > 1 ? gh * gw : 1;
		for (int64_t ch = 0; ch < C; ch++) {
			const float *p = (const float *)x->data + (n * C + ch) * H * W;

			for (int64_t py = 0; py < oh; py++)
				for (int64_t px = 0; px < ow; px++) {
					double acc = 0;
					bool first = true;

					for (int64_t iy = 0; iy < gh; iy++)
						for (int64_t ix = 0; ix < gw; ix++) {
							double yy = y0 + (double)py * bh + ((double)iy + 0.5) * bh / (double)gh;
							double xx = x0 + (double)px * bw + ((double)ix + 0.5) * bw / (double)gw;
							double v = roi_sample(p, H, W, yy, xx, max);

							acc = max ? (first ? v : fmax(acc, v)) : acc + v;
							first = false;
						}
					((float *)node_out(c, 0)->data)[((r * C + ch) * oh + py) * ow + px] =
						(float)(max ? acc : acc / (double)cnt);
				}
		}
	}
	return 0;
}

const onnx_kernel onnx_pool_kernels[OP_COUNT] = {
	[OP_MAXUNPOOL] = host_maxunpool,
	[OP_ROIALIGN] = host_roialign,
};
