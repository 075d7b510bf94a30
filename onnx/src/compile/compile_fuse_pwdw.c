/* SPDX-License-Identifier: MIT */
/*
 * compile_fuse_pwdw.c - a MobileNet inverted residual's expansion and depthwise convolutions as one
 * accel_conv2d_pwdw job (Documentation/onnx.md, "The compiler", fusion; libaccel.md "Fused expansion
 * and depthwise"): `Conv 1x1 (+ folded BN) -> [Relu/Clip] -> Conv depthwise` in fp32, and the QDQ int8
 * form `qconv 1x1 -> Q -> DQ -> qconv depthwise`, whose Q/DQ pair already folded into the two steps
 * (the intermediate's scale and zero point are the first's requantisation and the second's input zero
 * point).  The expanded tensor then stays in the storage units: the depthwise layer reads it from SRAM
 * instead of through the host ports, and the pair pays one job's fixed costs.
 *
 * Conditions: an expansion step (CS_CONV fp32 or CS_QCONV int8 in one job: its requantisation in the
 * epilogue, no max pool first) that is 1x1, stride 1, unpadded, groups 1, without a residual, whose
 * output is read by exactly one step -- a depthwise step of the same kind (groups == C == K, one job)
 * -- and is no graph output and no view's root; the three activations NHWC (the layout pass ran: the
 * one job needs packed NHWC tensors); a device with the depthwise block and line-tracked bands
 * (CAP_FEATURES bits 7 and 14).  Like the residual fusion, the step before takes the job: the expansion
 * step runs the pair (its `pair` names the depthwise step), the depthwise step becomes a fused step that
 * keeps its fields.  The intermediate keeps its place in the arena, live during that step only: libaccel
 * runs the pair as two jobs through it where one job cannot take it.
 */
#include "compile.h"

#define FEAT_DEPTHWISE (1u << 7)
#define FEAT_STREAM (1u << 14)

/* Steps (not fused away) that read value v: their operands (QDQ steps) or their node's inputs and
 * residual; graph outputs count 2. */
static int readers(const struct onnx_compiled *cm, int v, int *only)
{
	const struct onnx_model *m = cm->m;
	int u = 0;

	for (unsigned o = 0; o < m->n_outputs; o++)
		u += m->outputs[o] == v ? 2 : 0;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];
		const struct onnx_node *n = &m->nodes[s->node];
		bool r = s->res == v;

		if (s->kind == CS_FUSED || s->kind == CS_QFUSED)
			continue;
		if (CS_IS_QDQ(s->kind)) {
			r |= s->in[0] == v || s->in[1] == v;
		} else {
			for (unsigned k = 0; k < n->n_in; k++)
				r |= n->in[k] == v;
			r |= s->in[0] == v || s->in[1] == v;
		}
		if (r) {
			u++;
			*only = (int)i;
		}
	}
	return u;
}

/* v is its own alias root and nothing else views it. */
static bool unaliased(const struct onnx_compiled *cm, int v)
{
	if (cm->vals[v].root != v || cm->vals[v].loc != LOC_ARENA)
		return false;
	for (unsigned u = 0; u < cm->n_vals; u++)
		if ((int)u != v && cm->vals[u].root == v)
			return false;
	return true;
}

/* One job of a conv step, nothing fused into it yet. */
static bool plain_conv(const struct cstep *s, enum cstep_kind kind)
{
	return s->kind == kind && s->res < 0 && s->pair < 0 &&
	       (kind == CS_CONV || (!s->qpool && s->odt == ACCEL_INT8));
}

void cm_fuse_pwdw(struct onnx_compiled *cm)
{
	if ((cm->geom[6] & (FEAT_DEPTHWISE | FEAT_STREAM)) != (FEAT_DEPTHWISE | FEAT_STREAM))
		return;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		struct cstep *p = &cm->steps[i], *q;
		enum cstep_kind kind = p->kind;
		int v = p->out, j = -1;

		if ((kind != CS_CONV && kind != CS_QCONV) || !plain_conv(p, kind) || p->kh != 1 || p->kw != 1 ||
		    p->sh != 1 || p->sw != 1 || p->pt || p->pl || p->pb || p->pr || p->groups != 1 || v < 0)
			continue;
		if (readers(cm, v, &j) != 1 || j <= (int)i || !unaliased(cm, v))
			continue;
		q = &cm->steps[j];
		if (!plain_conv(q, kind) || q->in[0] != v || q->groups != q->c || q->groups != q->k || q->cg != 1 ||
		    q->c != p->k || q->n != p->n || q->h != p->oh || q->w != p->ow)
			continue;
		if (!cm->vals[p->in[0]].nhwc || !cm->vals[v].nhwc || q->out < 0 || !cm->vals[q->out].nhwc)
			continue;
		p->pair = j;
		p->reason = "device step of the plan: the expansion and the depthwise Conv after it, one "
			    "accel_conv2d_pwdw job (the expanded tensor stays on chip)";
		q->kind = kind == CS_CONV ? CS_FUSED : CS_QFUSED;
		q->reason = "fused into the expansion Conv before it (one accel_conv2d_pwdw job)";
	}
}
