/* SPDX-License-Identifier: MIT */
/*
 * ops_shape.c - host kernels that move data without arithmetic (issue 15), from the ONNX
 * specification: Concat, Split, Slice, Gather, Shape, Unsqueeze, Squeeze, Expand, Transpose, Pad
 * (constant, reflect, edge), Tile, ConstantOfShape, Range and Dropout (inference: identity).  Any
 * element type; every axis, index and shape value is checked (an error names the node), and output
 * sizes are bounded by onnx_tensor_alloc.
 */
#include <stdio.h>

#include "ops_common.h"

int axes_of(const struct onnx_ctx *c, int64_t new_opset, unsigned idx, int64_t *axes, unsigned *n, bool *given)
{
	*n = 0;
	*given = false;
	if (c->m->opset >= new_opset) {
		const struct onnx_tensor *t = node_in(c, idx);

		if (!t)
			return 0;
		*given = true;
		return int_list(c, t, "axes", axes, ONNX_MAX_DIMS, n);
	}
	int cnt = attr_ints(c->n->pb, "axes", axes, ONNX_MAX_DIMS);

	if (cnt > ONNX_MAX_DIMS)
		return node_err(c, -EINVAL, "axes has %d values (at most %d)", cnt, ONNX_MAX_DIMS);
	if (cnt >= 0) {
		*given = true;
		*n = (unsigned)cnt;
	}
	return 0;
}

int axes_mask(const struct onnx_ctx *c, const int64_t *axes, unsigned n, unsigned rank, unsigned *mask)
{
	*mask = 0;
	for (unsigned i = 0; i < n; i++) {
		int64_t a;
		int ret = axis_norm(c, axes[i], rank, &a);

		if (ret)
			return ret;
		if (*mask & (1u << a))
			return node_err(c, -EINVAL, "axis %lld is repeated", (long long)axes[i]);
		*mask |= 1u << a;
	}
	return 0;
}

static int copy_out(const struct onnx_ctx *c, unsigned i, const struct onnx_tensor *x, unsigned nd, const int64_t *dims)
{
	int ret;

	if (tensor_count(nd, dims) != x->count)
		return node_err(c, -EINVAL, "new shape has %zu elements, the input %zu", tensor_count(nd, dims), x->count);
	if ((ret = out_alloc(c, i, x->dtype, nd, dims)))
		return ret < 0 ? ret : 0;
	memcpy(node_out(c, i)->data, x->data, x->count * onnx_dtype_size(x->dtype));
	return 0;
}

static int host_concat(struct onnx_ctx *c)
{
	const struct onnx_tensor *x0;
	int64_t axis, dims[ONNX_MAX_DIMS], outer = 1, inner = 1;
	size_t es, o = 0;
	int ret;

	if ((ret = in_req(c, 0, "inputs", &x0)))
		return ret;
	if (!attr_find(c->n->pb, "axis"))
		return node_err(c, -EINVAL, "attribute 'axis' is missing");
	if (!x0->ndim)
		return node_err(c, -EINVAL, "cannot concatenate scalars");
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x0->ndim, &axis)))
		return ret;
	memcpy(dims, x0->dims, sizeof(dims));
	dims[axis] = 0;
	for (unsigned i = 0; i < c->n->n_in; i++) {
		const struct onnx_tensor *x = node_in(c, i);

		if (!x)
			return node_err(c, -EINVAL, "input %u is missing", i);
		if (x->dtype != x0->dtype || x->ndim != x0->ndim)
			return node_err(c, -EINVAL, "input %u: %s rank %u, input 0: %s rank %u", i, onnx_dtype_name(x->dtype),
					x->ndim, onnx_dtype_name(x0->dtype), x0->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			if ((int64_t)d != axis && x->dims[d] != x0->dims[d])
				return node_err(c, -EINVAL, "input %u: dimension %u is %lld, input 0 has %lld", i, d,
						(long long)x->dims[d], (long long)x0->dims[d]);
		dims[axis] += x->dims[axis];
	}
	for (unsigned d = 0; d < x0->ndim; d++) {
		if ((int64_t)d < axis)
			outer *= dims[d];
		else if ((int64_t)d > axis)
			inner *= dims[d];
	}
	if ((ret = out_alloc(c, 0, x0->dtype, x0->ndim, dims)))
		return ret;
	es = onnx_dtype_size(x0->dtype);
	for (int64_t ob = 0; ob < outer; ob++)
		for (unsigned i = 0; i < c->n->n_in; i++) {
			const struct onnx_tensor *x = node_in(c, i);
			size_t blk = (size_t)(x->dims[axis] * inner) * es;

			memcpy((uint8_t *)node_out(c, 0)->data + o, (const uint8_t *)x->data + (size_t)ob * blk, blk);
			o += blk;
		}
	return 0;
}

static int host_split(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t axis, *split, outer = 1, inner = 1, total = 0, off = 0;
	unsigned n = c->n->n_out;
	size_t es;
	int ret, cnt = -1;

	if ((ret = in_req(c, 0, "input", &x)))
		return ret;
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x->ndim, &axis)))
		return ret;
	split = calloc(n, sizeof(*split));
	if (!split)
		return node_err(c, -ENOMEM, "out of memory");
	if (c->m->opset >= 13 && node_in(c, 1)) {
		unsigned k;

		ret = int_list(c, node_in(c, 1), "split", split, n, &k);
		if (!ret && k != n)
			ret = node_err(c, -EINVAL, "split has %u values for %u outputs", k, n);
		cnt = (int)k;
	} else if (c->m->opset < 13) {
		cnt = attr_ints(c->n->pb, "split", split, (int)n);
		if (cnt >= 0 && cnt != (int)n)
			ret = node_err(c, -EINVAL, "split has %d values for %u outputs", cnt, n);
	}
	if (!ret && cnt < 0) {	/* equal parts */
		if (x->dims[axis] % n)
			ret = node_err(c, -EINVAL, "dimension %lld does not split into %u equal parts",
				       (long long)x->dims[axis], n);
		for (unsigned i = 0; i < n; i++)
			split[i] = x->dims[axis] / n;
	}
	for (unsigned i = 0; !ret && i < n; i++) {
		if (split[i] < 0 || split[i] > x->dims[axis])
			ret = node_err(c, -EINVAL, "split[%u] = %lld", i, (long long)split[i]);
		total += split[i];
	}
	if (!ret && total != x->dims[axis])
		ret = node_err(c, -EINVAL, "split sums to %lld, the dimension is %lld", (long long)total,
			       (long long)x->dims[axis]);
	for (unsigned d = 0; d < x->ndim; d++) {
		if ((int64_t)d < axis)
			outer *= x->dims[d];
		else if ((int64_t)d > axis)
			inner *= x->dims[d];
	}
	es = onnx_dtype_size(x->dtype);
	for (unsigned i = 0; !ret && i < n; i++) {
		int64_t dims[ONNX_MAX_DIMS];
		int r;

		memcpy(dims, x->dims, sizeof(dims));
		dims[axis] = split[i];
		r = out_alloc(c, i, x->dtype, x->ndim, dims);
		if (r < 0)
			ret = r;
		else if (!r)
			for (int64_t ob = 0; ob < outer; ob++)
				memcpy((uint8_t *)node_out(c, i)->data + (size_t)(ob * split[i] * inner) * es,
				       (const uint8_t *)x->data + (size_t)((ob * x->dims[axis] + off) * inner) * es,
				       (size_t)(split[i] * inner) * es);
		off += split[i];
	}
	free(split);
	return ret;
}

/* Strided window copy: out[i] = x[start + i * step] per axis (Slice). */
static void strided_copy(const struct onnx_tensor *x, struct onnx_tensor *y, const int64_t *start, const int64_t *step)
{
	int64_t xs[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	size_t es = onnx_dtype_size(x->dtype);

	strides_of(x->ndim, x->dims, xs);
	for (size_t o = 0; o < y->count; o++) {
		int64_t off = 0;

		for (unsigned d = 0; d < x->ndim; d++)
			off += (start[d] + idx[d] * step[d]) * xs[d];
		memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + (size_t)off * es, es);
		for (int d = (int)y->ndim - 1; d >= 0; d--) {
			if (++idx[d] < y->dims[d])
				break;
			idx[d] = 0;
		}
	}
}

static int host_slice(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t starts[ONNX_MAX_DIMS], ends[ONNX_MAX_DIMS], axes[ONNX_MAX_DIMS], steps[ONNX_MAX_DIMS];
	int64_t start[ONNX_MAX_DIMS], step[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS];
	unsigned ns = 0, ne = 0, na = 0, nst = 0, mask = 0;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	if (c->m->opset >= 10) {
		const struct onnx_tensor *ts, *te;

		if ((ret = in_req(c, 1, "starts", &ts)) || (ret = in_req(c, 2, "ends", &te)) ||
		    (ret = int_list(c, ts, "starts", starts, ONNX_MAX_DIMS, &ns)) ||
		    (ret = int_list(c, te, "ends", ends, ONNX_MAX_DIMS, &ne)))
			return ret;
		if (node_in(c, 3) && (ret = int_list(c, node_in(c, 3), "axes", axes, ONNX_MAX_DIMS, &na)))
			return ret;
		if (node_in(c, 4) && (ret = int_list(c, node_in(c, 4), "steps", steps, ONNX_MAX_DIMS, &nst)))
			return ret;
		if (!node_in(c, 3))
			na = ns;
		else if (na != ns)
			return node_err(c, -EINVAL, "axes has %u values, starts %u", na, ns);
		if (!node_in(c, 4))
			nst = ns;
		else if (nst != ns)
			return node_err(c, -EINVAL, "steps has %u values, starts %u", nst, ns);
		for (unsigned i = 0; i < ns; i++) {
			if (!node_in(c, 3))
				axes[i] = i;
			if (!node_in(c, 4))
				steps[i] = 1;
		}
	} else {
		int a = attr_ints(c->n->pb, "starts", starts, ONNX_MAX_DIMS), e = attr_ints(c->n->pb, "ends", ends, ONNX_MAX_DIMS);
		int ax = attr_ints(c->n->pb, "axes", axes, ONNX_MAX_DIMS);

		if (a < 0 || e < 0 || a > ONNX_MAX_DIMS || a != e || (ax >= 0 && ax != a))
			return node_err(c, -EINVAL, "starts, ends (and axes) must be given with equally many values");
		ns = ne = (unsigned)a;
		for (unsigned i = 0; i < ns; i++) {
			if (ax < 0)
				axes[i] = i;
			steps[i] = 1;
		}
	}
	if (ns != ne)
		return node_err(c, -EINVAL, "starts has %u values, ends %u", ns, ne);
	if ((ret = axes_mask(c, axes, ns, x->ndim, &mask)))
		return ret;
	for (unsigned d = 0; d < x->ndim; d++) {
		start[d] = 0;
		step[d] = 1;
		dims[d] = x->dims[d];
	}
	for (unsigned i = 0; i < ns; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + x->ndim : axes[i], d = x->dims[a], s = starts[i], e = ends[i];
		int64_t st = steps[i];

		if (!st)
			return node_err(c, -EINVAL, "steps[%u] is 0", i);
		/* beyond +-2^62 every step takes one element: clamp so that no arithmetic below overflows */
		st = st > (1LL << 62) ? (1LL << 62) : st < -(1LL << 62) ? -(1LL << 62) : st;
		if (s < 0)
			s += d;
		if (e < 0)
			e += d;
		if (st > 0) {
			s = s < 0 ? 0 : s > d ? d : s;
			e = e < 0 ? 0 : e > d ? d : e;
			dims[a] = e > s ? (e - s - 1) / st + 1 : 0;
		} else {
			s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			dims[a] = s > e ? (s - e - 1) / (-st) + 1 : 0;
		}
		start[a] = s;
		step[a] = st;
	}
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, dims)))
		return ret;
	strided_copy(x, node_out(c, 0), start, step);
	return 0;
}

static int host_gather(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *ix;
	int64_t axis, dims[ONNX_MAX_DIMS], outer = 1, inner = 1;
	unsigned nd = 0;
	size_t es, blk;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) || (ret = in_req(c, 1, "indices", &ix)))
		return ret;
	if (ix->dtype != ONNX_INT32 && ix->dtype != ONNX_INT64)
		return node_err(c, -EINVAL, "indices must be INT32 or INT64");
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), x->ndim, &axis)))
		return ret;
	if (x->ndim - 1 + ix->ndim > ONNX_MAX_DIMS)
		return node_err(c, -EOPNOTSUPP, "output rank %u exceeds %d", x->ndim - 1 + ix->ndim, ONNX_MAX_DIMS);
	for (unsigned d = 0; d < x->ndim; d++) {
		if ((int64_t)d == axis)
			for (unsigned k = 0; k < ix->ndim; k++)
				dims[nd++] = ix->dims[k];
		else
			dims[nd++] = x->dims[d];
		if ((int64_t)d < axis)
			outer *= x->dims[d];
		else if ((int64_t)d > axis)
			inner *= x->dims[d];
	}
	for (size_t i = 0; i < ix->count; i++) {
		int64_t k = tensor_get_i(ix, i);

		if (k < -x->dims[axis] || k >= x->dims[axis])
			return node_err(c, -EINVAL, "index %lld is out of range for dimension %lld", (long long)k,
					(long long)x->dims[axis]);
	}
	if ((ret = out_alloc(c, 0, x->dtype, nd, dims)))
		return ret;
	es = onnx_dtype_size(x->dtype);
	blk = (size_t)inner * es;
	for (int64_t ob = 0; ob < outer; ob++)
		for (size_t i = 0; i < ix->count; i++) {
			int64_t k = tensor_get_i(ix, i);

			k = k < 0 ? k + x->dims[axis] : k;
			memcpy((uint8_t *)node_out(c, 0)->data + ((size_t)ob * ix->count + i) * blk,
			       (const uint8_t *)x->data + ((size_t)(ob * x->dims[axis] + k)) * blk, blk);
		}
	return 0;
}

/* Shape (start/end of opset 15, clamped), also used for static shapes at load time. */
int shape_range(const struct onnx_ctx *c, unsigned rank, int64_t *s, int64_t *e)
{
	*s = attr_int(c->n->pb, "start", 0);
	*e = attr_int(c->n->pb, "end", rank);
	if (*s < 0)
		*s += rank;
	if (*e < 0)
		*e += rank;
	*s = *s < 0 ? 0 : *s > rank ? rank : *s;
	*e = *e < 0 ? 0 : *e > rank ? rank : *e;
	if (*e < *s)
		*e = *s;
	return 0;
}

static int host_shape(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t s, e, n;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	shape_range(c, x->ndim, &s, &e);
	n = e - s;
	if ((ret = out_alloc(c, 0, ONNX_INT64, 1, &n)))
		return ret;
	memcpy(node_out(c, 0)->data, x->dims + s, (size_t)n * 8);
	return 0;
}

static int host_unsqueeze(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t axes[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS];
	unsigned n, mask, rank, k = 0;
	bool given;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) || (ret = axes_of(c, 13, 1, axes, &n, &given)))
		return ret;
	if (!given)
		return node_err(c, -EINVAL, "axes are missing");
	rank = x->ndim + n;
	if (rank > ONNX_MAX_DIMS)
		return node_err(c, -EOPNOTSUPP, "output rank %u exceeds %d", rank, ONNX_MAX_DIMS);
	if ((ret = axes_mask(c, axes, n, rank, &mask)))
		return ret;
	for (unsigned d = 0; d < rank; d++)
		dims[d] = mask & (1u << d) ? 1 : x->dims[k++];
	return copy_out(c, 0, x, rank, dims);
}

static int host_squeeze(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t axes[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS];
	unsigned n, mask = 0, nd = 0;
	bool given;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) || (ret = axes_of(c, 13, 1, axes, &n, &given)))
		return ret;
	if (given && (ret = axes_mask(c, axes, n, x->ndim, &mask)))
		return ret;
	for (unsigned d = 0; d < x->ndim; d++) {
		bool sq = given ? (mask >> d) & 1 : x->dims[d] == 1;

		if (sq && x->dims[d] != 1)
			return node_err(c, -EINVAL, "dimension %u is %lld, not 1", d, (long long)x->dims[d]);
		if (!sq)
			dims[nd++] = x->dims[d];
	}
	return copy_out(c, 0, x, nd, dims);
}

/* out[...] = x[broadcast index]: Expand and Tile share this odometer. */
static void broadcast_copy(const struct onnx_tensor *x, struct onnx_tensor *y, bool tile)
{
	int64_t xs[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	unsigned lead = y->ndim - x->ndim;
	size_t es = onnx_dtype_size(x->dtype);

	strides_of(x->ndim, x->dims, xs);
	for (size_t o = 0; o < y->count; o++) {
		int64_t off = 0;

		for (unsigned d = 0; d < x->ndim; d++) {
			int64_t i = idx[d + lead];

			off += (tile ? i % x->dims[d] : x->dims[d] == 1 ? 0 : i) * xs[d];
		}
		memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + (size_t)off * es, es);
		for (int d = (int)y->ndim - 1; d >= 0; d--) {
			if (++idx[d] < y->dims[d])
				break;
			idx[d] = 0;
		}
	}
}

static int host_expand(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *s;
	int64_t shape[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS];
	unsigned n, nd;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "shape", &s)) ||
	    (ret = int_list(c, s, "shape", shape, ONNX_MAX_DIMS, &n)))
		return ret;
	nd = n > x->ndim ? n : x->ndim;
	for (int i = (int)nd - 1; i >= 0; i--) {
		int ix = i - (int)(nd - x->ndim), is = i - (int)(nd - n);
		int64_t a = ix >= 0 ? x->dims[ix] : 1, b = is >= 0 ? shape[is] : 1;

		if (b < 0 || (a != b && a != 1 && b != 1))
			return node_err(c, -EINVAL, "shape does not broadcast (dimension %d: %lld vs %lld)", i,
					(long long)a, (long long)b);
		dims[i] = a == 1 ? b : a;
	}
	if ((ret = out_alloc(c, 0, x->dtype, nd, dims)))
		return ret;
	broadcast_copy(x, node_out(c, 0), false);
	return 0;
}

static int host_tile(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *r;
	int64_t rep[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS];
	unsigned n;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = in_req(c, 1, "repeats", &r)) ||
	    (ret = int_list(c, r, "repeats", rep, ONNX_MAX_DIMS, &n)))
		return ret;
	if (n != x->ndim)
		return node_err(c, -EINVAL, "repeats has %u values for rank %u", n, x->ndim);
	for (unsigned d = 0; d < n; d++) {
		if (rep[d] < 0 || (x->dims[d] && rep[d] > (1LL << 31) / x->dims[d]))
			return node_err(c, -EINVAL, "repeats[%u] = %lld", d, (long long)rep[d]);
		dims[d] = x->dims[d] * rep[d];
	}
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, dims)))
		return ret;
	broadcast_copy(x, node_out(c, 0), true);
	return 0;
}

static int host_transpose(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t perm[ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS], xs[ONNX_MAX_DIMS], ps[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	unsigned seen = 0;
	struct onnx_tensor *y;
	size_t es;
	int ret, n;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	n = attr_ints(c->n->pb, "perm", perm, ONNX_MAX_DIMS);
	if (n < 0)
		for (unsigned d = 0; d < x->ndim; d++)
			perm[d] = x->ndim - 1 - d;
	else if (n != (int)x->ndim)
		return node_err(c, -EINVAL, "perm has %d values for rank %u", n, x->ndim);
	for (unsigned d = 0; d < x->ndim; d++) {
		if (perm[d] < 0 || perm[d] >= x->ndim || (seen & (1u << perm[d])))
			return node_err(c, -EINVAL, "perm is not a permutation of 0..%u", x->ndim - 1);
		seen |= 1u << perm[d];
		dims[d] = x->dims[perm[d]];
	}
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, dims)))
		return ret;
	y = node_out(c, 0);
	strides_of(x->ndim, x->dims, xs);
	for (unsigned d = 0; d < x->ndim; d++)
		ps[d] = xs[perm[d]];
	es = onnx_dtype_size(x->dtype);
	if (es == 4 && x->ndim) {	/* the common FLOAT case without a per-element memcpy */
		unsigned last = x->ndim - 1;

		for (size_t o = 0; o < y->count;) {
			int64_t off = 0;

			for (unsigned d = 0; d < last; d++)
				off += idx[d] * ps[d];
			for (int64_t i = 0; i < dims[last]; i++, o++)
				((uint32_t *)y->data)[o] = ((const uint32_t *)x->data)[off + i * ps[last]];
			for (int d = (int)last - 1; d >= 0; d--) {
				if (++idx[d] < dims[d])
					break;
				idx[d] = 0;
			}
			if (!last)
				break;
		}
		return 0;
	}
	for (size_t o = 0; o < y->count; o++) {
		int64_t off = 0;

		for (unsigned d = 0; d < x->ndim; d++)
			off += idx[d] * ps[d];
		memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + (size_t)off * es, es);
		for (int d = (int)x->ndim - 1; d >= 0; d--) {
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return 0;
}

/* Index into an input dimension of n for output position i - pb (reflect / edge); -1 = constant. */
static int64_t pad_src(int64_t i, int64_t n, int mode)
{
	if (i >= 0 && i < n)
		return i;
	if (mode == 0 || n == 0)
		return -1;
	if (mode == 2)
		return i < 0 ? 0 : n - 1;
	if (n == 1)
		return 0;
	{	/* reflect (without repeating the edge), period 2(n - 1), as numpy.pad */
		int64_t p = 2 * (n - 1);

		i %= p;
		if (i < 0)
			i += p;
		return i < n ? i : p - i;
	}
}

static int host_pad(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t pads[2 * ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS], xs[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	double value = 0;
	char buf[16];
	const char *mode_s = attr_string(c->n->pb, "mode", buf, sizeof(buf), "constant");
	int mode = !strcmp(mode_s, "constant") ? 0 : !strcmp(mode_s, "reflect") ? 1 : !strcmp(mode_s, "edge") ? 2 : -1;
	unsigned np = 0;
	struct onnx_tensor *y;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	if (mode < 0)
		return node_err(c, -EOPNOTSUPP, "mode '%s' (constant, reflect, edge)", mode_s);
	if (c->m->opset >= 11) {
		const struct onnx_tensor *tp;

		if ((ret = in_req(c, 1, "pads", &tp)) || (ret = int_list(c, tp, "pads", pads, 2 * ONNX_MAX_DIMS, &np)))
			return ret;
		if (node_in(c, 2) && node_in(c, 2)->count && (ret = scalar_of(c, node_in(c, 2), "constant_value", &value)))
			return ret;
		if (node_in(c, 3))
			return node_err(c, -EOPNOTSUPP, "the axes input (opset 18) is not supported");
	} else {
		int n = attr_ints(c->n->pb, c->m->opset < 2 ? "paddings" : "pads", pads, 2 * ONNX_MAX_DIMS);

		np = n < 0 ? 0 : (unsigned)n;
		if (n < 0 || n > 2 * ONNX_MAX_DIMS)
			np = 2 * ONNX_MAX_DIMS + 1;
		value = attr_float(c->n->pb, "value", 0.0f);
	}
	if (np != 2 * x->ndim)
		return node_err(c, -EINVAL, "pads must have %u values (2 x rank)", 2 * x->ndim);
	for (unsigned d = 0; d < x->ndim; d++) {
		int64_t pb = pads[d], pe = pads[d + x->ndim];

		if (pb > (1LL << 31) || pe > (1LL << 31) || pb < -x->dims[d] || pe < -x->dims[d])
			return node_err(c, -EINVAL, "pads %lld, %lld of dimension %u (%lld)", (long long)pb, (long long)pe,
					d, (long long)x->dims[d]);
		dims[d] = x->dims[d] + pb + pe;
		if (dims[d] < 0)
			return node_err(c, -EINVAL, "pads crop dimension %u below 0", d);
		if (mode && x->dims[d] == 0 && dims[d] > 0)
			return node_err(c, -EINVAL, "%s padding of an empty dimension", mode_s);
	}
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, dims)))
		return ret;
	y = node_out(c, 0);
	strides_of(x->ndim, x->dims, xs);
	es = onnx_dtype_size(x->dtype);
	for (size_t o = 0; o < y->count; o++) {
		int64_t off = 0;
		bool cst = false;

		for (unsigned d = 0; d < x->ndim && !cst; d++) {
			int64_t s = pad_src(idx[d] - pads[d], x->dims[d], mode);

			if (s < 0)
				cst = true;
			off += s * xs[d];
		}
		if (cst)
			tensor_set(y, o, value);
		else
			memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + (size_t)off * es, es);
		for (int d = (int)x->ndim - 1; d >= 0; d--) {
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return 0;
}

static int host_constantofshape(struct onnx_ctx *c)
{
	const struct onnx_tensor *s;
	const Onnx__AttributeProto *a = attr_find(c->n->pb, "value");
	struct onnx_tensor v = { .dtype = ONNX_FLOAT };
	int64_t dims[ONNX_MAX_DIMS];
	char msg[256];
	unsigned n;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "input", &s)) || (ret = int_list(c, s, "shape", dims, ONNX_MAX_DIMS, &n)))
		return ret;
	for (unsigned d = 0; d < n; d++)
		if (dims[d] < 0)
			return node_err(c, -EINVAL, "shape[%u] = %lld", d, (long long)dims[d]);
	if (a && a->t) {
		if ((ret = tensor_from_proto(a->t, &v, msg, sizeof(msg))))
			return node_err(c, ret, "value: %s", msg);
		if (v.count != 1) {
			onnx_tensor_release(&v);
			return node_err(c, -EINVAL, "value must hold one element");
		}
	}
	ret = out_alloc(c, 0, v.dtype, n, dims);
	es = onnx_dtype_size(v.dtype);
	if (!ret && v.data)
		for (size_t i = 0; i < node_out(c, 0)->count; i++)
			memcpy((uint8_t *)node_out(c, 0)->data + i * es, v.data, es);
	onnx_tensor_release(&v);
	return ret;
}

static int host_range(struct onnx_ctx *c)
{
	const struct onnx_tensor *ts, *tl, *td;
	double s, l, d, cnt;
	int64_t n;
	int ret;

	if ((ret = in_req(c, 0, "start", &ts)) || (ret = in_req(c, 1, "limit", &tl)) || (ret = in_req(c, 2, "delta", &td)) ||
	    (ret = scalar_of(c, ts, "start", &s)) || (ret = scalar_of(c, tl, "limit", &l)) ||
	    (ret = scalar_of(c, td, "delta", &d)))
		return ret;
	if (ts->dtype != tl->dtype || ts->dtype != td->dtype || ts->dtype == ONNX_BOOL)
		return node_err(c, -EINVAL, "start, limit and delta must share a numeric element type");
	if (d == 0 || d != d || s != s || l != l)
		return node_err(c, -EINVAL, "delta must be non-zero and the bounds numbers");
	cnt = ceil((l - s) / d);
	if (cnt > (double)(1LL << 31))
		return node_err(c, -E2BIG, "%.0f elements", cnt);
	n = cnt > 0 ? (int64_t)cnt : 0;
	if ((ret = out_alloc(c, 0, ts->dtype, 1, &n)))
		return ret;
	for (int64_t i = 0; i < n; i++) {
		if (ts->dtype == ONNX_FLOAT)	/* start + i * delta, as the specification's loop accumulates in float */
			tensor_set(node_out(c, 0), (size_t)i, (float)(s + (double)i * d));
		else
			tensor_set_i(node_out(c, 0), (size_t)i,
				     (int64_t)((uint64_t)tensor_get_i(ts, 0) + (uint64_t)i * (uint64_t)tensor_get_i(td, 0)));
	}
	return 0;
}

/*
 * Dropout in inference: the identity; the optional mask is all true.  training_mode = true is the
 * identity too when the ratio is 0 (every mask bit true, scale 1/(1 - 0)): torchvision's Swin exports its
 * attention dropout that way; with a ratio above 0 it is refused (random masks are for training).
 */
static int host_dropout(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *tm = node_in(c, 2), *ratio = node_in(c, 1);
	int ret;

	if ((ret = in_req(c, 0, "data", &x)))
		return ret;
	if (tm && tm->count && tensor_get(tm, 0) != 0 && (!ratio || !ratio->count || tensor_get(ratio, 0) != 0))
		return node_err(c, -EOPNOTSUPP, "training mode with a ratio above 0 is not supported (inference only)");
	if (c->m->opset < 7 && attr_int(c->n->pb, "is_test", 0) == 0 && attr_find(c->n->pb, "is_test"))
		return node_err(c, -EOPNOTSUPP, "training mode is not supported (inference only)");
	if ((ret = copy_out(c, 0, x, x->ndim, x->dims)))
		return ret;
	ret = out_alloc(c, 1, c->m->opset >= 10 ? ONNX_BOOL : x->dtype, x->ndim, x->dims);
	if (ret < 0)
		return ret;
	if (!ret)
		for (size_t i = 0; i < x->count; i++)
			tensor_set_i(node_out(c, 1), i, 1);
	return 0;
}

const onnx_kernel onnx_shape_kernels[OP_COUNT] = {
	[OP_CONCAT] = host_concat,	   [OP_SPLIT] = host_split,	[OP_SLICE] = host_slice,
	[OP_GATHER] = host_gather,	   [OP_SHAPE] = host_shape,	[OP_UNSQUEEZE] = host_unsqueeze,
	[OP_SQUEEZE] = host_squeeze,	   [OP_EXPAND] = host_expand,	[OP_TILE] = host_tile,
	[OP_TRANSPOSE] = host_transpose,   [OP_PAD] = host_pad,		[OP_CONSTANTOFSHAPE] = host_constantofshape,
	[OP_RANGE] = host_range,	   [OP_DROPOUT] = host_dropout,
};
