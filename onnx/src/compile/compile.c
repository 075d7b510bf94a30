/* SPDX-License-Identifier: MIT */
/*
 * compile.c - whole-graph compilation (Documentation/onnx.md, "The compiler").  Passes, in order:
 *  1. shape probe: every value's dtype and shape for the given input shapes (analytic for the steps
 *     lowered here, the host kernel on zero data for the others);
 *  2. lowering (compile_lower.c): each remaining node becomes a device step (Conv, Gemm/MatMul,
 *     pooling, element-wise and activations on the vector units), an alias (Reshape & co: addressing,
 *     no step) or a host step;
 *  3. fusion (compile_lower.c): a Relu after an element-wise Add/Sub/Mul/Max/Min goes into its step
 *     (the loader has already folded BatchNormalization, Relu and Clip into Conv/Gemm epilogues and
 *     zero Pads into their padding);
 *  4. weight packing (compile_lower.c): the constants the device steps read, in one image uploaded once;
 *  5. memory plan: live ranges of the activations -> offsets in one arena (plan_mem.c).
 *  6. layout (compile_layout.c, before the memory plan): the 4-D activations that only convolutions,
 *     pooling, activations and same-shape element-wise steps touch are stored NHWC (graph inputs are
 *     transposed while they are copied in; graph outputs and everything the host reads stay NCHW).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "plan_mem.h"


int cm_seterr(struct onnx_compiled *cm, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cm->err, sizeof(cm->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *onnx_compiled_error(const struct onnx_compiled *cm)
{
	return cm ? cm->err : "no compiled model";
}

static int probe_inputs(struct onnx_compiled *cm, const struct onnx_tensor *shapes, unsigned n)
{
	struct onnx_model *m = cm->m;
	char msg[ONNX_ERR_LEN];

	if (n != m->n_inputs)
		return cm_seterr(cm, -EINVAL, "the model has %u inputs, %u shapes given", m->n_inputs, n);
	for (unsigned i = 0; i < n; i++) {
		const struct onnx_value *v = &m->vals[m->inputs[i]];
		struct onnx_ctx c = { .m = m, .vt = cm->probe, .err = msg };
		int ret;

		if (!onnx_dtype_size(shapes[i].dtype) || shapes[i].ndim > ONNX_MAX_DIMS)
			return cm_seterr(cm, -EINVAL, "input '%s': bad dtype or rank", v->name);
		ret = onnx_tensor_alloc(cm_val(cm, m->inputs[i]), shapes[i].dtype, shapes[i].ndim, shapes[i].dims);
		if (ret)
			return cm_seterr(cm, ret, "input '%s': %s", v->name,
					 ret == -E2BIG ? "shape too large" : ret == -EINVAL ? "dimension out of range"
											    : "out of memory");
		if ((ret = onnx_check_static_shape(&c, m->inputs[i], cm_val(cm, m->inputs[i]))))
			return cm_seterr(cm, ret, "%s", msg);
	}
	return 0;
}

static void record_shape(struct cval *cv, const struct onnx_tensor *t)
{
	cv->dtype = t->dtype;
	cv->ndim = t->ndim;
	memcpy(cv->dims, t->dims, sizeof(cv->dims));
	cv->bytes = t->count * onnx_dtype_size(t->dtype);
}

/* Live ranges of the arena values (step indices; inputs from step 0, outputs to the end). */
static void live_ranges(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;
	int end = (int)cm->n_steps;

	for (unsigned v = 0; v < cm->n_vals; v++) {
		cm->vals[v].def = -1;
		cm->vals[v].last = -1;
	}
	for (unsigned i = 0; i < m->n_inputs; i++) {
		cm->vals[m->inputs[i]].def = 0;
		cm->vals[m->inputs[i]].last = 0;
	}
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct onnx_node *n = &m->nodes[cm->steps[i].node];
		int so = cm->steps[i].out;

		if (cm->steps[i].kind == CS_FUSED || cm->steps[i].kind == CS_QFUSED)
			continue;	/* its output is written by the step it is fused into */
		if (cm->steps[i].pair >= 0) {	/* the fused depthwise step's output: written by this one */
			int po = cm->steps[cm->steps[i].pair].out;

			if (po >= 0 && cm->vals[po].loc == LOC_ARENA) {
				struct cval *r = &cm->vals[cm->vals[po].root];

				if (r->def < 0)
					r->def = (int)i;
				if ((int)i > r->last)
					r->last = (int)i;
			}
		}
		if (CS_IS_QDQ(cm->steps[i].kind)) {	/* operands are the step's, not its node's */
			const struct cstep *s = &cm->steps[i];

			for (unsigned k = 0; k < 2; k++)
				if (s->in[k] >= 0 && cm->vals[s->in[k]].loc == LOC_ARENA &&
				    (int)i > cm->vals[cm->vals[s->in[k]].root].last)
					cm->vals[cm->vals[s->in[k]].root].last = (int)i;
			if (so >= 0 && cm->vals[so].loc == LOC_ARENA && cm->vals[cm->vals[so].root].def < 0)
				cm->vals[cm->vals[so].root].def = cm->vals[cm->vals[so].root].last = (int)i;
			continue;
		}
		if (so >= 0 && cm->vals[so].loc == LOC_ARENA && cm->vals[cm->vals[so].root].def < 0)
			cm->vals[cm->vals[so].root].def = (int)i;
		for (unsigned k = 0; k < n->n_in; k++)
			if (n->in[k] >= 0 && cm->vals[n->in[k]].loc == LOC_ARENA) {
				struct cval *r = &cm->vals[cm->vals[n->in[k]].root];

				if ((int)i > r->last)
					r->last = (int)i;
			}
		for (unsigned k = 0; k < 2; k++) {	/* a step operand that is not its node's input (RSQRT) */
			int v = cm->steps[i].in[k];

			if (v >= 0 && cm->vals[v].loc == LOC_ARENA && (int)i > cm->vals[cm->vals[v].root].last)
				cm->vals[cm->vals[v].root].last = (int)i;
		}
		if (cm->steps[i].res >= 0 && cm->vals[cm->steps[i].res].loc == LOC_ARENA) {
			struct cval *r = &cm->vals[cm->vals[cm->steps[i].res].root];	/* the epilogue residual */

			if ((int)i > r->last)
				r->last = (int)i;
		}
		for (unsigned k = 0; k < n->n_out; k++)
			if (n->out[k] >= 0 && cm->vals[n->out[k]].loc == LOC_ARENA) {
				struct cval *r = &cm->vals[cm->vals[n->out[k]].root];

				if (r->def < 0)
					r->def = (int)i;
				if ((int)i > r->last)
					r->last = (int)i;
			}
	}
	for (unsigned o = 0; o < m->n_outputs; o++)
		if (cm->vals[m->outputs[o]].loc == LOC_ARENA)
			cm->vals[cm->vals[m->outputs[o]].root].last = end;
	if (cm->flags & CM_COMPILE_KEEP_INPUTS)
		for (unsigned i = 0; i < m->n_inputs; i++)
			if (cm->vals[m->inputs[i]].loc == LOC_ARENA)
				cm->vals[cm->vals[m->inputs[i]].root].last = end;
}

int cm_plan_and_upload(struct onnx_compiled *cm)
{
	/* one buffer per arena value, then one per step's scratch (QDQ steps) */
	struct plan_buf *pb = calloc(cm->n_vals + cm->n_steps + 1, sizeof(*pb));
	int ret;

	if (!pb)
		return cm_seterr(cm, -ENOMEM, "memory plan: out of memory");
	live_ranges(cm);
	for (unsigned v = 0; v < cm->n_vals; v++) {
		const struct cval *cv = &cm->vals[v];

		if (cv->loc == LOC_ARENA && cv->root == (int)v && cv->def >= 0) {
			pb[v].size = cv->bytes ? cv->bytes : 1;
			pb[v].start = cv->def;
			pb[v].end = cv->last < cv->def ? cv->def : cv->last;
		}
	}
	for (unsigned i = 0; i < cm->n_steps; i++)
		if (cm->steps[i].sc_bytes) {
			pb[cm->n_vals + i].size = cm->steps[i].sc_bytes;
			pb[cm->n_vals + i].start = pb[cm->n_vals + i].end = (int)i;
		}
	ret = plan_mem(pb, cm->n_vals + cm->n_steps, CM_ALIGN, &cm->arena_bytes, &cm->lower_bound);
	if (ret) {
		free(pb);
		return cm_seterr(cm, ret, "memory plan failed");
	}
	for (unsigned v = 0; v < cm->n_vals; v++)
		if (cm->vals[v].loc == LOC_ARENA)
			cm->vals[v].off = pb[cm->vals[v].root].offset + cm->vals[v].voff;
	for (unsigned i = 0; i < cm->n_steps; i++)
		if (cm->steps[i].sc_bytes)
			cm->steps[i].sc_off = pb[cm->n_vals + i].offset;
	free(pb);
	ret = accel_buffer_alloc(cm->dev, cm->arena_bytes ? cm->arena_bytes : 1, &cm->arena);
	if (ret)
		return cm_seterr(cm, ret, "activation arena of %llu bytes: %s", (unsigned long long)cm->arena_bytes,
				 accel_last_error(cm->dev));
	return cm_weights_upload(cm);
}

/* The shape probe's tensors; keep_known: not the known values' (the views read them, compile_known.c
 * packs them after the locations are assigned). */
static void release_probe_but(struct onnx_compiled *cm, bool keep_known)
{
	if (cm->probe)
		for (unsigned i = 0; i < cm->n_vals; i++)
			if (!keep_known || !cm->known || !cm->known[i])
				onnx_tensor_release(&cm->probe[i]);
}

static void release_probe(struct onnx_compiled *cm)
{
	release_probe_but(cm, false);
}

struct onnx_compiled *cm_alloc(void)
{
	struct onnx_compiled *cm = calloc(1, sizeof(*cm));

	if (cm && pthread_mutex_init(&cm->lock, NULL)) {
		free(cm);
		return NULL;
	}
	return cm;
}

/* Value locations after lowering: arena for every non-constant, alias roots followed. */
static void assign_locations(struct onnx_compiled *cm)
{
	struct onnx_model *m = cm->m;

	for (unsigned v = 0; v < cm->n_vals; v++) {
		cm->vals[v].root = (int)v;
		if (m->vals[v].is_const) {
			if (cm->vals[v].loc != LOC_WEIGHT)
				cm->vals[v].loc = LOC_CONST;
		} else if (cm->known && cm->known[v]) {
			cm->vals[v].loc = LOC_WEIGHT;	/* cm_place_known packs it */
		} else if (cm->vals[v].ndim || cm->vals[v].bytes || cm->vals[v].dtype) {
			cm->vals[v].loc = LOC_ARENA;
		}
	}
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];

		if (s->kind == CS_ALIAS)
			cm->vals[s->out].root = cm->vals[s->in[0]].root;
		else if (s->kind == CS_FUSED && s->in[0] >= 0)	/* the fused value is never materialised */
			cm->vals[s->in[0]].loc = LOC_NONE;
	}
}

static int compile_shapes(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
			  unsigned n_shapes, unsigned flags, struct onnx_compiled **out, char *err, size_t errlen);

/* A half-precision network is planned for its inputs as FLOAT (f16_promote.c): its runs convert them so. */
int onnx_compile(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes, unsigned n_shapes,
		 unsigned flags, struct onnx_compiled **out, char *err, size_t errlen)
{
	struct onnx_tensor *f32 = NULL;
	int ret;

	if (m && shapes && onnx_f16_inputs(m, shapes, n_shapes, &f32)) {
		*out = NULL;
		if (err && errlen)
			snprintf(err, errlen, "onnx_compile: out of memory");
		return -ENOMEM;
	}
	ret = compile_shapes(m, dev, f32 ? f32 : shapes, n_shapes, flags, out, err, errlen);
	onnx_f16_inputs_free(f32, n_shapes);
	return ret;
}

static int compile_shapes(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
			  unsigned n_shapes, unsigned flags, struct onnx_compiled **out, char *err, size_t errlen)
{
	struct onnx_compiled *cm;
	struct accel_caps caps;
	int ret;

	*out = NULL;
	if (!m || !dev || (!shapes && n_shapes)) {
		if (err && errlen)
			snprintf(err, errlen, "onnx_compile: needs a model and a device");
		return -EINVAL;
	}
	cm = cm_alloc();
	if (!cm)
		return -ENOMEM;
	cm->m = m;
	cm->dev = dev;
	cm->flags = flags;
	cm->n_vals = m->n_vals;
	cm->vals = calloc(m->n_vals ? m->n_vals : 1, sizeof(*cm->vals));
	cm->steps = calloc(m->n_nodes ? m->n_nodes : 1, sizeof(*cm->steps));
	cm->probe = calloc(m->n_vals ? m->n_vals : 1, sizeof(*cm->probe));
	cm->known = calloc(m->n_vals ? m->n_vals : 1, 1);
	if (!cm->vals || !cm->steps || !cm->probe || !cm->known) {
		ret = cm_seterr(cm, -ENOMEM, "out of memory");
		goto fail;
	}
	if ((ret = accel_query_caps(dev, &caps))) {
		cm_seterr(cm, ret, "device capabilities: %s", accel_last_error(dev));
		goto fail;
	}
	cm->geom[0] = caps.rows, cm->geom[1] = caps.cols, cm->geom[2] = caps.rate_fp32, cm->geom[3] = caps.rate_int8;
	cm->geom[4] = caps.sram_bytes, cm->geom[5] = caps.acc_elems, cm->geom[6] = caps.features;
	cm->geom[7] = caps.pes;
	if ((ret = probe_inputs(cm, shapes, n_shapes)) || (ret = cm_check_data_shapes(cm)))
		goto fail;
	cm->digest = cm_model_digest(m, shapes, n_shapes);
	if ((ret = cm_keep_shapes(cm, shapes, n_shapes))) {
		cm_seterr(cm, ret, "out of memory");
		goto fail;
	}
	if (!(flags & ONNX_COMPILE_NO_QDQ) && (ret = cm_qdq_match(cm)))
		goto fail;
	for (unsigned i = 0; i < m->n_nodes; i++) {
		if (m->nodes[i].folded)
			continue;
		cm->n_before++;
		ret = cm_lower_known(cm, i, &cm->steps[cm->n_steps]);
		if (ret == ONNX_FALLBACK)
			ret = cm_lower_node(cm, i, &cm->steps[cm->n_steps]);
		if (ret)
			goto fail;
		cm->steps[cm->n_steps].res = -1;
		cm->steps[cm->n_steps].pair = -1;
		cm->n_steps++;
	}
	for (unsigned v = 0; v < m->n_vals; v++)
		if (!m->vals[v].is_const && cm->probe[v].data)
			record_shape(&cm->vals[v], &cm->probe[v]);
	for (unsigned o = 0; o < m->n_outputs; o++)
		if (!cm_val(cm, m->outputs[o])->data) {
			ret = cm_seterr(cm, -EINVAL, "output '%s' is not computed by the graph", m->vals[m->outputs[o]].name);
			goto fail;
		}
	release_probe_but(cm, true);
	if (!(flags & ONNX_COMPILE_NO_FUSE)) {
		cm_fuse_elt_relu(cm);
		cm_fuse_residual(cm);
	}
	if ((ret = cm_expand_bn(cm)))
		goto fail;
	assign_locations(cm);
	if ((ret = cm_plan_views(cm)))
		goto fail;
	if (!(flags & ONNX_COMPILE_NCHW)) {
		if ((ret = cm_plan_layouts(cm)))
			goto fail;
	}
	if (!(flags & (ONNX_COMPILE_NO_FUSE | ONNX_COMPILE_NO_PWDW)))
		cm_fuse_pwdw(cm);
	for (unsigned i = 0; i < cm->n_steps; i++) {
		enum cstep_kind k = cm->steps[i].kind;

		cm->n_device += CS_IS_DEVICE(k);
		cm->n_host += k == CS_HOST;
		cm->n_alias += k == CS_ALIAS;
		cm->n_fused += k == CS_FUSED || k == CS_QFUSED;
	}
	/* the known values last: the image before them is the model's constants alone, the same bytes for
	 * every compiled form of the model, shared on the device (weight_share.c) */
	cm->wprefix = cm->wbytes;
	if ((ret = cm_place_known(cm)) || (ret = cm_plan_and_upload(cm)))
		goto fail;
	release_probe(cm);	/* the known values' */
	free(cm->probe);	/* cm_plan_views used it as scratch too */
	cm->probe = NULL;
	free(cm->known);
	cm->known = NULL;
	*out = cm;
	return 0;
fail:
	release_probe(cm);
	if (err && errlen)
		snprintf(err, errlen, "%s", cm->err[0] ? cm->err : "compile failed");
	onnx_compiled_free(cm);
	return ret < 0 ? ret : -EINVAL;
}

int cm_keep_shapes(struct onnx_compiled *cm, const struct onnx_tensor *shapes, unsigned n)
{
	free(cm->shapes);
	cm->n_shapes = 0;
	cm->shapes = calloc(n ? n : 1, sizeof(*cm->shapes));
	if (!cm->shapes)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		cm->shapes[i].dtype = shapes[i].dtype;
		cm->shapes[i].ndim = shapes[i].ndim;
		memcpy(cm->shapes[i].dims, shapes[i].dims, sizeof(shapes[i].dims));
	}
	cm->n_shapes = n;
	return 0;
}

int onnx_compiled_input_shape(const struct onnx_compiled *cm, unsigned i, struct onnx_tensor *out)
{
	if (!cm || !out || i >= cm->n_shapes)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->dtype = cm->shapes[i].dtype;
	out->ndim = cm->shapes[i].ndim;
	memcpy(out->dims, cm->shapes[i].dims, sizeof(out->dims));
	out->count = 1;
	for (unsigned d = 0; d < out->ndim && d < ONNX_MAX_DIMS; d++)
		out->count *= (size_t)out->dims[d];
	return 0;
}

struct onnx_model *onnx_compiled_model(const struct onnx_compiled *cm)
{
	return cm ? cm->m : NULL;
}

void onnx_compiled_free(struct onnx_compiled *cm)
{
	if (!cm)
		return;
	cm_drop_kept(cm);
	accel_buffer_free(cm->arena);
	cm_weights_release(cm);
	release_probe(cm);
	free(cm->probe);
	free(cm->run_vals);
	pthread_mutex_destroy(&cm->lock);
	free(cm->vals);
	free(cm->steps);
	free(cm->qrole);
	free(cm->known);
	free(cm->wimg);
	free(cm->shapes);
	onnx_model_free(cm->own_m);	/* after everything that reads the model */
	free(cm);
}

int onnx_compiled_info(const struct onnx_compiled *cm, struct onnx_compiled_info *o)
{
	bool in_chain = false;

	memset(o, 0, sizeof(*o));
	o->nodes_before = cm->n_before;
	o->device_steps = cm->n_device;
	o->host_steps = cm->n_host;
	o->alias_steps = cm->n_alias;
	o->fused_nodes = cm->n_fused;
	o->steps = cm->n_device + cm->n_host;
	o->buffers = 2;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		enum cstep_kind k = cm->steps[i].kind;

		o->jobs_per_run += CS_IS_QDQ(k) ? cm_qdq_jobs(&cm->steps[i]) : CS_IS_DEVICE(k);

		if (CS_IS_DEVICE(k) && !in_chain) {
			o->chains++;
			in_chain = true;
		} else if (k == CS_HOST) {
			in_chain = false;
		}
	}
	o->arena_bytes = cm->arena_bytes;
	o->weight_bytes = cm->wbytes;
	o->peak_bytes = cm->arena_bytes + cm->wbytes;
	o->lower_bound = cm->lower_bound + cm->wbytes;
	return 0;
}

static const char *const kind_names[CS_KIND_COUNT] = {
	[CS_CONV] = "conv", [CS_GEMM] = "gemm", [CS_POOL] = "pool", [CS_ELT] = "eltwise",
	[CS_ACT] = "act", [CS_SOFTMAX] = "softmax", [CS_LAYERNORM] = "layernorm", [CS_TRANSPOSE] = "transpose",
	[CS_COPY] = "copy",
	[CS_ALIAS] = "alias", [CS_HOST] = "host", [CS_FUSED] = "fused", [CS_QCONV] = "qconv", [CS_QGEMM] = "qgemm",
	[CS_QADD] = "qadd", [CS_QPOOL] = "qpool", [CS_QFUSED] = "fused", [CS_KNOWN] = "folded",
	[CS_REDUCE] = "reduce",
};

/* A GEMM by packed weights (compile_wq.c), by enum accel_qformat. */
static const char *const wq_reasons[3] = {
	"device GEMM by its packed int8 weights (accel_qgemm: expanded by the decompressing load, DMA_DEQ)",
	"device GEMM by its packed uint8 weights (accel_qgemm: expanded by the decompressing load, DMA_DEQ)",
	"device GEMM by its packed int4 weights (accel_qgemm: expanded by the decompressing load, DMA_DEQ)",
};

int onnx_compiled_step_info(const struct onnx_compiled *cm, unsigned node, struct onnx_compiled_step *o)
{
	const struct onnx_model *m = cm->m;
	struct onnx_node_info ni;

	if (node >= m->n_nodes || onnx_model_node_info(m, node, &ni))
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->name = ni.name;
	o->op = ni.op;
	o->kind = "folded";
	o->reason = ni.reason;
	o->out_offset = -1;
	o->ran_on_device = -1;
	for (unsigned i = 0; i < cm->n_steps; i++) {
		const struct cstep *s = &cm->steps[i];

		if (s->node != (int)node)
			continue;
		o->kind = s->pair >= 0 ? (s->kind == CS_QCONV ? "qpwdw" : "pwdw") : kind_names[s->kind];
		o->device = CS_IS_DEVICE(s->kind);
		o->ran_on_device = s->kind == CS_HOST ? (int)s->ran - 1 : -1;
		if (s->kind == CS_HOST && s->why[0])
			o->reason = s->why;	/* libaccel refused it: its reason (compile_lower.c) */
		else if (s->kind == CS_GEMM && s->wq >= 1 && s->wq <= 3)
			o->reason = wq_reasons[s->wq - 1];	/* compile_wq.c */
		else if (s->reason)
			o->reason = s->reason;
		else if (ni.place == ONNX_PLACE_DEVICE)
			o->reason = "node-by-node device kernel (its own buffers and copies): no plan lowering for "
				    "this case";
		if (s->out >= 0 && cm->vals[s->out].loc == LOC_ARENA) {
			o->out_offset = (int64_t)cm->vals[s->out].off;
			o->out_bytes = cm->vals[s->out].bytes;
		}
	}
	return 0;
}
