/* SPDX-License-Identifier: MIT */
/*
 * accel-run - run an ONNX model on a tnpu (issue #10, Documentation/onnx.md).
 *
 *   accel-run MODEL.onnx [--input in.pb ...] [--expect out.pb ...] [--device PATH|sim]
 *             [--cpu] [--atol A] [--rtol R] [--itol N] [--save-outputs PREFIX] [--repeat N]
 *   accel-run MODEL.onnx --mnist IMAGES LABELS [--batch N] [--device PATH|sim] [--cpu]
 *             [--save-predictions FILE] [--reference-predictions FILE]
 *
 * Prints each output (name, type, shape, leading values) or, with --expect, PASS/FAIL per output
 * against the expectation with the tolerance used.  --mnist classifies an idx image file (e.g.
 * Fashion-MNIST's t10k set) on the device and on the CPU reference and prints both accuracies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"
#include "cli.h"
#include "tnpu_onnx.h"

#define MAX_IO 16

static void usage(FILE *f)
{
	fprintf(f, "usage: accel-run MODEL.onnx [--input in.pb ...] [--expect out.pb ...] [--device PATH|sim]\n"
		   "                 [--cpu] [--atol A] [--rtol R] [--itol N] [--save-outputs PREFIX] [--repeat N]\n"
		   "       accel-run MODEL.onnx --mnist IMAGES LABELS [--batch N] [--device PATH|sim] [--cpu]\n"
		   "                 [--save-predictions FILE] [--reference-predictions FILE]\n"
		   "       accel-run --help | --version\n"
		   "Without --input, prints the model's inputs (name, type, shape) and exits 2.\n"
		   "Exit status: 0 ran (and every --expect matched), 1 a mismatch or an error, 2 usage error.\n"
		   "Reference: Documentation/tools.md.\n");
}

#define PROG "accel-run"

/* --atol/--rtol: a finite, non-negative number. */
static int parse_tol(const char *opt, const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (!*v || *end || !(d >= 0) || d > 1e30)
		return cli_usage_error(PROG, "%s: '%s' is not a non-negative number", opt, v);
	*out = d;
	return 0;
}


static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_values(const struct onnx_tensor *t)
{
	size_t n = t->count < 16 ? t->count : 16;

	printf("  [");
	for (size_t i = 0; i < n; i++) {
		switch (t->dtype) {
		case ONNX_FLOAT:
			printf("%s%.6g", i ? ", " : "", ((const float *)t->data)[i]);
			break;
		case ONNX_UINT8:
			printf("%s%u", i ? ", " : "", ((const uint8_t *)t->data)[i]);
			break;
		case ONNX_INT8:
			printf("%s%d", i ? ", " : "", ((const int8_t *)t->data)[i]);
			break;
		case ONNX_INT32:
			printf("%s%d", i ? ", " : "", ((const int32_t *)t->data)[i]);
			break;
		case ONNX_INT64:
			printf("%s%lld", i ? ", " : "", (long long)((const int64_t *)t->data)[i]);
			break;
		}
	}
	printf("%s]\n", t->count > n ? ", ..." : "");
}

int main(int argc, char **argv)
{
	const char *model_path = NULL, *device = NULL, *in_paths[MAX_IO], *exp_paths[MAX_IO], *save = NULL;
	const char *mnist_img = NULL, *mnist_lbl = NULL, *ref_preds = NULL, *save_preds = NULL;
	struct onnx_tolerance tol = { ONNX_TOL_ATOL, ONNX_TOL_RTOL, ONNX_TOL_ITOL };
	struct onnx_tensor in[MAX_IO], out[MAX_IO], exp;
	unsigned n_in = 0, n_exp = 0, n_out, batch = 1000;	/* --batch: images per run (documented default) */
	unsigned repeat = 1;	/* --repeat: timed inferences on the same inputs (benchmarks) */
	double *ms = NULL, *cpu_ms = NULL;
	bool batch_set = false;
	struct accel_dev *dev = NULL;
	struct onnx_model *m = NULL;
	struct onnx_run_stats st;
	bool cpu = false;
	char err[768];
	int ret, fails = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		uint32_t u;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version"))
			return cli_version(PROG);
		if (!strcmp(a, "--cpu")) {
			cpu = true;
			continue;
		}
		if (a[0] != '-') {
			if (model_path)
				return cli_usage_error(PROG, "'%s': only one model (already '%s')", a, model_path);
			model_path = a;
			continue;
		}
		if (!strcmp(a, "--mnist")) {
			if (i + 2 >= argc)
				return cli_usage_error(PROG, "--mnist: needs two values, IMAGES and LABELS");
			mnist_img = argv[++i];
			mnist_lbl = argv[++i];
			continue;
		}
		if (strcmp(a, "--input") && strcmp(a, "--expect") && strcmp(a, "--device") && strcmp(a, "--atol") &&
		    strcmp(a, "--rtol") && strcmp(a, "--itol") && strcmp(a, "--save-outputs") &&
		    strcmp(a, "--reference-predictions") && strcmp(a, "--save-predictions") && strcmp(a, "--batch") &&
		    strcmp(a, "--repeat"))
			return cli_usage_error(PROG, "%s: unknown option", a);
		if (!more)
			return cli_usage_error(PROG, "%s: needs a value", a);
		const char *v = argv[++i];

		if (!strcmp(a, "--input")) {
			if (n_in == MAX_IO)
				return cli_usage_error(PROG, "--input: at most %d", MAX_IO);
			in_paths[n_in++] = v;
		} else if (!strcmp(a, "--expect")) {
			if (n_exp == MAX_IO)
				return cli_usage_error(PROG, "--expect: at most %d", MAX_IO);
			exp_paths[n_exp++] = v;
		} else if (!strcmp(a, "--device")) {
			device = v;
		} else if (!strcmp(a, "--atol")) {
			if ((ret = parse_tol(a, v, &tol.atol)))
				return ret;
		} else if (!strcmp(a, "--rtol")) {
			if ((ret = parse_tol(a, v, &tol.rtol)))
				return ret;
		} else if (!strcmp(a, "--itol")) {
			if ((ret = cli_u32(PROG, a, v, 0, 1u << 31, &u)))
				return ret;
			tol.itol = u;
		} else if (!strcmp(a, "--save-outputs")) {
			save = v;
		} else if (!strcmp(a, "--reference-predictions")) {
			ref_preds = v;
		} else if (!strcmp(a, "--save-predictions")) {
			save_preds = v;
		} else if (!strcmp(a, "--repeat")) {
			if ((ret = cli_u32(PROG, a, v, 1, 100000, &u)))
				return ret;
			repeat = u;
		} else {	/* --batch */
			if ((ret = cli_u32(PROG, a, v, 1, 1000000, &u)))
				return ret;
			batch = u;
			batch_set = true;
		}
	}
	if (!model_path)
		return cli_usage_error(PROG, "missing MODEL.onnx");
	if (batch_set && !mnist_img)
		return cli_usage_error(PROG, "--batch: only with --mnist");
	if (mnist_img && (n_in || n_exp))
		return cli_usage_error(PROG, "--mnist: not together with --input/--expect");
	ret = onnx_model_load(model_path, 0, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "accel-run: %s\n", err);
		return 1;
	}
	if (!cpu) {
		ret = accel_open_msg(device, err, sizeof(err), &dev);
		if (ret) {
			fprintf(stderr, "accel-run: cannot open device '%s': %s (%s)\n", device ? device : "(default)",
				err, accel_strerror(ret));
			onnx_model_free(m);
			return 1;
		}
	}
	if (mnist_img) {
		ret = classify_mnist(m, model_path, dev, mnist_img, mnist_lbl, batch, ref_preds, save_preds);
		accel_close(dev);
		onnx_model_free(m);
		return ret ? 1 : 0;
	}
	if (n_in != onnx_model_n_inputs(m)) {
		/* Name what is needed: one --input per graph input, in this order. */
		fprintf(stderr, "accel-run: the model has %u input%s, %u --input given; give one --input FILE.pb "
			"(a serialized TensorProto) for each, in this order:\n", onnx_model_n_inputs(m),
			onnx_model_n_inputs(m) == 1 ? "" : "s", n_in);
		for (unsigned i = 0; i < onnx_model_n_inputs(m); i++) {
			char desc[160];

			onnx_model_input_describe(m, i, desc, sizeof(desc));
			fprintf(stderr, "  --input for '%s': %s\n", onnx_model_input_name(m, i), desc);
		}
		ret = 2;
		goto out;
	}
	n_out = onnx_model_n_outputs(m);
	if (n_exp && n_exp != n_out) {
		fprintf(stderr, "accel-run: the model has %u outputs, %u --expect given\n", n_out, n_exp);
		ret = 2;
		goto out;
	}
	if (n_out > MAX_IO) {
		fprintf(stderr, "accel-run: more than %d outputs\n", MAX_IO);
		ret = 1;
		goto out;
	}
	for (unsigned i = 0; i < n_in; i++) {
		ret = onnx_tensor_load_pb(in_paths[i], &in[i], NULL, 0, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-run: input %u: %s\n", i, err);
			while (i--)
				onnx_tensor_release(&in[i]);
			ret = 1;
			goto out;
		}
	}
	ms = calloc(repeat, sizeof(*ms));
	cpu_ms = calloc(repeat, sizeof(*cpu_ms));
	if (!ms || !cpu_ms) {
		fprintf(stderr, "accel-run: --repeat %u: out of memory\n", repeat);
		ret = 1;
		goto out;
	}
	/* --repeat N: N inferences on the same inputs, each timed (wall clock, model loaded and device
	 * open before the first); the outputs and counters printed are those of the last one. */
	for (unsigned r = 0; r < repeat; r++) {
		double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);

		ret = onnx_run(m, dev, in, n_in, out, n_out, &st);
		ms[r] = now_ms(CLOCK_MONOTONIC) - t0;
		cpu_ms[r] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (ret || r + 1 == repeat)
			break;
		for (unsigned i = 0; i < n_out; i++)
			onnx_tensor_release(&out[i]);
	}
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
	if (ret) {
		fprintf(stderr, "accel-run: %s\n", onnx_model_error(m));
		ret = 1;
		goto out;
	}
	if (cpu)
		printf("model %s: %u nodes (%u BatchNormalization folded), all on the CPU reference executor\n",
		       model_path, onnx_model_n_nodes(m), onnx_model_n_folded(m));
	else
		printf("model %s: %u nodes (%u BatchNormalization folded), %u on the accelerator, %u on the host; "
		       "device cycles %llu\n", model_path, onnx_model_n_nodes(m), onnx_model_n_folded(m), st.accel_nodes,
		       st.host_nodes, (unsigned long long)st.counters.total_cycles);
	if (repeat > 1)	/* CPU: of the whole process, so a loaded machine's waiting is not counted */
		printf("run: %.3f ms per inference (median of %u), CPU %.3f ms\n", median(ms, repeat), repeat,
		       median(cpu_ms, repeat));
	for (unsigned i = 0; i < n_out; i++) {
		char desc[96], msg[256];
		double maxe;

		onnx_tensor_describe(&out[i], desc, sizeof(desc));
		if (save) {
			char path[512];

			snprintf(path, sizeof(path), "%s%u.pb", save, i);
			if (onnx_tensor_save_pb(path, &out[i], onnx_model_output_name(m, i), err, sizeof(err)))
				fprintf(stderr, "accel-run: %s\n", err);
		}
		if (i >= n_exp) {
			printf("output '%s': %s\n", onnx_model_output_name(m, i), desc);
			print_values(&out[i]);
			continue;
		}
		ret = onnx_tensor_load_pb(exp_paths[i], &exp, NULL, 0, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-run: expectation %u: %s\n", i, err);
			fails++;
			continue;
		}
		ret = onnx_compare(&out[i], &exp, &tol, &maxe, msg, sizeof(msg));
		printf("output '%s': %s: %s: %s (tolerance: float |got-exp| <= %g + %g*|exp|, integer <= %lld)\n",
		       onnx_model_output_name(m, i), desc, ret ? "FAIL" : "PASS", msg, tol.atol, tol.rtol,
		       (long long)tol.itol);
		fails += ret != 0;
		onnx_tensor_release(&exp);
	}
	for (unsigned i = 0; i < n_out; i++)
		onnx_tensor_release(&out[i]);
	if (n_exp)
		printf("%s\n", fails ? "FAIL" : "PASS");
	ret = fails ? 1 : 0;
out:
	free(ms);
	free(cpu_ms);
	accel_close(dev);
	onnx_model_free(m);
	return ret;
}
