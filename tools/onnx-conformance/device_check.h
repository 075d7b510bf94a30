/* SPDX-License-Identifier: MIT */
/*
 * device_check.h - onnx-conformance's proof of placement (issue 30): the instruction check (a node that
 * claims the device must show device work in its jobs' counters) and the share of passing tests with a
 * device node, by operator.
 */
#ifndef ONNX_CONFORMANCE_DEVICE_CHECK_H
#define ONNX_CONFORMANCE_DEVICE_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "tnpu_onnx.h"

/* 0 when every node prof[] says ran on the device shows instructions, MACs or vector operations in its
 * counters; else -EPROTO and why names the first node that does not. */
int device_check(const struct onnx_model *m, const struct onnx_node_profile *prof, char *why, size_t wl);

/* Per-operator tally over the passing tests. */
struct op_tally;
struct op_tally *op_tally_new(void);
/* A passing test: which operators its graph has and which of them ran on the device. */
void op_tally_add(struct op_tally *t, const struct onnx_model *m, const struct onnx_node_profile *prof);
/* "# device share: ..." lines: overall, then by operator (tests with it, tests where it ran on the device). */
void op_tally_print(const struct op_tally *t, FILE *out);
void op_tally_free(struct op_tally *t);

#endif
