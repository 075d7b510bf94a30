// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-job counters without a ring hold, performance monitors and fdinfo through tnpu.ko:
 * a job that asks for its counters does not hold other files' jobs back on a shared ring,
 * SUBMIT counters_bo values equal the perfmon totals, PERFMON_* errors and lifetime, and the
 * fdinfo keys (Documentation/driver.md "fdinfo").
 */
#include <dirent.h>
#include <stddef.h>
#include <poll.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define CNT_TOTAL_CYCLES	0
#define CNT_COMMANDS		13

FIXTURE(perfmon) {
	struct tnpu_ctx c;
};

FIXTURE_SETUP(perfmon)
{
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
}

FIXTURE_TEARDOWN(perfmon)
{
	tnpu_ctx_fini(&self->c);
}

static int perfmon_create(int fd, uint32_t *id)
{
	struct drm_tnpu_perfmon_create a = { 0 };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_PERFMON_CREATE, &a);

	if (!ret)
		*id = a.id;
	return ret;
}

static int perfmon_destroy(int fd, uint32_t id)
{
	struct drm_tnpu_perfmon_destroy a = { .id = id };

	return tnpu_ioctl(fd, DRM_IOCTL_TNPU_PERFMON_DESTROY, &a);
}

static int perfmon_get(int fd, uint32_t id, uint32_t flags, uint64_t *values, uint64_t *jobs)
{
	struct drm_tnpu_perfmon_get_values a = { .id = id, .flags = flags,
						 .values_ptr = (uintptr_t)values };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_PERFMON_GET_VALUES, &a);

	if (!ret && jobs)
		*jobs = a.jobs;
	return ret;
}

/* SUBMIT of "NOP x @nops, FENCE data.va + 8 * @slot = @value" with @perfmon and a counters BO */
static int submit_counted(struct tnpu_ctx *c, uint32_t queue, unsigned int nops, unsigned int slot,
			  uint64_t value, uint32_t perfmon, uint32_t counters_bo,
			  uint64_t counters_offset, uint32_t out_sync)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	uint64_t cmd_off = 256 * (slot + 1);
	char *cmd = (char *)c->cmd.map + cmd_off;
	uint32_t len = 0;
	struct drm_tnpu_submit s = { 0 };
	unsigned int i;

	for (i = 0; i < nops; i++)
		len += tnpu_cmd_nop(cmd + len);
	len += tnpu_cmd_fence(cmd + len, c->data.va + 8 * slot, value);
	s.queue = queue;
	s.cmd_bo = c->cmd.handle;
	s.cmd_offset = cmd_off;
	s.cmd_size = len;
	s.bos.stride = sizeof(ref);
	s.bos.count = 1;
	s.bos.array = (uintptr_t)&ref;
	s.out_sync = out_sync;
	s.counters_bo = counters_bo;
	s.counters_offset = counters_offset;
	s.perfmon_id = perfmon;
	return tnpu_ioctl(c->fd, DRM_IOCTL_TNPU_SUBMIT, &s);
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

/* A queue of @fd on hardware ring @ring (queues are spread round-robin), or 0. */
static uint32_t queue_on_ring(int fd, uint32_t ring)
{
	unsigned int i;

	for (i = 0; i < DRM_TNPU_MAX_RINGS + 1; i++) {
		struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };

		if (tnpu_ioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr))
			return 0;
		if (cr.hw_queue == ring)
			return cr.handle;
	}
	return 0;
}

/*
 * Two files on one ring, A asking for counters: B's job is handed to the driver behind A's job at
 * once (the ring or its ready list, driver.md "Scheduling across clients"). The old driver read
 * Q_PERF (the last job's counters) and so held every job behind a counters job until that one
 * completed. A hang injected in front keeps A's job from running.
 */
TEST_F(perfmon, counters_job_does_not_hold_another_files_jobs)
{
	struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	struct drm_tnpu_job_counters *jc;
	struct drm_tnpu_bo_ref ref;
	struct tnpu_job_args j = { 0 };
	struct tnpu_ctx b;
	uint32_t hung, b_queue, b_sync;
	char old[32];
	int ret;

	ASSERT_EQ(0, tnpu_ctx_init(&b));
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
	b_queue = queue_on_ring(b.fd, cr.hw_queue);
	ASSERT_NE(0, b_queue);
	ASSERT_EQ(0, drmSyncobjCreate(b.fd, 0, &hung));
	ASSERT_EQ(0, drmSyncobjCreate(b.fd, 0, &b_sync));
	get_timeout_ms(old, sizeof(old));
	ASSERT_EQ(0, tnpu_write_file(TNPU_PARAM, "3000"));

	/* B: a job the injected hang stops on the ring */
	ret = tnpu_inject("inject_hang");
	if (ret)
		SKIP(tnpu_write_file(TNPU_PARAM, old); return, "no fault injection (fault_inject=1)");
	ref = (struct drm_tnpu_bo_ref){ b.data.handle, DRM_TNPU_BO_REF_READ };
	j = (struct tnpu_job_args){ .queue = b_queue, .cmd = &b.cmd, .cmd_offset = 1024,
				    .refs = &ref, .nrefs = 1, .out_sync = hung };
	j.cmd_size = tnpu_cmd_nop((char *)b.cmd.map + 1024);
	ASSERT_EQ(0, tnpu_submit(b.fd, &j));
	usleep(200000);
	ASSERT_EQ(1, tnpu_ring_jobs((int)cr.hw_queue));

	/* A: a job that wants its counters, behind the hung one */
	ASSERT_EQ(0, submit_counted(&self->c, cr.handle, 2, 0, 5, 0, self->c.data.handle, 4096,
				    self->c.sync));
	usleep(200000);
	ASSERT_EQ(2, tnpu_ring_jobs((int)cr.hw_queue));
	/* B again: handed to the driver behind A's job, not held until A's job completes */
	ASSERT_EQ(0, submit_counted(&b, b_queue, 0, 1, 6, 0, 0, 0, b_sync));
	usleep(300000);
	EXPECT_EQ(3, tnpu_ring_jobs((int)cr.hw_queue));

	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(b.fd, hung, 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 30000));
	EXPECT_EQ(0, tnpu_sync_status(b.fd, b_sync, 0, 30000));
	EXPECT_EQ(5, ((uint64_t *)self->c.data.map)[0]);
	EXPECT_EQ(6, ((uint64_t *)b.data.map)[1]);
	jc = (void *)((char *)self->c.data.map + 4096);
	EXPECT_EQ(0, jc->status);
	EXPECT_EQ(3, jc->counter[CNT_COMMANDS]);	/* its own: 2 NOPs and the FENCE */
	tnpu_write_file(TNPU_PARAM, old);
	tnpu_ctx_fini(&b);
}

/* Many jobs with counters back to back on one queue: each BO gets its own job's counters. */
TEST_F(perfmon, back_to_back_counters_jobs_each_get_their_own)
{
	uint64_t *data = self->c.data.map;
	unsigned int i;

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit_counted(&self->c, self->c.queue, i, i, 100 + i, 0,
					    self->c.data.handle, 8192 + 512 * i, self->c.sync));
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	for (i = 0; i < 8; i++) {
		struct drm_tnpu_job_counters *jc = (void *)((char *)data + 8192 + 512 * i);

		EXPECT_EQ(100 + i, data[i]);
		EXPECT_EQ(0, jc->status);
		EXPECT_EQ(i + 1, jc->counter[CNT_COMMANDS]);
		EXPECT_GT(jc->counter[CNT_TOTAL_CYCLES], 0);
	}
}

/* The perfmon sums exactly what the jobs' counters BOs received; RESET zeroes it. */
TEST_F(perfmon, counters_bo_values_equal_perfmon_totals)
{
	uint64_t vals[DRM_TNPU_MAX_COUNTERS], again[DRM_TNPU_MAX_COUNTERS], jobs = 99;
	struct drm_tnpu_job_counters *j0, *j1;
	uint32_t pm;
	unsigned int i;

	ASSERT_EQ(0, perfmon_create(self->c.fd, &pm));
	ASSERT_NE(0, pm);
	ASSERT_EQ(0, perfmon_get(self->c.fd, pm, 0, vals, &jobs));
	EXPECT_EQ(0, jobs);
	for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
		EXPECT_EQ(0, vals[i]);

	j0 = (void *)((char *)self->c.data.map + 4096);
	j1 = (void *)((char *)self->c.data.map + 8192);
	ASSERT_EQ(0, submit_counted(&self->c, self->c.queue, 1, 0, 1, pm, self->c.data.handle,
				    4096, 0));
	/* a job without the perfmon in between is not counted */
	ASSERT_EQ(0, submit_counted(&self->c, self->c.queue, 7, 2, 3, 0, 0, 0, 0));
	ASSERT_EQ(0, submit_counted(&self->c, self->c.queue, 4, 1, 2, pm, self->c.data.handle,
				    8192, self->c.sync));
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));

	ASSERT_EQ(0, perfmon_get(self->c.fd, pm, 0, vals, &jobs));
	EXPECT_EQ(2, jobs);
	EXPECT_EQ(2 + 5, vals[CNT_COMMANDS]);
	for (i = 0; i < DRM_TNPU_MAX_COUNTERS; i++) {
		EXPECT_EQ(j0->counter[i] + j1->counter[i], vals[i]) TH_LOG("counter %u", i);
	}

	/* read and reset in one step, then nothing is left */
	ASSERT_EQ(0, perfmon_get(self->c.fd, pm, DRM_TNPU_PERFMON_GET_VALUES_RESET, again, &jobs));
	EXPECT_EQ(2, jobs);
	EXPECT_EQ(0, memcmp(vals, again, sizeof(vals)));
	ASSERT_EQ(0, perfmon_get(self->c.fd, pm, 0, again, &jobs));
	EXPECT_EQ(0, jobs);
	EXPECT_EQ(0, again[CNT_COMMANDS]);
	EXPECT_EQ(0, perfmon_destroy(self->c.fd, pm));
}

/* A job that fails adds its counters up to the failure and is counted. */
TEST_F(perfmon, failed_job_is_counted_up_to_the_failure)
{
	uint64_t vals[DRM_TNPU_MAX_COUNTERS], jobs = 0;
	struct drm_tnpu_submit s = { 0 };
	uint64_t *cmd = self->c.cmd.map;
	uint32_t pm;

	ASSERT_EQ(0, perfmon_create(self->c.fd, &pm));
	cmd[0] = 0x00 | (uint64_t)8 << 32;	/* NOP */
	cmd[1] = 0xee | (uint64_t)8 << 32;	/* unknown opcode: CMD_OPCODE */
	s.queue = self->c.queue;
	s.cmd_bo = self->c.cmd.handle;
	s.cmd_size = 16;
	s.out_sync = self->c.sync;
	s.perfmon_id = pm;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, &s));
	EXPECT_EQ(-EIO, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	ASSERT_EQ(0, perfmon_get(self->c.fd, pm, 0, vals, &jobs));
	EXPECT_EQ(1, jobs);
	EXPECT_EQ(2, vals[CNT_COMMANDS]);
}

TEST_F(perfmon, errors)
{
	uint64_t vals[DRM_TNPU_MAX_COUNTERS];
	struct drm_tnpu_perfmon_create cr = { .flags = 1 };
	struct drm_tnpu_perfmon_destroy de = { .id = 1, .pad = 1 };
	struct drm_tnpu_submit s = { 0 };
	uint32_t ids[DRM_TNPU_MAX_PERFMONS], extra, pm;
	struct tnpu_ctx other;
	unsigned int i;

	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_PERFMON_CREATE, &cr));
	EXPECT_EQ(-ENOENT, perfmon_get(self->c.fd, 0, 0, vals, NULL));
	EXPECT_EQ(-ENOENT, perfmon_get(self->c.fd, 1, 0, vals, NULL));
	EXPECT_EQ(-ENOENT, perfmon_destroy(self->c.fd, 1));
	ASSERT_EQ(0, perfmon_create(self->c.fd, &pm));
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_PERFMON_DESTROY, &de));
	EXPECT_EQ(-EINVAL, perfmon_get(self->c.fd, pm, 2, vals, NULL));
	EXPECT_EQ(-EFAULT, perfmon_get(self->c.fd, pm, 0, NULL, NULL));
	EXPECT_EQ(-EFAULT, perfmon_get(self->c.fd, pm, DRM_TNPU_PERFMON_GET_VALUES_RESET,
				       (uint64_t *)8, NULL));

	/* ids are per file: another file's id names nothing here */
	ASSERT_EQ(0, tnpu_ctx_init(&other));
	EXPECT_EQ(-ENOENT, perfmon_get(other.fd, pm, 0, vals, NULL));
	EXPECT_EQ(-ENOENT, perfmon_destroy(other.fd, pm));
	EXPECT_EQ(-ENOENT, submit_counted(&other, other.queue, 0, 0, 1, pm, 0, 0, 0));
	tnpu_ctx_fini(&other);

	/* SUBMIT: an unknown perfmon and a non-zero pad */
	EXPECT_EQ(-ENOENT, submit_counted(&self->c, self->c.queue, 0, 0, 1, pm + 1, 0, 0, 0));
	s.queue = self->c.queue;
	s.cmd_bo = self->c.cmd.handle;
	s.cmd_size = tnpu_cmd_nop(self->c.cmd.map);
	s.pad = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, &s));

	/* at most DRM_TNPU_MAX_PERFMONS per file; a destroyed id is gone, its slot reusable */
	ids[0] = pm;
	for (i = 1; i < DRM_TNPU_MAX_PERFMONS; i++)
		ASSERT_EQ(0, perfmon_create(self->c.fd, &ids[i]));
	EXPECT_EQ(-ENOSPC, perfmon_create(self->c.fd, &extra));
	EXPECT_EQ(0, perfmon_destroy(self->c.fd, ids[3]));
	EXPECT_EQ(-ENOENT, perfmon_destroy(self->c.fd, ids[3]));
	EXPECT_EQ(-ENOENT, perfmon_get(self->c.fd, ids[3], 0, vals, NULL));
	EXPECT_EQ(0, perfmon_create(self->c.fd, &extra));
	/* close() with all of them alive frees them (kmemleak in vm-debug) */
}

/*
 * Destroying a perfmon, and closing its file, while a job that names it has not completed:
 * the job keeps its reference, completes normally and counts into the freed-later object.
 */
TEST_F(perfmon, destroy_while_a_job_references_it_is_safe)
{
	uint64_t vals[DRM_TNPU_MAX_COUNTERS];
	struct pollfd p = { .events = POLLIN };
	struct tnpu_ctx c2;
	uint32_t pm, pm2;
	int i;

	/* jobs queued back to back: the last ones have not completed at the destroy */
	ASSERT_EQ(0, perfmon_create(self->c.fd, &pm));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, submit_counted(&self->c, self->c.queue, 20, i, 40 + i, pm, 0, 0,
					    self->c.sync));
	EXPECT_EQ(0, perfmon_destroy(self->c.fd, pm));
	EXPECT_EQ(-ENOENT, perfmon_get(self->c.fd, pm, 0, vals, NULL));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(40 + i, ((uint64_t *)self->c.data.map)[i]);

	/* the same with the whole file closed while its counted jobs are queued */
	ASSERT_EQ(0, tnpu_ctx_init(&c2));
	ASSERT_EQ(0, perfmon_create(c2.fd, &pm2));
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, submit_counted(&c2, c2.queue, 20, i % 8, i, pm2, c2.data.handle,
					    4096 + 512 * (i % 8), c2.sync));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(c2.fd, c2.sync, &p.fd));
	tnpu_ctx_fini(&c2);
	/* the last job's fence outlives the file */
	EXPECT_EQ(1, poll(&p, 1, 60000));
	close(p.fd);
	/* the device still works */
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 12));
}

/*
 * perfmon_id was appended to struct drm_tnpu_submit: a binary built against the 88-byte struct
 * (its ioctl number encodes 88) still submits, the missing tail reads as "no perfmon".
 */
TEST_F(perfmon, submit_of_the_88_byte_struct_still_works)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_submit s = { 0 };

	ASSERT_EQ(96, sizeof(s));
	ASSERT_EQ(88, offsetof(struct drm_tnpu_submit, perfmon_id));
	s.queue = self->c.queue;
	s.cmd_bo = self->c.cmd.handle;
	s.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + 40, 88);
	s.bos.stride = sizeof(ref);
	s.bos.count = 1;
	s.bos.array = (uintptr_t)&ref;
	s.out_sync = self->c.sync;
	s.perfmon_id = 12345;	/* beyond the 88 bytes: never read */
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOWR(DRM_COMMAND_BASE + DRM_TNPU_SUBMIT, char[88]),
				&s));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(88, ((uint64_t *)self->c.data.map)[5]);
}

/* fdinfo of @fd as one string (static buffer) */
static const char *fdinfo(int fd)
{
	static char buf[8192];
	char path[64];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return "";
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* the value after "@key:" (first occurrence), or -1 */
static long long fdinfo_value(const char *text, const char *key)
{
	char pat[96];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s:", key);
	p = strstr(text, pat);
	if (!p)
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

TEST_F(perfmon, fdinfo_shows_the_drm_keys_and_busy_time_grows)
{
	struct drm_tnpu_queue_create cr = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	char engine[64], cycles[64], maxfreq[64];
	long long busy0, busy1, cyc0, cyc1, client;
	const char *t;
	struct tnpu_ctx other;
	uint32_t q;

	/* a fresh file: the core's keys and the memory keys, no engine used yet */
	ASSERT_EQ(0, tnpu_ctx_init(&other));
	t = fdinfo(other.fd);
	EXPECT_NE(NULL, strstr(t, "\ndrm-driver:\ttnpu\n")) TH_LOG("%s", t);
	EXPECT_NE(NULL, strstr(t, "\ndrm-pdev:\t"));
	EXPECT_NE(NULL, strstr(t, "\ndrm-total-memory:"));
	EXPECT_NE(NULL, strstr(t, "\ndrm-resident-memory:"));
	EXPECT_EQ(NULL, strstr(t, "drm-engine-"));
	client = fdinfo_value(t, "drm-client-id");
	EXPECT_GE(client, 0);

	/* the file's two 64 KiB BOs are counted */
	EXPECT_EQ(NULL, strstr(t, "drm-total-memory:\t0\n"));

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
	q = cr.hw_queue;
	snprintf(engine, sizeof(engine), "drm-engine-ring%u", q);
	snprintf(cycles, sizeof(cycles), "drm-cycles-ring%u", q);
	snprintf(maxfreq, sizeof(maxfreq), "drm-maxfreq-ring%u", q);
	ASSERT_EQ(0, submit_counted(&self->c, cr.handle, 16, 0, 1, 0, 0, 0, self->c.sync));
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	t = fdinfo(self->c.fd);
	busy0 = fdinfo_value(t, engine);
	cyc0 = fdinfo_value(t, cycles);
	EXPECT_GT(busy0, 0) TH_LOG("%s", t);
	EXPECT_GT(cyc0, 0);
	EXPECT_GT(fdinfo_value(t, maxfreq), 0);
	EXPECT_NE(NULL, strstr(t, " ns\n"));
	EXPECT_NE(client, fdinfo_value(t, "drm-client-id"));
	/* the other file ran nothing */
	EXPECT_EQ(NULL, strstr(fdinfo(other.fd), "drm-engine-"));

	ASSERT_EQ(0, submit_counted(&self->c, cr.handle, 16, 1, 2, 0, 0, 0, self->c.sync));
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	t = fdinfo(self->c.fd);
	busy1 = fdinfo_value(t, engine);
	cyc1 = fdinfo_value(t, cycles);
	EXPECT_GT(busy1, busy0);
	EXPECT_GT(cyc1, cyc0);
	tnpu_ctx_fini(&other);
}

TEST_HARNESS_MAIN
