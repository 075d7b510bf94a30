/* SPDX-License-Identifier: MIT */
/*
 * AVX2+FMA fp32 variant: 6 x 16 micro-tile (12 ymm accumulators, 2 for the
 * B row, 1 broadcast of A = 15 of the 16 ymm registers).
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>

#include "kern_internal.h"

#define KERN_ISA "avx2,fma"

#define MR 6
#define NR 16

TNPU_TARGET(KERN_ISA)
static void uk_f32_avx2(size_t kc, const float *restrict ap, const float *restrict bp,
			float *restrict c, size_t ldc, bool load_c, size_t mre, size_t nre)
{
	(void)mre, (void)nre;	/* full tiles only (edges = false) */
	__m256 c0[MR], c1[MR];

	if (load_c) {
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			c0[i] = _mm256_loadu_ps(c + i * ldc);
			c1[i] = _mm256_loadu_ps(c + i * ldc + 8);
		}
	} else {
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			c0[i] = _mm256_setzero_ps();
			c1[i] = _mm256_setzero_ps();
		}
	}
	for (size_t p = 0; p < kc; p++, ap += MR, bp += NR) {
		__m256 b0 = _mm256_loadu_ps(bp);
		__m256 b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			__m256 av = _mm256_broadcast_ss(ap + i);
			c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
			c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		_mm256_storeu_ps(c + i * ldc, c0[i]);
		_mm256_storeu_ps(c + i * ldc + 8, c1[i]);
	}
}

const struct kern_f32_impl kern_f32_avx2 = {
	.name = "avx2",
	.mr = MR, .nr = NR,
	/* KC x NR B micro-panel = 16 KiB (L1); MC x KC A block = 384 KiB (L2). */
	.kc = 256, .mc = 384, .nc = 4096,
	.pack_rows = kern_pack_rows_f32,
	.pack_cols = kern_pack_cols_f32,
	.ukernel = uk_f32_avx2,
	.dw_row = kern_dw_row_f32_avx2,
};
#endif /* __x86_64__ */
