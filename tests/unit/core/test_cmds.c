/* SPDX-License-Identifier: MIT */
/* Command processor: NOP, DMA (2-D/3-D, broadcast, fill), FENCE, semaphores, decoding errors. */
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

TestSuite(cmds, .init = setup, .fini = teardown);

Test(cmds, nop_costs_decode_cycles_only)
{
	struct tcb cb;
	struct tnpu_result res;

	tcb_init(&cb);
	tcb_nop(&cb, 0);
	tcb_nop(&cb, 0);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_COMMANDS], 2);
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES], 2 * TNPU_CYC_CMD + TNPU_CYC_JOB);
	tcb_free(&cb);
}

Test(cmds, dma_3d_strided_round_trip)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t src = tsim_buf(&s, 8192), dst = tsim_buf(&s, 8192);
	uint8_t *ps = tsim_ptr(&s, src), *pd = tsim_ptr(&s, dst);

	for (int i = 0; i < 8192; i++)
		ps[i] = (uint8_t)(i * 7 + 3);
	tcb_init(&cb);
	/* 3 planes x 5 rows x 10 bytes: host pitches 100/1000, SRAM pitches 16/96 */
	tcb_dma(&cb, true, 0, src + 1, 100, 1000, 1, 1, 32, 16, 96, 10, 5, 3);
	tcb_dma(&cb, false, 0, dst + 2, 10, 50, 1, 1, 32, 16, 96, 10, 5, 3);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	for (int z = 0; z < 3; z++)
		for (int y = 0; y < 5; y++)
			for (int x = 0; x < 10; x++)
				cr_assert_eq(pd[2 + z * 50 + y * 10 + x], ps[1 + z * 1000 + y * 100 + x]);
	cr_assert_eq(pd[0], 0);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], 150);
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_D2H], 150);
	cr_assert_eq(res.counters[TNPU_CNT_LOAD_CYCLES], TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 15);
	tcb_free(&cb);
}

Test(cmds, broadcast_h2d_fills_every_row_and_fill_mode_reads_nothing)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t src = tsim_buf(&s, 4096), dst = tsim_buf(&s, 4096);
	uint8_t *pd = tsim_ptr(&s, dst);

	memset(tsim_ptr(&s, src), 0x5a, 64);
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, src, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, 64, 1, 1);
	tcb_dma_fill(&cb, 0, 0, 0, 16, 8, 0xee);
	tcb_dma(&cb, false, 0, dst, 0, 0, 1, 0, 0, 0, 0, 64, 1, 1);
	tcb_dma(&cb, false, 0, dst + 64, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(pd[i], 0x5a);
		cr_assert_eq(pd[64 + i], (i >= 16 && i < 24) ? 0xee : 0x5a);
	}
	cr_assert_eq(res.counters[TNPU_CNT_BYTES_H2D], 64, "broadcast is read once, fill reads nothing");
	tcb_free(&cb);
}

Test(cmds, storage_units_start_each_job_zeroed)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t dst = tsim_buf(&s, 4096);
	uint8_t *pd = tsim_ptr(&s, dst);

	tcb_init(&cb);
	tcb_dma_fill(&cb, 0, 0, 1, 0, 64, 0x77);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	tcb_free(&cb);
	memset(pd, 0xff, 64);
	tcb_init(&cb);
	tcb_dma(&cb, false, 0, dst, 0, 0, 0, 1, 0, 0, 0, 64, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	for (int i = 0; i < 64; i++)
		cr_assert_eq(pd[i], 0, "SRAM leaked from the previous job");
	tcb_free(&cb);
}

/* Random writes of one job — strided DMA rows with gaps, partial lines, broadcasts, non-zero and zero
 * fills over written lines — and then every byte of every storage unit (both halves) read back by the
 * next job: all zero (queues.md: each job starts from a clean device state; the model zeroes exactly
 * the lines a job wrote). */
Test(cmds, storage_units_start_each_job_zeroed_after_any_writes)
{
	const uint32_t half = small_cfg().sram / 2, rows = small_cfg().rows;
	uint64_t src = tsim_buf(&s, 64 * 1024), dst = tsim_buf(&s, (uint64_t)rows * 2 * half);
	uint8_t *pd = tsim_ptr(&s, dst);
	uint64_t seed = 0x5eedc1ea;

	memset(tsim_ptr(&s, src), 0xa5, 64 * 1024);
	for (unsigned round = 0; round < 16; round++) {
		struct tcb cb;
		struct tnpu_result res;

		tcb_init(&cb);
		for (unsigned w = 0; w < 12; w++) {
			uint8_t row = trng(&seed) % 3 ? (uint8_t)(trng(&seed) % rows) : TNPU_DMA_ROW_ALL;
			uint8_t h = (uint8_t)(trng(&seed) % 2);
			uint32_t width = 1 + (uint32_t)(trng(&seed) % (trng(&seed) % 2 ? 200 : 9000));
			uint32_t height = 1 + (uint32_t)(trng(&seed) % 6), depth = 1 + (uint32_t)(trng(&seed) % 3);
			uint32_t spy = width + (uint32_t)(trng(&seed) % 300), spz = height * spy + (uint32_t)(trng(&seed) % 100);
			uint32_t extent = (depth - 1) * spz + (height - 1) * spy + width, off;

			if (extent > half || (uint64_t)width * height * depth > 64 * 1024)
				continue;
			off = (uint32_t)(trng(&seed) % (half - extent + 1));
			if (trng(&seed) % 4 == 0 && height == 1 && depth == 1)
				tcb_dma_fill(&cb, 0, row, h, off, width, (uint8_t)(trng(&seed) % 2 ? 0 : 0x3c));
			else
				tcb_dma(&cb, true, 0, src, width, (uint64_t)width * height, row, h, off, spy, spz, width,
					height, depth);
		}
		tsim_run(&s, &cb, 0, &res);
		ASSERT_OK(res);
		tcb_free(&cb);
		memset(pd, 0xff, (size_t)rows * 2 * half);
		tcb_init(&cb);
		for (uint8_t r = 0; r < rows; r++)
			for (uint8_t h = 0; h < 2; h++)
				tcb_dma(&cb, false, 0, dst + ((uint64_t)r * 2 + h) * half, 0, 0, r, h, 0, 0, 0, half, 1, 1);
		tsim_run(&s, &cb, 0, &res);
		ASSERT_OK(res);
		tcb_free(&cb);
		for (size_t i = 0; i < (size_t)rows * 2 * half; i++)
			cr_assert_eq(pd[i], 0, "round %u: row %zu half %zu byte %zu leaked from the previous job", round,
				     i / (2 * half), i / half % 2, i % half);
	}
}

Test(cmds, dma_descriptor_and_sram_range_errors)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t buf = tsim_buf(&s, 4096);
	uint32_t half = s.cfg.sram / 2;

	tcb_init(&cb);
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, half - 8, 0, 0, 16, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SRAM_RANGE);
	cr_assert_eq(res.err_addr, half - 8);
	cb.len = 0;
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0, 16, 2, 1);	/* pitch overflows the half */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SRAM_RANGE);
	cb.len = 0;
	tcb_dma(&cb, true, 0, buf, 0, 0, 7, 0, 0, 0, 0, 16, 1, 1);	/* row 7 of 2 */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_DMA_DESC);
	cb.len = 0;
	tcb_dma(&cb, false, 0, buf, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, 16, 1, 1);	/* D2H broadcast */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_DMA_DESC);
	cb.len = 0;
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 2, 0, 0, 0, 16, 1, 1);	/* half 2 */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_DMA_DESC);
	cb.len = 0;
	tcb_dma(&cb, true, 0, buf, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1);	/* width 0 */
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_DMA_DESC);
	cb.len = 0;
	tcb_dma(&cb, true, 0, 0xFFFFFFFFFFFFFF00ull, 0x100, 0, 0, 0, 0, 16, 0, 16, 4, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_MMU_VA_RANGE);
	tcb_free(&cb);
}

Test(cmds, decoding_errors_report_offset_of_the_failing_command)
{
	struct tcb cb;
	struct tnpu_result res;
	struct tnpu_cmd_hdr h = { .opcode = 0x42, .size = 8 };

	tcb_init(&cb);
	tcb_nop(&cb, 0);
	tcb_raw(&cb, &h, 8);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_OPCODE);
	cr_assert_eq(res.err_cmd_offset, 8);
	cr_assert_eq(res.err_info, 0x42);

	cb.len = 0;
	h.opcode = TNPU_CMD_NOP;
	h.size = 16;	/* NOP is 8 bytes */
	tcb_raw(&cb, &h, 8);
	tcb_nop(&cb, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_SIZE);

	cb.len = 0;
	h.size = 24;	/* runs past the buffer */
	tcb_raw(&cb, &h, 8);
	tcb_nop(&cb, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_SIZE);

	cb.len = 0;
	h.size = 8;
	h.flags = 0x80;
	tcb_raw(&cb, &h, 8);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_RESERVED);

	cb.len = 0;
	h.flags = 0;
	h.reserved = 1;
	tcb_raw(&cb, &h, 8);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_RESERVED);

	cb.len = 0;
	h.reserved = 0;
	h.size = 0;
	tcb_raw(&cb, &h, 8);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_CMD_SIZE);
	tcb_free(&cb);
}

Test(cmds, fence_command_is_a_barrier_and_writes_through_the_mmu)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t f = tsim_buf(&s, 4096), src = tsim_buf(&s, 4096);

	tcb_init(&cb);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, src, 0, 0, 0, 0, 0, 0, 0, 4096, 1, 1);
	tcb_fence(&cb, f + 8, 0xabcdef);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(*(uint64_t *)tsim_ptr(&s, f + 8), 0xabcdef);
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES],
		     res.counters[TNPU_CNT_LOAD_CYCLES] + TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + TNPU_CYC_JOB);
	cb.len = 0;
	tcb_fence(&cb, f + 4, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_ALIGN);
	tcb_free(&cb);
}

Test(cmds, semaphore_wait_without_earlier_signal_is_a_deadlock_error)
{
	struct tcb cb;
	struct tnpu_result res;

	tcb_init(&cb);
	tcb_sem(&cb, true, 0, TNPU_ENGINE_LOAD, 3, 1);
	tcb_sem(&cb, false, 0, TNPU_ENGINE_COMPUTE, 3, 2);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SEM_DEADLOCK);
	cr_assert_eq(res.err_cmd_offset, 16);
	cb.len = 0;
	tcb_sem(&cb, true, 0, TNPU_ENGINE_LOAD, 16, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SEM);
	cb.len = 0;
	tcb_sem(&cb, true, 0, 3, 0, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SEM);
	cb.len = 0;
	for (int i = 0; i < 65; i++)
		tcb_sem(&cb, true, 0, TNPU_ENGINE_LOAD, 0, 1);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_SEM_OVERFLOW);
	tcb_free(&cb);
}

Test(cmds, semaphore_orders_async_engines)
{
	struct tcb cb;
	struct tnpu_result res;
	uint64_t src = tsim_buf(&s, 65536), dst = tsim_buf(&s, 65536);
	uint64_t load = TNPU_CYC_CMD + TNPU_CYC_DMA_SETUP + 32768 / TNPU_RATE_DMA;

	/* ASYNC load and store on different engines overlap; a semaphore serialises them. */
	tcb_init(&cb);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, src, 0, 0, 0, 0, 0, 0, 0, 32768, 1, 1);
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, dst, 0, 0, 0, 1, 0, 0, 0, 32768, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES], load + TNPU_CYC_JOB);
	cb.len = 0;
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, src, 0, 0, 0, 0, 0, 0, 0, 32768, 1, 1);
	tcb_sem(&cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 1, 1);
	tcb_sem(&cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 1, 1);
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, dst, 0, 0, 0, 1, 0, 0, 0, 32768, 1, 1);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(res.counters[TNPU_CNT_TOTAL_CYCLES], 2 * load + TNPU_CYC_CMD + TNPU_CYC_JOB);
	cr_assert_eq(res.counters[TNPU_CNT_STALL_CYCLES], load);
	tcb_free(&cb);
}
