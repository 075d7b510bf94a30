/* SPDX-License-Identifier: MIT */
/*
 * compile_reduce.c - ReduceSum, ReduceMean, ReduceMax and ReduceSumSquare as device steps (issue 30), and
 * on a device with VEC math (CAP_FEATURES bit 25) ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum
 * and ReduceLogSumExp.
 *
 * The vector units reduce the rows of a matrix (accel_reduce: SUM, MEAN, MAX, SUMSQ of each row of a
 * rows x cols FP32 matrix, any strides).  A reduction over the trailing axes a..r-1 of a contiguous
 * tensor is exactly that, with rows the product of the kept leading dimensions and cols the product of
 * the reduced ones; keepdims only changes the output's shape, not its bytes.  A run of middle axes a..b-1
 * sees the tensor as [L, K, T] (L, K, T the products before, in and after the run): each of the L
 * slices is a T x K matrix read with a row stride of one element and a column stride of T, one job each
 * (at most CS_REDUCE_MAX_SLICES slices).  Axis sets that are no single run, and ArgMax/ArgMin (INT64 indices),
 * stay on the host.  The axes must be known at compile time (an attribute, a constant, or a
 * value computed from the input shapes: compile_datadep.c refuses the others).
 */
#include <string.h>

#include "accel_util.h"
#include "compile.h"
#include "ops_common.h"

int cm_lower_reduce(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s)
{
	const struct onnx_node *n = c->n;
	const struct onnx_tensor *x = node_in(c, 0);
	uint64_t lead = 1, cols = 1, trail = 1;
	unsigned first, end;

	if (!(cm->geom[6] & (1u << 15)) || n->n_out != 1 || n->in[0] < 0 || cm_is_const(cm, n->in[0]) ||
	    x->dtype != ONNX_FLOAT || !x->count || x->ndim < 1)
		return ONNX_FALLBACK;
	if (!reduce_axis_run(c, x, &first, &end))
		return ONNX_FALLBACK;
	for (unsigned d = 0; d < x->ndim; d++)
		*(d < first ? &lead : d < end ? &cols : &trail) *= (uint64_t)x->dims[d];
	if (trail == 1) { /* trailing axes: lead rows of cols, one job */
		s->M = (int64_t)lead;
		s->ad[0] = 0;
	} else if (lead <= CS_REDUCE_MAX_SLICES) { /* a middle run: a job per leading slice */
		s->M = (int64_t)trail;
		s->ad[0] = (int64_t)lead;
	} else {
		return ONNX_FALLBACK;
	}
	if (s->M > UINT32_MAX || cols > UINT32_MAX)
		return ONNX_FALLBACK;
	switch (n->op) {
	case OP_REDUCESUM:
		s->op = ACCEL_REDUCE_SUM;
		break;
	case OP_REDUCEMEAN:
		s->op = ACCEL_REDUCE_MEAN;
		break;
	case OP_REDUCEMAX:
		s->op = ACCEL_REDUCE_MAX;
		break;
	case OP_REDUCESUMSQUARE:
		s->op = ACCEL_REDUCE_SUMSQ;
		break;
	default:
		if (!(cm->geom[6] & (1u << 25)))	/* the rest are VEC math's */
			return ONNX_FALLBACK;
		switch (n->op) {
		case OP_REDUCEMIN: s->op = ACCEL_REDUCE_MIN; break;
		case OP_REDUCEPROD: s->op = ACCEL_REDUCE_PROD; break;
		case OP_REDUCEL1: s->op = ACCEL_REDUCE_L1; break;
		case OP_REDUCEL2: s->op = ACCEL_REDUCE_L2; break;
		case OP_REDUCELOGSUM: s->op = ACCEL_REDUCE_LOGSUM; break;
		case OP_REDUCELOGSUMEXP: s->op = ACCEL_REDUCE_LOGSUMEXP; break;
		default: return ONNX_FALLBACK;
		}
		break;
	}
	/* the output's shape (keepdims) from the host kernel on the probe's zeros: the axes are known */
	onnx_tensor_release(node_out(c, 0));
	if (onnx_run_node(c))
		return cm_seterr(cm, -EINVAL, "compile: %s", c->err);
	s->N = (int64_t)cols;
	s->kind = CS_REDUCE;
	return 0;
}
