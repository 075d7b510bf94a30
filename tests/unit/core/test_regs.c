/* SPDX-License-Identifier: MIT */
/* BAR0 register block, ring fetch, completion, interrupts, errors, reset. */
#include "common.h"

static struct tnpu_core *core_new(void)
{
	struct tnpu_config cfg;
	struct tnpu_core *c;

	tnpu_config_default(&cfg);
	cr_assert_eq(tnpu_core_new(&cfg, &c, NULL, 0), 0);
	return c;
}

static uint32_t rd(struct tnpu_core *c, uint64_t off)
{
	uint64_t v;

	cr_assert_eq(tnpu_core_reg_read(c, off, 4, &v), TNPU_REG_OK, "read 0x%llx", (unsigned long long)off);
	return (uint32_t)v;
}

static struct tnpu_effects wr(struct tnpu_core *c, uint64_t off, uint32_t v)
{
	struct tnpu_effects fx;

	cr_assert_eq(tnpu_core_reg_write(c, off, 4, v, &fx), TNPU_REG_OK, "write 0x%llx", (unsigned long long)off);
	return fx;
}

Test(regs, id_version_and_capabilities_match_the_spec)
{
	struct tnpu_core *c = core_new();

	cr_assert_eq(rd(c, TNPU_REG_ID), 0x554E5054u);
	cr_assert_eq(rd(c, TNPU_REG_VERSION), 0x01000200u);	/* ISA 2: vector units (#16) */
	cr_assert_eq(rd(c, TNPU_REG_CAP_GEOM), 4u | 4u << 8 | 16u << 16 | 4u << 24);
	cr_assert_eq(rd(c, TNPU_REG_CAP_SRAM), TNPU_DEF_SRAM);
	cr_assert_eq(TNPU_CAP_CLUSTER_IBUFS(rd(c, TNPU_REG_CAP_CLUSTER)), 32);
	cr_assert_eq(TNPU_CAP_CLUSTER_RF(rd(c, TNPU_REG_CAP_CLUSTER)), 64);
	cr_assert_eq(rd(c, TNPU_REG_CAP_ACC), 1024);
	cr_assert_eq(rd(c, TNPU_REG_CAP_DTYPES), 7);
	cr_assert_eq(TNPU_CAP_QUEUES_NUM(rd(c, TNPU_REG_CAP_QUEUES)), 4);
	cr_assert_eq(TNPU_CAP_QUEUES_VECTORS(rd(c, TNPU_REG_CAP_QUEUES)), 5);
	cr_assert_eq(TNPU_CAP_MMU_VA_BITS(rd(c, TNPU_REG_CAP_MMU)), 48);
	cr_assert_eq(rd(c, TNPU_REG_CAP_CLOCK), 1000);
	cr_assert_eq(TNPU_CAP_RATES_FP32(rd(c, TNPU_REG_CAP_RATES)), TNPU_RATE_MAC_FP32);
	cr_assert_eq(rd(c, TNPU_REG_CAP_CMDBUF), 16u << 20);
	cr_assert_eq(rd(c, TNPU_REG_IRQ_MASK), 0xFFFFFFFFu);
	tnpu_core_free(c);
}

Test(regs, geometry_properties_are_reflected_and_validated)
{
	struct tnpu_config cfg;
	struct tnpu_core *c;
	char msg[128];

	tnpu_config_default(&cfg);
	cfg.rows = 2;
	cfg.cols = 8;
	cfg.pes = 32;
	cfg.sram = 128 * 1024;
	cfg.queues = 7;
	cfg.clock_mhz = 1500;
	cr_assert_eq(tnpu_core_new(&cfg, &c, msg, sizeof(msg)), 0);
	cr_assert_eq(rd(c, TNPU_REG_CAP_GEOM), 2u | 8u << 8 | 32u << 16 | 4u << 24);
	cr_assert_eq(rd(c, TNPU_REG_CAP_SRAM), 128 * 1024);
	cr_assert_eq(TNPU_CAP_QUEUES_NUM(rd(c, TNPU_REG_CAP_QUEUES)), 7);
	cr_assert_eq(rd(c, TNPU_REG_CAP_CLOCK), 1500);
	tnpu_core_free(c);

	cfg.sram = 100000;	/* not a power of two */
	cr_assert_eq(tnpu_core_new(&cfg, &c, msg, sizeof(msg)), -22);
	cr_assert(strstr(msg, "sram"));
	tnpu_config_default(&cfg);
	cfg.pes = 65;
	cr_assert_eq(tnpu_config_validate(&cfg, msg, sizeof(msg)), -22);
	cfg.pes = 16;
	cfg.queues = 0;
	cr_assert_eq(tnpu_config_validate(&cfg, NULL, 0), -22);
}

Test(regs, bad_sizes_unmapped_and_read_only_accesses_are_reported)
{
	struct tnpu_core *c = core_new();
	uint64_t v = 123;
	struct tnpu_effects fx;

	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_ID, 2, &v), TNPU_REG_BAD_ACCESS);
	cr_assert_eq(v, 0);
	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_ID + 1, 4, &v), TNPU_REG_BAD_ACCESS);
	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_ID, 8, &v), TNPU_REG_BAD_ACCESS);
	cr_assert_eq(tnpu_core_reg_read(c, 0x3FFC, 4, &v), TNPU_REG_UNMAPPED);
	cr_assert_eq(tnpu_core_reg_read(c, 0x10000, 4, &v), TNPU_REG_UNMAPPED);
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_ID, 4, 1, &fx), TNPU_REG_READ_ONLY);
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_Q(0, TNPU_Q_HEAD), 4, 1, &fx), TNPU_REG_READ_ONLY);
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_Q(5, TNPU_Q_TAIL), 4, 1, &fx), TNPU_REG_UNMAPPED);
	cr_assert_eq(rd(c, TNPU_REG_ID), TNPU_ID_VALUE);
	wr(c, TNPU_REG_SCRATCH, 0xdeadbeef);
	cr_assert_eq(rd(c, TNPU_REG_SCRATCH), 0xdeadbeef);
	/* 64-bit access to a LO/HI pair */
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_MMU_CTX_BASE_LO, 8, 0x123456789000ull, &fx), TNPU_REG_OK);
	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_MMU_CTX_BASE_LO, 8, &v), TNPU_REG_OK);
	cr_assert_eq(v, 0x123456789000ull);
	cr_assert_eq(rd(c, TNPU_REG_MMU_CTX_BASE_HI), 0x1234);
	tnpu_core_free(c);
}

/* A full device: core registers + executor + memory, driven like the QEMU glue. */
struct dev {
	struct tsim s;
	struct tnpu_core *c;
	uint64_t ring_pa, fence_pa;
	uint32_t vectors;
};

static void dev_init(struct dev *d)
{
	struct tnpu_config cfg = small_cfg();

	cr_assert_eq(tsim_init(&d->s, &cfg, 16 << 20), 0);
	cr_assert_eq(tnpu_core_new(&cfg, &d->c, NULL, 0), 0);
	d->ring_pa = tsim_alloc_pa(&d->s, 4096);
	d->fence_pa = tsim_alloc_pa(&d->s, 4096);
	d->vectors = 0;
	wr(d->c, TNPU_REG_MMU_CTX_BASE_LO, (uint32_t)d->s.ctx_table);
	wr(d->c, TNPU_REG_MMU_CTX_COUNT, 2);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_RING_BASE_LO), (uint32_t)d->ring_pa);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_RING_SIZE), 16);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_FENCE_LO), (uint32_t)d->fence_pa);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	wr(d->c, TNPU_REG_IRQ_MASK, 0);
	wr(d->c, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
}

static void dev_submit(struct dev *d, uint32_t slot, uint16_t ctx, uint64_t va, uint32_t len, uint64_t seqno,
		       uint16_t flags)
{
	struct tnpu_ring_entry e = { .ctx = ctx, .flags = flags, .cmd_len = len, .cmd_va = va, .seqno = seqno };
	struct tnpu_effects fx;

	memcpy(d->s.mem + d->ring_pa + 32 * slot, &e, 32);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_TAIL), slot + 1);
	fx = wr(d->c, TNPU_REG_Q(1, TNPU_Q_DOORBELL), 1);
	cr_assert_eq(fx.kick_queues, 1u << 1);
}

/* The glue's BH/worker loop, synchronously. */
static unsigned dev_pump(struct dev *d)
{
	struct tnpu_job job;
	struct tnpu_result res;
	struct tnpu_effects fx;
	unsigned n = 0;

	while (tnpu_core_fetch(d->c, 1, &d->s.ops, &job)) {
		cr_assert(rd(d->c, TNPU_REG_Q(1, TNPU_Q_STATUS)) & TNPU_Q_STATUS_BUSY);
		tnpu_exec_run(d->s.ex, &job, &d->s.ops, &res);
		tnpu_core_complete(d->c, &job, &res, &d->s.ops, &fx);
		d->vectors |= fx.msix_vectors;
		n++;
	}
	return n;
}

static uint64_t nop_buffer(struct dev *d, unsigned n)
{
	struct tcb cb;
	uint64_t va;

	tcb_init(&cb);
	for (unsigned i = 0; i < n; i++)
		tcb_nop(&cb, 0);
	va = tsim_buf(&d->s, cb.len);
	memcpy(tsim_ptr(&d->s, va), cb.buf, cb.len);
	tcb_free(&cb);
	return va;
}

Test(regs, doorbell_fetch_complete_writes_fence_and_raises_queue_vector)
{
	struct dev d;
	uint64_t va;

	dev_init(&d);
	va = nop_buffer(&d, 3);
	dev_submit(&d, 0, 0, va, 24, 0x1122334455ull, TNPU_RING_F_IRQ);
	cr_assert_eq(dev_pump(&d), 1);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 0x1122334455ull);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 1);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_DONE_SEQNO_LO)), 0x22334455u);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_DONE_SEQNO_HI)), 0x11u);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), TNPU_Q_STATUS_ENABLED);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_QUEUE(1));
	cr_assert_eq(d.vectors, 1u << TNPU_MSIX_VEC_QUEUE(1));
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_PERF(TNPU_CNT_COMMANDS))), 3);
	cr_assert_eq(rd(d.c, TNPU_REG_PERF(TNPU_CNT_COMMANDS)), 3);
	wr(d.c, TNPU_REG_IRQ_ACK, TNPU_IRQ_QUEUE(1));
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), 0);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

/* registers.md: each counter is a 64-bit LO/HI pair; a 4-byte read at +4 is the high word. */
Test(regs, counter_hi_half_reads_the_high_word)
{
	const uint64_t offs[] = { TNPU_REG_PERF(TNPU_CNT_TOTAL_CYCLES), TNPU_REG_PERF(TNPU_CNT_COMMANDS),
				  TNPU_REG_Q(1, TNPU_Q_PERF(TNPU_CNT_TOTAL_CYCLES)),
				  TNPU_REG_Q(1, TNPU_Q_PERF(TNPU_CNT_COMMANDS)) };
	struct dev d;
	uint64_t va;

	dev_init(&d);
	va = nop_buffer(&d, 3);
	dev_submit(&d, 0, 0, va, 24, 1, 0);
	cr_assert_eq(dev_pump(&d), 1);
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t v64;

		cr_assert_eq(tnpu_core_reg_read(d.c, offs[i], 8, &v64), TNPU_REG_OK);
		cr_assert_neq(v64, 0, "counter at 0x%llx is zero", (unsigned long long)offs[i]);
		cr_assert_eq(rd(d.c, offs[i]), (uint32_t)v64, "LO of 0x%llx", (unsigned long long)offs[i]);
		cr_assert_eq(rd(d.c, offs[i] + 4), (uint32_t)(v64 >> 32), "HI of 0x%llx", (unsigned long long)offs[i]);
	}
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

/* queues.md "Reset while jobs run": re-enable while a job runs starts a new session. */
Test(regs, completion_from_before_a_queue_reenable_is_dropped)
{
	struct dev d;
	struct tnpu_job job;
	struct tnpu_result res;
	struct tnpu_effects fx;
	uint64_t va, *fence;

	dev_init(&d);
	fence = (uint64_t *)(void *)(d.s.mem + d.fence_pa);
	va = nop_buffer(&d, 2);
	dev_submit(&d, 0, 0, va, 16, 77, TNPU_RING_F_IRQ);
	cr_assert(tnpu_core_fetch(d.c, 1, &d.s.ops, &job));
	tnpu_exec_run(d.s.ex, &job, &d.s.ops, &res);
	cr_assert_eq(res.error, 0);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), 0);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), TNPU_Q_STATUS_ENABLED | TNPU_Q_STATUS_BUSY);

	tnpu_core_complete(d.c, &job, &res, &d.s.ops, &fx);
	cr_assert_eq(*fence, 0, "stale job wrote the new session's fence");
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_DONE_SEQNO_LO)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), TNPU_Q_STATUS_ENABLED);
	cr_assert_eq(fx.msix_vectors, 0);

	/* The new session runs normally. */
	dev_submit(&d, 0, 0, va, 16, 5, 0);
	cr_assert_eq(dev_pump(&d), 1);
	cr_assert_eq(*fence, 5);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 1);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, masked_cause_fires_when_unmasked)
{
	struct dev d;
	struct tnpu_effects fx;

	dev_init(&d);
	wr(d.c, TNPU_REG_IRQ_MASK, 0xFFFFFFFF);
	dev_submit(&d, 0, 0, nop_buffer(&d, 1), 8, 1, TNPU_RING_F_IRQ);
	dev_pump(&d);
	cr_assert_eq(d.vectors, 0);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_QUEUE(1));
	fx = wr(d.c, TNPU_REG_IRQ_MASK, ~TNPU_IRQ_QUEUE(1));
	cr_assert_eq(fx.msix_vectors, 1u << TNPU_MSIX_VEC_QUEUE(1));
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, job_error_halts_queue_latches_error_and_skip_resumes)
{
	struct dev d;
	uint64_t bad_va = 0x7000000000ull;	/* unmapped */

	dev_init(&d);
	dev_submit(&d, 0, 0, bad_va, 8, 7, TNPU_RING_F_IRQ);
	dev_submit(&d, 1, 0, nop_buffer(&d, 1), 8, 8, TNPU_RING_F_IRQ);
	cr_assert_eq(dev_pump(&d), 1);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 0, "fence must not be written on error");
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), TNPU_Q_STATUS_ENABLED | TNPU_Q_STATUS_ERROR);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_ADDR_LO)), (uint32_t)bad_va);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_ADDR_HI)), (uint32_t)(bad_va >> 32));
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_SEQNO_LO)), 7);
	cr_assert_eq(rd(d.c, TNPU_REG_ERR_CODE), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(rd(d.c, TNPU_REG_ERR_QUEUE) & 0xFF, 1);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_ERROR | TNPU_IRQ_MMU_FAULT);
	cr_assert_eq(rd(d.c, TNPU_REG_MMU_FAULTS), 1);
	cr_assert_eq(rd(d.c, TNPU_REG_STATUS) & TNPU_STATUS_ERROR, TNPU_STATUS_ERROR);
	cr_assert_eq(d.vectors, 1u << TNPU_MSIX_VEC_ERROR);
	cr_assert_eq(dev_pump(&d), 0, "halted queue must not fetch");
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	cr_assert_eq(dev_pump(&d), 1);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 8);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 2);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, reset_drops_in_flight_jobs_and_restores_reset_values)
{
	struct dev d;
	struct tnpu_job job;
	struct tnpu_result res;
	struct tnpu_effects fx;

	dev_init(&d);
	dev_submit(&d, 0, 0, nop_buffer(&d, 1), 8, 5, TNPU_RING_F_IRQ);
	cr_assert(tnpu_core_fetch(d.c, 1, &d.s.ops, &job));
	fx = wr(d.c, TNPU_REG_CTRL, TNPU_CTRL_RESET);
	cr_assert(fx.reset);
	tnpu_exec_run(d.s.ex, &job, &d.s.ops, &res);
	tnpu_core_complete(d.c, &job, &res, &d.s.ops, &fx);
	cr_assert_eq(fx.msix_vectors, 0);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_RING_SIZE)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_MASK), 0xFFFFFFFF);
	cr_assert_eq(rd(d.c, TNPU_REG_CTRL), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_ID), TNPU_ID_VALUE);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, ring_entry_rules_and_fetch_bus_error_are_job_errors)
{
	struct dev d;

	dev_init(&d);
	dev_submit(&d, 0, 0, nop_buffer(&d, 1), 8, 1, 0x8);	/* reserved flag */
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_RING_ENTRY);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	dev_submit(&d, 1, 0, nop_buffer(&d, 1), 12, 1, 0);	/* length not a multiple of 8 */
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_CMDBUF);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	dev_submit(&d, 2, 5, nop_buffer(&d, 1), 8, 1, 0);	/* context out of range */
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_CTX_RANGE);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	d.s.fail_pa_lo = d.ring_pa + 32 * 3;
	d.s.fail_pa_hi = d.s.fail_pa_lo + 32;
	dev_submit(&d, 3, 0, nop_buffer(&d, 1), 8, 1, 0);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_RING_FETCH);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, fence_bus_error_halts_the_queue)
{
	struct dev d;

	dev_init(&d);
	d.s.fail_pa_lo = d.fence_pa;
	d.s.fail_pa_hi = d.fence_pa + 8;
	dev_submit(&d, 0, 0, nop_buffer(&d, 1), 8, 1, TNPU_RING_F_IRQ);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_FENCE_WRITE);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_ERROR);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, ring_config_is_locked_while_enabled_and_invalid_size_blocks_enable)
{
	struct tnpu_core *c = core_new();
	struct tnpu_effects fx;

	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_Q(0, TNPU_Q_RING_SIZE), 4, 3, &fx), TNPU_REG_OK);
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_Q(0, TNPU_Q_CTRL), 4, 1, &fx), TNPU_REG_IGNORED);
	cr_assert_eq(rd(c, TNPU_REG_Q(0, TNPU_Q_STATUS)), 0);
	wr(c, TNPU_REG_Q(0, TNPU_Q_RING_SIZE), 8);
	wr(c, TNPU_REG_Q(0, TNPU_Q_CTRL), 1);
	cr_assert_eq(tnpu_core_reg_write(c, TNPU_REG_Q(0, TNPU_Q_RING_SIZE), 4, 16, &fx), TNPU_REG_IGNORED);
	cr_assert_eq(rd(c, TNPU_REG_Q(0, TNPU_Q_RING_SIZE)), 8);
	wr(c, TNPU_REG_Q(0, TNPU_Q_TAIL), 13);
	cr_assert_eq(rd(c, TNPU_REG_Q(0, TNPU_Q_TAIL)), 5);
	tnpu_core_free(c);
}

Test(regs, two_queues_have_jobs_in_flight_at_once_and_complete_in_any_order)
{
	struct dev d;
	struct tnpu_job j0, j1;
	struct tnpu_result r0, r1;
	struct tnpu_effects fx;
	struct tnpu_exec *ex2;
	uint64_t ring0 , fence0;
	struct tnpu_ring_entry e = { .ctx = 0, .flags = TNPU_RING_F_IRQ, .cmd_len = 8, .seqno = 100 };

	dev_init(&d);
	ring0 = tsim_alloc_pa(&d.s, 4096);
	fence0 = tsim_alloc_pa(&d.s, 4096);
	wr(d.c, TNPU_REG_Q(0, TNPU_Q_RING_BASE_LO), (uint32_t)ring0);
	wr(d.c, TNPU_REG_Q(0, TNPU_Q_RING_SIZE), 4);
	wr(d.c, TNPU_REG_Q(0, TNPU_Q_FENCE_LO), (uint32_t)fence0);
	wr(d.c, TNPU_REG_Q(0, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	e.cmd_va = nop_buffer(&d, 1);
	memcpy(d.s.mem + ring0, &e, 32);
	wr(d.c, TNPU_REG_Q(0, TNPU_Q_TAIL), 1);
	fx = wr(d.c, TNPU_REG_Q(0, TNPU_Q_DOORBELL), 0);
	cr_assert_eq(fx.kick_queues, 1);
	dev_submit(&d, 0, 0, nop_buffer(&d, 2), 16, 200, TNPU_RING_F_IRQ);
	cr_assert(tnpu_core_fetch(d.c, 0, &d.s.ops, &j0));
	cr_assert(tnpu_core_fetch(d.c, 1, &d.s.ops, &j1));
	cr_assert_not(tnpu_core_fetch(d.c, 1, &d.s.ops, &j1), "one job per queue at a time");
	cr_assert_eq(rd(d.c, TNPU_REG_STATUS) & TNPU_STATUS_BUSY, TNPU_STATUS_BUSY);
	cr_assert_eq(tnpu_exec_new(&d.s.cfg, &ex2, NULL, 0), 0);
	tnpu_exec_run(d.s.ex, &j1, &d.s.ops, &r1);
	tnpu_exec_run(ex2, &j0, &d.s.ops, &r0);
	tnpu_core_complete(d.c, &j1, &r1, &d.s.ops, &fx);
	cr_assert_eq(fx.msix_vectors, 1u << TNPU_MSIX_VEC_QUEUE(1), "vectors 0x%x, job %s", fx.msix_vectors,
		     tnpu_err_name(r1.error));
	tnpu_core_complete(d.c, &j0, &r0, &d.s.ops, &fx);
	cr_assert_eq(fx.msix_vectors, 1u << TNPU_MSIX_VEC_QUEUE(0));
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + fence0), 100);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 200);
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_QUEUE(0) | TNPU_IRQ_QUEUE(1));
	cr_assert_eq(rd(d.c, TNPU_REG_PERF(TNPU_CNT_COMMANDS)), 3);
	cr_assert_eq(rd(d.c, TNPU_REG_STATUS) & TNPU_STATUS_BUSY, 0);
	tnpu_exec_free(ex2);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

/* ---- per-job counter record (ring entry COUNTERS, CAP_FEATURES bit 18) ---- */

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void dev_submit_counters(struct dev *d, uint32_t slot, uint64_t va, uint32_t len, uint64_t seqno,
				uint16_t flags, uint64_t counters_addr)
{
	struct tnpu_ring_entry e = { .ctx = 0, .flags = flags, .cmd_len = len, .cmd_va = va, .seqno = seqno,
				     .counters_addr = counters_addr };

	memcpy(d->s.mem + d->ring_pa + 32 * slot, &e, 32);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_TAIL), slot + 1);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_DOORBELL), 1);
}

static uint64_t q_perf(struct tnpu_core *c, unsigned i)
{
	uint64_t v;

	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_Q(1, TNPU_Q_PERF(i)), 8, &v), TNPU_REG_OK);
	return v;
}

Test(regs, counters_feature_bit_is_advertised)
{
	struct tnpu_core *c = core_new();

	cr_assert_eq(rd(c, TNPU_REG_CAP_FEATURES) & TNPU_FEAT_COUNTERS, TNPU_FEAT_COUNTERS);
	cr_assert_eq(TNPU_FEAT_COUNTERS, 1u << 18);
	cr_assert_eq(TNPU_FEAT_VEC_QADD, 1u << 20);
	cr_assert_eq(TNPU_FEAT_CPAIR, 1u << 21);
	cr_assert_eq(TNPU_FEAT_WRAP, 1u << 22);
	cr_assert_eq(TNPU_FEAT_WDECOMP, 1u << 23);
	cr_assert_eq(TNPU_FEAT_PREEMPT, 1u << 24);
	cr_assert_eq(TNPU_FEAT_VEC_MATH, 1u << 25);
	cr_assert_eq(rd(c, TNPU_REG_CAP_FEATURES), 0x3FFFFFFu);	/* registers.md: bits 0..25 */
	tnpu_core_free(c);
}

Test(regs, counter_record_of_each_job_equals_its_q_perf_block)
{
	struct dev d;
	uint64_t rec = 0, va2, va5;
	uint8_t *p;

	dev_init(&d);
	rec = tsim_alloc_pa(&d.s, 4096);
	memset(d.s.mem + rec, 0xAB, 1024);
	va2 = nop_buffer(&d, 2);
	va5 = nop_buffer(&d, 5);
	/* two jobs with records back to back on one ring: each gets its own counters */
	dev_submit_counters(&d, 0, va2, 16, 1, TNPU_RING_F_IRQ | TNPU_RING_F_COUNTERS, rec);
	dev_submit_counters(&d, 1, va5, 40, 2, TNPU_RING_F_IRQ | TNPU_RING_F_COUNTERS, rec + 256);
	cr_assert_eq(dev_pump(&d), 2);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 2);
	p = d.s.mem + rec;
	cr_assert_eq(ld64(p + 8 * TNPU_CNT_COMMANDS), 2);
	cr_assert_eq(ld64(p + 256 + 8 * TNPU_CNT_COMMANDS), 5);
	/* the second record is the Q_PERF block after the second job, all 32 slots */
	for (unsigned i = 0; i < TNPU_CNT_SLOTS; i++)
		cr_assert_eq(ld64(p + 256 + 8 * i), q_perf(d.c, i), "counter %u", i);
	cr_assert_gt(ld64(p + 8 * TNPU_CNT_TOTAL_CYCLES), 0);
	/* slots without a counter are written as 0; nothing past the 256 bytes */
	cr_assert_eq(ld64(p + 8 * 31), 0);
	cr_assert_eq(p[512], 0xAB);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, entry_without_counters_flag_leaves_memory_alone)
{
	struct dev d;
	uint64_t rec;

	dev_init(&d);
	rec = tsim_alloc_pa(&d.s, 4096);
	memset(d.s.mem + rec, 0xAB, 256);
	dev_submit_counters(&d, 0, nop_buffer(&d, 1), 8, 1, TNPU_RING_F_IRQ, 0);
	cr_assert_eq(dev_pump(&d), 1);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_STATUS)), TNPU_Q_STATUS_ENABLED);
	for (unsigned i = 0; i < 256; i++)
		cr_assert_eq(d.s.mem[rec + i], 0xAB);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, counters_addr_rules_are_ring_entry_errors_and_write_nothing)
{
	struct dev d;
	uint64_t rec;

	dev_init(&d);
	rec = tsim_alloc_pa(&d.s, 4096);
	memset(d.s.mem + rec, 0xAB, 512);
	/* an address without the flag (the field was reserved before the feature) */
	dev_submit_counters(&d, 0, nop_buffer(&d, 1), 8, 1, 0, rec);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_RING_ENTRY);
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	/* the flag with a misaligned address */
	dev_submit_counters(&d, 1, nop_buffer(&d, 1), 8, 2, TNPU_RING_F_COUNTERS, rec + 4);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_RING_ENTRY);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_INFO)), TNPU_RING_F_COUNTERS);
	for (unsigned i = 0; i < 512; i++)
		cr_assert_eq(d.s.mem[rec + i], 0xAB);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, failed_job_writes_counters_up_to_the_failure)
{
	struct dev d;
	struct tcb cb;
	uint64_t rec, va;
	struct tnpu_cmd_hdr bad = { .opcode = 0x42, .size = 8 };	/* unknown opcode */

	dev_init(&d);
	rec = tsim_alloc_pa(&d.s, 4096);
	memset(d.s.mem + rec, 0xAB, 256);
	tcb_init(&cb);
	tcb_nop(&cb, 0);
	tcb_nop(&cb, 0);
	tcb_raw(&cb, &bad, 8);
	va = tsim_buf(&d.s, cb.len);
	memcpy(tsim_ptr(&d.s, va), cb.buf, cb.len);
	dev_submit_counters(&d, 0, va, (uint32_t)cb.len, 7, TNPU_RING_F_IRQ | TNPU_RING_F_COUNTERS, rec);
	tcb_free(&cb);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_CMD_OPCODE);
	for (unsigned i = 0; i < TNPU_CNT_SLOTS; i++)
		cr_assert_eq(ld64(d.s.mem + rec + 8 * i), q_perf(d.c, i), "counter %u", i);
	/* the two NOPs and the failing command: not the 0xAB pattern */
	cr_assert_eq(ld64(d.s.mem + rec + 8 * TNPU_CNT_COMMANDS), 3);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}

Test(regs, counter_record_bus_error_is_a_job_error_before_the_fence)
{
	struct dev d;
	uint64_t rec;

	dev_init(&d);
	rec = tsim_alloc_pa(&d.s, 4096);
	*(uint64_t *)(void *)(d.s.mem + d.fence_pa) = 0;
	d.s.fail_pa_lo = rec + 128;
	d.s.fail_pa_hi = rec + 136;
	dev_submit_counters(&d, 0, nop_buffer(&d, 1), 8, 5, TNPU_RING_F_IRQ | TNPU_RING_F_COUNTERS, rec);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_COUNTERS_WRITE);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_ADDR_LO)), (uint32_t)rec);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CMD_OFFSET)), 0);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_HEAD)), 0);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 0, "fence written after a failed record");
	cr_assert_eq(rd(d.c, TNPU_REG_IRQ_STATUS), TNPU_IRQ_ERROR);
	cr_assert_str_eq(tnpu_err_name(TNPU_ERR_COUNTERS_WRITE), "COUNTERS_WRITE");
	/* a job that failed on its own keeps its error when the record cannot be written either */
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	dev_submit_counters(&d, 1, nop_buffer(&d, 1), 12, 6, TNPU_RING_F_COUNTERS, rec);
	dev_pump(&d);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_CMDBUF);
	tnpu_core_free(d.c);
	tsim_fini(&d.s);
}
