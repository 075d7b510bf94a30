/* SPDX-License-Identifier: MIT */
/*
 * One GEMM tile per PE of row 0 with its own operand records, for the tests of the per-PE address
 * rewrites (test_cpair.c, test_wrap.c): A (tm x KD), B per PE (KD x TN) at TILE_B_OFF, the int32/fp32
 * output and an optional plain residual; the instruction buffer LD A (ZSKIP or not), LD B, MAC (chained
 * SFU), ST.  The includer defines TILE_B_OFF and gives check_into the spec's row address of its records.
 */
#ifndef TNPU_TEST_TILE_CASE_H
#define TNPU_TEST_TILE_CASE_H

#include "common.h"

enum { COLS = 4, PES = 4 };

static struct tsim s;
static uint64_t host;
static struct tcb cb;
static struct tnpu_result res;
static struct tnpu_config cfg;

static void setup(void)
{
	cfg = small_cfg();
	cfg.cols = COLS; /* two cluster pairs; several clusters' blocks per layout row */
	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
	host = tsim_buf(&s, 64 * 1024);
	tcb_init(&cb);
}

static void teardown(void)
{
	tcb_free(&cb);
	tsim_fini(&s);
}

static uint8_t *H(uint32_t off)
{
	return (uint8_t *)tsim_ptr(&s, host) + off;
}

static uint32_t run(void)
{
	tsim_run(&s, &cb, 0, &res);
	cb.len = 0;
	return res.error;
}

enum {
	KD = 8,
	TN = 3,
	A_OFF = 64,
	B_OFF = TILE_B_OFF,
	O_OFF = 16384,
	O_LEN = 12288,
	R_OFF = 28672,
	HOST_OUT = 32768,
	IMG = 32768
};

struct tile_case {
	struct tnpu_operand a, o, r;
	unsigned tm;
	bool f32, residual, zskip;
};

/* Row i of PE (c, p)'s tile under record o, as the spec places it. */
typedef int64_t (*tile_row_fn)(const struct tnpu_operand *o, unsigned c, unsigned p, unsigned i);

/* The image (IMG bytes of the data buffer) into the storage units, CONFIG, n_exe EXEs, the output area
 * back to HOST_OUT. */
static uint32_t run_exes(const struct tile_case *q, unsigned n_exe)
{
	uint8_t dt = q->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT8, e = q->f32 ? 4 : 1;
	uint16_t ins[] = {TNPU_INSN_LD(0, 0, 0, q->zskip), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 1),
			  TNPU_INSN_ST(0, 2, 0)};
	struct tnpu_operand ops[5] = {q->a, t_opnd(B_OFF, 0, TN * e, PES * TN * e, KD, TN, dt, 0), q->o};
	struct tnpu_sfu_param sp = {.ops = (uint8_t)(q->residual ? TNPU_SFU_OP_RESIDUAL : 0),
				    .out_dtype = q->f32 ? TNPU_DTYPE_FP32 : TNPU_DTYPE_INT32};
	struct tpkt p;

	memcpy(&ops[3], &sp, 32);
	ops[4] = q->r;
	tcb_dma(&cb, true, 0, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 0, IMG, 1, 1);
	tpkt_config(&p, 0,
		    &(struct tnpu_cfg_hdr){.n_instr = 4,
					   .n_operands = q->residual ? 5 : 4,
					   .loop_end = 3,
					   .repeat = 1,
					   .sfu_rf = 3,
					   .mode = TNPU_CFG_MODE_PIPE4},
		    ins, ops);
	tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	for (unsigned x = 0; x < n_exe; x++) {
		tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
		tcb_dispatch(&cb, 0, 0, 0, 0, p.buf, p.len);
	}
	tcb_dma(&cb, false, 0, host + HOST_OUT, 0, 0, 0, 0, O_OFF, 0, 0, O_LEN, 1, 1);
	return run();
}

static uint32_t run_case(const struct tile_case *q)
{
	return run_exes(q, 1);
}

/* The expected output area (want: the area so far, e.g. the input's bytes there) with every PE's tile
 * written in (c, p) order, compared with what came back: the number of wrong bytes. */
static unsigned check_into(const struct tile_case *q, tile_row_fn row, const uint8_t *img, uint8_t *want)
{
	unsigned e = q->f32 ? 4 : 1, wrong = 0;

	for (unsigned c = 0; c < COLS; c++)
		for (unsigned p = 0; p < PES; p++)
			for (unsigned i = 0; i < q->tm; i++) {
				int64_t aa = row(&q->a, c, p, i), ra = row(&q->r, c, p, i);
				uint8_t *d = want + row(&q->o, c, p, i) - O_OFF;

				for (unsigned j = 0; j < TN; j++, d += 4) {
					if (q->f32) {
						float v = 0, x, w;

						for (unsigned k = 0; k < KD; k++) {
							memcpy(&x, img + aa + 4 * k, 4);
							memcpy(&w, img + B_OFF + k * PES * TN * e + p * TN * e + 4 * j,
							       4);
							v = fmaf(x, w, v);
						}
						if (q->residual) {
							memcpy(&x, img + ra + 4 * j, 4);
							v += x;
						}
						memcpy(d, &v, 4);
					} else {
						int32_t v = 0, r;

						for (unsigned k = 0; k < KD; k++)
							v += (int8_t)img[aa + k] *
							     (int8_t)img[B_OFF + k * PES * TN + p * TN + j];
						if (q->residual) {
							memcpy(&r, img + ra + 4 * j, 4);
							v = (int32_t)((uint32_t)v + (uint32_t)r);
						}
						memcpy(d, &v, 4);
					}
				}
			}
	for (unsigned i = 0; i < O_LEN; i++)
		wrong += H(HOST_OUT)[i] != want[i];
	return wrong;
}

/* Random data over the image; with zero_a about a third of A's elements zero (before B: the ZSKIP
 * counts have something to skip). */
static void fill(uint64_t *seed, bool f32, bool zero_a)
{
	for (unsigned i = 0; i < IMG; i += 4) {
		if (f32) {
			float v = (float)((int)(trng(seed) % 2001) - 1000) / 256.0f;

			if (zero_a && i < B_OFF && trng(seed) % 3 == 0)
				v = 0;
			memcpy(H(i), &v, 4);
		} else {
			uint32_t v = (uint32_t)trng(seed);

			if (zero_a && i < B_OFF && trng(seed) % 3 == 0)
				v &= 0xFF00FF00u;
			memcpy(H(i), &v, 4);
		}
	}
}

/* check_into starting from the input's bytes in the output area. */
static unsigned check_tile(const struct tile_case *q, tile_row_fn row, const uint8_t *img)
{
	static uint8_t want[O_LEN];

	memcpy(want, img + O_OFF, O_LEN);
	return check_into(q, row, img, want);
}

#endif
