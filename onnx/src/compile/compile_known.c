/* SPDX-License-Identifier: MIT */
/*
 * compile_known.c - values the compiler knows (issue 29): shape arithmetic evaluated once per compiled
 * form instead of at every run.
 *
 * A model with symbolic dimensions (a decoder's batch, sequence and past) keeps its Shape -> Gather ->
 * Concat -> Reshape chains, its ConstantOfShape/Range/Expand shapes and its rotary "half = dim / 2"
 * after the loader's folding: their values depend on the input shapes, which the loader does not know.
 * onnx_compile() is given them, so a node is *known* when it is a Shape or Size, or every input it has is
 * a model constant or known: its host kernel runs once, on the shape probe, whose values are then exact
 * (they never depended on input data), and no step runs it.  Known values go into the weight image
 * (LOC_WEIGHT, saved in compiled-model files): host steps read them from there, the views read them at
 * compile time (a Slice whose starts were computed from a Shape becomes a view or a device copy).
 * Not known: outputs of the graph, Q/DQ nodes (the int8 lowering's), values of more than
 * KNOWN_MAX_BYTES (a mask the size of the attention is data, not a shape).
 */
#include <string.h>

#include "compile.h"

#define KNOWN_MAX_BYTES (64u * 1024u)

bool cm_is_const(const struct onnx_compiled *cm, int v)
{
	return v >= 0 && (cm->m->vals[v].is_const || (cm->known && cm->known[v]));
}

/* Node i's outputs follow from the input shapes and constants alone. */
static bool node_known(const struct onnx_compiled *cm, unsigned i)
{
	const struct onnx_model *m = cm->m;
	const struct onnx_node *n = &m->nodes[i];
	bool any_known = false;

	if (n->folded || (cm->qrole && cm->qrole[i]) || !n->n_out || n->op == OP_QUANTIZELINEAR ||
	    n->op == OP_DEQUANTIZELINEAR)
		return false;
	for (unsigned k = 0; k < n->n_out; k++)
		if (n->out[k] >= 0 && onnx_graph_output_uses(m, n->out[k]))
			return false;
	if (n->op == OP_SHAPE || n->op == OP_SIZE)
		return n->n_in >= 1 && n->in[0] >= 0;
	for (unsigned k = 0; k < n->n_in; k++) {
		int v = n->in[k];

		if (v < 0)
			continue;
		if (!cm_is_const(cm, v))
			return false;
		any_known |= !m->vals[v].is_const;
	}
	return any_known;
}

int cm_lower_known(struct onnx_compiled *cm, unsigned i, struct cstep *s)
{
	struct onnx_model *m = cm->m;
	const struct onnx_node *n = &m->nodes[i];
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = cm_probe_ctx(cm, i, msg);
	int ret;

	if (!cm->known || !node_known(cm, i))
		return ONNX_FALLBACK;
	for (unsigned k = 0; k < n->n_out; k++)
		if (n->out[k] >= 0)
			onnx_tensor_release(node_out(&c, k));
	msg[0] = 0;
	ret = onnx_run_node(&c);
	if (ret)
		return cm_seterr(cm, ret, "compile: %s", msg);
	for (unsigned k = 0; k < n->n_out; k++) {
		const struct onnx_tensor *t = n->out[k] >= 0 ? node_out(&c, k) : NULL;

		if (t && t->data && (size_t)t->count * onnx_dtype_size(t->dtype) > KNOWN_MAX_BYTES) {
			for (unsigned j = 0; j < n->n_out; j++)	/* the caller lowers it afresh */
				if (n->out[j] >= 0)
					onnx_tensor_release(node_out(&c, j));
			return ONNX_FALLBACK;
		}
	}
	for (unsigned k = 0; k < n->n_out; k++)
		if (n->out[k] >= 0 && node_out(&c, k)->data)
			cm->known[n->out[k]] = 1;
	memset(s, 0, sizeof(*s));
	s->node = (int)i;
	s->in[0] = n->n_in ? n->in[0] : -1;
	s->in[1] = -1;
	s->out = n->out[0];
	s->kind = CS_KNOWN;
	s->reason = "computed at compile time: it depends only on the input shapes and constants";
	return 0;
}

int cm_place_known(struct onnx_compiled *cm)
{
	if (!cm->known)
		return 0;
	for (unsigned v = 0; v < cm->n_vals; v++) {
		const struct onnx_tensor *t = &cm->probe[v];
		uint64_t bytes;

		if (!cm->known[v] || cm->m->vals[v].is_const)
			continue;
		bytes = (uint64_t)t->count * onnx_dtype_size(t->dtype);
		cm->vals[v].off = cm_wimg_add(cm, t->data, bytes);
		if (cm->vals[v].off == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory");
		cm->vals[v].loc = LOC_WEIGHT;
	}
	return 0;
}
