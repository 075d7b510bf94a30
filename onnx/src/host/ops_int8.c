/* SPDX-License-Identifier: MIT */
/*
 * ops_int8.c - the int8 family: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.
 *
 * Host reference: acc = sum (x - x_zp)(w - w_zp) in int32, then (QLinear*) y = sat(rint(acc * x_scale *
 * w_scale / y_scale) + y_zp) in double with round-half-to-even, as the ONNX reference.
 *
 * Device lowering (int8 x int8 -> int32 on the PE array): uint8 activations become int8 by -128 (the
 * zero point moves with them), weights become w - w_zp (split into two int8 halves run as two passes
 * when they leave int8), and
 *   sum (x' - zp')(w - w_zp) = sum x'(w - w_zp) - zp' * sum (w - w_zp)
 * so the second term is a per-output-channel constant folded into the int32 SFU bias; padded taps read
 * zp' (accel_conv2d input_zero_point) and cancel exactly.  Requantisation runs on the device too
 * (accel_requant, ISA 2: per-channel 31-bit fixed-point multipliers, round half up, where ONNX's reference
 * rounds the double product half to even: they differ only at an exact tie); on ISA 1 the host's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel_util.h"

static bool is_q(const struct onnx_tensor *t)
{
	return t && (t->dtype == ONNX_UINT8 || t->dtype == ONNX_INT8);
}

/* Zero point tensor: NULL -> 0; scalar or n values (n = 0: scalar only). */
static int zp_check(const struct onnx_ctx *c, const struct onnx_tensor *z, const struct onnx_tensor *x,
		    size_t n, const char *what)
{
	if (!z)
		return 0;
	if (z->dtype != x->dtype)
		return node_err(c, -EINVAL, "%s must have the element type of its input (%s)", what,
				onnx_dtype_name(x->dtype));
	if (z->count != 1 && (!n || z->count != n))
		return node_err(c, -EOPNOTSUPP, "%s: %zu values (scalar%s supported)", what, z->count,
				n ? " or one per channel" : " only");
	return 0;
}

static int32_t zp_at(const struct onnx_tensor *z, size_t i)
{
	return z ? (int32_t)tensor_get_i(z, z->count == 1 ? 0 : i) : 0;
}

static int scale_check(const struct onnx_ctx *c, const struct onnx_tensor *s, size_t n, const char *what)
{
	if (!s || s->dtype != ONNX_FLOAT || (s->count != 1 && (!n || s->count != n)))
		return node_err(c, -EINVAL, "%s must be a FLOAT scalar%s", what, n ? " or one per channel" : "");
	return 0;
}

/* out[i] = sat(rint(acc[i] * xs * ws[ch] / ys) + yzp), ch = (i / per_ch_stride) % n_ch. */
int qlinear_requant(struct onnx_ctx *c, const int32_t *acc, size_t count, const struct onnx_tensor *xs,
		    const struct onnx_tensor *ws, const struct onnx_tensor *ys, const struct onnx_tensor *yzp,
		    int64_t per_ch_stride, int64_t n_ch, struct onnx_tensor *out)
{
	double x_s = ((const float *)xs->data)[0], y_s = ((const float *)ys->data)[0];
	bool u8 = !yzp || yzp->dtype == ONNX_UINT8;
	int32_t zp = zp_at(yzp, 0), lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;

	for (size_t i = 0; i < count; i++) {
		size_t ch = ws->count == 1 ? 0 : (size_t)(((int64_t)i / per_ch_stride) % n_ch);
		double v = rint((double)acc[i] * (x_s * ((const float *)ws->data)[ch] / y_s)) + zp;
		int32_t q = v < lo ? lo : v > hi ? hi : (int32_t)v;

		if (u8)
			((uint8_t *)out->data)[i] = (uint8_t)q;
		else
			((int8_t *)out->data)[i] = (int8_t)q;
	}
	return 0;
}

/* The same requantisation on the device (accel_requant): the multiplier of acc * xs * ws[ch] / ys per
 * channel in 31-bit fixed point, rounding half up where the host rounds half to even (the two differ
 * only at an exact tie).  ONNX_FALLBACK: no device requantiser (ISA 1), the host's then runs. */
static int qlinear_requant_dev(struct onnx_ctx *c, const int32_t *acc, size_t count, const struct onnx_tensor *xs,
			       const struct onnx_tensor *ws, const struct onnx_tensor *ys, const struct onnx_tensor *yzp,
			       int64_t per_ch_stride, int64_t n_ch, struct onnx_tensor *out)
{
	double x_s = ((const float *)xs->data)[0], y_s = ((const float *)ys->data)[0], *r;
	bool u8 = !yzp || yzp->dtype == ONNX_UINT8;
	int64_t nc = ws->count == 1 ? 1 : n_ch, inner = ws->count == 1 ? 1 : per_ch_stride;
	int ret;

	r = malloc((size_t)nc * sizeof(*r));
	if (!r)
		return node_err(c, -ENOMEM, "out of memory");
	for (int64_t k = 0; k < nc; k++)
		r[k] = x_s * ((const float *)ws->data)[k] / y_s;
	ret = accel_requant_i32(c, acc, count, nc, ws->count == 1 ? (int64_t)count : inner, r,
				zp_at(yzp, 0) - (u8 ? 128 : 0), out->data);
	if (!ret && u8)	/* the device's int8 is value - 128 */
		for (size_t i = 0; i < count; i++)
			((uint8_t *)out->data)[i] ^= 0x80;
	free(r);
	return ret;
}

/* The two operands' inputs in ONNX order, shared by QLinearConv / QLinearMatMul (x, x_scale, x_zp,
 * w, w_scale, w_zp, y_scale, y_zp) and ConvInteger / MatMulInteger (x, w, x_zp, w_zp); v[] points at
 * the caller's fields in the QLinear order. */
static void q_inputs(struct onnx_ctx *c, bool qlinear, const struct onnx_tensor **v[8])
{
	static const unsigned integer_slot[4] = { 0, 3, 2, 5 };	/* x, w, x_zp, w_zp */

	if (qlinear) {
		for (unsigned i = 0; i < 8; i++)
			*v[i] = node_in(c, i);
	} else {
		for (unsigned i = 0; i < 4; i++)
			*v[integer_slot[i]] = node_in(c, i);
	}
}

/* ---- convolution --------------------------------------------------------------------------- */

struct qconv {
	const struct onnx_tensor *x, *xzp, *w, *wzp, *bias;	/* bias: int32 K or NULL */
	const struct onnx_tensor *xs, *ws, *ys, *yzp;		/* QLinearConv only */
	struct conv_geom g;
};

static int qconv_parse(struct onnx_ctx *c, bool qlinear, struct qconv *q)
{
	int ret;

	memset(q, 0, sizeof(*q));
	q_inputs(c, qlinear, (const struct onnx_tensor **[8]){ &q->x, &q->xs, &q->xzp, &q->w, &q->ws, &q->wzp, &q->ys,
							      &q->yzp });
	if (qlinear)
		q->bias = node_in(c, 8);
	if (!is_q(q->x) || !is_q(q->w))
		return node_err(c, -EINVAL, "x and w must be UINT8 or INT8");
	if ((ret = conv_geom(c, q->x, q->w, &q->g)))
		return ret;
	if ((ret = zp_check(c, q->xzp, q->x, 0, "x_zero_point")) ||
	    (ret = zp_check(c, q->wzp, q->w, (size_t)q->g.k, "w_zero_point")))
		return ret;
	if (qlinear && ((ret = scale_check(c, q->xs, 0, "x_scale")) || (ret = scale_check(c, q->ws, (size_t)q->g.k, "w_scale")) ||
			(ret = scale_check(c, q->ys, 0, "y_scale")) ||
			(q->yzp && !is_q(q->yzp) && (ret = node_err(c, -EINVAL, "y_zero_point must be UINT8 or INT8")))))
		return ret;
	if (q->bias && (q->bias->dtype != ONNX_INT32 || q->bias->count != (size_t)q->g.k))
		return node_err(c, -EINVAL, "B must be INT32 with one value per output channel");
	return 0;
}

static void qconv_host_acc(const struct qconv *q, int32_t *acc)
{
	const struct conv_geom *g = &q->g;
	int32_t xz = zp_at(q->xzp, 0);

	for (int64_t n = 0; n < g->n; n++)
		for (int64_t k = 0; k < g->k; k++) {
			int64_t grp = k / (g->k / g->groups);
			int32_t wz = zp_at(q->wzp, (size_t)k);

			for (int64_t oy = 0; oy < g->win.oh; oy++)
				for (int64_t ox = 0; ox < g->win.ow; ox++) {
					int32_t s = q->bias ? ((const int32_t *)q->bias->data)[k] : 0;

					for (int64_t ci = 0; ci < g->cg; ci++)
						for (int64_t r = 0; r < g->kh; r++) {
							int64_t iy = oy * g->win.sh - g->win.pt + r * g->win.dh;

							if (iy < 0 || iy >= g->h)
								continue;
							for (int64_t t = 0; t < g->kw; t++) {
								int64_t ix = ox * g->win.sw - g->win.pl + t * g->win.dw;
								size_t xi, wi;

								if (ix < 0 || ix >= g->w)
									continue;
								xi = (size_t)(((n * g->c + grp * g->cg + ci) * g->h + iy) * g->w + ix);
								wi = (size_t)(((k * g->cg + ci) * g->kh + r) * g->kw + t);
								s += ((int32_t)tensor_get_i(q->x, xi) - xz) *
								     ((int32_t)tensor_get_i(q->w, wi) - wz);
							}
						}
					acc[((n * g->k + k) * g->win.oh + oy) * g->win.ow + ox] = s;
				}
		}
}

/*
 * Split effective weights v (int32, |v| <= 255) into int8 halves v = lo + hi; returns whether hi is
 * needed at all.  UINT8 weights with a zero point (w - w_zp in -255..255) then run as two device passes
 * whose int32 results add (exactly: the accumulation is linear).
 */
static bool split_i8(const int32_t *v, size_t n, int8_t *lo, int8_t *hi)
{
	bool two = false;

	for (size_t i = 0; i < n; i++) {
		int32_t a = v[i] < -128 ? -128 : v[i] > 127 ? 127 : v[i];

		lo[i] = (int8_t)a;
		hi[i] = (int8_t)(v[i] - a);
		two |= v[i] != a;
	}
	return two;
}

/* Device accumulation (one pass, or two when the weights need both int8 halves). */
static int qconv_accel_acc(struct onnx_ctx *c, const struct qconv *q, int32_t *acc)
{
	const struct conv_geom *g = &q->g;
	size_t per_k = q->w->count / (size_t)g->k, ny = (size_t)(g->n * g->k * g->win.oh * g->win.ow);
	int32_t shift = q->x->dtype == ONNX_UINT8 ? 128 : 0, zp = zp_at(q->xzp, 0) - shift;
	int8_t *x8 = malloc(q->x->count ? q->x->count : 1), *lo = malloc(q->w->count + 1), *hi = malloc(q->w->count + 1);
	int32_t *weff = malloc((q->w->count + 1) * sizeof(int32_t)), *acc2 = NULL;
	int32_t *bias = calloc((size_t)g->k, sizeof(int32_t));
	bool two;
	int ret = 0;

	if (!x8 || !lo || !hi || !weff || !bias) {
		ret = node_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < q->x->count; i++)
		x8[i] = (int8_t)(tensor_get_i(q->x, i) - shift);
	for (int64_t k = 0; k < g->k; k++) {
		int32_t wz = zp_at(q->wzp, (size_t)k), sum = 0;

		for (size_t i = 0; i < per_k; i++) {
			int32_t v = (int32_t)tensor_get_i(q->w, (size_t)k * per_k + i) - wz;

			weff[(size_t)k * per_k + i] = v;
			sum += v;
		}
		bias[k] = (int32_t)((uint32_t)(q->bias ? ((const int32_t *)q->bias->data)[k] : 0) -
				    (uint32_t)zp * (uint32_t)sum);
	}
	two = split_i8(weff, q->w->count, lo, hi);
	ret = accel_conv_i8(c, g, x8, lo, bias, zp, acc);
	if (!ret && two) {
		acc2 = malloc(ny * sizeof(int32_t) + 4);
		if (!acc2) {
			ret = node_err(c, -ENOMEM, "out of memory");
			goto out;
		}
		ret = accel_conv_i8(c, g, x8, hi, NULL, zp, acc2);
		for (size_t i = 0; !ret && i < ny; i++)
			acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)acc2[i]);
	}
out:
	free(x8);
	free(lo);
	free(hi);
	free(weff);
	free(acc2);
	free(bias);
	return ret;
}

static int qconv_run(struct onnx_ctx *c, bool qlinear, bool accel)
{
	struct onnx_tensor *y;
	struct qconv q;
	int64_t od[4];
	unsigned ond;
	int32_t *acc;
	int ret;

	if ((ret = qconv_parse(c, qlinear, &q)))
		return ret;
	conv_out_dims(&q.g, od, &ond);
	ret = onnx_tensor_alloc(node_out(c, 0), qlinear ? (q.yzp ? q.yzp->dtype : ONNX_UINT8) : ONNX_INT32, ond, od);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	acc = qlinear ? malloc(y->count * 4 + 4) : y->data;
	if (!acc)
		return node_err(c, -ENOMEM, "out of memory");
	if (accel)
		ret = qconv_accel_acc(c, &q, acc);
	else
		qconv_host_acc(&q, acc);
	if (!ret && qlinear) {
		ret = accel ? qlinear_requant_dev(c, acc, y->count, q.xs, q.ws, q.ys, q.yzp, q.g.win.oh * q.g.win.ow,
						  q.g.k, y)
			    : ONNX_FALLBACK;
		if (ret == ONNX_FALLBACK)
			ret = qlinear_requant(c, acc, y->count, q.xs, q.ws, q.ys, q.yzp, q.g.win.oh * q.g.win.ow, q.g.k, y);
	}
	if (qlinear)
		free(acc);
	return ret;
}

int host_qlinearconv(struct onnx_ctx *c);
int host_convinteger(struct onnx_ctx *c);
int accel_qlinearconv(struct onnx_ctx *c);
int accel_convinteger(struct onnx_ctx *c);

int host_qlinearconv(struct onnx_ctx *c)
{
	return qconv_run(c, true, false);
}

int host_convinteger(struct onnx_ctx *c)
{
	return qconv_run(c, false, false);
}

int accel_qlinearconv(struct onnx_ctx *c)
{
	return qconv_run(c, true, true);
}

int accel_convinteger(struct onnx_ctx *c)
{
	return qconv_run(c, false, true);
}

/* ---- matmul -------------------------------------------------------------------------------- */

struct qmm {
	const struct onnx_tensor *a, *azp, *b, *bzp;
	const struct onnx_tensor *as, *bs, *ys, *yzp;
	struct matmul_geom g;
};

static int qmm_parse(struct onnx_ctx *c, bool qlinear, struct qmm *q)
{
	int ret;

	memset(q, 0, sizeof(*q));
	q_inputs(c, qlinear, (const struct onnx_tensor **[8]){ &q->a, &q->as, &q->azp, &q->b, &q->bs, &q->bzp, &q->ys,
							      &q->yzp });
	if (!is_q(q->a) || !is_q(q->b))
		return node_err(c, -EINVAL, "A and B must be UINT8 or INT8");
	if ((ret = matmul_geom(c, q->a, q->b, &q->g)))
		return ret;
	if ((ret = zp_check(c, q->azp, q->a, qlinear ? 0 : (size_t)q->g.m, "a_zero_point")) ||
	    (ret = zp_check(c, q->bzp, q->b, (size_t)q->g.nn, "b_zero_point")))
		return ret;
	if (qlinear && ((ret = scale_check(c, q->as, 0, "a_scale")) || (ret = scale_check(c, q->bs, (size_t)q->g.nn, "b_scale")) ||
			(ret = scale_check(c, q->ys, 0, "y_scale")) ||
			(q->yzp && !is_q(q->yzp) && (ret = node_err(c, -EINVAL, "y_zero_point must be UINT8 or INT8")))))
		return ret;
	return 0;
}

static void qmm_host_acc(const struct qmm *q, int32_t *acc)
{
	const struct matmul_geom *g = &q->g;

	for (int64_t bi = 0; bi < g->batch; bi++) {
		int64_t ao, bo;

		matmul_batch_offsets(g, bi, &ao, &bo);
		for (int64_t i = 0; i < g->m; i++)
			for (int64_t j = 0; j < g->nn; j++) {
				int32_t s = 0, az = zp_at(q->azp, (size_t)i), bz = zp_at(q->bzp, (size_t)j);

				for (int64_t k = 0; k < g->k; k++)
					s += ((int32_t)tensor_get_i(q->a, (size_t)(ao + i * g->k + k)) - az) *
					     ((int32_t)tensor_get_i(q->b, (size_t)(bo + k * g->nn + j)) - bz);
				acc[(bi * g->m + i) * g->nn + j] = s;
			}
	}
}

static int qmm_accel_acc(struct onnx_ctx *c, const struct qmm *q, int32_t *acc)
{
	const struct matmul_geom *g = &q->g;
	int32_t shift = q->a->dtype == ONNX_UINT8 ? 128 : 0, zp = zp_at(q->azp, 0) - shift;
	size_t asz = (size_t)(g->m * g->k), bsz = (size_t)(g->k * g->nn), csz = (size_t)(g->m * g->nn);
	int8_t *a8 = malloc(asz + 1), *lo = malloc(bsz + 1), *hi = malloc(bsz + 1);
	int32_t *beff = malloc((bsz + 1) * sizeof(int32_t)), *acc2 = malloc((csz + 1) * sizeof(int32_t));
	int32_t *bias = calloc((size_t)g->nn + 1, sizeof(int32_t));
	int ret = 0;

	if (q->azp && q->azp->count != 1)
		ret = ONNX_FALLBACK;	/* per-row a_zero_point: host */
	else if (!a8 || !lo || !hi || !beff || !acc2 || !bias)
		ret = node_err(c, -ENOMEM, "out of memory");
	for (int64_t bi = 0; !ret && bi < g->batch; bi++) {
		int32_t *out = acc + bi * g->m * g->nn;
		int64_t ao, bo;

		matmul_batch_offsets(g, bi, &ao, &bo);
		for (size_t i = 0; i < asz; i++)
			a8[i] = (int8_t)(tensor_get_i(q->a, (size_t)ao + i) - shift);
		memset(bias, 0, (size_t)g->nn * sizeof(int32_t));
		for (int64_t k = 0; k < g->k; k++)
			for (int64_t j = 0; j < g->nn; j++) {
				int32_t v = (int32_t)tensor_get_i(q->b, (size_t)(bo + k * g->nn + j)) - zp_at(q->bzp, (size_t)j);

				beff[k * g->nn + j] = v;
				bias[j] = (int32_t)((uint32_t)bias[j] - (uint32_t)zp * (uint32_t)v);
			}
		if (!split_i8(beff, bsz, lo, hi)) {
			ret = accel_gemm_i8(c, g->m, g->k, g->nn, a8, lo, bias, out);
			continue;
		}
		ret = accel_gemm_i8(c, g->m, g->k, g->nn, a8, lo, bias, out);
		if (!ret)
			ret = accel_gemm_i8(c, g->m, g->k, g->nn, a8, hi, NULL, acc2);
		for (size_t i = 0; !ret && i < csz; i++)
			out[i] = (int32_t)((uint32_t)out[i] + (uint32_t)acc2[i]);
	}
	free(a8);
	free(lo);
	free(hi);
	free(beff);
	free(acc2);
	free(bias);
	return ret;
}

static int qmm_run(struct onnx_ctx *c, bool qlinear, bool accel)
{
	struct onnx_tensor *y;
	struct qmm q;
	int32_t *acc;
	int ret;

	if ((ret = qmm_parse(c, qlinear, &q)))
		return ret;
	ret = onnx_tensor_alloc(node_out(c, 0), qlinear ? (q.yzp ? q.yzp->dtype : ONNX_UINT8) : ONNX_INT32,
				q.g.out_ndim, q.g.out_dims);
	if (ret)
		return node_err(c, ret, "cannot allocate the output");
	y = node_out(c, 0);
	acc = qlinear ? malloc(y->count * 4 + 4) : y->data;
	if (!acc)
		return node_err(c, -ENOMEM, "out of memory");
	if (accel && q.g.m && q.g.k && q.g.nn)
		ret = qmm_accel_acc(c, &q, acc);
	else if (accel)
		ret = ONNX_FALLBACK;
	else
		qmm_host_acc(&q, acc);
	if (!ret && qlinear) {
		ret = accel ? qlinear_requant_dev(c, acc, y->count, q.as, q.bs, q.ys, q.yzp, 1, q.g.nn, y) : ONNX_FALLBACK;
		if (ret == ONNX_FALLBACK)
			ret = qlinear_requant(c, acc, y->count, q.as, q.bs, q.ys, q.yzp, 1, q.g.nn, y);
	}
	if (qlinear)
		free(acc);
	return ret;
}

int host_qlinearmatmul(struct onnx_ctx *c);
int host_matmulinteger(struct onnx_ctx *c);
int accel_qlinearmatmul(struct onnx_ctx *c);
int accel_matmulinteger(struct onnx_ctx *c);

int host_qlinearmatmul(struct onnx_ctx *c)
{
	return qmm_run(c, true, false);
}

int host_matmulinteger(struct onnx_ctx *c)
{
	return qmm_run(c, false, false);
}

int accel_qlinearmatmul(struct onnx_ctx *c)
{
	return qmm_run(c, true, true);
}

int accel_matmulinteger(struct onnx_ctx *c)
{
	return qmm_run(c, false, true);
}
