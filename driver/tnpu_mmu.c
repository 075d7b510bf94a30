// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu device MMU (Documentation/hardware/mmu.md): one context per open file, each with its own
 * 4-level page tables in coherent DMA memory and a context-table slot. A BO is mapped only into its
 * creator's tables, which is what keeps one file's jobs out of another file's memory.
 */
#include <linux/dma-mapping.h>
#include <linux/iopoll.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <drm/drm_drv.h>

#include "tnpu_drv.h"

static int tnpu_pt_alloc(struct tnpu_device *tdev, struct tnpu_pt *pt, bool leaf)
{
	pt->cpu = dma_alloc_coherent(&tdev->pdev->dev, TNPU_PAGE_SIZE, &pt->dma, GFP_KERNEL);
	if (!pt->cpu)
		return -ENOMEM;
	pt->children = NULL;
	if (!leaf) {
		pt->children = kcalloc(TNPU_PT_ENTRIES, sizeof(*pt->children),
				       GFP_KERNEL_ACCOUNT);
		if (!pt->children) {
			dma_free_coherent(&tdev->pdev->dev, TNPU_PAGE_SIZE, pt->cpu, pt->dma);
			pt->cpu = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static void tnpu_pt_free(struct tnpu_device *tdev, struct tnpu_pt *pt)
{
	unsigned int i;

	if (!pt->cpu)
		return;
	if (pt->children) {
		for (i = 0; i < TNPU_PT_ENTRIES; i++) {
			if (pt->children[i]) {
				tnpu_pt_free(tdev, pt->children[i]);
				kfree(pt->children[i]);
			}
		}
		kfree(pt->children);
		pt->children = NULL;
	}
	dma_free_coherent(&tdev->pdev->dev, TNPU_PAGE_SIZE, pt->cpu, pt->dma);
	pt->cpu = NULL;
}

static unsigned int tnpu_pt_index(u64 va, int level)
{
	return (va >> (TNPU_PAGE_SHIFT + TNPU_PT_SHIFT * (level - 1))) & (TNPU_PT_ENTRIES - 1);
}

/* Returns the leaf table covering @va, allocating intermediate tables when @alloc. */
static struct tnpu_pt *tnpu_pt_walk(struct tnpu_ctx *ctx, u64 va, bool alloc)
{
	struct tnpu_pt *pt = &ctx->root;
	int level;

	/* the tables went with the device (unbind); nothing is mapped any more */
	if (!pt->cpu)
		return NULL;
	for (level = TNPU_PT_LEVELS; level > 1; level--) {
		unsigned int i = tnpu_pt_index(va, level);
		struct tnpu_pt *child = pt->children[i];

		if (!child) {
			if (!alloc)
				return NULL;
			child = kzalloc(sizeof(*child), GFP_KERNEL_ACCOUNT);
			if (!child)
				return NULL;
			if (tnpu_pt_alloc(ctx->tdev, child, level == 2)) {
				kfree(child);
				return NULL;
			}
			pt->children[i] = child;
			WRITE_ONCE(pt->cpu[i],
				   cpu_to_le64((child->dma & TNPU_PTE_ADDR) | TNPU_PTE_VALID));
		}
		pt = child;
	}
	return pt;
}

/*
 * registers.md MMU_INVALIDATE: complete once STATUS.MMU_INV_PENDING reads 0; only then may the
 * caller free the unmapped pages (a running job may still use an older translation until then).
 * Returns false when that is not known: the caller then hands what it unmapped to the quarantine
 * (tnpu_mmu_quarantine_bo(), tnpu_ctx_release()) instead of freeing it.
 */
bool tnpu_mmu_invalidate(struct tnpu_device *tdev)
{
	bool done = true;
	u32 st;
	int idx, pm;

	/* debugfs inject_mmu_inval_timeout: as if the device never completed it, even asleep */
	if (atomic_dec_if_positive(&tdev->inject_inval_timeout) >= 0) {
		dev_warn(tdev->drm.dev, "MMU invalidate timeout injected\n");
		return false;
	}
	/*
	 * A runtime-suspended device runs no job and holds no translation (runtime resume writes
	 * MMU_INVALIDATE when it programs the device again): nothing to wait for. Runtime PM
	 * disabled (< 0): the device is powered.
	 */
	pm = tnpu_pm_get_if_active(tdev);
	if (!pm)
		return true;
	if (drm_dev_enter(&tdev->drm, &idx)) {
		tnpu_write(tdev, TNPU_REG_MMU_INVALIDATE, 1);
		if (readl_poll_timeout_atomic(tdev->regs + TNPU_REG_STATUS, st,
					      st == U32_MAX || !(st & TNPU_STATUS_MMU_INV_PENDING),
					      10, 200000)) {
			dev_warn_ratelimited(tdev->drm.dev,
					     "MMU invalidate not complete (status 0x%x): pages held until the next reset\n",
					     st);
			done = false;
		}
		drm_dev_exit(idx);
	} else {
		/*
		 * Unbind: ioctls stop (drm_dev_unplug()) before tnpu_jobs_unplug() resets the
		 * device, which may run jobs until then; once it has, nothing is cached.
		 */
		spin_lock(&tdev->lock);
		done = tdev->unplugged;
		spin_unlock(&tdev->lock);
	}
	if (pm > 0)
		tnpu_pm_put(tdev);
	return done;
}

/* Returns false if the device may still hold a translation of the range (tnpu_mmu_invalidate()). */
bool tnpu_mmu_unmap(struct tnpu_ctx *ctx, u64 va, u64 size)
{
	u64 end = va + size;

	lockdep_assert_held(&ctx->lock);
	for (; va < end; va += TNPU_PAGE_SIZE) {
		struct tnpu_pt *leaf = tnpu_pt_walk(ctx, va, false);

		if (leaf)
			WRITE_ONCE(leaf->cpu[tnpu_pt_index(va, 1)], 0);
	}
	/* mmu.md: unmapped pages must not be reused before the device drops cached translations */
	return tnpu_mmu_invalidate(ctx->tdev);
}

int tnpu_mmu_map(struct tnpu_ctx *ctx, u64 va, struct sg_table *sgt, u64 size, bool writable)
{
	u64 prot = TNPU_PTE_VALID | TNPU_PTE_READ | (writable ? TNPU_PTE_WRITE : 0);
	u64 start = va, end = va + size;
	struct scatterlist *sg;
	unsigned int i;

	lockdep_assert_held(&ctx->lock);
	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t addr = sg_dma_address(sg);
		u64 len = sg_dma_len(sg);

		for (; len && va < end; len -= TNPU_PAGE_SIZE, addr += TNPU_PAGE_SIZE,
		     va += TNPU_PAGE_SIZE) {
			struct tnpu_pt *leaf = tnpu_pt_walk(ctx, va, true);

			if (!leaf) {
				tnpu_mmu_unmap(ctx, start, va - start);
				return -ENOMEM;
			}
			WRITE_ONCE(leaf->cpu[tnpu_pt_index(va, 1)],
				   cpu_to_le64((addr & TNPU_PTE_ADDR) | prot));
		}
	}
	if (va != end) {
		tnpu_mmu_unmap(ctx, start, va - start);
		return -EINVAL;
	}
	return 0;
}

/* 0 is no context's: QUERY_ROW_BUSY before any job completed matches nobody */
static atomic64_t tnpu_ctx_serials = ATOMIC64_INIT(0);

struct tnpu_ctx *tnpu_ctx_create(struct tnpu_device *tdev)
{
	struct tnpu_ctx *ctx;
	int id, ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	/* context 0 stays invalid so a zeroed ring entry can never run in someone's context */
	id = ida_alloc_range(&tdev->ctx_ida, 1, min_t(u32, TNPU_MAX_CTX, tdev->caps.mmu_ctx) - 1,
			     GFP_KERNEL);
	if (id < 0) {
		ret = id == -ENOSPC ? -EBUSY : id;
		goto err_free;
	}
	ret = tnpu_pt_alloc(tdev, &ctx->root, false);
	if (ret)
		goto err_ida;
	kref_init(&ctx->ref);
	ctx->tdev = tdev;
	ctx->id = id;
	ctx->serial = atomic64_inc_return(&tnpu_ctx_serials);
	tnpu_ctx_init_flows(ctx);
	mutex_init(&ctx->lock);
	drm_mm_init(&ctx->mm, TNPU_VA_START, TNPU_VA_END - TNPU_VA_START);
	mutex_lock(&tdev->ctx_lock);
	if (tdev->tables_released) {
		/* an open() racing with the unbind */
		mutex_unlock(&tdev->ctx_lock);
		drm_mm_takedown(&ctx->mm);
		mutex_destroy(&ctx->lock);
		tnpu_pt_free(tdev, &ctx->root);
		ret = -ENODEV;
		goto err_ida;
	}
	WRITE_ONCE(tdev->ctx_table[id].reserved, 0);
	WRITE_ONCE(tdev->ctx_table[id].root,
		   cpu_to_le64((ctx->root.dma & TNPU_PTE_ADDR) | TNPU_CTX_VALID));
	list_add(&ctx->node, &tdev->ctxs);
	mutex_unlock(&tdev->ctx_lock);
	drm_dev_get(&tdev->drm);
	return ctx;

err_ida:
	ida_free(&tdev->ctx_ida, id);
err_free:
	kfree(ctx);
	return ERR_PTR(ret);
}

/* Everything of @ctx but its page tables, which are freed (or went with the device) already. */
static void tnpu_ctx_free(struct tnpu_ctx *ctx)
{
	struct tnpu_device *tdev = ctx->tdev;

	drm_mm_takedown(&ctx->mm);
	/* a quarantined context keeps its id: a new context must not inherit its translations */
	ida_free(&tdev->ctx_ida, ctx->id);
	mutex_destroy(&ctx->lock);
	if (ctx->user) {
		tnpu_user_uncharge_context(ctx->user);
		tnpu_user_put(ctx->user);
	}
	kfree(ctx);
	/* every context pins the DRM device: its tables and the context table live in it */
	drm_dev_put(&tdev->drm);
}

static void tnpu_ctx_release(struct kref *ref)
{
	struct tnpu_ctx *ctx = container_of(ref, struct tnpu_ctx, ref);
	struct tnpu_device *tdev = ctx->tdev;

	mutex_lock(&tdev->ctx_lock);
	list_del(&ctx->node);
	if (!tdev->tables_released) {
		WRITE_ONCE(tdev->ctx_table[ctx->id].root, 0);
		if (!tnpu_mmu_invalidate(tdev)) {
			spin_lock(&tdev->stale_lock);
			ctx->stale_gen = tdev->reset_gen;
			list_add_tail(&ctx->stale_node, &tdev->stale_ctxs);
			spin_unlock(&tdev->stale_lock);
			mutex_unlock(&tdev->ctx_lock);
			return;
		}
		tnpu_pt_free(tdev, &ctx->root);
	}
	mutex_unlock(&tdev->ctx_lock);
	tnpu_ctx_free(ctx);
}

void tnpu_ctx_put(struct tnpu_ctx *ctx)
{
	if (ctx)
		kref_put(&ctx->ref, tnpu_ctx_release);
}

/*
 * The quarantine (mmu.md "Freeing"): a BO or context whose invalidate did not complete keeps its
 * pages, page tables, VA range and context id until a device reset completed after it was
 * quarantined (a reset drops every cached translation), or until unbind.
 */
void tnpu_mmu_quarantine_bo(struct tnpu_bo *bo)
{
	struct tnpu_device *tdev = bo->ctx->tdev;

	spin_lock(&tdev->stale_lock);
	bo->stale_gen = tdev->reset_gen;
	list_add_tail(&bo->stale_node, &tdev->stale_bos);
	spin_unlock(&tdev->stale_lock);
}

/* Frees what was quarantined before @gen resets completed (all of it: U64_MAX). */
static void tnpu_mmu_free_stale(struct tnpu_device *tdev, u64 gen)
{
	struct tnpu_ctx *ctx, *ctmp;
	struct tnpu_bo *bo, *btmp;
	LIST_HEAD(bos);
	LIST_HEAD(ctxs);

	spin_lock(&tdev->stale_lock);
	list_for_each_entry_safe(bo, btmp, &tdev->stale_bos, stale_node)
		if (bo->stale_gen < gen)
			list_move_tail(&bo->stale_node, &bos);
	list_for_each_entry_safe(ctx, ctmp, &tdev->stale_ctxs, stale_node)
		if (ctx->stale_gen < gen)
			list_move_tail(&ctx->stale_node, &ctxs);
	spin_unlock(&tdev->stale_lock);

	/* BOs first: each holds a reference on its context */
	list_for_each_entry_safe(bo, btmp, &bos, stale_node) {
		list_del(&bo->stale_node);
		tnpu_gem_release(bo);
	}
	list_for_each_entry_safe(ctx, ctmp, &ctxs, stale_node) {
		list_del(&ctx->stale_node);
		mutex_lock(&tdev->ctx_lock);
		if (!tdev->tables_released)
			tnpu_pt_free(tdev, &ctx->root);
		mutex_unlock(&tdev->ctx_lock);
		tnpu_ctx_free(ctx);
	}
}

/*
 * A work item, since resets complete in the scheduler's timeout handler and under reset_lock.
 * While the device is bound its DRM device holds a reference of its own, so no context freed
 * here drops the last one.
 */
static void tnpu_mmu_stale_work(struct work_struct *work)
{
	struct tnpu_device *tdev = container_of(work, struct tnpu_device, stale_work);
	u64 gen;

	spin_lock(&tdev->stale_lock);
	gen = tdev->reset_gen;
	spin_unlock(&tdev->stale_lock);
	tnpu_mmu_free_stale(tdev, gen);
}

void tnpu_mmu_init_stale(struct tnpu_device *tdev)
{
	spin_lock_init(&tdev->stale_lock);
	INIT_LIST_HEAD(&tdev->stale_bos);
	INIT_LIST_HEAD(&tdev->stale_ctxs);
	INIT_WORK(&tdev->stale_work, tnpu_mmu_stale_work);
}

/* A device reset completed (CTRL.RESET, function reset): the device caches no translation. */
void tnpu_mmu_reset_done(struct tnpu_device *tdev)
{
	bool stale;

	spin_lock(&tdev->stale_lock);
	tdev->reset_gen++;
	stale = !list_empty(&tdev->stale_bos) || !list_empty(&tdev->stale_ctxs);
	spin_unlock(&tdev->stale_lock);
	if (stale)
		queue_work(system_unbound_wq, &tdev->stale_work);
}

/* debugfs mmu_stale */
void tnpu_mmu_stale_count(struct tnpu_device *tdev, u32 *bos, u32 *ctxs)
{
	struct tnpu_ctx *ctx;
	struct tnpu_bo *bo;

	*bos = 0;
	*ctxs = 0;
	spin_lock(&tdev->stale_lock);
	list_for_each_entry(bo, &tdev->stale_bos, stale_node)
		(*bos)++;
	list_for_each_entry(ctx, &tdev->stale_ctxs, stale_node)
		(*ctxs)++;
	spin_unlock(&tdev->stale_lock);
}

/*
 * Unbind, after the device was stopped and every job failed: frees what the quarantine held (the
 * device is reset and disabled), then every context's page tables and the context table, and
 * unmaps every BO's pages while the device is still bound, as the DMA API requires; contexts of
 * files still open live on without tables (tnpu_pt_walk() finds nothing, their BOs unmap as
 * no-ops).
 */
void tnpu_mmu_release_tables(struct tnpu_device *tdev)
{
	struct drm_mm_node *node;
	struct tnpu_ctx *ctx;

	cancel_work_sync(&tdev->stale_work);
	tnpu_mmu_free_stale(tdev, U64_MAX);

	mutex_lock(&tdev->ctx_lock);
	list_for_each_entry(ctx, &tdev->ctxs, node) {
		mutex_lock(&ctx->lock);
		/* every node of the context's VA space is a mapped BO (tnpu_ioctl_bo_create) */
		drm_mm_for_each_node(node, &ctx->mm)
			tnpu_gem_unmap_dma(container_of(node, struct tnpu_bo, node));
		tnpu_pt_free(tdev, &ctx->root);
		mutex_unlock(&ctx->lock);
	}
	tdev->tables_released = true;
	dma_free_coherent(&tdev->pdev->dev, TNPU_MAX_CTX * TNPU_CTX_ENTRY_SIZE, tdev->ctx_table,
			  tdev->ctx_table_dma);
	tdev->ctx_table = NULL;
	mutex_unlock(&tdev->ctx_lock);
}
