/* SPDX-License-Identifier: MIT */
/*
 * What onnx_compile may and may not take from input shapes alone (issue 30, found by running the ONNX
 * backend tests through the compiled path): a shape read from input data is refused, not guessed from
 * the probe's zeros; Dropout is a view only in inference without a mask; reductions over trailing axes,
 * LayerNormalization at any axis and Softmax's pre-13 2-D view are device steps; a host step whose node
 * kernel ran on the device reports it in the profile.  Each compiled result against the CPU reference.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile_check.h"
#include "model_values.h"

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 31;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_compile_shapes, .init = setup, .fini = teardown);

/* Reshape(x, shape) with shape a graph input: compiled from x's shape and the probe's zero shape it ran
 * as a view of the wrong shape (a silent wrong result); now onnx_compile refuses it naming the node, the
 * operand and the graph input, with -EOPNOTSUPP, and onnx_run runs it. */
Test(onnx_compile_shapes, a_shape_from_input_data_is_refused_not_guessed)
{
	static const int64_t xd[3] = {2, 3, 4}, sd[1] = {3}, want[3] = {4, 2, 3};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor in[2], y;
	char err[512] = "";

	mb_input(b, "x");
	mb_input(b, "shape");
	mb_node(b, "Relu", "x", "r");
	mb_node(b, "Reshape", "r,shape", "y");
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&in[0], 3, xd, &rng);
	cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_INT64, 1, sd), 0);
	memcpy(in[1].data, want, sizeof(want));
	cr_assert_eq(onnx_compile(m, dev, in, 2, 0, &cm, err, sizeof(err)), -EOPNOTSUPP, "compile: %s", err);
	cr_assert_null(cm);
	cr_assert(strstr(err, "(Reshape)") && strstr(err, "'shape'") && strstr(err, "graph input 'shape'") &&
			  strstr(err, "data-dependent shape"),
		  "message: %s", err);
	cr_assert_eq(onnx_run(m, dev, in, 2, &y, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(y.ndim, 3);
	cr_assert_eq(memcmp(y.dims, want, sizeof(want)), 0);
	onnx_tensor_release(&y);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	onnx_model_free(m);
}

/* A shape computed from the input *shapes* (Shape -> Reshape) still compiles: only data is refused. */
Test(onnx_compile_shapes, a_shape_from_input_shapes_still_compiles)
{
	static const int64_t xd[3] = {2, 3, 4};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x;
	char err[512] = "";

	mb_input(b, "x");
	mb_input(b, "z");
	mb_node(b, "Shape", "z", "s");
	mb_node(b, "Reshape", "x,s", "y");
	mb_output(b, "y");
	m = cc_load(b);
	{
		static const int64_t zd[3] = {4, 3, 2};
		struct onnx_tensor in[2];

		cc_rand(&in[0], 3, xd, &rng);
		cc_rand(&in[1], 3, zd, &rng);
		cr_assert_eq(onnx_compile(m, dev, in, 2, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		cc_check_against_cpu(cm, in, 2, 1);
		onnx_compiled_free(cm);
		onnx_tensor_release(&in[0]);
		onnx_tensor_release(&in[1]);
	}
	(void)x;
	onnx_model_free(m);
}

/* Dropout with its mask output: the mask (all true in inference) is computed, not left zero as a view's
 * unwritten second output was. */
Test(onnx_compile_shapes, dropout_mask_is_computed)
{
	static const int64_t xd[2] = {3, 5};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x;
	char err[512] = "";

	mb_input(b, "x");
	mb_node(b, "Dropout", "x", "y,mask");
	mb_output(b, "y");
	mb_output(b, "mask");
	m = cc_load(b);
	cc_rand(&x, 2, xd, &rng);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cc_check_against_cpu(cm, &x, 1, 2);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Dropout whose training_mode is a graph input: not a view (which ignored training mode); a run with
 * training_mode true is refused as node by node refuses it. */
Test(onnx_compile_shapes, dropout_training_mode_from_the_run_is_not_ignored)
{
	static const int64_t xd[2] = {3, 5};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor in[3], y;
	char err[512] = "";
	float ratio = 0.5f;

	mb_input(b, "x");
	mb_input(b, "ratio");
	mb_input(b, "training");
	mb_node(b, "Dropout", "x,ratio,training", "y");
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&in[0], 2, xd, &rng);
	cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_FLOAT, 0, NULL), 0);
	memcpy(in[1].data, &ratio, sizeof(ratio));
	cr_assert_eq(onnx_tensor_alloc(&in[2], ONNX_BOOL, 0, NULL), 0);
	*(uint8_t *)in[2].data = 1;
	cr_assert_eq(onnx_compile(m, dev, in, 3, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_neq(cc_kind_of(cm, "y"), CS_ALIAS);
	cr_assert_neq(onnx_compiled_run(cm, in, 3, &y, 1, NULL), 0, "training mode ran as inference");
	cr_assert(strstr(onnx_compiled_error(cm), "training"), "message: %s", onnx_compiled_error(cm));
	onnx_compiled_free(cm);
	for (int i = 0; i < 3; i++)
		onnx_tensor_release(&in[i]);
	onnx_model_free(m);
}

/* op(x[2,3,4,5], axes) as a device reduction step (CS_REDUCE) when the axes are one run (trailing ones,
 * keepdims 0 and 1, negative axes, all axes; a middle run as strided slices), a host step otherwise
 * (axes 1 and 3). */
static void reduce_case(const char *op, const int64_t *axes, unsigned n_axes, int keepdims, bool device)
{
	static const int64_t xd[4] = {2, 3, 4, 5};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x;
	Onnx__NodeProto *n;
	char err[512] = "";

	if (!strcmp(op, "ReduceSum") && n_axes) {
		int64_t ad[1] = {n_axes};

		mb_init(b, "axes", ONNX_INT64, 1, ad, axes);
	}
	mb_input(b, "x");
	mb_node(b, "Relu", "x", "r");
	n = mb_node(b, op, !strcmp(op, "ReduceSum") && n_axes ? "r,axes" : "r", "y");
	if (strcmp(op, "ReduceSum") && n_axes)
		mb_attr_ints(b, n, "axes", axes, n_axes);
	mb_attr_i(b, n, "keepdims", keepdims);
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&x, 4, xd, &rng);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s compile: %s", op, err);
	if (device) /* ReduceMean over H and W is a global pool, over the last axis a GEMM: device too */
		cr_assert(cc_kind_of(cm, "y") == CS_REDUCE ||
				  (!strcmp(op, "ReduceMean") && CS_IS_DEVICE(cc_kind_of(cm, "y"))),
			  "%s: step kind %d", op, cc_kind_of(cm, "y"));
	else
		cr_assert_eq(cc_kind_of(cm, "y"), CS_HOST, "%s: step kind %d", op, cc_kind_of(cm, "y"));
	cc_check_against_cpu(cm, &x, 1, 1);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

Test(onnx_compile_shapes, reductions_over_trailing_axes_are_device_steps)
{
	/* the last six: VEC math (CAP_FEATURES bit 25) */
	static const char *const ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceSumSquare", "ReduceMin",
					  "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"};
	static const int64_t last2[2] = {2, 3}, neg[1] = {-1}, tail3[3] = {-3, 2, 3}, mid[1] = {1};
	static const int64_t mid2[2] = {2, 1}, lead[1] = {0}, gap[2] = {1, 3};

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		reduce_case(ops[i], last2, 2, 1, true);
		reduce_case(ops[i], last2, 2, 0, true);
		reduce_case(ops[i], neg, 1, 0, true);
		reduce_case(ops[i], tail3, 3, 1, true);
		reduce_case(ops[i], NULL, 0, 0, true); /* every axis */
		reduce_case(ops[i], mid, 1, 1, true);  /* 2 slices of 20 x 3 */
		reduce_case(ops[i], mid2, 2, 0, true); /* 2 slices of 5 x 12 */
		reduce_case(ops[i], lead, 1, 0, true); /* 1 slice of 60 x 2 */
		reduce_case(ops[i], gap, 2, 1, false);
	}
}

/* LayerNormalization over axes 1.. of [2,3,4] and Softmax (opset 11) over the 2-D view at axis 1: device
 * steps on the rows x cols matrix; Softmax 13 at a middle axis stays on the host. */
static void rows_case(const char *op, int64_t opset, int64_t axis, bool device)
{
	static const int64_t xd[3] = {2, 3, 4}, gd[2] = {3, 4};
	struct mb *b = mb_new(opset);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x;
	Onnx__NodeProto *n;
	char err[512] = "";
	bool ln = !strcmp(op, "LayerNormalization");

	if (ln) {
		mb_init_rand(b, "g", 3 - (unsigned)axis, gd + axis - 1, &rng);
		mb_init_rand(b, "bias", 3 - (unsigned)axis, gd + axis - 1, &rng);
	}
	mb_input(b, "x");
	mb_node(b, "Relu", "x", "r");
	n = mb_node(b, op, ln ? "r,g,bias" : "r", "y");
	mb_attr_i(b, n, "axis", axis);
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&x, 3, xd, &rng);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s compile: %s", op, err);
	cr_assert_eq(cc_kind_of(cm, "y") == CS_HOST, !device, "%s axis %lld opset %lld: step kind %d", op, (long long)axis,
		     (long long)opset, cc_kind_of(cm, "y"));
	cc_check_against_cpu(cm, &x, 1, 1);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

Test(onnx_compile_shapes, layernorm_at_any_axis_and_softmax_2d_view_are_device_steps)
{
	rows_case("LayerNormalization", 17, 1, true);
	rows_case("LayerNormalization", 17, 2, true);
	rows_case("Softmax", 11, 1, true);
	rows_case("Softmax", 13, 1, false);
	rows_case("Softmax", 13, 2, true);
}

/* A host step whose node kernel runs on the device (a Gemm with alpha, which the plan does not lower)
 * reports the device and its jobs' counters in onnx_compiled_run_profile, as onnx_run_profile does. */
Test(onnx_compile_shapes, profile_reports_node_kernels_on_the_device)
{
	static const int64_t ad[2] = {8, 16}, bd[2] = {16, 8};
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	struct onnx_compiled *cm = NULL;
	struct onnx_node_profile prof[2];
	struct onnx_run_stats st = {0};
	struct onnx_tensor x, y;
	Onnx__NodeProto *n;
	char err[512] = "";

	mb_init_rand(b, "w", 2, bd, &rng);
	mb_input(b, "x");
	n = mb_node(b, "Gemm", "x,w", "y");
	mb_attr_f(b, n, "alpha", 0.5f);
	mb_output(b, "y");
	m = cc_load(b);
	cc_rand(&x, 2, ad, &rng);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run_profile(cm, &x, 1, &y, 1, &st, prof), 0, "%s", onnx_compiled_error(cm));
	if (cc_kind_of(cm, "y") == CS_HOST) {
		cr_assert(prof[0].ran);
		cr_assert(prof[0].on_device, "the node kernel ran on the device, the profile says host");
		cr_assert_gt(prof[0].counters.macs_effective, 0);
		cr_assert_eq(prof[0].counters.macs_effective, st.counters.macs_effective);
	} else {
		cr_assert(prof[0].on_device && prof[0].counters.macs_effective > 0);
	}
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* A compiled-model file with reduction steps (each op) opens on its own and runs as the plan it saved. */
Test(onnx_compile_shapes, reduction_steps_survive_a_compiled_file)
{
	static const char *const ops[] = {"ReduceSum", "ReduceMax", "ReduceSumSquare"};
	static const int64_t xd[3] = {4, 6, 8}, ad[1] = {1}, axes[1] = {-1};
	char path[] = "/tmp/tnpu-reduce-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (unsigned i = 0; i < 3; i++) {
		struct mb *b = mb_new(13);
		struct onnx_model *m;
		struct onnx_compiled *cm = NULL, *cm2 = NULL;
		struct onnx_tensor x, y1, y2;
		Onnx__NodeProto *n;
		char err[512] = "";

		if (!i)
			mb_init(b, "axes", ONNX_INT64, 1, ad, axes);
		mb_input(b, "x");
		n = mb_node(b, ops[i], i ? "x" : "x,axes", "y");
		if (i)
			mb_attr_ints(b, n, "axes", axes, 1);
		mb_output(b, "y");
		m = cc_load(b);
		cc_rand(&x, 3, xd, &rng);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		cr_assert_eq(cc_kind_of(cm, "y"), CS_REDUCE);
		cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "save: %s", err);
		cr_assert_eq(onnx_compiled_open(dev, path, &cm2, err, sizeof(err)), 0, "%s: open: %s", ops[i], err);
		cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y1, 1, NULL), 0);
		cr_assert_eq(onnx_compiled_run(cm2, &x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(cm2));
		cr_assert_eq(y1.count, y2.count);
		cr_assert_eq(memcmp(y1.data, y2.data, y1.count * 4), 0, "%s: the opened file's run differs", ops[i]);
		onnx_tensor_release(&y1);
		onnx_tensor_release(&y2);
		onnx_compiled_free(cm2);
		onnx_compiled_free(cm);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
	unlink(path);
}
