/* SPDX-License-Identifier: MIT */
/*
 * device_check.c - the instruction check and the device share by operator (device_check.h).  As
 * onnx-mlir's NNPA backend tests fail a test that claims the accelerator when no accelerator instruction
 * ran, a node whose kernel reported the device (onnx_node_profile.on_device) must show device work:
 * instructions issued, MACs or vector-unit operations in its jobs' counters.  Data movement alone (DMA,
 * commands) is not work: a copy is not an accelerated operator.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device_check.h"

int device_check(const struct onnx_model *m, const struct onnx_node_profile *prof, char *why, size_t wl)
{
	for (unsigned i = 0; i < onnx_model_n_graph_nodes(m); i++) {
		const struct accel_counters *k = &prof[i].counters;
		struct onnx_node_info ni;

		if (!prof[i].ran || !prof[i].on_device || k->instructions || k->macs_effective || k->vec_ops)
			continue;
		onnx_model_node_info(m, i, &ni);
		snprintf(why, wl, "instruction check: node '%s' (%s) claims the device but its jobs show no device work "
			 "(hw_jobs %u, instructions 0, MACs 0, vector ops 0, commands %llu)", ni.name, ni.op,
			 k->hw_jobs, (unsigned long long)k->commands);
		return -EPROTO;
	}
	return 0;
}

struct op_row {
	char op[64];
	unsigned tests, device;
};

struct op_tally {
	struct op_row *row;
	unsigned n, cap, tests, device_tests;
};

struct op_tally *op_tally_new(void)
{
	return calloc(1, sizeof(struct op_tally));
}

static struct op_row *row_of(struct op_tally *t, const char *op)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->row[i].op, op))
			return &t->row[i];
	if (t->n == t->cap) {
		struct op_row *r = realloc(t->row, (t->cap = t->cap ? 2 * t->cap : 64) * sizeof(*r));

		if (!r)
			return NULL;
		t->row = r;
	}
	memset(&t->row[t->n], 0, sizeof(t->row[0]));
	snprintf(t->row[t->n].op, sizeof(t->row[0].op), "%s", op);
	return &t->row[t->n++];
}

void op_tally_add(struct op_tally *t, const struct onnx_model *m, const struct onnx_node_profile *prof)
{
	unsigned n = onnx_model_n_graph_nodes(m);
	bool any = false;

	if (!t)
		return;
	for (unsigned i = 0; i < n; i++)
		any |= prof[i].ran && prof[i].on_device;
	t->tests++;
	t->device_tests += any;
	for (unsigned i = 0; i < n; i++) {	/* each operator once per test */
		struct onnx_node_info ni;
		struct op_row *r;
		bool seen = false, dev = false;

		onnx_model_node_info(m, i, &ni);
		for (unsigned j = 0; j < i && !seen; j++) {
			struct onnx_node_info nj;

			onnx_model_node_info(m, j, &nj);
			seen = !strcmp(nj.op, ni.op);
		}
		if (seen || !(r = row_of(t, ni.op)))
			continue;
		for (unsigned j = i; j < n; j++) {
			struct onnx_node_info nj;

			onnx_model_node_info(m, j, &nj);
			dev |= !strcmp(nj.op, ni.op) && prof[j].ran && prof[j].on_device;
		}
		r->tests++;
		r->device += dev;
	}
}

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct op_row *)a)->op, ((const struct op_row *)b)->op);
}

void op_tally_print(const struct op_tally *t, FILE *out)
{
	if (!t)
		return;
	fprintf(out, "# device share: %u of %u passing tests (%.1f %%) ran at least one node on the device\n",
		t->device_tests, t->tests, t->tests ? 100.0 * t->device_tests / t->tests : 0.0);
	if (t->n)	/* qsort of a NULL array is undefined even for 0 elements */
		qsort(t->row, t->n, sizeof(t->row[0]), row_cmp);
	fprintf(out, "# device share by operator (passing tests with the operator: those where it ran on the device):");
	for (unsigned i = 0; i < t->n; i++)
		fprintf(out, "%s %s %u/%u", i % 6 ? "," : "\n#  ", t->row[i].op, t->row[i].device, t->row[i].tests);
	fprintf(out, "\n");
}

void op_tally_free(struct op_tally *t)
{
	if (t)
		free(t->row);
	free(t);
}
