// SPDX-License-Identifier: GPL-2.0-only
/*
 * Several processes submit thousands of jobs on several queues at once. Every job writes its own
 * slot, so a lost job leaves a slot empty; the device's global COMMANDS counter and the driver's
 * completion counter must grow by exactly the number of jobs, so a job run twice is caught too.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define CNT_COMMANDS	13

/*
 * The harness's default per-test timeout is 30 s.  These tests run in about 5 s in a TCG guest, but
 * on the debug kernel (KASAN, lockdep, kmemleak) with other work on the host they have taken longer:
 * a timeout there is load, not a lost job, which the tests detect by their counts.  So each gets
 * STRESS_TIMEOUT_S; the jobs' own waits (300 s, timeout_ms) still catch a hang.
 */
#define STRESS_TIMEOUT_S	600

FIXTURE(stress) {
	int unused;
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}
#define NPROC		4
#define NJOBS		1000

static int stress_child(unsigned int seed)
{
	uint32_t q[2], tl[2];
	uint64_t point[2] = { 0, 0 };
	struct tnpu_ctx c;
	uint64_t *data;
	unsigned int i;

	if (tnpu_ctx_init(&c))
		return 10;
	if (tnpu_queue_new(c.fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &q[0]) ||
	    tnpu_queue_new(c.fd, DRM_TNPU_QUEUE_PRIORITY_LOW, &q[1]))
		return 11;
	if (drmSyncobjCreate(c.fd, 0, &tl[0]) || drmSyncobjCreate(c.fd, 0, &tl[1]))
		return 12;
	data = c.data.map;
	srand(seed);
	for (i = 0; i < NJOBS; i++) {
		struct drm_tnpu_bo_ref ref = { c.data.handle, DRM_TNPU_BO_REF_READ };
		unsigned int k = rand() & 1;
		struct tnpu_job_args j = { .queue = q[k], .cmd = &c.cmd, .cmd_offset = 32 * i,
					   .refs = &ref, .nrefs = 1, .out_sync = tl[k],
					   .out_point = ++point[k] };
		int ret;

		j.cmd_size = tnpu_cmd_fence((char *)c.cmd.map + 32 * i, c.data.va + 8 * i,
					    ((uint64_t)seed << 32) | (i + 1));
		ret = tnpu_submit(c.fd, &j);
		if (ret) {
			fprintf(stderr, "# seed %u job %u: submit %d\n", seed, i, ret);
			return 13;
		}
	}
	for (i = 0; i < 2; i++) {
		int ret = point[i] ? tnpu_sync_status(c.fd, tl[i], point[i], 300000) : 0;

		if (ret) {
			fprintf(stderr, "# seed %u queue %u: status %d\n", seed, i, ret);
			return 14;
		}
	}
	for (i = 0; i < NJOBS; i++) {
		if (data[i] != (((uint64_t)seed << 32) | (i + 1))) {
			fprintf(stderr, "# seed %u: slot %u = 0x%llx\n", seed, i,
				(unsigned long long)data[i]);
			return 15;
		}
	}
	tnpu_ctx_fini(&c);
	return 0;
}

TEST_F_TIMEOUT(stress, processes_submit_thousands_of_jobs_without_loss_or_duplication, STRESS_TIMEOUT_S)
{
	struct drm_tnpu_counters before, after;
	unsigned int seed = (unsigned int)time(NULL) & 0xffff;
	pid_t pids[NPROC];
	int fd, i, status;

	fd = tnpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	TH_LOG("seed %u", seed);
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0)
			_exit(stress_child(seed + i));
	}
	for (i = 0; i < NPROC; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child %d (seed %u)", i, seed + i);
	}
	ASSERT_EQ(0, tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	EXPECT_EQ(before.jobs_submitted + NPROC * NJOBS, after.jobs_submitted);
	EXPECT_EQ(before.jobs_completed + NPROC * NJOBS, after.jobs_completed);
	EXPECT_EQ(before.jobs_failed, after.jobs_failed);
	if (after.resets == before.resets)
		EXPECT_EQ(before.device[CNT_COMMANDS] + NPROC * NJOBS, after.device[CNT_COMMANDS]);
	close(fd);
}

#define DB_PROCS	6
#define DB_QUEUES	4
#define DB_JOBS		500

/*
 * One file with DB_QUEUES queues (bound round-robin to the rings, so every ring gets queues of
 * several files): DB_JOBS one-command jobs in bursts of 1..8 on random queues, with pauses of up
 * to 2 ms between bursts so doorbells land on idle rings, on busy ones and while a completion is
 * being written.
 */
static int doorbell_child(unsigned int seed)
{
	uint64_t point[DB_QUEUES] = { 0 };
	uint32_t q[DB_QUEUES], tl[DB_QUEUES];
	struct tnpu_ctx c;
	uint64_t *data;
	unsigned int i, k;

	if (tnpu_ctx_init(&c))
		return 10;
	for (k = 0; k < DB_QUEUES; k++)
		if (tnpu_queue_new(c.fd, DRM_TNPU_QUEUE_PRIORITY_NORMAL, &q[k]) ||
		    drmSyncobjCreate(c.fd, 0, &tl[k]))
			return 11;
	data = c.data.map;
	srand(seed);
	for (i = 0; i < DB_JOBS; i++) {
		struct drm_tnpu_bo_ref ref = { c.data.handle, DRM_TNPU_BO_REF_WRITE };
		struct tnpu_job_args j = { .cmd = &c.cmd, .cmd_offset = 32 * i, .refs = &ref,
					   .nrefs = 1 };
		int ret;

		k = rand() % DB_QUEUES;
		j.queue = q[k];
		j.out_sync = tl[k];
		j.out_point = ++point[k];
		j.cmd_size = tnpu_cmd_fence((char *)c.cmd.map + 32 * i, c.data.va + 8 * i,
					    ((uint64_t)seed << 32) | (i + 1));
		ret = tnpu_submit(c.fd, &j);
		if (ret) {
			fprintf(stderr, "# seed %u job %u: submit %d\n", seed, i, ret);
			return 13;
		}
		if (!(rand() % 8))
			usleep(rand() % 2000);
	}
	for (k = 0; k < DB_QUEUES; k++) {
		int ret = point[k] ? tnpu_sync_status(c.fd, tl[k], point[k], 120000) : 0;

		if (ret) {
			fprintf(stderr, "# seed %u queue %u: status %d\n", seed, k, ret);
			return 14;
		}
	}
	for (i = 0; i < DB_JOBS; i++)
		if (data[i] != (((uint64_t)seed << 32) | (i + 1))) {
			fprintf(stderr, "# seed %u: slot %u = 0x%llx\n", seed, i,
				(unsigned long long)data[i]);
			return 15;
		}
	tnpu_ctx_fini(&c);
	return 0;
}

/*
 * The driver rings each doorbell once and never again (no re-ring on timeout): a doorbell the
 * device lost would leave its ring idle with entries, and the job would time out (timeout_ms is
 * 5 s here) and reset the device. So: every job completes with its value, no timeout, no reset.
 */
TEST_F_TIMEOUT(stress, many_rings_no_lost_doorbell, STRESS_TIMEOUT_S)
{
	struct drm_tnpu_counters before, after;
	unsigned int seed = (unsigned int)time(NULL) & 0xffff;
	pid_t pids[DB_PROCS];
	char old[32] = "";
	int fd, i, status;
	FILE *f;

	f = fopen(TNPU_PARAM, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(old, sizeof(old), f));
	fclose(f);
	ASSERT_EQ(0, tnpu_write_file(TNPU_PARAM, "5000"));
	fd = tnpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &before, sizeof(before)));
	TH_LOG("seed %u", seed);
	for (i = 0; i < DB_PROCS; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0)
			_exit(doorbell_child(seed + i));
	}
	for (i = 0; i < DB_PROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child %d (seed %u)", i, seed + i);
	}
	ASSERT_EQ(0, tnpu_query(fd, DRM_TNPU_QUERY_COUNTERS, &after, sizeof(after)));
	tnpu_write_file(TNPU_PARAM, old);
	EXPECT_EQ(before.jobs_completed + DB_PROCS * DB_JOBS, after.jobs_completed);
	EXPECT_EQ(before.jobs_failed, after.jobs_failed);
	EXPECT_EQ(before.jobs_timedout, after.jobs_timedout);
	EXPECT_EQ(before.resets, after.resets);
	EXPECT_EQ(before.device[CNT_COMMANDS] + DB_PROCS * DB_JOBS, after.device[CNT_COMMANDS]);
	close(fd);
}

TEST_HARNESS_MAIN
