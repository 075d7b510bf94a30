/* SPDX-License-Identifier: MIT */
/*
 * fold.c - BatchNormalization folded into the Conv that feeds it, at load time (inference mode):
 *   W'[k] = W[k] * s[k],  b'[k] = (b[k] - mean[k]) * s[k] + B[k],  s[k] = scale[k] / sqrt(var[k] + eps).
 * Only when the Conv's output feeds nothing but the BN, and W, b and the BN parameters are constants
 * used by nobody else (W is rewritten in place).  Otherwise BN stays a host node (Documentation/onnx.md).
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Reads of v at run time: input slots of nodes not evaluated at load time, and graph outputs. */
static unsigned uses(const struct onnx_model *m, int v)
{
	unsigned n_c, n = onnx_graph_output_uses(m, v);
	const int *c = onnx_consumers(m, v, &n_c);

	for (unsigned j = 0; j < n_c; j++)
		n += !m->nodes[c[j]].const_folded;
	return n;
}

/* The first node (in graph order) that writes v and still runs, or a Conv; -1 if none. */
static int producer(const struct onnx_model *m, int v)
{
	unsigned n_p;
	const int *p = onnx_producers(m, v, &n_p);
	int best = -1;

	for (unsigned j = 0; j < n_p; j++)
		if ((!m->nodes[p[j]].folded || m->nodes[p[j]].op == OP_CONV) && (best < 0 || p[j] < best))
			best = p[j];
	return best;
}

/* Input k of node n becomes value v (the use-def index follows). */
static int set_in(struct onnx_model *m, struct onnx_node *n, unsigned k, int v)
{
	int in[ONNX_MAX_NODE_IO];
	unsigned n_in = n->n_in > k ? n->n_in : k + 1;

	for (unsigned j = 0; j < n_in; j++)
		in[j] = j < n->n_in ? n->in[j] : -1;
	in[k] = v;
	return onnx_node_set_inputs(m, n, n_in, in);
}

static bool const_float(const struct onnx_model *m, int v, size_t count)
{
	return v >= 0 && m->vals[v].is_const && m->vals[v].t.dtype == ONNX_FLOAT && m->vals[v].t.count == count;
}

static int fold_one(struct onnx_model *m, struct onnx_node *bn, struct onnx_node *conv)
{
	const struct onnx_tensor *w = &m->vals[conv->in[1]].t;
	int64_t K = w->dims[0];
	size_t per_k = w->count / (size_t)K;
	float eps = attr_float(bn->pb, "epsilon", 1e-5f);
	int bias = conv->n_in > 2 ? conv->in[2] : -1, ret;
	const float *sc, *bb, *mu, *var;
	float *wp, *bp;

	for (unsigned i = 1; i < 5; i++)
		if (!const_float(m, bn->in[i], (size_t)K) || uses(m, bn->in[i]) != 1)
			return 0;
	if (bias >= 0 && (!const_float(m, bias, (size_t)K) || uses(m, bias) != 1))
		return 0;
	if (bias < 0) {
		bias = onnx_value_add(m, "(folded BatchNormalization bias)");
		if (bias < 0)
			return bias;
		if (onnx_tensor_alloc(&m->vals[bias].t, ONNX_FLOAT, 1, &K))
			return onnx_seterr(m, -ENOMEM, "out of memory");
		m->vals[bias].is_const = true;
		ret = set_in(m, conv, 2, bias);
		if (ret)
			return ret;
	}
	w = &m->vals[conv->in[1]].t;
	sc = m->vals[bn->in[1]].t.data;
	bb = m->vals[bn->in[2]].t.data;
	mu = m->vals[bn->in[3]].t.data;
	var = m->vals[bn->in[4]].t.data;
	wp = w->data;
	bp = m->vals[bias].t.data;
	for (int64_t k = 0; k < K; k++) {
		double s = sc[k] / sqrt((double)var[k] + eps);

		for (size_t i = 0; i < per_k; i++)
			wp[(size_t)k * per_k + i] = (float)(wp[(size_t)k * per_k + i] * s);
		bp[k] = (float)((bp[k] - mu[k]) * s + bb[k]);
	}
	ret = onnx_node_set_out(m, conv, 0, bn->out[0]);
	if (ret)
		return ret;
	bn->folded = true;
	m->n_folded++;
	return 0;
}

int onnx_fold_batchnorm(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *bn = &m->nodes[i], *conv;
		int p, ret;

		if (bn->op != OP_BATCHNORM || bn->folded || bn->n_in != 5 || bn->n_out != 1 || bn->in[0] < 0 ||
		    attr_int(bn->pb, "training_mode", 0))
			continue;
		p = producer(m, bn->in[0]);
		if (p < 0 || m->nodes[p].op != OP_CONV || m->nodes[p].n_out != 1 || uses(m, bn->in[0]) != 1)
			continue;
		conv = &m->nodes[p];
		if (conv->n_in < 2 || conv->in[1] < 0 || !m->vals[conv->in[1]].is_const ||
		    m->vals[conv->in[1]].t.dtype != ONNX_FLOAT || m->vals[conv->in[1]].t.ndim < 1 ||
		    uses(m, conv->in[1]) != 1)
			continue;
		ret = fold_one(m, bn, conv);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * A Relu whose input is the output of a Conv or Gemm that feeds nothing else becomes that node's
 * activation: the SFU applies it in the epilogue on the device (isa.md), so the tensor is not sent
 * through the PE array a second time; the host kernels apply it at the end.
 */
int onnx_fuse_relu(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *r = &m->nodes[i], *p;
		int pi;

		if (r->op != OP_RELU || r->folded || r->n_in != 1 || r->in[0] < 0 || r->n_out != 1)
			continue;
		pi = producer(m, r->in[0]);
		if (pi < 0 || uses(m, r->in[0]) != 1)
			continue;
		p = &m->nodes[pi];
		if ((p->op != OP_CONV && p->op != OP_GEMM) || p->folded || p->fused_relu || p->fused_clamp || p->n_out != 1)
			continue;
		p->fused_relu = true;
		if (onnx_node_set_out(m, p, 0, r->out[0]))
			return -ENOMEM;
		r->folded = true;
	}
	return 0;
}

/*
 * A Clip with constant bounds lo <= hi (ReLU6: 0, 6) after a Conv or Gemm that feeds nothing else
 * becomes that node's activation: the SFU's CLAMP in the epilogue on the device (fp32 bounds), the same
 * clamp at the end of the host kernels.
 */
int onnx_fuse_clip(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *r = &m->nodes[i], *p;
		float lo, hi;
		int pi;

		if (r->op != OP_CLIP || r->folded || r->n_in < 1 || r->in[0] < 0 || r->n_out != 1 ||
		    clip_const_bounds(m, r, &lo, &hi) || !(lo <= hi))
			continue;
		pi = producer(m, r->in[0]);
		if (pi < 0 || uses(m, r->in[0]) != 1)
			continue;
		p = &m->nodes[pi];
		if ((p->op != OP_CONV && p->op != OP_GEMM) || p->folded || p->fused_relu || p->fused_clamp || p->n_out != 1)
			continue;
		p->fused_clamp = true;
		p->clamp_lo = lo;
		p->clamp_hi = hi;
		if (onnx_node_set_out(m, p, 0, r->out[0]))
			return -ENOMEM;
		r->folded = true;
	}
	return 0;
}

/* The pads of a constant-mode Pad with value 0 over the two spatial axes of a 4-D tensor; -1 if not. */
static int zero_pad_4d(const struct onnx_model *m, const struct onnx_node *p, int64_t out[4])
{
	int64_t pads[8];
	char buf[16];
	const char *mode = attr_string(p->pb, "mode", buf, sizeof(buf), "constant");
	int n;

	if (strcmp(mode, "constant"))
		return -1;
	if (m->opset >= 11) {
		const struct onnx_value *pv = p->n_in > 1 && p->in[1] >= 0 ? &m->vals[p->in[1]] : NULL;
		const struct onnx_value *cv = p->n_in > 2 && p->in[2] >= 0 ? &m->vals[p->in[2]] : NULL;

		if (!pv || !pv->is_const || pv->t.dtype != ONNX_INT64 || pv->t.count != 8 || (p->n_in > 3 && p->in[3] >= 0))
			return -1;
		if (cv && (!cv->is_const || (cv->t.count && tensor_get(&cv->t, 0) != 0)))
			return -1;
		memcpy(pads, pv->t.data, sizeof(pads));
	} else {
		n = attr_ints(p->pb, m->opset < 2 ? "paddings" : "pads", pads, 8);
		if (n != 8 || attr_float(p->pb, "value", 0.0f) != 0.0f)
			return -1;
	}
	if (pads[0] || pads[1] || pads[4] || pads[5])
		return -1;
	for (int i = 0; i < 8; i++)
		if (pads[i] < 0 || pads[i] > (1LL << 20))
			return -1;
	out[0] = pads[2];
	out[1] = pads[3];
	out[2] = pads[6];
	out[3] = pads[7];
	return 0;
}

/*
 * A zero Pad over H and W feeding only a Conv, or an AveragePool, becomes part of that node's padding:
 * torch exports avg_pool2d(padding=p) (count_include_pad) as Pad + AveragePool, which then runs as one
 * device pooling whose average counts the padding, as the Pad's zeros did.  MaxPool is left alone (its
 * padding is -inf, not 0).
 */
int onnx_fuse_pad(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *p = &m->nodes[i], *q = NULL;
		char buf[16];
		int64_t pads[4];
		unsigned n_c;
		const int *c;

		if (p->op != OP_PAD || p->folded || p->n_out != 1 || p->in[0] < 0 || zero_pad_4d(m, p, pads))
			continue;
		if (uses(m, p->out[0]) != 1)
			continue;
		/* the first node after the Pad that still runs and reads its output as input 0 */
		c = onnx_consumers(m, p->out[0], &n_c);
		for (unsigned j = 0; j < n_c; j++) {
			struct onnx_node *r = &m->nodes[c[j]];

			if ((unsigned)c[j] > i && !r->folded && r->in[0] == p->out[0] && (!q || r < q))
				q = r;
		}
		if (!q || (q->op != OP_CONV && q->op != OP_AVGPOOL) ||
		    strcmp(attr_string(q->pb, "auto_pad", buf, sizeof(buf), "NOTSET"), "NOTSET"))
			continue;
		if (q->op == OP_AVGPOOL) {
			int64_t own[4] = { 0, 0, 0, 0 };
			int n = attr_ints(q->pb, "pads", own, 4);

			if (n > 4 || (!attr_int(q->pb, "count_include_pad", 0) && (own[0] || own[1] || own[2] || own[3])))
				continue;	/* its own padding must not count while the Pad's does */
			q->pad_counts = true;
		}
		for (int k = 0; k < 4; k++)
			q->extra_pads[k] += pads[k];
		if (set_in(m, q, 0, p->in[0]))
			return onnx_seterr(m, -ENOMEM, "out of memory");
		p->folded = true;
	}
	return 0;
}

/* The one unfolded node that reads value v (and nothing else does), or NULL. */
static struct onnx_node *sole_consumer(struct onnx_model *m, int v)
{
	struct onnx_node *found = NULL;
	unsigned n_c;
	const int *c;

	if (v < 0 || uses(m, v) != 1)
		return NULL;
	c = onnx_consumers(m, v, &n_c);
	for (unsigned j = 0; j < n_c; j++)	/* the last in graph order, as the scan it replaces */
		if (!m->nodes[c[j]].folded && (!found || &m->nodes[c[j]] > found))
			found = &m->nodes[c[j]];
	return found;
}

static bool const_scalar(const struct onnx_model *m, int v, double want, double tol)
{
	const struct onnx_value *x = v >= 0 ? &m->vals[v] : NULL;

	return x && x->is_const && x->t.dtype == ONNX_FLOAT && x->t.count == 1 &&
	       fabs(((const float *)x->t.data)[0] - want) <= tol;
}

/* The operand of binary node n that is not v (or -1 when both or neither are). */
static int other_input(const struct onnx_node *n, int v)
{
	if (n->n_in != 2)
		return -1;
	if (n->in[0] == v && n->in[1] != v)
		return n->in[1];
	if (n->in[1] == v && n->in[0] != v)
		return n->in[0];
	return -1;
}

/*
 * GELU as torch exports it before opset 20, y = x * 0.5 * (1 + erf(x / sqrt(2))):
 * Div(x, 1.4142135) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5), each intermediate read only by the
 * next, becomes one Gelu host node (the specification's formula, ops_elem.c): 5 host passes over the
 * tensor become 1.
 */
int onnx_fuse_gelu(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *e = &m->nodes[i], *d, *a, *m1, *m2;
		int pi, x;

		if (e->op != OP_ERF || e->folded || e->n_in != 1 || e->n_out != 1 || e->in[0] < 0)
			continue;
		pi = producer(m, e->in[0]);
		if (pi < 0 || uses(m, e->in[0]) != 1)
			continue;
		d = &m->nodes[pi];
		if (d->op != OP_DIV || d->folded || d->n_in != 2 || d->n_out != 1 || d->in[0] < 0 ||
		    !const_scalar(m, d->in[1], 1.41421356237, 1e-6))
			continue;
		x = d->in[0];
		a = sole_consumer(m, e->out[0]);
		if (!a || a->op != OP_ADD || a->n_out != 1 || !const_scalar(m, other_input(a, e->out[0]), 1.0, 0))
			continue;
		m1 = sole_consumer(m, a->out[0]);
		if (!m1 || m1->op != OP_MUL || m1->n_out != 1 || other_input(m1, a->out[0]) != x)
			continue;
		m2 = sole_consumer(m, m1->out[0]);
		if (!m2 || m2->op != OP_MUL || m2->n_out != 1 || !const_scalar(m, other_input(m2, m1->out[0]), 0.5, 0))
			continue;
		/* the Div node becomes the Gelu; the other four disappear */
		d->op = OP_GELU;
		d->op_name = "Gelu";
		if (onnx_node_set_inputs(m, d, 1, &x) || onnx_node_set_out(m, d, 0, m2->out[0]))
			return -ENOMEM;
		e->folded = a->folded = m1->folded = m2->folded = true;
		e->fused_into = a->fused_into = m1->fused_into = m2->fused_into = "part of an Erf-form GELU, run as one Gelu node";
	}
	return 0;
}

/* ReduceMean with the axes attribute naming exactly the last k axes (-k..-1) and keepdims 1: k, else 0. */
static int trailing_mean_axes(const struct onnx_model *m, const struct onnx_node *n)
{
	int64_t axes[ONNX_MAX_DIMS];
	int cnt;

	if (n->op != OP_REDUCEMEAN || n->folded || n->n_out != 1 || m->opset >= 18 || attr_int(n->pb, "keepdims", 1) != 1)
		return 0;
	cnt = attr_ints(n->pb, "axes", axes, ONNX_MAX_DIMS);
	if (cnt < 1 || cnt > ONNX_MAX_DIMS)
		return 0;
	for (int i = 0; i < cnt; i++) {
		bool found = false;

		for (int j = 0; j < cnt; j++)
			found |= axes[j] == -1 - i;
		if (!found)
			return 0;
	}
	return cnt;
}

static bool const_1d_float(const struct onnx_model *m, int v)
{
	return v >= 0 && m->vals[v].is_const && m->vals[v].t.dtype == ONNX_FLOAT && m->vals[v].t.ndim == 1;
}

/*
 * layer_norm as torch exports it before opset 17:
 *   m = ReduceMean(x, axes = [-k..-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), same axes);
 *   y = Add(Mul(Div(d, Sqrt(Add(v, eps))), W), B)   (W, B constant 1-D)
 * becomes one LayerNormalization(x, W, B; axis = -k, epsilon = eps) host node: 9 passes become 1.
 */
int onnx_fuse_layernorm(struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		struct onnx_node *r1 = &m->nodes[i], *sub, *pw, *r2, *ae, *sq, *dv, *mu, *ab;
		int k = trailing_mean_axes(m, r1), x, w, b;
		float eps;

		if (!k || r1->n_in != 1 || (x = r1->in[0]) < 0)
			continue;
		sub = sole_consumer(m, r1->out[0]);
		if (!sub || sub->op != OP_SUB || sub->n_in != 2 || sub->in[0] != x || sub->in[1] != r1->out[0] ||
		    uses(m, sub->out[0]) != 2)
			continue;
		pw = dv = NULL;
		{
			unsigned n_c;
			const int *cs = onnx_consumers(m, sub->out[0], &n_c);

			for (unsigned j = 0; j < n_c; j++) {	/* the last of each in graph order */
				struct onnx_node *c = &m->nodes[cs[j]];

				if (c->folded || c->in[0] != sub->out[0])
					continue;
				if (c->op == OP_POW && (!pw || c > pw))
					pw = c;
				else if (c->op == OP_DIV && (!dv || c > dv))
					dv = c;
			}
		}
		if (!pw || !dv || pw->n_in != 2 || !const_scalar(m, pw->in[1], 2.0, 0))
			continue;
		r2 = sole_consumer(m, pw->out[0]);
		if (!r2 || trailing_mean_axes(m, r2) != k || r2->n_in != 1)
			continue;
		ae = sole_consumer(m, r2->out[0]);
		if (!ae || ae->op != OP_ADD || ae->n_out != 1)
			continue;
		{
			int e = other_input(ae, r2->out[0]);

			if (e < 0 || !m->vals[e].is_const || m->vals[e].t.dtype != ONNX_FLOAT || m->vals[e].t.count != 1)
				continue;
			eps = ((const float *)m->vals[e].t.data)[0];
			if (!(eps >= 0) || eps > 1)
				continue;
		}
		sq = sole_consumer(m, ae->out[0]);
		if (!sq || sq->op != OP_SQRT || sole_consumer(m, sq->out[0]) != dv || dv->n_in != 2 ||
		    dv->in[1] != sq->out[0] || dv->n_out != 1)
			continue;
		mu = sole_consumer(m, dv->out[0]);
		if (!mu || mu->op != OP_MUL || mu->n_out != 1 || !const_1d_float(m, w = other_input(mu, dv->out[0])))
			continue;
		ab = sole_consumer(m, mu->out[0]);
		if (!ab || ab->op != OP_ADD || ab->n_out != 1 || !const_1d_float(m, b = other_input(ab, mu->out[0])))
			continue;
		r1->op = OP_LAYERNORM;
		r1->op_name = "LayerNormalization";
		r1->ln_fused = true;
		r1->ln_axis = -k;
		r1->ln_eps = eps;
		if (onnx_node_set_inputs(m, r1, 3, (const int[]){ x, w, b }) || onnx_node_set_out(m, r1, 0, ab->out[0]))
			return -ENOMEM;
		sub->folded = pw->folded = r2->folded = ae->folded = sq->folded = dv->folded = mu->folded = ab->folded = true;
		sub->fused_into = pw->fused_into = r2->fused_into = ae->fused_into = sq->fused_into = dv->fused_into =
			mu->fused_into = ab->fused_into = "part of a decomposed layer_norm, run as one LayerNormalization node";
	}
	return 0;
}
