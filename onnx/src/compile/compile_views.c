/* SPDX-License-Identifier: MIT */
/*
 * compile_views.c - the compiler's addressing pass (Documentation/onnx.md, "Views and Concat in
 * place"): data movement that the plan can express as addresses in the arena costs nothing.
 *
 *  - Split, Slice and Gather (constant indices) whose outputs are contiguous blocks of their input
 *    become views: the output is a byte range of the input's buffer.  Which input element each
 *    output element is, is not derived from the attributes here but measured: the node's own host
 *    kernel (the reference of the operator) runs once on a tensor of element indices.  An output that
 *    is a strided box of its input (a Slice along H, steps > 1, a channel slice of a batch > 1) is
 *    copied on the device (accel_transpose with the identity permutation, ISA 2) instead of on the
 *    host.
 *  - Concat whose inputs are contiguous blocks of its output (the axis after only 1-sized ones, e.g.
 *    channels at batch 1): every input that is a whole buffer of its own written by a step of the plan
 *    is placed in its slice of the output, so its producer writes it there and the Concat moves
 *    nothing.  A Concat whose inputs already lie consecutively in one buffer (DenseNet's concats of
 *    the block's features are prefixes of the block's last one) is a view of that range.  The other
 *    inputs (graph inputs, views, a tensor already placed in another Concat, a non-contiguous axis)
 *    are copied on the device; constants and ISA 1 devices keep the host step.
 * Largest Concats are placed first, so a tensor read by several Concats lands in the largest and the
 * others become views of it or copy it.  The placement only nests buffers: the planner (plan_mem.c)
 * still sees one root buffer live from the first write of any part to the last read of any view of
 * it, so no part is overwritten while a view of it is live (tests/unit/onnx/test_views.c).
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

struct vstate {
	struct onnx_compiled *cm;
	int *par;		/* value -> the value whose buffer holds it (-1: a root) */
	uint64_t *poff;		/* bytes from the parent's start */
	bool *is_input;
	struct cstep **pre;	/* per step: device copies that run before it */
	unsigned *n_pre, n_old;	/* n_old: steps before the copies are inserted */
};

static int resolve(const struct vstate *st, int v, uint64_t *off)
{
	uint64_t o = 0;

	while (st->par[v] >= 0) {
		o += st->poff[v];
		v = st->par[v];
	}
	*off = o;
	return v;
}

static bool has_isa2(const struct onnx_compiled *cm)
{
	return (cm->geom[6] & (1u << 15)) != 0;
}

static bool is_arena(const struct onnx_compiled *cm, int v)
{
	return v >= 0 && cm->vals[v].loc == LOC_ARENA;
}

/* A device copy of an esz-byte element box: 1-, 4- and 8-byte elements (8 as two 4-byte halves). */
static bool copy_ok(const struct onnx_compiled *cm, int64_t esz)
{
	return has_isa2(cm) && (esz == 1 || esz == 4 || esz == 8);
}

static int add_pre(struct vstate *st, unsigned at, const struct cstep *s)
{
	struct cstep *p = realloc(st->pre[at], (st->n_pre[at] + 1) * sizeof(*p));

	if (!p)
		return cm_seterr(st->cm, -ENOMEM, "views: out of memory");
	p[st->n_pre[at]++] = *s;
	st->pre[at] = p;
	return 0;
}

static void copy_step(struct cstep *c, const struct cstep *of, int src, int dst, int64_t esz)
{
	memset(c, 0, sizeof(*c));
	c->kind = CS_COPY;
	c->node = of->node;
	c->in[0] = src;
	c->in[1] = -1;
	c->out = dst;
	c->res = -1;
	c->pair = -1;
	c->esz = esz;
	c->b_off = UINT64_MAX;
	c->reason = "device copy (the vector unit's strided copy): not expressible as a view";
}

/* ---- Split / Slice / Gather -------------------------------------------------------------------- */

/* out is an affine box of the index map idx (count n, shape od of rank nd <= 4 after dropping 1s):
 * box/strides in elements, base the first index.  false if it is not. */
static bool affine_box(const int64_t *idx, size_t n, const int64_t *od, unsigned nd, uint32_t box[4], int64_t sst[4],
		       int64_t *base)
{
	int64_t dims[4] = { 1, 1, 1, 1 }, pitch[4];
	unsigned k = 4;

	for (int d = (int)nd - 1; d >= 0; d--)
		if (od[d] != 1) {
			if (!k)
				return false;	/* more than 4 dimensions of size > 1 */
			dims[--k] = od[d];
		}
	pitch[3] = 1;
	for (int d = 2; d >= 0; d--)
		pitch[d] = pitch[d + 1] * dims[d + 1];
	*base = idx[0];
	for (int d = 0; d < 4; d++) {
		if (dims[d] > UINT32_MAX)
			return false;
		box[d] = (uint32_t)dims[d];
		sst[d] = dims[d] > 1 ? idx[pitch[d]] - idx[0] : 0;
		if (sst[d] < 0)
			return false;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t e = *base, r = (int64_t)i;

		for (int d = 0; d < 4; d++) {
			e += (r / pitch[d]) * sst[d];
			r %= pitch[d];
		}
		if (idx[i] != e)
			return false;
	}
	return true;
}

/* Run node s's host kernel on a tensor of the element indices of its data input (INT64; the data
 * movement kernels are type-generic), then make each output a view or a device copy. */
static int slice_views(struct vstate *st, unsigned si)
{
	struct onnx_compiled *cm = st->cm;
	struct onnx_model *m = cm->m;
	struct cstep *s = &cm->steps[si];
	const struct onnx_node *n = &m->nodes[s->node];
	char msg[ONNX_ERR_LEN];
	struct onnx_ctx c = cm_probe_ctx(cm, (unsigned)s->node, msg);
	const struct cval *x = &cm->vals[n->in[0]];
	struct onnx_tensor *xt = cm_val(cm, n->in[0]);
	int64_t esz = (int64_t)onnx_dtype_size((enum onnx_dtype)x->dtype);
	struct cstep copies[8];
	unsigned n_copies = 0;
	int64_t base[8];
	bool view[8];
	int ret = 0;

	if (n->n_out > 8 || !esz || !x->bytes || x->bytes / (uint64_t)esz > ((uint64_t)1 << 26) ||
	    m->vals[n->in[0]].is_const)
		return 0;
	for (unsigned k = 1; k < n->n_in; k++)
		if (n->in[k] >= 0 && !cm_is_const(cm, n->in[k]))
			return 0;	/* data-dependent starts/indices (known ones: compile_known.c) */
	for (unsigned k = 0; k < n->n_out; k++)
		if (!is_arena(cm, n->out[k]) || cm->vals[n->out[k]].dtype != x->dtype ||
		    cm->vals[n->out[k]].bytes / (uint64_t)esz > ((uint64_t)1 << 26))	/* an Expand's index map */
			return 0;
	if (onnx_tensor_alloc(xt, ONNX_INT64, x->ndim, x->dims))
		return cm_seterr(cm, -ENOMEM, "views: out of memory");
	for (size_t i = 0; i < xt->count; i++)
		((int64_t *)xt->data)[i] = (int64_t)i;
	if (onnx_run_node(&c))
		goto out;	/* the host step reports it at run time */
	for (unsigned k = 0; k < n->n_out; k++) {
		const struct onnx_tensor *o = cm_val(cm, n->out[k]);
		const struct cval *ov = &cm->vals[n->out[k]];
		const int64_t *idx = o->data;
		uint32_t box[4];
		int64_t sst[4];

		if (!o->data || o->dtype != ONNX_INT64 || o->count * (uint64_t)esz != ov->bytes || !o->count)
			goto out;
		view[k] = true;
		base[k] = idx[0];
		for (size_t i = 1; i < o->count && view[k]; i++)
			view[k] = idx[i] == idx[0] + (int64_t)i;
		if (view[k])
			continue;
		if (!copy_ok(cm, esz) || !affine_box(idx, o->count, o->dims, o->ndim, box, sst, &base[k]) ||
		    (esz == 8 && box[3] > 1 && sst[3] != 1))
			goto out;
		copy_step(&copies[n_copies], s, n->in[0], n->out[k], esz);
		memcpy(copies[n_copies].ad, box, sizeof(box));
		memcpy(copies[n_copies].sst, sst, sizeof(sst));
		copies[n_copies].src_off = base[k];
		copies[n_copies].dstr[3] = 1;
		for (int d = 2; d >= 0; d--)
			copies[n_copies].dstr[d] = copies[n_copies].dstr[d + 1] * box[d + 1];
		n_copies++;
	}
	for (unsigned k = 0; k < n->n_out; k++)
		if (view[k]) {
			st->par[n->out[k]] = n->in[0];
			st->poff[n->out[k]] = (uint64_t)(base[k] * esz);
		}
	for (unsigned k = 0; k < n_copies && !ret; k++)
		ret = add_pre(st, si, &copies[k]);
	s->kind = CS_ALIAS;
	s->reason = n_copies ? "its strided parts copied on the device, the contiguous ones views (addressing)"
			     : "a view of its input (a contiguous block: addressing, no step)";
out:
	onnx_tensor_release(xt);
	for (unsigned k = 0; k < n->n_out; k++)
		onnx_tensor_release(cm_val(cm, n->out[k]));
	return ret;
}

/* ---- Concat ------------------------------------------------------------------------------------- */

struct concat {
	unsigned step;
	int out;
	int64_t axis, outer, inner;
};

static int by_bytes_desc(const void *a, const void *b, void *ctx)
{
	const struct onnx_compiled *cm = ctx;
	const struct concat *x = a, *y = b;
	uint64_t bx = cm->vals[x->out].bytes, by = cm->vals[y->out].bytes;

	if (bx != by)
		return bx < by ? 1 : -1;
	return (x->step > y->step) - (x->step < y->step);
}

/* The Concat inputs, all arena values of the output's dtype, lie consecutively in one buffer. */
static bool consecutive(const struct vstate *st, const struct concat *cc, int *root, uint64_t *first)
{
	const struct onnx_compiled *cm = st->cm;
	const struct onnx_node *n = &cm->m->nodes[cm->steps[cc->step].node];
	uint64_t at = 0;

	for (unsigned k = 0; k < n->n_in; k++) {
		uint64_t off;
		int r;

		if (!is_arena(cm, n->in[k]))
			return false;
		r = resolve(st, n->in[k], &off);
		if (k == 0) {
			*root = r;
			*first = off;
		} else if (r != *root || off != at) {
			return false;
		}
		at = off + cm->vals[n->in[k]].bytes;
	}
	return *root != cc->out && at - *first == cm->vals[cc->out].bytes;
}

static int place_concat(struct vstate *st, const struct concat *cc)
{
	struct onnx_compiled *cm = st->cm;
	struct cstep *s = &cm->steps[cc->step];
	const struct onnx_node *n = &cm->m->nodes[s->node];
	const struct cval *o = &cm->vals[cc->out];
	int64_t esz = (int64_t)onnx_dtype_size((enum onnx_dtype)o->dtype), start = 0;
	uint64_t first = 0, ooff;
	unsigned n_copies = 0, n_placed = 0;
	struct cstep *copies;
	int root = -1, oroot, ret = 0;

	if (st->par[cc->out] < 0 && !st->is_input[cc->out] && consecutive(st, cc, &root, &first)) {
		st->par[cc->out] = root;
		st->poff[cc->out] = first;
		s->kind = CS_ALIAS;
		s->reason = "a view: its inputs already lie consecutively in one buffer (addressing, no step)";
		return 0;
	}
	for (unsigned k = 0; k < n->n_in; k++)
		if (!is_arena(cm, n->in[k]) || cm->vals[n->in[k]].dtype != o->dtype)
			return 0;	/* a constant input: the host step */
	copies = calloc(n->n_in, sizeof(*copies));
	if (!copies)
		return cm_seterr(cm, -ENOMEM, "views: out of memory");
	oroot = resolve(st, cc->out, &ooff);
	for (unsigned k = 0; k < n->n_in; k++) {
		const struct cval *p = &cm->vals[n->in[k]];
		int64_t len = p->ndim > cc->axis ? p->dims[cc->axis] : 0;
		uint64_t off;
		int r = resolve(st, n->in[k], &off);
		bool dup = false;

		for (unsigned j = 0; j < k; j++)
			dup |= n->in[j] == n->in[k];
		if (!len || !p->bytes)
			continue;	/* an empty part (a decoder's past of length 0): nothing to copy */
		if (cc->outer == 1 && !dup && r != oroot && !off && cm->vals[r].bytes == p->bytes && !st->is_input[r]) {
			st->par[r] = cc->out;
			st->poff[r] = (uint64_t)(start * cc->inner * esz);
			n_placed++;
		} else if (copy_ok(cm, esz) && cc->inner <= UINT32_MAX && len <= UINT32_MAX && cc->outer <= UINT32_MAX) {
			struct cstep *c = &copies[n_copies++];

			copy_step(c, s, n->in[k], cc->out, esz);
			c->reason = "device copy of a Concat input that could not be written in place";
			c->ad[0] = 1;
			c->ad[1] = (uint32_t)cc->outer;
			c->ad[2] = (uint32_t)len;
			c->ad[3] = (uint32_t)cc->inner;
			c->sst[1] = len * cc->inner;
			c->sst[2] = cc->inner;
			c->sst[3] = 1;
			c->dstr[1] = o->dims[cc->axis] * cc->inner;
			c->dstr[2] = cc->inner;
			c->dstr[3] = 1;
			c->dst_off = start * cc->inner;
		} else {
			n_copies = UINT32_MAX;	/* the host step writes the whole output */
			break;
		}
		start += len;
	}
	if (n_copies != UINT32_MAX) {
		for (unsigned k = 0; k < n_copies && !ret; k++)
			ret = add_pre(st, cc->step, &copies[k]);
		s->kind = CS_ALIAS;
		s->reason = !n_copies ? "zero-copy: every input was written in place by its producer (addressing)"
				      : "inputs written in place by their producers, the others copied on the device";
	}
	/* else: the inputs placed so far are written in place and the host step rewrites them (same bytes) */
	(void)n_placed;
	free(copies);
	return ret;
}

static int concats(struct vstate *st)
{
	struct onnx_compiled *cm = st->cm;
	struct onnx_model *m = cm->m;
	struct concat *cc = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(*cc));
	unsigned n = 0;
	int ret = 0;

	if (!cc)
		return cm_seterr(cm, -ENOMEM, "views: out of memory");
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];
		const struct onnx_node *nd = &m->nodes[s->node];
		const struct cval *o;
		int64_t axis;

		if (s->kind != CS_HOST || nd->op != OP_CONCAT || nd->n_out != 1 || !is_arena(cm, nd->out[0]) ||
		    !nd->n_in)
			continue;
		o = &cm->vals[nd->out[0]];
		axis = attr_int(nd->pb, "axis", 0);
		if (axis < 0)
			axis += o->ndim;
		if (axis < 0 || axis >= (int64_t)o->ndim)
			continue;
		cc[n] = (struct concat){ .step = i, .out = nd->out[0], .axis = axis, .outer = 1, .inner = 1 };
		for (unsigned d = 0; d < o->ndim; d++) {
			if ((int64_t)d < axis)
				cc[n].outer *= o->dims[d];
			else if ((int64_t)d > axis)
				cc[n].inner *= o->dims[d];
		}
		n++;
	}
	qsort_r(cc, n, sizeof(*cc), by_bytes_desc, cm);
	for (unsigned i = 0; i < n && !ret; i++)
		ret = place_concat(st, &cc[i]);
	free(cc);
	return ret;
}

/* ---- Transpose as a 4-D one ------------------------------------------------------------------------ */

int cm_transpose_collapse(const int64_t *dims, unsigned r, const int64_t *perm, uint32_t ad[4], uint32_t bd[4])
{
	int ren[ONNX_MAX_DIMS], p[ONNX_MAX_DIMS], start[ONNX_MAX_DIMS], rank[ONNX_MAX_DIMS];
	int64_t size[ONNX_MAX_DIMS];
	unsigned k = 0, np = 0, ng = 0;

	/* 1. drop the size-1 dimensions: renumber the others, restrict the permutation */
	for (unsigned d = 0; d < r; d++)
		ren[d] = dims[d] == 1 ? -1 : (int)k++;
	for (unsigned d = 0; d < r; d++)
		if (ren[perm[d]] >= 0)
			p[np++] = ren[perm[d]];
	/* 2. groups in output order: a run of consecutive input dimensions is one dimension */
	for (unsigned j = 0; j < np; j++) {
		int64_t sz = 1;

		for (unsigned d = 0; d < r; d++)
			if (ren[d] == p[j])
				sz = dims[d];
		if (j && p[j] == p[j - 1] + 1) {
			size[ng - 1] *= sz;
		} else {
			start[ng] = p[j];
			size[ng++] = sz;
		}
	}
	if (ng > 4)
		return -1;
	/* 3. the groups in input order give the 4-D input; the output takes them in output order */
	for (unsigned g = 0; g < ng; g++) {
		rank[g] = 0;
		for (unsigned h = 0; h < ng; h++)
			rank[g] += start[h] < start[g];
		if (size[g] > UINT32_MAX)
			return -1;
	}
	for (unsigned d = 0; d < 4; d++) {
		ad[d] = 1;
		bd[d] = d;
	}
	for (unsigned g = 0; g < ng; g++) {
		ad[4 - ng + rank[g]] = (uint32_t)size[g];
		bd[4 - ng + g] = 4 - ng + (uint32_t)rank[g];
	}
	return 0;
}

/* ---- the pass ----------------------------------------------------------------------------------- */

static int rebuild_steps(struct vstate *st)
{
	struct onnx_compiled *cm = st->cm;
	unsigned total = cm->n_steps, k = 0;
	struct cstep *ns;

	for (unsigned i = 0; i < cm->n_steps; i++)
		total += st->n_pre[i];
	if (total == cm->n_steps)
		return 0;
	ns = calloc(total, sizeof(*ns));
	if (!ns)
		return cm_seterr(cm, -ENOMEM, "views: out of memory");
	for (unsigned i = 0; i < cm->n_steps; i++) {
		for (unsigned j = 0; j < st->n_pre[i]; j++)
			ns[k++] = st->pre[i][j];
		ns[k++] = cm->steps[i];
	}
	free(cm->steps);
	cm->steps = ns;
	cm->n_steps = total;
	return 0;
}

int cm_plan_views(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;
	struct vstate st = { .cm = cm };
	int ret = 0;

	st.par = calloc(cm->n_vals ? cm->n_vals : 1, sizeof(*st.par));
	st.poff = calloc(cm->n_vals ? cm->n_vals : 1, sizeof(*st.poff));
	st.is_input = calloc(cm->n_vals ? cm->n_vals : 1, sizeof(*st.is_input));
	st.pre = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(*st.pre));
	st.n_pre = calloc(cm->n_steps ? cm->n_steps : 1, sizeof(*st.n_pre));
	st.n_old = cm->n_steps;
	if (!st.par || !st.poff || !st.is_input || !st.pre || !st.n_pre) {
		ret = cm_seterr(cm, -ENOMEM, "views: out of memory");
		goto out;
	}
	for (unsigned v = 0; v < cm->n_vals; v++) {
		st.par[v] = cm->vals[v].loc == LOC_ARENA && cm->vals[v].root != (int)v ? cm->vals[v].root : -1;
		cm->vals[v].voff = 0;
	}
	for (unsigned i = 0; i < m->n_inputs; i++)
		st.is_input[m->inputs[i]] = true;
	if (!(cm->flags & ONNX_COMPILE_NO_VIEWS)) {
		for (unsigned i = 0; i < cm->n_steps && !ret; i++) {
			const struct onnx_node *n = &m->nodes[cm->steps[i].node];

			if (cm->steps[i].kind == CS_HOST && n->n_in && is_arena(cm, n->in[0]) &&
			    (n->op == OP_SLICE || n->op == OP_SPLIT || n->op == OP_GATHER || n->op == OP_EXPAND))
				ret = slice_views(&st, i);
		}
		if (!ret)
			ret = concats(&st);
		if (!ret)
			ret = rebuild_steps(&st);
	}
	for (unsigned v = 0; !ret && v < cm->n_vals; v++)
		if (cm->vals[v].loc == LOC_ARENA)
			cm->vals[v].root = resolve(&st, (int)v, &cm->vals[v].voff);
out:
	if (st.pre)
		for (unsigned i = 0; i < st.n_old; i++)
			free(st.pre[i]);
	free(st.pre);
	free(st.n_pre);
	free(st.par);
	free(st.poff);
	free(st.is_input);
	return ret;
}
