/* SPDX-License-Identifier: MIT */
/*
 * Migration snapshot of the register block (qemu-device.md "Migration"): a
 * migrated core reads like the original and runs on like it; a stream of
 * another geometry, version or size is refused with the field named and
 * nothing changed.
 */
#include <errno.h>

#include "common.h"

static uint32_t rd(struct tnpu_core *c, uint64_t off)
{
	uint64_t v;

	tnpu_core_reg_read(c, off, 4, &v);
	return (uint32_t)v;
}

static void wr(struct tnpu_core *c, uint64_t off, uint32_t v)
{
	struct tnpu_effects fx;

	cr_assert_eq(tnpu_core_reg_write(c, off, 4, v, &fx), TNPU_REG_OK, "write 0x%llx", (unsigned long long)off);
}

/* One simulated device: guest memory + executor (tsim) and a register block on queue 1. */
struct dev {
	struct tsim s;
	struct tnpu_core *c;
	uint64_t ring_pa, fence_pa;
};

static void dev_init(struct dev *d)
{
	struct tnpu_config cfg = small_cfg();

	cr_assert_eq(tsim_init(&d->s, &cfg, 16 << 20), 0);
	cr_assert_eq(tnpu_core_new(&cfg, &d->c, NULL, 0), 0);
	d->ring_pa = tsim_alloc_pa(&d->s, 4096);
	d->fence_pa = tsim_alloc_pa(&d->s, 4096);
	wr(d->c, TNPU_REG_MMU_CTX_BASE_LO, (uint32_t)d->s.ctx_table);
	wr(d->c, TNPU_REG_MMU_CTX_COUNT, 2);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_RING_BASE_LO), (uint32_t)d->ring_pa);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_RING_SIZE), 16);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_FENCE_LO), (uint32_t)d->fence_pa);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE);
	wr(d->c, TNPU_REG_IRQ_MASK, 0x5);
	wr(d->c, TNPU_REG_SCRATCH, 0xc0ffee);
	wr(d->c, TNPU_REG_CTRL, TNPU_CTRL_ENABLE);
}

static void dev_fini(struct dev *d)
{
	tnpu_core_free(d->c);
	tsim_fini(&d->s);
}

static void dev_enqueue(struct dev *d, uint32_t slot, uint64_t va, uint32_t len, uint64_t seqno)
{
	struct tnpu_ring_entry e = { .ctx = 0, .flags = TNPU_RING_F_IRQ, .cmd_len = len, .cmd_va = va,
				     .seqno = seqno };

	memcpy(d->s.mem + d->ring_pa + 32 * slot, &e, 32);
	wr(d->c, TNPU_REG_Q(1, TNPU_Q_TAIL), slot + 1);
}

/* The glue's BH/worker loop, synchronously, on core c. */
static unsigned pump(struct dev *d, struct tnpu_core *c)
{
	struct tnpu_job job;
	struct tnpu_result res;
	struct tnpu_effects fx;
	unsigned n = 0;

	while (tnpu_core_fetch(c, 1, &d->s.ops, &job)) {
		tnpu_exec_run(d->s.ex, &job, &d->s.ops, &res);
		tnpu_core_complete(c, &job, &res, &d->s.ops, &fx);
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

/* A device with history: one job done, one failed (queue halted), one waiting behind it. */
static void dev_with_history(struct dev *d)
{
	dev_init(d);
	dev_enqueue(d, 0, nop_buffer(d, 3), 24, 5);
	dev_enqueue(d, 1, 0x7000000000ull, 8, 7);	/* unmapped: MMU_NOT_PRESENT */
	dev_enqueue(d, 2, nop_buffer(d, 2), 16, 9);
	cr_assert_eq(pump(d, d->c), 2);
	cr_assert(rd(d->c, TNPU_REG_Q(1, TNPU_Q_STATUS)) & TNPU_Q_STATUS_ERROR);
}

static void *save(struct tnpu_core *c, size_t *len)
{
	char msg[160];
	void *buf;
	int n;

	*len = tnpu_core_snapshot_size(c);
	buf = malloc(*len);
	cr_assert(buf);
	n = tnpu_core_snapshot_save(c, buf, *len, msg, sizeof(msg));
	cr_assert_eq(n, (int)*len, "save: %d %s", n, msg);
	return buf;
}

static void assert_same_registers(struct tnpu_core *a, struct tnpu_core *b)
{
	for (uint64_t off = 0; off < TNPU_BAR0_SIZE; off += 4)
		cr_assert_eq(rd(a, off), rd(b, off), "register 0x%llx: 0x%x vs 0x%x", (unsigned long long)off,
			     rd(a, off), rd(b, off));
}

Test(snapshot, migrated_core_reads_every_register_alike_and_runs_on_like_the_original)
{
	struct tnpu_config cfg = small_cfg();
	struct tnpu_core *dst;
	struct dev d;
	char msg[160];
	size_t len;
	void *buf;

	dev_with_history(&d);
	buf = save(d.c, &len);
	cr_assert_eq(tnpu_core_new(&cfg, &dst, NULL, 0), 0);
	cr_assert_eq(tnpu_core_snapshot_load(dst, buf, len, msg, sizeof(msg)), 0, "%s", msg);
	assert_same_registers(d.c, dst);
	cr_assert_eq(rd(dst, TNPU_REG_Q(1, TNPU_Q_ERR_CODE)), TNPU_ERR_MMU_NOT_PRESENT);
	cr_assert_eq(rd(dst, TNPU_REG_Q(1, TNPU_Q_JOBS_DONE)), 2);

	/* Both skip the failed entry and run the waiting job: the fence and every register agree. */
	wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	cr_assert_eq(pump(&d, d.c), 1);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 9);
	*(uint64_t *)(void *)(d.s.mem + d.fence_pa) = 0;
	wr(dst, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
	cr_assert_eq(pump(&d, dst), 1);
	cr_assert_eq(*(uint64_t *)(void *)(d.s.mem + d.fence_pa), 9);
	cr_assert_eq(rd(dst, TNPU_REG_Q(1, TNPU_Q_HEAD)), 3);
	cr_assert_eq(rd(dst, TNPU_REG_Q(1, TNPU_Q_PERF(TNPU_CNT_COMMANDS))), 2);
	assert_same_registers(d.c, dst);
	free(buf);
	tnpu_core_free(dst);
	dev_fini(&d);
}

Test(snapshot, load_refuses_another_geometry_and_names_the_field)
{
	struct tnpu_config cfg;
	struct tnpu_core *dst;
	struct dev d;
	char msg[160];
	size_t len;
	void *buf;

	dev_with_history(&d);
	buf = save(d.c, &len);
	tnpu_config_default(&cfg);	/* 4 rows, the stream has 2 */
	cr_assert_eq(tnpu_core_new(&cfg, &dst, NULL, 0), 0);
	wr(dst, TNPU_REG_SCRATCH, 0x1234);
	cr_assert_eq(tnpu_core_snapshot_load(dst, buf, len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "rows is 2, this device has 4"), "%s", msg);
	cr_assert_eq(rd(dst, TNPU_REG_SCRATCH), 0x1234, "a refused load changes nothing");
	tnpu_core_free(dst);

	cfg = small_cfg();
	cfg.queues = 3;
	cr_assert_eq(tnpu_core_new(&cfg, &dst, NULL, 0), 0);
	cr_assert_eq(tnpu_core_snapshot_load(dst, buf, len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "queues is 4, this device has 3"), "%s", msg);
	tnpu_core_free(dst);
	free(buf);
	dev_fini(&d);
}

Test(snapshot, load_refuses_corrupt_streams_and_changes_nothing)
{
	struct tnpu_config cfg = small_cfg();
	struct tnpu_core *dst;
	struct dev d;
	char msg[160];
	uint8_t *bad;
	size_t len;
	void *buf;

	dev_with_history(&d);
	buf = save(d.c, &len);
	bad = malloc(len);
	cr_assert_eq(tnpu_core_new(&cfg, &dst, NULL, 0), 0);
	wr(dst, TNPU_REG_SCRATCH, 0x1234);

	memcpy(bad, buf, len);
	bad[0] ^= 1;
	cr_assert_eq(tnpu_core_snapshot_load(dst, bad, len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "magic"), "%s", msg);

	memcpy(bad, buf, len);
	bad[4] += 1;	/* format version */
	cr_assert_eq(tnpu_core_snapshot_load(dst, bad, len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "snapshot version is 3"), "%s", msg);

	cr_assert_eq(tnpu_core_snapshot_load(dst, buf, len - 1, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "size"), "%s", msg);
	cr_assert_eq(tnpu_core_snapshot_load(dst, buf, 10, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "truncated"), "%s", msg);

	/* queue 1's head (the source's is 1) past its 16-entry ring: found by value, at its offset */
	memcpy(bad, buf, len);
	{
		struct tnpu_core *probe;
		size_t at = SIZE_MAX;

		/* locate HEAD: the byte that differs between snapshots before and after a SKIP */
		wr(d.c, TNPU_REG_Q(1, TNPU_Q_CTRL), TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
		probe = d.c;
		{
			size_t len2;
			uint8_t *after = save(probe, &len2);

			for (size_t i = 0; i < len; i++)
				if (after[i] != ((uint8_t *)buf)[i]) {
					at = i;
					break;
				}
			free(after);
		}
		cr_assert_neq(at, SIZE_MAX);
		bad[at] = 200;
	}
	cr_assert_eq(tnpu_core_snapshot_load(dst, bad, len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "queue 1 head 200"), "%s", msg);
	cr_assert_eq(rd(dst, TNPU_REG_SCRATCH), 0x1234, "a refused load changes nothing");
	free(bad);
	free(buf);
	tnpu_core_free(dst);
	dev_fini(&d);
}

Test(snapshot, save_refuses_a_queue_with_a_job_in_flight)
{
	struct tnpu_job job;
	struct dev d;
	char msg[160];
	uint8_t buf[4096];

	dev_init(&d);
	dev_enqueue(&d, 0, nop_buffer(&d, 1), 8, 1);
	cr_assert(tnpu_core_fetch(d.c, 1, &d.s.ops, &job));
	cr_assert_eq(tnpu_core_snapshot_save(d.c, buf, sizeof(buf), msg, sizeof(msg)), -EBUSY);
	cr_assert(strstr(msg, "queue 1 has a job in flight"), "%s", msg);
	cr_assert_eq(tnpu_core_snapshot_save(d.c, buf, 8, msg, sizeof(msg)), -EBUSY);
	dev_fini(&d);
}
