// SPDX-License-Identifier: MIT
/* Formatting helpers: sizes, SI rates, link speeds, data types, PCI addresses (format.c, accel_node.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "accel_tools.h"

static const char *size(uint64_t v)
{
	static char buf[32];

	ai_format_size(v, buf, sizeof(buf));
	return buf;
}

Test(format, exact_binary_sizes_have_no_decimals)
{
	cr_assert_str_eq(size(0), "0 B");
	cr_assert_str_eq(size(1023), "1023 B");
	cr_assert_str_eq(size(16384), "16 KiB");
	cr_assert_str_eq(size(1u << 20), "1 MiB");
	cr_assert_str_eq(size(64ull << 20), "64 MiB");
	cr_assert_str_eq(size(1ull << 62), "4 EiB");
}

Test(format, inexact_sizes_round_to_one_decimal_without_overflowing_tenths)
{
	cr_assert_str_eq(size(1536), "1.5 KiB");
	cr_assert_str_eq(size(2047), "2.0 KiB");	/* 1.999 rounds up into the next whole */
	cr_assert_str_eq(size(1025), "1.0 KiB");
	cr_assert_str_eq(size(UINT64_MAX), "16.0 EiB");
}

Test(format, size_truncates_safely_into_a_small_buffer)
{
	char buf[4];

	ai_format_size(16384, buf, sizeof(buf));
	cr_assert_str_eq(buf, "16 ");
}

static const char *si(double v, const char *unit)
{
	static char buf[32];

	ai_format_si(v, unit, buf, sizeof(buf));
	return buf;
}

Test(format, si_prefixes_for_rates)
{
	cr_assert_str_eq(si(4.096e12, "MAC/s"), "4.1 TMAC/s");
	cr_assert_str_eq(si(12, "MAC/s"), "12 MAC/s");
	cr_assert_str_eq(si(12, ""), "12");
	cr_assert_str_eq(si(2.5, ""), "2.5");
	cr_assert_str_eq(si(999.96, "B/s"), "1.0 kB/s");
	cr_assert_str_eq(si(250e6, ""), "250 M");
	cr_assert_str_eq(si(NAN, "B/s"), "-");
}

Test(format, link_speed_codes_and_sysfs_text)
{
	cr_assert_str_eq(ai_link_speed_str(1), "2.5 GT/s");
	cr_assert_str_eq(ai_link_speed_str(4), "16 GT/s");
	cr_assert_str_eq(ai_link_speed_str(0), "unknown");
	cr_assert_str_eq(ai_link_speed_str(99), "unknown");
	cr_assert_eq(ai_link_speed_code("8.0 GT/s PCIe\n"), 3);
	cr_assert_eq(ai_link_speed_code("2.5 GT/s PCIe"), 1);
	cr_assert_eq(ai_link_speed_code("Unknown"), 0);
	cr_assert_eq(ai_link_speed_code(""), 0);
	cr_assert_eq(ai_link_speed_code(NULL), 0);
}

Test(format, data_types_named_and_unknown_bits_shown_in_hex)
{
	char buf[64];

	ai_format_dtypes(DRM_TNPU_DTYPE_INT8 | DRM_TNPU_DTYPE_FP32, buf, sizeof(buf));
	cr_assert_str_eq(buf, "int8 fp32");
	ai_format_dtypes(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "none");
	ai_format_dtypes(DRM_TNPU_DTYPE_FP32 | 0x100, buf, sizeof(buf));
	cr_assert_str_eq(buf, "fp32 0x100");
	ai_format_dtypes(0x80000000u, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0x80000000");
}

Test(format, features_of_the_v1_device)
{
	char buf[160];

	ai_format_features(0x7f, buf, sizeof(buf));
	cr_assert_str_eq(buf, "zero-skip sparse-weights load-balance chained-sfu im2col semaphores dma-fill");
	ai_format_features(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "none");
	ai_format_features(0x300, buf, sizeof(buf));	/* sparse (#8) bits 8, 9 */
	cr_assert_str_eq(buf, "row-busy sparse-counters");
	ai_format_features(0x6000, buf, sizeof(buf));	/* plans (#9) bit 13, line state (#6) bit 14 */
	cr_assert_str_eq(buf, "static-plans line-stream");
	ai_format_features(0x18000, buf, sizeof(buf));	/* vector units (#16) bits 15, 16 */
	cr_assert_str_eq(buf, "vector-units sfu-residual");
	ai_format_features(0x20000, buf, sizeof(buf));	/* wide multicast (#16) bit 17 */
	cr_assert_str_eq(buf, "dw-wide");
	ai_format_features(0x40000, buf, sizeof(buf));	/* per-job counter records: bit 18 */
	cr_assert_str_eq(buf, "job-counters");
	ai_format_features(0x180000, buf, sizeof(buf));	/* SFU QCOL bit 19, VEC QADD bit 20 */
	cr_assert_str_eq(buf, "sfu-qcol vec-qadd");
	ai_format_features(0x200000, buf, sizeof(buf));	/* operand flag CPAIR: bit 21 */
	cr_assert_str_eq(buf, "cluster-pairs");
	ai_format_features(0x400000, buf, sizeof(buf));	/* operand flag WRAP: bit 22 */
	cr_assert_str_eq(buf, "row-wrap");
	ai_format_features(0x800000, buf, sizeof(buf));	/* DMA_DEQ, the weight-decompressing load: bit 23 */
	cr_assert_str_eq(buf, "wdecomp");
	ai_format_features(0x2000000, buf, sizeof(buf));	/* VEC math: bit 25 */
	cr_assert_str_eq(buf, "vec-math");
}

Test(format, class_names)
{
	cr_assert_str_eq(ai_class_name(0x120000), "processing accelerator");
	cr_assert_str_eq(ai_class_name(0x030000), "unexpected class");
}

Test(bdf, long_and_short_forms_normalise_to_the_long_form)
{
	char out[32];

	cr_assert(ai_normalise_bdf("0000:00:01.0", out, sizeof(out)));
	cr_assert_str_eq(out, "0000:00:01.0");
	cr_assert(ai_normalise_bdf("00:1f.3", out, sizeof(out)));
	cr_assert_str_eq(out, "0000:00:1f.3");
	cr_assert(ai_normalise_bdf("10000:AB:1F.7", out, sizeof(out)) == false);
	cr_assert(ai_normalise_bdf("0001:AB:1F.7", out, sizeof(out)));
	cr_assert_str_eq(out, "0001:ab:1f.7");
}

Test(bdf, malformed_addresses_are_rejected)
{
	const char *bad[] = {
		"", "accel0", "/dev/accel/accel0", "00:01", "00:20.0", "00:01.8", "00:100.0",
		" 00:01.0", "00:01.0 ", "-0:01.0", "0x0:01.0", "00:01.0.1", "0000:00:01.0x", "::.",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(ai_is_bdf(bad[i]), "accepted '%s'", bad[i]);
	cr_assert_not(ai_is_bdf(NULL));
}

Test(format, counter_names_follow_enum_tnpu_counter)
{
	cr_assert_str_eq(ai_counter_name(0), "total_cycles");
	cr_assert_str_eq(ai_counter_name(1), "compute_cycles");
	cr_assert_str_eq(ai_counter_name(5), "macs_effective");
	cr_assert_str_eq(ai_counter_name(12), "mmu_faults");
	cr_assert_str_eq(ai_counter_name(17), "store_cycles");
	cr_assert_str_eq(ai_counter_name(18), "row_busy_max");	/* sparse (#8) */
	cr_assert_str_eq(ai_counter_name(21), "lb_macs_moved");
	cr_assert_str_eq(ai_counter_name(22), "ring_rows");	/* chain (#9) */
	cr_assert_str_eq(ai_counter_name(25), "ring_bytes");
	cr_assert_str_eq(ai_counter_name(26), "plan_hits");	/* static plans (#9) */
	cr_assert_str_eq(ai_counter_name(27), "plan_misses");
	cr_assert_str_eq(ai_counter_name(28), "vec_ops");	/* vector units (#16) */
	cr_assert_str_eq(ai_counter_name(29), "vec_cycles");
	cr_assert_null(ai_counter_name(30));
	cr_assert_null(ai_counter_name(31));
}
