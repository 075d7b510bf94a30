/* SPDX-License-Identifier: MIT */
/*
 * MaxPool's Indices output, MaxUnpool and RoiAlign (issue 30) at what the two backend tests of each leave
 * out: random tensors with strides, pads, dilations, 1-D pooling, storage_order 1, a larger output_shape,
 * both RoiAlign coordinate transforms, adaptive and fixed sampling, a box past the image, against PyTorch
 * (torch.nn.functional.max_pool1d/2d with return_indices, max_unpool2d; torchvision.ops.roi_align, whose
 * aligned=True/False are ONNX's half_pixel/output_half_pixel) run at test time; RoiAlign's max mode (the
 * specification's own rule, which PyTorch lacks) worked by hand; and the malformed inputs each kernel
 * rejects.  Every case runs on the CPU reference and on sim (MaxPool with Indices falls back to the host).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

#define MAX_REF 4096

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 3030;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_pool30, .init = setup, .fini = teardown);

/* Python (PyTorch) on x (n float32 values, the numpy array `x`): CODE sets `out`, a list of arrays whose
 * values are printed in order; returns how many were read into ref. */
static size_t torch_ref(const char *code, const float *x, size_t n, double *ref)
{
	char path[] = "/tmp/tnpu-pool30-XXXXXX", cmd[4096];
	int fd = mkstemp(path);
	size_t got = 0;
	FILE *p;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, x, n * sizeof(float)), (ssize_t)(n * sizeof(float)));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import sys, numpy as np, torch, torch.nn.functional as F, torchvision\n"
		 "x = np.fromfile(sys.argv[1], dtype=np.float32)\n%s\n"
		 "print(\" \".join(repr(float(v)) for a in out for v in np.asarray(a, dtype=np.float64).ravel()))' %s",
		 code, path);
	p = popen(cmd, "r");
	cr_assert(p);
	while (got < MAX_REF && fscanf(p, "%lf", &ref[got]) == 1)
		got++;
	cr_assert_eq(pclose(p), 0, "python failed: %s", cmd);
	unlink(path);
	return got;
}

static void tensor_of(struct onnx_tensor *t, enum onnx_dtype dt, unsigned nd, const int64_t *dims, const double *v)
{
	cr_assert_eq(onnx_tensor_alloc(t, dt, nd, dims), 0);
	for (size_t i = 0; i < t->count; i++) {
		if (dt == ONNX_FLOAT)
			((float *)t->data)[i] = (float)v[i];
		else
			((int64_t *)t->data)[i] = (int64_t)v[i];
	}
}

/* Run b on the CPU reference and on sim: output k (of n_out) must be dt [nd dims] holding want[k]. */
static void expect_outs(struct mb *b, struct onnx_tensor *in, unsigned n_in, unsigned n_out, enum onnx_dtype *dt,
			unsigned nd, const int64_t (*dims)[4], const double *const *want, double tol)
{
	struct accel_dev *devs[2] = { NULL, dev };

	for (int r = 0; r < 2; r++) {
		struct onnx_tensor out[2];
		struct onnx_model *m = NULL;
		char err[512] = "";
		size_t len;
		const uint8_t *buf = mb_pack(b, &len);
		int ret = onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err));
		const char *where = r ? "sim" : "cpu";

		cr_assert_eq(ret, 0, "load: %s", err);
		ret = onnx_run(m, devs[r], in, n_in, out, n_out, NULL);
		cr_assert_eq(ret, 0, "%s run: %s", where, onnx_model_error(m));
		for (unsigned k = 0; k < n_out; k++) {
			cr_assert_eq(out[k].dtype, dt[k], "%s output %u: dtype", where, k);
			cr_assert_eq(out[k].ndim, nd, "%s output %u: rank", where, k);
			for (unsigned d = 0; d < nd; d++)
				cr_assert_eq(out[k].dims[d], dims[k][d], "%s output %u: dimension %u is %lld", where, k,
					     d, (long long)out[k].dims[d]);
			for (size_t i = 0; i < out[k].count; i++) {
				double g = dt[k] == ONNX_FLOAT ? ((float *)out[k].data)[i] :
								 (double)((int64_t *)out[k].data)[i];

				cr_expect(fabs(g - want[k][i]) <= tol * (1 + fabs(want[k][i])),
					  "%s output %u [%zu]: got %.9g, expected %.9g", where, k, i, g, want[k][i]);
			}
			onnx_tensor_release(&out[k]);
		}
		onnx_model_free(m);
	}
}

/* The run (CPU reference) must fail with -EINVAL or -EOPNOTSUPP and a message containing what. */
static void expect_error(struct mb *b, struct onnx_tensor *in, unsigned n_in, unsigned n_out, const char *what)
{
	struct onnx_tensor out[2];
	struct onnx_model *m = NULL;
	char err[512] = "";
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	int ret = onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err));

	cr_assert_eq(ret, 0, "load: %s", err);
	ret = onnx_run(m, NULL, in, n_in, out, n_out, NULL);
	cr_expect(ret == -EINVAL || ret == -EOPNOTSUPP, "run returned %d (%s)", ret, onnx_model_error(m));
	cr_expect(strstr(onnx_model_error(m), what), "message: %s", onnx_model_error(m));
	if (!ret)
		for (unsigned k = 0; k < n_out; k++)
			onnx_tensor_release(&out[k]);
	onnx_model_free(m);
}

static void frand_fill(float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = mb_frand(&rng);
}

/* MaxPool "x" -> "y","i" with kernel_shape ks, strides st, symmetric pads pd, dilations dl (sp values). */
static struct mb *maxpool_model(unsigned sp, const int64_t *ks, const int64_t *st, const int64_t *pd,
				const int64_t *dl, int64_t storage_order)
{
	struct mb *b = mb_new(12);
	Onnx__NodeProto *n;
	int64_t pads[4];

	for (unsigned d = 0; d < sp; d++)
		pads[d] = pads[sp + d] = pd[d];
	mb_input(b, "x");
	n = mb_node(b, "MaxPool", "x", "y,i");
	mb_attr_ints(b, n, "kernel_shape", ks, sp);
	mb_attr_ints(b, n, "strides", st, sp);
	mb_attr_ints(b, n, "pads", pads, 2 * sp);
	mb_attr_ints(b, n, "dilations", dl, sp);
	if (storage_order)
		mb_attr_i(b, n, "storage_order", storage_order);
	mb_output(b, "y");
	mb_output(b, "i");
	return b;
}

Test(onnx_pool30, maxpool_indices_match_pytorch_row_and_column_major)
{
	/* x [2, 3, 7, 9]; kernel 3x2, strides 2x1, pads 1x1, dilations 1x2: y [2, 3, 4, 8]; PyTorch's
	 * indices are h * W + w within the plane: ONNX adds the plane's offset (row-major) or takes
	 * w * H + h (storage_order 1) */
	static float x[2 * 3 * 7 * 9];
	static double ref[MAX_REF];
	int64_t xd[4] = { 2, 3, 7, 9 }, ks[2] = { 3, 2 }, st[2] = { 2, 1 }, pd[2] = { 1, 1 }, dl[2] = { 1, 2 };
	int64_t yd[2][4] = { { 2, 3, 4, 9 }, { 2, 3, 4, 9 } };
	enum onnx_dtype dt[2] = { ONNX_FLOAT, ONNX_INT64 };
	size_t ny = 2 * 3 * 4 * 9;
	struct onnx_tensor in;
	double xv[2 * 3 * 7 * 9];

	frand_fill(x, 2 * 3 * 7 * 9);
	cr_assert_eq(torch_ref("t = torch.from_numpy(x).reshape(2, 3, 7, 9)\n"
			       "y, i = F.max_pool2d(t, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), "
			       "return_indices=True)\n"
			       "plane = torch.arange(6).reshape(2, 3, 1, 1) * 63\n"
			       "out = [y, i + plane, (i % 9) * 7 + i // 9 + plane]",
			       x, 2 * 3 * 7 * 9, ref), 3 * ny);
	for (size_t i = 0; i < 2 * 3 * 7 * 9; i++)
		xv[i] = x[i];
	tensor_of(&in, ONNX_FLOAT, 4, xd, xv);
	for (int so = 0; so < 2; so++) {
		struct mb *b = maxpool_model(2, ks, st, pd, dl, so);
		const double *want[2] = { ref, ref + (1 + so) * ny };

		expect_outs(b, &in, 1, 2, dt, 4, yd, want, 0);
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

Test(onnx_pool30, maxpool_1d_indices_match_pytorch)
{
	static float x[2 * 2 * 11];
	static double ref[MAX_REF];
	int64_t xd[3] = { 2, 2, 11 }, ks[1] = { 3 }, st[1] = { 2 }, pd[1] = { 1 }, dl[1] = { 1 };
	int64_t yd[2][4] = { { 2, 2, 6 }, { 2, 2, 6 } };
	enum onnx_dtype dt[2] = { ONNX_FLOAT, ONNX_INT64 };
	struct onnx_tensor in;
	double xv[2 * 2 * 11];
	struct mb *b = maxpool_model(1, ks, st, pd, dl, 0);
	const double *want[2] = { ref, ref + 24 };

	frand_fill(x, 44);
	cr_assert_eq(torch_ref("t = torch.from_numpy(x).reshape(2, 2, 11)\n"
			       "y, i = F.max_pool1d(t, 3, stride=2, padding=1, return_indices=True)\n"
			       "out = [y, i + torch.arange(4).reshape(2, 2, 1) * 11]", x, 44, ref), 48);
	for (size_t i = 0; i < 44; i++)
		xv[i] = x[i];
	tensor_of(&in, ONNX_FLOAT, 3, xd, xv);
	expect_outs(b, &in, 1, 2, dt, 3, yd, want, 0);
	mb_free(b);
	onnx_tensor_release(&in);
}

Test(onnx_pool30, maxunpool_matches_pytorch_and_pads_a_larger_output_shape_at_the_end)
{
	/* PyTorch pools x [2, 2, 7, 7] (kernel 3, stride 2, padding 1: [2, 2, 4, 4]) and unpools it to the
	 * default [2, 2, 7, 7] ((4 - 1) * 2 + 3 - 2); output_shape [2, 2, 9, 8] keeps each value at its
	 * coordinates and zero-fills the rest (the specification's reference) */
	static float x[2 * 2 * 7 * 7];
	static double ref[MAX_REF];
	int64_t ks[2] = { 3, 3 }, st[2] = { 2, 2 }, pads[4] = { 1, 1, 1, 1 }, pd[4] = { 2, 2, 4, 4 }, sd[1] = { 4 };
	int64_t yd[2][4] = { { 2, 2, 7, 7 } }, zd[2][4] = { { 2, 2, 9, 8 } };
	enum onnx_dtype dt[1] = { ONNX_FLOAT };
	double shape[4] = { 2, 2, 9, 8 };
	struct onnx_tensor in[3];
	size_t np = 2 * 2 * 4 * 4;
	struct mb *b;
	Onnx__NodeProto *n;

	frand_fill(x, 2 * 2 * 7 * 7);
	cr_assert_eq(torch_ref("t = torch.from_numpy(x).reshape(2, 2, 7, 7)\n"
			       "p, i = F.max_pool2d(t, 3, stride=2, padding=1, return_indices=True)\n"
			       "u = F.max_unpool2d(p, i, 3, stride=2, padding=1)\n"
			       "out = [p, i + torch.arange(4).reshape(2, 2, 1, 1) * 49, u, F.pad(u, (0, 1, 0, 2))]",
			       x, 2 * 2 * 7 * 7, ref), 2 * np + 2 * 2 * 7 * 7 + 2 * 2 * 9 * 8);
	for (int with_shape = 0; with_shape < 2; with_shape++) {
		const double *want[1] = { ref + 2 * np + (with_shape ? 2 * 2 * 7 * 7 : 0) };

		b = mb_new(11);
		mb_input(b, "x");
		mb_input(b, "i");
		if (with_shape)
			mb_input(b, "s");
		n = mb_node(b, "MaxUnpool", with_shape ? "x,i,s" : "x,i", "y");
		mb_attr_ints(b, n, "kernel_shape", ks, 2);
		mb_attr_ints(b, n, "strides", st, 2);
		mb_attr_ints(b, n, "pads", pads, 4);
		mb_output(b, "y");
		tensor_of(&in[0], ONNX_FLOAT, 4, pd, ref);
		tensor_of(&in[1], ONNX_INT64, 4, pd, ref + np);
		tensor_of(&in[2], ONNX_INT64, 1, sd, shape);
		expect_outs(b, in, 2 + with_shape, 1, dt, 4, with_shape ? zd : yd, want, 0);
		mb_free(b);
		for (int k = 0; k < 3; k++)
			onnx_tensor_release(&in[k]);
	}
}

/* RoiAlign on X [2, 3, 10, 12] and four boxes (one reaching past the image, one under a pixel once scaled:
 * output_half_pixel widens it to 1) against torchvision. */
static void roialign_vs_torchvision(bool half_pixel, int64_t sampling_ratio)
{
	static float x[2 * 3 * 10 * 12];
	static double ref[MAX_REF];
	double rois[16] = { 2, 3, 15, 12, 0, 0, 23.5, 19, -3, 10, 8, 26, 9, 7, 10, 8.5 }, bi[4] = { 1, 0, 1, 0 };
	double xv[2 * 3 * 10 * 12];
	int64_t xd[4] = { 2, 3, 10, 12 }, rd[2] = { 4, 4 }, bd[1] = { 4 }, yd[1][4] = { { 4, 3, 3, 4 } };
	enum onnx_dtype dt[1] = { ONNX_FLOAT };
	const double *want[1] = { ref };
	struct onnx_tensor in[3];
	char code[512];
	struct mb *b = mb_new(16);
	Onnx__NodeProto *n;

	frand_fill(x, 2 * 3 * 10 * 12);
	snprintf(code, sizeof(code),
		 "from torchvision.ops import roi_align\n"
		 "t = torch.from_numpy(x).reshape(2, 3, 10, 12)\n"
		 "bx = torch.tensor([[1, 2, 3, 15, 12], [0, 0, 0, 23.5, 19], [1, -3, 10, 8, 26], [0, 9, 7, 10, 8.5]])\n"
		 "out = [roi_align(t, bx, (3, 4), spatial_scale=0.5, sampling_ratio=%lld, aligned=%s)]",
		 (long long)sampling_ratio, half_pixel ? "True" : "False");
	cr_assert_eq(torch_ref(code, x, 2 * 3 * 10 * 12, ref), 4 * 3 * 3 * 4);
	for (size_t i = 0; i < 2 * 3 * 10 * 12; i++)
		xv[i] = x[i];
	mb_input(b, "x");
	mb_input(b, "r");
	mb_input(b, "b");
	n = mb_node(b, "RoiAlign", "x,r,b", "y");
	mb_attr_i(b, n, "output_height", 3);
	mb_attr_i(b, n, "output_width", 4);
	mb_attr_i(b, n, "sampling_ratio", sampling_ratio);
	mb_attr_f(b, n, "spatial_scale", 0.5f);
	mb_attr_s(b, n, "coordinate_transformation_mode", half_pixel ? "half_pixel" : "output_half_pixel");
	mb_output(b, "y");
	tensor_of(&in[0], ONNX_FLOAT, 4, xd, xv);
	tensor_of(&in[1], ONNX_FLOAT, 2, rd, rois);
	tensor_of(&in[2], ONNX_INT64, 1, bd, bi);
	expect_outs(b, in, 3, 1, dt, 4, yd, want, 1e-5);
	mb_free(b);
	for (int k = 0; k < 3; k++)
		onnx_tensor_release(&in[k]);
}

Test(onnx_pool30, roialign_half_pixel_adaptive_sampling_matches_torchvision_aligned)
{
	roialign_vs_torchvision(true, 0);
}

Test(onnx_pool30, roialign_output_half_pixel_fixed_sampling_matches_torchvision_unaligned)
{
	roialign_vs_torchvision(false, 2);
}

Test(onnx_pool30, roialign_max_mode_and_opset_10s_coordinates)
{
	/* X = [[1, 2], [3, 4]], box (0, 0)-(1, 1), output_half_pixel, 2x2 samples at 0.25/0.75: the
	 * specification's max mode keeps, per sample, the largest of the four weighted corners
	 * (0.5625, 1.125, 1.6875, 2.25) and then the largest sample: 2.25; avg: the mean of the
	 * bilinear values 1.75, 2.25, 2.75, 3.25 = 2.5.  Opset 10 has no coordinate_transformation_mode
	 * and no half-pixel offset: without the attribute, 2.5 too (opset 16's default half_pixel: 1.375) */
	double xv[4] = { 1, 2, 3, 4 }, roi[4] = { 0, 0, 1, 1 }, zero[1] = { 0 }, w_max[1] = { 2.25 }, w_avg[1] = { 2.5 };
	int64_t xd[4] = { 1, 1, 2, 2 }, rd[2] = { 1, 4 }, bd[1] = { 1 }, yd[1][4] = { { 1, 1, 1, 1 } };
	enum onnx_dtype dt[1] = { ONNX_FLOAT };
	struct onnx_tensor in[3];

	tensor_of(&in[0], ONNX_FLOAT, 4, xd, xv);
	tensor_of(&in[1], ONNX_FLOAT, 2, rd, roi);
	tensor_of(&in[2], ONNX_INT64, 1, bd, zero);
	for (int k = 0; k < 3; k++) {	/* avg, max, opset 10 avg */
		struct mb *b = mb_new(k == 2 ? 10 : 16);
		Onnx__NodeProto *n;
		const double *want[1] = { k == 1 ? w_max : w_avg };

		mb_input(b, "x");
		mb_input(b, "r");
		mb_input(b, "b");
		n = mb_node(b, "RoiAlign", "x,r,b", "y");
		mb_attr_i(b, n, "sampling_ratio", 2);
		if (k < 2)
			mb_attr_s(b, n, "coordinate_transformation_mode", "output_half_pixel");
		mb_attr_s(b, n, "mode", k == 1 ? "max" : "avg");
		mb_output(b, "y");
		expect_outs(b, in, 3, 1, dt, 4, yd, want, 1e-6);
		mb_free(b);
	}
	for (int k = 0; k < 3; k++)
		onnx_tensor_release(&in[k]);
}

Test(onnx_pool30, bad_inputs_are_rejected_naming_the_reason)
{
	double v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, idx[2] = { 1, 9 }, roi[4] = { 0, 0, 1, 1 }, bad[1] = { 2 };
	int64_t d2[4] = { 1, 1, 1, 2 }, xd[4] = { 1, 1, 2, 2 }, rd[2] = { 1, 4 }, bd[1] = { 1 }, x5[5] = { 1, 1, 2, 2, 2 };
	int64_t ks[2] = { 2, 2 }, ks3[3] = { 2, 2, 2 };
	struct onnx_tensor in[3];
	struct mb *b;
	Onnx__NodeProto *n;

	/* MaxUnpool: index 9 of the default [1, 1, 2, 2] */
	b = mb_new(11);
	mb_input(b, "x");
	mb_input(b, "i");
	n = mb_node(b, "MaxUnpool", "x,i", "y");
	mb_attr_ints(b, n, "kernel_shape", ks, 2);
	mb_output(b, "y");
	tensor_of(&in[0], ONNX_FLOAT, 4, d2, v);
	tensor_of(&in[1], ONNX_INT64, 4, d2, idx);
	expect_error(b, in, 2, 1, "(MaxUnpool): index 9 at 1 is out of range for the unpooled 6 elements");
	mb_free(b);
	onnx_tensor_release(&in[0]);
	onnx_tensor_release(&in[1]);

	/* RoiAlign: batch index 2 of a batch of 1; an unknown mode */
	for (int k = 0; k < 2; k++) {
		b = mb_new(16);
		mb_input(b, "x");
		mb_input(b, "r");
		mb_input(b, "b");
		n = mb_node(b, "RoiAlign", "x,r,b", "y");
		if (k)
			mb_attr_s(b, n, "mode", "median");
		mb_output(b, "y");
		tensor_of(&in[0], ONNX_FLOAT, 4, xd, v);
		tensor_of(&in[1], ONNX_FLOAT, 2, rd, roi);
		tensor_of(&in[2], ONNX_INT64, 1, bd, bad);
		expect_error(b, in, 3, 1, k ? "(RoiAlign): mode 'median' (avg or max)" :
					      "(RoiAlign): batch_indices[0] = 2 (0 to 0)");
		mb_free(b);
		for (int j = 0; j < 3; j++)
			onnx_tensor_release(&in[j]);
	}

	/* RoiAlign: a roi of 1e25 pixels (adaptive sampling: a 1e25 x 1e25 grid per bin) and a NaN roi; with
	 * a fixed sampling ratio a NaN roi samples nothing (0), never converts NaN to an index (fuzz-load) */
	for (int k = 0; k < 3; k++) {
		double huge[4] = { 0, 0, 1e25, 1e25 }, nan4[4] = { NAN, 0, NAN, 1 }, zero[1] = { 0 };
		struct onnx_tensor out;

		b = mb_new(16);
		mb_input(b, "x");
		mb_input(b, "r");
		mb_input(b, "b");
		n = mb_node(b, "RoiAlign", "x,r,b", "y");
		if (k == 2)
			mb_attr_i(b, n, "sampling_ratio", 2);
		mb_output(b, "y");
		tensor_of(&in[0], ONNX_FLOAT, 4, xd, v);
		tensor_of(&in[1], ONNX_FLOAT, 2, rd, k ? nan4 : huge);
		tensor_of(&in[2], ONNX_INT64, 1, bd, zero);
		if (k < 2) {
			expect_error(b, in, 3, 1, k ? "not finite" : "exceeds 4.29497e+09 samples");
		} else {
			struct onnx_model *m = NULL;
			char err[512] = "";
			size_t len;
			const uint8_t *buf = mb_pack(b, &len);

			cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
			cr_assert_eq(onnx_run(m, NULL, in, 3, &out, 1, NULL), 0, "%s", onnx_model_error(m));
			for (size_t i = 0; i < out.count; i++)
				cr_assert_eq(((float *)out.data)[i], 0.0f);
			onnx_tensor_release(&out);
			onnx_model_free(m);
		}
		mb_free(b);
		for (int j = 0; j < 3; j++)
			onnx_tensor_release(&in[j]);
	}

	/* MaxPool: storage_order 2; the Indices output of a 3-D (5-D tensor) pooling */
	for (int k = 0; k < 2; k++) {
		b = mb_new(12);
		mb_input(b, "x");
		n = mb_node(b, "MaxPool", "x", "y,i");
		mb_attr_ints(b, n, "kernel_shape", k ? ks3 : ks, k ? 3 : 2);
		if (!k)
			mb_attr_i(b, n, "storage_order", 2);
		mb_output(b, "y");
		mb_output(b, "i");
		tensor_of(&in[0], ONNX_FLOAT, k ? 5 : 4, k ? x5 : xd, v);
		expect_error(b, in, 1, 2, k ? "(MaxPool): the Indices output is not supported" :
					      "(MaxPool): storage_order 2 (0 or 1)");
		mb_free(b);
		onnx_tensor_release(&in[0]);
	}
}

/*
 * GlobalAveragePool and GlobalMaxPool of a 5-D X (r3d_18's AdaptiveAvgPool3d(1) exports as the first): the
 * same bytes as a 4-D pool over (D*H) x W, with a [N, C, 1, 1, 1] output; against PyTorch, on the CPU
 * reference and on sim (the average pool runs on the device there).
 */
Test(onnx_pool30, global_pools_of_5d_tensors_match_pytorch)
{
	static float x[2 * 3 * 3 * 4 * 5];
	static double ref[MAX_REF];
	const int64_t xd[5] = { 2, 3, 3, 4, 5 };
	const char *ops[2] = { "GlobalAveragePool", "GlobalMaxPool" };
	struct accel_dev *devs[2] = { NULL, dev };
	size_t nx = sizeof(x) / sizeof(x[0]);
	struct onnx_tensor in;
	double xv[sizeof(x) / sizeof(x[0])];

	frand_fill(x, nx);
	cr_assert_eq(torch_ref("t = torch.from_numpy(x).reshape(2, 3, 3, 4, 5)\n"
			       "out = [F.adaptive_avg_pool3d(t, 1), t.amax(dim=(2, 3, 4), keepdim=True)]",
			       x, nx, ref), 12);
	for (size_t i = 0; i < nx; i++)
		xv[i] = x[i];
	tensor_of(&in, ONNX_FLOAT, 5, xd, xv);
	for (int op = 0; op < 2; op++) {
		struct mb *b = mb_new(13);

		mb_input(b, "x");
		mb_node(b, ops[op], "x", "y");
		mb_output(b, "y");
		for (int r = 0; r < 2; r++) {
			struct onnx_model *m = NULL;
			struct onnx_tensor out;
			char err[512] = "";
			size_t len;
			const uint8_t *buf = mb_pack(b, &len);

			cr_assert_eq(onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err)), 0, "%s", err);
			cr_assert_eq(onnx_run(m, devs[r], &in, 1, &out, 1, NULL), 0, "%s on %s: %s", ops[op],
				     r ? "sim" : "cpu", onnx_model_error(m));
			cr_assert_eq(out.ndim, 5);
			cr_assert_eq(out.dims[0], 2);
			cr_assert_eq(out.dims[1], 3);
			cr_assert(out.dims[2] == 1 && out.dims[3] == 1 && out.dims[4] == 1);
			for (size_t i = 0; i < 6; i++)
				cr_expect(fabs(((float *)out.data)[i] - ref[6 * op + i]) <= 1e-6 * (1 + fabs(ref[6 * op + i])),
					  "%s on %s [%zu]: got %.9g, expected %.9g", ops[op], r ? "sim" : "cpu", i,
					  ((float *)out.data)[i], ref[6 * op + i]);
			onnx_tensor_release(&out);
			onnx_model_free(m);
		}
		mb_free(b);
	}
	onnx_tensor_release(&in);
}

/* Run b (one input, one 5-D FLOAT output of @ny values) on the CPU reference and on sim against want. */
static void expect_5d(struct mb *b, struct onnx_tensor *in, const int64_t *yd, const double *want, size_t ny,
		      const char *what)
{
	struct accel_dev *devs[2] = { NULL, dev };

	for (int r = 0; r < 2; r++) {
		struct onnx_model *m = NULL;
		struct onnx_tensor out;
		char err[512] = "";
		size_t len;
		const uint8_t *buf = mb_pack(b, &len);

		cr_assert_eq(onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_run(m, devs[r], in, 1, &out, 1, NULL), 0, "%s on %s: %s", what, r ? "sim" : "cpu",
			     onnx_model_error(m));
		cr_assert_eq(out.ndim, 5, "%s", what);
		for (unsigned d = 0; d < 5; d++)
			cr_assert_eq(out.dims[d], yd[d], "%s on %s: dimension %u is %lld", what, r ? "sim" : "cpu", d,
				     (long long)out.dims[d]);
		cr_assert_eq(out.count, ny);
		for (size_t i = 0; i < ny; i++)
			cr_expect(fabs(((float *)out.data)[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])),
				  "%s on %s [%zu]: got %.9g, expected %.9g", what, r ? "sim" : "cpu", i,
				  ((float *)out.data)[i], want[i]);
		onnx_tensor_release(&out);
		onnx_model_free(m);
	}
}

/*
 * MaxPool and AveragePool over three spatial dimensions with padding, strides, ceil_mode and both
 * count_include_pad values, against PyTorch's max_pool3d / avg_pool3d: on sim each runs as two 2-D
 * pools on the device (H x W, then D), which must equal the 3-D window (ops_accel_nd.c).
 */
Test(onnx_pool30, pools_of_5d_tensors_with_padding_and_ceil_mode_match_pytorch)
{
	static float x[2 * 3 * 5 * 6 * 8];
	static double ref[MAX_REF];
	const int64_t xd[5] = { 2, 3, 5, 6, 8 }, ks[3] = { 3, 2, 3 }, st[3] = { 2, 2, 2 }, pads[6] = { 1, 0, 1, 1, 0, 1 };
	/* D: (5 + 2 - 3) / 2 + 1 = 3; H: (6 - 2) / 2 + 1 = 3; W: (8 + 2 - 3) / 2 + 1 = 4, with ceil_mode 5 (the
	 * last window starts at 7, inside) */
	size_t nx = sizeof(x) / sizeof(x[0]), off = 0;
	struct onnx_tensor in;
	double xv[sizeof(x) / sizeof(x[0])];
	const struct {
		const char *op;
		int64_t incl, ceil;
	} cases[4] = { { "MaxPool", 0, 1 }, { "AveragePool", 0, 0 }, { "AveragePool", 1, 0 }, { "AveragePool", 0, 1 } };

	frand_fill(x, nx);
	cr_assert_eq(torch_ref("t = torch.from_numpy(x).reshape(2, 3, 5, 6, 8)\n"
			       "k, s, p = (3, 2, 3), (2, 2, 2), (1, 0, 1)\n"
			       "out = [F.max_pool3d(t, k, s, p, ceil_mode=True),\n"
			       "       F.avg_pool3d(t, k, s, p, count_include_pad=False),\n"
			       "       F.avg_pool3d(t, k, s, p, count_include_pad=True),\n"
			       "       F.avg_pool3d(t, k, s, p, ceil_mode=True, count_include_pad=False)]",
			       x, nx, ref), 2 * 2 * 3 * 3 * 3 * 4 + 2 * 2 * 3 * 3 * 3 * 5);
	for (size_t i = 0; i < nx; i++)
		xv[i] = x[i];
	tensor_of(&in, ONNX_FLOAT, 5, xd, xv);
	for (int k = 0; k < 4; k++) {
		const int64_t yd[5] = { 2, 3, 3, 3, cases[k].ceil ? 5 : 4 };
		size_t ny = (size_t)(2 * 3 * 3 * 3 * yd[4]);
		struct mb *b = mb_new(13);
		Onnx__NodeProto *n;
		char what[64];

		mb_input(b, "x");
		n = mb_node(b, cases[k].op, "x", "y");
		mb_attr_ints(b, n, "kernel_shape", ks, 3);
		mb_attr_ints(b, n, "strides", st, 3);
		mb_attr_ints(b, n, "pads", pads, 6);
		mb_attr_i(b, n, "ceil_mode", cases[k].ceil);
		if (strcmp(cases[k].op, "MaxPool"))
			mb_attr_i(b, n, "count_include_pad", cases[k].incl);
		mb_output(b, "y");
		snprintf(what, sizeof(what), "%s include_pad %lld ceil %lld", cases[k].op, (long long)cases[k].incl,
			 (long long)cases[k].ceil);
		expect_5d(b, &in, yd, ref + off, ny, what);
		off += ny;
		mb_free(b);
	}
	onnx_tensor_release(&in);
}
