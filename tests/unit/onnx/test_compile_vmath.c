/* SPDX-License-Identifier: MIT */
/*
 * The ONNX operators VEC math (CAP_FEATURES bit 25, issue #30) moves onto the device in a compiled plan:
 * Log, Sqrt, Abs, Neg, Floor, Ceil, Round, Sign, Reciprocal, LeakyRelu, Elu, Selu, ThresholdedRelu,
 * Softplus, Softsign (activation steps with their attributes), Div of two activations and PRelu
 * (element-wise steps with broadcast), LogSoftmax (a rows step at any axis before opset 13).  Each is a
 * device step on a device with the bit and a host step on one without it (sim:vecmath=off), with the
 * same results as the CPU reference either way.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "compile_check.h"

static uint32_t rng = 77;

/* Compile m for x on dev_path; the kind of the step writing "y"; the outputs against the CPU. */
static int compile_kind(struct onnx_model *m, const char *dev_path, struct onnx_tensor *in, unsigned n_in)
{
	struct accel_dev *dev = NULL;
	struct onnx_compiled *cm = NULL;
	char err[512] = "";
	int kind;

	cr_assert_eq(accel_open(dev_path, &dev), 0);
	cr_assert_eq(onnx_compile(m, dev, in, n_in, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	kind = cc_kind_of(cm, "y");
	cc_check_against_cpu(cm, in, n_in, 1);
	onnx_compiled_free(cm);
	accel_close(dev);
	return kind;
}

/* op(Relu-free input x) with attributes, on both devices. */
static void unary_case(const char *op, const char *attr, float val, float x_scale, float x_bias)
{
	static const int64_t xd[3] = {2, 7, 9};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_tensor x;
	Onnx__NodeProto *n;
	int k;

	mb_input(b, "x");
	mb_node(b, "Add", "x,x", "t");	/* an activation (a graph input alone is not a device operand) */
	n = mb_node(b, op, "t", "y");
	if (attr)
		mb_attr_f(b, n, attr, val);
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&x, 3, xd, &rng);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = ((float *)x.data)[i] * x_scale + x_bias;
	/* Neg was already a device step (a multiply by -1, compile_rownorm.c); Reciprocal is ISA 2's RECIP */
	k = compile_kind(m, "sim", &x, 1);
	cr_assert(!strcmp(op, "Neg") ? CS_IS_DEVICE(k) : k == CS_ACT, "%s: step kind %d", op, k);
	k = compile_kind(m, "sim:vecmath=off", &x, 1);
	cr_assert(!strcmp(op, "Neg") ? CS_IS_DEVICE(k) : k == (!strcmp(op, "Reciprocal") ? CS_ACT : CS_HOST),
		  "%s without VEC math: step kind %d", op, k);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

Test(onnx_compile_vmath, unary_functions_are_device_steps)
{
	/* mb_frand is uniform in [-1, 1): Log and Sqrt of 2x + 2.5 > 0, Round/Floor/Ceil of 4x spans integers */
	unary_case("Log", NULL, 0, 1.0f, 1.25f);
	unary_case("Sqrt", NULL, 0, 1.0f, 1.25f);
	unary_case("Reciprocal", NULL, 0, 1.0f, 1.25f);
	unary_case("Abs", NULL, 0, 1.0f, 0.0f);
	unary_case("Neg", NULL, 0, 1.0f, 0.0f);
	unary_case("Floor", NULL, 0, 4.0f, 0.0f);
	unary_case("Ceil", NULL, 0, 4.0f, 0.0f);
	unary_case("Round", NULL, 0, 4.0f, 0.0f);
	unary_case("Sign", NULL, 0, 1.0f, 0.0f);
	unary_case("LeakyRelu", "alpha", 0.2f, 1.0f, 0.0f);
	unary_case("LeakyRelu", NULL, 0, 1.0f, 0.0f);	/* default alpha 0.01 */
	unary_case("Elu", "alpha", 0.7f, 2.0f, 0.0f);
	unary_case("Selu", NULL, 0, 2.0f, 0.0f);
	unary_case("ThresholdedRelu", "alpha", 0.5f, 1.0f, 0.0f);
	unary_case("Softplus", NULL, 0, 8.0f, 0.0f);
	unary_case("Softsign", NULL, 0, 8.0f, 0.0f);
}

/* Div(t, v) and Pow(t, v) of two activations (v broadcast per channel; t < 0 at a non-integer exponent:
 * NaN as the CPU's powf), and PRelu(t, slope[C,1,1]) a constant slope. */
Test(onnx_compile_vmath, div_of_activations_and_prelu_are_elementwise_steps)
{
	static const int64_t xd[4] = {2, 3, 4, 5}, ud[4] = {1, 3, 1, 1}, sd[3] = {3, 1, 1};
	static const float slope[3] = {0.1f, -0.5f, 2.0f};
	struct onnx_tensor in[2];

	for (int prelu = 0; prelu < 3; prelu++) {	/* 0 Div, 1 PRelu, 2 Pow */
		struct mb *b = mb_new(13);
		struct onnx_model *m;
		int k;

		mb_input(b, "x");
		if (prelu == 1) {
			mb_init(b, "slope", ONNX_FLOAT, 3, sd, slope);
			mb_node(b, "Add", "x,x", "t");
			mb_node(b, "PRelu", "t,slope", "y");
		} else {
			mb_input(b, "u");
			mb_node(b, "Add", "x,x", "t");
			mb_node(b, "Sigmoid", "u", "v");	/* > 0: no division by zero */
			mb_node(b, prelu ? "Pow" : "Div", "t,v", "y");
		}
		mb_output(b, "y");
		m = cc_load(b);
		cc_rand(&in[0], 4, xd, &rng);
		cc_rand(&in[1], 4, ud, &rng);
		k = compile_kind(m, "sim", in, prelu == 1 ? 1 : 2);
		cr_assert_eq(k, CS_ELT, "case %d: step kind %d", prelu, k);
		k = compile_kind(m, "sim:vecmath=off", in, prelu == 1 ? 1 : 2);
		cr_assert_eq(k, CS_HOST, "case %d without VEC math: step kind %d", prelu, k);
		onnx_tensor_release(&in[0]);
		onnx_tensor_release(&in[1]);
		onnx_model_free(m);
	}
}

/* LogSoftmax over the last axis (opset 13) and over the 2-D view at axis 1 (opset 11), with inputs
 * spanning 120 (where log(softmax) would underflow to -inf). */
Test(onnx_compile_vmath, log_softmax_is_a_rows_step)
{
	static const int64_t xd[3] = {3, 4, 6};

	for (int opset = 11; opset <= 13; opset += 2) {
		struct mb *b = mb_new(opset);
		struct onnx_model *m;
		struct onnx_tensor x;
		Onnx__NodeProto *n;
		int k;

		mb_input(b, "x");
		mb_node(b, "Add", "x,x", "t");
		n = mb_node(b, "LogSoftmax", "t", "y");
		if (opset == 11)
			mb_attr_i(b, n, "axis", 1);
		mb_output(b, "y");
		m = cc_load(b);
		cc_rand(&x, 3, xd, &rng);
		for (size_t i = 0; i < x.count; i += 5)
			((float *)x.data)[i] = -60.0f;
		k = compile_kind(m, "sim", &x, 1);
		cr_assert_eq(k, CS_SOFTMAX, "opset %d: step kind %d", opset, k);
		k = compile_kind(m, "sim:vecmath=off", &x, 1);
		cr_assert_eq(k, CS_HOST, "opset %d without VEC math: step kind %d", opset, k);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}
