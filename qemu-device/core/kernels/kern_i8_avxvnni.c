/* SPDX-License-Identifier: MIT */
/*
 * AVX-VNNI int8 variant (AVX2 CPUs with the VEX-encoded vpdpbusd, e.g. Alder
 * Lake and later client cores, which have no AVX-512): the same unsigned-A
 * trick as kern_i8_avx512vnni.c on ymm registers.  A is packed as a ^ 0x80
 * (= a + 128 as uint8), B as signed byte quads followed by
 * corr[j] = -128 * sum_p B(p, j), which seeds the accumulators; everything is
 * exact modulo 2^32.  6 x 16 micro-tile: 12 ymm accumulators, 2 B, 1 A.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx2,fma,avxvnni"

#define MR 6
#define NR 16

TNPU_TARGET(KERN_ISA)
static void pack_a_u8q(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	kern_pack_rows_q8(r, rows, kc, src, ld, dst, 0x80808080u);
}

/* corr = -(128 * column sums): vpdpbusd with 128 in every unsigned byte. */
TNPU_TARGET(KERN_ISA)
static void panel_corr(size_t ng, uint8_t *d)
{
	const __m256i k128 = _mm256_set1_epi8((char)0x80);
	for (size_t j = 0; j < NR; j += 8) {
		__m256i acc = _mm256_setzero_si256();
		for (size_t g = 0; g < ng; g++)
			acc = _mm256_dpbusd_avx_epi32(
				acc, k128, _mm256_loadu_si256((const __m256i *)(d + (g * NR + j) * 4)));
		_mm256_storeu_si256((__m256i *)(d + NR * ng * 4 + j * 4),
				    _mm256_sub_epi32(_mm256_setzero_si256(), acc));
	}
}

TNPU_TARGET(KERN_ISA)
static void pack_b_nt_s8q(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	uint8_t *d = dst;
	size_t ng = kern_div_up(kc, 4);
	for (size_t js = 0; js < cols; js += r, d += r * ng * 4 + r * 4) {
		kern_pack_rows_q8(r, kern_min(r, cols - js), kc, src + js * ld, ld, d, 0);
		panel_corr(ng, d);
	}
}

TNPU_TARGET(KERN_ISA)
static void pack_b_nn_s8q(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	uint8_t *d = dst;
	size_t ng = kern_div_up(kc, 4);
	size_t panel = r * ng * 4 + r * 4;

	kern_pack_cols_q8(r, cols, kc, src, ld, d, panel);
	for (size_t js = 0; js < cols; js += r, d += panel)
		panel_corr(ng, d);
}

TNPU_TARGET(KERN_ISA)
static void uk_i8_avxvnni(size_t ng, const void *apv, const void *bpv, int32_t *restrict c,
			  size_t ldc, bool load_c, size_t mre, size_t nre)
{
	(void)mre, (void)nre;	/* full tiles only (edges = false) */
	const uint8_t *ap = apv, *bp = bpv;
	const __m256i corr0 = _mm256_loadu_si256((const __m256i *)(bp + ng * NR * 4));
	const __m256i corr1 = _mm256_loadu_si256((const __m256i *)(bp + ng * NR * 4 + 32));
	__m256i c0[MR], c1[MR];

#pragma GCC unroll 8
	for (size_t i = 0; i < MR; i++) {
		if (load_c) {
			c0[i] = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(c + i * ldc)), corr0);
			c1[i] = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(c + i * ldc + 8)),
						 corr1);
		} else {
			c0[i] = corr0;
			c1[i] = corr1;
		}
	}
	for (size_t g = 0; g < ng; g++, ap += 4 * MR, bp += 4 * NR) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)bp);
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + 32));
#pragma GCC unroll 8
		for (size_t i = 0; i < MR; i++) {
			int32_t quad;
			memcpy(&quad, ap + 4 * i, sizeof(quad));
			__m256i av = _mm256_set1_epi32(quad);
			c0[i] = _mm256_dpbusd_avx_epi32(c0[i], av, b0);
			c1[i] = _mm256_dpbusd_avx_epi32(c1[i], av, b1);
		}
	}
#pragma GCC unroll 8
	for (size_t i = 0; i < MR; i++) {
		_mm256_storeu_si256((__m256i *)(c + i * ldc), c0[i]);
		_mm256_storeu_si256((__m256i *)(c + i * ldc + 8), c1[i]);
	}
}

const struct kern_i8_impl kern_i8_avxvnni = {
	.name = "avxvnni",
	.mr = MR, .nr = NR, .kg = 4,
	/* B micro-panel: KC/4 x 16 int32 words = 16 KiB at KC = 1024. */
	.kc = 1024, .mc = 384, .nc = 4096,
	.a_bytes = 1, .b_bytes = 1, .b_extra = NR * 4,
	.pack_a = pack_a_u8q,
	.pack_b_nt = pack_b_nt_s8q,
	.pack_b_nn = pack_b_nn_s8q,
	.ukernel = uk_i8_avxvnni,
	.edges = false,
};
#endif /* __x86_64__ */
