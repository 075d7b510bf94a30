/* SPDX-License-Identifier: MIT */
/*
 * The host operators of issue 30's first batch at what the ONNX backend tests leave out: the edge cases
 * the specification defines (Mod's signs, BitShift past the width, CumSum's exclusive/reverse on the
 * types this importer has, Hardmax's opset < 13 coercion) and the malformed inputs each kernel rejects
 * with the node's name and the reason.  Expected values are worked by hand from the specification.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "builder.h"

static struct onnx_model *load(struct mb *b, int *ret, char *err, size_t len)
{
	struct onnx_model *m = NULL;
	size_t n;
	const uint8_t *buf = mb_pack(b, &n);

	*ret = onnx_model_load_mem(buf, n, ONNX_LOAD_NO_FOLD, &m, err, len);
	return m;
}

/* Run b (CPU reference) with inputs in; output 0 must be dt of shape dims holding want. */
static void expect_out(struct mb *b, struct onnx_tensor *in, unsigned n_in, enum onnx_dtype dt, unsigned nd,
		       const int64_t *dims, const double *want)
{
	struct onnx_tensor out;
	char err[512] = "";
	int ret;
	struct onnx_model *m = load(b, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "load: %s", err);
	ret = onnx_run(m, NULL, in, n_in, &out, 1, NULL);
	cr_assert_eq(ret, 0, "run: %s", onnx_model_error(m));
	cr_assert_eq(out.dtype, dt);
	cr_assert_eq(out.ndim, nd);
	for (unsigned d = 0; d < nd; d++)
		cr_assert_eq(out.dims[d], dims[d], "dimension %u", d);
	for (size_t i = 0; i < out.count; i++) {
		double g = dt == ONNX_FLOAT ? ((float *)out.data)[i] :
			   dt == ONNX_INT64 ? (double)((int64_t *)out.data)[i] :
			   dt == ONNX_INT32 ? ((int32_t *)out.data)[i] : ((uint8_t *)out.data)[i];

		cr_expect(fabs(g - want[i]) <= 1e-6 * (1 + fabs(want[i])), "[%zu]: got %g, expected %g", i, g, want[i]);
	}
	onnx_tensor_release(&out);
	onnx_model_free(m);
}

/* The run must fail with -EINVAL and a message containing what (the node's operator and the reason). */
static void expect_error(struct mb *b, struct onnx_tensor *in, unsigned n_in, const char *what)
{
	struct onnx_tensor out;
	char err[512] = "";
	int ret;
	struct onnx_model *m = load(b, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "load: %s", err);
	ret = onnx_run(m, NULL, in, n_in, &out, 1, NULL);
	cr_expect_eq(ret, -EINVAL, "run returned %d (%s)", ret, onnx_model_error(m));
	cr_expect(strstr(onnx_model_error(m), what), "message: %s", onnx_model_error(m));
	if (!ret)
		onnx_tensor_release(&out);
	onnx_model_free(m);
}

static void tin(struct onnx_tensor *t, enum onnx_dtype dt, unsigned nd, const int64_t *dims, const double *v)
{
	cr_assert_eq(onnx_tensor_alloc(t, dt, nd, dims), 0);
	for (size_t i = 0; i < t->count; i++) {
		if (dt == ONNX_FLOAT)
			((float *)t->data)[i] = (float)v[i];
		else if (dt == ONNX_INT64)
			((int64_t *)t->data)[i] = (int64_t)v[i];
		else if (dt == ONNX_INT32)
			((int32_t *)t->data)[i] = (int32_t)v[i];
		else
			((uint8_t *)t->data)[i] = (uint8_t)v[i];
	}
}

static struct mb *one_node(int64_t opset, const char *op, const char *inputs, Onnx__NodeProto **n)
{
	struct mb *b = mb_new(opset);
	char buf[64];

	strcpy(buf, inputs);
	for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
		mb_input(b, s);
	*n = mb_node(b, op, inputs, "y");
	mb_output(b, "y");
	return b;
}

Test(onnx_ops30, mod_takes_the_divisor_sign_and_fmod_the_dividend_sign)
{
	/* Python: -4 % 3 = 2, 7 % -3 = -2, -7 % -1 = 0, 3 % 2 = 1; x % 0 = 0 (numpy); C fmod: -4, 1, 0, 1 */
	int64_t d[1] = { 5 };
	double x[5] = { -4, 7, 5, -7, 3 }, y[5] = { 3, -3, 0, -1, 2 }, py[5] = { 2, -2, 0, 0, 1 },
	       c[5] = { -1, 1, 0, 0, 1 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(13, "Mod", "a,b", &n);

	tin(&in[0], ONNX_INT32, 1, d, x);
	tin(&in[1], ONNX_INT32, 1, d, y);
	expect_out(b, in, 2, ONNX_INT32, 1, d, py);
	mb_attr_i(b, n, "fmod", 1);
	expect_out(b, in, 2, ONNX_INT32, 1, d, c);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

Test(onnx_ops30, mod_of_floats_without_fmod_is_rejected)
{
	int64_t d[1] = { 2 };
	double x[2] = { 1.5, -2 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(13, "Mod", "a,b", &n);

	tin(&in[0], ONNX_FLOAT, 1, d, x);
	tin(&in[1], ONNX_FLOAT, 1, d, x);
	expect_error(b, in, 2, "(Mod): fmod must be 1 for floating-point inputs");
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

Test(onnx_ops30, bitshift_by_the_width_or_more_gives_zero_and_direction_is_required)
{
	int64_t d[1] = { 3 };
	double x[3] = { 1, 255, 16 }, s[3] = { 8, 1, 9 }, want[3] = { 0, 254, 0 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(11, "BitShift", "x,s", &n);

	tin(&in[0], ONNX_UINT8, 1, d, x);
	tin(&in[1], ONNX_UINT8, 1, d, s);
	expect_error(b, in, 2, "(BitShift): direction '' (LEFT or RIGHT, required)");
	mb_attr_s(b, n, "direction", "LEFT");
	expect_out(b, in, 2, ONNX_UINT8, 1, d, want);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

Test(onnx_ops30, cumsum_exclusive_reverse_along_the_last_axis)
{
	/* [[1, 2, 3], [4, 5, 6]], axis -1, exclusive + reverse: the sum of what follows = [[5, 3, 0], [11, 6, 0]] */
	int64_t d[2] = { 2, 3 }, ad[1] = { 1 }, axis = -1;
	double x[6] = { 1, 2, 3, 4, 5, 6 }, want[6] = { 5, 3, 0, 11, 6, 0 }, wi[6] = { 1, 2, 3, 5, 7, 9 };
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	struct mb *b = mb_new(14);

	mb_init(b, "axis", ONNX_INT64, 0, ad, &axis);
	mb_input(b, "x");
	n = mb_node(b, "CumSum", "x,axis", "y");
	mb_output(b, "y");
	mb_attr_i(b, n, "exclusive", 1);
	mb_attr_i(b, n, "reverse", 1);
	tin(&in, ONNX_FLOAT, 2, d, x);
	expect_out(b, &in, 1, ONNX_FLOAT, 2, d, want);
	mb_free(b);
	onnx_tensor_release(&in);

	b = mb_new(14);	/* INT64 along axis 0, inclusive */
	axis = 0;
	mb_init(b, "axis", ONNX_INT64, 0, ad, &axis);
	mb_input(b, "x");
	mb_node(b, "CumSum", "x,axis", "y");
	mb_output(b, "y");
	tin(&in, ONNX_INT64, 2, d, x);
	expect_out(b, &in, 1, ONNX_INT64, 2, d, wi);
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops30, hardmax_before_opset_13_coerces_to_2d_at_axis)
{
	/* 2x2x2, axis 1: each batch row's 4 values are one row, one 1 at the first maximum */
	int64_t d[3] = { 2, 2, 2 };
	double x[8] = { 1, 9, 3, 9, 5, 4, 3, 2 }, want[8] = { 0, 1, 0, 0, 1, 0, 0, 0 };
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	struct mb *b = one_node(11, "Hardmax", "x", &n);

	tin(&in, ONNX_FLOAT, 3, d, x);
	expect_out(b, &in, 1, ONNX_FLOAT, 3, d, want);
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops30, trilu_rejects_a_rank_1_input)
{
	int64_t d[1] = { 3 };
	double x[3] = { 1, 2, 3 };
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	struct mb *b = one_node(14, "Trilu", "x", &n);

	tin(&in, ONNX_FLOAT, 1, d, x);
	expect_error(b, &in, 1, "(Trilu): input has rank 1 (Trilu needs at least 2)");
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops30, depthtospace_rejects_channels_not_a_multiple_of_blocksize_squared)
{
	int64_t d[4] = { 1, 6, 1, 1 };
	double x[6] = { 0 };
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	struct mb *b = one_node(13, "DepthToSpace", "x", &n);

	mb_attr_i(b, n, "blocksize", 2);
	tin(&in, ONNX_FLOAT, 4, d, x);
	expect_error(b, &in, 1, "(DepthToSpace): channels 6 are not a multiple of blocksize^2 = 4");
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_ops30, gather_and_scatter_elements_reject_an_out_of_range_index)
{
	int64_t d[1] = { 3 };
	double x[3] = { 1, 2, 3 }, idx[3] = { 0, -3, 3 };
	struct onnx_tensor in[3];
	Onnx__NodeProto *n;
	struct mb *b = one_node(13, "GatherElements", "x,i", &n);

	tin(&in[0], ONNX_FLOAT, 1, d, x);
	tin(&in[1], ONNX_INT64, 1, d, idx);
	tin(&in[2], ONNX_FLOAT, 1, d, x);
	expect_error(b, in, 2, "(GatherElements): index 3 is out of range for a dimension of 3");
	mb_free(b);
	b = one_node(16, "ScatterElements", "x,i,u", &n);
	expect_error(b, in, 3, "(ScatterElements): index 3 is out of range for a dimension of 3");
	mb_attr_s(b, n, "reduction", "avg");
	expect_error(b, in, 3, "(ScatterElements): reduction 'avg'");
	mb_free(b);
	for (int i = 0; i < 3; i++)
		onnx_tensor_release(&in[i]);
}

Test(onnx_ops30, scatternd_rejects_updates_of_the_wrong_shape)
{
	/* data [4], indices [[1], [2]] (k = 1): updates must be [2], here [3] */
	int64_t dd[1] = { 4 }, id[2] = { 2, 1 }, ud[1] = { 3 };
	double x[4] = { 0 }, idx[2] = { 1, 2 }, u[3] = { 0 };
	struct onnx_tensor in[3];
	Onnx__NodeProto *n;
	struct mb *b = one_node(16, "ScatterND", "x,i,u", &n);

	tin(&in[0], ONNX_FLOAT, 1, dd, x);
	tin(&in[1], ONNX_INT64, 2, id, idx);
	tin(&in[2], ONNX_FLOAT, 1, ud, u);
	expect_error(b, in, 3, "(ScatterND): updates must have the shape indices.shape[:-1] + data.shape[1:]");
	mb_free(b);
	for (int i = 0; i < 3; i++)
		onnx_tensor_release(&in[i]);
}

Test(onnx_ops30, onehot_rejects_a_depth_below_one)
{
	int64_t d[1] = { 2 }, sd[1] = { 1 };
	double idx[2] = { 0, 1 }, depth[1] = { 0 }, v[2] = { 0, 1 };
	struct onnx_tensor in[3];
	Onnx__NodeProto *n;
	struct mb *b = one_node(11, "OneHot", "i,depth,v", &n);

	tin(&in[0], ONNX_INT64, 1, d, idx);
	tin(&in[1], ONNX_FLOAT, 1, sd, depth);
	tin(&in[2], ONNX_FLOAT, 1, d, v);
	expect_error(b, in, 3, "(OneHot): depth 0 (1 to");
	mb_free(b);
	for (int i = 0; i < 3; i++)
		onnx_tensor_release(&in[i]);
}

Test(onnx_ops30, shrink_with_a_negative_lambd_tests_the_lower_piece_first)
{
	/* the specification's reference: where(x < -lambd, x + bias, where(x > lambd, x - bias, 0)); lambd -1,
	 * bias 0.5: 0 and -2 are below 1 (x + 0.5), 2 is above -1 (x - 0.5) */
	int64_t d[1] = { 3 };
	double x[3] = { 0, 2, -2 }, want[3] = { 0.5, 1.5, -1.5 };
	struct onnx_tensor in;
	Onnx__NodeProto *n;
	struct mb *b = one_node(9, "Shrink", "x", &n);

	mb_attr_f(b, n, "lambd", -1);
	mb_attr_f(b, n, "bias", 0.5f);
	tin(&in, ONNX_FLOAT, 1, d, x);
	expect_out(b, &in, 1, ONNX_FLOAT, 1, d, want);
	mb_free(b);
	onnx_tensor_release(&in);
}

/* ---- issue 30, the rest of the backend suite: the cases the backend tests leave out ---- */

/* Each case: one node, its inputs, and the reason its message must give (with the operator's name). */
static void error_case(const char *op, const char *inputs, unsigned n_in, struct onnx_tensor *in,
		       void (*attrs)(struct mb *, Onnx__NodeProto *), const char *what)
{
	Onnx__NodeProto *n;
	struct mb *b = one_node(17, op, inputs, &n);

	if (attrs)
		attrs(b, n);
	expect_error(b, in, n_in, what);
	mb_free(b);
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
}

static void attr_reduction_avg(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_s(b, n, "reduction", "avg");
}

static void attr_equation_bad(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_s(b, n, "equation", "ij,j1->i");
}

static void attr_equation_three_terms(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_s(b, n, "equation", "ij,jk,k->i");
}

Test(onnx_ops30, loss_operators_reject_bad_targets_and_reductions)
{
	int64_t xd[2] = { 1, 3 }, td[1] = { 1 }, bd[2] = { 2, 2 };
	double x[3] = { 0.1, 0.2, 0.7 }, t5[1] = { 5 }, t0[1] = { 0 }, x4[4] = { 0 };
	struct onnx_tensor in[2];

	tin(&in[0], ONNX_FLOAT, 2, xd, x);
	tin(&in[1], ONNX_INT64, 1, td, t5);
	error_case("NegativeLogLikelihoodLoss", "x,t", 2, in, NULL,
		   "(NegativeLogLikelihoodLoss): target 5 at 0 is out of range for 3 classes");
	tin(&in[0], ONNX_FLOAT, 2, xd, x);
	tin(&in[1], ONNX_INT64, 1, td, t0);
	error_case("NegativeLogLikelihoodLoss", "x,t", 2, in, attr_reduction_avg,
		   "(NegativeLogLikelihoodLoss): reduction 'avg' (none, sum or mean)");
	tin(&in[0], ONNX_FLOAT, 2, bd, x4);
	tin(&in[1], ONNX_INT64, 2, bd, x4);
	error_case("SoftmaxCrossEntropyLoss", "x,t", 2, in, NULL,
		   "(SoftmaxCrossEntropyLoss): target has rank 2 / batch 2; input [N, C, ...] needs [N, ...]");
}

Test(onnx_ops30, selection_operators_range_check_indices_and_counts)
{
	int64_t d3[1] = { 3 }, d1[1] = { 1 }, d4[1] = { 4 }, d22[2] = { 2, 2 }, d11[2] = { 1, 1 };
	double x[4] = { 1, 2, 3, 4 }, k4[1] = { 4 }, i7[1] = { 7 }, c4[4] = { 1, 0, 1, 1 }, l3[2] = { 3, 1 };
	struct onnx_tensor in[2];

	tin(&in[0], ONNX_FLOAT, 1, d3, x);
	tin(&in[1], ONNX_INT64, 1, d1, k4);
	error_case("TopK", "x,k", 2, in, NULL, "(TopK): K = 4 is out of range for axis 0 of size 3");
	tin(&in[0], ONNX_FLOAT, 2, d22, x);
	tin(&in[1], ONNX_INT64, 2, d11, i7);
	error_case("GatherND", "x,i", 2, in, NULL, "(GatherND): index 7 is out of range for dimension 0 (2)");
	tin(&in[0], ONNX_FLOAT, 1, d3, x);
	tin(&in[1], ONNX_BOOL, 1, d4, c4);
	error_case("Compress", "x,c", 2, in, NULL, "(Compress): condition has 4 values, the axis only 3");
	tin(&in[0], ONNX_FLOAT, 2, d22, x);
	tin(&in[1], ONNX_INT64, 1, (int64_t[1]){ 2 }, l3);
	error_case("ReverseSequence", "x,l", 2, in, NULL, "(ReverseSequence): sequence_lens[0] = 3 (0 to 2)");
}

Test(onnx_ops30, einsum_rejects_bad_labels_and_term_counts)
{
	int64_t d22[2] = { 2, 2 };
	double x[4] = { 1, 2, 3, 4 };
	struct onnx_tensor in[2];

	tin(&in[0], ONNX_FLOAT, 2, d22, x);
	tin(&in[1], ONNX_FLOAT, 2, d22, x);
	error_case("Einsum", "a,b", 2, in, attr_equation_bad, "(Einsum): equation: '1' is not a label (a-z, A-Z)");
	tin(&in[0], ONNX_FLOAT, 2, d22, x);
	tin(&in[1], ONNX_FLOAT, 2, d22, x);
	error_case("Einsum", "a,b", 2, in, attr_equation_three_terms, "(Einsum): equation has more terms than the 2 inputs");
}

Test(onnx_ops30, normalisations_and_generators_reject_bad_shapes)
{
	int64_t d4[4] = { 1, 2, 1, 1 }, d2[1] = { 3 }, d0[1] = { 1 }, d23[2] = { 2, 3 };
	double x[6] = { 1, 2, 3, 4, 5, 6 }, neg[1] = { -1 }, nan1[1] = { NAN };
	struct onnx_tensor in[3];

	tin(&in[0], ONNX_FLOAT, 4, d4, x);
	error_case("LRN", "x", 1, in, NULL, "(LRN): size 0 (required, >= 1)");
	tin(&in[0], ONNX_FLOAT, 4, d4, x);
	tin(&in[1], ONNX_FLOAT, 1, d2, x);
	tin(&in[2], ONNX_FLOAT, 1, d2, x);
	error_case("InstanceNormalization", "x,s,b", 3, in, NULL,
		   "(InstanceNormalization): scale and B must be [C] = [2] tensors of the input's type");
	tin(&in[0], ONNX_INT64, 1, d0, neg);
	error_case("HannWindow", "n", 1, in, NULL, "(HannWindow): size -1 (0 to 2147483647)");
	tin(&in[0], ONNX_FLOAT, 1, d0, nan1);
	error_case("DynamicQuantizeLinear", "x", 1, in, NULL, "(DynamicQuantizeLinear): x holds a NaN at 0");
	tin(&in[0], ONNX_FLOAT, 2, d23, x);
	error_case("Det", "x", 1, in, NULL, "(Det): X must be a floating-point [..., M, M] tensor");
}

Test(onnx_ops30, einsum_implicit_output_is_the_single_labels_in_order)
{
	/* "ij,jk" = numpy.einsum('ij,jk') = the matrix product [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]] */
	int64_t d[2] = { 2, 2 };
	double a[4] = { 1, 2, 3, 4 }, b2[4] = { 5, 6, 7, 8 }, want[4] = { 19, 22, 43, 50 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(12, "Einsum", "a,b", &n);

	mb_attr_s(b, n, "equation", "ij,jk");
	tin(&in[0], ONNX_FLOAT, 2, d, a);
	tin(&in[1], ONNX_FLOAT, 2, d, b2);
	expect_out(b, in, 2, ONNX_FLOAT, 2, d, want);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

Test(onnx_ops30, round_is_half_to_even_and_topk_ties_keep_the_lower_index)
{
	int64_t d6[1] = { 6 }, d1[1] = { 1 }, d2[1] = { 2 };
	double x[6] = { 0.5, 1.5, 2.5, -0.5, -1.5, 2.4 }, want[6] = { 0, 2, 2, -0.0, -2, 2 };
	double t[6] = { 3, 1, 3, 2, 1, 3 }, k2[1] = { 2 }, idx[2] = { 0, 2 }, vals[2] = { 3, 3 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(13, "Round", "x", &n);

	tin(&in[0], ONNX_FLOAT, 1, d6, x);
	expect_out(b, in, 1, ONNX_FLOAT, 1, d6, want);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	/* TopK(k = 2) of [3, 1, 3, 2, 1, 3]: values [3, 3] at indices [0, 2] (the specification: ties by index) */
	b = mb_new(13);
	mb_input(b, "x");
	mb_input(b, "k");
	mb_node(b, "TopK", "x,k", "v,i");
	mb_output(b, "i");
	tin(&in[0], ONNX_FLOAT, 1, d6, t);
	tin(&in[1], ONNX_INT64, 1, d1, k2);
	expect_out(b, in, 2, ONNX_INT64, 1, d2, idx);
	mb_free(b);
	b = mb_new(13);
	mb_input(b, "x");
	mb_input(b, "k");
	mb_node(b, "TopK", "x,k", "v,i");
	mb_output(b, "v");
	expect_out(b, in, 2, ONNX_FLOAT, 1, d2, vals);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

Test(onnx_ops30, dynamic_quantize_linear_matches_the_specification_example)
{
	/* the specification's example: x = [0, 2, -3, -2.5, 1.34, 0.5] -> scale 5/255, zero point 153,
	 * y = [153, 255, 0, 26, 221, 179] */
	int64_t d6[1] = { 6 };
	double x[6] = { 0, 2, -3, -2.5, 1.34, 0.5 }, want[6] = { 153, 255, 0, 26, 221, 179 };
	struct onnx_tensor in[1];
	struct mb *b = mb_new(11);

	mb_input(b, "x");
	mb_node(b, "DynamicQuantizeLinear", "x", "y,s,z");
	mb_output(b, "y");
	tin(&in[0], ONNX_FLOAT, 1, d6, x);
	expect_out(b, in, 1, ONNX_UINT8, 1, d6, want);
	mb_free(b);
	onnx_tensor_release(&in[0]);
}

static void attr_hidden_3(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_i(b, n, "hidden_size", 3);
}

static void attr_direction_sideways(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_i(b, n, "hidden_size", 1);
	mb_attr_s(b, n, "direction", "sideways");
}

static void attr_kernel_222(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_ints(b, n, "kernel_shape", (const int64_t[3]){ 2, 2, 2 }, 3);
	mb_attr_ints(b, n, "strides", (const int64_t[2]){ 1, 1 }, 2);
}

Test(onnx_ops30, recurrent_operators_check_weight_shapes_and_direction)
{
	int64_t xd[3] = { 2, 1, 2 }, wd[3] = { 1, 1, 2 }, rd[3] = { 1, 1, 1 };
	double v[4] = { 0.1, 0.2, 0.3, 0.4 };
	struct onnx_tensor in[3];

	tin(&in[0], ONNX_FLOAT, 3, xd, v);
	tin(&in[1], ONNX_FLOAT, 3, wd, v);
	tin(&in[2], ONNX_FLOAT, 3, rd, v);
	error_case("LSTM", "x,w,r", 3, in, attr_hidden_3, "(LSTM): W must be [1, 12, 2]");
	tin(&in[0], ONNX_FLOAT, 3, xd, v);
	tin(&in[1], ONNX_FLOAT, 3, wd, v);
	tin(&in[2], ONNX_FLOAT, 3, rd, v);
	error_case("RNN", "x,w,r", 3, in, attr_direction_sideways,
		   "(RNN): direction 'sideways' (forward, reverse or bidirectional)");
	/* a 1-byte R was read as floats past its end (fuzz-load, ASan) */
	tin(&in[0], ONNX_FLOAT, 3, xd, v);
	tin(&in[1], ONNX_FLOAT, 3, wd, v);
	tin(&in[2], ONNX_UINT8, 3, rd, v);
	error_case("RNN", "x,w,r", 3, in, NULL, "(RNN): R must be a floating-point tensor, not UINT8");
}

Test(onnx_ops30, pooling_of_5d_tensors_checks_its_attributes)
{
	int64_t xd[5] = { 1, 1, 2, 2, 2 };
	double v[8] = { 0 };
	struct onnx_tensor in[1];

	tin(&in[0], ONNX_FLOAT, 5, xd, v);
	error_case("MaxPool", "x", 1, in, attr_kernel_222, "(MaxPool): strides has 2 values (3)");
}

Test(onnx_ops30, conv_of_5d_tensors_matches_a_hand_sum)
{
	/* X 1x1x2x2x2 = 1..8, W 1x1x2x2x2 all ones, no padding: the one output is 36 */
	int64_t xd[5] = { 1, 1, 2, 2, 2 }, od[5] = { 1, 1, 1, 1, 1 };
	double x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, want[1] = { 36 };
	struct onnx_tensor in[2];
	Onnx__NodeProto *n;
	struct mb *b = one_node(11, "Conv", "x,w", &n);

	tin(&in[0], ONNX_FLOAT, 5, xd, x);
	tin(&in[1], ONNX_FLOAT, 5, xd, ones);
	expect_out(b, in, 2, ONNX_FLOAT, 5, od, want);
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
}

static void attr_mode_cubic(struct mb *b, Onnx__NodeProto *n)
{
	mb_attr_s(b, n, "mode", "cubic");
}

Test(onnx_ops30, detection_operators_reject_bad_shapes_and_modes)
{
	int64_t bd[3] = { 1, 2, 4 }, sd[3] = { 1, 1, 3 }, xd[4] = { 1, 1, 2, 2 }, gd[4] = { 1, 1, 1, 2 };
	double v[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
	struct onnx_tensor in[2];

	tin(&in[0], ONNX_FLOAT, 3, bd, v);
	tin(&in[1], ONNX_FLOAT, 3, sd, v);
	error_case("NonMaxSuppression", "b,s", 2, in, NULL, "(NonMaxSuppression): scores must be a floating-point [1, classes, 2] tensor");
	tin(&in[0], ONNX_FLOAT, 4, xd, v);
	tin(&in[1], ONNX_FLOAT, 4, gd, v);
	error_case("GridSample", "x,g", 2, in, attr_mode_cubic, "(GridSample): mode 'cubic' (bilinear, nearest or bicubic)");
}

/* A grid of NaN, infinities and 1e30 (a fuzzer's float bytes) samples outside the image: zeros padding
 * gives 0 in every mode, border the edge pixel; no float-to-integer overflow (UBSan in the asan stage). */
Test(onnx_ops30, gridsample_grid_far_outside_or_nan_samples_the_padding)
{
	static const char *const modes[] = { "bilinear", "nearest", "bicubic" };
	int64_t xd[4] = { 1, 1, 2, 2 }, gd[4] = { 1, 1, 4, 2 }, od[4] = { 1, 1, 1, 4 };
	double x[4] = { 1, 2, 3, 4 }, grid[8] = { NAN, NAN, INFINITY, 0, -INFINITY, 1e30, 1e30, -1e30 };
	double zeros[4] = { 0, 0, 0, 0 };

	for (int pad = 0; pad < 2; pad++)
		for (int md = 0; md < 3; md++) {
			struct onnx_tensor in[2];
			struct mb *b = mb_new(16);
			Onnx__NodeProto *n;
			/* border: NaN -> the lowest corner (1); x +inf, y 0 -> the right edge of the middle: 2 or
			 * 3 / 4 by mode (checked only for being a pixel value or between them); -inf, 1e30 -> (bottom,
			 * left) = 3; 1e30, -1e30 -> (top, right) = 2 */
			double border[4] = { 1, 0, 3, 2 };

			mb_input(b, "x");
			mb_input(b, "g");
			n = mb_node(b, "GridSample", "x,g", "y");
			mb_attr_s(b, n, "mode", modes[md]);
			mb_attr_s(b, n, "padding_mode", pad ? "border" : "zeros");
			mb_attr_i(b, n, "align_corners", 1);
			mb_output(b, "y");
			tin(&in[0], ONNX_FLOAT, 4, xd, x);
			tin(&in[1], ONNX_FLOAT, 4, gd, grid);
			if (!pad) {
				expect_out(b, in, 2, ONNX_FLOAT, 4, od, zeros);
			} else {
				struct onnx_tensor out;
				char err[512] = "";
				int ret;
				struct onnx_model *m = load(b, &ret, err, sizeof(err));

				cr_assert_eq(ret, 0, "load: %s", err);
				cr_assert_eq(onnx_run(m, NULL, in, 2, &out, 1, NULL), 0, "%s", onnx_model_error(m));
				for (int i = 0; i < 4; i++) {
					float v = ((float *)out.data)[i];

					if (i == 1)
						cr_expect(v >= 1 && v <= 4, "%s border [1]: %g", modes[md], v);
					else
						cr_expect(v == (float)border[i], "%s border [%d]: %g, expected %g", modes[md], i, v,
							  border[i]);
				}
				onnx_tensor_release(&out);
				onnx_model_free(m);
			}
			mb_free(b);
			onnx_tensor_release(&in[0]);
			onnx_tensor_release(&in[1]);
		}
}

Test(onnx_ops30, nms_keeps_the_best_box_of_an_overlapping_pair)
{
	/* boxes 0 and 1 overlap with IoU 0.81 > 0.5, box 2 is apart: scores 0.9, 0.8, 0.7 select 0 and 2 */
	int64_t bd[3] = { 1, 3, 4 }, sd[3] = { 1, 1, 3 }, od[2] = { 2, 3 }, one[1] = { 1 };
	double boxes[12] = { 0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6 }, sc[3] = { 0.9, 0.8, 0.7 };
	double mo[1] = { 10 }, th[1] = { 0.5 }, want[6] = { 0, 0, 0, 0, 0, 2 };
	struct onnx_tensor in[4];
	struct mb *b = mb_new(11);

	mb_input(b, "b");
	mb_input(b, "s");
	mb_input(b, "m");
	mb_input(b, "t");
	mb_node(b, "NonMaxSuppression", "b,s,m,t", "y");
	mb_output(b, "y");
	tin(&in[0], ONNX_FLOAT, 3, bd, boxes);
	tin(&in[1], ONNX_FLOAT, 3, sd, sc);
	tin(&in[2], ONNX_INT64, 1, one, mo);
	tin(&in[3], ONNX_FLOAT, 1, one, th);
	expect_out(b, in, 4, ONNX_INT64, 2, od, want);
	mb_free(b);
	for (int i = 0; i < 4; i++)
		onnx_tensor_release(&in[i]);
}
