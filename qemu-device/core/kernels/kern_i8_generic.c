/* SPDX-License-Identifier: MIT */
/*
 * Portable int8 variant: plain C micro-kernel over int16-pair packing.
 * a0*b0 + a1*b1 is at most 2 * 128 * 128, so it fits int32; the running sum
 * is kept in uint32_t so wrap-around is defined.
 */
#include "kern_internal.h"

#define MR 4
#define NR 16

static void uk_i8_generic(size_t ng, const void *apv, const void *bpv, int32_t *c, size_t ldc,
			  bool load_c, size_t mre, size_t nre)
{
	(void)mre, (void)nre;	/* full tiles only (edges = false) */
	const int16_t *ap = apv, *bp = bpv;
	uint32_t acc[MR][NR];

	for (size_t i = 0; i < MR; i++)
		for (size_t j = 0; j < NR; j++)
			acc[i][j] = load_c ? (uint32_t)c[i * ldc + j] : 0u;
	for (size_t g = 0; g < ng; g++, ap += 2 * MR, bp += 2 * NR)
		for (size_t i = 0; i < MR; i++) {
			int32_t a0 = ap[2 * i], a1 = ap[2 * i + 1];
			for (size_t j = 0; j < NR; j++)
				acc[i][j] += (uint32_t)(a0 * bp[2 * j] + a1 * bp[2 * j + 1]);
		}
	for (size_t i = 0; i < MR; i++)
		for (size_t j = 0; j < NR; j++)
			c[i * ldc + j] = (int32_t)acc[i][j];
}

const struct kern_i8_impl kern_i8_generic = {
	.name = "generic",
	.mr = MR, .nr = NR, .kg = 2,
	.kc = 512, .mc = 128, .nc = 2048,
	.a_bytes = 2, .b_bytes = 2, .b_extra = 0,
	.pack_a = kern_pack_rows_i16p,
	.pack_b_nt = kern_pack_rows_i16p,
	.pack_b_nn = kern_pack_cols_i16p,
	.ukernel = uk_i8_generic,
};
