/* SPDX-License-Identifier: MIT */
/* The hazard checker (Documentation/hardware/hazards.md, issue #27): unordered overlapping accesses
 * of one job are reported with both command offsets; an ordering edge makes them clean. */
#include "common.h"

#define DMA_SZ ((uint32_t)sizeof(struct tnpu_cmd_dma))
#define SEM_SZ ((uint32_t)sizeof(struct tnpu_cmd_sem))

SMALL_SIM_SUITE(hazard, 8 << 20, 64 << 10)

static struct tnpu_hazard hz;

static uint32_t hazards(void)
{
	return tnpu_exec_hazard(s.ex, &hz);
}

/* LOAD writes row 0 [0, 256) while STORE reads it: both ASYNC, no semaphore. */
static void load_then_store(bool sem)
{
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host, 256, 0, 0, 0, 0, 256, 0, 256, 1, 1);
	if (sem) {
		tcb_sem(&cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 0, 1);
		tcb_sem(&cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 0, 1);
	}
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host + 4096, 256, 0, 0, 0, 0, 256, 0, 256, 1, 1);
}

Test(hazard, async_load_and_store_of_one_sram_range_without_semaphore_is_reported)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	load_then_store(false);
	cr_assert_eq(run(), 0, "report mode leaves the job result alone");
	cr_assert_eq(hazards(), 1);
	cr_assert_eq(hz.cmd_a, 0);
	cr_assert_eq(hz.cmd_b, DMA_SZ);
	cr_assert_eq(hz.kind_a, TNPU_TRACE_DMA_H2D);
	cr_assert_eq(hz.kind_b, TNPU_TRACE_DMA_D2H);
	cr_assert(hz.write_a && !hz.write_b);
	cr_assert_eq(hz.space, TNPU_HZ_SRAM);
	cr_assert_eq(hz.row, 0);
	cr_assert_eq(hz.lo, 0);
	cr_assert_eq(hz.hi, 256);
	cr_assert(hz.a_start < hz.b_end && hz.b_start < hz.a_end, "the intervals overlap");
}

Test(hazard, the_same_stream_with_a_semaphore_is_clean)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	for (unsigned i = 0; i < 256; i++)
		H(0)[i] = (uint8_t)(i * 7 + 1);
	load_then_store(true);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
	cr_assert_eq(memcmp(H(0), H(4096), 256), 0);
}

Test(hazard, fail_mode_fails_the_job_with_both_offsets)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	load_then_store(false);
	cr_assert_eq(run(), TNPU_ERR_HAZARD);
	cr_assert_eq(res.err_cmd_offset, DMA_SZ, "the later command");
	cr_assert_eq(res.err_info, 0, "the earlier command");
	cr_assert_eq(res.err_addr, 0, "the first overlapping byte");
	cr_assert_str_eq(tnpu_err_name(TNPU_ERR_HAZARD), "HAZARD");
}

/* STORE writes host [0, 256) from row 0 while LOAD reads the same host bytes into row 1. */
static void store_then_load(bool sem)
{
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host, 256, 0, 0, 0, 0, 256, 0, 256, 1, 1);
	if (sem) {
		tcb_sem(&cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 1, 1);
		tcb_sem(&cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 1, 1);
	}
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host, 256, 0, 1, 0, 0, 256, 0, 256, 1, 1);
}

Test(hazard, host_store_then_load_of_one_range_without_ordering_is_reported)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	store_then_load(false);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 1);
	cr_assert_eq(hz.space, TNPU_HZ_HOST);
	cr_assert_eq(hz.cmd_a, 0);
	cr_assert_eq(hz.cmd_b, DMA_SZ);
	cr_assert(hz.write_a && !hz.write_b);
	cr_assert_eq(hz.lo, host);
	cr_assert_eq(hz.hi, host + 256);
}

Test(hazard, host_store_then_load_ordered_by_a_semaphore_is_clean)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	store_then_load(true);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
}

Test(hazard, synchronous_commands_are_ordered)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	tcb_dma(&cb, false, 0, host, 256, 0, 0, 0, 0, 256, 0, 256, 1, 1);
	tcb_dma(&cb, true, 0, host, 256, 0, 1, 0, 0, 256, 0, 256, 1, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
}

Test(hazard, interleaved_column_tiles_of_one_host_matrix_do_not_meet)
{
	/* a 16-row matrix of pitch 64: STORE writes columns [0, 32), LOAD reads columns [32, 64) */
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host, 64, 0, 0, 0, 0, 32, 0, 32, 16, 1);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host + 32, 64, 0, 1, 0, 0, 32, 0, 32, 16, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
	/* one more column makes them meet in every row; the first shared byte is row 0's column 32 */
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host, 64, 0, 0, 0, 0, 33, 0, 33, 16, 1);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host + 32, 64, 0, 1, 0, 0, 32, 0, 32, 16, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 1);
	cr_assert_eq(hz.lo, host + 32);
	cr_assert_eq(hz.hi, host + 33);
}

Test(hazard, the_other_half_of_a_storage_unit_does_not_meet)
{
	/* ping-pong: LOAD fills half 1 while STORE drains half 0 of the same row */
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host, 256, 0, 0, 1, 0, 256, 0, 256, 1, 1);
	tcb_dma(&cb, false, TNPU_CMD_F_ASYNC, host + 4096, 256, 0, 0, 0, 0, 256, 0, 256, 1, 1);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
}

Test(hazard, off_records_nothing)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_OFF);
	load_then_store(false);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
	cr_assert_eq(tnpu_exec_hazard_mode(s.ex), TNPU_HAZARD_OFF);
}

/* An ASYNC EXE whose LD reads the bytes an ASYNC DMA is still loading (one LD of 16 rows x 64
 * bytes per PE at pitch 64 from offset 0 of row 0, half 0). */
static void load_then_exe(bool sem)
{
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0) };
	struct tnpu_operand ops[] = { { .pitch = 64, .rows = 16, .cols = 64, .dtype = TNPU_DTYPE_INT8 } };
	struct tnpu_cfg_hdr h = { .n_instr = 1, .n_operands = 1, .repeat = 1 };
	struct tpkt p;

	tpkt_config(&p, 0, &h, ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	tcb_dma(&cb, true, TNPU_CMD_F_ASYNC, host, 1024, 0, 0, 0, 0, 1024, 0, 1024, 1, 1);
	if (sem) {
		tcb_sem(&cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 2, 1);
		tcb_sem(&cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_COMPUTE, 2, 1);
	}
	tpkt_exe(&p, 0, 0, NULL, 0);
	tcb_dispatch(&cb, TNPU_CMD_F_ASYNC, 0, 0, 0, p.buf, p.len);
}

Test(hazard, async_exe_reading_what_an_async_dma_loads_is_reported)
{
	uint32_t exe_off;

	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_REPORT);
	load_then_exe(false);
	exe_off = (uint32_t)cb.len - 24;	/* DISPATCH: 16-byte header + the 1-byte EXE packet, padded */
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 1);
	cr_assert_eq(hz.kind_a, TNPU_TRACE_DMA_H2D);
	cr_assert_eq(hz.kind_b, TNPU_TRACE_EXE);
	cr_assert_eq(hz.cmd_b, exe_off);
	cr_assert(hz.write_a && !hz.write_b);
	cr_assert_eq(hz.space, TNPU_HZ_SRAM);
	cr_assert_eq(hz.lo, 0);
}

Test(hazard, async_exe_after_a_semaphore_on_the_load_is_clean)
{
	tnpu_exec_set_hazard(s.ex, TNPU_HAZARD_FAIL);
	load_then_exe(true);
	cr_assert_eq(run(), 0);
	cr_assert_eq(hazards(), 0);
}
