// SPDX-License-Identifier: GPL-2.0-only
/*
 * Observability of failed jobs (Documentation/driver.md, "Device coredump" and "Tracepoints"):
 * - a hang injected through debugfs (inject_hang) produces a devcoredump within timeout_ms plus a
 *   margin, and accel-coredump decodes it into the job the test submitted: SUBMIT's seqno, the ring,
 *   ring seqno and context debugfs showed while it hung, its queue, its command buffer;
 * - an MMU fault produces a dump with the faulting VA, and the decoded command at the failing
 *   offset is the FENCE the test wrote there;
 * - the tnpu tracepoints show submit, run and complete (status 0) with the job's seqno;
 * - one unprivileged uid's failing jobs leave at most one dump per coredump_interval_s, so they
 *   cannot keep the device's one devcoredump slot; root's still dump.
 * Needs the module loaded with fault_inject=1 (the VM's init does), devcoredump and event tracing in
 * the kernel (skipped otherwise).
 */
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define DEVCD_DIR	"/sys/class/devcoredump"
#define ERR_MMU_NOT_PRESENT	10
#define MARGIN_MS	10000	/* TCG guests: the timeout handler and the dump's work item lag */

FIXTURE(coredump) {
	struct tnpu_ctx c;
};

/* tnpu dumps under DEVCD_DIR: the first one's data path into @path; how many there are */
static int tnpu_dumps(char *path, size_t len)
{
	DIR *d = opendir(DEVCD_DIR);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char link[512], target[512];
		ssize_t r;

		if (strncmp(e->d_name, "devcd", 5))
			continue;
		snprintf(link, sizeof(link), DEVCD_DIR "/%s/failing_device/driver", e->d_name);
		r = readlink(link, target, sizeof(target) - 1);
		if (r < 0)
			continue;
		target[r] = 0;
		if (strcmp(strrchr(target, '/') ? strrchr(target, '/') + 1 : target, "tnpu"))
			continue;
		if (!n++ && path)
			snprintf(path, len, DEVCD_DIR "/%s/data", e->d_name);
	}
	closedir(d);
	return n;
}

/* Frees every pending tnpu dump (any write to data does): earlier suites' faults leave some. */
static void clear_dumps(void)
{
	char path[300];
	int i;

	for (i = 0; i < 16 && tnpu_dumps(path, sizeof(path)); i++) {
		tnpu_write_file(path, "1");
		usleep(100000);
	}
}

FIXTURE_SETUP(coredump)
{
	struct stat st;

	if (stat(DEVCD_DIR, &st))
		SKIP(return, "no devcoredump in this kernel (CONFIG_DEV_COREDUMP)");
	ASSERT_EQ(0, tnpu_ctx_init(&self->c)) TH_LOG("cannot open %s", TNPU_DEV);
	clear_dumps();
	ASSERT_EQ(0, tnpu_dumps(NULL, 0)) TH_LOG("a tnpu dump is still pending");
}

FIXTURE_TEARDOWN(coredump)
{
	tnpu_ctx_fini(&self->c);
	clear_dumps();
}

/* SUBMIT returning the job's seqno (drm_tnpu_submit.seqno) */
static int submit_seqno(struct tnpu_ctx *c, uint64_t cmd_off, uint32_t size, uint64_t *seqno)
{
	struct drm_tnpu_bo_ref ref = { c->data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_submit s = {
		.queue = c->queue, .cmd_bo = c->cmd.handle, .cmd_offset = cmd_off, .cmd_size = size,
		.bos = { sizeof(ref), 1, (uintptr_t)&ref }, .out_sync = c->sync,
	};
	int ret = tnpu_ioctl(c->fd, DRM_IOCTL_TNPU_SUBMIT, &s);

	*seqno = s.seqno;
	return ret;
}

struct hw_job {
	unsigned int ring, ctx, queue;
	unsigned long long hw_seqno, cmd_va;
};

/* The job @seqno as debugfs `rings` lists it while it is on the hardware; 0 or -ENOENT. */
static int find_hw_job(unsigned long long seqno, struct hw_job *hj)
{
	char path[300], line[256];
	int tries, ret = -ENOENT;

	for (tries = 0; tries < 50 && ret; tries++) {
		DIR *d = opendir("/sys/kernel/debug/accel");
		struct dirent *e;
		FILE *f = NULL;
		unsigned int ring = 0;

		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/rings", e->d_name);
				f = fopen(path, "r");
				if (f)
					break;
			}
		if (d)
			closedir(d);
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long id, hw, va;
			unsigned int ctx, q, len;

			if (sscanf(line, "ring %u:", &ring) == 1)
				continue;
			if (sscanf(line, " job %llu seqno %llu ctx %u queue %u cmd_va 0x%llx len %u",
				   &id, &hw, &ctx, &q, &va, &len) == 6 && id == seqno) {
				*hj = (struct hw_job){ ring, ctx, q, hw, va };
				ret = 0;
			}
		}
		if (f)
			fclose(f);
		if (ret)
			usleep(20000);
	}
	return ret;
}

/* Waits up to @ms for a tnpu dump; its data path in @path. */
static bool wait_dump(char *path, size_t len, int ms)
{
	int64_t end = tnpu_now_ns() + (int64_t)ms * 1000000;

	do {
		if (tnpu_dumps(path, len))
			return true;
		usleep(50000);
	} while (tnpu_now_ns() < end);
	return false;
}

/* accel-coredump --json @path into @out (compact JSON, one line); its exit status. */
static int decode(const char *path, char *out, size_t len)
{
	char cmd[700];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "PATH=/usr/local/bin:$PATH accel-coredump --json '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len && fgets(out + n, len - n, p))
		n += strlen(out + n);
	out[n] = 0;
	return WEXITSTATUS(pclose(p));
}

static bool has(const char *json, const char *fmt, ...)
{
	char want[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	return strstr(json, want);
}

#define TRACEFS "/sys/kernel/tracing"

static int trace_write(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	return tnpu_write_file(path, val);
}

/* Mounts tracefs if needed; whether the tnpu events are there. */
static bool trace_ready(void)
{
	if (access(TRACEFS "/events", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	return !access(TRACEFS "/events/tnpu/enable", F_OK);
}

/* Clears the trace buffer and enables the tnpu events. */
static int trace_start(void)
{
	int fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC | O_CLOEXEC);	/* clears it */

	if (fd < 0)
		return -errno;
	close(fd);
	if (trace_write("events/tnpu/enable", "1"))
		return -EIO;
	return trace_write("tracing_on", "1");
}

/* Disables the tnpu events and reads the buffer into @buf. */
static void trace_stop(char *buf, size_t len)
{
	FILE *f;
	size_t n = 0;

	trace_write("events/tnpu/enable", "0");
	f = fopen(TRACEFS "/trace", "r");
	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

/* The first line of @buf with @event, @want and (unless NULL) @also; NULL if none. */
static const char *trace_line(const char *buf, const char *event, const char *want, const char *also)
{
	const char *line = buf;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char copy[512];

		snprintf(copy, sizeof(copy), "%.*s", (int)len, line);
		if (strstr(copy, event) && strstr(copy, want) && (!also || strstr(copy, also)))
			return line;
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

/*
 * The "done when": inject_hang, the job times out, a dump appears, accel-coredump names
 * the job. The command buffer starts at offset 128 of its BO: NOP, FENCE data+8 = 0x5eed, NOP.
 */
TEST_F(coredump, injected_hang_leaves_a_decodable_dump)
{
	static char json[1 << 16], trace[1 << 18];
	char path[300], old[32] = "30000", want[128];
	bool tracing = trace_ready() && !trace_start();
	uint8_t *cmd = (uint8_t *)self->c.cmd.map + 128;
	uint32_t size = 0;
	unsigned long long seqno = 0;
	uint64_t sq;
	struct hw_job hj = { 0 };
	FILE *f = fopen(TNPU_PARAM, "r");
	int64_t failed_at;

	if (f) {
		if (fgets(old, sizeof(old), f))
			old[strcspn(old, "\n")] = 0;
		fclose(f);
	}
	ASSERT_EQ(0, tnpu_write_file(TNPU_PARAM, "2000"));
	if (tnpu_inject("inject_hang"))
		SKIP(goto out, "no debugfs inject_hang (load tnpu with fault_inject=1)");
	size += tnpu_cmd_nop(cmd + size);
	size += tnpu_cmd_fence(cmd + size, self->c.data.va + 8, 0x5eed);
	size += tnpu_cmd_nop(cmd + size);
	ASSERT_EQ(0, submit_seqno(&self->c, 128, size, &sq));
	seqno = sq;
	ASSERT_EQ(0, find_hw_job(seqno, &hj)) TH_LOG("job %llu not on a ring in debugfs", seqno);
	EXPECT_EQ(self->c.cmd.va + 128, hj.cmd_va);
	EXPECT_EQ(-ETIMEDOUT, tnpu_sync_status(self->c.fd, self->c.sync, 0, 2000 + MARGIN_MS));
	failed_at = tnpu_now_ns();
	if (tracing) {
		/* the timeout and the reset it caused, with the job's seqno and ring */
		trace_stop(trace, sizeof(trace));
		snprintf(want, sizeof(want), "ring=%u ctx=%u queue=%u seqno=%llu hw_seqno=%llu",
			 hj.ring, hj.ctx, self->c.queue, seqno, hj.hw_seqno);
		EXPECT_NE(NULL, trace_line(trace, "tnpu_job_timeout: ", want, NULL))
			TH_LOG("%.2000s", trace);
		EXPECT_NE(NULL, trace_line(trace, "tnpu_job_complete: ", want, " status=-110"));
		snprintf(want, sizeof(want), "ring=%u reason=timeout", hj.ring);
		EXPECT_NE(NULL, trace_line(trace, "tnpu_reset: ", want, NULL));
	}
	ASSERT_TRUE(wait_dump(path, sizeof(path), MARGIN_MS))
		TH_LOG("no devcoredump %d ms after the timeout", MARGIN_MS);
	TH_LOG("dump %s, %lld ms after the job failed", path,
	       (long long)(tnpu_now_ns() - failed_at) / 1000000);

	ASSERT_EQ(0, decode(path, json, sizeof(json))) TH_LOG("accel-coredump failed: %s", json);
	EXPECT_TRUE(has(json, "\"reason\":\"timeout\""));
	EXPECT_TRUE(has(json, "\"seqno\":%llu,\"hw_seqno\":%llu,\"ring\":%u,\"ctx\":%u,\"queue\":%u",
			seqno, hj.hw_seqno, hj.ring, hj.ctx, self->c.queue)) TH_LOG("%.600s", json);
	EXPECT_TRUE(has(json, "\"cmd_va\":%llu,\"cmd_len\":%u", hj.cmd_va, size));
	EXPECT_TRUE(has(json, "\"cmd_offset\":null"));
	/* a hang reports no failing command: the window is the buffer from its start */
	EXPECT_TRUE(has(json, "{\"offset\":0,\"va\":%llu,\"opcode\":0,\"name\":\"NOP\"", hj.cmd_va));
	EXPECT_TRUE(has(json, "{\"offset\":8,\"va\":%llu,\"opcode\":7,\"name\":\"FENCE\",\"size\":24",
			hj.cmd_va + 8));
	EXPECT_TRUE(has(json, "va=0x%llx value=%u", (unsigned long long)self->c.data.va + 8, 0x5eed));
	/* the ring entry of the hung job, at HEAD: the device never fetched it */
	/*
	 * flags: IRQ, COUNTERS where the device writes per-job counter records (CAP_FEATURES bit 18),
	 * PREEMPTIBLE (a NORMAL job) where it has preemption points (bit 24)
	 */
	EXPECT_TRUE(has(json, "\"ctx\":%u,\"flags\":1,\"cmd_va\":%llu,\"cmd_len\":%u,\"seqno\":%llu",
			hj.ctx, hj.cmd_va, size, hj.hw_seqno) ||
		    has(json, "\"ctx\":%u,\"flags\":3,\"cmd_va\":%llu,\"cmd_len\":%u,\"seqno\":%llu,\"counters_addr\":",
			hj.ctx, hj.cmd_va, size, hj.hw_seqno) ||
		    has(json, "\"ctx\":%u,\"flags\":7,\"cmd_va\":%llu,\"cmd_len\":%u,\"seqno\":%llu,\"counters_addr\":",
			hj.ctx, hj.cmd_va, size, hj.hw_seqno)) TH_LOG("%.600s", json);
	EXPECT_TRUE(has(json, "{\"name\":\"Q%u_HEAD\"", hj.ring));
	/* one dump at a time: it stays until read and freed */
	EXPECT_EQ(1, tnpu_dumps(NULL, 0));
out:
	tnpu_write_file(TNPU_PARAM, old);
}

/* A FENCE to the guard page after two NOPs: MMU_NOT_PRESENT at offset 16 with that VA. */
TEST_F(coredump, mmu_fault_dump_names_the_va_and_the_command)
{
	static char json[1 << 16];
	uint64_t bad = self->c.data.va + self->c.data.size;	/* the guard page */
	uint8_t *cmd = (uint8_t *)self->c.cmd.map + 256;
	char path[300];
	uint32_t size = 0;
	uint64_t seqno;

	size += tnpu_cmd_nop(cmd + size);
	size += tnpu_cmd_nop(cmd + size);
	size += tnpu_cmd_fence(cmd + size, bad, 1);
	size += tnpu_cmd_nop(cmd + size);
	ASSERT_EQ(0, submit_seqno(&self->c, 256, size, &seqno));
	EXPECT_EQ(-EFAULT, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	ASSERT_TRUE(wait_dump(path, sizeof(path), MARGIN_MS));
	ASSERT_EQ(0, decode(path, json, sizeof(json))) TH_LOG("accel-coredump failed: %s", json);
	EXPECT_TRUE(has(json, "\"reason\":\"mmu_fault\""));
	EXPECT_TRUE(has(json, "\"seqno\":%llu,", (unsigned long long)seqno));
	EXPECT_TRUE(has(json, "\"code\":%d,\"name\":\"MMU_NOT_PRESENT\"", ERR_MMU_NOT_PRESENT));
	EXPECT_TRUE(has(json, "\"cmd_offset\":16,\"fault_va\":%llu", (unsigned long long)bad))
		TH_LOG("%.600s", json);
	/* the window starts on the first command; the failing one is the FENCE at 16 */
	EXPECT_TRUE(has(json, "{\"offset\":16,\"va\":%llu,\"opcode\":7,\"name\":\"FENCE\",\"size\":24,"
			"\"failing\":true", (unsigned long long)self->c.cmd.va + 256 + 16));
	EXPECT_TRUE(has(json, "{\"offset\":0,\"va\":%llu,\"opcode\":0,\"name\":\"NOP\",\"size\":8,"
			"\"failing\":false", (unsigned long long)self->c.cmd.va + 256));
	EXPECT_TRUE(has(json, "{\"name\":\"ERR_CODE\",\"offset\":96,\"value\":%d}",
			ERR_MMU_NOT_PRESENT));
}

/* submit, run and complete of one job, with its seqno, in the tracefs buffer */
TEST_F(coredump, tracepoints_show_submit_run_complete)
{
	static char buf[1 << 18];
	const char *submit, *run, *done;
	char want[128];
	unsigned long long seqno;
	uint64_t sq;
	uint32_t size;

	if (!trace_ready())
		SKIP(return, "no tnpu events in tracefs (CONFIG_EVENT_TRACING)");
	ASSERT_EQ(0, trace_start());
	size = tnpu_cmd_fence(self->c.cmd.map, self->c.data.va, 42);
	ASSERT_EQ(0, submit_seqno(&self->c, 0, size, &sq));
	seqno = sq;
	EXPECT_EQ(0, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	trace_stop(buf, sizeof(buf));
	snprintf(want, sizeof(want), "queue=%u seqno=%llu hw_seqno=", self->c.queue, seqno);
	submit = trace_line(buf, "tnpu_job_submit: ", want, NULL);
	run = trace_line(buf, "tnpu_job_run: ", want, NULL);
	done = trace_line(buf, "tnpu_job_complete: ", want, " status=0");
	EXPECT_NE(NULL, submit) TH_LOG("no submit of seqno %llu in:\n%.2000s", seqno, buf);
	EXPECT_NE(NULL, run);
	EXPECT_NE(NULL, done);
	/* not on a ring yet at submit; in order: submit, run, complete */
	snprintf(want, sizeof(want), "seqno=%llu hw_seqno=0", seqno);
	EXPECT_NE(NULL, trace_line(buf, "tnpu_job_submit: ", want, NULL));
	EXPECT_TRUE(submit && run && done && submit < run && run < done);
}

/* An unknown opcode after a NOP: the device reports CMD_OPCODE at offset 8, a job error. */
TEST_F(coredump, job_error_dump_names_the_error_and_the_command)
{
	static char json[1 << 16];
	uint64_t *cmd = self->c.cmd.map;
	char path[300];
	uint64_t seqno;

	tnpu_cmd_nop(cmd);
	cmd[1] = 0xee | (uint64_t)16 << 32;	/* opcode 0xee does not exist */
	cmd[2] = 0;
	ASSERT_EQ(0, submit_seqno(&self->c, 0, 24, &seqno));
	EXPECT_EQ(-EIO, tnpu_sync_status(self->c.fd, self->c.sync, 0, 60000));
	ASSERT_TRUE(wait_dump(path, sizeof(path), MARGIN_MS));
	ASSERT_EQ(0, decode(path, json, sizeof(json))) TH_LOG("accel-coredump failed: %s", json);
	EXPECT_TRUE(has(json, "\"reason\":\"job_error\""));
	EXPECT_TRUE(has(json, "\"seqno\":%llu,", (unsigned long long)seqno));
	EXPECT_TRUE(has(json, "\"code\":1,\"name\":\"CMD_OPCODE\""));
	EXPECT_TRUE(has(json, "\"cmd_offset\":8,\"fault_va\":null")) TH_LOG("%.600s", json);
	EXPECT_TRUE(has(json, "{\"offset\":8,\"va\":%llu,\"opcode\":238,\"name\":\"UNKNOWN\",\"size\":16,"
			"\"failing\":true", (unsigned long long)self->c.cmd.va + 8));
}

/* A job whose FENCE writes the guard page after @c's data BO (an MMU fault); 0 once it failed so. */
static int fault_job(struct tnpu_ctx *c)
{
	uint8_t *cmd = (uint8_t *)c->cmd.map + 256;
	uint32_t size = 0;
	uint64_t seqno;

	size += tnpu_cmd_nop(cmd + size);
	size += tnpu_cmd_fence(cmd + size, c->data.va + c->data.size, 1);
	if (submit_seqno(c, 256, size, &seqno))
		return -1;
	return tnpu_sync_status(c->fd, c->sync, 0, 60000) == -EFAULT ? 0 : -1;
}

/*
 * driver.md "Device coredump", rate limit: the kernel keeps one dump per device until it is read or
 * expires, so an unprivileged uid may leave one dump per coredump_interval_s (default 1800 s). A
 * child as a uid no other test uses faults twice, each time on a new open: the first failure dumps, the
 * second (after the first dump was freed) does not; then root's failure dumps. On the old driver the
 * second dumped.
 */
TEST_F(coredump, one_uid_leaves_one_dump_per_interval)
{
	int go[2], done[2], status;
	uid_t uid = 60000 + (uid_t)(getpid() % 5000);
	char path[300], saved[32] = "", c;
	struct stat st;
	pid_t pid;

	ASSERT_EQ(0, stat(TNPU_DEV, &st));
	if (tnpu_read_line("/sys/module/tnpu/parameters/coredump_interval_s", saved, sizeof(saved)))
		SKIP(return, "no coredump_interval_s parameter");
	ASSERT_EQ(0, tnpu_write_file("/sys/module/tnpu/parameters/coredump_interval_s", "1800"));
	ASSERT_EQ(0, chmod(TNPU_DEV, 0666));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct tnpu_ctx u;

		close(go[1]);
		close(done[0]);
		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(10);
		/* a file whose job faulted runs no more jobs: each fault on a new open, which must not
		 * reset the uid's interval either */
		for (int i = 0; i < 2; i++) {
			if (tnpu_ctx_init(&u))
				_exit(11);
			c = fault_job(&u) ? 'F' : 'x';
			tnpu_ctx_fini(&u);
			if (write(done[1], &c, 1) != 1 || (i == 0 && read(go[0], &c, 1) != 1))
				_exit(12);
		}
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ('x', c) TH_LOG("the first faulting job did not fail with an MMU fault");
	EXPECT_TRUE(wait_dump(path, sizeof(path), MARGIN_MS)) TH_LOG("uid %u's first failure left no dump", uid);
	clear_dumps();
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ('x', c);
	EXPECT_FALSE(wait_dump(path, sizeof(path), 3000)) TH_LOG("uid %u's second failure dumped again", uid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status 0x%x", status);
	chmod(TNPU_DEV, st.st_mode & 07777);
	/* root (CAP_SYS_ADMIN at open) is not limited */
	ASSERT_EQ(0, fault_job(&self->c));
	EXPECT_TRUE(wait_dump(path, sizeof(path), MARGIN_MS)) TH_LOG("root's failure left no dump");
	tnpu_write_file("/sys/module/tnpu/parameters/coredump_interval_s", saved);
}

TEST_HARNESS_MAIN
