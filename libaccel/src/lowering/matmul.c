/* SPDX-License-Identifier: MIT */
/*
 * matmul.c - emits the double-buffered command stream of one matmul problem (lower.h).
 *
 * Per tile step i (half h = i mod 2), following the canonical loop of commands.md:
 *   load:    [wait FREE[h] if i >= 2]  A tiles (one per active row), B tile (broadcast),
 *            bias (last K step)  ->  signal FULL[h]
 *   compute: wait FULL[h], [wait STG_FREE[h] on the last K step]  EXE (LAST|SHIFT_OUT on the
 *            last K step)  -> signal FREE[h] [, STG_FULL[h]]
 *   store:   (last K step) wait STG_FULL[h], C tiles to the host, signal STG_FREE[h]
 * All commands are ASYNC, so the DMA of tile i+1 overlaps the compute of tile i (seed 001 para 146).
 * The cluster program is sent once per problem (CONFIG) and every tile is an EXE (seed 001 para 86).
 * Tiles already present in a half (same tag) are not loaded again: that is what makes the input-
 * and weight-stationary loop orders of plan_tiling.c save host traffic.
 */
#include <stddef.h>
#include <string.h>

#include "packet.h"
#include "sparse.h"

/* S_RES_FREE (ISA 2 residual staging) stays clear of conv_direct.c's S_TAP (8, 9) */
enum { S_FULL = 0, S_FREE = 2, S_STG_FULL = 4, S_STG_FREE = 6, S_RES_FREE = 12 };
#define AS TNPU_CMD_F_ASYNC
#define NO_TAG (~0ull)

void mm_ctx_init(struct mm_ctx *x, struct accel_dev *dev, struct accel_cmdstream *cs)
{
	memset(x, 0, sizeof(*x));
	x->dev = dev;
	x->cs = cs;
	x->caps = &dev->caps;
	x->no_direct = dev->conv_mode == 1;
	x->force_direct = dev->conv_mode == 2;
	x->pin_row = 0xFF;
	/* Leave room for one output block (its K steps) after the check in mm_emit. */
	x->cut_bytes = ACCEL_MIN((size_t)dev->caps.max_cmdbuf * 3 / 4, (size_t)12 << 20);
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < TNPU_MAX_ROWS; r++)
			x->tag_a[h][r] = x->tag_b[h][r] = x->tag_bias[h][r] = NO_TAG;
}

/* Start a new hardware job: clean device state, so pipeline state and residency restart. */
static void mm_restart(struct mm_ctx *x)
{
	cs_cut(x->cs);
	x->step = 0;
	x->stg_used[0] = x->stg_used[1] = false;
	x->restore = false;
	x->res_tok[0] = x->res_tok[1] = 0;
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < TNPU_MAX_ROWS; r++)
			x->tag_a[h][r] = x->tag_b[h][r] = x->tag_bias[h][r] = NO_TAG;
}

void mm_dispatch_mac_config(struct mm_ctx *x, unsigned ibuf, const struct tnpu_cfg_hdr *h, uint16_t ins[4],
			    const struct tnpu_operand ops[3], const struct tnpu_sfu_param *sfu, bool use_sfu)
{
	struct pkt p;

	ins[0] = TNPU_INSN_LD(0, 0, 0, x->zskip_a);
	ins[1] = TNPU_INSN_LD(1, 0, 1, 0);
	ins[2] = TNPU_INSN_MAC(0, 0, 0, x->mac_lb, use_sfu);
	ins[3] = TNPU_INSN_ST(0, 2, !use_sfu);
	cfg_begin(&p, ibuf, h);
	cfg_insns(&p, ins, 4);
	cfg_operands(&p, ops, 3);
	if (use_sfu)
		cfg_record(&p, sfu);
	pkt_dispatch(x->cs, &p, AS, x->pin_row != 0xFF ? x->pin_row : TNPU_DISPATCH_ROW_ALL, 0, 0);
}

static void emit_config(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl)
{
	const struct accel_caps *c = x->caps;
	uint32_t e = p->f32 ? 4 : 1, oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	uint32_t Nb = c->pes * pl->tn;
	uint8_t dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	struct tnpu_operand ops[3];
	struct tnpu_sfu_param sfu = p->sfu;
	struct tnpu_cfg_hdr h;
	uint16_t ins[4];
	unsigned nops = p->use_sfu ? 4 : 3;

	memset(ops, 0, sizeof(ops));
	ops[0] = (struct tnpu_operand){ .addr = pl->a_off, .col_stride = (int32_t)(pl->tm * pl->kt * e),
					.pitch = pl->kt * e, .rows = (uint16_t)pl->tm, .cols = (uint16_t)pl->kt,
					.dtype = dt };
	if (p->b.kind == MM_MAT)
		ops[1] = (struct tnpu_operand){ .addr = pl->b_off, .pe_stride = (int32_t)(pl->tn * e),
						.pitch = Nb * e, .rows = (uint16_t)pl->kt, .cols = (uint16_t)pl->tn,
						.dtype = dt };
	else if (p->b.kind == MM_SPARSE)
		/* Column pitch and slot count are patched per K block by every EXE (emit_block). */
		ops[1] = (struct tnpu_operand){ .addr = pl->b_off,
						.pe_stride = (int32_t)(pl->tn * p->b.sp->s_max * p->b.sp->ss),
						.pitch = p->b.sp->s_max * p->b.sp->ss, .rows = (uint16_t)p->b.sp->s_max,
						.cols = (uint16_t)pl->tn, .dtype = dt, .flags = TNPU_OPF_SPARSE };
	else
		ops[1] = (struct tnpu_operand){ .addr = pl->b_off, .pe_stride = (int32_t)(pl->tn * pl->kt * e),
						.pitch = pl->kt * e, .rows = (uint16_t)pl->tn, .cols = (uint16_t)pl->kt,
						.dtype = dt, .flags = TNPU_OPF_TRANS };
	ops[2] = (struct tnpu_operand){ .addr = pl->c_off, .col_stride = (int32_t)(pl->tm * Nb * oe),
					.pe_stride = (int32_t)(pl->tn * oe), .pitch = Nb * oe, .rows = (uint16_t)pl->tm,
					.cols = (uint16_t)pl->tn, .dtype = p->out_dtype };
	sfu.bias_addr = pl->bias_off;
	sfu.bias_col_stride = 0;
	sfu.bias_pe_stride = (int32_t)(pl->tn * mm_col_bytes(p));
	memset(&h, 0, sizeof(h));
	h.n_instr = 4;
	h.n_operands = (uint8_t)nops;
	h.loop_end = 3;
	h.repeat = 1;
	h.sfu_rf = 3;
	x->zskip_a = p->zskip_a;
	x->mac_lb = p->mac_lb;
	if (p->use_sfu && (p->sfu.ops & TNPU_SFU_OP_RESIDUAL)) {
		/* ISA 2: the residual record follows the SFU record; it is the C tile's region (the
		 * residual is staged there before the last K step, the ST overwrites it with the result) */
		struct pkt rp;
		struct tnpu_operand ro = ops[2];

		(void)nops;
		ro.dtype = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32;
		ins[0] = TNPU_INSN_LD(0, 0, 0, x->zskip_a);
		ins[1] = TNPU_INSN_LD(1, 0, 1, 0);
		ins[2] = TNPU_INSN_MAC(0, 0, 0, x->mac_lb, 1);
		ins[3] = TNPU_INSN_ST(0, 2, 0);
		cfg_begin(&rp, 0, &h);
		cfg_insns(&rp, ins, 4);
		cfg_operands(&rp, ops, 3);
		cfg_record(&rp, &sfu);
		cfg_operands(&rp, &ro, 1);
		pkt_dispatch(x->cs, &rp, AS, x->pin_row != 0xFF ? x->pin_row : TNPU_DISPATCH_ROW_ALL, 0, 0);
		return;
	}
	mm_dispatch_mac_config(x, 0, &h, ins, ops, &sfu, p->use_sfu);
}

/* chain #9: turn the DMA just appended into a ring-memory transfer (chaining.md). */
static void last_dma_flags(struct accel_cmdstream *cs, uint8_t f)
{
	if (f && !cs->err && cs->len >= sizeof(struct tnpu_cmd_dma))
		cs->buf[cs->len - sizeof(struct tnpu_cmd_dma) + offsetof(struct tnpu_cmd_dma, dma_flags)] = f;
}

static void load_a(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl, unsigned r,
		   unsigned h, uint32_t m0, uint32_t mv, uint32_t k0, uint32_t kv)
{
	uint32_t e = p->f32 ? 4 : 1;
	const struct mm_src *a = &p->a;

	switch (a->kind) {
	case MM_MAT:
		cs_dma(x->cs, true, AS, a->va + (uint64_t)m0 * a->pitch + (uint64_t)k0 * e, a->pitch, 0, r, h,
		       pl->a_off, pl->kt * e, 0, kv * e, mv, 1);
		last_dma_flags(x->cs, a->dma_flags);
		break;
	case MM_MAT_T:
		/* A stored K x M: element-wise transposing copy (z over tile rows, y over k). */
		cs_dma(x->cs, true, AS, a->va + (uint64_t)k0 * a->pitch + (uint64_t)m0 * e, a->pitch, e, r, h,
		       pl->a_off, e, pl->kt * e, e, kv, mv);
		break;
	case MM_GATHER:
		plan_emit_gather(x, a, r, h, a->m_base + m0, mv, k0, kv, pl->a_off, pl->kt * e);
		break;
	default: {
		struct tnpu_cmd_im2col ic = a->ic;

		ic.m0 = a->m_base + m0;
		ic.mt = mv;
		ic.k0 = k0;
		ic.kt = kv;
		ic.sram_off = pl->a_off;
		ic.sram_pitch = pl->kt * e;
		ic.row = (uint8_t)r;
		ic.half = (uint8_t)h;
		cs_im2col_raw(x->cs, AS, &ic);
		break;
	}
	}
}

static void load_b(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl, unsigned row,
		   unsigned h, uint32_t n0, uint32_t nv, uint32_t k0, uint32_t kv)
{
	uint32_t e = p->f32 ? 4 : 1, Nb = x->caps->pes * pl->tn;
	const struct mm_src *b = &p->b;

	if (b->kind == MM_SPARSE)
		sparse_load_b(x->cs, p, x->caps->pes, pl->tn, pl->b_off, row, h, n0, nv, k0 / pl->kt);
	else if (b->kind == MM_DEQ)
		qgemm_load_b(x->cs, b, pl->b_off, pl->kt * e, row, h, n0, nv, k0, kv);
	else if (b->kind == MM_MAT)
		cs_dma(x->cs, true, AS, b->va + (uint64_t)k0 * b->pitch + (uint64_t)n0 * e, b->pitch, 0, row, h,
		       pl->b_off, Nb * e, 0, nv * e, kv, 1);
	else
		cs_dma(x->cs, true, AS, b->va + (uint64_t)n0 * b->pitch + (uint64_t)k0 * e, b->pitch, 0, row, h,
		       pl->b_off, pl->kt * e, 0, kv * e, nv, 1);
}

/* Some row already holds its B tile in half h (the per-row loads skip it). */
static bool b_resident(const struct mm_ctx *x, unsigned h, const uint32_t *nblk, uint32_t nrows, uint64_t seq,
		       uint32_t ks)
{
	for (uint32_t r = 0; r < nrows; r++)
		if (x->tag_b[h][r] == (seq | ((uint64_t)nblk[r] << 24) | ks))
			return true;
	return false;
}

/*
 * Rows over N (issue #16): the rows' consecutive N blocks of B as one DMA_BANDS_H2D, every storage unit
 * reading its block through its own host port (256 B/cycle each, all in parallel) instead of one
 * 128 B/cycle stream per row in turn -- a 1 x 1280 x 1000 classifier is bound by its weight bytes.
 * Returns false (the per-row DMAs then run) when the device has no ports or the rows' blocks are not
 * consecutive dense blocks.
 */
static bool load_b_bands(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl, unsigned h,
			 const uint32_t *nblk, uint32_t nrows, uint32_t k0, uint32_t kv)
{
	const struct accel_caps *c = x->caps;
	uint32_t e = p->f32 ? 4 : 1, Nb = c->pes * pl->tn, n0 = nblk[0] * Nb, nv;
	const struct mm_src *b = &p->b;
	struct tnpu_cmd_dma_bands cmd = {
		.hdr = { .opcode = TNPU_CMD_DMA_BANDS_H2D, .flags = AS, .size = sizeof(cmd) },
		.sram_off = pl->b_off, .half = (uint8_t)h,
	};

	if (!(c->features & TNPU_FEAT_DEPTHWISE) || x->pin_row != 0xFF || nrows < 2 || !pl->rows_over_n ||
	    (b->kind != MM_MAT && b->kind != MM_MAT_T) || b->dma_flags)
		return false;
	for (uint32_t r = 1; r < nrows; r++)
		if (nblk[r] != nblk[0] + r)
			return false;
	nv = ACCEL_MIN(nrows * Nb, p->N - n0);
	if (b->kind == MM_MAT) {	/* K x N: unit r takes bytes [r*Nb*e, ...) of each of the kv rows */
		cmd.host_va = b->va + (uint64_t)k0 * b->pitch + (uint64_t)n0 * e;
		cmd.host_pitch_y = b->pitch;
		cmd.sram_pitch_y = Nb * e;
		cmd.width = nv * e;
		cmd.height = kv;
		cmd.depth = 1;
		cmd.band_step = cmd.band_len = Nb * e;
		cmd.axis = TNPU_BANDS_AXIS_X;
	} else {	/* N x K: unit r takes rows (planes) [r*Nb, ...) */
		cmd.host_va = b->va + (uint64_t)n0 * b->pitch + (uint64_t)k0 * e;
		cmd.host_pitch_z = b->pitch;
		cmd.sram_pitch_z = pl->kt * e;
		cmd.width = kv * e;
		cmd.height = 1;
		cmd.depth = nv;
		cmd.band_step = cmd.band_len = Nb;
		cmd.axis = TNPU_BANDS_AXIS_Z;
	}
	cs_raw(x->cs, &cmd, sizeof(cmd));
	return true;
}

static void store_c(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl, unsigned r,
		    unsigned h, uint32_t m0, uint32_t mv, uint32_t n0, uint32_t nv)
{
	uint32_t oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4, Nb = x->caps->pes * pl->tn;

	if (!p->c_trans) {
		cs_dma(x->cs, false, AS, p->c_va + (uint64_t)m0 * p->c_pitch + (uint64_t)n0 * oe, p->c_pitch, 0, r, h,
		       pl->c_off, Nb * oe, 0, nv * oe, mv, 1);
		last_dma_flags(x->cs, p->c_dma_flags);
	} else
		cs_dma(x->cs, false, AS, p->c_va + (uint64_t)n0 * p->c_pitch + (uint64_t)m0 * oe, oe, p->c_pitch, r, h,
		       pl->c_off, Nb * oe, oe, oe, mv, nv);
}

/* One output block over all K steps: row r computes M block mblk[r] x N block nblk[r]. */
static void emit_block(struct mm_ctx *x, const struct mm_problem *p, const struct mm_plan *pl, uint32_t mg,
		       uint32_t ng)
{
	const struct accel_caps *c = x->caps;
	/* A pinned problem (sparse partitioner) runs on one array row as if the array had one row. */
	bool pin = x->pin_row != 0xFF;
	uint32_t R = pin ? 1 : c->rows, Mb = c->cols * pl->tm, Nb = c->pes * pl->tn;
	uint32_t r0 = pin ? x->pin_row : 0;
	uint32_t n_mb = ACCEL_DIV_UP(p->M, Mb), n_nb = ACCEL_DIV_UP(p->N, Nb), n_k = ACCEL_DIV_UP(p->K, pl->kt);
	uint32_t nrows, mblk[TNPU_MAX_ROWS], nblk[TNPU_MAX_ROWS];
	bool all, same_a, same_b;
	uint64_t seq = (uint64_t)x->prob_seq << 48;

	if (pl->rows_over_n) {
		nrows = ACCEL_MIN(R, n_nb - ng * R);
		for (uint32_t r = 0; r < nrows; r++) {
			mblk[r] = mg;
			nblk[r] = ng * R + r;
		}
	} else {
		nrows = ACCEL_MIN(R, n_mb - mg * R);
		for (uint32_t r = 0; r < nrows; r++) {
			mblk[r] = mg * R + r;
			nblk[r] = ng;
		}
	}
	all = nrows == R || R == 1;
	same_a = pl->rows_over_n || nrows == 1;
	same_b = !pl->rows_over_n || nrows == 1;

	for (uint32_t ks = 0; ks < n_k; ks++) {
		unsigned h = x->step & 1;
		bool last = ks == n_k - 1;
		uint32_t k0 = ks * pl->kt, kv = ACCEL_MIN(pl->kt, p->K - k0);
		struct pkt ep;
		unsigned dfl = x->restore ? TNPU_DISPATCH_F_RF_RESTORE : 0;
		unsigned bcast = R == 1 ? r0 : TNPU_DMA_ROW_ALL;

		/* load engine */
		if (x->step >= 2)
			cs_sem(x->cs, false, AS, TNPU_ENGINE_LOAD, S_FREE + h, 1);
		for (uint32_t r = 0; r < nrows; r++) {
			uint32_t m0 = mblk[r] * Mb, mv = ACCEL_MIN(Mb, p->M - m0);
			uint64_t ta = seq | ((uint64_t)mblk[r] << 24) | ks;

			if (x->tag_a[h][r] == ta)
				continue;
			if (same_a && all) {
				load_a(x, p, pl, bcast, h, m0, mv, k0, kv);
				for (uint32_t q = 0; q < R; q++)
					x->tag_a[h][q] = ta;
				break;
			}
			load_a(x, p, pl, r0 + r, h, m0, mv, k0, kv);
			x->tag_a[h][r] = ta;
		}
		if (!(same_b && all) && !b_resident(x, h, nblk, nrows, seq, ks) &&
		    load_b_bands(x, p, pl, h, nblk, nrows, k0, kv)) {
			for (uint32_t r = 0; r < nrows; r++)
				x->tag_b[h][r] = seq | ((uint64_t)nblk[r] << 24) | ks;
		}
		for (uint32_t r = 0; r < nrows; r++) {
			uint32_t n0 = nblk[r] * Nb, nv = ACCEL_MIN(Nb, p->N - n0);
			uint64_t tb = seq | ((uint64_t)nblk[r] << 24) | ks;
			bool want_bias = last && mm_has_cols(p);
			uint32_t cb = mm_col_bytes(p);

			if (same_b && all) {
				if (x->tag_b[h][0] != tb) {
					load_b(x, p, pl, bcast, h, n0, nv, k0, kv);
					for (uint32_t q = 0; q < R; q++)
						x->tag_b[h][q] = tb;
				}
				if (want_bias && x->tag_bias[h][0] != tb) {
					cs_dma(x->cs, true, AS, p->bias_va + (uint64_t)n0 * cb, 0, 0, bcast, h, pl->bias_off, 0,
					       0, nv * cb, 1, 1);
					for (uint32_t q = 0; q < R; q++)
						x->tag_bias[h][q] = tb;
				}
				break;
			}
			if (x->tag_b[h][r] != tb) {
				load_b(x, p, pl, r0 + r, h, n0, nv, k0, kv);
				x->tag_b[h][r] = tb;
			}
			if (want_bias && x->tag_bias[h][r] != tb) {
				cs_dma(x->cs, true, AS, p->bias_va + (uint64_t)n0 * cb, 0, 0, r0 + r, h, pl->bias_off, 0, 0,
				       nv * cb, 1, 1);
				x->tag_bias[h][r] = tb;
			}
		}
		if (last && p->use_sfu && (p->sfu.ops & TNPU_SFU_OP_RESIDUAL)) {
			/* ISA 2: stage the residual tiles in the C regions once their previous results left */
			if (x->res_tok[h]) {
				cs_sem(x->cs, false, AS, TNPU_ENGINE_LOAD, S_RES_FREE + h, 1);
				x->res_tok[h]--;
			}
			for (uint32_t r = 0; r < nrows; r++) {
				uint32_t m0 = mblk[r] * Mb, mv = ACCEL_MIN(Mb, p->M - m0);
				uint32_t n0 = nblk[r] * Nb, nv = ACCEL_MIN(Nb, p->N - n0);

				if (!p->c_trans)
					cs_dma(x->cs, true, AS, p->res_va + (uint64_t)m0 * p->res_pitch + (uint64_t)n0 * 4,
					       p->res_pitch, 0, r0 + r, h, pl->c_off, Nb * 4, 0, nv * 4, mv, 1);
				else	/* the residual of a transposed (NCHW) output: the mirror of store_c's DMA */
					cs_dma(x->cs, true, AS, p->res_va + (uint64_t)n0 * p->res_pitch + (uint64_t)m0 * 4, 4,
					       p->res_pitch, r0 + r, h, pl->c_off, Nb * 4, 4, 4, mv, nv);
			}
		}
		cs_sem(x->cs, true, AS, TNPU_ENGINE_LOAD, S_FULL + h, 1);

		/* compute engine */
		cs_sem(x->cs, false, AS, TNPU_ENGINE_COMPUTE, S_FULL + h, 1);
		if (last && x->stg_used[h])
			cs_sem(x->cs, false, AS, TNPU_ENGINE_COMPUTE, S_STG_FREE + h, 1);
		exe_begin(&ep, 0, last ? (TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT) : 0);
		x->restore = false;
		if (kv != pl->kt) {
			/* K edge: shrink the A columns and the B rows (or columns if transposed). */
			exe_patch(&ep, 0, TNPU_PATCH_COLS, kv);
			exe_patch(&ep, 1, p->b.kind == MM_MAT ? TNPU_PATCH_ROWS : TNPU_PATCH_COLS, kv);
			x->restore = true;
		}
		if (p->b.kind == MM_SPARSE) {
			/* Packed weights: this K block's slots per column and column pitch. */
			uint32_t S = p->b.sp->S[ks];

			exe_truncate(&ep, 1);	/* keep the A patch, replace the B one */
			exe_patch(&ep, 1, TNPU_PATCH_ROWS, S);
			exe_patch(&ep, 1, TNPU_PATCH_PITCH, S * p->b.sp->ss);
			x->restore = true;
		}
		if (all)
			pkt_dispatch(x->cs, &ep, AS, R == 1 ? r0 : TNPU_DISPATCH_ROW_ALL, h, dfl);
		else
			for (uint32_t r = 0; r < nrows; r++)
				pkt_dispatch(x->cs, &ep, AS, r0 + r, h, dfl);
		cs_sem(x->cs, true, AS, TNPU_ENGINE_COMPUTE, S_FREE + h, 1);
		if (last)
			cs_sem(x->cs, true, AS, TNPU_ENGINE_COMPUTE, S_STG_FULL + h, 1);

		/* store engine */
		if (last) {
			cs_sem(x->cs, false, AS, TNPU_ENGINE_STORE, S_STG_FULL + h, 1);
			for (uint32_t r = 0; r < nrows; r++) {
				uint32_t m0 = mblk[r] * Mb, mv = ACCEL_MIN(Mb, p->M - m0);
				uint32_t n0 = nblk[r] * Nb, nv = ACCEL_MIN(Nb, p->N - n0);

				store_c(x, p, pl, r0 + r, h, m0, mv, n0, nv);
			}
			cs_sem(x->cs, true, AS, TNPU_ENGINE_STORE, S_STG_FREE + h, 1);
			if (p->use_sfu && (p->sfu.ops & TNPU_SFU_OP_RESIDUAL)) {
				cs_sem(x->cs, true, AS, TNPU_ENGINE_STORE, S_RES_FREE + h, 1);
				x->res_tok[h]++;
			}
			x->stg_used[h] = true;
		}
		x->step++;
	}
}

int mm_emit(struct mm_ctx *x, const struct mm_problem *p)
{
	struct accel_caps pc = *x->caps;
	const struct accel_caps *c = &pc;
	struct mm_plan pl;
	uint32_t n_mb, n_mg, n_nb;
	int ret;

	if (x->pin_row != 0xFF)
		pc.rows = 1;
	ret = mm_plan_choose(c, p, &pl);
	if (ret)
		return accel_seterr(x->dev, ret, "no tiling of %ux%ux%u fits a %u-byte storage-unit half", p->M, p->N,
				    p->K, c->sram_bytes / 2);
	x->last_plan = pl;
	if ((p->sfu.ops & TNPU_SFU_OP_RESIDUAL) && (!p->res_va || p->c_dma_flags ||
						     p->out_dtype == TNPU_DTYPE_INT8))
		return accel_seterr(x->dev, -EINVAL, "this operation does not take an epilogue residual");
	n_mb = ACCEL_DIV_UP(p->M, c->cols * pl.tm);
	n_nb = ACCEL_DIV_UP(p->N, c->pes * pl.tn);
	n_mg = pl.rows_over_n ? n_mb : ACCEL_DIV_UP(n_mb, c->rows);
	n_nb = pl.rows_over_n ? ACCEL_DIV_UP(n_nb, c->rows) : n_nb;
	if (cs_segment_len(x->cs) > x->cut_bytes)
		mm_restart(x);
	x->prob_seq++;
	emit_config(x, p, &pl);
	for (uint32_t o = 0; o < n_mg * n_nb; o++) {
		uint32_t mg = pl.order == MM_ORDER_M_OUTER ? o / n_nb : o % n_mg;
		uint32_t nb = pl.order == MM_ORDER_M_OUTER ? o % n_nb : o / n_mg;

		if (cs_segment_len(x->cs) > x->cut_bytes) {
			mm_restart(x);
			emit_config(x, p, &pl);
		}
		emit_block(x, p, &pl, mg, nb);
	}
	if (x->cs->err)
		return cs_report(x->cs);
	return 0;
}
