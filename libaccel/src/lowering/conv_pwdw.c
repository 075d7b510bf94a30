/* SPDX-License-Identifier: MIT */
/*
 * conv_pwdw.c - a pointwise convolution feeding a depthwise one (a MobileNet inverted residual's
 * expansion and depthwise layers) as one job (Documentation/libaccel.md "Fused expansion and
 * depthwise").
 *
 * The depthwise layer runs on the depthwise block with the units splitting channels (conv_dw.c's
 * channel split: unit u holds channels [u*Cu, u*Cu + Cu) of every pixel of its padded input image), so
 * unit u's rows compute exactly those expansion channels for every pixel: the pointwise part is
 * conv_pw.c's row mode with the units on channel blocks, the expansion's input rows broadcast to
 * every unit through its own host port (read from host memory once), and its output tiles stored by
 * the chained SFU straight into the image at the image's row pitch.  The expanded tensor never leaves
 * the chip: the job reads the expansion's input and writes the depthwise output, nothing else.
 *
 * A segment (the depthwise layer's output rows that fit a half next to both layers' weights and the
 * input rows) runs on every row as: the expansion's EXEs over the image rows the segment's windows
 * read, then the depthwise run.  The rows execute their EXEs in order, so the run reads what the
 * expansion stored without any semaphore; the input rows are line-tracked (STREAM), the output rows
 * leave as written (STREAM), and segments alternate halves with the depthwise block's write-after-read
 * semaphores.  The expansion's sub-tiles are groups of gp image rows (a PE's pixel block is an image
 * row or a chunk of one); when the segment's rows are no multiple of gp, its first rows run first as a
 * remainder of its own mapping over the padded image's positions (padding columns included: a flat run
 * of pixel blocks), and the padding those blocks wrote is filled again before the run reads it (the
 * load engine waits for the remainder's EXE; with row wraps, WRAP records, the blocks run across the image
 * rows without their padding columns and nothing is filled again); without a remainder the last group moves up to end at
 * the last row, or the groups overlap at one uniform step (the last one in the others' EXEs).  The two layers' programs use different resources (instruction buffers, register
 * windows, input and weight slots).  fz_sim replays the cycle model for each candidate mapping; the
 * caller falls back to two jobs when no plan fits or the device lacks what the job needs.
 *
 * This file emits a plan and holds the plan cache and the entry points; segments and hosting are
 * conv_pwdw_seg.c, the replay and the plan search conv_pwdw_plan.c, what they share conv_pwdw_int.h.
 */
#include "conv_pwdw_int.h"

static void fz_emit(struct accel_cmdstream *cs, const struct accel_caps *c, const struct fz *z,
		    const struct mm_problem *pp, const struct mm_problem *pd_prob)
{
	const struct dwg *g = &z->g;
	const struct dwp *d = &z->d;
	const struct pwg *pg = &z->pg;
	const struct pwp *pd = &z->pd;
	uint32_t total = g->N * d->nseg, wl = d->Cu * g->R * g->S * g->e;
	struct pw_band bw = pw_band_w(pg, pd), bb = pw_band_b(pg, pd);
	uint8_t sf = TNPU_BANDS_F_STREAM, aux = TNPU_BANDS_F_AUX | TNPU_BANDS_F_STREAM;
	struct pkt exe_run;
	bool used[2] = { false, false }, cfg[TNPU_NUM_ACCS + 1] = { false }, first = true;
	struct fz_exe ex[FZ_MAX_EXES];
	uint16_t tab[FZ_MIX_BUFS];
	bool mcfg[FZ_MIX_BUFS] = { false }, waited, recs_sent = false;
	struct fz_hostp hp;
	unsigned ntab = 0;
	uint32_t kt, kd;

	exe_begin(&exe_run, fz_prog.buf_run, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
	/* CONFIGs: the main buffer n runs n sub-tiles (records with the first); the depthwise records
	 * of the hosting EXEs */
	fz_cfgs(z, cfg);
	for (uint32_t n = TNPU_NUM_ACCS; n >= 1; n--) {
		if (cfg[n]) {
			pw_config(cs, pg, pd, pp, n, n, first, 0);
			first = false;
		}
	}
	if (fz_hosts_first(c, z, pd_prob->use_sfu)) {
		fz_config_recs(cs, z, pd_prob);
		recs_sent = true;
	}
	for (uint32_t s = 0; s < total; s++) {
		struct fz_seg q = fz_seg_at(z, s);
		struct pw_seg sg = { .h = q.h, .in_off = z->x_off, .in_va = pg->in_va + (uint64_t)q.b * pg->in_sn,
				     .y0 = q.r0 };
		unsigned h = q.h, nf, nex;
		struct dw_fill f[DW_MAX_FILLS + FZ_MAX_FIX];

		/*
		 * load engine: at a half's first use the expansion's records and its first channel tile of
		 * weights, the input rows, the rest of the weights, then (half 0) the depthwise records and
		 * weights of both halves, all on the AUX queue in this order: the expansion's weight LDs wait
		 * for their lines and so cover every record before them, the runs' weight-slot LDs cover the
		 * rest.
		 */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, FZ_CFREE + h, 1);
		if (!used[h] && pg->colb) {
			pw_band_emit(cs, true, &bb, 0, bb.ul ? bb.ul : bb.n, h, aux);
			pw_band_emit_tail(cs, true, &bb, h, aux);
		}
		if (!used[h])
			pw_band_emit(cs, true, &bw, 0, pd->w0, h, aux);
		if (q.nr)
			pw_rows_emit(cs, pg, pd, &sg, 0, q.nr, sf);
		if (!used[h]) {
			pw_band_emit(cs, true, &bw, pd->w0, pd->kr, h, aux);
			pw_band_emit_tail(cs, true, &bw, h, aux);
		}
		if (!used[h] && !h) {
			for (unsigned hh = 0; g->colb && hh < (total > 1 ? 2u : 1u); hh++)
				dw_bands(cs, true, pd_prob->bias_va, 0, hh, d->b_off, 0, g->C * g->colb, 1, 0,
					 d->Cu * g->colb, d->Cu * g->colb, 0, aux);
			for (unsigned hh = total > 1 ? 2 : 1; hh-- > 0;)	/* half 0's last: it covers the rest */
				dw_bands(cs, true, g->w_va, 0, hh, d->w_off, 0, g->C * g->R * g->S * g->e, 1, 0, wl, wl, 0,
					 aux);
		}
		used[h] = true;
		/* compute engine: the remainder over the first rows and their padding; load engine: once it
		 * is done, the padding it wrote and the run's padding (only the run waits for the fills) */
		if (q.rr) {	/* its own CONFIG: the segment's block size */
			struct pwp rd = fz_rem_at(z, &q);

			uint32_t in = (uint32_t)((int64_t)z->x_off + (int64_t)q.rs0 * pg->C * pg->e),
				 out = (uint32_t)((int64_t)d->in_off + (int64_t)q.j0 * d->P_in +
						  (int64_t)q.rs0 * d->Cu * g->e);

			if (rd.ctx) {	/* every channel tile in one EXE */
				pw_config_ct(cs, &z->rg, &rd, pp, FZ_REM_BUF, FZ_REM_RF);
				pw_exe_emit_ct(cs, &z->rg, &rd, &sg, FZ_REM_BUF, in, out);
			} else {
				pw_config(cs, &z->rg, &rd, pp, FZ_REM_BUF, q.rT, true, FZ_REM_RF);
				for (uint32_t ct = 0; ct < rd.nct; ct++)
					pw_exe_emit(cs, &z->rg, &rd, &sg, FZ_REM_BUF, 0, ct, in, out);
			}
			if (!rd.wrap) {	/* the fills of the padding it wrote wait for it */
				cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, FZ_RFILL, 1);
				cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, FZ_RFILL, 1);
			}
		}
		nf = dw_fills(g, d, s, 0, q.hi, f);
		nf += fz_fix(z, &q, f + nf);
		for (unsigned i = 0; i < nf; i++)
			dw_fill_emit(cs, h, &f[i], g->pad);
		if (nf)
			cs_sem(cs, true, AS, TNPU_ENGINE_LOAD, FZ_PAD, 1);
		/*
		 * compute engine: the expansion's groups into the image, those EXEs that host depthwise
		 * iterations (fz_host) after the fills and the output buffer's release, each with its first
		 * iteration's window and output addresses; then the depthwise run over the iterations left
		 */
		nex = fz_exes(z, &q, ex);
		fz_host(c, z, pd_prob->use_sfu, &q, ex, nex, &hp);
		kt = hp.kt;
		waited = false;
		kd = 0;
		for (unsigned i = 0, x = 0; i < nex; i++)
			for (uint32_t ct = 0; ct < pd->nct; ct++, x++) {
				uint32_t m = hp.nx ? hp.m[x] : 0, in = (uint32_t)((int64_t)z->x_off + g->pl * pg->C * pg->e +
									       (int64_t)ex[i].drow * z->xp);
				uint32_t out = (uint32_t)((int64_t)fz_img(z, q.j0) + (int64_t)ex[i].drow * d->P_in);
				bool pre = hp.pre && x + 1 == hp.nx, wsl = !kd && m;
				struct tnpu_exe_patch xp[3];
				struct tnpu_operand ra, ro;
				uint8_t recs[5][32];
				int b;

				if (!m && !pre) {
					pw_exe_emit(cs, pg, pd, &sg, ex[i].n, ex[i].k0, ct, in, out);
					continue;
				}
				b = fz_mixbuf(tab, &ntab, ex[i].n, m, wsl, pre);
				if (!recs_sent) {
					fz_config_recs(cs, z, pd_prob);
					recs_sent = true;
				}
				if (!mcfg[b - FZ_MIX_BUF0]) {
					fz_config_mix(cs, z, pd_prob->use_sfu, (unsigned)b, ex[i].n, m, wsl, pre);
					mcfg[b - FZ_MIX_BUF0] = true;
				}
				if (!waited) {
					if (nf)
						cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, FZ_PAD, 1);
					if (s >= 2)
						cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, FZ_SFREE + h, 1);
					waited = true;
				}
				dw_run_recs(g, d, pd_prob, kd, 0, recs);
				memcpy(&ra, recs[0], 32);
				memcpy(&ro, recs[1], 32);
				xp[0] = (struct tnpu_exe_patch){ .rf = FZ_MIX_REC, .field = TNPU_PATCH_ADDR, .value = ra.addr };
				xp[1] = (struct tnpu_exe_patch){ .rf = FZ_MIX_REC + 1, .field = TNPU_PATCH_ADDR, .value = ro.addr };
				xp[2] = (struct tnpu_exe_patch){ .rf = FZ_MIX_REC + 5, .field = TNPU_PATCH_ADDR,
								 .value = d->in_off + hp.pre * d->P_in };
				pw_exe_emit_x(cs, pg, pd, &sg, (unsigned)b, ex[i].k0, ct, in, out, xp, 2 + pre);
				kd += m;
			}
		if (kt < q.n) {
			dw_config_run(cs, g, d, pd_prob, kt ? &fz_prog_held : &fz_prog, h, kt, q.n - kt, 0);
			if (!waited && nf)
				cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, FZ_PAD, 1);
			if (!waited && s >= 2)
				cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, FZ_SFREE + h, 1);
			pkt_dispatch(cs, &exe_run, AS, TNPU_DISPATCH_ROW_ALL, h, 0);
		}
		if (s + 2 < total)
			cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, FZ_CFREE + h, 1);
		/* store engine: each unit's channels of the output rows as the run writes them */
		dw_bands(cs, false, g->out_va + (uint64_t)q.b * g->out_sn + (uint64_t)q.y0 * g->out_sh, g->out_sh, h,
			 d->out_off, d->out_rp, g->OW * g->C * g->oe, q.rows, 0, d->Cu * g->oe, d->Cu * g->oe,
			 g->C * g->oe, sf);
		if (s + 2 < total)
			cs_sem(cs, true, AS, TNPU_ENGINE_STORE, FZ_SFREE + h, 1);
	}
}

/*
 * A compiled model submits the same pairs every run: the plans (or the two jobs' being faster) of the
 * last FZ_CACHE pairs are kept per device, keyed by everything the planner and the two lowerings'
 * estimates read -- the two layers' geometries without their tensors' addresses, the epilogues' kinds,
 * the flags and the device's options -- so a repeated call skips the planning (2-40 ms of host time
 * with the estimates) and only fills in the addresses.
 */
#define FZ_CACHE 32

struct fz_key {
	struct dwg g;
	struct pwg pg;
	uint32_t ops_p, ops_q;
	uint8_t dw_sfu, one_job, pw_mode, dw_map, stream_off, conv_mode, no_direct, force_direct, host, ovl;
};

struct pwdw_cache {
	struct {
		bool used, split;
		struct fz_key k;
		struct fz plan;
	} e[FZ_CACHE];
	unsigned next;
};

void accel_pwdw_cache_free(struct accel_dev *dev)
{
	free(dev->pwdw_cache);
	dev->pwdw_cache = NULL;
}

/* z's key (z zeroed before it was filled: the padding bytes compare equal). */
static void fz_key(const struct accel_dev *dev, const struct mm_ctx *x, const struct fz *z, const struct mm_problem *pp,
		   const struct mm_problem *pq, uint32_t flags, struct fz_key *k)
{
	memset(k, 0, sizeof(*k));
	k->g = z->g;
	k->pg = z->pg;
	k->g.in_va = k->g.w_va = k->g.out_va = 0;
	k->pg.in_va = k->pg.w_va = k->pg.out_va = k->pg.b_va = k->pg.res_va = 0;
	k->ops_p = pp->sfu.ops;
	k->ops_q = pq->sfu.ops;
	k->dw_sfu = pq->use_sfu;
	k->one_job = (flags & ACCEL_PWDW_ONE_JOB) != 0;
	k->pw_mode = dev->pw_mode;
	k->dw_map = dev->dw_map;
	k->stream_off = dev->stream_off;
	k->conv_mode = dev->conv_mode;
	k->no_direct = x->no_direct;
	k->force_direct = x->force_direct;
	k->host = dev->pwdw_host;
	k->ovl = dev->pwdw_ovl;
}

/* The cached entry for key k (-1 none). */
static int fz_cache_find(const struct accel_dev *dev, const struct fz_key *k)
{
	const struct pwdw_cache *c = dev->pwdw_cache;

	for (unsigned i = 0; c && i < FZ_CACHE; i++)
		if (c->e[i].used && !memcmp(&c->e[i].k, k, sizeof(*k)))
			return (int)i;
	return -1;
}

static void fz_cache_put(struct accel_dev *dev, const struct fz_key *k, const struct fz *plan)
{
	struct pwdw_cache *c = dev->pwdw_cache;
	unsigned i;

	if (!c && !(c = dev->pwdw_cache = calloc(1, sizeof(*c))))
		return;	/* no memory: plan again next time */
	i = c->next++ % FZ_CACHE;
	c->e[i].used = true;
	c->e[i].split = plan == NULL;
	c->e[i].k = *k;
	if (plan)
		c->e[i].plan = *plan;
}

static bool packed_nhwc(const struct accel_tensor *t, uint32_t e)
{
	return t->layout == ACCEL_LAYOUT_NHWC && t->strides[1] == (int64_t)e &&
	       t->strides[3] == (int64_t)t->shape[1] * e && t->strides[2] == (int64_t)t->shape[3] * t->shape[1] * e;
}

/* The pair as one job: 1 (with *why) if it cannot be, 0 or -errno. */
static int fz_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_pwdw_desc *dd,
		    const struct mm_problem *pp, const struct mm_problem *pq, const char **why)
{
	const struct accel_conv2d_desc *cp = &dd->pw, *cq = &dd->dw;
	const struct accel_caps *c = x->caps;
	uint32_t e = pp->f32 ? 4 : 1, oe = pq->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	struct fz z, best;
	struct fz_key key;
	uint64_t bytes = 4096;
	int hit;

	if (dev->pwdw_off) {
		*why = "the sim option pwdw=off";
		return 1;
	}
	if (!(c->features & TNPU_FEAT_DEPTHWISE) || !(c->features & TNPU_FEAT_STREAM) || dev->dw_off ||
	    x->no_direct) {
		*why = "the device (or its options) has no depthwise block with line-tracked bands";
		return 1;
	}
	if (!packed_nhwc(cp->input, e) || !packed_nhwc(cq->output, oe) ||
	    cp->weights->strides[0] != (int64_t)cp->input->shape[1] * e ||
	    cq->weights->strides[0] != (int64_t)cq->weights->shape[2] * cq->weights->shape[3] * e) {
		*why = "the tensors are not packed NHWC";
		return 1;
	}
	if (pp->res_tensor || pq->res_tensor || (!pp->f32 && pp->out_dtype != TNPU_DTYPE_INT8)) {
		*why = "an epilogue residual, or an int8 expansion whose output is not requantised to int8";
		return 1;
	}
	memset(&z, 0, sizeof(z));
	/* the depthwise layer, as conv_dw_lower sets it up */
	z.g.dt = pp->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	z.g.pad = (uint8_t)(int8_t)cq->input_zero_point;
	z.g.out_dt = pq->out_dtype;
	z.g.e = e;
	z.g.oe = oe;
	CONV_SHAPE_FILL(z.g, cq);
	z.g.colb = mm_has_cols(pq) ? mm_col_bytes(pq) : 0;
	z.g.wide = (c->features & TNPU_FEAT_DW_WIDE) && !dev->dw_narrow;
	z.g.rate_mc = z.g.wide ? TNPU_RATE_WIDE_MCAST : c->rate_dispatch;
	z.g.fused = true;
	z.ovl_mode = dev->pwdw_ovl;
	if (z.g.R > 255 || z.g.S > 255 || z.g.C > 65535 || cp->input->shape[1] > 65535) {
		*why = "a dimension beyond the depthwise block's fields";
		return 1;
	}
	z.g.w_va = cq->weights->buf->va + cq->weights->offset;
	z.g.out_va = cq->output->buf->va + cq->output->offset;
	z.g.out_sn = (uint64_t)cq->output->strides[0];
	z.g.out_sh = (uint64_t)cq->output->strides[2];
	/* the expansion: row mode over the image rows, units on channel blocks */
	z.pg.rowm = true;
	z.pg.N = z.g.N;
	z.pg.H = z.pg.OH = z.g.H;
	z.pg.W = z.pg.OW = z.pg.Wp = z.pg.cin = z.g.W;
	z.pg.R = z.pg.S = z.pg.sy = z.pg.sx = z.pg.dy = z.pg.dx = 1;
	z.pg.M = z.g.H * z.g.W;
	z.pg.C = cp->input->shape[1];
	z.pg.K = z.g.C;
	z.pg.e = e;
	z.pg.oe = e;
	z.pg.rate = pp->f32 ? c->rate_fp32 : c->rate_int8;
	z.pg.colb = mm_has_cols(pp) ? mm_col_bytes(pp) : 0;
	z.pg.sfu = pp->use_sfu;
	z.pg.wide = c->features & TNPU_FEAT_DW_WIDE;
	z.pg.cpair = !(c->features & TNPU_FEAT_CPAIR) ? 0 : dev->cpair_mode == 2 ? 2 : 1;
	z.pg.wrap = !(c->features & TNPU_FEAT_WRAP) ? 0 : dev->wrap_mode == 2 ? 2 : 1;
	z.pg.rows = c->rows;
	z.pg.cols = c->cols;
	z.pg.pes = c->pes;
	z.pg.acc = ACCEL_MIN(c->acc_elems, TNPU_ACC_ELEMS);
	z.pg.half = c->sram_bytes / 2;
	z.pg.b_va = pp->bias_va;
	z.pg.in_va = cp->input->buf->va + cp->input->offset;
	z.pg.in_sn = (uint64_t)cp->input->strides[0];
	z.pg.w_va = cp->weights->buf->va + cp->weights->offset;
	fz_key(dev, x, &z, pp, pq, dd->flags, &key);
	hit = fz_cache_find(dev, &key);
	if (hit >= 0 && dev->pwdw_cache->e[hit].split) {
		*why = "the two jobs' plans are faster";
		return 1;
	}
	if (hit >= 0) {	/* the plan, with this call's addresses */
		best = dev->pwdw_cache->e[hit].plan;
		best.g.w_va = z.g.w_va;
		best.g.out_va = z.g.out_va;
		best.pg.b_va = z.pg.b_va;
		best.pg.in_va = best.rg.in_va = z.pg.in_va;
		best.pg.w_va = best.rg.w_va = z.pg.w_va;
		best.rg.b_va = z.pg.b_va;
	} else if (!fz_plan(c, &z, pq->use_sfu, dev->pwdw_host, &best)) {
		*why = "no mapping fits the storage units (the expanded channels must split evenly over the "
		       "units and their PEs, and a segment's rows with both layers' weights must fit a half)";
		return 1;
	}
	if (hit < 0 && !(dd->flags & ACCEL_PWDW_ONE_JOB)) {
		/* the two lowerings' own estimates: two jobs when they are faster */
		struct mm_problem qp = *pp, qq = *pq;
		double ep, eq;

		qp.M = z.g.N * z.g.H * z.g.W;
		qq.M = z.g.N * z.g.OH * z.g.OW;
		ep = conv_pw_est(dev, x, cp, &qp);
		eq = conv_dw_est(dev, x, cq, &qq);
		if (ep > 0 && eq > 0 && best.est > ep + eq) {
			fz_cache_put(dev, &key, NULL);
			*why = "the two jobs' plans are faster";
			return 1;
		}
	}
	if (hit < 0)
		fz_cache_put(dev, &key, &best);
	for (uint32_t s = 0; s < best.g.N * best.d.nseg; s++) {
		struct fz_exe ex[FZ_MAX_EXES];
		struct fz_seg q = fz_seg_at(&best, s);

		bytes += 1536 + (uint64_t)fz_exes(&best, &q, ex) * best.pd.nct * 64;
	}
	if (bytes > x->cut_bytes) {
		*why = "its commands exceed one command buffer";
		return 1;
	}
	if (cs_segment_len(x->cs))
		cs_cut(x->cs);
	x->prob_seq++;
	fz_emit(x->cs, c, &best, pp, pq);
	if (x->cs->err)
		return cs_report(x->cs);
	return 0;
}

static bool same_tensor(const struct accel_tensor *a, const struct accel_tensor *b)
{
	return a->buf == b->buf && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim &&
	       a->layout == b->layout && !memcmp(a->shape, b->shape, sizeof(a->shape)) &&
	       !memcmp(a->strides, b->strides, sizeof(a->strides));
}

/* conv_prepare with the half's name before its message. */
static int pwdw_prepare(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd, const char *name,
			struct mm_problem *p)
{
	char msg[sizeof(dev->err)];
	int ret = conv_prepare(dev, x, cd, p);

	if (!ret)
		return 0;
	memcpy(msg, dev->err, sizeof(msg));
	return accel_seterr(dev, ret, "accel_conv2d_pwdw: %s: %s", name, msg);
}

static int pwdw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_pwdw_desc *d)
{
	const struct accel_conv2d_desc *cp = &d->pw, *cq = &d->dw;
	struct mm_problem pp, pq;
	const char *why = NULL;
	int ret;

	if (d->flags & ~(ACCEL_PWDW_SPLIT | ACCEL_PWDW_ONE_JOB) ||
	    (d->flags & ACCEL_PWDW_SPLIT && d->flags & ACCEL_PWDW_ONE_JOB))
		return accel_seterr(dev, -EINVAL, "accel_conv2d_pwdw: flags 0x%x: unknown bits, or both SPLIT and "
				    "ONE_JOB", d->flags);
	if ((ret = pwdw_prepare(dev, x, cp, "pw", &pp)) || (ret = pwdw_prepare(dev, x, cq, "dw", &pq)))
		return ret;
	if (!same_tensor(cp->output, cq->input))
		return accel_seterr(dev, -EINVAL, "accel_conv2d_pwdw: dw.input must be pw.output (the intermediate "
				    "tensor: same buffer, offset, dtype, layout, shape and strides)");
	if (cp->weights->shape[2] != 1 || cp->weights->shape[3] != 1 || cp->stride_h != 1 || cp->stride_w != 1 ||
	    cp->pad_top || cp->pad_left || cp->pad_bottom || cp->pad_right || cp->groups != 1)
		return accel_seterr(dev, -EINVAL, "accel_conv2d_pwdw: pw must be a 1x1 convolution with stride 1, "
				    "no padding and groups 1");
	if (cq->groups != cq->input->shape[1] || cq->groups != cq->output->shape[1])
		return accel_seterr(dev, -EINVAL, "accel_conv2d_pwdw: dw must be depthwise (groups == C == K)");
	if ((ret = arg_no_overlap(dev, cq->output, "dw.output", cp->input, "pw.input")) ||
	    (ret = arg_no_overlap(dev, cq->output, "dw.output", cp->weights, "pw.weights")) ||
	    (ret = arg_no_overlap(dev, cq->output, "dw.output", cp->epi.bias, "pw's bias")) ||
	    (ret = arg_no_overlap(dev, cq->output, "dw.output", cp->output, "the intermediate")))
		return ret;
	if (!(d->flags & ACCEL_PWDW_SPLIT)) {
		ret = fz_lower(dev, x, d, &pp, &pq, &why);
		if (ret <= 0)
			return ret;
		if (d->flags & ACCEL_PWDW_ONE_JOB)
			return accel_seterr(dev, -E2BIG, "accel_conv2d_pwdw: the pair cannot run as one job: %s", why);
	}
	ret = conv_lower(dev, x, cp);
	if (!ret)
		ret = conv_lower(dev, x, cq);
	return ret;
}

int accel_conv2d_pwdw(struct accel_dev *dev, const struct accel_conv2d_pwdw_desc *d, const struct accel_submit *sub,
		      struct accel_job **job)
{
	struct accel_cmdstream cs;
	struct mm_ctx x;
	int ret;

	ret = accel_op_begin(dev, d, "accel_conv2d_pwdw", job);
	if (ret)
		return ret;
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	ret = pwdw_lower(dev, &x, d);
	return accel_op_submit(dev, &cs, ret, sub, NULL, 0, job);
}
