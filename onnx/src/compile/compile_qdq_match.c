// SPDX-License-Identifier: MIT
/*
 * compile_qdq_match.c - the QDQ pattern matcher (Documentation/onnx.md, "int8 QDQ graphs"): which
 * DequantizeLinear -> op -> QuantizeLinear groups become one int8 device step (compile_qdq.c lowers them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_util.h"
#include "compile.h"
#include "geom.h"

#include "compile_qdq.h"

const struct onnx_tensor *qdq_cval(const struct onnx_model *m, int v)
{
	return v >= 0 && m->vals[v].is_const ? &m->vals[v].t : NULL;
}

/* Graph-wide use counts and (last) consumer of every value; graph outputs count twice. */
void qdq_uses_of(const struct onnx_model *m, int *uses, int *cons)
{
	for (unsigned v = 0; v < m->n_vals; v++)
		uses[v] = 0, cons[v] = -1;
	for (unsigned i = 0; i < m->n_nodes; i++) {
		if (m->nodes[i].folded)
			continue;
		for (unsigned k = 0; k < m->nodes[i].n_in; k++)
			if (m->nodes[i].in[k] >= 0) {
				uses[m->nodes[i].in[k]]++;
				cons[m->nodes[i].in[k]] = (int)i;
			}
	}
	for (unsigned o = 0; o < m->n_outputs; o++)
		uses[m->outputs[o]] += 2;
}

/* Per-tensor scale and zero point from constant inputs (zp absent: UINT8 0). */
static bool qparams(const struct onnx_model *m, const struct onnx_node *n, struct qparam *q)
{
	const struct onnx_tensor *s = n->n_in > 1 ? qdq_cval(m, n->in[1]) : NULL;
	const struct onnx_tensor *z = n->n_in > 2 ? qdq_cval(m, n->in[2]) : NULL;

	if (!s || s->dtype != ONNX_FLOAT || s->count != 1 || (n->n_in > 2 && n->in[2] >= 0 && !z))
		return false;
	q->scale_f = ((const float *)s->data)[0];
	q->scale = q->scale_f;
	if (!(q->scale > 0) || !isfinite(q->scale))
		return false;
	q->dtype = z ? z->dtype : ONNX_UINT8;
	if (z && (z->count != 1 || (z->dtype != ONNX_UINT8 && z->dtype != ONNX_INT8)))
		return false;
	q->zp = z ? (int32_t)tensor_get_i(z, 0) : 0;
	if (q->dtype == ONNX_UINT8)
		q->zp -= 128;
	return true;
}

/* The first node (in graph order) that writes v and still runs; -1 if none (the model's use-def index). */
static int producer(const struct onnx_model *m, int v)
{
	unsigned n_p;
	const int *p = onnx_producers(m, v, &n_p);
	int best = -1;

	for (unsigned j = 0; j < n_p; j++)
		if (!m->nodes[p[j]].folded && (best < 0 || p[j] < best))
			best = p[j];
	return best;
}

/* v = DequantizeLinear(x) of a per-tensor quantised activation: the DQ node, else -1. */
static int act_dq(const struct onnx_model *m, int v, int *x, struct qparam *q)
{
	int d = producer(m, v);

	if (d < 0 || m->nodes[d].op != OP_DEQUANTIZELINEAR || m->nodes[d].in[0] < 0 ||
	    m->vals[m->nodes[d].in[0]].is_const || !qparams(m, &m->nodes[d], q))
		return -1;
	*x = m->nodes[d].in[0];
	return d;
}

/* v = DequantizeLinear(constant INT8 or INT32): the DQ node, else -1. */
static int const_dq(const struct onnx_model *m, int v, int dtype)
{
	int d = producer(m, v);
	const struct onnx_node *n;

	if (d < 0 || m->nodes[d].op != OP_DEQUANTIZELINEAR)
		return -1;
	n = &m->nodes[d];
	if (!qdq_cval(m, n->in[0]) || (int)m->vals[n->in[0]].t.dtype != dtype || n->n_in < 2 || !qdq_cval(m, n->in[1]) ||
	    m->vals[n->in[1]].t.dtype != ONNX_FLOAT || (n->n_in > 2 && n->in[2] >= 0 && !qdq_cval(m, n->in[2])))
		return -1;
	return d;
}

/* v's only consumer is a QuantizeLinear (per tensor): the Q node, else -1. */
static int q_after(const struct onnx_model *m, const int *uses, const int *cons, int v, struct qparam *q)
{
	int c = v >= 0 && uses[v] == 1 ? cons[v] : -1;

	if (c < 0 || m->nodes[c].op != OP_QUANTIZELINEAR || m->nodes[c].in[0] != v || !qparams(m, &m->nodes[c], q) ||
	    m->nodes[c].n_out != 1)
		return -1;
	return c;
}

static bool is_view_op(enum onnx_op op)
{
	return op == OP_FLATTEN || op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_IDENTITY;
}

/* Does node a anchor a QDQ pattern?  Shape-independent checks only (the lowering does the rest). */
bool qdq_match(const struct onnx_model *m, const int *uses, const int *cons, unsigned a, struct qpat *p)
{
	const struct onnx_node *n = &m->nodes[a];
	unsigned n_act = n->op == OP_ADD ? 2 : 1;
	int out;

	memset(p, 0, sizeof(*p));
	p->anchor = (int)a;
	p->q = p->relu = p->wdq = p->bdq = p->bias_f = -1;
	p->xdq[0] = p->xdq[1] = p->x[0] = p->x[1] = -1;
	if (n->folded || n->n_out < 1 || n->n_in < n_act)
		return false;
	switch (n->op) {
	case OP_CONV:
	case OP_GEMM:
	case OP_MATMUL:
		if (n->n_in < 2 || (p->wdq = const_dq(m, n->in[1], ONNX_INT8)) < 0)
			return false;
		if (n->op != OP_MATMUL && n->n_in > 2 && n->in[2] >= 0) {
			p->bdq = const_dq(m, n->in[2], ONNX_INT32);
			if (p->bdq < 0) {
				if (!qdq_cval(m, n->in[2]) || m->vals[n->in[2]].t.dtype != ONNX_FLOAT)
					return false;
				p->bias_f = n->in[2];
			}
		}
		break;
	case OP_ADD:
		if (n->n_in != 2)
			return false;
		break;
	case OP_MAXPOOL:
	case OP_AVGPOOL:
	case OP_GLOBALAVGPOOL:
		if (n->n_out != 1)
			return false;
		break;
	default:
		if (!is_view_op(n->op))
			return false;
		break;
	}
	for (unsigned k = 0; k < n_act; k++)
		if ((p->xdq[k] = act_dq(m, n->in[k], &p->x[k], &p->xq[k])) < 0)
			return false;
	out = n->out[0];
	if (n->op == OP_ADD && out >= 0 && uses[out] == 1 && cons[out] >= 0 && m->nodes[cons[out]].op == OP_RELU) {
		p->relu = cons[out];
		out = m->nodes[p->relu].out[0];
	}
	if ((p->q = q_after(m, uses, cons, out, &p->yq)) < 0)
		return false;
	p->y = m->nodes[p->q].out[0];
	if (is_view_op(n->op) &&
	    (p->xq[0].scale_f != p->yq.scale_f || p->xq[0].zp != p->yq.zp || p->xq[0].dtype != p->yq.dtype))
		return false;
	return true;
}

int cm_qdq_match(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;
	int *uses = calloc(m->n_vals + 1, sizeof(int)), *cons = calloc(m->n_vals + 1, sizeof(int));
	struct qpat p;

	cm->qrole = calloc(m->n_nodes + 1, 1);
	if (!uses || !cons || !cm->qrole) {
		free(uses);
		free(cons);
		return cm_seterr(cm, -ENOMEM, "QDQ matcher: out of memory");
	}
	qdq_uses_of(m, uses, cons);
	for (unsigned i = 0; i < m->n_nodes; i++)
		if (qdq_match(m, uses, cons, i, &p)) {
			cm->qrole[i] = QR_ANCHOR;
			cm->qrole[p.q] = QR_ABSORBED;
			if (p.relu >= 0)
				cm->qrole[p.relu] = QR_ABSORBED;
		}
	/* a DQ node goes when every reader of its output is a pattern that reads its input instead */
	for (unsigned i = 0; i < m->n_nodes; i++) {
		const struct onnx_node *n = &m->nodes[i];
		int v = n->n_out ? n->out[0] : -1;
		bool all = v >= 0 && uses[v] > 0;

		if (n->folded || n->op != OP_DEQUANTIZELINEAR || cm->qrole[i] || !all)
			continue;
		for (unsigned j = 0; all && j < m->n_nodes; j++)
			if (!m->nodes[j].folded)
				for (unsigned k = 0; k < m->nodes[j].n_in; k++)
					if (m->nodes[j].in[k] == v && cm->qrole[j] != QR_ANCHOR)
						all = false;
		for (unsigned o = 0; o < m->n_outputs; o++)
			all &= m->outputs[o] != v;
		if (all)
			cm->qrole[i] = QR_ABSORBED;
	}
	free(uses);
	free(cons);
	return 0;
}
