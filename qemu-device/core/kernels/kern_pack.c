/* SPDX-License-Identifier: MIT */
/*
 * Portable packing into micro-panels (layouts described in kern_internal.h).
 * Packing is O(mk + kn) against the O(mnk) micro-kernel work, so plain C is
 * enough; the loops are written so the compiler can vectorize the copies.
 * Padding (rows/columns past the matrix edge, k past kc) is zero so the
 * micro-kernel can always compute a full tile.
 */
#include <string.h>

#include "kern_internal.h"

void kern_pack_rows_f32(size_t r, size_t rows, size_t kc, const float *src, size_t ld, float *dst)
{
	for (size_t ps = 0; ps < rows; ps += r, dst += r * kc) {
		size_t rr = kern_min(r, rows - ps);
		/* Row-wise: reads are sequential, writes stride r within an L1-sized panel. */
		for (size_t i = 0; i < rr; i++) {
			const float *s = src + (ps + i) * ld;
			for (size_t p = 0; p < kc; p++)
				dst[p * r + i] = s[p];
		}
		if (rr < r)	/* zero padding: one contiguous run per p, not a store every r floats */
			for (size_t p = 0; p < kc; p++)
				memset(dst + p * r + rr, 0, (r - rr) * sizeof(float));
	}
}

void kern_pack_cols_f32(size_t r, size_t cols, size_t kc, const float *src, size_t ld, float *dst)
{
	for (size_t js = 0; js < cols; js += r, dst += r * kc) {
		size_t cc = kern_min(r, cols - js);
		for (size_t p = 0; p < kc; p++) {
			memcpy(dst + p * r, src + p * ld + js, cc * sizeof(float));
			if (cc < r)
				memset(dst + p * r + cc, 0, (r - cc) * sizeof(float));
		}
	}
}

/* int16 pairs: element (group g, row i, e) at d[(g * r + i) * 2 + e] = src[i][2g + e]. */
void kern_pack_rows_i16p(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	int16_t *d = dst;
	size_t ng = kern_div_up(kc, 2);
	for (size_t ps = 0; ps < rows; ps += r, d += r * ng * 2) {
		size_t rr = kern_min(r, rows - ps);
		for (size_t i = 0; i < rr; i++) {
			const int8_t *s = src + (ps + i) * ld;
			for (size_t g = 0; g < kc / 2; g++) {
				d[(g * r + i) * 2] = s[2 * g];
				d[(g * r + i) * 2 + 1] = s[2 * g + 1];
			}
			if (kc & 1) {
				d[((ng - 1) * r + i) * 2] = s[kc - 1];
				d[((ng - 1) * r + i) * 2 + 1] = 0;
			}
		}
		for (size_t i = rr; i < r; i++)
			for (size_t g = 0; g < ng; g++) {
				d[(g * r + i) * 2] = 0;
				d[(g * r + i) * 2 + 1] = 0;
			}
	}
}

/* int16 pairs from k x n storage: d[(g * r + j) * 2 + e] = src[2g + e][j]. */
void kern_pack_cols_i16p(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld, void *dst)
{
	int16_t *d = dst;
	size_t ng = kern_div_up(kc, 2);
	for (size_t js = 0; js < cols; js += r, d += r * ng * 2) {
		size_t cc = kern_min(r, cols - js);
		for (size_t g = 0; g < ng; g++) {
			const int8_t *s0 = src + 2 * g * ld + js;
			const int8_t *s1 = 2 * g + 1 < kc ? s0 + ld : NULL;
			int16_t *dg = d + g * r * 2;
			for (size_t j = 0; j < cc; j++) {
				dg[2 * j] = s0[j];
				dg[2 * j + 1] = s1 ? s1[j] : 0;
			}
			for (size_t j = cc; j < r; j++) {
				dg[2 * j] = 0;
				dg[2 * j + 1] = 0;
			}
		}
	}
}

/* Byte quads: dst word (g * r + i) = src[i][4g .. 4g + 3] ^ xor_mask, bytes
 * past kc zero before the xor (kern_pack_rows_q8_avx512 layout). */
void kern_pack_rows_q8(size_t r, size_t rows, size_t kc, const int8_t *src, size_t ld,
		       uint8_t *dst, uint32_t xor_mask)
{
	size_t ng = kern_div_up(kc, 4);
	for (size_t ps = 0; ps < rows; ps += r, dst += r * ng * 4) {
		size_t rr = kern_min(r, rows - ps);
		for (size_t i = 0; i < r; i++) {
			const int8_t *s = src + (ps + i) * ld;
			for (size_t g = 0; g < ng; g++) {
				uint32_t w = 0;
				if (i < rr && 4 * g + 4 <= kc)
					memcpy(&w, s + 4 * g, 4);
				else if (i < rr)
					memcpy(&w, s + 4 * g, kc - 4 * g);	/* little-endian tail */
				w ^= xor_mask;
				memcpy(dst + (g * r + i) * 4, &w, 4);
			}
		}
	}
}

/* Byte quads from k x n storage: dst[(g * r + j) * 4 + e] = src[4g + e][j],
 * panels `panel` bytes apart (kern_pack_cols_q8_avx512 layout). */
void kern_pack_cols_q8(size_t r, size_t cols, size_t kc, const int8_t *src, size_t ld,
		       uint8_t *dst, size_t panel)
{
	size_t ng = kern_div_up(kc, 4);
	for (size_t js = 0; js < cols; js += r, dst += panel) {
		size_t cc = kern_min(r, cols - js);
		for (size_t g = 0; g < ng; g++) {
			uint8_t *dg = dst + g * r * 4;
			for (size_t e = 0; e < 4; e++) {
				const int8_t *s = src + (4 * g + e) * ld + js;
				bool in = 4 * g + e < kc;
				for (size_t j = 0; j < r; j++)
					dg[j * 4 + e] = in && j < cc ? (uint8_t)s[j] : 0;
			}
		}
	}
}
