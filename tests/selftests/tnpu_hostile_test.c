// SPDX-License-Identifier: GPL-2.0-only
/*
 * Regression tests for what a hostile user found through tnpu.ko (issue 17): DRM core ioctls that an
 * accel node must not serve, user-sized arrays of the core and of SUBMIT, timeline points >= 2^32,
 * QUEUE_DESTROY/close() while a queued job waits for a dependency that does not signal, and BOs
 * larger than the RAM can pin.
 */
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/sysinfo.h>
#include <termios.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

/* 6.12's numbers; libdrm's drm.h may predate the newest */
#define NR_SYNCOBJ_WAIT			0xc3
#define NR_SYNCOBJ_RESET		0xc4
#define NR_SYNCOBJ_SIGNAL		0xc5
#define NR_SYNCOBJ_TIMELINE_WAIT	0xca
#define NR_SYNCOBJ_QUERY		0xcb
#define NR_SYNCOBJ_TIMELINE_SIGNAL	0xcd

/* Documentation/uapi.md: the DRM core ioctls the accel node serves */
static const unsigned int allowed_nrs[] = {
	0x00,		/* VERSION */
	0x09,		/* GEM_CLOSE */
	0x0c,		/* GET_CAP */
	0x2d, 0x2e,	/* PRIME_HANDLE_TO_FD, PRIME_FD_TO_HANDLE */
	0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5,	/* SYNCOBJ_CREATE .. SIGNAL */
	0xca, 0xcb, 0xcc, 0xcd, 0xcf,	/* SYNCOBJ_TIMELINE_WAIT, QUERY, TRANSFER, TIMELINE_SIGNAL, EVENTFD */
};

static bool nr_allowed(unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < sizeof(allowed_nrs) / sizeof(allowed_nrs[0]); i++)
		if (allowed_nrs[i] == nr)
			return true;
	return false;
}

FIXTURE(hostile) {
	struct tnpu_ctx c;
};

FIXTURE_SETUP(hostile)
{
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
}

FIXTURE_TEARDOWN(hostile)
{
	tnpu_ctx_fini(&self->c);
}

/* 6.12 oopsed in drm_getmagic (no master on an accel file) and then hung every GET_UNIQUE */
TEST_F(hostile, get_magic_then_get_unique_fail_with_eacces)
{
	struct drm_auth auth = { 0 };
	struct drm_unique unique = { 0 };

	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_GET_MAGIC, &auth));
	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_GET_UNIQUE, &unique));
	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_AUTH_MAGIC, &auth));
	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_SET_MASTER, NULL));
	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_DROP_MASTER, NULL));
	EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOCTL_SET_UNIQUE, &unique));
	/* libdrm's drmIsMaster() is "AUTH_MAGIC does not fail with EACCES" */
	EXPECT_EQ(0, drmIsMaster(self->c.fd));
}

/*
 * Every core ioctl number (0x00..0x3f, 0xa0..0xff), as _IO and as a 64-byte _IOWR: the ones outside
 * the allow list fail with EACCES, the allowed ones return (with whatever their zeroed argument
 * earns); the file keeps working.
 */
TEST_F(hostile, every_core_ioctl_number_returns_the_documented_errno)
{
	unsigned char arg[64];
	unsigned int nr;

	for (nr = 0; nr < 0x100; nr++) {
		if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END)
			continue;
		if (nr_allowed(nr))
			continue;
		memset(arg, 0, sizeof(arg));
		EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IO(nr), NULL)) TH_LOG("nr 0x%02x", nr);
		EXPECT_EQ(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOWR(nr, arg), arg))
			TH_LOG("nr 0x%02x", nr);
	}
	for (nr = 0; nr < sizeof(allowed_nrs) / sizeof(allowed_nrs[0]); nr++) {
		memset(arg, 0, sizeof(arg));
		EXPECT_NE(-EACCES, tnpu_ioctl(self->c.fd, DRM_IOWR(allowed_nrs[nr], arg), arg))
			TH_LOG("nr 0x%02x", allowed_nrs[nr]);
	}
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 5));
	EXPECT_EQ(5, ((uint64_t *)self->c.data.map)[0]);
}

/* The filter keeps the core's answer to foreign ioctl types (TCGETS from isatty() shares nr 0x01). */
TEST_F(hostile, ioctls_of_another_type_fail_with_enotty)
{
	struct termios t;

	errno = 0;
	EXPECT_EQ(0, isatty(self->c.fd));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-ENOTTY, tnpu_ioctl(self->c.fd, TCGETS, &t));
	EXPECT_EQ(-ENOTTY, tnpu_ioctl(self->c.fd, _IOWR('X', 0x00, struct drm_version), &t));
}

TEST_F(hostile, syncobj_arrays_above_the_limit_fail_with_einval)
{
	static uint32_t handles[DRM_TNPU_MAX_SYNCOBJ_HANDLES + 1];
	static uint64_t points[DRM_TNPU_MAX_SYNCOBJ_HANDLES + 1];
	struct drm_syncobj_wait w = { .handles = (uintptr_t)handles };
	struct drm_syncobj_timeline_wait tw = { .handles = (uintptr_t)handles,
						.points = (uintptr_t)points };
	struct drm_syncobj_array a = { .handles = (uintptr_t)handles };
	struct drm_syncobj_timeline_array ta = { .handles = (uintptr_t)handles,
						 .points = (uintptr_t)points };
	unsigned int i;

	for (i = 0; i <= DRM_TNPU_MAX_SYNCOBJ_HANDLES; i++)
		handles[i] = self->c.sync;
	/* 2^30 handles: a 4 GiB kmalloc in the core, a page-allocator WARNING */
	w.count_handles = 1u << 30;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_WAIT, w), &w));
	tw.count_handles = 1u << 30;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_TIMELINE_WAIT, tw), &tw));
	ta.count_handles = 1u << 30;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_TIMELINE_SIGNAL, ta), &ta));
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_QUERY, ta), &ta));
	/* one above the limit, with valid handles: the core alone would accept it */
	a.count_handles = DRM_TNPU_MAX_SYNCOBJ_HANDLES + 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_SIGNAL, a), &a));
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_RESET, a), &a));
	/* at the limit it works */
	a.count_handles = DRM_TNPU_MAX_SYNCOBJ_HANDLES;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_SIGNAL, a), &a));
	w.count_handles = DRM_TNPU_MAX_SYNCOBJ_HANDLES;
	w.timeout_nsec = tnpu_now_ns() + 1000000000ll;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_WAIT, w), &w));
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOWR(NR_SYNCOBJ_RESET, a), &a));
}

static int submit_with_bos(struct tnpu_ctx *c, uint32_t stride, uint32_t count, void *array)
{
	struct drm_tnpu_submit s = {
		.queue = c->queue, .cmd_bo = c->cmd.handle, .cmd_size = 8,
		.bos = { stride, count, (uintptr_t)array },
	};

	tnpu_cmd_nop(c->cmd.map);
	return tnpu_ioctl(c->fd, DRM_IOCTL_TNPU_SUBMIT, &s);
}

/* one SUBMIT with bos {stride 0xffffffff, count 16} spent 29 s zero-checking padding */
TEST_F(hostile, submit_array_strides_above_the_cap_fail_with_einval)
{
	static unsigned char buf[DRM_TNPU_MAX_ARRAY_STRIDE * 16];
	struct drm_tnpu_bo_ref *ref = (void *)buf;
	struct drm_tnpu_submit s = {
		.queue = self->c.queue, .cmd_bo = self->c.cmd.handle, .cmd_size = 8,
		.in_syncs = { 0x10000, 1, (uintptr_t)buf },
	};

	ref->handle = self->c.data.handle;
	ref->flags = DRM_TNPU_BO_REF_READ;
	EXPECT_EQ(-EINVAL, submit_with_bos(&self->c, 0xffffffffu, 16, buf));
	EXPECT_EQ(-EINVAL, submit_with_bos(&self->c, DRM_TNPU_MAX_ARRAY_STRIDE + 8, 1, buf));
	EXPECT_EQ(0, submit_with_bos(&self->c, DRM_TNPU_MAX_ARRAY_STRIDE, 1, buf));
	tnpu_cmd_nop(self->c.cmd.map);
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, &s));
}

/* uapi.md: an in-sync timeline point that does not exist is EINVAL, also above 2^32 */
TEST_F(hostile, missing_timeline_point_above_2_32_fails_with_einval)
{
	struct drm_tnpu_sync in = { .point = (1ull << 32) + 3 };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .in = &in, .nin = 1 };
	uint64_t three = 3;

	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &in.handle));
	ASSERT_EQ(0, drmSyncobjTimelineSignal(self->c.fd, &in.handle, &three, 1));
	j.cmd_size = tnpu_cmd_nop(self->c.cmd.map);
	/* 6.12's drm_sched_job_add_syncobj_dependency() took it for point 3 */
	EXPECT_EQ(-EINVAL, tnpu_submit(self->c.fd, &j));
	in.point = 3;
	EXPECT_EQ(0, tnpu_submit(self->c.fd, &j));
	in.point = 4;
	EXPECT_EQ(-EINVAL, tnpu_submit(self->c.fd, &j));
}

static int set_timeout_ms(const char *v)
{
	return tnpu_write_file(TNPU_PARAM, v);
}

static void get_timeout_ms(char *buf, size_t len)
{
	FILE *f = fopen(TNPU_PARAM, "r");

	snprintf(buf, len, "30000");
	if (f) {
		if (!fgets(buf, len, f))
			snprintf(buf, len, "30000");
		fclose(f);
	}
}

/* timeout_ms 0 reset the device on every scheduler tick: driver.md documents 100..3600000 */
TEST_F(hostile, timeout_ms_out_of_range_is_rejected)
{
	char old[32], now[32];

	get_timeout_ms(old, sizeof(old));
	EXPECT_EQ(-EINVAL, set_timeout_ms("0"));
	EXPECT_EQ(-EINVAL, set_timeout_ms("99"));
	EXPECT_EQ(-EINVAL, set_timeout_ms("3600001"));
	EXPECT_EQ(-EINVAL, set_timeout_ms("-1"));
	get_timeout_ms(now, sizeof(now));
	EXPECT_STREQ(old, now);
	EXPECT_EQ(0, set_timeout_ms("100"));
	EXPECT_EQ(0, set_timeout_ms("3600000"));
	EXPECT_EQ(0, set_timeout_ms(old));
}

/* 0 when @sync has a fence that has signalled, -ETIME when it has none yet or it is pending */
static int sync_signalled(int fd, uint32_t sync)
{
	return drmSyncobjWait(fd, &sync, 1, 0, 0, NULL) ? -errno : 0;
}

/*
 * Submits a job that the hang injection stops on its ring: its fence stays unsignalled until the
 * driver's timeout (timeout_ms) resets the device. The job of the unsignalled dependency.
 */
static int submit_hung_job(struct tnpu_ctx *c, uint32_t queue, uint32_t out_sync)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_READ };
	struct tnpu_job_args j = { .queue = queue, .cmd = &c->cmd, .cmd_offset = 1024,
				   .refs = &ref, .nrefs = 1, .out_sync = out_sync };
	int ret = tnpu_inject("inject_hang");

	if (ret)
		return ret;
	j.cmd_size = tnpu_cmd_nop((char *)c->cmd.map + 1024);
	ret = tnpu_submit(c->fd, &j);
	usleep(200000);	/* it takes the injected hang before anything else runs */
	return ret;
}

/*
 * The job timeout is the scheduler's own timer (no polling tick): lowering timeout_ms must reach a
 * job that already hangs under the old value.
 */
TEST_F(hostile, lowering_timeout_ms_reaches_a_hung_job)
{
	char old[32];

	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("3600000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, self->c.queue, self->c.sync));
	EXPECT_EQ(-ETIME, sync_signalled(self->c.fd, self->c.sync));
	ASSERT_EQ(0, set_timeout_ms("1000"));
	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, self->c.sync, 0, 15000));
	set_timeout_ms(old);
	/* the device works again */
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 11));
	EXPECT_EQ(11, ((uint64_t *)self->c.data.map)[0]);
}

/*
 * A job that wants its counters took every credit of its ring, so it waited for the ring to drain
 * (and stalled every other file's jobs on that ring meanwhile). Now it is handed to the ring like
 * any job (and holds no job behind it back either: tnpu_perfmon_test).
 */
TEST_F(hostile, counters_job_does_not_wait_for_its_ring_to_drain)
{
	struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_READ };
	struct tnpu_job_args j = { .cmd = &self->c.cmd, .refs = &ref, .nrefs = 1,
				   .out_sync = self->c.sync };
	struct drm_tnpu_job_counters *jc;
	struct tnpu_bo cnt;
	uint32_t hung;
	char old[32];

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, 0, &cnt));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("3000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, cr.handle, hung));
	ASSERT_EQ(1, tnpu_ring_jobs((int)cr.hw_queue));
	j.queue = cr.handle;
	j.counters_bo = cnt.handle;
	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + 24, 3);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	usleep(300000);
	/* handed to the driver behind the hung job (its ready list), not held back for all the credits */
	EXPECT_EQ(2, tnpu_ring_jobs((int)cr.hw_queue));

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 30000));
	EXPECT_EQ(3, ((uint64_t *)self->c.data.map)[3]);
	jc = cnt.map;
	EXPECT_EQ(0, jc->status);
	EXPECT_EQ(1, jc->counter[13]);	/* commands: the one FENCE */
	set_timeout_ms(old);
	tnpu_bo_free(self->c.fd, &cnt);
}

/*
 * A job waiting for point 2^32 + 3 while point 3 has signalled and 2^32 + 3 has not must not run:
 * the truncated point let it run before the job that signals it.
 */
TEST_F(hostile, job_waits_for_its_timeline_point_above_2_32)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_READ };
	uint64_t *data = self->c.data.map, three = 3, big = (1ull << 32) + 3;
	uint32_t timeline, hung, qa = 0, qb = 0, ring_a = 0, i;
	struct drm_tnpu_sync in = { .point = big };
	struct tnpu_job_args j = { .cmd = &self->c.cmd, .refs = &ref, .nrefs = 1 };
	struct drm_tnpu_caps caps;
	char old[32];

	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
	if (caps.hw_queues < 2)
		SKIP(return, "needs two hardware queues");
	for (i = 0; i < 4 && !qb; i++) {
		struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };

		ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
		if (!qa) {
			qa = cr.handle;
			ring_a = cr.hw_queue;
		} else if (cr.hw_queue != ring_a) {
			qb = cr.handle;
		}
	}
	ASSERT_NE(0, qb);
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &timeline));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	ASSERT_EQ(0, drmSyncobjTimelineSignal(self->c.fd, &timeline, &three, 1));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("3000"));

	ASSERT_EQ(0, submit_hung_job(&self->c, qa, hung));
	/* behind the hung job on ring A: signals point 2^32 + 3 after the reset */
	j.queue = qa;
	j.out_sync = timeline;
	j.out_point = big;
	j.cmd_offset = 0;
	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 1);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	/* on ring B, free to run at once if it ignored its dependency */
	j.queue = qb;
	j.in = &in;
	j.nin = 1;
	in.handle = timeline;
	j.out_sync = self->c.sync;
	j.out_point = 0;
	j.cmd_offset = 64;
	j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64, self->c.data.va + 8, 2);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	usleep(500000);
	EXPECT_EQ(-ETIME, sync_signalled(self->c.fd, self->c.sync));
	EXPECT_EQ(0, data[1]);

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, timeline, big, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 30000));
	EXPECT_EQ(1, data[0]);
	EXPECT_EQ(2, data[1]);
	set_timeout_ms(old);
}

/*
 * QUEUE_DESTROY of a queue whose job waits for a dependency that does not signal for seconds
 * returns at once (uapi.md: 1 s); the job fails with ESRCH and never runs.
 */
TEST_F(hostile, queue_destroy_does_not_wait_for_a_blocked_dependency)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_sync in = { 0 };
	struct tnpu_job_args j = { .cmd = &self->c.cmd, .refs = &ref, .nrefs = 1, .in = &in,
				   .nin = 1, .out_sync = self->c.sync };
	struct drm_tnpu_queue_destroy d = { 0 };
	uint64_t *data = self->c.data.map;
	uint32_t hung, blocked;
	char old[32];
	int64_t t0;

	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	ASSERT_EQ(0, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &blocked));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("5000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, self->c.queue, hung));
	j.queue = blocked;
	in.handle = hung;
	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + 16, 7);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	d.handle = blocked;
	t0 = tnpu_now_ns();
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	TH_LOG("QUEUE_DESTROY took %lld ms", (long long)(tnpu_now_ns() - t0) / 1000000);
	/* returned while the dependency still had seconds to go */
	EXPECT_EQ(-ETIME, sync_signalled(self->c.fd, hung));

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	EXPECT_EQ(-ESRCH, tnpu_sync_status(self->c.fd, self->c.sync, 0, 30000));
	usleep(200000);
	EXPECT_EQ(0, data[2]);
	set_timeout_ms(old);
}

/* The same through close(): the file's queues go without waiting for the dependency. */
TEST_F(hostile, close_does_not_wait_for_a_blocked_dependency)
{
	struct drm_tnpu_sync in = { 0 };
	struct tnpu_ctx other;
	uint32_t hung;
	int sync_fd = -1;
	char old[32];
	struct tnpu_job_args j;

	ASSERT_EQ(0, tnpu_ctx_init(&other));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("5000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, self->c.queue, hung));
	/* the other file waits for the hung job through an imported sync file */
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->c.fd, hung, &sync_fd));
	ASSERT_EQ(0, drmSyncobjCreate(other.fd, 0, &in.handle));
	ASSERT_EQ(0, drmSyncobjImportSyncFile(other.fd, in.handle, sync_fd));
	close(sync_fd);
	memset(&j, 0, sizeof(j));
	j.queue = other.queue;
	j.cmd = &other.cmd;
	j.in = &in;
	j.nin = 1;
	j.cmd_size = tnpu_cmd_fence(other.cmd.map, other.data.va, 7);
	ASSERT_EQ(0, tnpu_submit(other.fd, &j));
	tnpu_ctx_fini(&other);
	EXPECT_EQ(-ETIME, sync_signalled(self->c.fd, hung));
	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	set_timeout_ms(old);
}

/* uapi.md BO_CREATE: the driver's pin limit, half of the RAM, for all tnpu BOs together */
static uint64_t pin_limit(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return 0;
	return (uint64_t)si.totalram * si.mem_unit / 2;
}

static int bo_create(int fd, uint64_t size, uint32_t *handle)
{
	struct drm_tnpu_bo_create c = { .size = size };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_BO_CREATE, &c);

	*handle = c.handle;
	return ret;
}

static uint64_t max_bo_size(int fd)
{
	struct drm_tnpu_caps caps = { 0 };

	if (tnpu_query(fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)))
		return 0;
	return caps.max_bo_size;
}

static void bo_close(int fd, uint32_t handle)
{
	struct drm_gem_close cl = { .handle = handle };

	tnpu_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &cl);
}

/* A 4 GiB BO in a 1 GiB guest pinned every page in the ioctl: soft lockups, then the OOM killer. */
TEST_F(hostile, bo_larger_than_the_pin_limit_fails_with_e2big)
{
	uint64_t limit = pin_limit(), max = max_bo_size(self->c.fd), size;
	uint32_t handle;

	ASSERT_NE(0, limit);
	ASSERT_NE(0, max);
	if (limit >= max)
		SKIP(return, "RAM above twice caps.max_bo_size");
	size = max;
	EXPECT_EQ(-E2BIG, bo_create(self->c.fd, size, &handle));
	size = (limit | 4095) + 1 + 4096;
	EXPECT_EQ(-E2BIG, bo_create(self->c.fd, size, &handle));
	/* nothing was pinned by the refusals */
	EXPECT_EQ(0, bo_create(self->c.fd, 1 << 20, &handle));
	bo_close(self->c.fd, handle);
}

/* Each BO below the limit, together above it: ENOMEM before any page is allocated.  Pinning 0.3 of the
 * guest's RAM twice takes seconds under TCG and on the debug kernel (KASAN poisons every page), over the
 * harness's default 30 s on a loaded host: the test has its own bound. */
TEST_F_TIMEOUT(hostile, bos_above_the_pin_limit_together_fail_with_enomem, 180)
{
	/* 0.6 of the limit (0.3 of the RAM): one fits, two do not */
	uint64_t size = pin_limit() / 5 * 3 & ~4095ull;
	uint32_t first, second;
	int other;

	ASSERT_NE(0, size);
	if (size > max_bo_size(self->c.fd))
		SKIP(return, "RAM above twice caps.max_bo_size");
	ASSERT_EQ(0, bo_create(self->c.fd, size, &first));
	/* the limit is for all files: another open file is refused as well */
	other = tnpu_open_dev();
	ASSERT_LE(0, other);
	EXPECT_EQ(-ENOMEM, bo_create(other, size, &second));
	EXPECT_EQ(-ENOMEM, bo_create(self->c.fd, size, &second));
	/* closing the first gives its share back */
	bo_close(self->c.fd, first);
	EXPECT_EQ(0, bo_create(other, size, &second));
	bo_close(other, second);
	close(other);
}

TEST_HARNESS_MAIN
