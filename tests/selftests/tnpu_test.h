/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the tnpu kselftests: raw ioctls on uapi/tnpu_accel.h, libdrm for syncobjs, and a
 * tiny command-stream builder (FENCE and NOP are enough to observe a job: a FENCE writes a value
 * through the device MMU, see Documentation/hardware/commands.md).
 */
#ifndef TNPU_TEST_H
#define TNPU_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <xf86drm.h>

#include "tnpu_accel.h"

#define TNPU_DEV	"/dev/accel/accel0"
#define TNPU_PARAM	"/sys/module/tnpu/parameters/timeout_ms"

/* command-processor opcodes (commands.md) */
#define TNPU_OP_NOP	0x00
#define TNPU_OP_FENCE	0x07

static inline int tnpu_open_dev(void)
{
	return open(TNPU_DEV, O_RDWR | O_CLOEXEC);
}

/* ioctl returning 0 or -errno */
static inline int tnpu_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret ? -errno : 0;
}

static inline int64_t tnpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct tnpu_bo {
	uint32_t handle;
	uint64_t size;
	uint64_t va;
	uint64_t mmap_offset;
	void *map;
};

static inline int tnpu_bo_new(int fd, uint64_t size, uint32_t flags, struct tnpu_bo *bo)
{
	struct drm_tnpu_bo_create args = { .size = size, .flags = flags };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_BO_CREATE, &args);

	if (ret)
		return ret;
	bo->handle = args.handle;
	bo->size = size;
	bo->va = args.va;
	bo->mmap_offset = args.mmap_offset;
	bo->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, args.mmap_offset);
	if (bo->map == MAP_FAILED) {
		bo->map = NULL;
		return -errno;
	}
	return 0;
}

static inline void tnpu_bo_free(int fd, struct tnpu_bo *bo)
{
	struct drm_gem_close close_args = { .handle = bo->handle };

	if (bo->map)
		munmap(bo->map, bo->size);
	bo->map = NULL;
	ioctl(fd, DRM_IOCTL_GEM_CLOSE, &close_args);
}

static inline int tnpu_queue_new(int fd, uint32_t priority, uint32_t *handle)
{
	struct drm_tnpu_queue_create args = { .priority = priority };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &args);

	if (!ret)
		*handle = args.handle;
	return ret;
}

/* Appends a FENCE command writing @value at device VA @va; returns bytes written. */
static inline uint32_t tnpu_cmd_fence(void *buf, uint64_t va, uint64_t value)
{
	uint64_t *p = buf;

	p[0] = TNPU_OP_FENCE | (uint64_t)24 << 32;
	p[1] = va;
	p[2] = value;
	return 24;
}

static inline uint32_t tnpu_cmd_nop(void *buf)
{
	uint64_t *p = buf;

	p[0] = TNPU_OP_NOP | (uint64_t)8 << 32;
	return 8;
}

struct tnpu_job_args {
	uint32_t queue;
	struct tnpu_bo *cmd;
	uint64_t cmd_offset;
	uint32_t cmd_size;
	struct drm_tnpu_bo_ref *refs;
	uint32_t nrefs;
	struct drm_tnpu_sync *in;
	uint32_t nin;
	uint32_t out_sync;
	uint64_t out_point;
	uint32_t counters_bo;
	uint64_t counters_offset;
};

static inline int tnpu_submit(int fd, const struct tnpu_job_args *j)
{
	struct drm_tnpu_submit s = {
		.queue = j->queue,
		.cmd_bo = j->cmd->handle,
		.cmd_offset = j->cmd_offset,
		.cmd_size = j->cmd_size,
		.bos = { sizeof(struct drm_tnpu_bo_ref), j->nrefs, (uintptr_t)j->refs },
		.in_syncs = { sizeof(struct drm_tnpu_sync), j->nin, (uintptr_t)j->in },
		.out_sync = j->out_sync,
		.out_sync_point = j->out_point,
		.counters_bo = j->counters_bo,
		.counters_offset = j->counters_offset,
	};

	return tnpu_ioctl(fd, DRM_IOCTL_TNPU_SUBMIT, &s);
}

/*
 * Waits for the fence in @syncobj (@point for a timeline) and returns its status: 0 ok, -errno
 * for a failed job, -ETIME if it did not signal within @timeout_ms.
 */
static inline int tnpu_sync_status(int fd, uint32_t syncobj, uint64_t point, int timeout_ms)
{
	int64_t deadline = tnpu_now_ns() + (int64_t)timeout_ms * 1000000;
	struct sync_file_info info = { 0 };
	uint32_t tmp = 0;
	int sync_fd = -1, ret;

	if (point)
		ret = drmSyncobjTimelineWait(fd, &syncobj, &point, 1, deadline,
					     DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL);
	else
		ret = drmSyncobjWait(fd, &syncobj, 1, deadline,
				     DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL);
	if (ret)
		return errno == ETIME ? -ETIME : -errno;
	if (point) {
		/* export the point through a binary syncobj */
		ret = drmSyncobjCreate(fd, 0, &tmp);
		if (ret)
			return -errno;
		ret = drmSyncobjTransfer(fd, tmp, 0, syncobj, point, 0);
		if (!ret)
			ret = drmSyncobjExportSyncFile(fd, tmp, &sync_fd);
		drmSyncobjDestroy(fd, tmp);
	} else {
		ret = drmSyncobjExportSyncFile(fd, syncobj, &sync_fd);
	}
	if (ret)
		return -errno;
	ret = ioctl(sync_fd, SYNC_IOC_FILE_INFO, &info);
	close(sync_fd);
	if (ret)
		return -errno;
	return info.status == 1 ? 0 : info.status;
}

/*
 * Writes @val to a debugfs or sysfs file; returns 0 or -errno. A relative @path names a file of the
 * device's debugfs directory, /sys/kernel/debug/accel/<PCI name>/ (the DRM device's unique name).
 */
static inline int tnpu_write_file(const char *path, const char *val)
{
	char full[600];
	int fd, ret = 0;

	if (path[0] != '/') {
		DIR *d = opendir("/sys/kernel/debug/accel");
		struct dirent *e;

		if (!d)
			return -ENOENT;
		full[0] = 0;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(full, sizeof(full), "/sys/kernel/debug/accel/%s/%s", e->d_name,
				 path);
			if (!access(full, F_OK))
				break;
			full[0] = 0;
		}
		closedir(d);
		if (!full[0])
			return -ENOENT;
		path = full;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#define TNPU_POWER_DIR "/sys/class/accel/accel0/device/power/"

/* The first line of a sysfs/debugfs file without its newline; 0 or -errno. */
static inline int tnpu_read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	char *nl;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f))
		buf[0] = 0;
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	return 0;
}

/* The first device's power/runtime_status ("?" if unreadable). */
static inline void tnpu_runtime_status(char *buf, size_t size)
{
	if (tnpu_read_line(TNPU_POWER_DIR "runtime_status", buf, size))
		snprintf(buf, size, "?");
}

/* Polls runtime_status for @want; true if seen within @ms */
static inline bool tnpu_wait_runtime_status(const char *want, int ms)
{
	char st[32];
	int i;

	for (i = 0; i < ms / 10; i++) {
		tnpu_runtime_status(st, sizeof(st));
		if (!strcmp(st, want))
			return true;
		usleep(10000);
	}
	return false;
}

/* The first device's debugfs file @name opened for reading; NULL with *err -errno (no debugfs) or
 * -ENOENT (no device's file is readable). */
static inline FILE *tnpu_debugfs_open(const char *name, int *err)
{
	char path[600] = "";
	DIR *d = opendir("/sys/kernel/debug/accel");
	struct dirent *e;
	FILE *f;

	if (!d) {
		*err = -errno;
		return NULL;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s", e->d_name, name);
		if (!access(path, R_OK))
			break;
		path[0] = 0;
	}
	closedir(d);
	f = path[0] ? fopen(path, "r") : NULL;
	if (!f)
		*err = -ENOENT;
	return f;
}

/* The first device's debugfs `rings` file (tnpu_debugfs_open). */
static inline FILE *tnpu_rings_open(int *err)
{
	return tnpu_debugfs_open("rings", err);
}

/*
 * Jobs of ring @ring (-1: every ring) the driver holds: on the hardware (the "  job" lines of
 * debugfs `rings`) and waiting in its ready lists ("ring N ready: queued Q"); or -errno.
 */
static inline int tnpu_ring_jobs(int ring)
{
	unsigned int q, queued;
	int n = 0, cur = -1, err = 0;
	char line[256];
	FILE *f = tnpu_rings_open(&err);

	if (!f)
		return err;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "ring %u ready: queued %u", &q, &queued) == 2) {
			if (ring < 0 || (int)q == ring)
				n += (int)queued;
		} else if (sscanf(line, "ring %u: tail", &q) == 1) {
			cur = (int)q;
		} else if (!strncmp(line, "  job ", 6) && (ring < 0 || cur == ring)) {
			n++;
		}
	}
	fclose(f);
	return n;
}

/*
 * Arms a debugfs fault injection ("inject_hang", ...) once the driver holds no job: an injection
 * is taken by the next job handed to the hardware, which must be the test's, not a job an earlier
 * test left behind (a closed file's jobs still run, one NORMAL job per ring at a time).
 */
static inline int tnpu_inject(const char *what)
{
	int64_t deadline = tnpu_now_ns() + 60 * 1000000000ll;
	int n;

	while ((n = tnpu_ring_jobs(-1)) > 0 && tnpu_now_ns() < deadline)
		usleep(10000);
	if (n < 0)
		return n;
	return tnpu_write_file(what, "1");
}

static inline int tnpu_query(int fd, uint32_t type, void *buf, uint32_t size)
{
	struct drm_tnpu_query q = { .type = type, .size = size, .pointer = (uintptr_t)buf };

	return tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUERY, &q);
}

/*
 * A standard fixture state: one open file, one queue, a command BO and a data BO; a job
 * "FENCE data.va + 8 * slot = value" is the unit of work of most tests.
 */
struct tnpu_ctx {
	int fd;
	uint32_t queue;
	uint32_t sync;
	struct tnpu_bo cmd;
	struct tnpu_bo data;
};

static inline int tnpu_ctx_init(struct tnpu_ctx *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = tnpu_open_dev();
	if (c->fd < 0)
		return -errno;
	ret = tnpu_queue_new(c->fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &c->queue);
	if (!ret)
		ret = tnpu_bo_new(c->fd, 65536, 0, &c->cmd);
	if (!ret)
		ret = tnpu_bo_new(c->fd, 65536, 0, &c->data);
	if (!ret)
		ret = drmSyncobjCreate(c->fd, 0, &c->sync) ? -errno : 0;
	return ret;
}

static inline void tnpu_ctx_fini(struct tnpu_ctx *c)
{
	if (c->fd < 0)
		return;
	tnpu_bo_free(c->fd, &c->cmd);
	tnpu_bo_free(c->fd, &c->data);
	close(c->fd);
	c->fd = -1;
}

/* Submits "FENCE @va = @value" (command at @cmd_off in the command BO) and returns the job status. */
static inline int tnpu_run_fence(struct tnpu_ctx *c, uint64_t cmd_off, uint64_t va, uint64_t value)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = {
		.queue = c->queue, .cmd = &c->cmd, .cmd_offset = cmd_off, .refs = &ref, .nrefs = 1,
		.out_sync = c->sync,
	};
	int ret;

	j.cmd_size = tnpu_cmd_fence((char *)c->cmd.map + cmd_off, va, value);
	ret = tnpu_submit(c->fd, &j);
	if (ret)
		return ret;
	return tnpu_sync_status(c->fd, c->sync, 0, 60000);
}

#endif /* TNPU_TEST_H */
