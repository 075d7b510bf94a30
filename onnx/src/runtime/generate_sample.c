// SPDX-License-Identifier: MIT
/*
 * generate_sample.c - the generator's sampler (tnpu_onnx_generate.h, Documentation/llm.md "Sampling"):
 * greedy, temperature, top-k and top-p over the last logits, drawn from a SplitMix64 stream so that a
 * seed gives the same tokens everywhere.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tnpu_onnx.h"
#include "generate.h"

void gen_seed(struct onnx_generator *g, uint64_t seed)
{
	g->rng = seed;
}

void onnx_generator_seed(struct onnx_generator *g, uint64_t seed)
{
	if (g)
		gen_seed(g, seed);
}

/* SplitMix64 (Steele, Lea, Flood 2014; Vigna's reference constants). */
uint64_t gen_next_u64(struct onnx_generator *g)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform01(struct onnx_generator *g)
{
	return (double)(gen_next_u64(g) >> 11) * 0x1.0p-53;
}

static uint32_t argmax(const float *x, uint32_t n)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

struct cand {
	float logit;
	uint32_t id;
};

/* Descending logit, ties by ascending id: a total order, so qsort's instability cannot show. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int onnx_generator_sample(struct onnx_generator *g, const struct onnx_sampling *s, int64_t *token)
{
	uint32_t n, k;
	struct cand *c;
	double *p, sum = 0, cum, u;

	if (!g || !s || !token)
		return -EINVAL;
	if (!g->have_logits)
		return snprintf(g->err, sizeof(g->err), "sample: no logits yet (run a prefill first)"), -EINVAL;
	if (isnan(s->temperature) || isnan(s->top_p))
		return snprintf(g->err, sizeof(g->err), "sample: temperature and top_p must be numbers"), -EINVAL;
	for (uint32_t i = 0; i < g->vocab; i++)
		if (isnan(g->logits[i]))
			return snprintf(g->err, sizeof(g->err), "sample: logit %u is NaN", i), -EDOM;
	if (s->temperature <= 0 || s->top_k == 1) {
		*token = argmax(g->logits, g->vocab);
		return 0;
	}
	n = g->vocab;
	c = malloc(n * sizeof(*c));
	p = malloc(n * sizeof(*p));
	if (!c || !p) {
		free(c);
		free(p);
		return snprintf(g->err, sizeof(g->err), "sample: out of memory"), -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		c[i] = (struct cand){ g->logits[i], i };
	qsort(c, n, sizeof(*c), cand_cmp);
	if (!isfinite(c[0].logit)) {	/* +inf dominates; all -inf: every id equal, take the first */
		*token = c[0].id;
		free(c);
		free(p);
		return 0;
	}
	k = s->top_k && s->top_k < n ? s->top_k : n;
	for (uint32_t i = 0; i < k; i++) {
		p[i] = exp(((double)c[i].logit - c[0].logit) / s->temperature);
		sum += p[i];
	}
	if (s->top_p > 0 && s->top_p < 1) {
		cum = 0;
		for (uint32_t i = 0; i < k; i++) {
			cum += p[i] / sum;
			if (cum >= s->top_p) {
				k = i + 1;
				break;
			}
		}
		sum = 0;
		for (uint32_t i = 0; i < k; i++)
			sum += p[i];
	}
	u = uniform01(g) * sum;
	cum = 0;
	*token = c[k - 1].id;	/* rounding left u above the last sum */
	for (uint32_t i = 0; i < k; i++) {
		cum += p[i];
		if (u < cum) {
			*token = c[i].id;
			break;
		}
	}
	free(c);
	free(p);
	return 0;
}
