// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every tnpu ioctl: the happy path, then a negative checklist with the exact errno documented in
 * Documentation/uapi.md (bad, zero, deleted and other-file handles; NULL and misaligned pointers;
 * out-of-range offsets and sizes; UINT64_MAX and 0 sizes; non-zero pads; unknown flags).
 */
#include <limits.h>
#include <stddef.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define BAD_PTR ((uintptr_t)8)	/* never mapped */

FIXTURE(uapi) {
	struct tnpu_ctx c;
	struct drm_tnpu_caps caps;
};

FIXTURE_SETUP(uapi)
{
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, &self->caps, sizeof(self->caps)));
}

FIXTURE_TEARDOWN(uapi)
{
	tnpu_ctx_fini(&self->c);
}

static uint64_t jobs_submitted(int fd)
{
	struct drm_tnpu_counters cnt;

	if (tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &cnt, sizeof(cnt)))
		return UINT64_MAX;
	return cnt.jobs_submitted;
}

/* ---- QUERY ---- */

TEST_F(uapi, query_size_probe_returns_struct_size)
{
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_CAPS };

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_tnpu_caps), q.size);
	q.type = DRM_TNPU_QUERY_COUNTERS;
	q.size = 0;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_tnpu_counters), q.size);
	q.type = DRM_TNPU_QUERY_FAULT;
	q.size = 0;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_tnpu_fault), q.size);
}

TEST_F(uapi, query_caps_reports_sane_geometry)
{
	struct drm_tnpu_caps *c = &self->caps;

	EXPECT_EQ(1, c->hw_version >> 24);
	EXPECT_GE(c->rows, 1);
	EXPECT_LE(c->rows, 16);
	EXPECT_GE(c->cols, 1);
	EXPECT_LE(c->cols, 16);
	EXPECT_GE(c->pes, 1);
	EXPECT_LE(c->pes, 64);
	EXPECT_GE(c->hw_queues, 1);
	EXPECT_EQ(4096, c->page_size);
	EXPECT_EQ(sizeof(struct drm_tnpu_job_counters), c->counters_size);
	EXPECT_EQ(28, c->num_counters);	/* 0..17, sparse #8 18..21, chain #9 22..25, plans #9 26..27 */
	EXPECT_LT(c->va_start, c->va_end);
	EXPECT_NE(0, c->va_start);
	EXPECT_GE(c->max_cmdbuf, 8);
	EXPECT_NE(0, c->dtypes & DRM_TNPU_DTYPE_INT8);
}

TEST_F(uapi, query_caps_match_sysfs)
{
	static const char *const names[] = { "rows", "cols", "pes", "hw_queues" };
	uint32_t want[] = { self->caps.rows, self->caps.cols, self->caps.pes, self->caps.hw_queues };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		char path[128];
		unsigned int v = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/accel/accel0/device/%s", names[i]);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f) TH_LOG("no %s", path);
		ASSERT_EQ(1, fscanf(f, "%u", &v));
		fclose(f);
		EXPECT_EQ(want[i], v) TH_LOG("%s", names[i]);
	}
}

TEST_F(uapi, query_short_buffer_gets_prefix)
{
	uint32_t buf[4] = { 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef };
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_CAPS, .size = 8,
				    .pointer = (uintptr_t)buf };

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_tnpu_caps), q.size);
	EXPECT_EQ(self->caps.hw_version, buf[0]);
	EXPECT_EQ(self->caps.rows, buf[1]);
	EXPECT_EQ(0xdeadbeef, buf[2]);
}

TEST_F(uapi, query_long_buffer_is_zero_filled)
{
	size_t n = sizeof(struct drm_tnpu_caps);
	unsigned char buf[sizeof(struct drm_tnpu_caps) + 32];
	size_t i;

	memset(buf, 0xa5, sizeof(buf));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, &self->caps, n));
	for (i = n; i < sizeof(buf); i++)
		EXPECT_EQ(0, buf[i]);
}

TEST_F(uapi, query_misaligned_pointer_works)
{
	unsigned char buf[sizeof(struct drm_tnpu_caps) + 1];

	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, buf + 1,
				sizeof(struct drm_tnpu_caps)));
	EXPECT_EQ(0, memcmp(buf + 1, &self->caps, sizeof(self->caps)));
}

TEST_F(uapi, query_counters_and_clean_fault)
{
	struct drm_tnpu_counters cnt;
	struct drm_tnpu_fault fault;

	memset(&fault, 0xff, sizeof(fault));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &cnt, sizeof(cnt)));
	EXPECT_GE(cnt.jobs_submitted, cnt.jobs_completed);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_FAULT, &fault, sizeof(fault)));
	EXPECT_EQ(0, fault.faulted);
	EXPECT_EQ(0, fault.address);
}

/* the answer's size before per-ring statistics were appended */
#define COUNTERS_V1_SIZE	offsetof(struct drm_tnpu_counters, num_rings)

TEST_F(uapi, query_counters_ring_stats_count_jobs_of_their_ring_only)
{
	struct drm_tnpu_queue_create qc = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_counters before, after;
	uint64_t done_sum = 0;
	uint32_t i, r, n = 25;

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &qc));
	ASSERT_LT(qc.hw_queue, self->caps.hw_queues);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	ASSERT_EQ(self->caps.hw_queues, before.num_rings);
	for (i = 0; i < n; i++) {
		struct tnpu_job_args j = { .queue = qc.handle, .cmd = &self->c.cmd,
					   .cmd_offset = 64 * i, .refs = &ref, .nrefs = 1,
					   .out_sync = i == n - 1 ? self->c.sync : 0 };

		j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64 * i, self->c.data.va, i);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j)) TH_LOG("job %u", i);
	}
	/* one queue's jobs complete in order: the last fence covers all of them */
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));

	EXPECT_EQ(before.rings[qc.hw_queue].jobs_done + n, after.rings[qc.hw_queue].jobs_done);
	EXPECT_EQ(before.rings[qc.hw_queue].jobs_failed, after.rings[qc.hw_queue].jobs_failed);
	EXPECT_GT(after.rings[qc.hw_queue].busy_ns, before.rings[qc.hw_queue].busy_ns);
	for (r = 0; r < DRM_TNPU_MAX_RINGS; r++) {
		done_sum += after.rings[r].jobs_done;
		if (r == qc.hw_queue)
			continue;
		EXPECT_EQ(before.rings[r].jobs_done, after.rings[r].jobs_done) TH_LOG("ring %u", r);
		EXPECT_EQ(before.rings[r].jobs_failed, after.rings[r].jobs_failed) TH_LOG("ring %u", r);
		EXPECT_EQ(before.rings[r].jobs_timedout, after.rings[r].jobs_timedout)
			TH_LOG("ring %u", r);
		if (r >= after.num_rings) {
			EXPECT_EQ(0, after.rings[r].jobs_done);
			EXPECT_EQ(0, after.rings[r].busy_ns);
		}
	}
	/* uapi.md: the rings' jobs_done add up to the device-wide jobs_completed */
	EXPECT_EQ(after.jobs_completed, done_sum);
	EXPECT_EQ(0, after.pad_rings);
}

TEST_F(uapi, query_counters_with_the_old_size_returns_the_old_prefix)
{
	struct drm_tnpu_counters old, cur;
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_COUNTERS, .size = COUNTERS_V1_SIZE,
				    .pointer = (uintptr_t)&old };
	const unsigned char *tail = (const unsigned char *)&old + COUNTERS_V1_SIZE;
	size_t i;

	ASSERT_EQ(312, COUNTERS_V1_SIZE);
	memset(&old, 0xa5, sizeof(old));
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(struct drm_tnpu_counters), q.size);
	/* nothing written past the caller's size */
	for (i = 0; i < sizeof(old) - COUNTERS_V1_SIZE; i++) {
		ASSERT_EQ(0xa5, tail[i]) TH_LOG("byte %zu", COUNTERS_V1_SIZE + i);
	}
	/* the device is idle here: the prefix equals a full answer's */
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &cur, sizeof(cur)));
	EXPECT_EQ(0, memcmp(&old, &cur, COUNTERS_V1_SIZE));
	EXPECT_GE(old.jobs_submitted, old.jobs_completed);
}

TEST_F(uapi, query_rejects_bad_args)
{
	struct drm_tnpu_caps caps;
	/* 3 became DRM_TNPU_QUERY_ISLANDS (chain #9); 0x100 is far past every allocated type. */
	struct drm_tnpu_query q = { .type = 0x100, .size = sizeof(caps), .pointer = (uintptr_t)&caps };

	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	q.type = UINT32_MAX;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	q.type = DRM_TNPU_QUERY_CAPS;
	q.flags = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	q.flags = 0;
	q.pad = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	q.pad = 0;
	q.pointer = 0;
	EXPECT_EQ(-EFAULT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	q.pointer = BAD_PTR;
	EXPECT_EQ(-EFAULT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(-EFAULT, ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, NULL) ? -errno : 0);
}

/* chain #9: the island query describes every row exactly once. */
TEST_F(uapi, query_islands_cover_every_row)
{
	struct drm_tnpu_islands isl;
	struct drm_tnpu_caps caps;
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_CAPS, .size = sizeof(caps),
				    .pointer = (uintptr_t)&caps };
	__u32 row = 0;

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	memset(&isl, 0xff, sizeof(isl));
	q.type = DRM_TNPU_QUERY_ISLANDS;
	q.size = sizeof(isl);
	q.pointer = (uintptr_t)&isl;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	EXPECT_EQ(sizeof(isl), q.size);
	ASSERT_GE(isl.count, 1);
	ASSERT_LE(isl.count, DRM_TNPU_MAX_ISLANDS);
	for (__u32 i = 0; i < isl.count; i++) {
		EXPECT_EQ(row, isl.island[i].first_row);
		EXPECT_GE(isl.island[i].rows, 1);
		EXPECT_GE(isl.island[i].clkdiv, 1);
		EXPECT_NE(0, isl.island[i].dtypes);
		EXPECT_EQ(isl.island[i].rows * caps.sram_bytes, isl.island[i].sram_bytes);
		row += isl.island[i].rows;
	}
	EXPECT_EQ(caps.rows, row);
	EXPECT_EQ(0, isl.pad);
	if (isl.count < DRM_TNPU_MAX_ISLANDS)
		EXPECT_EQ(0, isl.island[isl.count].rows);
}

/* ---- BO_CREATE / BO_INFO / mmap ---- */

TEST_F(uapi, bo_create_maps_zeroed_memory_at_device_va)
{
	struct tnpu_bo bo;
	size_t i;

	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 3 * 4096, 0, &bo));
	EXPECT_NE(0, bo.handle);
	EXPECT_EQ(0, bo.va % 4096);
	EXPECT_GE(bo.va, self->caps.va_start);
	EXPECT_LE(bo.va + bo.size, self->caps.va_end);
	for (i = 0; i < bo.size; i++)
		ASSERT_EQ(0, ((unsigned char *)bo.map)[i]);
	memset(bo.map, 0x5a, bo.size);
	EXPECT_EQ(0x5a, ((unsigned char *)bo.map)[bo.size - 1]);
	tnpu_bo_free(self->c.fd, &bo);
}

TEST_F(uapi, bo_vas_do_not_overlap)
{
	struct tnpu_bo a, b;

	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 8192, 0, &a));
	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, 0, &b));
	EXPECT_TRUE(a.va + a.size <= b.va || b.va + b.size <= a.va);
	EXPECT_TRUE(self->c.data.va + self->c.data.size <= a.va ||
		    a.va + a.size <= self->c.data.va);
	tnpu_bo_free(self->c.fd, &a);
	tnpu_bo_free(self->c.fd, &b);
}

TEST_F(uapi, bo_create_rounds_size_to_pages)
{
	struct drm_tnpu_bo_create cr = { .size = 1 };
	struct drm_tnpu_bo_info info = { 0 };

	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	info.handle = cr.handle;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	EXPECT_EQ(4096, info.size);
	EXPECT_EQ(cr.va, info.va);
	EXPECT_EQ(cr.mmap_offset, info.mmap_offset);
	EXPECT_EQ(0, info.flags);
}

TEST_F(uapi, bo_create_rejects_bad_sizes_and_flags)
{
	struct drm_tnpu_bo_create cr = { 0 };

	cr.size = 0;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	cr.size = UINT64_MAX;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	cr.size = self->caps.max_bo_size + 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	cr.size = 4096;
	cr.flags = 2;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	cr.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, &cr));
	EXPECT_EQ(-EFAULT, ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_CREATE, BAD_PTR) ? -errno : 0);
}

TEST_F(uapi, bo_create_read_only_flag_is_reported)
{
	struct tnpu_bo bo;
	struct drm_tnpu_bo_info info = { 0 };

	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, DRM_TNPU_BO_DEVICE_READ_ONLY, &bo));
	info.handle = bo.handle;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	EXPECT_EQ(DRM_TNPU_BO_DEVICE_READ_ONLY, info.flags);
	tnpu_bo_free(self->c.fd, &bo);
}

TEST_F(uapi, mmap_rejects_bad_offsets_and_sizes)
{
	void *p;

	p = mmap(NULL, 2 * self->c.data.size, PROT_READ, MAP_SHARED, self->c.fd,
		 self->c.data.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->c.fd, 1ull << 40);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(uapi, bo_info_rejects_bad_handles_and_pad)
{
	struct drm_tnpu_bo_info info = { 0 };
	struct tnpu_bo bo;
	int other;

	info.handle = 0;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	info.handle = 0xffffff;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, 0, &bo));
	tnpu_bo_free(self->c.fd, &bo);
	info.handle = bo.handle;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	/* another file: the same handle number names nothing there */
	other = tnpu_open_dev();
	ASSERT_GE(other, 0);
	info.handle = self->c.data.handle;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(other, DRM_IOCTL_TNPU_BO_INFO, &info));
	close(other);
	info.handle = self->c.data.handle;
	info.pad = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	info.pad = 0;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_INFO, &info));
	EXPECT_EQ(self->c.data.va, info.va);
}

TEST_F(uapi, imported_bo_of_other_file_is_unreachable)
{
	struct drm_tnpu_bo_info info = { 0 };
	uint32_t handle = 0;
	int other, dmabuf;

	other = tnpu_open_dev();
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, drmPrimeHandleToFD(self->c.fd, self->c.data.handle, DRM_CLOEXEC, &dmabuf));
	ASSERT_EQ(0, drmPrimeFDToHandle(other, dmabuf, &handle));
	info.handle = handle;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(other, DRM_IOCTL_TNPU_BO_INFO, &info));
	close(dmabuf);
	close(other);
}

/* ---- BO_WAIT ---- */

TEST_F(uapi, bo_wait_idle_bo_returns_at_once)
{
	struct drm_tnpu_bo_wait w = { .handle = self->c.data.handle, .timeout_ns = 0 };

	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	w.timeout_ns = tnpu_now_ns() + 1000000000ll;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	w.timeout_ns = INT64_MAX;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
}

TEST_F(uapi, bo_wait_after_job_sees_its_result)
{
	struct drm_tnpu_bo_wait w = { .handle = self->c.data.handle, .timeout_ns = INT64_MAX };
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
				   .refs = &ref, .nrefs = 1 };

	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va + 64, 0x1234567890ull);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	EXPECT_EQ(0x1234567890ull, ((uint64_t *)self->c.data.map)[8]);
}

TEST_F(uapi, bo_wait_rejects_bad_handles_and_pad)
{
	struct drm_tnpu_bo_wait w = { 0 };

	w.handle = 0;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	w.handle = 12345;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
	w.handle = self->c.data.handle;
	w.pad = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w));
}

/* ---- QUEUE_CREATE / QUEUE_DESTROY ---- */

TEST_F(uapi, queue_create_every_priority)
{
	uint32_t prio;

	for (prio = DRM_TNPU_QUEUE_PRIORITY_LOW; prio <= DRM_TNPU_QUEUE_PRIORITY_HIGH; prio++) {
		struct drm_tnpu_queue_create cr = { .priority = prio };
		struct drm_tnpu_queue_destroy d = { 0 };

		ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
		EXPECT_NE(0, cr.handle);
		EXPECT_LT(cr.hw_queue, self->caps.hw_queues);
		d.handle = cr.handle;
		EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	}
}

TEST_F(uapi, queue_create_rejects_bad_args)
{
	struct drm_tnpu_queue_create cr = { .priority = 3 };

	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
	cr.priority = UINT32_MAX;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
	cr.priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL;
	cr.flags = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &cr));
}

TEST_F(uapi, queue_create_limit_is_enforced)
{
	uint32_t i, h;

	/* the fixture owns one queue already */
	for (i = 1; i < self->caps.max_queues; i++)
		ASSERT_EQ(0, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_LOW, &h));
	EXPECT_EQ(-ENOSPC, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_LOW, &h));
}

TEST_F(uapi, queue_destroy_rejects_bad_handles_and_pad)
{
	struct drm_tnpu_queue_destroy d = { 0 };
	int other;

	d.handle = 0;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	d.handle = 999;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	other = tnpu_open_dev();
	ASSERT_GE(other, 0);
	d.handle = self->c.queue;
	EXPECT_EQ(-ENOENT, tnpu_ioctl(other, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	close(other);
	d.pad = 1;
	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	d.pad = 0;
	EXPECT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	EXPECT_EQ(-ENOENT, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
}

/* ---- SUBMIT ---- */

TEST_F(uapi, submit_fence_job_writes_memory)
{
	uint64_t *data = self->c.data.map;

	ASSERT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va + 8, 0xfeedfacecafebeefull));
	EXPECT_EQ(0xfeedfacecafebeefull, data[1]);
	EXPECT_EQ(0, data[0]);
	EXPECT_EQ(0, data[2]);
}

TEST_F(uapi, submit_returns_increasing_seqnos)
{
	struct drm_tnpu_submit s = { 0 };
	uint64_t first;

	s.queue = self->c.queue;
	s.cmd_bo = self->c.cmd.handle;
	s.cmd_size = tnpu_cmd_nop(self->c.cmd.map);
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, &s));
	first = s.seqno;
	EXPECT_NE(0, first);
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, &s));
	EXPECT_GT(s.seqno, first);
}

/* A valid submit that each negative case below breaks in exactly one way. */
static struct drm_tnpu_submit good_submit(struct tnpu_ctx *c, struct drm_tnpu_bo_ref *ref,
					  struct drm_tnpu_sync *in)
{
	struct drm_tnpu_submit s = { 0 };

	ref->handle = c->data.handle;
	ref->flags = DRM_TNPU_BO_REF_WRITE;
	s.queue = c->queue;
	s.cmd_bo = c->cmd.handle;
	s.cmd_size = tnpu_cmd_fence(c->cmd.map, c->data.va, 7);
	s.bos.stride = sizeof(*ref);
	s.bos.count = 1;
	s.bos.array = (uintptr_t)ref;
	(void)in;
	return s;
}

#define EXPECT_SUBMIT(err, fd, s) do {							\
		struct drm_tnpu_submit __s = (s);					\
		EXPECT_EQ(err, tnpu_ioctl(fd, DRM_IOCTL_TNPU_SUBMIT, &__s));		\
	} while (0)

TEST_F(uapi, submit_rejects_bad_queue)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	struct drm_tnpu_queue_destroy d = { 0 };
	uint64_t before = jobs_submitted(self->c.fd);
	struct tnpu_bo ocmd;
	uint32_t q2;
	int other;

	s.queue = 0;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	s.queue = 4242;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	ASSERT_EQ(0, tnpu_queue_new(self->c.fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &q2));
	d.handle = q2;
	ASSERT_EQ(0, tnpu_ioctl(self->c.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d));
	s.queue = q2;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	/* another file's queue handle */
	other = tnpu_open_dev();
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, tnpu_bo_new(other, 4096, 0, &ocmd));
	s = good_submit(&self->c, &ref, NULL);
	s.cmd_bo = ocmd.handle;
	s.bos.count = 0;
	s.queue = self->c.queue;	/* exists only in self->c.fd */
	EXPECT_SUBMIT(-ENOENT, other, s);
	tnpu_bo_free(other, &ocmd);
	close(other);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
}

TEST_F(uapi, submit_rejects_bad_flags_and_cmd_bo)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	uint64_t before = jobs_submitted(self->c.fd);
	struct tnpu_bo dead;

	s.flags = 1;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.flags = 0x80000000u;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.cmd_bo = 0;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	s.cmd_bo = 777;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, 4096, 0, &dead));
	tnpu_bo_free(self->c.fd, &dead);
	s.cmd_bo = dead.handle;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
}

TEST_F(uapi, submit_rejects_bad_cmd_size_and_offset)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	uint64_t before = jobs_submitted(self->c.fd);

	s.cmd_size = 0;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_size = 4;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_size = 28;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_size = UINT32_MAX;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_size = self->caps.max_cmdbuf + 8;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.cmd_offset = 4;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_offset = self->c.cmd.size;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_offset = self->c.cmd.size - 16;	/* 24-byte command crosses the end */
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.cmd_offset = UINT64_MAX - 7;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.cmd_size = 65536 + 8;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
}

TEST_F(uapi, submit_rejects_bad_bo_list)
{
	struct drm_tnpu_bo_ref ref, refs[2];
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	uint64_t before = jobs_submitted(self->c.fd);
	struct tnpu_bo ocmd;
	uint32_t oq;
	int other;

	s.bos.stride = 4;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.bos.stride = 0;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.bos.count = 4097;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.bos.count = UINT32_MAX;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.bos.array = 0;
	EXPECT_SUBMIT(-EFAULT, self->c.fd, s);
	s.bos.array = BAD_PTR;
	EXPECT_SUBMIT(-EFAULT, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	ref.flags = 0;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	ref.flags = 4;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	ref.flags = DRM_TNPU_BO_REF_READ;
	ref.handle = 0;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	ref.handle = 5555;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	/* larger stride with a non-zero unknown tail */
	refs[0] = (struct drm_tnpu_bo_ref){ self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	refs[1] = (struct drm_tnpu_bo_ref){ 1, 0 };
	s = good_submit(&self->c, &ref, NULL);
	s.bos.array = (uintptr_t)refs;
	s.bos.stride = sizeof(refs);
	EXPECT_SUBMIT(-E2BIG, self->c.fd, s);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
	/* a file cannot name another file's BO */
	other = tnpu_open_dev();
	ASSERT_GE(other, 0);
	ASSERT_EQ(0, tnpu_queue_new(other, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &oq));
	ASSERT_EQ(0, tnpu_bo_new(other, 4096, 0, &ocmd));
	s = good_submit(&self->c, &ref, NULL);
	s.queue = oq;
	s.cmd_bo = ocmd.handle;
	ref.handle = self->c.data.handle;	/* self's data BO; @other has handle 1 only */
	EXPECT_SUBMIT(-ENOENT, other, s);
	tnpu_bo_free(other, &ocmd);
	close(other);
}

TEST_F(uapi, submit_accepts_larger_zero_tailed_stride_and_misaligned_array)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	unsigned char raw[1 + 2 * sizeof(ref) + 16] = { 0 };
	struct drm_tnpu_bo_ref r = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };

	/* one element, stride 16, tail zero, at an odd address */
	memcpy(raw + 1, &r, sizeof(r));
	s.bos.array = (uintptr_t)(raw + 1);
	s.bos.stride = 16;
	s.bos.count = 1;
	s.out_sync = self->c.sync;
	EXPECT_SUBMIT(0, self->c.fd, s);
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
}

TEST_F(uapi, submit_duplicate_bos_are_merged)
{
	struct drm_tnpu_bo_ref refs[3] = {
		{ self->c.data.handle, DRM_TNPU_BO_REF_READ },
		{ self->c.data.handle, DRM_TNPU_BO_REF_WRITE },
		{ self->c.cmd.handle, DRM_TNPU_BO_REF_READ },
	};
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .refs = refs,
				   .nrefs = 3, .out_sync = self->c.sync };

	j.cmd_size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 99);
	ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(99, ((uint64_t *)self->c.data.map)[0]);
}

TEST_F(uapi, submit_rejects_bad_syncobjs)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_sync in = { 0 };
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	uint64_t before = jobs_submitted(self->c.fd);
	uint32_t empty, timeline;

	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &empty));
	ASSERT_EQ(0, drmSyncobjCreate(self->c.fd, 0, &timeline));
	s.in_syncs.stride = sizeof(in);
	s.in_syncs.count = 1;
	s.in_syncs.array = (uintptr_t)&in;
	in.handle = 0;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	in.handle = 31337;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	in.handle = empty;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	in.handle = timeline;
	in.point = 5;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	ASSERT_EQ(0, drmSyncobjSignal(self->c.fd, &empty, 1));
	in.handle = empty;
	in.point = 0;
	in.flags = 1;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	in.flags = 0;
	s.in_syncs.stride = 8;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.in_syncs.stride = sizeof(in);
	s.in_syncs.count = 257;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.in_syncs.count = 1;
	s.in_syncs.array = 0;
	EXPECT_SUBMIT(-EFAULT, self->c.fd, s);
	s.in_syncs.array = BAD_PTR;
	EXPECT_SUBMIT(-EFAULT, self->c.fd, s);
	s = good_submit(&self->c, &ref, NULL);
	s.out_sync = 4040;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	s.out_sync = 0;
	s.out_sync_point = 3;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
	/* the signalled binary syncobj is a valid dependency */
	s = good_submit(&self->c, &ref, NULL);
	s.in_syncs.stride = sizeof(in);
	s.in_syncs.count = 1;
	s.in_syncs.array = (uintptr_t)&in;
	s.out_sync = self->c.sync;
	EXPECT_SUBMIT(0, self->c.fd, s);
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	drmSyncobjDestroy(self->c.fd, empty);
	drmSyncobjDestroy(self->c.fd, timeline);
}

TEST_F(uapi, submit_rejects_bad_counters_bo)
{
	struct drm_tnpu_bo_ref ref;
	struct drm_tnpu_submit s = good_submit(&self->c, &ref, NULL);
	uint64_t before = jobs_submitted(self->c.fd);

	s.counters_bo = 999;
	EXPECT_SUBMIT(-ENOENT, self->c.fd, s);
	s.counters_bo = self->c.data.handle;
	s.counters_offset = 4;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.counters_offset = self->c.data.size - 8;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.counters_offset = UINT64_MAX - 7;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	s.counters_bo = 0;
	s.counters_offset = 8;
	EXPECT_SUBMIT(-EINVAL, self->c.fd, s);
	EXPECT_EQ(before, jobs_submitted(self->c.fd));
}

TEST_F(uapi, submit_rejects_unreadable_args)
{
	EXPECT_EQ(-EFAULT, ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, NULL) ? -errno : 0);
	EXPECT_EQ(-EFAULT, ioctl(self->c.fd, DRM_IOCTL_TNPU_SUBMIT, BAD_PTR) ? -errno : 0);
}

TEST_F(uapi, unknown_driver_ioctl_is_einval)
{
	struct drm_tnpu_query q = { 0 };

	EXPECT_EQ(-EINVAL, tnpu_ioctl(self->c.fd,
				      DRM_IOWR(DRM_COMMAND_BASE + 0x30, struct drm_tnpu_query), &q));
}

TEST_HARNESS_MAIN
