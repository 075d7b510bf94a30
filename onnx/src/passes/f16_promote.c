/* SPDX-License-Identifier: MIT */
/*
 * f16_promote.c - a half-precision network computes in fp32 (issue #30: an fp16 CNN ran every node on the
 * host, which takes FLOAT16 and BFLOAT16 tensors only there).
 *
 * A model whose Conv, ConvTranspose, Gemm or MatMul weights are FLOAT16 or BFLOAT16 constants is a
 * "half-precision network" (a model converted to fp16, as users ship them). Its constants of those types
 * become FLOAT at load time (exact: every FLOAT16 and BFLOAT16 value is a FLOAT), its FLOAT16/BFLOAT16
 * inputs become FLOAT when a run or a compile binds them, and its outputs declared FLOAT16/BFLOAT16 (or of
 * no declared type: the weights' type) are rounded back to that type once, at the end. In between every node computes in FLOAT, so the device takes
 * the nodes it takes in an fp32 model: mixed precision, as NPUs run fp16 models, and nearer the exact
 * result than fp16 storage between nodes (Documentation/onnx.md, "Element types"). A Cast to FLOAT16 inside
 * the graph still rounds; the nodes after it see FLOAT16 and run on the host as before. Other models are
 * untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "internal.h"

static bool is_half(int dt)
{
	return dt == ONNX_FLOAT16 || dt == ONNX_BFLOAT16;
}

/* The half type of the first Conv/ConvTranspose/Gemm/MatMul whose weight (input 1) is a half-precision
 * constant, or 0: not a half-precision network. */
static int half_network(const struct onnx_model *m)
{
	for (unsigned i = 0; i < m->n_nodes; i++) {
		const struct onnx_node *n = &m->nodes[i];
		int w = n->n_in > 1 ? n->in[1] : -1;

		if ((n->op == OP_CONV || n->op == OP_CONVTRANSPOSE || n->op == OP_GEMM || n->op == OP_MATMUL) && w >= 0 &&
		    m->vals[w].is_const && is_half(m->vals[w].t.dtype))
			return m->vals[w].t.dtype;
	}
	return 0;
}

int onnx_promote_f16(struct onnx_model *m)
{
	m->f16_type = half_network(m);
	if (!m->f16_type)
		return 0;
	for (unsigned v = 0; v < m->n_vals; v++) {
		struct onnx_value *val = &m->vals[v];
		struct onnx_tensor f;
		int ret;

		if (!val->is_const || !is_half(val->t.dtype))
			continue;
		ret = onnx_tensor_convert(&f, &val->t, ONNX_FLOAT);
		if (ret)
			return onnx_seterr(m, ret, "constant '%s': cannot convert it to FLOAT", val->name);
		onnx_tensor_release(&val->t);
		val->t = f;
	}
	m->f16_promote = true;
	return 0;
}

int onnx_f16_inputs(const struct onnx_model *m, const struct onnx_tensor *in, unsigned n, struct onnx_tensor **out)
{
	struct onnx_tensor *t;
	bool any = false;

	*out = NULL;
	if (!m->f16_promote)
		return 0;
	for (unsigned i = 0; i < n; i++)
		any |= is_half(in[i].dtype);
	if (!any)
		return 0;
	/* n tensors, then n flags: which ones this call allocated */
	t = calloc(1, n * (sizeof(*t) + 1));
	if (!t)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		bool *own = (bool *)(t + n);

		if (!is_half(in[i].dtype) || !in[i].data) {
			/* borrowed (only dtype and shape when it has no data: a compile's shapes) */
			t[i] = in[i];
			if (is_half(in[i].dtype))
				t[i].dtype = ONNX_FLOAT;
			continue;
		}
		if (onnx_tensor_convert(&t[i], &in[i], ONNX_FLOAT)) {
			onnx_f16_inputs_free(t, n);
			return -ENOMEM;
		}
		own[i] = true;
	}
	*out = t;
	return 0;
}

void onnx_f16_inputs_free(struct onnx_tensor *t, unsigned n)
{
	const bool *own;

	if (!t)
		return;
	own = (const bool *)(t + n);
	for (unsigned i = 0; i < n; i++)
		if (own[i])
			onnx_tensor_release(&t[i]);
	free(t);
}

int onnx_f16_outputs(const struct onnx_model *m, struct onnx_tensor *out, unsigned n)
{
	if (!m->f16_promote)
		return 0;
	for (unsigned i = 0; i < n && i < m->n_outputs; i++) {
		struct onnx_value_desc d;
		struct onnx_tensor h;
		int ret;

		/* as declared; an output of undeclared type: the network's half type */
		if (onnx_model_output_desc(m, i, &d))
			continue;
		if (!d.dtype)
			d.dtype = m->f16_type;
		if (out[i].dtype != ONNX_FLOAT || !is_half(d.dtype))
			continue;
		ret = onnx_tensor_convert(&h, &out[i], (enum onnx_dtype)d.dtype);
		if (ret)
			return ret;
		onnx_tensor_release(&out[i]);
		out[i] = h;
	}
	return 0;
}
