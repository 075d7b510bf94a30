/* SPDX-License-Identifier: MIT */
/*
 * accel-bench model MODEL.onnx [--dtype fp32|int8] [--device PATH|sim] [--repeat N] [--seed S] [--nchw] [--no-pwdw]
 *                   [--json]
 * (issue 16 targets): the model compiled once (onnx_compile) on seeded random inputs of its declared
 * shapes (dynamic dimensions 1), one checked run against the CPU reference executor (the project's
 * model tolerance, onnx_compare_scaled), then N timed runs.  Prints wall ms per inference (median), device cycles of one
 * run, whole-model PE utilisation = device MACs / (cycles x peak MACs per cycle of --dtype, default
 * fp32), host nodes, host<->device bytes the executor copied, and verified.  Exit 0 only when verified.
 * --nchw compiles without the layout pass (ONNX_COMPILE_NCHW: every activation NCHW, the plan before it);
 * --no-pwdw without the expansion + depthwise fusion (ONNX_COMPILE_NO_PWDW: the two conv steps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "subcommands.h"
#include "tnpu_onnx.h"

#define MAX_IO 16

int bench_model_main(int argc, char **argv);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* splitmix64: the inputs' values */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int make_inputs(struct onnx_model *m, uint64_t seed, struct onnx_tensor *in, unsigned *n)
{
	*n = onnx_model_n_inputs(m);
	if (*n > MAX_IO) {
		fprintf(stderr, "accel-bench model: more than %d inputs\n", MAX_IO);
		return 1;
	}
	for (unsigned i = 0; i < *n; i++) {
		struct onnx_value_desc d;
		int64_t dims[ONNX_MAX_DIMS];
		uint64_t s = seed ^ (0x1000193ull * (i + 1));

		if (onnx_model_input_desc(m, i, &d) || d.ndim < 0 ||
		    (d.dtype != ONNX_FLOAT && d.dtype != ONNX_UINT8 && d.dtype != ONNX_INT8)) {
			fprintf(stderr, "accel-bench model: input %u: needs a declared FLOAT/UINT8/INT8 shape\n", i);
			return 1;
		}
		for (int k = 0; k < d.ndim; k++)
			dims[k] = d.dims[k] < 0 ? 1 : d.dims[k];
		if (onnx_tensor_alloc(&in[i], (enum onnx_dtype)d.dtype, (unsigned)d.ndim, dims)) {
			fprintf(stderr, "accel-bench model: input '%s': cannot allocate\n", d.name);
			return 1;
		}
		for (size_t e = 0; e < in[i].count; e++) {
			uint64_t r = mix(&s);

			if (d.dtype == ONNX_FLOAT)
				((float *)in[i].data)[e] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
			else
				((uint8_t *)in[i].data)[e] = (uint8_t)r;
		}
	}
	return 0;
}

int bench_model_main(int argc, char **argv)
{
	const char *path = NULL, *device = "sim";
	unsigned repeat = 5, n_in = 0, n_out;
	bool json = false, int8 = false, ok = true, nchw = false, no_pwdw = false;
	uint64_t seed = 0;
	struct onnx_tensor in[MAX_IO], out[MAX_IO], ref[MAX_IO];
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 1 };
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_info ci;
	struct onnx_run_stats st;
	struct onnx_model *m = NULL;
	struct accel_dev *dev = NULL;
	struct accel_caps caps;
	double *t = NULL, med, peak, util;
	char err[600];
	int ret = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--nchw"))
			nchw = true;
		else if (!strcmp(argv[i], "--no-pwdw"))
			no_pwdw = true;
		else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			int8 = !strcmp(argv[++i], "int8");
			if (!int8 && strcmp(argv[i], "fp32")) {
				fprintf(stderr, "accel-bench model: --dtype fp32|int8\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = argv[++i];
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			fprintf(stderr, "usage: accel-bench model MODEL.onnx [--dtype fp32|int8] [--device PATH|sim] "
					"[--repeat N] [--seed S] [--nchw] [--no-pwdw] [--json]\n");
			return 2;
		}
	}
	if (!path || !repeat || repeat > 100000) {
		fprintf(stderr, "accel-bench model: a model path and --repeat 1..100000 are needed\n");
		return 2;
	}
	if (onnx_model_load(path, 0, &m, err, sizeof(err))) {
		fprintf(stderr, "accel-bench model: %s\n", err);
		return 1;
	}
	if (accel_open_msg(device, err, sizeof(err), &dev) || accel_query_caps(dev, &caps)) {
		fprintf(stderr, "accel-bench model: cannot open device '%s': %s\n", device, err);
		goto out_model;
	}
	n_out = onnx_model_n_outputs(m);
	if (n_out > MAX_IO || make_inputs(m, seed, in, &n_in))
		goto out_dev;
	if (onnx_compile(m, dev, in, n_in, (nchw ? ONNX_COMPILE_NCHW : 0) | (no_pwdw ? ONNX_COMPILE_NO_PWDW : 0), &cm, err,
			 sizeof(err))) {
		fprintf(stderr, "accel-bench model: compile: %s\n", err);
		goto out_in;
	}
	onnx_compiled_info(cm, &ci);
	/* one checked run */
	if (onnx_compiled_run(cm, in, n_in, out, n_out, &st) || onnx_run(m, NULL, in, n_in, ref, n_out, NULL)) {
		fprintf(stderr, "accel-bench model: %s %s\n", onnx_compiled_error(cm), onnx_model_error(m));
		goto out_cm;
	}
	for (unsigned i = 0; i < n_out; i++) {
		char msg[256];
		double maxe;

		ok &= onnx_compare_scaled(&out[i], &ref[i], &tol, &maxe, msg, sizeof(msg)) == 0;
		onnx_tensor_release(&out[i]);
		onnx_tensor_release(&ref[i]);
	}
	t = calloc(repeat, sizeof(*t));
	for (unsigned r = 0; t && r < repeat; r++) {
		struct onnx_run_stats s2;
		double t0 = now_ms();

		if (onnx_compiled_run(cm, in, n_in, out, n_out, &s2)) {
			fprintf(stderr, "accel-bench model: %s\n", onnx_compiled_error(cm));
			goto out_cm;
		}
		t[r] = now_ms() - t0;
		for (unsigned i = 0; i < n_out; i++)
			onnx_tensor_release(&out[i]);
	}
	if (!t)
		goto out_cm;
	qsort(t, repeat, sizeof(*t), cmp_double);
	med = repeat % 2 ? t[repeat / 2] : (t[repeat / 2 - 1] + t[repeat / 2]) / 2;
	peak = (double)caps.rows * caps.cols * caps.pes * (int8 ? caps.rate_int8 : caps.rate_fp32);
	util = st.counters.total_cycles ? (double)st.counters.macs_dense / (peak * st.counters.total_cycles) : 0.0;
	if (json)
		printf("{\"model\":\"%s\",\"dtype\":\"%s\",\"wall_ms\":%.3f,\"repeat\":%u,\"device_cycles\":%llu,"
		       "\"device_macs\":%llu,\"peak_macs_per_cycle\":%.0f,\"pe_utilisation\":%.4f,\"device_jobs\":%u,"
		       "\"host_nodes\":%u,\"host_device_bytes\":%llu,\"peak_device_bytes\":%llu,"
		       "\"lower_bound_bytes\":%llu,\"verified\":%s}\n",
		       path, int8 ? "int8" : "fp32", med, repeat, (unsigned long long)st.counters.total_cycles,
		       (unsigned long long)st.counters.macs_dense, peak, util, ci.jobs_per_run, st.host_nodes,
		       (unsigned long long)st.copy_bytes, (unsigned long long)ci.peak_bytes,
		       (unsigned long long)ci.lower_bound, ok ? "true" : "false");
	else
		printf("%s: %.3f ms per inference (median of %u), %llu device cycles, PE utilisation %.3f "
		       "(%llu MACs, peak %.0f %s MACs/cycle), %u device jobs, %u host nodes, %llu host<->device "
		       "bytes, %s\n",
		       path, med, repeat, (unsigned long long)st.counters.total_cycles, util,
		       (unsigned long long)st.counters.macs_dense, peak, int8 ? "int8" : "fp32", ci.jobs_per_run,
		       st.host_nodes, (unsigned long long)st.copy_bytes, ok ? "verified" : "MISMATCH");
	ret = ok ? 0 : 1;
out_cm:
	free(t);
	onnx_compiled_free(cm);
out_in:
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
out_dev:
	accel_close(dev);
out_model:
	onnx_model_free(m);
	return ret;
}
