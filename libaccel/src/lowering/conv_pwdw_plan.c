// SPDX-License-Identifier: MIT
/*
 * conv_pwdw_plan.c - the fused lowering's replay of the cycle model (fz_sim, Documentation/hardware/cycle-model.md)
 * and its plan search over the expansion's and the depthwise block's mappings, each candidate replayed.
 */
#include "conv_pwdw_int.h"

/* Modeled job cycles of plan z (cycle-model.md applied to the stream fz_emit writes; the expansion's
 * EXEs by conv_pw.c's replay, the depthwise run by conv_dw.c's work formula). */
static double fz_sim(const struct accel_caps *c, const struct fz *z, bool dw_sfu)
{
	const struct dwg *g = &z->g;
	const struct dwp *d = &z->d;
	const struct pwg *pg = &z->pg;
	const struct pwp *pd = &z->pd;
	uint32_t total = g->N * d->nseg, rate = g->dt == TNPU_DTYPE_INT8 ? c->rate_int8 : c->rate_fp32;
	uint64_t th = d->th, tw = d->tw, mac, sfu_c, st, srow, wb, xc, tok_c[2] = { 0, 0 }, tok_s[2] = { 0, 0 };
	uint64_t prev_b[PW_MAX_TAPS], stt[PW_MAX_SUB + 1], dww[2] = { 0, 0 };
	struct pw_band bw = pw_band_w(pg, pd), bb = pw_band_b(pg, pd);
	struct pw_land wl[2];
	struct pw_eng e = { 0 };
	struct fz_exe ex[FZ_MAX_EXES];
	bool used[2] = { false, false }, cfg[TNPU_NUM_ACCS + 1] = { false }, first = true, mcfg[FZ_MIX_BUFS] = { false };
	bool recs = false;
	uint16_t tab[FZ_MIX_BUFS];
	uint64_t dmac, dsfu, dst;
	unsigned ntab = 0;

	memset(wl, 0, sizeof(wl));
	fz_iter_costs(c, z, dw_sfu, &dmac, &dsfu, &dst);
	mac = cdiv(th * tw * d->tn * g->R * g->S, rate);
	sfu_c = dw_sfu ? cdiv(th * tw * d->tn, TNPU_RATE_SFU) : cdiv(th * tw * d->tn, TNPU_RATE_OQ);
	st = cdiv(th * tw * d->tn * g->oe * c->pes, TNPU_RATE_ST);
	srow = cdiv(d->out_rp, TNPU_RATE_DMA_PORT);
	wb = (uint64_t)d->Cu * g->R * g->S * g->e;
	xc = pg->W * pg->C * pg->e > TNPU_RATE_DMA_PORT ? cdiv((uint64_t)pg->W * pg->C * pg->e, TNPU_RATE_DMA_PORT) : 1;
	fz_cfgs(z, cfg);
	for (unsigned n = TNPU_NUM_ACCS; n >= 1; n--) {
		if (cfg[n]) {
			pw_sim_cfg(&e, pw_cfg_len(pg, n, first));
			first = false;
		}
	}
	if (fz_hosts_first(c, z, dw_sfu)) {	/* the depthwise records with the CONFIGs */
		pw_sim_cfg(&e, FZ_REC_CFG_LEN);
		recs = true;
	}
	for (uint32_t s = 0; s < total; s++) {
		struct fz_seg q = fz_seg_at(z, s);
		unsigned h = q.h, nf, nex;
		struct pw_land in = { .n = 0 }, inr = { .n = 0 };
		struct pw_simseg ss = { &in, NULL, &wl[h], pd->kr, prev_b };
		struct pw_simseg ssr = { &inr, NULL, &wl[h], pd->kr, prev_b };
		struct dw_fill f[DW_MAX_FILLS + FZ_MAX_FIX];
		struct dw_work w = { 0 };
		uint64_t tok_f = 0, t0, out_t = 0, S;
		uint32_t lo = 0, kt = 0, kd = 0;
		struct fz_hostp hp;
		bool waited = false;

		/* the weight slot holds the other half's tile: its first LD here moves it all */
		for (unsigned t = 0; t < PW_MAX_TAPS; t++)
			prev_b[t] = UINT64_MAX;
		/* load: at the half's first use records and weights around the input rows */
		if (s >= 2)
			e.fl = ACCEL_MAX(e.fl, tok_c[h]) + TNPU_CYC_CMD;
		if (!used[h] && pg->colb) {
			struct pw_land bl = { .n = 0 };

			pw_sim_band(&e, true, &bb, 0, bb.ul ? bb.ul : bb.n, &bl);
			pw_sim_tail(&e, true, &bb, &bl);
		}
		if (!used[h])
			pw_sim_band(&e, true, &bw, 0, pd->w0, &wl[h]);
		if (q.nr) {
			uint64_t t = pw_h2d(&e, false, q.nr, xc);

			in.p[in.n++] = (struct pw_piece){ 0, q.nr, 1, t, xc };
			inr.p[inr.n++] = (struct pw_piece){ 0, (uint64_t)q.nr * d->Wpu, d->Wpu, t, xc };
		}
		if (!used[h]) {
			pw_sim_band(&e, true, &bw, pd->w0, pd->kr, &wl[h]);
			pw_sim_tail(&e, true, &bw, &wl[h]);
		}
		if (!used[h] && !h) {
			for (unsigned hh = 0; g->colb && hh < (total > 1 ? 2u : 1u); hh++)
				pw_h2d(&e, true, 1, cdiv((uint64_t)d->Cu * g->colb, TNPU_RATE_DMA_PORT));
			for (unsigned hh = total > 1 ? 2 : 1; hh-- > 0;)
				dww[hh] = pw_h2d(&e, true, 1, cdiv(wb, TNPU_RATE_DMA_PORT)) + TNPU_CYC_CMD +
					  TNPU_CYC_DMA_SETUP + cdiv(wb, TNPU_RATE_DMA_PORT);
		}
		used[h] = true;
		/* compute: the remainder; load: once it is done, the fills */
		if (q.rr) {
			struct pwp rd = fz_rem_at(z, &q);

			if (rd.ctx) {	/* every channel tile in one EXE */
				pw_sim_cfg(&e, pw_cfg_len_ct(&z->rg, &rd));
				pw_sim_exe_ct(&z->rg, &rd, &ssr, &e, (uint64_t)(int64_t)q.rs0);
			} else {
				pw_sim_cfg(&e, pw_cfg_len(&z->rg, q.rT, true));
				for (uint32_t ct = 0; ct < rd.nct; ct++)
					pw_sim_exe(&z->rg, &rd, &ssr, &e, 0, q.rT, ct, (uint64_t)(int64_t)q.rs0, stt,
						   NULL);
			}
			if (!rd.wrap) {	/* the fills of the padding it wrote wait for it */
				e.fl = ACCEL_MAX(e.fl, ACCEL_MAX(e.fc, e.r)) + TNPU_CYC_CMD;
				e.fc += TNPU_CYC_CMD;
			}
		}
		nf = dw_fills(g, d, s, 0, q.hi, f);
		nf += fz_fix(z, &q, f + nf);
		for (unsigned i = 0; i < nf; i++)
			e.fl += dw_fill_cycles(&f[i]);
		if (nf) {
			tok_f = e.fl;
			e.fl += TNPU_CYC_CMD;
		}
		/* compute: the main EXEs (those hosting depthwise iterations after the fills and the
		 * output buffer's release), then the run's CONFIG, waits, EXE for the iterations left */
		nex = fz_exes(z, &q, ex);
		fz_host(c, z, dw_sfu, &q, ex, nex, &hp);
		kt = hp.kt;
		S = e.fs + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
		for (unsigned i = 0, x = 0; i < nex; i++)
			for (uint32_t ct = 0; ct < pd->nct; ct++, x++) {
				struct pw_extra xe = { 0 };
				uint32_t m = hp.nx ? hp.m[x] : 0;
				bool pre = hp.pre && x + 1 == hp.nx;

				if (m || pre) {
					bool wsl = !kd && m;
					int b = fz_mixbuf(tab, &ntab, ex[i].n, m, wsl, pre);

					if (b < 0)
						return 1e300;
					if (!recs) {	/* the depthwise records, before the first hosting EXE */
						pw_sim_cfg(&e, FZ_REC_CFG_LEN);
						recs = true;
					}
					if (!mcfg[b - FZ_MIX_BUF0]) {
						pw_sim_cfg(&e, fz_mix_cfg_len(ex[i].n, m, wsl, pre, dw_sfu));
						mcfg[b - FZ_MIX_BUF0] = true;
					}
					if (!waited) {
						if (nf)
							e.fc = ACCEL_MAX(e.fc, tok_f) + TNPU_CYC_CMD;
						if (s >= 2)
							e.fc = ACCEL_MAX(e.fc, tok_s[h]) + TNPU_CYC_CMD;
						waited = true;
					}
					xe.plen = 8 * (2 + pre);
					xe.issued = (uint64_t)m * (dw_sfu ? 4 : 3) + wsl + pre;
					for (uint32_t k = kd; k < kd + m; k++) {
						uint32_t hi = fz_iter_hi(z, k);

						for (uint32_t j = lo; j < hi; j++)
							xe.wide += fz_row_bytes(z, &q, j);
						lo = hi;
					}
					if (pre) {	/* the rows of the preloaded block not yet delivered */
						for (uint32_t j = lo; j < hp.pre + fz_box(z); j++)
							xe.wide += fz_row_bytes(z, &q, j);
						lo = ACCEL_MAX(lo, hp.pre + fz_box(z));
					}
					xe.dist = xe.wide;
					if (!g->wide)
						xe.wide = 0;
					if (wsl) {
						xe.dist += wb;
						xe.ready = dww[h];
					}
					xe.mac = m * dmac;
					xe.sfu = m * dsfu;
					xe.st = m * dst;
				}
				pw_sim_exe(pg, pd, &ss, &e, ex[i].k0, ex[i].n, ct, (uint64_t)(int64_t)ex[i].drow, stt,
					   m || pre ? &xe : NULL);
				for (uint32_t k = kd; k < kd + m; k++)	/* the rows leave once the EXE wrote them */
					S = ACCEL_MAX(S, e.r) + (uint64_t)(ACCEL_MIN((k + 1) * d->E, q.rows) - k * d->E) * srow;
				kd += m;
			}
		if (kt < q.n) {
			pw_sim_cfg(&e, 1 + 16 + 2 * (3 + !kt) + 32u * ((dw_sfu ? 4 : 3) + !kt));
			if (!waited) {
				if (nf)
					e.fc = ACCEL_MAX(e.fc, tok_f) + TNPU_CYC_CMD;
				if (s >= 2)
					e.fc = ACCEL_MAX(e.fc, tok_s[h]) + TNPU_CYC_CMD;
			}
			e.fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + 1;
			t0 = ACCEL_MAX(e.r, e.fc);
			out_t = e.r;
		} else {
			t0 = out_t = e.r;
		}
		/* the weight-slot LD (plain: twice the wide path's time), waiting for the weights' lines,
		 * unless a hosting EXE of the segment loaded the slot */
		if (!kt) {
			w.issued = 1;
			w.dist = (g->wide ? 2 : 1) * wb;
			t0 = ACCEL_MAX(t0, dww[h] > TNPU_CYC_EXE ? dww[h] - TNPU_CYC_EXE : 0);
		}
		for (uint32_t k = kt; k < q.n; k++) {
			uint32_t hi = ACCEL_MIN(d->in_rows, ((k + 1) * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1);
			uint32_t o0 = k * d->E, o1 = ACCEL_MIN((k + 1) * d->E, q.rows);
			uint64_t img = 0;

			for (uint32_t j = lo; j < hi; j++)
				img += fz_row_bytes(z, &q, j);
			w.issued += 3;
			w.dist += img;
			w.mac += mac;
			w.drain += sfu_c + st;
			lo = hi;
			out_t = t0 + TNPU_CYC_EXE + dw_work_cycles(&w, &(struct dw_work){ 0 }, sfu_c + st, g->rate_mc);
			S = ACCEL_MAX(S, out_t) + (uint64_t)(o1 - o0) * srow;
		}
		e.r = out_t;
		if (s + 2 < total) {
			tok_c[h] = ACCEL_MAX(e.fc, e.r);
			e.fc += TNPU_CYC_CMD;
		}
		/* store: each output row leaves once its ST wrote it */
		e.fs = S;
		if (s + 2 < total) {
			tok_s[h] = e.fs;
			e.fs += TNPU_CYC_CMD;
		}
	}
	return (double)(ACCEL_MAX(ACCEL_MAX(ACCEL_MAX(e.fl, e.aux), ACCEL_MAX(e.fc, e.r)), e.fs) + TNPU_CYC_JOB);
}

/* An expansion plan for mapping map (clusters / PEs on pixel blocks) with nct channel tiles covering the
 * unit's Cu channels exactly (the image's pixels are Cu channels apart) and tiles of tm pixels; the
 * weights, records and input rows after the depthwise buffers. */
static bool fz_pw_chan(const struct fz *z, const struct pwg *pg, unsigned map, uint32_t nct, uint32_t tm,
		       struct pwp *pd)
{
	uint32_t gp = (map & 1 ? pg->cols : 1) * (map & 2 ? pg->pes : 1), gch = pg->cols * pg->pes / gp;
	uint32_t Cu = z->d.Cu, tn;

	if (Cu % ((uint64_t)gch * nct))
		return false;
	tn = Cu / (gch * nct);
	if (!tn || !tm || (uint64_t)tm * tn > pg->acc || tm > 65535)
		return false;
	if (!pw_chan(pg, true, map, tn, pd) || pd->ku != Cu || pd->kr != Cu)
		return false;
	pd->tm = tm;
	pd->spe = TNPU_NUM_ACCS;
	pd->nseg = 1;
	pd->w_off = al64((uint64_t)z->d.b_off + (uint64_t)Cu * ACCEL_MAX(z->g.colb, 4u));
	pd->b_off = al64((uint64_t)pd->w_off + (uint64_t)Cu * pg->C * pg->e);
	pd->in_off[0] = pd->in_off[1] = z->x_off;
	pd->w0 = (uint32_t)ACCEL_MIN(cdiv((uint64_t)gch * tn, pd->qw) * pd->qw, pd->kr);
	return true;
}

/* The remainder's mapping rmap with rnct channel tiles; false if a segment's remainder finds no
 * sub-tiles or would leave its image area. */
static bool fz_rem_plan(struct fz *z, unsigned rmap, uint32_t rnct)
{
	bool any = false;

	z->rg = z->pg;
	z->rg.rowm = false;
	if (!fz_pw_chan(z, &z->rg, rmap & 3, rnct, 1, &z->rd))
		return false;
	/* rmap bit 3: row wrap (clusters on pixels, PEs on channels), one sub-tile of blocks that run
	 * across the image rows without their padding columns (fz_seg_at) */
	if (rmap & 8) {
		if (!z->pg.wrap || (rmap & 7) != 1 || z->pg.res || z->d.P_in < (uint64_t)z->g.W * z->d.Cu * z->g.e ||
		    z->g.W > 65535)
			return false;
		z->rd.wrap = z->g.W;
		/* bit 4: every channel tile in one EXE (each its own accumulator and SFU record) */
		if ((rmap & 16) && (z->rd.nct < 2 || z->rd.nct > TNPU_NUM_ACCS))
			return false;
		z->rd.ctx = (rmap & 16) != 0;
	}
	/* rmap bit 2: cluster pairs (clusters on pixels, PEs on channels), each row's image columns as
	 * two blocks of ceil(W / 2) (overlapping by one column when W is odd) */
	if (rmap & 4) {
		uint32_t tm = (z->g.W + 1) / 2;

		if (!z->pg.cpair || (rmap & 3) != 1 || z->pg.cols < 2 || z->pg.cols % 2 ||
		    z->d.P_in != (uint64_t)z->d.Wpu * z->d.Cu * z->g.e || (uint64_t)tm * z->rd.tn > z->pg.acc)
			return false;
		z->rd.tm = tm;
		z->rd.pair = z->d.Wpu;
		z->rd.pcs = z->g.W - tm;
	}
	for (uint32_t s = 0; s < z->d.nseg; s++) {
		struct fz_seg q = fz_seg_at(z, s);

		/* its blocks (and the input rows they read) stay in the segment's image area */
		if (q.rr && (!q.rT || (int64_t)z->x_off + (int64_t)q.rs0 * z->pg.C * z->pg.e < 0 ||
			     (uint64_t)q.j0 * z->d.Wpu + (uint64_t)((int64_t)q.rs0 + q.rpos) >
				     (uint64_t)z->d.in_rows * z->d.Wpu + z->guard))
			return false;
		any |= q.rr > 0;
	}
	return any;
}

/* The work of a row for the segments' remainders: per channel tile an EXE of the weights' LD (one
 * multicast block on the wide path) and the sub-tiles' LDs and MACs (overlapping), SFU and ST. */
static uint64_t fz_rem_work(const struct fz *z)
{
	const struct pwp *r = &z->rd;
	const struct pwg *g = &z->pg;
	uint64_t w = 0, wt = (uint64_t)r->gch * r->tn * g->C * g->e;

	for (uint32_t s = 0; s < g->N * z->d.nseg; s++) {
		struct fz_seg q = fz_seg_at(z, s);
		uint64_t dist, mac, drain;

		if (!q.rr)
			continue;
		dist = cdiv(wt, g->wide ? TNPU_RATE_WIDE_MCAST : TNPU_RATE_DISPATCH) +
		       cdiv((uint64_t)q.rT * r->gp * q.rtm * g->C * g->e, TNPU_RATE_DISPATCH);
		mac = q.rT * cdiv((uint64_t)q.rtm * r->tn * g->C, g->rate);
		drain = q.rT * (cdiv((uint64_t)q.rtm * r->tn, g->sfu ? TNPU_RATE_SFU : TNPU_RATE_OQ) +
				cdiv((uint64_t)q.rtm * r->tn * g->oe * g->pes, TNPU_RATE_ST));
		if (r->ctx)	/* one EXE for every channel tile */
			w += TNPU_CYC_EXE + r->nct * (ACCEL_MAX(dist, mac) + drain);
		else
			w += r->nct * (TNPU_CYC_EXE + ACCEL_MAX(dist, mac) + drain);
	}
	return w;
}

#define FZ_REM_TOP 3	/* remainder plans replayed per main plan: the least work */

/* The remainder mappings (and channel tiles) of least work for z's main plan, up to FZ_REM_TOP, as
 * rmap | rnct << 8 in top[]; their count. */
static unsigned fz_best_rems(struct fz *z, unsigned top[FZ_REM_TOP])
{
	static const unsigned rmaps[] = { 0, 1, 2, 3, 5, 9, 25 };
	uint64_t w[FZ_REM_TOP];
	unsigned n = 0;
	bool only_pairs = false, only_wrap = false;

	/* sim options cpair=all / wrap=all: only cluster pairs (rmap 5) / row wraps (rmap 9) where they
	 * fit */
	for (uint32_t rnct = 1; z->pg.wrap == 2 && rnct <= 8; rnct++)
		only_wrap |= fz_rem_plan(z, 9, rnct);
	for (uint32_t rnct = 1; !only_wrap && z->pg.cpair == 2 && rnct <= 8; rnct++)
		only_pairs |= fz_rem_plan(z, 5, rnct);
	for (unsigned i = 0; i < sizeof(rmaps) / sizeof(rmaps[0]); i++)
		for (uint32_t rnct = 1; rnct <= 8; rnct++) {
			unsigned k, rmap = rmaps[i];
			uint64_t v;

			if ((only_wrap && !(rmap & 8)) || (only_pairs && rmap != 5))
				continue;

			if (!fz_rem_plan(z, rmap, rnct))
				continue;
			v = fz_rem_work(z);
			for (k = n; k > 0 && w[k - 1] > v; k--)
				if (k < FZ_REM_TOP) {
					w[k] = w[k - 1];
					top[k] = top[k - 1];
				}
			if (k < FZ_REM_TOP) {
				w[k] = v;
				top[k] = rmap | rnct << 8;
				n += n < FZ_REM_TOP;
			}
		}
	return n;
}

/* A lower bound of plan z's cycles: the work of its main groups' sub-tiles on a row. */
static double fz_bound(const struct fz *z)
{
	const struct pwp *pd = &z->pd;
	uint64_t per = cdiv((uint64_t)pd->tm * pd->tn * z->pg.C, z->pg.rate) +
		       cdiv((uint64_t)pd->tm * pd->tn, z->pg.sfu ? TNPU_RATE_SFU : TNPU_RATE_OQ) +
		       cdiv((uint64_t)pd->tm * pd->tn * z->pg.oe * z->pg.pes, TNPU_RATE_ST), n = 0;

	for (uint32_t s = 0; s < z->g.N * z->d.nseg; s++)
		n += fz_seg_at(z, s).nr / pd->gp * pd->xch * pd->nct;
	return (double)(n * per + TNPU_CYC_JOB);
}

/* z with depthwise plan d (laid out with guard positions): the expansion's view of the image and of its
 * input rows. */
static void fz_set_dw(struct fz *z, const struct dwp *d, uint32_t guard)
{
	const struct dwg *g = &z->g;
	int64_t reach = ((int64_t)g->OW - 1) * g->sx + (int64_t)(g->S - 1) * g->dx + 1;	/* columns read */

	z->d = *d;
	z->d.cf = z->d.cl = z->d.cm = 1;
	z->guard = guard;
	z->pg.orp = d->P_in;
	z->pg.Wp = d->Wpu;
	z->pg.pl = g->pl;
	z->xp = d->Wpu * z->pg.C * z->pg.e;
	z->padl = g->pl * d->Cu * g->e;
	/* the right padding columns the stored outputs read (px: more columns follow, never read) */
	z->padr = (uint32_t)ACCEL_MIN((int64_t)d->Wpu - g->pl - g->W, ACCEL_MAX(reach - g->pl - g->W, 0)) * d->Cu * g->e;
}

/* Keep z in *best if it is faster: without hosting depthwise iterations, and hosting them (both
 * policies) with main EXEs of up to 4, 2 and 1 sub-tiles (host: the sim option pwdw-host, 1 never, 2
 * only hosting plans, 3 only the most hosting: one sub-tile per EXE, no budget). */
static void fz_keep(const struct accel_caps *c, struct fz *z, bool dw_sfu, uint8_t host, struct fz *best, bool *found)
{
	static const uint8_t spes[] = { 0, 2, 1 };

	for (uint8_t mix = host == 3 ? 2 : host == 2; mix < (host == 1 || z->ovl ? 1 : 3); mix++)
		for (unsigned i = host == 3 ? 2 : 0; i < (mix ? 3u : 1u); i++) {
			z->mix = mix;
			z->spe = spes[i];
			z->est = fz_sim(c, z, dw_sfu);
			if (z->est < 1e300 && (!*found || z->est < best->est)) {
				*best = *z;
				*found = true;
			}
		}
	z->mix = 0;
	z->spe = 0;
}

/* The expansion's main mapping (map, nct, xch) on z's depthwise plan; false if it cannot take it. */
static bool fz_set_main(struct fz *z, unsigned map, uint32_t nct, uint32_t xch)
{
	uint32_t T = 0;

	if (z->pg.W % xch || !fz_pw_chan(z, &z->pg, map, nct, z->pg.W / xch, &z->pd))
		return false;
	z->pd.xch = xch;
	z->x_off = al64((uint64_t)z->pd.b_off + (uint64_t)z->d.Cu * ACCEL_MAX(z->pg.colb, 4u));
	z->pd.in_off[0] = z->pd.in_off[1] = z->x_off;
	z->pd.out_off[0] = z->pd.out_off[1] = fz_img(z, 0);
	for (uint32_t s = 0; s < z->d.nseg; s++)
		T = ACCEL_MAX(T, (uint32_t)cdiv(fz_seg_at(z, s).nr, z->pd.gp) * xch);
	return T <= PW_MAX_SUB && T <= FZ_MAX_EXES;
}

/* Overlapping groups for z's main plan (no remainder): every segment's ng >= 2 groups of gp rows at
 * one uniform step gs < gp ((ng - 1) * gs = nr - gp: the rows two groups share are computed twice,
 * written twice with the same values), so the last group needs no EXE of its own; false if a segment
 * has no such step or the segments' steps differ (one program's records). */
static bool fz_set_ovl(struct fz *z)
{
	uint32_t gp = z->pd.gp, gs = 0;

	for (uint32_t s = 0; s < z->d.nseg; s++) {
		struct fz_seg q = fz_seg_at(z, s);
		uint32_t t;

		if (!q.nr)
			continue;
		if (q.ng < 2 || !q.shift || (q.nr - gp) % (q.ng - 1))
			return false;
		t = (q.nr - gp) / (q.ng - 1);
		if (gs && t != gs)
			return false;
		gs = t;
	}
	if (!gs)
		return false;
	z->ovl = true;
	z->pd.gs = gs;
	return true;
}

/* Every main mapping (each with the last group moved, or overlapping, or a remainder of every
 * mapping) on z's depthwise plan. */
static void fz_try_mains(const struct accel_caps *c, struct fz *z, bool dw_sfu, uint8_t host, struct fz *best,
			 bool *found)
{
	uint32_t min_nr = UINT32_MAX;
	unsigned top[FZ_REM_TOP], nr;

	z->pd.gp = 1;
	z->rem = false;
	for (uint32_t s = 0; s < z->d.nseg; s++) {
		struct fz_seg q = fz_seg_at(z, s);

		if (q.nr)
			min_nr = ACCEL_MIN(min_nr, q.nr);
	}
	for (unsigned map = 0; map < 4; map++)
		for (uint32_t nct = 1; nct <= 8; nct++)
			for (uint32_t xch = 1; xch <= 8; xch++) {
				bool ov = false;

				z->rem = false;
				if (!fz_set_main(z, map, nct, xch))
					continue;
				/* the main groups' MACs and drains alone already slower: not replayed */
				if (*found && fz_bound(z) >= best->est)
					continue;
				/* a remainder: the mappings whose sub-tiles do the least work, replayed */
				z->rem = true;
				nr = fz_best_rems(z, top);
				z->rem = false;
				/* or the last group moved up (every segment has gp rows); not with sim option
				 * cpair=all where cluster pairs fit */
				if (z->pd.gp <= min_nr && !(z->pg.cpair == 2 && nr && (top[0] & 4)) &&
				    !(z->pg.wrap == 2 && nr && (top[0] & 8))) {
					/* or the groups overlapping at a uniform step, all in the same EXEs (sim
					 * option pwdw-ovl: off never, all only they, where they fit) */
					ov = z->ovl_mode != 1 && fz_set_ovl(z);

					z->ovl = false;
					z->pd.gs = 0;
					if (!ov || z->ovl_mode != 2)
						fz_keep(c, z, dw_sfu, host, best, found);
					if (ov && fz_set_ovl(z))
						fz_keep(c, z, dw_sfu, host, best, found);
					z->ovl = false;
					z->pd.gs = 0;
				}
				z->rem = true;
				for (unsigned t = 0; t < nr && !(ov && z->ovl_mode == 2); t++)
					if (fz_rem_plan(z, top[t] & 0xFF, top[t] >> 8))
						fz_keep(c, z, dw_sfu, host, best, found);
			}
	z->rem = false;
}

#define FZ_DW_MAX 160	/* depthwise plans: 4 mappings x th x with and without the guard */
#define FZ_DW_TOP 3	/* the depthwise plans the second search covers */

/*
 * The fastest plan: the depthwise channel split (clusters on rows or channels, th rows per cluster,
 * the tallest segments that fit; or the PEs on the pixels of a row), every expansion mapping that
 * covers the unit's channels exactly, with a remainder of every mapping or the last group moved.  The
 * two layers' choices hardly interact (only through the segments), so the search is staged: every
 * expansion plan on the first depthwise plan, every depthwise plan with the expansion plan found, then
 * every expansion plan on the best few depthwise plans.
 */
bool fz_plan(const struct accel_caps *c, struct fz *z, bool dw_sfu, uint8_t host, struct fz *best)
{
	struct dwp dws[FZ_DW_MAX];
	uint32_t guard[FZ_DW_MAX];
	double est[FZ_DW_MAX];
	unsigned n = 0, top[FZ_DW_TOP], nt = 0;
	bool found = false;
	struct fz a;

	for (unsigned m = 0; m < 4; m++) {	/* clusters on rows, on channels; PEs on pixels with either */
		struct dwp d0;

		if (!dw_split_init(c, &z->g, true, m & 1, true, m >= 2, &d0))
			continue;
		/* the bytes a half keeps after the depthwise buffers: the expansion's weights and records,
		 * and its input rows (one padded row per image row of a segment); a guard after the image
		 * area and the input rows lets a remainder's last blocks run past the segment's rows, where
		 * it costs no segment rows */
		z->g.xrow = d0.Wpu * z->pg.C * z->pg.e;
		for (uint32_t th = 1; th <= (m & 1 ? 32u : 8u) && n + 2 <= FZ_DW_MAX; th++) {
			struct dwp d[2];
			int r[2];

			for (unsigned gd = 0; gd < 2; gd++) {
				d[gd] = d0;
				z->g.xfix = al64((uint64_t)d0.Cu * z->pg.C * z->pg.e) + 64 +
					    al64((uint64_t)d0.Cu * ACCEL_MAX(z->pg.colb, 4u)) + 64 +
					    (gd ? FZ_GUARD * z->pg.C * z->pg.e : 0);
				z->g.ximg = gd ? FZ_GUARD * d0.Cu * z->g.e : 0;
				r[gd] = dw_split_th(c, &z->g, &d[gd], th);
			}
			if (r[0] < 0)
				break;
			if (r[1] > 0 && d[1].nx == 1) {
				guard[n] = FZ_GUARD;
				dws[n++] = d[1];
			}
			if (r[0] > 0 && d[0].nx == 1 && (r[1] <= 0 || d[1].ob != d[0].ob)) {
				guard[n] = 0;
				dws[n++] = d[0];
			}
		}
	}
	if (!n)
		return false;
	/* every expansion plan on the first depthwise plan */
	fz_set_dw(z, &dws[0], guard[0]);
	fz_try_mains(c, z, dw_sfu, host, &a, &found);
	if (!found)
		return false;
	/* every depthwise plan with that expansion plan (where it fits) */
	for (unsigned i = 0; i < n; i++) {
		struct fz y = a;
		unsigned map = (a.pd.cl_pix ? 1 : 0) | (a.pd.pe_pix ? 2 : 0);
		bool ok;

		est[i] = 1e300;
		fz_set_dw(&y, &dws[i], guard[i]);
		if (!fz_set_main(&y, map, a.pd.nct, a.pd.xch))
			continue;
		y.ovl = false;
		if (a.ovl && !fz_set_ovl(&y))
			continue;
		y.rem = a.rem;
		ok = !y.rem || fz_rem_plan(&y, (a.rd.cl_pix ? 1 : 0) | (a.rd.pe_pix ? 2 : 0) | (a.rd.pair ? 4 : 0) |
						       (a.rd.wrap ? 8 : 0) | (a.rd.ctx ? 16 : 0),
					   a.rd.nct);
		y.rem = y.rem && ok;
		if (!y.rem && a.rem) {
			bool fits = true;

			for (uint32_t s = 0; s < y.d.nseg; s++)
				fits &= !fz_seg_at(&y, s).nr || fz_seg_at(&y, s).nr >= y.pd.gp;
			if (!fits)
				continue;
		}
		est[i] = fz_sim(c, &y, dw_sfu);
	}
	for (unsigned k = 0; k < FZ_DW_TOP && k < n; k++) {
		unsigned b = n;

		for (unsigned i = 0; i < n; i++) {
			bool taken = false;

			for (unsigned j = 0; j < nt; j++)
				taken |= top[j] == i;
			if (!taken && est[i] < 1e300 && (b == n || est[i] < est[b]))
				b = i;
		}
		if (b < n)
			top[nt++] = b;
	}
	*best = a;
	for (unsigned k = 0; k < nt; k++) {
		fz_set_dw(z, &dws[top[k]], guard[top[k]]);
		fz_try_mains(c, z, dw_sfu, host, best, &found);
	}
	return found;
}
