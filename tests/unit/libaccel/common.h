/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the libaccel tests.  The device comes from $ACCEL_DEVICE (default "sim"), so the
 * same executables run on the host (sim) and inside the VM (/dev/accel/accel0).  Tests that need a
 * small geometry to reach edge tiling with small shapes open "sim:..." explicitly and are skipped
 * on other devices.
 */
#ifndef ACCEL_TEST_COMMON_H
#define ACCEL_TEST_COMMON_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"

static inline uint64_t xrng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static inline const char *test_device(void)
{
	const char *d = getenv("ACCEL_DEVICE");

	return d && *d ? d : "sim";
}

static inline bool test_is_sim(void)
{
	return !strncmp(test_device(), "sim", 3);
}

/* Open the test device; geometry "sim:..." only when the test device is the simulator. */
static inline struct accel_dev *open_dev(const char *sim_geometry)
{
	struct accel_dev *dev = NULL;
	const char *path = test_device();
	int ret;

	if (sim_geometry && test_is_sim())
		path = sim_geometry;
	ret = accel_open(path, &dev);
	cr_assert_eq(ret, 0, "accel_open(%s): %s: %s", path, accel_strerror(ret), accel_last_error(dev));
	return dev;
}

static inline struct accel_buffer *alloc_buf(struct accel_dev *dev, uint64_t size)
{
	struct accel_buffer *b = NULL;
	int ret = accel_buffer_alloc(dev, size, &b);

	cr_assert_eq(ret, 0, "buffer alloc %llu: %s", (unsigned long long)size, accel_last_error(dev));
	return b;
}

static inline void fill_i8(int8_t *p, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (int8_t)xrng(s);
}

/* fp32 values k/32 in [-2, 2): products and short sums are exact, long sums stay well conditioned. */
static inline void fill_f32(float *p, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((int)(xrng(s) % 128) - 64) / 32.0f;
}

/* Requantisation exactly as the hardware spec (isa.md, SFU REQUANT int path). */
static inline int8_t ref_requant(int32_t x, int32_t mult, unsigned shift, int zp)
{
	int64_t y = ((int64_t)x * mult + (shift ? (1ll << (shift - 1)) : 0)) >> shift;

	y += zp;
	return (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
}

/* Documented fp32 tolerance (Documentation/libaccel.md): |got - ref| <= 1e-4 * (1 + sum |a*b|). */
#define F32_RTOL 1e-4

#endif
