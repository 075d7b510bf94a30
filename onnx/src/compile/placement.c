/* SPDX-License-Identifier: MIT */
/*
 * placement.c - where each node runs and why (accel-run --info, Documentation/onnx.md's operator
 * table), and the declared types/shapes of the graph's inputs and outputs.
 */
#include <string.h>

#include "internal.h"

/* Why an operator without a node kernel on the device runs on the host (the operators of
 * onnx_accel_kernels, ops_accel.c and ops_accel_vec.c, are "device" with their own fallbacks). */
static const char *host_reason(enum onnx_op op)
{
	switch (op) {
	case OP_SIN: case OP_COS: case OP_TAN: case OP_ASIN: case OP_ACOS: case OP_ATAN: case OP_SINH:
	case OP_COSH: case OP_ASINH: case OP_ACOSH: case OP_ATANH:
		return "a transcendental function: the v1 SFU has ReLU and CLAMP only";
	case OP_MOD: case OP_BITSHIFT: case OP_SHRINK:
		return "element-wise arithmetic: ISA v1 has no element-wise unit";
	case OP_CUMSUM: case OP_TOPK: case OP_DET: case OP_EINSUM:
		return "a scan or reduction along an axis: ISA v1 has no reduction unit";
	case OP_NMS: case OP_UNIQUE:
		return "data-dependent control (sorting, selection): no device lowering";
	case OP_GRIDSAMPLE: case OP_ROIALIGN:
		return "interpolation: ISA v1 has no gather/interpolation unit";
	case OP_LRN: case OP_MVN:
		return "needs division, sqrt or pow: the v1 SFU has ReLU and CLAMP only";
	case OP_CELU: case OP_ISNAN: case OP_ISINF:
		return "element-wise arithmetic: ISA v1 has no element-wise unit";
	case OP_CASTLIKE:
		return "type conversion: ONNX defines it in float, outside the SFU's fixed-point requantiser";
	case OP_GATHERND: case OP_COMPRESS: case OP_NONZERO: case OP_REVERSESEQUENCE:
		return "data-dependent indexing: ISA v1 has no gather/scatter unit";
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW:
		return "a generator (cosines of its size): no input to compute on";
	case OP_GATHERELEMENTS: case OP_SCATTERELEMENTS: case OP_SCATTER: case OP_SCATTERND: case OP_ONEHOT:
	case OP_MAXUNPOOL:
		return "data-dependent indexing: ISA v1 has no gather/scatter unit";
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_AND: case OP_OR: case OP_XOR: case OP_NOT: case OP_WHERE:
		return "element-wise arithmetic: ISA v1 has no element-wise unit";
	case OP_CAST:
		return "type conversion: ONNX defines it in float, outside the SFU's fixed-point requantiser";
	case OP_MATMULNBITS:
		return "a weight-only quantised MatMul the loader did not dequantise (a bias, g_idx or weights that are "
		       "not constants): host kernel";
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
	o->op = n->op_name ? n->op_name : n->pb->op_type;
	o->ran_on_device = n->ran ? n->ran_on_accel : -1;
	if (n->op == OP_CONSTANT) {
		o->place = ONNX_PLACE_FOLDED;
		o->reason = "a constant, read at load time";
	} else if (n->const_folded) {
		o->place = ONNX_PLACE_FOLDED;
		o->reason = "evaluated at load time (constant inputs or a static shape)";
	} else if (n->folded) {
		o->place = ONNX_PLACE_FOLDED;
		o->reason = n->fused_into		  ? n->fused_into :
			    n->op == OP_BATCHNORM ? "folded into the Conv before it" :
			    n->op == OP_PAD	  ? "folded into the padding of the Conv/AveragePool after it" :
						    "fused into the Conv/Gemm before it (SFU epilogue)";
	} else if (n->op == OP_REDUCEMEAN) {
		o->place = ONNX_PLACE_DEVICE;
		o->reason = "over H and W: global average pooling on the device; another run of axes: the vector units' "
			    "row mean; other axis sets: host";
	} else if (onnx_accel_kernels[n->op]) {
		o->place = ONNX_PLACE_DEVICE;
		o->reason = "lowered onto libaccel (unsupported attributes or types fall back to the host)";
	} else {
		o->place = ONNX_PLACE_HOST;
		o->reason = host_reason(n->op);
	}
	return 0;
}

static int fused_into(const struct onnx_model *m, unsigned i, unsigned depth)
{
	const struct onnx_node *n = &m->nodes[i];

	if (!n->folded || n->const_folded || n->op == OP_CONSTANT)
		return -1;
	/* BatchNormalization, Relu, Clip and the end of a fused pattern: the node that now writes its output */
	for (unsigned j = 0; j < m->n_nodes; j++) {
		const struct onnx_node *o = &m->nodes[j];

		if (o->folded || j == i)
			continue;
		for (unsigned k = 0; k < o->n_out; k++)
			for (unsigned q = 0; q < n->n_out; q++)
				if (o->out[k] >= 0 && o->out[k] == n->out[q])
					return (int)j;
	}
	/* a Pad folded into the padding of the Conv/AveragePool after it: the one that now reads its input */
	if (n->op == OP_PAD && n->n_in && n->in[0] >= 0)
		for (unsigned j = 0; j < m->n_nodes; j++) {
			const struct onnx_node *o = &m->nodes[j];

			if (!o->folded && (o->op == OP_CONV || o->op == OP_AVGPOOL) && o->n_in && o->in[0] == n->in[0])
				return (int)j;
		}
	/* folded into a node that was itself folded on (BatchNormalization, then its Relu): follow the reader */
	for (unsigned j = 0; j < m->n_nodes && depth < m->n_nodes; j++) {
		const struct onnx_node *o = &m->nodes[j];

		if (o->folded && !o->const_folded && j != i && o->n_in && o->in[0] >= 0 && n->n_out &&
		    o->in[0] == n->out[0])
			return fused_into(m, j, depth + 1);
	}
	return -1;
}

int onnx_model_node_fused_into(const struct onnx_model *m, unsigned i)
{
	if (i >= m->n_nodes)
		return -EINVAL;
	return fused_into(m, i, 0);
}

static int value_desc(const struct onnx_model *m, const char *name, Onnx__ValueInfoProto *const *vis, size_t nvi,
		      struct onnx_value_desc *o)
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
	(void)m;
	return 0;
}

int onnx_model_input_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *o)
{
	if (i >= m->n_inputs)
		return -EINVAL;
	return value_desc(m, m->vals[m->inputs[i]].name, m->pb->graph->input, m->pb->graph->n_input, o);
}

int onnx_model_output_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *o)
{
	if (i >= m->n_outputs)
		return -EINVAL;
	return value_desc(m, m->vals[m->outputs[i]].name, m->pb->graph->output, m->pb->graph->n_output, o);
}
