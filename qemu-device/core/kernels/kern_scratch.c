/* SPDX-License-Identifier: MIT */
/*
 * Per-thread packing scratch.  The model runs one thread per device queue,
 * so a thread-local buffer needs no locking; it only grows (to the largest
 * block ever packed, bounded by the variants' MC/KC/NC) and is reused, so
 * the steady state never allocates.
 */
#include <stdlib.h>

#include "kern_internal.h"

static _Thread_local void *scratch_buf;
static _Thread_local size_t scratch_cap;

void *kern_scratch(size_t bytes)
{
	if (bytes <= scratch_cap)
		return scratch_buf;
	/* Round up so aligned_alloc's size is a multiple of the alignment and
	 * slightly larger follow-up requests do not reallocate. */
	size_t cap = (bytes + 65535) & ~(size_t)65535;
	void *p = aligned_alloc(64, cap);
	if (!p)
		return NULL;
	free(scratch_buf);
	scratch_buf = p;
	scratch_cap = cap;
	return p;
}

void tnpu_kern_release_scratch(void)
{
	free(scratch_buf);
	scratch_buf = NULL;
	scratch_cap = 0;
}
