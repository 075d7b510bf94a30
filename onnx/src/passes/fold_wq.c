/* SPDX-License-Identifier: MIT */
/*
 * fold_wq.c - weight-only quantised MatMuls become fp32 MatMuls by a constant, at load time (issue 29).
 *
 * Two forms (Documentation/llm.md, "Quantisation formats"):
 *   MatMulNBits(A, B, scales[, zero_points]) with constant B, scales, zero_points and no bias or g_idx;
 *   MatMul(A, DequantizeLinear(q, scale[, zero_point])) with q, scale, zero_point constant and A not itself
 *     the output of a DequantizeLinear (that is an int8 QDQ pattern, left to compile_qdq.c).
 * Each node is rewired to MatMul(A, W) with W = onnx_wq_gemm_weight() (ops_wq.c), a new float32 [K, N]
 * constant: the compiler then lowers it like any MatMul by a constant (a device GEMM step, its bias Add and
 * residual fused), and the node-by-node executor runs it as a device MatMul.  A DequantizeLinear left with
 * no reader is folded.  With ONNX_LOAD_NO_FOLD nothing happens here: the CPU reference runs the
 * MatMulNBits and DequantizeLinear kernels as written, which checks this pass.  The node keeps where its
 * packed weight came from (wq, wq_src, wq_in): the compiled plan of a device with the decompressing load
 * reads those bytes instead of the fp32 weight (compile_wq.c).
 */
#include <string.h>

#include "internal.h"

/* Reads of v by running nodes and graph outputs. */
static unsigned live_uses(const struct onnx_model *m, int v)
{
	unsigned n_c, n = onnx_graph_output_uses(m, v);
	const int *c = onnx_consumers(m, v, &n_c);

	for (unsigned j = 0; j < n_c; j++)
		n += !m->nodes[c[j]].folded;
	return n;
}

static bool produced_by_dq(const struct onnx_model *m, int v)
{
	unsigned n_p;
	const int *p = onnx_producers(m, v, &n_p);

	for (unsigned j = 0; j < n_p; j++)
		if (m->nodes[p[j]].op == OP_DEQUANTIZELINEAR && !m->nodes[p[j]].folded)
			return true;
	return false;
}

static bool all_const(const struct onnx_model *m, const struct onnx_node *n, unsigned from, unsigned to)
{
	for (unsigned k = from; k < n->n_in && k < to; k++)
		if (n->in[k] >= 0 && !m->vals[n->in[k]].is_const)
			return false;
	return true;
}

/* Node i reads a weight-only quantised weight it can take as an fp32 constant. */
static bool foldable(const struct onnx_model *m, const struct onnx_node *n)
{
	if (n->folded || n->n_out != 1 || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0)
		return false;
	if (n->op == OP_MATMULNBITS)
		return all_const(m, n, 1, 4) && (n->n_in < 5 || n->in[4] < 0) && (n->n_in < 6 || n->in[5] < 0);
	if (n->op != OP_MATMUL || m->vals[n->in[1]].is_const || !produced_by_dq(m, n->in[1]) ||
	    produced_by_dq(m, n->in[0]))
		return false;
	{
		unsigned n_p;
		const int *p = onnx_producers(m, n->in[1], &n_p);

		for (unsigned j = 0; j < n_p; j++)
			if (!m->nodes[p[j]].folded && !all_const(m, &m->nodes[p[j]], 0, ONNX_MAX_NODE_IO))
				return false;
	}
	return true;
}

static int fold_one(struct onnx_model *m, struct onnx_node *n)
{
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = { .m = m, .n = n, .err = msg };
	int old_b = n->in[1], in[2] = { n->in[0], -1 }, w, ret;
	struct onnx_tensor t = { 0 };
	unsigned n_p;
	const int *p;

	msg[0] = 0;
	/* the packed form, kept for the compiler (the MatMulNBits's own inputs, or the DequantizeLinear's) */
	n->wq_src = (int)(n - m->nodes);
	for (unsigned k = 0; k < 3; k++)
		n->wq_in[k] = k + 1 < n->n_in ? n->in[k + 1] : -1;
	if (n->op == OP_MATMUL) {
		p = onnx_producers(m, old_b, &n_p);
		for (unsigned j = 0; j < n_p; j++)
			if (m->nodes[p[j]].op == OP_DEQUANTIZELINEAR && !m->nodes[p[j]].folded) {
				n->wq_src = p[j];
				for (unsigned k = 0; k < 3; k++)
					n->wq_in[k] = k < m->nodes[p[j]].n_in ? m->nodes[p[j]].in[k] : -1;
			}
	}
	if ((ret = onnx_wq_gemm_weight(&c, &t)))
		return onnx_seterr(m, ret, "%s", msg);
	w = onnx_value_add(m, "(dequantised weight)");
	if (w < 0) {
		onnx_tensor_release(&t);
		return w;
	}
	m->vals[w].t = t;
	m->vals[w].is_const = true;
	m->vals[w].shape_known = true;
	m->vals[w].sndim = t.ndim;
	memcpy(m->vals[w].sdims, t.dims, sizeof(t.dims));
	m->vals[w].shape_origin = -1;
	in[1] = w;
	if ((ret = onnx_node_set_inputs(m, n, 2, in)))
		return ret;
	n->op = OP_MATMUL;	/* reported as the file's operator (MatMulNBits), run as a MatMul */
	n->wq = true;
	/* the DequantizeLinear feeding it, now read by nobody */
	p = onnx_producers(m, old_b, &n_p);
	for (unsigned j = 0; j < n_p; j++) {
		struct onnx_node *dq = &m->nodes[p[j]];

		if (dq->op == OP_DEQUANTIZELINEAR && !dq->folded && !live_uses(m, old_b)) {
			dq->folded = true;
			dq->fused_into = "weight-only quantisation: dequantised at load time into the MatMul's fp32 weight";
			m->n_folded++;
		}
	}
	return 0;
}

int onnx_fold_weight_only(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		int ret;

		if (!foldable(m, &m->nodes[i]))
			continue;
		if ((ret = fold_one(m, &m->nodes[i])))
			return ret;
	}
	return 0;
}
