/* SPDX-License-Identifier: MIT */
/*
 * Cluster control unit and PE array of one row (seed 001; Documentation/
 * hardware/isa.md): CONFIG parser, EXE operation unit with implicit-loopback
 * PC, register file with per-PE rewrite and scalar unit, LD/MAC/SFU/ST.
 *
 * All clusters of a row receive identical packets, so the control state is
 * kept once per row; PEs differ only in their rewritten addresses.  The math
 * runs at tile granularity: a MAC whose per-PE tiles are contiguous becomes
 * one GEMM kernel call for the whole row.
 */
#include <math.h>

#include "internal.h"
#include "tnpu_kernels.h"

/* Per-EXE cycle accounting of one row. */
struct exe_acct {
	uint64_t issued, dist_bytes, mac, sfu, st;
	uint64_t wide_bytes;	/* of dist_bytes: WIDE multicast blocks (256 B/cycle, isa.md "WIDE") */
	uint64_t dw_macs, other_macs;	/* MACs of the run: DW MACs overlap SFU/ST (cycle-model.md) */
};

/* An LD that waited for line-tracked writes: it can start no earlier than `ready`, and the run's
 * work from it on (the totals minus `pre`) follows (cycle-model.md "Line-tracked reads"). */
struct exe_wait {
	uint64_t ready;
	struct exe_acct pre;
};
#define EXE_WAITS 32

struct rowctx {
	struct tnpu_exec *ex;
	uint64_t t0;		/* the row's start (job cycles) */
	unsigned clkdiv;	/* the island's clock divisor */
	struct exe_wait wait[EXE_WAITS];
	unsigned n_wait;
	struct row_state *rs;
	unsigned row;
	uint8_t *base;		/* start of the addressed half */
	uint32_t half;		/* half size */
	unsigned cols, pes, npe;
	uint32_t info;		/* cluster error info (row | buf << 8 | idx << 16) */
	struct exe_acct a;
	bool last;
	const struct ibuf *ib;
};

void tnpu_cluster_reset(struct tnpu_exec *ex)
{
	for (unsigned r = 0; r < ex->cfg.rows; r++) {
		struct row_state *rs = &ex->rows[r];

		memset(rs->ibuf, 0, sizeof(rs->ibuf));
		memset(rs->rf, 0, sizeof(rs->rf));
		memset(rs->rf_cfg, 0, sizeof(rs->rf_cfg));
		memset(rs->rf_cnt, 0, sizeof(rs->rf_cnt));
		memset(rs->in, 0, sizeof(rs->in));
		memset(rs->wq, 0, sizeof(rs->wq));
		memset(rs->accm, 0, sizeof(rs->accm));
		memset(&rs->oqm, 0, sizeof(rs->oqm));
		rs->last_half = -1;
	}
}

static uint32_t cfail(struct rowctx *rc, uint32_t err)
{
	return tnpu_fail(rc->ex, err, rc->info, 0);
}

static uint32_t cfail_addr(struct rowctx *rc, uint32_t err, uint64_t addr)
{
	return tnpu_fail(rc->ex, err, rc->info, addr);
}

/* Row cycles of the work in `a` after the pipeline fill (cycle-model.md "Command durations"); a DW
 * run overlaps the SFU/ST drain of each tile with the next tile's MACs. */
static uint64_t exe_work(const struct exe_acct *a, bool dw_run)
{
	uint64_t dist = a->wide_bytes ? div_ceil_u64(2 * (a->dist_bytes - a->wide_bytes) + a->wide_bytes,
						     TNPU_RATE_WIDE_MCAST) :
					div_ceil_u64(a->dist_bytes, TNPU_RATE_DISPATCH);

	if (dw_run)
		return a->issued + TNPU_MAX(TNPU_MAX(dist, a->mac), a->sfu + a->st) +
		       (a->dw_macs ? div_ceil_u64(a->sfu + a->st, a->dw_macs) : 0);
	return a->issued + TNPU_MAX(dist, a->mac) + a->sfu + a->st;
}

static struct exe_acct acct_sub(const struct exe_acct *a, const struct exe_acct *b)
{
	return (struct exe_acct){
		.issued = a->issued - b->issued, .dist_bytes = a->dist_bytes - b->dist_bytes,
		.wide_bytes = a->wide_bytes - b->wide_bytes,
		.mac = a->mac - b->mac, .sfu = a->sfu - b->sfu, .st = a->st - b->st,
		.dw_macs = a->dw_macs - b->dw_macs, .other_macs = a->other_macs - b->other_macs,
	};
}

/* Job cycle at which the run's work so far is done: its own pace from the start, and no earlier
 * than each line-tracked wait plus the work that followed it. */
static uint64_t exe_time(const struct rowctx *rc)
{
	bool dw_run = rc->a.dw_macs && !rc->a.other_macs;
	uint64_t t = rc->t0 + (TNPU_CYC_EXE + exe_work(&rc->a, dw_run)) * rc->clkdiv;

	for (unsigned i = 0; i < rc->n_wait; i++) {
		struct exe_acct rest = acct_sub(&rc->a, &rc->wait[i].pre);

		t = TNPU_MAX(t, rc->wait[i].ready + exe_work(&rest, dw_run) * rc->clkdiv);
	}
	return t;
}

/* An LD reading [lo, hi) of the row's SRAM waits for STREAM band writes still in flight. */
static void exe_wait_lines(struct rowctx *rc, uint64_t lo, uint64_t hi)
{
	uint64_t ready;

	if (!rc->rs->sb_in.n || hi <= lo)
		return;
	ready = tnpu_sb_ready(&rc->rs->sb_in, lo, hi, rc->t0 + TNPU_CYC_EXE * rc->clkdiv);
	if (ready <= rc->t0 + TNPU_CYC_EXE * rc->clkdiv)
		return;
	if (rc->n_wait == EXE_WAITS) {
		/* merge into the latest record: its earlier start with the later time (only delays) */
		rc->wait[EXE_WAITS - 1].ready = TNPU_MAX(rc->wait[EXE_WAITS - 1].ready, ready);
		return;
	}
	rc->wait[rc->n_wait++] = (struct exe_wait){ .ready = ready, .pre = rc->a };
}

static void rec_load(struct tnpu_operand *o, const uint8_t *p)
{
	o->addr = ld32(p);
	o->col_stride = (int32_t)ld32(p + 4);
	o->pe_stride = (int32_t)ld32(p + 8);
	o->pitch = ld32(p + 12);
	o->rows = ld16(p + 16);
	o->cols = ld16(p + 18);
	o->dtype = p[20];
	o->flags = p[21];
	o->su_wrap = ld16(p + 22);
	o->su_delta = (int32_t)ld32(p + 24);
	o->su_wrap_delta = (int32_t)ld32(p + 28);
}

static inline int64_t pe_addr(const struct tnpu_operand *o, unsigned c, unsigned p)
{
	return tnpu_pe_addr(o, c, p);
}

static unsigned esize(unsigned dtype)
{
	return dtype == TNPU_DTYPE_INT8 ? 1 : dtype == TNPU_DTYPE_BF16 ? 2 : 4;
}

static inline float bf16_f32(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Sparse slot layout per dtype: {u16 index; value} with the value at +2 (int8, bf16) or +4 (fp32). */
static unsigned slot_size(unsigned dt)
{
	return dt == TNPU_DTYPE_FP32 ? 8 : 4;
}

static unsigned slot_val(unsigned dt)
{
	return dt == TNPU_DTYPE_FP32 ? 4 : 2;
}

/* Check that every PE's region [a, a + extent) lies in the half (corners
 * suffice: the address is affine in c and p; with CPAIR every cluster is checked). */
static uint32_t check_range(struct rowctx *rc, const struct tnpu_operand *o, uint64_t extent, unsigned align)
{
	unsigned cs[2] = { 0, rc->cols - 1 }, ps[2] = { 0, rc->pes - 1 };
	bool pair = o->flags & TNPU_OPF_CPAIR;
	unsigned nc = pair ? rc->cols : 2;

	if (o->flags & TNPU_OPF_WRAP) {
		/* addresses grow with the packed offset: the first PE's row 0 and the last PE's last row
		 * (extent = its rows' span without WRAP: the last row's own bytes are what is past it) */
		int64_t a = tnpu_row_addr(o, 0, 0, 0), b;

		if (a < 0)
			return cfail_addr(rc, TNPU_ERR_SRAM_RANGE, (uint64_t)a);
		/* the last row's start, checked for overflow (then no other row's address overflows) */
		if (!tnpu_wrap_addr_checked(o, rc->cols - 1, rc->pes - 1, o->rows - 1, &b) ||
		    b > (int64_t)rc->half)
			return cfail_addr(rc, TNPU_ERR_SRAM_RANGE, o->addr);
		b += (int64_t)(extent - (uint64_t)(o->rows - 1) * o->pitch);
		if ((uint64_t)b > rc->half)
			return cfail_addr(rc, TNPU_ERR_SRAM_RANGE, (uint64_t)tnpu_row_addr(o, rc->cols - 1, rc->pes - 1, 0));
		if (align > 1 && ((o->addr | (uint32_t)o->col_stride | (uint32_t)o->pe_stride | o->pitch |
				   (uint32_t)o->su_wrap_delta) & (align - 1)))
			return cfail_addr(rc, TNPU_ERR_ALIGN, o->addr);
		return 0;
	}
	for (unsigned i = 0; i < nc; i++) {
		for (unsigned j = 0; j < 2; j++) {
			int64_t a = pe_addr(o, pair ? i : cs[i], ps[j]);

			if (a < 0 || (uint64_t)a + extent > rc->half)
				return cfail_addr(rc, TNPU_ERR_SRAM_RANGE, (uint64_t)a);
		}
	}
	if (align > 1 && ((o->addr | (uint32_t)o->col_stride | (uint32_t)o->pe_stride | o->pitch |
			   (pair ? (uint32_t)o->su_wrap_delta : 0)) & (align - 1)))
		return cfail_addr(rc, TNPU_ERR_ALIGN, o->addr);
	return 0;
}

/* ---- CONFIG ---------------------------------------------------------------- */

static uint32_t validate_insn(uint16_t w)
{
	if (w & TNPU_INSN_RSVD_HI)
		return TNPU_ERR_INSTR;
	switch (TNPU_INSN_OP(w)) {
	case TNPU_OP_LD:
		return ((w & TNPU_LD_RSVD) || ((w & TNPU_LD_WIDE) && !(w & TNPU_LD_MCAST))) ? TNPU_ERR_INSTR : 0;
	case TNPU_OP_ST:
		return (w & TNPU_ST_RSVD) ? TNPU_ERR_INSTR : 0;
	case TNPU_OP_MAC:
		return (w & TNPU_MAC_RSVD) ? TNPU_ERR_INSTR : 0;
	default:
		return ((w & TNPU_SFU_RSVD) || TNPU_SFU_FN(w) > TNPU_SFU_FN_APPLY) ? TNPU_ERR_INSTR : 0;
	}
}

static uint32_t do_config(struct rowctx *rc, unsigned buf, const uint8_t *d, uint32_t len)
{
	struct row_state *rs = rc->rs;
	struct ibuf *ib = &rs->ibuf[buf];
	uint8_t n_instr, n_ops, rf_base, mode, ls, le, sfu_rf;
	uint16_t repeat;

	if (len < 16)
		return cfail(rc, TNPU_ERR_CONFIG);
	n_instr = d[0];
	n_ops = d[1];
	rf_base = d[2];
	mode = d[3];
	ls = d[4];
	le = d[5];
	repeat = ld16(d + 6);
	sfu_rf = d[8];
	if (d[9] >= TNPU_RF_WINDOW)	/* dw_rf */
		return cfail(rc, TNPU_ERR_CONFIG);
	for (unsigned i = 10; i < 16; i++)
		if (d[i])
			return cfail(rc, TNPU_ERR_CONFIG);
	if (!n_instr || n_instr > TNPU_IBUF_DEPTH || n_ops > TNPU_RF_WINDOW ||
	    rf_base + TNPU_RF_WINDOW > TNPU_RF_ENTRIES || (mode & ~TNPU_CFG_MODE_MASK) ||
	    TNPU_CFG_MODE_WQ(mode) > TNPU_WQ_SW || ls > le || le >= n_instr || !repeat ||
	    sfu_rf >= TNPU_RF_WINDOW || len != 16u + 2u * n_instr + 32u * n_ops)
		return cfail(rc, TNPU_ERR_CONFIG);
	for (unsigned i = 0; i < n_instr; i++) {
		uint16_t w = ld16(d + 16 + 2 * i);

		if (validate_insn(w)) {
			rc->info = (rc->info & 0xFFFF) | (i << 16);
			return cfail(rc, TNPU_ERR_INSTR);
		}
		ib->instr[i] = w;
	}
	for (unsigned i = 0; i < n_ops; i++) {
		unsigned e = rf_base + i;

		rec_load(&rs->rf[e], d + 16 + 2 * n_instr + 32 * i);
		rs->rf_cfg[e] = rs->rf[e];
		rs->rf_cnt[e] = 0;
	}
	ib->valid = true;
	ib->n_instr = n_instr;
	ib->rf_base = rf_base;
	ib->mode = mode;
	ib->loop_start = ls;
	ib->loop_end = le;
	ib->repeat = repeat;
	ib->sfu_rf = sfu_rf;
	ib->dw_rf = d[9];
	return 0;
}

/* ---- scalar unit ------------------------------------------------------------- */

static void scalar_update(struct rowctx *rc, unsigned e)
{
	struct tnpu_operand *o = &rc->rs->rf[e];

	if (!(rc->ib->mode & TNPU_CFG_MODE_PIPE4))
		return;
	o->addr += (uint32_t)o->su_delta;
	if (o->su_wrap && !(o->flags & TNPU_OPF_WRAP) && ++rc->rs->rf_cnt[e] >= o->su_wrap) {
		rc->rs->rf_cnt[e] = 0;
		o->addr += (uint32_t)o->su_wrap_delta;
	}
}

/* ---- LD --------------------------------------------------------------------- */

static uint64_t tile_bytes(const struct tnpu_operand *o)
{
	if (o->flags & TNPU_OPF_SPARSE)
		return (uint64_t)o->cols * o->rows * slot_size(o->dtype);
	return (uint64_t)o->rows * o->cols * esize(o->dtype);
}

/* SRAM bytes [*lo, *hi) (row offsets) an operand's per-PE tiles span. */
static void ld_span(const struct rowctx *rc, const struct tnpu_operand *o, uint64_t extent, uint64_t *lo,
		    uint64_t *hi)
{
	int64_t a0 = pe_addr(o, 0, 0), a1 = pe_addr(o, rc->cols - 1, 0), a2 = pe_addr(o, 0, rc->pes - 1),
		a3 = pe_addr(o, rc->cols - 1, rc->pes - 1);
	uint64_t base = (uint64_t)(rc->base - rc->rs->sram);

	if (o->flags & TNPU_OPF_WRAP) {	/* from the first PE's row 0 to the last PE's last row */
		*lo = base + (uint64_t)a0;
		*hi = base + (uint64_t)tnpu_row_addr(o, rc->cols - 1, rc->pes - 1, o->rows - 1) + extent -
		      (uint64_t)(o->rows - 1) * o->pitch;
		return;
	}
	/* CPAIR: the extremes over every cluster (the address is affine in c & 1 and c >> 1) */
	for (unsigned c = 1; (o->flags & TNPU_OPF_CPAIR) && c + 1 < rc->cols; c++) {
		int64_t b0 = pe_addr(o, c, 0), b1 = pe_addr(o, c, rc->pes - 1);

		a0 = TNPU_MIN(a0, TNPU_MIN(b0, b1));
		a3 = TNPU_MAX(a3, TNPU_MAX(b0, b1));
	}
	*lo = base + (uint64_t)TNPU_MIN(TNPU_MIN(a0, a1), TNPU_MIN(a2, a3));
	*hi = base + (uint64_t)TNPU_MAX(TNPU_MAX(a0, a1), TNPU_MAX(a2, a3)) + extent;
}

static uint32_t do_ld(struct rowctx *rc, uint16_t w)
{
	unsigned e = rc->ib->rf_base + TNPU_LD_RF(w);
	const struct tnpu_operand *o = &rc->rs->rf[e];
	bool to_wq = w & TNPU_LD_WQ;
	struct slot *s = to_wq ? &rc->rs->wq[TNPU_LD_SLOT(w)] : &rc->rs->in[TNPU_LD_SLOT(w)];
	bool sparse = o->flags & TNPU_OPF_SPARSE, held;
	uint64_t extent, bytes, u, half_off = (uint64_t)(rc->base - rc->rs->sram);
	uint32_t err;

	if ((o->dtype != TNPU_DTYPE_INT8 && o->dtype != TNPU_DTYPE_FP32 && o->dtype != TNPU_DTYPE_BF16) ||
	    !o->rows || !o->cols ||
	    (o->flags & ~(TNPU_OPF_MASK | TNPU_OPF_CPAIR | TNPU_OPF_WRAP)) || (!to_wq && (o->flags & TNPU_OPF_MASK)) ||
	    tnpu_cpair_bad(o) || tnpu_wrap_bad(o) ||
	    ((o->flags & TNPU_OPF_WRAP) && (to_wq || (w & TNPU_LD_MCAST))) ||
	    (o->flags == (TNPU_OPF_SPARSE | TNPU_OPF_TRANS)) || ((w & TNPU_LD_MCAST) && sparse))
		return cfail(rc, TNPU_ERR_OPERAND);
	if (sparse)
		extent = (uint64_t)(o->cols - 1) * o->pitch + (uint64_t)o->rows * slot_size(o->dtype);
	else
		extent = (uint64_t)(o->rows - 1) * o->pitch + (uint64_t)o->cols * esize(o->dtype);
	err = check_range(rc, o, extent, sparse ? (o->dtype == TNPU_DTYPE_FP32 ? 4 : 2) : esize(o->dtype));
	if (err)
		return err;
	u = (uint64_t)(o->col_stride || ((o->flags & TNPU_OPF_CPAIR) && o->su_wrap_delta) ? rc->cols : 1) *
	    (o->pe_stride ? rc->pes : 1);
	bytes = tile_bytes(o);
	/* a slot's rows are reused only for the same half: the buffer holds that half's bytes */
	held = s->valid && s->half_off == half_off;
	if (to_wq && TNPU_CFG_MODE_WQ(rc->ib->mode) == TNPU_WQ_SW && held) {
		const struct tnpu_operand *p = &s->op;

		if (p->pitch && p->pitch == o->pitch && p->rows == o->rows && p->cols == o->cols &&
		    p->dtype == o->dtype && p->flags == o->flags && p->col_stride == o->col_stride &&
		    p->pe_stride == o->pe_stride &&
		    (!(o->flags & TNPU_OPF_CPAIR) || p->su_wrap_delta == o->su_wrap_delta)) {
			int64_t delta = (int64_t)o->addr - (int64_t)p->addr;

			if (delta % (int64_t)o->pitch == 0) {
				int64_t d = delta / (int64_t)o->pitch;

				if (d < 0)
					d = -d;
				if (d < o->rows)
					bytes = bytes / o->rows * (uint64_t)d;
			}
		}
	}
	if (w & TNPU_LD_MCAST) {
		struct tnpu_mcast_block b;
		uint64_t lo, hi, d = u * tile_bytes(o);

		tnpu_dw_mcast_block(rc->cols, rc->pes, o, held && s->mcast ? &s->op : NULL, &b);
		/* the block scan: every PE's address, then the written-line bitmap of every block row
		 * (a word per 4 KiB) -- a 32 Ki-row block is a millisecond (issue #28) */
		if (tnpu_stopped(rc->ex, (uint64_t)rc->cols * rc->pes / 8 +
					 (b.r1 - b.r0) * (1 + b.w / (64 * TNPU_SRAM_LINE))))
			return tnpu_stop_fail(rc->ex);
		if (b.ok) {
			d = TNPU_MIN(d, tnpu_dw_mcast_bytes(rc->rs, half_off, &b));
			lo = half_off + b.lo;
			hi = half_off + b.hi;
		} else {
			ld_span(rc, o, extent, &lo, &hi);
		}
		exe_wait_lines(rc, lo, hi);
		tnpu_hz_range(rc->ex, rc->row, false, TNPU_TRACE_EXE, lo, hi);
		rc->a.dist_bytes += d;
		if (w & TNPU_LD_WIDE)
			rc->a.wide_bytes += d;
	} else {
		uint64_t lo, hi;

		ld_span(rc, o, extent, &lo, &hi);
		exe_wait_lines(rc, lo, hi);
		rc->a.dist_bytes += u * bytes;
		tnpu_hz_range(rc->ex, rc->row, false, TNPU_TRACE_EXE, lo, hi);
	}
	s->valid = true;
	s->half_off = half_off;
	s->mcast = w & TNPU_LD_MCAST;
	s->zskip = w & TNPU_LD_ZSKIP;
	s->op = *o;
	scalar_update(rc, e);
	return 0;
}

/* ---- MAC ---------------------------------------------------------------------- */

static inline bool nz_i8(const uint8_t *p)
{
	return *(const int8_t *)p != 0;
}

static inline bool nz_f32(const uint8_t *p)
{
	float f;

	memcpy(&f, p, 4);
	return f != 0.0f;
}

/* Non-zero test of one element of type dt (+0.0 and -0.0 are zero). */
static inline bool nz(const uint8_t *p, unsigned dt)
{
	switch (dt) {
	case TNPU_DTYPE_INT8:
		return nz_i8(p);
	case TNPU_DTYPE_BF16:
		return (ld16(p) & 0x7FFF) != 0;
	default:
		return nz_f32(p);
	}
}

/* Non-zero count per column of a rows x cols tile. */
TNPU_CLONES
static void col_nnz(const uint8_t *t, uint32_t pitch, unsigned rows, unsigned cols, unsigned dt, uint32_t *out)
{
	bool f32 = dt == TNPU_DTYPE_FP32;

	for (unsigned j = 0; j < cols; j++)
		out[j] = 0;
	for (unsigned i = 0; i < rows; i++) {
		const uint8_t *r = t + (uint64_t)i * pitch;

		if (f32) {
			for (unsigned j = 0; j < cols; j++) {
				float f;

				memcpy(&f, r + 4 * j, 4);
				out[j] += f != 0.0f;
			}
		} else if (dt == TNPU_DTYPE_BF16) {
			for (unsigned j = 0; j < cols; j++)
				out[j] += (ld16(r + 2 * j) & 0x7FFF) != 0;
		} else {
			const int8_t *q = (const int8_t *)r;

			for (unsigned j = 0; j < cols; j++)
				out[j] += q[j] != 0;
		}
	}
}

/* Non-zero count per row of a rows x cols tile. */
static void row_nnz(const uint8_t *t, uint32_t pitch, unsigned rows, unsigned cols, unsigned dt, uint32_t *out)
{
	unsigned es = esize(dt);

	for (unsigned i = 0; i < rows; i++) {
		const uint8_t *r = t + (uint64_t)i * pitch;
		uint32_t n = 0;

		for (unsigned j = 0; j < cols; j++)
			n += nz(r + (size_t)es * j, dt);
		out[i] = n;
	}
}

/* bf16 tiles are widened to fp32 (exact) and multiplied by the fp32 kernels. */
static float *widen(float *dst, const uint8_t *src, size_t pitch, size_t rows, size_t cols)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < cols; j++)
			dst[i * cols + j] = bf16_f32(ld16(src + i * pitch + 2 * j));
	return dst;
}

/* One panel [k0, k0 + kc) of a GEMM; a bf16 panel is widened to fp32 in the capped scratch. */
static void gemm_panel(float *wa, unsigned dt, bool trans, size_t m, size_t n, size_t kc, const uint8_t *a,
		       size_t lda, const uint8_t *b, size_t ldb, void *c, size_t ldc, bool acc)
{
	if (dt == TNPU_DTYPE_BF16) {
		float *wb = wa + m * kc;

		widen(wa, a, lda, m, kc);
		if (trans)
			widen(wb, b, ldb, n, kc);
		else
			widen(wb, b, ldb, kc, n);
		if (trans)
			tnpu_kern_gemm_f32_nt(m, n, kc, wa, kc, wb, kc, c, ldc, acc);
		else
			tnpu_kern_gemm_f32_nn(m, n, kc, wa, kc, wb, n, c, ldc, acc);
	} else if (dt != TNPU_DTYPE_INT8) {
		if (trans)
			tnpu_kern_gemm_f32_nt(m, n, kc, (const float *)(const void *)a, lda / 4,
					      (const float *)(const void *)b, ldb / 4, c, ldc, acc);
		else
			tnpu_kern_gemm_f32_nn(m, n, kc, (const float *)(const void *)a, lda / 4,
					      (const float *)(const void *)b, ldb / 4, c, ldc, acc);
	} else {
		if (trans)
			tnpu_kern_gemm_i8_nt(m, n, kc, (const int8_t *)a, lda, (const int8_t *)b, ldb, c, ldc, acc);
		else
			tnpu_kern_gemm_i8_nn(m, n, kc, (const int8_t *)a, lda, (const int8_t *)b, ldb, c, ldc, acc);
	}
}

/*
 * C (+)= A * B in K panels, in k order, later panels accumulating: bit-identical to one call
 * (tnpu_kernels.h: every element is one sequential chain over k, exact for int8).  Panels bound
 * the host memory of the bf16 widening (TNPU_CVT_SCRATCH_MAX whatever K and the pitches) and
 * the host time between two abort checks (~TNPU_PANEL_MACS multiply-adds).
 */
static uint32_t gemm(struct rowctx *rc, unsigned dt, bool trans, size_t m, size_t n, size_t k, const uint8_t *a,
		     size_t lda, const uint8_t *b, size_t ldb, void *c, size_t ldc, bool acc)
{
	size_t esz = dt == TNPU_DTYPE_BF16 ? 2 : dt == TNPU_DTYPE_INT8 ? 1 : 4;
	size_t kp = TNPU_MAX((size_t)TNPU_PANEL_MACS / TNPU_MAX(m * n, (size_t)1), (size_t)TNPU_PANEL_MIN_K);
	float *wa = NULL;

	if (dt == TNPU_DTYPE_BF16) {
		/* (m + n) <= 16 * 1024 + 64 * 1024, so kp >= 12 */
		kp = TNPU_MIN(kp, TNPU_MAX((size_t)TNPU_CVT_SCRATCH_MAX / ((m + n) * sizeof(float)), (size_t)1));
		wa = tnpu_cvt_scratch(rc->ex, (m + n) * TNPU_MIN(kp, TNPU_MAX(k, (size_t)1)) * sizeof(float));
		if (!wa)
			return cfail(rc, TNPU_ERR_NOMEM);
	}
	if (!k) {
		gemm_panel(wa, dt, trans, m, n, 0, a, lda, b, ldb, c, ldc, acc);
		return 0;
	}
	for (size_t k0 = 0; k0 < k; k0 += kp) {
		size_t kc = TNPU_MIN(kp, k - k0);

		if (tnpu_stopped(rc->ex, 1 + kc * m * n / TNPU_WORK_MACS))
			return tnpu_stop_fail(rc->ex);
		/* A: columns k0..; B: rows k0.. ("nn") or columns k0.. ("nt") */
		gemm_panel(wa, dt, trans, m, n, kc, a + k0 * esz, lda, trans ? b + k0 * esz : b + k0 * ldb, ldb, c,
			   ldc, acc || k0);
	}
	return 0;
}

/* The host-work units gemm() charges for one m x n x k product (its K panels). */
static uint64_t gemm_units(size_t m, size_t n, size_t k)
{
	size_t kp = TNPU_MAX((size_t)TNPU_PANEL_MACS / TNPU_MAX(m * n, (size_t)1), (size_t)TNPU_PANEL_MIN_K);
	uint64_t full = k / kp, rest = k % kp;

	return full * (1 + (uint64_t)kp * m * n / TNPU_WORK_MACS) + (rest ? 1 + rest * m * n / TNPU_WORK_MACS : 0);
}

/*
 * count products C_t (+)= A_t * B of m x n x k sharing B (fp32 or int8), A_t at a + t * sa bytes, C_t at
 * c + t * sc elements: one batched kernel call per K panel (B packed once, not once per product), each
 * element the chain of its own plain call.  The caller charged the host work; the panels (about
 * TNPU_PANEL_MACS each) only check for an abort.
 */
static uint32_t gemm_shared_b(struct rowctx *rc, unsigned dt, bool trans, size_t count, size_t m, size_t n, size_t k,
			      const uint8_t *a, size_t lda, ptrdiff_t sa, const uint8_t *b, size_t ldb, void *c,
			      size_t ldc, ptrdiff_t sc, bool acc)
{
	size_t kp = TNPU_MAX((size_t)TNPU_PANEL_MACS / TNPU_MAX(count * m * n, (size_t)1), (size_t)TNPU_PANEL_MIN_K);
	size_t esz = dt == TNPU_DTYPE_INT8 ? 1 : 4;

	for (size_t k0 = 0; k0 < k; k0 += kp) { /* k >= 1: an LD refuses empty tiles */
		size_t kc = TNPU_MIN(kp, k - k0);
		const uint8_t *ak = a + k0 * esz, *bk = trans ? b + k0 * esz : b + k0 * ldb;

		if (tnpu_stopped(rc->ex, 0))
			return tnpu_stop_fail(rc->ex);
		if (dt == TNPU_DTYPE_INT8)
			(trans ? tnpu_kern_gemm_i8_nt_batch
			       : tnpu_kern_gemm_i8_nn_batch)(count, m, n, kc, (const int8_t *)ak, lda, sa,
							     (const int8_t *)bk, ldb, 0, c, ldc, sc, acc || k0);
		else
			(trans ? tnpu_kern_gemm_f32_nt_batch : tnpu_kern_gemm_f32_nn_batch)(
				count, m, n, kc, (const float *)(const void *)ak, lda / 4, sa / 4,
				(const float *)(const void *)bk, ldb / 4, 0, c, ldc, sc, acc || k0);
	}
	return 0;
}

/* Sparse (value, index) weights: C[i][n] += sum_s A[i][idx_s] * val_s. */
static uint32_t sparse_mac(struct rowctx *rc, const uint8_t *at, uint32_t apitch, const uint8_t *wt,
			   const struct tnpu_operand *wo, unsigned tm, unsigned tn, unsigned K, unsigned dt,
			   void *accp, size_t ld, bool accumulate)
{
	unsigned ss = slot_size(dt), vo = slot_val(dt);
	bool f32 = dt != TNPU_DTYPE_INT8;

	for (unsigned n = 0; n < tn; n++) {
		const uint8_t *col = wt + (uint64_t)n * wo->pitch;

		for (unsigned s = 0; s < wo->rows; s++) {
			const uint8_t *sl = col + (uint64_t)s * ss;
			uint16_t idx = ld16(sl);
			if (nz(sl + vo, dt) && idx >= K)
				return cfail(rc, TNPU_ERR_SPARSE_INDEX);
		}
	}
	for (unsigned i = 0; i < tm; i++) {
		const uint8_t *arow = at + (uint64_t)i * apitch;

		/* tn x 65535 slots per row: abort per row */
		if (tnpu_stopped(rc->ex, 1 + (uint64_t)tn * wo->rows / TNPU_WORK_MACS))
			return tnpu_stop_fail(rc->ex);
		for (unsigned n = 0; n < tn; n++) {
			const uint8_t *col = wt + (uint64_t)n * wo->pitch;

			if (f32) {
				float *c = (float *)accp + i * ld + n;
				float sum = accumulate ? *c : 0.0f;

				for (unsigned s = 0; s < wo->rows; s++) {
					const uint8_t *sl = col + (uint64_t)s * ss;
					float v, x;

					if (!nz(sl + vo, dt))
						continue;
					if (dt == TNPU_DTYPE_BF16) {
						v = bf16_f32(ld16(sl + 2));
						x = bf16_f32(ld16(arow + 2u * ld16(sl)));
					} else {
						memcpy(&v, sl + 4, 4);
						memcpy(&x, arow + 4u * ld16(sl), 4);
					}
					sum += x * v;
				}
				*c = sum;
			} else {
				int32_t *c = (int32_t *)accp + i * ld + n;
				uint32_t sum = accumulate ? (uint32_t)*c : 0;

				for (unsigned s = 0; s < wo->rows; s++) {
					const uint8_t *sl = col + (uint64_t)s * ss;
					int8_t v = (int8_t)sl[2];

					if (!v)
						continue;
					sum += (uint32_t)((int32_t)(int8_t)arow[ld16(sl)] * v);
				}
				*c = (int32_t)sum;
			}
		}
	}
	return 0;
}

static uint32_t do_mac(struct rowctx *rc, uint16_t w, struct exe_acct *acct);
static uint32_t sfu_apply(struct rowctx *rc, unsigned acc, const struct tnpu_operand *prec, bool chained);

/* DW MAC (isa.md "DW MAC"): the arithmetic lives in dw_mac.c; this binds it to the row. */
static uint32_t dw_mac(struct rowctx *rc, uint16_t w, struct exe_acct *acct)
{
	struct row_state *rs = rc->rs;
	unsigned a = TNPU_MAC_ACC(w);
	struct tile_meta *am = &rs->accm[a];
	struct tnpu_dw_job j = {
		.base = rc->base, .cols = rc->cols, .pes = rc->pes,
		.A = &rs->in[TNPU_MAC_IN(w)].op, .B = &rs->wq[TNPU_MAC_WQ(w)].op,
		.rec = &rs->rf[rc->ib->rf_base + rc->ib->dw_rf],
		.acc = rs->acc[a],
		.abort = &rc->ex->abort,
	};
	uint32_t err = tnpu_dw_check(&j);
	uint64_t cyc;

	if (err)
		return cfail(rc, err);
	cyc = div_ceil_u64(j.macs_pe, j.rate);
	if (tnpu_past_watchdog(rc->ex, rc->ex->R[rc->row] + acct->mac, cyc))
		return cfail(rc, TNPU_ERR_WATCHDOG);
	/* its host work charged before it is done (the kernel checks only for an abort) */
	if (tnpu_stopped(rc->ex, 1 + j.macs_pe * rc->cols * rc->pes / TNPU_WORK_MACS))
		return tnpu_stop_fail(rc->ex);
	err = tnpu_dw_run(&j);
	if (err)
		return cfail(rc, err);
	rc->ex->res->counters[TNPU_CNT_MACS_DENSE] += j.macs_pe * rc->cols * rc->pes;
	rc->ex->res->counters[TNPU_CNT_MACS_EFFECTIVE] += j.macs_pe * rc->cols * rc->pes;
	acct->mac += cyc;
	acct->dw_macs++;
	am->valid = true;
	am->tm = (uint16_t)j.tm;
	am->tn = (uint16_t)j.tn;
	am->dtype = j.out_dtype;
	if (TNPU_CFG_MODE_WQ(rc->ib->mode) == TNPU_WQ_SQ)
		rs->wq[TNPU_MAC_WQ(w)].valid = false;
	if ((w & TNPU_MAC_CHAIN) && rc->last)
		return sfu_apply(rc, a, &rs->rf[rc->ib->rf_base + rc->ib->sfu_rf], true);
	return 0;
}

static uint32_t do_mac(struct rowctx *rc, uint16_t w, struct exe_acct *acct)
{
	struct row_state *rs = rc->rs;
	struct slot *si = &rs->in[TNPU_MAC_IN(w)], *sw = &rs->wq[TNPU_MAC_WQ(w)];
	unsigned a = TNPU_MAC_ACC(w);
	struct tile_meta *am = &rs->accm[a];
	const struct tnpu_operand *A, *B;
	unsigned tm, tn, K, cols = rc->cols, pes = rc->pes;
	bool f32, trans, sparse, zs;
	unsigned dt;
	size_t ld;
	uint8_t acc_dtype;
	unsigned rate;
	uint64_t dense, min_cyc, maxcyc = 0, eff_total = 0, lb_moved = 0;

	if (!si->valid || !sw->valid)
		return cfail(rc, TNPU_ERR_SLOT_EMPTY);
	A = &si->op;
	B = &sw->op;
	if (A->dtype != B->dtype)
		return cfail(rc, TNPU_ERR_DTYPE);
	dt = A->dtype;
	/* chain #9: an island's MACs accept only its data types (islands-and-chaining.md), DW MACs
	 * included. */
	if (dt != TNPU_DTYPE_INT32 && !(rs->dtypes & (dt == TNPU_DTYPE_INT8 ? TNPU_CAP_DTYPE_INT8 : dt == TNPU_DTYPE_BF16 ? TNPU_CAP_DTYPE_BF16 :
			   TNPU_CAP_DTYPE_FP32)))
		return cfail(rc, TNPU_ERR_ISLAND_CAP);
	if (w & TNPU_MAC_DW)
		return dw_mac(rc, w, acct);
	acct->other_macs++;
	f32 = dt != TNPU_DTYPE_INT8;	/* fp32 and bf16 accumulate in fp32 */
	trans = B->flags & TNPU_OPF_TRANS;
	sparse = B->flags & TNPU_OPF_SPARSE;
	tm = A->rows;
	K = A->cols;
	if (sparse) {
		tn = B->cols;
	} else if (trans) {
		tn = B->rows;
		if (B->cols != K)
			return cfail(rc, TNPU_ERR_OPERAND);
	} else {
		tn = B->cols;
		if (B->rows != K)
			return cfail(rc, TNPU_ERR_OPERAND);
	}
	if ((uint64_t)tm * tn > TNPU_ACC_ELEMS)
		return cfail(rc, TNPU_ERR_OPERAND);
	acc_dtype = f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32;
	if (am->valid && (am->tm != tm || am->tn != tn))
		return cfail(rc, TNPU_ERR_ACC_SHAPE);
	if (am->valid && am->dtype != acc_dtype)
		return cfail(rc, TNPU_ERR_DTYPE);
	rate = f32 ? TNPU_RATE_MAC_FP32 : TNPU_RATE_MAC_INT8;
	dense = (uint64_t)tm * tn * K;
	/* Zero-skipping cannot go faster than the index compare unit scans candidates
	 * (TNPU_ZSKIP_MAX_SPEEDUP pairs per lane per cycle): this also bounds the host
	 * work per modeled cycle, so the watchdog bounds every job. */
	min_cyc = div_ceil_u64(sparse ? (uint64_t)tm * tn * B->rows : dense,
			       (uint64_t)TNPU_ZSKIP_MAX_SPEEDUP * rate);
	/* Refuse work the watchdog would stop anyway before spending host time. */
	if (tnpu_past_watchdog(rc->ex, rc->ex->R[rc->row] + acct->mac, min_cyc))
		return cfail(rc, TNPU_ERR_WATCHDOG);

	ld = (size_t)pes * tn;
	zs = si->zskip || sw->zskip || sparse;
	{
		void *accp = rs->acc[a];
		bool accumulate = am->valid;
		size_t esz = esize(dt);
		uint32_t err = 0;
		/* A cluster's PE tiles of B side by side: its PEs' products are one GEMM of tm x (pes*tn)
		 * (each element the same chain over k, whatever the call's n). */
		bool b_pes = !sparse && (trans ? (int64_t)B->pe_stride == (int64_t)tn * B->pitch
					       : (int64_t)B->pe_stride == (int64_t)tn * (int64_t)esz);
		bool b_contig = b_pes && B->col_stride == 0 && !(B->flags & TNPU_OPF_CPAIR);

		bool wrap = A->flags & TNPU_OPF_WRAP;

		if (b_contig && A->pe_stride == 0 && (int64_t)A->col_stride == (int64_t)tm * A->pitch &&
		    !(A->flags & (TNPU_OPF_CPAIR | TNPU_OPF_WRAP))) {
			/* Whole row: one call of (cols*tm) x (pes*tn) x K. */
			err = gemm(rc, dt, trans, (size_t)cols * tm, ld, K, rc->base + A->addr, A->pitch,
				   rc->base + B->addr, B->pitch, accp, ld, accumulate);
		} else if (b_pes && A->pe_stride == 0) {
			/* One call per cluster (clusters over N: each its own block of B). */
			for (unsigned c = 0; c < cols && !err; c++)
				/* WRAP: per run of rows in one layout row (each element the same chain) */
				for (uint32_t i = 0, n; i < tm && !err; i += n) {
					n = tnpu_wrap_run(A, c, 0, i, tm);
					err = gemm(rc, dt, trans, n, ld, K, rc->base + tnpu_row_addr(A, c, 0, i), A->pitch,
						   rc->base + pe_addr(B, c, 0), B->pitch,
						   (uint8_t *)accp + ((size_t)c * tm + i) * ld * 4, ld, accumulate);
				}
		} else if (!sparse && !wrap && B->pe_stride == 0 && dt != TNPU_DTYPE_BF16) {
			/* One B per cluster, shared by its PEs, and A per PE (the pointwise lowering's
			 * pixel blocks over PEs): per cluster one batched call, B packed once.  PE p's
			 * tile is rows c*tm.. at columns p*tn of the accumulator; the batch runs over the
			 * PEs (tm rows a pitch apart), or, when that makes fewer row tiles, over the tile's
			 * rows (pes rows a PE stride apart: the C rows tn apart).  Charged as the per-PE
			 * calls it replaces. */
			uint64_t units = (uint64_t)pes * gemm_units(tm, tn, K);
			bool by_row =
				A->pe_stride > 0 && (size_t)tm * ((pes + 15) / 16) < (size_t)pes * ((tm + 15) / 16);

			for (unsigned c = 0; c < cols && !err; c++) {
				const uint8_t *at = rc->base + pe_addr(A, c, 0), *bt = rc->base + pe_addr(B, c, 0);
				uint8_t *cc = (uint8_t *)accp + (size_t)c * tm * ld * 4;

				if (tnpu_stopped(rc->ex, units))
					return tnpu_stop_fail(rc->ex);
				if (by_row)
					err = gemm_shared_b(rc, dt, trans, tm, pes, tn, K, at, (size_t)A->pe_stride,
							    (ptrdiff_t)A->pitch, bt, B->pitch, cc, tn, (ptrdiff_t)ld,
							    accumulate);
				else
					err = gemm_shared_b(rc, dt, trans, pes, tm, tn, K, at, A->pitch,
							    (ptrdiff_t)A->pe_stride, bt, B->pitch, cc, ld,
							    (ptrdiff_t)tn, accumulate);
			}
		} else {
			for (unsigned c = 0; c < cols; c++) {
				for (unsigned p = 0; p < pes; p++) {
					uint8_t *cp = (uint8_t *)accp + ((size_t)c * tm * ld + (size_t)p * tn) * 4;
					const uint8_t *at = rc->base + pe_addr(A, c, p);
					const uint8_t *bt = rc->base + pe_addr(B, c, p);

					if (sparse)
						err = sparse_mac(rc, at, A->pitch, bt, B, tm, tn, K, dt, cp, ld,
								 accumulate);
					else if (wrap)	/* per run of rows in one layout row */
						for (uint32_t i = 0, n; i < tm && !err; i += n) {
							n = tnpu_wrap_run(A, c, p, i, tm);
							err = gemm(rc, dt, trans, n, tn, K,
								   rc->base + tnpu_row_addr(A, c, p, i), A->pitch, bt,
								   B->pitch, cp + (size_t)i * ld * 4, ld, accumulate);
						}
					else
						err = gemm(rc, dt, trans, tm, tn, K, at, A->pitch, bt, B->pitch, cp,
							   ld, accumulate);
					if (err)
						return err;
				}
			}
		}
		if (err)
			return err;
	}

	/* Effective MACs and cycles. */
	if (!zs) {
		eff_total = dense * cols * pes;
		maxcyc = div_ceil_u64(dense, rate);
	} else {
		uint32_t *nza = (uint32_t *)(void *)tnpu_scratch(rc->ex, (size_t)K * 8 + (size_t)tn * 4 + 64);
		uint32_t *nzb;
		uint64_t prev = 0;
		/* Elements the counts below read per PE: A's tm x K (or K counts set), the weights' tn x K
		 * or sparse slots, and the K products.  Up to 2^26 per PE (pitch-0 operands), ~0.1 s of host
		 * time: charged, and an abort or the budget stops the loop, PE by PE (issue #28). */
		uint64_t nnz_elems = (uint64_t)K * (si->zskip ? tm : 1) + (uint64_t)K +
				     (sparse ? (uint64_t)tn * B->rows : (uint64_t)K * (sw->zskip ? tn : 1));

		if (!nza)
			return cfail(rc, TNPU_ERR_NOMEM);
		nzb = nza + K;
		for (unsigned c = 0; c < cols; c++) {
			for (unsigned p = 0; p < pes; p++) {
				const uint8_t *at = rc->base + pe_addr(A, c, p);
				const uint8_t *bt = rc->base + pe_addr(B, c, p);
				uint64_t e = 0, cyc;

				if (tnpu_stopped(rc->ex, 1 + nnz_elems / TNPU_WORK_NNZ))
					return tnpu_stop_fail(rc->ex);
				if (si->zskip && (A->flags & TNPU_OPF_WRAP)) {
					/* per run of rows, summed (nzb: scratch until the weights' counts) */
					for (unsigned k = 0; k < K; k++)
						nza[k] = 0;
					for (uint32_t i = 0, n; i < tm; i += n) {
						n = tnpu_wrap_run(A, c, p, i, tm);
						col_nnz(rc->base + tnpu_row_addr(A, c, p, i), A->pitch, n, K, dt, nzb);
						for (unsigned k = 0; k < K; k++)
							nza[k] += nzb[k];
					}
				} else if (si->zskip)
					col_nnz(at, A->pitch, tm, K, dt, nza);
				else
					for (unsigned k = 0; k < K; k++)
						nza[k] = tm;
				if (sparse) {
					unsigned ss = slot_size(dt), vo = slot_val(dt);

					for (unsigned n = 0; n < tn; n++)
						for (unsigned s = 0; s < B->rows; s++) {
							const uint8_t *sl = bt + (uint64_t)n * B->pitch + (uint64_t)s * ss;

							if (nz(sl + vo, dt))
								e += nza[ld16(sl)];
						}
				} else {
					if (sw->zskip) {
						if (trans)
							col_nnz(bt, B->pitch, tn, K, dt, nzb);
						else
							row_nnz(bt, B->pitch, K, tn, dt, nzb);
					} else {
						for (unsigned k = 0; k < K; k++)
							nzb[k] = tn;
					}
					for (unsigned k = 0; k < K; k++)
						e += (uint64_t)nza[k] * nzb[k];
				}
				eff_total += e;
				if (w & TNPU_MAC_LB) {
					/* PEs 2i, 2i+1 share their work (seed 001 paras 98-102). */
					if (p & 1) {
						cyc = div_ceil_u64(prev + e, 2ull * rate);
						/* The busier PE of the pair hands half the difference over. */
						lb_moved += (prev > e ? prev - e : e - prev) / 2;
					} else if (p == pes - 1) {
						cyc = div_ceil_u64(e, rate);
					} else {
						prev = e;
						continue;
					}
				} else {
					cyc = div_ceil_u64(e, rate);
				}
				maxcyc = TNPU_MAX(maxcyc, cyc);
			}
		}
	}
	maxcyc = TNPU_MAX(maxcyc, min_cyc);
	rc->ex->res->counters[TNPU_CNT_MACS_DENSE] += dense * cols * pes;
	rc->ex->res->counters[TNPU_CNT_MACS_EFFECTIVE] += eff_total;
	rc->ex->res->counters[TNPU_CNT_LB_MACS_MOVED] += lb_moved;
	acct->mac += maxcyc;
	am->valid = true;
	am->tm = (uint16_t)tm;
	am->tn = (uint16_t)tn;
	am->dtype = acc_dtype;
	if (TNPU_CFG_MODE_WQ(rc->ib->mode) == TNPU_WQ_SQ)
		sw->valid = false;
	if ((w & TNPU_MAC_CHAIN) && rc->last)
		return sfu_apply(rc, a, &rs->rf[rc->ib->rf_base + rc->ib->sfu_rf], true);
	return 0;
}

/* ---- SFU ------------------------------------------------------------------------ */

struct sfu_p {
	uint32_t bias_addr;
	int32_t bcs, bps;
	uint32_t scale;
	uint8_t ops, shift, out;
	int16_t zp;
	uint32_t lo, hi;
};

static uint32_t sfu_decode(struct rowctx *rc, const struct tnpu_operand *rec, uint8_t acc_dtype, struct sfu_p *p)
{
	uint8_t raw[32];

	/* The register file stores the raw 32 bytes; re-encode to reinterpret. */
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
	p->bias_addr = ld32(raw);
	p->bcs = (int32_t)ld32(raw + 4);
	p->bps = (int32_t)ld32(raw + 8);
	p->scale = ld32(raw + 12);
	p->ops = raw[16];
	p->shift = raw[17];
	p->zp = (int16_t)ld16(raw + 18);
	p->out = raw[20];
	p->lo = ld32(raw + 24);
	p->hi = ld32(raw + 28);
	if ((p->ops & ~TNPU_SFU_OP_MASK) || raw[21] || raw[22] || raw[23])
		return cfail(rc, TNPU_ERR_SFU_PARAM);
	if (acc_dtype == TNPU_DTYPE_FP32) {
		if (p->out != TNPU_DTYPE_FP32)
			return cfail(rc, TNPU_ERR_SFU_PARAM);
	} else {
		if ((p->ops & TNPU_SFU_OP_REQUANT) ? p->out != TNPU_DTYPE_INT8 : p->out != TNPU_DTYPE_INT32)
			return cfail(rc, TNPU_ERR_SFU_PARAM);
		if ((p->ops & TNPU_SFU_OP_REQUANT) && (p->shift > 62 || p->zp < -128 || p->zp > 127))
			return cfail(rc, TNPU_ERR_SFU_PARAM);
	}
	/* QCOL (ISA 2): int path with REQUANT only; the record's own multiplier and shift stay 0 */
	if ((p->ops & TNPU_SFU_OP_QCOL) &&
	    (acc_dtype == TNPU_DTYPE_FP32 || !(p->ops & TNPU_SFU_OP_REQUANT) || p->scale || p->shift))
		return cfail(rc, TNPU_ERR_SFU_PARAM);
	return 0;
}

/* Bytes per column of the vector at bias_addr: QCOL records or plain bias values. */
static unsigned sfu_col_bytes(const struct sfu_p *p)
{
	return (p->ops & TNPU_SFU_OP_QCOL) ? sizeof(struct tnpu_sfu_qcol) : 4;
}

/* The SFU functions run `rows` rows of n columns, ld elements apart in x and y (a PE tile, or a row
 * of all PEs: one call per tile keeps the call and the flag tests out of the row loop); every row
 * takes the same column vector.  x, y and the vector never overlap (accumulator or staging buffer,
 * output queue, SRAM): restrict lets the loops vectorise without run-time overlap checks. */
TNPU_CLONES
static void sfu_int_rows(const int32_t *restrict x, int32_t *restrict y, unsigned n, unsigned rows, size_t ld,
			 const int32_t *restrict bias, const struct sfu_p *p)
{
	/* shift is only validated (<= 62) when REQUANT is on; found by libFuzzer/UBSan. */
	int64_t rnd = (p->ops & TNPU_SFU_OP_REQUANT) && p->shift ? (int64_t)1 << (p->shift - 1) : 0;

	for (unsigned i = 0; i < rows; i++, x += ld, y += ld) {
		for (unsigned j = 0; j < n; j++) {
			int32_t v = x[j];

			if (p->ops & TNPU_SFU_OP_BIAS)
				v = (int32_t)((uint32_t)v + (uint32_t)bias[j]);
			if (p->ops & TNPU_SFU_OP_RELU)
				v = v < 0 ? 0 : v;
			if (p->ops & TNPU_SFU_OP_CLAMP)
				v = v < (int32_t)p->lo ? (int32_t)p->lo : (v > (int32_t)p->hi ? (int32_t)p->hi : v);
			if (p->ops & TNPU_SFU_OP_REQUANT) {
				int64_t q = (((int64_t)v * (int32_t)p->scale + rnd) >> p->shift) + p->zp;

				v = q < -128 ? -128 : (q > 127 ? 127 : (int32_t)q);
			}
			y[j] = v;
		}
	}
}

/* QCOL: as sfu_int_rows with column j's bias, multiplier and shift from its 12-byte record. */
TNPU_CLONES
static void sfu_qcol_rows(const int32_t *restrict x, int32_t *restrict y, unsigned n, unsigned rows, size_t ld,
			  const uint8_t *restrict recs, const struct sfu_p *p)
{
	for (unsigned i = 0; i < rows; i++, x += ld, y += ld) {
		const uint8_t *rec = recs;

		for (unsigned j = 0; j < n; j++, rec += sizeof(struct tnpu_sfu_qcol)) {
			int32_t v = x[j], m = (int32_t)ld32(rec + 4);
			uint32_t sh = ld32(rec + 8);
			int64_t q;

			if (p->ops & TNPU_SFU_OP_BIAS)
				v = (int32_t)((uint32_t)v + ld32(rec));
			if (p->ops & TNPU_SFU_OP_RELU)
				v = v < 0 ? 0 : v;
			if (p->ops & TNPU_SFU_OP_CLAMP)
				v = v < (int32_t)p->lo ? (int32_t)p->lo : (v > (int32_t)p->hi ? (int32_t)p->hi : v);
			sh = sh > 62 ? 62 : sh;	/* the records are data, not checked */
			q = (((int64_t)v * m + (sh ? (int64_t)1 << (sh - 1) : 0)) >> sh) + p->zp;
			y[j] = q < -128 ? -128 : (q > 127 ? 127 : (int32_t)q);
		}
	}
}

TNPU_CLONES
static void sfu_f32_rows(const float *restrict x, float *restrict y, unsigned n, unsigned rows, size_t ld,
			 const float *restrict bias, const struct sfu_p *p)
{
	float lo, hi, sc;

	memcpy(&lo, &p->lo, 4);
	memcpy(&hi, &p->hi, 4);
	memcpy(&sc, &p->scale, 4);
	/* The usual epilogues with the flag tests hoisted (they vectorise); the same operations in
	 * the same order as the general loop. */
	switch (p->ops & (TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU | TNPU_SFU_OP_CLAMP | TNPU_SFU_OP_REQUANT)) {
	case TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RELU:
		for (unsigned i = 0; i < rows; i++, x += ld, y += ld)
			for (unsigned j = 0; j < n; j++) {
				float v = x[j] + bias[j];

				y[j] = v < 0.0f ? 0.0f : v;
			}
		return;
	case TNPU_SFU_OP_BIAS:
		for (unsigned i = 0; i < rows; i++, x += ld, y += ld)
			for (unsigned j = 0; j < n; j++)
				y[j] = x[j] + bias[j];
		return;
	case TNPU_SFU_OP_RELU:
		for (unsigned i = 0; i < rows; i++, x += ld, y += ld)
			for (unsigned j = 0; j < n; j++)
				y[j] = x[j] < 0.0f ? 0.0f : x[j];
		return;
	case TNPU_SFU_OP_BIAS | TNPU_SFU_OP_CLAMP:	/* ReLU6 after a conv with bias: MobileNets */
		for (unsigned i = 0; i < rows; i++, x += ld, y += ld)
			for (unsigned j = 0; j < n; j++) {
				float v = x[j] + bias[j];

				y[j] = v < lo ? lo : (v > hi ? hi : v);
			}
		return;
	case TNPU_SFU_OP_CLAMP:
		for (unsigned i = 0; i < rows; i++, x += ld, y += ld)
			for (unsigned j = 0; j < n; j++) {
				float v = x[j];

				y[j] = v < lo ? lo : (v > hi ? hi : v);
			}
		return;
	default:
		break;
	}
	for (unsigned i = 0; i < rows; i++, x += ld, y += ld) {
		for (unsigned j = 0; j < n; j++) {
			float v = x[j];

			if (p->ops & TNPU_SFU_OP_BIAS)
				v += bias[j];
			if (p->ops & TNPU_SFU_OP_RELU)
				v = v < 0.0f ? 0.0f : v;
			if (p->ops & TNPU_SFU_OP_CLAMP)
				v = v < lo ? lo : (v > hi ? hi : v);
			if (p->ops & TNPU_SFU_OP_REQUANT)
				v *= sc;
			y[j] = v;
		}
	}
}

/* RESIDUAL, one run of n columns into t: fp32 (x + bias) + r, in that order (vectorises). */
TNPU_CLONES
static void residual_f32(const float *x, const uint8_t *bias, const uint8_t *r, float *t, size_t n)
{
	if (bias) {
		for (size_t j = 0; j < n; j++) {
			float b, v;

			memcpy(&b, bias + 4 * j, 4);
			memcpy(&v, r + 4 * j, 4);
			t[j] = (x[j] + b) + v;
		}
		return;
	}
	for (size_t j = 0; j < n; j++) {
		float v;

		memcpy(&v, r + 4 * j, 4);
		t[j] = x[j] + v;
	}
}

/* int32: x + bias + r modulo 2^32, the bias word every cb bytes (a plain vector or QCOL records). */
static void residual_int(const uint32_t *x, const uint8_t *bias, unsigned cb, const uint8_t *r, uint32_t *t,
			 size_t n)
{
	for (size_t j = 0; j < n; j++)
		t[j] = x[j] + (bias ? ld32(bias + (size_t)cb * j) : 0) + ld32(r + 4 * j);
}

/* RESIDUAL (ISA 2): x = (x + bias) + R[i][j] with R the operand record in the register-file entry
 * after the SFU record, then the record's other ops.  Same output-queue effects as sfu_apply. */
static uint32_t sfu_residual(struct rowctx *rc, unsigned a, const struct tnpu_operand *prec, const struct sfu_p *p,
			     bool chained)
{
	struct row_state *rs = rc->rs;
	struct tile_meta *am = &rs->accm[a];
	unsigned tm = am->tm, tn = am->tn, cols = rc->cols, pes = rc->pes;
	size_t ld = (size_t)pes * tn, win = (size_t)(prec - &rs->rf[rc->ib->rf_base]);
	uint64_t elems = (uint64_t)tm * tn;
	const struct tnpu_operand *ro = prec + 1;
	struct sfu_p q = *p;
	uint32_t err;
	TNPU_UNINIT uint32_t tmp[TNPU_ACC_ELEMS];

	if (win + 1 >= TNPU_RF_WINDOW)
		return cfail(rc, TNPU_ERR_SFU_PARAM);
	if ((ro->flags & ~TNPU_OPF_CPAIR) || tnpu_cpair_bad(ro))
		return cfail(rc, TNPU_ERR_OPERAND);
	if (ro->rows != tm || ro->cols != tn)
		return cfail(rc, TNPU_ERR_ACC_SHAPE);
	if (ro->dtype != am->dtype)
		return cfail(rc, TNPU_ERR_DTYPE);
	err = check_range(rc, ro, (uint64_t)(tm - 1) * ro->pitch + (uint64_t)tn * 4, 4);
	if (err)
		return err;
	q.ops &= (uint8_t)~(TNPU_SFU_OP_BIAS | TNPU_SFU_OP_RESIDUAL);

	unsigned cb = sfu_col_bytes(p);
	bool colvec = p->ops & (TNPU_SFU_OP_BIAS | TNPU_SFU_OP_QCOL);
	/* The PEs' residual tiles side by side, and their column vectors too (or none): a row of all
	 * PEs is one run (the same element operations; tn is often 1, as in a direct convolution). */
	bool whole = (int64_t)ro->pe_stride == (int64_t)tn * 4 && (!colvec || (int64_t)p->bps == (int64_t)tn * cb);
	unsigned n_pe = whole ? 1 : pes;
	size_t n = whole ? ld : tn;

	for (unsigned c = 0; c < cols; c++) {
		for (unsigned pe = 0; pe < n_pe; pe++) {
			int64_t ba = (int64_t)p->bias_addr + (int64_t)c * p->bcs + (int64_t)pe * p->bps;
			const uint8_t *bias = (p->ops & TNPU_SFU_OP_BIAS) ? rc->base + ba : NULL;
			const uint8_t *qcol = (p->ops & TNPU_SFU_OP_QCOL) ? rc->base + ba : NULL;
			const uint8_t *res = rc->base + pe_addr(ro, c, pe);

			for (unsigned i = 0; i < tm; i++) {
				size_t o = ((size_t)c * tm + i) * ld + (size_t)pe * tn;
				const uint8_t *r = res + (uint64_t)i * ro->pitch;

				for (size_t j0 = 0; j0 < n; j0 += TNPU_ACC_ELEMS) {
					size_t jn = TNPU_MIN(n - j0, (size_t)TNPU_ACC_ELEMS);
					const uint8_t *bj = bias ? bias + (size_t)cb * j0 : NULL;

					if (am->dtype == TNPU_DTYPE_FP32) {
						residual_f32((const float *)rs->acc[a] + o + j0, bj, r + 4 * j0,
							     (float *)(void *)tmp, jn);
						sfu_f32_rows((const float *)(const void *)tmp, (float *)rs->oq + o + j0,
							     (unsigned)jn, 1, 0, NULL, &q);
						continue;
					}
					residual_int((const uint32_t *)rs->acc[a] + o + j0, bj, cb, r + 4 * j0, tmp, jn);
					if (qcol)
						sfu_qcol_rows((const int32_t *)(const void *)tmp, (int32_t *)rs->oq + o + j0,
							      (unsigned)jn, 1, 0, qcol + (size_t)cb * j0, &q);
					else
						sfu_int_rows((const int32_t *)(const void *)tmp, (int32_t *)rs->oq + o + j0,
							     (unsigned)jn, 1, 0, NULL, &q);
				}
			}
		}
	}
	rs->oqm.valid = true;
	rs->oqm.acc = (uint8_t)a;
	rs->oqm.tm = (uint16_t)tm;
	rs->oqm.tn = (uint16_t)tn;
	rs->oqm.dtype = p->out;
	rc->ex->res->counters[TNPU_CNT_SFU_OPS] += elems * cols * pes;
	rc->ex->res->counters[TNPU_CNT_OQ_ACCESSES] += elems * cols * pes * (chained ? 1 : 3);
	rc->a.sfu += div_ceil_u64(elems, TNPU_RATE_SFU) + div_ceil_u64(elems * 4 * pes, TNPU_RATE_ST);
	return 0;
}

/* acc -> SFU -> output queue (APPLY / chained). */
static uint32_t sfu_apply(struct rowctx *rc, unsigned a, const struct tnpu_operand *prec, bool chained)
{
	struct row_state *rs = rc->rs;
	struct tile_meta *am = &rs->accm[a];
	unsigned tm = am->tm, tn = am->tn, cols = rc->cols, pes = rc->pes;
	size_t ld = (size_t)pes * tn;
	uint64_t elems = (uint64_t)tm * tn;
	struct sfu_p p;
	uint32_t err;

	if (!am->valid)
		return cfail(rc, TNPU_ERR_SLOT_EMPTY);
	err = sfu_decode(rc, prec, am->dtype, &p);
	if (err)
		return err;
	bool colvec = p.ops & (TNPU_SFU_OP_BIAS | TNPU_SFU_OP_QCOL);
	unsigned cb = sfu_col_bytes(&p);

	if (colvec) {
		struct tnpu_operand bo = { .addr = p.bias_addr, .col_stride = p.bcs, .pe_stride = p.bps };

		err = check_range(rc, &bo, (uint64_t)tn * cb, 4);
		if (err)
			return err;
	}
	if (p.ops & TNPU_SFU_OP_RESIDUAL)	/* ISA 2: vector-units.md "SFU residual operand" */
		return sfu_residual(rc, a, prec, &p, chained);
	/* A row's PE tiles lie side by side in the accumulator and output queue: with no column vector,
	 * or the PEs' vectors side by side too, one call covers the row (the same element operations).
	 * PEs sharing their cluster's vector (bps = 0: the pointwise lowering's pixel blocks over PEs,
	 * tn often 1 or 2) read it repeated across the row from a copy made once per cluster. */
	bool whole = !colvec || (int64_t)p.bps == (int64_t)tn * cb;
	bool rep = colvec && !whole && p.bps == 0 && pes > 1 && (uint64_t)ld * cb <= TNPU_SFU_REP_MAX;
	uint8_t *repv = rep ? tnpu_scratch(rc->ex, (size_t)ld * cb) : NULL;
	unsigned n_pe = whole || repv ? 1 : pes, n = whole || repv ? (unsigned)ld : tn;

	for (unsigned c = 0; c < cols; c++) {
		for (unsigned pe = 0; pe < n_pe; pe++) {
			const uint8_t *bias = NULL;

			if (colvec) {
				int64_t ba = (int64_t)p.bias_addr + (int64_t)c * p.bcs + (int64_t)pe * p.bps;

				bias = rc->base + ba;
			}
			if (repv) {
				for (unsigned q = 0; q < pes; q++)
					memcpy(repv + (size_t)q * tn * cb, bias, (size_t)tn * cb);
				bias = repv;
			}
			size_t o = (size_t)c * tm * ld + (size_t)pe * tn;	/* the tile's first row */

			if (am->dtype == TNPU_DTYPE_FP32)
				sfu_f32_rows((const float *)rs->acc[a] + o, (float *)rs->oq + o, n, tm, ld,
					     (const float *)(const void *)bias, &p);
			else if (p.ops & TNPU_SFU_OP_QCOL)
				sfu_qcol_rows((const int32_t *)rs->acc[a] + o, (int32_t *)rs->oq + o, n, tm, ld, bias, &p);
			else
				sfu_int_rows((const int32_t *)rs->acc[a] + o, (int32_t *)rs->oq + o, n, tm, ld,
					     (const int32_t *)(const void *)bias, &p);
		}
	}
	rs->oqm.valid = true;
	rs->oqm.acc = (uint8_t)a;
	rs->oqm.tm = (uint16_t)tm;
	rs->oqm.tn = (uint16_t)tn;
	rs->oqm.dtype = p.out;
	rc->ex->res->counters[TNPU_CNT_SFU_OPS] += elems * cols * pes;
	rc->ex->res->counters[TNPU_CNT_OQ_ACCESSES] += elems * cols * pes * (chained ? 1 : 3);
	rc->a.sfu += div_ceil_u64(elems, TNPU_RATE_SFU);
	return 0;
}

static uint32_t do_sfu(struct rowctx *rc, uint16_t w)
{
	struct row_state *rs = rc->rs;
	unsigned a = TNPU_SFU_ACC(w);
	struct tile_meta *am = &rs->accm[a];

	if (!am->valid)
		return cfail(rc, TNPU_ERR_SLOT_EMPTY);
	if (TNPU_SFU_FN(w) == TNPU_SFU_FN_APPLY)
		return sfu_apply(rc, a, &rs->rf[rc->ib->rf_base + TNPU_SFU_RF(w)], false);
	/* PASS: non-SF write-through. */
	{
		uint64_t elems = (uint64_t)am->tm * am->tn;
		size_t n = (size_t)rc->cols * rc->pes * elems;

		memcpy(rs->oq, rs->acc[a], n * 4);
		rs->oqm = *am;
		rs->oqm.acc = (uint8_t)a;
		rc->ex->res->counters[TNPU_CNT_OQ_ACCESSES] += n;
		rc->a.sfu += div_ceil_u64(elems, TNPU_RATE_OQ);
	}
	return 0;
}

/* ---- ST ------------------------------------------------------------------------- */

/* 32-bit tiles of tn (a constant after inlining) columns, each PE's rows in turn (the order of the
 * general loop, so overlapping tiles end the same): fixed-size copies, no library call per row. */
static inline __attribute__((always_inline)) void st_small(struct rowctx *rc, const struct tnpu_operand *o,
							   const uint8_t *data, unsigned tm, unsigned tn)
{
	size_t ld = (size_t)rc->pes * tn;

	for (unsigned c = 0; c < rc->cols; c++) {
		for (unsigned p = 0; p < rc->pes; p++) {
			uint8_t *d = rc->base + pe_addr(o, c, p);
			const uint8_t *s = data + ((size_t)c * tm * ld + (size_t)p * tn) * 4;

			for (unsigned i = 0; i < tm; i++, d += o->pitch, s += ld * 4)
				memcpy(d, s, 4 * tn);
		}
	}
}

static uint32_t do_st(struct rowctx *rc, uint16_t w)
{
	struct row_state *rs = rc->rs;
	unsigned e = rc->ib->rf_base + TNPU_ST_RF(w), a = TNPU_ST_ACC(w);
	const struct tnpu_operand *o = &rs->rf[e];
	bool raw = w & TNPU_ST_RAW;
	const struct tile_meta *src = raw ? &rs->accm[a] : &rs->oqm;
	const uint8_t *data = raw ? rs->acc[a] : rs->oq;
	unsigned tm, tn, es, cols = rc->cols, pes = rc->pes;
	size_t ld;
	uint32_t err;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (!src->valid || (!raw && src->acc != a))
		return cfail(rc, TNPU_ERR_SLOT_EMPTY);
	tm = src->tm;
	tn = src->tn;
	if ((o->flags & ~(TNPU_OPF_CPAIR | TNPU_OPF_WRAP)) || tnpu_cpair_bad(o) || tnpu_wrap_bad(o))
		return cfail(rc, TNPU_ERR_OPERAND);
	if (o->rows != tm || o->cols != tn)
		return cfail(rc, TNPU_ERR_ACC_SHAPE);
	if (o->dtype != src->dtype)
		return cfail(rc, TNPU_ERR_DTYPE);
	es = esize(o->dtype);
	err = check_range(rc, o, (uint64_t)(tm - 1) * o->pitch + (uint64_t)tn * es, es);
	if (err)
		return err;
	ld = (size_t)pes * tn;
	/* fp32/int32 PE tiles side by side in SRAM (pe_stride = tn elements) and rows that do not
	 * overlap: a row of all PEs is one run on both sides, copied at once (the same bytes). */
	if (o->flags & TNPU_OPF_WRAP) {
		/* rows where the layout puts them (isa.md "Row wrap"), each PE in turn as below */
		for (unsigned c = 0; c < cols; c++)
			for (unsigned p = 0; p < pes; p++)
				for (unsigned i = 0; i < tm; i++) {
					uint8_t *dst = rc->base + tnpu_row_addr(o, c, p, i);
					const uint8_t *s = data + (((size_t)c * tm + i) * ld + (size_t)p * tn) * 4;

					if (es == 4)
						memcpy(dst, s, (size_t)tn * 4);
					else
						for (unsigned j = 0; j < tn; j++)
							dst[j] = s[4 * j];
				}
		lo = (uint64_t)tnpu_row_addr(o, 0, 0, 0);
		hi = (uint64_t)tnpu_row_addr(o, cols - 1, pes - 1, tm - 1) + (uint64_t)tn * es;
		goto stored;
	}
	if (es == 4 && (int64_t)o->pe_stride == (int64_t)tn * 4 && (tm == 1 || (uint64_t)o->pitch >= ld * 4)) {
		for (unsigned c = 0; c < cols; c++) {
			uint64_t pa = (uint64_t)pe_addr(o, c, 0);

			for (unsigned i = 0; i < tm; i++)
				memcpy(rc->base + pa + (uint64_t)i * o->pitch, data + ((size_t)c * tm + i) * ld * 4, ld * 4);
			lo = TNPU_MIN(lo, pa);
			hi = TNPU_MAX(hi, pa + (uint64_t)(tm - 1) * o->pitch + (uint64_t)ld * 4);
		}
		goto stored;
	}
	if (es == 4 && tn <= 4) {
		/* a few channels per PE (the pointwise lowering's pixel blocks over PEs) */
		switch (tn) {
		case 1:
			st_small(rc, o, data, tm, 1);
			break;
		case 2:
			st_small(rc, o, data, tm, 2);
			break;
		case 3:
			st_small(rc, o, data, tm, 3);
			break;
		default:
			st_small(rc, o, data, tm, 4);
			break;
		}
		for (unsigned c = 0; c < cols; c++)
			for (unsigned p = 0; p < pes; p++) {
				uint64_t pa = (uint64_t)pe_addr(o, c, p);

				lo = TNPU_MIN(lo, pa);
				hi = TNPU_MAX(hi, pa + (uint64_t)(tm - 1) * o->pitch + (uint64_t)tn * es);
			}
		goto stored;
	}
	for (unsigned c = 0; c < cols; c++) {
		for (unsigned p = 0; p < pes; p++) {
			uint64_t pa = (uint64_t)pe_addr(o, c, p);

			for (unsigned i = 0; i < tm; i++) {
				uint8_t *dst = rc->base + pa + (uint64_t)i * o->pitch;
				const uint8_t *s = data + (((size_t)c * tm + i) * ld + (size_t)p * tn) * 4;

				if (es == 4 && tn == 16) {	/* the usual tile: an inlined 64-byte copy */
					memcpy(dst, s, 64);
				} else if (es == 4) {
					memcpy(dst, s, (size_t)tn * 4);
				} else {
					for (unsigned j = 0; j < tn; j++)
						dst[j] = s[4 * j];	/* int8 held in the low byte, LE */
				}
			}
			lo = TNPU_MIN(lo, pa);
			hi = TNPU_MAX(hi, pa + (uint64_t)(tm - 1) * o->pitch + (uint64_t)tn * es);
		}
	}
stored:
	if (raw)
		rc->ex->res->counters[TNPU_CNT_OQ_ACCESSES] += (uint64_t)tm * tn * cols * pes;
	else
		rs->oqm.valid = false;
	if (raw)
		rc->a.sfu += div_ceil_u64((uint64_t)tm * tn, TNPU_RATE_OQ);
	rc->a.st += div_ceil_u64((uint64_t)tm * tn * es * pes, TNPU_RATE_ST);
	{
		uint64_t off = (uint64_t)(rc->base - rs->sram);

		sram_mark(rs, off + lo, off + hi);
		/* a tile per PE when the strides make one pattern (the plain case), else every PE's row where
		 * the rewrite puts it (row wrap, cluster pairs; a run of PEs when they are side by side), so
		 * the layout rows' padding between segments stays out: the order of work of the copy above */
		if (!(o->flags & (TNPU_OPF_CPAIR | TNPU_OPF_WRAP)) && o->pe_stride >= 0 && o->col_stride >= 0) {
			tnpu_hz_tiles(rc->ex, rc->row, true, TNPU_TRACE_EXE, off + (uint64_t)o->addr, (uint64_t)tn * es,
				      tm, pes, cols, o->pitch, (uint64_t)o->pe_stride, (uint64_t)o->col_stride);
		} else if (rc->ex->hz) {
			for (unsigned c = 0; c < cols; c++)
				for (unsigned i = 0; i < tm; i++)
					for (unsigned p = 0; p < pes;) {
						uint64_t ra = (uint64_t)tnpu_row_addr(o, c, p, i);
						unsigned q = p + 1;

						while (q < pes && (uint64_t)tnpu_row_addr(o, c, q, i) ==
									  ra + (uint64_t)(q - p) * (uint64_t)tn * es)
							q++;
						tnpu_hz_range(rc->ex, rc->row, true, TNPU_TRACE_EXE, off + ra,
							      off + ra + (uint64_t)(q - p) * tn * es);
						p = q;
					}
		}
		/* the tile's lines are written when the run's work so far is done (STREAM D2H waits) */
		tnpu_sb_add(&rs->sb_out, off + lo, off + hi, exe_time(rc));
	}
	scalar_update(rc, e);
	return 0;
}

/* ---- EXE ---------------------------------------------------------------------- */

static uint32_t issue(struct rowctx *rc, unsigned idx)
{
	uint16_t w = rc->ib->instr[idx];
	unsigned op = TNPU_INSN_OP(w);

	if (tnpu_stopped(rc->ex, 1))
		return tnpu_stop_fail(rc->ex);
	if (op == TNPU_OP_ST && !rc->last)
		return 0;
	/* Long EXE loops: stop as soon as the row's time passes the watchdog. */
	if (rc->ex->R[rc->row] + TNPU_CYC_EXE + rc->a.issued + rc->a.mac + rc->a.sfu + rc->a.st +
		    rc->a.dist_bytes / TNPU_RATE_DISPATCH > rc->ex->cfg.watchdog_cycles)
		return tnpu_fail(rc->ex, TNPU_ERR_WATCHDOG, rc->info, 0);
	rc->info = (rc->info & 0xFFFF) | (idx << 16);
	rc->a.issued++;
	switch (op) {
	case TNPU_OP_LD:
		return do_ld(rc, w);
	case TNPU_OP_ST:
		return do_st(rc, w);
	case TNPU_OP_MAC:
		return do_mac(rc, w, &rc->a);
	default:
		return do_sfu(rc, w);
	}
}

static uint32_t do_exe(struct rowctx *rc, unsigned buf, uint8_t cmd, unsigned dflags, const uint8_t *d,
		       uint32_t len, unsigned half)
{
	struct row_state *rs = rc->rs;
	const struct ibuf *ib = &rs->ibuf[buf];
	uint32_t err;

	if (!ib->valid)
		return cfail(rc, TNPU_ERR_IBUF_EMPTY);
	if (len % 8)
		return cfail(rc, TNPU_ERR_PACKET);
	for (uint32_t i = 0; i < len; i += 8) {
		const uint8_t *p = d + i;

		if (p[0] >= TNPU_RF_WINDOW || p[1] > TNPU_PATCH_PITCH || ld16(p + 2) ||
		    (p[1] != TNPU_PATCH_ADDR && p[1] != TNPU_PATCH_PITCH && (ld32(p + 4) >> 16)))
			return cfail(rc, TNPU_ERR_PACKET);
	}
	rc->ib = ib;
	rc->last = cmd & TNPU_PKT_LAST;
	if (rs->last_half >= 0 && (unsigned)rs->last_half != half)
		rc->ex->res->counters[TNPU_CNT_BANK_SWAPS]++;
	rs->last_half = (int)half;
	if (dflags & TNPU_DISPATCH_F_RF_RESTORE) {
		for (unsigned i = 0; i < TNPU_RF_WINDOW; i++) {
			rs->rf[ib->rf_base + i] = rs->rf_cfg[ib->rf_base + i];
			rs->rf_cnt[ib->rf_base + i] = 0;
		}
	}
	for (uint32_t i = 0; i < len; i += 8) {
		struct tnpu_operand *o = &rs->rf[ib->rf_base + d[i]];
		uint32_t v = ld32(d + i + 4);

		switch (d[i + 1]) {
		case TNPU_PATCH_ADDR:
			o->addr = v;
			break;
		case TNPU_PATCH_ROWS:
			o->rows = (uint16_t)v;
			break;
		case TNPU_PATCH_COLS:
			o->cols = (uint16_t)v;
			break;
		default:
			o->pitch = v;
			break;
		}
	}
	for (unsigned i = 0; i < ib->loop_start; i++)
		if ((err = issue(rc, i)))
			return err;
	for (unsigned r = 0; r < ib->repeat; r++)
		for (unsigned i = ib->loop_start; i <= ib->loop_end; i++)
			if ((err = issue(rc, i)))
				return err;
	for (unsigned i = ib->loop_end + 1u; i < ib->n_instr; i++)
		if ((err = issue(rc, i)))
			return err;
	if (cmd & TNPU_PKT_SHIFT_OUT) {
		for (unsigned a = 0; a < TNPU_NUM_ACCS; a++)
			rs->accm[a].valid = false;
		rs->oqm.valid = false;
	}
	return 0;
}

uint32_t tnpu_cluster_dispatch(struct tnpu_exec *ex, unsigned row, unsigned half, unsigned dflags,
			       const uint8_t *pkt, uint32_t len, uint64_t t0, uint64_t *busy)
{
	struct rowctx rc = {
		.ex = ex,
		.t0 = t0,
		.clkdiv = ex->isl[ex->cur].clkdiv,
		.rs = &ex->rows[row],
		.row = row,
		.base = ex->rows[row].sram + (size_t)half * ex->half,
		.half = ex->half,
		.cols = ex->cfg.cols,
		.pes = ex->cfg.pes,
		.npe = ex->cfg.cols * ex->cfg.pes,
	};
	uint8_t cmd = pkt[0];
	unsigned buf = TNPU_PKT_BUF(cmd);
	uint32_t err;

	rc.info = row | (buf << 8) | (0xFFu << 16);
	if (!(cmd & TNPU_PKT_EXE)) {
		if (cmd & (TNPU_PKT_SHIFT_OUT | TNPU_PKT_LAST))
			return cfail(&rc, TNPU_ERR_PACKET);
		err = do_config(&rc, buf, pkt + 1, len - 1);
		*busy = div_ceil_u64(len, TNPU_RATE_DISPATCH);
		return err;
	}
	rc.a.dist_bytes = len;
	err = do_exe(&rc, buf, cmd, dflags, pkt + 1, len - 1, half);
	ex->res->counters[TNPU_CNT_INSTRUCTIONS] += rc.a.issued;
	ex->res->counters[TNPU_CNT_BYTES_DISPATCH] += rc.a.dist_bytes - len;
	/* DW runs: the output of tile i drains (SFU, ST) while tile i+1 multiplies; the last tile's
	 * drain is exposed.  LDs of lines a STREAM band is still writing wait for them. */
	*busy = div_ceil_u64(exe_time(&rc) - t0, rc.clkdiv);
	return err;
}
