/* SPDX-License-Identifier: MIT */
/*
 * graph.h - chain #9: the op graph, its island placement (graph.c) and its lowering into one
 * chained command stream (chain.c).  Documentation/chaining.md.
 */
#ifndef ACCEL_GRAPH_H
#define ACCEL_GRAPH_H

#include "lower.h"

enum gnode_kind { GN_GEMM = 0, GN_ACT = 1 };

struct gnode {
	enum gnode_kind kind;
	struct accel_tensor a, b, c;	/* ACT: a = input, c = output */
	struct accel_tensor bias;
	struct accel_epilogue epi;	/* epi.bias points at .bias (or NULL) */
	enum accel_act act;		/* ACT */
	int32_t clamp_lo_i, clamp_hi_i;
	float clamp_lo_f, clamp_hi_f;
	bool f32;
	uint32_t M, N, K;
	/* schedule (accel_graph_run) */
	int island;
	int chained_from, chain_to;	/* node indices or -1 */
	int ring_in, ring_out;		/* ring ids of the chain, -1 */
	uint32_t band_rows, bands;
	double est, est_start, est_finish;
	/* emission state */
	uint32_t next_band;
};

struct accel_graph {
	struct accel_link link;	/* in dev->objs */
	struct accel_dev *dev;
	struct gnode *n;
	unsigned count, cap;
};

/* graph.c */
bool gn_overlaps(const struct accel_tensor *x, const struct accel_tensor *y);
bool gn_reads(const struct gnode *reader, const struct gnode *writer);
/* The mm problem of rows [m0, m0 + rows) of node i; in/out ring offsets (and pitches) when the
 * A operand comes from / C goes to ring memory (UINT64_MAX = the node's own tensor). */
int gn_problem(struct accel_graph *g, unsigned i, uint32_t m0, uint32_t rows, uint64_t in_ring, uint64_t out_ring,
	       struct accel_buffer *ident, struct mm_problem *p);
/* Caps of island k as seen by the matmul engine (rows = the island's rows). */
void island_caps(const struct accel_dev *dev, unsigned k, struct accel_caps *out);

int graph_place(struct accel_graph *g, const struct accel_graph_opts *o);

/* chain.c */
int chain_emit(struct accel_graph *g, const struct accel_graph_opts *o, const struct accel_submit *sub,
	       struct accel_job **job);

#endif
