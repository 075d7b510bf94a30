/* SPDX-License-Identifier: MIT */
/*
 * Runtime ISA dispatch.  The variant is chosen once (first call, or
 * tnpu_kern_isa()) from __builtin_cpu_supports(), which also checks that the
 * OS saves the AVX/AVX-512 register state.  Only the per-ISA micro-kernels
 * are compiled for their ISA (TNPU_TARGET function attributes), so the
 * library itself runs on any x86-64 and never needs -march.
 */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kern_internal.h"

struct kern_variant {
	const char *name;
	const struct kern_f32_impl *f32;
	const struct kern_i8_impl *i8;
};

/* Best first.  Hosts other than x86-64 have the portable variant only. */
static const struct kern_variant variants[] = {
#if defined(__x86_64__)
	{ "avx512vnni", &kern_f32_avx512, &kern_i8_avx512vnni },
	{ "avx512", &kern_f32_avx512, &kern_i8_avx512 },
	{ "avxvnni", &kern_f32_avx2, &kern_i8_avxvnni },
	{ "avx2", &kern_f32_avx2, &kern_i8_avx2 },
#endif
	{ "generic", &kern_f32_generic, &kern_i8_generic },
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

#if defined(__x86_64__)
/* AVX-VNNI is CPUID.(EAX=7,ECX=1):EAX bit 4.  Read directly: GCC 12's
 * __builtin_cpu_supports("avxvnni") does not report it.  Its register state
 * is the AVX state, which __builtin_cpu_supports("avx2") already checks. */
static bool cpu_has_avxvnni(void)
{
	unsigned int eax, ebx, ecx, edx;

	if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || eax < 1)
		return false;
	__cpuid_count(7, 1, eax, ebx, ecx, edx);
	return (eax >> 4) & 1;
}

static bool variant_supported(const struct kern_variant *v)
{
	__builtin_cpu_init();
	if (!strcmp(v->name, "generic"))
		return true;
	bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (!strcmp(v->name, "avx2"))
		return avx2;
	if (!strcmp(v->name, "avxvnni"))
		return avx2 && cpu_has_avxvnni();
	bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	if (!strcmp(v->name, "avx512"))
		return avx512;
	if (!strcmp(v->name, "avx512vnni"))
		return avx512 && __builtin_cpu_supports("avx512vnni");
	return false;
}
#else
static bool variant_supported(const struct kern_variant *v)
{
	return !strcmp(v->name, "generic");
}
#endif

static const struct kern_variant *find_variant(const char *name)
{
	for (size_t i = 0; i < N_VARIANTS; i++)
		if (!strcmp(variants[i].name, name))
			return &variants[i];
	return NULL;
}

static const struct kern_variant *pick_variant(void)
{
	/* TNPU_KERN_ISA caps the choice (benchmarks, bug hunting); the cap
	 * is skipped if unknown, and lower variants are tried if unsupported. */
	const char *env = getenv("TNPU_KERN_ISA");
	const struct kern_variant *cap = env ? find_variant(env) : NULL;
	size_t i = cap ? (size_t)(cap - variants) : 0;

	for (; i < N_VARIANTS; i++)
		if (variant_supported(&variants[i]))
			return &variants[i];
	return &variants[N_VARIANTS - 1];
}

/* Every thread computes the same answer, so a racy first initialization is benign. */
static _Atomic(const struct kern_variant *) current;

static const struct kern_variant *variant(void)
{
	const struct kern_variant *v = atomic_load_explicit(&current, memory_order_acquire);
	if (__builtin_expect(v == NULL, 0)) {
		v = pick_variant();
		atomic_store_explicit(&current, v, memory_order_release);
	}
	return v;
}

const char *tnpu_kern_isa(void)
{
	return variant()->name;
}

bool tnpu_kern_isa_supported(const char *name)
{
	const struct kern_variant *v = find_variant(name);
	return v && variant_supported(v);
}

bool tnpu_kern_force_isa(const char *name)
{
	const struct kern_variant *v = find_variant(name);
	if (!v || !variant_supported(v))
		return false;
	atomic_store_explicit(&current, v, memory_order_release);
	return true;
}

void tnpu_kern_gemm_f32_nn(size_t m, size_t n, size_t k, const float *a, size_t lda,
			   const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	kern_gemm_f32(variant()->f32, false, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_f32_nt(size_t m, size_t n, size_t k, const float *a, size_t lda,
			   const float *b, size_t ldb, float *c, size_t ldc, bool accumulate)
{
	kern_gemm_f32(variant()->f32, true, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_i8_nn(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			  const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate)
{
	kern_gemm_i8(variant()->i8, false, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_i8_nt(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
			  const int8_t *b, size_t ldb, int32_t *c, size_t ldc, bool accumulate)
{
	kern_gemm_i8(variant()->i8, true, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

void tnpu_kern_gemm_f32_nn_batch(size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda, ptrdiff_t sa,
				 const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc, ptrdiff_t sc,
				 bool accumulate)
{
	kern_gemm_f32_batch(variant()->f32, false, count, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, accumulate);
}

void tnpu_kern_gemm_f32_nt_batch(size_t count, size_t m, size_t n, size_t k, const float *a, size_t lda, ptrdiff_t sa,
				 const float *b, size_t ldb, ptrdiff_t sb, float *c, size_t ldc, ptrdiff_t sc,
				 bool accumulate)
{
	kern_gemm_f32_batch(variant()->f32, true, count, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, accumulate);
}

void tnpu_kern_gemm_i8_nn_batch(size_t count, size_t m, size_t n, size_t k, const int8_t *a, size_t lda, ptrdiff_t sa,
				const int8_t *b, size_t ldb, ptrdiff_t sb, int32_t *c, size_t ldc, ptrdiff_t sc,
				bool accumulate)
{
	kern_gemm_i8_batch(variant()->i8, false, count, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, accumulate);
}

void tnpu_kern_gemm_i8_nt_batch(size_t count, size_t m, size_t n, size_t k, const int8_t *a, size_t lda, ptrdiff_t sa,
				const int8_t *b, size_t ldb, ptrdiff_t sb, int32_t *c, size_t ldc, ptrdiff_t sc,
				bool accumulate)
{
	kern_gemm_i8_batch(variant()->i8, true, count, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, accumulate);
}

void tnpu_kern_dw_row_f32(size_t ow, size_t tn, size_t r, size_t s, const uint8_t *a, ptrdiff_t a_ry, ptrdiff_t a_ox,
			  ptrdiff_t a_rx, const uint8_t *w, ptrdiff_t w_tap, uint8_t *out, size_t out_step)
{
	kern_f32_dw_row_fn f = variant()->f32->dw_row;

	(f ? f : kern_dw_row_f32_generic)(ow, tn, r, s, a, a_ry, a_ox, a_rx, w, w_tap, out, out_step);
}
