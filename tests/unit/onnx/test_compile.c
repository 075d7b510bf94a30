/* SPDX-License-Identifier: MIT */
/*
 * The whole-graph compiler (onnx/src/compile*.c, plan_mem.c, cmodel_file.c) on tiny graphs: the
 * memory planner's bound, fusion, the compiled path against the node-by-node CPU reference, weights
 * uploaded once, save/load round trips and every kind of bad compiled-model file (CRC oracle: zlib).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../../onnx/src/compile/compile.h"
#include "../../../onnx/src/compile/plan_mem.h"
#include "builder.h"
#include "model_values.h"

static struct accel_dev *dev;
static uint32_t rng;

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	rng = 777;
}

static void teardown(void)
{
	accel_close(dev);
}

TestSuite(onnx_compile, .init = setup, .fini = teardown);

static float frand(void)
{
	return mb_frand(&rng);
}

static void init_rand(struct mb *b, const char *name, unsigned nd, const int64_t *dims)
{
	mb_init_rand(b, name, nd, dims, &rng);
}

/* x[1,4,8,8] -> Conv3x3+bias -> Relu -> Conv3x3 -> Add(x) -> Relu -> MaxPool2 -> GlobalAveragePool
 * -> Flatten -> Gemm(4x3 + bias): a residual block with a classifier. */
static struct onnx_model *residual_model(void)
{
	static const int64_t wd[4] = { 4, 4, 3, 3 }, bd[1] = { 4 }, gd[2] = { 3, 4 }, gbd[1] = { 3 };
	static const int64_t pads[4] = { 1, 1, 1, 1 }, k2[2] = { 2, 2 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w1", 4, wd);
	init_rand(b, "b1", 1, bd);
	init_rand(b, "w2", 4, wd);
	init_rand(b, "g", 2, gd);
	init_rand(b, "gb", 1, gbd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w1,b1", "c1");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c1", "r1");
	n = mb_node(b, "Conv", "r1,w2", "c2");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Add", "c2,x", "s");
	mb_node(b, "Relu", "s", "r2");
	n = mb_node(b, "MaxPool", "r2", "p");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	mb_node(b, "GlobalAveragePool", "p", "gp");
	mb_node(b, "Flatten", "gp", "f");
	n = mb_node(b, "Gemm", "f,g,gb", "y");
	mb_attr_i(b, n, "transB", 1);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

static void input_x(struct onnx_tensor *x)
{
	static const int64_t xd[4] = { 1, 4, 8, 8 };

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = frand();
}

/* ---- the memory planner ------------------------------------------------------------------ */

Test(onnx_compile, plan_no_overlap_and_bound)
{
	struct plan_buf b[64];
	uint64_t total, lb;

	for (unsigned i = 0; i < 64; i++) {
		rng = rng * 1664525u + 1013904223u;
		b[i].size = 64 + (rng >> 8) % 100000;
		b[i].start = (int)(i / 2);
		b[i].end = b[i].start + 1 + (int)((rng >> 4) % 5);
	}
	cr_assert_eq(plan_mem(b, 64, 64, &total, &lb), 0);
	for (unsigned i = 0; i < 64; i++) {
		cr_assert_eq(b[i].offset % 64, 0);
		cr_assert_leq(b[i].offset + b[i].size, total);
		for (unsigned j = i + 1; j < 64; j++) {
			bool time = !(b[i].end < b[j].start || b[j].end < b[i].start);
			bool space = !(b[i].offset + b[i].size <= b[j].offset || b[j].offset + b[j].size <= b[i].offset);

			cr_assert(!(time && space), "buffers %u and %u overlap in time and space", i, j);
		}
	}
	cr_assert_geq(total, lb);
	cr_assert_leq((double)total, 1.5 * (double)lb, "plan %llu > 1.5 x lower bound %llu",
		      (unsigned long long)total, (unsigned long long)lb);
}

Test(onnx_compile, plan_chain_reuses_memory)
{
	/* a chain a -> b -> c -> d of equal tensors needs two slots, not four */
	struct plan_buf b[4] = { { 1000, 0, 1, 0 }, { 1000, 1, 2, 0 }, { 1000, 2, 3, 0 }, { 1000, 3, 4, 0 } };
	uint64_t total, lb;

	cr_assert_eq(plan_mem(b, 4, 64, &total, &lb), 0);
	cr_assert_eq(lb, 2 * 1024);
	cr_assert_eq(total, 2 * 1024);
	cr_assert_neq(b[0].offset, b[1].offset);
	cr_assert_eq(b[0].offset, b[2].offset);
}

Test(onnx_compile, plan_rejects_bad_range)
{
	struct plan_buf b[1] = { { 10, 3, 2, 0 } };
	uint64_t total, lb;

	cr_assert_eq(plan_mem(b, 1, 64, &total, &lb), -EINVAL);
	cr_assert_eq(plan_mem(b, 1, 3, &total, &lb), -EINVAL);
}

/* ---- compile + run ------------------------------------------------------------------------- */

static void expect_equal_close(const struct onnx_tensor *got, const struct onnx_tensor *ref)
{
	cr_assert_eq(got->count, ref->count);
	for (size_t i = 0; i < ref->count; i++) {
		float g = ((const float *)got->data)[i], r = ((const float *)ref->data)[i];

		cr_assert(fabsf(g - r) <= 1e-4f + 1e-3f * fabsf(r), "y[%zu] = %g, CPU reference %g", i, g, r);
	}
}

Test(onnx_compile, fusion_and_match_cpu_reference)
{
	struct onnx_model *m = residual_model();
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, y, ref;
	struct onnx_run_stats st;
	char err[512] = "";

	input_x(&x);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_info(cm, &ci), 0);
	/* 9 nodes; the loader fuses the first Relu into the Conv (8 left), the compiler the second into
	 * the Add and the Add into the second Conv's epilogue (its residual operand, ISA 2); Flatten is a
	 * view: 5 device jobs */
	cr_assert_eq(ci.nodes_before, 8, "nodes before: %u", ci.nodes_before);
	cr_assert_eq(ci.fused_nodes, 2);
	cr_assert_eq(ci.alias_steps, 1);
	cr_assert_eq(ci.device_steps, 5, "device steps %u", ci.device_steps);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.jobs_per_run, 5);
	cr_assert_eq(ci.chains, 1);
	cr_assert_leq((double)ci.peak_bytes, 1.5 * (double)ci.lower_bound);
	for (int r = 0; r < 3; r++) {
		struct onnx_tensor *xr = &x, *refr = &ref, x2, ref2;

		if (r == 1) {	/* other data between two runs on x: the later runs replay the first one's jobs */
			input_x(&x2);
			cr_assert_eq(onnx_run(m, NULL, &x2, 1, &ref2, 1, NULL), 0);
			xr = &x2;
			refr = &ref2;
		}
		cr_assert_eq(onnx_compiled_run(cm, xr, 1, &y, 1, &st), 0, "run: %s", onnx_compiled_error(cm));
		expect_equal_close(&y, refr);
		if (r == 1) {
			onnx_tensor_release(&x2);
			onnx_tensor_release(&ref2);
		}
		cr_assert_eq(st.host_nodes, 0);
		cr_assert_eq(st.accel_nodes, 5);
		/* the weights were uploaded at compile time: a run moves the input in, the output out */
		onnx_tensor_release(&y);
	}
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* onnx_compiled_run_profile: each step's jobs counted on the node it was made from, adding up to the run's
 * counters; fused nodes and views have no cost of their own. */
Test(onnx_compile, run_profile_counts_each_step_on_its_node)
{
	struct onnx_model *m = residual_model();
	struct onnx_compiled *cm = NULL;
	struct onnx_node_profile *prof = calloc(onnx_model_n_graph_nodes(m), sizeof(*prof));
	struct onnx_tensor x, y, y2;
	struct onnx_run_stats st, st2;
	uint64_t cyc = 0, jobs = 0, ran = 0;
	char err[512] = "";

	input_x(&x);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run_profile(cm, &x, 1, &y, 1, &st, prof), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y2, 1, &st2), 0);
	cr_assert_eq(memcmp(y.data, y2.data, y.count * 4), 0, "profiling changed the result");
	for (unsigned i = 0; i < onnx_model_n_graph_nodes(m); i++) {
		struct onnx_compiled_step cs;

		cr_assert_eq(onnx_compiled_step_info(cm, i, &cs), 0);
		cr_assert_eq(prof[i].ran, cs.device, "node %u (%s, %s): ran %d", i, cs.op, cs.kind, prof[i].ran);
		if (prof[i].ran) {
			cr_assert(prof[i].on_device && prof[i].counters.hw_jobs >= 1 && prof[i].counters.total_cycles > 0,
				  "node %u (%s)", i, cs.op);
			cr_assert_geq(prof[i].host_ms, 0.0);
		}
		cyc += prof[i].counters.total_cycles;
		jobs += prof[i].counters.hw_jobs;
		ran += prof[i].ran;
	}
	cr_assert_eq(ran, 5, "the five device steps");
	cr_assert_eq(cyc, st.counters.total_cycles, "steps %llu, run %llu cycles", (unsigned long long)cyc,
		     (unsigned long long)st.counters.total_cycles);
	cr_assert_eq(jobs, st.counters.hw_jobs);
	cr_assert_eq(st.counters.total_cycles, st2.counters.total_cycles);
	onnx_tensor_release(&y);
	onnx_tensor_release(&y2);
	onnx_tensor_release(&x);
	onnx_compiled_free(cm);
	onnx_model_free(m);
	free(prof);
}

Test(onnx_compile, no_fuse_flag_keeps_relu_step)
{
	struct onnx_model *m = residual_model();
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, y, ref;
	char err[512] = "";

	input_x(&x);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, ONNX_COMPILE_NO_FUSE, &cm, err, sizeof(err)), 0, "%s", err);
	onnx_compiled_info(cm, &ci);
	cr_assert_eq(ci.fused_nodes, 0);
	cr_assert_eq(ci.device_steps, 7);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

Test(onnx_compile, other_input_shape_is_an_error)
{
	static const int64_t xd[4] = { 1, 4, 10, 10 };
	struct onnx_model *m = residual_model();
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, x2, y;
	char err[512] = "";

	input_x(&x);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_tensor_alloc(&x2, ONNX_FLOAT, 4, xd), 0);
	cr_assert_eq(onnx_compiled_run(cm, &x2, 1, &y, 1, NULL), -EINVAL);
	cr_assert(strstr(onnx_compiled_error(cm), "compiled for other shapes"), "%s", onnx_compiled_error(cm));
	onnx_compiled_free(cm);
	onnx_tensor_release(&x2);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- the layout pass (compile_layout.c) -------------------------------------------------- */

static uint64_t run_cycles(struct onnx_model *m, unsigned flags, const struct onnx_tensor *x,
			   const struct onnx_tensor *ref)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_run_stats st;
	struct onnx_tensor y;
	char err[512] = "";

	cr_assert_eq(onnx_compile(m, dev, x, 1, flags, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, x, 1, &y, 1, &st), 0, "run: %s", onnx_compiled_error(cm));
	expect_equal_close(&y, ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	return st.counters.total_cycles;
}

/* x[1,32,28,28] -> Conv3x3(64)+bias -> Relu -> Conv3x3(64) -> Relu -> MaxPool2 -> GlobalAveragePool
 * -> Flatten -> Gemm(10). */
static struct onnx_model *conv_stack_model(void)
{
	static const int64_t w1d[4] = { 64, 32, 3, 3 }, w2d[4] = { 64, 64, 3, 3 }, bd[1] = { 64 };
	static const int64_t gd[2] = { 10, 64 }, pads[4] = { 1, 1, 1, 1 }, k2[2] = { 2, 2 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w1", 4, w1d);
	init_rand(b, "b1", 1, bd);
	init_rand(b, "w2", 4, w2d);
	init_rand(b, "g", 2, gd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w1,b1", "c1");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c1", "r1");
	n = mb_node(b, "Conv", "r1,w2", "c2");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c2", "r2");
	n = mb_node(b, "MaxPool", "r2", "p");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	mb_node(b, "GlobalAveragePool", "p", "gp");
	mb_node(b, "Flatten", "gp", "f");
	n = mb_node(b, "Gemm", "f,g", "y");
	mb_attr_i(b, n, "transB", 1);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* The NHWC plan (graph input transposed on the way in, OHWI weights, NHWC pooling) gives the CPU
 * reference's result in fewer device cycles than the all-NCHW plan; the residual model (input, conv
 * outputs and the residual add in one NHWC group) matches the reference too. */
Test(onnx_compile, nhwc_layout_matches_reference_in_fewer_cycles)
{
	static const int64_t xd[4] = { 1, 32, 28, 28 };
	struct onnx_model *m = conv_stack_model();
	struct onnx_tensor x, ref;
	uint64_t nhwc, nchw;

	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = frand();
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	nhwc = run_cycles(m, 0, &x, &ref);
	nchw = run_cycles(m, ONNX_COMPILE_NCHW, &x, &ref);
	cr_assert_lt(nhwc, nchw, "NHWC plan %llu cycles, NCHW plan %llu", (unsigned long long)nhwc,
		     (unsigned long long)nchw);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
	m = residual_model();
	input_x(&x);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	run_cycles(m, 0, &x, &ref);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Conv -> GlobalAveragePool -> Flatten -> Gemm: the pool's 1x1 output is read by a view (NCHW), but
 * it has the same bytes in both layouts, so the convolution's output (in the pool's group) stays NHWC
 * whichever value the group's bookkeeping names first (a regression: a view-read 1x1 value held back
 * its whole group, so ResNet-18's last block ran NCHW). */
Test(onnx_compile, global_pool_before_a_view_keeps_its_group_nhwc)
{
	static const int64_t wd[4] = { 8, 4, 3, 3 }, gd[2] = { 3, 8 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y, ref;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w", 4, wd);
	init_rand(b, "g", 2, gd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "GlobalAveragePool", "c", "gp");
	mb_node(b, "Flatten", "gp", "f");
	n = mb_node(b, "Gemm", "f,g", "y");
	mb_attr_i(b, n, "transB", 1);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	input_x(&x);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(cm->vals[value_index(m, "x")].nhwc, 1);
	cr_assert_eq(cm->vals[value_index(m, "c")].nhwc, 1, "the conv output went NCHW");
	cr_assert_eq(cm->vals[value_index(m, "y")].nhwc, 0);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* x[2,4,10,10] -> Conv3x3(8) -> Relu -> MaxPool2 -> Flatten -> Gemm(6), weights [6,200] (transB) or
 * [200,6]; with flat_out the flattened value is a graph output too. */
static struct onnx_model *flatten_gemm_model(bool trans_b, bool flat_out)
{
	static const int64_t wd[4] = { 8, 4, 3, 3 }, pads[4] = { 1, 1, 1, 1 }, k2[2] = { 2, 2 };
	const int64_t gd[2] = { trans_b ? 6 : 200, trans_b ? 200 : 6 }, bd[1] = { 6 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w", 4, wd);
	init_rand(b, "g", 2, gd);
	init_rand(b, "gb", 1, bd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "r");
	n = mb_node(b, "MaxPool", "r", "p");
	mb_attr_ints(b, n, "kernel_shape", k2, 2);
	mb_attr_ints(b, n, "strides", k2, 2);
	mb_node(b, "Flatten", "p", "f");
	n = mb_node(b, "Gemm", "f,g,gb", "y");
	mb_attr_i(b, n, "transB", trans_b);
	mb_output(b, "y");
	if (flat_out)
		mb_output(b, "f");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* A CNN's classifier: Flatten of a 5x5x8 map into a Gemm.  The map stays NHWC (the GEMM's weights are
 * permuted along K at compile time) and the result is the CPU reference's, with transB and without; when
 * the flattened value is also a graph output (read in NCHW order) the map goes NCHW instead. */
Test(onnx_compile, flatten_into_gemm_keeps_the_map_nhwc)
{
	static const int64_t xd[4] = { 2, 4, 10, 10 };
	struct onnx_tensor x;

	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = frand();
	for (int variant = 0; variant < 3; variant++) {
		struct onnx_model *m = flatten_gemm_model(variant != 1, variant == 2);
		struct onnx_compiled *cm = NULL;
		struct onnx_tensor y[2], ref[2];
		unsigned nout = variant == 2 ? 2 : 1;
		char err[512] = "";

		cr_assert_eq(onnx_run(m, NULL, &x, 1, ref, nout, NULL), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		cr_assert_eq(cm->vals[value_index(m, "p")].nhwc, variant != 2, "variant %d: the pooled map's layout",
			     variant);
		cr_assert_eq(cm->vals[value_index(m, "r")].nhwc, variant != 2, "variant %d: the conv output", variant);
		cr_assert_eq(onnx_compiled_run(cm, &x, 1, y, nout, NULL), 0, "run: %s", onnx_compiled_error(cm));
		for (unsigned o = 0; o < nout; o++) {
			expect_equal_close(&y[o], &ref[o]);
			onnx_tensor_release(&y[o]);
			onnx_tensor_release(&ref[o]);
		}
		onnx_compiled_free(cm);
		onnx_model_free(m);
	}
	onnx_tensor_release(&x);
}

/* x[1,16,14,14] -> Conv1x1(32)+bias -> Relu -> depthwise Conv3x3(32)+bias -> Relu (d) -> a
 * squeeze-and-excite gate: GlobalAveragePool -> Conv1x1(8)+bias -> Relu -> Conv1x1(32)+bias ->
 * HardSigmoid, or Sigmoid (s) -> Mul(d, s), or Mul(s, d) (m) -> [Div by the scalar 2 (h)] ->
 * Conv1x1(16) (y): a MobileNetV3 / EfficientNet block. */
static struct onnx_model *se_model(int variant)
{
	static const int64_t w1d[4] = { 32, 16, 1, 1 }, wdd[4] = { 32, 1, 3, 3 }, w2d[4] = { 8, 32, 1, 1 };
	static const int64_t w3d[4] = { 32, 8, 1, 1 }, w4d[4] = { 16, 32, 1, 1 }, b32[1] = { 32 }, b8[1] = { 8 };
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	float two = 2;
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w1", 4, w1d);
	init_rand(b, "b1", 1, b32);
	init_rand(b, "wd", 4, wdd);
	init_rand(b, "bd", 1, b32);
	init_rand(b, "w2", 4, w2d);
	init_rand(b, "b2", 1, b8);
	init_rand(b, "w3", 4, w3d);
	init_rand(b, "b3", 1, b32);
	init_rand(b, "w4", 4, w4d);
	mb_init(b, "two", ONNX_FLOAT, 0, NULL, &two);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w1,b1", "e");
	mb_node(b, "Relu", "e", "er");
	n = mb_node(b, "Conv", "er,wd,bd", "dc");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_i(b, n, "group", 32);
	mb_node(b, "Relu", "dc", "d");
	mb_node(b, "GlobalAveragePool", "d", "gp");
	mb_node(b, "Conv", "gp,w2,b2", "q1");
	mb_node(b, "Relu", "q1", "q1r");
	mb_node(b, "Conv", "q1r,w3,b3", "q2");
	mb_node(b, variant ? "Sigmoid" : "HardSigmoid", "q2", "s");
	mb_node(b, "Mul", variant ? "s,d" : "d,s", "m");
	if (variant) {
		mb_node(b, "Div", "m,two", "h");
		mb_node(b, "Conv", "h,w4", "y");
	} else {
		mb_node(b, "Conv", "m,w4", "y");
	}
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* A squeeze-and-excite Mul of the block's map by its per-channel gate ([N,C,1,1]: the same bytes in
 * both layouts) stays NHWC on the vector units, and with it the depthwise convolution before it (a
 * regression: only equally shaped element-wise operands were taken, so every SE block ran NCHW, its
 * depthwise convolution up to 500x slower); so does a Div by a scalar constant after it.  The result
 * is the CPU reference's, in fewer cycles than the all-NCHW plan. */
Test(onnx_compile, squeeze_excite_mul_keeps_the_block_nhwc)
{
	static const int64_t xd[4] = { 1, 16, 14, 14 };

	for (int variant = 0; variant < 2; variant++) {
		struct onnx_model *m = se_model(variant);
		struct onnx_compiled *cm = NULL;
		struct onnx_tensor x, y, ref;
		char err[512] = "";
		uint64_t nhwc, nchw;
		bool mul_on_device = false;

		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = frand();
		cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		for (unsigned i = 0; i < cm->n_steps; i++)
			if (cm->steps[i].out == value_index(m, "m"))
				mul_on_device = cm->steps[i].kind == CS_ELT;
		cr_assert(mul_on_device, "variant %d: the Mul is not a device element-wise step", variant);
		/* the depthwise convolution writes d (its Relu fused) */
		cr_assert_eq(cm->vals[value_index(m, "d")].nhwc, 1, "variant %d: the depthwise output went NCHW",
			     variant);
		cr_assert_eq(cm->vals[value_index(m, "m")].nhwc, 1, "variant %d: the SE Mul went NCHW", variant);
		if (variant)
			cr_assert_eq(cm->vals[value_index(m, "h")].nhwc, 1, "variant 1: the Div by 2 went NCHW");
		cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
		expect_equal_close(&y, &ref);
		onnx_tensor_release(&y);
		onnx_compiled_free(cm);
		nhwc = run_cycles(m, 0, &x, &ref);
		nchw = run_cycles(m, ONNX_COMPILE_NCHW, &x, &ref);
		cr_assert_lt(nhwc, nchw, "variant %d: NHWC plan %llu cycles, NCHW plan %llu", variant,
			     (unsigned long long)nhwc, (unsigned long long)nchw);
		onnx_tensor_release(&ref);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* One weight tensor read by a convolution on an NHWC input (the graph input) and by one on an NCHW
 * input (behind a view, which reads NCHW): the NHWC one gets a repacked OHWI copy, the other keeps
 * the OIHW weights. */
Test(onnx_compile, shared_weights_nhwc_and_nchw_convolutions)
{
	static const int64_t wd[4] = { 4, 4, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor x, ref;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w", 4, wd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "c1");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Flatten", "c1", "f");
	mb_node(b, "Sigmoid", "f", "s");
	mb_node(b, "Reshape", "s,shape", "r");
	{
		static const int64_t sd[1] = { 4 };
		static const int64_t shape[4] = { 1, 4, 8, 8 };

		mb_init(b, "shape", ONNX_INT64, 1, sd, shape);
	}
	n = mb_node(b, "Conv", "r,w", "y");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	input_x(&x);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	run_cycles(m, 0, &x, &ref);
	run_cycles(m, ONNX_COMPILE_NCHW, &x, &ref);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- compiled-model files ------------------------------------------------------------------- */

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	cr_assert(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n);
	cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* Compile the residual model, save it, return the file's bytes. */
static uint8_t *saved_file(struct onnx_model *m, const struct onnx_tensor *x, size_t *len)
{
	struct onnx_compiled *cm = NULL;
	char err[512] = "", path[] = "/tmp/tnpu-cm-XXXXXX";
	int fd = mkstemp(path);
	uint8_t *p;

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(onnx_compile(m, dev, x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	onnx_compiled_free(cm);
	p = slurp(path, len);
	unlink(path);
	return p;
}

/* The offset of the first value record: after the 104-byte header and the inputs section (version 4:
 * u32 load_flags, u32 n_shapes, 72 bytes a shape). */
static size_t records_at(const uint8_t *p)
{
	uint32_t n = (uint32_t)p[108] | (uint32_t)p[109] << 8 | (uint32_t)p[110] << 16 | (uint32_t)p[111] << 24;

	return 104 + 8 + (size_t)n * 72;
}

static void fix_crc(uint8_t *p, size_t len)
{
	uint32_t c = (uint32_t)crc32(0, p, (uInt)(len - 4));

	p[len - 4] = (uint8_t)c, p[len - 3] = (uint8_t)(c >> 8), p[len - 2] = (uint8_t)(c >> 16);
	p[len - 1] = (uint8_t)(c >> 24);
}

static int load(struct onnx_model *m, struct accel_dev *d, const struct onnx_tensor *x, const uint8_t *p, size_t len,
		char *err, size_t errlen)
{
	struct onnx_compiled *cm = NULL;
	int ret = onnx_compiled_load_mem(m, d, x, 1, p, len, &cm, err, errlen);

	cr_assert(ret ? cm == NULL : cm != NULL);
	onnx_compiled_free(cm);
	return ret;
}

Test(onnx_compile, save_load_round_trip)
{
	struct onnx_model *m = residual_model();
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y, ref;
	char err[512] = "";
	size_t len;
	uint8_t *p;

	input_x(&x);
	p = saved_file(m, &x, &len);
	cr_assert_eq(crc32(0, p, (uInt)(len - 4)),
		     (uLong)(p[len - 4] | p[len - 3] << 8 | p[len - 2] << 16 | (uint32_t)p[len - 1] << 24),
		     "the trailer is the IEEE CRC-32 of the file");
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compiled_load_mem(m, dev, &x, 1, p, len, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
	free(p);
}

Test(onnx_compile, bad_files_rejected_with_the_field)
{
	struct onnx_model *m = residual_model();
	struct accel_dev *small = NULL;
	struct onnx_tensor x, x2;
	static const int64_t xd[4] = { 1, 4, 16, 16 };
	char err[512];
	size_t len;
	uint8_t *p, *q;

	input_x(&x);
	p = saved_file(m, &x, &len);
	q = malloc(len);

	/* truncated anywhere: never loads */
	for (size_t cut = 0; cut < len; cut += cut < 400 ? 1 : 997) {
		err[0] = 0;
		cr_assert_lt(load(m, dev, &x, p, cut, err, sizeof(err)), 0, "truncated at %zu", cut);
		cr_assert(err[0], "a message for the cut at %zu", cut);
	}
	/* magic */
	memcpy(q, p, len);
	q[0] = 'X';
	cr_assert_eq(load(m, dev, &x, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "'magic'"), "%s", err);
	/* version */
	memcpy(q, p, len);
	q[8] = 9;
	fix_crc(q, len);
	cr_assert_eq(load(m, dev, &x, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "'version'"), "%s", err);
	/* a flipped bit anywhere: the CRC */
	memcpy(q, p, len);
	q[len / 2] ^= 0x10;
	cr_assert_eq(load(m, dev, &x, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "'crc'"), "%s", err);
	/* a consistent CRC over a corrupted record: the field check (first value record's loc) */
	memcpy(q, p, len);
	q[records_at(q) + 80] = 7;
	fix_crc(q, len);
	cr_assert_eq(load(m, dev, &x, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'loc'"), "%s", err);
	/* a huge weight size */
	memcpy(q, p, len);
	q[8 + 4 + 32 + 8 + 8 + 8 + 8 + 7] = 0x7f;
	fix_crc(q, len);
	cr_assert_eq(load(m, dev, &x, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "weight_bytes"), "%s", err);
	/* other input shapes */
	cr_assert_eq(onnx_tensor_alloc(&x2, ONNX_FLOAT, 4, xd), 0);
	cr_assert_eq(load(m, dev, &x2, p, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "'model_digest'"), "%s", err);
	/* another device geometry */
	cr_assert_eq(accel_open("sim:rows=2,cols=2", &small), 0);
	cr_assert_eq(load(m, small, &x, p, len, err, sizeof(err)), -ENODEV);
	cr_assert(strstr(err, "'geometry."), "%s", err);
	accel_close(small);
	free(q);
	free(p);
	onnx_tensor_release(&x2);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* The ISA 2 steps: x[2,3,4,5] -> Transpose(0,2,1,3) -> Div(by a constant row) -> Sigmoid ->
 * HardSwish -> Softmax(last axis) -> LayerNormalization(gamma, beta) -> Tanh: all device steps of one
 * chain, within the default tolerance of the CPU reference (vector-unit fp32 functions <= 6e-7). */
Test(onnx_compile, vector_unit_steps_match_cpu_reference)
{
	static const int64_t xd[4] = { 2, 3, 4, 5 }, rd[1] = { 5 }, perm[4] = { 0, 2, 1, 3 };
	struct mb *b = mb_new(17);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_info ci;
	struct onnx_tensor x, y, ref;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "d", 1, rd);
	init_rand(b, "gamma", 1, rd);
	init_rand(b, "beta", 1, rd);
	mb_input(b, "x");
	n = mb_node(b, "Transpose", "x", "t");
	mb_attr_ints(b, n, "perm", perm, 4);
	mb_node(b, "Div", "t,d", "q");
	mb_node(b, "Sigmoid", "q", "s");
	mb_node(b, "HardSwish", "s", "h");
	mb_node(b, "Softmax", "h", "sm");
	mb_node(b, "LayerNormalization", "sm,gamma,beta", "ln");
	mb_node(b, "Tanh", "ln", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = 3.0f * frand();
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0, "%s", onnx_model_error(m));
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	onnx_compiled_info(cm, &ci);
	cr_assert_eq(ci.device_steps, 7, "device steps %u", ci.device_steps);
	cr_assert_eq(ci.host_steps, 0);
	cr_assert_eq(ci.chains, 1);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(y.ndim, 4);
	cr_assert_eq(y.dims[1], 4);
	cr_assert_eq(y.dims[2], 3);
	expect_equal_close(&y, &ref);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- regressions found by the loader's fuzzer (onnx/fuzz/fuzz_load.c) -------------------------- */

/* A node without its required inputs: an error naming it on the CPU reference, node by node and
 * compiled, never a read of value 0 or of a NULL input (the spare input slots were 0, not absent). */
Test(onnx_compile, missing_required_inputs_are_errors)
{
	static const int64_t xd[2] = { 2, 3 };
	/* the Relu without input also reached its kernel through the load-time folding */
	static const char *const ops[] = { "Softmax", "MatMul", "MaxPool", "Add", "Relu" };
	struct onnx_tensor x, y;

	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 2, xd), 0);
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct mb *b = mb_new(13);
		struct onnx_model *m = NULL;
		struct onnx_compiled *cm = NULL;
		char err[512] = "";
		const uint8_t *buf;
		size_t len;

		mb_input_typed(b, "x", ONNX_FLOAT, 2, xd);
		mb_node(b, "Relu", "x", "r");
		mb_node(b, ops[i], i == 0 || i == 2 || i == 4 ? "" : "r", "y");
		mb_output(b, "y");
		buf = mb_pack(b, &len);
		cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s: load: %s", ops[i], err);
		mb_free(b);
		cr_assert_eq(onnx_run(m, NULL, &x, 1, &y, 1, NULL), -EINVAL, "%s", ops[i]);
		cr_assert(strstr(onnx_model_error(m), "is missing"), "%s: %s", ops[i], onnx_model_error(m));
		cr_assert_eq(onnx_run(m, dev, &x, 1, &y, 1, NULL), -EINVAL, "%s", ops[i]);
		cr_assert_neq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s", ops[i]);
		onnx_model_free(m);
	}
	onnx_tensor_release(&x);
}

/* Clip of an integer tensor without a max (the bound defaults to +FLT_MAX, which an int64 cannot
 * hold): saturating bounds, not undefined conversions. */
Test(onnx_compile, clip_int8_default_bound)
{
	static const int64_t xd[1] = { 5 };
	static const int8_t xv[5] = { -128, -3, 0, 4, 127 }, lo = -2;
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor x, y;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_init(b, "lo", ONNX_INT8, 0, NULL, &lo);
	mb_input_typed(b, "x", ONNX_INT8, 1, xd);
	mb_node(b, "Clip", "x,lo", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_INT8, 1, xd), 0);
	memcpy(x.data, xv, 5);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &y, 1, NULL), 0, "%s", onnx_model_error(m));
	/* numpy.clip([-128, -3, 0, 4, 127], -2, None) = [-2, -2, 0, 4, 127] */
	cr_assert_arr_eq(y.data, ((int8_t[]){ -2, -2, 0, 4, 127 }), 5);
	onnx_tensor_release(&y);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* Relu of a BOOL tensor: an error, not a read of 4 bytes per 1-byte element (found by fuzz_load). */
Test(onnx_compile, relu_of_bool_is_an_error)
{
	static const int64_t xd[1] = { 3 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_tensor x, y;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_input_typed(b, "x", ONNX_BOOL, 1, xd);
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_BOOL, 1, xd), 0);
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &y, 1, NULL), -EOPNOTSUPP);
	cr_assert_eq(onnx_run(m, dev, &x, 1, &y, 1, NULL), -EOPNOTSUPP);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- expansion + depthwise pairs (compile_fuse_pwdw.c) ------------------------------------- */

/* x[n,32,28,28] -> Conv1x1(192)+bias -> Clip(0,6) -> depthwise Conv3x3 stride s (+bias) -> Clip(0,6)
 * -> Conv1x1(32): a MobileNetV2 inverted residual without its skip. */
static struct onnx_model *pwdw_model(int64_t stride)
{
	static const int64_t w1d[4] = { 192, 32, 1, 1 }, w2d[4] = { 192, 1, 3, 3 }, w3d[4] = { 32, 192, 1, 1 };
	static const int64_t b1d[1] = { 192 }, pads[4] = { 1, 1, 1, 1 };
	const int64_t st[2] = { stride, stride };
	float lo = 0, hi = 6;
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w1", 4, w1d);
	init_rand(b, "b1", 1, b1d);
	init_rand(b, "w2", 4, w2d);
	init_rand(b, "b2", 1, b1d);
	init_rand(b, "w3", 4, w3d);
	mb_init(b, "lo", ONNX_FLOAT, 0, NULL, &lo);
	mb_init(b, "hi", ONNX_FLOAT, 0, NULL, &hi);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w1,b1", "e");
	mb_node(b, "Clip", "e,lo,hi", "er");
	n = mb_node(b, "Conv", "er,w2,b2", "d");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_attr_ints(b, n, "strides", st, 2);
	mb_attr_i(b, n, "group", 192);
	mb_node(b, "Clip", "d,lo,hi", "dr");
	mb_node(b, "Conv", "dr,w3", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* The expansion and its depthwise Conv are one accel_conv2d_pwdw step ("pwdw"; the depthwise node
 * "fused"), the CPU reference's result in fewer cycles than the two steps of ONNX_COMPILE_NO_PWDW;
 * through a compiled-model file too, whose reader checks the pair. */
Test(onnx_compile, expansion_and_depthwise_fuse_and_match_cpu_reference)
{
	for (int64_t stride = 1; stride <= 2; stride++) {
		static const int64_t xd[4] = { 2, 32, 28, 28 };
		struct onnx_model *m = pwdw_model(stride);
		struct onnx_compiled *cm = NULL;
		struct onnx_compiled_info ci;
		struct onnx_compiled_step s0, s2;
		struct onnx_tensor x, ref;
		char err[512] = "", path[] = "/tmp/tnpu-cm-XXXXXX";
		uint64_t fused, twojobs;
		size_t len;
		uint8_t *p;
		int fd;

		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = frand();
		cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		cr_assert_eq(onnx_compiled_step_info(cm, 0, &s0), 0);
		cr_assert_eq(onnx_compiled_step_info(cm, 2, &s2), 0);
		cr_assert_str_eq(s0.kind, "pwdw");
		cr_assert_str_eq(s2.kind, "fused");
		cr_assert(strstr(s2.reason, "accel_conv2d_pwdw"), "%s", s2.reason);
		cr_assert_eq(onnx_compiled_info(cm, &ci), 0);
		cr_assert_eq(ci.jobs_per_run, 2, "jobs %u", ci.jobs_per_run);
		cr_assert_eq(ci.device_steps, 2);
		/* saved, loaded and run: the pair survives the file */
		fd = mkstemp(path);
		cr_assert_geq(fd, 0);
		close(fd);
		cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
		onnx_compiled_free(cm);
		p = slurp(path, &len);
		unlink(path);
		cr_assert_eq(onnx_compiled_load_mem(m, dev, &x, 1, p, len, &cm, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_compiled_step_info(cm, 0, &s0), 0);
		cr_assert_str_eq(s0.kind, "pwdw");
		onnx_compiled_free(cm);
		{
			/* the first step record's pair field (bytes 500-503, before version 5's wq fields) naming
			 * itself: rejected */
			uint32_t nv = (uint32_t)p[52] | (uint32_t)p[53] << 8 | (uint32_t)p[54] << 16 | (uint32_t)p[55] << 24;
			size_t at = records_at(p) + (size_t)nv * 100 + 504 - 4;

			cr_assert_eq(p[at], 1, "step 0 pairs with step 1 (%u)", p[at]);
			p[at] = 0;
			fix_crc(p, len);
			cr_assert_eq(load(m, dev, &x, p, len, err, sizeof(err)), -EBADMSG);
			cr_assert(strstr(err, "field 'pair'"), "%s", err);
		}
		free(p);
		fused = run_cycles(m, 0, &x, &ref);
		twojobs = run_cycles(m, ONNX_COMPILE_NO_PWDW, &x, &ref);
		cr_assert_lt(fused, twojobs, "stride %lld: fused %llu cycles, two steps %llu", (long long)stride,
			     (unsigned long long)fused, (unsigned long long)twojobs);
		onnx_tensor_release(&ref);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* ONNX_COMPILE_NO_PWDW (and NO_FUSE) keep the two conv steps; a depthwise input another node reads
 * too is not fused. */
Test(onnx_compile, expansion_and_depthwise_fusion_conditions)
{
	static const int64_t xd[4] = { 1, 32, 14, 14 };
	struct onnx_model *m = pwdw_model(1);
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_step s0;
	struct onnx_tensor x;
	char err[512] = "";

	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (unsigned f = 0; f < 2; f++) {
		cr_assert_eq(onnx_compile(m, dev, &x, 1, f ? ONNX_COMPILE_NO_FUSE : ONNX_COMPILE_NO_PWDW, &cm, err,
					  sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_compiled_step_info(cm, 0, &s0), 0);
		cr_assert_str_eq(s0.kind, "conv");
		onnx_compiled_free(cm);
	}
	/* the all-NCHW plan: the one job needs NHWC tensors */
	cr_assert_eq(onnx_compile(m, dev, &x, 1, ONNX_COMPILE_NCHW, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_step_info(cm, 0, &s0), 0);
	cr_assert_str_eq(s0.kind, "conv");
	onnx_compiled_free(cm);
	onnx_tensor_release(&x);
	onnx_model_free(m);
	{
		/* the expansion's output is also a graph output: two steps */
		static const int64_t w1d[4] = { 64, 8, 1, 1 }, w2d[4] = { 64, 1, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
		static const int64_t x2d[4] = { 1, 8, 10, 10 };
		struct mb *b = mb_new(13);
		const uint8_t *buf;
		size_t len;
		Onnx__NodeProto *n;

		init_rand(b, "w1", 4, w1d);
		init_rand(b, "w2", 4, w2d);
		mb_input(b, "x");
		mb_node(b, "Conv", "x,w1", "e");
		n = mb_node(b, "Conv", "e,w2", "y");
		mb_attr_ints(b, n, "pads", pads, 4);
		mb_attr_i(b, n, "group", 64);
		mb_output(b, "y");
		mb_output(b, "e");
		buf = mb_pack(b, &len);
		cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
		mb_free(b);
		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, x2d), 0);
		cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_compiled_step_info(cm, 0, &s0), 0);
		cr_assert_str_eq(s0.kind, "conv");
		onnx_compiled_free(cm);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* ---- summed counters (issue #27 B6) ---------------------------------------------------------- */

/* x -> op -> y, x of input_x's shape. */
static struct onnx_model *one_op_model(const char *op)
{
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_input(b, "x");
	n = mb_node(b, op, "x", "y");
	if (!strcmp(op, "MaxPool")) {
		static const int64_t k2[2] = { 2, 2 };

		mb_attr_ints(b, n, "kernel_shape", k2, 2);
		mb_attr_ints(b, n, "strides", k2, 2);
	}
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* A Sigmoid-only model runs on the vector units: the compiled run's stats and its node's profile report
 * the vector-unit counters (they were summed field by field and lost vec_ops/vec_cycles). */
Test(onnx_compile, vector_unit_counters_reach_the_compiled_run_stats)
{
	struct onnx_model *m = one_op_model("Sigmoid");
	struct onnx_compiled *cm = NULL;
	struct onnx_node_profile prof[1];
	struct onnx_tensor x, y;
	struct onnx_run_stats st;
	char err[512] = "";

	cr_assert_eq(onnx_model_n_graph_nodes(m), 1);
	input_x(&x);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run_profile(cm, &x, 1, &y, 1, &st, prof), 0, "%s", onnx_compiled_error(cm));
	cr_assert(prof[0].ran && prof[0].on_device, "the Sigmoid runs on the device");
	cr_assert_gt(st.counters.vec_ops, 0, "vec_ops %llu", (unsigned long long)st.counters.vec_ops);
	cr_assert_gt(st.counters.vec_cycles, 0);
	cr_assert_eq(prof[0].counters.vec_ops, st.counters.vec_ops);
	cr_assert_eq(prof[0].counters.vec_cycles, st.counters.vec_cycles);
	onnx_tensor_release(&y);
	onnx_tensor_release(&x);
	onnx_compiled_free(cm);
	onnx_model_free(m);
}

/* The same through the interpreter (onnx_run_profile): a MaxPool lowered to accel_pool2d, which runs on
 * the vector units. */
Test(onnx_compile, vector_unit_counters_reach_the_interpreted_run_stats)
{
	struct onnx_model *m = one_op_model("MaxPool");
	struct onnx_node_profile prof[1];
	struct onnx_tensor x, y;
	struct onnx_run_stats st;

	input_x(&x);
	cr_assert_eq(onnx_run_profile(m, dev, &x, 1, &y, 1, &st, prof), 0, "%s", onnx_model_error(m));
	cr_assert_eq(st.accel_nodes, 1, "the MaxPool runs on the device");
	cr_assert_gt(st.counters.vec_ops, 0, "vec_ops %llu", (unsigned long long)st.counters.vec_ops);
	cr_assert_gt(st.counters.vec_cycles, 0);
	cr_assert_eq(prof[0].counters.vec_ops, st.counters.vec_ops);
	cr_assert_eq(prof[0].counters.vec_cycles, st.counters.vec_cycles);
	cr_assert_eq(prof[0].counters.total_cycles, st.counters.total_cycles);
	onnx_tensor_release(&y);
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- invalid tensors on the device path (issue #27 B5) -------------------------------------- */

/* A Conv whose input has batch 0 cannot be described to libaccel (accel_tensor_4d rejects a zero
 * dimension): the device path reports that, naming the node, instead of handing accel_conv2d an
 * uninitialised tensor.  Interpreter and compiler both. */
Test(onnx_compile, batch_0_conv_on_the_device_is_a_clear_error)
{
	static const int64_t wd[4] = { 4, 4, 3, 3 }, pads[4] = { 1, 1, 1, 1 }, xd[4] = { 0, 4, 8, 8 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;
	int ret;

	init_rand(b, "w", 4, wd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "y");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	ret = onnx_run(m, dev, &x, 1, &y, 1, NULL);
	cr_assert_eq(ret, -EINVAL, "interpreter: %d (%s)", ret, onnx_model_error(m));
	cr_assert(strstr(onnx_model_error(m), "Conv") && strstr(onnx_model_error(m), "must be >= 1"),
		  "the message names the node and the reason: %s", onnx_model_error(m));
	ret = onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err));
	if (!ret) {
		ret = onnx_compiled_run(cm, &x, 1, &y, 1, NULL);
		cr_assert_eq(ret, -EINVAL, "compiled run: %d (%s)", ret, onnx_compiled_error(cm));
		cr_assert(strstr(onnx_compiled_error(cm), "Conv") && strstr(onnx_compiled_error(cm), "must be >= 1"),
			  "the message names the node and the reason: %s", onnx_compiled_error(cm));
		onnx_compiled_free(cm);
	} else {
		cr_assert_eq(ret, -EINVAL, "compile: %d (%s)", ret, err);
	}
	onnx_tensor_release(&x);
	onnx_model_free(m);
}

/* ---- the decomposed layer_norm (torch.onnx before opset 17) on the device ---------------------- */

/*
 * ReduceMean(axes) → Sub → Pow 2 → ReduceMean(axes) → Add eps → Sqrt → Div → Mul W → Add B over the
 * last `k` axes of x[2,3,4,8], compiled for the sim device, against the definition evaluated here in
 * double.  onnx_fuse_layernorm() makes it one LayerNormalization node whose epsilon and axis live in the
 * node, not in its (ReduceMean's) attributes: a device lowering that read the attributes ran ConvNeXt's
 * eps = 1e-6 as the default 1e-5 (a 6e-5 error at the output's scale) and normalised over the last axis
 * only.  eps is large here so a wrong one is far outside the tolerance.
 */
static void decomposed_layer_norm_case(unsigned k, float eps)
{
	static const int64_t xd[4] = { 2, 3, 4, 8 };
	int64_t ax[2] = { -2, -1 }, wd[1] = { xd[3] }, one = 1;
	size_t inner = k == 2 ? 32 : 8;	/* W and B: 1-D over the last axis, broadcast (what the fusion takes) */
	float two = 2, w[8], bias[8];
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor x, y;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	for (size_t j = 0; j < 8; j++) {
		w[j] = 0.5f + frand();
		bias[j] = frand();
	}
	mb_init(b, "W", ONNX_FLOAT, 1, wd, w);
	mb_init(b, "B", ONNX_FLOAT, 1, wd, bias);
	mb_init(b, "two", ONNX_FLOAT, 0, &one, &two);
	mb_init(b, "eps", ONNX_FLOAT, 0, &one, &eps);
	mb_input(b, "x");
	n = mb_node(b, "ReduceMean", "x", "m");
	mb_attr_ints(b, n, "axes", k == 2 ? ax : &ax[1], k);
	mb_node(b, "Sub", "x,m", "d");
	mb_node(b, "Pow", "d,two", "p");
	n = mb_node(b, "ReduceMean", "p", "v");
	mb_attr_ints(b, n, "axes", k == 2 ? ax : &ax[1], k);
	mb_node(b, "Add", "v,eps", "ve");
	mb_node(b, "Sqrt", "ve", "s");
	mb_node(b, "Div", "d,s", "q");
	mb_node(b, "Mul", "q,W", "qw");
	mb_node(b, "Add", "qw,B", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = 0.1f * frand();	/* variance ~1e-3: eps matters */
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(y.count, x.count);
	for (size_t r = 0; r < x.count / inner; r++) {
		const float *xr = (const float *)x.data + r * inner, *yr = (const float *)y.data + r * inner;
		double mu = 0, var = 0;

		for (size_t j = 0; j < inner; j++)
			mu += xr[j] / (double)inner;
		for (size_t j = 0; j < inner; j++)
			var += (xr[j] - mu) * (xr[j] - mu) / (double)inner;
		for (size_t j = 0; j < inner; j++) {
			double want = (xr[j] - mu) / sqrt(var + (double)eps) * w[j % 8] + bias[j % 8];

			cr_assert(fabs(yr[j] - want) <= 1e-5 * (1 + fabs(want)), "k %u eps %g: y[%zu] = %.9g, expected %.9g", k,
				  (double)eps, r * inner + j, (double)yr[j], want);
		}
	}
	onnx_tensor_release(&y);
	onnx_tensor_release(&x);
	onnx_compiled_free(cm);
	onnx_model_free(m);
}

Test(onnx_compile, decomposed_layer_norm_keeps_its_epsilon_on_the_device)
{
	decomposed_layer_norm_case(1, 1e-6f);
	decomposed_layer_norm_case(1, 0.5f);
}

Test(onnx_compile, decomposed_layer_norm_over_two_axes_normalises_both)
{
	decomposed_layer_norm_case(2, 1e-3f);
}

/* ---- #27 B3: placement asks libaccel (accel_op_supported) ----------------------------------- */

/* x -> Conv(w, b; strides, pads) -> Relu -> y, x of shape xd, w of shape wd. */
static struct onnx_model *one_conv_model(const int64_t *wd, int64_t stride, int64_t pad)
{
	const int64_t bd[1] = { wd[0] }, st[2] = { stride, stride }, pads[4] = { pad, pad, pad, pad };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	init_rand(b, "w", 4, wd);
	init_rand(b, "b", 1, bd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w,b", "c");
	mb_attr_ints(b, n, "strides", st, 2);
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

/* The compiled path places a Conv the device refuses on the host, says libaccel's reason, and runs it
 * correctly (before #27 B3 it lowered it and failed: "stride, dilation and padding must be <= 255"). */
static void refused_conv_runs_on_the_host(const int64_t *xd, const int64_t *wd, int64_t stride, int64_t pad,
					  const char *why)
{
	struct onnx_model *m = one_conv_model(wd, stride, pad);
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_step cs;
	struct onnx_tensor x, y, ref;
	char err[512] = "";
	bool found = false;

	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = frand();
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	for (unsigned i = 0; i < m->n_nodes; i++) {
		cr_assert_eq(onnx_compiled_step_info(cm, i, &cs), 0);
		if (strcmp(cs.op, "Conv"))
			continue;
		found = true;
		cr_assert(!cs.device, "the refused Conv is a device step");
		cr_assert_str_eq(cs.kind, "host");
		cr_assert(cs.reason && strstr(cs.reason, why), "reason '%s' does not say '%s'", cs.reason, why);
		cr_assert_eq(cs.ran_on_device, 0, "the node-by-node kernel did not fall back to the host");
	}
	cr_assert(found);
	onnx_tensor_release(&y);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_compiled_free(cm);
	onnx_model_free(m);
}

Test(onnx_compile, conv_with_stride_300_runs_on_the_host_with_libaccels_reason)
{
	static const int64_t xd[4] = { 1, 2, 605, 605 }, wd[4] = { 3, 2, 3, 3 };

	refused_conv_runs_on_the_host(xd, wd, 300, 1, "stride_h 300 > 255");
}

Test(onnx_compile, conv_with_a_plane_above_65535_runs_on_the_host_with_libaccels_reason)
{
	static const int64_t xd[4] = { 1, 1, 1, 70000 }, wd[4] = { 2, 1, 1, 3 };

	refused_conv_runs_on_the_host(xd, wd, 1, 0, "input W 70000 > 65535");
}

/* An AveragePool is a depthwise convolution on the device: a window and stride of 300 are past its 8-bit
 * fields.  The compiled path places it on the host with libaccel's reason (before #27 B3 it failed). */
Test(onnx_compile, average_pool_with_stride_300_runs_on_the_host_with_libaccels_reason)
{
	static const int64_t xd[4] = { 1, 2, 600, 600 }, k[2] = { 300, 300 };
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	struct onnx_compiled_step cs;
	struct onnx_tensor x, y, ref;
	Onnx__NodeProto *n;
	char err[512] = "";
	const uint8_t *buf;
	size_t len;

	mb_input(b, "x");
	n = mb_node(b, "AveragePool", "x", "y");
	mb_attr_ints(b, n, "kernel_shape", k, 2);
	mb_attr_ints(b, n, "strides", k, 2);
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = frand();
	cr_assert_eq(onnx_run(m, NULL, &x, 1, &ref, 1, NULL), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "run: %s", onnx_compiled_error(cm));
	expect_equal_close(&y, &ref);
	cr_assert_eq(onnx_compiled_step_info(cm, 0, &cs), 0);
	cr_assert(!cs.device);
	cr_assert(cs.reason && strstr(cs.reason, "stride_h 300 > 255"), "reason '%s'", cs.reason);
	cr_assert_eq(cs.ran_on_device, 0);
	onnx_tensor_release(&y);
	onnx_tensor_release(&ref);
	onnx_tensor_release(&x);
	onnx_compiled_free(cm);
	onnx_model_free(m);
}
