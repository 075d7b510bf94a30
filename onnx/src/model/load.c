/* SPDX-License-Identifier: MIT */
/*
 * load.c - ONNX ModelProto (protobuf-c, generated from Debian's onnx.proto) -> graph of values and
 * nodes.  Every name a node reads must exist before it (ONNX requires topological order), every
 * operator must be in the supported set (Documentation/onnx.md); anything else is a clear error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


static const char *const op_names[OP_COUNT] = {
	[OP_CONV] = "Conv",
	[OP_GEMM] = "Gemm",
	[OP_MATMUL] = "MatMul",
	[OP_RELU] = "Relu",
	[OP_MAXPOOL] = "MaxPool",
	[OP_AVGPOOL] = "AveragePool",
	[OP_GLOBALAVGPOOL] = "GlobalAveragePool",
	[OP_ADD] = "Add",
	[OP_FLATTEN] = "Flatten",
	[OP_RESHAPE] = "Reshape",
	[OP_BATCHNORM] = "BatchNormalization",
	[OP_SOFTMAX] = "Softmax",
	[OP_QLINEARCONV] = "QLinearConv",
	[OP_QLINEARMATMUL] = "QLinearMatMul",
	[OP_CONVINTEGER] = "ConvInteger",
	[OP_MATMULINTEGER] = "MatMulInteger",
	[OP_CONSTANT] = "Constant",
	[OP_IDENTITY] = "Identity",
	[OP_CLIP] = "Clip",
	[OP_CONCAT] = "Concat",
	[OP_SPLIT] = "Split",
	[OP_SLICE] = "Slice",
	[OP_GATHER] = "Gather",
	[OP_SHAPE] = "Shape",
	[OP_UNSQUEEZE] = "Unsqueeze",
	[OP_SQUEEZE] = "Squeeze",
	[OP_EXPAND] = "Expand",
	[OP_TRANSPOSE] = "Transpose",
	[OP_PAD] = "Pad",
	[OP_SIGMOID] = "Sigmoid",
	[OP_HARDSIGMOID] = "HardSigmoid",
	[OP_HARDSWISH] = "HardSwish",
	[OP_TANH] = "Tanh",
	[OP_EXP] = "Exp",
	[OP_LOG] = "Log",
	[OP_ERF] = "Erf",
	[OP_GELU] = "Gelu",
	[OP_LEAKYRELU] = "LeakyRelu",
	[OP_PRELU] = "PRelu",
	[OP_ELU] = "Elu",
	[OP_SELU] = "Selu",
	[OP_SOFTPLUS] = "Softplus",
	[OP_SOFTSIGN] = "Softsign",
	[OP_MUL] = "Mul",
	[OP_DIV] = "Div",
	[OP_SUB] = "Sub",
	[OP_POW] = "Pow",
	[OP_SQRT] = "Sqrt",
	[OP_RECIPROCAL] = "Reciprocal",
	[OP_NEG] = "Neg",
	[OP_ABS] = "Abs",
	[OP_FLOOR] = "Floor",
	[OP_CEIL] = "Ceil",
	[OP_MIN] = "Min",
	[OP_MAX] = "Max",
	[OP_SUM] = "Sum",
	[OP_MEAN] = "Mean",
	[OP_REDUCEMEAN] = "ReduceMean",
	[OP_REDUCESUM] = "ReduceSum",
	[OP_REDUCEMAX] = "ReduceMax",
	[OP_REDUCEMIN] = "ReduceMin",
	[OP_REDUCEPROD] = "ReduceProd",
	[OP_REDUCESUMSQUARE] = "ReduceSumSquare",
	[OP_REDUCEL1] = "ReduceL1",
	[OP_REDUCEL2] = "ReduceL2",
	[OP_REDUCELOGSUM] = "ReduceLogSum",
	[OP_REDUCELOGSUMEXP] = "ReduceLogSumExp",
	[OP_ARGMAX] = "ArgMax",
	[OP_ARGMIN] = "ArgMin",
	[OP_LOGSOFTMAX] = "LogSoftmax",
	[OP_LAYERNORM] = "LayerNormalization",
	[OP_RESIZE] = "Resize",
	[OP_UPSAMPLE] = "Upsample",
	[OP_CONVTRANSPOSE] = "ConvTranspose",
	[OP_CAST] = "Cast",
	[OP_WHERE] = "Where",
	[OP_EQUAL] = "Equal",
	[OP_GREATER] = "Greater",
	[OP_LESS] = "Less",
	[OP_NOT] = "Not",
	[OP_DROPOUT] = "Dropout",
	[OP_QUANTIZELINEAR] = "QuantizeLinear",
	[OP_DEQUANTIZELINEAR] = "DequantizeLinear",
	[OP_CONSTANTOFSHAPE] = "ConstantOfShape",
	[OP_RANGE] = "Range",
	[OP_TILE] = "Tile",
	[OP_GREATEREQUAL] = "GreaterOrEqual",
	[OP_LESSEQUAL] = "LessOrEqual",
	[OP_AND] = "And",
	[OP_OR] = "Or",
	[OP_XOR] = "Xor",
	[OP_SIZE] = "Size",
	[OP_SIN] = "Sin",
	[OP_COS] = "Cos",
	[OP_TAN] = "Tan",
	[OP_ASIN] = "Asin",
	[OP_ACOS] = "Acos",
	[OP_ATAN] = "Atan",
	[OP_SINH] = "Sinh",
	[OP_COSH] = "Cosh",
	[OP_ASINH] = "Asinh",
	[OP_ACOSH] = "Acosh",
	[OP_ATANH] = "Atanh",
	[OP_SHRINK] = "Shrink",
	[OP_THRESHOLDEDRELU] = "ThresholdedRelu",
	[OP_MOD] = "Mod",
	[OP_BITSHIFT] = "BitShift",
	[OP_TRILU] = "Trilu",
	[OP_CUMSUM] = "CumSum",
	[OP_DEPTHTOSPACE] = "DepthToSpace",
	[OP_SPACETODEPTH] = "SpaceToDepth",
	[OP_GATHERELEMENTS] = "GatherElements",
	[OP_ONEHOT] = "OneHot",
	[OP_SCATTERELEMENTS] = "ScatterElements",
	[OP_SCATTER] = "Scatter",
	[OP_SCATTERND] = "ScatterND",
	[OP_EYELIKE] = "EyeLike",
	[OP_HARDMAX] = "Hardmax",
	[OP_CASTLIKE] = "CastLike",
	[OP_GATHERND] = "GatherND",
	[OP_COMPRESS] = "Compress",
	[OP_NONZERO] = "NonZero",
	[OP_ISNAN] = "IsNaN",
	[OP_ISINF] = "IsInf",
	[OP_REVERSESEQUENCE] = "ReverseSequence",
	[OP_ROUND] = "Round",
	[OP_SIGN] = "Sign",
	[OP_CELU] = "Celu",
	[OP_GLOBALMAXPOOL] = "GlobalMaxPool",
	[OP_NLLLOSS] = "NegativeLogLikelihoodLoss",
	[OP_SCELOSS] = "SoftmaxCrossEntropyLoss",
	[OP_TOPK] = "TopK",
	[OP_INSTANCENORM] = "InstanceNormalization",
	[OP_LRN] = "LRN",
	[OP_MVN] = "MeanVarianceNormalization",
	[OP_DYNQUANTIZELINEAR] = "DynamicQuantizeLinear",
	[OP_EINSUM] = "Einsum",
	[OP_HANNWINDOW] = "HannWindow",
	[OP_HAMMINGWINDOW] = "HammingWindow",
	[OP_BLACKMANWINDOW] = "BlackmanWindow",
	[OP_DET] = "Det",
	[OP_RNN] = "RNN",
	[OP_GRU] = "GRU",
	[OP_LSTM] = "LSTM",
	[OP_NMS] = "NonMaxSuppression",
	[OP_GRIDSAMPLE] = "GridSample",
	[OP_UNIQUE] = "Unique",
	[OP_MAXUNPOOL] = "MaxUnpool",
	[OP_ROIALIGN] = "RoiAlign",
	[OP_MATMULNBITS] = "MatMulNBits",
};

/* The one operator of another domain the loader takes (ONNX Runtime's contrib operators). */
static bool op_in_domain(int op, const char *domain)
{
	bool ms = domain && !strcmp(domain, "com.microsoft");

	return ms == (op == OP_MATMULNBITS);
}

const char *onnx_op_name(enum onnx_op op)
{
	return op < OP_COUNT && op_names[op] ? op_names[op] : "?";
}

int onnx_op_lookup(const char *name)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (op_names[i] && !strcmp(op_names[i], name))
			return i;
	return -1;
}

int onnx_seterr(struct onnx_model *m, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return err;
}

int ctx_seterr(const struct onnx_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err ? c->err : c->m->err, ONNX_ERR_LEN, fmt, ap);
	va_end(ap);
	return err;
}

const char *onnx_model_error(const struct onnx_model *m)
{
	return m ? m->err : "";
}

int onnx_value_add(struct onnx_model *m, const char *name)
{
	if (m->n_vals == m->cap_vals) {
		unsigned cap = m->cap_vals ? 2 * m->cap_vals : 64;
		struct onnx_value *v = realloc(m->vals, cap * sizeof(*v));

		if (!v)
			return onnx_seterr(m, -ENOMEM, "out of memory");
		m->vals = v;
		m->cap_vals = cap;
	}
	if (m->refs && onnx_graph_index_fit(m))
		return onnx_seterr(m, -ENOMEM, "out of memory");
	memset(&m->vals[m->n_vals], 0, sizeof(m->vals[0]));
	m->vals[m->n_vals].name = name;
	if (onnx_name_index_add(m, (int)m->n_vals))
		return onnx_seterr(m, -ENOMEM, "out of memory");
	return (int)m->n_vals++;
}

static const char *node_label(const Onnx__NodeProto *n)
{
	return n->name && n->name[0] ? n->name : (n->n_output ? n->output[0] : "?");
}

static int load_initializers(struct onnx_model *m, const Onnx__GraphProto *g)
{
	char msg[256];

	if (g->n_sparse_initializer)
		return onnx_seterr(m, -EOPNOTSUPP, "sparse initializers are not supported");
	for (size_t i = 0; i < g->n_initializer; i++) {
		const Onnx__TensorProto *p = g->initializer[i];
		int v, ret;

		if (!p->name || !p->name[0])
			return onnx_seterr(m, -EINVAL, "initializer %zu has no name", i);
		if (onnx_value_find(m, p->name) >= 0)
			return onnx_seterr(m, -EINVAL, "initializer '%s' defined twice", p->name);
		v = onnx_value_add(m, p->name);
		if (v < 0)
			return v;
		ret = tensor_from_proto(p, &m->vals[v].t, msg, sizeof(msg));
		if (ret)
			return onnx_seterr(m, ret, "initializer '%s': %s", p->name, msg);
		m->vals[v].is_const = true;
	}
	return 0;
}

static int load_constant(struct onnx_model *m, struct onnx_node *nd)
{
	const Onnx__AttributeProto *a = attr_find(nd->pb, "value");
	struct onnx_value *v = &m->vals[nd->out[0]];
	char msg[256];
	int ret;

	if (a && a->t) {
		ret = tensor_from_proto(a->t, &v->t, msg, sizeof(msg));
		if (ret)
			return onnx_seterr(m, ret, "Constant '%s': %s", node_label(nd->pb), msg);
	} else if ((a = attr_find(nd->pb, "value_float")) && a->has_f) {
		ret = onnx_tensor_alloc(&v->t, ONNX_FLOAT, 0, NULL);
		if (ret)
			return onnx_seterr(m, ret, "out of memory");
		*(float *)v->t.data = a->f;
	} else if ((a = attr_find(nd->pb, "value_int")) && a->has_i) {
		ret = onnx_tensor_alloc(&v->t, ONNX_INT64, 0, NULL);
		if (ret)
			return onnx_seterr(m, ret, "out of memory");
		*(int64_t *)v->t.data = a->i;
	} else if ((a = attr_find(nd->pb, "value_ints"))) {
		int64_t d = (int64_t)a->n_ints;

		ret = onnx_tensor_alloc(&v->t, ONNX_INT64, 1, &d);
		if (ret)
			return onnx_seterr(m, ret, "out of memory");
		memcpy(v->t.data, a->ints, a->n_ints * sizeof(int64_t));
	} else if ((a = attr_find(nd->pb, "value_floats"))) {
		int64_t d = (int64_t)a->n_floats;

		ret = onnx_tensor_alloc(&v->t, ONNX_FLOAT, 1, &d);
		if (ret)
			return onnx_seterr(m, ret, "out of memory");
		memcpy(v->t.data, a->floats, a->n_floats * sizeof(float));
	} else {
		return onnx_seterr(m, -EOPNOTSUPP, "Constant '%s': only value, value_float(s) and value_int(s) are supported",
				   node_label(nd->pb));
	}
	v->is_const = true;
	nd->folded = true;	/* nothing left to run */
	return 0;
}

static int load_nodes(struct onnx_model *m, const Onnx__GraphProto *g)
{
	m->nodes = calloc(g->n_node ? g->n_node : 1, sizeof(*m->nodes));
	if (!m->nodes)
		return onnx_seterr(m, -ENOMEM, "out of memory");
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *p = g->node[i];
		struct onnx_node *nd = &m->nodes[m->n_nodes];
		int op;

		if (!p->op_type)
			return onnx_seterr(m, -EINVAL, "node %zu has no op_type", i);
		op = onnx_op_lookup(p->op_type);
		if (p->domain && p->domain[0] && strcmp(p->domain, "ai.onnx") && (op < 0 || !op_in_domain(op, p->domain)))
			return onnx_seterr(m, -EOPNOTSUPP, "unsupported operator '%s' of domain '%s' (node '%s')",
					   p->op_type, p->domain, node_label(p));
		if (op < 0 || !op_in_domain(op, p->domain))
			return onnx_seterr(m, -EOPNOTSUPP, "unsupported operator '%s' (node '%s')", p->op_type,
					   node_label(p));
		if (p->n_input > ONNX_MAX_NODE_IO || p->n_output > ONNX_MAX_NODE_IO || !p->n_output)
			return onnx_seterr(m, -EINVAL, "node '%s' (%s): %zu inputs, %zu outputs (1..%d outputs, at most %d inputs)",
					   node_label(p), p->op_type, p->n_input, p->n_output, ONNX_MAX_NODE_IO,
					   ONNX_MAX_NODE_IO);
		if (p->n_attribute > ONNX_MAX_NODE_IO)
			return onnx_seterr(m, -EINVAL, "node '%s' (%s): %zu attributes", node_label(p), p->op_type,
					   p->n_attribute);
		nd->in = calloc(p->n_input < 3 ? 3 : p->n_input, sizeof(int));
		nd->out = calloc(p->n_output, sizeof(int));
		if (!nd->in || !nd->out) {
			free(nd->in);
			free(nd->out);
			return onnx_seterr(m, -ENOMEM, "out of memory");
		}
		m->n_nodes++;	/* from here on freed by onnx_model_free */
		nd->pb = p;
		nd->op = (enum onnx_op)op;
		nd->n_in = (unsigned)p->n_input;
		nd->n_out = (unsigned)p->n_output;
		for (unsigned k = nd->n_in; k < 3; k++)
			nd->in[k] = -1;	/* the spare slots are absent inputs, not value 0 (found by fuzz_load) */
		for (unsigned k = 0; k < nd->n_in; k++) {
			if (!p->input[k][0]) {
				nd->in[k] = -1;
				continue;
			}
			nd->in[k] = onnx_value_find(m, p->input[k]);
			if (nd->in[k] < 0)
				return onnx_seterr(m, -EINVAL,
						   "node '%s' (%s): input '%s' is not a graph input, initializer or earlier node's output",
						   node_label(p), p->op_type, p->input[k]);
		}
		for (unsigned k = 0; k < nd->n_out; k++) {
			if (!p->output[k][0]) {
				nd->out[k] = -1;
				continue;
			}
			if (onnx_value_find(m, p->output[k]) >= 0)
				return onnx_seterr(m, -EINVAL, "node '%s' (%s): output '%s' is produced twice",
						   node_label(p), p->op_type, p->output[k]);
			nd->out[k] = onnx_value_add(m, p->output[k]);
			if (nd->out[k] < 0)
				return nd->out[k];
		}
		if (nd->out[0] < 0 && nd->n_out > 1 && (nd->op == OP_RNN || nd->op == OP_GRU || nd->op == OP_LSTM)) {
			/* Y is optional (only Y_h wanted): an unnamed value no one reads takes it, so every
			 * node keeps an output 0 */
			nd->out[0] = onnx_value_add(m, p->output[0]);
			if (nd->out[0] < 0)
				return nd->out[0];
		}
		if (nd->out[0] < 0)
			return onnx_seterr(m, -EINVAL, "node '%s' (%s): no first output", node_label(p), p->op_type);
		if (nd->op == OP_CONSTANT) {
			int ret = load_constant(m, nd);

			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * The fixed dimensions of declared shapes (graph inputs, value_info, graph outputs) within the limits
 * of tnpu_onnx.h, symbolic ones skipped: every later sum of padded sizes, product or stride of them
 * then fits int64 (issue #27: [0, 1, 2^63 - 1, 1] has no elements, so no allocation refused it, and
 * the Conv window after it overflowed).
 */
static int check_declared(struct onnx_model *m, Onnx__ValueInfoProto *const *vis, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		const Onnx__TensorShapeProto *s;
		int64_t dims[ONNX_MAX_DIMS];
		unsigned nd = 0, at[ONNX_MAX_DIMS], bad = 0;
		int ret;

		if (!vis[i]->type || vis[i]->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
		    !vis[i]->type->tensor_type || !(s = vis[i]->type->tensor_type->shape))
			continue;
		if (s->n_dim > ONNX_MAX_DIMS)
			continue;	/* refused where it is read (rank) */
		for (size_t d = 0; d < s->n_dim; d++)
			if (s->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
				at[nd] = (unsigned)d;
				dims[nd++] = s->dim[d]->dim_value;
			}
		ret = onnx_shape_check(nd, dims, &bad);
		if (ret == -EINVAL)
			return onnx_seterr(m, -EINVAL, "%s '%s': declared dimension %u is %lld (0 to %d)", what,
					   vis[i]->name ? vis[i]->name : "", at[bad], (long long)dims[bad], ONNX_MAX_DIM_SIZE);
		if (ret)
			return onnx_seterr(m, -EINVAL, "%s '%s': the declared dimensions multiply to more than %lld "
					   "elements (a 0 counted as 1)", what, vis[i]->name ? vis[i]->name : "",
					   (long long)ONNX_MAX_SHAPE_ELEMS);
	}
	return 0;
}

static int load_graph(struct onnx_model *m)
{
	const Onnx__GraphProto *g = m->pb->graph;
	int ret;

	if (!g)
		return onnx_seterr(m, -EBADMSG, "not an ONNX model: no graph");
	m->opset = 1;
	for (size_t i = 0; i < m->pb->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = m->pb->opset_import[i];

		if ((!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) && o->has_version)
			m->opset = o->version;
	}
	ret = load_initializers(m, g);
	if (!ret)
		ret = check_declared(m, g->input, g->n_input, "graph input");
	if (!ret)
		ret = check_declared(m, g->value_info, g->n_value_info, "value");
	if (!ret)
		ret = check_declared(m, g->output, g->n_output, "graph output");
	if (ret)
		return ret;
	m->inputs = calloc(g->n_input + 1, sizeof(int));
	m->outputs = calloc(g->n_output + 1, sizeof(int));
	if (!m->inputs || !m->outputs)
		return onnx_seterr(m, -ENOMEM, "out of memory");
	for (size_t i = 0; i < g->n_input; i++) {
		const char *name = g->input[i]->name;
		int v;

		if (!name || !name[0])
			return onnx_seterr(m, -EINVAL, "graph input %zu has no name", i);
		if (onnx_value_find(m, name) >= 0)
			continue;	/* an initializer listed as input (IR < 4): a constant */
		if (g->input[i]->type && g->input[i]->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
			return onnx_seterr(m, -EOPNOTSUPP, "graph input '%s' is not a tensor (sequence, map or optional)",
					   name);
		v = onnx_value_add(m, name);
		if (v < 0)
			return v;
		m->vals[v].is_input = true;
		m->inputs[m->n_inputs++] = v;
	}
	ret = load_nodes(m, g);
	if (ret)
		return ret;
	for (size_t i = 0; i < g->n_output; i++) {
		const char *name = g->output[i]->name;
		int v = name ? onnx_value_find(m, name) : -1;

		if (v < 0)
			return onnx_seterr(m, -EINVAL, "graph output '%s' is produced by no node", name ? name : "");
		m->outputs[m->n_outputs++] = v;
	}
	if (!m->n_outputs)
		return onnx_seterr(m, -EINVAL, "graph has no outputs");
	return 0;
}

/* The graph's invariants after a load-time pass, with ONNX_VERIFY=1 (opt-in; graph_index.c). */
static int verify(struct onnx_model *m, const char *after)
{
	return onnx_graph_verify_enabled() ? onnx_graph_verify(m, after) : 0;
}

int onnx_model_load_mem(const void *buf, size_t len, unsigned flags, struct onnx_model **out, char *err,
			size_t errlen)
{
	struct onnx_model *m = calloc(1, sizeof(*m));
	int ret;

	*out = NULL;
	if (!m) {
		if (err)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->load_flags = flags;
	m->pb = onnx__model_proto__unpack(NULL, len, buf);
	if (!m->pb)
		ret = onnx_seterr(m, -EBADMSG, "not an ONNX model: protobuf parse of ModelProto failed (%zu bytes)", len);
	else
		ret = load_graph(m);
	/* the use-def index the passes below read and keep current (graph_index.c) */
	if (!ret)
		ret = onnx_graph_index(m);
	/* shape-only subgraphs and constant expressions are evaluated once, here; the CPU reference
	 * (ONNX_LOAD_NO_FOLD) evaluates them at run time, which checks the folding */
	if (!ret)
		ret = verify(m, "the load");
	/* a half-precision network computes in FLOAT (f16_promote.c); the graph as written keeps its types */
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD))
		ret = onnx_promote_f16(m);
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD))
		ret = onnx_static_shapes(m);
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD))
		ret = verify(m, "onnx_static_shapes");
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD))
		ret = onnx_const_fold(m);
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD))
		ret = verify(m, "onnx_const_fold");
	if (!ret && !(flags & ONNX_LOAD_NO_FOLD)) {
		ret = onnx_fold_batchnorm(m);
		if (!ret)
			ret = verify(m, "onnx_fold_batchnorm");
		if (!ret)
			ret = onnx_fuse_relu(m);
		if (!ret)
			ret = verify(m, "onnx_fuse_relu");
		if (!ret)
			ret = onnx_fuse_clip(m);
		if (!ret)
			ret = verify(m, "onnx_fuse_clip");
		if (!ret)
			ret = onnx_fuse_gelu(m);
		if (!ret)
			ret = verify(m, "onnx_fuse_gelu");
		if (!ret)
			ret = onnx_fuse_layernorm(m);
		if (!ret)
			ret = verify(m, "onnx_fuse_layernorm");
		if (!ret)
			ret = onnx_fuse_pad(m);
		if (!ret)
			ret = verify(m, "onnx_fuse_pad");
		if (!ret)
			ret = onnx_fold_weight_only(m);
		if (!ret)
			ret = verify(m, "onnx_fold_weight_only");
	}
	if (ret) {
		if (err)
			snprintf(err, errlen, "%s", m->err);
		onnx_model_free(m);
		return ret;
	}
	*out = m;
	return 0;
}

int onnx_model_load(const char *path, unsigned flags, struct onnx_model **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char msg[512];
	uint8_t *buf;
	long len;
	int ret;

	*out = NULL;
	if (!f) {
		ret = -errno;
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		if (err)
			snprintf(err, errlen, "%s: cannot size the file", path);
		return -EIO;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		ret = buf ? -EIO : -ENOMEM;
		free(buf);
		fclose(f);
		if (err)
			snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
		return ret;
	}
	fclose(f);
	ret = onnx_model_load_mem(buf, (size_t)len, flags, out, msg, sizeof(msg));
	free(buf);
	if (ret && err)
		snprintf(err, errlen, "%s: %s", path, msg);
	return ret;
}

void onnx_model_free(struct onnx_model *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->n_vals; i++)
		onnx_tensor_release(&m->vals[i].t);
	free(m->vals);
	for (unsigned i = 0; i < m->n_nodes; i++) {
		free(m->nodes[i].in);
		free(m->nodes[i].out);
	}
	free(m->nodes);
	free(m->inputs);
	free(m->outputs);
	onnx_graph_index_free(m);
	if (m->pb)
		onnx__model_proto__free_unpacked(m->pb, NULL);
	free(m);
}

unsigned onnx_model_n_inputs(const struct onnx_model *m)
{
	return m->n_inputs;
}

unsigned onnx_model_n_outputs(const struct onnx_model *m)
{
	return m->n_outputs;
}

const char *onnx_model_input_name(const struct onnx_model *m, unsigned i)
{
	return i < m->n_inputs ? m->vals[m->inputs[i]].name : NULL;
}

const char *onnx_model_output_name(const struct onnx_model *m, unsigned i)
{
	return i < m->n_outputs ? m->vals[m->outputs[i]].name : NULL;
}

unsigned onnx_model_n_nodes(const struct onnx_model *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->n_nodes; i++)
		n += !m->nodes[i].folded;
	return n;
}

unsigned onnx_model_n_folded(const struct onnx_model *m)
{
	return m->n_folded;
}
