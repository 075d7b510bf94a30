// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu command queues: QUEUE_CREATE, QUEUE_DESTROY and the queues of a closing file. A queue is a
 * drm_sched entity bound to one hardware ring.
 */
#include <linux/jiffies.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"

static const enum drm_sched_priority tnpu_prio_map[] = {
	[DRM_TNPU_QUEUE_PRIORITY_LOW] = DRM_SCHED_PRIORITY_LOW,
	[DRM_TNPU_QUEUE_PRIORITY_NORMAL] = DRM_SCHED_PRIORITY_NORMAL,
	[DRM_TNPU_QUEUE_PRIORITY_HIGH] = DRM_SCHED_PRIORITY_HIGH,
};

int tnpu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_queue_create *args = data;
	struct drm_gpu_scheduler *sched;
	struct tnpu_queue *queue;
	u32 id;
	int ret;

	if (args->flags || args->priority > DRM_TNPU_QUEUE_PRIORITY_HIGH)
		return -EINVAL;
	if (args->priority == DRM_TNPU_QUEUE_PRIORITY_HIGH && !capable(CAP_SYS_NICE))
		return -EPERM;
	queue = kzalloc(sizeof(*queue), GFP_KERNEL_ACCOUNT);
	if (!queue)
		return -ENOMEM;
	queue->ring = (u32)atomic_inc_return(&tdev->next_ring) % tdev->num_rings;
	queue->prio = args->priority;
	sched = &tdev->rings[queue->ring].sched;
	ret = drm_sched_entity_init(&queue->entity, tnpu_prio_map[args->priority], &sched, 1, NULL);
	if (ret)
		goto err_free;

	mutex_lock(&tfile->queue_lock);
	ret = xa_alloc(&tfile->queues, &id, queue, XA_LIMIT(1, TNPU_MAX_FILE_QUEUES), GFP_KERNEL);
	mutex_unlock(&tfile->queue_lock);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_entity;
	}
	queue->handle = id;
	args->handle = id;
	args->hw_queue = queue->ring;
	return 0;

err_entity:
	drm_sched_entity_destroy(&queue->entity);
err_free:
	kfree(queue);
	return ret;
}

/*
 * uapi.md: a destroyed queue's jobs that have not been handed to their ring get up to
 * TNPU_QUEUE_DRAIN_MS to get there; the rest are cancelled (ESRCH) and never run.
 */
#define TNPU_QUEUE_DRAIN_MS	1000

/*
 * Frees @queue once its jobs are on the ring or @deadline (jiffies) has passed. Not
 * drm_sched_entity_destroy(): its flush waits without a limit, unless the task is exiting, for jobs
 * whose dependencies may never signal. drm_sched_entity_fini() takes the entity off the scheduler
 * and cancels what is left; each cancelled job's fence signals (-ESRCH) once its own dependencies
 * have, so fence order stays transitive, but the job never runs.
 */
static void tnpu_queue_free(struct tnpu_device *tdev, struct tnpu_queue *queue,
			    unsigned long deadline)
{
	struct drm_gpu_scheduler *sched = &tdev->rings[queue->ring].sched;
	long left = (long)(deadline - jiffies);

	if (left > 0)
		wait_event_timeout(sched->job_scheduled,
				   !spsc_queue_count(&queue->entity.job_queue), left);
	drm_sched_entity_fini(&queue->entity);
	kfree(queue);
}

/* Called outside drm_dev_enter(): the bounded wait must not hold off an unbind. */
int tnpu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_queue_destroy *args = data;
	struct tnpu_queue *queue;

	if (args->pad)
		return -EINVAL;
	mutex_lock(&tfile->queue_lock);
	queue = args->handle ? xa_erase(&tfile->queues, args->handle) : NULL;
	mutex_unlock(&tfile->queue_lock);
	if (!queue)
		return -ENOENT;
	tnpu_queue_free(tfile->tdev, queue, jiffies + msecs_to_jiffies(TNPU_QUEUE_DRAIN_MS));
	return 0;
}

/* close(): every queue of the file, all within one TNPU_QUEUE_DRAIN_MS. */
void tnpu_file_queues_fini(struct tnpu_file *tfile)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(TNPU_QUEUE_DRAIN_MS);
	struct tnpu_queue *queue;
	unsigned long id;

	xa_for_each(&tfile->queues, id, queue) {
		xa_erase(&tfile->queues, id);
		tnpu_queue_free(tfile->tdev, queue, deadline);
	}
	xa_destroy(&tfile->queues);
}
