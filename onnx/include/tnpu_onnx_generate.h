/* SPDX-License-Identifier: MIT */
/*
 * tnpu_onnx_generate.h - text generation with a decoder language model (issue #29; included by
 * tnpu_onnx.h).  Reference: Documentation/llm.md, "Generation runtime".  Conventions as tnpu_onnx.h:
 * 0 or a negative errno, the message in onnx_generator_error() (create: in err); never aborts or prints.
 */
#ifndef TNPU_ONNX_GENERATE_H
#define TNPU_ONNX_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "tnpu_onnx.h"	/* ONNX_API, struct onnx_run_stats (its include of this header is then a no-op) */

/*
 * -- Generation runtime
 * A generator runs a decoder exported in the layout of decoder exporters: inputs input_ids [batch,
 * sequence] INT64, attention_mask [batch, total] INT64, position_ids [batch, sequence] INT64 (optional),
 * past_key_values.N.key/value [batch, kv_heads, past, head_dim] FLOAT; outputs logits [batch, sequence,
 * vocab], present.N.key/value [batch, kv_heads, total, head_dim] (N = 0 .. layers-1, batch 1).
 * onnx_generator_create() recognises that I/O by name (-EINVAL naming the input or output and the reason
 * when a name is missing or unknown, a past has no present, or their kv_heads/head_dim differ) and
 * allocates the KV cache once: layers x 2 x kv_heads x max_len x head_dim floats (kv_cache_bytes), in
 * device memory when dev is given (past and present rows are copied on the device, never by the host).
 * The model runs compiled per shape bucket, never per token: a run of n new tokens after p cached ones
 * uses sequence bucket S = 1 for n = 1, else the next power of two >= n (at most max_len), and past
 * bucket P = the next power of two >= max(p, 16) (at most max_len); the padding is hidden by
 * attention_mask.  Each bucket is compiled with onnx_compile() the first time it is met and kept until
 * onnx_generator_free().  dev NULL: the plain-C reference (onnx_run) with the same buckets.
 * Threads: one call at a time per generator; the device rule of tnpu_onnx.h holds.  The model and the
 * device must outlive the generator.
 */
struct onnx_generator;

struct onnx_generator_opts {
	uint32_t max_len;	/* context: prompt + generated tokens, 1 .. ONNX_GEN_MAX_LEN (required) */
	unsigned compile_flags;	/* ONNX_COMPILE_* for every bucket */
};
#define ONNX_GEN_MAX_LEN 65536u

ONNX_API int onnx_generator_create(struct onnx_model *m, struct accel_dev *dev, const struct onnx_generator_opts *opts,
				   struct onnx_generator **out, char *err, size_t errlen);
ONNX_API void onnx_generator_free(struct onnx_generator *g);
ONNX_API const char *onnx_generator_error(const struct onnx_generator *g);

/*
 * Append n >= 1 tokens to the context and run them (a prompt, or one token: the decode step); the
 * logits of the last one become the next sample's.  -EINVAL: a token id outside 0 .. vocab-1 (the
 * message names its position and the vocabulary); -E2BIG: the context would exceed max_len (the message
 * names the limit); nothing is appended then.  stats (may be NULL) gets the run's statistics (device
 * counters summed over the run).
 */
ONNX_API int onnx_generator_prefill(struct onnx_generator *g, const int64_t *ids, size_t n,
				    struct onnx_run_stats *stats);
/* onnx_generator_prefill(g, &token, 1, stats): the decode step (sequence bucket 1). */
ONNX_API int onnx_generator_step(struct onnx_generator *g, int64_t token, struct onnx_run_stats *stats);

/*
 * Sample the next token from the last run's logits (Documentation/llm.md, "Sampling").  temperature <= 0
 * or top_k == 1: greedy (the lowest id of the largest logit).  Otherwise the candidates are the ids sorted
 * by logit (descending, ties by id), the first top_k of them (0: all), then the shortest prefix whose
 * probabilities (softmax of logit / temperature over the candidates) sum to >= top_p (top_p <= 0 or >= 1:
 * all); one uniform draw u in [0, 1) from the generator's PRNG picks the first candidate whose cumulative
 * renormalised probability exceeds u.  The PRNG is SplitMix64 (state += 0x9e3779b97f4a7c15, then the
 * xor-shift-multiply mix), seeded by onnx_generator_seed() (default 0), u = (next >> 11) * 2^-53: the same
 * seed and logits give the same tokens on every machine.  -EINVAL before any run or with a NaN
 * temperature or top_p; -EDOM for a NaN logit.
 */
struct onnx_sampling {
	float temperature;
	uint32_t top_k;
	float top_p;
};
ONNX_API int onnx_generator_sample(struct onnx_generator *g, const struct onnx_sampling *s, int64_t *token);
/* Seed the sampler's PRNG (SplitMix64 state; 0 at create). */
ONNX_API void onnx_generator_seed(struct onnx_generator *g, uint64_t seed);
/* The last run's logits (vocab floats; NULL before any run), valid until the next run. */
ONNX_API const float *onnx_generator_logits(const struct onnx_generator *g);
/* Forget the context (the compiled buckets and the cache allocation stay). */
ONNX_API void onnx_generator_reset(struct onnx_generator *g);

/* The model's decoder shape as recognised, the context's length, the cache's bytes, the buckets compiled. */
struct onnx_generator_info {
	uint32_t layers, kv_heads, head_dim, vocab;
	uint32_t max_len;
	uint32_t len;			/* tokens in the context */
	uint64_t kv_cache_bytes;	/* layers * 2 * kv_heads * max_len * head_dim * sizeof(float) */
	unsigned buckets;		/* shape buckets compiled so far */
	uint64_t weight_bytes;		/* packed weights of the last compiled bucket (read by every run) */
};
ONNX_API int onnx_generator_info(const struct onnx_generator *g, struct onnx_generator_info *out);

#endif /* TNPU_ONNX_GENERATE_H */
