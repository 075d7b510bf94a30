/* SPDX-License-Identifier: MIT */
/*
 * compile_datadep.c - models whose shapes depend on input data (Documentation/onnx.md, "The compiler").
 *
 * onnx_compile() is given the inputs' shapes, not their values: every value's shape must follow from
 * them.  A node whose output shape is read from an operand's *values* (Reshape's shape, Slice's starts,
 * Resize's scales, TopK's K, ...) or counts data (NonZero, Compress, Unique, NonMaxSuppression) breaks
 * that when the operand carries input data: the shape probe runs on zeros, so such a model either failed
 * to compile with a misleading message ("scales[0] = 0") or, for a view (Reshape, Squeeze), ran with the
 * probe's shape and gave a wrong result.  The compiler refuses it instead, with -EOPNOTSUPP and a message
 * naming the node, the operand and the graph input it comes from; it runs node by node (onnx_run).
 *
 * A value carries input data when it is a graph input or any node input it is computed from does,
 * except through Shape and Size, whose outputs depend only on the shapes.
 */
#include <errno.h>
#include <stdlib.h>

#include "compile.h"

#define ALL_INPUTS 0xffffu

/* Which inputs' values set node n's output shape (a bit per input position). */
static unsigned shape_operands(const struct onnx_node *n)
{
	switch (n->op) {
	case OP_RESHAPE:
	case OP_EXPAND:
	case OP_TILE:
	case OP_SQUEEZE:
	case OP_UNSQUEEZE:
	case OP_SPLIT:
	case OP_UPSAMPLE:
	case OP_ONEHOT:
	case OP_TOPK:
	case OP_REDUCEMEAN:
	case OP_REDUCESUM:
	case OP_REDUCEMAX:
	case OP_REDUCEMIN:
	case OP_REDUCEPROD:
	case OP_REDUCESUMSQUARE:
	case OP_REDUCEL1:
	case OP_REDUCEL2:
	case OP_REDUCELOGSUM:
	case OP_REDUCELOGSUMEXP:
		return 1u << 1; /* shape, repeats, axes, split, scales, depth, K */
	case OP_CONSTANTOFSHAPE:
	case OP_HANNWINDOW:
	case OP_HAMMINGWINDOW:
	case OP_BLACKMANWINDOW:
		return 1u << 0;
	case OP_SLICE:
		return 0xfu << 1; /* starts, ends, axes, steps */
	case OP_RESIZE:
		return 1u << 2 | 1u << 3; /* scales, sizes (roi moves the samples, not the shape) */
	case OP_PAD:
		return 1u << 1 | 1u << 3; /* pads, axes */
	case OP_MAXUNPOOL:
		return 1u << 2; /* output_shape */
	case OP_RANGE:
	case OP_NONZERO:
	case OP_COMPRESS:
	case OP_UNIQUE:
	case OP_NMS:
		return ALL_INPUTS;
	default:
		return 0;
	}
}

static const char *node_name(const struct onnx_node *n)
{
	return n->pb->name && n->pb->name[0] ? n->pb->name : n->pb->output[0];
}

int cm_check_data_shapes(struct onnx_compiled *cm)
{
	const struct onnx_model *m = cm->m;
	/* per value: the graph input whose data it carries (the first found), -1 none */
	int *src = malloc((m->n_vals ? m->n_vals : 1) * sizeof(*src));
	int ret = 0;

	if (!src)
		return cm_seterr(cm, -ENOMEM, "out of memory");
	for (unsigned v = 0; v < m->n_vals; v++)
		src[v] = -1;
	for (unsigned i = 0; i < m->n_inputs; i++)
		src[m->inputs[i]] = m->inputs[i];
	for (unsigned i = 0; i < m->n_nodes && !ret; i++) { /* nodes are in topological order */
		const struct onnx_node *n = &m->nodes[i];
		unsigned ops = shape_operands(n);
		int from = -1;

		if (n->folded)
			continue;
		for (unsigned k = 0; k < n->n_in; k++) {
			int v = n->in[k];

			if (v < 0 || src[v] < 0)
				continue;
			from = src[v];
			if (k < 16 && (ops >> k & 1))
				ret = cm_seterr(
					cm, -EOPNOTSUPP,
					"node '%s' (%s): its output shape depends on the values of input %u ('%s'), "
					"which come from graph input '%s': a data-dependent shape cannot be compiled "
					"for input shapes alone; run it node by node (onnx_run, accel-run "
					"--no-compile)",
					node_name(n), onnx_op_name(n->op), k, m->vals[v].name, m->vals[from].name);
			if (ret)
				break;
		}
		if (from >= 0 && n->op != OP_SHAPE && n->op != OP_SIZE)
			for (unsigned k = 0; k < n->n_out; k++)
				if (n->out[k] >= 0)
					src[n->out[k]] = from;
	}
	free(src);
	return ret;
}
