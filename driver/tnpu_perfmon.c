// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu per-job counters: the device writes every job's counter record into a per-ring slot
 * (queues.md "Counter record", CAP_FEATURES bit 18) before the job's fence, so at completion the
 * driver copies it to the SUBMIT counters BO, adds it to the job's performance monitor and to
 * the file's fdinfo usage. No job waits for another to get its counters.
 *
 * A performance monitor (perfmon, in the style of v3d and panfrost) is a per-file sum of the
 * counters of every job submitted with its id. The file's xarray holds one reference, each job
 * that names it another, so destroying it while jobs are in flight is safe.
 */
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_file.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"

struct tnpu_perfmon {
	struct kref ref;
	spinlock_t lock;		/* @values, @jobs; nests inside tdev->lock */
	u64 jobs;
	u64 values[DRM_TNPU_MAX_COUNTERS];
};

static void tnpu_perfmon_release(struct kref *ref)
{
	kfree(container_of(ref, struct tnpu_perfmon, ref));
}

void tnpu_perfmon_put(struct tnpu_perfmon *perfmon)
{
	if (perfmon)
		kref_put(&perfmon->ref, tnpu_perfmon_release);
}

/* A referenced monitor of @tfile, or NULL. */
struct tnpu_perfmon *tnpu_perfmon_find(struct tnpu_file *tfile, u32 id)
{
	struct tnpu_perfmon *perfmon;

	xa_lock(&tfile->perfmons);
	perfmon = xa_load(&tfile->perfmons, id);
	/* the xarray's reference is dropped only after xa_erase(), which takes the same lock */
	if (perfmon)
		kref_get(&perfmon->ref);
	xa_unlock(&tfile->perfmons);
	return perfmon;
}

void tnpu_file_perfmons_fini(struct tnpu_file *tfile)
{
	struct tnpu_perfmon *perfmon;
	unsigned long id;

	xa_for_each(&tfile->perfmons, id, perfmon) {
		xa_erase(&tfile->perfmons, id);
		tnpu_perfmon_put(perfmon);
	}
	xa_destroy(&tfile->perfmons);
}

/* Writes the SUBMIT counters BO, if the job has one (vmapped at SUBMIT). */
static void tnpu_job_fill_counters_bo(struct tnpu_job *job, int status, u32 hw_error,
				      const u64 *vals)
{
	struct drm_tnpu_job_counters *c;
	unsigned int i;

	if (!job->counters_bo)
		return;
	c = job->counters_map.vaddr + job->counters_offset;
	c->status = status;
	c->hw_error = hw_error;
	/* every slot: counters added to the model reach userspace unchanged */
	for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
		c->counter[i] = vals[i];
}

/*
 * The job completed with @status (0 or the errno its fence carries) and hardware error @hw_error;
 * @captured: the device wrote its counter record (completion or job error), false for a timeout
 * or an unplug. Fills the counters BO, the perfmon and the file's usage. tdev->lock held.
 */
void tnpu_job_write_counters(struct tnpu_job *job, int status, u32 hw_error, bool captured)
{
	struct tnpu_ring *ring = job->ring;
	struct tnpu_usage *usage = &job->ctx->usage;
	u64 now = ktime_get_ns(), start, vals[DRM_TNPU_MAX_COUNTERS] = {};
	unsigned int i;

	/* queues.md: the record is written before the fence and before the error registers */
	if (captured && ring->counters) {
		const struct tnpu_counter_record *rec = &ring->counters[job->counters_slot];

		dma_rmb();
		for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
			vals[i] = le64_to_cpu(READ_ONCE(rec->counter[i]));
	}

	/* the ROW_BUSY registers now hold this job's rows (QUERY_ROW_BUSY confinement) */
	if (captured)
		job->tdev->last_done_ctx = job->ctx->serial;

	/* jobs of a ring run one after the other: this one started when the previous one ended */
	start = max(job->run_ns, ring->last_done_ns);
	ring->last_done_ns = now;
	job->busy_ns = now > start ? now - start : 0;
	usage->busy_ns[ring->idx] += job->busy_ns;
	usage->cycles[ring->idx] += vals[TNPU_CNT_TOTAL_CYCLES];
	usage->rings_used |= BIT(ring->idx);

	if (job->perfmon && captured) {
		spin_lock(&job->perfmon->lock);
		for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
			job->perfmon->values[i] += vals[i];
		job->perfmon->jobs++;
		spin_unlock(&job->perfmon->lock);
	}

	tnpu_job_fill_counters_bo(job, status, hw_error, vals);
}

/*
 * The job ends without having been handed to the hardware (cancelled, or the device is gone):
 * its counters BO gets @status and zero counters, and nothing is added to the perfmon or the
 * file's usage. Called on the fence-signalling path before the job's out-fence signals: the BO
 * was vmapped at SUBMIT, so this neither sleeps nor allocates, and takes no lock.
 */
void tnpu_job_write_status(struct tnpu_job *job, int status)
{
	static const u64 zero[DRM_TNPU_MAX_COUNTERS];

	tnpu_job_fill_counters_bo(job, status, 0, zero);
}

int tnpu_ioctl_perfmon_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_perfmon_create *args = data;
	struct tnpu_perfmon *perfmon;
	u32 id;
	int ret;

	if (args->flags)
		return -EINVAL;
	if (!(tdev->caps.features & TNPU_FEAT_COUNTERS))
		return -EOPNOTSUPP;
	perfmon = kzalloc(sizeof(*perfmon), GFP_KERNEL_ACCOUNT);
	if (!perfmon)
		return -ENOMEM;
	kref_init(&perfmon->ref);
	spin_lock_init(&perfmon->lock);
	ret = xa_alloc(&tfile->perfmons, &id, perfmon, XA_LIMIT(1, DRM_TNPU_MAX_PERFMONS),
		       GFP_KERNEL);
	if (ret) {
		kfree(perfmon);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	args->id = id;
	return 0;
}

int tnpu_ioctl_perfmon_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_perfmon_destroy *args = data;
	struct tnpu_perfmon *perfmon;

	if (args->pad)
		return -EINVAL;
	perfmon = xa_erase(&tfile->perfmons, args->id);
	if (!perfmon)
		return -ENOENT;
	/* jobs that name it keep their references until they are released */
	tnpu_perfmon_put(perfmon);
	return 0;
}

int tnpu_ioctl_perfmon_get_values(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_perfmon_get_values *args = data;
	u64 vals[DRM_TNPU_MAX_COUNTERS];
	struct tnpu_perfmon *perfmon;
	u64 jobs;

	if (args->flags & ~DRM_TNPU_PERFMON_GET_VALUES_RESET)
		return -EINVAL;
	if (!args->values_ptr)
		return -EFAULT;
	perfmon = tnpu_perfmon_find(tfile, args->id);
	if (!perfmon)
		return -ENOENT;
	spin_lock(&perfmon->lock);
	memcpy(vals, perfmon->values, sizeof(vals));
	jobs = perfmon->jobs;
	spin_unlock(&perfmon->lock);
	if (copy_to_user(u64_to_user_ptr(args->values_ptr), vals, sizeof(vals))) {
		tnpu_perfmon_put(perfmon);
		return -EFAULT;
	}
	/*
	 * The reset takes away what was reported, not what is there now: a job that completed
	 * since the copy stays counted, and a failed copy loses nothing.
	 */
	if (args->flags & DRM_TNPU_PERFMON_GET_VALUES_RESET) {
		unsigned int i;

		spin_lock(&perfmon->lock);
		for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
			perfmon->values[i] -= vals[i];
		perfmon->jobs -= jobs;
		spin_unlock(&perfmon->lock);
	}
	tnpu_perfmon_put(perfmon);
	args->jobs = jobs;
	return 0;
}
