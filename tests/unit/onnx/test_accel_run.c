/* SPDX-License-Identifier: MIT */
/*
 * accel-run --info / --random-input / --shape / --seed / --repeat / --profile on a tiny model written
 * here (Conv + Relu, fused, then an Add that runs on the host), and the onnx library calls behind them:
 * onnx_model_input_desc, onnx_model_node_info, onnx_run_profile.  The accel-run binary comes from
 * meson (ACCEL_RUN).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <regex.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

static char dir[] = "/tmp/test-accel-run-XXXXXX";
static char model_path[128];

/* x FLOAT [N,1,4,4] -> Conv 3x3 pad 1 (1 -> 2 channels) -> Relu -> Add (y = r + r) */
static struct mb *tiny_model(void)
{
	static const float w[2 * 9] = { 1, 0, -1, 2, 0, -2, 1, 0, -1, 0, 1, 0, 1, -4, 1, 0, 1, 0 };
	static const int64_t wd[4] = { 2, 1, 3, 3 }, xd[4] = { INT64_MIN, 1, 4, 4 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	Onnx__NodeProto *conv;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input_typed(b, "x", ONNX_FLOAT, 4, xd);	/* [N,1,4,4] */
	conv = mb_node(b, "Conv", "x,w", "c");
	conv->name = "the_conv";
	mb_attr_ints(b, conv, "pads", pads, 4);
	mb_node(b, "Relu", "c", "r");
	mb_node(b, "Add", "r,r", "y");
	mb_output(b, "y");
	return b;
}

static void setup(void)
{
	struct mb *b = tiny_model();
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(model_path, sizeof(model_path), "%s/tiny.onnx", dir);
	f = fopen(model_path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	mb_free(b);
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Run accel-run [model] args in dir (no model: NULL); its stdout+stderr into out; the exit status. */
static int accel_run_model(const char *model, const char *args, char *out, size_t len)
{
	const char *bin = getenv("ACCEL_RUN");
	char cmd[1024];
	size_t n = 0;
	FILE *p;
	int st;

	cr_assert_not_null(bin, "ACCEL_RUN is set by meson");
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s%s%s %s 2>&1", dir, bin, model ? "'" : "", model ? model : "",
		 model ? "'" : "", args);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (n + 1 < len && (st = (int)fread(out + n, 1, len - 1 - n, p)) > 0)
		n += (size_t)st;
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int accel_run(const char *args, char *out, size_t len)
{
	return accel_run_model(model_path, args, out, len);
}

/* A shell command in dir; its exit status. */
static int in_dir(const char *cmd)
{
	char full[1024];

	snprintf(full, sizeof(full), "cd '%s' && %s", dir, cmd);
	return system(full);
}

static bool matches(const char *text, const char *re)
{
	regex_t r;
	bool ok;

	cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE), 0, "%s", re);
	ok = !regexec(&r, text, 0, NULL, 0);
	regfree(&r);
	return ok;
}

TestSuite(accel_run, .init = setup, .fini = teardown);

Test(accel_run, library_reports_declared_io_and_nodes)
{
	struct onnx_model *m = NULL;
	struct onnx_value_desc vi;
	struct onnx_node_info ni;
	char err[256];

	cr_assert_eq(onnx_model_load(model_path, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_model_input_desc(m, 0, &vi), 0);
	cr_expect_str_eq(vi.name, "x");
	cr_expect_eq(vi.dtype, ONNX_FLOAT);
	cr_assert_eq(vi.ndim, 4);
	cr_expect_eq(vi.dims[0], -1, "symbolic");
	cr_expect(vi.dims[1] == 1 && vi.dims[2] == 4 && vi.dims[3] == 4);
	cr_assert_eq(onnx_model_output_desc(m, 0, &vi), 0);
	cr_expect_str_eq(vi.name, "y");
	cr_expect_eq(vi.ndim, -1, "the model declares no output shape");
	cr_expect_eq(onnx_model_input_desc(m, 1, &vi), -EINVAL);
	cr_assert_eq(onnx_model_n_graph_nodes(m), 3);
	cr_assert_eq(onnx_model_node_info(m, 0, &ni), 0);
	cr_expect_str_eq(ni.op, "Conv");
	cr_expect_str_eq(ni.name, "the_conv");
	cr_expect_eq(ni.place, ONNX_PLACE_DEVICE);
	cr_assert_eq(onnx_model_node_info(m, 1, &ni), 0);
	cr_expect(!strcmp(ni.op, "Relu") && ni.place == ONNX_PLACE_FOLDED);
	cr_assert_eq(onnx_model_node_info(m, 2, &ni), 0);
	cr_expect(!strcmp(ni.op, "Add") && ni.place == ONNX_PLACE_HOST && ni.reason);
	cr_expect_eq(onnx_model_node_info(m, 3, &ni), -EINVAL);
	onnx_model_free(m);
}

Test(accel_run, run_profile_says_where_each_node_ran_and_what_it_cost)
{
	struct onnx_node_profile prof[3];
	struct onnx_model *m = NULL;
	struct accel_dev *dev = NULL;
	struct onnx_tensor x, y;
	int64_t xd[4] = { 1, 1, 4, 4 };
	char err[256];

	cr_assert_eq(onnx_model_load(model_path, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = (float)i - 7.5f;
	cr_assert_eq(onnx_run_profile(m, dev, &x, 1, &y, 1, NULL, prof), 0, "%s", onnx_model_error(m));
	cr_expect(prof[0].ran && prof[0].on_device && !prof[0].failed);
	cr_expect_gt(prof[0].counters.total_cycles, 0);
	cr_expect_gt(prof[0].counters.bytes_h2d + prof[0].counters.bytes_d2h, 0);
	cr_expect_geq(prof[0].host_ms, 0);
	cr_expect(!prof[1].ran, "the folded Relu does not run");
	cr_expect(prof[2].ran && !prof[2].on_device && !prof[2].failed);
	cr_expect_eq(prof[2].counters.total_cycles, 0);
	cr_expect_geq(prof[2].start_ms, prof[0].start_ms);
	onnx_tensor_release(&y);
	cr_assert_eq(onnx_run_profile(m, NULL, &x, 1, &y, 1, NULL, prof), 0);
	cr_expect(prof[0].ran && !prof[0].on_device, "no device: everything on the CPU reference");
	cr_expect_eq(prof[0].counters.total_cycles, 0);
	onnx_tensor_release(&y);
	onnx_tensor_release(&x);
	accel_close(dev);
	onnx_model_free(m);
}

Test(accel_run, info_lists_io_and_placement)
{
	char out[8192];

	cr_assert_eq(accel_run("--info --device sim", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^  'x': FLOAT \\[\\?,1,4,4\\]$"), "%s", out);
	cr_expect(matches(out, "^  'y': FLOAT \\(shape not declared\\)|^  'y': \\(type not declared\\)"), "%s", out);
	cr_expect(matches(out, "^ +0 Conv +device +the_conv$"), "%s", out);
	cr_expect(matches(out, "^ +1 Relu +folded: fused into the Conv/Gemm before it"), "%s", out);
	/* compiled (the default): the Add is an element-wise step of the ISA 2 vector units */
	cr_expect(matches(out, "^ +2 Add +device +Add$"), "%s", out);
	cr_expect(matches(out, "^placement: 2 on the device, 0 on the host, 1 folded at load time$"), "%s", out);
	cr_expect(matches(out, "^compiled plan: 2 nodes before fusion, 2 steps after \\(2 device jobs, 0 host\\)"),
		  "%s", out);
	cr_expect(matches(out, "^  jobs per run: 2, in 1 chain "), "%s", out);
	cr_expect(!matches(out, "^output 'y'"), "--info alone prints no output values: %s", out);
	/* node by node: the Add runs on the host (no node-by-node lowering) */
	cr_assert_eq(accel_run("--info --device sim --no-compile", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^ +2 Add +host: element-wise arithmetic"), "%s", out);
	cr_expect(matches(out, "^placement: 1 on the device, 1 on the host, 1 folded at load time$"), "%s", out);
	cr_expect(!matches(out, "^compiled plan"), "%s", out);
}

/*
 * --info alone runs nothing (issue #27): the compiled plan's placement, no device job.  The device is
 * sim:submit=off, on which any job submission fails: the same model run on it fails (checked here),
 * --info on it prints the same placement as on a device that runs jobs.
 */
Test(accel_run, info_alone_plans_without_submitting_a_job)
{
	char out[8192], cpu[8192];

	cr_assert_eq(accel_run("--random-input --device sim:submit=off", out, sizeof(out)), 1, "%s", out);
	cr_expect(matches(out, "submit=off: this device runs no job"), "a run submits jobs: %s", out);
	cr_assert_eq(accel_run("--info --device sim:submit=off", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^  'x': FLOAT \\[\\?,1,4,4\\]$"), "%s", out);
	cr_expect(matches(out, "^ +0 Conv +device +the_conv$"), "%s", out);
	cr_expect(matches(out, "^ +1 Relu +folded: fused into the Conv/Gemm before it"), "%s", out);
	cr_expect(matches(out, "^ +2 Add +device +Add$"), "%s", out);
	cr_expect(matches(out, "^placement: 2 on the device, 0 on the host, 1 folded at load time$"), "%s", out);
	cr_expect(matches(out, "^  jobs per run: 2, in 1 chain "), "%s", out);
	cr_expect(!matches(out, "device cycles"), "nothing ran, so no run line: %s", out);
	/* --cpu: the CPU reference executor's, without running it either */
	cr_assert_eq(accel_run("--info --cpu", cpu, sizeof(cpu)), 0, "%s", cpu);
	cr_expect(matches(cpu, "^ +0 Conv +host: CPU reference executor \\(--cpu\\)"), "%s", cpu);
	cr_expect(matches(cpu, "^placement: 0 on the device, 2 on the host, 1 folded at load time$"), "%s", cpu);
	cr_expect(!matches(cpu, "all on the CPU reference executor"), "nothing ran, so no run line: %s", cpu);
}

Test(accel_run, random_input_is_seeded_and_shaped)
{
	char a[4096], b[4096], c[4096], d[4096];

	cr_assert_eq(accel_run("--random-input --seed 7 --device sim", a, sizeof(a)), 0, "%s", a);
	cr_assert_eq(accel_run("--random-input --seed 7 --cpu", b, sizeof(b)), 0, "%s", b);
	cr_assert_eq(accel_run("--random-input --seed 8 --device sim", c, sizeof(c)), 0, "%s", c);
	cr_expect(matches(a, "^output 'y': FLOAT \\[1,2,4,4\\]$"), "dynamic batch defaults to 1: %s", a);
	/* the values line: same seed, same input -> same output on sim and CPU (within printing) */
	cr_expect_str_eq(strstr(a, "  ["), strstr(b, "  ["));
	cr_expect_str_neq(strstr(a, "  ["), strstr(c, "  ["));
	cr_assert_eq(accel_run("--random-input --shape x=3x1x4x4 --device sim", d, sizeof(d)), 0, "%s", d);
	cr_expect(matches(d, "^output 'y': FLOAT \\[3,2,4,4\\]$"), "%s", d);
}

Test(accel_run, bad_random_input_arguments_are_clear_errors)
{
	char out[4096];

	cr_expect_eq(accel_run("--random-input --shape x=1x0x4 --device sim", out, sizeof(out)), 2);
	cr_expect(matches(out, "--shape 'x=1x0x4': expected NAME=D0xD1x"), "%s", out);
	cr_expect_eq(accel_run("--random-input --shape nosuch=1x1x4x4 --device sim", out, sizeof(out)), 1);
	cr_expect(matches(out, "--shape nosuch: the model has no input of that name"), "%s", out);
	cr_expect_eq(accel_run("--random-input --input x.pb --device sim", out, sizeof(out)), 2);
	cr_expect_eq(accel_run("--random-input --seed x --device sim", out, sizeof(out)), 2);
	cr_expect_eq(accel_run("--random-input --repeat 0 --device sim", out, sizeof(out)), 2);
	cr_expect_eq(accel_run("--random-input --trace t.json --device sim", out, sizeof(out)), 2,
		     "--trace without --profile");
	cr_expect_eq(accel_run("--shape x=1x1x4x4 --device sim", out, sizeof(out)), 2, "--shape without generated inputs");
	cr_expect_eq(accel_run("--random-input --shape x=2x1x4 --device sim", out, sizeof(out)), 1,
		     "a 3-D input for a 2-D conv: the run's error");
	cr_expect(matches(out, "^accel-run: .*Conv"), "%s", out);
}

/* --no-replay (every run lowered again) is a compile option: not with the node-by-node path */
Test(accel_run, no_replay_is_an_option_of_the_compiled_path)
{
	char out[4096];

	cr_assert_eq(accel_run("--random-input --repeat 2 --device sim --no-replay", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^run: [0-9]+\\.[0-9]{3} ms per inference \\(median of 2\\)$"), "%s", out);
	cr_expect_eq(accel_run("--random-input --no-replay --no-compile --device sim", out, sizeof(out)), 2);
	cr_expect(matches(out, "--no-replay: applies to onnx_compile"), "%s", out);
}

Test(accel_run, repeat_prints_the_median)
{
	char out[4096];

	cr_assert_eq(accel_run("--random-input --repeat 3 --device sim", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^run: [0-9]+\\.[0-9]{3} ms per inference \\(median of 3\\)$"), "%s", out);
}

/* --no-compile: node by node, the Add on the host (the node-by-node executor has no element-wise lowering) */
Test(accel_run, profile_prints_per_node_cost_and_writes_a_perfetto_trace)
{
	char out[8192], cmd[512];

	cr_assert_eq(accel_run("--random-input --profile --no-compile --trace t.json --device sim", out, sizeof(out)), 0,
		     "%s", out);
	cr_expect(matches(out, "^ +node op +host ms +dev cycles +bytes +where +name$"), "%s", out);
	cr_expect(matches(out, "^ +0 Conv +[0-9.]+ +[1-9][0-9]* +[1-9][0-9]* +device"), "%s", out);
	cr_expect(matches(out, "^ +2 Add +[0-9.]+ +0 +0 +host: element-wise arithmetic"), "%s", out);
	cr_expect(!matches(out, "^ +1 Relu"), "a folded node has no row: %s", out);
	cr_expect(matches(out, "^trace: t.json \\(Perfetto"), "%s", out);
	/* valid JSON, with the graph's nodes and libaccel's per-job engine lanes */
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d[\"traceEvents\"]; "
		 "n={x[\"args\"][\"name\"] for x in e if x.get(\"name\")==\"process_name\"}; "
		 "assert \"graph\" in n and \"job 1\" in n, n; "
		 "assert [x for x in e if x.get(\"pid\")==0 and x.get(\"name\")==\"Conv\" and x[\"tid\"]==2]; "
		 "assert [x for x in e if x.get(\"pid\")==0 and x.get(\"name\")==\"Add\" and x[\"cat\"]==\"host\"]' "
		 "'%s/t.json'", dir);
	cr_expect_eq(system(cmd), 0, "the trace is JSON with the graph and job processes");
}

/* The default compiled plan, by step: the Conv (its Relu fused) and the Add each one device job. */
Test(accel_run, profile_of_the_compiled_plan_is_per_step)
{
	char out[8192], cmd[512];

	cr_assert_eq(accel_run("--random-input --profile --trace u.json --device sim", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^profile \\(one run of the compiled plan, by step"), "%s", out);
	cr_expect(matches(out, "^ +0 Conv +[0-9.]+ +[1-9][0-9]* +[1-9][0-9]* +device: conv, 1 job +the_conv$"), "%s", out);
	cr_expect(matches(out, "^ +2 Add +[0-9.]+ +[1-9][0-9]* +[1-9][0-9]* +device: eltwise, 1 job"), "%s", out);
	cr_expect(!matches(out, "^ +1 Relu"), "a folded node has no row: %s", out);
	cr_expect(matches(out, "^model .*2 on the accelerator, 0 on the host; device cycles ([1-9][0-9]*)$"), "%s", out);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))[\"traceEvents\"]; "
		 "d=[x[\"name\"] for x in e if x.get(\"pid\")==0 and x.get(\"tid\")==2 and x[\"ph\"]==\"X\"]; "
		 "assert d == [\"Conv\", \"Add\"], d' '%s/u.json'", dir);
	cr_expect_eq(system(cmd), 0, "both steps on the device lane of the trace");
}

Test(accel_run, profile_without_device_engines_writes_the_graph_only)
{
	char out[8192], cmd[512];

	cr_assert_eq(accel_run("--random-input --profile --trace c.json --cpu", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^ +0 Conv +[0-9.]+ +0 +0 +host: CPU reference executor"), "%s", out);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))[\"traceEvents\"]; "
		 "assert {x.get(\"pid\") for x in e} == {0}, e; "
		 "assert [x[\"args\"][\"name\"] for x in e if x.get(\"ph\")==\"X\"] == [\"the_conv\", \"Add\"], e' "
		 "'%s/c.json'", dir);
	cr_expect_eq(system(cmd), 0, "a graph-only trace: the two nodes that ran, host lane only");
}

/* ---- model outputs against references: onnx_compare_scaled (Documentation/onnx.md, "Tolerances") ---- */

static void f32_tensor(struct onnx_tensor *t, const float *v, int64_t n)
{
	cr_assert_eq(onnx_tensor_alloc(t, ONNX_FLOAT, 1, &n), 0);
	memcpy(t->data, v, (size_t)n * sizeof(float));
}

Test(accel_run, scaled_compare_bounds_the_error_by_the_output_scale)
{
	/* scale 8: bound 1e-6 + 1e-4 * 8 = 8.01e-4 for every element, the one near zero included */
	static const float want[4] = { 8, -4, 1e-3f, 0 }, near[4] = { 8.0007f, -4, 1.7e-3f, -7e-4f },
			   off[4] = { 8, -4, 2e-3f, 0 };
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 0 };
	struct onnx_tensor w, g;
	char msg[256];
	double e;

	f32_tensor(&w, want, 4);
	f32_tensor(&g, near, 4);
	cr_expect_eq(onnx_compare_scaled(&g, &w, &tol, &e, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect(e > 6.9e-4 && e < 7.1e-4, "max |err| %g", e);
	cr_expect_eq(onnx_compare(&g, &w, &tol, &e, msg, sizeof(msg)), 1, "per element, 1.7e-3 vs 1e-3 fails");
	onnx_tensor_release(&g);
	f32_tensor(&g, off, 4);
	cr_expect_eq(onnx_compare_scaled(&g, &w, &tol, &e, msg, sizeof(msg)), 1);
	cr_expect(strstr(msg, "first at 2") && strstr(msg, "of the scale 8"), "%s", msg);
	onnx_tensor_release(&g);
	onnx_tensor_release(&w);
}

Test(accel_run, scaled_compare_nan_and_infinities)
{
	float want[3] = { 1, 0, 0 }, got[3] = { 1, 0, 0 };
	struct onnx_tolerance tol = { ONNX_MODEL_ATOL, ONNX_MODEL_RTOL, 0 };
	struct onnx_tensor w, g;
	char msg[256];
	double e;

	want[1] = got[1] = __builtin_nanf("");
	want[2] = got[2] = __builtin_inff();	/* an infinite reference is not the scale */
	f32_tensor(&w, want, 3);
	f32_tensor(&g, got, 3);
	cr_expect_eq(onnx_compare_scaled(&g, &w, &tol, &e, msg, sizeof(msg)), 0, "%s", msg);
	((float *)g.data)[2] = -__builtin_inff();
	cr_expect_eq(onnx_compare_scaled(&g, &w, &tol, &e, msg, sizeof(msg)), 1, "-inf for +inf: %s", msg);
	((float *)g.data)[2] = __builtin_inff();
	((float *)g.data)[0] = __builtin_nanf("");
	cr_expect_eq(onnx_compare_scaled(&g, &w, &tol, &e, msg, sizeof(msg)), 1, "NaN for 1: %s", msg);
	onnx_tensor_release(&g);
	onnx_tensor_release(&w);
}

/* ---- --placement json (issue 30): every node, device or host, why, and the jobs that ran it ---- */

/* accel-run ARGS with its stdout (only) checked by the python statements CHECK on d = the parsed JSON. */
static int placement_check(const char *args, const char *check)
{
	const char *bin = getenv("ACCEL_RUN");
	char cmd[2048];

	cr_assert_not_null(bin, "ACCEL_RUN is set by meson");
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && '%s' '%s' --placement json %s 2>/dev/null | python3 -c 'import json,sys; "
		 "d=json.load(sys.stdin); n=d[\"nodes\"]; %s'", dir, bin, model_path, args, check);
	return system(cmd);
}

Test(accel_run, placement_json_of_the_compiled_plan_names_jobs_and_fusions)
{
	cr_expect_eq(placement_check("--device sim",
				     "assert d[\"compiled\"] is True; assert [x[\"op\"] for x in n] == [\"Conv\", \"Relu\", \"Add\"]; "
				     "assert n[0][\"placement\"] == \"device\" and n[0][\"how\"] == \"job\" and n[0][\"reason\"] is None; "
				     "assert len(n[0][\"jobs\"]) >= 1 and n[0][\"counters\"][\"macs\"] > 0, n[0]; "
				     "assert n[0][\"counters\"][\"instructions\"] > 0, n[0]; "
				     "assert n[1][\"placement\"] == \"device\" and n[1][\"how\"] == \"fused\", n[1]; "
				     "assert n[1][\"fused_into\"] == \"the_conv\" and n[1][\"jobs\"] == [], n[1]; "
				     "assert n[2][\"placement\"] == \"device\" and n[2][\"jobs\"], n[2]; "
				     "j = [k for x in n for k in x[\"jobs\"]]; assert j == list(range(len(j))), j; "
				     "assert d[\"summary\"] == {\"nodes\": 3, \"device\": 3, \"host\": 0, \"jobs\": len(j)}, d"), 0);
}

Test(accel_run, placement_json_node_by_node_gives_the_host_reason)
{
	cr_expect_eq(placement_check("--device sim --no-compile",
				     "assert d[\"compiled\"] is False; "
				     "assert n[0][\"placement\"] == \"device\" and n[0][\"jobs\"] == [0], n[0]; "
				     "assert n[2][\"placement\"] == \"host\" and n[2][\"jobs\"] == [], n[2]; "
				     "assert \"element-wise\" in n[2][\"reason\"], n[2]; "
				     "assert n[2][\"counters\"][\"cycles\"] == 0, n[2]; "
				     "assert d[\"summary\"][\"host\"] == 1 and d[\"summary\"][\"device\"] == 2, d"), 0);
	cr_expect_eq(placement_check("--cpu",
				     "assert all(x[\"placement\"] == \"host\" and not x[\"jobs\"] for x in n), n; "
				     "assert d[\"device\"] == \"cpu\", d"), 0);
}

Test(accel_run, placement_takes_only_json)
{
	char out[4096];

	cr_expect_eq(accel_run("--placement xml --device sim", out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "--placement: 'xml' (the one format is json)"), "%s", out);
}

/* --compiled FILE without MODEL (#27): the file carries the model and the input shapes it was compiled
 * for; the outputs are the bits of the run that compiled it; --check opens it only; a truncated file,
 * another format version and another device geometry are errors naming the field. */
Test(accel_run, compiled_file_runs_without_the_model)
{
	char out[4096];

	cr_assert_eq(accel_run("--random-input --seed 3 --device sim --save-compiled t.cm --save-outputs ref", out,
			       sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^compiled model saved to t.cm$"), "%s", out);
	cr_assert_eq(in_dir("mv tiny.onnx moved.onnx"), 0);
	cr_assert_eq(accel_run_model(NULL, "--compiled t.cm --random-input --seed 3 --device sim --save-outputs got",
				     out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^output 'y': FLOAT \\[1,2,4,4\\]$"), "%s", out);
	cr_expect_eq(in_dir("cmp -s ref0.pb got0.pb"), 0, "the outputs differ from the compiling run's");
	cr_assert_eq(accel_run_model(NULL, "--compiled t.cm --check --device sim", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^t.cm: compatible with this device: 2 steps .*inputs 1, outputs 1$"), "%s", out);
	cr_expect(matches(out, "^  input 'x': FLOAT \\[1,1,4,4\\]$"), "%s", out);
	cr_expect_eq(accel_run_model(NULL, "--compiled t.cm --info --device sim", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^compiled plan: 2 nodes before fusion"), "%s", out);

	cr_assert_eq(in_dir("head -c 300 t.cm > short.cm"), 0);
	cr_expect_eq(accel_run_model(NULL, "--compiled short.cm --random-input --device sim", out, sizeof(out)), 1);
	cr_expect(matches(out, "^accel-run: --compiled short.cm: field 'crc' does not match"), "%s", out);
	cr_assert_eq(in_dir("cp t.cm v3.cm && printf '\\003' | dd of=v3.cm bs=1 seek=8 conv=notrunc 2>/dev/null"), 0);
	cr_expect_eq(accel_run_model(NULL, "--compiled v3.cm --check --device sim", out, sizeof(out)), 1);
	cr_expect(matches(out, "field 'version' is 3, this reader reads version 5: recompile"), "%s", out);
	cr_expect_eq(accel_run_model(NULL, "--compiled t.cm --check --device sim:rows=2,cols=2", out, sizeof(out)), 1);
	cr_expect(matches(out, "field 'geometry.rows' is [0-9]+, the device has 2"), "%s", out);
	cr_expect_eq(accel_run_model(NULL, "--compiled nosuch.cm --check --device sim", out, sizeof(out)), 1);
	cr_expect(matches(out, "--compiled nosuch.cm: cannot open"), "%s", out);

	/* usage errors */
	cr_expect_eq(accel_run_model(NULL, "--random-input --device sim", out, sizeof(out)), 2);
	cr_expect(matches(out, "missing MODEL.onnx \\(or --compiled FILE"), "%s", out);
	cr_expect_eq(accel_run_model(NULL, "--compiled t.cm --random-input --shape x=2x1x4x4", out, sizeof(out)), 2);
	cr_expect_eq(accel_run_model(NULL, "--compiled t.cm --check --random-input", out, sizeof(out)), 2);
	cr_expect_eq(accel_run_model(NULL, "--compiled t.cm --cpu --random-input", out, sizeof(out)), 2);
	cr_expect_eq(accel_run_model("moved.onnx", "--compiled t.cm --check", out, sizeof(out)), 2);
}
