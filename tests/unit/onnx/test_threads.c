/* SPDX-License-Identifier: MIT */
/*
 * The thread contract of tnpu_onnx.h (issue #27, B2): one loaded model compiled for two sim devices and
 * run from two threads at once, and one compiled model run from two threads, give bit for bit the
 * outputs of single-threaded runs.  The graph has a host step between two device steps (Conv -> Floor
 * -> Conv), the place where per-run values used to live in the shared model (use after free and double
 * free under ASan, a wrong output about once in 600 runs without it).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "builder.h"

#define ITERS 300

/* x[1,8,16,16] -> Conv 3x3 pad 1 (+bias) -> Floor (a host step) -> Conv 3x3 pad 1 -> y */
static struct onnx_model *conv_floor_conv(void)
{
	static const int64_t wd[4] = { 8, 8, 3, 3 }, bd[1] = { 8 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	uint32_t rng = 2027;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_init_rand(b, "w1", 4, wd, &rng);
	mb_init_rand(b, "b1", 1, bd, &rng);
	mb_init_rand(b, "w2", 4, wd, &rng);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w1,b1", "c1");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Floor", "c1", "f");
	n = mb_node(b, "Conv", "f,w2", "y");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static void input(struct onnx_tensor *x, uint32_t seed)
{
	static const int64_t xd[4] = { 1, 8, 16, 16 };

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = 4.0f * mb_frand(&seed);	/* Floor sees values across several integers */
}

/* One thread's runs: criterion's assertions belong to the main thread, so failures are counted here. */
struct runner {
	struct onnx_compiled *cm;
	const struct onnx_tensor *x, *ref;
	unsigned failed, mismatched;
	char msg[256];
};

static void *run_many(void *arg)
{
	struct runner *r = arg;

	for (unsigned i = 0; i < ITERS; i++) {
		struct onnx_tensor y;
		int ret = onnx_compiled_run(r->cm, r->x, 1, &y, 1, NULL);

		if (ret) {
			if (!r->failed++)
				snprintf(r->msg, sizeof(r->msg), "run %u: %d %s", i, ret, onnx_compiled_error(r->cm));
			continue;
		}
		if (y.count != r->ref->count || memcmp(y.data, r->ref->data, y.count * sizeof(float))) {
			if (!r->mismatched++)
				snprintf(r->msg, sizeof(r->msg), "run %u: output differs from the single-threaded one", i);
		}
		onnx_tensor_release(&y);
	}
	return NULL;
}

static void run_threads(struct runner *r, unsigned n)
{
	pthread_t t[2];

	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, run_many, &r[i]), 0);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < n; i++) {
		cr_expect_eq(r[i].failed, 0, "thread %u: %u of %d runs failed; first: %s", i, r[i].failed, ITERS, r[i].msg);
		cr_expect_eq(r[i].mismatched, 0, "thread %u: %u of %d outputs differ; first: %s", i, r[i].mismatched, ITERS,
			     r[i].msg);
	}
}

Test(onnx_threads, model_compiled_for_two_devices_runs_from_two_threads_bit_exact)
{
	struct onnx_model *m = conv_floor_conv();
	struct accel_dev *dev[2] = { NULL, NULL };
	struct onnx_compiled *cm[2] = { NULL, NULL };
	struct onnx_tensor x[2], ref[2];
	struct onnx_compiled_info ci;
	struct runner r[2];
	char err[512] = "";

	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(accel_open("sim:vecmath=off", &dev[i]), 0);	/* Floor a host step: no VEC math */
		input(&x[i], 11 + i);	/* other data per thread: a value crossing between runs shows */
		cr_assert_eq(onnx_compile(m, dev[i], &x[i], 1, 0, &cm[i], err, sizeof(err)), 0, "compile: %s", err);
	}
	cr_assert_eq(onnx_compiled_info(cm[0], &ci), 0);
	cr_assert_eq(ci.host_steps, 1, "Floor is the host step between the two device steps");
	cr_assert_eq(ci.device_steps, 2);
	/* the references: one compiled model at a time, from this thread */
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(onnx_compiled_run(cm[i], &x[i], 1, &ref[i], 1, NULL), 0, "%s", onnx_compiled_error(cm[i]));
		r[i] = (struct runner){ .cm = cm[i], .x = &x[i], .ref = &ref[i] };
	}
	run_threads(r, 2);
	for (unsigned i = 0; i < 2; i++) {
		onnx_compiled_free(cm[i]);
		accel_close(dev[i]);
		onnx_tensor_release(&x[i]);
		onnx_tensor_release(&ref[i]);
	}
	onnx_model_free(m);
}

/* The contract's other half: runs of one compiled model from several threads are serialised, each
 * correct (they share its activation arena and its kept jobs). */
Test(onnx_threads, one_compiled_model_run_from_two_threads_bit_exact)
{
	struct onnx_model *m = conv_floor_conv();
	struct accel_dev *dev = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x[2], ref[2];
	struct runner r[2];
	char err[512] = "";

	cr_assert_eq(accel_open("sim", &dev), 0);
	input(&x[0], 11);
	input(&x[1], 12);
	cr_assert_eq(onnx_compile(m, dev, &x[0], 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(onnx_compiled_run(cm, &x[i], 1, &ref[i], 1, NULL), 0, "%s", onnx_compiled_error(cm));
		r[i] = (struct runner){ .cm = cm, .x = &x[i], .ref = &ref[i] };
	}
	run_threads(r, 2);
	onnx_compiled_free(cm);
	accel_close(dev);
	for (unsigned i = 0; i < 2; i++) {
		onnx_tensor_release(&x[i]);
		onnx_tensor_release(&ref[i]);
	}
	onnx_model_free(m);
}
