/* SPDX-License-Identifier: MIT */
/*
 * ops_nn.c - host kernels of issue 15 with geometry of their own, from the ONNX specification and its
 * reference implementation's formulas: Resize (opset 10-17: nearest with every nearest_mode, linear,
 * cubic; every coordinate_transformation_mode; scales or sizes) and Upsample (opset 7-9), ConvTranspose
 * (1-D to 3-D, groups, dilations, output_padding, output_shape, auto_pad), QuantizeLinear and
 * DequantizeLinear (per tensor or per axis, UINT8/INT8: round half to even, saturate; in float32 as
 * the specification computes them).
 */
#include <stdio.h>

#include "ops_common.h"
#include "ops_nn.h"

/* ---- Resize / Upsample ---- */

enum rs_coord { RS_HALF_PIXEL, RS_PYTORCH_HALF_PIXEL, RS_ALIGN_CORNERS, RS_ASYMMETRIC, RS_TF_CROP, RS_TF_HALF_NN };
enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_round { RS_PREFER_FLOOR, RS_PREFER_CEIL, RS_FLOOR, RS_CEIL };

static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static void cubic_coeffs(double r, double a, double *c)
{
	double q = 1 - r;

	c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
	c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	c[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
	c[3] = ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a;
}

/* Taps of output coordinate x along one dimension (in input size n, scale s); *outside for crop. */
static unsigned rs_taps(int64_t x, int64_t n, double s, int64_t out_n, enum rs_coord cm, enum rs_mode mode,
			enum rs_round rm, double cubic_a, bool excl, double r0, double r1, struct rs_tap *t, bool *outside)
{
	double ow = s * (double)n, xo, ratio, cc[4];
	int64_t base;
	unsigned k = 0;

	(void)out_n;
	*outside = false;
	switch (cm) {
	case RS_ALIGN_CORNERS:
		xo = ow == 1 ? 0 : (double)x * (double)(n - 1) / (ow - 1);
		break;
	case RS_ASYMMETRIC:
		xo = (double)x / s;
		break;
	case RS_TF_CROP:
		xo = ow > 1 ? r0 * (double)(n - 1) + (double)x * (r1 - r0) * (double)(n - 1) / (ow - 1)
			    : 0.5 * (r0 + r1) * (double)(n - 1);
		if (xo < 0 || xo > (double)(n - 1))
			*outside = true;
		break;
	case RS_PYTORCH_HALF_PIXEL:
		xo = ow == 1 ? -0.5 : ((double)x + 0.5) / s - 0.5;
		break;
	case RS_TF_HALF_NN:
		xo = ((double)x + 0.5) / s;
		break;
	default:
		xo = ((double)x + 0.5) / s - 0.5;
	}
	/* far outside the input every tap lands on the edge: clamp (also keeps the int conversion defined) */
	if (!(xo > -4))
		xo = -4;
	if (!(xo < (double)n + 4))
		xo = (double)n + 4;
	/* the reference takes the neighbour left of xo with ratio in (0, 1] */
	base = (int64_t)floor(xo);
	ratio = xo - (double)base;
	if (ratio == 0) {
		base--;
		ratio = 1;
	}
	if (mode == RS_NEAREST) {
		bool right;

		if (ratio == 1)
			right = true;
		else if (rm == RS_PREFER_FLOOR)
			right = ratio > 0.5;
		else if (rm == RS_PREFER_CEIL)
			right = ratio >= 0.5;
		else
			right = rm == RS_CEIL;
		t[0].idx = base + right;
		t[0].w = 1;
		k = 1;
	} else if (mode == RS_LINEAR) {
		t[0].idx = base;
		t[0].w = 1 - ratio;
		t[1].idx = base + 1;
		t[1].w = ratio;
		k = 2;
	} else {
		double sum = 0;

		cubic_coeffs(ratio, cubic_a, cc);
		for (int i = 0; i < 4; i++) {
			t[i].idx = base - 1 + i;
			t[i].w = excl && (t[i].idx < 0 || t[i].idx >= n) ? 0 : cc[i];
			sum += t[i].w;
		}
		if (excl && sum != 0)
			for (int i = 0; i < 4; i++)
				t[i].w /= sum;
		k = 4;
	}
	for (unsigned i = 0; i < k; i++)	/* edge padding */
		t[i].idx = t[i].idx < 0 ? 0 : t[i].idx >= n ? n - 1 : t[i].idx;
	return k;
}

int rs_plan_make(struct onnx_ctx *c, const struct onnx_tensor *x, struct rs_plan *pl)
{
	static const char *const coords[] = { "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
					      "tf_crop_and_resize", "tf_half_pixel_for_nn" };
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const rounds[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
	const Onnx__NodeProto *p = c->n->pb;
	bool upsample = c->n->op == OP_UPSAMPLE, legacy = upsample || c->m->opset < 11;
	const struct onnx_tensor *roi = NULL, *ts = NULL, *tsz = NULL;
	char b1[32], b2[32], b3[32];
	const char *ms = attr_string(p, "mode", b1, sizeof(b1), "nearest");
	const char *cs = attr_string(p, "coordinate_transformation_mode", b2, sizeof(b2), "half_pixel");
	const char *rs = attr_string(p, "nearest_mode", b3, sizeof(b3), "round_prefer_floor");
	int mode = pick(ms, modes, 3), cm = legacy ? RS_ASYMMETRIC : pick(cs, coords, 6);
	int rm = legacy ? RS_FLOOR : pick(rs, rounds, 4);
	double cubic_a = attr_float(p, "cubic_coeff_a", -0.75f);
	bool excl = attr_int(p, "exclude_outside", 0) != 0;
	double scale[ONNX_MAX_DIMS], r0[ONNX_MAX_DIMS], r1[ONNX_MAX_DIMS];
	int64_t *dims = pl->dims;
	int ret = 0;

	memset(pl, 0, sizeof(*pl));
	pl->nd = x->ndim;
	pl->extrap = attr_float(p, "extrapolation_value", 0.0f);
	if (!strcmp(ms, "bilinear"))	/* Upsample-7's spelling */
		mode = RS_LINEAR;
	if (mode < 0 || cm < 0 || rm < 0)
		return node_err(c, -EINVAL, "mode '%s', coordinate_transformation_mode '%s', nearest_mode '%s'", ms, cs, rs);
	pl->mode = mode;
	pl->crop = cm == RS_TF_CROP;
	if (attr_int(p, "antialias", 0) || attr_find(p, "axes") || attr_find(p, "keep_aspect_ratio_policy"))
		return node_err(c, -EOPNOTSUPP, "antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
	if (x->dtype != ONNX_FLOAT && (mode != RS_NEAREST || x->dtype == ONNX_BOOL))
		return node_err(c, -EOPNOTSUPP, "element type %s (FLOAT; nearest also integers)", onnx_dtype_name(x->dtype));
	if (upsample && c->m->opset < 9) {
		int n = attr_ints(p, "scales", NULL, 0);
		const Onnx__AttributeProto *a = attr_find(p, "scales");

		if (n != (int)x->ndim || !a || a->n_floats != x->ndim)
			return node_err(c, -EINVAL, "scales must have %u values", x->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			scale[d] = a->floats[d];
	} else if (legacy) {
		if ((ret = in_req(c, 1, "scales", &ts)))
			return ret;
	} else {
		roi = node_in(c, 1);
		ts = node_in(c, 2);
		tsz = node_in(c, 3);
		if (ts && !ts->count)
			ts = NULL;
		if (tsz && !tsz->count)
			tsz = NULL;
		if (!!ts == !!tsz)
			return node_err(c, -EINVAL, "exactly one of scales and sizes must be given");
	}
	for (unsigned d = 0; d < x->ndim; d++) {
		r0[d] = 0;
		r1[d] = 1;
	}
	if (cm == RS_TF_CROP) {
		if (!roi || roi->count != 2 * x->ndim || roi->dtype != ONNX_FLOAT)
			return node_err(c, -EINVAL, "tf_crop_and_resize needs a FLOAT roi of %u values", 2 * x->ndim);
		for (unsigned d = 0; d < x->ndim; d++) {
			r0[d] = tensor_get(roi, d);
			r1[d] = tensor_get(roi, d + x->ndim);
		}
	}
	if (ts) {
		if (ts->dtype != ONNX_FLOAT || ts->count != x->ndim)
			return node_err(c, -EINVAL, "scales must be FLOAT with %u values", x->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			scale[d] = tensor_get(ts, d);
	}
	for (unsigned d = 0; d < x->ndim; d++) {
		if (tsz) {
			if (tsz->dtype != ONNX_INT64 || tsz->count != x->ndim)
				return node_err(c, -EINVAL, "sizes must be INT64 with %u values", x->ndim);
			dims[d] = tensor_get_i(tsz, d);
			if (dims[d] < 0 || dims[d] > (1LL << 31))
				return node_err(c, -EINVAL, "sizes[%u] = %lld", d, (long long)dims[d]);
			scale[d] = x->dims[d] ? (double)dims[d] / (double)x->dims[d] : 1;
		} else {
			double o = floor((double)x->dims[d] * scale[d] * (cm == RS_TF_CROP ? r1[d] - r0[d] : 1));

			if (!(scale[d] > 0) || o > (double)(1LL << 31))
				return node_err(c, -EINVAL, "scales[%u] = %g", d, scale[d]);
			dims[d] = (int64_t)o;
		}
		if (dims[d] && !x->dims[d])
			return node_err(c, -EINVAL, "resizing an empty dimension");
	}
	/* the output within ONNX_MAX_TENSOR_BYTES before any per-axis table is allocated */
	{
		double bytes = (double)onnx_dtype_size(x->dtype);

		for (unsigned d = 0; d < x->ndim; d++)
			bytes *= (double)dims[d];
		if (bytes > (double)ONNX_MAX_TENSOR_BYTES)
			return node_err(c, -E2BIG, "output 0 would exceed %zu bytes", ONNX_MAX_TENSOR_BYTES);
	}
	for (unsigned d = 0; d < x->ndim; d++) {
		pl->taps[d] = malloc(((size_t)dims[d] * 4 + 1) * sizeof(struct rs_tap));
		pl->ntap[d] = malloc(((size_t)dims[d] + 1) * sizeof(unsigned));
		pl->outs[d] = malloc((size_t)dims[d] + 1);
		if (!pl->taps[d] || !pl->ntap[d] || !pl->outs[d]) {
			rs_plan_free(pl);
			return node_err(c, -ENOMEM, "out of memory");
		}
		for (int64_t i = 0; i < dims[d]; i++)
			pl->ntap[d][i] = rs_taps(i, x->dims[d], scale[d], dims[d], (enum rs_coord)cm, (enum rs_mode)mode,
						 (enum rs_round)rm, cubic_a, excl, r0[d], r1[d], pl->taps[d] + i * 4,
						 &pl->outs[d][i]);
	}
	return 0;
}

void rs_plan_free(struct rs_plan *pl)
{
	for (unsigned d = 0; d < ONNX_MAX_DIMS; d++) {
		free(pl->taps[d]);
		free(pl->ntap[d]);
		free(pl->outs[d]);
		pl->taps[d] = NULL;
		pl->ntap[d] = NULL;
		pl->outs[d] = NULL;
	}
}

static int host_resize(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t xs[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	struct rs_plan pl;
	struct onnx_tensor *y;
	int ret = 0;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = rs_plan_make(c, x, &pl)))
		return ret;
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, pl.dims))) {
		rs_plan_free(&pl);
		return ret;
	}
	y = node_out(c, 0);
	strides_of(x->ndim, x->dims, xs);
	for (size_t o = 0; o < y->count; o++) {
		unsigned k[ONNX_MAX_DIMS] = { 0 };
		double v = 0;
		bool out = false;

		for (unsigned d = 0; d < x->ndim; d++)
			out |= pl.outs[d][idx[d]];
		if (out) {
			v = pl.extrap;
		} else {
			for (;;) {	/* every combination of the dimensions' taps */
				double w = 1;
				int64_t off = 0;
				int d;

				for (d = 0; d < (int)x->ndim; d++) {
					const struct rs_tap *t = &pl.taps[d][idx[d] * 4 + k[d]];

					w *= t->w;
					off += t->idx * xs[d];
				}
				if (w != 0)
					v += w * tensor_get(x, (size_t)off);
				for (d = (int)x->ndim - 1; d >= 0; d--) {
					if (++k[d] < pl.ntap[d][idx[d]])
						break;
					k[d] = 0;
				}
				if (d < 0)
					break;
			}
		}
		tensor_set(y, o, v);
		for (int d = (int)x->ndim - 1; d >= 0; d--) {
			if (++idx[d] < pl.dims[d])
				break;
			idx[d] = 0;
		}
	}
	rs_plan_free(&pl);
	return ret;
}

/* ---- ConvTranspose ---- */

/* Parse and check ConvTranspose's attributes against X and W (ops_nn.h). */
int ct_geom(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *w,
	    const struct onnx_tensor *b, struct ct_geom *g)
{
	const Onnx__NodeProto *p = c->n->pb;
	int64_t oshape[3], ks[3], *st = g->st, *dl = g->dl, *pads = g->pads, *opad = g->opad;
	char buf[16];
	const char *ap = attr_string(p, "auto_pad", buf, sizeof(buf), "NOTSET");
	unsigned sp;
	int n;

	memset(g, 0, sizeof(*g));
	for (int d = 0; d < 3; d++)
		g->st[d] = g->dl[d] = g->in[d] = g->k[d] = g->od[d] = 1;
	g->group = attr_int(p, "group", 1);
	if (x->dtype != ONNX_FLOAT || w->dtype != ONNX_FLOAT || (b && b->dtype != ONNX_FLOAT))
		return node_err(c, -EOPNOTSUPP, "X, W and B must be FLOAT");
	if (x->ndim < 3 || x->ndim > 5 || w->ndim != x->ndim)
		return node_err(c, -EINVAL, "X and W must be 3-D to 5-D of one rank (got %u, %u)", x->ndim, w->ndim);
	sp = g->sp = x->ndim - 2;
	g->N = x->dims[0];
	g->C = x->dims[1];
	if (g->group < 1 || g->group > (g->C ? g->C : 1) || g->C % g->group || w->dims[0] != g->C)
		return node_err(c, -EINVAL, "group %lld does not divide C = %lld, or W has %lld input channels",
				(long long)g->group, (long long)g->C, (long long)w->dims[0]);
	g->Cg = g->C / g->group;
	g->Mg = w->dims[1];
	g->M = g->Mg * g->group;
	if (b && (int64_t)b->count != g->M)
		return node_err(c, -EINVAL, "B must have %lld values", (long long)g->M);
	if (((n = attr_ints(p, "strides", st, 3)) >= 0 && n != (int)sp) ||
	    ((n = attr_ints(p, "dilations", dl, 3)) >= 0 && n != (int)sp) ||
	    ((n = attr_ints(p, "pads", pads, 6)) >= 0 && n != 2 * (int)sp) ||
	    ((n = attr_ints(p, "output_padding", opad, 3)) >= 0 && n != (int)sp) ||
	    ((n = attr_ints(p, "kernel_shape", ks, 3)) >= 0 && n != (int)sp))
		return node_err(c, -EINVAL, "strides, dilations, output_padding, kernel_shape need %u values, pads %u", sp,
				2 * sp);
	n = attr_ints(p, "output_shape", oshape, 3);
	if (n >= 0 && n != (int)sp)
		return node_err(c, -EINVAL, "output_shape needs %u values", sp);
	for (unsigned d = 0; d < sp; d++) {
		int64_t span, total;

		g->in[d] = x->dims[2 + d];
		g->k[d] = w->dims[2 + d];
		if (st[d] < 1 || dl[d] < 1 || opad[d] < 0 || pads[d] < 0 || pads[d + sp] < 0 || st[d] > (1 << 16) ||
		    dl[d] > (1 << 16) || pads[d] > (1LL << 31) || pads[d + sp] > (1LL << 31) || opad[d] > (1LL << 31))
			return node_err(c, -EINVAL, "strides/dilations must be >= 1, pads and output_padding >= 0");
		span = (g->k[d] - 1) * dl[d] + 1;
		if (n >= 0 || strcmp(ap, "NOTSET")) {
			int64_t want = n >= 0 ? oshape[d] : g->in[d] * st[d];

			if (strcmp(ap, "NOTSET") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER") && strcmp(ap, "VALID"))
				return node_err(c, -EINVAL, "unknown auto_pad '%s'", ap);
			if (want < 0 || want > (1LL << 31))
				return node_err(c, -EINVAL, "output_shape[%u] = %lld", d, (long long)want);
			if (!strcmp(ap, "VALID") && n < 0) {
				pads[d] = pads[d + sp] = 0;
			} else {
				total = st[d] * (g->in[d] - 1) + opad[d] + span - want;
				if (total < 0)
					total = 0;	/* the specification's reference pads the end with zeros then */
				if (!strcmp(ap, "SAME_UPPER")) {
					pads[d] = total / 2;
					pads[d + sp] = total - total / 2;
				} else {
					pads[d] = total - total / 2;
					pads[d + sp] = total / 2;
				}
				if (n >= 0 && want > st[d] * (g->in[d] - 1) + opad[d] + span - pads[d] - pads[d + sp])
					pads[d + sp] -= want - (st[d] * (g->in[d] - 1) + opad[d] + span - pads[d] - pads[d + sp]);
			}
		}
		g->od[d] = st[d] * (g->in[d] - 1) + opad[d] + span - pads[d] - pads[d + sp];
		if (g->od[d] < 0 || g->od[d] > (1LL << 31))
			return node_err(c, -EINVAL, "output dimension %u would be %lld", d, (long long)g->od[d]);
	}
	return 0;
}

static int host_convtranspose(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *w, *b = node_in(c, 2);
	struct ct_geom g;
	int64_t dims[5];
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "W", &w)) || (ret = ct_geom(c, x, w, b, &g)))
		return ret;
	{
	const int64_t N = g.N, C = g.C, M = g.M, Cg = g.Cg, Mg = g.Mg, *in = g.in, *k = g.k, *od = g.od;
	const int64_t *st = g.st, *dl = g.dl, *pads = g.pads;
	unsigned sp = g.sp;

	dims[0] = N;
	dims[1] = M;
	for (unsigned d = 0; d < sp; d++)
		dims[2 + d] = od[d];
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, dims)))
		return ret;
	{
		const float *xp = x->data, *wp = w->data;
		size_t plane = (size_t)(od[0] * od[1] * od[2]), iplane = (size_t)(in[0] * in[1] * in[2]);
		size_t kvol = (size_t)(k[0] * k[1] * k[2]);
		double *acc = malloc((plane ? plane : 1) * sizeof(double));

		if (!acc)
			return node_err(c, -ENOMEM, "out of memory");
		for (int64_t nn = 0; nn < N; nn++)
			for (int64_t m = 0; m < M; m++) {
				int64_t gi = m / Mg, mm = m % Mg;

				for (size_t i = 0; i < plane; i++)
					acc[i] = b ? ((const float *)b->data)[m] : 0;
				for (int64_t ci = 0; ci < Cg; ci++) {
					const float *xc = xp + ((size_t)(nn * C + gi * Cg + ci)) * iplane;
					const float *wc = wp + ((size_t)((gi * Cg + ci) * Mg + mm)) * kvol;

					for (int64_t i0 = 0; i0 < in[0]; i0++)
						for (int64_t i1 = 0; i1 < in[1]; i1++)
							for (int64_t i2 = 0; i2 < in[2]; i2++) {
								double xv = xc[(i0 * in[1] + i1) * in[2] + i2];

								for (int64_t k0 = 0; k0 < k[0]; k0++) {
									int64_t o0 = i0 * st[0] + k0 * dl[0] - pads[0];

									if (o0 < 0 || o0 >= od[0])
										continue;
									for (int64_t k1 = 0; k1 < k[1]; k1++) {
										int64_t o1 = sp > 1 ? i1 * st[1] + k1 * dl[1] - pads[1] : 0;

										if (o1 < 0 || o1 >= od[1])
											continue;
										for (int64_t k2 = 0; k2 < k[2]; k2++) {
											int64_t o2 = sp > 2 ? i2 * st[2] + k2 * dl[2] - pads[2] : 0;

											if (o2 < 0 || o2 >= od[2])
												continue;
											acc[(o0 * od[1] + o1) * od[2] + o2] +=
												xv * wc[(k0 * k[1] + k1) * k[2] + k2];
										}
									}
								}
							}
				}
				for (size_t i = 0; i < plane; i++)
					((float *)node_out(c, 0)->data)[(size_t)(nn * M + m) * plane + i] = (float)acc[i];
			}
		free(acc);
	}
	}
	return 0;
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

/* Scale and zero point: scalar (per tensor) or 1-D along axis (opset 13); per-element index stride. */
static int q_params(const struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *s,
		    const struct onnx_tensor *zp, int64_t *inner, int64_t *nch)
{
	int ret;

	*inner = 1;
	*nch = 1;
	if (s->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "scale must be FLOAT");
	if (zp && (zp->count != s->count))
		return node_err(c, -EINVAL, "zero point has %zu values, scale %zu", zp->count, s->count);
	if (s->ndim == 0 || (s->ndim == 1 && s->count == 1 && c->m->opset < 13))
		return 0;
	if (s->ndim != 1)
		return node_err(c, -EINVAL, "scale must be a scalar or 1-D");
	{
		int64_t axis;

		if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 1), x->ndim, &axis)))
			return ret;
		if (s->dims[0] != x->dims[axis])
			return node_err(c, -EINVAL, "scale has %lld values, axis %lld has %lld", (long long)s->dims[0],
					(long long)axis, (long long)x->dims[axis]);
		for (unsigned d = (unsigned)axis + 1; d < x->ndim; d++)
			*inner *= x->dims[d];
		*nch = s->dims[0];
	}
	return 0;
}

static int host_quantize(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *s, *zp = node_in(c, 2);
	enum onnx_dtype odt = zp ? zp->dtype : ONNX_UINT8;
	int64_t inner, nch;
	int ret;

	if ((ret = in_req(c, 0, "x", &x)) || (ret = in_req(c, 1, "y_scale", &s)))
		return ret;
	if ((x->dtype != ONNX_FLOAT && x->dtype != ONNX_INT32) || (odt != ONNX_UINT8 && odt != ONNX_INT8))
		return node_err(c, -EOPNOTSUPP, "x must be FLOAT or INT32 and the zero point UINT8 or INT8 (got %s, %s)",
				onnx_dtype_name(x->dtype), onnx_dtype_name(odt));
	if ((ret = q_params(c, x, s, zp, &inner, &nch)) || (ret = out_alloc(c, 0, odt, x->ndim, x->dims)))
		return ret;
	for (size_t i = 0; i < x->count; i++) {
		size_t ch = nch > 1 ? (size_t)((int64_t)(i / (size_t)inner) % nch) : 0;
		float sc = ((const float *)s->data)[ch];
		float q = x->dtype == ONNX_FLOAT ? ((const float *)x->data)[i] / sc	/* float32 division */
						 : (float)((const int32_t *)x->data)[i] / sc;
		double v = rint((double)q) + (zp ? (double)tensor_get(zp, ch) : 0);	/* half to even */
		double lo = odt == ONNX_UINT8 ? 0 : -128, hi = odt == ONNX_UINT8 ? 255 : 127;

		v = v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
		tensor_set_i(node_out(c, 0), i, (int64_t)v);
	}
	return 0;
}

static int host_dequantize(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *s, *zp = node_in(c, 2);
	int64_t inner, nch;
	int ret;

	if ((ret = in_req(c, 0, "x", &x)) || (ret = in_req(c, 1, "x_scale", &s)))
		return ret;
	if (x->dtype != ONNX_UINT8 && x->dtype != ONNX_INT8 && x->dtype != ONNX_INT32)
		return node_err(c, -EOPNOTSUPP, "x must be UINT8, INT8 or INT32 (got %s)", onnx_dtype_name(x->dtype));
	if (zp && zp->dtype != x->dtype)
		return node_err(c, -EINVAL, "the zero point must have x's element type");
	if ((ret = q_params(c, x, s, zp, &inner, &nch)) || (ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	for (size_t i = 0; i < x->count; i++) {
		size_t ch = nch > 1 ? (size_t)((int64_t)(i / (size_t)inner) % nch) : 0;
		float d = (float)(tensor_get_i(x, i) - (zp ? tensor_get_i(zp, ch) : 0));

		((float *)node_out(c, 0)->data)[i] = d * ((const float *)s->data)[ch];
	}
	return 0;
}

const onnx_kernel onnx_nn_kernels[OP_COUNT] = {
	[OP_RESIZE] = host_resize,
	[OP_UPSAMPLE] = host_resize,
	[OP_CONVTRANSPOSE] = host_convtranspose,
	[OP_QUANTIZELINEAR] = host_quantize,
	[OP_DEQUANTIZELINEAR] = host_dequantize,
};
