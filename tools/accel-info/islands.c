// SPDX-License-Identifier: MIT
/*
 * islands.c — accel-info's island table: DRM_TNPU_QUERY_ISLANDS (struct drm_tnpu_islands) and its text
 * and JSON renderings. Kept in the tools library, apart from info_human.c / info_json.c, so
 * tests/unit/tools can check the formatting without a device. Documentation/tools.md.
 */
#include "accel_tools.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xf86drm.h>

int ai_query_islands(int fd, struct drm_tnpu_islands *isl)
{
	struct drm_tnpu_query q = {
		.type = DRM_TNPU_QUERY_ISLANDS,
		.size = (uint32_t)sizeof(*isl),
		.pointer = (uint64_t)(uintptr_t)isl,
	};

	memset(isl, 0, sizeof(*isl));
	if (drmIoctl(fd, DRM_IOCTL_TNPU_QUERY, &q))
		return -errno;
	/* The uAPI promises at least one island; a zero count is a driver bug, not an empty table. */
	if (isl->count < 1)
		return -EPROTO;
	return 0;
}

unsigned int ai_islands_count(const struct drm_tnpu_islands *isl)
{
	return isl->count < DRM_TNPU_MAX_ISLANDS ? isl->count : DRM_TNPU_MAX_ISLANDS;
}

void ai_format_islands_summary(const struct drm_tnpu_islands *isl, char *out, size_t len)
{
	unsigned int n = ai_islands_count(isl);
	char mem[32];

	ai_format_size(isl->ring_mem_bytes, mem, sizeof(mem));
	snprintf(out, len, "%u island%s, %u ring%s per job, ring memory %s", n, n == 1 ? "" : "s",
		 isl->rings, isl->rings == 1 ? "" : "s", mem);
}

void ai_format_island(const struct drm_tnpu_island *is, uint32_t clock_mhz, char *out, size_t len)
{
	char dtypes[96], size[32], clock[32];
	unsigned int last = is->rows ? is->first_row + is->rows - 1 : is->first_row;

	ai_format_dtypes(is->dtypes, dtypes, sizeof(dtypes));
	ai_format_size(is->sram_bytes, size, sizeof(size));
	/* The island clock is CAP_CLOCK / clkdiv (islands-and-chaining.md); 0 would be a driver bug. */
	if (is->clkdiv && clock_mhz)
		snprintf(clock, sizeof(clock), " (%g MHz)", (double)clock_mhz / is->clkdiv);
	else
		clock[0] = '\0';
	snprintf(out, len, "rows %u-%u (%u), %s, clock /%u%s, SRAM 0x%08x + %s", is->first_row, last,
		 is->rows, dtypes, is->clkdiv, clock, is->sram_base, size);
}

void ai_json_islands(struct json_writer *w, const struct drm_tnpu_islands *isl)
{
	char names[128];

	if (!isl) {
		json_null(w, "islands");
		json_null(w, "rings");
		json_null(w, "ring_mem_bytes");
		return;
	}
	json_begin_array(w, "islands");
	for (unsigned int i = 0; i < ai_islands_count(isl); i++) {
		const struct drm_tnpu_island *is = &isl->island[i];

		json_begin_object(w, NULL);
		json_u64(w, "first_row", is->first_row);
		json_u64(w, "rows", is->rows);
		json_begin_array(w, "dtypes");
		ai_format_dtypes(is->dtypes, names, sizeof(names));
		for (char *save = NULL, *tok = strtok_r(names, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save))
			if (strcmp(tok, "none"))
				json_str(w, NULL, tok);
		json_end_array(w);
		json_u64(w, "clkdiv", is->clkdiv);
		json_u64(w, "sram_base", is->sram_base);
		json_u64(w, "sram_bytes", is->sram_bytes);
		json_end_object(w);
	}
	json_end_array(w);
	json_u64(w, "rings", isl->rings);
	json_u64(w, "ring_mem_bytes", isl->ring_mem_bytes);
}
