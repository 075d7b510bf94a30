// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two tnpu functions in one VM (issue 17): two /dev/accel/accelN nodes, jobs on both at once, and one
 * device unbound through sysfs while the other keeps running jobs. Runs in a VM booted with two
 * -device tnpu (tests/vm/run-vm-tests boots one for the suites named *two_device*); every test leaves
 * both devices bound.
 */
#include <limits.h>
#include <libgen.h>
#include <pthread.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define JOBS_PER_DEVICE	200

/* PCI name (0000:00:03.0) of the function behind /dev/accel/accel@minor. */
static int pci_of_minor(int minor, char *buf, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/class/accel/accel%d/device", minor);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	snprintf(buf, len, "%s", basename(target));
	return 0;
}

static int open_minor(int minor)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/accel/accel%d", minor);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* Waits up to 5 s for @path to appear (@present) or disappear. */
static int wait_path(const char *path, bool present)
{
	for (int i = 0; i < 500; i++) {
		if (!access(path, F_OK) == present)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* The fixture of tnpu_test.h on /dev/accel/accel@minor. */
static int ctx_init_minor(struct tnpu_ctx *c, int minor)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = open_minor(minor);
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

struct runner {
	int minor;
	int jobs;		/* in: jobs to run (0: until *stop) */
	volatile bool *stop;
	int done, failed;	/* out */
	int first_error;
};

/* Runs FENCE jobs on one device, each writing a distinct value that is checked. */
static void *run_jobs(void *arg)
{
	struct runner *r = arg;
	struct tnpu_ctx c;
	int ret = ctx_init_minor(&c, r->minor);

	if (ret) {
		r->failed++;
		r->first_error = ret;
		return NULL;
	}
	for (int i = 0; r->jobs ? i < r->jobs : !*r->stop; i++) {
		uint64_t value = ((uint64_t)r->minor << 32) | (uint64_t)i;
		uint64_t slot = (uint64_t)(i % 512);

		ret = tnpu_run_fence(&c, 0, c.data.va + 8 * slot, value);
		if (!ret && ((uint64_t *)c.data.map)[slot] != value)
			ret = -EIO;
		if (ret) {
			if (!r->failed)
				r->first_error = ret;
			r->failed++;
		} else {
			r->done++;
		}
	}
	tnpu_ctx_fini(&c);
	return NULL;
}

TEST(two_accel_nodes_with_distinct_pci_functions)
{
	char a[64], b[64];
	struct drm_tnpu_caps caps;

	ASSERT_EQ(0, access("/dev/accel/accel0", R_OK | W_OK));
	ASSERT_EQ(0, access("/dev/accel/accel1", R_OK | W_OK));
	ASSERT_EQ(0, pci_of_minor(0, a, sizeof(a)));
	ASSERT_EQ(0, pci_of_minor(1, b, sizeof(b)));
	EXPECT_NE(0, strcmp(a, b));
	for (int m = 0; m < 2; m++) {
		int fd = open_minor(m);

		ASSERT_LE(0, fd);
		memset(&caps, 0, sizeof(caps));
		EXPECT_EQ(0, tnpu_query(fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
		EXPECT_NE(0, caps.rows);
		close(fd);
	}
}

TEST(jobs_on_both_devices_at_once)
{
	struct runner r[2] = { { .minor = 0, .jobs = JOBS_PER_DEVICE },
			       { .minor = 1, .jobs = JOBS_PER_DEVICE } };
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, run_jobs, &r[i]));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(JOBS_PER_DEVICE, r[i].done) {
			TH_LOG("accel%d: %d done, %d failed (first error %d)", i, r[i].done, r[i].failed,
			       r[i].first_error);
		}
	}
}

TEST(unbind_one_device_while_the_other_runs_jobs)
{
	volatile bool stop = false;
	struct runner busy = { .minor = 1, .stop = &stop };
	char victim[64], path[PATH_MAX];
	struct tnpu_bo bo;
	pthread_t t;
	int fd;

	ASSERT_EQ(0, pci_of_minor(0, victim, sizeof(victim)));
	/*
	 * an open file on the victim, with a mapped BO: the unbind must not wait for it, and must
	 * still return every DMA buffer and mapping of the device (DMA-API debugging on vm-debug)
	 */
	fd = open_minor(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tnpu_bo_new(fd, 4 << 20, 0, &bo));
	memset(bo.map, 0x5a, bo.size);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_jobs, &busy));
	usleep(200000);
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/unbind", victim));
	EXPECT_EQ(0, wait_path("/dev/accel/accel0", false));
	/* accel1 keeps working while accel0 is gone */
	int before = busy.done;

	usleep(500000);
	for (int i = 0; i < 100 && busy.done < before + 20; i++)
		usleep(50000);
	EXPECT_LE(before + 20, busy.done);
	/* the CPU mapping outlives the device; closing the BO then has nothing to unmap on it */
	EXPECT_EQ(0x5a, ((volatile unsigned char *)bo.map)[bo.size - 1]);
	tnpu_bo_free(fd, &bo);
	close(fd);
	ASSERT_EQ(0, tnpu_write_file("/sys/bus/pci/drivers/tnpu/bind", victim));
	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/tnpu/%s", victim);
	EXPECT_EQ(0, wait_path(path, true));
	EXPECT_EQ(0, wait_path("/dev/accel/accel0", true));
	stop = true;
	pthread_join(t, NULL);
	EXPECT_EQ(0, busy.failed) {
		TH_LOG("accel1: %d jobs failed (first error %d) while accel0 was unbound", busy.failed,
		       busy.first_error);
	}
	/* the rebound device runs jobs again */
	struct runner again = { .minor = 0, .jobs = 20 };

	run_jobs(&again);
	EXPECT_EQ(20, again.done);
}

TEST_HARNESS_MAIN
