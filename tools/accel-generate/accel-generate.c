// SPDX-License-Identifier: MIT
/*
 * accel-generate - generate text with a decoder language model on a tnpu (issue #29;
 * Documentation/llm.md, "Generation runtime" and "accel-generate").
 *
 *   accel-generate MODEL.onnx (--prompt TEXT | --tokens ID,ID,...) --max-new-tokens N [--max-len L]
 *                  [--temperature T] [--top-k K] [--top-p P] [--seed S] [--device PATH|sim] [--json]
 *
 * Streams the generated tokens as they come (bytes when the vocabulary is 256, else ids), then prints
 * prefill and decode tokens/s (wall clock, and modelled from the device's cycle counters at its clock),
 * the KV-cache bytes and the decode time per token against the weight-streaming bound: the weight bytes
 * every token reads over the device's peak weight-load rate (weight_load_rate()).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tnpu_onnx.h"

#define PROG "accel-generate"
#define MAX_PROMPT 65536

static void usage(FILE *f)
{
	fprintf(f, "usage: accel-generate MODEL.onnx (--prompt TEXT | --tokens ID,ID,...) --max-new-tokens N\n"
		   "                      [--max-len L] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
		   "                      [--device PATH|sim] [--json]\n"
		   "       accel-generate --help | --version\n"
		   "Generate with a decoder (inputs input_ids, attention_mask, past_key_values.N.key/value; outputs\n"
		   "logits, present.N.key/value).  --prompt needs a byte-level model (vocabulary 256); --tokens takes\n"
		   "token ids.  --max-len is the context (default: prompt + new tokens).  Temperature 0 (default) or\n"
		   "--top-k 1 is greedy; --top-p 0 or 1 keeps every candidate; --seed seeds the sampler (default 0).\n"
		   "--json prints one object: tokens (generated ids), prefill_tokens_per_s, decode_tokens_per_s,\n"
		   "modelled_decode_tokens_per_s, decode_over_bound, kv_cache_bytes and more.\n"
		   "Exit status: 0 generated, 1 an error, 2 usage error (bad option, token id or count).\n"
		   "Reference: Documentation/llm.md.\n");
}

struct opts {
	const char *model, *prompt, *tokens, *device;
	long max_new;
	uint32_t max_len, top_k;
	float temperature, top_p;
	uint64_t seed;
	int json;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_float(const char *opt, const char *v, float lo, float hi, float *out)
{
	char *end;
	double d;

	if (!v)
		return cli_usage_error(PROG, "%s: needs a value", opt);
	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(d))
		return cli_usage_error(PROG, "%s: '%s' is not a number", opt, v);
	if (d < lo || d > hi)
		return cli_usage_error(PROG, "%s: %g is out of range (%g..%g)", opt, d, lo, hi);
	*out = (float)d;
	return 0;
}

/* --tokens "1,2,3": ids as given (range checked against the vocabulary once the model is known). */
static int parse_tokens(const char *v, int64_t *ids, size_t *n)
{
	const char *s = v;
	char *end;

	*n = 0;
	while (*s) {
		long long id;

		errno = 0;
		id = strtoll(s, &end, 10);
		if (end == s || errno || (*end && *end != ','))
			return cli_usage_error(PROG, "--tokens: '%s' is not a list of token ids (ID,ID,...)", v);
		if (*n == MAX_PROMPT)
			return cli_usage_error(PROG, "--tokens: more than %d ids", MAX_PROMPT);
		ids[(*n)++] = id;
		s = *end ? end + 1 : end;
		if (*end && !*s)
			return cli_usage_error(PROG, "--tokens: '%s' ends with a comma", v);
	}
	if (!*n)
		return cli_usage_error(PROG, "--tokens: no token ids");
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int ret = 0;

	memset(o, 0, sizeof(*o));
	o->max_new = -1;
	for (int i = 1; i < argc && !ret; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint32_t u;

		if (!strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			exit(cli_version(PROG));
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		} else if (a[0] != '-' || !a[1]) {
			if (o->model)
				return cli_usage_error(PROG, "%s: one model only", a);
			o->model = a;
			continue;
		}
		if (!v)
			return cli_usage_error(PROG, "%s: needs a value", a);
		i++;
		if (!strcmp(a, "--prompt")) {
			o->prompt = v;
		} else if (!strcmp(a, "--tokens")) {
			o->tokens = v;
		} else if (!strcmp(a, "--device")) {
			o->device = v;
		} else if (!strcmp(a, "--max-new-tokens")) {
			char *end;

			errno = 0;
			o->max_new = strtol(v, &end, 10);
			if (!*v || *end || errno)
				return cli_usage_error(PROG, "--max-new-tokens: '%s' is not a number", v);
			if (o->max_new < 1 || o->max_new > ONNX_GEN_MAX_LEN)
				return cli_usage_error(PROG, "--max-new-tokens: %ld is out of range (1..%u)", o->max_new,
						       ONNX_GEN_MAX_LEN);
		} else if (!strcmp(a, "--max-len")) {
			ret = cli_u32(PROG, a, v, 1, ONNX_GEN_MAX_LEN, &o->max_len);
		} else if (!strcmp(a, "--top-k")) {
			ret = cli_u32(PROG, a, v, 0, UINT32_MAX, &o->top_k);
		} else if (!strcmp(a, "--seed")) {
			ret = cli_u32(PROG, a, v, 0, UINT32_MAX, &u);
			o->seed = u;
		} else if (!strcmp(a, "--temperature")) {
			ret = parse_float(a, v, 0, 1e6f, &o->temperature);
		} else if (!strcmp(a, "--top-p")) {
			ret = parse_float(a, v, 0, 1, &o->top_p);
		} else {
			return cli_usage_error(PROG, "%s: unknown option", a);
		}
	}
	if (ret)
		return ret;
	if (!o->model)
		return cli_usage_error(PROG, "MODEL.onnx: missing");
	if (!o->prompt == !o->tokens)
		return cli_usage_error(PROG, "--prompt / --tokens: give exactly one");
	if (o->max_new < 0)
		return cli_usage_error(PROG, "--max-new-tokens: missing");
	return 0;
}

struct totals {
	double wall;
	uint64_t cycles, tokens;
};

static void add_run(struct totals *t, double wall, const struct onnx_run_stats *st, size_t tokens)
{
	t->wall += wall;
	t->cycles += st->counters.total_cycles;
	t->tokens += tokens;
}

static double per_s(uint64_t tokens, double s)
{
	return s > 0 ? (double)tokens / s : 0;
}

static void emit(const struct opts *o, uint32_t vocab, int64_t tok, int first)
{
	if (o->json)
		return;
	if (vocab == 256)
		putchar((int)tok);
	else
		printf(first ? "%" PRId64 : " %" PRId64, tok);
	fflush(stdout);
}

struct report {
	const int64_t *out;
	size_t n_out, n_prompt;
	struct totals pre, dec;
	struct onnx_generator_info gi;
	struct accel_caps caps;
};

/*
 * The fastest the device loads weights, bytes per cycle: with the depthwise block (CAP_FEATURES bit 7:
 * DMA_BANDS_H2D) every storage unit's own host port in parallel, 256 B/cycle each (CAP_PORTS; libaccel's
 * GEMMs load their B tiles so, plan_tiling.c), else the single DMA stream (CAP_RATES, accel_caps.rate_dma).
 */
#define FEAT_DMA_BANDS (1u << 7)
#define PORT_BYTES_PER_CYCLE 256u
static unsigned weight_load_rate(const struct accel_caps *caps)
{
	return caps->features & FEAT_DMA_BANDS ? caps->rows * PORT_BYTES_PER_CYCLE : caps->rate_dma;
}

static void print_report(const struct opts *o, const struct report *r)
{
	double hz = r->caps.clock_mhz * 1e6;
	unsigned rate = weight_load_rate(&r->caps);
	double bound = rate ? (double)r->gi.weight_bytes / rate : 0;
	double dec_cpt = r->dec.tokens ? (double)r->dec.cycles / (double)r->dec.tokens : 0;
	double m_pre = r->pre.cycles ? r->pre.tokens * hz / (double)r->pre.cycles : 0;
	double m_dec = r->dec.cycles ? r->dec.tokens * hz / (double)r->dec.cycles : 0;
	double over = bound > 0 ? dec_cpt / bound : 0;

	if (!o->json) {
		printf("\nprompt %zu tokens, generated %zu; context %u of max %u; %u shape buckets compiled\n",
		       r->n_prompt, r->n_out, r->gi.len, r->gi.max_len, r->gi.buckets);
		printf("prefill: %.1f tokens/s wall, %.1f tokens/s modelled (%" PRIu64 " device cycles at %u MHz)\n",
		       per_s(r->pre.tokens, r->pre.wall), m_pre, r->pre.cycles, r->caps.clock_mhz);
		printf("decode:  %.1f tokens/s wall, %.1f tokens/s modelled (%.0f device cycles per token)\n",
		       per_s(r->dec.tokens, r->dec.wall), m_dec, dec_cpt);
		printf("kv cache: %" PRIu64 " bytes (%u layers x 2 x %u kv heads x %u max len x %u head dim x 4 B)\n",
		       r->gi.kv_cache_bytes, r->gi.layers, r->gi.kv_heads, r->gi.max_len, r->gi.head_dim);
		printf("weight-streaming bound: %" PRIu64 " weight bytes per token / %u DMA bytes per cycle = %.0f "
		       "cycles per token; decode at %.2f x the bound\n", r->gi.weight_bytes, rate, bound, over);
		return;
	}
	printf("{\"tokens\": [");
	for (size_t i = 0; i < r->n_out; i++)
		printf(i ? ", %" PRId64 : "%" PRId64, r->out[i]);
	printf("], \"prompt_tokens\": %zu, \"max_len\": %u, \"buckets\": %u,\n", r->n_prompt, r->gi.max_len,
	       r->gi.buckets);
	printf(" \"prefill_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f,\n", per_s(r->pre.tokens, r->pre.wall),
	       per_s(r->dec.tokens, r->dec.wall));
	printf(" \"modelled_prefill_tokens_per_s\": %.3f, \"modelled_decode_tokens_per_s\": %.3f,\n", m_pre, m_dec);
	printf(" \"prefill_cycles\": %" PRIu64 ", \"decode_cycles\": %" PRIu64 ", \"decode_tokens\": %" PRIu64
	       ", \"clock_mhz\": %u,\n", r->pre.cycles, r->dec.cycles, r->dec.tokens, r->caps.clock_mhz);
	printf(" \"weight_bytes\": %" PRIu64 ", \"dma_bytes_per_cycle\": %u, \"bound_cycles_per_token\": %.3f,\n",
	       r->gi.weight_bytes, rate, bound);
	printf(" \"decode_cycles_per_token\": %.3f, \"decode_over_bound\": %.4f, \"kv_cache_bytes\": %" PRIu64 "}\n",
	       dec_cpt, over, r->gi.kv_cache_bytes);
}

static int generate(const struct opts *o, struct onnx_generator *g, const int64_t *ids, size_t n,
		    int64_t *out, struct report *r)
{
	struct onnx_sampling s = { o->temperature, o->top_k, o->top_p };
	struct onnx_run_stats st;
	double t0;
	int ret;

	onnx_generator_seed(g, o->seed);
	memset(&st, 0, sizeof(st));
	t0 = now_s();
	ret = onnx_generator_prefill(g, ids, n, &st);
	add_run(&r->pre, now_s() - t0, &st, n);
	for (long i = 0; !ret && i < o->max_new; i++) {
		if ((ret = onnx_generator_sample(g, &s, &out[i])))
			break;
		emit(o, r->gi.vocab, out[i], i == 0);
		r->n_out++;
		if (i + 1 == o->max_new)
			break;
		memset(&st, 0, sizeof(st));
		t0 = now_s();
		ret = onnx_generator_step(g, out[i], &st);
		add_run(&r->dec, now_s() - t0, &st, 1);
	}
	if (ret)
		fprintf(stderr, "\n" PROG ": %s\n", onnx_generator_error(g));
	return ret;
}

int main(int argc, char **argv)
{
	struct onnx_generator_opts go = { 0 };
	struct onnx_generator *g = NULL;
	struct onnx_model *m = NULL;
	struct accel_dev *dev = NULL;
	struct report r;
	struct opts o;
	int64_t *ids = NULL, *out = NULL;
	size_t n = 0;
	char err[512];
	int ret, status = 1;

	if ((ret = parse_args(argc, argv, &o)))
		return ret;
	ids = calloc(MAX_PROMPT, sizeof(*ids));
	out = calloc((size_t)o.max_new, sizeof(*out));
	if (!ids || !out) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	if (o.tokens && (status = parse_tokens(o.tokens, ids, &n)))
		goto done;
	status = 1;
	if ((ret = onnx_model_load(o.model, 0, &m, err, sizeof(err)))) {
		fprintf(stderr, PROG ": %s\n", err);
		goto done;
	}
	if ((ret = accel_open_msg(o.device, err, sizeof(err), &dev))) {
		fprintf(stderr, PROG ": cannot open device '%s': %s (%s)\n", o.device ? o.device : "(default)", err,
			accel_strerror(ret));
		goto done;
	}
	if (o.prompt) {
		n = strlen(o.prompt);
		if (!n || n > MAX_PROMPT) {
			status = cli_usage_error(PROG, "--prompt: %zu bytes (1..%d)", n, MAX_PROMPT);
			goto done;
		}
		for (size_t i = 0; i < n; i++)
			ids[i] = (unsigned char)o.prompt[i];
	}
	go.max_len = o.max_len ? o.max_len : (uint32_t)(n + (size_t)o.max_new > ONNX_GEN_MAX_LEN ? ONNX_GEN_MAX_LEN :
							 n + (size_t)o.max_new);
	if ((ret = onnx_generator_create(m, dev, &go, &g, err, sizeof(err)))) {
		fprintf(stderr, PROG ": %s: %s\n", o.model, err);
		goto done;
	}
	memset(&r, 0, sizeof(r));
	onnx_generator_info(g, &r.gi);
	accel_query_caps(dev, &r.caps);
	if (o.prompt && r.gi.vocab != 256) {
		status = cli_usage_error(PROG, "--prompt: the model's vocabulary is %u, not bytes (256): use --tokens",
					 r.gi.vocab);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= r.gi.vocab) {
			status = cli_usage_error(PROG, "--tokens: id %" PRId64 " (position %zu) is outside the "
						 "vocabulary (0..%u)", ids[i], i, r.gi.vocab - 1);
			goto done;
		}
	if (n <= r.gi.max_len && n + (size_t)o.max_new - 1 > r.gi.max_len) {	/* a longer prompt: the runtime's error */
		status = cli_usage_error(PROG, "--max-new-tokens: prompt %zu + %ld new tokens exceed the max length %u",
					 n, o.max_new, r.gi.max_len);
		goto done;
	}
	r.out = out;
	r.n_prompt = n;
	if (generate(&o, g, ids, n, out, &r))
		goto done;
	onnx_generator_info(g, &r.gi);
	print_report(&o, &r);
	status = 0;
done:
	onnx_generator_free(g);
	accel_close(dev);
	onnx_model_free(m);
	free(ids);
	free(out);
	return status;
}
