/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tnpu — shared driver declarations: device, per-file context, buffer objects, rings and jobs.
 */
#ifndef __TNPU_DRV_H__
#define __TNPU_DRV_H__

#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <drm/gpu_scheduler.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iosys-map.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include "tnpu_regs.h"

#define TNPU_RING_ENTRIES	256
/*
 * drm_sched credit limit per ring: not a ring depth. Jobs go from drm_sched to the driver's ready
 * lists as soon as their dependencies signal (the per-file job limit bounds them); the dispatcher
 * (tnpu_dispatch.c) puts at most TNPU_DEPTH_HIGH + TNPU_DEPTH_NORMAL of them on the 256-entry ring.
 */
#define TNPU_SCHED_CREDITS	BIT(20)
#define TNPU_NUM_PRIO		3	/* DRM_TNPU_QUEUE_PRIORITY_LOW..HIGH */
#define TNPU_DEPTH_NORMAL	1	/* NORMAL and LOW jobs on a ring at once */
#define TNPU_DEPTH_HIGH		2	/* HIGH jobs on a ring at once */
#define TNPU_MAX_CTX		4096	/* context-table entries the driver programs (64 KiB) */
#define TNPU_MAX_FILE_QUEUES	64
#define TNPU_VA_START		0x100000ULL		/* keep VA 0 and the first MiB unmapped */
#define TNPU_VA_END		BIT_ULL(40)
#define TNPU_MAX_BO_SIZE	BIT_ULL(32)
#define TNPU_MAX_SUBMIT_BOS	4096
#define TNPU_MAX_IN_SYNCS	256

#define TNPU_TIMEOUT_MS_MIN	100
#define TNPU_TIMEOUT_MS_MAX	3600000

extern unsigned int tnpu_timeout_ms;
extern bool tnpu_fault_inject;

struct tnpu_device;
struct tnpu_perfmon;

/**
 * struct tnpu_user - what one uid holds of every tnpu device (tnpu_limits.c).
 *
 * Referenced by each context of the uid, so that BOs and jobs outliving their file still uncharge.
 */
struct tnpu_user {
	refcount_t ref;
	u32 uid;			/* in the initial user namespace */
	atomic_t contexts;		/* contexts (open files and what outlives them) */
	atomic64_t pinned;		/* bytes of the uid's BOs, as in tnpu_pinned_bytes */
};

/**
 * struct tnpu_usage - what one file's jobs used of each ring (fdinfo), under tdev->lock.
 *
 * Lives in the file's context, so that jobs completing after close() still have it.
 */
struct tnpu_usage {
	u64 busy_ns[TNPU_MAX_QUEUES];	/* device time of completed jobs */
	u64 cycles[TNPU_MAX_QUEUES];	/* their TOTAL_CYCLES counters */
	u32 rings_used;			/* rings that completed a job of the file */
};

/**
 * struct tnpu_flow - one context's jobs of one priority waiting for one ring (tnpu_dispatch.c).
 *
 * Under tdev->lock. @vtime is the device time (fdinfo engine time) its jobs used on the ring,
 * raised to the ring's virtual clock when the flow becomes active again.
 */
struct tnpu_flow {
	struct list_head jobs;		/* tnpu_job.node, submission order */
	struct list_head node;		/* ring->flows[prio] while @jobs is not empty */
	u64 vtime;
};

/** struct tnpu_pt - one device page table (4 KiB) and its CPU-side children. */
struct tnpu_pt {
	__le64 *cpu;
	dma_addr_t dma;
	struct tnpu_pt **children;	/* NULL for leaf tables */
};

/**
 * struct tnpu_ctx - one device address space: a context-table slot, page tables and a VA allocator.
 *
 * Owned by an open file; buffer objects and jobs hold references so it outlives the file until
 * the last BO is freed and the last job retired.
 */
struct tnpu_ctx {
	struct kref ref;
	struct tnpu_device *tdev;
	u32 id;				/* context-table index */
	u64 serial;			/* never reused, unlike @id (ROW_BUSY owner) */
	struct mutex lock;		/* page tables and @mm */
	struct tnpu_pt root;		/* freed at unbind (cpu NULL then) */
	struct drm_mm mm;
	struct list_head node;		/* tdev->ctxs */
	/* MMU fault state (QUERY_FAULT); written once by the IRQ thread under tdev->lock */
	bool faulted;
	u32 fault_code, fault_info, fault_cmd_offset, fault_queue;
	u64 fault_addr;
	struct tnpu_usage usage;	/* fdinfo; under tdev->lock */
	struct tnpu_user *user;		/* charged with it; set by tnpu_open() */
	bool limits_exempt;		/* CAP_SYS_ADMIN opener: limits not enforced */
	atomic_t jobs_pending;		/* submitted, not yet released jobs */
	struct tnpu_flow flows[TNPU_MAX_QUEUES][TNPU_NUM_PRIO];	/* under tdev->lock */
	/* released while the device may hold its translations: tdev->stale_ctxs */
	struct list_head stale_node;
	u64 stale_gen;
};

/** struct tnpu_file - per-open-file state. */
struct tnpu_file {
	struct tnpu_device *tdev;
	struct tnpu_ctx *ctx;
	struct mutex queue_lock;	/* @queues and submission order */
	struct xarray queues;
	struct xarray perfmons;		/* struct tnpu_perfmon, ids 1..DRM_TNPU_MAX_PERFMONS */
};

/** struct tnpu_queue - a user command queue: one drm_sched entity bound to one hardware ring. */
struct tnpu_queue {
	struct drm_sched_entity entity;
	u32 handle;
	u32 ring;
	u32 prio;			/* DRM_TNPU_QUEUE_PRIORITY_* */
};

/** struct tnpu_bo - GEM shmem buffer object mapped into its creator's device address space. */
struct tnpu_bo {
	struct drm_gem_shmem_object base;
	struct tnpu_ctx *ctx;		/* NULL until mapped */
	struct drm_mm_node node;	/* VA range including the guard page */
	u32 flags;
	u64 charged;			/* bytes counted in tnpu_pinned_bytes and @pin_user */
	struct tnpu_user *pin_user;	/* referenced while @charged */
	/* freed while the device may hold its translations: tdev->stale_bos */
	struct list_head stale_node;
	u64 stale_gen;
};

static inline struct tnpu_bo *to_tnpu_bo(struct drm_gem_object *obj)
{
	return container_of(to_drm_gem_shmem_obj(obj), struct tnpu_bo, base);
}

/** struct tnpu_ring - a hardware queue: DMA ring, fence word, in-flight jobs and its scheduler. */
struct tnpu_ring {
	struct tnpu_device *tdev;
	u32 idx;
	struct tnpu_ring_entry *entries;
	dma_addr_t entries_dma;
	u64 *fence;			/* in tdev->fences */
	dma_addr_t fence_dma;
	u32 tail;
	u64 seqno;			/* last seqno handed to the hardware */
	spinlock_t fence_lock;		/* of the hardware fences */
	unsigned long progress;		/* jiffies of the last start or completion */
	struct list_head inflight;	/* jobs handed to the hardware, ring order */
	/* ready lists (tnpu_dispatch.c): active flows per priority, jobs on the ring per class */
	struct list_head flows[TNPU_NUM_PRIO];
	u64 vclock[TNPU_NUM_PRIO];	/* vtime of the flow dispatched last */
	u32 hw_jobs[2];			/* [0] NORMAL and LOW, [1] HIGH, in @inflight */
	u32 queued;			/* jobs in the ready lists */
	/* one counter record per ring entry (TNPU_FEAT_COUNTERS), else NULL */
	struct tnpu_counter_record *counters;
	dma_addr_t counters_dma;
	/* one save record per ring entry (TNPU_FEAT_PREEMPT), else NULL */
	struct tnpu_save_record *saves;
	dma_addr_t saves_dma;
	u64 last_done_ns;		/* ktime_get_ns() of the ring's last completion */
	struct drm_gpu_scheduler sched;
	bool sched_ready;
	/*
	 * HIGH jobs of this ring submitted and not yet seen by run_job (their dependencies, e.g.
	 * the previous job of an inference, not signalled yet); while some wait, NORMAL and LOW
	 * jobs are held off the ring for TNPU_HIGH_HOLD_NS after a HIGH completion
	 * (tnpu_dispatch.c)
	 */
	atomic_t high_waiting;
	u64 hold_until_ns;		/* under tdev->lock */
	struct delayed_work hold_work;	/* dispatches when the hold ends */
	char name[16];
	/* statistics (QUERY_COUNTERS rings[]), under tdev->lock */
	u64 jobs_done, jobs_failed, jobs_timedout, jobs_preempted;
	u64 busy_ns;			/* closed busy periods */
	u64 busy_since;			/* ktime_get_ns() when @inflight became non-empty */
};

struct tnpu_caps_raw {
	u32 version, geom, sram, cluster, acc, dtypes, queues, mmu, mmu_ctx, clock, rates;
	u32 features, cmdbuf;
};

/** struct tnpu_device - one bound tnpu PCI function. */
struct tnpu_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	struct list_head node;		/* tnpu_devices, for timeout_ms changes */
	void __iomem *regs;
	struct tnpu_caps_raw caps;
	u32 num_rings;
	int num_irqs;
	bool polling;
	struct delayed_work poll_work;
	atomic_t irq_pending;

	/*
	 * kernel-owned device structures (bus addresses), freed at unbind even while files (and so
	 * contexts) stay open: DMA memory must not outlive the binding (tnpu_remove())
	 */
	struct tnpu_ctx_entry *ctx_table;
	dma_addr_t ctx_table_dma;
	u64 *fences;
	dma_addr_t fences_dma;
	struct ida ctx_ida;
	struct mutex ctx_lock;		/* @ctxs, @tables_released, the context table */
	struct list_head ctxs;		/* live contexts */
	bool tables_released;

	/*
	 * BOs and contexts the device may still reach through a stale translation (an MMU
	 * invalidate did not complete, or the unbind stopped ioctls before it reset the device):
	 * their pages and page tables are freed only after a later device reset completed
	 * (@reset_gen moved past their stale_gen) or at unbind (tnpu_mmu.c)
	 */
	spinlock_t stale_lock;		/* the two lists and @reset_gen */
	struct list_head stale_bos, stale_ctxs;
	u64 reset_gen;			/* completed device resets */
	struct work_struct stale_work;

	spinlock_t lock;		/* ring state, in-flight lists, hardware queue registers */
	struct mutex reset_lock;	/* serialises recovery and unplug */
	bool unplugged;
	bool in_reset;			/* no HW access: FLR, system/runtime suspend */
	bool sleeping;			/* system suspend: no new job starts (tnpu_jobs_suspend) */
	struct tnpu_ring rings[TNPU_MAX_QUEUES];
	atomic_t next_ring;

	/* debugfs fault injection, consumed by the next job handed to the hardware */
	atomic_t inject_hang, inject_fault, inject_error;
	atomic_t inject_inval_timeout;	/* MMU invalidates to report as timed out */

	/* statistics (QUERY_COUNTERS) */
	atomic64_t jobs_submitted, jobs_completed, jobs_failed, jobs_timedout, resets, mmu_faults;
	atomic64_t hw_errors, job_ids;
	u64 last_done_ctx;		/* ctx serial of the last completion; @lock */

	struct tnpu_coredump *coredump;	/* tnpu_coredump.c */
};

static inline struct tnpu_device *to_tnpu(struct drm_device *drm)
{
	return container_of(drm, struct tnpu_device, drm);
}

/**
 * struct tnpu_fence - a job's hardware fence (the parent of its scheduler fences).
 *
 * Its ops are module code and its lock is its ring's, while its scheduler fence (which a sync_file,
 * syncobj or dma_resv may keep long after the job) points at the ring's scheduler for its timeline
 * name. So from dma_fence_init() in run_job it holds a reference on the DRM device (tdev, the ring
 * lock and the scheduler stay allocated after an unbind), and from its job's release one on the
 * module (rmmod is refused while it lives; module exit waits for the fences of jobs released during
 * exit). Both are dropped after its release, from tnpu_cleanup_wq (drm_dev_put() may sleep).
 */
struct tnpu_fence {
	struct dma_fence base;		/* first: freed with dma_fence_free() */
	struct tnpu_device *tdev;	/* referenced once initialised */
	bool module_ref;
	struct work_struct free_work;
};

/** struct tnpu_job - one submitted command buffer. */
struct tnpu_job {
	struct drm_sched_job base;
	struct tnpu_device *tdev;
	struct tnpu_ctx *ctx;
	struct tnpu_ring *ring;
	u32 queue_handle;
	u32 prio;			/* its queue's DRM_TNPU_QUEUE_PRIORITY_* */
	u64 id;
	u64 cmd_va;
	u32 cmd_len;
	struct drm_gem_object *cmd_bo;	/* in @bos (its reference), for the coredump */
	u64 cmd_offset;			/* of the command buffer in @cmd_bo */
	u64 client_id;			/* drm_file client_id of the submitter (fdinfo, traces) */
	u64 hw_seqno;
	struct dma_fence *hw_fence;	/* allocated at submit, initialised in run_job */
	bool hw_fence_init;
	bool run_called;		/* run_job saw the job (scheduler work item only) */
	struct dma_fence_cb scheduled_cb;	/* on s_fence->scheduled: tnpu_job_armed() */
	bool pm_ref;			/* holds a runtime-PM reference (SUBMIT to release) */
	struct list_head node;		/* its flow's jobs, then ring->inflight */
	struct drm_gem_object **bos;
	u32 *bo_flags;
	u32 bo_count;
	struct drm_gem_object *counters_bo;
	struct iosys_map counters_map;
	u64 counters_offset;
	struct tnpu_perfmon *perfmon;	/* SUBMIT perfmon_id, referenced */
	u32 counters_slot;		/* ring entry index: its counter record */
	/*
	 * preemption (tnpu_dispatch.c): its entry is PREEMPTIBLE, Q_CTRL.PREEMPT was written for
	 * it, it continues from @save (a RESUME entry)
	 */
	bool preemptible, preempt_asked, resume;
	bool high_counted;		/* in ring->high_waiting until run_job (or the kill path) */
	u32 save_slot;			/* ring entry index: its save record */
	struct tnpu_save_record save;
	u64 run_ns;			/* ktime_get_ns() when handed to the ring */
	u64 busy_ns;			/* its engine time, set at completion (fdinfo) */
	bool inject_hang, inject_fault, inject_error;
	struct work_struct cleanup;
};

static inline struct tnpu_job *to_tnpu_job(struct drm_sched_job *job)
{
	return container_of(job, struct tnpu_job, base);
}

static inline u32 tnpu_read(struct tnpu_device *tdev, u32 reg)
{
	return readl(tdev->regs + reg);
}

static inline void tnpu_write(struct tnpu_device *tdev, u32 reg, u32 val)
{
	writel(val, tdev->regs + reg);
}

/*
 * registers.md: every LO/HI pair and counter accepts one aligned 8-byte access at the LO offset,
 * which also reads both halves atomically (on 32-bit builds readq/writeq fall back to lo-hi).
 */
static inline u64 tnpu_read64(struct tnpu_device *tdev, u32 reg)
{
	return readq(tdev->regs + reg);
}

static inline void tnpu_write64(struct tnpu_device *tdev, u32 reg, u64 val)
{
	writeq(val, tdev->regs + reg);
}

/*
 * A function in FLR or surprise removal reads all ones; ID reads "TNPU" whenever the device
 * answers, even during CTRL.RESET. Status registers read then are not acted upon.
 */
static inline bool tnpu_hw_absent(struct tnpu_device *tdev)
{
	return tnpu_read(tdev, TNPU_REG_ID) == 0xffffffffu;
}

static inline u32 tnpu_qread(struct tnpu_device *tdev, u32 q, u32 reg)
{
	return tnpu_read(tdev, TNPU_Q_BASE(q) + reg);
}

static inline void tnpu_qwrite(struct tnpu_device *tdev, u32 q, u32 reg, u32 val)
{
	tnpu_write(tdev, TNPU_Q_BASE(q) + reg, val);
}

/* tnpu_hw.c */
int tnpu_hw_init(struct tnpu_device *tdev);
void tnpu_hw_program(struct tnpu_device *tdev);
void tnpu_hw_reset(struct tnpu_device *tdev);
void tnpu_hw_disable(struct tnpu_device *tdev);
int tnpu_irq_init(struct tnpu_device *tdev);
void tnpu_irq_fini(struct tnpu_device *tdev);
const char *tnpu_err_name(u32 code);

/* tnpu_mmu.c */
struct tnpu_ctx *tnpu_ctx_create(struct tnpu_device *tdev);
void tnpu_ctx_put(struct tnpu_ctx *ctx);
static inline struct tnpu_ctx *tnpu_ctx_get(struct tnpu_ctx *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

int tnpu_mmu_map(struct tnpu_ctx *ctx, u64 va, struct sg_table *sgt, u64 size, bool writable);
bool tnpu_mmu_unmap(struct tnpu_ctx *ctx, u64 va, u64 size);
bool tnpu_mmu_invalidate(struct tnpu_device *tdev);
void tnpu_mmu_init_stale(struct tnpu_device *tdev);
void tnpu_mmu_reset_done(struct tnpu_device *tdev);
void tnpu_mmu_quarantine_bo(struct tnpu_bo *bo);
void tnpu_mmu_stale_count(struct tnpu_device *tdev, u32 *bos, u32 *ctxs);
void tnpu_mmu_release_tables(struct tnpu_device *tdev);

/* tnpu_gem.c */
struct drm_gem_object *tnpu_gem_create_object(struct drm_device *drm, size_t size);
void tnpu_gem_unmap_dma(struct tnpu_bo *bo);
void tnpu_gem_release(struct tnpu_bo *bo);
struct drm_gem_object *tnpu_bo_lookup(struct drm_file *file, u32 handle);
int tnpu_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file);
int tnpu_ioctl_bo_info(struct drm_device *drm, void *data, struct drm_file *file);
int tnpu_ioctl_bo_wait(struct drm_device *drm, void *data, struct drm_file *file);

/* tnpu_sched.c */
int tnpu_job_module_init(void);
void tnpu_job_module_exit(void);
int tnpu_rings_init(struct tnpu_device *tdev);
void tnpu_rings_process(struct tnpu_device *tdev, u32 irq_status);
void tnpu_jobs_unplug(struct tnpu_device *tdev);
void tnpu_pci_reset_prepare(struct tnpu_device *tdev);
void tnpu_pci_reset_done(struct tnpu_device *tdev);
void tnpu_jobs_suspend(struct tnpu_device *tdev);
void tnpu_jobs_resume(struct tnpu_device *tdev);
int tnpu_jobs_runtime_suspend(struct tnpu_device *tdev);
void tnpu_jobs_runtime_resume(struct tnpu_device *tdev);
void tnpu_rings_set_timeout(struct tnpu_device *tdev, unsigned int ms);
void tnpu_job_created(void);
void tnpu_job_armed(struct tnpu_job *job);
void tnpu_job_destroyed(void);
struct dma_fence *tnpu_fence_alloc(void);
void tnpu_fence_job_put(struct tnpu_job *job);

/* tnpu_dispatch.c */
void tnpu_ctx_init_flows(struct tnpu_ctx *ctx);
void tnpu_ring_init_flows(struct tnpu_ring *ring);
void tnpu_ring_queue(struct tnpu_ring *ring, struct tnpu_job *job);
void tnpu_ring_dispatch(struct tnpu_ring *ring);
void tnpu_rings_dispatch(struct tnpu_device *tdev);
void tnpu_ring_job_done(struct tnpu_ring *ring, struct tnpu_job *job);
void tnpu_ring_job_preempted(struct tnpu_ring *ring, struct tnpu_job *job);
void tnpu_ring_high_done(struct tnpu_ring *ring);
void tnpu_ring_hold_work(struct work_struct *work);
void tnpu_job_high_uncount(struct tnpu_job *job);
void tnpu_ring_fail_queued(struct tnpu_ring *ring, int err);
void tnpu_ring_write_entry(struct tnpu_ring *ring, struct tnpu_job *job);
void tnpu_ring_kick(struct tnpu_ring *ring);

/* tnpu_queue.c */
void tnpu_file_queues_fini(struct tnpu_file *tfile);
int tnpu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file);
int tnpu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file);

/* tnpu_submit.c */
int tnpu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
void tnpu_job_release(struct tnpu_job *job);

/* tnpu_perfmon.c */
void tnpu_job_write_counters(struct tnpu_job *job, int status, u32 hw_error, bool captured);
void tnpu_job_write_status(struct tnpu_job *job, int status);
void tnpu_perfmon_put(struct tnpu_perfmon *perfmon);
struct tnpu_perfmon *tnpu_perfmon_find(struct tnpu_file *tfile, u32 id);
void tnpu_file_perfmons_fini(struct tnpu_file *tfile);
int tnpu_ioctl_perfmon_create(struct drm_device *drm, void *data, struct drm_file *file);
int tnpu_ioctl_perfmon_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int tnpu_ioctl_perfmon_get_values(struct drm_device *drm, void *data, struct drm_file *file);

/* tnpu_fdinfo.c */
void tnpu_show_fdinfo(struct drm_printer *p, struct drm_file *file);

/* tnpu_pm.c */
extern const struct dev_pm_ops tnpu_pm_ops;
void tnpu_pm_init(struct tnpu_device *tdev);
void tnpu_pm_fini(struct tnpu_device *tdev);
int tnpu_pm_get(struct tnpu_device *tdev);
void tnpu_pm_put(struct tnpu_device *tdev);
void tnpu_pm_put_quiet(struct tnpu_device *tdev);
int tnpu_pm_get_if_active(struct tnpu_device *tdev);

/* tnpu_limits.c */
extern unsigned int tnpu_max_contexts_per_user;
extern unsigned int tnpu_max_pinned_mb_per_user;
extern unsigned int tnpu_max_jobs_per_file;
struct tnpu_user *tnpu_user_get_current(void);
void tnpu_user_put(struct tnpu_user *user);
static inline struct tnpu_user *tnpu_user_get(struct tnpu_user *user)
{
	refcount_inc(&user->ref);
	return user;
}

int tnpu_user_charge_context(struct tnpu_user *user, bool exempt);
bool tnpu_user_may_dump(struct tnpu_ctx *ctx);
void tnpu_limits_exit(void);
void tnpu_user_uncharge_context(struct tnpu_user *user);

/* tnpu_fops.c */
extern const struct file_operations tnpu_fops;

/* tnpu_coredump.c */
int tnpu_coredump_init(struct tnpu_device *tdev);
void tnpu_coredump_fini(struct tnpu_device *tdev);
void tnpu_coredump_capture(struct tnpu_job *job, u32 reason, u32 code, u32 info, u32 cmd_off,
			   u64 addr, bool has_off);

/* tnpu_debugfs.c */
void tnpu_debugfs_init(struct tnpu_device *tdev);

#endif /* __TNPU_DRV_H__ */
