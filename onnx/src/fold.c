/* SPDX-License-Identifier: MIT */
/*
 * fold.c - BatchNormalization folded into the Conv that feeds it, at load time (inference mode):
 *   W'[k] = W[k] * s[k],  b'[k] = (b[k] - mean[k]) * s[k] + B[k],  s[k] = scale[k] / sqrt(var[k] + eps).
 * Only when the Conv's output feeds nothing but the BN, and W, b and the BN parameters are constants
 * used by nobody else (W is rewritten in place).  Otherwise BN stays a host node (Documentation/onnx.md).
 */
#include <math.h>
#include <string.h>

#include "internal.h"

static unsigned uses(const struct onnx_model *m, int v)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->n_nodes; i++)
		if (!m->nodes[i].const_folded)	/* evaluated at load time: reads nothing at run time */
			for (unsigned k = 0; k < m->nodes[i].n_in; k++)
				n += m->nodes[i].in[k] == v;
	for (unsigned i = 0; i < m->n_outputs; i++)
		n += m->outputs[i] == v;
	return n;
}

static int producer(const struct onnx_model *m, int v)
{
	for (unsigned i = 0; i < m->n_nodes; i++)
		if (!m->nodes[i].folded || m->nodes[i].op == OP_CONV)
			for (unsigned k = 0; k < m->nodes[i].n_out; k++)
				if (m->nodes[i].out[k] == v)
					return (int)i;
	return -1;
}

static bool const_float(const struct onnx_model *m, int v, size_t count)
{
	return v >= 0 && m->vals[v].is_const && m->vals[v].t.dtype == ONNX_FLOAT && m->vals[v].t.count == count;
}

static int fold_one(struct onnx_model *m, struct onnx_node *bn, struct onnx_node *conv)
{
	const struct onnx_tensor *w = &m->vals[conv->in[1]].t;
	int64_t K = w->dims[0];
	size_t per_k = w->count / (size_t)K;
	float eps = attr_float(bn->pb, "epsilon", 1e-5f);
	int bias = conv->n_in > 2 ? conv->in[2] : -1;
	const float *sc, *bb, *mu, *var;
	float *wp, *bp;

	for (unsigned i = 1; i < 5; i++)
		if (!const_float(m, bn->in[i], (size_t)K) || uses(m, bn->in[i]) != 1)
			return 0;
	if (bias >= 0 && (!const_float(m, bias, (size_t)K) || uses(m, bias) != 1))
		return 0;
	if (bias < 0) {
		bias = onnx_value_add(m, "(folded BatchNormalization bias)");
		if (bias < 0)
			return bias;
		if (onnx_tensor_alloc(&m->vals[bias].t, ONNX_FLOAT, 1, &K))
			return onnx_seterr(m, -ENOMEM, "out of memory");
		m->vals[bias].is_const = true;
		conv->in[2] = bias;
		conv->n_in = 3;
	}
	w = &m->vals[conv->in[1]].t;
	sc = m->vals[bn->in[1]].t.data;
	bb = m->vals[bn->in[2]].t.data;
	mu = m->vals[bn->in[3]].t.data;
	var = m->vals[bn->in[4]].t.data;
	wp = w->data;
	bp = m->vals[bias].t.data;
	for (int64_t k = 0; k < K; k++) {
		double s = sc[k] / sqrt((double)var[k] + eps);

		for (size_t i = 0; i < per_k; i++)
			wp[(size_t)k * per_k + i] = (float)(wp[(size_t)k * per_k + i] * s);
		bp[k] = (float)((bp[k] - mu[k]) * s + bb[k]);
	}
	conv->out[0] = bn->out[0];
	bn->folded = true;
	m->n_folded++;
	return 0;
}

int onnx_fold_batchnorm(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *bn = &m->nodes[i], *conv;
		int p, ret;

		if (bn->op != OP_BATCHNORM || bn->folded || bn->n_in != 5 || bn->n_out != 1 || bn->in[0] < 0 ||
		    attr_int(bn->pb, "training_mode", 0))
			continue;
		p = producer(m, bn->in[0]);
		if (p < 0 || m->nodes[p].op != OP_CONV || m->nodes[p].n_out != 1 || uses(m, bn->in[0]) != 1)
			continue;
		conv = &m->nodes[p];
		if (conv->n_in < 2 || conv->in[1] < 0 || !m->vals[conv->in[1]].is_const ||
		    m->vals[conv->in[1]].t.dtype != ONNX_FLOAT || m->vals[conv->in[1]].t.ndim < 1 ||
		    uses(m, conv->in[1]) != 1)
			continue;
		ret = fold_one(m, bn, conv);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * A Relu whose input is the output of a Conv or Gemm that feeds nothing else becomes that node's
 * activation: the SFU applies it in the epilogue on the device (isa.md), so the tensor is not sent
 * through the PE array a second time; the host kernels apply it at the end.
 */
void onnx_fuse_relu(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *r = &m->nodes[i], *p;
		int pi;

		if (r->op != OP_RELU || r->folded || r->n_in != 1 || r->in[0] < 0 || r->n_out != 1)
			continue;
		pi = producer(m, r->in[0]);
		if (pi < 0 || uses(m, r->in[0]) != 1)
			continue;
		p = &m->nodes[pi];
		if ((p->op != OP_CONV && p->op != OP_GEMM) || p->folded || p->fused_relu || p->fused_clamp || p->n_out != 1)
			continue;
		p->fused_relu = true;
		p->out[0] = r->out[0];
		r->folded = true;
	}
}

/*
 * A Clip with constant bounds lo <= hi (ReLU6: 0, 6) after a Conv or Gemm that feeds nothing else
 * becomes that node's activation: the SFU's CLAMP in the epilogue on the device (fp32 bounds), the same
 * clamp at the end of the host kernels.
 */
void onnx_fuse_clip(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *r = &m->nodes[i], *p;
		float lo, hi;
		int pi;

		if (r->op != OP_CLIP || r->folded || r->n_in < 1 || r->in[0] < 0 || r->n_out != 1 ||
		    clip_const_bounds(m, r, &lo, &hi) || !(lo <= hi))
			continue;
		pi = producer(m, r->in[0]);
		if (pi < 0 || uses(m, r->in[0]) != 1)
			continue;
		p = &m->nodes[pi];
		if ((p->op != OP_CONV && p->op != OP_GEMM) || p->folded || p->fused_relu || p->fused_clamp || p->n_out != 1)
			continue;
		p->fused_clamp = true;
		p->clamp_lo = lo;
		p->clamp_hi = hi;
		p->out[0] = r->out[0];
		r->folded = true;
	}
}
