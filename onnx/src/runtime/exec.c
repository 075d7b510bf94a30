/* SPDX-License-Identifier: MIT */
/*
 * exec.c - run a loaded graph node by node in model order (ONNX graphs are topologically sorted).
 * With a device, a node runs its accel kernel when it has one (the kernel may hand a case it cannot
 * lower back to the host kernel: ONNX_FALLBACK); without, every node runs the plain-C CPU reference.
 * Output shapes are inferred per node from its actual input shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile.h"

/* The run's values (constants are the model's and stay). */
static void release_values(const struct onnx_model *m, struct onnx_tensor *vt)
{
	for (unsigned i = 0; i < m->n_vals; i++)
		if (!m->vals[i].is_const)
			onnx_tensor_release(&vt[i]);
}

static int bind_inputs(const struct onnx_ctx *c, const struct onnx_tensor *in, unsigned n)
{
	const struct onnx_model *m = c->m;

	if (n != m->n_inputs)
		return ctx_seterr(c, -EINVAL, "the model has %u inputs, %u given", m->n_inputs, n);
	for (unsigned i = 0; i < n; i++) {
		int v = m->inputs[i];
		int ret;

		if (!in[i].data || !onnx_dtype_size(in[i].dtype) || in[i].ndim > ONNX_MAX_DIMS ||
		    tensor_count(in[i].ndim, in[i].dims) != in[i].count)
			return ctx_seterr(c, -EINVAL, "input '%s': malformed tensor", m->vals[v].name);
		ret = tensor_copy(&c->vt[v], &in[i]);
		if (ret)
			return ctx_seterr(c, ret, "input '%s': %s", m->vals[v].name,
					  ret == -ENOMEM ? "out of memory" : "shape out of range");
		if ((ret = onnx_check_static_shape(c, v, &c->vt[v])))
			return ret;
	}
	return 0;
}

onnx_kernel onnx_host_kernel(enum onnx_op op)
{
	const onnx_kernel *tables[] = { onnx_host_kernels, onnx_elem_kernels, onnx_shape_kernels, onnx_reduce_kernels,
					onnx_nn_kernels, onnx_index_kernels, onnx_loss_kernels, onnx_misc_kernels,
					onnx_norm_kernels, onnx_rnn_kernels, onnx_detect_kernels,
					onnx_wq_kernels, onnx_pool_kernels };

	if (op >= OP_COUNT)
		return NULL;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i][op])
			return tables[i][op];
	return NULL;
}

/* Inputs the specification requires (opsets 11-17) of the operators whose kernels index them without
 * checking (found by fuzz_load); 1 for the others, whose later inputs are optional or opset-dependent. */
static unsigned required_inputs(enum onnx_op op)
{
	switch (op) {
	case OP_QLINEARCONV:
	case OP_QLINEARMATMUL:
		return 8;
	case OP_MATMULNBITS:
		return 3;
	case OP_BATCHNORM:
		return 5;
	case OP_WHERE:
	case OP_RANGE:
	case OP_ONEHOT:
	case OP_SCATTERELEMENTS:
	case OP_SCATTER:
	case OP_SCATTERND:
		return 3;
	case OP_CONV:
	case OP_GEMM:
	case OP_MATMUL:
	case OP_CONVINTEGER:
	case OP_MATMULINTEGER:
	case OP_CONVTRANSPOSE:
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_DIV:
	case OP_POW:
	case OP_PRELU:
	case OP_EQUAL:
	case OP_GREATER:
	case OP_LESS:
	case OP_GREATEREQUAL:
	case OP_LESSEQUAL:
	case OP_AND:
	case OP_OR:
	case OP_XOR:
	case OP_EXPAND:
	case OP_TILE:
	case OP_GATHER:
	case OP_QUANTIZELINEAR:
	case OP_DEQUANTIZELINEAR:
	case OP_LAYERNORM:
	case OP_MOD:
	case OP_BITSHIFT:
	case OP_CUMSUM:
	case OP_GATHERELEMENTS:
		return 2;
	default:
		return 1;
	}
}

int onnx_node_check_io(const struct onnx_ctx *c)
{
	/* every operator that runs reads its required inputs and writes output 0 (found by fuzz_load:
	 * kernels index them) */
	for (unsigned k = 0; k < required_inputs(c->n->op); k++)
		if (k >= c->n->n_in || c->n->in[k] < 0)
			return node_err(c, -EINVAL, "input %u is missing (the operator needs %u)", k,
					required_inputs(c->n->op));
	if (!c->n->n_out || c->n->out[0] < 0)
		return node_err(c, -EINVAL, "output 0 is missing");
	return 0;
}

int onnx_run_node(struct onnx_ctx *c)
{
	onnx_kernel ak = c->dev ? onnx_accel_kernels[c->n->op] : NULL;
	onnx_kernel hk = onnx_host_kernel(c->n->op);
	int ret = ONNX_FALLBACK;

	if ((ret = onnx_node_check_io(c)))
		return ret;
	ret = ONNX_FALLBACK;
	for (unsigned i = 0; i < c->n->n_in; i++)
		if (c->n->in[i] >= 0 && !node_in(c, i)->data)
			return node_err(c, -EINVAL, "input '%s' has no value", c->m->vals[c->n->in[i]].name);
	c->on_accel = false;
	if (ak && !onnx_dtype_needs_f32(c))	/* FLOAT16/BFLOAT16/DOUBLE operands: the host in FLOAT */
		ret = ak(c);
	if (ret == ONNX_FALLBACK) {
		/* a partly written output of a declined accel attempt is replaced */
		for (unsigned i = 0; i < c->n->n_out; i++)
			if (c->n->out[i] >= 0)
				onnx_tensor_release(node_out(c, i));
		c->on_accel = false;
		ret = hk ? onnx_dtype_compute_f32(c, hk) : node_err(c, -EOPNOTSUPP, "no kernel");
	}
	if (ret)
		return ret;
	for (unsigned i = 0; i < c->n->n_out; i++)
		if (c->n->out[i] >= 0 && (ret = onnx_check_static_shape(c, c->n->out[i], node_out(c, i))))
			return ret;
	if (c->stats) {
		if (c->on_accel)
			c->stats->accel_nodes++;
		else
			c->stats->host_nodes++;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The node's jobs add their counters into c->stats (ajob_finish): from zero, they are the node's
 * share, which then joins the run's sum. */
static int run_profiled(struct onnx_ctx *c, struct onnx_node_profile *p, double t0)
{
	struct accel_counters run = c->stats->counters;
	double t = now_ms();
	int ret;

	memset(p, 0, sizeof(*p));
	p->ran = true;
	p->start_ms = t - t0;
	memset(&c->stats->counters, 0, sizeof(c->stats->counters));
	ret = onnx_run_node(c);
	p->host_ms = now_ms() - t;
	p->counters = c->stats->counters;
	c->stats->counters = run;
	accel_counters_add(&c->stats->counters, &p->counters);
	p->on_device = !ret && c->on_accel;
	p->failed = ret != 0;
	return ret;
}

int onnx_run(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *inputs, unsigned n_inputs,
	     struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats)
{
	return onnx_run_profile(m, dev, inputs, n_inputs, outputs, n_outputs, stats, NULL);
}

int onnx_run_profile(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *inputs,
		     unsigned n_inputs, struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats,
		     struct onnx_node_profile *prof)
{
	struct onnx_run_stats local;
	struct onnx_ctx c = { .m = m, .dev = dev, .stats = stats ? stats : prof ? &local : NULL };
	struct onnx_tensor *f32 = NULL;
	double t0 = now_ms();
	int ret;

	if (c.stats)
		memset(c.stats, 0, sizeof(*c.stats));
	if (prof)
		memset(prof, 0, sizeof(*prof) * m->n_nodes);
	if (n_outputs != m->n_outputs)
		return onnx_seterr(m, -EINVAL, "the model has %u outputs, %u requested", m->n_outputs, n_outputs);
	for (unsigned i = 0; i < n_outputs; i++)
		memset(&outputs[i], 0, sizeof(outputs[i]));
	c.vt = calloc(m->n_vals ? m->n_vals : 1, sizeof(*c.vt));
	if (!c.vt)
		return onnx_seterr(m, -ENOMEM, "out of memory");
	/* a half-precision network's FLOAT16 inputs as FLOAT (f16_promote.c) */
	ret = onnx_f16_inputs(m, inputs, n_inputs, &f32);
	if (ret)
		ret = onnx_seterr(m, ret, "out of memory");
	if (!ret)
		ret = bind_inputs(&c, f32 ? f32 : inputs, n_inputs);
	for (unsigned i = 0; !ret && i < m->n_nodes; i++) {
		struct onnx_node *n = &m->nodes[i];

		if (n->folded)
			continue;
		c.n = n;
		ret = prof ? run_profiled(&c, &prof[i], t0) : onnx_run_node(&c);
		if (!ret && dev) {	/* onnx_model_node_info's ran_on_device: the last onnx_run's */
			n->ran = true;
			n->ran_on_accel = c.on_accel;
		}
	}
	for (unsigned i = 0; !ret && i < n_outputs; i++) {
		const struct onnx_value *v = &m->vals[m->outputs[i]];
		const struct onnx_tensor *t = ctx_val(&c, m->outputs[i]);

		if (!t->data)
			ret = onnx_seterr(m, -EINVAL, "output '%s' was not computed", v->name);
		else
			ret = tensor_copy(&outputs[i], t);
	}
	if (!ret && (ret = onnx_f16_outputs(m, outputs, n_outputs)))
		onnx_seterr(m, ret, "out of memory");
	if (ret)
		for (unsigned i = 0; i < n_outputs; i++)
			onnx_tensor_release(&outputs[i]);
	release_values(m, c.vt);
	free(c.vt);
	onnx_f16_inputs_free(f32, n_inputs);
	return ret;
}
