/* SPDX-License-Identifier: MIT */
/*
 * onnx-conformance - run the ONNX backend test data (Debian's libonnx-testdata) for the supported ops.
 *
 *   onnx-conformance [--data DIR] [--device PATH|sim] [--list]
 *
 * Walks DIR/node (tests named after a supported op: test_<op>[_...]) and DIR/pytorch-converted (all),
 * runs each model.onnx with every test_data_set_N/input_*.pb against output_*.pb (tolerances of
 * Documentation/onnx.md), prints "ok NAME" / "FAIL NAME: why" / "SKIP NAME: why" (out of scope: the
 * model needs an operator or feature outside the supported set) and closes with "N passed, N failed".
 * --list prints the selected test directories (to copy just those into the VM).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tnpu_onnx.h"

#define MAX_IO 16

static const char *const node_ops[] = {
	"conv", "gemm", "matmul", "relu", "maxpool", "averagepool", "globalaveragepool", "add", "flatten",
	"reshape", "batchnorm", "softmax", "qlinearconv", "qlinearmatmul", "convinteger", "matmulinteger",
	/* issue 15 */
	"clip", "concat", "split", "slice", "gather", "shape", "unsqueeze", "squeeze", "expand", "transpose",
	"constant_pad", "edge_pad", "reflect_pad", "sigmoid", "hardsigmoid", "hardswish", "tanh", "exp", "log",
	"erf", "gelu", "leakyrelu", "prelu", "elu", "selu", "softplus", "softsign", "mul", "div", "sub", "pow",
	"sqrt", "reciprocal", "neg", "abs", "floor", "ceil", "min", "max", "sum", "mean", "reduce_mean",
	"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_sum_square", "reduce_l1", "reduce_l2",
	"reduce_log_sum", "reduce_log_sum_exp", "argmax", "argmin", "logsoftmax", "layer_normalization",
	"resize", "upsample", "convtranspose", "cast", "where", "equal", "greater", "less", "not", "dropout",
	"quantizelinear", "dequantizelinear", "constantofshape", "range", "tile", "identity", "size", "and",
	"or", "xor",
	/* issue 30 (reach); "gather" above selects the gather_elements tests */
	"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "shrink",
	"thresholdedrelu", "mod", "bitshift", "tril", "triu", "cumsum", "depthtospace", "spacetodepth", "onehot",
	"scatter", "scatter_elements", "scatternd", "eyelike", "hardmax",
};

struct counts {
	unsigned pass, fail, skip;
};

static bool node_selected(const char *name)
{
	for (size_t i = 0; i < sizeof(node_ops) / sizeof(node_ops[0]); i++) {
		size_t l = strlen(node_ops[i]);

		if (!strncmp(name, "test_", 5) && !strncmp(name + 5, node_ops[i], l) &&
		    (name[5 + l] == '\0' || name[5 + l] == '_'))
			return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of dir starting with prefix. */
static char **list_dir(const char *dir, const char *prefix, unsigned *n)
{
	DIR *d = opendir(dir);
	char **v = NULL;
	struct dirent *e;
	unsigned cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		if (*n == cap) {
			char **nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

static void free_list(char **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Run one test_data_set directory; 0 pass, else fills why. */
static int run_set(struct onnx_model *m, struct accel_dev *dev, const char *set, char *why, size_t wl,
		   struct onnx_run_stats *st)
{
	struct onnx_tensor in[MAX_IO], out[MAX_IO], exp;
	struct onnx_tolerance tol = { ONNX_TOL_ATOL, ONNX_TOL_RTOL, ONNX_TOL_ITOL };
	unsigned n_in = onnx_model_n_inputs(m), n_out = onnx_model_n_outputs(m), n_files;
	char path[1400], msg[512];
	char **files = list_dir(set, "input_", &n_files);
	int ret = 0;

	free_list(files, n_files);
	if (n_files != n_in || n_in > MAX_IO || n_out > MAX_IO) {
		snprintf(why, wl, "%u input files for %u model inputs", n_files, n_in);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n_in; i++) {
		snprintf(path, sizeof(path), "%s/input_%u.pb", set, i);
		ret = onnx_tensor_load_pb(path, &in[i], NULL, 0, msg, sizeof(msg));
		if (ret) {
			snprintf(why, wl, "%s", msg);
			while (i--)
				onnx_tensor_release(&in[i]);
			return ret;
		}
	}
	ret = onnx_run(m, dev, in, n_in, out, n_out, st);
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
	if (ret) {
		snprintf(why, wl, "%s", onnx_model_error(m));
		return ret;
	}
	for (unsigned i = 0; i < n_out && !ret; i++) {
		double maxe;

		snprintf(path, sizeof(path), "%s/output_%u.pb", set, i);
		ret = onnx_tensor_load_pb(path, &exp, NULL, 0, msg, sizeof(msg));
		if (ret) {
			snprintf(why, wl, "%s", msg);
			break;
		}
		ret = onnx_compare(&out[i], &exp, &tol, &maxe, msg, sizeof(msg));
		if (ret)
			snprintf(why, wl, "output %u: %s", i, msg);
		onnx_tensor_release(&exp);
	}
	for (unsigned i = 0; i < n_out; i++)
		onnx_tensor_release(&out[i]);
	return ret;
}

static void run_test(const char *dir, const char *name, struct accel_dev *dev, struct counts *c)
{
	struct onnx_model *m = NULL;
	struct onnx_run_stats st = { 0 };
	char path[1024], why[1400];
	unsigned n_sets;
	char **sets;
	int ret;

	snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
	ret = onnx_model_load(path, 0, &m, why, sizeof(why));
	if (ret == -EOPNOTSUPP) {
		const char *w = strstr(why, ": ");

		printf("SKIP %s: out of scope: %s\n", name, w ? w + 2 : why);
		c->skip++;
		return;
	}
	if (ret) {
		printf("FAIL %s: %s\n", name, why);
		c->fail++;
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	sets = list_dir(path, "test_data_set_", &n_sets);
	ret = n_sets ? 0 : -ENOENT;
	snprintf(why, sizeof(why), "no test_data_set_* directory");
	for (unsigned i = 0; i < n_sets && !ret; i++) {
		char set[1100];

		snprintf(set, sizeof(set), "%s/%s", path, sets[i]);
		ret = run_set(m, dev, set, why, sizeof(why), &st);
	}
	free_list(sets, n_sets);
	onnx_model_free(m);
	if (ret == -EOPNOTSUPP) {
		printf("SKIP %s: out of scope: %s\n", name, why);
		c->skip++;
	} else if (ret) {
		printf("FAIL %s: %s\n", name, why);
		c->fail++;
	} else {
		printf("ok %s (nodes on the device %u, on the host %u)\n", name, st.accel_nodes, st.host_nodes);
		c->pass++;
	}
}

int main(int argc, char **argv)
{
	const char *data = "/usr/share/libonnx-testdata/data", *device = "sim";
	static const char *const suites[] = { "node", "pytorch-converted" };
	struct accel_dev *dev = NULL;
	struct counts c = { 0, 0, 0 };
	bool list = false;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: onnx-conformance [--data DIR] [--device PATH|sim] [--list]\n"
			       "       onnx-conformance --help | --version\n"
			       "Runs ONNX's backend tests of the supported operators (default data: %s) on the device\n"
			       "(default sim) and prints TAP; --list only lists them.\n"
			       "Exit status: 0 every test passed or was out of scope, 1 a test failed, 2 usage error.\n"
			       "Reference: Documentation/tools.md.\n", data);
			return 0;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version"))
			return cli_version("onnx-conformance");
		if (!strcmp(a, "--list")) {
			list = true;
		} else if (!strcmp(a, "--data") || !strcmp(a, "--device")) {
			if (i + 1 >= argc)
				return cli_usage_error("onnx-conformance", "%s: needs a value", a);
			*(!strcmp(a, "--data") ? &data : &device) = argv[++i];
		} else {
			return cli_usage_error("onnx-conformance", "%s: unknown %s", a, a[0] == '-' ? "option" : "argument");
		}
	}
	if (!list) {
		char err[512];

		ret = accel_open_msg(device, err, sizeof(err), &dev);
		if (ret) {
			fprintf(stderr, "onnx-conformance: cannot open '%s': %s (%s)\n", device, err, accel_strerror(ret));
			return 1;
		}
		printf("# ONNX conformance on %s, test data %s\n", device, data);
	}
	for (size_t s = 0; s < 2; s++) {
		char dir[512];
		unsigned n;
		char **tests;

		snprintf(dir, sizeof(dir), "%s/%s", data, suites[s]);
		tests = list_dir(dir, "test_", &n);
		if (!tests) {
			fprintf(stderr, "onnx-conformance: %s: no tests (install libonnx-testdata)\n", dir);
			c.fail++;
			continue;
		}
		for (unsigned i = 0; i < n; i++) {
			if (s == 0 && !node_selected(tests[i]))
				continue;
			if (list)
				printf("%s/%s\n", suites[s], tests[i]);
			else
				run_test(dir, tests[i], dev, &c);
		}
		free_list(tests, n);
	}
	accel_close(dev);
	if (list)
		return 0;
	printf("# %u out of scope (SKIP lines; Documentation/onnx.md says why)\n", c.skip);
	printf("%u passed, %u failed\n", c.pass, c.fail);
	return c.fail ? 1 : 0;
}
