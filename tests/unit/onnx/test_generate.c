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
#include <string.h>

#include "builder.h"
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
