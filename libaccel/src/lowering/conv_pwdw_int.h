/* SPDX-License-Identifier: MIT */
/*
 * conv_pwdw_int.h - what the fused expansion + depthwise lowering's files share (conv_pwdw.c: emission,
 * plan cache and entry points; conv_pwdw_seg.c: segments, hosting and the CONFIG packets; conv_pwdw_plan.c:
 * the cycle-model replay and the plan search).
 */
#ifndef ACCEL_CONV_PWDW_INT_H
#define ACCEL_CONV_PWDW_INT_H

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

static inline uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static inline uint32_t al64(uint64_t v)
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

/* The main EXEs of segment q: sub-tile k = group k / xch, x chunk k % xch; up to 4 sub-tiles of one
 * group (x chunks) or of consecutive groups per EXE; drow = the rows before group 0 (the remainder's)
 * or, for the moved last group (an EXE of its own), minus its move. */
struct fz_exe {
	uint32_t k0, n;
	int32_t drow;
};

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

#define FZ_REC_CFG_LEN (17 + 2 + 6 * 32)

/* conv_pwdw_seg.c and conv_pwdw_plan.c */
struct fz_seg fz_seg_at(const struct fz *z, uint32_t s);
unsigned fz_exes(const struct fz *z, const struct fz_seg *q, struct fz_exe *ex);
void fz_cfgs(const struct fz *z, bool cfg[TNPU_NUM_ACCS + 1]);
struct pwp fz_rem_at(const struct fz *z, const struct fz_seg *q);
uint32_t fz_img(const struct fz *z, uint32_t j);
unsigned fz_fix(const struct fz *z, const struct fz_seg *q, struct dw_fill f[FZ_MAX_FIX]);
uint64_t fz_row_bytes(const struct fz *z, const struct fz_seg *q, uint32_t j);
uint32_t fz_iter_hi(const struct fz *z, uint32_t k);
void fz_iter_costs(const struct accel_caps *c, const struct fz *z, bool dw_sfu, uint64_t *mac, uint64_t *sfu,
			  uint64_t *st);
uint32_t fz_box(const struct fz *z);
void fz_host(const struct accel_caps *c, const struct fz *z, bool dw_sfu, const struct fz_seg *q,
		    const struct fz_exe *ex, unsigned nex, struct fz_hostp *hp);
int fz_mixbuf(uint16_t tab[FZ_MIX_BUFS], unsigned *nt, unsigned n, unsigned m, bool wl, bool pre);
void fz_config_mix(struct accel_cmdstream *cs, const struct fz *z, bool dw_sfu, unsigned b, unsigned n,
			  unsigned m, bool wl, bool pre);
uint64_t fz_mix_cfg_len(unsigned n, unsigned m, bool wl, bool pre, bool dw_sfu);
void fz_config_recs(struct accel_cmdstream *cs, const struct fz *z, const struct mm_problem *pq);
bool fz_hosts_first(const struct accel_caps *c, const struct fz *z, bool dw_sfu);
bool fz_plan(const struct accel_caps *c, struct fz *z, bool dw_sfu, uint8_t host, struct fz *best);

#endif
