// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu per-tenant limits (issue #28): one unprivileged user can neither take every hardware
 * context, nor the whole pin budget, nor queue jobs without bound, nor read other tenants' device
 * figures. Each test drops to uids 65534 / 65533 in forked children (the VM runs as root, and
 * CAP_SYS_ADMIN openers are exempt from the per-user limits), with the device node made
 * world-accessible for the test and restored afterwards.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tnpu_test.h"

#define UID_A		65534
#define UID_B		65533
#define PARAM_DIR	"/sys/module/tnpu/parameters/"
#define MAX_CHILDREN	2
#define NPARAMS		4

/* what a child reports to the test through its pipe */
struct child_result {
	int count;	/* successful operations before the first failure */
	int err;	/* errno of that failure, 0 if none */
	int extra[4];	/* test-specific results (0 or -errno) */
};

struct child {
	pid_t pid;
	int from_child;	/* read end: struct child_result */
	int to_child;	/* write end: closing it releases the child */
};

FIXTURE(limits) {
	mode_t dev_mode;
	struct child children[MAX_CHILDREN];
	int nchildren;
	char saved_name[NPARAMS][128];
	char saved_val[NPARAMS][32];
	int nsaved;
};

static int read_param(const char *name, int dflt)
{
	char path[128], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return dflt;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] ? atoi(buf) : dflt;
}

/* Sets a module parameter for this test (restored by the teardown); -errno if it does not exist. */
static int set_param(struct _test_data_limits *self, const char *name, const char *val)
{
	char path[128], old[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(old, sizeof(old), f))
		old[0] = 0;
	fclose(f);
	old[strcspn(old, "\n")] = 0;
	if (self->nsaved < NPARAMS) {
		snprintf(self->saved_name[self->nsaved], 128, "%s", path);
		snprintf(self->saved_val[self->nsaved], 32, "%s", old);
		self->nsaved++;
	}
	return tnpu_write_file(path, val);
}

FIXTURE_SETUP(limits)
{
	struct rlimit rl = { 8192, 8192 };
	struct stat st;

	memset(self, 0, sizeof(*self));
	ASSERT_EQ(0, stat(TNPU_DEV, &st));
	self->dev_mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(TNPU_DEV, 0666));
	/* the children inherit it: the process's own fd limit must not be what stops them */
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
}

FIXTURE_TEARDOWN(limits)
{
	int i;

	for (i = 0; i < self->nchildren; i++) {
		close(self->children[i].to_child);
		close(self->children[i].from_child);
		kill(self->children[i].pid, SIGKILL);
		waitpid(self->children[i].pid, NULL, 0);
	}
	for (i = self->nsaved - 1; i >= 0; i--)
		tnpu_write_file(self->saved_name[i], self->saved_val[i]);
	chmod(TNPU_DEV, self->dev_mode);
}

/*
 * Forks a child that drops to @uid, runs @body (which fills @r) and reports it, then waits until
 * the test releases it (so that what it holds stays held meanwhile). Returns the child's result
 * in @r; the child stays in self->children until the teardown.
 */
static int run_as(struct _test_data_limits *self, uid_t uid,
		  void (*body)(struct child_result *r, void *arg), void *arg,
		  struct child_result *r)
{
	int up[2], down[2];
	struct child *c;
	pid_t pid;
	char byte;

	if (self->nchildren >= MAX_CHILDREN || pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct child_result res = { 0 };

		close(up[0]);
		close(down[1]);
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(2);
		body(&res, arg);
		if (write(up[1], &res, sizeof(res)) != sizeof(res))
			_exit(3);
		/* hold everything until the test closes the pipe */
		while (read(down[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	c = &self->children[self->nchildren++];
	c->pid = pid;
	c->from_child = up[0];
	c->to_child = down[1];
	return read(up[0], r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/* Opens the device until it fails or *max opens succeeded; the fds stay open. */
static void open_until_refused(struct child_result *r, void *arg)
{
	int max = *(int *)arg, fd, last = -1;
	struct tnpu_ctx c;

	while (r->count < max) {
		fd = tnpu_open_dev();
		if (fd < 0) {
			r->err = errno;
			break;
		}
		last = fd;
		r->count++;
	}
	/* with one context given back, a fresh one runs a job */
	if (last >= 0)
		close(last);
	r->extra[0] = tnpu_ctx_init(&c);
	if (!r->extra[0])
		r->extra[0] = tnpu_run_fence(&c, 0, c.data.va, 0x28);
	if (!r->extra[0])
		r->extra[0] = *(uint64_t *)c.data.map == 0x28 ? 0 : -EIO;
	tnpu_ctx_fini(&c);
}

/*
 * M1: uid A opens the device until the driver refuses: it stops at max_contexts_per_user with
 * EMFILE, and uid B still gets as many contexts of its own and runs a job — 256 clients at once
 * with the default settings. Before the fix A took all 511 contexts and B's open failed (EBUSY).
 */
TEST_F(limits, contexts_one_user_cannot_lock_out_another)
{
	int limit = read_param("max_contexts_per_user", 128);
	int try_a = 5000, try_b = limit;
	struct child_result a, b;

	ASSERT_EQ(0, run_as(self, UID_A, open_until_refused, &try_a, &a));
	ASSERT_EQ(0, run_as(self, UID_B, open_until_refused, &try_b, &b));
	TH_LOG("uid A: %d opens, then errno %d; uid B: %d opens, job %d", a.count, a.err,
	       b.count, b.extra[0]);
	EXPECT_EQ(limit, a.count);
	EXPECT_EQ(EMFILE, a.err);
	EXPECT_EQ(limit, b.count);
	EXPECT_EQ(0, b.err);
	EXPECT_EQ(0, b.extra[0]);
	EXPECT_LE(256, a.count + b.count);
}

/* CAP_SYS_ADMIN openers are counted but not limited (driver.md, max_contexts_per_user). */
TEST_F(limits, contexts_admin_is_exempt_from_the_user_limit)
{
	int limit = read_param("max_contexts_per_user", 128), n, *fds;

	fds = calloc(limit + 1, sizeof(*fds));
	ASSERT_NE(NULL, fds);
	for (n = 0; n < limit + 1; n++) {
		fds[n] = tnpu_open_dev();
		if (fds[n] < 0)
			break;
	}
	EXPECT_EQ(limit + 1, n) TH_LOG("open %d failed: %s", n, strerror(errno));
	while (n-- > 0)
		close(fds[n]);
	free(fds);
}

#define PIN_BO		(4ull << 20)

static int bo_create(int fd, uint64_t size, uint32_t *handle)
{
	struct drm_tnpu_bo_create args = { .size = size };
	int ret = tnpu_ioctl(fd, DRM_IOCTL_TNPU_BO_CREATE, &args);

	if (!ret)
		*handle = args.handle;
	return ret;
}

/* Creates 4 MiB BOs until refused (at most 1024), frees one and creates one again. */
static void pin_until_refused(struct child_result *r, void *arg)
{
	int max = *(int *)arg, fd = tnpu_open_dev(), ret = 0;
	uint32_t handle = 0, first = 0;

	if (fd < 0) {
		r->err = errno;
		return;
	}
	while (r->count < max) {
		ret = bo_create(fd, PIN_BO, &handle);
		if (ret)
			break;
		if (!r->count++)
			first = handle;
	}
	r->err = -ret;
	if (r->count) {
		struct drm_gem_close gc = { .handle = first };

		r->extra[0] = ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc) ? -errno : 0;
		if (!r->extra[0])
			r->extra[0] = bo_create(fd, PIN_BO, &handle);
	}
	/* the fd and its BOs stay until the test releases the child */
}

/*
 * M7: with max_pinned_mb_per_user = 16, uid A gets four 4 MiB BOs, the fifth fails with EDQUOT,
 * and freeing one gives its budget back; uid B meanwhile pins its own 16 MiB. Before the fix A
 * pinned up to the global budget (half the RAM) and B's BO_CREATE failed with ENOMEM.
 */
TEST_F(limits, pinned_memory_budget_is_per_user)
{
	int max = 1024;
	struct child_result a, b;

	/* absent before the fix: the test then shows what one user can take */
	set_param(self, "max_pinned_mb_per_user", "16");
	ASSERT_EQ(0, run_as(self, UID_A, pin_until_refused, &max, &a));
	ASSERT_EQ(0, run_as(self, UID_B, pin_until_refused, &max, &b));
	TH_LOG("uid A: %d BOs, then errno %d, again after a free: %d; uid B: %d BOs, errno %d",
	       a.count, a.err, a.extra[0], b.count, b.err);
	EXPECT_EQ(4, a.count);
	EXPECT_EQ(EDQUOT, a.err);
	EXPECT_EQ(0, a.extra[0]);
	EXPECT_EQ(4, b.count);
	EXPECT_EQ(EDQUOT, b.err);
}

#define JOB_TRIES	64

/*
 * The first job takes the injected hang (its ring stops for timeout_ms); then NOP jobs are
 * submitted until one is refused; then, once everything drained, one more is accepted.
 */
static void queue_until_refused(struct child_result *r, void *arg)
{
	struct tnpu_ctx c;
	struct tnpu_job_args j = { .cmd_offset = 0 };
	int64_t deadline;
	int ret, i;

	ret = tnpu_ctx_init(&c);
	if (ret) {
		r->err = -ret;
		return;
	}
	j.queue = c.queue;
	j.cmd = &c.cmd;
	j.out_sync = c.sync;
	j.cmd_size = tnpu_cmd_nop(c.cmd.map);
	for (i = 0; i < JOB_TRIES + 1; i++) {
		ret = tnpu_submit(c.fd, &j);
		if (ret)
			break;
		r->count++;
	}
	r->err = -ret;
	/* the last accepted job completes after the hang's reset */
	r->extra[0] = tnpu_sync_status(c.fd, c.sync, 0, 60000);
	/* released shortly after their fences signalled: the limit frees up */
	deadline = tnpu_now_ns() + 10000000000ll;
	do {
		ret = tnpu_submit(c.fd, &j);
		if (ret == -EBUSY)
			usleep(10000);
	} while (ret == -EBUSY && tnpu_now_ns() < deadline);
	r->extra[1] = ret;
	if (!ret)
		r->extra[2] = tnpu_sync_status(c.fd, c.sync, 0, 60000);
	tnpu_ctx_fini(&c);
}

/*
 * M6: with max_jobs_per_file = 8 and the file's first job hung, SUBMIT accepts 8 jobs and
 * refuses the 9th with EBUSY; once they have completed, SUBMIT accepts again. Before the fix
 * every one of the JOB_TRIES + 1 jobs was accepted.
 */
TEST_F(limits, queued_jobs_are_bounded_per_file)
{
	struct child_result r;

	set_param(self, "max_jobs_per_file", "8");
	ASSERT_EQ(0, set_param(self, "timeout_ms", "1000"));
	ASSERT_EQ(0, tnpu_inject("inject_hang"));
	ASSERT_EQ(0, run_as(self, UID_A, queue_until_refused, NULL, &r));
	TH_LOG("%d jobs accepted, then errno %d; last job %d; after the drain: %d, job %d",
	       r.count, r.err, r.extra[0], r.extra[1], r.extra[2]);
	EXPECT_EQ(8, r.count);
	EXPECT_EQ(EBUSY, r.err);
	EXPECT_EQ(0, r.extra[0]);
	EXPECT_EQ(0, r.extra[1]);
	EXPECT_EQ(0, r.extra[2]);
}

/*
 * Queries the device-wide figures right after another user's job, then its own job's ROW_BUSY.
 */
static void query_figures(struct child_result *r, void *arg)
{
	struct drm_tnpu_counters *cnt = calloc(1, sizeof(*cnt));
	struct drm_tnpu_row_busy rb;
	struct drm_tnpu_caps caps;
	struct tnpu_ctx c;

	r->err = -tnpu_ctx_init(&c);
	if (r->err || !cnt)
		return;
	r->extra[0] = tnpu_query(c.fd, DRM_TNPU_QUERY_COUNTERS, cnt, sizeof(*cnt));
	r->extra[1] = tnpu_query(c.fd, DRM_TNPU_QUERY_ROW_BUSY, &rb, sizeof(rb));
	r->extra[2] = tnpu_query(c.fd, DRM_TNPU_QUERY_CAPS, &caps, sizeof(caps));
	r->count = tnpu_run_fence(&c, 0, c.data.va, 1);
	/* the job that completed last is the caller's own: its rows are its to see */
	r->extra[3] = tnpu_query(c.fd, DRM_TNPU_QUERY_ROW_BUSY, &rb, sizeof(rb));
	tnpu_ctx_fini(&c);
	free(cnt);
}

/*
 * Telemetry confinement: an unprivileged client gets EPERM for the device-wide QUERY_COUNTERS
 * and for ROW_BUSY of another tenant's job, but its own job's ROW_BUSY and CAPS; root sees all.
 * Before the fix every client read every figure.
 */
TEST_F(limits, telemetry_of_other_tenants_is_confined)
{
	struct drm_tnpu_counters *cnt = calloc(1, sizeof(*cnt));
	struct drm_tnpu_row_busy rb;
	struct child_result r;
	struct tnpu_ctx c;

	ASSERT_NE(NULL, cnt);
	ASSERT_EQ(0, tnpu_ctx_init(&c));
	ASSERT_EQ(0, tnpu_run_fence(&c, 0, c.data.va, 1));
	EXPECT_EQ(0, tnpu_query(c.fd, DRM_TNPU_QUERY_COUNTERS, cnt, sizeof(*cnt)));
	EXPECT_EQ(0, tnpu_query(c.fd, DRM_TNPU_QUERY_ROW_BUSY, &rb, sizeof(rb)));
	ASSERT_EQ(0, run_as(self, UID_A, query_figures, NULL, &r));
	TH_LOG("counters %d, row busy of root's job %d, caps %d, own job %d, its row busy %d",
	       r.extra[0], r.extra[1], r.extra[2], r.count, r.extra[3]);
	EXPECT_EQ(0, r.err);
	EXPECT_EQ(-EPERM, r.extra[0]);
	EXPECT_EQ(-EPERM, r.extra[1]);
	EXPECT_EQ(0, r.extra[2]);
	EXPECT_EQ(0, r.count);
	EXPECT_EQ(0, r.extra[3]);
	/* root still reads the device-wide figures */
	EXPECT_EQ(0, tnpu_query(c.fd, DRM_TNPU_QUERY_COUNTERS, cnt, sizeof(*cnt)));
	tnpu_ctx_fini(&c);
	free(cnt);
}

TEST_HARNESS_MAIN
