/* SPDX-License-Identifier: MIT */
/*
 * The host operators of issue 30's first batch at what the ONNX backend tests leave out: the edge cases
 * the specification defines (Mod's signs, BitShift past the width) and the malformed inputs each kernel rejects
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
