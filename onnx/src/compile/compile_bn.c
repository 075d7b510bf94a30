/* SPDX-License-Identifier: MIT */
/*
 * compile_bn.c - a BatchNormalization the loader could not fold into a Conv before it (DenseNet's
 * pre-activation blocks: BN -> ReLU -> Conv, the BN reading a Concat) as device steps: per channel
 * y = x * s + t with s = scale / sqrt(var + eps), t = B - mean * s (the loader's folding formula, in
 * double), two element-wise jobs on the vector units (ISA 2): a multiply by s and an in-place add of
 * t, broadcast over N, H, W, and a Relu after it goes into the add (cm_fuse_elt_relu takes it into the
 * multiply's step, cm_expand_bn then moves it to the add).  (A depthwise 1x1 convolution would be one
 * job, but NCHW depthwise runs through the PE array at a fraction of the vector units' rate: DenseNet
 * took 5x the cycles that way.)  Documentation/onnx.md, "The compiler".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

/* The multiply step: CS_ELT MUL by the packed s (b_off); w_off holds t for cm_expand_bn. */
int cm_lower_bn(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_model *m = cm->m;
	const struct onnx_tensor *x = node_in(c, 0);
	float eps = attr_float(n->pb, "epsilon", 1e-5f);
	int64_t C;
	float *w, *b;

	if (!(cm->geom[6] & (1u << 15)) || n->n_in != 5 || n->n_out != 1 || !x || x->dtype != ONNX_FLOAT ||
	    m->vals[n->in[0]].is_const || x->ndim < 2 || x->ndim > 4 || attr_int(n->pb, "training_mode", 0))
		return ONNX_FALLBACK;
	C = x->dims[1];
	for (unsigned k = 1; k < 5; k++) {
		const struct onnx_tensor *p = node_in(c, k);

		if (!p || !m->vals[n->in[k]].is_const || p->dtype != ONNX_FLOAT || p->count != (size_t)C)
			return ONNX_FALLBACK;
	}
	for (unsigned d = 0; d < x->ndim; d++)
		if (x->dims[d] > UINT32_MAX || !x->dims[d])
			return ONNX_FALLBACK;
	s->b_off = cm_wimg_add(cm, NULL, (uint64_t)C * 4);
	s->w_off = cm_wimg_add(cm, NULL, (uint64_t)C * 4);
	if (s->w_off == UINT64_MAX || s->b_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	w = (float *)(cm->wimg + s->b_off);
	b = (float *)(cm->wimg + s->w_off);
	for (int64_t k = 0; k < C; k++) {
		const float *sc = node_in(c, 1)->data, *bb = node_in(c, 2)->data, *mu = node_in(c, 3)->data,
			    *var = node_in(c, 4)->data;
		double sk = sc[k] / sqrt((double)var[k] + eps);

		w[k] = (float)sk;
		b[k] = (float)(bb[k] - mu[k] * sk);
	}
	/* 4-D shapes: x as [N, C, rest...] padded to 4 on the right, s and t as [1, C, 1, 1] */
	for (unsigned d = 0; d < 4; d++) {
		s->ad[d] = d < x->ndim ? (uint32_t)x->dims[d] : 1;
		s->bd[d] = d == 1 ? (uint32_t)C : 1;
		s->od[d] = s->ad[d];
	}
	s->kind = CS_ELT;
	s->op = ACCEL_ELT_MUL;
	s->in[1] = -1;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}

/* Each BatchNormalization's multiply step gets its add step after it (in place on the output), which
 * takes the activation fused into the multiply. */
int cm_expand_bn(struct onnx_compiled *cm)
{
	const struct onnx_model *m = cm->m;
	unsigned extra = 0, k = 0;
	struct cstep *ns;

	for (unsigned i = 0; i < cm->n_steps; i++)
		extra += cm->steps[i].kind == CS_ELT && m->nodes[cm->steps[i].node].op == OP_BATCHNORM;
	if (!extra)
		return 0;
	ns = calloc(cm->n_steps + extra, sizeof(*ns));
	if (!ns)
		return cm_seterr(cm, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < cm->n_steps; i++) {
		struct cstep *s = &ns[k++];

		*s = cm->steps[i];
		if (s->kind != CS_ELT || m->nodes[s->node].op != OP_BATCHNORM)
			continue;
		ns[k] = *s;
		ns[k].op = ACCEL_ELT_ADD;
		ns[k].in[0] = s->out;
		ns[k].b_off = s->w_off;
		s->act = ACCEL_ACT_NONE;
		k++;
	}
	free(cm->steps);
	cm->steps = ns;
	cm->n_steps = k;
	return 0;
}
