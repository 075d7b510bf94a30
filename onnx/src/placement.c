/* SPDX-License-Identifier: MIT */
/*
 * placement.c - where each node runs and why (accel-run --info), and the declared types/shapes of the
 * graph's inputs and outputs.  The interface of the models-ops branch's placement.c, which also has
 * the reasons of the issue-15 operators and records ran_on_device in exec.c: on a merge, take that
 * file.  Here ran_on_device stays -1; onnx_run_profile() reports where each node ran.
 */
#include <string.h>

#include "internal.h"

/* Why an operator without a device lowering runs on the host (ISA v1: PE array + SFU epilogue). */
static const char *host_reason(enum onnx_op op)
{
	switch (op) {
	case OP_SOFTMAX:
		return "needs exp/log/sqrt/division: the v1 SFU has ReLU and CLAMP only";
	case OP_ADD:
	case OP_BATCHNORM:
		return "element-wise arithmetic: ISA v1 has no element-wise unit";
	default:
		return "data movement or shape arithmetic (no MACs)";
	}
}

unsigned onnx_model_n_graph_nodes(const struct onnx_model *m)
{
	return m->n_nodes;
}

int onnx_model_node_info(const struct onnx_model *m, unsigned i, struct onnx_node_info *o)
{
	const struct onnx_node *n;

	if (i >= m->n_nodes)
		return -EINVAL;
	n = &m->nodes[i];
	memset(o, 0, sizeof(*o));
	o->name = n->pb->name && n->pb->name[0] ? n->pb->name : n->pb->output[0];
	o->op = n->pb->op_type;
	o->ran_on_device = -1;
	if (n->op == OP_CONSTANT) {
		o->place = ONNX_PLACE_FOLDED;
		o->reason = "a constant, read at load time";
	} else if (n->folded) {
		o->place = ONNX_PLACE_FOLDED;
		o->reason = n->op == OP_BATCHNORM ? "folded into the Conv before it" :
			    "fused into the Conv/Gemm before it (SFU epilogue)";
	} else if (onnx_accel_kernels[n->op]) {
		o->place = ONNX_PLACE_DEVICE;
		o->reason = "lowered onto libaccel (unsupported attributes or types fall back to the host)";
	} else {
		o->place = ONNX_PLACE_HOST;
		o->reason = host_reason(n->op);
	}
	return 0;
}

static int value_desc(const char *name, Onnx__ValueInfoProto *const *vis, size_t nvi, struct onnx_value_desc *o)
{
	memset(o, 0, sizeof(*o));
	o->name = name;
	o->ndim = -1;
	for (size_t i = 0; i < nvi; i++) {
		const Onnx__ValueInfoProto *vi = vis[i];
		const Onnx__TypeProto__Tensor *tt;

		if (!vi->name || strcmp(vi->name, name))
			continue;
		if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type)
			return 0;
		tt = vi->type->tensor_type;
		o->dtype = tt->has_elem_type ? tt->elem_type : 0;
		if (tt->shape && tt->shape->n_dim <= ONNX_MAX_DIMS) {
			o->ndim = (int)tt->shape->n_dim;
			for (size_t d = 0; d < tt->shape->n_dim; d++)
				o->dims[d] = tt->shape->dim[d]->value_case ==
							     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
							     tt->shape->dim[d]->dim_value >= 0
						     ? tt->shape->dim[d]->dim_value
						     : -1;
		}
		return 0;
	}
	return 0;
}

int onnx_model_input_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *o)
{
	if (i >= m->n_inputs)
		return -EINVAL;
	return value_desc(m->vals[m->inputs[i]].name, m->pb->graph->input, m->pb->graph->n_input, o);
}

int onnx_model_output_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *o)
{
	if (i >= m->n_outputs)
		return -EINVAL;
	return value_desc(m->vals[m->outputs[i]].name, m->pb->graph->output, m->pb->graph->n_output, o);
}
