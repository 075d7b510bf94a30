/* SPDX-License-Identifier: MIT */
/*
 * The register block's state (core.c), shared with its snapshot (snapshot.c).
 * Private to the model.
 */
#ifndef TNPU_CORE_REGS_H
#define TNPU_CORE_REGS_H

#include <stdbool.h>
#include <stdint.h>

#include "tnpu/tnpu_core.h"

struct queue_regs {
	uint64_t ring_base;
	uint32_t ring_size;
	uint32_t head, tail;
	uint64_t fence;
	bool enabled, busy, error;
	uint32_t session;	/* bumped by every Q_CTRL.ENABLE 0->1: a new ring session */
	uint64_t done_seqno;
	uint32_t err_code, err_info, err_cmd_offset, err_ctx;
	uint64_t err_addr, err_seqno;
	uint32_t jobs_done;
	uint64_t perf[TNPU_CNT_NUM];
	uint64_t save_base;	/* Q_SAVE_BASE: 512-byte save record per ring entry (preemption) */
	bool preempt_req;	/* Q_STATUS.PREEMPT_REQ: Q_CTRL.PREEMPT while BUSY, cleared at completion */
};

struct tnpu_core {
	struct tnpu_config cfg;
	uint32_t generation;
	uint32_t ctrl, scratch;
	uint32_t irq_status, irq_mask;
	uint32_t err_code, err_queue, err_info, err_cmd_offset;
	uint64_t err_addr, err_seqno;
	uint64_t mmu_ctx_base;
	uint32_t mmu_ctx_count, mmu_faults;
	uint32_t pending;	/* STATUS.RESET_PENDING / MMU_INV_PENDING, from the glue */
	uint64_t perf[TNPU_CNT_NUM];
	uint64_t row_busy[TNPU_MAX_ROWS];	/* ROW_BUSY(r): last completed job */
	struct queue_regs q[TNPU_MAX_QUEUES];
};

static inline bool tnpu_valid_ring_size(uint32_t n)
{
	return n >= TNPU_RING_MIN && n <= TNPU_RING_MAX && !(n & (n - 1));
}

#endif
