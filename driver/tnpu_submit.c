// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu SUBMIT: copy and validate the user's arrays, look up BOs and syncobj fences, build a
 * drm_sched job and push it to its queue; and the release of a job's references.
 */
#include <linux/dma-fence-chain.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include <drm/drm_drv.h>
#include <drm/drm_syncobj.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"
#include "tnpu_trace.h"

void tnpu_job_release(struct tnpu_job *job)
{
	u32 i;

	if (job->counters_bo) {
		if (job->counters_map.vaddr)
			drm_gem_vunmap_unlocked(job->counters_bo, &job->counters_map);
		drm_gem_object_put(job->counters_bo);
	}
	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(job->bos[i]);
	kvfree(job->bos);
	kvfree(job->bo_flags);
	tnpu_fence_job_put(job);
	tnpu_perfmon_put(job->perfmon);
	if (job->pm_ref)
		tnpu_pm_put(job->tdev);
	if (job->ctx)
		atomic_dec(&job->ctx->jobs_pending);
	tnpu_ctx_put(job->ctx);
	kfree(job);
	tnpu_job_destroyed();
}

struct tnpu_bo_use {
	struct drm_gem_object *obj;
	u32 flags;
};

static int tnpu_bo_use_cmp(const void *a, const void *b)
{
	const struct tnpu_bo_use *x = a, *y = b;

	if (x->obj == y->obj)
		return 0;
	return (uintptr_t)x->obj < (uintptr_t)y->obj ? -1 : 1;
}

static int tnpu_check_array(const struct drm_tnpu_obj_array *a, u32 min_stride, u32 max_count)
{
	if (!a->count)
		return 0;
	/* a bounded stride bounds the bytes copy_struct_from_user() zero-checks */
	if (a->stride < min_stride || a->stride > DRM_TNPU_MAX_ARRAY_STRIDE || a->count > max_count)
		return -EINVAL;
	if (!a->array)
		return -EFAULT;
	return 0;
}

/* Copies element @i of @a into @dst (@ksize bytes); -E2BIG for non-zero unknown tail bytes. */
static int tnpu_copy_elem(void *dst, size_t ksize, const struct drm_tnpu_obj_array *a, u32 i)
{
	void __user *src = u64_to_user_ptr(a->array + (u64)i * a->stride);

	return copy_struct_from_user(dst, ksize, src, a->stride);
}

/* Looks up the BO list, the command buffer and the counters BO; dedupes into job->bos. */
static int tnpu_submit_lookup_bos(struct tnpu_job *job, struct drm_file *file,
				  struct drm_tnpu_submit *args)
{
	u32 n = args->bos.count, total = n + 2, i, count = 0;
	struct drm_gem_object *obj;
	struct tnpu_bo_use *use;
	u64 end;
	int ret = 0;

	use = kvcalloc(total, sizeof(*use), GFP_KERNEL_ACCOUNT);
	if (!use)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct drm_tnpu_bo_ref ref;

		cond_resched();
		ret = tnpu_copy_elem(&ref, sizeof(ref), &args->bos, i);
		if (ret)
			goto out;
		if (!ref.flags || ref.flags & ~(DRM_TNPU_BO_REF_READ | DRM_TNPU_BO_REF_WRITE)) {
			ret = -EINVAL;
			goto out;
		}
		use[count].obj = tnpu_bo_lookup(file, ref.handle);
		if (!use[count].obj) {
			ret = -ENOENT;
			goto out;
		}
		use[count++].flags = ref.flags;
	}

	obj = tnpu_bo_lookup(file, args->cmd_bo);
	if (!obj) {
		ret = -ENOENT;
		goto out;
	}
	use[count].obj = obj;
	use[count++].flags = DRM_TNPU_BO_REF_READ;
	if (check_add_overflow(args->cmd_offset, (u64)args->cmd_size, &end) || end > obj->size) {
		ret = -EINVAL;
		goto out;
	}
	job->cmd_va = to_tnpu_bo(obj)->node.start + args->cmd_offset;
	job->cmd_len = args->cmd_size;
	job->cmd_bo = obj;
	job->cmd_offset = args->cmd_offset;

	if (args->counters_bo) {
		obj = tnpu_bo_lookup(file, args->counters_bo);
		if (!obj) {
			ret = -ENOENT;
			goto out;
		}
		use[count].obj = obj;
		use[count++].flags = DRM_TNPU_BO_REF_WRITE;
		if (check_add_overflow(args->counters_offset,
				       (u64)sizeof(struct drm_tnpu_job_counters), &end) ||
		    end > obj->size) {
			ret = -EINVAL;
			goto out;
		}
		drm_gem_object_get(obj);
		job->counters_bo = obj;
		job->counters_offset = args->counters_offset;
	}

	/* drm_gem_lock_reservations() cannot lock one object twice: merge duplicates */
	sort(use, count, sizeof(*use), tnpu_bo_use_cmp, NULL);
	job->bos = kvcalloc(count, sizeof(*job->bos), GFP_KERNEL_ACCOUNT);
	job->bo_flags = kvcalloc(count, sizeof(*job->bo_flags), GFP_KERNEL_ACCOUNT);
	if (!job->bos || !job->bo_flags) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < count; i++) {
		if (job->bo_count && job->bos[job->bo_count - 1] == use[i].obj) {
			job->bo_flags[job->bo_count - 1] |= use[i].flags;
			drm_gem_object_put(use[i].obj);
		} else {
			job->bos[job->bo_count] = use[i].obj;
			job->bo_flags[job->bo_count++] = use[i].flags;
		}
		use[i].obj = NULL;
	}
	count = 0;
out:
	for (i = 0; i < count; i++)
		if (use[i].obj)
			drm_gem_object_put(use[i].obj);
	kvfree(use);
	return ret;
}

/*
 * Resolves every in-sync to a fence, before queue_lock is taken. drm_syncobj_find_fence() takes
 * the 64-bit point (drm_sched_job_add_syncobj_dependency() of 6.12 truncates it to 32 bits): an
 * unknown syncobj is -ENOENT, a binary syncobj without a fence or a point past the timeline's
 * last one -EINVAL.
 */
static int tnpu_submit_find_fences(struct drm_file *file, const struct drm_tnpu_obj_array *a,
				   struct dma_fence **fences)
{
	u32 i;
	int ret;

	for (i = 0; i < a->count; i++) {
		struct drm_tnpu_sync sync;
		struct dma_fence *fence;

		cond_resched();
		ret = tnpu_copy_elem(&sync, sizeof(sync), a, i);
		if (!ret && sync.flags)
			ret = -EINVAL;
		/* on error it leaves a fence pointer it has already put: only keep it on success */
		if (!ret)
			ret = drm_syncobj_find_fence(file, sync.handle, sync.point, 0, &fence);
		if (ret)
			return ret;
		fences[i] = fence;
	}
	return 0;
}

static void tnpu_put_fences(struct dma_fence **fences, u32 count)
{
	u32 i;

	if (!fences)
		return;
	for (i = 0; i < count; i++)
		dma_fence_put(fences[i]);
	kfree(fences);
}

int tnpu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_device *tdev = to_tnpu(drm);
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_submit *args = data;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *out_sync = NULL;
	struct dma_fence **in_fences = NULL;
	struct ww_acquire_ctx acquire;
	struct dma_fence *fence;
	struct tnpu_queue *queue;
	struct tnpu_job *job;
	u32 i;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->cmd_size < 8 || args->cmd_size % 8 || args->cmd_size > tdev->caps.cmdbuf ||
	    args->cmd_offset % 8)
		return -EINVAL;
	if (args->counters_offset % 8 || (!args->counters_bo && args->counters_offset))
		return -EINVAL;
	if (!args->out_sync && args->out_sync_point)
		return -EINVAL;
	ret = tnpu_check_array(&args->bos, sizeof(struct drm_tnpu_bo_ref), TNPU_MAX_SUBMIT_BOS);
	if (ret)
		return ret;
	ret = tnpu_check_array(&args->in_syncs, sizeof(struct drm_tnpu_sync), TNPU_MAX_IN_SYNCS);
	if (ret)
		return ret;
	if (READ_ONCE(tfile->ctx->faulted))
		return -EBADFD;
	/*
	 * Not EAGAIN: libdrm's drmIoctl() retries that at once, so its users would spin. A job
	 * counts until it is released, shortly after its out-fence signals (tnpu_job_release()).
	 */
	if (atomic_inc_return(&tfile->ctx->jobs_pending) > READ_ONCE(tnpu_max_jobs_per_file) &&
	    !tfile->ctx->limits_exempt) {
		atomic_dec(&tfile->ctx->jobs_pending);
		return -EBUSY;
	}

	/* user space causes these allocations: charged to its memory cgroup */
	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job) {
		atomic_dec(&tfile->ctx->jobs_pending);
		return -ENOMEM;
	}
	tnpu_job_created();
	job->tdev = tdev;
	job->ctx = tnpu_ctx_get(tfile->ctx);
	job->client_id = file->client_id;
	INIT_LIST_HEAD(&job->node);
	/* powered from here to the job's release: run_job and completion never resume the device */
	ret = tnpu_pm_get(tdev);
	if (ret)
		goto err_release;
	job->pm_ref = true;
	/* the hardware fence is allocated here because run_job must not allocate */
	job->hw_fence = tnpu_fence_alloc();
	if (!job->hw_fence) {
		ret = -ENOMEM;
		goto err_release;
	}
	ret = tnpu_submit_lookup_bos(job, file, args);
	if (ret)
		goto err_release;
	if (args->perfmon_id) {
		job->perfmon = tnpu_perfmon_find(tfile, args->perfmon_id);
		if (!job->perfmon) {
			ret = -ENOENT;
			goto err_release;
		}
	}
	if (job->counters_bo) {
		ret = drm_gem_vmap_unlocked(job->counters_bo, &job->counters_map);
		if (ret) {
			job->counters_map.vaddr = NULL;
			goto err_release;
		}
	}
	if (args->in_syncs.count) {
		in_fences = kcalloc(args->in_syncs.count, sizeof(*in_fences),
				    GFP_KERNEL_ACCOUNT);
		if (!in_fences) {
			ret = -ENOMEM;
			goto err_release;
		}
		ret = tnpu_submit_find_fences(file, &args->in_syncs, in_fences);
		if (ret)
			goto err_release;
	}
	if (args->out_sync) {
		out_sync = drm_syncobj_find(file, args->out_sync);
		if (!out_sync) {
			ret = -ENOENT;
			goto err_release;
		}
		if (args->out_sync_point) {
			chain = dma_fence_chain_alloc();
			if (!chain) {
				ret = -ENOMEM;
				goto err_release;
			}
		}
	}

	mutex_lock(&tfile->queue_lock);
	queue = args->queue ? xa_load(&tfile->queues, args->queue) : NULL;
	if (!queue) {
		ret = -ENOENT;
		goto err_unlock;
	}
	job->ring = &tdev->rings[queue->ring];
	job->queue_handle = queue->handle;
	job->prio = queue->prio;
	ret = drm_sched_job_init(&job->base, &queue->entity, 1, tfile);
	if (ret)
		goto err_unlock;

	for (i = 0; i < args->in_syncs.count; i++) {
		/* consumes the reference, on success and on error */
		ret = drm_sched_job_add_dependency(&job->base, in_fences[i]);
		in_fences[i] = NULL;
		if (ret)
			goto err_cleanup;
	}

	ret = drm_gem_lock_reservations(job->bos, job->bo_count, &acquire);
	if (ret)
		goto err_cleanup;
	for (i = 0; i < job->bo_count; i++) {
		bool write = job->bo_flags[i] & DRM_TNPU_BO_REF_WRITE;

		ret = dma_resv_reserve_fences(job->bos[i]->resv, 1);
		if (!ret)
			ret = drm_sched_job_add_implicit_dependencies(&job->base, job->bos[i],
								      write);
		if (ret) {
			drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
			goto err_cleanup;
		}
	}

	/* point of no return */
	drm_sched_job_arm(&job->base);
	tnpu_job_armed(job);
	job->id = atomic64_inc_return(&tdev->job_ids);
	args->seqno = job->id;
	fence = &job->base.s_fence->finished;
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, fence,
				   job->bo_flags[i] & DRM_TNPU_BO_REF_WRITE ?
				   DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ);
	drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
	if (out_sync) {
		if (chain)
			drm_syncobj_add_point(out_sync, chain, fence, args->out_sync_point);
		else
			drm_syncobj_replace_fence(out_sync, fence);
		drm_syncobj_put(out_sync);
	}
	atomic64_inc(&tdev->jobs_submitted);
	trace_tnpu_job_submit(job);
	/* tnpu_dispatch.c: a HIGH job on its way holds lower priorities off the ring */
	if (job->prio == DRM_TNPU_QUEUE_PRIORITY_HIGH) {
		job->high_counted = true;
		atomic_inc(&job->ring->high_waiting);
	}
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&tfile->queue_lock);
	kfree(in_fences);
	return 0;

err_cleanup:
	drm_sched_job_cleanup(&job->base);
err_unlock:
	mutex_unlock(&tfile->queue_lock);
err_release:
	tnpu_put_fences(in_fences, args->in_syncs.count);
	dma_fence_chain_free(chain);
	if (out_sync)
		drm_syncobj_put(out_sync);
	tnpu_job_release(job);
	return ret;
}
