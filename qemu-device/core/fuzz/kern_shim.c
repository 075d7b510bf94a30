/* SPDX-License-Identifier: MIT */
/*
 * Fuzz builds only: route the GEMM entry points to the portable reference
 * loops (kernels/kern_ref.c).  The optimised kernels use GCC target pragmas
 * that clang rejects, and the fuzzer targets the command processor, not the
 * micro-kernels (those have their own tests).
 */
#include "tnpu_kernels.h"

void tnpu_kern_gemm_f32_nn(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b, size_t ldb,
			   float *c, size_t ldc, bool acc)
{
	tnpu_kern_gemm_f32_nn_ref(m, n, k, a, lda, b, ldb, c, ldc, acc);
}

void tnpu_kern_gemm_f32_nt(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b, size_t ldb,
			   float *c, size_t ldc, bool acc)
{
	tnpu_kern_gemm_f32_nt_ref(m, n, k, a, lda, b, ldb, c, ldc, acc);
}

void tnpu_kern_gemm_i8_nn(size_t m, size_t n, size_t k, const int8_t *a, size_t lda, const int8_t *b, size_t ldb,
			  int32_t *c, size_t ldc, bool acc)
{
	tnpu_kern_gemm_i8_nn_ref(m, n, k, a, lda, b, ldb, c, ldc, acc);
}

void tnpu_kern_gemm_i8_nt(size_t m, size_t n, size_t k, const int8_t *a, size_t lda, const int8_t *b, size_t ldb,
			  int32_t *c, size_t ldc, bool acc)
{
	tnpu_kern_gemm_i8_nt_ref(m, n, k, a, lda, b, ldb, c, ldc, acc);
}

const char *tnpu_kern_isa(void)
{
	return "reference";
}

void tnpu_kern_release_scratch(void)
{
}
