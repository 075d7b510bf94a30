/* SPDX-License-Identifier: MIT */
/*
 * One device copy of a model's weights for all its compiled forms (onnx/src/passes/weight_share.c): two input
 * shapes of one model share the weight buffer, the shape-dependent known values stay each form's own,
 * every form computes the CPU reference's result, freeing one leaves the other working, and another
 * model or another device gets its own buffer.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"

static struct accel_dev *dev, *dev2;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_eq(accel_open("sim", &dev2), 0);
	rng = 5;
}

static void teardown(void)
{
	accel_close(dev2);
	accel_close(dev);
}

TestSuite(onnx_weight_share, .init = setup, .fini = teardown);

/* x[N, 16] -> MatMul(w[16, 24]) -> Reshape(to [N, 4, 6] from Shape(x): a known value) -> Relu. */
static struct onnx_model *model(uint32_t seed)
{
	static const int64_t wd[2] = { 16, 24 }, tail[2] = { 4, 6 }, td[1] = { 2 }, one[1] = { 1 };
	static const int64_t st[1] = { 0 }, en[1] = { 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	char err[512] = "";
	const uint8_t *buf;
	uint32_t r = seed;
	size_t len;

	mb_init_rand(b, "w", 2, wd, &r);
	mb_init(b, "tail", ONNX_INT64, 1, td, tail);
	mb_init(b, "st", ONNX_INT64, 1, one, st);
	mb_init(b, "en", ONNX_INT64, 1, one, en);
	mb_input(b, "x");
	mb_node(b, "MatMul", "x,w", "h");
	mb_node(b, "Shape", "x", "s");
	mb_node(b, "Slice", "s,st,en", "n");
	mb_attr_i(b, mb_node(b, "Concat", "n,tail", "shape"), "axis", 0);
	mb_node(b, "Reshape", "h,shape", "hr");
	mb_node(b, "Relu", "hr", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static struct onnx_compiled *compile(struct onnx_model *m, struct accel_dev *d, int64_t n, struct onnx_tensor *x)
{
	const int64_t xd[2] = { n, 16 };
	struct onnx_compiled *cm = NULL;
	char err[512] = "";

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 2, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = mb_frand(&rng);
	cr_assert_eq(onnx_compile(m, d, x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	return cm;
}

static void check(struct onnx_compiled *cm, const struct onnx_tensor *x)
{
	struct onnx_tensor y, ref;

	cr_assert_eq(onnx_run(cm->m, NULL, x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compiled_run(cm, x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(y.count, ref.count);
	cr_assert_eq(y.ndim, 3);
	for (size_t i = 0; i < y.count; i++)
		cr_assert(fabsf(((float *)y.data)[i] - ((float *)ref.data)[i]) <= 1e-5f, "y[%zu]", i);
	onnx_tensor_release(&y);
	onnx_tensor_release(&ref);
}

Test(onnx_weight_share, shapes_of_one_model_share_the_weights_not_the_known_values)
{
	struct onnx_model *m = model(1), *other = model(2);
	struct onnx_tensor x3, x5, xo, xd;
	struct onnx_compiled *a = compile(m, dev, 3, &x3), *b = compile(m, dev, 5, &x5);
	struct onnx_compiled *c = compile(other, dev, 3, &xo), *d = compile(m, dev2, 3, &xd);

	cr_assert_eq(a->wbuf, b->wbuf, "two shapes of one model: one weight buffer");
	cr_assert_eq(a->wprefix, b->wprefix);
	cr_assert_gt(a->wprefix, 0);
	cr_assert(a->wtail && b->wtail && a->wtail != b->wtail, "the shape-dependent values are each form's own");
	cr_assert_neq(c->wbuf, a->wbuf, "another model's weights: another buffer");
	cr_assert_neq(d->wbuf, a->wbuf, "another device: another buffer");
	check(a, &x3);
	check(b, &x5);
	check(c, &xo);
	check(d, &xd);
	onnx_compiled_free(a);	/* b keeps the shared buffer */
	check(b, &x5);
	check(b, &x5);
	onnx_compiled_free(b);
	onnx_compiled_free(c);
	onnx_compiled_free(d);
	onnx_tensor_release(&x3);
	onnx_tensor_release(&x5);
	onnx_tensor_release(&xo);
	onnx_tensor_release(&xd);
	onnx_model_free(other);
	onnx_model_free(m);
}
