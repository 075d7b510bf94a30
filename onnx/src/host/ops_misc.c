/* SPDX-License-Identifier: MIT */
/*
 * ops_misc.c - issue 30's element-wise and selection operators, host kernels written from the ONNX
 * specification: Round (half to even), Sign, Celu, IsNaN, IsInf, CastLike, NonZero, Compress, GatherND,
 * ReverseSequence and TopK.  Element-wise arithmetic and data-dependent selection: no MACs for the PE
 * array; every index is range-checked and a bad one is the node's error.
 */
#include <stdio.h>

#include "ops_common.h"

static int host_round_sign(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	struct onnx_tensor *y;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype == ONNX_BOOL || (c->n->op == OP_ROUND && x->dtype != ONNX_FLOAT))
		return node_err(c, -EINVAL, "element type %s (%s)", onnx_dtype_name(x->dtype),
				c->n->op == OP_ROUND ? "a floating-point type" : "a numeric type");
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	y = node_out(c, 0);
	for (size_t i = 0; i < x->count; i++) {
		if (c->n->op == OP_ROUND) {
			((float *)y->data)[i] = rintf(((const float *)x->data)[i]);	/* ties to even */
		} else if (x->dtype == ONNX_FLOAT) {
			float v = ((const float *)x->data)[i];

			((float *)y->data)[i] = v != v ? v : (float)((v > 0) - (v < 0));
		} else {
			int64_t v = tensor_get_i(x, i);

			tensor_set_i(y, i, x->dtype == ONNX_UINT64 ? v != 0 : (v > 0) - (v < 0));
		}
	}
	return 0;
}

/* Celu: max(0, x) + min(0, alpha · (exp(x / alpha) − 1)). */
static int host_celu(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	float alpha = attr_float(c->n->pb, "alpha", 1.0f);
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "element type %s (a floating-point type)", onnx_dtype_name(x->dtype));
	if (alpha == 0)
		return node_err(c, -EINVAL, "alpha is 0 (Celu divides by it)");
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	for (size_t i = 0; i < x->count; i++) {
		double v = ((const float *)x->data)[i];

		((float *)node_out(c, 0)->data)[i] = (float)(fmax(0, v) + fmin(0, alpha * expm1(v / alpha)));
	}
	return 0;
}

/* IsNaN; IsInf with detect_negative / detect_positive (both default 1). */
static int host_isnan_isinf(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t neg = attr_int(c->n->pb, "detect_negative", 1), pos = attr_int(c->n->pb, "detect_positive", 1);
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (!onnx_dtype_is_float(x->dtype))
		return node_err(c, -EINVAL, "element type %s (a floating-point type)", onnx_dtype_name(x->dtype));
	if ((ret = out_alloc(c, 0, ONNX_BOOL, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	for (size_t i = 0; i < x->count; i++) {
		double v = tensor_get(x, i);
		bool r = c->n->op == OP_ISNAN ? isnan(v) : isinf(v) && ((v > 0 && pos) || (v < 0 && neg));

		((uint8_t *)node_out(c, 0)->data)[i] = r;
	}
	return 0;
}

/* CastLike: Cast to target_type's element type (its values are not read). */
static int host_castlike(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *t;
	struct onnx_tensor *y;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "target_type", &t)))
		return ret;
	if (c->n->out[0] < 0)
		return 0;
	y = node_out(c, 0);
	onnx_tensor_release(y);
	if ((ret = onnx_tensor_convert(y, x, t->dtype)))
		return node_err(c, ret, "cannot allocate the output");
	return 0;
}

/* NonZero: INT64 [rank, count] of the indices of the non-zero elements, in row-major order. */
static int host_nonzero(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t dims[2], st[ONNX_MAX_DIMS];
	size_t nz = 0, k = 0;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	for (size_t i = 0; i < x->count; i++)
		nz += tensor_get(x, i) != 0;
	dims[0] = x->ndim;
	dims[1] = (int64_t)nz;
	if ((ret = out_alloc(c, 0, ONNX_INT64, 2, dims)))
		return ret < 0 ? ret : 0;
	strides_of(x->ndim, x->dims, st);
	for (size_t i = 0; i < x->count; i++) {
		if (tensor_get(x, i) == 0)
			continue;
		for (unsigned d = 0; d < x->ndim; d++)
			((int64_t *)node_out(c, 0)->data)[d * nz + k] = ((int64_t)i / st[d]) % x->dims[d];
		k++;
	}
	return 0;
}

/* Compress: the slices along axis (or of the flattened input) where condition is true; condition may be
 * shorter than the axis (the rest is dropped), not longer. */
static int host_compress(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *cond;
	const Onnx__AttributeProto *ap = attr_find(c->n->pb, "axis");
	int64_t axis = 0, dims[ONNX_MAX_DIMS], len, outer = 1, inner = 1, keep = 0;
	unsigned nd;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "condition", &cond)))
		return ret;
	if (cond->ndim != 1 || cond->dtype != ONNX_BOOL)
		return node_err(c, -EINVAL, "condition must be a 1-D BOOL tensor (got %s, rank %u)",
				onnx_dtype_name(cond->dtype), cond->ndim);
	if (ap) {
		if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x->ndim, &axis)))
			return ret;
		nd = x->ndim;
		memcpy(dims, x->dims, sizeof(dims));
		for (unsigned d = 0; d < (unsigned)axis; d++)
			outer *= x->dims[d];
		for (unsigned d = (unsigned)axis + 1; d < x->ndim; d++)
			inner *= x->dims[d];
		len = x->dims[axis];
	} else {
		nd = 1;
		len = (int64_t)x->count;
	}
	if ((int64_t)cond->count > len)
		return node_err(c, -EINVAL, "condition has %zu values, the axis only %lld", cond->count, (long long)len);
	for (size_t i = 0; i < cond->count; i++)
		keep += ((const uint8_t *)cond->data)[i] != 0;
	dims[ap ? axis : 0] = keep;
	if ((ret = out_alloc(c, 0, x->dtype, nd, dims)))
		return ret < 0 ? ret : 0;
	es = onnx_dtype_size(x->dtype);
	for (int64_t o = 0, w = 0; o < outer; o++)
		for (size_t i = 0; i < cond->count; i++)
			if (((const uint8_t *)cond->data)[i])
				memcpy((char *)node_out(c, 0)->data + (size_t)(w++ * inner) * es,
				       (const char *)x->data + (size_t)((o * len + (int64_t)i) * inner) * es, (size_t)inner * es);
	return 0;
}

/* GatherND with batch_dims: out[b..., i...] = data[b..., indices[b..., i..., :]...]. */
static int host_gathernd(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *idx;
	int64_t bd = attr_int(c->n->pb, "batch_dims", 0), q, dims[ONNX_MAX_DIMS], st[ONNX_MAX_DIMS];
	int64_t batch = 1, n_tuples, slice = 1, per_batch_x = 1;
	unsigned nd = 0;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) || (ret = in_req(c, 1, "indices", &idx)))
		return ret;
	if (!is_int_type(idx->dtype) || idx->ndim < 1)
		return node_err(c, -EINVAL, "indices must be an integer tensor of rank >= 1");
	q = idx->dims[idx->ndim - 1];
	if (bd < 0 || bd >= (int64_t)idx->ndim || bd >= (int64_t)x->ndim)
		return node_err(c, -EINVAL, "batch_dims %lld (0 to min(rank) - 1)", (long long)bd);
	if (q < 1 || q > (int64_t)x->ndim - bd)
		return node_err(c, -EINVAL, "the index tuples have %lld values (1 to rank(data) - batch_dims = %lld)",
				(long long)q, (long long)(x->ndim - bd));
	for (unsigned d = 0; d < (unsigned)bd; d++) {
		if (idx->dims[d] != x->dims[d])
			return node_err(c, -EINVAL, "batch dimension %u differs (data %lld, indices %lld)", d,
					(long long)x->dims[d], (long long)idx->dims[d]);
		batch *= x->dims[d];
	}
	for (unsigned d = 0; d + 1 < idx->ndim; d++)
		dims[nd++] = idx->dims[d];
	for (unsigned d = (unsigned)(bd + q); d < x->ndim; d++) {
		if (nd >= ONNX_MAX_DIMS)
			return node_err(c, -EINVAL, "the output would have more than %d dimensions", ONNX_MAX_DIMS);
		dims[nd++] = x->dims[d];
		slice *= x->dims[d];
	}
	for (unsigned d = (unsigned)bd; d < x->ndim; d++)
		per_batch_x *= x->dims[d];
	n_tuples = (int64_t)(idx->count / (size_t)q) / (batch ? batch : 1);
	if ((ret = out_alloc(c, 0, x->dtype, nd, dims)))
		return ret < 0 ? ret : 0;
	strides_of(x->ndim, x->dims, st);
	es = onnx_dtype_size(x->dtype);
	for (int64_t b = 0; b < batch; b++)
		for (int64_t t = 0; t < n_tuples; t++) {
			int64_t off = b * per_batch_x;

			for (int64_t k = 0; k < q; k++) {
				int64_t v = tensor_get_i(idx, (size_t)((b * n_tuples + t) * q + k)), n = x->dims[bd + k];

				if (v < -n || v >= n)
					return node_err(c, -EINVAL, "index %lld is out of range for dimension %lld (%lld)",
							(long long)v, (long long)(bd + k), (long long)n);
				off += (v < 0 ? v + n : v) * st[bd + k];
			}
			memcpy((char *)node_out(c, 0)->data + (size_t)((b * n_tuples + t) * slice) * es,
			       (const char *)x->data + (size_t)off * es, (size_t)slice * es);
		}
	return 0;
}

/* ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along time_axis reversed. */
static int host_reversesequence(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *lens;
	int64_t ta = attr_int(c->n->pb, "time_axis", 0), ba = attr_int(c->n->pb, "batch_axis", 1), st[ONNX_MAX_DIMS];
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "sequence_lens", &lens)))
		return ret;
	if (x->ndim < 2 || (ta != 0 && ta != 1) || (ba != 0 && ba != 1) || ta == ba)
		return node_err(c, -EINVAL, "time_axis %lld / batch_axis %lld on rank %u (0 and 1, distinct, rank >= 2)",
				(long long)ta, (long long)ba, x->ndim);
	if (!is_int_type(lens->dtype) || lens->ndim != 1 || lens->dims[0] != x->dims[ba])
		return node_err(c, -EINVAL, "sequence_lens must be an integer [%lld] tensor", (long long)x->dims[ba]);
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	es = onnx_dtype_size(x->dtype);
	strides_of(x->ndim, x->dims, st);
	for (size_t i = 0; i < x->count; i++) {
		int64_t t = ((int64_t)i / st[ta]) % x->dims[ta], b = ((int64_t)i / st[ba]) % x->dims[ba];
		int64_t l = tensor_get_i(lens, (size_t)b), src = (int64_t)i;

		if (l < 0 || l > x->dims[ta])
			return node_err(c, -EINVAL, "sequence_lens[%lld] = %lld (0 to %lld)", (long long)b, (long long)l,
					(long long)x->dims[ta]);
		if (t < l)
			src += (l - 1 - 2 * t) * st[ta];
		memcpy((char *)node_out(c, 0)->data + i * es, (const char *)x->data + (size_t)src * es, es);
	}
	return 0;
}

/* TopK: the K largest (or smallest) along axis; ties keep the lower index first (the specification's
 * order), sorted = 0 gives the same order. */
struct topk_ctx {
	const struct onnx_tensor *x;
	size_t base, step;
	bool largest;
};
static _Thread_local const struct topk_ctx *topk_cur;

static int topk_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	double va = tensor_get(topk_cur->x, topk_cur->base + (size_t)a * topk_cur->step);
	double vb = tensor_get(topk_cur->x, topk_cur->base + (size_t)b * topk_cur->step);

	if (va != vb)
		return (topk_cur->largest ? va < vb : va > vb) ? 1 : -1;
	return a < b ? -1 : a > b;
}

static int host_topk(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *kt;
	int64_t axis, k, outer = 1, inner = 1, n, dims[ONNX_MAX_DIMS];
	struct topk_ctx tc;
	int64_t *order;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "K", &kt)))
		return ret;
	if (x->ndim < 1)
		return node_err(c, -EINVAL, "X is a scalar (TopK needs rank >= 1)");
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", -1), x->ndim, &axis)))
		return ret;
	if (!is_int_type(kt->dtype) || kt->count != 1)
		return node_err(c, -EINVAL, "K must hold one integer");
	k = tensor_get_i(kt, 0);
	n = x->dims[axis];
	if (k < 0 || k > n)
		return node_err(c, -EINVAL, "K = %lld is out of range for axis %lld of size %lld", (long long)k,
				(long long)axis, (long long)n);
	for (unsigned d = 0; d < (unsigned)axis; d++)
		outer *= x->dims[d];
	for (unsigned d = (unsigned)axis + 1; d < x->ndim; d++)
		inner *= x->dims[d];
	memcpy(dims, x->dims, sizeof(dims));
	dims[axis] = k;
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, dims)) < 0 ||
	    (c->n->n_out > 1 && (ret = out_alloc(c, 1, ONNX_INT64, x->ndim, dims)) < 0))
		return ret;
	order = malloc((size_t)(n ? n : 1) * sizeof(*order));
	if (!order)
		return node_err(c, -ENOMEM, "out of memory");
	tc.x = x;
	tc.step = (size_t)inner;
	tc.largest = attr_int(c->n->pb, "largest", 1) != 0;
	topk_cur = &tc;	/* qsort has no context argument: a thread-local one */
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			tc.base = (size_t)(o * n * inner + in);
			for (int64_t i = 0; i < n; i++)
				order[i] = i;
			qsort(order, (size_t)n, sizeof(*order), topk_cmp);
			for (int64_t i = 0; i < k; i++) {
				size_t dst = (size_t)((o * k + i) * inner + in);

				tensor_set(node_out(c, 0), dst, tensor_get(x, tc.base + (size_t)order[i] * tc.step));
				if (c->n->n_out > 1 && c->n->out[1] >= 0)
					((int64_t *)node_out(c, 1)->data)[dst] = order[i];
			}
		}
	free(order);
	return 0;
}

const onnx_kernel onnx_misc_kernels[OP_COUNT] = {
	[OP_ROUND] = host_round_sign,	[OP_SIGN] = host_round_sign,	 [OP_CELU] = host_celu,
	[OP_ISNAN] = host_isnan_isinf,	[OP_ISINF] = host_isnan_isinf,	 [OP_CASTLIKE] = host_castlike,
	[OP_NONZERO] = host_nonzero,	[OP_COMPRESS] = host_compress,	 [OP_GATHERND] = host_gathernd,
	[OP_REVERSESEQUENCE] = host_reversesequence, [OP_TOPK] = host_topk,
};
