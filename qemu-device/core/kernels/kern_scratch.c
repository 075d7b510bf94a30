/* SPDX-License-Identifier: MIT */
/*
 * Per-thread packing scratch.  The model runs one thread per device queue,
 * so a thread-local buffer needs no locking; it only grows (to the largest
 * block ever packed, bounded by the variants' MC/KC/NC) and is reused, so
 * the steady state never allocates.
 *
 * A thread that exits without tnpu_kern_release_scratch() gets its scratch
 * freed by a pthread key destructor: libaccel's sim backend runs jobs on its
 * callers' threads (libtnpu-onnx's threads, an application's), and those
 * threads cannot be asked to call into the golden model before they exit.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kern_internal.h"

static _Thread_local void *scratch_buf;
static _Thread_local size_t scratch_cap;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

/* At thread exit, on the exiting thread (its _Thread_local storage is still valid): a later
 * kern_scratch() from another key's destructor allocates afresh instead of reusing freed memory. */
static void scratch_at_exit(void *p)
{
	free(p);
	if (p == scratch_buf) {
		scratch_buf = NULL;
		scratch_cap = 0;
	}
}

static void scratch_key_create(void)
{
	scratch_key_ok = !pthread_key_create(&scratch_key, scratch_at_exit);
}

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
	pthread_once(&scratch_once, scratch_key_create);
	/* without a key (none left) the scratch stays what it was before: kept until the thread exits */
	if (scratch_key_ok && pthread_setspecific(scratch_key, p)) {
		free(p);
		return NULL;	/* the caller falls back to the _ref loops */
	}
	free(scratch_buf);
	scratch_buf = p;
	scratch_cap = cap;
	return p;
}

void tnpu_kern_release_scratch(void)
{
	if (scratch_key_ok)
		pthread_setspecific(scratch_key, NULL);
	free(scratch_buf);
	scratch_buf = NULL;
	scratch_cap = 0;
}
