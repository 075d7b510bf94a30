/* SPDX-License-Identifier: MIT */
/* version.c - the library's run-time version (the header's ACCEL_VERSION_* at the time it was built). */
#include "internal.h"

const char *accel_version(unsigned *num)
{
	if (num)
		*num = ACCEL_VERSION;
	return ACCEL_VERSION_STRING;
}
