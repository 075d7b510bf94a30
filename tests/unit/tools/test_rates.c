// SPDX-License-Identifier: MIT
/* Counter deltas -> rates (format.c: ai_compute_rates), the arithmetic behind accel-top. */
#include <criterion/criterion.h>
#include <math.h>
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
