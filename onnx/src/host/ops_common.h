/* SPDX-License-Identifier: MIT */
/*
 * ops_common.h - helpers of the host kernels added for issue 15 (ops_elem.c, ops_shape.c, ops_reduce.c,
 * ops_nn.c): output allocation, axes, integer lists read from inputs or attributes, and numpy
 * multidirectional broadcasting of up to four operands.
 */
#ifndef TNPU_ONNX_OPS_COMMON_H
#define TNPU_ONNX_OPS_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static inline int out_alloc(const struct onnx_ctx *c, unsigned i, enum onnx_dtype dt, unsigned ndim,
			    const int64_t *dims)
{
	int ret;

	if (i >= c->n->n_out || c->n->out[i] < 0)
		return 1;	/* optional output not requested: nothing to write */
	ret = onnx_tensor_alloc(node_out(c, i), dt, ndim, dims);
	if (ret == -E2BIG)
		return node_err(c, ret, "output %u would exceed %zu bytes", i, ONNX_MAX_TENSOR_BYTES);
	return ret ? node_err(c, ret, "cannot allocate output %u", i) : 0;
}

static inline bool is_int_type(enum onnx_dtype dt)
{
	return dt == ONNX_UINT8 || dt == ONNX_INT8 || dt == ONNX_UINT16 || dt == ONNX_INT16 || dt == ONNX_INT32 ||
	       dt == ONNX_UINT32 || dt == ONNX_INT64 || dt == ONNX_UINT64;
}

/* Einsum (ops_einsum.c; in ops_norm.c's table); Conv and pooling of 5-D tensors (ops_nd.c, called by
 * ops_host.c's Conv/MaxPool/AveragePool). */
int host_einsum(struct onnx_ctx *c);
/* The window of a 3-D Conv or pool (ops_nd.c), per spatial dimension D, H, W. */
#define ND 3
struct nd_geom {
	int64_t in[ND], k[ND], s[ND], d[ND], pb[ND], pe[ND], out[ND];
};
/* A 3-D Conv: X [n, c, in...], W [k, cg, k...], groups; validated (0) or the node's error. */
struct conv3d_geom {
	int64_t n, c, k, cg, groups;
	struct nd_geom nd;
};
int conv3d_geom(struct onnx_ctx *c, struct conv3d_geom *g3);
int host_conv3d(struct onnx_ctx *c);
/* A 3-D MaxPool (max) or AveragePool: its window, validated (0) or the node's error. */
int pool3d_geom(struct onnx_ctx *c, bool max, struct nd_geom *g);
int host_pool3d(struct onnx_ctx *c, bool max);
/* MaxPool with the Indices output (ops_pool.c). */
int host_maxpool_indices(struct onnx_ctx *c);

/* SoftmaxCrossEntropyLoss (ops_loss.c) with the log-probabilities of x [N, C, D] over C from logp (the
 * host's, or the vector units' in ops_accel_vec.c): 0, logp's ONNX_FALLBACK (nothing written), or -errno. */
typedef int (*sce_logp_fn)(struct onnx_ctx *c, const struct onnx_tensor *x, int64_t N, int64_t C, int64_t D,
			   float *lp);
int sce_loss(struct onnx_ctx *c, sce_logp_fn logp);
/* NegativeLogLikelihoodLoss (ops_loss.c) with gx[n·D + d] = x[n, t[n, d], d] (0 where ignored; the targets
 * already checked) from gather (the host's, or the device's one-hot product in ops_accel_vec.c). */
typedef int (*nll_gather_fn)(struct onnx_ctx *c, const struct onnx_tensor *x, const struct onnx_tensor *t, int64_t N,
			     int64_t C, int64_t D, bool has_ignore, int64_t ignore, float *gx);
int nll_loss(struct onnx_ctx *c, nll_gather_fn gather);
/* RNN, GRU, LSTM (ops_rnn.c) with the input projections xw[d][row][col] = Σ_k x[row][k] · w[d][col][k]
 * (rows = seq·batch in X's order, cols = gates·hidden) from proj (the device's GEMMs in
 * ops_accel_resize.c), or NULL: computed in the recurrence on the host.  0, proj's ONNX_FALLBACK, or -errno. */
typedef int (*rnn_proj_fn)(struct onnx_ctx *c, const float *x, const float *w, int64_t rows, int64_t in, int64_t cols,
			   int64_t dirs, float *xw);
int rnn_run(struct onnx_ctx *c, rnn_proj_fn proj);
/* DynamicQuantizeLinear (ops_norm.c) with x's minimum and maximum (x not empty; a NaN is the node's error)
 * from range (the host's, or the vector units' REDUCE MIN/MAX in ops_accel_vec.c). */
typedef int (*dynq_range_fn)(struct onnx_ctx *c, const struct onnx_tensor *x, float *lo, float *hi);
int dynq_run(struct onnx_ctx *c, dynq_range_fn range);

/* Required input i (not absent). */
int in_req(const struct onnx_ctx *c, unsigned i, const char *what, const struct onnx_tensor **t);
/* Normalise axis (negative counts from the end) into 0..rank-1; error names the node. */
int axis_norm(const struct onnx_ctx *c, int64_t axis, unsigned rank, int64_t *out);
/* 1-D (or scalar) integer tensor as a list of at most max values. */
int int_list(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what, int64_t *out, unsigned max,
	     unsigned *n);
/* A scalar (or 1-element) input as double. */
int scalar_of(const struct onnx_ctx *c, const struct onnx_tensor *t, const char *what, double *v);

/* Axes of Squeeze/Unsqueeze/Reduce*: from input idx (opset >= new_opset) or the "axes" attribute. */
int axes_of(const struct onnx_ctx *c, int64_t new_opset, unsigned idx, int64_t *axes, unsigned *n, bool *given);
/* Normalise a list of distinct axes against rank; mask gets one bit per axis. */
int axes_mask(const struct onnx_ctx *c, const int64_t *axes, unsigned n, unsigned rank, unsigned *mask);
/* The axes a Reduce* node reduces as one run [*first, *end) of x's dimensions (ops_reduce.c); false when
 * they are not one run (or the node is a no-op): the vector units reduce one run of axes. */
bool reduce_axis_run(struct onnx_ctx *c, const struct onnx_tensor *x, unsigned *first, unsigned *end);

/* Broadcast iteration over n (<= 4) operands: out element o reads operand k at off[k]. */
struct bcast {
	unsigned nd, n;
	int64_t dims[ONNX_MAX_DIMS], st[4][ONNX_MAX_DIMS], idx[ONNX_MAX_DIMS];
	size_t off[4];
};
int bcast_init(const struct onnx_ctx *c, struct bcast *b, const struct onnx_tensor *const *t, unsigned n);
static inline void bcast_next(struct bcast *b)
{
	for (int d = (int)b->nd - 1; d >= 0; d--) {
		b->idx[d]++;
		for (unsigned k = 0; k < b->n; k++)
			b->off[k] += (size_t)b->st[k][d];
		if (b->idx[d] < b->dims[d])
			return;
		for (unsigned k = 0; k < b->n; k++)
			b->off[k] -= (size_t)(b->st[k][d] * b->dims[d]);
		b->idx[d] = 0;
	}
}

/* Row-major strides of a shape. */
static inline void strides_of(unsigned nd, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;

	for (int i = (int)nd - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
}

#endif /* TNPU_ONNX_OPS_COMMON_H */
