/* SPDX-License-Identifier: MIT */
/*
 * tnpu_sim.h - test/benchmark harness for the golden model (not shipped):
 * a flat "guest-physical" memory with page tables, a command-buffer builder
 * and a generator for double-buffered GEMM programs.
 */
#ifndef TNPU_SIM_H
#define TNPU_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tnpu/tnpu_core.h"

struct tsim {
	uint8_t *mem;
	uint64_t size;		/* bytes of guest-physical memory */
	uint64_t brk;		/* bump allocator (4 KiB pages) */
	uint64_t ctx_table;
	uint64_t root;		/* context 0 (and 1: second root) */
	uint64_t root1;
	uint64_t va_next;
	struct tnpu_mem_ops ops;
	struct tnpu_config cfg;
	struct tnpu_exec *ex;
	uint64_t fail_pa_lo, fail_pa_hi;	/* bus errors in [lo, hi) */
};

/* cfg NULL = defaults.  mem_bytes of guest memory.  Returns 0 on success. */
int tsim_init(struct tsim *s, const struct tnpu_config *cfg, uint64_t mem_bytes);
void tsim_fini(struct tsim *s);
uint64_t tsim_alloc_pa(struct tsim *s, uint64_t bytes);
/* Map [va, va+len) to fresh physical pages with PTE perms (READ/WRITE) in context ctx (0/1). */
void tsim_map(struct tsim *s, unsigned ctx, uint64_t va, uint64_t pa, uint64_t len, uint64_t perms);
/* Allocate + map a buffer at the next free VA (RW); returns the VA. */
uint64_t tsim_buf(struct tsim *s, uint64_t bytes);
/* Host pointer for a VA mapped by tsim_buf (context 0). */
void *tsim_ptr(struct tsim *s, uint64_t va);
/* Raw PTE of a leaf (for fault tests); returns pointer into memory. */
uint64_t *tsim_pte(struct tsim *s, unsigned ctx, uint64_t va);

/* Command-buffer builder. */
struct tcb {
	uint8_t *buf;
	size_t len, cap;
};
void tcb_init(struct tcb *cb);
void tcb_free(struct tcb *cb);
void tcb_raw(struct tcb *cb, const void *p, size_t n);
void tcb_nop(struct tcb *cb, uint8_t flags);
void tcb_dma(struct tcb *cb, bool h2d, uint8_t flags, uint64_t host_va, uint64_t hpy, uint64_t hpz,
	     uint8_t row, uint8_t half, uint32_t off, uint32_t spy, uint32_t spz, uint32_t width,
	     uint32_t height, uint32_t depth);
void tcb_dma_fill(struct tcb *cb, uint8_t flags, uint8_t row, uint8_t half, uint32_t off, uint32_t width,
		  uint8_t fill);
void tcb_dispatch(struct tcb *cb, uint8_t flags, uint8_t row, uint8_t half, uint8_t dflags, const void *pkt,
		  uint32_t len);
void tcb_sem(struct tcb *cb, bool signal, uint8_t flags, uint8_t engine, uint8_t sem, uint32_t count);
void tcb_fence(struct tcb *cb, uint64_t va, uint64_t value);
void tcb_im2col(struct tcb *cb, uint8_t flags, const struct tnpu_cmd_im2col *c);

/* Packets. */
struct tpkt {
	uint8_t buf[4096];
	uint32_t len;
};
void tpkt_config(struct tpkt *p, unsigned ibuf, const struct tnpu_cfg_hdr *h, const uint16_t *instr,
		 const struct tnpu_operand *ops);
void tpkt_exe(struct tpkt *p, unsigned ibuf, uint8_t flags, const struct tnpu_exe_patch *patches, unsigned n);

/* Run a command buffer in context ctx. */
uint32_t tsim_run(struct tsim *s, const struct tcb *cb, unsigned ctx, struct tnpu_result *res);

/* Double-buffered GEMM program: C[MxN] = A[MxK] * B[KxN] (row-major, host VAs). */
struct tgemm {
	uint32_t m, n, k;
	bool f32;		/* else int8 -> int32 */
	uint32_t tm, tn, kt;	/* per-PE tile and K step */
	bool pipelined;		/* semaphores + ASYNC */
	uint64_t a, b, c;	/* VAs */
};
/* Builds the program; returns 0 or -1 if the shape does not fit the geometry. */
int tgemm_build(const struct tgemm *g, const struct tnpu_config *cfg, struct tcb *cb);

#endif
