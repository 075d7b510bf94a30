/* SPDX-License-Identifier: MIT */
/*
 * conv_pw_int.h - what the pointwise lowering's files share (conv_pw.c: emission and entry points;
 * conv_pw_sim.c: bands and the cycle-model replay; conv_pw_plan.c: the plan search): its constants,
 * the problem's shape in the plan's terms (inline) and the replay's per-row accounting.
 */
#ifndef ACCEL_CONV_PW_INT_H
#define ACCEL_CONV_PW_INT_H

#include <string.h>

#include "conv_parts.h"

#define AS TNPU_CMD_F_ASYNC
enum { PS_CFREE = 0, PS_SFREE = 2, PS_FILL = 4 };
#define PW_MAX_ROWS_PER_BAND 256	/* DMA rows per unit and band: the STREAM scoreboard stays small */
#define PW_ROW_BYTES 2048		/* preferred bytes per DMA row (8 port cycles) */
#define PW_REM_BUF 5			/* the remainder's instruction buffer (1..4: main runs of n sub-tiles) */
#define PW_REM_RF 16			/* and its register window */



static inline uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static inline uint32_t al64(uint64_t v)
{
	return (uint32_t)((v + 63) & ~63ull);
}

/* Port cycles of one DMA_BANDS axis-Z row of `w` bytes. */
static inline uint64_t zrow(uint64_t w)
{
	return w > TNPU_RATE_DMA_PORT ? cdiv(w, TNPU_RATE_DMA_PORT) : 1;
}

/* ---- the problem's shape in the plan's terms ---- */

/* Elements of a filter row (one weight slice, one LD A) and bytes of a weight row (one channel). */
static inline uint32_t g_cpt(const struct pwg *g)
{
	return g->rowm ? g->S * g->C : g->C;
}

static inline uint64_t g_wrow(const struct pwg *g)
{
	return (uint64_t)(g->rowm ? g->R : 1) * g_cpt(g) * g->e;
}

static inline uint32_t g_taps(const struct pwg *g)
{
	return g->rowm ? g->R : 1;
}

/* Row mode: SRAM bytes of a padded input row; the input rows behind ru output rows. */
static inline uint64_t g_prow(const struct pwg *g)
{
	return (uint64_t)g->Wp * g->C * g->e;
}

static inline uint32_t g_band_rows(const struct pwg *g, uint32_t ru)
{
	return (ru - 1) * g->sy + (g->R - 1) * g->dy + 1;
}

/* Row mode: rows from one row group to the next (conv_pwdw.c may overlap the groups). */
static inline uint64_t g_step(const struct pwp *d)
{
	return d->gs ? d->gs : d->gp;
}

/* Sub-tile k of a segment: unit pixels [*lo, *hi) its ST spans (an output row per pixel block in row
 * mode, tm pixels each), its tap-0 A and its output offsets from its buffer, the unit's input
 * elements (pixels; row mode: band rows) tap t reads. */
static inline void sub_pix(const struct pwg *g, const struct pwp *d, uint32_t k, uint64_t *lo, uint64_t *hi)
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

static inline uint64_t sub_in(const struct pwg *g, const struct pwp *d, uint32_t k)
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
static inline uint64_t g_orow(const struct pwg *g, const struct pwp *d)
{
	return g->orp ? g->orp : (uint64_t)g->OW * d->ku * g->oe;
}

static inline uint64_t sub_out(const struct pwg *g, const struct pwp *d, uint32_t k)
{
	uint64_t lo, hi;

	if (g->rowm && g->orp)
		return (uint64_t)(k / d->xch) * g_step(d) * g->orp + (uint64_t)(k % d->xch) * d->tm * d->ku * g->oe;
	sub_pix(g, d, k, &lo, &hi);
	return lo * d->ku * g->oe;
}

static inline void sub_reads(const struct pwg *g, const struct pwp *d, uint32_t k, uint32_t t, uint64_t *lo, uint64_t *hi)
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
static inline uint32_t exe_subs(const struct pwg *g, const struct pwp *d, uint32_t T, uint32_t k)
{
	if (g->rowm && d->xch > 1)
		return ACCEL_MIN(d->spe, d->xch - k % d->xch);
	return ACCEL_MIN(d->spe, T - k);
}

/* Sub-tiles of the main mapping (all but the remainder's). */
static inline uint32_t main_T(const struct pwp *d, uint32_t T)
{
	return d->rem ? T - 1 : T;
}

/* The remainder as a plan of its own whose sub-tile 0 is the unit's pixels from p0 = (T-1)*gp*tm. */
static inline struct pwp rem_plan(const struct pwg *g, const struct pwp *d)
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


static inline struct pw_seg seg_at(const struct pwg *g, const struct pwp *d, uint32_t s)
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

struct pw_acct {
	uint64_t issued, dist, wide, mac, sfu, st;
};

#define PW_WAITS (2 * PW_MAX_TAPS * TNPU_NUM_ACCS)
struct pw_row {
	uint64_t t0, n_wait;
	uint64_t ready[PW_WAITS];
	struct pw_acct pre[PW_WAITS], a;
};

/* conv_pw_sim.c and conv_pw_plan.c, for the other files of the lowering */
struct pw_band pw_band_in(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg);
struct pw_band pw_band_out(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg);
struct pw_band pw_band_res(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg);
void pw_cfgs(const struct pwg *g, const struct pwp *d, bool cfg[TNPU_NUM_ACCS + 1]);
void pw_fill_emit(struct accel_cmdstream *cs, unsigned half, uint32_t off, uint32_t width, uint32_t pitch,
		      uint32_t height, uint8_t v);
unsigned pw_pad_fills(const struct pwg *g, const struct pwp *d, const struct pw_seg *sg, bool first_use,
			  uint32_t fl[4][3]);
bool pw_plan(const struct pwg *g, struct pwp *best);
double pw_sim(const struct pwg *g, const struct pwp *d);
void pw_xbands_emit(struct accel_cmdstream *cs, bool h2d, const struct pwg *g, const struct pwp *d,
			const struct pw_seg *sg, uint64_t va, uint8_t flags);

#endif
