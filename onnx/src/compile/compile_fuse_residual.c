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
 *
 * Before it, the bias of nn.Linear as torch exports it on 3-D inputs (MatMul -> Add(constant row)) goes
 * into the GEMM's SFU bias, so a transformer's `x + Linear(y)` is one GEMM job too.
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

/*
 * MatMul -> Add(constant row) (torch exports nn.Linear on a 3-D input so): the row becomes the GEMM's
 * SFU bias, the Add disappears.  The constant must be N values broadcast over every other dimension
 * (4-D shape [1, 1, 1, N] with N the GEMM's columns), the GEMM without a bias, activation or scale.
 */
static void fuse_gemm_bias(struct onnx_compiled *cm)
{
	const struct onnx_model *m = cm->m;

	for (unsigned j = 0; j < cm->n_steps; j++) {
		struct cstep *e = &cm->steps[j];
		const struct onnx_node *n = &m->nodes[e->node];
		int act, p, c;

		if (e->kind != CS_ELT || e->op != ACCEL_ELT_ADD || e->b_off != UINT64_MAX || n->n_in != 2 ||
		    (e->act != ACCEL_ACT_NONE && e->act != ACCEL_ACT_RELU))
			continue;
		act = m->vals[n->in[0]].is_const ? 1 : 0;	/* the activation operand's index */
		c = n->in[1 - act];
		if (!m->vals[c].is_const || m->vals[n->in[act]].is_const)
			continue;
		p = producer(cm, n->in[act]);
		if (p < 0 || cm->steps[p].kind != CS_GEMM || cm->steps[p].b_off != UINT64_MAX ||
		    cm->steps[p].act != ACCEL_ACT_NONE || cm->steps[p].scale != 1.0f || cm->steps[p].out != n->in[act] ||
		    uses(cm, n->in[act]) != 1)
			continue;
		{
			const uint32_t *bd = act ? e->ad : e->bd, *od = e->od;

			if (bd[0] != 1 || bd[1] != 1 || bd[2] != 1 || bd[3] != od[3] || (int64_t)od[3] != cm->steps[p].N ||
			    cm->vals[c].loc != LOC_WEIGHT)
				continue;
		}
		cm->steps[p].b_off = cm->vals[c].off;
		cm->steps[p].act = e->act;
		cm->steps[p].out = e->out;
		e->kind = CS_FUSED;
		e->in[0] = n->in[act];
		e->reason = "fused into the MatMul/Gemm before it (the constant row is its SFU bias)";
	}
}

void cm_fuse_residual(struct onnx_compiled *cm)
{
	fuse_gemm_bias(cm);

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
