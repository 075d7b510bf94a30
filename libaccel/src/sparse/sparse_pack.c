/* SPDX-License-Identifier: MIT */
/*
 * sparse_pack.c - sparse (#8): (value, index) weight packing, done once per model (seed 001 paras
 * 90-94: weights stored as non-zero value + index; seed 003: weights preprocessed offline, zero
 * weights dropped).  Format in Documentation/sparse.md, "Packing format"; struct in sparse.h.
 */
#include <stdlib.h>
#include <string.h>

#include "epilogue.h"
#include "sparse.h"

/* Weight (k, n) of W as raw bytes (e bytes). */
static const uint8_t *w_at(const uint8_t *base, int64_t pitch, bool trans, uint32_t k, uint32_t n, uint32_t e)
{
	return trans ? base + (int64_t)n * pitch + (int64_t)k * e : base + (int64_t)k * pitch + (int64_t)n * e;
}

static bool nonzero(const uint8_t *p, bool f32)
{
	if (!f32)
		return *p != 0;
	{
		float v;

		memcpy(&v, p, 4);
		return v != 0.0f || v != v;	/* NaN is non-zero (isa.md) */
	}
}

static int pack(struct accel_dev *dev, const uint8_t *base, int64_t pitch, bool trans, bool f32, uint32_t K,
		uint32_t N, uint32_t k_block, struct accel_sparse_weights **out)
{
	uint32_t e = f32 ? 4 : 1;
	struct accel_sparse_weights *sw;
	uint64_t total = 0;
	int ret;

	if (!k_block)
		k_block = 512;
	if (k_block > 65535)
		return accel_seterr(dev, -EINVAL, "sparse pack: k_block %u above 65535 (16-bit slot index)", k_block);
	k_block = ACCEL_MIN(k_block, K);
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	sw->dev = dev;
	accel_obj_add(&dev->objs, &sw->link, ACCEL_OBJ_SPARSE);
	sw->f32 = f32;
	sw->K = K;
	sw->N = N;
	sw->k_block = k_block;
	sw->n_kb = ACCEL_DIV_UP(K, k_block);
	sw->ss = f32 ? 8 : 4;
	sw->S = calloc(sw->n_kb, sizeof(*sw->S));
	sw->off = calloc(sw->n_kb, sizeof(*sw->off));
	if (!sw->S || !sw->off) {
		ret = accel_seterr(dev, -ENOMEM, "out of memory");
		goto fail;
	}
	/* Pass 1: slots per block = the fullest column of the block (at least one slot). */
	for (uint32_t kb = 0; kb < sw->n_kb; kb++) {
		uint32_t k0 = kb * k_block, k1 = ACCEL_MIN(K, k0 + k_block), smax = 1;

		for (uint32_t n = 0; n < N; n++) {
			uint32_t c = 0;

			for (uint32_t k = k0; k < k1; k++)
				c += nonzero(w_at(base, pitch, trans, k, n, e), f32);
			sw->nnz += c;
			smax = ACCEL_MAX(smax, c);
		}
		sw->S[kb] = smax;
		sw->s_max = ACCEL_MAX(sw->s_max, smax);
		sw->off[kb] = total;
		total += ((uint64_t)N * smax * sw->ss + 63) & ~63ull;
	}
	sw->slots = 0;
	for (uint32_t kb = 0; kb < sw->n_kb; kb++)
		sw->slots += (uint64_t)N * sw->S[kb];
	ret = accel_buffer_alloc(dev, total, &sw->buf);
	if (ret)
		goto fail;
	/* Pass 2: slots {u16 index in block, value} in ascending index order; padding stays 0. */
	{
		uint8_t *dst = accel_buffer_ptr(sw->buf);

		for (uint32_t kb = 0; kb < sw->n_kb; kb++) {
			uint32_t k0 = kb * k_block, k1 = ACCEL_MIN(K, k0 + k_block);

			for (uint32_t n = 0; n < N; n++) {
				uint8_t *col = dst + sw->off[kb] + (uint64_t)n * sw->S[kb] * sw->ss;
				uint32_t s = 0;

				for (uint32_t k = k0; k < k1; k++) {
					const uint8_t *v = w_at(base, pitch, trans, k, n, e);
					uint16_t idx = (uint16_t)(k - k0);

					if (!nonzero(v, f32))
						continue;
					memcpy(col + (size_t)s * sw->ss, &idx, 2);
					if (f32)
						memcpy(col + (size_t)s * sw->ss + 4, v, 4);
					else
						col[(size_t)s * sw->ss + 2] = *v;
					s++;
				}
			}
		}
	}
	*out = sw;
	return 0;
fail:
	accel_sparse_free(sw);
	return ret;
}

int accel_sparse_pack(struct accel_dev *dev, const struct accel_tensor *w, bool trans, uint32_t k_block,
		      struct accel_sparse_weights **out)
{
	int ret;

	if (!out)
		return accel_seterr(dev, -EINVAL, "sparse pack: out is NULL");
	*out = NULL;
	if (!dev)
		return -EINVAL;
	accel_clearerr(dev);
	ret = arg_tensor(dev, w, "weights");
	if (ret)
		return ret;
	if (w->ndim != 2)
		return accel_seterr(dev, -EINVAL, "sparse pack: weights must be a 2-D tensor");
	if (w->dtype != ACCEL_INT8 && w->dtype != ACCEL_FP32)
		return accel_seterr(dev, -EINVAL, "sparse pack: weights must be INT8 or FP32");
	if ((size_t)w->strides[1] != accel_dtype_size(w->dtype))
		return accel_seterr(dev, -EINVAL, "sparse pack: the column dimension must be contiguous");
	return pack(dev, (const uint8_t *)accel_buffer_ptr(w->buf) + w->offset, w->strides[0], trans,
		    w->dtype == ACCEL_FP32, trans ? w->shape[1] : w->shape[0], trans ? w->shape[0] : w->shape[1],
		    k_block, out);
}

int accel_sparse_pack_conv(struct accel_dev *dev, const struct accel_tensor *wt, uint32_t k_block,
			   struct accel_sparse_weights **out)
{
	uint32_t e, K;
	int ret;

	if (!out)
		return accel_seterr(dev, -EINVAL, "sparse pack: out is NULL");
	*out = NULL;
	if (!dev)
		return -EINVAL;
	accel_clearerr(dev);
	ret = arg_tensor(dev, wt, "weights");
	if (ret)
		return ret;
	if (wt->ndim != 4 || (wt->dtype != ACCEL_INT8 && wt->dtype != ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "sparse pack: conv weights must be 4-D INT8 or FP32");
	e = (uint32_t)accel_dtype_size(wt->dtype);
	K = wt->shape[1] * wt->shape[2] * wt->shape[3];
	/* Every output channel one contiguous row of C*R*S in IM2COL's K order (as accel_conv2d). */
	if (wt->layout == ACCEL_LAYOUT_NCHW
		    ? (wt->strides[3] != e || wt->strides[2] != (int64_t)e * wt->shape[3] ||
		       wt->strides[1] != (int64_t)e * wt->shape[3] * wt->shape[2])
		    : (wt->strides[1] != e || wt->strides[3] != (int64_t)e * wt->shape[1] ||
		       wt->strides[2] != (int64_t)e * wt->shape[1] * wt->shape[3]))
		return accel_seterr(dev, -EINVAL, "sparse pack: conv weights must be packed OHWI or OIHW");
	return pack(dev, (const uint8_t *)accel_buffer_ptr(wt->buf) + wt->offset, wt->strides[0], true,
		    wt->dtype == ACCEL_FP32, K, wt->shape[0], k_block, out);
}

void accel_sparse_free(struct accel_sparse_weights *sw)
{
	if (!sw)
		return;
	accel_obj_del(&sw->link);
	accel_buffer_free(sw->buf);
	free(sw->S);
	free(sw->off);
	free(sw);
}

int accel_sparse_info(const struct accel_sparse_weights *sw, struct accel_sparse_info *out)
{
	if (!sw)
		return -EINVAL;
	if (!out)
		return accel_seterr(sw->dev, -EINVAL, "accel_sparse_info: out is NULL");
	memset(out, 0, sizeof(*out));
	out->k = sw->K;
	out->n = sw->N;
	out->k_block = sw->k_block;
	out->n_kblocks = sw->n_kb;
	out->dtype = sw->f32 ? ACCEL_FP32 : ACCEL_INT8;
	out->max_slots = sw->s_max;
	out->nnz = sw->nnz;
	out->slots = sw->slots;
	out->packed_bytes = sw->slots * sw->ss;
	out->dense_bytes = (uint64_t)sw->K * sw->N * (sw->f32 ? 4 : 1);
	out->density = (double)sw->nnz / ((double)sw->K * sw->N);
	return 0;
}

int accel_sparse_unpack(const struct accel_sparse_weights *sw, void *dense, size_t bytes)
{
	uint32_t e;
	const uint8_t *src;

	if (!sw)
		return -EINVAL;
	if (!dense)
		return accel_seterr(sw->dev, -EINVAL, "accel_sparse_unpack: dense is NULL");
	e = sw->f32 ? 4 : 1;
	if (bytes < (size_t)sw->K * sw->N * e)
		return accel_seterr(sw->dev, -ERANGE, "sparse unpack: %zu bytes, need %llu", bytes,
				    (unsigned long long)sw->K * sw->N * e);
	memset(dense, 0, (size_t)sw->K * sw->N * e);
	src = accel_buffer_ptr(sw->buf);
	for (uint32_t kb = 0; kb < sw->n_kb; kb++)
		for (uint32_t n = 0; n < sw->N; n++)
			for (uint32_t s = 0; s < sw->S[kb]; s++) {
				const uint8_t *sl = src + sw->off[kb] + ((uint64_t)n * sw->S[kb] + s) * sw->ss;
				uint16_t idx;
				uint32_t k;

				memcpy(&idx, sl, 2);
				if (!nonzero(sl + (sw->f32 ? 4 : 2), sw->f32))
					continue;
				k = kb * sw->k_block + idx;
				if (k >= sw->K)
					return accel_seterr(sw->dev, -EINVAL, "sparse unpack: index %u out of range", k);
				memcpy((uint8_t *)dense + ((size_t)k * sw->N + n) * e, sl + (sw->f32 ? 4 : 2), e);
			}
	return 0;
}

double sparse_slot_density(const struct accel_sparse_weights *sw)
{
	return (double)sw->slots / ((double)sw->K * sw->N);
}

double sparse_nnz_density(const struct accel_sparse_weights *sw)
{
	return (double)sw->nnz / ((double)sw->K * sw->N);
}

/* B tile of N block [n0, n0+nv) and K block ks: PE p's tn columns are contiguous in the packing
 * (tn * S bytes) and go to b_off + p * tn * s_max * ss (pe_stride of the record).  Columns past nv
 * are zero-filled first so the PEs beyond N never see stale slots (a stale index could exceed K). */
void sparse_load_b(struct accel_cmdstream *cs, const struct mm_problem *p, uint32_t pes, uint32_t tn, uint32_t b_off,
		   unsigned row, unsigned half, uint32_t n0, uint32_t nv, uint32_t ks)
{
	const struct accel_sparse_weights *sw = p->b.sp;
	uint32_t S = sw->S[ks], col = S * sw->ss, pe_sram = tn * sw->s_max * sw->ss;
	uint32_t full = nv / tn, rest = nv % tn;
	uint64_t va = sw->buf->va + sw->off[ks] + (uint64_t)n0 * col;

	cs_use(cs, sw->buf);
	if (nv < pes * tn) {
		struct tnpu_cmd_dma f = {
			.hdr = { .opcode = TNPU_CMD_DMA_H2D, .flags = TNPU_CMD_F_ASYNC, .size = sizeof(f) },
			.sram_off = b_off, .width = pes * pe_sram, .height = 1, .depth = 1, .row = (uint8_t)row,
			.half = (uint8_t)half, .dma_flags = TNPU_DMA_F_FILL,
		};

		cs_raw(cs, &f, sizeof(f));
	}
	if (full)
		cs_dma(cs, true, TNPU_CMD_F_ASYNC, va, (uint64_t)tn * col, 0, row, half, b_off, pe_sram, 0, tn * col, full,
		       1);
	if (rest)
		cs_dma(cs, true, TNPU_CMD_F_ASYNC, va + (uint64_t)full * tn * col, 0, 0, row, half, b_off + full * pe_sram,
		       0, 0, rest * col, 1, 1);
}
