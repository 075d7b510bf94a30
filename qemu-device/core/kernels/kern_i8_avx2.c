/* SPDX-License-Identifier: MIT */
/*
 * AVX2 int8 variant: int16-pair packing, vpmaddwd + vpaddd.
 * vpmaddwd computes a0*b0 + a1*b1 per int32 lane; with int8 inputs it can
 * never saturate (|sum| <= 2^15), and vpaddd wraps, so the result is exact
 * modulo 2^32.  6 x 16 micro-tile: 12 ymm accumulators + 2 B + A + product.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx2"

#define MR 6
#define NR 16

TNPU_TARGET(KERN_ISA)
static void uk_i8_avx2(size_t ng, const void *apv, const void *bpv, int32_t *restrict c,
		       size_t ldc, bool load_c, size_t mre, size_t nre)
{
	(void)mre, (void)nre;	/* full tiles only (edges = false) */
	const int16_t *ap = apv, *bp = bpv;
	__m256i c0[MR], c1[MR];

	if (load_c) {
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			c0[i] = _mm256_loadu_si256((const __m256i *)(c + i * ldc));
			c1[i] = _mm256_loadu_si256((const __m256i *)(c + i * ldc + 8));
		}
	} else {
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			c0[i] = _mm256_setzero_si256();
			c1[i] = _mm256_setzero_si256();
		}
	}
	for (size_t g = 0; g < ng; g++, ap += 2 * MR, bp += 2 * NR) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)bp);
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + 16));
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			int32_t pair;
			memcpy(&pair, ap + 2 * i, sizeof(pair));
			__m256i av = _mm256_set1_epi32(pair);
			c0[i] = _mm256_add_epi32(c0[i], _mm256_madd_epi16(av, b0));
			c1[i] = _mm256_add_epi32(c1[i], _mm256_madd_epi16(av, b1));
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		_mm256_storeu_si256((__m256i *)(c + i * ldc), c0[i]);
		_mm256_storeu_si256((__m256i *)(c + i * ldc + 8), c1[i]);
	}
}

const struct kern_i8_impl kern_i8_avx2 = {
	.name = "avx2",
	.mr = MR, .nr = NR, .kg = 2,
	.kc = 512, .mc = 384, .nc = 4096,
	.a_bytes = 2, .b_bytes = 2, .b_extra = 0,
	.pack_a = kern_pack_rows_i16p,
	.pack_b_nt = kern_pack_rows_i16p,
	.pack_b_nn = kern_pack_cols_i16p,
	.ukernel = uk_i8_avx2,
};
#endif /* __x86_64__ */
