/* SPDX-License-Identifier: MIT */
/*
 * accel_op_supported (#27 B3): the operation IR's support query answers each kind with the operation's own
 * validation, names the field it refuses, needs no buffers, and follows the size/version rule.
 */
#include "common.h"

/* A shape-only tensor (buf NULL, packed), as a compiler builds it before any memory exists. */
static struct accel_tensor shape4(enum accel_dtype dt, enum accel_layout l, uint32_t n, uint32_t c, uint32_t h,
				  uint32_t w)
{
	struct accel_tensor t;
	int64_t e = (int64_t)accel_dtype_size(dt);

	memset(&t, 0, sizeof(t));
	t.dtype = dt;
	t.layout = l;
	t.ndim = 4;
	t.shape[0] = n, t.shape[1] = c, t.shape[2] = h, t.shape[3] = w;
	if (l == ACCEL_LAYOUT_NHWC) {
		t.strides[1] = e, t.strides[3] = e * c, t.strides[2] = e * c * w, t.strides[0] = e * c * w * h;
	} else {
		t.strides[3] = e, t.strides[2] = e * w, t.strides[1] = e * w * h, t.strides[0] = e * w * h * c;
	}
	return t;
}

static struct accel_tensor shape2(enum accel_dtype dt, uint32_t rows, uint32_t cols)
{
	struct accel_tensor t;

	memset(&t, 0, sizeof(t));
	t.dtype = dt;
	t.layout = ACCEL_LAYOUT_ROWMAJOR;
	t.ndim = 2;
	t.shape[0] = rows, t.shape[1] = cols;
	t.strides[1] = (int64_t)accel_dtype_size(dt);
	t.strides[0] = t.strides[1] * cols;
	return t;
}

static int ask(struct accel_dev *dev, struct accel_op op, char *why, size_t len)
{
	return accel_op_supported(dev, &op, why, len);
}

#define ASSERT_OK(dev, op)                                                                              \
	do {                                                                                             \
		char why_[256];                                                                          \
		int r_ = ask(dev, op, why_, sizeof(why_));                                               \
		cr_assert_eq(r_, 0, "expected supported, got %s: %s", accel_strerror(r_), why_);        \
		cr_assert_str_empty(why_);                                                               \
	} while (0)

#define ASSERT_REFUSED(dev, op, err, field)                                                             \
	do {                                                                                             \
		char why_[256];                                                                          \
		int r_ = ask(dev, op, why_, sizeof(why_));                                               \
		cr_assert_eq(r_, err, "expected %s, got %s: %s", accel_strerror(err), accel_strerror(r_), why_); \
		cr_assert(strstr(why_, field), "reason '%s' does not name '%s'", why_, field);           \
		cr_assert_str_eq(why_, accel_last_error(dev));                                           \
	} while (0)

static struct accel_conv2d_desc conv_desc(const struct accel_tensor *x, const struct accel_tensor *w,
					  const struct accel_tensor *y, uint32_t stride)
{
	struct accel_conv2d_desc d;

	memset(&d, 0, sizeof(d));
	d.input = x, d.weights = w, d.output = y;
	d.stride_h = d.stride_w = stride;
	d.dil_h = d.dil_w = 1;
	d.groups = 1;
	return d;
}

Test(op, conv2d_supported_without_buffers_and_refused_stride_names_the_field)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 3, 8, 8);
	struct accel_tensor w = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 4, 3, 3, 3);
	struct accel_tensor y = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 6, 6);
	struct accel_tensor y300 = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 1, 1);
	struct accel_tensor x300 = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 3, 303, 303);
	struct accel_conv2d_desc good = conv_desc(&x, &w, &y, 1), bad = conv_desc(&x300, &w, &y300, 300);

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &good));
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &bad), -EOPNOTSUPP, "stride_h 300 > 255");
	accel_close(dev);
}

Test(op, conv2d_plane_above_65535_and_depthwise)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 1, 1, 70000);
	struct accel_tensor w = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 1, 1, 1);
	struct accel_tensor y = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 1, 1, 70000);
	struct accel_tensor dx = shape4(ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, 8, 9, 9);
	struct accel_tensor dw = shape4(ACCEL_INT8, ACCEL_LAYOUT_NHWC, 8, 1, 3, 3);
	struct accel_tensor dy = shape4(ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, 8, 7, 7);
	struct accel_conv2d_desc wide = conv_desc(&x, &w, &y, 1), depthwise = conv_desc(&dx, &dw, &dy, 1);

	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &wide), -EOPNOTSUPP, "input W 70000 > 65535");
	depthwise.groups = 8;
	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &depthwise));
	depthwise.groups = 3;	/* does not divide C: malformed, not a device limit */
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &depthwise), -EINVAL, "groups");
	accel_close(dev);
}

Test(op, conv2d_call_keeps_its_errno_and_names_the_field)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_buffer *b = alloc_buf(dev, 4 << 20);
	struct accel_tensor x, w, y;
	struct accel_conv2d_desc d;

	cr_assert_eq(accel_tensor_4d(b, 0, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 3, 303, 303, &x), 0);
	cr_assert_eq(accel_tensor_4d(b, 2 << 20, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 4, 3, 3, 3, &w), 0);
	cr_assert_eq(accel_tensor_4d(b, 3 << 20, ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 1, 1, &y), 0);
	d = conv_desc(&x, &w, &y, 300);
	cr_assert_eq(accel_conv2d(dev, &d, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "stride_h 300 > 255"), "%s", accel_last_error(dev));
	/* with buffers the query checks what the call checks, and answers -EOPNOTSUPP for the limit */
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_CONV2D, conv2d, &d), -EOPNOTSUPP, "stride_h");
	accel_close(dev);
}

Test(op, gemm_good_and_inner_dimension_mismatch)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor a = shape2(ACCEL_INT8, 16, 32), b = shape2(ACCEL_INT8, 32, 8), c = shape2(ACCEL_INT32, 16, 8);
	struct accel_tensor b2 = shape2(ACCEL_INT8, 31, 8);
	struct accel_gemm_desc d = { .a = &a, .b = &b, .c = &c };
	struct accel_gemm_desc bad = { .a = &a, .b = &b2, .c = &c };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_GEMM, gemm, &d));
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_GEMM, gemm, &bad), -EINVAL, "inner dimensions");
	d.epi.shift = 70;	/* requantisation of an INT32 output: malformed */
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_GEMM, gemm, &d), -EINVAL, "requantisation");
	accel_close(dev);
}

Test(op, pool2d_good_and_padding_not_smaller_than_the_window)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 8, 8);
	struct accel_tensor y = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 4, 4);
	struct accel_pool2d_desc d = { .input = &x, .output = &y, .kind = ACCEL_POOL_AVG, .win_h = 2, .win_w = 2,
				       .stride_h = 2, .stride_w = 2 };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_POOL2D, pool2d, &d));
	d.kind = ACCEL_POOL_MAX;
	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_POOL2D, pool2d, &d));
	d.pad_top = 2;
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_POOL2D, pool2d, &d), -EINVAL, "padding");
	accel_close(dev);
}

Test(op, pool2d_average_beyond_the_convolution_limits)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 2, 600, 600);
	struct accel_tensor y = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 2, 2, 2);
	struct accel_pool2d_desc d = { .input = &x, .output = &y, .kind = ACCEL_POOL_AVG, .win_h = 300,
				       .win_w = 300, .stride_h = 300, .stride_w = 300 };

	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_POOL2D, pool2d, &d), -EOPNOTSUPP, "stride_h 300 > 255");
	accel_close(dev);
}

Test(op, activation_sfu_and_vector_functions)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape2(ACCEL_FP32, 4, 64), y = shape2(ACCEL_FP32, 4, 64);
	struct accel_activation_desc d = { .input = &x, .output = &y, .act = ACCEL_ACT_RELU };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_ACTIVATION, activation, &d));
	d.act = ACCEL_ACT_GELU;
	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_ACTIVATION, activation, &d));
	d.act = (enum accel_act)99;
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_ACTIVATION, activation, &d), -EINVAL, "act");
	accel_close(dev);
}

Test(op, eltwise_good_and_unknown_op)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor a = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 5, 5);
	struct accel_tensor b = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 1, 1);
	struct accel_tensor o = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 5, 5);
	struct accel_eltwise_desc d = { .a = &a, .b = &b, .out = &o, .op = ACCEL_ELT_MUL };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_ELTWISE, eltwise, &d));
	d.op = (enum accel_eltwise_op)17;
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_ELTWISE, eltwise, &d), -EINVAL, "op");
	accel_close(dev);
}

Test(op, softmax_good_and_wrong_dtype)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape2(ACCEL_FP32, 8, 100), y = shape2(ACCEL_FP32, 8, 100);
	struct accel_tensor yi = shape2(ACCEL_INT32, 8, 100);
	struct accel_softmax_desc d = { .input = &x, .output = &y };
	struct accel_softmax_desc bad = { .input = &x, .output = &yi };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, &d));
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, &bad), -EINVAL, "FP32");
	accel_close(dev);
}

Test(op, layernorm_good_and_negative_epsilon)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape2(ACCEL_FP32, 8, 100), y = shape2(ACCEL_FP32, 8, 100), g = shape2(ACCEL_FP32, 1, 100);
	struct accel_layernorm_desc d = { .input = &x, .output = &y, .gamma = &g, .epsilon = 1e-5f };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_LAYERNORM, layernorm, &d));
	d.epsilon = -1.0f;
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_LAYERNORM, layernorm, &d), -EINVAL, "epsilon");
	accel_close(dev);
}

Test(op, transpose_good_and_not_a_permutation)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 3, 4, 5);
	struct accel_tensor y = shape4(ACCEL_FP32, ACCEL_LAYOUT_NCHW, 1, 4, 5, 3);
	struct accel_transpose_desc d = { .input = &x, .output = &y, .perm = { 0, 2, 3, 1 } };

	ASSERT_OK(dev, ACCEL_OP_INIT(ACCEL_OP_TRANSPOSE, transpose, &d));
	d.perm[3] = 2;
	ASSERT_REFUSED(dev, ACCEL_OP_INIT(ACCEL_OP_TRANSPOSE, transpose, &d), -EINVAL, "perm");
	accel_close(dev);
}

Test(op, malformed_ops_are_einval)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_op op = ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, NULL);
	char why[128];

	cr_assert_eq(accel_op_supported(dev, NULL, why, sizeof(why)), -EINVAL);
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "softmax: descriptor is NULL"), "%s", why);
	op.kind = 0;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "kind 0"), "%s", why);
	op.kind = ACCEL_OP_KIND_COUNT + 5;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	op = ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, NULL);
	op.flags = 1;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "flags"), "%s", why);
	cr_assert_eq(accel_op_supported(NULL, &op, why, sizeof(why)), -EINVAL);
	cr_assert_str_eq(accel_op_kind_name(ACCEL_OP_CONV2D), "conv2d");
	cr_assert_str_eq(accel_op_kind_name(1000), "?");
	accel_close(dev);
}

Test(op, size_and_version_rules)
{
	struct accel_dev *dev = open_dev(NULL);
	struct accel_tensor x = shape2(ACCEL_FP32, 8, 100), y = shape2(ACCEL_FP32, 8, 100);
	struct accel_softmax_desc d = { .input = &x, .output = &y };
	struct {
		struct accel_op op;
		uint8_t tail[24];
	} big;
	struct accel_op op = ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, &d);
	char why[160];

	cr_assert_eq(sizeof(struct accel_op), ACCEL_OP_SIZE_VER0, "a new member needs a new ACCEL_OP_SIZE_VER*");
	/* an older, smaller caller ... */
	op.size = ACCEL_OP_SIZE_VER0;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), 0, "%s", why);
	/* ... but never smaller than the first layout */
	op.size = ACCEL_OP_SIZE_VER0 - 8;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "size"), "%s", why);
	/* a newer caller whose unknown fields are zero is accepted; a non-zero unknown field is refused */
	memset(&big, 0, sizeof(big));
	big.op = ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, &d);
	big.op.size = sizeof(big);
	cr_assert_eq(accel_op_supported(dev, &big.op, why, sizeof(why)), 0, "%s", why);
	big.tail[5] = 1;
	cr_assert_eq(accel_op_supported(dev, &big.op, why, sizeof(why)), -E2BIG);
	cr_assert(strstr(why, "byte 37"), "%s", why);
	/* versions */
	op = ACCEL_OP_INIT(ACCEL_OP_SOFTMAX, softmax, &d);
	op.version = ACCEL_OP_VERSION + 1;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "version"), "%s", why);
	op.version = 0;
	cr_assert_eq(accel_op_supported(dev, &op, why, sizeof(why)), -EINVAL);
	accel_close(dev);
}

Test(op, random_ops_never_crash_and_always_explain)
{
	struct accel_dev *dev = open_dev(NULL);
	uint64_t seed = 0x27b3, s = seed;

	for (int i = 0; i < 4000; i++) {
		struct accel_tensor t[4];
		struct accel_conv2d_desc cd;
		struct accel_gemm_desc gd;
		struct accel_pool2d_desc pd;
		struct accel_eltwise_desc ed;
		struct accel_op op;
		char why[256];
		int ret;

		for (unsigned k = 0; k < 4; k++) {
			memset(&t[k], 0, sizeof(t[k]));
			t[k].dtype = (enum accel_dtype)(xrng(&s) % 4);
			t[k].layout = (enum accel_layout)(xrng(&s) % 3);
			t[k].ndim = xrng(&s) % 2 ? 4 : 2;
			for (unsigned j = 0; j < 4; j++) {
				t[k].shape[j] = (uint32_t)(xrng(&s) % 8 ? xrng(&s) % 9 : xrng(&s));
				t[k].strides[j] = (int64_t)(xrng(&s) % 64) - 4;
			}
			t[k].offset = xrng(&s) % 16;
		}
		memset(&cd, 0, sizeof(cd));
		cd.input = &t[0], cd.weights = &t[1], cd.output = &t[2];
		cd.stride_h = (uint32_t)(xrng(&s) % 300), cd.stride_w = (uint32_t)(xrng(&s) % 4);
		cd.dil_h = cd.dil_w = (uint32_t)(xrng(&s) % 3);
		cd.groups = (uint32_t)(xrng(&s) % 3);
		cd.epi.bias = xrng(&s) % 2 ? &t[3] : NULL;
		memset(&gd, 0, sizeof(gd));
		gd.a = &t[0], gd.b = &t[1], gd.c = &t[2], gd.trans_a = xrng(&s) % 2;
		memset(&pd, 0, sizeof(pd));
		pd.input = &t[0], pd.output = &t[1], pd.kind = (enum accel_pool_kind)(xrng(&s) % 3);
		pd.win_h = pd.win_w = (uint32_t)(xrng(&s) % 4), pd.stride_h = pd.stride_w = (uint32_t)(xrng(&s) % 3);
		memset(&ed, 0, sizeof(ed));
		ed.a = &t[0], ed.b = &t[1], ed.out = &t[2], ed.op = (enum accel_eltwise_op)(xrng(&s) % 7);
		memset(&op, 0, sizeof(op));
		op.size = sizeof(op), op.version = ACCEL_OP_VERSION;
		op.kind = (uint32_t)(xrng(&s) % (ACCEL_OP_KIND_COUNT + 1));
		op.u.desc = op.kind == ACCEL_OP_CONV2D ? (const void *)&cd : op.kind == ACCEL_OP_GEMM ? (const void *)&gd
			  : op.kind == ACCEL_OP_POOL2D ? (const void *)&pd : (const void *)&ed;
		if (op.kind != ACCEL_OP_CONV2D && op.kind != ACCEL_OP_GEMM && op.kind != ACCEL_OP_POOL2D &&
		    op.kind != ACCEL_OP_NONE && op.kind != ACCEL_OP_KIND_COUNT)
			op.kind = ACCEL_OP_ELTWISE;	/* u.desc is &ed */
		ret = accel_op_supported(dev, &op, why, sizeof(why));
		cr_assert(ret == 0 || ret == -EINVAL || ret == -EOPNOTSUPP, "seed %llx op %d: %s", (unsigned long long)seed,
			  i, accel_strerror(ret));
		cr_assert(ret == 0 ? !why[0] : why[0] != 0, "seed %llx op %d: ret %d, reason '%s'",
			  (unsigned long long)seed, i, ret, why);
	}
	accel_close(dev);
}
