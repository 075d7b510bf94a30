/* SPDX-License-Identifier: MIT */
/*
 * test-onnx-threads-tap: the thread contract of tnpu_onnx.h (issue #27) as 4 threads x 2 sim devices x
 * one model, in a plain program that prints TAP.  Plain, not a criterion suite, because this is the
 * program the tsan stage of make check (tests/check-all) runs under ThreadSanitizer, and criterion
 * cannot start under TSan (its sandbox arena: "Could not initialize inheritable arena", Criterion issue
 * #274); meson also runs it in the unit and asan stages.
 *
 * The model (Conv -> host step -> Conv) is loaded once and compiled once per device; threads 0 and 2
 * run the first compiled model, 1 and 3 the second, each on its own input: runs of one compiled model
 * contend for its lock while the two devices run at once.  Each input's reference is computed before
 * the threads start:
 *  - neg: the CPU reference executor (onnx_run without a device: no libaccel, no compiled plan); the
 *    single-threaded compiled run must match it within the model tolerance, and every threaded run
 *    must then equal that run bit for bit;
 *  - floor: B2's graph (a Floor between the convolutions, where per-run values used to live in the
 *    shared model); every threaded run equals the single-threaded compiled run bit for bit (a Floor
 *    turns the device's rounding differences into whole units, so no tolerance applies).
 * A third case shares one plan cache (onnx_plan_cache_*, capacity 2) between two threads on one device:
 * thread 0 runs batches 1 and 2 in turn, thread 1 batches 2 and 3, so each thread's compiles and
 * evictions meet the other's runs; every output equals the single-threaded cached run of its batch.
 * Runs per thread: TNPU_THREADS_ITERS (default 100; TSan runs them 5-15x slower).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"

#define THREADS 4
#define DEVICES 2

static unsigned iters(void)
{
	const char *e = getenv("TNPU_THREADS_ITERS");
	unsigned long v = e ? strtoul(e, NULL, 10) : 0;

	return v ? (unsigned)v : 100;
}

/* The first failure of a case, for its TAP line. */
static char why[512];

static int fail(const char *fmt, ...)
{
	va_list ap;

	if (!why[0]) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* x[1,8,16,16] -> Conv 3x3 pad 1 (+bias) -> host_op -> Conv 3x3 pad 1 -> y */
static struct onnx_model *conv_host_conv(const char *host_op)
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
	mb_node(b, host_op, "c1", "f");
	n = mb_node(b, "Conv", "f,w2", "y");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	if (onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)))
		fail("load: %s", err);
	mb_free(b);
	return m;
}

static int input_batch(struct onnx_tensor *x, uint32_t seed, int64_t batch)
{
	const int64_t xd[4] = { batch, 8, 16, 16 };

	if (onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd))
		return fail("out of memory");
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = 4.0f * mb_frand(&seed);	/* across several integers (Floor) */
	return 0;
}

static int input(struct onnx_tensor *x, uint32_t seed)
{
	return input_batch(x, seed, 1);
}

struct runner {
	struct onnx_compiled *cm;
	const struct onnx_tensor *x, *ref;
	unsigned failed, mismatched;
	char msg[256];
};

static void *run_many(void *arg)
{
	struct runner *r = arg;

	for (unsigned i = 0, n = iters(); i < n; i++) {
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

/* One case: the model with host_op, compiled for two devices, run by four threads. */
static int four_threads_two_devices(const char *host_op, bool cpu_reference)
{
	struct onnx_model *m = conv_host_conv(host_op);
	struct accel_dev *dev[DEVICES] = { NULL };
	struct onnx_compiled *cm[DEVICES] = { NULL };
	struct onnx_tensor x[THREADS] = { 0 }, cpu[THREADS] = { 0 }, ref[THREADS] = { 0 };
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 0 };
	struct onnx_compiled_info ci;
	struct runner r[THREADS];
	pthread_t t[THREADS];
	unsigned started = 0;
	char err[512] = "";
	int ret = -1;

	if (!m)
		return -1;
	for (unsigned i = 0; i < THREADS; i++) {
		if (input(&x[i], 21 + i))
			goto out;
		if (cpu_reference && onnx_run(m, NULL, &x[i], 1, &cpu[i], 1, NULL)) {
			fail("CPU reference: %s", onnx_model_error(m));
			goto out;
		}
	}
	for (unsigned d = 0; d < DEVICES; d++) {
		/* without VEC math: Sign and Floor stay host steps (device, host, device) */
		if (accel_open("sim:vecmath=off", &dev[d])) {
			fail("accel_open(sim:vecmath=off) failed");
			goto out;
		}
		if (onnx_compile(m, dev[d], &x[d], 1, 0, &cm[d], err, sizeof(err))) {
			fail("compile for device %u: %s", d, err);
			goto out;
		}
	}
	if (onnx_compiled_info(cm[0], &ci) || ci.host_steps != 1 || ci.device_steps != 2) {
		fail("the plan is not device, host, device (%u device steps, %u host)", ci.device_steps, ci.host_steps);
		goto out;
	}
	for (unsigned i = 0; i < THREADS; i++) {
		struct onnx_compiled *c = cm[i % DEVICES];
		char msg[256] = "";
		double maxe;

		if (onnx_compiled_run(c, &x[i], 1, &ref[i], 1, NULL)) {
			fail("single-threaded run %u: %s", i, onnx_compiled_error(c));
			goto out;
		}
		if (cpu_reference && onnx_compare_scaled(&ref[i], &cpu[i], &tol, &maxe, msg, sizeof(msg))) {
			fail("input %u: the compiled run against the CPU reference: %s", i, msg);
			goto out;
		}
		r[i] = (struct runner){ .cm = c, .x = &x[i], .ref = &ref[i] };
	}
	for (; started < THREADS; started++)
		if (pthread_create(&t[started], NULL, run_many, &r[started])) {
			fail("pthread_create failed");
			break;
		}
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (started < THREADS)
		goto out;
	ret = 0;
	for (unsigned i = 0; i < THREADS; i++)
		if (r[i].failed || r[i].mismatched)
			ret = fail("thread %u: %u of %u runs failed, %u outputs differ; first: %s", i, r[i].failed,
				   iters(), r[i].mismatched, r[i].msg);
out:
	for (unsigned d = 0; d < DEVICES; d++) {
		onnx_compiled_free(cm[d]);
		accel_close(dev[d]);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		onnx_tensor_release(&x[i]);
		onnx_tensor_release(&cpu[i]);
		onnx_tensor_release(&ref[i]);
	}
	onnx_model_free(m);
	return ret;
}

struct pc_runner {
	struct onnx_plan_cache *pc;
	const struct onnx_tensor *x[2], *ref[2];	/* the thread's two batches, in turn */
	unsigned failed, mismatched;
	char msg[300];
};

static void *pc_run_many(void *arg)
{
	struct pc_runner *r = arg;

	for (unsigned i = 0, n = iters(); i < n; i++) {
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

/* Two threads, one plan cache of 2 plans, three batches: lookups, compiles and evictions under the lock. */
static int two_threads_one_plan_cache(void)
{
	struct onnx_model *m = conv_host_conv("Neg");
	struct onnx_tensor x[3] = { 0 }, ref[3] = { 0 };
	struct onnx_plan_cache *pc = NULL;
	struct onnx_plan_cache_stats st;
	struct accel_dev *dev = NULL;
	struct pc_runner r[2];
	pthread_t t[2];
	unsigned started = 0;
	char err[512] = "";
	int ret = -1;

	if (!m)
		return -1;
	if (accel_open("sim", &dev)) {
		fail("accel_open(sim) failed");
		goto out;
	}
	if (onnx_plan_cache_new(m, dev, 0, 2, &pc, err, sizeof(err))) {
		fail("onnx_plan_cache_new: %s", err);
		goto out;
	}
	for (unsigned b = 0; b < 3; b++)
		if (input_batch(&x[b], 41 + b, b + 1) || onnx_plan_cache_run(pc, &x[b], 1, &ref[b], 1, NULL)) {
			fail("single-threaded run of batch %u: %s", b + 1, onnx_plan_cache_error(pc));
			goto out;
		}
	for (; started < 2; started++) {
		r[started] = (struct pc_runner){ .pc = pc, .x = { &x[started], &x[started + 1] },
						 .ref = { &ref[started], &ref[started + 1] } };
		if (pthread_create(&t[started], NULL, pc_run_many, &r[started])) {
			fail("pthread_create failed");
			break;
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (started < 2)
		goto out;
	ret = 0;
	for (unsigned i = 0; i < 2; i++)
		if (r[i].failed || r[i].mismatched)
			ret = fail("thread %u: %u of %u runs failed, %u outputs differ; first: %s", i, r[i].failed,
				   iters(), r[i].mismatched, r[i].msg);
	if (!ret && (onnx_plan_cache_stats(pc, &st) || st.runs != 3 + 2ull * iters() ||
		     st.hits + st.compiles != st.runs || st.plans != 2 || st.evictions < 2))
		ret = fail("counters: %llu runs, %llu hits, %llu compiles, %llu evictions, %u plans",
			   (unsigned long long)st.runs, (unsigned long long)st.hits, (unsigned long long)st.compiles,
			   (unsigned long long)st.evictions, st.plans);
out:
	onnx_plan_cache_free(pc);
	accel_close(dev);
	for (unsigned b = 0; b < 3; b++) {
		onnx_tensor_release(&x[b]);
		onnx_tensor_release(&ref[b]);
	}
	onnx_model_free(m);
	return ret;
}

int main(void)
{
	static const struct {
		const char *name, *host_op;
		bool cpu_reference;
	} cases[] = {
		{ "four_threads_two_devices_one_model_match_the_cpu_reference", "Sign", true },
		{ "four_threads_two_devices_b2_graph_bit_exact_with_a_single_threaded_run", "Floor", false },
	};
	unsigned n = sizeof(cases) / sizeof(cases[0]), failed = 0;

	printf("TAP version 13\n1..%u\n", n + 1);
	for (unsigned i = 0; i < n; i++) {
		why[0] = 0;
		if (four_threads_two_devices(cases[i].host_op, cases[i].cpu_reference)) {
			printf("not ok %u - %s # %s\n", i + 1, cases[i].name, why);
			failed++;
		} else {
			printf("ok %u - %s\n", i + 1, cases[i].name);
		}
		fflush(stdout);
	}
	why[0] = 0;
	if (two_threads_one_plan_cache()) {
		printf("not ok %u - two_threads_one_plan_cache_with_evictions # %s\n", n + 1, why);
		failed++;
	} else {
		printf("ok %u - two_threads_one_plan_cache_with_evictions\n", n + 1);
	}
	return failed ? 1 : 0;
}
