// SPDX-License-Identifier: MIT
/* accel-info's island table (tools/accel-info/islands.c): text lines and the JSON members. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "accel_tools.h"
#include "json.h"

/* What tnpu.ko answers for a device without the ISLANDS feature: 4 rows of 256 KiB, all data types. */
static const struct drm_tnpu_islands one_island = {
	.count = 1,
	.island[0] = { .first_row = 0, .rows = 4, .clkdiv = 1, .dtypes = 0x7, .sram_base = 0,
		       .sram_bytes = 4 * 262144 },
};

/* islands=2:i8/2:all:2 on a 4-row device with 256 KiB per row, 4 rings, 64 KiB ring memory. */
static const struct drm_tnpu_islands two_islands = {
	.count = 2,
	.rings = 4,
	.ring_mem_bytes = 65536,
	.island[0] = { .first_row = 0, .rows = 2, .clkdiv = 1, .dtypes = DRM_TNPU_DTYPE_INT8,
		       .sram_base = 0, .sram_bytes = 2 * 262144 },
	.island[1] = { .first_row = 2, .rows = 2, .clkdiv = 2, .dtypes = 0x7,
		       .sram_base = 2 * 262144, .sram_bytes = 2 * 262144 },
};

static char *json_of(const struct drm_tnpu_islands *isl)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	struct json_writer w;

	cr_assert_not_null(f);
	json_init(&w, f);
	json_begin_object(&w, NULL);
	ai_json_islands(&w, isl);
	json_end_object(&w);
	fclose(f);
	return buf;
}

Test(islands, default_device_summary_is_one_island_without_rings)
{
	char buf[128];

	ai_format_islands_summary(&one_island, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1 island, 0 rings per job, ring memory 0 B");
}

Test(islands, default_island_line_covers_every_row_and_dtype_at_full_clock)
{
	char buf[160];

	ai_format_island(&one_island.island[0], 1000, buf, sizeof(buf));
	cr_assert_str_eq(buf, "rows 0-3 (4), int8 fp32 bf16, clock /1 (1000 MHz), SRAM 0x00000000 + 1 MiB");
}

Test(islands, divided_clock_and_window_of_the_second_island)
{
	char buf[160];

	ai_format_islands_summary(&two_islands, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2 islands, 4 rings per job, ring memory 64 KiB");
	ai_format_island(&two_islands.island[0], 500, buf, sizeof(buf));
	cr_assert_str_eq(buf, "rows 0-1 (2), int8, clock /1 (500 MHz), SRAM 0x00000000 + 512 KiB");
	ai_format_island(&two_islands.island[1], 500, buf, sizeof(buf));
	cr_assert_str_eq(buf, "rows 2-3 (2), int8 fp32 bf16, clock /2 (250 MHz), SRAM 0x00080000 + 512 KiB");
}

Test(islands, unknown_clock_omits_the_frequency)
{
	char buf[160];

	ai_format_island(&two_islands.island[1], 0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "rows 2-3 (2), int8 fp32 bf16, clock /2, SRAM 0x00080000 + 512 KiB");
}

Test(islands, json_default_device_has_one_island_of_all_dtypes)
{
	char *s = json_of(&one_island);

	cr_assert_str_eq(s, "{\"islands\":[{\"first_row\":0,\"rows\":4,"
			    "\"dtypes\":[\"int8\",\"fp32\",\"bf16\"],\"clkdiv\":1,\"sram_base\":0,"
			    "\"sram_bytes\":1048576}],\"rings\":0,\"ring_mem_bytes\":0}");
	free(s);
}

Test(islands, json_lists_every_island_in_order)
{
	char *s = json_of(&two_islands);

	cr_assert_str_eq(s, "{\"islands\":[{\"first_row\":0,\"rows\":2,\"dtypes\":[\"int8\"],\"clkdiv\":1,"
			    "\"sram_base\":0,\"sram_bytes\":524288},{\"first_row\":2,\"rows\":2,"
			    "\"dtypes\":[\"int8\",\"fp32\",\"bf16\"],\"clkdiv\":2,\"sram_base\":524288,"
			    "\"sram_bytes\":524288}],\"rings\":4,\"ring_mem_bytes\":65536}");
	free(s);
}

Test(islands, json_without_an_answer_is_null_not_omitted)
{
	char *s = json_of(NULL);

	cr_assert_str_eq(s, "{\"islands\":null,\"rings\":null,\"ring_mem_bytes\":null}");
	free(s);
}

Test(islands, a_count_beyond_the_struct_is_capped)
{
	struct drm_tnpu_islands isl = { .count = 200 };
	char buf[128];

	cr_assert_eq(ai_islands_count(&isl), DRM_TNPU_MAX_ISLANDS);
	ai_format_islands_summary(&isl, buf, sizeof(buf));
	cr_assert_str_eq(buf, "8 islands, 0 rings per job, ring memory 0 B");
}

Test(islands, unknown_dtype_bits_are_shown_in_hex_and_no_dtype_gives_an_empty_array)
{
	struct drm_tnpu_islands isl = {
		.count = 2,
		.island[0] = { .rows = 1, .clkdiv = 1, .dtypes = DRM_TNPU_DTYPE_FP32 | 0x80 },
		.island[1] = { .first_row = 1, .rows = 1, .clkdiv = 1, .dtypes = 0 },
	};
	char *s = json_of(&isl);

	cr_assert(strstr(s, "\"dtypes\":[\"fp32\",\"0x80\"]"), "%s", s);
	cr_assert(strstr(s, "\"dtypes\":[]"), "%s", s);
	free(s);
}
