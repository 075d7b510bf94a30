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

#include "geom.h"

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
			int v = vi->name ? onnx_value_find(m, vi->name) : -1, ret;

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
	case OP_DEQUANTIZELINEAR: case OP_SIN: case OP_COS: case OP_TAN: case OP_ASIN: case OP_ACOS: case OP_ATAN:
	case OP_SINH: case OP_COSH: case OP_ASINH: case OP_ACOSH: case OP_ATANH: case OP_SHRINK:
	case OP_THRESHOLDEDRELU: case OP_TRILU: case OP_CUMSUM: case OP_HARDMAX:
		return true;
	default:
		return false;
	}
}

/* A folded Shape relied on a shape derived from several declarations: check all of them at run time. */
static void mark_all_declared(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_vals; i++)
		if (m->vals[i].shape_known && m->vals[i].shape_origin == (int)i)
			m->vals[i].shape_used = true;
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
	else if (src->shape_origin == -2)
		mark_all_declared(m);
	return 0;
}

/* Inputs whose values (not only shapes) decide the output shape: they must be constants. */
static bool value_sensitive(enum onnx_op op, unsigned k)
{
	switch (op) {
	case OP_RESHAPE: case OP_EXPAND: case OP_TILE: case OP_SLICE: case OP_RESIZE: case OP_UPSAMPLE:
		return k >= 1;
	case OP_PAD:
		return k == 1 || k == 3;
	case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_SPLIT: case OP_REDUCEMEAN: case OP_REDUCESUM: case OP_REDUCEMAX:
	case OP_REDUCEMIN: case OP_REDUCEPROD: case OP_REDUCESUMSQUARE: case OP_REDUCEL1: case OP_REDUCEL2:
	case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
		return k == 1;
	case OP_DROPOUT:
		return k == 2;
	case OP_ONEHOT:
		return k == 1;
	case OP_CONSTANTOFSHAPE: case OP_RANGE:
		return true;
	default:
		return false;
	}
}

/* Output shape of the compute operators from their geometry alone (no data touched). */
static int geom_shape(struct onnx_model *m, struct onnx_node *n, struct onnx_tensor *in, unsigned *nd, int64_t *dims)
{
	struct onnx_ctx c = { .m = m, .n = n };

	switch (n->op) {
	case OP_CONV: {
		struct conv_geom g;

		if (n->n_in < 2 || conv_geom(&c, &in[0], &in[1], &g))
			return -EINVAL;
		conv_out_dims(&g, dims, nd);
		return 0;
	}
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GLOBALAVGPOOL: {
		struct pool_geom g;

		if (n->n_out != 1 || pool_geom(&c, &in[0], n->op == OP_GLOBALAVGPOOL, &g))
			return -EINVAL;
		pool_out_dims(&g, dims, nd);
		return 0;
	}
	case OP_MATMUL: {
		struct matmul_geom g;

		if (n->n_in < 2 || matmul_geom(&c, &in[0], &in[1], &g))
			return -EINVAL;
		*nd = g.out_ndim;
		memcpy(dims, g.out_dims, sizeof(g.out_dims));
		return 0;
	}
	case OP_GEMM: {
		bool ta = attr_int(n->pb, "transA", 0), tb = attr_int(n->pb, "transB", 0);

		if (n->n_in < 2 || in[0].ndim != 2 || in[1].ndim != 2)
			return -EINVAL;
		*nd = 2;
		dims[0] = ta ? in[0].dims[1] : in[0].dims[0];
		dims[1] = tb ? in[1].dims[0] : in[1].dims[1];
		return 0;
	}
	default:
		return 1;	/* not a geometry operator */
	}
}

#define DRY_RUN_MAX_ELEMS ((size_t)1 << 22)	/* bounds the load-time cost of shape inference */

/*
 * Static shape of a node's outputs when every input's shape is known and the inputs whose values decide
 * the shape are constants: geometry for Conv/pooling/MatMul/Gemm, else the host kernel run once on
 * zero-filled inputs of those shapes (only data movement, element-wise, reductions and normalisations
 * reach here, linear in the tensor size; bounded).  Any failure just leaves the shape unknown.
 */
static void infer_shapes(struct onnx_model *m, struct onnx_node *n)
{
	struct onnx_tensor in[16];
	int origin = -1;
	unsigned nd = 0;
	int64_t dims[ONNX_MAX_DIMS];
	int ret;

	if (n->n_in > 16 || n->op == OP_CONSTANT || n->op == OP_QLINEARCONV || n->op == OP_QLINEARMATMUL ||
	    n->op == OP_CONVINTEGER || n->op == OP_MATMULINTEGER || n->op == OP_CONVTRANSPOSE)
		return;
	for (unsigned k = 0; k < n->n_out; k++)
		if (n->out[k] >= 0 && m->vals[n->out[k]].shape_known)
			return;	/* declared */
	for (unsigned k = 0; k < n->n_in; k++) {
		const struct onnx_value *v = n->in[k] >= 0 ? &m->vals[n->in[k]] : NULL;

		memset(&in[k], 0, sizeof(in[k]));
		if (!v)
			continue;
		if (!v->shape_known || (value_sensitive(n->op, k) && !v->is_const) ||
		    tensor_count(v->sndim, v->sdims) > DRY_RUN_MAX_ELEMS)
			return;
		in[k].ndim = v->sndim;
		memcpy(in[k].dims, v->sdims, sizeof(in[k].dims));
		in[k].dtype = v->is_const ? v->t.dtype : ONNX_FLOAT;
		if (!v->is_const && v->shape_origin != -1)
			origin = origin == -1 || origin == v->shape_origin ? v->shape_origin : -2;
	}
	ret = geom_shape(m, n, in, &nd, dims);
	if (ret < 0)
		return;
	if (ret == 0) {
		struct onnx_value *o = &m->vals[n->out[0]];

		o->shape_known = true;
		o->sndim = nd;
		memcpy(o->sdims, dims, sizeof(o->sdims));
		o->shape_origin = origin;
		return;
	}
	{	/* dry run of the host kernel */
		struct onnx_ctx c = { .m = m, .n = n };
		onnx_kernel k = onnx_host_kernel(n->op);
		bool filled[16] = { false };
		char saved[sizeof(m->err)];
		bool ok = true;

		if (!k)
			return;
		memcpy(saved, m->err, sizeof(saved));
		for (unsigned i = 0; i < n->n_in && ok; i++) {
			struct onnx_value *v = n->in[i] >= 0 ? &m->vals[n->in[i]] : NULL;
			enum onnx_dtype dt = ONNX_FLOAT;

			if (!v || v->is_const || v->t.data)
				continue;
			/* the element type matters to some kernels: infer it from a sibling or the operator */
			if (n->op == OP_WHERE && i == 0)
				dt = ONNX_BOOL;
			else if ((n->op == OP_GATHER && i == 1) || n->op == OP_SHAPE)
				dt = ONNX_INT64;
			else if ((n->op == OP_DEQUANTIZELINEAR && i == 0) || n->op == OP_NOT || n->op == OP_AND ||
				 n->op == OP_OR || n->op == OP_XOR)
				dt = n->op == OP_DEQUANTIZELINEAR ? ONNX_UINT8 : ONNX_BOOL;
			else
				for (unsigned j = 0; j < n->n_in; j++)
					if (j != i && n->in[j] >= 0 && m->vals[n->in[j]].is_const &&
					    !value_sensitive(n->op, j) && !(n->op == OP_WHERE && j == 0))
						dt = m->vals[n->in[j]].t.dtype;
			ok = !onnx_tensor_alloc(&v->t, dt, v->sndim, v->sdims);
			filled[i] = ok;
		}
		if (ok && !onnx_node_check_io(&c) && !onnx_dtype_compute_f32(&c, k))
			for (unsigned i = 0; i < n->n_out; i++) {
				struct onnx_value *o = n->out[i] >= 0 ? &m->vals[n->out[i]] : NULL;

				if (!o || !o->t.data)
					continue;
				o->shape_known = true;
				o->sndim = o->t.ndim;
				memcpy(o->sdims, o->t.dims, sizeof(o->sdims));
				o->shape_origin = origin;
			}
		for (unsigned i = 0; i < n->n_out; i++)
			if (n->out[i] >= 0)
				onnx_tensor_release(&m->vals[n->out[i]].t);
		for (unsigned i = 0; i < n->n_in; i++)
			if (filled[i])
				onnx_tensor_release(&m->vals[n->in[i]].t);
		memcpy(m->err, saved, sizeof(saved));
	}
}

int onnx_const_fold(struct onnx_model *m)
{
	bool want_shapes = false;	/* inferring shapes only pays when a Shape reads them */

	for (unsigned i = 0; i < m->n_nodes; i++)
		want_shapes |= m->nodes[i].op == OP_SHAPE;
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *n = &m->nodes[i];
		bool all_const = n->n_in > 0;
		int ret;

		if (n->folded)
			continue;
		for (unsigned k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && !m->vals[n->in[k]].is_const)
				all_const = false;
		/* DequantizeLinear stays a node (the QDQ matcher reads DQ(int8 constant)); a QuantizeLinear of a
		 * constant folds to that int8 constant: PyTorch's fake-quant export writes its weights as
		 * float initializers behind Q -> DQ (issue #30) */
		if (n->op == OP_DEQUANTIZELINEAR)
			all_const = false;
		if (n->op == OP_SHAPE && n->in[0] >= 0 && m->vals[n->in[0]].shape_known) {
			ret = fold_shape(m, n);
		} else if (all_const) {
			struct onnx_ctx c = { .m = m, .n = n };
			onnx_kernel k = onnx_host_kernel(n->op);

			ret = onnx_node_check_io(&c);
			if (!ret)
				ret = k ? onnx_dtype_compute_f32(&c, k) : -EOPNOTSUPP;
			if (ret && !k)
				onnx_seterr(m, ret, "no kernel for %s", onnx_op_name(n->op));
		} else {
			if (shape_preserving(n->op) && n->n_in && n->in[0] >= 0 && n->n_out && n->out[0] >= 0 &&
			    m->vals[n->in[0]].shape_known &&
			    !m->vals[n->out[0]].shape_known) {
				struct onnx_value *src = &m->vals[n->in[0]], *dst = &m->vals[n->out[0]];

				dst->shape_known = true;
				dst->sndim = src->sndim;
				memcpy(dst->sdims, src->sdims, sizeof(dst->sdims));
				dst->shape_origin = src->shape_origin;
			} else if (want_shapes) {
				infer_shapes(m, n);
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
int onnx_check_static_shape(const struct onnx_ctx *c, int vi, const struct onnx_tensor *t)
{
	const struct onnx_value *v = &c->m->vals[vi];
	char a[128], b[128];
	struct onnx_tensor s = { .ndim = v->sndim };

	if (!v->shape_used || !t->data)
		return 0;
	if (t->ndim == v->sndim && !memcmp(t->dims, v->sdims, v->sndim * sizeof(int64_t)))
		return 0;
	s.dtype = t->dtype;
	memcpy(s.dims, v->sdims, sizeof(s.dims));
	onnx_tensor_describe(t, a, sizeof(a));
	onnx_tensor_describe(&s, b, sizeof(b));
	return ctx_seterr(c, -EINVAL, "value '%s' is %s, but the model declares %s and a Shape was folded with it",
			  v->name, a, b);
}
