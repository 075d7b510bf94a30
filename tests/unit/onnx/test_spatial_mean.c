/* SPDX-License-Identifier: MIT */
/*
 * ReduceMean over H and W (torchvision's x.mean([2, 3]): ShuffleNetV2's head) compiled as a global
 * average pool (onnx/src/compile/compile_lower.c), so the convolution before it keeps its NHWC output.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"
#include "model_values.h"

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 99;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_spatial_mean, .init = setup, .fini = teardown);

/* x[1,16,7,7] -> Conv3x3(40, pad 1) -> Relu -> ReduceMean(axes) -> [Flatten if keepdims] -> Gemm(10). */
static struct onnx_model *head_model(const int64_t *axes, int keepdims)
{
	static const int64_t wd[4] = { 40, 16, 3, 3 }, gd[2] = { 10, 40 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_init_rand(b, "w", 4, wd, &rng);
	mb_init_rand(b, "g", 2, gd, &rng);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "r");
	n = mb_node(b, "ReduceMean", "r", "mean");
	mb_attr_ints(b, n, "axes", axes, 2);
	mb_attr_i(b, n, "keepdims", keepdims);
	if (keepdims)
		mb_node(b, "Flatten", "mean", "f");
	n = mb_node(b, "Gemm", keepdims ? "f,g" : "mean,g", "y");
	mb_attr_i(b, n, "transB", 1);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* The ReduceMean is a device pooling step, not a host step, and the convolution's output stays NHWC
 * (a regression: ShuffleNetV2's head ran node by node, its 7x7x1024 input stored transposed); every
 * output is the CPU reference's.  keepdims 0 and 1, axes {2, 3} and {-1, -2}. */
Test(onnx_spatial_mean, reduce_mean_over_h_and_w_is_an_nhwc_global_pool)
{
	static const int64_t xd[4] = { 1, 16, 7, 7 }, a23[2] = { 2, 3 }, a_neg[2] = { -1, -2 };

	for (int variant = 0; variant < 3; variant++) {
		struct onnx_model *m = head_model(variant == 2 ? a_neg : a23, variant != 1);
		struct onnx_compiled *cm = NULL;
		struct onnx_tensor x, y, ref;
		char err[512] = "";
		int mean = value_index(m, "mean");

		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = mb_frand(&rng);
		cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		for (unsigned i = 0; i < cm->n_steps; i++)
			if (cm->steps[i].out == mean)
				cr_assert_eq(cm->steps[i].kind, CS_POOL, "variant %d: the ReduceMean is step kind %d",
					     variant, cm->steps[i].kind);
		cr_assert_eq(cm->vals[value_index(m, "r")].nhwc, 1, "variant %d: the conv output went NCHW", variant);
		cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
		cr_assert_eq(y.count, ref.count);
		for (size_t i = 0; i < ref.count; i++) {
			float g = ((const float *)y.data)[i], r = ((const float *)ref.data)[i];

			cr_assert(fabsf(g - r) <= 1e-4f + 1e-3f * fabsf(r), "variant %d: y[%zu] = %g, CPU reference %g",
				  variant, i, g, r);
		}
		onnx_tensor_release(&y);
		onnx_compiled_free(cm);
		onnx_tensor_release(&ref);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* A ReduceMean over other axes keeps its old lowering (here: over C and H, a host step). */
Test(onnx_spatial_mean, reduce_mean_over_other_axes_is_not_a_pool)
{
	static const int64_t xd[4] = { 1, 16, 7, 7 }, a12[2] = { 1, 2 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y, ref;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_input(b, "x");
	mb_node(b, "Relu", "x", "r");
	n = mb_node(b, "ReduceMean", "r", "y");
	mb_attr_ints(b, n, "axes", a12, 2);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = mb_frand(&rng);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	for (unsigned i = 0; i < cm->n_steps; i++)
		cr_assert_neq(cm->steps[i].kind, CS_POOL);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
	cr_assert_eq(y.count, ref.count);
	for (size_t i = 0; i < ref.count; i++)
		cr_assert(fabsf(((const float *)y.data)[i] - ((const float *)ref.data)[i]) <= 1e-5f);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}
