// SPDX-License-Identifier: MIT
/*
 * conv_pw_sim.c - the pointwise lowering's bands (one tensor split over the storage units) and its
 * replay of the cycle model (Documentation/hardware/cycle-model.md), which the planner (conv_pw_plan.c) runs
 * for every candidate plan; emission is conv_pw.c.
 */
#include "conv_pw_int.h"

/* Elements per DMA row for n elements of b bytes: a divisor of n near PW_ROW_BYTES, at most
 * PW_MAX_ROWS_PER_BAND rows (else the smallest divisor that keeps the row count). */
uint32_t pw_row_elems(uint32_t n, uint64_t b)
{
	uint32_t best = 0;

	for (uint32_t q = 1; q <= n; q++) {
		if (n % q)
			continue;
		if (n / q > PW_MAX_ROWS_PER_BAND && q < n)
			continue;
		if (!best || (uint64_t)q * b <= PW_ROW_BYTES)
			best = q;
		if ((uint64_t)q * b >= PW_ROW_BYTES)
			break;
	}
	return best ? best : 1;
}

/* ---- bands: one tensor split over the units (axis Z, one DMA row per plane) ---- */


static uint64_t band_full(const struct pw_band *b)
{
	return b->n / b->q;
}

/* Unit 0's full rows among its elements [e0, e1) (multiples of q); unit 0 is the fullest unit. */
static uint64_t band_rows0(const struct pw_band *b, uint64_t e0, uint64_t e1)
{
	uint64_t full = band_full(b), r1 = ACCEL_MIN(e1 / b->q, b->ul ? ACCEL_MIN(full, b->ul / b->q) : full);

	return r1 > e0 / b->q ? r1 - e0 / b->q : 0;
}

/* The tail: its elements [*t0, *t0 + n % q) in its unit's order; false if there is none. */
static bool band_tail(const struct pw_band *b, uint64_t *t0)
{
	uint64_t full = band_full(b), L = b->ul / b->q;

	if (!(b->n % b->q))
		return false;
	*t0 = (b->ul ? full - full / L * L : full) * b->q;
	return true;
}

void pw_band_emit(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, uint64_t e0, uint64_t e1,
		      unsigned half, uint8_t flags)
{
	uint64_t full = band_full(b), L = b->ul / b->q;
	struct tnpu_cmd_dma_bands c = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(c) },
		.host_va = b->va, .host_pitch_z = b->q * b->esz, .sram_off = b->off + (uint32_t)(e0 * b->sesz),
		.sram_pitch_z = (uint32_t)(b->q * b->sesz), .width = (uint32_t)(b->q * b->esz), .height = 1,
		.depth = (uint32_t)full, .band_first = (int32_t)(e0 / b->q), .band_step = (uint32_t)L,
		.band_len = (uint32_t)((e1 - e0) / b->q), .half = (uint8_t)half,
		.axis = (uint8_t)(TNPU_BANDS_AXIS_Z | flags),
	};

	if (band_rows0(b, e0, e1))
		cs_raw(cs, &c, sizeof(c));
}

void pw_band_emit_tail(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, unsigned half, uint8_t flags)
{
	uint64_t full = band_full(b), L = b->ul / b->q, t0, u = b->ul ? full / L : 0;
	struct tnpu_cmd_dma_bands c = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(c) },
		.host_va = b->va + full * b->q * b->esz, .width = (uint32_t)(b->n % b->q * b->esz), .height = 1,
		.depth = 1, .band_first = -(int32_t)(u * L), .band_step = (uint32_t)L,
		.band_len = b->ul ? (uint32_t)L : 1, .half = (uint8_t)half, .axis = (uint8_t)(TNPU_BANDS_AXIS_Z | flags),
	};

	/* only its unit's band [(u' - u) * L, ...) holds plane 0; spz 0: one plane */
	if (!band_tail(b, &t0))
		return;
	c.sram_off = b->off + (uint32_t)(t0 * b->sesz);
	cs_raw(cs, &c, sizeof(c));
}

/* Row mode: band rows [r0, r1) of segment sg's units (unit u's row 0 is input row (y0 + u*ru)*sy - pt;
 * rows outside the image are not written: the padding stays as filled). */
void pw_rows_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		      uint32_t r0, uint32_t r1, uint8_t flags)
{
	struct tnpu_cmd_dma_bands c = {
		.hdr = { .opcode = TNPU_CMD_DMA_BANDS_H2D, .flags = AS, .size = sizeof(c) },
		.host_va = sg->in_va, .host_pitch_z = (uint64_t)g->W * g->C * g->e,
		.sram_off = sg->in_off + (uint32_t)(r0 * g_prow(g)) + g->pl * g->C * g->e,
		.sram_pitch_z = (uint32_t)g_prow(g), .width = g->cin * g->C * g->e, .height = 1, .depth = g->H,
		.band_first = (int32_t)((int64_t)sg->y0 * g->sy - g->pt + r0), .band_step = d->over_n ? 0 : sg->ru * g->sy,
		.band_len = r1 - r0, .half = (uint8_t)sg->h, .axis = (uint8_t)(TNPU_BANDS_AXIS_Z | flags),
	};

	if (r1 > r0)
		cs_raw(cs, &c, sizeof(c));
}

/* Row mode: band rows outside the image in any unit of segment sg ([0, *top) and [*bot, br)). */
static void pad_rows(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg, uint32_t *top, uint32_t *bot)
{
	uint32_t units = d->over_n ? 1 : (uint32_t)cdiv(sg->nrows, sg->ru);
	int64_t t = 0, b = sg->br;

	for (uint32_t u = 0; u < units; u++) {
		int64_t iy0 = ((int64_t)sg->y0 + (int64_t)u * sg->ru) * g->sy - g->pt;

		t = ACCEL_MAX(t, -iy0);
		b = ACCEL_MIN(b, (int64_t)g->H - iy0);
	}
	*top = (uint32_t)ACCEL_MIN(t, (int64_t)sg->br);
	*bot = (uint32_t)ACCEL_MAX(ACCEL_MIN(b, (int64_t)sg->br), (int64_t)*top);
}

/* Fill `height` rows of `width` bytes, `pitch` apart, of every unit's half with the byte v. */
void pw_fill_emit(struct accel_cmdstream *cs, unsigned half, uint32_t off, uint32_t width, uint32_t pitch,
		      uint32_t height, uint8_t v)
{
	struct tnpu_cmd_dma f = {
		.hdr = { .opcode = TNPU_CMD_DMA_H2D, .flags = AS, .size = sizeof(f) },
		.sram_off = off, .sram_pitch_y = pitch, .width = width, .height = height, .depth = 1,
		.row = TNPU_DMA_ROW_ALL, .half = (uint8_t)half, .dma_flags = TNPU_DMA_F_FILL, .fill = v,
	};

	if (width && height)
		cs_raw(cs, &f, sizeof(f));
}

/* The padding fills of segment sg (row mode) into fl[]: {off, width, height} with the padded row as the
 * pitch -- the pad columns at the half's first use (int8 zero point), the rows outside the image
 * whenever they are not clean zeros.  Returns the count. */
unsigned pw_pad_fills(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg, bool first_use,
			  uint32_t fl[4][3])
{
	uint32_t top, bot, n = 0, ce = g->C * g->e, rpad = g->Wp - g->pl - g->cin;

	if (!g->rowm)
		return 0;
	if (first_use && g->pad) {
		if (g->pl)
			fl[n][0] = sg->in_off, fl[n][1] = g->pl * ce, fl[n++][2] = d->br;
		if (rpad)
			fl[n][0] = sg->in_off + (g->pl + g->cin) * ce, fl[n][1] = rpad * ce, fl[n++][2] = d->br;
	}
	pad_rows(g, d, sg, &top, &bot);
	if (g->pad || !first_use) {
		if (top)
			fl[n][0] = sg->in_off, fl[n][1] = (uint32_t)g_prow(g), fl[n++][2] = top;
		if (bot < sg->br)
			fl[n][0] = sg->in_off + (uint32_t)(bot * g_prow(g)), fl[n][1] = (uint32_t)g_prow(g),
			fl[n++][2] = sg->br - bot;
	}
	return n;
}

/* ---- the cycle-model replay (unit 0 or a full middle unit; every unit runs the same program) ---- */

/* cluster.c exe_work: distribution (the wide path's bytes at 256 B/cycle) and MACs overlap, SFU and
 * ST follow */
static uint64_t pw_work(const struct pw_acct *a)
{
	uint64_t d = a->wide ? cdiv(2 * (a->dist - a->wide) + a->wide, TNPU_RATE_WIDE_MCAST)
			     : cdiv(a->dist, TNPU_RATE_DISPATCH);

	return a->issued + (d > a->mac ? d : a->mac) + a->sfu + a->st;
}

/* cluster.c exe_time: the run's own pace, and no earlier than each wait plus the work after it */
static uint64_t pw_time(const struct pw_row *r)
{
	uint64_t t = r->t0 + TNPU_CYC_EXE + pw_work(&r->a);

	for (unsigned i = 0; i < r->n_wait; i++) {
		struct pw_acct d = {
			r->a.issued - r->pre[i].issued, r->a.dist - r->pre[i].dist, r->a.wide - r->pre[i].wide,
			r->a.mac - r->pre[i].mac, r->a.sfu - r->pre[i].sfu, r->a.st - r->pre[i].st,
		};

		t = ACCEL_MAX(t, r->ready[i] + pw_work(&d));
	}
	return t;
}

static void pw_ld(struct pw_row *r, uint64_t ready, uint64_t bytes, bool wide)
{
	r->a.issued++;
	if (ready > r->t0 + TNPU_CYC_EXE && r->n_wait < PW_WAITS) {
		r->ready[r->n_wait] = ready;
		r->pre[r->n_wait++] = r->a;
	}
	r->a.dist += bytes;
	if (wide)
		r->a.wide += bytes;
}


/* When elements [lo, hi) have landed (0: nothing of them is in flight). */
static uint64_t pw_ready(const struct pw_land *l, uint64_t lo, uint64_t hi)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < l->n; i++) {
		const struct pw_piece *p = &l->p[i];

		if (lo < p->e1 && p->e0 < hi) {
			uint64_t row = (ACCEL_MIN(hi, p->e1) - 1 - p->e0) / p->q;

			t = ACCEL_MAX(t, p->t + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (row + 1) * p->c);
		}
	}
	return t;
}


/* A band command of `rows` rows of c port cycles on the load engine (AUX queue or not); returns its
 * start (commands.md "AUX queue", cycle-model.md "DMA_BANDS"). */
uint64_t pw_h2d(struct pw_eng *e, bool aux, uint64_t rows, uint64_t c)
{
	uint64_t s0 = e->fl, s = aux ? ACCEL_MAX(s0, e->aux) : s0, xfer = rows * c;

	if (aux) {
		e->aux = s + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + xfer;
		e->fl = s0 + TNPU_CYC_CMD + xfer;
	} else {
		e->fl = s + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + xfer;
	}
	return s;
}

/* Replay pw_band_emit (unit elements [e0, e1)) and record its landing in l. */
void pw_sim_band(struct pw_eng *e, bool aux, const struct pw_band *b, uint64_t e0, uint64_t e1,
			struct pw_land *l)
{
	uint64_t rows = band_rows0(b, e0, e1), c = zrow(b->q * b->esz);

	if (!rows)
		return;
	l->p[l->n++] = (struct pw_piece){ e0, e0 + rows * b->q, b->q, pw_h2d(e, aux, rows, c), c };
}

void pw_sim_tail(struct pw_eng *e, bool aux, const struct pw_band *b, struct pw_land *l)
{
	uint64_t t0, rem = b->n % b->q;

	if (band_tail(b, &t0))
		l->p[l->n++] = (struct pw_piece){ t0, t0 + rem, rem, pw_h2d(e, aux, 1, zrow(rem * b->esz)), zrow(rem * b->esz) };
}

/* The bands of segment sg (flat mode) and of the weights and column records. */
struct pw_band pw_band_in(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
{
	return (struct pw_band){ sg->in_va, (uint64_t)g->C * g->e, (uint64_t)g->C * g->e, sg->npix, d->qi,
				 d->over_n ? 0 : sg->sg, sg->in_off };
}

struct pw_band pw_band_w(const struct pwg *g, const struct pwp *d)
{
	return (struct pw_band){ g->w_va, g_wrow(g), g_wrow(g), g->K, d->qw, d->over_n ? d->kr : 0, d->w_off };
}

struct pw_band pw_band_b(const struct pwg *g, const struct pwp *d)
{
	return (struct pw_band){ g->b_va, g->colb, g->colb, g->K, d->over_n ? d->kr : g->K, d->over_n ? d->kr : 0,
				 d->b_off };
}

/* Output rows over pixel runs: qo pixels per row (packed channels) or one pixel per row (ku > K); the
 * residual lands the same way in the same buffer. */
struct pw_band pw_band_out(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
{
	return (struct pw_band){ sg->out_va, (uint64_t)g->K * g->oe, (uint64_t)d->ku * g->oe, sg->npix, d->qo, sg->sg,
				 sg->out_off };
}

struct pw_band pw_band_res(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
{
	struct pw_band b = pw_band_out(g, d, sg);

	b.va = sg->res_va;
	return b;
}

/* Units on channel blocks: pixels [p_lo, p_hi) of segment sg, every pixel's block of kr channels of
 * each unit (axis X), the SRAM rows ku channels apart from sram_off -- the output (D2H) or the residual
 * (H2D). */
static void xband_emit(struct accel_cmdstream *cs, bool h2d, const struct pwg *g, const struct pwp *d,
		       const struct pw_seg *sg, uint64_t va, uint64_t p_lo, uint64_t p_hi, uint32_t sram_off, uint32_t ku,
		       uint8_t flags)
{
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(b) },
		.host_va = va + p_lo * g->K * g->oe, .host_pitch_z = (uint64_t)g->K * g->oe, .sram_off = sram_off,
		.sram_pitch_z = ku * g->oe, .width = g->K * g->oe, .height = 1, .depth = (uint32_t)(p_hi - p_lo),
		.band_step = d->kr * g->oe, .band_len = d->kr * g->oe, .half = (uint8_t)sg->h,
		.axis = (uint8_t)(TNPU_BANDS_AXIS_X | flags),
	};

	if (p_hi > p_lo)
		cs_raw(cs, &b, sizeof(b));
}

/* The output (or residual) of segment sg over units on channel blocks: the main sub-tiles' pixels, then
 * the remainder's from its own buffer. */
void pw_xbands_emit(struct accel_cmdstream *cs, bool h2d, const struct pwg *g, const struct pwp *d,
			const struct pw_seg *sg, uint64_t va, uint8_t flags)
{
	uint64_t p0 = d->rem ? (uint64_t)(d->T - 1) * d->gp * d->tm : sg->npix;

	xband_emit(cs, h2d, g, d, sg, va, 0, p0, sg->out_off, d->ku, flags);
	if (d->rem)
		xband_emit(cs, h2d, g, d, sg, va, p0, sg->npix, d->rem_off, d->rku, flags);
}

/* Bytes of tap t's weight block (rows [c0, c0 + n)) in written lines: the unit's kr0 channels were
 * written, the padding channels after them are clean and do not travel (isa.md "MCAST"); rows past the
 * weights region (a remainder's channel tile) lie in the records and pixels, which were. */
static uint64_t wblock_bytes(const struct pwg *g, const struct pwp *d, uint64_t c0, uint64_t n, uint64_t kr0, uint32_t t)
{
	uint64_t wr = g_wrow(g), tb = (uint64_t)g_cpt(g) * g->e, end = al64(kr0 * wr), b = 0;

	for (uint64_t r = c0; r < c0 + n; r++) {
		uint64_t lo = r * wr + t * tb;

		if (r < kr0 || lo >= d->b_off)
			b += tb;
		else if (lo < end)
			b += ACCEL_MIN(tb, end - lo);
	}
	return b;
}

/* The sub-tile counts of the main EXEs of every segment: one instruction buffer each. */
void pw_cfgs(const struct pwg *g, const struct pwp *d, bool cfg[TNPU_NUM_ACCS + 1])
{
	uint32_t lastT = 0;

	for (uint32_t s = 0; s < d->nseg; s++) {
		uint32_t T = main_T(d, seg_at(g, d, s).T);

		if (T == lastT)
			continue;	/* the same runs as the previous segment */
		lastT = T;
		for (uint32_t k = 0; k < T; k += exe_subs(g, d, T, k))
			cfg[exe_subs(g, d, T, k)] = true;
	}
}


/* CONFIG of an instruction buffer: compute-engine issue and the rows' parsing. */
void pw_sim_cfg(struct pw_eng *e, uint64_t len)
{
	e->fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(len, TNPU_RATE_DISPATCH);
	e->r = ACCEL_MAX(e->r, e->fc) + cdiv(len, TNPU_RATE_DISPATCH);
}

uint64_t pw_cfg_len(const struct pwg *g, uint32_t n, bool recs)
{
	uint32_t taps = g_taps(g);

	return 1 + 16 + 2 * (taps + n * (2 * taps + 1 + g->res)) + (recs ? 32 * (g->res ? 6 : g->sfu ? 4 : 3) : 0);
}

/* One EXE of plan d (the main mapping or the remainder's): sub-tiles k0..k0+n-1, channel tile ct; the
 * sub-tiles' ST times into stt[]. */
void pw_sim_exe(const struct pwg *g, const struct pwp *d, const struct pw_simseg *ss, struct pw_eng *e,
		uint32_t k0, uint32_t n, uint32_t ct, uint64_t p0, uint64_t *stt, const struct pw_extra *x)
{
	uint32_t taps = g_taps(g), cpt = g_cpt(g);
	uint64_t nb = (uint64_t)d->gch * d->tn, c0 = ct * nb, key = c0 | (uint64_t)d->tn << 24 | (uint64_t)d->gp << 48;
	uint64_t plen = 1 + 8 * (2 + g->res + (d->nct > 1 || taps > 1) + (d->nct > 1 && g->colb));
	struct pw_row r;

	memset(&r, 0, sizeof(r));
	if (x)
		plen += x->plen;
	e->fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(plen, TNPU_RATE_DISPATCH);
	r.t0 = ACCEL_MAX(e->r, e->fc);
	r.a.dist = plen;
	for (uint32_t t = 0; t < taps; t++) {
		uint64_t ready = pw_ready(ss->w, c0, c0 + nb);

		if (g->wide) {
			/* multicast block: only written lines travel, none if the slot holds it */
			pw_ld(&r, ready, ss->prev_b[t] == key ? 0 : wblock_bytes(g, d, c0, nb, ss->kr0, t), true);
			ss->prev_b[t] = key;
		} else {
			pw_ld(&r, ready, nb * cpt * g->e, false);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t t = 0; t < taps; t++) {
			uint64_t lo, hi;

			sub_reads(g, d, k0 + i, t, &lo, &hi);
			pw_ld(&r, pw_ready(ss->in, p0 + lo, p0 + hi), (uint64_t)d->gp * d->tm * cpt * g->e, false);
			if (g->res && t == taps - 1) {
				/* the residual tile's lines: the SFU reads them after this MAC */
				sub_pix(g, d, k0 + i, &lo, &hi);
				pw_ld(&r, pw_ready(ss->res, p0 + lo, p0 + hi),
				      (uint64_t)g->cols * g->pes * d->tm * d->tn * g->oe, g->wide);
			}
			r.a.issued++;
			r.a.mac += cdiv((uint64_t)d->tm * d->tn * cpt, g->rate);
		}
		if (g->sfu)
			r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_SFU);
		if (g->res)
			r.a.sfu += cdiv((uint64_t)d->tm * d->tn * 4 * g->pes, TNPU_RATE_ST);
		r.a.issued++;
		r.a.st += cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST);
		if (!g->sfu)
			r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_OQ);
		stt[k0 + i] = pw_time(&r);	/* the sub-tile's last ST so far */
	}
	if (x) {	/* another program's work after the sub-tiles (conv_pwdw.c: depthwise iterations) */
		if (x->ready > r.t0 + TNPU_CYC_EXE && r.n_wait < PW_WAITS) {
			r.ready[r.n_wait] = x->ready;
			r.pre[r.n_wait++] = r.a;
		}
		r.a.issued += x->issued;
		r.a.dist += x->dist;
		r.a.wide += x->wide;
		r.a.mac += x->mac;
		r.a.sfu += x->sfu;
		r.a.st += x->st;
	}
	e->r = pw_time(&r);
}

/* STREAM D2H rows [0, rows) of c cycles, row j's pixels up to (j+1)*q from p_lo, each waiting for the
 * last sub-tile (of plan d, ST times stt) whose span starts before its end; returns the store's end. */
static uint64_t pw_sim_d2h(const struct pwg *g, const struct pwp *d, const uint64_t *stt, uint32_t T, uint64_t s0,
			   uint64_t rows, uint64_t q, uint64_t c)
{
	uint64_t t = s0 + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
	uint32_t kb = 0;

	for (uint64_t row = 0; row < rows; row++) {
		uint64_t lo, hi;

		while (kb + 1 < T && (sub_pix(g, d, kb + 1, &lo, &hi), lo < (row + 1) * q))
			kb++;
		t = ACCEL_MAX(t, stt[kb]) + c;
	}
	return rows ? s0 + ACCEL_MAX(TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + rows * c, t - s0) : s0;
}

#define PW_STATE 9	/* the replay's times carried from one segment to the next */

/* Modeled job cycles of plan d (cycle-model.md applied to the stream pw_emit writes). */
double pw_sim(const struct pwg *g, const struct pwp *d)
{
	struct pw_eng e = { 0 };
	uint64_t tok_c[2] = { 0, 0 }, tok_s[2] = { 0, 0 }, stt[PW_MAX_SUB + 1], prev_b[PW_MAX_TAPS];
	struct pw_land wl[2];
	bool used[2] = { false, false }, fresh[2] = { true, true }, cfg[TNPU_NUM_ACCS + 1] = { false };
	struct pw_band bw = pw_band_w(g, d), bb = pw_band_b(g, d);
	struct pwp rp;
	bool first_cfg = true;
	uint32_t period = g->rowm ? (d->nsi % 2 ? 2 * d->nsi : d->nsi) : 2;
	uint64_t snap[2][PW_STATE];
	unsigned nsnap = 0;

	memset(wl, 0, sizeof(wl));
	for (unsigned t = 0; t < PW_MAX_TAPS; t++)
		prev_b[t] = UINT64_MAX;
	/* CONFIGs: one buffer per sub-tile count, the records with the first; the remainder's */
	pw_cfgs(g, d, cfg);
	for (unsigned n = TNPU_NUM_ACCS; n >= 1; n--) {
		if (cfg[n]) {
			pw_sim_cfg(&e, pw_cfg_len(g, n, first_cfg));
			first_cfg = false;
		}
	}
	if (d->rem) {
		rp = rem_plan(g, d);
		pw_sim_cfg(&e, pw_cfg_len(g, 1, true));
	}
	for (uint32_t s = 0; s < d->nseg; s++) {
		struct pw_seg sg;
		unsigned h, j;
		struct pw_band bi, brs;

		if (s >= 2 && (s - 2) % period == 0 && s + period <= d->nseg - 2) {
			/* Segments 2 .. nseg-3 repeat with the period (the halves alternate; in row mode an
			 * image's segments).  Once two consecutive periods advanced every time of the replay
			 * by the same amounts, later ones do too (max and + only: the times of the next
			 * period are those of this one plus the same amounts), so the regular periods left
			 * are added, not replayed (a batch of 1000 images: 2000+ segments per candidate). */
			uint64_t now[PW_STATE] = { e.fl, e.aux, e.fc, e.r, e.fs, tok_c[0], tok_c[1], tok_s[0], tok_s[1] };
			bool steady = nsnap == 2;

			for (unsigned i = 0; steady && i < PW_STATE; i++)
				steady = now[i] >= snap[1][i] && snap[1][i] >= snap[0][i] &&
					 now[i] - snap[1][i] == snap[1][i] - snap[0][i];
			if (steady) {
				uint64_t m = (d->nseg - 2 - s) / period, *x[PW_STATE] = {
					&e.fl, &e.aux, &e.fc, &e.r, &e.fs, &tok_c[0], &tok_c[1], &tok_s[0], &tok_s[1] };

				for (unsigned i = 0; i < PW_STATE; i++)
					*x[i] += m * (now[i] - snap[1][i]);
				s += (uint32_t)(m * period);
				nsnap = 0;
			} else {
				memcpy(snap[0], snap[1], sizeof(snap[1]));
				memcpy(snap[1], now, sizeof(now));
				nsnap = nsnap < 2 ? nsnap + 1 : 2;
			}
		}
		sg = seg_at(g, d, s);
		h = sg.h, j = sg.j;
		bi = pw_band_in(g, d, &sg), brs = pw_band_res(g, d, &sg);
		struct pw_land in = { .n = 0 }, rl = { .n = 0 };
		struct pw_simseg ss = { &in, &rl, &wl[h], ACCEL_MIN(d->kr, g->K), prev_b };
		uint32_t fl[4][3], nf, T = main_T(d, sg.T);
		uint64_t tok_f = 0, p0 = (uint64_t)T * d->gp * d->tm;

		if (s >= 2)
			e.fl = ACCEL_MAX(e.fl, tok_c[j]) + TNPU_CYC_CMD;
		nf = pw_pad_fills(g, d, &sg, fresh[j], fl);
		fresh[j] = false;
		for (unsigned i = 0; i < nf; i++)
			e.fl += TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (uint64_t)fl[i][2] * cdiv(fl[i][1], TNPU_RATE_DMA);
		if (nf) {
			tok_f = e.fl;
			e.fl += TNPU_CYC_CMD;
		}
		if (!used[h] && g->colb) {
			struct pw_land bl = { .n = 0 };	/* lands before the weights the LD B waits for */

			pw_sim_band(&e, true, &bb, 0, bb.ul ? bb.ul : bb.n, &bl);
			pw_sim_tail(&e, true, &bb, &bl);
		}
		if (!used[h])
			pw_sim_band(&e, true, &bw, 0, d->w0, &wl[h]);
		if (g->rowm) {
			uint64_t c = zrow((uint64_t)g->cin * g->C * g->e);

			in.p[in.n++] = (struct pw_piece){ 0, sg.br, 1, pw_h2d(&e, false, sg.br, c), c };
		} else {
			pw_sim_band(&e, false, &bi, 0, d->in0, &in);
		}
		if (g->res) {
			if (s >= 2)
				e.fl = ACCEL_MAX(e.fl, tok_s[j]) + TNPU_CYC_CMD;
			if (d->over_n) {
				uint64_t c = cdiv((uint64_t)d->kr * g->oe, TNPU_RATE_DMA_PORT), pe = d->rem ? p0 : sg.npix;

				rl.p[rl.n++] = (struct pw_piece){ 0, pe, 1, pw_h2d(&e, false, pe, c), c };
				if (d->rem)
					rl.p[rl.n++] = (struct pw_piece){ pe, sg.npix, 1, pw_h2d(&e, false, sg.npix - pe, c), c };
			} else {
				pw_sim_band(&e, false, &brs, 0, g->rowm ? sg.sg : d->res0, &rl);
				if (g->rowm)
					pw_sim_tail(&e, false, &brs, &rl);
			}
		}
		if (!used[h]) {
			pw_sim_band(&e, true, &bw, d->w0, d->kr, &wl[h]);
			pw_sim_tail(&e, true, &bw, &wl[h]);
			used[h] = true;
		}
		if (!g->rowm) {
			pw_sim_band(&e, false, &bi, d->in0, d->sg, &in);
			pw_sim_tail(&e, false, &bi, &in);
			if (g->res && !d->over_n) {
				pw_sim_band(&e, false, &brs, d->res0, d->sg, &rl);
				pw_sim_tail(&e, false, &brs, &rl);
			}
		}
		/* compute */
		if (s >= 2)
			e.fc = ACCEL_MAX(e.fc, tok_s[j]) + TNPU_CYC_CMD;
		if (nf)
			e.fc = ACCEL_MAX(e.fc, tok_f) + TNPU_CYC_CMD;
		for (uint32_t k0 = 0; k0 < T; k0 += exe_subs(g, d, T, k0))
			for (uint32_t ct = 0; ct < d->nct; ct++)
				pw_sim_exe(g, d, &ss, &e, k0, exe_subs(g, d, T, k0), ct, 0, stt, NULL);
		if (d->rem)
			pw_sim_exe(g, &rp, &ss, &e, 0, 1, 0, p0, stt + T, NULL);
		if (s + 2 < d->nseg) {
			tok_c[j] = ACCEL_MAX(e.fc, e.r);
			e.fc += TNPU_CYC_CMD;
		}
		/* store: each unit row leaves when every ST over its bytes is done (the STs' spans grow with
		 * the sub-tile index, and so do their times) */
		if (d->over_n) {
			uint64_t c = cdiv((uint64_t)d->kr * g->oe, TNPU_RATE_DMA_PORT);

			e.fs = pw_sim_d2h(g, d, stt, T, e.fs, d->rem ? p0 : sg.npix, 1, c);
			if (d->rem)
				e.fs = pw_sim_d2h(g, &rp, stt + T, 1, e.fs, sg.npix - p0, 1, c);
		} else {
			struct pw_band bo = pw_band_out(g, d, &sg);
			uint64_t q = d->qo, t0;

			e.fs = pw_sim_d2h(g, d, stt, T, e.fs, band_rows0(&bo, 0, sg.sg), q, zrow(q * g->K * g->oe));
			if (band_tail(&bo, &t0)) {
				uint64_t ct = zrow(sg.npix % q * g->K * g->oe), lo, hi;
				uint32_t kb = 0;

				while (kb + 1 < T && (sub_pix(g, d, kb + 1, &lo, &hi), lo < t0 + sg.npix % q))
					kb++;
				e.fs = ACCEL_MAX(e.fs + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP, stt[kb]) + ct;
			}
		}
		if (s + 2 < d->nseg) {
			tok_s[j] = e.fs;
			e.fs += TNPU_CYC_CMD;
		}
	}
	return (double)(ACCEL_MAX(ACCEL_MAX(ACCEL_MAX(e.fl, e.aux), ACCEL_MAX(e.fc, e.r)), e.fs) + TNPU_CYC_JOB);
}

/*
 * Every channel tile of plan d in one EXE (d->ctx; flat, one pixel sub-tile: conv_pwdw.c's row-wrap
 * remainder): the A tile loaded once, then per channel tile t its weights' LD (the scalar unit steps the
 * weight record by a tile), a MAC into accumulator t, an SFU APPLY with record 3 + t (its columns'
 * bias/requantisation records; the chained SFU has one record) and the ST (the scalar unit steps the
 * output record by a tile's channels).  One EXE's fixed cost instead of nct; the costs of the MACs, SFU
 * and STs are those of the nct EXEs.
 */
uint64_t pw_cfg_len_ct(const struct pwg *g, const struct pwp *d)
{
	return 1 + 16 + 2 * (1 + d->nct * (g->sfu ? 4 : 3)) + 32 * (3 + (g->sfu ? d->nct : 0));
}

/* Replay of pw_exe_emit_ct's EXE (pw_sim_exe's accounting, in the program's order). */
void pw_sim_exe_ct(const struct pwg *g, const struct pwp *d, const struct pw_simseg *ss, struct pw_eng *e, uint64_t p0)
{
	uint32_t cpt = g_cpt(g);
	uint64_t nb = (uint64_t)d->gch * d->tn, plen = 1 + 8 * 3, lo, hi;
	struct pw_row r;

	memset(&r, 0, sizeof(r));
	e->fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(plen, TNPU_RATE_DISPATCH);
	r.t0 = ACCEL_MAX(e->r, e->fc);
	r.a.dist = plen;
	for (uint32_t t = 0; t < d->nct; t++) {
		uint64_t c0 = t * nb, key = c0 | (uint64_t)d->tn << 24 | (uint64_t)d->gp << 48;
		uint64_t ready = pw_ready(ss->w, c0, c0 + nb);

		if (g->wide) {
			pw_ld(&r, ready, ss->prev_b[0] == key ? 0 : wblock_bytes(g, d, c0, nb, ss->kr0, 0), true);
			ss->prev_b[0] = key;
		} else {
			pw_ld(&r, ready, nb * cpt * g->e, false);
		}
		if (!t) {
			sub_reads(g, d, 0, 0, &lo, &hi);
			pw_ld(&r, pw_ready(ss->in, p0 + lo, p0 + hi), (uint64_t)d->gp * d->tm * cpt * g->e, false);
		}
		r.a.issued += 2 + g->sfu;
		r.a.mac += cdiv((uint64_t)d->tm * d->tn * cpt, g->rate);
		r.a.sfu += cdiv((uint64_t)d->tm * d->tn, g->sfu ? TNPU_RATE_SFU : TNPU_RATE_OQ);
		r.a.st += cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST);
	}
	e->r = pw_time(&r);
}
