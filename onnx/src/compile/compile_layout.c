/* SPDX-License-Identifier: MIT */
/*
 * compile_layout.c - the compiler's layout pass (Documentation/onnx.md, "The compiler"): which 4-D
 * activations live channels-last (NHWC) in the arena.
 *
 * The device's convolution lowerings are much faster on NHWC operands (the direct lowering, the
 * depthwise block and IM2COL's channel runs all need the channels contiguous; on NCHW a ResNet-18 at
 * 224x224 ran at 0.53 PE utilisation, its 7x7 stem at 0.14), so every activation whose producer and
 * consumers can all take NHWC is planned NHWC:
 *  - values that must share a layout are grouped (union-find): a pooling step's input and output, the
 *    operands of an activation (flat, equally shaped arrays: either layout unchanged) and the operands
 *    of an element-wise step that have its output's shape (elt_takes(): a broadcast operand with one
 *    spatial position or one channel, such as a squeeze-and-excite gate, is read in its own layout);
 *  - a group is NHWC when every member is a 4-D fp32 or int8 arena value produced by a convolution,
 *    pooling, element-wise step, activation, or is a graph input or a host step's result (the host
 *    transposes it while copying it in; such a value alone in its group only when a convolution
 *    reading it also writes NHWC), and
 *    every reader is a convolution (its input), a pooling step, an activation or an element-wise step
 *    whose other operands have its shape or a layout-free broadcast shape; graph outputs, views (Reshape/Flatten & co), host steps and
 *    every other step keep NCHW;
 *  - int8 QDQ steps (compile_qdq.c) likewise: CS_QCONV is a convolution (a max pool before it, and its
 *    int32 accumulators before accel_requant, take its input's / output's layout), CS_QPOOL a pooling
 *    step, CS_QADD an element-wise step (flat operands and scratch); they read the int8 inputs of their
 *    DQ nodes (the step's in[]), not their graph node's float inputs; CS_QGEMM and a view of an int8
 *    value read NCHW, and a Q/DQ folded into a step (CS_QFUSED) reads and writes nothing;
 *  - views and Concat parts (compile_views.c) and their roots keep NCHW (a channel block is a byte range
 *    only there), except an in-place channel Concat of fp32 convolution outputs (nhwc_concats()): its
 *    parts become channel slices of every NHWC pixel of the root;
 *  - a value with one spatial position (H = W = 1) or one channel has the same bytes in both layouts:
 *    it never holds its group back, whatever reads it;
 *  - a Flatten/Reshape of a whole 4-D value to [N, C*H*W] that only fp32 GEMMs read as their A operand,
 *    with constant weights that nothing else reads (a CNN's classifier), does not hold its value back
 *    either: the view is then [N, H*W*C] and those weights are permuted along K (C,H,W -> H,W,C order)
 *    at compile time, so the last convolution and pooling stay NHWC and store no transposed output.
 * The weights of a convolution whose input is NHWC are repacked OIHW -> OHWI in the weight image (in
 * place when every convolution that reads them is NHWC, else as a copy; fp32 or int8 elements).
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"

static int find(int *p, int v)
{
	while (p[v] != v) {
		p[v] = p[p[v]];
		v = p[v];
	}
	return v;
}

static void join(int *p, int a, int b)
{
	if (a < 0 || b < 0)
		return;
	a = find(p, a);
	b = find(p, b);
	if (a != b)
		p[a] = b;
}

/* The host writes v into the arena (arena_copy in compiled_run.c): a graph input or a host step's result. */
static bool copied_in(const struct onnx_compiled *cm, int v)
{
	const struct onnx_model *m = cm->m;

	for (unsigned i = 0; i < m->n_inputs; i++)
		if (m->inputs[i] == v)
			return true;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct onnx_node *n = &m->nodes[cm->steps[i].node];

		if (cm->steps[i].kind == CS_HOST)
			for (unsigned k = 0; k < n->n_out; k++)
				if (n->out[k] == v)
					return true;
	}
	return false;
}

/* A 4-D fp32 activation, or an int8 one (UINT8 is stored as INT8 in the arena: compile_qdq.c). */
static bool is4a(const struct cval *cv)
{
	return cv->loc == LOC_ARENA && cv->ndim == 4 &&
	       (cv->dtype == ONNX_FLOAT || cv->dtype == ONNX_INT8 || cv->dtype == ONNX_UINT8);
}

static bool is_conv(enum cstep_kind k)
{
	return k == CS_CONV || k == CS_QCONV;
}

/* Same bytes in NCHW and NHWC. */
static bool layout_free(const struct cval *cv)
{
	return cv->ndim == 4 && ((cv->dims[2] == 1 && cv->dims[3] == 1) || cv->dims[1] == 1);
}

static bool same4(const uint32_t *a, const uint32_t *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/*
 * An element-wise step runs in NHWC when each operand either has the output's shape (an arena value,
 * read with the output's layout) or a layout-free broadcast shape: one spatial position ([N|1, C, 1, 1]:
 * a squeeze-and-excite gate, a per-channel constant) or one channel (a scalar, [N, 1, H, W]).  Those
 * have the same bytes in NCHW and NHWC, and the step describes each operand in its own layout
 * (compiled_run.c), so the vector units broadcast the per-channel vector, contiguous over C, along
 * H and W; every output element is the same single fp32 operation as in the NCHW plan.
 */
static bool elt_takes(const struct onnx_compiled *cm, const struct cstep *s)
{
	if (cm->vals[s->out].ndim != 4)
		return false;	/* ad/bd/od are not NCHW dimensions (a collapsed 5-D step, compile_lower.c) */
	for (unsigned k = 0; k < 2; k++) {
		const uint32_t *d = k ? s->bd : s->ad;
		bool packed = k == 1 && s->b_off != UINT64_MAX;	/* a Div's reciprocals, a BatchNorm's s */
		int v = s->in[k];

		if (same4(d, s->od)) {
			if (packed || v < 0 || cm->vals[v].loc != LOC_ARENA)
				return false;	/* a full constant would need repacking */
		} else if (!((d[2] == 1 && d[3] == 1) || d[1] == 1)) {
			return false;
		} else if (!packed && (v < 0 || (cm->vals[v].loc != LOC_ARENA && cm->vals[v].loc != LOC_WEIGHT))) {
			return false;
		}
	}
	return true;
}

/* OIHW -> OHWI of k x cg x kh x kw elements of esz bytes (fp32 or int8) at off. */
static int repack_ohwi(struct onnx_compiled *cm, uint64_t dst, uint64_t src, const struct cstep *s, unsigned esz)
{
	uint64_t hw = (uint64_t)s->kh * s->kw, per = (uint64_t)s->cg * hw;
	uint8_t *tmp = malloc(per ? per * esz : esz);

	if (!tmp)
		return cm_seterr(cm, -ENOMEM, "layout: out of memory");
	for (int64_t o = 0; o < s->k; o++) {
		const uint8_t *in = cm->wimg + src + o * per * esz;
		uint8_t *out = cm->wimg + dst + o * per * esz;

		for (int64_t c = 0; c < s->cg; c++)
			for (uint64_t t = 0; t < hw; t++)
				memcpy(tmp + (t * s->cg + c) * esz, in + (c * hw + t) * esz, esz);
		memcpy(out, tmp, per * esz);
	}
	free(tmp);
	return 0;
}

static int repack_weights(struct onnx_compiled *cm)
{
	for (unsigned i = 0; i < cm->n_steps; i++) {
		struct cstep *s = &cm->steps[i];
		bool all_nhwc = true, first = true;
		unsigned esz = s->kind == CS_QCONV ? 1 : 4;
		uint64_t off = s->w_off, bytes = (uint64_t)s->k * s->cg * s->kh * s->kw * esz;
		int ret;

		/* a CS_QCONV with a max pool first convolves that pool's output (laid out like in[0]) */
		if (!is_conv(s->kind) || !cm->vals[s->in[0]].nhwc || s->kh * s->kw == 1 || s->cg == 1)
			continue;	/* 1x1 and depthwise filters: OIHW and OHWI are the same bytes */
		for (unsigned j = 0; j < cm->n_steps; j++)
			if (cm->steps[j].kind == s->kind && cm->steps[j].w_off == off) {
				bool nhwc = cm->vals[cm->steps[j].in[0]].nhwc != 0;

				all_nhwc &= nhwc;
				first &= !nhwc || j >= i;
			}
		if (!first)
			continue;	/* repacked with the first NHWC convolution that reads them */
		if (all_nhwc) {
			if ((ret = repack_ohwi(cm, off, off, s, esz)))
				return ret;
			continue;
		}
		{
			uint64_t copy = cm_wimg_add(cm, NULL, bytes);

			if (copy == UINT64_MAX)
				return cm_seterr(cm, -ENOMEM, "weights: out of memory");
			if ((ret = repack_ohwi(cm, copy, off, s, esz)))
				return ret;
			for (unsigned q = i; q < cm->n_steps; q++)
				if (cm->steps[q].kind == s->kind && cm->steps[q].w_off == off &&
				    cm->vals[cm->steps[q].in[0]].nhwc)
					cm->steps[q].w_off = copy;
		}
	}
	return 0;
}

/* Does step j read value v (as an operand of its graph node or of the step)? */
static bool step_reads(const struct onnx_compiled *cm, unsigned j, int v)
{
	const struct cstep *s = &cm->steps[j];
	const struct onnx_node *n = &cm->m->nodes[s->node];

	if (s->kind == CS_FUSED || s->kind == CS_QFUSED)
		return false;
	for (unsigned k = 0; k < n->n_in; k++)
		if (n->in[k] == v)
			return true;
	return s->in[0] == v || s->in[1] == v || s->res == v;
}

/*
 * The alias step `a` views its whole 4-D input as [N, C*H*W], and every reader of that view is an fp32
 * GEMM taking it as A (not transposed) with constant weights read by nothing but such GEMMs: the input
 * may be NHWC, the weights then permuted along K (flat_permute()).
 */
static bool flat_to_gemm(const struct onnx_compiled *cm, unsigned a)
{
	const struct cstep *s = &cm->steps[a];
	const struct cval *in, *v;
	bool any = false;

	if (s->kind != CS_ALIAS || s->in[0] < 0 || s->out < 0)
		return false;
	in = &cm->vals[s->in[0]];
	v = &cm->vals[s->out];
	if (!is4a(in) || in->dtype != ONNX_FLOAT || in->root != s->in[0] || v->ndim != 2 || v->voff ||
	    v->dims[0] != in->dims[0] || v->dims[1] != in->dims[1] * in->dims[2] * in->dims[3])
		return false;
	for (unsigned o = 0; o < cm->m->n_outputs; o++)
		if (cm->m->outputs[o] == s->out || cm->m->outputs[o] == s->in[0])
			return false;
	for (unsigned j = 0; j < cm->n_steps; j++) {
		const struct cstep *g = &cm->steps[j];

		if (j == a || !step_reads(cm, j, s->out))
			continue;
		if (g->kind != CS_GEMM || g->in[0] != s->out || g->ta || g->res == s->out || g->in[1] < 0 ||
		    g->in[1] == s->out || cm->vals[g->in[1]].loc != LOC_WEIGHT || !cm->m->vals[g->in[1]].is_const ||
		    g->K != v->dims[1] ||
		    g->M != v->dims[0])
			return false;
		/* the weights: read only by GEMMs that read this view */
		for (unsigned q = 0; q < cm->n_steps; q++)
			if (step_reads(cm, q, g->in[1]) &&
			    (cm->steps[q].kind != CS_GEMM || cm->steps[q].in[0] != s->out || cm->steps[q].in[1] != g->in[1]))
				return false;
		any = true;
	}
	return any;
}

/* Permute the K rows (or, transposed, columns) of the weights of the GEMMs reading alias a's view from
 * C,H,W order to H,W,C order, once per weight value. */
static int flat_permute(struct onnx_compiled *cm, unsigned a)
{
	const struct cstep *s = &cm->steps[a];
	const struct cval *in = &cm->vals[s->in[0]];
	uint64_t C = (uint64_t)in->dims[1], H = (uint64_t)in->dims[2], W = (uint64_t)in->dims[3], K = C * H * W;
	int *done = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(int));
	unsigned n_done = 0;

	if (!done)
		return cm_seterr(cm, -ENOMEM, "layout: out of memory");
	for (unsigned j = 0; j < cm->n_steps; j++) {
		const struct cstep *g = &cm->steps[j];
		uint64_t N = (uint64_t)g->N, rows = g->tb ? N : 1, cols = g->tb ? 1 : N;
		bool seen = false;
		float *w, *tmp;

		if (j == a || g->kind != CS_GEMM || g->in[0] != s->out)
			continue;
		for (unsigned d = 0; d < n_done; d++)
			seen |= done[d] == g->in[1];
		if (seen)
			continue;
		done[n_done++] = g->in[1];
		w = (float *)(void *)(cm->wimg + cm->vals[g->in[1]].off);
		tmp = malloc(K * cols * sizeof(float));
		if (!tmp) {
			free(done);
			return cm_seterr(cm, -ENOMEM, "layout: out of memory");
		}
		/* tb: N rows of K; else K rows of N. Element k = (c*H + h)*W + x moves to (h*W + x)*C + c. */
		for (uint64_t r = 0; r < rows; r++) {
			float *base = w + r * K * cols;

			for (uint64_t c = 0; c < C; c++)
				for (uint64_t hw = 0; hw < H * W; hw++)
					memcpy(tmp + (hw * C + c) * cols, base + (c * H * W + hw) * cols, cols * sizeof(float));
			memcpy(base, tmp, K * cols * sizeof(float));
		}
		free(tmp);
	}
	free(done);
	return 0;
}

/*
 * Is value v (a view, root != v) channels [c0, c0 + C) of its batch-1 4-D fp32 root, with the root's
 * H and W?  In NCHW that is a contiguous block at voff = c0 * H * W * 4 (an in-place Concat part).
 */
static bool chan_slice(const struct onnx_compiled *cm, int v, uint64_t *c0)
{
	const struct cval *cv = &cm->vals[v], *r;
	uint64_t plane;

	if (cv->loc != LOC_ARENA || cv->root < 0 || cv->root == v || !is4a(cv) || cv->dtype != ONNX_FLOAT)
		return false;
	r = &cm->vals[cv->root];
	if (!is4a(r) || r->dtype != ONNX_FLOAT || r->root != cv->root || r->voff || r->dims[0] != 1 ||
	    cv->dims[0] != 1 || cv->dims[2] != r->dims[2] || cv->dims[3] != r->dims[3])
		return false;
	plane = (uint64_t)r->dims[2] * (uint64_t)r->dims[3] * 4;
	if (!plane || cv->voff % plane)
		return false;
	*c0 = cv->voff / plane;
	return *c0 + (uint64_t)cv->dims[1] <= (uint64_t)r->dims[1];
}

static bool is_concat(const struct onnx_compiled *cm, const struct cstep *s)
{
	return s->kind == CS_ALIAS && cm->m->nodes[s->node].op == OP_CONCAT;
}

/*
 * An in-place Concat along the channels (compile_views.c) whose parts are written only by fp32
 * convolutions and read only by zero-copy Concats can be NHWC too: in NHWC part k is channels
 * [c0, c0 + C) of every pixel of the root, an output whose pixel stride is the root's channel count,
 * which accel_conv2d writes directly (an NHWC output "packed over N, H, W with contiguous channels").
 * Without this every fire module of a SqueezeNet (and every Inception block) kept NCHW, and each
 * expansion convolution stored its output transposed, one element per DMA cycle: 196 389 cycles for
 * a 1x1 convolution of 3.1 M MACs.  Marks the root and its views in nhc[].
 */
static void nhwc_concats(const struct onnx_compiled *cm, bool *nhc)
{
	unsigned nv = cm->n_vals;

	for (unsigned r = 0; r < nv; r++) {
		const struct cval *rv = &cm->vals[r];
		bool ok = true, any = false;

		if (rv->loc != LOC_ARENA || rv->root != (int)r || !is4a(rv) || rv->dtype != ONNX_FLOAT)
			continue;
		for (unsigned v = 0; v < nv && ok; v++) {
			uint64_t c0;

			if (v == r || cm->vals[v].loc != LOC_ARENA || cm->vals[v].root != (int)r)
				continue;
			any = true;
			ok = chan_slice(cm, (int)v, &c0);
			for (unsigned o = 0; o < cm->m->n_outputs && ok; o++)
				ok = cm->m->outputs[o] != (int)v;
			for (unsigned j = 0; j < cm->n_steps && ok; j++) {
				const struct cstep *s = &cm->steps[j];

				if (s->kind == CS_FUSED || s->kind == CS_QFUSED)
					continue;
				if (s->out == (int)v && (s->kind != CS_CONV || s->res >= 0))
					ok = false;	/* a copy, a pool, a host step, ... writes it */
				else if (s->out != (int)v && step_reads(cm, j, (int)v) && !is_concat(cm, s))
					ok = false;	/* read as a whole buffer of its own */
			}
		}
		/* the root itself: written by no step (its parts are) */
		for (unsigned j = 0; j < cm->n_steps && ok && any; j++)
			ok = cm->steps[j].out != (int)r || is_concat(cm, &cm->steps[j]) ||
			     cm->steps[j].kind == CS_FUSED || cm->steps[j].kind == CS_QFUSED;
		if (!ok || !any)
			continue;
		nhc[r] = true;
		for (unsigned v = 0; v < nv; v++)
			if (cm->vals[v].loc == LOC_ARENA && cm->vals[v].root == (int)r)
				nhc[v] = true;
	}
}

int cm_plan_layouts(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;
	unsigned nv = cm->n_vals;
	int *p = malloc((nv ? nv : 1) * sizeof(int));
	bool *blocked = calloc(nv ? nv : 1, sizeof(bool)), *made = calloc(nv ? nv : 1, sizeof(bool));
	bool *gblock = calloc(nv ? nv : 1, sizeof(bool));	/* per group root: held back */
	bool *flat = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(bool));	/* alias steps: flat_to_gemm() */
	bool *flat_view = calloc(nv ? nv : 1, sizeof(bool));			/* their 2-D outputs */
	bool *nhc = calloc(nv ? nv : 1, sizeof(bool));		/* nhwc_concats() */
	int ret = 0;

	if (!p || !blocked || !made || !gblock || !flat || !flat_view || !nhc) {
		free(nhc);
		free(p);
		free(blocked);
		free(made);
		free(gblock);
		free(flat);
		free(flat_view);
		return cm_seterr(cm, -ENOMEM, "layout: out of memory");
	}
	for (unsigned i = 0; i < cm->n_steps; i++)
		flat[i] = flat_to_gemm(cm, i);
	nhwc_concats(cm, nhc);
	for (unsigned v = 0; v < nv; v++) {
		p[v] = (int)v;
		cm->vals[v].nhwc = 0;
	}
	for (unsigned i = 0; i < m->n_inputs; i++)
		made[m->inputs[i]] = true;
	for (unsigned o = 0; o < m->n_outputs; o++)
		blocked[m->outputs[o]] = true;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];
		const struct onnx_node *n = &m->nodes[s->node];
		bool takes = false;

		if (s->kind == CS_FUSED || s->kind == CS_QFUSED)
			continue;	/* its input is never materialised, its output is the step before's (a
					 * Q/DQ folded into an int8 step: the int8 step reads and writes) */
		if (flat[i]) {
			blocked[s->out] = true;	/* the 2-D view itself; not its 4-D input */
			continue;
		}
		if (is_concat(cm, s) && s->out >= 0 && nhc[s->out]) {
			/* parts and result in one layout; the parts are written in place */
			made[s->out] = true;
			for (unsigned k = 0; k < n->n_in; k++)
				if (n->in[k] >= 0 && cm->vals[n->in[k]].loc == LOC_ARENA)
					join(p, n->in[k], s->out);
			continue;
		}
		switch (s->kind) {
		case CS_CONV:
		case CS_POOL:
		case CS_ACT:
		case CS_QCONV:
		case CS_QPOOL:
			takes = true;
			break;
		case CS_QADD:	/* flat, equally shaped int8 operands (compile_qdq.c) */
			takes = cm->vals[s->in[0]].loc == LOC_ARENA && cm->vals[s->in[1]].loc == LOC_ARENA;
			break;
		case CS_ELT:
			takes = elt_takes(cm, s);
			break;
		default:
			break;
		}
		/*
		 * A residual (compile_fuse_residual.c) is added element by element to the output: one layout
		 * for both (the SFU reads an NHWC residual as it writes an NHWC output); a GEMM's keeps NCHW.
		 */
		if (s->res >= 0) {
			if (s->kind == CS_CONV)
				join(p, s->res, s->out);
			else
				blocked[s->res] = true;
		}
		if (takes) {
			made[s->out] = true;
			if (s->kind == CS_ELT) {
				/* only the full operands: a broadcast one is read in its own layout */
				if (same4(s->ad, s->od))
					join(p, s->in[0], s->out);
				if (same4(s->bd, s->od) && s->b_off == UINT64_MAX)
					join(p, s->in[1], s->out);
			} else if (s->kind == CS_POOL && cm->vals[s->out].ndim != 4) {
				/* a spatial ReduceMean's [N, C] (compile_lower.c): the bytes of [N, C, 1, 1] */
			} else if (!is_conv(s->kind)) {
				join(p, s->in[0], s->out);
				if (s->kind == CS_QADD)
					join(p, s->in[1], s->out);
			}
		} else if (s->kind == CS_HOST) {
			/* the host's results are copied into the arena like graph inputs (transposed when
			 * NHWC): an int8 model's QuantizeLinear of its input feeds the stem NHWC */
			for (unsigned k = 0; k < n->n_out; k++)
				if (n->out[k] >= 0)
					made[n->out[k]] = true;
		} else {
			for (unsigned k = 0; k < n->n_out; k++)
				if (n->out[k] >= 0)
					blocked[n->out[k]] = true;
			if (s->out >= 0)
				blocked[s->out] = true;
		}
		for (unsigned k = 0; k < n->n_in; k++) {
			int v = n->in[k];

			if (v < 0 || cm->vals[v].loc != LOC_ARENA)
				continue;
			if (!takes || (s->kind != CS_ELT && k != 0))
				blocked[v] = true;
		}
		/* an int8 QDQ step (or a view of one) reads the DQ nodes' int8 inputs, not its node's */
		for (unsigned k = 0; k < 2 && !takes; k++)
			if (s->in[k] >= 0 && cm->vals[s->in[k]].loc == LOC_ARENA)
				blocked[s->in[k]] = true;
	}
	/*
	 * Views and Concat parts (compile_views.c) are byte ranges of a root buffer in packed NCHW: a
	 * channel slice is contiguous only there. Such values and their roots keep NCHW.
	 */
	for (unsigned i = 0; i < cm->n_steps; i++)
		if (flat[i])
			flat_view[cm->steps[i].out] = true;
	for (unsigned v = 0; v < nv; v++) {
		const struct cval *cv = &cm->vals[v];

		if (cv->loc == LOC_ARENA && !nhc[v] && (cv->root != (int)v || cv->voff)) {
			blocked[v] = true;
			if (cv->root >= 0 && !flat_view[v])
				blocked[cv->root] = true;
		}
	}
	/* a group is NHWC unless a member is blocked or not a 4-D fp32 activation */
	for (unsigned v = 0; v < nv; v++) {
		const struct cval *cv = &cm->vals[v];

		if (cv->loc == LOC_ARENA && (!is4a(cv) || !made[v] || (blocked[v] && !layout_free(cv))))
			gblock[find(p, (int)v)] = true;
	}
	for (unsigned v = 0; v < nv; v++)
		if (cm->vals[v].loc == LOC_ARENA && !gblock[find(p, (int)v)])
			cm->vals[v].nhwc = 1;
	/*
	 * A graph input (or a host step's result) alone in its group only feeds convolutions: transposing
	 * it pays when one of them also writes NHWC; a convolution from an NHWC input to an NCHW output (a
	 * ViT's patch embedding into a Reshape) measured slower than the all-NCHW one, so such a value
	 * stays NCHW.
	 */
	for (unsigned v = 0; v < nv; v++) {
		int size = 0;
		bool pays = false;

		if (!cm->vals[v].nhwc || !copied_in(cm, (int)v))
			continue;
		for (unsigned u = 0; u < nv; u++)
			size += cm->vals[u].loc == LOC_ARENA && find(p, (int)u) == find(p, (int)v);
		if (size != 1)
			continue;
		for (unsigned j = 0; j < cm->n_steps; j++)
			pays |= is_conv(cm->steps[j].kind) && cm->steps[j].in[0] == (int)v && cm->vals[cm->steps[j].out].nhwc;
		if (!pays)
			cm->vals[v].nhwc = 0;
	}
	/* an NHWC in-place Concat: part k starts at channel c0 of the root's first pixel */
	for (unsigned v = 0; v < nv; v++) {
		uint64_t c0;

		if (nhc[v] && cm->vals[v].nhwc && cm->vals[v].root != (int)v && cm->vals[cm->vals[v].root].nhwc &&
		    chan_slice(cm, (int)v, &c0))
			cm->vals[v].voff = c0 * 4;
	}
	/* the classifier weights behind an NHWC flatten (a value with H = W = 1 or C = 1: same order) */
	for (unsigned i = 0; i < cm->n_steps && !ret; i++)
		if (flat[i] && cm->vals[cm->steps[i].in[0]].nhwc && !layout_free(&cm->vals[cm->steps[i].in[0]]))
			ret = flat_permute(cm, i);
	free(p);
	free(blocked);
	free(made);
	free(gblock);
	free(flat);
	free(flat_view);
	free(nhc);
	return ret ? ret : repack_weights(cm);
}
