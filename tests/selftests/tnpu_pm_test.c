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
#define CNT_COMMANDS 13

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
	ASSERT_EQ(0, tnpu_read_line(TNPU_POWER_DIR "autosuspend_delay_ms", self->delay, sizeof(self->delay)));
	ASSERT_EQ(0, tnpu_write_file(TNPU_POWER_DIR "autosuspend_delay_ms", "100"));
}

FIXTURE_TEARDOWN(pm)
{
	tnpu_write_file(TNPU_POWER_DIR "autosuspend_delay_ms", self->delay);
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
	ASSERT_EQ(0, tnpu_read_line(TNPU_POWER_DIR "control", ctl, sizeof(ctl)));
	ASSERT_STREQ("auto", ctl);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	for (round = 0; round < 3; round++) {
		tnpu_runtime_status(st, sizeof(st));
		ASSERT_TRUE(tnpu_wait_runtime_status("suspended", 10000))
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
		for (i = 0; i < 16; i++) {
			EXPECT_EQ(1000 * round + i, data[i]) TH_LOG("round %d job %d", round, i);
		}
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

/* power/runtime_active_time: ms the device has been runtime-active, or -1 */
static long long active_ms(void)
{
	char buf[32];

	return tnpu_read_line(TNPU_POWER_DIR "runtime_active_time", buf, sizeof(buf)) ? -1 : atoll(buf);
}

/*
 * issue #28: CAPS and FAULT answer from memory, so they leave a runtime-suspended device asleep
 * (they used to resume it, and each kept it up for the autosuspend delay); COUNTERS reads the
 * device's registers, so it resumes the device, which stays up for at least that delay.
 */
TEST_F(pm, queries_that_read_no_register_leave_the_device_suspended)
{
	struct drm_tnpu_counters cnt = { 0 };
	struct drm_tnpu_fault fault = { 0 };
	struct drm_tnpu_caps caps = { 0 };
	long long before, after;
	char st[32];
	int i;

	if (requested_alone())
		SKIP(return, "runs in the default run of all suites, not in the S3 run");
	ASSERT_TRUE(tnpu_wait_runtime_status("suspended", 10000));
	before = active_ms();
	ASSERT_LE(0, before);
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
		ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_FAULT, &fault, sizeof(fault)));
	}
	usleep(300000);
	after = active_ms();
	EXPECT_LT(after - before, 50) TH_LOG("runtime-active for %lld ms", after - before);
	tnpu_runtime_status(st, sizeof(st));
	EXPECT_STREQ("suspended", st);

	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &cnt, sizeof(cnt)));
	ASSERT_TRUE(tnpu_wait_runtime_status("suspended", 10000));
	EXPECT_LE(90, active_ms() - after) TH_LOG("COUNTERS resumed the device");
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
	for (i = 0; i < 64; i++) {
		EXPECT_EQ(100 + i, data[i]) TH_LOG("job %d", i);
	}
	EXPECT_EQ(0, tnpu_run_fence(&self->c, 8192, self->c.data.va + 8 * 100, 2));
	EXPECT_EQ(2, data[100]);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.resets, after.resets);
	EXPECT_EQ(before.jobs_timedout, after.jobs_timedout);
}

#define PM_TEST "/sys/power/pm_test"
#define PM_TEST_DELAY "/sys/module/suspend/parameters/pm_test_delay"
#define TNPU_OP_DMA_H2D 0x01
#define TNPU_OP_DMA_D2H 0x02
#define TNPU_DMA_F_FILL 0x01
#define LONG_CMD_BYTES (1 << 20)
#define LONG_JOBS 4
#define LONG_JOB_BYTES (LONG_CMD_BYTES / LONG_JOBS)

/* The selected word of /sys/power/pm_test ("[none] core ... devices ..."), or "" */
static void pm_test_selected(char *buf, size_t size)
{
	char line[256], *a, *b;

	buf[0] = 0;
	if (tnpu_read_line(PM_TEST, line, sizeof(line)))
		return;
	a = strchr(line, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b && (size_t)(b - a) < size) {
		memcpy(buf, a + 1, (size_t)(b - a - 1));
		buf[b - a - 1] = 0;
	}
}

/* One 64-byte DMA of 8 bytes between host @va and row 0, SRAM offset 0 */
static uint8_t *dma8(uint8_t *p, uint8_t op, uint64_t va)
{
	memset(p, 0, 64);
	((uint64_t *)p)[0] = op | (uint64_t)64 << 32;
	((uint64_t *)p)[1] = va;
	((uint32_t *)p)[11] = 8;
	((uint32_t *)p)[12] = 1;
	((uint32_t *)p)[13] = 1;
	return p + 64;
}

/*
 * Long job number @slot: first copy data[4 + 2 slot] to data[5 + 2 slot] through the storage
 * unit, then FENCE data[4 + 2 slot] = 7 and data[0] = 1 (it has started), @n broadcast FILL
 * DMAs into every storage unit (device time, no memory read), FENCE data[1] = 2. Run once, the
 * copy holds data[4 + 2 slot]'s first value; run again from its start, it holds 7. Returns the
 * job's size.
 */
static uint32_t long_fill_job(void *buf, uint64_t data_va, uint32_t slot, uint32_t n,
			      uint32_t half_sram)
{
	uint32_t width = half_sram < 65536 ? half_sram : 65536, i;
	uint8_t *p = buf;

	p = dma8(p, TNPU_OP_DMA_H2D, data_va + 8 * (4 + 2 * slot));
	p = dma8(p, TNPU_OP_DMA_D2H, data_va + 8 * (5 + 2 * slot));
	p += tnpu_cmd_fence(p, data_va + 8 * (4 + 2 * slot), 7);
	p += tnpu_cmd_fence(p, data_va, 1);
	for (i = 0; i < n; i++, p += 64) {
		memset(p, 0, 64);
		((uint64_t *)p)[0] = TNPU_OP_DMA_H2D | (uint64_t)64 << 32;
		((uint32_t *)p)[11] = width;
		((uint32_t *)p)[12] = 16;
		((uint32_t *)p)[13] = 16;
		p[56] = 0xff;
		p[58] = TNPU_DMA_F_FILL;
		p[59] = 0x5a;
	}
	p += tnpu_cmd_fence(p, data_va + 8, 2);
	return (uint32_t)(p - (uint8_t *)buf);
}

/* Submits the long job (not waited) */
static int submit_long_fill(struct tnpu_ctx *c, struct tnpu_bo *cmd, uint32_t slot, uint32_t size)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	struct tnpu_job_args j = { .queue = c->queue, .cmd = cmd, .cmd_size = size,
				   .cmd_offset = (uint64_t)slot * LONG_JOB_BYTES,
				   .refs = &ref, .nrefs = 1, .out_sync = c->sync };

	return tnpu_submit(c->fd, &j);
}

/* Runs the long job of @n FILLs alone: its status, wall time and device commands */
static int run_long_fill(struct tnpu_ctx *c, struct tnpu_bo *cmd, uint32_t n, uint32_t half_sram,
			 int64_t *ms, uint64_t *commands)
{
	struct drm_tnpu_counters c0 = { 0 }, c1 = { 0 };
	uint32_t size = long_fill_job(cmd->map, c->data.va, 0, n, half_sram);
	int64_t t0;
	int ret;

	memset(c->data.map, 0, 8 * (4 + 2 * LONG_JOBS));
	ret = tnpu_query(c->fd, DRM_TNPU_QUERY_COUNTERS, &c0, sizeof(c0));
	t0 = tnpu_now_ns();
	if (!ret)
		ret = submit_long_fill(c, cmd, 0, size);
	if (!ret)
		ret = tnpu_sync_status(c->fd, c->sync, 0, 60000);
	*ms = (tnpu_now_ns() - t0) / 1000000;
	if (!ret)
		ret = tnpu_query(c->fd, DRM_TNPU_QUERY_COUNTERS, &c1, sizeof(c1));
	*commands = c1.device[CNT_COMMANDS] - c0.device[CNT_COMMANDS];
	return ret;
}

/*
 * issue #28 M3: a system sleep while jobs run. With pm_test "devices" the kernel suspends and
 * resumes every device without sleeping (the guest's timers keep working, so this runs in every
 * VM run): the driver's suspend must let the jobs on the hardware finish (or stop them) before the
 * system sleeps, and its resume must not write them to the ring again. Before the fix the device
 * kept running them while "asleep" and resume re-programmed the ring under them: the job on the
 * device failed or ran again. Each job's first commands copy a word it then overwrites, so a run
 * from the start after that shows; and LONG_JOBS jobs move the device's command counter by
 * exactly LONG_JOBS times as much as one run alone.
 */
TEST_F(pm, jobs_running_when_the_system_suspends_run_exactly_once)
{
	const uint32_t max_n = (LONG_JOB_BYTES - 4 * 64) / 64;
	struct drm_tnpu_counters c1 = { 0 }, c2 = { 0 };
	struct drm_tnpu_caps caps = { 0 };
	uint64_t *data = self->c.data.map;
	char old_test[32], old_delay[32] = "";
	int64_t ms, more_ms, t0, sleep_ms;
	uint64_t commands, more;
	uint32_t n = 32, half, size;
	struct tnpu_bo cmd;
	bool done_before;
	int i, ret;

	if (requested_alone())
		SKIP(return, "runs in the default run of all suites, not in the S3 run");
	pm_test_selected(old_test, sizeof(old_test));
	if (!old_test[0] || access(PM_TEST, W_OK))
		SKIP(return, "no %s (CONFIG_PM_DEBUG)", PM_TEST);
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps)));
	ASSERT_EQ(0, tnpu_bo_new(self->c.fd, LONG_CMD_BYTES, 0, &cmd));
	half = caps.sram_bytes / 2;

	/*
	 * Alone: the reference command count. The job grows to about half a second of wall time,
	 * or until the device's watchdog or host-work budget stops it (it stays at the last size).
	 */
	ASSERT_EQ(0, run_long_fill(&self->c, &cmd, n, half, &ms, &commands));
	while (ms < 500 && 2 * n <= max_n &&
	       !run_long_fill(&self->c, &cmd, 2 * n, half, &more_ms, &more)) {
		n *= 2;
		ms = more_ms;
		commands = more;
	}
	TH_LOG("one job alone: %u FILLs, %lld ms, %llu commands", n, (long long)ms,
	       (unsigned long long)commands);
	ASSERT_EQ(n + 5, commands);

	ASSERT_EQ(0, tnpu_write_file(PM_TEST, "devices"));
	if (!tnpu_read_line(PM_TEST_DELAY, old_delay, sizeof(old_delay)))
		tnpu_write_file(PM_TEST_DELAY, "0");
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &c1, sizeof(c1)));
	memset(self->c.data.map, 0, 8 * (4 + 2 * LONG_JOBS));
	for (i = 0; i < LONG_JOBS; i++) {
		size = long_fill_job((uint8_t *)cmd.map + i * LONG_JOB_BYTES, self->c.data.va, i, n,
				     half);
		data[4 + 2 * i] = 3;
		ASSERT_EQ(0, submit_long_fill(&self->c, &cmd, i, size));
	}
	/* the first job is on the hardware: its first FENCE is in memory */
	for (t0 = tnpu_now_ns(); !data[0] && tnpu_now_ns() - t0 < 10000000000LL;)
		usleep(1000);
	done_before = data[1] == 2;
	t0 = tnpu_now_ns();
	ret = tnpu_write_file("/sys/power/state", "freeze");
	sleep_ms = (tnpu_now_ns() - t0) / 1000000;
	tnpu_write_file(PM_TEST, old_test);
	if (old_delay[0])
		tnpu_write_file(PM_TEST_DELAY, old_delay);
	ASSERT_EQ(0, ret) TH_LOG("freeze with pm_test devices");
	TH_LOG("suspend and resume: %lld ms", (long long)sleep_ms);
	EXPECT_FALSE(done_before) TH_LOG("the first job ended before the suspend began");
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	EXPECT_EQ(2, data[1]);
	for (i = 0; i < LONG_JOBS; i++) {
		EXPECT_EQ(3, data[5 + 2 * i]) TH_LOG("job %d ran again from its start", i);
	}
	ASSERT_EQ(0, tnpu_query(self->c.fd, DRM_TNPU_QUERY_COUNTERS, &c2, sizeof(c2)));
	EXPECT_EQ(c1.resets, c2.resets);
	EXPECT_EQ(c1.jobs_timedout, c2.jobs_timedout);
	EXPECT_EQ(c1.jobs_failed, c2.jobs_failed);
	EXPECT_EQ(c1.jobs_completed + LONG_JOBS, c2.jobs_completed);
	EXPECT_EQ(LONG_JOBS * commands, c2.device[CNT_COMMANDS] - c1.device[CNT_COMMANDS]);
	tnpu_bo_free(self->c.fd, &cmd);
}

TEST_HARNESS_MAIN
