/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_loss.c - node kernels built on the vector units' reductions and softmax (ops_accel_vec.h):
 * SoftmaxCrossEntropyLoss's log-probabilities, NegativeLogLikelihoodLoss's gather (a product with the
 * targets' one-hot mask, summed over the classes), Hardmax (the device's ARGMAX, the one-hot written on
 * the host), per-tensor QuantizeLinear/DequantizeLinear (accel_quant) and DynamicQuantizeLinear's range.
 * The host parts (checks, weights, the final reductions) are the host kernels' own (ops_loss.c,
 * ops_norm.c), called with the device's pieces; ONNX_FALLBACK where the device cannot express a case.
 */
#include <string.h>

#include "ops_accel_vec.h"
#include "ops_common.h"

/* ---- SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss, Hardmax ---------------------------------- */

static int device_logp(struct onnx_ctx *c, const struct onnx_tensor *x, int64_t N, int64_t C, int64_t D, float *lp)
{
	if (!dev_has(c, 15) || !dev_has(c, 25) || !shape_fits((uint64_t)N, (uint64_t)C, (uint64_t)D))
		return ONNX_FALLBACK;
	if (D == 1)
		return softmax_jobs(c, x->data, lp, x->count, true, 1, (uint64_t)N, (uint64_t)C, 1);
	return softmax_jobs(c, x->data, lp, x->count, true, (uint64_t)N, (uint64_t)D, (uint64_t)C, (uint64_t)D);
}

int accel_vec_sceloss(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);

	if (!x || x->dtype != ONNX_FLOAT)
		return ONNX_FALLBACK;
	return sce_loss(c, device_logp);
}

int accel_vec_hardmax(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);
	bool coerce = c->m->opset < 13;
	int64_t axis = attr_int(c->n->pb, "axis", coerce ? 1 : -1);
	uint64_t lead = 1, k = 1, trail = 1;
	int32_t *idx;
	float *y;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !x->count || !x->ndim || axis < -(int64_t)x->ndim ||
	    axis >= (int64_t)x->ndim || !dev_has(c, 15) || !dev_has(c, 25))
		return ONNX_FALLBACK;
	if (axis < 0)
		axis += x->ndim;
	for (unsigned d = 0; d < x->ndim; d++)
		*((int64_t)d < axis ? &lead : ((int64_t)d == axis || coerce) ? &k : &trail) *= (uint64_t)x->dims[d];
	if (!shape_fits(lead, k, trail))
		return ONNX_FALLBACK;
	idx = malloc(lead * trail * 4);
	if (!idx)
		return node_err(c, -ENOMEM, "out of memory");
	ret = reduce_jobs(c, x->data, ACCEL_REDUCE_ARGMAX, lead, k, trail, idx);
	if (!ret && !(ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims))) {
		y = node_out(c, 0)->data;
		memset(y, 0, x->count * 4);
		for (uint64_t a = 0; a < lead; a++)
			for (uint64_t b = 0; b < trail; b++)
				y[(a * k + (uint64_t)idx[a * trail + b]) * trail + b] = 1.0f;
	}
	free(idx);
	return ret < 0 ? ret : 0;
}

/* gx[n·D + d] = x[n, t[n, d], d]: x times the targets' one-hot mask (accel_eltwise MUL), summed over the
 * classes (accel_reduce SUM over the middle axis); an ignored element's mask row is 0. */
static int device_gather(struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *t, int64_t N,
			 int64_t C, int64_t D, bool has_ignore, int64_t ignore, float *gx)
{
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *mb;
	struct accel_tensor xt, mt;
	struct accel_eltwise_desc d = { .a = &xt, .b = &mt, .out = &xt, .op = ACCEL_ELT_MUL };
	struct accel_job *job = NULL;
	float *mask;
	int ret;

	if (!shape_fits((uint64_t)N, (uint64_t)C, (uint64_t)D) || !dev_has(c, 15))
		return ONNX_FALLBACK;
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, x->count * 4, &mb)))
		goto out;
	mask = accel_buffer_ptr(mb);
	memset(mask, 0, x->count * 4);
	for (int64_t n = 0; n < N; n++)
		for (int64_t e = 0; e < D; e++) {
			int64_t k = tensor_get_i(t, (size_t)(n * D + e));

			if (!(has_ignore && k == ignore))
				mask[(n * C + k) * D + e] = 1.0f;
		}
	if ((ret = accel_tensor_4d(xb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, (uint32_t)N, (uint32_t)C, (uint32_t)D, 1, &xt)) ||
	    (ret = accel_tensor_4d(mb, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, (uint32_t)N, (uint32_t)C, (uint32_t)D, 1, &mt))) {
		ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
		goto out;
	}
	ret = accel_eltwise(c->dev, &d, NULL, &job);
	if (!(ret = ajob_finish(c, ret, job, "accel_eltwise")))
		ret = reduce_jobs(c, accel_buffer_ptr(xb), ACCEL_REDUCE_SUM, (uint64_t)N, (uint64_t)C, (uint64_t)D, gx);
out:
	abufs_free(&bs);
	return ret;
}

int accel_vec_nllloss(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);

	if (!x || x->dtype != ONNX_FLOAT || !x->count)
		return ONNX_FALLBACK;
	return nll_loss(c, device_gather);
}

/* ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear --------------------------------------- */

/*
 * Per-tensor QuantizeLinear and DequantizeLinear, INT8 or UINT8 (as INT8 with the zero point and every
 * byte moved by 128: sat8(v - 128) + 128 is UINT8's saturation), on the vector units (accel_quant).
 * QuantizeLinear divides by its scale, the unit multiplies: only a power-of-two scale, whose reciprocal
 * is exact, gives the specification's bits; another scale, per-axis parameters, INT32 inputs: the host.
 */
int accel_vec_qdq(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *s = node_in(c, 1), *z = node_in(c, 2);
	bool q = c->n->op == OP_QUANTIZELINEAR, u8;
	struct accel_quant_desc d = { 0 };
	struct abufs bs = { .n = 0 };
	struct accel_buffer *xb, *yb;
	struct accel_tensor xt, yt;
	struct accel_job *job = NULL;
	float scale;
	int exp, zp;
	int ret;

	if (!x || !s || s->count != 1 || s->dtype != ONNX_FLOAT || !x->count || x->count > UINT32_MAX ||
	    (z && z->count != 1) || attr_find(c->n->pb, "output_dtype") || !dev_has(c, 15))
		return ONNX_FALLBACK;
	scale = ((const float *)s->data)[0];
	u8 = z ? z->dtype == ONNX_UINT8 : q;	/* QuantizeLinear's default output: UINT8 */
	if ((z && z->dtype != ONNX_UINT8 && z->dtype != ONNX_INT8) || !(scale > 0) || isinf(scale) ||
	    (q ? x->dtype != ONNX_FLOAT : (x->dtype != (u8 ? ONNX_UINT8 : ONNX_INT8))) || (q && frexpf(scale, &exp) != 0.5f))
		return ONNX_FALLBACK;
	zp = z ? (u8 ? ((const uint8_t *)z->data)[0] - 128 : ((const int8_t *)z->data)[0]) : (u8 ? -128 : 0);
	if ((ret = out_alloc(c, 0, q ? (u8 ? ONNX_UINT8 : ONNX_INT8) : ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	if ((ret = dev_mat(c, &bs, x->data, x->count * (q ? 4 : 1), q ? ACCEL_FP32 : ACCEL_INT8, 1, (uint32_t)x->count,
			   &xb, &xt)) ||
	    (ret = dev_mat(c, &bs, NULL, x->count * (q ? 1 : 4), q ? ACCEL_INT8 : ACCEL_FP32, 1, (uint32_t)x->count, &yb,
			   &yt)))
		goto out;
	if (!q && u8)
		for (size_t i = 0; i < x->count; i++)
			((uint8_t *)accel_buffer_ptr(xb))[i] ^= 0x80;
	d.input = &xt;
	d.output = &yt;
	d.scale = q ? 1.0f / scale : scale;
	d.zero_point = (int16_t)zp;
	ret = accel_quant(c->dev, &d, NULL, &job);
	if ((ret = ajob_finish(c, ret, job, "accel_quant")))
		goto out;
	memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * (q ? 1 : 4));
	if (q && u8)
		for (size_t i = 0; i < x->count; i++)
			((uint8_t *)node_out(c, 0)->data)[i] ^= 0x80;
out:
	abufs_free(&bs);
	return ret;
}

/* DynamicQuantizeLinear's range: REDUCE MIN and MAX of x as one row (up to 4096 values; more: the host),
 * a NaN propagated by both (then found on the host for the node's error). */
static int device_range(struct onnx_ctx *c, const struct onnx_tensor *x, float *lo, float *hi)
{
	int ret;

	if (x->count > 4096 || !dev_has(c, 15) || !dev_has(c, 25))
		return ONNX_FALLBACK;
	if ((ret = reduce_jobs(c, x->data, ACCEL_REDUCE_MIN, 1, x->count, 1, lo)) ||
	    (ret = reduce_jobs(c, x->data, ACCEL_REDUCE_MAX, 1, x->count, 1, hi)))
		return ret;
	if (*lo != *lo || *hi != *hi)
		for (size_t i = 0; i < x->count; i++)
			if (((const float *)x->data)[i] != ((const float *)x->data)[i])
				return node_err(c, -EINVAL, "x holds a NaN at %zu (no scale quantises it)", i);
	return 0;
}

int accel_vec_dynq(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0);

	if (!x || x->dtype != ONNX_FLOAT || !x->count)
		return ONNX_FALLBACK;
	return dynq_run(c, device_range);
}
