// SPDX-License-Identifier: GPL-2.0-only
/*
 * Power management with tnpu.ko.
 *
 * Runtime PM (every run): an idle device runtime-suspends after its autosuspend delay (the PCI core
 * puts it in D3hot), a SUBMIT resumes it (the driver programs it again through the system-resume
 * path) and the jobs complete; counters stay consistent. Set to a 100 ms delay for the test and restored afterwards.
 *
 * System sleep: a real S3 cycle (woken by the RTC alarm). The device comes back at its reset
 * defaults (QEMU resets it on resume), so jobs only run afterwards if the driver's resume programs
 * it again; jobs on the hardware when the system slept run again from their start.
 */
#include "kselftest_harness.h"
#include "tnpu_test.h"

#define WAKEALARM "/sys/class/rtc/rtc0/wakealarm"
#define POWER_DIR "/sys/class/accel/accel0/device/power/"
#define CNT_COMMANDS 13

static int read_line(const char *path, char *buf, size_t size)
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

static void runtime_status(char *buf, size_t size)
{
	if (read_line(POWER_DIR "runtime_status", buf, size))
		snprintf(buf, size, "?");
}

/* Polls runtime_status for @want; true if seen within @ms */
static bool wait_runtime_status(const char *want, int ms)
{
	char st[32];
	int i;

	for (i = 0; i < ms / 10; i++) {
		runtime_status(st, sizeof(st));
		if (!strcmp(st, want))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * Under TCG the guest's timers stop working after an S3 resume (sleep(1) never returns), which
 * would break every suite after this one: it sleeps the system only when named on its own
 * (tests/vm/run-vm-tests tnpu_pm_test), never in the default run of all suites.
 */
static bool requested_alone(void)
{
	const char *s = getenv("TNPU_EXPLICIT_SUITES");

	return s && !strcmp(s, "tnpu_pm_test");
}

static bool can_sleep(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/power/state", "r");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "mem") && !access(WAKEALARM, W_OK);
}

/* S3 for about @secs seconds: returns once the system has resumed */
static int system_sleep(int secs)
{
	char when[16];
	int ret;

	snprintf(when, sizeof(when), "+%d", secs);
	ret = tnpu_write_file(WAKEALARM, "0");
	if (!ret)
		ret = tnpu_write_file(WAKEALARM, when);
	if (!ret)
		ret = tnpu_write_file("/sys/power/mem_sleep", "deep");
	if (!ret)
		ret = tnpu_write_file("/sys/power/state", "mem");
	return ret;
}

FIXTURE(pm) {
	struct tnpu_ctx c;
	char delay[32];
};

FIXTURE_SETUP(pm)
{
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
	ASSERT_EQ(0, read_line(POWER_DIR "autosuspend_delay_ms", self->delay, sizeof(self->delay)));
	ASSERT_EQ(0, tnpu_write_file(POWER_DIR "autosuspend_delay_ms", "100"));
}

FIXTURE_TEARDOWN(pm)
{
	tnpu_write_file(POWER_DIR "autosuspend_delay_ms", self->delay);
	tnpu_ctx_fini(&self->c);
}

/*
 * The driver enables runtime PM itself (power/control "auto"): with the file open but no job, the
 * device suspends; SUBMIT resumes it, the jobs complete with the right values, and the driver's
 * and the device's counters move by exactly those jobs (no reset, no timeout, no re-run).
 */
TEST_F(pm, idle_device_runtime_suspends_and_a_submit_resumes_it)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_counters before = { 0 }, after = { 0 };
	uint64_t *data = self->c.data.map;
	char ctl[32], st[32];
	int round, i;

	/* the S3 run: after its resume the guest's timers stop under TCG (no autosuspend, no usleep) */
	if (requested_alone())
		SKIP(return, "runs in the default run of all suites, not in the S3 run");
	ASSERT_EQ(0, read_line(POWER_DIR "control", ctl, sizeof(ctl)));
	ASSERT_STREQ("auto", ctl);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	for (round = 0; round < 3; round++) {
		runtime_status(st, sizeof(st));
		ASSERT_TRUE(wait_runtime_status("suspended", 10000))
			TH_LOG("round %d: runtime_status %s 10 s after the last job", round, st);
		for (i = 0; i < 16; i++) {
			struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
						   .cmd_offset = 64 * i, .refs = &ref, .nrefs = 1,
						   .out_sync = self->c.sync };

			j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64 * i,
						    self->c.data.va + 8 * i, 1000 * round + i);
			ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
		}
		ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 20000));
		for (i = 0; i < 16; i++)
			EXPECT_EQ(1000 * round + i, data[i]) TH_LOG("round %d job %d", round, i);
	}
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.jobs_submitted + 48, after.jobs_submitted);
	EXPECT_EQ(before.jobs_completed + 48, after.jobs_completed);
	EXPECT_EQ(before.jobs_failed, after.jobs_failed);
	EXPECT_EQ(before.resets, after.resets);
	EXPECT_EQ(before.jobs_timedout, after.jobs_timedout);
	/* one FENCE command per job: the device's counters survive the suspended periods */
	EXPECT_EQ(before.device[CNT_COMMANDS] + 48, after.device[CNT_COMMANDS]);
}

/*
 * One S3 cycle (each one is slow and needs the RTC alarm to fire after the system is asleep: the
 * alarm is 10 s out, so a loaded host still gets there first). Jobs queued and in flight when the
 * system goes to sleep all complete, in order, after resume; a job submitted after resume runs at
 * once. Without .pm the rings were unprogrammed after resume: jobs hung until timeout_ms and a reset.
 */
TEST_F(pm, jobs_across_and_after_system_sleep_complete_without_a_reset)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_counters before = { 0 }, after = { 0 };
	uint64_t *data = self->c.data.map;
	int i;

	if (!requested_alone())
		SKIP(return, "S3 stops the guest's timers: run alone, run-vm-tests tnpu_pm_test");
	if (!can_sleep())
		SKIP(return, "no S3 or no RTC wake alarm");
	ASSERT_EQ(0, tnpu_run_fence(&self->c, 0, self->c.data.va, 1));
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	for (i = 0; i < 64; i++) {
		struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .cmd_offset = 64 * i, .refs = &ref, .nrefs = 1,
					   .out_sync = self->c.sync };

		j.cmd_size = tnpu_cmd_fence((char *)self->c.cmd.map + 64 * i, self->c.data.va + 8 * i,
					    100 + i);
		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	}
	ASSERT_EQ(0, system_sleep(10));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 20000));
	for (i = 0; i < 64; i++)
		EXPECT_EQ(100 + i, data[i]) TH_LOG("job %d", i);
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 8192, self->c.data.va + 8 * 100, 2));
	EXPECT_EQ(2, data[100]);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.resets, after.resets);
	EXPECT_EQ(before.jobs_timedout, after.jobs_timedout);
}

TEST_HARNESS_MAIN
