/* SPDX-License-Identifier: MIT */
/* The loader: graphs from generated models, and clear errors for bad files and unsupported ops. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../../onnx/src/internal.h"
#include "builder.h"

static struct onnx_model *load(struct mb *b, unsigned flags, int *ret, char *err, size_t errlen)
{
	struct onnx_model *m = NULL;
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);

	*ret = onnx_model_load_mem(buf, len, flags, &m, err, errlen);
	return m;
}

static struct mb *conv_relu_model(void)
{
	struct mb *b = mb_new(13);
	static const float w[2 * 1 * 3 * 3] = { 1, 0, -1, 2, 0, -2, 1, 0, -1, 0, 1, 0, 1, -4, 1, 0, 1, 0 };
	int64_t wd[4] = { 2, 1, 3, 3 };

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w", "c");
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	return b;
}

Test(onnx_load, builds_the_graph_of_a_generated_model)
{
	char err[256] = "";
	struct mb *b = conv_relu_model();
	int ret;
	struct onnx_model *m = load(b, 0, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_inputs(m), 1);
	cr_expect_str_eq(onnx_model_input_name(m, 0), "x");
	cr_expect_eq(onnx_model_n_outputs(m), 1);
	cr_expect_str_eq(onnx_model_output_name(m, 0), "y");
	cr_expect_eq(onnx_model_n_nodes(m), 1, "the Relu is fused into the Conv");
	onnx_model_free(m);
	m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), 2, "the graph as written");
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_load, rejects_an_unsupported_op_naming_it)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	int ret;

	mb_input(b, "x");
	mb_node(b, "StringNormalizer", "x", "y");
	mb_output(b, "y");
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "unsupported operator 'StringNormalizer'"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_a_foreign_domain_op)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	Onnx__NodeProto *n;
	int ret;

	mb_input(b, "x");
	n = mb_node(b, "Relu", "x", "y");
	n->domain = (char *)"com.microsoft";
	mb_output(b, "y");
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "com.microsoft"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_an_undefined_input_naming_it)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	int ret;

	mb_input(b, "x");
	mb_node(b, "Add", "x,ghost", "y");
	mb_output(b, "y");
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "'ghost'"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_an_output_nobody_produces)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	int ret;

	mb_input(b, "x");
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "z");
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "'z'"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_garbage_bytes_as_not_a_model)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x12, 0x34, 0x56 };
	struct onnx_model *m = NULL;
	char err[256] = "";

	cr_expect_eq(onnx_model_load_mem(junk, sizeof(junk), 0, &m, err, sizeof(err)), -EBADMSG);
	cr_expect_null(m);
	cr_expect(strstr(err, "not an ONNX model"), "message: %s", err);
}

Test(onnx_load, rejects_a_truncated_model)
{
	struct mb *b = conv_relu_model();
	struct onnx_model *m = NULL;
	char err[256] = "";
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	int ret = onnx_model_load_mem(buf, len - 7, 0, &m, err, sizeof(err));

	cr_expect_lt(ret, 0);
	cr_expect_null(m);
	cr_expect(strlen(err) > 0);
	mb_free(b);
}

Test(onnx_load, rejects_an_empty_file_as_having_no_graph)
{
	struct onnx_model *m = NULL;
	char err[256] = "";

	cr_expect_eq(onnx_model_load_mem("", 0, 0, &m, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "no graph"), "message: %s", err);
}

Test(onnx_load, reports_a_missing_file_with_its_path)
{
	struct onnx_model *m = NULL;
	char err[256] = "";

	cr_expect_eq(onnx_model_load("/nonexistent/model.onnx", 0, &m, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "/nonexistent/model.onnx"), "message: %s", err);
}

Test(onnx_load, rejects_an_initializer_of_an_unsupported_type)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	static const double d[2] = { 1, 2 };
	int64_t dims[1] = { 2 };
	Onnx__TensorProto *t;
	int ret;

	mb_init(b, "w", ONNX_FLOAT, 1, dims, d);	/* then retyped to COMPLEX64 */
	mb_input(b, "x");
	mb_node(b, "Add", "x,w", "y");
	mb_output(b, "y");
	mb_pack(b, &(size_t){ 0 });
	t = ((Onnx__ModelProto *)(void *)b)->graph->initializer[0];
	t->data_type = 14;
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "COMPLEX64") && strstr(err, "'w'"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, round_trips_a_tensor_through_a_pb_file)
{
	char path[] = "/tmp/onnx-test-XXXXXX", err[256];
	int64_t dims[2] = { 2, 3 };
	struct onnx_tensor t, r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(onnx_tensor_alloc(&t, ONNX_FLOAT, 2, dims), 0);
	for (int i = 0; i < 6; i++)
		((float *)t.data)[i] = (float)i * 1.5f - 2;
	cr_assert_eq(onnx_tensor_save_pb(path, &t, "v", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_tensor_load_pb(path, &r, NULL, 0, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(r.ndim, 2);
	cr_expect_eq(r.dims[1], 3);
	cr_expect_arr_eq(r.data, t.data, 24);
	onnx_tensor_release(&t);
	onnx_tensor_release(&r);
	unlink(path);
}

/* ---- shape limits (issue #27, B4): tnpu_onnx.h's ONNX_MAX_DIM_SIZE and ONNX_MAX_SHAPE_ELEMS ------------ */

/* x -> Conv 3x3 pad 1 -> y, and a Shape of y (so the loader infers y's shape through the window). */
static struct mb *declared_conv(const int64_t *xd)
{
	static const int64_t wd[4] = { 1, 1, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	static const float w[9] = { 0 };
	struct mb *b = mb_new(13);
	Onnx__NodeProto *n;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input_typed(b, "x", ONNX_FLOAT, 4, xd);
	n = mb_node(b, "Conv", "x,w", "y");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Shape", "y", "s");
	mb_output(b, "y");
	mb_output(b, "s");
	return b;
}

/* [0, 1, 2^63 - 1, 1] holds no elements, so no allocation bound saw it: it reached the Conv window's
 * in + pads (signed overflow) and accel-run called it "out of memory".  Refused at load, with or
 * without folding, naming the input and the dimension. */
Test(onnx_load, rejects_a_declared_dimension_past_the_limit_naming_the_input)
{
	static const int64_t xd[4] = { 0, 1, INT64_MAX, 1 };

	for (unsigned flags = 0; flags <= ONNX_LOAD_NO_FOLD; flags += ONNX_LOAD_NO_FOLD) {
		struct mb *b = declared_conv(xd);
		char err[512] = "";
		int ret;

		cr_expect_null(load(b, flags, &ret, err, sizeof(err)), "flags %u", flags);
		cr_expect_eq(ret, -EINVAL, "flags %u: %d (%s)", flags, ret, err);
		cr_expect(strstr(err, "'x'") && strstr(err, "dimension 2") && strstr(err, "9223372036854775807"),
			  "message: %s", err);
		mb_free(b);
	}
}

Test(onnx_load, accepts_declared_dimensions_at_the_limit)
{
	static const int64_t xd[4] = { 0, 1, ONNX_MAX_DIM_SIZE, 1 };
	struct mb *b = declared_conv(xd);
	struct onnx_model *m;
	char err[512] = "";
	int ret;

	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_eq(ret, 0, "%s", err);
	onnx_model_free(m);
	mb_free(b);
}

/* Each dimension below the limit, the product (zeros counted as 1) far above it: refused too, so a
 * stride or an element offset computed from the shape cannot overflow either. */
Test(onnx_load, rejects_declared_dimensions_whose_product_passes_the_limit)
{
	static const int64_t xd[4] = { 0, ONNX_MAX_DIM_SIZE, ONNX_MAX_DIM_SIZE, 4 };
	struct mb *b = declared_conv(xd);
	char err[512] = "";
	int ret;

	cr_expect_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EINVAL, "%d (%s)", ret, err);
	cr_expect(strstr(err, "'x'") && strstr(err, "multiply"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_a_value_info_dimension_past_the_limit_naming_it)
{
	static const int64_t xd[4] = { 1, 1, 4, 4 }, yd[4] = { 0, 1, (int64_t)1 << 40, 4 };
	struct mb *b = declared_conv(xd);
	char err[512] = "";
	int ret;

	mb_value_info(b, "y", ONNX_FLOAT, 4, yd);
	cr_expect_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EINVAL, "%d (%s)", ret, err);
	cr_expect(strstr(err, "'y'") && strstr(err, "dimension 2"), "message: %s", err);
	mb_free(b);
}

Test(onnx_load, rejects_an_empty_initializer_whose_dimensions_multiply_past_the_limit)
{
	static const int64_t xd[4] = { 1, 1, 4, 4 }, zd[4] = { 0, ONNX_MAX_DIM_SIZE, ONNX_MAX_DIM_SIZE, 4 };
	struct mb *b = declared_conv(xd);
	char err[512] = "";
	int ret;

	mb_init(b, "z", ONNX_FLOAT, 4, zd, NULL);
	cr_expect_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EINVAL, "%d (%s)", ret, err);
	cr_expect(strstr(err, "'z'") && strstr(err, "multiply"), "message: %s", err);
	mb_free(b);
}

/* Defence in depth: the window arithmetic itself refuses what would overflow, whatever reaches it. */
Test(onnx_load, window_arithmetic_refuses_overflowing_sizes)
{
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	Onnx__NodeProto *p = mb_node(b, "Conv", "x,w", "y");
	struct onnx_node n = { .pb = p, .op = OP_CONV };
	struct onnx_model m = { .n_vals = 0 };
	struct onnx_ctx c = { .m = &m, .n = &n };
	struct win2d w;

	mb_attr_ints(b, p, "pads", pads, 4);
	cr_expect_eq(win_resolve(&c, 2, INT64_MAX, 1, 3, 3, false, &w), -EINVAL);
	cr_expect(strstr(m.err, "spatial dimension 2"), "message: %s", m.err);
	cr_expect_eq(win_resolve(&c, 2, 1, INT64_MAX - 1, 3, 3, true, &w), -EINVAL);
	n.extra_pads[0] = INT64_MAX;
	cr_expect_eq(win_resolve(&c, 2, 1, 1, 3, 3, false, &w), -EINVAL);
	n.extra_pads[0] = 0;
	cr_expect_eq(win_resolve(&c, 2, 8, 8, 3, 3, false, &w), 0, "%s", m.err);
	cr_expect(w.oh == 8 && w.ow == 8);
	mb_free(b);
}
