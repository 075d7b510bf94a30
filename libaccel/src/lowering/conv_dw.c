/* SPDX-License-Identifier: MIT */
/*
 * conv_dw.c - depthwise convolution (groups == C == K, NHWC) on the depthwise block
 * (Documentation/libaccel.md "Depthwise convolution: the depthwise block"; hardware: DMA_BANDS_*,
 * DW MAC, MCAST LD).
 *
 * Storage unit (array row) u owns output columns [u*OWu, u*OWu + OWu) of every output row:
 * DMA_BANDS_H2D (axis X) writes its input columns with the (S-1)*dx halo into a zero-padded NHWC
 * image in the unit's half (host bytes read once), through every unit's own port.  All rows run the
 * same broadcast program: an iteration covers E = cols*th output rows, cluster c takes th of them, PE p
 * the channels [p*tn, p*tn + tn) of tw pixels; the multicast input window slides E rows per iteration,
 * so each input byte crosses the distribution unit about once.  The DW MAC chains the SFU epilogue, ST
 * writes the output tile, DMA_BANDS_D2H returns each unit's columns.  A segment (the output rows that
 * fit a half) is split into chunks so loading, computing and storing overlap; segments alternate halves.
 * Other mappings (dw_plan picks by dw_sim): units split the channels instead (DMA_BANDS axis G: unit u
 * gets the channels [u*Cu, u*Cu + Cu) of every pixel, no duplicated halo) and/or the clusters split
 * the unit's channels instead of the rows (E = th).  Weights and bias use the ports' AUX queue.
 */
#include <string.h>

#include "conv_parts.h"

#define AS TNPU_CMD_F_ASYNC
enum { DS_FULL = 0, DS_DONE = 1, DS_CFREE = 2, DS_SFREE = 4, DS_W = 6, DS_PAD = 7 };



static unsigned dw_chunks(const struct dwp *d, uint32_t n, uint32_t k0[DW_MAX_CHUNKS + 1]);
static double dw_sim(const struct accel_caps *c, const struct dwg *g, const struct dwp *d, bool sfu);
static double dw_sim_stream(const struct accel_caps *c, const struct dwg *g, const struct dwp *d, bool sfu);

static uint32_t al64(uint64_t v)
{
	return (uint32_t)((v + 63) & ~63ull);
}

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* The parts of a plan of one split (units: column or channel split; clusters: rows or channels, or with
 * px the PEs on the pixels of an output row) that do not depend on the rows per iteration; false if the
 * split cannot take the layer. */
bool dw_split_init(const struct accel_caps *c, const struct dwg *g, bool csplit, bool ccs, bool stream, bool px,
		   struct dwp *d0)
{
	uint32_t kc = ccs ? c->cols : 1;

	memset(d0, 0, sizeof(*d0));
	d0->stream = stream;
	d0->csplit = csplit;
	d0->ccs = ccs;
	d0->px = px;
	d0->Cu = csplit ? g->C / c->rows : g->C;
	if (csplit && (g->C % c->rows || (uint64_t)g->C * ACCEL_MAX(g->e, g->oe) > 65535))
		return false;	/* the band group (one pixel's channels) is a 16-bit field */
	if (px && (!csplit || !stream || d0->Cu % kc))
		return false;
	if (!px && d0->Cu % (c->pes * kc))
		return false;
	/* px: the clusters split the unit's channels (ccs) or take an output row each */
	d0->tn = px ? d0->Cu / kc : d0->Cu / (c->pes * kc);
	d0->kcl = ccs ? (px ? d0->tn : d0->tn * c->pes) : 0;
	if (!d0->tn || d0->tn > c->acc_elems)
		return false;
	d0->OWu = csplit ? g->OW : (uint32_t)cdiv(g->OW, c->rows);
	d0->Wpu = (d0->OWu - 1) * g->sx + (g->S - 1) * g->dx + 1;
	if (csplit && g->pl + g->W > d0->Wpu) {
		if (!g->fused)
			return false;	/* the image row must fit the padded SRAM row */
		d0->Wpu = g->pl + g->W;	/* the expansion writes every column: room for the ones no window reads */
	}
	if (px) {
		/* PE p takes output pixels [p*tw, p*tw + tw) of the row: the padded row holds every PE's
		 * window (those past OW compute what is never stored), so the window stays one multicast
		 * block; the columns past the padding are never written (clean, not delivered) */
		uint32_t wreal = d0->Wpu;

		d0->tw = (uint32_t)cdiv(d0->OWu, c->pes);
		d0->Wpu = ACCEL_MAX(d0->Wpu, (c->pes * d0->tw - 1) * g->sx + (g->S - 1) * g->dx + 1);
		d0->padx = (d0->Wpu - wreal) * d0->Cu * g->e;
		if ((uint64_t)d0->tw * d0->tn > c->acc_elems)
			return false;
	}
	if (g->pad) {	/* the padding columns every unit's rows need (their image columns: a band) */
		uint32_t rp = d0->Wpu;

		for (uint32_t u = 0; u < (csplit ? 1u : c->rows) && u * d0->OWu < g->OW; u++) {
			int64_t r = (int64_t)g->pl + g->W - (int64_t)u * d0->OWu * g->sx;

			rp = (uint32_t)ACCEL_MIN((int64_t)rp, ACCEL_MAX(r, 0));
		}
		d0->padl = ACCEL_MIN(g->pl, d0->Wpu) * d0->Cu * g->e;
		d0->padr = (d0->Wpu - rp) * d0->Cu * g->e;
	}
	/* written bytes of an image row in the window's block: the padding columns stay clean unless
	 * they are filled with a non-zero padding byte (then the padding rows are written too) */
	d0->wrow = (uint64_t)(g->pad ? d0->Wpu : ACCEL_MIN(d0->Wpu, g->W)) * d0->Cu * g->e - (g->pad ? d0->padx : 0);
	if (!px)
		d0->tw = ACCEL_MIN(d0->OWu, c->acc_elems / d0->tn);
	d0->nx = (uint32_t)cdiv(d0->OWu, d0->tw * (px ? c->pes : 1));
	d0->P_in = d0->Wpu * d0->Cu * g->e;
	d0->out_rp = (px ? c->pes * d0->tw : d0->OWu) * d0->Cu * g->oe;
	return ((uint64_t)(d0->tw - 1) * g->sx + (uint64_t)(g->S - 1) * g->dx) * d0->Cu + d0->tn <= 65535;
}

/* Plan d (from dw_split_init) with th output rows per cluster and iteration: the tallest segment that
 * fits a half next to the weights (and g's reserved bytes).  -1: no larger th can fit either, 0: this
 * th does not, 1: d is set (segments, layout). */
int dw_split_th(const struct accel_caps *c, const struct dwg *g, struct dwp *d, uint32_t th)
{
	uint32_t half = c->sram_bytes / 2;
	uint64_t need;

	if (th > 1 && (d->nx > 1 || d->px || (uint64_t)th * d->tw * d->tn > c->acc_elems))
		return -1;
	if ((uint64_t)(th - 1) * g->sy + (uint64_t)(g->R - 1) * g->dy + 1 > 65535)
		return -1;
	d->th = th;
	d->E = d->ccs ? th : c->cols * th;
	d->ob = (uint32_t)(cdiv(g->OH, d->E) * d->E);
	for (; d->ob >= d->E; d->ob -= d->E) {
		/* the column fill (dw_fills) writes the right padding of a row -1 and the left one of
		 * a row in_rows when a row has both: room for them around the input area */
		bool both = d->padl && d->padr;

		d->in_rows = (d->ob - 1) * g->sy + (g->R - 1) * g->dy + 1;
		d->in_off = both ? al64(d->padr) : 0;
		d->out_off = al64(d->in_off + (uint64_t)d->in_rows * d->P_in + (both ? d->padl : 0) + g->ximg);
		d->w_off = d->out_off + al64((uint64_t)d->ob * d->out_rp);
		d->b_off = d->w_off + al64((uint64_t)d->Cu * g->R * g->S * g->e);
		need = (uint64_t)d->b_off + (uint64_t)d->Cu * ACCEL_MAX(g->colb, 4u);
		if (g->xrow || g->xfix)	/* the fused lowering's buffers after the depthwise ones */
			need = al64(need) + g->xfix + (uint64_t)d->in_rows * g->xrow;
		if (need <= half)
			break;
	}
	if (d->ob < d->E)
		return 0;
	d->nseg = (uint32_t)cdiv(g->OH, d->ob);
	return 1;
}

/* Plans of one split; keeps the fastest in *best. */
static bool dw_plan_split(const struct accel_caps *c, const struct dwg *g, bool sfu, bool csplit, bool ccs,
			  bool stream, struct dwp *best, bool found)
{
	struct dwp d0;

	if (!dw_split_init(c, g, csplit, ccs, stream, false, &d0))
		return found;
	for (uint32_t th = 1; th <= (ccs ? 32u : 8u); th++) {
		struct dwp d = d0;
		int r = dw_split_th(c, g, &d, th);

		if (r < 0)
			break;
		if (!r)
			continue;
		if (stream) {	/* the lines pace the run: one chunk per segment */
			if (d.nx > 1)
				continue;
			d.cf = d.cl = d.cm = 1;
			d.est = dw_sim_stream(c, g, &d, sfu);
			if (!found || d.est < best->est) {
				*best = d;
				found = true;
			}
			continue;
		}
		for (d.cf = 1; d.cf <= 4; d.cf++)
			for (d.cl = 1; d.cl <= 4; d.cl++)
				for (d.cm = 1; d.cm <= DW_MAX_CHUNKS - 2; d.cm++) {
					d.est = dw_sim(c, g, &d, sfu);
					if (!found || d.est < best->est) {
						*best = d;
						found = true;
					}
				}
	}
	return found;
}

/* Every mapping (bit 1: units split channels, bit 0: clusters split channels) is a candidate; the
 * replayed cycle model picks (ties: the earlier one).  map = 1 + m forces mapping m (sim option). */
static bool dw_plan(const struct accel_caps *c, const struct dwg *g, bool sfu, unsigned map, bool stream,
		    bool only_stream, struct dwp *best)
{
	bool found = false;

	for (unsigned st = only_stream && stream; st <= (unsigned)stream; st++)
		for (unsigned m = 0; m < 4; m++)
			if (!map || map == m + 1)
				found = dw_plan_split(c, g, sfu, m & 2, m & 1, st, best, found);
	return found;
}

/* group 0: AXIS_X bands of every row's bytes; else AXIS_G bands of every group of `group` bytes. */
void dw_bands(struct accel_cmdstream *cs, bool h2d, uint64_t va, uint64_t pz, unsigned half, uint32_t off,
		     uint32_t spz, uint32_t width, uint32_t depth, int64_t first, uint32_t step, uint32_t len,
		     uint32_t group, uint8_t flags)
{
	struct tnpu_cmd_dma_bands b = {
		.hdr = { .opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H, .flags = AS,
			 .size = sizeof(b) },
		.host_va = va, .host_pitch_z = pz, .sram_off = off, .sram_pitch_z = spz, .width = width,
		.height = 1, .depth = depth, .band_first = (int32_t)first, .band_step = step, .band_len = len,
		.half = (uint8_t)half, .axis = (uint8_t)((group ? TNPU_BANDS_AXIS_G : TNPU_BANDS_AXIS_X) | flags),
		.group = (uint16_t)group,
	};

	cs_raw(cs, &b, sizeof(b));
}


uint64_t dw_fill_cycles(const struct dw_fill *f)
{
	return TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (uint64_t)f->height * ACCEL_MAX(1, cdiv(f->width, TNPU_RATE_DMA));
}

/* SRAM rows [r0, r0 + rows) of the input area, one FILL row. */
static struct dw_fill dw_rows_fill(const struct dwp *d, uint32_t r0, uint32_t rows)
{
	return (struct dw_fill){ .off = d->in_off + r0 * d->P_in, .width = rows * d->P_in, .height = 1 };
}

/*
 * The FILLs before the band of SRAM rows [lo, hi) of segment s (dw_segment emits them, dw_sim and
 * dw_sim_stream count them), at most DW_MAX_FILLS.  Padding taps must read the padding byte: the SRAM's own
 * zeros at pad 0 (clean lines since the job start), else the int8 input zero point.
 * - Padding rows (outside the image): at a half's first use when pad != 0; when an earlier segment
 *   on the half wrote them (several segments per image: another segment's image rows sit there;
 *   with one segment per image every segment of a half puts the same image rows at the same SRAM
 *   rows, so its padding rows are never overwritten).  Rows above and below the image in one chunk
 *   take one FILL of two rows when that is cheaper (not in the fused job, whose expansion writes the
 *   image rows that FILL would cover before or while it runs).
 * - Padding columns (pad != 0, first chunk of a half's first use): no band ever writes them, so one
 *   FILL serves every segment.  Row r's right padding and row r + 1's left padding are adjacent:
 *   one FILL row covers both: ceil((left + right bytes) / 128) cycles per SRAM row (filling whole
 *   rows cost every row's bytes at 128 B/cycle: 2.5k cycles per half at 112x112x96 stride 2).
 *   ROW_ALL writes these bytes in every unit, also where they are a unit's image columns: the band
 *   that follows overwrites them.
 */
unsigned dw_fills(const struct dwg *g, const struct dwp *d, uint32_t s, uint32_t lo, uint32_t hi,
			 struct dw_fill f[DW_MAX_FILLS])
{
	uint32_t y0 = (s % d->nseg) * d->ob, rows = ACCEL_MIN(d->ob, g->OH - y0), n = 0, nt, nb;
	int64_t iy0 = (int64_t)y0 * g->sy - g->pt;	/* image row of SRAM row 0 */
	int64_t t1, b0;

	/* rows past the last output row's window feed only the iterations' surplus rows (not stored) */
	hi = ACCEL_MIN(hi, (rows - 1) * g->sy + (g->R - 1) * g->dy + 1);
	lo = ACCEL_MIN(lo, hi);
	t1 = ACCEL_MIN(ACCEL_MAX(-iy0, (int64_t)lo), (int64_t)hi);	/* rows [lo, t1) above the image */
	b0 = ACCEL_MAX(ACCEL_MIN((int64_t)g->H - iy0, (int64_t)hi), t1);	/* rows [b0, hi) below */
	nt = (uint32_t)(t1 - lo);
	nb = (uint32_t)(hi - b0);

	if (g->pad && s < 2 && lo == 0 && d->padx) {
		/* the columns past the right padding stay clean: a FILL per padding side */
		if (d->padl)
			f[n++] = (struct dw_fill){ .off = d->in_off, .width = d->padl, .pitch = d->P_in,
						   .height = d->in_rows };
		if (d->padr > d->padx)
			f[n++] = (struct dw_fill){ .off = d->in_off + d->P_in - d->padr, .width = d->padr - d->padx,
						   .pitch = d->P_in, .height = d->in_rows };
	} else if (g->pad && s < 2 && lo == 0 && (d->padl || d->padr)) {
		f[n++] = (struct dw_fill){ .off = d->in_off + (d->padl ? 0 : d->P_in) - d->padr,
					   .width = d->padl + d->padr, .pitch = d->P_in,
					   .height = d->in_rows + (d->padl && d->padr) };
	}
	if (!(s >= 2 && d->nseg > 1) && !(g->pad && s < 2))
		return n;
	if (nt && nb && b0 > t1 && !g->fused) {
		/* [lo, lo + m) and [hi - m, hi): rows of the image in between that the wider one also
		 * covers get the band after it */
		uint32_t m = ACCEL_MAX(nt, nb);
		struct dw_fill two = { .off = d->in_off + lo * d->P_in, .width = m * d->P_in,
				       .pitch = (hi - lo - m) * d->P_in, .height = 2 };
		struct dw_fill top = dw_rows_fill(d, lo, nt), bot = dw_rows_fill(d, (uint32_t)b0, nb);

		if (dw_fill_cycles(&two) <= dw_fill_cycles(&top) + dw_fill_cycles(&bot)) {
			f[n++] = two;
		} else {
			f[n++] = top;
			f[n++] = bot;
		}
	} else if (nt && nb && b0 > t1) {	/* the image rows in between are written already (fused) */
		f[n++] = dw_rows_fill(d, lo, nt);
		f[n++] = dw_rows_fill(d, (uint32_t)b0, nb);
	} else if (nt || nb) {	/* one run of rows: above, below or (both) the whole chunk */
		uint32_t r0 = nt ? lo : (uint32_t)b0, r1 = nb ? hi : (uint32_t)t1;

		f[n++] = dw_rows_fill(d, r0, r1 - r0);
	}
	return n;
}

void dw_fill_emit(struct accel_cmdstream *cs, unsigned half, const struct dw_fill *fl, uint8_t fill)
{
	struct tnpu_cmd_dma f = {
		.hdr = { .opcode = TNPU_CMD_DMA_H2D, .flags = AS, .size = sizeof(f) },
		.sram_off = fl->off, .sram_pitch_y = fl->pitch, .width = fl->width, .height = fl->height, .depth = 1,
		.row = TNPU_DMA_ROW_ALL, .half = (uint8_t)half, .dma_flags = TNPU_DMA_F_FILL, .fill = fill,
	};

	cs_raw(cs, &f, sizeof(f));
}

static struct tnpu_operand opnd(uint32_t addr, int32_t cs, int32_t ps, uint32_t pitch, uint32_t rows, uint32_t cols,
				uint8_t dt, uint8_t flags, int32_t su)
{
	struct tnpu_operand o = {
		.addr = addr, .col_stride = cs, .pe_stride = ps, .pitch = pitch, .rows = (uint16_t)rows,
		.cols = (uint16_t)cols, .dtype = dt, .flags = flags, .su_delta = su,
	};

	return o;
}

/* CONFIG of instruction buffer `buf` broadcast to every row: h's n_instr instructions and n_operands
 * records, those whose bit is set in opmask operand records (checked against the half). */
void dw_config(struct accel_cmdstream *cs, unsigned buf, unsigned half, const struct tnpu_cfg_hdr *h,
	       const uint16_t *ins, const void *recs, unsigned opmask)
{
	struct pkt p;

	cfg_begin(&p, buf, h);
	cfg_insns(&p, ins, h->n_instr);
	for (unsigned i = 0; i < h->n_operands; i++) {
		const uint8_t *r = (const uint8_t *)recs + 32u * i;

		if (opmask & (1u << i))
			cfg_operands(&p, (const struct tnpu_operand *)(const void *)r, 1);
		else
			cfg_record(&p, r);
	}
	pkt_dispatch(cs, &p, AS, TNPU_DISPATCH_ROW_ALL, half, 0);
}

/* The layer's own job: the weight-slot LD in buffer 0 (register window 0), the run in buffer 1
 * (window 16), input and weight slot 0. */
const struct dw_prog dw_prog_own = { .buf_w = 0, .buf_run = 1, .rf_w = 0, .rf_run = 16, .islot = 0, .wslot = 0 };

/* The weight operand: C x R*S, one row per channel (OHWI with I = 1; the channel split: each unit its
 * Cu channels' rows), PE p of cluster c its tn channels' rows. */
static struct tnpu_operand dw_wopnd(const struct dwg *g, const struct dwp *d)
{
	return opnd(d->w_off, (int32_t)(d->kcl * g->R * g->S * g->e), d->px ? 0 : (int32_t)(d->tn * g->R * g->S * g->e),
		    g->R * g->S * g->e, d->tn, g->R * g->S, g->dt, TNPU_OPF_TRANS, 0);
}

void dw_run_recs(const struct dwg *g, const struct dwp *d, const struct mm_problem *p, uint32_t k0, uint32_t xc,
		 uint8_t recs[5][32])
{
	uint32_t twx = ACCEL_MIN(d->tw, d->OWu - xc * d->tw), nrec = p->use_sfu ? 4 : 3;
	struct tnpu_operand a, o, wo = dw_wopnd(g, d);
	struct tnpu_dw_param dp = {
		.oh = (uint16_t)d->th, .ow = (uint16_t)twx, .pix = (uint16_t)d->Cu, .r = (uint8_t)g->R,
		.s = (uint8_t)g->S, .stride_y = (uint8_t)g->sy, .stride_x = (uint8_t)g->sx,
		.dil_y = (uint8_t)g->dy, .dil_x = (uint8_t)g->dx,
	};
	struct tnpu_sfu_param sp = p->sfu;

	/* PE p: channel block p (or with px the pixels [p*tw, p*tw + tw) of the row) */
	a = opnd(d->in_off + k0 * d->E * g->sy * d->P_in + xc * d->tw * g->sx * d->Cu * g->e,
		 (int32_t)(d->ccs ? d->kcl * g->e : d->th * g->sy * d->P_in),
		 (int32_t)(d->px ? d->tw * g->sx * d->Cu * g->e : d->tn * g->e), d->P_in,
		 (d->th - 1) * g->sy + (g->R - 1) * g->dy + 1, ((twx - 1) * g->sx + (g->S - 1) * g->dx) * d->Cu + d->tn,
		 g->dt, 0, (int32_t)(d->E * g->sy * d->P_in));
	o = opnd(d->out_off + k0 * d->E * d->out_rp + xc * d->tw * d->Cu * g->oe,
		 (int32_t)(d->ccs ? d->kcl * g->oe : d->th * d->out_rp),
		 (int32_t)((d->px ? d->tw * d->Cu : d->tn) * g->oe), d->Cu * g->oe, d->th * twx, d->tn, g->out_dt, 0,
		 (int32_t)(d->E * d->out_rp));
	sp.bias_addr = d->b_off;
	sp.bias_col_stride = (int32_t)(d->kcl * ACCEL_MAX(g->colb, 4u));
	sp.bias_pe_stride = d->px ? 0 : (int32_t)(d->tn * ACCEL_MAX(g->colb, 4u));
	memset(recs, 0, 5 * 32);
	memcpy(recs[0], &a, 32);
	memcpy(recs[1], &o, 32);
	memcpy(recs[2], &dp, 32);
	if (p->use_sfu)
		memcpy(recs[3], &sp, 32);
	memcpy(recs[nrec], &wo, 32);
	if (nrec == 3)
		memcpy(recs[4], &wo, 32);
}

/* Buffer r->buf_run = `iters` passes of {LD window (multicast, sliding), DW MAC (+ chained SFU), ST} from
 * iteration k0 of x chunk xc; the scalar unit moves both windows E rows down per pass.  r->wl_run: the
 * weight-slot LD first, once per EXE (a job whose other programs use the weight slots in between). */
void dw_config_run(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d, const struct mm_problem *p,
		   const struct dw_prog *r, unsigned h, uint32_t k0, uint32_t iters, uint32_t xc)
{
	uint32_t w = r->wl_run, nrec = p->use_sfu ? 4 : 3;
	uint8_t recs[5][32];
	struct tnpu_cfg_hdr hd = {
		.n_instr = (uint8_t)(3 + w), .n_operands = (uint8_t)(nrec + w), .rf_base = r->rf_run,
		.mode = TNPU_CFG_MODE_PIPE4 | TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .loop_start = (uint8_t)w,
		.loop_end = (uint8_t)(2 + w), .repeat = (uint16_t)iters, .sfu_rf = 3, .dw_rf = 2,
	};
	uint16_t ins[4] = {
		TNPU_INSN_LD(nrec, r->wslot, true, false),
		(uint16_t)(TNPU_INSN_LD(0, r->islot, false, false) | TNPU_LD_MCAST | (g->wide ? TNPU_LD_WIDE : 0)),
		(uint16_t)(TNPU_INSN_MAC(r->islot, r->wslot, 0, false, p->use_sfu) | TNPU_MAC_DW),
		TNPU_INSN_ST(0, 1, !p->use_sfu),
	};

	dw_run_recs(g, d, p, k0, xc, recs);
	/* the window and the output, and the weights' LD: operand records; the depthwise and SFU
	 * parameter records are not */
	dw_config(cs, r->buf_run, h, &hd, ins + !w, recs, 0x3u | (w ? 1u << nrec : 0));
}

/* Buffer r->buf_w = the LD of the weights into weight slot r->wslot (RQ: it stays valid for every DW
 * MAC), register window r->rf_w. */
void dw_config_wslot(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d, const struct dw_prog *r)
{
	struct tnpu_operand b = dw_wopnd(g, d);
	struct tnpu_cfg_hdr hd = { .n_instr = 1, .n_operands = 1, .rf_base = r->rf_w,
				   .mode = TNPU_CFG_MODE_WQ_PUT(TNPU_WQ_RQ), .repeat = 1 };
	uint16_t ins = TNPU_INSN_LD(0, r->wslot, true, false);

	dw_config(cs, r->buf_w, 0, &hd, &ins, &b, 0x1u);
}

/* Job prologue: weights and bias in the halves (the channel split: each unit its Cu channels' rows),
 * then buffer 0 = the weight-slot LD (dw_config_wslot), run once. */
static void dw_prologue(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d,
			const struct mm_problem *p, unsigned halves)
{
	struct pkt exe;
	uint32_t wl = d->Cu * g->R * g->S * g->e, ws = d->csplit ? wl : 0;
	uint8_t fl = (uint8_t)(TNPU_BANDS_F_AUX | (d->stream ? TNPU_BANDS_F_STREAM : 0));

	/* column split: every unit the same band (step 0); channel split: unit u its channels' rows.
	 * On the ports' AUX queue: their setup overlaps the first input band (commands.md).  STREAM:
	 * the weight-slot LD waits for the weight lines themselves, no semaphore. */
	for (unsigned h = 0; h < halves; h++) {
		dw_bands(cs, true, g->w_va, 0, h, d->w_off, 0, g->C * g->R * g->S * g->e, 1, 0, ws, wl, 0, fl);
		if (g->colb)
			dw_bands(cs, true, p->bias_va, 0, h, d->b_off, 0, g->C * g->colb, 1, 0,
				 d->csplit ? d->Cu * g->colb : 0, d->Cu * g->colb, 0, fl);
		if (!h && !d->stream)	/* half 0's weights are in: the weight-slot LD may read them */
			cs_sem(cs, true, AS, TNPU_ENGINE_LOAD, DS_W, 1);
	}
	dw_config_wslot(cs, g, d, &dw_prog_own);
	if (!d->stream)
		cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, DS_W, 1);
	exe_begin(&exe, 0, 0);
	pkt_dispatch(cs, &exe, AS, TNPU_DISPATCH_ROW_ALL, 0, 0);
}

/* Chunks of a segment's n iterations: first chunk cf iterations (its load is not hidden), last
 * chunk cl (its store is not hidden), the rest in cm equal chunks; k0[0..m] are the boundaries. */
static unsigned dw_chunks(const struct dwp *d, uint32_t n, uint32_t k0[DW_MAX_CHUNKS + 1])
{
	unsigned m = 0;
	uint32_t f = d->stream ? n : ACCEL_MIN(d->cf, n), l = n > f ? ACCEL_MIN(d->cl, n - f) : 0, mid = n - f - l,
		 per, k;

	k0[m++] = 0;
	k0[m++] = k = f;
	if (mid) {
		per = (uint32_t)cdiv(mid, ACCEL_MIN(d->cm, mid));
		while (k < f + mid) {
			k = ACCEL_MIN(f + mid, k + per);
			k0[m++] = k;
		}
	}
	if (l)
		k0[m++] = n;
	return m - 1;
}

/* Modeled job cycles of a plan (cycle-model.md applied to the stream dw_segment emits): the load,
 * compute (every row alike) and store engines with the FULL/DONE/FREE token dependencies. */
static double dw_sim(const struct accel_caps *c, const struct dwg *g, const struct dwp *d, bool sfu)
{
	uint32_t rate = g->dt == TNPU_DTYPE_INT8 ? c->rate_int8 : c->rate_fp32, total = g->N * d->nseg;
	uint64_t tw = d->tw, th = d->th, box_w, mac, sfu_c, st, lrow, srow, L = 0, C = 0, S = 0, A, wx, bx;
	uint64_t cend[2] = { 0, 0 }, send[2] = { 0, 0 };

	box_w = (((tw - 1) * g->sx + (uint64_t)(g->S - 1) * g->dx) * d->Cu + d->Cu) * g->e;
	mac = cdiv(th * tw * d->tn * g->R * g->S, rate);
	sfu_c = sfu ? cdiv(th * tw * d->tn, 16) : cdiv(th * tw * d->tn, 64);
	st = cdiv(th * tw * d->tn * g->oe * c->pes, 128);
	lrow = cdiv((uint64_t)(d->csplit ? g->W : d->Wpu) * d->Cu * g->e, TNPU_RATE_DMA_PORT);
	srow = cdiv(d->out_rp, TNPU_RATE_DMA_PORT);
	/* prologue: weights (and bias) per used half on the AUX queue: the load engine pays the issue and
	 * the port cycles, the AUX queue the whole transfer; every FULL token waits for the AUX queue */
	wx = cdiv((uint64_t)d->Cu * g->R * g->S * g->e, TNPU_RATE_DMA_PORT);
	bx = g->colb ? cdiv((uint64_t)d->Cu * g->colb, TNPU_RATE_DMA_PORT) : 0;
	A = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + wx + (g->colb ? TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + bx : 0);
	L = TNPU_CYC_CMD + wx + (g->colb ? TNPU_CYC_CMD + bx : 0) + TNPU_CYC_CMD;
	/* the weight-slot LD (buffer 0) after its SEM_WAIT + DISPATCH */
	C = A + 2 * TNPU_CYC_CMD + TNPU_CYC_DISPATCH + 1 + TNPU_CYC_EXE + 1 +
	    cdiv((uint64_t)d->Cu * g->R * g->S * g->e, c->rate_dispatch);
	if (total > 1) {
		A *= 2;
		L += L - TNPU_CYC_CMD;
	}
	for (uint32_t s = 0; s < total; s++) {
		uint32_t y0 = (s % d->nseg) * d->ob, rows = ACCEL_MIN(d->ob, g->OH - y0), lo = 0;
		uint32_t n = (uint32_t)cdiv(rows, d->E), k0[DW_MAX_CHUNKS + 1];
		unsigned nch = dw_chunks(d, n, k0), h = s & 1;
		uint64_t lend[DW_MAX_CHUNKS], ce[DW_MAX_CHUNKS];

		if (s >= 2)
			L = ACCEL_MAX(L, cend[h]);
		int64_t iy0 = (int64_t)y0 * g->sy - g->pt;

		for (unsigned j = 0; j < nch; j++) {
			uint32_t hi = ACCEL_MIN(d->in_rows, (k0[j + 1] * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1);
			int64_t r0 = ACCEL_MAX(iy0 + lo, 0), r1 = ACCEL_MIN(iy0 + hi, (int64_t)g->H);
			struct dw_fill f[DW_MAX_FILLS];
			unsigned nf = dw_fills(g, d, s, lo, hi, f);

			for (unsigned i = 0; i < nf; i++)
				L += dw_fill_cycles(&f[i]);
			/* the rows inside the image, then the FULL signal (CYC_CMD on the load engine) */
			L += TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (uint64_t)ACCEL_MAX(r1 - r0, 0) * lrow;
			lo = hi;
			lend[j] = ACCEL_MAX(L, A);
			L += TNPU_CYC_CMD;
		}
		if (s >= 2)
			C = ACCEL_MAX(C, send[h]);
		for (unsigned j = 0; j < nch; j++) {
			uint64_t k = k0[j + 1] - k0[j], rows_in = j ? k * d->E * g->sy :
				(k * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1;
			uint64_t dist = cdiv(rows_in * box_w, c->rate_dispatch);	/* conservative: see conv_dw_lower */

			uint64_t busy = TNPU_CYC_EXE + 3 * k + ACCEL_MAX(ACCEL_MAX(dist, k * mac), k * (sfu_c + st)) +
					sfu_c + st;

			/* CONFIG parsed ahead; the EXE leaves the compute engine a SEM_WAIT + DISPATCH after FULL */
			C = ACCEL_MAX(C + 2, lend[j] + 2 * TNPU_CYC_CMD + TNPU_CYC_DISPATCH + 1) + busy +
			    (d->nx - 1) * (2 + busy);
			ce[j] = C;
		}
		cend[h] = C;
		for (unsigned j = 0; j < nch; j++) {
			uint32_t r1 = ACCEL_MIN(k0[j + 1] * d->E, rows), r0 = k0[j] * d->E;

			S = ACCEL_MAX(S, ce[j]) + 2 * TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + (uint64_t)(r1 - r0) * srow;
		}
		send[h] = S;
	}
	return (double)(ACCEL_MAX(ACCEL_MAX(L, C), S) + TNPU_CYC_JOB);
}


uint64_t dw_work_cycles(const struct dw_work *a, const struct dw_work *b, uint64_t tile_drain,
			       uint32_t rate_mc)
{
	return (a->issued - b->issued) +
	       ACCEL_MAX(ACCEL_MAX(cdiv(a->dist - b->dist, rate_mc), a->mac - b->mac), a->drain - b->drain) +
	       tile_drain;
}

/* dw_sim for STREAM plans (cycle-model.md "Line-tracked reads"): input rows land one after the other,
 * each iteration's LD waits for its last row, outputs are written when the run's work so far is done
 * and the store port drains each output row once written.  Clean (padding) lines are not delivered. */
static double dw_sim_stream(const struct accel_caps *c, const struct dwg *g, const struct dwp *d, bool sfu)
{
	uint32_t rate = g->dt == TNPU_DTYPE_INT8 ? c->rate_int8 : c->rate_fp32, total = g->N * d->nseg;
	uint64_t tw = d->tw, th = d->th, mac, sfu_c, st, lrow, srow, wrow, wb, wx, bx, A, L, C, S = 0;
	uint64_t cend[2] = { 0, 0 }, send[2] = { 0, 0 }, issue1 = TNPU_CYC_CMD + TNPU_CYC_DISPATCH + 1;

	mac = cdiv(th * tw * d->tn * g->R * g->S, rate);
	sfu_c = sfu ? cdiv(th * tw * d->tn, 16) : cdiv(th * tw * d->tn, 64);
	st = cdiv(th * tw * d->tn * g->oe * c->pes, 128);
	lrow = cdiv((uint64_t)(d->csplit ? g->W : d->Wpu) * d->Cu * g->e, TNPU_RATE_DMA_PORT);
	srow = cdiv(d->out_rp, TNPU_RATE_DMA_PORT);
	wrow = d->wrow;	/* written bytes of one input row in the multicast block */
	wb = (uint64_t)d->Cu * g->R * g->S * g->e;
	wx = cdiv(wb, TNPU_RATE_DMA_PORT);
	bx = g->colb ? cdiv((uint64_t)d->Cu * g->colb, TNPU_RATE_DMA_PORT) : 0;
	A = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + wx + (g->colb ? TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + bx : 0);
	L = TNPU_CYC_CMD + wx + (g->colb ? TNPU_CYC_CMD + bx : 0);
	if (total > 1) {
		A *= 2;
		L *= 2;
	}
	/* the weight-slot LD: CONFIG + EXE dispatches and the fill, then the weight lines */
	C = ACCEL_MAX(2 * issue1 + 2 + TNPU_CYC_EXE, A) + 1 + cdiv(wb, c->rate_dispatch);
	for (uint32_t s = 0; s < total; s++) {
		uint32_t y0 = (s % d->nseg) * d->ob, rows = ACCEL_MIN(d->ob, g->OH - y0);
		uint32_t n = (uint32_t)cdiv(rows, d->E), lo = 0;
		unsigned h = s & 1;
		int64_t iy0 = (int64_t)y0 * g->sy - g->pt;
		int64_t r0 = ACCEL_MAX(iy0, 0), r1 = ACCEL_MIN(iy0 + (int64_t)d->in_rows, (int64_t)g->H);
		uint64_t land0, t0, out_prev = 0, pad_t = 0;
		struct dw_work w = { 0 }, pre[256];
		uint64_t ready[256];
		struct dw_fill f[DW_MAX_FILLS];
		unsigned nw = 0, nf;

		if (s >= 2)
			L = ACCEL_MAX(L, cend[h]);
		/* the FILLs, then the token the EXE waits for */
		nf = dw_fills(g, d, s, 0, ACCEL_MIN(d->in_rows, (n * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1), f);
		for (unsigned i = 0; i < nf; i++)
			L += dw_fill_cycles(&f[i]);
		if (nf) {
			pad_t = L;
			L += TNPU_CYC_CMD;
		}
		land0 = L + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;	/* image row r lands at land0 + (r - r0 + 1) * lrow */
		L = land0 + (uint64_t)ACCEL_MAX(r1 - r0, 0) * lrow;
		if (s >= 2)
			C = ACCEL_MAX(C, send[h]);
		/* CONFIG of the run (parsed ahead) and the EXE, after the FILLs' token */
		t0 = nf ? ACCEL_MAX(C + issue1 + 2, pad_t) + TNPU_CYC_CMD + issue1 : C + 2 * issue1 + 2;
		S = ACCEL_MAX(S, s >= 2 ? send[h] : 0);
		S += TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t hi = ACCEL_MIN(d->in_rows, ((k + 1) * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1);
			int64_t last = ACCEL_MIN(iy0 + (int64_t)hi, (int64_t)g->H) - 1, img = 0, out_t;
			uint32_t o0 = k * d->E, o1 = ACCEL_MIN((k + 1) * d->E, rows);

			for (uint32_t j = lo; j < hi; j++)	/* pad != 0: filled rows are written */
				img += g->pad || (iy0 + j >= 0 && iy0 + j < (int64_t)g->H);
			if (last >= r0 && nw < 256) {
				ready[nw] = land0 + (uint64_t)(last - r0 + 1) * lrow;
				pre[nw++] = w;
			}
			w.issued += 3;
			w.dist += (uint64_t)img * wrow;
			w.mac += mac;
			w.drain += sfu_c + st;
			lo = hi;
			out_t = (int64_t)(t0 + TNPU_CYC_EXE + dw_work_cycles(&w, &(struct dw_work){ 0 }, sfu_c + st, g->rate_mc));
			for (unsigned i = 0; i < nw; i++)
				out_t = ACCEL_MAX(out_t, (int64_t)(ready[i] + dw_work_cycles(&w, &pre[i], sfu_c + st, g->rate_mc)));
			out_prev = (uint64_t)out_t;
			S = ACCEL_MAX(S, out_prev) + (uint64_t)(o1 - o0) * srow;
		}
		C = out_prev;
		cend[h] = C;
		send[h] = S;
	}
	return (double)(ACCEL_MAX(ACCEL_MAX(L, C), S) + TNPU_CYC_JOB);
}

static void dw_segment(struct accel_cmdstream *cs, const struct dwg *g, const struct dwp *d,
		       const struct mm_problem *p, uint32_t s, uint32_t total)
{
	unsigned h = s & 1, nch;
	uint32_t b = s / d->nseg, y0 = (s % d->nseg) * d->ob, rows = ACCEL_MIN(d->ob, g->OH - y0);
	uint32_t n = (uint32_t)cdiv(rows, d->E), k0[DW_MAX_CHUNKS + 1], lo = 0;
	int64_t iy0 = (int64_t)y0 * g->sy - g->pt;	/* image row of SRAM row 0 */
	struct dw_fill f[DW_MAX_FILLS];
	unsigned nf;
	bool pad_wait;
	struct pkt exe;
	uint8_t sf = d->stream ? TNPU_BANDS_F_STREAM : 0;	/* STREAM: the lines replace FULL/DONE */

	exe_begin(&exe, 1, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT);
	nch = dw_chunks(d, n, k0);
	/* STREAM: one chunk, whose FILLs the EXE waits for */
	pad_wait = d->stream && dw_fills(g, d, s, 0, ACCEL_MIN(d->in_rows, (k0[1] * d->E - 1) * g->sy +
								(g->R - 1) * g->dy + 1), f);
	/* load engine: each chunk's new input rows, every unit its column band (one DMA_BANDS_H2D) */
	if (s >= 2)
		cs_sem(cs, false, AS, TNPU_ENGINE_LOAD, DS_CFREE + h, 1);
	for (unsigned j = 0; j < nch; j++) {
		uint32_t hi = ACCEL_MIN(d->in_rows, (k0[j + 1] * d->E - 1) * g->sy + (g->R - 1) * g->dy + 1);
		int64_t r0 = ACCEL_MAX(iy0 + lo, 0), r1 = ACCEL_MIN(iy0 + hi, (int64_t)g->H);

		nf = dw_fills(g, d, s, lo, hi, f);
		for (unsigned i = 0; i < nf; i++)
			dw_fill_emit(cs, h, &f[i], g->pad);
		/* a FILL is a plain write: STREAM's LDs wait only for line-tracked bands, so the EXE
		 * waits for this token (the chunks' FULL tokens cover it otherwise) */
		if (nf && d->stream)
			cs_sem(cs, true, AS, TNPU_ENGINE_LOAD, DS_PAD, 1);
		if (r1 > r0 && d->csplit)	/* each pixel's Cu channels, packed after pl zero pixels */
			dw_bands(cs, true, g->in_va + (uint64_t)b * g->in_sn + (uint64_t)r0 * g->in_sh, g->in_sh, h,
				 d->in_off + (uint32_t)(r0 - iy0) * d->P_in + g->pl * d->Cu * g->e, d->P_in,
				 g->W * g->C * g->e, (uint32_t)(r1 - r0), 0, d->Cu * g->e, d->Cu * g->e, g->C * g->e, sf);
		else if (r1 > r0)
			dw_bands(cs, true, g->in_va + (uint64_t)b * g->in_sn + (uint64_t)r0 * g->in_sh, g->in_sh, h,
				 d->in_off + (uint32_t)(r0 - iy0) * d->P_in, d->P_in, g->W * g->C * g->e, (uint32_t)(r1 - r0),
				 -(int64_t)g->pl * g->C * g->e, d->OWu * g->sx * g->C * g->e, d->Wpu * g->C * g->e, 0, sf);
		lo = ACCEL_MAX(lo, hi);
		if (!d->stream)
			cs_sem(cs, true, AS, TNPU_ENGINE_LOAD, DS_FULL, 1);
	}
	/* compute engine: one EXE per chunk and x chunk runs the chunk's iterations */
	if (s >= 2)
		cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, DS_SFREE + h, 1);
	for (unsigned j = 0; j < nch; j++) {
		/* the first CONFIG does not touch the chunk's rows: it is issued before the wait */
		dw_config_run(cs, g, d, p, &dw_prog_own, h, k0[j], k0[j + 1] - k0[j], 0);
		if (!d->stream)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, DS_FULL, 1);
		else if (pad_wait)
			cs_sem(cs, false, AS, TNPU_ENGINE_COMPUTE, DS_PAD, 1);
		for (uint32_t xc = 0; xc < d->nx; xc++) {
			if (xc)
				dw_config_run(cs, g, d, p, &dw_prog_own, h, k0[j], k0[j + 1] - k0[j], xc);
			pkt_dispatch(cs, &exe, AS, TNPU_DISPATCH_ROW_ALL, h, 0);
		}
		if (!d->stream)
			cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, DS_DONE, 1);
	}
	if (s + 2 < total)
		cs_sem(cs, true, AS, TNPU_ENGINE_COMPUTE, DS_CFREE + h, 1);
	/* store engine: each chunk's output rows, every unit its column band */
	for (unsigned j = 0; j < nch; j++) {
		uint32_t r0 = k0[j] * d->E, r1 = ACCEL_MIN(k0[j + 1] * d->E, rows);

		if (!d->stream)
			cs_sem(cs, false, AS, TNPU_ENGINE_STORE, DS_DONE, 1);
		if (d->csplit)
			dw_bands(cs, false, g->out_va + (uint64_t)b * g->out_sn + (uint64_t)(y0 + r0) * g->out_sh,
				 g->out_sh, h, d->out_off + r0 * d->out_rp, d->out_rp, g->OW * g->C * g->oe, r1 - r0, 0,
				 d->Cu * g->oe, d->Cu * g->oe, g->C * g->oe, sf);
		else
			dw_bands(cs, false, g->out_va + (uint64_t)b * g->out_sn + (uint64_t)(y0 + r0) * g->out_sh,
				 g->out_sh, h, d->out_off + r0 * d->out_rp, d->out_rp, g->OW * g->C * g->oe, r1 - r0, 0,
				 d->out_rp, d->out_rp, 0, sf);
	}
	if (s + 2 < total)
		cs_sem(cs, true, AS, TNPU_ENGINE_STORE, DS_SFREE + h, 1);
}

/* The geometry of a depthwise convolution the block can take into g (its plan into d); 1 if it cannot. */
static int dw_geom(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p, struct dwg *gp, struct dwp *dp)
{
	const struct accel_tensor *in = cd->input, *wt = cd->weights, *out = cd->output;
	const struct accel_caps *c = x->caps;
	struct dwg g;

	if (dev->dw_off || !(c->features & TNPU_FEAT_DEPTHWISE) || x->no_direct)
		return 1;
	if (in->layout != ACCEL_LAYOUT_NHWC || out->layout != ACCEL_LAYOUT_NHWC || cd->groups != in->shape[1] ||
	    wt->shape[0] != in->shape[1] || wt->shape[1] != 1)
		return 1;
	memset(&g, 0, sizeof(g));
	g.dt = p->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8;
	/* int8 padding reads the input zero point: the padding rows and columns are filled with it
	 * (dw_fills; a filled line is written, not clean, so it is delivered) */
	g.pad = (uint8_t)(int8_t)cd->input_zero_point;
	g.out_dt = p->out_dtype;
	g.e = p->f32 ? 4 : 1;
	g.oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	CONV_SHAPE_FILL(g, cd);
	g.colb = mm_has_cols(p) ? mm_col_bytes(p) : 0;
	/* WIDE multicast (isa.md "WIDE") whenever the device has it.  dw_sim (plans with semaphores)
	 * keeps estimating the window at the distribution unit's rate: it counts the padding lines the
	 * hardware skips, so at the wide rate it would under-estimate and prefer semaphore plans that are
	 * slower than the STREAM plan it is compared with; dw_sim_stream (written lines only) uses rate_mc. */
	g.wide = (c->features & TNPU_FEAT_DW_WIDE) && !dev->dw_narrow;
	g.rate_mc = g.wide ? TNPU_RATE_WIDE_MCAST : c->rate_dispatch;
	if (g.R > 255 || g.S > 255 || g.C > 65535 || in->strides[3] != (int64_t)g.C * g.e ||
	    wt->strides[0] != (int64_t)g.R * g.S * g.e ||
	    out->strides[3] != (int64_t)g.C * g.oe || out->strides[1] != (int64_t)g.oe)
		return 1;
	if (!dw_plan(c, &g, p->use_sfu, dev->dw_map, (c->features & TNPU_FEAT_STREAM) && dev->stream_off != 1,
		     dev->stream_off == 2, dp))
		return 1;
	*gp = g;
	return 0;
}

/* Does the depthwise block take this convolution (a plan that fits; conv_dw_lower may still refuse a
 * command stream above the cut)? */
bool conv_dw_takes(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p)
{
	struct dwg g;
	struct dwp d = { 0 };

	return !dw_geom(dev, x, cd, p, &g, &d);
}

/* Returns 1 if the convolution is not eligible (caller takes another lowering), 0 or -errno. */
int conv_dw_lower(struct accel_dev *dev, struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		  const struct mm_problem *p)
{
	const struct accel_tensor *in = cd->input, *wt = cd->weights, *out = cd->output;
	struct dwg g;
	struct dwp d = { 0 };
	uint32_t total;
	uint64_t est_bytes;

	if (dw_geom(dev, x, cd, p, &g, &d))
		return 1;
	total = g.N * d.nseg;
	/* per segment: up to DW_MAX_CHUNKS chunks, each with up to 3 FILLs (dw_fills) and their token */
	est_bytes = 4096 + (uint64_t)total * DW_MAX_CHUNKS *
				   (4 * 96 + d.nx * 256 + (g.pad || d.nseg > 1 ? 3 * 64 + 16 : 0));
	if (est_bytes > x->cut_bytes)
		return 1;
	g.in_va = in->buf->va + in->offset;
	g.in_sn = (uint64_t)in->strides[0];
	g.in_sh = (uint64_t)in->strides[2];
	g.w_va = wt->buf->va + wt->offset;
	g.out_va = out->buf->va + out->offset;
	g.out_sn = (uint64_t)out->strides[0];
	g.out_sh = (uint64_t)out->strides[2];
	if (cs_segment_len(x->cs))
		cs_cut(x->cs);
	x->prob_seq++;
	dw_prologue(x->cs, &g, &d, p, total > 1 ? 2 : 1);
	for (uint32_t s = 0; s < total; s++)
		dw_segment(x->cs, &g, &d, p, s, total);
	if (x->cs->err)
		return cs_report(x->cs);
	return 0;
}

/* The modeled cycles of the plan conv_lower runs for a depthwise convolution (p: its problem with M
 * set): the block's replay, else the direct or IM2COL lowering's estimate. */
double conv_dw_est(const struct accel_dev *dev, const struct mm_ctx *x, const struct accel_conv2d_desc *cd,
		   const struct mm_problem *p)
{
	struct dwg g;
	struct dwp d = { 0 };

	return dw_geom(dev, x, cd, p, &g, &d) ? conv_direct_est(x->caps, cd, p) : d.est;
}
