// SPDX-License-Identifier: MIT
/*
 * test_generate.c - the generation runtime's sampler and shape buckets (onnx/src/generate*.c, issue #29).
 * References: SplitMix64's published first outputs for seed 0 (Vigna's splitmix64.c), and the softmax
 * probabilities the documented sampler draws from (tnpu_onnx_generate.h), checked by frequency.  The
 * generation against PyTorch is tools/accel-generate/check-generate.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "builder.h"
#include "accel.h"
#include "tnpu_onnx.h"
#include "../../../onnx/src/runtime/generate.h"

/* A generator with only the sampler's state: vocab and logits set by hand (no model). */
static struct onnx_generator *fake(uint32_t vocab, const float *logits)
{
	struct onnx_generator *g = calloc(1, sizeof(*g));

	cr_assert(g);
	g->vocab = vocab;
	g->logits = calloc(vocab, sizeof(float));
	cr_assert(g->logits);
	for (uint32_t i = 0; i < vocab; i++)
		g->logits[i] = logits[i];
	g->have_logits = true;
	return g;
}

static void fake_free(struct onnx_generator *g)
{
	free(g->logits);
	free(g);
}

Test(generate, prng_is_splitmix64_with_its_published_outputs)
{
	struct onnx_generator g = { 0 };

	onnx_generator_seed(&g, 0);
	cr_expect_eq(gen_next_u64(&g), 0xe220a8397b1dcdafull);
	cr_expect_eq(gen_next_u64(&g), 0x6e789e6aa1b965f4ull);
	cr_expect_eq(gen_next_u64(&g), 0x06c45d188009454full);
}

Test(generate, greedy_takes_the_lowest_id_of_the_largest_logit)
{
	float l[5] = { 0.1f, 2.0f, -1.0f, 2.0f, 1.9f };
	struct onnx_generator *g = fake(5, l);
	struct onnx_sampling s = { 0 };
	int64_t t;

	cr_assert_eq(onnx_generator_sample(g, &s, &t), 0);
	cr_expect_eq(t, 1);
	s = (struct onnx_sampling){ .temperature = 5.0f, .top_k = 1 };
	cr_assert_eq(onnx_generator_sample(g, &s, &t), 0);
	cr_expect_eq(t, 1, "top_k 1 at any temperature is greedy");
	fake_free(g);
}

/* Frequencies of n draws against the probabilities p (|f - p| < 0.015 at n = 20000: > 6 sigma). */
static void expect_freq(struct onnx_generator *g, const struct onnx_sampling *s, const double *p, uint32_t vocab)
{
	unsigned cnt[8] = { 0 }, n = 20000;
	int64_t t;

	onnx_generator_seed(g, 29);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(onnx_generator_sample(g, s, &t), 0);
		cr_assert(t >= 0 && t < vocab);
		cnt[t]++;
	}
	for (uint32_t i = 0; i < vocab; i++)
		cr_expect(fabs((double)cnt[i] / n - p[i]) < 0.015, "id %u: frequency %.4f, probability %.4f", i,
			  (double)cnt[i] / n, p[i]);
}

Test(generate, temperature_draws_from_the_softmax)
{
	float l[3] = { logf(0.5f), logf(0.3f), logf(0.2f) };
	struct onnx_generator *g = fake(3, l);
	double p1[3] = { 0.5, 0.3, 0.2 }, p2[3], z = 0;
	struct onnx_sampling s = { .temperature = 1.0f };

	expect_freq(g, &s, p1, 3);
	for (int i = 0; i < 3; i++)	/* temperature 2: softmax(logit / 2) = sqrt(p) normalised */
		z += p2[i] = sqrt(p1[i]);
	for (int i = 0; i < 3; i++)
		p2[i] /= z;
	s.temperature = 2.0f;
	expect_freq(g, &s, p2, 3);
	fake_free(g);
}

Test(generate, top_k_and_top_p_keep_the_documented_candidates)
{
	float l[4] = { logf(0.2f), logf(0.5f), logf(0.1f), logf(0.2f) };
	struct onnx_generator *g = fake(4, l);
	/* top_k 2: ids 1 (0.5) and 0 (0.2, ties broken by id), renormalised */
	double pk[4] = { 0.2 / 0.7, 0.5 / 0.7, 0, 0 };
	/* top_p 0.6: 0.5 < 0.6, 0.5 + 0.2 >= 0.6: ids 1 and 0 */
	double pp[4] = { 0.2 / 0.7, 0.5 / 0.7, 0, 0 };
	/* top_p 0.75: 0.5, 0.7, 0.9 >= 0.75: ids 1, 0, 3 */
	double pp2[4] = { 0.2 / 0.9, 0.5 / 0.9, 0, 0.2 / 0.9 };
	struct onnx_sampling s = { .temperature = 1.0f, .top_k = 2 };

	expect_freq(g, &s, pk, 4);
	s = (struct onnx_sampling){ .temperature = 1.0f, .top_p = 0.6f };
	expect_freq(g, &s, pp, 4);
	s.top_p = 0.75f;
	expect_freq(g, &s, pp2, 4);
	fake_free(g);
}

Test(generate, the_first_draw_of_seed_0_is_the_published_output)
{
	/* u = (0xe220a8397b1dcdaf >> 11) * 2^-53 = 0.8833: past 0.5 + 0.3, so the third candidate */
	float l[3] = { logf(0.5f), logf(0.3f), logf(0.2f) };
	struct onnx_generator *g = fake(3, l);
	struct onnx_sampling s = { .temperature = 1.0f };
	int64_t t;

	onnx_generator_seed(g, 0);
	cr_assert_eq(onnx_generator_sample(g, &s, &t), 0);
	cr_expect_eq(t, 2);
	fake_free(g);
}

Test(generate, sampling_is_reproducible_by_seed)
{
	float l[16];
	struct onnx_sampling s = { .temperature = 1.0f, .top_p = 0.9f };
	int64_t a[32], b[32], c[32];
	struct onnx_generator *g;
	int differ = 0;

	for (int i = 0; i < 16; i++)
		l[i] = (float)(i % 5) * 0.3f;
	g = fake(16, l);
	onnx_generator_seed(g, 7);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(onnx_generator_sample(g, &s, &a[i]), 0);
	onnx_generator_seed(g, 7);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(onnx_generator_sample(g, &s, &b[i]), 0);
	onnx_generator_seed(g, 8);
	for (int i = 0; i < 32; i++) {
		cr_assert_eq(onnx_generator_sample(g, &s, &c[i]), 0);
		differ += c[i] != a[i];
	}
	cr_expect_arr_eq(a, b, sizeof(a));
	cr_expect(differ > 0, "seeds 7 and 8 drew the same 32 tokens");
	fake_free(g);
}

Test(generate, sample_rejects_a_nan_temperature_and_missing_logits)
{
	float l[2] = { 0, 1 };
	struct onnx_generator *g = fake(2, l);
	struct onnx_sampling s = { .temperature = NAN };
	int64_t t;

	cr_expect_eq(onnx_generator_sample(g, &s, &t), -EINVAL);
	cr_expect(strstr(onnx_generator_error(g), "temperature"));
	g->have_logits = false;
	s.temperature = 1;
	cr_expect_eq(onnx_generator_sample(g, &s, &t), -EINVAL);
	cr_expect(strstr(onnx_generator_error(g), "no logits"));
	fake_free(g);
}

Test(generate, buckets_are_powers_of_two_capped_at_max_len)
{
	cr_expect_eq(gen_seq_bucket(1, 128), 1);
	cr_expect_eq(gen_seq_bucket(2, 128), 2);
	cr_expect_eq(gen_seq_bucket(3, 128), 4);
	cr_expect_eq(gen_seq_bucket(33, 128), 64);
	cr_expect_eq(gen_seq_bucket(100, 100), 100);
	cr_expect_eq(gen_past_bucket(0, 128), 16);
	cr_expect_eq(gen_past_bucket(16, 128), 16);
	cr_expect_eq(gen_past_bucket(17, 128), 32);
	cr_expect_eq(gen_past_bucket(90, 100), 100);
	cr_expect_eq(gen_past_bucket(0, 8), 8);
}

Test(generate, create_rejects_a_bad_max_len_and_a_non_decoder)
{
	static const int64_t dims[2] = { 1, 4 };
	struct onnx_generator_opts o = { .max_len = 0 };
	struct onnx_generator *g = NULL;
	struct onnx_model *m = NULL;
	struct mb *b = mb_new(13);
	const uint8_t *buf;
	char err[256] = "";
	size_t len;

	mb_input_typed(b, "x", ONNX_FLOAT, 2, dims);
	mb_node(b, "Relu", "x", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(onnx_generator_create(m, NULL, &o, &g, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "max_len"), "%s", err);
	o.max_len = 8;
	cr_expect_eq(onnx_generator_create(m, NULL, &o, &g, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "input 'x': not a decoder input"), "%s", err);
	cr_expect_null(g);
	onnx_model_free(m);
	mb_free(b);
}

/*
 * A one-layer decoder with real attention over its cache (kv_heads 2, head_dim 8, vocabulary 12): the
 * embedding, q/k/v projections, present = Concat(past, new) on the sequence axis, softmax(q k^T + mask)
 * v, the output projection.  The mask is additive (-1e4 for attention_mask 0), as exporters write it.
 */
#define TD_V 12
#define TD_KV 2
#define TD_HD 8
static struct onnx_model *tiny_decoder(struct mb **bp)
{
	static const int64_t ids[2] = { 1, INT64_MIN }, kv[4] = { 1, TD_KV, INT64_MIN, TD_HD },
			     lg[3] = { 1, INT64_MIN, TD_V }, emb[2] = { TD_V, TD_KV * TD_HD },
			     proj[2] = { TD_KV * TD_HD, TD_KV * TD_HD }, out[2] = { TD_KV * TD_HD, TD_V },
			     sh4[4] = { 1, -1, TD_KV, TD_HD }, sh3[3] = { 1, -1, TD_KV * TD_HD }, one_d[1] = { 1 },
			     n4 = 4, n3 = 3, split[4] = { 0, 2, 1, 3 }, kt[4] = { 0, 1, 3, 2 };
	static const float one = 1.0f, big = 1e4f;
	struct mb *b = mb_new(13);
	struct onnx_model *m = NULL;
	uint32_t rng = 7;
	const uint8_t *buf;
	char err[256] = "";
	size_t len;

	mb_input_typed(b, "input_ids", ONNX_INT64, 2, ids);
	mb_input_typed(b, "attention_mask", ONNX_INT64, 2, ids);
	mb_input_typed(b, "past_key_values.0.key", ONNX_FLOAT, 4, kv);
	mb_input_typed(b, "past_key_values.0.value", ONNX_FLOAT, 4, kv);
	mb_init_rand(b, "E", 2, emb, &rng);
	mb_init_rand(b, "Wq", 2, proj, &rng);
	mb_init_rand(b, "Wk", 2, proj, &rng);
	mb_init_rand(b, "Wv", 2, proj, &rng);
	mb_init_rand(b, "Wo", 2, out, &rng);
	mb_init(b, "sh4", ONNX_INT64, 1, &n4, sh4);
	mb_init(b, "sh3", ONNX_INT64, 1, &n3, sh3);
	mb_init(b, "one", ONNX_FLOAT, 1, one_d, &one);
	mb_init(b, "big", ONNX_FLOAT, 1, one_d, &big);
	mb_attr_i(b, mb_node(b, "Gather", "E,input_ids", "x"), "axis", 0);
	for (int i = 0; i < 3; i++) {
		static const char *const w[3] = { "Wq", "Wk", "Wv" }, *const nm[3] = { "q", "k", "v" };
		char in[32], o1[16], o2[16], o3[16];

		snprintf(in, sizeof(in), "x,%s", w[i]);
		snprintf(o1, sizeof(o1), "%s1", nm[i]);
		snprintf(o2, sizeof(o2), "%s2", nm[i]);
		snprintf(o3, sizeof(o3), "%sh", nm[i]);
		mb_node(b, "MatMul", in, o1);
		snprintf(in, sizeof(in), "%s,sh4", o1);
		mb_node(b, "Reshape", in, o2);
		mb_attr_ints(b, mb_node(b, "Transpose", o2, o3), "perm", split, 4);
	}
	mb_attr_i(b, mb_node(b, "Concat", "past_key_values.0.key,kh", "present.0.key"), "axis", 2);
	mb_attr_i(b, mb_node(b, "Concat", "past_key_values.0.value,vh", "present.0.value"), "axis", 2);
	mb_attr_ints(b, mb_node(b, "Transpose", "present.0.key", "kT"), "perm", kt, 4);
	mb_node(b, "MatMul", "qh,kT", "sc");
	mb_attr_i(b, mb_node(b, "Cast", "attention_mask", "mf"), "to", ONNX_FLOAT);
	mb_node(b, "Sub", "mf,one", "m1");
	mb_node(b, "Mul", "m1,big", "madd");
	mb_node(b, "Add", "sc,madd", "sm");
	mb_attr_i(b, mb_node(b, "Softmax", "sm", "p"), "axis", -1);
	mb_node(b, "MatMul", "p,present.0.value", "o");
	mb_attr_ints(b, mb_node(b, "Transpose", "o", "ot"), "perm", split, 4);
	mb_node(b, "Reshape", "ot,sh3", "of");
	mb_node(b, "MatMul", "of,Wo", "logits");
	mb_output_typed(b, "logits", ONNX_FLOAT, 3, lg);
	mb_output_typed(b, "present.0.key", ONNX_FLOAT, 4, kv);
	mb_output_typed(b, "present.0.value", ONNX_FLOAT, 4, kv);
	buf = mb_pack(b, &len);
	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "%s", err);
	*bp = b;
	return m;
}

static void expect_same_logits(struct onnx_generator *dev, struct onnx_generator *ref, const char *when)
{
	const float *a = onnx_generator_logits(dev), *r = onnx_generator_logits(ref);
	double amax = 0, emax = 0;

	cr_assert(a && r, "%s: no logits", when);
	for (int i = 0; i < TD_V; i++) {
		amax = fmax(amax, fabs(r[i]));
		emax = fmax(emax, fabs((double)a[i] - r[i]));
	}
	cr_expect_leq(emax, ONNX_MODEL_ATOL + ONNX_MODEL_RTOL * amax, "%s: logits differ by %g (max |ref| %g)", when,
		      emax, amax);
}

/*
 * The device-resident KV cache (generate_kv.c) against the reference's host cache (dev NULL): a prompt,
 * then decode steps across the past buckets 16, 32 and 64, a reset and a second prompt; every step's
 * logits agree.  Decode steps copy only the token inputs through the host: no past or present bytes.
 */
Test(generate, the_device_resident_cache_matches_the_host_reference_across_buckets)
{
	struct onnx_generator_opts o = { .max_len = 64 };
	struct onnx_generator *gd = NULL, *gr = NULL;
	struct onnx_generator_info info;
	struct onnx_model *m;
	struct accel_dev *dev;
	struct mb *b;
	char err[512] = "", when[64];
	int64_t prompt[5] = { 3, 1, 4, 1, 5 }, tok;
	struct onnx_run_stats st;

	m = tiny_decoder(&b);
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_eq(onnx_generator_create(m, dev, &o, &gd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_generator_create(m, NULL, &o, &gr, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_generator_info(gd, &info), 0);
	cr_expect_eq(info.kv_cache_bytes, 1ull * 2 * TD_KV * 64 * TD_HD * 4);
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(onnx_generator_prefill(gd, prompt, 5, NULL), 0, "%s", onnx_generator_error(gd));
		cr_assert_eq(onnx_generator_prefill(gr, prompt, 5, NULL), 0, "%s", onnx_generator_error(gr));
		expect_same_logits(gd, gr, "prompt");
		for (int i = 0; i < (round ? 12 : 40); i++) {
			cr_assert_eq(onnx_generator_sample(gr, &(struct onnx_sampling){ 0 }, &tok), 0);
			memset(&st, 0, sizeof(st));
			cr_assert_eq(onnx_generator_step(gd, tok, &st), 0, "%s", onnx_generator_error(gd));
			cr_assert_eq(onnx_generator_step(gr, tok, NULL), 0, "%s", onnx_generator_error(gr));
			snprintf(when, sizeof(when), "round %d, decode step %d", round, i);
			expect_same_logits(gd, gr, when);
			/* the old host cache moved 2 x past x kv x hd floats in and 2 x (past + 1) x ... out */
			cr_expect_lt(st.copy_bytes, 2ull * TD_KV * 16 * TD_HD * 4, "%s: %llu bytes copied by the host",
				     when, (unsigned long long)st.copy_bytes);
			cr_expect_gt(st.counters.total_cycles, 0, "%s: no device cycles", when);
		}
		cr_assert_eq(onnx_generator_info(gd, &info), 0);
		cr_expect_eq(info.len, round ? 17u : 45u);
		onnx_generator_reset(gd);
		onnx_generator_reset(gr);
		prompt[0] = 7;	/* another context: no row of the first may leak into it */
	}
	onnx_generator_free(gd);
	onnx_generator_free(gr);
	accel_close(dev);
	onnx_model_free(m);
	mb_free(b);
}
