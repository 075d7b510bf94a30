/* SPDX-License-Identifier: MIT */
/*
 * Reference GEMMs: the obvious loops, also the fallback when the packing
 * scratch cannot be allocated.  fp32 sums each element in k order with one
 * fused multiply-add per step (fmaf), the rounding contract every variant
 * follows (tnpu_kernels.h "Numerics").
 * int8 accumulates in uint32_t so wrap-around is defined (int32 modulo 2^32).
 */
#include <math.h>

#include "kern_internal.h"

static void ref_f32(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda,
		    const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	for (size_t i = 0; i < m; i++) {
		for (size_t j = 0; j < n; j++) {
			float acc = accumulate ? c[i * ldc + j] : 0.0f;
			for (size_t p = 0; p < k; p++) {
				float bv = nt ? b[j * ldb + p] : b[p * ldb + j];
				acc = fmaf(a[i * lda + p], bv, acc);
			}
			c[i * ldc + j] = acc;
		}
	}
}

static void ref_i8(bool nt, size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
		   const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate)
{
	for (size_t i = 0; i < m; i++) {
		for (size_t j = 0; j < n; j++) {
			uint32_t acc = accumulate ? (uint32_t)c[i * ldc + j] : 0u;
			for (size_t p = 0; p < k; p++) {
				int32_t bv = nt ? b[j * ldb + p] : b[p * ldb + j];
				acc += (uint32_t)((int32_t)a[i * lda + p] * bv);
			}
			/* uint32 -> int32 is implementation-defined; GCC wraps. */
			c[i * ldc + j] = (int32_t)acc;
		}
	}
}

void tnpu_kern_gemm_f32_nn_ref(size_t m, size_t n, size_t k, const float *a, size_t lda,
			       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	ref_f32(false, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_f32_nt_ref(size_t m, size_t n, size_t k, const float *a, size_t lda,
			       const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	ref_f32(true, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_i8_nn_ref(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			      const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate)
{
	ref_i8(false, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_i8_nt_ref(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			      const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate)
{
	ref_i8(true, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}
