/* SPDX-License-Identifier: MIT */
/*
 * plan_tiling.c - tile sizes and mapping for the matmul engine (cost model in
 * Documentation/libaccel.md, "Tiling and cost model").
 *
 * A row of the array computes a block of (cols*tm) x (pes*tn) outputs per K step of kt (isa.md,
 * "Mapping a GEMM"); the rows take consecutive M blocks.  For every candidate (tm, tn, kt, loop
 * order) that fits a storage-unit half, the model below estimates the job's cycles from the
 * cycle-model.md formulas: compute per EXE = CYC_EXE + issue + max(distribution, MAC), load and
 * store engine time per tile, overlapped by the ping-pong pipeline so the job takes about the
 * largest of the three timelines plus one tile of fill and drain.  Residency decides the mapping:
 * with a single K step the A tile of an M block stays in both halves while N blocks stream
 * (input stationary) or the B tile stays while M blocks stream (weight stationary); with several
 * K steps the accumulators hold the outputs (output stationary).  The cheapest estimate wins, ties
 * go to fewer host bytes.
 */
#include <math.h>
#include <string.h>

#include "sparse.h"

/*
 * Everything the plan search reads, and the plan cache's key: estimate() and mm_plan_search() take
 * nothing else, so an input the search depends on cannot be missing from the key.
 */
struct mm_plan_ic {		/* the IM2COL / GATHER geometry of A (zero for matrices) */
	uint16_t n, h, w, c, r, s, ow;
	uint8_t stride_y, dil_y;
};

struct mm_plan_in {
	struct accel_caps caps;
	uint32_t M, N, K;
	uint32_t col_bytes;	/* mm_col_bytes(): the SFU column record of an output column */
	uint8_t a_kind, b_kind;	/* enum mm_src_kind */
	uint8_t b_dma_flags;
	uint8_t out_dtype;
	bool f32, use_sfu, c_trans;
	struct mm_plan_ic ic;
	const struct accel_sparse_weights *sp;	/* MM_SPARSE only */
	/* MM_DEQ: bits per code (4 / 8), block (0: per column), scale + zero-point bytes per block */
	uint16_t b_deq_block;
	uint8_t b_deq_bits, b_deq_sb;
};

static uint64_t up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Host bytes of one DMA_DEQ tile of Nb columns x kt codes: the codes and, per column, the scales and
 * zero points of the blocks the tile touches (a block split over K tiles is read by each). */
static double deq_bytes(const struct mm_plan_in *p, uint64_t Nb, uint64_t kt)
{
	uint64_t blocks = p->b_deq_block ? (kt + p->b_deq_block - 1) / p->b_deq_block : 1;

	return (double)Nb * ((double)kt * p->b_deq_bits / 8.0 + (double)blocks * p->b_deq_sb);
}

static uint32_t align64(uint32_t v)
{
	return (v + 63u) & ~63u;
}

static void estimate(const struct mm_plan_in *p, struct mm_plan *pl)
{
	const struct accel_caps *c = &p->caps;
	uint64_t e = p->f32 ? 4 : 1, oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	uint64_t R = c->rows, Mb = (uint64_t)c->cols * pl->tm, Nb = (uint64_t)c->pes * pl->tn, kt = pl->kt;
	uint64_t n_mb = up(p->M, Mb), n_nb = up(p->N, Nb), n_k = up(p->K, kt);
	uint64_t n_mg = pl->rows_over_n ? n_mb : up(n_mb, R), n_ng = pl->rows_over_n ? up(n_nb, R) : n_nb;
	uint64_t rows_used = ACCEL_MIN(R, pl->rows_over_n ? n_nb : n_mb);
	uint64_t a_rows = pl->rows_over_n ? 1 : rows_used, b_rows = pl->rows_over_n ? rows_used : 1;
	uint64_t rate = p->f32 ? c->rate_fp32 : c->rate_int8;
	double mac = (double)up((uint64_t)pl->tm * pl->tn * kt, rate);
	double dist = (double)up((Mb + Nb) * kt * e + 8, c->rate_dispatch);
	double exe = TNPU_CYC_EXE + 4 + fmax(mac, dist) + TNPU_CYC_CMD + TNPU_CYC_DISPATCH;
	double epi = (double)up((uint64_t)pl->tm * pl->tn * oe * c->pes, 128) +
		     (double)up((uint64_t)pl->tm * pl->tn, p->use_sfu ? 16 : 64);
	double cost_a, cost_b, cost_st, cost_b_rows, a_loads, b_loads, steps = (double)(n_mg * n_ng * n_k);
	double compute, load, store, bytes_a, bytes_b, im2col_box = 0;

	switch (p->a_kind) {
	case MM_MAT:
		cost_a = 36.0 + (double)(Mb * up(kt * e, 128));
		break;
	case MM_MAT_T:
		cost_a = 36.0 + (double)(Mb * kt);
		break;
	default: {
		/* IM2COL reads the bounding box of the tile's footprint: the input rows under
		 * ceil(Mb / OW) + 1 output rows plus the filter halo, all columns and channels. */
		const struct mm_plan_ic *ic = &p->ic;
		double orows = (double)up(Mb, ic->ow) + 1.0;
		double irows = fmin((double)ic->h * ic->n, orows * ic->stride_y + (double)(ic->r - 1) * ic->dil_y);
		double box = irows * ic->w * ic->c * (double)e;

		if (kt < p->K)
			box = fmin(box, box * ((double)kt / (double)(ic->s * ic->c)) + (double)ic->w * ic->c * e);
		cost_a = 36.0 + fmax((double)up(Mb * kt * e, 128), box / 128.0);
		im2col_box = box;
		break;
	}
	}
	cost_b = 36.0 + (p->b_kind == MM_MAT ? (double)(kt * up(Nb * e, 128)) : (double)(Nb * up(kt * e, 128)));
	/* DMA_DEQ: the packed bytes (each tile reads its blocks' scales) or 256 weights per cycle */
	if (p->b_kind == MM_DEQ)
		cost_b = 36.0 + fmax(ceil(deq_bytes(p, Nb, kt) / 128.0), ceil((double)Nb * kt / TNPU_RATE_DEQ));
	if (p->b_kind == MM_SPARSE) {
		/* Packed weights: slot bytes instead of dense bytes, MACs only on non-zero weights. */
		const struct accel_sparse_weights *sw = p->sp;
		double sb = (double)kt * sparse_slot_density(sw) * sw->ss;

		cost_b = 36.0 + (double)c->pes * ceil((double)pl->tn * sb / 128.0);
		mac = fmax(ceil((double)pl->tm * pl->tn * kt * sparse_nnz_density(sw) / (double)rate),
			   ceil((double)pl->tm * pl->tn * kt * sparse_slot_density(sw) / (16.0 * rate)));
		dist = ceil(((double)Mb * kt * e + (double)Nb * sb + 8) / c->rate_dispatch);
		exe = TNPU_CYC_EXE + 4 + fmax(mac, dist) + TNPU_CYC_CMD + TNPU_CYC_DISPATCH + 16;
	}
	cost_st = 36.0 + (p->c_trans ? (double)(Mb * Nb) : (double)(Mb * up(Nb * oe, 128)));
	bytes_a = p->a_kind == MM_IM2COL ? im2col_box : (double)(Mb * kt * e);
	bytes_b = p->b_kind == MM_SPARSE ? (double)Nb * kt * sparse_slot_density(p->sp) * p->sp->ss
		  : p->b_kind == MM_DEQ	 ? deq_bytes(p, Nb, kt)
					 : (double)(Nb * kt * e);
	if (n_k == 1 && pl->order == MM_ORDER_M_OUTER) {
		a_loads = (double)(n_mg * ACCEL_MIN(n_ng, 2));
		b_loads = (double)(n_mg * n_ng);
		pl->mapping = n_ng > 2 ? "input-stationary" : "output-stationary";
	} else if (n_k == 1) {
		b_loads = (double)(n_ng * ACCEL_MIN(n_mg, 2));
		a_loads = (double)(n_ng * n_mg);
		pl->mapping = n_mg > 2 ? "weight-stationary" : "output-stationary";
	} else {
		a_loads = steps;
		b_loads = steps;
		pl->mapping = "output-stationary";
	}
	/* rows over N on a device with host ports: the rows' B tiles are one DMA_BANDS_H2D, each unit's
	 * through its own 256 B/cycle port (matmul.c load_b_bands).  Estimated so for GEMMs only: the
	 * convolutions' choice between IM2COL and the direct lowering keeps its host-read budget
	 * (libaccel.md; an IM2COL plan that looks cheaper would re-read its input), and their IM2COL
	 * plans use the bands where they apply anyway. */
	if ((c->features & TNPU_FEAT_DEPTHWISE) && pl->rows_over_n && b_rows >= 2 && p->a_kind != MM_IM2COL &&
	    (p->b_kind == MM_MAT || p->b_kind == MM_MAT_T) && !p->b_dma_flags)
		cost_b_rows = 36.0 + (p->b_kind == MM_MAT ? (double)(kt * up(Nb * e, 256)) : (double)(Nb * up(kt * e, 256)));
	else
		cost_b_rows = (double)b_rows * cost_b;
	compute = (double)(n_mg * n_ng) * ((double)n_k * exe + epi);
	load = a_loads * a_rows * cost_a + b_loads * cost_b_rows;
	store = (double)(n_mg * n_ng) * rows_used * cost_st;
	pl->est_cycles = fmax(compute, fmax(load, store)) + a_rows * cost_a + cost_b_rows + rows_used * cost_st + 64;
	pl->est_h2d_bytes = (uint64_t)(a_loads * a_rows * bytes_a + b_loads * b_rows * bytes_b);
}

/* Tile-size candidates along a dimension of size dim split over `lanes` units (clusters or PEs),
 * at most lim per unit: powers of two (i < PLAN_CANDS) and exact splits ceil(dim / (lanes * j))
 * (i >= PLAN_CANDS), so that edge tiles waste little work.  0 = no candidate. */
#define PLAN_CANDS 11
#define PLAN_SLACK 1.02
static uint32_t cand(unsigned i, uint32_t dim, uint32_t lanes, uint32_t lim)
{
	uint64_t per = (dim + (uint64_t)lanes - 1) / lanes, v;

	if (i < PLAN_CANDS) {
		v = 1ull << i;
		if (v > 1 && v / 2 >= per)
			return 0;
	} else {
		v = (per + (i - PLAN_CANDS)) / (i - PLAN_CANDS + 1);
		if (!v)
			return 0;
	}
	return v <= lim ? (uint32_t)v : 0;
}

/* True when candidate i repeats the value of an earlier candidate. */
static bool dup(unsigned i, uint32_t v, uint32_t dim, uint32_t lanes, uint32_t lim)
{
	for (unsigned j = 0; j < i; j++)
		if (cand(j, dim, lanes, lim) == v)
			return true;
	return false;
}

static void mm_plan_input(const struct accel_caps *c, const struct mm_problem *p, struct mm_plan_in *in)
{
	memset(in, 0, sizeof(*in));	/* padding too: the cache compares inputs with memcmp */
	in->caps = *c;
	in->M = p->M;
	in->N = p->N;
	in->K = p->K;
	in->col_bytes = mm_col_bytes(p);
	in->a_kind = (uint8_t)p->a.kind;
	in->b_kind = (uint8_t)p->b.kind;
	in->b_dma_flags = p->b.dma_flags;
	in->f32 = p->f32;
	in->out_dtype = p->out_dtype;
	in->use_sfu = p->use_sfu;
	in->c_trans = p->c_trans;
	if (p->a.kind != MM_MAT && p->a.kind != MM_MAT_T) {
		in->ic.n = p->a.ic.n;
		in->ic.h = p->a.ic.h;
		in->ic.w = p->a.ic.w;
		in->ic.c = p->a.ic.c;
		in->ic.r = p->a.ic.r;
		in->ic.s = p->a.ic.s;
		in->ic.ow = p->a.ic.ow;
		in->ic.stride_y = p->a.ic.stride_y;
		in->ic.dil_y = p->a.ic.dil_y;
	}
	if (p->b.kind == MM_SPARSE)
		in->sp = p->b.sp;
	if (p->b.kind == MM_DEQ) {
		in->b_deq_bits = p->b.deq.fmt == TNPU_DEQ_FMT_U4 ? 4 : 8;
		in->b_deq_block = (uint16_t)p->b.deq.block;
		in->b_deq_sb = (uint8_t)(((p->b.deq.qflags & TNPU_DEQ_F_SCALE_F16) ? 2 : 4) + (p->b.deq.zp_va ? 1 : 0));
	}
}

/*
 * The search costs about as much host time as a small layer's simulation, and networks ask the same
 * question for every image and batch.  A few recent answers are kept per thread.  The key is the
 * search's whole input (struct mm_plan_in), which is all the search can read: a plan can only be
 * reused for an input it was searched for (issue #27: a key that left out the column-record size
 * handed a per-tensor plan to a per-column requantisation, whose records then ran past the half).
 * Packed sparse weights are never cached (their densities are behind a pointer).
 */
#define PLAN_CACHE 16
static _Thread_local struct {
	struct mm_plan_in key;
	struct mm_plan plan;
	int ret;
	bool used;
} plan_cache[PLAN_CACHE];
static _Thread_local unsigned plan_cache_next;

static int mm_plan_search(const struct mm_plan_in *p, struct mm_plan *out);

int mm_plan_choose(const struct accel_caps *c, const struct mm_problem *p, struct mm_plan *out)
{
	struct mm_plan_in in;
	int ret;

	mm_plan_input(c, p, &in);
	if (in.sp)
		return mm_plan_search(&in, out);
	for (unsigned i = 0; i < PLAN_CACHE; i++) {
		if (plan_cache[i].used && !memcmp(&plan_cache[i].key, &in, sizeof(in))) {
			if (!plan_cache[i].ret)
				*out = plan_cache[i].plan;
			return plan_cache[i].ret;
		}
	}
	ret = mm_plan_search(&in, out);
	memcpy(&plan_cache[plan_cache_next].key, &in, sizeof(in));	/* with its zeroed padding */
	plan_cache[plan_cache_next].ret = ret;
	if (!ret)
		plan_cache[plan_cache_next].plan = *out;
	plan_cache[plan_cache_next].used = true;
	plan_cache_next = (plan_cache_next + 1) % PLAN_CACHE;
	return ret;
}

static int mm_plan_search(const struct mm_plan_in *p, struct mm_plan *out)
{
	const struct accel_caps *c = &p->caps;
	static const uint32_t kts[] = { 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1 };
	uint32_t e = p->f32 ? 4 : 1, oe = p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4;
	uint32_t half = c->sram_bytes / 2;
	bool found = false;
	struct mm_plan best;

	memset(&best, 0, sizeof(best));
	/* Pass 0: fastest estimate.  Pass 1: fewest host bytes within PLAN_SLACK of it. */
	for (int pass = 0; pass < 2; pass++) {
	double limit = best.est_cycles * PLAN_SLACK;

	if (pass == 1 && !found)
		break;
	for (unsigned ti = 0; ti < 2 * PLAN_CANDS; ti++) {
		uint32_t tn = cand(ti, p->N, c->pes, c->acc_elems);

		if (!tn || (ti && dup(ti, tn, p->N, c->pes, c->acc_elems)))
			continue;
		for (unsigned mi = 0; mi < 2 * PLAN_CANDS; mi++) {
			uint32_t tm = cand(mi, p->M, c->cols, c->acc_elems / tn);

			if (!tm || (mi && dup(mi, tm, p->M, c->cols, c->acc_elems / tn)))
				continue;
			for (unsigned ki = 0; ki <= sizeof(kts) / sizeof(kts[0]); ki++) {
				uint32_t kt = ki == 0 ? p->K : kts[ki - 1];
				uint32_t Mb = c->cols * tm, Nb = c->pes * tn;
				uint64_t need;
				struct mm_plan pl;

				if (kt > p->K || kt > 65535 || (ki && kt == p->K))
					continue;
				/* Packed weights fix the K step to their block size. */
				if (p->b_kind == MM_SPARSE && (ki || (kt = p->sp->k_block) > p->K))
					continue;
				if (ki && p->K % kt && kt < 64 && p->K > 64)
					continue;
				memset(&pl, 0, sizeof(pl));
				pl.tm = tm;
				pl.tn = tn;
				pl.kt = kt;
				pl.a_off = 0;
				pl.b_off = align64(Mb * kt * e);
				if (p->b_kind == MM_SPARSE && (uint64_t)Nb * p->sp->s_max * p->sp->ss > half)
					continue;
				pl.c_off = pl.b_off + align64(p->b_kind == MM_SPARSE ? Nb * p->sp->s_max * p->sp->ss
										     : Nb * kt * e);
				pl.bias_off = pl.c_off + align64(Mb * Nb * oe);
				need = (uint64_t)pl.bias_off + Nb * p->col_bytes;
				if (need > half)
					continue;
				for (int o = 0; o < 4; o++) {
					pl.order = (enum mm_order)(o & 1);
					pl.rows_over_n = o >= 2;
					if (pl.rows_over_n && c->rows == 1)
						continue;
					estimate(p, &pl);
					if (pass == 0) {
						if (!found || pl.est_cycles < best.est_cycles) {
							best = pl;
							found = true;
						}
					} else if (pl.est_cycles <= limit &&
						   (pl.est_h2d_bytes < best.est_h2d_bytes ||
						    (pl.est_h2d_bytes == best.est_h2d_bytes && pl.est_cycles < best.est_cycles))) {
						best = pl;
					}
				}
			}
		}
	}
	}
	if (!found)
		return -E2BIG;
	*out = best;
	return 0;
}
