/* SPDX-License-Identifier: MIT */
/*
 * Node kernels on the vector units (onnx/src/device/ops_accel_vec.c, issue 30) and Resize as GEMMs
 * (ops_accel_resize.c): a model run node by node
 * (onnx_run with a device, as a model whose shapes depend on input data runs) puts the fp32 functions,
 * element-wise arithmetic with broadcasting, reductions over a run of axes, ArgMax/ArgMin (INT64
 * indices, ties, select_last_index, NaN), Softmax/LogSoftmax and SoftmaxCrossEntropyLoss's
 * log-probabilities on the device.  Each is checked against the CPU reference run (onnx_run without a
 * device) and for where it ran (onnx_model_node_info's ran_on_device); on a device without VEC math
 * (sim:vecmath=off) the VEC math operators run on the host with the same results.  Add, Sub, Mul, Max
 * and Min stay on the host node by node (the copies to the device and back cost more than they do).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "builder.h"

static uint32_t rng = 4242;

static struct onnx_model *load(struct mb *b)
{
	struct onnx_model *m = NULL;
	char err[512] = "";
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);

	cr_assert_eq(onnx_model_load_mem(buf, len, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static void rnd(struct onnx_tensor *t, unsigned nd, const int64_t *dims, float scale, float bias)
{
	cr_assert_eq(onnx_tensor_alloc(t, ONNX_FLOAT, nd, dims), 0);
	for (size_t i = 0; i < t->count; i++)
		((float *)t->data)[i] = mb_frand(&rng) * scale + bias;
}

/* Run m node by node on dev_path and on the CPU; every output equal within the fp32 tolerance (others
 * exact, NaN where the reference has NaN); node `node` ran on the device iff on_device. */
static void check(struct onnx_model *m, const char *dev_path, const struct onnx_tensor *in, unsigned n_in,
		  unsigned n_out, unsigned node, bool on_device)
{
	struct onnx_tensor ref[2], got[2];
	struct onnx_node_info info;
	struct accel_dev *dev = NULL;

	cr_assert_eq(accel_open(dev_path, &dev), 0);
	cr_assert_eq(onnx_run(m, NULL, in, n_in, ref, n_out, NULL), 0, "CPU: %s", onnx_model_error(m));
	cr_assert_eq(onnx_run(m, dev, in, n_in, got, n_out, NULL), 0, "%s: %s", dev_path, onnx_model_error(m));
	cr_assert_eq(onnx_model_node_info(m, node, &info), 0);
	cr_assert_eq(info.ran_on_device, on_device, "%s on %s: ran_on_device %d", info.op, dev_path, info.ran_on_device);
	for (unsigned o = 0; o < n_out; o++) {
		cr_assert_eq(got[o].dtype, ref[o].dtype);
		cr_assert_eq(got[o].ndim, ref[o].ndim, "%s output %u: rank", info.op, o);
		cr_assert_eq(memcmp(got[o].dims, ref[o].dims, ref[o].ndim * sizeof(ref[o].dims[0])), 0, "%s: shape", info.op);
		for (size_t i = 0; i < ref[o].count; i++) {
			if (ref[o].dtype == ONNX_FLOAT) {
				float g = ((float *)got[o].data)[i], r = ((float *)ref[o].data)[i];

				cr_assert(isnan(r) ? isnan(g) : (g == r || fabsf(g - r) <= 1e-5f + 1e-4f * fabsf(r)),
					  "%s output %u [%zu] = %g, CPU %g", info.op, o, i, g, r);
			} else {
				size_t es = onnx_dtype_size(ref[o].dtype);

				cr_assert_eq(memcmp((char *)got[o].data + i * es, (char *)ref[o].data + i * es, es), 0,
					     "%s output %u [%zu]", info.op, o, i);
			}
		}
		onnx_tensor_release(&got[o]);
		onnx_tensor_release(&ref[o]);
	}
	accel_close(dev);
}

/* On the device with VEC math; on a device without it only when vmath is false. */
static void both(struct onnx_model *m, const struct onnx_tensor *in, unsigned n_in, unsigned n_out, unsigned node,
		 bool vmath)
{
	check(m, "sim", in, n_in, n_out, node, true);
	check(m, "sim:vecmath=off", in, n_in, n_out, node, !vmath);
}

/* On the host on either device (an operation cheaper than the copies node by node). */
static void host_both(struct onnx_model *m, const struct onnx_tensor *in, unsigned n_in, unsigned node)
{
	check(m, "sim", in, n_in, 1, node, false);
	check(m, "sim:vecmath=off", in, n_in, 1, node, false);
}

static void release(struct onnx_tensor *t, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		onnx_tensor_release(&t[i]);
}

Test(onnx_node_vec, functions_with_their_attributes)
{
	static const struct {
		const char *op, *attr;
		float val, scale, bias;
		bool vmath;
	} cases[] = {
		{ "Sigmoid", NULL, 0, 4, 0, false },	 { "Log", NULL, 0, 1, 1.5f, true },
		{ "Softplus", NULL, 0, 8, 0, true },	 { "Selu", "gamma", 2.0f, 2, 0, true },
		{ "LeakyRelu", "alpha", 0.3f, 1, 0, true }, { "Round", NULL, 0, 5, 0, true },
		{ "ThresholdedRelu", "alpha", 0.25f, 1, 0, true },
	};
	static const int64_t d[3] = { 2, 3, 5 };

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct mb *b = mb_new(13);
		struct onnx_tensor x;
		struct onnx_model *m;
		Onnx__NodeProto *n;

		mb_input(b, "x");
		n = mb_node(b, cases[k].op, "x", "y");
		if (cases[k].attr)
			mb_attr_f(b, n, cases[k].attr, cases[k].val);
		mb_output(b, "y");
		m = load(b);
		rnd(&x, 3, d, cases[k].scale, cases[k].bias);
		both(m, &x, 1, 1, 0, cases[k].vmath);
		release(&x, 1);
		onnx_model_free(m);
	}
}

Test(onnx_node_vec, arithmetic_with_broadcasting)
{
	static const struct {
		const char *op;
		unsigned na, nb;
		int64_t a[4], b[4];
		bool vmath;
	} cases[] = {
		{ "Div", 3, 2, { 2, 3, 4 }, { 3, 1 }, true },
		{ "PRelu", 4, 3, { 2, 3, 4, 5 }, { 3, 1, 1 }, true },
		{ "Max", 1, 2, { 4 }, { 2, 4 }, false },
		{ "Sub", 2, 2, { 5, 1 }, { 1, 6 }, false },
		{ "Greater", 3, 2, { 2, 3, 4 }, { 3, 1 }, true },	/* comparisons: BOOL outputs */
		{ "LessOrEqual", 2, 2, { 5, 1 }, { 1, 6 }, true },
		{ "Equal", 1, 1, { 6 }, { 6 }, true },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct mb *b = mb_new(13);
		struct onnx_tensor in[2];
		struct onnx_model *m;

		mb_input(b, "a");
		mb_input(b, "b");
		mb_node(b, cases[k].op, "a,b", "y");
		mb_output(b, "y");
		m = load(b);
		rnd(&in[0], cases[k].na, cases[k].a, 2, 0);
		rnd(&in[1], cases[k].nb, cases[k].b, 1, 1.5f);	/* a divisor in [0.5, 2.5) */
		if (!strcmp(cases[k].op, "Equal")) {	/* ties, signed zeros, a NaN */
			static const float ea[6] = { 1, 2, -0.0f, NAN, 3, 4 }, eb[6] = { 1, 3, 0.0f, NAN, 3, -4 };

			memcpy(in[0].data, ea, sizeof(ea));
			memcpy(in[1].data, eb, sizeof(eb));
		}
		if (!cases[k].vmath)	/* Add, Sub, Mul, Max, Min: the host node by node */
			host_both(m, in, 2, 0);
		else
			both(m, in, 2, 1, 0, true);
		release(in, 2);
		onnx_model_free(m);
	}
}

/* ReduceSum over a middle axis given as an input (opset 13: a shape the compiler cannot know), ReduceL2
 * over the trailing axes, ReduceLogSumExp over every axis, ReduceMean over a middle axis. */
Test(onnx_node_vec, reductions_over_a_run_of_axes)
{
	static const struct {
		const char *op;
		int64_t axes[2];
		unsigned n_axes;
		int keep;
		bool vmath;
	} cases[] = {
		{ "ReduceSum", { 1 }, 1, 0, false }, { "ReduceL2", { 1, 2 }, 2, 1, true },
		{ "ReduceLogSumExp", { 0 }, 0, 0, true }, { "ReduceMean", { -2 }, 1, 1, false },
		{ "ReduceProd", { 2 }, 1, 0, true },
	};
	static const int64_t d[3] = { 3, 4, 5 };

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		bool input_axes = !strcmp(cases[k].op, "ReduceSum");
		struct mb *b = mb_new(13);
		struct onnx_tensor in[2];
		struct onnx_model *m;
		Onnx__NodeProto *n;
		int64_t an[1] = { cases[k].n_axes };

		mb_input(b, "x");
		if (input_axes)
			mb_input(b, "axes");
		n = mb_node(b, cases[k].op, input_axes ? "x,axes" : "x", "y");
		if (!input_axes && cases[k].n_axes)
			mb_attr_ints(b, n, "axes", cases[k].axes, cases[k].n_axes);
		mb_attr_i(b, n, "keepdims", cases[k].keep);
		mb_output(b, "y");
		m = load(b);
		rnd(&in[0], 3, d, 1, 1.0f);	/* (0, 2): products and logs stay finite */
		if (input_axes) {
			cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_INT64, 1, an), 0);
			memcpy(in[1].data, cases[k].axes, 8 * cases[k].n_axes);
		}
		both(m, in, input_axes ? 2 : 1, 1, 0, cases[k].vmath);
		release(in, input_axes ? 2 : 1);
		onnx_model_free(m);
	}
}

/* ArgMax/ArgMin over a middle and the last axis: many ties (values from 4 levels), select_last_index,
 * keepdims 0, and a NaN (the extreme, as numpy's argmax takes it). */
Test(onnx_node_vec, argmax_argmin_ties_last_index_and_nan)
{
	static const int64_t d[3] = { 2, 6, 5 };

	for (int op = 0; op < 2; op++)
		for (int axis = 1; axis <= 2; axis++)
			for (int last = 0; last < 2; last++) {
				struct mb *b = mb_new(13);
				struct onnx_tensor x;
				struct onnx_model *m;
				Onnx__NodeProto *n;

				mb_input(b, "x");
				n = mb_node(b, op ? "ArgMin" : "ArgMax", "x", "y");
				mb_attr_i(b, n, "axis", axis == 2 ? -1 : 1);
				mb_attr_i(b, n, "keepdims", axis == 1);
				mb_attr_i(b, n, "select_last_index", last);
				mb_output(b, "y");
				m = load(b);
				rnd(&x, 3, d, 0, 0);
				for (size_t i = 0; i < x.count; i++)
					((float *)x.data)[i] = (float)((int)(mb_frand(&rng) * 2 + 2) % 4);
				((float *)x.data)[7] = NAN;
				((float *)x.data)[22] = NAN;
				both(m, &x, 1, 1, 0, true);
				release(&x, 1);
				onnx_model_free(m);
			}
}

/* Softmax before opset 13 over the 2-D view at axis 1, LogSoftmax (opset 13) over the last axis with a
 * row spanning 100. */
Test(onnx_node_vec, softmax_and_log_softmax)
{
	static const int64_t d[3] = { 2, 3, 4 };

	for (int log = 0; log < 2; log++) {
		struct mb *b = mb_new(log ? 13 : 11);
		struct onnx_tensor x;
		struct onnx_model *m;
		Onnx__NodeProto *n;

		mb_input(b, "x");
		n = mb_node(b, log ? "LogSoftmax" : "Softmax", "x", "y");
		if (!log)
			mb_attr_i(b, n, "axis", 1);
		mb_output(b, "y");
		m = load(b);
		rnd(&x, 3, d, 3, 0);
		((float *)x.data)[5] = -100.0f;
		both(m, &x, 1, 1, 0, log);
		release(&x, 1);
		onnx_model_free(m);
	}
}

/* op (SoftmaxCrossEntropyLoss with its log_prob output, or NegativeLogLikelihoodLoss) of [2, 5, 3] inputs
 * with class weights, target 3 ignored, each reduction. */
static void loss_case(const char *op, bool sce)
{
	static const int64_t xd[3] = { 2, 5, 3 }, td[2] = { 2, 3 }, wd[1] = { 5 };
	static const int64_t labels[6] = { 0, 4, 2, 1, 3, 4 };
	static const char *const reds[] = { "mean", "none", "sum" };

	for (unsigned r = 0; r < 3; r++) {
		struct mb *b = mb_new(13);
		struct onnx_tensor in[3];
		struct onnx_model *m;
		Onnx__NodeProto *n;

		mb_input(b, "x");
		mb_input(b, "t");
		mb_input(b, "w");
		n = mb_node(b, op, "x,t,w", sce ? "y,lp" : "y");
		mb_attr_s(b, n, "reduction", reds[r]);
		mb_attr_i(b, n, "ignore_index", 3);
		mb_output(b, "y");
		if (sce)
			mb_output(b, "lp");
		m = load(b);
		rnd(&in[0], 3, xd, sce ? 4 : 2, sce ? 0 : -2);
		cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_INT64, 2, td), 0);
		memcpy(in[1].data, labels, sizeof(labels));
		rnd(&in[2], 1, wd, 0.5f, 1.0f);
		check(m, "sim", in, 3, sce ? 2 : 1, 0, true);
		release(in, 3);
		onnx_model_free(m);
	}
}

/* SoftmaxCrossEntropyLoss: the log-probabilities on the device (one D x C job per batch), the gather on
 * the host. */
Test(onnx_node_vec, softmax_cross_entropy_log_probabilities)
{
	loss_case("SoftmaxCrossEntropyLoss", true);
}

/* NegativeLogLikelihoodLoss: the gather as a product with the targets' one-hot mask summed over the
 * classes on the device. */
Test(onnx_node_vec, nll_loss_gather_as_a_one_hot_product)
{
	loss_case("NegativeLogLikelihoodLoss", false);
}

/* LayerNormalization with its Mean and InvStdDev outputs (as the backend tests ask), at axis 1 and -1,
 * with and without B: Y from accel_layernorm, the statistics from the device's reductions. */
Test(onnx_node_vec, layer_norm_with_mean_and_inv_std_dev)
{
	static const int64_t xd[3] = { 2, 3, 4 };

	for (int axis = 1; axis <= 2; axis++)
		for (int with_b = 0; with_b < 2; with_b++) {
			int64_t sd[2] = { axis == 1 ? 3 : 4, 4 };
			struct mb *b = mb_new(17);
			struct onnx_tensor in[3];
			struct onnx_model *m;
			Onnx__NodeProto *n;
			struct onnx_tensor ref[3], got[3];
			struct onnx_node_info info;
			struct accel_dev *dev = NULL;

			mb_input(b, "x");
			mb_input(b, "s");
			if (with_b)
				mb_input(b, "b");
			n = mb_node(b, "LayerNormalization", with_b ? "x,s,b" : "x,s", "y,mean,rstd");
			mb_attr_i(b, n, "axis", axis == 2 ? -1 : 1);
			mb_attr_f(b, n, "epsilon", 1e-3f);
			mb_output(b, "y");
			mb_output(b, "mean");
			mb_output(b, "rstd");
			m = load(b);
			rnd(&in[0], 3, xd, 3, 1);
			rnd(&in[1], axis == 1 ? 2 : 1, axis == 1 ? sd : sd + 1, 1, 0.5f);
			rnd(&in[2], axis == 1 ? 2 : 1, axis == 1 ? sd : sd + 1, 1, 0);
			cr_assert_eq(accel_open("sim", &dev), 0);
			cr_assert_eq(onnx_run(m, NULL, in, 2 + with_b, ref, 3, NULL), 0, "CPU: %s", onnx_model_error(m));
			cr_assert_eq(onnx_run(m, dev, in, 2 + with_b, got, 3, NULL), 0, "%s", onnx_model_error(m));
			cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
			cr_assert_eq(info.ran_on_device, 1);
			for (unsigned o = 0; o < 3; o++) {
				cr_assert_eq(got[o].ndim, 3);
				cr_assert_eq(memcmp(got[o].dims, ref[o].dims, sizeof(int64_t) * 3), 0, "output %u shape", o);
				for (size_t i = 0; i < ref[o].count; i++) {
					float g = ((float *)got[o].data)[i], r = ((float *)ref[o].data)[i];

					cr_assert(fabsf(g - r) <= 1e-5f + 1e-4f * fabsf(r), "axis %d output %u [%zu]: %g vs %g",
						  axis, o, i, g, r);
				}
			}
			release(got, 3);
			release(ref, 3);
			release(in, 3);
			accel_close(dev);
			onnx_model_free(m);
		}
}

/* Resize as two GEMMs by the axes' interpolation matrices (ops_accel_resize.c): nearest upsampling x2
 * (bit-exact), linear with align_corners downsampling, cubic to given sizes, over [N, C, H, W]; and a
 * tf_crop_and_resize whose coordinates leave the input (extrapolation) stays on the host. */
Test(onnx_node_vec, resize_modes_as_gemms)
{
	static const struct {
		const char *mode, *coord;
		float sh, sw;	/* scales of H and W, or 0: sizes oh, ow */
		int64_t oh, ow;
		bool device;
	} cases[] = {
		{ "nearest", "asymmetric", 2, 2, 0, 0, true },
		{ "linear", "align_corners", 0.5f, 0.75f, 0, 0, true },
		{ "cubic", "half_pixel", 0, 0, 9, 5, true },
		{ "linear", "pytorch_half_pixel", 1, 3, 0, 0, true },	/* W only */
		{ "linear", "tf_crop_and_resize", 0, 0, 10, 10, false },
	};
	static const int64_t xd[4] = { 2, 3, 6, 8 }, four[1] = { 4 }, eight[1] = { 8 };

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct mb *b = mb_new(13);
		struct onnx_tensor in[3];
		struct onnx_model *m;
		Onnx__NodeProto *n;
		const bool sizes = cases[k].sh == 0;
		const float roi[8] = { 0, 0, -0.4f, 0.2f, 1, 1, 1.3f, 0.9f };

		mb_input(b, "x");
		mb_input(b, "roi");
		mb_input(b, sizes ? "sizes" : "scales");
		n = mb_node(b, "Resize", sizes ? "x,roi,,sizes" : "x,roi,scales", "y");
		mb_attr_s(b, n, "mode", cases[k].mode);
		mb_attr_s(b, n, "coordinate_transformation_mode", cases[k].coord);
		mb_output(b, "y");
		m = load(b);
		rnd(&in[0], 4, xd, 4, 0);
		cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_FLOAT, 1, eight), 0);
		memcpy(in[1].data, roi, sizeof(roi));
		if (sizes) {
			const int64_t s[4] = { 2, 3, cases[k].oh, cases[k].ow };

			cr_assert_eq(onnx_tensor_alloc(&in[2], ONNX_INT64, 1, four), 0);
			memcpy(in[2].data, s, sizeof(s));
		} else {
			const float s[4] = { 1, 1, cases[k].sh, cases[k].sw };

			cr_assert_eq(onnx_tensor_alloc(&in[2], ONNX_FLOAT, 1, four), 0);
			memcpy(in[2].data, s, sizeof(s));
		}
		check(m, "sim", in, 3, 1, 0, cases[k].device);
		release(in, 3);
		onnx_model_free(m);
	}
}

/* BatchNormalization with its parameters as inputs of the run, InstanceNormalization (GroupNorm's
 * export), Sum and Mean of three broadcast operands: the per-channel steps on the vector units. */
Test(onnx_node_vec, batch_and_instance_norm_sum_and_mean)
{
	static const int64_t xd[4] = { 2, 3, 4, 5 }, cd[1] = { 3 }, b1[2] = { 4, 1 }, b2[1] = { 5 };

	for (int op = 0; op < 4; op++) {	/* BatchNormalization, InstanceNormalization, Sum, Mean */
		static const char *const ops[] = { "BatchNormalization", "InstanceNormalization", "Sum", "Mean" };
		static const char *const ins[] = { "x,s,b,m,v", "x,s,b", "x,p,q", "x,p,q" };
		struct mb *b = mb_new(13);
		struct onnx_tensor in[5];
		unsigned n_in = op == 0 ? 5 : 3;
		struct onnx_model *m;

		mb_input(b, "x");
		for (const char *p = strchr(ins[op], ',') + 1; *p; p += p[1] ? 2 : 1) {
			char name[2] = { *p, 0 };

			mb_input(b, name);
		}
		mb_node(b, ops[op], ins[op], "y");
		mb_output(b, "y");
		m = load(b);
		rnd(&in[0], 4, xd, 3, 0.5f);
		if (op < 2) {
			for (unsigned k = 1; k < n_in; k++)
				rnd(&in[k], 1, cd, 1, k == 4 ? 1.5f : 0.2f);	/* var > 0 */
		} else {
			rnd(&in[1], 2, b1, 1, 0);
			rnd(&in[2], 1, b2, 1, 0);
		}
		check(m, "sim", in, n_in, 1, 0, true);
		release(in, n_in);
		onnx_model_free(m);
	}
}

/* Hardmax over the 2-D coercion (opset 11, axis 1) and over one axis (opset 13): ties keep the first
 * maximum, a NaN is the maximum (numpy's argmax). */
Test(onnx_node_vec, hardmax_one_hot_of_the_device_argmax)
{
	static const int64_t d[3] = { 3, 4, 5 };

	for (int opset = 11; opset <= 13; opset += 2) {
		struct mb *b = mb_new(opset);
		struct onnx_tensor x;
		struct onnx_model *m;
		Onnx__NodeProto *n;

		mb_input(b, "x");
		n = mb_node(b, "Hardmax", "x", "y");
		mb_attr_i(b, n, "axis", 1);
		mb_output(b, "y");
		m = load(b);
		rnd(&x, 3, d, 0, 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = (float)((int)(mb_frand(&rng) * 2 + 2) % 3);
		((float *)x.data)[9] = NAN;
		check(m, "sim", &x, 1, 1, 0, true);
		release(&x, 1);
		onnx_model_free(m);
	}
}

/* RNN, GRU (linear_before_reset) and bidirectional LSTM (peepholes, sequence_lens, layout 1): the input
 * projections of every step as device GEMMs, the recurrence on the host; against the CPU kernel. */
Test(onnx_node_vec, recurrent_input_projections_on_the_device)
{
	for (int op = 0; op < 3; op++) {
		static const char *const ops[] = { "RNN", "GRU", "LSTM" };
		const int64_t gates = op == 0 ? 1 : op == 1 ? 3 : 4, dirs = op == 2 ? 2 : 1, hid = 5, in_sz = 7;
		const int64_t xd[3] = { op == 2 ? 2 : 4, op == 2 ? 4 : 2, in_sz };	/* LSTM: layout 1, [batch, seq, in] */
		const int64_t wd[3] = { dirs, gates * hid, in_sz }, rd[3] = { dirs, gates * hid, hid };
		const int64_t bd[2] = { dirs, 2 * gates * hid }, ld[1] = { 2 }, pd[2] = { dirs, 3 * hid };
		const int32_t lens[2] = { 4, 3 };
		struct mb *b = mb_new(14);
		struct onnx_tensor in[6];
		struct onnx_model *m;
		Onnx__NodeProto *n;
		unsigned n_in = op == 2 ? 6 : 4;

		mb_input(b, "x");
		mb_input(b, "w");
		mb_input(b, "r");
		mb_input(b, "b");
		if (op == 2) {
			mb_input(b, "l");
			mb_input(b, "p");
		}
		n = mb_node(b, ops[op], op == 2 ? "x,w,r,b,l,,,p" : "x,w,r,b", "y,yh");
		mb_attr_i(b, n, "hidden_size", hid);
		if (op == 1)
			mb_attr_i(b, n, "linear_before_reset", 1);
		if (op == 2) {
			mb_attr_s(b, n, "direction", "bidirectional");
			mb_attr_i(b, n, "layout", 1);
		}
		mb_output(b, "y");
		mb_output(b, "yh");
		m = load(b);
		rnd(&in[0], 3, xd, 2, 0);
		rnd(&in[1], 3, wd, 0.5f, 0);
		rnd(&in[2], 3, rd, 0.5f, 0);
		rnd(&in[3], 2, bd, 0.2f, 0);
		if (op == 2) {
			cr_assert_eq(onnx_tensor_alloc(&in[4], ONNX_INT32, 1, ld), 0);
			memcpy(in[4].data, lens, sizeof(lens));
			rnd(&in[5], 2, pd, 0.3f, 0);
		}
		check(m, "sim", in, n_in, 2, 0, true);
		release(in, n_in);
		onnx_model_free(m);
	}
}

/* QuantizeLinear with a power-of-two scale (UINT8 and INT8, saturating, ties to even) and
 * DequantizeLinear of UINT8/INT8 on the vector units; another scale quantises on the host (the unit
 * multiplies by 1/scale, exact only for a power of two); DynamicQuantizeLinear's range by the device's
 * REDUCE MIN/MAX. */
Test(onnx_node_vec, quantize_dequantize_and_dynamic_range)
{
	static const int64_t d[1] = { 12 }, one[1] = { 1 };
	static const float xs[12] = { 0, 1, 2, 3, -1, -3, 5, 511, -700, 2.5f, -2.5f, 0.75f };

	for (int k = 0; k < 6; k++) {	/* Q u8, Q i8, Q u8 scale 0.3 (host), DQ u8, DQ i8, Dynamic */
		bool dq = k == 3 || k == 4, u8 = k == 0 || k == 2 || k == 3, dyn = k == 5;
		float scale = k == 2 ? 0.3f : (k == 1 ? 0.25f : 2.0f);
		struct mb *b = mb_new(13);
		struct onnx_tensor in[3];
		struct onnx_model *m;

		mb_input(b, "x");
		if (dyn) {
			mb_node(b, "DynamicQuantizeLinear", "x", "y,ys,yz");
		} else {
			mb_input(b, "s");
			mb_input(b, "z");
			mb_node(b, dq ? "DequantizeLinear" : "QuantizeLinear", "x,s,z", "y");
		}
		mb_output(b, "y");
		m = load(b);
		if (dq) {
			cr_assert_eq(onnx_tensor_alloc(&in[0], u8 ? ONNX_UINT8 : ONNX_INT8, 1, d), 0);
			for (int i = 0; i < 12; i++)
				((uint8_t *)in[0].data)[i] = (uint8_t)(i * 23 + 7);
		} else {
			cr_assert_eq(onnx_tensor_alloc(&in[0], ONNX_FLOAT, 1, d), 0);
			memcpy(in[0].data, xs, sizeof(xs));
		}
		if (!dyn) {
			cr_assert_eq(onnx_tensor_alloc(&in[1], ONNX_FLOAT, 0, one), 0);	/* scalars: per tensor */
			((float *)in[1].data)[0] = scale;
			cr_assert_eq(onnx_tensor_alloc(&in[2], u8 ? ONNX_UINT8 : ONNX_INT8, 0, one), 0);
			((uint8_t *)in[2].data)[0] = u8 ? 128 : (uint8_t)(int8_t)-3;
		}
		check(m, "sim", in, dyn ? 1 : 3, 1, 0, k != 2);
		release(in, dyn ? 1 : 3);
		onnx_model_free(m);
	}
}
