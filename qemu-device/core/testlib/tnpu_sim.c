/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "tnpu_sim.h"

#define TNPU_MIN(a, b) ((a) < (b) ? (a) : (b))

#define VA_BASE 0x100000000ull

static int mem_read(void *opaque, uint64_t pa, void *buf, size_t len)
{
	struct tsim *s = opaque;

	if (pa >= s->size || len > s->size - pa)
		return -1;
	if (pa < s->fail_pa_hi && pa + len > s->fail_pa_lo)
		return -1;
	memcpy(buf, s->mem + pa, len);
	return 0;
}

static int mem_write(void *opaque, uint64_t pa, const void *buf, size_t len)
{
	struct tsim *s = opaque;

	if (pa >= s->size || len > s->size - pa)
		return -1;
	if (pa < s->fail_pa_hi && pa + len > s->fail_pa_lo)
		return -1;
	memcpy(s->mem + pa, buf, len);
	return 0;
}

uint64_t tsim_alloc_pa(struct tsim *s, uint64_t bytes)
{
	uint64_t pa = s->brk;

	bytes = (bytes + 4095) & ~4095ull;
	if (s->brk + bytes > s->size)
		abort();	/* test harness bug, not device input */
	s->brk += bytes;
	memset(s->mem + pa, 0, bytes);
	return pa;
}

static uint64_t *pte_slot(struct tsim *s, unsigned ctx, uint64_t va, bool create)
{
	uint64_t table = ctx ? s->root1 : s->root;

	for (unsigned level = 4; level > 1; level--) {
		uint64_t *e = (uint64_t *)(void *)(s->mem + table + 8 * TNPU_PT_INDEX(va, level));

		if (!(*e & TNPU_PTE_VALID)) {
			if (!create)
				return NULL;
			*e = tsim_alloc_pa(s, 4096) | TNPU_PTE_VALID;
		}
		table = *e & TNPU_PTE_ADDR_MASK;
	}
	return (uint64_t *)(void *)(s->mem + table + 8 * TNPU_PT_INDEX(va, 1));
}

void tsim_map(struct tsim *s, unsigned ctx, uint64_t va, uint64_t pa, uint64_t len, uint64_t perms)
{
	for (uint64_t o = 0; o < len; o += 4096)
		*pte_slot(s, ctx, va + o, true) = (pa + o) | TNPU_PTE_VALID | perms;
}

uint64_t *tsim_pte(struct tsim *s, unsigned ctx, uint64_t va)
{
	return pte_slot(s, ctx, va, false);
}

int tsim_init(struct tsim *s, const struct tnpu_config *cfg, uint64_t mem_bytes)
{
	memset(s, 0, sizeof(*s));
	if (cfg)
		s->cfg = *cfg;
	else
		tnpu_config_default(&s->cfg);
	s->size = mem_bytes;
	s->mem = aligned_alloc(4096, mem_bytes);
	if (!s->mem)
		return -1;
	s->brk = 4096;	/* page 0 stays unused so PA 0 is never valid data */
	s->ops.read = mem_read;
	s->ops.write = mem_write;
	s->ops.opaque = s;
	s->ctx_table = tsim_alloc_pa(s, 4096);
	s->root = tsim_alloc_pa(s, 4096);
	s->root1 = tsim_alloc_pa(s, 4096);
	((uint64_t *)(void *)(s->mem + s->ctx_table))[0] = s->root | TNPU_CTX_VALID;
	((uint64_t *)(void *)(s->mem + s->ctx_table))[2] = s->root1 | TNPU_CTX_VALID;
	s->va_next = VA_BASE;
	return tnpu_exec_new(&s->cfg, &s->ex, NULL, 0) ? -1 : 0;
}

void tsim_fini(struct tsim *s)
{
	tnpu_exec_free(s->ex);
	free(s->mem);
	memset(s, 0, sizeof(*s));
}

uint64_t tsim_buf(struct tsim *s, uint64_t bytes)
{
	uint64_t len = (bytes + 4095) & ~4095ull;
	uint64_t pa = tsim_alloc_pa(s, len ? len : 4096);
	uint64_t va = s->va_next;

	tsim_map(s, 0, va, pa, len ? len : 4096, TNPU_PTE_READ | TNPU_PTE_WRITE);
	s->va_next += (len ? len : 4096) + 4096;	/* unmapped guard page between buffers */
	return va;
}

void *tsim_ptr(struct tsim *s, uint64_t va)
{
	uint64_t pa;

	if (tnpu_mmu_translate(&s->ops, s->ctx_table, 2, 0, va, false, &pa))
		return NULL;
	return s->mem + pa;
}

/* ---- command buffers --------------------------------------------------------- */

void tcb_init(struct tcb *cb)
{
	memset(cb, 0, sizeof(*cb));
}

void tcb_free(struct tcb *cb)
{
	free(cb->buf);
	memset(cb, 0, sizeof(*cb));
}

void tcb_raw(struct tcb *cb, const void *p, size_t n)
{
	if (cb->len + n > cb->cap) {
		size_t cap = cb->cap ? cb->cap * 2 : 4096;

		while (cap < cb->len + n)
			cap *= 2;
		cb->buf = realloc(cb->buf, cap);
		if (!cb->buf)
			abort();
		cb->cap = cap;
	}
	memcpy(cb->buf + cb->len, p, n);
	cb->len += n;
}

static struct tnpu_cmd_hdr hdr(uint8_t op, uint8_t flags, uint32_t size)
{
	struct tnpu_cmd_hdr h = { .opcode = op, .flags = flags, .size = size };

	return h;
}

void tcb_nop(struct tcb *cb, uint8_t flags)
{
	struct tnpu_cmd_hdr h = hdr(TNPU_CMD_NOP, flags, 8);

	tcb_raw(cb, &h, 8);
}

void tcb_dma(struct tcb *cb, bool h2d, uint8_t flags, uint64_t host_va, uint64_t hpy, uint64_t hpz,
	     uint8_t row, uint8_t half, uint32_t off, uint32_t spy, uint32_t spz, uint32_t width,
	     uint32_t height, uint32_t depth)
{
	struct tnpu_cmd_dma d = {
		.hdr = hdr(h2d ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H, flags, sizeof(d)),
		.host_va = host_va, .host_pitch_y = hpy, .host_pitch_z = hpz,
		.sram_off = off, .sram_pitch_y = spy, .sram_pitch_z = spz,
		.width = width, .height = height, .depth = depth, .row = row, .half = half,
	};

	tcb_raw(cb, &d, sizeof(d));
}

void tcb_dma_fill(struct tcb *cb, uint8_t flags, uint8_t row, uint8_t half, uint32_t off, uint32_t width,
		  uint8_t fill)
{
	struct tnpu_cmd_dma d = {
		.hdr = hdr(TNPU_CMD_DMA_H2D, flags, sizeof(d)),
		.sram_off = off, .width = width, .height = 1, .depth = 1, .row = row, .half = half,
		.dma_flags = TNPU_DMA_F_FILL, .fill = fill,
	};

	tcb_raw(cb, &d, sizeof(d));
}

void tcb_dispatch(struct tcb *cb, uint8_t flags, uint8_t row, uint8_t half, uint8_t dflags, const void *pkt,
		  uint32_t len)
{
	uint32_t padded = (len + 7) & ~7u;
	struct tnpu_cmd_dispatch d = {
		.hdr = hdr(TNPU_CMD_DISPATCH, flags, 16 + padded),
		.row = row, .half = half, .dflags = dflags, .packet_len = len,
	};
	static const uint8_t zero[8];

	tcb_raw(cb, &d, sizeof(d));
	tcb_raw(cb, pkt, len);
	tcb_raw(cb, zero, padded - len);
}

void tcb_sem(struct tcb *cb, bool signal, uint8_t flags, uint8_t engine, uint8_t sem, uint32_t count)
{
	struct tnpu_cmd_sem c = {
		.hdr = hdr(signal ? TNPU_CMD_SEM_SIGNAL : TNPU_CMD_SEM_WAIT, flags, sizeof(c)),
		.engine = engine, .sem = sem, .count = count,
	};

	tcb_raw(cb, &c, sizeof(c));
}

void tcb_fence(struct tcb *cb, uint64_t va, uint64_t value)
{
	struct tnpu_cmd_fence f = { .hdr = hdr(TNPU_CMD_FENCE, 0, sizeof(f)), .va = va, .value = value };

	tcb_raw(cb, &f, sizeof(f));
}

void tcb_im2col(struct tcb *cb, uint8_t flags, const struct tnpu_cmd_im2col *c)
{
	struct tnpu_cmd_im2col x = *c;

	x.hdr = hdr(TNPU_CMD_IM2COL, flags, sizeof(x));
	tcb_raw(cb, &x, sizeof(x));
}

void tpkt_config(struct tpkt *p, unsigned ibuf, const struct tnpu_cfg_hdr *h, const uint16_t *instr,
		 const struct tnpu_operand *ops)
{
	p->buf[0] = TNPU_PKT_CONFIG_BYTE(ibuf);
	memcpy(p->buf + 1, h, 16);
	memcpy(p->buf + 17, instr, 2u * h->n_instr);
	memcpy(p->buf + 17 + 2 * h->n_instr, ops, 32u * h->n_operands);
	p->len = 17 + 2u * h->n_instr + 32u * h->n_operands;
}

void tpkt_exe(struct tpkt *p, unsigned ibuf, uint8_t flags, const struct tnpu_exe_patch *patches, unsigned n)
{
	p->buf[0] = TNPU_PKT_EXE_BYTE(ibuf, flags);
	if (n)
		memcpy(p->buf + 1, patches, 8u * n);
	p->len = 1 + 8 * n;
}

uint32_t tsim_run(struct tsim *s, const struct tcb *cb, unsigned ctx, struct tnpu_result *res)
{
	uint64_t va = tsim_buf(s, cb->len);

	memcpy(tsim_ptr(s, va), cb->buf, cb->len);
	return tnpu_exec_run_cmdbuf(s->ex, &s->ops, s->ctx_table, 2, (uint16_t)ctx, va, (uint32_t)cb->len, res);
}

/* ---- GEMM program ----------------------------------------------------------------- */

enum { S_FULL = 0, S_FREE = 2, S_STG_FULL = 4, S_STG_FREE = 6 };

int tgemm_build(const struct tgemm *g, const struct tnpu_config *cfg, struct tcb *cb)
{
	uint32_t e = g->f32 ? 4 : 1;
	uint32_t C = cfg->cols, P = cfg->pes, R = cfg->rows;
	uint32_t Mb = C * g->tm, Nb = P * g->tn;
	uint32_t a_sz = Mb * g->kt * e, b_sz = g->kt * Nb * e, c_sz = Mb * Nb * 4;
	uint32_t a_off = 0, b_off = a_sz, c_off = a_sz + b_sz;
	uint8_t fl = g->pipelined ? TNPU_CMD_F_ASYNC : 0;
	uint32_t ksteps, g_step = 0;
	bool stg_used[2] = { false, false };
	struct tpkt pkt;

	if (!g->tm || !g->tn || !g->kt || g->m % Mb || g->n % Nb || g->k % g->kt ||
	    (uint64_t)a_sz + b_sz + c_sz > cfg->sram / 2 || (uint64_t)g->tm * g->tn > TNPU_ACC_ELEMS)
		return -1;
	ksteps = g->k / g->kt;
	{
		struct tnpu_cfg_hdr h = { .n_instr = 4, .n_operands = 3, .rf_base = 0, .mode = 0,
					  .loop_start = 0, .loop_end = 2, .repeat = 1 };
		uint16_t ins[4] = {
			TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0),
			TNPU_INSN_MAC(0, 0, 0, 0, 0), TNPU_INSN_ST(0, 2, 1),
		};
		struct tnpu_operand ops[3] = {
			{ .addr = a_off, .col_stride = (int32_t)(g->tm * g->kt * e), .pitch = g->kt * e,
			  .rows = (uint16_t)g->tm, .cols = (uint16_t)g->kt,
			  .dtype = g->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8 },
			{ .addr = b_off, .pe_stride = (int32_t)(g->tn * e), .pitch = Nb * e,
			  .rows = (uint16_t)g->kt, .cols = (uint16_t)g->tn,
			  .dtype = g->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8 },
			{ .addr = c_off, .col_stride = (int32_t)(g->tm * Nb * 4), .pe_stride = (int32_t)(g->tn * 4),
			  .pitch = Nb * 4, .rows = (uint16_t)g->tm, .cols = (uint16_t)g->tn,
			  .dtype = g->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32 },
		};

		tpkt_config(&pkt, 0, &h, ins, ops);
		tcb_dispatch(cb, fl, TNPU_DISPATCH_ROW_ALL, 0, 0, pkt.buf, pkt.len);
	}
	for (uint32_t mo = 0; mo < g->m; mo += R * Mb) {
		uint32_t nrows = TNPU_MIN(R, (g->m - mo) / Mb);

		for (uint32_t no = 0; no < g->n; no += Nb) {
			for (uint32_t ks = 0; ks < ksteps; ks++, g_step++) {
				uint8_t h = g_step & 1;
				bool last = ks == ksteps - 1;
				uint32_t kk = ks * g->kt;

				/* load engine */
				if (g->pipelined && g_step >= 2)
					tcb_sem(cb, false, fl, TNPU_ENGINE_LOAD, S_FREE + h, 1);
				for (uint32_t r = 0; r < nrows; r++)
					tcb_dma(cb, true, fl, g->a + ((uint64_t)(mo + r * Mb) * g->k + kk) * e,
						(uint64_t)g->k * e, 0, (uint8_t)r, h, a_off, g->kt * e, 0, g->kt * e, Mb, 1);
				tcb_dma(cb, true, fl, g->b + ((uint64_t)kk * g->n + no) * e, (uint64_t)g->n * e, 0,
					nrows == R ? TNPU_DMA_ROW_ALL : 0, h, b_off, Nb * e, 0, Nb * e, g->kt, 1);
				if (nrows != R)
					for (uint32_t r = 1; r < nrows; r++)
						tcb_dma(cb, true, fl, g->b + ((uint64_t)kk * g->n + no) * e,
							(uint64_t)g->n * e, 0, (uint8_t)r, h, b_off, Nb * e, 0, Nb * e,
							g->kt, 1);
				if (g->pipelined)
					tcb_sem(cb, true, fl, TNPU_ENGINE_LOAD, S_FULL + h, 1);
				/* compute engine */
				if (g->pipelined) {
					tcb_sem(cb, false, fl, TNPU_ENGINE_COMPUTE, S_FULL + h, 1);
					if (last && stg_used[h])
						tcb_sem(cb, false, fl, TNPU_ENGINE_COMPUTE, S_STG_FREE + h, 1);
				}
				tpkt_exe(&pkt, 0, last ? (TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT) : 0, NULL, 0);
				if (nrows == R)
					tcb_dispatch(cb, fl, TNPU_DISPATCH_ROW_ALL, h, 0, pkt.buf, pkt.len);
				else
					for (uint32_t r = 0; r < nrows; r++)
						tcb_dispatch(cb, fl, (uint8_t)r, h, 0, pkt.buf, pkt.len);
				if (g->pipelined) {
					tcb_sem(cb, true, fl, TNPU_ENGINE_COMPUTE, S_FREE + h, 1);
					if (last)
						tcb_sem(cb, true, fl, TNPU_ENGINE_COMPUTE, S_STG_FULL + h, 1);
				}
				/* store engine */
				if (last) {
					if (g->pipelined)
						tcb_sem(cb, false, fl, TNPU_ENGINE_STORE, S_STG_FULL + h, 1);
					for (uint32_t r = 0; r < nrows; r++)
						tcb_dma(cb, false, fl, g->c + ((uint64_t)(mo + r * Mb) * g->n + no) * 4,
							(uint64_t)g->n * 4, 0, (uint8_t)r, h, c_off, Nb * 4, 0, Nb * 4, Mb, 1);
					if (g->pipelined)
						tcb_sem(cb, true, fl, TNPU_ENGINE_STORE, S_STG_FREE + h, 1);
					stg_used[h] = true;
				}
			}
		}
	}
	return 0;
}
