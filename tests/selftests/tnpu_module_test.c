// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module life cycle: repeated rmmod/insmod, rmmod refused while a file is open or jobs of a closed
 * file live, unbind with an open file and jobs in flight, rmmod right after closing a file with jobs
 * in flight, the MMU quarantine. Every test leaves tnpu.ko loaded and bound.
 */
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define KO_PATH_FILE	"/etc/tnpu/tnpu.ko.path"

static int ko_path(char *buf, size_t len)
{
	FILE *f = fopen(KO_PATH_FILE, "r");

	if (!f)
		return -ENOENT;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int unload_once(void)
{
	return syscall(SYS_delete_module, "tnpu", O_NONBLOCK) ? -errno : 0;
}

/*
 * Every job holds the module until its release, and its hardware fence after that while anything
 * else holds it (e.g. as a later job's dependency): rmmod right after a close is refused until the
 * closed file's jobs completed and the driver's cleanup work released them (a hung job: until its
 * timeout recovery; a job an earlier suite left behind may still be running).
 */
static int unload(void)
{
	int i, ret = unload_once();

	for (i = 0; ret == -EWOULDBLOCK && i < 2000; i++) {
		usleep(20000);
		ret = unload_once();
	}
	return ret;
}

static int load_params(const char *params)
{
	char path[PATH_MAX];
	int fd, ret;

	ret = ko_path(path, sizeof(path));
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* as tools/vm/init loads it: the suites after this one use the fault-injection knobs */
static int load_with(const char *params)
{
	char all[256];

	snprintf(all, sizeof(all), "%s fault_inject=1", params);
	return load_params(all);
}

static int load(void)
{
	return load_with("");
}

static bool debugfs_has(const char *name)
{
	/* tnpu_write_file() finds the device's debugfs directory; an empty write is a no-op */
	return tnpu_write_file(name, "") != -ENOENT;
}

/* waits for devtmpfs to show the node after a load or bind */
static int wait_node(void)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (!access(TNPU_DEV, R_OK | W_OK))
			return 0;
		usleep(10000);
	}
	return -ENOENT;
}

static int pci_name(char *buf, size_t len)
{
	DIR *d = opendir("/sys/bus/pci/drivers/tnpu");
	struct dirent *e;
	int ret = -ENOENT;

	if (!d)
		return -ENOENT;
	while ((e = readdir(d))) {
		if (strchr(e->d_name, ':')) {
			snprintf(buf, len, "%s", e->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

static int one_job(void)
{
	struct tnpu_ctx c;
	int ret = tnpu_ctx_init(&c);

	if (!ret)
		ret = tnpu_run_fence(&c, 0, c.data.va, 5);
	if (!ret && ((uint64_t *)c.data.map)[0] != 5)
		ret = -EIO;
	tnpu_ctx_fini(&c);
	return ret;
}

static void submit_many(struct tnpu_ctx *c, int n)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	int i;

	for (i = 0; i < n; i++) {
		struct tnpu_job_args j = { .queue = c->queue, .cmd = &c->cmd, .refs = &ref,
					   .nrefs = 1, .out_sync = c->sync };

		j.cmd_size = tnpu_cmd_fence(c->cmd.map, c->data.va, i);
		if (tnpu_submit(c->fd, &j))
			break;
	}
}

TEST(rmmod_insmod_repeatedly)
{
	int i;

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, unload()) TH_LOG("cycle %d", i);
		ASSERT_EQ(0, load()) TH_LOG("cycle %d", i);
		ASSERT_EQ(0, wait_node());
		ASSERT_EQ(0, one_job()) TH_LOG("cycle %d", i);
	}
}

/* MSI (one vector for every cause) and polling: a job, a device error and the next job */
static int fallback_jobs(void)
{
	struct tnpu_ctx c;
	int ret = tnpu_ctx_init(&c);

	if (!ret)
		ret = tnpu_run_fence(&c, 0, c.data.va, 5);
	if (!ret)
		ret = tnpu_inject("inject_error");
	if (!ret)
		ret = tnpu_run_fence(&c, 64, c.data.va, 6) == -EIO ? 0 : -EPROTO;
	if (!ret)
		ret = tnpu_run_fence(&c, 128, c.data.va, 7);
	if (!ret && ((uint64_t *)c.data.map)[0] != 7)
		ret = -EIO;
	tnpu_ctx_fini(&c);
	return ret;
}

TEST(msi_and_polling_fallbacks_complete_jobs)
{
	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_with("irq_mode=1"));
	ASSERT_EQ(0, wait_node());
	EXPECT_EQ(0, fallback_jobs()) TH_LOG("MSI");
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_with("irq_mode=2"));
	ASSERT_EQ(0, wait_node());
	EXPECT_EQ(0, fallback_jobs()) TH_LOG("polling");
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
	ASSERT_EQ(0, one_job());
}

/*
 * The completion poll (irq_mode=2) takes a runtime-PM reference only while it reads the device and
 * does not count as activity (driver.md "Interrupts"): an idle device still autosuspends, a job
 * resumes it and completes, and it suspends again.  A poll that marked the device busy every tick
 * would keep it awake for good.
 */
TEST(polling_lets_an_idle_device_suspend_and_jobs_resume_it)
{
	char st[32];

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_with("irq_mode=2"));
	ASSERT_EQ(0, wait_node());
	tnpu_runtime_status(st, sizeof(st));
	EXPECT_TRUE(tnpu_wait_runtime_status("suspended", 10000)) TH_LOG("runtime_status %s", st);
	EXPECT_EQ(0, one_job());
	EXPECT_TRUE(tnpu_wait_runtime_status("suspended", 10000));
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
}

/* driver.md: the debugfs injection knobs exist only with fault_inject=1 at load time */
TEST(fault_injection_knobs_need_the_load_time_parameter)
{
	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_params(""));
	ASSERT_EQ(0, wait_node());
	EXPECT_FALSE(debugfs_has("inject_hang"));
	EXPECT_FALSE(debugfs_has("inject_mmu_fault"));
	EXPECT_FALSE(debugfs_has("inject_error"));
	EXPECT_TRUE(debugfs_has("rings"));
	EXPECT_EQ(0, one_job());
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
	EXPECT_TRUE(debugfs_has("inject_hang"));
}

TEST(rmmod_is_refused_while_a_file_is_open)
{
	int fd;

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	fd = tnpu_open_dev();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(-EWOULDBLOCK, unload_once());
	close(fd);
	ASSERT_EQ(0, one_job());
}

TEST(rmmod_right_after_closing_file_with_jobs_in_flight)
{
	struct tnpu_ctx c;

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	submit_many(&c, 200);
	tnpu_ctx_fini(&c);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
	ASSERT_EQ(0, one_job());
}

/* sync_file status of @fd once signalled (sync_file ioctls do not go through the DRM device) */
static int sync_file_status(int fd, int timeout_ms)
{
	struct sync_file_info info = { 0 };
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIME;
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info))
		return -errno;
	return info.status == 1 ? 0 : info.status;
}

/* unload_once() in a child: its -errno, or -EINPROGRESS if it still sleeps after @ms */
static int unload_in_child(int close_fd, int ms, pid_t *child)
{
	int status, i;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (close_fd >= 0)
			close(close_fd);
		_exit(-unload_once());
	}
	*child = pid;
	for (i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			*child = 0;
			return -WEXITSTATUS(status);
		}
		usleep(10000);
	}
	return -EINPROGRESS;
}

/*
 * Issue #28: rmmod after closing a file whose jobs hang used to go through, failing them, but
 * module exit then slept (uninterruptibly, in D state) until every fence of theirs was released:
 * here until the test closed the sync_file it kept. Now the jobs hold the module: rmmod is refused
 * at once; an unbind fails the jobs, and once the sync_file is closed the module unloads.
 */
TEST(rmmod_with_hung_jobs_of_a_closed_file_is_refused_not_blocked)
{
	char dev[256];
	struct tnpu_ctx c;
	int sync_fd = -1, ret, status;
	pid_t child = 0;

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	submit_many(&c, 20);
	ASSERT_EQ(0, drmSyncobjExportSyncFile(c.fd, c.sync, &sync_fd));
	tnpu_ctx_fini(&c);

	ret = unload_in_child(sync_fd, 3000, &child);
	if (child) {
		/* the old driver: its exit sleeps until the sync_file is closed, then it is gone */
		close(sync_fd);
		ASSERT_EQ(child, waitpid(child, &status, 0));
		ASSERT_EQ(0, load());
		ASSERT_EQ(0, wait_node());
	}
	ASSERT_EQ(-EWOULDBLOCK, ret) TH_LOG("rmmod: %s", ret == -EINPROGRESS ?
					     "still sleeping after 3 s" : strerror(-ret));

	/* the unbind fails the jobs; the sync_file's fence then holds the module until closed */
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/unbind", dev));
	EXPECT_EQ(-ENODEV, sync_file_status(sync_fd, 10000));
	EXPECT_EQ(-EWOULDBLOCK, unload_once());
	close(sync_fd);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
	ASSERT_EQ(0, one_job());
}

TEST(pci_function_reset_resubmits_jobs_in_flight)
{
	struct drm_tnpu_counters before, after;
	char dev[256], path[300];
	struct tnpu_ctx c;

	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", dev);
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_query(c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	/* the job sits on a stopped ring until the function reset restarts it */
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	submit_many(&c, 1);
	EXPECT_EQ(-ETIME, tnpu_sync_status(c.fd, c.sync, 0, 100));
	ASSERT_EQ(0, tnpu_write_file(path, "1"));
	EXPECT_EQ(0, tnpu_sync_status(c.fd, c.sync, 0, 10000));
	ASSERT_EQ(0, tnpu_query(c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.resets + 1, after.resets);
	EXPECT_EQ(before.jobs_failed, after.jobs_failed);
	tnpu_ctx_fini(&c);
	ASSERT_EQ(0, one_job());
}

TEST(unbind_with_open_file_and_jobs_in_flight)
{
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_CAPS };
	char dev[256];
	struct tnpu_ctx c;
	int sync_fd = -1;

	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	/* the ring stops: every job stays on the hardware until the unbind */
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	submit_many(&c, 50);
	ASSERT_EQ(0, drmSyncobjExportSyncFile(c.fd, c.sync, &sync_fd));
	EXPECT_EQ(-ETIME, sync_file_status(sync_fd, 100));
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/unbind", dev));
	EXPECT_EQ(-ENODEV, sync_file_status(sync_fd, 10000));
	close(sync_fd);
	EXPECT_EQ(-ENODEV, tnpu_ioctl(c.fd, DRM_IOCTL_TNPU_QUERY, &q));
	/* the CPU mapping of a BO outlives the device */
	((uint64_t *)c.data.map)[1] = 1;
	tnpu_ctx_fini(&c);
	/* the old device (and its accel0 minor) goes away once its last job is released */
	usleep(500000);
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/bind", dev));
	ASSERT_EQ(0, wait_node());
	ASSERT_EQ(0, one_job());
}

/*
 * BO_WAIT and QUEUE_DESTROY used to hold the unplug SRCU (drm_dev_enter) while they waited, so an
 * unbind waited for them: here for a BO_WAIT on a hung job, up to its 20 s timeout. Now the unbind
 * goes through, fails the job, and the waiter returns.
 */
TEST(unbind_is_not_held_up_by_a_blocked_bo_wait)
{
	struct drm_tnpu_bo_wait w = { 0 };
	char dev[256], old[32] = "30000";
	struct tnpu_ctx c;
	int64_t t0, took;
	pid_t pid;
	int status;
	FILE *f;

	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	f = fopen(TNPU_PARAM, "r");
	if (f) {
		if (!fgets(old, sizeof(old), f))
			snprintf(old, sizeof(old), "30000");
		fclose(f);
	}
	ASSERT_EQ(0, tnpu_write_file(TNPU_PARAM, "20000"));
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	submit_many(&c, 1);
	w.handle = c.data.handle;
	w.timeout_ns = tnpu_now_ns() + 60000000000ll;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)	/* blocks in BO_WAIT until the hung job's fence signals */
		_exit(tnpu_ioctl(c.fd, DRM_IOCTL_TNPU_BO_WAIT, &w) ? 1 : 0);
	usleep(300000);
	t0 = tnpu_now_ns();
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/unbind", dev));
	took = (tnpu_now_ns() - t0) / 1000000;
	TH_LOG("unbind took %lld ms", (long long)took);
	/* well inside the hung job's 20 s: the unbind did not wait for the waiter */
	EXPECT_LT(took, 10000);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	tnpu_ctx_fini(&c);
	usleep(500000);
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/bind", dev));
	ASSERT_EQ(0, wait_node());
	tnpu_write_file(TNPU_PARAM, old);
	ASSERT_EQ(0, one_job());
}

/*
 * A job's out-fence exported as a sync_file holds the job's hardware fence, whose ops are module
 * code and whose lock and scheduler (the sync_file's timeline name) are in the device. Before the
 * fix, an unbind and close freed the device under it (SYNC_IOC_FILE_INFO read freed memory) and
 * rmmod went through, so closing the sync_file ran dma_fence_release() on the unloaded module's
 * ops: an oops. Now the fence holds the device and, once its job is released, the module.
 */
TEST(sync_file_of_a_job_outlives_unbind_and_holds_the_module)
{
	struct sync_fence_info fi = { 0 };
	struct sync_file_info info = { .num_fences = 1, .sync_fence_info = (uintptr_t)&fi };
	char dev[256];
	struct tnpu_ctx c;
	int sync_fd = -1;

	if (access(KO_PATH_FILE, R_OK))
		SKIP(return, "no %s (not the tnpu VM image)", KO_PATH_FILE);
	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_run_fence(&c, 0, c.data.va, 3));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(c.fd, c.sync, &sync_fd));
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/unbind", dev));
	tnpu_ctx_fini(&c);
	/* the job is released (its cleanup is asynchronous): nothing but the sync_file holds it */
	usleep(500000);
	ASSERT_EQ(0, ioctl(sync_fd, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(1, info.status);
	EXPECT_EQ(1, fi.status);
	EXPECT_STREQ("drm_sched", fi.driver_name);
	EXPECT_EQ(0, strncmp(fi.obj_name, "tnpu-q", 6)) TH_LOG("timeline \"%.32s\"", fi.obj_name);
	EXPECT_EQ(-EWOULDBLOCK, unload_once());
	close(sync_fd);
	/* the fence's release drops the module from the driver's cleanup work */
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load());
	ASSERT_EQ(0, wait_node());
	ASSERT_EQ(0, one_job());
}

/* debugfs mmu_stale of the first device: BOs and contexts in the MMU quarantine */
static int mmu_stale(unsigned int *bos, unsigned int *ctxs)
{
	int ret = -ENOENT;
	FILE *f = tnpu_debugfs_open("mmu_stale", &ret);

	if (!f)
		return ret;
	ret = fscanf(f, "bos %u ctxs %u", bos, ctxs) == 2 ? 0 : -ENOENT;
	fclose(f);
	return ret;
}

/* waits up to @ms for the quarantine to hold @bos BOs and @ctxs contexts */
static bool mmu_stale_is(unsigned int bos, unsigned int ctxs, int ms)
{
	unsigned int b = ~0u, c = ~0u;
	int i;

	for (i = 0; i <= ms / 10; i++) {
		if (!mmu_stale(&b, &c) && b == bos && c == ctxs)
			return true;
		usleep(10000);
	}
	fprintf(stderr, "# mmu_stale: bos %u ctxs %u, expected %u %u\n", b, c, bos, ctxs);
	return false;
}

/*
 * Issue #28: a BO freed while the MMU invalidate timed out gave its pages back to the kernel
 * anyway (the device could still write them through a stale TLB entry). The injected timeout
 * stands for a device that does not complete the invalidate: the BO, then a whole closed file
 * (its BOs and its context, page tables and id), stay in the quarantine until a device reset
 * completes: the BOs first (they hold the context), then the context's page tables and id. The
 * old driver had neither the knob nor the quarantine, so this fails on it.
 */
TEST(freed_pages_wait_for_a_reset_when_the_mmu_invalidate_times_out)
{
	char dev[256], path[300];
	struct tnpu_bo extra;
	struct tnpu_ctx c;

	ASSERT_EQ(0, pci_name(dev, sizeof(dev)));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", dev);
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_bo_new(c.fd, 65536, 0, &extra));
	ASSERT_TRUE(mmu_stale_is(0, 0, 0));

	ASSERT_EQ(0, tnpu_write_file("inject_mmu_inval_timeout", "1"));
	tnpu_bo_free(c.fd, &extra);
	EXPECT_TRUE(mmu_stale_is(1, 0, 0));
	/* neither time nor jobs release it */
	ASSERT_EQ(0, tnpu_run_fence(&c, 0, c.data.va, 5));
	usleep(300000);
	EXPECT_TRUE(mmu_stale_is(1, 0, 0));

	/* the file's two BOs once its job is released; they hold its context */
	ASSERT_EQ(0, tnpu_write_file("inject_mmu_inval_timeout", "100"));
	tnpu_ctx_fini(&c);
	EXPECT_TRUE(mmu_stale_is(3, 0, 5000));

	/* a function reset frees the BOs; the context's own invalidate then "times out" */
	ASSERT_EQ(0, tnpu_write_file(path, "1"));
	EXPECT_TRUE(mmu_stale_is(0, 1, 5000));
	ASSERT_EQ(0, tnpu_write_file("inject_mmu_inval_timeout", "0"));
	ASSERT_EQ(0, tnpu_write_file(path, "1"));
	EXPECT_TRUE(mmu_stale_is(0, 0, 5000));
	ASSERT_EQ(0, one_job());
}

TEST_HARNESS_MAIN
