/* SPDX-License-Identifier: MIT */
/*
 * ops_accel_norm.c - node kernels of the per-channel normalisations on the vector units (ISA 2):
 * BatchNormalization in inference with its parameters as tensors of the run (the compiled plan folds
 * constant ones into the Conv before it or runs them as a multiply and an add), and
 * InstanceNormalization (GroupNorm's export): accel_layernorm over each (n, c) plane, then the
 * per-channel scale and shift.  A case outside them (another type, rank < 2, training mode) returns
 * ONNX_FALLBACK: the host kernel runs it and reports its errors.
 */
#include <string.h>

#include "accel_util.h"
#include "ops_common.h"

/* x [N, C, inner] as a packed NCHW 4-D tensor {N, C, inner, 1}; a per-channel vector as {1, C, 1, 1}. */
static int t4(struct onnx_ctx *c, struct accel_buffer *b, uint64_t n, uint64_t ch, uint64_t inner,
	      struct accel_tensor *t)
{
	int ret = accel_tensor_4d(b, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, (uint32_t)n, (uint32_t)ch, (uint32_t)inner, 1, t);

	return ret ? node_err(c, ret, "device tensor: %s", accel_last_error(c->dev)) : 0;
}

static int elt(struct onnx_ctx *c, enum accel_eltwise_op op, const struct accel_tensor *a,
	       const struct accel_tensor *b, const struct accel_tensor *y)
{
	struct accel_eltwise_desc d = { .a = a, .b = b, .out = y, .op = op };
	struct accel_job *job = NULL;
	int ret = accel_eltwise(c->dev, &d, NULL, &job);

	return ajob_finish(c, ret, job, "accel_eltwise");
}

static bool dev_vec(struct onnx_ctx *c)
{
	struct accel_caps caps;

	return !accel_query_caps(c->dev, &caps) && (caps.features & (1u << 15));
}

static bool shape_ok(const struct onnx_tensor *x, uint64_t *inner)
{
	*inner = 1;
	for (unsigned d = 2; d < x->ndim; d++)
		*inner *= (uint64_t)x->dims[d];
	return x->ndim >= 2 && x->count && x->dims[0] <= UINT32_MAX && x->dims[1] <= UINT32_MAX && *inner <= UINT32_MAX;
}

static bool vec_of(const struct onnx_tensor *v, int64_t C)
{
	return v && v->dtype == ONNX_FLOAT && (int64_t)v->count == C;
}

/*
 * BatchNormalization: s = scale · RSQRT(var + ε) per channel, then y = (x − mean) · s + B, each an
 * accel_eltwise with the channel vector broadcast (the host kernel folds it into x·a + b in double).
 */
int accel_batchnorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *sc = node_in(c, 1), *b = node_in(c, 2), *mu = node_in(c, 3),
				 *var = node_in(c, 4);
	const struct onnx_tensor *vecs[4] = { sc, b, mu, var };
	float eps = attr_float(c->n->pb, "epsilon", 1e-5f);
	struct accel_buffer *xb, *yb, *pb, *eb;
	struct accel_tensor xt, yt, v[5], et;
	struct abufs bs = { .n = 0 };
	struct accel_job *job = NULL;
	uint64_t inner;
	int64_t C;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !shape_ok(x, &inner) || attr_int(c->n->pb, "training_mode", 0) ||
	    c->n->n_out > 1 || !(eps >= 0) || !vec_of(sc, x->dims[1]) || !vec_of(b, x->dims[1]) ||
	    !vec_of(mu, x->dims[1]) || !vec_of(var, x->dims[1]) || !dev_vec(c))
		return ONNX_FALLBACK;
	C = x->dims[1];
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	/* five channel vectors one after the other: scale, B, mean, var (+ eps), rsqrt -> s */
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, x->count * 4, &yb)) ||
	    (ret = abuf_new(c, &bs, NULL, (size_t)C * 20, &pb)) || (ret = abuf_new(c, &bs, &eps, 4, &eb)))
		goto out;
	for (unsigned k = 0; k < 4; k++)
		memcpy((float *)accel_buffer_ptr(pb) + k * C, vecs[k]->data, (size_t)C * 4);
	if ((ret = t4(c, xb, (uint64_t)x->dims[0], (uint64_t)C, inner, &xt)) ||
	    (ret = t4(c, yb, (uint64_t)x->dims[0], (uint64_t)C, inner, &yt)) || (ret = t4(c, eb, 1, 1, 1, &et)))
		goto out;
	for (unsigned k = 0; k < 5; k++) {
		if ((ret = t4(c, pb, 1, (uint64_t)C, 1, &v[k])))
			goto out;
		v[k].offset = (uint64_t)k * (uint64_t)C * 4;
	}
	if ((ret = elt(c, ACCEL_ELT_ADD, &v[3], &et, &v[3])))	/* var + eps */
		goto out;
	{
		struct accel_activation_desc d = { .input = &v[3], .output = &v[4], .act = ACCEL_ACT_RSQRT };

		ret = accel_activation(c->dev, &d, NULL, &job);
		if ((ret = ajob_finish(c, ret, job, "accel_activation")))
			goto out;
	}
	if ((ret = elt(c, ACCEL_ELT_MUL, &v[0], &v[4], &v[4])) ||	/* s = scale * rsqrt(var + eps) */
	    (ret = elt(c, ACCEL_ELT_SUB, &xt, &v[2], &yt)) || (ret = elt(c, ACCEL_ELT_MUL, &yt, &v[4], &xt)) ||
	    (ret = elt(c, ACCEL_ELT_ADD, &xt, &v[1], &yt)))
		goto out;
	memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * 4);
out:
	abufs_free(&bs);
	return ret;
}

/* InstanceNormalization: accel_layernorm of each (n, c) plane (no gamma, beta), then · scale[c] + B[c]. */
int accel_instancenorm(struct onnx_ctx *c)
{
	const struct onnx_tensor *x = node_in(c, 0), *sc = node_in(c, 1), *b = node_in(c, 2);
	float eps = attr_float(c->n->pb, "epsilon", 1e-5f);
	struct accel_buffer *xb, *yb, *sb, *bb;
	struct accel_tensor xt, yt, st, bt, x2, y2;
	struct abufs bs = { .n = 0 };
	struct accel_job *job = NULL;
	uint64_t inner, planes;
	int ret;

	if (!x || x->dtype != ONNX_FLOAT || !shape_ok(x, &inner) || x->ndim < 3 || !(eps >= 0) ||
	    !vec_of(sc, x->dims[1]) || !vec_of(b, x->dims[1]) || !dev_vec(c))
		return ONNX_FALLBACK;
	planes = (uint64_t)x->dims[0] * (uint64_t)x->dims[1];
	if (planes > UINT32_MAX)
		return ONNX_FALLBACK;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, x->ndim, x->dims)))
		return ret < 0 ? ret : 0;
	if ((ret = abuf_new(c, &bs, x->data, x->count * 4, &xb)) || (ret = abuf_new(c, &bs, NULL, x->count * 4, &yb)) ||
	    (ret = abuf_new(c, &bs, sc->data, sc->count * 4, &sb)) || (ret = abuf_new(c, &bs, b->data, b->count * 4, &bb)))
		goto out;
	if ((ret = accel_tensor_2d(xb, 0, ACCEL_FP32, (uint32_t)planes, (uint32_t)inner, &x2)) ||
	    (ret = accel_tensor_2d(yb, 0, ACCEL_FP32, (uint32_t)planes, (uint32_t)inner, &y2))) {
		ret = node_err(c, ret, "device tensor: %s", accel_last_error(c->dev));
		goto out;
	}
	{
		struct accel_layernorm_desc d = { .input = &x2, .output = &y2, .epsilon = eps };

		ret = accel_layernorm(c->dev, &d, NULL, &job);
		if ((ret = ajob_finish(c, ret, job, "accel_layernorm")))
			goto out;
	}
	if ((ret = t4(c, xb, (uint64_t)x->dims[0], (uint64_t)x->dims[1], inner, &xt)) ||
	    (ret = t4(c, yb, (uint64_t)x->dims[0], (uint64_t)x->dims[1], inner, &yt)) ||
	    (ret = t4(c, sb, 1, (uint64_t)x->dims[1], 1, &st)) || (ret = t4(c, bb, 1, (uint64_t)x->dims[1], 1, &bt)) ||
	    (ret = elt(c, ACCEL_ELT_MUL, &yt, &st, &xt)) || (ret = elt(c, ACCEL_ELT_ADD, &xt, &bt, &yt)))
		goto out;
	memcpy(node_out(c, 0)->data, accel_buffer_ptr(yb), x->count * 4);
out:
	abufs_free(&bs);
	return ret;
}
