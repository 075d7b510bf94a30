/* SPDX-License-Identifier: MIT */
/*
 * The layout pass (onnx/src/compile/compile_layout.c) on a SqueezeNet fire module: an in-place Concat of
 * convolution outputs along the channels stays NHWC (each convolution writes its channel slice of
 * every pixel), and the compiled run is the CPU reference's, also after a save/load round trip.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"
#include "model_values.h"

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 4242;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_layout_concat, .init = setup, .fini = teardown);

static void expect_equal_close(const struct onnx_tensor *got, const struct onnx_tensor *ref)
{
	cr_assert_eq(got->count, ref->count);
	for (size_t i = 0; i < ref->count; i++) {
		float g = ((const float *)got->data)[i], r = ((const float *)ref->data)[i];

		cr_assert(fabsf(g - r) <= 1e-4f + 1e-3f * fabsf(r), "y[%zu] = %g, CPU reference %g", i, g, r);
	}
}

/*
 * x[1,24,14,14] -> MaxPool 2 -> squeeze Conv1x1(8)+Relu -> expand Conv1x1(e1)+Relu and Conv3x3(12,
 * pad 1)+Relu -> Concat(axis 1) -> then (variant 0) a MaxPool 3/2 and a Conv1x1(8), or (variant 1) a
 * second fire module whose Concat is the output's Conv1x1 input.  Channel counts are odd-sized on
 * purpose (e1 = 10: slices not multiples of the PE width).
 */
static void fire(struct mb *b, const char *in, const char *tag, int64_t cin)
{
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	char w[5][32], o[6][32], ins[96];
	int64_t sd[4] = { 8, cin, 1, 1 }, e1d[4] = { 10, 8, 1, 1 }, e3d[4] = { 12, 8, 3, 3 };
	static const char *const names[6] = { "s", "sr", "e1", "e1r", "e3", "e3r" };
	int64_t bs[1] = { 8 }, b1[1] = { 10 };
	Onnx__NodeProto *n;

	for (int i = 0; i < 5; i++)
		snprintf(w[i], sizeof(w[i]), "%s_w%d", tag, i);
	for (int i = 0; i < 6; i++)
		snprintf(o[i], sizeof(o[i]), "%s_%s", tag, names[i]);
	mb_init_rand(b, w[0], 4, sd, &rng);
	mb_init_rand(b, w[1], 1, bs, &rng);
	mb_init_rand(b, w[2], 4, e1d, &rng);
	mb_init_rand(b, w[3], 1, b1, &rng);
	mb_init_rand(b, w[4], 4, e3d, &rng);
	snprintf(ins, sizeof(ins), "%s,%s,%s", in, w[0], w[1]);
	mb_node(b, "Conv", ins, o[0]);
	mb_node(b, "Relu", o[0], o[1]);
	snprintf(ins, sizeof(ins), "%s,%s,%s", o[1], w[2], w[3]);
	mb_node(b, "Conv", ins, o[2]);
	mb_node(b, "Relu", o[2], o[3]);
	snprintf(ins, sizeof(ins), "%s,%s", o[1], w[4]);
	n = mb_node(b, "Conv", ins, o[4]);
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", o[4], o[5]);
	snprintf(ins, sizeof(ins), "%s,%s", o[3], o[5]);
	n = mb_node(b, "Concat", ins, tag);
	mb_attr_i(b, n, "axis", 1);
}

static struct onnx_model *fire_model(int variant)
{
	static const int64_t k2[2] = { 2, 2 }, k3[2] = { 3, 3 }, wyd[4] = { 8, 22, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_input(b, "x");
	n = mb_node(b, "MaxPool", "x", "p");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	fire(b, "p", "f1", 24);
	mb_init_rand(b, "wy", 4, wyd, &rng);
	if (variant == 0) {
		n = mb_node(b, "MaxPool", "f1", "q");
		mb_attr_ints(b, n, "kernel_shape", k3, 2);
		mb_attr_ints(b, n, "strides", k2, 2);
		mb_attr_i(b, n, "ceil_mode", 1);
		mb_node(b, "Conv", "q,wy", "y");
	} else {
		fire(b, "f1", "f2", 22);
		mb_node(b, "Conv", "f2,wy", "y");
	}
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static uint64_t run_cycles(struct onnx_model *m, unsigned flags, const struct onnx_tensor *x,
			   const struct onnx_tensor *ref)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_run_stats st;
	struct onnx_tensor y;
	char err[512] = "";

	cr_assert_eq(onnx_compile(m, dev, x, 1, flags, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, x, 1, &y, 1, &st), 0, "run: %s", onnx_compiled_error(cm));
	expect_equal_close(&y, ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	return st.counters.total_cycles;
}

/*
 * The expansions write their channel slices of the NHWC Concat in place (a regression: a Concat's
 * parts and result were always NCHW, so every fire module stored its expansions transposed, one
 * element per DMA cycle: SqueezeNet ran at 0.17 of the array).  Zero-copy still: the Concat runs no
 * step.  Faster than the all-NCHW plan, equal to the CPU reference.
 */
Test(onnx_layout_concat, fire_module_concat_stays_nhwc_in_place)
{
	static const int64_t xd[4] = { 1, 24, 14, 14 };

	for (int variant = 0; variant < 2; variant++) {
		struct onnx_model *m = fire_model(variant);
		struct onnx_compiled *cm = NULL;
		struct onnx_tensor x, y, ref;
		char err[512] = "";
		uint64_t nhwc, nchw;
		const char *nhwc_vals[] = { "f1", "f1_e1r", "f1_e3r", "f1_sr", "f2", "f2_e1r", "f2_e3r" };

		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = mb_frand(&rng);
		cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		for (unsigned i = 0; i < (variant ? 7u : 4u); i++)
			cr_assert_eq(cm->vals[value_index(m, nhwc_vals[i])].nhwc, 1, "variant %d: '%s' went NCHW",
				     variant, nhwc_vals[i]);
		for (unsigned i = 0; i < cm->n_steps; i++)
			if (m->nodes[cm->steps[i].node].op == OP_CONCAT)
				cr_assert_eq(cm->steps[i].kind, CS_ALIAS, "variant %d: the Concat is not zero-copy", variant);
		/* the 3x3 expansion's slice starts after the 10 channels of the 1x1 one */
		cr_assert_eq(cm->vals[value_index(m, "f1_e3r")].root, value_index(m, "f1"));
		cr_assert_eq(cm->vals[value_index(m, "f1_e3r")].voff, 10 * 4);
		cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
		expect_equal_close(&y, &ref);
		onnx_tensor_release(&y);
		onnx_compiled_free(cm);
		nhwc = run_cycles(m, 0, &x, &ref);
		nchw = run_cycles(m, ONNX_COMPILE_NCHW, &x, &ref);
		cr_assert_lt(nhwc, nchw, "variant %d: NHWC plan %llu cycles, NCHW plan %llu", variant,
			     (unsigned long long)nhwc, (unsigned long long)nchw);
		onnx_tensor_release(&ref);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* The compiled-model file keeps the parts' NHWC offsets: a saved plan reopens and runs the same. */
Test(onnx_layout_concat, nhwc_concat_plan_survives_save_and_load)
{
	static const int64_t xd[4] = { 1, 24, 14, 14 };
	struct onnx_model *m = fire_model(1);
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y, ref;
	char err[512] = "", path[] = "/tmp/tnpu-fire-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = mb_frand(&rng);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	onnx_compiled_free(cm);
	cm = NULL;
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, path, &cm, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(cm->vals[value_index(m, "f2")].nhwc, 1);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}
