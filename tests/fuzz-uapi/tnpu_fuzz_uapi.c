// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu_fuzz_uapi — a hostile user of /dev/accel/accelN (issue 17, stage fuzz-uapi of make check).
 *
 * Several worker processes, each with several threads sharing its files and object tables, issue
 * random ioctl sequences for a bounded time: the tnpu ioctls and the DRM core ones (every core ioctl
 * number, syncobjs with timeline points >= 2^32, PRIME), with valid, stale and boundary handles, VAs,
 * sizes, strides and counts; mmaps of live and closed BOs; valid command streams (FENCE, DMA +
 * semaphores, a GEMM program built by the golden model's builders), the same streams mutated, and
 * random bytes. Half the workers drop to uid/gid 65534 after opening the device. The parent SIGKILLs
 * workers at random moments (jobs in flight) and replaces them.
 *
 * The fuzzer judges only what user space can see: a worker that cannot be reaped within a grace
 * period after SIGKILL is stuck in the kernel, and a final sanity job (a fresh file, one FENCE job)
 * must complete with the right value. Kernel splats are judged from dmesg by the caller
 * (tests/vm/run-vm-tests). Output is TAP (1..2) with the seed, so a run can be repeated with -s; the
 * interleaving of threads is not reproducible, the choice of operations per thread is.
 *
 *   tnpu_fuzz_uapi [-s SEED] [-t SECONDS] [-p PROCS] [-j THREADS] [-d DEVICE] [--ops LIST]
 *                  [--skip-ops LIST] [--skip-known-bugs] [--list-ops]
 *
 * --skip-known-bugs leaves out the inputs that hit the open defects of issue 17 (see known_bug_help);
 * it exists to test the fuzzer itself before those fixes land, never for CI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>

#include "tnpu_accel.h"
#include "tnpu_sim.h"

#define MAX_PROCS	16
#define MAX_THREADS	8
#define N_BOS		48
#define N_QUEUES	12
#define N_SYNCS		24
#define N_MAPS		16
#define N_PERFMONS	8
#define TIMELINE_BASE	(1ull << 32)	/* timeline points start above 2^32 */
#define OP_FENCE	0x07
#define NO_FENCE	(~0ull)

/* ---- operations ------------------------------------------------------------------------------ */

enum op {
	OP_QUERY, OP_BO_CREATE, OP_BO_INFO, OP_BO_WAIT, OP_GEM_CLOSE, OP_MMAP, OP_QUEUE_CREATE,
	OP_QUEUE_DESTROY, OP_SUBMIT_VALID, OP_SUBMIT_MUTATED, OP_SUBMIT_RANDOM, OP_SUBMIT_FIELDS,
	OP_SYNCOBJ, OP_SYNCOBJ_WAIT, OP_CORE_IOCTL, OP_PRIME, OP_REOPEN, OP_PERFMON, OP_COUNT
};

static const struct {
	const char *name;
	unsigned weight;
	const char *what;
} ops[OP_COUNT] = {
	[OP_QUERY] = { "query", 4, "QUERY: every type, short/long/zero sizes, bad pointers and flags" },
	[OP_BO_CREATE] = { "bo_create", 6, "BO_CREATE: sizes 0/1/page/max/max+1/2^63, random flags" },
	[OP_BO_INFO] = { "bo_info", 3, "BO_INFO on valid, stale and boundary handles" },
	[OP_BO_WAIT] = { "bo_wait", 3, "BO_WAIT with short or past deadlines" },
	[OP_GEM_CLOSE] = { "gem_close", 4, "GEM_CLOSE, also of BOs that jobs or mappings still use" },
	[OP_MMAP] = { "mmap", 4, "mmap/munmap of BOs (valid, oversized, stale offsets), CPU writes" },
	[OP_QUEUE_CREATE] = { "queue_create", 3, "QUEUE_CREATE with every priority and bad flags" },
	[OP_QUEUE_DESTROY] = { "queue_destroy", 2, "QUEUE_DESTROY, also with jobs queued behind fences" },
	[OP_SUBMIT_VALID] = { "submit_valid", 10, "SUBMIT of valid FENCE, DMA+semaphore and GEMM streams" },
	[OP_SUBMIT_MUTATED] = { "submit_mutated", 8, "SUBMIT of valid streams with random mutations" },
	[OP_SUBMIT_RANDOM] = { "submit_random", 3, "SUBMIT of random bytes" },
	[OP_SUBMIT_FIELDS] = { "submit_fields", 5, "SUBMIT with boundary fields: sizes, offsets, strides, counts" },
	[OP_SYNCOBJ] = { "syncobj", 6, "syncobj create/destroy/signal/reset/query/transfer/export, points >= 2^32" },
	[OP_SYNCOBJ_WAIT] = { "syncobj_wait", 4, "SYNCOBJ_WAIT / TIMELINE_WAIT, small to huge handle counts" },
	[OP_CORE_IOCTL] = { "core_ioctl", 3, "every DRM core ioctl number with random arguments" },
	[OP_PRIME] = { "prime", 2, "PRIME export/import, GEM_FLINK/GEM_OPEN" },
	[OP_REOPEN] = { "reopen", 1, "replace the file (dup2 of a fresh open) under the other threads" },
	[OP_PERFMON] = { "perfmon", 3, "PERFMON_CREATE/DESTROY/GET_VALUES: live, stale and boundary ids, "
				       "flags, pointers; also destroyed under queued jobs" },
};

static const char known_bug_help[] =
	"inputs left out by --skip-known-bugs (issue 17, open until its driver fixes land):\n"
	"  core_ioctl: GET_MAGIC, GET_UNIQUE, SET_UNIQUE, AUTH_MAGIC, SET_MASTER, DROP_MASTER (NULL deref in\n"
	"              drm_getmagic, then master_mutex held forever) and the syncobj array ioctls\n"
	"  syncobj_wait/syncobj: handle counts > 4096 (page-allocator WARNING on a user-sized kmalloc)\n"
	"  submit_fields: array strides > 4096 (seconds in the kernel zero-checking padding, soft lockup)\n"
	"  bo_create: sizes > 64 MiB up to max_bo_size (4 GiB): all pages pinned in the ioctl, without\n"
	"              cond_resched (soft lockup) and beyond guest RAM (OOM killer); found by this fuzzer\n"
	"not filtered, because they fail nothing by themselves: timeline points >= 2^32 in in_syncs\n"
	"(truncated to 32 bits) and QUEUE_DESTROY/close behind a slow dependency (blocks up to the job\n"
	"timeout instead of 1 s; a worker gets 60 s to leave the kernel after SIGKILL).\n";

/* ---- options and shared statistics ---------------------------------------------------------- */

static struct {
	uint64_t seed;
	unsigned seconds, procs, threads;
	const char *dev;
	bool enabled[OP_COUNT];
	bool skip_known_bugs;
} opt = { .seconds = 60, .procs = 4, .threads = 3, .dev = "/dev/accel/accel0" };

struct stats {
	atomic_ullong calls[OP_COUNT], ok[OP_COUNT];
	atomic_ullong jobs, kills, spawned;
};
static struct stats *st;
static int64_t deadline_ns;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---- random numbers: splitmix64 per thread -------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static bool chance(struct rng *r, unsigned percent)
{
	return below(r, 100) < percent;
}

static uint64_t boundary64(struct rng *r)
{
	static const uint64_t v[] = { 0, 1, 7, 8, 4095, 4096, 4097, 65536, 0x7fffffff, 0x80000000,
				      0xffffffff, 1ull << 32, (1ull << 32) + 3, 1ull << 40, 1ull << 47,
				      1ull << 48, 1ull << 63, ~0ull, ~0ull - 7 };

	return v[below(r, sizeof(v) / sizeof(v[0]))];
}

/* ---- per-process state, shared by its threads ----------------------------------------------- */

struct bo {
	uint32_t handle;
	uint64_t size, va, offset;
};

struct map {
	void *p;
	size_t len;
	size_t safe;	/* bytes backed by the BO and writable (0: never touch) */
};

struct proc {
	int fd;
	struct drm_tnpu_caps caps;
	struct tnpu_config cfg;
	pthread_mutex_t lock;	/* the tables only; never held across an ioctl */
	struct bo bos[N_BOS];
	uint32_t queues[N_QUEUES];
	uint32_t perfmons[N_PERFMONS];
	uint32_t syncs[N_SYNCS];
	uint64_t points[N_SYNCS];	/* last timeline point handed out per syncobj */
	uint64_t good[N_SYNCS];		/* a point an accepted job signals (0: binary), or NO_FENCE */
	struct map maps[N_MAPS];
	bool nobody;
};
static struct proc P;

static int xioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN) && now_ns() < deadline_ns);
	return ret ? -errno : 0;
}

/* A handle as a hostile caller picks it: mostly a live one, sometimes stale, 0, huge or off by one. */
static uint32_t pick(struct rng *r, const uint32_t *table, unsigned n)
{
	uint32_t h;

	switch (below(r, 10)) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)rnd(r);
	case 2:
		return 0xffffffffu;
	case 3:
		pthread_mutex_lock(&P.lock);
		h = table[below(r, n)] + 1;
		pthread_mutex_unlock(&P.lock);
		return h;
	default:
		pthread_mutex_lock(&P.lock);
		h = table[below(r, n)];
		pthread_mutex_unlock(&P.lock);
		return h;
	}
}

static struct bo pick_bo(struct rng *r)
{
	struct bo b;

	pthread_mutex_lock(&P.lock);
	b = P.bos[below(r, N_BOS)];
	pthread_mutex_unlock(&P.lock);
	if (chance(r, 10))
		b.handle = (uint32_t)boundary64(r);
	return b;
}

static __thread uint32_t bo_handles[N_BOS];

/* This thread's snapshot of the BO table's handles. */
static const uint32_t *bo_handles_of_table(void)
{
	pthread_mutex_lock(&P.lock);
	for (unsigned i = 0; i < N_BOS; i++)
		bo_handles[i] = P.bos[i].handle;
	pthread_mutex_unlock(&P.lock);
	return bo_handles;
}

static uint32_t pick_bo_handle(struct rng *r)
{
	pthread_mutex_lock(&P.lock);
	for (unsigned i = 0; i < N_BOS; i++)
		bo_handles[i] = P.bos[i].handle;
	pthread_mutex_unlock(&P.lock);
	return pick(r, bo_handles, N_BOS);
}

/* Puts b into a random table slot; the BO it replaces is usually closed (bounded memory), sometimes
 * left open until the file goes. */
static void remember_bo(struct rng *r, struct bo b)
{
	struct bo old;
	unsigned i = (unsigned)below(r, N_BOS);

	pthread_mutex_lock(&P.lock);
	old = P.bos[i];
	P.bos[i] = b;
	pthread_mutex_unlock(&P.lock);
	if (old.handle && chance(r, 80)) {
		struct drm_gem_close c = { .handle = old.handle };

		ioctl(P.fd, DRM_IOCTL_GEM_CLOSE, &c);
	}
}

static struct bo create_bo(struct rng *r, uint64_t size, uint32_t flags, bool keep)
{
	struct drm_tnpu_bo_create c = { .size = size, .flags = flags };
	struct bo b = { 0 };

	if (!xioctl(P.fd, DRM_IOCTL_TNPU_BO_CREATE, &c)) {
		b = (struct bo){ c.handle, size, c.va, c.mmap_offset };
		if (keep)
			remember_bo(r, b);
	}
	return b;
}

/* ---- operations ------------------------------------------------------------------------------ */

static int do_query(struct rng *r)
{
	static __thread uint8_t buf[8192];
	struct drm_tnpu_query q = {
		.type = chance(r, 80) ? (uint32_t)below(r, 7) : (uint32_t)boundary64(r),
		.size = chance(r, 70) ? (uint32_t)below(r, sizeof(buf)) : (uint32_t)boundary64(r),
		.pointer = (uintptr_t)buf,
	};

	if (chance(r, 10))
		q.pointer = chance(r, 50) ? 0 : boundary64(r);
	if (chance(r, 5))
		q.flags = (uint32_t)rnd(r);
	if (chance(r, 5))
		q.pad = (uint32_t)rnd(r);
	if (q.size > sizeof(buf) && q.pointer == (uintptr_t)buf)
		q.size = sizeof(buf);
	return xioctl(P.fd, DRM_IOCTL_TNPU_QUERY, &q);
}

static int do_bo_create(struct rng *r)
{
	uint64_t size;

	switch (below(r, 6)) {
	case 0:
		size = boundary64(r);
		break;
	case 1:
		size = P.caps.max_bo_size + below(r, 2);
		break;
	default:
		size = 1 + below(r, chance(r, 80) ? 65536 : 4u << 20);
	}
	if (size > (64u << 20) && size <= P.caps.max_bo_size && (opt.skip_known_bugs || chance(r, 90)))
		size = 4096;	/* a max-size BO now and then, not every time: guest RAM is 1 GiB */
	struct drm_tnpu_bo_create c = {
		.size = size,
		.flags = chance(r, 85) ? (uint32_t)below(r, 2) : (uint32_t)rnd(r),
	};
	int ret = xioctl(P.fd, DRM_IOCTL_TNPU_BO_CREATE, &c);

	if (!ret)
		remember_bo(r, (struct bo){ c.handle, size, c.va, c.mmap_offset });
	return ret;
}

static int do_bo_info(struct rng *r)
{
	struct drm_tnpu_bo_info i = { .handle = pick_bo_handle(r) };

	if (chance(r, 5))
		i.pad = rnd(r);
	return xioctl(P.fd, DRM_IOCTL_TNPU_BO_INFO, &i);
}

static int do_bo_wait(struct rng *r)
{
	struct drm_tnpu_bo_wait w = { .handle = pick_bo_handle(r) };

	switch (below(r, 4)) {
	case 0:
		w.timeout_ns = 0;
		break;
	case 1:
		w.timeout_ns = chance(r, 50) ? -1 : 1;	/* in the past */
		break;
	default:
		w.timeout_ns = now_ns() + (int64_t)below(r, 50) * 1000000;
	}
	if (chance(r, 5))
		w.pad = (uint32_t)rnd(r);
	return xioctl(P.fd, DRM_IOCTL_TNPU_BO_WAIT, &w);
}

static int do_gem_close(struct rng *r)
{
	struct drm_gem_close c = { .handle = pick_bo_handle(r) };

	if (chance(r, 3))
		c.pad = (uint32_t)rnd(r);
	return xioctl(P.fd, DRM_IOCTL_GEM_CLOSE, &c);
}

static int do_mmap(struct rng *r)
{
	struct bo b = pick_bo(r);
	unsigned slot = (unsigned)below(r, N_MAPS);
	struct map old;
	size_t len = b.size ? b.size : 4096, safe;
	off_t off = (off_t)b.offset;
	int prot = chance(r, 90) ? PROT_READ | PROT_WRITE : PROT_READ;
	void *p;

	if (len > (64u << 20))
		len = 64u << 20;
	safe = prot & PROT_WRITE ? len : 0;
	if (chance(r, 15))
		len += 4096 * (1 + below(r, 4));	/* past the end */
	if (chance(r, 10)) {
		off = (off_t)(boundary64(r) & ~4095ull);
		safe = 0;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, P.fd, off);
	if (p == MAP_FAILED)
		return -errno;
	/* Keep the mapping for a while (maybe beyond GEM_CLOSE of its BO); unmap what it replaces. */
	pthread_mutex_lock(&P.lock);
	old = P.maps[slot];
	P.maps[slot] = (struct map){ p, len, safe };
	pthread_mutex_unlock(&P.lock);
	if (old.p)
		munmap(old.p, old.len);
	return 0;
}

/* CPU writes into a live mapping, racing with jobs that use the same BO. */
static void touch_map(struct rng *r)
{
	pthread_mutex_lock(&P.lock);
	struct map m = P.maps[below(r, N_MAPS)];

	if (m.p && m.safe >= 4096)
		memset((char *)m.p + (below(r, m.safe / 4096) * 4096), (int)rnd(r), 64);
	pthread_mutex_unlock(&P.lock);
}

static int do_queue_create(struct rng *r)
{
	struct drm_tnpu_queue_create c = {
		.priority = chance(r, 85) ? (uint32_t)below(r, 3) : (uint32_t)boundary64(r),
		.flags = chance(r, 95) ? 0 : (uint32_t)rnd(r),
	};
	int ret = xioctl(P.fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &c);

	if (!ret) {
		pthread_mutex_lock(&P.lock);
		P.queues[below(r, N_QUEUES)] = c.handle;
		pthread_mutex_unlock(&P.lock);
	}
	return ret;
}

static int do_perfmon(struct rng *r)
{
	switch (below(r, 3)) {
	case 0: {
		struct drm_tnpu_perfmon_create c = { .flags = chance(r, 95) ? 0 : (uint32_t)rnd(r) };
		int ret = xioctl(P.fd, DRM_IOCTL_TNPU_PERFMON_CREATE, &c);

		if (!ret) {
			pthread_mutex_lock(&P.lock);
			P.perfmons[below(r, N_PERFMONS)] = c.id;
			pthread_mutex_unlock(&P.lock);
		}
		return ret;
	}
	case 1: {
		struct drm_tnpu_perfmon_destroy d = { .id = pick(r, P.perfmons, N_PERFMONS) };

		if (chance(r, 5))
			d.pad = (uint32_t)rnd(r);
		return xioctl(P.fd, DRM_IOCTL_TNPU_PERFMON_DESTROY, &d);
	}
	default: {
		uint64_t vals[DRM_TNPU_MAX_COUNTERS];
		struct drm_tnpu_perfmon_get_values g = {
			.id = pick(r, P.perfmons, N_PERFMONS),
			.flags = chance(r, 90) ? (uint32_t)below(r, 2) : (uint32_t)rnd(r),
			.values_ptr = chance(r, 90) ? (uintptr_t)vals : boundary64(r),
		};

		return xioctl(P.fd, DRM_IOCTL_TNPU_PERFMON_GET_VALUES, &g);
	}
	}
}

static int do_queue_destroy(struct rng *r)
{
	struct drm_tnpu_queue_destroy d = { .handle = pick(r, P.queues, N_QUEUES) };

	if (chance(r, 5))
		d.pad = (uint32_t)rnd(r);
	return xioctl(P.fd, DRM_IOCTL_TNPU_QUEUE_DESTROY, &d);
}

/* ---- command streams ------------------------------------------------------------------------- */

/* A valid stream into cb, addressing the data BO d: FENCE, DMA + semaphores, or a GEMM program. */
static void valid_stream(struct rng *r, struct tcb *cb, const struct bo *d)
{
	uint64_t va = d->va, room = d->size;

	switch (below(r, 4)) {
	case 0:
	case 1:
		for (unsigned i = 0, n = 1 + (unsigned)below(r, 4); i < n; i++)
			tcb_fence(cb, va + 8 * below(r, room / 8), rnd(r));
		break;
	case 2:
		if (room >= 65536 && P.caps.sram_bytes >= 8192) {
			tcb_dma(cb, true, 0, va, 64, 512, 0, 0, 0, 16, 256, 16, 4, 2);
			tcb_sem(cb, true, 1, 0, 3, 1);
			tcb_sem(cb, false, 1, 2, 3, 1);
			tcb_dma(cb, false, 1, va + 32768, 64, 512, 0, 0, 0, 16, 256, 16, 4, 2);
		}
		tcb_fence(cb, va + 8 * below(r, room / 8), 7);
		break;
	default:
		if (room >= 32768) {
			struct tgemm g = { .m = 32, .n = 16, .k = 32, .f32 = chance(r, 50), .tm = 8, .tn = 4,
					   .kt = 16, .pipelined = chance(r, 50), .a = va, .b = va + 8192,
					   .c = va + 16384 };

			if (tgemm_build(&g, &P.cfg, cb) == 0)
				break;
		}
		tcb_fence(cb, va, 1);
	}
}

static void mutate(struct rng *r, struct tcb *cb)
{
	for (unsigned i = 0, n = 1 + (unsigned)below(r, 8); i < n && cb->len >= 8; i++) {
		size_t at = below(r, cb->len);

		switch (below(r, 6)) {
		case 0:
			cb->buf[at] ^= (uint8_t)(1u << below(r, 8));
			break;
		case 1:
			cb->buf[at] = (uint8_t)rnd(r);
			break;
		case 2: {
			uint32_t v = (uint32_t)boundary64(r);

			at &= ~(size_t)3;
			if (at + 4 <= cb->len)
				memcpy(cb->buf + at, &v, 4);
			break;
		}
		case 3: {
			uint64_t v = boundary64(r);

			at &= ~(size_t)7;
			if (at + 8 <= cb->len)
				memcpy(cb->buf + at, &v, 8);
			break;
		}
		case 4:	/* truncate */
			cb->len = (at & ~(size_t)7) ? (at & ~(size_t)7) : 8;
			break;
		default: {	/* duplicate an 8-byte word */
			size_t from = below(r, cb->len / 8) * 8, to = below(r, cb->len / 8) * 8;

			memmove(cb->buf + to, cb->buf + from, 8);
		}
		}
	}
}

static uint32_t pick_sync(struct rng *r, __u64 *point, bool for_signal)
{
	unsigned i = (unsigned)below(r, N_SYNCS);
	uint32_t h;

	pthread_mutex_lock(&P.lock);
	h = P.syncs[i];
	if (!point) {
		pthread_mutex_unlock(&P.lock);
		return h;
	}
	if (chance(r, 40)) {
		*point = 0;	/* binary use */
	} else if (for_signal) {
		*point = P.points[i] += 1 + below(r, 3);
	} else {
		/* an existing point, a future one, or a truncation probe: the low 32 bits of a point */
		uint64_t last = P.points[i];

		switch (below(r, 4)) {
		case 0:
			*point = last + 1 + below(r, 4);
			break;
		case 1:
			*point = (last & 0xffffffffu) ? last & 0xffffffffu : 3;
			break;
		default:
			*point = last ? last - below(r, 2) : TIMELINE_BASE;
		}
	}
	pthread_mutex_unlock(&P.lock);
	if (chance(r, 8))
		h = (uint32_t)boundary64(r);
	return h;
}

/* A live entry of a table (a valid submit mostly uses those). */
static uint32_t pick_live(struct rng *r, const uint32_t *table, unsigned n)
{
	uint32_t h = 0;

	pthread_mutex_lock(&P.lock);
	for (unsigned i = 0, at = (unsigned)below(r, n); i < n && !h; i++)
		h = table[(at + i) % n];
	pthread_mutex_unlock(&P.lock);
	return h;
}

/* An in-sync that has a fence: a point (or binary fence) an accepted job signals. */
static bool pick_good_sync(struct rng *r, struct drm_tnpu_sync *in)
{
	bool found = false;

	pthread_mutex_lock(&P.lock);
	for (unsigned i = 0, at = (unsigned)below(r, N_SYNCS); i < N_SYNCS && !found; i++) {
		unsigned k = (at + i) % N_SYNCS;

		if (P.syncs[k] && P.good[k] != NO_FENCE) {
			*in = (struct drm_tnpu_sync){ .handle = P.syncs[k], .point = P.good[k] };
			found = true;
		}
	}
	pthread_mutex_unlock(&P.lock);
	return found;
}

static void note_signal(uint32_t handle, uint64_t point)
{
	pthread_mutex_lock(&P.lock);
	for (unsigned i = 0; i < N_SYNCS; i++)
		if (P.syncs[i] == handle)
			P.good[i] = point;
	pthread_mutex_unlock(&P.lock);
}

static int submit(struct rng *r, const struct tcb *cb, bool wild_fields, bool clean)
{
	struct bo cmd = create_bo(r, 16384, 0, false);
	struct drm_tnpu_bo_ref refs[4];
	struct drm_tnpu_sync in[3];
	unsigned nrefs = (unsigned)below(r, 4), nin = (unsigned)below(r, 3);
	struct drm_tnpu_submit s = { 0 };
	void *map;
	size_t len = cb->len;
	int ret;

	if (!cmd.handle)
		return -ENOMEM;
	if (len > cmd.size)
		len = cmd.size & ~7ull;
	map = mmap(NULL, cmd.size, PROT_READ | PROT_WRITE, MAP_SHARED, P.fd, (off_t)cmd.offset);
	if (map == MAP_FAILED)
		return -errno;
	memcpy(map, cb->buf, len);
	munmap(map, cmd.size);
	for (unsigned i = 0; i < nrefs; i++)
		refs[i] = clean ? (struct drm_tnpu_bo_ref){ pick_live(r, bo_handles_of_table(), N_BOS),
							    1 + (uint32_t)below(r, 3) }
				: (struct drm_tnpu_bo_ref){ pick_bo_handle(r),
							    chance(r, 90) ? 1 + (uint32_t)below(r, 3) : (uint32_t)rnd(r) };
	for (unsigned i = 0; i < nin; i++) {
		in[i] = (struct drm_tnpu_sync){ 0 };
		if (clean) {
			if (!pick_good_sync(r, &in[i]))
				nin = i;
			continue;
		}
		in[i].handle = pick_sync(r, &in[i].point, false);
		if (chance(r, 3))
			in[i].flags = (uint32_t)rnd(r);
	}
	s.queue = clean ? pick_live(r, P.queues, N_QUEUES) : pick(r, P.queues, N_QUEUES);
	s.cmd_bo = cmd.handle;
	s.cmd_size = (uint32_t)(len ? len : 8);
	s.bos = (struct drm_tnpu_obj_array){ sizeof(refs[0]), nrefs, (uintptr_t)refs };
	s.in_syncs = (struct drm_tnpu_obj_array){ sizeof(in[0]), nin, (uintptr_t)in };
	if (chance(r, 70))
		s.out_sync = clean ? pick_live(r, P.syncs, N_SYNCS) : pick_sync(r, &s.out_sync_point, true);
	if (clean && s.out_sync && chance(r, 60)) {	/* a timeline point above 2^32 */
		pthread_mutex_lock(&P.lock);
		for (unsigned i = 0; i < N_SYNCS; i++)
			if (P.syncs[i] == s.out_sync)
				s.out_sync_point = P.points[i] += 1 + below(r, 3);
		pthread_mutex_unlock(&P.lock);
	}
	if (chance(r, clean ? 3 : 15)) {
		struct bo c = pick_bo(r);

		s.counters_bo = c.handle;
		s.counters_offset = c.size > 512 ? 8 * below(r, (c.size - 264) / 8) : 0;
	}
	if (chance(r, 20))
		s.perfmon_id = clean ? pick_live(r, P.perfmons, N_PERFMONS) : pick(r, P.perfmons, N_PERFMONS);
	if (wild_fields) {
		switch (below(r, 10)) {
		case 0:
			s.cmd_size = (uint32_t)boundary64(r);
			break;
		case 1:
			s.cmd_offset = boundary64(r);
			break;
		case 2:
		case 3: {
			/* a stride > 4096 is the issue-17 "64 GiB of padding" input */
			struct drm_tnpu_obj_array *a = chance(r, 50) ? &s.bos : &s.in_syncs;
			uint64_t stride = boundary64(r);

			if (opt.skip_known_bugs && stride > 4096)
				stride = 16;
			a->stride = (uint32_t)stride;
			a->count = chance(r, 50) ? a->count : (uint32_t)(opt.skip_known_bugs ?
				below(r, 4097) : boundary64(r));
			break;
		}
		case 4:
			s.bos.array = boundary64(r);
			break;
		case 5:
			s.counters_bo = pick_bo_handle(r);
			s.counters_offset = boundary64(r);
			break;
		case 6:
			s.flags = (uint32_t)rnd(r);
			break;
		case 7:
			s.out_sync_point = boundary64(r);
			break;
		case 8:
			s.pad = (uint32_t)rnd(r);
			s.perfmon_id = (uint32_t)boundary64(r);
			break;
		default:
			s.cmd_bo = pick_bo_handle(r);
		}
	}
	ret = xioctl(P.fd, DRM_IOCTL_TNPU_SUBMIT, &s);
	if (!ret) {
		atomic_fetch_add(&st->jobs, 1);
		if (s.out_sync)
			note_signal(s.out_sync, s.out_sync_point);
	}
	if (chance(r, 10)) {	/* keep it for later use as a data BO */
		remember_bo(r, cmd);
	} else {		/* drop our handle: a queued job keeps its own reference */
		struct drm_gem_close c = { .handle = cmd.handle };

		ioctl(P.fd, DRM_IOCTL_GEM_CLOSE, &c);
	}
	return ret;
}

static int do_submit(struct rng *r, enum op which)
{
	struct bo d = pick_bo(r);
	struct tcb cb;
	int ret;

	if (d.size < 4096 || chance(r, 20))
		d = create_bo(r, chance(r, 50) ? 65536 : 4096, 0, true);
	if (!d.size)
		d.size = 4096;
	if (chance(r, 5))
		d.va = boundary64(r) & ~7ull;	/* a VA outside the file's address space */
	tcb_init(&cb);
	if (which == OP_SUBMIT_RANDOM) {
		size_t n = 8 * (1 + below(r, 64));

		for (size_t i = 0; i < n; i += 8) {
			uint64_t v = rnd(r);

			if (chance(r, 50))
				v = (v & ~0xffull) | below(r, 16);	/* a plausible opcode byte */
			tcb_raw(&cb, &v, 8);
		}
	} else {
		valid_stream(r, &cb, &d);
		if (which == OP_SUBMIT_MUTATED)
			mutate(r, &cb);
	}
	/* valid and mutated streams mostly come with valid arguments, so they reach the device */
	ret = submit(r, &cb, which == OP_SUBMIT_FIELDS,
		     (which == OP_SUBMIT_VALID || which == OP_SUBMIT_MUTATED) && chance(r, 85));
	tcb_free(&cb);
	return ret;
}

/* ---- syncobjs ------------------------------------------------------------------------------- */

static uint32_t handles_buf[4096 + 8];
static __u64 points_buf[4096 + 8];

/* A handle count as the known-bug filter allows it: huge counts read far past the buffer (EFAULT)
 * but first make the core kmalloc a user-sized array. */
static uint32_t pick_count(struct rng *r)
{
	uint64_t n = chance(r, 80) ? below(r, 8) : boundary64(r);

	if (opt.skip_known_bugs && n > 4096)
		n = 4096;
	return (uint32_t)n;
}

static void fill_handles(struct rng *r, uint32_t count)
{
	for (uint32_t i = 0; i < count && i < 4096; i++) {
		handles_buf[i] = pick_sync(r, NULL, false);
		points_buf[i] = TIMELINE_BASE + below(r, 64);
	}
}

static int do_syncobj(struct rng *r)
{
	uint32_t count;

	switch (below(r, 8)) {
	case 0: {
		struct drm_syncobj_create c = { .flags = chance(r, 90) ? (uint32_t)below(r, 2) : (uint32_t)rnd(r) };
		int ret = xioctl(P.fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);

		if (!ret) {
			unsigned i = (unsigned)below(r, N_SYNCS);

			pthread_mutex_lock(&P.lock);
			P.syncs[i] = c.handle;
			P.points[i] = TIMELINE_BASE + below(r, 16);
			P.good[i] = c.flags == DRM_SYNCOBJ_CREATE_SIGNALED ? 0 : NO_FENCE;
			pthread_mutex_unlock(&P.lock);
		}
		return ret;
	}
	case 1: {
		struct drm_syncobj_destroy d = { .handle = pick_sync(r, NULL, false) };

		return xioctl(P.fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
	}
	case 2:
	case 3: {	/* SIGNAL, RESET, QUERY, TIMELINE_SIGNAL: arrays of handles (+ points) */
		static const unsigned long req[] = { DRM_IOCTL_SYNCOBJ_SIGNAL, DRM_IOCTL_SYNCOBJ_RESET,
						     DRM_IOCTL_SYNCOBJ_QUERY, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL };
		unsigned k = (unsigned)below(r, 4);
		struct drm_syncobj_timeline_array a = { 0 };

		count = pick_count(r);
		fill_handles(r, count);
		if (k == 3) {	/* signal points above 2^32 on the table's timelines */
			for (uint32_t i = 0; i < count && i < 4096; i++)
				points_buf[i] = 0;
			if (count && count <= 4096)
				handles_buf[0] = pick_sync(r, &points_buf[0], true);
		}
		a.handles = (uintptr_t)handles_buf;
		a.points = (uintptr_t)points_buf;
		a.count_handles = count;
		if (chance(r, 5))
			a.flags = (uint32_t)rnd(r);
		if (k < 2) {
			struct drm_syncobj_array b = { .handles = a.handles, .count_handles = count };

			return xioctl(P.fd, req[k], &b);
		}
		return xioctl(P.fd, req[k], &a);
	}
	case 4: {
		struct drm_syncobj_transfer t = { 0 };

		t.src_handle = pick_sync(r, &t.src_point, false);
		t.dst_handle = pick_sync(r, &t.dst_point, true);
		if (chance(r, 5))
			t.flags = (uint32_t)rnd(r);
		return xioctl(P.fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &t);
	}
	default: {	/* export as fd or sync file, import back */
		struct drm_syncobj_handle h = { .handle = pick_sync(r, NULL, false),
						.flags = (uint32_t)below(r, 3) };
		int ret = xioctl(P.fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h);

		if (!ret) {
			struct drm_syncobj_handle back = { .fd = h.fd, .flags = h.flags };

			if (h.flags & DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE)
				back.handle = pick_sync(r, NULL, false);
			ret = xioctl(P.fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &back);
			close(h.fd);
		}
		return ret;
	}
	}
}

static int do_syncobj_wait(struct rng *r)
{
	uint32_t count = pick_count(r);
	int64_t timeout = chance(r, 30) ? 0 : now_ns() + (int64_t)below(r, 30) * 1000000;

	fill_handles(r, count);
	if (chance(r, 50)) {
		struct drm_syncobj_wait w = { .handles = (uintptr_t)handles_buf, .count_handles = count,
					      .timeout_nsec = timeout, .flags = (uint32_t)below(r, 4) };

		return xioctl(P.fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
	}
	struct drm_syncobj_timeline_wait w = { .handles = (uintptr_t)handles_buf,
					       .points = (uintptr_t)points_buf, .count_handles = count,
					       .timeout_nsec = timeout, .flags = (uint32_t)below(r, 8) };

	return xioctl(P.fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
}

/* ---- DRM core ------------------------------------------------------------------------------- */

static bool core_known_bug(unsigned nr)
{
	switch (nr) {
	case 0x01:	/* GET_UNIQUE */
	case 0x02:	/* GET_MAGIC */
	case 0x10:	/* SET_UNIQUE */
	case 0x11:	/* AUTH_MAGIC */
	case 0x1e:	/* SET_MASTER */
	case 0x1f:	/* DROP_MASTER */
		return true;
	default:
		return nr >= 0xc3 && nr <= 0xcd;	/* syncobj arrays: user-sized kmalloc */
	}
}

static int do_core_ioctl(struct rng *r)
{
	static __thread uint64_t arg[2048];	/* 16 KiB: the largest _IOC_SIZE we generate */
	unsigned nr, dir = (unsigned)below(r, 4), size;

	do {
		/* the core's numbers: 0x00..0x3f (legacy + GEM + PRIME) and 0xa0..0xcf (mode, syncobj);
		 * now and then the driver's (0x40..) with a wrong size or direction */
		nr = chance(r, 55) ? (unsigned)below(r, 0x40) : chance(r, 80) ? 0xa0 + (unsigned)below(r, 0x30)
			: 0x40 + (unsigned)below(r, 0x10);
	} while (opt.skip_known_bugs && core_known_bug(nr));
	size = chance(r, 70) ? 8 * (unsigned)below(r, 16) : (unsigned)below(r, sizeof(arg));
	for (unsigned i = 0; i < 16; i++)
		arg[i] = chance(r, 60) ? below(r, 64) : boundary64(r);
	return xioctl(P.fd, _IOC(dir, DRM_IOCTL_BASE, nr, size), arg);
}

static int do_prime(struct rng *r)
{
	struct drm_prime_handle p = { .handle = pick_bo_handle(r),
				      .flags = chance(r, 90) ? DRM_CLOEXEC | (chance(r, 50) ? DRM_RDWR : 0)
							     : (uint32_t)rnd(r) };
	int ret;

	if (chance(r, 30)) {
		struct drm_gem_flink f = { .handle = p.handle };
		struct drm_gem_open o = { .name = (uint32_t)below(r, 8) };

		ret = xioctl(P.fd, DRM_IOCTL_GEM_FLINK, &f);
		return ret ? ret : xioctl(P.fd, DRM_IOCTL_GEM_OPEN, &o);
	}
	ret = xioctl(P.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
	if (!ret) {
		struct drm_prime_handle back = { .fd = p.fd };

		ret = xioctl(P.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &back);
		close(p.fd);
	}
	return ret;
}

/* Replaces the file under the other threads: dup2 is atomic, so they never see a non-DRM fd; the old
 * file is released (with its jobs, BOs, queues) once their in-flight ioctls return. */
static int do_reopen(struct rng *r)
{
	int fd = open(opt.dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;	/* uid 65534 cannot open: expected */
	int ret = dup2(fd, P.fd) < 0 ? -errno : 0;

	close(fd);
	if (!ret) {
		pthread_mutex_lock(&P.lock);
		memset(P.bos, 0, sizeof(P.bos));
		memset(P.queues, 0, sizeof(P.queues));
		memset(P.syncs, 0, sizeof(P.syncs));
		for (unsigned i = 0; i < N_SYNCS; i++)
			P.good[i] = NO_FENCE;
		pthread_mutex_unlock(&P.lock);
		do_queue_create(r);
	}
	return ret;
}

/* ---- workers ------------------------------------------------------------------------------- */

static enum op choose(struct rng *r)
{
	unsigned total = 0, x;

	for (int i = 0; i < OP_COUNT; i++)
		total += opt.enabled[i] ? ops[i].weight : 0;
	x = (unsigned)below(r, total);
	for (int i = 0; i < OP_COUNT; i++) {
		if (!opt.enabled[i])
			continue;
		if (x < ops[i].weight)
			return (enum op)i;
		x -= ops[i].weight;
	}
	return OP_QUERY;
}

static int run_op(struct rng *r, enum op o)
{
	switch (o) {
	case OP_QUERY: return do_query(r);
	case OP_BO_CREATE: return do_bo_create(r);
	case OP_BO_INFO: return do_bo_info(r);
	case OP_BO_WAIT: return do_bo_wait(r);
	case OP_GEM_CLOSE: return do_gem_close(r);
	case OP_MMAP: return do_mmap(r);
	case OP_QUEUE_CREATE: return do_queue_create(r);
	case OP_QUEUE_DESTROY: return do_queue_destroy(r);
	case OP_SUBMIT_VALID:
	case OP_SUBMIT_MUTATED:
	case OP_SUBMIT_RANDOM:
	case OP_SUBMIT_FIELDS: return do_submit(r, o);
	case OP_SYNCOBJ: return do_syncobj(r);
	case OP_SYNCOBJ_WAIT: return do_syncobj_wait(r);
	case OP_CORE_IOCTL: return do_core_ioctl(r);
	case OP_PRIME: return do_prime(r);
	case OP_REOPEN: return do_reopen(r);
	case OP_PERFMON: return do_perfmon(r);
	default: return -EINVAL;
	}
}

static void *thread_main(void *arg)
{
	struct rng r = { (uint64_t)(uintptr_t)arg };

	while (now_ns() < deadline_ns) {
		enum op o = choose(&r);
		int ret = run_op(&r, o);

		atomic_fetch_add(&st->calls[o], 1);
		if (!ret)
			atomic_fetch_add(&st->ok[o], 1);
		if (chance(&r, 5))
			touch_map(&r);
	}
	return NULL;
}

static void setup_caps(void)
{
	struct drm_tnpu_query q = { .type = DRM_TNPU_QUERY_CAPS, .size = sizeof(P.caps),
				    .pointer = (uintptr_t)&P.caps };

	if (xioctl(P.fd, DRM_IOCTL_TNPU_QUERY, &q))
		memset(&P.caps, 0, sizeof(P.caps));
	tnpu_config_default(&P.cfg);
	if (P.caps.rows) {
		P.cfg.rows = P.caps.rows;
		P.cfg.cols = P.caps.cols;
		P.cfg.pes = P.caps.pes;
		P.cfg.sram = P.caps.sram_bytes;
	}
	if (!P.caps.max_bo_size)
		P.caps.max_bo_size = 1ull << 30;
}

static void set_oom_score_adj(const char *value)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, value, strlen(value)) < 0)
			(void)0;	/* not root: the default is fine */
		close(fd);
	}
}

static void worker(unsigned index, uint64_t seed)
{
	pthread_t t[MAX_THREADS];
	struct rng r = { seed };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	set_oom_score_adj("1000");	/* when memory runs out, a worker goes, not the judge */
	memset(&P, 0, sizeof(P));
	pthread_mutex_init(&P.lock, NULL);
	for (unsigned i = 0; i < N_SYNCS; i++)
		P.good[i] = NO_FENCE;
	P.fd = open(opt.dev, O_RDWR | O_CLOEXEC);
	if (P.fd < 0) {
		fprintf(stderr, "# worker %u: open %s: %s\n", index, opt.dev, strerror(errno));
		_exit(2);
	}
	setup_caps();
	/* Odd workers are nobody: the device was opened as root, everything else is unprivileged. */
	if (index & 1) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		P.nobody = true;
	}
	for (int i = 0; i < 4; i++) {
		do_queue_create(&r);
		create_bo(&r, 65536, 0, true);
		struct drm_syncobj_create c = { .flags = (uint32_t)below(&r, 2) };

		if (!xioctl(P.fd, DRM_IOCTL_SYNCOBJ_CREATE, &c)) {
			P.syncs[i] = c.handle;
			P.points[i] = TIMELINE_BASE;
			P.good[i] = c.flags ? 0 : NO_FENCE;
		}
	}
	for (unsigned i = 1; i < opt.threads; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)rnd(&r));
	thread_main((void *)(uintptr_t)rnd(&r));
	for (unsigned i = 1; i < opt.threads; i++)
		pthread_join(t[i], NULL);
	/* Exit with jobs possibly in flight; half the time close everything first. */
	if (chance(&r, 50))
		close(P.fd);
	_exit(0);
}

/* ---- parent -------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t a, uint64_t b)
{
	struct rng r = { a ^ (b * 0x9e3779b97f4a7c15ull) };

	return rnd(&r);
}

static pid_t spawn(unsigned index, uint64_t gen)
{
	pid_t pid = fork();

	if (pid == 0)
		worker(index, mix(opt.seed, ((uint64_t)index << 32) | gen));
	if (pid > 0)
		atomic_fetch_add(&st->spawned, 1);
	return pid;
}

/* Waits up to grace_ms for pid; returns true if it was reaped. */
static bool reap(pid_t pid, int grace_ms)
{
	for (int i = 0; i < grace_ms / 10; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

static void dump_stuck(pid_t pid)
{
	char path[64], buf[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f))
		printf("#   %s", buf);
	fclose(f);
}

/* Final check: a fresh file, a queue, a FENCE job; the value must land within 60 s. */
static int sanity_job(char *why, size_t whylen)
{
	int fd = open(opt.dev, O_RDWR | O_CLOEXEC), ret;
	struct drm_tnpu_queue_create qc = { .priority = DRM_TNPU_QUEUE_PRIORITY_NORMAL };
	struct drm_tnpu_bo_create cmd = { .size = 4096 }, data = { .size = 4096 };
	uint64_t *c = MAP_FAILED, *d = MAP_FAILED;
	uint32_t sync = 0;

	if (fd < 0)
		return snprintf(why, whylen, "open: %s", strerror(errno)), -1;
	deadline_ns = now_ns() + 120ll * 1000000000;	/* xioctl retries EINTR until then */
	if ((ret = xioctl(fd, DRM_IOCTL_TNPU_QUEUE_CREATE, &qc)) ||
	    (ret = xioctl(fd, DRM_IOCTL_TNPU_BO_CREATE, &cmd)) ||
	    (ret = xioctl(fd, DRM_IOCTL_TNPU_BO_CREATE, &data)) ||
	    (ret = drmSyncobjCreate(fd, 0, &sync) ? -errno : 0)) {
		snprintf(why, whylen, "setup: %s", strerror(-ret));
		goto out;
	}
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)cmd.mmap_offset);
	d = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)data.mmap_offset);
	if (c == MAP_FAILED || d == MAP_FAILED) {
		ret = -errno;
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto out;
	}
	c[0] = OP_FENCE | (uint64_t)24 << 32;
	c[1] = data.va + 8;
	c[2] = 0x5eed5eed;
	struct drm_tnpu_bo_ref ref = { data.handle, DRM_TNPU_BO_REF_WRITE };
	struct drm_tnpu_submit s = { .queue = qc.handle, .cmd_bo = cmd.handle, .cmd_size = 24,
				     .bos = { sizeof(ref), 1, (uintptr_t)&ref }, .out_sync = sync };

	ret = xioctl(fd, DRM_IOCTL_TNPU_SUBMIT, &s);
	if (!ret && drmSyncobjWait(fd, &sync, 1, now_ns() + 60ll * 1000000000, 0, NULL))
		ret = -errno;
	if (ret)
		snprintf(why, whylen, "job: %s", strerror(-ret));
	else if (d[1] != 0x5eed5eed)
		snprintf(why, whylen, "job completed but wrote %#" PRIx64, d[1]), ret = -1;
out:
	if (c != MAP_FAILED)
		munmap(c, 4096);
	if (d != MAP_FAILED)
		munmap(d, 4096);
	close(fd);
	return ret;
}

static int parse_ops(const char *list, bool value)
{
	char *copy = strdup(list), *save = NULL;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < OP_COUNT && strcmp(tok, ops[i].name); i++)
			;
		if (i == OP_COUNT) {
			fprintf(stderr, "tnpu_fuzz_uapi: unknown op '%s' (--list-ops)\n", tok);
			free(copy);
			return -1;
		}
		opt.enabled[i] = value;
	}
	free(copy);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tnpu_fuzz_uapi [-s SEED] [-t SECONDS] [-p PROCS] [-j THREADS] [-d DEVICE]\n"
		   "                      [--ops LIST] [--skip-ops LIST] [--skip-known-bugs] [--list-ops]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, 0, 's' }, { "time", required_argument, 0, 't' },
		{ "procs", required_argument, 0, 'p' }, { "threads", required_argument, 0, 'j' },
		{ "device", required_argument, 0, 'd' }, { "ops", required_argument, 0, 'O' },
		{ "skip-ops", required_argument, 0, 'S' }, { "skip-known-bugs", no_argument, 0, 'K' },
		{ "list-ops", no_argument, 0, 'L' }, { "help", no_argument, 0, 'h' }, { 0 } };
	pid_t pids[MAX_PROCS];
	uint64_t gen[MAX_PROCS] = { 0 };
	bool have_seed = false, stuck = false;
	char why[256] = "";
	int c;

	for (int i = 0; i < OP_COUNT; i++)
		opt.enabled[i] = true;
	while ((c = getopt_long(argc, argv, "s:t:p:j:d:h", lo, NULL)) != -1) {
		switch (c) {
		case 's': opt.seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 't': opt.seconds = (unsigned)atoi(optarg); break;
		case 'p': opt.procs = (unsigned)atoi(optarg); break;
		case 'j': opt.threads = (unsigned)atoi(optarg); break;
		case 'd': opt.dev = optarg; break;
		case 'O':
			for (int i = 0; i < OP_COUNT; i++)
				opt.enabled[i] = false;
			if (parse_ops(optarg, true))
				return 2;
			break;
		case 'S':
			if (parse_ops(optarg, false))
				return 2;
			break;
		case 'K': opt.skip_known_bugs = true; break;
		case 'L':
			for (int i = 0; i < OP_COUNT; i++)
				printf("%-15s %s\n", ops[i].name, ops[i].what);
			printf("\n%s", known_bug_help);
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt.procs < 1 || opt.procs > MAX_PROCS || opt.threads < 1 || opt.threads > MAX_THREADS) {
		fprintf(stderr, "tnpu_fuzz_uapi: 1 <= procs <= %d, 1 <= threads <= %d\n", MAX_PROCS, MAX_THREADS);
		return 2;
	}
	if (!have_seed)
		opt.seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..2\n# seed %" PRIu64 " (repeat with -s %" PRIu64 "), %u s, %u processes x %u threads%s\n",
	       opt.seed, opt.seed, opt.seconds, opt.procs, opt.threads,
	       opt.skip_known_bugs ? ", known-bug inputs SKIPPED" : "");
	printf("# ops:");
	for (int i = 0; i < OP_COUNT; i++)
		if (opt.enabled[i])
			printf(" %s", ops[i].name);
	printf("\n");

	set_oom_score_adj("-1000");
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		return 1;
	deadline_ns = now_ns() + (int64_t)opt.seconds * 1000000000;
	for (unsigned i = 0; i < opt.procs; i++)
		pids[i] = spawn(i, gen[i]++);

	/* SIGKILL a random worker every 0.2..2 s and replace it; reap the ones that finish. */
	struct rng r = { mix(opt.seed, 0xfeed) };

	while (now_ns() < deadline_ns) {
		usleep((useconds_t)(200000 + below(&r, 1800000)));
		for (unsigned i = 0; i < opt.procs; i++) {
			if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == pids[i])
				pids[i] = now_ns() < deadline_ns - 1000000000ll ? spawn(i, gen[i]++) : -1;
		}
		if (now_ns() >= deadline_ns - 1000000000ll)
			break;
		unsigned victim = (unsigned)below(&r, opt.procs);

		if (pids[victim] > 0) {
			kill(pids[victim], SIGKILL);
			atomic_fetch_add(&st->kills, 1);
			/* a SIGKILLed process must leave the kernel: 60 s is generous even under TCG + KASAN */
			if (!reap(pids[victim], 60000)) {
				printf("# worker %d did not exit 60 s after SIGKILL; its kernel stack:\n",
				       (int)pids[victim]);
				dump_stuck(pids[victim]);
				stuck = true;
				pids[victim] = -1;
				break;
			}
			pids[victim] = spawn(victim, gen[victim]++);
		}
	}
	/* Time is up: the workers stop on their own; kill whoever is still in a long ioctl. */
	for (unsigned i = 0; i < opt.procs; i++) {
		if (pids[i] <= 0)
			continue;
		if (!reap(pids[i], 10000)) {
			kill(pids[i], SIGKILL);
			/* once one worker is stuck the others likely wait on the same lock: do not
			 * spend a minute on each */
			if (!reap(pids[i], stuck ? 5000 : 60000)) {
				printf("# worker %d did not exit 60 s after SIGKILL; its kernel stack:\n", (int)pids[i]);
				dump_stuck(pids[i]);
				stuck = true;
			}
		}
	}

	unsigned long long calls = 0;

	for (int i = 0; i < OP_COUNT; i++) {
		if (!opt.enabled[i])
			continue;
		calls += st->calls[i];
		printf("# %-15s %10llu calls, %10llu succeeded\n", ops[i].name,
		       (unsigned long long)st->calls[i], (unsigned long long)st->ok[i]);
	}
	printf("# %llu operations, %llu jobs accepted, %llu workers spawned, %llu SIGKILLed\n", calls,
	       (unsigned long long)st->jobs, (unsigned long long)st->spawned, (unsigned long long)st->kills);
	printf("%s 1 - every worker left the kernel (seed %" PRIu64 ")\n", stuck ? "not ok" : "ok", opt.seed);
	if (stuck) {
		printf("ok 2 # SKIP sanity job: a worker is stuck in the kernel\n");
		return 1;
	}
	if (sanity_job(why, sizeof(why))) {
		printf("not ok 2 - a fresh file's FENCE job after fuzzing: %s\n", why);
		return 1;
	}
	printf("ok 2 - a fresh file's FENCE job completes after fuzzing\n");
	return 0;
}
