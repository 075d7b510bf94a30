/* SPDX-License-Identifier: MIT */
/*
 * ops_index.c - host kernels of the index and data-movement operators added for issue 30 (reach),
 * written from the ONNX operator specification: Trilu, CumSum, DepthToSpace, SpaceToDepth,
 * GatherElements, OneHot, ScatterElements (and its deprecated alias Scatter), ScatterND, EyeLike and
 * Hardmax.  None has MACs for the PE array, so they are the CPU reference and the host fallback both.
 * Every index read from a tensor is range-checked (the models are untrusted input: fuzz_load); an index
 * out of range is the node's error, never a read or write out of bounds.
 */
#include <stdio.h>

#include "ops_common.h"

/* A one-element integer input (Trilu's k, CumSum's axis). */
static int int_scalar(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what, int64_t *v)
{
	if (!is_int_type(t->dtype) || t->count != 1 || t->ndim > 1)
		return node_err(c, -EINVAL, "%s must be one integer (got %s, %zu values)", what,
				onnx_dtype_name(t->dtype), t->count);
	*v = tensor_get_i(t, 0);
	return 0;
}

/* A 0/1 attribute. */
static int attr_bool(const struct onnx_ctx *c, const char *name, int64_t def, bool *v)
{
	int64_t a = attr_int(c->n->pb, name, def);

	if (a != 0 && a != 1)
		return node_err(c, -EINVAL, "attribute %s = %lld (0 or 1)", name, (long long)a);
	*v = a != 0;
	return 0;
}

/* An index into a dimension of size n: negative counts from the end (the specification's [-n, n-1]). */
static int index_norm(const struct onnx_ctx *c, int64_t v, int64_t n, const char *what, int64_t *out)
{
	if (v < -n || v >= n)
		return node_err(c, -EINVAL, "%s %lld is out of range for a dimension of %lld", what, (long long)v,
				(long long)n);
	*out = v < 0 ? v + n : v;
	return 0;
}

static int64_t prod(const int64_t *d, unsigned from, unsigned to)
{
	int64_t p = 1;

	for (unsigned i = from; i < to; i++)
		p *= d[i];
	return p;
}

/* ---- Trilu ---- */

static int host_trilu(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *kt = node_in(c, 1);
	int64_t k = 0, rows, cols;
	struct onnx_tensor *y;
	bool upper = true;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = attr_bool(c, "upper", 1, &upper)))
		return ret;
	if (kt && (ret = int_scalar(c, kt, "k", &k)))
		return ret;
	if (x->ndim < 2)
		return node_err(c, -EINVAL, "input has rank %u (Trilu needs at least 2)", x->ndim);
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	rows = x->dims[x->ndim - 2];
	cols = x->dims[x->ndim - 1];
	es = onnx_dtype_size(x->dtype);
	for (size_t o = 0; o < x->count; o++) {
		int64_t j = (int64_t)o % cols, i = (int64_t)o / cols % rows;
		/* j - i cannot overflow (both below 2^31); k may be anything */
		bool keep = upper ? j - i >= k : j - i <= k;

		if (keep)
			memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + o * es, es);
		else
			memset((uint8_t *)y->data + o * es, 0, es);
	}
	return 0;
}

/* ---- CumSum ---- */

static int host_cumsum(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *at;
	int64_t axis, outer, n, inner;
	struct onnx_tensor *y;
	bool excl = false, rev = false;
	int ret;

	if ((ret = in_req(c, 0, "x", &x)) || (ret = in_req(c, 1, "axis", &at)) ||
	    (ret = attr_bool(c, "exclusive", 0, &excl)) || (ret = attr_bool(c, "reverse", 0, &rev)) ||
	    (ret = int_scalar(c, at, "axis", &axis)) || (ret = axis_norm(c, axis, x->ndim, &axis)))
		return ret;
	if (x->dtype != ONNX_FLOAT && x->dtype != ONNX_INT32 && x->dtype != ONNX_INT64)
		return node_err(c, -EINVAL, "element type %s (CumSum takes FLOAT, INT32, INT64 here)",
				onnx_dtype_name(x->dtype));
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	outer = prod(x->dims, 0, (unsigned)axis);
	n = x->dims[axis];
	inner = prod(x->dims, (unsigned)axis + 1, x->ndim);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double accf = 0;
			uint64_t acci = 0;	/* integers wrap, as numpy */

			for (int64_t s = 0; s < n; s++) {
				int64_t e = rev ? n - 1 - s : s;
				size_t off = (size_t)((o * n + e) * inner + i);

				if (x->dtype == ONNX_FLOAT) {
					float v = ((const float *)x->data)[off];

					if (!excl)
						accf += v;
					((float *)y->data)[off] = (float)accf;
					if (excl)
						accf += v;
				} else {
					uint64_t v = (uint64_t)tensor_get_i(x, off);

					if (!excl)
						acci += v;
					tensor_set_i(y, off, (int64_t)acci);
					if (excl)
						acci += v;
				}
			}
		}
	return 0;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static int blocksize_of(const struct onnx_ctx *c, const struct onnx_tensor *x, int64_t *b)
{
	if (!attr_find(c->n->pb, "blocksize"))
		return node_err(c, -EINVAL, "attribute 'blocksize' is missing");
	*b = attr_int(c->n->pb, "blocksize", 0);
	/* bounded so that b * b and a dimension times b stay within int64 */
	if (*b < 1 || *b > ONNX_MAX_DIM_SIZE)
		return node_err(c, -EINVAL, "blocksize %lld (1 to %d)", (long long)*b, ONNX_MAX_DIM_SIZE);
	if (x->ndim != 4)
		return node_err(c, -EINVAL, "input has rank %u (NCHW: 4)", x->ndim);
	return 0;
}

static int host_depthtospace(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t b, n, cc, h, w, dims[4];
	struct onnx_tensor *y;
	char buf[8];
	const char *mode = attr_string(c->n->pb, "mode", buf, sizeof(buf), "DCR");
	bool crd;
	size_t es, o = 0;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = blocksize_of(c, x, &b)))
		return ret;
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
		return node_err(c, -EINVAL, "mode '%s' (DCR or CRD)", mode);
	crd = !strcmp(mode, "CRD");
	if (x->dims[1] % (b * b))
		return node_err(c, -EINVAL, "channels %lld are not a multiple of blocksize^2 = %lld",
				(long long)x->dims[1], (long long)(b * b));
	n = x->dims[0];
	cc = x->dims[1] / (b * b);
	h = x->dims[2];
	w = x->dims[3];
	dims[0] = n;
	dims[1] = cc;
	dims[2] = h * b;
	dims[3] = w * b;
	if ((ret = out_alloc(c, 0, x->dtype, 4, dims)))
		return ret;
	y = node_out(c, 0);
	es = onnx_dtype_size(x->dtype);
	for (int64_t in = 0; in < n; in++)
		for (int64_t oc = 0; oc < cc; oc++)
			for (int64_t oh = 0; oh < h * b; oh++)
				for (int64_t ow = 0; ow < w * b; ow++, o++) {
					int64_t i = oh % b, j = ow % b;
					int64_t ic = crd ? (oc * b + i) * b + j : (i * b + j) * cc + oc;
					size_t src = (size_t)(((in * x->dims[1] + ic) * h + oh / b) * w + ow / b);

					memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + src * es, es);
				}
	return 0;
}

static int host_spacetodepth(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t b, n, cc, oh_n, ow_n, dims[4];
	struct onnx_tensor *y;
	size_t es, o = 0;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = blocksize_of(c, x, &b)))
		return ret;
	if (x->dims[2] % b || x->dims[3] % b)
		return node_err(c, -EINVAL, "height %lld and width %lld must be multiples of blocksize %lld",
				(long long)x->dims[2], (long long)x->dims[3], (long long)b);
	if (x->dims[1] > ONNX_MAX_DIM_SIZE / (b * b))	/* C * b * b within int64 (H = 0 allows any b) */
		return node_err(c, -EINVAL, "channels %lld times blocksize^2 = %lld exceed %d", (long long)x->dims[1],
				(long long)(b * b), ONNX_MAX_DIM_SIZE);
	n = x->dims[0];
	cc = x->dims[1];
	oh_n = x->dims[2] / b;
	ow_n = x->dims[3] / b;
	dims[0] = n;
	dims[1] = cc * b * b;
	dims[2] = oh_n;
	dims[3] = ow_n;
	if ((ret = out_alloc(c, 0, x->dtype, 4, dims)))
		return ret;
	y = node_out(c, 0);
	es = onnx_dtype_size(x->dtype);
	for (int64_t in = 0; in < n; in++)
		for (int64_t oc = 0; oc < cc * b * b; oc++)
			for (int64_t oh = 0; oh < oh_n; oh++)
				for (int64_t ow = 0; ow < ow_n; ow++, o++) {
					/* output channel (i * b + j) * C + c holds block offset (i, j) of channel c */
					int64_t ic = oc % cc, i = oc / cc / b, j = oc / cc % b;
					size_t src = (size_t)(((in * cc + ic) * x->dims[2] + oh * b + i) * x->dims[3] +
							      ow * b + j);

					memcpy((uint8_t *)y->data + o * es, (const uint8_t *)x->data + src * es, es);
				}
	return 0;
}

/* ---- GatherElements, ScatterElements / Scatter ---- */

/*
 * The shared checks of GatherElements and ScatterElements: integer indices of data's rank, no larger
 * than data in any dimension but axis (each of their elements addresses data through its own
 * coordinates); axis normalised.
 */
static int elements_check(const struct onnx_ctx *c, const struct onnx_tensor *data, const struct onnx_tensor *idx,
			  int64_t *axis)
{
	int ret;

	if (idx->dtype != ONNX_INT32 && idx->dtype != ONNX_INT64)
		return node_err(c, -EINVAL, "indices must be INT32 or INT64 (got %s)", onnx_dtype_name(idx->dtype));
	if (data->ndim < 1 || idx->ndim != data->ndim)
		return node_err(c, -EINVAL, "indices have rank %u, data %u (equal, at least 1)", idx->ndim,
				data->ndim);
	if ((ret = axis_norm(c, attr_int(c->n->pb, "axis", 0), data->ndim, axis)))
		return ret;
	for (unsigned d = 0; d < data->ndim; d++)
		if (d != *axis && idx->dims[d] > data->dims[d])
			return node_err(c, -EINVAL, "indices dimension %u (%lld) exceeds data's (%lld)", d,
					(long long)idx->dims[d], (long long)data->dims[d]);
	return 0;
}

/* The element of data that element o of indices addresses. */
static int elements_target(const struct onnx_ctx *c, const struct onnx_tensor *data, const struct onnx_tensor *idx,
			   int64_t axis, size_t o, size_t *off)
{
	int64_t rem = (int64_t)o, st = 1, v = 0;
	size_t t = 0;
	int ret;

	if ((ret = index_norm(c, tensor_get_i(idx, o), data->dims[axis], "index", &v)))
		return ret;
	for (int d = (int)idx->ndim - 1; d >= 0; d--) {
		int64_t k = rem % idx->dims[d];

		rem /= idx->dims[d];
		t += (size_t)((d == axis ? v : k) * st);
		st *= data->dims[d];
	}
	*off = t;
	return 0;
}

static int host_gatherelements(struct onnx_ctx *c)
{
	const struct onnx_tensor *data, *idx;
	struct onnx_tensor *y;
	int64_t axis;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "data", &data)) || (ret = in_req(c, 1, "indices", &idx)) ||
	    (ret = elements_check(c, data, idx, &axis)) || (ret = out_alloc(c, 0, data->dtype, idx->ndim, idx->dims)))
		return ret;
	y = node_out(c, 0);
	es = onnx_dtype_size(data->dtype);
	for (size_t o = 0; o < idx->count; o++) {
		size_t src;

		if ((ret = elements_target(c, data, idx, axis, o, &src)))
			return ret;
		memcpy((uint8_t *)y->data + o * es, (const uint8_t *)data->data + src * es, es);
	}
	return 0;
}

enum scatter_red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static int reduction_of(const struct onnx_ctx *c, enum scatter_red *r)
{
	static const char *const names[] = { "none", "add", "mul", "max", "min" };
	char buf[8];
	const char *s = attr_string(c->n->pb, "reduction", buf, sizeof(buf), "none");

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*r = (enum scatter_red)i;
			return 0;
		}
	return node_err(c, -EINVAL, "reduction '%s' (none, add, mul, max or min)", s);
}

/* y[off] = reduce(y[off], u[uoff]) */
static void scatter_one(struct onnx_tensor *y, size_t off, const struct onnx_tensor *u, size_t uoff,
			enum scatter_red r)
{
	size_t es = onnx_dtype_size(y->dtype);

	if (r == RED_NONE) {
		memcpy((uint8_t *)y->data + off * es, (const uint8_t *)u->data + uoff * es, es);
	} else if (y->dtype == ONNX_FLOAT) {
		double a = ((float *)y->data)[off], b = ((const float *)u->data)[uoff];

		((float *)y->data)[off] = (float)(r == RED_ADD ? a + b : r == RED_MUL ? a * b :
						  r == RED_MAX ? fmax(a, b) : fmin(a, b));
	} else {
		int64_t a = tensor_get_i(y, off), b = tensor_get_i(u, uoff);

		tensor_set_i(y, off, r == RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b) :
				     r == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b) :
				     r == RED_MAX ? (a > b ? a : b) : (a < b ? a : b));
	}
}

static int scatter_inputs(const struct onnx_ctx *c, const struct onnx_tensor **data, const struct onnx_tensor **idx,
			  const struct onnx_tensor **upd, enum scatter_red *r)
{
	int ret;

	*r = RED_NONE;
	if ((ret = in_req(c, 0, "data", data)) || (ret = in_req(c, 1, "indices", idx)) ||
	    (ret = in_req(c, 2, "updates", upd)))
		return ret;
	if (c->n->op != OP_SCATTER && (ret = reduction_of(c, r)))	/* Scatter (opset 9-10) has none */
		return ret;
	if ((*upd)->dtype != (*data)->dtype)
		return node_err(c, -EINVAL, "updates are %s, data %s (one element type)",
				onnx_dtype_name((*upd)->dtype), onnx_dtype_name((*data)->dtype));
	if (*r != RED_NONE && (*data)->dtype == ONNX_BOOL)
		return node_err(c, -EINVAL, "reduction on BOOL data");
	return 0;
}

static int host_scatterelements(struct onnx_ctx *c)
{
	const struct onnx_tensor *data, *idx, *upd;
	enum scatter_red r;
	struct onnx_tensor *y;
	int64_t axis;
	int ret;

	if ((ret = scatter_inputs(c, &data, &idx, &upd, &r)) || (ret = elements_check(c, data, idx, &axis)))
		return ret;
	if (upd->ndim != idx->ndim || memcmp(upd->dims, idx->dims, idx->ndim * sizeof(int64_t)))
		return node_err(c, -EINVAL, "updates must have the shape of indices");
	if ((ret = out_alloc(c, 0, data->dtype, data->ndim, data->dims)))
		return ret;
	y = node_out(c, 0);
	memcpy(y->data, data->data, data->count * onnx_dtype_size(data->dtype));
	for (size_t o = 0; o < idx->count; o++) {
		size_t dst;

		if ((ret = elements_target(c, data, idx, axis, o, &dst)))
			return ret;
		scatter_one(y, dst, upd, o, r);
	}
	return 0;
}

/* ---- ScatterND ---- */

static int host_scatternd(struct onnx_ctx *c)
{
	const struct onnx_tensor *data, *idx, *upd;
	int64_t k, n_tuples, slice, st[ONNX_MAX_DIMS];
	enum scatter_red r;
	struct onnx_tensor *y;
	unsigned q, want;
	int ret;

	if ((ret = scatter_inputs(c, &data, &idx, &upd, &r)))
		return ret;
	if (idx->dtype != ONNX_INT64 && idx->dtype != ONNX_INT32)
		return node_err(c, -EINVAL, "indices must be INT64 (got %s)", onnx_dtype_name(idx->dtype));
	q = idx->ndim;
	if (data->ndim < 1 || q < 1)
		return node_err(c, -EINVAL, "data and indices need rank 1 or more (%u, %u)", data->ndim, q);
	k = idx->dims[q - 1];
	if (k < 1 || k > data->ndim)
		return node_err(c, -EINVAL, "indices' last dimension %lld (1 to data's rank %u)", (long long)k,
				data->ndim);
	/* updates: indices.shape[:-1] + data.shape[k:] */
	want = q - 1 + data->ndim - (unsigned)k;
	if (upd->ndim != want || memcmp(upd->dims, idx->dims, (q - 1) * sizeof(int64_t)) ||
	    memcmp(upd->dims + q - 1, data->dims + k, (data->ndim - (unsigned)k) * sizeof(int64_t)))
		return node_err(c, -EINVAL, "updates must have the shape indices.shape[:-1] + data.shape[%lld:]",
				(long long)k);
	if ((ret = out_alloc(c, 0, data->dtype, data->ndim, data->dims)))
		return ret;
	y = node_out(c, 0);
	memcpy(y->data, data->data, data->count * onnx_dtype_size(data->dtype));
	strides_of(data->ndim, data->dims, st);
	n_tuples = prod(idx->dims, 0, q - 1);
	slice = prod(data->dims, (unsigned)k, data->ndim);
	for (int64_t t = 0; t < n_tuples; t++) {
		size_t base = 0;

		for (int64_t j = 0; j < k; j++) {
			int64_t v = 0;

			if ((ret = index_norm(c, tensor_get_i(idx, (size_t)(t * k + j)), data->dims[j], "index", &v)))
				return ret;
			base += (size_t)(v * st[j]);
		}
		for (int64_t s = 0; s < slice; s++)
			scatter_one(y, base + (size_t)s, upd, (size_t)(t * slice + s), r);
	}
	return 0;
}

/* ---- OneHot ---- */

static int host_onehot(struct onnx_ctx *c)
{
	const struct onnx_tensor *idx, *dt, *vals;
	int64_t depth, axis = attr_int(c->n->pb, "axis", -1), dims[ONNX_MAX_DIMS], outer, inner;
	struct onnx_tensor *y;
	double dd;
	size_t es, o = 0;
	int ret;

	if ((ret = in_req(c, 0, "indices", &idx)) || (ret = in_req(c, 1, "depth", &dt)) ||
	    (ret = in_req(c, 2, "values", &vals)))
		return ret;
	if (dt->ndim > 1 || (ret = scalar_of(c, dt, "depth", &dd)))
		return ret ? ret : node_err(c, -EINVAL, "depth must be a scalar or a 1-element 1-D tensor");
	if (!(dd >= 1 && dd <= ONNX_MAX_DIM_SIZE))
		return node_err(c, -EINVAL, "depth %g (1 to %d)", dd, ONNX_MAX_DIM_SIZE);
	depth = (int64_t)dd;
	if (vals->ndim != 1 || vals->count != 2)
		return node_err(c, -EINVAL, "values must be [off_value, on_value] (1-D, 2 elements)");
	if (idx->dtype == ONNX_BOOL)
		return node_err(c, -EINVAL, "indices must be numbers (got BOOL)");
	if (idx->ndim + 1 > ONNX_MAX_DIMS)
		return node_err(c, -EINVAL, "output rank %u exceeds %d", idx->ndim + 1, ONNX_MAX_DIMS);
	if ((ret = axis_norm(c, axis, idx->ndim + 1, &axis)))
		return ret;
	for (unsigned d = 0, s = 0; d <= idx->ndim; d++)
		dims[d] = d == axis ? depth : idx->dims[s++];
	if ((ret = out_alloc(c, 0, vals->dtype, idx->ndim + 1, dims)))
		return ret;
	y = node_out(c, 0);
	es = onnx_dtype_size(vals->dtype);
	outer = prod(idx->dims, 0, (unsigned)axis);
	inner = prod(idx->dims, (unsigned)axis, idx->ndim);
	for (int64_t a = 0; a < outer; a++)
		for (int64_t d = 0; d < depth; d++)
			for (int64_t b = 0; b < inner; b++, o++) {
				size_t i = (size_t)(a * inner + b);
				/* non-integer indices are truncated (the reference casts them to int64); an
				 * index outside [-depth, depth-1] gives an all-off row */
				double fv = idx->dtype == ONNX_FLOAT ? trunc(tensor_get(idx, i)) : 0;
				int64_t v = idx->dtype == ONNX_FLOAT ? (fv >= -dd && fv < dd ? (int64_t)fv : INT64_MAX)
								     : tensor_get_i(idx, i);
				bool on = v < 0 ? v + depth == d : v == d;

				memcpy((uint8_t *)y->data + o * es, (const uint8_t *)vals->data + (on ? es : 0), es);
			}
	return 0;
}

/* ---- EyeLike ---- */

static int host_eyelike(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t k = attr_int(c->n->pb, "k", 0), dt;
	struct onnx_tensor *y;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)))
		return ret;
	dt = attr_int(c->n->pb, "dtype", x->dtype);
	if (x->ndim != 2)
		return node_err(c, -EINVAL, "input has rank %u (EyeLike takes 2-D)", x->ndim);
	if (dt < 0 || dt > 16 || !onnx_dtype_size((enum onnx_dtype)dt))
		return node_err(c, -EOPNOTSUPP, "dtype %s is not supported (" ONNX_DTYPES_SUPPORTED ")",
				onnx_dtype_name((int)dt));
	if ((ret = out_alloc(c, 0, (enum onnx_dtype)dt, 2, x->dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t o = 0; o < y->count; o++)
		tensor_set_i(y, o, (int64_t)o % x->dims[1] - (int64_t)o / x->dims[1] == k);
	return 0;
}

/* ---- Hardmax ---- */

static int host_hardmax(struct onnx_ctx *c)
{
	bool coerce = c->m->opset < 13;	/* opsets 1-11: over the 2-D coercion [d0..axis-1, axis..] */
	const struct onnx_tensor *x;
	int64_t axis = attr_int(c->n->pb, "axis", coerce ? 1 : -1), outer, n, inner;
	struct onnx_tensor *y;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT)
		return node_err(c, -EOPNOTSUPP, "element type %s is not supported (FLOAT)", onnx_dtype_name(x->dtype));
	if (x->ndim < 1)
		return node_err(c, -EINVAL, "input is a scalar (Hardmax needs rank 1 or more)");
	if ((ret = axis_norm(c, axis, x->ndim, &axis)) || (ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	outer = prod(x->dims, 0, (unsigned)axis);
	n = coerce ? prod(x->dims, (unsigned)axis, x->ndim) : x->dims[axis];
	inner = coerce ? 1 : prod(x->dims, (unsigned)axis + 1, x->ndim);
	memset(y->data, 0, y->count * sizeof(float));
	for (int64_t a = 0; a < outer; a++)
		for (int64_t b = 0; b < inner && n > 0; b++) {
			const float *xp = (const float *)x->data + a * n * inner + b;
			int64_t best = 0;

			for (int64_t s = 1; s < n; s++)	/* ties: the first maximum */
				/* NaN is the maximum, as numpy's argmax (the specification's reference) and the
				 * vector units' ARGMAX take it: the first NaN */
				if (!isnan(xp[best * inner]) && (isnan(xp[s * inner]) || xp[s * inner] > xp[best * inner]))
					best = s;
			((float *)y->data)[a * n * inner + best * inner + b] = 1;
		}
	return 0;
}

const onnx_kernel onnx_index_kernels[OP_COUNT] = {
	[OP_TRILU] = host_trilu,
	[OP_CUMSUM] = host_cumsum,
	[OP_DEPTHTOSPACE] = host_depthtospace,
	[OP_SPACETODEPTH] = host_spacetodepth,
	[OP_GATHERELEMENTS] = host_gatherelements,
	[OP_SCATTERELEMENTS] = host_scatterelements,
	[OP_SCATTER] = host_scatterelements,
	[OP_SCATTERND] = host_scatternd,
	[OP_ONEHOT] = host_onehot,
	[OP_EYELIKE] = host_eyelike,
	[OP_HARDMAX] = host_hardmax,
};
