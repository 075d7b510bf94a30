/* SPDX-License-Identifier: MIT */
/*
 * plan_mem.c - static memory plan of the compiled graph's activations (see plan_mem.h).  The
 * placement is the classic offline "greedy by size" of TFLite's arena planner and Vela's live-range
 * allocator: big tensors first, each at the lowest gap between the tensors it is live with.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>

#include "plan_mem.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static int by_size_desc(const void *pa, const void *pb, void *ctx)
{
	const struct plan_buf *b = ctx;
	unsigned x = *(const unsigned *)pa, y = *(const unsigned *)pb;

	if (b[x].size != b[y].size)
		return b[x].size < b[y].size ? 1 : -1;
	return (x > y) - (x < y);	/* stable: model order */
}

static int by_offset(const void *pa, const void *pb, void *ctx)
{
	const struct plan_buf *b = ctx;
	unsigned x = *(const unsigned *)pa, y = *(const unsigned *)pb;

	return (b[x].offset > b[y].offset) - (b[x].offset < b[y].offset);
}

static uint64_t lower_bound_of(const struct plan_buf *b, unsigned n, uint64_t align, int last)
{
	uint64_t best = 0;

	for (int s = 0; s <= last; s++) {
		uint64_t live = 0;

		for (unsigned i = 0; i < n; i++)
			if (b[i].size && b[i].start <= s && s <= b[i].end)
				live += align_up(b[i].size, align);
		if (live > best)
			best = live;
	}
	return best;
}

int plan_mem(struct plan_buf *b, unsigned n, uint64_t align, uint64_t *total, uint64_t *lower_bound)
{
	unsigned *order, *placed, n_placed = 0;
	uint64_t top = 0;
	int last = 0;

	if (!align || (align & (align - 1)))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (b[i].start > b[i].end || b[i].start < 0)
			return -EINVAL;
		if (b[i].size > (UINT64_MAX >> 8))
			return -EOVERFLOW;
		if (b[i].end > last)
			last = b[i].end;
		b[i].offset = 0;
	}
	order = calloc(n ? n : 1, sizeof(*order));
	placed = calloc(n ? n : 1, sizeof(*placed));
	if (!order || !placed) {
		free(order);
		free(placed);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_size_desc, b);
	for (unsigned k = 0; k < n; k++) {
		struct plan_buf *t = &b[order[k]];
		uint64_t sz = align_up(t->size, align), off = 0, best = UINT64_MAX, best_gap = UINT64_MAX;

		if (!t->size)
			continue;
		/* placed[] is kept sorted by offset: walk the gaps between the overlapping-in-time ones */
		for (unsigned j = 0; j < n_placed; j++) {
			const struct plan_buf *p = &b[placed[j]];

			if (p->end < t->start || t->end < p->start)
				continue;
			if (p->offset >= off + sz && p->offset - off < best_gap) {
				best = off;
				best_gap = p->offset - off;
			}
			if (align_up(p->offset + p->size, align) > off)
				off = align_up(p->offset + p->size, align);
		}
		t->offset = best != UINT64_MAX ? best : off;
		if (t->offset + sz > top)
			top = t->offset + sz;
		placed[n_placed++] = order[k];
		qsort_r(placed, n_placed, sizeof(*placed), by_offset, b);
	}
	*total = top;
	*lower_bound = lower_bound_of(b, n, align, last);
	free(order);
	free(placed);
	return 0;
}
