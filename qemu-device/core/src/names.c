/* SPDX-License-Identifier: MIT */
#include "internal.h"
#include "tnpu_kernels.h"

void tnpu_thread_cleanup(void)
{
	tnpu_kern_release_scratch();
}

static const char *const err_names[TNPU_ERR_COUNT] = {
	"NONE", "CMD_OPCODE", "CMD_SIZE", "CMD_RESERVED", "CMDBUF", "RING_ENTRY", "RING_FETCH",
	"FENCE_WRITE", "CTX_RANGE", "CTX_INVALID", "MMU_NOT_PRESENT", "MMU_PERMISSION", "MMU_BAD_PTE",
	"MMU_VA_RANGE", "BUS", "DMA_DESC", "SRAM_RANGE", "CONV_DESC", "DISPATCH", "PACKET", "CONFIG",
	"INSTR", "IBUF_EMPTY", "OPERAND", "ACC_SHAPE", "SLOT_EMPTY", "SPARSE_INDEX", "SFU_PARAM", "DTYPE",
	"SEM", "SEM_DEADLOCK", "SEM_OVERFLOW", "TOO_LARGE", "ALIGN", "WATCHDOG", "ABORTED", "NOMEM",
	[TNPU_ERR_PLAN_DESC] = "PLAN_DESC", [TNPU_ERR_PLAN_UNKNOWN] = "PLAN_UNKNOWN",
	[TNPU_ERR_PLAN_BAD] = "PLAN_BAD", [TNPU_ERR_PLAN_TOO_LARGE] = "PLAN_TOO_LARGE",
};

static const char *const cnt_names[TNPU_CNT_NUM] = {
	"total_cycles", "compute_cycles", "dma_cycles", "stall_cycles", "macs_dense", "macs_effective",
	"bytes_h2d", "bytes_d2h", "bytes_dispatch", "bytes_config", "instructions", "bank_swaps",
	"mmu_faults", "commands", "oq_accesses", "sfu_ops", "load_cycles", "store_cycles",
	[TNPU_CNT_PLAN_HITS] = "plan_hits", [TNPU_CNT_PLAN_MISSES] = "plan_misses",
};

const char *tnpu_err_name(uint32_t err)
{
	return err < TNPU_ERR_COUNT && err_names[err] ? err_names[err] : "UNKNOWN";
}

const char *tnpu_counter_name(unsigned idx)
{
	return idx < TNPU_CNT_NUM && cnt_names[idx] ? cnt_names[idx] : "unknown";
}

static const char *const trace_names[] = {
	[TNPU_TRACE_DMA_H2D] = "DMA_H2D", [TNPU_TRACE_IM2COL] = "IM2COL", [TNPU_TRACE_DMA_D2H] = "DMA_D2H",
	[TNPU_TRACE_DISPATCH] = "DISPATCH", [TNPU_TRACE_CONFIG] = "CONFIG", [TNPU_TRACE_EXE] = "EXE",
	[TNPU_TRACE_SEM_WAIT] = "SEM_WAIT", [TNPU_TRACE_FENCE] = "FENCE",
};

const char *tnpu_trace_kind_name(unsigned kind)
{
	return kind < sizeof(trace_names) / sizeof(trace_names[0]) && trace_names[kind] ? trace_names[kind] : "?";
}
