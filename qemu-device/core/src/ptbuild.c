/* SPDX-License-Identifier: MIT */
/*
 * Page-table builder for in-process users of the model (libaccel's sim
 * backend, tests): writes the 4-level format of Documentation/hardware/mmu.md
 * through the same memory callbacks the device uses.
 */
#include <errno.h>

#include "internal.h"

static int rd64(const struct tnpu_mem_ops *mem, uint64_t pa, uint64_t *v)
{
	uint8_t b[8];

	if (mem->read(mem->opaque, pa, b, 8))
		return -EIO;
	*v = ld64(b);
	return 0;
}

static int wr64(const struct tnpu_mem_ops *mem, uint64_t pa, uint64_t v)
{
	uint8_t b[8];

	for (unsigned i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return mem->write(mem->opaque, pa, b, 8) ? -EIO : 0;
}

/* Bus address of the leaf PTE for va, creating tables if alloc != NULL. */
static int leaf(const struct tnpu_mem_ops *mem, const struct tnpu_pt_alloc *al, uint64_t root, uint64_t va,
		uint64_t *pte_pa)
{
	uint64_t table = root;

	for (unsigned level = TNPU_PT_LEVELS; level > 1; level--) {
		uint64_t ea = table + 8u * TNPU_PT_INDEX(va, level), e;
		int rc = rd64(mem, ea, &e);

		if (rc)
			return rc;
		if (!(e & TNPU_PTE_VALID)) {
			uint64_t page;

			if (!al)
				return -ENOENT;
			page = al->alloc_page(al->opaque);
			if (!page)
				return -ENOMEM;
			if (page & (TNPU_PAGE_SIZE - 1) || page & ~TNPU_PTE_ADDR_MASK)
				return -EINVAL;
			e = page | TNPU_PTE_VALID;
			rc = wr64(mem, ea, e);
			if (rc)
				return rc;
		}
		table = e & TNPU_PTE_ADDR_MASK;
	}
	*pte_pa = table + 8u * TNPU_PT_INDEX(va, 1);
	return 0;
}

int tnpu_pt_map(const struct tnpu_mem_ops *mem, const struct tnpu_pt_alloc *al, uint64_t root, uint64_t va,
		uint64_t pa, uint64_t len, uint64_t perms)
{
	if ((va | pa | len) & (TNPU_PAGE_SIZE - 1) || (perms & ~(TNPU_PTE_READ | TNPU_PTE_WRITE)) ||
	    va >> TNPU_VA_BITS || len > (1ull << TNPU_VA_BITS) - va || !len || (pa + len - 1) >> TNPU_PA_BITS ||
	    !al || !al->alloc_page)
		return -EINVAL;
	for (uint64_t o = 0; o < len; o += TNPU_PAGE_SIZE) {
		uint64_t pte_pa;
		int rc = leaf(mem, al, root, va + o, &pte_pa);

		if (rc)
			return rc;
		rc = wr64(mem, pte_pa, (pa + o) | TNPU_PTE_VALID | perms);
		if (rc)
			return rc;
	}
	return 0;
}

int tnpu_pt_unmap(const struct tnpu_mem_ops *mem, uint64_t root, uint64_t va, uint64_t len)
{
	if ((va | len) & (TNPU_PAGE_SIZE - 1) || va >> TNPU_VA_BITS || len > (1ull << TNPU_VA_BITS) - va)
		return -EINVAL;
	for (uint64_t o = 0; o < len; o += TNPU_PAGE_SIZE) {
		uint64_t pte_pa;
		int rc = leaf(mem, NULL, root, va + o, &pte_pa);

		if (rc == -ENOENT)
			continue;
		if (rc)
			return rc;
		rc = wr64(mem, pte_pa, 0);
		if (rc)
			return rc;
	}
	return 0;
}

int tnpu_ctx_set(const struct tnpu_mem_ops *mem, uint64_t ctx_table, uint16_t ctx, uint64_t root)
{
	if (root & ~TNPU_PTE_ADDR_MASK)
		return -EINVAL;
	if (wr64(mem, ctx_table + 16ull * ctx, root ? (root | TNPU_CTX_VALID) : 0) ||
	    wr64(mem, ctx_table + 16ull * ctx + 8, 0))
		return -EIO;
	return 0;
}
