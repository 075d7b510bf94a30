/* SPDX-License-Identifier: MIT */
/*
 * BAR0 register block, ring fetch and job completion
 * (Documentation/hardware/registers.md, queues.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_regs.h"
#include "internal.h"

/* ---- configuration --------------------------------------------------------- */

void tnpu_config_default(struct tnpu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rows = TNPU_DEF_ROWS;
	cfg->cols = TNPU_DEF_COLS;
	cfg->pes = TNPU_DEF_PES;
	cfg->sram = TNPU_DEF_SRAM;
	cfg->queues = TNPU_DEF_QUEUES;
	cfg->clock_mhz = TNPU_DEF_CLOCK_MHZ;
	cfg->watchdog_cycles = TNPU_DEF_WATCHDOG;
}

uint64_t tnpu_config_onchip_bytes(const struct tnpu_config *cfg)
{
	/* per row: its storage unit, TNPU_NUM_ACCS accumulators and the output queue */
	uint64_t acc = (uint64_t)cfg->cols * cfg->pes * TNPU_ACC_ELEMS * 4 * (TNPU_NUM_ACCS + 1);

	return (uint64_t)cfg->rows * (cfg->sram + acc) + TNPU_RING_MEM_BYTES;
}

int tnpu_config_validate(const struct tnpu_config *cfg, char *msg, size_t msglen)
{
	const char *what = NULL;

	if (!cfg)
		what = "no configuration";
	else if (cfg->rows < 1 || cfg->rows > TNPU_MAX_ROWS)
		what = "rows must be 1..16";
	else if (cfg->cols < 1 || cfg->cols > TNPU_MAX_COLS)
		what = "cols must be 1..16";
	else if (cfg->pes < 1 || cfg->pes > TNPU_MAX_PES)
		what = "pes must be 1..64";
	else if (cfg->sram < TNPU_MIN_SRAM || cfg->sram > TNPU_MAX_SRAM || (cfg->sram & (cfg->sram - 1)))
		what = "sram must be a power of two between 65536 and 67108864 bytes";
	else if (cfg->queues < 1 || cfg->queues > TNPU_MAX_QUEUES)
		what = "queues must be 1..16";
	else if (cfg->clock_mhz < 1 || cfg->clock_mhz > TNPU_MAX_CLOCK_MHZ)
		what = "clock_mhz must be 1..10000";
	else if (tnpu_config_onchip_bytes(cfg) * cfg->queues > TNPU_MAX_ONCHIP_TOTAL)
		what = "rows x (sram + accumulators) x queues exceeds 4 GiB of host memory";
	else
		what = tnpu_islands_check(cfg);
	if (what) {
		if (msg && msglen)
			snprintf(msg, msglen, "tnpu: invalid configuration: %s", what);
		return -EINVAL;
	}
	return 0;
}

/* ---- lifetime ------------------------------------------------------------------ */

int tnpu_core_new(const struct tnpu_config *cfg, struct tnpu_core **out, char *msg, size_t msglen)
{
	struct tnpu_core *core;

	*out = NULL;
	if (tnpu_config_validate(cfg, msg, msglen))
		return -EINVAL;
	core = calloc(1, sizeof(*core));
	if (!core)
		return -ENOMEM;
	core->cfg = *cfg;
	if (!core->cfg.watchdog_cycles)
		core->cfg.watchdog_cycles = TNPU_DEF_WATCHDOG;
	tnpu_core_reset(core);
	*out = core;
	return 0;
}

void tnpu_core_set_pending(struct tnpu_core *core, uint32_t bits)
{
	core->pending = bits & (TNPU_STATUS_RESET_PENDING | TNPU_STATUS_MMU_INV_PENDING);
}

void tnpu_core_free(struct tnpu_core *core)
{
	free(core);
}

const struct tnpu_config *tnpu_core_config(const struct tnpu_core *core)
{
	return &core->cfg;
}

void tnpu_core_reset(struct tnpu_core *core)
{
	struct tnpu_config cfg = core->cfg;
	uint32_t gen = core->generation + 1, pending = core->pending;

	memset(core, 0, sizeof(*core));
	core->cfg = cfg;
	core->generation = gen;
	core->pending = pending;
	core->irq_mask = 0xFFFFFFFFu;
}

/* ---- interrupts ------------------------------------------------------------------ */

static uint32_t vectors_for(uint32_t causes)
{
	uint32_t v = 0;

	if (causes & (TNPU_IRQ_ERROR | TNPU_IRQ_MMU_FAULT))
		v |= 1u << TNPU_MSIX_VEC_ERROR;
	for (unsigned q = 0; q < TNPU_MAX_QUEUES; q++)
		if (causes & TNPU_IRQ_QUEUE(q))
			v |= 1u << TNPU_MSIX_VEC_QUEUE(q);
	return v;
}

static void raise_irq(struct tnpu_core *core, uint32_t causes, struct tnpu_effects *fx)
{
	core->irq_status |= causes;
	if (fx)
		fx->msix_vectors |= vectors_for(causes & ~core->irq_mask);
}

static bool queue_ready(const struct tnpu_core *core, unsigned q)
{
	const struct queue_regs *qr = &core->q[q];

	return (core->ctrl & TNPU_CTRL_ENABLE) && qr->enabled && !qr->error && !qr->busy && qr->head != qr->tail;
}

/* ---- register reads ----------------------------------------------------------------- */

static uint32_t cap_value(const struct tnpu_core *core, uint64_t off, bool *found)
{
	const struct tnpu_config *c = &core->cfg;

	*found = true;
	if (off >= TNPU_REG_ISLANDS && off < TNPU_REG_ISLANDS + 0x100)
		return tnpu_island_reg(c, off, found);
	switch (off) {
	case TNPU_REG_ID:
		return TNPU_ID_VALUE;
	case TNPU_REG_VERSION:
		return TNPU_VERSION_VALUE;
	case TNPU_REG_CAP_GEOM:
		return c->rows | (c->cols << 8) | (c->pes << 16) | ((uint32_t)TNPU_NUM_ACCS << 24);
	case TNPU_REG_CAP_SRAM:
		return c->sram;
	case TNPU_REG_CAP_CLUSTER:
		return TNPU_NUM_IBUFS | (TNPU_IBUF_DEPTH << 8) | (TNPU_RF_ENTRIES << 16) |
		       ((uint32_t)TNPU_NUM_SLOTS << 24);
	case TNPU_REG_CAP_ACC:
		return TNPU_ACC_ELEMS;
	case TNPU_REG_CAP_DTYPES:
		return TNPU_CAP_DTYPE_INT8 | TNPU_CAP_DTYPE_FP32 | TNPU_CAP_DTYPE_BF16;
	case TNPU_REG_CAP_QUEUES:
		return c->queues | (12u << 8) | ((c->queues + 1) << 16) | ((uint32_t)TNPU_NUM_SEMS << 24);
	case TNPU_REG_CAP_MMU:
		return TNPU_VA_BITS | (TNPU_PA_BITS << 8) | (TNPU_PT_LEVELS << 16) | ((uint32_t)TNPU_PAGE_SHIFT << 24);
	case TNPU_REG_CAP_MMU_CTX:
		return TNPU_MAX_CTX;
	case TNPU_REG_CAP_CLOCK:
		return c->clock_mhz;
	case TNPU_REG_CAP_RATES:
		return TNPU_RATE_MAC_INT8 | (TNPU_RATE_MAC_FP32 << 8) | (TNPU_RATE_DMA << 16) |
		       ((uint32_t)TNPU_RATE_DISPATCH << 24);
	case TNPU_REG_CAP_FEATURES:
		return TNPU_FEATURES;
	case TNPU_REG_CAP_CMDBUF:
		return TNPU_CMDBUF_MAX;
	case TNPU_REG_CAP_PORTS:
		return TNPU_RATE_DMA_PORT | (c->rows << 16);
	case TNPU_REG_PLAN_CACHE_BYTES:
		return TNPU_PLAN_CACHE_BYTES;
	case TNPU_REG_PLAN_CACHE_ENTRIES:
		return TNPU_PLAN_CACHE_ENTRIES;
	}
	*found = false;
	return 0;
}

/* 64-bit value of a LO/HI pair or counter whose LO offset is `off`, if any. */
static bool reg64(struct tnpu_core *core, uint64_t off, uint64_t *v)
{
	/* A counter is one 64-bit register at an 8-aligned offset; its +4 half is read via LO/HI in read32(). */
	if (off >= TNPU_REG_PERF_BASE && off < TNPU_REG_PERF_BASE + 8 * TNPU_CNT_SLOTS) {
		unsigned i = (unsigned)(off - TNPU_REG_PERF_BASE) / 8;

		if ((off - TNPU_REG_PERF_BASE) & 7)
			return false;

		*v = i < TNPU_CNT_NUM ? core->perf[i] : 0;
		return true;
	}
	if (off >= TNPU_REG_ROW_BUSY_BASE && off < TNPU_REG_ROW_BUSY(TNPU_MAX_ROWS)) {
		unsigned r = (unsigned)(off - TNPU_REG_ROW_BUSY_BASE) / 8;

		if (off & 7)
			return false;
		*v = r < core->cfg.rows ? core->row_busy[r] : 0;
		return true;
	}
	if (off >= TNPU_REG_QUEUE_BASE && off < TNPU_REG_QUEUE_BASE + TNPU_MAX_QUEUES * TNPU_REG_QUEUE_STRIDE) {
		unsigned q = (unsigned)(off - TNPU_REG_QUEUE_BASE) / TNPU_REG_QUEUE_STRIDE;
		unsigned r = (unsigned)(off - TNPU_REG_QUEUE_BASE) % TNPU_REG_QUEUE_STRIDE;
		struct queue_regs *qr = &core->q[q];
		bool present = q < core->cfg.queues;

		if (r >= TNPU_Q_PERF_BASE && r < TNPU_Q_PERF_BASE + 8 * TNPU_CNT_SLOTS) {
			unsigned i = (r - TNPU_Q_PERF_BASE) / 8;

			if ((r - TNPU_Q_PERF_BASE) & 7)
				return false;
			*v = present && i < TNPU_CNT_NUM ? qr->perf[i] : 0;
			return true;
		}
		switch (r) {
		case TNPU_Q_RING_BASE_LO:
			*v = present ? qr->ring_base : 0;
			return true;
		case TNPU_Q_FENCE_LO:
			*v = present ? qr->fence : 0;
			return true;
		case TNPU_Q_DONE_SEQNO_LO:
			*v = present ? qr->done_seqno : 0;
			return true;
		case TNPU_Q_ERR_ADDR_LO:
			*v = present ? qr->err_addr : 0;
			return true;
		case TNPU_Q_ERR_SEQNO_LO:
			*v = present ? qr->err_seqno : 0;
			return true;
		case TNPU_Q_SAVE_BASE_LO:
			*v = present ? qr->save_base : 0;
			return true;
		}
		return false;
	}
	switch (off) {
	case TNPU_REG_ERR_ADDR_LO:
		*v = core->err_addr;
		return true;
	case TNPU_REG_ERR_SEQNO_LO:
		*v = core->err_seqno;
		return true;
	case TNPU_REG_MMU_CTX_BASE_LO:
		*v = core->mmu_ctx_base;
		return true;
	}
	return false;
}

static enum tnpu_reg_status read32(struct tnpu_core *core, uint64_t off, uint32_t *v)
{
	uint64_t v64;
	bool found;

	*v = cap_value(core, off, &found);
	if (found)
		return TNPU_REG_OK;
	if (reg64(core, off, &v64)) {
		*v = (uint32_t)v64;
		return TNPU_REG_OK;
	}
	if ((off & 4) && reg64(core, off - 4, &v64)) {
		*v = (uint32_t)(v64 >> 32);
		return TNPU_REG_OK;
	}
	if (off >= TNPU_REG_QUEUE_BASE && off < TNPU_REG_QUEUE_BASE + TNPU_MAX_QUEUES * TNPU_REG_QUEUE_STRIDE) {
		unsigned q = (unsigned)(off - TNPU_REG_QUEUE_BASE) / TNPU_REG_QUEUE_STRIDE;
		unsigned r = (unsigned)(off - TNPU_REG_QUEUE_BASE) % TNPU_REG_QUEUE_STRIDE;
		const struct queue_regs *qr = &core->q[q];

		if (q >= core->cfg.queues)
			return TNPU_REG_UNMAPPED;
		switch (r) {
		case TNPU_Q_RING_SIZE:
			*v = qr->ring_size;
			return TNPU_REG_OK;
		case TNPU_Q_HEAD:
			*v = qr->head;
			return TNPU_REG_OK;
		case TNPU_Q_TAIL:
			*v = qr->tail;
			return TNPU_REG_OK;
		case TNPU_Q_DOORBELL:
			return TNPU_REG_OK;
		case TNPU_Q_CTRL:
			*v = qr->enabled ? TNPU_Q_CTRL_ENABLE : 0;
			return TNPU_REG_OK;
		case TNPU_Q_STATUS:
			*v = (qr->enabled ? TNPU_Q_STATUS_ENABLED : 0) | (qr->busy ? TNPU_Q_STATUS_BUSY : 0) |
			     (qr->error ? TNPU_Q_STATUS_ERROR : 0) | (qr->preempt_req ? TNPU_Q_STATUS_PREEMPT_REQ : 0);
			return TNPU_REG_OK;
		case TNPU_Q_ERR_CODE:
			*v = qr->err_code;
			return TNPU_REG_OK;
		case TNPU_Q_ERR_INFO:
			*v = qr->err_info;
			return TNPU_REG_OK;
		case TNPU_Q_ERR_CMD_OFFSET:
			*v = qr->err_cmd_offset;
			return TNPU_REG_OK;
		case TNPU_Q_ERR_CTX:
			*v = qr->err_ctx;
			return TNPU_REG_OK;
		case TNPU_Q_JOBS_DONE:
			*v = qr->jobs_done;
			return TNPU_REG_OK;
		}
		return TNPU_REG_UNMAPPED;
	}
	switch (off) {
	case TNPU_REG_CTRL:
		*v = core->ctrl;
		return TNPU_REG_OK;
	case TNPU_REG_STATUS: {
		uint32_t s = ((core->ctrl & TNPU_CTRL_ENABLE) ? TNPU_STATUS_ENABLED : 0) | core->pending;

		for (unsigned q = 0; q < core->cfg.queues; q++) {
			if (core->q[q].busy)
				s |= TNPU_STATUS_BUSY;
			if (core->q[q].error)
				s |= TNPU_STATUS_ERROR;
		}
		*v = s;
		return TNPU_REG_OK;
	}
	case TNPU_REG_SCRATCH:
		*v = core->scratch;
		return TNPU_REG_OK;
	case TNPU_REG_IRQ_STATUS:
		*v = core->irq_status;
		return TNPU_REG_OK;
	case TNPU_REG_IRQ_MASK:
		*v = core->irq_mask;
		return TNPU_REG_OK;
	case TNPU_REG_IRQ_ACK:
	case TNPU_REG_MMU_INVALIDATE:
	case TNPU_REG_PERF_CTRL:
		return TNPU_REG_OK;	/* write-only: read 0 */
	case TNPU_REG_ERR_CODE:
		*v = core->err_code;
		return TNPU_REG_OK;
	case TNPU_REG_ERR_QUEUE:
		*v = core->err_queue;
		return TNPU_REG_OK;
	case TNPU_REG_ERR_INFO:
		*v = core->err_info;
		return TNPU_REG_OK;
	case TNPU_REG_ERR_CMD_OFFSET:
		*v = core->err_cmd_offset;
		return TNPU_REG_OK;
	case TNPU_REG_MMU_CTX_COUNT:
		*v = core->mmu_ctx_count;
		return TNPU_REG_OK;
	case TNPU_REG_MMU_FAULTS:
		*v = core->mmu_faults;
		return TNPU_REG_OK;
	}
	return TNPU_REG_UNMAPPED;
}

enum tnpu_reg_status tnpu_core_reg_read(struct tnpu_core *core, uint64_t offset, unsigned size, uint64_t *val)
{
	uint32_t v = 0;
	enum tnpu_reg_status st;

	*val = 0;
	if ((size != 4 && size != 8) || (offset & (size - 1)) || offset >= TNPU_BAR0_SIZE)
		return offset >= TNPU_BAR0_SIZE ? TNPU_REG_UNMAPPED : TNPU_REG_BAD_ACCESS;
	if (size == 8) {
		uint64_t v64;

		if (!reg64(core, offset, &v64))
			return TNPU_REG_BAD_ACCESS;
		*val = v64;
		return TNPU_REG_OK;
	}
	st = read32(core, offset, &v);
	*val = v;
	return st;
}

/* ---- register writes --------------------------------------------------------------- */

static void kick(struct tnpu_core *core, unsigned q, struct tnpu_effects *fx)
{
	if (queue_ready(core, q))
		fx->kick_queues |= 1u << q;
}

static void kick_all(struct tnpu_core *core, struct tnpu_effects *fx)
{
	for (unsigned q = 0; q < core->cfg.queues; q++)
		kick(core, q, fx);
}

static enum tnpu_reg_status write_queue(struct tnpu_core *core, unsigned q, unsigned r, uint64_t v,
					unsigned size, struct tnpu_effects *fx)
{
	struct queue_regs *qr = &core->q[q];
	uint32_t v32 = (uint32_t)v;

	if (size == 8 && r != TNPU_Q_RING_BASE_LO && r != TNPU_Q_FENCE_LO && r != TNPU_Q_SAVE_BASE_LO)
		return (r >= TNPU_Q_PERF_BASE || r == TNPU_Q_DONE_SEQNO_LO || r == TNPU_Q_ERR_ADDR_LO ||
			r == TNPU_Q_ERR_SEQNO_LO) ? TNPU_REG_READ_ONLY : TNPU_REG_BAD_ACCESS;
	switch (r) {
	case TNPU_Q_RING_BASE_LO:
	case TNPU_Q_RING_BASE_HI:
	case TNPU_Q_RING_SIZE:
		if (qr->enabled)
			return TNPU_REG_IGNORED;
		if (r == TNPU_Q_RING_SIZE)
			qr->ring_size = v32;
		else if (size == 8)
			qr->ring_base = v & ~0x3Full;
		else if (r == TNPU_Q_RING_BASE_LO)
			qr->ring_base = ((qr->ring_base & ~0xFFFFFFFFull) | v32) & ~0x3Full;
		else
			qr->ring_base = (qr->ring_base & 0xFFFFFFFFull) | ((uint64_t)v32 << 32);
		return TNPU_REG_OK;
	case TNPU_Q_TAIL:
		qr->tail = qr->ring_size ? (v32 & (qr->ring_size - 1)) : 0;
		return TNPU_REG_OK;
	case TNPU_Q_DOORBELL:
		kick(core, q, fx);
		return TNPU_REG_OK;
	case TNPU_Q_FENCE_LO:
		if (size == 8)
			qr->fence = v & ~7ull;
		else
			qr->fence = ((qr->fence & ~0xFFFFFFFFull) | v32) & ~7ull;
		return TNPU_REG_OK;
	case TNPU_Q_FENCE_HI:
		qr->fence = (qr->fence & 0xFFFFFFFFull) | ((uint64_t)v32 << 32);
		return TNPU_REG_OK;
	case TNPU_Q_SAVE_BASE_LO:
		if (size == 8)
			qr->save_base = v & ~(uint64_t)(TNPU_SAVE_BYTES - 1);
		else
			qr->save_base = ((qr->save_base & ~0xFFFFFFFFull) | v32) & ~(uint64_t)(TNPU_SAVE_BYTES - 1);
		return TNPU_REG_OK;
	case TNPU_Q_SAVE_BASE_HI:
		qr->save_base = (qr->save_base & 0xFFFFFFFFull) | ((uint64_t)v32 << 32);
		return TNPU_REG_OK;
	case TNPU_Q_CTRL: {
		bool en = v32 & TNPU_Q_CTRL_ENABLE;

		if (en && !qr->enabled) {
			if (!tnpu_valid_ring_size(qr->ring_size))
				return TNPU_REG_IGNORED;
			qr->enabled = true;
			qr->session++;
			qr->head = qr->tail = 0;
			qr->error = false;
			qr->err_code = qr->err_info = qr->err_cmd_offset = qr->err_ctx = 0;
			qr->err_addr = qr->err_seqno = 0;
			qr->preempt_req = false;
		} else if (!en) {
			qr->enabled = false;
		}
		/* queues.md "Preemption": a request concerns the job in flight, so it needs one */
		if ((v32 & TNPU_Q_CTRL_PREEMPT) && qr->busy && !qr->preempt_req) {
			qr->preempt_req = true;
			fx->preempt_queues |= 1u << q;
		}
		if ((v32 & TNPU_Q_CTRL_SKIP) && qr->error) {
			qr->error = false;
			qr->head = (qr->head + 1) & (qr->ring_size - 1);
		}
		kick(core, q, fx);
		return TNPU_REG_OK;
	}
	}
	if (r <= TNPU_Q_JOBS_DONE || (r >= TNPU_Q_PERF_BASE && r < TNPU_Q_PERF_BASE + 8 * TNPU_CNT_SLOTS))
		return TNPU_REG_READ_ONLY;
	return TNPU_REG_UNMAPPED;
}

enum tnpu_reg_status tnpu_core_reg_write(struct tnpu_core *core, uint64_t offset, unsigned size, uint64_t val,
					 struct tnpu_effects *fx)
{
	struct tnpu_effects dummy;
	uint32_t v = (uint32_t)val;
	bool cap;

	if (!fx)
		fx = &dummy;
	memset(fx, 0, sizeof(*fx));
	if (offset >= TNPU_BAR0_SIZE)
		return TNPU_REG_UNMAPPED;
	if ((size != 4 && size != 8) || (offset & (size - 1)))
		return TNPU_REG_BAD_ACCESS;
	if (offset >= TNPU_REG_QUEUE_BASE && offset < TNPU_REG_QUEUE_BASE + TNPU_MAX_QUEUES * TNPU_REG_QUEUE_STRIDE) {
		unsigned q = (unsigned)(offset - TNPU_REG_QUEUE_BASE) / TNPU_REG_QUEUE_STRIDE;
		unsigned r = (unsigned)(offset - TNPU_REG_QUEUE_BASE) % TNPU_REG_QUEUE_STRIDE;

		if (q >= core->cfg.queues)
			return TNPU_REG_UNMAPPED;
		return write_queue(core, q, r, val, size, fx);
	}
	cap_value(core, offset, &cap);
	if (cap)
		return TNPU_REG_READ_ONLY;
	if (size == 8 && offset != TNPU_REG_MMU_CTX_BASE_LO) {
		uint64_t dummy64;

		return reg64(core, offset, &dummy64) ? TNPU_REG_READ_ONLY : TNPU_REG_BAD_ACCESS;
	}
	switch (offset) {
	case TNPU_REG_CTRL:
		if (v & TNPU_CTRL_RESET) {
			tnpu_core_reset(core);
			fx->reset = true;
			return TNPU_REG_OK;
		}
		core->ctrl = v & TNPU_CTRL_ENABLE;
		kick_all(core, fx);
		return TNPU_REG_OK;
	case TNPU_REG_SCRATCH:
		core->scratch = v;
		return TNPU_REG_OK;
	case TNPU_REG_IRQ_MASK: {
		uint32_t unmasked = core->irq_mask & ~v;

		core->irq_mask = v;
		fx->msix_vectors |= vectors_for(core->irq_status & unmasked);
		return TNPU_REG_OK;
	}
	case TNPU_REG_IRQ_ACK:
		core->irq_status &= ~v;
		return TNPU_REG_OK;
	case TNPU_REG_MMU_CTX_BASE_LO:
		if (size == 8)
			core->mmu_ctx_base = val & ~0xFFFull;
		else
			core->mmu_ctx_base = ((core->mmu_ctx_base & ~0xFFFFFFFFull) | v) & ~0xFFFull;
		return TNPU_REG_OK;
	case TNPU_REG_MMU_CTX_BASE_HI:
		core->mmu_ctx_base = (core->mmu_ctx_base & 0xFFFFFFFFull) | ((uint64_t)v << 32);
		return TNPU_REG_OK;
	case TNPU_REG_MMU_CTX_COUNT:
		core->mmu_ctx_count = v > TNPU_MAX_CTX ? TNPU_MAX_CTX : v;
		return TNPU_REG_OK;
	case TNPU_REG_MMU_INVALIDATE:
		/* the model caches nothing across jobs; a running job's TLB is dropped by the glue
		 * (STATUS.MMU_INV_PENDING until it is) */
		fx->mmu_invalidate = true;
		return TNPU_REG_OK;
	case TNPU_REG_PERF_CTRL:
		if (v & TNPU_PERF_CTRL_CLEAR)
			memset(core->perf, 0, sizeof(core->perf));
		return TNPU_REG_OK;
	case TNPU_REG_STATUS:
	case TNPU_REG_IRQ_STATUS:
	case TNPU_REG_ERR_CODE:
	case TNPU_REG_ERR_QUEUE:
	case TNPU_REG_ERR_INFO:
	case TNPU_REG_ERR_CMD_OFFSET:
	case TNPU_REG_ERR_ADDR_LO:
	case TNPU_REG_ERR_ADDR_HI:
	case TNPU_REG_ERR_SEQNO_LO:
	case TNPU_REG_ERR_SEQNO_HI:
	case TNPU_REG_MMU_FAULTS:
		return TNPU_REG_READ_ONLY;
	}
	if (offset >= TNPU_REG_PERF_BASE && offset < TNPU_REG_PERF_BASE + 8 * TNPU_CNT_SLOTS)
		return TNPU_REG_READ_ONLY;
	return TNPU_REG_UNMAPPED;
}

/* ---- queue pipeline ------------------------------------------------------------------ */

bool tnpu_core_fetch(struct tnpu_core *core, unsigned q, const struct tnpu_mem_ops *mem, struct tnpu_job *job)
{
	struct queue_regs *qr;
	uint8_t raw[32];

	/* *job is only written when a job is handed out. */
	if (q >= core->cfg.queues || !queue_ready(core, q))
		return false;
	memset(job, 0, sizeof(*job));
	qr = &core->q[q];
	job->queue = q;
	job->generation = core->generation;
	job->head = qr->head;
	job->entry_pa = qr->ring_base + 32ull * qr->head;
	job->ctx_table = core->mmu_ctx_base;
	job->ctx_count = core->mmu_ctx_count;
	if (mem->read(mem->opaque, job->entry_pa, raw, sizeof(raw))) {
		job->fetch_error = TNPU_ERR_RING_FETCH;
	} else {
		job->entry.ctx = ld16(raw);
		job->entry.flags = ld16(raw + 2);
		job->entry.cmd_len = ld32(raw + 4);
		job->entry.cmd_va = ld64(raw + 8);
		job->entry.seqno = ld64(raw + 16);
		job->entry.counters_addr = ld64(raw + 24);
	}
	job->session = qr->session;
	job->save_pa = qr->save_base ? qr->save_base + (uint64_t)TNPU_SAVE_BYTES * qr->head : 0;
	qr->busy = true;
	return true;
}

/* The 32 counters, 64-bit little-endian in index order (slots without a counter 0); 0 or -1 (bus error). */
static int write_counter_record(const struct tnpu_mem_ops *mem, uint64_t pa, const uint64_t *counters)
{
	uint8_t rec[TNPU_COUNTER_RECORD_BYTES] = { 0 };

	for (unsigned i = 0; i < TNPU_CNT_NUM && i < TNPU_CNT_SLOTS; i++)
		for (unsigned b = 0; b < 8; b++)
			rec[8 * i + b] = (uint8_t)(counters[i] >> (8 * b));
	return mem->write(mem->opaque, pa, rec, sizeof(rec)) ? -1 : 0;
}

void tnpu_core_complete(struct tnpu_core *core, const struct tnpu_job *job, const struct tnpu_result *res,
			const struct tnpu_mem_ops *mem, struct tnpu_effects *fx)
{
	struct tnpu_effects dummy;
	struct queue_regs *qr;
	uint32_t err = res->error;
	uint32_t info = res->err_info;
	uint64_t addr = res->err_addr;

	if (!fx)
		fx = &dummy;
	memset(fx, 0, sizeof(*fx));
	if (job->generation != core->generation || job->queue >= core->cfg.queues)
		return;	/* abandoned by a reset */
	qr = &core->q[job->queue];
	if (!qr->busy)
		return;
	qr->busy = false;
	qr->preempt_req = false;
	if (job->session != qr->session) {
		/*
		 * The queue was re-enabled while this job ran: its ring, HEAD and fence belong to the new
		 * session, so the old job's result is dropped like one abandoned by reset (queues.md).
		 */
		kick(core, job->queue, fx);
		return;
	}
	/*
	 * queues.md "Preemption": the record, its state word last, before HEAD moves (so before any
	 * later entry's fence); no counter record, no fence.
	 */
	if (!err && res->preempted) {
		int bad = mem->write(mem->opaque, job->save_pa, res->save, TNPU_SAVE_OFF_STATE) ||
			  mem->write(mem->opaque, job->save_pa + TNPU_SAVE_OFF_STATE + 4,
				     res->save + TNPU_SAVE_OFF_STATE + 4, TNPU_SAVE_BYTES - TNPU_SAVE_OFF_STATE - 4);

		/* a driver that sees the state word must see the rest of the record */
		atomic_thread_fence(memory_order_release);
		if (bad || mem->write(mem->opaque, job->save_pa + TNPU_SAVE_OFF_STATE, res->save + TNPU_SAVE_OFF_STATE, 4)) {
			err = TNPU_ERR_SAVE_WRITE;
			info = 0;
			addr = job->save_pa;
		} else {
			memcpy(qr->perf, res->counters, sizeof(qr->perf));
			memcpy(core->row_busy, res->row_busy, sizeof(core->row_busy));
			for (unsigned i = 0; i < TNPU_CNT_NUM; i++)
				core->perf[i] += res->counters[i] - res->base_counters[i];
			qr->jobs_done++;
			qr->head = qr->ring_size ? (qr->head + 1) & (qr->ring_size - 1) : 0;
			if (job->entry.flags & TNPU_RING_F_IRQ)
				raise_irq(core, TNPU_IRQ_QUEUE(job->queue), fx);
			kick(core, job->queue, fx);
			return;
		}
	}
	/*
	 * queues.md "Counter record": written before the fence, HEAD and the error registers, so
	 * the driver may read it as soon as it sees either; not for an entry that failed its checks.
	 */
	if ((job->entry.flags & TNPU_RING_F_COUNTERS) && err != TNPU_ERR_RING_FETCH && err != TNPU_ERR_RING_ENTRY &&
	    write_counter_record(mem, job->entry.counters_addr, res->counters) && !err) {
		err = TNPU_ERR_COUNTERS_WRITE;
		info = 0;
		addr = job->entry.counters_addr;
	}
	if (!err && qr->fence) {
		uint8_t v[8];

		for (unsigned i = 0; i < 8; i++)
			v[i] = (uint8_t)(job->entry.seqno >> (8 * i));
		if (mem->write(mem->opaque, qr->fence, v, 8)) {
			err = TNPU_ERR_FENCE_WRITE;
			info = 0;
			addr = qr->fence;
		}
	}
	memcpy(qr->perf, res->counters, sizeof(qr->perf));
	memcpy(core->row_busy, res->row_busy, sizeof(core->row_busy));
	for (unsigned i = 0; i < TNPU_CNT_NUM; i++)
		core->perf[i] += res->counters[i] - res->base_counters[i];
	qr->jobs_done++;
	if (!err) {
		qr->done_seqno = job->entry.seqno;
		qr->head = qr->ring_size ? (qr->head + 1) & (qr->ring_size - 1) : 0;
		if (job->entry.flags & TNPU_RING_F_IRQ)
			raise_irq(core, TNPU_IRQ_QUEUE(job->queue), fx);
	} else {
		uint32_t err_cmd = (err == TNPU_ERR_FENCE_WRITE || err == TNPU_ERR_COUNTERS_WRITE) ? 0 : res->err_cmd_offset;
		bool mmu = err >= TNPU_ERR_MMU_NOT_PRESENT && err <= TNPU_ERR_MMU_VA_RANGE;

		qr->error = true;
		qr->err_code = core->err_code = err;
		qr->err_info = core->err_info = info;
		qr->err_cmd_offset = core->err_cmd_offset = err_cmd;
		qr->err_ctx = job->entry.ctx;
		core->err_queue = job->queue | ((uint32_t)job->entry.ctx << 16);
		qr->err_addr = core->err_addr = addr;
		qr->err_seqno = core->err_seqno = job->entry.seqno;
		if (mmu)
			core->mmu_faults++;
		raise_irq(core, TNPU_IRQ_ERROR | (mmu ? TNPU_IRQ_MMU_FAULT : 0), fx);
	}
	kick(core, job->queue, fx);
}
