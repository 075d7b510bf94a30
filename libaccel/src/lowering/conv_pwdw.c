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
 */
#include <stdlib.h>
#include <string.h>

#include "conv_parts.h"

#define AS TNPU_CMD_F_ASYNC
enum { FZ_CFREE = 0, FZ_SFREE = 2, FZ_PAD = 4, FZ_RFILL = 5 };
#define FZ_MAX_EXES 1024	/* EXEs of the expansion per segment */
#define FZ_REM_BUF 5		/* the remainder's instruction buffer (1..4: the main runs of n sub-tiles) */
#define FZ_REM_RF 16		/* and its register window */
#define FZ_MAX_FIX 4		/* FILLs that restore the padding a remainder wrote */
#define FZ_GUARD 64		/* positions after the image area and the input rows: a remainder's last blocks */

/* The depthwise run: a buffer, register window and slots the expansion's (buffers 1..5, windows 0 and
 * 16, input and weight slot 0) leave alone; it loads its weight slot itself, unless an EXE of the
 * segment that hosted iterations did (fz_prog_held). */
static const struct dw_prog fz_prog = { .buf_run = 7, .rf_run = 48, .islot = 1, .wslot = 1, .wl_run = 1 };
static const struct dw_prog fz_prog_held = { .buf_run = 7, .rf_run = 48, .islot = 1, .wslot = 1, .wl_run = 0 };

/* Hosted depthwise iterations (fz_host): the main EXEs that run some of the segment's depthwise
 * iterations after their sub-tiles use buffers FZ_MIX_BUF0.. (one per sub-tile count, iteration count
 * and weight-slot LD), the main register window 0 with the depthwise records in entries FZ_MIX_REC..+4
 * (window, output, depthwise parameters, SFU, weights), written once by a CONFIG of buffer FZ_REC_BUF. */
#define FZ_REC_BUF 6
#define FZ_MIX_REC 4
#define FZ_MIX_BUF0 8
#define FZ_MIX_BUFS 24		/* buffers 8..31 */
#define FZ_MIX_MAXM 64		/* iterations per hosting EXE */
#define FZ_HOST_EXES 256	/* hosting only in segments of at most this many main EXEs (and groups) */
#define FZ_HOST_X0 1		/* the first main EXE of a segment that may host: the padding fills land
				 * during the one before (its wait would idle the rows) */

struct fz {
	struct dwg g;		/* the depthwise layer (its input image = the expansion's output) */
	struct dwp d;
	struct pwg pg;		/* the expansion, row mode over the image rows of a segment */
	struct pwp pd;
	bool rem;		/* a segment's first nr % gp rows run as a remainder */
	struct pwg rg;		/* the remainder: flat over the padded image's positions (its mapping; the
				 * sub-tiles and their size are the segment's) */
	struct pwp rd;
	uint32_t x_off, xp;	/* the expansion's input rows in each half: offset, pitch (Wpu pixels) */
	uint32_t guard;		/* positions after the image area and the input rows (0 or FZ_GUARD) */
	uint32_t padl, padr;	/* bytes of the left and (real) right padding columns of an image row */
	uint8_t mix;		/* main EXEs host depthwise iterations: 0 never, 1 while their MACs hide the
				 * windows' delivery, 2 as soon as the rows are stored */
	uint8_t spe;		/* sub-tiles per main EXE at most (0: 4; fewer: more EXEs to host iterations) */
	bool ovl;		/* no remainder: the groups overlap at a uniform step (pd.gs rows) instead of the
				 * last one moving up, so it runs in the others' EXEs */
	uint8_t ovl_mode;	/* sim option pwdw-ovl: 0 auto, 1 off, 2 all (overlapping groups where they fit) */
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

/* Segment s: half, image, output rows [y0, y0 + rows) in n iterations; the image rows [r0, r0 + nr) its
 * stored outputs read, at SRAM row j0 of the image; hi = the rows of the run's windows (its FILLs).
 * The expansion: a remainder of rr rows (rT sub-tiles of blocks of rtm positions: rpos positions from
 * rs0 positions after the padding before row r0 -- 0, or where that would run past the image area
 * ending with the remainder's last row, in the padding rows above; SRAM rows [ra, rb); rT 0: no plan
 * fits), then ng groups of gp rows (without a remainder the last one moved up by shift rows). */
struct fz_seg {
	unsigned h;
	uint32_t b, y0, rows, n, r0, nr, j0, hi, rr, ng, shift, rT, rtm, rpos, ra, rb;
	uint32_t rwcs;	/* row wrap: the clusters' blocks rwcs image pixels apart */
	int32_t rs0;
	int64_t iy0;
};

static struct fz_seg fz_seg_at(const struct fz *z, uint32_t s)
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

/* The main EXEs of segment q: sub-tile k = group k / xch, x chunk k % xch; up to 4 sub-tiles of one
 * group (x chunks) or of consecutive groups per EXE; drow = the rows before group 0 (the remainder's)
 * or, for the moved last group (an EXE of its own), minus its move. */
struct fz_exe {
	uint32_t k0, n;
	int32_t drow;
};

static unsigned fz_exes(const struct fz *z, const struct fz_seg *q, struct fz_exe *ex)
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
static void fz_cfgs(const struct fz *z, bool cfg[TNPU_NUM_ACCS + 1])
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
static struct pwp fz_rem_at(const struct fz *z, const struct fz_seg *q)
{
	struct pwp r = z->rd;

	r.tm = q->rtm;
	r.T = q->rT;
	r.wcs = q->rwcs;
	return r;
}

/* SRAM offset of segment row j of the image at column 0 (after the left padding). */
static uint32_t fz_img(const struct fz *z, uint32_t j)
{
	return z->d.in_off + j * z->d.P_in + z->padl;
}

/* The FILLs that restore the padding segment q's remainder wrote: the padding columns of its image
 * rows, the whole rows below the image it reached. */
static unsigned fz_fix(const struct fz *z, const struct fz_seg *q, struct dw_fill f[FZ_MAX_FIX])
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
static uint64_t fz_row_bytes(const struct fz *z, const struct fz_seg *q, uint32_t j)
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
static uint32_t fz_iter_hi(const struct fz *z, uint32_t k)
{
	const struct dwg *g = &z->g;

	return ACCEL_MIN(z->d.in_rows, ((k + 1) * z->d.E - 1) * g->sy + (g->R - 1) * g->dy + 1);
}

/* The depthwise iterations' share of an EXE's work (cycle-model.md): MACs, SFU (or the output queue
 * with ST RAW) and ST of one iteration's tiles. */
static void fz_iter_costs(const struct accel_caps *c, const struct fz *z, bool dw_sfu, uint64_t *mac, uint64_t *sfu,
			  uint64_t *st)
{
	const struct dwg *g = &z->g;
	const struct dwp *d = &z->d;
	uint64_t el = (uint64_t)d->th * d->tw * d->tn;

	*mac = cdiv(el * g->R * g->S, g->dt == TNPU_DTYPE_INT8 ? c->rate_int8 : c->rate_fp32);
	*sfu = dw_sfu ? cdiv(el, TNPU_RATE_SFU) : cdiv(el, TNPU_RATE_OQ);
	*st = cdiv(el * g->oe * c->pes, TNPU_RATE_ST);
}

/* The hosting of segment q (fz_host): main EXE x (emission order: ex[i], then its channel tiles) runs
 * depthwise iterations [sum of m[0..x-1], + m[x]) after its sub-tiles; iterations [kt, q->n) run as the
 * segment's own run after the main EXEs; pre (0: none): the last main EXE then loads the run's first
 * window block shifted up to start at SRAM row pre (only rows already stored), so the run's LD slides
 * and delivers only the rows that EXE wrote. */
struct fz_hostp {
	unsigned nx;		/* main EXEs (0: no hosting) */
	uint32_t kt, pre;
	uint16_t m[FZ_HOST_EXES];
};

/* SRAM rows of a depthwise iteration's window block (all clusters' windows). */
static uint32_t fz_box(const struct fz *z)
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
static void fz_host(const struct accel_caps *c, const struct fz *z, bool dw_sfu, const struct fz_seg *q,
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
static int fz_mixbuf(uint16_t tab[FZ_MIX_BUFS], unsigned *nt, unsigned n, unsigned m, bool wl, bool pre)
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
static void fz_config_mix(struct accel_cmdstream *cs, const struct fz *z, bool dw_sfu, unsigned b, unsigned n,
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

static uint64_t fz_mix_cfg_len(unsigned n, unsigned m, bool wl, bool pre, bool dw_sfu)
{
	return 17 + 2 * (1 + 3 * n + wl + (m ? 3 + dw_sfu : 0) + pre);
}

/* The depthwise records into entries FZ_MIX_REC.. of the main window: window, output, parameters, SFU,
 * weights and the preload's copy of the window (a CONFIG of buffer FZ_REC_BUF, whose one instruction
 * never runs). */
#define FZ_REC_CFG_LEN (17 + 2 + 6 * 32)
static void fz_config_recs(struct accel_cmdstream *cs, const struct fz *z, const struct mm_problem *pq)
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
static bool fz_hosts_first(const struct accel_caps *c, const struct fz *z, bool dw_sfu)
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
static bool fz_plan(const struct accel_caps *c, struct fz *z, bool dw_sfu, uint8_t host, struct fz *best)
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
