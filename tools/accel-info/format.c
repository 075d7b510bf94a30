// SPDX-License-Identifier: MIT
/* format.c — pure formatting and arithmetic helpers of accel-info / accel-top (unit-tested). */
#include "accel_tools.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void ai_strlcpy_line(char *dst, const char *src, size_t len)
{
	size_t i = 0;

	if (!len)
		return;
	for (; src && src[i] && src[i] != '\n' && i + 1 < len; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

void ai_format_size(uint64_t bytes, char *out, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned int u = 0;
	uint64_t div = 1;

	while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes / div >= 1024) {
		div *= 1024;
		u++;
	}
	if (bytes % div == 0) {
		snprintf(out, len, "%llu %s", (unsigned long long)(bytes / div), units[u]);
		return;
	}
	/* Tenths rounded to nearest; 1.96 KiB prints "2.0 KiB", never "1.10 KiB". */
	uint64_t whole = bytes / div, rem = bytes % div;
	uint64_t tenths = (uint64_t)((long double)rem * 10.0L / (long double)div + 0.5L);

	if (tenths >= 10) {
		whole++;
		tenths = 0;
	}
	snprintf(out, len, "%llu.%llu %s", (unsigned long long)whole, (unsigned long long)tenths,
		 units[u]);
}

const char *ai_link_speed_str(unsigned int code)
{
	static const char *const speeds[] = {
		"unknown", "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s", "64 GT/s",
	};

	return code < sizeof(speeds) / sizeof(speeds[0]) ? speeds[code] : "unknown";
}

unsigned int ai_link_speed_code(const char *sysfs_text)
{
	static const struct {
		const char *prefix;
		unsigned int code;
	} map[] = {
		{ "2.5 GT/s", 1 }, { "5.0 GT/s", 2 }, { "5 GT/s", 2 }, { "8.0 GT/s", 3 }, { "8 GT/s", 3 },
		{ "16.0 GT/s", 4 }, { "16 GT/s", 4 }, { "32.0 GT/s", 5 }, { "32 GT/s", 5 },
		{ "64.0 GT/s", 6 }, { "64 GT/s", 6 },
	};

	if (!sysfs_text)
		return 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(sysfs_text, map[i].prefix, strlen(map[i].prefix)))
			return map[i].code;
	return 0;
}

/* Space-separated names of the set bits in names[] order, unknown bits in hex, "none" for 0. */
static void format_bits(uint32_t bits, const char *const *names, unsigned int count, char *out,
			size_t len)
{
	size_t pos = 0;
	uint32_t rest = bits;

	if (!len)
		return;
	out[0] = '\0';
	for (unsigned int i = 0; i < count && i < 32; i++) {
		if (!(bits & (1u << i)) || !names[i])
			continue;
		rest &= ~(1u << i);
		int n = snprintf(out + pos, len - pos, "%s%s", pos ? " " : "", names[i]);
		if (n < 0 || (size_t)n >= len - pos)
			return;
		pos += (size_t)n;
	}
	if (rest)
		snprintf(out + pos, len - pos, "%s0x%x", pos ? " " : "", rest);
	else if (!pos)
		snprintf(out, len, "none");
}

void ai_format_dtypes(uint32_t dtypes, char *out, size_t len)
{
	/* bit 0 DRM_TNPU_DTYPE_INT8, bit 1 _FP32, bit 2 _BF16 */
	static const char *const names[] = { "int8", "fp32", "bf16" };

	format_bits(dtypes, names, sizeof(names) / sizeof(names[0]), out, len);
}

void ai_format_features(uint32_t features, char *out, size_t len)
{
	/* CAP_FEATURES bits, Documentation/hardware/registers.md. */
	static const char *const names[] = {
		"zero-skip", "sparse-weights", "load-balance", "chained-sfu", "im2col", "semaphores",
		"dma-fill", [7] = "depthwise", [8] = "row-busy", [9] = "sparse-counters", [10] = "islands",
		[11] = "rings", [12] = "ring-dma", [13] = "static-plans", [14] = "line-stream",
		[15] = "vector-units", [16] = "sfu-residual", [17] = "dw-wide", [18] = "job-counters",
		[19] = "sfu-qcol", [20] = "vec-qadd", [21] = "cluster-pairs", [22] = "row-wrap",
		[23] = "wdecomp", [25] = "vec-math",
	};

	format_bits(features, names, sizeof(names) / sizeof(names[0]), out, len);
}

const char *ai_class_name(uint32_t class_code)
{
	switch (class_code >> 16) {
	case 0x12: return "processing accelerator";
	default: return "unexpected class";
	}
}

const char *ai_counter_name(unsigned int i)
{
	/* enum tnpu_counter, Documentation/hardware/cycle-model.md#counters */
	static const char *const names[] = {
		"total_cycles", "compute_cycles", "dma_cycles", "stall_cycles", "macs_dense",
		"macs_effective", "bytes_h2d", "bytes_d2h", "bytes_dispatch", "bytes_config",
		"instructions", "bank_swaps", "mmu_faults", "commands", "oq_accesses", "sfu_ops",
		"load_cycles", "store_cycles",
		[18] = "row_busy_max", [19] = "row_busy_sum", [20] = "busy_rows", [21] = "lb_macs_moved",
		[22] = "ring_rows", [23] = "ring_wait_cycles", [24] = "ring_full_cycles", [25] = "ring_bytes",
		[26] = "plan_hits", [27] = "plan_misses", [28] = "vec_ops", [29] = "vec_cycles",
	};

	return i < sizeof(names) / sizeof(names[0]) ? names[i] : NULL;
}

/* A counter delta; a counter that went backwards restarted from 0 (reload or reset). */
static uint64_t delta(uint64_t prev, uint64_t cur, bool *wrapped)
{
	if (cur >= prev)
		return cur - prev;
	*wrapped = true;
	return cur;
}

static double ratio(uint64_t num, uint64_t den)
{
	return den ? (double)num / (double)den : NAN;
}

unsigned int ai_counters_rings(const struct drm_tnpu_counters *c, uint32_t answer_size)
{
	size_t base = offsetof(struct drm_tnpu_counters, rings);
	size_t fit;

	if (answer_size <= base)
		return 0;
	fit = (answer_size - base) / sizeof(c->rings[0]);
	if (fit > DRM_TNPU_MAX_RINGS)
		fit = DRM_TNPU_MAX_RINGS;
	return c->num_rings < fit ? c->num_rings : (unsigned int)fit;
}

/* Rates of ring i; a ring counter that went backwards sets *wrapped like the device counters. */
static void ring_rates(const struct drm_tnpu_ring_stats *a, const struct drm_tnpu_ring_stats *b,
		       double dt, bool *wrapped, struct ai_ring_rates *rr)
{
	uint64_t busy = delta(a->busy_ns, b->busy_ns, wrapped);

	rr->done = delta(a->jobs_done, b->jobs_done, wrapped);
	rr->failed = delta(a->jobs_failed, b->jobs_failed, wrapped);
	rr->timedout = delta(a->jobs_timedout, b->jobs_timedout, wrapped);
	if (!(dt > 0)) {
		rr->jobs_per_s = rr->failed_per_s = rr->busy = NAN;
		return;
	}
	rr->jobs_per_s = (double)rr->done / dt;
	rr->failed_per_s = (double)rr->failed / dt;
	/*
	 * The kernel reads its clock inside the ioctl and we read ours after it returns, so a ring
	 * busy for the whole interval can measure a hair over it: cap at 1.
	 */
	rr->busy = (double)busy / (dt * 1e9);
	if (rr->busy > 1.0)
		rr->busy = 1.0;
}

void ai_compute_rates(const struct ai_sample *prev, const struct ai_sample *cur, uint32_t clock_mhz,
		      struct ai_rates *r)
{
	const struct drm_tnpu_counters *a = &prev->c, *b = &cur->c;
	bool wrapped = false;
	uint64_t d[DRM_TNPU_MAX_COUNTERS];

	memset(r, 0, sizeof(*r));
	r->dt = cur->t - prev->t;
	for (int i = 0; i < DRM_TNPU_MAX_COUNTERS; i++)
		d[i] = delta(a->device[i], b->device[i], &wrapped);
	uint64_t completed = delta(a->jobs_completed, b->jobs_completed, &wrapped);
	uint64_t submitted = delta(a->jobs_submitted, b->jobs_submitted, &wrapped);

	r->failed = delta(a->jobs_failed, b->jobs_failed, &wrapped);
	r->timedout = delta(a->jobs_timedout, b->jobs_timedout, &wrapped);
	r->hw_errors = delta(a->hw_errors, b->hw_errors, &wrapped);
	r->mmu_faults = delta(a->mmu_faults, b->mmu_faults, &wrapped);
	r->resets = delta(a->resets, b->resets, &wrapped);
	r->num_rings = prev->num_rings < cur->num_rings ? prev->num_rings : cur->num_rings;
	if (r->num_rings > DRM_TNPU_MAX_RINGS)
		r->num_rings = DRM_TNPU_MAX_RINGS;
	for (unsigned int i = 0; i < r->num_rings; i++)
		ring_rates(&a->rings[i], &b->rings[i], r->dt, &wrapped, &r->ring[i]);
	r->reset_seen = wrapped || r->resets > 0;

	/* Counter indices: enum tnpu_counter (Documentation/hardware/cycle-model.md#counters). */
	uint64_t total = d[0], compute = d[1], macs_eff = d[5], h2d = d[6], d2h = d[7];
	uint64_t load = d[16], store = d[17];

	r->compute_util = ratio(compute, total);
	r->load_util = ratio(load, total);
	r->store_util = ratio(store, total);
	if (!(r->dt > 0)) {
		r->jobs_per_s = r->submitted_per_s = r->failed_per_s = NAN;
		r->busy = r->macs_per_s = r->h2d_bytes_per_s = r->d2h_bytes_per_s = NAN;
		return;
	}
	r->jobs_per_s = (double)completed / r->dt;
	r->submitted_per_s = (double)submitted / r->dt;
	r->failed_per_s = (double)r->failed / r->dt;
	r->busy = clock_mhz ? (double)total / ((double)clock_mhz * 1e6 * r->dt) : NAN;
	r->macs_per_s = (double)macs_eff / r->dt;
	r->h2d_bytes_per_s = (double)h2d / r->dt;
	r->d2h_bytes_per_s = (double)d2h / r->dt;
}

void ai_format_si(double v, const char *unit, char *out, size_t len)
{
	static const char *const prefix[] = { "", "k", "M", "G", "T", "P", "E" };
	unsigned int p = 0;
	const char *sep;

	if (isnan(v)) {
		snprintf(out, len, "-");
		return;
	}
	while (fabs(v) >= 999.95 && p + 1 < sizeof(prefix) / sizeof(prefix[0])) {
		v /= 1000.0;
		p++;
	}
	sep = (*prefix[p] || *unit) ? " " : "";
	if (fabs(v) >= 99.95 || (p == 0 && v == floor(v)))
		snprintf(out, len, "%.0f%s%s%s", v, sep, prefix[p], unit);
	else
		snprintf(out, len, "%.1f%s%s%s", v, sep, prefix[p], unit);
}
