/* SPDX-License-Identifier: MIT */
/*
 * ops_rnn.c - RNN, GRU and LSTM (opsets 7-14), host kernels written from the ONNX specification:
 * forward, reverse and bidirectional, `layout` 0 and 1, `sequence_lens` (steps past a sequence's end give
 * zeros in Y and keep its state), initial states, biases, LSTM peepholes and `input_forget`, GRU's
 * `linear_before_reset`, `clip`, and the `activations` list with `activation_alpha`/`activation_beta`.
 * The gate products are small matrix-vector products in double; a device lowering of the gates
 * (issue 30) is not done yet.
 */
#include <stdio.h>

#include "ops_common.h"

#define RNN_MAX_ACT 6	/* two directions of up to three functions */

struct rnn_act {
	char name[20];
	float alpha, beta;
};

static double act_apply(const struct rnn_act *a, double x)
{
	const char *n = a->name;

	if (!strcmp(n, "Sigmoid"))
		return 1 / (1 + exp(-x));
	if (!strcmp(n, "Tanh"))
		return tanh(x);
	if (!strcmp(n, "Relu"))
		return x > 0 ? x : 0;
	if (!strcmp(n, "HardSigmoid"))
		return fmax(0, fmin(1, a->alpha * x + a->beta));
	if (!strcmp(n, "LeakyRelu"))
		return x >= 0 ? x : a->alpha * x;
	if (!strcmp(n, "ThresholdedRelu"))
		return x > a->alpha ? x : 0;
	if (!strcmp(n, "ScaledTanh"))
		return a->alpha * tanh(a->beta * x);
	if (!strcmp(n, "Affine"))
		return a->alpha * x + a->beta;
	if (!strcmp(n, "Elu"))
		return x >= 0 ? x : a->alpha * expm1(x);
	if (!strcmp(n, "Softsign"))
		return x / (1 + fabs(x));
	return log1p(exp(x));	/* Softplus (act_parse admits no other name) */
}

/* The activations of dirs directions × per functions: the attribute's, else the defaults. */
static int act_parse(const struct onnx_ctx *c, unsigned dirs, unsigned per, const char *const *def, struct rnn_act *acts)
{
	static const struct { const char *name; float alpha, beta; bool a, b; } known[] = {
		{ "Sigmoid", 0, 0, 0, 0 }, { "Tanh", 0, 0, 0, 0 }, { "Relu", 0, 0, 0, 0 },
		{ "HardSigmoid", 0.2f, 0.5f, 1, 1 }, { "LeakyRelu", 0.01f, 0, 1, 0 }, { "ThresholdedRelu", 1, 0, 1, 0 },
		{ "ScaledTanh", 1, 1, 1, 1 }, { "Affine", 1, 0, 1, 1 }, { "Elu", 1, 0, 1, 0 }, { "Softsign", 0, 0, 0, 0 },
		{ "Softplus", 0, 0, 0, 0 },
	};
	const Onnx__AttributeProto *a = attr_find(c->n->pb, "activations");
	const Onnx__AttributeProto *al = attr_find(c->n->pb, "activation_alpha");
	const Onnx__AttributeProto *be = attr_find(c->n->pb, "activation_beta");
	unsigned n = dirs * per, ia = 0, ib = 0;

	if (a && a->n_strings != n && a->n_strings != per)
		return node_err(c, -EINVAL, "activations has %zu names (%u per direction)", a->n_strings, per);
	for (unsigned i = 0; i < n; i++) {
		size_t k;
		const char *name = def[i % per];
		size_t len = strlen(name);

		if (a) {
			const ProtobufCBinaryData *s = &a->strings[a->n_strings == n ? i : i % per];

			name = (const char *)s->data;
			len = s->len;
		}
		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (strlen(known[k].name) == len && !strncmp(known[k].name, name, len))
				break;
		if (k == sizeof(known) / sizeof(known[0]))
			return node_err(c, -EINVAL, "activation '%.*s' is not one the specification lists", (int)len, name);
		snprintf(acts[i].name, sizeof(acts[i].name), "%s", known[k].name);
		acts[i].alpha = known[k].alpha;
		acts[i].beta = known[k].beta;
		if (known[k].a && al && ia < al->n_floats)
			acts[i].alpha = al->floats[ia++];
		if (known[k].b && be && ib < be->n_floats)
			acts[i].beta = be->floats[ib++];
	}
	return 0;
}

struct rnn {
	int64_t seq, batch, in, hid, dirs, gates;
	bool layout1;
	float clip;
	const float *x, *w, *r, *b, *p;
	const float *xw;	/* the input projections X·W^T [dirs][seq·batch][gates·hid] (rnn_proj_fn), or NULL */
	const struct onnx_tensor *lens;
};

static double clipv(const struct rnn *g, double v)
{
	return g->clip > 0 ? fmax(-g->clip, fmin(g->clip, v)) : v;
}

/* X[t, bt, :] (layout 0: [seq, batch, in]; 1: [batch, seq, in]). */
static const float *x_at(const struct rnn *g, int64_t t, int64_t bt)
{
	return g->x + (g->layout1 ? bt * g->seq + t : t * g->batch + bt) * g->in;
}

/* acc[j] = W[gate block] · x + R[block] · h + Wb + Rb for the gates' rows j (0 .. gates·hid); W · x from
 * the precomputed projections when there are (row t, bt of X as x_at orders them). */
static void gate_pre(const struct rnn *g, int64_t d, int64_t t, int64_t bt, const double *h, double *acc, bool rb_apart,
		     double *rpart)
{
	const float *w = g->w + d * g->gates * g->hid * g->in, *r = g->r + d * g->gates * g->hid * g->hid;
	const float *wb = g->b ? g->b + d * 2 * g->gates * g->hid : NULL, *rb = wb ? wb + g->gates * g->hid : NULL;
	const float *xt = x_at(g, t, bt);
	const float *xw = g->xw ? g->xw + ((d * g->seq * g->batch) + (xt - g->x) / g->in) * g->gates * g->hid : NULL;

	for (int64_t j = 0; j < g->gates * g->hid; j++) {
		double s = wb ? wb[j] : 0, q = rb ? rb[j] : 0;

		if (xw)
			s += xw[j];
		else
			for (int64_t k = 0; k < g->in; k++)
				s += (double)w[j * g->in + k] * xt[k];
		for (int64_t k = 0; k < g->hid; k++)
			q += (double)r[j * g->hid + k] * h[k];
		if (rb_apart) {
			acc[j] = s;
			rpart[j] = q;
		} else {
			acc[j] = s + q;
		}
	}
}

int rnn_run(struct onnx_ctx *c, rnn_proj_fn proj)
{
	enum onnx_op op = c->n->op;
	const struct onnx_tensor *x, *w, *r, *b = node_in(c, 3), *h0 = node_in(c, 5), *c0 = NULL, *p = NULL;
	static const char *const def_rnn[] = { "Tanh" }, *const def_gru[] = { "Sigmoid", "Tanh" },
				 *const def_lstm[] = { "Sigmoid", "Tanh", "Tanh" };
	struct rnn_act acts[RNN_MAX_ACT];
	char buf[16];
	const char *dir = attr_string(c->n->pb, "direction", buf, sizeof(buf), "forward");
	int64_t hs = attr_int(c->n->pb, "hidden_size", 0), yd[4], hd[3];
	bool lbr = attr_int(c->n->pb, "linear_before_reset", 0) != 0, coupled = attr_int(c->n->pb, "input_forget", 0) != 0;
	unsigned per = op == OP_RNN ? 1 : op == OP_GRU ? 2 : 3;
	struct rnn g = { 0 };
	double *h, *cs, *acc, *rp;
	float *Y = NULL, *Yh = NULL, *Yc = NULL;
	int ret;

	if ((ret = in_req(c, 0, "X", &x)) || (ret = in_req(c, 1, "W", &w)) || (ret = in_req(c, 2, "R", &r)))
		return ret;
	if (op == OP_LSTM) {
		c0 = node_in(c, 6);
		p = node_in(c, 7);
	}
	g.gates = op == OP_RNN ? 1 : op == OP_GRU ? 3 : 4;
	g.dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	if (strcmp(dir, "forward") && strcmp(dir, "reverse") && g.dirs == 1)
		return node_err(c, -EINVAL, "direction '%s' (forward, reverse or bidirectional)", dir);
	g.layout1 = attr_int(c->n->pb, "layout", 0) != 0;
	g.clip = attr_float(c->n->pb, "clip", 0);
	if (x->ndim != 3 || x->dtype != ONNX_FLOAT)
		return node_err(c, -EINVAL, "X must be a 3-D floating-point tensor");
	/* every float operand read as float (FLOAT16/BFLOAT16/DOUBLE arrive widened: dtype.c) */
	{
		const struct onnx_tensor *ops[6] = { w, r, b, h0, c0, p };
		static const char *const names[6] = { "W", "R", "B", "initial_h", "initial_c", "P" };

		for (int i = 0; i < 6; i++)
			if (ops[i] && ops[i]->dtype != ONNX_FLOAT)
				return node_err(c, -EINVAL, "%s must be a floating-point tensor, not %s", names[i],
						onnx_dtype_name(ops[i]->dtype));
	}
	g.seq = x->dims[g.layout1 ? 1 : 0];
	g.batch = x->dims[g.layout1 ? 0 : 1];
	g.in = x->dims[2];
	if (hs < 1)
		hs = r->ndim == 3 ? r->dims[2] : 0;
	g.hid = hs;
	if (hs < 1 || w->ndim != 3 || w->dims[0] != g.dirs || w->dims[1] != g.gates * hs || w->dims[2] != g.in)
		return node_err(c, -EINVAL, "W must be [%lld, %lld, %lld] (directions, gates x hidden_size, input size)",
				(long long)g.dirs, (long long)(g.gates * hs), (long long)g.in);
	if (r->ndim != 3 || r->dims[0] != g.dirs || r->dims[1] != g.gates * hs || r->dims[2] != hs)
		return node_err(c, -EINVAL, "R must be [%lld, %lld, %lld]", (long long)g.dirs, (long long)(g.gates * hs),
				(long long)hs);
	if (b && (b->ndim != 2 || b->dims[0] != g.dirs || b->dims[1] != 2 * g.gates * hs))
		return node_err(c, -EINVAL, "B must be [%lld, %lld]", (long long)g.dirs, (long long)(2 * g.gates * hs));
	if (h0 && (h0->ndim != 3 || h0->count != (size_t)(g.dirs * g.batch * hs)))
		return node_err(c, -EINVAL, "initial_h must hold [%lld, %lld, %lld]", (long long)g.dirs, (long long)g.batch,
				(long long)hs);
	if (c0 && (c0->ndim != 3 || c0->count != (size_t)(g.dirs * g.batch * hs)))
		return node_err(c, -EINVAL, "initial_c must hold [%lld, %lld, %lld]", (long long)g.dirs, (long long)g.batch,
				(long long)hs);
	if (p && (p->ndim != 2 || p->dims[0] != g.dirs || p->dims[1] != 3 * hs))
		return node_err(c, -EINVAL, "P must be [%lld, %lld]", (long long)g.dirs, (long long)(3 * hs));
	g.lens = node_in(c, 4);
	if (g.lens && (!is_int_type(g.lens->dtype) || g.lens->count != (size_t)g.batch))
		return node_err(c, -EINVAL, "sequence_lens must hold %lld integers", (long long)g.batch);
	for (int64_t i = 0; g.lens && i < g.batch; i++)
		if (tensor_get_i(g.lens, (size_t)i) < 0 || tensor_get_i(g.lens, (size_t)i) > g.seq)
			return node_err(c, -EINVAL, "sequence_lens[%lld] is out of range (0 to %lld)", (long long)i,
					(long long)g.seq);
	if ((ret = act_parse(c, (unsigned)g.dirs, per, op == OP_RNN ? def_rnn : op == OP_GRU ? def_gru : def_lstm, acts)))
		return ret;
	g.x = x->data, g.w = w->data, g.r = r->data, g.b = b ? b->data : NULL, g.p = p ? p->data : NULL;
	if (proj) {	/* the input projections of every step at once (the device's GEMMs) */
		float *xw = malloc((size_t)(g.dirs * g.seq * g.batch * g.gates * hs) * sizeof(float) + 1);

		if (!xw)
			return node_err(c, -ENOMEM, "out of memory");
		if ((ret = proj(c, g.x, g.w, g.seq * g.batch, g.in, g.gates * hs, g.dirs, xw))) {
			free(xw);
			return ret;
		}
		g.xw = xw;
	}
	if (g.layout1)
		yd[0] = g.batch, yd[1] = g.seq, yd[2] = g.dirs, yd[3] = hs;
	else
		yd[0] = g.seq, yd[1] = g.dirs, yd[2] = g.batch, yd[3] = hs;
	if (g.layout1)
		hd[0] = g.batch, hd[1] = g.dirs, hd[2] = hs;
	else
		hd[0] = g.dirs, hd[1] = g.batch, hd[2] = hs;
	h = cs = acc = rp = NULL;
	if ((ret = out_alloc(c, 0, ONNX_FLOAT, 4, yd)) < 0 || (ret = out_alloc(c, 1, ONNX_FLOAT, 3, hd)) < 0 ||
	    (op == OP_LSTM && (ret = out_alloc(c, 2, ONNX_FLOAT, 3, hd)) < 0))
		goto out;
	if (c->n->out[0] >= 0)
		Y = node_out(c, 0)->data;
	if (c->n->n_out > 1 && c->n->out[1] >= 0)
		Yh = node_out(c, 1)->data;
	if (op == OP_LSTM && c->n->n_out > 2 && c->n->out[2] >= 0)
		Yc = node_out(c, 2)->data;
	h = calloc((size_t)hs, sizeof(double));
	cs = calloc((size_t)hs, sizeof(double));
	acc = calloc((size_t)(g.gates * hs), sizeof(double));
	rp = calloc((size_t)(g.gates * hs), sizeof(double));
	if (!h || !cs || !acc || !rp) {
		ret = node_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (int64_t d = 0; d < g.dirs; d++) {
		bool rev = g.dirs == 2 ? d == 1 : !strcmp(dir, "reverse");
		const struct rnn_act *f = &acts[d * per];

		for (int64_t bt = 0; bt < g.batch; bt++) {
			int64_t len = g.lens ? tensor_get_i(g.lens, (size_t)bt) : g.seq;

			for (int64_t k = 0; k < hs; k++) {
				h[k] = h0 ? ((const float *)h0->data)[(d * g.batch + bt) * hs + k] : 0;
				cs[k] = c0 ? ((const float *)c0->data)[(d * g.batch + bt) * hs + k] : 0;
			}
			for (int64_t s = 0; s < g.seq; s++) {
				int64_t t = rev ? len - 1 - s : s;
				size_t yo;

				if (s >= len) {	/* past the sequence's end: Y is zero there */
					t = s;
				} else {
					gate_pre(&g, d, t, bt, h, acc, op == OP_GRU, rp);
					if (op == OP_RNN) {
						for (int64_t k = 0; k < hs; k++)
							h[k] = act_apply(&f[0], clipv(&g, acc[k]));
					} else if (op == OP_GRU) {	/* rows: z, r, h */
						const float *rw = g.r + (d * 3 + 2) * hs * hs;
						const float *rbh = g.b ? g.b + d * 6 * hs + 5 * hs : NULL;

						for (int64_t k = 0; k < hs; k++) {
							double z = act_apply(&f[0], clipv(&g, acc[k] + rp[k]));
							double rr = act_apply(&f[0], clipv(&g, acc[hs + k] + rp[hs + k])), ht;

							if (lbr) {
								ht = acc[2 * hs + k] + rr * rp[2 * hs + k];
							} else {
								double q = rbh ? rbh[k] : 0;

								for (int64_t j = 0; j < hs; j++) {
									double rj = act_apply(&f[0], clipv(&g, acc[hs + j] + rp[hs + j]));

									q += (double)rw[k * hs + j] * rj * h[j];
								}
								ht = acc[2 * hs + k] + q;
							}
							acc[2 * hs + k] = act_apply(&f[1], clipv(&g, ht));
							rp[k] = z;
						}
						for (int64_t k = 0; k < hs; k++)
							h[k] = (1 - rp[k]) * acc[2 * hs + k] + rp[k] * h[k];
					} else {	/* LSTM rows: i, o, f, c; P: i, o, f */
						const float *pp = g.p ? g.p + d * 3 * hs : NULL;

						for (int64_t k = 0; k < hs; k++) {
							double i = act_apply(&f[0], clipv(&g, acc[k] + (pp ? pp[k] * cs[k] : 0)));
							double ff = coupled ? 1 - i :
								    act_apply(&f[0], clipv(&g, acc[2 * hs + k] + (pp ? pp[2 * hs + k] * cs[k] : 0)));
							double cc = act_apply(&f[1], clipv(&g, acc[3 * hs + k]));

							cs[k] = ff * cs[k] + i * cc;
						}
						for (int64_t k = 0; k < hs; k++) {
							double o = act_apply(&f[0], clipv(&g, acc[hs + k] + (pp ? pp[hs + k] * cs[k] : 0)));

							h[k] = o * act_apply(&f[2], cs[k]);
						}
					}
				}
				yo = (size_t)(g.layout1 ? ((bt * g.seq + t) * g.dirs + d) * hs : ((t * g.dirs + d) * g.batch + bt) * hs);
				for (int64_t k = 0; Y && k < hs; k++)
					Y[yo + (size_t)k] = s >= len ? 0 : (float)h[k];
			}
			for (int64_t k = 0; k < hs; k++) {
				size_t ho = (size_t)(g.layout1 ? (bt * g.dirs + d) * hs : (d * g.batch + bt) * hs);

				if (Yh)
					Yh[ho + (size_t)k] = (float)h[k];
				if (Yc)
					Yc[ho + (size_t)k] = (float)cs[k];
			}
		}
	}
	ret = 0;
out:
	free(h);
	free(cs);
	free(acc);
	free(rp);
	free((void *)g.xw);
	return ret;
}

static int host_rnn_any(struct onnx_ctx *c)
{
	return rnn_run(c, NULL);
}

const onnx_kernel onnx_rnn_kernels[OP_COUNT] = {
	[OP_RNN] = host_rnn_any,
	[OP_GRU] = host_rnn_any,
	[OP_LSTM] = host_rnn_any,
};
