/* SPDX-License-Identifier: MIT */
/*
 * backend_drm.c - the "drm" backend: tnpu.ko through libdrm (uapi/tnpu_accel.h, Documentation/uapi.md).
 *
 * Buffers are GEM BOs (BO_CREATE gives handle, device VA and mmap offset); each hardware command
 * buffer is copied into its own BO and submitted on the file's queue with every buffer the stream
 * references in the BO list (read+write: the lowering does not track direction per buffer), the
 * dependencies' syncobjs as in-fences and a fresh syncobj as out-fence; the driver writes the job's
 * counters into a small counters BO before the fence signals.  Waiting is drmSyncobjWait; a job
 * failed if its counters say so or its fence signalled with an error (drm_fence_error).
 */
#include <xf86drm.h>	/* before tnpu_accel.h: both drm.h copies share the _DRM_H_ guard */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "internal.h"
#include "tnpu/tnpu_core.h"
#include "tnpu_accel.h"

/*
 * Every job needs a command buffer object and a counters object. Creating, mapping and faulting in a
 * fresh one per job (a GEM object, its VA mapping, zeroed shmem pages) cost more than building the
 * commands in a TCG guest, so objects of finished jobs are kept for reuse: at most BO_CACHE_SLOTS of
 * them and BO_CACHE_BYTES in all, best fit, command buffers rounded up to a power of two so that a
 * stream of similar jobs reuses them. Only objects of this file (and process) are reused, only after
 * their job completed (accel_job_free waits for a running job first), so no other context sees them;
 * a reused counters object is cleared as a new one would be.
 */
#define BO_CACHE_SLOTS 16
#define BO_CACHE_BYTES (32ull << 20)

struct drm {
	int fd;
	uint32_t queue;
	uint32_t counters_size;
	struct accel_buffer *cache[BO_CACHE_SLOTS];
	unsigned n_cache;
	uint64_t cache_bytes;
};

/*
 * sparse (#8): the ROW_BUSY registers hold the job that completed last on the whole device.  They
 * are taken as this job's only if they agree with its own busiest-row and row-sum counters.
 */
static void drm_row_busy(struct drm *d, struct accel_hwjob *hw)
{
	struct drm_tnpu_row_busy rb;
	struct drm_tnpu_query q;
	uint64_t mx = 0, sum = 0;

	memset(&rb, 0, sizeof(rb));
	memset(&q, 0, sizeof(q));
	q.type = DRM_TNPU_QUERY_ROW_BUSY;
	q.size = sizeof(rb);
	q.pointer = (uint64_t)(uintptr_t)&rb;
	if (drmIoctl(d->fd, DRM_IOCTL_TNPU_QUERY, &q))
		return;
	for (unsigned r = 0; r < rb.rows && r < DRM_TNPU_MAX_ROW_BUSY; r++) {
		mx = rb.busy[r] > mx ? rb.busy[r] : mx;
		sum += rb.busy[r];
	}
	if (mx != hw->counters[TNPU_CNT_ROW_BUSY_MAX] || sum != hw->counters[TNPU_CNT_ROW_BUSY_SUM])
		return;
	memcpy(hw->row_busy, rb.busy, sizeof(hw->row_busy));
	hw->has_row_busy = true;
}

static int drm_err(struct accel_dev *dev, const char *what)
{
	int err = errno ? -errno : -EIO;

	return accel_seterr(dev, err, "%s: %s", what, strerror(-err));
}

/* $ACCEL_QUEUE_PRIORITY: low, normal (unset or empty) or high (the kernel wants CAP_SYS_NICE). */
static int drm_queue_priority(struct accel_dev *dev, __u32 *prio)
{
	const char *v = getenv("ACCEL_QUEUE_PRIORITY");

	if (!v || !*v || !strcmp(v, "normal"))
		*prio = DRM_TNPU_QUEUE_PRIORITY_NORMAL;
	else if (!strcmp(v, "low"))
		*prio = DRM_TNPU_QUEUE_PRIORITY_LOW;
	else if (!strcmp(v, "high"))
		*prio = DRM_TNPU_QUEUE_PRIORITY_HIGH;
	else
		return accel_seterr(dev, -EINVAL, "ACCEL_QUEUE_PRIORITY: '%s' is not low, normal or high", v);
	return 0;
}

static int drm_buf_alloc(struct accel_dev *dev, struct accel_buffer *b)
{
	struct drm *d = dev->priv;
	struct drm_tnpu_bo_create c;
	void *p;

	memset(&c, 0, sizeof(c));
	c.size = b->alloc;
	if (drmIoctl(d->fd, DRM_IOCTL_TNPU_BO_CREATE, &c))
		return drm_err(dev, "DRM_IOCTL_TNPU_BO_CREATE");
	p = mmap(NULL, b->alloc, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)c.mmap_offset);
	if (p == MAP_FAILED) {
		struct drm_gem_close gc = { .handle = c.handle };
		int ret = drm_err(dev, "mmap of a buffer object");

		drmIoctl(d->fd, DRM_IOCTL_GEM_CLOSE, &gc);
		return ret;
	}
	b->ptr = p;
	b->va = c.va;
	b->handle = c.handle;
	return 0;
}

static void drm_buf_free(struct accel_dev *dev, struct accel_buffer *b)
{
	struct drm *d = dev->priv;
	struct drm_gem_close gc = { .handle = b->handle };

	if (b->ptr)
		munmap(b->ptr, b->alloc);
	drmIoctl(d->fd, DRM_IOCTL_GEM_CLOSE, &gc);
	b->ptr = NULL;
}

static int bo_new(struct accel_dev *dev, uint64_t size, struct accel_buffer **out)
{
	struct accel_buffer *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	b->dev = dev;
	b->size = size;
	b->alloc = (size + ACCEL_PAGE - 1) & ~(uint64_t)(ACCEL_PAGE - 1);
	ret = drm_buf_alloc(dev, b);
	if (ret) {
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

static void bo_del(struct accel_dev *dev, struct accel_buffer *b)
{
	if (!b)
		return;
	drm_buf_free(dev, b);
	free(b);
}

/* An object of at least `size` bytes: the smallest cached one that fits, else a new one of `alloc`. */
static int bo_get(struct accel_dev *dev, uint64_t size, uint64_t alloc, struct accel_buffer **out)
{
	struct drm *d = dev->priv;
	unsigned best = d->n_cache;

	for (unsigned i = 0; i < d->n_cache; i++)
		if (d->cache[i]->alloc >= size && (best == d->n_cache || d->cache[i]->alloc < d->cache[best]->alloc))
			best = i;
	if (best < d->n_cache) {
		*out = d->cache[best];
		d->cache_bytes -= (*out)->alloc;
		d->cache[best] = d->cache[--d->n_cache];
		return 0;
	}
	return bo_new(dev, alloc, out);
}

static void bo_put(struct accel_dev *dev, struct accel_buffer *b)
{
	struct drm *d = dev->priv;

	if (!b)
		return;
	if (d->n_cache < BO_CACHE_SLOTS && d->cache_bytes + b->alloc <= BO_CACHE_BYTES) {
		d->cache[d->n_cache++] = b;
		d->cache_bytes += b->alloc;
		return;
	}
	bo_del(dev, b);
}

static void drm_hw_release(struct accel_dev *dev, struct accel_hwjob *hw)
{
	struct drm *d = dev->priv;

	if (hw->syncobj)
		drmSyncobjDestroy(d->fd, hw->syncobj);
	bo_put(dev, hw->cmd_bo);
	bo_put(dev, hw->cnt_bo);
	hw->syncobj = 0;
	hw->cmd_bo = hw->cnt_bo = NULL;
}

static int drm_submit(struct accel_dev *dev, const uint8_t *cmds, size_t len, struct accel_buffer *const *bos,
		      unsigned n_bos, struct accel_hwjob *const *deps, unsigned n_deps, struct accel_hwjob *hw)
{
	struct drm *d = dev->priv;
	struct drm_tnpu_bo_ref *refs = NULL;
	struct drm_tnpu_sync *syncs = NULL;
	struct drm_tnpu_submit s;
	int ret;

	uint64_t cmd_alloc = ACCEL_PAGE, cnt = ACCEL_MAX(d->counters_size, sizeof(struct drm_tnpu_job_counters));

	memset(hw, 0, sizeof(*hw));
	while (cmd_alloc < len)
		cmd_alloc *= 2;
	ret = bo_get(dev, len, cmd_alloc, &hw->cmd_bo);
	if (!ret)
		ret = bo_get(dev, cnt, cnt, &hw->cnt_bo);
	if (ret)
		goto fail;
	memset(hw->cnt_bo->ptr, 0, cnt);	/* as a new object: a failing job may not write all of it */
	memcpy(hw->cmd_bo->ptr, cmds, len);
	if (drmSyncobjCreate(d->fd, 0, &hw->syncobj)) {
		ret = drm_err(dev, "drmSyncobjCreate");
		goto fail;
	}
	refs = calloc(n_bos ? n_bos : 1, sizeof(*refs));
	syncs = calloc(n_deps ? n_deps : 1, sizeof(*syncs));
	if (!refs || !syncs) {
		ret = accel_seterr(dev, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < n_bos; i++) {
		refs[i].handle = bos[i]->handle;
		refs[i].flags = DRM_TNPU_BO_REF_READ | DRM_TNPU_BO_REF_WRITE;
	}
	for (unsigned i = 0; i < n_deps; i++)
		syncs[i].handle = deps[i]->syncobj;
	memset(&s, 0, sizeof(s));
	s.queue = d->queue;
	s.cmd_bo = hw->cmd_bo->handle;
	s.cmd_size = (uint32_t)len;
	s.bos.stride = sizeof(*refs);
	s.bos.count = n_bos;
	s.bos.array = (uint64_t)(uintptr_t)refs;
	s.in_syncs.stride = sizeof(*syncs);
	s.in_syncs.count = n_deps;
	s.in_syncs.array = (uint64_t)(uintptr_t)syncs;
	s.out_sync = hw->syncobj;
	s.counters_bo = hw->cnt_bo->handle;
	if (drmIoctl(d->fd, DRM_IOCTL_TNPU_SUBMIT, &s)) {
		ret = drm_err(dev, "DRM_IOCTL_TNPU_SUBMIT");
		goto fail;
	}
	free(refs);
	free(syncs);
	return 0;
fail:
	free(refs);
	free(syncs);
	drm_hw_release(dev, hw);
	return ret;
}

/*
 * The error the signalled fence of @syncobj carries (0: none, or not known). The driver writes it
 * into the counters' status too (uapi.md), but a tnpu.ko from before issue #28 left the status of
 * a job that never reached the hardware (cancelled with its queue, or after a fault of this file)
 * unwritten: zero, which reads as success.  The fence is the one authority, asked separately.
 */
static int drm_fence_error(struct drm *d, uint32_t syncobj)
{
	struct sync_file_info info;
	int fd = -1, ret;

	if (drmSyncobjExportSyncFile(d->fd, syncobj, &fd))
		return 0;	/* the counters' status decides alone */
	memset(&info, 0, sizeof(info));
	ret = ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	close(fd);
	return !ret && info.status < 0 ? info.status : 0;
}

static bool counters_all_zero(const struct drm_tnpu_job_counters *c)
{
	for (unsigned i = 0; i < ACCEL_MAX_COUNTERS; i++)
		if (c->counter[i])
			return false;
	return true;
}

static int drm_wait(struct accel_dev *dev, struct accel_hwjob *hw, int64_t timeout_ns)
{
	struct drm *d = dev->priv;
	struct drm_tnpu_job_counters c;
	struct timespec ts;
	int64_t abs;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	abs = timeout_ns < 0 ? INT64_MAX : (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec + timeout_ns;
	ret = drmSyncobjWait(d->fd, &hw->syncobj, 1, abs, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL);
	if (ret) {
		ret = ret == -1 ? -errno : ret;
		if (ret == -ETIME || ret == -ETIMEDOUT)
			return -ETIME;
		return accel_seterr(dev, ret, "drmSyncobjWait: %s", strerror(-ret));
	}
	memcpy(&c, hw->cnt_bo->ptr, sizeof(c));
	hw->done = true;
	hw->hw_error = c.hw_error;
	for (unsigned i = 0; i < ACCEL_MAX_COUNTERS; i++)
		hw->counters[i] = c.counter[i];
	if (dev->caps.features & TNPU_FEAT_ROW_BUSY)
		drm_row_busy(d, hw);
	/* A job that ran has counters (its commands at least): only one that never reached the hardware
	 * reads all zero, so only then is the fence asked (a sync_file export per job otherwise). */
	if (!c.status && !c.hw_error && counters_all_zero(&c))
		c.status = drm_fence_error(d, hw->syncobj);
	if (c.status || c.hw_error) {
		hw->status = c.hw_error ? -EIO : (c.status < 0 ? c.status : -EIO);
		accel_seterr(dev, hw->status, "job failed: status %d (%s), hardware error %s (code %u)", c.status,
			     strerror(c.status < 0 ? -c.status : EIO), c.hw_error ? tnpu_err_name(c.hw_error) : "none",
			     c.hw_error);
		return 0;	/* a failed job keeps its objects until it is freed (the kernel's dump reads them) */
	}
	/* Done: the device reads the command buffer no more and the counters are copied, so both objects
	 * go back to the cache now, not when the application frees the job (a kept job, replayed for the
	 * life of a compiled model, would hold them all along while its replays made new ones). */
	bo_put(dev, hw->cmd_bo);
	bo_put(dev, hw->cnt_bo);
	hw->cmd_bo = hw->cnt_bo = NULL;
	return 0;
}

static void drm_close(struct accel_dev *dev)
{
	struct drm *d = dev->priv;

	if (!d)
		return;
	while (d->n_cache)
		bo_del(dev, d->cache[--d->n_cache]);
	if (d->queue) {
		struct drm_tnpu_queue_destroy q = { .handle = d->queue };

		drmIoctl(d->fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &q);
	}
	close(d->fd);
	free(d);
	dev->priv = NULL;
}

static const struct accel_backend_ops drm_ops = {
	.name = "drm",
	.buf_alloc = drm_buf_alloc,
	.buf_free = drm_buf_free,
	.submit = drm_submit,
	.wait = drm_wait,
	.hw_release = drm_hw_release,
	.close = drm_close,
};

/* chain #9: the island table (DRM_TNPU_QUERY_ISLANDS); a driver without it means one island. */
static int drm_query_islands(struct accel_dev *dev, int fd)
{
	struct drm_tnpu_islands isl;
	struct drm_tnpu_query q;
	uint32_t total_rows;

	memset(&isl, 0, sizeof(isl));
	memset(&q, 0, sizeof(q));
	q.type = DRM_TNPU_QUERY_ISLANDS;
	q.size = sizeof(isl);
	q.pointer = (uint64_t)(uintptr_t)&isl;
	if (drmIoctl(fd, DRM_IOCTL_TNPU_QUERY, &q) || !isl.count) {
		dev->n_islands = 1;
		dev->islands[0] = (struct accel_island){ .rows = dev->caps.rows, .dtypes = 0x7, .clkdiv = 1,
							 .sram_bytes = (uint64_t)dev->caps.rows * dev->caps.sram_bytes };
		return 0;
	}
	total_rows = dev->caps.rows;
	dev->n_islands = ACCEL_MIN(isl.count, ACCEL_MAX_ISLANDS);
	dev->rings = isl.rings;
	dev->ring_mem = isl.ring_mem_bytes;
	for (unsigned i = 0; i < dev->n_islands; i++) {
		const struct drm_tnpu_island *s = &isl.island[i];

		if (!s->rows || s->first_row + s->rows > total_rows || !s->clkdiv)
			return accel_seterr(dev, -ENODEV, "the driver reports an unusable island %u", i);
		dev->islands[i] = (struct accel_island){ .first_row = s->first_row, .rows = s->rows,
							 .dtypes = s->dtypes, .clkdiv = s->clkdiv,
							 .sram_base = s->sram_base, .sram_bytes = s->sram_bytes };
	}
	/* Classic ops run in island 0, the sub-stream every job starts in (chaining.md). */
	dev->caps.rows = dev->islands[0].rows;
	return 0;
}

int accel_drm_open(struct accel_dev *dev, const char *path)
{
	struct drm_tnpu_caps caps;
	struct drm_tnpu_query q;
	struct drm_tnpu_queue_create qc;
	drmVersionPtr ver;
	struct drm *d;
	int fd, ret;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return accel_seterr(dev, -errno, "cannot open %s: %s", path, strerror(errno));
	ver = drmGetVersion(fd);
	if (!ver || strcmp(ver->name, "tnpu")) {
		ret = accel_seterr(dev, -ENODEV, "%s is not a tnpu device (driver %s)", path, ver ? ver->name : "unknown");
		drmFreeVersion(ver);
		close(fd);
		return ret;
	}
	drmFreeVersion(ver);
	memset(&caps, 0, sizeof(caps));
	memset(&q, 0, sizeof(q));
	q.type = DRM_TNPU_QUERY_CAPS;
	q.size = sizeof(caps);
	q.pointer = (uint64_t)(uintptr_t)&caps;
	if (drmIoctl(fd, DRM_IOCTL_TNPU_QUERY, &q)) {
		ret = drm_err(dev, "DRM_IOCTL_TNPU_QUERY(CAPS)");
		close(fd);
		return ret;
	}
	memset(&qc, 0, sizeof(qc));
	ret = drm_queue_priority(dev, &qc.priority);
	if (ret) {
		close(fd);
		return ret;
	}
	if (drmIoctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &qc)) {
		ret = drm_err(dev, "DRM_IOCTL_TNPU_QUEUE_CREATE");
		close(fd);
		return ret;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		struct drm_tnpu_queue_destroy qd = { .handle = qc.handle };

		drmIoctl(fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &qd);
		close(fd);
		return accel_seterr(dev, -ENOMEM, "out of memory");
	}
	d->fd = fd;
	d->queue = qc.handle;
	d->counters_size = caps.counters_size;
	dev->priv = d;
	dev->ops = &drm_ops;
	memset(&dev->caps, 0, sizeof(dev->caps));
	strcpy(dev->caps.backend, "drm");
	dev->caps.rows = caps.rows;
	dev->caps.cols = caps.cols;
	dev->caps.pes = caps.pes;
	dev->caps.sram_bytes = caps.sram_bytes;
	dev->caps.acc_elems = caps.acc_elems;
	dev->caps.accumulators = caps.accumulators;
	dev->caps.slots = caps.slots;
	dev->caps.ibufs = caps.ibufs;
	dev->caps.ibuf_depth = caps.ibuf_len;
	dev->caps.rf_entries = caps.rf_entries;
	dev->caps.semaphores = caps.semaphores;
	dev->caps.rate_int8 = caps.rates & 0xFF;
	dev->caps.rate_fp32 = (caps.rates >> 8) & 0xFF;
	dev->caps.rate_dma = (caps.rates >> 16) & 0xFF;
	dev->caps.rate_dispatch = (caps.rates >> 24) & 0xFF;
	dev->caps.clock_mhz = caps.clock_mhz;
	dev->caps.max_cmdbuf = caps.max_cmdbuf;
	dev->caps.features = caps.features;
	if (!dev->caps.rows || !dev->caps.cols || !dev->caps.pes || !dev->caps.rate_int8 || !dev->caps.rate_dispatch ||
	    !dev->caps.acc_elems || dev->caps.sram_bytes < 4096 || !dev->caps.max_cmdbuf) {
		drm_close(dev);
		return accel_seterr(dev, -ENODEV, "%s reports an unusable geometry", path);
	}
	ret = drm_query_islands(dev, fd);
	if (ret)
		drm_close(dev);
	return ret;
}
