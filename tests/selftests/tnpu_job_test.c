// SPDX-License-Identifier: GPL-2.0-only
/*
 * Job execution through tnpu.ko: results, ordering, syncobjs, per-job counters, MMU isolation
 * between files and processes, MMU faults, device errors, and hang/fault/error injection with
 * recovery (the next job succeeds).
 */
#include <poll.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define CNT_TOTAL_CYCLES	0
#define CNT_MMU_FAULTS		12
#define CNT_COMMANDS		13
#define ERR_MMU_NOT_PRESENT	10
#define ERR_MMU_PERMISSION	11

FIXTURE(job) {
	struct tnpu_ctx c;
};

FIXTURE_SETUP(job)
{
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
}

FIXTURE_TEARDOWN(job)
{
	tnpu_ctx_fini(&self->c);
}

static struct drm_tnpu_counters counters(int fd)
{
	struct drm_tnpu_counters cnt = { 0 };

	tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &cnt, sizeof(cnt));
	return cnt;
}

/*
 * The "ring N stats:" lines of debugfs rings (Documentation/driver.md) into st[]; returns the rings
 * read, or -errno when the file cannot be opened.
 */
static int debugfs_ring_stats(struct drm_tnpu_ring_stats *st, unsigned int max)
{
	unsigned int q, n = 0;
	char line[256];
	int err = 0;
	FILE *f = tnpu_rings_open(&err);

	if (!f)
		return err;
	memset(st, 0, max * sizeof(*st));
	while (fgets(line, sizeof(line), f)) {
		struct drm_tnpu_ring_stats s;

		if (sscanf(line, "ring %u stats: jobs_done %llu jobs_failed %llu "
				 "jobs_timedout %llu busy_ns %llu",
			   &q, (unsigned long long *)&s.jobs_done, (unsigned long long *)&s.jobs_failed,
			   (unsigned long long *)&s.jobs_timedout, (unsigned long long *)&s.busy_ns) != 5 ||
		    q >= max)
			continue;
		st[q] = s;
		n++;
	}
	fclose(f);
	return (int)n;
}

TEST_F(job, fence_job_writes_value)
{
	ASSERT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va + 16, 42));
	EXPECT_EQ(42, ((uint64_t *)self->c.data.map)[2]);
}

TEST_F(job, jobs_of_one_queue_run_in_order_with_timeline_points)
{
	uint64_t *cmd = self->c.cmd.map, *data = self->c.data.map;
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	uint32_t tl, i, n = 200;

	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &tl));
	for (i = 0; i < n; i++) {
		/* every job overwrites slot 0 and sets its own slot */
		struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .cmd_offset = 64 * i, .refs = &ref, .nrefs = 1,
					   .out_sync = tl, .out_point = i + 1 };
		uint32_t len = tnpu_cmd_fence(cmd + 8 * i, self->c.data.va, i + 1);

		len += tnpu_cmd_fence(cmd + 8 * i + 3, self->c.data.va + 8 * (i + 1), i + 1);
		j.cmd_size = len;
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j)) TH_LOG("job %u", i);
	}
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, tl, n, 120000));
	EXPECT_EQ(n, data[0]);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(i + 1, data[i + 1]) TH_LOG("slot %u", i + 1);
	}
	drmSyncobjDestroy(self->c.fd, tl);
}

TEST_F(job, in_syncobj_orders_jobs_across_queues)
{
	struct drm_tnpu_sync in = { 0 };
	uint32_t q2, s1, s2;
	uint64_t *data = self->c.data.map;
	int i;

	ASSERT_EQ(0, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_LOW, &q2));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &s1));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &s2));
	for (i = 0; i < 20; i++) {
		struct tnpu_job_args a = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .cmd_offset = 0, .refs = NULL, .nrefs = 0,
					   .out_sync = s1 };
		struct tnpu_job_args b = { .queue = q2, .cmd = &self->c.cmd, .cmd_offset = 64,
					   .nin = 1, .in = &in, .out_sync = s2 };

		/* no BO references: only the syncobj orders B after A */
		a.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 2 * i + 1);
		b.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64, self->c.data.va, 2 * i + 2);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &a));
		in.handle = s1;
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &b));
		ASSERT_EQ(0, tnpu_sync_status(self->c.fd, s2, 0, 60000));
		EXPECT_EQ(2 * i + 2, data[0]);
	}
}

TEST_F(job, implicit_bo_dependency_orders_jobs_across_queues)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	uint64_t *data = self->c.data.map;
	uint32_t q2;
	int i;

	ASSERT_EQ(0, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_HIGH, &q2));
	for (i = 0; i < 20; i++) {
		struct tnpu_job_args a = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .refs = &ref, .nrefs = 1 };
		struct tnpu_job_args b = { .queue = q2, .cmd = &self->c.cmd, .cmd_offset = 64,
					   .refs = &ref, .nrefs = 1, .out_sync = self->c.sync };

		a.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 2 * i + 1);
		b.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64, self->c.data.va, 2 * i + 2);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &a));
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &b));
		ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
		EXPECT_EQ(2 * i + 2, data[0]);
	}
}

TEST_F(job, per_job_counters_are_written)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .refs = &ref,
				   .nrefs = 1, .out_sync = self->c.sync,
				   .counters_bo = self->c.data.handle, .counters_offset = 4096 };
	struct drm_tnpu_job_counters *jc;
	uint32_t len;

	jc = (void *)((char *)self->c.data.map + 4096);
	memset(jc, 0xff, sizeof(*jc));
	len = tnpu_cmd_nop(self->c.cmd.map);
	len += tnpu_cmd_fence((char *)self->c.cmd.map + len, self->c.data.va, 5);
	j.cmd_size = len;
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(0, jc->status);
	EXPECT_EQ(0, jc->hw_error);
	EXPECT_EQ(2, jc->counter[CNT_COMMANDS]);
	EXPECT_GT(jc->counter[CNT_TOTAL_CYCLES], 0);
	EXPECT_EQ(0, jc->counter[CNT_MMU_FAULTS]);
	EXPECT_EQ(0, jc->counter[31]);
}

TEST_F(job, bad_command_fails_with_eio_and_file_keeps_working)
{
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .cmd_size = 8,
				   .out_sync = self->c.sync, .counters_bo = self->c.data.handle,
				   .counters_offset = 4096 };
	struct drm_tnpu_job_counters *jc = (void *)((char *)self->c.data.map + 4096);
	uint64_t *cmd = self->c.cmd.map;

	cmd[0] = 0xee | (uint64_t)8 << 32;	/* unknown opcode: CMD_OPCODE */
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	EXPECT_EQ(-EIO, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(-EIO, jc->status);
	EXPECT_EQ(1, jc->hw_error);
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 64, self->c.data.va, 77));
	EXPECT_EQ(77, ((uint64_t *)self->c.data.map)[0]);
}

TEST_F(job, mmu_fault_fails_job_and_marks_file)
{
	uint64_t bad = self->c.data.va + self->c.data.size;	/* the guard page */
	struct drm_tnpu_fault fault = { 0 };
	struct tnpu_ctx fresh;
	uint64_t before = counters(self->c.fd).mmu_faults;

	EXPECT_EQ(-EFAULT, tnpu_run_fence(&self->c, 0, bad, 1));
	EXPECT_EQ(before + 1, counters(self->c.fd).mmu_faults);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_FAULT, &fault, sizeof(fault)));
	EXPECT_EQ(1, fault.faulted);
	EXPECT_EQ(ERR_MMU_NOT_PRESENT, fault.error_code);
	EXPECT_EQ(bad, fault.address);
	EXPECT_EQ(1, fault.error_info & 1);	/* write access */
	EXPECT_EQ(self->c.queue, fault.queue);
	/* later submits on the faulted file are refused */
	EXPECT_EQ(-EBADFD, tnpu_run_fence(&self->c, 64, self->c.data.va, 2));
	/* other files are unaffected */
	ASSERT_EQ(0, tnpu_ctx_init(&fresh));
	EXPECT_EQ(0, tnpu_run_fence(&fresh, 0, fresh.data.va, 3));
	EXPECT_EQ(3, ((uint64_t *)fresh.data.map)[0]);
	tnpu_ctx_fini(&fresh);
}

TEST_F(job, faulting_job_reports_status_and_counters)
{
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
				   .out_sync = self->c.sync, .counters_bo = self->c.data.handle,
				   .counters_offset = 4096 };
	struct drm_tnpu_job_counters *jc = (void *)((char *)self->c.data.map + 4096);

	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + self->c.data.size, 1);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	EXPECT_EQ(-EFAULT, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(-EFAULT, jc->status);
	EXPECT_EQ(ERR_MMU_NOT_PRESENT, jc->hw_error);
	EXPECT_EQ(1, jc->counter[CNT_MMU_FAULTS]);
	EXPECT_EQ(1, jc->counter[CNT_COMMANDS]);
}

TEST_F(job, queue_destroy_lets_submitted_jobs_finish)
{
	struct drm_tnpu_queue_destroy d = { .handle = self->c.queue };
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .refs = &ref,
				   .nrefs = 1, .out_sync = self->c.sync };

	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 31);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(31, ((uint64_t *)self->c.data.map)[0]);
	EXPECT_EQ(-ENOENT, tnpu_submit(self->c.fd, &j));
}

TEST_F(job, device_counters_grow_with_jobs)
{
	struct drm_tnpu_counters before = counters(self->c.fd), after;

	ASSERT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 1));
	after = counters(self->c.fd);
	EXPECT_GE(after.jobs_submitted, before.jobs_submitted + 1);
	EXPECT_GE(after.jobs_completed, before.jobs_completed + 1);
	if (after.resets == before.resets) {
		EXPECT_GE(after.device[CNT_COMMANDS], before.device[CNT_COMMANDS] + 1);
		EXPECT_GT(after.device[CNT_TOTAL_CYCLES], before.device[CNT_TOTAL_CYCLES]);
	}
}

/*
 * debugfs rings shows the per-ring statistics of QUERY_COUNTERS: each value lies between two
 * QUERY answers taken around the read, and the numbers move with one good and one failing job.
 */
TEST_F(job, debugfs_rings_shows_per_ring_stats_that_move_with_jobs)
{
	struct drm_tnpu_ring_stats before[DRM_TNPU_MAX_RINGS], after[DRM_TNPU_MAX_RINGS];
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .cmd_size = 8,
				   .out_sync = self->c.sync };
	struct drm_tnpu_counters q0, q1;
	uint64_t sum0[4] = { 0 }, sum1[4] = { 0 };
	int n, i;

	ASSERT_LT(0, debugfs_ring_stats(before, DRM_TNPU_MAX_RINGS));
	ASSERT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 5));
	((uint64_t *)self->c.cmd.map)[0] = 0xee | (uint64_t)8 << 32;	/* unknown opcode */
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	ASSERT_EQ(-EIO, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));

	q0 = counters(self->c.fd);
	n = debugfs_ring_stats(after, DRM_TNPU_MAX_RINGS);
	q1 = counters(self->c.fd);
	ASSERT_EQ((int)q1.num_rings, n) TH_LOG("one stats line per hardware ring");
	for (i = 0; i < n; i++) {
		EXPECT_LE(q0.rings[i].jobs_done, after[i].jobs_done);
		EXPECT_LE(after[i].jobs_done, q1.rings[i].jobs_done);
		EXPECT_LE(q0.rings[i].jobs_failed, after[i].jobs_failed);
		EXPECT_LE(after[i].jobs_failed, q1.rings[i].jobs_failed);
		EXPECT_LE(q0.rings[i].jobs_timedout, after[i].jobs_timedout);
		EXPECT_LE(after[i].jobs_timedout, q1.rings[i].jobs_timedout);
		EXPECT_LE(q0.rings[i].busy_ns, after[i].busy_ns);
		EXPECT_LE(after[i].busy_ns, q1.rings[i].busy_ns);
		sum0[0] += before[i].jobs_done;
		sum1[0] += after[i].jobs_done;
		sum0[1] += before[i].jobs_failed;
		sum1[1] += after[i].jobs_failed;
		sum0[2] += before[i].jobs_timedout;
		sum1[2] += after[i].jobs_timedout;
		sum0[3] += before[i].busy_ns;
		sum1[3] += after[i].busy_ns;
	}
	EXPECT_GE(sum1[0], sum0[0] + 1);
	EXPECT_GE(sum1[1], sum0[1] + 1);
	EXPECT_LE(sum0[2], sum1[2]);
	EXPECT_GT(sum1[3], sum0[3]);
}

TEST_F(job, device_read_only_bo_write_is_permission_fault)
{
	struct tnpu_bo ro;
	struct drm_tnpu_fault fault = { 0 };

	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, DRM_TNPU_BO_DEVICE_READ_ONLY, &ro));
	EXPECT_EQ(-EFAULT, tnpu_run_fence(&self->c, 0, ro.va, 1));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_FAULT, &fault, sizeof(fault)));
	EXPECT_EQ(ERR_MMU_PERMISSION, fault.error_code);
	EXPECT_EQ(0, ((uint64_t *)ro.map)[0]);
	tnpu_bo_free(self->c.fd, &ro);
}

TEST_F(job, freed_bo_va_is_unmapped)
{
	struct tnpu_bo tmp;
	uint64_t va;

	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, 0, &tmp));
	va = tmp.va;
	tnpu_bo_free(self->c.fd, &tmp);
	EXPECT_EQ(-EFAULT, tnpu_run_fence(&self->c, 0, va, 1));
}

/*
 * Process B crafts jobs that target process A's BO VA. In B's address space that VA is either
 * unmapped (fault) or one of B's own BOs; A's memory never changes.
 */
TEST_F(job, other_process_cannot_reach_bo_by_va)
{
	uint64_t *data = self->c.data.map;
	struct tnpu_bo extra[4];
	int i, status;
	pid_t pid;

	/* push A's target BO to a VA that B will not have mapped */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 65536, 0, &extra[i]));
	((uint64_t *)extra[3].map)[0] = 0x1111;
	data[0] = 0x2222;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct tnpu_ctx b;
		int r1, r2;

		if (tnpu_ctx_init(&b))
			_exit(10);
		/* A's data BO VA coincides with B's own data BO: B writes its own memory */
		r1 = tnpu_run_fence(&b, 0, self->c.data.va, 0xbad);
		if (r1 == 0 && ((uint64_t *)b.data.map)[0] != 0xbad)
			_exit(11);
		/* A's extra[3] VA is not mapped in B */
		r2 = tnpu_run_fence(&b, 64, extra[3].va, 0xbad);
		_exit(r1 == 0 && r2 == -EFAULT ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0x2222, data[0]);
	EXPECT_EQ(0x1111, ((uint64_t *)extra[3].map)[0]);
	for (i = 0; i < 4; i++)
		tnpu_bo_free(self->c.fd, &extra[i]);
}

TEST_F(job, other_process_cannot_reach_bo_by_handle)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct drm_tnpu_bo_info info = { .handle = self->c.data.handle };
		struct drm_tnpu_bo_wait w = { .handle = self->c.data.handle };
		int fd = tnpu_open_dev();

		if (fd < 0)
			_exit(10);
		if (tnpu_ioctl(fd, DRM_IOCTL_TNPU_BO_INFO, &info) != -ENOENT)
			_exit(11);
		if (tnpu_ioctl(fd, DRM_IOCTL_TNPU_BO_WAIT, &w) != -ENOENT)
			_exit(12);
		/* the inherited fd is the same open file: it may use its own handles */
		info.handle = self->c.data.handle;
		if (tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static int set_timeout_ms(const char *v)
{
	return tnpu_write_file(TNPU_PARAM, v);
}

/* the module parameter's current value, to restore it after a test */
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

TEST_F(job, injected_hang_times_out_resets_and_recovers)
{
	struct drm_tnpu_counters before = counters(self->c.fd), after;
	struct drm_tnpu_bo_wait w = { .handle = self->c.data.handle };
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
				   .refs = &ref, .nrefs = 1, .out_sync = self->c.sync };
	char old[32];
	int64_t t0;

	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("1000"));
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 1);
	t0 = tnpu_now_ns();
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	/* busy BO: a deadline that passes first gives -ETIME */
	w.timeout_ns = tnpu_now_ns() + 100000000ll;
	EXPECT_EQ(-ETIME, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, self->c.sync, 0, 30000));
	EXPECT_GE(tnpu_now_ns() - t0, 900000000ll);
	EXPECT_EQ(0, ((uint64_t *)self->c.data.map)[0]);
	after = counters(self->c.fd);
	EXPECT_EQ(before.resets + 1, after.resets);
	EXPECT_EQ(before.jobs_timedout + 1, after.jobs_timedout);
	/* the same file and queue work again */
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 64, self->c.data.va, 9));
	EXPECT_EQ(9, ((uint64_t *)self->c.data.map)[0]);
	set_timeout_ms(old);
}

TEST_F(job, innocent_jobs_survive_a_reset)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_READ };
	uint32_t qs[3], sy[3], i, other = 0, hung_ring = 0;
	uint64_t *data = self->c.data.map;
	struct drm_tnpu_caps caps;
	char old[32];

	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
	if (caps.hw_queues < 2)
		SKIP(return, "needs two hardware queues");
	/* queues are spread round-robin over the rings: find one on another ring */
	for (i = 0; i < 4 && !other; i++) {
		struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };

		ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
		if (i == 0) {
			hung_ring = cr.hw_queue;
			qs[0] = cr.handle;
		} else if (cr.hw_queue != hung_ring) {
			other = cr.handle;
		}
	}
	ASSERT_NE(0, other);
	qs[1] = qs[0];	/* queued behind the hung job on the same ring: resubmitted */
	qs[2] = other;	/* another ring: unaffected */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &sy[i]));
	ASSERT_EQ(0, set_timeout_ms("1000"));
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	for (i = 0; i < 3; i++) {
		struct tnpu_job_args j = { .queue = qs[i], .cmd = &self->c.cmd, .cmd_offset = 64 * i,
					   .refs = &ref, .nrefs = 1, .out_sync = sy[i] };

		j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64 * i,
					    self->c.data.va + 8 * i, 100 + i);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
		if (i == 0)
			usleep(200000);	/* the first job takes the injected hang */
	}
	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, sy[0], 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, sy[1], 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, sy[2], 0, 30000));
	EXPECT_EQ(0, data[0]);
	EXPECT_EQ(101, data[1]);
	EXPECT_EQ(102, data[2]);
	set_timeout_ms(old);
}

TEST_F(job, injected_mmu_fault_fails_with_efault)
{
	struct drm_tnpu_fault fault = { 0 };
	struct tnpu_ctx fresh;

	ASSERT_EQ(0, tnpu_inject("inject_mmu_fault"));
	EXPECT_EQ(-EFAULT, tnpu_run_fence(&self->c, 0, self->c.data.va, 1));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_FAULT, &fault, sizeof(fault)));
	EXPECT_EQ(1, fault.faulted);
	EXPECT_EQ(0, fault.address);
	ASSERT_EQ(0, tnpu_ctx_init(&fresh));
	EXPECT_EQ(0, tnpu_run_fence(&fresh, 0, fresh.data.va, 3));
	tnpu_ctx_fini(&fresh);
}

TEST_F(job, injected_error_irq_fails_with_eio_and_next_job_succeeds)
{
	uint64_t before = counters(self->c.fd).hw_errors;

	ASSERT_EQ(0, tnpu_inject("inject_error"));
	EXPECT_EQ(-EIO, tnpu_run_fence(&self->c, 0, self->c.data.va, 1));
	EXPECT_EQ(before + 1, counters(self->c.fd).hw_errors);
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 64, self->c.data.va, 2));
	EXPECT_EQ(2, ((uint64_t *)self->c.data.map)[0]);
}

/*
 * Jobs that end without reaching the hardware (issue #28): libaccel zero-fills the counters BO and
 * reads status 0 as success, so the driver must write their error there before their fence
 * signals. The counters BOs below start zeroed the same way.
 */

/* A queue of @fd whose hardware ring is not @ring (queues are spread round-robin), or 0. */
static uint32_t queue_on_other_ring(int fd, uint32_t ring)
{
	uint32_t i;

	for (i = 0; i < 8; i++) {
		struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };

		if (tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr))
			return 0;
		if (cr.hw_queue != ring)
			return cr.handle;
	}
	return 0;
}

/* A new queue of @fd in @handle and its hardware ring in @ring. */
static int queue_create_on_ring(int fd, uint32_t *handle, uint32_t *ring)
{
	struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr);

	*handle = cr.handle;
	*ring = cr.hw_queue;
	return ret;
}

/*
 * Submits a NOP on @queue that the hang injection stops on its ring: its fence (in @out_sync)
 * signals -ETIMEDOUT after timeout_ms. Jobs on other rings that depend on it wait that long.
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

/* Status of the fence in sync file @sync_fd once it signals (0 ok, -errno), -ETIME after @ms. */
static int sync_file_status(int sync_fd, int ms)
{
	struct pollfd p = { .fd = sync_fd, .events = POLLIN };
	struct sync_file_info info = { 0 };

	if (poll(&p, 1, ms) != 1)
		return -ETIME;
	if (ioctl(sync_fd, SYNC_IOC_FILE_INFO, &info))
		return -errno;
	return info.status == 1 ? 0 : info.status;
}

#define NCANCEL 3

/*
 * Submits NCANCEL jobs on @queue of @c, the first waiting for @dep (a syncobj of @c), each with
 * its own out-syncobj in @syncs and its counters at data + 4096 + i * 512 (zeroed first); none
 * of them can run before @dep signals.
 */
static int submit_blocked_jobs(struct tnpu_ctx *c, uint32_t queue, uint32_t dep, uint32_t *syncs)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_sync in = { .handle = dep };
	int i, ret;

	memset((char *)c->data.map + 4096, 0, NCANCEL * 512);
	for (i = 0; i < NCANCEL; i++) {
		struct tnpu_job_args j = { .queue = queue, .cmd = &c->cmd, .cmd_offset = 64 * i,
					   .refs = &ref, .nrefs = 1, .in = &in, .nin = i == 0,
					   .counters_bo = c->data.handle,
					   .counters_offset = 4096 + 512 * i };

		ret = drmSyncobjCreate(c->fd, 0, &syncs[i]) ? -errno : 0;
		if (ret)
			return ret;
		j.out_sync = syncs[i];
		j.cmd_size = tnpu_cmd_fence((char *)c->cmd.map + 64 * i, c->data.va + 8 * i,
					    200 + i);
		ret = tnpu_submit(c->fd, &j);
		if (ret)
			return ret;
	}
	return 0;
}

static struct drm_tnpu_job_counters *job_counters(struct tnpu_ctx *c, int i)
{
	return (void *)((char *)c->data.map + 4096 + 512 * i);
}

TEST_F(job, queue_destroy_writes_esrch_status_of_cancelled_jobs)
{
	struct drm_tnpu_queue_destroy d = { 0 };
	uint32_t hung, blocked, ring, hq, syncs[NCANCEL];
	uint64_t *data = self->c.data.map;
	char old[32];
	int i;

	ASSERT_EQ(0, queue_create_on_ring(self->c.fd, &hq, &ring));
	/* on another ring: the scheduler does not pipeline the dependency onto the hung ring */
	blocked = queue_on_other_ring(self->c.fd, ring);
	if (!blocked)
		SKIP(return, "needs two hardware queues");
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("3000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, hq, hung));
	ASSERT_EQ(0, submit_blocked_jobs(&self->c, blocked, hung, syncs));
	d.handle = blocked;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	for (i = 0; i < NCANCEL; i++) {
		struct drm_tnpu_job_counters *jc = job_counters(&self->c, i);

		EXPECT_EQ(-ESRCH, tnpu_sync_status(self->c.fd, syncs[i], 0, 30000));
		EXPECT_EQ(-ESRCH, jc->status) TH_LOG("job %d: status %d", i, jc->status);
		EXPECT_EQ(0, jc->hw_error);
		EXPECT_EQ(0, data[i]);
	}
	set_timeout_ms(old);
}

/*
 * The same through close(). A BO mmap holds the DRM file open, so the counters BO is read through
 * a mapping of its dma-buf, which does not; the fences through sync files.
 */
TEST_F(job, close_writes_esrch_status_of_cancelled_jobs)
{
	uint32_t hung, ring, hq, dep, syncs[NCANCEL];
	int i, sync_fd = -1, dmabuf = -1, out_fd[NCANCEL];
	struct tnpu_ctx other;
	char old[32];
	void *map;

	ASSERT_EQ(0, queue_create_on_ring(self->c.fd, &hq, &ring));
	ASSERT_EQ(0, tnpu_ctx_init(&other));
	/* a queue of the other file on another ring than the hung job */
	other.queue = queue_on_other_ring(other.fd, ring);
	if (!other.queue) {
		tnpu_ctx_fini(&other);
		SKIP(return, "needs two hardware queues");
	}
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("3000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, hq, hung));
	/* the other file waits for the hung job through an imported sync file */
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->c.fd, hung, &sync_fd));
	ASSERT_EQ(0, drmSyncobjCreate(other.fd, 0, &dep));
	ASSERT_EQ(0, drmSyncobjImportSyncFile(other.fd, dep, sync_fd));
	close(sync_fd);
	ASSERT_EQ(0, submit_blocked_jobs(&other, other.queue, dep, syncs));
	for (i = 0; i < NCANCEL; i++)
		ASSERT_EQ(0, drmSyncobjExportSyncFile(other.fd, syncs[i], &out_fd[i]));
	ASSERT_EQ(0, drmPrimeHandleToFD(other.fd, other.data.handle, DRM_CLOEXEC | DRM_RDWR,
					&dmabuf));
	map = mmap(NULL, other.data.size, PROT_READ, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, map);
	close(dmabuf);
	munmap(other.cmd.map, other.cmd.size);
	munmap(other.data.map, other.data.size);
	other.data.map = map;
	close(other.fd);
	other.fd = -1;

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	for (i = 0; i < NCANCEL; i++) {
		struct drm_tnpu_job_counters *jc = job_counters(&other, i);

		EXPECT_EQ(-ESRCH, sync_file_status(out_fd[i], 30000));
		EXPECT_EQ(-ESRCH, jc->status) TH_LOG("job %d: status %d", i, jc->status);
		EXPECT_EQ(0, jc->hw_error);
		EXPECT_EQ(0, ((uint64_t *)map)[i]);
		close(out_fd[i]);
	}
	munmap(map, other.data.size);
	set_timeout_ms(old);
}

/*
 * A job of a file whose context faulted while the job waited for its dependency is cancelled in
 * run_job (-ECANCELED, uapi.md) and never runs: its status says so. The faulting job is held
 * behind a hung job on its ring, so the dependent job is surely submitted before the fault.
 */
TEST_F(job, job_cancelled_by_a_fault_of_its_file_reports_ecanceled)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_job_counters *jc = job_counters(&self->c, 0);
	uint32_t ring, qa, qb, hung, faulted, dependent;
	struct drm_tnpu_sync in = { 0 };
	uint64_t *data = self->c.data.map;
	char old[32];
	struct tnpu_job_args j = { .cmd = &self->c.cmd, .refs = &ref, .nrefs = 1 };

	ASSERT_EQ(0, queue_create_on_ring(self->c.fd, &qa, &ring));
	qb = queue_on_other_ring(self->c.fd, ring);
	if (!qb)
		SKIP(return, "needs two hardware queues");
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &hung));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &faulted));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &dependent));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, set_timeout_ms("1000"));
	ASSERT_EQ(0, submit_hung_job(&self->c, qa, hung));
	/* behind the hung job on ring A: runs after the reset and takes an MMU fault (guard page) */
	j.queue = qa;
	j.out_sync = faulted;
	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + self->c.data.size, 1);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	/* on ring B, waiting for the faulting job's fence */
	memset(jc, 0, sizeof(*jc));
	j.queue = qb;
	j.in = &in;
	j.nin = 1;
	in.handle = faulted;
	j.out_sync = dependent;
	j.counters_bo = self->c.data.handle;
	j.counters_offset = 4096;
	j.cmd_offset = 64;
	j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64, self->c.data.va, 5);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, hung, 0, 30000));
	EXPECT_EQ(-EFAULT, tnpu_sync_status(self->c.fd, faulted, 0, 30000));
	EXPECT_EQ(-ECANCELED, tnpu_sync_status(self->c.fd, dependent, 0, 30000));
	EXPECT_EQ(-ECANCELED, jc->status) TH_LOG("status %d", jc->status);
	EXPECT_EQ(0, jc->hw_error);
	EXPECT_EQ(0, jc->counter[CNT_COMMANDS]);
	EXPECT_EQ(0, data[0]);
	set_timeout_ms(old);
}

TEST_F(job, close_with_jobs_in_flight_is_safe)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	int i;

	for (i = 0; i < 100; i++) {
		struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .refs = &ref, .nrefs = 1 };

		j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, i);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	}
	tnpu_ctx_fini(&self->c);	/* teardown sees fd -1 */
}

TEST_HARNESS_MAIN
