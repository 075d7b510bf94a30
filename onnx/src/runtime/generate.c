// SPDX-License-Identifier: MIT
/*
 * generate.c - the generation runtime (tnpu_onnx_generate.h, Documentation/llm.md "Generation runtime"):
 * recognise a decoder's I/O, keep its KV cache, run prefill and decode steps compiled per shape bucket.
 * Sampling is in generate_sample.c, the device-resident KV cache in generate_kv.c; the reference (no device)
 * keeps its cache in host memory and copies it in and out of each run here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tnpu_onnx.h"
#include "compile.h"
#include "generate.h"

#define MIN_PAST_BUCKET 16u

static int fail(char *err, size_t len, int ret, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return ret;
}

int gen_err(struct onnx_generator *g, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, sizeof(g->err), fmt, ap);
	va_end(ap);
	return ret;
}

/* "past_key_values.N.key" -> N, kind 0 (key) / 1 (value); -1 when the name has another form. */
static int kv_index(const char *name, const char *prefix, unsigned *layer, int *kind)
{
	size_t pl = strlen(prefix);
	char *end;
	unsigned long n;

	if (strncmp(name, prefix, pl) || name[pl] < '0' || name[pl] > '9')
		return -1;
	n = strtoul(name + pl, &end, 10);
	if (n >= GEN_MAX_LAYERS)
		return -1;
	if (!strcmp(end, ".key"))
		*kind = 0;
	else if (!strcmp(end, ".value"))
		*kind = 1;
	else
		return -1;
	*layer = (unsigned)n;
	return 0;
}

static int check_int64_2d(const struct onnx_value_desc *d, char *err, size_t len)
{
	if (d->dtype != ONNX_INT64 || d->ndim != 2)
		return fail(err, len, -EINVAL, "input '%s': must be INT64 [batch, sequence] (is %s, rank %d)", d->name,
			    onnx_dtype_name(d->dtype), d->ndim);
	return 0;
}

/* kv_heads and head_dim of a past/present value, checked against the first one seen. */
static int check_kv(struct onnx_generator *g, const struct onnx_value_desc *d, const char *what, char *err,
		    size_t len)
{
	if (d->dtype != ONNX_FLOAT || d->ndim != 4)
		return fail(err, len, -EINVAL, "%s '%s': must be FLOAT [batch, kv_heads, length, head_dim] (is %s, rank %d)",
			    what, d->name, onnx_dtype_name(d->dtype), d->ndim);
	if (d->dims[1] <= 0 || d->dims[3] <= 0)
		return fail(err, len, -EINVAL, "%s '%s': kv_heads and head_dim must be fixed (dims 1 and 3 are %lld, %lld)",
			    what, d->name, (long long)d->dims[1], (long long)d->dims[3]);
	if (!g->kv_heads) {
		g->kv_heads = (uint32_t)d->dims[1];
		g->head_dim = (uint32_t)d->dims[3];
	} else if (d->dims[1] != g->kv_heads || d->dims[3] != g->head_dim) {
		return fail(err, len, -EINVAL,
			    "%s '%s': shape [.., %lld, .., %lld] does not pair with the other past/present values' "
			    "kv_heads %u, head_dim %u", what, d->name, (long long)d->dims[1], (long long)d->dims[3],
			    g->kv_heads, g->head_dim);
	}
	return 0;
}

static int recognise_inputs(struct onnx_generator *g, char *err, size_t len)
{
	unsigned n = onnx_model_n_inputs(g->m), layer;
	struct onnx_value_desc d;
	int kind, ret;

	g->in_ids = g->in_mask = g->in_pos = -1;
	for (unsigned i = 0; i < n; i++) {
		if ((ret = onnx_model_input_desc(g->m, i, &d)))
			return fail(err, len, ret, "input %u: cannot describe it", i);
		if (!strcmp(d.name, "input_ids")) {
			g->in_ids = (int)i;
			ret = check_int64_2d(&d, err, len);
		} else if (!strcmp(d.name, "attention_mask")) {
			g->in_mask = (int)i;
			ret = check_int64_2d(&d, err, len);
		} else if (!strcmp(d.name, "position_ids")) {
			g->in_pos = (int)i;
			ret = check_int64_2d(&d, err, len);
		} else if (!kv_index(d.name, "past_key_values.", &layer, &kind)) {
			if (g->in_past[layer][kind] >= 0)
				return fail(err, len, -EINVAL, "input '%s': given twice", d.name);
			g->in_past[layer][kind] = (int)i;
			if (layer + 1 > g->layers)
				g->layers = layer + 1;
			ret = check_kv(g, &d, "input", err, len);
		} else {
			return fail(err, len, -EINVAL,
				    "input '%s': not a decoder input (input_ids, attention_mask, position_ids, "
				    "past_key_values.N.key/value)", d.name);
		}
		if (ret)
			return ret;
	}
	if (g->in_ids < 0)
		return fail(err, len, -EINVAL, "input 'input_ids': missing (not a decoder model)");
	if (g->in_mask < 0)
		return fail(err, len, -EINVAL, "input 'attention_mask': missing (the buckets' padding needs it)");
	if (!g->layers)
		return fail(err, len, -EINVAL, "input 'past_key_values.0.key': missing (no KV-cache inputs)");
	return 0;
}

static int recognise_outputs(struct onnx_generator *g, char *err, size_t len)
{
	unsigned n = onnx_model_n_outputs(g->m), layer;
	struct onnx_value_desc d;
	int kind, ret;

	g->out_logits = -1;
	for (unsigned i = 0; i < n; i++) {
		if ((ret = onnx_model_output_desc(g->m, i, &d)))
			return fail(err, len, ret, "output %u: cannot describe it", i);
		if (!strcmp(d.name, "logits")) {
			if (d.dtype != ONNX_FLOAT || d.ndim != 3 || d.dims[2] <= 0)
				return fail(err, len, -EINVAL,
					    "output 'logits': must be FLOAT [batch, sequence, vocab] with a fixed vocab "
					    "(is %s, rank %d)", onnx_dtype_name(d.dtype), d.ndim);
			g->out_logits = (int)i;
			g->vocab = (uint32_t)d.dims[2];
		} else if (!kv_index(d.name, "present.", &layer, &kind)) {
			if (layer >= g->layers || g->in_past[layer][kind] < 0)
				return fail(err, len, -EINVAL, "output '%s': no input 'past_key_values.%u.%s' to pair with",
					    d.name, layer, kind ? "value" : "key");
			if (g->out_present[layer][kind] >= 0)
				return fail(err, len, -EINVAL, "output '%s': given twice", d.name);
			g->out_present[layer][kind] = (int)i;
			if ((ret = check_kv(g, &d, "output", err, len)))
				return ret;
		}
		/* Other outputs (hidden states, ...) are computed and ignored. */
	}
	if (g->out_logits < 0)
		return fail(err, len, -EINVAL, "output 'logits': missing (not a decoder model)");
	for (unsigned l = 0; l < g->layers; l++)
		for (int k = 0; k < 2; k++) {
			if (g->in_past[l][k] < 0)
				return fail(err, len, -EINVAL, "input 'past_key_values.%u.%s': missing (layers 0..%u have "
					    "past values)", l, k ? "value" : "key", g->layers - 1);
			if (g->out_present[l][k] < 0)
				return fail(err, len, -EINVAL, "output 'present.%u.%s': missing (input "
					    "'past_key_values.%u.%s' has no present to pair with)", l, k ? "value" : "key",
					    l, k ? "value" : "key");
		}
	return 0;
}

int onnx_generator_create(struct onnx_model *m, struct accel_dev *dev, const struct onnx_generator_opts *opts,
			  struct onnx_generator **out, char *err, size_t errlen)
{
	struct onnx_generator *g;
	uint64_t elems;
	int ret;

	if (!m || !opts || !out)
		return fail(err, errlen, -EINVAL, "model, opts and out must not be NULL");
	*out = NULL;
	if (opts->max_len < 1 || opts->max_len > ONNX_GEN_MAX_LEN)
		return fail(err, errlen, -EINVAL, "max_len: %u is out of range (1..%u)", opts->max_len, ONNX_GEN_MAX_LEN);
	g = calloc(1, sizeof(*g));
	if (!g)
		return fail(err, errlen, -ENOMEM, "out of memory");
	g->m = m;
	g->dev = dev;
	g->max_len = opts->max_len;
	g->compile_flags = opts->compile_flags;
	memset(g->in_past, 0xff, sizeof(g->in_past));
	memset(g->out_present, 0xff, sizeof(g->out_present));
	if ((ret = recognise_inputs(g, err, errlen)) || (ret = recognise_outputs(g, err, errlen)))
		goto fail;
	elems = (uint64_t)g->layers * 2 * g->kv_heads * g->max_len * g->head_dim;
	g->kv_cache_bytes = elems * sizeof(float);
	g->logits = calloc(g->vocab, sizeof(float));
	if (!g->logits) {
		ret = fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	if (dev) {	/* device memory (generate_kv.c) */
		if ((ret = gen_kv_alloc(g))) {
			fail(err, errlen, ret, "%s", g->err);
			goto fail;
		}
	} else if (!(g->cache = elems <= SIZE_MAX / sizeof(float) ? calloc(elems, sizeof(float)) : NULL)) {
		ret = fail(err, errlen, -ENOMEM, "kv cache: cannot allocate %llu bytes (%u layers x 2 x %u kv_heads x "
			   "max_len %u x head_dim %u floats)", (unsigned long long)g->kv_cache_bytes, g->layers,
			   g->kv_heads, g->max_len, g->head_dim);
		goto fail;
	}
	gen_seed(g, 0);
	*out = g;
	return 0;
fail:
	onnx_generator_free(g);
	return ret;
}

static void bucket_free(struct gen_bucket *b)
{
	onnx_compiled_free(b->cm);
	for (unsigned i = 0; i < b->n_in; i++)
		onnx_tensor_release(&b->in[i]);
	free(b->in);
	free(b->resident);
}

void onnx_generator_free(struct onnx_generator *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->n_buckets; i++)
		bucket_free(&g->buckets[i]);
	gen_kv_free(g);
	free(g->cache);
	free(g->logits);
	free(g);
}

const char *onnx_generator_error(const struct onnx_generator *g)
{
	return g ? g->err : "no generator";
}

void onnx_generator_reset(struct onnx_generator *g)
{
	if (g) {
		g->len = 0;
		g->have_logits = false;
		for (unsigned i = 0; i < g->n_buckets; i++)
			g->buckets[i].synced = 0;
	}
}

const float *onnx_generator_logits(const struct onnx_generator *g)
{
	return g && g->have_logits ? g->logits : NULL;
}

int onnx_generator_info(const struct onnx_generator *g, struct onnx_generator_info *out)
{
	if (!g || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->layers = g->layers;
	out->kv_heads = g->kv_heads;
	out->head_dim = g->head_dim;
	out->vocab = g->vocab;
	out->max_len = g->max_len;
	out->len = g->len;
	out->kv_cache_bytes = g->kv_cache_bytes;
	out->buckets = g->n_buckets;
	out->weight_bytes = g->weight_bytes;
	return 0;
}

static uint32_t pow2_at_least(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

uint32_t gen_seq_bucket(uint32_t n, uint32_t max_len)
{
	uint32_t b = n <= 1 ? 1 : pow2_at_least(n);

	return b < max_len ? b : max_len;
}

uint32_t gen_past_bucket(uint32_t p, uint32_t max_len)
{
	uint32_t b = pow2_at_least(p > MIN_PAST_BUCKET ? p : MIN_PAST_BUCKET);

	return b < max_len ? b : max_len;
}

/* The bucket (seq, past): found, or compiled now with its input tensors allocated once. */
static int bucket_get(struct onnx_generator *g, uint32_t seq, uint32_t past, struct gen_bucket **out)
{
	unsigned n_in = onnx_model_n_inputs(g->m);
	struct gen_bucket *b;
	char cerr[256];
	int ret;

	for (unsigned i = 0; i < g->n_buckets; i++)
		if (g->buckets[i].seq == seq && g->buckets[i].past == past) {
			*out = &g->buckets[i];
			return 0;
		}
	if (g->n_buckets == GEN_MAX_BUCKETS)
		return GFAIL(g, -ENOSPC, "bucket (sequence %u, past %u): more than %u buckets", seq, past,
			     GEN_MAX_BUCKETS);
	b = &g->buckets[g->n_buckets];
	memset(b, 0, sizeof(*b));
	b->seq = seq;
	b->past = past;
	b->in = calloc(n_in, sizeof(*b->in));
	b->resident = calloc(n_in, 1);
	if (!b->in || !b->resident)
		return GFAIL(g, -ENOMEM, "out of memory");
	b->n_in = n_in;
	ret = 0;
	for (unsigned i = 0; i < n_in && !ret; i++) {
		int64_t dims[4] = { 1, seq, 0, 0 };
		enum onnx_dtype dt = ONNX_INT64;
		unsigned nd = 2;

		if ((int)i == g->in_mask) {
			dims[1] = (int64_t)past + seq;
		} else if ((int)i != g->in_ids && (int)i != g->in_pos) {
			dt = ONNX_FLOAT;
			nd = 4;
			dims[1] = g->kv_heads;
			dims[2] = past;
			dims[3] = g->head_dim;
		}
		ret = onnx_tensor_alloc(&b->in[i], dt, nd, dims);
	}
	if (ret) {
		bucket_free(b);
		return GFAIL(g, ret, "bucket (sequence %u, past %u): cannot allocate its inputs", seq, past);
	}
	if (g->dev) {
		ret = onnx_compile(g->m, g->dev, b->in, n_in, g->compile_flags | CM_COMPILE_KEEP_INPUTS, &b->cm, cerr,
				   sizeof(cerr));
		if (ret) {
			bucket_free(b);
			return GFAIL(g, ret, "bucket (sequence %u, past %u): compile: %s", seq, past, cerr);
		}
		/* the past values live in the plan's arena (generate_kv.c): keep only their shapes */
		for (unsigned l = 0; l < g->layers; l++)
			for (int k = 0; k < 2; k++) {
				struct onnx_tensor *t = &b->in[g->in_past[l][k]];

				free(t->data);
				t->data = NULL;
				b->resident[g->in_past[l][k]] = 1;
			}
		struct onnx_compiled_info ci;

		if (!onnx_compiled_info(b->cm, &ci))
			g->weight_bytes = ci.weight_bytes;
	}
	g->n_buckets++;
	*out = b;
	return 0;
}

/* Fill the bucket's id, position and mask inputs for n new tokens after the g->len cached ones. */
static void fill_tokens(struct onnx_generator *g, struct gen_bucket *b, const int64_t *ids, uint32_t n)
{
	uint32_t p = g->len;
	int64_t *in_ids = b->in[g->in_ids].data, *mask = b->in[g->in_mask].data;

	for (uint32_t i = 0; i < b->seq; i++)
		in_ids[i] = i < n ? ids[i] : 0;
	if (g->in_pos >= 0) {
		int64_t *pos = b->in[g->in_pos].data;

		/* Padding rows take position 0: any valid row of a position table; their outputs are dropped. */
		for (uint32_t i = 0; i < b->seq; i++)
			pos[i] = i < n ? (int64_t)(p + i) : 0;
	}
	for (uint32_t j = 0; j < b->past; j++)
		mask[j] = j < p;
	for (uint32_t i = 0; i < b->seq; i++)
		mask[b->past + i] = i < n;
}

/* The reference's host cache: the bucket's past inputs from the cache's first g->len rows. */
static void fill_past(struct onnx_generator *g, struct gen_bucket *b)
{
	uint32_t p = g->len, hd = g->head_dim;

	for (unsigned l = 0; l < g->layers; l++)
		for (int k = 0; k < 2; k++) {
			float *dst = b->in[g->in_past[l][k]].data;

			for (uint32_t h = 0; h < g->kv_heads; h++) {
				float *row = dst + (size_t)h * b->past * hd;

				memcpy(row, gen_cache_at(g, l, k, h, 0), (size_t)p * hd * sizeof(float));
				memset(row + (size_t)p * hd, 0, (size_t)(b->past - p) * hd * sizeof(float));
			}
		}
}

/* Keep the new tokens' present rows (rows past .. past+n-1 of [1, kv, past+seq, hd]) and the last logits. */
static int take_outputs(struct onnx_generator *g, struct gen_bucket *b, struct onnx_tensor *outs, uint32_t n)
{
	uint32_t total = b->past + b->seq, hd = g->head_dim;
	const struct onnx_tensor *lg = &outs[g->out_logits];

	if (lg->ndim != 3 || lg->dims[1] != b->seq || lg->dims[2] != g->vocab)
		return GFAIL(g, -EINVAL, "output 'logits': the run gave shape [%lld, %lld, %lld], expected [1, %u, %u]",
			     (long long)lg->dims[0], (long long)lg->dims[1], (long long)lg->dims[2], b->seq, g->vocab);
	memcpy(g->logits, (const float *)lg->data + (size_t)(n - 1) * g->vocab, g->vocab * sizeof(float));
	for (unsigned l = 0; l < g->layers; l++)
		for (int k = 0; k < 2; k++) {
			const struct onnx_tensor *t = &outs[g->out_present[l][k]];

			if (t->ndim != 4 || t->dims[1] != g->kv_heads || t->dims[2] != total || t->dims[3] != hd)
				return GFAIL(g, -EINVAL, "output 'present.%u.%s': the run gave length %lld, expected "
					     "past %u + sequence %u", l, k ? "value" : "key", (long long)t->dims[2],
					     b->past, b->seq);
			for (uint32_t h = 0; h < g->kv_heads; h++)
				memcpy(gen_cache_at(g, l, k, h, g->len),
				       (const float *)t->data + ((size_t)h * total + b->past) * hd,
				       (size_t)n * hd * sizeof(float));
		}
	return 0;
}

int onnx_generator_prefill(struct onnx_generator *g, const int64_t *ids, size_t n, struct onnx_run_stats *stats)
{
	unsigned n_out;
	struct onnx_tensor *outs;
	struct gen_bucket *b;
	int ret;

	if (!g)
		return -EINVAL;
	if (!ids || !n)
		return GFAIL(g, -EINVAL, "ids: no tokens to run");
	if (n > g->max_len - g->len)
		return GFAIL(g, -E2BIG, "%zu tokens after the %u in the context exceed the max length %u", n, g->len,
			     g->max_len);
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= g->vocab)
			return GFAIL(g, -EINVAL, "token id %lld at position %zu is outside the vocabulary (0..%u)",
				     (long long)ids[i], i, g->vocab - 1);
	ret = bucket_get(g, gen_seq_bucket((uint32_t)n, g->max_len), gen_past_bucket(g->len, g->max_len), &b);
	if (ret)
		return ret;
	fill_tokens(g, b, ids, (uint32_t)n);
	if (g->kv_buf) {	/* the device-resident cache (generate_kv.c) */
		if (!(ret = gen_kv_run(g, b, (uint32_t)n, stats))) {
			g->len += (uint32_t)n;
			g->have_logits = true;
		}
		return ret;
	}
	fill_past(g, b);
	n_out = onnx_model_n_outputs(g->m);
	outs = calloc(n_out, sizeof(*outs));
	if (!outs)
		return GFAIL(g, -ENOMEM, "out of memory");
	ret = onnx_run(g->m, NULL, b->in, b->n_in, outs, n_out, stats);	/* the reference */
	if (ret)
		GFAIL(g, ret, "run (sequence %u, past %u): %s", b->seq, b->past, onnx_model_error(g->m));
	else if (!(ret = take_outputs(g, b, outs, (uint32_t)n))) {
		g->len += (uint32_t)n;
		g->have_logits = true;
	}
	for (unsigned i = 0; i < n_out; i++)
		onnx_tensor_release(&outs[i]);
	free(outs);
	return ret;
}

int onnx_generator_step(struct onnx_generator *g, int64_t token, struct onnx_run_stats *stats)
{
	return onnx_generator_prefill(g, &token, 1, stats);
}
