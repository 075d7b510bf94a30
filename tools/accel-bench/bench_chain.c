/* SPDX-License-Identifier: MIT */
/*
 * accel-bench chain: (A·B)·C as two back-to-back GEMM jobs and as one chained graph job
 * (chain #9, Documentation/chaining.md).  Prints makespan_cycles (chained), sequential_cycles (the
 * two jobs' cycles added), overlap = 1 - makespan / sequential, and verified (both results equal a
 * CPU reference bit for bit).  int8: P = requant(A·B) to int8, O = P·C in int32.
 *
 * Devices: the sequential jobs run on --seq-device, the chained job on --device.  Without
 * --device on a host without a tnpu device, both are the default geometry (4x4x16) in the sim:
 * sequential on it as one island ("sim:"), chained on it split into two islands of two rows
 * ("sim:islands=2/2") so producer and consumer run side by side.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "subcommands.h"

struct chain_opts {
	uint32_t m, k, n, p, band, slots;
	const char *device, *seq_device;
	bool json;
};

/* One device's copy of the problem. */
struct side {
	struct accel_dev *dev;
	struct accel_buffer *ba, *bb, *bc, *bp, *bo;
	struct accel_tensor ta, tb, tc, tp, to;
	struct accel_gemm_desc g1, g2;
	struct accel_graph *gr;
};

static uint64_t xrng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static int parse(int argc, char **argv, struct chain_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		uint32_t *dst = NULL;

		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "--device") && i + 1 < argc) {
			o->device = argv[++i];
			continue;
		}
		if (!strcmp(a, "--seq-device") && i + 1 < argc) {
			o->seq_device = argv[++i];
			continue;
		}
		if (!strcmp(a, "--m"))
			dst = &o->m;
		else if (!strcmp(a, "--k"))
			dst = &o->k;
		else if (!strcmp(a, "--n"))
			dst = &o->n;
		else if (!strcmp(a, "--p"))
			dst = &o->p;
		else if (!strcmp(a, "--band"))
			dst = &o->band;
		else if (!strcmp(a, "--slots"))
			dst = &o->slots;
		if (!dst || i + 1 >= argc) {
			fprintf(stderr, "accel-bench chain: unknown or incomplete option '%s'\n", a);
			return -1;
		}
		*dst = (uint32_t)strtoul(argv[++i], NULL, 0);
		if (!*dst && dst != &o->band && dst != &o->slots) {
			fprintf(stderr, "accel-bench chain: %s must be >= 1\n", a);
			return -1;
		}
	}
	return 0;
}

static int8_t requant(int32_t x, int32_t mult, unsigned shift)
{
	int64_t v = ((int64_t)x * mult + ((int64_t)1 << (shift - 1))) >> shift;

	return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

static int side_setup(struct side *s, const char *path, const struct chain_opts *o, int32_t mult, uint8_t shift)
{
	uint64_t seed = 42;
	int ret;

	ret = accel_open(path, &s->dev);
	if (ret)
		return ret;
	if ((ret = accel_buffer_alloc(s->dev, (uint64_t)o->m * o->k, &s->ba)) ||
	    (ret = accel_buffer_alloc(s->dev, (uint64_t)o->k * o->n, &s->bb)) ||
	    (ret = accel_buffer_alloc(s->dev, (uint64_t)o->n * o->p, &s->bc)) ||
	    (ret = accel_buffer_alloc(s->dev, (uint64_t)o->m * o->n, &s->bp)) ||
	    (ret = accel_buffer_alloc(s->dev, (uint64_t)o->m * o->p * 4, &s->bo)))
		return ret;
	for (uint64_t i = 0; i < (uint64_t)o->m * o->k; i++)
		((int8_t *)accel_buffer_ptr(s->ba))[i] = (int8_t)xrng(&seed);
	for (uint64_t i = 0; i < (uint64_t)o->k * o->n; i++)
		((int8_t *)accel_buffer_ptr(s->bb))[i] = (int8_t)xrng(&seed);
	for (uint64_t i = 0; i < (uint64_t)o->n * o->p; i++)
		((int8_t *)accel_buffer_ptr(s->bc))[i] = (int8_t)xrng(&seed);
	if ((ret = accel_tensor_2d(s->ba, 0, ACCEL_INT8, o->m, o->k, &s->ta)) ||
	    (ret = accel_tensor_2d(s->bb, 0, ACCEL_INT8, o->k, o->n, &s->tb)) ||
	    (ret = accel_tensor_2d(s->bc, 0, ACCEL_INT8, o->n, o->p, &s->tc)) ||
	    (ret = accel_tensor_2d(s->bp, 0, ACCEL_INT8, o->m, o->n, &s->tp)) ||
	    (ret = accel_tensor_2d(s->bo, 0, ACCEL_INT32, o->m, o->p, &s->to)))
		return ret;
	memset(&s->g1, 0, sizeof(s->g1));
	s->g1.a = &s->ta;
	s->g1.b = &s->tb;
	s->g1.c = &s->tp;
	s->g1.epi.multiplier = mult;
	s->g1.epi.shift = shift;
	memset(&s->g2, 0, sizeof(s->g2));
	s->g2.a = &s->tp;
	s->g2.b = &s->tc;
	s->g2.c = &s->to;
	return 0;
}

static void side_free(struct side *s)
{
	accel_graph_free(s->gr);
	accel_buffer_free(s->ba);
	accel_buffer_free(s->bb);
	accel_buffer_free(s->bc);
	accel_buffer_free(s->bp);
	accel_buffer_free(s->bo);
	accel_close(s->dev);
}

static int run_job(struct accel_dev *dev, int ret, struct accel_job *j, struct accel_counters *c)
{
	if (!ret)
		ret = accel_job_wait(j, -1);
	if (!ret)
		ret = accel_job_counters(j, c);
	accel_job_free(j);
	(void)dev;
	return ret;
}

/* O = requant(A·B)·C on the CPU, compared with the device's O. */
static bool verify(const struct side *s, const struct chain_opts *o, int32_t mult, uint8_t shift)
{
	const int8_t *a = accel_buffer_ptr(s->ba), *b = accel_buffer_ptr(s->bb), *c = accel_buffer_ptr(s->bc);
	const int32_t *out = accel_buffer_ptr(s->bo);
	int8_t *p = malloc(o->n);
	bool ok = p != NULL;

	for (uint32_t i = 0; i < o->m && ok; i++) {
		for (uint32_t x = 0; x < o->n; x++) {
			int32_t acc = 0;

			for (uint32_t y = 0; y < o->k; y++)
				acc += a[(size_t)i * o->k + y] * b[(size_t)y * o->n + x];
			p[x] = requant(acc, mult, shift);
		}
		for (uint32_t x = 0; x < o->p && ok; x++) {
			int32_t acc = 0;

			for (uint32_t y = 0; y < o->n; y++)
				acc += p[y] * c[(size_t)y * o->p + x];
			ok = out[(size_t)i * o->p + x] == acc;
		}
	}
	free(p);
	return ok;
}

int bench_chain_main(int argc, char **argv)
{
	struct chain_opts o = { .m = 2048, .k = 32, .n = 32, .p = 32 };
	struct accel_graph_opts go = { .island = -1 };
	struct accel_counters c1, c2, cc;
	struct accel_graph_node_info ni;
	struct side seq, ch;
	struct accel_job *j = NULL;
	struct accel_caps caps;
	const char *what = "";
	int32_t mult;
	uint8_t shift;
	uint64_t total;
	unsigned node;
	bool ok;
	int ret;

	if (parse(argc, argv, &o))
		return 2;
	memset(&seq, 0, sizeof(seq));
	memset(&ch, 0, sizeof(ch));
	go.band_rows = o.band;
	go.ring_slots = o.slots;
	accel_quant_from_scale(1.0 / (64.0 * o.k), &mult, &shift);
	if (!o.device) {
		/* The default device; in the sim, the default geometry split into two islands. */
		struct accel_dev *d;

		if (!accel_open(NULL, &d)) {
			accel_query_caps(d, &caps);
			if (!strcmp(caps.backend, "sim")) {
				o.device = "sim:islands=2/2";
				if (!o.seq_device)
					o.seq_device = "sim:";
			}
			accel_close(d);
		}
	}
	if (!o.seq_device)
		o.seq_device = o.device;
	what = "sequential device";
	ret = side_setup(&seq, o.seq_device, &o, mult, shift);
	if (!ret) {
		what = "sequential A·B";
		ret = accel_gemm(seq.dev, &seq.g1, NULL, &j);
		ret = run_job(seq.dev, ret, j, &c1);
	}
	if (!ret) {
		what = "sequential P·C";
		ret = accel_gemm(seq.dev, &seq.g2, NULL, &j);
		ret = run_job(seq.dev, ret, j, &c2);
	}
	if (!ret) {
		what = "chained device";
		ret = side_setup(&ch, o.device, &o, mult, shift);
	}
	if (!ret) {
		what = "chained graph";
		if (!(ret = accel_graph_new(ch.dev, &ch.gr)) && !(ret = accel_graph_gemm(ch.gr, &ch.g1, &node)) &&
		    !(ret = accel_graph_gemm(ch.gr, &ch.g2, &node)))
			ret = accel_graph_run(ch.gr, &go, NULL, &j);
		ret = run_job(ch.dev, ret, j, &cc);
	}
	if (ret) {
		struct accel_dev *d = ch.dev ? ch.dev : seq.dev;

		fprintf(stderr, "accel-bench chain: %s: %s: %s\n", what, accel_strerror(ret), d ? accel_last_error(d) : "");
		side_free(&seq);
		side_free(&ch);
		return 1;
	}
	ok = verify(&seq, &o, mult, shift) && verify(&ch, &o, mult, shift);
	accel_graph_node_info(ch.gr, 1, &ni);
	total = c1.total_cycles + c2.total_cycles;
	if (o.json)
		printf("{\"bench\":\"chain\",\"device\":\"%s\",\"seq_device\":\"%s\",\"m\":%u,\"k\":%u,\"n\":%u,\"p\":%u,"
		       "\"bands\":%u,\"makespan_cycles\":%llu,\"sequential_cycles\":%llu,\"overlap\":%.4f,\"ratio\":%.4f,"
		       "\"ring_rows\":%llu,\"ring_wait_cycles\":%llu,\"ring_full_cycles\":%llu,\"verified\":%s}\n",
		       o.device ? o.device : "default", o.seq_device ? o.seq_device : "default", o.m, o.k, o.n, o.p,
		       ni.bands, (unsigned long long)cc.total_cycles, (unsigned long long)total,
		       1.0 - (double)cc.total_cycles / (double)total, (double)cc.total_cycles / (double)total,
		       (unsigned long long)cc.ring_rows, (unsigned long long)cc.ring_wait_cycles,
		       (unsigned long long)cc.ring_full_cycles, ok ? "true" : "false");
	else
		printf("chain (A%ux%u·B%ux%u)·C%ux%u: chained %llu cycles in %u bands, sequential %llu cycles "
		       "(ratio %.3f), %s\n",
		       o.m, o.k, o.k, o.n, o.n, o.p, (unsigned long long)cc.total_cycles, ni.bands,
		       (unsigned long long)total, (double)cc.total_cycles / (double)total, ok ? "verified" : "MISMATCH");
	side_free(&seq);
	side_free(&ch);
	return ok ? 0 : 1;
}
