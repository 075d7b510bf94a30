/* SPDX-License-Identifier: MIT */
/*
 * dw_mac.c - channel-wise (depthwise) MAC and the multicast LD's distribution cost
 * (Documentation/hardware/isa.md "DW MAC", "MCAST"; cycle-model.md).
 *
 * A DW MAC computes, for every PE, an oh x ow block of output pixels of tn channels and replaces
 * the accumulator with it (it takes the shape tm x tn; a DW MAC never accumulates onto old contents):
 *   acc[oy*ow + ox][ch] = sum over ry < r, rx < s (in order) of
 *                          A[oy*sy + ry*dy][(ox*sx + rx*dx)*pix + ch] * W[ry*s + rx][ch]
 * with A the input slot's tile (rows = input rows, cols = elements of an input row span) and W the
 * weight slot's tile (r*s taps x tn channels, or tn x r*s with TRANS).
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "tnpu_kernels.h"

static unsigned dw_esize(unsigned dt)
{
	return dt == TNPU_DTYPE_INT8 ? 1 : dt == TNPU_DTYPE_BF16 ? 2 : 4;
}

static int64_t dw_pe_addr(const struct tnpu_operand *o, unsigned c, unsigned p)
{
	return tnpu_pe_addr(o, c, p);
}

/* The register file keeps decoded operand fields; re-encode the 32 raw bytes to reinterpret. */
static void dw_raw(const struct tnpu_operand *rec, uint8_t raw[32])
{
	memcpy(raw, &rec->addr, 4);
	memcpy(raw + 4, &rec->col_stride, 4);
	memcpy(raw + 8, &rec->pe_stride, 4);
	memcpy(raw + 12, &rec->pitch, 4);
	memcpy(raw + 16, &rec->rows, 2);
	memcpy(raw + 18, &rec->cols, 2);
	raw[20] = rec->dtype;
	raw[21] = rec->flags;
	memcpy(raw + 22, &rec->su_wrap, 2);
	memcpy(raw + 24, &rec->su_delta, 4);
	memcpy(raw + 28, &rec->su_wrap_delta, 4);
}

uint32_t tnpu_dw_check(struct tnpu_dw_job *j)
{
	const struct tnpu_operand *A = j->A, *B = j->B;
	struct tnpu_dw_param *p = &j->p;
	uint8_t raw[32];
	unsigned taps;
	uint64_t need_rows, need_cols;

	dw_raw(j->rec, raw);
	p->oh = ld16(raw);
	p->ow = ld16(raw + 2);
	p->pix = ld16(raw + 4);
	p->r = raw[6];
	p->s = raw[7];
	p->stride_y = raw[8];
	p->stride_x = raw[9];
	p->dil_y = raw[10];
	p->dil_x = raw[11];
	for (unsigned i = 12; i < 32; i++)
		if (raw[i])
			return TNPU_ERR_DW_PARAM;
	if (!p->oh || !p->ow || !p->pix || !p->r || !p->s || !p->stride_y || !p->stride_x || !p->dil_y ||
	    !p->dil_x)
		return TNPU_ERR_DW_PARAM;
	if (A->flags & TNPU_OPF_WRAP)	/* a window is a 2-D box, never a wrapped run (isa.md "Row wrap") */
		return TNPU_ERR_OPERAND;
	if (B->flags & TNPU_OPF_SPARSE)
		return TNPU_ERR_DW_SHAPE;
	if (B->flags & TNPU_OPF_TRANS) {
		j->tn = B->rows;
		taps = B->cols;
	} else {
		j->tn = B->cols;
		taps = B->rows;
	}
	j->tm = (unsigned)p->oh * p->ow;
	need_rows = (uint64_t)(p->oh - 1) * p->stride_y + (uint64_t)(p->r - 1) * p->dil_y + 1;
	need_cols = ((uint64_t)(p->ow - 1) * p->stride_x + (uint64_t)(p->s - 1) * p->dil_x) * p->pix + j->tn;
	if (taps != (unsigned)p->r * p->s || (uint64_t)j->tm * j->tn > TNPU_ACC_ELEMS || need_rows > A->rows ||
	    need_cols > A->cols)
		return TNPU_ERR_DW_SHAPE;
	j->out_dtype = A->dtype == TNPU_DTYPE_INT8 ? TNPU_DTYPE_INT32 : TNPU_DTYPE_FP32;
	j->rate = A->dtype == TNPU_DTYPE_INT8 ? TNPU_RATE_MAC_INT8 : TNPU_RATE_MAC_FP32;
	j->macs_pe = (uint64_t)j->tm * j->tn * taps;
	return 0;
}

static float dw_f(const uint8_t *q, unsigned dt)
{
	float f;

	if (dt == TNPU_DTYPE_BF16) {
		uint32_t v = (uint32_t)ld16(q) << 16;

		memcpy(&f, &v, 4);
	} else {
		memcpy(&f, q, 4);
	}
	return f;
}

/*
 * fp32 with the weights stored taps x channels: one PE's block an output row at a time through the
 * kernels' depthwise row (tnpu_kern_dw_row_f32: runs of channels inner, vectorised per host ISA), each
 * channel's fmaf chain still over the taps in (ry, rx) order from +0 -- the same bits as the
 * per-channel loop.  False if an abort arrived (checked per output row, as the general loop).
 */
#define DW_RUN 64
static bool dw_pe_f32(const struct tnpu_dw_param *p, const uint8_t *restrict at, uint64_t apitch,
		      const uint8_t *restrict bt, uint64_t wt_tap, unsigned tn, size_t ld, uint8_t *restrict cp,
		      atomic_bool *abort)
{
	for (unsigned oy = 0; oy < p->oh; oy++) {
		if (abort && atomic_load_explicit(abort, memory_order_relaxed))
			return false;
		tnpu_kern_dw_row_f32(p->ow, tn, p->r, p->s, at + (uint64_t)oy * p->stride_y * apitch,
				     (ptrdiff_t)((uint64_t)p->dil_y * apitch), (ptrdiff_t)p->stride_x * p->pix * 4,
				     (ptrdiff_t)p->dil_x * p->pix * 4, bt, (ptrdiff_t)wt_tap,
				     cp + (size_t)oy * p->ow * ld * 4, ld * 4);
	}
	return true;
}

/* int8 likewise (weights taps x channels): each channel's sum modulo 2^32, exact in any order. */
TNPU_CLONES
static bool dw_pe_i8(const struct tnpu_dw_param *p, const uint8_t *restrict at, uint64_t apitch,
		     const uint8_t *restrict bt, uint64_t wt_tap, unsigned tn, size_t ld, uint8_t *restrict cp,
		     atomic_bool *abort)
{
	uint32_t acc[DW_RUN];

	for (unsigned oy = 0; oy < p->oh; oy++) {
		if (abort && atomic_load_explicit(abort, memory_order_relaxed))
			return false;
		for (unsigned ox = 0; ox < p->ow; ox++) {
			uint8_t *out = cp + ((size_t)(oy * p->ow + ox) * ld) * 4;

			for (unsigned c0 = 0; c0 < tn; c0 += DW_RUN) {
				unsigned n = tn - c0 < DW_RUN ? tn - c0 : DW_RUN;

				for (unsigned c = 0; c < n; c++)
					acc[c] = 0;
				for (unsigned ry = 0; ry < p->r; ry++) {
					const uint8_t *arow = at + (uint64_t)(oy * p->stride_y + ry * p->dil_y) * apitch;

					for (unsigned rx = 0; rx < p->s; rx++) {
						const int8_t *a = (const int8_t *)arow +
								  (uint64_t)(ox * p->stride_x + rx * p->dil_x) * p->pix + c0;
						const int8_t *w = (const int8_t *)bt + (uint64_t)(ry * p->s + rx) * wt_tap + c0;

						for (unsigned c = 0; c < n; c++)
							acc[c] += (uint32_t)((int32_t)a[c] * (int32_t)w[c]);
					}
				}
				memcpy(out + 4 * (size_t)c0, acc, (size_t)n * 4);
			}
		}
	}
	return true;
}

/* A PE's weight tile stored channels x taps (TRANS: row ch holds its taps, rows pitch apart) copied
 * taps x channels into tw (taps * tn elements of e bytes), the layout the vectorised loops read. */
static void dw_untranspose(const uint8_t *restrict bt, uint64_t pitch, unsigned tn, unsigned taps, unsigned e,
			   uint8_t *restrict tw)
{
	if (e == 4) {	/* fp32: word copies the compiler keeps in registers */
		for (unsigned ch = 0; ch < tn; ch++) {
			const uint8_t *row = bt + ch * pitch;

			for (unsigned t = 0; t < taps; t++) {
				uint32_t v;

				memcpy(&v, row + 4 * (size_t)t, 4);
				memcpy(tw + ((size_t)t * tn + ch) * 4, &v, 4);
			}
		}
		return;
	}
	for (unsigned ch = 0; ch < tn; ch++)
		for (unsigned t = 0; t < taps; t++)
			tw[(size_t)t * tn + ch] = bt[ch * pitch + t];	/* int8 */
}

/* The copy's bound: a tile lives in a storage unit, so this is never reached by a valid command; a
 * larger one (or a failed allocation) takes the per-channel loop. */
#define DW_TW_MAX (4u << 20)

uint32_t tnpu_dw_run(struct tnpu_dw_job *j)
{
	const struct tnpu_operand *A = j->A, *B = j->B;
	const struct tnpu_dw_param *p = &j->p;
	unsigned dt = A->dtype, e = dw_esize(dt), tn = j->tn, tm = j->tm, taps = (unsigned)p->r * p->s;
	size_t ld = (size_t)j->pes * tn;
	bool trans = B->flags & TNPU_OPF_TRANS, fast = dt == TNPU_DTYPE_FP32 || dt == TNPU_DTYPE_INT8;
	uint64_t wt_tap = trans ? e : B->pitch, wt_ch = trans ? B->pitch : e;
	/* TRANS weights (libaccel's depthwise layout, a row per channel) for the vectorised loops: each PE's
	 * tile copied taps x channels first (the per-channel sums keep their tap order: the same bits) */
	uint8_t *tw = fast && trans && (size_t)taps * tn * e <= DW_TW_MAX ? malloc((size_t)taps * tn * e) : NULL;

	for (unsigned c = 0; c < j->cols; c++) {
		for (unsigned pe = 0; pe < j->pes; pe++) {
			const uint8_t *at = j->base + dw_pe_addr(A, c, pe);
			const uint8_t *bt = j->base + dw_pe_addr(B, c, pe);
			uint8_t *cp = (uint8_t *)j->acc + ((size_t)c * tm * ld + (size_t)pe * tn) * 4;

			if (fast && (!trans || tw)) {
				if (trans)
					dw_untranspose(bt, B->pitch, tn, taps, e, tw);
				if (!(dt == TNPU_DTYPE_FP32 ? dw_pe_f32 : dw_pe_i8)(p, at, A->pitch, trans ? tw : bt,
										    trans ? (uint64_t)tn * e : wt_tap, tn,
										    ld, cp, j->abort)) {
					free(tw);
					return TNPU_ERR_ABORTED;
				}
				continue;
			}
			for (unsigned oy = 0; oy < p->oh; oy++) {
				/* up to tm x tn x 255^2 taps per PE: abort per output row */
				if (j->abort && atomic_load_explicit(j->abort, memory_order_relaxed)) {
					free(tw);
					return TNPU_ERR_ABORTED;
				}
				for (unsigned ox = 0; ox < p->ow; ox++) {
					uint8_t *out = cp + ((size_t)(oy * p->ow + ox) * ld) * 4;

					for (unsigned ch = 0; ch < tn; ch++) {
						uint32_t si = 0;
						float sf = 0.0f;

						for (unsigned ry = 0; ry < p->r; ry++) {
							const uint8_t *arow = at + (uint64_t)(oy * p->stride_y + ry * p->dil_y) * A->pitch;

							for (unsigned rx = 0; rx < p->s; rx++) {
								uint64_t ai = ((uint64_t)(ox * p->stride_x + rx * p->dil_x) * p->pix + ch) * e;
								const uint8_t *wq = bt + (uint64_t)(ry * p->s + rx) * wt_tap + (uint64_t)ch * wt_ch;

								if (dt == TNPU_DTYPE_INT8)
									si += (uint32_t)((int32_t)(int8_t)arow[ai] * (int8_t)*wq);
								else
									sf = fmaf(dw_f(arow + ai, dt), dw_f(wq, dt), sf);
							}
						}
						if (dt == TNPU_DTYPE_INT8)
							memcpy(out + 4 * ch, &si, 4);
						else
							memcpy(out + 4 * ch, &sf, 4);
					}
				}
			}
		}
	}
	free(tw);
	return 0;
}

/*
 * The block of an MCAST LD (isa.md "MCAST"): the rectangle over every PE's tile, cut at the last
 * byte a PE reads.  The rectangle's width comes from one PE and its height from another, so its last
 * row can run up to a pitch past every tile -- past the storage unit when the tiles end at its edge
 * (issue #28) -- but only its last row: every tile ends at or after (rows - 1) pitches into it.
 */
void tnpu_dw_mcast_block(unsigned cols, unsigned pes, const struct tnpu_operand *o, const struct tnpu_operand *prev,
			 struct tnpu_mcast_block *b)
{
	uint64_t e = dw_esize(o->dtype), box_w = 0, box_rows = 0, end = 0;
	int64_t amin = INT64_MAX;

	memset(b, 0, sizeof(*b));
	if (!o->pitch)
		return;
	for (unsigned c = 0; c < cols; c++)
		for (unsigned p = 0; p < pes; p++)
			amin = TNPU_MIN(amin, dw_pe_addr(o, c, p));
	for (unsigned c = 0; c < cols; c++) {
		for (unsigned p = 0; p < pes; p++) {
			uint64_t d = (uint64_t)(dw_pe_addr(o, c, p) - amin);

			box_rows = TNPU_MAX(box_rows, d / o->pitch + o->rows);
			box_w = TNPU_MAX(box_w, d % o->pitch + o->cols * e);
			end = TNPU_MAX(end, d + (uint64_t)(o->rows - 1) * o->pitch + o->cols * e);
		}
	}
	if (box_w > o->pitch)
		return;	/* the tiles do not form a block of rows: no multicast saving */
	b->ok = true;
	b->pitch = o->pitch;
	b->w = box_w;
	b->r1 = box_rows;
	b->lo = (uint64_t)amin;
	b->hi = b->lo + TNPU_MIN((box_rows - 1) * o->pitch + box_w, end);
	if (prev && prev->pitch == o->pitch && prev->rows == o->rows && prev->cols == o->cols &&
	    prev->dtype == o->dtype && prev->flags == o->flags && prev->col_stride == o->col_stride &&
	    prev->pe_stride == o->pe_stride &&
	    (!(o->flags & TNPU_OPF_CPAIR) || prev->su_wrap_delta == o->su_wrap_delta)) {
		int64_t delta = (int64_t)o->addr - (int64_t)prev->addr;

		if (delta % (int64_t)o->pitch == 0) {
			uint64_t d = (uint64_t)(delta < 0 ? -delta : delta) / o->pitch;

			if (d < box_rows) {	/* sliding block: only the new rows travel */
				b->r0 = delta < 0 ? 0 : box_rows - d;
				b->r1 = delta < 0 ? d : box_rows;
			}
		}
	}
}

uint64_t tnpu_dw_mcast_bytes(const struct row_state *rs, uint64_t base, const struct tnpu_mcast_block *b)
{
	uint64_t bytes = 0;

	/* clean lines (never written this job) read as zero and are not delivered (line state) */
	for (uint64_t r = b->r0; r < b->r1; r++) {
		uint64_t lo = b->lo + r * b->pitch;

		bytes += tnpu_lines_written_bytes(rs, base + lo, base + TNPU_MIN(lo + b->w, b->hi));
	}
	return bytes;
}
