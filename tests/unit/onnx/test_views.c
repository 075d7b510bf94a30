/* SPDX-License-Identifier: MIT */
/*
 * The compiler's addressing and residual passes (onnx/src/compile/compile_views.c, compile_fuse_residual.c)
 * on tiny graphs: Concat inputs written in place by their producers, DenseNet-style concats of a
 * prefix as views, a tensor read by two Concats, graph inputs and strided slices copied on the
 * device, Split/Slice/Gather as views, the residual add in the conv epilogue.  Every plan is checked
 * for aliasing (no byte of a live value is written by anything but its own producer) on the compiler's
 * own records, and every compiled run against the node-by-node CPU reference executor (the ONNX
 * operators' plain-C kernels, run without any compiler pass).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 4242;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_views, .init = setup, .fini = teardown);

static float frand(void)
{
	return mb_frand(&rng);
}

static void init_rand(struct mb *b, const char *name, unsigned nd, const int64_t *dims)
{
	mb_init_rand(b, name, nd, dims, &rng);
}

/* A 3x3 Conv (pads 1) from ci to co channels with a bias, weights named after the output. */
static void conv(struct mb *b, const char *in, const char *out, int64_t ci, int64_t co)
{
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	int64_t wd[4] = { co, ci, 3, 3 }, bd[1] = { co };
	char w[64], bias[64], ins[256];
	Onnx__NodeProto *n;

	snprintf(w, sizeof(w), "%s_w", out);
	snprintf(bias, sizeof(bias), "%s_b", out);
	init_rand(b, w, 4, wd);
	init_rand(b, bias, 1, bd);
	snprintf(ins, sizeof(ins), "%s,%s,%s", in, w, bias);
	n = mb_node(b, "Conv", ins, out);
	mb_attr_ints(b, n, "pads", pads, 4);
}

static Onnx__NodeProto *concat(struct mb *b, const char *ins, const char *out, int64_t axis)
{
	Onnx__NodeProto *n = mb_node(b, "Concat", ins, out);

	mb_attr_i(b, n, "axis", axis);
	return n;
}

static struct onnx_model *load(struct mb *b)
{
	struct onnx_model *m = NULL;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static void input(struct onnx_tensor *x, int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t xd[4] = { n, c, h, w };

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = frand();
}

/* ---- the aliasing check on the plan's records -------------------------------------------------- */

struct region {
	uint64_t lo, hi;	/* arena bytes [lo, hi) */
	int step, root;
};

static bool overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* The byte range a CS_COPY writes in its destination. */
static struct region copy_region(const struct onnx_compiled *cm, const struct cstep *s, int i)
{
	const struct cval *o = &cm->vals[s->out];
	int64_t last = s->dst_off;

	for (int d = 0; d < 4; d++)
		last += (int64_t)(s->ad[d] - 1) * s->dstr[d];
	return (struct region){ o->off + (uint64_t)(s->dst_off * s->esz), o->off + (uint64_t)((last + 1) * s->esz), i,
				o->root };
}

static void paint(int *owner, uint64_t lo, uint64_t hi, int step)
{
	for (uint64_t k = lo; k < hi; k++) {
		cr_assert(owner[k] < 0 || owner[k] == step, "steps %d and %d write the same byte of one live buffer",
			  owner[k], step);
		owner[k] = step;
	}
}

/*
 * (1) every arena value lies inside its root; (2) roots live at the same step are disjoint; (3) every
 * step that reads or writes a value runs inside its root's live range; (4) the regions written by the
 * steps inside one root are pairwise disjoint (each byte has one writer; views are never written).
 * Together: no byte of a live value, a Concat slice included, is overwritten while it is live.
 */
static void check_aliasing(const struct onnx_compiled *cm)
{
	const struct onnx_model *m = cm->m;
	struct region *w = calloc(cm->n_steps * 8 + 8, sizeof(*w));
	unsigned nw = 0;

	for (unsigned v = 0; v < cm->n_vals; v++) {
		const struct cval *cv = &cm->vals[v], *r;

		if (cv->loc != LOC_ARENA)
			continue;
		r = &cm->vals[cv->root];
		cr_assert_eq(r->root, cv->root, "value %u: its root is not a root", v);
		cr_assert(cv->off >= r->off && cv->off + cv->bytes <= r->off + r->bytes,
			  "value '%s' [%llu, +%llu) outside its root '%s' [%llu, +%llu)", m->vals[v].name,
			  (unsigned long long)cv->off, (unsigned long long)cv->bytes, m->vals[cv->root].name,
			  (unsigned long long)r->off, (unsigned long long)r->bytes);
		for (unsigned u = 0; u < v; u++) {
			const struct cval *q = &cm->vals[u];

			if (q->loc != LOC_ARENA || q->root != (int)u || cv->root != (int)v)
				continue;
			if (!(q->last < cv->def || cv->last < q->def))
				cr_assert(!overlap(q->off, q->off + q->bytes, cv->off, cv->off + cv->bytes),
					  "roots '%s' and '%s' are live together and overlap", m->vals[u].name,
					  m->vals[v].name);
		}
	}
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];
		const struct onnx_node *n = &m->nodes[s->node];
		int touched[16];
		unsigned nt = 0;

		if (s->kind == CS_FUSED || s->kind == CS_ALIAS)
			continue;
		for (unsigned k = 0; k < n->n_in && nt < 12; k++)
			touched[nt++] = n->in[k];
		touched[nt++] = s->res;
		touched[nt++] = s->out;
		for (unsigned k = 0; k < nt; k++) {
			const struct cval *cv;

			if (touched[k] < 0 || cm->vals[touched[k]].loc != LOC_ARENA)
				continue;
			cv = &cm->vals[cm->vals[touched[k]].root];
			cr_assert((int)i >= cv->def && (int)i <= cv->last, "step %u touches '%s' outside its live range",
				  i, m->vals[touched[k]].name);
		}
		if (s->kind == CS_ELT && s->in[0] == s->out)
			continue;	/* an in-place update of what the step before wrote (BatchNormalization) */
		if (s->kind == CS_COPY)
			w[nw++] = copy_region(cm, s, (int)i);
		else if (CS_IS_DEVICE(s->kind))
			w[nw++] = (struct region){ cm->vals[s->out].off, cm->vals[s->out].off + cm->vals[s->out].bytes,
						   (int)i, cm->vals[s->out].root };
		else
			for (unsigned k = 0; k < n->n_out; k++)
				if (n->out[k] >= 0 && cm->vals[n->out[k]].loc == LOC_ARENA)
					w[nw++] = (struct region){ cm->vals[n->out[k]].off,
								   cm->vals[n->out[k]].off + cm->vals[n->out[k]].bytes,
								   (int)i, cm->vals[n->out[k]].root };
	}
	/* (4) exactly: paint every written byte of each root with its writer */
	for (unsigned v = 0; v < cm->n_vals; v++) {
		const struct cval *r = &cm->vals[v];
		int *owner;

		if (r->loc != LOC_ARENA || r->root != (int)v)
			continue;
		owner = malloc(r->bytes * sizeof(*owner) + 1);
		for (uint64_t k = 0; k < r->bytes; k++)
			owner[k] = -1;
		for (unsigned a = 0; a < nw; a++) {
			const struct cstep *s = &cm->steps[w[a].step];

			if (w[a].root != (int)v)
				continue;
			if (s->kind != CS_COPY) {
				paint(owner, w[a].lo - r->off, w[a].hi - r->off, w[a].step);
				continue;
			}
			for (uint32_t i0 = 0; i0 < s->ad[0]; i0++)
				for (uint32_t i1 = 0; i1 < s->ad[1]; i1++)
					for (uint32_t i2 = 0; i2 < s->ad[2]; i2++)
						for (uint32_t i3 = 0; i3 < s->ad[3]; i3++) {
							uint64_t e = (uint64_t)(s->dst_off + i0 * s->dstr[0] + i1 * s->dstr[1] +
										i2 * s->dstr[2] + i3 * s->dstr[3]);
							uint64_t lo = cm->vals[s->out].off - r->off + e * (uint64_t)s->esz;

							paint(owner, lo, lo + (uint64_t)s->esz, w[a].step);
						}
		}
		free(owner);
	}
	free(w);
}

/* Compile (flags), check the plan, run twice and compare with the CPU reference. */
static struct onnx_compiled *compile_check(struct onnx_model *m, const struct onnx_tensor *x, unsigned flags,
					   struct onnx_compiled_info *ci)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor y, ref;
	char err[512] = "";

	cr_assert_eq(onnx_run(m, NULL, x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, x, 1, flags, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_info(cm, ci), 0);
	check_aliasing(cm);
	for (int r = 0; r < 2; r++) {
		cr_assert_eq(onnx_compiled_run(cm, x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
		cr_assert_eq(y.count, ref.count);
		for (size_t i = 0; i < ref.count; i++) {
			float g = ((float *)y.data)[i], e = ((float *)ref.data)[i];

			cr_assert(fabsf(g - e) <= 1e-4f + 1e-3f * fabsf(e), "y[%zu] = %g, CPU reference %g", i, g, e);
		}
		onnx_tensor_release(&y);
	}
	onnx_tensor_release(&ref);
	return cm;
}

static const struct cstep *step_of(const struct onnx_compiled *cm, const char *out)
{
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct onnx_node *n = &cm->m->nodes[cm->steps[i].node];

		if (n->n_out && !strcmp(cm->m->vals[n->out[0]].name, out))
			return &cm->steps[i];
	}
	cr_assert_fail("no step writes '%s'", out);
	return NULL;
}

static const struct cval *val(const struct onnx_compiled *cm, const char *name)
{
	for (unsigned v = 0; v < cm->m->n_vals; v++)
		if (!strcmp(cm->m->vals[v].name, name))
			return &cm->vals[v];
	cr_assert_fail("no value '%s'", name);
	return NULL;
}

/* ---- Concat in place ----------------------------------------------------------------------------- */

/* x -> Conv a (3 ch), Conv b (5 ch) with a chain of convs between them (the planner wants the memory
 * a lives in), Concat(a, b) -> Relu: a and b are written in their slices, the Concat moves nothing. */
Test(onnx_views, concat_inputs_written_in_place)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "a", 4, 3);
	conv(b, "x", "t1", 4, 8);
	conv(b, "t1", "t2", 8, 8);
	conv(b, "t2", "b", 8, 5);
	concat(b, "a,b", "c", 1);
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 4, 6, 7);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(step_of(cm, "c")->kind, CS_ALIAS);
	cr_assert_eq(val(cm, "a")->off, val(cm, "c")->off);
	cr_assert_eq(val(cm, "b")->off, val(cm, "c")->off + 3 * 6 * 7 * 4);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 5, "4 convs and the Relu, no copy: %u", ci.jobs_per_run);
	onnx_compiled_free(cm);
	/* ONNX_COMPILE_NO_VIEWS: the host step of before */
	cm = compile_check(m, &x, ONNX_COMPILE_NO_VIEWS, &ci);
	cr_assert_eq(step_of(cm, "c")->kind, CS_HOST);
	cr_assert_eq(ci.host_steps, 1);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* DenseNet's block: every layer concatenates all the features so far; the last Concat holds them
 * all, the earlier ones are views of its prefixes, nothing is copied. */
Test(onnx_views, densenet_prefix_concats_are_views)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "f0", 3, 4);
	mb_node(b, "Relu", "f0", "r0");
	conv(b, "r0", "f1", 4, 2);
	concat(b, "f0,f1", "c1", 1);
	mb_node(b, "Relu", "c1", "r1");
	conv(b, "r1", "f2", 6, 2);
	concat(b, "f0,f1,f2", "c2", 1);
	mb_node(b, "Relu", "c2", "r2");
	conv(b, "r2", "f3", 8, 2);
	concat(b, "f0,f1,f2,f3", "c3", 1);
	conv(b, "c3", "y", 10, 3);
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 3, 5, 6);
	cm = compile_check(m, &x, 0, &ci);
	for (int k = 1; k <= 3; k++) {
		char c[4];

		snprintf(c, sizeof(c), "c%d", k);
		cr_assert_eq(step_of(cm, c)->kind, CS_ALIAS, "%s", c);
		cr_assert_eq(val(cm, c)->off, val(cm, "f0")->off, "%s starts at f0", c);
	}
	cr_assert_eq(val(cm, "f3")->off, val(cm, "f0")->off + 8 * 30 * 4);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 8, "5 convs, 3 Relus, no copy: %u", ci.jobs_per_run);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* A tensor read by two Concats lands in one (the larger) and is copied into the other on the device;
 * a graph input cannot be placed (the caller's bytes arrive at bind time) and is copied too. */
Test(onnx_views, two_concats_and_a_graph_input_copy_on_the_device)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "a", 2, 3);
	conv(b, "x", "p", 2, 2);
	conv(b, "x", "q", 2, 4);
	concat(b, "a,p", "c1", 1);
	concat(b, "q,a,x", "c2", 1);
	conv(b, "c1", "d1", 5, 2);
	conv(b, "c2", "d2", 9, 2);
	mb_node(b, "Add", "d1,d2", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 2, 4, 5);
	cm = compile_check(m, &x, 0, &ci);
	/* c2 (9 channels) is the larger: a sits in it; c1 copies a, p is in place */
	cr_assert_eq(val(cm, "a")->off, val(cm, "c2")->off + 4 * 20 * 4);
	cr_assert_eq(val(cm, "p")->off, val(cm, "c1")->off + 3 * 20 * 4);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 5 + 2, "5 convs (the Add in the last one's epilogue), 2 copies (a into c1, "
		     "x into c2): %u", ci.jobs_per_run);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Concat on a non-contiguous axis (W) and at batch 2 on the channels: every input copied on the
 * device as a strided box. */
Test(onnx_views, strided_concats_copy_on_the_device)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "a", 3, 2);
	conv(b, "x", "c", 3, 2);
	concat(b, "a,c", "w", 3);
	concat(b, "a,c", "ch", 1);
	conv(b, "w", "yw", 2, 2);
	mb_node(b, "ReduceMean", "yw", "m1");	/* keepdims 1 over all axes: a [1,1,1,1] */
	conv(b, "ch", "yc", 4, 2);
	mb_node(b, "Add", "yc,m1", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 2, 3, 4, 5);
	cm = compile_check(m, &x, 0, &ci);
	/* the first step of each Concat is its first input's copy */
	cr_assert_eq(step_of(cm, "w")->kind, CS_COPY);
	cr_assert_eq(step_of(cm, "ch")->kind, CS_COPY);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- Split / Slice / Gather ------------------------------------------------------------------------ */

/* Split on the channels at batch 1: views; Slice on H: a strided device copy; Slice with step 2 on
 * W: a strided device copy; Gather of one channel: a view. */
Test(onnx_views, split_slice_gather_views_and_copies)
{
	static const int64_t sp[2] = { 2, 4 }, st[1] = { 1 }, en[1] = { 4 }, ax2[1] = { 2 }, st0[1] = { 0 },
			     en9[1] = { 9 }, ax3[1] = { 3 }, step2[1] = { 2 }, one[1] = { 1 }, g1[1] = { 3 };
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;
	Onnx__NodeProto *n;

	mb_init(b, "st", ONNX_INT64, 1, one, st);
	mb_init(b, "en", ONNX_INT64, 1, one, en);
	mb_init(b, "ax2", ONNX_INT64, 1, one, ax2);
	mb_init(b, "st0", ONNX_INT64, 1, one, st0);
	mb_init(b, "en9", ONNX_INT64, 1, one, en9);
	mb_init(b, "ax3", ONNX_INT64, 1, one, ax3);
	mb_init(b, "step2", ONNX_INT64, 1, one, step2);
	mb_init(b, "g1", ONNX_INT64, 1, one, g1);
	mb_input(b, "x");
	conv(b, "x", "a", 3, 6);
	{
		static const int64_t two[1] = { 2 };

		mb_init(b, "sp2", ONNX_INT64, 1, two, sp);
	}
	n = mb_node(b, "Split", "a,sp2", "s0,s1");
	mb_attr_i(b, n, "axis", 1);
	mb_node(b, "Slice", "a,st,en,ax2", "h");		/* rows 1..3 */
	mb_node(b, "Slice", "a,st0,en9,ax3,step2", "wq");	/* every other column */
	n = mb_node(b, "Gather", "a,g1", "g");		/* channel 3, kept as [1,1,H,W] */
	mb_attr_i(b, n, "axis", 1);
	conv(b, "s0", "y0", 2, 2);
	conv(b, "s1", "y1", 4, 2);
	conv(b, "h", "y2", 6, 2);
	mb_node(b, "ReduceMean", "wq", "m");
	mb_node(b, "ReduceMean", "g", "mg");
	mb_node(b, "Add", "y0,y1", "z0");
	mb_node(b, "Add", "m,mg", "z1");
	mb_node(b, "Add", "z0,z1", "z2");
	mb_node(b, "ReduceMean", "y2", "m2");
	mb_node(b, "Add", "z2,m2", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 3, 6, 7);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(val(cm, "s0")->off, val(cm, "a")->off);
	cr_assert_eq(val(cm, "s1")->off, val(cm, "a")->off + 2 * 42 * 4);
	cr_assert_eq(val(cm, "g")->off, val(cm, "a")->off + 3 * 42 * 4);
	cr_assert_eq(step_of(cm, "h")->kind, CS_COPY);
	cr_assert_eq(step_of(cm, "wq")->kind, CS_COPY);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- the residual add in the conv epilogue -------------------------------------------------------- */

/* ResNet's downsampling block: main = Conv(Relu(Conv(x))), skip = Conv(x) after it in graph order;
 * Add(main, skip) -> Relu goes into the later Conv (the skip's), with main as its residual. */
Test(onnx_views, residual_add_fused_into_the_later_conv)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "c1", 4, 6);
	mb_node(b, "Relu", "c1", "r1");
	conv(b, "r1", "main", 6, 6);
	conv(b, "x", "skip", 4, 6);
	mb_node(b, "Add", "main,skip", "s");
	mb_node(b, "Relu", "s", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 4, 5, 6);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(step_of(cm, "skip")->res, (int)(val(cm, "main") - cm->vals));
	cr_assert_eq(step_of(cm, "skip")->act, ACCEL_ACT_RELU);
	cr_assert_eq(ci.jobs_per_run, 3, "three convs, the add and the relu in the last: %u", ci.jobs_per_run);
	cr_assert_eq(ci.fused_nodes, 2);
	onnx_compiled_free(cm);
	/* without fusion: 3 convs, the add, the relu */
	cm = compile_check(m, &x, ONNX_COMPILE_NO_FUSE, &ci);
	cr_assert_eq(ci.jobs_per_run, 5);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Not fused: a Conv whose own Relu comes before the Add (the SFU adds the residual before the
 * activation), and a Conv output read by someone else too. */
Test(onnx_views, residual_not_fused_when_the_pattern_differs)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	mb_input(b, "x");
	conv(b, "x", "c1", 4, 4);
	mb_node(b, "Relu", "c1", "r1");
	mb_node(b, "Add", "r1,x", "s1");	/* Conv+Relu -> Add */
	conv(b, "s1", "c2", 4, 4);
	mb_node(b, "Add", "c2,x", "s2");
	mb_node(b, "Mul", "c2,s2", "y");	/* c2 has a second reader */
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 4, 5, 5);
	cm = compile_check(m, &x, 0, &ci);
	for (unsigned i = 0; i < cm->n_steps; i++)
		cr_assert_eq(cm->steps[i].res, -1, "step %u has a residual", i);
	cr_assert_eq(ci.jobs_per_run, 5);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* A plan with copies, views and a residual survives a save/load round trip. */
Test(onnx_views, save_load_keeps_copies_views_and_residuals)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm, *cm2 = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, y1, y2;
	char err[512] = "", path[] = "/tmp/tnpu-views-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	mb_input(b, "x");
	conv(b, "x", "a", 2, 2);
	concat(b, "a,x", "c", 1);
	conv(b, "c", "d", 4, 2);
	mb_node(b, "Add", "d,a", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 2, 4, 4);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, path, &cm2, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y1, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm2, &x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(cm2));
	cr_assert_eq(memcmp(y1.data, y2.data, y1.count * 4), 0);
	onnx_tensor_release(&y1);
	onnx_tensor_release(&y2);
	onnx_compiled_free(cm2);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- ShuffleNet's channel shuffle, DenseNet's pre-activation BatchNormalization ------------------- */

/* Concat -> Reshape [1,2,C/2,H,W] -> Transpose(0,2,1,3,4) -> Reshape [1,C,H,W] -> Split: the 5-D
 * transpose collapses to a 3-D one on the device, the Reshapes and the Split are views. */
Test(onnx_views, shufflenet_channel_shuffle_on_the_device)
{
	static const int64_t s5[5] = { 1, 2, 3, 4, 5 }, s4[4] = { 1, 6, 4, 5 }, perm[5] = { 0, 2, 1, 3, 4 },
			     five[1] = { 5 }, four[1] = { 4 }, sp[2] = { 3, 3 }, two[1] = { 2 };
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;
	Onnx__NodeProto *n;

	mb_init(b, "s5", ONNX_INT64, 1, five, s5);
	mb_init(b, "s4", ONNX_INT64, 1, four, s4);
	mb_init(b, "sp", ONNX_INT64, 1, two, sp);
	mb_input(b, "x");
	conv(b, "x", "a", 3, 3);
	conv(b, "x", "c", 3, 3);
	concat(b, "a,c", "cat", 1);
	mb_node(b, "Reshape", "cat,s5", "r5");
	n = mb_node(b, "Transpose", "r5", "t5");
	mb_attr_ints(b, n, "perm", perm, 5);
	mb_node(b, "Reshape", "t5,s4", "r4");
	n = mb_node(b, "Split", "r4,sp", "h0,h1");
	mb_attr_i(b, n, "axis", 1);
	conv(b, "h0", "y0", 3, 2);
	conv(b, "h1", "y1", 3, 2);
	mb_node(b, "Sub", "y0,y1", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 3, 4, 5);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(step_of(cm, "t5")->kind, CS_TRANSPOSE);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 6, "4 convs, the transpose, the Sub: %u", ci.jobs_per_run);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Concat -> BatchNormalization -> Relu -> Conv: the BN (no Conv before it to fold into) is a multiply
 * and an add with the Relu on the vector units; matches the CPU reference's BatchNormalization. */
Test(onnx_views, standalone_batchnorm_on_the_vector_units)
{
	static const int64_t cd[1] = { 5 };
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;
	float var[5];

	init_rand(b, "scale", 1, cd);
	init_rand(b, "bias", 1, cd);
	init_rand(b, "mean", 1, cd);
	for (int i = 0; i < 5; i++)
		var[i] = 0.5f + (frand() + 1.0f) * 0.5f;
	mb_init(b, "var", ONNX_FLOAT, 1, cd, var);
	mb_input(b, "x");
	conv(b, "x", "a", 3, 2);
	concat(b, "a,x", "cat", 1);
	mb_node(b, "BatchNormalization", "cat,scale,bias,mean,var", "bn");
	mb_node(b, "Relu", "bn", "r");
	conv(b, "r", "y", 5, 2);
	mb_output(b, "y");
	m = load(b);
	input(&x, 2, 3, 4, 5);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 2 + 2 + 2, "2 convs, 2 copies (batch 2), the BN's multiply and add: %u",
		     ci.jobs_per_run);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* nn.Linear on a 3-D input as torch exports it (MatMul -> Add(constant row)), then a skip Add and a
 * Relu: one GEMM job with the row as its SFU bias, the skip as its residual and the ReLU. */
Test(onnx_views, linear_bias_and_residual_in_the_gemm_epilogue)
{
	static const int64_t wd[2] = { 6, 6 }, bd[1] = { 6 }, s3[3] = { 1, 4, 6 }, three[1] = { 3 };
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm;
	struct onnx_compiled_info ci;
	struct onnx_tensor x;

	init_rand(b, "w", 2, wd);
	init_rand(b, "row", 1, bd);
	mb_init(b, "s3", ONNX_INT64, 1, three, s3);
	mb_input(b, "x");
	mb_node(b, "Reshape", "x,s3", "x3");	/* [1,4,6]: the residual, a view of the input */
	mb_node(b, "MatMul", "x3,w", "mm");
	mb_node(b, "Add", "row,mm", "lin");	/* the constant first, as some exporters write it */
	mb_node(b, "Add", "lin,x3", "s");
	mb_node(b, "Relu", "s", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 4, 6, 1);
	cm = compile_check(m, &x, 0, &ci);
	cr_assert_eq(ci.jobs_per_run, 1, "one GEMM job: %u", ci.jobs_per_run);
	cr_assert_eq(ci.fused_nodes, 3);
	cr_assert_neq(step_of(cm, "mm")->b_off, UINT64_MAX);
	cr_assert_geq(step_of(cm, "mm")->res, 0);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* A decoder's prefill: Concat(past, new rows) on the sequence axis with a past of length 0 (issue 29).
 * The empty part has nothing to copy; before, its device copy was an empty box libaccel refused
 * ("accel_transpose (copy): input tensor is malformed"). */
Test(onnx_views, concat_with_an_empty_past_copies_only_the_new_rows)
{
	struct mb *b = mb_new(13);
	int64_t pd[4] = { 1, 2, 0, 4 }, xd[4] = { 1, 2, 3, 4 };
	struct onnx_tensor in[2], y;
	struct onnx_compiled *cm = NULL;
	struct onnx_model *m;
	char err[512] = "";

	mb_input(b, "past");
	mb_input(b, "x");
	mb_node(b, "Relu", "x", "r");
	concat(b, "past,r", "y", 2);
	mb_output(b, "y");
	m = load(b);
	cr_assert_eq(onnx_tensor_alloc(&in[0], ONNX_FLOAT, 4, pd), 0);
	input(&in[1], xd[0], xd[1], xd[2], xd[3]);
	cr_assert_eq(onnx_compile(m, dev, in, 2, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, in, 2, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
	cr_assert_eq(y.count, in[1].count);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(y.dims[i], xd[i]);
	for (size_t i = 0; i < y.count; i++) {
		float e = ((float *)in[1].data)[i] > 0 ? ((float *)in[1].data)[i] : 0.0f;

		cr_assert_eq(((float *)y.data)[i], e, "y[%zu] = %g, expected %g", i, ((float *)y.data)[i], e);
	}
	onnx_tensor_release(&y);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	onnx_compiled_free(cm);
	onnx_model_free(m);
}

/* Attention's scores: MatMul of two activations [n, c, h, w] x [n, c, w, h] (K^T from a Transpose) is one
 * GEMM step of n * c device jobs on the arena slices, equal to the CPU reference; replayed on the second run
 * (compile_check runs twice) and kept through a compiled-model file (issue 29). */
static void batched_matmul_case(int64_t n, int64_t c, int64_t h, int64_t w)
{
	static const int64_t perm[4] = { 0, 1, 3, 2 };
	struct mb *b = mb_new(13);
	struct onnx_compiled *cm, *cm2 = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, y1, y2;
	const struct cstep *s;
	struct onnx_model *m;
	char err[512] = "", path[] = "/tmp/tnpu-bgemm-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	mb_input(b, "x");
	mb_node(b, "Relu", "x", "q");
	mb_attr_ints(b, mb_node(b, "Transpose", "x", "kt"), "perm", perm, 4);
	mb_node(b, "MatMul", "q,kt", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, n, c, h, w);
	cm = compile_check(m, &x, 0, &ci);
	s = step_of(cm, "y");
	cr_assert_eq(s->kind, CS_GEMM);
	cr_expect_eq(s->ad[0], n * c, "batch %u", s->ad[0]);
	cr_expect_eq(s->M, h);
	cr_expect_eq(s->K, w);
	cr_expect_eq(s->N, h);
	cr_expect_eq(ci.host_steps, 0);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, path, &cm2, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y1, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm2, &x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(cm2));
	cr_assert_eq(memcmp(y1.data, y2.data, y1.count * 4), 0);
	onnx_tensor_release(&y1);
	onnx_tensor_release(&y2);
	onnx_compiled_free(cm2);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

Test(onnx_views, batched_matmul_of_two_activations_is_a_device_gemm_per_slice)
{
	batched_matmul_case(2, 3, 4, 5);
}

/* Swin-T's window attention: 9 windows x 3 heads of 7 x 7 tokens (27 slices; 192 at 224 x 224): more
 * slices than the 16 a step used to take, when it ran as a host step (issue #30). */
Test(onnx_views, batched_matmul_of_swin_window_attention_is_one_device_step)
{
	batched_matmul_case(9, 3, 7, 8);
}

/* ---- values known at compile time (compile_known.c) ------------------------------------------------ */

/* x [N, 6] with N symbolic, so the loader folds no Shape: the shape arithmetic of a decoder (Shape ->
 * Gather -> Unsqueeze -> Concat -> Reshape, a rotary "half = dim / 2" as Slice starts, an Expand's
 * target shape) is computed when compiling: those nodes are "folded" steps, the Reshape a view, the Slice
 * and the Expand (a broadcast: source stride 0) views or device copies, and a Tile -- a host step --
 * reads its known repeats from the weight buffer.  Outputs equal the CPU reference, also after a
 * compiled-model file round trip. */
Test(onnx_views, shape_arithmetic_is_computed_at_compile_time)
{
	static const int64_t xd[2] = { INT64_MIN, 6 }, one = 1, zero = 0, two = 2, big = 1000, ax1 = 1;
	static const int64_t d23[2] = { 2, 3 }, k2[1] = { 2 };
	struct mb *b = mb_new(13);
	struct onnx_tensor x, ref[4], y[4], y2[4];
	struct onnx_compiled *cm, *cm2 = NULL;
	struct onnx_compiled_info ci;
	struct onnx_model *m;
	char err[512] = "", path[] = "/tmp/tnpu-known-XXXXXX";
	int fd = mkstemp(path), n_known = 0;

	cr_assert_geq(fd, 0);
	close(fd);
	mb_input_typed(b, "x", ONNX_FLOAT, 2, xd);
	mb_init(b, "i0", ONNX_INT64, 0, NULL, &zero);
	mb_init(b, "i1", ONNX_INT64, 0, NULL, &one);
	mb_init(b, "two", ONNX_INT64, 0, NULL, &two);
	mb_init(b, "ax0", ONNX_INT64, 1, &one, &zero);
	mb_init(b, "ax1", ONNX_INT64, 1, &one, &ax1);
	mb_init(b, "big", ONNX_INT64, 1, &one, &big);
	mb_init(b, "d23", ONNX_INT64, 1, k2, d23);
	mb_init(b, "k2", ONNX_INT64, 1, &one, &two);
	mb_node(b, "Relu", "x", "r");
	mb_node(b, "Shape", "x", "s");
	mb_node(b, "Gather", "s,i0", "n");
	mb_node(b, "Unsqueeze", "n,ax0", "nu");
	concat(b, "nu,d23", "shape3", 0);
	mb_node(b, "Reshape", "r,shape3", "y0");
	concat(b, "k2,s", "eshape", 0);
	mb_node(b, "Expand", "r,eshape", "y1");
	mb_node(b, "Gather", "s,i1", "w");
	mb_node(b, "Div", "w,two", "half");
	mb_node(b, "Unsqueeze", "half,ax0", "start");
	mb_node(b, "Slice", "r,start,big,ax1", "y2");
	concat(b, "ax0,start", "reps", 0);
	mb_node(b, "Tile", "r,reps", "y3");
	mb_output(b, "y0");
	mb_output(b, "y1");
	mb_output(b, "y2");
	mb_output(b, "y3");
	m = load(b);
	input(&x, 1, 1, 4, 6);
	x.ndim = 2;
	x.dims[0] = 4;
	x.dims[1] = 6;
	cr_assert_eq(onnx_run(m, NULL, &x, 1, ref, 4, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_info(cm, &ci), 0);
	for (unsigned i = 0; i < cm->n_steps; i++)
		n_known += cm->steps[i].kind == CS_KNOWN;
	cr_expect_eq(n_known, 9, "Shape, 2 Gather, 2 Unsqueeze, 3 Concat, Div: %d folded", n_known);
	cr_expect_eq(step_of(cm, "y0")->kind, CS_ALIAS);
	cr_expect(step_of(cm, "y1")->kind == CS_COPY || step_of(cm, "y1")->kind == CS_ALIAS, "Expand: kind %d",
		  step_of(cm, "y1")->kind);
	cr_expect_eq(step_of(cm, "y3")->kind, CS_HOST);
	cr_expect_eq(ci.host_steps, 1, "only the Tile: %u host steps", ci.host_steps);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, path, &cm2, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, y, 4, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm2, &x, 1, y2, 4, NULL), 0, "%s", onnx_compiled_error(cm2));
	for (int o = 0; o < 4; o++) {
		cr_assert_eq(y[o].count, ref[o].count, "output %d", o);
		cr_assert_eq(y[o].ndim, ref[o].ndim, "output %d", o);
		cr_expect_eq(memcmp(y[o].dims, ref[o].dims, ref[o].ndim * sizeof(int64_t)), 0, "output %d", o);
		cr_expect_eq(memcmp(y[o].data, ref[o].data, ref[o].count * 4), 0, "output %d", o);
		cr_expect_eq(memcmp(y2[o].data, ref[o].data, ref[o].count * 4), 0, "output %d (file)", o);
		onnx_tensor_release(&y[o]);
		onnx_tensor_release(&y2[o]);
		onnx_tensor_release(&ref[o]);
	}
	onnx_compiled_free(cm2);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- RMSNorm and rotary embeddings (compile_rownorm.c) ---------------------------------------------- */

/* Llama's RMSNorm as torch exports it, x * (1 / Sqrt(ReduceMean(Pow(x, 2), [-1]) + eps)) * w, and a
 * rotary rotate-half's Neg: every node a device step (Pow: x*x, ReduceMean: a GEMM by a 1/K column,
 * Div(1, Sqrt): one RSQRT step with the Sqrt fused), within the operator tolerance of the CPU
 * reference, also through a compiled-model file. */
Test(onnx_views, rmsnorm_and_neg_run_as_device_steps)
{
	static const float two = 2.0f, eps = 1e-5f, one = 1.0f;
	static const int64_t ax[1] = { -1 }, d16 = 16;
	struct mb *b = mb_new(13);
	struct onnx_compiled *cm, *cm2 = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, ref, y, y2;
	struct onnx_model *m;
	Onnx__NodeProto *rm;
	char err[512] = "", path[] = "/tmp/tnpu-rms-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	mb_input(b, "x");
	mb_init(b, "two", ONNX_FLOAT, 0, NULL, &two);
	mb_init(b, "eps", ONNX_FLOAT, 0, NULL, &eps);
	mb_init(b, "one", ONNX_FLOAT, 0, NULL, &one);
	init_rand(b, "w", 1, &d16);
	mb_node(b, "Pow", "x,two", "sq");
	rm = mb_node(b, "ReduceMean", "sq", "ms");
	mb_attr_ints(b, rm, "axes", ax, 1);
	mb_node(b, "Add", "ms,eps", "mse");
	mb_node(b, "Sqrt", "mse", "rt");
	mb_node(b, "Div", "one,rt", "inv");
	mb_node(b, "Mul", "x,inv", "xn");
	mb_node(b, "Mul", "xn,w", "h");
	mb_node(b, "Neg", "h", "y");
	mb_output(b, "y");
	m = load(b);
	input(&x, 1, 2, 3, 16);
	x.ndim = 3;
	x.dims[0] = 2, x.dims[1] = 3, x.dims[2] = 16;
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_info(cm, &ci), 0);
	cr_expect_eq(ci.host_steps, 0, "%u host steps", ci.host_steps);
	cr_expect_eq(step_of(cm, "sq")->kind, CS_ELT);
	cr_expect_eq(step_of(cm, "ms")->kind, CS_GEMM);
	cr_expect_eq(step_of(cm, "rt")->kind, CS_FUSED);
	cr_expect_eq(step_of(cm, "inv")->kind, CS_ACT);
	cr_expect_eq(step_of(cm, "y")->kind, CS_ELT);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, path, &cm2, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm2, &x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(cm2));
	cr_assert_eq(y.count, ref.count);
	for (size_t i = 0; i < ref.count; i++) {
		float g = ((float *)y.data)[i], e = ((float *)ref.data)[i];

		cr_expect(fabsf(g - e) <= 1e-4f + 1e-3f * fabsf(e), "y[%zu] = %g, CPU reference %g", i, g, e);
	}
	cr_expect_eq(memcmp(y.data, y2.data, y.count * 4), 0);
	onnx_tensor_release(&y);
	onnx_tensor_release(&y2);
	onnx_tensor_release(&ref);
	onnx_compiled_free(cm2);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/*
 * A Dropout in inference is a view of its input, also when it names a mask output that nothing reads
 * (torchvision's Swin exports its attention dropouts with training_mode true, ratio 0 and a named mask:
 * they were host steps); a mask the graph outputs is computed (all true).
 */
Test(onnx_views, dropout_with_an_unread_mask_is_a_view)
{
	const int64_t xd[4] = { 1, 4, 5, 6 };
	const float ratio = 0;
	const uint8_t training = 1;

	for (int mask_out = 0; mask_out < 2; mask_out++) {
		struct mb *b = mb_new(13);
		struct onnx_compiled_info ci;
		struct onnx_compiled *cm;
		struct onnx_model *m;
		struct onnx_tensor x;

		mb_input(b, "x");
		mb_init(b, "ratio", ONNX_FLOAT, 0, NULL, &ratio);
		mb_init(b, "training", ONNX_BOOL, 0, NULL, &training);
		mb_node(b, "Softmax", "x", "s");
		mb_node(b, "Dropout", "s,ratio,training", "d,mask");
		mb_node(b, "Relu", "d", "y");
		mb_output(b, "y");
		if (mask_out)
			mb_output(b, "mask");
		m = load(b);
		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = frand();
		if (!mask_out) {
			/* y = Relu(Softmax(x)) through the view, against the CPU reference */
			cm = compile_check(m, &x, 0, &ci);
			cr_expect_eq(step_of(cm, "d")->kind, CS_ALIAS, "the Dropout is step kind %d", step_of(cm, "d")->kind);
		} else {
			struct onnx_tensor outs[2];
			char err[512] = "";

			cm = NULL;
			cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
			cr_expect_neq(step_of(cm, "d")->kind, CS_ALIAS);
			cr_assert_eq(onnx_compiled_run(cm, &x, 1, outs, 2, NULL), 0, "run: %s", onnx_compiled_error(cm));
			cr_assert_eq(outs[1].dtype, ONNX_BOOL);
			for (size_t i = 0; i < outs[1].count; i++)
				cr_expect_eq(((uint8_t *)outs[1].data)[i], 1, "mask[%zu]", i);
			onnx_tensor_release(&outs[0]);
			onnx_tensor_release(&outs[1]);
		}
		onnx_compiled_free(cm);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/*
 * Element-wise steps over more than 4 dimensions (r3d_18's 5-D residual Adds were host steps): the
 * dimensions collapse where each operand is full or broadcast alike, and the step runs on the device
 * when at most 4 are left; equal to the CPU reference (compile_check).
 */
Test(onnx_views, elementwise_steps_of_5d_and_6d_tensors_run_on_the_device)
{
	static const int64_t axes[3] = { 2, 3, 4 };
	const int64_t d5[5] = { 2, 3, 4, 5, 6 }, d6[6] = { 2, 3, 2, 5, 3, 7 };

	for (int k = 0; k < 3; k++) {
		struct mb *b = mb_new(13);
		struct onnx_compiled_info ci;
		struct onnx_compiled *cm;
		struct onnx_model *m;
		struct onnx_tensor x;

		mb_input(b, "x");
		mb_node(b, "Relu", "x", "r");
		if (k == 1) {	/* x - max over D, H, W: [2, 3, 1, 1, 1] broadcast */
			Onnx__NodeProto *n = mb_node(b, "ReduceMax", "x", "s");

			mb_attr_ints(b, n, "axes", axes, 3);
			mb_node(b, "Sub", "r,s", "y");
		} else {
			mb_node(b, "Mul", "r,x", "y");
		}
		mb_output(b, "y");
		m = load(b);
		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, k == 2 ? 6 : 5, k == 2 ? d6 : d5), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = frand();
		cm = compile_check(m, &x, 0, &ci);
		cr_expect_eq(step_of(cm, "y")->kind, CS_ELT, "case %d: step kind %d", k, step_of(cm, "y")->kind);
		onnx_compiled_free(cm);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}
