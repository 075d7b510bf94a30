// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu debugfs (/sys/kernel/debug/accel/N/): register and ring dumps (with the per-ring
 * statistics of QUERY_COUNTERS), fault injection.
 *
 * inject_hang, inject_mmu_fault, inject_error (only with the fault_inject module parameter): write
 * 1 to arm; the next job handed to the hardware
 * (any ring) then hangs (its ring stops fetching), faults (its command buffer VA becomes 0, never
 * mapped) or gets a RING_ENTRY error (a reserved ring-entry field is set).
 * inject_mmu_inval_timeout: write N; the next N MMU invalidates report a timeout, so what they
 * unmapped goes to the quarantine (mmu_stale counts it) until the next device reset.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <drm/drm_drv.h>

#include "tnpu_drv.h"

static const struct {
	const char *name;
	u32 reg;
} tnpu_dump_regs[] = {
	{ "ID", TNPU_REG_ID }, { "VERSION", TNPU_REG_VERSION },
	{ "CAP_GEOM", TNPU_REG_CAP_GEOM }, { "CAP_SRAM", TNPU_REG_CAP_SRAM },
	{ "CAP_CLUSTER", TNPU_REG_CAP_CLUSTER }, { "CAP_ACC", TNPU_REG_CAP_ACC },
	{ "CAP_DTYPES", TNPU_REG_CAP_DTYPES }, { "CAP_QUEUES", TNPU_REG_CAP_QUEUES },
	{ "CAP_MMU", TNPU_REG_CAP_MMU }, { "CAP_MMU_CTX", TNPU_REG_CAP_MMU_CTX },
	{ "CAP_CLOCK", TNPU_REG_CAP_CLOCK }, { "CAP_RATES", TNPU_REG_CAP_RATES },
	{ "CAP_FEATURES", TNPU_REG_CAP_FEATURES }, { "CAP_CMDBUF", TNPU_REG_CAP_CMDBUF },
	{ "CTRL", TNPU_REG_CTRL }, { "STATUS", TNPU_REG_STATUS },
	{ "IRQ_STATUS", TNPU_REG_IRQ_STATUS }, { "IRQ_MASK", TNPU_REG_IRQ_MASK },
	{ "ERR_CODE", TNPU_REG_ERR_CODE }, { "ERR_QUEUE", TNPU_REG_ERR_QUEUE },
	{ "ERR_INFO", TNPU_REG_ERR_INFO }, { "ERR_CMD_OFFSET", TNPU_REG_ERR_CMD_OFFSET },
	{ "MMU_CTX_COUNT", TNPU_REG_MMU_CTX_COUNT }, { "MMU_FAULTS", TNPU_REG_MMU_FAULTS },
};

static const struct {
	const char *name;
	u32 reg;
} tnpu_dump_qregs[] = {
	{ "RING_SIZE", TNPU_Q_RING_SIZE }, { "HEAD", TNPU_Q_HEAD }, { "TAIL", TNPU_Q_TAIL },
	{ "CTRL", TNPU_Q_CTRL }, { "STATUS", TNPU_Q_STATUS }, { "ERR_CODE", TNPU_Q_ERR_CODE },
	{ "ERR_INFO", TNPU_Q_ERR_INFO }, { "ERR_CTX", TNPU_Q_ERR_CTX },
	{ "JOBS_DONE", TNPU_Q_JOBS_DONE },
};

static int tnpu_regs_show(struct seq_file *m, void *unused)
{
	struct tnpu_device *tdev = m->private;
	unsigned int i;
	u32 q;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return -ENODEV;
	/* the registers of a runtime-suspended device read all ones: resume it for the dump */
	if (tnpu_pm_get(tdev)) {
		drm_dev_exit(idx);
		return -EIO;
	}
	for (i = 0; i < ARRAY_SIZE(tnpu_dump_regs); i++)
		seq_printf(m, "%-16s 0x%04x = 0x%08x\n", tnpu_dump_regs[i].name,
			   tnpu_dump_regs[i].reg, tnpu_read(tdev, tnpu_dump_regs[i].reg));
	seq_printf(m, "%-16s 0x%04x = 0x%016llx\n", "ERR_ADDR", TNPU_REG_ERR_ADDR,
		   tnpu_read64(tdev, TNPU_REG_ERR_ADDR));
	seq_printf(m, "%-16s 0x%04x = 0x%016llx\n", "MMU_CTX_BASE", TNPU_REG_MMU_CTX_BASE,
		   tnpu_read64(tdev, TNPU_REG_MMU_CTX_BASE));
	for (q = 0; q < tdev->num_rings; q++) {
		for (i = 0; i < ARRAY_SIZE(tnpu_dump_qregs); i++)
			seq_printf(m, "Q%u_%-13s 0x%04x = 0x%08x\n", q, tnpu_dump_qregs[i].name,
				   TNPU_Q_BASE(q) + tnpu_dump_qregs[i].reg,
				   tnpu_qread(tdev, q, tnpu_dump_qregs[i].reg));
		seq_printf(m, "Q%u_%-13s 0x%04x = %llu\n", q, "DONE_SEQNO",
			   TNPU_Q_BASE(q) + TNPU_Q_DONE_SEQNO,
			   tnpu_read64(tdev, TNPU_Q_BASE(q) + TNPU_Q_DONE_SEQNO));
	}
	tnpu_pm_put(tdev);
	drm_dev_exit(idx);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tnpu_regs);

static int tnpu_rings_show(struct seq_file *m, void *unused)
{
	struct tnpu_device *tdev = m->private;
	u64 now, busy;
	u32 q;

	spin_lock(&tdev->lock);
	/* read under the lock, as QUERY_COUNTERS does: a busy period cannot start after @now */
	now = ktime_get_ns();
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];
		struct tnpu_job *job;

		seq_printf(m, "ring %u: tail %u seqno %llu fence %llu credits %u/%u\n", q,
			   ring->tail,
			   ring->seqno, le64_to_cpu(READ_ONCE(*(__le64 *)ring->fence)),
			   atomic_read(&ring->sched.credit_count), ring->sched.credit_limit);
		seq_printf(m, "ring %u ready: queued %u on_ring normal %u high %u preempted %llu\n",
			   q, ring->queued, ring->hw_jobs[0], ring->hw_jobs[1],
			   ring->jobs_preempted);
		/* the per-ring statistics of QUERY_COUNTERS rings[], same names and values */
		busy = ring->busy_ns;
		if (!list_empty(&ring->inflight))
			busy += now - ring->busy_since;
		seq_printf(m, "ring %u stats: jobs_done %llu jobs_failed %llu jobs_timedout %llu busy_ns %llu\n",
			   q, ring->jobs_done, ring->jobs_failed, ring->jobs_timedout, busy);
		list_for_each_entry(job, &ring->inflight, node)
			seq_printf(m, "  job %llu seqno %llu ctx %u queue %u cmd_va 0x%llx len %u\n",
				   job->id, job->hw_seqno, job->ctx->id, job->queue_handle,
				   job->cmd_va, job->cmd_len);
	}
	spin_unlock(&tdev->lock);
	seq_printf(m, "unplugged %d timeout_ms %u\n", tdev->unplugged, tnpu_timeout_ms);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tnpu_rings);

/* the MMU quarantine: freed BOs and contexts held until a device reset (mmu.md "Freeing") */
static int tnpu_mmu_stale_show(struct seq_file *m, void *data)
{
	struct tnpu_device *tdev = m->private;
	u32 bos, ctxs;

	tnpu_mmu_stale_count(tdev, &bos, &ctxs);
	seq_printf(m, "bos %u ctxs %u\n", bos, ctxs);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tnpu_mmu_stale);

void tnpu_debugfs_init(struct tnpu_device *tdev)
{
	struct dentry *root = tdev->drm.debugfs_root;

	if (!root)
		return;
	debugfs_create_file("regs", 0400, root, tdev, &tnpu_regs_fops);
	debugfs_create_file("rings", 0400, root, tdev, &tnpu_rings_fops);
	debugfs_create_file("mmu_stale", 0400, root, tdev, &tnpu_mmu_stale_fops);
	/* the injection knobs make jobs hang or fail on purpose: only when asked for at load */
	if (!tnpu_fault_inject)
		return;
	debugfs_create_atomic_t("inject_hang", 0600, root, &tdev->inject_hang);
	debugfs_create_atomic_t("inject_mmu_fault", 0600, root, &tdev->inject_fault);
	debugfs_create_atomic_t("inject_error", 0600, root, &tdev->inject_error);
	debugfs_create_atomic_t("inject_mmu_inval_timeout", 0600, root,
				&tdev->inject_inval_timeout);
}
