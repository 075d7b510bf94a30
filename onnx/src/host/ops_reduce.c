/* SPDX-License-Identifier: MIT */
/*
 * ops_reduce.c - reductions along axes (issue 15), from the ONNX specification: ReduceMean, ReduceSum,
 * ReduceMax, ReduceMin, ReduceProd, ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum,
 * ReduceLogSumExp (axes as attribute, or as input for ReduceSum >= 13 and the others >= 18; keepdims;
 * noop_with_empty_axes), ArgMax/ArgMin (keepdims, select_last_index), Softmax/LogSoftmax on any axis
 * (opset < 13: coerced to 2-D at axis; >= 13: along axis) and LayerNormalization (opset 17).
 * Sums in double.
 */
#include <stdio.h>

#include "ops_common.h"


static int host_reduce(struct onnx_ctx *c)
{
	enum onnx_op op = c->n->op;
	const struct onnx_tensor *x;
	int64_t axes[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS], odims[ONNX_MAX_DIMS], ost[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	bool keep = attr_int(c->n->pb, "keepdims", 1) != 0, given;
	unsigned n, mask = 0, ond = 0;
	struct onnx_tensor *y;
	size_t ocount, off = 0;
	double *acc, init;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) ||
	    (ret = axes_of(c, op == OP_REDUCESUM ? 13 : 18, 1, axes, &n, &given)))
		return ret;
	if (x->dtype == ONNX_BOOL || (x->dtype != ONNX_FLOAT && op != OP_REDUCESUM && op != OP_REDUCEMAX &&
				      op != OP_REDUCEMIN && op != OP_REDUCEPROD))
		return node_err(c, -EOPNOTSUPP, "element type %s", onnx_dtype_name(x->dtype));
	if (!n && attr_int(c->n->pb, "noop_with_empty_axes", 0))
		return tensor_copy(node_out(c, 0), x) ? node_err(c, -ENOMEM, "out of memory") : 0;
	if ((ret = axes_mask(c, axes, n, x->ndim, &mask)))
		return ret;
	if (!n)
		mask = (1u << x->ndim) - 1;	/* no axes: all of them */
	for (unsigned d = 0; d < x->ndim; d++) {
		dims[d] = mask & (1u << d) ? 1 : x->dims[d];
		if (!(mask & (1u << d)) || keep)
			odims[ond++] = dims[d];
	}
	strides_of(x->ndim, dims, ost);
	for (unsigned d = 0; d < x->ndim; d++)
		if (mask & (1u << d))
			ost[d] = 0;
	if ((ret = out_alloc(c, 0, x->dtype, ond, odims)))
		return ret;
	y = node_out(c, 0);
	ocount = y->count;
	acc = malloc((ocount ? ocount : 1) * sizeof(double));
	if (!acc)
		return node_err(c, -ENOMEM, "out of memory");
	init = op == OP_REDUCEMAX ? -INFINITY : op == OP_REDUCEMIN ? INFINITY : op == OP_REDUCEPROD ? 1 : 0;
	for (size_t o = 0; o < ocount; o++)
		acc[o] = init;
	for (size_t i = 0; i < x->count; i++) {
		double v = tensor_get(x, i), *a = &acc[off];

		switch (op) {
		case OP_REDUCEMAX:
			*a = v > *a || v != v ? v : *a;
			break;
		case OP_REDUCEMIN:
			*a = v < *a || v != v ? v : *a;
			break;
		case OP_REDUCEPROD:
			*a *= v;
			break;
		case OP_REDUCESUMSQUARE:
		case OP_REDUCEL2:
			*a += v * v;
			break;
		case OP_REDUCEL1:
			*a += fabs(v);
			break;
		case OP_REDUCELOGSUMEXP:
			*a += exp(v);
			break;
		default:
			*a += v;
		}
		for (int d = (int)x->ndim - 1; d >= 0; d--) {
			off += (size_t)ost[d];
			if (++idx[d] < x->dims[d])
				break;
			off -= (size_t)(ost[d] * x->dims[d]);
			idx[d] = 0;
		}
	}
	for (size_t o = 0; o < ocount; o++) {
		double v = acc[o];

		if (op == OP_REDUCEMEAN)
			v /= (double)(x->count / (ocount ? ocount : 1));
		else if (op == OP_REDUCEL2)
			v = sqrt(v);
		else if (op == OP_REDUCELOGSUM || op == OP_REDUCELOGSUMEXP)
			v = log(v);
		if (is_int_type(y->dtype) && (op == OP_REDUCEMAX || op == OP_REDUCEMIN) && isinf(v))
			v = 0;	/* an empty integer reduction */
		tensor_set(y, o, v);
	}
	free(acc);
	return 0;
}

/* The reduced axes of node c->n as one run [*first, *end); false when they are not one run of axes (or
 * the node is a no-op). */
bool reduce_axis_run(struct onnx_ctx *c, const struct onnx_tensor *x, unsigned *first, unsigned *end)
{
	int64_t axes[ONNX_MAX_DIMS];
	unsigned n, mask = 0;
	bool given;

	if (axes_of(c, c->n->op == OP_REDUCESUM ? 13 : 18, 1, axes, &n, &given))
		return false;
	if (!n && attr_int(c->n->pb, "noop_with_empty_axes", 0))
		return false;
	if (n && axes_mask(c, axes, n, x->ndim, &mask))
		return false;
	if (!n)
		mask = (1u << x->ndim) - 1;
	if (!mask)
		return false;
	*first = (unsigned)__builtin_ctz(mask);
	*end = *first;
	while (*end < x->ndim && (mask >> *end & 1))
		(*end)++;
	return mask >> *end == 0; /* nothing reduced after the run */
}

static int host_argmax(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	bool keep = attr_int(c->n->pb, "keepdims", 1) != 0, last = attr_int(c->n->pb, "select_last_index", 0) != 0;
	bool is_max = c->n->op == OP_ARGMAX;
	int64_t axis, dims[ONNX_MAX_DIMS], outer = 1, len, inner = 1;
	unsigned nd = 0;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	if (x->dtype == ONNX_BOOL)
		return node_err(c, -EOPNOTSUPP, "element type BOOL");
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x->ndim, &axis)))
		return ret;
	len = x->dims[axis];
	if (!len)
		return node_err(c, -EINVAL, "empty dimension %lld", (long long)axis);
	for (unsigned d = 0; d < x->ndim; d++) {
		if ((int64_t)d < axis)
			outer *= x->dims[d];
		else if ((int64_t)d > axis)
			inner *= x->dims[d];
		if ((int64_t)d != axis)
			dims[nd++] = x->dims[d];
		else if (keep)
			dims[nd++] = 1;
	}
	if ((ret = out_alloc(c, 0, ONNX_INT64, nd, dims)))
		return ret;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			int64_t best = 0;
			double bv = tensor_get(x, (size_t)(o * len * inner + in));

			for (int64_t i = 1; i < len; i++) {
				double v = tensor_get(x, (size_t)((o * len + i) * inner + in));

				/* NaN is the extreme, as numpy's argmax/argmin (the ONNX reference) and the
				 * vector units' ARGMAX/ARGMIN take it: the first NaN, with select_last_index the last */
				bool better = !isnan(bv) && (isnan(v) || (is_max ? v > bv : v < bv));

				if (better || (last && (v == bv || (isnan(v) && isnan(bv))))) {
					bv = v;
					best = i;
				}
			}
			((int64_t *)node_out(c, 0)->data)[o * inner + in] = best;
		}
	return 0;
}

static int host_softmax_any(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	bool legacy = c->m->opset < 13, logsm = c->n->op == OP_LOGSOFTMAX;
	int64_t axis, outer = 1, len = 1, inner = 1;
	const float *xp;
	float *yp;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EOPNOTSUPP, "input: element type %s is not supported (FLOAT)", onnx_dtype_name(x->dtype));
	if (!x->ndim)
		return node_err(c, -EINVAL, "a scalar input has no axis");
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", legacy ? 1 : -1), x->ndim, &axis)))
		return ret;
	for (unsigned i = 0; i < x->ndim; i++) {
		if ((int64_t)i < axis)
			outer *= x->dims[i];
		else if ((int64_t)i == axis || legacy)
			len *= x->dims[i];
		else
			inner *= x->dims[i];
	}
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	xp = x->data;
	yp = node_out(c, 0)->data;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			const float *xs = xp + o * len * inner + in;
			float *ys = yp + o * len * inner + in;
			double mx = -INFINITY, sum = 0;

			for (int64_t i = 0; i < len; i++)
				mx = xs[i * inner] > mx ? xs[i * inner] : mx;
			for (int64_t i = 0; i < len; i++)
				sum += exp((double)xs[i * inner] - mx);
			for (int64_t i = 0; i < len; i++)
				ys[i * inner] = logsm ? (float)((double)xs[i * inner] - mx - log(sum))
						      : (float)(exp((double)xs[i * inner] - mx) / sum);
		}
	return 0;
}

int64_t layernorm_axis(const struct onnx_node *n)
{
	return n->ln_fused ? n->ln_axis : attr_int(n->pb, "axis", -1);
}

float layernorm_epsilon(const struct onnx_node *n)
{
	return n->ln_fused ? n->ln_eps : attr_float(n->pb, "epsilon", 1e-5f);
}

/* LayerNormalization (opset 17): normalise over dimensions axis..rank-1, then * Scale + B (broadcast). */
static int host_layernorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *sc, *b = node_in(c, 2), *t[3];
	double eps = layernorm_epsilon(c->n);
	int64_t axis, outer = 1, len = 1, sdims[ONNX_MAX_DIMS];
	struct bcast bc;
	int ret, r1, r2;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "Scale", &sc)))
		return ret;
	if (x->dtype != ONNX_FLOAT || sc->dtype != ONNX_FLOAT || (b && b->dtype != ONNX_FLOAT))
		return node_err(c, -EOPNOTSUPP, "X, Scale and B must be FLOAT");
	if (attr_int(c->n->pb, "stash_type", 1) != 1)
		return node_err(c, -EOPNOTSUPP, "stash_type %lld (1 = FLOAT)", (long long)attr_int(c->n->pb, "stash_type", 1));
	if ((ret = axis_norm(c, layernorm_axis(c->n), x->ndim, &axis)))
		return ret;
	t[0] = x;
	t[1] = sc;
	t[2] = b ? b : sc;
	if ((ret = bcast_init(c, &bc, t, 3)))
		return ret;
	if (bc.nd != x->ndim || memcmp(bc.dims, x->dims, x->ndim * sizeof(int64_t)))
		return node_err(c, -EINVAL, "Scale/B do not broadcast to X's shape");
	for (unsigned d = 0; d < x->ndim; d++) {
		sdims[d] = (int64_t)d < axis ? x->dims[d] : 1;
		if ((int64_t)d < axis)
			outer *= x->dims[d];
		else
			len *= x->dims[d];
	}
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	if ((r1 = out_alloc(c, 1, ONNX_FLOAT, x->ndim, sdims)) < 0)
		return r1;
	if ((r2 = out_alloc(c, 2, ONNX_FLOAT, x->ndim, sdims)) < 0)
		return r2;
	for (int64_t o = 0; o < outer; o++) {
		const float *xs = (const float *)x->data + o * len;
		double mean = 0, var = 0, inv;

		for (int64_t i = 0; i < len; i++)
			mean += xs[i];
		mean /= (double)(len ? len : 1);
		for (int64_t i = 0; i < len; i++)
			var += (xs[i] - mean) * (xs[i] - mean);
		var /= (double)(len ? len : 1);
		inv = 1 / sqrt(var + eps);
		for (int64_t i = 0; i < len; i++, bcast_next(&bc)) {
			double v = (xs[i] - mean) * inv * ((const float *)sc->data)[bc.off[1]];

			if (b)
				v += ((const float *)b->data)[bc.off[2]];
			((float *)node_out(c, 0)->data)[o * len + i] = (float)v;
		}
		if (!r1)
			((float *)node_out(c, 1)->data)[o] = (float)mean;
		if (!r2)
			((float *)node_out(c, 2)->data)[o] = (float)inv;
	}
	return 0;
}

const onnx_kernel onnx_reduce_kernels[OP_COUNT] = {
	[OP_REDUCEMEAN] = host_reduce,	    [OP_REDUCESUM] = host_reduce,	  [OP_REDUCEMAX] = host_reduce,
	[OP_REDUCEMIN] = host_reduce,	    [OP_REDUCEPROD] = host_reduce,	  [OP_REDUCESUMSQUARE] = host_reduce,
	[OP_REDUCEL1] = host_reduce,	    [OP_REDUCEL2] = host_reduce,	  [OP_REDUCELOGSUM] = host_reduce,
	[OP_REDUCELOGSUMEXP] = host_reduce, [OP_ARGMAX] = host_argmax,		  [OP_ARGMIN] = host_argmax,
	[OP_SOFTMAX] = host_softmax_any,    [OP_LOGSOFTMAX] = host_softmax_any,	  [OP_LAYERNORM] = host_layernorm,
};
