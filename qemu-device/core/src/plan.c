/* SPDX-License-Identifier: MIT */
/*
 * Static address plans (seed 004): the per-queue plan cache and the PLAN_LOAD, GATHER and PLAN_FREE
 * commands (Documentation/plans.md, hardware/commands.md).
 *
 * A plan is a list of per-PE base addresses plus one offset list shared by all PEs; a GATHER fills a
 * storage-unit tile with src_va + base[m] + offset[k].  Borders are explicit: every offset belongs
 * to a validity group and every base carries a mask of the groups that stay inside the tensor; a
 * masked element is pad_value and costs no memory read.  The device never interprets layouts.
 */
#include <stdlib.h>

#include "internal.h"

struct plan_entry {
	bool valid;
	uint16_t ctx;
	uint64_t root;		/* page-table root: a context id reused by another process misses */
	uint32_t handle, bytes, n_bases, n_offsets, e;
	uint64_t tag, lru;
	struct tnpu_plan_base *base;
	int32_t *off;
	uint8_t *grp;
};

struct tnpu_plan_cache {
	struct plan_entry ent[TNPU_PLAN_CACHE_ENTRIES];
	uint64_t used, tick;
	bool have_epoch;
	uint32_t generation, session;
};

static void entry_drop(struct tnpu_plan_cache *pc, struct plan_entry *pe)
{
	if (!pe->valid)
		return;
	pc->used -= pe->bytes;
	free(pe->base);
	free(pe->off);
	free(pe->grp);
	memset(pe, 0, sizeof(*pe));
}

static void cache_flush(struct tnpu_plan_cache *pc)
{
	for (unsigned i = 0; i < TNPU_PLAN_CACHE_ENTRIES; i++)
		entry_drop(pc, &pc->ent[i]);
}

void tnpu_plan_cache_free(struct tnpu_exec *ex)
{
	if (!ex->plans)
		return;
	cache_flush(ex->plans);
	free(ex->plans);
	ex->plans = NULL;
}

/* Cached plans survive jobs but not a device reset or a queue re-enable (plans.md "Cache"). */
void tnpu_plan_job_start(struct tnpu_exec *ex, uint32_t generation, uint32_t session)
{
	struct tnpu_plan_cache *pc = ex->plans;

	/* Allocated here (not at the first PLAN_LOAD) so the epoch of the job that fills it is known. */
	if (!pc)
		pc = ex->plans = calloc(1, sizeof(*pc));
	if (!pc)
		return;
	if (pc->have_epoch && (pc->generation != generation || pc->session != session))
		cache_flush(pc);
	pc->have_epoch = true;
	pc->generation = generation;
	pc->session = session;
}

uint32_t tnpu_plan_cmd_size(uint8_t op)
{
	switch (op) {
	case TNPU_CMD_PLAN_LOAD:
		return sizeof(struct tnpu_cmd_plan_load);
	case TNPU_CMD_GATHER:
		return sizeof(struct tnpu_cmd_gather);
	case TNPU_CMD_PLAN_FREE:
		return sizeof(struct tnpu_cmd_plan_free);
	}
	return 0;
}

static struct plan_entry *lookup(struct tnpu_exec *ex, uint32_t handle)
{
	struct tnpu_plan_cache *pc = ex->plans;

	if (!pc)
		return NULL;
	for (unsigned i = 0; i < TNPU_PLAN_CACHE_ENTRIES; i++) {
		struct plan_entry *pe = &pc->ent[i];

		if (pe->valid && pe->handle == handle && pe->ctx == ex->res->ctx && pe->root == ex->root)
			return pe;
	}
	return NULL;
}

uint64_t tnpu_plan_tag(const void *image, size_t bytes)
{
	const uint8_t *p = image;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < bytes; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Validate a fetched image and decode it into pe; returns 0 or the image offset of the bad field + 1. */
static uint32_t decode(const uint8_t *img, uint32_t bytes, struct plan_entry *pe)
{
	uint32_t nb = ld32(img + 8), no = ld32(img + 12), groups = img[7], e = img[6];
	const uint8_t *p;

	if (ld32(img) != TNPU_PLAN_MAGIC || ld16(img + 4) != TNPU_PLAN_VERSION)
		return 1;
	if ((e != 1 && e != 2 && e != 4) || !groups || groups > TNPU_PLAN_MAX_GROUPS)
		return 7;
	if (!nb || !no || (uint64_t)32 + 16ull * nb + 8ull * no != bytes || ld32(img + 16) != bytes)
		return 9;
	if (ld32(img + 20) || ld32(img + 24) || ld32(img + 28))
		return 21;
	pe->base = malloc((size_t)nb * sizeof(*pe->base));
	pe->off = malloc((size_t)no * sizeof(*pe->off));
	pe->grp = malloc(no);
	if (!pe->base || !pe->off || !pe->grp)
		return ~0u;
	p = img + 32;
	for (uint32_t i = 0; i < nb; i++, p += 16) {
		pe->base[i].base = (int64_t)ld64(p);
		pe->base[i].mask = ld64(p + 8);
		if (groups < 64 && (pe->base[i].mask >> groups))
			return (uint32_t)(p - img) + 9;
	}
	for (uint32_t j = 0; j < no; j++, p += 8) {
		pe->off[j] = (int32_t)ld32(p);
		pe->grp[j] = p[4];
		if (p[4] >= groups || p[5] || p[6] || p[7])
			return (uint32_t)(p - img) + 5;
	}
	pe->n_bases = nb;
	pe->n_offsets = no;
	pe->e = e;
	return 0;
}

static uint32_t cmd_plan_load(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	uint64_t va = ld64(c + 8), tag = ld64(c + 24);
	uint32_t handle = ld32(c + 16), bytes = ld32(c + 20), bad, err;
	struct tnpu_plan_cache *pc;
	struct plan_entry *pe, nw;
	uint8_t *img;

	if (handle == TNPU_PLAN_HANDLE_ALL || bytes < sizeof(struct tnpu_plan_hdr))
		return tnpu_fail(ex, TNPU_ERR_PLAN_DESC, handle, 0);
	if (bytes > TNPU_PLAN_CACHE_BYTES)
		return tnpu_fail(ex, TNPU_ERR_PLAN_TOO_LARGE, handle, bytes);
	if (!ex->plans) {
		ex->plans = calloc(1, sizeof(*ex->plans));
		if (!ex->plans)
			return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
	}
	pc = ex->plans;
	pe = lookup(ex, handle);
	if (pe && pe->bytes == bytes && pe->tag == tag) {
		/* Hit: nothing crosses the bus; the command costs its decode only. */
		pe->lru = ++pc->tick;
		ex->res->counters[TNPU_CNT_PLAN_HITS]++;
		tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_DMA_H2D, async, TNPU_CYC_CMD);
		return 0;
	}
	/* Miss (or a different image under this handle): the old entry goes first, so a failed
	 * upload never leaves a stale plan behind. */
	if (pe)
		entry_drop(pc, pe);
	ex->res->counters[TNPU_CNT_PLAN_MISSES]++;
	img = tnpu_scratch(ex, bytes);
	if (!img)
		return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
	err = tnpu_va_read(ex, va, img, bytes, TNPU_EC(TNPU_ENGINE_LOAD));
	if (err)
		return err;
	ex->res->counters[TNPU_CNT_BYTES_H2D] += bytes;
	if (tnpu_plan_tag(img, bytes) != tag)
		return tnpu_fail(ex, TNPU_ERR_PLAN_BAD, handle, 0);
	memset(&nw, 0, sizeof(nw));
	bad = decode(img, bytes, &nw);
	if (bad) {
		free(nw.base);
		free(nw.off);
		free(nw.grp);
		if (bad == ~0u)
			return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
		return tnpu_fail(ex, TNPU_ERR_PLAN_BAD, handle, bad - 1);
	}
	/* Make room: least recently used first. */
	for (;;) {
		struct plan_entry *victim = NULL, *slot = NULL;

		for (unsigned i = 0; i < TNPU_PLAN_CACHE_ENTRIES; i++) {
			struct plan_entry *q = &pc->ent[i];

			if (!q->valid)
				slot = slot ? slot : q;
			else if (!victim || q->lru < victim->lru)
				victim = q;
		}
		if (slot && pc->used + bytes <= TNPU_PLAN_CACHE_BYTES) {
			nw.valid = true;
			nw.ctx = (uint16_t)ex->res->ctx;
			nw.root = ex->root;
			nw.handle = handle;
			nw.bytes = bytes;
			nw.tag = tag;
			nw.lru = ++pc->tick;
			*slot = nw;
			pc->used += bytes;
			break;
		}
		entry_drop(pc, victim);
	}
	tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_DMA_H2D, async,
			     TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + div_ceil_u64(bytes, TNPU_RATE_DMA));
	return 0;
}

static uint32_t cmd_plan_free(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	uint32_t handle = ld32(c + 8);

	if (ld32(c + 12))
		return tnpu_fail(ex, TNPU_ERR_PLAN_DESC, handle, 0);
	if (ex->plans) {
		for (unsigned i = 0; i < TNPU_PLAN_CACHE_ENTRIES; i++) {
			struct plan_entry *pe = &ex->plans->ent[i];

			if (pe->valid && pe->ctx == ex->res->ctx && pe->root == ex->root &&
			    (handle == TNPU_PLAN_HANDLE_ALL || pe->handle == handle))
				entry_drop(ex->plans, pe);
		}
	}
	tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_DMA_H2D, async, TNPU_CYC_CMD);
	return 0;
}

static inline bool elem_valid(const struct plan_entry *pe, uint32_t m, uint32_t k)
{
	return (pe->base[m].mask >> pe->grp[k]) & 1;
}

static uint32_t cmd_gather(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	uint64_t src = ld64(c + 8);
	uint32_t handle = ld32(c + 16), pad = ld32(c + 20), m0 = ld32(c + 24), mt = ld32(c + 28);
	uint32_t k0 = ld32(c + 32), kt = ld32(c + 36), off = ld32(c + 40), pitch = ld32(c + 44);
	uint8_t row = c[48], half = c[49];
	bool all = row == TNPU_DMA_ROW_ALL, any = false;
	struct plan_entry *pe;
	int64_t lo = INT64_MAX, hi = INT64_MIN, lo_line;
	uint64_t last, span, nlines, runs_cyc = 0, bytes = 0, base;
	uint32_t e, err;
	uint8_t *box, *bits, padb[4];
	unsigned r0, r1;

	pe = lookup(ex, handle);
	if (!pe)
		return tnpu_fail(ex, TNPU_ERR_PLAN_UNKNOWN, handle, 0);
	e = pe->e;
	if (!mt || !kt || (uint64_t)m0 + mt > pe->n_bases || (uint64_t)k0 + kt > pe->n_offsets ||
	    (e < 4 && (pad >> (8 * e))) || (uint64_t)pitch < (uint64_t)kt * e || half > 1 ||
	    (!all && row >= ex->cfg.rows) || ld16(c + 50) || ld32(c + 52))
		return tnpu_fail(ex, TNPU_ERR_PLAN_DESC, handle, 0);
	last = (uint64_t)off + (uint64_t)(mt - 1) * pitch + (uint64_t)kt * e;
	if (last > ex->half)
		return tnpu_fail(ex, TNPU_ERR_SRAM_RANGE, 0, off);
	if ((off | pitch) & (e - 1))
		return tnpu_fail(ex, TNPU_ERR_ALIGN, 0, off);
	if (src >> 62)
		return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4, src);

	/* Pass 1: byte range of the valid elements (bases and offsets are bounded by 2^63 and 2^31,
	 * src by 2^62, so the sums below cannot wrap). */
	for (uint32_t i = 0; i < mt; i++) {
		int64_t b;

		/* range first: the sum below must not be evaluated for a base that could overflow it */
		if (pe->base[m0 + i].base > (INT64_MAX >> 1) || pe->base[m0 + i].base < -(INT64_MAX >> 1))
			return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4, src);
		b = (int64_t)src + pe->base[m0 + i].base;
		for (uint32_t j = 0; j < kt; j++) {
			if (!elem_valid(pe, m0 + i, k0 + j))
				continue;
			any = true;
			lo = TNPU_MIN(lo, b + pe->off[k0 + j]);
			hi = TNPU_MAX(hi, b + pe->off[k0 + j] + (int64_t)e);
		}
	}
	box = NULL;
	lo_line = 0;
	if (any) {
		if (lo < 0 || (uint64_t)hi > (1ull << TNPU_VA_BITS))
			return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, TNPU_EC(TNPU_ENGINE_LOAD) << 4,
					 lo < 0 ? src : (uint64_t)hi);
		lo_line = lo & ~(int64_t)(TNPU_GATHER_LINE - 1);
		span = div_ceil_u64((uint64_t)(hi - lo_line), TNPU_GATHER_LINE) * TNPU_GATHER_LINE;
		if (span > TNPU_IM2COL_MAX_FOOTPRINT)
			return tnpu_fail(ex, TNPU_ERR_TOO_LARGE, 0, 0);
		nlines = span / TNPU_GATHER_LINE;
		box = tnpu_scratch(ex, span + nlines);
		if (!box)
			return tnpu_fail(ex, TNPU_ERR_NOMEM, 0, 0);
		bits = box + span;
		memset(bits, 0, nlines);
		/* Pass 2: the lines the valid elements touch. */
		for (uint32_t i = 0; i < mt; i++) {
			int64_t b = (int64_t)src + pe->base[m0 + i].base - lo_line;

			if (tnpu_stopped(ex, 1 + kt / 8))
				return tnpu_stop_fail(ex);
			for (uint32_t j = 0; j < kt; j++) {
				int64_t a;

				if (!elem_valid(pe, m0 + i, k0 + j))
					continue;
				a = b + pe->off[k0 + j];
				bits[a / TNPU_GATHER_LINE] = 1;
				bits[(a + e - 1) / TNPU_GATHER_LINE] = 1;
			}
		}
		/* Read each run of touched lines as one burst sequence. */
		for (uint64_t l = 0; l < nlines;) {
			uint64_t n = 0;

			if (!bits[l]) {
				l++;
				continue;
			}
			while (l + n < nlines && bits[l + n])
				n++;
			err = tnpu_va_read(ex, (uint64_t)lo_line + l * TNPU_GATHER_LINE, box + l * TNPU_GATHER_LINE,
					   n * TNPU_GATHER_LINE, TNPU_EC(TNPU_ENGINE_LOAD));
			if (err)
				return err;
			bytes += n * TNPU_GATHER_LINE;
			runs_cyc += div_ceil_u64(n * TNPU_GATHER_LINE, TNPU_RATE_DMA);
			l += n;
		}
	}
	/* Pass 3: the tile, in row r0 first. */
	r0 = all ? 0 : row;
	r1 = all ? ex->cfg.rows - 1 : row;
	base = (uint64_t)half * ex->half + off;
	memcpy(padb, &pad, 4);
	/* marked before it is written: an abort half way leaves nothing the next job sees */
	sram_mark(&ex->rows[r0], base, base + last - off);
	for (uint32_t i = 0; i < mt; i++) {
		uint8_t *out = ex->rows[r0].sram + base + (uint64_t)i * pitch;
		int64_t b = (int64_t)src + pe->base[m0 + i].base - lo_line;

		if (tnpu_stopped(ex, 1 + kt / 8))
			return tnpu_stop_fail(ex);
		for (uint32_t j = 0; j < kt; j++) {
			const uint8_t *from = padb;

			if (elem_valid(pe, m0 + i, k0 + j))
				from = box + b + pe->off[k0 + j];
			memcpy(out + (uint64_t)j * e, from, e);
		}
	}
	for (unsigned r = r0 + 1; r <= r1; r++) {
		for (uint32_t i = 0; i < mt; i++)
			memcpy(ex->rows[r].sram + base + (uint64_t)i * pitch, ex->rows[r0].sram + base + (uint64_t)i * pitch,
			       (size_t)kt * e);
		sram_mark(&ex->rows[r], base, base + last - off);
	}
	pe->lru = ++ex->plans->tick;
	ex->res->counters[TNPU_CNT_BYTES_H2D] += bytes;
	tnpu_engine_run(ex, TNPU_ENGINE_LOAD, TNPU_TRACE_IM2COL, async,
			     TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP +
				     TNPU_MAX(runs_cyc, div_ceil_u64((uint64_t)mt * kt * e, TNPU_RATE_IM2COL)));
	return 0;
}

uint32_t tnpu_plan_cmd(struct tnpu_exec *ex, const uint8_t *c, bool async)
{
	switch (c[0]) {
	case TNPU_CMD_PLAN_LOAD:
		return cmd_plan_load(ex, c, async);
	case TNPU_CMD_GATHER:
		return cmd_gather(ex, c, async);
	default:
		return cmd_plan_free(ex, c, async);
	}
}
