/* SPDX-License-Identifier: MIT */
/*
 * ops_wq.c - weight-only quantised MatMuls (issue 29): com.microsoft MatMulNBits, written from ONNX
 * Runtime's contrib operator specification (docs/ContribOperators.md, "com.microsoft.MatMulNBits"):
 *
 *   Y = A @ dequant(B)^T (+ bias),  A float [..., K],  Y float [..., N]
 *   B uint8 [N, ceil(K / block_size), block_size * bits / 8]: for output channel n, block b, the codes of
 *     k = b * block_size + j, packed along K, the lowest bits first (bits 4: code j in byte j / 2, the low
 *     nibble for even j); a last block shorter than block_size is padded
 *   scales float [N * blocks] (n-major);  zero_points (optional) uint8 [N * ceil(blocks * bits / 8)],
 *     packed the same way per output channel, default 2^(bits - 1);  g_idx: not supported;  bias float [N]
 *   dequant(B)[n, k] = (code - zero_point[n, b]) * scale[n, b]
 *
 * and onnx_wq_gemm_weight(), the float32 [K, N] weight such a node -- or a MatMul whose B is the
 * DequantizeLinear of a constant -- computes with (internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct nbits {
	int64_t K, N, bits, block, blocks, blob;	/* blob: bytes of one block of one channel */
	int64_t zrow;					/* bytes of zero points per channel */
	const uint8_t *b, *zp;
	const float *scales, *bias;
};

static int describe_err(const struct onnx_ctx *c, const char *what, const struct onnx_tensor *t, const char *want)
{
	char have[128];

	onnx_tensor_describe(t, have, sizeof(have));
	return node_err(c, -EINVAL, "%s is %s, expected %s", what, have, want);
}

/* The attributes and the constant-side inputs (B, scales, zero_points, g_idx, bias) of a MatMulNBits. */
static int nbits_check(const struct onnx_ctx *c, struct nbits *q)
{
	const struct onnx_tensor *b = node_in(c, 1), *s = node_in(c, 2), *zp = node_in(c, 3), *bias = node_in(c, 5);
	char want[128];

	memset(q, 0, sizeof(*q));
	q->K = attr_int(c->n->pb, "K", -1);
	q->N = attr_int(c->n->pb, "N", -1);
	q->bits = attr_int(c->n->pb, "bits", 4);
	q->block = attr_int(c->n->pb, "block_size", -1);
	if (q->K < 1 || q->K > ONNX_MAX_DIM_SIZE || q->N < 1 || q->N > ONNX_MAX_DIM_SIZE)
		return node_err(c, -EINVAL, "attributes K = %lld and N = %lld must be 1 to %d", (long long)q->K,
				(long long)q->N, ONNX_MAX_DIM_SIZE);
	if (q->bits != 4 && q->bits != 8)
		return node_err(c, -EINVAL, "bits = %lld is not supported (4 or 8)", (long long)q->bits);
	if (q->block < 16 || q->block > (1 << 20) || (q->block & (q->block - 1)))
		return node_err(c, -EINVAL, "block_size = %lld must be a power of two of at least 16", (long long)q->block);
	q->blocks = (q->K + q->block - 1) / q->block;
	q->blob = q->block * q->bits / 8;
	q->zrow = (q->blocks * q->bits + 7) / 8;
	if (c->n->n_in < 3 || !b || !s)
		return node_err(c, -EINVAL, "needs inputs A, B and scales");
	snprintf(want, sizeof(want), "UINT8 [%lld,%lld,%lld] (N, ceil(K / block_size), block_size * bits / 8)",
		 (long long)q->N, (long long)q->blocks, (long long)q->blob);
	if (b->dtype != ONNX_UINT8 || b->ndim != 3 || b->dims[0] != q->N || b->dims[1] != q->blocks ||
	    b->dims[2] != q->blob)
		return describe_err(c, "input B", b, want);
	snprintf(want, sizeof(want), "FLOAT of N * ceil(K / block_size) = %lld elements",
		 (long long)(q->N * q->blocks));
	if (s->dtype != ONNX_FLOAT || s->count != (size_t)(q->N * q->blocks))
		return describe_err(c, "input scales", s, want);
	if (zp) {
		snprintf(want, sizeof(want), "UINT8 of N * ceil(blocks * bits / 8) = %lld elements (packed)",
			 (long long)(q->N * q->zrow));
		if (zp->dtype != ONNX_UINT8 || zp->count != (size_t)(q->N * q->zrow))
			return describe_err(c, "input zero_points", zp, want);
		q->zp = zp->data;
	}
	if (node_in(c, 4))
		return node_err(c, -EOPNOTSUPP, "input g_idx (act-order block indices) is not supported");
	if (bias) {
		snprintf(want, sizeof(want), "FLOAT [%lld] (N)", (long long)q->N);
		if (bias->dtype != ONNX_FLOAT || bias->count != (size_t)q->N)
			return describe_err(c, "input bias", bias, want);
		q->bias = bias->data;
	}
	q->b = b->data;
	q->scales = s->data;
	return 0;
}

/* Code i of a row of packed bits-wide codes (the lowest bits first). */
static inline int code_at(const uint8_t *row, int64_t i, int64_t bits)
{
	return bits == 8 ? row[i] : (row[i >> 1] >> ((i & 1) * 4)) & 0xf;
}

/* dequant(B) transposed: w[k * N + n], the MatMul B layout a GEMM step reads. */
static void nbits_dequant(const struct nbits *q, float *w)
{
	for (int64_t n = 0; n < q->N; n++)
		for (int64_t bl = 0; bl < q->blocks; bl++) {
			const uint8_t *codes = q->b + (n * q->blocks + bl) * q->blob;
			int zp = q->zp ? code_at(q->zp + n * q->zrow, bl, q->bits) : 1 << (q->bits - 1);
			float s = q->scales[n * q->blocks + bl];

			for (int64_t j = 0; j < q->block && bl * q->block + j < q->K; j++)
				w[(bl * q->block + j) * q->N + n] = (float)(code_at(codes, j, q->bits) - zp) * s;
		}
}

/* The DequantizeLinear that produces value v, if it runs on constants only; NULL otherwise. */
static const struct onnx_node *const_dq(const struct onnx_model *m, int v)
{
	unsigned n_p;
	const int *p = onnx_producers(m, v, &n_p);

	for (unsigned j = 0; j < n_p; j++) {
		const struct onnx_node *n = &m->nodes[p[j]];
		bool all_const = n->n_in >= 2;

		if (n->op != OP_DEQUANTIZELINEAR || n->folded)
			continue;
		for (unsigned k = 0; k < n->n_in; k++)
			all_const &= n->in[k] < 0 || m->vals[n->in[k]].is_const;
		return all_const ? n : NULL;
	}
	return NULL;
}

int onnx_wq_gemm_weight(const struct onnx_ctx *c, struct onnx_tensor *w)
{
	const struct onnx_node *dq;
	struct nbits q;
	int ret;

	if (c->n->op == OP_MATMULNBITS) {
		int64_t dims[2];

		if ((ret = nbits_check(c, &q)))
			return ret;
		dims[0] = q.K;
		dims[1] = q.N;
		if ((ret = onnx_tensor_alloc(w, ONNX_FLOAT, 2, dims)))
			return node_err(c, ret, "cannot allocate the dequantised weight (%lld x %lld)", (long long)q.K,
					(long long)q.N);
		nbits_dequant(&q, w->data);
		return 0;
	}
	if (c->n->op == OP_MATMUL && c->n->n_in >= 2 && c->n->in[1] >= 0 && (dq = const_dq(c->m, c->n->in[1]))) {
		/* DequantizeLinear's own kernel (the specification's formula), run on the constants once */
		struct onnx_tensor *out = &c->m->vals[dq->out[0]].t, keep = *out;
		struct onnx_ctx dc = { .m = c->m, .n = dq, .err = c->err };
		onnx_kernel k = onnx_host_kernel(OP_DEQUANTIZELINEAR);

		memset(out, 0, sizeof(*out));
		ret = onnx_node_check_io(&dc);
		if (!ret)
			ret = k(&dc);
		*w = *out;
		*out = keep;
		return ret;
	}
	return node_err(c, -EINVAL, "not a weight-only quantised MatMul");
}

static int host_matmulnbits(struct onnx_ctx *c)
{
	const struct onnx_tensor *a = node_in(c, 0);
	struct onnx_tensor w = { 0 };
	int64_t dims[ONNX_MAX_DIMS], rows;
	const float *wp, *ap;
	struct nbits q;
	float *y;
	int ret;

	if ((ret = nbits_check(c, &q)))
		return ret;
	if (a->dtype != ONNX_FLOAT || a->ndim < 1 || a->dims[a->ndim - 1] != q.K) {
		char want[64];

		snprintf(want, sizeof(want), "FLOAT [..., %lld] (K)", (long long)q.K);
		return describe_err(c, "input A", a, want);
	}
	memcpy(dims, a->dims, sizeof(dims));
	dims[a->ndim - 1] = q.N;
	if ((ret = onnx_tensor_alloc(node_out(c, 0), ONNX_FLOAT, a->ndim, dims)))
		return node_err(c, ret, "cannot allocate output 0");
	if ((ret = onnx_wq_gemm_weight(c, &w)))
		return ret;
	rows = q.K ? (int64_t)(a->count / (size_t)q.K) : 0;
	ap = a->data;
	wp = w.data;
	y = node_out(c, 0)->data;
	for (int64_t i = 0; i < rows; i++)
		for (int64_t n = 0; n < q.N; n++) {
			double s = q.bias ? q.bias[n] : 0.0;

			for (int64_t k = 0; k < q.K; k++)
				s += (double)ap[i * q.K + k] * wp[k * q.N + n];
			y[i * q.N + n] = (float)s;
		}
	onnx_tensor_release(&w);
	return 0;
}

const onnx_kernel onnx_wq_kernels[OP_COUNT] = {
	[OP_MATMULNBITS] = host_matmulnbits,
};
