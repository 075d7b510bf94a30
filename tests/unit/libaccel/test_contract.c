/* SPDX-License-Identifier: MIT */
/* The API contract of accel.h: version, errno names, aliasing, accel_close with live objects, and a
 * message on every error path. */
#include "common.h"

Test(contract, version_matches_the_header)
{
	unsigned num = 0;
	const char *v = accel_version(&num);
	char want[32];

	cr_assert_str_eq(v, ACCEL_VERSION_STRING);
	cr_assert_eq(num, (unsigned)ACCEL_VERSION);
	snprintf(want, sizeof(want), "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
	cr_assert_str_eq(v, want);
	cr_assert_str_eq(accel_version(NULL), v);
	cr_assert(ACCEL_VERSION >= ACCEL_MKVERSION(0, 1, 0));
}
