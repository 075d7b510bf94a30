/* SPDX-License-Identifier: MIT */
/*
 * vec_pool.c - pooling on the ISA 2 vector units (VEC POOL): max pooling, and the fp32 average over the
 * taps inside the input (ACCEL_POOL_AVG_EXCL_PAD), banded over the array's rows and both halves of every
 * storage unit (accel_pool2d in pool.c decides, and runs the host loop where a window does not fit).
 */
#include "vec_lower.h"
#include "vec_ops.h"

struct pool_geo {
	uint32_t C, H, W, OH, OW, e;
};

/* SRAM bytes of a band of cnt output rows of nb whole images (nb > 1 only when cnt is the whole map) */
static uint64_t pool_chunk_bytes(const struct accel_pool2d_desc *d, const struct pool_geo *g, uint32_t cnt,
				 uint32_t nb)
{
	uint64_t rows = ACCEL_MIN((uint64_t)(cnt - 1) * d->stride_h + d->win_h, g->H);

	return ((nb * rows * g->W * g->C * g->e + 63) & ~63ull) +
	       (((uint64_t)nb * cnt * g->OW * g->C * g->e + 63) & ~63ull);
}

static bool pool_chunk_ok(const struct accel_pool2d_desc *d, const struct pool_geo *g, uint32_t cnt, uint32_t nb,
			  uint32_t half)
{
	uint64_t el = (uint64_t)nb * cnt * g->OW * g->C;

	return pool_chunk_bytes(d, g, cnt, nb) <= half && el <= TNPU_VEC_MAX_ELEMS &&
	       el * d->win_h * d->win_w <= TNPU_VEC_MAX_WORK;
}

int accel_pool_vec(struct accel_dev *dev, const struct accel_pool2d_desc *d, uint32_t oh, uint32_t ow,
		       const struct accel_submit *sub, struct accel_job **job)
{
	const struct accel_tensor *in = d->input, *out = d->output;
	struct pool_geo g = { in->shape[1], in->shape[2], in->shape[3], oh, ow, (uint32_t)accel_dtype_size(in->dtype) };
	uint32_t half = dev->caps.sram_bytes / 2, rows = dev->caps.rows, cnt, nb;
	unsigned A = TNPU_CMD_F_ASYNC;
	struct accel_cmdstream cs;
	struct vx_opnd io, oo;
	uint64_t i = 0;
	int ret = 0;

	if (!(dev->caps.features & TNPU_FEAT_VEC) || d->stride_h > 255 || d->stride_w > 255 || d->pad_top > 255 ||
	    d->pad_left > 255 || d->win_h > 65535 || d->win_w > 65535 || g.H > 65535 || g.W > 65535 ||
	    !pool_chunk_ok(d, &g, 1, 1, half))
		return 1;
	{
		uint32_t lo = 1, hi = oh;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo + 1) / 2;

			if (pool_chunk_ok(d, &g, mid, 1, half))
				lo = mid;
			else
				hi = mid - 1;
		}
		cnt = lo;
	}
	/* at least two bands per row of the array (all vector units busy, loads overlapping compute) */
	if ((uint64_t)in->shape[0] * ACCEL_DIV_UP(oh, cnt) < 2ull * rows)
		cnt = ACCEL_MAX(1u, (uint32_t)ACCEL_DIV_UP((uint64_t)oh * in->shape[0], 2ull * rows));
	cnt = ACCEL_MIN(cnt, oh);
	/*
	 * Small maps (a batch of MNIST-sized images): one command pools nb whole images, images in
	 * dimension 0 and channels innermost, instead of one command and two DMAs per image; still at
	 * least two commands per row of the array.
	 */
	nb = 1;
	if (cnt == oh) {
		uint32_t most = (uint32_t)ACCEL_MAX(1ull, in->shape[0] / (2ull * rows));

		while (nb < most && pool_chunk_ok(d, &g, oh, nb * 2 > most ? most : nb * 2, half))
			nb = nb * 2 > most ? most : nb * 2;
	}
	vx_opnd_of(in, &io);
	vx_opnd_of(out, &oo);
	cs_init(&cs, dev);
	cs_use(&cs, in->buf);
	cs_use(&cs, out->buf);
	for (uint32_t n = 0; n < in->shape[0]; n += nb)
		for (uint32_t oy0 = 0; oy0 < oh; oy0 += cnt) {
			uint32_t c_n = ACCEL_MIN(cnt, oh - oy0), c_b = ACCEL_MIN(nb, in->shape[0] - n);
			int64_t y_first = (int64_t)oy0 * d->stride_h - d->pad_top;
			uint32_t iy_lo = (uint32_t)ACCEL_MAX(y_first, 0);
			uint32_t iy_hi = (uint32_t)ACCEL_MIN((int64_t)(oy0 + c_n - 1) * d->stride_h - d->pad_top + d->win_h,
							     (int64_t)g.H);
			uint32_t ilo[4] = { n, 0, iy_lo, 0 }, isz[4] = { c_b, g.C, iy_hi - iy_lo, g.W };
			uint32_t olo[4] = { n, 0, oy0, 0 }, osz[4] = { c_b, g.C, c_n, ow };
			unsigned row = (unsigned)(i % rows), hf = (unsigned)((i / rows) % 2);
			struct vx_place pi, po;
			/* AVG_EXCL_PAD: POOL AVG without COUNT_PAD divides by the taps inside the input */
			struct tnpu_cmd_vec v = vx_cmd(TNPU_VEC_POOL, d->kind == ACCEL_POOL_MAX ? TNPU_VEC_POOL_MAX :
						       TNPU_VEC_POOL_AVG, in->dtype == ACCEL_FP32 ?
						       TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, 0);
			uint64_t ib = vx_place_box(&io, isz, 0, &pi);

			vx_place_box(&oo, osz, (uint32_t)((ib + 63) & ~63ull), &po);
			v.out_dtype = v.in_dtype;
			v.row = (uint8_t)row;
			v.half = (uint8_t)hf;
			/* VEC POOL: dims 1 and 2 are the window's y and x, 0 and 3 any others (isa.md) */
			v.n[0] = c_b;
			v.n[1] = c_n;
			v.n[2] = ow;
			v.n[3] = g.C;
			v.a_off = pi.off;
			v.d_off = po.off;
			for (int k = 0; k < 4; k++) {
				v.a_st[k] = pi.st[k == 3 ? 1 : (k == 0 ? 0 : k + 1)];
				v.d_st[k] = po.st[k == 3 ? 1 : (k == 0 ? 0 : k + 1)];
			}
			v.win.pool = (struct tnpu_vec_pool_win){
				.win_h = (uint16_t)d->win_h, .win_w = (uint16_t)d->win_w, .stride_y = (uint8_t)d->stride_h,
				.stride_x = (uint8_t)d->stride_w, .pad_top = (uint8_t)(iy_lo - y_first),
				.pad_left = (uint8_t)d->pad_left, .in_h = (uint16_t)(iy_hi - iy_lo), .in_w = (uint16_t)g.W,
			};
			v.hdr.flags = (uint8_t)A;
			if (i >= 2ull * rows)
				cs_sem(&cs, false, A, TNPU_ENGINE_LOAD, 2, 1);
			vx_dma_box(&cs, true, A, &io, ilo, isz, &pi, row, hf);
			cs_sem(&cs, true, A, TNPU_ENGINE_LOAD, 0, 1);
			cs_sem(&cs, false, A, TNPU_ENGINE_COMPUTE, 0, 1);
			cs_raw(&cs, &v, sizeof(v));
			cs_sem(&cs, true, A, TNPU_ENGINE_COMPUTE, 1, 1);
			cs_sem(&cs, false, A, TNPU_ENGINE_STORE, 1, 1);
			vx_dma_box(&cs, false, A, &oo, olo, osz, &po, row, hf);
			cs_sem(&cs, true, A, TNPU_ENGINE_STORE, 2, 1);
			i++;
			if (cs_segment_len(&cs) > dev->caps.max_cmdbuf / 2) {
				cs_cut(&cs);
				i = 0;
			}
		}
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
