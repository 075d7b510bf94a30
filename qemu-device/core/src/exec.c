/* SPDX-License-Identifier: MIT */
/*
 * Job executor: command processor, DMA / IM2COL load engine, store engine,
 * semaphores and the engine timelines of the cycle model
 * (Documentation/hardware/commands.md, cycle-model.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

#define CNT(ex, i) ((ex)->res->counters[TNPU_CNT_##i])

uint32_t tnpu_fail(struct tnpu_exec *ex, uint32_t err, uint32_t info, uint64_t addr)
{
	struct tnpu_result *r = ex->res;

	if (!r->error) {
		r->error = err;
		r->err_info = info;
		r->err_addr = addr;
		r->err_cmd_offset = ex->cmd_off;
		if (err >= TNPU_ERR_MMU_NOT_PRESENT && err <= TNPU_ERR_MMU_VA_RANGE)
			r->counters[TNPU_CNT_MMU_FAULTS]++;
	}
	return err;
}

/*
 * Big host buffers (command buffer copies, scratch) are mapped, not malloc'ed:
 * malloc serves them from per-thread arenas after glibc's adaptive mmap
 * threshold has risen, and freed arena memory stays resident, so 16 workers
 * would each keep their largest buffer for good (qemu-device.md "Host
 * resources").  An unmapped buffer returns its pages at once.
 */
#define BIG_ALLOC_MIN (256u << 10)

void *tnpu_host_alloc(size_t bytes)
{
	void *p;

	if (bytes < BIG_ALLOC_MIN)
		return malloc(bytes ? bytes : 1);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void tnpu_host_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < BIG_ALLOC_MIN)
		free(p);
	else
		munmap(p, bytes);
}

/* Grows *buf (capacity *cap) to `bytes`; the old contents are not kept (every user fills the
 * scratch after asking for it). */
static void *grow(void **buf, size_t *cap, size_t bytes)
{
	if (bytes > *cap) {
		void *p = tnpu_host_alloc(bytes);

		if (!p)
			return NULL;
		tnpu_host_free(*buf, *cap);
		*buf = p;
		*cap = bytes;
	}
	return *buf;
}

uint8_t *tnpu_scratch(struct tnpu_exec *ex, size_t bytes)
{
	void *b = ex->scratch;
	uint8_t *p;

	if (bytes > TNPU_SCRATCH_MAX)
		return NULL;
	p = grow(&b, &ex->scratch_cap, bytes);
	ex->scratch = b;
	return p;
}

float *tnpu_cvt_scratch(struct tnpu_exec *ex, size_t bytes)
{
	void *b = ex->cvt;
	float *p;

	if (bytes > TNPU_CVT_SCRATCH_MAX)
		return NULL;
	p = grow(&b, &ex->cvt_cap, bytes);
	ex->cvt = b;
	return p;
}

uint64_t tnpu_exec_work_units(const struct tnpu_exec *ex)
{
	return ex->work;
}

size_t tnpu_exec_scratch_bytes(const struct tnpu_exec *ex)
{
	return ex->scratch_cap + ex->cvt_cap;
}

void tnpu_exec_release_scratch(struct tnpu_exec *ex)
{
	tnpu_host_free(ex->scratch, ex->scratch_cap);
	ex->scratch = NULL;
	ex->scratch_cap = 0;
	tnpu_host_free(ex->cvt, ex->cvt_cap);
	ex->cvt = NULL;
	ex->cvt_cap = 0;
}

/* Job end (and before a VEC command's output buffer): a big scratch (a large IM2COL box) is not kept. */
void tnpu_scratch_trim(struct tnpu_exec *ex)
{
	if (ex->scratch_cap > TNPU_SCRATCH_KEEP) {
		tnpu_host_free(ex->scratch, ex->scratch_cap);
		ex->scratch = NULL;
		ex->scratch_cap = 0;
	}
}

/* ---- creation ------------------------------------------------------------ */

int tnpu_exec_new(const struct tnpu_config *cfg, struct tnpu_exec **out, char *msg, size_t msglen)
{
	struct tnpu_exec *ex;
	size_t acc_bytes;

	*out = NULL;
	if (tnpu_config_validate(cfg, msg, msglen))
		return -EINVAL;
	ex = calloc(1, sizeof(*ex));
	if (!ex)
		return -ENOMEM;
	ex->cfg = *cfg;
	if (!ex->cfg.watchdog_cycles)
		ex->cfg.watchdog_cycles = TNPU_DEF_WATCHDOG;
	ex->work_budget = ex->cfg.host_work ? TNPU_MIN(ex->cfg.host_work, 1ull << 62)
					    : TNPU_HOST_WORK_PER_PE * cfg->rows * cfg->cols * cfg->pes;
	ex->half = cfg->sram / 2;
	atomic_init(&ex->abort, false);
	atomic_init(&ex->preempt, false);
	atomic_init(&ex->tlb_req, 0);
	atomic_init(&ex->tlb_seq, 0);
	atomic_init(&ex->in_access, false);
	ex->rows = calloc(cfg->rows, sizeof(*ex->rows));
	if (!ex->rows)
		goto nomem;
	ex->n_isl = tnpu_config_islands(cfg, ex->isl, ex->isl_first);
	ex->isl_rt = calloc(ex->n_isl, sizeof(*ex->isl_rt));
	if (!ex->isl_rt || tnpu_rings_alloc(ex))
		goto nomem;
	ex->F = ex->isl_rt[0].F;
	ex->sem = ex->isl_rt[0].sem;
	for (unsigned i = 0; i < ex->n_isl; i++)
		for (unsigned r = 0; r < ex->isl[i].rows; r++)
			ex->rows[ex->isl_first[i] + r].dtypes = ex->isl[i].dtypes;
	acc_bytes = (size_t)cfg->cols * cfg->pes * TNPU_ACC_ELEMS * 4;
	for (unsigned r = 0; r < cfg->rows; r++) {
		struct row_state *rs = &ex->rows[r];

		rs->sram = calloc(1, cfg->sram);
		rs->oq = malloc(acc_bytes);
		if (!rs->sram || !rs->oq || tnpu_lines_alloc(rs, cfg->sram))
			goto nomem;
		for (unsigned a = 0; a < TNPU_NUM_ACCS; a++) {
			rs->acc[a] = malloc(acc_bytes);
			if (!rs->acc[a])
				goto nomem;
		}
		rs->dirty_lo = cfg->sram;
		rs->dirty_hi = 0;
	}
	if (tnpu_hz_init(ex))
		goto nomem;
	*out = ex;
	return 0;
nomem:
	tnpu_exec_free(ex);
	if (msg && msglen)
		snprintf(msg, msglen, "tnpu: out of memory allocating the executor");
	return -ENOMEM;
}

void tnpu_exec_free(struct tnpu_exec *ex)
{
	if (!ex)
		return;
	if (ex->rows) {
		for (unsigned r = 0; r < ex->cfg.rows; r++) {
			free(ex->rows[r].sram);
			free(ex->rows[r].oq);
			tnpu_lines_free(&ex->rows[r]);
			for (unsigned a = 0; a < TNPU_NUM_ACCS; a++)
				free(ex->rows[r].acc[a]);
		}
		free(ex->rows);
	}
	tnpu_host_free(ex->scratch, ex->scratch_cap);
	tnpu_host_free(ex->cvt, ex->cvt_cap);
	free(ex->isl_rt);
	tnpu_rings_free(ex);
	tnpu_plan_cache_free(ex);
	tnpu_hz_free(ex);
	free(ex);
}

void tnpu_exec_abort(struct tnpu_exec *ex)
{
	atomic_store(&ex->abort, true);
}

void tnpu_exec_clear_abort(struct tnpu_exec *ex)
{
	atomic_store(&ex->abort, false);
}

void tnpu_exec_tlb_invalidate(struct tnpu_exec *ex)
{
	atomic_fetch_add(&ex->tlb_req, 1);
}

bool tnpu_exec_tlb_pending(struct tnpu_exec *ex)
{
	/* seq_cst: an access that had not set in_access yet loads tlb_req after our bump */
	return atomic_load(&ex->in_access) && atomic_load(&ex->tlb_seq) != atomic_load(&ex->tlb_req);
}

void tnpu_exec_set_trace(struct tnpu_exec *ex, tnpu_trace_fn fn, void *opaque)
{
	ex->trace = fn;
	ex->trace_opaque = fn ? opaque : NULL;
}

/* Report one interval; the only cost with tracing off is the branch. */
static inline void trace(struct tnpu_exec *ex, unsigned engine, unsigned row, unsigned kind, uint64_t start,
			 uint64_t end)
{
	struct tnpu_trace_event ev;

	if (!ex->trace)
		return;
	ev.engine = (uint8_t)engine;
	ev.row = (uint8_t)row;
	ev.kind = (uint16_t)kind;
	ev.cmd_offset = ex->cmd_off;
	ev.start = start;
	ev.end = end;
	ex->trace(ex->trace_opaque, &ev);
}

void tnpu_trace_emit(struct tnpu_exec *ex, unsigned engine, unsigned row, unsigned kind, uint64_t start,
		     uint64_t end)
{
	trace(ex, engine, row, kind, start, end);
}

/* ---- job start: clean device state ---------------------------------------- */

/* Storage units, line state, cluster state (instruction buffers, register files, slots, accumulators,
 * output queues) and LUTs as at a job's start: also at every preemption point (preempt.c). */
void tnpu_onchip_reset(struct tnpu_exec *ex)
{
	for (unsigned r = 0; r < ex->cfg.rows; r++) {
		struct row_state *rs = &ex->rows[r];

		tnpu_lines_reset(rs);	/* zeroes the lines the last job wrote */
		rs->dirty_lo = ex->cfg.sram;
		rs->dirty_hi = 0;
	}
	tnpu_cluster_reset(ex);
	memset(ex->vec_lut, 0, sizeof(ex->vec_lut));
}

static void job_reset(struct tnpu_exec *ex)
{
	ex->work = 0;
	tnpu_onchip_reset(ex);
	tnpu_tlb_flush(ex);
	memset(ex->isl_rt, 0, ex->n_isl * sizeof(*ex->isl_rt));
	ex->cur = 0;
	ex->F = ex->isl_rt[0].F;
	ex->sem = ex->isl_rt[0].sem;
	tnpu_rings_reset(ex);
	memset(ex->R, 0, sizeof(ex->R));
	ex->P = 0;
	ex->compute_end = 0;
	ex->cmd_off = 0;
	ex->entry = NULL;
	ex->save_pa = 0;
	ex->preemptible = false;
	ex->resume_off = UINT32_MAX;
}

/* ---- timelines ------------------------------------------------------------ */

static uint64_t all_rows_free(const struct tnpu_exec *ex)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < ex->cfg.rows; r++)
		t = TNPU_MAX(t, ex->R[r]);
	return t;
}

/* Rows of the current island (chain #9; with one island: every row). */
uint64_t tnpu_island_rows_free(const struct tnpu_exec *ex)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < ex->isl[ex->cur].rows; r++)
		t = TNPU_MAX(t, ex->R[ex->isl_first[ex->cur] + r]);
	return t;
}

/* The job's makespan so far: every island's engines and last command, every row. */
uint64_t tnpu_job_time(const struct tnpu_exec *ex)
{
	uint64_t t = TNPU_MAX(all_rows_free(ex), ex->P);

	for (unsigned i = 0; i < ex->n_isl; i++) {
		if (i != ex->cur)
			t = TNPU_MAX(t, ex->isl_rt[i].P);
		for (unsigned e = 0; e < TNPU_ENGINE_NUM; e++)
			t = TNPU_MAX(t, ex->isl_rt[i].F[e]);
		t = TNPU_MAX(t, ex->isl_rt[i].aux);
	}
	return t;
}

void tnpu_island_select(struct tnpu_exec *ex, unsigned island)
{
	ex->isl_rt[ex->cur].P = ex->P;
	ex->cur = island;
	ex->F = ex->isl_rt[island].F;
	ex->sem = ex->isl_rt[island].sem;
	ex->P = ex->isl_rt[island].P;
}

/* Map a command's island-relative row (or `all`) to absolute rows [*r0, *r1]; rows that exist but
 * belong to another island are that island's SRAM window: ISLAND_ACCESS (chain #9). */
static uint32_t island_rows(struct tnpu_exec *ex, unsigned row, bool all, unsigned *r0, unsigned *r1)
{
	unsigned first = ex->isl_first[ex->cur], n = ex->isl[ex->cur].rows;

	if (all) {
		*r0 = first;
		*r1 = first + n - 1;
		return 0;
	}
	if (row >= n)
		return tnpu_fail(ex, TNPU_ERR_ISLAND_ACCESS, row | (ex->cur << 8), 0);
	*r0 = *r1 = first + row;
	return 0;
}

uint32_t tnpu_island_rows(struct tnpu_exec *ex, unsigned row, bool all, unsigned *r0, unsigned *r1)
{
	return island_rows(ex, row, all, r0, r1);
}

/* A load/store engine command of `dur` cycles. */
void tnpu_engine_run(struct tnpu_exec *ex, unsigned e, unsigned kind, bool async, uint64_t dur)
{
	uint64_t s = TNPU_MAX(ex->F[e], async ? 0 : ex->P);

	ex->F[e] = s + dur;
	trace(ex, e, TNPU_TRACE_ROW_NONE, kind, s, s + dur);
	tnpu_hz_close(ex, s, s + dur);
	ex->P = ex->F[e];
	if (e == TNPU_ENGINE_LOAD)
		CNT(ex, LOAD_CYCLES) += dur;
	else
		CNT(ex, STORE_CYCLES) += dur;
	CNT(ex, DMA_CYCLES) += dur;
}

/* ---- DMA ------------------------------------------------------------------ */

static uint32_t cmd_dma(struct tnpu_exec *ex, const uint8_t *c, bool h2d, bool async)
{
	uint64_t host_va = ld64(c + 8), hpy = ld64(c + 16), hpz = ld64(c + 24);
	uint32_t off = ld32(c + 32), spy = ld32(c + 36), spz = ld32(c + 40);
	uint32_t width = ld32(c + 44), height = ld32(c + 48), depth = ld32(c + 52);
	uint8_t row = c[56], half = c[57], flags = c[58], fill = c[59];
	bool all = row == TNPU_DMA_ROW_ALL, ring = flags & TNPU_DMA_F_RING;
	uint64_t last, dur;
	unsigned r0 = 0, r1 = 0;

	if (!width || !height || !depth || half > 1 || (flags & ~TNPU_DMA_F_MASK) || ld32(c + 60) ||
	    (!(flags & TNPU_DMA_F_FILL) && fill) || (!h2d && (flags & TNPU_DMA_F_FILL)) ||
	    (!all && row >= ex->cfg.rows) || (all && !h2d) || (ring && (flags & TNPU_DMA_F_FILL)))
		return tnpu_fail(ex, TNPU_ERR_DMA_DESC, 0, 0);
	if (island_rows(ex, row, all, &r0, &r1))
		return ex->res->error;
	/* Each term is < 2^64 on its own; checking them one by one keeps the sum from wrapping. */
	if ((uint64_t)(depth - 1) * spz > ex->half || (uint64_t)(height - 1) * spy > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, off);
	last = (uint64_t)off + (uint64_t)(depth - 1) * spz + (uint64_t)(height - 1) * spy + width;
	if (last > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, off);
	if (__builtin_mul_overflow((uint64_t)height * depth, TNPU_MAX(1, div_ceil_u64(width, TNPU_RATE_DMA)), &dur) ||
	    __builtin_add_overflow(dur, (uint64_t)(TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP), &dur))
		return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	/* Refuse a transfer the watchdog would stop anyway before spending host time on it. */
	if (tnpu_past_watchdog(ex, TNPU_MAX(ex->F[h2d ? TNPU_ENGINE_LOAD : TNPU_ENGINE_STORE], ex->P), dur))
		return tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
	/* Its host work (every row, copied into every addressed row) is charged before any is done: a
	 * zero-pitch transfer of 2^32 narrow rows costs 2^32 cycles but far more host time. */
	{
		uint64_t units;

		if (__builtin_mul_overflow((uint64_t)height * depth, (uint64_t)(r1 - r0 + 1) * (1 + width / TNPU_WORK_BYTES), &units))
			units = UINT64_MAX;
		if (tnpu_stopped(ex, units))
			return tnpu_stop_fail(ex);
	}
	if (ring && tnpu_ring_dma_check(ex, h2d, host_va, hpy, hpz, width, height, depth))
		return ex->res->error;
	/* Rows contiguous on both sides (pitch == width) move as one run: the same bytes in the same
	 * order as row by row, the same fault (address, info) at the same byte, one MMU access instead
	 * of one per row (simulation speed only).  Only when every run lies inside the VA range, so a
	 * VA_RANGE error is still reported for the row that leaves it. */
	uint32_t run_rows = 1;
	uint64_t run, span;

	if (!ring && !(flags & TNPU_DMA_F_FILL) && hpy == width && spy == width && height > 1 &&
	    !__builtin_mul_overflow((uint64_t)depth - 1, hpz, &span) &&
	    !__builtin_add_overflow(span, (uint64_t)width * height, &span) &&
	    !__builtin_add_overflow(span, host_va, &span) && span <= (1ull << TNPU_VA_BITS))
		run_rows = height;
	run = (uint64_t)width * run_rows;

	for (uint32_t z = 0; z < depth; z++) {
		/* rows back to back on the host only: one memory access per page (tnpu_va_read_rows) */
		if (!ring && !(flags & TNPU_DMA_F_FILL) && run_rows == 1 && hpy == width && height > 1) {
			uint64_t so = (uint64_t)half * ex->half + off + (uint64_t)z * spz, va, t, end;
			uint8_t *base = ex->rows[r0].sram + so;
			uint32_t err;

			if (!__builtin_mul_overflow((uint64_t)z, hpz, &t) && !__builtin_add_overflow(host_va, t, &va) &&
			    !__builtin_add_overflow(va, (uint64_t)width * height, &end)) {
				if (tnpu_stopped(ex, 0))	/* charged above */
					return tnpu_stop_fail(ex);
				if (!h2d) {
					err = tnpu_va_write_rows(ex, va, base, spy, width, height, TNPU_EC(TNPU_ENGINE_STORE));
					if (err)
						return err;
					continue;
				}
				for (uint32_t y = 0; y < height; y++)	/* before the copy, as below */
					sram_mark(&ex->rows[r0], so + (uint64_t)y * spy, so + (uint64_t)y * spy + width);
				err = tnpu_va_read_rows(ex, va, base, spy, width, height, TNPU_EC(TNPU_ENGINE_LOAD));
				if (err)
					return err;
				for (unsigned r = r0 + 1; r <= r1; r++)
					for (uint32_t y = 0; y < height; y++) {
						uint64_t o = so + (uint64_t)y * spy;

						sram_mark(&ex->rows[r], o, o + width);
						memcpy(ex->rows[r].sram + o, ex->rows[r0].sram + o, width);
					}
				continue;
			}
		}
		for (uint32_t y = 0; y < height; y += run_rows) {
			uint64_t so = (uint64_t)half * ex->half + off + (uint64_t)z * spz + (uint64_t)y * spy;
			uint64_t va, t, len = run;
			uint8_t *dst = ex->rows[r0].sram + so;
			uint32_t err;

			if (tnpu_stopped(ex, 0))	/* charged above */
				return tnpu_stop_fail(ex);
			/* Marked before the copy: a transfer that fails half way has still written the
			 * line, and the next job start must clear it (queues.md: clean device state). */
			if (h2d)
				sram_mark(&ex->rows[r0], so, so + len);
			if (h2d && (flags & TNPU_DMA_F_FILL)) {
				memset(dst, fill, len);
			} else if (ring) {
				/* Checked above: on-chip ring memory, no MMU (chain #9). */
				uint64_t ro = host_va + (uint64_t)z * hpz + (uint64_t)y * hpy;

				if (h2d) {
					memcpy(dst, ex->ring_mem + ro, len);
				} else {
					memcpy(ex->ring_mem + ro, dst, len);
					ex->ring_dirty = (uint32_t)TNPU_MAX(ex->ring_dirty, ro + len);
				}
			} else {
				if (__builtin_mul_overflow((uint64_t)z, hpz, &t) ||
				    __builtin_add_overflow(host_va, t, &va) ||
				    __builtin_mul_overflow((uint64_t)y, hpy, &t) ||
				    __builtin_add_overflow(va, t, &va))
					return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE,
							 (h2d ? 0u : 1u) | (TNPU_EC(h2d ? 0 : 2) << 4), host_va);
				if (h2d)
					err = tnpu_va_read(ex, va, dst, len, TNPU_EC(TNPU_ENGINE_LOAD));
				else
					err = tnpu_va_write(ex, va, dst, len, TNPU_EC(TNPU_ENGINE_STORE));
				if (err)
					return err;
			}
			if (h2d) {
				for (unsigned r = r0; r <= r1; r++) {
					if (r > r0) {
						sram_mark(&ex->rows[r], so, so + len);
						memcpy(ex->rows[r].sram + so, dst, len);
					}
					if ((flags & TNPU_DMA_F_FILL) && !fill)	/* zero fill: clean lines */
						tnpu_lines_clean(&ex->rows[r], so, so + len);
				}
			}
		}
	}
	if (ring) {
		CNT(ex, RING_BYTES) += (uint64_t)width * height * depth;
	} else if (h2d) {
		if (!(flags & TNPU_DMA_F_FILL))
			CNT(ex, BYTES_H2D) += (uint64_t)width * height * depth;
	} else {
		CNT(ex, BYTES_D2H) += (uint64_t)width * height * depth;
	}
	/* ring memory is on-chip and ordered by RING_WAIT/SIGNAL: only host and SRAM are checked */
	if (!ring && !(flags & TNPU_DMA_F_FILL))
		tnpu_hz_rec(ex, TNPU_HZ_HOST, 0, 0, !h2d, h2d ? TNPU_TRACE_DMA_H2D : TNPU_TRACE_DMA_D2H, host_va,
			    width, height, depth, hpy, hpz);
	tnpu_hz_rec(ex, TNPU_HZ_SRAM, r0, r1, h2d, h2d ? TNPU_TRACE_DMA_H2D : TNPU_TRACE_DMA_D2H,
		    (uint64_t)half * ex->half + off, width, height, depth, spy, spz);
	tnpu_engine_run(ex, h2d ? TNPU_ENGINE_LOAD : TNPU_ENGINE_STORE, h2d ? TNPU_TRACE_DMA_H2D : TNPU_TRACE_DMA_D2H,
		   async, dur);
	return 0;
}

/* ---- IM2COL --------------------------------------------------------------- */

struct conv {
	uint64_t src, sn, sc, sh, sw;
	uint32_t n, h, w, c, r, s, oh, ow, sy, sx, dy, dx, pt, pl, layout, dtype, e;
	uint32_t pad, m0, mt, k0, kt, off, pitch;
};

/* Decompose a K index into (ry, rx, ch). */
static void k_split(const struct conv *cv, uint64_t k, uint32_t *ry, uint32_t *rx, uint32_t *ch)
{
	if (cv->layout == TNPU_LAYOUT_NHWC) {
		*ch = (uint32_t)(k % cv->c);
		k /= cv->c;
		*rx = (uint32_t)(k % cv->s);
		*ry = (uint32_t)(k / cv->s);
	} else {
		*rx = (uint32_t)(k % cv->s);
		k /= cv->s;
		*ry = (uint32_t)(k % cv->r);
		*ch = (uint32_t)(k / cv->r);
	}
}


/* n elements of e bytes (1, 2 or 4) set to the pad value: fixed-size stores, no libc call each. */
static void pad_fill(uint8_t *d, uint64_t n, const uint8_t padb[4], unsigned e)
{
	if (e == 4) {
		for (uint64_t t = 0; t < n; t++)
			memcpy(d + 4 * t, padb, 4);
	} else if (e == 2) {
		for (uint64_t t = 0; t < n; t++)
			memcpy(d + 2 * t, padb, 2);
	} else {
		memset(d, padb[0], n);
	}
}

static uint32_t cmd_im2col(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	struct conv cv;
	uint8_t row = c[100], half = c[101];
	bool all = row == TNPU_DMA_ROW_ALL;
	uint64_t M, K, last, runs_cyc = 0, box_bytes;
	int64_t iy_lo, iy_hi, ix_lo, ix_hi;
	uint32_t b_lo, b_hi, ch_lo, ch_hi, ry_lo, ry_hi, rx_lo, rx_hi;
	uint32_t err = 0;
	uint8_t *box, *tile;
	unsigned r0i = 0, r1i = 0;

	cv.src = ld64(c + 8);
	cv.sn = ld64(c + 16);
	cv.sc = ld64(c + 24);
	cv.sh = ld64(c + 32);
	cv.sw = ld64(c + 40);
	cv.n = ld16(c + 48);
	cv.h = ld16(c + 50);
	cv.w = ld16(c + 52);
	cv.c = ld16(c + 54);
	cv.r = ld16(c + 56);
	cv.s = ld16(c + 58);
	cv.oh = ld16(c + 60);
	cv.ow = ld16(c + 62);
	cv.sy = c[64];
	cv.sx = c[65];
	cv.dy = c[66];
	cv.dx = c[67];
	cv.pt = c[68];
	cv.pl = c[69];
	cv.layout = c[70];
	cv.dtype = c[71];
	cv.pad = ld32(c + 72);
	cv.m0 = ld32(c + 76);
	cv.mt = ld32(c + 80);
	cv.k0 = ld32(c + 84);
	cv.kt = ld32(c + 88);
	cv.off = ld32(c + 92);
	cv.pitch = ld32(c + 96);
	cv.e = cv.dtype == TNPU_DTYPE_FP32 ? 4 : cv.dtype == TNPU_DTYPE_BF16 ? 2 : 1;

	M = (uint64_t)cv.n * cv.oh * cv.ow;
	K = (uint64_t)cv.r * cv.s * cv.c;
	if (!cv.n || !cv.h || !cv.w || !cv.c || !cv.r || !cv.s || !cv.oh || !cv.ow || !cv.sy || !cv.sx ||
	    !cv.dy || !cv.dx || cv.layout > TNPU_LAYOUT_NCHW ||
	    (cv.dtype != TNPU_DTYPE_INT8 && cv.dtype != TNPU_DTYPE_FP32 && cv.dtype != TNPU_DTYPE_BF16) ||
	    (cv.e < 4 && (cv.pad >> (8 * cv.e))) || !cv.mt || !cv.kt ||
	    (uint64_t)cv.m0 + cv.mt > M || (uint64_t)cv.k0 + cv.kt > K ||
	    (cv.layout == TNPU_LAYOUT_NHWC ? cv.sc != cv.e : cv.sw != cv.e) ||
	    (uint64_t)cv.pitch < (uint64_t)cv.kt * cv.e || half > 1 || (!all && row >= ex->cfg.rows) ||
	    ld16(c + 102))
		return tnpu_fail(ex, TNPU_ERR_CONV_DESC, 0, 0);
	last = (uint64_t)cv.off + (uint64_t)(cv.mt - 1) * cv.pitch + (uint64_t)cv.kt * cv.e;
	if (last > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, cv.off);
	if (island_rows(ex, row, all, &r0i, &r1i))
		return ex->res->error;
	if ((cv.off | cv.pitch) & (cv.e - 1))
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 0, cv.off);

	/* Footprint bounding box. */
	{
		uint64_t m1 = (uint64_t)cv.m0 + cv.mt - 1, k1 = (uint64_t)cv.k0 + cv.kt - 1;
		uint64_t plane = (uint64_t)cv.oh * cv.ow;
		uint32_t b0 = (uint32_t)(cv.m0 / plane), b1 = (uint32_t)(m1 / plane);
		uint32_t y0, y1, x0, x1, ry0, rx0, ch0, ry1, rx1, ch1;

		b_lo = b0;
		b_hi = b1;
		if (b0 != b1) {
			y0 = 0;
			y1 = cv.oh - 1;
		} else {
			y0 = (cv.m0 / cv.ow) % cv.oh;
			y1 = (uint32_t)((m1 / cv.ow) % cv.oh);
		}
		if (m1 / cv.ow != cv.m0 / cv.ow) {
			x0 = 0;
			x1 = cv.ow - 1;
		} else {
			x0 = cv.m0 % cv.ow;
			x1 = (uint32_t)(m1 % cv.ow);
		}
		k_split(&cv, cv.k0, &ry0, &rx0, &ch0);
		k_split(&cv, k1, &ry1, &rx1, &ch1);
		if (cv.layout == TNPU_LAYOUT_NHWC) {
			ry_lo = ry0;
			ry_hi = ry1;
			if (ry0 != ry1) {
				rx_lo = 0;
				rx_hi = cv.s - 1;
			} else {
				rx_lo = rx0;
				rx_hi = rx1;
			}
			if (ry0 != ry1 || rx0 != rx1) {
				ch_lo = 0;
				ch_hi = cv.c - 1;
			} else {
				ch_lo = ch0;
				ch_hi = ch1;
			}
		} else {
			ch_lo = ch0;
			ch_hi = ch1;
			if (ch0 != ch1) {
				ry_lo = 0;
				ry_hi = cv.r - 1;
			} else {
				ry_lo = ry0;
				ry_hi = ry1;
			}
			if (ch0 != ch1 || ry0 != ry1) {
				rx_lo = 0;
				rx_hi = cv.s - 1;
			} else {
				rx_lo = rx0;
				rx_hi = rx1;
			}
		}
		iy_lo = (int64_t)y0 * cv.sy - cv.pt + (int64_t)ry_lo * cv.dy;
		iy_hi = (int64_t)y1 * cv.sy - cv.pt + (int64_t)ry_hi * cv.dy;
		ix_lo = (int64_t)x0 * cv.sx - cv.pl + (int64_t)rx_lo * cv.dx;
		ix_hi = (int64_t)x1 * cv.sx - cv.pl + (int64_t)rx_hi * cv.dx;
		iy_lo = TNPU_MAX(iy_lo, 0);
		ix_lo = TNPU_MAX(ix_lo, 0);
		iy_hi = TNPU_MIN(iy_hi, (int64_t)cv.h - 1);
		ix_hi = TNPU_MIN(ix_hi, (int64_t)cv.w - 1);
	}
	{
		uint64_t nb = b_hi - b_lo + 1, nc = ch_hi - ch_lo + 1;
		uint64_t ny = iy_hi >= iy_lo ? (uint64_t)(iy_hi - iy_lo + 1) : 0;
		uint64_t nx = ix_hi >= ix_lo ? (uint64_t)(ix_hi - ix_lo + 1) : 0;

		/* nb, nc, ny, nx <= 65535 each: the product of all four and e can wrap, so bound in steps. */
		box_bytes = nb * nc * cv.e;
		if (box_bytes > TNPU_IM2COL_MAX_FOOTPRINT || (ny && nx && (ny * nx > TNPU_IM2COL_MAX_FOOTPRINT)))
			return tnpu_fail(ex, TNPU_ERR_TOO_LARGE, 0, 0);
		box_bytes *= ny * nx;
		if (box_bytes > TNPU_IM2COL_MAX_FOOTPRINT)
			return tnpu_fail(ex, TNPU_ERR_TOO_LARGE, 0, 0);
		box = tnpu_scratch(ex, box_bytes + (uint64_t)TNPU_MIN(cv.kt, TNPU_IM2COL_K_CHUNK) * TNPU_IM2COL_K_BYTES + 16);
		if (!box)
			return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
		/* Read the box as runs along the contiguous axis.  Box layout:
		 * NHWC [b][y][x][ch], NCHW [b][ch][y][x]. */
		if (box_bytes) {
			bool nhwc = cv.layout == TNPU_LAYOUT_NHWC;
			uint64_t run_elems = nhwc ? nc : nx;
			uint64_t outer2 = nhwc ? ny : nc, outer3 = nhwc ? nx : ny;
			uint8_t *dst = box;

			for (uint64_t b = 0; b < nb && !err; b++) {
				for (uint64_t o2 = 0; o2 < outer2 && !err; o2++) {
					for (uint64_t o3 = 0; o3 < outer3 && !err; o3++) {
						uint64_t bb = b_lo + b, ch, iy, ix, va, t;
						bool ovf = false;

						if (nhwc) {
							iy = iy_lo + o2;
							ix = ix_lo + o3;
							ch = ch_lo;
						} else {
							ch = ch_lo + o2;
							iy = iy_lo + o3;
							ix = ix_lo;
						}
						va = cv.src;
						ovf |= __builtin_mul_overflow(bb, cv.sn, &t) || __builtin_add_overflow(va, t, &va);
						ovf |= __builtin_mul_overflow(ch, cv.sc, &t) || __builtin_add_overflow(va, t, &va);
						ovf |= __builtin_mul_overflow(iy, cv.sh, &t) || __builtin_add_overflow(va, t, &va);
						ovf |= __builtin_mul_overflow(ix, cv.sw, &t) || __builtin_add_overflow(va, t, &va);
						if (ovf)
							return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(0) << 4, cv.src);
						if (tnpu_stopped(ex, 1 + run_elems * cv.e / TNPU_WORK_BYTES))
							return tnpu_stop_fail(ex);
						err = tnpu_va_read(ex, va, dst, run_elems * cv.e, TNPU_EC(TNPU_ENGINE_LOAD));
						dst += run_elems * cv.e;
						runs_cyc += TNPU_MAX(1, div_ceil_u64(run_elems * cv.e, TNPU_RATE_DMA));
					}
				}
			}
			if (err)
				return err;
		}
		/* Generate the tile into row r0 (then copy to the others). */
		{
			unsigned r0 = r0i, r1 = r1i;
			struct row_state *rs = &ex->rows[r0];
			uint64_t base = (uint64_t)half * ex->half + cv.off;
			int64_t *koff = (int64_t *)(void *)(box + ((box_bytes + 15) & ~15ull));
			uint32_t kchunk = TNPU_MIN(cv.kt, TNPU_IM2COL_K_CHUNK);
			int32_t *kry = (int32_t *)(void *)(koff + kchunk), *krx = kry + kchunk, *kch = krx + kchunk;
			uint32_t *krun = (uint32_t *)(void *)(kch + kchunk), *ktap = krun + kchunk;
			bool nhwc = cv.layout == TNPU_LAYOUT_NHWC;
			uint8_t padb[4];
			int32_t kry_min = 0, kry_max = 0, krx_min = 0, krx_max = 0;

			memcpy(padb, &cv.pad, 4);
			tile = rs->sram + base;
			/* marked before it is written: an abort half way leaves nothing the next job sees */
			sram_mark(rs, base, base + last - cv.off);
			/* K decoded in chunks: the decode tables stay small whatever kt is. */
			for (uint32_t j0 = 0; j0 < cv.kt; j0 += kchunk) {
				uint32_t jn = TNPU_MIN(kchunk, cv.kt - j0);

				for (uint32_t j = 0; j < jn; j++) {
					uint32_t ry, rx, ch;

					k_split(&cv, (uint64_t)cv.k0 + j0 + j, &ry, &rx, &ch);
					kry[j] = (int32_t)(ry * cv.dy);
					krx[j] = (int32_t)(rx * cv.dx);
					kch[j] = (int32_t)(ch - ch_lo);
					/* box index of tap j relative to the output's origin in the box */
					koff[j] = nhwc ? ((int64_t)kry[j] * (int64_t)nx + krx[j]) * (int64_t)nc + kch[j]
						       : ((int64_t)kch[j] * (int64_t)ny + kry[j]) * (int64_t)nx + krx[j];
					if (j == 0) {
						kry_min = kry_max = kry[0];
						krx_min = krx_max = krx[0];
					}
					kry_min = TNPU_MIN(kry_min, kry[j]);
					kry_max = TNPU_MAX(kry_max, kry[j]);
					krx_min = TNPU_MIN(krx_min, krx[j]);
					krx_max = TNPU_MAX(krx_max, krx[j]);
				}
				/* krun[j]: taps j.. that are consecutive in the box (one memcpy each) */
				for (uint32_t j = jn; j-- > 0;)
					krun[j] = j + 1 < jn && koff[j + 1] == koff[j] + 1 ? krun[j + 1] + 1 : 1;
				/* ktap[j]: of those, the ones of the same filter tap (inside or outside the
				 * image together) */
				for (uint32_t j = jn; j-- > 0;)
					ktap[j] = j + 1 < jn && koff[j + 1] == koff[j] + 1 && kry[j + 1] == kry[j] &&
							  krx[j + 1] == krx[j] ? ktap[j + 1] + 1 : 1;
				for (uint32_t i = 0; i < cv.mt; i++) {
					uint64_t m = (uint64_t)cv.m0 + i;
					uint64_t x = m % cv.ow, y = (m / cv.ow) % cv.oh, b = m / ((uint64_t)cv.ow * cv.oh) - b_lo;
					int64_t iy0 = (int64_t)y * cv.sy - cv.pt, ix0 = (int64_t)x * cv.sx - cv.pl;
					uint8_t *out = tile + (uint64_t)i * cv.pitch + (uint64_t)j0 * cv.e;

					if (tnpu_stopped(ex, 1 + (uint64_t)jn * cv.e / TNPU_WORK_BYTES))
						return tnpu_stop_fail(ex);

					/* Every tap inside the image (the common case): no padding tests, runs of
					 * taps adjacent in the box copied at once.  Same bytes as the loop below. */
					if (iy0 + kry_min >= 0 && iy0 + kry_max < cv.h && ix0 + krx_min >= 0 &&
					    ix0 + krx_max < cv.w) {
						int64_t o = nhwc ? (((int64_t)b * ny + (iy0 - iy_lo)) * nx + (ix0 - ix_lo)) * nc
								 : ((int64_t)b * nc * ny + (iy0 - iy_lo)) * nx + (ix0 - ix_lo);

						for (uint32_t j = 0; j < jn; j += krun[j]) {
							uint8_t *d = out + (uint64_t)j * cv.e;
							const uint8_t *sb = box + (uint64_t)(o + koff[j]) * cv.e;

							if (cv.e == 4 && krun[j] <= 8) {	/* short runs (NCHW rows of a 3x3
												 * filter): no libc call */
								for (uint32_t t = 0; t < krun[j]; t++)
									memcpy(d + 4 * t, sb + 4 * t, 4);
							} else {
								memcpy(d, sb, (size_t)krun[j] * cv.e);
							}
						}
						continue;
					}
					for (uint32_t j = 0; j < jn;) {
						int64_t iy = iy0 + kry[j], ix = ix0 + krx[j];
						const uint8_t *src = padb;
						uint32_t L = 1;

						/* NCHW: taps of one channel and filter row at consecutive x (a 7x7
						 * depthwise filter's rows): the part inside the image in one copy,
						 * the pad value either side.  Same bytes as the per-element loop. */
						while (!nhwc && L < krun[j] && kry[j + L] == kry[j] && kch[j + L] == kch[j] &&
						       krx[j + L] == krx[j] + (int32_t)L)
							L++;
						if (L > 1) {
							int64_t lo = 0, hi = 0;

							if (iy >= 0 && iy < cv.h) {
								lo = TNPU_MIN((int64_t)L, TNPU_MAX(0, -ix));
								hi = TNPU_MAX(lo, TNPU_MIN((int64_t)L, (int64_t)cv.w - ix));
							}
							pad_fill(out + (uint64_t)j * cv.e, (uint64_t)lo, padb, cv.e);
							pad_fill(out + ((uint64_t)j + hi) * cv.e, (uint64_t)(L - hi), padb, cv.e);
							if (hi > lo) {
								uint64_t idx = ((b * nc + kch[j]) * ny + (uint64_t)(iy - iy_lo)) * nx +
									       (uint64_t)(ix + lo - ix_lo);

								memcpy(out + ((uint64_t)j + lo) * cv.e, box + idx * cv.e,
								       (size_t)(hi - lo) * cv.e);
							}
							j += L;
							continue;
						}
						if (ktap[j] > 1 && iy >= 0 && iy < cv.h && ix >= 0 && ix < cv.w) {
							/* a run of one tap inside the image: adjacent in the box */
							int64_t o = nhwc ? (((int64_t)b * ny + (iy0 - iy_lo)) * nx +
									    (ix0 - ix_lo)) * nc
									 : ((int64_t)b * nc * ny + (iy0 - iy_lo)) * nx +
									   (ix0 - ix_lo);

							memcpy(out + (uint64_t)j * cv.e, box + (uint64_t)(o + koff[j]) * cv.e,
							       (size_t)ktap[j] * cv.e);
							j += ktap[j];
							continue;
						}
						if (iy >= 0 && iy < cv.h && ix >= 0 && ix < cv.w) {
							uint64_t by = iy - iy_lo, bx = ix - ix_lo, idx;

							if (cv.layout == TNPU_LAYOUT_NHWC)
								idx = ((b * ny + by) * nx + bx) * nc + kch[j];
							else
								idx = ((b * nc + kch[j]) * ny + by) * nx + bx;
							src = box + idx * cv.e;
						}
						if (cv.e == 4)
							memcpy(out + (uint64_t)j * 4, src, 4);
						else if (cv.e == 2)
							memcpy(out + (uint64_t)j * 2, src, 2);
						else
							out[j] = *src;
						j++;
					}
				}
			}
			for (unsigned r = r0 + 1; r <= r1; r++) {
				if (cv.pitch == (uint64_t)cv.kt * cv.e)	/* rows back to back: one copy */
					memcpy(ex->rows[r].sram + base, tile, (size_t)cv.mt * cv.pitch);
				else
					for (uint32_t i = 0; i < cv.mt; i++)
						memcpy(ex->rows[r].sram + base + (uint64_t)i * cv.pitch,
						       tile + (uint64_t)i * cv.pitch, (size_t)cv.kt * cv.e);
				sram_mark(&ex->rows[r], base, base + last - cv.off);
			}
		}
	}
	CNT(ex, BYTES_H2D) += box_bytes;
	tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_IM2COL, async,
		   TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP +
			   TNPU_MAX(runs_cyc, div_ceil_u64((uint64_t)cv.mt * cv.kt * cv.e, TNPU_RATE_IM2COL)));
	return 0;
}

/* ---- DISPATCH --------------------------------------------------------------- */

static uint32_t cmd_dispatch(struct tnpu_exec *ex, const uint8_t *c, uint32_t size, bool async)
{
	uint8_t row = c[8], half = c[9], dflags = c[10];
	uint32_t len = ld32(c + 12);
	uint64_t s, issue, busy, done = 0;
	bool all = row == TNPU_DISPATCH_ROW_ALL;
	unsigned r0 = 0, r1 = 0;

	if ((uint64_t)16 + (((uint64_t)len + 7) & ~7ull) != size || !len)
		return tnpu_fail(ex, TNPU_ERR_CMD_SIZE, size, 0);
	for (uint32_t i = 16 + len; i < size; i++)
		if (c[i])
			return tnpu_fail(ex, TNPU_ERR_CMD_RESERVED, 0, 0);
	if ((!all && row >= ex->cfg.rows) || half > 1 || (dflags & ~TNPU_DISPATCH_F_MASK) || c[11] ||
	    ((dflags & TNPU_DISPATCH_F_RF_RESTORE) && !(c[16] & TNPU_PKT_EXE)))
		return tnpu_fail(ex, TNPU_ERR_DISPATCH, 0, 0);
	if (island_rows(ex, row, all, &r0, &r1))
		return ex->res->error;
	CNT(ex, BYTES_DISPATCH) += len;
	if (!(c[16] & TNPU_PKT_EXE))
		CNT(ex, BYTES_CONFIG) += len;
	s = TNPU_MAX(ex->F[TNPU_ENGINE_COMPUTE], async ? 0 : ex->P);
	issue = TNPU_CYC_CMD + TNPU_CYC_DISPATCH + div_ceil_u64(len, TNPU_RATE_DISPATCH);
	ex->F[TNPU_ENGINE_COMPUTE] = s + issue;
	trace(ex, TNPU_ENGINE_COMPUTE, TNPU_TRACE_ROW_NONE, TNPU_TRACE_DISPATCH, s, s + issue);
	for (unsigned r = r0; r <= r1; r++) {
		uint64_t start, end;
		uint32_t err;

		if (tnpu_stopped(ex, 1))
			return tnpu_stop_fail(ex);
		start = TNPU_MAX(ex->R[r], s + issue);
		err = tnpu_cluster_dispatch(ex, r, half, dflags, c + 16, len, start, &busy);
		if (err)
			return err;
		/* A slower island clock stretches the row's busy time (chain #9). */
		end = start + busy * ex->isl[ex->cur].clkdiv;
		ex->R[r] = end;
		tnpu_hz_close(ex, start, end);
		ex->res->row_busy[r] += busy;
		trace(ex, TNPU_ENGINE_COMPUTE, r, (c[16] & TNPU_PKT_EXE) ? TNPU_TRACE_EXE : TNPU_TRACE_CONFIG, start, end);
		if (end > ex->compute_end) {
			ex->res->counters[TNPU_CNT_COMPUTE_CYCLES] += end - TNPU_MAX(start, ex->compute_end);
			ex->compute_end = end;
		}
		done = TNPU_MAX(done, end);
	}
	ex->P = done;
	return 0;
}

/* ---- semaphores ------------------------------------------------------------ */

static uint32_t cmd_sem(struct tnpu_exec *ex, const uint8_t *c, bool signal, bool async)
{
	uint8_t e = c[8], id = c[9];
	uint32_t count = ld32(c + 12);
	struct sem_state *sm;
	uint64_t s;

	if (e >= TNPU_ENGINE_NUM || id >= TNPU_NUM_SEMS || !count || count > 0xFFFF || ld16(c + 10))
		return tnpu_fail(ex, TNPU_ERR_SEM, id, 0);
	sm = &ex->sem[id];
	s = TNPU_MAX(ex->F[e], async ? 0 : ex->P);
	if (signal) {
		uint64_t t = s;

		if (e == TNPU_ENGINE_COMPUTE)
			t = TNPU_MAX(t, tnpu_island_rows_free(ex));
		if (e == TNPU_ENGINE_LOAD)	/* covers the ports' AUX queue too (commands.md DMA_BANDS) */
			t = TNPU_MAX(t, ex->isl_rt[ex->cur].aux);
		if (sm->n == TNPU_SEM_MAX_TOKENS)
			return tnpu_fail(ex, TNPU_ERR_SEM_OVERFLOW, id, 0);
		sm->time[(sm->head + sm->n) % TNPU_SEM_MAX_TOKENS] = t;
		sm->count[(sm->head + sm->n) % TNPU_SEM_MAX_TOKENS] = count;
		sm->n++;
		sm->avail += count;
		ex->F[e] = s + TNPU_CYC_CMD;
		ex->P = t;
	} else {
		uint64_t t = s, need = count;

		if (sm->avail < count)
			return tnpu_fail(ex, TNPU_ERR_SEM_DEADLOCK, id, 0);
		while (need) {
			unsigned h = sm->head;
			uint32_t take = (uint32_t)TNPU_MIN((uint64_t)sm->count[h], need);

			t = TNPU_MAX(t, sm->time[h]);
			sm->count[h] -= take;
			need -= take;
			if (!sm->count[h]) {
				sm->head = (h + 1) % TNPU_SEM_MAX_TOKENS;
				sm->n--;
			}
		}
		sm->avail -= count;
		ex->res->counters[TNPU_CNT_STALL_CYCLES] += t - s;
		if (t > s)
			trace(ex, e, TNPU_TRACE_ROW_NONE, TNPU_TRACE_SEM_WAIT, s, t);
		ex->F[e] = t + TNPU_CYC_CMD;
		ex->P = ex->F[e];
	}
	return 0;
}

/* ---- FENCE ------------------------------------------------------------------ */

static uint32_t cmd_fence(struct tnpu_exec *ex, const uint8_t *c)
{
	uint64_t va = ld64(c + 8), t, t0;
	uint8_t val[8];

	if (va & 7)
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 0, va);
	t0 = tnpu_job_time(ex);
	t = t0 + TNPU_CYC_CMD;
	if (va) {
		memcpy(val, c + 16, 8);
		if (tnpu_va_write(ex, va, val, 8, TNPU_EC_FETCH))
			return ex->res->error;
		t += TNPU_CYC_DMA_SETUP;
	}
	/* A barrier over every island (chain #9). */
	for (unsigned i = 0; i < ex->n_isl; i++) {
		for (unsigned e = 0; e < TNPU_ENGINE_NUM; e++)
			ex->isl_rt[i].F[e] = t;
		ex->isl_rt[i].aux = t;
		ex->isl_rt[i].P = t;
	}
	for (unsigned r = 0; r < ex->cfg.rows; r++)
		ex->R[r] = TNPU_MAX(ex->R[r], t);
	ex->P = t;
	trace(ex, TNPU_ENGINE_NUM, TNPU_TRACE_ROW_NONE, TNPU_TRACE_FENCE, t0, t);
	return 0;
}

/* ---- command loop ------------------------------------------------------------ */

static const uint32_t cmd_sizes[] = {
	[TNPU_CMD_NOP] = 8,
	[TNPU_CMD_DMA_H2D] = sizeof(struct tnpu_cmd_dma),
	[TNPU_CMD_DMA_D2H] = sizeof(struct tnpu_cmd_dma),
	[TNPU_CMD_IM2COL] = sizeof(struct tnpu_cmd_im2col),
	[TNPU_CMD_DISPATCH] = 0,	/* variable */
	[TNPU_CMD_SEM_SIGNAL] = sizeof(struct tnpu_cmd_sem),
	[TNPU_CMD_SEM_WAIT] = sizeof(struct tnpu_cmd_sem),
	[TNPU_CMD_FENCE] = sizeof(struct tnpu_cmd_fence),
	[TNPU_CMD_ISLAND] = sizeof(struct tnpu_cmd_island),
	[TNPU_CMD_RING_INIT] = sizeof(struct tnpu_cmd_ring_init),
	[TNPU_CMD_RING_SIGNAL] = sizeof(struct tnpu_cmd_ring_op),
	[TNPU_CMD_RING_WAIT] = sizeof(struct tnpu_cmd_ring_op),
};

/* Size of command `op`: 0 = variable (DISPATCH), UINT32_MAX = unknown opcode. */
static uint32_t cmd_size(uint8_t op)
{
	if (op < sizeof(cmd_sizes) / sizeof(cmd_sizes[0]) && (cmd_sizes[op] || op == TNPU_CMD_DISPATCH))
		return cmd_sizes[op];
	if (tnpu_plan_cmd_size(op))
		return tnpu_plan_cmd_size(op);
	if (tnpu_vec_cmd_size(op))
		return tnpu_vec_cmd_size(op);
	if (op == TNPU_CMD_DMA_DEQ)
		return sizeof(struct tnpu_cmd_dma_deq);
	return tnpu_dw_cmd_size(op) ? tnpu_dw_cmd_size(op) : UINT32_MAX;
}

static uint32_t run_commands(struct tnpu_exec *ex, uint64_t cmd_va, uint32_t cmd_len, const uint8_t *resume)
{
	uint8_t *buf = tnpu_host_alloc(cmd_len);
	uint32_t off = 0, err = 0;

	if (!buf)
		return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
	/* The command processor prefetches the whole buffer through the MMU
	 * (engine 0); a fault reports the first failing VA. */
	err = tnpu_va_read(ex, cmd_va, buf, cmd_len, TNPU_EC_FETCH);
	if (!err && resume) {
		err = tnpu_resume_walk(ex, buf, cmd_len, ld32(resume + TNPU_SAVE_OFF_RESUME));
		if (!err) {
			tnpu_resume_restore(ex, resume);
			off = ex->resume_off;
		}
	}
	while (!err && off < cmd_len) {
		const uint8_t *c = buf + off;
		uint8_t op = c[0], flags = c[1];
		uint32_t size = ld32(c + 4), want;
		bool async = flags & TNPU_CMD_F_ASYNC;

		ex->cmd_off = off;
		ex->res->counters[TNPU_CNT_COMMANDS]++;
		if (ex->hz)
			tnpu_hz_cmd_start_slow(ex);
		if (tnpu_stopped(ex, 1)) {
			err = tnpu_stop_fail(ex);
			break;
		}
		if (cmd_len - off < 8 || size < 8 || (size & 7) || size > cmd_len - off) {
			err = tnpu_fail(ex, TNPU_ERR_CMD_SIZE, size, 0);
			break;
		}
		want = cmd_size(op);
		if (want == UINT32_MAX) {
			err = tnpu_fail(ex, TNPU_ERR_CMD_OPCODE, op, 0);
			break;
		}
		if (want ? size != want : size < sizeof(struct tnpu_cmd_dispatch)) {
			err = tnpu_fail(ex, TNPU_ERR_CMD_SIZE, size, 0);
			break;
		}
		if ((flags & ~TNPU_CMD_F_MASK) || ld16(c + 2)) {
			err = tnpu_fail(ex, TNPU_ERR_CMD_RESERVED, 0, 0);
			break;
		}
		/* commands.md "Preemption points": a taken point is not executed, nor counted */
		if ((flags & TNPU_CMD_F_PREEMPT) && tnpu_preempt_point(ex, off))
			break;
		switch (op) {
		case TNPU_CMD_NOP:
			ex->P = TNPU_MAX(ex->P, 0) + TNPU_CYC_CMD;
			break;
		case TNPU_CMD_DMA_H2D:
		case TNPU_CMD_DMA_D2H:
			tnpu_va_hold(ex);
			err = cmd_dma(ex, c, op == TNPU_CMD_DMA_H2D, async);
			tnpu_va_unhold(ex);
			break;
		case TNPU_CMD_IM2COL:
			tnpu_va_hold(ex);
			err = cmd_im2col(ex, c, async);
			tnpu_va_unhold(ex);
			break;
		case TNPU_CMD_DISPATCH:
			err = cmd_dispatch(ex, c, size, async);
			break;
		case TNPU_CMD_SEM_SIGNAL:
		case TNPU_CMD_SEM_WAIT:
			err = cmd_sem(ex, c, op == TNPU_CMD_SEM_SIGNAL, async);
			break;
		case TNPU_CMD_FENCE:
			err = cmd_fence(ex, c);
			break;
		case TNPU_CMD_ISLAND:
			err = tnpu_cmd_island(ex, c);
			break;
		case TNPU_CMD_RING_INIT:
			err = tnpu_cmd_ring_init(ex, c);
			break;
		case TNPU_CMD_RING_SIGNAL:
		case TNPU_CMD_RING_WAIT:
			err = tnpu_cmd_ring_op(ex, c, op == TNPU_CMD_RING_SIGNAL, async);
			break;
		case TNPU_CMD_DMA_BANDS_H2D:
		case TNPU_CMD_DMA_BANDS_D2H:
			tnpu_va_hold(ex);
			err = tnpu_cmd_dma_bands(ex, c, op == TNPU_CMD_DMA_BANDS_H2D, async);
			tnpu_va_unhold(ex);
			break;
		case TNPU_CMD_PLAN_LOAD:
		case TNPU_CMD_GATHER:
		case TNPU_CMD_PLAN_FREE:
			err = tnpu_plan_cmd(ex, c, async);
			break;
		case TNPU_CMD_VEC_LUT:
		case TNPU_CMD_VEC:
			err = tnpu_vec_cmd(ex, c, async);
			break;
		case TNPU_CMD_DMA_DEQ:
			tnpu_va_hold(ex);
			err = tnpu_cmd_dma_deq(ex, c, async);
			tnpu_va_unhold(ex);
			break;
		}
		if (!err && tnpu_job_time(ex) > ex->cfg.watchdog_cycles)
			err = tnpu_fail(ex, TNPU_ERR_WATCHDOG, 0, 0);
		off += size;
	}
	tnpu_host_free(buf, cmd_len);
	return err;
}

/* ---- entry points -------------------------------------------------------- */

static uint32_t run_job(struct tnpu_exec *ex, uint16_t ctx, uint64_t ctx_table, uint32_t ctx_count,
			uint64_t cmd_va, uint32_t cmd_len, const uint8_t *resume)
{
	uint8_t raw[16];
	uint64_t root;

	if (ctx >= ctx_count)
		return tnpu_fail(ex, TNPU_ERR_CTX_RANGE, ctx, 0);
	if (ex->mem->read(ex->mem->opaque, ctx_table + 16ull * ctx, raw, 16))
		return tnpu_fail(ex, TNPU_ERR_CTX_INVALID, ctx, ctx_table + 16ull * ctx);
	root = ld64(raw);
	if (!(root & TNPU_CTX_VALID) || (root & ~(TNPU_PTE_ADDR_MASK | TNPU_CTX_VALID)) || ld64(raw + 8))
		return tnpu_fail(ex, TNPU_ERR_CTX_INVALID, ctx, ctx_table + 16ull * ctx);
	if (!cmd_len || (cmd_len & 7) || cmd_len > TNPU_CMDBUF_MAX || (cmd_va & 7))
		return tnpu_fail(ex, TNPU_ERR_CMDBUF, cmd_len, cmd_va);
	ex->root = root & TNPU_PTE_ADDR_MASK;
	return run_commands(ex, cmd_va, cmd_len, resume);
}

static void job_begin(struct tnpu_exec *ex, const struct tnpu_mem_ops *mem, struct tnpu_result *res, uint16_t ctx)
{
	memset(res, 0, sizeof(*res));
	res->ctx = ctx;
	ex->mem = mem;
	ex->res = res;
	job_reset(ex);
	if (ex->hz)
		tnpu_hz_job_start(ex);
}

static uint32_t job_end(struct tnpu_exec *ex)
{
	struct tnpu_result *res = ex->res;

	/* a hazard is the job's error only if nothing else went wrong first (errors.md HAZARD) */
	if (ex->hz && tnpu_hz_check(ex) && tnpu_exec_hazard_mode(ex) == TNPU_HAZARD_FAIL && !res->error) {
		struct tnpu_hazard h;

		tnpu_exec_hazard(ex, &h);
		ex->cmd_off = h.cmd_b;
		tnpu_fail(ex, TNPU_ERR_HAZARD, h.cmd_a, h.lo);
	}
	res->counters[TNPU_CNT_TOTAL_CYCLES] = tnpu_job_time(ex) + TNPU_CYC_JOB;
	for (unsigned r = 0; r < ex->cfg.rows; r++) {
		res->counters[TNPU_CNT_ROW_BUSY_MAX] = TNPU_MAX(res->counters[TNPU_CNT_ROW_BUSY_MAX], res->row_busy[r]);
		res->counters[TNPU_CNT_ROW_BUSY_SUM] += res->row_busy[r];
		res->counters[TNPU_CNT_BUSY_ROWS] += res->row_busy[r] != 0;
	}
	ex->mem = NULL;
	ex->res = NULL;
	tnpu_scratch_trim(ex);
	return res->error;
}

uint32_t tnpu_exec_run_cmdbuf(struct tnpu_exec *ex, const struct tnpu_mem_ops *mem, uint64_t ctx_table,
			      uint32_t ctx_count, uint16_t ctx, uint64_t cmd_va, uint32_t cmd_len,
			      struct tnpu_result *res)
{
	job_begin(ex, mem, res, ctx);
	run_job(ex, ctx, ctx_table, ctx_count, cmd_va, cmd_len, NULL);
	return job_end(ex);
}

uint32_t tnpu_exec_run(struct tnpu_exec *ex, const struct tnpu_job *job, const struct tnpu_mem_ops *mem,
		       struct tnpu_result *res)
{
	const struct tnpu_ring_entry *e = &job->entry;
	const uint16_t pflags = TNPU_RING_F_PREEMPTIBLE | TNPU_RING_F_RESUME;
	uint8_t rec[TNPU_SAVE_BYTES];

	job_begin(ex, mem, res, e->ctx);
	tnpu_plan_job_start(ex, job->generation, job->session);
	ex->entry = e;
	ex->save_pa = job->save_pa;
	ex->preemptible = e->flags & TNPU_RING_F_PREEMPTIBLE;
	if (job->fetch_error) {
		tnpu_fail(ex, job->fetch_error, 0, job->entry_pa);
	} else if ((e->flags & ~TNPU_RING_F_MASK) ||
		   ((e->flags & TNPU_RING_F_COUNTERS) ? (e->counters_addr & 7) : e->counters_addr) ||
		   ((e->flags & pflags) && !job->save_pa)) {
		tnpu_fail(ex, TNPU_ERR_RING_ENTRY, e->flags, 0);
	} else if (!(e->flags & TNPU_RING_F_RESUME)) {
		run_job(ex, e->ctx, job->ctx_table, job->ctx_count, e->cmd_va, e->cmd_len, NULL);
	} else if (mem->read(mem->opaque, job->save_pa, rec, sizeof(rec))) {
		tnpu_fail(ex, TNPU_ERR_RESUME, TNPU_SAVE_BYTES, job->save_pa);
	} else if (!tnpu_resume_check(ex, rec)) {
		static const uint8_t consumed[4];

		/* queues.md "Resume": an accepted record is consumed (its state word cleared), so the
		 * driver never takes it for a new preemption of this entry */
		if (mem->write(mem->opaque, job->save_pa + TNPU_SAVE_OFF_STATE, consumed, sizeof(consumed)))
			tnpu_fail(ex, TNPU_ERR_RESUME, TNPU_SAVE_BYTES, job->save_pa);
		else
			run_job(ex, e->ctx, job->ctx_table, job->ctx_count, e->cmd_va, e->cmd_len, rec);
	}
	return job_end(ex);
}
