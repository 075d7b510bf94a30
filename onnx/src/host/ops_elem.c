/* SPDX-License-Identifier: MIT */
/*
 * ops_elem.c - element-wise host kernels (issue 15), written from the ONNX operator specification:
 * activations (Sigmoid, HardSigmoid, HardSwish, Tanh, Exp, Log, Erf, Gelu, LeakyRelu, Elu, Selu,
 * Softplus, Softsign, Sqrt, Reciprocal, Floor, Ceil, Neg, Abs; issue 30: the trigonometric and
 * hyperbolic functions, Shrink, ThresholdedRelu), Clip, PRelu, the broadcasting binary operators (Sub,
 * Mul, Div, Pow, Equal, Greater, Less; issue 30: Mod, BitShift), the variadic Min/Max/Sum/Mean, Where,
 * Not and Cast.  Float math runs in double and rounds once to float; integer arithmetic runs in int64 and
 * wraps to the element type (numpy's behaviour).  They are the CPU reference and the host fallback.
 */
#include <float.h>
#include <stdio.h>

#include "ops_common.h"

int in_req(const struct onnx_ctx *c, unsigned i, const char *what, const struct onnx_tensor **t)
{
	*t = node_in(c, i);
	if (!*t)
		return node_err(c, -EINVAL, "input %u (%s) is missing", i, what);
	return 0;
}

int axis_norm(const struct onnx_ctx *c, int64_t axis, unsigned rank, int64_t *out)
{
	int64_t a = axis < 0 ? axis + (int64_t)rank : axis;

	if (a < 0 || a >= (int64_t)rank)
		return node_err(c, -EINVAL, "axis %lld is out of range for rank %u", (long long)axis, rank);
	*out = a;
	return 0;
}

int int_list(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what, int64_t *out, unsigned max,
	     unsigned *n)
{
	if (!is_int_type(t->dtype) || t->ndim > 1)
		return node_err(c, -EINVAL, "%s must be a 1-D integer tensor (got %s, rank %u)", what,
				onnx_dtype_name(t->dtype), t->ndim);
	if (t->count > max)
		return node_err(c, -EINVAL, "%s has %zu values (at most %u)", what, t->count, max);
	for (size_t i = 0; i < t->count; i++)
		out[i] = tensor_get_i(t, i);
	*n = (unsigned)t->count;
	return 0;
}

int scalar_of(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what, double *v)
{
	if (t->count != 1)
		return node_err(c, -EINVAL, "%s must hold one value (has %zu)", what, t->count);
	*v = tensor_get(t, 0);
	return 0;
}

int bcast_init(const struct onnx_ctx *c, struct bcast *b, const struct onnx_tensor *const *t, unsigned n)
{
	unsigned nd = 0;

	memset(b, 0, sizeof(*b));
	for (unsigned k = 0; k < n; k++)
		nd = t[k]->ndim > nd ? t[k]->ndim : nd;
	b->nd = nd;
	b->n = n;
	for (int i = (int)nd - 1; i >= 0; i--) {
		int64_t d = 1;

		for (unsigned k = 0; k < n; k++) {
			int ik = i - (int)(nd - t[k]->ndim);
			int64_t dk = ik >= 0 ? t[k]->dims[ik] : 1;

			if (dk != 1 && d != 1 && dk != d)
				return node_err(c, -EINVAL, "shapes do not broadcast (dimension %d: %lld vs %lld)", i,
						(long long)d, (long long)dk);
			if (dk != 1)
				d = dk;
		}
		b->dims[i] = d;
	}
	for (unsigned k = 0; k < n; k++) {
		int64_t s = 1;

		for (int i = (int)nd - 1; i >= 0; i--) {
			int ik = i - (int)(nd - t[k]->ndim);
			int64_t dk = ik >= 0 ? t[k]->dims[ik] : 1;

			b->st[k][i] = dk == 1 ? 0 : s;
			s *= dk;
		}
	}
	return 0;
}

/* ---- unary ---- */

static double gelu(double x, bool tanh_approx)
{
	if (tanh_approx)
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	return 0.5 * x * (1 + erf(x / sqrt(2)));
}

static double unary_f(enum onnx_op op, double x, double alpha, double beta, double gamma)
{
	switch (op) {
	case OP_SIGMOID:
		return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
	case OP_HARDSIGMOID:
		return fmax(0, fmin(1, alpha * x + beta));
	case OP_HARDSWISH:
		return x * fmax(0, fmin(1, x / 6 + 0.5));
	case OP_TANH:
		return tanh(x);
	case OP_EXP:
		return exp(x);
	case OP_LOG:
		return log(x);
	case OP_ERF:
		return erf(x);
	case OP_GELU:
		return gelu(x, alpha != 0);
	case OP_LEAKYRELU:
		return x < 0 ? alpha * x : x;
	case OP_ELU:
		return x < 0 ? alpha * (exp(x) - 1) : x;
	case OP_SELU:
		return x <= 0 ? gamma * (alpha * exp(x) - alpha) : gamma * x;
	case OP_SOFTPLUS:
		return x > 30 ? x : log1p(exp(x));
	case OP_SOFTSIGN:
		return x / (1 + fabs(x));
	case OP_SQRT:
		return sqrt(x);
	case OP_RECIPROCAL:
		return 1 / x;
	case OP_FLOOR:
		return floor(x);
	case OP_CEIL:
		return ceil(x);
	case OP_NEG:
		return -x;
	case OP_ABS:
		return fabs(x);
	case OP_SIN:
		return sin(x);
	case OP_COS:
		return cos(x);
	case OP_TAN:
		return tan(x);
	case OP_ASIN:
		return asin(x);
	case OP_ACOS:
		return acos(x);
	case OP_ATAN:
		return atan(x);
	case OP_SINH:
		return sinh(x);
	case OP_COSH:
		return cosh(x);
	case OP_ASINH:
		return asinh(x);
	case OP_ACOSH:
		return acosh(x);
	case OP_ATANH:
		return atanh(x);
	case OP_SHRINK:	/* alpha = lambd, beta = bias */
		return x < -alpha ? x + beta : x > alpha ? x - beta : 0;
	case OP_THRESHOLDEDRELU:
		return x > alpha ? x : 0;
	default:
		return x;
	}
}

static int host_unary(struct onnx_ctx *c)
{
	const Onnx__NodeProto *p = c->n->pb;
	enum onnx_op op = c->n->op;
	const struct onnx_tensor *x;
	struct onnx_tensor *y;
	double alpha = 0, beta = 0, gamma = 0;
	char buf[16];
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype != ONNX_FLOAT && !((op == OP_NEG || op == OP_ABS) && x->dtype != ONNX_UINT8 && is_int_type(x->dtype)) &&
	    !(op == OP_ABS && x->dtype == ONNX_UINT8))
		return node_err(c, -EOPNOTSUPP, "element type %s is not supported (FLOAT%s)", onnx_dtype_name(x->dtype),
				op == OP_NEG || op == OP_ABS ? ", INT8, INT32, INT64" : "");
	switch (op) {
	case OP_HARDSIGMOID:
		alpha = attr_float(p, "alpha", 0.2f);
		beta = attr_float(p, "beta", 0.5f);
		break;
	case OP_LEAKYRELU:
		alpha = attr_float(p, "alpha", 0.01f);
		break;
	case OP_ELU:
		alpha = attr_float(p, "alpha", 1.0f);
		break;
	case OP_SELU:
		alpha = attr_float(p, "alpha", 1.67326319217681884765625f);
		gamma = attr_float(p, "gamma", 1.05070102214813232421875f);
		break;
	case OP_SHRINK:
		alpha = attr_float(p, "lambd", 0.5f);
		beta = attr_float(p, "bias", 0.0f);	/* a negative lambd: x < -lambd is tested first */
		break;
	case OP_THRESHOLDEDRELU:
		alpha = attr_float(p, "alpha", 1.0f);
		break;
	case OP_GELU: {
		const char *a = attr_string(p, "approximate", buf, sizeof(buf), "none");

		if (strcmp(a, "none") && strcmp(a, "tanh"))
			return node_err(c, -EINVAL, "approximate '%s' (none or tanh)", a);
		alpha = !strcmp(a, "tanh");
		break;
	}
	default:
		break;
	}
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	if (x->dtype == ONNX_FLOAT) {
		const float *xp = x->data;
		float *yp = y->data;

		for (size_t i = 0; i < x->count; i++)
			yp[i] = (float)unary_f(op, xp[i], alpha, beta, gamma);
		return 0;
	}
	for (size_t i = 0; i < x->count; i++) {	/* Neg/Abs of integers: wrap as numpy */
		int64_t v = tensor_get_i(x, i);

		tensor_set_i(y, i, op == OP_NEG || v < 0 ? (int64_t)(0 - (uint64_t)v) : v);
	}
	return 0;
}

/* ---- Clip ---- */

static int clip_bounds(const struct onnx_ctx *c, const struct onnx_tensor *x, double *lo, double *hi)
{
	const struct onnx_tensor *tmin = node_in(c, 1), *tmax = node_in(c, 2);
	int ret;

	if (c->m->opset < 11) {
		*lo = attr_float(c->n->pb, "min", -FLT_MAX);
		*hi = attr_float(c->n->pb, "max", FLT_MAX);
		return 0;
	}
	*lo = -INFINITY;
	*hi = INFINITY;
	if (x->dtype != ONNX_FLOAT) {
		*lo = -9.2e18;	/* within int64: the later (int64_t) conversion stays defined */
		*hi = 9.2e18;
	}
	if (tmin && ((ret = scalar_of(c, tmin, "min", lo))))
		return ret;
	if (tmax && ((ret = scalar_of(c, tmax, "max", hi))))
		return ret;
	if ((tmin && tmin->dtype != x->dtype) || (tmax && tmax->dtype != x->dtype))
		return node_err(c, -EINVAL, "min and max must have the input's element type");
	return 0;
}

/* The bounds of a Clip whose min/max are constants (fusion into a Conv/Gemm epilogue, fold.c). */
int clip_const_bounds(const struct onnx_model *m, const struct onnx_node *n, float *lo, float *hi)
{
	struct onnx_ctx c = { .m = (struct onnx_model *)m, .n = n };
	struct onnx_tensor dummy = { .dtype = ONNX_FLOAT };
	double l, h;

	for (unsigned i = 1; i < n->n_in; i++)
		if (n->in[i] >= 0 && !m->vals[n->in[i]].is_const)
			return -EINVAL;
	if (clip_bounds(&c, &dummy, &l, &h))
		return -EINVAL;
	*lo = (float)fmax(l, -FLT_MAX);
	*hi = (float)fmin(h, FLT_MAX);
	return 0;
}

/* The bounds of a FLOAT Clip at run time (its device lowering). */
int clip_runtime_bounds(const struct onnx_ctx *c, float *lo, float *hi)
{
	double l, h;
	int ret = clip_bounds(c, node_in(c, 0), &l, &h);

	if (ret)
		return ret;
	*lo = (float)l;
	*hi = (float)h;
	return 0;
}

/* A bound as an int64 without undefined conversions: beyond the range (the float defaults are
 * +-FLT_MAX, a crafted bound may be anything) it saturates; NaN is no bound (def). */
static int64_t bound_i64(double v, int64_t def)
{
	if (v != v)
		return def;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	return (int64_t)v;
}

static int host_clip(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	struct onnx_tensor *y;
	double lo, hi;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)) || (ret = clip_bounds(c, x, &lo, &hi)))
		return ret;
	if (x->dtype == ONNX_BOOL)
		return node_err(c, -EOPNOTSUPP, "element type BOOL");
	if ((ret = out_alloc(c, 0, x->dtype, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t i = 0; i < x->count; i++) {
		if (x->dtype == ONNX_FLOAT) {
			float v = ((const float *)x->data)[i];

			/* min first, then max: min > max gives max, as the specification's numpy reference */
			((float *)y->data)[i] = v != v ? v : (float)fmin(fmax(v, lo), hi);
		} else {
			int64_t v = tensor_get_i(x, i), l = bound_i64(lo, INT64_MIN), h = bound_i64(hi, INT64_MAX);

			v = v < l ? l : v;
			tensor_set_i(y, i, v > h ? h : v);
		}
	}
	return 0;
}

/* ---- binary, broadcasting ---- */

static double binary_f(enum onnx_op op, double a, double b)
{
	switch (op) {
	case OP_SUB:
		return a - b;
	case OP_MUL:
		return a * b;
	case OP_DIV:
		return a / b;
	case OP_POW:
		return pow(a, b);
	case OP_EQUAL:
		return a == b;
	case OP_GREATER:
		return a > b;
	case OP_LESS:
		return a < b;
	case OP_GREATEREQUAL:
		return a >= b;
	case OP_LESSEQUAL:
		return a <= b;
	case OP_MIN:
		return a != a || b != b ? NAN : fmin(a, b);
	case OP_MAX:
		return a != a || b != b ? NAN : fmax(a, b);
	case OP_SUM:
	case OP_MEAN:
	default:
		return a + b;
	}
}

static int64_t binary_i(enum onnx_op op, int64_t a, int64_t b)
{
	switch (op) {
	case OP_SUB:
		return (int64_t)((uint64_t)a - (uint64_t)b);
	case OP_MUL:
		return (int64_t)((uint64_t)a * (uint64_t)b);
	case OP_DIV:	/* truncation as C; x / 0 = 0 and INT64_MIN / -1 wraps (never a trap) */
		if (!b)
			return 0;
		if (b == -1)
			return (int64_t)(0 - (uint64_t)a);
		return a / b;
	case OP_EQUAL:
		return a == b;
	case OP_GREATER:
		return a > b;
	case OP_LESS:
		return a < b;
	case OP_GREATEREQUAL:
		return a >= b;
	case OP_LESSEQUAL:
		return a <= b;
	case OP_AND:
		return a && b;
	case OP_OR:
		return a || b;
	case OP_XOR:
		return !a != !b;
	case OP_MIN:
		return a < b ? a : b;
	case OP_MAX:
		return a > b ? a : b;
	default:
		return (int64_t)((uint64_t)a + (uint64_t)b);
	}
}

static bool is_compare(enum onnx_op op)
{
	return op == OP_EQUAL || op == OP_GREATER || op == OP_LESS || op == OP_GREATEREQUAL || op == OP_LESSEQUAL ||
	       op == OP_AND || op == OP_OR || op == OP_XOR;
}

/* out = a op b into a freshly allocated tensor y of the broadcast shape. */
static int binary_into(const struct onnx_ctx *c, enum onnx_op op, const struct onnx_tensor *a,
		       const struct onnx_tensor *b, struct onnx_tensor *y)
{
	const struct onnx_tensor *t[2] = { a, b };
	enum onnx_dtype odt = is_compare(op) ? ONNX_BOOL : a->dtype;
	bool pow_mixed = op == OP_POW && a->dtype != b->dtype;
	struct bcast bc;
	int ret;

	if (a->dtype != b->dtype && !pow_mixed)
		return node_err(c, -EINVAL, "operands have different element types (%s, %s)", onnx_dtype_name(a->dtype),
				onnx_dtype_name(b->dtype));
	if (op != OP_EQUAL && (a->dtype == ONNX_BOOL) != (op == OP_AND || op == OP_OR || op == OP_XOR))
		return node_err(c, -EINVAL, "element type %s (And/Or/Xor take BOOL, the others numbers)",
				onnx_dtype_name(a->dtype));
	if ((ret = bcast_init(c, &bc, t, 2)))
		return ret;
	ret = onnx_tensor_alloc(y, odt, bc.nd, bc.dims);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	if (a->dtype == ONNX_FLOAT && b->dtype == ONNX_FLOAT) {
		const float *ap = a->data, *bp = b->data;

		for (size_t o = 0; o < y->count; o++, bcast_next(&bc)) {
			double v = binary_f(op, ap[bc.off[0]], bp[bc.off[1]]);

			if (odt == ONNX_FLOAT)
				((float *)y->data)[o] = (float)v;
			else
				((uint8_t *)y->data)[o] = v != 0;
		}
	} else if (a->dtype == ONNX_DOUBLE && !pow_mixed) {	/* Sub/Mul/Div/comparisons in double (dtype.c) */
		for (size_t o = 0; o < y->count; o++, bcast_next(&bc))
			tensor_set(y, o, binary_f(op, tensor_get(a, bc.off[0]), tensor_get(b, bc.off[1])));
	} else if (pow_mixed || (op == OP_POW && a->dtype != ONNX_INT64)) {
		for (size_t o = 0; o < y->count; o++, bcast_next(&bc))
			tensor_set(y, o, pow(tensor_get(a, bc.off[0]), tensor_get(b, bc.off[1])));
	} else if (op == OP_POW) {
		for (size_t o = 0; o < y->count; o++, bcast_next(&bc)) {
			int64_t base = tensor_get_i(a, bc.off[0]), e = tensor_get_i(b, bc.off[1]), r = 1;

			for (int64_t k = 0; k < e && k < 64; k++)	/* beyond 64 it has wrapped for |base| >= 2 */
				r = (int64_t)((uint64_t)r * (uint64_t)base);
			tensor_set_i(y, o, e < 0 ? (base == 1 ? 1 : 0) : r);
		}
	} else {
		for (size_t o = 0; o < y->count; o++, bcast_next(&bc))
			tensor_set_i(y, o, binary_i(op, tensor_get_i(a, bc.off[0]), tensor_get_i(b, bc.off[1])));
	}
	return 0;
}

static int host_binary(struct onnx_ctx *c)
{
	const struct onnx_tensor *a, *b;
	struct onnx_tensor tmp;
	int ret;

	if ((ret = in_req(c, 0, "A", &a)) || (ret = in_req(c, 1, "B", &b)))
		return ret;
	if ((ret = binary_into(c, c->n->op, a, b, &tmp)))
		return ret;
	*node_out(c, 0) = tmp;
	return 0;
}

/* Min, Max, Sum, Mean: 1..N inputs, folded left to right with broadcasting. */
static int host_variadic(struct onnx_ctx *c)
{
	struct onnx_tensor acc, next;
	int ret;

	if (!c->n->n_in)
		return node_err(c, -EINVAL, "needs at least one input");
	for (unsigned i = 0; i < c->n->n_in; i++)
		if (!node_in(c, i))
			return node_err(c, -EINVAL, "input %u is missing", i);
	if (node_in(c, 0)->dtype == ONNX_BOOL || (c->n->op == OP_MEAN && node_in(c, 0)->dtype != ONNX_FLOAT))
		return node_err(c, -EOPNOTSUPP, "element type %s", onnx_dtype_name(node_in(c, 0)->dtype));
	if ((ret = tensor_copy(&acc, node_in(c, 0))))
		return node_err(c, ret, "out of memory");
	for (unsigned i = 1; i < c->n->n_in; i++) {
		ret = binary_into(c, c->n->op, &acc, node_in(c, i), &next);
		onnx_tensor_release(&acc);
		if (ret)
			return ret;
		acc = next;
	}
	if (c->n->op == OP_MEAN)
		for (size_t i = 0; i < acc.count; i++)
			((float *)acc.data)[i] = (float)((double)((float *)acc.data)[i] / c->n->n_in);
	*node_out(c, 0) = acc;
	return 0;
}

/* PRelu: slope broadcast unidirectionally to X (opset 7+), y = x < 0 ? slope * x : x. */
static int host_prelu(struct onnx_ctx *c)
{
	const struct onnx_tensor *x, *s, *t[2];
	struct onnx_tensor sc;
	struct bcast bc;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "slope", &s)))
		return ret;
	if (x->dtype != ONNX_FLOAT || s->dtype != ONNX_FLOAT)
		return node_err(c, -EOPNOTSUPP, "X and slope must be FLOAT");
	t[0] = x;
	t[1] = s;
	if (c->m->opset < 7 && s->ndim == 1 && x->ndim >= 2 && s->count == (size_t)x->dims[1] && s->count > 1) {
		/* PRelu-6: a 1-D slope is per channel (axis 1), not numpy-broadcast */
		sc = *s;
		sc.ndim = x->ndim - 1;
		sc.dims[0] = s->dims[0];
		for (unsigned d = 1; d < sc.ndim; d++)
			sc.dims[d] = 1;
		t[1] = &sc;
	}
	if ((ret = bcast_init(c, &bc, t, 2)))
		return ret;
	if (bc.nd != x->ndim || memcmp(bc.dims, x->dims, x->ndim * sizeof(int64_t)))
		return node_err(c, -EINVAL, "slope does not broadcast to X's shape");
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	for (size_t o = 0; o < x->count; o++, bcast_next(&bc)) {
		float v = ((const float *)x->data)[o];

		((float *)node_out(c, 0)->data)[o] = v < 0 ? (float)((double)((const float *)s->data)[bc.off[1]] * v) : v;
	}
	return 0;
}

static int host_where(struct onnx_ctx *c)
{
	const struct onnx_tensor *t[3];
	struct onnx_tensor *y;
	struct bcast bc;
	size_t es;
	int ret;

	if ((ret = in_req(c, 0, "condition", &t[0])) || (ret = in_req(c, 1, "X", &t[1])) ||
	    (ret = in_req(c, 2, "Y", &t[2])))
		return ret;
	if (t[0]->dtype != ONNX_BOOL || t[1]->dtype != t[2]->dtype)
		return node_err(c, -EINVAL, "condition must be BOOL and X, Y of one element type");
	if ((ret = bcast_init(c, &bc, t, 3)) || (ret = out_alloc(c, 0, t[1]->dtype, bc.nd, bc.dims)))
		return ret;
	y = node_out(c, 0);
	es = onnx_dtype_size(y->dtype);
	for (size_t o = 0; o < y->count; o++, bcast_next(&bc)) {
		bool k = ((const uint8_t *)t[0]->data)[bc.off[0]];

		memcpy((uint8_t *)y->data + o * es,
		       (const uint8_t *)t[k ? 1 : 2]->data + bc.off[k ? 1 : 2] * es, es);
	}
	return 0;
}

static int host_size(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int ret;

	if ((ret = in_req(c, 0, "data", &x)) || (ret = out_alloc(c, 0, ONNX_INT64, 0, NULL)))
		return ret;
	*(int64_t *)node_out(c, 0)->data = (int64_t)x->count;
	return 0;
}

static int host_not(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)))
		return ret;
	if (x->dtype != ONNX_BOOL)
		return node_err(c, -EINVAL, "X must be BOOL");
	if ((ret = out_alloc(c, 0, ONNX_BOOL, x->ndim, x->dims)))
		return ret;
	for (size_t i = 0; i < x->count; i++)
		((uint8_t *)node_out(c, 0)->data)[i] = !((const uint8_t *)x->data)[i];
	return 0;
}

/* Cast between FLOAT, UINT8, INT8, INT32, INT64 and BOOL: float -> integer truncates toward zero
 * (saturating out-of-range values, which ONNX leaves undefined), anything -> BOOL is v != 0. */
static int host_cast(struct onnx_ctx *c)
{
	const struct onnx_tensor *x;
	int64_t to = attr_int(c->n->pb, "to", 0);
	struct onnx_tensor *y;
	int ret;

	if ((ret = in_req(c, 0, "input", &x)))
		return ret;
	if (!attr_find(c->n->pb, "to"))
		return node_err(c, -EINVAL, "attribute 'to' is missing");
	if (to < 0 || to > 16 || !onnx_dtype_size((enum onnx_dtype)to))
		return node_err(c, -EOPNOTSUPP, "cast to %s is not supported (" ONNX_DTYPES_SUPPORTED ")",
				onnx_dtype_name((int)to));
	if ((ret = out_alloc(c, 0, (enum onnx_dtype)to, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	onnx_tensor_release(y);
	if ((ret = onnx_tensor_convert(y, x, (enum onnx_dtype)to)))
		return node_err(c, ret, "cannot allocate the output");
	return 0;
}

/* Mod: fmod = 0 is the integer remainder with the divisor's sign (Python's %), fmod = 1 the C fmod
 * (the dividend's sign); the specification requires fmod = 1 for floating-point inputs.  x mod 0 is 0
 * (numpy's result; the specification leaves it open). */
static int64_t mod_i(int64_t a, int64_t b, bool fmod_)
{
	int64_t r;

	if (b == 0 || b == -1)	/* -1: INT64_MIN % -1 traps in C */
		return 0;
	r = a % b;
	if (!fmod_ && r != 0 && (r < 0) != (b < 0))
		r += b;
	return r;
}

static int host_mod(struct onnx_ctx *c)
{
	const struct onnx_tensor *t[2];
	int64_t fm = attr_int(c->n->pb, "fmod", 0);
	struct onnx_tensor *y;
	struct bcast bc;
	int ret;

	if ((ret = in_req(c, 0, "A", &t[0])) || (ret = in_req(c, 1, "B", &t[1])))
		return ret;
	if (fm != 0 && fm != 1)
		return node_err(c, -EINVAL, "fmod %lld (0 or 1)", (long long)fm);
	if (t[0]->dtype != t[1]->dtype)
		return node_err(c, -EINVAL, "A and B have different element types (%s, %s)",
				onnx_dtype_name(t[0]->dtype), onnx_dtype_name(t[1]->dtype));
	if (t[0]->dtype == ONNX_BOOL)
		return node_err(c, -EINVAL, "element type BOOL (Mod takes numbers)");
	if (t[0]->dtype == ONNX_FLOAT && !fm)
		return node_err(c, -EINVAL, "fmod must be 1 for floating-point inputs");
	if ((ret = bcast_init(c, &bc, t, 2)) || (ret = out_alloc(c, 0, t[0]->dtype, bc.nd, bc.dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t o = 0; o < y->count; o++, bcast_next(&bc)) {
		if (y->dtype == ONNX_FLOAT)
			((float *)y->data)[o] = (float)fmod(((const float *)t[0]->data)[bc.off[0]],
							   ((const float *)t[1]->data)[bc.off[1]]);
		else
			tensor_set_i(y, o, mod_i(tensor_get_i(t[0], bc.off[0]), tensor_get_i(t[1], bc.off[1]), fm));
	}
	return 0;
}

/* BitShift of unsigned integers; a shift by the element width or more gives 0 (C leaves it undefined). */
static int host_bitshift(struct onnx_ctx *c)
{
	const struct onnx_tensor *t[2];
	char buf[8];
	const char *dir = attr_string(c->n->pb, "direction", buf, sizeof(buf), "");
	struct onnx_tensor *y;
	struct bcast bc;
	unsigned bits;
	bool left;
	int ret;

	if ((ret = in_req(c, 0, "X", &t[0])) || (ret = in_req(c, 1, "Y", &t[1])))
		return ret;
	if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
		return node_err(c, -EINVAL, "direction '%s' (LEFT or RIGHT, required)", dir);
	left = !strcmp(dir, "LEFT");
	if (t[0]->dtype != t[1]->dtype)
		return node_err(c, -EINVAL, "X and Y have different element types (%s, %s)",
				onnx_dtype_name(t[0]->dtype), onnx_dtype_name(t[1]->dtype));
	if (t[0]->dtype != ONNX_UINT8 && t[0]->dtype != ONNX_UINT16 && t[0]->dtype != ONNX_UINT32 &&
	    t[0]->dtype != ONNX_UINT64)
		return node_err(c, -EINVAL, "element type %s (BitShift takes unsigned integers)",
				onnx_dtype_name(t[0]->dtype));
	bits = 8 * (unsigned)onnx_dtype_size(t[0]->dtype);
	if ((ret = bcast_init(c, &bc, t, 2)) || (ret = out_alloc(c, 0, t[0]->dtype, bc.nd, bc.dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t o = 0; o < y->count; o++, bcast_next(&bc)) {
		uint64_t x = (uint64_t)tensor_get_i(t[0], bc.off[0]), s = (uint64_t)tensor_get_i(t[1], bc.off[1]);

		tensor_set_i(y, o, s >= bits ? 0 : (int64_t)(left ? x << s : x >> s));
	}
	return 0;
}

const onnx_kernel onnx_elem_kernels[OP_COUNT] = {
	[OP_SIGMOID] = host_unary,	[OP_HARDSIGMOID] = host_unary, [OP_HARDSWISH] = host_unary,
	[OP_TANH] = host_unary,		[OP_EXP] = host_unary,	       [OP_LOG] = host_unary,
	[OP_ERF] = host_unary,		[OP_GELU] = host_unary,	       [OP_LEAKYRELU] = host_unary,
	[OP_ELU] = host_unary,		[OP_SELU] = host_unary,	       [OP_SOFTPLUS] = host_unary,
	[OP_SOFTSIGN] = host_unary,	[OP_SQRT] = host_unary,	       [OP_RECIPROCAL] = host_unary,
	[OP_FLOOR] = host_unary,	[OP_CEIL] = host_unary,	       [OP_NEG] = host_unary,
	[OP_ABS] = host_unary,		[OP_CLIP] = host_clip,	       [OP_PRELU] = host_prelu,
	[OP_SUB] = host_binary,		[OP_MUL] = host_binary,	       [OP_DIV] = host_binary,
	[OP_POW] = host_binary,		[OP_EQUAL] = host_binary,      [OP_GREATER] = host_binary,
	[OP_LESS] = host_binary,	[OP_MIN] = host_variadic,      [OP_MAX] = host_variadic,
	[OP_SUM] = host_variadic,	[OP_MEAN] = host_variadic,     [OP_WHERE] = host_where,
	[OP_NOT] = host_not,		[OP_CAST] = host_cast,	       [OP_GREATEREQUAL] = host_binary,
	[OP_LESSEQUAL] = host_binary,	[OP_AND] = host_binary,	       [OP_OR] = host_binary,
	[OP_XOR] = host_binary,		[OP_SIZE] = host_size,
	[OP_SIN] = host_unary,		[OP_COS] = host_unary,	       [OP_TAN] = host_unary,
	[OP_ASIN] = host_unary,		[OP_ACOS] = host_unary,	       [OP_ATAN] = host_unary,
	[OP_SINH] = host_unary,		[OP_COSH] = host_unary,	       [OP_ASINH] = host_unary,
	[OP_ACOSH] = host_unary,	[OP_ATANH] = host_unary,       [OP_SHRINK] = host_unary,
	[OP_THRESHOLDEDRELU] = host_unary, [OP_MOD] = host_mod,	       [OP_BITSHIFT] = host_bitshift,
};
