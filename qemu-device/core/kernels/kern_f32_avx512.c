/* SPDX-License-Identifier: MIT */
/*
 * AVX-512F fp32 variant: 8 x 32 micro-tile (16 zmm accumulators, 2 for the
 * B row, 1 broadcast of A).  16 independent FMA chains cover the FMA latency
 * on both FMA ports; 8 rows keep power-of-two tiles (the model's usual
 * shapes) free of padded rows.  Partial tiles use masked C loads/stores, so
 * no edge copies are needed.  Only this file's functions are compiled for
 * AVX-512 (TNPU_TARGET); the dispatcher calls them only on capable CPUs.
 */
#if defined(__x86_64__)	/* x86-64 only: other hosts build the generic variant alone */
#include <immintrin.h>

#include "kern_internal.h"

#define KERN_ISA "avx512f,avx512vl,avx512bw,avx512dq,fma"

#define MR 8
#define NR 32

TNPU_TARGET(KERN_ISA)
static inline __mmask16 cols_mask(size_t nre, size_t j0)
{
	size_t left = nre > j0 ? nre - j0 : 0;
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

TNPU_TARGET(KERN_ISA)
static void uk_f32_avx512(size_t kc, const float *restrict ap, const float *restrict bp,
			  float *restrict c, size_t ldc, bool load_c, size_t mre, size_t nre)
{
	const __mmask16 m0 = cols_mask(nre, 0), m1 = cols_mask(nre, 16);
	__m512 c0[MR], c1[MR];

#pragma GCC unroll 16
	for (size_t i = 0; i < MR; i++) {
		if (load_c && i < mre) {
			c0[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
			c1[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
		} else {
			c0[i] = _mm512_setzero_ps();
			c1[i] = _mm512_setzero_ps();
		}
	}
	for (size_t p = 0; p < kc; p++, ap += MR, bp += NR) {
		__m512 b0 = _mm512_loadu_ps(bp);
		__m512 b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 16
		for (size_t i = 0; i < MR; i++) {
			__m512 av = _mm512_set1_ps(ap[i]);
			c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
			c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
		}
	}
#pragma GCC unroll 16
	for (size_t i = 0; i < MR; i++) {
		if (i < mre) {
			_mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
			_mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
		}
	}
}

/* k <= KERN_SMALL_K: C rows 16 columns at a time, B read in place ("nt": its k x 256 slice transposed
 * to the stack first), each element's fmadd chain in p order from C or +0.0, as the micro-kernel. */
TNPU_TARGET(KERN_ISA)
static void small_k_f32_avx512(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda,
			       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	TNPU_UNINIT _Alignas(64) float bt[KERN_SMALL_K * 256];

	for (size_t j0 = 0; j0 < n; j0 += 256) {
		size_t nb = n - j0 < 256 ? n - j0 : 256, ldbb = ldb;
		const float *bb = b + j0;

		if (nt) {
			for (size_t j = 0; j < nb; j++)
				for (size_t p = 0; p < k; p++)
					bt[p * 256 + j] = b[(j0 + j) * ldb + p];
			bb = bt;
			ldbb = 256;
		}
		for (size_t i = 0; i < m; i++) {
			const float *ai = a + i * lda;
			float *ci = c + i * ldc + j0;

			for (size_t j = 0; j < nb; j += 16) {
				const __mmask16 mk = cols_mask(nb, j);
				__m512 acc = accumulate ? _mm512_maskz_loadu_ps(mk, ci + j) : _mm512_setzero_ps();

				for (size_t p = 0; p < k; p++)
					acc = _mm512_fmadd_ps(_mm512_set1_ps(ai[p]), _mm512_maskz_loadu_ps(mk, bb + p * ldbb + j),
							      acc);
				_mm512_mask_storeu_ps(ci + j, mk, acc);
			}
		}
	}
}

const struct kern_f32_impl kern_f32_avx512 = {
	.name = "avx512",
	.mr = MR, .nr = NR,
	/* KC x NR B micro-panel = 32 KiB (L1d 48 KiB); MC x KC A block = 256 KiB (L2). */
	.kc = 256, .mc = 256, .nc = 4096,
	.pack_rows = kern_pack_rows_f32_avx512,
	.pack_cols = kern_pack_cols_f32_avx512,
	.ukernel = uk_f32_avx512,
	.edges = true,
	.small_k = small_k_f32_avx512,
	.direct = kern_gemm_f32_direct_batch_avx512,
	.dw_row = kern_dw_row_f32_avx2,
};
#endif /* __x86_64__ */
