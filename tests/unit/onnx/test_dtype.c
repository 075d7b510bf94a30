/* SPDX-License-Identifier: MIT */
/*
 * Element types (issue 30, onnx/src/model/dtype.c): Cast to FLOAT16 and BFLOAT16 rounds exactly as numpy's
 * astype(float16) and PyTorch's .to(bfloat16) — both run here, at test time, on the same floats —,
 * FLOAT16 initialisers load and feed FLOAT kernels (results narrowed back to FLOAT16), DOUBLE Add keeps
 * double's range and precision, and a tensor of a type still unsupported is refused naming the tensor.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "dtype.h"

#define N_VALS 64

/* Edge cases of the 16-bit formats (ties, subnormals, overflow, NaN, inf) and seeded random floats
 * spread over the exponents both formats cover. */
static void test_values(float *v)
{
	static const float edge[] = { 0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e6f, 6.1035156e-05f,
				      5.9604645e-08f, 2.9802322e-08f, 1e-10f, 1.00048828125f, 1.000732421875f,
				      3.0e38f, INFINITY, -INFINITY, 0.1f, 1.0039062f };
	uint32_t rng = 30;
	size_t n = sizeof(edge) / sizeof(edge[0]);

	memcpy(v, edge, sizeof(edge));
	for (size_t i = n; i < N_VALS; i++)
		v[i] = mb_frand(&rng) * powf(2.0f, (float)((int)(mb_frand(&rng) * 20)));
}

/* The 16-bit patterns python prints for v (expr: a numpy/torch expression of x, a float32 array). */
static void python_bits(const float *v, const char *expr, uint16_t *out)
{
	char path[] = "/tmp/tnpu-dtype-XXXXXX", cmd[1024];
	int fd = mkstemp(path);
	FILE *p;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, v, N_VALS * sizeof(float)), (ssize_t)(N_VALS * sizeof(float)));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import sys, numpy as np, torch; x = np.fromfile(sys.argv[1], dtype=np.float32); "
		 "print(\" \".join(str(int(b)) for b in %s))' %s", expr, path);
	p = popen(cmd, "r");
	cr_assert(p);
	for (int i = 0; i < N_VALS; i++) {
		unsigned b;

		cr_assert_eq(fscanf(p, "%u", &b), 1, "python gave fewer than %d values (%s)", N_VALS, cmd);
		out[i] = (uint16_t)b;
	}
	pclose(p);
	unlink(path);
}

static void cast_matches(int to, const char *expr)
{
	struct mb *b = mb_new(17);
	Onnx__NodeProto *n = mb_node(b, "Cast", "x", "y");
	struct onnx_tensor in, out;
	struct onnx_model *m = NULL;
	int64_t dims[1] = { N_VALS };
	uint16_t want[N_VALS];
	char err[512];
	size_t len;
	const uint8_t *buf;

	mb_attr_i(b, n, "to", to);
	mb_input(b, "x");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT, 1, dims), 0);
	test_values(in.data);
	python_bits(in.data, expr, want);
	cr_assert_eq(onnx_run(m, NULL, &in, 1, &out, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(out.dtype, to);
	for (int i = 0; i < N_VALS; i++) {
		uint16_t got = ((uint16_t *)out.data)[i];
		bool nan = (want[i] & 0x7fff) > (to == ONNX_FLOAT16 ? 0x7c00 : 0x7f80);

		if (nan)	/* any NaN pattern is a NaN */
			cr_expect((got & 0x7fff) > (to == ONNX_FLOAT16 ? 0x7c00 : 0x7f80), "[%d] %g: got 0x%04x, expected a NaN",
				  i, ((float *)in.data)[i], got);
		else
			cr_expect_eq(got, want[i], "[%d] %.9g: got 0x%04x, expected 0x%04x", i, ((float *)in.data)[i], got,
				     want[i]);
	}
	onnx_tensor_release(&in);
	onnx_tensor_release(&out);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_dtype, cast_to_float16_rounds_as_numpy)
{
	cast_matches(ONNX_FLOAT16, "x.astype(np.float16).view(np.uint16)");
}

Test(onnx_dtype, cast_to_bfloat16_rounds_as_pytorch)
{
	cast_matches(ONNX_BFLOAT16, "torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)");
}

/* Relu(x + w) with w a FLOAT16 initialiser and x a FLOAT16 input: the result is FLOAT16, each value the
 * float16 rounding of the float32 sum (numpy: np.maximum(x + w, 0) in float16 rounds the same way for
 * these exact halves). */
Test(onnx_dtype, float16_initialiser_loads_and_feeds_float_kernels)
{
	struct mb *b = mb_new(17);
	int64_t dims[1] = { 4 };
	const uint16_t w[4] = { 0x3c00 /* 1 */, 0xc000 /* -2 */, 0x3800 /* 0.5 */, 0x7bff /* 65504 */ };
	const uint16_t x[4] = { 0x3c00 /* 1 */, 0x3c00 /* 1 */, 0x3400 /* 0.25 */, 0x5800 /* 128 */ };
	const uint16_t want[4] = { 0x4000 /* 2 */, 0x0000 /* relu(-1) */, 0x3a00 /* 0.75 */, 0x7c00 /* inf */ };
	struct onnx_tensor in, out;
	struct onnx_model *m = NULL;
	char err[512];
	size_t len;
	const uint8_t *buf;

	mb_init(b, "w", ONNX_FLOAT16, 1, dims, w);
	mb_node(b, "Add", "x,w", "s");
	mb_node(b, "Relu", "s", "y");
	mb_input_typed(b, "x", ONNX_FLOAT16, 1, dims);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT16, 1, dims), 0);
	memcpy(in.data, x, sizeof(x));
	cr_assert_eq(onnx_run(m, NULL, &in, 1, &out, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(out.dtype, ONNX_FLOAT16);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(((uint16_t *)out.data)[i], want[i], "[%d]: got 0x%04x, expected 0x%04x", i,
			     ((uint16_t *)out.data)[i], want[i]);
	onnx_tensor_release(&in);
	onnx_tensor_release(&out);
	onnx_model_free(m);
	mb_free(b);
}

/* 1e300 + 1e300 and 0.1 + 0.2 in double: beyond FLOAT's range and below its precision. */
Test(onnx_dtype, double_add_keeps_double_range_and_precision)
{
	struct mb *b = mb_new(17);
	int64_t dims[1] = { 2 };
	const double a[2] = { 1e300, 0.1 }, c[2] = { 1e300, 0.2 };
	struct onnx_tensor in[2], out;
	struct onnx_model *m = NULL;
	char err[512];
	size_t len;
	const uint8_t *buf;

	mb_node(b, "Add", "a,c", "y");
	mb_input(b, "a");
	mb_input(b, "c");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_tensor_alloc(&in[0], ONNX_DOUBLE, 1, dims), 0);
	cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_DOUBLE, 1, dims), 0);
	memcpy(in[0].data, a, sizeof(a));
	memcpy(in[1].data, c, sizeof(c));
	cr_assert_eq(onnx_run(m, NULL, in, 2, &out, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(out.dtype, ONNX_DOUBLE);
	cr_expect_eq(((double *)out.data)[0], 1e300 + 1e300);
	cr_expect_eq(((double *)out.data)[1], 0.1 + 0.2);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);
	onnx_tensor_release(&out);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_dtype, unsupported_initialiser_type_is_refused_naming_the_tensor)
{
	struct mb *b = mb_new(17);
	int64_t dims[1] = { 2 };
	const uint8_t raw[16] = { 0 };
	struct onnx_model *m = NULL;
	char err[512] = "";
	size_t len;
	const uint8_t *buf;

	mb_init(b, "cplx_weights", 14 /* COMPLEX64 */, 1, dims, raw);
	mb_node(b, "Identity", "cplx_weights", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), -EOPNOTSUPP, "%s", err);
	cr_expect(strstr(err, "cplx_weights") && strstr(err, "COMPLEX64"), "message: %s", err);
	onnx_model_free(m);
	mb_free(b);
}

/* A binary16 pattern's value, decoded here independently of dtype.c. */
static double half_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, f = h & 0x3ff;
	double v = e ? ldexp(1024 + f, e - 25) : ldexp(f, -24);

	return (h & 0x8000) ? -v : v;
}

/* The device's (or the host's) value against the exact one: within one binary16 step of it. */
static void expect_half_near(const struct onnx_tensor *y, const double *ref, const char *what)
{
	cr_assert_eq(y->dtype, ONNX_FLOAT16, "%s: output type %d", what, y->dtype);
	for (size_t i = 0; i < y->count; i++) {
		double got = half_value(((const uint16_t *)y->data)[i]), tol = ldexp(fmax(fabs(ref[i]), 0x1p-14), -10);

		cr_expect(fabs(got - ref[i]) <= tol, "%s [%zu]: got %.9g, exact %.9g", what, i, got, ref[i]);
	}
}

/*
 * A half-precision network (issue #30): FLOAT16 input, Conv weights and bias, FLOAT16 output. Loaded as
 * usual it computes in FLOAT (f16_promote.c), so the compiler places the Conv on the device (it was a host
 * step: the device takes no FLOAT16) and the node-by-node run puts it there too; the output is FLOAT16,
 * within one binary16 step of the exact convolution of the same halves (computed here in double). Loaded
 * with ONNX_LOAD_NO_FOLD (the graph as written) it keeps its types and runs on the host.
 */
Test(onnx_dtype, half_precision_network_computes_in_float_on_the_device)
{
	static const int64_t xd[4] = { 1, 2, 5, 5 }, wd[4] = { 3, 2, 3, 3 }, bd[1] = { 3 }, pads[4] = { 1, 1, 1, 1 };
	uint16_t x[50], w[54], bias[3];
	double ref[75];
	struct accel_dev *dev = NULL;
	struct mb *b = mb_new(13);
	uint32_t rng = 16;
	Onnx__NodeProto *n;
	const uint8_t *buf;
	size_t len;

	for (int i = 0; i < 50; i++)
		x[i] = onnx_f32_to_f16(mb_frand(&rng) * 2);
	for (int i = 0; i < 54; i++)
		w[i] = onnx_f32_to_f16(mb_frand(&rng) * 0.5f);
	for (int i = 0; i < 3; i++)
		bias[i] = onnx_f32_to_f16(mb_frand(&rng) * 0.1f);
	for (int k = 0; k < 3; k++)
		for (int oy = 0; oy < 5; oy++)
			for (int ox = 0; ox < 5; ox++) {
				double s = half_value(bias[k]);

				for (int c = 0; c < 2; c++)
					for (int r = 0; r < 3; r++)
						for (int q = 0; q < 3; q++) {
							int iy = oy + r - 1, ix = ox + q - 1;

							if (iy >= 0 && iy < 5 && ix >= 0 && ix < 5)
								s += half_value(x[(c * 5 + iy) * 5 + ix]) *
								     half_value(w[((k * 2 + c) * 3 + r) * 3 + q]);
						}
				ref[(k * 5 + oy) * 5 + ox] = s > 0 ? s : 0;
			}
	mb_init(b, "w", ONNX_FLOAT16, 4, wd, w);
	mb_init(b, "b", ONNX_FLOAT16, 1, bd, bias);
	mb_input_typed(b, "x", ONNX_FLOAT16, 4, xd);
	n = mb_node(b, "Conv", "x,w,b", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(accel_open("sim", &dev), 0);
	for (int as_written = 0; as_written < 2; as_written++) {
		struct onnx_compiled *cm = NULL;
		struct onnx_compiled_step st;
		struct onnx_run_stats rs;
		struct onnx_model *m = NULL;
		struct onnx_tensor in, out;
		char err[512] = "";

		cr_assert_eq(onnx_model_load_mem(buf, len, as_written ? ONNX_LOAD_NO_FOLD : 0, &m, err, sizeof(err)), 0,
			     "%s", err);
		cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT16, 4, xd), 0);
		memcpy(in.data, x, sizeof(x));
		cr_assert_eq(onnx_run(m, dev, &in, 1, &out, 1, &rs), 0, "%s", onnx_model_error(m));
		expect_half_near(&out, ref, as_written ? "as written, node by node" : "node by node");
		cr_expect_eq(rs.accel_nodes, as_written ? 0u : 1u, "accel nodes %u", rs.accel_nodes);
		onnx_tensor_release(&out);
		if (!as_written) {
			cr_assert_eq(onnx_compile(m, dev, &in, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
			cr_assert_eq(onnx_compiled_step_info(cm, 0, &st), 0);
			cr_expect(st.device && !strcmp(st.kind, "conv"), "the Conv is a %s step", st.kind);
			cr_assert_eq(onnx_compiled_run(cm, &in, 1, &out, 1, NULL), 0, "%s", onnx_compiled_error(cm));
			expect_half_near(&out, ref, "compiled");
			onnx_tensor_release(&out);
			onnx_compiled_free(cm);
		}
		onnx_tensor_release(&in);
		onnx_model_free(m);
	}
	accel_close(dev);
	mb_free(b);
}
