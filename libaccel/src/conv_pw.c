/* SPDX-License-Identifier: MIT */
/*
 * conv_pw.c - pointwise convolution (1x1, stride 1, no padding, groups 1, packed NHWC input and
 * output) and GEMMs with a row-major A and an N x K B as one streamed GEMM (Documentation/libaccel.md
 * "Pointwise convolution").
 *
 * Such a convolution is the GEMM Y[M x K] = X[M x C] . W^T on the contiguous pixel matrix (M = N*H*W
 * pixels of C channels), and its output is again one contiguous NHWC matrix.  The storage units take
 * runs of consecutive pixels (or, for few pixels and many channels, blocks of output channels): each
 * unit's share of X lands contiguously in its half through its own host port (DMA_BANDS_H2D, STREAM),
 * its share of Y leaves the same way (DMA_BANDS_D2H, STREAM: each row as soon as its ST wrote it), and
 * the weights and column records come on the ports' AUX queue.  The first EXE's weights and pixels are
 * sent first, the rest after them, so the first EXE starts as soon as its own data has landed.  Every
 * row runs the same broadcast EXEs on its own SRAM, each EXE up to four sub-tiles (one accumulator
 * each): LD B (the channel tile's weights, once per EXE), then per sub-tile LD A (a block of gp*tm
 * pixels: its LD waits in hardware for those pixels' rows), MAC with the chained SFU, ST.  Within a row
 * the PEs split the sub-tile's pixels and channels (clusters and/or PEs on pixels), so no PE idles when
 * K is not a multiple of the PEs (24 output channels: 4 clusters x 6 channels, PEs on pixels).  No
 * semaphore is needed while everything fits a half; larger problems run in segments that alternate
 * halves with the write-after-read semaphores of the depthwise block.
 *
 * The planner replays the cycle model for each candidate (pw_sim, Documentation/hardware/cycle-model.md)
 * and the caller takes this lowering when its replay beats the other lowerings' estimates.
 */
#include <string.h>

#include "epilogue.h"

#define AS TNPU_CMD_F_ASYNC
enum { PS_CFREE = 0, PS_SFREE = 2 };
#define PW_MAX_ROWS_PER_BAND 256	/* DMA rows per unit and band: the STREAM scoreboard stays small */
#define PW_ROW_BYTES 2048		/* preferred bytes per DMA row (8 port cycles) */
#define PW_MAX_SUB 1024			/* sub-tiles per segment */

struct pwg {
	uint32_t M, C, K, e, oe, rate, colb;	/* colb: bytes per column record (0: none) */
	uint32_t rows, cols, pes, acc, half;
	bool sfu;				/* chained SFU (else ST RAW) */
	bool wide;				/* weight LDs as WIDE multicast blocks (CAP_FEATURES bit 17) */
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
	uint32_t in0, w0;	/* pixels / channels per unit in the first input / weight band */
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

/* Port cycles of one DMA_BANDS axis-Z row of `w` bytes. */
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

/* ---- bands: one tensor split over the units (axis Z, one DMA row per plane) ---- */

/*
 * n elements of esz host bytes, contiguous from va, in DMA rows of q elements; unit u takes elements
 * [u*ul, u*ul + ul) (ul a multiple of q; 0: every unit all of them) at off + (element - u*ul) * sesz.
 * sesz != esz (an SRAM pitch wider than the element) only with q == 1.  A last row of fewer than q
 * elements (the host tensor ends there) is a command of its own, the tail.
 */
struct pw_band {
	uint64_t va, esz, sesz, n, q, ul;
	uint32_t off;
};

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

static void band_emit(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, uint64_t e0, uint64_t e1,
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

static void band_emit_tail(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, unsigned half, uint8_t flags)
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

/* ---- the cycle-model replay (unit 0; every unit runs the same program on its own band) ---- */

struct pw_acct {
	uint64_t issued, dist, wide, mac, sfu, st;
};

struct pw_row {
	uint64_t t0, n_wait;
	uint64_t ready[2 + TNPU_NUM_ACCS];
	struct pw_acct pre[2 + TNPU_NUM_ACCS], a;
};

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
	if (ready > r->t0 + TNPU_CYC_EXE) {
		r->ready[r->n_wait] = ready;
		r->pre[r->n_wait++] = r->a;
	}
	r->a.dist += bytes;
	if (wide)
		r->a.wide += bytes;
}

/* Unit-0 elements [e0, e1) landing in rows of q from the command start t: row j at t + CMD + SETUP +
 * (j+1)*c.  A tensor lands in up to two bands and a tail. */
struct pw_piece {
	uint64_t e0, e1, q, t, c;
};

struct pw_land {
	struct pw_piece p[3];
	unsigned n;
};

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

struct pw_eng {
	uint64_t fl, aux, fc, r, fs;
};

/* A band command of `rows` rows of c port cycles on the load engine (AUX queue or not); returns its
 * start (commands.md "AUX queue", cycle-model.md "DMA_BANDS"). */
static uint64_t pw_h2d(struct pw_eng *e, bool aux, uint64_t rows, uint64_t c)
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

/* Replay band_emit (unit elements [e0, e1)) and record its landing in l. */
static void pw_sim_band(struct pw_eng *e, bool aux, const struct pw_band *b, uint64_t e0, uint64_t e1,
			struct pw_land *l)
{
	uint64_t rows = band_rows0(b, e0, e1), c = zrow(b->q * b->esz);

	if (!rows)
		return;
	l->p[l->n++] = (struct pw_piece){ e0, e0 + rows * b->q, b->q, pw_h2d(e, aux, rows, c), c };
}

static void pw_sim_tail(struct pw_eng *e, bool aux, const struct pw_band *b, struct pw_land *l)
{
	uint64_t t0, rem = b->n % b->q;

	if (band_tail(b, &t0))
		l->p[l->n++] = (struct pw_piece){ t0, t0 + rem, rem, pw_h2d(e, aux, 1, zrow(rem * b->esz)), zrow(rem * b->esz) };
}

/* The bands of segment s (host pixels from base, ns of them) and of the weights and column records. */
static struct pw_band band_in(const struct pwg *g, const struct pwp *d, uint64_t base, uint64_t ns)
{
	return (struct pw_band){ g->in_va + base * g->C * g->e, (uint64_t)g->C * g->e, (uint64_t)g->C * g->e, ns, d->qi,
				 d->over_n ? 0 : d->sg, d->in_off };
}

static struct pw_band band_w(const struct pwg *g, const struct pwp *d)
{
	return (struct pw_band){ g->w_va, (uint64_t)g->C * g->e, (uint64_t)g->C * g->e, g->K, d->qw,
				 d->over_n ? d->kr : 0, d->w_off };
}

static struct pw_band band_b(const struct pwg *g, const struct pwp *d)
{
	return (struct pw_band){ g->b_va, g->colb, g->colb, g->K, d->over_n ? d->kr : g->K, d->over_n ? d->kr : 0,
				 d->b_off };
}

/* Output rows over pixel runs: qo pixels per row (packed channels) or one pixel per row (ku > K). */
static struct pw_band band_out(const struct pwg *g, const struct pwp *d, uint64_t base, uint64_t ns)
{
	return (struct pw_band){ g->out_va + base * g->K * g->oe, (uint64_t)g->K * g->oe, (uint64_t)d->ku * g->oe, ns,
				 d->qo, d->sg, d->out_off };
}

/* Modeled job cycles of plan d (cycle-model.md applied to the stream pw_emit writes). */
static double pw_sim(const struct pwg *g, const struct pwp *d)
{
	struct pw_eng e = { 0 };
	uint64_t tok_c[2] = { 0, 0 }, tok_s[2] = { 0, 0 }, stt[PW_MAX_SUB], prev_b = UINT64_MAX;
	struct pw_land wl[2];
	bool used[2] = { false, false };
	uint32_t ngrp = (uint32_t)cdiv(d->T, d->spe), rem = d->T % d->spe;
	uint64_t kr0 = ACCEL_MIN(d->kr, g->K), wlines = al64(kr0 * g->C * g->e);
	struct pw_band bw = band_w(g, d), bb = band_b(g, d);

	memset(wl, 0, sizeof(wl));
	/* CONFIGs (buffer 1, and buffer 2 for a shorter last pixel group) */
	for (unsigned k = 0; k < (rem ? 2u : 1u); k++) {
		uint64_t len = 1 + 16 + 2 * (1 + 3 * (k ? rem : d->spe)) + (k ? 0 : 32 * (g->sfu ? 4 : 3));

		e.fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(len, TNPU_RATE_DISPATCH);
		e.r = ACCEL_MAX(e.r, e.fc) + cdiv(len, TNPU_RATE_DISPATCH);
	}
	for (uint32_t s = 0; s < d->nseg; s++) {
		unsigned h = d->nseg > 1 ? s & 1 : 0;
		uint64_t per = d->over_n ? d->sg : (uint64_t)g->rows * d->sg, base = (uint64_t)s * per;
		uint64_t ns = ACCEL_MIN((uint64_t)g->M - base, per);
		struct pw_band bi = band_in(g, d, base, ns);
		struct pw_land in = { .n = 0 };

		if (s >= 2)
			e.fl = ACCEL_MAX(e.fl, tok_c[h]) + TNPU_CYC_CMD;
		if (!used[h] && g->colb) {
			struct pw_land bl = { .n = 0 };	/* lands before the weights the LD B waits for */

			pw_sim_band(&e, true, &bb, 0, bb.ul ? bb.ul : bb.n, &bl);
			pw_sim_tail(&e, true, &bb, &bl);
		}
		if (!used[h])
			pw_sim_band(&e, true, &bw, 0, d->w0, &wl[h]);
		pw_sim_band(&e, false, &bi, 0, d->in0, &in);
		if (!used[h]) {
			pw_sim_band(&e, true, &bw, d->w0, d->kr, &wl[h]);
			pw_sim_tail(&e, true, &bw, &wl[h]);
			used[h] = true;
		}
		pw_sim_band(&e, false, &bi, d->in0, d->sg, &in);
		pw_sim_tail(&e, false, &bi, &in);
		/* compute */
		if (s >= 2)
			e.fc = ACCEL_MAX(e.fc, tok_s[h]) + TNPU_CYC_CMD;
		for (uint32_t k = 0; k < ngrp * d->nct; k++) {
			uint32_t gi, ct, i0, n;
			uint64_t plen = 1 + 8 * (2 + (d->nct > 1 ? 1 + (g->colb ? 1 : 0) : 0)), c0;
			struct pw_row r;

			gi = k / d->nct;
			ct = k % d->nct;
			i0 = gi * d->spe;
			n = ACCEL_MIN(d->spe, d->T - i0);
			c0 = (uint64_t)ct * d->gch * d->tn;
			memset(&r, 0, sizeof(r));
			e.fc += TNPU_CYC_CMD + TNPU_CYC_DISPATCH + cdiv(plen, TNPU_RATE_DISPATCH);
			r.t0 = ACCEL_MAX(e.r, e.fc);
			r.a.dist = plen;
			if (g->wide) {
				/* multicast block: only written lines travel, none if the slot holds the tile */
				uint64_t lo = c0 * g->C * g->e, hi = ACCEL_MIN((c0 + (uint64_t)d->gch * d->tn) * g->C * g->e, wlines);

				pw_ld(&r, pw_ready(&wl[h], c0, c0 + (uint64_t)d->gch * d->tn),
				      prev_b == c0 || hi <= lo ? 0 : hi - lo, true);
				prev_b = c0;
			} else {
				pw_ld(&r, pw_ready(&wl[h], c0, c0 + (uint64_t)d->gch * d->tn),
				      (uint64_t)d->gch * d->tn * g->C * g->e, false);
			}
			for (uint32_t j = 0; j < n; j++) {
				uint64_t p0 = (uint64_t)(i0 + j) * d->gp * d->tm;

				pw_ld(&r, pw_ready(&in, p0, p0 + (uint64_t)d->gp * d->tm), (uint64_t)d->gp * d->tm * g->C * g->e,
				      false);
				r.a.issued++;
				r.a.mac += cdiv((uint64_t)d->tm * d->tn * g->C, g->rate);
				if (g->sfu)
					r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_SFU);
				r.a.issued++;
				r.a.st += cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST);
				if (!g->sfu)
					r.a.sfu += cdiv((uint64_t)d->tm * d->tn, TNPU_RATE_OQ);
				stt[i0 + j] = pw_time(&r);	/* the sub-tile's last ST so far */
			}
			e.r = pw_time(&r);
		}
		if (s + 2 < d->nseg) {
			tok_c[h] = ACCEL_MAX(e.fc, e.r);
			e.fc += TNPU_CYC_CMD;
		}
		/* store: each unit row leaves when the sub-tile that wrote it is done */
		{
			uint64_t t, s0 = e.fs, q = d->over_n ? 1 : d->qo, rows0, c, t0;
			struct pw_band bo = band_out(g, d, base, ns);

			if (d->over_n) {
				rows0 = ns;
				c = cdiv((uint64_t)d->kr * g->oe, TNPU_RATE_DMA_PORT);
			} else {
				rows0 = band_rows0(&bo, 0, d->sg);
				c = zrow(q * g->K * g->oe);
			}
			t = s0 + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
			for (uint64_t j = 0; j < rows0; j++)
				t = ACCEL_MAX(t, stt[((j + 1) * q - 1) / ((uint64_t)d->gp * d->tm)]) + c;
			if (rows0)
				e.fs = s0 + ACCEL_MAX(TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + rows0 * c, t - s0);
			if (!d->over_n && band_tail(&bo, &t0)) {
				uint64_t ct = zrow(ns % q * g->K * g->oe);

				t = ACCEL_MAX(e.fs + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP,
					      stt[(t0 + ns % q - 1) / ((uint64_t)d->gp * d->tm)]) + ct;
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
	uint64_t wb, pix_b, cap, mu, sub;

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
	/* the half: weights and column records of the unit's channels, then input and output pixels */
	d->w_off = 0;
	d->b_off = al64((uint64_t)d->ku * g->C * g->e);
	wb = al64((uint64_t)d->b_off + (uint64_t)d->ku * (g->colb ? g->colb : 4));
	pix_b = (uint64_t)g->C * g->e + (uint64_t)d->ku * g->oe;
	if (wb + 128 + pix_b > g->half)
		return false;
	cap = (g->half - wb - 128) / pix_b;
	mu = over_n ? g->M : cdiv(g->M, g->rows);
	d->nseg = (uint32_t)cdiv(mu, cap);
	d->sg = (uint32_t)cdiv(mu, d->nseg);
	d->T = T;
	d->tm = (uint32_t)cdiv(d->sg, (uint64_t)d->gp * T);
	if (!d->tm || (uint64_t)d->tm * tn > g->acc || d->tm > 65535 || T > PW_MAX_SUB)
		return false;
	sub = (uint64_t)d->gp * d->tm;
	if ((uint64_t)(T - 1) * sub >= d->sg)
		return false;	/* an empty last sub-tile: fewer sub-tiles do the same */
	if ((uint64_t)T * sub * pix_b + wb + 128 > g->half)
		return false;	/* the sub-tiles' rounding does not fit: more segments would */
	d->spe = ACCEL_MIN(T, TNPU_NUM_ACCS);
	d->in_off = al64(wb);
	d->out_off = d->in_off + al64((uint64_t)T * sub * g->C * g->e);
	if ((uint64_t)d->out_off + (uint64_t)T * sub * d->ku * g->oe > g->half)
		return false;
	d->qi = row_elems(d->sg, (uint64_t)g->C * g->e);
	d->qo = over_n || d->ku != g->K ? 1 : row_elems(d->sg, (uint64_t)g->K * g->oe);
	d->qw = row_elems(d->kr, (uint64_t)g->C * g->e);
	if (d->sg / d->qi > PW_MAX_ROWS_PER_BAND || d->sg / d->qo > 4 * PW_MAX_ROWS_PER_BAND)
		return false;
	/* the first EXE's data first: its first sub-tile's pixels, its channel tile's weights (EXEs run the
	 * channel tiles of a pixel group in turn) */
	d->in0 = (uint32_t)ACCEL_MIN(cdiv(sub, d->qi) * d->qi, d->sg);
	d->w0 = (uint32_t)ACCEL_MIN(cdiv((uint64_t)d->gch * tn, d->qw) * d->qw, d->kr);
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
				for (uint32_t T = t0; T <= t0 + 24 && T <= PW_MAX_SUB; T++) {
					struct pwp d;

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

static void pw_config(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
		      unsigned buf, uint32_t n, bool recs)
{
	uint32_t e = g->e, oe = g->oe, C = g->C, P = g->pes, blk_in = d->tm * C * e, blk_out = d->tm * d->ku * oe;
	uint32_t cb = g->colb ? g->colb : 4;
	uint8_t dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	struct tnpu_operand ops[3];
	struct tnpu_sfu_param sfu = p->sfu;
	struct tnpu_cfg_hdr h;
	uint16_t ins[1 + 3 * TNPU_NUM_ACCS];
	uint8_t pkt[1 + 16 + sizeof(ins) + 4 * 32];
	uint32_t len = 0, ni = 0;
	/* pixel-block and channel-block indices of cluster c and PE p: strides per cluster and per PE */
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
	sfu.bias_col_stride = (int32_t)(cc * d->tn * cb);
	sfu.bias_pe_stride = (int32_t)(cp * d->tn * cb);
	/* the weights cross as one multicast block (the channel tiles of the row's PEs are consecutive
	 * rows): on the wide path, and not at all when the slot already holds them (isa.md "MCAST") */
	ins[ni++] = (uint16_t)(TNPU_INSN_LD(1, 0, 1, 0) | (g->wide ? TNPU_LD_MCAST | TNPU_LD_WIDE : 0));
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
	struct pw_band bw = band_w(g, d), bb = band_b(g, d);
	bool used[2] = { false, false };
	uint8_t sf = TNPU_BANDS_F_STREAM, aux = TNPU_BANDS_F_AUX | TNPU_BANDS_F_STREAM;

	pw_config(cs, g, d, p, 1, d->spe, true);
	if (rem)
		pw_config(cs, g, d, p, 2, rem, false);
	for (uint32_t s = 0; s < d->nseg; s++) {
		unsigned h = d->nseg > 1 ? s & 1 : 0;
		uint64_t per = d->over_n ? d->sg : (uint64_t)g->rows * d->sg, base = (uint64_t)s * per;
		uint64_t ns = ACCEL_MIN((uint64_t)g->M - base, per);
		struct pw_band bi = band_in(g, d, base, ns);

		/*
		 * load engine: the half's column records and weights at its first use, the segment's
		 * pixels; the first EXE's channel tile and first pixel block first.  The records land
		 * before the weights, whose lines the weight LD waits for, so the chained SFU never reads
		 * records still in flight.
		 */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, PS_CFREE + h, 1);
		if (!used[h] && g->colb) {
			band_emit(cs, true, &bb, 0, bb.ul ? bb.ul : bb.n, h, aux);
			band_emit_tail(cs, true, &bb, h, aux);
		}
		if (!used[h])
			band_emit(cs, true, &bw, 0, d->w0, h, aux);
		band_emit(cs, true, &bi, 0, d->in0, h, sf);
		if (!used[h]) {
			band_emit(cs, true, &bw, d->w0, d->kr, h, aux);
			band_emit_tail(cs, true, &bw, h, aux);
			used[h] = true;
		}
		band_emit(cs, true, &bi, d->in0, d->sg, h, sf);
		band_emit_tail(cs, true, &bi, h, sf);
		/* compute engine: one EXE per pixel group and channel tile, every row on its own band */
		if (s >= 2)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, PS_SFREE + h, 1);
		for (uint32_t k = 0; k < ngrp * d->nct; k++) {
			struct tnpu_exe_patch pt[4];
			uint8_t pkt[1 + sizeof(pt)];
			unsigned np = 0;
			uint32_t gi, ct, i0, c0;

			gi = k / d->nct;
			ct = k % d->nct;
			i0 = gi * d->spe;
			c0 = ct * d->gch * d->tn;
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
			pkt[0] = TNPU_PKT_EXE_BYTE(rem && gi == ngrp - 1 ? 2 : 1, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
			memcpy(pkt + 1, pt, 8 * np);
			cs_dispatch(cs, AS, TNPU_DISPATCH_ROW_ALL, h, 0, pkt, 1 + 8 * np);
		}
		if (s + 2 < d->nseg)
			cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, PS_CFREE + h, 1);
		/* store engine: each unit's rows leave as their STs write them */
		if (d->over_n) {
			/* every pixel's channel block of each unit (axis X), the SRAM rows ku channels apart */
			struct tnpu_cmd_dma_bands b = {
				.hdr = { .opcode = TNPU_CMD_DMA_BANDS_D2H, .flags = AS, .size = sizeof(b) },
				.host_va = g->out_va + base * g->K * g->oe, .host_pitch_z = (uint64_t)g->K * g->oe,
				.sram_off = d->out_off, .sram_pitch_z = d->ku * g->oe, .width = g->K * g->oe, .height = 1,
				.depth = (uint32_t)ns, .band_step = d->kr * g->oe, .band_len = d->kr * g->oe,
				.half = (uint8_t)h, .axis = TNPU_BANDS_AXIS_X | sf,
			};

			cs_raw(cs, &b, sizeof(b));
		} else {
			struct pw_band bo = band_out(g, d, base, ns);

			band_emit(cs, false, &bo, 0, d->sg, h, sf);
			band_emit_tail(cs, false, &bo, h, sf);
		}
		if (s + 2 < d->nseg)
			cs_sem(cs, true, AS, TNPU_ENGINE_STORE, PS_SFREE + h, 1);
	}
}

/* Plan and emit g; 1 if no plan fits or its replay is slower than other_est (0: none), else 0/-errno. */
static int pw_lower(struct accel_dev *dev, struct mm_ctx *x, struct pwg *g, const struct mm_problem *p,
		    double (*other)(const void *), const void *arg)
{
	const struct accel_caps *c = x->caps;
	struct pwp d;

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
	if (!pw_plan(g, &d))
		return 1;
	/* one hardware job: CONFIGs, then per segment its bands, semaphores and EXEs (16-byte header and
	 * up to 33 packet bytes each) */
	if (2 * 256 + (uint64_t)d.nseg * (10 * 72 + 4 * 16 + cdiv(d.T, d.spe) * d.nct * 56) > x->cut_bytes)
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
		return accel_seterr(dev, x->cs->err, "out of memory while building the command stream");
	return 0;
}

static bool pw_usable(const struct accel_dev *dev, const struct mm_ctx *x, const struct mm_problem *p)
{
	const struct accel_caps *c = x->caps;

	return dev->pw_mode != 1 && (c->features & TNPU_FEAT_DEPTHWISE) && (c->features & TNPU_FEAT_STREAM) &&
	       !p->res_tensor && !p->zskip_a && !p->mac_lb && x->pin_row == 0xFF;
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

/* Returns 1 if the convolution is not eligible or another lowering is faster, 0 or -errno. */
int conv_pw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p)
{
	const struct accel_tensor *in = cd->input, *wt = cd->weights, *out = cd->output;
	struct pw_conv_arg arg = { x->caps, cd, p };
	struct pwg g;
	uint32_t N = in->shape[0], H = in->shape[2], W = in->shape[3];

	if (!pw_usable(dev, x, p) || in->layout != ACCEL_LAYOUT_NHWC || out->layout != ACCEL_LAYOUT_NHWC ||
	    cd->groups != 1 || wt->shape[2] != 1 || wt->shape[3] != 1 || cd->stride_h != 1 || cd->stride_w != 1 ||
	    cd->pad_top || cd->pad_left || cd->pad_bottom || cd->pad_right)
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
	g.in_va = in->buf->va + in->offset;
	g.w_va = wt->buf->va + wt->offset;
	g.out_va = out->buf->va + out->offset;
	return pw_lower(dev, x, &g, p, pw_conv_other, &arg);
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
	    p->c_pitch != (uint64_t)p->N * oe || p->K > 65535 || p->N > 65535)
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
	return pw_lower(dev, x, &g, p, pw_gemm_other, &arg);
}
