/* SPDX-License-Identifier: MIT */
/* accel_util.h - device buffers and job bookkeeping shared by the accel kernels. */
#ifndef TNPU_ONNX_ACCEL_UTIL_H
#define TNPU_ONNX_ACCEL_UTIL_H

#include "geom.h"

/* Up to 8 device buffers of one node, freed together. */
struct abufs {
	struct accel_buffer *b[8];
	unsigned n;
};

/* Allocate a buffer of bytes (>= 1) and copy src (may be NULL) into it. */
int abuf_new(struct onnx_ctx *c, struct abufs *bs, const void *src, size_t bytes, struct accel_buffer **out);
void abufs_free(struct abufs *bs);
/* Wait for a job started by a libaccel call that returned ret; add its counters to the stats. */
int ajob_finish(struct onnx_ctx *c, int ret, struct accel_job *job, const char *what);

/* Would the device run this Conv (dt INT8 or FP32, NCHW, bias or not, the fused ReLU/Clip)?  libaccel's
 * answer (accel_op_supported on shape-only tensors): 0, -EOPNOTSUPP with the reason in why, or -EINVAL. */
int accel_conv_query(struct accel_dev *dev, const struct conv_geom *g, enum accel_dtype dt, bool bias, bool relu,
		     bool clamp, float lo, float hi, char *why, size_t len);

/* One 2-D convolution on the device (accel_conv2d) of NCHW buffers with geometry g, the node's fused
 * ReLU/Clip, pad value zp (INT8); ONNX_FALLBACK where libaccel refuses it (accel_conv_query). */
int accel_conv_run(struct onnx_ctx *c, const struct conv_geom *g, enum accel_dtype dt, struct accel_buffer *xb,
		   struct accel_buffer *wb, struct accel_buffer *bb, struct accel_buffer *yb, int32_t zp);
/* Conv over three spatial dimensions (5-D) as one 2-D convolution (ops_accel_nd.c). */
int accel_conv3d(struct onnx_ctx *c);
/* One 2-D pool on the device (accel_pool2d) of NCHW fp32 buffers with geometry g (AVG: the node's
 * count_include_pad decides AVG or AVG_EXCL_PAD); ONNX_FALLBACK where the device cannot take it. */
int accel_pool_run(struct onnx_ctx *c, const struct pool_geom *g, enum accel_pool_kind kind,
		   struct accel_buffer *xb, struct accel_buffer *yb);
/* MaxPool / AveragePool of a 5-D X as two 2-D pools (ops_accel_nd.c). */
int accel_pool3d(struct onnx_ctx *c, enum accel_pool_kind kind);

/* The libaccel kind of an AveragePool: AVG where the window count R*S is right, AVG_EXCL_PAD where neither
 * the padding nor the ceil_mode overhang counts; ONNX_FALLBACK where padding counts but the overhang not. */
int pool_avg_kind(const struct onnx_node *n, const struct pool_geom *g, enum accel_pool_kind *kind);
/* Would the device run this fp32 MaxPool/AveragePool (padding bottom/right including the ceil_mode
 * overhang)?  libaccel's answer, as accel_conv_query. */
int accel_pool_query(struct accel_dev *dev, const struct pool_geom *g, enum accel_pool_kind kind, char *why,
		     size_t len);

/* Would the device run this fp32 GEMM, C[M x N] = op(A) op(B) with a 1 x N bias (or none), act (enum accel_act)
 * with CLAMP bounds lo..hi and the output scale?  libaccel's answer, as accel_conv_query. */
int accel_gemm_query(struct accel_dev *dev, int64_t M, int64_t K, int64_t N, bool ta, bool tb, bool bias, int act,
		     float lo, float hi, float scale, char *why, size_t len);

/* int8 conv / matmul on the device with int32 results (ops_accel.c), used by the int8 family:
 * x8 (int8, NCHW), w8 (int8, OIHW), bias (int32 K, may be NULL), pad value x_zp. */
int accel_conv_i8(struct onnx_ctx *c, const struct conv_geom *g, const int8_t *x8, const int8_t *w8,
		  const int32_t *bias, int32_t x_zp, int32_t *acc);
/* acc[M x N] = a8[M x K] * b8[K x N] + bias[N] (bias may be NULL). */
int accel_gemm_i8(struct onnx_ctx *c, int64_t M, int64_t K, int64_t N, const int8_t *a8, const int8_t *b8,
		  const int32_t *bias, int32_t *acc);

/* out = sat8(round(acc * r[c]) + zp) on the device (accel_requant, ISA 2), acc viewed as
 * [count / (n_ch * inner), n_ch, inner] with c the middle index; ONNX_FALLBACK without ISA 2 or for a
 * scale the fixed-point multiplier cannot hold. */
int accel_requant_i32(struct onnx_ctx *c, const int32_t *acc, size_t count, int64_t n_ch, int64_t inner,
		      const double *r, int32_t zp, int8_t *out);

/* Node kernels on the vector units (ops_accel_vec.c), entries of onnx_accel_kernels: the fp32 functions
 * (vec_act.h), Add/Sub/Mul/Div/Max/Min/PRelu, Reduce* over one run of axes, ArgMax/ArgMin, Softmax and
 * LogSoftmax, SoftmaxCrossEntropyLoss's log-probabilities. */
int accel_vec_unary(struct onnx_ctx *c);
int accel_vec_binary(struct onnx_ctx *c);
int accel_vec_reduce(struct onnx_ctx *c);
int accel_vec_arg(struct onnx_ctx *c);
int accel_vec_softmax(struct onnx_ctx *c);
int accel_vec_sceloss(struct onnx_ctx *c);
int accel_vec_layernorm(struct onnx_ctx *c);
int accel_vec_variadic(struct onnx_ctx *c);
int accel_vec_hardmax(struct onnx_ctx *c);
int accel_vec_nllloss(struct onnx_ctx *c);
int accel_vec_qdq(struct onnx_ctx *c);
int accel_vec_dynq(struct onnx_ctx *c);
/* BatchNormalization (parameters of the run) and InstanceNormalization on the vector units (ops_accel_norm.c). */
int accel_batchnorm(struct onnx_ctx *c);
int accel_instancenorm(struct onnx_ctx *c);
/* Resize/Upsample of FLOAT tensors as GEMMs by the axes' interpolation matrices (ops_accel_resize.c). */
int accel_resize(struct onnx_ctx *c);
/* RNN, GRU, LSTM with the input projections as device GEMMs (ops_accel_resize.c). */
int accel_rnn(struct onnx_ctx *c);

/* One GEMM job, waited for: C[M x N] (at coff of cb) = op(A) op(B) (ta/tb: A stored K x M, B N x K) with
 * epilogue epi (NULL: none); dt FP32 or INT8 (C INT32). */
int gemm_run(struct onnx_ctx *c, enum accel_dtype dt, struct accel_buffer *ab, uint64_t aoff, struct accel_buffer *bb,
	     uint64_t boff, struct accel_buffer *cb, uint64_t coff, int64_t M, int64_t K, int64_t N, bool ta, bool tb,
	     const struct accel_epilogue *epi);

#endif /* TNPU_ONNX_ACCEL_UTIL_H */
