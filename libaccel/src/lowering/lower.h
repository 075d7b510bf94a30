/* SPDX-License-Identifier: MIT */
/*
 * lower.h - the matmul engine every operation lowers to: C = A x B (+ SFU epilogue), tiled over the
 * PE array, double-buffered through the storage-unit halves (plan_tiling.c chooses the tiles and the
 * loop order, matmul.c emits the command stream).
 */
#ifndef ACCEL_LOWER_H
#define ACCEL_LOWER_H

#include "internal.h"
#include "tnpu/tnpu_hw.h"

enum mm_src_kind {
	MM_MAT = 0,	/* A: M x K row-major; B: K x N row-major */
	MM_MAT_T = 1,	/* A stored K x M; B stored N x K */
	MM_IM2COL = 2,	/* A only: implicit im2col tile loads (template ic, rows offset m_base) */
	MM_SPARSE = 3,	/* B only: packed (value, index) weights, struct accel_sparse_weights (sparse.h) */
	MM_GATHER = 4,	/* A only: plan-driven GATHER tile loads (plan_conv.c; rows offset m_base) */
	MM_DEQ = 5,	/* B only: packed int8/int4 weights, N-major, expanded by DMA_DEQ (qgemm.c) */
};

struct mm_src {
	enum mm_src_kind kind;
	struct accel_buffer *buf;
	uint64_t va;		/* element (0,0) */
	uint64_t pitch;		/* bytes between stored rows */
	struct tnpu_cmd_im2col ic;
	uint32_t m_base;
	uint8_t dma_flags;	/* chain #9: TNPU_DMA_F_RING: va is a ring-memory offset (MM_MAT only) */
	const struct accel_sparse_weights *sp;	/* MM_SPARSE */
	/* MM_GATHER: the plan (static address plans, plan_conv.c); ic still describes the geometry
	 * for the cost estimate. */
	struct tnpu_cmd_gather gather;	/* template: src_va, handle, pad_value */
	struct accel_buffer *plan_buf;
	uint64_t plan_va, plan_tag;
	uint32_t plan_bytes;
	/* MM_DEQ: the DMA_DEQ template (src/scale/zp VAs of column 0, pitches, fmt, block, qflags); every
	 * tile load sets k0, kt, nt, the SRAM fields and moves the VAs to its first column */
	struct tnpu_cmd_dma_deq deq;
	struct accel_buffer *scale_buf, *zp_buf;
};

struct mm_problem {
	uint32_t M, N, K;
	bool f32;
	struct mm_src a, b;
	struct accel_buffer *c_buf;
	uint64_t c_va, c_pitch;
	bool c_trans;		/* element (i, j) stored at c_va + j * c_pitch + i * oe */
	uint8_t out_dtype;	/* TNPU_DTYPE_INT32, INT8 or FP32 */
	bool use_sfu;
	struct tnpu_sfu_param sfu;	/* bias_addr etc. filled by the engine */
	struct accel_buffer *bias_buf;
	uint64_t bias_va;	/* when sfu.ops & BIAS or QCOL: N column values of mm_col_bytes() each */
	uint8_t c_dma_flags;	/* chain #9: TNPU_DMA_F_RING: c_va is a ring-memory offset (not c_trans) */
	bool zskip_a;		/* sparse (#8): LD A with ZSKIP (activation bitmask) */
	bool mac_lb;		/* sparse (#8): MAC with LB (neighbour load balancing) */
	/* ISA 2: sfu.ops RESIDUAL: the residual, M x N 32-bit at res_va (pitch res_pitch), staged in the
	 * C tile's SRAM region before the last K step (the caller sets res_va; epi_setup res_tensor) */
	const struct accel_tensor *res_tensor;
	struct accel_buffer *res_buf;
	uint64_t res_va, res_pitch;
};

/* Bytes per output column of the SFU column vector at bias_va: QCOL records {bias, multiplier, shift}
 * (isa.md "SFU parameter record") or plain 32-bit bias values; every lowering stages and addresses the
 * vector with this size. */
static inline uint32_t mm_col_bytes(const struct mm_problem *p)
{
	return (p->sfu.ops & TNPU_SFU_OP_QCOL) ? (uint32_t)sizeof(struct tnpu_sfu_qcol) : 4;
}

/* The SFU reads a column vector (a bias or QCOL records) that the lowering must stage. */
static inline bool mm_has_cols(const struct mm_problem *p)
{
	return p->use_sfu && (p->sfu.ops & (TNPU_SFU_OP_BIAS | TNPU_SFU_OP_QCOL));
}

enum mm_order {
	MM_ORDER_M_OUTER = 0,	/* output stationary; with one K step A stays resident (input stationary) */
	MM_ORDER_N_OUTER = 1,	/* with one K step B stays resident (weight stationary) */
};

struct mm_plan {
	uint32_t tm, tn, kt;
	enum mm_order order;
	bool rows_over_n;	/* array rows take consecutive N blocks (A broadcast) instead of M blocks */
	uint32_t a_off, b_off, c_off, bias_off;
	double est_cycles;
	uint64_t est_h2d_bytes;
	const char *mapping;	/* "output-stationary", "input-stationary", "weight-stationary" */
};

int mm_plan_choose(const struct accel_caps *caps, const struct mm_problem *p, struct mm_plan *out);

/* Pipeline state shared by consecutive problems of one command stream. */
struct mm_ctx {
	struct accel_dev *dev;
	struct accel_cmdstream *cs;
	const struct accel_caps *caps;
	uint32_t step;
	bool stg_used[2];
	bool restore;		/* the previous EXE patched register-file entries */
	uint32_t prob_seq;
	uint64_t tag_a[2][TNPU_MAX_ROWS], tag_b[2][TNPU_MAX_ROWS], tag_bias[2][TNPU_MAX_ROWS];
	size_t cut_bytes;	/* start a new hardware job when a segment grows past this */
	struct mm_plan last_plan;
	bool no_direct;		/* force the IM2COL lowering of convolutions (tests, benchmarks) */
	bool force_direct;	/* use the direct lowering whenever it is possible */
	bool zskip_a, mac_lb;	/* sparse (#8): flags of the next mm_dispatch_mac_config */
	const struct accel_sparse_weights *conv_sp;	/* sparse (#8): conv_lower uses these packed weights */
	uint32_t conv_zskip_lb;	/* sparse (#8): ACCEL_SPARSE_* flags for conv_lower's problems */
	uint8_t pin_row;	/* sparse (#8): run every block on this array row (0xFF = all rows) */
	unsigned plan_seg;	/* plan_conv.c: 1 + segment that made plan_handle resident, 0 = none */
	uint32_t plan_handle;
	uint32_t res_tok[2];	/* ISA 2: residual-staging FREE tokens per half (matmul.c) */
};

void mm_ctx_init(struct mm_ctx *x, struct accel_dev *dev, struct accel_cmdstream *cs);
int mm_emit(struct mm_ctx *x, const struct mm_problem *p);
/* qgemm.c: the DMA_DEQ of B's tile (columns n0.., codes k0..) into b_off, N-major lines of sram_pitch */
void qgemm_load_b(struct accel_cmdstream *cs, const struct mm_src *b, uint32_t b_off, uint32_t sram_pitch,
		  unsigned row, unsigned half, uint32_t n0, uint32_t nv, uint32_t k0, uint32_t kv);
/* plan_conv.c: GATHER of one A tile (PLAN_LOAD first in every hardware job that uses the plan). */
void plan_emit_gather(struct mm_ctx *x, const struct mm_src *a, unsigned row, unsigned half, uint32_t m0,
		      uint32_t mt, uint32_t k0, uint32_t kt, uint32_t sram_off, uint32_t pitch);
/* Dispatch (to all rows) the CONFIG packet for instruction buffer ibuf with header h and the
 * common body LD A, LD B, MAC into accumulator 0, ST accumulator 0 (written to ins, the caller's, so
 * it may change and resend them), the three operand records and, when use_sfu, the scalar-unit
 * record (isa/packet.c builds and checks it). */
void mm_dispatch_mac_config(struct mm_ctx *x, unsigned ibuf, const struct tnpu_cfg_hdr *h, uint16_t ins[4],
			    const struct tnpu_operand ops[3], const struct tnpu_sfu_param *sfu, bool use_sfu);

#endif
