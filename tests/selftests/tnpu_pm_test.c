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

#define PM_TEST "/sys/power/pm_test"
#define PM_TEST_DELAY "/sys/module/suspend/parameters/pm_test_delay"
#define SHIFT_WORDS 128

/* a DMA_H2D (0x01) or DMA_D2H (0x02) command: @height rows of @width bytes, host and SRAM pitches */
static uint32_t cmd_dma(void *buf, uint8_t op, uint64_t va, uint64_t host_pitch, uint32_t sram_off,
			uint32_t sram_pitch, uint32_t width, uint32_t height, uint8_t half)
{
	uint64_t *p = buf;
	uint32_t *w = buf;
	uint8_t *b = buf;

	memset(buf, 0, 64);
	p[0] = op | (uint64_t)64 << 32;
	p[1] = va;
	p[2] = host_pitch;
	w[8] = sram_off;
	w[9] = sram_pitch;
	w[11] = width;
	w[12] = height;
	w[13] = 1;
	b[57] = half;
	return 64;
}

/*
 * A job that is not idempotent: it shifts data[0..SHIFT_WORDS-2] up by one word (through the
 * storage unit), then keeps the device busy with @busy_rows one-word loads into the other half
 * (host work only). Run k times over data[i] = i + 1: data[i] = max(i - k, 0) + 1.
 */
static uint32_t cmd_shift_then_busy(void *buf, uint64_t va, uint32_t busy_rows)
{
	char *c = buf;
	uint32_t n = 0;

	n += cmd_dma(c + n, 0x01, va, 0, 0, 0, 8 * (SHIFT_WORDS - 1), 1, 0);
	n += cmd_dma(c + n, 0x02, va + 8, 0, 0, 0, 8 * (SHIFT_WORDS - 1), 1, 0);
	n += cmd_dma(c + n, 0x01, va, 0, 0, 0, 8, busy_rows, 1);
	return n;
}

/* s2idle with pm_test "devices": the device callbacks run, the system does not sleep */
static int pm_test_cycle(void)
{
	char delay[16] = "5";
	int ret;

	read_line(PM_TEST_DELAY, delay, sizeof(delay));
	ret = tnpu_write_file(PM_TEST_DELAY, "1");
	if (!ret)
		ret = tnpu_write_file(PM_TEST, "devices");
	if (!ret)
		ret = tnpu_write_file("/sys/power/state", "freeze");
	tnpu_write_file(PM_TEST, "none");
	tnpu_write_file(PM_TEST_DELAY, delay);
	return ret;
}

FIXTURE(pm) {
	struct tnpu_ctx c;
	char delay[32];
};

/* one shift job on data[i] = i + 1; its round trip in ms */
static int64_t run_shift_job(struct __test_metadata *_metadata, FIXTURE_DATA(pm) *self,
			     uint32_t busy_rows)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd, .refs = &ref,
				   .nrefs = 1, .out_sync = self->c.sync };
	uint64_t *data = self->c.data.map;
	int64_t t0;
	int i;

	for (i = 0; i < SHIFT_WORDS; i++)
		data[i] = i + 1;
	j.cmd_size = cmd_shift_then_busy(self->c.cmd.map, self->c.data.va, busy_rows);
	t0 = tnpu_now_ns();
	EXPECT_EQ(0, tnpu_submit(self->c.fd, &j));
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(1, data[1]);
	EXPECT_EQ(2, data[2]);
	return (tnpu_now_ns() - t0) / 1000000;
}

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

/*
 * A system suspend quiesces the device and a resume resets it: jobs on the hardware when the
 * system goes to sleep finish (or are abandoned by a reset) before it sleeps, and none runs
 * twice. Before the fix, suspend left the device running and resume re-wrote every job still in
 * flight into a re-enabled ring without a reset; the job the device was executing at that moment
 * finished and ran again (here: one shift too many). s2idle with pm_test "devices" (no real sleep,
 * so the guest's timers keep working and this runs in every run).
 */
TEST_F(pm, jobs_in_flight_across_a_suspend_run_exactly_once)
{
	struct drm_tnpu_bo_ref ref = { self->c.data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_counters before = { 0 }, after = { 0 };
	uint64_t *data = self->c.data.map;
	uint32_t busy_rows = 1u << 20, cmd_size = 0;
	int64_t base_ms, job_ms;
	int i, njobs;

	if (requested_alone())
		SKIP(return, "runs in the default run of all suites, not in the S3 run");
	if (access(PM_TEST, W_OK) || access(PM_TEST_DELAY, W_OK))
		SKIP(return, "no %s or %s (CONFIG_PM_DEBUG)", PM_TEST, PM_TEST_DELAY);
	/*
	 * calibrate: under TCG the guest's own latency dwarfs short jobs, so the device time of a job
	 * is its round trip minus that of a job without busy rows; then ~3 s of them go in flight
	 */
	base_ms = run_shift_job(_metadata, self, 1);
	for (;;) {
		job_ms = run_shift_job(_metadata, self, busy_rows) - base_ms;
		if (job_ms >= 150 || busy_rows >= 1u << 23)
			break;
		busy_rows <<= 1;
	}
	njobs = job_ms > 0 ? 3000 / job_ms : 64;
	njobs = njobs < 4 ? 4 : njobs > SHIFT_WORDS - 8 ? SHIFT_WORDS - 8 : njobs;
	TH_LOG("%d jobs of %lld ms (%u busy rows; %lld ms round trip without) in flight across the suspend",
	       njobs, (long long)job_ms, busy_rows, (long long)base_ms);

	for (i = 0; i < SHIFT_WORDS; i++)
		data[i] = i + 1;
	cmd_size = cmd_shift_then_busy(self->c.cmd.map, self->c.data.va, busy_rows);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	for (i = 0; i < njobs; i++) {
		struct tnpu_job_args j = { .queue = self->c.queue, .cmd = &self->c.cmd,
					   .cmd_size = cmd_size, .refs = &ref, .nrefs = 1,
					   .out_sync = self->c.sync };

		ASSERT_EQ(0, tnpu_submit(self->c.fd, &j));
	}
	ASSERT_EQ(0, pm_test_cycle());
	ASSERT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	/* exactly njobs shifts: data[njobs] is the first word 1, data[njobs + 1] is 2 */
	for (i = 0; i < njobs + 4; i++)
		EXPECT_EQ((uint64_t)(i > njobs ? i - njobs : 0) + 1, data[i])
			TH_LOG("word %d after %d shift jobs (a value one lower: a job ran twice)",
			       i, njobs);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.jobs_completed + njobs, after.jobs_completed);
	EXPECT_EQ(before.jobs_failed, after.jobs_failed);
	EXPECT_EQ(before.jobs_timedout, after.jobs_timedout);
	/* a job still left to the suspend's reset would run again from its start, shifting twice */
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 8192, self->c.data.va + 8 * SHIFT_WORDS, 7));
	EXPECT_EQ(7, data[SHIFT_WORDS]);
}

TEST_HARNESS_MAIN
