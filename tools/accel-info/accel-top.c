// SPDX-License-Identifier: MIT
/*
 * accel-top — live activity of a tnpu device from DRM_TNPU_QUERY_COUNTERS: jobs/s, errors and the
 * device's busy/utilisation ratios computed from counter deltas (format.c: ai_compute_rates).
 * One line per sample like vmstat, so it is readable in a terminal and parseable in a pipe;
 * --json prints one JSON document per line. Documentation/tools.md lists the columns and fields.
 *
 * Each sample is one device-wide line; when the driver's answer includes per-ring statistics
 * (struct drm_tnpu_ring_stats) one row per hardware ring follows it. Older drivers return a shorter
 * answer and get the device line only. Then one row per client (open file of the device, from
 * /proc/<pid>/fdinfo: clients.c), accel-top itself left out.
 * Exit status: 0 done, 1 system/ioctl error, 2 usage error, 3 no tnpu device (or none with an accel node).
 */
#include "accel_tools.h"
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef ACCEL_TOOLS_VERSION
#define ACCEL_TOOLS_VERSION "unknown"
#endif

#define HEADER_EVERY 20

struct top_opts {
	const char *device;
	long interval_ms;
	long count;		/* samples to print, 0 = until interrupted */
	bool json;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: accel-top [--interval MS] [--count N] [--json] [--device PATH|BDF]\n"
		"Live jobs/s, utilisation and errors of a tnpu device, one line per interval,\n"
		"followed by one row per hardware queue (q0, q1, ...) and one per client (c<id>:\n"
		"pid, command, busy, device cycles/s, memory; from /proc/*/fdinfo, needs root\n"
		"to see other users' processes).\n\n"
		"  -i, --interval MS    sampling interval in milliseconds (default 1000, minimum 10)\n"
		"  -n, --count N        print N samples and exit (default: until interrupted)\n"
		"  -j, --json           one JSON object per line (Documentation/tools.md)\n"
		"  -d, --device SPEC    /dev/accel/accelN, accelN or a PCI address (default: first tnpu)\n"
		"  -h, --help           this help\n"
		"  -V, --version        print the version\n\n"
		"Exit status: 0 ok, 1 system error, 2 usage error, 3 no tnpu device found.\n");
}

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);

	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleeps until start + k * interval on CLOCK_MONOTONIC, so intervals do not drift. */
static void sleep_until(const struct timespec *start, long k, long interval_ms)
{
	long long ns = (long long)start->tv_nsec + (long long)k * interval_ms * 1000000LL;
	struct timespec t = {
		.tv_sec = start->tv_sec + (time_t)(ns / 1000000000LL),
		.tv_nsec = (long)(ns % 1000000000LL),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

/* Resolves the device to open; returns 0, or the exit status with the message printed. */
static int resolve(const char *spec, char *path, size_t len, char *bdf, size_t bdf_len)
{
	struct ai_pci_dev *devs;
	struct ai_node node;
	size_t n, first = 0;
	char err[256];
	int ret = ai_pci_enumerate(&devs, &n, err, sizeof(err));

	if (ret < 0) {
		fprintf(stderr, "accel-top: cannot enumerate PCI devices: %s\n", err);
		return 1;
	}
	if (!n) {
		fprintf(stderr, "accel-top: no tnpu device found (is the VM running with -device tnpu? "
				"is tnpu.ko loaded?)\n");
		free(devs);
		return 3;
	}
	if (spec) {
		ret = ai_select_device(ACCEL_TOOLS_SYSFS, spec, devs, n, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "accel-top: %s\n", err);
			free(devs);
			return 3;
		}
		first = (size_t)ret;
		n = first + 1;
	}
	for (size_t i = first; i < n; i++) {
		ai_node_lookup(ACCEL_TOOLS_SYSFS, ACCEL_TOOLS_DEV, devs[i].bdf, &node);
		if (!node.found)
			continue;
		snprintf(path, len, "%s", node.dev_path);
		snprintf(bdf, bdf_len, "%s", devs[i].bdf);
		free(devs);
		return 0;
	}
	if (n - first == 1)
		fprintf(stderr, "accel-top: %s has no accel node (driver: %s)\n", devs[first].bdf,
			node.driver[0] ? node.driver : "not bound");
	else
		fprintf(stderr, "accel-top: no tnpu device has an accel node (is tnpu.ko loaded?)\n");
	free(devs);
	return 3;
}

static void print_header(const char *path, const char *bdf, const struct drm_tnpu_caps *caps,
			 long interval_ms)
{
	printf("accel-top: %s (%s), %u hardware queues, %u MHz, every %ld ms\n", path, bdf,
	       caps->hw_queues, caps->clock_mhz, interval_ms);
	printf("%8s %8s %8s %6s %5s %6s %5s %6s %7s %6s %6s %9s %9s %9s\n", "time", "jobs/s", "subm/s",
	       "failed", "tmout", "hw_err", "mmu", "busy", "compute", "load", "store", "MAC/s", "H2D B/s",
	       "D2H B/s");
}

/* Ratios as percentages; "busy" can exceed 100% (model time runs faster than its clock): from 10x on
 * it is shown as a multiple so the column keeps its width. */
static void pct(double v, char *out, size_t len)
{
	if (isnan(v))	/* no device cycles in the interval */
		snprintf(out, len, "-");
	else if (v >= 10.0)
		ai_format_si(v, "x", out, len);
	else
		snprintf(out, len, "%.1f%%", v * 100.0);
}

/* Job rates stay exact up to 99999.9/s (what people compare), SI-prefixed beyond. */
static void rate_str(double v, char *out, size_t len)
{
	if (!isnan(v) && v < 99999.95)
		snprintf(out, len, "%.1f", v);
	else
		ai_format_si(v, "", out, len);
}

/*
 * One row per hardware ring under the device line: the columns the ring has (jobs/s, failed, tmout,
 * busy); the label replaces the time so `grep '^ *[0-9]'` still finds exactly the device lines.
 */
static void print_rings(const struct ai_rates *r)
{
	for (unsigned int i = 0; i < r->num_rings; i++) {
		const struct ai_ring_rates *q = &r->ring[i];
		char label[16], jobs[16], busy[16];

		snprintf(label, sizeof(label), "q%u", i);
		rate_str(q->jobs_per_s, jobs, sizeof(jobs));
		pct(q->busy, busy, sizeof(busy));
		printf("%8s %8s %8s %6llu %5llu %6s %5s %6s\n", label, jobs, "-",
		       (unsigned long long)q->failed, (unsigned long long)q->timedout, "-", "-", busy);
	}
}

static void print_line(double t, const struct ai_rates *r)
{
	char jobs[16], subm[16], busy[16], comp[16], load[16], store[16], macs[16], h2d[16], d2h[16];

	rate_str(r->jobs_per_s, jobs, sizeof(jobs));
	rate_str(r->submitted_per_s, subm, sizeof(subm));
	pct(r->busy, busy, sizeof(busy));
	pct(r->compute_util, comp, sizeof(comp));
	pct(r->load_util, load, sizeof(load));
	pct(r->store_util, store, sizeof(store));
	ai_format_si(r->macs_per_s, "", macs, sizeof(macs));
	ai_format_si(r->h2d_bytes_per_s, "", h2d, sizeof(h2d));
	ai_format_si(r->d2h_bytes_per_s, "", d2h, sizeof(d2h));
	printf("%8.1f %8s %8s %6llu %5llu %6llu %5llu %6s %7s %6s %6s %9s %9s %9s%s\n", t, jobs, subm,
	       (unsigned long long)r->failed, (unsigned long long)r->timedout,
	       (unsigned long long)r->hw_errors, (unsigned long long)r->mmu_faults, busy, comp, load,
	       store, macs, h2d, d2h, r->reset_seen ? "  (reset)" : "");
}

/* A client's busy ratio (sum over its rings, may exceed 1) and cycles/s; NaN if it is new. */
static void client_rates(const struct ai_client *c, const struct ai_client *prev, double dt, double *busy,
			 double *cycles)
{
	uint64_t db = 0, dc = 0;

	*busy = *cycles = NAN;
	if (!prev || dt <= 0)
		return;
	for (unsigned int q = 0; q < DRM_TNPU_MAX_RINGS; q++) {
		db += c->busy_ns[q] >= prev->busy_ns[q] ? c->busy_ns[q] - prev->busy_ns[q] : 0;
		dc += c->cycles[q] >= prev->cycles[q] ? c->cycles[q] - prev->cycles[q] : 0;
	}
	*busy = (double)db / (dt * 1e9);
	*cycles = (double)dc / dt;
}

struct clients {
	struct ai_client c[AI_MAX_CLIENTS];
	size_t n;
};

/* One row per client under the ring rows: "c<id>" replaces the time like "q<N>" does. */
static void print_clients(const struct clients *cur, const struct clients *prev, double dt)
{
	for (size_t i = 0; i < cur->n; i++) {
		const struct ai_client *c = &cur->c[i];
		char label[24], busy[16], cyc[16], mem[16];
		double b, cy;

		client_rates(c, ai_client_find(prev->c, prev->n, c->id), dt, &b, &cy);
		snprintf(label, sizeof(label), "c%llu", (unsigned long long)c->id);
		pct(b, busy, sizeof(busy));
		if (isnan(cy))
			snprintf(cyc, sizeof(cyc), "-");
		else
			ai_format_si(cy, "", cyc, sizeof(cyc));
		ai_format_si((double)c->mem_total, "B", mem, sizeof(mem));
		printf("%8s %8d %-15.15s busy %6s cycles/s %8s mem %8s\n", label, c->pid, c->comm, busy, cyc,
		       mem);
	}
}

static void json_ratio(struct json_writer *w, const char *key, double v)
{
	json_double(w, key, v, 4);
}

/* "rings": one object per hardware ring, null when the driver has no per-ring statistics */
static void print_json_rings(struct json_writer *w, const struct ai_sample *s,
			     const struct ai_rates *r)
{
	if (!s->num_rings) {
		json_null(w, "rings");
		return;
	}
	json_begin_array(w, "rings");
	for (unsigned int i = 0; i < r->num_rings; i++) {
		const struct ai_ring_rates *q = &r->ring[i];
		const struct drm_tnpu_ring_stats *t = &s->c.rings[i];

		json_begin_object(w, NULL);
		json_u64(w, "ring", i);
		json_double(w, "jobs_per_s", q->jobs_per_s, 2);
		json_double(w, "failed_per_s", q->failed_per_s, 2);
		json_u64(w, "failed", q->failed);
		json_u64(w, "timedout", q->timedout);
		json_ratio(w, "busy", q->busy);
		json_begin_object(w, "totals");
		json_u64(w, "jobs_done", t->jobs_done);
		json_u64(w, "jobs_failed", t->jobs_failed);
		json_u64(w, "jobs_timedout", t->jobs_timedout);
		json_u64(w, "busy_ns", t->busy_ns);
		json_end_object(w);
		json_end_object(w);
	}
	json_end_array(w);
}

/* "clients": one object per open file of the device; [] when there is none */
static void print_json_clients(struct json_writer *w, const struct clients *cur, const struct clients *prev,
			       double dt)
{
	json_begin_array(w, "clients");
	for (size_t i = 0; i < cur->n; i++) {
		const struct ai_client *c = &cur->c[i];
		uint64_t busy_ns = 0, cycles = 0;
		double b, cy;

		client_rates(c, ai_client_find(prev->c, prev->n, c->id), dt, &b, &cy);
		json_begin_object(w, NULL);
		json_u64(w, "client_id", c->id);
		json_i64(w, "pid", c->pid);
		json_str(w, "command", c->comm);
		json_ratio(w, "busy", b);
		json_double(w, "cycles_per_s", cy, 0);
		json_u64(w, "memory_bytes", c->mem_total);
		json_u64(w, "resident_bytes", c->mem_resident);
		json_begin_array(w, "rings");
		for (unsigned int q = 0; q < DRM_TNPU_MAX_RINGS; q++) {
			if (!(c->rings & (1u << q)))
				continue;
			busy_ns += c->busy_ns[q];
			cycles += c->cycles[q];
			char engine[16];

			snprintf(engine, sizeof(engine), "ring%u", q);
			json_begin_object(w, NULL);
			json_str(w, "engine", engine);	/* the fdinfo key: drm-engine-ring<q> */
			json_u64(w, "busy_ns", c->busy_ns[q]);
			json_u64(w, "cycles", c->cycles[q]);
			json_end_object(w);
		}
		json_end_array(w);
		json_u64(w, "busy_ns", busy_ns);
		json_u64(w, "cycles", cycles);
		json_end_object(w);
	}
	json_end_array(w);
}

static void print_json(double t, const char *path, const struct ai_sample *s, const struct ai_rates *r,
		       unsigned int num_counters, const struct clients *cl, const struct clients *pcl)
{
	struct json_writer w;

	json_init(&w, stdout);
	json_begin_object(&w, NULL);
	json_double(&w, "time_s", t, 3);
	json_double(&w, "interval_s", r->dt, 3);
	json_str(&w, "device", path);
	json_double(&w, "jobs_per_s", r->jobs_per_s, 2);
	json_double(&w, "submitted_per_s", r->submitted_per_s, 2);
	json_double(&w, "failed_per_s", r->failed_per_s, 2);
	json_u64(&w, "failed", r->failed);
	json_u64(&w, "timedout", r->timedout);
	json_u64(&w, "hw_errors", r->hw_errors);
	json_u64(&w, "mmu_faults", r->mmu_faults);
	json_u64(&w, "resets", r->resets);
	json_bool(&w, "reset_seen", r->reset_seen);
	json_ratio(&w, "busy", r->busy);
	json_ratio(&w, "compute_util", r->compute_util);
	json_ratio(&w, "load_util", r->load_util);
	json_ratio(&w, "store_util", r->store_util);
	json_double(&w, "macs_per_s", r->macs_per_s, 0);
	json_double(&w, "h2d_bytes_per_s", r->h2d_bytes_per_s, 0);
	json_double(&w, "d2h_bytes_per_s", r->d2h_bytes_per_s, 0);
	json_begin_object(&w, "totals");
	json_u64(&w, "jobs_submitted", s->c.jobs_submitted);
	json_u64(&w, "jobs_completed", s->c.jobs_completed);
	json_u64(&w, "jobs_failed", s->c.jobs_failed);
	json_u64(&w, "jobs_timedout", s->c.jobs_timedout);
	json_u64(&w, "resets", s->c.resets);
	json_u64(&w, "mmu_faults", s->c.mmu_faults);
	json_u64(&w, "hw_errors", s->c.hw_errors);
	/* the device's global counter block: sums over every job since the last device reset */
	json_begin_object(&w, "device");
	for (unsigned int i = 0; i < num_counters && i < DRM_TNPU_MAX_COUNTERS; i++) {
		char key[24];
		const char *name = ai_counter_name(i);

		if (!name)
			snprintf(key, sizeof(key), "counter_%u", i);
		json_u64(&w, name ? name : key, s->c.device[i]);
	}
	json_end_object(&w);
	json_end_object(&w);
	print_json_rings(&w, s, r);
	print_json_clients(&w, cl, pcl, r->dt);
	json_end_object(&w);
	fputc('\n', stdout);
}

static int sample(int fd, struct ai_sample *s, const char *path)
{
	uint32_t size = 0;
	int ret = ai_query_counters(fd, &s->c, &size);

	s->t = now_s();
	s->num_rings = ret < 0 ? 0 : ai_counters_rings(&s->c, size);
	if (ret == -EPERM)
		fprintf(stderr,
			"accel-top: %s: the device-wide counters need CAP_PERFMON or CAP_SYS_ADMIN (run as root);\n"
			"a client's own engine time is in /proc/PID/fdinfo (Documentation/driver.md, Telemetry)\n",
			path);
	else if (ret < 0)
		fprintf(stderr, "accel-top: %s: QUERY_COUNTERS failed: %s\n", path, strerror(-ret));
	return ret;
}

static void sample_clients(unsigned long long rdev, struct clients *cl)
{
	int n = rdev ? ai_clients_scan("/proc", rdev, (int)getpid(), cl->c, AI_MAX_CLIENTS) : 0;

	cl->n = n > 0 ? (size_t)n : 0;
}

static int run(const struct top_opts *o, int fd, const char *path, const char *bdf)
{
	static struct clients cl[2];
	unsigned long long rdev = 0;
	struct stat st;
	struct drm_tnpu_caps caps;
	struct ai_sample prev, cur;
	struct ai_rates r;
	struct timespec start;
	int ret = ai_query_caps(fd, &caps);

	if (ret < 0) {
		fprintf(stderr, "accel-top: %s: QUERY_CAPS failed: %s\n", path, strerror(-ret));
		return 1;
	}
	if (sample(fd, &prev, path) < 0)
		return 1;
	if (!fstat(fd, &st) && S_ISCHR(st.st_mode))
		rdev = (unsigned long long)st.st_rdev;
	sample_clients(rdev, &cl[0]);
	double t0 = prev.t;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long k = 1; !o->count || k <= o->count; k++) {
		sleep_until(&start, k, o->interval_ms);
		struct clients *ccur = &cl[k & 1], *cprev = &cl[(k - 1) & 1];

		if (sample(fd, &cur, path) < 0)
			return 1;
		sample_clients(rdev, ccur);
		ai_compute_rates(&prev, &cur, caps.clock_mhz, &r);
		if (o->json) {
			print_json(cur.t - t0, path, &cur, &r, caps.num_counters, ccur, cprev);
		} else {
			if ((k - 1) % HEADER_EVERY == 0)
				print_header(path, bdf, &caps, o->interval_ms);
			print_line(cur.t - t0, &r);
			print_rings(&r);
			print_clients(ccur, cprev, r.dt);
		}
		if (fflush(stdout))
			return 1;	/* e.g. the reader of a pipe went away */
		prev = cur;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct top_opts o = { .interval_ms = 1000 };
	char path[PATH_MAX], bdf[32];
	int c, fd, ret;

	while ((c = getopt_long(argc, argv, "i:n:jd:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!parse_long(optarg, 10, 3600L * 1000, &o.interval_ms)) {
				return cli_usage_error("accel-top", "--interval: expected 10..3600000 ms, got '%s'",
						       optarg);
			}
			break;
		case 'n':
			if (!parse_long(optarg, 1, LONG_MAX, &o.count)) {
				return cli_usage_error("accel-top", "--count: expected a positive number, got '%s'",
						       optarg);
			}
			break;
		case 'j': o.json = true; break;
		case 'd': o.device = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': return cli_version("accel-top");
		default: return cli_usage_error("accel-top", "bad option (see the line above)");
		}
	}
	if (optind < argc)
		return cli_usage_error("accel-top", "unexpected argument '%s'", argv[optind]);
	ret = resolve(o.device, path, sizeof(path), bdf, sizeof(bdf));
	if (ret)
		return ret;
	fd = ai_open_accel(path);
	if (fd < 0) {
		fprintf(stderr, "accel-top: cannot open %s: %s\n", path, strerror(-fd));
		return 1;
	}
	ret = run(&o, fd, path, bdf);
	close(fd);
	return ret;
}
