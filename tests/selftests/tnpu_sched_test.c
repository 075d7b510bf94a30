// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu scheduling across clients (driver.md "Scheduling across clients"): a HIGH job overtakes
 * every NORMAL job of another file that waits for the same ring but the one on the hardware, and
 * two equally busy NORMAL files with a backlog each are served in turn. Orders come from the jobs'
 * out-fence timestamps (the order the driver signalled them), never from durations.
 *
 * Backlogs are built with a gate: the NORMAL jobs all wait for one long job on another ring, so
 * they become ready at once, in submission order, once it completes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define TNPU_OP_DMA_H2D		0x01
#define TNPU_DMA_F_FILL		0x01
#define JOBS_PER_FILE		8
#define WAIT_MS			600000
#define TNPU_MAX_QUEUES_TRIES	32
#define GATE_OFFSET		(512 << 10)

/* One client: an open file, a queue on the ring under test, a command BO and a gate queue. */
struct client {
	int fd;
	uint32_t queue;
	uint32_t gate_queue;
	struct tnpu_bo cmd;
	uint32_t cmd_size;
	uint32_t gate_size;	/* the gate job, at GATE_OFFSET: four times as long */
};

/*
 * A job of @n broadcast FILL DMAs into every storage unit: device work on the host side only,
 * the same for every client (DMA_H2D with FILL reads no memory, commands.md).
 */
static uint32_t long_job(void *buf, uint32_t n, uint32_t half_sram)
{
	uint32_t width = half_sram < 65536 ? half_sram : 65536, i;
	uint64_t *p = buf;

	for (i = 0; i < n; i++, p += 8) {
		memset(p, 0, 64);
		p[0] = TNPU_OP_DMA_H2D | (uint64_t)64 << 32;
		/* sram_off 0, pitches 0: rows and planes overwrite one another */
		((uint32_t *)p)[11] = width;		/* width */
		((uint32_t *)p)[12] = 16;		/* height */
		((uint32_t *)p)[13] = 16;		/* depth */
		((uint8_t *)p)[56] = 0xff;		/* every row */
		((uint8_t *)p)[58] = TNPU_DMA_F_FILL;
		((uint8_t *)p)[59] = 0x5a;
	}
	return n * 64;
}

/* A queue of @prio on ring @ring (-1: any); the queues created on the way stay, unused. */
static int queue_on_ring(int fd, uint32_t prio, int ring, uint32_t *handle, uint32_t *hw)
{
	int i;

	for (i = 0; i < TNPU_MAX_QUEUES_TRIES; i++) {
		struct drm_tnpu_queue_create args = { .priority = prio };
		int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &args);

		if (ret)
			return ret;
		if (ring < 0 || args.hw_queue == (uint32_t)ring) {
			*handle = args.handle;
			if (hw)
				*hw = args.hw_queue;
			return 0;
		}
	}
	return -ENOSPC;
}

static int client_init(struct client *c, uint32_t prio, int *ring, uint32_t units)
{
	struct drm_tnpu_caps caps = { 0 };
	uint32_t hw;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = tnpu_open_dev();
	if (c->fd < 0)
		return -errno;
	ret = tnpu_query(c->fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps));
	if (ret)
		return ret;
	if (caps.hw_queues < 2)
		return -EOPNOTSUPP;
	ret = queue_on_ring(c->fd, prio, *ring, &c->queue, &hw);
	if (ret)
		return ret;
	*ring = (int)hw;
	/* the gate's queue: any other ring */
	ret = queue_on_ring(c->fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, (int)((hw + 1) % caps.hw_queues),
			    &c->gate_queue, NULL);
	if (ret)
		return ret;
	ret = tnpu_bo_new(c->fd, 1 << 20, 0, &c->cmd);
	if (ret)
		return ret;
	c->cmd_size = long_job(c->cmd.map, units, caps.sram_bytes / 2);
	c->gate_size = long_job((char *)c->cmd.map + GATE_OFFSET, 4 * units, caps.sram_bytes / 2);
	return 0;
}

static void client_fini(struct client *c)
{
	if (c->fd < 0)
		return;
	tnpu_bo_free(c->fd, &c->cmd);
	close(c->fd);
	c->fd = -1;
}

/* Submits the long job on @queue; its fence replaces the one in @out, after @gate's if any. */
static int submit_long(struct client *c, uint32_t queue, uint32_t gate, uint32_t out)
{
	struct drm_tnpu_sync in = { .handle = gate };
	struct tnpu_job_args j = {
		.queue = queue, .cmd = &c->cmd, .cmd_size = c->cmd_size, .out_sync = out,
		.in = gate ? &in : NULL, .nin = gate ? 1 : 0,
	};

	return tnpu_submit(c->fd, &j);
}

/* The gate: a job four times as long on the client's other ring, so that a backlog queues behind it. */
static int submit_gate(struct client *c, uint32_t out)
{
	struct tnpu_job_args j = {
		.queue = c->gate_queue, .cmd = &c->cmd, .cmd_offset = GATE_OFFSET,
		.cmd_size = c->gate_size, .out_sync = out,
	};

	return tnpu_submit(c->fd, &j);
}

/* The CLOCK_MONOTONIC time the job in @syncobj signalled (after it did), or -errno. */
static int64_t fence_ts(int fd, uint32_t syncobj)
{
	struct sync_fence_info fi = { 0 };
	struct sync_file_info info = { .num_fences = 1, .sync_fence_info = (uintptr_t)&fi };
	int sync_fd, ret;

	if (drmSyncobjWait(fd, &syncobj, 1, tnpu_now_ns() + (int64_t)WAIT_MS * 1000000,
			   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL))
		return -errno;
	if (drmSyncobjExportSyncFile(fd, syncobj, &sync_fd))
		return -errno;
	ret = ioctl(sync_fd, SYNC_IOC_FILE_INFO, &info);
	close(sync_fd);
	if (ret)
		return -errno;
	if (fi.status != 1)
		return fi.status < 0 ? fi.status : -EIO;
	return (int64_t)fi.timestamp_ns;
}

/* Signalled already, without waiting. */
static bool fence_done(int fd, uint32_t syncobj)
{
	return !drmSyncobjWait(fd, &syncobj, 1, 0, 0, NULL);
}

/* Shares @fd's syncobj @handle with @to_fd; returns the handle there, or 0. */
static uint32_t share_syncobj(int fd, uint32_t handle, int to_fd)
{
	uint32_t out = 0;
	int obj_fd;

	if (drmSyncobjHandleToFD(fd, handle, &obj_fd))
		return 0;
	if (drmSyncobjFDToHandle(to_fd, obj_fd, &out))
		out = 0;
	close(obj_fd);
	return out;
}

FIXTURE(sched) {
	struct client a, b;
	int ring;
};

FIXTURE_SETUP(sched)
{
	self->a.fd = self->b.fd = -1;
	self->ring = -1;
}

FIXTURE_TEARDOWN(sched)
{
	client_fini(&self->a);
	client_fini(&self->b);
}

/*
 * JOBS_PER_FILE NORMAL jobs of file A wait for the ring; file B's HIGH job, submitted then, is
 * signalled before every one of those that had not completed when it was submitted, but the one
 * on the hardware.
 */
TEST_F(sched, high_waits_behind_at_most_one_normal)
{
	uint32_t gate, syncs[JOBS_PER_FILE], hsync;
	int64_t ts[JOBS_PER_FILE], hts, submitted;
	bool before[JOBS_PER_FILE];
	int i, pending = 0, overtaken_by = 0, ret;

	ret = client_init(&self->a, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &self->ring, 48);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "one hardware queue: no gate ring");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, client_init(&self->b, DRM_TNPU_QUEUE_PRIORITY_HIGH, &self->ring, 48));
	ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &gate));
	ASSERT_EQ(0, drmSyncobjCreate(self->b.fd, 0, &hsync));
	ASSERT_EQ(0, submit_gate(&self->a, gate));
	for (i = 0; i < JOBS_PER_FILE; i++) {
		ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &syncs[i]));
		ASSERT_EQ(0, submit_long(&self->a, self->a.queue, gate, syncs[i]));
	}
	ASSERT_LT(0, fence_ts(self->a.fd, gate));
	/* the backlog is on its ring (or in the driver's lists) by now: the work item ran */
	usleep(20000);
	ASSERT_EQ(0, submit_long(&self->b, self->b.queue, 0, hsync));
	submitted = tnpu_now_ns();
	for (i = 0; i < JOBS_PER_FILE; i++)
		before[i] = fence_done(self->a.fd, syncs[i]);
	hts = fence_ts(self->b.fd, hsync);
	ASSERT_LT(0, hts);
	for (i = 0; i < JOBS_PER_FILE; i++) {
		ts[i] = fence_ts(self->a.fd, syncs[i]);
		ASSERT_LT(0, ts[i]);
		if (before[i] || ts[i] <= submitted)
			continue;
		pending++;
		if (ts[i] < hts)
			overtaken_by++;
	}
	TH_LOG("NORMAL jobs pending at the HIGH submit: %d, signalled before it: %d",
	       pending, overtaken_by);
	/* otherwise the device outran the guest and nothing was measured */
	ASSERT_GE(pending, 3);
	EXPECT_LE(overtaken_by, 1);
}

/*
 * Files A and B, NORMAL, same ring, JOBS_PER_FILE equal jobs each, all ready at once with A's
 * submitted first: in signal order, B's jobs are not held back until A's are done. Every prefix
 * of the order holds about as many of one file as of the other.
 */
TEST_F(sched, equal_normal_files_share_in_turn)
{
	uint32_t gate, bgate, sa[JOBS_PER_FILE], sb[JOBS_PER_FILE];
	int64_t ta[JOBS_PER_FILE], tb[JOBS_PER_FILE];
	int i, ia = 0, ib = 0, worst = 0;
	char order[2 * JOBS_PER_FILE + 1];

	ASSERT_EQ(0, client_init(&self->a, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &self->ring, 48));
	ASSERT_EQ(0, client_init(&self->b, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &self->ring, 48));
	ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &gate));
	ASSERT_EQ(0, submit_gate(&self->a, gate));
	bgate = share_syncobj(self->a.fd, gate, self->b.fd);
	ASSERT_NE(0, bgate);
	for (i = 0; i < JOBS_PER_FILE; i++) {
		ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &sa[i]));
		ASSERT_EQ(0, submit_long(&self->a, self->a.queue, gate, sa[i]));
	}
	for (i = 0; i < JOBS_PER_FILE; i++) {
		ASSERT_EQ(0, drmSyncobjCreate(self->b.fd, 0, &sb[i]));
		ASSERT_EQ(0, submit_long(&self->b, self->b.queue, bgate, sb[i]));
	}
	/* none of them may have started before the last one was queued */
	ASSERT_FALSE(fence_done(self->a.fd, gate));
	ASSERT_LT(0, fence_ts(self->a.fd, gate));
	for (i = 0; i < JOBS_PER_FILE; i++) {
		ta[i] = fence_ts(self->a.fd, sa[i]);
		tb[i] = fence_ts(self->b.fd, sb[i]);
		ASSERT_LT(0, ta[i]);
		ASSERT_LT(0, tb[i]);
	}
	/* merge the two signal orders (each file's own is its submission order) */
	for (i = 0; i < 2 * JOBS_PER_FILE; i++) {
		bool take_a = ib == JOBS_PER_FILE || (ia < JOBS_PER_FILE && ta[ia] < tb[ib]);
		int lead;

		order[i] = take_a ? 'A' : 'B';
		if (take_a)
			ia++;
		else
			ib++;
		lead = ia > ib ? ia - ib : ib - ia;
		if (ia < JOBS_PER_FILE && ib < JOBS_PER_FILE && lead > worst)
			worst = lead;
	}
	order[2 * JOBS_PER_FILE] = 0;
	TH_LOG("signal order %s, largest lead while both had work: %d", order, worst);
	/*
	 * In turn: shares follow device time, so equal jobs alternate up to their jitter; a lead of
	 * three bounds it (a FIFO runs all of A's first: a lead of JOBS_PER_FILE).
	 */
	EXPECT_LE(worst, 3);
}

TEST_HARNESS_MAIN
