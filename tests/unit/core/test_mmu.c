/* SPDX-License-Identifier: MIT */
/* Device MMU: translation, permissions, faults, context isolation. */
#include <errno.h>

#include "common.h"

static struct tsim s;

static void setup(void)
{
	struct tnpu_config cfg = small_cfg();

	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
}

static void teardown(void)
{
	tsim_fini(&s);
}

TestSuite(mmu, .init = setup, .fini = teardown);

Test(mmu, translates_4k_pages_through_four_levels)
{
	uint64_t pa0 = tsim_alloc_pa(&s, 8192), pa;
	uint64_t va = 0x123456789000ull;

	tsim_map(&s, 0, va, pa0, 8192, TNPU_PTE_READ);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, va + 0x10, false, &pa), 0);
	cr_assert_eq(pa, pa0 + 0x10);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, va + 0x1fff, false, &pa), 0);
	cr_assert_eq(pa, pa0 + 0x1fff);
}

Test(mmu, permission_not_present_bad_pte_va_range_and_context_errors)
{
	uint64_t pa0 = tsim_alloc_pa(&s, 4096), pa;
	uint64_t va = 0x4000000000ull;

	tsim_map(&s, 0, va, pa0, 4096, TNPU_PTE_READ);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, va, true, &pa), TNPU_ERR_MMU_PERMISSION);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, va + 4096, false, &pa), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, 1ull << 48, false, &pa), TNPU_ERR_MMU_VA_RANGE);
	*tsim_pte(&s, 0, va) |= 1ull << 7;	/* "huge page" bit: reserved */
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 0, va, false, &pa), TNPU_ERR_MMU_BAD_PTE);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 2, va, false, &pa), TNPU_ERR_CTX_RANGE);
	((uint64_t *)(void *)(s.mem + s.ctx_table))[2] = 0;	/* context 1 invalid */
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 1, va, false, &pa), TNPU_ERR_CTX_INVALID);
}

Test(mmu, dma_fault_stops_job_with_address_context_and_command_offset)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t buf = tsim_buf(&s, 4096);

	tcb_init(&cb);
	tcb_nop(&cb, 0);
	/* reads 8 KiB: the second page is the unmapped guard page */
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0, 0, 8192, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(res.err_addr, buf + 4096);
	cr_assert_eq(res.err_cmd_offset, 8);
	cr_assert_eq(TNPU_ERRINFO_ENGINE(res.err_info), 1 + TNPU_ENGINE_LOAD);
	cr_assert_eq(res.err_info & TNPU_ERRINFO_WRITE, 0);
	cr_assert_eq(res.counters[TNPU_CNT_MMU_FAULTS], 1);
	tcb_free(&cb);
}

Test(mmu, write_to_read_only_page_is_a_permission_fault)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t pa = tsim_alloc_pa(&s, 4096), va = 0x5000000000ull;

	tsim_map(&s, 0, va, pa, 4096, TNPU_PTE_READ);
	tcb_init(&cb);
	tcb_dma(&cb, false, 0, va, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_PERMISSION);
	cr_assert_eq(res.err_info & TNPU_ERRINFO_WRITE, TNPU_ERRINFO_WRITE);
	cr_assert_eq(TNPU_ERRINFO_ENGINE(res.err_info), 1 + TNPU_ENGINE_STORE);
	tcb_free(&cb);
}

Test(mmu, contexts_are_isolated)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t buf = tsim_buf(&s, 4096);	/* mapped in context 0 only */
	uint64_t cpa = tsim_alloc_pa(&s, 4096);

	/* Same command buffer VA in context 1 maps a page holding the same commands. */
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	{
		uint64_t va = tsim_buf(&s, cb.len);

		memcpy(tsim_ptr(&s, va), cb.buf, cb.len);
		tsim_map(&s, 1, va, cpa, 4096, TNPU_PTE_READ);
		memcpy(s.mem + cpa, cb.buf, cb.len);
		tnpu_exec_run_cmdbuf(s.ex, &s.ops, s.ctx_table, 2, 1, va, (uint32_t)cb.len, &res);
		cr_assert_eq(res.error, TNPU_ERR_MMU_NOT_PRESENT);
		cr_assert_eq(res.err_addr, buf);
		cr_assert_eq(res.ctx, 1);
	}
	tcb_free(&cb);
}

Test(mmu, page_table_bus_error_is_reported)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t buf = tsim_buf(&s, 4096);

	tcb_init(&cb);
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	/* point the leaf at memory beyond the end of "RAM" */
	*tsim_pte(&s, 0, buf) = (s.size + 0x100000) | TNPU_PTE_VALID | TNPU_PTE_READ;
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_BUS);
	cr_assert_eq(res.err_addr, buf);
	tcb_free(&cb);
}

static uint64_t alloc_page(void *opaque)
{
	return tsim_alloc_pa(opaque, 4096);
}

Test(mmu, page_table_builder_maps_unmaps_and_sets_contexts)
{
	struct tnpu_pt_alloc al = { alloc_page, &s };
	uint64_t root = tsim_alloc_pa(&s, 4096), data = tsim_alloc_pa(&s, 3 * 4096), pa;
	uint64_t va = 0x7ff000000000ull;

	cr_assert_eq(tnpu_ctx_set(&s.ops, s.ctx_table, 1, root), 0);
	cr_assert_eq(tnpu_pt_map(&s.ops, &al, root, va, data, 3 * 4096, TNPU_PTE_READ), 0);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 1, va + 2 * 4096 + 5, false, &pa), 0);
	cr_assert_eq(pa, data + 2 * 4096 + 5);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 1, va, true, &pa), TNPU_ERR_MMU_PERMISSION);
	cr_assert_eq(tnpu_pt_unmap(&s.ops, root, va + 4096, 4096), 0);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 1, va + 4096, false, &pa), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(tnpu_pt_map(&s.ops, &al, root, va + 1, data, 4096, TNPU_PTE_READ), -EINVAL);
	cr_assert_eq(tnpu_pt_map(&s.ops, &al, root, 1ull << 48, data, 4096, TNPU_PTE_READ), -EINVAL);
	cr_assert_eq(tnpu_ctx_set(&s.ops, s.ctx_table, 1, 0), 0);
	cr_assert_eq(tnpu_mmu_translate(&s.ops, s.ctx_table, 2, 1, va, false, &pa), TNPU_ERR_CTX_INVALID);
}
