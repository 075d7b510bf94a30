/* SPDX-License-Identifier: MIT */
/*
 * graph.c - chain #9: a small op graph (GEMM, activation), the island query, the cost model and
 * the scheduler that places every op on an island (Documentation/chaining.md).  chain.c lowers
 * the placed graph into one command stream.
 */
#include <stdlib.h>
#include <string.h>

#include "epilogue.h"
#include "graph.h"

#define ID_W 64u	/* identity width of the activation lowering (as accel_activation) */

int accel_query_islands(struct accel_dev *dev, struct accel_island *out, unsigned max, unsigned *n)
{
	if (!dev)
		return -EINVAL;
	if (!n || (max && !out))
		return accel_seterr(dev, -EINVAL, "accel_query_islands: n is NULL, or out is NULL with max > 0");
	for (unsigned i = 0; i < dev->n_islands && i < max; i++)
		out[i] = dev->islands[i];
	*n = dev->n_islands;
	return 0;
}

void island_caps(const struct accel_dev *dev, unsigned k, struct accel_caps *out)
{
	*out = dev->caps;
	out->rows = dev->islands[k].rows;
}

int accel_graph_new(struct accel_dev *dev, struct accel_graph **out)
{
	struct accel_graph *g;

	if (!dev)
		return -EINVAL;
	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_graph_new: out is NULL");
	*out = NULL;
	if (!dev->n_islands)
		return accel_seterr(dev, -ENODEV, "the device reports no islands");
	g = calloc(1, sizeof(*g));
	if (!g)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	g->dev = dev;
	accel_obj_add(&dev->objs, &g->link, ACCEL_OBJ_GRAPH);
	*out = g;
	return 0;
}

void accel_graph_free(struct accel_graph *g)
{
	if (!g)
		return;
	accel_obj_del(&g->link);
	free(g->n);
	free(g);
}

static struct gnode *gn_add(struct accel_graph *g)
{
	if (g->count == g->cap) {
		unsigned cap = g->cap ? 2 * g->cap : 8;
		struct gnode *n = realloc(g->n, cap * sizeof(*n));

		if (!n)
			return NULL;
		g->n = n;
		g->cap = cap;
	}
	memset(&g->n[g->count], 0, sizeof(g->n[0]));
	return &g->n[g->count];
}

/* 2-D, row-major with contiguous columns, of an accepted dtype. */
static int mat_ok(struct accel_dev *dev, const struct accel_tensor *t, const char *what, bool packed)
{
	int ret = arg_tensor(dev, t, what);
	size_t e;

	if (ret)
		return ret;
	e = accel_dtype_size(t->dtype);
	if (t->ndim != 2 || (size_t)t->strides[1] != e || t->strides[0] < (int64_t)(e * t->shape[1]))
		return accel_seterr(dev, -EINVAL, "graph: %s must be a 2-D row-major tensor with contiguous rows", what);
	if (packed && (size_t)t->strides[0] != e * t->shape[1])
		return accel_seterr(dev, -EINVAL, "graph: %s must be packed (row stride = columns x element size)", what);
	if (e == 4 && ((t->buf->va + t->offset) % 4 || t->strides[0] % 4))
		return accel_seterr(dev, -EINVAL, "graph: %s: 32-bit data must be 4-byte aligned", what);
	return 0;
}

int accel_graph_gemm(struct accel_graph *g, const struct accel_gemm_desc *d, unsigned *node)
{
	struct accel_dev *dev;
	struct mm_problem p;
	struct gnode *n;
	int ret;

	if (!g)
		return -EINVAL;
	dev = g->dev;
	accel_clearerr(dev);
	if (!d || !node)
		return accel_seterr(dev, -EINVAL, "accel_graph_gemm: descriptor or node is NULL");
	if (d->trans_a || d->trans_b)
		return accel_seterr(dev, -EINVAL, "accel_graph_gemm: transposed operands are not supported in graphs");
	if ((ret = mat_ok(dev, d->a, "A", false)) || (ret = mat_ok(dev, d->b, "B", false)) ||
	    (ret = mat_ok(dev, d->c, "C", false)))
		return ret;
	if ((ret = arg_no_overlap(dev, d->c, "C", d->a, "A")) || (ret = arg_no_overlap(dev, d->c, "C", d->b, "B")) ||
	    (ret = arg_no_overlap(dev, d->c, "C", d->epi.bias, "the bias")))
		return ret;
	if (d->a->dtype != d->b->dtype || (d->a->dtype != ACCEL_INT8 && d->a->dtype != ACCEL_FP32))
		return accel_seterr(dev, -EINVAL, "accel_graph_gemm: A and B must both be INT8 or both FP32");
	if (d->a->shape[1] != d->b->shape[0] || d->c->shape[0] != d->a->shape[0] || d->c->shape[1] != d->b->shape[1])
		return accel_seterr(dev, -EINVAL, "accel_graph_gemm: shapes differ: A %ux%u, B %ux%u, C %ux%u",
				    d->a->shape[0], d->a->shape[1], d->b->shape[0], d->b->shape[1], d->c->shape[0],
				    d->c->shape[1]);
	n = gn_add(g);
	if (!n)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	n->kind = GN_GEMM;
	n->a = *d->a;
	n->b = *d->b;
	n->c = *d->c;
	n->epi = d->epi;
	if (d->epi.bias) {
		n->bias = *d->epi.bias;
		n->epi.bias = &n->bias;
	}
	n->f32 = d->a->dtype == ACCEL_FP32;
	n->M = d->a->shape[0];
	n->K = d->a->shape[1];
	n->N = d->b->shape[1];
	/* Validate the epilogue now, so a bad graph fails where it is built. */
	memset(&p, 0, sizeof(p));
	ret = epi_setup(dev, &n->epi, n->f32, n->c.dtype, n->N, &p);
	if (ret)
		return ret;
	*node = g->count++;
	return 0;
}

int accel_graph_activation(struct accel_graph *g, const struct accel_activation_desc *d, unsigned *node)
{
	struct accel_dev *dev;
	struct gnode *n;
	int ret;

	if (!g)
		return -EINVAL;
	dev = g->dev;
	accel_clearerr(dev);
	if (!d || !node)
		return accel_seterr(dev, -EINVAL, "accel_graph_activation: descriptor or node is NULL");
	if ((ret = mat_ok(dev, d->input, "input", true)) || (ret = mat_ok(dev, d->output, "output", true)))
		return ret;
	if (d->input->dtype != d->output->dtype || (d->input->dtype != ACCEL_INT8 && d->input->dtype != ACCEL_FP32) ||
	    d->input->shape[0] != d->output->shape[0] || d->input->shape[1] != d->output->shape[1])
		return accel_seterr(dev, -EINVAL, "accel_graph_activation: input and output need one shape and dtype (INT8 or FP32)");
	if (d->act != ACCEL_ACT_RELU && d->act != ACCEL_ACT_CLAMP && d->act != ACCEL_ACT_NONE)
		return accel_seterr(dev, -EINVAL, "accel_graph_activation: unknown function %d", (int)d->act);
	if (d->input->shape[1] % ID_W && d->input->shape[1] > 1024)
		return accel_seterr(dev, -EINVAL, "accel_graph_activation: rows must be a multiple of %u or at most 1024 wide",
				    ID_W);
	n = gn_add(g);
	if (!n)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	n->kind = GN_ACT;
	n->a = *d->input;
	n->c = *d->output;
	n->act = d->act;
	n->clamp_lo_i = d->clamp_lo_i;
	n->clamp_hi_i = d->clamp_hi_i;
	n->clamp_lo_f = d->clamp_lo_f;
	n->clamp_hi_f = d->clamp_hi_f;
	n->f32 = d->input->dtype == ACCEL_FP32;
	n->M = d->input->shape[0];
	n->K = n->N = d->input->shape[1];
	*node = g->count++;
	return 0;
}

int accel_graph_node_info(const struct accel_graph *g, unsigned node, struct accel_graph_node_info *out)
{
	const struct gnode *n;

	if (!g)
		return -EINVAL;
	if (!out || node >= g->count)
		return accel_seterr(g->dev, -EINVAL, "accel_graph_node_info: %s", !out ? "out is NULL" : "no such node");
	n = &g->n[node];
	memset(out, 0, sizeof(*out));
	out->island = n->island;
	out->chained_from = n->chained_from;
	out->bands = n->bands;
	out->est_cycles = n->est;
	out->est_start = n->est_start;
	return 0;
}

/* ---- dependencies --------------------------------------------------------------------------- */

bool gn_overlaps(const struct accel_tensor *x, const struct accel_tensor *y)
{
	uint64_t ex, ey;

	if (!x->buf || x->buf != y->buf || accel_tensor_extent(x, &ex) || accel_tensor_extent(y, &ey))
		return false;
	return x->offset < y->offset + ey && y->offset < x->offset + ex;
}

bool gn_reads(const struct gnode *reader, const struct gnode *writer)
{
	return gn_overlaps(&reader->a, &writer->c) || (reader->kind == GN_GEMM && gn_overlaps(&reader->b, &writer->c)) ||
	       (reader->epi.bias && gn_overlaps(&reader->bias, &writer->c));
}

/* ---- problems ------------------------------------------------------------------------------- */

int gn_problem(struct accel_graph *g, unsigned i, uint32_t m0, uint32_t rows, uint64_t in_ring, uint64_t out_ring,
	       struct accel_buffer *ident, struct mm_problem *p)
{
	struct gnode *n = &g->n[i];
	uint32_t e = n->f32 ? 4 : 1;
	int ret;

	memset(p, 0, sizeof(*p));
	p->f32 = n->f32;
	p->a.kind = MM_MAT;
	p->b.kind = MM_MAT;
	if (n->kind == GN_GEMM) {
		ret = epi_setup(g->dev, &n->epi, n->f32, n->c.dtype, n->N, p);
		if (ret)
			return ret;
		p->M = rows;
		p->N = n->N;
		p->K = n->K;
		p->a.buf = n->a.buf;
		p->a.va = n->a.buf->va + n->a.offset + (uint64_t)m0 * n->a.strides[0];
		p->a.pitch = (uint64_t)n->a.strides[0];
		p->b.buf = n->b.buf;
		p->b.va = n->b.buf->va + n->b.offset;
		p->b.pitch = (uint64_t)n->b.strides[0];
		p->c_buf = n->c.buf;
		p->c_va = n->c.buf->va + n->c.offset + (uint64_t)m0 * n->c.strides[0];
		p->c_pitch = (uint64_t)n->c.strides[0];
	} else {
		/* accel_activation's lowering: x times an identity, the SFU applies the function. */
		struct accel_epilogue ep;
		bool narrow = n->K % ID_W == 0;
		uint32_t w = narrow ? ID_W : n->K;

		memset(&ep, 0, sizeof(ep));
		ep.act = n->act;
		ep.clamp_lo_i = n->clamp_lo_i;
		ep.clamp_hi_i = n->clamp_hi_i;
		ep.clamp_lo_f = n->clamp_lo_f;
		ep.clamp_hi_f = n->clamp_hi_f;
		if (!n->f32) {
			/* ((x * 2^30 + 2^29) >> 30) == x: the requantisation is the identity. */
			ep.multiplier = 1 << 30;
			ep.shift = 30;
		}
		ret = epi_setup(g->dev, &ep, n->f32, n->c.dtype, w, p);
		if (ret)
			return ret;
		p->M = narrow ? rows * (n->K / ID_W) : rows;
		p->N = p->K = w;
		p->a.buf = n->a.buf;
		p->a.va = n->a.buf->va + n->a.offset + (uint64_t)m0 * n->K * e;
		p->a.pitch = (uint64_t)w * e;
		p->b.buf = ident;
		p->b.va = ident ? ident->va : 0;
		p->b.pitch = (uint64_t)w * e;
		p->c_buf = n->c.buf;
		p->c_va = n->c.buf->va + n->c.offset + (uint64_t)m0 * n->K * e;
		p->c_pitch = (uint64_t)w * e;
	}
	if (in_ring != UINT64_MAX) {
		p->a.va = in_ring;
		p->a.pitch = (uint64_t)n->K * e;
		p->a.dma_flags = TNPU_DMA_F_RING;
	}
	if (out_ring != UINT64_MAX) {
		p->c_va = out_ring;
		p->c_pitch = n->kind == GN_GEMM ? (uint64_t)n->N * (p->out_dtype == TNPU_DTYPE_INT8 ? 1 : 4) : p->c_pitch;
		p->c_dma_flags = TNPU_DMA_F_RING;
	}
	return 0;
}

/* ---- cost model and placement ---------------------------------------------------------------- */

static bool island_can(const struct accel_island *is, const struct gnode *n)
{
	return is->dtypes & (n->f32 ? ACCEL_ISLAND_FP32 : ACCEL_ISLAND_INT8);
}

/* Cost of node i on island k: the matmul planner's cycle estimate for the island's rows, stretched
 * by its clock divisor; < 0 if the island cannot run it. */
static double cost_on(struct accel_graph *g, unsigned i, unsigned k)
{
	const struct accel_island *is = &g->dev->islands[k];
	struct accel_caps c;
	struct mm_problem p;
	struct mm_plan pl;

	if (!island_can(is, &g->n[i]))
		return -1;
	island_caps(g->dev, k, &c);
	if (gn_problem(g, i, 0, g->n[i].M, UINT64_MAX, UINT64_MAX, NULL, &p) || mm_plan_choose(&c, &p, &pl))
		return -1;
	return pl.est_cycles * is->clkdiv;
}

/* List scheduling (Documentation/chaining.md "Cost model"): ops are taken by upward rank (own
 * average cost + the most expensive chain of ops that depend on it, as in HEFT), each placed on
 * the island where it would finish first. */
int graph_place(struct accel_graph *g, const struct accel_graph_opts *o)
{
	struct accel_dev *dev = g->dev;
	double free_at[ACCEL_MAX_ISLANDS] = { 0 };
	double *rank = calloc(g->count, sizeof(*rank));
	bool *placed = calloc(g->count, sizeof(*placed));
	int ret = 0;

	if (!rank || !placed) {
		free(rank);
		free(placed);
		return accel_seterr(dev, -ENOMEM, "out of memory");
	}
	for (unsigned ii = g->count; ii-- > 0;) {
		double sum = 0, succ = 0;
		unsigned nk = 0;

		for (unsigned k = 0; k < dev->n_islands; k++) {
			double c = cost_on(g, ii, k);

			if (c >= 0 && (o->island < 0 || (unsigned)o->island == k)) {
				sum += c;
				nk++;
			}
		}
		for (unsigned j = ii + 1; j < g->count; j++)
			if (gn_reads(&g->n[j], &g->n[ii]))
				succ = ACCEL_MAX(succ, rank[j]);
		rank[ii] = (nk ? sum / nk : 0) + succ;
	}
	for (unsigned step = 0; step < g->count && !ret; step++) {
		double best_fin = 0, best_start = 0, best_cost = 0;
		int best = -1, pick = -1;
		struct gnode *n;

		/* The highest-ranked op whose producers are all placed. */
		for (unsigned i = 0; i < g->count; i++) {
			bool ready = !placed[i];

			for (unsigned j = 0; j < i && ready; j++)
				if (!placed[j] && gn_reads(&g->n[i], &g->n[j]))
					ready = false;
			if (ready && (pick < 0 || rank[i] > rank[pick]))
				pick = (int)i;
		}
		n = &g->n[pick];
		for (unsigned k = 0; k < dev->n_islands; k++) {
			double c, ready = 0, start;

			if (o->island >= 0 && (unsigned)o->island != k)
				continue;
			c = cost_on(g, (unsigned)pick, k);
			if (c < 0)
				continue;
			for (unsigned j = 0; j < (unsigned)pick; j++) {
				if (!gn_reads(n, &g->n[j]))
					continue;
				/* A chained consumer can start once the producer's first band is out. */
				if (n->chained_from == (int)j)
					ready = ACCEL_MAX(ready, g->n[j].est_start + g->n[j].est / g->n[j].bands);
				else
					ready = ACCEL_MAX(ready, g->n[j].est_finish);
			}
			start = ACCEL_MAX(ready, free_at[k]);
			if (best < 0 || start + c < best_fin) {
				best = (int)k;
				best_fin = start + c;
				best_start = start;
				best_cost = c;
			}
		}
		if (best < 0) {
			ret = accel_seterr(dev, -EINVAL, "graph node %d (%s %s): no island %s", pick,
					   n->kind == GN_GEMM ? "gemm" : "activation", n->f32 ? "fp32" : "int8",
					   o->island >= 0 ? "of the requested one can run it" : "supports it");
			break;
		}
		if (n->chained_from >= 0)
			best_fin = ACCEL_MAX(best_fin, g->n[n->chained_from].est_finish + best_cost / n->bands);
		n->island = best;
		n->est = best_cost;
		n->est_start = best_start;
		n->est_finish = best_fin;
		free_at[best] = best_fin;
		placed[pick] = true;
	}
	free(rank);
	free(placed);
	return ret;
}

int accel_graph_run(struct accel_graph *g, const struct accel_graph_opts *opts, const struct accel_submit *sub,
		    struct accel_job **job)
{
	struct accel_graph_opts o = { .flags = 0, .island = -1 };

	if (job)
		*job = NULL;
	if (!g)
		return -EINVAL;
	accel_clearerr(g->dev);
	if (opts)
		o = *opts;
	if (!g->count)
		return accel_seterr(g->dev, -EINVAL, "accel_graph_run: the graph is empty");
	if (o.flags & ~ACCEL_GRAPH_NO_CHAIN)
		return accel_seterr(g->dev, -EINVAL, "accel_graph_run: unknown flags 0x%x", o.flags);
	if (o.island >= (int)g->dev->n_islands || o.island < -1)
		return accel_seterr(g->dev, -EINVAL, "accel_graph_run: island %d does not exist (%u islands)", o.island,
				    g->dev->n_islands);
	return chain_emit(g, &o, sub, job);
}
