// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu buffer objects: GEM shmem, pinned and mapped into the creating file's device address space
 * at creation, unmapped when freed.
 */
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/mm.h>

#include <drm/drm_drv.h>
#include <drm/drm_utils.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"

/*
 * Every BO is pinned from creation to free, so the pages of all tnpu BOs (all files, all devices)
 * together may take at most half of the RAM: beyond that a user could push the kernel into the OOM
 * killer (and soft lockups while it reclaims) from one ioctl. uapi.md, BO_CREATE.
 */
static atomic64_t tnpu_pinned_bytes = ATOMIC64_INIT(0);

static u64 tnpu_pin_limit(void)
{
	return ((u64)totalram_pages() << PAGE_SHIFT) / 2;
}

/* A quarter of the global budget unless max_pinned_mb_per_user says otherwise. */
static u64 tnpu_user_pin_limit(void)
{
	u64 mb = READ_ONCE(tnpu_max_pinned_mb_per_user);

	return mb ? mb << 20 : tnpu_pin_limit() / 4;
}

/*
 * Charges @size to the global budget and to @ctx's user: 0, -E2BIG (@size alone is above the
 * global limit), -ENOMEM (the global budget is used up) or -EDQUOT (the user's is).
 */
static int tnpu_pin_charge(struct tnpu_ctx *ctx, u64 size)
{
	struct tnpu_user *user = ctx->user;
	u64 limit = tnpu_pin_limit();

	if (size > limit)
		return -E2BIG;
	if (atomic64_add_return(size, &tnpu_pinned_bytes) > limit) {
		atomic64_sub(size, &tnpu_pinned_bytes);
		return -ENOMEM;
	}
	/* exempt users are counted too, so that every uncharge has its charge */
	if (atomic64_add_return(size, &user->pinned) > tnpu_user_pin_limit() &&
	    !ctx->limits_exempt) {
		atomic64_sub(size, &user->pinned);
		atomic64_sub(size, &tnpu_pinned_bytes);
		return -EDQUOT;
	}
	return 0;
}

static void tnpu_pin_uncharge(struct tnpu_user *user, u64 size)
{
	atomic64_sub(size, &user->pinned);
	atomic64_sub(size, &tnpu_pinned_bytes);
}

/*
 * The second half of a free, once the device can no longer reach the pages: at once, or from the
 * MMU quarantine after a device reset (tnpu_mmu.c).
 */
void tnpu_gem_release(struct tnpu_bo *bo)
{
	struct tnpu_ctx *ctx = bo->ctx;

	if (ctx) {
		/* the VA range too: a new BO there must not meet a stale translation */
		mutex_lock(&ctx->lock);
		drm_mm_remove_node(&bo->node);
		mutex_unlock(&ctx->lock);
	}
	if (bo->pin_user) {
		tnpu_pin_uncharge(bo->pin_user, bo->charged);
		tnpu_user_put(bo->pin_user);
	}
	drm_gem_shmem_free(&bo->base);
	/* the pages were unmapped before shmem releases them; the context goes last */
	tnpu_ctx_put(ctx);
}

static void tnpu_gem_free(struct drm_gem_object *obj)
{
	struct tnpu_bo *bo = to_tnpu_bo(obj);
	struct tnpu_ctx *ctx = bo->ctx;
	bool invalidated = true;

	if (ctx) {
		mutex_lock(&ctx->lock);
		invalidated = tnpu_mmu_unmap(ctx, bo->node.start, obj->size);
		mutex_unlock(&ctx->lock);
	}
	/* mmu.md "Freeing": pages go back to the kernel only once the device cannot reach them */
	if (!invalidated)
		tnpu_mmu_quarantine_bo(bo);
	else
		tnpu_gem_release(bo);
}

/*
 * Unbind with the BO's file still open: the DMA mapping of its pages goes now, while the device is
 * bound (the pages stay for CPU mmaps until the BO is freed, which then finds no mapping to undo).
 */
void tnpu_gem_unmap_dma(struct tnpu_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;
	struct drm_gem_object *obj = &shmem->base;

	dma_resv_lock(obj->resv, NULL);
	if (shmem->sgt) {
		dma_unmap_sgtable(obj->dev->dev, shmem->sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(shmem->sgt);
		kfree(shmem->sgt);
		shmem->sgt = NULL;
	}
	dma_resv_unlock(obj->resv);
}

/* fdinfo (drm_show_memory_stats()): a BO with its pages is resident; none is purgeable */
static enum drm_gem_object_status tnpu_gem_status(struct drm_gem_object *obj)
{
	return READ_ONCE(to_drm_gem_shmem_obj(obj)->pages) ? DRM_GEM_OBJECT_RESIDENT : 0;
}

static const struct drm_gem_object_funcs tnpu_gem_funcs = {
	.free = tnpu_gem_free,
	.status = tnpu_gem_status,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

struct drm_gem_object *tnpu_gem_create_object(struct drm_device *drm, size_t size)
{
	struct tnpu_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);

	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->base.map_wc = false;
	bo->base.base.funcs = &tnpu_gem_funcs;
	return &bo->base.base;
}

/*
 * Looks up a handle of @file and returns the object only if it lives in @file's address space: an
 * imported handle of another file's BO is as unreachable as a handle that does not exist.
 */
struct drm_gem_object *tnpu_bo_lookup(struct drm_file *file, u32 handle)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_gem_object *obj;

	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return NULL;
	if (obj->funcs != &tnpu_gem_funcs || to_tnpu_bo(obj)->ctx != tfile->ctx) {
		drm_gem_object_put(obj);
		return NULL;
	}
	return obj;
}

int tnpu_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct tnpu_file *tfile = file->driver_priv;
	struct drm_tnpu_bo_create *args = data;
	struct tnpu_ctx *ctx = tfile->ctx;
	struct drm_gem_shmem_object *shmem;
	struct drm_gem_object *obj;
	struct sg_table *sgt;
	struct tnpu_bo *bo;
	u64 size;
	int ret;

	if (args->flags & ~DRM_TNPU_BO_DEVICE_READ_ONLY)
		return -EINVAL;
	if (!args->size || args->size > TNPU_MAX_BO_SIZE)
		return -EINVAL;
	size = round_up(args->size, TNPU_PAGE_SIZE);
	/* before any page is allocated: a refused size costs nothing */
	ret = tnpu_pin_charge(ctx, size);
	if (ret)
		return ret;

	shmem = drm_gem_shmem_create(drm, size);
	if (IS_ERR(shmem)) {
		tnpu_pin_uncharge(ctx->user, size);
		return PTR_ERR(shmem);
	}
	obj = &shmem->base;
	bo = to_tnpu_bo(obj);
	bo->flags = args->flags;
	/* uncharged by tnpu_gem_free() from here on */
	bo->charged = size;
	bo->pin_user = tnpu_user_get(ctx->user);

	sgt = drm_gem_shmem_get_pages_sgt(shmem);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto out_put;
	}

	mutex_lock(&ctx->lock);
	/* one unmapped guard page after each BO turns small overruns into MMU faults */
	ret = drm_mm_insert_node_generic(&ctx->mm, &bo->node, size + TNPU_PAGE_SIZE,
					 TNPU_PAGE_SIZE, 0, DRM_MM_INSERT_BEST);
	if (!ret) {
		/* on failure too: tnpu_gem_free() unmaps what was mapped and frees the range */
		bo->ctx = tnpu_ctx_get(ctx);
		ret = tnpu_mmu_map(ctx, bo->node.start, sgt, size,
				   !(args->flags & DRM_TNPU_BO_DEVICE_READ_ONLY));
	}
	mutex_unlock(&ctx->lock);
	if (ret)
		goto out_put;

	ret = drm_gem_create_mmap_offset(obj);
	if (ret)
		goto out_put;
	ret = drm_gem_handle_create(file, obj, &args->handle);
	if (ret)
		goto out_put;
	args->va = bo->node.start;
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);

out_put:
	/* the handle (if any) holds the only reference from here on */
	drm_gem_object_put(obj);
	return ret;
}

int tnpu_ioctl_bo_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_tnpu_bo_info *args = data;
	struct drm_gem_object *obj;
	struct tnpu_bo *bo;

	if (args->pad)
		return -EINVAL;
	obj = tnpu_bo_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_tnpu_bo(obj);
	args->flags = bo->flags;
	args->size = obj->size;
	args->va = bo->node.start;
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return 0;
}

int tnpu_ioctl_bo_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_tnpu_bo_wait *args = data;
	struct drm_gem_object *obj;
	long ret;

	if (args->pad)
		return -EINVAL;
	obj = tnpu_bo_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	ret = dma_resv_wait_timeout(obj->resv, DMA_RESV_USAGE_READ, true,
				    drm_timeout_abs_to_jiffies(args->timeout_ns));
	drm_gem_object_put(obj);
	if (ret == 0)
		return -ETIME;
	return ret < 0 ? ret : 0;
}
