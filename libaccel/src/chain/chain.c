/* SPDX-License-Identifier: MIT */
/*
 * chain.c - chain #9: lowers a placed graph into one command stream (Documentation/chaining.md).
 *
 * Every island runs its own sub-stream (ISLAND command) with its own matmul pipeline.  A GEMM that
 * consumes its producer's output as A is chained: the producer's output is cut into row bands that
 * go through a ring in on-chip ring memory (seed 000 paras 40-52):
 *   producer band b:  [store] RING_WAIT SPACE 1 · band b (C tiles -> ring slot b mod S) · PUBLISH 1
 *   consumer band b:  [load ] RING_WAIT ROWS 1 · band b (A tiles <- ring slot b mod S) · RELEASE 1
 * so the consumer starts on band 0 while the producer computes band 1, without the host.  Other
 * dependencies (through host memory) use a one-slot pointer ring: the producer publishes when its
 * last store is done, the consumer's load engine waits for it.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

#define MAX_OWNED 4

struct emitter {
	struct accel_graph *g;
	struct accel_cmdstream cs;
	struct mm_ctx ctx[ACCEL_MAX_ISLANDS];
	struct accel_caps caps[ACCEL_MAX_ISLANDS];
	unsigned cur;
	unsigned slots;
	uint32_t ring_base[TNPU_NUM_RINGS], ring_pitch[TNPU_NUM_RINGS];
	/* pointer rings: producer, consumer node */
	int pr_from[TNPU_NUM_RINGS], pr_to[TNPU_NUM_RINGS];
	unsigned n_rings;
	struct accel_buffer *owned[MAX_OWNED];	/* activation identities, freed with the job */
	uint32_t owned_w[MAX_OWNED];
	bool owned_f32[MAX_OWNED];
	unsigned n_owned;
};

static void put_island(struct emitter *em, unsigned k)
{
	struct tnpu_cmd_island c = { .hdr = { TNPU_CMD_ISLAND, 0, 0, sizeof(c) }, .island = (uint8_t)k };

	if (em->cur == k)
		return;
	cs_raw(&em->cs, &c, sizeof(c));
	em->cur = k;
}

static void put_ring(struct emitter *em, bool signal, unsigned engine, unsigned ring, unsigned op)
{
	struct tnpu_cmd_ring_op c = { .hdr = { signal ? TNPU_CMD_RING_SIGNAL : TNPU_CMD_RING_WAIT, TNPU_CMD_F_ASYNC,
					       0, sizeof(c) },
				      .engine = (uint8_t)engine, .ring = (uint8_t)ring, .op = (uint8_t)op, .count = 1 };

	cs_raw(&em->cs, &c, sizeof(c));
}

static void put_ring_init(struct emitter *em, unsigned ring, unsigned prod, unsigned cons, uint32_t slots,
			  uint32_t base, uint32_t pitch)
{
	struct tnpu_cmd_ring_init c = { .hdr = { TNPU_CMD_RING_INIT, 0, 0, sizeof(c) }, .ring = (uint8_t)ring,
					.producer = (uint8_t)prod, .consumer = (uint8_t)cons, .slots = slots,
					.base = base, .pitch = pitch };

	cs_raw(&em->cs, &c, sizeof(c));
}

static uint32_t out_bytes(const struct gnode *n)
{
	return n->N * (uint32_t)accel_dtype_size(n->c.dtype);
}

static bool same_tensor(const struct accel_tensor *x, const struct accel_tensor *y)
{
	return x->buf == y->buf && x->offset == y->offset && x->dtype == y->dtype && x->ndim == y->ndim &&
	       !memcmp(x->shape, y->shape, sizeof(x->shape[0]) * x->ndim) &&
	       !memcmp(x->strides, y->strides, sizeof(x->strides[0]) * x->ndim);
}

/* Which GEMMs chain to their producer (Documentation/chaining.md "When ops are chained"). */
static void choose_chains(struct accel_graph *g, const struct accel_graph_opts *o)
{
	for (unsigned i = 0; i < g->count; i++) {
		struct gnode *n = &g->n[i];
		int prod = -1, readers = 0;

		if (n->kind != GN_GEMM || (o->flags & ACCEL_GRAPH_NO_CHAIN) || !g->dev->ring_mem || !g->dev->rings)
			continue;
		for (unsigned j = 0; j < i; j++) {
			if (!gn_reads(n, &g->n[j]))
				continue;
			if (prod >= 0)
				prod = -2;	/* several producers: not chained */
			else if (prod == -1)
				prod = (int)j;
		}
		if (prod < 0 || g->n[prod].chain_to >= 0 || !same_tensor(&n->a, &g->n[prod].c) ||
		    gn_overlaps(&n->b, &g->n[prod].c) || (n->epi.bias && gn_overlaps(&n->bias, &g->n[prod].c)))
			continue;
		for (unsigned k = (unsigned)prod + 1; k < g->count; k++)
			readers += gn_reads(&g->n[k], &g->n[prod]);
		if (readers != 1)
			continue;
		n->chained_from = prod;
		g->n[prod].chain_to = (int)i;
	}
}

/* Bands of every chain and ring memory for its edges; a chain that cannot get at least two bands
 * in the ring memory is dissolved. */
static void choose_bands(struct emitter *em, const struct accel_graph_opts *o)
{
	struct accel_graph *g = em->g;
	uint32_t used = 0;

	for (unsigned i = 0; i < g->count; i++) {
		struct gnode *h = &g->n[i];
		uint32_t br, need, edges;

		if (h->chained_from >= 0 || h->chain_to < 0)
			continue;
		br = o->band_rows ? o->band_rows : ACCEL_MAX(16u, (ACCEL_DIV_UP(h->M, 4u) + 15) / 16 * 16);
		br = ACCEL_MIN(br, h->M);
		for (;;) {
			need = 0;
			for (int j = (int)i; g->n[j].chain_to >= 0; j = g->n[j].chain_to)
				need += em->slots * br * out_bytes(&g->n[j]);
			if (used + need <= g->dev->ring_mem || br == 1)
				break;
			br = ACCEL_MAX(1u, br / 2);
		}
		edges = 0;
		for (int j = (int)i; g->n[j].chain_to >= 0; j = g->n[j].chain_to)
			edges++;
		if (used + need > g->dev->ring_mem || ACCEL_DIV_UP(h->M, br) < 2 ||
		    em->n_rings + edges > ACCEL_MIN(g->dev->rings, (uint32_t)TNPU_NUM_RINGS)) {
			for (int j = (int)i, nx; g->n[j].chain_to >= 0; j = nx) {
				nx = g->n[j].chain_to;
				g->n[nx].chained_from = -1;
				g->n[j].chain_to = -1;
			}
			continue;
		}
		for (int j = (int)i;; j = g->n[j].chain_to) {
			g->n[j].band_rows = br;
			g->n[j].bands = ACCEL_DIV_UP(g->n[j].M, br);
			if (g->n[j].chain_to < 0)
				break;
			em->ring_base[em->n_rings] = used;
			em->ring_pitch[em->n_rings] = br * out_bytes(&g->n[j]);
			used += em->slots * em->ring_pitch[em->n_rings];
			g->n[j].ring_out = (int)em->n_rings;
			g->n[g->n[j].chain_to].ring_in = (int)em->n_rings;
			em->n_rings++;
		}
	}
}

static struct accel_buffer *identity(struct emitter *em, const struct gnode *n, int *err)
{
	uint32_t w = n->K % 64 == 0 ? 64 : n->K, e = n->f32 ? 4 : 1;
	struct accel_buffer *b;

	for (unsigned i = 0; i < em->n_owned; i++)
		if (em->owned_w[i] == w && em->owned_f32[i] == n->f32)
			return em->owned[i];
	if (em->n_owned == MAX_OWNED) {
		*err = accel_seterr(em->g->dev, -E2BIG, "graph: too many different activation widths");
		return NULL;
	}
	*err = accel_buffer_alloc(em->g->dev, (uint64_t)w * w * e, &b);
	if (*err)
		return NULL;
	for (uint32_t i = 0; i < w; i++) {
		if (n->f32)
			((float *)b->ptr)[i * w + i] = 1.0f;
		else
			((int8_t *)b->ptr)[i * w + i] = 1;
	}
	em->owned_w[em->n_owned] = w;
	em->owned_f32[em->n_owned] = n->f32;
	em->owned[em->n_owned++] = b;
	cs_use(&em->cs, b);
	return b;
}

static bool unit_ready(const struct emitter *em, unsigned i)
{
	const struct accel_graph *g = em->g;
	const struct gnode *n = &g->n[i];
	uint32_t b = n->next_band;

	if (b == n->bands)
		return false;
	if (b == 0)
		for (unsigned r = 0; r < em->n_rings; r++)
			if (em->pr_to[r] == (int)i && g->n[em->pr_from[r]].next_band != g->n[em->pr_from[r]].bands)
				return false;
	if (n->chained_from >= 0 && g->n[n->chained_from].next_band <= b)
		return false;
	/* Back-pressure in stream order: slot b mod S is free once the consumer took band b - S. */
	if (n->chain_to >= 0 && b >= em->slots && g->n[n->chain_to].next_band + em->slots <= b)
		return false;
	return true;
}

static int emit_unit(struct emitter *em, unsigned i)
{
	struct accel_graph *g = em->g;
	struct gnode *n = &g->n[i];
	uint32_t b = n->next_band, m0 = b * n->band_rows, rows = ACCEL_MIN(n->band_rows, n->M - m0);
	uint64_t in = UINT64_MAX, out = UINT64_MAX;
	struct accel_buffer *ident = NULL;
	struct mm_problem p;
	int ret = 0;

	put_island(em, (unsigned)n->island);
	if (b == 0)
		for (unsigned r = 0; r < em->n_rings; r++)
			if (em->pr_to[r] == (int)i)
				put_ring(em, false, TNPU_ENGINE_LOAD, r, TNPU_RING_WAIT_ROWS);
	if (n->ring_in >= 0) {
		put_ring(em, false, TNPU_ENGINE_LOAD, (unsigned)n->ring_in, TNPU_RING_WAIT_ROWS);
		in = em->ring_base[n->ring_in] + (uint64_t)(b % em->slots) * em->ring_pitch[n->ring_in];
	}
	if (n->ring_out >= 0) {
		put_ring(em, false, TNPU_ENGINE_STORE, (unsigned)n->ring_out, TNPU_RING_WAIT_SPACE);
		out = em->ring_base[n->ring_out] + (uint64_t)(b % em->slots) * em->ring_pitch[n->ring_out];
	}
	if (n->kind == GN_ACT && !(ident = identity(em, n, &ret)))
		return ret;
	ret = gn_problem(g, i, m0, rows, in, out, ident, &p);
	if (!ret)
		ret = mm_emit(&em->ctx[n->island], &p);
	if (ret)
		return ret;
	if (n->ring_in >= 0)
		put_ring(em, true, TNPU_ENGINE_LOAD, (unsigned)n->ring_in, TNPU_RING_RELEASE);
	if (n->ring_out >= 0)
		put_ring(em, true, TNPU_ENGINE_STORE, (unsigned)n->ring_out, TNPU_RING_PUBLISH);
	n->next_band++;
	if (n->next_band == n->bands)
		for (unsigned r = 0; r < em->n_rings; r++)
			if (em->pr_from[r] == (int)i) {
				put_ring(em, false, TNPU_ENGINE_STORE, r, TNPU_RING_WAIT_SPACE);
				put_ring(em, true, TNPU_ENGINE_STORE, r, TNPU_RING_PUBLISH);
			}
	return 0;
}

int chain_emit(struct accel_graph *g, const struct accel_graph_opts *o, const struct accel_submit *sub,
	       struct accel_job **job)
{
	struct accel_dev *dev = g->dev;
	struct emitter *em = calloc(1, sizeof(*em));
	unsigned total = 0, done = 0;
	int ret = 0;

	if (!em)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	em->g = g;
	em->slots = o->ring_slots ? o->ring_slots : 3;
	if (em->slots < 2 || em->slots > TNPU_RING_MAX_SLOTS) {
		free(em);
		return accel_seterr(dev, -EINVAL, "accel_graph_run: ring_slots must be 2..%u", TNPU_RING_MAX_SLOTS);
	}
	for (unsigned i = 0; i < g->count; i++) {
		struct gnode *n = &g->n[i];

		n->island = -1;
		n->chained_from = n->chain_to = n->ring_in = n->ring_out = -1;
		n->band_rows = n->M;
		n->bands = 1;
		n->next_band = 0;
	}
	choose_chains(g, o);
	choose_bands(em, o);
	ret = graph_place(g, o);
	if (ret)
		goto out_free;
	/* One-slot pointer rings for the remaining (host-memory) dependencies. */
	for (unsigned i = 0; i < g->count && !ret; i++)
		for (unsigned j = 0; j < i && !ret; j++) {
			if (!gn_reads(&g->n[i], &g->n[j]) || g->n[i].chained_from == (int)j)
				continue;
			if (em->n_rings == ACCEL_MIN(dev->rings, (uint32_t)TNPU_NUM_RINGS)) {
				ret = accel_seterr(dev, -E2BIG, "graph: more than %u dependencies need rings; split the graph",
						   ACCEL_MIN(dev->rings, (uint32_t)TNPU_NUM_RINGS));
				break;
			}
			em->pr_from[em->n_rings] = (int)j;
			em->pr_to[em->n_rings] = (int)i;
			em->ring_pitch[em->n_rings] = 0;
			em->n_rings++;
		}
	if (ret)
		goto out_free;
	for (unsigned r = 0; r < TNPU_NUM_RINGS; r++)
		if (r >= em->n_rings || em->ring_pitch[r])
			em->pr_from[r] = em->pr_to[r] = -1;

	cs_init(&em->cs, dev);
	for (unsigned i = 0; i < g->count; i++) {
		cs_use(&em->cs, g->n[i].a.buf);
		if (g->n[i].kind == GN_GEMM)
			cs_use(&em->cs, g->n[i].b.buf);
		cs_use(&em->cs, g->n[i].c.buf);
		if (g->n[i].epi.bias)
			cs_use(&em->cs, g->n[i].bias.buf);
		total += g->n[i].bands;
	}
	for (unsigned k = 0; k < dev->n_islands; k++) {
		island_caps(dev, k, &em->caps[k]);
		mm_ctx_init(&em->ctx[k], dev, &em->cs);
		em->ctx[k].caps = &em->caps[k];
		/* Rings and islands are job state: the whole graph must stay one hardware job. */
		em->ctx[k].cut_bytes = SIZE_MAX;
	}
	for (unsigned r = 0; r < em->n_rings; r++) {
		bool ptr = em->pr_from[r] >= 0;
		int pn = -1, cn = -1;

		if (ptr) {
			pn = em->pr_from[r];
			cn = em->pr_to[r];
		} else {
			for (unsigned i = 0; i < g->count; i++)
				if (g->n[i].ring_out == (int)r) {
					pn = (int)i;
					cn = g->n[i].chain_to;
				}
		}
		put_ring_init(em, r, (unsigned)g->n[pn].island, (unsigned)g->n[cn].island, ptr ? 1 : em->slots,
			      ptr ? 0 : em->ring_base[r], em->ring_pitch[r]);
	}
	while (done < total && !ret) {
		unsigned i;

		/* Each island's sub-stream follows the scheduler's order (estimated start). */
		unsigned pick = g->count;

		for (i = 0; i < g->count; i++)
			if (unit_ready(em, i) && (pick == g->count || g->n[i].est_start < g->n[pick].est_start))
				pick = i;
		i = pick;
		if (i == g->count) {
			ret = accel_seterr(dev, -EDEADLK, "graph: internal error: no band can be emitted");
			break;
		}
		ret = emit_unit(em, i);
		done++;
	}
	if (!ret && em->cs.err)
		ret = accel_seterr(dev, em->cs.err, "out of memory while building the command stream");
	if (!ret && em->cs.len > dev->caps.max_cmdbuf)
		ret = accel_seterr(dev, -E2BIG, "graph: %zu command bytes do not fit one command buffer (%u)", em->cs.len,
				   dev->caps.max_cmdbuf);
	ret = accel_op_submit(dev, &em->cs, ret, sub, em->owned, em->n_owned, job);
	free(em);
	return ret;
out_free:
	free(em);
	return ret;
}
