/* SPDX-License-Identifier: MIT */
/*
 * onnx-conformance - run every ONNX backend test of Debian's libonnx-testdata.
 *
 *   onnx-conformance [--data DIR] [--device PATH|sim] [--filters FILE] [--no-compile] [--list]
 *
 * Walks DIR/node, DIR/pytorch-converted, DIR/pytorch-operator and DIR/simple (every test_* directory),
 * runs each model.onnx with every test_data_set_N/input_*.pb against output_*.pb (tolerances of
 * Documentation/onnx.md): compiled for the set's input shapes (onnx_compile, onnx_compiled_run), as
 * accel-run runs models, or node by node (onnx_run) with --no-compile and for a model whose shapes depend
 * on input data (onnx_compile refuses those), and prints "ok NAME" or "FAIL NAME: why".  A test named in the filters file
 * (one "NAME REASON" a line, as ONNX Runtime keeps its excluded tests) is still run: when it does not
 * pass it prints "SKIP NAME: filtered: REASON [what happened]"; when it passes it prints
 * "FAIL NAME: unexpected pass of a filtered test" and counts as a failure, so the list can only shrink.
 * Closes with "N passed, N failed".  --list prints the test directories (for the VM's copy).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "device_check.h"
#include "tnpu_onnx.h"

#define MAX_IO 16

struct counts {
	unsigned pass, fail, skip;
	unsigned nodes;		/* passed node by node: shapes that depend on input data */
};

/* The filters file: test names and their reasons. */
struct filters {
	char **name, **reason;
	bool *seen;		/* the test was found in the data */
	unsigned n;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "NAME REASON" lines ('#' comments and blank lines skipped); -1 and a message naming the line when one
 * is malformed or names a test twice. */
static int filters_load(const char *path, struct filters *f)
{
	FILE *fp = fopen(path, "r");
	char line[1024];
	unsigned cap = 0, ln = 0;
	int ret = 0;

	if (!fp) {
		fprintf(stderr, "onnx-conformance: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (!ret && fgets(line, sizeof(line), fp)) {
		char *p = line, *name, *reason;
		size_t l = strlen(p);

		ln++;
		while (l && (p[l - 1] == '\n' || p[l - 1] == ' ' || p[l - 1] == '\t'))
			p[--l] = '\0';
		p += strspn(p, " \t");
		if (!*p || *p == '#')
			continue;
		name = p;
		p += strcspn(p, " \t");
		if (*p)
			*p++ = '\0';
		reason = p + strspn(p, " \t");
		if (strncmp(name, "test_", 5) || !*reason) {
			fprintf(stderr, "onnx-conformance: %s:%u: expected 'test_NAME REASON'\n", path, ln);
			ret = -1;
			break;
		}
		for (unsigned i = 0; i < f->n && !ret; i++) {
			if (!strcmp(f->name[i], name)) {
				fprintf(stderr, "onnx-conformance: %s:%u: %s is listed twice\n", path, ln, name);
				ret = -1;
			}
		}
		if (!ret && f->n == cap) {
			char **nn, **nr;
			bool *ns;

			cap = cap ? 2 * cap : 256;
			nn = realloc(f->name, cap * sizeof(char *));
			if (nn)
				f->name = nn;
			nr = realloc(f->reason, cap * sizeof(char *));
			if (nr)
				f->reason = nr;
			ns = realloc(f->seen, cap * sizeof(bool));
			if (ns)
				f->seen = ns;
			if (!nn || !nr || !ns)
				ret = -1;
		}
		if (!ret) {
			f->name[f->n] = strdup(name);
			f->seen[f->n] = false;
			f->reason[f->n++] = strdup(reason);
		}
	}
	fclose(fp);
	return ret;
}

/* The reason test name is filtered, NULL if it is not. */
static const char *filter_reason(struct filters *f, const char *name)
{
	for (unsigned i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], name)) {
			f->seen[i] = true;
			return f->reason[i];
		}
	return NULL;
}

/* Sorted entries of dir starting with prefix; NULL when dir cannot be read. */
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
	else
		v = calloc(1, sizeof(*v));	/* an empty directory: no entries, not an error */
	return v;
}

static void free_list(char **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* How a test runs on the device: compiled (onnx_compile for the set's input shapes, then
 * onnx_compiled_run: what accel-run does by default) or node by node (onnx_run: --no-compile).  A model
 * whose shapes depend on input data is refused by onnx_compile (-EOPNOTSUPP) and runs node by node, as
 * its message says; the ok line says so and the closing lines count them. */
static bool node_by_node;

/* Run the model on one set's inputs; 0, else fills why.  *nodes: it ran node by node. */
static int run_model(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *in, unsigned n_in,
		     struct onnx_tensor *out, unsigned n_out, struct onnx_run_stats *st,
		     struct onnx_node_profile *prof, bool *nodes, char *why, size_t wl)
{
	struct onnx_compiled *cm = NULL;
	char err[512];
	int ret = -EOPNOTSUPP;

	if (dev && !node_by_node) {
		ret = onnx_compile(m, dev, in, n_in, 0, &cm, err, sizeof(err));
		if (ret && ret != -EOPNOTSUPP) {
			snprintf(why, wl, "compile: %s", err);
			return ret;
		}
	}
	*nodes = ret == -EOPNOTSUPP;
	if (*nodes) {
		ret = onnx_run_profile(m, dev, in, n_in, out, n_out, st, prof);
		if (ret)
			snprintf(why, wl, "%s", onnx_model_error(m));
		return ret;
	}
	ret = onnx_compiled_run_profile(cm, in, n_in, out, n_out, st, prof);
	if (ret)
		snprintf(why, wl, "%s", onnx_compiled_error(cm));
	onnx_compiled_free(cm);
	return ret;
}

/* Run one test_data_set directory; 0 pass, else fills why. */
static int run_set(struct onnx_model *m, struct accel_dev *dev, const char *set, char *why, size_t wl,
		   struct onnx_run_stats *st, struct onnx_node_profile *prof, bool *nodes)
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
	ret = run_model(m, dev, in, n_in, out, n_out, st, prof, nodes, why, wl);
	for (unsigned i = 0; i < n_in; i++)
		onnx_tensor_release(&in[i]);
	if (ret)
		return ret;
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
	if (!ret && dev)
		ret = device_check(m, prof, why, wl);
	return ret;
}

/* Run one test: 0 pass, else fills why (-EOPNOTSUPP: the model needs what is not supported). */
static int run_test_dir(const char *dir, const char *name, struct accel_dev *dev, struct onnx_run_stats *st,
			bool *nodes, char *why, size_t wl, struct op_tally *tally)
{
	struct onnx_node_profile *prof;
	struct onnx_model *m = NULL;
	char path[1024];
	unsigned n_sets;
	char **sets;
	int ret;

	snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, name);
	ret = onnx_model_load(path, 0, &m, why, wl);
	if (ret)
		return ret;
	prof = calloc(onnx_model_n_graph_nodes(m) + 1, sizeof(*prof));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	sets = list_dir(path, "test_data_set_", &n_sets);
	ret = !prof ? -ENOMEM : n_sets ? 0 : -ENOENT;
	snprintf(why, wl, "%s", prof ? "no test_data_set_* directory" : "out of memory");
	for (unsigned i = 0; i < n_sets && !ret; i++) {
		char set[1100];

		snprintf(set, sizeof(set), "%s/%s", path, sets[i]);
		ret = run_set(m, dev, set, why, wl, st, prof, nodes);
	}
	if (!ret)
		op_tally_add(tally, m, prof);
	free(prof);
	free_list(sets, n_sets);
	onnx_model_free(m);
	return ret;
}

static void filters_free(struct filters *f)
{
	for (unsigned i = 0; i < f->n; i++) {
		free(f->name[i]);
		free(f->reason[i]);
	}
	free(f->name);
	free(f->reason);
	free(f->seen);
}

static void run_test(const char *dir, const char *name, struct accel_dev *dev, struct filters *f,
		     struct counts *c, struct op_tally *tally)
{
	struct onnx_run_stats st = { 0 };
	const char *filtered = filter_reason(f, name);
	char why[1400];
	bool nodes = false;
	int ret = run_test_dir(dir, name, dev, &st, &nodes, why, sizeof(why), filtered ? NULL : tally);

	if (!ret && filtered) {
		printf("FAIL %s: unexpected pass of a filtered test (filters: %s); remove it from the filters file\n",
		       name, filtered);
		c->fail++;
	} else if (filtered) {
		printf("SKIP %s: filtered: %s [%s]\n", name, filtered, why);
		c->skip++;
	} else if (ret) {
		printf("FAIL %s: %s\n", name, why);
		c->fail++;
	} else {
		printf("ok %s (%snodes on the device %u, on the host %u)\n", name,
		       nodes && !node_by_node ? "node by node: data-dependent shape; " : "", st.accel_nodes, st.host_nodes);
		c->pass++;
		c->nodes += nodes && !node_by_node;
	}
}

int main(int argc, char **argv)
{
	const char *data = "/usr/share/libonnx-testdata/data", *device = "sim", *filters_path = NULL;
	static const char *const suites[] = { "node", "pytorch-converted", "pytorch-operator", "simple" };
	struct filters f = { 0 };
	struct accel_dev *dev = NULL;
	struct counts c = { 0, 0, 0 };
	struct op_tally *tally;
	bool list = false;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: onnx-conformance [--data DIR] [--device PATH|sim] [--filters FILE] [--no-compile] [--list]\n"
			       "       onnx-conformance --help | --version\n"
			       "Runs ONNX's backend tests (default data: %s) on the device (default sim) and prints\n"
			       "one line a test; tests named in FILE are expected not to pass (SKIP), and one that\n"
			       "passes fails the run.  Each test is compiled for its inputs' shapes (onnx_compile), as\n"
			       "accel-run runs models; a model with data-dependent shapes, and every test with\n"
			       "--no-compile, runs node by node (onnx_run).  --list only lists the tests.\n"
			       "Exit status: 0 every test passed or was filtered, 1 a test failed, 2 usage error.\n"
			       "Reference: Documentation/tools.md.\n", data);
			return 0;
		}
		if (!strcmp(a, "-V") || !strcmp(a, "--version"))
			return cli_version("onnx-conformance");
		if (!strcmp(a, "--list")) {
			list = true;
		} else if (!strcmp(a, "--no-compile")) {
			node_by_node = true;
		} else if (!strcmp(a, "--data") || !strcmp(a, "--device") || !strcmp(a, "--filters")) {
			if (i + 1 >= argc)
				return cli_usage_error("onnx-conformance", "%s: needs a value", a);
			*(!strcmp(a, "--data") ? &data : !strcmp(a, "--device") ? &device : &filters_path) = argv[++i];
		} else {
			return cli_usage_error("onnx-conformance", "%s: unknown %s", a, a[0] == '-' ? "option" : "argument");
		}
	}
	if (filters_path && filters_load(filters_path, &f)) {
		filters_free(&f);
		return 1;
	}
	if (!list) {
		char err[512];

		ret = accel_open_msg(device, err, sizeof(err), &dev);
		if (ret) {
			fprintf(stderr, "onnx-conformance: cannot open '%s': %s (%s)\n", device, err, accel_strerror(ret));
			filters_free(&f);
			return 1;
		}
		printf("# ONNX conformance on %s, test data %s, filters %s (%u tests)\n", device, data,
		       filters_path ? filters_path : "none", f.n);
	}
	tally = op_tally_new();	/* after the usage checks: an early exit leaks nothing */
	if (!tally) {
		fprintf(stderr, "onnx-conformance: out of memory\n");
		accel_close(dev);
		filters_free(&f);
		return 1;
	}
	for (size_t s = 0; s < sizeof(suites) / sizeof(suites[0]); s++) {
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
			if (list)
				printf("%s/%s\n", suites[s], tests[i]);
			else
				run_test(dir, tests[i], dev, &f, &c, tally);
			fflush(stdout);
		}
		free_list(tests, n);
	}
	accel_close(dev);
	for (unsigned i = 0; i < f.n; i++)
		if (!list && !f.seen[i])	/* another version of the test data: worth a look, not a failure */
			printf("# filters: %s names no test in %s\n", f.name[i], data);
	filters_free(&f);
	if (list) {
		op_tally_free(tally);
		return 0;
	}
	op_tally_print(tally, stdout);
	op_tally_free(tally);
	if (!node_by_node)
		printf("# %u passing tests ran node by node: their shapes depend on input data, which onnx_compile "
		       "refuses (-EOPNOTSUPP)\n", c.nodes);
	printf("# %u filtered (SKIP lines, reasons in the filters file)\n", c.skip);
	printf("%u passed, %u failed\n", c.pass, c.fail);
	return c.fail ? 1 : 0;
}
