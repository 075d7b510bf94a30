/* SPDX-License-Identifier: MIT */
/*
 * compile_fuse_residual.c - residual adds into the conv/GEMM epilogue (Documentation/onnx.md, "The
 * compiler", fusion).  ResNet's `Conv (+ folded BatchNormalization) -> Add(·, skip) [-> Relu]` is one
 * accel_conv2d job whose SFU adds the skip tensor after the bias and before the activation
 * (accel_epilogue.residual, ISA 2: CAP_FEATURES bit 16), instead of a conv job and an element-wise job
 * with a pass over the output in between.
 *
 * Conditions: an fp32 Add step of the plan (no broadcast: both operands of the output's shape) whose
 * operand is the output of a CS_CONV or CS_GEMM step with no activation of its own (the SFU applies
 * the residual before the activation, so a Conv+Relu -> Add is not this pattern) and read by nothing
 * else.  The other operand must exist when the conv runs: of the two operands, the later producer is
 * fused and the other becomes its residual (a ResNet downsampling block's 1x1 conv comes after the
 * main branch in graph order, so the Add goes into the 1x1 conv).  A Relu already fused into the Add
 * (cm_fuse_elt_relu) moves with it.
 */
#include "compile.h"

/* Step index that writes value v (-1: a graph input or none). */
static int producer(const struct onnx_compiled *cm, int v)
{
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct onnx_node *n = &cm->m->nodes[cm->steps[i].node];

		if (cm->steps[i].kind == CS_FUSED)
			continue;
		if (cm->steps[i].out == v)
			return (int)i;
		for (unsigned k = 0; k < n->n_out; k++)
			if (n->out[k] == v)
				return (int)i;
	}
	return -1;
}

/* Readers of v among the steps (a fused step's node still names its inputs), graph outputs count 2. */
static int uses(const struct onnx_compiled *cm, int v)
{
	const struct onnx_model *m = cm->m;
	int u = 0;

	for (unsigned o = 0; o < m->n_outputs; o++)
		u += m->outputs[o] == v ? 2 : 0;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct onnx_node *n = &m->nodes[cm->steps[i].node];

		for (unsigned k = 0; k < n->n_in; k++)
			u += n->in[k] == v;
		u += cm->steps[i].res == v;
	}
	return u;
}

static bool same4(const uint32_t a[4], const uint32_t b[4])
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* The conv/GEMM step p can take the add's other operand r as its residual. */
static bool fusable(const struct onnx_compiled *cm, int p, int operand, int r)
{
	const struct cstep *s;
	const struct onnx_model *m = cm->m;
	int rp;

	if (p < 0)
		return false;
	s = &cm->steps[p];
	if ((s->kind != CS_CONV && s->kind != CS_GEMM) || s->act != ACCEL_ACT_NONE || s->res >= 0 ||
	    s->out != operand || uses(cm, operand) != 1)
		return false;
	if (s->kind == CS_GEMM && s->scale != 1.0f)
		return false;	/* the SFU scales after the residual add: (A B + bias + r) * alpha */
	if (r < 0 || m->vals[r].is_const || r == operand)
		return false;
	rp = producer(cm, r);
	return rp < p;	/* the residual exists when the conv runs (graph inputs: -1) */
}

void cm_fuse_residual(struct onnx_compiled *cm)
{
	if (!(cm->geom[6] & (1u << 16)))
		return;	/* no SFU residual operand */
	for (unsigned j = 0; j < cm->n_steps; j++) {
		struct cstep *e = &cm->steps[j];
		const struct onnx_node *n = &cm->m->nodes[e->node];
		int a, b, pa, pb, p, operand, r;

		if (e->kind != CS_ELT || e->op != ACCEL_ELT_ADD || e->b_off != UINT64_MAX || n->n_in != 2 ||
		    (e->act != ACCEL_ACT_NONE && e->act != ACCEL_ACT_RELU) || !same4(e->ad, e->od) || !same4(e->bd, e->od))
			continue;
		a = n->in[0];
		b = n->in[1];
		pa = producer(cm, a);
		pb = producer(cm, b);
		/* the later producer takes the add; the earlier operand is its residual */
		if (pa > pb) {
			p = fusable(cm, pa, a, b) ? pa : (fusable(cm, pb, b, a) ? pb : -1);
		} else {
			p = fusable(cm, pb, b, a) ? pb : (fusable(cm, pa, a, b) ? pa : -1);
		}
		if (p < 0)
			continue;
		operand = p == pa ? a : b;
		r = p == pa ? b : a;
		cm->steps[p].res = r;
		cm->steps[p].act = e->act;
		cm->steps[p].out = e->out;
		e->kind = CS_FUSED;
		e->in[0] = operand;	/* never materialised */
		e->reason = "fused into the Conv/Gemm before it (SFU residual operand, ISA 2)";
	}
}
