/* SPDX-License-Identifier: MIT */
/*
 * sparse.h - sparse (#8) internals: the packed (value, index) weight object and the matmul-engine
 * hooks that load it (Documentation/sparse.md, "Packing format").
 */
#ifndef ACCEL_SPARSE_H
#define ACCEL_SPARSE_H

#include "lower.h"

/* Weights W (K x N) packed per K block kb of k_block rows: n_cols columns of S[kb] slots each,
 * column n at off[kb] + n * S[kb] * ss in buf, slots in ascending index order, padding slots 0. */
struct accel_sparse_weights {
	struct accel_link link;	/* in dev->objs */
	struct accel_dev *dev;
	struct accel_buffer *buf;
	bool f32;
	uint32_t K, N, k_block, n_kb;
	uint32_t ss;		/* slot bytes: 4 (int8) or 8 (fp32) */
	uint32_t s_max;		/* max S[kb] */
	uint32_t *S;		/* slots per column of block kb (>= 1) */
	uint64_t *off;		/* byte offset of block kb in buf */
	uint64_t nnz, slots;	/* non-zero weights, slots including padding */
};

/* Problem hooks used by plan_tiling.c / matmul.c for MM_SPARSE B operands. */
void sparse_load_b(struct accel_cmdstream *cs, const struct mm_problem *p, uint32_t pes, uint32_t tn, uint32_t b_off,
		   unsigned row, unsigned half, uint32_t n0, uint32_t nv, uint32_t ks);
/* Slot density (slots / (K * N)) and non-zero density used by the tiling estimate. */
double sparse_slot_density(const struct accel_sparse_weights *sw);
double sparse_nnz_density(const struct accel_sparse_weights *sw);
/* gemm.c: accel_gemm with the activation bitmask. */
int sparse_gemm_zskip(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
		      struct accel_job **job);
/* sparse_dispatch.c: flags and packed weights valid for conv (w may be NULL). */
int sparse_conv_check(struct accel_dev *dev, const struct accel_conv2d_desc *conv, const struct accel_sparse_weights *w,
		      uint32_t flags);

#endif
