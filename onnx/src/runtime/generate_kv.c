// SPDX-License-Identifier: MIT
/*
 * generate_kv.c - the generator's device-resident KV cache (Documentation/llm.md, "The KV cache").
 *
 * On a device the cache is one device buffer, [layer][key, value][kv_head][position][head_dim] floats, and
 * it never goes through the host.  Each bucket is compiled with its inputs kept live for the whole plan
 * (CM_COMPILE_KEEP_INPUTS), so a bucket's past inputs are arena slots that keep their contents from one
 * run to the next.  Before a run the device copies into a bucket's past slots only the cache rows they do
 * not hold yet (the whole slot the first time: rows past the context must be finite, the mask hides
 * them but 0 x Inf would not be 0); after the run it copies the new tokens' rows of every present output
 * into the cache at their positions.  A decode step so moves 2 x layers rows per direction on the device;
 * the host writes only input_ids, attention_mask and position_ids, and reads the last token's logits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "compiled_operands.h"
#include "generate.h"

int gen_kv_alloc(struct onnx_generator *g)
{
	int ret = accel_buffer_alloc(g->dev, g->kv_cache_bytes ? g->kv_cache_bytes : 1, &g->kv_buf);

	if (ret)
		return GFAIL(g, ret, "kv cache: cannot allocate %llu bytes of device memory (%u layers x 2 x %u "
			     "kv_heads x max_len %u x head_dim %u floats): %s", (unsigned long long)g->kv_cache_bytes,
			     g->layers, g->kv_heads, g->max_len, g->head_dim, accel_last_error(g->dev));
	return 0;
}

void gen_kv_free(struct onnx_generator *g)
{
	accel_buffer_free(g->kv_buf);
	g->kv_buf = NULL;
}

/* Rows row0 .. row0+rows-1 of one layer's key (kind 0) or value (1) cache, every kv head. */
static void cache_rows(const struct onnx_generator *g, unsigned layer, int kind, uint32_t row0, uint32_t rows,
		       struct accel_tensor *t)
{
	int64_t row = (int64_t)g->head_dim * 4, head = row * g->max_len;

	*t = (struct accel_tensor){
		.buf = g->kv_buf,
		.offset = (((uint64_t)layer * 2 + (uint64_t)kind) * g->kv_heads * g->max_len + row0) * (uint64_t)row,
		.dtype = ACCEL_FP32,
		.layout = ACCEL_LAYOUT_NCHW,
		.ndim = 4,
		.shape = { 1, g->kv_heads, rows, g->head_dim },
		.strides = { head * g->kv_heads, head, row, 4 },
	};
}

/* The copy jobs of one direction: submitted together (they touch disjoint bytes), then waited for. */
struct copies {
	struct accel_job **jobs;
	unsigned n;
};

static int copy_rows(struct onnx_generator *g, struct copies *c, const struct accel_tensor *src,
		     const struct accel_tensor *dst)
{
	struct accel_transpose_desc d = { .input = src, .output = dst, .perm = { 0, 1, 2, 3 } };
	int ret = accel_transpose(g->dev, &d, NULL, &c->jobs[c->n]);

	if (ret)
		return GFAIL(g, ret, "kv cache: device copy: %s", accel_last_error(g->dev));
	c->n++;
	return 0;
}

/* Wait for every copy, add its counters to stats, free it; the first error is reported. */
static int finish(struct onnx_generator *g, struct copies *c, struct onnx_run_stats *stats, int ret)
{
	for (unsigned i = 0; i < c->n; i++) {
		struct accel_counters k;
		int r = accel_job_wait(c->jobs[i], -1);

		if (r && !ret)
			ret = GFAIL(g, r, "kv cache: device copy: %s", accel_last_error(g->dev));
		if (!r && stats && !accel_job_counters(c->jobs[i], &k))
			accel_counters_add(&stats->counters, &k);
		accel_job_free(c->jobs[i]);
	}
	c->n = 0;
	return ret;
}

/* Bring bucket b's past slots up to the context's g->len rows. */
static int before_run(struct onnx_generator *g, struct gen_bucket *b, struct copies *c)
{
	uint32_t from = b->primed ? b->synced : 0, to = b->primed ? g->len : b->past;
	int ret = 0;

	if (from >= to)
		return 0;
	for (unsigned l = 0; l < g->layers && !ret; l++)
		for (int k = 0; k < 2 && !ret; k++) {
			struct accel_tensor src, dst;
			int r = cm_value_rows(b->cm, g->m->inputs[g->in_past[l][k]], from, to - from, &dst);

			if (r == -ENOENT)	/* the plan never reads this past */
				continue;
			if (r)
				return GFAIL(g, r, "input 'past_key_values.%u.%s': not a [1, %u, %u, %u] FLOAT value in "
					     "the plan", l, k ? "value" : "key", g->kv_heads, b->past, g->head_dim);
			cache_rows(g, l, k, from, to - from, &src);
			ret = copy_rows(g, c, &src, &dst);
		}
	return ret;
}

/* Copy the n new tokens' rows of every present output into the cache at g->len. */
static int after_run(struct onnx_generator *g, struct gen_bucket *b, uint32_t n, struct copies *c)
{
	int ret = 0;

	for (unsigned l = 0; l < g->layers && !ret; l++)
		for (int k = 0; k < 2 && !ret; k++) {
			struct accel_tensor src, dst;
			int r = cm_value_rows(b->cm, g->m->outputs[g->out_present[l][k]], b->past, n, &src);

			if (r)
				return GFAIL(g, r, "output 'present.%u.%s': not a [1, %u, %u, %u] FLOAT value the device "
					     "computes", l, k ? "value" : "key", g->kv_heads, b->past + b->seq,
					     g->head_dim);
			cache_rows(g, l, k, g->len, n, &dst);
			ret = copy_rows(g, c, &src, &dst);
		}
	return ret;
}

/* The last token's logits, read from the arena: [1, seq, vocab], row n-1. */
static int take_logits(struct onnx_generator *g, struct gen_bucket *b, uint32_t n)
{
	int v = g->m->outputs[g->out_logits];
	const struct cval *cv = &b->cm->vals[v];
	const float *lg = cm_value_host(b->cm, v);

	if (!lg || cv->ndim != 3 || cv->dims[1] != b->seq || cv->dims[2] != g->vocab)
		return GFAIL(g, -EINVAL, "output 'logits': the plan does not compute it as [1, %u, %u] on the device",
			     b->seq, g->vocab);
	memcpy(g->logits, lg + (size_t)(n - 1) * g->vocab, g->vocab * sizeof(float));
	return 0;
}

int gen_kv_run(struct onnx_generator *g, struct gen_bucket *b, uint32_t n, struct onnx_run_stats *stats)
{
	struct onnx_run_stats local;
	struct accel_counters pre;
	struct copies c = { .jobs = calloc(2 * (size_t)g->layers, sizeof(*c.jobs)) };
	int ret;

	if (!c.jobs)
		return GFAIL(g, -ENOMEM, "out of memory");
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));	/* a failure before the run leaves no stale figures */
	memset(&pre, 0, sizeof(pre));
	{	/* the run zeroes stats: the copies before it are summed apart */
		struct onnx_run_stats before = { 0 };

		ret = finish(g, &c, &before, before_run(g, b, &c));
		pre = before.counters;
	}
	if (!ret) {
		b->primed = true;
		b->synced = g->len;
		ret = cm_run_resident(b->cm, b->in, b->n_in, b->resident, stats);
		if (ret)
			GFAIL(g, ret, "run (sequence %u, past %u): %s", b->seq, b->past, onnx_compiled_error(b->cm));
	}
	if (!ret)
		ret = finish(g, &c, stats, after_run(g, b, n, &c));
	if (!ret)
		ret = take_logits(g, b, n);
	accel_counters_add(&stats->counters, &pre);
	free(c.jobs);
	return ret;
}
