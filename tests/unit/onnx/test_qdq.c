/* SPDX-License-Identifier: MIT */
/*
 * int8 lowering of QDQ graphs (onnx/src/compile/compile_qdq.c): the pattern matcher (which nodes become int8
 * device steps, which fall back), the requantisation folding (per tensor and, with SFU QCOL, per channel
 * in the epilogue: one job; per channel without it: an int32 output and accel_requant: two) and the numbers, against qdq_ref.py: numpy evaluating
 * the same model file exactly as the ONNX specification defines each operator (float64 between Q and
 * DQ, round half to even), run at test time.  Outputs must be within 1 LSB (Documentation/onnx.md).
 * The Add: one accel_qadd job (CAP_FEATURES bit 20) or six without it, on random scales and zero
 * points, and through a compiled-model file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"
#include "model_values.h"

#ifndef QDQ_REF
#define QDQ_REF "qdq_ref.py"
#endif

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

TestSuite(onnx_qdq, .init = setup, .fini = teardown);

/* The same graphs on a device without per-column requantisation in the SFU (CAP_FEATURES bit 19 off)
 * and without the vector units' quantised add (bit 20 off): per-channel steps take two jobs, an int32
 * output and accel_requant; an Add six (int32 rescales, add, accel_requant). */
static void setup_v1(void)
{
	cr_assert_eq(accel_open("sim:qcol=off,qadd=off", &dev), 0);
	rng = 4242;
}

TestSuite(onnx_qdq_v1, .init = setup_v1, .fini = teardown);

static uint32_t rnd(void)
{
	rng = rng * 1664525u + 1013904223u;
	return rng >> 8;
}

static size_t count_of(unsigned nd, const int64_t *d)
{
	size_t n = 1;

	for (unsigned i = 0; i < nd; i++)
		n *= (size_t)d[i];
	return n;
}

static void scalar_f(struct mb *b, const char *name, float v)
{
	mb_init(b, name, ONNX_FLOAT, 0, NULL, &v);
}

static void scalar_zp(struct mb *b, const char *name, int dt, int v)
{
	uint8_t u = (uint8_t)v;

	mb_init(b, name, (enum onnx_dtype)dt, 0, NULL, &u);
}

/* Random int8 weights (-127..127) as an initializer. */
static void init_w8(struct mb *b, const char *name, unsigned nd, const int64_t *d)
{
	size_t n = count_of(nd, d);
	int8_t *w = malloc(n);

	for (size_t i = 0; i < n; i++)
		w[i] = (int8_t)((int)(rnd() % 255) - 127);
	mb_init(b, name, ONNX_INT8, nd, d, w);
	free(w);
}

/* DQ(w) with per-channel (nsc > 1, axis) or per-tensor scales around 0.01; zero point 0. */
static void dq_weights(struct mb *b, const char *w, unsigned nd, const int64_t *d, int64_t nsc, int axis,
		       const char *out)
{
	char sn[64], zn[64], ins[160];
	float *s = malloc((size_t)nsc * sizeof(float));
	int8_t *z = calloc((size_t)nsc, 1);
	Onnx__NodeProto *n;

	init_w8(b, w, nd, d);
	for (int64_t i = 0; i < nsc; i++)
		s[i] = 0.004f + 0.001f * (float)(rnd() % 16);
	snprintf(sn, sizeof(sn), "%s_s", w);
	snprintf(zn, sizeof(zn), "%s_z", w);
	mb_init(b, sn, ONNX_FLOAT, nsc > 1, &nsc, s);
	mb_init(b, zn, ONNX_INT8, nsc > 1, &nsc, z);
	snprintf(ins, sizeof(ins), "%s,%s,%s", w, sn, zn);
	n = mb_node(b, "DequantizeLinear", ins, out);
	if (nsc > 1)
		mb_attr_i(b, n, "axis", axis);
	free(s);
	free(z);
}

/* An int32 bias DQ'd with scale x_scale * w_scale (as quantisation tools emit it). */
static void dq_bias(struct mb *b, const char *name, int64_t k, float xs, const char *out)
{
	int32_t *v = malloc((size_t)k * 4);
	float *s = malloc((size_t)k * sizeof(float));
	char sn[64], ins[160];

	for (int64_t i = 0; i < k; i++) {
		v[i] = (int32_t)(rnd() % 2001) - 1000;
		s[i] = xs * 0.006f;
	}
	mb_init(b, name, ONNX_INT32, 1, &k, v);
	snprintf(sn, sizeof(sn), "%s_s", name);
	mb_init(b, sn, ONNX_FLOAT, 1, &k, s);
	snprintf(ins, sizeof(ins), "%s,%s", name, sn);
	mb_attr_i(b, mb_node(b, "DequantizeLinear", ins, out), "axis", 0);
	free(v);
	free(s);
}

static void q_node(struct mb *b, const char *in, const char *out, float s, int dt, int zp)
{
	char sn[64], zn[64], ins[200];

	snprintf(sn, sizeof(sn), "%s_qs", out);
	snprintf(zn, sizeof(zn), "%s_qz", out);
	scalar_f(b, sn, s);
	scalar_zp(b, zn, dt, zp);
	snprintf(ins, sizeof(ins), "%s,%s,%s", in, sn, zn);
	mb_node(b, "QuantizeLinear", ins, out);
}

static void dq_node(struct mb *b, const char *in, const char *out, float s, int dt, int zp)
{
	char sn[64], zn[64], ins[200];

	snprintf(sn, sizeof(sn), "%s_ds", out);
	snprintf(zn, sizeof(zn), "%s_dz", out);
	scalar_f(b, sn, s);
	scalar_zp(b, zn, dt, zp);
	snprintf(ins, sizeof(ins), "%s,%s,%s", in, sn, zn);
	mb_node(b, "DequantizeLinear", ins, out);
}

struct qcase {
	struct onnx_model *m;
	char path[64];
	struct onnx_tensor x;
};

/* Load the model b describes (also written to a file for the reference) and make a random input. */
static void finish(struct mb *b, struct qcase *qc, int xdt, unsigned nd, const int64_t *xd)
{
	char err[512] = "";
	const uint8_t *buf;
	size_t len;
	FILE *f;
	int fd;

	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &qc->m, err, sizeof(err)), 0, "load: %s", err);
	strcpy(qc->path, "/tmp/test-qdq-XXXXXX");
	fd = mkstemp(qc->path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "wb");
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&qc->x, (enum onnx_dtype)xdt, nd, xd), 0);
	for (size_t i = 0; i < qc->x.count; i++)
		((uint8_t *)qc->x.data)[i] = (uint8_t)rnd();
}

/* The numpy reference's output (raw bytes of count elements of 1 byte). */
static uint8_t *reference(const struct qcase *qc, size_t count)
{
	char in[64], out[64], cmd[512], shape[128] = "";
	uint8_t *y = malloc(count);
	FILE *f;
	int fd;

	strcpy(in, "/tmp/test-qdq-in-XXXXXX");
	strcpy(out, "/tmp/test-qdq-out-XXXXXX");
	fd = mkstemp(in);
	cr_assert_eq(write(fd, qc->x.data, qc->x.count * onnx_dtype_size(qc->x.dtype)),
		     (ssize_t)(qc->x.count * onnx_dtype_size(qc->x.dtype)));
	close(fd);
	close(mkstemp(out));
	for (unsigned i = 0; i < qc->x.ndim; i++)
		snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "%s%lld", i ? "x" : "",
			 (long long)qc->x.dims[i]);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s %s %s %s", QDQ_REF, qc->path, in,
		 qc->x.dtype == ONNX_UINT8 ? "uint8" : qc->x.dtype == ONNX_FLOAT ? "float32" : "int8", shape, out);
	cr_assert_eq(system(cmd), 0, "reference failed: %s", cmd);
	f = fopen(out, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(y, 1, count, f), count, "reference output size");
	fclose(f);
	unlink(in);
	unlink(out);
	return y;
}

/* Compile; the step kind of graph node `anchor`; run; compare with the reference within 1 LSB. */
static void check(struct qcase *qc, unsigned anchor, const char *kind, unsigned jobs, unsigned host_steps)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_step st;
	struct onnx_compiled_info ci;
	struct onnx_run_stats stats;
	struct onnx_tensor y;
	char err[512] = "";
	unsigned exact = 0;
	uint8_t *ref;

	cr_assert_eq(onnx_compile(qc->m, dev, &qc->x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_step_info(cm, anchor, &st), 0);
	cr_assert_str_eq(st.kind, kind, "node %u: step %s, expected %s", anchor, st.kind, kind);
	cr_assert_eq(onnx_compiled_info(cm, &ci), 0);
	cr_assert_eq(ci.host_steps, host_steps, "host steps %u", ci.host_steps);
	if (jobs)
		cr_assert_eq(ci.jobs_per_run, jobs, "jobs %u, expected %u", ci.jobs_per_run, jobs);
	{
		/* a first run on other data: the checked run replays its kept jobs (compiled_run.c) */
		struct onnx_tensor other;

		cr_assert_eq(onnx_tensor_alloc(&other, qc->x.dtype, qc->x.ndim, qc->x.dims), 0);
		for (size_t i = 0; i < qc->x.count * onnx_dtype_size(qc->x.dtype); i++)
			((uint8_t *)other.data)[i] = (uint8_t)(((const uint8_t *)qc->x.data)[i] * 7 + 3);
		if (other.dtype == ONNX_FLOAT)	/* keep floats finite and in range */
			for (size_t i = 0; i < other.count; i++)
				((float *)other.data)[i] = -((const float *)qc->x.data)[i];
		cr_assert_eq(onnx_compiled_run(cm, &other, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
		onnx_tensor_release(&y);
		onnx_tensor_release(&other);
	}
	cr_assert_eq(onnx_compiled_run(cm, &qc->x, 1, &y, 1, &stats), 0, "run: %s", onnx_compiled_error(cm));
	ref = reference(qc, y.count);
	for (size_t i = 0; i < y.count; i++) {
		int g = y.dtype == ONNX_UINT8 ? ((uint8_t *)y.data)[i] : ((int8_t *)y.data)[i];
		int r = y.dtype == ONNX_UINT8 ? ref[i] : (int8_t)ref[i];

		cr_assert(abs(g - r) <= 1, "y[%zu] = %d, reference %d", i, g, r);
		exact += g == r;
	}
	/* ties and float32 sums aside, the int32 arithmetic is exact: nearly every value matches */
	cr_assert_geq(exact * 100, y.count * 95, "%u of %zu exact", exact, y.count);
	free(ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_model_free(qc->m);
	onnx_tensor_release(&qc->x);
	unlink(qc->path);
}

/* uint8 x -> DQ -> Conv 3x3 pad 1 (per-channel int8 weights, int32 bias) -> Relu -> Q uint8:
 * per-channel requantisation, in the conv's epilogue (one job) or, without SFU QCOL, two jobs (int32
 * conv + accel_requant). */
static void conv_uint8_per_channel_relu_case(unsigned rq_jobs)
{
	static const int64_t xd[4] = { 1, 3, 9, 9 }, wd[4] = { 6, 3, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.02f, ONNX_UINT8, 131);
	dq_weights(b, "w", 4, wd, 6, 0, "wf");
	dq_bias(b, "bias", 6, 0.02f, "bf");
	n = mb_node(b, "Conv", "xf,wf,bf", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "r");
	q_node(b, "r", "y", 0.05f, ONNX_UINT8, 3);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	check(&qc, 3, "qconv", 1 + rq_jobs, 0);
}

Test(onnx_qdq, conv_uint8_per_channel_relu)
{
	conv_uint8_per_channel_relu_case(0);
}

Test(onnx_qdq_v1, conv_uint8_per_channel_relu)
{
	conv_uint8_per_channel_relu_case(1);
}

/* int8 x -> depthwise Conv 3x3 stride 2 (per-tensor scale) -> Clip(0, 6) -> Q int8: the requantisation
 * folds into the conv's epilogue, one job; the Clip is the ReLU (6 is above the output's range). */
/*
 * PyTorch's fake-quant export (issue #30): the weights stay a float initializer behind QuantizeLinear ->
 * DequantizeLinear (per output channel, axis 0) and the bias stays float. The QuantizeLinear of a constant
 * folds to its int8 constant at load, so the Conv is an int8 device step with no host step left (before,
 * the Q, the DQ and the Conv ran on the host).
 */
Test(onnx_qdq, fake_quant_float_weights_fold_to_int8_constants)
{
	static const int64_t xd[4] = { 1, 3, 9, 9 }, wd[4] = { 6, 3, 3, 3 }, pads[4] = { 1, 1, 1, 1 }, k = 6;
	float w[6 * 27], ws[6], bias[6];
	int8_t wz[6] = { 0 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	Onnx__NodeProto *n;

	for (int o = 0; o < 6; o++) {
		float mx = 0;

		for (int i = 0; i < 27; i++) {
			w[o * 27 + i] = ((float)(rnd() % 2001) - 1000.0f) * (0.0001f + 0.00003f * (float)o);
			mx = fabsf(w[o * 27 + i]) > mx ? fabsf(w[o * 27 + i]) : mx;
		}
		ws[o] = mx / 127;
		bias[o] = ((float)(rnd() % 201) - 100.0f) * 0.002f;
	}
	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.02f, ONNX_UINT8, 131);
	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_init(b, "w_s", ONNX_FLOAT, 1, &k, ws);
	mb_init(b, "w_z", ONNX_INT8, 1, &k, wz);
	mb_init(b, "bf", ONNX_FLOAT, 1, &k, bias);
	mb_attr_i(b, mb_node(b, "QuantizeLinear", "w,w_s,w_z", "wq"), "axis", 0);
	mb_attr_i(b, mb_node(b, "DequantizeLinear", "wq,w_s,w_z", "wf"), "axis", 0);
	n = mb_node(b, "Conv", "xf,wf,bf", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "r");
	q_node(b, "r", "y", 0.05f, ONNX_UINT8, 3);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	check(&qc, 3, "qconv", 0, 0);
}

Test(onnx_qdq, depthwise_int8_per_tensor_clip_one_job)
{
	static const int64_t xd[4] = { 1, 4, 10, 10 }, wd[4] = { 4, 1, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	static const int64_t s2[2] = { 2, 2 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_INT8, 4, xd);
	dq_node(b, "x", "xf", 0.03f, ONNX_INT8, -5);
	dq_weights(b, "w", 4, wd, 1, 0, "wf");
	n = mb_node(b, "Conv", "xf,wf", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_ints(b, n, "strides", s2, 2);
	mb_attr_i(b, n, "group", 4);
	scalar_f(b, "lo", 0.0f);
	scalar_f(b, "hi", 6.0f);
	mb_node(b, "Clip", "c,lo,hi", "r");
	q_node(b, "r", "y", 0.02f, ONNX_INT8, -128);
	mb_output(b, "y");
	finish(b, &qc, ONNX_INT8, 4, xd);
	check(&qc, 2, "qconv", 1, 0);
}

/* A Clip the requantisation cannot express (an upper bound inside the output's range): the pattern
 * falls back; the DQ and Q nodes run on the host again and the result still matches. */
Test(onnx_qdq, clip_inside_range_falls_back)
{
	static const int64_t xd[4] = { 1, 2, 6, 6 }, wd[4] = { 3, 2, 1, 1 };
	struct mb *b = mb_new(13);
	struct qcase qc;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.02f, ONNX_UINT8, 128);
	dq_weights(b, "w", 4, wd, 3, 0, "wf");
	mb_node(b, "Conv", "xf,wf", "c");
	scalar_f(b, "lo", 0.0f);
	scalar_f(b, "hi", 0.3f);
	mb_node(b, "Clip", "c,lo,hi", "r");
	q_node(b, "r", "y", 0.01f, ONNX_UINT8, 0);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	check(&qc, 2, "host", 0, 4);	/* DQ(x), DQ(w), Conv (+ its Clip) and Q node by node */
}

/* x (uint8 or int8) -> DQ -> 1x1 Conv -> Q -> DQ, + DQ(x) -> [Relu] -> Q: the Add of two differently
 * quantised tensors (node 5).  sc, zc: the conv output's quantisation; sy, zy the sum's. */
static void add_graph(struct qcase *qc, int dt, const int64_t *xd, float sx, int zx, float sc, int zc, float sy, int zy,
		      bool relu)
{
	const int64_t wd[4] = { xd[1], xd[1], 1, 1 };
	struct mb *b = mb_new(13);

	mb_input_typed(b, "x", (enum onnx_dtype)dt, 4, xd);
	dq_node(b, "x", "xf", sx, dt, zx);
	dq_weights(b, "w", 4, wd, 1, 0, "wf");
	mb_node(b, "Conv", "xf,wf", "c");
	q_node(b, "c", "cq", sc, dt, zc);
	dq_node(b, "cq", "cf", sc, dt, zc);
	mb_node(b, "Add", "cf,xf", "s");
	if (relu)
		mb_node(b, "Relu", "s", "r");
	q_node(b, relu ? "r" : "s", "y", sy, dt, zy);
	mb_output(b, "y");
	finish(b, qc, dt, 4, xd);
}

/* DQ(a) + DQ(b) (different scales and zero points) -> Relu -> Q. */
static void add_relu_two_scales_case(unsigned add_jobs)
{
	static const int64_t xd[4] = { 1, 4, 5, 5 };
	struct qcase qc;

	add_graph(&qc, ONNX_UINT8, xd, 0.05f, 120, 0.07f, 140, 0.09f, 0, true);
	check(&qc, 5, "qadd", 1 + add_jobs, 0);	/* the conv (1 job, per tensor) and the add */
}

Test(onnx_qdq, add_relu_two_scales)
{
	add_relu_two_scales_case(1);
}

Test(onnx_qdq_v1, add_relu_two_scales)
{
	add_relu_two_scales_case(6);
}

/* Random scales (ratios up to 100 between the inputs, the output's from 0.3 to 3 times the larger),
 * zero points, int8/uint8, with and without Relu: within 1 LSB of the ONNX-exact reference, both ways. */
static void add_random_case(unsigned add_jobs)
{
	for (int it = 0; it < 8; it++) {
		int dt = it % 2 ? ONNX_UINT8 : ONNX_INT8, lo = dt == ONNX_UINT8 ? 0 : -128;
		int64_t xd[4] = { 1 + it % 2, 2 + rnd() % 7, 3 + rnd() % 10, 3 + rnd() % 10 };
		float sx = 0.005f + (float)(rnd() % 1000) / 10000.0f, sc = 0.01f + (float)(rnd() % 1000) / 5000.0f, sy;
		struct qcase qc;

		if (it % 4 == 3)	/* one input's scale 100 times the other's */
			sc = it % 8 == 3 ? sx * 100.0f : sx / 100.0f;
		sy = (sx > sc ? sx : sc) * (0.3f + (float)(rnd() % 1000) / 370.0f);
		add_graph(&qc, dt, xd, sx, lo + (int)(rnd() % 256), sc, lo + (int)(rnd() % 256), sy, lo + (int)(rnd() % 256),
			  it % 3 != 2);
		check(&qc, 5, "qadd", 1 + add_jobs, 0);
	}
}

Test(onnx_qdq, add_random_scales_and_zero_points)
{
	add_random_case(1);
}

Test(onnx_qdq_v1, add_random_scales_and_zero_points)
{
	add_random_case(6);
}

/* The Add's step survives a compiled-model file: the loaded plan submits as many jobs and gives the
 * same bytes; a file of the one-job step does not load on a device without the quantised add. */
static void add_save_load_case(const char *other)
{
	static const int64_t xd[4] = { 2, 6, 7, 9 };
	char err[512] = "", path[] = "/tmp/tnpu-qadd-XXXXXX";
	struct onnx_compiled *cm = NULL, *cm2 = NULL;
	struct onnx_compiled_info i1, i2;
	struct onnx_tensor y1, y2;
	struct accel_dev *odev = NULL;
	struct qcase qc;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	add_graph(&qc, ONNX_INT8, xd, 0.03f, -7, 0.011f, 20, 0.04f, -100, false);
	cr_assert_eq(onnx_compile(qc.m, dev, &qc.x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(qc.m, dev, &qc.x, 1, path, &cm2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_info(cm, &i1), 0);
	cr_assert_eq(onnx_compiled_info(cm2, &i2), 0);
	cr_assert_eq(i1.jobs_per_run, i2.jobs_per_run);
	cr_assert_eq(onnx_compiled_run(cm, &qc.x, 1, &y1, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm2, &qc.x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(cm2));
	cr_assert_eq(y1.count, y2.count);
	cr_assert_eq(memcmp(y1.data, y2.data, y1.count), 0);
	/* the other device (with / without CAP_FEATURES bit 20) is another geometry */
	cr_assert_eq(accel_open(other, &odev), 0);
	onnx_compiled_free(cm2);
	cm2 = NULL;
	cr_assert_eq(onnx_compiled_load(qc.m, odev, &qc.x, 1, path, &cm2, err, sizeof(err)), -ENODEV, "%s", err);
	cr_assert(strstr(err, "features"), "%s", err);
	accel_close(odev);
	unlink(path);
	onnx_tensor_release(&y1);
	onnx_tensor_release(&y2);
	onnx_compiled_free(cm);
	onnx_model_free(qc.m);
	onnx_tensor_release(&qc.x);
	unlink(qc.path);
}

Test(onnx_qdq, add_through_a_compiled_model_file)
{
	add_save_load_case("sim:qadd=off");
}

Test(onnx_qdq_v1, add_through_a_compiled_model_file)
{
	add_save_load_case("sim:qcol=off");
}

/* MaxPool 3x3/2 pad 1 whose output is quantised differently (a 1x1 ones conv requantises) ->
 * AveragePool 2x2 -> GlobalAveragePool -> Flatten (same quantisation: a view) -> Gemm per channel. */
static void pools_view_gemm_case(unsigned rq_jobs)
{
	static const int64_t xd[4] = { 1, 8, 9, 9 }, k3[2] = { 3, 3 }, k2[2] = { 2, 2 }, p1[4] = { 1, 1, 1, 1 };
	static const int64_t gd[2] = { 5, 8 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.04f, ONNX_UINT8, 100);
	n = mb_node(b, "MaxPool", "xf", "mp");
	mb_attr_ints(b, n, "kernel_shape", k3, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	mb_attr_ints(b, n, "pads", p1, 4);
	q_node(b, "mp", "mpq", 0.03f, ONNX_UINT8, 70);
	dq_node(b, "mpq", "mpf", 0.03f, ONNX_UINT8, 70);
	n = mb_node(b, "AveragePool", "mpf", "ap");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	q_node(b, "ap", "apq", 0.025f, ONNX_UINT8, 80);
	dq_node(b, "apq", "apf", 0.025f, ONNX_UINT8, 80);
	mb_node(b, "GlobalAveragePool", "apf", "gp");
	q_node(b, "gp", "gpq", 0.02f, ONNX_UINT8, 90);
	dq_node(b, "gpq", "gpf", 0.02f, ONNX_UINT8, 90);
	mb_node(b, "Flatten", "gpf", "fl");
	q_node(b, "fl", "flq", 0.02f, ONNX_UINT8, 90);
	dq_node(b, "flq", "flf", 0.02f, ONNX_UINT8, 90);
	dq_weights(b, "g", 2, gd, 5, 0, "gf");
	dq_bias(b, "gb", 5, 0.02f, "gbf");
	n = mb_node(b, "Gemm", "flf,gf,gbf", "o");
	mb_attr_i(b, n, "transB", 1);
	q_node(b, "o", "y", 0.01f, ONNX_UINT8, 128);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	/* max pool + 1x1 requant conv (2), avg pool (1), global avg pool (1), per-channel gemm (1, or 2
	 * with accel_requant) */
	check(&qc, 1, "qconv", 5 + rq_jobs, 0);
}

Test(onnx_qdq, pools_view_gemm)
{
	pools_view_gemm_case(0);
}

Test(onnx_qdq_v1, pools_view_gemm)
{
	pools_view_gemm_case(1);
}

/* A max pool keeping its input's quantisation runs on the int8 values alone. */
Test(onnx_qdq, maxpool_same_quantisation)
{
	static const int64_t xd[4] = { 1, 3, 8, 8 }, k2[2] = { 2, 2 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_INT8, 4, xd);
	dq_node(b, "x", "xf", 0.04f, ONNX_INT8, 7);
	n = mb_node(b, "MaxPool", "xf", "mp");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	q_node(b, "mp", "y", 0.04f, ONNX_INT8, 7);
	mb_output(b, "y");
	finish(b, &qc, ONNX_INT8, 4, xd);
	check(&qc, 1, "qpool", 1, 0);
}

/* MatMul of [2, 3, 16] by a per-column quantised [16, 7]. */
static void matmul_per_column_case(unsigned rq_jobs)
{
	static const int64_t xd[3] = { 2, 3, 16 }, bd[2] = { 16, 7 };
	struct mb *b = mb_new(13);
	struct qcase qc;

	mb_input_typed(b, "x", ONNX_UINT8, 3, xd);
	dq_node(b, "x", "xf", 0.03f, ONNX_UINT8, 125);
	dq_weights(b, "w", 2, bd, 7, 1, "wf");
	mb_node(b, "MatMul", "xf,wf", "o");
	q_node(b, "o", "y", 0.06f, ONNX_INT8, 4);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 3, xd);
	check(&qc, 2, "qgemm", 1 + rq_jobs, 0);
}

Test(onnx_qdq, matmul_per_column)
{
	matmul_per_column_case(0);
}

Test(onnx_qdq_v1, matmul_per_column)
{
	matmul_per_column_case(1);
}

/* GlobalAveragePool over 7x7 (ResNet's and MobileNet's head at 224x224): a 7x7 ones depthwise conv. */
Test(onnx_qdq, global_avgpool_7x7)
{
	static const int64_t xd[4] = { 1, 16, 7, 7 };
	struct mb *b = mb_new(13);
	struct qcase qc;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.04f, ONNX_UINT8, 0);
	mb_node(b, "GlobalAveragePool", "xf", "gp");
	q_node(b, "gp", "y", 0.021f, ONNX_UINT8, 3);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	check(&qc, 1, "qconv", 1, 0);
}

/*
 * The layout pass on int8 values: uint8 graph input -> conv 3x3 (per tensor) -> a; a -> conv 3x3 (per
 * channel: int32 accumulators + accel_requant) -> b; Add(a, b) -> Relu -> s; MaxPool 3x3 (same
 * quantisation) -> p; conv 3x3 -> the graph output.  x (transposed while bound, UINT8 -> INT8), a, b,
 * s and p are planned NHWC (OHWI weights), the graph output NCHW; the result matches the reference
 * within 1 LSB and takes fewer device cycles than the all-NCHW plan.
 */
Test(onnx_qdq, int8_values_go_nhwc)
{
	static const int64_t xd[4] = { 1, 8, 12, 12 }, wd[4] = { 8, 8, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	static const int64_t k3[2] = { 3, 3 };
	static const char *const nhwc_vals[] = { "x", "aq", "bq", "sq", "pq" };
	struct onnx_compiled *cm = NULL;
	struct onnx_run_stats st_nhwc, st_nchw;
	struct onnx_tensor y;
	struct mb *b = mb_new(13);
	char err[512] = "";
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.02f, ONNX_UINT8, 131);
	dq_weights(b, "w1", 4, wd, 1, 0, "w1f");
	n = mb_node(b, "Conv", "xf,w1f", "a");
	mb_attr_ints(b, n, "pads", pads, 4);
	q_node(b, "a", "aq", 0.06f, ONNX_UINT8, 128);
	dq_node(b, "aq", "af", 0.06f, ONNX_UINT8, 128);
	dq_weights(b, "w2", 4, wd, 8, 0, "w2f");
	dq_bias(b, "b2", 8, 0.06f, "b2f");
	n = mb_node(b, "Conv", "af,w2f,b2f", "bc");
	mb_attr_ints(b, n, "pads", pads, 4);
	q_node(b, "bc", "bq", 0.08f, ONNX_UINT8, 120);
	dq_node(b, "bq", "bf", 0.08f, ONNX_UINT8, 120);
	mb_node(b, "Add", "af,bf", "s");
	mb_node(b, "Relu", "s", "r");
	q_node(b, "r", "sq", 0.07f, ONNX_UINT8, 0);
	dq_node(b, "sq", "sf", 0.07f, ONNX_UINT8, 0);
	n = mb_node(b, "MaxPool", "sf", "p");
	mb_attr_ints(b, n, "kernel_shape", k3, 2);
	mb_attr_ints(b, n, "pads", pads, 4);
	q_node(b, "p", "pq", 0.07f, ONNX_UINT8, 0);
	dq_node(b, "pq", "pf", 0.07f, ONNX_UINT8, 0);
	dq_weights(b, "w3", 4, wd, 8, 0, "w3f");
	n = mb_node(b, "Conv", "pf,w3f", "c3");
	mb_attr_ints(b, n, "pads", pads, 4);
	q_node(b, "c3", "y", 0.1f, ONNX_UINT8, 100);
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);

	cr_assert_eq(onnx_compile(qc.m, dev, &qc.x, 1, ONNX_COMPILE_NCHW, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_run(cm, &qc.x, 1, &y, 1, &st_nchw), 0, "%s", onnx_compiled_error(cm));
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	cr_assert_eq(onnx_compile(qc.m, dev, &qc.x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	for (unsigned i = 0; i < sizeof(nhwc_vals) / sizeof(nhwc_vals[0]); i++)
		cr_assert_eq(cm->vals[value_index(qc.m, nhwc_vals[i])].nhwc, 1, "'%s' is not NHWC", nhwc_vals[i]);
	cr_assert_eq(cm->vals[value_index(qc.m, "y")].nhwc, 0, "the graph output went NHWC");
	cr_assert_eq(onnx_compiled_run(cm, &qc.x, 1, &y, 1, &st_nhwc), 0, "%s", onnx_compiled_error(cm));
	cr_assert_lt(st_nhwc.counters.total_cycles, st_nchw.counters.total_cycles, "NHWC %llu cycles, NCHW %llu",
		     (unsigned long long)st_nhwc.counters.total_cycles, (unsigned long long)st_nchw.counters.total_cycles);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	check(&qc, 2, "qconv", 0, 0);
}

/* A float graph input quantised on the host (QuantizeLinear, the model's one host step) feeds the stem:
 * the host writes its result NHWC, transposing while it copies it into the arena, so the int8 stem
 * reads channels-last like every other layer (MobileNetV2's 3 -> 32 stem: 14 789 -> 5 940 cycles). */
Test(onnx_qdq, host_quantised_input_goes_nhwc)
{
	static const int64_t xd[4] = { 1, 3, 20, 18 }, wd[4] = { 16, 3, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	static const int64_t st2[2] = { 2, 2 }, w2d[4] = { 8, 16, 1, 1 };
	struct onnx_compiled *cm = NULL;
	struct mb *b = mb_new(13);
	char err[512] = "";
	struct qcase qc;
	Onnx__NodeProto *n;

	mb_input_typed(b, "x", ONNX_FLOAT, 4, xd);
	q_node(b, "x", "xq", 0.03f, ONNX_UINT8, 117);
	dq_node(b, "xq", "xf", 0.03f, ONNX_UINT8, 117);
	dq_weights(b, "w", 4, wd, 16, 0, "wf");
	dq_bias(b, "bias", 16, 0.03f, "bf");
	n = mb_node(b, "Conv", "xf,wf,bf", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_ints(b, n, "strides", st2, 2);
	mb_node(b, "Relu", "c", "r");
	q_node(b, "r", "rq", 0.05f, ONNX_UINT8, 5);
	dq_node(b, "rq", "rf", 0.05f, ONNX_UINT8, 5);
	dq_weights(b, "w2", 4, w2d, 8, 0, "w2f");
	mb_node(b, "Conv", "rf,w2f", "c2");
	q_node(b, "c2", "y", 0.04f, ONNX_INT8, -3);
	mb_output(b, "y");
	finish(b, &qc, ONNX_FLOAT, 4, xd);
	for (size_t i = 0; i < qc.x.count; i++)	/* finish() drew bytes: floats over the quantised range */
		((float *)qc.x.data)[i] = 0.03f * (float)((int)(rnd() % 300) - 130) + 0.001f * (float)(rnd() % 10);
	cr_assert_eq(onnx_compile(qc.m, dev, &qc.x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(cm->vals[value_index(qc.m, "xq")].nhwc, 1, "the host's quantised input is not NHWC");
	cr_assert_eq(cm->vals[value_index(qc.m, "rq")].nhwc, 1);
	onnx_compiled_free(cm);
	check(&qc, 4, "qconv", 2, 1);
}


/* uint8 x -> DQ -> Conv 1x1 (per-channel) -> Relu -> Q uint8 -> DQ -> depthwise Conv 3x3 stride s
 * (per-channel) -> Relu -> Q -> DQ -> Conv 1x1 -> Q uint8: the Q/DQ pair between the first two folds (the intermediate's scale and
 * zero point are the expansion's requantisation and the depthwise input zero point) and the two run as
 * one accel_conv2d_pwdw job ("qpwdw"; the depthwise node "fused"); within 1 LSB of qdq_ref.py, the same
 * bytes as the two qconv steps of ONNX_COMPILE_NO_PWDW, in fewer cycles; through a compiled-model
 * file too. */
static void pwdw_case(int64_t stride, int64_t n)
{
	const int64_t xd[4] = { n, 16, 12, 12 }, st[2] = { stride, stride };
	static const int64_t w1d[4] = { 64, 16, 1, 1 }, w2d[4] = { 64, 1, 3, 3 }, w3d[4] = { 16, 64, 1, 1 };
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct qcase qc;
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_step s0, sd;
	struct onnx_run_stats stats;
	struct onnx_tensor y[2];
	char err[512] = "", path[] = "/tmp/test-qdq-cm-XXXXXX";
	uint64_t cycles[2];
	uint8_t *ref;
	Onnx__NodeProto *nd;
	int fd;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	dq_node(b, "x", "xf", 0.02f, ONNX_UINT8, 131);		/* node 0 */
	dq_weights(b, "w1", 4, w1d, 64, 0, "w1f");		/* 1 */
	dq_bias(b, "b1", 64, 0.02f, "b1f");			/* 2 */
	mb_node(b, "Conv", "xf,w1f,b1f", "e");			/* 3: the expansion */
	mb_node(b, "Relu", "e", "er");				/* 4 */
	q_node(b, "er", "eq", 0.03f, ONNX_UINT8, 0);		/* 5 */
	dq_node(b, "eq", "ef", 0.03f, ONNX_UINT8, 0);		/* 6 */
	dq_weights(b, "w2", 4, w2d, 64, 0, "w2f");		/* 7 */
	dq_bias(b, "b2", 64, 0.03f, "b2f");			/* 8 */
	nd = mb_node(b, "Conv", "ef,w2f,b2f", "d");		/* 9: the depthwise conv */
	mb_attr_ints(b, nd, "pads", pads, 4);
	mb_attr_ints(b, nd, "strides", st, 2);
	mb_attr_i(b, nd, "group", 64);
	mb_node(b, "Relu", "d", "dr");				/* 10 */
	q_node(b, "dr", "dq", 0.05f, ONNX_UINT8, 0);		/* 11 */
	dq_node(b, "dq", "df", 0.05f, ONNX_UINT8, 0);		/* 12 */
	dq_weights(b, "w3", 4, w3d, 16, 0, "w3f");		/* 13 */
	mb_node(b, "Conv", "df,w3f", "p");			/* 14: the projection */
	q_node(b, "p", "y", 0.1f, ONNX_UINT8, 128);		/* 15 */
	mb_output(b, "y");
	finish(b, &qc, ONNX_UINT8, 4, xd);
	for (unsigned f = 0; f < 2; f++) {
		cr_assert_eq(onnx_compile(qc.m, dev, &qc.x, 1, f ? ONNX_COMPILE_NO_PWDW : 0, &cm, err, sizeof(err)), 0,
			     "compile: %s", err);
		cr_assert_eq(onnx_compiled_step_info(cm, 3, &s0), 0);
		cr_assert_eq(onnx_compiled_step_info(cm, 9, &sd), 0);
		cr_assert_str_eq(s0.kind, f ? "qconv" : "qpwdw");
		cr_assert_str_eq(sd.kind, f ? "qconv" : "fused");
		if (!f) {	/* through a file */
			fd = mkstemp(path);
			cr_assert_geq(fd, 0);
			close(fd);
			cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
			onnx_compiled_free(cm);
			cr_assert_eq(onnx_compiled_load(qc.m, dev, &qc.x, 1, path, &cm, err, sizeof(err)), 0, "%s", err);
			unlink(path);
			cr_assert_eq(onnx_compiled_step_info(cm, 3, &s0), 0);
			cr_assert_str_eq(s0.kind, "qpwdw");
		}
		cr_assert_eq(onnx_compiled_run(cm, &qc.x, 1, &y[f], 1, &stats), 0, "run: %s", onnx_compiled_error(cm));
		cycles[f] = stats.counters.total_cycles;
		cr_assert_eq(stats.counters.hw_jobs, f ? 3u : 2u, "hardware jobs %u", stats.counters.hw_jobs);
		onnx_compiled_free(cm);
	}
	cr_assert_eq(memcmp(y[0].data, y[1].data, y[0].count), 0, "one job and two steps differ");
	cr_assert_lt(cycles[0], cycles[1], "fused %llu cycles, two steps %llu", (unsigned long long)cycles[0],
		     (unsigned long long)cycles[1]);
	ref = reference(&qc, y[0].count);
	for (size_t i = 0; i < y[0].count; i++)
		cr_assert(abs((int)((uint8_t *)y[0].data)[i] - (int)ref[i]) <= 1, "y[%zu] = %u, reference %u", i,
			  ((uint8_t *)y[0].data)[i], ref[i]);
	free(ref);
	onnx_tensor_release(&y[0]);
	onnx_tensor_release(&y[1]);
	onnx_model_free(qc.m);
	onnx_tensor_release(&qc.x);
	unlink(qc.path);
}

Test(onnx_qdq, expansion_and_depthwise_one_job)
{
	pwdw_case(1, 1);
	pwdw_case(2, 2);
}
