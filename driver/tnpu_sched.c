// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu scheduler side: the per-ring drm_sched callbacks (run_job, timedout_job, free_job),
 * ring entries and doorbells, interrupt to fence, job errors and MMU faults, timeout recovery,
 * PCI function reset, system sleep, unplug and the module-wide job count.
 *
 * Locking: tdev->lock (spinlock) protects every ring's tail/seqno/in-flight list and the queue
 * registers; it is taken by run_job, the IRQ thread, recovery, unplug and fdinfo. Nothing under
 * it sleeps or allocates. tdev->reset_lock serialises recovery, function reset, system sleep
 * and unplug.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/module.h>

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"
#include "tnpu_coredump.h"
#include "tnpu_trace.h"

static struct workqueue_struct *tnpu_cleanup_wq;

static const char *tnpu_fence_driver_name(struct dma_fence *fence)
{
	return "tnpu";
}

static const char *tnpu_fence_timeline_name(struct dma_fence *fence)
{
	return "tnpu-ring";
}

static atomic_t tnpu_live_fences = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(tnpu_jobs_gone);

static struct tnpu_fence *to_tnpu_fence(struct dma_fence *fence)
{
	return container_of(fence, struct tnpu_fence, base);
}

/* After the fence's release: its memory, then the device and module references it held. */
static void tnpu_fence_free_work(struct work_struct *work)
{
	struct tnpu_fence *f = container_of(work, struct tnpu_fence, free_work);
	struct tnpu_device *tdev = f->tdev;
	bool module_ref = f->module_ref;

	dma_fence_free(&f->base);
	/* may be the device's last reference: tears down the schedulers, so not in their work */
	drm_dev_put(&tdev->drm);
	if (module_ref) {
		if (atomic_dec_and_test(&tnpu_live_fences))
			wake_up_all(&tnpu_jobs_gone);
		/* module exit drains tnpu_cleanup_wq, so the rest of this function still exists */
		module_put(THIS_MODULE);
	}
}

/* dma_fence_release(): any context, so the references go from the cleanup workqueue */
static void tnpu_fence_release(struct dma_fence *fence)
{
	struct tnpu_fence *f = to_tnpu_fence(fence);

	queue_work(tnpu_cleanup_wq, &f->free_work);
}

static const struct dma_fence_ops tnpu_fence_ops = {
	.get_driver_name = tnpu_fence_driver_name,
	.get_timeline_name = tnpu_fence_timeline_name,
	.release = tnpu_fence_release,
};

/* SUBMIT: run_job must not allocate */
struct dma_fence *tnpu_fence_alloc(void)
{
	struct tnpu_fence *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	BUILD_BUG_ON(offsetof(struct tnpu_fence, base));
	return f ? &f->base : NULL;
}

/*
 * run_job: no allocation; a device reference is a kref_get(). Each hardware fence is its own
 * timeline: the dispatcher completes a ring's jobs out of run_job order (a HIGH job overtakes
 * waiting NORMAL ones), and fences of one context must signal in seqno order.
 */
static void tnpu_fence_init(struct tnpu_job *job)
{
	struct tnpu_fence *f = to_tnpu_fence(job->hw_fence);
	struct tnpu_ring *ring = job->ring;

	f->tdev = job->tdev;
	drm_dev_get(&job->tdev->drm);
	INIT_WORK(&f->free_work, tnpu_fence_free_work);
	dma_fence_init(&f->base, &tnpu_fence_ops, &ring->fence_lock, dma_fence_context_alloc(1), 1);
	job->hw_fence_init = true;
}

/*
 * The job's release. While its job lives, the job's module reference covers the fence; from here
 * on it may be held by its scheduler fence (a sync_file, syncobj or dma_resv keeps that one), so
 * it takes a module reference before it drops the job's (the job still holds the module, so exit
 * cannot have begun), unless the job's is the only one left: nothing can take a new reference then
 * (the scheduler fence, the only other holder, has dropped its own), and the release work that
 * follows is drained by module exit like the job's own. The job holds a reference until this put,
 * so the release cannot run before module_ref is set.
 */
void tnpu_fence_job_put(struct tnpu_job *job)
{
	struct tnpu_fence *f;

	if (!job->hw_fence)
		return;
	f = to_tnpu_fence(job->hw_fence);
	if (!job->hw_fence_init) {
		kfree(f);
		return;
	}
	if (kref_read(&f->base.refcount) > 1) {
		__module_get(THIS_MODULE);
		atomic_inc(&tnpu_live_fences);
		f->module_ref = true;
	}
	dma_fence_put(&f->base);
}

static bool tnpu_err_is_mmu(u32 code)
{
	return code >= TNPU_ERR_MMU_NOT_PRESENT && code <= TNPU_ERR_BUS;
}

/* Takes @job off the hardware and signals its fence with @err. Called with tdev->lock held. */
static void tnpu_job_signal(struct tnpu_job *job, int err)
{
	struct tnpu_device *tdev = job->tdev;
	struct tnpu_ring *ring = job->ring;

	list_del_init(&job->node);
	tnpu_ring_job_done(ring, job);
	if (list_empty(&ring->inflight))
		ring->busy_ns += ktime_get_ns() - ring->busy_since;
	if (err) {
		dma_fence_set_error(job->hw_fence, err);
		atomic64_inc(&tdev->jobs_failed);
		ring->jobs_failed++;
	} else {
		atomic64_inc(&tdev->jobs_completed);
		ring->jobs_done++;
	}
	if (job->prio == DRM_TNPU_QUEUE_PRIORITY_HIGH)
		tnpu_ring_high_done(ring);
	trace_tnpu_job_complete(job, err);
	dma_fence_signal(job->hw_fence);
}

/* Signals every job whose seqno the device wrote to the ring's fence. tdev->lock held. */
static void tnpu_ring_retire(struct tnpu_ring *ring)
{
	u64 done = le64_to_cpu(READ_ONCE(*(__le64 *)ring->fence));
	struct tnpu_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, &ring->inflight, node) {
		/*
		 * queues.md "Preemption": a preempted entry's record (state last) is in memory
		 * before HEAD moves, so before any later entry's fence; its seqno tells it from
		 * the record a RESUME entry was given
		 */
		if (job->preemptible) {
			struct tnpu_save_record *rec = &ring->saves[job->save_slot];

			if (le32_to_cpu(READ_ONCE(rec->state)) == TNPU_SAVE_PREEMPTED) {
				dma_rmb();
				if (le64_to_cpu(READ_ONCE(rec->seqno)) == job->hw_seqno) {
					tnpu_ring_job_preempted(ring, job);
					continue;
				}
			}
		}
		if (job->hw_seqno > done)
			break;
		/* queues.md: the counter record is in memory before the fence */
		tnpu_job_write_counters(job, 0, 0, true);
		ring->progress = jiffies;
		tnpu_job_signal(job, 0);
	}
}

/* A ring halted on a job error: fail that job, mark its context on MMU faults, resume. */
static void tnpu_ring_error(struct tnpu_ring *ring)
{
	struct tnpu_device *tdev = ring->tdev;
	u32 q = ring->idx;
	u32 code = tnpu_qread(tdev, q, TNPU_Q_ERR_CODE);
	u32 info = tnpu_qread(tdev, q, TNPU_Q_ERR_INFO);
	u32 cmd_off = tnpu_qread(tdev, q, TNPU_Q_ERR_CMD_OFFSET);
	u32 ctx_id = tnpu_qread(tdev, q, TNPU_Q_ERR_CTX);
	u64 addr = tnpu_read64(tdev, TNPU_Q_BASE(q) + TNPU_Q_ERR_ADDR);
	u64 seqno = tnpu_read64(tdev, TNPU_Q_BASE(q) + TNPU_Q_ERR_SEQNO);
	bool mmu = tnpu_err_is_mmu(code);
	struct tnpu_job *job;
	int err = mmu ? -EFAULT : -EIO;

	tnpu_ring_retire(ring);
	atomic64_inc(&tdev->hw_errors);
	if (mmu)
		atomic64_inc(&tdev->mmu_faults);
	dev_err_ratelimited(tdev->drm.dev,
			    "queue %u ctx %u seqno %llu: job error %s (%u) info 0x%x cmd_offset 0x%x addr 0x%llx%s\n",
			    q, ctx_id, seqno, tnpu_err_name(code), code, info, cmd_off, addr,
			    mmu ? " (MMU fault)" : "");

	job = list_first_entry_or_null(&ring->inflight, struct tnpu_job, node);
	if (job && job->hw_seqno == seqno) {
		struct tnpu_ctx *ctx = job->ctx;

		if (mmu && !ctx->faulted) {
			ctx->fault_code = code;
			ctx->fault_info = info;
			ctx->fault_cmd_offset = cmd_off;
			ctx->fault_addr = addr;
			ctx->fault_queue = job->queue_handle;
			/* pairs with READ_ONCE in submit and run_job */
			smp_wmb();
			WRITE_ONCE(ctx->faulted, true);
		}
		/* before SKIP: the queue's error registers still describe this job */
		tnpu_coredump_capture(job, mmu ? TNPU_COREDUMP_MMU_FAULT : TNPU_COREDUMP_JOB_ERROR,
				      code, info, cmd_off, addr, true);
		tnpu_job_write_counters(job, err, code, true);
		tnpu_job_signal(job, err);
	} else {
		dev_warn_ratelimited(tdev->drm.dev, "queue %u: error for unknown seqno %llu\n",
				     q, seqno);
	}
	ring->progress = jiffies;
	/* queues.md: SKIP drops the failed entry and resumes with the next one */
	tnpu_qwrite(tdev, q, TNPU_Q_CTRL, TNPU_Q_CTRL_ENABLE | TNPU_Q_CTRL_SKIP);
}

void tnpu_rings_process(struct tnpu_device *tdev, u32 irq_status)
{
	u32 q;

	spin_lock(&tdev->lock);
	if (tdev->unplugged || tdev->in_reset || tnpu_hw_absent(tdev)) {
		spin_unlock(&tdev->lock);
		return;
	}
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];

		if (tnpu_qread(tdev, q, TNPU_Q_STATUS) & TNPU_Q_STATUS_ERROR)
			tnpu_ring_error(ring);
		tnpu_ring_retire(ring);
		tnpu_ring_dispatch(ring);
	}
	spin_unlock(&tdev->lock);
}

/*
 * A job that ends without reaching the hardware: the scheduler signals its out-fence with @err
 * right after run_job returns, so its counters BO status is written here, first (uapi.md: user
 * space reads the job's result there). It still gets its hardware fence, signalled with @err: as
 * the scheduler fence's parent it keeps the device (the scheduler's name) for as long as the
 * out-fence lives.
 */
static struct dma_fence *tnpu_job_cancel(struct tnpu_job *job, int err)
{
	struct tnpu_device *tdev = job->tdev;

	tnpu_job_write_status(job, err);
	spin_lock(&tdev->lock);
	tnpu_fence_init(job);
	spin_unlock(&tdev->lock);
	dma_fence_set_error(job->hw_fence, err);
	dma_fence_signal(job->hw_fence);
	return dma_fence_get(job->hw_fence);
}

/*
 * drm_sched run_job: hand the job to the dispatcher, which puts it on its ring when its priority
 * and its file's share allow (tnpu_dispatch.c). No allocation and no runtime-PM here (fence
 * signalling path): the hardware fence was allocated at submit.
 */
static struct dma_fence *tnpu_job_run(struct drm_sched_job *sched_job)
{
	struct tnpu_job *job = to_tnpu_job(sched_job);
	struct tnpu_ring *ring = job->ring;
	struct tnpu_device *tdev = job->tdev;
	int err;

	job->run_called = true;
	tnpu_job_high_uncount(job);
	/*
	 * drm_sched_resubmit_jobs() after drm_sched_stop() in the timeout handler: the job keeps
	 * its hardware fence (and its ring entry, which recovery rewrites after a reset).
	 */
	if (job->hw_fence_init)
		return dma_fence_get(job->hw_fence);
	err = sched_job->s_fence->finished.error;
	if (unlikely(err))	/* the finished fence already carries it */
		return tnpu_job_cancel(job, err);
	/* uapi.md: jobs of a faulted context that have not started are cancelled */
	if (READ_ONCE(job->ctx->faulted))
		return tnpu_job_cancel(job, -ECANCELED);

	spin_lock(&tdev->lock);
	if (tdev->unplugged) {
		spin_unlock(&tdev->lock);
		return tnpu_job_cancel(job, -ENODEV);
	}
	tnpu_fence_init(job);
	tnpu_ring_queue(ring, job);
	/* not during a PCI function reset or sleep: tnpu_unhold() dispatches */
	tnpu_ring_dispatch(ring);
	spin_unlock(&tdev->lock);

	return dma_fence_get(job->hw_fence);
}

/*
 * A job left in a destroyed queue (QUEUE_DESTROY, close) is cancelled by drm_sched_entity_fini()
 * without run_job: drm_sched_entity_kill_jobs_work() signals its scheduled fence, then its
 * finished fence (the out-fence) with -ESRCH. This callback on the scheduled fence is therefore
 * the driver's last chance to write the job's status before the out-fence signals (the kill path
 * signals the scheduled fence since a 6.12.y stable fix, which the Debian 6.12 kernel we build
 * against has). For every other job the scheduled fence signals after run_job, which has handed
 * the job to its ring or written its status (tnpu_job_cancel()). Runs under the fence's lock: no
 * sleeping, no allocation.
 */
static void tnpu_job_scheduled(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct tnpu_job *job = container_of(cb, struct tnpu_job, scheduled_cb);

	if (!job->run_called) {
		tnpu_job_high_uncount(job);
		tnpu_job_write_status(job, -ESRCH);
	}
}

/* SUBMIT, after drm_sched_job_arm() and before the push: neither fence can have signalled. */
void tnpu_job_armed(struct tnpu_job *job)
{
	/* the job is freed after its finished fence, so it outlives the callback */
	dma_fence_add_callback(&job->base.s_fence->scheduled, &job->scheduled_cb,
			       tnpu_job_scheduled);
}

/*
 * The oldest job on its ring's hardware, which has made no progress for timeout_ms. Jobs in the
 * ready lists never expire: they are not on the device. tdev->lock held.
 */
static bool tnpu_job_expired(struct tnpu_job *job)
{
	struct tnpu_ring *ring = job->ring;

	return !list_empty(&job->node) &&
	       list_first_entry(&ring->inflight, struct tnpu_job, node) == job &&
	       time_after(jiffies, ring->progress + msecs_to_jiffies(tnpu_timeout_ms));
}

/*
 * After a device reset (ours or a PCI function reset): program the device again and write every
 * job that was on the hardware and did not complete back into its emptied ring, in order.
 * tdev->lock held.
 */
static void tnpu_restart(struct tnpu_device *tdev)
{
	u32 q;

	tnpu_hw_program(tdev);
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];
		struct tnpu_job *job;

		ring->progress = jiffies;
		if (list_empty(&ring->inflight))
			continue;
		list_for_each_entry(job, &ring->inflight, node) {
			job->inject_hang = false;
			tnpu_ring_write_entry(ring, job);
		}
		tnpu_ring_kick(ring);
	}
}

/* PCI function reset (FLR, sysfs "reset"): hold off recovery, then restart like after a timeout. */
static void tnpu_hold(struct tnpu_device *tdev)
{
	mutex_lock(&tdev->reset_lock);
	spin_lock(&tdev->lock);
	tdev->in_reset = true;
	spin_unlock(&tdev->lock);
}

/* The device is back at reset defaults: program it, rewrite what was in flight. */
static void tnpu_unhold(struct tnpu_device *tdev, const char *why, bool count_reset)
{
	u32 q;

	spin_lock(&tdev->lock);
	if (!tdev->unplugged) {
		/* the fence words are host memory: completions before the reset still count */
		for (q = 0; q < tdev->num_rings; q++)
			tnpu_ring_retire(&tdev->rings[q]);
		dev_dbg(tdev->drm.dev, "%s: resubmitting in-flight jobs\n", why);
		if (count_reset)
			trace_tnpu_reset(tdev, -1, why);
		tnpu_restart(tdev);
		if (count_reset)
			atomic64_inc(&tdev->resets);
	}
	tdev->in_reset = false;
	if (!tdev->unplugged)
		tnpu_rings_dispatch(tdev);
	spin_unlock(&tdev->lock);
	mutex_unlock(&tdev->reset_lock);
}

void tnpu_pci_reset_prepare(struct tnpu_device *tdev)
{
	tnpu_hold(tdev);
}

void tnpu_pci_reset_done(struct tnpu_device *tdev)
{
	/* a function reset drops the translations the device cached, as CTRL.RESET does */
	tnpu_mmu_reset_done(tdev);
	dev_info(tdev->drm.dev, "function reset: resubmitting in-flight jobs\n");
	tnpu_unhold(tdev, "function reset", true);
}

/* How long a system suspend waits for the jobs on the hardware (at most timeout_ms) */
#define TNPU_SLEEP_DRAIN_MS	5000u

/* Some job is on a ring's hardware. tdev->lock held. */
static bool tnpu_rings_busy(struct tnpu_device *tdev)
{
	u32 q;

	for (q = 0; q < tdev->num_rings; q++)
		if (!list_empty(&tdev->rings[q].inflight))
			return true;
	return false;
}

/*
 * System sleep (suspend, freeze, poweroff). The device must be quiet before the system sleeps or
 * a hibernation image is taken, and whatever state it comes back in (kept across s2idle, thaw and
 * pm_test; reset values after S3 or restore), no job may run twice. So no new job starts, and the
 * jobs on the hardware complete or stop at their next preemption point (they continue from their
 * save records after resume) for up to TNPU_SLEEP_DRAIN_MS. A job still running then is abandoned
 * by a device reset and runs again from its start after resume, as after a recovery. The device
 * is left disabled with its interrupts masked. reset_lock is not held while the system sleeps
 * (suspend and resume may run in different PM workers): in_reset holds off recovery, the
 * interrupt thread and dispatch until resume.
 */
void tnpu_jobs_suspend(struct tnpu_device *tdev)
{
	unsigned int drain_ms = min(TNPU_SLEEP_DRAIN_MS, READ_ONCE(tnpu_timeout_ms));
	unsigned long deadline = jiffies + msecs_to_jiffies(drain_ms);
	bool busy, present;
	u32 q;

	spin_lock(&tdev->lock);
	tdev->sleeping = true;
	spin_unlock(&tdev->lock);
	for (;;) {
		/* the interrupt thread's work, polled: completions, errors, preemption requests */
		tnpu_rings_process(tdev, 0);
		spin_lock(&tdev->lock);
		busy = !tdev->unplugged && !tdev->in_reset && !tnpu_hw_absent(tdev) &&
		       tnpu_rings_busy(tdev);
		spin_unlock(&tdev->lock);
		if (!busy || time_after(jiffies, deadline))
			break;
		usleep_range(500, 1000);
	}

	mutex_lock(&tdev->reset_lock);
	spin_lock(&tdev->lock);
	tdev->in_reset = true;
	present = !tdev->unplugged && !tnpu_hw_absent(tdev);
	busy = present && tnpu_rings_busy(tdev);
	spin_unlock(&tdev->lock);
	if (present) {
		tnpu_write(tdev, TNPU_REG_IRQ_MASK, 0xffffffff);
		if (busy) {
			dev_warn(tdev->drm.dev,
				 "system suspend: jobs still running after %u ms; resetting the device, they run again after resume\n",
				 drain_ms);
			tnpu_hw_reset(tdev);
			trace_tnpu_reset(tdev, -1, "suspend");
			atomic64_inc(&tdev->resets);
		} else {
			/* idle: stop fetching; resume programs the rings again */
			tnpu_write(tdev, TNPU_REG_CTRL, 0);
		}
		/* completions up to the reset count: those jobs are not written again on resume */
		spin_lock(&tdev->lock);
		for (q = 0; q < tdev->num_rings; q++)
			tnpu_ring_retire(&tdev->rings[q]);
		spin_unlock(&tdev->lock);
	}
	mutex_unlock(&tdev->reset_lock);
}

/* The device is programmed again; jobs a suspend reset abandoned run again, queued ones start. */
void tnpu_jobs_resume(struct tnpu_device *tdev)
{
	mutex_lock(&tdev->reset_lock);
	spin_lock(&tdev->lock);
	tdev->sleeping = false;
	spin_unlock(&tdev->lock);
	tnpu_unhold(tdev, "resume", false);
}

/*
 * Runtime suspend (tnpu_pm.c): only an idle device, i.e. no job on any ring (jobs hold a
 * runtime-PM reference from SUBMIT, so this is a safety check). Hardware access is held off as
 * for a system suspend, without keeping reset_lock across the suspended period.
 */
int tnpu_jobs_runtime_suspend(struct tnpu_device *tdev)
{
	int ret = 0;
	u32 q;

	mutex_lock(&tdev->reset_lock);
	spin_lock(&tdev->lock);
	for (q = 0; q < tdev->num_rings; q++)
		if (!list_empty(&tdev->rings[q].inflight) || tdev->rings[q].queued)
			ret = -EBUSY;
	if (!ret && !tdev->in_reset) {
		tdev->in_reset = true;
		if (!tdev->unplugged)
			tnpu_write(tdev, TNPU_REG_IRQ_MASK, 0xffffffff);
	}
	spin_unlock(&tdev->lock);
	mutex_unlock(&tdev->reset_lock);
	return ret;
}

/* Runtime resume: the system-resume path (program the device, rewrite what was in flight). */
void tnpu_jobs_runtime_resume(struct tnpu_device *tdev)
{
	mutex_lock(&tdev->reset_lock);
	tnpu_unhold(tdev, "runtime resume", false);
}

/*
 * Device reset after the oldest job on @ring timed out: every ring restarts empty; jobs that were
 * on the hardware and did not complete are written to the rings again, the guilty job fails with
 * -ETIMEDOUT. The scheduler of @ring is stopped: none of its jobs is freed meanwhile.
 */
static void tnpu_recover(struct tnpu_device *tdev, struct tnpu_ring *ring)
{
	struct tnpu_job *guilty;
	u32 q;

	mutex_lock(&tdev->reset_lock);
	spin_lock(&tdev->lock);
	/* unplugged, or the system went to sleep since the timeout check (resume restarts it) */
	if (tdev->unplugged || tdev->in_reset)
		goto out;
	for (q = 0; q < tdev->num_rings; q++)
		tnpu_ring_retire(&tdev->rings[q]);
	/* it completed after all, or a concurrent recovery restarted it */
	guilty = list_first_entry_or_null(&ring->inflight, struct tnpu_job, node);
	if (!guilty || !tnpu_job_expired(guilty))
		goto out;

	list_del_init(&guilty->node);
	q = guilty->ring->idx;
	dev_err_ratelimited(tdev->drm.dev,
			    "queue %u: job %llu (seqno %llu) timed out after %u ms (head %u tail %u status 0x%x), resetting device\n",
			    q, guilty->id, guilty->hw_seqno, tnpu_timeout_ms,
			    tnpu_qread(tdev, q, TNPU_Q_HEAD), tnpu_qread(tdev, q, TNPU_Q_TAIL),
			    tnpu_qread(tdev, q, TNPU_Q_STATUS));
	trace_tnpu_job_timeout(guilty);
	/* the registers and the ring as the hang left them, before the reset clears them */
	tnpu_coredump_capture(guilty, TNPU_COREDUMP_TIMEOUT, 0, 0, 0, 0, false);
	/*
	 * The reset waits up to 200 ms, not under the spinlock: in_reset keeps the interrupt
	 * thread, dispatch and the timeout check off the device, reset_lock every other reset.
	 */
	tdev->in_reset = true;
	spin_unlock(&tdev->lock);
	tnpu_hw_reset(tdev);
	spin_lock(&tdev->lock);
	tdev->in_reset = false;
	trace_tnpu_reset(tdev, q, "timeout");
	/*
	 * The fence words again, now that the device has stopped: a job that completed between the
	 * first retire and the reset is done, not rewritten into its ring to run twice.
	 */
	for (q = 0; q < tdev->num_rings; q++)
		tnpu_ring_retire(&tdev->rings[q]);
	tnpu_restart(tdev);
	atomic64_inc(&tdev->resets);
	atomic64_inc(&tdev->jobs_timedout);
	guilty->ring->jobs_timedout++;
	tnpu_job_write_counters(guilty, -ETIMEDOUT, 0, false);
	list_add(&guilty->node, &guilty->ring->inflight);	/* tnpu_job_signal() removes it */
	tnpu_job_signal(guilty, -ETIMEDOUT);
	tnpu_rings_dispatch(tdev);
out:
	spin_unlock(&tdev->lock);
	mutex_unlock(&tdev->reset_lock);
}

/*
 * The scheduler's timer fires after timeout_ms without a completion on this ring (sched->timeout
 * follows the module parameter). Stop the scheduler (which puts @sched_job back on its pending
 * list), check whether the device still made progress, reset it if not, then hand the pending jobs
 * their hardware fences again and start the scheduler: jobs keep their fences across a reset.
 */
static enum drm_gpu_sched_stat tnpu_job_timedout(struct drm_sched_job *sched_job)
{
	struct tnpu_job *job = to_tnpu_job(sched_job), *oldest;
	struct drm_gpu_scheduler *sched = sched_job->sched;
	struct tnpu_ring *ring = job->ring;
	struct tnpu_device *tdev = job->tdev;
	bool expired = false;

	drm_sched_stop(sched, sched_job);

	/* driver-notes.md: first check whether the device is still making progress */
	spin_lock(&tdev->lock);
	if (!tdev->unplugged && !tdev->in_reset && !tnpu_hw_absent(tdev)) {
		if (tnpu_qread(tdev, ring->idx, TNPU_Q_STATUS) & TNPU_Q_STATUS_ERROR)
			tnpu_ring_error(ring);
		tnpu_ring_retire(ring);
		tnpu_ring_dispatch(ring);
		/*
		 * No doorbell is ever rung twice: the device fetches until HEAD == TAIL after every
		 * doorbell and completion (queues.md), so a ring idle with entries left is a device
		 * fault and recovered like a hang (tnpu_stress_test many_rings_no_lost_doorbell).
		 * The scheduler's oldest job may still wait in the ready lists: the ring's oldest
		 * job on the hardware is the one that can have hung.
		 */
		oldest = list_first_entry_or_null(&ring->inflight, struct tnpu_job, node);
		expired = oldest && tnpu_job_expired(oldest);
	}
	spin_unlock(&tdev->lock);

	if (expired)
		tnpu_recover(tdev, ring);
	/* the guilty job's fence carries -ETIMEDOUT: drm_sched_start() passes it on */
	drm_sched_resubmit_jobs(sched);
	drm_sched_start(sched);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void tnpu_job_cleanup_work(struct work_struct *work)
{
	struct tnpu_job *job = container_of(work, struct tnpu_job, cleanup);

	tnpu_job_release(job);
}

/*
 * The last references a job drops (BOs, context) may be the last ones on the DRM device, whose
 * release tears down the schedulers; that must not run in the scheduler's own work item.
 */
static void tnpu_job_free(struct drm_sched_job *sched_job)
{
	struct tnpu_job *job = to_tnpu_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	INIT_WORK(&job->cleanup, tnpu_job_cleanup_work);
	queue_work(tnpu_cleanup_wq, &job->cleanup);
}

static const struct drm_sched_backend_ops tnpu_sched_ops = {
	.run_job = tnpu_job_run,
	.timedout_job = tnpu_job_timedout,
	.free_job = tnpu_job_free,
};

static void tnpu_rings_release(struct drm_device *drm, void *arg)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	u32 q;

	for (q = 0; q < tdev->num_rings; q++) {
		if (tdev->rings[q].sched_ready)
			drm_sched_fini(&tdev->rings[q].sched);
		tdev->rings[q].sched_ready = false;
		cancel_delayed_work_sync(&tdev->rings[q].hold_work);
	}
}

int tnpu_rings_init(struct tnpu_device *tdev)
{
	u32 q;
	int ret;

	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];

		ring->tdev = tdev;
		ring->idx = q;
		ring->fence = &tdev->fences[q];
		ring->fence_dma = tdev->fences_dma + q * sizeof(u64);
		spin_lock_init(&ring->fence_lock);
		INIT_LIST_HEAD(&ring->inflight);
		INIT_DELAYED_WORK(&ring->hold_work, tnpu_ring_hold_work);
		atomic_set(&ring->high_waiting, 0);
		tnpu_ring_init_flows(ring);
		snprintf(ring->name, sizeof(ring->name), "tnpu-q%u", q);
		ring->entries = dmam_alloc_coherent(&tdev->pdev->dev,
						    TNPU_RING_ENTRIES * TNPU_RING_ENTRY_SIZE,
						    &ring->entries_dma, GFP_KERNEL);
		if (!ring->entries)
			return -ENOMEM;
		/* queues.md "Counter record": one slot per ring entry, 64 KiB per ring */
		if (tdev->caps.features & TNPU_FEAT_COUNTERS) {
			ring->counters = dmam_alloc_coherent(&tdev->pdev->dev,
							     TNPU_RING_ENTRIES *
							     sizeof(*ring->counters),
							     &ring->counters_dma, GFP_KERNEL);
			if (!ring->counters)
				return -ENOMEM;
		}
		/* queues.md "Preemption": one save record per ring entry, 128 KiB per ring */
		if (tdev->caps.features & TNPU_FEAT_PREEMPT) {
			ring->saves = dmam_alloc_coherent(&tdev->pdev->dev,
							  TNPU_RING_ENTRIES * sizeof(*ring->saves),
							  &ring->saves_dma, GFP_KERNEL);
			if (!ring->saves)
				return -ENOMEM;
		}
	}
	ret = drmm_add_action_or_reset(&tdev->drm, tnpu_rings_release, NULL);
	if (ret)
		return ret;
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];

		ret = drm_sched_init(&ring->sched, &tnpu_sched_ops, NULL, DRM_SCHED_PRIORITY_COUNT,
				     TNPU_SCHED_CREDITS, 0,
				     msecs_to_jiffies(READ_ONCE(tnpu_timeout_ms)), NULL, NULL,
				     ring->name, tdev->drm.dev);
		if (ret)
			return ret;
		ring->sched_ready = true;
	}
	return 0;
}

/* Unbind: stop the device and fail every job it held; later jobs fail in run_job. */
void tnpu_jobs_unplug(struct tnpu_device *tdev)
{
	u32 q;

	mutex_lock(&tdev->reset_lock);
	/* the device stops before the jobs fail (the reset waits, not under the spinlock) */
	spin_lock(&tdev->lock);
	tdev->in_reset = true;
	spin_unlock(&tdev->lock);
	tnpu_hw_disable(tdev);
	spin_lock(&tdev->lock);
	tdev->unplugged = true;
	for (q = 0; q < tdev->num_rings; q++) {
		struct tnpu_ring *ring = &tdev->rings[q];
		struct tnpu_job *job, *tmp;

		list_for_each_entry_safe(job, tmp, &ring->inflight, node) {
			tnpu_job_write_counters(job, -ENODEV, 0, false);
			tnpu_job_signal(job, -ENODEV);
		}
		tnpu_ring_fail_queued(ring, -ENODEV);
	}
	spin_unlock(&tdev->lock);
	mutex_unlock(&tdev->reset_lock);
	/*
	 * The schedulers free these jobs (and fail the ones they have not run) in their own time;
	 * module exit waits for the last job's release (tnpu_job_module_exit()).
	 */
}

/* timeout_ms changed: the schedulers' timers use the new value from now on. */
void tnpu_rings_set_timeout(struct tnpu_device *tdev, unsigned int ms)
{
	long t = msecs_to_jiffies(ms);
	u32 q;

	for (q = 0; q < tdev->num_rings; q++) {
		struct drm_gpu_scheduler *sched = &tdev->rings[q].sched;

		if (!tdev->rings[q].sched_ready)
			continue;
		WRITE_ONCE(sched->timeout, t);
		drm_sched_resume_timeout(sched, t);
	}
}

/*
 * Jobs alive in any device. Each holds a module reference from SUBMIT to the end of its release
 * (issue #28: module exit used to wait for them, uninterruptibly and for as long as a dependency
 * of another driver or a sync_file held them), so rmmod is refused (EWOULDBLOCK) while any lives
 * and module exit never waits for one.
 */
static atomic_t tnpu_live_jobs = ATOMIC_INIT(0);

/* in SUBMIT: the open file holds the module */
void tnpu_job_created(void)
{
	__module_get(THIS_MODULE);
	atomic_inc(&tnpu_live_jobs);
}

/*
 * The last call of a job's release, which runs on tnpu_cleanup_wq (module exit drains it, so the
 * return from here still finds the module) or in the submitting ioctl (the file holds the module).
 */
void tnpu_job_destroyed(void)
{
	if (atomic_dec_and_test(&tnpu_live_jobs))
		wake_up_all(&tnpu_jobs_gone);
	module_put(THIS_MODULE);
}

int tnpu_job_module_init(void)
{
	tnpu_cleanup_wq = alloc_workqueue("tnpu-cleanup", WQ_UNBOUND, 0);
	return tnpu_cleanup_wq ? 0 : -ENOMEM;
}

void tnpu_job_module_exit(void)
{
	/*
	 * Jobs and fences that outlive them hold module references (tnpu_job_created(),
	 * tnpu_fence_job_put()), taken while their file or job held one: none is left when exit
	 * runs, except their last work items, which destroy_workqueue() waits for. So these waits
	 * end at once; they only keep the counters honest.
	 */
	wait_event(tnpu_jobs_gone, !atomic_read(&tnpu_live_jobs));
	wait_event(tnpu_jobs_gone, !atomic_read(&tnpu_live_fences));
	destroy_workqueue(tnpu_cleanup_wq);
}
