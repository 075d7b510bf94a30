/* SPDX-License-Identifier: MIT */
/*
 * qgemm.c - accel_qgemm: C = A x W with W packed int8 / int4 (weight-only quantisation, issue #29).
 * W stays packed in host memory; the matmul engine loads each K x N weight tile with DMA_DEQ
 * (Documentation/hardware/commands.md), which expands the codes into the fp32 N-major tile the
 * trans_b GEMM already reads (MM_MAT_T layout), so the program and the tiling are those of accel_gemm.
 */
#include <string.h>

#include "epilogue.h"

/* Bytes of a packed run of `count` elements of `bits` each (4 or 8). */
static uint64_t run_bytes(uint64_t count, unsigned bits)
{
	return bits == 4 ? (count + 1) / 2 : count;
}

/* Column stream [off, off + (n - 1) * pitch + bytes) inside buf. */
static int stream_arg(struct accel_dev *dev, const struct accel_buffer *buf, uint64_t off, uint64_t pitch,
		      uint32_t n, uint64_t bytes, const char *what)
{
	uint64_t end;

	if (!buf)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: the %s buffer is NULL", what);
	if (buf->dev != dev)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: the %s buffer belongs to another device", what);
	if (pitch < bytes && n > 1)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: %s pitch %llu is below one column's %llu bytes", what,
				    (unsigned long long)pitch, (unsigned long long)bytes);
	if (pitch > UINT32_MAX)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: %s pitch %llu above 2^32 - 1", what,
				    (unsigned long long)pitch);
	if (__builtin_mul_overflow((uint64_t)(n - 1), pitch, &end) || __builtin_add_overflow(end, off, &end) ||
	    __builtin_add_overflow(end, bytes, &end) || end > buf->size)
		return accel_seterr(dev, -ERANGE, "accel_qgemm: %s of %u columns (offset %llu, pitch %llu, %llu bytes "
				    "each) extend past the end of their buffer (%llu bytes)", what, n,
				    (unsigned long long)off, (unsigned long long)pitch, (unsigned long long)bytes,
				    (unsigned long long)buf->size);
	return 0;
}

/* The packed weights' rules (accel.h struct accel_qweights); fills the DMA_DEQ template. */
static int qweights_arg(struct accel_dev *dev, const struct accel_qweights *w, struct mm_src *b)
{
	unsigned bits;
	uint64_t nb;
	int ret;

	if (!w)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: the packed weights are NULL");
	if (w->format > ACCEL_QFMT_UINT4)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: unknown weight format %d (INT8, UINT8 or UINT4)",
				    (int)w->format);
	if (!w->k || !w->n)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: the weights are %ux%u; K and N must be >= 1", w->k, w->n);
	if (w->block && (w->block < TNPU_DEQ_BLOCK_MIN || w->block > TNPU_DEQ_BLOCK_MAX || (w->block & (w->block - 1))))
		return accel_seterr(dev, -EINVAL, "accel_qgemm: block %u is not 0 (per column) or a power of two "
				    "16..4096", w->block);
	bits = w->format == ACCEL_QFMT_UINT4 ? 4 : 8;
	nb = w->block ? (w->k + (uint64_t)w->block - 1) / w->block : 1;
	if ((ret = stream_arg(dev, w->codes, w->codes_offset, w->code_pitch, w->n, run_bytes(w->k, bits), "codes")) ||
	    (ret = stream_arg(dev, w->scales, w->scales_offset, w->scale_pitch, w->n, nb * (w->scale_f16 ? 2 : 4),
			      "scales")))
		return ret;
	if (w->zero_points &&
	    (ret = stream_arg(dev, w->zero_points, w->zp_offset, w->zp_pitch, w->n, run_bytes(nb, bits), "zero points")))
		return ret;
	if (!(dev->caps.features & TNPU_FEAT_WDECOMP))
		return accel_seterr(dev, -EOPNOTSUPP, "accel_qgemm: the device has no decompressing load "
				    "(CAP_FEATURES bit 23)");
	memset(&b->deq, 0, sizeof(b->deq));
	b->kind = MM_DEQ;
	b->buf = w->codes;
	b->scale_buf = w->scales;
	b->zp_buf = w->zero_points;
	b->deq.src_va = w->codes->va + w->codes_offset;
	b->deq.scale_va = w->scales->va + w->scales_offset;
	b->deq.zp_va = w->zero_points ? w->zero_points->va + w->zp_offset : 0;
	b->deq.src_pitch = (uint32_t)w->code_pitch;
	b->deq.scale_pitch = (uint32_t)w->scale_pitch;
	b->deq.zp_pitch = (uint32_t)w->zp_pitch;
	b->deq.block = w->block;
	b->deq.fmt = (uint8_t)(w->format == ACCEL_QFMT_INT8 ? TNPU_DEQ_FMT_S8 :
			       w->format == ACCEL_QFMT_UINT8 ? TNPU_DEQ_FMT_U8 : TNPU_DEQ_FMT_U4);
	b->deq.out_dtype = TNPU_DTYPE_FP32;
	b->deq.qflags = w->scale_f16 ? TNPU_DEQ_F_SCALE_F16 : 0;
	return 0;
}

void qgemm_load_b(struct accel_cmdstream *cs, const struct mm_src *b, uint32_t b_off, uint32_t sram_pitch,
		  unsigned row, unsigned half, uint32_t n0, uint32_t nv, uint32_t k0, uint32_t kv)
{
	struct tnpu_cmd_dma_deq d = b->deq;

	d.hdr.opcode = TNPU_CMD_DMA_DEQ;
	d.hdr.flags = TNPU_CMD_F_ASYNC;
	d.hdr.size = sizeof(d);
	d.src_va += (uint64_t)n0 * d.src_pitch;
	d.scale_va += (uint64_t)n0 * d.scale_pitch;
	if (d.zp_va)
		d.zp_va += (uint64_t)n0 * d.zp_pitch;
	d.k0 = k0;
	d.kt = kv;
	d.nt = nv;
	d.sram_off = b_off;
	d.sram_pitch = sram_pitch;
	d.row = (uint8_t)row;
	d.half = (uint8_t)half;
	cs_raw(cs, &d, sizeof(d));
}

int accel_qgemm(struct accel_dev *dev, const struct accel_qgemm_desc *d, const struct accel_submit *sub,
		struct accel_job **job)
{
	struct accel_cmdstream cs;
	struct mm_problem p;
	struct mm_ctx x;
	uint32_t M, K;
	int ret;

	ret = accel_op_begin(dev, d, "accel_qgemm", job);
	if (ret)
		return ret;
	if ((ret = mat_arg(dev, d->a, "A")) || (ret = mat_arg(dev, d->c, "C")))
		return ret;
	if ((ret = arg_no_overlap(dev, d->c, "C", d->a, "A")) ||
	    (ret = arg_no_overlap(dev, d->c, "C", d->epi.bias, "the bias")))
		return ret;
	if (d->a->dtype != ACCEL_FP32 || d->c->dtype != ACCEL_FP32)
		return accel_seterr(dev, -EINVAL, "accel_qgemm: A and C must be FP32 (the weights expand to fp32)");
	memset(&p, 0, sizeof(p));
	ret = qweights_arg(dev, d->w, &p.b);
	if (ret)
		return ret;
	M = d->trans_a ? d->a->shape[1] : d->a->shape[0];
	K = d->trans_a ? d->a->shape[0] : d->a->shape[1];
	if (K != d->w->k)
		return accel_seterr(dev, -EINVAL, "inner dimensions differ: op(A) is %ux%u, W is %ux%u", M, K, d->w->k,
				    d->w->n);
	if (d->c->shape[0] != M || d->c->shape[1] != d->w->n)
		return accel_seterr(dev, -EINVAL, "C is %ux%u, expected %ux%u", d->c->shape[0], d->c->shape[1], M,
				    d->w->n);
	p.M = M;
	p.N = d->w->n;
	p.K = K;
	p.f32 = true;
	ret = epi_setup(dev, &d->epi, true, d->c->dtype, p.N, &p);
	if (ret)
		return ret;
	if (p.res_tensor) {
		const struct accel_tensor *r = p.res_tensor;

		if (r->ndim != 2 || r->shape[0] != M || r->shape[1] != p.N || r->strides[1] != 4 || r->strides[0] % 4)
			return accel_seterr(dev, -EINVAL, "residual must be an %ux%u matrix with contiguous rows", M, p.N);
		p.res_va = r->buf->va + r->offset;
		p.res_pitch = (uint64_t)r->strides[0];
	}
	p.a.kind = d->trans_a ? MM_MAT_T : MM_MAT;
	p.a.buf = d->a->buf;
	p.a.va = d->a->buf->va + d->a->offset;
	p.a.pitch = (uint64_t)d->a->strides[0];
	p.c_buf = d->c->buf;
	p.c_va = d->c->buf->va + d->c->offset;
	p.c_pitch = (uint64_t)d->c->strides[0];
	if (p.c_va % 4 || p.c_pitch % 4)
		return accel_seterr(dev, -EINVAL, "C: 32-bit output must be 4-byte aligned");
	cs_init(&cs, dev);
	cs_use(&cs, p.a.buf);
	cs_use(&cs, p.b.buf);
	cs_use(&cs, p.b.scale_buf);
	cs_use(&cs, p.b.zp_buf);
	cs_use(&cs, p.c_buf);
	cs_use(&cs, p.bias_buf);
	cs_use(&cs, p.res_buf);
	mm_ctx_init(&x, dev, &cs);
	ret = mm_emit(&x, &p);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
