/* SPDX-License-Identifier: MIT */
/*
 * plan_mem.h - the compiler's buffer-liveness planner: tensors with live ranges [start, end] (step
 * indices, inclusive) get byte offsets in one arena so that tensors live at the same step never
 * overlap.  Independent of ONNX (unit-tested on its own: tests/unit/onnx).
 */
#ifndef TNPU_ONNX_PLAN_MEM_H
#define TNPU_ONNX_PLAN_MEM_H

#include <stdint.h>

struct plan_buf {
	uint64_t size;		/* bytes (0: not placed, offset 0) */
	int start, end;		/* first and last step it is live, start <= end */
	uint64_t offset;	/* out: byte offset in the arena */
};

/*
 * Greedy best-fit by decreasing size: each tensor goes to the lowest aligned offset that overlaps no
 * placed tensor whose live range intersects its own.  total gets the arena size, lower_bound the
 * largest sum of (aligned) sizes live at one step: no plan can be smaller.  -EINVAL on a bad range,
 * -ENOMEM when out of memory, -EOVERFLOW when the sizes overflow.
 */
int plan_mem(struct plan_buf *b, unsigned n, uint64_t align, uint64_t *total, uint64_t *lower_bound);

#endif /* TNPU_ONNX_PLAN_MEM_H */
