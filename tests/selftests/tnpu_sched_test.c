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
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
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

/* ---- preemption (hardware/queues.md "Preemption", driver.md) ---- */

#define TNPU_OP_DMA_D2H		0x02
#define TNPU_CMD_F_PREEMPT	0x02
#define TNPU_FEAT_PREEMPT	(1u << 24)
#define STEPS			24
#define STEP_UNITS		8
#define RESULT_OFFSET		(768 << 10)

/* One 64-byte DMA command: FILL (H2D) of @fill into row 0, or D2H of @width bytes to @va. */
static void *dma_cmd(void *buf, bool fill, uint8_t fillv, uint64_t va, uint32_t width, uint8_t flags)
{
	uint64_t *p = buf;

	memset(p, 0, 64);
	p[0] = (fill ? TNPU_OP_DMA_H2D : TNPU_OP_DMA_D2H) | (uint64_t)flags << 8 | (uint64_t)64 << 32;
	p[1] = va;
	((uint32_t *)p)[11] = width;
	((uint32_t *)p)[12] = 1;
	((uint32_t *)p)[13] = 1;
	if (fill) {
		((uint8_t *)p)[58] = TNPU_DMA_F_FILL;
		((uint8_t *)p)[59] = fillv;
	}
	return p + 8;
}

/*
 * The NORMAL job: STEPS steps, each a preemption point (but the first), STEP_UNITS long FILLs,
 * then its own marker s + 1 filled into the storage unit and stored to the result BO at 8 * s.
 * No step needs on-chip data of an earlier one.
 */
static uint32_t stepped_job(struct client *c, uint32_t half_sram)
{
	uint8_t *p = c->cmd.map, *start = p;
	uint32_t s;

	for (s = 0; s < STEPS; s++) {
		uint8_t *first = p;

		p += long_job(p, STEP_UNITS, half_sram);
		if (s)
			first[1] |= TNPU_CMD_F_PREEMPT;
		p = dma_cmd(p, true, (uint8_t)(s + 1), 0, 8, 0);
		p = dma_cmd(p, false, 0, c->cmd.va + RESULT_OFFSET + 8 * s, 8, 0);
	}
	return (uint32_t)(p - start);
}

/* "preempted P" of ring @ring in debugfs `rings`, or -errno. */
static int64_t ring_preempted(int ring)
{
	unsigned int q, queued, normal, high;
	unsigned long long n;
	int64_t ret = -ENOENT;
	char line[256];
	int err = 0;
	FILE *f = tnpu_rings_open(&err);

	if (!f)
		return err;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ring %u ready: queued %u on_ring normal %u high %u preempted %llu",
			   &q, &queued, &normal, &high, &n) == 5 && (int)q == ring)
			ret = (int64_t)n;
	fclose(f);
	return ret;
}

/* Runs A's stepped job with a counters BO slot; returns its out-sync (submitted, not waited). */
static int submit_stepped(struct client *c, uint32_t size, uint32_t out, uint32_t slot)
{
	struct tnpu_job_args j = {
		.queue = c->queue, .cmd = &c->cmd, .cmd_size = size, .out_sync = out,
		.counters_bo = c->cmd.handle,
		.counters_offset = RESULT_OFFSET + 4096 + slot * sizeof(struct drm_tnpu_job_counters),
	};

	return tnpu_submit(c->fd, &j);
}

static struct drm_tnpu_job_counters *job_counters(struct client *c, uint32_t slot)
{
	return (void *)((char *)c->cmd.map + RESULT_OFFSET + 4096 +
			slot * sizeof(struct drm_tnpu_job_counters));
}

/*
 * A long NORMAL job of file A runs; file B's HIGH job on the same ring completes before it: the
 * device stopped A's job at a preemption point and the driver resumed it afterwards. A's job
 * signals once, its results are all there and its counters equal those of the same job run
 * without preemption.
 */
TEST_F(sched, high_preempts_a_long_normal_job_which_resumes_with_the_same_results)
{
	struct drm_tnpu_caps caps = { 0 };
	uint32_t size, solo, pre, hsync;
	int64_t before, after, ts_normal, ts_high;
	uint8_t *res;
	int i, ret;

	ret = client_init(&self->a, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &self->ring, 1);
	if (ret == -EOPNOTSUPP)
		SKIP(return, "one hardware queue");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, tnpu_query(self->a.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
	if (!(caps.features & TNPU_FEAT_PREEMPT))
		SKIP(return, "device without preemption (CAP_FEATURES bit 24)");
	ASSERT_EQ(0, client_init(&self->b, DRM_TNPU_QUEUE_PRIORITY_HIGH, &self->ring, 1));
	size = stepped_job(&self->a, caps.sram_bytes / 2);
	res = (uint8_t *)self->a.cmd.map + RESULT_OFFSET;

	/* alone: the reference counters, and how long the job takes */
	ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &solo));
	before = tnpu_now_ns();
	ASSERT_EQ(0, submit_stepped(&self->a, size, solo, 0));
	ASSERT_LT(0, fence_ts(self->a.fd, solo));
	TH_LOG("the NORMAL job alone: %lld ms", (long long)(tnpu_now_ns() - before) / 1000000);
	ASSERT_EQ(0, job_counters(&self->a, 0)->status);
	for (i = 0; i < STEPS; i++)
		ASSERT_EQ(i + 1, res[8 * i]);

	memset(res, 0, 8 * STEPS);
	before = ring_preempted(self->ring);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, drmSyncobjCreate(self->a.fd, 0, &pre));
	ASSERT_EQ(0, drmSyncobjCreate(self->b.fd, 0, &hsync));
	ASSERT_EQ(0, submit_stepped(&self->a, size, pre, 1));
	/* the NORMAL job is on the hardware, a few steps in */
	while (!res[8 * 2] && !fence_done(self->a.fd, pre))
		usleep(1000);
	ASSERT_EQ(0, submit_long(&self->b, self->b.queue, 0, hsync));
	ts_high = fence_ts(self->b.fd, hsync);
	ASSERT_LT(0, ts_high);
	ts_normal = fence_ts(self->a.fd, pre);
	ASSERT_LT(0, ts_normal);
	after = ring_preempted(self->ring);
	TH_LOG("preemptions on ring %d: %lld; HIGH done %lld ms before the NORMAL job", self->ring,
	       (long long)(after - before), (long long)(ts_normal - ts_high) / 1000000);
	EXPECT_LT(ts_high, ts_normal);
	EXPECT_LE(before + 1, after);
	ASSERT_EQ(0, job_counters(&self->a, 1)->status);
	for (i = 0; i < STEPS; i++)
		ASSERT_EQ(i + 1, res[8 * i]);
	for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
		EXPECT_EQ(job_counters(&self->a, 0)->counter[i], job_counters(&self->a, 1)->counter[i])
			TH_LOG("counter %d", i);
}

TEST_HARNESS_MAIN
