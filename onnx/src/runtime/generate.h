/* SPDX-License-Identifier: MIT */
/* generate.h - the generator's state, shared by generate.c (runs, buckets) and generate_sample.c (sampling). */
#ifndef TNPU_ONNX_GENERATE_INTERNAL_H
#define TNPU_ONNX_GENERATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tnpu_onnx.h"

#define GEN_MAX_LAYERS 256
#define GEN_MAX_BUCKETS 64	/* log2(ONNX_GEN_MAX_LEN) + 1 sequence x past buckets fit easily */

/*
 * One shape bucket: its compiled plan (NULL on the reference) and its inputs, allocated once.  On a
 * device (generate_kv.c) the past inputs are resident: their tensors give only the shape (data NULL),
 * primed once every row of their arena slots has been written, synced the context rows they hold.
 */
struct gen_bucket {
	uint32_t seq, past;
	struct onnx_compiled *cm;
	struct onnx_tensor *in;
	uint8_t *resident;	/* per input: kept in the plan's arena (the past values) */
	unsigned n_in;
	bool primed;
	uint32_t synced;
};

struct onnx_generator {
	struct onnx_model *m;
	struct accel_dev *dev;
	unsigned compile_flags;
	/* the model's I/O: input / output indices */
	int in_ids, in_mask, in_pos;
	int in_past[GEN_MAX_LAYERS][2], out_present[GEN_MAX_LAYERS][2];
	int out_logits;
	uint32_t layers, kv_heads, head_dim, vocab;
	uint32_t max_len, len;
	/* [layers][2][kv_heads][max_len][head_dim] floats: host memory on the reference (dev NULL), else
	 * the device buffer kv_buf (generate_kv.c) */
	float *cache;
	struct accel_buffer *kv_buf;
	uint64_t kv_cache_bytes, weight_bytes;
	float *logits;
	bool have_logits;
	struct gen_bucket buckets[GEN_MAX_BUCKETS];
	unsigned n_buckets;
	uint64_t rng;
	char err[512];
};

static inline float *gen_cache_at(struct onnx_generator *g, unsigned layer, int kind, uint32_t head, uint32_t row)
{
	return g->cache + ((((size_t)layer * 2 + (size_t)kind) * g->kv_heads + head) * g->max_len + row) * g->head_dim;
}

int gen_err(struct onnx_generator *g, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define GFAIL gen_err

/* The device-resident cache (generate_kv.c): allocate, free; one run of bucket b for n new tokens (its
 * id, mask and position inputs filled), the cache and the logits updated. */
int gen_kv_alloc(struct onnx_generator *g);
void gen_kv_free(struct onnx_generator *g);
int gen_kv_run(struct onnx_generator *g, struct gen_bucket *b, uint32_t n, struct onnx_run_stats *stats);

uint32_t gen_seq_bucket(uint32_t n, uint32_t max_len);
uint32_t gen_past_bucket(uint32_t p, uint32_t max_len);
void gen_seed(struct onnx_generator *g, uint64_t seed);
/* The sampler's PRNG: the next SplitMix64 output (generate_sample.c). */
uint64_t gen_next_u64(struct onnx_generator *g);

#endif
