/* SPDX-License-Identifier: MIT */
/* builder.c - in-memory ONNX models for the tests (protobuf-c structs, packed with the generated code). */
#include <stdlib.h>
#include <string.h>

#include "builder.h"

struct mb {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset;
	Onnx__OperatorSetIdProto *opsets[1];
	Onnx__NodeProto *nodes[64];
	Onnx__TensorProto *inits[32];
	Onnx__ValueInfoProto *ins[8], *outs[8], *vis[8];
	void *mem[4096];
	unsigned n_mem;
	uint8_t *packed;
};

static void *keep(struct mb *b, void *p)
{
	if (b->n_mem < sizeof(b->mem) / sizeof(b->mem[0]))
		b->mem[b->n_mem++] = p;
	return p;
}

static void *zalloc(struct mb *b, size_t n)
{
	return keep(b, calloc(1, n ? n : 1));
}

static char *dup(struct mb *b, const char *s)
{
	return keep(b, strdup(s));
}

struct mb *mb_new(int64_t opset)
{
	struct mb *b = calloc(1, sizeof(*b));

	onnx__model_proto__init(&b->model);
	onnx__graph_proto__init(&b->graph);
	onnx__operator_set_id_proto__init(&b->opset);
	b->opset.domain = (char *)"";
	b->opset.has_version = 1;
	b->opset.version = opset;
	b->opsets[0] = &b->opset;
	b->model.has_ir_version = 1;
	b->model.ir_version = 8;
	b->model.n_opset_import = 1;
	b->model.opset_import = b->opsets;
	b->model.graph = &b->graph;
	b->graph.name = (char *)"test";
	b->graph.node = b->nodes;
	b->graph.initializer = b->inits;
	b->graph.input = b->ins;
	b->graph.output = b->outs;
	b->graph.value_info = b->vis;
	return b;
}

void mb_free(struct mb *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->n_mem; i++)
		free(b->mem[i]);
	free(b->packed);
	free(b);
}

static char **split(struct mb *b, const char *list, size_t *n)
{
	char **v = zalloc(b, 16 * sizeof(char *));
	char *s = dup(b, list), *tok;

	*n = 0;
	if (!*list)
		return v;
	/* keep empty fields ("x,,y"): strsep */
	while ((tok = strsep(&s, ",")) && *n < 16)
		v[(*n)++] = tok;
	return v;
}

Onnx__NodeProto *mb_node(struct mb *b, const char *op, const char *inputs, const char *outputs)
{
	Onnx__NodeProto *n = zalloc(b, sizeof(*n));

	onnx__node_proto__init(n);
	n->op_type = dup(b, op);
	n->name = dup(b, op);
	n->input = split(b, inputs, &n->n_input);
	n->output = split(b, outputs, &n->n_output);
	n->attribute = zalloc(b, 16 * sizeof(*n->attribute));
	b->nodes[b->graph.n_node++] = n;
	return n;
}

static Onnx__AttributeProto *attr(struct mb *b, Onnx__NodeProto *n, const char *name,
				  Onnx__AttributeProto__AttributeType t)
{
	Onnx__AttributeProto *a = zalloc(b, sizeof(*a));

	onnx__attribute_proto__init(a);
	a->name = dup(b, name);
	a->has_type = 1;
	a->type = t;
	n->attribute[n->n_attribute++] = a;
	return a;
}

void mb_attr_i(struct mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);

	a->has_i = 1;
	a->i = v;
}

void mb_attr_f(struct mb *b, Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);

	a->has_f = 1;
	a->f = v;
}

void mb_attr_s(struct mb *b, Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);

	a->has_s = 1;
	a->s.data = (uint8_t *)dup(b, v);
	a->s.len = strlen(v);
}

void mb_attr_ints(struct mb *b, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t cnt)
{
	Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);

	a->ints = zalloc(b, cnt * sizeof(int64_t));
	memcpy(a->ints, v, cnt * sizeof(int64_t));
	a->n_ints = cnt;
}

void mb_init(struct mb *b, const char *name, enum onnx_dtype dt, unsigned ndim, const int64_t *dims,
	     const void *data)
{
	Onnx__TensorProto *t = zalloc(b, sizeof(*t));
	size_t n = 1;

	onnx__tensor_proto__init(t);
	t->name = dup(b, name);
	t->has_data_type = 1;
	t->data_type = (int32_t)dt;
	t->dims = zalloc(b, (ndim + 1) * sizeof(int64_t));
	for (unsigned i = 0; i < ndim; i++) {
		t->dims[i] = dims[i];
		n *= (size_t)dims[i];
	}
	t->n_dims = ndim;
	t->has_raw_data = 1;
	t->raw_data.len = n * onnx_dtype_size(dt);
	t->raw_data.data = zalloc(b, t->raw_data.len);
	if (t->raw_data.len)	/* an empty initializer may come with no data */
		memcpy(t->raw_data.data, data, t->raw_data.len);
	b->inits[b->graph.n_initializer++] = t;
}

static Onnx__ValueInfoProto *vi(struct mb *b, const char *name)
{
	Onnx__ValueInfoProto *v = zalloc(b, sizeof(*v));

	onnx__value_info_proto__init(v);
	v->name = dup(b, name);
	return v;
}

void mb_input(struct mb *b, const char *name)
{
	b->ins[b->graph.n_input++] = vi(b, name);
}

static Onnx__ValueInfoProto *typed_vi(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims)
{
	Onnx__ValueInfoProto *v = vi(b, name);
	Onnx__TypeProto *t = zalloc(b, sizeof(*t));
	Onnx__TypeProto__Tensor *tt = zalloc(b, sizeof(*tt));
	Onnx__TensorShapeProto *sh = zalloc(b, sizeof(*sh));

	onnx__type_proto__init(t);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	sh->dim = zalloc(b, (ndim + 1) * sizeof(*sh->dim));
	for (unsigned i = 0; i < ndim; i++) {
		Onnx__TensorShapeProto__Dimension *d = zalloc(b, sizeof(*d));

		onnx__tensor_shape_proto__dimension__init(d);
		if (dims[i] == INT64_MIN) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = dup(b, "N");
		} else {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dims[i];
		}
		sh->dim[i] = d;
	}
	sh->n_dim = ndim;
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	tt->shape = sh;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->type = t;
	return v;
}

void mb_input_typed(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims)
{
	b->ins[b->graph.n_input++] = typed_vi(b, name, dtype, ndim, dims);
}

void mb_value_info(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims)
{
	b->vis[b->graph.n_value_info++] = typed_vi(b, name, dtype, ndim, dims);
}

void mb_output_typed(struct mb *b, const char *name, int dtype, unsigned ndim, const int64_t *dims)
{
	b->outs[b->graph.n_output++] = typed_vi(b, name, dtype, ndim, dims);
}

void mb_output(struct mb *b, const char *name)
{
	b->outs[b->graph.n_output++] = vi(b, name);
}

const uint8_t *mb_pack(struct mb *b, size_t *len)
{
	*len = onnx__model_proto__get_packed_size(&b->model);
	free(b->packed);
	b->packed = malloc(*len ? *len : 1);
	onnx__model_proto__pack(&b->model, b->packed);
	return b->packed;
}

float mb_frand(uint32_t *rng)
{
	*rng = *rng * 1664525u + 1013904223u;
	return (float)((*rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

void mb_init_rand(struct mb *b, const char *name, unsigned ndim, const int64_t *dims, uint32_t *rng)
{
	size_t n = 1;
	float *v;

	for (unsigned i = 0; i < ndim; i++)
		n *= (size_t)dims[i];
	v = malloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = mb_frand(rng);
	mb_init(b, name, ONNX_FLOAT, ndim, dims, v);
	free(v);
}
