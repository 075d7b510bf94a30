/* SPDX-License-Identifier: MIT */
/*
 * compile_lower.c - the compiler's lowering, weight packing and fusion passes (compile.c runs them;
 * Documentation/onnx.md, "The compiler"): each graph node becomes a device step of the plan (with the
 * constants it reads packed into the weight image), a view, or a host step; the probe tensors of its
 * outputs are allocated (device steps: shapes computed here) or computed by the host kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_util.h"
#include "compile.h"
#include "vec_act.h"
#include "geom.h"


static const char *node_name(const struct onnx_model *m, int i)
{
	const Onnx__NodeProto *p = m->nodes[i].pb;

	return p->name && p->name[0] ? p->name : p->output[0];
}

/* Append bytes to the weight image (64-byte aligned); returns the offset or UINT64_MAX. */
uint64_t cm_wimg_add(struct onnx_compiled *cm, const void *src, uint64_t bytes)
{
	uint64_t off = (cm->wbytes + CM_ALIGN - 1) / CM_ALIGN * CM_ALIGN;

	if (bytes > ONNX_MAX_TENSOR_BYTES || off + bytes > ((uint64_t)1 << 32))
		return UINT64_MAX;
	if (!bytes)
		return off;	/* an empty constant: nothing to pack */
	if (off + bytes > cm->wcap) {
		uint64_t cap = cm->wcap ? cm->wcap : 4096;
		uint8_t *p;

		while (cap < off + bytes)
			cap *= 2;
		p = realloc(cm->wimg, cap);
		if (!p)
			return UINT64_MAX;
		cm->wimg = p;
		cm->wcap = cap;
	}
	memset(cm->wimg + cm->wbytes, 0, off - cm->wbytes);
	if (src)
		memcpy(cm->wimg + off, src, bytes);
	else
		memset(cm->wimg + off, 0, bytes);	/* realloc's new bytes are not zeroed */
	cm->wbytes = off + bytes;
	return off;
}

/* A model constant read by a device step: packed once into the weight image. */
static int weight_of(struct onnx_compiled *cm, int v, uint64_t *off)
{
	struct cval *cv = &cm->vals[v];
	const struct onnx_tensor *t = &cm->m->vals[v].t;

	if (cv->loc != LOC_WEIGHT) {
		uint64_t o = cm_wimg_add(cm, t->data, t->count * onnx_dtype_size(t->dtype));

		if (o == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory packing '%s'", cm->m->vals[v].name);
		cv->loc = LOC_WEIGHT;
		cv->off = o;
	}
	*off = cv->off;
	return 0;
}

static bool is_f32_act(const struct onnx_compiled *cm, int v)
{
	return v >= 0 && !cm->m->vals[v].is_const && cm->probe[v].dtype == ONNX_FLOAT;
}

static bool is_f32_const(const struct onnx_model *m, int v)
{
	return v >= 0 && m->vals[v].is_const && m->vals[v].t.dtype == ONNX_FLOAT;
}

static bool has_isa2(const struct onnx_compiled *cm)
{
	return (cm->geom[6] & (1u << 15)) != 0;
}

/* VEC math (CAP_FEATURES bit 25): log, sqrt, rounding, division, parametric ReLUs, ... */
static bool has_vmath(const struct onnx_compiled *cm)
{
	return (cm->geom[6] & (1u << 25)) != 0;
}

static void epi_from_node(const struct onnx_node *n, struct cstep *s)
{
	s->act = ACCEL_ACT_NONE;
	if (n->fused_relu)
		s->act = ACCEL_ACT_RELU;
	if (n->fused_clamp) {
		s->act = ACCEL_ACT_CLAMP;
		s->lo = n->clamp_lo;
		s->hi = n->clamp_hi;
	}
}

/* Conv: fp32 activation, constant fp32 weights/bias. */
static int lower_conv(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	struct conv_geom g;
	int64_t od[4];
	unsigned ond;
	int ret;

	if (!is_f32_act(cm, n->in[0]) || !is_f32_const(cm->m, n->in[1]) ||
	    (n->n_in > 2 && n->in[2] >= 0 && !is_f32_const(cm->m, n->in[2])))
		return ONNX_FALLBACK;
	if (conv_geom(c, node_in(c, 0), node_in(c, 1), &g))
		return ONNX_FALLBACK;	/* the host step reports it */
	if (node_in(c, 2) && node_in(c, 2)->count != (size_t)g.k)
		return ONNX_FALLBACK;
	/* libaccel decides what the device runs (#27 B3): a refused Conv is a host step, with its reason */
	if (accel_conv_query(cm->dev, &g, ACCEL_FP32, node_in(c, 2) != NULL, n->fused_relu, n->fused_clamp, n->clamp_lo,
			     n->clamp_hi, s->why, sizeof(s->why)))
		return ONNX_FALLBACK;
	s->kind = CS_CONV;
	s->n = g.n, s->c = g.c, s->h = g.h, s->w = g.w, s->k = g.k, s->cg = g.cg, s->kh = g.kh, s->kw = g.kw;
	s->groups = g.groups, s->oh = g.win.oh, s->ow = g.win.ow, s->sh = g.win.sh, s->sw = g.win.sw;
	s->dh = g.win.dh, s->dw = g.win.dw, s->pt = g.win.pt, s->pl = g.win.pl, s->pb = g.win.pb, s->pr = g.win.pr;
	if ((ret = weight_of(cm, n->in[1], &s->w_off)))
		return ret;
	s->b_off = UINT64_MAX;
	if (node_in(c, 2) && (ret = weight_of(cm, n->in[2], &s->b_off)))
		return ret;
	epi_from_node(n, s);
	conv_out_dims(&g, od, &ond);
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, ond, od) ? -ENOMEM : 0;
}

/* Gemm with a 2-D fp32 A; C absent or a row (the SFU bias, pre-divided by alpha). */
static int lower_gemm(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1), *cmat = node_in(c, 2);
	float alpha = attr_float(n->pb, "alpha", 1.0f), beta = attr_float(n->pb, "beta", 1.0f);
	int64_t dims[2];
	int ret;

	if (!is_f32_act(cm, n->in[0]) || !b || b->dtype != ONNX_FLOAT || a->ndim != 2 || b->ndim != 2 ||
	    alpha <= 0.0f)
		return ONNX_FALLBACK;
	s->ta = attr_int(n->pb, "transA", 0) != 0;
	s->tb = attr_int(n->pb, "transB", 0) != 0;
	s->M = s->ta ? a->dims[1] : a->dims[0];
	s->K = s->ta ? a->dims[0] : a->dims[1];
	s->N = s->tb ? b->dims[0] : b->dims[1];
	if ((s->tb ? b->dims[1] : b->dims[0]) != s->K || !s->M || !s->N || !s->K)
		return ONNX_FALLBACK;
	s->b_off = UINT64_MAX;
	if (cmat && beta != 0.0f) {
		float *row;

		if (!is_f32_const(cm->m, n->in[2]) ||
		    !((cmat->ndim == 1 && cmat->dims[0] == s->N) ||
		      (cmat->ndim == 2 && cmat->dims[0] == 1 && cmat->dims[1] == s->N)))
			return ONNX_FALLBACK;
		s->b_off = cm_wimg_add(cm, NULL, (uint64_t)s->N * 4);
		if (s->b_off == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory");
		row = (float *)(cm->wimg + s->b_off);
		for (int64_t j = 0; j < s->N; j++)
			row[j] = beta * ((const float *)cmat->data)[j] / alpha;
	}
	s->in[1] = n->in[1];
	if (cm->m->vals[n->in[1]].is_const && (ret = weight_of(cm, n->in[1], &s->w_off)))
		return ret;
	s->scale = alpha;
	epi_from_node(n, s);
	if (s->act == ACCEL_ACT_CLAMP && alpha != 1.0f)
		return ONNX_FALLBACK;	/* CLAMP bounds apply before the scale */
	/* libaccel decides what the device runs (#27): a refused Gemm is a host step, with its reason */
	if (accel_gemm_query(cm->dev, s->M, s->K, s->N, s->ta, s->tb, s->b_off != UINT64_MAX, s->act, s->lo, s->hi,
			     s->scale, s->why, sizeof(s->why)))
		return ONNX_FALLBACK;
	s->kind = CS_GEMM;
	dims[0] = s->M;
	dims[1] = s->N;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, 2, dims) ? -ENOMEM : 0;
}

/*
 * MatMul of two fp32 activations [..., M, K] x [..., K, N] with the same batch dimensions (attention's
 * Q x K^T and P x V, issue 29): one GEMM per batch slice on the arena values, as one step of ad[0] jobs.
 */
static int lower_batched_matmul(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	struct matmul_geom g;

	if (!is_f32_act(cm, c->n->in[1]) || a->ndim < 3 || b->ndim != a->ndim ||
	    memcmp(a->dims, b->dims, (a->ndim - 2) * sizeof(int64_t)))
		return ONNX_FALLBACK;
	if (matmul_geom(c, a, b, &g) || !g.m || !g.k || !g.nn || g.batch < 2 || g.batch > CS_MAX_JOBS ||
	    (size_t)(g.batch * g.m * g.k) != a->count || (size_t)(g.batch * g.k * g.nn) != b->count)
		return ONNX_FALLBACK;
	s->kind = CS_GEMM;
	s->M = g.m;
	s->K = g.k;
	s->N = g.nn;
	s->ad[0] = (uint32_t)g.batch;
	s->b_off = UINT64_MAX;
	s->w_off = UINT64_MAX;
	s->in[1] = c->n->in[1];
	s->scale = 1.0f;
	if (accel_gemm_query(cm->dev, s->M, s->K, s->N, false, false, false, ACCEL_ACT_NONE, 0.0f, 0.0f, 1.0f, s->why,
			     sizeof(s->why)))
		return ONNX_FALLBACK;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, g.out_ndim, g.out_dims) ? -ENOMEM : 0;
}

/* MatMul of an fp32 activation [..., M, K] by a constant 2-D [K, N]: one (batch*M) x K GEMM. */
static int lower_matmul(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	struct matmul_geom g;
	int ret;

	if (is_f32_act(cm, c->n->in[0]) && c->n->in[1] >= 0 && !cm->m->vals[c->n->in[1]].is_const)
		return lower_batched_matmul(cm, c, s);
	if (!is_f32_act(cm, c->n->in[0]) || !is_f32_const(cm->m, c->n->in[1]) || a->ndim < 2 || b->ndim != 2)
		return ONNX_FALLBACK;
	if (matmul_geom(c, a, b, &g) || !g.m || !g.k || !g.nn || !g.batch ||
	    (size_t)(g.batch * g.m * g.k) != a->count)
		return ONNX_FALLBACK;
	s->kind = CS_GEMM;
	s->M = g.batch * g.m;
	s->K = g.k;
	s->N = g.nn;
	s->b_off = UINT64_MAX;
	s->in[1] = c->n->in[1];
	s->scale = 1.0f;
	if (accel_gemm_query(cm->dev, s->M, s->K, s->N, false, false, false, ACCEL_ACT_NONE, 0.0f, 0.0f, 1.0f, s->why,
			     sizeof(s->why)))
		return ONNX_FALLBACK;	/* libaccel refused it (#27): a host step, with its reason */
	/* a weight-only quantised weight stays packed on a device with the decompressing load */
	if ((ret = cm_wq_lower(cm, c->n, s)) < 0)
		return ret;
	if (ret == ONNX_FALLBACK && (ret = weight_of(cm, c->n->in[1], &s->w_off)))
		return ret;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, g.out_ndim, g.out_dims) ? -ENOMEM : 0;
}

/* The conditions of the node-by-node device pooling (ops_accel.c). */
static int lower_pool(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, int kind, bool global)
{
	const struct onnx_node *n = c->n;
	struct pool_geom g;
	int64_t od[ONNX_MAX_DIMS];
	unsigned ond;

	if (!is_f32_act(cm, n->in[0]) || pool_geom(c, node_in(c, 0), global, &g))
		return ONNX_FALLBACK;
	s->pb = g.win.pb + g.win.ceil_extra_h;
	s->pr = g.win.pr + g.win.ceil_extra_w;
	if (g.win.dh != 1 || g.win.dw != 1)
		return ONNX_FALLBACK;
	{
		enum accel_pool_kind k = (enum accel_pool_kind)kind;

		if (k == ACCEL_POOL_AVG && pool_avg_kind(n, &g, &k))
			return ONNX_FALLBACK;
		kind = (int)k;
	}
	/* libaccel decides what the device runs (#27 B3): a refused pool is a host step, with its reason */
	if (accel_pool_query(cm->dev, &g, (enum accel_pool_kind)kind, s->why, sizeof(s->why)))
		return ONNX_FALLBACK;
	s->kind = CS_POOL;
	s->op = kind;
	s->n = g.n, s->c = g.c, s->h = g.h, s->w = g.w, s->oh = g.win.oh, s->ow = g.win.ow;
	s->kh = g.win.kh, s->kw = g.win.kw, s->sh = g.win.sh, s->sw = g.win.sw, s->pt = g.win.pt, s->pl = g.win.pl;
	pool_out_dims(&g, od, &ond);
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, ond, od) ? -ENOMEM : 0;
}

/*
 * ReduceMean over H and W of a 4-D fp32 activation (torchvision's x.mean([2, 3]), ShuffleNetV2's head)
 * is a global average pool: a CS_POOL step, which the layout pass may run NHWC (as a host step it read
 * NCHW, so the convolution before it stored its output transposed).  keepdims 0: [N, C], the same
 * bytes as [N, C, 1, 1].
 */
static int lower_spatial_mean(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	struct onnx_tensor *y;
	int64_t axes[ONNX_MAX_DIMS], od[2];
	bool h = false, w = false;
	int cnt, ret;

	if (!x || x->ndim != 4 || n->n_in != 1 || cm->m->opset >= 18)
		return ONNX_FALLBACK;	/* opset 18: axes is an input */
	cnt = attr_ints(n->pb, "axes", axes, ONNX_MAX_DIMS);
	if (cnt != 2)
		return ONNX_FALLBACK;
	for (int i = 0; i < cnt; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + 4 : axes[i];

		h |= a == 2;
		w |= a == 3;
	}
	if (!h || !w)
		return ONNX_FALLBACK;
	ret = lower_pool(cm, c, s, ACCEL_POOL_AVG, true);
	if (ret || attr_int(n->pb, "keepdims", 1))
		return ret;
	y = node_out(c, 0);
	od[0] = x->dims[0];
	od[1] = x->dims[1];
	onnx_tensor_release(y);
	return onnx_tensor_alloc(y, ONNX_FLOAT, 2, od) ? -ENOMEM : 0;
}

/* Numpy broadcasting of two fp32 operands of rank <= 4, as 4-D shapes. */
/*
 * Operands of rank r > 4 (a video model's 5-D residual Add): adjacent dimensions where each operand is
 * full in both or 1 in both merge, the same bytes; the step takes the result if it has at most 4
 * dimensions left (right-aligned, leading 1s), else the host does.  (Ranks <= 4 keep their NCHW dimensions:
 * the layout pass reads them.)
 */
static bool collapse_broadcast(const struct onnx_tensor *a, const struct onnx_tensor *b, unsigned r, int64_t *od,
			       struct cstep *s)
{
	int64_t ca[ONNX_MAX_DIMS], cb[ONNX_MAX_DIMS], co[ONNX_MAX_DIMS];
	unsigned k = 0;

	for (unsigned i = 0; i < r; i++) {
		int64_t da = i + a->ndim >= r ? a->dims[i + a->ndim - r] : 1;
		int64_t db = i + b->ndim >= r ? b->dims[i + b->ndim - r] : 1;
		int64_t o = da > db ? da : db;

		if (da != db && da != 1 && db != 1)
			return false;	/* the host step reports it */
		od[i] = o;
		if (o == 1)
			continue;
		if (k && (ca[k - 1] == co[k - 1]) == (da == o) && (cb[k - 1] == co[k - 1]) == (db == o)) {
			ca[k - 1] *= da, cb[k - 1] *= db, co[k - 1] *= o;
		} else {
			if (k == 4)
				return false;
			ca[k] = da, cb[k] = db, co[k] = o;
			k++;
		}
	}
	for (unsigned i = 0; i < 4; i++) {
		bool lead = i < 4 - k;

		if (!lead && (co[i - (4 - k)] > UINT32_MAX))
			return false;
		s->ad[i] = lead ? 1 : (uint32_t)ca[i - (4 - k)];
		s->bd[i] = lead ? 1 : (uint32_t)cb[i - (4 - k)];
		s->od[i] = lead ? 1 : (uint32_t)co[i - (4 - k)];
	}
	return true;
}

static int lower_elt(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s, int op)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *a = node_in(c, 0), *b = node_in(c, 1);
	int64_t od[ONNX_MAX_DIMS];
	unsigned nd;
	int ret;

	if (!(cm->geom[6] & (1u << 15)) || n->n_in != 2 || !a || !b || a->dtype != ONNX_FLOAT ||
	    b->dtype != ONNX_FLOAT || !a->count || !b->count)
		return ONNX_FALLBACK;
	if (!is_f32_act(cm, n->in[0]) && !is_f32_act(cm, n->in[1]))
		return ONNX_FALLBACK;
	nd = a->ndim > b->ndim ? a->ndim : b->ndim;
	if (nd > 4) {
		if (!collapse_broadcast(a, b, nd, od, s))
			return ONNX_FALLBACK;
	} else {
		for (unsigned i = 0; i < 4; i++) {
			int64_t da = i + a->ndim >= 4 ? a->dims[i + a->ndim - 4] : 1;
			int64_t db = i + b->ndim >= 4 ? b->dims[i + b->ndim - 4] : 1;

			if (da != db && da != 1 && db != 1)
				return ONNX_FALLBACK;	/* the host step reports it */
			s->ad[i] = (uint32_t)da;
			s->bd[i] = (uint32_t)db;
			s->od[i] = (uint32_t)(da > db ? da : db);
			od[i] = s->od[i];
		}
	}
	s->b_off = UINT64_MAX;
	if ((op == ACCEL_ELT_DIV || op == ACCEL_ELT_PRELU || op == ACCEL_ELT_POW) && !has_vmath(cm))
		return ONNX_FALLBACK;
	if (op == -1 && !is_f32_const(cm->m, n->in[1]))	/* Div of activations: VEC math's DIV */
		op = ACCEL_ELT_DIV;
	if (op == ACCEL_ELT_DIV && !has_vmath(cm))
		return ONNX_FALLBACK;
	if (op == -1) {	/* Div by a constant: Mul by its reciprocals, packed here */
		float *rc;

		if (!is_f32_act(cm, n->in[0]))
			return ONNX_FALLBACK;
		s->b_off = cm_wimg_add(cm, NULL, (uint64_t)b->count * 4);
		if (s->b_off == UINT64_MAX)
			return cm_seterr(cm, -ENOMEM, "weights: out of memory");
		rc = (float *)(cm->wimg + s->b_off);
		for (size_t i = 0; i < b->count; i++)
			rc[i] = 1.0f / ((const float *)b->data)[i];
		op = ACCEL_ELT_MUL;
	}
	for (unsigned k = 0; k < 2; k++)
		if (s->b_off == UINT64_MAX && cm->m->vals[n->in[k]].is_const &&
		    (ret = weight_of(cm, n->in[k], &s->w_off)))
			return ret;
	s->kind = CS_ELT;
	s->op = op;
	s->in[1] = n->in[1];
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, nd, nd > 4 ? od : od + 4 - nd) ? -ENOMEM : 0;
}

static int lower_act(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);

	if (!is_f32_act(cm, n->in[0]) || !x->count)
		return ONNX_FALLBACK;
	if (n->op == OP_CLIP) {
		for (unsigned i = 1; i < n->n_in; i++)
			if (n->in[i] >= 0 && !cm->m->vals[n->in[i]].is_const)
				return ONNX_FALLBACK;
		if (clip_runtime_bounds(c, &s->lo, &s->hi) || !(s->lo <= s->hi))
			return ONNX_FALLBACK;
		s->act = ACCEL_ACT_CLAMP;
	} else {
		s->act = ACCEL_ACT_RELU;
	}
	s->kind = CS_ACT;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}


/* The vector units' fp32 functions (vec_act.h; their maximum errors: hardware/vector-units.md, <= 6e-7),
 * the attributes in lo (alpha) and hi (beta). */
static int lower_vact(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	struct vec_act va;

	if (!has_isa2(cm) || !is_f32_act(cm, n->in[0]) || !x->count || x->count > UINT32_MAX ||
	    vec_act_of(n, &va) || (va.vmath && !has_vmath(cm)))
		return ONNX_FALLBACK;
	s->act = va.act;
	s->lo = va.alpha;
	s->hi = va.beta;
	s->kind = CS_ACT;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}

/* Softmax / LayerNormalization over the last axis of an fp32 tensor: a rows x cols matrix. */
static int lower_rows(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t def = n->op != OP_LAYERNORM && cm->m->opset < 13 ? 1 : -1;
	int64_t axis = n->op == OP_LAYERNORM ? layernorm_axis(n) : attr_int(n->pb, "axis", def);
	int ret;

	if (!has_isa2(cm) || !is_f32_act(cm, n->in[0]) || !x->ndim || !x->count ||
	    (n->op == OP_LOGSOFTMAX && !has_vmath(cm)))
		return ONNX_FALLBACK;
	if (axis < 0)
		axis += x->ndim;
	/* LayerNormalization normalises over the axes axis..r-1, Softmax before opset 13 over the 2-D view
	 * at axis: both the rows x cols matrix of the dimensions before and from axis */
	if (axis < 0 || axis >= (int64_t)x->ndim ||
	    (axis != (int64_t)x->ndim - 1 && n->op != OP_LAYERNORM && cm->m->opset >= 13))
		return ONNX_FALLBACK;
	s->N = 1;
	for (unsigned d = (unsigned)axis; d < x->ndim; d++)
		s->N *= x->dims[d];
	s->M = (int64_t)(x->count / (size_t)s->N);
	if (s->M > UINT32_MAX || s->N > UINT32_MAX)
		return ONNX_FALLBACK;
	if (n->op == OP_LAYERNORM) {
		const struct onnx_tensor *g = node_in(c, 1), *b = node_in(c, 2);

		if (n->n_out > 1 || !is_f32_const(cm->m, n->in[1]) || g->count != (size_t)s->N ||
		    (b && (!is_f32_const(cm->m, n->in[2]) || b->count != (size_t)s->N)) ||
		    attr_int(n->pb, "stash_type", 1) != 1)
			return ONNX_FALLBACK;
		s->scale = layernorm_epsilon(n);
		if ((ret = weight_of(cm, n->in[1], &s->w_off)))
			return ret;
		s->b_off = UINT64_MAX;
		if (b && (ret = weight_of(cm, n->in[2], &s->b_off)))
			return ret;
		s->kind = CS_LAYERNORM;
	} else {
		s->kind = CS_SOFTMAX;
		s->op = n->op == OP_LOGSOFTMAX;	/* accel_log_softmax */
	}
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, x->ndim, x->dims) ? -ENOMEM : 0;
}

/* Transpose whose dimensions, after dropping 1s and merging the runs the permutation keeps together,
 * are at most 4 (cm_transpose_collapse: ShuffleNet's 5-D channel shuffle is a 3-D one); any 4-byte or
 * 1-byte type the DMA moves as FP32 / INT8. */
static int lower_transpose(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	int64_t perm[ONNX_MAX_DIMS], od[ONNX_MAX_DIMS];
	unsigned r;
	int np;

	if (!has_isa2(cm) || !is_f32_act(cm, n->in[0]) || x->ndim > ONNX_MAX_DIMS || x->ndim < 2 || !x->count)
		return ONNX_FALLBACK;
	r = x->ndim;
	np = attr_ints(n->pb, "perm", perm, ONNX_MAX_DIMS);
	if (np < 0)
		for (unsigned d = 0; d < r; d++)
			perm[d] = r - 1 - d;
	else if (np != (int)r)
		return ONNX_FALLBACK;
	for (unsigned d = 0, seen = 0; d < r; d++) {
		if (perm[d] < 0 || perm[d] >= r || (seen & (1u << perm[d])))
			return ONNX_FALLBACK;	/* the host step reports it */
		seen |= 1u << perm[d];
		od[d] = x->dims[perm[d]];
	}
	if (cm_transpose_collapse(x->dims, r, perm, s->ad, s->bd))
		return ONNX_FALLBACK;
	for (unsigned d = 0; d < 4; d++)
		s->od[d] = s->ad[s->bd[d]];
	s->kind = CS_TRANSPOSE;
	return onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, r, od) ? -ENOMEM : 0;
}

/* Value v is read by no live node and is no graph output: an optional output nobody wants (Swin's
 * Dropouts name their mask). */
static bool value_unused(const struct onnx_model *m, int v)
{
	const int *c;
	unsigned n;

	if (!m->refs || onnx_graph_output_uses(m, v))
		return false;
	c = onnx_consumers(m, v, &n);
	for (unsigned i = 0; i < n; i++)
		if (!m->nodes[c[i]].folded)
			return false;
	return true;
}

static bool is_alias_op(enum onnx_op op)
{
	return op == OP_RESHAPE || op == OP_FLATTEN || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_IDENTITY ||
	       op == OP_DROPOUT;
}

/* Lower node i (its inputs hold probe tensors); the output probe tensors are allocated. */
int cm_lower_node(struct onnx_compiled *cm, unsigned i, struct cstep *s)
{
	struct onnx_model *m = cm->m;
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = cm_probe_ctx(cm, i, msg);
	const struct onnx_node *n = c.n;
	int ret = ONNX_FALLBACK;

	memset(s, 0, sizeof(*s));
	s->node = (int)i;
	s->in[0] = n->n_in ? n->in[0] : -1;
	s->in[1] = -1;
	s->out = n->n_out ? n->out[0] : -1;
	s->kind = CS_HOST;
	if (cm->qrole && (ret = cm_qdq_lower(cm, i, s)) != ONNX_FALLBACK)
		return ret;
	if (n->n_out != 1 && !(n->op == OP_DROPOUT && n->n_out >= 1))
		goto host;
	switch (n->op) {
	case OP_CONV:
		ret = lower_conv(cm, &c, s);
		break;
	case OP_GEMM:
		ret = lower_gemm(cm, &c, s);
		break;
	case OP_MATMUL:
		ret = lower_matmul(cm, &c, s);
		break;
	case OP_MAXPOOL:
		ret = lower_pool(cm, &c, s, ACCEL_POOL_MAX, false);
		break;
	case OP_AVGPOOL:
		ret = lower_pool(cm, &c, s, ACCEL_POOL_AVG, false);
		break;
	case OP_GLOBALAVGPOOL:
		ret = lower_pool(cm, &c, s, ACCEL_POOL_AVG, true);
		break;
	case OP_GLOBALMAXPOOL:
		ret = lower_pool(cm, &c, s, ACCEL_POOL_MAX, true);
		break;
	case OP_ADD:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_ADD);
		break;
	case OP_SUB:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_SUB);
		break;
	case OP_MUL:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_MUL);
		break;
	case OP_DIV:
		ret = cm_lower_rownorm(cm, &c, s);	/* Div(1, Sqrt(y)): RSQRT */
		if (ret == ONNX_FALLBACK)
			ret = lower_elt(cm, &c, s, -1);
		break;
	case OP_REDUCEMEAN:
		ret = lower_spatial_mean(cm, &c, s);
		if (ret == ONNX_FALLBACK)
			ret = cm_lower_rownorm(cm, &c, s);
		if (ret == ONNX_FALLBACK)
			ret = cm_lower_reduce(cm, &c, s);
		break;
	case OP_REDUCESUM:
	case OP_REDUCEMAX:
	case OP_REDUCESUMSQUARE:
		ret = cm_lower_reduce(cm, &c, s);
		break;
	case OP_POW:
		ret = cm_lower_rownorm(cm, &c, s);
		if (ret == ONNX_FALLBACK)
			ret = lower_elt(cm, &c, s, ACCEL_ELT_POW);
		break;
	case OP_NEG:
	case OP_SQRT:
		ret = cm_lower_rownorm(cm, &c, s);
		if (ret == ONNX_FALLBACK)
			ret = lower_vact(cm, &c, s);
		break;
	case OP_PRELU:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_PRELU);
		break;
	case OP_REDUCEMIN:
	case OP_REDUCEPROD:
	case OP_REDUCEL1:
	case OP_REDUCEL2:
	case OP_REDUCELOGSUM:
	case OP_REDUCELOGSUMEXP:
		ret = cm_lower_reduce(cm, &c, s);
		break;
	case OP_MAX:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_MAX);
		break;
	case OP_MIN:
		ret = lower_elt(cm, &c, s, ACCEL_ELT_MIN);
		break;
	case OP_RELU:
	case OP_CLIP:
		ret = lower_act(cm, &c, s);
		break;
	case OP_SIGMOID:
	case OP_TANH:
	case OP_EXP:
	case OP_ERF:
	case OP_GELU:
	case OP_HARDSIGMOID:
	case OP_HARDSWISH:
	case OP_RECIPROCAL:
	case OP_LOG:
	case OP_ABS:
	case OP_FLOOR:
	case OP_CEIL:
	case OP_ROUND:
	case OP_SIGN:
	case OP_LEAKYRELU:
	case OP_ELU:
	case OP_SELU:
	case OP_THRESHOLDEDRELU:
	case OP_SOFTPLUS:
	case OP_SOFTSIGN:
		ret = lower_vact(cm, &c, s);
		break;
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
	case OP_LAYERNORM:
		ret = lower_rows(cm, &c, s);
		break;
	case OP_TRANSPOSE:
		ret = lower_transpose(cm, &c, s);
		break;
	case OP_BATCHNORM:
		ret = cm_lower_bn(cm, &c, s);
		break;
	default:
		break;
	}
	if (ret < 0)
		return ret == -ENOMEM && !cm->err[0] ? cm_seterr(cm, ret, "node '%s': out of memory", node_name(m, i))
						      : ret;
	if (ret == 0) {
		s->why[0] = 0;	/* an earlier pattern's refusal, not this step's */
		if (!s->reason)
			s->reason = "device step of the plan";
		return 0;
	}
	{
		char why[sizeof(s->why)];

		memcpy(why, s->why, sizeof(why));	/* libaccel's refusal, if it was asked */
		memset(s, 0, sizeof(*s));
		memcpy(s->why, why, sizeof(why));
	}
	s->node = (int)i;
	s->in[0] = n->n_in ? n->in[0] : -1;
	s->in[1] = -1;
	s->out = n->n_out ? n->out[0] : -1;
host:
	/* the probe runs the host kernel on zero data: output shapes and types */
	for (unsigned k = 0; k < n->n_out; k++)
		if (n->out[k] >= 0)
			onnx_tensor_release(node_out(&c, k));
	ret = onnx_run_node(&c);
	if (ret)
		return cm_seterr(cm, ret, "compile: %s", msg);
	/* Dropout is a view of its input in inference only: not with a mask to compute (all true; a mask
	 * nobody reads is not computed) nor with a training_mode or ratio the run gives (its host kernel
	 * refuses training mode unless the ratio is 0) */
	if (is_alias_op(n->op) &&
	    (n->op != OP_DROPOUT ||
	     ((n->n_out < 2 || n->out[1] < 0 || value_unused(m, n->out[1])) && (n->n_in < 3 || cm_is_const(cm, n->in[2])) &&
				     (n->n_in < 2 || n->in[1] < 0 || cm_is_const(cm, n->in[1])))) &&
	    n->in[0] >= 0 && !m->vals[n->in[0]].is_const && n->out[0] >= 0 &&
	    cm->probe[n->in[0]].dtype == node_out(&c, 0)->dtype && cm->probe[n->in[0]].count == node_out(&c, 0)->count) {
		s->kind = CS_ALIAS;
		s->reason = "a view of its input (addressing, no step)";
	} else {
		s->kind = CS_HOST;
		s->reason = NULL;	/* onnx_compiled_step_info gives the placement's reason (libaccel's refusal
					 * in s->why, else the node's) */
	}
	return 0;
}

/* Fusion: an Add/Sub/Mul/Max/Min step whose only consumer is a Relu takes the Relu into its step. */
void cm_fuse_elt_relu(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;

	for (unsigned i = 0; i < cm->n_steps; i++) {
		struct cstep *s = &cm->steps[i];
		int consumer = -1, uses = 0;

		if (s->kind != CS_ELT || s->act)
			continue;
		for (unsigned o = 0; o < m->n_outputs; o++)
			if (m->outputs[o] == s->out)
				uses += 2;
		for (unsigned j = i + 1; j < cm->n_steps; j++) {
			const struct onnx_node *n = &m->nodes[cm->steps[j].node];

			for (unsigned k = 0; k < n->n_in; k++)
				if (n->in[k] == s->out) {
					uses++;
					consumer = (int)j;
				}
		}
		if (uses != 1 || cm->steps[consumer].kind != CS_ACT || cm->steps[consumer].act != ACCEL_ACT_RELU)
			continue;
		s->act = ACCEL_ACT_RELU;
		s->out = cm->steps[consumer].out;
		cm->steps[consumer].kind = CS_FUSED;
		cm->steps[consumer].reason = "fused into the element-wise step before it (SFU ReLU)";
	}
}
