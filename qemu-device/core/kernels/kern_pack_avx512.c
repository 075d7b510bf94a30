/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 packing.  The model calls the kernels once per tile, so every call
 * packs its A and B tiles; at tile sizes around 128 the scalar packers cost
 * as much as the multiply.  Here the row-gathering packs (A, and B in "nt"
 * layout) are 8 x 16 transposes of 32-bit words (fp32 values or int8 quads)
 * and the column packs are straight vector copies / byte interleaves.
 * Partial panels and k tails go through the portable code or scalar loops.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx512f,avx512vl,avx512bw,avx512dq"

/*
 * Transposes 8 rows x 16 words (r0..r7) to 16 columns of 8 words; column c
 * goes to dst + c * stride.  unpack/shuffle build 4-row groups in each
 * 128-bit lane, vpermt2ps joins the two 4-row halves of two columns.
 */
TNPU_TARGET(KERN_ISA)
static inline __attribute__((always_inline)) void tr8x16_store(__m512 r0, __m512 r1, __m512 r2, __m512 r3, __m512 r4, __m512 r5,
				__m512 r6, __m512 r7, float *dst, size_t stride)
{
	__m512 t0 = _mm512_unpacklo_ps(r0, r1), t1 = _mm512_unpackhi_ps(r0, r1);
	__m512 t2 = _mm512_unpacklo_ps(r2, r3), t3 = _mm512_unpackhi_ps(r2, r3);
	__m512 t4 = _mm512_unpacklo_ps(r4, r5), t5 = _mm512_unpackhi_ps(r4, r5);
	__m512 t6 = _mm512_unpacklo_ps(r6, r7), t7 = _mm512_unpackhi_ps(r6, r7);
	/* u[j] lane L = rows 0-3 of column 4L + j; u[4 + j] = rows 4-7 of it. */
	__m512 u[8];
	u[0] = _mm512_shuffle_ps(t0, t2, 0x44);
	u[1] = _mm512_shuffle_ps(t0, t2, 0xee);
	u[2] = _mm512_shuffle_ps(t1, t3, 0x44);
	u[3] = _mm512_shuffle_ps(t1, t3, 0xee);
	u[4] = _mm512_shuffle_ps(t4, t6, 0x44);
	u[5] = _mm512_shuffle_ps(t4, t6, 0xee);
	u[6] = _mm512_shuffle_ps(t5, t7, 0x44);
	u[7] = _mm512_shuffle_ps(t5, t7, 0xee);
	/* lanes (a.0, b.0, a.1, b.1) and (a.2, b.2, a.3, b.3) */
	const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
	const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29,
					     30, 31);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		__m512 v0 = _mm512_permutex2var_ps(u[j], lo, u[4 + j]);	/* cols j, j+4 */
		__m512 v1 = _mm512_permutex2var_ps(u[j], hi, u[4 + j]);	/* cols j+8, j+12 */
		_mm256_storeu_ps(dst + (size_t)j * stride, _mm512_castps512_ps256(v0));
		_mm256_storeu_ps(dst + (size_t)(j + 4) * stride, _mm512_extractf32x8_ps(v0, 1));
		_mm256_storeu_ps(dst + (size_t)(j + 8) * stride, _mm512_castps512_ps256(v1));
		_mm256_storeu_ps(dst + (size_t)(j + 12) * stride, _mm512_extractf32x8_ps(v1, 1));
	}
}

/* Tiles handed to the kernels are usually slices of big matrices whose rows
 * are pages apart, which the hardware prefetchers do not follow: the packers
 * prefetch the rows they will read next explicitly.  Column packs walk the
 * rows of B in k order across all panels so each row segment is read
 * contiguously. */
#define PACK_PREFETCH_ROWS 6

TNPU_TARGET(KERN_ISA)
static inline void prefetch_row(const void *p, size_t bytes)
{
	for (size_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

TNPU_TARGET(KERN_ISA)
void kern_pack_rows_f32_avx512(size_t r, size_t rows, size_t kc, const float *src, size_t ld,
			       float *dst)
{
	for (size_t ps = 0; ps < rows; ps += r, dst += r * kc) {
		const float *s = src + ps * ld;
		/* A partial panel (M edges are common: 7x7 and 14x14 maps) transposes its full groups of
		 * 8 rows too; the last < 8 rows and the zero padding go row p by row p below. */
		size_t rr = kern_min(r, rows - ps), full = rr & ~(size_t)7;

		if (full < r) {
			const float *t = s + full * ld;

			for (size_t p = 0; p < kc; p++) {
				float *d = dst + p * r;
				size_t i = full;

				for (; i < rr; i++)
					d[i] = t[(i - full) * ld + p];
				for (; i < r; i++)
					d[i] = 0.0f;
			}
		}
		for (size_t i0 = 0; i0 < full; i0 += 8, s += 8 * ld) {
			size_t p = 0;
			for (; p + 16 <= kc; p += 16) {
				/* Fetch the next 8 rows' chunk (rows are often pages apart). */
				for (size_t i = 8; i < 16 && i0 + i < rows - ps; i++)
					_mm_prefetch((const char *)(s + i * ld + p), _MM_HINT_T0);
				tr8x16_store(_mm512_loadu_ps(s + p), _mm512_loadu_ps(s + ld + p),
					     _mm512_loadu_ps(s + 2 * ld + p),
					     _mm512_loadu_ps(s + 3 * ld + p),
					     _mm512_loadu_ps(s + 4 * ld + p),
					     _mm512_loadu_ps(s + 5 * ld + p),
					     _mm512_loadu_ps(s + 6 * ld + p),
					     _mm512_loadu_ps(s + 7 * ld + p), dst + p * r + i0, r);
			}
			for (; p < kc; p++)
				for (size_t i = 0; i < 8; i++)
					dst[p * r + i0 + i] = s[i * ld + p];
		}
	}
}

TNPU_TARGET(KERN_ISA)
void kern_pack_cols_f32_avx512(size_t r, size_t cols, size_t kc, const float *src, size_t ld,
			       float *dst)
{
	for (size_t p = 0; p < kc; p++) {
		const float *s = src + p * ld;
		if (p + PACK_PREFETCH_ROWS < kc)
			prefetch_row(s + PACK_PREFETCH_ROWS * ld, cols * sizeof(float));
		float *d = dst + p * r;
		for (size_t js = 0; js < cols; js += r, d += r * kc) {
			size_t cc = kern_min(r, cols - js);
			/* Masked loads read nothing past the edge and zero the padding. */
			for (size_t j = 0; j < r; j += 16) {
				size_t left = cc > j ? cc - j : 0;
				__mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
				_mm512_storeu_ps(d + j, _mm512_maskz_loadu_ps(mk, s + js + j));
			}
		}
	}
}

/* 16 k groups of one row as 16 32-bit words, zero past `avail` bytes:
 * quads (kg 4: 64 bytes as is) or pairs (kg 2: 32 bytes widened to int16). */
TNPU_TARGET(KERN_ISA)
static inline __m512 load_groups(const int8_t *row, size_t g, size_t avail, bool pairs)
{
	size_t q = pairs ? 2 * g : 4 * g, bytes = pairs ? 32 : 64;
	size_t left = avail > q ? avail - q : 0;
	if (pairs) {
		__m256i v = left >= 32 ? _mm256_loadu_si256((const __m256i *)(row + q))
				       : _mm256_maskz_loadu_epi8((__mmask32)((1ull << left) - 1), row + q);
		return _mm512_castsi512_ps(_mm512_cvtepi8_epi16(v));
	}
	if (left >= bytes)
		return _mm512_castsi512_ps(_mm512_loadu_si512(row + q));
	return _mm512_castsi512_ps(_mm512_maskz_loadu_epi8(((__mmask64)1 << left) - 1, row + q));
}

/* Shared by the quad and pair layouts: both are 32-bit word transposes. */
TNPU_TARGET(KERN_ISA)
static void pack_rows_w32(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
			  uint8_t *dst, uint32_t xor_mask, bool pairs)
{
	const size_t ng = kern_div_up(kc, pairs ? 2 : 4);
	const __m512 x = _mm512_castsi512_ps(_mm512_set1_epi32((int)xor_mask));

	for (size_t ps = 0; ps < rows; ps += r, dst += r * ng * 4) {
		size_t rr = kern_min(r, rows - ps);
		float *d = (float *)(void *)dst;	/* 32-bit words; only moved, never used as floats */
		for (size_t i0 = 0; i0 < r; i0 += 8) {
			/* Rows past the edge read as zero (then xor'ed like real zeros). */
			const int8_t *row[8];
			size_t avail[8];
			for (size_t i = 0; i < 8; i++) {
				bool in = i0 + i < rr;
				row[i] = in ? src + (ps + i0 + i) * ld : src;
				avail[i] = in ? kc : 0;
			}
			for (size_t g = 0; g < ng; g += 16) {
				__m512 v[8];
				for (int i = 0; i < 8; i++)
					v[i] = _mm512_xor_ps(load_groups(row[i], g, avail[i], pairs), x);
				if (g + 16 <= ng) {
					tr8x16_store(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
						     d + g * r + i0, r);
				} else {
					/* Last groups: transpose into a buffer, copy what exists. */
					_Alignas(64) float tmp[16 * 8];
					tr8x16_store(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
						     tmp, 8);
					for (size_t gg = 0; gg < ng - g; gg++)
						memcpy(d + (g + gg) * r + i0, tmp + gg * 8, 32);
				}
			}
		}
	}
}

TNPU_TARGET(KERN_ISA)
void kern_pack_rows_q8_avx512(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
			      uint8_t *dst, uint32_t xor_mask)
{
	pack_rows_w32(r, rows, kc, src, ld, dst, xor_mask, false);
}

TNPU_TARGET(KERN_ISA)
void kern_pack_rows_i16p_avx512(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
				void *dst)
{
	pack_rows_w32(r, rows, kc, src, ld, dst, 0, true);
}

TNPU_TARGET(KERN_ISA)
void kern_pack_cols_i16p_avx512(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
				void *dst)
{
	const size_t ng = kern_div_up(kc, 2);
	const size_t panel = r * ng * 4;

	for (size_t g = 0; g < ng; g++) {
		const int8_t *s = src + 2 * g * ld;
		if (2 * g + 2 + PACK_PREFETCH_ROWS <= kc)
			for (size_t e = 0; e < 2; e++)
				prefetch_row(s + (PACK_PREFETCH_ROWS + e) * ld, cols);
		uint8_t *dg = (uint8_t *)dst + g * r * 4;
		for (size_t js = 0; js < cols; js += r, dg += panel) {
			size_t cc = kern_min(r, cols - js);
			for (size_t j = 0; j < r; j += 16) {
				size_t left = cc > j ? cc - j : 0;
				__mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
				__m128i x0 = _mm_maskz_loadu_epi8(mk, s + js + j);
				__m128i x1 = 2 * g + 1 < kc ? _mm_maskz_loadu_epi8(mk, s + ld + js + j)
							    : _mm_setzero_si128();
				/* Byte pairs (row 2g, row 2g+1) per column, widened to int16. */
				_mm256_storeu_si256((__m256i *)(dg + j * 4),
						    _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x0, x1)));
				_mm256_storeu_si256((__m256i *)(dg + j * 4 + 32),
						    _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(x0, x1)));
			}
		}
	}
}

TNPU_TARGET(KERN_ISA)
void kern_pack_cols_q8_avx512(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
			      uint8_t *dst, size_t panel)
{
	const size_t ng = kern_div_up(kc, 4);

	for (size_t g = 0; g < ng; g++) {
		const int8_t *s = src + 4 * g * ld;
		if (4 * g + 4 + PACK_PREFETCH_ROWS <= kc)
			for (size_t e = 0; e < 4; e++)
				prefetch_row(s + (PACK_PREFETCH_ROWS + e) * ld, cols);
		uint8_t *dg = dst + g * r * 4;
		for (size_t js = 0; js < cols; js += r, dg += panel) {
			size_t cc = kern_min(r, cols - js);
			for (size_t j = 0; j < r; j += 16) {
				size_t left = cc > j ? cc - j : 0;
				__mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
				__m128i x[4];
				for (size_t e = 0; e < 4; e++)
					x[e] = 4 * g + e < kc
						       ? _mm_maskz_loadu_epi8(mk, s + e * ld + js + j)
						       : _mm_setzero_si128();
				/* Interleave 4 rows byte-wise: column j's quad = rows 0..3. */
				__m128i a = _mm_unpacklo_epi8(x[0], x[1]), b = _mm_unpackhi_epi8(x[0], x[1]);
				__m128i c = _mm_unpacklo_epi8(x[2], x[3]), d = _mm_unpackhi_epi8(x[2], x[3]);
				_mm_storeu_si128((__m128i *)(dg + j * 4), _mm_unpacklo_epi16(a, c));
				_mm_storeu_si128((__m128i *)(dg + j * 4 + 16), _mm_unpackhi_epi16(a, c));
				_mm_storeu_si128((__m128i *)(dg + j * 4 + 32), _mm_unpacklo_epi16(b, d));
				_mm_storeu_si128((__m128i *)(dg + j * 4 + 48), _mm_unpackhi_epi16(b, d));
			}
		}
	}
}
#endif /* __x86_64__ */
