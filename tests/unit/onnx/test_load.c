/* SPDX-License-Identifier: MIT */
/* The loader: graphs from generated models, and clear errors for bad files and unsupported ops. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	mb_node(b, "Einsum", "x", "y");
	mb_output(b, "y");
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "unsupported operator 'Einsum'"), "message: %s", err);
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

	mb_init(b, "w", ONNX_FLOAT, 1, dims, d);	/* then retyped to DOUBLE */
	mb_input(b, "x");
	mb_node(b, "Add", "x,w", "y");
	mb_output(b, "y");
	mb_pack(b, &(size_t){ 0 });
	t = ((Onnx__ModelProto *)(void *)b)->graph->initializer[0];
	t->data_type = 11;
	cr_assert_null(load(b, 0, &ret, err, sizeof(err)));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "DOUBLE") && strstr(err, "'w'"), "message: %s", err);
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
