/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 VNNI int8 variant: vpdpbusd (4 byte products per int32 lane per
 * instruction, twice the density of int16 pairs).
 *
 * vpdpbusd multiplies *unsigned* bytes by signed bytes, so A is packed as
 * a + 128 (a ^ 0x80) and the excess is removed with a per-column term:
 *     sum_p (a_p + 128) * b_p  =  sum_p a_p * b_p  +  128 * sum_p b_p
 * The B packer stores corr[j] = -128 * sum_p b[p][j] after each panel and the
 * micro-kernel seeds its accumulators with it.  Every quantity is an exact
 * integer and vpdpbusd/vpaddd wrap (no saturation in the non-"S" form), so
 * the result equals the reference modulo 2^32.
 *
 * 8 x 32 micro-tile (16 accumulators), masked C access on partial tiles.
 *
 * Packed layout, k grouped by 4 (zero B / a = 0 padding past kc):
 *   A: a[(g * r + i) * 4 + e] = src[i][4g + e] ^ 0x80          (uint8)
 *   B: b[(g * r + j) * 4 + e] = B(4g + e, j), then int32 corr[r] (int8)
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"

#define MR 8
#define NR 32

TNPU_TARGET(KERN_ISA)
static void pack_a_u8q(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	kern_pack_rows_q8_avx512(r, rows, kc, src, ld, dst, 0x80808080u);
}

/* corr[j] = -128 * sum_p B(p, j): vpdpbusd with 128 in every unsigned byte
 * sums each packed quad times 128 into its column's lane. */
TNPU_TARGET(KERN_ISA)
static void panel_corr(size_t r, size_t ng, uint8_t *d)
{
	const __m512i k128 = _mm512_set1_epi8((char)0x80);
	for (size_t j = 0; j < r; j += 16) {
		__m512i acc = _mm512_setzero_si512();
		for (size_t g = 0; g < ng; g++)
			acc = _mm512_dpbusd_epi32(acc, k128, _mm512_loadu_si512(d + (g * r + j) * 4));
		_mm512_storeu_si512(d + r * ng * 4 + j * 4, _mm512_sub_epi32(_mm512_setzero_si512(), acc));
	}
}

TNPU_TARGET(KERN_ISA)
static void pack_b_nt_s8q(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	uint8_t *d = dst;
	size_t ng = kern_div_up(kc, 4);
	for (size_t js = 0; js < cols; js += r, d += r * ng * 4 + r * 4) {
		kern_pack_rows_q8_avx512(r, kern_min(r, cols - js), kc, src + js * ld, ld, d, 0);
		panel_corr(r, ng, d);
	}
}

TNPU_TARGET(KERN_ISA)
static void pack_b_nn_s8q(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	uint8_t *d = dst;
	size_t ng = kern_div_up(kc, 4);
	size_t panel = r * ng * 4 + r * 4;

	kern_pack_cols_q8_avx512(r, cols, kc, src, ld, d, panel);
	for (size_t js = 0; js < cols; js += r, d += panel)
		panel_corr(r, ng, d);
}

TNPU_TARGET(KERN_ISA)
static inline __mmask16 cols_mask(size_t nre, size_t j0)
{
	size_t left = nre > j0 ? nre - j0 : 0;
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

TNPU_TARGET(KERN_ISA)
static void uk_i8_avx512vnni(size_t ng, const void *apv, const void *bpv, int32_t *restrict c,
			     size_t ldc, bool load_c, size_t mre, size_t nre)
{
	const uint8_t *ap = apv, *bp = bpv;
	const __mmask16 m0 = cols_mask(nre, 0), m1 = cols_mask(nre, 16);
	const __m512i corr0 = _mm512_loadu_si512(bp + ng * NR * 4);
	const __m512i corr1 = _mm512_loadu_si512(bp + ng * NR * 4 + 64);
	__m512i c0[MR], c1[MR];

#pragma GCC unroll 16
	for (size_t i = 0; i < MR; i++) {
		if (load_c && i < mre) {
			c0[i] = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, c + i * ldc), corr0);
			c1[i] = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, c + i * ldc + 16), corr1);
		} else {
			c0[i] = corr0;
			c1[i] = corr1;
		}
	}
	for (size_t g = 0; g < ng; g++, ap += 4 * MR, bp += 4 * NR) {
		__m512i b0 = _mm512_loadu_si512(bp);
		__m512i b1 = _mm512_loadu_si512(bp + 64);
#pragma GCC unroll 16
		for (size_t i = 0; i < MR; i++) {
			int32_t quad;
			memcpy(&quad, ap + 4 * i, sizeof(quad));
			__m512i av = _mm512_set1_epi32(quad);
			c0[i] = _mm512_dpbusd_epi32(c0[i], av, b0);
			c1[i] = _mm512_dpbusd_epi32(c1[i], av, b1);
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

const struct kern_i8_impl kern_i8_avx512vnni = {
	.name = "avx512vnni",
	.mr = MR, .nr = NR, .kg = 4,
	/* B micro-panel: KC/4 x 32 int32 words = 32 KiB at KC = 1024. */
	.kc = 1024, .mc = 256, .nc = 4096,
	.a_bytes = 1, .b_bytes = 1, .b_extra = NR * 4,
	.pack_a = pack_a_u8q,
	.pack_b_nt = pack_b_nt_s8q,
	.pack_b_nn = pack_b_nn_s8q,
	.ukernel = uk_i8_avx512vnni,
	.edges = true,
};
#endif /* __x86_64__ */
