/* SPDX-License-Identifier: MIT */
/*
 * compile_wq.c - weight-only quantised MatMuls on the decompressing load (issue 29, deliverable 3).
 *
 * fold_wq.c turns each weight-only quantised MatMul into a MatMul by its dequantised fp32 weight and keeps
 * where that weight came from.  On a device with DMA_DEQ (CAP_FEATURES bit 23) the compiled plan packs
 * the quantised bytes instead into the weight image, in the N-major form of struct accel_qweights, and the
 * GEMM step runs as accel_qgemm: the device reads the packed bytes and expands each weight tile on its way
 * into the storage unit, (code - zero point) * scale in fp32 with one rounding, the value the fold computes
 * on the host, so the results do not change.  The forms (Documentation/llm.md, "Quantisation formats"):
 *   MatMulNBits, bits 4 or 8: B [N, blocks, block_size * bits / 8] is already N-major, each column's codes
 *     along K with the lowest bits first; its scales and packed zero points are n-major too: copied as
 *     they are (UINT4 or UINT8, the default zero points 8 and 128 are DMA_DEQ's).  One block per column
 *     runs per column (block 0), else block_size must be at most 4096 (DMA_DEQ's largest block);
 *   DequantizeLinear(q INT8/UINT8 [K, N], scale FLOAT [N] (axis 1) or scalar[, zero point]) -> MatMul's B:
 *     q transposed to N-major, one scale (and zero point) per column; UINT8 always with its zero points
 *     (ONNX's default is 0, DMA_DEQ's 128).
 * Anything else keeps the fp32 weight (ONNX_FALLBACK).
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"

#define FEAT_WDECOMP (1u << 23)	/* CAP_FEATURES: DMA_DEQ */
#define DEQ_BLOCK_MAX 4096u	/* DMA_DEQ's block: 0 (per column) or a power of two 16..4096 */

/* A constant of the model of dtype dt and count elements (NULL: not one). */
static const struct onnx_tensor *konst(const struct onnx_model *m, int v, enum onnx_dtype dt, uint64_t count)
{
	const struct onnx_tensor *t;

	if (v < 0 || !m->vals[v].is_const)
		return NULL;
	t = &m->vals[v].t;
	return t->dtype == dt && t->count == count && t->data ? t : NULL;
}

/* Bytes into the weight image: the offset, or UINT64_MAX (with cm's error) when out of memory. */
static uint64_t add(struct onnx_compiled *cm, const void *src, uint64_t bytes)
{
	uint64_t off = cm_wimg_add(cm, src, bytes);

	if (off == UINT64_MAX)
		cm_seterr(cm, -ENOMEM, "weights: out of memory packing a quantised weight");
	return off;
}

/* MatMulNBits n (K x N = s's): its blob, scales and zero points as they are. */
static int pack_nbits(struct onnx_compiled *cm, const struct onnx_node *n, struct cstep *s)
{
	const struct onnx_model *m = cm->m;
	const struct onnx_node *src = &m->nodes[n->wq_src];
	int64_t bits = attr_int(src->pb, "bits", 4), block = attr_int(src->pb, "block_size", -1);
	uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N, blocks, blob, zrow;
	const struct onnx_tensor *b, *sc, *zp = NULL;

	if ((bits != 4 && bits != 8) || block < 16 || (block & (block - 1)) || attr_int(src->pb, "K", -1) != s->K ||
	    attr_int(src->pb, "N", -1) != s->N)
		return ONNX_FALLBACK;
	blocks = (K + (uint64_t)block - 1) / (uint64_t)block;
	blob = (uint64_t)block * (uint64_t)bits / 8;
	zrow = (blocks * (uint64_t)bits + 7) / 8;
	if (blocks > 1 && (uint64_t)block > DEQ_BLOCK_MAX)
		return ONNX_FALLBACK;
	b = konst(m, n->wq_in[0], ONNX_UINT8, N * blocks * blob);
	sc = konst(m, n->wq_in[1], ONNX_FLOAT, N * blocks);
	if (!b || !sc || (n->wq_in[2] >= 0 && !(zp = konst(m, n->wq_in[2], ONNX_UINT8, N * zrow))))
		return ONNX_FALLBACK;
	s->wq = 1 + (bits == 4 ? ACCEL_QFMT_UINT4 : ACCEL_QFMT_UINT8);
	s->wq_block = blocks > 1 ? (uint32_t)block : 0;
	s->wq_pitch[0] = (uint32_t)(blocks * blob);
	s->wq_pitch[1] = (uint32_t)(blocks * 4);
	s->wq_pitch[2] = (uint32_t)zrow;
	s->wq_off[1] = UINT64_MAX;
	if ((s->w_off = add(cm, b->data, N * blocks * blob)) == UINT64_MAX ||
	    (s->wq_off[0] = add(cm, sc->data, N * blocks * 4)) == UINT64_MAX ||
	    (zp && (s->wq_off[1] = add(cm, zp->data, N * zrow)) == UINT64_MAX))
		return -ENOMEM;
	return 0;
}

/* DequantizeLinear n->wq_src of q [K, N] per column or per tensor: q transposed, a scale per column. */
static int pack_dq(struct onnx_compiled *cm, const struct onnx_node *n, struct cstep *s)
{
	const struct onnx_model *m = cm->m;
	const struct onnx_node *dq = &m->nodes[n->wq_src];
	uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N, per, ns;
	const struct onnx_tensor *q, *sc, *zp = NULL;
	int64_t axis = attr_int(dq->pb, "axis", 1);
	enum onnx_dtype dt;
	uint8_t *codes;
	float *scales;

	if (n->wq_in[0] < 0 || !m->vals[n->wq_in[0]].is_const || attr_int(dq->pb, "block_size", 0))
		return ONNX_FALLBACK;
	dt = m->vals[n->wq_in[0]].t.dtype;
	q = konst(m, n->wq_in[0], dt, K * N);
	if ((dt != ONNX_INT8 && dt != ONNX_UINT8) || !q || q->ndim != 2 || q->dims[0] != s->K || (axis != 1 && axis != -1))
		return ONNX_FALLBACK;
	/* a scale per column, or one for the tensor */
	ns = n->wq_in[1] >= 0 && m->vals[n->wq_in[1]].is_const ? m->vals[n->wq_in[1]].t.count : 0;
	per = ns == N ? 1 : 0;
	if ((ns != N && ns != 1) || !(sc = konst(m, n->wq_in[1], ONNX_FLOAT, ns)) ||
	    (n->wq_in[2] >= 0 && !(zp = konst(m, n->wq_in[2], dt, ns))))
		return ONNX_FALLBACK;
	s->wq = 1 + (dt == ONNX_INT8 ? ACCEL_QFMT_INT8 : ACCEL_QFMT_UINT8);
	s->wq_block = 0;
	s->wq_pitch[0] = (uint32_t)K;
	s->wq_pitch[1] = 4;
	s->wq_pitch[2] = 1;
	s->wq_off[1] = UINT64_MAX;
	if ((s->w_off = add(cm, NULL, K * N)) == UINT64_MAX || (s->wq_off[0] = add(cm, NULL, N * 4)) == UINT64_MAX ||
	    ((zp || dt == ONNX_UINT8) && (s->wq_off[1] = add(cm, NULL, N)) == UINT64_MAX))
		return -ENOMEM;
	codes = cm->wimg + s->w_off;
	for (uint64_t k = 0; k < K; k++)
		for (uint64_t j = 0; j < N; j++)
			codes[j * K + k] = ((const uint8_t *)q->data)[k * N + j];
	scales = (float *)(void *)(cm->wimg + s->wq_off[0]);
	for (uint64_t j = 0; j < N; j++) {
		scales[j] = ((const float *)sc->data)[j * per];
		if (zp)
			cm->wimg[s->wq_off[1] + j] = ((const uint8_t *)zp->data)[j * per];
	}
	return 0;
}

int cm_wq_lower(struct onnx_compiled *cm, const struct onnx_node *n, struct cstep *s)
{
	struct cstep keep = *s;
	uint64_t wbytes = cm->wbytes;
	int ret;

	if (!n->wq || !(cm->geom[6] & FEAT_WDECOMP) || s->ad[0] > 1 || s->ta || s->tb || n->wq_src < 0 ||
	    (unsigned)n->wq_src >= cm->m->n_nodes || s->K > UINT32_MAX || s->N > UINT32_MAX)
		return ONNX_FALLBACK;
	ret = cm->m->nodes[n->wq_src].op == OP_DEQUANTIZELINEAR ? pack_dq(cm, n, s) : pack_nbits(cm, n, s);
	if (ret) {
		*s = keep;
		if (ret == ONNX_FALLBACK)
			cm->wbytes = wbytes;	/* nothing of it stays in the image */
		return ret;
	}
	s->in[1] = -1;
	return 0;
}

void cm_wq_weights(const struct onnx_compiled *cm, const struct cstep *s, struct accel_qweights *w)
{
	memset(w, 0, sizeof(*w));
	w->format = (enum accel_qformat)(s->wq - 1);
	w->k = (uint32_t)s->K;
	w->n = (uint32_t)s->N;
	w->block = s->wq_block;
	w->codes = cm->wbuf;
	w->codes_offset = s->w_off;
	w->code_pitch = s->wq_pitch[0];
	w->scales = cm->wbuf;
	w->scales_offset = s->wq_off[0];
	w->scale_pitch = s->wq_pitch[1];
	if (s->wq_off[1] != UINT64_MAX) {
		w->zero_points = cm->wbuf;
		w->zp_offset = s->wq_off[1];
		w->zp_pitch = s->wq_pitch[2];
	}
}

/* N runs of bytes each, pitch apart from off, inside the weight image. */
static bool runs_in(const struct onnx_compiled *cm, uint64_t off, uint64_t pitch, uint64_t n, uint64_t bytes)
{
	uint64_t end = (n - 1) * pitch;

	return (pitch >= bytes || n == 1) && off <= cm->wbytes && end <= cm->wbytes - off &&
	       bytes <= cm->wbytes - off - end;
}

bool cm_wq_check(const struct onnx_compiled *cm, const struct cstep *s)
{
	uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N, bits, nb;

	if (s->wq < 1 || s->wq > 1 + ACCEL_QFMT_UINT4 || !(cm->geom[6] & FEAT_WDECOMP) || s->in[1] != -1 ||
	    s->ad[0] > 1 || s->ta || s->tb || !K || !N ||
	    (s->wq_block && (s->wq_block < 16 || s->wq_block > DEQ_BLOCK_MAX || (s->wq_block & (s->wq_block - 1)))))
		return false;
	bits = s->wq - 1 == ACCEL_QFMT_UINT4 ? 4 : 8;
	nb = s->wq_block ? (K + s->wq_block - 1) / s->wq_block : 1;
	return runs_in(cm, s->w_off, s->wq_pitch[0], N, bits == 4 ? (K + 1) / 2 : K) &&
	       runs_in(cm, s->wq_off[0], s->wq_pitch[1], N, nb * 4) &&
	       (s->wq_off[1] == UINT64_MAX || runs_in(cm, s->wq_off[1], s->wq_pitch[2], N, bits == 4 ? (nb + 1) / 2 : nb));
}
