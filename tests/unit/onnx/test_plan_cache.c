/* SPDX-License-Identifier: MIT */
/*
 * The plan cache (onnx/src/compile/plan_cache.c, tnpu_onnx.h "plan cache"): a model with a symbolic batch
 * compiles once per input shape, not per call; the least recently used plan goes first; the capacity is
 * bounded and settable; a failed compile is an error naming the compile and is not kept; two threads
 * share one cache (its lock serialises lookup, compile, eviction and run).  Outputs are checked against
 * the CPU reference executor (onnx_run without a device).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

static struct accel_dev *dev;
static struct onnx_model *model;

/* x[N,2,6,6] (N symbolic) -> Conv 3x3 pad 1 (4 channels, bias) -> Relu -> y */
static void setup(void)
{
	static const int64_t xd[4] = { INT64_MIN, 2, 6, 6 }, wd[4] = { 4, 2, 3, 3 }, bd[1] = { 4 },
			     pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	Onnx__NodeProto *n;
	uint32_t rng = 31;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	cr_assert_eq(accel_open("sim", &dev), 0);
	mb_init_rand(b, "w", 4, wd, &rng);
	mb_init_rand(b, "b", 1, bd, &rng);
	mb_input_typed(b, "x", ONNX_FLOAT, 4, xd);
	n = mb_node(b, "Conv", "x,w,b", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &model, err, sizeof(err)), 0, "%s", err);
	mb_free(b);
}

static void teardown(void)
{
	onnx_model_free(model);
	accel_close(dev);
}

TestSuite(plan_cache, .init = setup, .fini = teardown);

static void input(struct onnx_tensor *x, int64_t batch)
{
	int64_t xd[4] = { batch, 2, 6, 6 };
	uint32_t rng = (uint32_t)batch * 7 + 1;

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = mb_frand(&rng);
}

/* One run through the cache, its output against the CPU reference. */
static void run_and_check(struct onnx_plan_cache *pc, int64_t batch)
{
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 0 };
	struct onnx_tensor x, y, ref;
	char msg[256] = "";
	double maxe;

	input(&x, batch);
	cr_assert_eq(onnx_plan_cache_run(pc, &x, 1, &y, 1, NULL), 0, "batch %lld: %s", (long long)batch,
		     onnx_plan_cache_error(pc));
	cr_assert_eq(onnx_run(model, NULL, &x, 1, &ref, 1, NULL), 0, "%s", onnx_model_error(model));
	cr_expect_eq(y.dims[0], batch);
	cr_expect_eq(onnx_compare_scaled(&y, &ref, &tol, &maxe, msg, sizeof(msg)), 0, "batch %lld: %s",
		     (long long)batch, msg);
	onnx_tensor_release(&x);
	onnx_tensor_release(&y);
	onnx_tensor_release(&ref);
}

static struct onnx_plan_cache_stats stats(struct onnx_plan_cache *pc)
{
	struct onnx_plan_cache_stats st;

	cr_assert_eq(onnx_plan_cache_stats(pc, &st), 0);
	return st;
}

Test(plan_cache, symbolic_batch_compiles_once_per_shape_not_per_call)
{
	static const int64_t batches[] = { 1, 2, 1, 2, 2, 3, 1 };
	struct onnx_plan_cache *pc = NULL;
	struct onnx_plan_cache_stats st;
	char err[256] = "";

	cr_assert_eq(onnx_plan_cache_new(model, dev, 0, 0, &pc, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(stats(pc).capacity, ONNX_PLAN_CACHE_DEFAULT);
	for (unsigned i = 0; i < sizeof(batches) / sizeof(batches[0]); i++)
		run_and_check(pc, batches[i]);
	st = stats(pc);
	cr_expect_eq(st.compiles, 3, "batches 1, 2, 3: %llu compiles", (unsigned long long)st.compiles);
	cr_expect_eq(st.hits, 4);
	cr_expect_eq(st.runs, 7);
	cr_expect_eq(st.plans, 3);
	cr_expect_eq(st.evictions, 0);
	onnx_plan_cache_free(pc);
}

Test(plan_cache, least_recently_used_plan_is_evicted_and_capacity_is_settable)
{
	struct onnx_plan_cache *pc = NULL;
	struct onnx_plan_cache_stats st;
	char err[256] = "";

	cr_assert_eq(onnx_plan_cache_new(model, dev, 0, 2, &pc, err, sizeof(err)), 0, "%s", err);
	run_and_check(pc, 1);
	run_and_check(pc, 2);
	run_and_check(pc, 1);	/* 1 is now the most recent: 3 evicts 2 */
	run_and_check(pc, 3);
	st = stats(pc);
	cr_expect_eq(st.compiles, 3);
	cr_expect_eq(st.evictions, 1);
	run_and_check(pc, 1);	/* kept: a hit */
	cr_expect_eq(stats(pc).compiles, 3, "batch 1 was kept");
	run_and_check(pc, 2);	/* evicted: compiled again, evicting 3 */
	st = stats(pc);
	cr_expect_eq(st.compiles, 4);
	cr_expect_eq(st.evictions, 2);
	cr_expect_eq(st.plans, 2);
	/* lowering the capacity evicts the oldest at once (1), keeps the newest (2) */
	cr_assert_eq(onnx_plan_cache_set_capacity(pc, 1), 0, "%s", onnx_plan_cache_error(pc));
	st = stats(pc);
	cr_expect_eq(st.capacity, 1);
	cr_expect_eq(st.plans, 1);
	cr_expect_eq(st.evictions, 3);
	run_and_check(pc, 2);
	cr_expect_eq(stats(pc).compiles, 4, "batch 2 survived the shrink");
	/* out of range */
	cr_expect_eq(onnx_plan_cache_set_capacity(pc, 0), -EINVAL);
	cr_expect(strstr(onnx_plan_cache_error(pc), "capacity 0"), "%s", onnx_plan_cache_error(pc));
	cr_expect_eq(onnx_plan_cache_set_capacity(pc, ONNX_PLAN_CACHE_MAX + 1), -EINVAL);
	cr_expect_eq(stats(pc).capacity, 1);
	cr_assert_eq(onnx_plan_cache_set_capacity(pc, 3), 0);
	run_and_check(pc, 1);
	run_and_check(pc, 3);
	st = stats(pc);
	cr_expect_eq(st.plans, 3);
	cr_expect_eq(st.compiles, 6);
	onnx_plan_cache_free(pc);
}

Test(plan_cache, bad_inputs_and_failed_compiles_are_clear_errors_and_not_kept)
{
	static const int64_t bad[3] = { 1, 2, 6 };
	struct onnx_plan_cache *pc = NULL;
	struct onnx_tensor x, y;
	char err[256] = "";

	cr_expect_eq(onnx_plan_cache_new(model, dev, 0, ONNX_PLAN_CACHE_MAX + 1, &pc, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "capacity"), "%s", err);
	cr_expect_null(pc);
	cr_expect_eq(onnx_plan_cache_new(model, NULL, 0, 0, &pc, err, sizeof(err)), -EINVAL);
	cr_assert_eq(onnx_plan_cache_new(model, dev, 0, 0, &pc, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(onnx_plan_cache_run(pc, NULL, 0, &y, 1, NULL), -EINVAL);
	cr_expect(strstr(onnx_plan_cache_error(pc), "the model has 1 inputs, 0 given"), "%s",
		  onnx_plan_cache_error(pc));
	/* a 3-D input for a 2-D convolution: the compile's error, prefixed, and nothing kept */
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 3, bad), 0);
	cr_expect_lt(onnx_plan_cache_run(pc, &x, 1, &y, 1, NULL), 0);
	cr_expect(!strncmp(onnx_plan_cache_error(pc), "compile: ", 9), "%s", onnx_plan_cache_error(pc));
	cr_expect_eq(stats(pc).plans, 0);
	cr_expect_eq(stats(pc).compiles, 0);
	onnx_tensor_release(&x);
	run_and_check(pc, 2);	/* the cache still works */
	cr_expect_eq(stats(pc).plans, 1);
	onnx_plan_cache_free(pc);
	onnx_plan_cache_free(NULL);
}

/* Two threads share one cache of 2 plans: thread 0 runs batches 1 and 2 in turn, thread 1 batches 2 and
 * 3, so lookups, compiles and evictions of one thread meet the other's runs of the same plans.  Every
 * output must equal, bit for bit, the single-threaded run of its batch (itself checked against the CPU
 * reference), and the counters must add up. */
#define PC_THREADS 2
#define PC_ITERS 200

struct pc_runner {
	struct onnx_plan_cache *pc;
	const struct onnx_tensor *x[2], *ref[2];	/* the thread's two batches */
	unsigned failed, mismatched;
	char msg[300];
};

static void *pc_run_many(void *arg)
{
	struct pc_runner *r = arg;

	for (unsigned i = 0; i < PC_ITERS; i++) {
		const struct onnx_tensor *x = r->x[i % 2], *ref = r->ref[i % 2];
		struct onnx_tensor y;
		int ret = onnx_plan_cache_run(r->pc, x, 1, &y, 1, NULL);

		if (ret) {
			if (!r->failed++)
				snprintf(r->msg, sizeof(r->msg), "run %u: %d %s", i, ret, onnx_plan_cache_error(r->pc));
			continue;
		}
		if (y.count != ref->count || memcmp(y.data, ref->data, y.count * sizeof(float)))
			if (!r->mismatched++)
				snprintf(r->msg, sizeof(r->msg), "run %u (batch %lld): output differs from the "
					 "single-threaded run", i, (long long)x->dims[0]);
		onnx_tensor_release(&y);
	}
	return NULL;
}

Test(plan_cache, two_threads_share_one_cache_with_evictions)
{
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 0 };
	struct onnx_tensor x[3], ref[3], cpu;
	struct onnx_plan_cache *pc = NULL;
	struct onnx_plan_cache_stats st;
	struct pc_runner r[PC_THREADS];
	pthread_t t[PC_THREADS];
	char err[256] = "";

	cr_assert_eq(onnx_plan_cache_new(model, dev, 0, 2, &pc, err, sizeof(err)), 0, "%s", err);
	for (unsigned b = 0; b < 3; b++) {	/* batches 1, 2, 3: single-threaded runs as the references */
		char msg[256] = "";
		double maxe;

		input(&x[b], b + 1);
		cr_assert_eq(onnx_plan_cache_run(pc, &x[b], 1, &ref[b], 1, NULL), 0, "%s", onnx_plan_cache_error(pc));
		cr_assert_eq(onnx_run(model, NULL, &x[b], 1, &cpu, 1, NULL), 0, "%s", onnx_model_error(model));
		cr_assert_eq(onnx_compare_scaled(&ref[b], &cpu, &tol, &maxe, msg, sizeof(msg)), 0, "batch %u: %s",
			     b + 1, msg);
		onnx_tensor_release(&cpu);
	}
	for (unsigned i = 0; i < PC_THREADS; i++) {
		r[i] = (struct pc_runner){ .pc = pc, .x = { &x[i], &x[i + 1] }, .ref = { &ref[i], &ref[i + 1] } };
		cr_assert_eq(pthread_create(&t[i], NULL, pc_run_many, &r[i]), 0);
	}
	for (unsigned i = 0; i < PC_THREADS; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < PC_THREADS; i++)
		cr_expect(!r[i].failed && !r[i].mismatched, "thread %u: %u of %u runs failed, %u outputs differ; "
			  "first: %s", i, r[i].failed, PC_ITERS, r[i].mismatched, r[i].msg);
	st = stats(pc);
	cr_expect_eq(st.runs, 3 + PC_THREADS * PC_ITERS);
	cr_expect_eq(st.hits + st.compiles, st.runs, "%llu hits + %llu compiles", (unsigned long long)st.hits,
		     (unsigned long long)st.compiles);
	cr_expect_eq(st.compiles - st.evictions, st.plans);
	cr_expect_eq(st.plans, 2);
	cr_expect_geq(st.evictions, 2, "batch 3 evicted 1 before the threads, thread 0's batch 1 evicts again");
	onnx_plan_cache_free(pc);
	for (unsigned b = 0; b < 3; b++) {
		onnx_tensor_release(&x[b]);
		onnx_tensor_release(&ref[b]);
	}
}

/*
 * onnx_plan_cache_compile: a plan compiled ahead of the first run (no run counted), which the run then
 * finds (a hit, no second compile); the borrowed plan saves to a compiled-model file that opens without
 * the ONNX file and runs at its shapes; a wrong input count is refused.
 */
Test(plan_cache, compile_ahead_of_the_first_run_and_save_the_plan)
{
	struct onnx_plan_cache *pc = NULL;
	const struct onnx_compiled *cm = NULL;
	struct onnx_compiled *opened = NULL;
	struct onnx_plan_cache_stats st;
	struct onnx_tensor x, y1, y2;
	char err[512] = "", path[] = "/tmp/tnpu-pc-save-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(onnx_plan_cache_new(model, dev, 0, 0, &pc, err, sizeof(err)), 0, "%s", err);
	input(&x, 3);
	cr_assert_eq(onnx_plan_cache_compile(pc, &x, 1, &cm), 0, "%s", onnx_plan_cache_error(pc));
	cr_assert_not_null(cm);
	st = stats(pc);
	cr_expect_eq(st.compiles, 1);
	cr_expect_eq(st.runs, 0);
	cr_expect_eq(onnx_plan_cache_compile(pc, &x, 0, NULL), -EINVAL);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	run_and_check(pc, 3);
	st = stats(pc);
	cr_expect_eq(st.compiles, 1);
	cr_expect_eq(st.hits, 1);
	cr_assert_eq(onnx_compiled_open(dev, path, &opened, err, sizeof(err)), 0, "%s", err);
	unlink(path);
	cr_assert_eq(onnx_plan_cache_run(pc, &x, 1, &y1, 1, NULL), 0, "%s", onnx_plan_cache_error(pc));
	cr_assert_eq(onnx_compiled_run(opened, &x, 1, &y2, 1, NULL), 0, "%s", onnx_compiled_error(opened));
	cr_assert_eq(y1.count, y2.count);
	cr_expect_eq(memcmp(y1.data, y2.data, y1.count * 4), 0, "the opened file's outputs differ");
	onnx_tensor_release(&y1);
	onnx_tensor_release(&y2);
	onnx_tensor_release(&x);
	onnx_compiled_free(opened);
	onnx_plan_cache_free(pc);
}
