/* SPDX-License-Identifier: MIT */
/*
 * compile_rownorm.c - device steps for what RMSNorm and rotary embeddings export to (issue 29).
 *
 * torch exports Llama's RMSNorm, x * rsqrt(mean(x^2, -1) + eps) * w, as Pow(x, 2) -> ReduceMean(axes
 * [-1]) -> Add(eps) -> Sqrt -> Div(1, .) -> Mul -> Mul, and the rotate-half of rotary embeddings with a
 * Neg.  The Adds and Muls are element-wise steps already; here:
 *   Pow(x, 2)                   -> an element-wise step x * x (exact, as the host's powf(x, 2));
 *   Neg(x)                      -> an element-wise step x * -1 (the constant packed in the weights);
 *   ReduceMean(x, last axis)    -> a GEMM by a constant column of 1/K (the PE array sums the row);
 *   Div(1, Sqrt(y)), the Sqrt read by nothing else
 *                               -> one activation step, the vector units' RSQRT of y; the Sqrt's step is
 *                                  fused into it.
 * Each needs ISA 2's vector units (CAP_FEATURES bit 15), as the other element-wise steps.
 */
#include <string.h>

#include "accel_util.h"
#include "compile.h"

static bool isa2(const struct onnx_compiled *cm)
{
	return (cm->geom[6] & (1u << 15)) != 0;
}

static bool f32_act(const struct onnx_compiled *cm, int v)
{
	return v >= 0 && !cm_is_const(cm, v) && cm->probe[v].dtype == ONNX_FLOAT;
}

/* Value v is a constant one-element FLOAT equal to want. */
static bool const_scalar(const struct onnx_compiled *cm, int v, float want)
{
	const struct onnx_tensor *t;

	if (!cm_is_const(cm, v))
		return false;
	t = cm_val(cm, v);
	return t->data && t->dtype == ONNX_FLOAT && t->count == 1 && *(const float *)t->data == want;
}

/* The one running node that reads v (and nothing else does, nor is v a graph output); -1 otherwise. */
static int sole_reader(const struct onnx_model *m, int v)
{
	unsigned n_c, found = 0;
	const int *c = onnx_consumers(m, v, &n_c);
	int r = -1;

	if (onnx_graph_output_uses(m, v))
		return -1;
	for (unsigned j = 0; j < n_c; j++)
		if (!m->nodes[c[j]].folded) {
			found++;
			r = c[j];
		}
	return found == 1 ? r : -1;
}

/* The running node that writes v, -1 if none. */
static int writer(const struct onnx_model *m, int v)
{
	unsigned n_p;
	const int *p = onnx_producers(m, v, &n_p);

	for (unsigned j = 0; j < n_p; j++)
		if (!m->nodes[p[j]].folded)
			return p[j];
	return -1;
}

/* x * x (Pow by 2) or x * -1 (Neg) on the vector units, x of rank <= 4. */
static int self_mul(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, bool neg)
{
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t od[4];

	if (!isa2(cm) || !f32_act(cm, c->n->in[0]) || x->ndim > 4 || !x->count)
		return ONNX_FALLBACK;
	for (unsigned i = 0; i < 4; i++) {
		od[i] = i + x->ndim >= 4 ? x->dims[i + x->ndim - 4] : 1;
		s->ad[i] = s->od[i] = (uint32_t)od[i];
		s->bd[i] = neg ? 1 : s->ad[i];
	}
	s->b_off = UINT64_MAX;
	if (neg) {
		static const float minus_one = -1.0f;

		s->b_off = cm_wimg_add(cm, &minus_one, sizeof(minus_one));
		if (s->b_off == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	}
	s->kind = CS_ELT;
	s->op = ACCEL_ELT_MUL;
	s->in[1] = c->n->in[0];	/* b: x itself (Pow), or the packed -1 (b_off) */
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}

/* ReduceMean over the last axis: a (rows x K) x (K x 1) GEMM by a column of 1/K. */
static int mean_last(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t axes[2], dims[ONNX_MAX_DIMS];
	bool keep = attr_int(n->pb, "keepdims", 1) != 0;
	float *col;
	int na;

	if (!f32_act(cm, n->in[0]) || !x->ndim || !x->count || n->n_in > 1)
		return ONNX_FALLBACK;	/* axes as an input (opset 18): the host step */
	na = attr_ints(n->pb, "axes", axes, 2);
	if (na != 1 || (axes[0] != -1 && axes[0] != (int64_t)x->ndim - 1))
		return ONNX_FALLBACK;
	s->K = x->dims[x->ndim - 1];
	s->M = (int64_t)(x->count / (size_t)s->K);
	s->N = 1;
	if (s->M > UINT32_MAX || s->K > UINT32_MAX ||
	    accel_gemm_query(cm->dev, s->M, s->K, 1, false, false, false, ACCEL_ACT_NONE, 0.0f, 0.0f, 1.0f, s->why,
			     sizeof(s->why)))
		return ONNX_FALLBACK;
	s->w_off = cm_wimg_add(cm, NULL, (uint64_t)s->K * 4);
	if (s->w_off == UINT64_MAX)
		return cm_seterr(cm, -ENOMEM, "weights: out of memory");
	col = (float *)(cm->wimg + s->w_off);
	for (int64_t k = 0; k < s->K; k++)
		col[k] = (float)(1.0 / (double)s->K);
	s->kind = CS_GEMM;
	s->in[1] = -1;	/* B is the packed column at w_off */
	s->b_off = UINT64_MAX;
	s->scale = 1.0f;
	memcpy(dims, x->dims, sizeof(dims));
	dims[x->ndim - 1] = 1;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, keep ? x->ndim : x->ndim - 1, dims) ? -ENOMEM : 0;
}

/* Div(1, Sqrt(y)): the Sqrt fused into this step, RSQRT of y. */
static int rsqrt_div(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_model *m = cm->m;
	const struct onnx_node *n = c->n;
	const struct onnx_node *sq;
	int w;

	if (!isa2(cm) || n->n_in != 2 || !const_scalar(cm, n->in[0], 1.0f) || n->in[1] < 0 ||
	    (w = writer(m, n->in[1])) < 0 || m->nodes[w].op != OP_SQRT || sole_reader(m, n->in[1]) != (int)(n - m->nodes))
		return ONNX_FALLBACK;
	sq = &m->nodes[w];
	/* not 4-D: the layout pass groups a step's node operands, and this step reads the Sqrt's input */
	if (!f32_act(cm, sq->in[0]) || cm->probe[sq->in[0]].count != cm->probe[n->in[1]].count ||
	    cm->probe[sq->in[0]].ndim >= 4)
		return ONNX_FALLBACK;
	s->kind = CS_ACT;
	s->act = ACCEL_ACT_RSQRT;
	s->in[0] = sq->in[0];
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, cm->probe[sq->in[0]].ndim, cm->probe[sq->in[0]].dims)
		       ? -ENOMEM : 0;
}

/* A Sqrt whose only reader is Div(1, .): fused into that Div's RSQRT step (rsqrt_div). */
static int sqrt_into_div(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_model *m = cm->m;
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	int r;

	if (!isa2(cm) || !f32_act(cm, n->in[0]) || !x->count || x->ndim >= 4 || (r = sole_reader(m, n->out[0])) < 0 ||
	    m->nodes[r].op != OP_DIV || m->nodes[r].n_in != 2 || m->nodes[r].in[1] != n->out[0] ||
	    !const_scalar(cm, m->nodes[r].in[0], 1.0f))
		return ONNX_FALLBACK;
	s->kind = CS_FUSED;
	s->in[0] = -1;	/* its output is never materialised; its input is the Div step's operand */
	s->reason = "fused into the Div(1, .) after it: the vector units' RSQRT";
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}

int cm_lower_rownorm(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;

	switch (n->op) {
	case OP_POW:
		if (n->n_in != 2 || !const_scalar(cm, n->in[1], 2.0f))
			return ONNX_FALLBACK;
		return self_mul(cm, c, s, false);
	case OP_NEG:
		return self_mul(cm, c, s, true);
	case OP_REDUCEMEAN:
		return mean_last(cm, c, s);
	case OP_DIV:
		return rsqrt_div(cm, c, s);
	case OP_SQRT:
		return sqrt_into_div(cm, c, s);
	default:
		return ONNX_FALLBACK;
	}
}
