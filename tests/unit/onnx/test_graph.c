/* SPDX-License-Identifier: MIT */
/*
 * The graph's indexes and verifier (graph_index.c, issue #27 deliverable 6): names resolve through the
 * hash table, the use-def index lists every reader and writer and follows the fusions, and the verifier
 * names the value a broken graph gets wrong.  meson's test setups set ONNX_VERIFY=1 (tests/unit/meson.build),
 * so every load here is also checked after each load-time pass.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../onnx/src/internal.h"
#include "builder.h"

static struct onnx_model *load(struct mb *b, unsigned flags, int *ret, char *err, size_t errlen)
{
	struct onnx_model *m = NULL;
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);

	*ret = onnx_model_load_mem(buf, len, flags, &m, err, errlen);
	return m;
}

/*
 * v0 = Relu(x), v1 = Add(v0, c), v2 = Relu(v1), ... : n nodes (the builder holds 64, so the nodes are
 * made here and packed into the builder's model once unpacked again).
 */
static uint8_t *chain_model(unsigned n, size_t *len)
{
	static const float c = 0.25f;
	static const int64_t cd[1] = { 1 };
	struct mb *b = mb_new(13);
	Onnx__NodeProto *nodes = calloc(n, sizeof(*nodes)), **np = calloc(n, sizeof(*np));
	char (*names)[16] = calloc(n, sizeof(*names));
	char **in = calloc(2 * (size_t)n, sizeof(*in)), **out = calloc(n, sizeof(*out));
	Onnx__ModelProto *pm;
	size_t l;
	const uint8_t *buf;
	uint8_t *packed;

	mb_init(b, "c", ONNX_FLOAT, 1, cd, &c);
	mb_input(b, "x");
	mb_output(b, "v0");
	buf = mb_pack(b, &l);
	pm = onnx__model_proto__unpack(NULL, l, buf);
	cr_assert(pm && nodes && np && names && in && out);
	for (unsigned i = 0; i < n; i++) {
		onnx__node_proto__init(&nodes[i]);
		snprintf(names[i], sizeof(names[i]), "v%u", i);
		nodes[i].op_type = i % 2 ? "Add" : "Relu";
		in[2 * i] = i ? names[i - 1] : "x";
		in[2 * i + 1] = "c";
		nodes[i].input = &in[2 * i];
		nodes[i].n_input = i % 2 ? 2 : 1;
		out[i] = names[i];
		nodes[i].output = &out[i];
		nodes[i].n_output = 1;
		np[i] = &nodes[i];
	}
	{
		Onnx__NodeProto **old_nodes = pm->graph->node;
		size_t old_n = pm->graph->n_node;
		char *old_out = pm->graph->output[0]->name;

		pm->graph->node = np;
		pm->graph->n_node = n;
		pm->graph->output[0]->name = names[n - 1];
		*len = onnx__model_proto__get_packed_size(pm);
		packed = malloc(*len);
		onnx__model_proto__pack(pm, packed);
		pm->graph->node = old_nodes;
		pm->graph->n_node = old_n;
		pm->graph->output[0]->name = old_out;
	}
	onnx__model_proto__free_unpacked(pm, NULL);
	free(nodes);
	free(np);
	free(names);
	free(in);
	free(out);
	mb_free(b);
	return packed;
}

Test(onnx_graph, loads_a_20000_node_chain_and_runs_it_on_the_cpu_reference)
{
	enum { N = 20000 };
	size_t len;
	uint8_t *buf = chain_model(N, &len);
	struct onnx_model *m = NULL;
	struct onnx_tensor in = { 0 }, out = { 0 };
	static const int64_t xd[2] = { 1, 4 };
	static const float xv[4] = { -3.0f, -0.5f, 0.0f, 2.0f };
	char err[256] = "";
	int ret = onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err));
	unsigned n_p, n_c;
	const int *p;

	free(buf);
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_eq(onnx_model_n_nodes(m), N, "nothing folds in a Relu/Add chain");
	cr_expect_str_eq(onnx_model_output_name(m, 0), "v19999");
	for (unsigned i = 1; i < N; i++) {
		const struct onnx_node *n = &m->nodes[i];

		if (n->in[0] != m->nodes[i - 1].out[0] || (i % 2 && strcmp(m->vals[n->in[1]].name, "c")))
			cr_assert_fail("node %u does not read node %u's output (and c)", i, i - 1);
		p = onnx_producers(m, n->out[0], &n_p);
		if (n_p != 1 || p[0] != (int)i)
			cr_assert_fail("value v%u: %u producers, the first %d", i, n_p, n_p ? p[0] : -1);
	}
	onnx_consumers(m, onnx_value_find(m, "c"), &n_c);
	cr_expect_eq(n_c, N / 2, "every Add reads c");
	cr_expect_eq(onnx_value_find(m, "v12345"), m->nodes[12345].out[0]);
	cr_expect_eq(onnx_value_find(m, "v20000"), -1);
	cr_expect_eq(onnx_graph_verify(m, "the test"), 0, "%s", onnx_model_error(m));

	cr_assert_eq(onnx_tensor_alloc(&in, ONNX_FLOAT, 2, xd), 0);
	memcpy(in.data, xv, sizeof(xv));
	ret = onnx_run(m, NULL, &in, 1, &out, 1, NULL);
	cr_assert_eq(ret, 0, "%s", onnx_model_error(m));
	for (int k = 0; k < 4; k++) {
		float want = xv[k];

		for (unsigned i = 0; i < N; i++)
			want = i % 2 ? want + 0.25f : (want > 0 ? want : 0);
		cr_expect_eq(((const float *)out.data)[k], want, "element %d: %g, want %g", k,
			     ((const float *)out.data)[k], want);
	}
	onnx_tensor_release(&in);
	onnx_tensor_release(&out);
	onnx_model_free(m);
}

static struct mb *relu_chain3(void)
{
	struct mb *b = mb_new(13);

	mb_input(b, "x");
	mb_node(b, "Relu", "x", "a");
	mb_node(b, "Relu", "a", "b");
	mb_node(b, "Relu", "b", "y");
	mb_output(b, "y");
	return b;
}

Test(onnx_graph, loader_rejects_a_value_produced_twice_naming_it)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	int ret;
	struct onnx_model *m;

	mb_input(b, "x");
	mb_node(b, "Relu", "x", "dup");
	mb_node(b, "Sigmoid", "x", "dup");
	mb_output(b, "dup");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_null(m);
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "'dup'") && strstr(err, "produced twice"), "message: %s", err);
	mb_free(b);
}

/* opt-in in every build type (a debugoptimized build leaves NDEBUG unset): it doubles a large load */
Test(onnx_graph, verifier_runs_only_when_ONNX_VERIFY_asks_for_it)
{
	/* criterion runs each test in its own process: the environment is this test's */
	cr_assert_eq(unsetenv("ONNX_VERIFY"), 0);
	cr_expect(!onnx_graph_verify_enabled(), "unset: off");
	setenv("ONNX_VERIFY", "", 1);
	cr_expect(!onnx_graph_verify_enabled(), "empty: off");
	setenv("ONNX_VERIFY", "0", 1);
	cr_expect(!onnx_graph_verify_enabled(), "0: off");
	setenv("ONNX_VERIFY", "1", 1);
	cr_expect(onnx_graph_verify_enabled(), "1: on");
}

Test(onnx_graph, verifier_rejects_a_value_produced_twice_naming_it)
{
	char err[256] = "";
	struct mb *b = relu_chain3();
	int ret;
	struct onnx_model *m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "%s", err);
	cr_assert_eq(onnx_graph_verify(m, "the load"), 0, "%s", onnx_model_error(m));
	/* the second Relu now also writes 'a' (through the index: only the double producer is wrong) */
	cr_assert_eq(onnx_node_set_out(m, &m->nodes[1], 0, m->nodes[0].out[0]), 0);
	cr_expect_eq(onnx_graph_verify(m, "a broken pass"), -EINVAL);
	cr_expect(strstr(m->err, "'a'") && strstr(m->err, "produced twice") && strstr(m->err, "a broken pass"),
		  "message: %s", m->err);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_graph, verifier_rejects_a_read_before_the_write_naming_the_value)
{
	char err[256] = "";
	struct mb *b = relu_chain3();
	int ret;
	struct onnx_model *m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));
	int bv;

	cr_assert_eq(ret, 0, "%s", err);
	bv = onnx_value_find(m, "b");
	cr_assert_eq(onnx_node_set_inputs(m, &m->nodes[0], 1, &bv), 0);
	cr_expect_eq(onnx_graph_verify(m, "a broken pass"), -EINVAL);
	cr_expect(strstr(m->err, "'b'") && strstr(m->err, "before"), "message: %s", m->err);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_graph, verifier_rejects_an_index_a_pass_bypassed)
{
	char err[256] = "";
	struct mb *b = relu_chain3();
	int ret;
	struct onnx_model *m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "%s", err);
	m->nodes[2].in[0] = onnx_value_find(m, "x");	/* not through onnx_node_set_inputs */
	cr_expect_eq(onnx_graph_verify(m, "a broken pass"), -EINVAL);
	cr_expect(strstr(m->err, "use-def index"), "message: %s", m->err);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_graph, use_def_index_follows_a_fusion)
{
	char err[256] = "";
	struct mb *b = mb_new(13);
	static const float w[1] = { 2.0f };
	static const int64_t wd[4] = { 1, 1, 1, 1 };
	int ret, y, c;
	struct onnx_model *m;
	unsigned n_p, n_c;
	const int *p;

	mb_init(b, "w", ONNX_FLOAT, 4, wd, w);
	mb_input(b, "x");
	mb_node(b, "Conv", "x,w", "c");
	mb_node(b, "Relu", "c", "y");
	mb_output(b, "y");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_assert(m->nodes[0].fused_relu && m->nodes[1].folded);
	y = onnx_value_find(m, "y");
	c = onnx_value_find(m, "c");
	p = onnx_producers(m, y, &n_p);
	cr_expect_eq(n_p, 2, "the Conv and the folded Relu write y");
	cr_expect(n_p == 2 && (p[0] == 0 || p[1] == 0));
	onnx_producers(m, c, &n_p);
	cr_expect_eq(n_p, 0, "nothing writes c any more");
	p = onnx_consumers(m, c, &n_c);
	cr_expect(n_c == 1 && p[0] == 1, "the folded Relu still names c");
	cr_expect_eq(onnx_graph_output_uses(m, y), 1);
	cr_expect_eq(onnx_graph_verify(m, "the test"), 0, "%s", m->err);
	onnx_model_free(m);
	mb_free(b);
}

Test(onnx_graph, name_index_finds_every_value_after_growing)
{
	struct onnx_model *m = calloc(1, sizeof(*m));
	static char names[3000][8];

	cr_assert(m);
	for (int i = 0; i < 3000; i++) {
		snprintf(names[i], sizeof(names[i]), "n%d", i);
		cr_assert_eq(onnx_value_add(m, names[i]), i);
	}
	cr_assert_eq(onnx_value_add(m, "n17"), 3000, "a repeated name is a new value");
	for (int i = 0; i < 3000; i++)
		if (onnx_value_find(m, names[i]) != i)
			cr_assert_fail("'%s' found as %d", names[i], onnx_value_find(m, names[i]));
	cr_expect_eq(onnx_value_find(m, "n17"), 17, "the first value of a name wins");
	cr_expect_eq(onnx_value_find(m, "n3000"), -1);
	cr_expect_eq(onnx_value_find(m, ""), -1);
	onnx_model_free(m);
}
