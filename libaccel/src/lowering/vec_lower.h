/* SPDX-License-Identifier: MIT */
/*
 * vec_lower.h - lowering of element-wise / layout / reduction operations to the ISA 2 vector units
 * (Documentation/hardware/vector-units.md): tensors are cut into chunks that fit one storage-unit
 * half, each chunk is loaded (DMA H2D), transformed by VEC commands on one row and stored (DMA D2H);
 * chunks go round-robin over rows and halves, pipelined with ASYNC commands and three semaphores.
 */
#ifndef ACCEL_VEC_LOWER_H
#define ACCEL_VEC_LOWER_H

#include "internal.h"
#include "tnpu/tnpu_hw.h"

#define VX_MAX_IN 3

/* One operand in iteration order (4 dims, dim 3 innermost): host VA and byte strides (0 = broadcast). */
struct vx_opnd {
	uint64_t va;
	uint64_t st[4];
	unsigned e;		/* bytes per element */
};

/* SRAM placement of one operand's box in a chunk: offset and strides (0 on broadcast dims). */
struct vx_place {
	uint32_t off;
	int32_t st[4];
};

struct vx_chunk {
	uint32_t lo[4], sz[4];		/* the box in iteration coordinates */
	struct vx_place out, in[VX_MAX_IN];
	uint32_t scratch;		/* offset of extra scratch bytes (extra_per_unit * units) */
	unsigned row, half;
};

struct vx_job;
/* Emit the chunk's VEC commands (flags: ASYNC); the default emits `tmpl` with the chunk's shape. */
typedef void (*vx_emit_fn)(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c,
			   unsigned flags);

struct vx_job {
	uint32_t n[4];			/* iteration shape */
	struct vx_opnd out, in[VX_MAX_IN];
	unsigned n_in;
	struct tnpu_cmd_vec tmpl;	/* op, func, dtypes, flags, scale, ...; shapes/offsets per chunk */
	int chan_in;			/* tmpl PER_CHANNEL: index of the table operand in in[] (e = 8), else -1 */
	bool keep_last;			/* dim 3 is never merged or split (a reduction axis) */
	uint32_t extra_per_unit;	/* scratch bytes per element of dims 0..2 of the chunk */
	vx_emit_fn emit;		/* NULL = default */
	const void *ctx;		/* for emit */
	const void *prologue;		/* commands at the start of every hardware job (VEC_LUT), or NULL */
	size_t prologue_len;
};

/* Validate the device (CAP_FEATURES VEC) and append the whole job to cs (cs_use of the buffers is
 * the caller's).  0 or -errno with the message set. */
int vx_lower(struct accel_dev *dev, struct accel_cmdstream *cs, struct vx_job *j);
/* Pack a box of o (sizes sz) at SRAM offset off in the order of o's host strides; returns its bytes. */
uint64_t vx_place_box(const struct vx_opnd *o, const uint32_t *sz, uint32_t off, struct vx_place *p);
/* DMA a box (origin lo, sizes sz) between host operand o and its SRAM placement p (DMA_BANDS through
 * the row's own host port when the device has per-unit ports, else DMA_H2D/D2H). */
void vx_dma_box(struct accel_cmdstream *cs, bool h2d, unsigned flags, const struct vx_opnd *o, const uint32_t *lo,
		const uint32_t *sz, const struct vx_place *p, unsigned row, unsigned half);
/* The template of a VEC command (header filled, every dim 1). */
struct tnpu_cmd_vec vx_cmd(uint8_t op, uint8_t fn, uint8_t in_dt, uint8_t out_dt);
/* Fill a VEC command's shape and operands from a chunk (a: in[ia], b: in[ib], -1 = none). */
void vx_fill(struct tnpu_cmd_vec *v, const struct vx_chunk *c, int ia, int ib);
uint32_t vx_f32(float f);
/* 0 if the device has the vector units, else -EOPNOTSUPP with a message naming `what`. */
int vx_need(struct accel_dev *dev, const char *what);
/* The tensor t (2-D or 4-D) as a 4-D operand in logical order (leading dims 1), broadcast to shape
 * `n` (dims where t has 1 and n does not get stride 0). */
void vx_opnd_of(const struct accel_tensor *t, struct vx_opnd *o);

#endif
