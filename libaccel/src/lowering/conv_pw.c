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
 */
#include <string.h>

#include "conv_parts.h"

#define AS TNPU_CMD_F_ASYNC
enum { PS_CFREE = 0, PS_SFREE = 2, PS_FILL = 4 };
#define PW_MAX_ROWS_PER_BAND 256	/* DMA rows per unit and band: the STREAM scoreboard stays small */
#define PW_ROW_BYTES 2048		/* preferred bytes per DMA row (8 port cycles) */
#define PW_REM_BUF 5			/* the remainder's instruction buffer (1..4: main runs of n sub-tiles) */
#define PW_REM_RF 16			/* and its register window */



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

/* ---- the problem's shape in the plan's terms ---- */

/* Elements of a filter row (one weight slice, one LD A) and bytes of a weight row (one channel). */
static uint32_t g_cpt(const struct pwg *g)
{
	return g->rowm ? g->S * g->C : g->C;
}

static uint64_t g_wrow(const struct pwg *g)
{
	return (uint64_t)(g->rowm ? g->R : 1) * g_cpt(g) * g->e;
}

static uint32_t g_taps(const struct pwg *g)
{
	return g->rowm ? g->R : 1;
}

/* Row mode: SRAM bytes of a padded input row; the input rows behind ru output rows. */
static uint64_t g_prow(const struct pwg *g)
{
	return (uint64_t)g->Wp * g->C * g->e;
}

static uint32_t g_band_rows(const struct pwg *g, uint32_t ru)
{
	return (ru - 1) * g->sy + (g->R - 1) * g->dy + 1;
}

/* Row mode: rows from one row group to the next (conv_pwdw.c may overlap the groups). */
static uint64_t g_step(const struct pwp *d)
{
	return d->gs ? d->gs : d->gp;
}

/* Sub-tile k of a segment: unit pixels [*lo, *hi) its ST spans (an output row per pixel block in row
 * mode, tm pixels each), its tap-0 A and its output offsets from its buffer, the unit's input
 * elements (pixels; row mode: band rows) tap t reads. */
static void sub_pix(const struct pwg *g, const struct pwp *d, uint32_t k, uint64_t *lo, uint64_t *hi)
{
	if (d->wrap) {	/* one sub-tile: from its first pixel to its last one's end, in padded positions */
		uint64_t last = (uint64_t)(g->cols - 1) * d->wcs + d->tm - 1;

		*lo = 0;
		*hi = last / d->wrap * g->Wp + last % d->wrap + 1;
	} else if (d->pair) {	/* cols / 2 pairs per sub-tile: from its first block to its last one's end */
		*lo = (uint64_t)k * (g->cols / 2) * d->pair;
		*hi = *lo + (uint64_t)((g->cols - 1) / 2) * d->pair + (g->cols > 1 ? d->pcs : 0) + d->tm;
	} else if (!g->rowm) {
		*lo = (uint64_t)k * d->gp * d->tm;
		*hi = *lo + (uint64_t)d->gp * d->tm;
	} else {
		uint64_t rg = k / d->xch, xc = k % d->xch;

		*lo = rg * g_step(d) * g->OW + xc * d->tm;
		*hi = *lo + (uint64_t)(d->gp - 1) * g->OW + d->tm;
	}
}

static uint64_t sub_in(const struct pwg *g, const struct pwp *d, uint32_t k)
{
	if (d->wrap)
		return 0;
	if (d->pair)
		return (uint64_t)k * (g->cols / 2) * d->pair * g->C * g->e;
	if (!g->rowm)
		return (uint64_t)k * d->gp * d->tm * g->C * g->e;
	return (uint64_t)(k / d->xch) * g_step(d) * g->sy * g_prow(g) +
	       (uint64_t)(k % d->xch) * d->tm * g->sx * g->C * g->e;
}

/* Row mode: SRAM bytes between output rows (packed, or the fused lowering's padded image rows). */
static uint64_t g_orow(const struct pwg *g, const struct pwp *d)
{
	return g->orp ? g->orp : (uint64_t)g->OW * d->ku * g->oe;
}

static uint64_t sub_out(const struct pwg *g, const struct pwp *d, uint32_t k)
{
	uint64_t lo, hi;

	if (g->rowm && g->orp)
		return (uint64_t)(k / d->xch) * g_step(d) * g->orp + (uint64_t)(k % d->xch) * d->tm * d->ku * g->oe;
	sub_pix(g, d, k, &lo, &hi);
	return lo * d->ku * g->oe;
}

static void sub_reads(const struct pwg *g, const struct pwp *d, uint32_t k, uint32_t t, uint64_t *lo, uint64_t *hi)
{
	if (!g->rowm) {
		sub_pix(g, d, k, lo, hi);
	} else {
		uint64_t r0 = (uint64_t)(k / d->xch) * g_step(d);

		*lo = r0 * g->sy + (uint64_t)t * g->dy;
		*hi = (r0 + d->gp - 1) * g->sy + (uint64_t)t * g->dy + 1;
	}
}

/* Sub-tiles of the EXE that starts at sub-tile k: consecutive ones at a constant stride (row mode with
 * x chunks: the chunks of one row group). */
static uint32_t exe_subs(const struct pwg *g, const struct pwp *d, uint32_t T, uint32_t k)
{
	if (g->rowm && d->xch > 1)
		return ACCEL_MIN(d->spe, d->xch - k % d->xch);
	return ACCEL_MIN(d->spe, T - k);
}

/* Sub-tiles of the main mapping (all but the remainder's). */
static uint32_t main_T(const struct pwp *d, uint32_t T)
{
	return d->rem ? T - 1 : T;
}

/* The remainder as a plan of its own whose sub-tile 0 is the unit's pixels from p0 = (T-1)*gp*tm. */
static struct pwp rem_plan(const struct pwg *g, const struct pwp *d)
{
	struct pwp r = *d;
	uint32_t p0 = (d->T - 1) * d->gp * d->tm;

	r.cl_pix = d->rcl;
	r.pe_pix = d->rpe;
	r.gp = (r.cl_pix ? g->cols : 1) * (r.pe_pix ? g->pes : 1);
	r.gch = g->cols * g->pes / r.gp;
	r.tm = d->rtm;
	r.tn = d->rtn;
	r.ku = d->rku;
	r.nct = 1;
	r.T = 1;
	r.spe = 1;
	r.rem = false;
	r.in_off[0] = r.in_off[1] = d->in_off[0] + p0 * g->C * g->e;
	r.out_off[0] = r.out_off[1] = d->rem_off;
	return r;
}


static struct pw_seg seg_at(const struct pwg *g, const struct pwp *d, uint32_t s)
{
	struct pw_seg sg = { .j = d->nseg > 1 ? s & 1 : 0 };

	sg.h = d->one_half ? 0 : sg.j;
	sg.in_off = d->in_off[sg.j];
	sg.out_off = d->out_off[sg.j];

	if (!g->rowm) {
		uint64_t per = d->over_n ? d->sg : (uint64_t)g->rows * d->sg, base = (uint64_t)s * per;

		sg.npix = ACCEL_MIN((uint64_t)g->M - base, per);
		sg.in_va = g->in_va + base * g->C * g->e;
		sg.out_va = g->out_va + base * g->K * g->oe;
		sg.res_va = g->res_va + base * g->K * g->oe;
		sg.T = d->T;
		sg.sg = d->sg;
	} else {
		uint32_t b = s / d->nsi, per = d->over_n ? d->ru : g->rows * d->ru;

		sg.y0 = (s % d->nsi) * per;
		sg.nrows = ACCEL_MIN(g->OH - sg.y0, per);
		sg.npix = (uint64_t)sg.nrows * g->OW;
		sg.in_va = g->in_va + (uint64_t)b * g->in_sn;
		sg.out_va = g->out_va + (uint64_t)b * g->out_sn + (uint64_t)sg.y0 * g->OW * g->K * g->oe;
		sg.res_va = g->res_va + (uint64_t)b * g->out_sn + (uint64_t)sg.y0 * g->OW * g->K * g->oe;
		sg.ru = d->over_n ? sg.nrows : (uint32_t)cdiv(sg.nrows, g->rows);
		sg.br = g_band_rows(g, sg.ru);
		sg.sg = sg.ru * g->OW;
		sg.T = (uint32_t)cdiv(sg.ru, d->gp) * d->xch;
	}
	return sg;
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
static void fill_emit(struct accel_cmdstream *cs, unsigned half, uint32_t off, uint32_t width, uint32_t pitch,
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
static unsigned pad_fills(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg, bool first_use,
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

struct pw_acct {
	uint64_t issued, dist, wide, mac, sfu, st;
};

#define PW_WAITS (2 * PW_MAX_TAPS * TNPU_NUM_ACCS)
struct pw_row {
	uint64_t t0, n_wait;
	uint64_t ready[PW_WAITS];
	struct pw_acct pre[PW_WAITS], a;
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
static struct pw_band band_in(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
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
static struct pw_band band_out(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
{
	return (struct pw_band){ sg->out_va, (uint64_t)g->K * g->oe, (uint64_t)d->ku * g->oe, sg->npix, d->qo, sg->sg,
				 sg->out_off };
}

static struct pw_band band_res(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg)
{
	struct pw_band b = band_out(g, d, sg);

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
static void xbands_emit(struct accel_cmdstream *cs, bool h2d, const struct pwg *g, const struct pwp *d,
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
static void pw_cfgs(const struct pwg *g, const struct pwp *d, bool cfg[TNPU_NUM_ACCS + 1])
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
static double pw_sim(const struct pwg *g, const struct pwp *d)
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
		bi = band_in(g, d, &sg), brs = band_res(g, d, &sg);
		struct pw_land in = { .n = 0 }, rl = { .n = 0 };
		struct pw_simseg ss = { &in, &rl, &wl[h], ACCEL_MIN(d->kr, g->K), prev_b };
		uint32_t fl[4][3], nf, T = main_T(d, sg.T);
		uint64_t tok_f = 0, p0 = (uint64_t)T * d->gp * d->tm;

		if (s >= 2)
			e.fl = ACCEL_MAX(e.fl, tok_c[j]) + TNPU_CYC_CMD;
		nf = pad_fills(g, d, &sg, fresh[j], fl);
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
			struct pw_band bo = band_out(g, d, &sg);
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

/* ---- planning ---- */

/* The parts of a plan that do not depend on the pixel tiling: mapping, channel tiles, weights. */
bool pw_chan(const struct pwg *g, bool over_n, unsigned map, uint32_t tn, struct pwp *d)
{
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
	d->w_off = 0;
	d->b_off = al64((uint64_t)d->ku * g_wrow(g));
	d->in_off[0] = al64((uint64_t)d->b_off + (uint64_t)d->ku * (g->colb ? g->colb : 4));
	d->qw = pw_row_elems(d->kr, g_wrow(g));
	return d->ku <= 65535;
}

/* The rest of the plan once the pixel tiling is set (sg, T, tm, row geometry), and its replay unless
 * its MACs, SFU and ST alone already exceed `bound` (most candidates: the replay is the planner's cost;
 * est is then infinite). */
static bool pw_finish(const struct pwg *g, struct pwp *d, uint64_t in_bytes, uint64_t out_pix, double bound)
{
	uint64_t sub = (uint64_t)d->gp * d->tm;

	if (!d->tm || (uint64_t)d->tm * d->tn > g->acc || d->tm > 65535 || !d->T || d->T > PW_MAX_SUB)
		return false;
	d->spe = ACCEL_MIN(d->T, TNPU_NUM_ACCS);
	d->out_off[0] = d->in_off[0] + al64(in_bytes);
	d->in_off[1] = d->one_half ? d->out_off[0] + al64(out_pix * d->ku * g->oe) : d->in_off[0];
	d->out_off[1] = d->one_half ? d->in_off[1] + al64(in_bytes) : d->out_off[0];
	if ((uint64_t)d->out_off[1] + out_pix * d->ku * g->oe > g->half)
		return false;
	/* row mode: whole fractions of an output row (every segment's unit share is a multiple) */
	d->qo = d->over_n || d->ku != g->K ? 1 : pw_row_elems(g->rowm ? g->OW : d->sg, (uint64_t)g->K * g->oe);
	if (d->sg / d->qo > 4 * PW_MAX_ROWS_PER_BAND)
		return false;
	/* the first EXE's data first: its first sub-tile's pixels, its channel tile's weights (EXEs run the
	 * channel tiles of a pixel group in turn) */
	if (!g->rowm) {
		d->qi = pw_row_elems(d->sg, (uint64_t)g->C * g->e);
		if (d->sg / d->qi > PW_MAX_ROWS_PER_BAND)
			return false;
		d->in0 = (uint32_t)ACCEL_MIN(cdiv(sub, d->qi) * d->qi, d->sg);
	}
	d->w0 = (uint32_t)ACCEL_MIN(cdiv((uint64_t)d->gch * d->tn, d->qw) * d->qw, d->kr);
	d->res0 = (uint32_t)ACCEL_MIN(cdiv(sub, d->qo) * d->qo, d->sg);
	/* host reads (issue #6: at most 1.1 x the footprint, input + weights): every half used holds its
	 * own copy of the weights and records; row mode reads the halo rows of each segment again */
	d->h2d = (uint64_t)(d->one_half ? 1 : ACCEL_MIN(d->nseg, 2)) * g->K * (g_wrow(g) + g->colb);
	if (g->rowm) {	/* every image has the same nsi segments */
		for (uint32_t s = 0; s < d->nsi; s++) {
			struct pw_seg sg = seg_at(g, d, s);
			int64_t r0 = ACCEL_MAX((int64_t)sg.y0 * g->sy - g->pt, 0);
			int64_t r1 = ACCEL_MIN((int64_t)(sg.y0 + sg.nrows - 1) * g->sy - g->pt + (g->R - 1) * g->dy + 1, g->H);

			d->h2d += r1 > r0 ? (uint64_t)g->N * (uint64_t)(r1 - r0) * g->cin * g->C * g->e : 0;
		}
	} else {	/* the segments tile the M pixels */
		d->h2d += (uint64_t)g->M * g->C * g->e;
	}
	if (d->h2d * 10 > ((g->rowm ? (uint64_t)g->N * g->H * g->W : g->M) * g->C * g->e + g->K * g_wrow(g)) * 11 +
				  20ull * g->K * g->colb)
		return false;
	if (g->res)	/* read once, as the output is written once */
		d->h2d += (uint64_t)(g->rowm ? g->N * g->OH * g->OW : g->M) * g->K * g->oe;
	{
		uint64_t per = g_taps(g) * cdiv((uint64_t)d->tm * d->tn * g_cpt(g), g->rate) +
			       cdiv((uint64_t)d->tm * d->tn, g->sfu ? TNPU_RATE_SFU : TNPU_RATE_OQ) +
			       cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST), lb = TNPU_CYC_JOB;

		if (g->rowm)	/* per image, as above */
			for (uint32_t s = 0; s < d->nsi; s++)
				lb += (uint64_t)g->N * seg_at(g, d, s).T * d->nct * per;
		else
			lb += (uint64_t)d->nseg * d->T * d->nct * per;
		if ((double)lb > bound) {
			d->est = 1e300;	/* a valid plan, not worth replaying (a remainder may still be) */
			return true;
		}
	}
	d->est = pw_sim(g, d);
	return true;
}

/* Flat mode: T sub-tiles of gp * tm pixels per unit and segment. */
static bool pw_try_flat(const struct pwg *g, struct pwp *d, uint32_t T, double bound)
{
	uint64_t pix_b = (uint64_t)g->C * g->e + (uint64_t)d->ku * g->oe, cap, mu, sub, nb = d->one_half ? 2 : 1;

	if ((uint64_t)d->in_off[0] + 256 + nb * pix_b > g->half)
		return false;
	cap = (g->half - d->in_off[0] - 256) / (nb * pix_b);
	mu = d->over_n ? g->M : cdiv(g->M, g->rows);
	d->nseg = (uint32_t)cdiv(mu, cap);
	d->sg = (uint32_t)cdiv(mu, d->nseg);
	d->T = T;
	d->tm = (uint32_t)cdiv(d->sg, (uint64_t)d->gp * T);
	sub = (uint64_t)d->gp * d->tm;
	if (!d->tm || (uint64_t)(T - 1) * sub >= d->sg)
		return false;	/* an empty last sub-tile: fewer sub-tiles do the same */
	if (nb * T * sub * pix_b + d->in_off[0] + 256 > g->half)
		return false;	/* the sub-tiles' rounding does not fit: more segments would */
	if (d->one_half && d->nseg == 1)
		return false;	/* the same plan as with two halves */
	return pw_finish(g, d, (uint64_t)T * sub * g->C * g->e, (uint64_t)T * sub, bound);
}

/* Plan d with its last sub-tile replaced by a remainder of mapping rmap (flat, units on channel
 * blocks, one segment: the remainder's output leaves by its own axis-X band). */
static bool pw_try_rem(const struct pwg *g, const struct pwp *d, unsigned rmap, double bound, struct pwp *r)
{
	uint32_t gp, gch, rpix;
	uint64_t end;

	if (g->rowm || !d->over_n || d->nseg != 1 || d->T < 2)
		return false;
	rpix = d->sg - (d->T - 1) * d->gp * d->tm;
	*r = *d;
	r->rem = true;
	r->rcl = rmap & 1;
	r->rpe = rmap & 2;
	gp = (r->rcl ? g->cols : 1) * (r->rpe ? g->pes : 1);
	gch = g->cols * g->pes / gp;
	r->rpix = rpix;
	r->rtm = (uint32_t)cdiv(rpix, gp);
	r->rtn = (uint32_t)cdiv(d->kr, gch);
	r->rku = gch * r->rtn;
	if ((uint64_t)r->rtm * r->rtn > g->acc || (uint64_t)gp * r->rtm >= (uint64_t)d->gp * d->tm || r->rku > 65535)
		return false;	/* no fewer pixel slots than the sub-tile it replaces */
	r->rem_off = al64((uint64_t)d->out_off[1] + (uint64_t)(d->T * d->gp * d->tm) * d->ku * g->oe);
	end = (uint64_t)r->rem_off + (uint64_t)gp * r->rtm * r->rku * g->oe;
	if (end > g->half)
		return false;
	r->est = pw_sim(g, r);
	return r->est <= bound;
}

/* Row mode: x chunks of OW / xch pixels and nsi segments per image (their rows must fit a half). */
static bool pw_try_rows(const struct pwg *g, struct pwp *d, uint32_t xch, uint32_t nsi, double bound)
{
	uint32_t units = d->over_n ? 1 : g->rows, ru = (uint32_t)cdiv(g->OH, (uint64_t)units * nsi);
	uint32_t rg = (uint32_t)cdiv(ru, d->gp);
	uint64_t in_b = (uint64_t)g_band_rows(g, rg * d->gp) * g_prow(g), out_pix = (uint64_t)rg * d->gp * g->OW;

	if (g->OW % xch || d->in_off[0] + (d->one_half ? 2 : 1) * (al64(in_b) + al64(out_pix * d->ku * g->oe)) > g->half)
		return false;
	d->xch = xch;
	d->tm = g->OW / xch;
	d->ru = ru;
	d->nsi = (uint32_t)cdiv(g->OH, (uint64_t)units * ru);
	if (d->nsi != nsi)
		return false;	/* the same rows per unit as fewer segments */
	d->br = g_band_rows(g, ru);
	d->sg = ru * g->OW;
	d->T = rg * xch;
	d->nseg = g->N * d->nsi;
	if (d->one_half && d->nseg == 1)
		return false;	/* the same plan as with two halves */
	return pw_finish(g, d, in_b, out_pix, bound);
}

/* Pass 0 finds the fastest replay; pass 1 takes, among the plans within 1 % of it, the one that reads
 * the fewest host bytes (more segments can save a few cycles by idling fewer rows, but read their halo
 * rows again). */
static void pw_keep(const struct pwp *d, unsigned pass, double fastest, struct pwp *best, bool *found)
{
	if (pass == 0) {
		if (!*found || d->est < best->est)
			*best = *d;
	} else if (d->est <= fastest * 1.01 &&
		   (!*found || d->h2d < best->h2d || (d->h2d == best->h2d && d->est < best->est))) {
		*best = *d;
	} else {
		return;
	}
	*found = true;
}

static bool pw_plan(const struct pwg *g, struct pwp *best)
{
	bool found = false;
	double fastest = 0, bound = 1e300;

	for (unsigned pass = 0; pass < 2; pass++) {
		if (pass) {
			if (!found)
				return false;
			fastest = best->est;
			bound = fastest * 1.01;
			found = false;
		}
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
					struct pwp base, d;

					/* at most 1/8 of the MACs on padding channels, no smaller tn with the same nct */
					if ((uint64_t)nct * gch * tn * 8 > (uint64_t)kr * 9 ||
					    (tn > 1 && cdiv(kr, (uint64_t)gch * (tn - 1)) == nct))
						continue;
					if (!pw_chan(g, over_n, map, tn, &base))
						continue;
					for (unsigned oh = 0; oh < 2; oh++) {
						base.one_half = oh;
						if (g->rowm) {
							/* the fewest segments that fit, and a few more (fewer idle rows) */
							for (uint32_t xch = 1; xch <= g->OW && xch <= 8; xch++) {
								uint32_t tried = 0;

								for (uint32_t nsi = 1; nsi <= g->OH && tried < 6; nsi++) {
									d = base;
									if (g->OW / xch > tmax || !pw_try_rows(g, &d, xch, nsi, bound))
										continue;
									tried++;
									if (d.est > bound)
										continue;
									pw_keep(&d, pass, fastest, best, &found);
									bound = pass ? fastest * 1.01 : best->est;
								}
							}
							continue;
						}
						t0 = (uint32_t)ACCEL_MAX(1, cdiv(mu, (uint64_t)gp * tmax));
						for (uint32_t T = t0; T <= t0 + 24 && T <= PW_MAX_SUB; T++) {
							struct pwp rd;

							d = base;
							if (!pw_try_flat(g, &d, T, bound))
								continue;
							if (d.est <= bound) {
								pw_keep(&d, pass, fastest, best, &found);
								bound = pass ? fastest * 1.01 : best->est;
							}
							for (unsigned rmap = 0; rmap < 4; rmap++) {
								if (!pw_try_rem(g, &d, rmap, bound, &rd))
									continue;
								pw_keep(&rd, pass, fastest, best, &found);
								bound = pass ? fastest * 1.01 : best->est;
							}
						}
					}
				}
			}
		}
	}
	return found;
}

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
		struct pw_band bi = band_in(g, d, &sg), brs = band_res(g, d, &sg);
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
		nf = pad_fills(g, d, &sg, fresh[j], fl);
		fresh[j] = false;
		for (unsigned i = 0; i < nf; i++)
			fill_emit(cs, h, fl[i][0], fl[i][1], (uint32_t)g_prow(g), fl[i][2], g->pad);
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
				xbands_emit(cs, true, g, d, &sg, sg.res_va, sf);
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
			xbands_emit(cs, false, g, d, &sg, sg.out_va, sf);
		} else {
			struct pw_band bo = band_out(g, d, &sg);

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
