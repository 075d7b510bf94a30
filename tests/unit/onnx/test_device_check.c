/* SPDX-License-Identifier: MIT */
/*
 * onnx-conformance's instruction check and device share (tools/onnx-conformance/device_check.c, issue 30)
 * on profiles written here: a node that claims the device with no instruction, MAC or vector operation
 * in its counters fails, naming the node; device work passes; the share counts each operator once per
 * test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "builder.h"
#include "device_check.h"

static struct onnx_model *relu_add(struct mb **b)
{
	struct onnx_model *m = NULL;
	char err[256];
	size_t len;
	const uint8_t *buf;
	Onnx__NodeProto *n;

	*b = mb_new(13);
	mb_input(*b, "x");
	n = mb_node(*b, "Relu", "x", "r");
	n->name = "the_relu";
	mb_node(*b, "Add", "r,r", "y");
	mb_output(*b, "y");
	buf = mb_pack(*b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err)), 0, "%s", err);
	return m;
}

Test(device_check, a_device_node_without_device_work_fails_naming_it)
{
	struct onnx_node_profile prof[2] = { { .ran = true, .on_device = true }, { .ran = true } };
	struct mb *b;
	struct onnx_model *m = relu_add(&b);
	char why[512] = "";

	prof[0].counters.hw_jobs = 1;
	prof[0].counters.commands = 3;	/* data movement only */
	cr_expect_eq(device_check(m, prof, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "instruction check: node 'the_relu' (Relu) claims the device but its jobs show no device work"),
		  "%s", why);
	prof[0].counters.instructions = 12;
	cr_expect_eq(device_check(m, prof, why, sizeof(why)), 0, "%s", why);
	prof[0].counters.instructions = 0;
	prof[0].counters.vec_ops = 64;	/* an ISA 2 vector-unit step */
	cr_expect_eq(device_check(m, prof, why, sizeof(why)), 0, "%s", why);
	onnx_model_free(m);
	mb_free(b);
}

Test(device_check, the_share_counts_each_operator_once_per_test)
{
	struct onnx_node_profile dev[2] = { { .ran = true, .on_device = true }, { .ran = true } };
	struct onnx_node_profile host[2] = { { .ran = true }, { .ran = true } };
	struct op_tally *t = op_tally_new();
	struct mb *b;
	struct onnx_model *m = relu_add(&b);
	char out[2048] = "";
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");

	op_tally_add(t, m, dev);
	op_tally_add(t, m, host);
	op_tally_print(t, f);
	fclose(f);
	cr_expect(strstr(out, "# device share: 1 of 2 passing tests (50.0 %) ran at least one node on the device"), "%s", out);
	cr_expect(strstr(out, "Add 0/2") && strstr(out, "Relu 1/2"), "%s", out);
	op_tally_free(t);
	onnx_model_free(m);
	mb_free(b);
}
