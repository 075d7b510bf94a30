/* SPDX-License-Identifier: MIT */
#include "internal.h"
#include "tnpu_kernels.h"

void tnpu_thread_cleanup(void)
{
	tnpu_kern_release_scratch();
}

/* Designated initializers: the code space has gaps (numbers allocated per feature). */
static const char *const err_names[TNPU_ERR_COUNT] = {
	[TNPU_ERR_NONE] = "NONE", [TNPU_ERR_CMD_OPCODE] = "CMD_OPCODE", [TNPU_ERR_CMD_SIZE] = "CMD_SIZE",
	[TNPU_ERR_CMD_RESERVED] = "CMD_RESERVED", [TNPU_ERR_CMDBUF] = "CMDBUF",
	[TNPU_ERR_RING_ENTRY] = "RING_ENTRY", [TNPU_ERR_RING_FETCH] = "RING_FETCH",
	[TNPU_ERR_FENCE_WRITE] = "FENCE_WRITE", [TNPU_ERR_CTX_RANGE] = "CTX_RANGE",
	[TNPU_ERR_CTX_INVALID] = "CTX_INVALID", [TNPU_ERR_MMU_NOT_PRESENT] = "MMU_NOT_PRESENT",
	[TNPU_ERR_MMU_PERMISSION] = "MMU_PERMISSION", [TNPU_ERR_MMU_BAD_PTE] = "MMU_BAD_PTE",
	[TNPU_ERR_MMU_VA_RANGE] = "MMU_VA_RANGE", [TNPU_ERR_BUS] = "BUS", [TNPU_ERR_DMA_DESC] = "DMA_DESC",
	[TNPU_ERR_SRAM_RANGE] = "SRAM_RANGE", [TNPU_ERR_CONV_DESC] = "CONV_DESC", [TNPU_ERR_DISPATCH] = "DISPATCH",
	[TNPU_ERR_PACKET] = "PACKET", [TNPU_ERR_CONFIG] = "CONFIG", [TNPU_ERR_INSTR] = "INSTR",
	[TNPU_ERR_IBUF_EMPTY] = "IBUF_EMPTY", [TNPU_ERR_OPERAND] = "OPERAND", [TNPU_ERR_ACC_SHAPE] = "ACC_SHAPE",
	[TNPU_ERR_SLOT_EMPTY] = "SLOT_EMPTY", [TNPU_ERR_SPARSE_INDEX] = "SPARSE_INDEX",
	[TNPU_ERR_SFU_PARAM] = "SFU_PARAM", [TNPU_ERR_DTYPE] = "DTYPE", [TNPU_ERR_SEM] = "SEM",
	[TNPU_ERR_SEM_DEADLOCK] = "SEM_DEADLOCK", [TNPU_ERR_SEM_OVERFLOW] = "SEM_OVERFLOW",
	[TNPU_ERR_TOO_LARGE] = "TOO_LARGE", [TNPU_ERR_ALIGN] = "ALIGN", [TNPU_ERR_WATCHDOG] = "WATCHDOG",
	[TNPU_ERR_ABORTED] = "ABORTED", [TNPU_ERR_NOMEM] = "NOMEM",
	/* chain (#9) */
	[TNPU_ERR_RING_DESC] = "RING_DESC", [TNPU_ERR_RING_DEADLOCK] = "RING_DEADLOCK",
	[TNPU_ERR_RING_ACCESS] = "RING_ACCESS", [TNPU_ERR_ISLAND_ACCESS] = "ISLAND_ACCESS",
	[TNPU_ERR_ISLAND_CAP] = "ISLAND_CAP",
	[TNPU_ERR_PLAN_DESC] = "PLAN_DESC", [TNPU_ERR_PLAN_UNKNOWN] = "PLAN_UNKNOWN",
	[TNPU_ERR_PLAN_BAD] = "PLAN_BAD", [TNPU_ERR_PLAN_TOO_LARGE] = "PLAN_TOO_LARGE",
	[TNPU_ERR_DW_PARAM] = "DW_PARAM", [TNPU_ERR_DW_SHAPE] = "DW_SHAPE",
	[TNPU_ERR_VEC_DESC] = "VEC_DESC", [TNPU_ERR_VEC_SHAPE] = "VEC_SHAPE",
	[TNPU_ERR_COUNTERS_WRITE] = "COUNTERS_WRITE",
	[TNPU_ERR_HAZARD] = "HAZARD",
	[TNPU_ERR_DEQ_DESC] = "DEQ_DESC",
	[TNPU_ERR_RESUME] = "RESUME",
	[TNPU_ERR_SAVE_WRITE] = "SAVE_WRITE",
};

static const char *const cnt_names[TNPU_CNT_NUM] = {
	"total_cycles", "compute_cycles", "dma_cycles", "stall_cycles", "macs_dense", "macs_effective",
	"bytes_h2d", "bytes_d2h", "bytes_dispatch", "bytes_config", "instructions", "bank_swaps",
	"mmu_faults", "commands", "oq_accesses", "sfu_ops", "load_cycles", "store_cycles",
	/* chain (#9) */
	[TNPU_CNT_RING_ROWS] = "ring_rows", [TNPU_CNT_RING_WAIT_CYCLES] = "ring_wait_cycles",
	[TNPU_CNT_RING_FULL_CYCLES] = "ring_full_cycles", [TNPU_CNT_RING_BYTES] = "ring_bytes",
	[TNPU_CNT_ROW_BUSY_MAX] = "row_busy_max", [TNPU_CNT_ROW_BUSY_SUM] = "row_busy_sum",
	[TNPU_CNT_BUSY_ROWS] = "busy_rows", [TNPU_CNT_LB_MACS_MOVED] = "lb_macs_moved",
	[TNPU_CNT_PLAN_HITS] = "plan_hits", [TNPU_CNT_PLAN_MISSES] = "plan_misses",
	[TNPU_CNT_VEC_OPS] = "vec_ops", [TNPU_CNT_VEC_CYCLES] = "vec_cycles",
};

const char *tnpu_err_name(uint32_t err)
{
	/* The names tables have gaps (number ranges allocated per feature). */
	return err < TNPU_ERR_COUNT && err_names[err] ? err_names[err] : "UNKNOWN";
}

const char *tnpu_counter_name(unsigned idx)
{
	return idx < TNPU_CNT_NUM && cnt_names[idx] ? cnt_names[idx] : "unknown";
}

static const char *const trace_names[] = {
	[TNPU_TRACE_DMA_H2D] = "DMA_H2D", [TNPU_TRACE_IM2COL] = "IM2COL", [TNPU_TRACE_DMA_D2H] = "DMA_D2H",
	[TNPU_TRACE_DISPATCH] = "DISPATCH", [TNPU_TRACE_CONFIG] = "CONFIG", [TNPU_TRACE_EXE] = "EXE",
	[TNPU_TRACE_SEM_WAIT] = "SEM_WAIT", [TNPU_TRACE_FENCE] = "FENCE", [TNPU_TRACE_RING_WAIT] = "RING_WAIT",
};

const char *tnpu_trace_kind_name(unsigned kind)
{
	return kind < sizeof(trace_names) / sizeof(trace_names[0]) && trace_names[kind] ? trace_names[kind] : "?";
}
