/* SPDX-License-Identifier: MIT */
/*
 * accel-run - run an ONNX model on a tnpu (issues #10, #15; Documentation/onnx.md).
 *
 *   accel-run MODEL.onnx [--input in.pb ... | --random-input [--seed N] [--shape NAME=D0xD1x... ...]]
 *             [--expect out.pb ...] [--device PATH|sim] [--cpu] [--atol A] [--rtol R] [--itol N] [--elementwise]
 *             [--save-outputs PREFIX] [--info] [--repeat N [--latencies] [--interval MS]]
 *             [--profile [--trace FILE]]
 *             [--no-compile | --no-replay] [--save-compiled FILE] [--compiled FILE] [--placement json]
 *   accel-run --compiled FILE [--check | --input in.pb ... | --random-input [--seed N]] [--expect out.pb ...]
 *             [--device PATH|sim] [--info] [--repeat N] [--save-outputs PREFIX] ...
 *   accel-run MODEL.onnx --mnist IMAGES LABELS [--batch N] [--device PATH|sim] [--cpu] [--no-compile | --no-replay]
 *             [--save-predictions FILE] [--reference-predictions FILE]
 *
 * Prints each output (name, type, shape, leading values) or, with --expect, PASS/FAIL per output
 * against the expectation with the tolerance used: |got - exp| <= atol + rtol * max|exp| (the output's
 * scale; onnx_compare_scaled, defaults ONNX_MODEL_ATOL/RTOL), or with --elementwise the ONNX backend
 * tests' per-element rule atol + rtol * |exp| (onnx_compare, defaults ONNX_TOL_ATOL/RTOL).  --info
 * prints the inputs/outputs and where each node runs: alone, from the compiled plan without running
 * anything (no device job); with --no-compile, or with an option that needs outputs, from one run.
 * --placement json writes every node's placement, reason and jobs as JSON.  --repeat N times N more runs
 * (--latencies prints each one's time, --interval sleeps between them: tools/bench-tenancy's clients),
 * --profile prints per-node cost and writes a Perfetto trace.  --mnist classifies an idx image file (e.g. Fashion-MNIST's t10k set) on the device
 * and on the CPU reference and prints both accuracies.  On a device the model is compiled once for the
 * inputs' shapes (onnx_compile) and every run uses the compiled form; --no-compile runs node by node
 * (as --profile does), --no-replay lowers every run's device steps again (ONNX_COMPILE_NO_REPLAY),
 * --save-compiled/--compiled write/read the compiled form (onnx.md, "The compiler"); --compiled without
 * MODEL runs the file alone (the model it carries, its input shapes: onnx_compiled_open), --check only
 * opens it on the device and says whether it is compatible.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "classify.h"
#include "cli.h"
#include "compiled.h"
#include "inputs.h"
#include "placement.h"
#include "profile.h"
#include "tnpu_onnx.h"

#define MAX_IO 256	/* a decoder: 2 x layers + 3 inputs */

static void usage(FILE *f)
{
	fprintf(f, "usage: accel-run MODEL.onnx [--input in.pb ... | --random-input [--seed N] [--shape NAME=D0xD1x...]]\n"
		   "                 [--expect out.pb ...] [--device PATH|sim] [--cpu] [--atol A] [--rtol R] [--itol N]\n"
		   "                 [--elementwise]\n"
		   "                 [--save-outputs PREFIX] [--info] [--repeat N [--latencies] [--interval MS]]\n"
		   "                 [--profile [--trace FILE]]\n"
		   "                 [--no-compile | --no-replay] [--save-compiled FILE] [--compiled FILE]\n"
		   "                 [--placement json]\n"
		   "       accel-run --compiled FILE [--check | --input in.pb ... | --random-input [--seed N]]\n"
		   "                 [--expect out.pb ...] [--device PATH|sim] [--info] [--repeat N] [--save-outputs PREFIX]\n"
		   "                 (the model and its input shapes from the compiled file; --check: only open it)\n"
		   "       accel-run MODEL.onnx --mnist IMAGES LABELS [--batch N] [--device PATH|sim] [--cpu]\n"
		   "                 [--no-compile | --no-replay]\n"
		   "                 [--save-predictions FILE] [--reference-predictions FILE]\n"
		   "       accel-run --help | --version\n"
		   "Without --input or --random-input, prints the model's inputs (name, type, shape) and exits 2.\n"
		   "--info prints the inputs, outputs and where each node runs; alone (no --expect, --random-input,\n"
		   "--repeat, --profile or --save-outputs) it plans without running anything: the compiled plan's\n"
		   "placement (libaccel's accel_op_supported), no device job (--no-compile: from one run).\n"
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
		case ONNX_BOOL:
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
		case ONNX_UINT64:
			printf("%s%llu", i ? ", " : "", (unsigned long long)((const uint64_t *)t->data)[i]);
			break;
		case ONNX_INT16:
			printf("%s%d", i ? ", " : "", ((const int16_t *)t->data)[i]);
			break;
		case ONNX_UINT16:
			printf("%s%u", i ? ", " : "", ((const uint16_t *)t->data)[i]);
			break;
		case ONNX_UINT32:
			printf("%s%u", i ? ", " : "", ((const uint32_t *)t->data)[i]);
			break;
		case ONNX_DOUBLE:
			printf("%s%.9g", i ? ", " : "", ((const double *)t->data)[i]);
			break;
		case ONNX_FLOAT16:
		case ONNX_BFLOAT16:	/* the bits: the public API has no 16-bit float conversion */
			printf("%s0x%04x", i ? ", " : "", ((const uint16_t *)t->data)[i]);
			break;
		}
	}
	printf("%s]\n", t->count > n ? ", ..." : "");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* --repeat N: N more runs of the same inputs, each onnx_run() timed (load, input files and the first,
 * checked run excluded); prints the median. */
static double cpu_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --repeat N --latencies: `latency: X ms` per run, as it ends; --interval MS: the pause between runs. */
static bool print_latencies;
static unsigned interval_ms;

/* --repeat N: `run: X ms per inference (median of N)` (wall clock), then the process CPU time per
 * inference on its own line (a loaded machine's waiting is not counted there; tools/bench-vs-torch). */
static int repeat_runs(struct onnx_model *m, struct accel_dev *dev, struct onnx_compiled *cm,
		       const struct onnx_tensor *in, unsigned n_in, unsigned n_out, unsigned repeat)
{
	struct onnx_tensor out[MAX_IO];
	double *t = calloc(repeat, sizeof(*t)), *c = calloc(repeat, sizeof(*c));
	int ret = 0;

	if (!t || !c) {
		fprintf(stderr, "accel-run: out of memory\n");
		free(t);
		free(c);
		return 1;
	}
	for (unsigned r = 0; r < repeat && !ret; r++) {
		double t0 = now_ms(), c0 = cpu_ms_now();

		ret = cm ? onnx_compiled_run(cm, in, n_in, out, n_out, NULL) : onnx_run(m, dev, in, n_in, out, n_out, NULL);
		t[r] = now_ms() - t0;
		c[r] = cpu_ms_now() - c0;
		if (print_latencies && !ret) {
			printf("latency: %.3f ms\n", t[r]);
			fflush(stdout);
		}
		if (interval_ms && r + 1 < repeat)
			usleep(interval_ms * 1000u);
		if (ret)
			fprintf(stderr, "accel-run: repeat %u: %s\n", r + 1, cm ? onnx_compiled_error(cm) : onnx_model_error(m));
		for (unsigned i = 0; !ret && i < n_out; i++)
			onnx_tensor_release(&out[i]);
	}
	if (!ret) {
		printf("run: %.3f ms per inference (median of %u)\n", median(t, repeat), repeat);
		printf("cpu: %.3f ms of process CPU time per inference (median of %u)\n", median(c, repeat), repeat);
	}
	free(t);
	free(c);
	return ret ? 1 : 0;
}

/* --profile: the trace file.  The device engines' timeline exists on the sim backend only. */
static int profile_trace_begin(struct accel_dev *dev, bool *engines)
{
	struct accel_caps caps;

	*engines = false;
	if (!dev || accel_query_caps(dev, &caps))
		return 0;
	if (strcmp(caps.backend, "sim")) {
		printf("trace: the %s backend cannot show the device's engines; the trace has the graph's nodes only "
		       "(run with --device sim for the engine timeline)\n", caps.backend);
		return 0;
	}
	if (accel_trace_begin(dev)) {
		fprintf(stderr, "accel-run: trace: %s\n", accel_last_error(dev));
		return 1;
	}
	*engines = true;
	return 0;
}

static int profile_finish(struct onnx_model *m, struct accel_dev *dev, const struct onnx_compiled *cm, bool engines,
			  const char *trace, const struct onnx_node_profile *prof)
{
	struct accel_caps caps = { .clock_mhz = 0 };
	int ret;

	print_profile(m, prof, !dev, cm);
	if (dev)
		accel_query_caps(dev, &caps);
	if (engines) {
		if (accel_trace_end(dev) || accel_trace_write_json(dev, trace)) {
			fprintf(stderr, "accel-run: trace: %s\n", accel_last_error(dev));
			return 1;
		}
	}
	ret = write_trace(trace, engines ? trace : NULL, m, prof, caps.clock_mhz);
	if (!ret)
		printf("trace: %s (Perfetto / chrome://tracing)\n", trace);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *model_path = NULL, *device = NULL, *in_paths[MAX_IO], *exp_paths[MAX_IO], *save = NULL;
	const char *mnist_img = NULL, *mnist_lbl = NULL, *ref_preds = NULL, *save_preds = NULL;
	const char *trace = NULL, *save_cm = NULL, *load_cm = NULL, *placement = NULL;
	struct onnx_compiled *cm = NULL;
	FILE *json_out = NULL;
	bool no_compile = false, no_replay = false, check = false, own_m = false;
	struct onnx_tolerance tol = { -1, -1, ONNX_TOL_ITOL };
	bool elementwise = false;
	struct onnx_tensor in[MAX_IO], out[MAX_IO], exp;
	struct shape_arg shapes[MAX_SHAPES];
	unsigned n_in = 0, n_exp = 0, n_out = 0, n_shapes = 0, batch = 1000, repeat = 0;	/* --batch: images per run */
	bool batch_set = false;
	unsigned long long seed = 0;
	struct onnx_node_profile *prof = NULL;
	struct accel_dev *dev = NULL;
	struct onnx_model *m = NULL;
	struct onnx_run_stats st;
	bool cpu = false, info = false, random_in = false, profile = false, engines = false, have_in = false;
	bool plan_only;
	char err[768], *end;
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
		if (a[0] != '-') {
			if (model_path)
				return cli_usage_error(PROG, "'%s': only one model (already '%s')", a, model_path);
			model_path = a;
			continue;
		}
		/* flags without a value */
		if (!strcmp(a, "--cpu")) {
			cpu = true;
			continue;
		} else if (!strcmp(a, "--info")) {
			info = true;
			continue;
		} else if (!strcmp(a, "--random-input")) {
			random_in = true;
			continue;
		} else if (!strcmp(a, "--profile")) {
			profile = true;
			continue;
		} else if (!strcmp(a, "--no-compile")) {
			no_compile = true;
			continue;
		} else if (!strcmp(a, "--no-replay")) {
			no_replay = true;
			continue;
		} else if (!strcmp(a, "--latencies")) {
			print_latencies = true;
			continue;
		} else if (!strcmp(a, "--elementwise")) {
			elementwise = true;
			continue;
		} else if (!strcmp(a, "--check")) {
			check = true;
			continue;
		} else if (!strcmp(a, "--mnist")) {
			if (i + 2 >= argc)
				return cli_usage_error(PROG, "--mnist: needs two values, IMAGES and LABELS");
			mnist_img = argv[++i];
			mnist_lbl = argv[++i];
			continue;
		}
		if (strcmp(a, "--input") && strcmp(a, "--expect") && strcmp(a, "--device") && strcmp(a, "--atol") &&
		    strcmp(a, "--rtol") && strcmp(a, "--itol") && strcmp(a, "--save-outputs") &&
		    strcmp(a, "--reference-predictions") && strcmp(a, "--save-predictions") && strcmp(a, "--batch") &&
		    strcmp(a, "--seed") && strcmp(a, "--shape") && strcmp(a, "--repeat") && strcmp(a, "--trace") &&
		    strcmp(a, "--interval") &&
		    strcmp(a, "--save-compiled") && strcmp(a, "--compiled") && strcmp(a, "--placement"))
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
		} else if (!strcmp(a, "--seed")) {
			errno = 0;
			seed = strtoull(v, &end, 0);
			if (!*v || *end || errno || v[0] == '-')
				return cli_usage_error(PROG, "--seed: '%s' is not a number", v);
		} else if (!strcmp(a, "--shape")) {
			if (n_shapes == MAX_SHAPES)
				return cli_usage_error(PROG, "--shape: at most %d", MAX_SHAPES);
			if (shape_parse(v, &shapes[n_shapes++]))
				return 2;
		} else if (!strcmp(a, "--repeat")) {
			if ((ret = cli_u32(PROG, a, v, 1, 1000000, &u)))
				return ret;
			repeat = u;
		} else if (!strcmp(a, "--interval")) {
			if ((ret = cli_u32(PROG, a, v, 0, 60000, &u)))
				return ret;
			interval_ms = u;
		} else if (!strcmp(a, "--trace")) {
			trace = v;
		} else if (!strcmp(a, "--save-compiled")) {
			save_cm = v;
		} else if (!strcmp(a, "--compiled")) {
			load_cm = v;
		} else if (!strcmp(a, "--placement")) {
			placement = v;
		} else {	/* --batch */
			if ((ret = cli_u32(PROG, a, v, 1, 1000000, &u)))
				return ret;
			batch = u;
			batch_set = true;
		}
	}
	if (!model_path && !load_cm)
		return cli_usage_error(PROG, "missing MODEL.onnx (or --compiled FILE, a compiled file that carries its model)");
	if (check && (model_path || !load_cm || n_in || random_in || n_exp || info || repeat || save || save_cm))
		return cli_usage_error(PROG, "--check: only 'accel-run --compiled FILE --check [--device D]' (opens the file "
				       "alone, runs nothing)");
	if (!model_path && (mnist_img || n_shapes))
		return cli_usage_error(PROG, "%s: needs MODEL.onnx (--compiled FILE alone runs the input shapes it "
				       "was compiled for)", mnist_img ? "--mnist" : "--shape");
	if (tol.atol < 0)
		tol.atol = elementwise ? ONNX_TOL_ATOL : ONNX_MODEL_ATOL;
	if (tol.rtol < 0)
		tol.rtol = elementwise ? ONNX_TOL_RTOL : ONNX_MODEL_RTOL;
	if (batch_set && !mnist_img)
		return cli_usage_error(PROG, "--batch: only with --mnist");
	if (mnist_img && (n_in || n_exp || random_in))
		return cli_usage_error(PROG, "--mnist: not together with --input/--expect/--random-input");
	if (random_in && n_in)
		return cli_usage_error(PROG, "--random-input: excludes --input");
	if (trace && !profile)
		return cli_usage_error(PROG, "--trace: writes the trace of --profile: give both");
	if (!trace)
		trace = "accel-run-trace.json";
	if (no_replay && (no_compile || cpu || load_cm))
		return cli_usage_error(PROG, "--no-replay: applies to onnx_compile (not with --no-compile, --cpu or "
				       "--compiled)");
	if ((save_cm || load_cm) && (no_compile || cpu || profile))
		return cli_usage_error(PROG, "%s: needs the compiled path (not with --no-compile, --cpu or --profile)",
				       save_cm ? "--save-compiled" : "--compiled");
	if (placement && strcmp(placement, "json"))
		return cli_usage_error(PROG, "--placement: '%s' (the one format is json)", placement);
	if (placement && mnist_img)
		return cli_usage_error(PROG, "--placement: not with --mnist");
	if (n_shapes && (n_in || (!random_in && !info && !placement)))
		return cli_usage_error(PROG, "--shape: only shapes generated inputs (--random-input, or --info without "
				       "--input)");
	if (placement && !(json_out = placement_stdout()))
		return 1;
	if (model_path) {
		ret = onnx_model_load(model_path, 0, &m, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-run: %s\n", err);
			return 1;
		}
		own_m = true;
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
	if (!model_path) {	/* the file carries its model (lent by cm, freed with it) and input shapes */
		if (compiled_open(dev, load_cm, &cm)) {
			accel_close(dev);
			return 1;
		}
		if (check) {
			ret = compiled_check(load_cm, cm) ? 1 : 0;
			onnx_compiled_free(cm);
			accel_close(dev);
			return ret;
		}
		m = onnx_compiled_model(cm);
		model_path = load_cm;
		if (compiled_shapes(cm, shapes, MAX_SHAPES, &n_shapes) || (save_cm && compiled_save(cm, save_cm))) {
			onnx_compiled_free(cm);
			accel_close(dev);
			return 1;
		}
	}
	if (info) {
		printf("model %s: %u nodes in the graph, %u to run after folding\n", model_path,
		       onnx_model_n_graph_nodes(m), onnx_model_n_nodes(m));
		print_io(m);
	}
	if (mnist_img) {
		ret = classify_mnist(m, model_path, dev, !no_compile, no_replay ? ONNX_COMPILE_NO_REPLAY : 0, mnist_img,
				     mnist_lbl, batch, ref_preds, save_preds);
		accel_close(dev);
		onnx_model_free(m);
		return ret ? 1 : 0;
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
	/*
	 * --info alone plans and runs nothing (issue #27): on a device, placement is the compiler's decision
	 * (onnx_compile asks libaccel's accel_op_supported), no job is submitted; with --cpu everything is
	 * the CPU reference's.  It still needs the input shapes (where a node runs depends on them): from
	 * the --input files, else generated as --random-input would (declared shapes, --shape).  Anything
	 * that needs outputs (--expect, --random-input, --repeat, --profile, --save-outputs) runs, and
	 * --no-compile's table is what the node-by-node executor did in one run.  --placement json runs too
	 * (it reports the jobs that ran each node), on generated inputs when none are given.
	 */
	plan_only = info && !n_exp && !random_in && !profile && !repeat && !save && !no_compile && !placement;
	if (random_in || (info && !n_in) || (placement && !n_in)) {
		if (random_inputs(m, shapes, n_shapes, seed, in, MAX_IO)) {
			ret = 1;
			goto out;
		}
		n_in = onnx_model_n_inputs(m);
	} else {
		if (n_in != onnx_model_n_inputs(m)) {
			/* Name what is needed: one --input per graph input, in this order. */
			fprintf(stderr, "accel-run: the model has %u input%s, %u --input given; give one --input FILE.pb "
				"(a serialized TensorProto) for each, in this order, or --random-input:\n",
				onnx_model_n_inputs(m), onnx_model_n_inputs(m) == 1 ? "" : "s", n_in);
			for (unsigned i = 0; i < onnx_model_n_inputs(m); i++) {
				char desc[160];

				onnx_model_input_describe(m, i, desc, sizeof(desc));
				fprintf(stderr, "  --input for '%s': %s\n", onnx_model_input_name(m, i), desc);
			}
			ret = 2;
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
	}
	have_in = true;
	prof = calloc(onnx_model_n_graph_nodes(m) + 1, sizeof(*prof));
	if (!prof) {
		fprintf(stderr, "accel-run: out of memory\n");
		ret = 1;
		goto out;
	}
	if (profile && profile_trace_begin(dev, &engines)) {
		ret = 1;
		goto out;
	}
	if (dev && !no_compile && !cm) {
		ret = compiled_prepare(m, dev, in, n_in, no_replay ? ONNX_COMPILE_NO_REPLAY : 0, load_cm, save_cm, &cm);
		if (ret == -EOPNOTSUPP && !load_cm && !save_cm) {
			/* shapes that depend on input data: the node-by-node executor runs such a model */
			fprintf(stderr, "accel-run: running the model node by node instead (as --no-compile)\n");
			no_compile = true;
			plan_only = false;
		} else if (ret) {
			ret = 1;
			goto out;
		}
	}
	if (dev && !no_compile) {
		if (plan_only) {
			print_compiled(m, cm);
			goto out;	/* ret 0 */
		}
		/* --profile: per step of the compiled plan (a step's cost on the node it was made from) */
		ret = onnx_compiled_run_profile(cm, in, n_in, out, n_out, &st, profile || placement ? prof : NULL);
		if (ret)
			fprintf(stderr, "accel-run: %s\n", onnx_compiled_error(cm));
	} else if (plan_only) {	/* --cpu */
		print_placement(m, NULL, true);
		ret = 0;
		goto out;
	} else {
		ret = onnx_run_profile(m, dev, in, n_in, out, n_out, &st, prof);
		if (ret)
			fprintf(stderr, "accel-run: %s\n", onnx_model_error(m));
	}
	if (json_out)	/* a failed run too: the nodes before the failure ran, the rest did not */
		placement_json(json_out, model_path, device, m, cm, prof, cpu);
	if (ret) {
		if (info)
			print_placement(m, prof, cpu);
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
	if (info && cm)
		print_compiled(m, cm);
	else if (info)
		print_placement(m, prof, cpu);
	if (profile && profile_finish(m, dev, cm, engines, trace, prof))
		fails++;
	if (repeat && repeat_runs(m, dev, cm, in, n_in, n_out, repeat))
		fails++;
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
			if (!info || random_in || profile || repeat || save) {
				printf("output '%s': %s\n", onnx_model_output_name(m, i), desc);
				print_values(&out[i]);
			}
			continue;
		}
		ret = onnx_tensor_load_pb(exp_paths[i], &exp, NULL, 0, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "accel-run: expectation %u: %s\n", i, err);
			fails++;
			continue;
		}
		ret = (elementwise ? onnx_compare : onnx_compare_scaled)(&out[i], &exp, &tol, &maxe, msg, sizeof(msg));
		printf("output '%s': %s: %s: %s (tolerance: float |got-exp| <= %g + %g*%s, integer <= %lld)\n",
		       onnx_model_output_name(m, i), desc, ret ? "FAIL" : "PASS", msg, tol.atol, tol.rtol,
		       elementwise ? "|exp|" : "max|exp|", (long long)tol.itol);
		fails += ret != 0;
		onnx_tensor_release(&exp);
	}
	for (unsigned i = 0; i < n_out; i++)
		onnx_tensor_release(&out[i]);
	if (n_exp)
		printf("%s\n", fails ? "FAIL" : "PASS");
	ret = fails ? 1 : 0;
out:
	if (have_in)
		for (unsigned i = 0; i < n_in; i++)
			onnx_tensor_release(&in[i]);
	free(prof);
	if (!own_m)
		m = NULL;	/* the model of a self-contained file: cm owns it */
	onnx_compiled_free(cm);
	accel_close(dev);
	onnx_model_free(m);
	if (json_out && fclose(json_out) && !ret)
		ret = 1;
	return ret;
}
