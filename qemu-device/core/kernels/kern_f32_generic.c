/* SPDX-License-Identifier: MIT */
/*
 * Portable fp32 variant: plain C micro-kernel for CPUs without AVX2/FMA and
 * for hosts that are not x86-64.  Every step is one fused multiply-add
 * (fmaf: a single rounding), in k order: the same chain as the SIMD variants,
 * so every variant gives the same bits (tnpu_kernels.h "Numerics").  Slower
 * where fmaf is not one instruction, but never different.
 */
#include <math.h>

#include "kern_internal.h"

#define MR 4
#define NR 16

static void uk_f32_generic(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
			   bool load_c, size_t mre, size_t nre)
{
	(void)mre, (void)nre;	/* full tiles only (edges = false) */
	float acc[MR][NR];

	for (size_t i = 0; i < MR; i++)
		for (size_t j = 0; j < NR; j++)
			acc[i][j] = load_c ? c[i * ldc + j] : 0.0f;
	for (size_t p = 0; p < kc; p++, ap += MR, bp += NR)
		for (size_t i = 0; i < MR; i++)
			for (size_t j = 0; j < NR; j++)
				acc[i][j] = fmaf(ap[i], bp[j], acc[i][j]);
	for (size_t i = 0; i < MR; i++)
		for (size_t j = 0; j < NR; j++)
			c[i * ldc + j] = acc[i][j];
}

const struct kern_f32_impl kern_f32_generic = {
	.name = "generic",
	.mr = MR, .nr = NR,
	.kc = 256, .mc = 128, .nc = 2048,
	.pack_rows = kern_pack_rows_f32,
	.pack_cols = kern_pack_cols_f32,
	.ukernel = uk_f32_generic,
};
