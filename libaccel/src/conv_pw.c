/* SPDX-License-Identifier: MIT */
/*
 * conv_pw.c - pointwise convolution (1x1, stride 1, no padding, groups 1, packed NHWC input and
 * output) as one streamed GEMM (Documentation/libaccel.md "Pointwise convolution").
 *
 * Such a convolution is the GEMM Y[M x K] = X[M x C] . W^T on the contiguous pixel matrix (M = N*H*W
 * pixels of C channels), and its output is again one contiguous NHWC matrix.  The storage units take
 * runs of consecutive pixels (or, for few pixels and many channels, blocks of output channels): each
 * unit's share of X lands contiguously in its half through its own host port (DMA_BANDS_H2D, STREAM),
 * its share of Y leaves the same way (DMA_BANDS_D2H, STREAM: each row as soon as its ST wrote it), and
 * the weights and column records come first on the ports' AUX queue.  Every row runs the same
 * broadcast EXEs on its own SRAM, each EXE up to four sub-tiles (one accumulator each): LD A (a block
 * of gp*tm pixels: its LD waits in hardware for those pixels' lines), MAC with the chained SFU, ST.
 * Within a row the PEs split the sub-tile's pixels and channels (clusters and/or PEs on pixels), so no
 * PE idles when K is not a multiple of the PEs (24 output channels: 4 clusters x 6 channels, PEs on
 * pixels).  No semaphore is needed while everything fits a half; larger problems run in segments that
 * alternate halves with the write-after-read semaphores of the depthwise block.
 *
 * The planner replays the cycle model for each candidate (pw_sim, Documentation/hardware/cycle-model.md)
 * and conv_lower takes this lowering when its replay beats the direct and IM2COL estimates.
 */
#include <string.h>

#include "epilogue.h"

#define AS TNPU_CMD_F_ASYNC
enum { PS_CFREE = 0, PS_SFREE = 2 };
#define PW_MAX_ROWS_PER_BAND 256	/* DMA rows per unit and band: the STREAM scoreboard stays small */
#define PW_ROW_BYTES 2048		/* preferred bytes per DMA row (8 port cycles) */

struct pwg {
	uint32_t M, C, K, e, oe, rate, colb;	/* colb: bytes per column record (0: none) */
	uint32_t rows, cols, pes, acc, half;
	bool sfu;				/* chained SFU (else ST RAW) */
	uint64_t in_va, w_va, out_va, b_va;
};

struct pwp {
	bool over_n;		/* units take blocks of output channels (else runs of pixels) */
	bool cl_pix, pe_pix;	/* clusters / PEs take pixel blocks (else channel blocks) */
	uint32_t gp, gch;	/* PEs of a row along pixels and along channels (gp * gch = cols * pes) */
	uint32_t tm, tn;	/* one PE's tile: pixels x channels */
	uint32_t kr;		/* real output channels per unit (over_n: ceil(K/rows), else K) */
	uint32_t ku;		/* channels per unit in SRAM: nct * gch * tn >= kr (output pitch) */
	uint32_t nct;		/* channel tiles of gch * tn channels */
	uint32_t sg;		/* pixels per unit (over_n: per row, all units the same) and segment */
	uint32_t T;		/* pixel sub-tiles per segment: T * gp * tm >= sg */
	uint32_t spe;		/* sub-tiles per EXE (accumulators) */
	uint32_t qi, qo, qw;	/* pixels per input / output DMA row, weight channels per DMA row */
	uint32_t nseg;
	uint32_t in_off, out_off, w_off, b_off;
	double est;
};

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint32_t al64(uint64_t v)
{
	return (uint32_t)((v + 63) & ~63ull);
}

/* Port cycles of one DMA_BANDS Z row of `w` bytes. */
static uint64_t zrow(uint64_t w)
{
	return w > TNPU_RATE_DMA_PORT ? cdiv(w, TNPU_RATE_DMA_PORT) : 1;
}

/* Elements per DMA row for n elements of b bytes: a divisor of n near PW_ROW_BYTES, at most
 * PW_MAX_ROWS_PER_BAND rows (else the smallest divisor that keeps the row count). */
static uint32_t row_elems(uint32_t n, uint64_t b)
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

/* ---- the cycle-model replay (unit 0; every unit runs the same program on its own band) ---- */

struct pw_acct {
	uint64_t issued, dist, mac, sfu, st;
};

struct pw_row {
	uint64_t t0, n_wait;
	uint64_t ready[2 + TNPU_NUM_ACCS];
	struct pw_acct pre[2 + TNPU_NUM_ACCS], a;
};

static uint64_t pw_work(const struct pw_acct *a)
{
	uint64_t d = cdiv(a->dist, TNPU_RATE_DISPATCH);

	return a->issued + (d > a->mac ? d : a->mac) + a->sfu + a->st;
}

/* cluster.c exe_time: the run's own pace, and no earlier than each wait plus the work after it */
static uint64_t pw_time(const struct pw_row *r)
{
	uint64_t t = r->t0 + TNPU_CYC_EXE + pw_work(&r->a);

	for (unsigned i = 0; i < r->n_wait; i++) {
		struct pw_acct d = {
			r->a.issued - r->pre[i].issued, r->a.dist - r->pre[i].dist, r->a.mac - r->pre[i].mac,
			r->a.sfu - r->pre[i].sfu, r->a.st - r->pre[i].st,
		};

		t = ACCEL_MAX(t, r->ready[i] + pw_work(&d));
	}
	return t;
}

static void pw_ld(struct pw_row *r, uint64_t ready, uint64_t bytes)
{
	r->a.issued++;
	if (ready > r->t0 + TNPU_CYC_EXE) {
		r->ready[r->n_wait] = ready;
		r->pre[r->n_wait++] = r->a;
	}
	r->a.dist += bytes;
}

/* A STREAM band of unit rows landing (H2D) from its start: row j at s0 + CMD + SETUP + (j+1)*c. */
struct pw_land {
	uint64_t s0, c;
	uint64_t n;		/* rows of unit 0 */
	uint64_t tail_t;	/* landing of the tail row (0: none) */
	uint64_t tail_lo, tail_hi;	/* its elements */
	uint64_t q;		/* elements per row */
};

/* When elements [lo, hi) (unit SRAM order) have landed. */
static uint64_t pw_ready(const struct pw_land *l, uint64_t lo, uint64_t hi)
{
	uint64_t t = 0, last;

	if (hi <= lo)
		return 0;
	if (l->n && lo < l->n * l->q) {
		last = ACCEL_MIN(cdiv(hi, l->q), l->n) - 1;
		t = l->s0 + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (last + 1) * l->c;
	}
	if (l->tail_t && lo < l->tail_hi && l->tail_lo < hi)
		t = ACCEL_MAX(t, l->tail_t);
	return t;
}

struct pw_eng {
	uint64_t fl, aux, fc, r, fs;
};

/* One band command on the load engine (H2D, aux or not) or the store engine; returns its port cycles
 * (rows of the fullest unit times c). */
static void pw_h2d(struct pw_eng *e, bool aux, uint64_t rows, uint64_t c, uint64_t *start)
{
	uint64_t s0 = e->fl, s = aux ? ACCEL_MAX(s0, e->aux) : s0, xfer = rows * c;

	*start = s;
	if (aux) {
		e->aux = s + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + xfer;
		e->fl = s0 + TNPU_CYC_CMD + xfer;
	} else {
		e->fl = s + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + xfer;
	}
}

/* Band geometry of n elements split over units: unit 0's full rows, the fullest unit's rows, the tail. */
struct pw_split {
	uint64_t full;		/* full rows of the command */
	uint64_t n0, nmax;	/* full rows of unit 0 / of the fullest unit */
	bool tail;		/* a last row of fewer than q elements */
	uint64_t tail_lo;	/* its first element in the unit's SRAM order */
	uint64_t tail_n;
};

/* n elements in rows of q; unit u takes elements [u*ul, u*ul + ul) (ul 0: every unit all of them). */
static struct pw_split pw_split(uint64_t n, uint64_t q, uint64_t ul)
{
	struct pw_split s = { 0 };
	uint64_t full = n / q;

	s.full = full;
	s.n0 = ul ? ACCEL_MIN(full, ul / q) : full;
	s.nmax = s.n0;
	s.tail_n = n % q;
	s.tail = s.tail_n != 0;
	if (s.tail)
		s.tail_lo = ul ? (full - full / (ul / q) * (ul / q)) * q : full * q;
	return s;
}

/* Modeled job cycles of plan d (cycle-model.md applied to the stream conv_pw_emit writes). */
static double pw_sim(const struct pwg *g, const struct pwp *d)
{
	struct pw_eng e = { 0 };
	uint64_t tok_c[2] = { 0, 0 }, tok_s[2] = { 0, 0 }, stt[1024];
	struct pw_land wl[2];
	bool used[2] = { false, false };
	uint32_t ngrp = (uint32_t)cdiv(d->T, d->spe), per_unit = d->over_n ? 0 : d->sg;
	uint64_t cfg_len = 1 + 16 + 2 * (1 + 3 * d->spe) + 32 * (g->sfu ? 4 : 3);

	if (d->T > 1024)
		return 1e18;
	memset(wl, 0, sizeof(wl));
	/* CONFIGs (buffer 1, and buffer 2 for a shorter last EXE) */
	for (unsigned k = 0; k < (d->T % d->spe ? 2u : 1u); k++) {
		uint64_t len = k ? 1 + 16 + 2 * (1 + 3 * (d->T % d->spe)) : cfg_len;
		uint64_t is = TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(len, TNPU_RATE_DISPATCH);

		e.fc += is;
		e.r = ACCEL_MAX(e.r, e.fc) + cdiv(len, TNPU_RATE_DISPATCH);
	}
	for (uint32_t s = 0; s < d->nseg; s++) {
		unsigned h = d->nseg > 1 ? s & 1 : 0;
		uint64_t base = (uint64_t)s * (d->over_n ? d->sg : (uint64_t)g->rows * d->sg);
		uint64_t ns = ACCEL_MIN((uint64_t)g->M - base, d->over_n ? d->sg : (uint64_t)g->rows * d->sg);
		struct pw_land in = { 0 };
		struct pw_split sp = pw_split(ns, d->qi, per_unit);
		uint64_t st_b;

		if (s >= 2)
			e.fl = ACCEL_MAX(e.fl, tok_c[h]) + TNPU_CYC_CMD;
		if (!used[h]) {
			/* column records, then the weights, on the AUX queue */
			struct pw_split ws = pw_split(g->K, d->qw, d->over_n ? d->kr : 0);

			if (g->colb) {
				uint64_t q = d->over_n ? d->kr : g->K;
				struct pw_split bs = pw_split(g->K, q, d->over_n ? d->kr : 0);

				if (bs.full)
					pw_h2d(&e, true, bs.nmax, zrow(q * g->colb), &st_b);
				if (bs.tail)
					pw_h2d(&e, true, 1, zrow(bs.tail_n * g->colb), &st_b);
			}
			pw_h2d(&e, true, ws.nmax, zrow((uint64_t)d->qw * g->C * g->e), &wl[h].s0);
			wl[h].c = zrow((uint64_t)d->qw * g->C * g->e);
			wl[h].n = ws.n0;
			wl[h].q = d->qw;
			if (ws.tail) {
				uint64_t ts;

				pw_h2d(&e, true, 1, zrow(ws.tail_n * g->C * g->e), &ts);
				wl[h].tail_t = ts + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + zrow(ws.tail_n * g->C * g->e);
				wl[h].tail_lo = ws.tail_lo;
				wl[h].tail_hi = ws.tail_lo + ws.tail_n;
			}
			used[h] = true;
		}
		in.c = zrow((uint64_t)d->qi * g->C * g->e);
		in.q = d->qi;
		in.n = sp.n0;
		if (sp.full)
			pw_h2d(&e, false, sp.nmax, in.c, &in.s0);
		if (sp.tail) {
			uint64_t ts;

			pw_h2d(&e, false, 1, zrow(sp.tail_n * g->C * g->e), &ts);
			in.tail_t = ts + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + zrow(sp.tail_n * g->C * g->e);
			in.tail_lo = sp.tail_lo;
			in.tail_hi = sp.tail_lo + sp.tail_n;
		}
		/* compute */
		if (s >= 2)
			e.fc = ACCEL_MAX(e.fc, tok_s[h]) + TNPU_CYC_CMD;
		for (uint32_t gi = 0; gi < ngrp; gi++) {
			uint32_t i0 = gi * d->spe, n = ACCEL_MIN(d->spe, d->T - i0);

			for (uint32_t ct = 0; ct < d->nct; ct++) {
				uint64_t plen = 1 + 8 * (2 + (d->nct > 1 ? 1 + (g->colb ? 1 : 0) : 0));
				uint64_t is = TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(plen, TNPU_RATE_DISPATCH);
				struct pw_row r;
				uint64_t c0 = (uint64_t)ct * d->gch * d->tn;

				memset(&r, 0, sizeof(r));
				e.fc += is;
				r.t0 = ACCEL_MAX(e.r, e.fc);
				r.a.dist = plen;
				pw_ld(&r, pw_ready(&wl[h], c0, c0 + (uint64_t)d->gch * d->tn),
				      (uint64_t)d->gch * d->tn * g->C * g->e);
				for (uint32_t k = 0; k < n; k++) {
					uint64_t p0 = (uint64_t)(i0 + k) * d->gp * d->tm;

					pw_ld(&r, pw_ready(&in, p0, p0 + (uint64_t)d->gp * d->tm),
					      (uint64_t)d->gp * d->tm * g->C * g->e);
					r.a.issued++;
					r.a.mac += cdiv((uint64_t)d->tm * d->tn * g->C, g->rate);
					if (g->sfu)
						r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_SFU);
					r.a.issued++;
					r.a.st += cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST);
					if (!g->sfu)
						r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_OQ);
					stt[i0 + k] = pw_time(&r);
				}
				e.r = pw_time(&r);
			}
		}
		if (s + 2 < d->nseg) {
			tok_c[h] = ACCEL_MAX(e.fc, e.r);
			e.fc += TNPU_CYC_CMD;
		}
		/* store: each unit row leaves when the sub-tile that wrote it is done */
		{
			uint64_t q = d->over_n ? 1 : d->qo, c, t, s0 = e.fs, rows0;
			struct pw_split os = pw_split(ns, q, per_unit);

			c = d->over_n ? cdiv((uint64_t)d->kr * g->oe, TNPU_RATE_DMA_PORT) : zrow(q * g->K * g->oe);
			rows0 = os.n0;
			t = s0 + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
			for (uint64_t j = 0; j < rows0; j++) {
				uint64_t last = ((j + 1) * q - 1) / ((uint64_t)d->gp * d->tm);

				t = ACCEL_MAX(t, stt[last]) + c;
			}
			if (os.full)
				e.fs = s0 + ACCEL_MAX(TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + os.nmax * c, t - s0);
			if (os.tail) {
				uint64_t ct = zrow(os.tail_n * g->K * g->oe);
				uint64_t last = (os.tail_lo + os.tail_n - 1) / ((uint64_t)d->gp * d->tm);

				s0 = e.fs;
				t = ACCEL_MAX(s0 + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP, stt[last]) + ct;
				e.fs = t;
			}
		}
		if (s + 2 < d->nseg) {
			tok_s[h] = e.fs;
			e.fs += TNPU_CYC_CMD;
		}
	}
	return (double)(ACCEL_MAX(ACCEL_MAX(ACCEL_MAX(e.fl, e.aux), ACCEL_MAX(e.fc, e.r)), e.fs) + TNPU_CYC_JOB);
}

/* ---- planning ---- */

static bool pw_try(const struct pwg *g, bool over_n, unsigned map, uint32_t tn, uint32_t T, struct pwp *d)
{
	uint64_t wb, pix_b, cap, mu;

	memset(d, 0, sizeof(*d));
	d->over_n = over_n;
	d->cl_pix = map & 1;
	d->pe_pix = map & 2;
	d->gp = (d->cl_pix ? g->cols : 1) * (d->pe_pix ? g->pes : 1);
	d->gch = g->cols * g->pes / d->gp;
	d->tn = tn;
	d->kr = over_n ? (uint32_t)cdiv(g->K, g->rows) : g->K;
	d->nct = (uint32_t)cdiv(d->kr, (uint64_t)d->gch * tn);
	d->ku = d->nct * d->gch * tn;
	if (d->ku > 65535)
		return false;
	/* weights and column records of the unit's channels, then pixels: input + output per pixel */
	d->w_off = 0;
	d->b_off = al64((uint64_t)d->ku * g->C * g->e);
	wb = al64((uint64_t)d->b_off + (uint64_t)d->ku * (g->colb ? g->colb : 4));
	pix_b = (uint64_t)g->C * g->e + (uint64_t)d->ku * g->oe;
	if (wb + 128 + pix_b > g->half)
		return false;
	cap = (g->half - wb - 128) / pix_b;
	mu = over_n ? g->M : cdiv(g->M, g->rows);
	d->nseg = (uint32_t)cdiv(mu, cap);
	/* sub-tiles: T per segment, each gp * tm pixels */
	d->sg = (uint32_t)cdiv(mu, d->nseg);
	d->T = T;
	d->tm = (uint32_t)cdiv(d->sg, (uint64_t)d->gp * T);
	if (!d->tm || (uint64_t)d->tm * tn > g->acc || d->tm > 65535)
		return false;
	if ((uint64_t)(T - 1) * d->gp * d->tm >= d->sg)
		return false;	/* an empty last sub-tile: fewer sub-tiles do the same */
	if ((uint64_t)T * d->gp * d->tm * pix_b + wb + 128 > g->half)
		return false;	/* the sub-tiles' rounding does not fit: more segments would */
	d->spe = ACCEL_MIN(T, TNPU_NUM_ACCS);
	d->in_off = al64(wb);
	d->out_off = d->in_off + al64((uint64_t)T * d->gp * d->tm * g->C * g->e);
	if ((uint64_t)d->out_off + (uint64_t)T * d->gp * d->tm * d->ku * g->oe > g->half)
		return false;
	d->qi = row_elems(d->sg, (uint64_t)g->C * g->e);
	d->qo = row_elems(d->sg, (uint64_t)g->K * g->oe);
	if (!over_n && d->ku != g->K)
		d->qo = 1;	/* padded channels: one D2H row per pixel */
	d->qw = row_elems(d->kr, (uint64_t)g->C * g->e);
	if (d->sg / d->qi > PW_MAX_ROWS_PER_BAND || d->sg / d->qo > 4 * PW_MAX_ROWS_PER_BAND)
		return false;
	d->est = pw_sim(g, d);
	return true;
}

static bool pw_plan(const struct pwg *g, struct pwp *best)
{
	bool found = false;

	for (unsigned over_n = 0; over_n < (g->rows > 1 ? 2u : 1u); over_n++) {
		uint32_t kr = over_n ? (uint32_t)cdiv(g->K, g->rows) : g->K;
		uint64_t mu = over_n ? g->M : cdiv(g->M, g->rows);

		if (over_n && (uint64_t)(g->rows - 1) * kr >= g->K)
			continue;	/* a unit without channels */
		for (unsigned map = 0; map < 4; map++) {
			uint32_t gp = (map & 1 ? g->cols : 1) * (map & 2 ? g->pes : 1);
			uint32_t gch = g->cols * g->pes / gp;

			for (uint32_t tn = 1; tn <= ACCEL_MIN(g->acc, (uint32_t)cdiv(kr, gch)); tn++) {
				uint32_t nct = (uint32_t)cdiv(kr, (uint64_t)gch * tn), tmax = g->acc / tn, t0;

				/* at most 1/8 of the MACs on padding channels, and no smaller tn with the same nct */
				if ((uint64_t)nct * gch * tn * 8 > (uint64_t)kr * 9 ||
				    (tn > 1 && cdiv(kr, (uint64_t)gch * (tn - 1)) == nct))
					continue;
				t0 = (uint32_t)ACCEL_MAX(1, cdiv(mu, (uint64_t)gp * tmax));
				for (uint32_t T = t0; T <= t0 + 24; T++) {
					struct pwp d;

					if (T > 1024)
						break;
					if (!pw_try(g, over_n, map, tn, T, &d))
						continue;
					if (!found || d.est < best->est) {
						*best = d;
						found = true;
					}
				}
			}
		}
	}
	return found;
}

/* ---- emitting ---- */

/*
 * n elements of esz bytes, contiguous at va, in DMA rows of q elements (one row per plane, axis Z):
 * unit u takes elements [u*ul, u*ul + ul) at off + (element - u*ul) * esz (ul a multiple of q; ul 0:
 * every unit all of them).  A last row of fewer than q elements is its own command (the host tensor
 * ends there).
 */
static void pw_zbands(struct accel_cmdstream *cs, bool h2d, uint64_t va, uint64_t esz, uint64_t n, uint64_t q,
		      uint64_t ul, unsigned half, uint32_t off, uint8_t flags)
{
	uint64_t full = n / q, rem = n % q, L = ul / q;
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(b) },
		.host_va = va, .host_pitch_z = q * esz, .sram_off = off, .sram_pitch_z = (uint32_t)(q * esz),
		.width = (uint32_t)(q * esz), .height = 1, .depth = (uint32_t)full, .band_step = (uint32_t)L,
		.band_len = (uint32_t)(ul ? L : full), .half = (uint8_t)half, .axis = (uint8_t)(TNPU_BANDS_AXIS_Z | flags),
	};

	if (full)
		cs_raw(cs, &b, sizeof(b));
	if (rem) {
		uint64_t u = ul ? full / L : 0;

		b.host_va = va + full * q * esz;
		b.width = (uint32_t)(rem * esz);
		b.depth = 1;
		b.sram_pitch_z = 0;
		b.band_first = ul ? -(int32_t)(u * L) : 0;
		b.band_len = ul ? (uint32_t)L : 1;
		b.sram_off = off + (uint32_t)((ul ? full - u * L : full) * q * esz);
		cs_raw(cs, &b, sizeof(b));
	}
}

static void pw_config(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
		      unsigned buf, uint32_t n, bool recs)
{
	uint32_t e = g->e, oe = g->oe, C = g->C, P = g->pes, blk_in = d->tm * C * e, blk_out = d->tm * d->ku * oe;
	uint8_t dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	struct tnpu_operand ops[3];
	struct tnpu_sfu_param sfu = p->sfu;
	struct tnpu_cfg_hdr h;
	uint16_t ins[1 + 3 * TNPU_NUM_ACCS];
	uint8_t pkt[1 + 16 + sizeof(ins) + 4 * 32];
	uint32_t len = 0, ni = 0;
	/* pixel-block and channel-block strides of a cluster and of a PE */
	int64_t pc = d->cl_pix ? (d->pe_pix ? P : 1) : 0, pp = d->pe_pix ? 1 : 0;
	int64_t cc = d->cl_pix ? 0 : (d->pe_pix ? 1 : P), cp = d->pe_pix ? 0 : 1;

	memset(ops, 0, sizeof(ops));
	ops[0] = (struct tnpu_operand){ .addr = d->in_off, .col_stride = (int32_t)(pc * blk_in),
					.pe_stride = (int32_t)(pp * blk_in), .pitch = C * e, .rows = (uint16_t)d->tm,
					.cols = (uint16_t)C, .dtype = dt, .su_delta = (int32_t)(d->gp * blk_in) };
	ops[1] = (struct tnpu_operand){ .addr = d->w_off, .col_stride = (int32_t)(cc * d->tn * C * e),
					.pe_stride = (int32_t)(cp * d->tn * C * e), .pitch = C * e,
					.rows = (uint16_t)d->tn, .cols = (uint16_t)C, .dtype = dt, .flags = TNPU_OPF_TRANS };
	ops[2] = (struct tnpu_operand){ .addr = d->out_off, .col_stride = (int32_t)(pc * blk_out + cc * d->tn * oe),
					.pe_stride = (int32_t)(pp * blk_out + cp * d->tn * oe), .pitch = d->ku * oe,
					.rows = (uint16_t)d->tm, .cols = (uint16_t)d->tn, .dtype = p->out_dtype,
					.su_delta = (int32_t)(d->gp * blk_out) };
	sfu.bias_addr = d->b_off;
	sfu.bias_col_stride = (int32_t)(cc * d->tn * (g->colb ? g->colb : 4));
	sfu.bias_pe_stride = (int32_t)(cp * d->tn * (g->colb ? g->colb : 4));
	ins[ni++] = TNPU_INSN_LD(1, 0, 1, 0);
	for (uint32_t k = 0; k < n; k++) {
		ins[ni++] = TNPU_INSN_LD(0, 0, 0, 0);
		ins[ni++] = TNPU_INSN_MAC(0, 0, k, 0, g->sfu);
		ins[ni++] = TNPU_INSN_ST(k, 2, !g->sfu);
	}
	memset(&h, 0, sizeof(h));
	h.n_instr = (uint8_t)ni;
	h.n_operands = recs ? (uint8_t)(g->sfu ? 4 : 3) : 0;
	/* RQ: the weight slot stays valid for the run's sub-tiles (one LD of the channel tile) */
	h.mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ);
	h.loop_end = (uint8_t)(ni - 1);
	h.repeat = 1;
	h.sfu_rf = 3;
	pkt[len++] = TNPU_PKT_CONFIG_BYTE(buf);
	memcpy(pkt + len, &h, 16);
	len += 16;
	memcpy(pkt + len, ins, 2 * ni);
	len += 2 * ni;
	if (recs) {
		memcpy(pkt + len, ops, sizeof(ops));
		len += sizeof(ops);
		if (g->sfu) {
			memcpy(pkt + len, &sfu, 32);
			len += 32;
		}
	}
	cs_dispatch(cs, AS, TNPU_DISPATCH_ROW_ALL, 0, 0, pkt, len);
}

static void pw_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p)
{
	uint32_t ngrp = (uint32_t)cdiv(d->T, d->spe), rem = d->T % d->spe;
	uint64_t per_unit = d->over_n ? 0 : d->sg;
	bool used[2] = { false, false };
	uint8_t sf = TNPU_BANDS_F_STREAM;

	pw_config(cs, g, d, p, 1, d->spe, true);
	if (rem)
		pw_config(cs, g, d, p, 2, rem, false);
	for (uint32_t s = 0; s < d->nseg; s++) {
		unsigned h = d->nseg > 1 ? s & 1 : 0;
		uint64_t base = (uint64_t)s * (d->over_n ? d->sg : (uint64_t)g->rows * d->sg);
		uint64_t ns = ACCEL_MIN((uint64_t)g->M - base, d->over_n ? d->sg : (uint64_t)g->rows * d->sg);

		/* load engine: the half's column records and weights (first use), then the pixels */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, PS_CFREE + h, 1);
		if (!used[h]) {
			/* the records first: they land before the weights, whose lines the weight-slot LD
			 * waits for, so the chained SFU never reads records still in flight */
			if (g->colb)
				pw_zbands(cs, true, g->b_va, g->colb, g->K, d->over_n ? d->kr : g->K,
					  d->over_n ? d->kr : 0, h, d->b_off, TNPU_BANDS_F_AUX | sf);
			pw_zbands(cs, true, g->w_va, (uint64_t)g->C * g->e, g->K, d->qw, d->over_n ? d->kr : 0, h, d->w_off,
				  TNPU_BANDS_F_AUX | sf);
			used[h] = true;
		}
		pw_zbands(cs, true, g->in_va + base * g->C * g->e, (uint64_t)g->C * g->e, ns, d->qi, per_unit, h,
			  d->in_off, sf);
		/* compute engine: one EXE per sub-tile group and channel tile, every row on its own band */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, PS_SFREE + h, 1);
		for (uint32_t gi = 0; gi < ngrp; gi++) {
			uint32_t i0 = gi * d->spe;
			bool short_run = rem && gi == ngrp - 1;

			for (uint32_t ct = 0; ct < d->nct; ct++) {
				struct tnpu_exe_patch pt[4];
				uint8_t pkt[1 + sizeof(pt)];
				unsigned np = 0;
				uint32_t c0 = ct * d->gch * d->tn;

				pt[np++] = (struct tnpu_exe_patch){ .rf = 0, .field = TNPU_PATCH_ADDR,
					.value = d->in_off + i0 * d->gp * d->tm * g->C * g->e };
				pt[np++] = (struct tnpu_exe_patch){ .rf = 2, .field = TNPU_PATCH_ADDR,
					.value = d->out_off + i0 * d->gp * d->tm * d->ku * g->oe + c0 * g->oe };
				if (d->nct > 1) {
					pt[np++] = (struct tnpu_exe_patch){ .rf = 1, .field = TNPU_PATCH_ADDR,
									    .value = d->w_off + c0 * g->C * g->e };
					if (g->colb)
						pt[np++] = (struct tnpu_exe_patch){ .rf = 3, .field = TNPU_PATCH_ADDR,
										    .value = d->b_off + c0 * g->colb };
				}
				pkt[0] = TNPU_PKT_EXE_BYTE(short_run ? 2 : 1, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
				memcpy(pkt + 1, pt, 8 * np);
				cs_dispatch(cs, AS, TNPU_DISPATCH_ROW_ALL, h, 0, pkt, 1 + 8 * np);
			}
		}
		if (s + 2 < d->nseg)
			cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, PS_CFREE + h, 1);
		/* store engine: each unit's rows leave as their STs write them */
		if (d->over_n) {
			struct tnpu_cmd_dma_bands b = {
				.hdr = { .opcode = TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(b) },
				.host_va = g->out_va + base * g->K * g->oe, .host_pitch_z = (uint64_t)g->K * g->oe,
				.sram_off = d->out_off, .sram_pitch_z = d->ku * g->oe, .width = g->K * g->oe, .height = 1,
				.depth = (uint32_t)ns, .band_step = d->kr * g->oe, .band_len = d->kr * g->oe,
				.half = (uint8_t)h, .axis = TNPU_BANDS_AXIS_X | sf,
			};

			cs_raw(cs, &b, sizeof(b));
		} else if (d->ku != g->K) {
			/* padded channels: one row per pixel, the SRAM rows ku channels apart */
			struct tnpu_cmd_dma_bands b = {
				.hdr = { .opcode = TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(b) },
				.host_va = g->out_va + base * g->K * g->oe, .host_pitch_z = (uint64_t)g->K * g->oe,
				.sram_off = d->out_off, .sram_pitch_z = d->ku * g->oe, .width = g->K * g->oe, .height = 1,
				.depth = (uint32_t)ns, .band_step = d->sg, .band_len = d->sg, .half = (uint8_t)h,
				.axis = TNPU_BANDS_AXIS_Z | sf,
			};

			cs_raw(cs, &b, sizeof(b));
		} else {
			pw_zbands(cs, false, g->out_va + base * g->K * g->oe, (uint64_t)g->K * g->oe, ns, d->qo, per_unit, h,
				  d->out_off, sf);
		}
		if (s + 2 < d->nseg)
			cs_sem(cs, true, AS, TNPU_ENGINE_STORE, PS_SFREE + h, 1);
	}
}

/* Returns 1 if the convolution is not eligible or another lowering is faster, 0 or -errno. */
int conv_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p)
{
	const struct accel_tensor *in = cd->input, *wt = cd->weights, *out = cd->output;
	const struct accel_caps *c = x->caps;
	struct pwg g;
	struct pwp d;
	uint32_t N = in->shape[0], H = in->shape[2], W = in->shape[3];

	if (dev->pw_mode == 1 || !(c->features & TNPU_FEAT_DEPTHWISE) || !(c->features & TNPU_FEAT_STREAM))
		return 1;
	if (in->layout != ACCEL_LAYOUT_NHWC || out->layout != ACCEL_LAYOUT_NHWC || cd->groups != 1 ||
	    wt->shape[2] != 1 || wt->shape[3] != 1 || cd->stride_h != 1 || cd->stride_w != 1 || cd->pad_top ||
	    cd->pad_left || cd->pad_bottom || cd->pad_right)
		return 1;
	memset(&g, 0, sizeof(g));
	g.C = in->shape[1];
	g.K = wt->shape[0];
	g.e = p->f32 ? 4 : 1;
	g.oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	/* packed tensors: the pixels of the whole batch are one matrix, and so are the outputs */
	if (in->strides[1] != (int64_t)g.e || in->strides[3] != (int64_t)g.C * g.e ||
	    in->strides[2] != (int64_t)W * g.C * g.e || in->strides[0] != (int64_t)H * W * g.C * g.e ||
	    out->strides[1] != (int64_t)g.oe || out->strides[3] != (int64_t)g.K * g.oe ||
	    out->strides[2] != (int64_t)W * g.K * g.oe || out->strides[0] != (int64_t)H * W * g.K * g.oe ||
	    wt->strides[0] != (int64_t)g.C * g.e)
		return 1;
	if ((uint64_t)N * H * W > 0xFFFFFFFFull || g.C > 65535 || g.K > 65535)
		return 1;
	g.M = N * H * W;
	g.rate = p->f32 ? c->rate_fp32 : c->rate_int8;
	g.colb = mm_has_cols(p) ? mm_col_bytes(p) : 0;
	g.sfu = p->use_sfu;
	g.rows = c->rows;
	g.cols = c->cols;
	g.pes = c->pes;
	g.acc = ACCEL_MIN(c->acc_elems, TNPU_ACC_ELEMS);
	g.half = c->sram_bytes / 2;
	if (!pw_plan(&g, &d))
		return 1;
	/* one hardware job: CONFIGs, then per segment its bands, semaphores and EXEs (16-byte header and
	 * up to 33 packet bytes each) */
	if (2 * 256 + (uint64_t)d.nseg * (8 * 72 + 4 * 16 + cdiv(d.T, d.spe) * d.nct * 56) > x->cut_bytes)
		return 1;
	if (dev->pw_mode != 2) {
		/* the direct or IM2COL plan conv_direct_lower would run instead */
		double other = conv_direct_est(c, cd, p);

		if (other > 0 && d.est > other)
			return 1;
	}
	g.in_va = in->buf->va + in->offset;
	g.w_va = wt->buf->va + wt->offset;
	g.out_va = out->buf->va + out->offset;
	g.b_va = p->bias_va;
	if (cs_segment_len(x->cs))
		cs_cut(x->cs);
	x->prob_seq++;
	pw_emit(x->cs, &g, &d, p);
	if (x->cs->err)
		return accel_seterr(dev, x->cs->err, "out of memory while building the command stream");
	return 0;
}
