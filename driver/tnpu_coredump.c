// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu device coredump: on a job timeout, an MMU fault or a device-reported job error, a snapshot
 * of the registers, the failing job's ring and a window of its command stream is handed to
 * devcoredump (/sys/class/devcoredump/devcdN/data), in the layout of uapi/tnpu_coredump.h, which
 * accel-coredump(1) decodes. Documentation/driver.md, "Device coredump".
 *
 * Capture runs where the error is handled, with tdev->lock held (IRQ thread, timeout handler,
 * recovery before the device reset): it reads registers, the coherent ring and the command
 * buffer's pinned pages, allocates with GFP_NOWAIT and never sleeps; when the allocation fails,
 * or a capture is still waiting to be handed over, the dump is skipped: recovery is never held up.
 * A work item copies the snapshot into vmalloc memory for dev_coredumpv(), which keeps one dump per
 * device until it is read (or for five minutes) and drops further ones meanwhile.
 *
 * What a dump holds of other contexts (decision, driver.md): the global and queue registers and
 * the ring entries around HEAD, which can belong to other files' jobs (context id, command buffer
 * VA and length, seqno); never any buffer contents but the failing job's own command buffer, never
 * a kernel or bus address (ring base, fence and context-table addresses are left out). devcoredump
 * data is readable by root only.
 */
#include <linux/devcoredump.h>
#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "tnpu_drv.h"
#include "tnpu_coredump.h"

#define TNPU_CD_RING_BEFORE	8	/* ring entries captured before HEAD */
#define TNPU_CD_RING_AFTER	8	/* and from HEAD on */
#define TNPU_CD_CMDS_BEFORE	4	/* commands shown before the failing one */
#define TNPU_CD_CMDS_MAX	1024	/* bytes of command stream in a dump */
#define TNPU_CD_WALK_MAX	65536	/* command headers walked to find those commands */

/* errors.md: codes 4..9 (CMDBUF .. CTX_INVALID) are ring/context errors, ERR_CMD_OFFSET reads 0 */
#define TNPU_ERR_CMDBUF		4
#define TNPU_ERR_CTX_INVALID	9

struct tnpu_coredump {
	struct tnpu_device *tdev;
	struct work_struct work;
	atomic_t busy;			/* a snapshot waits for the work item */
	void *data;
	size_t len;
};

static const u32 tnpu_cd_regs32[] = {
	TNPU_REG_ID, TNPU_REG_VERSION, TNPU_REG_CAP_FEATURES, TNPU_REG_CTRL, TNPU_REG_STATUS,
	TNPU_REG_IRQ_STATUS, TNPU_REG_IRQ_MASK, TNPU_REG_ERR_CODE, TNPU_REG_ERR_QUEUE,
	TNPU_REG_ERR_INFO, TNPU_REG_ERR_CMD_OFFSET, TNPU_REG_MMU_CTX_COUNT, TNPU_REG_MMU_FAULTS,
};

static const u32 tnpu_cd_regs64[] = { TNPU_REG_ERR_ADDR, TNPU_REG_ERR_SEQNO };

static const u32 tnpu_cd_qregs32[] = {
	TNPU_Q_RING_SIZE, TNPU_Q_HEAD, TNPU_Q_TAIL, TNPU_Q_CTRL, TNPU_Q_STATUS, TNPU_Q_ERR_CODE,
	TNPU_Q_ERR_INFO, TNPU_Q_ERR_CMD_OFFSET, TNPU_Q_ERR_CTX, TNPU_Q_JOBS_DONE,
};

static const u32 tnpu_cd_qregs64[] = { TNPU_Q_DONE_SEQNO, TNPU_Q_ERR_ADDR, TNPU_Q_ERR_SEQNO };

#define TNPU_CD_NREGS	(ARRAY_SIZE(tnpu_cd_regs32) + ARRAY_SIZE(tnpu_cd_regs64) + \
			 ARRAY_SIZE(tnpu_cd_qregs32) + ARRAY_SIZE(tnpu_cd_qregs64))
#define TNPU_CD_SIZE	(sizeof(struct tnpu_coredump_header) + \
			 3 * sizeof(struct tnpu_coredump_section) + \
			 TNPU_CD_NREGS * sizeof(struct tnpu_coredump_reg) + \
			 sizeof(struct tnpu_coredump_ring) + \
			 (TNPU_CD_RING_BEFORE + TNPU_CD_RING_AFTER) * TNPU_RING_ENTRY_SIZE + \
			 sizeof(struct tnpu_coredump_cmds) + TNPU_CD_CMDS_MAX)

struct tnpu_cd_buf {
	struct tnpu_coredump_header *hdr;
	size_t used;
};

/* Appends a section header and returns its payload (TNPU_CD_SIZE bounds the sum). */
static void *tnpu_cd_section(struct tnpu_cd_buf *b, u32 type, u32 size)
{
	struct tnpu_coredump_section *s = (void *)b->hdr + b->used;

	s->type = cpu_to_le32(type);
	s->size = cpu_to_le32(size);
	b->used += sizeof(*s) + size;
	b->hdr->section_count = cpu_to_le32(le32_to_cpu(b->hdr->section_count) + 1);
	return s + 1;
}

static void tnpu_cd_reg(struct tnpu_coredump_reg **r, u32 offset, u32 width, u64 value)
{
	(*r)->offset = cpu_to_le32(offset);
	(*r)->width = cpu_to_le32(width);
	(*r)->value = cpu_to_le64(value);
	(*r)++;
}

static void tnpu_cd_regs(struct tnpu_cd_buf *b, struct tnpu_device *tdev, u32 q)
{
	struct tnpu_coredump_reg *r = tnpu_cd_section(b, TNPU_COREDUMP_SEC_REGS,
						      TNPU_CD_NREGS * sizeof(*r));
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tnpu_cd_regs32); i++)
		tnpu_cd_reg(&r, tnpu_cd_regs32[i], 4, tnpu_read(tdev, tnpu_cd_regs32[i]));
	for (i = 0; i < ARRAY_SIZE(tnpu_cd_regs64); i++)
		tnpu_cd_reg(&r, tnpu_cd_regs64[i], 8, tnpu_read64(tdev, tnpu_cd_regs64[i]));
	for (i = 0; i < ARRAY_SIZE(tnpu_cd_qregs32); i++)
		tnpu_cd_reg(&r, TNPU_Q_BASE(q) + tnpu_cd_qregs32[i], 4,
			    tnpu_qread(tdev, q, tnpu_cd_qregs32[i]));
	for (i = 0; i < ARRAY_SIZE(tnpu_cd_qregs64); i++)
		tnpu_cd_reg(&r, TNPU_Q_BASE(q) + tnpu_cd_qregs64[i], 8,
			    tnpu_read64(tdev, TNPU_Q_BASE(q) + tnpu_cd_qregs64[i]));
}

static void tnpu_cd_ring(struct tnpu_cd_buf *b, struct tnpu_ring *ring)
{
	struct tnpu_device *tdev = ring->tdev;
	u32 count = TNPU_CD_RING_BEFORE + TNPU_CD_RING_AFTER;
	struct tnpu_coredump_ring *rs;
	u32 head, i, first;

	rs = tnpu_cd_section(b, TNPU_COREDUMP_SEC_RING, sizeof(*rs) + count * TNPU_RING_ENTRY_SIZE);
	head = tnpu_qread(tdev, ring->idx, TNPU_Q_HEAD) % TNPU_RING_ENTRIES;
	first = (head + TNPU_RING_ENTRIES - TNPU_CD_RING_BEFORE) % TNPU_RING_ENTRIES;
	rs->ring = cpu_to_le32(ring->idx);
	rs->entries = cpu_to_le32(TNPU_RING_ENTRIES);
	rs->head = cpu_to_le32(head);
	rs->tail = cpu_to_le32(tnpu_qread(tdev, ring->idx, TNPU_Q_TAIL));
	rs->status = cpu_to_le32(tnpu_qread(tdev, ring->idx, TNPU_Q_STATUS));
	rs->first = cpu_to_le32(first);
	rs->count = cpu_to_le32(count);
	rs->fence = cpu_to_le64(le64_to_cpu(READ_ONCE(*(__le64 *)ring->fence)));
	/* the entries are little-endian in memory already */
	for (i = 0; i < count; i++)
		memcpy((void *)(rs + 1) + i * TNPU_RING_ENTRY_SIZE,
		       &ring->entries[(first + i) % TNPU_RING_ENTRIES], TNPU_RING_ENTRY_SIZE);
}

/*
 * Copies bytes [@off, @off + @len) of the job's command buffer. Its BO is pinned from creation to
 * free and the job holds a reference, so its pages are there; kmap_local_page() does not sleep.
 */
static bool tnpu_cd_read_cmds(struct tnpu_job *job, u32 off, void *dst, u32 len)
{
	struct drm_gem_shmem_object *shmem = to_drm_gem_shmem_obj(job->cmd_bo);
	u64 pos = job->cmd_offset + off;

	if (!shmem->pages || off > job->cmd_len || len > job->cmd_len - off)
		return false;
	while (len) {
		u32 in = offset_in_page(pos), n = min_t(u32, len, PAGE_SIZE - in);
		void *va = kmap_local_page(shmem->pages[pos >> PAGE_SHIFT]);

		memcpy(dst, va + in, n);
		kunmap_local(va);
		dst += n;
		pos += n;
		len -= n;
	}
	return true;
}

/*
 * Where the window starts: up to TNPU_CD_CMDS_BEFORE commands before the one at @fail, found by
 * walking the headers from the start (commands are variable-sized, so a window must start on a
 * boundary to be decoded); at @fail itself if the walk does not land on it.
 */
static u32 tnpu_cd_window_start(struct tnpu_job *job, u32 fail)
{
	u32 starts[TNPU_CD_CMDS_BEFORE], n = 0, off = 0, i;

	while (off < fail && n < TNPU_CD_WALK_MAX) {
		__le32 hdr[2];
		u32 size;

		if (!tnpu_cd_read_cmds(job, off, hdr, sizeof(hdr)))
			return fail;
		size = le32_to_cpu(hdr[1]);	/* commands.md: opcode, flags, reserved, size */
		if (size < 8 || size % 8 || size > fail - off)
			return fail;
		starts[n++ % TNPU_CD_CMDS_BEFORE] = off;
		off += size;
	}
	if (off != fail)
		return fail;
	/* the oldest kept start that leaves half of the window for what follows */
	for (i = n > TNPU_CD_CMDS_BEFORE ? n - TNPU_CD_CMDS_BEFORE : 0; i < n; i++)
		if (fail - starts[i % TNPU_CD_CMDS_BEFORE] <= TNPU_CD_CMDS_MAX / 2)
			return starts[i % TNPU_CD_CMDS_BEFORE];
	return fail;
}

static void tnpu_cd_cmds(struct tnpu_cd_buf *b, struct tnpu_job *job, u32 fail, bool has_fail)
{
	u32 start = 0, len;
	struct tnpu_coredump_cmds *c;

	if (has_fail && fail < job->cmd_len)
		start = tnpu_cd_window_start(job, fail);
	len = min_t(u32, job->cmd_len - start, TNPU_CD_CMDS_MAX) & ~7u;
	if (!tnpu_cd_read_cmds(job, start, NULL, 0))
		len = 0;
	c = tnpu_cd_section(b, TNPU_COREDUMP_SEC_CMDS, sizeof(*c) + len);
	c->va = cpu_to_le64(job->cmd_va + start);
	c->offset = cpu_to_le32(start);
	if (len && !tnpu_cd_read_cmds(job, start, c + 1, len))
		len = 0;
	c->len = cpu_to_le32(len);
}

static void tnpu_coredump_work(struct work_struct *work)
{
	struct tnpu_coredump *cd = container_of(work, struct tnpu_coredump, work);
	void *v = vmalloc(cd->len);

	/* dev_coredumpv() frees with vfree(): no module code runs once it owns the data */
	if (v) {
		memcpy(v, cd->data, cd->len);
		dev_coredumpv(cd->tdev->drm.dev, v, cd->len, GFP_KERNEL);
	}
	kfree(cd->data);
	cd->data = NULL;
	atomic_set_release(&cd->busy, 0);
}

/**
 * tnpu_coredump_capture - snapshot the device for a failed job, hand it to devcoredump later
 * @job: the guilty job (still on its ring's in-flight list or just taken off it)
 * @reason: TNPU_COREDUMP_TIMEOUT, _MMU_FAULT or _JOB_ERROR
 * @code: errors.md code the device reported (0 for a timeout)
 * @info: its ERR_INFO
 * @cmd_off: offset of the failing command, if @has_off
 * @addr: faulting VA (MMU errors)
 * @has_off: the device reported @cmd_off
 *
 * Called with tdev->lock held, before the device is reset or the ring resumed. Never sleeps.
 */
void tnpu_coredump_capture(struct tnpu_job *job, u32 reason, u32 code, u32 info, u32 cmd_off,
			   u64 addr, bool has_off)
{
	struct tnpu_device *tdev = job->tdev;
	struct tnpu_coredump *cd = tdev->coredump;
	struct tnpu_coredump_header *h;
	struct tnpu_cd_buf b;
	u32 flags = 0;

	lockdep_assert_held(&tdev->lock);
	if (!cd || atomic_cmpxchg(&cd->busy, 0, 1))
		return;
	if (!tnpu_user_may_dump(job->ctx)) {	/* this uid dumped within coredump_interval_s */
		atomic_set(&cd->busy, 0);
		return;
	}
	if (code >= TNPU_ERR_CMDBUF && code <= TNPU_ERR_CTX_INVALID)
		has_off = false;
	h = kzalloc(TNPU_CD_SIZE, GFP_NOWAIT | __GFP_NOWARN);
	if (!h) {
		atomic_set(&cd->busy, 0);
		return;
	}
	memcpy(h->magic, TNPU_COREDUMP_MAGIC, sizeof(h->magic));
	h->version = cpu_to_le32(TNPU_COREDUMP_VERSION);
	h->header_size = cpu_to_le32(sizeof(*h));
	h->reason = cpu_to_le32(reason);
	h->timestamp_ns = cpu_to_le64(ktime_get_real_ns());
	strscpy(h->kernel_release, init_utsname()->release, sizeof(h->kernel_release));
	snprintf(h->driver, sizeof(h->driver), "%s %d.%d", tdev->drm.driver->name,
		 tdev->drm.driver->major, tdev->drm.driver->minor);
	strscpy(h->device, dev_name(tdev->drm.dev), sizeof(h->device));
	h->client_id = cpu_to_le64(job->client_id);
	h->job_seqno = cpu_to_le64(job->id);
	h->hw_seqno = cpu_to_le64(job->hw_seqno);
	h->cmd_va = cpu_to_le64(job->cmd_va);
	h->cmd_len = cpu_to_le32(job->cmd_len);
	h->ring = cpu_to_le32(job->ring->idx);
	h->ctx = cpu_to_le32(job->ctx->id);
	h->queue = cpu_to_le32(job->queue_handle);
	h->err_code = cpu_to_le32(code);
	h->err_info = cpu_to_le32(info);
	h->err_cmd_offset = cpu_to_le32(has_off ? cmd_off : 0);
	h->err_addr = cpu_to_le64(addr);
	h->timeout_ms = cpu_to_le32(READ_ONCE(tnpu_timeout_ms));
	if (has_off)
		flags |= TNPU_COREDUMP_F_CMD_OFFSET;
	if (reason == TNPU_COREDUMP_MMU_FAULT)
		flags |= TNPU_COREDUMP_F_ERR_ADDR;
	h->flags = cpu_to_le32(flags);

	b.hdr = h;
	b.used = sizeof(*h);
	tnpu_cd_regs(&b, tdev, job->ring->idx);
	tnpu_cd_ring(&b, job->ring);
	tnpu_cd_cmds(&b, job, cmd_off, has_off);
	h->total_size = cpu_to_le32(b.used);

	cd->data = h;
	cd->len = b.used;
	queue_work(system_unbound_wq, &cd->work);
}

static void tnpu_coredump_release(struct drm_device *drm, void *arg)
{
	tnpu_coredump_fini(to_tnpu(drm));
}

int tnpu_coredump_init(struct tnpu_device *tdev)
{
	struct tnpu_coredump *cd = drmm_kzalloc(&tdev->drm, sizeof(*cd), GFP_KERNEL);

	if (!cd)
		return -ENOMEM;
	cd->tdev = tdev;
	INIT_WORK(&cd->work, tnpu_coredump_work);
	tdev->coredump = cd;
	return drmm_add_action_or_reset(&tdev->drm, tnpu_coredump_release, NULL);
}

/*
 * Unbind, after the jobs were failed (no capture can start any more): a snapshot that was not
 * handed over yet is handed over now, so a hang just before an unplug still leaves its dump.
 */
void tnpu_coredump_fini(struct tnpu_device *tdev)
{
	struct tnpu_coredump *cd = tdev->coredump;

	if (cd)
		flush_work(&cd->work);
}
