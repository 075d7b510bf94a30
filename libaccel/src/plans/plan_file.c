/* SPDX-License-Identifier: MIT */
/*
 * plan_file.c - plan files: a plan compiled "hours or days before use" (seed 004) is stored and
 * loaded without recompiling.  Format (little-endian; Documentation/plans.md "File format"):
 *   0  char[8] "TNPUPLAN"      8 u32 file version (1)      12 u32 header bytes (128)
 *   16 u32[18] layer description (layout, c_block, dtype, n, c, h, w, k, r, s, stride_h, stride_w,
 *              dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right)
 *   88 u32 image bytes   92 u32 0   96 u64 image tag (FNV-1a 64)   104 24 bytes 0
 *   128 device image      then u64 FNV-1a 64 of every preceding byte of the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_static.h"

#define PLAN_FILE_MAGIC "TNPUPLAN"
#define PLAN_FILE_VERSION 1u
#define PLAN_FILE_HDR 128u
#define PLAN_FILE_FIELDS 18

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void desc_fields(const struct accel_plan_conv_desc *d, uint32_t f[PLAN_FILE_FIELDS])
{
	const uint32_t v[PLAN_FILE_FIELDS] = { (uint32_t)d->layout, d->c_block, (uint32_t)d->dtype, d->n, d->c, d->h,
					       d->w, d->k, d->r, d->s, d->stride_h, d->stride_w, d->dil_h, d->dil_w,
					       d->pad_top, d->pad_left, d->pad_bottom, d->pad_right };

	memcpy(f, v, sizeof(v));
}

int accel_plan_save(const struct accel_plan *plan, const char *path)
{
	uint8_t hdr[PLAN_FILE_HDR];
	uint32_t f[PLAN_FILE_FIELDS];
	uint64_t sum;
	FILE *fp;
	int ret = 0;

	if (!plan || !path)
		return plan_seterr(-EINVAL, "accel_plan_save: plan and path must not be NULL");
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, PLAN_FILE_MAGIC, 8);
	put32(hdr + 8, PLAN_FILE_VERSION);
	put32(hdr + 12, PLAN_FILE_HDR);
	desc_fields(&plan->d, f);
	for (int i = 0; i < PLAN_FILE_FIELDS; i++)
		put32(hdr + 16 + 4 * i, f[i]);
	put32(hdr + 88, plan->image_bytes);
	memcpy(hdr + 96, &plan->tag, 8);
	sum = plan_fnv1a(hdr, sizeof(hdr), PLAN_FNV_INIT);
	sum = plan_fnv1a(plan->image, plan->image_bytes, sum);
	fp = fopen(path, "wb");
	if (!fp)
		return plan_seterr(-errno, "accel_plan_save: %s: %s", path, strerror(errno));
	if (fwrite(hdr, sizeof(hdr), 1, fp) != 1 || fwrite(plan->image, plan->image_bytes, 1, fp) != 1 ||
	    fwrite(&sum, 8, 1, fp) != 1)
		ret = plan_seterr(-EIO, "accel_plan_save: %s: write failed", path);
	if (fclose(fp) && !ret)
		ret = plan_seterr(-EIO, "accel_plan_save: %s: close failed: %s", path, strerror(errno));
	return ret;
}

int accel_plan_load(const char *path, struct accel_plan **out)
{
	struct accel_plan_conv_desc d;
	struct accel_plan *p = NULL;
	uint8_t hdr[PLAN_FILE_HDR], tail[8];
	uint32_t f[PLAN_FILE_FIELDS], img_bytes;
	uint64_t sum, tag, file_sum;
	char why[256];
	size_t got;
	FILE *fp;
	int ret;

	if (!out || !path)
		return plan_seterr(-EINVAL, "accel_plan_load: path and out must not be NULL");
	*out = NULL;
	fp = fopen(path, "rb");
	if (!fp)
		return plan_seterr(-errno, "accel_plan_load: %s: %s", path, strerror(errno));
	got = fread(hdr, 1, sizeof(hdr), fp);
	if (got < 16 || memcmp(hdr, PLAN_FILE_MAGIC, 8)) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: not a tnpu plan file", path);
		goto out;
	}
	if (get32(hdr + 8) != PLAN_FILE_VERSION || get32(hdr + 12) != PLAN_FILE_HDR) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: file version %u (header %u bytes) is not supported "
				  "(this library reads version %u)", path, get32(hdr + 8), get32(hdr + 12),
				  PLAN_FILE_VERSION);
		goto out;
	}
	if (got < sizeof(hdr)) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: truncated header (%zu of %u bytes)", path, got,
				  PLAN_FILE_HDR);
		goto out;
	}
	for (int i = 0; i < PLAN_FILE_FIELDS; i++)
		f[i] = get32(hdr + 16 + 4 * i);
	memset(&d, 0, sizeof(d));
	d.layout = (enum accel_plan_layout)f[0];
	d.c_block = f[1];
	d.dtype = (enum accel_dtype)f[2];
	d.n = f[3];
	d.c = f[4];
	d.h = f[5];
	d.w = f[6];
	d.k = f[7];
	d.r = f[8];
	d.s = f[9];
	d.stride_h = f[10];
	d.stride_w = f[11];
	d.dil_h = f[12];
	d.dil_w = f[13];
	d.pad_top = f[14];
	d.pad_left = f[15];
	d.pad_bottom = f[16];
	d.pad_right = f[17];
	img_bytes = get32(hdr + 88);
	memcpy(&tag, hdr + 96, 8);
	p = plan_alloc();
	if (!p) {
		ret = plan_seterr(-ENOMEM, "accel_plan_load: out of memory");
		goto out;
	}
	ret = plan_geometry(&d, p);
	if (ret) {
		snprintf(why, sizeof(why), "%s", accel_plan_last_error());
		plan_seterr(ret, "accel_plan_load: %s: invalid layer description (corrupt file?): %s", path, why);
		ret = -EINVAL;
		goto out;
	}
	if (img_bytes != p->image_bytes) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: image is %u bytes, the layer needs %u (corrupt file)",
				  path, img_bytes, p->image_bytes);
		goto out;
	}
	p->image = malloc(img_bytes);
	if (!p->image) {
		ret = plan_seterr(-ENOMEM, "accel_plan_load: out of memory for a %u-byte plan", img_bytes);
		goto out;
	}
	got = fread(p->image, 1, img_bytes, fp);
	if (got != img_bytes || fread(tail, 1, 8, fp) != 8) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: truncated file (image %zu of %u bytes, or no checksum)",
				  path, got, img_bytes);
		goto out;
	}
	if (fgetc(fp) != EOF) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: trailing bytes after the checksum", path);
		goto out;
	}
	memcpy(&file_sum, tail, 8);
	sum = plan_fnv1a(hdr, sizeof(hdr), PLAN_FNV_INIT);
	sum = plan_fnv1a(p->image, img_bytes, sum);
	if (sum != file_sum) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: checksum mismatch (corrupt file)", path);
		goto out;
	}
	p->tag = plan_fnv1a(p->image, img_bytes, PLAN_FNV_INIT);
	if (p->tag != tag) {
		ret = plan_seterr(-EINVAL, "accel_plan_load: %s: image tag mismatch (corrupt file)", path);
		goto out;
	}
	ret = plan_image_check(p);
	if (ret) {
		snprintf(why, sizeof(why), "%s", accel_plan_last_error());
		plan_seterr(ret, "accel_plan_load: %s: %s", path, why);
		goto out;
	}
	*out = p;
	p = NULL;
out:
	fclose(fp);
	accel_plan_free(p);
	return ret;
}
