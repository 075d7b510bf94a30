// SPDX-License-Identifier: MIT
/*
 * conv_pwdw_seg.c - the fused lowering's segments (rows, groups, the remainder, padding fixes), the hosting
 * of depthwise iterations in the expansion's EXEs, and the CONFIG packets of the hosting buffers.
 */
#include "conv_pwdw_int.h"


struct fz_seg fz_seg_at(const struct fz *z, uint32_t s)
{
	const struct dwg *g = &z->g;
	const struct dwp *d = &z->d;
	uint32_t gp = z->pd.gp;
	struct fz_seg q = { .h = s & 1 };
	int64_t r0, r1;

	q.b = s / d->nseg;
	q.y0 = (s % d->nseg) * d->ob;
	q.rows = ACCEL_MIN(d->ob, g->OH - q.y0);
	q.n = (uint32_t)cdiv(q.rows, d->E);
	q.iy0 = (int64_t)q.y0 * g->sy - g->pt;
	r0 = ACCEL_MAX(q.iy0, 0);
	r1 = ACCEL_MIN(q.iy0 + (int64_t)(q.rows - 1) * g->sy + (int64_t)(g->R - 1) * g->dy + 1, (int64_t)g->H);
	q.r0 = (uint32_t)r0;
	q.nr = r1 > r0 ? (uint32_t)(r1 - r0) : 0;
	q.j0 = (uint32_t)(r0 - q.iy0);
	q.hi = ACCEL_MIN(d->in_rows, (q.n * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1);
	if (z->rem && z->rd.wrap) {
		/* row wrap: one sub-tile over the remainder's rr * W image pixels from position pl (the
		 * padding columns stay as they are), the clusters' blocks of tm pixels rwcs apart with
		 * (cols - 1) * rwcs + tm = rr * W exactly (blocks overlap rather than run past the rows) */
		uint32_t cols = z->pg.cols, npx;

		q.rr = q.nr % gp;
		q.ng = q.nr / gp;
		npx = q.rr * g->W;
		for (uint32_t tm = (uint32_t)cdiv(npx, cols); q.rr && tm <= npx; tm++) {
			if (cols > 1 && (npx - tm) % (cols - 1))
				continue;
			if ((uint64_t)tm * z->rd.tn > z->pg.acc || tm > 65535)
				break;
			q.rT = 1;
			q.rtm = tm;
			q.rwcs = cols > 1 ? (npx - tm) / (cols - 1) : 0;
			q.rs0 = (int32_t)g->pl;
			q.rpos = (q.rr - 1) * d->Wpu + g->W;
			q.ra = q.j0;
			q.rb = q.j0 + q.rr;
			break;
		}
	} else if (z->rem && z->rd.pair) {
		/* cluster pairs: a sub-tile per cols / 2 rows, each row two blocks of the image's columns
		 * (from position pl: the padding columns stay as they are) */
		uint32_t half = z->pg.cols / 2, T;

		q.rr = q.nr % gp;
		q.ng = q.nr / gp;
		T = q.rr / half;
		if (q.rr && q.rr % half == 0 && T <= TNPU_NUM_ACCS &&
		    (uint64_t)z->rd.tm * z->rd.tn <= z->pg.acc) {
			q.rT = T;
			q.rtm = z->rd.tm;
			q.rs0 = (int32_t)z->g.pl;
			q.rpos = q.rr * d->Wpu - z->g.pl;
			q.ra = q.j0;
			q.rb = q.j0 + q.rr;
		}
	} else if (z->rem) {
		q.rr = q.nr % gp;
		q.ng = q.nr / gp;
		for (uint32_t T = 1; q.rr && T <= TNPU_NUM_ACCS; T++) {
			uint32_t tm = (uint32_t)cdiv((uint64_t)q.rr * d->Wpu, (uint64_t)z->rd.gp * T);

			if ((uint64_t)tm * z->rd.tn <= z->pg.acc && tm <= 65535) {
				uint64_t end = (uint64_t)(q.j0 + q.rr) * d->Wpu;
				uint64_t area = (uint64_t)d->in_rows * d->Wpu + z->guard;

				q.rT = T;
				q.rtm = tm;
				q.rpos = T * z->rd.gp * tm;
				if ((uint64_t)q.j0 * d->Wpu + q.rpos > area && q.rpos <= end)
					q.rs0 = (int32_t)((int64_t)q.rr * d->Wpu - q.rpos);
				q.ra = q.rs0 < 0 ? (uint32_t)((end - q.rpos) / d->Wpu) : q.j0;
				q.rb = (uint32_t)cdiv((uint64_t)((int64_t)q.j0 * d->Wpu + q.rs0 + q.rpos), d->Wpu);
				break;
			}
		}
	} else {
		q.ng = (uint32_t)cdiv(q.nr, gp);
		q.shift = q.nr % gp ? gp - q.nr % gp : 0;
	}
	return q;
}


unsigned fz_exes(const struct fz *z, const struct fz_seg *q, struct fz_exe *ex)
{
	uint32_t xch = z->pd.xch, T = q->ng * xch, Tm = (q->ng - (q->shift && !z->ovl ? 1 : 0)) * xch, m;
	uint32_t spe = z->spe ? z->spe : TNPU_NUM_ACCS;
	unsigned n = 0;

	for (uint32_t k = 0; k < T; k += m) {
		bool last = k >= Tm;

		m = xch > 1 ? ACCEL_MIN(spe, xch - k % xch) : last ? 1 : ACCEL_MIN(spe, Tm - k);
		ex[n++] = (struct fz_exe){ k, m, last ? -(int32_t)q->shift : (int32_t)q->rr };
	}
	return n;
}

/* The sub-tile counts of the main EXEs of every segment (one instruction buffer each). */
void fz_cfgs(const struct fz *z, bool cfg[TNPU_NUM_ACCS + 1])
{
	struct fz_exe ex[FZ_MAX_EXES];

	for (uint32_t s = 0; s < z->d.nseg; s++) {
		struct fz_seg q = fz_seg_at(z, s);
		unsigned n = fz_exes(z, &q, ex);

		for (unsigned i = 0; i < n; i++)
			cfg[ex[i].n] = true;
	}
}

/* The remainder's plan in segment q: its sub-tiles' size. */
struct pwp fz_rem_at(const struct fz *z, const struct fz_seg *q)
{
	struct pwp r = z->rd;

	r.tm = q->rtm;
	r.T = q->rT;
	r.wcs = q->rwcs;
	return r;
}

/* SRAM offset of segment row j of the image at column 0 (after the left padding). */
uint32_t fz_img(const struct fz *z, uint32_t j)
{
	return z->d.in_off + j * z->d.P_in + z->padl;
}

/* The FILLs that restore the padding segment q's remainder wrote: the padding columns of its image
 * rows, the whole rows below the image it reached. */
unsigned fz_fix(const struct fz *z, const struct fz_seg *q, struct dw_fill f[FZ_MAX_FIX])
{
	const struct dwp *d = &z->d;
	uint32_t j0 = q->j0, j1 = ACCEL_MIN(q->rb, j0 + q->nr), jb = ACCEL_MIN(q->rb, d->in_rows), n = 0;
	uint32_t iw = z->g.W * d->Cu * z->g.e;

	if (!q->rr || z->rd.wrap)	/* row wrap: the remainder wrote image pixels only */
		return 0;
	if (q->ra < j0)	/* padding rows above the image */
		f[n++] = (struct dw_fill){ .off = d->in_off + q->ra * d->P_in, .width = (j0 - q->ra) * d->P_in,
					   .height = 1 };
	/* a FILL per side: a FILL over row r's right and row r + 1's left padding would write past the
	 * image area after its last row */
	if (z->padl)
		f[n++] = (struct dw_fill){ .off = fz_img(z, j0) - z->padl, .width = z->padl, .pitch = d->P_in,
					   .height = j1 - j0 };
	if (z->padr)
		f[n++] = (struct dw_fill){ .off = fz_img(z, j0) + iw, .width = z->padr, .pitch = d->P_in,
					   .height = j1 - j0 };
	if (jb > j0 + q->nr)	/* rows below the image (not the guard) */
		f[n++] = (struct dw_fill){ .off = d->in_off + (j0 + q->nr) * d->P_in, .width = (jb - j0 - q->nr) * d->P_in,
					   .height = 1 };
	return n;
}

/*
 * The written range [*lo, *hi) of segment q's SRAM row j (lo == hi: none): a remainder's rows and the
 * padding rows a non-zero padding byte fills, whole; an image row, the span the expansion's STs mark
 * over it -- an ST marks its PE tiles' whole span as written, so a group of gp rows marks its rows
 * between its first and last pixel entirely (padding and px columns included) -- and the padding
 * columns the FILLs write.
 */
static void fz_row_span(const struct fz *z, const struct fz_seg *q, int64_t j, uint64_t *lo, uint64_t *hi)
{
	const struct dwp *d = &z->d;
	uint64_t a = d->in_off + (uint64_t)j * d->P_in, img, iw = (uint64_t)z->g.W * d->Cu * z->g.e;
	int64_t iy = q->iy0 + j, r = j - q->j0, gp = z->pd.gp;
	bool first, last;

	*lo = *hi = 0;
	if (j < 0 || j >= d->in_rows)
		return;
	if ((q->rr && j >= q->ra && j < q->rb) || (z->g.pad && (iy < 0 || iy >= (int64_t)z->g.H))) {
		*lo = a;
		*hi = a + d->P_in;
		return;
	}
	if (iy < 0 || iy >= (int64_t)z->g.H)
		return;
	img = fz_img(z, (uint32_t)j);
	if (z->rem) {	/* groups of gp rows after the remainder's */
		first = (r - q->rr) % gp == 0;
		last = (r - q->rr) % gp == gp - 1;
	} else if (z->ovl) {	/* groups [k * gs, k * gs + gp): a span starts before r / ends after it */
		int64_t gs = z->pd.gs;

		first = last = true;
		for (int64_t k = 0; k < (int64_t)q->ng; k++) {
			first &= !(k * gs < r && r < k * gs + gp);
			last &= !(k * gs <= r && r < k * gs + gp - 1);
		}
	} else {	/* the last group moved up: its rows are in two groups' spans */
		int64_t ls = (int64_t)q->nr - gp;

		first = (r % gp == 0 && r < ls) || r == ls;
		last = (r % gp == gp - 1 && r < ls) || r == (int64_t)q->nr - 1;
		if (r > ls && r < (int64_t)q->nr - 1)
			first = last = false;
	}
	*lo = first ? img : a;
	*hi = last ? img + iw : a + d->P_in;
	if (z->g.pad) {	/* the padding columns' FILLs */
		*lo = ACCEL_MIN(*lo, img - z->padl);
		*hi = ACCEL_MAX(*hi, img + iw + z->padr);
	}
}

/* Bytes of segment q's row j in written lines (the window's block is the whole row): the 64-byte lines
 * that touch its written range or the neighbours' (a line that straddles two rows). */
uint64_t fz_row_bytes(const struct fz *z, const struct fz_seg *q, uint32_t j)
{
	uint64_t a = z->d.in_off + (uint64_t)j * z->d.P_in, b = a + z->d.P_in, iv[3][2], n = 0, t = 0, end = a;

	for (int k = -1; k <= 1; k++) {
		uint64_t lo, hi;

		fz_row_span(z, q, (int64_t)j + k, &lo, &hi);
		if (hi <= lo)
			continue;
		lo = ACCEL_MAX(lo / TNPU_SRAM_LINE * TNPU_SRAM_LINE, a);
		hi = ACCEL_MIN(cdiv(hi, TNPU_SRAM_LINE) * TNPU_SRAM_LINE, b);
		if (hi > lo) {
			iv[n][0] = lo;
			iv[n++][1] = hi;
		}
	}
	/* the union of the (row-ordered) ranges */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t lo = ACCEL_MAX(iv[i][0], end);

		if (iv[i][1] > lo)
			t += iv[i][1] - lo;
		end = ACCEL_MAX(end, iv[i][1]);
	}
	return t;
}

/* SRAM rows [0, *hi) of segment q that depthwise iteration k's windows read. */
uint32_t fz_iter_hi(const struct fz *z, uint32_t k)
{
	const struct dwg *g = &z->g;

	return ACCEL_MIN(z->d.in_rows, ((k + 1) * z->d.E - 1) * g->sy + (g->R - 1) * g->dy + 1);
}

/* The depthwise iterations' share of an EXE's work (cycle-model.md): MACs, SFU (or the output queue
 * with ST RAW) and ST of one iteration's tiles. */
void fz_iter_costs(const struct accel_caps *c, const struct fz *z, bool dw_sfu, uint64_t *mac, uint64_t *sfu,
			  uint64_t *st)
{
	const struct dwg *g = &z->g;
	const struct dwp *d = &z->d;
	uint64_t el = (uint64_t)d->th * d->tw * d->tn;

	*mac = cdiv(el * g->R * g->S, g->dt == TNPU_DTYPE_INT8 ? c->rate_int8 : c->rate_fp32);
	*sfu = dw_sfu ? cdiv(el, TNPU_RATE_SFU) : cdiv(el, TNPU_RATE_OQ);
	*st = cdiv(el * g->oe * c->pes, TNPU_RATE_ST);
}


/* SRAM rows of a depthwise iteration's window block (all clusters' windows). */
uint32_t fz_box(const struct fz *z)
{
	return (z->d.E - 1) * z->g.sy + (z->g.R - 1) * z->g.dy + 1;
}

/*
 * Which of segment q's depthwise iterations its main EXEs host (*hp).  An EXE hosts an iteration only if
 * every image row its window reads was stored by the remainder or by earlier EXEs (never by the EXE
 * itself: its windows stream in while its sub-tiles multiply, cycle-model.md's distribution and MACs
 * overlapping, and read nothing those sub-tiles write); with z->mix 1 only while the EXE's delivered
 * bytes stay within its MAC cycles (the windows then cost nothing but their MACs, SFU and ST).  No EXE
 * before FZ_HOST_X0 hosts (the padding fills land meanwhile).
 */
void fz_host(const struct accel_caps *c, const struct fz *z, bool dw_sfu, const struct fz_seg *q,
		    const struct fz_exe *ex, unsigned nex, struct fz_hostp *hp)
{
	const struct pwg *pg = &z->pg;
	const struct pwp *pd = &z->pd;
	uint32_t gp = pd->gp, nct = pd->nct, xch = pd->xch, ng = q->ng, nx = nex * nct, k = 0, lo = 0, done = 0, D = 0;
	uint16_t cnt[FZ_HOST_EXES];
	uint64_t smac = cdiv((uint64_t)pd->tm * pd->tn * pg->C, pg->rate), dmac, dsfu, dst;
	uint64_t wb = (uint64_t)z->d.Cu * z->g.R * z->g.S * z->g.e;
	unsigned x = 0;

	hp->nx = 0;
	hp->kt = hp->pre = 0;
	if (!z->mix || !q->n || nx > FZ_HOST_EXES || ng > FZ_HOST_EXES)
		return;
	fz_iter_costs(c, z, dw_sfu, &dmac, &dsfu, &dst);
	memset(cnt, 0, sizeof(cnt));
	for (unsigned i = 0; i < nex; i++) {
		for (uint32_t ct = 0; ct < nct; ct++, x++) {
			uint32_t n = ex[i].n;
			uint64_t mac = n * smac, d2, plen = 1 + 8 * (2 + (nct > 1) + (nct > 1 && pg->colb) + 3);

			/* rows stored before this EXE: the remainder's, then whole groups from the first */
			D = ACCEL_MIN(done == ng ? q->nr : q->rr + done * gp, q->nr);
			/* delivered bytes, in half cycles of the wide path: the packet and pixels at 128 B/cycle,
			 * the expansion's weights (a new channel tile) on the wide path */
			d2 = 2 * (plen + (uint64_t)n * gp * pd->tm * pg->C * pg->e) +
			     (nct > 1 ? (uint64_t)pd->gch * pd->tn * pg->C * pg->e : 0);
			hp->m[x] = 0;
			while (x >= FZ_HOST_X0 && k < q->n && hp->m[x] < FZ_MIX_MAXM) {
				uint32_t hi = fz_iter_hi(z, k), need = hi > q->j0 ? ACCEL_MIN(hi - q->j0, q->nr) : 0;
				uint64_t b = 0;

				if (need > D)
					break;
				for (uint32_t j = lo; j < hi; j++)
					b += fz_row_bytes(z, q, j);
				b = z->g.wide ? b : 2 * b;
				if (!k)
					b += 2 * wb;	/* the weight-slot LD (plain) */
				if (z->mix == 1 && d2 + b > 2 * TNPU_RATE_DMA * (mac + dmac))
					break;
				d2 += b;
				mac += dmac;
				hp->m[x]++;
				k++;
				lo = hi;
			}
			/* groups whose every x chunk and channel tile is done */
			for (uint32_t t = ex[i].k0; t < ex[i].k0 + n; t++)
				if (t / xch < ng)
					cnt[t / xch]++;
			while (done < ng && cnt[done] == xch * nct)
				done++;
		}
	}
	hp->nx = nx;
	hp->kt = k;
	/* the preload: after a hosted iteration (the slot slides down from its block), in an EXE that may
	 * host, its block within the rows stored before the last EXE and overlapping the run's first */
	if (k && k < q->n && nx - 1 >= FZ_HOST_X0) {
		uint32_t T = k * z->d.E * z->g.sy, B = fz_box(z), end = q->j0 + D;

		if (end >= B && end - B > (k - 1) * z->d.E * z->g.sy && end - B + B > T)
			hp->pre = ACCEL_MIN(T, end - B);
	}
}

/* The hosting EXEs' buffer for n sub-tiles, m iterations, the weight-slot LD or not, the preload or not:
 * a key in tab[] (n | wl << 3 | pre << 4 | m << 5), its buffer FZ_MIX_BUF0 + index; -1 if the table is
 * full. */
int fz_mixbuf(uint16_t tab[FZ_MIX_BUFS], unsigned *nt, unsigned n, unsigned m, bool wl, bool pre)
{
	uint16_t key = (uint16_t)(n | (unsigned)wl << 3 | (unsigned)pre << 4 | m << 5);

	for (unsigned i = 0; i < *nt; i++)
		if (tab[i] == key)
			return (int)(FZ_MIX_BUF0 + i);
	if (*nt == FZ_MIX_BUFS)
		return -1;
	tab[(*nt)++] = key;
	return (int)(FZ_MIX_BUF0 + *nt - 1);
}

/* CONFIG of hosting buffer b: n sub-tiles of the expansion (conv_pw.c's program), [the depthwise
 * weight-slot LD,] m passes of {LD window, DW MAC into the last sub-tile's accumulator (its tile is
 * stored), SFU APPLY with the depthwise record (the chained SFU is the expansion's), ST}, [the preload
 * LD of the next window]. */
void fz_config_mix(struct accel_cmdstream *cs, const struct fz *z, bool dw_sfu, unsigned b, unsigned n,
			  unsigned m, bool wl, bool pre)
{
	const struct pwg *pg = &z->pg;
	uint16_t ins[1 + 3 * TNPU_NUM_ACCS + 1 + 4 + 1], win;
	struct pkt pk;
	struct tnpu_cfg_hdr h;
	unsigned ni = 0, a = n - 1, r = FZ_MIX_REC;

	win = (uint16_t)(TNPU_LD_MCAST | (z->g.wide ? TNPU_LD_WIDE : 0));
	ins[ni++] = (uint16_t)(TNPU_INSN_LD(1, 0, 1, 0) | (pg->wide ? TNPU_LD_MCAST | TNPU_LD_WIDE : 0));
	for (unsigned k = 0; k < n; k++) {
		ins[ni++] = TNPU_INSN_LD(0, 0, 0, 0);
		ins[ni++] = TNPU_INSN_MAC(0, 0, k, 0, pg->sfu);
		ins[ni++] = TNPU_INSN_ST(k, 2, !pg->sfu);
	}
	if (wl)
		ins[ni++] = TNPU_INSN_LD(r + 4, fz_prog.wslot, true, false);
	memset(&h, 0, sizeof(h));
	h.loop_start = (uint8_t)ni;
	h.repeat = 1;
	if (m) {
		ins[ni++] = (uint16_t)(TNPU_INSN_LD(r, fz_prog.islot, false, false) | win);
		ins[ni++] = (uint16_t)(TNPU_INSN_MAC(fz_prog.islot, fz_prog.wslot, a, false, false) | TNPU_MAC_DW);
		if (dw_sfu)
			ins[ni++] = TNPU_INSN_SFU(TNPU_SFU_FN_APPLY, r + 3, a);
		ins[ni++] = TNPU_INSN_ST(a, r + 1, !dw_sfu);
		h.repeat = (uint16_t)m;
	}
	h.loop_end = (uint8_t)(m ? ni - 1 : ni);
	if (pre)
		ins[ni++] = (uint16_t)(TNPU_INSN_LD(r + 5, fz_prog.islot, false, false) | win);
	h.mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ);
	h.sfu_rf = 3;
	h.dw_rf = (uint8_t)(r + 2);
	cfg_begin(&pk, b, &h);
	cfg_insns(&pk, ins, ni);
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, 0, 0);
}

uint64_t fz_mix_cfg_len(unsigned n, unsigned m, bool wl, bool pre, bool dw_sfu)
{
	return 17 + 2 * (1 + 3 * n + wl + (m ? 3 + dw_sfu : 0) + pre);
}

/* The depthwise records into entries FZ_MIX_REC.. of the main window: window, output, parameters, SFU,
 * weights and the preload's copy of the window (a CONFIG of buffer FZ_REC_BUF, whose one instruction
 * never runs). */
void fz_config_recs(struct accel_cmdstream *cs, const struct fz *z, const struct mm_problem *pq)
{
	uint8_t recs[5][32];
	uint16_t ins = TNPU_INSN_LD(4, fz_prog.wslot, true, false);
	struct tnpu_cfg_hdr h = { .rf_base = FZ_MIX_REC, .mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ),
				  .repeat = 1 };
	struct pkt pk;

	dw_run_recs(&z->g, &z->d, pq, 0, 0, recs);
	cfg_begin(&pk, FZ_REC_BUF, &h);
	cfg_insns(&pk, &ins, 1);
	/* the window and the output are operand records; the parameters, SFU and weight records follow */
	cfg_operands(&pk, (const struct tnpu_operand *)(const void *)recs[0], 2);
	cfg_records(&pk, recs[2], 3);
	cfg_record(&pk, recs[0]);
	pkt_dispatch(cs, &pk, AS, TNPU_DISPATCH_ROW_ALL, 0, 0);
}

/* Whether the first segment hosts depthwise iterations or preloads (the depthwise records are then
 * sent with the first CONFIGs, where the rows wait for their data anyway; else before the first EXE
 * that needs them). */
bool fz_hosts_first(const struct accel_caps *c, const struct fz *z, bool dw_sfu)
{
	struct fz_exe ex[FZ_MAX_EXES];
	struct fz_seg q;
	struct fz_hostp hp;

	if (!z->mix)
		return false;
	q = fz_seg_at(z, 0);
	fz_host(c, z, dw_sfu, &q, ex, fz_exes(z, &q, ex), &hp);
	return hp.kt || hp.pre;
}
