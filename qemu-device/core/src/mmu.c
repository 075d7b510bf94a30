/* SPDX-License-Identifier: MIT */
/*
 * Device MMU: 4-level page-table walk (Documentation/hardware/mmu.md) and
 * the translated accessors every job access goes through.
 */
#include "internal.h"

struct walk {
	uint32_t err;
	unsigned level;		/* level where the walk stopped */
	uint64_t pa;		/* page address */
	uint64_t pte;		/* leaf */
};

static void walk(const struct tnpu_mem_ops *mem, uint64_t root, uint64_t va, struct walk *w)
{
	uint64_t table = root;

	w->err = 0;
	for (unsigned level = TNPU_PT_LEVELS; level >= 1; level--) {
		uint8_t raw[8];
		uint64_t pte;

		w->level = level;
		if (mem->read(mem->opaque, table + 8u * TNPU_PT_INDEX(va, level), raw, 8)) {
			w->err = TNPU_ERR_BUS;
			return;
		}
		pte = ld64(raw);
		if (!(pte & TNPU_PTE_VALID)) {
			w->err = TNPU_ERR_MMU_NOT_PRESENT;
			return;
		}
		if (pte & TNPU_PTE_RESERVED_MASK) {
			w->err = TNPU_ERR_MMU_BAD_PTE;
			return;
		}
		table = pte & TNPU_PTE_ADDR_MASK;
		if (level == 1) {
			w->pa = table;
			w->pte = pte;
		}
	}
}

/* The job's walk: the level-1 table of va's 2 MiB from the walk cache if it has it (one entry read,
 * the errors and level the full walk would give there), else the full walk, remembering the table. */
static void walk_cached(struct tnpu_exec *ex, uint64_t va, struct walk *w)
{
	uint64_t tag = va >> (TNPU_PAGE_SHIFT + 9), table = ex->root;
	struct pwc_entry *c = &ex->pwc[tag % PWC_SIZE];
	unsigned top = TNPU_PT_LEVELS;

	if (c->tag == tag) {
		table = c->table;
		top = 1;
	}
	w->err = 0;
	for (unsigned level = top; level >= 1; level--) {
		uint8_t raw[8];
		uint64_t pte;

		w->level = level;
		if (ex->mem->read(ex->mem->opaque, table + 8u * TNPU_PT_INDEX(va, level), raw, 8)) {
			w->err = TNPU_ERR_BUS;
			return;
		}
		pte = ld64(raw);
		if (!(pte & TNPU_PTE_VALID)) {
			w->err = TNPU_ERR_MMU_NOT_PRESENT;
			return;
		}
		if (pte & TNPU_PTE_RESERVED_MASK) {
			w->err = TNPU_ERR_MMU_BAD_PTE;
			return;
		}
		table = pte & TNPU_PTE_ADDR_MASK;
		if (level == 2)
			*c = (struct pwc_entry){ .tag = tag, .table = table };
		if (level == 1) {
			w->pa = table;
			w->pte = pte;
		}
	}
}

void tnpu_tlb_flush(struct tnpu_exec *ex)
{
	for (unsigned i = 0; i < TLB_SIZE; i++)
		ex->tlb[i].vpn = ~0ull;
	for (unsigned i = 0; i < PWC_SIZE; i++)
		ex->pwc[i].tag = ~0ull;
}

/* Translate the page containing va; returns 0 and the page's bus address. */
static uint32_t translate(struct tnpu_exec *ex, uint64_t va, bool write, unsigned engine, uint64_t *pa)
{
	uint64_t vpn = va >> TNPU_PAGE_SHIFT;
	struct tlb_entry *t = &ex->tlb[vpn % TLB_SIZE];
	uint32_t info = (write ? TNPU_ERRINFO_WRITE : 0) | (engine << 4);
	struct walk w;

	if (va >> TNPU_VA_BITS)
		return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, info, va);
	if (t->vpn != vpn) {
		walk_cached(ex, va, &w);
		if (w.err) {
			info |= w.level << 1;
			return tnpu_fail(ex, w.err, info, va);
		}
		t->vpn = vpn;
		t->pa = w.pa;
		t->pte = w.pte;
	}
	if (!(t->pte & (write ? TNPU_PTE_WRITE : TNPU_PTE_READ)))
		return tnpu_fail(ex, TNPU_ERR_MMU_PERMISSION, info | (1u << 1), va);
	*pa = t->pa;
	return 0;
}

/*
 * MMU_INVALIDATE handshake (registers.md STATUS.MMU_INV_PENDING): an access announces itself
 * (in_access), then drops the TLB if an invalidate was requested since the last access and
 * records which request it has seen.  With sequentially consistent atomics an invalidate that
 * finds no access in progress is seen by the next one, so tnpu_exec_tlb_pending() is true only
 * while an access may still use a translation older than the request.
 */
static uint32_t va_access_pages(struct tnpu_exec *ex, uint64_t va, void *buf, size_t len, unsigned engine,
				bool write);

static uint32_t va_access(struct tnpu_exec *ex, uint64_t va, void *buf, size_t len, unsigned engine,
			  bool write)
{
	unsigned req;
	uint32_t err;

	if (!ex->va_held)
		atomic_store(&ex->in_access, true);
	req = atomic_load(&ex->tlb_req);
	if (req != atomic_load_explicit(&ex->tlb_seq, memory_order_relaxed)) {
		tnpu_tlb_flush(ex);
		atomic_store(&ex->tlb_seq, req);
	}
	err = va_access_pages(ex, va, buf, len, engine, write);
	if (!ex->va_held)
		atomic_store_explicit(&ex->in_access, false, memory_order_release);
	return err;
}

/*
 * One announcement for the many row accesses of a DMA or IM2COL command (a seq_cst store costs
 * as much as copying a short row).  Every access still loads tlb_req and drops the TLB when it
 * moved, so a request is seen by the next row; while held, tnpu_exec_tlb_pending() is true from
 * the request until that row, as it is within one access.  Held only by commands that never
 * wait on another thread.  Clearing in_access needs release order only: the accesses before it
 * are done, and a later access announces itself with a seq_cst store again.
 */
void tnpu_va_hold(struct tnpu_exec *ex)
{
	atomic_store(&ex->in_access, true);
	ex->va_held = true;
}

void tnpu_va_unhold(struct tnpu_exec *ex)
{
	ex->va_held = false;
	atomic_store_explicit(&ex->in_access, false, memory_order_release);
}

static uint32_t va_access_pages(struct tnpu_exec *ex, uint64_t va, void *buf, size_t len, unsigned engine,
				bool write)
{
	uint8_t *p = buf;

	if (len == 0)
		return 0;
	if (va >> TNPU_VA_BITS || len > (1ull << TNPU_VA_BITS) || va + len > (1ull << TNPU_VA_BITS))
		return tnpu_fail(ex, TNPU_ERR_MMU_VA_RANGE, (write ? 1u : 0u) | (engine << 4), va);
	while (len) {
		size_t chunk = TNPU_PAGE_SIZE - (va & (TNPU_PAGE_SIZE - 1));
		uint64_t pa = 0;
		uint32_t err;
		int rc;

		if (chunk > len)
			chunk = len;
		/* per page: an aborted job stops touching guest memory within one page */
		if (tnpu_stopped(ex, 1))
			return tnpu_stop_fail(ex);
		err = translate(ex, va, write, engine, &pa);
		if (err)
			return err;
		pa |= va & (TNPU_PAGE_SIZE - 1);
		if (write)
			rc = ex->mem->write(ex->mem->opaque, pa, p, chunk);
		else
			rc = ex->mem->read(ex->mem->opaque, pa, p, chunk);
		if (rc)
			return tnpu_fail(ex, TNPU_ERR_BUS, (write ? 1u : 0u) | (engine << 4), va);
		va += chunk;
		p += chunk;
		len -= chunk;
	}
	return 0;
}

uint32_t tnpu_va_read(struct tnpu_exec *ex, uint64_t va, void *buf, size_t len, unsigned engine)
{
	return va_access(ex, va, buf, len, engine, false);
}

uint32_t tnpu_va_write(struct tnpu_exec *ex, uint64_t va, const void *buf, size_t len, unsigned engine)
{
	return va_access(ex, va, (void *)buf, len, engine, true);
}

/*
 * Rows back to back on the host side and apart on chip (an NHWC tile's pixels, a band's lines): the
 * rows that lie wholly in one page move as one access through a page-sized bounce buffer.  A memory
 * access costs a callback (in QEMU, a translation of guest memory) however short, so a 32-byte row
 * per call dominated such transfers.  Row-by-row semantics are kept: a block starts with the first
 * row that touches its page (the row before it ends in the page before, or crosses into this one and
 * went alone), so a fault is reported for the same row and address, after the same rows moved; a
 * row that crosses a page boundary moves alone.
 */
static uint64_t rows_in_page(uint64_t va, uint32_t w, uint64_t n)
{
	uint64_t k = (TNPU_PAGE_SIZE - (va & (TNPU_PAGE_SIZE - 1))) / w;

	return k < n ? k : n;
}

/* The loop of both directions: sram rows sp apart, host rows back to back from va. */
static uint32_t va_rows(struct tnpu_exec *ex, uint64_t va, uint8_t *sram, uint64_t sp, uint32_t w, uint64_t n,
			unsigned engine, bool write)
{
	TNPU_UNINIT uint8_t buf[TNPU_PAGE_SIZE];

	while (n) {
		uint64_t k = w ? rows_in_page(va, w, n) : n;
		uint32_t err;

		if (k <= 1) {
			k = 1;
			err = va_access(ex, va, sram, w, engine, write);
		} else if (write) {
			for (uint64_t i = 0; i < k; i++)
				memcpy(buf + i * w, sram + i * sp, w);
			err = va_access(ex, va, buf, k * w, engine, true);
		} else {
			err = va_access(ex, va, buf, k * w, engine, false);
			for (uint64_t i = 0; i < k && !err; i++)
				memcpy(sram + i * sp, buf + i * w, w);
		}
		if (err)
			return err;
		va += k * w;
		sram += k * sp;
		n -= k;
	}
	return 0;
}

uint32_t tnpu_va_read_rows(struct tnpu_exec *ex, uint64_t va, uint8_t *dst, uint64_t sp, uint32_t w, uint64_t n,
			   unsigned engine)
{
	return va_rows(ex, va, dst, sp, w, n, engine, false);
}

uint32_t tnpu_va_write_rows(struct tnpu_exec *ex, uint64_t va, const uint8_t *src, uint64_t sp, uint32_t w,
			    uint64_t n, unsigned engine)
{
	return va_rows(ex, va, (uint8_t *)src, sp, w, n, engine, true);
}

uint32_t tnpu_mmu_translate(const struct tnpu_mem_ops *mem, uint64_t ctx_table, uint32_t ctx_count,
			    uint16_t ctx, uint64_t va, bool write, uint64_t *pa)
{
	uint8_t raw[16];
	uint64_t root;
	struct walk w;

	if (ctx >= ctx_count)
		return TNPU_ERR_CTX_RANGE;
	if (mem->read(mem->opaque, ctx_table + 16u * ctx, raw, 16))
		return TNPU_ERR_CTX_INVALID;
	root = ld64(raw);
	if (!(root & TNPU_CTX_VALID) || (root & ~(TNPU_PTE_ADDR_MASK | TNPU_CTX_VALID)) || ld64(raw + 8))
		return TNPU_ERR_CTX_INVALID;
	if (va >> TNPU_VA_BITS)
		return TNPU_ERR_MMU_VA_RANGE;
	walk(mem, root & TNPU_PTE_ADDR_MASK, va, &w);
	if (w.err)
		return w.err;
	if (!(w.pte & (write ? TNPU_PTE_WRITE : TNPU_PTE_READ)))
		return TNPU_ERR_MMU_PERMISSION;
	*pa = w.pa | (va & (TNPU_PAGE_SIZE - 1));
	return 0;
}
