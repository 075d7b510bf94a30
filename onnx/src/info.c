/* SPDX-License-Identifier: MIT */
/*
 * info.c - introspection for tools (accel-run --info/--profile): the declared types and shapes of the
 * graph's inputs and outputs, read from their ValueInfoProtos, and the nodes of the graph.
 */
#include <string.h>

#include "internal.h"

static const Onnx__ValueInfoProto *find_vi(Onnx__ValueInfoProto **vis, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (vis[i] && vis[i]->name && !strcmp(vis[i]->name, name))
			return vis[i];
	return NULL;
}

static void fill_info(const Onnx__ValueInfoProto *vi, const char *name, struct onnx_value_info *out)
{
	const Onnx__TypeProto__Tensor *tt;

	memset(out, 0, sizeof(*out));
	out->name = name;
	out->ndim = -1;
	if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return;
	tt = vi->type->tensor_type;
	if (!tt)
		return;
	out->dtype = tt->has_elem_type ? tt->elem_type : 0;
	if (!tt->shape || tt->shape->n_dim > ONNX_MAX_DIMS)
		return;
	out->ndim = (int)tt->shape->n_dim;
	for (size_t d = 0; d < tt->shape->n_dim; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];

		out->dims[d] = -1;
		if (dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0)
			out->dims[d] = dim->dim_value;
		else if (dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			out->dim_param[d] = dim->dim_param;
	}
}

int onnx_model_input_info(const struct onnx_model *m, unsigned i, struct onnx_value_info *out)
{
	const char *name;

	if (!m || !out || i >= m->n_inputs)
		return -EINVAL;
	name = m->vals[m->inputs[i]].name;
	fill_info(find_vi(m->pb->graph->input, m->pb->graph->n_input, name), name, out);
	return 0;
}

int onnx_model_output_info(const struct onnx_model *m, unsigned i, struct onnx_value_info *out)
{
	const char *name;

	if (!m || !out || i >= m->n_outputs)
		return -EINVAL;
	name = m->vals[m->outputs[i]].name;
	fill_info(find_vi(m->pb->graph->output, m->pb->graph->n_output, name), name, out);
	return 0;
}

unsigned onnx_model_n_graph_nodes(const struct onnx_model *m)
{
	return m ? m->n_nodes : 0;
}

int onnx_model_node_info(const struct onnx_model *m, unsigned i, struct onnx_node_info *out)
{
	const struct onnx_node *n;

	if (!m || !out || i >= m->n_nodes)
		return -EINVAL;
	n = &m->nodes[i];
	out->name = n->pb && n->pb->name ? n->pb->name : "";
	out->op_type = n->pb && n->pb->op_type ? n->pb->op_type : onnx_op_name(n->op);
	out->folded = n->folded;
	out->fused_relu = n->fused_relu;
	return 0;
}
