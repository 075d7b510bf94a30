/* SPDX-License-Identifier: MIT */
/*
 * ops_norm.c - issue 30's normalisations, reductions and generators, host kernels written from the ONNX
 * specification: InstanceNormalization, LRN, MeanVarianceNormalization, GlobalMaxPool,
 * DynamicQuantizeLinear, HannWindow / HammingWindow / BlackmanWindow and Det.  They need division,
 * sqrt, pow or cos (the v1 SFU has ReLU and CLAMP only) or are reductions: host.
 */
#include <stdio.h>

#include "ops_common.h"

/* x [N, C, ...] as N·C planes of hw elements. */
static int planes(const struct onnx_ctx *c, const struct onnx_tensor *x, int64_t *nc, int64_t *hw)
{
	if (x->ndim < 3)
		return node_err(c, -EINVAL, "input has rank %u (needs [N, C, D1, ...])", x->ndim);
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "input: element type %s (a floating-point type)", onnx_dtype_name(x->dtype));
	*nc = x->dims[0] * x->dims[1];
	*hw = *nc ? (int64_t)x->count / *nc : 0;
	return 0;
}

static int host_instancenorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *s, *b;
	float eps = attr_float(c->n->pb, "epsilon", 1e-5f);
	int64_t nc, hw;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "scale", &s)) || (ret = in_req(c, 2, "B", &b)) ||
	    (ret = planes(c, x, &nc, &hw)))
		return ret;
	if (s->count != (size_t)x->dims[1] || b->count != (size_t)x->dims[1] || s->dtype != ONNX_FLOAT ||
	    b->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "scale and B must be [C] = [%lld] tensors of the input's type",
				(long long)x->dims[1]);
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	for (int64_t p = 0; p < nc; p++) {
		const float *xp = (const float *)x->data + p * hw;
		float *yp = (float *)node_out(c, 0)->data + p * hw;
		int64_t ch = p % x->dims[1];
		double mean = 0, var = 0, inv;

		for (int64_t i = 0; i < hw; i++)
			mean += xp[i];
		mean /= (double)hw;
		for (int64_t i = 0; i < hw; i++)
			var += (xp[i] - mean) * (xp[i] - mean);
		var /= (double)hw;
		inv = 1.0 / sqrt(var + eps);
		for (int64_t i = 0; i < hw; i++)
			yp[i] = (float)((xp[i] - mean) * inv * ((const float *)s->data)[ch] + ((const float *)b->data)[ch]);
	}
	return 0;
}

/* LRN: y = x / (bias + alpha / size · Σ x²)^beta, the sum over channels c − ⌊(size−1)/2⌋ .. c + ⌈(size−1)/2⌉. */
static int host_lrn(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	float alpha = attr_float(c->n->pb, "alpha", 1e-4f), beta = attr_float(c->n->pb, "beta", 0.75f);
	float bias = attr_float(c->n->pb, "bias", 1.0f);
	int64_t size = attr_int(c->n->pb, "size", 0), nc, hw, C;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = planes(c, x, &nc, &hw)))
		return ret;
	if (size < 1)
		return node_err(c, -EINVAL, "size %lld (required, >= 1)", (long long)size);
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	C = x->dims[1];
	for (int64_t p = 0; p < nc; p++) {
		int64_t ch = p % C, lo = ch - (size - 1) / 2, hi = ch + size / 2;

		lo = lo < 0 ? 0 : lo;
		hi = hi >= C ? C - 1 : hi;
		for (int64_t i = 0; i < hw; i++) {
			double sq = 0, v = ((const float *)x->data)[p * hw + i];

			for (int64_t k = lo; k <= hi; k++) {
				double u = ((const float *)x->data)[(p - ch + k) * hw + i];

				sq += u * u;
			}
			((float *)node_out(c, 0)->data)[p * hw + i] = (float)(v / pow(bias + alpha / (double)size * sq, beta));
		}
	}
	return 0;
}

/* MeanVarianceNormalization: (x − E[x]) / (sqrt(E[x²] − E[x]²) + 1e-9) over axes (default 0, 2, 3), as
 * the specification's function body. */
static int host_mvn(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t axes[ONNX_MAX_DIMS] = { 0, 2, 3 }, st[ONNX_MAX_DIMS], gdims[ONNX_MAX_DIMS], gst[ONNX_MAX_DIMS];
	int na = attr_ints(c->n->pb, "axes", axes, ONNX_MAX_DIMS);
	unsigned mask = 0;
	size_t groups = 1;
	double *sum, *sq;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "element type %s (a floating-point type)", onnx_dtype_name(x->dtype));
	if ((ret = axes_mask(c, axes, na < 0 ? 3 : (unsigned)na, x->ndim, &mask)))
		return ret;
	for (unsigned d = 0; d < x->ndim; d++) {
		gdims[d] = mask & (1u << d) ? 1 : x->dims[d];
		groups *= (size_t)gdims[d];
	}
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	strides_of(x->ndim, x->dims, st);
	strides_of(x->ndim, gdims, gst);
	sum = calloc(groups ? groups : 1, sizeof(double));
	sq = calloc(groups ? groups : 1, sizeof(double));
	if (!sum || !sq) {
		free(sum);
		free(sq);
		return node_err(c, -ENOMEM, "out of memory");
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < x->count; i++) {
			size_t g = 0;
			double v = ((const float *)x->data)[i], n = (double)x->count / (double)groups;

			for (unsigned d = 0; d < x->ndim; d++)
				if (!(mask & (1u << d)))
					g += (size_t)(((int64_t)i / st[d]) % x->dims[d] * gst[d]);
			if (!pass) {
				sum[g] += v;
				sq[g] += v * v;
			} else {
				double m = sum[g] / n, var = sq[g] / n - m * m;

				((float *)node_out(c, 0)->data)[i] = (float)((v - m) / (sqrt(var > 0 ? var : 0) + 1e-9));
			}
		}
	free(sum);
	free(sq);
	return 0;
}

static int host_globalmaxpool(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t nc, hw, dims[ONNX_MAX_DIMS];
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = planes(c, x, &nc, &hw)))
		return ret;
	for (unsigned d = 0; d < x->ndim; d++)
		dims[d] = d < 2 ? x->dims[d] : 1;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, dims)))
		return ret < 0 ? ret : 0;
	for (int64_t p = 0; p < nc; p++) {
		float m = -INFINITY;

		for (int64_t i = 0; i < hw; i++) {
			float v = ((const float *)x->data)[p * hw + i];

			m = v > m || v != v ? v : m;
		}
		((float *)node_out(c, 0)->data)[p] = m;
	}
	return 0;
}

/* DynamicQuantizeLinear: scale = (max(0, max x) − min(0, min x)) / 255, zero point = saturate(round(−min / scale)),
 * y = saturate(round(x / scale) + zero point), rounding half to even, in float as the specification. */
/* The minimum and maximum of x on the host (a NaN: the node's error). */
static int host_range(struct onnx_ctx *c, const struct onnx_tensor *x, float *lo, float *hi)
{
	*lo = *hi = ((const float *)x->data)[0];
	for (size_t i = 0; i < x->count; i++) {
		float v = ((const float *)x->data)[i];

		if (v != v)
			return node_err(c, -EINVAL, "x holds a NaN at %zu (no scale quantises it)", i);
		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
	}
	return 0;
}

int dynq_run(struct onnx_ctx *c, dynq_range_fn range)
{
	const struct onnx_tensor *x;
	float lo = 0, hi = 0, scale, zp;
	int ret;

	if ((ret = in_req(c, 0, "x", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "x: element type %s (FLOAT)", onnx_dtype_name(x->dtype));
	if (x->count && (ret = range(c, x, &lo, &hi)))
		return ret;
	lo = lo < 0 ? lo : 0;	/* the range always holds 0 */
	hi = hi > 0 ? hi : 0;
	scale = (hi - lo) / 255.0f;
	zp = scale > 0 ? rintf(fminf(fmaxf(0 - lo / scale, 0), 255)) : 0;
	if ((ret = out_alloc(c, 0, ONNX_UINT8, x->ndim, x->dims)) < 0 ||
	    (ret = out_alloc(c, 1, ONNX_FLOAT, 0, NULL)) < 0 || (ret = out_alloc(c, 2, ONNX_UINT8, 0, NULL)) < 0)
		return ret;
	for (size_t i = 0; i < x->count; i++) {
		float q = scale > 0 ? rintf(((const float *)x->data)[i] / scale) + zp : zp;

		((uint8_t *)node_out(c, 0)->data)[i] = (uint8_t)fminf(fmaxf(q, 0), 255);
	}
	if (c->n->n_out > 1 && c->n->out[1] >= 0)
		((float *)node_out(c, 1)->data)[0] = scale;
	if (c->n->n_out > 2 && c->n->out[2] >= 0)
		((uint8_t *)node_out(c, 2)->data)[0] = (uint8_t)zp;
	return 0;
}

static int host_dynquantize(struct onnx_ctx *c)
{
	return dynq_run(c, host_range);
}

/* Hann, Hamming (α = 25/46) and Blackman windows of `size` values; periodic (default) divides by size,
 * symmetric by size − 1; output_datatype (default FLOAT). */
static int host_window(struct onnx_ctx *c)
{
	const struct onnx_tensor *st;
	int64_t periodic = attr_int(c->n->pb, "periodic", 1), dt = attr_int(c->n->pb, "output_datatype", ONNX_FLOAT);
	int64_t n;
	double den, a0, a1, a2 = 0;
	int ret;

	if ((ret = in_req(c, 0, "size", &st)))
		return ret;
	if (!is_int_type(st->dtype) || st->count != 1)
		return node_err(c, -EINVAL, "size must hold one integer");
	n = tensor_get_i(st, 0);
	if (n < 0 || n > ONNX_MAX_DIM_SIZE)
		return node_err(c, -EINVAL, "size %lld (0 to %d)", (long long)n, ONNX_MAX_DIM_SIZE);
	if (dt < 0 || dt > 16 || !onnx_dtype_size((enum onnx_dtype)dt) || dt == ONNX_BOOL)
		return node_err(c, -EINVAL, "output_datatype %s (a numeric type)", onnx_dtype_name((int)dt));
	if ((ret = out_alloc(c, 0, (enum onnx_dtype)dt, 1, &n)))
		return ret < 0 ? ret : 0;
	den = periodic ? (double)n : (double)(n - 1);
	switch (c->n->op) {
	case OP_HANNWINDOW:
		a0 = 0.5, a1 = 0.5;
		break;
	case OP_HAMMINGWINDOW:
		a0 = 25.0 / 46, a1 = 1 - a0;
		break;
	default:
		a0 = 0.42, a1 = 0.5, a2 = 0.08;
		break;
	}
	for (int64_t i = 0; i < n; i++) {
		double t = den > 0 ? 2 * M_PI * (double)i / den : 0;

		tensor_set(node_out(c, 0), (size_t)i, a0 - a1 * cos(t) + a2 * cos(2 * t));
	}
	return 0;
}

/* Det of [..., M, M]: LU with partial pivoting in double. */
static int host_det(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t m, batch;
	double *a;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT || x->ndim < 2 || x->dims[x->ndim - 1] != x->dims[x->ndim - 2])
		return node_err(c, -EINVAL, "X must be a floating-point [..., M, M] tensor");
	m = x->dims[x->ndim - 1];
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim - 2, x->dims)))
		return ret < 0 ? ret : 0;
	batch = (int64_t)node_out(c, 0)->count;
	a = malloc((size_t)(m > 0 ? m * m : 1) * sizeof(double));
	if (!a)
		return node_err(c, -ENOMEM, "out of memory");
	for (int64_t b = 0; b < batch; b++) {
		double det = 1;

		for (int64_t i = 0; i < m * m; i++)
			a[i] = ((const float *)x->data)[b * m * m + i];
		for (int64_t k = 0; k < m && det != 0; k++) {
			int64_t p = k;

			for (int64_t i = k + 1; i < m; i++)
				p = fabs(a[i * m + k]) > fabs(a[p * m + k]) ? i : p;
			if (a[p * m + k] == 0) {
				det = 0;
				break;
			}
			if (p != k) {
				for (int64_t j = 0; j < m; j++) {
					double t = a[k * m + j];

					a[k * m + j] = a[p * m + j];
					a[p * m + j] = t;
				}
				det = -det;
			}
			det *= a[k * m + k];
			for (int64_t i = k + 1; i < m; i++) {
				double f = a[i * m + k] / a[k * m + k];

				for (int64_t j = k; j < m; j++)
					a[i * m + j] -= f * a[k * m + j];
			}
		}
		((float *)node_out(c, 0)->data)[b] = (float)det;
	}
	free(a);
	return 0;
}

const onnx_kernel onnx_norm_kernels[OP_COUNT] = {
	[OP_INSTANCENORM] = host_instancenorm, [OP_LRN] = host_lrn,		[OP_MVN] = host_mvn,
	[OP_GLOBALMAXPOOL] = host_globalmaxpool, [OP_DYNQUANTIZELINEAR] = host_dynquantize,
	[OP_HANNWINDOW] = host_window,	       [OP_HAMMINGWINDOW] = host_window, [OP_BLACKMANWINDOW] = host_window,
	[OP_DET] = host_det,		       [OP_EINSUM] = host_einsum,
};
