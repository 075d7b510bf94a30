/* SPDX-License-Identifier: MIT */
/* describe.c - the declared type and shape of a graph input, as the model states it (for messages). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void onnx_model_input_describe(const struct onnx_model *m, unsigned i, char *buf, size_t len)
{
	const Onnx__GraphProto *g = m && m->pb ? m->pb->graph : NULL;
	const char *name = m ? onnx_model_input_name(m, i) : NULL;
	const Onnx__TypeProto__Tensor *tt = NULL;
	size_t o;

	if (!len)
		return;
	buf[0] = '\0';
	if (!g || !name)
		return;
	for (size_t k = 0; k < g->n_input && !tt; k++) {
		const Onnx__ValueInfoProto *v = g->input[k];

		if (v->name && !strcmp(v->name, name) && v->type &&
		    v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
			tt = v->type->tensor_type;
	}
	if (!tt) {
		snprintf(buf, len, "(type not declared)");
		return;
	}
	o = (size_t)snprintf(buf, len, "%s [", onnx_dtype_name(tt->elem_type));
	for (size_t d = 0; tt->shape && d < tt->shape->n_dim && o < len; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];

		if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? "," : "", (long long)dim->dim_value);
		else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", d ? "," : "", dim->dim_param);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s?", d ? "," : "");
	}
	if (o < len)
		snprintf(buf + o, len - o, "]");
}
