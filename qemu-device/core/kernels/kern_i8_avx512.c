/* SPDX-License-Identifier: MIT */
/*
 * AVX-512BW int8 variant (CPUs without VNNI): int16-pair packing,
 * vpmaddwd + vpaddd on zmm.  vpmaddwd computes a0*b0 + a1*b1 per int32 lane;
 * with int8 inputs it cannot saturate (|sum| <= 2^15) and vpaddd wraps, so
 * the result is exact modulo 2^32.  8 x 32 micro-tile (16 accumulators),
 * masked C access on partial tiles.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx512f,avx512vl,avx512bw,avx512dq"

#define MR 8
#define NR 32

TNPU_TARGET(KERN_ISA)
static inline __mmask16 cols_mask(size_t nre, size_t j0)
{
	size_t left = nre > j0 ? nre - j0 : 0;
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

TNPU_TARGET(KERN_ISA)
static void uk_i8_avx512(size_t ng, const void *apv, const void *bpv, int32_t *restrict c,
			 size_t ldc, bool load_c, size_t mre, size_t nre)
{
	const int16_t *ap = apv, *bp = bpv;
	const __mmask16 m0 = cols_mask(nre, 0), m1 = cols_mask(nre, 16);
	__m512i c0[MR], c1[MR];

#pragma GCC unroll 16
	for (size_t i = 0; i < MR; i++) {
		if (load_c && i < mre) {
			c0[i] = _mm512_maskz_loadu_epi32(m0, c + i * ldc);
			c1[i] = _mm512_maskz_loadu_epi32(m1, c + i * ldc + 16);
		} else {
			c0[i] = _mm512_setzero_si512();
			c1[i] = _mm512_setzero_si512();
		}
	}
	for (size_t g = 0; g < ng; g++, ap += 2 * MR, bp += 2 * NR) {
		__m512i b0 = _mm512_loadu_si512(bp);
		__m512i b1 = _mm512_loadu_si512(bp + 32);
#pragma GCC unroll 16
		for (size_t i = 0; i < MR; i++) {
			int32_t pair;
			memcpy(&pair, ap + 2 * i, sizeof(pair));
			__m512i av = _mm512_set1_epi32(pair);
			c0[i] = _mm512_add_epi32(c0[i], _mm512_madd_epi16(av, b0));
			c1[i] = _mm512_add_epi32(c1[i], _mm512_madd_epi16(av, b1));
		}
	}
#pragma GCC unroll 16
	for (size_t i = 0; i < MR; i++) {
		if (i < mre) {
			_mm512_mask_storeu_epi32(c + i * ldc, m0, c0[i]);
			_mm512_mask_storeu_epi32(c + i * ldc + 16, m1, c1[i]);
		}
	}
}

const struct kern_i8_impl kern_i8_avx512 = {
	.name = "avx512",
	.mr = MR, .nr = NR, .kg = 2,
	/* B micro-panel: KC/2 x 32 int32 words = 32 KiB at KC = 512. */
	.kc = 512, .mc = 256, .nc = 4096,
	.a_bytes = 2, .b_bytes = 2, .b_extra = 0,
	.pack_a = kern_pack_rows_i16p_avx512,
	.pack_b_nt = kern_pack_rows_i16p_avx512,
	.pack_b_nn = kern_pack_cols_i16p_avx512,
	.ukernel = uk_i8_avx512,
	.edges = true,
};
#endif /* __x86_64__ */
