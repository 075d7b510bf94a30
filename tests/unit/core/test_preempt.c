/* SPDX-License-Identifier: MIT */
/*
 * Preemption (queues.md "Preemption", issue #28): a job stopped at a marked point and resumed gives
 * the memory results and counters of an unpreempted run; malformed save records fail the job only.
 */
#include "common.h"

#define Q 1
#define M 16
#define N 16
#define K 64

static uint32_t rd(struct tnpu_core *c, uint64_t off)
{
	uint64_t v;

	cr_assert_eq(tnpu_core_reg_read(c, off, 4, &v), TNPU_REG_OK, "read 0x%llx", (unsigned long long)off);
	return (uint32_t)v;
}

static uint64_t rd64(struct tnpu_core *c, uint64_t off)
{
	uint64_t v;

	cr_assert_eq(tnpu_core_reg_read(c, off, 8, &v), TNPU_REG_OK);
	return v;
}

static struct tnpu_effects wr(struct tnpu_core *c, uint64_t off, uint32_t v)
{
	struct tnpu_effects fx;

	cr_assert_eq(tnpu_core_reg_write(c, off, 4, v, &fx), TNPU_REG_OK, "write 0x%llx", (unsigned long long)off);
	return fx;
}

/* A device driven like the QEMU glue, with two independent int8 GEMMs in one command buffer. */
struct dev {
	struct tsim s;
	struct tnpu_core *c;
	uint64_t ring_pa, fence_pa, save_pa;
	uint64_t cmd_va;
	uint32_t cmd_len, point; /* point: offset of the second GEMM's first command */
	uint64_t c1, c2;	 /* output VAs */
};

static void dev_init(struct dev *d, bool pipelined)
{
	struct tnpu_config cfg = small_cfg();
	struct tgemm g = {.m = M, .n = N, .k = K, .tm = 4, .tn = 4, .kt = 16, .pipelined = pipelined};
	struct tcb cb;
	uint64_t rs = 7;

	cr_assert_eq(tsim_init(&d->s, &cfg, 32 << 20), 0);
	cr_assert_eq(tnpu_core_new(&cfg, &d->c, NULL, 0), 0);
	d->ring_pa = tsim_alloc_pa(&d->s, 4096);
	d->fence_pa = tsim_alloc_pa(&d->s, 4096);
	d->save_pa = tsim_alloc_pa(&d->s, 16 * TNPU_SAVE_BYTES);
	wr(d->c, TNPU_REG_MMU_CTX_BASE_LO, (uint32_t)d->s.ctx_table);
	wr(d->c, TNPU_REG_MMU_CTX_COUNT, 2);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_RING_BASE_LO), (uint32_t)d->ring_pa);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_RING_SIZE), 16);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_FENCE_LO), (uint32_t)d->fence_pa);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_SAVE_BASE_LO), (uint32_t)d->save_pa);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	wr(d->c, TNPU_REG_IRQ_MASK, 0);
	wr(d->c, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);

	g.a = tsim_buf(&d->s, M * K);
	g.b = tsim_buf(&d->s, K * N);
	for (unsigned i = 0; i < M * K; i++)
		((int8_t *)tsim_ptr(&d->s, g.a))[i] = (int8_t)trng(&rs);
	for (unsigned i = 0; i < K * N; i++)
		((int8_t *)tsim_ptr(&d->s, g.b))[i] = (int8_t)trng(&rs);
	d->c1 = g.c = tsim_buf(&d->s, M * N * 4);
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, &cfg, &cb), 0);
	d->point = (uint32_t)cb.len;
	d->c2 = g.c = tsim_buf(&d->s, M * N * 4);
	cr_assert_eq(tgemm_build(&g, &cfg, &cb), 0);
	cb.buf[d->point + 1] |= TNPU_CMD_F_PREEMPT;
	d->cmd_len = (uint32_t)cb.len;
	d->cmd_va = tsim_buf(&d->s, cb.len);
	memcpy(tsim_ptr(&d->s, d->cmd_va), cb.buf, cb.len);
	tcb_free(&cb);
}

static void dev_fini(struct dev *d)
{
	tnpu_core_free(d->c);
	tsim_fini(&d->s);
}

static void submit(struct dev *d, uint32_t slot, uint64_t seqno, uint16_t flags)
{
	struct tnpu_ring_entry e = {
		.ctx = 0, .flags = flags, .cmd_len = d->cmd_len, .cmd_va = d->cmd_va, .seqno = seqno};

	memcpy(d->s.mem + d->ring_pa + 32 * slot, &e, 32);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_TAIL), slot + 1);
	wr(d->c, TNPU_REG_Q(Q, TNPU_Q_DOORBELL), 1);
}

/* One job; `preempt`: Q_CTRL.PREEMPT while it is in flight, as a driver would. */
static void pump_one(struct dev *d, bool preempt)
{
	struct tnpu_job job;
	struct tnpu_result res;
	struct tnpu_effects fx;

	cr_assert(tnpu_core_fetch(d->c, Q, &d->s.ops, &job));
	if (preempt) {
		fx = wr(d->c, TNPU_REG_Q(Q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_PREEMPT);
		cr_assert_eq(fx.preempt_queues, 1u << Q);
		cr_assert(rd(d->c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_PREEMPT_REQ);
		tnpu_exec_preempt(d->s.ex, true);
	}
	tnpu_exec_run(d->s.ex, &job, &d->s.ops, &res);
	tnpu_core_complete(d->c, &job, &res, &d->s.ops, &fx);
	tnpu_exec_preempt(d->s.ex, false); /* the glue, at every completion */
	cr_assert_not(rd(d->c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_PREEMPT_REQ);
}

static uint8_t *slot(struct dev *d, unsigned i)
{
	return d->s.mem + d->save_pa + (uint64_t)TNPU_SAVE_BYTES * i;
}

static uint64_t fence(struct dev *d)
{
	uint64_t v;

	memcpy(&v, d->s.mem + d->fence_pa, 8);
	return v;
}

struct outcome {
	int32_t c1[M * N], c2[M * N];
	uint64_t perf[TNPU_CNT_NUM], global[TNPU_CNT_NUM];
};

static void outcome(struct dev *d, struct outcome *o)
{
	memcpy(o->c1, tsim_ptr(&d->s, d->c1), sizeof(o->c1));
	memcpy(o->c2, tsim_ptr(&d->s, d->c2), sizeof(o->c2));
	for (unsigned i = 0; i < TNPU_CNT_NUM; i++) {
		o->perf[i] = rd64(d->c, TNPU_REG_Q(Q, TNPU_Q_PERF(i)));
		o->global[i] = rd64(d->c, TNPU_REG_PERF(i));
	}
}

static void reference(bool pipelined, struct outcome *o)
{
	struct dev d;

	dev_init(&d, pipelined);
	submit(&d, 0, 1, TNPU_RING_F_IRQ);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR, 0);
	cr_assert_eq(fence(&d), 1);
	outcome(&d, o);
	dev_fini(&d);
}

/* Preempts the job at its point, then resumes it from a copy of the record in the next slot. */
static void preempted(struct dev *d)
{
	int32_t zero[M * N] = {0};

	submit(d, 0, 1, TNPU_RING_F_IRQ | TNPU_RING_F_PREEMPTIBLE);
	pump_one(d, true);
	cr_assert_eq(rd(d->c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR, 0);
	cr_assert_eq(rd(d->c, TNPU_REG_Q(Q, TNPU_Q_HEAD)), 1, "HEAD moves past a preempted entry");
	cr_assert_eq(fence(d), 0, "no fence for a preempted job");
	cr_assert_eq(rd(d->c, TNPU_REG_IRQ_STATUS) & TNPU_IRQ_QUEUE(Q), TNPU_IRQ_QUEUE(Q));
	cr_assert_eq(rd(d->c, TNPU_REG_Q(Q, TNPU_Q_JOBS_DONE)), 1);
	cr_assert_eq(*(uint32_t *)(void *)(slot(d, 0) + TNPU_SAVE_OFF_STATE), TNPU_SAVE_PREEMPTED);
	cr_assert_eq(*(uint32_t *)(void *)(slot(d, 0) + TNPU_SAVE_OFF_RESUME), d->point);
	cr_assert_eq(*(uint64_t *)(void *)(slot(d, 0) + TNPU_SAVE_OFF_SEQNO), 1);
	cr_assert_arr_eq(tsim_ptr(&d->s, d->c2), zero, sizeof(zero), "the second step has not run");
	memcpy(slot(d, 1), slot(d, 0), TNPU_SAVE_BYTES);
	submit(d, 1, 2, TNPU_RING_F_IRQ | TNPU_RING_F_PREEMPTIBLE | TNPU_RING_F_RESUME);
}

static void preempt_and_resume_matches(bool pipelined)
{
	struct outcome ref, got;
	struct dev d;

	reference(pipelined, &ref);
	dev_init(&d, pipelined);
	preempted(&d);
	cr_assert_arr_eq(tsim_ptr(&d.s, d.c1), ref.c1, sizeof(ref.c1), "the first step ran before the point");
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR, 0, "error %u info %u",
		     rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_INFO)));
	cr_assert_eq(fence(&d), 2);
	cr_assert_eq(*(uint32_t *)(void *)(slot(&d, 1) + TNPU_SAVE_OFF_STATE), 0, "the record was consumed");
	outcome(&d, &got);
	cr_assert_arr_eq(got.c1, ref.c1, sizeof(ref.c1));
	cr_assert_arr_eq(got.c2, ref.c2, sizeof(ref.c2));
	for (unsigned i = 0; i < TNPU_CNT_NUM; i++) {
		cr_assert_eq(got.perf[i], ref.perf[i], "job counter %s: %llu, unpreempted %llu", tnpu_counter_name(i),
			     (unsigned long long)got.perf[i], (unsigned long long)ref.perf[i]);
		cr_assert_eq(got.global[i], ref.global[i], "global counter %s: %llu, unpreempted %llu",
			     tnpu_counter_name(i), (unsigned long long)got.global[i],
			     (unsigned long long)ref.global[i]);
	}
	cr_assert_gt(ref.perf[TNPU_CNT_TOTAL_CYCLES], 0);
	dev_fini(&d);
}

Test(preempt, preempted_and_resumed_job_matches_unpreempted_results_and_counters)
{
	preempt_and_resume_matches(false);
}

Test(preempt, pipelined_steps_preempted_and_resumed_match_unpreempted)
{
	preempt_and_resume_matches(true);
}

Test(preempt, point_without_preemptible_entry_or_request_runs_through)
{
	struct outcome ref, got;
	struct dev d;

	reference(false, &ref);
	dev_init(&d, false);
	submit(&d, 0, 1, TNPU_RING_F_IRQ); /* request, entry not PREEMPTIBLE */
	pump_one(&d, true);
	cr_assert_eq(fence(&d), 1);
	submit(&d, 1, 2, TNPU_RING_F_IRQ | TNPU_RING_F_PREEMPTIBLE); /* PREEMPTIBLE, no request */
	pump_one(&d, false);
	cr_assert_eq(fence(&d), 2);
	outcome(&d, &got);
	cr_assert_arr_eq(got.perf, ref.perf, sizeof(ref.perf));
	cr_assert_arr_eq(got.c2, ref.c2, sizeof(ref.c2));
	dev_fini(&d);
}

Test(preempt, preemptible_entry_needs_a_save_base)
{
	struct dev d;

	dev_init(&d, false);
	wr(d.c, TNPU_REG_Q(Q, TNPU_Q_CTRL), 0);
	wr(d.c, TNPU_REG_Q(Q, TNPU_Q_SAVE_BASE_LO), 0);
	wr(d.c, TNPU_REG_Q(Q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	submit(&d, 0, 1, TNPU_RING_F_PREEMPTIBLE);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), TNPU_ERR_RING_ENTRY);
	dev_fini(&d);
}

/* A signal before the point, its wait after it: the token is carried in the record. */
static void sem_program(struct dev *d)
{
	struct tcb cb;

	tcb_init(&cb);
	tcb_sem(&cb, true, 0, TNPU_ENGINE_LOAD, 3, 2);
	tcb_nop(&cb, TNPU_CMD_F_PREEMPT);
	tcb_sem(&cb, false, 0, TNPU_ENGINE_COMPUTE, 3, 1);
	tcb_sem(&cb, false, 0, TNPU_ENGINE_STORE, 3, 1);
	tcb_nop(&cb, 0);
	d->cmd_len = (uint32_t)cb.len;
	d->cmd_va = tsim_buf(&d->s, cb.len);
	memcpy(tsim_ptr(&d->s, d->cmd_va), cb.buf, cb.len);
	tcb_free(&cb);
}

Test(preempt, semaphore_tokens_are_carried_across_a_preemption)
{
	struct outcome ref, got;
	struct dev d;

	dev_init(&d, false);
	sem_program(&d);
	submit(&d, 0, 1, 0);
	pump_one(&d, false);
	cr_assert_eq(fence(&d), 1);
	outcome(&d, &ref);
	dev_fini(&d);

	dev_init(&d, false);
	sem_program(&d);
	submit(&d, 0, 1, TNPU_RING_F_PREEMPTIBLE);
	pump_one(&d, true);
	cr_assert_eq(fence(&d), 0);
	cr_assert_eq(*(uint32_t *)(void *)(slot(&d, 0) + TNPU_SAVE_OFF_RESUME), 16);
	cr_assert_eq(*(uint32_t *)(void *)(slot(&d, 0) + TNPU_SAVE_OFF_SEMS + 4 * 3), 2);
	memcpy(slot(&d, 1), slot(&d, 0), TNPU_SAVE_BYTES);
	submit(&d, 1, 2, TNPU_RING_F_RESUME);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), 0, "error %u", rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)));
	cr_assert_eq(fence(&d), 2);
	outcome(&d, &got);
	cr_assert_arr_eq(got.perf, ref.perf, sizeof(ref.perf));
	dev_fini(&d);
}

/* commands.md "Preemption points": a point drops the on-chip data in every run, so a program that
 * keeps data across one reads zeros (and an EXE of a buffer configured before it fails) whether or not
 * the job is preempted there. */
Test(preempt, point_drops_storage_unit_data_and_config_in_every_run)
{
	struct dev d;
	struct tcb cb;
	uint64_t src, dst;
	uint8_t pkt[1] = {TNPU_PKT_EXE_BYTE(0, 0)};

	dev_init(&d, false);
	src = tsim_buf(&d.s, 64);
	dst = tsim_buf(&d.s, 64);
	memset(tsim_ptr(&d.s, src), 0x5a, 64);
	memset(tsim_ptr(&d.s, dst), 0xee, 64);
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, src, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	tcb_nop(&cb, TNPU_CMD_F_PREEMPT);
	tcb_dma(&cb, false, 0, dst, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	d.cmd_len = (uint32_t)cb.len;
	d.cmd_va = tsim_buf(&d.s, cb.len);
	memcpy(tsim_ptr(&d.s, d.cmd_va), cb.buf, cb.len);
	tcb_free(&cb);
	submit(&d, 0, 1, 0);
	pump_one(&d, false);
	cr_assert_eq(fence(&d), 1);
	for (unsigned i = 0; i < 64; i++)
		cr_assert_eq(((uint8_t *)tsim_ptr(&d.s, dst))[i], 0, "byte %u survived the point", i);

	/* a GEMM (CONFIG of buffer 0 and its EXEs), a point, one more EXE of buffer 0: IBUF_EMPTY */
	{
		struct tnpu_config cfg = small_cfg();
		struct tgemm g = {.m = M, .n = N, .k = K, .tm = 4, .tn = 4, .kt = 16};

		g.a = tsim_buf(&d.s, M * K);
		g.b = tsim_buf(&d.s, K * N);
		g.c = tsim_buf(&d.s, M * N * 4);
		tcb_init(&cb);
		cr_assert_eq(tgemm_build(&g, &cfg, &cb), 0);
		tcb_nop(&cb, TNPU_CMD_F_PREEMPT);
		tcb_dispatch(&cb, 0, 0, 0, 0, pkt, sizeof(pkt));
	}
	d.cmd_len = (uint32_t)cb.len;
	d.cmd_va = tsim_buf(&d.s, cb.len);
	memcpy(tsim_ptr(&d.s, d.cmd_va), cb.buf, cb.len);
	tcb_free(&cb);
	submit(&d, 1, 2, 0);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), TNPU_ERR_IBUF_EMPTY, "error %u",
		     rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)));
	dev_fini(&d);
}

/* A RESUME of a record with one field changed: RESUME with ERR_INFO = the field, then SKIP and the
 * queue runs the next job. */
static void malformed(unsigned off, uint64_t val, unsigned bytes, uint32_t want_info)
{
	struct dev d;

	dev_init(&d, false);
	preempted(&d);
	memcpy(slot(&d, 1) + off, &val, bytes);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), TNPU_ERR_RESUME, "field %u: error %u", off,
		     rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)));
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_INFO)), want_info, "field %u", off);
	cr_assert_eq(rd64(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_ADDR_LO)), d.save_pa + TNPU_SAVE_BYTES);
	cr_assert_eq(fence(&d), 0);
	wr(d.c, TNPU_REG_Q(Q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	submit(&d, 2, 3, TNPU_RING_F_IRQ);
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR, 0);
	cr_assert_eq(fence(&d), 3);
	dev_fini(&d);
}

Test(preempt, malformed_save_records_fail_the_job_and_the_queue_goes_on)
{
	malformed(TNPU_SAVE_OFF_MAGIC, 0x12345678, 4, TNPU_SAVE_OFF_MAGIC);
	malformed(TNPU_SAVE_OFF_VERSION, 2, 2, TNPU_SAVE_OFF_VERSION);
	malformed(TNPU_SAVE_OFF_STATE, 0, 4, TNPU_SAVE_OFF_STATE);
	malformed(TNPU_SAVE_OFF_SEMS + 8, 0xFFFFFFFF, 4, TNPU_SAVE_OFF_SEMS + 8);
	malformed(TNPU_SAVE_OFF_CTX, 1, 2, TNPU_SAVE_OFF_CTX);
	malformed(TNPU_SAVE_OFF_CMD_VA, 0x1000, 8, TNPU_SAVE_OFF_CMD_VA);
	malformed(TNPU_SAVE_OFF_CMD_LEN, 8, 4, TNPU_SAVE_OFF_CMD_LEN);
	malformed(TNPU_SAVE_OFF_ISLAND, 1, 1, TNPU_SAVE_OFF_ISLAND);
	malformed(TNPU_SAVE_OFF_RSV4, 1u << 10, 4, TNPU_SAVE_OFF_RSV4);
	malformed(TNPU_SAVE_OFF_TIME, ~0ull, 8, TNPU_SAVE_OFF_TIME);
	malformed(TNPU_SAVE_OFF_WORK, ~0ull, 8, TNPU_SAVE_OFF_WORK);
	malformed(TNPU_SAVE_OFF_ROW_BUSY + 8, 1ull << 40, 8, TNPU_SAVE_OFF_ROW_BUSY + 8);
	malformed(TNPU_SAVE_OFF_ROW_BUSY + 8 * 7, 1, 8, TNPU_SAVE_OFF_ROW_BUSY + 8 * 7);
	malformed(TNPU_SAVE_OFF_RESUME, 4, 4, TNPU_SAVE_OFF_RESUME);	    /* not a multiple of 8 */
	malformed(TNPU_SAVE_OFF_RESUME, 1u << 30, 4, TNPU_SAVE_OFF_RESUME); /* past the buffer */
	malformed(TNPU_SAVE_OFF_RESUME, 8, 4, TNPU_SAVE_OFF_RESUME);	    /* inside the first command */
	malformed(TNPU_SAVE_OFF_RESUME, 0, 4, TNPU_SAVE_OFF_RESUME);	    /* a command without PREEMPT */
}

Test(preempt, unreadable_save_slot_is_resume_error_and_unwritable_is_save_write)
{
	struct dev d;

	dev_init(&d, false);
	preempted(&d);
	d.s.fail_pa_lo = d.save_pa + TNPU_SAVE_BYTES;
	d.s.fail_pa_hi = d.save_pa + 2 * TNPU_SAVE_BYTES;
	pump_one(&d, false);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), TNPU_ERR_RESUME);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_INFO)), TNPU_SAVE_BYTES);
	wr(d.c, TNPU_REG_Q(Q, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	d.s.fail_pa_lo = d.save_pa + 2 * TNPU_SAVE_BYTES;
	d.s.fail_pa_hi = d.save_pa + 3 * TNPU_SAVE_BYTES;
	submit(&d, 2, 3, TNPU_RING_F_PREEMPTIBLE);
	pump_one(&d, true);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CODE)), TNPU_ERR_SAVE_WRITE);
	cr_assert_eq(rd64(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_ADDR_LO)), d.save_pa + 2 * TNPU_SAVE_BYTES);
	cr_assert_eq(rd(d.c, TNPU_REG_Q(Q, TNPU_Q_ERR_CMD_OFFSET)), d.point);
	dev_fini(&d);
}

Test(preempt, resumed_job_is_not_stopped_again_at_its_resume_point)
{
	struct dev d;

	dev_init(&d, false);
	preempted(&d);
	pump_one(&d, true); /* the only point is the one it resumes at */
	cr_assert_eq(fence(&d), 2);
	dev_fini(&d);
}
