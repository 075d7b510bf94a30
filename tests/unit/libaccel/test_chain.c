/* SPDX-License-Identifier: MIT */
/*
 * chain #9: graphs, chaining and the island scheduler (Documentation/chaining.md).  Chained
 * results must equal the unchained ones bit for bit; placement follows the cost model; independent
 * branches overlap.  Heterogeneous-island tests need the sim (the VM device has one island).
 */
#include "common.h"

struct mats {
	uint32_t m, k, n, p;
	struct accel_buffer *a, *b, *c, *pbuf, *o;
	struct accel_tensor ta, tb, tc, tp, to;
	struct accel_gemm_desc g1, g2;
};

static void mats_init(struct accel_dev *dev, struct mats *x, uint32_t m, uint32_t k, uint32_t n, uint32_t p,
		      uint64_t seed)
{
	int32_t mult;
	uint8_t shift;

	memset(x, 0, sizeof(*x));
	x->m = m;
	x->k = k;
	x->n = n;
	x->p = p;
	x->a = alloc_buf(dev, (uint64_t)m * k);
	x->b = alloc_buf(dev, (uint64_t)k * n);
	x->c = alloc_buf(dev, (uint64_t)n * p);
	x->pbuf = alloc_buf(dev, (uint64_t)m * n);
	x->o = alloc_buf(dev, (uint64_t)m * p * 4);
	fill_i8(accel_buffer_ptr(x->a), (size_t)m * k, &seed);
	fill_i8(accel_buffer_ptr(x->b), (size_t)k * n, &seed);
	fill_i8(accel_buffer_ptr(x->c), (size_t)n * p, &seed);
	accel_tensor_2d(x->a, 0, ACCEL_INT8, m, k, &x->ta);
	accel_tensor_2d(x->b, 0, ACCEL_INT8, k, n, &x->tb);
	accel_tensor_2d(x->c, 0, ACCEL_INT8, n, p, &x->tc);
	accel_tensor_2d(x->pbuf, 0, ACCEL_INT8, m, n, &x->tp);
	accel_tensor_2d(x->o, 0, ACCEL_INT32, m, p, &x->to);
	cr_assert_eq(accel_quant_from_scale(1.0 / (48.0 * k), &mult, &shift), 0);
	x->g1 = (struct accel_gemm_desc){ .a = &x->ta, .b = &x->tb, .c = &x->tp };
	x->g1.epi.multiplier = mult;
	x->g1.epi.shift = shift;
	x->g2 = (struct accel_gemm_desc){ .a = &x->tp, .b = &x->tc, .c = &x->to };
}

static void mats_free(struct mats *x)
{
	accel_buffer_free(x->a);
	accel_buffer_free(x->b);
	accel_buffer_free(x->c);
	accel_buffer_free(x->pbuf);
	accel_buffer_free(x->o);
}

/* O = requant(A·B)·C on the CPU. */
static int32_t *ref_chain(const struct mats *x)
{
	const int8_t *a = accel_buffer_ptr(x->a), *b = accel_buffer_ptr(x->b), *c = accel_buffer_ptr(x->c);
	int32_t *o = malloc((size_t)x->m * x->p * 4);
	int8_t *pr = malloc(x->n);

	cr_assert(o && pr);
	for (uint32_t i = 0; i < x->m; i++) {
		for (uint32_t j = 0; j < x->n; j++) {
			int32_t s = 0;

			for (uint32_t q = 0; q < x->k; q++)
				s += a[(size_t)i * x->k + q] * b[(size_t)q * x->n + j];
			pr[j] = ref_requant(s, x->g1.epi.multiplier, x->g1.epi.shift, 0);
		}
		for (uint32_t j = 0; j < x->p; j++) {
			int32_t s = 0;

			for (uint32_t q = 0; q < x->n; q++)
				s += pr[q] * c[(size_t)q * x->p + j];
			o[(size_t)i * x->p + j] = s;
		}
	}
	free(pr);
	return o;
}

static uint64_t run_graph(struct accel_dev *dev, struct accel_graph *g, const struct accel_graph_opts *o)
{
	struct accel_counters c;
	struct accel_job *j = NULL;
	int ret = accel_graph_run(g, o, NULL, &j);

	cr_assert_eq(ret, 0, "accel_graph_run: %s: %s", accel_strerror(ret), accel_last_error(dev));
	ret = accel_job_wait(j, -1);
	cr_assert_eq(ret, 0, "graph job: %s: %s", accel_strerror(ret), accel_last_error(dev));
	cr_assert_eq(accel_job_counters(j, &c), 0);
	accel_job_free(j);
	return c.total_cycles;
}

static void chained_gemm_gemm(const char *sim)
{
	struct accel_dev *dev = open_dev(sim);
	struct accel_graph_opts nochain = { .flags = ACCEL_GRAPH_NO_CHAIN, .island = -1 };
	struct accel_graph_node_info ni;
	struct accel_graph *g;
	struct mats x;
	unsigned n0, n1;
	int32_t *ref, *chained = malloc(300 * 48 * 4);

	mats_init(dev, &x, 300, 40, 56, 48, 11);
	ref = ref_chain(&x);
	cr_assert_eq(accel_graph_new(dev, &g), 0);
	cr_assert_eq(accel_graph_gemm(g, &x.g1, &n0), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_graph_gemm(g, &x.g2, &n1), 0, "%s", accel_last_error(dev));
	run_graph(dev, g, NULL);
	cr_assert_eq(accel_graph_node_info(g, n1, &ni), 0);
	cr_assert_eq(ni.chained_from, (int)n0, "the second GEMM was not chained");
	cr_assert_gt(ni.bands, 1);
	memcpy(chained, accel_buffer_ptr(x.o), 300 * 48 * 4);
	cr_assert_eq(memcmp(chained, ref, 300 * 48 * 4), 0, "chained result differs from the CPU reference");

	/* Unchained, in one job and as two ordinary jobs: the same bits. */
	memset(accel_buffer_ptr(x.o), 0, 300 * 48 * 4);
	run_graph(dev, g, &nochain);
	cr_assert_eq(accel_graph_node_info(g, n1, &ni), 0);
	cr_assert_eq(ni.chained_from, -1);
	cr_assert_eq(memcmp(accel_buffer_ptr(x.o), chained, 300 * 48 * 4), 0);
	memset(accel_buffer_ptr(x.o), 0, 300 * 48 * 4);
	cr_assert_eq(accel_gemm(dev, &x.g1, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_gemm(dev, &x.g2, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(memcmp(accel_buffer_ptr(x.o), chained, 300 * 48 * 4), 0);
	accel_graph_free(g);
	free(ref);
	free(chained);
	mats_free(&x);
	accel_close(dev);
}

Test(chain, chained_gemm_gemm_int8_equals_unchained_bit_exactly)
{
	chained_gemm_gemm(NULL);
}

Test(chain, chained_gemm_gemm_across_two_islands_equals_unchained)
{
	if (!test_is_sim())
		cr_skip_test("needs a two-island sim");
	chained_gemm_gemm("sim:islands=2/2");
}

Test(chain, chained_activation_gemm_int8_equals_unchained_bit_exactly)
{
	struct accel_dev *dev = open_dev(NULL);
	const uint32_t m = 200, k = 128, p = 40;
	struct accel_buffer *x = alloc_buf(dev, m * k), *y = alloc_buf(dev, m * k), *w = alloc_buf(dev, k * p);
	struct accel_buffer *o = alloc_buf(dev, m * p * 4);
	struct accel_tensor tx, ty, tw, to;
	struct accel_activation_desc act = { .input = &tx, .output = &ty, .act = ACCEL_ACT_RELU };
	struct accel_gemm_desc gd = { .a = &ty, .b = &tw, .c = &to };
	struct accel_graph_opts nochain = { .flags = ACCEL_GRAPH_NO_CHAIN, .island = -1 };
	struct accel_graph_node_info ni;
	struct accel_graph *g;
	uint64_t seed = 5;
	int32_t *chained = malloc(m * p * 4);
	unsigned n0, n1;

	fill_i8(accel_buffer_ptr(x), m * k, &seed);
	fill_i8(accel_buffer_ptr(w), k * p, &seed);
	accel_tensor_2d(x, 0, ACCEL_INT8, m, k, &tx);
	accel_tensor_2d(y, 0, ACCEL_INT8, m, k, &ty);
	accel_tensor_2d(w, 0, ACCEL_INT8, k, p, &tw);
	accel_tensor_2d(o, 0, ACCEL_INT32, m, p, &to);
	cr_assert_eq(accel_graph_new(dev, &g), 0);
	cr_assert_eq(accel_graph_activation(g, &act, &n0), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_graph_gemm(g, &gd, &n1), 0, "%s", accel_last_error(dev));
	run_graph(dev, g, NULL);
	cr_assert_eq(accel_graph_node_info(g, n1, &ni), 0);
	cr_assert_eq(ni.chained_from, (int)n0);
	memcpy(chained, accel_buffer_ptr(o), m * p * 4);
	/* CPU reference: relu(x)·w. */
	{
		const int8_t *px = accel_buffer_ptr(x), *pw = accel_buffer_ptr(w);

		for (uint32_t i = 0; i < m; i++)
			for (uint32_t j = 0; j < p; j++) {
				int32_t s = 0;

				for (uint32_t q = 0; q < k; q++) {
					int8_t v = px[i * k + q];

					s += (v > 0 ? v : 0) * pw[q * p + j];
				}
				cr_assert_eq(chained[i * p + j], s, "O[%u][%u] = %d, expected %d", i, j, chained[i * p + j], s);
			}
	}
	memset(accel_buffer_ptr(o), 0, m * p * 4);
	run_graph(dev, g, &nochain);
	cr_assert_eq(memcmp(accel_buffer_ptr(o), chained, m * p * 4), 0);
	memset(accel_buffer_ptr(o), 0, m * p * 4);
	cr_assert_eq(accel_activation(dev, &act, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_gemm(dev, &gd, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(memcmp(accel_buffer_ptr(o), chained, m * p * 4), 0);
	accel_graph_free(g);
	free(chained);
	accel_buffer_free(x);
	accel_buffer_free(y);
	accel_buffer_free(w);
	accel_buffer_free(o);
	accel_close(dev);
}

/* A GEMM of m x k x n in dtype dt added to g (buffers leak into *bufs for the caller to free). */
static unsigned add_gemm(struct accel_dev *dev, struct accel_graph *g, enum accel_dtype dt, uint32_t m, uint32_t k,
			 uint32_t n, struct accel_buffer **bufs, struct accel_tensor *t, uint64_t seed)
{
	size_t e = accel_dtype_size(dt);
	struct accel_gemm_desc d;
	unsigned node;

	bufs[0] = alloc_buf(dev, m * k * e);
	bufs[1] = alloc_buf(dev, k * n * e);
	bufs[2] = alloc_buf(dev, m * n * 4);
	if (dt == ACCEL_FP32) {
		fill_f32(accel_buffer_ptr(bufs[0]), m * k, &seed);
		fill_f32(accel_buffer_ptr(bufs[1]), k * n, &seed);
	} else {
		fill_i8(accel_buffer_ptr(bufs[0]), m * k, &seed);
		fill_i8(accel_buffer_ptr(bufs[1]), k * n, &seed);
	}
	accel_tensor_2d(bufs[0], 0, dt, m, k, &t[0]);
	accel_tensor_2d(bufs[1], 0, dt, k, n, &t[1]);
	accel_tensor_2d(bufs[2], 0, dt == ACCEL_FP32 ? ACCEL_FP32 : ACCEL_INT32, m, n, &t[2]);
	d = (struct accel_gemm_desc){ .a = &t[0], .b = &t[1], .c = &t[2] };
	cr_assert_eq(accel_graph_gemm(g, &d, &node), 0, "%s", accel_last_error(dev));
	return node;
}

Test(chain, scheduler_places_ops_by_capability_and_cost)
{
	struct accel_dev *dev;
	struct accel_island isl[ACCEL_MAX_ISLANDS];
	struct accel_graph_node_info i8, f32;
	struct accel_buffer *b[6];
	struct accel_tensor t[6];
	struct accel_graph *g;
	struct accel_graph_opts bad = { .island = 0 };
	unsigned n, ni8, nf32;

	if (!test_is_sim())
		cr_skip_test("needs a heterogeneous sim");
	/* Island 0: int8 only, full clock; island 1: every dtype at a quarter of the clock. */
	dev = open_dev("sim:islands=2:i8/2:all:4");
	cr_assert_eq(accel_query_islands(dev, isl, ACCEL_MAX_ISLANDS, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(isl[0].dtypes, ACCEL_ISLAND_INT8);
	cr_assert_eq(isl[1].clkdiv, 4);
	cr_assert_eq(isl[1].first_row, 2);
	cr_assert_eq(accel_graph_new(dev, &g), 0);
	ni8 = add_gemm(dev, g, ACCEL_INT8, 128, 64, 64, b, t, 1);
	nf32 = add_gemm(dev, g, ACCEL_FP32, 64, 32, 32, b + 3, t + 3, 2);
	run_graph(dev, g, NULL);
	accel_graph_node_info(g, ni8, &i8);
	accel_graph_node_info(g, nf32, &f32);
	cr_assert_eq(f32.island, 1, "fp32 needs the island that has fp32");
	cr_assert_eq(i8.island, 0, "int8 is cheaper on the full-clock island");
	cr_assert_gt(f32.est_cycles, 0);
	/* Forcing every op onto the int8-only island is refused with a message. */
	cr_assert_eq(accel_graph_run(g, &bad, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "island"), "%s", accel_last_error(dev));
	accel_graph_free(g);
	for (int i = 0; i < 6; i++)
		accel_buffer_free(b[i]);
	accel_close(dev);
}

Test(chain, independent_branches_run_on_different_islands_at_the_same_time)
{
	struct accel_dev *dev;
	struct accel_graph_node_info na, nb;
	struct accel_buffer *b[6];
	struct accel_tensor t[6];
	struct accel_graph *g, *ga, *gb;
	uint64_t both, alone_a, alone_b;
	unsigned a, bn;

	if (!test_is_sim())
		cr_skip_test("needs a two-island sim");
	dev = open_dev("sim:islands=2/2");
	cr_assert_eq(accel_graph_new(dev, &g), 0);
	a = add_gemm(dev, g, ACCEL_INT8, 256, 64, 64, b, t, 3);
	bn = add_gemm(dev, g, ACCEL_INT8, 256, 64, 64, b + 3, t + 3, 4);
	both = run_graph(dev, g, NULL);
	accel_graph_node_info(g, a, &na);
	accel_graph_node_info(g, bn, &nb);
	cr_assert_neq(na.island, nb.island, "independent ops share an island");
	/* The same ops alone. */
	cr_assert_eq(accel_graph_new(dev, &ga), 0);
	cr_assert_eq(accel_graph_new(dev, &gb), 0);
	{
		struct accel_gemm_desc da = { .a = &t[0], .b = &t[1], .c = &t[2] };
		struct accel_gemm_desc db = { .a = &t[3], .b = &t[4], .c = &t[5] };
		unsigned x;

		cr_assert_eq(accel_graph_gemm(ga, &da, &x), 0);
		cr_assert_eq(accel_graph_gemm(gb, &db, &x), 0);
	}
	alone_a = run_graph(dev, ga, NULL);
	alone_b = run_graph(dev, gb, NULL);
	cr_assert_lt(both * 10, (alone_a + alone_b) * 7, "no overlap: %llu vs %llu + %llu", (unsigned long long)both,
		     (unsigned long long)alone_a, (unsigned long long)alone_b);
	/* And the results are right. */
	{
		const int8_t *pa = accel_buffer_ptr(b[3]), *pb = accel_buffer_ptr(b[4]);
		const int32_t *pc = accel_buffer_ptr(b[5]);

		for (uint32_t i = 0; i < 256; i += 17)
			for (uint32_t j = 0; j < 64; j++) {
				int32_t s = 0;

				for (uint32_t q = 0; q < 64; q++)
					s += pa[i * 64 + q] * pb[q * 64 + j];
				cr_assert_eq(pc[i * 64 + j], s);
			}
	}
	accel_graph_free(g);
	accel_graph_free(ga);
	accel_graph_free(gb);
	for (int i = 0; i < 6; i++)
		accel_buffer_free(b[i]);
	accel_close(dev);
}

Test(chain, classic_ops_run_in_island_zero_of_a_multi_island_device)
{
	struct accel_dev *dev;
	struct accel_caps caps;
	struct mats x;
	int32_t *ref;

	if (!test_is_sim())
		cr_skip_test("needs a two-island sim");
	dev = open_dev("sim:rows=4,islands=1/3");
	cr_assert_eq(accel_query_caps(dev, &caps), 0);
	cr_assert_eq(caps.rows, 1, "caps.rows is what a classic op can use");
	mats_init(dev, &x, 70, 24, 40, 16, 9);
	ref = ref_chain(&x);
	cr_assert_eq(accel_gemm(dev, &x.g1, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(accel_gemm(dev, &x.g2, NULL, NULL), 0, "%s", accel_last_error(dev));
	cr_assert_eq(memcmp(accel_buffer_ptr(x.o), ref, 70 * 16 * 4), 0);
	free(ref);
	mats_free(&x);
	accel_close(dev);
}

Test(chain, bad_graphs_and_options_get_clear_errors)
{
	struct accel_dev *dev = open_dev(NULL), *bad = NULL;
	struct accel_graph_opts o = { .island = 99 };
	struct accel_gemm_desc d;
	struct accel_graph *g;
	struct mats x;
	unsigned n;
	char msg[200];

	mats_init(dev, &x, 16, 16, 16, 16, 1);
	cr_assert_eq(accel_graph_new(dev, &g), 0);
	cr_assert_eq(accel_graph_run(g, NULL, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "empty"), "%s", accel_last_error(dev));
	d = x.g1;
	d.trans_a = true;
	cr_assert_eq(accel_graph_gemm(g, &d, &n), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "transposed"), "%s", accel_last_error(dev));
	d = x.g2;
	d.c = &x.tp;	/* 16x16 int8 output for a 16x16 result: fine shape, but C must be int32/int8 */
	cr_assert_eq(accel_graph_gemm(g, &x.g1, &n), 0);
	cr_assert_eq(accel_graph_run(g, &o, NULL, NULL), -EINVAL);
	cr_assert(strstr(accel_last_error(dev), "does not exist"), "%s", accel_last_error(dev));
	accel_graph_free(g);
	mats_free(&x);
	accel_close(dev);
	if (test_is_sim()) {
		cr_assert_eq(accel_open_msg("sim:islands=3/3", msg, sizeof(msg), &bad), -EINVAL);
		cr_assert(strstr(msg, "add up"), "%s", msg);
		cr_assert_eq(accel_open_msg("sim:islands=2:i9/2", msg, sizeof(msg), &bad), -EINVAL);
		cr_assert(strstr(msg, "DTYPES"), "%s", msg);
	}
}
