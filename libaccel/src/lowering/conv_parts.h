/* SPDX-License-Identifier: MIT */
/*
 * conv_parts.h - the pieces of the pointwise (conv_pw.c) and depthwise (conv_dw.c) lowerings that the
 * fused expansion + depthwise lowering (conv_pwdw.c) builds its job from: their geometries and plans,
 * the band and fill emitters, the cluster programs and the cycle-model replays.
 */
#ifndef ACCEL_CONV_PARTS_H
#define ACCEL_CONV_PARTS_H

#include "epilogue.h"
#include "packet.h"

#define PW_MAX_TAPS 4			/* filter rows: one weight slot each */
#define PW_MAX_SUB 1024			/* sub-tiles per segment */
#define DW_MAX_CHUNKS 12	/* first + up to 10 middle + last */
#define DW_MAX_FILLS 4		/* FILLs before a chunk's band (dw_fills) */

/* ---- pointwise (conv_pw.c) ---- */

struct pwg {
	uint32_t M, C, K, e, oe, rate, colb;	/* flat: M pixels; colb: bytes per column record (0: none) */
	uint32_t rows, cols, pes, acc, half;
	bool sfu;				/* chained SFU (else ST RAW) */
	bool wide;				/* weight LDs as WIDE multicast blocks (CAP_FEATURES bit 17) */
	uint8_t cpair;				/* CPAIR operand records (CAP_FEATURES bit 21): 0 no, 1 yes,
						 * 2 the only remainder mapping (sim option cpair=all) */
	uint8_t wrap;				/* WRAP operand records (CAP_FEATURES bit 22): 0 no, 1 yes,
						 * 2 the only remainder mapping (sim option wrap=all) */
	uint64_t in_va, w_va, out_va, b_va;
	/* row mode: N images of H x W inputs, OH x OW outputs, R filter rows of S*C elements */
	bool rowm;
	uint32_t N, H, W, OH, OW, R, S, sy, sx, dy, dx, pt, pl, Wp, cin;	/* cin: image columns of a padded row */
	uint8_t pad;				/* the padding byte (int8 input zero point) */
	uint64_t in_sn, out_sn;
	/* ISA 2 residual (SFU RESIDUAL): a 32-bit tensor laid out as the output, staged in the output
	 * buffer where the SFU reads it before the ST overwrites it with the result */
	bool res;
	uint64_t res_va;
	/* row mode: SRAM bytes between output rows, 0 = packed rows of OW pixels (the fused lowering
	 * writes into the depthwise layer's padded image) */
	uint64_t orp;
};

struct pwp {
	bool over_n;		/* units take blocks of output channels (else runs of pixels or rows) */
	bool cl_pix, pe_pix;	/* clusters / PEs take pixel blocks (else channel blocks) */
	uint32_t gp, gch;	/* PEs of a row along pixels and along channels (gp * gch = cols * pes) */
	uint32_t tm, tn;	/* one PE's tile: pixels x channels */
	uint32_t kr;		/* real output channels per unit (over_n: ceil(K/rows), else K) */
	uint32_t ku;		/* channels per unit in SRAM: nct * gch * tn >= kr (output pitch) */
	uint32_t nct;		/* channel tiles of gch * tn channels */
	uint32_t sg;		/* output pixels per unit and segment (over_n: of every unit) */
	uint32_t ru, xch, br;	/* row mode: output rows per unit, x chunks (tm = OW / xch), input rows loaded */
	uint32_t gs;		/* row mode: rows from one row group to the next (0: gp; fewer: the groups overlap) */
	uint32_t nsi;		/* row mode: segments per image */
	uint32_t T;		/* pixel sub-tiles per segment */
	uint32_t spe;		/* sub-tiles per EXE (accumulators) */
	uint32_t qi, qo, qw;	/* pixels per input / output DMA row, weight channels per DMA row */
	uint32_t in0, w0, res0;	/* pixels (flat) / channels per unit in the first bands */
	uint32_t nseg;
	bool one_half;		/* segments alternate two input/output buffers in half 0 (weights read once),
				 * else the two halves (each its own copy of the weights) */
	uint32_t in_off[2], out_off[2], w_off, b_off;	/* the buffers of segments s & 1 */
	/* remainder (flat, units on channel blocks, one segment): the last sub-tile's rpix pixels run as
	 * one sub-tile of their own mapping (rgp pixel blocks of rtm pixels, all of the unit's channels in
	 * one tile: rtn per PE, rku >= kr) with its output in a buffer of its own (pitch rku), so a few
	 * pixels past a multiple of gp do not take a whole sub-tile of idle PEs */
	bool rem, rcl, rpe;
	uint32_t rpix, rtm, rtn, rku, rem_off;
	/* cluster pairs (CPAIR, CAP_FEATURES bit 21; flat, clusters on pixels, PEs on channels): cluster c's
	 * block starts (c & 1) * pcs + (c >> 1) * pair pixels after its sub-tile's, which starts cols / 2
	 * pairs on (the fused lowering's remainder: two half image rows per pair); pair 0: one run */
	uint32_t pair, pcs;
	/* row wrap (WRAP, CAP_FEATURES bit 22; flat, clusters on pixels, PEs on channels, one sub-tile):
	 * cluster c's block starts c * wcs image pixels on, the image's rows of wrap pixels a padded row
	 * (Wp positions) apart, so no slot is spent on padding columns (the fused lowering's remainder);
	 * 0: none.  ctx: every channel tile in one EXE (nct <= accumulators): per tile its weights' LD, a
	 * MAC into its own accumulator, an SFU APPLY with its own record (its columns' records), the ST */
	uint32_t wrap, wcs;
	bool ctx;
	double est;
	uint64_t h2d;		/* host bytes read */
};

/* A segment: half and buffer, host addresses of its first input element / output pixel, pixels, rows;
 * sub-tiles and output pixels per unit (row mode: output and input rows per unit: a short last segment
 * of an image gives each unit fewer rows). */
struct pw_seg {
	unsigned h, j;
	uint32_t in_off, out_off;
	uint64_t in_va, out_va, res_va, npix;
	uint32_t y0, nrows;	/* row mode: first output row in its image, output rows */
	uint32_t T, sg, ru, br;
};

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

/* Unit elements [e0, e1) landing in rows of q from the command start t: row j at t + CMD + SETUP +
 * (j+1)*c.  A tensor lands in up to two bands and a tail. */
struct pw_piece {
	uint64_t e0, e1, q, t, c;
};

struct pw_land {
	struct pw_piece p[3];
	unsigned n;
};

struct pw_eng {
	uint64_t fl, aux, fc, r, fs;
};

/* Replay state of a segment: its bands' landing and the weight slots' tiles (MCAST reuse). */
struct pw_simseg {
	const struct pw_land *in, *res, *w;
	uint64_t kr0;
	uint64_t *prev_b;
};

uint32_t pw_row_elems(uint32_t n, uint64_t b);
struct pw_band pw_band_w(const struct pwg *g, const struct pwp *d);
struct pw_band pw_band_b(const struct pwg *g, const struct pwp *d);
void pw_band_emit(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, uint64_t e0, uint64_t e1,
		  unsigned half, uint8_t flags);
void pw_band_emit_tail(struct accel_cmdstream *cs, bool h2d, const struct pw_band *b, unsigned half, uint8_t flags);
void pw_rows_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		  uint32_t r0, uint32_t r1, uint8_t flags);
bool pw_chan(const struct pwg *g, bool over_n, unsigned map, uint32_t tn, struct pwp *d);
void pw_config(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
	       unsigned buf, uint32_t n, bool recs, unsigned rf_base);
void pw_exe_emit(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		 unsigned buf, uint32_t k0, uint32_t ct, uint32_t in_off, uint32_t out_off);
/* Plan d with ctx (conv_pwdw.c's row-wrap remainder): its CONFIG, its one EXE, the EXE's replay and the
 * CONFIG's length. */
void pw_config_ct(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct mm_problem *p,
		  unsigned buf, unsigned rf_base);
void pw_exe_emit_ct(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		    unsigned buf, uint32_t in_off, uint32_t out_off);
void pw_sim_exe_ct(const struct pwg *g, const struct pwp *d, const struct pw_simseg *ss, struct pw_eng *e, uint64_t p0);
uint64_t pw_cfg_len_ct(const struct pwg *g, const struct pwp *d);
uint64_t pw_h2d(struct pw_eng *e, bool aux, uint64_t rows, uint64_t c);
void pw_sim_band(struct pw_eng *e, bool aux, const struct pw_band *b, uint64_t e0, uint64_t e1, struct pw_land *l);
void pw_sim_tail(struct pw_eng *e, bool aux, const struct pw_band *b, struct pw_land *l);
void pw_sim_cfg(struct pw_eng *e, uint64_t len);
uint64_t pw_cfg_len(const struct pwg *g, uint32_t n, bool recs);
/* Work another program adds to an EXE after its sub-tiles (the fused lowering's depthwise iterations):
 * packet bytes, issued instructions, delivered bytes (of them on the wide path), MAC, SFU and ST
 * cycles, and the time its first LD waits for (0: none). */
struct pw_extra {
	uint64_t plen, issued, dist, wide, mac, sfu, st, ready;
};

#define PW_MAX_XPATCH 4		/* patches pw_exe_emit_x adds */
void pw_exe_emit_x(struct accel_cmdstream *cs, const struct pwg *g, const struct pwp *d, const struct pw_seg *sg,
		   unsigned buf, uint32_t k0, uint32_t ct, uint32_t in_off, uint32_t out_off,
		   const struct tnpu_exe_patch *xp, unsigned nx);
void pw_sim_exe(const struct pwg *g, const struct pwp *d, const struct pw_simseg *ss, struct pw_eng *e,
		uint32_t k0, uint32_t n, uint32_t ct, uint64_t p0, uint64_t *stt, const struct pw_extra *x);

/* ---- depthwise (conv_dw.c) ---- */

struct dwg {
	uint32_t N, C, H, W, K, R, S, sy, sx, dy, dx, pt, pl, OH, OW, e, oe;	/* K == C */
	uint64_t in_va, in_sn, in_sh, w_va, out_va, out_sn, out_sh;
	uint8_t dt, out_dt;
	uint8_t pad;		/* the padding byte: the int8 input zero point (0: the SRAM's own zeros) */
	uint32_t colb;		/* bytes per channel of the SFU column vector (bias 4, QCOL records 12; loaded
			 * in the prologue), 0: none */
	bool wide;		/* WIDE multicast LDs: the window crosses at 256 B/cycle (isa.md "WIDE") */
	uint32_t rate_mc;	/* bytes/cycle of the window's multicast (wide path or distribution unit) */
	/* the fused lowering (conv_pwdw.c): the FILLs never cover image rows (the expansion writes those
	 * before or while the FILLs run), the padded row holds the whole image row; the bytes a half keeps
	 * after the depthwise buffers, fixed and per input row of a segment */
	bool fused;
	uint32_t xfix, xrow;
	uint32_t ximg;		/* and bytes after the input area (0: none) */
};

struct dwp {
	bool stream;		/* line-tracked bands: no FULL/DONE semaphores, one EXE per segment */
	bool csplit;		/* channel split: unit u takes channels [u*Cu, u*Cu + Cu) of every pixel */
	bool ccs;		/* clusters split the unit's channels (all take the same rows) */
	bool px;		/* (channel split, STREAM) PE p takes output pixels [p*tw, p*tw + tw) of an output row,
				 * th = 1: with ccs the clusters split the unit's channels (E = 1), else each takes all
				 * of them and an output row of its own (E = cols); the unit's channels need not be
				 * a multiple of the PEs (24, 36: MobileNet's 96, 144-channel layers) */
	uint32_t kcl;		/* ccs: channels between consecutive clusters (tn * pes), else 0 */
	uint32_t Cu;		/* channels per storage unit (C for the column split) */
	uint32_t OWu;		/* output columns per storage unit (unit u: [u*OWu, u*OWu + OWu)) */
	uint32_t Wpu;		/* padded input columns of a unit band */
	uint32_t tn, tw, nx, th, E;	/* channels per PE, pixels per PE row, x chunks, rows per cluster */
	uint32_t ob, nseg, in_rows, P_in, out_rp;
	uint32_t in_off, out_off, w_off, b_off;
	uint32_t padl, padr;	/* pad != 0: bytes of the padding columns at the start / end of every unit's
				 * rows (ROW_ALL: the widest of any unit with outputs) */
	uint32_t padx;		/* px: bytes at the end of padr that only PEs past the row's end read (clean) */
	uint64_t wrow;		/* written bytes of an input row in the window's multicast block */
	uint32_t cf, cl, cm;	/* chunks: first and last chunk iterations, middle chunks */
	double est;
};

/* A FILL of the padding byte over `height` rows of `width` bytes, `pitch` apart, in every unit. */
struct dw_fill {
	uint32_t off, width, pitch, height;
};

/* Work of a run's prefix or suffix after the fill (cycle-model.md, DW runs): issued instructions,
 * the slowest of distribution, MACs and drain, and one tile's exposed drain. */
struct dw_work {
	uint64_t issued, dist, mac, drain;
};

bool dw_split_init(const struct accel_caps *c, const struct dwg *g, bool csplit, bool ccs, bool stream, bool px,
		   struct dwp *d0);
int dw_split_th(const struct accel_caps *c, const struct dwg *g, struct dwp *d, uint32_t th);
/* The resources of a depthwise layer's cluster programs: the instruction buffers and register windows
 * of the weight-slot LD and of the run, the input and weight slots; wl_run: the run loads the weight
 * slot itself (its first instruction) instead of a program of its own. */
struct dw_prog {
	uint8_t buf_w, buf_run, rf_w, rf_run, islot, wslot, wl_run;
};
extern const struct dw_prog dw_prog_own;
/* The run's records from iteration k0 of x chunk xc: window, output, depthwise parameters, SFU, weights
 * (recs[4]; recs[3] only with the SFU, else the weights are recs[3] too). */
void dw_run_recs(const struct dwg *g, const struct dwp *d, const struct mm_problem *p, uint32_t k0, uint32_t xc,
		 uint8_t recs[5][32]);
void dw_config_run(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d, const struct mm_problem *p,
		   const struct dw_prog *r, unsigned h, uint32_t k0, uint32_t iters, uint32_t xc);
void dw_config_wslot(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d, const struct dw_prog *r);
void dw_bands(struct accel_cmdstream *cs, bool h2d, uint64_t va, uint64_t pz, unsigned half, uint32_t off,
	      uint32_t spz, uint32_t width, uint32_t depth, int64_t first, uint32_t step, uint32_t len,
	      uint32_t group, uint8_t flags);
uint64_t dw_fill_cycles(const struct dw_fill *f);
unsigned dw_fills(const struct dwg *g, const struct dwp *d, uint32_t s, uint32_t lo, uint32_t hi,
		  struct dw_fill f[DW_MAX_FILLS]);
void dw_fill_emit(struct accel_cmdstream *cs, unsigned half, const struct dw_fill *fl, uint8_t fill);
void dw_config(struct accel_cmdstream *cs, unsigned buf, unsigned half, const struct tnpu_cfg_hdr *h,
	       const uint16_t *ins, const void *recs, unsigned opmask);
uint64_t dw_work_cycles(const struct dw_work *a, const struct dw_work *b, uint64_t tile_drain, uint32_t rate_mc);

#endif
