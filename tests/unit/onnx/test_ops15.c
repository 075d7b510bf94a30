/* SPDX-License-Identifier: MIT */
/*
 * The operators of issue 15 at their edge cases, on the CPU reference and on the sim device.  Expected
 * values are the ONNX specification's (its examples and numpy formulas, worked by hand in the comments)
 * or computed here with libm from the specification's formula, never by the importer's kernels.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"

static struct accel_dev *dev;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_ops15, .init = setup, .fini = teardown);

static void tin(struct onnx_tensor *t, enum onnx_dtype dt, unsigned nd, const int64_t *dims, const double *v)
{
	cr_assert_eq(onnx_tensor_alloc(t, dt, nd, dims), 0);
	for (size_t i = 0; i < t->count; i++) {
		switch (dt) {
		case ONNX_FLOAT:
			((float *)t->data)[i] = (float)v[i];
			break;
		case ONNX_INT64:
			((int64_t *)t->data)[i] = (int64_t)v[i];
			break;
		case ONNX_INT32:
			((int32_t *)t->data)[i] = (int32_t)v[i];
			break;
		case ONNX_INT8:
			((int8_t *)t->data)[i] = (int8_t)v[i];
			break;
		default:
			((uint8_t *)t->data)[i] = (uint8_t)v[i];
		}
	}
}

static double tget(const struct onnx_tensor *t, size_t i)
{
	switch (t->dtype) {
	case ONNX_FLOAT:
		return ((const float *)t->data)[i];
	case ONNX_INT64:
		return (double)((const int64_t *)t->data)[i];
	case ONNX_INT32:
		return ((const int32_t *)t->data)[i];
	case ONNX_INT8:
		return ((const int8_t *)t->data)[i];
	default:
		return ((const uint8_t *)t->data)[i];
	}
}

static struct onnx_model *load(struct mb *b, unsigned flags, int *ret, char *err, size_t len)
{
	struct onnx_model *m = NULL;
	size_t n;
	const uint8_t *buf = mb_pack(b, &n);

	*ret = onnx_model_load_mem(buf, n, flags, &m, err, len);
	return m;
}

/*
 * Run b on the CPU reference (loaded without folding) and on sim (folding on); output `which` of both
 * must be dtype dt of shape dims holding want (float: 1e-5 + 1e-4 relative; integers exactly).
 * Returns the sim run's device node count.
 */
static unsigned expect_out(struct mb *b, struct onnx_tensor *in, unsigned n_in, unsigned n_out, unsigned which,
			   enum onnx_dtype dt, unsigned nd, const int64_t *dims, const double *want)
{
	unsigned accel = 0;

	for (int pass = 0; pass < 2; pass++) {
		struct onnx_tensor out[4];
		struct onnx_run_stats st;
		char err[512] = "";
		int ret;
		struct onnx_model *m = load(b, pass ? 0 : ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));

		cr_assert_eq(ret, 0, "load: %s", err);
		ret = onnx_run(m, pass ? dev : NULL, in, n_in, out, n_out, &st);
		cr_assert_eq(ret, 0, "%s run: %s", pass ? "sim" : "cpu", onnx_model_error(m));
		cr_assert_eq(out[which].dtype, dt, "%s: dtype %d, expected %d", pass ? "sim" : "cpu", out[which].dtype, dt);
		cr_assert_eq(out[which].ndim, nd, "%s: rank %u, expected %u", pass ? "sim" : "cpu", out[which].ndim, nd);
		for (unsigned d = 0; d < nd; d++)
			cr_assert_eq(out[which].dims[d], dims[d], "%s: dimension %u is %lld, expected %lld",
				     pass ? "sim" : "cpu", d, (long long)out[which].dims[d], (long long)dims[d]);
		for (size_t i = 0; i < out[which].count; i++) {
			double g = tget(&out[which], i);

			if (dt == ONNX_FLOAT)
				cr_assert(fabs(g - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]) || (isnan(g) && isnan(want[i])),
					  "%s [%zu]: got %.9g, expected %.9g", pass ? "sim" : "cpu", i, g, want[i]);
			else
				cr_assert_eq(g, want[i], "%s [%zu]: got %.0f, expected %.0f", pass ? "sim" : "cpu", i, g,
					     want[i]);
		}
		for (unsigned k = 0; k < n_out; k++)
			onnx_tensor_release(&out[k]);
		if (pass)
			accel = st.accel_nodes;
		onnx_model_free(m);
	}
	return accel;
}

/* The run must fail with err and a message containing what (naming the node). */
static void expect_run_error(struct mb *b, struct onnx_tensor *in, unsigned n_in, int err_exp, const char *what)
{
	struct onnx_tensor out[2];
	char err[512] = "";
	int ret;
	struct onnx_model *m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "load: %s", err);
	ret = onnx_run(m, NULL, in, n_in, out, onnx_model_n_outputs(m), NULL);
	cr_expect_eq(ret, err_exp, "run returned %d (%s)", ret, onnx_model_error(m));
	cr_expect(strstr(onnx_model_error(m), what), "message: %s", onnx_model_error(m));
	onnx_model_free(m);
}

static void i64_init(struct mb *b, const char *name, unsigned n, const int64_t *v)
{
	int64_t d = n;

	mb_init(b, name, ONNX_INT64, 1, &d, v);
}

/* ---- Clip ---- */

Test(onnx_ops15, relu6_after_conv_is_fused_into_the_clamp_epilogue)
{
	/* 1x1 conv with weight 4, no bias: y = clamp(4x, 0, 6) */
	int64_t xd[4] = { 1, 1, 2, 3 }, wd[4] = { 1, 1, 1, 1 }, sd[1] = { 1 };
	double x[6] = { -2, -0.5, 0.25, 1, 1.5, 3 }, want[6];
	float w = 4, lo = 0, hi = 6;
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	char err[256];
	int ret;
	struct onnx_model *m;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, &w);
	mb_init(b, "lo", ONNX_FLOAT, 0, sd, &lo);
	mb_init(b, "hi", ONNX_FLOAT, 0, sd, &hi);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w", "c");
	mb_node(b, "Clip", "c,lo,hi", "y");
	mb_output(b, "y");
	for (int i = 0; i < 6; i++)
		want[i] = fmin(fmax(4 * x[i], 0), 6);
	tin(&in, ONNX_FLOAT, 4, xd, x);
	cr_expect_eq(expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, xd, want), 1, "one device node (the Clip is fused)");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0);
	cr_expect_eq(onnx_model_n_nodes(m), 1, "the Clip is part of the Conv");
	onnx_model_free(m);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, clip_attribute_form_before_opset_11_and_absent_bounds_after)
{
	int64_t d[1] = { 5 };
	double x[5] = { -3, -1, 0, 2, 9 }, e6[5] = { -1, -1, 0, 1, 1 }, e13[5] = { -3, -1, 0, 2, 2 };
	float hi = 2;
	struct mb *b = mb_new(6);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_input(b, "x");
	n = mb_node(b, "Clip", "x", "y");
	mb_attr_f(b, n, "min", -1);
	mb_attr_f(b, n, "max", 1);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 1, d, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, d, e6);
	mb_free(b);
	b = mb_new(13);	/* min absent (""), max an input */
	mb_init(b, "hi", ONNX_FLOAT, 0, d, &hi);
	mb_input(b, "x");
	mb_node(b, "Clip", "x,,hi", "y");
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, d, e13);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* ---- data movement ---- */

Test(onnx_ops15, slice_negative_steps_clamps_out_of_range_bounds)
{
	/* numpy: x[3::-2, ::-2] of arange(20).reshape(4, 5) = [[19, 17, 15], [9, 7, 5]] */
	int64_t xd[2] = { 4, 5 }, od[2] = { 2, 3 };
	int64_t starts[2] = { 3, -1 }, ends[2] = { INT64_MIN, -1000 }, axes[2] = { 0, -1 }, steps[2] = { -2, -2 };
	double x[20], want[6] = { 19, 17, 15, 9, 7, 5 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	for (int i = 0; i < 20; i++)
		x[i] = i;
	i64_init(b, "s", 2, starts);
	i64_init(b, "e", 2, ends);
	i64_init(b, "a", 2, axes);
	i64_init(b, "st", 2, steps);
	mb_input(b, "x");
	mb_node(b, "Slice", "x,s,e,a,st", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 2, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, slice_with_a_zero_step_or_repeated_axis_is_an_error)
{
	int64_t xd[1] = { 4 }, s[1] = { 0 }, e[1] = { 2 }, a[1] = { 0 }, st[1] = { 0 };
	double x[4] = { 0 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	i64_init(b, "s", 1, s);
	i64_init(b, "e", 1, e);
	i64_init(b, "a", 1, a);
	i64_init(b, "st", 1, st);
	mb_input(b, "x");
	mb_node(b, "Slice", "x,s,e,a,st", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 1, xd, x);
	expect_run_error(b, &in, 1, -EINVAL, "(Slice): steps[0] is 0");
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, gather_takes_negative_indices_and_rejects_out_of_range_ones)
{
	int64_t xd[2] = { 2, 3 }, id[1] = { 2 }, od[2] = { 2, 2 }, idx[2] = { -1, 0 }, bad[2] = { 3, 0 };
	double x[6] = { 1, 2, 3, 4, 5, 6 }, want[4] = { 3, 1, 6, 4 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "i", ONNX_INT64, 1, id, idx);
	mb_input(b, "x");
	n = mb_node(b, "Gather", "x,i", "y");
	mb_attr_i(b, n, "axis", 1);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 2, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, want);
	mb_free(b);
	b = mb_new(13);
	mb_init(b, "i", ONNX_INT64, 1, id, bad);
	mb_input(b, "x");
	n = mb_node(b, "Gather", "x,i", "y");
	mb_attr_i(b, n, "axis", -1);
	mb_output(b, "y");
	expect_run_error(b, &in, 1, -EINVAL, "index 3 is out of range");
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, split_as_input_at_opset_13_and_as_attribute_before)
{
	int64_t xd[2] = { 2, 3 }, sp[2] = { 1, 2 }, o0[2] = { 2, 1 }, o1[2] = { 2, 2 };
	double x[6] = { 1, 2, 3, 4, 5, 6 }, e0[2] = { 1, 4 }, e1[4] = { 2, 3, 5, 6 };
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	for (int opset = 11; opset <= 13; opset += 2) {
		struct mb *b = mb_new(opset);
		Onnx__NodeProto *n;

		mb_input(b, "x");
		if (opset == 13)
			i64_init(b, "s", 2, sp);
		n = mb_node(b, "Split", opset == 13 ? "x,s" : "x", "a,b");
		mb_attr_i(b, n, "axis", 1);
		if (opset == 11)
			mb_attr_ints(b, n, "split", sp, 2);
		mb_output(b, "a");
		mb_output(b, "b");
		expect_out(b, &in, 1, 2, 0, ONNX_FLOAT, 2, o0, e0);
		expect_out(b, &in, 1, 2, 1, ONNX_FLOAT, 2, o1, e1);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, unsqueeze_and_squeeze_in_both_opset_forms)
{
	int64_t xd[2] = { 3, 1 }, ax[2] = { 0, -1 }, ud[4] = { 1, 3, 1, 1 }, sq1[1] = { 1 }, sd[1] = { 3 };
	double x[3] = { 7, 8, 9 };
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	for (int opset = 11; opset <= 13; opset += 2) {
		struct mb *b = mb_new(opset);
		Onnx__NodeProto *n;

		mb_input(b, "x");
		if (opset == 13)
			i64_init(b, "a", 2, ax);
		n = mb_node(b, "Unsqueeze", opset == 13 ? "x,a" : "x", "y");
		if (opset == 11)
			mb_attr_ints(b, n, "axes", ax, 2);
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, ud, x);
		mb_free(b);
		b = mb_new(opset);
		mb_input(b, "x");
		if (opset == 13)
			i64_init(b, "a", 1, sq1);
		n = mb_node(b, "Squeeze", opset == 13 ? "x,a" : "x", "y");
		if (opset == 11)
			mb_attr_ints(b, n, "axes", sq1, 1);
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, sd, x);
		mb_free(b);
	}
	{	/* squeezing a dimension that is not 1 */
		struct mb *b = mb_new(13);
		int64_t a0[1] = { 0 };

		i64_init(b, "a", 1, a0);
		mb_input(b, "x");
		mb_node(b, "Squeeze", "x,a", "y");
		mb_output(b, "y");
		expect_run_error(b, &in, 1, -EINVAL, "dimension 0 is 3, not 1");
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, transpose_permutes_and_rejects_a_non_permutation)
{
	int64_t xd[3] = { 2, 3, 4 }, perm[3] = { 1, 2, 0 }, od[3] = { 3, 4, 2 }, bad[3] = { 0, 0, 1 };
	double x[24], want[24];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	for (int i = 0; i < 24; i++)
		x[i] = i;
	for (int j = 0; j < 3; j++)	/* y[j][k][i] = x[i][j][k] */
		for (int k = 0; k < 4; k++)
			for (int i = 0; i < 2; i++)
				want[(j * 4 + k) * 2 + i] = x[(i * 3 + j) * 4 + k];
	mb_input(b, "x");
	n = mb_node(b, "Transpose", "x", "y");
	mb_attr_ints(b, n, "perm", perm, 3);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 3, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 3, od, want);
	mb_free(b);
	b = mb_new(13);
	mb_input(b, "x");
	n = mb_node(b, "Transpose", "x", "y");
	mb_attr_ints(b, n, "perm", bad, 3);
	mb_output(b, "y");
	expect_run_error(b, &in, 1, -EINVAL, "perm is not a permutation");
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, pad_constant_reflect_edge_and_negative_pads)
{
	/* numpy.pad([1, 2, 3, 4], (2, 3), mode): constant 9 / reflect / edge; pads (-1, 1) crop and extend */
	int64_t xd[2] = { 1, 4 }, pads[4] = { 0, 2, 0, 3 }, od[2] = { 1, 9 }, crop[4] = { 0, -1, 0, 1 }, cd[2] = { 1, 4 };
	double x[4] = { 1, 2, 3, 4 };
	double ec[9] = { 9, 9, 1, 2, 3, 4, 9, 9, 9 }, er[9] = { 3, 2, 1, 2, 3, 4, 3, 2, 1 };
	double ee[9] = { 1, 1, 1, 2, 3, 4, 4, 4, 4 }, ecrop[4] = { 2, 3, 4, 0 };
	const char *modes[3] = { "constant", "reflect", "edge" };
	const double *exps[3] = { ec, er, ee };
	float nine = 9;
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	for (int i = 0; i < 3; i++) {
		struct mb *b = mb_new(13);
		Onnx__NodeProto *n;

		i64_init(b, "p", 4, pads);
		mb_init(b, "v", ONNX_FLOAT, 0, xd, &nine);
		mb_input(b, "x");
		n = mb_node(b, "Pad", "x,p,v", "y");
		mb_attr_s(b, n, "mode", modes[i]);
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, exps[i]);
		mb_free(b);
	}
	{
		struct mb *b = mb_new(13);

		i64_init(b, "p", 4, crop);
		mb_input(b, "x");
		mb_node(b, "Pad", "x,p", "y");
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, cd, ecrop);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, concat_of_mixed_lengths_along_a_negative_axis)
{
	int64_t ad[2] = { 2, 1 }, bd[2] = { 2, 2 }, od[2] = { 2, 3 };
	double a[2] = { 1, 2 }, bb[4] = { 3, 4, 5, 6 }, want[6] = { 1, 3, 4, 2, 5, 6 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;

	mb_input(b, "a");
	mb_input(b, "b");
	n = mb_node(b, "Concat", "a,b", "y");
	mb_attr_i(b, n, "axis", -1);
	mb_output(b, "y");
	tin(&in[0], ONNX_FLOAT, 2, ad, a);
	tin(&in[1], ONNX_FLOAT, 2, bd, bb);
	expect_out(b, in, 2, 1, 0, ONNX_FLOAT, 2, od, want);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	mb_free(b);
}

/* ---- element-wise ---- */

Test(onnx_ops15, activations_follow_their_specification_formulas)
{
	static const char *const ops[] = { "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "LeakyRelu", "Elu",
					   "Neg", "Abs", "Exp" };
	int64_t d[1] = { 7 };
	double x[7] = { -4, -2.5, -0.5, 0, 0.75, 2, 3.5 };
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 1, d, x);
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		struct mb *b = mb_new(14);
		double want[7];

		for (int i = 0; i < 7; i++) {
			double v = x[i];

			switch (k) {
			case 0: want[i] = 1 / (1 + exp(-v)); break;
			case 1: want[i] = fmax(0, fmin(1, 0.2 * v + 0.5)); break;
			case 2: want[i] = v * fmax(0, fmin(1, v / 6 + 0.5)); break;
			case 3: want[i] = tanh(v); break;
			case 4: want[i] = erf(v); break;
			case 5: want[i] = v < 0 ? 0.01 * v : v; break;
			case 6: want[i] = v < 0 ? exp(v) - 1 : v; break;
			case 7: want[i] = -v; break;
			case 8: want[i] = fabs(v); break;
			default: want[i] = exp(v);
			}
		}
		mb_input(b, "x");
		mb_node(b, ops[k], "x", "y");
		mb_output(b, "y");
		cr_log_info("%s", ops[k]);
		expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, d, want);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, gelu_as_torch_exports_it_matches_the_erf_formula)
{
	/* torch.onnx (opset 13): y = x * 0.5 * (1 + erf(x / sqrt(2))) as Div, Erf, Add, Mul, Mul */
	int64_t d[1] = { 5 }, sd[1] = { 1 };
	double x[5] = { -3, -0.7, 0, 0.4, 2.2 }, want[5];
	float r2 = 1.41421353816986083984375f, one = 1, half = 0.5f;
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	for (int i = 0; i < 5; i++)
		want[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2)));
	mb_init(b, "r2", ONNX_FLOAT, 0, sd, &r2);
	mb_init(b, "one", ONNX_FLOAT, 0, sd, &one);
	mb_init(b, "half", ONNX_FLOAT, 0, sd, &half);
	mb_input(b, "x");
	mb_node(b, "Div", "x,r2", "a");
	mb_node(b, "Erf", "a", "e");
	mb_node(b, "Add", "e,one", "p");
	mb_node(b, "Mul", "x,p", "m");
	mb_node(b, "Mul", "m,half", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 1, d, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, d, want);
	{	/* and it runs as one Gelu node */
		struct onnx_node_info info;
		char err[256];
		int ret;
		struct onnx_model *m = load(b, 0, &ret, err, sizeof(err));

		cr_assert_eq(ret, 0, "%s", err);
		cr_expect_eq(onnx_model_n_nodes(m), 1);
		cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
		cr_expect_str_eq(info.op, "Gelu");
		cr_expect_eq(info.place, ONNX_PLACE_DEVICE);	/* the vector units' GELU */
		onnx_model_free(m);
	}
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, prelu_broadcasts_a_per_channel_slope)
{
	int64_t xd[4] = { 1, 2, 1, 2 }, sd[3] = { 2, 1, 1 };
	double x[4] = { -1, 2, -3, 4 }, want[4] = { -0.5, 2, -0.75, 4 };
	float slope[2] = { 0.5f, 0.25f };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	mb_init(b, "s", ONNX_FLOAT, 3, sd, slope);
	mb_input(b, "x");
	mb_node(b, "PRelu", "x,s", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, xd, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, variadic_max_broadcasts_three_inputs)
{
	int64_t ad[2] = { 2, 2 }, bd[1] = { 2 }, cd[2] = { 2, 1 };
	double a[4] = { 1, 5, 3, -2 }, bb[2] = { 2, 0 }, cc[2] = { -1, 4 }, want[4] = { 2, 5, 4, 4 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in[3];

	mb_input(b, "a");
	mb_input(b, "b");
	mb_input(b, "c");
	mb_node(b, "Max", "a,b,c", "y");
	mb_output(b, "y");
	tin(&in[0], ONNX_FLOAT, 2, ad, a);
	tin(&in[1], ONNX_FLOAT, 1, bd, bb);
	tin(&in[2], ONNX_FLOAT, 2, cd, cc);
	expect_out(b, in, 3, 1, 0, ONNX_FLOAT, 2, ad, want);
	for (int i = 0; i < 3; i++)
		onnx_tensor_release(&in[i]);
	mb_free(b);
}

Test(onnx_ops15, integer_division_by_zero_is_defined_not_a_trap)
{
	int64_t d[1] = { 3 };
	double a[3] = { 7, -7, INT64_MIN }, bb[3] = { 2, 0, -1 }, want[3] = { 3, 0, INT64_MIN };
	struct mb *b = mb_new(13);
	struct onnx_tensor in[2];

	mb_input(b, "a");
	mb_input(b, "b");
	mb_node(b, "Div", "a,b", "y");
	mb_output(b, "y");
	tin(&in[0], ONNX_INT64, 1, d, a);
	tin(&in[1], ONNX_INT64, 1, d, bb);
	((int64_t *)in[0].data)[2] = INT64_MIN;
	expect_out(b, in, 2, 1, 0, ONNX_INT64, 1, d, want);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	mb_free(b);
}

Test(onnx_ops15, where_selects_with_a_broadcast_equal_mask)
{
	int64_t ad[2] = { 2, 2 }, bd[1] = { 2 };
	double a[4] = { 1, 2, 2, 1 }, bb[2] = { 1, 2 }, ybuf[1] = { -1 }, want[4] = { 1, 2, -1, -1 };
	float minus1 = -1;
	struct mb *b = mb_new(13);
	struct onnx_tensor in[2];

	(void)ybuf;
	mb_init(b, "m1", ONNX_FLOAT, 0, bd, &minus1);
	mb_input(b, "a");
	mb_input(b, "b");
	mb_node(b, "Equal", "a,b", "c");
	mb_node(b, "Where", "c,a,m1", "y");
	mb_output(b, "y");
	tin(&in[0], ONNX_FLOAT, 2, ad, a);
	tin(&in[1], ONNX_FLOAT, 1, bd, bb);
	expect_out(b, in, 2, 1, 0, ONNX_FLOAT, 2, ad, want);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	mb_free(b);
}

Test(onnx_ops15, cast_truncates_saturates_and_makes_bools)
{
	int64_t d[1] = { 5 };
	double x[5] = { -1.9, 0.0, 2.7, 300, -1e10 }, e8[5] = { -1, 0, 2, 127, -128 }, eb[5] = { 1, 0, 1, 1, 1 };
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 1, d, x);
	for (int k = 0; k < 2; k++) {
		struct mb *b = mb_new(13);
		Onnx__NodeProto *n;

		mb_input(b, "x");
		n = mb_node(b, "Cast", "x", "y");
		mb_attr_i(b, n, "to", k ? ONNX_BOOL : ONNX_INT8);
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, k ? ONNX_BOOL : ONNX_INT8, 1, d, k ? eb : e8);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

/* ---- reductions, normalisation ---- */

Test(onnx_ops15, reduce_mean_sum_max_keepdims_and_noop_with_empty_axes)
{
	int64_t xd[2] = { 2, 3 }, ax1[1] = { 1 }, md[1] = { 2 }, kd[2] = { 1, 1 };
	double x[6] = { 1, 2, 6, -4, 0, 1 }, em[2] = { 3, -1 }, emax[1] = { 6 };
	struct onnx_tensor in;
	struct mb *b;
	Onnx__NodeProto *n;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	b = mb_new(13);	/* ReduceMean: axes attribute, keepdims 0 */
	mb_input(b, "x");
	n = mb_node(b, "ReduceMean", "x", "y");
	mb_attr_ints(b, n, "axes", ax1, 1);
	mb_attr_i(b, n, "keepdims", 0);
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, md, em);
	mb_free(b);
	b = mb_new(13);	/* ReduceSum opset 13: empty axes input + noop_with_empty_axes = identity */
	i64_init(b, "a", 0, ax1);
	mb_input(b, "x");
	n = mb_node(b, "ReduceSum", "x,a", "y");
	mb_attr_i(b, n, "noop_with_empty_axes", 1);
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, xd, x);
	mb_free(b);
	b = mb_new(13);	/* ReduceMax, no axes: all, keepdims 1 */
	mb_input(b, "x");
	mb_node(b, "ReduceMax", "x", "y");
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, kd, emax);
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops15, argmax_select_last_index_and_keepdims)
{
	int64_t xd[2] = { 2, 3 }, od[2] = { 2, 1 };
	double x[6] = { 5, 1, 5, 0, 7, 7 }, first[2] = { 0, 1 }, last[2] = { 2, 2 };
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	for (int k = 0; k < 2; k++) {
		struct mb *b = mb_new(13);
		Onnx__NodeProto *n;

		mb_input(b, "x");
		n = mb_node(b, "ArgMax", "x", "y");
		mb_attr_i(b, n, "axis", 1);
		mb_attr_i(b, n, "select_last_index", k);
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, ONNX_INT64, 2, od, k ? last : first);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, logsoftmax_on_axis_0_and_softmax_coerced_at_opset_11)
{
	int64_t xd[2] = { 2, 2 };
	double x[4] = { 1, 2, 3, 5 }, el[4], es[4];
	struct onnx_tensor in;
	struct mb *b;
	Onnx__NodeProto *n;
	double s;

	/* LogSoftmax axis 0 (opset 13): columns */
	for (int j = 0; j < 2; j++) {
		s = log(exp(x[j]) + exp(x[2 + j]));
		el[j] = x[j] - s;
		el[2 + j] = x[2 + j] - s;
	}
	/* Softmax opset 11 axis 0: the whole tensor is one row */
	s = exp(1) + exp(2) + exp(3) + exp(5);
	for (int i = 0; i < 4; i++)
		es[i] = exp(x[i]) / s;
	tin(&in, ONNX_FLOAT, 2, xd, x);
	b = mb_new(13);
	mb_input(b, "x");
	n = mb_node(b, "LogSoftmax", "x", "y");
	mb_attr_i(b, n, "axis", 0);
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, xd, el);
	mb_free(b);
	b = mb_new(11);
	mb_input(b, "x");
	n = mb_node(b, "Softmax", "x", "y");
	mb_attr_i(b, n, "axis", 0);
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, xd, es);
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops15, layernormalization_over_the_last_axis_with_mean_and_invstd)
{
	int64_t xd[2] = { 2, 3 }, sd[1] = { 3 }, md[2] = { 2, 1 };
	double x[6] = { 1, 2, 4, -3, 0, 9 }, want[6], em[2], ei[2];
	float sc[3] = { 1, 2, 0.5f }, bias[3] = { 0, 1, -1 };
	struct mb *b = mb_new(17);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	for (int r = 0; r < 2; r++) {
		double mu = (x[r * 3] + x[r * 3 + 1] + x[r * 3 + 2]) / 3, var = 0;

		for (int j = 0; j < 3; j++)
			var += (x[r * 3 + j] - mu) * (x[r * 3 + j] - mu) / 3;
		em[r] = mu;
		ei[r] = 1 / sqrt(var + 1e-3);
		for (int j = 0; j < 3; j++)
			want[r * 3 + j] = (x[r * 3 + j] - mu) * ei[r] * sc[j] + bias[j];
	}
	mb_init(b, "s", ONNX_FLOAT, 1, sd, sc);
	mb_init(b, "b", ONNX_FLOAT, 1, sd, bias);
	mb_input(b, "x");
	n = mb_node(b, "LayerNormalization", "x,s,b", "y,m,i");
	mb_attr_f(b, n, "epsilon", 1e-3f);
	mb_output(b, "y");
	mb_output(b, "m");
	mb_output(b, "i");
	tin(&in, ONNX_FLOAT, 2, xd, x);
	expect_out(b, &in, 1, 3, 0, ONNX_FLOAT, 2, xd, want);
	expect_out(b, &in, 1, 3, 1, ONNX_FLOAT, 2, md, em);
	expect_out(b, &in, 1, 3, 2, ONNX_FLOAT, 2, md, ei);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* ---- Resize, ConvTranspose ---- */

Test(onnx_ops15, resize_linear_half_pixel_matches_pytorch_bilinear)
{
	/* torch.nn.functional.interpolate([1, 3], scale_factor=2, mode='linear', align_corners=False)
	 * = [1, 1.5, 2.5, 3] */
	int64_t xd[3] = { 1, 1, 2 }, od[3] = { 1, 1, 4 }, sd[1] = { 3 };
	double x[2] = { 1, 3 }, want[4] = { 1, 1.5, 2.5, 3 };
	float scales[3] = { 1, 1, 2 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_init(b, "sc", ONNX_FLOAT, 1, sd, scales);
	mb_input(b, "x");
	n = mb_node(b, "Resize", "x,,sc", "y");
	mb_attr_s(b, n, "mode", "linear");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 3, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 3, od, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, resize_nearest_by_sizes_with_asymmetric_floor)
{
	/* out 5 from in 2: scale 2.5, x / 2.5 floored = 0, 0, 0, 1, 1 */
	int64_t xd[3] = { 1, 1, 2 }, od[3] = { 1, 1, 5 }, sz[3] = { 1, 1, 5 };
	double x[2] = { 4, 9 }, want[5] = { 4, 4, 4, 9, 9 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	i64_init(b, "sz", 3, sz);
	mb_input(b, "x");
	n = mb_node(b, "Resize", "x,,,sz", "y");
	mb_attr_s(b, n, "coordinate_transformation_mode", "asymmetric");
	mb_attr_s(b, n, "nearest_mode", "floor");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 3, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 3, od, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, convtranspose_scatters_each_input_through_the_kernel)
{
	/* x [[1, 2], [3, 4]], W all ones 2x2, stride 1: y = [[1, 3, 2], [4, 10, 6], [3, 7, 4]] */
	int64_t xd[4] = { 1, 1, 2, 2 }, wd[4] = { 1, 1, 2, 2 }, od[4] = { 1, 1, 3, 3 };
	double x[4] = { 1, 2, 3, 4 }, want[9] = { 1, 3, 2, 4, 10, 6, 3, 7, 4 };
	float w[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input(b, "x");
	mb_node(b, "ConvTranspose", "x,w", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, od, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* ---- QDQ ---- */

Test(onnx_ops15, quantizelinear_rounds_half_to_even_and_saturates)
{
	int64_t d[1] = { 7 }, sd[1] = { 1 };
	double x[7] = { -1.5, -0.5, 0.5, 1.5, 2.5, 300, -300 };
	double e8[7] = { -2, 0, 0, 2, 2, 127, -128 }, eu[7] = { 126, 128, 128, 130, 130, 255, 0 };
	float one = 1;
	int8_t z8 = 0;
	uint8_t zu = 128;
	struct onnx_tensor in;

	tin(&in, ONNX_FLOAT, 1, d, x);
	for (int k = 0; k < 2; k++) {
		struct mb *b = mb_new(13);

		mb_init(b, "s", ONNX_FLOAT, 0, sd, &one);
		if (k)
			mb_init(b, "z", ONNX_UINT8, 0, sd, &zu);
		else
			mb_init(b, "z", ONNX_INT8, 0, sd, &z8);
		mb_input(b, "x");
		mb_node(b, "QuantizeLinear", "x,s,z", "y");
		mb_output(b, "y");
		expect_out(b, &in, 1, 1, 0, k ? ONNX_UINT8 : ONNX_INT8, 1, d, k ? eu : e8);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_ops15, dequantizelinear_per_axis)
{
	int64_t xd[2] = { 2, 2 }, sd[1] = { 2 };
	double x[4] = { 1, 2, 3, 4 }, want[4] = { 0.5, 2, 1.5, 6 };
	float sc[2] = { 0.5f, 2 };
	int8_t zp[2] = { 0, 1 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	mb_init(b, "s", ONNX_FLOAT, 1, sd, sc);
	mb_init(b, "z", ONNX_INT8, 1, sd, zp);
	mb_input(b, "x");
	mb_node(b, "DequantizeLinear", "x,s,z", "y");	/* axis 1 (default) */
	mb_output(b, "y");
	tin(&in, ONNX_INT8, 2, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, xd, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* ---- load-time folding, placement, bad input ---- */

Test(onnx_ops15, a_shape_chain_of_a_static_input_folds_at_load_time)
{
	int64_t xd[4] = { 2, 3, 4, 5 }, od[2] = { 2, 60 }, bad[4] = { 3, 2, 4, 5 }, zero = 0, m1 = -1, ax = 0, one = 1;
	double x[120];
	struct mb *b = mb_new(13);
	struct onnx_tensor in, out;
	struct onnx_node_info info;
	Onnx__NodeProto *n;
	char err[256];
	int ret;
	struct onnx_model *m;

	for (int i = 0; i < 120; i++)
		x[i] = i;
	mb_init(b, "zero", ONNX_INT64, 0, &one, &zero);
	i64_init(b, "m1", 1, &m1);
	i64_init(b, "ax", 1, &ax);
	mb_input_typed(b, "x", ONNX_FLOAT, 4, xd);
	mb_node(b, "Shape", "x", "s");
	mb_node(b, "Gather", "s,zero", "g");
	mb_node(b, "Unsqueeze", "g,ax", "u");
	n = mb_node(b, "Concat", "u,m1", "shape");
	mb_attr_i(b, n, "axis", 0);
	mb_node(b, "Reshape", "x,shape", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, x);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 1, "only the Reshape is left to run");
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_FOLDED, "Shape is folded");
	cr_expect_str_eq(info.op, "Shape");
	cr_assert_eq(onnx_model_node_info(m, 4, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_HOST);
	onnx_tensor_release(&in);
	/* an input that contradicts the declared shape the fold used is an error, not a wrong reshape */
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT, 4, bad), 0);
	ret = onnx_run(m, dev, &in, 1, &out, 1, NULL);
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(onnx_model_error(m), "declares FLOAT [2,3,4,5]"), "message: %s", onnx_model_error(m));
	onnx_tensor_release(&in);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_ops15, node_info_says_where_each_node_runs)
{
	int64_t wd[4] = { 2, 1, 1, 1 }, xd[4] = { 1, 1, 2, 2 }, dd[4] = { 1, 2, 1, 1 };
	float w[2] = { 1, -1 };
	double x[4] = { 1, 2, 3, 4 }, want[2];
	struct mb *b = mb_new(13);
	struct onnx_tensor in, out;
	struct onnx_node_info info;
	struct onnx_value_desc vd;
	char err[256];
	int ret;
	struct onnx_model *m;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input_typed(b, "x", ONNX_FLOAT, 4, (int64_t[]){ INT64_MIN, 1, 2, 2 });
	mb_node(b, "Conv", "x,w", "c");
	mb_node(b, "Relu", "c", "r");
	mb_node(b, "GlobalAveragePool", "r", "g");
	mb_node(b, "Sigmoid", "g", "y");
	mb_output(b, "y");
	want[0] = 1 / (1 + exp(-2.5));
	want[1] = 0.5;
	tin(&in, ONNX_FLOAT, 4, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, dd, want);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_assert_eq(onnx_model_n_graph_nodes(m), 4);
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_DEVICE);
	cr_expect_eq(info.ran_on_device, -1, "not run yet");
	cr_assert_eq(onnx_model_node_info(m, 1, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_FOLDED, "Relu is fused into the Conv");
	cr_assert_eq(onnx_model_node_info(m, 3, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_DEVICE, "Sigmoid: the vector units (ops_accel_vec.c)");
	cr_assert_eq(onnx_run(m, dev, &in, 1, &out, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_eq(info.ran_on_device, 1);
	cr_assert_eq(onnx_model_node_info(m, 3, &info), 0);
	cr_expect_eq(info.ran_on_device, 1);
	cr_assert_eq(onnx_model_input_desc(m, 0, &vd), 0);
	cr_expect_str_eq(vd.name, "x");
	cr_expect_eq(vd.dtype, ONNX_FLOAT);
	cr_expect_eq(vd.ndim, 4);
	cr_expect_eq(vd.dims[0], -1, "symbolic batch");
	cr_expect_eq(vd.dims[3], 2);
	onnx_tensor_release(&out);
	onnx_tensor_release(&in);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_ops15, terabyte_shapes_are_refused_before_any_allocation)
{
	/* ConstantOfShape [2^20, 2^20, 2^20] of FLOAT (4 EiB), folded at load time: E2BIG naming the node */
	int64_t big[3] = { 1 << 20, 1 << 20, 1 << 20 };
	struct mb *b = mb_new(13);
	char err[512] = "";
	int ret;
	struct onnx_model *m;

	i64_init(b, "s", 3, big);
	mb_node(b, "ConstantOfShape", "s", "y");
	mb_output(b, "y");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_null(m);
	cr_expect(ret == -E2BIG || ret == -EINVAL, "ret %d", ret);
	cr_expect(strstr(err, "(ConstantOfShape)"), "message: %s", err);
	mb_free(b);
}

Test(onnx_ops15, a_declared_negative_dimension_is_an_error_naming_the_input)
{
	struct mb *b = mb_new(13);
	char err[512] = "";
	int ret;
	struct onnx_model *m;

	mb_input_typed(b, "x", ONNX_FLOAT, 2, (int64_t[]){ 3, -5 });
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "y");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_null(m);
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "'x'") && strstr(err, "-5"), "message: %s", err);
	mb_free(b);
}

Test(onnx_ops15, a_node_with_a_huge_input_list_is_rejected_at_load)
{
	struct mb *b = mb_new(13);
	char **names = malloc(5000 * sizeof(char *));
	char err[512] = "";
	int ret;
	struct onnx_model *m;
	Onnx__NodeProto *n;

	mb_input(b, "x");
	n = mb_node(b, "Concat", "x", "y");
	for (int i = 0; i < 5000; i++)
		names[i] = (char *)"x";
	n->input = names;
	n->n_input = 5000;
	mb_output(b, "y");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_null(m);
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "5000 inputs"), "message: %s", err);
	n->n_input = 1;
	mb_free(b);
	free(names);
}

Test(onnx_ops15, range_and_constantofshape_fold_to_constants)
{
	int64_t od[1] = { 4 }, shp[1] = { 4 }, one = 1;
	float s = 1, l = 3, dl = 0.5f;
	double want[4] = { 1, 1.5, 2, 2.5 }, x[4] = { 0, 0, 0, 0 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	(void)one;
	mb_init(b, "s", ONNX_FLOAT, 0, od, &s);
	mb_init(b, "l", ONNX_FLOAT, 0, od, &l);
	mb_init(b, "d", ONNX_FLOAT, 0, od, &dl);
	i64_init(b, "shp", 1, shp);
	mb_input(b, "x");
	mb_node(b, "Range", "s,l,d", "r");
	mb_node(b, "ConstantOfShape", "shp", "z");
	mb_node(b, "Add", "r,z", "rz");
	mb_node(b, "Add", "rz,x", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 1, od, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 1, od, want);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, dropout_in_inference_is_the_identity_with_an_all_true_mask)
{
	int64_t d[1] = { 3 };
	double x[3] = { 1, -2, 3 }, mask[3] = { 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;

	mb_input(b, "x");
	mb_node(b, "Dropout", "x", "y,m");
	mb_output(b, "y");
	mb_output(b, "m");
	tin(&in, ONNX_FLOAT, 1, d, x);
	expect_out(b, &in, 1, 2, 0, ONNX_FLOAT, 1, d, x);
	expect_out(b, &in, 1, 2, 1, ONNX_BOOL, 1, d, mask);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, a_shape_of_a_computed_value_folds_through_shape_inference)
{
	/* y = Reshape(MatMul(Transpose(x), w), Shape(Transpose(x))[0:2] ++ [-1]): Shape reads a value whose
	 * shape only the Transpose defines; the chain folds and only Transpose, MatMul, Reshape run */
	int64_t xd[3] = { 2, 3, 4 }, wd[2] = { 2, 5 }, od[3] = { 4, 2, 5 }, st[1] = { 0 }, en[1] = { 2 }, m1[1] = { -1 };
	int64_t perm[3] = { 2, 0, 1 };
	float w[10];
	double x[24], want[40];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	char err[256];
	int ret;
	struct onnx_model *m;

	for (int i = 0; i < 24; i++)
		x[i] = i * 0.25 - 2;
	for (int i = 0; i < 10; i++)
		w[i] = (float)(i % 3) - 1;
	for (int a = 0; a < 4; a++)	/* t[a][i][j] = x[i][j][a]; y[a][i][k] = sum_j t[a][i][j] w[j][k] */
		for (int i = 0; i < 2; i++)
			for (int k = 0; k < 5; k++) {
				double s = 0;

				for (int j = 0; j < 3; j++)
					s += x[(i * 3 + j) * 4 + a] * (j < 2 ? w[j * 5 + k] : 0);
				want[(a * 2 + i) * 5 + k] = s;
			}
	/* w is 2 x 5 but Transpose(x) is 4 x 2 x 3: slice the first 2 of the last axis first */
	mb_init(b, "w", ONNX_FLOAT, 2, wd, w);
	i64_init(b, "st", 1, st);
	i64_init(b, "en", 1, en);
	i64_init(b, "m1", 1, m1);
	i64_init(b, "ax2", 1, (int64_t[]){ 2 });
	mb_input_typed(b, "x", ONNX_FLOAT, 3, xd);
	n = mb_node(b, "Transpose", "x", "t");
	mb_attr_ints(b, n, "perm", perm, 3);
	mb_node(b, "Slice", "t,st,en,ax2", "ts");
	mb_node(b, "MatMul", "ts,w", "p");
	mb_node(b, "Shape", "t", "s");
	mb_node(b, "Slice", "s,st,en", "s2");
	n = mb_node(b, "Concat", "s2,m1", "shape");
	mb_attr_i(b, n, "axis", 0);
	mb_node(b, "Reshape", "p,shape", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 3, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 3, od, want);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 4, "Transpose, Slice, MatMul, Reshape are left (%u)", onnx_model_n_nodes(m));
	onnx_model_free(m);
	onnx_tensor_release(&in);
	mb_free(b);
}

/* Adversarial values found by mutating the backend tests' models (each overflowed int64 before). */
Test(onnx_ops15, extreme_attribute_and_shape_values_are_errors_not_overflows)
{
	int64_t xd[2] = { 2, 3 }, big[2] = { INT64_MAX, 3 }, sp[2] = { INT64_MAX, 2 }, st[1] = { 0 }, en[1] = { 3 };
	int64_t ax[1] = { 1 }, step[1] = { INT64_MAX }, od[2] = { 2, 1 }, kern[2] = { 1, 1 }, strides[2] = { INT64_MAX, 1 };
	double x[6] = { 1, 2, 3, 4, 5, 6 }, first[2] = { 1, 4 };
	struct onnx_tensor in;
	struct mb *b;
	Onnx__NodeProto *n;

	tin(&in, ONNX_FLOAT, 2, xd, x);
	b = mb_new(13);
	i64_init(b, "s", 2, big);
	mb_input(b, "x");
	mb_node(b, "Reshape", "x,s", "y");
	mb_output(b, "y");
	expect_run_error(b, &in, 1, -EINVAL, "(Reshape): shape[0]");
	mb_free(b);
	b = mb_new(13);
	i64_init(b, "s", 2, sp);
	mb_input(b, "x");
	n = mb_node(b, "Split", "x,s", "a,b");
	mb_attr_i(b, n, "axis", 1);
	mb_output(b, "a");
	mb_output(b, "b");
	expect_run_error(b, &in, 1, -EINVAL, "(Split): split[0]");
	mb_free(b);
	b = mb_new(13);	/* a step of INT64_MAX takes the first element */
	i64_init(b, "st", 1, st);
	i64_init(b, "en", 1, en);
	i64_init(b, "ax", 1, ax);
	i64_init(b, "step", 1, step);
	mb_input(b, "x");
	mb_node(b, "Slice", "x,st,en,ax,step", "y");
	mb_output(b, "y");
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, first);
	mb_free(b);
	onnx_tensor_release(&in);
	b = mb_new(13);
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT, 4, (int64_t[]){ 1, 1, 2, 3 }), 0);
	mb_input(b, "x");
	n = mb_node(b, "AveragePool", "x", "y");
	mb_attr_ints(b, n, "kernel_shape", kern, 2);
	mb_attr_ints(b, n, "strides", strides, 2);
	mb_output(b, "y");
	expect_run_error(b, &in, 1, -EINVAL, "out of range");
	mb_free(b);
	b = mb_new(13);	/* group 2^62: C = cg * group would overflow */
	mb_init(b, "w", ONNX_FLOAT, 4, (int64_t[]){ 1, 1, 1, 1 }, (float[]){ 1 });
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "y");
	mb_attr_i(b, n, "group", 1LL << 62);
	mb_output(b, "y");
	expect_run_error(b, &in, 1, -EINVAL, "group 4611686018427387904");
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops15, a_zero_pad_before_averagepool_becomes_device_padding_that_counts)
{
	/* torch's avg_pool2d(3, stride 1, padding 1): Pad(1) + AveragePool(3x3); every window / 9 */
	int64_t xd[4] = { 1, 1, 3, 3 }, pads[8] = { 0, 0, 1, 1, 0, 0, 1, 1 }, k[2] = { 3, 3 };
	double x[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, want[9] = { 12, 21, 16, 27, 45, 33, 24, 39, 28 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	struct onnx_node_info info;
	Onnx__NodeProto *n;
	char err[256];
	int ret;
	struct onnx_model *m;

	for (int i = 0; i < 9; i++)
		want[i] /= 9;
	i64_init(b, "p", 8, pads);
	mb_input(b, "x");
	mb_node(b, "Pad", "x,p", "xp");
	n = mb_node(b, "AveragePool", "xp", "y");
	mb_attr_ints(b, n, "kernel_shape", k, 2);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	cr_expect_eq(expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, xd, want), 1, "the pooling ran on the device");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 1);
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_FOLDED);
	onnx_model_free(m);
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, reducemean_over_h_and_w_runs_as_device_global_average_pooling)
{
	int64_t xd[4] = { 1, 2, 2, 2 }, ax[2] = { 2, 3 }, od[2] = { 1, 2 };
	double x[8] = { 1, 2, 3, 4, -1, -3, 5, 7 }, want[2] = { 2.5, 2 };
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	mb_input(b, "x");
	n = mb_node(b, "ReduceMean", "x", "y");
	mb_attr_ints(b, n, "axes", ax, 2);
	mb_attr_i(b, n, "keepdims", 0);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	cr_expect_eq(expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, od, want), 1, "on the device");
	onnx_tensor_release(&in);
	mb_free(b);
}

Test(onnx_ops15, convtranspose_with_groups_strides_pads_output_padding_runs_on_the_device)
{
	/* y[n][g*Mg+m][oy][ox] += x[n][g*Cg+c][iy][ix] * w[g*Cg+c][m][r][q], oy = iy*s - p + r*d (spec) */
	enum { N = 1, C = 4, H = 3, W = 2, G = 2, MG = 3, R = 3, Q = 2, S0 = 2, S1 = 3, D0 = 1, D1 = 2 };
	int64_t xd[4] = { N, C, H, W }, wd[4] = { C, MG, R, Q }, bd[1] = { G * MG };
	int64_t st[2] = { S0, S1 }, dl[2] = { D0, D1 }, pads[4] = { 1, 0, 0, 1 }, op[2] = { 1, 0 }, grp = G;
	int64_t OH = S0 * (H - 1) + 1 + (R - 1) * D0 + 1 - 1 - 0, OW = S1 * (W - 1) + 0 + (Q - 1) * D1 + 1 - 0 - 1;
	int64_t od[4] = { N, G * MG, OH, OW };
	double x[N * C * H * W], *want = calloc((size_t)(N * G * MG * OH * OW), sizeof(double));
	float w[C * MG * R * Q], bias[G * MG];
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	Onnx__NodeProto *n;

	for (int i = 0; i < N * C * H * W; i++)
		x[i] = (i % 7) - 3;
	for (int i = 0; i < C * MG * R * Q; i++)
		w[i] = (float)((i % 5) - 2) * 0.5f;
	for (int i = 0; i < G * MG; i++)
		bias[i] = (float)i;
	for (int m = 0; m < G * MG; m++)
		for (int i = 0; i < OH * OW; i++)
			want[m * OH * OW + i] = bias[m];
	for (int c = 0; c < C; c++)
		for (int iy = 0; iy < H; iy++)
			for (int ix = 0; ix < W; ix++)
				for (int m = 0; m < MG; m++)
					for (int r = 0; r < R; r++)
						for (int q = 0; q < Q; q++) {
							int64_t oy = iy * S0 - pads[0] + r * D0, ox = ix * S1 - pads[1] + q * D1;
							int g = c / (C / G);

							if (oy >= 0 && oy < OH && ox >= 0 && ox < OW)
								want[((g * MG + m) * OH + oy) * OW + ox] +=
									x[(c * H + iy) * W + ix] * w[((c * MG + m) * R + r) * Q + q];
						}
	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_init(b, "b", ONNX_FLOAT, 1, bd, bias);
	mb_input(b, "x");
	n = mb_node(b, "ConvTranspose", "x,w,b", "y");
	mb_attr_ints(b, n, "strides", st, 2);
	mb_attr_ints(b, n, "dilations", dl, 2);
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_ints(b, n, "output_padding", op, 2);
	mb_attr_i(b, n, "group", grp);
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 4, xd, x);
	cr_expect_eq(expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 4, od, want), 1, "on the device");
	onnx_tensor_release(&in);
	mb_free(b);
	free(want);
}

Test(onnx_ops15, decomposed_layer_norm_of_opset_13_runs_as_one_layernormalization)
{
	/* torch.onnx at opset 13: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul W, Add B */
	int64_t xd[2] = { 2, 3 }, sd[1] = { 3 }, ax[1] = { -1 };
	double x[6] = { 1, 2, 4, -3, 0, 9 }, want[6];
	float sc[3] = { 1, 2, 0.5f }, bias[3] = { 0, 1, -1 }, two = 2, eps = 1e-5f;
	struct mb *b = mb_new(13);
	struct onnx_tensor in;
	struct onnx_node_info info;
	Onnx__NodeProto *n;
	char err[256];
	int ret;
	struct onnx_model *m;

	for (int r = 0; r < 2; r++) {
		double mu = (x[r * 3] + x[r * 3 + 1] + x[r * 3 + 2]) / 3, var = 0;

		for (int j = 0; j < 3; j++)
			var += (x[r * 3 + j] - mu) * (x[r * 3 + j] - mu) / 3;
		for (int j = 0; j < 3; j++)
			want[r * 3 + j] = (x[r * 3 + j] - mu) / sqrt(var + 1e-5) * sc[j] + bias[j];
	}
	mb_init(b, "W", ONNX_FLOAT, 1, sd, sc);
	mb_init(b, "B", ONNX_FLOAT, 1, sd, bias);
	mb_init(b, "two", ONNX_FLOAT, 0, sd, &two);
	mb_init(b, "eps", ONNX_FLOAT, 0, sd, &eps);
	mb_input(b, "x");
	n = mb_node(b, "ReduceMean", "x", "m");
	mb_attr_ints(b, n, "axes", ax, 1);
	mb_node(b, "Sub", "x,m", "d");
	mb_node(b, "Pow", "d,two", "p");
	n = mb_node(b, "ReduceMean", "p", "v");
	mb_attr_ints(b, n, "axes", ax, 1);
	mb_node(b, "Add", "v,eps", "ve");
	mb_node(b, "Sqrt", "ve", "s");
	mb_node(b, "Div", "d,s", "q");
	mb_node(b, "Mul", "q,W", "qw");
	mb_node(b, "Add", "qw,B", "y");
	mb_output(b, "y");
	tin(&in, ONNX_FLOAT, 2, xd, x);
	expect_out(b, &in, 1, 1, 0, ONNX_FLOAT, 2, xd, want);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 1);
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_str_eq(info.op, "LayerNormalization");
	cr_assert_eq(onnx_model_node_info(m, 8, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_FOLDED);
	onnx_model_free(m);
	onnx_tensor_release(&in);
	mb_free(b);
}
