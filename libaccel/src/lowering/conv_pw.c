/* SPDX-License-Identifier: MIT */
/*
 * conv_pw.c - convolutions and GEMMs as one streamed GEMM over the storage units
 * (Documentation/libaccel.md "Pointwise convolution").
 *
 * A pointwise convolution (1x1, stride 1, no padding, groups 1, packed NHWC) is the GEMM
 * Y[M x K] = X[M x C] . W^T on the contiguous pixel matrix (M = N*H*W pixels of C channels), and its
 * output is again one contiguous NHWC matrix (flat mode); a GEMM with a row-major A and an N x K B
 * is the same problem.  The storage units take runs of consecutive pixels (or, for few pixels and
 * many channels, blocks of output channels): each unit's share of X lands contiguously in its half
 * through its own host port (DMA_BANDS_H2D, STREAM), its share of Y leaves the same way (DMA_BANDS_D2H,
 * STREAM: each row as soon as its ST wrote it), and the weights and column records come on the ports'
 * AUX queue.  The first EXE's weights and pixels are sent first, the rest after them, so the first EXE
 * starts as soon as its own data has landed.  Every row runs the same broadcast EXEs on its own SRAM,
 * each EXE up to four sub-tiles (one accumulator each): LD B (the channel tile's weights, once per EXE),
 * then per sub-tile LD A (a block of gp*tm pixels: its LD waits in hardware for those pixels' rows), MAC
 * with the chained SFU, ST.  Within a row the PEs split the sub-tile's pixels and channels (clusters
 * and/or PEs on pixels), so no PE idles when K is not a multiple of the PEs (24 output channels: 4
 * clusters x 6 channels, PEs on pixels).
 *
 * Row mode takes the other NHWC convolutions whose filter rows are contiguous (S*C elements: dilation
 * 1 along x) with at most 4 filter rows -- a stride-2 3x3 stem, a stride-2 1x1: the units take bands of
 * output rows, each unit's padded input rows (with the halo shared by neighbours) land through its port,
 * a PE's pixel block is one output row, and the R filter rows are R LD A / MAC pairs per sub-tile, each
 * over the S*C contiguous elements of its input row (the R weight slices stay in the weight slots).
 *
 * A fused residual (SFU RESIDUAL) lands in the output buffer, where the chained SFU reads it just before
 * the ST overwrites it; a partial last sub-tile over few pixels runs as a remainder of its own mapping.
 * No semaphore is needed while everything fits a half; larger problems run in segments that alternate
 * two buffers with the write-after-read semaphores of the depthwise block.  The planner replays the
 * cycle model for each candidate (pw_sim, Documentation/hardware/cycle-model.md) and the caller takes
 * this lowering when its replay beats the other lowerings' estimates.
 *
 * This file emits the plan and holds the entry points; the bands and the replay are conv_pw_sim.c, the
 * plan search conv_pw_plan.c, what they share conv_pw_int.h.
 */
#include "conv_pw_int.h"

/* ---- emitting ---- */

/* CONFIG of instruction buffer buf: n sub-tiles of plan d, its records (when recs) from register-file
 * entry rf_base on. */
/* A CONFIG packet's opening for instruction buffer buf: the header (PIPE4, the weight queue in RQ mode:
 * the weight slots stay valid for the run's sub-tiles) and the ni instructions; the records follow. */
static void pw_config_head(struct pkt *pk, unsigned buf, const uint16_t *ins, uint32_t ni, unsigned sfu_rf,
			   uint32_t rf_base)
{
	struct tnpu_cfg_hdr h;

	memset(&h, 0, sizeof(h));
	h.mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ);
	h.loop_end = (uint8_t)(ni - 1);
	h.repeat = 1;
	h.sfu_rf = (uint8_t)sfu_rf;
	h.rf_base = (uint8_t)rf_base;
	cfg_begin(pk, buf, &h);
	cfg_insns(pk, ins, ni);
}

void pw_config(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
		      unsigned buf, uint32_t n, bool recs, unsigned rf_base)
{
	uint32_t e = g->e, oe = g->oe, P = g->pes, taps = g_taps(g), cpt = g_cpt(g), cb = g->colb ? g->colb : 4;
	/* a pixel block: tm pixels (flat) or one output row (row mode); the stride from one sub-tile of
	 * the run to the next; the stride from one filter row to the next */
	uint64_t blk_in = g->rowm ? g->sy * g_prow(g) : (uint64_t)d->tm * g->C * e;
	uint64_t blk_out = g->rowm ? g_orow(g, d) : (uint64_t)d->tm * d->ku * oe;
	uint64_t gstep = g->rowm ? g_step(d) : d->gp;
	uint64_t in_step = g->rowm && d->xch > 1 ? (uint64_t)d->tm * g->sx * g->C * e : gstep * blk_in;
	uint64_t out_step = g->rowm && d->xch > 1 ? (uint64_t)d->tm * d->ku * oe : gstep * blk_out;
	uint64_t tap = g->rowm ? g->dy * g_prow(g) : 0;
	uint8_t dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	struct tnpu_operand ops[6];
	struct tnpu_sfu_param sfu = p->sfu;
	uint16_t ins[PW_MAX_TAPS + TNPU_NUM_ACCS * (2 * PW_MAX_TAPS + 2)];
	struct pkt pk;
	uint32_t ni = 0;
	/* pixel-block and channel-block indices of cluster c and PE p: strides per cluster and per PE */
	int64_t pc = d->cl_pix ? (d->pe_pix ? P : 1) : 0, pp = d->pe_pix ? 1 : 0;
	int64_t cc = d->cl_pix ? 0 : (d->pe_pix ? 1 : P), cp = d->pe_pix ? 0 : 1;

	memset(ops, 0, sizeof(ops));
	/* A: the scalar unit walks the filter rows, then (su_wrap) on to the next sub-tile */
	ops[0] = (struct tnpu_operand){ .addr = d->in_off[0], .col_stride = (int32_t)(pc * blk_in),
					.pe_stride = (int32_t)(pp * blk_in), .pitch = (g->rowm ? g->sx : 1) * g->C * e,
					.rows = (uint16_t)d->tm, .cols = (uint16_t)cpt, .dtype = dt,
					.su_wrap = (uint16_t)taps, .su_delta = (int32_t)tap,
					.su_wrap_delta = (int32_t)((int64_t)in_step - (int64_t)(taps * tap)) };
	/* cluster pairs: the pair stride takes the wrap's field (flat: one filter row, no wrap needed) */
	if (d->pair) {
		ops[0].flags = TNPU_OPF_CPAIR;
		ops[0].col_stride = (int32_t)(d->pcs * g->C * e);
		ops[0].su_wrap = 0;
		ops[0].su_delta = (int32_t)((g->cols / 2) * d->pair * g->C * e);
		ops[0].su_wrap_delta = (int32_t)(d->pair * g->C * e);
	}
	/* row wrap: the image rows of wrap pixels a padded row apart (the wrap's fields), one sub-tile */
	if (d->wrap) {
		ops[0].flags = TNPU_OPF_WRAP;
		ops[0].col_stride = (int32_t)(d->wcs * g->C * e);
		ops[0].su_wrap = (uint16_t)d->wrap;
		ops[0].su_delta = 0;
		ops[0].su_wrap_delta = (int32_t)((uint64_t)g->Wp * g->C * e);
	}
	/* B: one LD per filter row (its slice of the weight rows; the EXE patches the address back) */
	ops[1] = (struct tnpu_operand){ .addr = d->w_off, .col_stride = (int32_t)(cc * d->tn * g_wrow(g)),
					.pe_stride = (int32_t)(cp * d->tn * g_wrow(g)), .pitch = (uint32_t)g_wrow(g),
					.rows = (uint16_t)d->tn, .cols = (uint16_t)cpt, .dtype = dt, .flags = TNPU_OPF_TRANS,
					.su_delta = taps > 1 ? (int32_t)(cpt * e) : 0 };
	ops[2] = (struct tnpu_operand){ .addr = d->out_off[0], .col_stride = (int32_t)(pc * blk_out + cc * d->tn * oe),
					.pe_stride = (int32_t)(pp * blk_out + cp * d->tn * oe), .pitch = d->ku * oe,
					.rows = (uint16_t)d->tm, .cols = (uint16_t)d->tn, .dtype = p->out_dtype,
					.su_delta = (int32_t)out_step };
	if (d->pair) {
		ops[2].flags = TNPU_OPF_CPAIR;
		ops[2].col_stride = (int32_t)((uint64_t)d->pcs * d->ku * oe);
		ops[2].su_delta = (int32_t)((uint64_t)(g->cols / 2) * d->pair * d->ku * oe);
		ops[2].su_wrap_delta = (int32_t)((uint64_t)d->pair * d->ku * oe);
	}
	if (d->wrap) {
		ops[2].flags = TNPU_OPF_WRAP;
		ops[2].col_stride = (int32_t)((uint64_t)d->wcs * d->ku * oe);
		ops[2].su_wrap = (uint16_t)d->wrap;
		ops[2].su_delta = 0;
		ops[2].su_wrap_delta = (int32_t)(g->orp ? g->orp : (uint64_t)g->Wp * d->ku * oe);
	}
	sfu.bias_addr = d->b_off;
	sfu.bias_col_stride = (int32_t)(cc * d->tn * cb);
	sfu.bias_pe_stride = (int32_t)(cp * d->tn * cb);
	/* the weights cross as one multicast block (the channel tiles of the row's PEs are consecutive
	 * rows): on the wide path, and not at all when the slot already holds them (isa.md "MCAST") */
	for (uint32_t t = 0; t < taps; t++)
		ins[ni++] = (uint16_t)(TNPU_INSN_LD(1, t, 1, 0) | (g->wide ? TNPU_LD_MCAST | TNPU_LD_WIDE : 0));
	/* residual: the ST's record is entry 4, the one after the SFU record, so the chained SFU reads the
	 * residual where the ST then writes the result; entry 5 is the same tile as bytes, for an LD into
	 * input slot 1 (never multiplied) that waits for the residual's lines before the SFU reads them
	 * (the SFU itself is not line-tracked) */
	ops[4] = ops[2];
	ops[5] = ops[2];
	ops[5].dtype = TNPU_DTYPE_INT8;
	ops[5].cols = (uint16_t)(d->tn * oe);
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t t = 0; t < taps; t++) {
			ins[ni++] = TNPU_INSN_LD(0, 0, 0, 0);
			if (g->res && t == taps - 1)
				ins[ni++] = (uint16_t)(TNPU_INSN_LD(5, 1, 0, 0) | (g->wide ? TNPU_LD_MCAST | TNPU_LD_WIDE : 0));
			ins[ni++] = TNPU_INSN_MAC(0, t, k, 0, g->sfu && t == taps - 1);
		}
		ins[ni++] = TNPU_INSN_ST(k, g->res ? 4 : 2, !g->sfu);
	}
	/* one weight LD per filter row, valid for every sub-tile (RQ) */
	pw_config_head(&pk, buf, ins, ni, 3, rf_base);
	if (recs) {
		cfg_operands(&pk, ops, 3);
		if (g->sfu)
			cfg_record(&pk, &sfu);
		if (g->res)
			cfg_operands(&pk, &ops[4], 2);
	}
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, 0, 0);
}

/* The EXE of instruction buffer buf: sub-tiles k0.. of plan d (whose buffers start at in_off / out_off)
 * and channel tile ct, with its address patches; every row on its own band. */
void pw_exe_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		 unsigned buf, uint32_t k0, uint32_t ct, uint32_t in_off, uint32_t out_off)
{
	pw_exe_emit_x(cs, g, d, sg, buf, k0, ct, in_off, out_off, NULL, 0);
}

/* pw_exe_emit with nx more patches (another program's records in the buffer's window). */
void pw_exe_emit_x(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		   unsigned buf, uint32_t k0, uint32_t ct, uint32_t in_off, uint32_t out_off,
		   const struct tnpu_exe_patch *xp, unsigned nx)
{
	struct tnpu_exe_patch pt[5 + PW_MAX_XPATCH];
	struct pkt pk;
	unsigned np = 0;
	uint32_t c0 = ct * d->gch * d->tn, out = out_off + (uint32_t)sub_out(g, d, k0) + c0 * g->oe;

	pt[np++] = (struct tnpu_exe_patch){ .rf = 0, .field = TNPU_PATCH_ADDR, .value = in_off + (uint32_t)sub_in(g, d, k0) };
	pt[np++] = (struct tnpu_exe_patch){ .rf = g->res ? 4 : 2, .field = TNPU_PATCH_ADDR, .value = out };
	if (g->res)
		pt[np++] = (struct tnpu_exe_patch){ .rf = 5, .field = TNPU_PATCH_ADDR, .value = out };
	if (d->nct > 1 || g_taps(g) > 1)
		pt[np++] = (struct tnpu_exe_patch){ .rf = 1, .field = TNPU_PATCH_ADDR,
						    .value = d->w_off + (uint32_t)(c0 * g_wrow(g)) };
	if (d->nct > 1 && g->colb)
		pt[np++] = (struct tnpu_exe_patch){ .rf = 3, .field = TNPU_PATCH_ADDR, .value = d->b_off + c0 * g->colb };
	for (unsigned i = 0; i < nx && i < PW_MAX_XPATCH; i++)
		pt[np++] = xp[i];
	exe_begin(&pk, buf, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
	for (unsigned i = 0; i < np; i++)
		exe_patch(&pk, pt[i].rf, pt[i].field, pt[i].value);
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, sg->h, 0);
}


void pw_config_ct(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
		  unsigned buf, unsigned rf_base)
{
	uint32_t e = g->e, oe = g->oe, cpt = g_cpt(g), cb = g->colb ? g->colb : 4, nb = d->gch * d->tn;
	uint8_t dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	struct tnpu_operand ops[3 + TNPU_NUM_ACCS];
	uint16_t ins[1 + 4 * TNPU_NUM_ACCS];
	struct pkt pk;
	uint32_t ni = 0;

	memset(ops, 0, sizeof(ops));
	ops[0] = (struct tnpu_operand){ .addr = d->in_off[0], .col_stride = (int32_t)(d->wcs * g->C * e),
					.pitch = g->C * e, .rows = (uint16_t)d->tm, .cols = (uint16_t)cpt, .dtype = dt,
					.flags = TNPU_OPF_WRAP, .su_wrap = (uint16_t)d->wrap,
					.su_wrap_delta = (int32_t)((uint64_t)g->Wp * g->C * e) };
	ops[1] = (struct tnpu_operand){ .addr = d->w_off, .pe_stride = (int32_t)(d->tn * g_wrow(g)),
					.pitch = (uint32_t)g_wrow(g), .rows = (uint16_t)d->tn, .cols = (uint16_t)cpt,
					.dtype = dt, .flags = TNPU_OPF_TRANS, .su_delta = (int32_t)(nb * g_wrow(g)) };
	ops[2] = (struct tnpu_operand){ .addr = d->out_off[0], .col_stride = (int32_t)((uint64_t)d->wcs * d->ku * oe),
					.pe_stride = (int32_t)(d->tn * oe), .pitch = d->ku * oe, .rows = (uint16_t)d->tm,
					.cols = (uint16_t)d->tn, .dtype = p->out_dtype, .flags = TNPU_OPF_WRAP,
					.su_wrap = (uint16_t)d->wrap, .su_delta = (int32_t)(nb * oe),
					.su_wrap_delta = (int32_t)(g->orp ? g->orp : (uint64_t)g->Wp * d->ku * oe) };
	for (uint32_t t = 0; g->sfu && t < d->nct; t++) {
		struct tnpu_sfu_param sfu = p->sfu;

		sfu.bias_addr = d->b_off + t * nb * cb;
		sfu.bias_col_stride = 0;
		sfu.bias_pe_stride = (int32_t)(d->tn * cb);
		memcpy(&ops[3 + t], &sfu, 32);
	}
	for (uint32_t t = 0; t < d->nct; t++) {
		ins[ni++] = (uint16_t)(TNPU_INSN_LD(1, 0, 1, 0) | (g->wide ? TNPU_LD_MCAST | TNPU_LD_WIDE : 0));
		if (!t)
			ins[ni++] = TNPU_INSN_LD(0, 0, 0, 0);
		ins[ni++] = TNPU_INSN_MAC(0, 0, t, 0, 0);
		if (g->sfu)
			ins[ni++] = TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, 3 + t, t);
		ins[ni++] = TNPU_INSN_ST(t, 2, !g->sfu);
	}
	pw_config_head(&pk, buf, ins, ni, 0, rf_base);
	cfg_operands(&pk, ops, 3);
	if (g->sfu)
		cfg_records(&pk, &ops[3], d->nct);	/* the channel tiles' SFU records */
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, 0, 0);
}

/* The EXE of pw_config_ct's buffer: the A, output and weight records back at the segment's buffers. */
void pw_exe_emit_ct(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		    unsigned buf, uint32_t in_off, uint32_t out_off)
{
	struct pkt pk;

	(void)g;
	exe_begin(&pk, buf, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
	exe_patch(&pk, 0, TNPU_PATCH_ADDR, in_off);
	exe_patch(&pk, 2, TNPU_PATCH_ADDR, out_off);
	exe_patch(&pk, 1, TNPU_PATCH_ADDR, d->w_off);
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, sg->h, 0);
}

static void pw_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p)
{
	struct pw_band bw = pw_band_w(g, d), bb = pw_band_b(g, d);
	bool used[2] = { false, false }, fresh[2] = { true, true }, cfg[TNPU_NUM_ACCS + 1] = { false }, first = true;
	uint8_t sf = TNPU_BANDS_F_STREAM, aux = TNPU_BANDS_F_AUX | TNPU_BANDS_F_STREAM;
	struct pwp rp;

	/* instruction buffer n runs n sub-tiles; the records come with the first CONFIG; the remainder has
	 * a buffer and register window of its own */
	pw_cfgs(g, d, cfg);
	for (uint32_t n = TNPU_NUM_ACCS; n >= 1; n--) {
		if (cfg[n]) {
			pw_config(cs, g, d, p, n, n, first, 0);
			first = false;
		}
	}
	if (d->rem) {
		rp = rem_plan(g, d);
		pw_config(cs, g, &rp, p, PW_REM_BUF, 1, true, PW_REM_RF);
	}
	for (uint32_t s = 0; s < d->nseg; s++) {
		struct pw_seg sg = seg_at(g, d, s);
		unsigned h = sg.h, j = sg.j;
		struct pw_band bi = pw_band_in(g, d, &sg), brs = pw_band_res(g, d, &sg);
		uint32_t fl[4][3], nf, T = main_T(d, sg.T);

		/*
		 * load engine: padding fills (row mode), the half's column records and weights at its first
		 * use, the segment's pixels; the first EXE's channel tile and first pixel block first.  The
		 * records land before the weights, whose lines the weight LD waits for, so the chained SFU
		 * never reads records still in flight; the fills are plain DMAs, so the EXEs wait for them
		 * with a semaphore.
		 */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, PS_CFREE + j, 1);
		nf = pw_pad_fills(g, d, &sg, fresh[j], fl);
		fresh[j] = false;
		for (unsigned i = 0; i < nf; i++)
			pw_fill_emit(cs, h, fl[i][0], fl[i][1], (uint32_t)g_prow(g), fl[i][2], g->pad);
		if (nf)
			cs_sem(cs, true, AS, TNPU_ENGINE_LOAD, PS_FILL, 1);
		if (!used[h] && g->colb) {
			pw_band_emit(cs, true, &bb, 0, bb.ul ? bb.ul : bb.n, h, aux);
			pw_band_emit_tail(cs, true, &bb, h, aux);
		}
		if (!used[h])
			pw_band_emit(cs, true, &bw, 0, d->w0, h, aux);
		/* row mode: one band (a split would read the halo rows a unit shares with the next twice) */
		if (g->rowm)
			pw_rows_emit(cs, g, d, &sg, 0, sg.br, sf);
		else
			pw_band_emit(cs, true, &bi, 0, d->in0, h, sf);
		if (g->res) {
			/* the residual into the output buffer, once segment s-2's outputs have left it */
			if (s >= 2)
				cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, PS_SFREE + j, 1);
			if (d->over_n) {
				pw_xbands_emit(cs, true, g, d, &sg, sg.res_va, sf);
			} else {
				pw_band_emit(cs, true, &brs, 0, g->rowm ? sg.sg : d->res0, h, sf);
				if (g->rowm)
					pw_band_emit_tail(cs, true, &brs, h, sf);
			}
		}
		if (!used[h]) {
			pw_band_emit(cs, true, &bw, d->w0, d->kr, h, aux);
			pw_band_emit_tail(cs, true, &bw, h, aux);
			used[h] = true;
		}
		if (!g->rowm) {
			pw_band_emit(cs, true, &bi, d->in0, d->sg, h, sf);
			pw_band_emit_tail(cs, true, &bi, h, sf);
			if (g->res && !d->over_n) {
				pw_band_emit(cs, true, &brs, d->res0, d->sg, h, sf);
				pw_band_emit_tail(cs, true, &brs, h, sf);
			}
		}
		/* compute engine: one EXE per sub-tile run and channel tile, every row on its own band */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, PS_SFREE + j, 1);
		if (nf)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, PS_FILL, 1);
		for (uint32_t k0 = 0; k0 < T; k0 += exe_subs(g, d, T, k0))
			for (uint32_t ct = 0; ct < d->nct; ct++)
				pw_exe_emit(cs, g, d, &sg, exe_subs(g, d, T, k0), k0, ct, d->in_off[sg.j], d->out_off[sg.j]);
		if (d->rem)
			pw_exe_emit(cs, g, &rp, &sg, PW_REM_BUF, 0, 0, rp.in_off[0], rp.out_off[0]);
		if (s + 2 < d->nseg)
			cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, PS_CFREE + j, 1);
		/* store engine: each unit's rows leave as their STs write them */
		if (d->over_n) {
			pw_xbands_emit(cs, false, g, d, &sg, sg.out_va, sf);
		} else {
			struct pw_band bo = pw_band_out(g, d, &sg);

			pw_band_emit(cs, false, &bo, 0, sg.sg, h, sf);
			pw_band_emit_tail(cs, false, &bo, h, sf);
		}
		if (s + 2 < d->nseg)	/* for the compute of s+2 and, with a residual, its load */
			cs_sem(cs, true, AS, TNPU_ENGINE_STORE, PS_SFREE + j, g->res ? 2 : 1);
	}
}

/*
 * The planner replays the cycle model for every candidate, which costs more host time than simulating
 * a small layer, and a network asks the same question for every batch: a few recent answers are kept
 * per thread (as mm_plan_choose does), keyed by the whole geometry without its addresses (pw_plan reads
 * no address; the emitter does).
 */
#define PW_PLAN_CACHE 16
static _Thread_local struct {
	struct pwg key;
	struct pwp plan;
	bool ok, used;
} pw_cache[PW_PLAN_CACHE];
static _Thread_local unsigned pw_cache_next;

static bool pw_plan_cached(const struct pwg *g, struct pwp *best)
{
	struct pwg k;
	bool ok;

	memcpy(&k, g, sizeof(k));	/* g was zeroed before it was filled: padding compares equal */
	k.in_va = k.w_va = k.out_va = k.b_va = k.res_va = 0;
	for (unsigned i = 0; i < PW_PLAN_CACHE; i++)
		if (pw_cache[i].used && !memcmp(&pw_cache[i].key, &k, sizeof(k))) {
			if (pw_cache[i].ok)
				*best = pw_cache[i].plan;
			return pw_cache[i].ok;
		}
	ok = pw_plan(g, best);
	memcpy(&pw_cache[pw_cache_next].key, &k, sizeof(k));
	pw_cache[pw_cache_next].ok = ok;
	if (ok)
		pw_cache[pw_cache_next].plan = *best;
	pw_cache[pw_cache_next].used = true;
	pw_cache_next = (pw_cache_next + 1) % PW_PLAN_CACHE;
	return ok;
}

/* The device and epilogue fields of g. */
static void pw_setup(const struct accel_caps *c, struct pwg *g, const struct mm_problem *p)
{
	g->rate = p->f32 ? c->rate_fp32 : c->rate_int8;
	g->colb = mm_has_cols(p) ? mm_col_bytes(p) : 0;
	g->sfu = p->use_sfu;
	g->wide = c->features & TNPU_FEAT_DW_WIDE;
	g->rows = c->rows;
	g->cols = c->cols;
	g->pes = c->pes;
	g->acc = ACCEL_MIN(c->acc_elems, TNPU_ACC_ELEMS);
	g->half = c->sram_bytes / 2;
	g->b_va = p->bias_va;
}

/* Plan and emit g; 1 if no plan fits or its replay is slower than other_est (0: none), else 0/-errno. */
static int pw_lower(struct accel_dev *dev, struct mm_ctx *x, struct pwg *g, const struct mm_problem *p,
		    double (*other)(const void *), const void *arg)
{
	struct pwp d;

	pw_setup(x->caps, g, p);
	if (!pw_plan_cached(g, &d))
		return 1;
	/* one hardware job: CONFIGs, then per segment its fills, bands, semaphores and EXEs (16-byte
	 * header and up to 33 packet bytes each) */
	if (4 * 256 + (uint64_t)d.nseg * (4 * 64 + 10 * 72 + 6 * 16 + cdiv(d.T, d.spe) * 2 * d.nct * 56) > x->cut_bytes)
		return 1;
	if (dev->pw_mode != 2) {
		double o = other(arg);

		if (o > 0 && d.est > o)
			return 1;
	}
	if (cs_segment_len(x->cs))
		cs_cut(x->cs);
	x->prob_seq++;
	pw_emit(x->cs, g, &d, p);
	if (x->cs->err)
		return cs_report(x->cs);
	return 0;
}

static bool pw_usable(const struct accel_dev *dev, const struct mm_ctx *x, const struct mm_problem *p)
{
	const struct accel_caps *c = x->caps;

	return dev->pw_mode != 1 && (c->features & TNPU_FEAT_DEPTHWISE) && (c->features & TNPU_FEAT_STREAM) &&
	       !p->zskip_a && !p->mac_lb && x->pin_row == 0xFF &&
	       (!p->res_tensor || ((p->sfu.ops & TNPU_SFU_OP_RESIDUAL) && p->out_dtype != TNPU_DTYPE_INT8));
}

struct pw_conv_arg {
	const struct accel_caps *c;
	const struct accel_conv2d_desc *cd;
	const struct mm_problem *p;
};

/* the direct or IM2COL plan conv_direct_lower would run instead */
static double pw_conv_other(const void *arg)
{
	const struct pw_conv_arg *a = arg;

	return conv_direct_est(a->c, a->cd, a->p);
}

/* The geometry of a convolution the lowering can take into g; 1 if it cannot. */
static int pw_conv_geom(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
			const struct mm_problem *p, struct pwg *gp)
{
	const struct accel_tensor *in = cd->input, *wt = cd->weights, *out = cd->output;
	struct pwg g;
	int64_t e = p->f32 ? 4 : 1, oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;

	if (!pw_usable(dev, x, p) || in->layout != ACCEL_LAYOUT_NHWC || out->layout != ACCEL_LAYOUT_NHWC ||
	    cd->groups != 1)
		return 1;
	memset(&g, 0, sizeof(g));
	CONV_SHAPE_FILL(g, cd);
	g.e = (uint32_t)e;
	g.oe = (uint32_t)oe;
	/* packed rows: contiguous pixels of C channels in, of K channels out; OHWI weights */
	if (in->strides[1] != e || in->strides[3] != (int64_t)g.C * e || in->strides[2] != (int64_t)g.W * g.C * e ||
	    out->strides[1] != oe || out->strides[3] != (int64_t)g.K * oe || out->strides[2] != (int64_t)g.OW * g.K * oe ||
	    wt->strides[0] != (int64_t)g.R * g.S * g.C * e || g.C > 65535 || g.K > 65535)
		return 1;
	g.in_va = in->buf->va + in->offset;
	g.w_va = wt->buf->va + wt->offset;
	g.out_va = out->buf->va + out->offset;
	g.in_sn = (uint64_t)in->strides[0];
	g.out_sn = (uint64_t)out->strides[0];
	/* the residual has the output's layout, shape and strides (conv_lower checked) */
	g.res = p->res_tensor != NULL;
	g.res_va = g.res ? p->res_tensor->buf->va + p->res_tensor->offset : 0;
	if (g.R == 1 && g.S == 1 && g.sy == 1 && g.sx == 1 && !cd->pad_top && !cd->pad_left && !cd->pad_bottom &&
	    !cd->pad_right && in->strides[0] == (int64_t)g.H * g.W * g.C * e &&
	    out->strides[0] == (int64_t)g.OH * g.OW * g.K * oe && (uint64_t)g.N * g.H * g.W <= 0xFFFFFFFFull) {
		/* flat: the pixels of the whole batch are one matrix, and so are the outputs */
		g.M = g.N * g.H * g.W;
		*gp = g;
		return 0;
	}
	/* row mode: a filter row is S*C contiguous elements of an input row (dilation 1 along x) */
	if ((g.S > 1 && g.dx != 1) || g.R > PW_MAX_TAPS || (uint64_t)g.S * g.C > 65535)
		return 1;
	g.rowm = true;
	g.Wp = (g.OW - 1) * g.sx + (g.S - 1) + 1;
	g.cin = ACCEL_MIN(g.W, g.Wp > g.pl ? g.Wp - g.pl : 0);
	g.pad = p->f32 ? 0 : (uint8_t)(int8_t)cd->input_zero_point;
	g.M = g.OH * g.OW;
	if (!g.cin || g.pl >= g.Wp)
		return 1;
	*gp = g;
	return 0;
}

/* Returns 1 if the convolution is not eligible or another lowering is faster, 0 or -errno. */
int conv_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p)
{
	struct pw_conv_arg arg = { x->caps, cd, p };
	struct pwg g;

	if (pw_conv_geom(dev, x, cd, p, &g))
		return 1;
	return pw_lower(dev, x, &g, p, pw_conv_other, &arg);
}

/* The modeled cycles of the plan conv_lower runs for an NHWC groups-1 convolution (p: its problem with
 * M set): this lowering's replay where it is eligible and not slower, else the direct or IM2COL
 * lowering's estimate. */
double conv_pw_est(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p)
{
	double o = conv_direct_est(x->caps, cd, p);
	struct pwg g;
	struct pwp d;

	if (x->force_direct || pw_conv_geom(dev, x, cd, p, &g))
		return o;
	pw_setup(x->caps, &g, p);
	if (!pw_plan_cached(&g, &d))
		return o;
	return dev->pw_mode == 2 || o <= 0 || d.est <= o ? d.est : o;
}

struct pw_gemm_arg {
	const struct accel_caps *c;
	const struct mm_problem *p;
};

/* the matmul engine's plan */
static double pw_gemm_other(const void *arg)
{
	const struct pw_gemm_arg *a = arg;
	struct mm_plan mp;

	return mm_plan_choose(a->c, a->p, &mp) ? 0 : mp.est_cycles;
}

/* C[M x N] = A[M x K] . B^T with B stored N x K (a Linear layer's weights): the same GEMM as a pointwise
 * convolution of M pixels.  Returns 1 if not eligible or the matmul engine is faster, 0 or -errno. */
int gemm_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct mm_problem *p)
{
	struct pw_gemm_arg arg = { x->caps, p };
	uint32_t e = p->f32 ? 4 : 1, oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	struct pwg g;

	if (!pw_usable(dev, x, p) || p->a.kind != MM_MAT || p->b.kind != MM_MAT_T || p->c_trans || p->c_dma_flags ||
	    p->a.dma_flags || p->a.pitch != (uint64_t)p->K * e || p->b.pitch != (uint64_t)p->K * e ||
	    p->c_pitch != (uint64_t)p->N * oe || p->K > 65535 || p->N > 65535 ||
	    (p->res_tensor && p->res_pitch != (uint64_t)p->N * oe))
		return 1;
	memset(&g, 0, sizeof(g));
	g.M = p->M;
	g.C = p->K;
	g.K = p->N;
	g.e = e;
	g.oe = oe;
	g.in_va = p->a.va;
	g.w_va = p->b.va;
	g.out_va = p->c_va;
	g.res = p->res_tensor != NULL;
	g.res_va = p->res_va;
	return pw_lower(dev, x, &g, p, pw_gemm_other, &arg);
}
