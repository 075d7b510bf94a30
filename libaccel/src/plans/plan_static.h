/* SPDX-License-Identifier: MIT */
/*
 * plan_static.h - static address plans (seed 004; Documentation/plans.md): the plan object shared
 * by plan_compile.c (generator), plan_file.c (save/load) and plan_conv.c (lowering).
 */
#ifndef ACCEL_PLAN_STATIC_H
#define ACCEL_PLAN_STATIC_H

#include "internal.h"
#include "tnpu/tnpu_hw.h"

struct accel_plan {
	struct accel_plan_conv_desc d;
	uint32_t oh, ow, M, K, e;
	uint8_t *image;		/* device image (tnpu_plan_hdr + bases + offsets), little-endian */
	uint32_t image_bytes;
	uint64_t tag;		/* FNV-1a 64 of image */
	uint32_t handle;	/* process-unique plan-cache handle */
	/* Upload copy for one device (plan_conv.c); replaced when the plan is used on another. */
	struct accel_dev *dev;
	struct accel_buffer *buf;
};

uint64_t plan_fnv1a(const void *p, size_t n, uint64_t h);
#define PLAN_FNV_INIT 0xcbf29ce484222325ull
int plan_seterr(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Validate a descriptor and fill the derived sizes of p (no image). */
int plan_geometry(const struct accel_plan_conv_desc *d, struct accel_plan *p);
/* Check that image (image_bytes) is a well-formed device image for p's geometry. */
int plan_image_check(const struct accel_plan *p);
struct accel_plan *plan_alloc(void);

#endif
