// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu — DRM accel driver for the tnpu PCIe neural-network accelerator: PCI probe/remove, the DRM
 * driver, the ioctl table, QUERY and the sysfs geometry attributes.
 */
#include <linux/bitfield.h>
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"

/* generous: under TCG emulation one large job can run for seconds */
unsigned int tnpu_timeout_ms = 30000;

/* bound devices, so that a new timeout_ms reaches their schedulers */
static LIST_HEAD(tnpu_devices);
static DEFINE_MUTEX(tnpu_devices_lock);

/* 0 would reset the device at once, a huge value never recovers a hang */
static int tnpu_timeout_ms_set(const char *val, const struct kernel_param *kp)
{
	struct tnpu_device *tdev;
	int ret = param_set_uint_minmax(val, kp, TNPU_TIMEOUT_MS_MIN, TNPU_TIMEOUT_MS_MAX);

	if (ret)
		return ret;
	mutex_lock(&tnpu_devices_lock);
	list_for_each_entry(tdev, &tnpu_devices, node)
		tnpu_rings_set_timeout(tdev, READ_ONCE(tnpu_timeout_ms));
	mutex_unlock(&tnpu_devices_lock);
	return 0;
}

static const struct kernel_param_ops tnpu_timeout_ms_ops = {
	.set = tnpu_timeout_ms_set,
	.get = param_get_uint,
};

module_param_cb(timeout_ms, &tnpu_timeout_ms_ops, &tnpu_timeout_ms, 0644);
MODULE_PARM_DESC(timeout_ms,
		 "ms without progress on a ring before the device is reset (100..3600000, 30000)");

bool tnpu_fault_inject;
module_param_named(fault_inject, tnpu_fault_inject, bool, 0444);
MODULE_PARM_DESC(fault_inject, "create the debugfs fault-injection knobs (load time only; off)");

static int tnpu_open(struct drm_device *drm, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct tnpu_user *user;
	struct tnpu_file *tfile;
	bool exempt;
	int ret;

	tfile = kzalloc(sizeof(*tfile), GFP_KERNEL_ACCOUNT);
	if (!tfile)
		return -ENOMEM;
	tfile->tdev = tdev;
	user = tnpu_user_get_current();
	if (!user) {
		ret = -ENOMEM;
		goto err_free;
	}
	/* at open, like the file's credentials: a passed file keeps its opener's standing */
	exempt = capable(CAP_SYS_ADMIN);
	ret = tnpu_user_charge_context(user, exempt);
	if (ret)
		goto err_user;
	tfile->ctx = tnpu_ctx_create(tdev);
	if (IS_ERR(tfile->ctx)) {
		ret = PTR_ERR(tfile->ctx);
		tnpu_user_uncharge_context(user);
		goto err_user;
	}
	/* the context owns the charge and the reference from here on (tnpu_ctx_release()) */
	tfile->ctx->user = user;
	tfile->ctx->limits_exempt = exempt;
	mutex_init(&tfile->queue_lock);
	xa_init_flags(&tfile->queues, XA_FLAGS_ALLOC1);
	xa_init_flags(&tfile->perfmons, XA_FLAGS_ALLOC1);
	file->driver_priv = tfile;
	return 0;

err_user:
	tnpu_user_put(user);
err_free:
	kfree(tfile);
	return ret;
}

static void tnpu_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;

	tnpu_file_queues_fini(tfile);
	tnpu_file_perfmons_fini(tfile);
	mutex_destroy(&tfile->queue_lock);
	tnpu_ctx_put(tfile->ctx);
	kfree(tfile);
}

/* copy_struct_to_user() arrived after 6.12: copy the common prefix, zero the user's tail */
static int tnpu_copy_answer(struct drm_tnpu_query *args, const void *src, u32 ksize)
{
	void __user *dst = u64_to_user_ptr(args->pointer);
	u32 usize = args->size;

	args->size = ksize;
	if (!usize)
		return 0;
	if (!dst)
		return -EFAULT;
	if (copy_to_user(dst, src, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(dst + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

static void tnpu_fill_caps(struct tnpu_device *tdev, struct drm_tnpu_caps *caps)
{
	const struct tnpu_caps_raw *c = &tdev->caps;

	caps->hw_version = c->version;
	caps->rows = FIELD_GET(TNPU_CAP_GEOM_ROWS, c->geom);
	caps->cols = FIELD_GET(TNPU_CAP_GEOM_COLS, c->geom);
	caps->pes = FIELD_GET(TNPU_CAP_GEOM_PES, c->geom);
	caps->accumulators = FIELD_GET(TNPU_CAP_GEOM_ACCS, c->geom);
	caps->acc_elems = FIELD_GET(TNPU_CAP_ACC_ELEMS, c->acc);
	caps->sram_bytes = c->sram;
	caps->ibufs = FIELD_GET(TNPU_CAP_CLUSTER_IBUFS, c->cluster);
	caps->ibuf_len = FIELD_GET(TNPU_CAP_CLUSTER_IBUF_LEN, c->cluster);
	caps->rf_entries = FIELD_GET(TNPU_CAP_CLUSTER_RF, c->cluster);
	caps->slots = FIELD_GET(TNPU_CAP_CLUSTER_SLOTS, c->cluster);
	caps->dtypes = c->dtypes;
	caps->hw_queues = tdev->num_rings;
	caps->semaphores = FIELD_GET(TNPU_CAP_QUEUES_SEMS, c->queues);
	caps->features = c->features;
	caps->clock_mhz = c->clock;
	caps->rates = c->rates;
	caps->max_cmdbuf = c->cmdbuf;
	caps->page_size = TNPU_PAGE_SIZE;
	caps->va_bits = FIELD_GET(TNPU_CAP_MMU_VA_BITS, c->mmu);
	caps->va_start = TNPU_VA_START;
	caps->va_end = TNPU_VA_END;
	caps->max_bo_size = TNPU_MAX_BO_SIZE;
	caps->counters_size = sizeof(struct drm_tnpu_job_counters);
	/* without per-job counter records every counter reads 0 (uapi.md) */
	caps->num_counters = (tdev->caps.features & TNPU_FEAT_COUNTERS) ? TNPU_NUM_COUNTERS : 0;
	caps->max_queues = TNPU_MAX_FILE_QUEUES;
}

static void tnpu_fill_islands(struct tnpu_device *tdev, struct drm_tnpu_islands *isl)
{
	const struct tnpu_caps_raw *c = &tdev->caps;
	u32 i, n;

	if (!(c->features & TNPU_FEAT_ISLANDS)) {
		isl->count = 1;
		isl->island[0].rows = FIELD_GET(TNPU_CAP_GEOM_ROWS, c->geom);
		isl->island[0].clkdiv = 1;
		isl->island[0].dtypes = c->dtypes;
		isl->island[0].sram_bytes = isl->island[0].rows * c->sram;
		return;
	}
	n = FIELD_GET(TNPU_ISLANDS_COUNT, tnpu_read(tdev, TNPU_REG_ISLANDS));
	isl->count = min_t(u32, n, DRM_TNPU_MAX_ISLANDS);
	isl->rings = FIELD_GET(TNPU_ISLANDS_RINGS, tnpu_read(tdev, TNPU_REG_ISLANDS));
	isl->ring_mem_bytes = tnpu_read(tdev, TNPU_REG_RING_MEM);
	for (i = 0; i < isl->count; i++) {
		u32 rows = tnpu_read(tdev, TNPU_REG_ISL(i, TNPU_ISL_ROWS));

		isl->island[i].first_row = FIELD_GET(TNPU_ISL_FIRST, rows);
		isl->island[i].rows = FIELD_GET(TNPU_ISL_NROWS, rows);
		isl->island[i].clkdiv = FIELD_GET(TNPU_ISL_CLKDIV, rows);
		isl->island[i].dtypes = tnpu_read(tdev, TNPU_REG_ISL(i, TNPU_ISL_DTYPES));
		isl->island[i].sram_base = tnpu_read(tdev, TNPU_REG_ISL(i, TNPU_ISL_SRAM_BASE));
		isl->island[i].sram_bytes = tnpu_read(tdev, TNPU_REG_ISL(i, TNPU_ISL_SRAM_SIZE));
	}
}

static void tnpu_fill_counters(struct tnpu_device *tdev, struct drm_tnpu_counters *cnt)
{
	u64 now;
	u32 q;
	int i;

	BUILD_BUG_ON(TNPU_MAX_QUEUES > DRM_TNPU_MAX_RINGS);
	cnt->jobs_submitted = atomic64_read(&tdev->jobs_submitted);
	cnt->jobs_completed = atomic64_read(&tdev->jobs_completed);
	cnt->jobs_failed = atomic64_read(&tdev->jobs_failed);
	cnt->jobs_timedout = atomic64_read(&tdev->jobs_timedout);
	cnt->resets = atomic64_read(&tdev->resets);
	cnt->mmu_faults = atomic64_read(&tdev->mmu_faults);
	cnt->hw_errors = atomic64_read(&tdev->hw_errors);
	for (i = 0; i < TNPU_NUM_COUNTERS; i++)
		cnt->device[i] = tnpu_read64(tdev, TNPU_REG_PERF(i));

	cnt->num_rings = tdev->num_rings;
	spin_lock(&tdev->lock);
	/* read under the lock: a busy period cannot start after @now */
	now = ktime_get_ns();
	for (q = 0; q < tdev->num_rings; q++) {
		const struct tnpu_ring *ring = &tdev->rings[q];
		struct drm_tnpu_ring_stats *s = &cnt->rings[q];

		s->jobs_done = ring->jobs_done;
		s->jobs_failed = ring->jobs_failed;
		s->jobs_timedout = ring->jobs_timedout;
		s->busy_ns = ring->busy_ns;
		if (!list_empty(&ring->inflight))
			s->busy_ns += now - ring->busy_since;
	}
	spin_unlock(&tdev->lock);
}

/*
 * The ROW_BUSY registers hold the rows of the job that completed last on the device: an
 * unprivileged caller may read them when that job was its own and no other file's job is on a
 * ring (one could complete, and overwrite them, before the driver noticed). tdev->lock held.
 */
static bool tnpu_row_busy_is_callers(struct tnpu_device *tdev, struct tnpu_ctx *ctx)
{
	struct tnpu_job *job;
	u32 q;

	lockdep_assert_held(&tdev->lock);
	if (tdev->last_done_ctx != ctx->serial)
		return false;
	for (q = 0; q < tdev->num_rings; q++)
		list_for_each_entry(job, &tdev->rings[q].inflight, node)
			if (job->ctx != ctx)
				return false;
	return true;
}

static int tnpu_ioctl_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_query *args = data;

	if (args->flags || args->pad)
		return -EINVAL;
	switch (args->type) {
	case DRM_TNPU_QUERY_CAPS: {
		struct drm_tnpu_caps caps = {};

		tnpu_fill_caps(tdev, &caps);
		return tnpu_copy_answer(args, &caps, sizeof(caps));
	}
	case DRM_TNPU_QUERY_COUNTERS: {
		struct drm_tnpu_counters *cnt;
		int ret;

		/* every tenant's jobs and busy time: the caller's own are in fdinfo and perfmons */
		if (!perfmon_capable())
			return -EPERM;

		/* 832 bytes: too large for the ioctl's stack frame */
		cnt = kzalloc(sizeof(*cnt), GFP_KERNEL);
		if (!cnt)
			return -ENOMEM;
		tnpu_fill_counters(tdev, cnt);
		ret = tnpu_copy_answer(args, cnt, sizeof(*cnt));
		kfree(cnt);
		return ret;
	}
	case DRM_TNPU_QUERY_FAULT: {
		struct tnpu_ctx *ctx = tfile->ctx;
		struct drm_tnpu_fault fault = {};

		if (READ_ONCE(ctx->faulted)) {
			/* pairs with smp_wmb() in tnpu_ring_error() */
			smp_rmb();
			fault.faulted = 1;
			fault.error_code = ctx->fault_code;
			fault.error_info = ctx->fault_info;
			fault.cmd_offset = ctx->fault_cmd_offset;
			fault.address = ctx->fault_addr;
			fault.queue = ctx->fault_queue;
		}
		return tnpu_copy_answer(args, &fault, sizeof(fault));
	}
	case DRM_TNPU_QUERY_ISLANDS: {
		struct drm_tnpu_islands isl = {};

		tnpu_fill_islands(tdev, &isl);
		return tnpu_copy_answer(args, &isl, sizeof(isl));
	}
	case DRM_TNPU_QUERY_ROW_BUSY: {
		struct drm_tnpu_row_busy rb = {};
		bool allowed = perfmon_capable();
		u32 r;

		rb.rows = FIELD_GET(TNPU_CAP_GEOM_ROWS, tdev->caps.geom);
		spin_lock(&tdev->lock);
		/* under the lock: no job completes between the check and the reads */
		if (!allowed)
			allowed = tnpu_row_busy_is_callers(tdev, tfile->ctx);
		for (r = 0; allowed && r < rb.rows && r < DRM_TNPU_MAX_ROW_BUSY; r++)
			rb.busy[r] = tnpu_read64(tdev, TNPU_REG_ROW_BUSY(r));
		spin_unlock(&tdev->lock);
		if (!allowed)
			return -EPERM;
		return tnpu_copy_answer(args, &rb, sizeof(rb));
	}
	default:
		return -EINVAL;
	}
}

/*
 * Every driver ioctl runs inside drm_dev_enter()/exit() so that an unbind waits for it and later
 * calls fail with -ENODEV instead of touching a removed device.
 */
#define TNPU_IOCTL_WRAP(name)							\
static int tnpu_ioctl_##name##_guarded(struct drm_device *drm, void *data,	\
				       struct drm_file *file)			\
{										\
	int idx, ret;								\
										\
	if (!drm_dev_enter(drm, &idx))						\
		return -ENODEV;							\
	ret = tnpu_ioctl_##name(drm, data, file);				\
	drm_dev_exit(idx);							\
	return ret;								\
}

/*
 * Ioctls that may block for a user-chosen or dependency-bound time and touch no device register
 * (BO_WAIT, QUEUE_DESTROY) only check that the device is there: held across their wait, the unplug
 * SRCU would make an unbind wait for them too. What they use (GEM objects, schedulers) lives until
 * the DRM device is released, which the open file prevents.
 */
#define TNPU_IOCTL_WRAP_UNHELD(name)						\
static int tnpu_ioctl_##name##_guarded(struct drm_device *drm, void *data,	\
				       struct drm_file *file)			\
{										\
	int idx;								\
										\
	if (!drm_dev_enter(drm, &idx))						\
		return -ENODEV;							\
	drm_dev_exit(idx);							\
	return tnpu_ioctl_##name(drm, data, file);				\
}

/* QUERY types whose answer reads device registers */
static bool tnpu_query_reads_device(u32 type)
{
	return type == DRM_TNPU_QUERY_COUNTERS || type == DRM_TNPU_QUERY_ISLANDS ||
	       type == DRM_TNPU_QUERY_ROW_BUSY;
}

/*
 * CAPS and FAULT answer from memory: a runtime-suspended device stays asleep. The others read
 * registers: the device is resumed for them, and a function reset or recovery in progress
 * (registers all ones until it is done) is waited for under reset_lock.
 */
static int tnpu_ioctl_query_guarded(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct drm_tnpu_query *args = data;
	int idx, ret;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (!tnpu_query_reads_device(args->type)) {
		ret = tnpu_ioctl_query(drm, data, file);
		goto out;
	}
	ret = tnpu_pm_get(tdev);
	if (ret)
		goto out;
	ret = mutex_lock_interruptible(&tdev->reset_lock);
	if (!ret) {
		ret = tnpu_ioctl_query(drm, data, file);
		mutex_unlock(&tdev->reset_lock);
	}
	tnpu_pm_put(tdev);
out:
	drm_dev_exit(idx);
	return ret;
}

TNPU_IOCTL_WRAP(bo_create)
TNPU_IOCTL_WRAP(bo_info)
TNPU_IOCTL_WRAP_UNHELD(bo_wait)
TNPU_IOCTL_WRAP(queue_create)
TNPU_IOCTL_WRAP_UNHELD(queue_destroy)
TNPU_IOCTL_WRAP(submit)
TNPU_IOCTL_WRAP(perfmon_create)
TNPU_IOCTL_WRAP(perfmon_destroy)
TNPU_IOCTL_WRAP(perfmon_get_values)

#define TNPU_IOCTL(id, name)							\
	DRM_IOCTL_DEF_DRV(TNPU_##id, tnpu_ioctl_##name##_guarded, DRM_RENDER_ALLOW)

static const struct drm_ioctl_desc tnpu_ioctls[] = {
	TNPU_IOCTL(QUERY, query),
	TNPU_IOCTL(BO_CREATE, bo_create),
	TNPU_IOCTL(BO_INFO, bo_info),
	TNPU_IOCTL(BO_WAIT, bo_wait),
	TNPU_IOCTL(QUEUE_CREATE, queue_create),
	TNPU_IOCTL(QUEUE_DESTROY, queue_destroy),
	TNPU_IOCTL(SUBMIT, submit),
	TNPU_IOCTL(PERFMON_CREATE, perfmon_create),
	TNPU_IOCTL(PERFMON_DESTROY, perfmon_destroy),
	TNPU_IOCTL(PERFMON_GET_VALUES, perfmon_get_values),
};

static const struct drm_driver tnpu_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL | DRIVER_GEM | DRIVER_SYNCOBJ |
			   DRIVER_SYNCOBJ_TIMELINE,
	.open = tnpu_open,
	.postclose = tnpu_postclose,
	.show_fdinfo = tnpu_show_fdinfo,
	.gem_create_object = tnpu_gem_create_object,
	.ioctls = tnpu_ioctls,
	.num_ioctls = ARRAY_SIZE(tnpu_ioctls),
	.fops = &tnpu_fops,
	.name = "tnpu",
	.desc = "tnpu neural-network accelerator",
	.major = 1,
	.minor = 0,
};

/* ---- sysfs: geometry, on the PCI device ---- */

#define TNPU_ATTR(_name, _expr)							\
static ssize_t _name##_show(struct device *dev, struct device_attribute *attr,	\
			    char *buf)						\
{										\
	struct tnpu_device *tdev = pci_get_drvdata(to_pci_dev(dev));		\
										\
	return sysfs_emit(buf, "%u\n", (u32)(_expr));				\
}										\
static DEVICE_ATTR_RO(_name)

TNPU_ATTR(rows, FIELD_GET(TNPU_CAP_GEOM_ROWS, tdev->caps.geom));
TNPU_ATTR(cols, FIELD_GET(TNPU_CAP_GEOM_COLS, tdev->caps.geom));
TNPU_ATTR(pes, FIELD_GET(TNPU_CAP_GEOM_PES, tdev->caps.geom));
TNPU_ATTR(accumulators, FIELD_GET(TNPU_CAP_GEOM_ACCS, tdev->caps.geom));
TNPU_ATTR(sram_bytes, tdev->caps.sram);
TNPU_ATTR(hw_queues, tdev->num_rings);
TNPU_ATTR(clock_mhz, tdev->caps.clock);
TNPU_ATTR(isa_version, FIELD_GET(TNPU_VERSION_ISA, tdev->caps.version));

static ssize_t hw_version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct tnpu_device *tdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "0x%08x\n", tdev->caps.version);
}
static DEVICE_ATTR_RO(hw_version);

static struct attribute *tnpu_attrs[] = {
	&dev_attr_rows.attr,
	&dev_attr_cols.attr,
	&dev_attr_pes.attr,
	&dev_attr_accumulators.attr,
	&dev_attr_sram_bytes.attr,
	&dev_attr_hw_queues.attr,
	&dev_attr_clock_mhz.attr,
	&dev_attr_isa_version.attr,
	&dev_attr_hw_version.attr,
	NULL,
};
ATTRIBUTE_GROUPS(tnpu);

/* ---- PCI ---- */

static void tnpu_destroy_ida(struct drm_device *drm, void *arg)
{
	ida_destroy(&to_tnpu(drm)->ctx_ida);
}

/*
 * devres, so after tnpu_remove() has stopped the device and before the driver core reports the
 * unbind: the DMA API wants every coherent buffer back by then, though open files keep the DRM
 * device (and their contexts) alive longer.
 */
static void tnpu_free_tables(void *data)
{
	struct tnpu_device *tdev = data;

	tnpu_mmu_release_tables(tdev);
	dma_free_coherent(&tdev->pdev->dev, PAGE_SIZE, tdev->fences, tdev->fences_dma);
	tdev->fences = NULL;
}

static int tnpu_alloc_tables(struct tnpu_device *tdev)
{
	struct device *dev = &tdev->pdev->dev;
	int ret;

	ida_init(&tdev->ctx_ida);
	ret = drmm_add_action_or_reset(&tdev->drm, tnpu_destroy_ida, NULL);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&tdev->ctxs);
	ret = drmm_mutex_init(&tdev->drm, &tdev->ctx_lock);
	if (ret)
		return ret;
	tdev->ctx_table = dma_alloc_coherent(dev, TNPU_MAX_CTX * TNPU_CTX_ENTRY_SIZE,
					     &tdev->ctx_table_dma, GFP_KERNEL);
	if (!tdev->ctx_table)
		return -ENOMEM;
	tdev->fences = dma_alloc_coherent(dev, PAGE_SIZE, &tdev->fences_dma, GFP_KERNEL);
	if (!tdev->fences) {
		dma_free_coherent(dev, TNPU_MAX_CTX * TNPU_CTX_ENTRY_SIZE, tdev->ctx_table,
				  tdev->ctx_table_dma);
		return -ENOMEM;
	}
	return devm_add_action_or_reset(dev, tnpu_free_tables, tdev);
}

static int tnpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct tnpu_device *tdev;
	int ret;

	tdev = devm_drm_dev_alloc(&pdev->dev, &tnpu_drm_driver, struct tnpu_device, drm);
	if (IS_ERR(tdev))
		return PTR_ERR(tdev);
	tdev->pdev = pdev;
	pci_set_drvdata(pdev, tdev);
	spin_lock_init(&tdev->lock);
	tnpu_mmu_init_stale(tdev);
	ret = drmm_mutex_init(&tdev->drm, &tdev->reset_lock);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	if (pci_resource_len(pdev, 0) < TNPU_BAR0_SIZE) {
		dev_err(&pdev->dev, "BAR0 too small\n");
		return -ENODEV;
	}
	/* requested, so no other driver (or /dev/mem user on strict kernels) maps BAR0 meanwhile */
	tdev->regs = pcim_iomap_region(pdev, 0, KBUILD_MODNAME);
	if (IS_ERR(tdev->regs))
		return PTR_ERR(tdev->regs);
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(52));
	if (ret)
		return ret;
	/*
	 * tnpu_mmu_map() writes one PTE per page of each DMA segment, so the device takes
	 * segments of any length; without this the DMA API assumes 64 KiB.
	 */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);

	ret = tnpu_hw_init(tdev);
	if (ret)
		return ret;
	tnpu_hw_reset(tdev);

	ret = tnpu_alloc_tables(tdev);
	if (ret)
		return ret;
	ret = tnpu_coredump_init(tdev);
	if (ret)
		return ret;
	/* under the lock: a timeout_ms write either precedes drm_sched_init or reaches it */
	mutex_lock(&tnpu_devices_lock);
	ret = tnpu_rings_init(tdev);
	if (!ret)
		list_add(&tdev->node, &tnpu_devices);
	mutex_unlock(&tnpu_devices_lock);
	if (ret)
		return ret;

	spin_lock(&tdev->lock);
	tnpu_hw_program(tdev);
	spin_unlock(&tdev->lock);

	ret = tnpu_irq_init(tdev);
	if (ret)
		goto err_disable;
	ret = drm_dev_register(&tdev->drm, 0);
	if (ret)
		goto err_irq;
	tnpu_debugfs_init(tdev);
	tnpu_pm_init(tdev);
	return 0;

err_irq:
	tnpu_irq_fini(tdev);
err_disable:
	tnpu_hw_disable(tdev);
	mutex_lock(&tnpu_devices_lock);
	list_del(&tdev->node);
	mutex_unlock(&tnpu_devices_lock);
	return ret;
}

static void tnpu_remove(struct pci_dev *pdev)
{
	struct tnpu_device *tdev = pci_get_drvdata(pdev);

	tnpu_pm_fini(tdev);
	mutex_lock(&tnpu_devices_lock);
	list_del(&tdev->node);
	mutex_unlock(&tnpu_devices_lock);
	/* no new ioctls; wait for running ones */
	drm_dev_unplug(&tdev->drm);
	tnpu_write(tdev, TNPU_REG_IRQ_MASK, 0xffffffff);
	tnpu_irq_fini(tdev);
	/* reset the device, fail every job it held, let the schedulers free them */
	tnpu_jobs_unplug(tdev);
	tnpu_coredump_fini(tdev);
}

static void tnpu_reset_prepare(struct pci_dev *pdev)
{
	tnpu_pci_reset_prepare(pci_get_drvdata(pdev));
}

static void tnpu_reset_done(struct pci_dev *pdev)
{
	tnpu_pci_reset_done(pci_get_drvdata(pdev));
}

static const struct pci_error_handlers tnpu_err_handlers = {
	.reset_prepare = tnpu_reset_prepare,
	.reset_done = tnpu_reset_done,
};

static const struct pci_device_id tnpu_pci_ids[] = {
	{ PCI_DEVICE(TNPU_PCI_VENDOR_ID, TNPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, tnpu_pci_ids);

static struct pci_driver tnpu_pci_driver = {
	.name = "tnpu",
	.id_table = tnpu_pci_ids,
	.probe = tnpu_probe,
	.remove = tnpu_remove,
	.dev_groups = tnpu_groups,
	.err_handler = &tnpu_err_handlers,
	.driver.pm = pm_ptr(&tnpu_pm_ops),
};

static int __init tnpu_init(void)
{
	int ret = tnpu_job_module_init();

	if (ret)
		return ret;
	ret = pci_register_driver(&tnpu_pci_driver);
	if (ret)
		tnpu_job_module_exit();
	return ret;
}

static void __exit tnpu_exit(void)
{
	pci_unregister_driver(&tnpu_pci_driver);
	/* runs the last job releases, which may release DRM devices */
	tnpu_job_module_exit();
	tnpu_limits_exit();
}

module_init(tnpu_init);
module_exit(tnpu_exit);

MODULE_DESCRIPTION("tnpu neural-network accelerator");
MODULE_LICENSE("GPL");
