/* SPDX-License-Identifier: MIT */
/*
 * constfold.c - load-time evaluation of what does not depend on the input data (issue 15):
 *   - static shapes: a value's shape is known when the model declares it with fixed dimensions (graph
 *     inputs, value_info, graph outputs) or when a shape-preserving operator computes it from a known one;
 *   - a Shape node of a value with a known shape becomes a constant;
 *   - a node whose inputs are all constants is run once, here, with its host kernel (the same code as the
 *     CPU reference), and its outputs become constants.
 * So Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of static-shape exports fold away.
 * A declared shape that a folded Shape relied on is checked when the value is computed at run time
 * (exec.c): a model whose declarations lie gets an error, never a silently wrong shape.
 * QuantizeLinear/DequantizeLinear stay in the graph (the QDQ pattern is what int8 lowering looks for).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int find_value(const struct onnx_model *m, const char *name)
{
	for (unsigned i = 0; i < m->n_vals; i++)
		if (!strcmp(m->vals[i].name, name))
			return (int)i;
	return -1;
}

/* The fixed shape of a ValueInfoProto; 0 = fixed (written to v), 1 = not fixed, <0 = malformed. */
static int declared_shape(struct onnx_model *m, const Onnx__ValueInfoProto *vi, struct onnx_value *v)
{
	const Onnx__TensorShapeProto *s;

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
	    !vi->type->tensor_type->shape)
		return 1;
	s = vi->type->tensor_type->shape;
	if (s->n_dim > ONNX_MAX_DIMS)
		return 1;
	for (size_t d = 0; d < s->n_dim; d++) {
		if (s->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			return 1;
		if (s->dim[d]->dim_value < 0)
			return onnx_seterr(m, -EINVAL, "value '%s': declared dimension %zu is %lld", vi->name, d,
					   (long long)s->dim[d]->dim_value);
	}
	v->sndim = (unsigned)s->n_dim;
	for (size_t d = 0; d < s->n_dim; d++)
		v->sdims[d] = s->dim[d]->dim_value;
	v->shape_known = true;
	v->shape_origin = (int)(v - m->vals);
	return 0;
}

int onnx_static_shapes(struct onnx_model *m)
{
	const Onnx__GraphProto *g = m->pb->graph;
	const Onnx__ValueInfoProto *const *lists[3] = { (const Onnx__ValueInfoProto *const *)g->input,
							 (const Onnx__ValueInfoProto *const *)g->value_info,
							 (const Onnx__ValueInfoProto *const *)g->output };
	size_t counts[3] = { g->n_input, g->n_value_info, g->n_output };

	for (unsigned i = 0; i < m->n_vals; i++) {
		struct onnx_value *v = &m->vals[i];

		if (v->is_const) {	/* initializers and Constant outputs */
			v->shape_known = true;
			v->sndim = v->t.ndim;
			memcpy(v->sdims, v->t.dims, sizeof(v->sdims));
			v->shape_origin = -1;
		}
	}
	for (int l = 0; l < 3; l++)
		for (size_t i = 0; i < counts[l]; i++) {
			const Onnx__ValueInfoProto *vi = lists[l][i];
			int v = vi->name ? find_value(m, vi->name) : -1, ret;

			if (v < 0 || m->vals[v].shape_known)
				continue;
			ret = declared_shape(m, vi, &m->vals[v]);
			if (ret < 0)
				return ret;
		}
	return 0;
}

/* Operators whose first output has the first input's shape. */
static bool shape_preserving(enum onnx_op op)
{
	switch (op) {
	case OP_RELU: case OP_CLIP: case OP_SIGMOID: case OP_HARDSIGMOID: case OP_HARDSWISH: case OP_TANH:
	case OP_EXP: case OP_LOG: case OP_ERF: case OP_GELU: case OP_LEAKYRELU: case OP_PRELU: case OP_ELU:
	case OP_SELU: case OP_SOFTPLUS: case OP_SOFTSIGN: case OP_SQRT: case OP_RECIPROCAL: case OP_NEG:
	case OP_ABS: case OP_FLOOR: case OP_CEIL: case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_LAYERNORM:
	case OP_BATCHNORM: case OP_DROPOUT: case OP_IDENTITY: case OP_CAST: case OP_NOT: case OP_QUANTIZELINEAR:
	case OP_DEQUANTIZELINEAR:
		return true;
	default:
		return false;
	}
}

static int fold_shape(struct onnx_model *m, struct onnx_node *n)
{
	struct onnx_ctx c = { .m = m, .n = n };
	struct onnx_value *src = &m->vals[n->in[0]], *dst = &m->vals[n->out[0]];
	int64_t s, e, len;

	shape_range(&c, src->sndim, &s, &e);
	len = e - s;
	if (onnx_tensor_alloc(&dst->t, ONNX_INT64, 1, &len))
		return onnx_seterr(m, -ENOMEM, "out of memory");
	memcpy(dst->t.data, src->sdims + s, (size_t)len * sizeof(int64_t));
	if (src->shape_origin >= 0)
		m->vals[src->shape_origin].shape_used = true;
	return 0;
}

int onnx_const_fold(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *n = &m->nodes[i];
		bool all_const = n->n_in > 0;
		int ret;

		if (n->folded)
			continue;
		for (unsigned k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && !m->vals[n->in[k]].is_const)
				all_const = false;
		if (n->op == OP_QUANTIZELINEAR || n->op == OP_DEQUANTIZELINEAR)
			all_const = false;
		if (n->op == OP_SHAPE && n->in[0] >= 0 && m->vals[n->in[0]].shape_known) {
			ret = fold_shape(m, n);
		} else if (all_const) {
			struct onnx_ctx c = { .m = m, .n = n };
			onnx_kernel k = onnx_host_kernel(n->op);

			ret = k ? k(&c) : -EOPNOTSUPP;
			if (ret && !k)
				onnx_seterr(m, ret, "no kernel for %s", onnx_op_name(n->op));
		} else {
			if (shape_preserving(n->op) && n->in[0] >= 0 && m->vals[n->in[0]].shape_known &&
			    !m->vals[n->out[0]].shape_known) {
				struct onnx_value *src = &m->vals[n->in[0]], *dst = &m->vals[n->out[0]];

				dst->shape_known = true;
				dst->sndim = src->sndim;
				memcpy(dst->sdims, src->sdims, sizeof(dst->sdims));
				dst->shape_origin = src->shape_origin;
			}
			continue;
		}
		if (ret)
			return ret;	/* the kernel's message names the node */
		for (unsigned k = 0; k < n->n_out; k++) {
			struct onnx_value *v;

			if (n->out[k] < 0)
				continue;
			v = &m->vals[n->out[k]];
			if (!v->t.data)	/* an optional output the kernel did not produce */
				continue;
			v->is_const = true;
			v->shape_known = true;
			v->sndim = v->t.ndim;
			memcpy(v->sdims, v->t.dims, sizeof(v->sdims));
			v->shape_origin = -1;
		}
		n->folded = true;
		n->const_folded = true;
		m->n_const_folded++;
	}
	return 0;
}

/* A computed value whose declared shape a folded Shape used must have that shape. */
int onnx_check_static_shape(struct onnx_model *m, const struct onnx_value *v)
{
	char a[128], b[128];
	struct onnx_tensor s = { .ndim = v->sndim };

	if (!v->shape_used || !v->t.data)
		return 0;
	if (v->t.ndim == v->sndim && !memcmp(v->t.dims, v->sdims, v->sndim * sizeof(int64_t)))
		return 0;
	s.dtype = v->t.dtype;
	memcpy(s.dims, v->sdims, sizeof(s.dims));
	onnx_tensor_describe(&v->t, a, sizeof(a));
	onnx_tensor_describe(&s, b, sizeof(b));
	return onnx_seterr(m, -EINVAL, "value '%s' is %s, but the model declares %s and a Shape was folded with it",
			   v->name, a, b);
}
