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

/*
 * DMA rows back to back on the host but apart on chip (host pitch == width, SRAM pitch 64) move as one
 * access per page (mmu.c, tnpu_va_write_rows): the bytes are those of the row-by-row definition, across
 * unaligned page boundaries and through the broadcast to every row, and a fault is reported for the
 * same row and address, after the same bytes moved.
 */
Test(mmu, packed_host_rows_round_trip_and_fault_like_row_by_row)
{
	struct tcb cb;
	struct tnpu_result res;
	const uint32_t W = 48, SP = 64, N = 200;	/* 9600 bytes: three pages, rows crossing two boundaries */
	uint64_t src = tsim_buf(&s, 3 * 4096), dst = tsim_buf(&s, 3 * 4096), edge = tsim_buf(&s, 4096);
	uint8_t *hs = tsim_ptr(&s, src), *hd = tsim_ptr(&s, dst), *he = tsim_ptr(&s, edge);
	uint64_t seed = 77;

	for (uint32_t i = 0; i < 3 * 4096; i++)
		hs[i] = (uint8_t)trng(&seed);
	memset(hd, 0xEE, 3 * 4096);
	tcb_init(&cb);
	/* host rows from src + 100 into SRAM rows 64 apart on every row, back from row 1 to dst + 100 */
	tcb_dma(&cb, true, 0, src + 100, W, 0, TNPU_DMA_ROW_ALL, 0, 0, SP, 0, W, N, 1);
	tcb_dma(&cb, false, 0, dst + 100, W, 0, 1, 0, 0, SP, 0, W, N, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, 0, "%s", tnpu_err_name(res.error));
	cr_assert(!memcmp(hd + 100, hs + 100, (size_t)W * N));
	cr_assert_eq(hd[99], 0xEE);
	cr_assert_eq(hd[100 + W * N], 0xEE);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], (uint64_t)W * N);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_D2H], (uint64_t)W * N);

	/* D2H ending in the unmapped page after `edge`: rows at -100 and -52 fit the page, the row at -4
	 * crosses into the guard page: its first 4 bytes land, the fault names the page boundary */
	cb.len = 0;
	memset(he, 0xEE, 4096);
	tcb_dma(&cb, true, 0, src, W, 0, 0, 0, 0, SP, 0, W, 4, 1);
	tcb_dma(&cb, false, 0, edge + 4096 - 100, W, 0, 0, 0, 0, SP, 0, W, 4, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(res.err_addr, edge + 4096);
	cr_assert_eq(res.err_info & TNPU_ERRINFO_WRITE, TNPU_ERRINFO_WRITE);
	cr_assert_eq(TNPU_ERRINFO_ENGINE(res.err_info), 1 + TNPU_ENGINE_STORE);
	cr_assert(!memcmp(he + 4096 - 100, hs, 2 * W + 4), "rows 0 and 1 and 4 bytes of row 2");
	cr_assert_eq(he[4096 - 101], 0xEE);

	/* H2D from the same place: the same row and address, a read */
	cb.len = 0;
	tcb_dma(&cb, true, 0, edge + 4096 - 100, W, 0, 0, 0, 0, SP, 0, W, 4, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(res.err_addr, edge + 4096);
	cr_assert_eq(res.err_info & TNPU_ERRINFO_WRITE, 0);
	cr_assert_eq(TNPU_ERRINFO_ENGINE(res.err_info), 1 + TNPU_ENGINE_LOAD);

	/* the last page of the VA space: the row that would leave it is the one refused (VA_RANGE, its
	 * own address), the two before it land */
	{
		uint64_t top = (1ull << TNPU_VA_BITS) - 4096, pa = tsim_alloc_pa(&s, 4096);
		uint8_t *ht = s.mem + pa;

		tsim_map(&s, 0, top, pa, 4096, TNPU_PTE_READ | TNPU_PTE_WRITE);
		memset(ht, 0xEE, 4096);
		cb.len = 0;
		tcb_dma(&cb, true, 0, src, W, 0, 0, 0, 0, SP, 0, W, 4, 1);
		tcb_dma(&cb, false, 0, top + 4096 - 100, W, 0, 0, 0, 0, SP, 0, W, 4, 1);
		tsim_run(&s, &cb, 0, &res);
		cr_assert_eq(res.error, TNPU_ERR_MMU_VA_RANGE);
		cr_assert_eq(res.err_addr, top + 4096 - 100 + 2 * W);
		cr_assert(!memcmp(ht + 4096 - 100, hs, 2 * W), "rows 0 and 1");
		cr_assert_eq(ht[4096 - 100 + 2 * W], 0xEE);
	}
	tcb_free(&cb);
}
