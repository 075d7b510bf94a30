/* SPDX-License-Identifier: MIT */
/*
 * ops_host.c - the plain-C CPU reference of every supported operator (float unless noted).  It is
 * the reference executor (onnx_run without a device) and the host fallback of the accel executor;
 * it shares no code with libaccel.  Sums are accumulated in double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "ops_common.h"

static int need_float(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what)
{
	if (t->dtype != ONNX_FLOAT)
		return node_err(c, -EOPNOTSUPP, "%s: element type %s is not supported (FLOAT)", what,
				onnx_dtype_name(t->dtype));
	return 0;
}

static int alloc_out(const struct onnx_ctx *c, unsigned i, enum onnx_dtype dt, unsigned ndim, const int64_t *dims)
{
	int ret = onnx_tensor_alloc(node_out(c, i), dt, ndim, dims);

	return ret ? node_err(c, ret, "cannot allocate the output") : 0;
}

static int host_conv(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *w = node_in(c, 1), *b = node_in(c, 2);
	struct conv_geom g;
	int64_t od[4];
	unsigned ond;
	const float *xp, *wp;
	double *acc;
	size_t plane;
	float *yp;
	int ret;

	if (x && x->ndim == 5)
		return host_conv3d(c);	/* ops_nd.c */
	if ((ret = conv_geom(c, x, w, &g)) || (ret = need_float(c, x, "X")) || (ret = need_float(c, w, "W")))
		return ret;
	if (b && (b->dtype != ONNX_FLOAT || b->count != (size_t)g.k))
		return node_err(c, -EINVAL, "B must be FLOAT of %lld values", (long long)g.k);
	conv_out_dims(&g, od, &ond);
	if ((ret = alloc_out(c, 0, ONNX_FLOAT, ond, od)))
		return ret;
	xp = x->data;
	wp = w->data;
	yp = node_out(c, 0)->data;
	plane = (size_t)(g.win.oh * g.win.ow);
	acc = malloc((plane ? plane : 1) * sizeof(double));
	if (!acc)
		return node_err(c, -ENOMEM, "out of memory");
	/* per output plane: every tap's weight times the input pixels it meets, summed in double */
	for (int64_t n = 0; n < g.n; n++)
		for (int64_t k = 0; k < g.k; k++) {
			int64_t grp = k / (g.k / g.groups);

			for (size_t i = 0; i < plane; i++)
				acc[i] = b ? ((const float *)b->data)[k] : 0.0;
			for (int64_t ci = 0; ci < g.cg; ci++)
				for (int64_t r = 0; r < g.kh; r++)
					for (int64_t q = 0; q < g.kw; q++) {
						double wv = wp[((k * g.cg + ci) * g.kh + r) * g.kw + q];
						int64_t off = q * g.win.dw - g.win.pl;	/* ix = ox * sw + off */
						int64_t lo = off >= 0 ? 0 : (-off + g.win.sw - 1) / g.win.sw;
						int64_t hi = g.w - 1 - off < 0 ? -1 : (g.w - 1 - off) / g.win.sw;

						if (hi > g.win.ow - 1)
							hi = g.win.ow - 1;
						for (int64_t oy = 0; oy < g.win.oh; oy++) {
							int64_t iy = oy * g.win.sh - g.win.pt + r * g.win.dh;
							double *arow = acc + oy * g.win.ow;
							int64_t base;

							if (iy < 0 || iy >= g.h)
								continue;
							base = ((n * g.c + grp * g.cg + ci) * g.h + iy) * g.w + off;
							for (int64_t ox = lo; ox <= hi; ox++)
								arow[ox] += wv * xp[base + ox * g.win.sw];
						}
					}
			for (size_t i = 0; i < plane; i++) {
				float v = (float)acc[i];

				yp[(size_t)(n * g.k + k) * plane + i] = v;
			}
		}
	free(acc);
	fused_act_host(c, node_out(c, 0));
	return 0;
}

void relu_f32(struct onnx_tensor *t)
{
	for (size_t i = 0; i < t->count; i++)
		if (((float *)t->data)[i] < 0)
			((float *)t->data)[i] = 0.0f;
}

/* The activation fused into a Conv/Gemm (fold.c), applied on the host: Relu, or Clip's clamp. */
void fused_act_host(const struct onnx_ctx *c, struct onnx_tensor *t)
{
	if (c->n->fused_relu)
		relu_f32(t);
	if (c->n->fused_clamp)
		for (size_t i = 0; i < t->count; i++) {
			float v = ((float *)t->data)[i];

			((float *)t->data)[i] = v != v ? v : v < c->n->clamp_lo ? c->n->clamp_lo : v > c->n->clamp_hi ? c->n->clamp_hi : v;
		}
}

/* y += beta * C with unidirectional broadcasting of C to y's {M, N}. */
int gemm_bias_add(const struct onnx_ctx *c, const struct onnx_tensor *cm, float beta, struct onnx_tensor *y)
{
	int64_t M = y->dims[0], N = y->dims[1], cr = 1, cc = 1;
	float *yp = y->data;

	if (cm->dtype != ONNX_FLOAT)
		return node_err(c, -EOPNOTSUPP, "C must be FLOAT");
	if (cm->ndim == 2) {
		cr = cm->dims[0];
		cc = cm->dims[1];
	} else if (cm->ndim == 1) {
		cc = cm->dims[0];
	} else if (cm->ndim != 0) {
		return node_err(c, -EINVAL, "C must be 0-D, 1-D or 2-D");
	}
	if ((cr != 1 && cr != M) || (cc != 1 && cc != N))
		return node_err(c, -EINVAL, "C {%lld,%lld} does not broadcast to {%lld,%lld}", (long long)cr,
				(long long)cc, (long long)M, (long long)N);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			yp[i * N + j] += beta * ((const float *)cm->data)[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
	return 0;
}

static int host_gemm(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1), *cm = node_in(c, 2);
	bool ta = attr_int(c->n->pb, "transA", 0), tb = attr_int(c->n->pb, "transB", 0);
	float alpha = attr_float(c->n->pb, "alpha", 1.0f), beta = attr_float(c->n->pb, "beta", 1.0f);
	int64_t M, K, N, dims[2];
	const float *ap, *bp;
	float *yp;
	int ret;

	if ((ret = need_float(c, a, "A")) || (ret = need_float(c, b, "B")))
		return ret;
	if (a->ndim != 2 || b->ndim != 2)
		return node_err(c, -EINVAL, "A and B must be 2-D");
	M = ta ? a->dims[1] : a->dims[0];
	K = ta ? a->dims[0] : a->dims[1];
	N = tb ? b->dims[0] : b->dims[1];
	if ((tb ? b->dims[1] : b->dims[0]) != K)
		return node_err(c, -EINVAL, "inner dimensions differ");
	dims[0] = M;
	dims[1] = N;
	if ((ret = alloc_out(c, 0, ONNX_FLOAT, 2, dims)))
		return ret;
	ap = a->data;
	bp = b->data;
	yp = node_out(c, 0)->data;
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;

			for (int64_t k = 0; k < K; k++)
				s += (double)(ta ? ap[k * M + i] : ap[i * K + k]) * (tb ? bp[j * K + k] : bp[k * N + j]);
			yp[i * N + j] = (float)(alpha * s);
		}
	if (cm && (ret = gemm_bias_add(c, cm, beta, node_out(c, 0))))
		return ret;
	fused_act_host(c, node_out(c, 0));
	return 0;
}

static int host_matmul(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	struct matmul_geom g;
	float *yp;
	int ret;

	if ((ret = need_float(c, a, "A")) || (ret = need_float(c, b, "B")) || (ret = matmul_geom(c, a, b, &g)))
		return ret;
	if ((ret = alloc_out(c, 0, ONNX_FLOAT, g.out_ndim, g.out_dims)))
		return ret;
	yp = node_out(c, 0)->data;
	for (int64_t bi = 0; bi < g.batch; bi++) {
		int64_t ao, bo;
		const float *ap, *bp;

		matmul_batch_offsets(&g, bi, &ao, &bo);
		ap = (const float *)a->data + ao;
		bp = (const float *)b->data + bo;
		for (int64_t i = 0; i < g.m; i++)
			for (int64_t j = 0; j < g.nn; j++) {
				double s = 0;

				for (int64_t k = 0; k < g.k; k++)
					s += (double)ap[i * g.k + k] * bp[k * g.nn + j];
				yp[(bi * g.m + i) * g.nn + j] = (float)s;
			}
	}
	return 0;
}

static int host_relu(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	struct onnx_tensor *y;
	int ret;

	/* FLOAT, INT8 and INT32 only (a BOOL read as INT32 overran its data: found by fuzz_load) */
	if (x->dtype != ONNX_FLOAT && x->dtype != ONNX_INT8 && x->dtype != ONNX_INT32)
		return node_err(c, -EOPNOTSUPP, "element type %s", onnx_dtype_name(x->dtype));
	if ((ret = alloc_out(c, 0, x->dtype, x->ndim, x->dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t i = 0; i < x->count; i++) {
		if (x->dtype == ONNX_FLOAT) {
			float v = ((const float *)x->data)[i];

			((float *)y->data)[i] = v > 0 ? v : (v != v ? v : 0.0f);
		} else if (x->dtype == ONNX_INT8) {
			int8_t v = ((const int8_t *)x->data)[i];

			((int8_t *)y->data)[i] = v > 0 ? v : 0;
		} else {
			int32_t v = ((const int32_t *)x->data)[i];

			((int32_t *)y->data)[i] = v > 0 ? v : 0;
		}
	}
	return 0;
}

static int host_pool(struct onnx_ctx *c, bool max, bool global)
{
	const struct onnx_tensor *x = node_in(c, 0);
	bool incl = attr_int(c->n->pb, "count_include_pad", 0) != 0 || c->n->pad_counts;
	struct pool_geom g;
	struct onnx_tensor *y;
	int64_t od[ONNX_MAX_DIMS];
	unsigned ond;
	int ret;

	if (x && x->ndim == 5 && !global)
		return host_pool3d(c, max);	/* ops_nd.c */
	if (x && max && !global && c->n->n_out > 1 && c->n->out[1] >= 0)
		return host_maxpool_indices(c);	/* ops_pool.c */
	if ((ret = pool_geom(c, x, global, &g)))
		return ret;
	if (x->dtype != ONNX_FLOAT && !(max && (x->dtype == ONNX_UINT8 || x->dtype == ONNX_INT8)))
		return node_err(c, -EOPNOTSUPP, "element type %s is not supported", onnx_dtype_name(x->dtype));
	pool_out_dims(&g, od, &ond);
	if ((ret = alloc_out(c, 0, x->dtype, ond, od)))
		return ret;
	y = node_out(c, 0);
	for (int64_t nc = 0; nc < g.n * g.c; nc++)
		for (int64_t oy = 0; oy < g.win.oh; oy++)
			for (int64_t ox = 0; ox < g.win.ow; ox++) {
				double s = 0, mx = -INFINITY;
				int64_t cnt = 0;
				size_t o = (size_t)((nc * g.win.oh + oy) * g.win.ow + ox);

				for (int64_t r = 0; r < g.win.kh; r++)
					for (int64_t q = 0; q < g.win.kw; q++) {
						int64_t iy = oy * g.win.sh - g.win.pt + r * g.win.dh;
						int64_t ix = ox * g.win.sw - g.win.pl + q * g.win.dw;
						double v;

						if (iy < 0 || ix < 0 || iy >= g.h || ix >= g.w) {
							/* padding counts (count_include_pad), the ceil_mode overhang never */
							if (incl && iy < g.h + g.win.pb && ix < g.w + g.win.pr)
								cnt++;
							continue;
						}
						v = tensor_get(x, (size_t)((nc * g.h + iy) * g.w + ix));
						s += v;
						mx = v > mx ? v : mx;
						cnt++;
					}
				if (!max)
					((float *)y->data)[o] = cnt ? (float)(s / (double)cnt) : 0.0f;
				else if (x->dtype == ONNX_FLOAT)
					((float *)y->data)[o] = (float)mx;
				else if (x->dtype == ONNX_UINT8)
					((uint8_t *)y->data)[o] = (uint8_t)mx;
				else
					((int8_t *)y->data)[o] = (int8_t)mx;
			}
	return 0;
}

static int host_maxpool(struct onnx_ctx *c)
{
	return host_pool(c, true, false);
}

static int host_avgpool(struct onnx_ctx *c)
{
	return host_pool(c, false, false);
}

static int host_gap(struct onnx_ctx *c)
{
	return host_pool(c, false, true);
}

/* Numpy multidirectional broadcasting of two shapes. */
static int broadcast(const struct onnx_ctx *c, const struct onnx_tensor *a, const struct onnx_tensor *b,
		     unsigned *nd, int64_t *dims, int64_t *sa, int64_t *sb)
{
	unsigned n = a->ndim > b->ndim ? a->ndim : b->ndim;
	int64_t ma = 1, mb = 1;

	for (int i = (int)n - 1; i >= 0; i--) {
		int ia = i - (int)(n - a->ndim), ib = i - (int)(n - b->ndim);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return node_err(c, -EINVAL, "shapes do not broadcast (%lld vs %lld)", (long long)da,
					(long long)db);
		dims[i] = da == 1 ? db : da;
		sa[i] = da == 1 ? 0 : ma;
		sb[i] = db == 1 ? 0 : mb;
		ma *= da;
		mb *= db;
	}
	*nd = n;
	return 0;
}

static int host_add(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	int64_t dims[ONNX_MAX_DIMS], sa[ONNX_MAX_DIMS], sb[ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS] = { 0 };
	struct onnx_tensor *y;
	unsigned nd = 0;
	int ret;

	if (!a || !b || a->dtype != b->dtype)
		return node_err(c, -EINVAL, "A and B must have the same element type");
	if (a->dtype == ONNX_BOOL)
		return node_err(c, -EOPNOTSUPP, "element type BOOL");
	if ((ret = broadcast(c, a, b, &nd, dims, sa, sb)) || (ret = alloc_out(c, 0, a->dtype, nd, dims)))
		return ret;
	y = node_out(c, 0);
	for (size_t o = 0; o < y->count; o++) {
		int64_t ia = 0, ib = 0;

		for (unsigned d = 0; d < nd; d++) {
			ia += idx[d] * sa[d];
			ib += idx[d] * sb[d];
		}
		switch (a->dtype) {
		case ONNX_FLOAT:
			((float *)y->data)[o] = ((const float *)a->data)[ia] + ((const float *)b->data)[ib];
			break;
		case ONNX_UINT8:	/* wraps, as numpy */
			((uint8_t *)y->data)[o] = (uint8_t)(((const uint8_t *)a->data)[ia] + ((const uint8_t *)b->data)[ib]);
			break;
		case ONNX_INT8:
			((int8_t *)y->data)[o] = (int8_t)(uint8_t)(((const int8_t *)a->data)[ia] + ((const int8_t *)b->data)[ib]);
			break;
		case ONNX_INT32:
			((int32_t *)y->data)[o] = (int32_t)((uint32_t)((const int32_t *)a->data)[ia] +
							    (uint32_t)((const int32_t *)b->data)[ib]);
			break;
		case ONNX_INT64:
			((int64_t *)y->data)[o] = (int64_t)((uint64_t)((const int64_t *)a->data)[ia] +
							    (uint64_t)((const int64_t *)b->data)[ib]);
			break;
		case ONNX_BOOL:
			break;
		case ONNX_DOUBLE:	/* in double: onnx_dtype_compute_f32 leaves Add's DOUBLE operands as they are */
			((double *)y->data)[o] = ((const double *)a->data)[ia] + ((const double *)b->data)[ib];
			break;
		default:	/* the other integer types (FLOAT16/BFLOAT16 come widened to FLOAT) */
			tensor_set_i(y, o, (int64_t)((uint64_t)tensor_get_i(a, (size_t)ia) + (uint64_t)tensor_get_i(b, (size_t)ib)));
			break;
		}
		for (int d = (int)nd - 1; d >= 0; d--) {
			if (++idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return 0;
}

static int reshaped_copy(const struct onnx_ctx *c, const struct onnx_tensor *x, unsigned nd, const int64_t *dims)
{
	int ret;

	if (tensor_count(nd, dims) != x->count)
		return node_err(c, -EINVAL, "new shape has %zu elements, the input %zu", tensor_count(nd, dims), x->count);
	if ((ret = alloc_out(c, 0, x->dtype, nd, dims)))
		return ret;
	memcpy(node_out(c, 0)->data, x->data, x->count * onnx_dtype_size(x->dtype));
	return 0;
}

static int host_flatten(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t axis = attr_int(c->n->pb, "axis", 1), dims[2] = { 1, 1 };

	if (axis < 0)
		axis += x->ndim;
	if (axis < 0 || axis > (int64_t)x->ndim)
		return node_err(c, -EINVAL, "axis %lld out of range", (long long)attr_int(c->n->pb, "axis", 1));
	for (unsigned i = 0; i < x->ndim; i++)
		dims[(int64_t)i < axis ? 0 : 1] *= x->dims[i];
	return reshaped_copy(c, x, 2, dims);
}

static int host_reshape(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *s = node_in(c, 1);
	bool allowzero = attr_int(c->n->pb, "allowzero", 0) != 0;
	int64_t dims[ONNX_MAX_DIMS], known = 1;
	int infer = -1;

	if (!s || s->dtype != ONNX_INT64 || s->ndim != 1)
		return node_err(c, -EINVAL, "shape must be a 1-D INT64 tensor");
	if (s->count > ONNX_MAX_DIMS)
		return node_err(c, -EOPNOTSUPP, "more than %d dimensions", ONNX_MAX_DIMS);
	for (size_t i = 0; i < s->count; i++) {
		int64_t d = ((const int64_t *)s->data)[i];

		if (d == 0 && !allowzero) {
			if (i >= x->ndim)
				return node_err(c, -EINVAL, "shape[%zu] = 0 copies a dimension the input lacks", i);
			d = x->dims[i];
		}
		if (d == -1) {
			if (infer >= 0)
				return node_err(c, -EINVAL, "more than one -1 in shape");
			infer = (int)i;
			d = 1;
		} else if (d < 0 || d > ONNX_MAX_DIM_SIZE) {
			return node_err(c, -EINVAL, "shape[%zu] = %lld", i, (long long)d);
		}
		if (known > (1LL << 32))
			return node_err(c, -EINVAL, "shape has more elements than any input can");
		dims[i] = d;
		known *= d;
	}
	if (infer >= 0) {
		if (!known || x->count % (size_t)known)
			return node_err(c, -EINVAL, "cannot infer the -1 dimension");
		dims[infer] = (int64_t)x->count / known;
	}
	return reshaped_copy(c, x, (unsigned)s->count, dims);
}

static int host_identity(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);

	return reshaped_copy(c, x, x->ndim, x->dims);
}

static int host_batchnorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *sc = node_in(c, 1), *b = node_in(c, 2), *mu = node_in(c, 3),
				 *var = node_in(c, 4);
	float eps = attr_float(c->n->pb, "epsilon", 1e-5f);
	int64_t C, inner = 1;
	int ret;

	if (attr_int(c->n->pb, "training_mode", 0) || c->n->n_out > 1)
		return node_err(c, -EOPNOTSUPP, "training mode is not supported (inference only)");
	if (!x || !sc || !b || !mu || !var || x->ndim < 2)
		return node_err(c, -EINVAL, "needs X (N x C x ...), scale, B, mean, var");
	if ((ret = need_float(c, x, "X")) || (ret = need_float(c, sc, "scale")) || (ret = need_float(c, b, "B")) ||
	    (ret = need_float(c, mu, "mean")) || (ret = need_float(c, var, "var")))
		return ret;
	C = x->dims[1];
	if ((int64_t)sc->count != C || (int64_t)b->count != C || (int64_t)mu->count != C || (int64_t)var->count != C)
		return node_err(c, -EINVAL, "scale, B, mean and var need %lld values", (long long)C);
	for (unsigned i = 2; i < x->ndim; i++)
		inner *= x->dims[i];
	if ((ret = alloc_out(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret;
	for (int64_t ch = 0; ch < C; ch++) {
		/* y = (x - mean) / sqrt(var + eps) * scale + B = x * a + b per channel */
		double a = ((const float *)sc->data)[ch] / sqrt((double)((const float *)var->data)[ch] + eps);
		double bb = ((const float *)b->data)[ch] - ((const float *)mu->data)[ch] * a;

		for (size_t i = (size_t)ch * (size_t)inner; i < x->count; i += (size_t)(C * inner))
			for (int64_t j = 0; j < inner; j++)
				((float *)node_out(c, 0)->data)[i + (size_t)j] =
					(float)(((const float *)x->data)[i + (size_t)j] * a + bb);
	}
	return 0;
}

int host_qlinearconv(struct onnx_ctx *c);
int host_qlinearmatmul(struct onnx_ctx *c);
int host_convinteger(struct onnx_ctx *c);
int host_matmulinteger(struct onnx_ctx *c);

const onnx_kernel onnx_host_kernels[OP_COUNT] = {
	[OP_CONV] = host_conv,
	[OP_GEMM] = host_gemm,
	[OP_MATMUL] = host_matmul,
	[OP_RELU] = host_relu,
	[OP_MAXPOOL] = host_maxpool,
	[OP_AVGPOOL] = host_avgpool,
	[OP_GLOBALAVGPOOL] = host_gap,
	[OP_ADD] = host_add,
	[OP_FLATTEN] = host_flatten,
	[OP_RESHAPE] = host_reshape,
	[OP_BATCHNORM] = host_batchnorm,
	[OP_QLINEARCONV] = host_qlinearconv,
	[OP_QLINEARMATMUL] = host_qlinearmatmul,
	[OP_CONVINTEGER] = host_convinteger,
	[OP_MATMULINTEGER] = host_matmulinteger,
	[OP_IDENTITY] = host_identity,
};
