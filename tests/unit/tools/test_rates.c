// SPDX-License-Identifier: MIT
/* Counter deltas -> rates (format.c: ai_compute_rates), the arithmetic behind accel-top. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "accel_tools.h"

/* enum tnpu_counter indices (Documentation/hardware/cycle-model.md#counters) */
enum { TOTAL = 0, COMPUTE = 1, MACS_EFF = 5, H2D = 6, D2H = 7, LOAD = 16, STORE = 17 };

static struct ai_sample a, b;
static struct ai_rates r;

static void setup(void)
{
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.t = 100.0;
	b.t = 102.0;
	a.c.jobs_completed = 1000;
	a.c.jobs_submitted = 1010;
	a.c.device[TOTAL] = 5000000;
}

Test(rates, jobs_per_second_from_deltas_over_the_interval, .init = setup)
{
	b.c.jobs_completed = 1100;
	b.c.jobs_submitted = 1130;
	b.c.jobs_failed = 4;
	b.c.device[TOTAL] = a.c.device[TOTAL];
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_float_eq(r.dt, 2.0, 1e-12);
	cr_assert_float_eq(r.jobs_per_s, 50.0, 1e-9);
	cr_assert_float_eq(r.submitted_per_s, 60.0, 1e-9);
	cr_assert_eq(r.failed, 4);
	cr_assert_float_eq(r.failed_per_s, 2.0, 1e-9);
	cr_assert_not(r.reset_seen);
}

Test(rates, utilisation_is_engine_cycles_over_total_cycles, .init = setup)
{
	b.c.device[TOTAL] = a.c.device[TOTAL] + 1000;
	b.c.device[COMPUTE] = 900;
	b.c.device[LOAD] = 250;
	b.c.device[STORE] = 100;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_float_eq(r.compute_util, 0.9, 1e-12);
	cr_assert_float_eq(r.load_util, 0.25, 1e-12);
	cr_assert_float_eq(r.store_util, 0.1, 1e-12);
	/* 1000 device cycles in 2 s at 1000 MHz */
	cr_assert_float_eq(r.busy, 1000.0 / 2e9, 1e-18);
}

Test(rates, byte_and_mac_rates_per_wall_second, .init = setup)
{
	b.c.device[TOTAL] = a.c.device[TOTAL];
	b.c.device[MACS_EFF] = 8000;
	b.c.device[H2D] = 4096;
	b.c.device[D2H] = 1024;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_float_eq(r.macs_per_s, 4000.0, 1e-9);
	cr_assert_float_eq(r.h2d_bytes_per_s, 2048.0, 1e-9);
	cr_assert_float_eq(r.d2h_bytes_per_s, 512.0, 1e-9);
}

Test(rates, idle_device_has_undefined_utilisation_not_a_division_by_zero, .init = setup)
{
	b.c = a.c;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(isnan(r.compute_util));
	cr_assert(isnan(r.load_util));
	cr_assert_float_eq(r.jobs_per_s, 0.0, 1e-12);
	cr_assert_float_eq(r.busy, 0.0, 1e-12);
}

Test(rates, unknown_clock_gives_undefined_busy, .init = setup)
{
	b.c = a.c;
	b.c.device[TOTAL] += 10;
	ai_compute_rates(&a, &b, 0, &r);
	cr_assert(isnan(r.busy));
	cr_assert_float_eq(r.compute_util, 0.0, 1e-12);
}

Test(rates, zero_or_negative_interval_gives_undefined_rates, .init = setup)
{
	b.t = a.t;
	b.c.jobs_completed = a.c.jobs_completed + 5;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(isnan(r.jobs_per_s));
	cr_assert(isnan(r.busy));
	b.t = a.t - 1;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(isnan(r.macs_per_s));
}

Test(rates, counter_going_backwards_restarts_from_zero_and_flags_a_reset, .init = setup)
{
	/* Device reset: the global counter block restarts; the driver counters keep going. */
	b.c.jobs_completed = 1010;
	b.c.jobs_submitted = 1010;
	b.c.device[TOTAL] = 300;
	b.c.device[COMPUTE] = 150;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(r.reset_seen);
	cr_assert_float_eq(r.compute_util, 0.5, 1e-12);
	cr_assert_float_eq(r.jobs_per_s, 5.0, 1e-12);
}

Test(rates, driver_reset_counter_flags_a_reset, .init = setup)
{
	b.c = a.c;
	b.c.resets = 1;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_eq(r.resets, 1);
	cr_assert(r.reset_seen);
}

/* ---- per-ring rows (struct drm_tnpu_ring_stats, appended to the COUNTERS answer) ---- */

Test(rates, per_ring_jobs_failures_and_busy_share_over_the_interval, .init = setup)
{
	a.num_rings = b.num_rings = 2;
	a.c.rings[0].jobs_done = 500;
	a.c.rings[0].busy_ns = 7000000000ull;
	b.c.rings[0].jobs_done = 560;
	b.c.rings[0].jobs_failed = 3;
	b.c.rings[0].jobs_timedout = 1;
	b.c.rings[0].busy_ns = a.c.rings[0].busy_ns + 500000000ull;	/* 0.5 s of 2 s */
	b.c.rings[1].jobs_done = 40;
	b.c.rings[1].busy_ns = 2000000000ull;
	b.c.device[TOTAL] = a.c.device[TOTAL];
	b.c.jobs_completed = a.c.jobs_completed;
	b.c.jobs_submitted = a.c.jobs_submitted;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_eq(r.num_rings, 2);
	cr_assert_float_eq(r.ring[0].jobs_per_s, 30.0, 1e-9);
	cr_assert_eq(r.ring[0].done, 60);
	cr_assert_eq(r.ring[0].failed, 3);
	cr_assert_eq(r.ring[0].timedout, 1);
	cr_assert_float_eq(r.ring[0].failed_per_s, 1.5, 1e-9);
	cr_assert_float_eq(r.ring[0].busy, 0.25, 1e-12);
	cr_assert_float_eq(r.ring[1].jobs_per_s, 20.0, 1e-9);
	cr_assert_float_eq(r.ring[1].busy, 1.0, 1e-12);
	cr_assert_not(r.reset_seen);
}

Test(rates, ring_busy_a_hair_over_the_interval_is_capped_at_one, .init = setup)
{
	a.num_rings = b.num_rings = 1;
	b.c.device[TOTAL] = a.c.device[TOTAL];
	b.c.rings[0].busy_ns = 2000100000ull;	/* kernel clock read 100 us later than ours */
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_float_eq(r.ring[0].busy, 1.0, 1e-12);
}

Test(rates, no_ring_rows_unless_both_samples_have_rings, .init = setup)
{
	b.c = a.c;
	b.num_rings = 4;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_eq(r.num_rings, 0);
	a.num_rings = 4;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert_eq(r.num_rings, 4);
}

Test(rates, ring_counter_going_backwards_flags_a_reset, .init = setup)
{
	a.num_rings = b.num_rings = 1;
	b.c.device[TOTAL] = a.c.device[TOTAL];
	b.c.jobs_completed = a.c.jobs_completed;
	b.c.jobs_submitted = a.c.jobs_submitted;
	a.c.rings[0].jobs_done = 100;
	b.c.rings[0].jobs_done = 6;	/* driver reloaded */
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(r.reset_seen);
	cr_assert_eq(r.ring[0].done, 6);
	cr_assert_float_eq(r.ring[0].jobs_per_s, 3.0, 1e-9);
}

Test(rates, zero_interval_gives_undefined_ring_rates, .init = setup)
{
	a.num_rings = b.num_rings = 1;
	b.t = a.t;
	b.c.rings[0].jobs_done = 5;
	ai_compute_rates(&a, &b, 1000, &r);
	cr_assert(isnan(r.ring[0].jobs_per_s));
	cr_assert(isnan(r.ring[0].busy));
	cr_assert_eq(r.ring[0].done, 5);
}

Test(rates, short_answer_from_an_older_driver_has_no_rings)
{
	struct drm_tnpu_counters c;
	uint32_t old_size = offsetof(struct drm_tnpu_counters, num_rings);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(old_size, 312);	/* the answer's size before per-ring statistics */
	cr_assert_eq(ai_counters_rings(&c, old_size), 0);
	c.num_rings = 4;	/* garbage a short answer cannot have written */
	cr_assert_eq(ai_counters_rings(&c, old_size), 0);
	cr_assert_eq(ai_counters_rings(&c, 0), 0);
}

Test(rates, ring_count_is_capped_by_the_answer_size)
{
	struct drm_tnpu_counters c;
	uint32_t base = offsetof(struct drm_tnpu_counters, rings);

	memset(&c, 0, sizeof(c));
	c.num_rings = 4;
	cr_assert_eq(ai_counters_rings(&c, sizeof(c)), 4);
	cr_assert_eq(ai_counters_rings(&c, base + 2 * sizeof(c.rings[0])), 2);
	c.num_rings = 1000;
	cr_assert_eq(ai_counters_rings(&c, sizeof(c)), DRM_TNPU_MAX_RINGS);
	cr_assert_eq(ai_counters_rings(&c, 100000), DRM_TNPU_MAX_RINGS);
}
