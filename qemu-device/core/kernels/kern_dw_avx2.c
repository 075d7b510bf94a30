/* SPDX-License-Identifier: MIT */
/*
 * AVX2+FMA depthwise output row (tnpu_kern_dw_row_f32): channels in 8-lane vectors, up to four at a
 * time (32 channels) so the taps' loads overlap, the run's last vector through masked loads and stores
 * (no access past the run's channels).  Each lane is one channel's fma chain over the taps in (ry, rx)
 * order from +0: the generic loop's bits.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define KERN_ISA "avx2,fma"

/* Lane i of the mask for a run of n (1..8) channels: all ones below n. */
TNPU_TARGET(KERN_ISA)
static inline __m256i lanes(size_t n)
{
	static const int32_t m[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };

	return _mm256_loadu_si256((const __m256i *)(const void *)(m + 8 - n));
}

TNPU_TARGET(KERN_ISA)
void kern_dw_row_f32_avx2(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry,
			  ptrdiff_t a_ox, ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out,
			  size_t out_step)
{
	for (size_t ox = 0; ox < ow; ox++) {
		const uint8_t *ax = a + (ptrdiff_t)ox * a_ox;
		float *o = (float *)(void *)(out + ox * out_step);

		for (size_t c0 = 0; c0 < tn; c0 += 32) {
			size_t n = tn - c0 < 32 ? tn - c0 : 32, nv = (n + 7) / 8;
			__m256i m[4];
			__m256 acc[4];

			for (size_t v = 0; v < 4; v++) {
				m[v] = v < nv ? lanes(n - 8 * v < 8 ? n - 8 * v : 8) : _mm256_setzero_si256();
				acc[v] = _mm256_setzero_ps();
			}
			for (size_t ry = 0; ry < r; ry++) {
				const uint8_t *arow = ax + (ptrdiff_t)ry * a_ry + c0 * 4;

				for (size_t rx = 0; rx < s; rx++) {
					const float *ap = (const float *)(const void *)(arow + (ptrdiff_t)rx * a_rx);
					const float *wp = (const float *)(const void *)(w + (ptrdiff_t)(ry * s + rx) * w_tap +
											c0 * 4);

#pragma GCC unroll 4
					for (size_t v = 0; v < 4; v++)
						if (v < nv)
							acc[v] = _mm256_fmadd_ps(_mm256_maskload_ps(ap + 8 * v, m[v]),
										 _mm256_maskload_ps(wp + 8 * v, m[v]), acc[v]);
				}
			}
#pragma GCC unroll 4
			for (size_t v = 0; v < 4; v++)
				if (v < nv)
					_mm256_maskstore_ps(o + c0 + 8 * v, m[v], acc[v]);
		}
	}
}
#endif /* __x86_64__ */
